"""Kernels for IndexedSlices densification."""
from __future__ import annotations

from typing import Any

from .registry import register_kernel, KernelContext


def scatter_add_rows(xp: Any, out: Any, indices: Any, values: Any) -> None:
    """out[indices] += values with duplicate indices accumulating."""
    if xp.__name__ == "numpy":
        if values.ndim == 1:
            out += xp.bincount(indices, weights=values, minlength=out.shape[0]).astype(out.dtype)
        else:
            xp.add.at(out, indices, values)
    else:
        xp.add.at(out, indices, values)


@register_kernel("IndexedSlicesToDense")
def _to_dense(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def to_dense(values: Any, indices: Any, dense_shape: Any) -> Any:
        shape = tuple(int(d) for d in dense_shape)
        out = xp.zeros(shape, dtype=values.dtype)
        idx = indices.reshape(-1)
        # the row count from the indices: -1 cannot be inferred for zero-width rows
        scatter_add_rows(xp, out, idx, values.reshape((idx.shape[0],) + shape[1:]))
        return out
    return to_dense


register_kernel("DenseGradIdentity")(lambda op, ctx: lambda x: x)
