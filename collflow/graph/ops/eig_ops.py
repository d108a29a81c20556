"""tf.self_adjoint_eig / self_adjoint_eigvals (the symmetric eigendecomposition, with TF's
gradient) and tf.matrix_solve_ls (least squares through the regularized normal equations,
TF's fast path; fast=False in linalg_more_ops.py).  Kernel in kernels/linalg_kernels.py (numpy.linalg.eigh / cupy.linalg.eigh,
lower triangle read, eigenvalues ascending); eigenvectors are unique only up to sign, so
they may differ from TensorFlow's by a factor -1 per column."""
from __future__ import annotations

from typing import Any, Optional, Tuple

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from . import math_ops as _m
from . import matrix_ops as _mx
from .linalg_ops import cholesky, cholesky_solve, matrix_band_part
from .op_util import make_op

__all__ = ["self_adjoint_eig", "self_adjoint_eigvals", "matrix_solve_ls"]


def _eig_spec(op: _g.Operation) -> list:
    a = op.inputs[0]
    if a.dtype not in (_dt.float32, _dt.float64, _dt.complex64, _dt.complex128):
        raise ValueError(f"self_adjoint_eig needs float32, float64, complex64 or complex128 matrices, "
                         f"got {a.dtype.name}")
    if a.shape.rank is None:
        return [(a.dtype, TensorShape(None)), (a.dtype, TensorShape(None))]
    if a.shape.rank < 2:
        raise ValueError(f"self_adjoint_eig needs [..., M, M] matrices, got shape {a.shape}")
    *batch, m, n = a.shape.dims
    if m is not None and n is not None and m != n:
        raise ValueError(f"self_adjoint_eig needs square matrices, got shape {a.shape}")
    size = m if m is not None else n
    v_shape = TensorShape(batch + [size, size]) if op.attrs["compute_v"] else TensorShape([0])
    return [(a.dtype, TensorShape(batch + [size])), (a.dtype, v_shape)]


register_op("SelfAdjointEigV2", _eig_spec, doc="eigenvalues (ascending) and eigenvectors of symmetric matrices")


def safe_reciprocal(x: _g.Tensor, epsilon: float = 1e-20) -> _g.Tensor:
    """1 / x, bounded where x is 0 (the spectral gradients' gap terms, here and in svd_ops)."""
    return x * _m.reciprocal(x * x + epsilon)


def grad_or_zeros(g: Any, like: _g.Tensor) -> _g.Tensor:
    """An output's incoming gradient, or zeros where none reached it."""
    return _a.zeros_like(like) if g is None else _g.convert_to_tensor(g)


@register_gradient("SelfAdjointEigV2")
def _eig_grad(op: _g.Operation, grad_e: Any, grad_v: Any) -> list:
    """TF's: v (diag(grad_e) + f * (v^T grad_v)) v^T with f_ij = 1 / (e_j - e_i) off the
    diagonal, then made symmetric and taken as the lower triangle (the part the op reads)."""
    e = op.outputs[0]
    ge = grad_or_zeros(grad_e, e)
    if op.attrs["compute_v"]:
        v = op.outputs[1]
        f = _mx.matrix_set_diag(safe_reciprocal(_a.expand_dims(e, -2) - _a.expand_dims(e, -1)), _a.zeros_like(e))
        inner = _mx.matrix_diag(ge)
        if grad_v is not None:
            inner = inner + f * _m.matmul(v, _g.convert_to_tensor(grad_v), adjoint_a=True)
    else:
        v = self_adjoint_eig(op.inputs[0])[1]
        inner = _mx.matrix_diag(ge)
    # Hermitian matrices: the same with adjoints (e, hence f, real-valued)
    grad_a = _m.matmul(v, _m.matmul(inner, v, adjoint_b=True))
    grad_a = matrix_band_part(grad_a + _mx.matrix_transpose(grad_a, conjugate=True), -1, 0)
    return [_mx.matrix_set_diag(grad_a, 0.5 * _mx.matrix_diag_part(grad_a))]


def self_adjoint_eig(tensor: Any, name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor]:
    """(e, v): the eigenvalues of each symmetric (Hermitian) matrix in ascending order and the
    unit eigenvectors as v's columns (only the lower triangle is read); for a complex matrix e
    has its dtype, as TF's."""
    op = make_op("SelfAdjointEigV2", [_g.convert_to_tensor(tensor)], {"compute_v": True},
                 name=name or "self_adjoint_eig")
    return op.outputs[0], op.outputs[1]


def self_adjoint_eigvals(tensor: Any, name: Optional[str] = None) -> _g.Tensor:
    """The eigenvalues of each symmetric matrix, ascending."""
    op = make_op("SelfAdjointEigV2", [_g.convert_to_tensor(tensor)], {"compute_v": False},
                 name=name or "self_adjoint_eigvals")
    return op.outputs[0]


def matrix_solve_ls(matrix: Any, rhs: Any, l2_regularizer: Any = 0.0, fast: bool = True,
                    name: Optional[str] = None) -> _g.Tensor:
    """The least-squares X of matrix @ X ~ rhs with an L2 penalty l2_regularizer |X|^2: through
    the Cholesky factor of A^T A + l2 I (M >= N) or of A A^T + l2 I (M < N, the minimum-norm
    solution), TF's fast path.  fast=False: the minimum-norm solution of rank-deficient systems
    (TF's complete orthogonal decomposition; no gradient, l2_regularizer ignored, as TF)."""
    if not fast:
        from .linalg_more_ops import matrix_solve_ls_complete   # (it is a sibling leaf module)
        return matrix_solve_ls_complete(matrix, rhs, l2_regularizer, name=name or "MatrixSolveLs")
    a = _g.convert_to_tensor(matrix)
    if a.shape.rank is None or a.shape.rank < 2 or a.shape.dims[-1] is None or a.shape.dims[-2] is None:
        raise InvalidArgumentError(f"matrix_solve_ls needs matrices of known size [..., M, N], got {a.shape}")
    m, n = a.shape.dims[-2], a.shape.dims[-1]
    with a.graph.as_default(), a.graph.name_scope(name or "matrix_solve_ls"):
        b = _g.convert_to_tensor(rhs, dtype=a.dtype)
        first = m >= n
        gram = _m.matmul(a, a, adjoint_a=first, adjoint_b=not first)   # A^H A or A A^H
        lam = _m.cast(l2_regularizer, a.dtype)
        k = n if first else m
        gram = gram + lam * _mx.eye(k, batch_shape=list(a.shape.dims[:-2]), dtype=a.dtype)
        chol = cholesky(gram)
        if first:
            return cholesky_solve(chol, _m.matmul(a, b, adjoint_a=True))
        return _m.matmul(a, cholesky_solve(chol, b), adjoint_a=True)
