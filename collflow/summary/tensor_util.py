"""tf.make_tensor_proto / tf.make_ndarray: NumPy values to TensorFlow's TensorProto message
(tensor.proto, every value field) and back, with TF's rules: Python floats become float32 and
Python ints int32 when they fit, `shape` with fewer values than elements keeps the values in
the typed fields (make_ndarray repeats the last one), numbers of a full-size array of more than
one element go to tensor_content as raw bytes.
"""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from .proto import Message, TensorShapeProto

__all__ = ["TensorProto", "make_tensor_proto", "make_ndarray"]

# TF's DataType enum numbers
_ENUM = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "string": 7, "complex64": 8,
         "int64": 9, "bool": 10, "bfloat16": 14, "uint16": 17, "complex128": 18, "float16": 19, "uint32": 22,
         "uint64": 23}
_BY_ENUM = {v: k for k, v in _ENUM.items()}
_CONTENT = {"float16", "float32", "float64", "int32", "uint8", "int16", "int8", "int64", "uint32", "uint64"}
# the typed field of each dtype
_FIELD = {"float16": "half_val", "float32": "float_val", "float64": "double_val", "int32": "int_val",
          "int16": "int_val", "int8": "int_val", "uint8": "int_val", "uint16": "int_val", "int64": "int64_val",
          "bool": "bool_val", "complex64": "scomplex_val", "complex128": "dcomplex_val", "string": "string_val",
          "uint32": "uint32_val", "uint64": "uint64_val"}


class TensorProto(Message):
    """TensorFlow's TensorProto (tensor.proto): dtype (the DataType enum), tensor_shape, and the
    values in tensor_content (raw little-endian bytes) or one typed repeated field."""
    FIELDS = ((1, "dtype", "enum", 0), (2, "tensor_shape", TensorShapeProto, None), (3, "version_number", "int32", 0),
              (4, "tensor_content", "bytes", b""), (13, "half_val", ["int32"], None), (5, "float_val", ["float"], None),
              (6, "double_val", ["double"], None), (7, "int_val", ["int32"], None), (8, "string_val", ["bytes"], None),
              (9, "scomplex_val", ["float"], None), (10, "int64_val", ["int64"], None), (11, "bool_val", ["bool"], None),
              (12, "dcomplex_val", ["double"], None), (16, "uint32_val", ["int64"], None),
              (17, "uint64_val", ["int64"], None))


def _flatten(v: Any) -> List[Any]:
    if isinstance(v, (list, tuple)):
        return [y for x in v for y in _flatten(x)]
    return [v]


def _dense_dims(v: Any) -> List[int]:
    if not isinstance(v, (list, tuple)):
        return []
    if not v:
        return [0]
    return [len(v)] + _dense_dims(v[0])


def _check_compatible(values: Any, dtype: Optional[_dt.DType]) -> None:
    """TF's check that Python `values` suit `dtype` (TypeError naming the first that does not)."""
    if dtype is None or dtype.name not in _FIELD:
        ok: Any = None
    elif dtype == _dt.bool_:
        ok = (bool, np.bool_)
    elif dtype.name == "string":
        ok = (bytes, str)
    elif dtype.is_integer:
        ok = (int, np.integer)
    elif dtype.name.startswith("complex"):
        ok = (int, float, complex, np.number)
    else:
        ok = (int, float, np.integer, np.floating)
    for v in _flatten(values):
        if isinstance(v, _g.Tensor):
            raise TypeError("Expected any non-tensor type, but got a tensor instead.")
        if ok is not None and not (isinstance(v, ok) or (isinstance(v, np.ndarray) and issubclass(v.dtype.type, ok))):
            raise TypeError(f"Expected {dtype.name}, but got {v} of type '{type(v).__name__}'.")


def _dtype_of(a: np.ndarray) -> _dt.DType:
    if a.dtype.kind in "OSU":
        return _dt.string
    try:
        return _dt.as_dtype(a.dtype)
    except (TypeError, ValueError, KeyError):
        raise TypeError(f"Unrecognized data type: {a.dtype}.") from None


