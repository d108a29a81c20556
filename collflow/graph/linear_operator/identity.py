"""tf.linalg.LinearOperatorIdentity, LinearOperatorScaledIdentity and LinearOperatorZeros:
operators that hold no matrix, only their size (and a scalar multiplier per batch member)."""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from ..ops import array_ops as _a
from ..ops import check_ops as _chk
from ..ops import complex_ops as _cx
from ..ops import math_ops as _m
from ..ops import matrix_ops as _mx
from ..shape import TensorShape
from .base import LinearOperator, adjoint as _adjoint, broadcast_batch, check_float_dtype, conj, static_batch

__all__ = ["LinearOperatorIdentity", "LinearOperatorScaledIdentity", "LinearOperatorZeros"]


def _static_int(value: Any, what: str) -> int:
    """A size argument as a Python int: sizes must be known when the graph is built here."""
    if isinstance(value, _g.Tensor):
        from ..ops.misc_more_ops import get_static_value
        v = get_static_value(value)
        if v is None:
            raise NotImplementedError(f"{what} known only at run time is not supported")
        value = v
    arr = np.asarray(value)
    if arr.ndim != 0 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"Argument {what} must be a 0-D integer Tensor. Found: {value!r}")
    if int(arr) < 0:
        raise ValueError(f"Argument {what} must be non-negative.  Found: {int(arr)}")
    return int(arr)


def _static_shape_arg(value: Any, what: str) -> Optional[List[int]]:
    if value is None:
        return None
    if isinstance(value, _g.Tensor):
        from ..ops.misc_more_ops import get_static_value
        v = get_static_value(value)
        if v is None:
            raise NotImplementedError(f"{what} known only at run time is not supported")
        value = v
    arr = np.asarray(value)
    if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"Argument {what} must be a 1-D integer Tensor. Found: {value!r}")
    if np.any(arr < 0):
        raise ValueError(f"Argument {what} must be non-negative.  Found: {arr.tolist()}")
    return [int(v) for v in arr]


