"""tf.linalg.LinearOperatorFullMatrix: an operator holding its dense [..., M, N] matrix."""
from __future__ import annotations

from typing import Any, Optional

from .. import graph as _g
from ..ops import array_ops as _a
from ..ops import math_ops as _m
from ..shape import TensorShape
from .base import LinearOperator, check_float_dtype

__all__ = ["LinearOperatorFullMatrix"]


class LinearOperatorFullMatrix(LinearOperator):
    """A = matrix; matmul is a batch matmul, solve / determinant use the dense fallbacks
    (Cholesky when hinted self-adjoint positive definite, as TF)."""

    def __init__(self, matrix: Any, is_non_singular: Optional[bool] = None, is_self_adjoint: Optional[bool] = None,
                 is_positive_definite: Optional[bool] = None, is_square: Optional[bool] = None,
                 name: str = "LinearOperatorFullMatrix") -> None:
        with _g.name_scope(name):
            self._matrix = _g.convert_to_tensor(matrix, name="matrix")
        check_float_dtype(self._matrix, "matrix")
        if self._matrix.shape.rank is not None and self._matrix.shape.rank < 2:
            raise ValueError(f"Argument matrix must have at least 2 dimensions. Found: {self._matrix}")
        super().__init__(self._matrix.dtype, graph_parents=[self._matrix], is_non_singular=is_non_singular,
                         is_self_adjoint=is_self_adjoint, is_positive_definite=is_positive_definite,
                         is_square=is_square, name=name, parameters=dict(matrix=matrix))

    @property
    def matrix(self) -> _g.Tensor:
        return self._matrix

    def _shape(self) -> TensorShape:
        return self._matrix.shape

    def _shape_tensor(self) -> _g.Tensor:
        return _a.shape(self._matrix)

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        return _m.matmul(self._matrix, x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def _to_dense(self) -> _g.Tensor:
        return self._matrix
