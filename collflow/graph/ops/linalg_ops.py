"""Linear algebra on (batches of) matrices.

The singular values of [..., M, N] matrices, for the matrix 2-norm: SingularValues(a) is
[..., min(M, N)], largest first (numpy.linalg.svd with compute_uv=False).  Its gradient is
u diag(g) v^T from a thin SVD of `a`, computed by SingularValuesGrad (which recomputes the
SVD, so the forward op keeps no factors alive); it is exact where the singular values are
distinct.  Kernels in kernels/misc_kernels.py.

Square matrices, TensorFlow 1.x's names: matrix_inverse, matrix_determinant,
log_matrix_determinant (linalg.slogdet), cholesky, matrix_solve, matrix_triangular_solve,
matrix_band_part, and composed from them trace, cholesky_solve and linalg.logdet.  Inputs
are [..., M, M] (right-hand sides [..., M, K]), float32, float64, complex64 or complex128
(adjoint the conjugate transpose, Cholesky of Hermitian matrices); kernels in
kernels/linalg_kernels.py (xp.linalg).  The gradients are TF's formulas; Cholesky's assumes,
as TF's, a symmetric input and returns a symmetric gradient.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import register_op, register_gradient, not_differentiable
from ..shape import TensorShape
from . import array_ops as _a
from . import math_ops as _m
from . import matrix_ops as _mx
from . import misc_ops as _misc
from .array_util import _const_value
from .constant_op import constant
from .op_util import make_op, single

__all__ = ["singular_values", "matrix_inverse", "matrix_determinant", "log_matrix_determinant", "cholesky",
           "matrix_solve", "matrix_triangular_solve", "matrix_band_part", "trace", "cholesky_solve", "logdet"]


def _sv_spec(op: _g.Operation) -> list:
    a = op.inputs[0]
    if not a.dtype.is_floating:
        raise ValueError(f"singular values need a floating-point matrix, got {a.dtype.name}")
    if a.shape.rank is None:
        return [(a.dtype, TensorShape(None))]
    if a.shape.rank < 2:
        raise ValueError(f"singular values need a tensor of rank >= 2 ([..., M, N]), got shape {a.shape}")
    m, n = a.shape.dims[-2:]
    k = None if m is None or n is None else min(m, n)
    return [(a.dtype, TensorShape(list(a.shape.dims[:-2]) + [k]))]


register_op("SingularValues", _sv_spec)
# SingularValuesGrad(a, g): the gradient of sum(g * singular_values(a)) with respect to a
register_op("SingularValuesGrad", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)])
not_differentiable("SingularValuesGrad")


@register_gradient("SingularValues")
def _singular_values_grad(op: _g.Operation, g: Any) -> list:
    return [single("SingularValuesGrad", [op.inputs[0], g])]


def singular_values(a: Any, name: Optional[str] = None) -> _g.Tensor:
    """The singular values of the matrices in the last two axes of `a`, largest first."""
    return single("SingularValues", [a], name=name or "SingularValues")


# -- square matrices ----------------------------------------------------------------------

_FLOATS = (_dt.float32, _dt.float64)
# complex matrices too, as TF's kernels (adjoint is then the conjugate transpose)
_SQUARE_DTYPES = _FLOATS + (_dt.complex64, _dt.complex128)


def _square(x: _g.Tensor, what: str) -> Tuple[list, Optional[int]]:
    """(batch dims, M) of a [..., M, M] input, checked as far as the graph knows it."""
    if x.dtype not in _SQUARE_DTYPES:
        raise ValueError(f"{what} needs float32 or float64 (or complex64, complex128) matrices, got {x.dtype.name}")
    s = x.shape
    if s.rank is None:
        return None, None  # type: ignore[return-value]
    if s.rank < 2:
        raise ValueError(f"{what} needs a matrix or a batch of matrices, got shape {s}")
    *batch, m, n = s.dims
    if m is not None and n is not None and m != n:
        raise ValueError(f"{what} needs square matrices, got shape {s}")
    return batch, m if m is not None else n


def _same_spec(what: str) -> Any:
    def spec(op: _g.Operation) -> list:
        _square(op.inputs[0], what)
        return [(op.inputs[0].dtype, op.inputs[0].shape)]
    return spec


def _solve_spec(op: _g.Operation) -> list:
    a, b = op.inputs
    batch, m = _square(a, op.type)
    if b.dtype != a.dtype:
        raise ValueError(f"{op.type}: matrix and rhs must have one dtype, got {a.dtype.name} and {b.dtype.name}")
    if b.shape.rank is not None:
        if b.shape.rank < 2:
            raise ValueError(f"{op.type}: rhs must be [..., M, K], got shape {b.shape}")
        mb = b.shape.dims[-2]
        if m is not None and mb is not None and m != mb:
            raise ValueError(f"{op.type}: matrix {a.shape} and rhs {b.shape} disagree on M ({m} vs {mb})")
    return [(b.dtype, b.shape)]


def _band_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if x.shape.rank is not None and x.shape.rank < 2:
        raise ValueError(f"matrix_band_part needs a matrix or a batch of them, got shape {x.shape}")
    return [(x.dtype, x.shape)]


register_op("MatrixInverse", _same_spec("matrix_inverse"))
register_op("MatrixDeterminant", lambda op: [(op.inputs[0].dtype, TensorShape(_square(op.inputs[0], op.type)[0]))])
register_op("LogMatrixDeterminant",
            lambda op: [(op.inputs[0].dtype, TensorShape(_square(op.inputs[0], op.type)[0]))] * 2)
register_op("Cholesky", _same_spec("cholesky"))
register_op("MatrixSolve", _solve_spec)
register_op("MatrixTriangularSolve", _solve_spec)
register_op("MatrixBandPart", _band_spec)


# -- constructors ---------------------------------------------------------------------------


def matrix_inverse(input: Any, adjoint: bool = False, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """The inverse of each matrix (of its transpose with adjoint=True); a singular one is an error."""
    return single("MatrixInverse", [input], {"adjoint": bool(adjoint)}, name=name or "MatrixInverse")


def matrix_determinant(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """The determinant of each matrix: [..., M, M] -> [...]."""
    return single("MatrixDeterminant", [input], name=name or "MatrixDeterminant")


def log_matrix_determinant(input: Any, name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor]:  # noqa: A002
    """(sign, log|det|) of each matrix (tf.linalg.slogdet): no overflow for large matrices."""
    op = make_op("LogMatrixDeterminant", [_g.convert_to_tensor(input)], name=name or "LogMatrixDeterminant")
    return op.outputs[0], op.outputs[1]


def cholesky(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """The lower-triangular L with L @ L^T = input, for symmetric positive-definite matrices
    (only the lower triangle is read); one that is not is an error."""
    return single("Cholesky", [input], name=name or "Cholesky")


def matrix_solve(matrix: Any, rhs: Any, adjoint: bool = False, name: Optional[str] = None) -> _g.Tensor:
    """X with matrix @ X = rhs (matrix^T @ X = rhs with adjoint=True)."""
    return single("MatrixSolve", [matrix, rhs], {"adjoint": bool(adjoint)}, name=name or "MatrixSolve")


def matrix_triangular_solve(matrix: Any, rhs: Any, lower: bool = True, adjoint: bool = False,
                            name: Optional[str] = None) -> _g.Tensor:
    """X with T @ X = rhs for T the lower (or upper) triangle of matrix (the other ignored),
    T^T with adjoint=True."""
    return single("MatrixTriangularSolve", [matrix, rhs], {"lower": bool(lower), "adjoint": bool(adjoint)},
                  name=name or "MatrixTriangularSolve")


def matrix_band_part(input: Any, num_lower: Any, num_upper: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """Each matrix with entries outside the band zeroed: kept where i - j <= num_lower and
    j - i <= num_upper (a negative count keeps that whole triangle).  The counts may be
    tensors computed at run time (as TF), then the band is a mask built in the graph."""
    lo, hi = _static_count(num_lower), _static_count(num_upper)
    if lo is not None and hi is not None:
        return single("MatrixBandPart", [input], {"num_lower": lo, "num_upper": hi}, name=name or "MatrixBandPart")
    x = _g.convert_to_tensor(input)
    with x.graph.as_default(), x.graph.name_scope(name or "MatrixBandPart"):
        shp = _a.shape(x, out_type=_dt.int64)
        i = _a.expand_dims(_misc.range(_dt_zero(), shp[-2], _dt_one()), 1)
        d = i - _misc.range(_dt_zero(), shp[-1], _dt_one())          # i - j, [M, N]
        lo_t = _m.cast(num_lower, _dt.int64)
        hi_t = _m.cast(num_upper, _dt.int64)
        zero = _dt_zero()
        keep = _m.logical_and(_m.logical_or(_m.less(lo_t, zero), _m.less_equal(d, lo_t)),
                              _m.logical_or(_m.less(hi_t, zero), _m.less_equal(-d, hi_t)))
        return _a.where(keep, x, _a.zeros_like(x), name="band")


def _dt_zero() -> _g.Tensor:
    return constant(0, dtype=_dt.int64)


def _dt_one() -> _g.Tensor:
    return constant(1, dtype=_dt.int64)


def _static_count(v: Any) -> Optional[int]:
    """A band count known when the graph is built (a Python int or a constant), else None."""
    if isinstance(v, _g.Tensor):
        c = _const_value(v)
        return None if c is None or np.ndim(c) != 0 else int(c)
    return int(v)


def trace(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """The sum of each matrix's main diagonal: [..., M, N] -> [...]."""
    x = _g.convert_to_tensor(x)
    with x.graph.as_default(), x.graph.name_scope(name or "Trace"):
        return _m.reduce_sum(_mx.matrix_diag_part(x), -1, name="trace")


