"""tf.linalg.LinearOperatorComposition: A1 A2 ... An applied factor by factor, never
multiplied out (solve applies the factors' solves in reverse order)."""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

from .. import graph as _g
from ..shape import TensorShape
from .base import LinearOperator, static_batch

__all__ = ["LinearOperatorComposition"]


def check_operators(operators: Sequence[Any], kind: str) -> List[LinearOperator]:
    """A non-empty list of operators of one dtype (ValueError / TypeError as TF)."""
    operators = list(operators)
    if not operators:
        raise ValueError(f"Expected a non-empty list of operators. Found: {operators}")
    dtype = operators[0].dtype
    for op in operators:
        if op.dtype != dtype:
            raise TypeError("Expected all operators to have the same dtype.  Found "
                            f"{[o.dtype.name for o in operators]}")
    return operators


def all_true(operators: Sequence[LinearOperator], attr: str) -> bool:
    return all(getattr(op, attr) for op in operators)


_HINTS = ("is_non_singular", "is_self_adjoint", "is_positive_definite")


def inherit_hints(operators: Sequence[LinearOperator], hints: Sequence[Optional[bool]],
                  words: Sequence[str], message: Callable[[str, str, Any], str]) -> List[Optional[bool]]:
    """(is_non_singular, is_self_adjoint, is_positive_definite) for an operator built of
    `operators` (a direct sum, a Kronecker product): a hint every factor has is True, and a
    caller's False for it is TF's ValueError, `message(attr, word, value)`."""
    out = list(hints)
    for i, (attr, word) in enumerate(zip(_HINTS, words)):
        if all_true(operators, attr):
            if out[i] is False:
                raise ValueError(message(attr, word, out[i]))
            out[i] = True
    return out


class OperatorOfFactors(LinearOperator):
    """An operator built of others (a composition, a direct sum, a Kronecker product): their
    graph parents, a name joined from theirs, `operators` and their broadcast batch shape."""

    _operators: List[LinearOperator]

    def _init_factors(self, operators: Any, sep: str, is_non_singular: Optional[bool],
                      is_self_adjoint: Optional[bool], is_positive_definite: Optional[bool],
                      is_square: Optional[bool], name: Optional[str]) -> None:
        ops = self._operators
        LinearOperator.__init__(self, ops[0].dtype, graph_parents=[p for op in ops for p in op.graph_parents],
                                is_non_singular=is_non_singular, is_self_adjoint=is_self_adjoint,
                                is_positive_definite=is_positive_definite, is_square=is_square,
                                name=name or sep.join(op.name for op in ops), parameters=dict(operators=operators))

    @property
    def operators(self) -> List[LinearOperator]:
        return list(self._operators)

    def _batch(self) -> TensorShape:
        return static_batch(*[op.batch_shape for op in self._operators])


class LinearOperatorComposition(OperatorOfFactors):
    def __init__(self, operators: Sequence[LinearOperator], is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: Optional[bool] = None, name: Optional[str] = None) -> None:
        self._operators = check_operators(operators, "composition")
        if all_true(self._operators, "is_non_singular"):
            if is_non_singular is False:
                raise ValueError("The composition of non-singular operators is always non-singular.")
            is_non_singular = True
        self._init_factors(operators, "_o_", is_non_singular, is_self_adjoint, is_positive_definite, is_square, name)
        for a, b in zip(self._operators[:-1], self._operators[1:]):
            self._check_dim(a.domain_dimension, b.range_dimension)

    def _shape(self) -> TensorShape:
        first, last = self._operators[0].shape, self._operators[-1].shape
        if any(op.shape.dims is None for op in self._operators):
            return TensorShape(None)
        batch = self._batch()
        if batch.dims is None:
            return TensorShape(None)
        return TensorShape(list(batch.dims) + [first.dims[-2], last.dims[-1]])

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        # A1 ... An x: An first; (A1 ... An)^H x = An^H ... A1^H x: A1^H first
        order = self._operators if adjoint else list(reversed(self._operators))
        out = order[0].matmul(x, adjoint=adjoint, adjoint_arg=adjoint_arg)
        for op in order[1:]:
            out = op.matmul(out, adjoint=adjoint)
        return out

    def _solve(self, rhs: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        # (A1 ... An)^{-1} = An^{-1} ... A1^{-1}: A1 solved first; with adjoint, An^H first
        order = list(reversed(self._operators)) if adjoint else self._operators
        out = order[0].solve(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)
        for op in order[1:]:
            out = op.solve(out, adjoint=adjoint)
        return out

    def _determinant(self) -> _g.Tensor:
        if all(op.is_square for op in self._operators):
            out = self._operators[0].determinant()
            for op in self._operators[1:]:
                out = out * op.determinant()
            return out
        return super()._determinant()

    def _log_abs_determinant(self) -> _g.Tensor:
        if all(op.is_square for op in self._operators):
            out = self._operators[0].log_abs_determinant()
            for op in self._operators[1:]:
                out = out + op.log_abs_determinant()
            return out
        return super()._log_abs_determinant()

    def _to_dense(self) -> _g.Tensor:
        out = self._operators[-1].to_dense()
        for op in reversed(self._operators[:-1]):
            out = op.matmul(out)
        return out
