"""The gradient of tf.linalg.qr (real and complex matrices; TF's conventions).

Reduced QR of A [..., M, N], M >= N: A = Q R, Q^H Q = I, R upper triangular with a real
diagonal.  From dA = dQ R + Q dR, with X = Q^H dA R^-1 (C = Q^H dQ is skew-Hermitian, dR R^-1
upper triangular with a real diagonal) the gradient of a real loss, in TF's convention
(dL = Re tr(G^H dA)), is

    G = (gQ + Q copyltu(M)) R^-H,   M = R gR^H - gQ^H Q,
    copyltu(M) = tril(M, -1) + tril(M, -1)^H + Re diag(M)

(for real matrices the familiar copyltu form).  M < N: A = [X Y], Q R1 = X, R2 = Q^H Y; the
square formula for X with gQ + Y gR2^H in place of gQ, and Q gR2 for Y.  full_matrices with
M > N has no gradient (Q's last M - N columns are any basis of a subspace), a
NotImplementedError as TF's.
"""
from __future__ import annotations

from typing import Any

from .. import graph as _g
from ..registry import register_gradient
from . import array_ops as _a
from . import math_ops as _m
from . import matrix_ops as _mx
from .linalg_ops import matrix_band_part, matrix_triangular_solve


def _adj(t: _g.Tensor) -> _g.Tensor:
    return _mx.matrix_transpose(t, conjugate=True)


def _zeros_or(g: Any, like: _g.Tensor) -> _g.Tensor:
    return _a.zeros_like(like) if g is None else _g.convert_to_tensor(g)


def _square_grad(q: _g.Tensor, r: _g.Tensor, gq: _g.Tensor, gr: _g.Tensor) -> _g.Tensor:
    """G for A = Q R with R square (M >= N), the module doc's formula."""
    m = _m.matmul(r, gr, adjoint_b=True) - _m.matmul(gq, q, adjoint_a=True)
    low = matrix_band_part(m, -1, 0) - _mx.matrix_diag(_mx.matrix_diag_part(m))      # strictly lower
    diag = _mx.matrix_diag_part(m)
    if diag.dtype.is_complex:
        from .complex_ops import real
        diag = _m.cast(real(diag), diag.dtype)
    copyltu = low + _adj(low) + _mx.matrix_diag(diag)
    b = gq + _m.matmul(q, copyltu)
    # b R^-H = (R^-1 b^H)^H: one triangular solve
    return _adj(matrix_triangular_solve(r, _adj(b), lower=False))


@register_gradient("Qr")
def _qr_grad(op: _g.Operation, grad_q: Any, grad_r: Any) -> list:
    a = op.inputs[0]
    q, r = op.outputs
    dims = a.shape.dims
    if dims is None or dims[-1] is None or dims[-2] is None:
        raise NotImplementedError("QR gradient needs matrices of known size")
    m, n = dims[-2], dims[-1]
    if op.attrs["full_matrices"] and m > n:
        raise NotImplementedError("QrGrad not implemented when nrows > ncols and full_matrices is true. "
                                  f"Received: nrows={m} and ncols={n}")
    gq, gr = _zeros_or(grad_q, q), _zeros_or(grad_r, r)
    if m >= n:
        return [_square_grad(q, r, gq, gr)]
    y = a[..., :, m:]
    r1, gr1, gr2 = r[..., :, :m], gr[..., :, :m], gr[..., :, m:]
    gx = _square_grad(q, r1, gq + _m.matmul(y, gr2, adjoint_b=True), gr1)
    gy = _m.matmul(q, gr2)
    return [_a.concat([gx, gy], -1)]
