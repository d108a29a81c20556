"""tf.svd (tf.linalg.svd): singular values and vectors, A = U diag(s) V^T with V returned
untransposed, s descending; gradient from the derivative of the thin SVD.

The gradient (for M <= N; a taller matrix is handled through its transpose): with
F_ij = 1 / (s_j^2 - s_i^2) off the diagonal, J = F o (U^T dU), K = F o (V^T dV),
  dA = U (diag(ds) + (J + J^T) S + S (K + K^T)) V^T + U S^-1 dV^T (I - V V^T)   (M < N).
With full_matrices=True the gradient is TF's for |M - N| <= 1 (the extra column's term
-V1^T dV2 V2^T); for |M - N| > 1 it raises NotImplementedError, as TF's.
Singular vectors are unique only up to a sign per pair (and mix for repeated singular
values), so a loss should depend on them through sign-invariant quantities, as in TF.
Kernel in kernels/linalg_kernels.py.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from ...errors import UnimplementedError
from .. import graph as _g
from ..registry import register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from . import math_ops as _m
from . import matrix_ops as _mx
from .eig_ops import grad_or_zeros, safe_reciprocal
from .op_util import make_op

__all__ = ["svd"]


def _svd_spec(op: _g.Operation) -> list:
    a = op.inputs[0]
    if a.dtype not in (_dt.float32, _dt.float64, _dt.complex64, _dt.complex128):
        raise ValueError(f"svd needs float32, float64, complex64 or complex128 matrices, got {a.dtype.name}")
    sdt = a.dtype.real_dtype if a.dtype.is_complex else a.dtype     # singular values are real
    if a.shape.rank is None:
        return [(sdt, TensorShape(None))] + [(a.dtype, TensorShape(None))] * 2
    if a.shape.rank < 2:
        raise ValueError(f"svd needs [..., M, N] matrices, got shape {a.shape}")
    *batch, m, n = a.shape.dims
    k = None if m is None or n is None else min(m, n)
    if not op.attrs["compute_uv"]:
        return [(sdt, TensorShape(batch + [k])), (a.dtype, TensorShape([0])), (a.dtype, TensorShape([0]))]
    full = op.attrs["full_matrices"]
    return [(sdt, TensorShape(batch + [k])), (a.dtype, TensorShape(batch + [m, m if full else k])),
            (a.dtype, TensorShape(batch + [n, n if full else k]))]


register_op("Svd", _svd_spec, doc="singular values (descending) and vectors: a = u diag(s) v^T")


@register_gradient("Svd")
def _svd_grad(op: _g.Operation, grad_s: Any, grad_u: Any, grad_v: Any) -> list:
    a = op.inputs[0]
    s, u, v = op.outputs
    gs = grad_or_zeros(grad_s, s)
    cplx = a.dtype.is_complex
    # complex a: adjoints where the real rule transposes, the real s and its gradient made complex
    as_a = (lambda t: _m.cast(t, a.dtype)) if cplx else (lambda t: t)
    if not op.attrs["compute_uv"]:
        _, u2, v2 = svd(a, full_matrices=False, compute_uv=True)
        return [_m.matmul(u2, _m.matmul(_mx.matrix_diag(as_a(gs)), v2, adjoint_b=True))]
    dims = a.shape.dims
    if dims is None or dims[-1] is None or dims[-2] is None:
        raise UnimplementedError("svd gradient needs matrices of known size")
    m, n = dims[-2], dims[-1]
    full = op.attrs["full_matrices"]
    if full and abs(m - n) > 1:
        # TF's _SvdGrad refuses these too (V's last N - M columns are then any basis of a subspace)
        raise NotImplementedError(f"svd gradient is not implemented for abs(m - n) > 1 when full_matrices is True. "
                                  f"Received: m={m} and n={n}")
    gu, gv = grad_or_zeros(grad_u, u), grad_or_zeros(grad_v, v)
    transposed = m > n
    if transposed:                    # A^T = V S U^T: the same formula with the roles swapped
        m, n, u, v, gu, gv = n, m, v, u, gv, gu
    # with full_matrices, v (now the wider side's) has n columns: its first m pair with s
    v1, gv1 = (v[..., :, :m], gv[..., :, :m]) if full and m != n else (v, gv)
    s_mat = as_a(_mx.matrix_diag(s))
    s2 = _m.square(s)
    f = as_a(_mx.matrix_set_diag(safe_reciprocal(_a.expand_dims(s2, -2) - _a.expand_dims(s2, -1)),
                                 _a.zeros_like(s)))
    j = f * _m.matmul(u, gu, adjoint_a=True)
    vgv = _m.matmul(v1, gv1, adjoint_a=True)
    k = f * vgv
    core = (_mx.matrix_diag(as_a(gs)) + _m.matmul(j + _mx.matrix_transpose(j, conjugate=True), s_mat)
            + _m.matmul(s_mat, k + _mx.matrix_transpose(k, conjugate=True)))
    if cplx:
        # each singular pair's common phase is free: the phase fixed on u's side, the loss's
        # dependence on v's diagonal phases, (1/2) S^-1 (L^H - L) with L = diag(v^H gv)
        ell = _mx.matrix_diag(_mx.matrix_diag_part(vgv))
        core = core + 0.5 * _m.matmul(as_a(_mx.matrix_diag(safe_reciprocal(s))),
                                      _mx.matrix_transpose(ell, conjugate=True) - ell)
    grad = _m.matmul(u, _m.matmul(core, v1, adjoint_b=True))
    if m < n:                         # the part of dV outside V's span
        gvt = _mx.matrix_transpose(gv1, conjugate=True)
        outside = gvt - _m.matmul(_m.matmul(gvt, v1), v1, adjoint_b=True)
        if full:                      # TF's term for the extra column v2 (N = M + 1)
            v2, gv2 = v[..., :, m:n], gv[..., :, m:n]
            outside = outside - _m.matmul(_m.matmul(v1, gv2, adjoint_a=True), v2, adjoint_b=True)
        grad = grad + _m.matmul(_m.matmul(u, as_a(_mx.matrix_diag(safe_reciprocal(s)))), outside)
    return [_mx.matrix_transpose(grad, conjugate=True) if transposed else grad]


def svd(tensor: Any, full_matrices: bool = False, compute_uv: bool = True, name: Optional[str] = None) -> Any:
    """(s, u, v) with tensor = u diag(s) v^T (s descending; v untransposed, as TF), or s alone
    with compute_uv=False; full_matrices: square u and v."""
    op = make_op("Svd", [_g.convert_to_tensor(tensor)], {"compute_uv": bool(compute_uv),
                                                         "full_matrices": bool(full_matrices)}, name=name or "Svd")
    if not compute_uv:
        return op.outputs[0]
    return op.outputs[0], op.outputs[1], op.outputs[2]
