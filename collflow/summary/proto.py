"""The protocol buffers TensorBoard reads, encoded and decoded by hand (no protobuf dependency).

Each message class lists its fields as (number, name, kind, default); one generic encoder
and decoder follow the table.  Kinds: double, float, fixed32, int64, int32, enum, bool, string,
bytes, a message class, or a list of one of those in brackets (`["string"]`, `[Value]`;
repeated doubles are written packed, as proto3 does).  Field numbers are those of
TensorFlow's event.proto, summary.proto, histogram.proto, tensor.proto and graph.proto.

As in proto3, a scalar field equal to its default is not written, except oneof members
(ONEOF): those are written whenever set, so a scalar summary of 0.0 still carries its
value; a message field is written when set or not empty.
"""
from __future__ import annotations

import struct
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from ..errors import InvalidArgumentError
from ..platform.varint import VarintError, decode_varint, encode_varint

__all__ = ["RepeatedMessages", "Message", "HistogramProto", "TensorShapeProto", "TensorProto", "SummaryMetadata", "Summary",
           "SessionLog", "Event", "NodeDef", "GraphDef", "graph_def", "encode_varint", "DT_STRING", "text_format", "text_escape",
           "write_graph", "AttrValue"]

DT_STRING = 7  # TensorFlow's DataType enum value for strings

_WIRE_VARINT, _WIRE_64, _WIRE_LEN, _WIRE_32 = 0, 1, 2, 5
_VARINT_KINDS = ("int64", "int32", "enum", "bool")


def _decode_varint(buf: bytes, pos: int, end: Optional[int] = None) -> Tuple[int, int]:
    """(value, next position) of the base-128 varint at buf[pos], not reading at or past `end`."""
    try:
        return decode_varint(buf, pos, end)
    except VarintError as e:
        raise InvalidArgumentError(f"malformed protocol buffer ({e})") from None


def _key(number: int, wire: int) -> bytes:
    return encode_varint((number << 3) | wire)


def _encode_one(number: int, kind: Any, v: Any) -> bytes:
    if kind == "double":
        return _key(number, _WIRE_64) + struct.pack("<d", float(v))
    if kind == "float":
        return _key(number, _WIRE_32) + struct.pack("<f", float(v))
    if kind == "fixed32":
        return _key(number, _WIRE_32) + struct.pack("<I", int(v) & 0xFFFFFFFF)
    if kind in _VARINT_KINDS:
        return _key(number, _WIRE_VARINT) + encode_varint(int(v))
    if kind == "string":
        data = v.encode("utf-8") if isinstance(v, str) else bytes(v)
    elif kind == "bytes":
        data = v.encode("utf-8") if isinstance(v, str) else bytes(v)
    else:  # a message
        data = v.SerializeToString()
    return _key(number, _WIRE_LEN) + encode_varint(len(data)) + data


def _fields(data: bytes) -> Iterator[Tuple[int, int, Any]]:
    """(field number, wire type, raw value) of each field of a serialized message."""
    pos, n = 0, len(data)
    while pos < n:
        key, pos = _decode_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == _WIRE_VARINT:
            v, pos = _decode_varint(data, pos)
        elif wire == _WIRE_64:
            v, pos = data[pos:pos + 8], pos + 8
        elif wire == _WIRE_32:
            v, pos = data[pos:pos + 4], pos + 4
        elif wire == _WIRE_LEN:
            ln, pos = _decode_varint(data, pos)
            v, pos = data[pos:pos + ln], pos + ln
        else:
            raise InvalidArgumentError(f"unsupported protocol buffer wire type {wire} (field {number})")
        if pos > n:
            raise InvalidArgumentError("truncated protocol buffer")
        yield number, wire, v


def _decode_scalar(kind: Any, wire: int, raw: Any) -> Any:
    if kind == "double":
        return struct.unpack("<d", raw)[0]
    if kind == "float":
        return struct.unpack("<f", raw)[0]
    if kind == "fixed32":
        return struct.unpack("<I", raw)[0]
    if kind in ("int64", "int32"):
        return raw - (1 << 64) if raw >= 1 << 63 else raw
    if kind == "enum":
        return raw
    if kind == "bool":
        return bool(raw)
    if kind == "string":
        return bytes(raw).decode("utf-8", errors="replace")
    if kind == "bytes":
        return bytes(raw)
    return kind.FromString(bytes(raw))


