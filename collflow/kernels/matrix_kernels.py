"""Kernels of graph/ops/matrix_ops.py (Einsum, Eye and the diagonal ops), written once
against `xp`.

Einsum hands the normalized equation to xp.einsum; with two or more operands it lets the
array library choose a contraction order and use BLAS (optimize=True), which matters for
matrix-product-like equations.
"""
from __future__ import annotations

from typing import Any

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel


@register_kernel("Einsum")
def _einsum(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    eq = op.attrs["equation"]
    ins = op.attrs["inputs"]
    bcast = set(op.attrs["broadcast"])
    optimize = len(op.inputs) > 1

    def check(operands: Any) -> None:
        sizes: dict = {}
        for a, labels in zip(operands, ins):
            for c, d in zip(labels, a.shape):
                have = sizes.setdefault(c, d)
                if have != d and not (c in bcast and 1 in (have, d)):
                    raise InvalidArgumentError(
                        f"einsum {eq}: label {c!r} has size {have} in one operand and {d} in another "
                        f"(shapes {[tuple(x.shape) for x in operands]})", op)
                if have == 1:
                    sizes[c] = d

    def einsum(*operands: Any) -> Any:
        check(operands)
        return xp.asarray(xp.einsum(eq, *operands, optimize=optimize))
    return einsum


@register_kernel("MatrixTranspose")
def _matrix_transpose(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def matrix_transpose(x: Any) -> Any:
        if x.ndim < 2:
            raise InvalidArgumentError(f"matrix_transpose: needs a tensor of rank >= 2, got shape {tuple(x.shape)}", op)
        return xp.swapaxes(x, -1, -2)  # a view
    return matrix_transpose


@register_kernel("Eye")
def _eye(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    dt = op.attrs["dtype"].np
    batch = tuple(op.attrs["batch_shape"])

    def eye(rows: Any, cols: Any) -> Any:
        r, c = int(rows), int(cols)
        if r < 0 or c < 0:
            raise InvalidArgumentError(f"eye: num_rows and num_columns must be non-negative, got {r} and {c}", op)
        m = xp.eye(r, c, dtype=dt)
        return xp.ascontiguousarray(xp.broadcast_to(m, batch + (r, c))) if batch else m
    return eye


@register_kernel("Diag")
def _diag(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def diag(d: Any) -> Any:
        n = d.size
        out = xp.zeros(n * n, dtype=d.dtype)
        out[::n + 1] = d.reshape(-1)   # flat position i * n + i holds element i
        return out.reshape(d.shape + d.shape)
    return diag


@register_kernel("DiagPart")
def _diag_part(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def diag_part(x: Any) -> Any:
        half = x.ndim // 2
        if x.shape[:half] != x.shape[half:]:
            raise InvalidArgumentError(f"diag_part needs shape [d1..dk, d1..dk], got {tuple(x.shape)}", op)
        n = 1
        for d in x.shape[:half]:
            n *= d
        return xp.ascontiguousarray(x.reshape(n * n)[::n + 1]).reshape(x.shape[:half])
    return diag_part


@register_kernel("MatrixDiag")
def _matrix_diag(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def matrix_diag(d: Any) -> Any:
        n = d.shape[-1]
        out = xp.zeros(d.shape + (n,), dtype=d.dtype)
        if out.size:
            out.reshape(-1, n * n)[:, ::n + 1] = d.reshape(-1, n)
        return out
    return matrix_diag


@register_kernel("MatrixDiagPart")
def _matrix_diag_part(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    return lambda x: xp.ascontiguousarray(xp.diagonal(x, axis1=-2, axis2=-1))


@register_kernel("MatrixSetDiag")
def _matrix_set_diag(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def matrix_set_diag(x: Any, d: Any) -> Any:
        m, n = x.shape[-2:]
        k = min(m, n)
        if tuple(d.shape) != tuple(x.shape[:-2]) + (k,):
            raise InvalidArgumentError(f"matrix_set_diag: diagonal of shape {tuple(d.shape)} does not fit an input "
                                       f"of shape {tuple(x.shape)} (expected {tuple(x.shape[:-2]) + (k,)})", op)
        out = x.copy(order="C")   # C order: the reshape below is a view of it
        if out.size:
            # the main diagonal of an m x n matrix: flat positions i * (n + 1), i < min(m, n)
            out.reshape(-1, m * n)[:, :k * (n + 1):n + 1] = d.reshape(-1, k)
        return out
    return matrix_set_diag


@register_kernel("Qr")
def _qr(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    mode = "complete" if op.attrs["full_matrices"] else "reduced"

    def qr(a: Any) -> Any:
        q, r = xp.linalg.qr(a, mode=mode)
        return q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)
    return qr

