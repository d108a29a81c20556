"""Ops on tf.SparseTensor (graph/sparse_tensor.py), composed from existing ops so gradients
reach the values and the dense operands: sparse_placeholder, sparse_tensor_to_dense,
sparse_reduce_sum, sparse_tensor_dense_matmul, sparse_add (sparse + dense; two SparseTensors
in sparse_more_ops.py), sparse_reorder, sparse_retain, and the embedding lookups of sparse ids (embedding_lookup_sparse,
safe_embedding_lookup_sparse), as TF 1.15 defines them.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_gradient, register_op
from ..sparse_tensor import SparseTensor, SparseTensorValue
from . import array_ops as _a
from . import math_ops as _m
from . import segment_ops as _seg
from .constant_op import constant
from .op_util import same_shape_fn, single
from .index_ops import sparse_to_dense
from .math_more_ops import div_no_nan
from .scan_ops import cumprod

__all__ = ["sparse_placeholder", "sparse_tensor_to_dense", "sparse_reduce_sum", "sparse_tensor_dense_matmul",
           "sparse_add", "sparse_reorder", "sparse_retain", "embedding_lookup_sparse", "safe_embedding_lookup_sparse"]


# the identity, whose gradient is dense where the gradient reaching it is IndexedSlices (the
# rows of b that sparse_tensor_dense_matmul gathers): TF's op gives b a dense gradient
register_op("DenseGradIdentity", same_shape_fn, doc="identity; its gradient made dense")
register_gradient("DenseGradIdentity")(lambda op, g: [_g.convert_to_tensor(g)])


def _sparse(sp: Any, what: str) -> SparseTensor:
    if isinstance(sp, SparseTensorValue):
        return SparseTensor.from_value(sp)
    if not isinstance(sp, SparseTensor):
        raise TypeError(f"{what} needs a SparseTensor, got {type(sp).__name__}")
    return sp


def sparse_placeholder(dtype: Any, shape: Any = None, name: Optional[str] = None) -> SparseTensor:
    """A SparseTensor to feed: placeholders for indices [N, rank] and values [N], and for
    dense_shape unless `shape` is fully known (then a constant) or a tensor (then that
    tensor, its static value the static shape), as TF 1.15."""
    from .constant_op import placeholder
    base = name or "Placeholder"
    rank: Optional[int] = None
    dense_shape: Any = None
    if isinstance(shape, _g.Tensor):  # a shape tensor is the dense_shape itself, as TF 1.15
        dense_shape = shape if shape.dtype == _dt.int64 else _m.cast(shape, _dt.int64)
        rank = dense_shape.shape.as_list()[0] if dense_shape.shape.rank == 1 else None
    elif shape is not None:
        dims = [None if d is None or (isinstance(d, int) and d < 0) else int(d) for d in
                (shape.as_list() if hasattr(shape, "as_list") else shape)]
        rank = len(dims)
        if all(d is not None for d in dims):
            dense_shape = constant(np.asarray(dims, np.int64), name=base + "/shape")
    if dense_shape is None:
        dense_shape = placeholder(_dt.int64, [rank], name=base + "/shape")
    return SparseTensor(placeholder(_dt.int64, [None, rank], name=base + "/indices"),
                        placeholder(_dt.as_dtype(dtype), [None], name=base + "/values"), dense_shape)


def sparse_tensor_to_dense(sp_input: Any, default_value: Any = None, validate_indices: bool = True,
                           name: Optional[str] = None) -> _g.Tensor:
    """The dense tensor: values at indices, default_value elsewhere (indices in row-major
    order without repeats when validate_indices, as TF).  default_value None: the dtype's
    zero ("" for strings, False for bools), as TF."""
    sp = _sparse(sp_input, "sparse_tensor_to_dense")
    if default_value is None:
        dt = sp.values.dtype
        default_value = "" if dt == _dt.string else (False if dt == _dt.bool_ else 0)
    with sp.graph.as_default():
        out = sparse_to_dense(sp.indices, sp.dense_shape, sp.values, default_value,
                              validate_indices=validate_indices, name=name or "SparseToDense")
        if sp.shape.rank is not None:
            out.set_shape(out.shape.merge_with(sp.shape))
        return out


def sparse_reduce_sum(sp_input: Any, axis: Any = None, keepdims: Optional[bool] = None,
                      reduction_axes: Any = None, keep_dims: Optional[bool] = None,
                      name: Optional[str] = None) -> _g.Tensor:
    """The sum over `axis` (all axes when None) of the tensor sp_input represents, dense."""
    sp = _sparse(sp_input, "sparse_reduce_sum")
    ax = axis if axis is not None else reduction_axes
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with sp.graph.as_default(), sp.graph.name_scope(name or "SparseReduceSum"):
        return _m.reduce_sum(sparse_tensor_to_dense(sp, validate_indices=False), ax, keepdims=keep)


def sparse_tensor_dense_matmul(sp_a: Any, b: Any, adjoint_a: bool = False, adjoint_b: bool = False,
                               name: Optional[str] = None) -> _g.Tensor:
    """sp_a (a 2-D SparseTensor, transposed with adjoint_a) @ b (transposed with adjoint_b),
    dense; each entry's row of b gathered, scaled and summed into its output row."""
    sp = _sparse(sp_a, "sparse_tensor_dense_matmul")
    if sp.shape.rank not in (None, 2):
        raise InvalidArgumentError(f"sparse_tensor_dense_matmul needs a 2-D SparseTensor, got shape {sp.shape}")
    g = sp.graph
    with g.as_default(), g.name_scope(name or "SparseTensorDenseMatMul"):
        bt = _g.convert_to_tensor(b)
        if bt.dtype != sp.dtype:
            raise InvalidArgumentError(f"sparse_tensor_dense_matmul: a is {sp.dtype.name} but b is {bt.dtype.name}")
        if adjoint_b:
            bt = _a.transpose(bt)
        bt = single("DenseGradIdentity", [bt])  # b's gradient dense, as TF's op gives it
        rows, cols = sp.indices[:, 0], sp.indices[:, 1]
        n_out = sp.dense_shape[0]
        if adjoint_a:
            rows, cols, n_out = cols, rows, sp.dense_shape[1]
        terms = _a.expand_dims(sp.values, 1) * _a.gather(bt, cols)
        out = _seg.unsorted_segment_sum(terms, rows, n_out)
        m = sp.shape.dims[1 if adjoint_a else 0] if sp.shape.rank == 2 else None
        out.set_shape([m, bt.shape.dims[1] if bt.shape.rank == 2 else None])
        return out