class LinearOperatorIdentity(LinearOperator):
    """A = I (num_rows x num_rows), optionally a batch of them: matmul returns x (broadcast
    to the batch shape), the determinant is one."""

    def __init__(self, num_rows: Any, batch_shape: Any = None, dtype: Any = None, is_non_singular: bool = True,
                 is_self_adjoint: bool = True, is_positive_definite: bool = True, is_square: bool = True,
                 assert_proper_shapes: bool = False, name: str = "LinearOperatorIdentity") -> None:
        dtype = _dt.as_dtype(dtype or _dt.float32)
        if not is_self_adjoint:
            raise ValueError("An identity operator is always self adjoint.")
        if not is_non_singular:
            raise ValueError("An identity operator is always non-singular.")
        if not is_positive_definite:
            raise ValueError("An identity operator is always positive-definite.")
        if not is_square:
            raise ValueError("An identity operator is always square.")
        self._num_rows = _static_int(num_rows, "num_rows")
        self._batch_shape_arg = _static_shape_arg(batch_shape, "batch_shape")
        self._assert_proper_shapes = assert_proper_shapes
        super().__init__(dtype, is_non_singular=True, is_self_adjoint=True, is_positive_definite=True,
                         is_square=True, name=name,
                         parameters=dict(num_rows=num_rows, batch_shape=batch_shape, dtype=dtype))

    def _shape(self) -> TensorShape:
        return TensorShape((self._batch_shape_arg or []) + [self._num_rows, self._num_rows])

    def _ones_batch(self) -> _g.Tensor:
        return _a.ones(self._batch_shape_arg or [], dtype=self.dtype)

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        x = _adjoint(x) if adjoint_arg else x
        if self._batch_shape_arg is None:
            return x
        return broadcast_batch(x, static_batch(x.shape[:-2], self.batch_shape))

    def _solve(self, rhs: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        return self._matmul(rhs, adjoint_arg=adjoint_arg)

    def _determinant(self) -> _g.Tensor:
        return self._ones_batch()

    def _log_abs_determinant(self) -> _g.Tensor:
        return _a.zeros(self._batch_shape_arg or [], dtype=self.dtype)

    def _trace(self) -> _g.Tensor:
        return self._ones_batch() * _g.convert_to_tensor(np.asarray(self._num_rows, self.dtype.as_numpy_dtype))

    def _diag_part(self) -> _g.Tensor:
        return _a.ones((self._batch_shape_arg or []) + [self._num_rows], dtype=self.dtype)

    def _to_dense(self) -> _g.Tensor:
        return _mx.eye(self._num_rows, batch_shape=self._batch_shape_arg, dtype=self.dtype)

    def _add_to_tensor(self, x: _g.Tensor) -> _g.Tensor:
        x = broadcast_batch(x, static_batch(x.shape[:-2], self.batch_shape))
        return _mx.matrix_set_diag(x, _mx.matrix_diag_part(x) + 1)

    def _assert_non_singular(self) -> Any:
        from ..ops import constant_op as _co
        return _co.no_op("assert_non_singular")

    _assert_positive_definite = _assert_non_singular
    _assert_self_adjoint = _assert_non_singular


class LinearOperatorScaledIdentity(LinearOperator):
    """A = multiplier * I, with `multiplier` of shape [B1, ..., Bb] (the batch shape)."""

    def __init__(self, num_rows: Any, multiplier: Any, is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: bool = True, assert_proper_shapes: bool = False,
                 name: str = "LinearOperatorScaledIdentity") -> None:
        if not is_square:
            raise ValueError("A ScaledIdentity operator is always square.")
        with _g.name_scope(name):
            self._multiplier = _g.convert_to_tensor(multiplier, name="multiplier")
        check_float_dtype(self._multiplier, "multiplier")
        if not self._multiplier.dtype.is_complex:
            if is_self_adjoint is False:
                raise ValueError("A real diagonal operator is always self adjoint.")
            is_self_adjoint = True
        self._num_rows = _static_int(num_rows, "num_rows")
        super().__init__(self._multiplier.dtype, graph_parents=[self._multiplier], is_non_singular=is_non_singular,
                         is_self_adjoint=is_self_adjoint, is_positive_definite=is_positive_definite,
                         is_square=True, name=name, parameters=dict(num_rows=num_rows, multiplier=multiplier))

    @property
    def multiplier(self) -> _g.Tensor:
        return self._multiplier

    def _shape(self) -> TensorShape:
        s = self._multiplier.shape
        if s.dims is None:
            return TensorShape(None)
        return TensorShape(list(s.dims) + [self._num_rows, self._num_rows])

    def _mat(self, adjoint: bool = False) -> _g.Tensor:
        m = conj(self._multiplier) if adjoint else self._multiplier
        return _a.expand_dims(_a.expand_dims(m, -1), -1)

    def _n(self) -> _g.Tensor:
        return _g.convert_to_tensor(np.asarray(self._num_rows, self.dtype.as_numpy_dtype))

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        x = _adjoint(x) if adjoint_arg else x
        return x * self._mat(adjoint)

    def _solve(self, rhs: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        rhs = _adjoint(rhs) if adjoint_arg else rhs
        return rhs / self._mat(adjoint)

    def _determinant(self) -> _g.Tensor:
        return _m.pow(self._multiplier, self._n())

    def _log_abs_determinant(self) -> _g.Tensor:
        if self.dtype.is_complex:
            mag = _cx.complex_abs(self._multiplier)
            return _m.cast(self._num_rows, mag.dtype) * _m.log(mag)
        return self._n() * _m.log(_m.abs(self._multiplier))

    def _trace(self) -> _g.Tensor:
        return self._multiplier * self._n()

    def _diag_part(self) -> _g.Tensor:
        return _a.expand_dims(self._multiplier, -1) * _a.ones([self._num_rows], dtype=self.dtype)

    def _to_dense(self) -> _g.Tensor:
        return self._mat() * _mx.eye(self._num_rows, dtype=self.dtype)

    def _add_to_tensor(self, x: _g.Tensor) -> _g.Tensor:
        x = broadcast_batch(x, static_batch(x.shape[:-2], self.batch_shape))
        return _mx.matrix_set_diag(x, _mx.matrix_diag_part(x) + _a.expand_dims(self._multiplier, -1))

    def _assert_non_singular(self) -> Any:
        mag = _cx.complex_abs(self._multiplier) if self.dtype.is_complex else _m.abs(self._multiplier)
        return _chk.assert_positive(mag, message="LinearOperator was singular")

    def _assert_positive_definite(self) -> Any:
        re = _cx.real(self._multiplier) if self.dtype.is_complex else self._multiplier
        return _chk.assert_positive(re, message="LinearOperator was not positive definite.")

    def _assert_self_adjoint(self) -> Any:
        if not self.dtype.is_complex:
            from ..ops import constant_op as _co
            return _co.no_op("assert_self_adjoint")
        im = _cx.imag(self._multiplier)
        return _chk.assert_equal(im, _a.zeros_like(im), message="LinearOperator was not self-adjoint")


class LinearOperatorZeros(LinearOperator):
    """The all-zeros [..., num_rows, num_columns] operator: singular, so no solve."""

    def __init__(self, num_rows: Any, num_columns: Any = None, batch_shape: Any = None, dtype: Any = None,
                 is_non_singular: bool = False, is_self_adjoint: bool = True, is_positive_definite: bool = False,
                 is_square: bool = True, assert_proper_shapes: bool = False, name: str = "LinearOperatorZeros") -> None:
        dtype = _dt.as_dtype(dtype or _dt.float32)
        if not is_self_adjoint and is_square:
            raise ValueError("A zero operator is always self adjoint.")
        if is_non_singular:
            raise ValueError("A zero operator is always singular.")
        if is_positive_definite:
            raise ValueError("A zero operator is always not positive-definite.")
        self._num_rows = _static_int(num_rows, "num_rows")
        self._num_columns = self._num_rows if num_columns is None else _static_int(num_columns, "num_columns")
        self._batch_shape_arg = _static_shape_arg(batch_shape, "batch_shape")
        square = self._num_rows == self._num_columns
        if is_square and not square:
            raise ValueError(f"LinearOperatorZeros initialized as is_square=True, but got "
                             f"num_rows({self._num_rows}) != num_columns({self._num_columns})")
        super().__init__(dtype, is_non_singular=is_non_singular, is_self_adjoint=is_self_adjoint,
                         is_positive_definite=is_positive_definite, is_square=is_square, name=name,
                         parameters=dict(num_rows=num_rows, num_columns=num_columns, batch_shape=batch_shape,
                                         dtype=dtype))

    def _shape(self) -> TensorShape:
        return TensorShape((self._batch_shape_arg or []) + [self._num_rows, self._num_columns])

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        rows = self._num_columns if adjoint else self._num_rows
        cols = x.shape[-2] if adjoint_arg else x.shape[-1]
        batch = static_batch(x.shape[:-2], self.batch_shape)
        if not batch.is_fully_defined() or cols is None or int(cols) is None:
            raise NotImplementedError("LinearOperatorZeros.matmul needs static shapes")
        return _a.zeros(batch.as_list() + [rows, int(cols)], dtype=self.dtype)

    def _determinant(self) -> _g.Tensor:
        return _a.zeros(self._batch_shape_arg or [], dtype=self.dtype)

    def _log_abs_determinant(self) -> _g.Tensor:
        return _m.log(_m.abs(self._determinant()))

    def _trace(self) -> _g.Tensor:
        return _a.zeros(self._batch_shape_arg or [], dtype=self.dtype)

    def _diag_part(self) -> _g.Tensor:
        return _a.zeros((self._batch_shape_arg or []) + [min(self._num_rows, self._num_columns)], dtype=self.dtype)

    def _to_dense(self) -> _g.Tensor:
        return _a.zeros((self._batch_shape_arg or []) + [self._num_rows, self._num_columns], dtype=self.dtype)

    def _add_to_tensor(self, x: _g.Tensor) -> _g.Tensor:
        return broadcast_batch(x, static_batch(x.shape[:-2], self.batch_shape))

    def _assert_non_singular(self) -> Any:
        from ...errors import InvalidArgumentError
        raise InvalidArgumentError(None, None, "Zero operators are always non-invertible.")