def make_tensor_proto(values: Any, dtype: Any = None, shape: Any = None, verify_shape: bool = False,
                      allow_broadcast: bool = False) -> TensorProto:
    """A TensorProto of `values` (a NumPy array or nested Python lists), as tf.make_tensor_proto.

    dtype: the tensor's dtype (values must suit it: TypeError).  shape: the tensor's shape; a
    value with fewer elements fills it (its last element repeated by make_ndarray), more is a
    ValueError.  verify_shape: values must have exactly `shape` (TypeError).  allow_broadcast: a
    scalar or one-element value may take any shape."""
    if allow_broadcast and verify_shape:
        raise ValueError("allow_broadcast and verify_shape are not both allowed.")
    if isinstance(values, TensorProto):
        return values
    if isinstance(values, _g.Tensor):
        raise TypeError("Expected any non-tensor type, but got a tensor instead.")
    dt = _dt.as_dtype(dtype) if dtype is not None else None
    if isinstance(values, (np.ndarray, np.generic)):
        arr = values.astype(dt.np) if dt is not None and dt != _dt.string else np.asarray(values)
    else:
        if values is None:
            raise ValueError("None values not supported.")
        np_dt = dt.np if dt is not None and dt != _dt.string else None
        if shape is not None and int(np.prod([int(d) for d in shape], dtype=np.int64)) == 0:
            arr = np.empty([int(d) for d in shape], dtype=np_dt)
            if arr.dtype == np.float64 and dt is None:
                arr = arr.astype(np.float32)
        else:
            _check_compatible(values, dt)
            arr = np.array(values, dtype=np_dt if np_dt is not None else (object if dt == _dt.string else None))
            if list(arr.shape) != _dense_dims(values):
                raise ValueError(f"Expected values {values} to be a dense tensor with shape {_dense_dims(values)}, "
                                 f"but got shape {list(arr.shape)}.")
            if arr.dtype == np.float64 and dt is None:
                arr = arr.astype(np.float32)
            elif arr.dtype == np.int64 and dt is None:
                small = arr.astype(np.int32)
                if np.array_equal(small, arr):
                    arr = small
    got = _dtype_of(arr)
    if dt is not None and dt != got:
        raise TypeError(f"`dtype` {dt.name} is not compatible with {values} of dtype {arr.dtype}.")
    if got.name not in _ENUM:
        raise TypeError(f"Element type not supported in TensorProto: {got.name}.")
    if shape is None:
        dims, same = list(arr.shape), True
        size = arr.size
    else:
        dims = [int(d) for d in shape]
        size = int(np.prod(dims, dtype=np.int64))
        same = size == arr.size
        if allow_broadcast:
            if arr.shape not in ((1,), ()) and arr.size != size:
                raise TypeError(f"Expected Tensor's shape: {tuple(dims)}, but got {arr.shape}.")
        else:
            if verify_shape and arr.shape != tuple(dims):
                raise TypeError(f"Expected Tensor's shape: {tuple(dims)}, but got {arr.shape}.")
            if arr.size > size:
                raise ValueError(f"Too many elements provided. Takes at most {size:d}, but got {arr.size:d}.")
    proto = TensorProto(dtype=_ENUM[got.name],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in dims]))
    if same and got.name in _CONTENT and size > 1:
        if arr.nbytes >= 1 << 31:
            raise ValueError("Cannot create a tensor proto whose content is larger than 2GB.")
        proto.tensor_content = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        return proto
    flat = arr.reshape(-1)
    field = _FIELD[got.name]
    if got == _dt.string:
        vals: List[Any] = [_dt.string_bytes(x) if not isinstance(x, bytes) else x for x in flat]
    elif got.name == "float16":
        vals = [int(x) for x in flat.view(np.uint16)]
    elif got.name.startswith("complex"):
        vals = [float(y) for x in flat for y in (x.real, x.imag)]
    elif got == _dt.bool_:
        vals = [bool(x) for x in flat]
    elif got.is_integer:
        vals = [int(x) for x in flat]
    else:
        vals = [float(x) for x in flat]
    setattr(proto, field, vals)
    return proto


def make_ndarray(tensor: Any) -> np.ndarray:
    """The NumPy array a TensorProto holds (tf.make_ndarray): values from tensor_content or the
    typed field, the last value repeated to fill the shape."""
    shape = [int(d.size) for d in tensor.tensor_shape.dim]
    n = int(np.prod(shape, dtype=np.int64))
    name = _BY_ENUM.get(int(tensor.dtype))
    if name is None or name == "bfloat16":
        raise TypeError(f"Unsupported tensor type: {tensor.dtype}")
    if name == "string":
        vals = list(tensor.string_val)
        if n > len(vals):
            vals += [vals[-1] if vals else b""] * (n - len(vals))
        return np.array(vals, dtype=object).reshape(shape)
    npdt = np.dtype(_dt.as_dtype(name).np)
    if tensor.tensor_content:
        return np.frombuffer(tensor.tensor_content, dtype=npdt.newbyteorder("<")).astype(npdt).reshape(shape)
    raw = list(getattr(tensor, _FIELD[name]))
    if name == "float16":
        vals = np.array(raw, dtype=np.uint16).view(np.float16)
    elif name.startswith("complex"):
        pairs = np.array(raw, dtype=np.float64).reshape(-1, 2)
        vals = (pairs[:, 0] + 1j * pairs[:, 1]).astype(npdt)
    else:
        vals = np.array(raw, dtype=npdt)
    if vals.size == 0:
        return np.zeros(shape, dtype=npdt)
    if vals.size < n:
        vals = np.concatenate([vals, np.repeat(vals[-1:], n - vals.size)])
    return vals[:n].reshape(shape)