def sparse_add(a: Any, b: Any, thresh: Any = 0, name: Optional[str] = None, threshold: Any = None) -> Any:
    """a + b: a dense tensor where one is a SparseTensor and the other dense; a SparseTensor
    for two SparseTensors (sparse_more_ops.sparse_add_sparse: a sum of an index both have
    is dropped when its magnitude is below `thresh`/`threshold`), as TF."""
    sa, sb = isinstance(a, (SparseTensor, SparseTensorValue)), isinstance(b, (SparseTensor, SparseTensorValue))
    if sa and sb:
        from .sparse_more_ops import sparse_add_sparse
        spa, spb = _sparse(a, "sparse_add"), _sparse(b, "sparse_add")
        with spa.graph.as_default(), spa.graph.name_scope(name or "SparseAdd"):
            return sparse_add_sparse(spa, spb, thresh if threshold is None else threshold)
    if not (sa or sb):
        raise TypeError("sparse_add needs at least one SparseTensor")
    sp, dense = (_sparse(a, "sparse_add"), b) if sa else (_sparse(b, "sparse_add"), a)
    with sp.graph.as_default(), sp.graph.name_scope(name or "SparseAdd"):
        return _m.add(_g.convert_to_tensor(dense, dtype=sp.dtype), sparse_tensor_to_dense(sp, validate_indices=False))


def _linear_index(sp: SparseTensor) -> _g.Tensor:
    """Each entry's position in the row-major order of dense_shape (int64)."""
    shape = sp.dense_shape
    strides = cumprod(shape, exclusive=True, reverse=True)
    return _m.reduce_sum(sp.indices * _a.expand_dims(strides, 0), 1)


def sparse_reorder(sp_input: Any, name: Optional[str] = None) -> SparseTensor:
    """The same SparseTensor with its entries in row-major order (ties keep their order)."""
    from .rearrange_ops import argsort
    sp = _sparse(sp_input, "sparse_reorder")
    with sp.graph.as_default(), sp.graph.name_scope(name or "SparseReorder"):
        order = argsort(_linear_index(sp), stable=True)
        return SparseTensor(_a.gather(sp.indices, order), _a.gather(sp.values, order), sp.dense_shape)


def sparse_retain(sp_input: Any, to_retain: Any) -> SparseTensor:
    """The entries where the bool vector to_retain (one per entry) is true."""
    sp = _sparse(sp_input, "sparse_retain")
    mask = _g.convert_to_tensor(to_retain)
    # TF1's checks where the shapes are known when the graph is built (ValueError)
    if mask.shape.rank is not None and mask.shape.rank != 1:
        raise ValueError(f"sparse_retain: to_retain must be a vector (rank 1), got shape {mask.shape}")
    n, m = sp.values.shape.dims[0] if sp.values.shape.rank else None, mask.shape.dims[0] if mask.shape.rank else None
    if n is not None and m is not None and n != m:
        raise ValueError(f"sparse_retain: Dimensions {n} and {m} are not compatible: to_retain needs one bool per "
                         f"entry of sp_input ({n})")
    with sp.graph.as_default(), sp.graph.name_scope("SparseRetain"):
        keep = _a.reshape(_a.where(mask), [-1])
        return SparseTensor(_a.gather(sp.indices, keep), _a.gather(sp.values, keep), sp.dense_shape)


