"""Kernels of Cumsum and Cumprod (graph/ops/scan_ops.py) on `xp`."""
from __future__ import annotations

from typing import Any

from .registry import KernelContext, register_kernel


def _scan(op: Any, ctx: KernelContext, fn_name: str, identity: int) -> Any:
    xp = ctx.xp
    fn = getattr(xp, fn_name)
    axis, exclusive, reverse = op.attrs["axis"], op.attrs["exclusive"], op.attrs["reverse"]
    dt = op.outputs[0].dtype.np

    def run(x: Any) -> Any:
        ax = axis % x.ndim if x.ndim else 0
        if x.ndim == 0:
            return xp.array(x, dtype=dt) if not exclusive else xp.full((), identity, dtype=dt)
        v = xp.flip(x, ax) if reverse else x
        r = fn(v, axis=ax, dtype=dt)
        if exclusive and r.shape[ax]:  # shift by one along the axis, the identity first (none: empty)
            r = xp.roll(r, 1, axis=ax)
            idx = [slice(None)] * x.ndim
            idx[ax] = 0
            r[tuple(idx)] = identity
        return xp.ascontiguousarray(xp.flip(r, ax)) if reverse else r
    return run


register_kernel("Cumsum")(lambda op, ctx: _scan(op, ctx, "cumsum", 0))
register_kernel("Cumprod")(lambda op, ctx: _scan(op, ctx, "cumprod", 1))
