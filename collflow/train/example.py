"""tf.train.Example and tf.train.SequenceExample: the messages of TFRecord input files.

The classes follow protobuf's Python API as TF1 programs use it::

    ex = tf.train.Example(features=tf.train.Features(feature={
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[3])),
        "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[raw]))}))
    ex.features.feature["weight"].float_list.value.append(0.5)   # map entries made on access
    writer.write(ex.SerializeToString())
    tf.train.Example.FromString(record).features.feature["label"].int64_list.value[0]

Repeated values check their type as protobuf does (an int64 list refuses 1.5), a Feature's
`kind` is a oneof (setting one list clears the others; `WhichOneof("kind")`), and `str()`
gives protobuf's text format.  One difference: a BytesList also takes `str` (encoded UTF-8,
undecodable characters kept as the bytes they stand for), because collflow's string tensors
are Python str (docs/tf1_compat.md).  Bytes are written here and decoded by
kernels/example_wire.py, which the parsing ops use too.
"""
from __future__ import annotations

import numbers
from typing import Any, Callable, Dict, Iterable, Optional

import numpy as np

from ..kernels import example_wire as _wire
from ..summary.proto import encode_varint, text_escape

__all__ = ["BytesList", "FloatList", "Int64List", "Feature", "Features", "FeatureList", "FeatureLists",
           "Example", "SequenceExample"]

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _len_field(number: int, payload: bytes) -> bytes:
    return encode_varint((number << 3) | 2) + encode_varint(len(payload)) + payload


def _as_bytes(v: Any) -> bytes:
    if isinstance(v, (bytes, bytearray, np.bytes_)):
        return bytes(v)
    if isinstance(v, str):
        return v.encode("utf-8", "surrogateescape")
    raise TypeError(f"{v!r} has type {type(v).__name__}, but expected one of: bytes")


def _as_float(v: Any) -> float:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise TypeError(f"{v!r} has type {type(v).__name__}, but expected one of: int, float")
    return float(np.float32(v))


def _as_int64(v: Any) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{v!r} has type {type(v).__name__}, but expected one of: int")
    v = int(v)
    if not _INT64_MIN <= v <= _INT64_MAX:
        raise ValueError(f"Value out of range: {v}")
    return v


def _float_text(v: float) -> str:
    s = repr(float(np.float32(v))) if not np.isfinite(v) else str(np.float32(v))
    return {"inf": "inf", "-inf": "-inf", "nan": "nan"}.get(s, s)


class _Repeated(list):
    """A repeated scalar field: a list that converts (and type-checks) what goes in, and tells
    its message when it changes (so a Feature's oneof follows the list last written)."""

    def __init__(self, convert: Callable[[Any], Any], changed: Callable[[], None], items: Iterable[Any] = ()):
        super().__init__(convert(v) for v in items)
        self._convert = convert
        self._changed = changed

    def append(self, v: Any) -> None:
        super().append(self._convert(v))
        self._changed()

    def extend(self, vs: Iterable[Any]) -> None:
        super().extend(self._convert(v) for v in vs)
        self._changed()

    def insert(self, i: Any, v: Any) -> None:
        super().insert(i, self._convert(v))
        self._changed()

    def __setitem__(self, i: Any, v: Any) -> None:
        super().__setitem__(i, [self._convert(x) for x in v] if isinstance(i, slice) else self._convert(v))
        self._changed()

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, (list, tuple)) else NotImplemented

    __hash__ = None  # type: ignore[assignment]


