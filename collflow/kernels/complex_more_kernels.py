"""Kernel of tf.linalg.logm (graph/ops/complex_linalg_ops.py).

MatrixLogarithm by inverse scaling and squaring (Higham, Functions of Matrices, ch. 11):
square roots are taken until the matrix X is within 1/4 of I (in the 1-norm), then
log(X) = int_0^1 (X - I) (I + t (X - I))^-1 dt by 8-point Gauss-Legendre quadrature (the
[8/8] Pade approximant of log(I + Y), accurate to double precision for |Y| <= 1/4), and
log(A) = 2^k log(A^(1/2^k)).  The square roots are linalg_more_kernels' Denman-Beavers
iteration in complex128.  A matrix with a zero eigenvalue (no logarithm) gives NaN.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .linalg_more_kernels import sqrtm_values
from .registry import KernelContext, register_kernel

_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(8)
_NODES, _WEIGHTS = 0.5 * (_NODES + 1.0), 0.5 * _WEIGHTS      # on [0, 1]
_MAX_ROOTS = 64


def logm_values(xp: Any, a: Any) -> Any:
    """The principal logarithms of a batch [..., n, n] (complex128)."""
    n = a.shape[-1]
    if a.size == 0:
        return a.copy()
    flat = a.reshape(-1, n, n)
    eye = xp.eye(n, dtype=flat.dtype)
    out = xp.empty_like(flat)
    with np.errstate(all="ignore"):
        for b in range(flat.shape[0]):          # each matrix needs its own number of roots
            x, k = flat[b], 0
            while k < _MAX_ROOTS and bool(xp.isfinite(x).all()) and \
                    float(xp.abs(x - eye).sum(axis=0).max()) > 0.25:
                x = sqrtm_values(xp, x[None])[0]
                k += 1
            y = x - eye
            log = xp.zeros_like(y)
            for t, w in zip(_NODES, _WEIGHTS):
                try:
                    log += w * xp.linalg.solve(eye + t * y, y)
                except np.linalg.LinAlgError:
                    log[...] = np.nan
                    break
            out[b] = log * float(2 ** k)
    return out.reshape(a.shape)


@register_kernel("MatrixLogarithm")
def _matrix_logarithm(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def matrix_logarithm(a: Any) -> Any:
        if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
            raise InvalidArgumentError(f"MatrixLogarithm: input must be square matrices, got shape "
                                       f"{tuple(a.shape)}", op)
        return logm_values(xp, a.astype(np.complex128)).astype(a.dtype, copy=False)
    return matrix_logarithm
