"""Segment reductions of TensorFlow 1.x: tf.segment_sum / mean / max / min (sorted segment ids)
and tf.unsorted_segment_sum / mean / max / min (any order, a given number of segments).

Output row i reduces the rows of data whose segment id is i.  The sorted ops take 1-D ids (one
per row of data, non-decreasing) and have max(ids) + 1 rows; an empty segment gives 0.  The
unsorted ops take ids of any shape that prefixes data's, drop rows with a negative id, and
give an empty segment 0 (sum), the dtype's lowest value (max) or its highest (min).  Gradients
follow TensorFlow's rules (a max/min gradient is shared by the tied entries); kernels live in
kernels/segment_kernels.py.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from . import math_ops as _m
from .constant_op import constant
from .op_util import dense as _dense, single

__all__ = ["segment_sum", "segment_mean", "segment_max", "segment_min", "unsorted_segment_sum",
           "unsorted_segment_mean", "unsorted_segment_max", "unsorted_segment_min"]


def _check_data(data: _g.Tensor, what: str) -> None:
    if not (data.dtype.is_floating or data.dtype.is_integer):
        raise ValueError(f"{what} needs numeric data, got {data.dtype.name}")


def _segment_spec(op: _g.Operation) -> list:
    data, ids = op.inputs
    _check_data(data, op.type)
    if ids.dtype not in (_dt.int32, _dt.int64):
        raise ValueError(f"segment_ids must be int32 or int64, got {ids.dtype.name}")
    if ids.shape.rank not in (None, 1):
        raise ValueError(f"segment_ids must be 1-D, got shape {ids.shape}")
    if data.shape.rank == 0:
        raise ValueError("segment reductions need data of rank >= 1, got a scalar")
    if data.shape.rank is not None and ids.shape.rank == 1:
        n, m = data.shape.dims[0], ids.shape.dims[0]
        if n is not None and m is not None and n != m:
            raise ValueError(f"segment_ids should be the same size as dimension 0 of data: {m} ids for data of "
                             f"shape {data.shape}")
    if data.shape.rank is None:
        return [(data.dtype, TensorShape(None))]
    c = ids.op.attrs["value"] if ids.op.type == "Const" else None
    rows = (int(np.max(c)) + 1 if np.size(c) else 0) if c is not None else None
    return [(data.dtype, TensorShape([rows] + list(data.shape.dims[1:])))]


def _unsorted_spec(op: _g.Operation) -> list:
    data, ids, num = op.inputs
    _check_data(data, op.type)
    if ids.dtype not in (_dt.int32, _dt.int64):
        raise ValueError(f"segment_ids must be int32 or int64, got {ids.dtype.name}")
    if num.dtype not in (_dt.int32, _dt.int64) or num.shape.rank not in (None, 0):
        raise ValueError(f"num_segments must be an int32/int64 scalar, got {num.dtype.name} of shape {num.shape}")
    from .shape_eval import scalar_value  # num_segments = shape(x)[0] of a known dim
    n = scalar_value(num)
    if n is not None and n < 0:
        raise ValueError(f"num_segments must be non-negative, got {n}")
    if data.shape.rank is None or ids.shape.rank is None:
        return [(data.dtype, TensorShape(None))]
    r = ids.shape.rank
    if r > data.shape.rank or not TensorShape(data.shape.dims[:r]).is_compatible_with(ids.shape):
        raise ValueError(f"segment_ids.shape = {ids.shape} must be a prefix of data.shape = {data.shape}")
    return [(data.dtype, TensorShape([n] + list(data.shape.dims[r:])))]


for _n in ("SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin"):
    register_op(_n, _segment_spec)
for _n in ("UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin"):
    register_op(_n, _unsorted_spec)

# -- gradients ---------------------------------------------------------------------------------


def _per_row(x: _g.Tensor, data: _g.Tensor, ids: _g.Tensor) -> _g.Tensor:
    """x (one value per id, or per segment) with size-1 axes appended for data's dimensions
    after the ids' ones, so it broadcasts against data (or the output)."""
    if data.shape.rank is None or ids.shape.rank is None:
        raise InvalidArgumentError("segment reductions need data and segment_ids of known rank here")
    for _ in range(data.shape.rank - ids.shape.rank):
        x = _a.expand_dims(x, -1)
    return x


def _gather_drop_negatives(x: _g.Tensor, ids: _g.Tensor, data: _g.Tensor) -> Any:
    """(x gathered at ids with negative ids reading row 0, the mask of ids >= 0 shaped to broadcast)."""
    zero = constant(0, dtype=ids.dtype)
    clipped = _m.maximum(ids, zero)
    keep = _per_row(_m.greater_equal(ids, zero), data, ids)
    return _a.gather(x, clipped), keep, clipped


@register_gradient("SegmentSum")
def _segment_sum_grad(op: _g.Operation, g: Any) -> list:
    return [_a.gather(_dense(g), op.inputs[1]), None]


@register_gradient("SegmentMean")
def _segment_mean_grad(op: _g.Operation, g: Any) -> list:
    data, ids = op.inputs
    counts = segment_sum(_a.ones_like(ids, dtype=data.dtype), ids)
    # an empty segment (count 0) is never gathered: avoid 0/0 there
    counts = _per_row(_m.maximum(counts, _a.ones_like(counts)), data, ids)
    return [_a.gather(_dense(g) / counts, ids), None]


