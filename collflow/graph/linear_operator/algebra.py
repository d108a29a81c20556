"""The operator algebra behind LinearOperator.adjoint() / inverse() / cholesky() / matmul
with an operator: structure-keeping results where the structure allows (a diagonal's
inverse is a diagonal, ...), else the lazy wrappers, as TF's registrations do."""
from __future__ import annotations

from ..ops import linalg_ops as _la
from ..ops import math_ops as _m
from .base import LinearOperator, conj

__all__ = ["adjoint", "inverse", "cholesky", "matmul"]


def adjoint(op: LinearOperator) -> LinearOperator:
    from .adjoint_inversion import LinearOperatorAdjoint
    from .diag import LinearOperatorDiag
    from .identity import LinearOperatorIdentity, LinearOperatorScaledIdentity
    hints = dict(is_non_singular=op.is_non_singular, is_self_adjoint=op.is_self_adjoint,
                 is_positive_definite=op.is_positive_definite, is_square=op.is_square)
    if isinstance(op, LinearOperatorAdjoint):
        return op.operator
    if isinstance(op, LinearOperatorIdentity):
        return op
    if isinstance(op, LinearOperatorDiag):
        return LinearOperatorDiag(conj(op.diag), **hints)
    if isinstance(op, LinearOperatorScaledIdentity):
        return LinearOperatorScaledIdentity(op.range_dimension, conj(op.multiplier),
                                            **{k: v for k, v in hints.items() if k != "is_square"})
    return LinearOperatorAdjoint(op)


def inverse(op: LinearOperator) -> LinearOperator:
    from .adjoint_inversion import LinearOperatorInversion
    from .diag import LinearOperatorDiag
    from .identity import LinearOperatorIdentity, LinearOperatorScaledIdentity
    hints = dict(is_non_singular=op.is_non_singular, is_self_adjoint=op.is_self_adjoint,
                 is_positive_definite=op.is_positive_definite)
    if isinstance(op, LinearOperatorInversion):
        return op.operator
    if isinstance(op, LinearOperatorIdentity):
        return op
    if isinstance(op, LinearOperatorDiag):
        return LinearOperatorDiag(_m.reciprocal(op.diag), is_square=True, **hints)
    if isinstance(op, LinearOperatorScaledIdentity):
        return LinearOperatorScaledIdentity(int(op.range_dimension), _m.reciprocal(op.multiplier), **hints)
    return LinearOperatorInversion(op)


def cholesky(op: LinearOperator) -> LinearOperator:
    from .diag import LinearOperatorDiag
    from .identity import LinearOperatorIdentity, LinearOperatorScaledIdentity
    from .kronecker import LinearOperatorKronecker
    from .block_diag import LinearOperatorBlockDiag
    from .lower_triangular import LinearOperatorLowerTriangular
    pd = dict(is_non_singular=True, is_self_adjoint=True, is_positive_definite=True)
    if isinstance(op, LinearOperatorIdentity):
        return op
    if isinstance(op, LinearOperatorDiag):
        return LinearOperatorDiag(_m.sqrt(op.diag), is_square=True, **pd)
    if isinstance(op, LinearOperatorScaledIdentity):
        return LinearOperatorScaledIdentity(int(op.range_dimension), _m.sqrt(op.multiplier), **pd)
    if isinstance(op, LinearOperatorKronecker):
        return LinearOperatorKronecker([f.cholesky() for f in op.operators], is_non_singular=True,
                                       is_square=True)
    if isinstance(op, LinearOperatorBlockDiag):
        return LinearOperatorBlockDiag([f.cholesky() for f in op.operators], is_non_singular=True, is_square=True)
    return LinearOperatorLowerTriangular(_la.cholesky(op.to_dense()), is_non_singular=True, is_square=True)


def matmul(left: LinearOperator, right: LinearOperator) -> LinearOperator:
    from .composition import LinearOperatorComposition
    from .diag import LinearOperatorDiag
    from .identity import LinearOperatorIdentity
    if left.dtype != right.dtype:
        raise TypeError(f"Expected all operators to have the same dtype.  Found {left.dtype.name} and "
                        f"{right.dtype.name}")
    if isinstance(left, LinearOperatorIdentity) and not left.batch_shape.dims:
        return right
    if isinstance(right, LinearOperatorIdentity) and not right.batch_shape.dims:
        return left
    if isinstance(left, LinearOperatorDiag) and isinstance(right, LinearOperatorDiag):
        both = lambda a, b: True if a and b else None  # noqa: E731
        return LinearOperatorDiag(left.diag * right.diag,
                                  is_non_singular=both(left.is_non_singular, right.is_non_singular),
                                  is_positive_definite=both(left.is_positive_definite, right.is_positive_definite)
                                  if not left.dtype.is_complex else None, is_square=True)
    return LinearOperatorComposition([left, right])
