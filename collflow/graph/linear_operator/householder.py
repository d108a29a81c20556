"""tf.linalg.LinearOperatorHouseholder: the reflection I - 2 v v^H / |v|^2 about the
hyperplane orthogonal to a (batch of) vector(s) v, applied without forming the matrix.
It is its own adjoint and inverse, its determinant is -1 and its eigenvalues -1, 1, ..., 1."""
from __future__ import annotations

from typing import Any, Optional

from ...errors import InvalidArgumentError
from .. import graph as _g
from ..ops import array_ops as _a
from ..ops import complex_ops as _cx
from ..ops import constant_op as _cf
from ..ops import math_ops as _m
from ..ops import matrix_ops as _mx
from ..shape import TensorShape
from .base import LinearOperator, adjoint as _adjoint, broadcast_batch, check_float_dtype, conj, static_batch

__all__ = ["LinearOperatorHouseholder"]


class LinearOperatorHouseholder(LinearOperator):
    """[..., N, N] Householder reflections from reflection_axis [..., N] (any nonzero
    length: it is normalized, as TF's l2_normalize with epsilon 1e-12)."""

    def __init__(self, reflection_axis: Any, is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: Optional[bool] = None, name: str = "LinearOperatorHouseholder") -> None:
        with _g.name_scope(name):
            self._reflection_axis = _g.convert_to_tensor(reflection_axis, name="reflection_axis")
            check_float_dtype(self._reflection_axis, "reflection_axis")
            if self._reflection_axis.shape.rank is not None and self._reflection_axis.shape.rank < 1:
                raise ValueError("Argument reflection_axis must have at least 1 dimension.  "
                                 f"Found: {self._reflection_axis}")
        if is_self_adjoint is False:
            raise ValueError("A Householder operator is always self adjoint.")
        if is_positive_definite is True:
            raise ValueError("A Householder operator is always non-positive definite.")
        if is_square is False:
            raise ValueError("A Householder operator is always square.")
        super().__init__(self._reflection_axis.dtype, graph_parents=[self._reflection_axis],
                         is_non_singular=is_non_singular, is_self_adjoint=True, is_positive_definite=False,
                         is_square=True, name=name, parameters=dict(reflection_axis=reflection_axis))

    @property
    def reflection_axis(self) -> _g.Tensor:
        return self._reflection_axis

    def _shape(self) -> TensorShape:
        s = self._reflection_axis.shape
        return s if s.dims is None else TensorShape(list(s.dims) + [s.dims[-1]])

    def _shape_tensor(self) -> _g.Tensor:
        s = _a.shape(self._reflection_axis)
        return _a.concat([s, s[-1:]], 0)

    def _unit_column(self) -> _g.Tensor:
        """v / max(|v|, 1e-6) as a [..., N, 1] column (TF's l2_normalize, epsilon 1e-12 on |v|^2)."""
        v = self._reflection_axis
        sq = _cx.real(v * _cx.conj(v)) if v.dtype.is_complex else v * v
        inv = _m.rsqrt(_m.maximum(_m.reduce_sum(sq, axis=-1, keepdims=True),
                                  _g.convert_to_tensor(1e-12, dtype=sq.dtype)))
        u = v * (_m.cast(inv, v.dtype) if v.dtype.is_complex else inv)
        return _a.expand_dims(u, -1)

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        x = _adjoint(x) if adjoint_arg else x
        u = self._unit_column()
        batch = static_batch(u.shape[:-2], x.shape[:-2])
        u, x = broadcast_batch(u, batch), broadcast_batch(x, batch)
        # (I - 2 u u^H) x = x - 2 u (u^H x); self-adjoint, so `adjoint` changes nothing
        return x - 2 * _m.matmul(u, _m.matmul(u, x, adjoint_a=True))

    def _solve(self, rhs: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        return self._matmul(rhs, adjoint, adjoint_arg)  # a reflection is its own inverse

    def _to_dense(self) -> _g.Tensor:
        u = self._unit_column()
        outer = -2 * _m.matmul(u, u, adjoint_b=True)
        return _mx.matrix_set_diag(outer, 1. + _mx.matrix_diag_part(outer))

    def _diag_part(self) -> _g.Tensor:
        u = _a.squeeze(self._unit_column(), [-1])
        return 1. - 2 * u * conj(u)

    def _batch_ones(self) -> _g.Tensor:
        return _a.ones(_a.shape(self._reflection_axis)[:-1], dtype=self.dtype)

    def _trace(self) -> _g.Tensor:
        n = _a.shape(self._reflection_axis)[-1]
        return _m.cast(n - 2, self.dtype) * self._batch_ones()

    def _determinant(self) -> _g.Tensor:
        return -self._batch_ones()

    def _log_abs_determinant(self) -> _g.Tensor:
        return _a.zeros(_a.shape(self._reflection_axis)[:-1], dtype=self.dtype)

    def eigvals(self, name: str = "eigvals") -> _g.Tensor:
        """[-1, 1, ..., 1] for every batch member (ascending, as self_adjoint_eigvals)."""
        with self._name_scope(name):
            s = _a.shape(self._reflection_axis)
            ones = _a.ones(_a.concat([s[:-1], s[-1:] - 1], 0), dtype=self.dtype)
            neg = -_a.ones(_a.concat([s[:-1], [1]], 0), dtype=self.dtype)
            return _a.concat([neg, ones], -1)

    def cond(self, name: str = "cond") -> _g.Tensor:
        """1: a reflection is orthogonal (unitary)."""
        with self._name_scope(name):
            return self._batch_ones()

    def adjoint(self, name: str = "adjoint") -> "LinearOperatorHouseholder":
        """Itself: a Householder reflection is self-adjoint."""
        return self

    def inverse(self, name: str = "inverse") -> "LinearOperatorHouseholder":
        """Itself: a Householder reflection is its own inverse."""
        return self

    def _assert_non_singular(self) -> Any:
        return _cf.no_op("assert_non_singular")

    def _assert_self_adjoint(self) -> Any:
        return _cf.no_op("assert_self_adjoint")

    def _assert_positive_definite(self) -> Any:
        raise InvalidArgumentError("Householder operators are always non-positive definite.")

