"""tf.linalg.LinearOperatorDiag: a batch of diagonal matrices held as their diagonals."""
from __future__ import annotations

from typing import Any, Optional

from .. import graph as _g
from ..ops import array_ops as _a
from ..ops import check_ops as _chk
from ..ops import complex_ops as _cx
from ..ops import math_ops as _m
from ..ops import matrix_ops as _mx
from ..shape import TensorShape
from .base import LinearOperator, adjoint as _adjoint, check_float_dtype, conj

__all__ = ["LinearOperatorDiag"]


class LinearOperatorDiag(LinearOperator):
    """A = diag(d) for d of shape [..., N]: matmul scales rows, solve divides, the
    determinant is the product of d."""

    def __init__(self, diag: Any, is_non_singular: Optional[bool] = None, is_self_adjoint: Optional[bool] = None,
                 is_positive_definite: Optional[bool] = None, is_square: Optional[bool] = None,
                 name: str = "LinearOperatorDiag") -> None:
        with _g.name_scope(name):
            self._diag = _g.convert_to_tensor(diag, name="diag")
        check_float_dtype(self._diag, "diag")
        if self._diag.shape.rank is not None and self._diag.shape.rank < 1:
            raise ValueError(f"Argument diag must have at least 1 dimension.  Found: {self._diag}")
        if not self._diag.dtype.is_complex:
            if is_self_adjoint is False:
                raise ValueError("A real diagonal operator is always self adjoint.")
            is_self_adjoint = True
        if is_square is False:
            raise ValueError("Only square diagonal operators currently supported.")
        super().__init__(self._diag.dtype, graph_parents=[self._diag], is_non_singular=is_non_singular,
                         is_self_adjoint=is_self_adjoint, is_positive_definite=is_positive_definite, is_square=True,
                         name=name, parameters=dict(diag=diag))

    @property
    def diag(self) -> _g.Tensor:
        return self._diag

    def _shape(self) -> TensorShape:
        s = self._diag.shape
        if s.dims is None:
            return TensorShape(None)
        return TensorShape(list(s.dims) + [s.dims[-1]])

    def _shape_tensor(self) -> _g.Tensor:
        s = _a.shape(self._diag)
        return _a.concat([s, s[-1:]], 0)

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        d = conj(self._diag) if adjoint else self._diag
        x = _adjoint(x) if adjoint_arg else x
        return _a.expand_dims(d, -1) * x

    def _solve(self, rhs: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        d = conj(self._diag) if adjoint else self._diag
        rhs = _adjoint(rhs) if adjoint_arg else rhs
        return rhs / _a.expand_dims(d, -1)

    def _determinant(self) -> _g.Tensor:
        return _m.reduce_prod(self._diag, axis=-1)

    def _log_abs_determinant(self) -> _g.Tensor:
        mag = _cx.complex_abs(self._diag) if self._diag.dtype.is_complex else _m.abs(self._diag)
        return _m.reduce_sum(_m.log(mag), axis=-1)

    def _trace(self) -> _g.Tensor:
        return _m.reduce_sum(self._diag, axis=-1)

    def _diag_part(self) -> _g.Tensor:
        return self._diag

    def _to_dense(self) -> _g.Tensor:
        return _mx.matrix_diag(self._diag)

    def _add_to_tensor(self, x: _g.Tensor) -> _g.Tensor:
        return _mx.matrix_set_diag(x, self._diag + _mx.matrix_diag_part(x))

    def _assert_non_singular(self) -> Any:
        mag = _cx.complex_abs(self._diag) if self._diag.dtype.is_complex else _m.abs(self._diag)
        return _chk.assert_positive(mag, message="Singular operator:  Diagonal contained zero values.")

    def _assert_positive_definite(self) -> Any:
        re = _cx.real(self._diag) if self._diag.dtype.is_complex else self._diag
        return _chk.assert_positive(re, message="Diagonal operator had diagonal entries with non-positive real "
                                                "part, thus is not positive definite.")

    def _assert_self_adjoint(self) -> Any:
        if not self._diag.dtype.is_complex:
            from ..ops import constant_op as _co
            return _co.no_op("assert_self_adjoint")
        return _chk.assert_equal(_cx.imag(self._diag), _a.zeros_like(_cx.imag(self._diag)),
                                 message="This diagonal operator contained non-zero imaginary values.  "
                                         "Thus it was not self-adjoint.")
