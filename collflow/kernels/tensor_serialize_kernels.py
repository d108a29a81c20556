"""Kernels of SerializeTensor / ParseTensor: TensorFlow's SerializeTensorOp writes a string
tensor with its string_val field (Tensor::AsProtoField) and any other with tensor_content
(AsProtoTensorContent); ParseTensor reads either form (tensor_proto_wire's decoder, plus
the complex types, which only tensor_content carries here)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..platform.varint import encode_varint
from .registry import register_kernel, KernelContext
from .tensor_proto_wire import DT_ENUM, ENUM_NAMES, _Wire, _field, _shape, check_decoded, encode_tensor_proto

__all__ = ["serialize", "parse"]  # and the Bitcast kernel

_COMPLEX = {"complex64": 8, "complex128": 18}
_ENUM_OF = dict(DT_ENUM, **_COMPLEX)
# TF's names in its messages ("float", "double", ...)
_TF_NAME = {k: ENUM_NAMES[v] for k, v in _ENUM_OF.items()}


def serialize(arr: np.ndarray, dtype: _dt.DType) -> bytes:
    """The bytes TF's SerializeTensor gives for `arr` of `dtype`."""
    a = np.asarray(arr)
    if dtype.name in _COMPLEX:
        shape = b"".join(_field(2, encode_varint(1 << 3) + encode_varint(int(d)) if d else b"") for d in a.shape)
        content = np.ascontiguousarray(a, dtype=np.dtype(dtype.np).newbyteorder("<")).tobytes()
        return (encode_varint(1 << 3) + encode_varint(_COMPLEX[dtype.name]) + _field(2, shape)
                + (_field(4, content) if content else b""))
    if dtype.name not in DT_ENUM:
        raise InvalidArgumentError(f"serialize_tensor: dtype {dtype.name} cannot be serialized")
    if dtype != _dt.string:
        return encode_tensor_proto(a, dtype)
    shape = b"".join(_field(2, encode_varint(1 << 3) + encode_varint(int(d)) if d else b"") for d in a.shape)
    vals = b"".join(_field(8, _dt.string_bytes(x)) for x in a.reshape(-1))
    return encode_varint(1 << 3) + encode_varint(DT_ENUM["string"]) + _field(2, shape) + vals


def _parse_complex(data: bytes, name: str, op: Any) -> np.ndarray:
    dims, content = [], b""
    for number, wire, v in _Wire(data).fields():
        if number == 2 and wire == 2:
            dims = _shape(bytes(v))
        elif number == 4 and wire == 2:
            content = bytes(v)
    npd = np.dtype(_dt.as_dtype(name).np)
    n = int(np.prod(dims, dtype=np.int64)) if dims else 1
    if dims is None or len(content) != n * npd.itemsize:
        raise InvalidArgumentError("Could not parse `serialized` as TensorProto: complex values must be in "
                                   "tensor_content here", op)
    return np.frombuffer(content, npd.newbyteorder("<")).astype(npd).reshape(dims)


def parse(data: Any, out: _dt.DType, op: Any = None) -> np.ndarray:
    """The array TF's ParseTensor gives for `data`, of dtype `out` (else InvalidArgumentError)."""
    raw = _dt.string_bytes(data)
    try:
        enum = next((v for n, w, v in _Wire(raw).fields() if n == 1 and w == 0), 0)
    except Exception:  # noqa: BLE001  (any malformed wire data)
        raise InvalidArgumentError("Could not parse `serialized` as TensorProto", op) from None
    if enum != _ENUM_OF.get(out.name):
        raise InvalidArgumentError(
            f"Type mismatch between parsed tensor ({ENUM_NAMES.get(enum, enum)}) and dtype "
            f"({_TF_NAME.get(out.name, out.name)})", op)
    if out.name in _COMPLEX:
        return _parse_complex(raw, out.name, op)
    _, arr = check_decoded(raw, "`serialized` as TensorProto", op)
    return arr.astype(object) if out == _dt.string else arr.astype(out.np, copy=False)


@register_kernel("SerializeTensor")
def _serialize_tensor(op: Any, ctx: KernelContext) -> Any:
    dtype = op.inputs[0].dtype
    return lambda x: np.array(_dt.bytes_text(serialize(np.asarray(x), dtype)), dtype=object)


@register_kernel("ParseTensor")
def _parse_tensor(op: Any, ctx: KernelContext) -> Any:
    out = op.attrs["out_type"]

    def run(s: Any) -> Any:
        return parse(np.asarray(s, dtype=object).item(), out, op)
    return run


@register_kernel("Bitcast")
def _bitcast(op: Any, ctx: KernelContext) -> Any:
    out = np.dtype(op.attrs["type"].np)
    src = np.dtype(op.inputs[0].dtype.np)
    a, b = src.itemsize, out.itemsize

    def run(x: Any) -> Any:
        x = np.ascontiguousarray(x)
        if a > b:
            return x.view(out).reshape(x.shape + (a // b,))
        if a < b:
            if x.ndim == 0 or x.shape[-1] != b // a:
                raise InvalidArgumentError(
                    f"Cannot bitcast from {op.inputs[0].dtype.name} to {op.attrs['type'].name}: shape {list(x.shape)}",
                    op)
            return x.view(out).reshape(x.shape[:-1])
        return x.view(out)
    return run
