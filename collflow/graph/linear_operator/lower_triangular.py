"""tf.linalg.LinearOperatorLowerTriangular: the lower triangle of a [..., N, N] matrix
(the part above the diagonal is ignored, as TF); solve is a triangular solve."""
from __future__ import annotations

from typing import Any, Optional

from .. import graph as _g
from ..ops import array_ops as _a
from ..ops import check_ops as _chk
from ..ops import complex_ops as _cx
from ..ops import linalg_ops as _la
from ..ops import math_ops as _m
from ..ops import matrix_ops as _mx
from ..shape import TensorShape
from .base import LinearOperator, adjoint as _adjoint, broadcast_batch, check_float_dtype, static_batch

__all__ = ["LinearOperatorLowerTriangular"]


class LinearOperatorLowerTriangular(LinearOperator):
    def __init__(self, tril: Any, is_non_singular: Optional[bool] = None, is_self_adjoint: Optional[bool] = None,
                 is_positive_definite: Optional[bool] = None, is_square: Optional[bool] = None,
                 name: str = "LinearOperatorLowerTriangular") -> None:
        if is_square is False:
            raise ValueError("Only square lower triangular operators supported at this time.")
        with _g.name_scope(name):
            self._tril_arg = _g.convert_to_tensor(tril, name="tril")
            check_float_dtype(self._tril_arg, "tril")
            if self._tril_arg.shape.rank is not None and self._tril_arg.shape.rank < 2:
                raise ValueError(f"Argument tril must have at least 2 dimensions.  Found: {self._tril_arg}")
            # gradients reach only the entries the operator uses
            self._tril = _la.matrix_band_part(self._tril_arg, -1, 0)
        super().__init__(self._tril.dtype, graph_parents=[self._tril_arg], is_non_singular=is_non_singular,
                         is_self_adjoint=is_self_adjoint, is_positive_definite=is_positive_definite, is_square=True,
                         name=name, parameters=dict(tril=tril))

    @property
    def tril(self) -> _g.Tensor:
        return self._tril_arg

    def _shape(self) -> TensorShape:
        return self._tril.shape

    def _shape_tensor(self) -> _g.Tensor:
        return _a.shape(self._tril)

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        return _m.matmul(self._tril, x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def _diag(self) -> _g.Tensor:
        return _mx.matrix_diag_part(self._tril)

    def _determinant(self) -> _g.Tensor:
        return _m.reduce_prod(self._diag(), axis=-1)

    def _log_abs_determinant(self) -> _g.Tensor:
        d = self._diag()
        mag = _cx.complex_abs(d) if d.dtype.is_complex else _m.abs(d)
        return _m.reduce_sum(_m.log(mag), axis=-1)

    def _solve(self, rhs: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        rhs = _adjoint(rhs) if adjoint_arg else rhs
        batch = static_batch(self._tril.shape[:-2], rhs.shape[:-2])
        return _la.matrix_triangular_solve(broadcast_batch(self._tril, batch), broadcast_batch(rhs, batch),
                                           lower=True, adjoint=adjoint)

    def _diag_part(self) -> _g.Tensor:
        return self._diag()

    def _to_dense(self) -> _g.Tensor:
        return self._tril

    def _assert_non_singular(self) -> Any:
        d = self._diag()
        mag = _cx.complex_abs(d) if d.dtype.is_complex else _m.abs(d)
        return _chk.assert_positive(mag, message="Singular operator:  Diagonal contained zero values.")
