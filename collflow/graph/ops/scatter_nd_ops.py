"""N-d scatters into tensors and variables, and index arithmetic, as TF 1.15 defines them:
tf.tensor_scatter_nd_update/add/sub (also TF 1.15's tensor_scatter_update/add/sub),
tf.scatter_nd_update/add/sub on variables, tf.unravel_index and tf.setdiff1d.  Composed
from scatter_nd, gather_nd and where, so gradients come from the parts: a tensor scatter's
gradient reaches the tensor everywhere but at updated positions (update) or everywhere (add,
sub), and the updates at their indices.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from . import array_ops as _a
from . import math_ops as _m
from . import state_ops as _s
from .index_ops import scatter_nd

__all__ = ["tensor_scatter_nd_update", "tensor_scatter_nd_add", "tensor_scatter_nd_sub", "tensor_scatter_update",
           "tensor_scatter_add", "tensor_scatter_sub", "scatter_nd_update", "scatter_nd_add", "scatter_nd_sub",
           "unravel_index", "setdiff1d"]


def _operands(tensor: Any, indices: Any, updates: Any) -> Any:
    t = _g.convert_to_tensor(tensor)
    with t.graph.as_default():
        idx = _g.convert_to_tensor(indices)
        if idx.dtype not in (_dt.int32, _dt.int64):
            raise InvalidArgumentError(f"scatter: indices must be int32 or int64, got {idx.dtype.name}")
        upd = _g.convert_to_tensor(updates, dtype=t.dtype)
    if t.shape.num_elements() == 0 and idx.shape.num_elements():  # TF's shape check
        raise InvalidArgumentError(f"tensor_scatter: indices and updates specified for an empty tensor (shape "
                                   f"{t.shape})")
    return t, idx, upd


def tensor_scatter_nd_add(tensor: Any, indices: Any, updates: Any, name: Optional[str] = None) -> _g.Tensor:
    """tensor with updates added at the N-d indices (repeated indices add up)."""
    t, idx, upd = _operands(tensor, indices, updates)
    with t.graph.as_default(), t.graph.name_scope(name or "TensorScatterAdd"):
        return _m.add(t, scatter_nd(idx, upd, _a.shape(t, out_type=idx.dtype)))


def tensor_scatter_nd_sub(tensor: Any, indices: Any, updates: Any, name: Optional[str] = None) -> _g.Tensor:
    """tensor with updates subtracted at the N-d indices."""
    t, idx, upd = _operands(tensor, indices, updates)
    with t.graph.as_default(), t.graph.name_scope(name or "TensorScatterSub"):
        return _m.subtract(t, scatter_nd(idx, upd, _a.shape(t, out_type=idx.dtype)))


def tensor_scatter_nd_update(tensor: Any, indices: Any, updates: Any, name: Optional[str] = None) -> _g.Tensor:
    """tensor with the entries (or slices) at the N-d indices replaced by updates.  An index
    given twice: the last of its updates wins, as TF's CPU kernel applies them in order (TF
    documents the order as unspecified); every update still gets the gradient at its index,
    as TF's gradient gathers it for all of them."""
    t, idx, upd = _operands(tensor, indices, updates)
    with t.graph.as_default(), t.graph.name_scope(name or "TensorScatterUpdate"):
        shape = _a.shape(t, out_type=idx.dtype)
        hit = _m.greater(scatter_nd(idx, _a.ones_like(upd, dtype=_dt.int32), shape), 0)
        return _a.where_v2(hit, scatter_nd(idx, _last_wins(idx, upd, shape), shape), t)


def _last_wins(idx: _g.Tensor, upd: _g.Tensor, shape: _g.Tensor) -> _g.Tensor:
    """updates with every one but the last for its index zeroed in value (scatter_nd adds
    them up), not in gradient."""
    if idx.shape.rank is None or upd.shape.rank is None:
        raise InvalidArgumentError("tensor_scatter_nd_update needs indices and updates of known rank")
    from .constant_op import stop_gradient
    from .misc_ops import range as _range
    from .scan_ops import cumprod
    from .segment_ops import unsorted_segment_max
    from .partition_ops import unique
    from .slicing_ops import gather, slice as _slice
    with _g.name_scope("last_wins"):
        depth = _a.shape(idx, out_type=idx.dtype)[-1:]
        limits = _slice(shape, _a.zeros([1], dtype=idx.dtype), depth)
        strides = cumprod(limits, exclusive=True, reverse=True)
        minus_one = _g.convert_to_tensor([-1], dtype=idx.dtype)
        flat = _m.reduce_sum(_a.reshape(idx, _a.concat([minus_one, depth], 0)) * strides, axis=1)  # row-major ids
        pos = _range(_a.size(flat, out_type=idx.dtype), dtype=idx.dtype)
        ids, which = unique(flat, out_idx=idx.dtype)  # segments per distinct index: O(updates), not O(tensor)
        last = unsorted_segment_max(pos, which, _a.size(ids, out_type=idx.dtype))
        keep = _m.equal(gather(last, which), pos)
        inner = upd.shape.rank - (idx.shape.rank - 1)
        ones = _g.convert_to_tensor([1] * inner, dtype=_dt.int32) if inner else None
        lead = _a.shape(idx, out_type=_dt.int32)[:-1]
        keep = _a.reshape(keep, _a.concat([lead, ones], 0) if ones is not None else lead)
        return upd - stop_gradient(_a.where_v2(keep, _a.zeros_like(upd), upd))


