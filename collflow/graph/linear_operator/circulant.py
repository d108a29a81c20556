"""tf.linalg.LinearOperatorCirculant (one block level): the circulant matrix
H = F^{-1} diag(spectrum) F with F the DFT, applied through FFTs (O(N log N) per column)."""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..ops import array_ops as _a
from ..ops import check_ops as _chk
from ..ops import complex_ops as _cx
from ..ops import fft_ops as _fft
from ..ops import math_ops as _m
from ..ops import matrix_ops as _mx
from ..shape import TensorShape
from .base import LinearOperator, adjoint as _adjoint, broadcast_batch, static_batch

__all__ = ["LinearOperatorCirculant"]


def _to_complex(x: _g.Tensor) -> _g.Tensor:
    if x.dtype.is_complex:
        return x
    return _m.cast(x, _dt.complex128 if x.dtype == _dt.float64 else _dt.complex64)


class LinearOperatorCirculant(LinearOperator):
    """Circulant [..., N, N] operators from their spectrum [..., N] (the DFT of the first
    column).  The operator's dtype is `input_output_dtype`; a real one keeps the real part
    of every result (right when the spectrum is Hermitian, as TF)."""

    def __init__(self, spectrum: Any, input_output_dtype: Any = _dt.complex64, is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: bool = True, name: str = "LinearOperatorCirculant") -> None:
        with _g.name_scope(name):
            self._spectrum = _g.convert_to_tensor(spectrum, name="spectrum")
        if self._spectrum.shape.rank is not None and self._spectrum.shape.rank < 1:
            raise ValueError(f"Argument `spectrum` must have at least 1 dimensions. Received: {self._spectrum}.")
        if not self._spectrum.dtype.is_complex:
            if is_self_adjoint is False:
                raise ValueError("A real spectrum always corresponds to a self-adjoint operator. Expected argument "
                                 "`is_self_adjoint` to be True when `spectrum.dtype.is_complex` = True. "
                                 f"Received: {is_self_adjoint}.")
            is_self_adjoint = True
        if is_square is False:
            raise ValueError("A [[nested] block] circulant operator is always square. Expected argument "
                             f"`is_square` to be True. Received: {is_square}.")
        super().__init__(_dt.as_dtype(input_output_dtype), graph_parents=[self._spectrum],
                         is_non_singular=is_non_singular, is_self_adjoint=is_self_adjoint,
                         is_positive_definite=is_positive_definite, is_square=True, name=name,
                         parameters=dict(spectrum=spectrum, input_output_dtype=input_output_dtype))

    @property
    def spectrum(self) -> _g.Tensor:
        return self._spectrum

    @property
    def block_depth(self) -> int:
        return 1

    def _shape(self) -> TensorShape:
        s = self._spectrum.shape
        return s if s.dims is None else TensorShape(list(s.dims) + [s.dims[-1]])

    def _apply(self, x: _g.Tensor, adjoint: bool, solve: bool) -> _g.Tensor:
        spec = _to_complex(self._spectrum)
        if adjoint:
            spec = _cx.conj(spec)
        xc = _m.cast(x, spec.dtype) if x.dtype != spec.dtype else x
        batch = static_batch(xc.shape[:-2], spec.shape[:-1])
        xc = broadcast_batch(xc, batch)
        fx = _fft.fft(_mx.matrix_transpose(xc))  # each column's DFT, along the last axis
        spec_row = _a.expand_dims(spec, -2)
        y = _fft.ifft(fx / spec_row if solve else fx * spec_row)
        y = _mx.matrix_transpose(y)
        return y if y.dtype == self.dtype else _m.cast(y, self.dtype)

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        return self._apply(_adjoint(x) if adjoint_arg else x, adjoint, solve=False)

    def _solve(self, rhs: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        return self._apply(_adjoint(rhs) if adjoint_arg else rhs, adjoint, solve=True)

    def _cast(self, x: _g.Tensor) -> _g.Tensor:
        return x if x.dtype == self.dtype else _m.cast(x, self.dtype)

    def _determinant(self) -> _g.Tensor:
        return self._cast(_m.reduce_prod(self._spectrum, axis=-1))

    def _log_abs_determinant(self) -> _g.Tensor:
        s = self._spectrum
        mag = _cx.complex_abs(s) if s.dtype.is_complex else _m.abs(s)
        return self._cast(_m.reduce_sum(_m.log(mag), axis=-1))

    def _trace(self) -> _g.Tensor:
        s = self._spectrum
        re = _m.reduce_sum(_cx.real(s) if s.dtype.is_complex else s, axis=-1)
        if not self.dtype.is_complex:
            return self._cast(re)
        im = _a.zeros_like(re) if (self.is_self_adjoint or not s.dtype.is_complex) else \
            _m.reduce_sum(_cx.imag(s), axis=-1)
        return self._cast(_cx.complex(re, im))

    def _diag_part(self) -> _g.Tensor:
        n = self._spectrum.shape.dims[-1]
        value = self._trace() / _m.cast(n, self.dtype)
        return _a.expand_dims(value, -1) * _a.ones([n], dtype=self.dtype)

    def convolution_kernel(self, name: str = "convolution_kernel") -> _g.Tensor:
        """The first column of the matrix: the inverse DFT of the spectrum."""
        with self._name_scope(name):
            return self._cast(_fft.ifft(_to_complex(self._spectrum)))

    def _assert_non_singular(self) -> Any:
        s = self._spectrum
        mag = _cx.complex_abs(s) if s.dtype.is_complex else _m.abs(s)
        return _chk.assert_positive(mag, message="Singular operator:  Spectrum contained zero values.")

    def _assert_positive_definite(self) -> Any:
        s = self._spectrum
        return _chk.assert_positive(_cx.real(s) if s.dtype.is_complex else s,
                                    message="Not positive definite:  Real(spectrum) contained non-positive values.")
