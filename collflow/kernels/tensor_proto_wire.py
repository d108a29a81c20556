"""TensorFlow's TensorProto (tensor.proto) encoded and decoded by hand, as the sparse
serialization kernels need it: TF's SerializeSparse writes each component with
Tensor::AsProtoTensorContent, so the bytes here are those (field order 1, 2, 4; strings as
port::EncodeStringList in tensor_content: every length as a varint, then the bytes).

Why not summary/proto.py's Message classes: kernels sit below summary in the package's
layers (tests/test_layering.py), and the TensorProto there has only the summary fields.
The decoder reads what Tensor::FromProto reads: tensor_content or the typed repeated fields
(packed or not; fewer values than elements repeat the last, as TF).
"""
from __future__ import annotations

import struct
from typing import Any, Iterator, List, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..platform.varint import encode_varint

__all__ = ["DT_ENUM", "ENUM_NAMES", "encode_tensor_proto", "decode_tensor_proto"]

# TF's DataType enum values of the dtypes collflow has
DT_ENUM = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "string": 7, "int64": 9,
           "bool": 10, "uint16": 17, "float16": 19, "uint32": 22, "uint64": 23}
# TF's names of every DataType enum value (for its error messages about foreign dtypes too)
ENUM_NAMES = {1: "float", 2: "double", 3: "int32", 4: "uint8", 5: "int16", 6: "int8", 7: "string", 8: "complex64",
              9: "int64", 10: "bool", 11: "qint8", 12: "quint8", 13: "qint32", 14: "bfloat16", 15: "qint16",
              16: "quint16", 17: "uint16", 18: "complex128", 19: "half", 20: "resource", 21: "variant",
              22: "uint32", 23: "uint64"}
_BY_ENUM = {v: k for k, v in DT_ENUM.items()}

# the typed repeated field of each dtype: (field number, element kind)
_TYPED = {"float32": (5, "f32"), "float64": (6, "f64"), "int32": (7, "varint"), "uint8": (7, "varint"),
          "int16": (7, "varint"), "int8": (7, "varint"), "uint16": (7, "varint"), "string": (8, "bytes"),
          "int64": (10, "varint"), "bool": (11, "varint"), "float16": (13, "varint"), "uint32": (16, "varint"),
          "uint64": (17, "varint")}


_varint = encode_varint  # a negative int64 as its two's complement, as protobuf


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def encode_tensor_proto(arr: np.ndarray, dtype: _dt.DType) -> bytes:
    """The serialized TensorProto of arr, as TF's AsProtoTensorContent writes it."""
    a = np.asarray(arr)
    shape = b"".join(_field(2, _varint(1 << 3) + _varint(int(d)) if d else b"") for d in a.shape)
    out = _varint(1 << 3) + _varint(DT_ENUM[dtype.name]) + _field(2, shape)
    if dtype == _dt.string:
        items = [_dt.string_bytes(x) for x in a.reshape(-1)]
        content = b"".join(_varint(len(x)) for x in items) + b"".join(items)
    else:
        content = np.ascontiguousarray(a, dtype=np.dtype(dtype.np).newbyteorder("<")).tobytes()
    return out + (_field(4, content) if content else b"")  # proto3: empty bytes not written


class _Wire:
    """A cursor over protobuf bytes; any overrun is a parse failure (WireError)."""

    def __init__(self, data: bytes, pos: int = 0, end: Optional[int] = None):
        self.data, self.pos, self.end = data, pos, len(data) if end is None else end

    def varint(self) -> int:
        result = shift = 0
        while True:
            if self.pos >= self.end or shift > 63:
                raise ValueError("bad varint")
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result & ((1 << 64) - 1)
            shift += 7

    def fields(self) -> Iterator[Tuple[int, int, Any]]:
        """(number, wire type, value): an int for varints, bytes for the others."""
        while self.pos < self.end:
            key = self.varint()
            number, wire = key >> 3, key & 7
            if wire == 0:
                yield number, wire, self.varint()
                continue
            size = {1: 8, 5: 4}.get(wire)
            if size is None:
                if wire != 2:
                    raise ValueError(f"wire type {wire}")
                size = self.varint()
            if self.pos + size > self.end:
                raise ValueError("truncated")
            yield number, wire, self.data[self.pos:self.pos + size]
            self.pos += size


