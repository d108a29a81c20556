"""Decoding tf.train.Example and tf.train.SequenceExample from their protocol-buffer bytes.

One decoder for both the parsing ops (kernels/parsing_kernels.py) and the message classes
(train/example.py, which encode).  The wire format (TensorFlow's example.proto, feature.proto):

    Example          { Features features = 1; }
    SequenceExample  { Features context = 1; FeatureLists feature_lists = 2; }
    Features         { map<string, Feature> feature = 1; }         (entries: key = 1, value = 2)
    FeatureLists     { map<string, FeatureList> feature_list = 1; }
    FeatureList      { repeated Feature feature = 1; }
    Feature          { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
                                    Int64List int64_list = 3; } }
    BytesList / FloatList / Int64List { repeated bytes|float|int64 value = 1; }

Numeric lists may come packed (one length-delimited field) or not; both are read.  Protobuf's
merge rules hold: a map key seen twice keeps its last value, a oneof member seen twice is
merged (lists concatenated), another member replaces it.  Unknown fields are skipped.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from ..errors import InvalidArgumentError

__all__ = ["BYTES", "FLOAT", "INT64", "KIND_NAMES", "decode_example", "decode_sequence_example",
           "decode_feature"]

NONE, BYTES, FLOAT, INT64 = 0, 1, 2, 3
KIND_NAMES = {BYTES: "string", FLOAT: "float", INT64: "int64"}

# (kind, values): values a list of bytes (BYTES), a float32 array (FLOAT), an int64 array (INT64)
Feature = Tuple[int, object]


class WireError(ValueError):
    """Bytes that are not a valid message of the expected type."""


def _varint(buf: bytes, pos: int, end: int) -> Tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise WireError("a varint runs past the end of its message")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise WireError("a varint longer than 10 bytes")


def _fields(buf: bytes, pos: int, end: int):
    """(field number, wire type, value or (start, stop) of a length-delimited field)."""
    while pos < end:
        key, pos = _varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if wire == 0:
            v, pos = _varint(buf, pos, end)
            yield number, 0, v
        elif wire == 2:
            n, pos = _varint(buf, pos, end)
            if pos + n > end:
                raise WireError("a length-delimited field runs past the end of its message")
            yield number, 2, (pos, pos + n)
            pos += n
        elif wire == 5:
            if pos + 4 > end:
                raise WireError("a fixed32 field runs past the end of its message")
            yield number, 5, (pos, pos + 4)
            pos += 4
        elif wire == 1:
            if pos + 8 > end:
                raise WireError("a fixed64 field runs past the end of its message")
            yield number, 1, (pos, pos + 8)
            pos += 8
        else:
            raise WireError(f"wire type {wire} (field {number}) is not valid here")


def _packed_varints(buf: bytes, start: int, stop: int) -> np.ndarray:
    """The int64 values of a packed varint run, decoded with NumPy for long runs."""
    if stop - start <= 16:
        out, pos = [], start
        while pos < stop:
            v, pos = _varint(buf, pos, stop)
            out.append(v)
        return _as_int64(np.array(out, dtype=np.uint64))
    b = np.frombuffer(buf, dtype=np.uint8, count=stop - start, offset=start)
    ends = np.flatnonzero(b < 0x80)
    if ends.size == 0 or ends[-1] != b.size - 1:
        raise WireError("a packed varint runs past the end of its field")
    starts = np.concatenate(([0], ends[:-1] + 1))
    if int(np.max(ends - starts)) > 9:
        raise WireError("a varint longer than 10 bytes")
    group = np.repeat(np.arange(ends.size), ends - starts + 1)
    shift = (np.arange(b.size) - starts[group]).astype(np.uint64) * np.uint64(7)
    parts = (b & 0x7F).astype(np.uint64) << shift
    return _as_int64(np.bitwise_or.reduceat(parts, starts))


def _as_int64(u: np.ndarray) -> np.ndarray:
    return u.view(np.int64) if u.size else np.zeros(0, dtype=np.int64)


def decode_feature(buf: bytes, start: int, stop: int) -> Feature:
    """(kind, values) of one Feature message in buf[start:stop]."""
    kind, parts = NONE, []
    for number, wire, span in _fields(buf, start, stop):
        if number not in (1, 2, 3) or wire != 2:
            continue
        if number != kind:
            kind, parts = number, []
        s, e = span
        for vn, vw, v in _fields(buf, s, e):
            if vn != 1:
                continue
            if kind == BYTES:
                if vw != 2:
                    raise WireError("a bytes_list value that is not length-delimited")
                parts.append(bytes(buf[v[0]:v[1]]))
            elif kind == FLOAT:
                if vw == 2:
                    if (v[1] - v[0]) % 4:
                        raise WireError("a packed float_list whose length is not a multiple of 4")
                    parts.append(np.frombuffer(buf, dtype="<f4", count=(v[1] - v[0]) // 4, offset=v[0]))
                elif vw == 5:
                    parts.append(np.frombuffer(buf, dtype="<f4", count=1, offset=v[0]))
                else:
                    raise WireError("a float_list value of the wrong wire type")
            else:
                if vw == 2:
                    parts.append(_packed_varints(buf, v[0], v[1]))
                elif vw == 0:
                    parts.append(_as_int64(np.array([v], dtype=np.uint64)))
                else:
                    raise WireError("an int64_list value of the wrong wire type")
    if kind == BYTES:
        return kind, parts
    if kind == FLOAT:
        return kind, (np.concatenate(parts).astype(np.float32) if parts else np.zeros(0, np.float32))
    if kind == INT64:
        return kind, (np.concatenate(parts) if len(parts) != 1 else parts[0].copy()) if parts else np.zeros(0, np.int64)
    return NONE, None


def _map_entries(buf: bytes, start: int, stop: int):
    """(key, (start, stop) of the value) of each map entry message in buf[start:stop]."""
    for number, wire, span in _fields(buf, start, stop):
        if number != 1 or wire != 2:
            continue
        key, value = "", (0, 0)
        for en, ew, ev in _fields(buf, span[0], span[1]):
            if en == 1 and ew == 2:
                key = bytes(buf[ev[0]:ev[1]]).decode("utf-8", "surrogateescape")
            elif en == 2 and ew == 2:
                value = ev
        yield key, value


def _features(buf: bytes, start: int, stop: int, out: Dict[str, Feature]) -> None:
    for key, (s, e) in _map_entries(buf, start, stop):
        out[key] = decode_feature(buf, s, e)


def decode_example(data: bytes) -> Dict[str, Feature]:
    """{feature name: (kind, values)} of a serialized Example (WireError if malformed)."""
    buf = memoryview(data) if not isinstance(data, bytes) else data
    out: Dict[str, Feature] = {}
    for number, wire, span in _fields(buf, 0, len(buf)):
        if number == 1 and wire == 2:
            _features(buf, span[0], span[1], out)
    return out


def decode_sequence_example(data: bytes) -> Tuple[Dict[str, Feature], Dict[str, List[Feature]]]:
    """(context features, {feature list name: [(kind, values) per step]}) of a serialized
    SequenceExample (WireError if malformed)."""
    buf = data
    context: Dict[str, Feature] = {}
    lists: Dict[str, List[Feature]] = {}
    for number, wire, span in _fields(buf, 0, len(buf)):
        if wire != 2:
            continue
        if number == 1:
            _features(buf, span[0], span[1], context)
        elif number == 2:
            for key, (s, e) in _map_entries(buf, span[0], span[1]):
                steps: List[Feature] = []
                for fn, fw, fv in _fields(buf, s, e):
                    if fn == 1 and fw == 2:
                        steps.append(decode_feature(buf, fv[0], fv[1]))
                lists[key] = steps
    return context, lists


def check_wire(fn, data: bytes, what: str, index: int, name: Optional[str] = None):
    """fn(data), a WireError turned into TF's InvalidArgumentError naming the example."""
    try:
        return fn(data)
    except WireError as e:
        raise InvalidArgumentError(f"Name: {name or '<unknown>'}, Could not parse {what} input (index {index}): "
                                   f"{e}") from None
