"""tf.linalg.LinearOperatorBlockLowerTriangular: a square block matrix with operators on and
below its diagonal, given row by row ([[A00], [A10, A11], [A20, A21, A22], ...]).  matmul
works block by block; solve is block forward (adjoint: backward) substitution through the
diagonal operators' solves; the determinant is the product of the diagonal blocks'.

As TF's, matmul / solve (and matvec / solvevec) also take the argument as a list of blocks
and then return a list."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from .. import graph as _g
from ..ops import array_ops as _a
from ..ops import constant_op as _cf
from ..ops import math_ops as _m
from ..shape import TensorShape, dimension_value
from .base import LinearOperator, adjoint as _adjoint, broadcast_batch, static_batch

__all__ = ["LinearOperatorBlockLowerTriangular"]


def _is_nested(x: Any) -> bool:
    return isinstance(x, (list, tuple))


class LinearOperatorBlockLowerTriangular(LinearOperator):
    """A block lower-triangular operator (tf.linalg.LinearOperatorBlockLowerTriangular): row i
    of `operators` holds the blocks (i, 0) .. (i, i), the last its diagonal block; solves go
    by forward substitution over the blocks."""
    def __init__(self, operators: Sequence[Sequence[LinearOperator]], is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: Optional[bool] = None, name: str = "LinearOperatorBlockLowerTriangular") -> None:
        parameters = dict(operators=operators, is_non_singular=is_non_singular, is_self_adjoint=is_self_adjoint,
                          is_positive_definite=is_positive_definite, is_square=is_square, name=name)
        if not _is_nested(operators) or not all(_is_nested(r) for r in operators):
            raise TypeError(f"Expected argument `operators` to be a list of lists of LinearOperators, got "
                            f"{operators!r}")
        ops = [list(r) for r in operators]
        if not ops:
            raise ValueError(f"Argument `operators` must be a list of >=1 operators. Received: {ops}.")
        self._operators = ops
        self._diagonal_operators = [r[-1] for r in ops]
        dtype = ops[0][0].dtype
        for i, row in enumerate(ops):
            for op in row:
                if op.dtype != dtype:
                    raise TypeError(f"Expected all operators to have the same dtype.  Found "
                                    f"{[(o.name, o.dtype.name) for o in row]} in row {i} and {dtype.name} in row 0.")
        is_non_singular = self._check_non_singular(is_non_singular)
        for i, row in enumerate(ops):
            if len(row) != i + 1:
                raise ValueError(f"Argument `operators[{i}]` must contain `{i + 1}` blocks. "
                                 f"Received: {len(row)} blocks.")
        self._check_block_dims()
        if is_square is False:
            raise ValueError("`LinearOperatorBlockLowerTriangular` must be square. Expected argument `is_square` to "
                             f"be True. Received: {is_square}.")
        for i, op in enumerate(self._diagonal_operators):
            if op.is_square is False:
                raise ValueError("Matrices on the diagonal (the final elements of each row-partition in the "
                                 f"`operators` list) must be square. Expected argument `operators[{i}][-1].is_square` "
                                 f"to be True. Received: {op.is_square}.")
        self._sizes = [dimension_value(op.domain_dimension) for op in self._diagonal_operators]
        if any(s is None for s in self._sizes):
            raise NotImplementedError("LinearOperatorBlockLowerTriangular needs diagonal blocks of static size")
        super().__init__(dtype, graph_parents=[p for row in ops for op in row for p in op.graph_parents],
                         is_non_singular=is_non_singular, is_self_adjoint=is_self_adjoint,
                         is_positive_definite=is_positive_definite, is_square=True, name=name,
                         parameters=parameters)

    def _check_non_singular(self, is_non_singular: Optional[bool]) -> Optional[bool]:
        if all(op.is_non_singular for op in self._diagonal_operators):
            if is_non_singular is False:
                raise ValueError("A blockwise lower-triangular operator with non-singular operators on the main "
                                 "diagonal is always non-singular. Expected argument `is_non_singular` to be True. "
                                 f"Received: {is_non_singular}.")
            return True
        if any(op.is_non_singular is False for op in self._diagonal_operators):
            if is_non_singular is True:
                raise ValueError("A blockwise lower-triangular operator with a singular operator on the main "
                                 "diagonal is always singular. Expected argument `is_non_singular` to be True. "
                                 f"Received: {is_non_singular}.")
            return False
        return is_non_singular

    def _check_block_dims(self) -> None:
        ops = self._operators
        for i in range(1, len(ops)):
            for j in range(i):
                op, above, right = ops[i][j], ops[i - 1][j], ops[i][j + 1]
                a, b = dimension_value(op.domain_dimension), dimension_value(above.domain_dimension)
                if a is not None and b is not None and a != b:
                    raise ValueError(f"Argument `operators[{i}][{j}].domain_dimension` ({a}) must be the same as "
                                     f"`operators[{i - 1}][{j}].domain_dimension` ({b}).")
                a, b = dimension_value(op.range_dimension), dimension_value(right.range_dimension)
                if a is not None and b is not None and a != b:
                    raise ValueError(f"Argument `operators[{i}][{j}].range_dimension` ({a}) must be the same as "
                                     f"`operators[{i}][{j + 1}].range_dimension` ({b}).")

    @property
    def operators(self) -> List[List[LinearOperator]]:
        return [list(r) for r in self._operators]

    def _batch(self) -> TensorShape:
        return static_batch(*[op.batch_shape for row in self._operators for op in row])

    def _shape(self) -> TensorShape:
        batch = self._batch()
        n = sum(self._sizes)
        return TensorShape(None) if batch.dims is None else TensorShape(list(batch.dims) + [n, n])

    # -- blockwise arguments ------------------------------------------------------------------
    def _blockwise(self, x: Any, dim: int) -> bool:
        """TF's arg_is_blockwise for known block sizes: a list of as many blocks as the operator has."""
        if not _is_nested(x) or len(x) != len(self._sizes):
            return False
        if not any(_is_nested(b) for b in x):
            return True
        dims = [_g.convert_to_tensor(b).shape[dim] for b in x]
        return all(dimension_value(d) in (None, s) for d, s in zip(dims, self._sizes))

    def _blocks_in(self, x: Any, dim: int) -> List[_g.Tensor]:
        blocks = []
        for i, b in enumerate(x):
            b = _g.convert_to_tensor(b, name=f"x_{i}")
            self._check_input_dtype(b)
            self._check_dim(self._sizes[i], b.shape[dim])
            blocks.append(b)
        return blocks

    def _split(self, x: _g.Tensor) -> List[_g.Tensor]:
        return _a.split(x, self._sizes, axis=-2) if len(self._sizes) > 1 else [x]

    @staticmethod
    def _join(parts: List[_g.Tensor]) -> _g.Tensor:
        batch = static_batch(*[p.shape[:-2] for p in parts])
        return _a.concat([broadcast_batch(p, batch) for p in parts], axis=-2) if len(parts) > 1 else parts[0]

    # -- matmul / solve -------------------------------------------------------------------------
    def matmul(self, x: Any, adjoint: bool = False, adjoint_arg: bool = False, name: str = "matmul") -> Any:
        """self @ x for a tensor, an operator or a list of blocks (then a list of blocks back)."""
        dim = -1 if adjoint_arg else -2
        if not isinstance(x, LinearOperator) and self._blockwise(x, dim):
            with self._name_scope(name):
                return self._block_matmul(self._blocks_in(x, dim), adjoint, adjoint_arg)
        return super().matmul(x, adjoint=adjoint, adjoint_arg=adjoint_arg, name=name)

    def _block_matmul(self, xs: List[_g.Tensor], adjoint: bool, adjoint_arg: bool) -> List[_g.Tensor]:
        ops, n = self._operators, len(self._operators)
        out = []
        for i in range(n):
            # row i of A (A^H: column i of A, conjugate-transposed) against the blocks of x
            terms = ([ops[j][i].matmul(xs[j], adjoint=True, adjoint_arg=adjoint_arg) for j in range(i, n)] if adjoint
                     else [ops[i][j].matmul(xs[j], adjoint_arg=adjoint_arg) for j in range(i + 1)])
            acc = terms[0]
            for t in terms[1:]:
                acc = acc + t
            out.append(acc)
        return out

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        x = _adjoint(x) if adjoint_arg else x
        return self._join(self._block_matmul(self._split(x), adjoint, False))

    def matvec(self, x: Any, adjoint: bool = False, name: str = "matvec") -> Any:
        """The operator (or its adjoint) times vector x; a list x is taken block by block."""
        if self._blockwise(x, -1):
            with self._name_scope(name):
                cols = [_a.expand_dims(b, -1) for b in self._blocks_in(x, -1)]
                return [_a.squeeze(y, [-1]) for y in self._block_matmul(cols, adjoint, False)]
        return super().matvec(x, adjoint=adjoint, name=name)

    def solve(self, rhs: Any, adjoint: bool = False, adjoint_arg: bool = False, name: str = "solve") -> Any:
        """x with self @ x = rhs; rhs a tensor, an operator or a list of blocks (then a list back)."""
        dim = -1 if adjoint_arg else -2
        if not isinstance(rhs, LinearOperator) and self._blockwise(rhs, dim):
            self._check_solvable()
            with self._name_scope(name):
                blocks = self._blocks_in(rhs, dim)
                return self._block_solve([_adjoint(b) for b in blocks] if adjoint_arg else blocks, adjoint)
        return super().solve(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg, name=name)

    def _block_solve(self, ys: List[_g.Tensor], adjoint: bool) -> List[_g.Tensor]:
        ops, n = self._operators, len(self._operators)
        xs: List[Any] = [None] * n
        order = reversed(range(n)) if adjoint else range(n)
        for i in order:
            y = ys[i]
            # subtract what the blocks already solved contribute to block row i
            done = range(i + 1, n) if adjoint else range(i)
            for j in done:
                y = y - (ops[j][i].matmul(xs[j], adjoint=True) if adjoint else ops[i][j].matmul(xs[j]))
            xs[i] = ops[i][i].solve(y, adjoint=adjoint)
        return xs

    def _solve(self, rhs: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        rhs = _adjoint(rhs) if adjoint_arg else rhs
        return self._join(self._block_solve(self._split(rhs), adjoint))

    def solvevec(self, rhs: Any, adjoint: bool = False, name: str = "solve") -> Any:
        """x with the operator (or its adjoint) times x = rhs; a list rhs is taken block by block."""
        if self._blockwise(rhs, -1):
            self._check_solvable()
            with self._name_scope(name):
                cols = [_a.expand_dims(b, -1) for b in self._blocks_in(rhs, -1)]
                return [_a.squeeze(x, [-1]) for x in self._block_solve(cols, adjoint)]
        return super().solvevec(rhs, adjoint=adjoint, name=name)

    # -- scalars and parts ------------------------------------------------------------------------
    def _determinant(self) -> _g.Tensor:
        if all(op.is_positive_definite for op in self._diagonal_operators):
            return _m.exp(self._log_abs_determinant())
        out = self._diagonal_operators[0].determinant()
        for op in self._diagonal_operators[1:]:
            out = out * op.determinant()
        return out

    def _log_abs_determinant(self) -> _g.Tensor:
        out = self._diagonal_operators[0].log_abs_determinant()
        for op in self._diagonal_operators[1:]:
            out = out + op.log_abs_determinant()
        return out

    def _trace(self) -> _g.Tensor:
        out = self._diagonal_operators[0].trace()
        for op in self._diagonal_operators[1:]:
            out = out + op.trace()
        return out

    def _diag_part(self) -> _g.Tensor:
        parts = [_a.expand_dims(op.diag_part(), -1) for op in self._diagonal_operators]
        return _a.squeeze(self._join(parts), [-1])

    def _to_dense(self) -> _g.Tensor:
        batch = self._batch()
        if not batch.is_fully_defined():
            raise NotImplementedError("LinearOperatorBlockLowerTriangular.to_dense needs a static batch shape")
        total, rows, cols = sum(self._sizes), [], 0
        for i, row in enumerate(self._operators):
            pieces = [broadcast_batch(op.to_dense(), batch) for op in row]
            cols += self._sizes[i]
            if total - cols:
                pieces.append(_a.zeros(batch.as_list() + [self._sizes[i], total - cols], dtype=self.dtype))
            rows.append(_a.concat(pieces, axis=-1) if len(pieces) > 1 else pieces[0])
        return _a.concat(rows, axis=-2) if len(rows) > 1 else rows[0]

    def _assert_non_singular(self) -> Any:
        return _cf.group(*[op.assert_non_singular() for op in self._diagonal_operators])

    def eigvals(self, name: str = "eigvals") -> _g.Tensor:
        """The diagonal blocks' eigenvalues, concatenated (for an operator hinted self-adjoint, as TF)."""
        if not self.is_self_adjoint:
            raise NotImplementedError("Only self-adjoint matrices are supported.")
        with self._name_scope(name):
            parts = [_a.expand_dims(op.eigvals(), -1) for op in self._diagonal_operators]
            return _a.squeeze(self._join(parts), [-1])

