"""Kernel of Multinomial (graph/ops/categorical_ops.py), drawing from the op's random stream.

Inverse-CDF sampling of all rows at once: each row's cumulative probabilities, shifted by the
row's number, lie in their own interval [i, i + 1], so one sorted search over the whole table
answers every row's uniforms.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .random_kernels import stream_for
from .registry import KernelContext, register_kernel


@register_kernel("Multinomial")
def _multinomial(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    st = stream_for(op, ctx)
    dt = op.attrs["output_dtype"].np

    def multinomial(logits: Any, num_samples: Any) -> Any:
        k = int(num_samples)
        if k < 0:
            raise InvalidArgumentError(f"multinomial: num_samples must be non-negative, got {k}", op)
        b, c = logits.shape
        if c == 0 and b and k:
            raise InvalidArgumentError("multinomial: num_classes should be positive, got 0", op)
        if b == 0 or k == 0:
            return xp.zeros((b, k), dtype=dt)
        z = logits.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            z -= z.max(axis=1, keepdims=True)     # a row of -inf logits gives NaN: checked below
            p = xp.exp(z)
        cdf = xp.cumsum(p, axis=1)
        total = cdf[:, -1:]
        if not bool(xp.isfinite(total).all() and (total > 0).all()):
            raise InvalidArgumentError("multinomial: every row of logits needs a finite maximum (a row of -inf or "
                                       "NaN logits has no distribution)", op)
        cdf /= total
        cdf[:, -1] = 1.0                          # no uniform in [0, 1) falls past the last class
        rows = xp.arange(b, dtype=np.float64)[:, None]
        u = st.uniform((b, k), np.float64) + rows
        flat = xp.searchsorted((cdf + rows).reshape(-1), u.reshape(-1), side="right").reshape(b, k)
        # a uniform that rounded up to its row's upper end would land in the next row: clip
        return xp.clip(flat - xp.arange(b)[:, None] * c, 0, c - 1).astype(dt)
    return multinomial