def _segment_extreme_grad(op: _g.Operation, g: Any) -> list:
    data, ids = op.inputs
    g = _dense(g)
    selected = _m.equal(data, _a.gather(op.outputs[0], ids))
    counts = segment_sum(_m.cast(selected, g.dtype), ids)
    # a tie shares the gradient; an empty segment (count 0) is never gathered, avoid 0/0 there
    share = g / _m.maximum(counts, _a.ones_like(counts))
    return [_a.where(selected, _a.gather(share, ids), _a.zeros_like(data)), None]


register_gradient("SegmentMax")(_segment_extreme_grad)
register_gradient("SegmentMin")(_segment_extreme_grad)


@register_gradient("UnsortedSegmentSum")
def _unsorted_sum_grad(op: _g.Operation, g: Any) -> list:
    data, ids, _ = op.inputs
    picked, keep, _ = _gather_drop_negatives(_dense(g), ids, data)
    return [picked * _m.cast(keep, picked.dtype), None, None]


def _unsorted_extreme_grad(op: _g.Operation, g: Any) -> list:
    data, ids, num = op.inputs
    g = _dense(g)
    out_at, keep, clipped = _gather_drop_negatives(op.outputs[0], ids, data)
    selected = _m.logical_and(_m.equal(data, out_at), keep)
    counts = unsorted_segment_sum(_m.cast(selected, g.dtype), ids, num)
    share = g / _m.maximum(counts, _a.ones_like(counts))
    return [_a.where(selected, _a.gather(share, clipped), _a.zeros_like(data)), None, None]


register_gradient("UnsortedSegmentMax")(_unsorted_extreme_grad)
register_gradient("UnsortedSegmentMin")(_unsorted_extreme_grad)

# -- constructors ------------------------------------------------------------------------------


def _sorted(op_type: str, data: Any, segment_ids: Any, name: Optional[str]) -> _g.Tensor:
    d = _g.convert_to_tensor(data)
    with d.graph.as_default():
        ids = _g.convert_to_tensor(segment_ids)
    return single(op_type, [d, ids], name=name or op_type)


def segment_sum(data: Any, segment_ids: Any, name: Optional[str] = None) -> _g.Tensor:
    """Sums of the rows of data per segment; segment_ids: 1-D, sorted, one per row of data."""
    return _sorted("SegmentSum", data, segment_ids, name)


def segment_mean(data: Any, segment_ids: Any, name: Optional[str] = None) -> _g.Tensor:
    """Means of the rows of data per segment (an empty segment gives 0)."""
    return _sorted("SegmentMean", data, segment_ids, name)


def segment_max(data: Any, segment_ids: Any, name: Optional[str] = None) -> _g.Tensor:
    """Maxima of the rows of data per segment (an empty segment gives 0)."""
    return _sorted("SegmentMax", data, segment_ids, name)


def segment_min(data: Any, segment_ids: Any, name: Optional[str] = None) -> _g.Tensor:
    """Minima of the rows of data per segment (an empty segment gives 0)."""
    return _sorted("SegmentMin", data, segment_ids, name)


def _unsorted(op_type: str, data: Any, segment_ids: Any, num_segments: Any, name: Optional[str]) -> _g.Tensor:
    d = _g.convert_to_tensor(data)
    with d.graph.as_default():
        ids = _g.convert_to_tensor(segment_ids)
        num = num_segments if isinstance(num_segments, _g.Tensor) else constant(int(num_segments),
                                                                               dtype=ids.dtype, name="num_segments")
    return single(op_type, [d, ids, num], name=name or op_type)


def unsorted_segment_sum(data: Any, segment_ids: Any, num_segments: Any, name: Optional[str] = None) -> _g.Tensor:
    """Sums per segment: output[i] = sum of data[j...] over the j with segment_ids[j...] == i.

    segment_ids (any order) has a shape that prefixes data's; a negative id drops its row, an id
    >= num_segments is an error.  Output: [num_segments] + data.shape[ids.rank:].
    """
    return _unsorted("UnsortedSegmentSum", data, segment_ids, num_segments, name)


def unsorted_segment_max(data: Any, segment_ids: Any, num_segments: Any, name: Optional[str] = None) -> _g.Tensor:
    """Maxima per segment, as unsorted_segment_sum; an empty segment gives the dtype's lowest value."""
    return _unsorted("UnsortedSegmentMax", data, segment_ids, num_segments, name)


def unsorted_segment_min(data: Any, segment_ids: Any, num_segments: Any, name: Optional[str] = None) -> _g.Tensor:
    """Minima per segment, as unsorted_segment_sum; an empty segment gives the dtype's highest value."""
    return _unsorted("UnsortedSegmentMin", data, segment_ids, num_segments, name)


def unsorted_segment_mean(data: Any, segment_ids: Any, num_segments: Any, name: Optional[str] = None) -> _g.Tensor:
    """Means per segment (sum / count, an empty segment gives 0), as unsorted_segment_sum."""
    d = _g.convert_to_tensor(data)
    g = d.graph
    with g.as_default(), g.name_scope(name or "UnsortedSegmentMean"):
        ids = _g.convert_to_tensor(segment_ids)
        total = unsorted_segment_sum(d, ids, num_segments)
        num = total.op.inputs[2]
        counts = unsorted_segment_sum(_a.ones_like(ids, dtype=d.dtype), ids, num)
        counts = _per_row(_m.maximum(counts, _a.ones_like(counts)), d, ids)
        return total / counts
