"""Kernels of graph/ops/linalg_more_ops.py: the principal matrix square root (and its
gradient's Sylvester solve) and matrix_solve_ls(fast=False).

MatrixSquareRoot: the product form of the Denman-Beavers iteration with determinant scaling
(Higham, Functions of Matrices, 6.29), batched; it converges to the principal root for every
matrix without eigenvalues on the closed negative real axis, the matrices TF's real Schur
method handles.  A matrix it does not converge for (a negative or zero eigenvalue, a
singular matrix) gives NaN everywhere, as TF's result there is NaN.
MatrixSolveLs with fast=False: the minimum-norm least-squares solution pinv(A) B, singular
values below eps * min(M, N) of the largest counted as zero (TF's complete orthogonal
decomposition, whose rank threshold is the same); l2_regularizer is ignored, as TF's kernel
ignores it on this path.
Lu: Doolittle elimination with partial pivoting (the first largest |pivot|, as LAPACK getrf
and Eigen's PartialPivLU), batched, in the input's dtype.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel


def _wide(a: Any) -> Any:
    """The double-precision dtype of a's kind (complex128 for complex a)."""
    return np.complex128 if np.iscomplexobj(a) else np.float64


def _safe_inv(xp: Any, m: Any) -> Any:
    """inv of each matrix; NaN for the singular ones (NumPy refuses the whole batch)."""
    try:
        return xp.linalg.inv(m)
    except np.linalg.LinAlgError:
        out = xp.full_like(m, np.nan)
        for i in range(m.shape[0]):                      # only when some matrix is singular
            try:
                out[i] = xp.linalg.inv(m[i])
            except np.linalg.LinAlgError:
                pass
        return out


def sqrtm_values(xp: Any, a: Any) -> Any:
    """The principal square roots of a batch [..., n, n] (float64)."""
    n = a.shape[-1]
    if a.size == 0:
        return a.copy()
    flat = a.reshape(-1, n, n)
    eye = xp.eye(n, dtype=a.dtype)
    m, y = flat.copy(), flat.copy()
    err = xp.full((flat.shape[0],), np.inf)
    with np.errstate(all="ignore"):
        for _ in range(100):
            _, logdet = xp.linalg.slogdet(m)
            # det scaling: mu = |det M|^(-1/2n) (1 where M is singular; it then fails below)
            mu = xp.where(xp.isfinite(logdet), xp.exp(-logdet / (2.0 * n)), 1.0)[:, None, None]
            mu = xp.where(xp.isfinite(mu), mu, 1.0)
            minv = _safe_inv(xp, xp.where(xp.isfinite(m), m, 0.0))
            y = 0.5 * mu * (y @ (eye + minv / (mu * mu)))
            m = 0.5 * (eye + 0.5 * (mu * mu * m + minv / (mu * mu)))
            err = xp.abs(m - eye).max(axis=(-2, -1))
            if bool(xp.all((err <= 1e-15 * n) | ~xp.isfinite(err))):
                break
    bad = ~(err <= 1e-10)                       # not converged (or NaN): TF's NaN
    y = xp.where(bad[:, None, None], np.nan, y)
    return y.reshape(a.shape)


@register_kernel("MatrixSquareRoot")
def _matrix_square_root(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def matrix_square_root(a: Any) -> Any:
        if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
            raise InvalidArgumentError(f"MatrixSquareRoot: input must be square matrices, got shape {tuple(a.shape)}",
                                       op)
        return sqrtm_values(xp, a.astype(_wide(a))).astype(a.dtype, copy=False)
    return matrix_square_root


@register_kernel("MatrixSquareRootGrad")
def _matrix_square_root_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def matrix_square_root_grad(r: Any, g: Any) -> Any:
        """Y with R^T Y + Y R^T = G: the adjoint of dR -> R dR + dR R (A = R R).  For complex R
        this is TF's rule too, unconjugated (the derivative in TF's convention would solve with
        R^H; collflow gives TF's values)."""
        n = r.shape[-1]
        if r.size == 0:
            return xp.zeros_like(g)
        rf = r.astype(_wide(r)).reshape(-1, n, n)
        eye = xp.eye(n)
        # row-major vec: vec(R^T Y) = (R^T kron I) vec(Y), vec(Y R^T) = (I kron R) vec(Y)
        k = (xp.einsum("bji,kl->bikjl", rf, eye) + xp.einsum("ij,bkl->bikjl", eye, rf)).reshape(-1, n * n, n * n)
        rhs = g.astype(_wide(g)).reshape(-1, n * n, 1)
        try:
            y = xp.linalg.solve(k, rhs)
        except np.linalg.LinAlgError:
            y = xp.full_like(rhs, np.nan)
        return y.reshape(g.shape).astype(g.dtype, copy=False)
    return matrix_square_root_grad


@register_kernel("MatrixSolveLs")
def _matrix_solve_ls(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def matrix_solve_ls(a: Any, b: Any, l2: Any) -> Any:
        if a.ndim < 2 or b.ndim != a.ndim or a.shape[:-2] != b.shape[:-2] or a.shape[-2] != b.shape[-2]:
            raise InvalidArgumentError(f"MatrixSolveLs: matrix {tuple(a.shape)} and rhs {tuple(b.shape)} do not "
                                       "match", op)
        m, n = a.shape[-2:]
        out_shape = a.shape[:-2] + (n, b.shape[-1])
        if a.size == 0 or b.size == 0:
            return xp.zeros(out_shape, dtype=a.dtype)
        rcond = float(np.finfo(a.dtype).eps) * min(m, n)
        pinv = xp.linalg.pinv(a.astype(np.float64), rcond=rcond)
        return (pinv @ b.astype(np.float64)).astype(a.dtype, copy=False)
    return matrix_solve_ls


def lu_values(xp: Any, a: Any) -> tuple:
    """(packed L\\U, row permutation) of a batch [..., n, n]: L U = a[..., perm, :]."""
    n = a.shape[-1]
    lu = a.reshape(-1, n, n).copy()
    nb = lu.shape[0]
    perm = xp.tile(xp.arange(n), (nb, 1))
    rows = xp.arange(nb)
    with np.errstate(all="ignore"):
        for k in range(n):
            piv = k + xp.argmax(xp.abs(lu[:, k:, k]), axis=1)
            # swap rows k and piv of every matrix (fancy indexing copies the right-hand sides)
            lu[rows, k], lu[rows, piv] = lu[rows, piv], lu[rows, k]
            perm[rows, k], perm[rows, piv] = perm[rows, piv], perm[rows, k]
            lu[:, k + 1:, k] /= lu[:, k:k + 1, k]
            lu[:, k + 1:, k + 1:] -= lu[:, k + 1:, k:k + 1] * lu[:, k:k + 1, k + 1:]
    return lu.reshape(a.shape), perm.reshape(a.shape[:-1])


@register_kernel("Lu")
def _lu(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    idx = op.attrs["output_idx_type"].as_numpy_dtype

    def lu(a: Any) -> Any:
        if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
            raise InvalidArgumentError(f"Lu: input must be square matrices, got shape {tuple(a.shape)}", op)
        if a.size == 0:
            return a.copy(), xp.zeros(a.shape[:-1], dtype=idx)
        packed, perm = lu_values(xp, a)
        # TF's check: every pivot nonzero (NaN pivots fail it too)
        piv = xp.abs(xp.diagonal(packed, axis1=-2, axis2=-1))
        if not bool(xp.all(piv > 0)):
            raise InvalidArgumentError("Input is not invertible.", op)
        return packed, perm.astype(idx)
    return lu
