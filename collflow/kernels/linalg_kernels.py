"""Kernels of the square-matrix ops of graph/ops/linalg_ops.py, written once against `xp`
(numpy.linalg or cupy.linalg), batches included.

A singular matrix (inverse, solve) or one that is not positive definite (Cholesky) is an
InvalidArgumentError with TF's wording, not a LinAlgError from deep inside.  NumPy has no
triangular solve of its own: MatrixTriangularSolve solves with the triangle it reads (the
other zeroed), which is what TF computes.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel


def _check_square(op: Any, a: Any) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise InvalidArgumentError(f"{op.type}: input must be square matrices [..., M, M], got shape {tuple(a.shape)}",
                                   op)


def _lin_alg_error(xp: Any) -> tuple:
    errs = [np.linalg.LinAlgError]
    err = getattr(getattr(xp, "linalg", None), "LinAlgError", None)
    if err is not None and err not in errs:
        errs.append(err)
    return tuple(errs)


def _checked(xp: Any, op: Any, errs: tuple, compute: Any, message: str) -> Any:
    """compute(), or InvalidArgumentError(message) where it fails: NumPy raises LinAlgError,
    CuPy returns inf/NaN instead (checked there)."""
    try:
        out = compute()
    except errs:
        out = None
    if out is None or (xp is not np and not bool(xp.isfinite(out).all())):
        raise InvalidArgumentError(f"{op.type}: {message}", op)
    return out


def _adj(xp: Any, a: Any) -> Any:
    """The adjoint of each matrix: the transpose, conjugated for complex ones."""
    t = xp.swapaxes(a, -1, -2)
    return xp.conj(t) if xp.iscomplexobj(t) else t


def _band_mask(xp: Any, m: int, n: int, num_lower: int, num_upper: int) -> Any:
    """[m, n] bools: True inside the band i - j <= num_lower, j - i <= num_upper (a negative
    count: that whole triangle)."""
    i, j = xp.arange(m)[:, None], xp.arange(n)[None, :]
    keep = xp.ones((m, n), dtype=bool)
    if num_lower >= 0:
        keep &= (i - j) <= num_lower
    if num_upper >= 0:
        keep &= (j - i) <= num_upper
    return keep


@register_kernel("MatrixInverse")
def _inverse(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    adjoint = op.attrs["adjoint"]
    errs = _lin_alg_error(xp)

    def matrix_inverse(a: Any) -> Any:
        _check_square(op, a)
        if adjoint:
            a = _adj(xp, a)
        return _checked(xp, op, errs, lambda: xp.linalg.inv(a), "Input is not invertible.")
    return matrix_inverse


@register_kernel("MatrixDeterminant")
def _det(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def matrix_determinant(a: Any) -> Any:
        _check_square(op, a)
        return xp.asarray(xp.linalg.det(a), dtype=a.dtype)
    return matrix_determinant


@register_kernel("LogMatrixDeterminant")
def _slogdet(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def log_matrix_determinant(a: Any) -> Any:
        _check_square(op, a)
        sign, logabs = xp.linalg.slogdet(a)
        return xp.asarray(sign, dtype=a.dtype), xp.asarray(logabs, dtype=a.dtype)
    return log_matrix_determinant


@register_kernel("Cholesky")
def _cholesky(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    errs = _lin_alg_error(xp)

    def cholesky(a: Any) -> Any:
        _check_square(op, a)
        return _checked(xp, op, errs, lambda: xp.linalg.cholesky(a), "Cholesky decomposition was not successful. "
                        "The input might not be valid (symmetric positive definite).")
    return cholesky


def _check_rhs(op: Any, a: Any, b: Any) -> None:
    _check_square(op, a)
    if b.ndim < 2 or b.shape[-2] != a.shape[-1] or b.shape[:-2] != a.shape[:-2]:
        raise InvalidArgumentError(f"{op.type}: matrix of shape {tuple(a.shape)} and rhs of shape {tuple(b.shape)} "
                                   "do not fit ([..., M, M] and [..., M, K], one batch)", op)


@register_kernel("MatrixSolve")
def _solve(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    adjoint = op.attrs["adjoint"]
    errs = _lin_alg_error(xp)

    def matrix_solve(a: Any, b: Any) -> Any:
        _check_rhs(op, a, b)
        if adjoint:
            a = _adj(xp, a)
        return _checked(xp, op, errs, lambda: xp.linalg.solve(a, b), "Input matrix is not invertible.")
    return matrix_solve


@register_kernel("MatrixTriangularSolve")
def _triangular_solve(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    lower, adjoint = op.attrs["lower"], op.attrs["adjoint"]
    errs = _lin_alg_error(xp)

    def matrix_triangular_solve(a: Any, b: Any) -> Any:
        _check_rhs(op, a, b)
        m = a.shape[-1]
        # the triangle by a mask: batches too, on any xp (CuPy's tril is 2-D only)
        t = xp.where(_band_mask(xp, m, m, -1, 0) if lower else _band_mask(xp, m, m, 0, -1), a, a.dtype.type(0))
        if adjoint:
            t = _adj(xp, t)
        return _checked(xp, op, errs, lambda: xp.linalg.solve(t, b),
                        "the triangular matrix is singular (a zero on its diagonal).")
    return matrix_triangular_solve


@register_kernel("MatrixBandPart")
def _band_part(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    lo, hi = op.attrs["num_lower"], op.attrs["num_upper"]

    def matrix_band_part(x: Any) -> Any:
        if x.ndim < 2:
            raise InvalidArgumentError(f"{op.type}: input must be at least a matrix, got shape {tuple(x.shape)}", op)
        m, n = x.shape[-2:]
        # TF's kernel refuses a band wider than the matrix (a negative width means all of it)
        if lo > m or hi > n:
            raise InvalidArgumentError(f"{op.type}: num_lower ({lo}) must be negative or at most the number of rows "
                                       f"({m}) and num_upper ({hi}) negative or at most the number of columns "
                                       f"({n})", op)
        return xp.where(_band_mask(xp, m, n, lo, hi), x, x.dtype.type(0))
    return matrix_band_part


@register_kernel("SelfAdjointEigV2")
def _self_adjoint_eig(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    compute_v = op.attrs["compute_v"]

    def self_adjoint_eig(a: Any) -> Any:
        _check_square(op, a)
        e, v = xp.linalg.eigh(a, UPLO="L")         # ascending, the lower triangle read (as TF)
        e = e.astype(a.dtype, copy=False)          # Hermitian input: TF's e is complex too
        return (e, v) if compute_v else (e, xp.zeros((0,), dtype=a.dtype))
    return self_adjoint_eig


@register_kernel("Svd")
def _svd(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    compute_uv, full = op.attrs["compute_uv"], op.attrs["full_matrices"]

    def svd(a: Any) -> Any:
        if a.ndim < 2:
            raise InvalidArgumentError(f"Svd: input must be matrices [..., M, N], got shape {tuple(a.shape)}", op)
        empty = xp.zeros((0,), dtype=a.dtype)
        if not compute_uv:
            return xp.linalg.svd(a, compute_uv=False), empty, empty
        u, s, vh = xp.linalg.svd(a, full_matrices=full)
        return s, u, _adj(xp, vh)                  # v = vh^H (s real for complex a, as TF)
    return svd


# sqrtm and matrix_solve_ls(fast=False) kernels live beside these
import importlib as _importlib  # noqa: E402  (imported for its kernel registrations)
_importlib.import_module(".linalg_more_kernels", __package__)
