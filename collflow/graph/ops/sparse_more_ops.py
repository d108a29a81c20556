"""More ops on tf.SparseTensor, composed from existing ops so gradients reach the values
(and fill_empty_rows' default value), as TF 1.15 defines them: the sum of two SparseTensors
(`sparse_add`'s sparse + sparse case), sparse_concat, sparse_reshape, sparse_slice,
sparse_fill_empty_rows and sparse_transpose; and tf.edit_distance (an op of its own,
kernels/sparse_kernels.py).

Order of the entries, as TF: concat and transpose give row-major order; reshape and slice
keep the input's order; fill_empty_rows orders by row, keeping the input's order inside
a row; the sum of two SparseTensors merges them (row-major order, for inputs in row-major
order as TF requires of them).
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from ..sparse_tensor import SparseTensor
from . import array_ops as _a
from . import math_ops as _m
from . import segment_ops as _seg
from .constant_op import constant, identity
from .math_extra_ops import floormod
from .misc_ops import range as _range
from .op_util import make_op
from .rearrange_ops import argsort
from .scan_ops import cumprod, cumsum
from .sparse_ops import _linear_index, _sparse

__all__ = ["sparse_add_sparse", "sparse_concat", "sparse_reshape", "sparse_slice", "sparse_fill_empty_rows",
           "sparse_transpose", "edit_distance"]


def _static_dims(sps: Sequence[SparseTensor]) -> Optional[List[List[Optional[int]]]]:
    """Each input's static dense shape, or None where one's rank is unknown."""
    if any(sp.shape.rank is None for sp in sps):
        return None
    return [list(sp.shape.dims) for sp in sps]


def _row_major(indices: _g.Tensor, values: _g.Tensor, dense_shape: _g.Tensor) -> SparseTensor:
    """The entries sorted into row-major order (ties keep their order)."""
    order = argsort(_linear_index(SparseTensor(indices, values, dense_shape)), stable=True)
    return SparseTensor(_a.gather(indices, order), _a.gather(values, order), dense_shape)


def _group_starts(keys: _g.Tensor) -> _g.Tensor:
    """For sorted `keys`: whether each one differs from the one before it (the first: True)."""
    prev = _a.concat([constant(np.array([-1], np.int64)), keys], 0)[:-1]
    return _m.not_equal(keys, prev)


def sparse_add_sparse(a: SparseTensor, b: SparseTensor, thresh: Any = 0) -> SparseTensor:
    """a + b for two SparseTensors of one dense shape: the union of their entries, the values
    of an index both have summed, and such a sum dropped when its magnitude is below
    `thresh` (entries of only one of them are kept whatever their value, as TF)."""
    if a.dtype != b.dtype:
        raise InvalidArgumentError(f"sparse_add: a is {a.dtype.name} but b is {b.dtype.name}")
    dims = _static_dims([a, b])
    if dims is not None and not a.shape.is_compatible_with(b.shape):
        raise InvalidArgumentError(f"sparse_add: the operands' dense shapes differ: {a.shape} and {b.shape}")
    keys = _a.concat([_linear_index(a), _linear_index(b)], 0)
    order = argsort(keys, stable=True)  # a's entry first where both have one
    sk = _a.gather(keys, order)
    starts = _group_starts(sk)
    seg = cumsum(_m.cast(starts, _dt.int64)) - 1
    n = _m.reduce_sum(_m.cast(starts, _dt.int64))
    vals = _a.gather(_a.concat([a.values, b.values], 0), order)
    summed = _seg.unsorted_segment_sum(vals, seg, n)
    indices = _a.gather(_a.gather(_a.concat([a.indices, b.indices], 0), order), _a.reshape(_a.where(starts), [-1]))
    # how many entries each output index had: the sums (two) meet the threshold
    counts = _seg.unsorted_segment_sum(_a.ones_like(seg), seg, n)
    mag = _m.abs(summed)
    keep = _m.logical_or(_m.less(counts, 2), _m.greater_equal(mag, _m.cast(_g.convert_to_tensor(thresh), mag.dtype)))
    kept = _a.reshape(_a.where(keep), [-1])
    return SparseTensor(_a.gather(indices, kept), _a.gather(summed, kept), a.dense_shape)


def sparse_concat(axis: Any, sp_inputs: Sequence[Any], name: Optional[str] = None,
                  expand_nonconcat_dim: bool = False, concat_dim: Any = None) -> SparseTensor:
    """The SparseTensors joined along `axis` (their other dense dimensions equal, or with
    expand_nonconcat_dim the largest of each); entries in row-major order."""
    if concat_dim is not None:
        axis = concat_dim
    sps = [_sparse(s, "sparse_concat") for s in sp_inputs]
    if not sps:
        raise ValueError("sparse_concat needs at least one SparseTensor")
    g = sps[0].graph
    with g.as_default(), g.name_scope(name or "SparseConcat"):
        ranks = {sp.shape.rank for sp in sps} - {None}
        if len(ranks) > 1:
            raise InvalidArgumentError(f"sparse_concat: the inputs' ranks differ: {sorted(ranks)}")
        rank = ranks.pop() if ranks else None
        ax = int(axis)
        if rank is not None:
            if not -rank <= ax < rank:
                raise InvalidArgumentError(f"sparse_concat: axis {ax} is out of range for rank {rank}")
            ax %= rank
        elif ax < 0:
            raise InvalidArgumentError("sparse_concat: a negative axis needs inputs of known rank")
        dims = _static_dims(sps)
        if dims is not None and not expand_nonconcat_dim:
            for d in range(len(dims[0])):
                known = {x[d] for x in dims if x[d] is not None}
                if d != ax and len(known) > 1:
                    raise InvalidArgumentError(
                        f"sparse_concat: dimension {d} differs between the inputs ({sorted(known)}); only the "
                        f"concat axis {ax} may (or pass expand_nonconcat_dim=True)")
        shapes = [sp.dense_shape for sp in sps]
        sizes = _a.stack([s[ax] for s in shapes])
        offsets = cumsum(sizes, exclusive=True)
        on_axis = _m.cast(_m.equal(_range(_a.size(shapes[0])), ax), _dt.int64)  # 1 at the concat axis
        # the concat axis's coordinate of each input's entries shifted by the sizes before it
        indices = _a.concat([sp.indices + _a.expand_dims(on_axis * offsets[k], 0) for k, sp in enumerate(sps)], 0)
        values = _a.concat([sp.values for sp in sps], 0)
        if dims is not None and all(d is not None for x in dims for d in x):
            cols = list(zip(*dims))
            out_shape = constant(np.array([sum(c) if d == ax else max(c) for d, c in enumerate(cols)], np.int64))
        else:
            other = _m.reduce_max(_a.stack(shapes), 0) if expand_nonconcat_dim else shapes[0]
            out_shape = other * (1 - on_axis) + on_axis * _m.reduce_sum(sizes)
        return _row_major(indices, values, out_shape)


def _resolve_shape(old: _g.Tensor, new: _g.Tensor) -> _g.Tensor:
    """`new` (int64, at most one -1) with the -1 replaced by what keeps old's element count."""
    total = _m.reduce_prod(old)
    missing = _m.equal(new, -1)
    known = _m.reduce_prod(_a.where_v2(missing, _a.ones_like(new), new))
    inferred = _m.floordiv(total, _m.maximum(known, 1))
    return _a.where_v2(missing, _a.fill(_a.shape(new), inferred), new)