def cholesky_solve(chol: Any, rhs: Any, name: Optional[str] = None) -> _g.Tensor:
    """X with A @ X = rhs, given A's Cholesky factor `chol` (two triangular solves)."""
    chol = _g.convert_to_tensor(chol)
    with chol.graph.as_default(), chol.graph.name_scope(name or "cholesky_solve"):
        y = matrix_triangular_solve(chol, rhs, lower=True, adjoint=False)
        return matrix_triangular_solve(chol, y, lower=True, adjoint=True)


def logdet(matrix: Any, name: Optional[str] = None) -> _g.Tensor:
    """log(det(matrix)) of symmetric (Hermitian) positive-definite matrices, through their
    Cholesky factor; real for complex matrices too, as TF's."""
    m = _g.convert_to_tensor(matrix)
    with m.graph.as_default(), m.graph.name_scope(name or "logdet"):
        d = _mx.matrix_diag_part(cholesky(m))
        if d.dtype.is_complex:
            from .complex_ops import real
            d = real(d)
        return 2.0 * _m.reduce_sum(_m.log(d), -1)


# -- gradients (TF's) --------------------------------------------------------------------------


def _mm(a: Any, b: Any, ta: bool = False, tb: bool = False) -> _g.Tensor:
    # adjoints: TF's rules for complex matrices conjugate where real ones transpose
    return _m.matmul(a, b, adjoint_a=ta, adjoint_b=tb)


