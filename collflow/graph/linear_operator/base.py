"""tf.linalg.LinearOperator: the abstract base of the structured-matrix operators.

An operator stands for a batch of matrices of shape [B1, ..., Bb, M, N] without
necessarily holding one: subclasses give `_shape` and `_matmul` (and whatever their
structure makes cheaper); everything else has a dense fallback here, as TF's does.
The hints (is_non_singular, ...) are promises the user makes; they are checked against
each other when the operator is made, and the asserts check them at run time."""
from __future__ import annotations

from typing import Any, Iterator, List, Optional

import contextlib

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from ..shape import TensorShape, dimension_value
from ..ops import array_ops as _a
from ..ops import check_ops as _chk
from ..ops import complex_ops as _cx
from ..ops import linalg_ops as _la
from ..ops import math_ops as _m
from ..ops import matrix_ops as _mx

__all__ = ["LinearOperator"]

_FLOATS = (_dt.float16, _dt.float32, _dt.float64, _dt.complex64, _dt.complex128)


def adjoint(x: _g.Tensor) -> _g.Tensor:
    """Conjugate transpose of the last two dimensions (plain transpose for real tensors)."""
    return _mx.matrix_transpose(x, conjugate=x.dtype.is_complex)


def conj(x: _g.Tensor) -> _g.Tensor:
    return _cx.conj(x) if x.dtype.is_complex else x


def static_batch(*shapes: TensorShape) -> TensorShape:
    """The broadcast of several static batch shapes (unknown when one is unknown)."""
    from ..shape import broadcast_static
    out = TensorShape([])
    for s in shapes:
        out = broadcast_static(out, s)
    return out


def broadcast_batch(x: _g.Tensor, batch: TensorShape) -> _g.Tensor:
    """x with its batch dimensions broadcast to `batch` (a no-op when they already match)."""
    if batch.dims is None or x.shape.dims is None:
        return x
    if list(x.shape.dims[:-2]) == list(batch.dims):
        return x
    target = static_batch(x.shape[:-2], batch)
    if not target.is_fully_defined() or not x.shape[-2:].is_fully_defined():
        return x
    return _a.broadcast_to(x, target.as_list() + x.shape.as_list()[-2:])


def check_float_dtype(t: _g.Tensor, what: str) -> None:
    if t.dtype not in _FLOATS:
        raise TypeError(f"{what} must have dtype in {[d.name for d in _FLOATS]}, got {t.dtype.name}")


