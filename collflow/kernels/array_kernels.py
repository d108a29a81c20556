"""Kernels of the array ops, written once against `xp`."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .registry import register_kernel, KernelContext


@register_kernel("ZerosLike")
def _zeros_like(op: Any, ctx: KernelContext) -> Any:
    xp, dt = ctx.xp, op.outputs[0].dtype.np
    return lambda x: xp.zeros(x.shape, dtype=dt)


@register_kernel("OnesLike")
def _ones_like(op: Any, ctx: KernelContext) -> Any:
    xp, dt = ctx.xp, op.outputs[0].dtype.np
    return lambda x: xp.ones(x.shape, dtype=dt)


@register_kernel("Fill")
def _fill(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    return lambda dims, v: xp.full(tuple(int(d) for d in dims), v, dtype=op.outputs[0].dtype.np)


register_kernel("Select")(lambda op, ctx: ctx.xp.where)


@register_kernel("Reshape")
def _reshape(op: Any, ctx: KernelContext) -> Any:
    shape = op.attrs["shape"]

    def reshape(x: Any) -> Any:
        try:
            return x.reshape(shape)
        except ValueError:
            raise InvalidArgumentError(
                f"cannot reshape a tensor of shape {tuple(x.shape)} ({x.size} elements) to {list(shape)}", op) from None
    return reshape


@register_kernel("Shape")
def _shape(op: Any, ctx: KernelContext) -> Any:
    xp, dt = ctx.xp, op.attrs["out_type"].np
    return lambda x: xp.asarray(x.shape, dtype=dt)


@register_kernel("Size")
def _size(op: Any, ctx: KernelContext) -> Any:
    xp, dt = ctx.xp, op.attrs["out_type"].np
    return lambda x: xp.asarray(x.size, dtype=dt)


@register_kernel("Rank")
def _rank(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    return lambda x: xp.asarray(x.ndim, dtype=np.int32)


@register_kernel("ConcatV2")
def _concat(op: Any, ctx: KernelContext) -> Any:
    xp, axis = ctx.xp, op.attrs["axis"]
    return lambda *xs: xp.concatenate(xs, axis=axis)


@register_kernel("GatherV2")
def _gather(op: Any, ctx: KernelContext) -> Any:
    xp, axis = ctx.xp, op.attrs["axis"]

    def gather(params: Any, idx: Any) -> Any:
        n = params.shape[axis]
        if idx.size and (int(idx.min()) < -n or int(idx.max()) >= n):
            bad = idx[(idx < -n) | (idx >= n)].ravel()[0]
            raise InvalidArgumentError(f"gather: index {int(bad)} is out of range [0, {n}) for params of "
                                       f"shape {tuple(params.shape)}", op)
        return xp.take(params, idx, axis=axis)
    return gather


@register_kernel("BroadcastLike")
def _bcast_like(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    # a read-only view is fine: kernels never write into their inputs
    return lambda x, like: xp.broadcast_to(x, like.shape)


@register_kernel("BroadcastTo")
def _bcast_to(op: Any, ctx: KernelContext) -> Any:
    xp, shape = ctx.xp, op.attrs["shape"]
    return lambda x: xp.broadcast_to(x, shape)


@register_kernel("SizeRatio")
def _size_ratio(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    return lambda x, y: xp.asarray(x.size // max(y.size, 1), dtype=np.int64)


@register_kernel("ExpandReduced")
def _expand_reduced(op: Any, ctx: KernelContext) -> Any:
    axis = op.attrs["axis"]

    def expand(t: Any, x: Any) -> Any:
        nd = x.ndim
        axes = range(nd) if axis is None else {a % nd for a in ((axis,) if isinstance(axis, int) else axis)}
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        return t.reshape(shape)
    return expand