@register_gradient("MatrixInverse")
def _inverse_grad(op: _g.Operation, g: Any) -> list:
    ainv = op.outputs[0]
    # d inv(A) = -inv(A) dA inv(A), so the gradient is -inv(A)^T g inv(A)^T; with adjoint the
    # output is inv(A^T) and the gradient (transposed back to A) -out g^T out
    if op.attrs["adjoint"]:
        return [-_mm(_mm(ainv, g, tb=True), ainv)]
    return [-_mm(_mm(ainv, g, ta=True), ainv, tb=True)]


@register_gradient("MatrixDeterminant")
def _det_grad(op: _g.Operation, g: Any) -> list:
    a, det = op.inputs[0], op.outputs[0]
    inv_t = matrix_inverse(a, adjoint=True)
    return [_a.expand_dims(_a.expand_dims(g * det, -1), -1) * inv_t]


@register_gradient("LogMatrixDeterminant")
def _slogdet_grad(op: _g.Operation, _g_sign: Any, g: Any) -> list:
    inv_t = matrix_inverse(op.inputs[0], adjoint=True)
    return [_a.expand_dims(_a.expand_dims(g, -1), -1) * inv_t]


@register_gradient("Cholesky")
def _cholesky_grad(op: _g.Operation, g: Any) -> list:
    chol = op.outputs[0]
    eye = _mx.eye(_a.shape(chol)[-1], dtype=chol.dtype) if chol.shape.dims is None or chol.shape.dims[-1] is None \
        else _mx.eye(chol.shape.dims[-1], dtype=chol.dtype)
    l_inv = matrix_triangular_solve(chol, eye + _a.zeros_like(chol), lower=True)
    middle = _mm(chol, g, ta=True)
    middle = _mx.matrix_set_diag(middle, 0.5 * _mx.matrix_diag_part(middle))
    middle = matrix_band_part(middle, -1, 0)
    grad_a = _mm(_mm(l_inv, middle, ta=True), l_inv)
    grad_a = grad_a + _mx.matrix_transpose(grad_a, conjugate=True)
    return [0.5 * grad_a]


@register_gradient("MatrixSolve")
def _solve_grad(op: _g.Operation, g: Any) -> list:
    a, x, adj = op.inputs[0], op.outputs[0], op.attrs["adjoint"]
    grad_b = matrix_solve(a, g, adjoint=not adj)
    grad_a = -_mm(x, grad_b, tb=True) if adj else -_mm(grad_b, x, tb=True)
    return [grad_a, grad_b]


@register_gradient("MatrixTriangularSolve")
def _triangular_solve_grad(op: _g.Operation, g: Any) -> list:
    a, c = op.inputs[0], op.outputs[0]
    lower, adj = op.attrs["lower"], op.attrs["adjoint"]
    grad_b = matrix_triangular_solve(a, g, lower=lower, adjoint=not adj)
    grad_a = -_mm(c, grad_b, tb=True) if adj else -_mm(grad_b, c, tb=True)
    grad_a = matrix_band_part(grad_a, -1, 0) if lower else matrix_band_part(grad_a, 0, -1)
    return [grad_a, grad_b]


register_gradient("MatrixBandPart")(
    lambda op, g: [matrix_band_part(g, op.attrs["num_lower"], op.attrs["num_upper"])])