# numeric repeated kinds a proto3 writer packs (TensorProto's float_val, int_val, ...)
_PACKABLE = {"float": "f", "fixed32": "I", "int64": None, "int32": None, "enum": None, "bool": None}


def _unpack(kind: str, raw: bytes) -> List[Any]:
    """The values of a packed repeated numeric field."""
    fmt = _PACKABLE[kind]
    if fmt is not None:
        return list(struct.unpack(f"<{len(raw) // 4}{fmt}", raw))
    out, pos = [], 0
    while pos < len(raw):
        v, pos = _decode_varint(raw, pos)
        out.append(_decode_scalar(kind, _WIRE_VARINT, v))
    return out


class RepeatedMessages(list):
    """A repeated message field: a list with protobuf's `add(**fields)` (a new element,
    appended and returned: `config.embeddings.add()`, `graph_def.node.add()`)."""

    def __init__(self, message_type: type, items: Any = ()):
        super().__init__(items)
        self.message_type = message_type

    def add(self, **fields: Any) -> "Message":
        msg = self.message_type(**fields)
        self.append(msg)
        return msg


class Message:
    """Base of the hand-written messages, with protobuf's Python semantics: keyword
    construction, unset fields read as their defaults (an empty message for a message field),
    HasField, SerializeToString, FromString."""

    FIELDS: Sequence[Tuple[int, str, Any, Any]] = ()
    ONEOF: frozenset = frozenset()  # members of the message's oneof: written whenever set

    def __init__(self, **kwargs: Any):
        object.__setattr__(self, "_present", set())
        for _, name, kind, default in self.FIELDS:
            if isinstance(kind, list):
                v: Any = RepeatedMessages(kind[0]) if isinstance(kind[0], type) else []
            elif isinstance(kind, type):
                v = kind()
            else:
                v = default
            object.__setattr__(self, name, v)
        for k, v in kwargs.items():
            if k not in self._names():
                raise ValueError(f'Protocol message {type(self).__name__} has no "{k}" field.')
            if v is None and isinstance(self._names()[k][2], list):
                continue  # protobuf's constructor takes None for a repeated field: left empty
            setattr(self, k, list(v) if isinstance(v, tuple) else v)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._names():
            raise AttributeError(f'Assignment not allowed (no field "{name}" in protocol message object '
                                 f'{type(self).__name__}).')
        kind = self._names()[name][2]
        if isinstance(kind, list):
            # a repeated field stays a list; one of messages keeps protobuf's add()
            items = [] if value is None else value
            if isinstance(kind[0], type):
                value = items if isinstance(items, RepeatedMessages) else RepeatedMessages(kind[0], items)
            else:
                value = items if isinstance(items, list) else list(items)
        object.__setattr__(self, name, value)
        self._present.add(name)

    @classmethod
    def _names(cls) -> Dict[str, Any]:
        names = cls.__dict__.get("_NAMES")
        if names is None:
            names = {f[1]: f for f in cls.FIELDS}
            cls._NAMES = names  # type: ignore[attr-defined]
        return names

    def HasField(self, name: str) -> bool:  # noqa: N802 (protobuf's name)
        """Whether a message or oneof field is set."""
        _, _, kind, default = self._names()[name]
        v = getattr(self, name)
        if isinstance(kind, type):
            return name in self._present or bool(v.SerializeToString())
        return name in self._present if name in self.ONEOF else v != default

    def _written(self, name: str, kind: Any, default: Any, v: Any) -> bool:
        if isinstance(kind, type):
            return name in self._present or bool(v.SerializeToString())
        return (name in self.ONEOF and name in self._present) or v != default

    def SerializeToString(self) -> bytes:  # noqa: N802 (protobuf's name)
        out = bytearray()
        for number, name, kind, default in self.FIELDS:
            v = getattr(self, name)
            if isinstance(kind, list):
                k = kind[0]
                if not v:
                    continue
                if k == "double":  # packed
                    body = struct.pack(f"<{len(v)}d", *[float(x) for x in v])
                    out += _key(number, _WIRE_LEN) + encode_varint(len(body)) + body
                elif k in _PACKABLE:  # packed, as proto3 writes repeated numbers
                    fmt = _PACKABLE[k]
                    body = (struct.pack(f"<{len(v)}{fmt}", *[float(x) if fmt == "f" else int(x) for x in v]) if fmt
                            else b"".join(encode_varint(int(x)) for x in v))
                    out += _key(number, _WIRE_LEN) + encode_varint(len(body)) + body
                else:
                    for x in v:
                        out += _encode_one(number, k, x)
            elif self._written(name, kind, default, v):
                out += _encode_one(number, kind, v)
        return bytes(out)

    @classmethod
    def FromString(cls, data: bytes) -> "Message":  # noqa: N802 (protobuf's name)
        by_number: Dict[int, Tuple[str, Any]] = {f[0]: (f[1], f[2]) for f in cls.FIELDS}
        msg = cls()
        for number, wire, raw in _fields(bytes(data)):
            spec = by_number.get(number)
            if spec is None:
                continue  # an unknown field: skipped, as protobuf does
            name, kind = spec
            if isinstance(kind, list):
                k = kind[0]
                if k == "double" and wire == _WIRE_LEN:
                    getattr(msg, name).extend(struct.unpack(f"<{len(raw) // 8}d", raw))
                elif wire == _WIRE_LEN and k in _PACKABLE:
                    getattr(msg, name).extend(_unpack(k, bytes(raw)))
                else:
                    getattr(msg, name).append(_decode_scalar(k, wire, raw))
            else:
                setattr(msg, name, _decode_scalar(kind, wire, raw))
        return msg

    def ParseFromString(self, data: bytes) -> int:  # noqa: N802 (protobuf's name)
        """Replaces this message's fields with those serialized in `data`; returns len(data)."""
        parsed = type(self).FromString(data)
        object.__setattr__(self, "_present", set(parsed._present))
        for _, name, _, _ in self.FIELDS:
            object.__setattr__(self, name, getattr(parsed, name))
        return len(data)

    def CopyFrom(self, other: "Message") -> None:  # noqa: N802 (protobuf's name)
        """Makes this message a copy of `other` (a message of the same type)."""
        if type(other) is not type(self):
            raise TypeError(f"Parameter to CopyFrom() must be instance of same class: expected {type(self).__name__} "
                            f"got {type(other).__name__}.")
        self.ParseFromString(other.SerializeToString())

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, f[1]) == getattr(other, f[1]) for f in self.FIELDS)

    def __repr__(self) -> str:
        shown = [f"{name}={getattr(self, name)!r}" for _, name, kind, default in self.FIELDS
                 if (getattr(self, name) if isinstance(kind, list) else self._written(name, kind, default,
                                                                                      getattr(self, name)))]
        return f"{type(self).__name__}({', '.join(shown)})"


