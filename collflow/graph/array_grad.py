"""Gradients of the array ops: one rule per op, built from the same ops.

Rules that need a forward tensor's shape use the `*_like` helpers, which become static
ops (and let the forward tensor be freed early) whenever that shape is fully known.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from . import graph as _g
from .indexed_slices import IndexedSlices
from .registry import register_gradient as reg
from .ops import array_ops as a
from .ops import math_ops as m
from .ops.slicing_ops import _slice_key
from .ops.constant_op import constant
from .ops.op_util import single

# -- creation and selection --------------------------------------------------------------
reg("Fill")(lambda op, g: [None, m.reduce_sum(g)])
# Select broadcasts its three operands plainly: its gradient must too (where_v2, never TF1
# where's rank-1 row rule, which would misread a condition shaped like g's first axis)
reg("Select")(lambda op, g: [None,
                             m.sum_to_shape_of(a.where_v2(op.inputs[0], g, a.zeros_like(g)), op.inputs[1]),
                             m.sum_to_shape_of(a.where_v2(op.inputs[0], a.zeros_like(g), g), op.inputs[2])])
reg("IdentityN")(lambda op, *gs: list(gs))

# -- reshaping ---------------------------------------------------------------------------
reg("Reshape")(lambda op, g: [a.reshape_like(g, op.inputs[0])])
reg("ReshapeLike")(lambda op, g: [a.reshape_like(g, op.inputs[0]), None])
reg("ReshapeRows")(lambda op, g: [a.reshape_like(g, op.inputs[0]), None])
reg("ExpandDims")(lambda op, g: [a.squeeze(g, [op.attrs["axis"]])])
reg("Squeeze")(lambda op, g: [a.reshape_like(g, op.inputs[0])])
reg("ExpandReduced")(lambda op, g: [a.reshape_like(g, op.inputs[0]), None])
reg("Transpose")(lambda op, g: [a.transpose(g, None if op.attrs["perm"] is None
                                            else [int(i) for i in np.argsort(op.attrs["perm"])])])

# -- broadcasting and tiling -------------------------------------------------------------
reg("BroadcastLike")(lambda op, g: [m.sum_to_shape_of(g, op.inputs[0]), None])
reg("BroadcastTo")(lambda op, g: [m.sum_to_shape_of(g, op.inputs[0])])
reg("Tile")(lambda op, g: [a.tile_grad(g, op.inputs[0], op.attrs["multiples"])])
reg("TileGrad")(lambda op, g: [a.tile(g, op.attrs["multiples"])] + [None] * (len(op.inputs) - 1))

# -- joining and splitting ---------------------------------------------------------------
reg("ConcatV2")(lambda op, g: a.split_like(g, op.inputs, op.attrs["axis"]))
reg("SplitLike")(lambda op, *gs: [a.concat(gs, op.attrs["axis"])] + [None] * (len(op.inputs) - 1))
reg("Split")(lambda op, *gs: [a.concat(gs, op.attrs["axis"])])
reg("SplitV")(lambda op, *gs: [a.concat(gs, op.attrs["axis"])])
reg("Pack")(lambda op, g: a.unstack(g, num=len(op.inputs), axis=op.attrs["axis"]))
reg("Unpack")(lambda op, *gs: [a.stack(gs, axis=op.attrs["axis"])])

# -- slicing and padding -----------------------------------------------------------------
reg("StridedSlice")(lambda op, g: [a.strided_slice_grad(g, op.inputs[0], op.attrs["key"])])


@reg("SliceAxis")
def _slice_axis_grad(op: Any, g: Any) -> list:
    from .ops.array_util import _like_inputs
    x, start, stop = op.inputs
    extra, dims = _like_inputs(x)
    attrs = {k: op.attrs[k] for k in ("axis", "has_start", "has_stop", "step")}
    return [single("SliceAxisGrad", [g, start, stop] + extra, dict(attrs, shape=dims)), None, None]


reg("SliceAxisGrad")(lambda op, g: [single("SliceAxis", [g, op.inputs[1], op.inputs[2]],
                                           {k: op.attrs[k] for k in ("axis", "has_start", "has_stop", "step")}),
                                    None, None] + [None] * (len(op.inputs) - 3))
reg("StridedSliceGrad")(lambda op, g: [single("StridedSlice", [g], {"key": op.attrs["key"]})]
                        + [None] * (len(op.inputs) - 1))
reg("Slice")(lambda op, g: [a.strided_slice_grad(g, op.inputs[0], _slice_key(op.attrs["begin"], op.attrs["size"]))])
reg("MirrorPad")(lambda op, g: [a.mirror_pad_grad(g, op.attrs["paddings"], op.attrs["mode"])])
reg("MirrorPadGrad")(lambda op, g: [single("MirrorPad", [g], {"paddings": op.attrs["paddings"],
                                                              "mode": op.attrs["mode"]})])


@reg("PadV2")
def _pad_grad(op: Any, g: Any) -> list:
    # the centre of g (negative stops: no need to know the padded shape); TF's PadV2 gradient
    # gives none for constant_values (tf.gradients returns None for it)
    key = tuple(slice(p0, -p1 if p1 else None) for p0, p1 in op.attrs["paddings"])
    return [single("StridedSlice", [g], {"key": key}), None]


# -- gathering and scattering ------------------------------------------------------------


@reg("GatherV2")
def _gather_grad(op: Any, g: Any) -> list:
    params, idx = op.inputs
    if isinstance(g, IndexedSlices):  # a gather of a gather: densify the outer one's gradient
        g = _g.convert_to_tensor(g)
    axis = op.attrs["axis"]
    prank = params.shape.rank
    if axis < 0 and prank is not None:
        axis %= prank
    if axis != 0:
        return [a.scatter_like(g, idx, params, axis), None]
    # axis 0: one gradient row per index, a sparse gradient of params
    flat_idx = idx if idx.shape.rank == 1 else a.reshape(idx, [-1])
    inner = list(params.shape.dims[1:]) if prank is not None else None
    if idx.shape.rank == 1:
        vals = g
    elif idx.shape.is_fully_defined() and inner is not None and None not in inner:
        vals = a.reshape(g, [idx.shape.num_elements()] + inner)
    elif inner is not None and None not in inner and 0 not in inner:  # -1 is ambiguous with a 0 beside it
        vals = a.reshape(g, [-1] + inner)
    else:
        vals = a.reshape_rows(g, idx)
    # int32, as TF1's gather gradient gives it (a fetched IndexedSlicesValue's dense_shape)
    if params.shape.is_fully_defined():
        dense_shape = constant(np.asarray(params.shape.dims, dtype=np.int32), name="dense_shape")
    else:
        dense_shape = a.shape(params, out_type=_dt.int32)
    return [IndexedSlices(vals, flat_idx, dense_shape, params.shape), None]


reg("ScatterLike")(lambda op, g: [a.gather(g, op.inputs[1], axis=op.attrs["axis"]), None] + [None] * (len(op.inputs) - 2))
