"""The rest of TF1's sparse ops, composed from existing ops (so gradients come from theirs):
tf.sparse_segment_sum / mean / sqrt_n, sparse_softmax, sparse_reduce_max (dense) and
sparse_reduce_max_sparse / sparse_reduce_sum_sparse (SparseTensor outputs), sparse_maximum /
sparse_minimum, sparse_split, sparse_to_indicator, sparse_merge, sparse_reset_shape,
sparse_mask (IndexedSlices), and SparseTensor * dense, SparseTensor / dense (TF's
SparseDenseCwiseMul / Div: the dense operand broadcast to the sparse shape).

sparse_reduce_max has a gradient (the composite's) where TF's op has none.  Entry orders as
TF: softmax, the cwise ops and reset_shape keep the input's entries; the
sparse reductions, maximum/minimum and merge give row-major order; split keeps the input's
order inside each piece.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..indexed_slices import IndexedSlices
from ..sparse_tensor import SparseTensor, SparseTensorValue
from . import array_ops as _a
from . import math_ops as _m
from . import segment_ops as _seg
from .constant_op import constant, identity, stop_gradient
from .index_ops import gather_nd
from .math_extra_ops import floormod
from .misc_ops import range as _range
from .op_util import single
from .partition_ops import unique
from .rearrange_ops import argsort
from .scan_ops import cumsum
from .scatter_nd_ops import setdiff1d
from .sparse_more_ops import _constant_value, _group_starts, _known, sparse_slice
from .sparse_ops import _linear_index, _sparse, sparse_reorder, sparse_tensor_to_dense

__all__ = ["sparse_segment_sum", "sparse_segment_mean", "sparse_segment_sqrt_n", "sparse_softmax",
           "sparse_reduce_max", "sparse_reduce_max_sparse", "sparse_reduce_sum_sparse", "sparse_maximum",
           "sparse_minimum", "sparse_split", "sparse_to_indicator", "sparse_merge", "sparse_reset_shape",
           "sparse_mask", "sparse_dense_cwise_mul", "sparse_dense_cwise_div", "KeywordRequired"]


# -- sparse segment reductions --------------------------------------------------------------------

def _check_increasing(ids: _g.Tensor, num: _g.Tensor) -> Any:
    """An assertion that the segment ids are non-decreasing and in [0, num) (TF's kernel checks)."""
    from .check_ops import assert_equal
    ids64 = _m.cast(ids, _dt.int64)
    ok = _m.logical_and(_m.reduce_all(_m.greater_equal(ids64[1:], ids64[:-1])),
                        _m.reduce_all(_m.logical_and(_m.greater_equal(ids64, 0),
                                                     _m.less(ids64, _m.cast(num, _dt.int64)))))
    return assert_equal(ok, True, message="sparse segment reduction: segment ids are not increasing or are "
                                          "out of range [0, num_segments)")


def _sparse_segment(kind: str, data: Any, indices: Any, segment_ids: Any, name: Optional[str],
                    num_segments: Any, default_name: str, sparse_gradient: bool = False) -> _g.Tensor:
    """The rows data[indices] reduced per (sorted) segment id: "sum", "mean" or "sqrt_n"."""
    d = _g.convert_to_tensor(data)
    g = d.graph
    with g.as_default(), g.name_scope(name or default_name):
        idx, ids = _g.convert_to_tensor(indices), _g.convert_to_tensor(segment_ids)
        for t, what in ((idx, "indices"), (ids, "segment_ids")):
            if t.dtype not in (_dt.int32, _dt.int64):
                raise TypeError(f"{default_name}: {what} must be int32 or int64, got {t.dtype.name}")
            if t.shape.rank not in (None, 1):
                raise ValueError(f"{default_name}: {what} must be 1-D, got shape {t.shape}")
        if kind != "sum" and not d.dtype.is_floating:
            raise TypeError(f"{default_name} needs floating-point data, got {d.dtype.name}")
        if not sparse_gradient:  # data's gradient dense, as TF's (a Momentum step then moves every row)
            d = single("DenseGradIdentity", [d])
        rows = _a.gather(d, idx)  # else IndexedSlices, as gather's
        if num_segments is None:
            total = _seg.segment_sum(rows, ids)  # its kernel checks the ids are sorted and >= 0
            counts = _seg.segment_sum(_a.ones_like(ids, dtype=d.dtype), ids) if kind != "sum" else None
        else:
            num = _g.convert_to_tensor(num_segments)
            with g.control_dependencies([_check_increasing(ids, num)]):
                ids = identity(ids)
            total = _seg.unsorted_segment_sum(rows, ids, num)
            counts = _seg.unsorted_segment_sum(_a.ones_like(ids, dtype=d.dtype), ids, num) if kind != "sum" else None
        if counts is None:
            return total
        div = _m.maximum(counts, 1)  # an empty segment gives 0, as TF
        if kind == "sqrt_n":
            div = _m.sqrt(div)
        ones = _a.ones(_a.reshape(_a.rank(total) - 1, [1]), _dt.int32)
        out = total / _a.reshape(div, _a.concat([constant([-1]), ones], 0))
        out.set_shape(total.shape)
        return out


def sparse_segment_sum(data: Any, indices: Any, segment_ids: Any, name: Optional[str] = None,
                       num_segments: Any = None, sparse_gradient: bool = False) -> _g.Tensor:
    """Sums of the rows data[indices] per segment (segment_ids sorted, one per index); the
    output has num_segments rows, else last id + 1; an empty segment gives 0.  data's
    gradient is dense, as TF's; sparse_gradient=True (TF 2's argument) makes it IndexedSlices."""
    return _sparse_segment("sum", data, indices, segment_ids, name, num_segments, "SparseSegmentSum",
                           sparse_gradient)


def sparse_segment_mean(data: Any, indices: Any, segment_ids: Any, name: Optional[str] = None,
                        num_segments: Any = None, sparse_gradient: bool = False) -> _g.Tensor:
    """Means of the rows data[indices] per segment, as sparse_segment_sum."""
    return _sparse_segment("mean", data, indices, segment_ids, name, num_segments, "SparseSegmentMean",
                           sparse_gradient)


def sparse_segment_sqrt_n(data: Any, indices: Any, segment_ids: Any, name: Optional[str] = None,
                          num_segments: Any = None, sparse_gradient: bool = False) -> _g.Tensor:
    """Sums of the rows data[indices] per segment over the square root of their count."""
    return _sparse_segment("sqrt_n", data, indices, segment_ids, name, num_segments, "SparseSegmentSqrtN",
                           sparse_gradient)


# -- softmax, reductions, maximum/minimum ------------------------------------------------------------

def sparse_softmax(sp_input: Any, name: Optional[str] = None) -> SparseTensor:
    """Softmax over the last dimension among each row's present entries (missing entries do
    not take part); same indices and dense shape."""
    sp = _sparse(sp_input, "sparse_softmax")
    if sp.shape.rank is not None and sp.shape.rank < 2:
        raise InvalidArgumentError(f"sparse_softmax: the input must have rank >= 2, got {sp.shape}")
    if not sp.dtype.is_floating:
        raise TypeError(f"sparse_softmax needs floating-point values, got {sp.dtype.name}")
    with sp.graph.as_default(), sp.graph.name_scope(name or "SparseSoftmax"):
        rows = _linear_index(SparseTensor(sp.indices[:, :-1], sp.values, sp.dense_shape[:-1]))
        _, seg = unique(rows, out_idx=_dt.int64)
        n = _a.size(rows, out_type=_dt.int64)  # at most one row per entry: enough segments
        # the row maximum is a shift only: the softmax's value and gradient do not depend on it
        top = _seg.unsorted_segment_max(stop_gradient(sp.values), seg, n)
        e = _m.exp(sp.values - _a.gather(top, seg))
        total = _seg.unsorted_segment_sum(e, seg, n)
        return SparseTensor(sp.indices, e / _a.gather(total, seg), sp.dense_shape)


def _reduction(sp: SparseTensor, axis: Any, keepdims: bool) -> Tuple[_g.Tensor, _g.Tensor, Optional[List[int]]]:
    """(each entry's coordinates in the reduced shape, the reduced dense shape, its static
    value where known)."""
    rank = _a.size(sp.dense_shape, out_type=_dt.int64)
    all_axes = _range(rank)
    axes = all_axes if axis is None else _a.reshape(_m.cast(_g.convert_to_tensor(axis), _dt.int64), [-1])
    axes = floormod(axes, rank)
    reduced = _m.reduce_any(_m.equal(_a.expand_dims(all_axes, 1), _a.expand_dims(axes, 0)), 1)
    if keepdims:
        coords = _a.where_v2(_a.expand_dims(reduced, 0), _a.zeros_like(sp.indices), sp.indices)
        shape = _a.where_v2(reduced, _a.ones_like(sp.dense_shape), sp.dense_shape)
    else:
        kept = _a.reshape(_a.where(_m.logical_not(reduced)), [-1])
        coords = _a.gather(sp.indices, kept, axis=1)
        shape = _a.gather(sp.dense_shape, kept)
    static: Optional[List[int]] = None
    known = _known(sp.shape)
    av = None if axis is None else (np.asarray(axis, np.int64).reshape(-1) if not isinstance(axis, _g.Tensor)
                                    else _constant_value(axis))
    if known is not None and (axis is None or av is not None):
        r = len(known)
        red = set(range(r)) if axis is None else {int(a) % r for a in av}
        static = [1 if i in red else d for i, d in enumerate(known)] if keepdims else \
            [d for i, d in enumerate(known) if i not in red]
    return coords, shape, static


def _keep_dims(keepdims: Optional[bool], keep_dims: Optional[bool]) -> bool:
    if keepdims is not None and keep_dims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'")
    return bool(keepdims if keepdims is not None else keep_dims)


def _axes(axis: Any, reduction_axes: Any) -> Any:
    if axis is not None and reduction_axes is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_axes'")
    return axis if axis is not None else reduction_axes


def sparse_reduce_max(sp_input: Any, axis: Any = None, keepdims: Optional[bool] = None,
                      reduction_axes: Any = None, keep_dims: Optional[bool] = None) -> _g.Tensor:
    """The maximum over `axis` (all axes when None) of the present entries only, dense; an
    output position with no entries is 0, as TF."""
    sp = _sparse(sp_input, "sparse_reduce_max")
    ax, keep = _axes(axis, reduction_axes), _keep_dims(keepdims, keep_dims)
    with sp.graph.as_default(), sp.graph.name_scope("SparseReduceMax"):
        coords, shape, static = _reduction(sp, ax, keep)
        key = _linear_index(SparseTensor(coords, sp.values, shape))
        n = _m.reduce_prod(shape)
        top = _seg.unsorted_segment_max(sp.values, key, n)
        count = _seg.unsorted_segment_sum(_a.ones_like(key), key, n)
        out = _a.reshape(_a.where_v2(_m.greater(count, 0), top, _a.zeros_like(top)), shape)
        if static is not None:
            out.set_shape(static)
        return out


def _reduce_sparse(sp: SparseTensor, axis: Any, keep: bool, kind: str) -> SparseTensor:
    """The reduction as a SparseTensor: one entry per output position that has entries, in
    row-major order."""
    coords, shape, static = _reduction(sp, axis, keep)
    key = _linear_index(SparseTensor(coords, sp.values, shape))
    order = argsort(key, stable=True)
    starts = _group_starts(_a.gather(key, order))
    seg = cumsum(_m.cast(starts, _dt.int64)) - 1
    n = _m.reduce_sum(_m.cast(starts, _dt.int64))
    vals = _a.gather(sp.values, order)
    red = _seg.unsorted_segment_sum(vals, seg, n) if kind == "sum" else _seg.unsorted_segment_max(vals, seg, n)
    indices = _a.gather(_a.gather(coords, order), _a.reshape(_a.where(starts), [-1]))
    if static is not None:
        shape = constant(np.asarray(static, np.int64))
    return SparseTensor(indices, red, shape)


def sparse_reduce_max_sparse(sp_input: Any, axis: Any = None, keepdims: Optional[bool] = None,
                             reduction_axes: Any = None, keep_dims: Optional[bool] = None) -> SparseTensor:
    """sparse_reduce_max's result as a SparseTensor (only positions with entries)."""
    sp = _sparse(sp_input, "sparse_reduce_max_sparse")
    with sp.graph.as_default(), sp.graph.name_scope("SparseReduceMaxSparse"):
        return _reduce_sparse(sp, _axes(axis, reduction_axes), _keep_dims(keepdims, keep_dims), "max")


def sparse_reduce_sum_sparse(sp_input: Any, axis: Any = None, keepdims: Optional[bool] = None,
                             reduction_axes: Any = None, keep_dims: Optional[bool] = None) -> SparseTensor:
    """sparse_reduce_sum's result as a SparseTensor (only positions with entries)."""
    sp = _sparse(sp_input, "sparse_reduce_sum_sparse")
    with sp.graph.as_default(), sp.graph.name_scope("SparseReduceSumSparse"):
        return _reduce_sparse(sp, _axes(axis, reduction_axes), _keep_dims(keepdims, keep_dims), "sum")


def _sparse_extreme(a: Any, b: Any, name: Optional[str], fn: Any, what: str) -> SparseTensor:
    """fn(a, b) at the union of the two SparseTensors' indices, a missing entry counting as 0;
    row-major order (inputs in row-major order, as TF requires)."""
    spa, spb = _sparse(a, what), _sparse(b, what)
    if spa.dtype != spb.dtype:
        raise TypeError(f"{what}: sp_a is {spa.dtype.name} but sp_b is {spb.dtype.name}")
    if spa.shape.rank is not None and spb.shape.rank is not None and not spa.shape.is_compatible_with(spb.shape):
        raise InvalidArgumentError(f"{what}: the operands' dense shapes differ: {spa.shape} and {spb.shape}")
    with spa.graph.as_default(), spa.graph.name_scope(name or what):
        keys = _a.concat([_linear_index(spa), _linear_index(spb)], 0)
        order = argsort(keys, stable=True)
        starts = _group_starts(_a.gather(keys, order))
        seg = cumsum(_m.cast(starts, _dt.int64)) - 1
        n = _m.reduce_sum(_m.cast(starts, _dt.int64))
        zeros_a, zeros_b = _a.zeros_like(spa.values), _a.zeros_like(spb.values)
        # each side's value at every union index (0 where it has none)
        va = _seg.unsorted_segment_sum(_a.gather(_a.concat([spa.values, zeros_b], 0), order), seg, n)
        vb = _seg.unsorted_segment_sum(_a.gather(_a.concat([zeros_a, spb.values], 0), order), seg, n)
        indices = _a.gather(_a.gather(_a.concat([spa.indices, spb.indices], 0), order),
                            _a.reshape(_a.where(starts), [-1]))
        return SparseTensor(indices, fn(va, vb), spa.dense_shape)


def sparse_maximum(sp_a: Any, sp_b: Any, name: Optional[str] = None) -> SparseTensor:
    """The element-wise maximum of two SparseTensors of one shape (implicit zeros count)."""
    return _sparse_extreme(sp_a, sp_b, name, _m.maximum, "SparseSparseMaximum")


def sparse_minimum(sp_a: Any, sp_b: Any, name: Optional[str] = None) -> SparseTensor:
    """The element-wise minimum of two SparseTensors of one shape (implicit zeros count)."""
    return _sparse_extreme(sp_a, sp_b, name, _m.minimum, "SparseSparseMinimum")


# -- split, indicator, merge, reset_shape, mask -------------------------------------------------------

class KeywordRequired:
    """TF1's stand-in first parameter of sparse_split: its arguments must be keywords."""

    def __repr__(self) -> str:
        return "KeywordRequired()"


def sparse_split(keyword_required: Any = KeywordRequired(), sp_input: Any = None, num_split: Optional[int] = None,
                 axis: Any = None, name: Optional[str] = None, split_dim: Any = None) -> List[SparseTensor]:
    """The SparseTensor cut into num_split pieces along `axis`: the first shape[axis] %
    num_split pieces one longer; each keeps its entries' order."""
    if not isinstance(keyword_required, KeywordRequired):
        raise ValueError("Keyword arguments are required for this function.")
    if sp_input is None:
        raise ValueError("sp_input is required")
    if num_split is None:
        raise ValueError("num_split is required")
    if axis is None:  # before split_dim is looked at: TF 2.21's check, so axis= is needed
        raise ValueError("axis is required")
    if split_dim is not None and split_dim != axis:
        raise ValueError("Cannot specify both 'axis' and 'split_dim'")
    sp = _sparse(sp_input, "sparse_split")
    k = int(num_split)
    with sp.graph.as_default(), sp.graph.name_scope(name or "SparseSplit"):
        known, av = _known(sp.shape), (_constant_value(axis) if isinstance(axis, _g.Tensor)
                                       else np.asarray([axis], np.int64))
        if known is not None and av is not None:
            r, a = len(known), int(av[0])
            if not -r <= a < r:
                raise InvalidArgumentError(f"sparse_split: axis {a} is out of range for rank {r}")
            dim = known[a % r]
            if not 1 <= k <= dim:
                raise InvalidArgumentError(f"Input num_split should be between 1 and {dim}, got {k}")
            base, extra = divmod(dim, k)
            starts = [i * base + min(i, extra) for i in range(k)]
            sizes = [base + (i < extra) for i in range(k)]
            out = []
            for s, z in zip(starts, sizes):
                st, sz = np.zeros(r, np.int64), np.asarray(known, np.int64)
                st[a % r], sz[a % r] = s, z
                out.append(sparse_slice(sp, st, sz))
            return out
        rank = _a.size(sp.dense_shape, out_type=_dt.int64)
        ax = floormod(_m.cast(_g.convert_to_tensor(axis), _dt.int64), rank)
        on_axis = _m.cast(_m.equal(_range(rank), ax), _dt.int64)
        dim = _a.gather(sp.dense_shape, ax)
        base, extra = _m.floordiv(dim, k), floormod(dim, k)
        out = []
        for i in range(k):
            s = i * base + _m.minimum(extra, i)
            z = base + _m.cast(_m.less(constant(i, _dt.int64), extra), _dt.int64)
            out.append(sparse_slice(sp, on_axis * s, sp.dense_shape * (1 - on_axis) + on_axis * z))
        return out


def sparse_merge(sp_ids: Any, sp_values: Any, vocab_size: Any, name: Optional[str] = None,
                 already_sorted: bool = False) -> SparseTensor:
    """sp_values' entries at [indices[:-1] of sp_ids, id, ...] (one id column per SparseTensor
    of ids), dense shape dense_shape[:-1] + vocab sizes; row-major order unless already_sorted."""
    import numbers
    if isinstance(sp_ids, (SparseTensor, SparseTensorValue)):
        sp_ids = [sp_ids]
        if not isinstance(vocab_size, (_g.Tensor, numbers.Integral)):
            raise TypeError(f"vocab_size has to be a Tensor or Python int. Found {type(vocab_size)}")
        vocab_size = [vocab_size]
    else:
        if not isinstance(sp_ids, (list, tuple)):
            raise TypeError(f"sp_ids has to be a SparseTensor or list thereof. Found {type(sp_ids)}")
        if not isinstance(vocab_size, (list, tuple)):
            raise TypeError(f"vocab_size has to be a list of Tensors or Python ints. Found {type(vocab_size)}")
        for d in vocab_size:
            if not isinstance(d, (_g.Tensor, numbers.Integral)):
                raise TypeError(f"vocab_size has to be a list of Tensors or Python ints. Found {type(d)}")
    if len(sp_ids) != len(vocab_size):
        raise ValueError("sp_ids and vocab_size have to have equal lengths.")
    ids_sp = [_sparse(s, "sparse_merge") for s in sp_ids]
    vals = _sparse(sp_values, "sparse_merge")
    g = ids_sp[0].graph
    with g.as_default(), g.name_scope(name or "SparseMerge"):
        cols = [_a.expand_dims(_m.cast(s.values, _dt.int64), 1) for s in ids_sp]
        indices = _a.concat([ids_sp[0].indices[:, :-1]] + cols, 1)
        sizes = _a.stack([_m.cast(_g.convert_to_tensor(v), _dt.int64) for v in vocab_size])
        shape = _a.concat([ids_sp[0].dense_shape[:-1], sizes], 0)
        out = SparseTensor(indices, vals.values, shape)
        return out if already_sorted else sparse_reorder(out)


def sparse_to_indicator(sp_input: Any, vocab_size: Any, name: Optional[str] = None) -> _g.Tensor:
    """Dense bool [..., vocab_size]: True at [row..., v] for each id v in that row's last
    dimension (repeated ids allowed)."""
    sp = _sparse(sp_input, "sparse_to_indicator")
    with sp.graph.as_default(), sp.graph.name_scope(name or "SparseToIndicator"):
        trues = SparseTensor(sp.indices, _a.fill(_a.shape(sp.values), True), sp.dense_shape)
        merged = sparse_merge(sp, trues, vocab_size)
        out = sparse_tensor_to_dense(merged, default_value=False, validate_indices=False)
        if sp.shape.rank is not None:
            vocab = int(vocab_size) if isinstance(vocab_size, (int, np.integer)) else None
            out.set_shape(out.shape.merge_with(list(sp.shape.dims[:-1]) + [vocab]))
        return out


def sparse_reset_shape(sp_input: Any, new_shape: Any = None) -> SparseTensor:
    """The same entries with dense shape new_shape (each dimension >= the old one), or, when
    None, the tight bounding box of the indices (all zeros without entries)."""
    from .check_ops import assert_equal, assert_less_equal
    sp = _sparse(sp_input, "sparse_reset_shape")
    with sp.graph.as_default():
        indices, values, shape = identity(sp.indices), identity(sp.values), identity(sp.dense_shape)
        if new_shape is None:
            # reduce_max over no entries is the lowest int64: the maximum with 0 gives 0
            out = _m.maximum(constant(0, _dt.int64), _m.reduce_max(indices, 0) + _a.ones_like(shape))
            return SparseTensor(indices, values, out)
        out = _g.convert_to_tensor(new_shape)
        if out.shape.rank not in (None, 1):
            raise ValueError(f"Shape must be rank 1 but is rank {out.shape.rank}")
        out = _m.cast(out, _dt.int64)
        if out.shape.rank == 1 and sp.shape.rank is not None and out.shape.dims[0] not in (None, sp.shape.rank):
            raise ValueError(f"Dimensions {out.shape.dims[0]} and {sp.shape.rank} are not compatible")
        want, known = _constant_value(out), _known(sp.shape)
        if want is not None and known is not None:
            if not np.all(np.asarray(known) <= want):
                raise ValueError(f"Requested new_shape should have dimension sizes >= sp_input.shape.  Found "
                                 f"new_shape ({np.asarray(known)}), sp_input.shape ({want}).")  # (TF's swapped names)
            return SparseTensor(indices, values, constant(want))
        with sp.graph.control_dependencies([assert_equal(_a.shape(shape), _a.shape(out))]):
            out = identity(out)
        with sp.graph.control_dependencies([assert_less_equal(shape, out)]):
            out = identity(out)
        return SparseTensor(indices, values, out)


def sparse_mask(a: IndexedSlices, mask_indices: Any, name: Optional[str] = None) -> IndexedSlices:
    """The slices of `a` whose index is not in mask_indices (a's order kept)."""
    with a.graph.as_default(), a.graph.name_scope(name or "sparse_mask"):
        out_indices, keep = setdiff1d(a.indices, mask_indices)
        return IndexedSlices(_a.gather(a.values, keep), out_indices, a.dense_shape, static_shape=a.shape)


# -- SparseTensor (*, /) dense ------------------------------------------------------------------------

def _dense_at_entries(sp: SparseTensor, dense: Any) -> _g.Tensor:
    """The dense operand, broadcast to sp's dense shape, read at sp's indices ([N])."""
    d = _g.convert_to_tensor(dense, dtype=sp.dtype)
    if d.shape.rank == 0:
        return _a.zeros_like(sp.values) + d
    rs, rd = sp.shape.rank, d.shape.rank
    if rd is None:  # the dense operand's rank known only at run time: made dense-shaped first
        return gather_nd(_a.zeros(sp.dense_shape, sp.dtype) + d, sp.indices)
    if rs is None:  # sp's rank known only at run time: its last rd coordinates
        n = _a.size(sp.dense_shape, out_type=_dt.int64)
        last = _a.gather(sp.indices, _range(n - rd, n), axis=1)
        dshape = _a.shape(d, out_type=_dt.int64)
        return gather_nd(d, last * _a.expand_dims(_m.cast(_m.not_equal(dshape, 1), _dt.int64), 0))
    if rd > rs:
        raise InvalidArgumentError(f"SparseDenseBinaryOpShared broadcasts dense to sparse only; got incompatible "
                                   f"shapes: dense {d.shape} of higher rank than sparse {sp.shape}")
    for ds, dd in zip(sp.shape.dims[rs - rd:], d.shape.dims):
        if ds is not None and dd is not None and dd not in (1, ds):
            raise InvalidArgumentError(f"SparseDenseBinaryOpShared broadcasts dense to sparse only; got "
                                       f"incompatible shapes: [{', '.join(map(str, sp.shape.dims))}] vs. "
                                       f"[{', '.join(map(str, d.shape.dims))}]")
    dshape = _a.shape(d, out_type=_dt.int64)
    # a dimension of size 1 is read at 0 whatever the sparse coordinate
    coords = sp.indices[:, rs - rd:] * _a.expand_dims(_m.cast(_m.not_equal(dshape, 1), _dt.int64), 0)
    return gather_nd(d, coords)


def sparse_dense_cwise_mul(sp: SparseTensor, dense: Any) -> SparseTensor:
    """sp * dense at sp's entries (TF's SparseDenseCwiseMul); same indices and shape."""
    with sp.graph.as_default(), sp.graph.name_scope("SparseDenseCwiseMul"):
        return SparseTensor(sp.indices, sp.values * _dense_at_entries(sp, dense), sp.dense_shape)


def sparse_dense_cwise_div(sp: SparseTensor, dense: Any) -> SparseTensor:
    """sp / dense at sp's entries (TF1's truediv: integers made float first)."""
    with sp.graph.as_default(), sp.graph.name_scope("SparseDenseCwiseDiv"):
        return SparseTensor(sp.indices, _m.divide(sp.values, _dense_at_entries(sp, dense)), sp.dense_shape)