class HistogramProto(Message):
    FIELDS = ((1, "min", "double", 0.0), (2, "max", "double", 0.0), (3, "num", "double", 0.0),
              (4, "sum", "double", 0.0), (5, "sum_squares", "double", 0.0),
              (6, "bucket_limit", ["double"], None), (7, "bucket", ["double"], None))


class _Dim(Message):
    FIELDS = ((1, "size", "int64", 0), (2, "name", "string", ""))


class TensorShapeProto(Message):
    Dim = _Dim
    FIELDS = ((2, "dim", [_Dim], None), (3, "unknown_rank", "bool", False))


class TensorProto(Message):
    """tensor.proto's TensorProto: dtype, shape, tensor_content and the typed value fields
    (summaries write dtype, shape, tensor_content and string_val; a TensorFlow GraphDef's Const
    values use any of them).  uint32_val/uint64_val read as int64 varints (a uint64 past
    2**63 reads negative: mask it)."""
    FIELDS = ((1, "dtype", "enum", 0), (2, "tensor_shape", TensorShapeProto, None),
              (3, "version_number", "int32", 0), (4, "tensor_content", "bytes", b""),
              (5, "float_val", ["float"], None), (6, "double_val", ["double"], None),
              (7, "int_val", ["int32"], None), (8, "string_val", ["bytes"], None),
              (9, "scomplex_val", ["float"], None), (10, "int64_val", ["int64"], None),
              (11, "bool_val", ["bool"], None), (12, "dcomplex_val", ["double"], None),
              (13, "half_val", ["int32"], None), (16, "uint32_val", ["int64"], None),
              (17, "uint64_val", ["int64"], None))


