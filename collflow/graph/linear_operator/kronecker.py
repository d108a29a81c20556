"""tf.linalg.LinearOperatorKronecker: A1 (x) A2 (x) ... (x) An, applied factor by factor
on a reshaped argument, never forming the [prod M_i, prod N_i] product."""
from __future__ import annotations

from typing import Any, Optional, Sequence

from .. import graph as _g
from ..ops import array_ops as _a
from ..ops import math_ops as _m
from ..ops import matrix_ops as _mx
from ..shape import TensorShape, dimension_value
from .base import LinearOperator, adjoint as _adjoint
from .composition import OperatorOfFactors, check_operators, inherit_hints

__all__ = ["LinearOperatorKronecker"]


def _reshape_last2(t: _g.Tensor, a: int, b: int) -> _g.Tensor:
    """t [..., p, q] viewed as [..., a, b] (a * b = p * q)."""
    batch = t.shape[:-2]
    if batch.is_fully_defined():
        return _a.reshape(t, batch.as_list() + [a, b])
    return _a.reshape(t, _a.concat([_a.shape(t)[:-2], [a, b]], 0))


def _prod(values: Sequence[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _kron_dense(a: _g.Tensor, b: _g.Tensor) -> _g.Tensor:
    """The Kronecker product of two batches of dense matrices (outer product, reshaped)."""
    m1, n1 = a.shape.as_list()[-2:]
    m2, n2 = b.shape.as_list()[-2:]
    # [..., m1, 1, n1, 1] * [..., 1, m2, 1, n2] = [..., m1, m2, n1, n2]: entry a_ij b_kl at row
    # (i, k) and column (j, l) once the pairs are flattened
    outer = _a.expand_dims(_a.expand_dims(a, -1), -3) * _a.expand_dims(_a.expand_dims(b, -3), -2)
    batch = outer.shape[:-4]
    if batch.is_fully_defined():
        return _a.reshape(outer, batch.as_list() + [m1 * m2, n1 * n2])
    return _a.reshape(outer, _a.concat([_a.shape(outer)[:-4], [m1 * m2, n1 * n2]], 0))


class LinearOperatorKronecker(OperatorOfFactors):
    def __init__(self, operators: Sequence[LinearOperator], is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: Optional[bool] = None, name: Optional[str] = None) -> None:
        self._operators = check_operators(operators, "Kronecker")
        is_non_singular, is_self_adjoint, is_positive_definite = inherit_hints(
            self._operators, (is_non_singular, is_self_adjoint, is_positive_definite),
            ("non-singular", "self-adjoint", "positive-definite"),
            lambda attr, what, value: (f"The Kronecker product of {what} operators is always {what}. Expected "
                                       f"argument `{attr}` to be True. Received: {value}."))
        self._rows = [dimension_value(op.range_dimension) for op in self._operators]
        self._cols = [dimension_value(op.domain_dimension) for op in self._operators]
        if None in self._rows or None in self._cols:
            raise NotImplementedError("LinearOperatorKronecker needs factors of static size")
        self._init_factors(operators, "_x_", is_non_singular, is_self_adjoint, is_positive_definite, is_square, name)

    def _shape(self) -> TensorShape:
        batch = self._batch()
        if batch.dims is None:
            return TensorShape(None)
        return TensorShape(list(batch.dims) + [_prod(self._rows), _prod(self._cols)])

    def _apply(self, x: _g.Tensor, adjoint: bool, solve: bool) -> _g.Tensor:
        """Each factor in turn on x [..., prod(in), R]: view x as [..., in_1, rest], apply the
        factor to the leading axis, rotate that axis to the end; after all factors the
        layout is [..., R, out_1 ... out_n], transposed back to [..., prod(out), R]."""
        ins = self._rows if adjoint else self._cols
        outs = self._cols if adjoint else self._rows
        r = dimension_value(x.shape[-1])
        if r is None:
            raise NotImplementedError("LinearOperatorKronecker needs an argument with a static column count")
        total = _prod(ins) * r
        cur = x
        for op, n_in, n_out in zip(self._operators, ins, outs):
            cur = _reshape_last2(cur, n_in, total // n_in)
            cur = op.solve(cur, adjoint=adjoint) if solve else op.matmul(cur, adjoint=adjoint)
            total = total // n_in * n_out
            cur = _mx.matrix_transpose(cur)  # [..., rest, n_out]: the applied axis moves last
        cur = _reshape_last2(cur, r, total // r)
        return _mx.matrix_transpose(cur)

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        x = _adjoint(x) if adjoint_arg else x
        return self._apply(x, adjoint, solve=False)

    def _solve(self, rhs: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        if not all(op.is_square for op in self._operators):
            return super()._solve(rhs, adjoint, adjoint_arg)
        rhs = _adjoint(rhs) if adjoint_arg else rhs
        return self._apply(rhs, adjoint, solve=True)

    def _square_factors(self) -> bool:
        return all(m == n for m, n in zip(self._rows, self._cols))

    def _determinant(self) -> _g.Tensor:
        if not self._square_factors():
            return super()._determinant()
        total = _prod(self._rows)
        out = None
        for op, n in zip(self._operators, self._rows):
            term = _m.pow(op.determinant(), _g.convert_to_tensor(float(total // n), dtype=self.dtype))
            out = term if out is None else out * term
        return out

    def _log_abs_determinant(self) -> _g.Tensor:
        if not self._square_factors():
            return super()._log_abs_determinant()
        total = _prod(self._rows)
        out = None
        for op, n in zip(self._operators, self._rows):
            term = op.log_abs_determinant() * float(total // n)
            out = term if out is None else out + term
        return out

    def _trace(self) -> _g.Tensor:
        if not self._square_factors():
            return super()._trace()
        out = self._operators[0].trace()
        for op in self._operators[1:]:
            out = out * op.trace()
        return out

    def _diag_part(self) -> _g.Tensor:
        if not self._square_factors():
            return super()._diag_part()
        out = self._operators[0].diag_part()
        for op in self._operators[1:]:
            d = op.diag_part()
            prod = _a.expand_dims(out, -1) * _a.expand_dims(d, -2)
            batch = prod.shape[:-2]
            n = prod.shape.dims[-1] * prod.shape.dims[-2]
            out = _a.reshape(prod, batch.as_list() + [n]) if batch.is_fully_defined() else \
                _a.reshape(prod, _a.concat([_a.shape(prod)[:-2], [n]], 0))
        return out

    def _to_dense(self) -> _g.Tensor:
        out = self._operators[0].to_dense()
        for op in self._operators[1:]:
            out = _kron_dense(out, op.to_dense())
        return out

    def _assert_non_singular(self) -> Any:
        from ..ops import constant_op as _co
        return _co.group(*[op.assert_non_singular() for op in self._operators])
