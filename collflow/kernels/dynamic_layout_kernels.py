"""Kernels of transpose and expand_dims with a run-time permutation or axis
(graph/ops/dynamic_layout_ops.py), with TF's checks and messages."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel


@register_kernel("TransposeDynamic")
def _transpose(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def transpose(x: Any, perm: Any) -> Any:
        p = [int(v) for v in np.asarray(perm).reshape(-1)]
        n = x.ndim
        if len(p) != n:
            raise InvalidArgumentError(f"transpose expects a vector of size {n}. But input(1) is a vector of size "
                                       f"{len(p)}", op)
        for v in p:
            if not 0 <= v < n:
                raise InvalidArgumentError(f"{v} is out of range [0 .. {n})", op)
        missing = sorted(set(range(n)) - set(p))
        if missing:
            raise InvalidArgumentError(f"{missing[0]} is missing from {{{','.join(map(str, p))}}}.", op)
        return xp.transpose(x, p)  # a view, as the static Transpose's
    return transpose


@register_kernel("ExpandDimsDynamic")
def _expand_dims(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def expand_dims(x: Any, axis: Any) -> Any:
        a = int(np.asarray(axis).reshape(()))
        if not -x.ndim - 1 <= a <= x.ndim:
            raise InvalidArgumentError(f"Tried to expand dim index {a} for tensor with {x.ndim} dimensions.", op)
        return xp.expand_dims(x, a)
    return expand_dims
