"""tf.linalg.LinearOperatorAdjoint and LinearOperatorInversion: lazy A^H and A^{-1} of
another operator, computed through its matmul/solve with flipped flags."""
from __future__ import annotations

from typing import Any, List, Optional

from .. import graph as _g
from ..ops import math_ops as _m
from ..shape import TensorShape
from .base import LinearOperator, adjoint as _adjoint, conj

__all__ = ["LinearOperatorAdjoint", "LinearOperatorInversion"]


def _inherit(value: Optional[bool], from_op: Optional[bool], message: str) -> Optional[bool]:
    """A hint that must agree with the wrapped operator's (ValueError when it contradicts)."""
    if from_op is not None and value is not None and value != from_op:
        raise ValueError(message)
    return from_op if value is None else value


def _inherit_hints(operator: LinearOperator, word: str, *hints: Optional[bool]) -> List[Optional[bool]]:
    """(is_non_singular, is_self_adjoint, is_positive_definite, is_square) of operator's
    adjoint or inverse (`word`): each as the operator's, TF's ValueError where a given hint
    contradicts it."""
    own = (operator.is_non_singular, operator.is_self_adjoint, operator.is_positive_definite, operator.is_square)
    whats = ("non-singular", "self-adjoint", "positive-definite", "square")
    return [_inherit(h, o, f"An operator is {w} if and only if its {word} is {w}.")
            for h, o, w in zip(hints, own, whats)]


class LinearOperatorAdjoint(LinearOperator):
    """A^H of `operator`."""

    def __init__(self, operator: LinearOperator, is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: Optional[bool] = None, name: Optional[str] = None) -> None:
        self._operator = operator
        is_non_singular, is_self_adjoint, is_positive_definite, is_square = _inherit_hints(
            operator, "adjoint", is_non_singular, is_self_adjoint, is_positive_definite, is_square)
        super().__init__(operator.dtype, graph_parents=operator.graph_parents, is_non_singular=is_non_singular,
                         is_self_adjoint=is_self_adjoint, is_positive_definite=is_positive_definite,
                         is_square=is_square, name=name or operator.name + "_adjoint",
                         parameters=dict(operator=operator))

    @property
    def operator(self) -> LinearOperator:
        return self._operator

    def _shape(self) -> TensorShape:
        s = self._operator.shape
        if s.dims is None:
            return s
        return TensorShape(list(s.dims[:-2]) + [s.dims[-1], s.dims[-2]])

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        return self._operator.matmul(x, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        return self._operator.solve(rhs, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _determinant(self) -> _g.Tensor:
        return conj(self._operator.determinant())

    def _log_abs_determinant(self) -> _g.Tensor:
        return self._operator.log_abs_determinant()

    def _trace(self) -> _g.Tensor:
        return conj(self._operator.trace())

    def _diag_part(self) -> _g.Tensor:
        return conj(self._operator.diag_part())

    def _to_dense(self) -> _g.Tensor:
        return _adjoint(self._operator.to_dense())

    def _assert_non_singular(self) -> Any:
        return self._operator.assert_non_singular()


class LinearOperatorInversion(LinearOperator):
    """A^{-1} of a square non-singular `operator`: matmul is its solve and solve its matmul."""

    def __init__(self, operator: LinearOperator, is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: Optional[bool] = None, name: Optional[str] = None) -> None:
        if operator.is_non_singular is False or is_non_singular is False:
            raise ValueError("operator and supplied hints must be non-singular")
        if operator.is_square is False or is_square is False:
            raise ValueError("operator and supplied hints must be square")
        self._operator = operator
        is_non_singular, is_self_adjoint, is_positive_definite, is_square = _inherit_hints(
            operator, "inverse", is_non_singular, is_self_adjoint, is_positive_definite, is_square)
        super().__init__(operator.dtype, graph_parents=operator.graph_parents, is_non_singular=is_non_singular,
                         is_self_adjoint=is_self_adjoint, is_positive_definite=is_positive_definite,
                         is_square=is_square, name=name or operator.name + "_inv",
                         parameters=dict(operator=operator))

    @property
    def operator(self) -> LinearOperator:
        return self._operator

    def _shape(self) -> TensorShape:
        return self._operator.shape

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        return self._operator.solve(x, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        return self._operator.matmul(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _determinant(self) -> _g.Tensor:
        return 1.0 / self._operator.determinant()

    def _log_abs_determinant(self) -> _g.Tensor:
        return _m.negative(self._operator.log_abs_determinant())

    def _assert_non_singular(self) -> Any:
        return self._operator.assert_non_singular()
