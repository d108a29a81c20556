"""The tf.ragged functions and the math of RaggedTensor (TF 1.15).

Elementwise math maps the flat values (map_flat_values, and RaggedTensor's operators: two
ragged operands must have the same nested row splits, checked at run time; a dense operand
must broadcast against the flat values' inner dimensions, a scalar say).  tf.reduce_* over a
RaggedTensor reduce the flat values with the segment ops (see ragged_reduce); tf.gather of a
RaggedTensor's rows is ragged_gather.  tf.ragged.constant builds one from a nested list;
tf.ragged.range is TF's RaggedRange.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from ..shape import TensorShape
from .op_util import make_op, single
from .ragged_tensor import RaggedTensor, RaggedTensorValue, _int64, _ops

__all__ = ["constant", "constant_value", "map_flat_values", "row_splits_to_segment_ids",
           "segment_ids_to_row_splits", "ragged_range", "placeholder", "ragged_reduce", "ragged_gather",
           "boolean_mask", "stack"]

_I64 = _dt.int64


def _is_scalar(x: Any) -> bool:
    return not isinstance(x, (list, tuple, np.ndarray))


def _depth(x: Any) -> int:
    """The nesting depth of a nested list (a scalar: 0; [] counts as one level)."""
    if _is_scalar(x):
        return 0
    if isinstance(x, np.ndarray):
        return x.ndim
    return 1 + max([_depth(v) for v in x], default=0)


def _split_levels(pylist: Any, ragged_rank: int) -> tuple:
    """(list of row_splits per ragged level, the flat items below them)."""
    splits, level = [], list(pylist)
    for _ in range(ragged_rank):
        s, nxt = [0], []
        for row in level:
            if _is_scalar(row):
                raise ValueError("all scalar values must have the same nesting depth")
            for item in row:
                nxt.append(item)
            s.append(len(nxt))
        splits.append(np.asarray(s, np.int64))
        level = nxt
    return splits, level


def _constant_parts(pylist: Any, dtype: Any, ragged_rank: Optional[int], inner_shape: Any) -> tuple:
    if _is_scalar(pylist):
        raise ValueError("tf.ragged.constant: the value must be a list, got a scalar")
    depth = _depth(pylist)
    inner_rank = 0 if inner_shape is None else len(inner_shape)
    if ragged_rank is None:
        ragged_rank = max(1, depth - 1 - inner_rank)
    if ragged_rank < 1:
        raise ValueError(f"ragged_rank must be at least 1, got {ragged_rank}")
    if depth > 1 and ragged_rank > depth - 1 - inner_rank:
        raise ValueError(f"ragged_rank {ragged_rank} is too large for a value of depth {depth}")
    splits, items = _split_levels(pylist, ragged_rank)
    if inner_shape is not None:
        inner = [int(d) for d in inner_shape]
        flat = np.asarray(items, dtype=object if dtype == _dt.string else None).reshape([-1] + inner) \
            if items else np.zeros([0] + inner)
    else:
        flat = np.asarray(items, dtype=object) if items and isinstance(_first_scalar(items), (str, bytes)) \
            else np.asarray(items)
        if flat.dtype == object and not (items and isinstance(_first_scalar(items), (str, bytes))):
            raise ValueError("all flat values must have compatible shapes (inner dimensions must be uniform)")
        if not items:
            flat = np.zeros([0], np.float32)
    return splits, flat


def _first_scalar(x: Any) -> Any:
    while not _is_scalar(x):
        if len(x) == 0:
            return None
        x = x[0]
    return x


def constant(pylist: Any, dtype: Any = None, ragged_rank: Optional[int] = None, inner_shape: Any = None,
             name: Optional[str] = None, row_splits_dtype: Any = _I64) -> RaggedTensor:
    """A RaggedTensor of constants from a nested list (the innermost dimensions uniform when
    ragged_rank or inner_shape says so)."""
    dt = None if dtype is None else _dt.as_dtype(dtype)
    splits, flat = _constant_parts(pylist, dt, ragged_rank, inner_shape)
    with _g.get_default_graph().as_default():
        if flat.dtype == object:
            fv = _g.convert_to_tensor(flat, dtype=_dt.string)
        else:
            fv = _g.convert_to_tensor(flat.tolist() if flat.size else flat, dtype=dt)
            if dt is None and flat.size == 0:
                fv = _g.convert_to_tensor(flat.astype(np.float32))
        return RaggedTensor.from_nested_row_splits(fv, [_g.convert_to_tensor(s) for s in splits], validate=False)


def constant_value(pylist: Any, dtype: Any = None, ragged_rank: Optional[int] = None, inner_shape: Any = None,
                   row_splits_dtype: Any = "int64") -> RaggedTensorValue:
    """The RaggedTensorValue of a nested list (NumPy arrays, no graph)."""
    splits, flat = _constant_parts(pylist, dtype, ragged_rank, inner_shape)
    if dtype is not None and flat.dtype != object:
        flat = flat.astype(_dt.as_dtype(dtype).np)
    result = flat
    for s in reversed(splits):
        result = RaggedTensorValue(result, s)
    return result


def _same_splits(a: RaggedTensor, b: RaggedTensor) -> List[_g.Tensor]:
    if a.ragged_rank != b.ragged_rank:
        raise ValueError(f"Inputs must have identical ragged ranks, got {a.ragged_rank} and {b.ragged_rank}")
    return [single("RaggedSameSplits", [x, y]) for x, y in zip(a.nested_row_splits, b.nested_row_splits)]


def _rebuild(splits: Sequence[_g.Tensor], flat: _g.Tensor) -> RaggedTensor:
    return RaggedTensor.from_nested_row_splits(flat, list(splits), validate=False)


def map_flat_values(op: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """op applied to the flat values of the RaggedTensor arguments (all with the same nested
    row splits); the result has their rows.  Without a RaggedTensor argument, op(*args)."""
    rts = [a for a in list(args) + list(kwargs.values()) if isinstance(a, RaggedTensor)]
    if not rts:
        return op(*args, **kwargs)
    first = rts[0]
    with first.graph.as_default():
        splits = list(first.nested_row_splits)
        for other in rts[1:]:
            splits = _same_splits(RaggedTensor.from_nested_row_splits(first.flat_values, splits, validate=False),
                                  other)
        swap = (lambda a: a.flat_values if isinstance(a, RaggedTensor) else a)
        out = op(*[swap(a) for a in args], **{k: swap(v) for k, v in kwargs.items()})
        return _rebuild(splits, _g.convert_to_tensor(out))


def row_splits_to_segment_ids(splits: Any, name: Optional[str] = None, out_type: Any = None) -> _g.Tensor:
    """The row of each value: splits [0, 2, 3] -> [0, 0, 1]."""
    return single("RaggedSplitsToRowIds", [_int64(splits)], name=name or "RaggedSplitsToSegmentIds")


def segment_ids_to_row_splits(segment_ids: Any, num_segments: Any = None, out_type: Any = None,
                              name: Optional[str] = None) -> _g.Tensor:
    """The row splits of sorted segment ids: [0, 0, 1] -> [0, 2, 3] (num_segments rows)."""
    ids = _int64(segment_ids)
    with ids.graph.as_default():
        n = _int64(-1 if num_segments is None else num_segments)
        return single("RaggedRowIdsToSplits", [ids, n], name=name or "SegmentIdsToRaggedSplits")


def ragged_range(starts: Any, limits: Any = None, deltas: Any = 1, dtype: Any = None, name: Optional[str] = None,
                 row_splits_dtype: Any = _I64) -> RaggedTensor:
    """Row i is range(starts[i], limits[i], deltas[i]) (scalars broadcast)."""
    if limits is None:
        starts, limits = 0, starts
    g = next((x.graph for x in (starts, limits, deltas) if isinstance(x, _g.Tensor)), _g.get_default_graph())
    with g.as_default():
        m = _ops()[1]
        dt = None if dtype is None else _dt.as_dtype(dtype)
        ts = [x if isinstance(x, _g.Tensor) else _g.convert_to_tensor(x, dtype=dt) for x in (starts, limits, deltas)]
        order = [_dt.int32, _dt.int64, _dt.float32, _dt.float64]
        want = dt or max((t.dtype for t in ts), key=lambda d: order.index(d) if d in order else 0)
        ts = [t if t.dtype == want else m.cast(t, want) for t in ts]
        op = make_op("RaggedRange", ts, name=name or "RaggedRange")
        return RaggedTensor.from_row_splits(op.outputs[1], op.outputs[0], validate=False)


def placeholder(dtype: Any, ragged_rank: int, value_shape: Any = None, name: Optional[str] = None) -> RaggedTensor:
    """A RaggedTensor fed from a RaggedTensorValue of that ragged_rank."""
    from .constant_op import placeholder as _ph
    if ragged_rank < 1:
        raise ValueError(f"ragged_rank must be at least 1, got {ragged_rank}")
    inner = [] if value_shape is None else list(TensorShape(value_shape).dims)
    base = name or "RaggedPlaceholder"
    flat = _ph(dtype, [None] + inner, name=f"{base}/flat_values")
    splits = [_ph(_I64, [None], name=f"{base}/row_splits_{i}") for i in range(ragged_rank)]
    return RaggedTensor.from_nested_row_splits(flat, splits, validate=False)


# -- reductions --------------------------------------------------------------------------------

_SEGMENT = {"Sum": "unsorted_segment_sum", "Max": "unsorted_segment_max", "Min": "unsorted_segment_min",
            "Prod": "unsorted_segment_prod", "Mean": "mean"}


def _segment_reduce(op_type: str, data: _g.Tensor, ids: _g.Tensor, n: _g.Tensor) -> _g.Tensor:
    seg = _ops()[5]
    if op_type == "Mean":
        total = seg.unsorted_segment_sum(data, ids, n)
        a, m = _ops()[:2]
        count = seg.unsorted_segment_sum(a.ones_like(data), ids, n)
        return total / count
    fn = getattr(seg, _SEGMENT[op_type], None)
    if fn is None:
        raise NotImplementedError(f"reduce {op_type} over a ragged dimension is not supported")
    return fn(data, ids, n)


def _padded_prod(inner: RaggedTensor) -> _g.Tensor:
    """The product of each row: the rows padded with ones to a dense block, reduce_prod (no
    segment product op; gather and reduce_prod carry the gradient)."""
    a, m, _, sl = _ops()[:4]
    vals = inner.values
    ones = a.expand_dims(a.ones_like(vals[0]), 0)
    idx = single("RaggedDenseGatherIndex", [inner.row_splits, _int64(-1)])
    return m.reduce_prod(sl.gather(a.concat([vals, ones], 0), idx), axis=1)


def ragged_reduce(op_type: str, rt: RaggedTensor, axis: Any, keepdims: bool, name: Optional[str]) -> Any:
    """tf.reduce_<op>(rt, axis): over the ragged rows (segment ops on the flat values).

    axis None reduces everything; axis 0 of a ragged_rank-1 tensor reduces each column over
    the rows that have it; axis = ragged_rank reduces the innermost ragged dimension (the
    result keeps the outer rows); a larger axis reduces a dimension of the flat values."""
    from . import math_ops as m
    fn = {"Sum": m.reduce_sum, "Mean": m.reduce_mean, "Max": m.reduce_max, "Min": m.reduce_min,
          "Prod": m.reduce_prod}[op_type]
    if keepdims:
        raise NotImplementedError("reduce over a RaggedTensor with keepdims=True is not supported")
    with rt.graph.as_default():
        if axis is None:
            return fn(rt.flat_values, name=name)
        axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
        if len(axes) != 1:
            # one axis at a time, outermost last (the later axes do not move)
            out = rt
            for ax in sorted(axes, reverse=True):
                out = ragged_reduce(op_type, out, ax, False, None) if isinstance(out, RaggedTensor) \
                    else fn(out, axis=ax)
            return out
        ax = int(axes[0])
        rank = rt.shape.rank
        if ax < 0:
            if rank is None:
                raise ValueError("a negative axis needs the RaggedTensor's rank to be known")
            ax += rank
        rr = rt.ragged_rank
        if ax > rr:
            return rt.with_flat_values(fn(rt.flat_values, axis=ax - rr))
        if ax == rr:
            inner = rt if rr == 1 else _innermost(rt)
            red = _padded_prod(inner) if op_type == "Prod" else \
                _segment_reduce(op_type, inner.values, inner.value_rowids(), inner.nrows())
            return red if rr == 1 else _replace_innermost(rt, red)
        if ax == 0 and rr == 1:
            # each column over the rows that reach it
            cols = _ops()[0]
            ids = rt.value_rowids()
            col = _ops()[3].gather(rt.row_starts(), ids)
            from .misc_ops import range as _range
            j = _range(0, _ops()[0].shape(rt.values, out_type=_I64)[0], dtype=_I64) - col
            width = _ops()[1].reduce_max(cols.concat([np.zeros(1, np.int64), rt.row_lengths()], 0))
            return _segment_reduce(op_type, rt.values, j, width)
        raise NotImplementedError(f"reduce over axis {ax} of a RaggedTensor of ragged_rank {rr} is not supported")


def _innermost(rt: RaggedTensor) -> RaggedTensor:
    while isinstance(rt.values, RaggedTensor):
        rt = rt.values
    return rt


def _replace_innermost(rt: RaggedTensor, new_values: _g.Tensor) -> Any:
    """rt with its innermost ragged level (values + splits) replaced by dense new_values."""
    if not isinstance(rt.values.values, RaggedTensor):
        return rt.with_values(new_values)
    return rt.with_values(_replace_innermost(rt.values, new_values))


# -- gather and boolean_mask -----------------------------------------------------------------


def ragged_gather(params: RaggedTensor, indices: Any, name: Optional[str] = None) -> RaggedTensor:
    """The rows of params at indices (a vector): tf.gather over axis 0 of a RaggedTensor."""
    with params.graph.as_default():
        a, m, _, sl = _ops()[:4]
        idx = _int64(indices)
        if idx.shape.rank not in (None, 1):
            raise NotImplementedError("gather of a RaggedTensor's rows needs a vector of indices")
        starts = sl.gather(params.row_starts(), idx)
        limits = sl.gather(params.row_limits(), idx)
        op = make_op("RaggedRange", [starts, limits, _int64(1)], name=name or "RaggedGather")
        vals = params.values
        inner = ragged_gather(vals, op.outputs[1]) if isinstance(vals, RaggedTensor) else \
            sl.gather(vals, op.outputs[1])
        return RaggedTensor.from_row_splits(inner, op.outputs[0], validate=False)


def boolean_mask(data: Any, mask: Any, name: Optional[str] = None) -> RaggedTensor:
    """tf.ragged.boolean_mask for a 2-D dense data and mask: each row keeps its entries where
    mask is true (a RaggedTensor)."""
    d = _g.convert_to_tensor(data)
    with d.graph.as_default():
        a, m, _, _, ix = _ops()[:5]
        mk = _g.convert_to_tensor(mask, dtype=_dt.bool_)
        if mk.shape.rank != 2:
            raise NotImplementedError("tf.ragged.boolean_mask: only a 2-D dense mask is supported")
        from .array_ops import where
        coords = where(mk)
        n = a.shape(mk, out_type=_I64)[0]
        return RaggedTensor.from_value_rowids(ix.gather_nd(d, coords), coords[:, 0], n, validate=False)


# -- stack -------------------------------------------------------------------------------------


def _as_ragged(x: Any, ragged_rank: int) -> RaggedTensor:
    if isinstance(x, RaggedTensor):
        if x.ragged_rank != ragged_rank:
            raise ValueError(f"ragged.stack: all inputs need ragged_rank {ragged_rank}, got {x.ragged_rank}")
        return x
    return RaggedTensor.from_tensor(_g.convert_to_tensor(x), ragged_rank=ragged_rank)


def _concat_rows(rts: Sequence[RaggedTensor]) -> RaggedTensor:
    """The rows of rts one after the other (axis-0 concatenation)."""
    a = _ops()[0]
    if isinstance(rts[0].values, RaggedTensor):
        vals = _concat_rows([r.values for r in rts])
    else:
        vals = a.concat([r.values for r in rts], 0)
    parts, offset = [rts[0].row_splits], rts[0].row_splits[-1]
    for r in rts[1:]:
        parts.append(r.row_splits[1:] + offset)
        offset = offset + r.row_splits[-1]
    return RaggedTensor.from_row_splits(vals, a.concat(parts, 0), validate=False)


def stack(values: Sequence[Any], axis: int = 0, name: Optional[str] = None) -> RaggedTensor:
    """tf.ragged.stack: the inputs (RaggedTensors, or dense tensors made ragged) stacked along a
    new axis 0 (one row per input) or axis 1 (row i holds every input's row i)."""
    values = list(values)
    if not values:
        raise ValueError("ragged.stack needs at least one input")
    rr = max([v.ragged_rank for v in values if isinstance(v, RaggedTensor)], default=1)
    g = next((v.graph for v in values if isinstance(v, (RaggedTensor, _g.Tensor))), _g.get_default_graph())
    with g.as_default():
        rts = [_as_ragged(v, rr) for v in values]
        a, m, _, sl = _ops()[:4]
        allrows = _concat_rows(rts)
        counts = a.stack([r.nrows() for r in rts])
        from .scan_ops import cumsum
        if axis == 0:
            splits = a.concat([np.zeros(1, np.int64), cumsum(counts)], 0)
            return RaggedTensor.from_row_splits(allrows, splits, validate=False)
        if axis == 1:
            from .misc_ops import range as _range
            k = len(rts)
            n = rts[0].nrows()
            starts = cumsum(counts, exclusive=True)                  # where each input's rows begin
            # row i of input t is row starts[t] + i of allrows; take them i-major
            order = a.reshape(a.expand_dims(_range(0, n, dtype=_I64), 1) + a.expand_dims(starts, 0), [-1])
            picked = ragged_gather(allrows, order)
            from .ragged_tensor import _uniform
            return RaggedTensor.from_row_splits(picked, _uniform(n, np.int64(k)), validate=False)
        raise NotImplementedError(f"ragged.stack: axis={axis} is not supported (0 or 1)")


# -- operators ---------------------------------------------------------------------------------


def _binary(fn: Callable[[Any, Any], Any], reverse: bool = False) -> Callable[[Any, Any], Any]:
    def method(self: RaggedTensor, other: Any) -> Any:
        with self.graph.as_default():
            if isinstance(other, RaggedTensor):
                splits = _same_splits(self, other)
                ov = other.flat_values
            else:
                splits = list(self.nested_row_splits)
                ov = other if isinstance(other, _g.Tensor) else _g.convert_to_tensor(other, dtype=self.dtype) \
                    if not isinstance(other, (bool, np.bool_)) else _g.convert_to_tensor(other)
                inner_rank = self.flat_values.shape.rank
                if ov.shape.rank is not None and inner_rank is not None and ov.shape.rank > inner_rank - 1:
                    raise ValueError(f"a dense operand of a RaggedTensor must broadcast against its inner "
                                     f"dimensions {self.flat_values.shape[1:]}, got shape {ov.shape}")
            x = self.flat_values
            out = fn(ov, x) if reverse else fn(x, ov)
            return _rebuild(splits, out)
    return method


def _install_operators() -> None:
    import operator as o
    pairs = {"add": o.add, "sub": o.sub, "mul": o.mul, "truediv": o.truediv, "floordiv": o.floordiv,
             "mod": o.mod, "pow": o.pow, "and": o.and_, "or": o.or_, "xor": o.xor}
    for nm, f in pairs.items():
        setattr(RaggedTensor, f"__{nm}__", _binary(f))
        setattr(RaggedTensor, f"__r{nm}__", _binary(f, reverse=True))
    RaggedTensor.__div__ = RaggedTensor.__truediv__
    for nm, f in {"lt": o.lt, "le": o.le, "gt": o.gt, "ge": o.ge}.items():
        setattr(RaggedTensor, f"__{nm}__", _binary(f))
    for nm, f in {"neg": o.neg, "abs": abs, "invert": o.invert}.items():
        setattr(RaggedTensor, f"__{nm}__", lambda self, f=f: self.with_flat_values(f(self.flat_values)))
    RaggedTensor.__getitem__ = _getitem


def _getitem(self: RaggedTensor, key: Any) -> Any:
    """rt[i] (one row, dense for ragged_rank 1) and rt[a:b] (rows)."""
    with self.graph.as_default():
        if isinstance(key, (int, np.integer)):
            i = int(key)
            n = self.nrows()
            k = _g.convert_to_tensor(np.int64(i)) if i >= 0 else n + i
            start, limit = self._row_splits[k], self._row_splits[k + 1]
            vals = self._values
            if isinstance(vals, RaggedTensor):
                return ragged_gather(vals, ragged_range(start, limit, dtype=_I64).values)
            return vals[start:limit]
        if isinstance(key, slice) and key.step in (None, 1):
            from .misc_ops import range as _range
            n = self.nrows()
            lo = 0 if key.start is None else key.start
            hi = n if key.stop is None else key.stop
            lo_t = (n + lo if lo < 0 else _ops()[1].minimum(np.int64(lo), n)) if isinstance(lo, int) else lo
            hi_t = (n + hi if isinstance(hi, int) and hi < 0 else
                    (_ops()[1].minimum(np.int64(hi), n) if isinstance(hi, int) else hi))
            return ragged_gather(self, _range(lo_t, _ops()[1].maximum(hi_t, lo_t), dtype=_I64))
        raise NotImplementedError(f"RaggedTensor indexing with {key!r} is not supported (use rt[i] or rt[a:b])")


_install_operators()
