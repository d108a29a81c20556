"""Kernels of ReverseV2 and ReverseSequence (collflow/graph/ops/reverse_ops.py)."""
from __future__ import annotations

from typing import Any

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel


@register_kernel("ReverseV2")
def _reverse(op: Any, ctx: KernelContext) -> Any:
    xp, axes = ctx.xp, tuple(op.attrs["axis"])

    def reverse(x: Any) -> Any:
        if any(not -x.ndim <= a < x.ndim for a in axes):
            raise InvalidArgumentError(f"reverse: axis {list(axes)} out of range for shape {tuple(x.shape)}", op)
        return xp.flip(x, axes) if axes else x  # a view
    return reverse


@register_kernel("ReverseSequence")
def _reverse_sequence(op: Any, ctx: KernelContext) -> Any:
    xp, s_ax, b_ax = ctx.xp, op.attrs["seq_axis"], op.attrs["batch_axis"]

    def reverse_sequence(x: Any, lengths: Any) -> Any:
        s, b = s_ax % x.ndim, b_ax % x.ndim
        n_b, n_t = x.shape[b], x.shape[s]
        lengths = xp.asarray(lengths).astype(xp.int64)
        if lengths.shape != (n_b,):
            raise InvalidArgumentError(f"reverse_sequence: seq_lengths has shape {tuple(lengths.shape)}, the "
                                       f"batch dimension (axis {b}) has {n_b} entries", op)
        if n_b and (int(lengths.min()) < 0 or int(lengths.max()) > n_t):
            raise InvalidArgumentError(f"reverse_sequence: seq_lengths must lie in [0, {n_t}] (the size of the "
                                       f"sequence axis {s}), got {lengths.tolist()}", op)
        t = xp.arange(n_t)[None, :]
        ln = lengths[:, None]
        src = xp.where(t < ln, ln - 1 - t, t)           # [batch, time]: where each entry comes from
        xm = xp.moveaxis(x, (b, s), (0, 1))
        idx = src.reshape(src.shape + (1,) * (x.ndim - 2))
        out = xp.take_along_axis(xm, idx, axis=1)
        return xp.ascontiguousarray(xp.moveaxis(out, (0, 1), (b, s)))
    return reverse_sequence
