"""TF1's remaining scatter ops: tf.scatter_mul/div/min/max on variables and
tf.tensor_scatter_nd_min/max on tensors.

The variable forms are ops on the variable's handle, as tf.scatter_add is (state_ops.py):
the rows at `indices` are combined with `updates` in index order, so a repeated index
multiplies, divides (integers truncate toward zero, as C++'s `/`), or takes the min/max
again, as TF's CPU kernel applies them.  Like TF's, they have no gradient.

tensor_scatter_nd_min/max are ops of their own with TF 2.x's gradient: the output's
gradient is shared between the tensor's entry and the updates that equal the output at
that position (a tie splits it evenly).  Kernels in kernels/scatter_more_kernels.py.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from . import math_ops as _m
from . import state_ops as _s
from .index_ops import gather_nd, scatter_nd
from .op_util import dense, single

__all__ = ["scatter_mul", "scatter_div", "scatter_min", "scatter_max", "tensor_scatter_nd_min",
           "tensor_scatter_nd_max"]

_MINMAX_DTYPES = (_dt.float16, _dt.float32, _dt.float64, _dt.int32, _dt.int64)


def _check_updates_shape(what: str, ref_shape: TensorShape, idx: _g.Tensor, upd: _g.Tensor) -> None:
    """updates must be shaped indices.shape + ref.shape[1:] (or be a scalar), as TF's shape
    function requires (ValueError when the graph is built)."""
    if upd.shape.rank == 0 or idx.shape.rank is None or ref_shape.rank is None or upd.shape.rank is None:
        return
    want = TensorShape(list(idx.shape.as_list()) + list(ref_shape.as_list()[1:]))
    if not want.is_compatible_with(upd.shape):
        raise ValueError(f"{what}: updates of shape {upd.shape} do not fit indices of shape {idx.shape} into "
                         f"a variable of shape {ref_shape} (want {want})")


def _check_dtypes(op_type: str, dt: Any, idx: _g.Tensor, upd: _g.Tensor) -> None:
    """TF's TypeErrors when the graph is built (before the op exists, so they stay TypeErrors)."""
    if idx.dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"{op_type}: indices must be int32 or int64, got {idx.dtype.name}")
    if upd.dtype != dt:
        what = "tensor" if "Tensor" in op_type else "variable"
        raise TypeError(f"{op_type}: updates have dtype {upd.dtype.name}, the {what} {dt.name}")
    if op_type in ("ScatterMin", "ScatterMax", "TensorScatterMin", "TensorScatterMax") and dt not in _MINMAX_DTYPES:
        raise TypeError(f"{op_type}: {dt.name} is not supported (real numbers only)")
    if not (dt.is_floating or dt.is_integer or dt.is_complex):
        raise TypeError(f"{op_type}: {dt.name} is not supported (numbers only)")


def _variable_scatter_spec(op: _g.Operation) -> list:
    dt, shp = _s.variable_dtype_shape(op.inputs[0])
    idx, upd = op.inputs[1], op.inputs[2]
    if idx.dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"{op.type}: indices must be int32 or int64, got {idx.dtype.name}")
    if upd.dtype != dt:
        raise TypeError(f"{op.type}: updates have dtype {upd.dtype.name}, the variable {dt.name}")
    if op.type in ("ScatterMin", "ScatterMax") and dt not in _MINMAX_DTYPES:
        raise TypeError(f"{op.type}: a {dt.name} variable is not supported (real numbers only)")
    if not (dt.is_floating or dt.is_integer or dt.is_complex):
        raise TypeError(f"{op.type}: a {dt.name} variable is not supported (numbers only)")
    _check_updates_shape(op.type, shp, idx, upd)
    return [(dt, shp)]


for _n in ("ScatterMul", "ScatterDiv", "ScatterMin", "ScatterMax"):
    register_op(_n, _variable_scatter_spec, variable_state=True)
not_differentiable("ScatterMul", "ScatterDiv", "ScatterMin", "ScatterMax")


def _var_scatter(op_type: str, ref: Any, indices: Any, updates: Any, name: Optional[str]) -> _g.Tensor:
    h = _s._handle(ref)
    with h.graph.as_default():
        idx = _g.convert_to_tensor(indices)
        upd = _s._value_for(ref, updates)
        _check_dtypes(op_type, _s.variable_dtype_shape(h)[0], idx, upd)
        return single(op_type, [h, idx, upd], name=name or op_type)