def _shape(data: bytes) -> Optional[List[int]]:
    """A TensorShapeProto's dims (None: unknown rank)."""
    dims: List[int] = []
    unknown = False
    for number, wire, v in _Wire(data).fields():
        if number == 2 and wire == 2:
            size = 0
            for n2, w2, v2 in _Wire(v).fields():
                if n2 == 1 and w2 == 0:
                    size = v2 - (1 << 64) if v2 >= 1 << 63 else v2
            dims.append(size)
        elif number == 3 and wire == 0:
            unknown = bool(v)
    return None if unknown else dims


def _typed_values(kind: str, wire: int, v: Any, out: list) -> None:
    if kind == "bytes":
        out.append(bytes(v))
    elif kind == "varint":
        if wire == 2:  # packed
            w = _Wire(bytes(v))
            while w.pos < w.end:
                out.append(w.varint())
        else:
            out.append(v)
    else:
        fmt, size = ("<f", 4) if kind == "f32" else ("<d", 8)
        if (wire == 2) or (wire == 5 and size == 4) or (wire == 1 and size == 8):
            out.extend(x[0] for x in struct.iter_unpack(fmt, bytes(v)))


def decode_tensor_proto(data: bytes) -> Tuple[int, np.ndarray]:
    """(TF's DataType enum value, the array) of a serialized TensorProto; ValueError when the
    bytes are no TensorProto or not one of a dtype collflow has (the enum says which)."""
    dtype_enum = 0
    dims: Optional[List[int]] = []
    content: Optional[bytes] = None
    typed: list = []
    msg = _Wire(bytes(data))
    fields = list(msg.fields())
    for number, wire, v in fields:
        if number == 1 and wire == 0:
            dtype_enum = v
    name = _BY_ENUM.get(dtype_enum)
    for number, wire, v in fields:
        if number == 2 and wire == 2:
            dims = _shape(bytes(v))
        elif number == 4 and wire == 2:
            content = bytes(v)
        elif name is not None and number == _TYPED[name][0]:
            _typed_values(_TYPED[name][1], wire, v, typed)
    if name is None:
        return dtype_enum, np.zeros(0)
    if dims is None or any(d < 0 for d in dims):
        raise ValueError("not a fully defined shape")
    dt = _dt.as_dtype(name)
    n = int(np.prod(dims, dtype=np.int64)) if dims else 1
    if name == "string":
        items = _decode_strings(content, n) if content is not None else [bytes(x) for x in typed]
        flat = np.empty(n, object)
        if content is None:
            items = (items + [items[-1] if items else b""] * n)[:n]
        flat[:] = [_dt.bytes_text(x) for x in items]
        return dtype_enum, flat.reshape(dims)
    npd = np.dtype(dt.np)
    if content is not None:
        if len(content) != n * npd.itemsize:
            raise ValueError("tensor_content of the wrong size")
        return dtype_enum, np.frombuffer(content, npd.newbyteorder("<")).astype(npd).reshape(dims)
    if name == "float16":  # half_val holds the float16 bit patterns
        vals = np.array(typed, np.uint16).view(np.float16)
    elif name in ("int64", "uint64", "int32", "int16", "int8", "uint32", "uint16", "uint8"):
        vals = np.array([x & ((1 << 64) - 1) for x in typed], np.uint64).astype(npd)  # wraps as C++'s casts
    else:
        vals = np.array(typed, npd)
    if vals.size > n:
        raise ValueError("more values than elements")
    out = np.zeros(n, npd)
    out[:vals.size] = vals
    if 0 < vals.size < n:
        out[vals.size:] = vals[-1]  # TF: the last value repeated
    return dtype_enum, out.reshape(dims)


def _decode_strings(content: bytes, n: int) -> List[bytes]:
    """port::DecodeStringList: n varint lengths, then the bytes."""
    w = _Wire(content)
    lengths = [w.varint() for _ in range(n)]
    items, pos = [], w.pos
    for ln in lengths:
        if pos + ln > len(content):
            raise ValueError("truncated string list")
        items.append(content[pos:pos + ln])
        pos += ln
    if pos != len(content):
        raise ValueError("string list of the wrong size")
    return items


def check_decoded(data: Any, what: str, op: Any) -> Tuple[int, np.ndarray]:
    """decode_tensor_proto, a failure TF's InvalidArgumentError ("Could not parse ...")."""
    try:
        return decode_tensor_proto(_dt.string_bytes(data))
    except (ValueError, struct.error, IndexError) as e:
        raise InvalidArgumentError(f"Could not parse {what} ({e})", op) from None
