"""Constants, placeholders, identity and grouping ops."""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_op, register_gradient, not_differentiable
from ..shape import TensorShape, as_shape
from .op_util import make_op, single, same_shape_fn
from . import dtype_rules as _rules

__all__ = ["constant", "placeholder", "placeholder_with_default", "identity", "no_op", "group",
           "stop_gradient"]


register_op("Const", lambda op: [(op.attrs["dtype"], op.attrs["value"].shape)])
register_op("Placeholder", lambda op: [(op.attrs["dtype"], op.attrs["shape"])])
register_op("PlaceholderWithDefault", lambda op: [(op.inputs[0].dtype, op.attrs["shape"])])
register_op("Identity", same_shape_fn)
register_op("StopGradient", same_shape_fn)
register_op("NoOp", lambda op: [])

not_differentiable("Const", "Placeholder", "StopGradient", "NoOp")


@register_gradient("Identity")
def _identity_grad(op: _g.Operation, grad: Any) -> list:
    return [grad]


@register_gradient("PlaceholderWithDefault")
def _pwd_grad(op: _g.Operation, grad: Any) -> list:
    return [grad]


def _to_array(value: Any, dtype: Optional[_dt.DType]) -> np.ndarray:
    if dtype == _dt.string and not isinstance(value, (np.ndarray, np.generic)):
        _rules.check_python_leaves(value, dtype)
    elif dtype == _dt.string and np.asarray(value).dtype.kind not in "USO":
        raise TypeError(f"Expected string, but got a NumPy value of dtype {np.asarray(value).dtype}.")
    if dtype == _dt.string or (dtype is None and _holds_bytes(value)):
        # bytes become str (collflow's strings; surrogates keep undecodable bytes)
        return _dt.string_array(value)
    if dtype is not None:
        # TF's rule (graph/ops/dtype_rules.py): NumPy values are cast, Python leaves checked
        if isinstance(value, (np.ndarray, np.generic)):
            return _rules.cast_numpy(value, dtype)
        _rules.check_python_leaves(value, dtype)
        try:
            return _rules.wrap_python_ints(value, dtype)
        except (TypeError, ValueError) as e:
            raise InvalidArgumentError(f"cannot make a {dtype.name} constant from {value!r}: {e}") from None
    arr = np.asarray(value)
    if (arr.dtype == object or arr.dtype.kind in "US") and not isinstance(value, (np.ndarray, np.generic)) \
            and any(not isinstance(v, (str, np.str_, np.ndarray)) for v in _rules._leaves(value)):
        # e.g. 2**64 or [1, "a"]: TF finds no dtype for them
        raise TypeError(f"Failed to convert elements of {value!r} to Tensor. Consider casting elements to a "
                        "supported type.")
    # Python floats become float32 and ints int32, as in TensorFlow
    if arr.dtype == np.float64 and not isinstance(value, (np.ndarray, np.generic)):
        arr = arr.astype(np.float32)
    elif arr.dtype == np.int64 and not isinstance(value, (np.ndarray, np.generic)):
        if arr.size == 0 or (arr.min() >= -2**31 and arr.max() < 2**31):
            arr = arr.astype(np.int32)
    elif arr.dtype.kind in "US":
        arr = arr.astype(object)
    return arr


def _holds_bytes(value: Any) -> bool:
    if isinstance(value, (bytes, np.bytes_)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind == "S" or (value.dtype == object and any(isinstance(x, bytes) for x in value.flat))
    if isinstance(value, (list, tuple)):
        return any(_holds_bytes(v) for v in value)
    return False


def constant(value: Any, dtype: Any = None, shape: Any = None, name: str = "Const") -> _g.Tensor:
    """A constant tensor from a NumPy array or (nested) Python value.

    `shape` broadcasts a scalar (or reshapes a value with the same number of elements).
    Python floats default to float32 and ints to int32, as in TensorFlow.
    """
    dt = _dt.as_dtype(dtype) if dtype is not None else None
    arr = _to_array(value, dt)
    if shape is not None:
        shp = tuple(as_shape(shape).as_list())
        if arr.size == 1:
            arr = np.broadcast_to(arr.reshape(()), shp)
        elif arr.size == int(np.prod(shp)):
            arr = arr.reshape(shp)
        else:
            raise InvalidArgumentError(f"constant of {arr.size} elements cannot have shape {shp}")
    # a private C-ordered copy (ascontiguousarray would turn a 0-d value into shape (1,))
    arr = np.array(arr, order="C")
    arr.setflags(write=False)  # consumers must never write into a constant
    # a quantized dtype keeps its name (its array holds the plain integers)
    out_dt = dt if dt is not None and dt.is_quantized else _dt.as_dtype(arr.dtype)
    return single("Const", [], {"value": arr, "dtype": out_dt}, name=name)


def placeholder(dtype: Any, shape: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """A tensor that must be fed at run time; `shape` may have None dims (or be None)."""
    return single("Placeholder", [], {"dtype": _dt.as_dtype(dtype), "shape": as_shape(shape)},
                  name=name or "Placeholder")


def placeholder_with_default(input: Any, shape: Any, name: Optional[str] = None) -> _g.Tensor:
    """Passes `input` through unless fed; the fed value may have any shape compatible with `shape`."""
    x = _g.convert_to_tensor(input)
    shp = as_shape(shape)
    if not shp.is_compatible_with(x.shape):
        raise InvalidArgumentError(f"default value of shape {x.shape} is incompatible with shape {shp}")
    return single("PlaceholderWithDefault", [x], {"shape": shp}, name=name or "PlaceholderWithDefault")


def identity(input: Any, name: Optional[str] = None) -> _g.Tensor:
    """Returns `input` unchanged (a new node, useful for control dependencies and naming)."""
    return single("Identity", [input], name=name or "Identity")


def stop_gradient(input: Any, name: Optional[str] = None) -> _g.Tensor:
    """Identity in the forward pass; blocks gradients in the backward pass."""
    return single("StopGradient", [input], name=name or "StopGradient")


def no_op(name: Optional[str] = None) -> _g.Operation:
    return make_op("NoOp", [], name=name or "NoOp")


def group(*inputs: Any, name: Optional[str] = None) -> _g.Operation:
    """An op that runs after all of `inputs` (ops or tensors), producing nothing."""
    flat: list = []
    for x in inputs:
        if isinstance(x, (list, tuple)):
            flat.extend(x)
        else:
            flat.append(x)
    g = _g.get_default_graph()
    for x in flat:
        gg = getattr(x, "graph", None)
        if isinstance(gg, _g.Graph):
            g = gg
            break
    with g.as_default(), g.control_dependencies(flat):
        return no_op(name=name or "group_deps")