class _Message:
    """What the messages share: keyword construction, CopyFrom/ParseFromString/Clear, ==, str."""

    _parent_hook: Optional[Callable[[], None]] = None

    def _touch(self) -> None:
        if self._parent_hook is not None:
            self._parent_hook()

    def SerializeToString(self, deterministic: Optional[bool] = None) -> bytes:  # noqa: N802 (protobuf's name)
        raise NotImplementedError

    def _merge_decoded(self, data: bytes) -> None:
        raise NotImplementedError

    @classmethod
    def FromString(cls, data: Any) -> Any:  # noqa: N802 (protobuf's name)
        msg = cls()
        msg.ParseFromString(data)
        return msg

    def ParseFromString(self, data: Any) -> int:  # noqa: N802 (protobuf's name)
        """Replaces this message's contents by the decoded bytes (a DecodeError-like
        ValueError if they are not a valid message); returns the bytes read."""
        data = _as_bytes(data)
        self.Clear()
        try:
            self._merge_decoded(data)
        except _wire.WireError as e:
            raise ValueError(f"Error parsing message with type '{self._full_name}': {e}") from None
        return len(data)

    def MergeFromString(self, data: Any) -> int:  # noqa: N802 (protobuf's name)
        data = _as_bytes(data)
        merged = type(self)()
        merged.ParseFromString(self.SerializeToString() + data)
        self.CopyFrom(merged)
        return len(data)

    def CopyFrom(self, other: Any) -> None:  # noqa: N802 (protobuf's name)
        if type(other) is not type(self):
            raise TypeError(f"Parameter to CopyFrom() must be instance of same class: expected "
                            f"{type(self).__name__} got {type(other).__name__}.")
        if other is not self:
            self.ParseFromString(other.SerializeToString())
            self._touch()

    def MergeFrom(self, other: Any) -> None:  # noqa: N802 (protobuf's name)
        self.MergeFromString(other.SerializeToString())

    def Clear(self) -> None:  # noqa: N802 (protobuf's name)
        raise NotImplementedError

    def ByteSize(self) -> int:  # noqa: N802 (protobuf's name)
        return len(self.SerializeToString())

    def __eq__(self, other: object) -> bool:
        # map entries compare by key, not by order
        return type(other) is type(self) and (self.SerializeToString(deterministic=True)
                                              == other.SerializeToString(deterministic=True))  # type: ignore

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return self._text(0)

    def __repr__(self) -> str:
        return self._text(0)

    def _text(self, indent: int) -> str:
        raise NotImplementedError

    _full_name = "tensorflow.Message"


class _ValueList(_Message):
    _convert: Callable[[Any], Any]
    _format: Callable[[Any], str]

    def __init__(self, value: Iterable[Any] = ()):
        self.value = _Repeated(self._convert, self._touch, value if value is not None else ())

    def __setattr__(self, name: str, v: Any) -> None:
        if name == "value" and hasattr(self, "value"):
            raise AttributeError("Assignment not allowed to repeated field \"value\" in protocol message object.")
        object.__setattr__(self, name, v)

    def Clear(self) -> None:  # noqa: N802 (protobuf's name)
        list.clear(self.value)

    def HasField(self, name: str) -> bool:  # noqa: N802 (protobuf's name)
        raise ValueError(f'Protocol message has no singular "{name}" field.')

    def _text(self, indent: int) -> str:
        pad = " " * indent
        return "".join(f"{pad}value: {self._format(v)}\n" for v in self.value)


class BytesList(_ValueList):
    """tf.train.BytesList: `value`, a list of bytes."""
    _convert = staticmethod(_as_bytes)
    _format = staticmethod(lambda v: f'"{text_escape(v)}"')
    _full_name = "tensorflow.BytesList"

    def SerializeToString(self, deterministic: Optional[bool] = None) -> bytes:  # noqa: N802
        return b"".join(_len_field(1, v) for v in self.value)

    def _merge_decoded(self, data: bytes) -> None:
        list.extend(self.value, _decode_list(_wire.BYTES, data))


class FloatList(_ValueList):
    """tf.train.FloatList: `value`, a list of float32 values (written packed)."""
    _convert = staticmethod(_as_float)
    _format = staticmethod(_float_text)
    _full_name = "tensorflow.FloatList"

    def SerializeToString(self, deterministic: Optional[bool] = None) -> bytes:  # noqa: N802
        if not self.value:
            return b""
        return _len_field(1, np.asarray(self.value, dtype="<f4").tobytes())

    def _merge_decoded(self, data: bytes) -> None:
        list.extend(self.value, (float(v) for v in _decode_list(_wire.FLOAT, data)))


class Int64List(_ValueList):
    """tf.train.Int64List: `value`, a list of int64 values (written packed)."""
    _convert = staticmethod(_as_int64)
    _format = staticmethod(str)
    _full_name = "tensorflow.Int64List"

    def SerializeToString(self, deterministic: Optional[bool] = None) -> bytes:  # noqa: N802
        if not self.value:
            return b""
        return _len_field(1, b"".join(encode_varint(v) for v in self.value))

    def _merge_decoded(self, data: bytes) -> None:
        list.extend(self.value, (int(v) for v in _decode_list(_wire.INT64, data)))