class LinearOperator:
    """Base class of the operators (TF's tf.linalg.LinearOperator).

    Hints: `is_non_singular`, `is_self_adjoint`, `is_positive_definite`, `is_square`, each
    True / False / None (unknown).  Positive definite implies non-singular, and non-singular
    or self-adjoint implies square; a contradiction is a ValueError, as TF."""

    def __init__(self, dtype: Any, graph_parents: Optional[List[Any]] = None, is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: Optional[bool] = None, name: Optional[str] = None,
                 parameters: Optional[dict] = None) -> None:
        if is_positive_definite:
            if is_non_singular is False:
                raise ValueError("A positive definite matrix is always non-singular.")
            is_non_singular = True
        if is_non_singular:
            if is_square is False:
                raise ValueError("A non-singular matrix is always square.")
            is_square = True
        if is_self_adjoint:
            if is_square is False:
                raise ValueError("A self-adjoint matrix is always square.")
            is_square = True
        self._is_square_set_or_implied_by_hints = is_square
        self._dtype = None if dtype is None else _dt.as_dtype(dtype)
        self._graph_parents = [] if graph_parents is None else list(graph_parents)
        self._is_non_singular = is_non_singular
        self._is_self_adjoint = is_self_adjoint
        self._is_positive_definite = is_positive_definite
        self._name = name or type(self).__name__
        self._parameters = dict(parameters or {})

    # -- names and hints ----------------------------------------------------------
    @contextlib.contextmanager
    def _name_scope(self, name: Optional[str] = None) -> Iterator[None]:
        """The operator's scope, then the method's (TF's `self.name/method/` op names)."""
        with _g.name_scope(self.name if name is None else f"{self.name}/{name}"):
            yield

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> Any:
        return self._dtype

    @property
    def graph_parents(self) -> list:
        return list(self._graph_parents)

    @property
    def parameters(self) -> dict:
        return dict(self._parameters)

    @property
    def is_non_singular(self) -> Optional[bool]:
        return self._is_non_singular

    @property
    def is_self_adjoint(self) -> Optional[bool]:
        return self._is_self_adjoint

    @property
    def is_positive_definite(self) -> Optional[bool]:
        return self._is_positive_definite

    @property
    def is_square(self) -> Optional[bool]:
        """The hint, or whether the static shape is square (None when unknown)."""
        m, n = dimension_value(self.range_dimension), dimension_value(self.domain_dimension)
        auto = None if m is None or n is None else m == n
        if self._is_square_set_or_implied_by_hints is False and auto:
            raise ValueError("User set is_square hint to False, but the operator was square.")
        if self._is_square_set_or_implied_by_hints is None:
            return auto
        return self._is_square_set_or_implied_by_hints

    def _can_use_cholesky(self) -> bool:
        return bool(self.is_self_adjoint and self.is_positive_definite)

    # -- shapes --------------------------------------------------------------------
    def _shape(self) -> TensorShape:
        raise NotImplementedError("_shape is not implemented")

    def _shape_tensor(self) -> _g.Tensor:
        s = self.shape
        if not s.is_fully_defined():
            raise NotImplementedError(f"{type(self).__name__} has no run-time shape for static shape {s}")
        return _g.convert_to_tensor(np.array(s.as_list(), np.int32))

    @property
    def shape(self) -> TensorShape:
        """The static shape [B1, ..., Bb, M, N]."""
        return self._shape()

    def shape_tensor(self, name: str = "shape_tensor") -> _g.Tensor:
        with self._name_scope(name):
            if self.shape.is_fully_defined():
                return _g.convert_to_tensor(np.array(self.shape.as_list(), np.int32))
            return self._shape_tensor()

    @property
    def batch_shape(self) -> TensorShape:
        return self.shape[:-2]

    def batch_shape_tensor(self, name: str = "batch_shape_tensor") -> _g.Tensor:
        with self._name_scope(name):
            return self.shape_tensor()[:-2]

    @property
    def tensor_rank(self) -> Optional[int]:
        return self.shape.ndims

    def tensor_rank_tensor(self, name: str = "tensor_rank_tensor") -> _g.Tensor:
        with self._name_scope(name):
            if self.tensor_rank is not None:
                return _g.convert_to_tensor(np.int32(self.tensor_rank))
            return _a.size(self.shape_tensor())

    @property
    def domain_dimension(self) -> Any:
        return self.shape[-1]

    def domain_dimension_tensor(self, name: str = "domain_dimension_tensor") -> _g.Tensor:
        with self._name_scope(name):
            d = dimension_value(self.domain_dimension)
            return _g.convert_to_tensor(np.int32(d)) if d is not None else self.shape_tensor()[-1]

    @property
    def range_dimension(self) -> Any:
        return self.shape[-2]

    def range_dimension_tensor(self, name: str = "range_dimension_tensor") -> _g.Tensor:
        with self._name_scope(name):
            d = dimension_value(self.range_dimension)
            return _g.convert_to_tensor(np.int32(d)) if d is not None else self.shape_tensor()[-2]

    # -- argument checks --------------------------------------------------------------
    def _check_input_dtype(self, arg: _g.Tensor) -> None:
        if arg.dtype != self.dtype:
            raise TypeError(f"Expected argument to have dtype {self.dtype.name}. Found: {arg.dtype.name} in "
                            f"tensor {arg.name}")

    def _check_dim(self, self_dim: Any, arg_dim: Any) -> None:
        a, b = dimension_value(self_dim), dimension_value(arg_dim)
        if a is not None and b is not None and a != b:
            raise ValueError(f"Dimensions {a} and {b} are not compatible")

    def _convert_arg(self, x: Any, name: str) -> _g.Tensor:
        # no dtype: a mismatched argument is the TypeError below, as TF (not a silent cast)
        return _g.convert_to_tensor(x, name=name)

    # -- matmul / solve ------------------------------------------------------------------
    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        raise NotImplementedError("_matmul is not implemented")

    def matmul(self, x: Any, adjoint: bool = False, adjoint_arg: bool = False, name: str = "matmul") -> Any:
        """self @ x (adjoint: self^H @ x; adjoint_arg: @ x^H); x a [..., N, R] tensor or an operator."""
        if isinstance(x, LinearOperator):
            from . import algebra
            left = self.adjoint() if adjoint else self
            right = x.adjoint() if adjoint_arg else x
            self._check_dim(left.domain_dimension, right.range_dimension)
            return algebra.matmul(left, right)
        with self._name_scope(name):
            x = self._convert_arg(x, "x")
            self._check_input_dtype(x)
            self._check_dim(self.shape[-2] if adjoint else self.shape[-1], x.shape[-1] if adjoint_arg else x.shape[-2])
            return self._matmul(x, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def __matmul__(self, other: Any) -> Any:
        return self.matmul(other)

    def matvec(self, x: Any, adjoint: bool = False, name: str = "matvec") -> _g.Tensor:
        """self @ x for a batch of vectors x [..., N]."""
        with self._name_scope(name):
            x = self._convert_arg(x, "x")
            self._check_input_dtype(x)
            self._check_dim(self.shape[-2] if adjoint else self.shape[-1], x.shape[-1])
            return _a.squeeze(self._matmul(_a.expand_dims(x, -1), adjoint=adjoint), [-1])

    def _dense_solve(self, rhs: _g.Tensor, adjoint: bool, adjoint_arg: bool) -> _g.Tensor:
        rhs = _adjoint_if(rhs, adjoint_arg)
        dense = self.to_dense()
        batch = static_batch(dense.shape[:-2], rhs.shape[:-2])
        dense, rhs = broadcast_batch(dense, batch), broadcast_batch(rhs, batch)
        if self._can_use_cholesky():
            return _la.cholesky_solve(_la.cholesky(dense), rhs)
        return _la.matrix_solve(dense, rhs, adjoint=adjoint)

    def _solve(self, rhs: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        return self._dense_solve(rhs, adjoint, adjoint_arg)

    def _check_solvable(self) -> None:
        if self.is_non_singular is False:
            raise NotImplementedError("Exact solve not implemented for an operator that is expected to be singular.")
        if self.is_square is False:
            raise NotImplementedError("Exact solve not implemented for an operator that is expected to not be square.")

    def solve(self, rhs: Any, adjoint: bool = False, adjoint_arg: bool = False, name: str = "solve") -> Any:
        """x with self @ x = rhs (adjoint: self^H @ x = rhs; adjoint_arg: = rhs^H)."""
        self._check_solvable()
        if isinstance(rhs, LinearOperator):
            from . import algebra
            left = self.adjoint() if adjoint else self
            right = rhs.adjoint() if adjoint_arg else rhs
            return algebra.matmul(left.inverse(), right)
        with self._name_scope(name):
            rhs = self._convert_arg(rhs, "rhs")
            self._check_input_dtype(rhs)
            self._check_dim(self.shape[-1] if adjoint else self.shape[-2],
                            rhs.shape[-1] if adjoint_arg else rhs.shape[-2])
            return self._solve(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def solvevec(self, rhs: Any, adjoint: bool = False, name: str = "solve") -> _g.Tensor:
        """x with self @ x = rhs for a batch of vectors rhs [..., M]."""
        self._check_solvable()
        with self._name_scope(name):
            rhs = self._convert_arg(rhs, "rhs")
            self._check_input_dtype(rhs)
            self._check_dim(self.shape[-1] if adjoint else self.shape[-2], rhs.shape[-1])
            return _a.squeeze(self._solve(_a.expand_dims(rhs, -1), adjoint=adjoint), [-1])

    # -- scalars and parts ---------------------------------------------------------------
    def _determinant(self) -> _g.Tensor:
        if self._can_use_cholesky():
            return _m.exp(self.log_abs_determinant())
        return _la.matrix_determinant(self.to_dense())

    def determinant(self, name: str = "det") -> _g.Tensor:
        if self.is_square is False:
            raise NotImplementedError("Determinant not implemented for an operator that is expected to not be "
                                      "square.")
        with self._name_scope(name):
            return self._determinant()

    def _log_abs_determinant(self) -> _g.Tensor:
        dense = self.to_dense()
        if self._can_use_cholesky():
            diag = _mx.matrix_diag_part(_la.cholesky(dense))
            return 2.0 * _m.reduce_sum(_m.log(_real(diag)), axis=-1)
        return _la.log_matrix_determinant(dense)[1]

    def log_abs_determinant(self, name: str = "log_abs_det") -> _g.Tensor:
        if self.is_square is False:
            raise NotImplementedError("Determinant not implemented for an operator that is expected to not be "
                                      "square.")
        with self._name_scope(name):
            return self._log_abs_determinant()

    def _diag_part(self) -> _g.Tensor:
        return _mx.matrix_diag_part(self.to_dense())

    def diag_part(self, name: str = "diag_part") -> _g.Tensor:
        with self._name_scope(name):
            return self._diag_part()

    def _trace(self) -> _g.Tensor:
        return _m.reduce_sum(self.diag_part(), axis=-1)

    def trace(self, name: str = "trace") -> _g.Tensor:
        with self._name_scope(name):
            return self._trace()

    def _to_dense(self) -> _g.Tensor:
        n, batch = dimension_value(self.domain_dimension), self.batch_shape
        if n is None or not batch.is_fully_defined():
            raise NotImplementedError(f"to_dense of {type(self).__name__} needs a static shape, got {self.shape}")
        eye = _mx.eye(n, batch_shape=batch.as_list() or None, dtype=self.dtype)
        return self._matmul(eye)

    def to_dense(self, name: str = "to_dense") -> _g.Tensor:
        with self._name_scope(name):
            return self._to_dense()

    def _add_to_tensor(self, x: _g.Tensor) -> _g.Tensor:
        return self.to_dense() + x

    def add_to_tensor(self, x: Any, name: str = "add_to_tensor") -> _g.Tensor:
        """self.to_dense() + x."""
        with self._name_scope(name):
            x = self._convert_arg(x, "x")
            self._check_input_dtype(x)
            return self._add_to_tensor(x)

    def eigvals(self, name: str = "eigvals") -> _g.Tensor:
        """The eigenvalues (only for operators hinted self-adjoint, as TF)."""
        if not self.is_self_adjoint:
            raise NotImplementedError("Only self-adjoint matrices are supported.")
        from ..ops import eig_ops
        with self._name_scope(name):
            return eig_ops.self_adjoint_eigvals(self.to_dense())

    def cond(self, name: str = "cond") -> _g.Tensor:
        """The condition number: largest over smallest singular value."""
        from ..ops import svd_ops
        with self._name_scope(name):
            s = svd_ops.svd(self.to_dense(), compute_uv=False)
            return _m.reduce_max(s, axis=-1) / _m.reduce_min(s, axis=-1)

    # -- derived operators ---------------------------------------------------------------
    def adjoint(self, name: str = "adjoint") -> "LinearOperator":
        """The conjugate transpose (self when hinted self-adjoint)."""
        if self.is_self_adjoint is True:
            return self
        from . import algebra
        return algebra.adjoint(self)

    H = property(lambda self: self.adjoint())

    def inverse(self, name: str = "inverse") -> "LinearOperator":
        if self.is_square is False:
            raise ValueError("Cannot take the Inverse: This operator represents a non square matrix.")
        if self.is_non_singular is False:
            raise ValueError("Cannot take the Inverse: This operator represents a singular matrix.")
        from . import algebra
        return algebra.inverse(self)

    def cholesky(self, name: str = "cholesky") -> "LinearOperator":
        """The lower-triangular Cholesky factor as an operator (needs the self-adjoint and
        positive-definite hints)."""
        if not self._can_use_cholesky():
            raise ValueError("Cannot take the Cholesky decomposition: Not a positive definite self adjoint matrix.")
        from . import algebra
        return algebra.cholesky(self)

    # -- run-time checks of the hints ---------------------------------------------------
    def _max_condition_number_to_be_non_singular(self) -> float:
        dims = [dimension_value(self.range_dimension) or 0, dimension_value(self.domain_dimension) or 0]
        return 1.0 / (max([100.0] + dims) * np.finfo(self.dtype.real_dtype.as_numpy_dtype).eps)

    def _assert_non_singular(self) -> Any:
        if self._can_use_cholesky():
            return self.assert_positive_definite()
        from ..ops import svd_ops
        s = svd_ops.svd(self.to_dense(), compute_uv=False)
        cond = _m.reduce_max(s, axis=-1) / _m.reduce_min(s, axis=-1)
        return _chk.assert_less(cond, _g.convert_to_tensor(self._max_condition_number_to_be_non_singular(),
                                                          dtype=cond.dtype),
                                message="Singular matrix up to precision epsilon.")

    def assert_non_singular(self, name: str = "assert_non_singular") -> Any:
        """An op that fails (InvalidArgumentError) when the operator is singular."""
        with self._name_scope(name):
            return self._assert_non_singular()

    def _assert_positive_definite(self) -> Any:
        return _chk.assert_positive(_real(_mx.matrix_diag_part(_la.cholesky(self.to_dense()))),
                                    message="Matrix was not positive definite.")

    def assert_positive_definite(self, name: str = "assert_positive_definite") -> Any:
        with self._name_scope(name):
            return self._assert_positive_definite()

    def _assert_self_adjoint(self) -> Any:
        dense = self.to_dense()
        return _chk.assert_equal(dense, adjoint(dense), message="Matrix was not equal to its adjoint.")

    def assert_self_adjoint(self, name: str = "assert_self_adjoint") -> Any:
        with self._name_scope(name):
            return self._assert_self_adjoint()

    def __repr__(self) -> str:
        return f"<tf.linalg.{type(self).__name__} '{self.name}' shape={self.shape} dtype={self.dtype.name}>"


def _adjoint_if(x: _g.Tensor, flag: bool) -> _g.Tensor:
    return adjoint(x) if flag else x


def _real(x: _g.Tensor) -> _g.Tensor:
    return _cx.real(x) if x.dtype.is_complex else x
