"""tf.linalg.LinearOperatorCirculant2D / 3D: block circulant operators with circulant blocks
(nested two or three levels deep), from a spectrum [..., N0, N1] (or [..., N0, N1, N2]): the
matrix is N x N with N = N0 * N1 (* N2), and A u = IDFT2[spectrum * DFT2[u]] with each
column of u reshaped to the block shape, as TF defines them."""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..ops import array_ops as _a
from ..ops import complex_ops as _cx
from ..ops import fft_ops as _fft
from ..ops import math_ops as _m
from ..ops import matrix_ops as _mx
from ..shape import TensorShape
from .base import broadcast_batch, static_batch
from .circulant import LinearOperatorCirculant, _to_complex

__all__ = ["LinearOperatorCirculant2D", "LinearOperatorCirculant3D"]

_FFT = {2: (_fft.fft2d, _fft.ifft2d), 3: (_fft.fft3d, _fft.ifft3d)}


class _NestedCirculant(LinearOperatorCirculant):
    """The operators whose spectrum's last `_depth` axes are the block shape."""

    _depth = 2

    def __init__(self, spectrum: Any, input_output_dtype: Any = _dt.complex64, is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: bool = True, name: Optional[str] = None) -> None:
        name = name or type(self).__name__
        s = spectrum if isinstance(spectrum, _g.Tensor) else _g.convert_to_tensor(spectrum)
        if s.shape.rank is not None and s.shape.rank < self._depth:
            raise ValueError(f"Argument `spectrum` must have at least {self._depth} dimensions. Received: {s}.")
        super().__init__(s, input_output_dtype=input_output_dtype, is_non_singular=is_non_singular,
                         is_self_adjoint=is_self_adjoint, is_positive_definite=is_positive_definite,
                         is_square=is_square, name=name)
        self._parameters["spectrum"] = spectrum

    @property
    def block_depth(self) -> int:
        return self._depth

    @property
    def block_shape(self) -> TensorShape:
        return self._spectrum.shape[-self._depth:]

    def block_shape_tensor(self) -> _g.Tensor:
        return _a.shape(self._spectrum)[-self._depth:]

    def _axes(self) -> list:
        return list(range(-self._depth, 0))

    def _shape(self) -> TensorShape:
        s = self._spectrum.shape
        if s.dims is None:
            return s
        block = s.dims[-self._depth:]
        n = None if any(d is None for d in block) else int(_prod(block))
        return TensorShape(list(s.dims[:-self._depth]) + [n, n])

    def _shape_tensor(self) -> _g.Tensor:
        s = _a.shape(self._spectrum)
        n = _m.reduce_prod(s[-self._depth:], keepdims=True)
        return _a.concat([s[:-self._depth], n, n], 0)

    def _apply(self, x: _g.Tensor, adjoint: bool, solve: bool) -> _g.Tensor:
        spec = _to_complex(self._spectrum)
        if adjoint:
            spec = _cx.conj(spec)
        xc = _m.cast(x, spec.dtype) if x.dtype != spec.dtype else x
        batch = static_batch(xc.shape[:-2], spec.shape[:-self._depth])
        xc = broadcast_batch(xc, batch)
        cols = _mx.matrix_transpose(xc)  # [..., R, N]: one row per column of x
        cols_shape = _a.shape(cols)
        blocks = _a.reshape(cols, _a.concat([cols_shape[:-1], _a.shape(spec)[-self._depth:]], 0))
        forward, inverse = _FFT[self._depth]
        spec_b = _a.expand_dims(spec, -self._depth - 1)  # broadcast over the R columns
        fx = forward(blocks)
        y = inverse(fx / spec_b if solve else fx * spec_b)
        y = _mx.matrix_transpose(_a.reshape(y, _a.concat([_a.shape(y)[:-self._depth], [-1]], 0)))
        return y if y.dtype == self.dtype else _m.cast(y, self.dtype)

    def _determinant(self) -> _g.Tensor:
        return self._cast(_m.reduce_prod(self._spectrum, axis=self._axes()))

    def _log_abs_determinant(self) -> _g.Tensor:
        s = self._spectrum
        mag = _cx.complex_abs(s) if s.dtype.is_complex else _m.abs(s)
        return self._cast(_m.reduce_sum(_m.log(mag), axis=self._axes()))

    def _trace(self) -> _g.Tensor:
        s = self._spectrum
        re = _m.reduce_sum(_cx.real(s) if s.dtype.is_complex else s, axis=self._axes())
        if not self.dtype.is_complex:
            return self._cast(re)
        im = _a.zeros_like(re) if (self.is_self_adjoint or not s.dtype.is_complex) else \
            _m.reduce_sum(_cx.imag(s), axis=self._axes())
        return self._cast(_cx.complex(re, im))

    def _diag_part(self) -> _g.Tensor:
        n = self._shape_tensor()[-1]
        value = self._trace() / _m.cast(n, self.dtype)
        return _a.expand_dims(value, -1) * _a.ones(_a.reshape(n, [1]), dtype=self.dtype)

    def convolution_kernel(self, name: str = "convolution_kernel") -> _g.Tensor:
        """The kernel h with spectrum = DFT[h] (the inverse DFT over the block axes)."""
        with self._name_scope(name):
            return self._cast(_FFT[self._depth][1](_to_complex(self._spectrum)))


def _prod(values: Any) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


class LinearOperatorCirculant2D(_NestedCirculant):
    """Block circulant [..., N0*N1, N0*N1] operators with circulant blocks, from their
    spectrum [..., N0, N1] (the 2-D DFT of the kernel)."""

    _depth = 2

    def __init__(self, spectrum: Any, input_output_dtype: Any = _dt.complex64, is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: bool = True, name: str = "LinearOperatorCirculant2D") -> None:
        super().__init__(spectrum, input_output_dtype, is_non_singular, is_self_adjoint, is_positive_definite,
                         is_square, name)


class LinearOperatorCirculant3D(_NestedCirculant):
    """Doubly nested block circulant [..., N0*N1*N2, N0*N1*N2] operators, from their
    spectrum [..., N0, N1, N2] (the 3-D DFT of the kernel)."""

    _depth = 3

    def __init__(self, spectrum: Any, input_output_dtype: Any = _dt.complex64, is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: bool = True, name: str = "LinearOperatorCirculant3D") -> None:
        super().__init__(spectrum, input_output_dtype, is_non_singular, is_self_adjoint, is_positive_definite,
                         is_square, name)