def sparse_reshape(sp_input: Any, shape: Any, name: Optional[str] = None) -> SparseTensor:
    """The same entries, in the same order, in a dense shape of the same number of elements
    (one dimension may be -1: inferred)."""
    sp = _sparse(sp_input, "sparse_reshape")
    with sp.graph.as_default(), sp.graph.name_scope(name or "SparseReshape"):
        new = _m.cast(_g.convert_to_tensor(shape), _dt.int64)
        out_shape = _resolve_shape(sp.dense_shape, new)
        known = _known(sp.shape)
        want = _constant_value(new)
        if known is not None and want is not None:
            total = int(np.prod(known, dtype=np.int64))
            if list(want).count(-1) > 1:
                raise InvalidArgumentError(f"sparse_reshape: at most one dimension may be -1, got {list(want)}")
            rest = int(np.prod([d for d in want if d != -1], dtype=np.int64))
            full = [total // max(rest, 1) if d == -1 else int(d) for d in want]
            if int(np.prod(full, dtype=np.int64)) != total:
                raise InvalidArgumentError(f"sparse_reshape: cannot reshape a SparseTensor of dense shape "
                                           f"{known} into {list(want)}")
            out_shape = constant(np.array(full, np.int64))
        lin = _linear_index(sp)
        strides = cumprod(out_shape, exclusive=True, reverse=True)
        # row-major coordinates of each linear index in the new shape
        coords = floormod(_m.floordiv(_a.expand_dims(lin, 1), _a.expand_dims(strides, 0)),
                             _a.expand_dims(out_shape, 0))
        checked = _check_same_size(sp.dense_shape, out_shape)
        with sp.graph.control_dependencies([checked]):
            coords = identity(coords)
        return SparseTensor(coords, sp.values, out_shape)


def _known(shape: Any) -> Optional[List[int]]:
    return [int(d) for d in shape.dims] if shape.rank is not None and shape.is_fully_defined() else None


def _constant_value(t: _g.Tensor) -> Optional[np.ndarray]:
    """The value of a constant (through a Cast), else None."""
    op = t.op
    if op.type == "Cast":
        op = op.inputs[0].op
    if op.type != "Const":
        return None
    return np.asarray(op.attrs["value"]).astype(np.int64).reshape(-1)


def _check_same_size(old: _g.Tensor, new: _g.Tensor) -> Any:
    from .check_ops import assert_equal
    return assert_equal(_m.reduce_prod(old), _m.reduce_prod(new),
                        message="sparse_reshape: the new shape must have as many elements as the input's dense shape")


def sparse_slice(sp_input: Any, start: Any, size: Any, name: Optional[str] = None) -> SparseTensor:
    """The entries inside the box [start, start + size) (clipped to the dense shape), their
    indices relative to start; the output's dense shape is the clipped size."""
    sp = _sparse(sp_input, "sparse_slice")
    with sp.graph.as_default(), sp.graph.name_scope(name or "SparseSlice"):
        st = _m.cast(_g.convert_to_tensor(start), _dt.int64)
        sz = _m.cast(_g.convert_to_tensor(size), _dt.int64)
        end = _m.minimum(st + sz, sp.dense_shape)
        inside = _m.logical_and(_m.greater_equal(sp.indices, _a.expand_dims(st, 0)),
                                _m.less(sp.indices, _a.expand_dims(end, 0)))
        keep = _a.reshape(_a.where(_m.reduce_all(inside, 1)), [-1])
        out_shape = _m.maximum(end - st, 0)
        known, stv, szv = _known(sp.shape), _constant_value(st), _constant_value(sz)
        if known is not None and stv is not None and szv is not None:
            out_shape = constant(np.maximum(np.minimum(stv + szv, known) - stv, 0).astype(np.int64))
        return SparseTensor(_a.gather(sp.indices, keep) - _a.expand_dims(st, 0), _a.gather(sp.values, keep), out_shape)


def sparse_fill_empty_rows(sp_input: Any, default_value: Any, name: Optional[str] = None) -> Any:
    """(the SparseTensor with an entry [row, 0, ...] = default_value added to every row that
    has none, the bool vector of which rows were empty); entries ordered by row."""
    sp = _sparse(sp_input, "sparse_fill_empty_rows")
    with sp.graph.as_default(), sp.graph.name_scope(name or "SparseFillEmptyRows"):
        rows = sp.indices[:, 0]
        n_rows = sp.dense_shape[0]
        counts = _seg.unsorted_segment_sum(_a.ones_like(rows), rows, n_rows)
        empty = _m.equal(counts, 0)
        empty_rows = _a.reshape(_a.where(empty), [-1])
        rank = _a.size(sp.dense_shape)
        fill_idx = _a.concat([_a.expand_dims(empty_rows, 1),
                              _a.zeros(_a.stack([_a.size(empty_rows), rank - 1]), _dt.int64)], 1)
        dv = _g.convert_to_tensor(default_value, dtype=sp.dtype)
        # + dv (not fill): default_value's gradient is the sum over the rows it filled
        fill_vals = _a.zeros(_a.reshape(_a.size(empty_rows), [1]), sp.dtype) + dv
        indices = _a.concat([sp.indices, fill_idx], 0)
        values = _a.concat([sp.values, fill_vals], 0)
        order = argsort(indices[:, 0], stable=True)
        out = SparseTensor(_a.gather(indices, order), _a.gather(values, order), sp.dense_shape)
        return out, empty


def sparse_transpose(sp_input: Any, perm: Any = None, name: Optional[str] = None) -> SparseTensor:
    """The SparseTensor with its dimensions permuted by `perm` (default: reversed); entries
    in row-major order."""
    sp = _sparse(sp_input, "sparse_transpose")
    with sp.graph.as_default(), sp.graph.name_scope(name or "SparseTranspose"):
        if perm is None:
            if sp.shape.rank is None:
                p = _range(_a.size(sp.dense_shape) - 1, -1, -1)
            else:
                p = constant(np.arange(sp.shape.rank - 1, -1, -1, dtype=np.int32))
        else:
            p = _g.convert_to_tensor(perm)
        indices = _a.transpose(_a.gather(_a.transpose(sp.indices), p))
        known, pv = _known(sp.shape), _constant_value(p)
        out_shape = (constant(np.array([known[i] for i in pv], np.int64)) if known is not None and pv is not None
                     else _a.gather(sp.dense_shape, p))
        return _row_major(indices, sp.values, out_shape)


def _edit_distance_spec(op: _g.Operation) -> list:
    rank = op.inputs[2].shape.dims[0] if op.inputs[2].shape.rank == 1 else None
    return [(_dt.float32, TensorShape(None if rank is None else [None] * (rank - 1)))]


register_op("EditDistance", _edit_distance_spec, host_only=True,
            doc="Levenshtein distances between the sequences (last dimension) of two SparseTensors")
not_differentiable("EditDistance")


def edit_distance(hypothesis: Any, truth: Any, normalize: bool = True, name: str = "edit_distance") -> _g.Tensor:
    """The Levenshtein distance between the sequences (along the last dimension) of two
    SparseTensors in row-major order, for every index of the other dimensions (the larger of
    the two dense shapes there): float32, divided by the truth's length with normalize (an
    empty truth: inf against a non-empty hypothesis, 0 against an empty one), as TF."""
    h, t = _sparse(hypothesis, "edit_distance"), _sparse(truth, "edit_distance")
    if h.dtype != t.dtype:
        raise InvalidArgumentError(f"edit_distance: hypothesis is {h.dtype.name}, truth {t.dtype.name}")
    with h.graph.as_default(), h.graph.name_scope(name):
        return make_op("EditDistance", [h.indices, h.values, h.dense_shape, t.indices, t.values, t.dense_shape],
                       {"normalize": bool(normalize)}, name="EditDistance").outputs[0]