def _decode_list(kind: int, data: bytes) -> Any:
    """The values of a serialized BytesList/FloatList/Int64List body, decoded as the Feature
    member `kind` would be."""
    wrapped = _len_field(kind, data)
    got, values = _wire.decode_feature(wrapped, 0, len(wrapped))
    return values if got == kind else []


_KINDS = (("bytes_list", BytesList), ("float_list", FloatList), ("int64_list", Int64List))


class Feature(_Message):
    """tf.train.Feature: one of bytes_list, float_list, int64_list (the oneof `kind`)."""
    _full_name = "tensorflow.Feature"

    def __init__(self, bytes_list: Optional[BytesList] = None, float_list: Optional[FloatList] = None,
                 int64_list: Optional[Int64List] = None):
        object.__setattr__(self, "_lists", {})
        object.__setattr__(self, "_kind", None)
        given = [(n, v) for n, v in (("bytes_list", bytes_list), ("float_list", float_list),
                                     ("int64_list", int64_list)) if v is not None]
        for n, v in given:
            getattr(self, n).CopyFrom(v)
            self._select(n)

    def _member(self, name: str) -> Any:
        lst = self._lists.get(name)
        if lst is None:
            lst = dict(_KINDS)[name]()
            lst._parent_hook = lambda: self._select(name)
            self._lists[name] = lst
        return lst

    def __getattr__(self, name: str) -> Any:
        if name in ("bytes_list", "float_list", "int64_list"):
            return self._member(name)
        raise AttributeError(f"Feature has no field {name!r}")

    def __setattr__(self, name: str, v: Any) -> None:
        if name in ("bytes_list", "float_list", "int64_list"):
            raise AttributeError(f'Assignment not allowed to field "{name}" in protocol message object.')
        object.__setattr__(self, name, v)

    def _select(self, name: str) -> None:
        if self._kind != name:
            for other, lst in self._lists.items():
                if other != name:
                    list.clear(lst.value)
            object.__setattr__(self, "_kind", name)
        self._touch()

    def WhichOneof(self, group: str) -> Optional[str]:  # noqa: N802 (protobuf's name)
        if group != "kind":
            raise ValueError(f'Protocol message Feature has no "{group}" field.')
        return self._kind

    def HasField(self, name: str) -> bool:  # noqa: N802 (protobuf's name)
        if name == "kind":
            return self._kind is not None
        if name not in ("bytes_list", "float_list", "int64_list"):
            raise ValueError(f'Protocol message Feature has no field "{name}".')
        return self._kind == name

    def Clear(self) -> None:  # noqa: N802 (protobuf's name)
        for lst in self._lists.values():
            list.clear(lst.value)
        object.__setattr__(self, "_kind", None)

    def SerializeToString(self, deterministic: Optional[bool] = None) -> bytes:  # noqa: N802
        if self._kind is None:
            return b""
        number = 1 + [n for n, _ in _KINDS].index(self._kind)
        return _len_field(number, self._member(self._kind).SerializeToString())

    def _merge_decoded(self, data: bytes) -> None:
        kind, values = _wire.decode_feature(data, 0, len(data))
        self._set_decoded(kind, values)

    def _set_decoded(self, kind: int, values: Any) -> None:
        if kind == _wire.NONE:
            return
        name = _KINDS[kind - 1][0]
        lst = self._member(name)
        if kind == _wire.BYTES:
            list.extend(lst.value, values)
        else:
            list.extend(lst.value, [int(v) if kind == _wire.INT64 else float(v) for v in values])
        object.__setattr__(self, "_kind", name)

    def _text(self, indent: int) -> str:
        if self._kind is None:
            return ""
        pad = " " * indent
        return f"{pad}{self._kind} {{\n{self._member(self._kind)._text(indent + 2)}{pad}}}\n"


