"""N-dimensional indexing ops of TensorFlow 1.x: tf.gather_nd, tf.scatter_nd, tf.boolean_mask
and tf.sparse_to_dense.

GatherNd and ScatterNd are each other's gradient; boolean_mask is a gather at the positions of
the mask's True entries (the Where op), so its gradient is sparse like a gather's.  Kernels live
in kernels/index_kernels.py.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..indexed_slices import IndexedSlices
from ..registry import not_differentiable, register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from . import math_ops as _m
from .constant_op import constant
from .op_util import dense as _dense, single

__all__ = ["gather_nd", "scatter_nd", "boolean_mask", "sparse_to_dense", "batch_gather"]


def _const(t: _g.Tensor) -> Optional[np.ndarray]:
    return np.asarray(t.op.attrs["value"]) if t.op.type == "Const" else None


def _shape_input(t: _g.Tensor, what: str) -> TensorShape:
    """What is statically known of the shape a 1-D int tensor holds."""
    if not t.dtype.is_integer:
        raise ValueError(f"{what} must be an integer tensor, got {t.dtype.name}")
    if t.shape.rank not in (None, 1):
        raise ValueError(f"{what} must be 1-D, got shape {t.shape}")
    c = _const(t)
    if c is not None:
        if (c < 0).any():
            raise ValueError(f"{what} {c.tolist()} has a negative dimension")
        return TensorShape([int(d) for d in c.reshape(-1)])
    from .shape_eval import partial_vector  # stack([shape(x)[0], 3]) and the like
    part = partial_vector(t)
    if part is not None:
        return TensorShape([None if d is None or d < 0 else d for d in part])
    n = t.shape.dims[0] if t.shape.rank == 1 else None
    return TensorShape(None if n is None else [None] * n)


# -- shape functions -----------------------------------------------------------------------------


def _gather_nd_spec(op: _g.Operation) -> list:
    params, idx = op.inputs
    if not idx.dtype.is_integer:
        raise ValueError(f"gather_nd indices must be int32 or int64, got {idx.dtype.name}")
    if idx.shape.rank == 0:
        raise ValueError("gather_nd indices must have rank >= 1, got a scalar")
    if idx.shape.rank is None or params.shape.rank is None or idx.shape.dims[-1] is None:
        return [(params.dtype, TensorShape(None))]
    k = idx.shape.dims[-1]
    if k > params.shape.rank:
        raise ValueError(f"gather_nd: index depth {k} (indices of shape {idx.shape}) exceeds the rank of params "
                         f"(shape {params.shape})")
    return [(params.dtype, TensorShape(list(idx.shape.dims[:-1]) + list(params.shape.dims[k:])))]


def _scatter_nd_spec(op: _g.Operation) -> list:
    idx, upd, shape_t = op.inputs
    if not idx.dtype.is_integer:
        raise ValueError(f"scatter_nd indices must be int32 or int64, got {idx.dtype.name}")
    out = _shape_input(shape_t, "scatter_nd shape")
    if idx.shape.rank == 0:
        raise ValueError("scatter_nd indices must have rank >= 1, got a scalar")
    if out.rank is not None and idx.shape.rank is not None and upd.shape.rank is not None:
        k = idx.shape.dims[-1]
        if k is not None:
            if k > out.rank:
                raise ValueError(f"scatter_nd: index depth {k} exceeds the rank of shape {out}")
            want = TensorShape(list(idx.shape.dims[:-1]) + list(out.dims[k:]))
            if not want.is_compatible_with(upd.shape):
                raise ValueError(f"scatter_nd: updates of shape {upd.shape} do not match indices of shape "
                                 f"{idx.shape} into shape {out} (expected updates of shape {want})")
    return [(upd.dtype, out)]


def _where_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    return [(_dt.int64, TensorShape([None, x.shape.rank]))]


def _sparse_to_dense_spec(op: _g.Operation) -> list:
    idx, shape_t, values, default = op.inputs
    if not idx.dtype.is_integer or shape_t.dtype != idx.dtype:
        raise ValueError(f"sparse_to_dense: sparse_indices and output_shape must be integers of one dtype, got "
                         f"{idx.dtype.name} and {shape_t.dtype.name}")
    if idx.shape.rank is not None and idx.shape.rank > 2:
        raise ValueError(f"sparse_to_dense: sparse_indices must be 0-D, 1-D or 2-D, got shape {idx.shape}")
    if values.shape.rank is not None and values.shape.rank > 1:
        raise ValueError(f"sparse_to_dense: sparse_values must be 0-D or 1-D, got shape {values.shape}")
    if default.dtype != values.dtype or default.shape.rank not in (None, 0):
        raise ValueError(f"sparse_to_dense: default_value must be a scalar of the values' dtype "
                         f"{values.dtype.name}, got {default.dtype.name} of shape {default.shape}")
    return [(values.dtype, _shape_input(shape_t, "sparse_to_dense output_shape"))]


register_op("GatherNd", _gather_nd_spec)
register_op("ScatterNd", _scatter_nd_spec)
register_op("Where", _where_spec, doc="the coordinates of the True (non-zero) entries, [num_true, rank] int64")
register_op("SparseToDense", _sparse_to_dense_spec)
not_differentiable("Where")

# -- gradients ---------------------------------------------------------------------------------


def _shape_of(x: _g.Tensor, dtype: _dt.DType) -> _g.Tensor:
    if x.shape.is_fully_defined():
        return constant(np.asarray(x.shape.dims, dtype=dtype.np), name="shape")
    return _a.shape(x, out_type=dtype)


@register_gradient("GatherNd")
def _gather_nd_grad(op: _g.Operation, g: Any) -> list:
    params, idx = op.inputs
    g = _dense(g)
    if idx.shape.rank == 2 and idx.shape.dims[-1] == 1:
        # whole rows of params: a sparse gradient, as a gather's
        return [IndexedSlices(g, _a.squeeze(idx, [1]), _shape_of(params, _dt.int64), params.shape), None]
    return [_scatter_nd_op(idx, g, _shape_of(params, idx.dtype)), None]


@register_gradient("ScatterNd")
def _scatter_nd_grad(op: _g.Operation, g: Any) -> list:
    return [None, gather_nd(_dense(g), op.inputs[0]), None]


@register_gradient("SparseToDense")
def _sparse_to_dense_grad(op: _g.Operation, g: Any) -> list:
    idx, _, values, _ = op.inputs
    g = _dense(g)
    gi = idx
    if idx.shape.rank == 0:
        gi = _a.reshape(idx, [1, 1])
    elif idx.shape.rank == 1:
        gi = _a.expand_dims(idx, 1)
    picked = gather_nd(g, gi)                      # the gradient at each index
    g_values = picked if values.shape.rank != 0 else _m.reduce_sum(picked)
    # the default value fills every other position
    g_default = _m.reduce_sum(g) - _m.reduce_sum(picked)
    return [None, None, g_values, g_default]

# -- constructors ------------------------------------------------------------------------------


def gather_nd(params: Any, indices: Any, name: Optional[str] = None, batch_dims: int = 0) -> _g.Tensor:
    """Slices of params at N-d indices: indices [..., K] index params' first K dimensions; the
    result has shape indices.shape[:-1] + params.shape[K:].  An index out of range is an error."""
    if int(batch_dims) != 0:  # leading batch dimensions paired up (batch_index_ops)
        from .batch_index_ops import gather_nd_batched
        return gather_nd_batched(params, indices, batch_dims, name=name)
    params = _g.convert_to_tensor(params)
    with params.graph.as_default():
        idx = _g.convert_to_tensor(indices)
    return single("GatherNd", [params, idx], name=name or "GatherNd")


def _shape_tensor(shape: Any, dtype: _dt.DType, what: str) -> _g.Tensor:
    if isinstance(shape, _g.Tensor):
        return shape
    if isinstance(shape, TensorShape):
        shape = shape.as_list()
    dims = [shape] if isinstance(shape, (int, np.integer)) else list(shape)
    if _g._holds_tensor(dims):  # [tf.shape(x)[0], vocab]: packed as TF packs it
        from .array_ops import stack
        parts = [constant(np.asarray(int(d), dtype=dtype.np)) if isinstance(d, (int, np.integer))
                 else _g.convert_to_tensor(d) for d in dims]
        return stack([p if p.dtype == dtype else _m.cast(p, dtype) for p in parts], name="shape")
    if any(d is None or int(d) < 0 for d in dims):
        raise InvalidArgumentError(f"{what} must be a list of non-negative ints or a tensor, got {shape!r}")
    return constant(np.asarray([int(d) for d in dims], dtype=dtype.np), name="shape")


def scatter_nd(indices: Any, updates: Any, shape: Any, name: Optional[str] = None) -> _g.Tensor:
    """Zeros of `shape` with updates added at the N-d indices (duplicates add up): the
    adjoint of gather_nd.  indices [..., K]; updates indices.shape[:-1] + shape[K:].  As TF's
    shape check: indices into a `shape` of no elements are an error."""
    idx = _g.convert_to_tensor(indices)
    known = shape.as_list() if isinstance(shape, TensorShape) else shape
    if isinstance(known, _g.Tensor):
        known = known.op.attrs["value"] if known.op.type == "Const" else None
    if isinstance(known, (list, tuple)) and _g._holds_tensor(known):
        known = None
    if known is not None and None not in np.asarray(known, dtype=object).reshape(-1) \
            and not int(np.prod(np.asarray(known, dtype=np.int64))) and idx.shape.num_elements():
        raise InvalidArgumentError(f"scatter_nd: indices and updates specified for an empty output (shape "
                                   f"{np.asarray(known).reshape(-1).tolist()})")
    return _scatter_nd_op(idx, updates, shape, name)


def _scatter_nd_op(idx: _g.Tensor, updates: Any, shape: Any, name: Optional[str] = None) -> _g.Tensor:
    """The ScatterNd op (the gather_nd gradient's, which lets an empty params through)."""
    with idx.graph.as_default():
        upd = _g.convert_to_tensor(updates)
        shp = _shape_tensor(shape, idx.dtype, "scatter_nd shape")
        if shp.dtype != idx.dtype:
            shp = _m.cast(shp, idx.dtype)
        return single("ScatterNd", [idx, upd, shp], name=name or "ScatterNd")


def _flatten_block(x: _g.Tensor, start: int, k: int) -> _g.Tensor:
    """x with its dimensions start .. start+k-1 merged into one."""
    if k == 1:
        return x
    dims = list(x.shape.dims)
    block = dims[start:start + k]
    merged = None if None in block else int(np.prod(block))
    new = dims[:start] + [merged] + dims[start + k:]
    if new.count(None) > 1:
        # several unknown dims: the target shape is computed at run time (the block's size as
        # a product, not -1, which an empty dimension elsewhere would make ambiguous)
        sh = _a.shape(x)
        target = _a.concat([sh[:start], _a.reshape(_m.reduce_prod(sh[start:start + k]), [1]), sh[start + k:]], 0)
        return _a.reshape(x, target)
    return _a.reshape(x, [-1 if d is None else d for d in new])


def boolean_mask(tensor: Any, mask: Any, name: str = "boolean_mask", axis: Optional[int] = None) -> _g.Tensor:
    """The entries of `tensor` where `mask` is True.

    mask (bool, rank k >= 1, its shape known) covers tensor's dimensions axis .. axis+k-1 (axis
    defaults to 0); those become one dimension holding the selected entries in row-major order:
    shape tensor.shape[:axis] + [num_true] + tensor.shape[axis+k:].
    """
    t = _g.convert_to_tensor(tensor)
    g = t.graph
    with g.as_default(), g.name_scope(name or "boolean_mask"):
        m = _g.convert_to_tensor(mask)
        if m.dtype != _dt.bool_:
            raise InvalidArgumentError(f"boolean_mask: mask must be bool, got {m.dtype.name}")
        k = m.shape.rank
        if k is None:
            raise InvalidArgumentError("boolean_mask: the rank of mask must be known statically")
        if k == 0:
            raise InvalidArgumentError("boolean_mask: mask cannot be a scalar")
        if t.shape.rank is None:
            raise InvalidArgumentError("boolean_mask: the rank of tensor must be known statically")
        ax = 0 if axis is None else int(axis)
        if ax < 0:
            ax += t.shape.rank
        if not 0 <= ax <= t.shape.rank - k:
            raise InvalidArgumentError(f"boolean_mask: a mask of rank {k} at axis {axis} does not fit a tensor of "
                                       f"rank {t.shape.rank}")
        covered = TensorShape(t.shape.dims[ax:ax + k])
        if not covered.is_compatible_with(m.shape):
            raise InvalidArgumentError(f"boolean_mask: mask of shape {m.shape} does not match the tensor's "
                                       f"dimensions {covered} (tensor of shape {t.shape}, axis {ax})")
        flat_t = _flatten_block(t, ax, k)
        flat_m = m if k == 1 else _a.reshape(m, [-1])
        positions = _a.reshape(single("Where", [flat_m], name="Where"), [-1])
        return _a.gather(flat_t, positions, axis=ax)


def sparse_to_dense(sparse_indices: Any, output_shape: Any, sparse_values: Any, default_value: Any = 0,
                    validate_indices: bool = True, name: Optional[str] = None) -> _g.Tensor:
    """A dense tensor of `output_shape` holding sparse_values at sparse_indices and default_value
    elsewhere.

    sparse_indices: 0-D or 1-D (positions in a 1-D output) or 2-D [n, rank]; sparse_values: one
    value per index or a scalar for all.  With validate_indices the indices must be in bounds,
    sorted in row-major order and without repeats (TensorFlow's checks).
    """
    idx = _g.convert_to_tensor(sparse_indices)
    with idx.graph.as_default():
        shp = _shape_tensor(output_shape, idx.dtype, "sparse_to_dense output_shape")
        vals = _g.convert_to_tensor(sparse_values)
        default = _g.convert_to_tensor(default_value, dtype=None if isinstance(default_value, _g.Tensor)
                                       else vals.dtype)
        return single("SparseToDense", [idx, shp, vals, default], {"validate_indices": bool(validate_indices)},
                      name=name or "SparseToDense")



def batch_gather(params: Any, indices: Any, name: Optional[str] = None) -> _g.Tensor:
    """params[b..., indices[b..., j], ...]: a gather along the first axis after the leading
    (batch) axes that params and indices share (TF1's tf.batch_gather: gather with
    batch_dims = rank(indices) - 1)."""
    from .misc_ops import range as _range
    p = _g.convert_to_tensor(params)
    i = _g.convert_to_tensor(indices)
    if i.shape.rank is None or p.shape.rank is None:
        raise InvalidArgumentError("batch_gather needs params and indices of known rank")
    nb = i.shape.rank - 1
    if nb < 0 or p.shape.rank < nb + 1:
        raise InvalidArgumentError(f"batch_gather: indices {i.shape} must have rank >= 1 and at most params' "
                                   f"({p.shape})")
    with p.graph.as_default(), p.graph.name_scope(name or "batch_gather"):
        if nb == 0:
            from .slicing_ops import gather
            return gather(p, i)
        # the batch position of every index, stacked with the index: gather_nd
        shape = _a.shape(i, out_type=i.dtype)
        grids = []
        for d in range(nb):
            r = _a.reshape(_range(shape[d]), [-1 if k == d else 1 for k in range(nb + 1)])
            grids.append(r + _a.zeros_like(i))  # the batch coordinate d of every index
        coords = _a.stack(grids + [i], axis=-1)
        return gather_nd(p, coords)
