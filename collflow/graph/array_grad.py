"""Gradients of the array ops: one rule per op."""
from __future__ import annotations

from typing import Any

from ..graph import graph as _g
from .indexed_slices import IndexedSlices
from .registry import register_gradient as reg
from .ops import array_ops as a
from .ops import math_ops as m

reg("Fill")(lambda op, g: [None, m.reduce_sum(g)])
reg("Select")(lambda op, g: [None,
                             m.sum_to_shape_of(a.where(op.inputs[0], g, a.zeros_like(g)), op.inputs[1]),
                             m.sum_to_shape_of(a.where(op.inputs[0], a.zeros_like(g), g), op.inputs[2])])
reg("Reshape")(lambda op, g: [a.reshape_like(g, op.inputs[0])])
reg("BroadcastLike")(lambda op, g: [m.sum_to_shape_of(g, op.inputs[0]), None])
reg("BroadcastTo")(lambda op, g: [m.sum_to_shape_of(g, op.inputs[0])])
reg("ExpandReduced")(lambda op, g: [a.reshape_like(g, op.inputs[0]), None])


@reg("ConcatV2")
def _concat_grad(op: Any, g: Any) -> list:
    return list(a.split_like(g, op.inputs, op.attrs["axis"]))


@reg("GatherV2")
def _gather_grad(op: Any, g: Any) -> list:
    params, idx = op.inputs
    if op.attrs["axis"] != 0:
        return [a.scatter_like(g, idx, params, op.attrs["axis"]), None]
    # rows of the gradient, one per index: a sparse gradient of params
    flat_idx = a.reshape(idx, [-1])
    inner = list(params.shape.dims[1:]) if params.shape.rank is not None else None
    vals = a.reshape(g, [-1] + [(-1 if d is None else d) for d in inner]) if inner is not None and inner.count(None) <= 1 \
        else a.reshape_rows(g, idx)
    return [IndexedSlices(vals, flat_idx, a.shape(params, out_type="int64"), params.shape), None]