class _MessageMap(dict):
    """A map<string, message> field: reading a missing key makes an empty entry (protobuf's
    behaviour); assigning a message stores a copy."""

    def __init__(self, cls: type, changed: Callable[[], None]):
        super().__init__()
        self._cls = cls
        self._changed = changed

    def _new(self, key: Any) -> Any:
        if not isinstance(key, str):
            key = _as_bytes(key).decode("utf-8", "surrogateescape")
        msg = self._cls()
        msg._parent_hook = self._changed
        dict.__setitem__(self, key, msg)
        self._changed()
        return msg

    def __missing__(self, key: Any) -> Any:
        return self._new(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self[key].CopyFrom(value)

    def get_or_create(self, key: Any) -> Any:
        return self[key]

    def update(self, other: Any = (), **kw: Any) -> None:  # type: ignore[override]
        for k, v in dict(other, **kw).items():
            self[k] = v


class _MapHolder(_Message):
    """A message with one map<string, message> field `_FIELD` of `_VALUE` messages."""
    _FIELD = ""
    _VALUE: type = Feature

    def __init__(self, **kw: Any):
        object.__setattr__(self, "_map", _MessageMap(self._VALUE, self._touch))
        given = kw.pop(self._FIELD, None)
        if kw:
            raise ValueError(f'Protocol message {type(self).__name__} has no "{next(iter(kw))}" field.')
        if given is not None:
            self._map.update(given)

    def __getattr__(self, name: str) -> Any:
        if name == self._FIELD:
            return self._map
        raise AttributeError(f"{type(self).__name__} has no field {name!r}")

    def __setattr__(self, name: str, v: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, v)
            return
        raise AttributeError(f'Assignment not allowed to map field "{name}" in protocol message object.')

    def Clear(self) -> None:  # noqa: N802 (protobuf's name)
        dict.clear(self._map)

    def SerializeToString(self, deterministic: Optional[bool] = None) -> bytes:  # noqa: N802
        out = []
        for k in (sorted(self._map) if deterministic else self._map):
            entry = _len_field(1, k.encode("utf-8", "surrogateescape")) + _len_field(2, self._map[k].SerializeToString(deterministic))
            out.append(_len_field(1, entry))
        return b"".join(out)

    def _text(self, indent: int) -> str:
        pad = " " * indent
        return "".join(f'{pad}{self._FIELD} {{\n{pad}  key: "{text_escape(k.encode("utf-8", "surrogateescape"))}"\n'
                       f"{pad}  value {{\n{v._text(indent + 4)}{pad}  }}\n{pad}}}\n" for k, v in self._map.items())


class Features(_MapHolder):
    """tf.train.Features: `feature`, a map from names to Feature."""
    _FIELD, _VALUE = "feature", Feature
    _full_name = "tensorflow.Features"

    def _merge_decoded(self, data: bytes) -> None:
        wrapped = _len_field(1, data)
        for key, (kind, values) in _wire.decode_example(wrapped).items():
            f = Feature()
            f._set_decoded(kind, values)
            dict.__setitem__(self._map, key, f)
            f._parent_hook = self._touch


class FeatureList(_Message):
    """tf.train.FeatureList: `feature`, a list of Feature (one per time step)."""
    _full_name = "tensorflow.FeatureList"

    def __init__(self, feature: Iterable[Feature] = ()):
        object.__setattr__(self, "feature", _Messages(Feature, self._touch))
        self.feature.extend(feature or ())

    def __setattr__(self, name: str, v: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, v)
            return
        raise AttributeError(f'Assignment not allowed to repeated field "{name}" in protocol message object.')

    def Clear(self) -> None:  # noqa: N802 (protobuf's name)
        list.clear(self.feature)

    def SerializeToString(self, deterministic: Optional[bool] = None) -> bytes:  # noqa: N802
        return b"".join(_len_field(1, f.SerializeToString()) for f in self.feature)

    def _merge_decoded(self, data: bytes) -> None:
        for number, wire, span in _wire._fields(data, 0, len(data)):
            if number == 1 and wire == 2:
                self.feature.add()._set_decoded(*_wire.decode_feature(data, span[0], span[1]))

    def _text(self, indent: int) -> str:
        pad = " " * indent
        return "".join(f"{pad}feature {{\n{f._text(indent + 2)}{pad}}}\n" for f in self.feature)


class _Messages(list):
    """A repeated message field: add() appends a new message; append/extend store copies."""

    def __init__(self, cls: type, changed: Callable[[], None]):
        super().__init__()
        self._cls = cls
        self._changed = changed

    def add(self, **kw: Any) -> Any:
        msg = self._cls(**kw)
        msg._parent_hook = self._changed
        super().append(msg)
        self._changed()
        return msg

    def append(self, msg: Any) -> None:
        self.add().CopyFrom(msg)

    def extend(self, msgs: Iterable[Any]) -> None:
        for m in msgs:
            self.append(m)


class FeatureLists(_MapHolder):
    """tf.train.FeatureLists: `feature_list`, a map from names to FeatureList."""
    _FIELD, _VALUE = "feature_list", FeatureList
    _full_name = "tensorflow.FeatureLists"

    def _merge_decoded(self, data: bytes) -> None:
        _, lists = _wire.decode_sequence_example(_len_field(2, data))
        for key, steps in lists.items():
            fl = self._map[key]
            for kind, values in steps:
                fl.feature.add()._set_decoded(kind, values)


class _Holder(_Message):
    """A message of singular message fields (`_FIELDS`: name -> (number, class))."""
    _FIELDS: Dict[str, Any] = {}

    def __init__(self, **kw: Any):
        object.__setattr__(self, "_subs", {})
        object.__setattr__(self, "_has", set())
        for k, v in kw.items():
            if k not in self._FIELDS:
                raise ValueError(f'Protocol message {type(self).__name__} has no "{k}" field.')
            if v is not None:
                getattr(self, k).CopyFrom(v)

    def _sub(self, name: str) -> Any:
        msg = self._subs.get(name)
        if msg is None:
            msg = self._FIELDS[name][1]()

            def mark() -> None:
                self._has.add(name)
                self._touch()
            msg._parent_hook = mark
            self._subs[name] = msg
        return msg

    def __getattr__(self, name: str) -> Any:
        if name in self._FIELDS:
            return self._sub(name)
        raise AttributeError(f"{type(self).__name__} has no field {name!r}")

    def __setattr__(self, name: str, v: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, v)
            return
        raise AttributeError(f'Assignment not allowed to field "{name}" in protocol message object.')

    def HasField(self, name: str) -> bool:  # noqa: N802 (protobuf's name)
        if name not in self._FIELDS:
            raise ValueError(f'Protocol message {type(self).__name__} has no field "{name}".')
        return name in self._has

    def ClearField(self, name: str) -> None:  # noqa: N802 (protobuf's name)
        self._subs.pop(name, None)
        self._has.discard(name)

    def Clear(self) -> None:  # noqa: N802 (protobuf's name)
        self._subs.clear()
        self._has.clear()

    def SerializeToString(self, deterministic: Optional[bool] = None) -> bytes:  # noqa: N802
        return b"".join(_len_field(num, self._sub(name).SerializeToString(deterministic))
                        for name, (num, _) in self._FIELDS.items() if name in self._has)

    def _text(self, indent: int) -> str:
        pad = " " * indent
        return "".join(f"{pad}{name} {{\n{self._sub(name)._text(indent + 2)}{pad}}}\n"
                       for name in self._FIELDS if name in self._has)


class Example(_Holder):
    """tf.train.Example: `features`, the record of one training example."""
    _FIELDS = {"features": (1, Features)}
    _full_name = "tensorflow.Example"

    def _merge_decoded(self, data: bytes) -> None:
        decoded = _wire.decode_example(data)
        if decoded or any(n == 1 for n, _, _ in _wire._fields(data, 0, len(data))):
            feats = self._sub("features")
            for key, (kind, values) in decoded.items():
                f = Feature()
                f._set_decoded(kind, values)
                f._parent_hook = feats._touch
                dict.__setitem__(feats._map, key, f)
            self._has.add("features")


class SequenceExample(_Holder):
    """tf.train.SequenceExample: `context` Features and `feature_lists`, one FeatureList of
    per-step Features per name."""
    _FIELDS = {"context": (1, Features), "feature_lists": (2, FeatureLists)}
    _full_name = "tensorflow.SequenceExample"

    def _merge_decoded(self, data: bytes) -> None:
        context, lists = _wire.decode_sequence_example(data)
        numbers_seen = {n for n, _, _ in _wire._fields(data, 0, len(data))}
        if context or 1 in numbers_seen:
            ctx = self._sub("context")
            for key, (kind, values) in context.items():
                f = Feature()
                f._set_decoded(kind, values)
                f._parent_hook = ctx._touch
                dict.__setitem__(ctx._map, key, f)
            self._has.add("context")
        if lists or 2 in numbers_seen:
            fls = self._sub("feature_lists")
            for key, steps in lists.items():
                fl = fls._map[key]
                for kind, values in steps:
                    fl.feature.add()._set_decoded(kind, values)
            self._has.add("feature_lists")
