"""tf.linalg.LinearOperatorPermutation: the permutation matrix of an integer vector perm
(row i of A x is row perm[i] of x, tf.transpose's convention), applied by gathering rows.
Its adjoint and inverse gather by argsort(perm); |det| = 1."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from ..ops import array_ops as _a
from ..ops import constant_op as _cf
from ..ops import math_ops as _m
from ..ops.misc_ops import range as _range
from ..ops.rearrange_ops import argsort
from ..shape import TensorShape
from .base import LinearOperator, adjoint as _adjoint, static_batch

__all__ = ["LinearOperatorPermutation"]

_DTYPES = (_dt.float16, _dt.float32, _dt.float64, _dt.complex64, _dt.complex128)


def _static(t: _g.Tensor) -> Optional[np.ndarray]:
    return np.asarray(t.op.attrs["value"]) if t.op.type == "Const" else None


class LinearOperatorPermutation(LinearOperator):
    """[..., N, N] permutation matrices of `perm` [..., N] (unique integers 0..N-1), acting on
    arguments of `dtype` (default float32)."""

    def __init__(self, perm: Any, dtype: Any = _dt.float32, is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: Optional[bool] = None, name: str = "LinearOperatorPermutation") -> None:
        dtype = _dt.as_dtype(dtype)
        with _g.name_scope(name):
            self._perm = _g.convert_to_tensor(perm, name="perm")
            if self._perm.shape.rank is not None and self._perm.shape.rank < 1:
                raise ValueError(f"Argument `perm` must have at least 1 dimension. Received: {self._perm}.")
            if not self._perm.dtype.is_integer:
                raise TypeError(f"Argument `perm` must be integer dtype. Received: {self._perm}.")
            known = _static(self._perm)
            if known is not None and np.any(np.sort(known, axis=-1) != np.arange(known.shape[-1])):
                raise ValueError("Argument `perm` must be a vector of unique integers from 0 to "
                                 f"{known.shape[-1] - 1}.")
        if dtype not in _DTYPES:
            raise TypeError(f"dtype must be one of {[d.name for d in _DTYPES]}, got {dtype.name}")
        if is_non_singular is False:
            raise ValueError("A Permutation operator is always non-singular. Expected argument `is_non_singular` "
                             f"to be True. Received: {is_non_singular}.")
        if is_square is False:
            raise ValueError("A Permutation operator is always square. Expected argument `is_square` to be True. "
                             f"Received: {is_square}.")
        super().__init__(dtype, graph_parents=[self._perm], is_non_singular=is_non_singular,
                         is_self_adjoint=is_self_adjoint, is_positive_definite=is_positive_definite, is_square=True,
                         name=name, parameters=dict(perm=perm, dtype=dtype, is_non_singular=is_non_singular,
                                                    is_self_adjoint=is_self_adjoint,
                                                    is_positive_definite=is_positive_definite, is_square=is_square,
                                                    name=name))

    @property
    def perm(self) -> _g.Tensor:
        return self._perm

    def _shape(self) -> TensorShape:
        s = self._perm.shape
        return s if s.dims is None else TensorShape(list(s.dims) + [s.dims[-1]])

    def _shape_tensor(self) -> _g.Tensor:
        s = _a.shape(self._perm)
        return _a.concat([s, s[-1:]], 0)

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        perm = self._perm
        if adjoint and not self.is_self_adjoint:
            # P^H = P^{-1}: gathering by the inverse permutation
            perm = _m.cast(argsort(perm, axis=-1), perm.dtype)
        x = _adjoint(x) if adjoint_arg else x
        if perm.shape.rank == 1 and x.shape.rank is not None:
            return _a.gather(x, perm, axis=x.shape.rank - 2)   # one permutation for every batch member
        batch = static_batch(x.shape[:-2], perm.shape[:-1])
        if batch.dims is None or not batch.is_fully_defined() or x.shape.dims is None:
            raise NotImplementedError("LinearOperatorPermutation needs static batch shapes for a batch of "
                                      f"permutations (perm {perm.shape}, argument {x.shape})")
        xb = x if list(x.shape.dims[:-2]) == batch.as_list() else _a.broadcast_to(
            x, batch.as_list() + x.shape.as_list()[-2:])
        pb = perm if list(perm.shape.dims[:-1]) == batch.as_list() else _a.broadcast_to(
            perm, batch.as_list() + [perm.shape.dims[-1]])
        return _a.gather(xb, pb, axis=-2, batch_dims=len(batch.dims))

    def _solve(self, rhs: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        return self._matmul(rhs, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _batch_zeros(self) -> _g.Tensor:
        return _a.zeros(_a.shape(self._perm)[:-1], dtype=self.dtype)

    def _log_abs_determinant(self) -> _g.Tensor:
        return self._batch_zeros()

    def _one_hot(self, row: _g.Tensor) -> _g.Tensor:
        n = _m.cast(_a.shape(self._perm)[-1], self._perm.dtype)
        return _m.cast(_m.equal(_range(0, n, dtype=self._perm.dtype), row), self.dtype)

    def _to_dense(self) -> _g.Tensor:
        return self._one_hot(_a.expand_dims(self._perm, -1))

    def _diag_part(self) -> _g.Tensor:
        return self._one_hot(self._perm)

    def cond(self, name: str = "cond") -> _g.Tensor:
        """1: a permutation is orthogonal."""
        with self._name_scope(name):
            return _a.ones(_a.shape(self._perm)[:-1], dtype=self.dtype)

    def _assert_non_singular(self) -> Any:
        return _cf.no_op("assert_non_singular")