tensor_scatter_update = tensor_scatter_nd_update   # TF 1.15's names
tensor_scatter_add = tensor_scatter_nd_add
tensor_scatter_sub = tensor_scatter_nd_sub


def _variable_scatter(fn: Any, ref: Any, indices: Any, updates: Any, name: Optional[str], what: str) -> _g.Tensor:
    if not hasattr(ref, "handle"):
        raise InvalidArgumentError(f"{what} needs a Variable, got {type(ref).__name__}")
    g = ref.graph
    with g.as_default(), g.name_scope(name or what):
        return _s.assign(ref, fn(ref.read_value() if hasattr(ref, "read_value") else ref, indices, updates))


def scatter_nd_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True,
                      name: Optional[str] = None) -> _g.Tensor:
    """Assigns updates to the variable's entries (or slices) at the N-d indices; returns its new value."""
    return _variable_scatter(tensor_scatter_nd_update, ref, indices, updates, name, "ScatterNdUpdate")


def scatter_nd_add(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                   name: Optional[str] = None) -> _g.Tensor:
    """Adds updates to the variable at the N-d indices; returns its new value."""
    return _variable_scatter(tensor_scatter_nd_add, ref, indices, updates, name, "ScatterNdAdd")


def scatter_nd_sub(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                   name: Optional[str] = None) -> _g.Tensor:
    """Subtracts updates from the variable at the N-d indices; returns its new value."""
    return _variable_scatter(tensor_scatter_nd_sub, ref, indices, updates, name, "ScatterNdSub")


def unravel_index(indices: Any, dims: Any, name: Optional[str] = None) -> _g.Tensor:
    """The coordinates in an array of shape `dims` of flat (row-major) indices: [len(dims)]
    for a scalar index, [len(dims), n] for a vector of them."""
    idx = _g.convert_to_tensor(indices)
    if idx.dtype not in (_dt.int32, _dt.int64):
        raise InvalidArgumentError(f"unravel_index: indices must be int32 or int64, got {idx.dtype.name}")
    with idx.graph.as_default(), idx.graph.name_scope(name or "UnravelIndex"):
        d = _g.convert_to_tensor(dims, dtype=idx.dtype)
        from .scan_ops import cumprod
        strides = cumprod(d, exclusive=True, reverse=True)
        if idx.shape.rank == 0:
            return _m.mod(_m.floordiv(idx, strides), d)
        flat = _a.expand_dims(idx, 0)
        return _m.mod(_m.floordiv(flat, _a.expand_dims(strides, 1)), _a.expand_dims(d, 1))


class SetDiff1D(NamedTuple):
    out: Any
    idx: Any


def setdiff1d(x: Any, y: Any, index_dtype: Any = _dt.int32, name: Optional[str] = None) -> SetDiff1D:
    """(out, idx): the entries of the 1-D x not in y, in x's order (repeats kept), and their
    positions in x."""
    xt = _g.convert_to_tensor(x)
    with xt.graph.as_default(), xt.graph.name_scope(name or "ListDiff"):
        yt = _g.convert_to_tensor(y, dtype=xt.dtype)
        for t, what in ((xt, "x"), (yt, "y")):
            if t.shape.rank not in (None, 1):
                raise InvalidArgumentError(f"setdiff1d: {what} must be 1-D, got shape {t.shape}")
        found = _m.reduce_any(_m.equal(_a.expand_dims(xt, 1), _a.expand_dims(yt, 0)), 1)
        idx = _a.reshape(_a.where(_m.logical_not(found)), [-1])
        return SetDiff1D(_a.gather(xt, idx), _m.cast(idx, index_dtype))