class _PluginData(Message):
    FIELDS = ((1, "plugin_name", "string", ""), (2, "content", "bytes", b""))


class SummaryMetadata(Message):
    PluginData = _PluginData
    FIELDS = ((1, "plugin_data", _PluginData, None), (2, "display_name", "string", ""),
              (3, "summary_description", "string", ""))


class _Image(Message):
    FIELDS = ((1, "height", "int32", 0), (2, "width", "int32", 0), (3, "colorspace", "int32", 0),
              (4, "encoded_image_string", "bytes", b""))


class _Audio(Message):
    FIELDS = ((1, "sample_rate", "float", 0.0), (2, "num_channels", "int64", 0), (3, "length_frames", "int64", 0),
              (4, "encoded_audio_string", "bytes", b""), (5, "content_type", "string", ""))


class _Value(Message):
    FIELDS = ((7, "node_name", "string", ""), (1, "tag", "string", ""), (9, "metadata", SummaryMetadata, None),
              (2, "simple_value", "float", 0.0), (4, "image", _Image, None), (5, "histo", HistogramProto, None),
              (6, "audio", _Audio, None), (8, "tensor", TensorProto, None))
    ONEOF = frozenset({"simple_value", "image", "histo", "audio", "tensor"})


class Summary(Message):
    """tf.Summary: `Summary(value=[Summary.Value(tag="loss", simple_value=0.5)])`."""
    Value = _Value
    Image = _Image
    Audio = _Audio
    FIELDS = ((1, "value", [_Value], None),)


class SessionLog(Message):
    """tf.SessionLog: status START, STOP or CHECKPOINT (with checkpoint_path)."""
    STATUS_UNSPECIFIED, START, STOP, CHECKPOINT = 0, 1, 2, 3
    FIELDS = ((1, "status", "enum", 0), (2, "checkpoint_path", "string", ""), (3, "msg", "string", ""))


class Event(Message):
    """tf.Event: one record of an event file (wall_time, step and one of the payloads)."""
    FIELDS = ((1, "wall_time", "double", 0.0), (2, "step", "int64", 0), (3, "file_version", "string", ""),
              (4, "graph_def", "bytes", b""), (5, "summary", Summary, None), (7, "session_log", SessionLog, None))
    ONEOF = frozenset({"file_version", "graph_def", "summary", "session_log"})

    def WhichOneof(self, group: str) -> Any:  # noqa: N802 (protobuf's name)
        """The name of the payload field that is set ("what"), or None."""
        if group != "what":
            raise ValueError(f'Protocol message Event has no "{group}" oneof')
        return next((n for n in ("file_version", "graph_def", "summary", "session_log") if self.HasField(n)), None)


class _NameAttrList(Message):
    FIELDS: Sequence[Tuple[int, str, Any, Any]] = ()  # set below AttrValue (the two refer to each other)


class _ListValue(Message):
    FIELDS = ((2, "s", ["bytes"], None), (3, "i", ["int64"], None), (4, "f", ["float"], None),
              (5, "b", ["bool"], None), (6, "type", ["enum"], None), (7, "shape", [TensorShapeProto], None),
              (8, "tensor", [TensorProto], None), (9, "func", [_NameAttrList], None))


class AttrValue(Message):
    """attr_value.proto's AttrValue (a oneof: list, s, i, f, b, type, shape, tensor,
    placeholder, func).  collflow's own GraphDefs keep an op's attributes as one string attr
    (train/graph_def_io.py); TensorFlow's GraphDefs use the typed members, which a parse keeps
    and a serialization writes back (train/tf_graph_def_import.py reads them)."""
    ListValue = _ListValue
    FIELDS = ((1, "list", _ListValue, None), (2, "s", "bytes", b""), (3, "i", "int64", 0), (4, "f", "float", 0.0),
              (5, "b", "bool", False), (6, "type", "enum", 0), (7, "shape", TensorShapeProto, None),
              (8, "tensor", TensorProto, None), (9, "placeholder", "string", ""), (10, "func", _NameAttrList, None))
    ONEOF = frozenset({"list", "s", "i", "f", "b", "type", "shape", "tensor", "placeholder", "func"})

    def WhichOneof(self, group: str) -> Any:  # noqa: N802 (protobuf's name)
        """The member of the "value" oneof that is set, or None."""
        if group != "value":
            raise ValueError(f'Protocol message AttrValue has no "{group}" oneof')
        return next((f[1] for f in self.FIELDS if f[1] in self._present), None)