# use_locking is accepted as TF1 takes it: every update here holds the variable's lock
def scatter_mul(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: Optional[str] = None) -> _g.Tensor:
    """ref[indices] *= updates (a repeated index multiplies again); returns the new value."""
    return _var_scatter("ScatterMul", ref, indices, updates, name)


def scatter_div(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: Optional[str] = None) -> _g.Tensor:
    """ref[indices] /= updates (integers truncate toward zero); returns the new value."""
    return _var_scatter("ScatterDiv", ref, indices, updates, name)


def scatter_min(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: Optional[str] = None) -> _g.Tensor:
    """ref[indices] = min(ref[indices], updates); returns the new value."""
    return _var_scatter("ScatterMin", ref, indices, updates, name)


def scatter_max(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: Optional[str] = None) -> _g.Tensor:
    """ref[indices] = max(ref[indices], updates); returns the new value."""
    return _var_scatter("ScatterMax", ref, indices, updates, name)


# -- tensor_scatter_nd_min / max --------------------------------------------------------------

def _tensor_scatter_spec(op: _g.Operation) -> list:
    t, idx, upd = op.inputs
    if idx.dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"{op.type}: indices must be int32 or int64, got {idx.dtype.name}")
    if upd.dtype != t.dtype:
        raise TypeError(f"{op.type}: updates have dtype {upd.dtype.name}, the tensor {t.dtype.name}")
    if t.dtype not in _MINMAX_DTYPES:
        raise TypeError(f"{op.type}: {t.dtype.name} is not supported (real numbers only)")
    if idx.shape.rank is not None and idx.shape.rank == 0:
        raise ValueError(f"{op.type}: indices must have rank at least 1, got a scalar")
    if t.shape.num_elements() == 0 and idx.shape.num_elements():  # TF's shape check
        raise ValueError(f"{op.type}: indices and updates specified for an empty tensor (shape {t.shape})")
    if idx.shape.rank is not None and t.shape.rank is not None and upd.shape.rank is not None:
        depth = idx.shape.as_list()[-1]
        if depth is not None:
            if depth > t.shape.rank:
                raise ValueError(f"{op.type}: the index depth {depth} is more than the tensor's rank "
                                 f"{t.shape.rank}")
            want = TensorShape(idx.shape.as_list()[:-1] + t.shape.as_list()[depth:])
            if not want.is_compatible_with(upd.shape):
                raise ValueError(f"{op.type}: updates must have shape {want} (indices.shape[:-1] + "
                                 f"tensor.shape[{depth}:]), got {upd.shape}")
    return [(t.dtype, t.shape)]


register_op("TensorScatterMin", _tensor_scatter_spec)
register_op("TensorScatterMax", _tensor_scatter_spec)


def _tensor_scatter(op_type: str, tensor: Any, indices: Any, updates: Any, name: Optional[str]) -> _g.Tensor:
    t = _g.convert_to_tensor(tensor)
    with t.graph.as_default():
        idx = _g.convert_to_tensor(indices)
        upd = _g.convert_to_tensor(updates, dtype=t.dtype)
        _check_dtypes(op_type, t.dtype, idx, upd)
        return single(op_type, [t, idx, upd], name=name or op_type)


def tensor_scatter_nd_min(tensor: Any, indices: Any, updates: Any, name: Optional[str] = None) -> _g.Tensor:
    """tensor with each entry (or slice) at the N-d indices replaced by its min with the updates."""
    return _tensor_scatter("TensorScatterMin", tensor, indices, updates, name)


def tensor_scatter_nd_max(tensor: Any, indices: Any, updates: Any, name: Optional[str] = None) -> _g.Tensor:
    """tensor with each entry (or slice) at the N-d indices replaced by its max with the updates."""
    return _tensor_scatter("TensorScatterMax", tensor, indices, updates, name)


def _min_max_grad(op: _g.Operation, grad: Any) -> list:
    # the gradient goes to whoever equals the output: the tensor's own entry and/or the
    # updates that won there, split evenly between them (TF 2.x's rule)
    t, idx, upd = op.inputs
    out = op.outputs[0]
    grad = dense(grad)
    x_hit = _m.cast(_m.equal(t, out), grad.dtype)
    y_hit = _m.cast(_m.equal(upd, gather_nd(out, idx)), grad.dtype)
    count = x_hit + scatter_nd(idx, y_hit, _a.shape(t, out_type=idx.dtype))  # >= 1 everywhere
    share = grad / count
    return [share * x_hit, None, gather_nd(share, idx) * y_hit]


register_gradient("TensorScatterMin")(_min_max_grad)
register_gradient("TensorScatterMax")(_min_max_grad)