def _combine(emb: _g.Tensor, weights: Optional[_g.Tensor], segments: _g.Tensor, num: Any, combiner: str,
             sorted_ids: bool) -> _g.Tensor:
    """Rows of emb summed per segment, weighted, then normalized as the combiner says."""
    def seg_sum(x: _g.Tensor) -> _g.Tensor:
        return _seg.segment_sum(x, segments) if sorted_ids else _seg.unsorted_segment_sum(x, segments, num)
    if weights is None:
        total = seg_sum(emb)
        if combiner == "sum":
            return total
        ones = _a.ones_like(segments, dtype=emb.dtype)
        count = seg_sum(ones)
        div = count if combiner == "mean" else _m.sqrt(count)
    else:
        w = _m.cast(weights, emb.dtype)
        total = seg_sum(emb * _a.expand_dims(w, 1))
        if combiner == "sum":
            return total
        div = seg_sum(w) if combiner == "mean" else _m.sqrt(seg_sum(w * w))
    return div_no_nan(total, _a.expand_dims(div, 1))  # a row with no ids (or no weight): zeros, as TF


def _check_combiner(combiner: str) -> str:
    if combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner!r}")
    return combiner


def embedding_lookup_sparse(params: Any, sp_ids: Any, sp_weights: Any, partition_strategy: str = "mod",
                            name: Optional[str] = None, combiner: Optional[str] = None,
                            max_norm: Optional[float] = None) -> _g.Tensor:
    """For each row of sp_ids ([batch, ...] ids), its ids' embeddings combined: "sum",
    "mean" (the default; weighted by sp_weights when given) or "sqrtn" (sum over the
    square root of the summed squared weights).  As TF: the output has max(row)+1 rows (rows
    of sp_ids are its segments, so entries must be in row order); params' gradient is
    IndexedSlices."""
    from .nn_ops import embedding_lookup
    comb = _check_combiner(combiner or "mean")
    ids = _sparse(sp_ids, "embedding_lookup_sparse")
    w = _sparse(sp_weights, "embedding_lookup_sparse sp_weights") if sp_weights is not None else None
    g = ids.graph
    with g.as_default(), g.name_scope(name or "embedding_lookup_sparse"):
        segments = ids.indices[:, 0]
        emb = embedding_lookup(params, ids.values, partition_strategy=partition_strategy, max_norm=max_norm)
        return _combine(emb, None if w is None else w.values, segments, None, comb, sorted_ids=True)


def safe_embedding_lookup_sparse(embedding_weights: Any, sparse_ids: Any, sparse_weights: Any = None,
                                 combiner: str = "mean", default_id: Optional[int] = None,
                                 name: Optional[str] = None, partition_strategy: str = "div",
                                 max_norm: Optional[float] = None) -> _g.Tensor:
    """embedding_lookup_sparse that tolerates what real data has: ids < 0 (and, unless the
    combiner is "sum", entries of weight <= 0) are dropped, and every row of the batch gets an
    output row (dense_shape[0] of them): a row with no ids left is zeros, or default_id's
    embedding when given."""
    from .nn_ops import embedding_lookup
    comb = _check_combiner(combiner)
    ids = _sparse(sparse_ids, "safe_embedding_lookup_sparse")
    w = _sparse(sparse_weights, "safe_embedding_lookup_sparse sparse_weights") if sparse_weights is not None else None
    if ids.shape.rank is not None and ids.shape.rank != 2:
        raise InvalidArgumentError(f"safe_embedding_lookup_sparse: only [batch, ids] SparseTensors are supported, "
                                   f"got shape {ids.shape}")
    params = embedding_weights
    g = ids.graph
    with g.as_default(), g.name_scope(name or "embedding_lookup"):
        keep = _m.greater_equal(ids.values, constant(0, dtype=ids.values.dtype))
        if w is not None and comb != "sum":
            # TF prunes weights <= 0 only for mean/sqrtn (where they would break the
            # normalisation); a "sum" keeps them, negative weights included
            keep = _m.logical_and(keep, _m.greater(w.values, constant(0, dtype=w.values.dtype)))
        batch = ids.dense_shape[0]
        # dropped entries get segment -1 (ignored by the segment sum) and a valid id to look up
        segments = _a.where(keep, ids.indices[:, 0], -_a.ones_like(ids.indices[:, 0]))
        safe_ids = _a.where(keep, ids.values, _a.zeros_like(ids.values))
        emb = embedding_lookup(params, safe_ids, partition_strategy=partition_strategy, max_norm=max_norm)
        out = _combine(emb, None if w is None else w.values, segments, batch, comb, sorted_ids=False)
        if default_id is not None:
            present = _seg.unsorted_segment_sum(_m.cast(keep, _dt.int32), segments, batch)
            empty = _a.expand_dims(_m.equal(present, 0), 1)
            fill = embedding_lookup(params, constant([int(default_id)], dtype=ids.values.dtype),
                                    partition_strategy=partition_strategy, max_norm=max_norm)
            out = _a.where_v2(empty, fill, out)
        return out