class _AttrEntry(Message):
    # one entry of NodeDef's attr map (a protobuf map is a repeated key/value message)
    FIELDS = ((1, "key", "string", ""), (2, "value", AttrValue, None))


_NameAttrList.FIELDS = ((1, "name", "string", ""), (2, "attr", [_AttrEntry], None))


class NodeDef(Message):
    AttrEntry = _AttrEntry
    FIELDS = ((1, "name", "string", ""), (2, "op", "string", ""), (3, "input", ["string"], None),
              (4, "device", "string", ""), (5, "attr", [_AttrEntry], None))


class GraphDef(Message):
    """Nodes only (names, op types, inputs, devices): what TensorBoard's graph tab draws."""
    FIELDS = ((1, "node", [NodeDef], None),)


def graph_def(graph: Any) -> GraphDef:
    """The GraphDef of a cf.Graph: one node per op; input "op" for output 0, "op:k" for the
    others, "^op" for control inputs."""
    nodes: List[NodeDef] = []
    for op in graph.get_operations():
        inputs = [t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}" for t in op.inputs]
        inputs += ["^" + c.name for c in op.control_inputs]
        nodes.append(NodeDef(name=op.name, op=op.type, input=inputs, device=op.device or ""))
    return GraphDef(node=nodes)


def text_escape(b: bytes) -> str:
    """Protobuf's text-format escaping of a bytes value (quotes, backslash, \\n \\r \\t, octal
    for the rest outside printable ASCII)."""
    out = []
    for c in b:
        ch = chr(c)
        if ch in "\"'\\":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif 32 <= c < 127:
            out.append(ch)
        else:
            out.append(f"\\{c:03o}")
    return "".join(out)


def text_format(msg: Message, indent: int = 0) -> str:
    """Protobuf's text format of a hand-written message (what TF's .pbtxt files hold)."""
    pad = " " * indent
    lines: List[str] = []
    for _, name, kind, default in msg.FIELDS:
        v = getattr(msg, name)
        values = v if isinstance(kind, list) else ([v] if msg._written(name, kind, default, v) else [])
        k = kind[0] if isinstance(kind, list) else kind
        for x in values:
            if isinstance(k, type):
                lines.append(f"{pad}{name} {{\n{text_format(x, indent + 2)}{pad}}}\n")
            elif k in ("string", "bytes"):
                data = x.encode("utf-8", "surrogateescape") if isinstance(x, str) else bytes(x)
                lines.append(f'{pad}{name}: "{text_escape(data)}"\n')
            elif k == "bool":
                lines.append(f"{pad}{name}: {'true' if x else 'false'}\n")
            else:
                lines.append(f"{pad}{name}: {x}\n")
    return "".join(lines)


def write_graph(graph_or_graph_def: Any, logdir: str, name: str, as_text: bool = True) -> str:
    """tf.train.write_graph: the GraphDef (of a cf.Graph, or one given) written to logdir/name,
    as text or binary, whole or not at all; returns the path."""
    import os
    gd = graph_def(graph_or_graph_def) if hasattr(graph_or_graph_def, "get_operations") else graph_or_graph_def
    if not isinstance(gd, GraphDef):
        raise TypeError(f"write_graph takes a Graph or a GraphDef, got {type(graph_or_graph_def).__name__}")
    from ..platform.atomic_files import atomic_write_bytes
    path = os.path.join(logdir, name)
    os.makedirs(logdir or ".", exist_ok=True)
    atomic_write_bytes(path, text_format(gd).encode() if as_text else gd.SerializeToString(), durable=False)
    return path


def _register() -> None:
    from ..graph.graph import register_graph_def_builder
    register_graph_def_builder(graph_def)


_register()
