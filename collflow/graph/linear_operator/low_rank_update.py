"""tf.linalg.LinearOperatorLowRankUpdate: A = L + U D V^H with L an operator, U [..., M, K],
D = diag(diag_update) (the identity without one), V [..., N, K] (U without one).  Solves use
the Woodbury identity and the determinant the matrix determinant lemma, both through the
K x K capacitance matrix C = D^{-1} + V^H L^{-1} U."""
from __future__ import annotations

from typing import Any, Optional

from .. import graph as _g
from ..ops import complex_ops as _cx
from ..ops import linalg_ops as _la
from ..ops import math_ops as _m
from ..ops import matrix_ops as _mx
from ..shape import TensorShape, dimension_value
from .base import LinearOperator, adjoint as _adjoint, broadcast_batch, static_batch

__all__ = ["LinearOperatorLowRankUpdate"]


class LinearOperatorLowRankUpdate(LinearOperator):
    def __init__(self, base_operator: LinearOperator, u: Any, diag_update: Any = None, v: Any = None,
                 is_diag_update_positive: Optional[bool] = None, is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: Optional[bool] = None, name: str = "LinearOperatorLowRankUpdate") -> None:
        dtype = base_operator.dtype
        if diag_update is None:
            if is_diag_update_positive is False:
                raise ValueError("Default diagonal is the identity, which is positive.  However, user set "
                                 "'is_diag_update_positive' to False.")
            is_diag_update_positive = True
        # C = D^{-1} + U^H L^{-1} U is then self-adjoint positive definite: Cholesky for it
        self._use_cholesky = bool(base_operator.is_positive_definite and base_operator.is_self_adjoint
                                  and is_diag_update_positive and v is None)
        # A = L + U D U^H with L self-adjoint and D real is self-adjoint
        if base_operator.is_self_adjoint and v is None and not dtype.is_complex:
            if is_self_adjoint is False:
                raise ValueError("A = L + UDU^H, with L self-adjoint and D real diagonal.  Since UDU^H is "
                                 "self-adjoint, this must be a self-adjoint operator.")
            is_self_adjoint = True
        if self._use_cholesky:
            if is_positive_definite is False or is_self_adjoint is False or is_non_singular is False:
                raise ValueError("Arguments imply this is self-adjoint positive-definite operator.")
            is_positive_definite = True
            is_self_adjoint = True
        with _g.name_scope(name):
            self._u = _g.convert_to_tensor(u, name="u")
            self._v = self._u if v is None else _g.convert_to_tensor(v, name="v")
            self._diag_update = None if diag_update is None else _g.convert_to_tensor(diag_update,
                                                                                   name="diag_update")
        for t, what in ((self._u, "u"), (self._v, "v"), (self._diag_update, "diag_update")):
            if t is not None and t.dtype != dtype:
                raise TypeError(f"Expected argument {what} to have dtype {dtype.name}. Found: {t.dtype.name}")
        self._base_operator = base_operator
        self._use_v = v is not None
        self._is_diag_update_positive = is_diag_update_positive
        from .diag import LinearOperatorDiag
        from .identity import LinearOperatorIdentity
        k = dimension_value(self._u.shape[-1])
        if self._diag_update is not None:
            self._diag_operator = LinearOperatorDiag(self._diag_update, is_positive_definite=is_diag_update_positive)
        else:
            if k is None:
                raise NotImplementedError("u needs a static rank K when diag_update is None")
            self._diag_operator = LinearOperatorIdentity(k, dtype=dtype)
        parents = base_operator.graph_parents + [self._u, self._v] + (
            [] if self._diag_update is None else [self._diag_update])
        super().__init__(dtype, graph_parents=parents, is_non_singular=is_non_singular,
                         is_self_adjoint=is_self_adjoint, is_positive_definite=is_positive_definite,
                         is_square=is_square, name=name,
                         parameters=dict(base_operator=base_operator, u=u, diag_update=diag_update, v=v))

    @property
    def u(self) -> _g.Tensor:
        return self._u

    @property
    def v(self) -> _g.Tensor:
        return self._v

    @property
    def diag_update(self) -> Optional[_g.Tensor]:
        return self._diag_update

    @property
    def diag_operator(self) -> LinearOperator:
        return self._diag_operator

    @property
    def base_operator(self) -> LinearOperator:
        return self._base_operator

    @property
    def is_diag_update_positive(self) -> Optional[bool]:
        return self._is_diag_update_positive

    def _shape(self) -> TensorShape:
        s = self._base_operator.shape
        if s.dims is None:
            return s
        batch = static_batch(s[:-2], self._u.shape[:-2], self._v.shape[:-2], self._diag_operator.batch_shape)
        return TensorShape(None) if batch.dims is None else TensorShape(list(batch.dims) + list(s.dims[-2:]))

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        # A x = L x + U D V^H x;  A^H x = L^H x + V D^H U^H x
        u, v = (self._v, self._u) if adjoint else (self._u, self._v)
        x = _adjoint(x) if adjoint_arg else x
        lx = self._base_operator.matmul(x, adjoint=adjoint)
        vh_x = _m.matmul(v, x, adjoint_a=True)
        d_vh_x = self._diag_operator.matmul(vh_x, adjoint=adjoint)
        return lx + _m.matmul(u, d_vh_x)

    def _capacitance(self, adjoint: bool = False) -> _g.Tensor:
        """C = D^{-1} + V^H L^{-1} U (its adjoint with adjoint=True)."""
        u, v = (self._v, self._u) if adjoint else (self._u, self._v)
        linv_u = self._base_operator.solve(u, adjoint=adjoint)
        vh_linv_u = _m.matmul(v, linv_u, adjoint_a=True)
        return self._diag_operator.inverse().add_to_tensor(vh_linv_u) if not adjoint else \
            self._diag_operator.inverse().adjoint().add_to_tensor(vh_linv_u)

    def _solve(self, rhs: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        # Woodbury: A^{-1} = L^{-1} - L^{-1} U C^{-1} V^H L^{-1} (U, V swapped and L^H for A^H)
        if self._base_operator.is_non_singular is False:
            raise ValueError("Solve not implemented unless this is a perturbation of a non-singular "
                             "LinearOperator.")
        u, v = (self._v, self._u) if adjoint else (self._u, self._v)
        rhs = _adjoint(rhs) if adjoint_arg else rhs
        linv_rhs = self._base_operator.solve(rhs, adjoint=adjoint)
        vh_linv_rhs = _m.matmul(v, linv_rhs, adjoint_a=True)
        cap = self._capacitance(adjoint)
        batch = static_batch(cap.shape[:-2], vh_linv_rhs.shape[:-2])
        cap, vh_linv_rhs = broadcast_batch(cap, batch), broadcast_batch(vh_linv_rhs, batch)
        if self._use_cholesky:
            cinv = _la.cholesky_solve(_la.cholesky(cap), vh_linv_rhs)
        else:
            cinv = _la.matrix_solve(cap, vh_linv_rhs)
        return linv_rhs - self._base_operator.solve(_m.matmul(u, cinv), adjoint=adjoint)

    def _log_abs_det_capacitance(self) -> _g.Tensor:
        cap = self._capacitance()
        if self._use_cholesky:
            d = _mx.matrix_diag_part(_la.cholesky(cap))
            return 2.0 * _m.reduce_sum(_m.log(_cx.real(d) if d.dtype.is_complex else d), axis=-1)
        return _la.log_matrix_determinant(cap)[1]

    def _log_abs_determinant(self) -> _g.Tensor:
        # det(A) = det(C) det(D) det(L)
        out = self._base_operator.log_abs_determinant() + self._log_abs_det_capacitance()
        if self._diag_update is not None:
            out = out + self._diag_operator.log_abs_determinant()
        return out

    def _determinant(self) -> _g.Tensor:
        if self._use_cholesky:
            return _m.exp(self._log_abs_determinant())
        det = self._base_operator.determinant() * _la.matrix_determinant(self._capacitance())
        if self._diag_update is not None:
            det = det * self._diag_operator.determinant()
        return det

    def _to_dense(self) -> _g.Tensor:
        d_vh = self._diag_operator.matmul(_adjoint(self._v))
        return self._base_operator.to_dense() + _m.matmul(self._u, d_vh)
