"""tf.linalg.LinearOperatorBlockDiag: square operators on the diagonal of a block matrix;
every method works block by block on the matching rows of its argument."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from .. import graph as _g
from ..ops import array_ops as _a
from ..shape import TensorShape, dimension_value
from .base import LinearOperator, adjoint as _adjoint, broadcast_batch, static_batch
from .composition import OperatorOfFactors, check_operators, inherit_hints

__all__ = ["LinearOperatorBlockDiag"]


class LinearOperatorBlockDiag(OperatorOfFactors):
    def __init__(self, operators: Sequence[LinearOperator], is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: bool = True, name: Optional[str] = None) -> None:
        self._operators = check_operators(operators, "block diagonal")
        is_non_singular, is_self_adjoint, is_positive_definite = inherit_hints(
            self._operators, (is_non_singular, is_self_adjoint, is_positive_definite),
            ("non-singular", "self-adjoint", "positive definite"),
            lambda attr, what, value: f"The direct sum of {what} operators is always {what}.")
        # blocks may be rectangular (as TF 2's): columns split by domain, rows by range sizes
        self._sizes = [dimension_value(op.domain_dimension) for op in self._operators]
        self._rows = [dimension_value(op.range_dimension) for op in self._operators]
        if any(s is None for s in self._sizes + self._rows):
            raise NotImplementedError("LinearOperatorBlockDiag needs blocks of static size")
        self._init_factors(operators, "_ds_", is_non_singular, is_self_adjoint, is_positive_definite, is_square, name)

    def _shape(self) -> TensorShape:
        batch = self._batch()
        return TensorShape(None) if batch.dims is None else TensorShape(list(batch.dims) + [sum(self._rows),
                                                                                          sum(self._sizes)])

    def _blocks(self, x: _g.Tensor, sizes: Optional[List[int]] = None) -> List[_g.Tensor]:
        sizes = self._sizes if sizes is None else sizes
        return _a.split(x, sizes, axis=-2) if len(sizes) > 1 else [x]

    def _all_square(self) -> bool:
        return self._rows == self._sizes

    def _join(self, parts: List[_g.Tensor]) -> _g.Tensor:
        batch = static_batch(*[p.shape[:-2] for p in parts])
        return _a.concat([broadcast_batch(p, batch) for p in parts], axis=-2)

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        x = _adjoint(x) if adjoint_arg else x
        blocks = self._blocks(x, self._rows if adjoint else self._sizes)
        return self._join([op.matmul(b, adjoint=adjoint) for op, b in zip(self._operators, blocks)])

    def _check_square_blocks(self, what: str) -> None:
        if not self._all_square():
            raise NotImplementedError(f"{what} is only supported for a block diagonal of square operators")

    def _solve(self, rhs: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        self._check_square_blocks("solve")
        rhs = _adjoint(rhs) if adjoint_arg else rhs
        return self._join([op.solve(b, adjoint=adjoint) for op, b in zip(self._operators, self._blocks(rhs))])

    def _determinant(self) -> _g.Tensor:
        if not self._all_square():
            return super()._determinant()
        out = self._operators[0].determinant()
        for op in self._operators[1:]:
            out = out * op.determinant()
        return out

    def _log_abs_determinant(self) -> _g.Tensor:
        if not self._all_square():
            return super()._log_abs_determinant()
        out = self._operators[0].log_abs_determinant()
        for op in self._operators[1:]:
            out = out + op.log_abs_determinant()
        return out

    def _trace(self) -> _g.Tensor:
        if not self._all_square():
            return super()._trace()
        out = self._operators[0].trace()
        for op in self._operators[1:]:
            out = out + op.trace()
        return out

    def _diag_part(self) -> _g.Tensor:
        if not self._all_square():
            return super()._diag_part()
        parts = [op.diag_part() for op in self._operators]
        batch = static_batch(*[p.shape[:-1] for p in parts])
        if batch.is_fully_defined():
            parts = [p if list(p.shape.dims[:-1]) == batch.as_list()
                     else _a.broadcast_to(p, batch.as_list() + [p.shape.dims[-1]]) for p in parts]
        return _a.concat(parts, axis=-1)

    def _to_dense(self) -> _g.Tensor:
        batch = self._batch()
        if not batch.is_fully_defined():
            raise NotImplementedError("LinearOperatorBlockDiag.to_dense needs a static batch shape")
        n = sum(self._sizes)
        rows, start = [], 0
        for op, size, m in zip(self._operators, self._sizes, self._rows):
            dense = broadcast_batch(op.to_dense(), batch)
            pieces = []
            if start:
                pieces.append(_a.zeros(batch.as_list() + [m, start], dtype=self.dtype))
            pieces.append(dense)
            if n - start - size:
                pieces.append(_a.zeros(batch.as_list() + [m, n - start - size], dtype=self.dtype))
            rows.append(_a.concat(pieces, axis=-1) if len(pieces) > 1 else dense)
            start += size
        return _a.concat(rows, axis=-2) if len(rows) > 1 else rows[0]

    def _assert_non_singular(self) -> Any:
        from ..ops import constant_op as _co
        return _co.group(*[op.assert_non_singular() for op in self._operators])
