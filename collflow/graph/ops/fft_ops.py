"""The FFTs (TF1's tf.spectral.* and tf.signal.*): fft/ifft over the innermost 1, 2 or 3 axes
of a complex tensor, and rfft/irfft between real signals and their non-negative frequencies.

fft_length (the real transforms) must be known when the graph is built: a Python list or a
constant.  As TF, rfft crops or zero-pads the input's inner axes to fft_length; irfft crops
or pads its input's inner axes to fft_length (the last to fft_length[-1] // 2 + 1) and its
output's inner axes are fft_length.  Kernels in kernels/complex_kernels.py.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from . import math_ops as _m
from . import slicing_ops as _s
from .complex_ops import real as _real
from .op_util import single

__all__ = ["fft", "ifft", "fft2d", "ifft2d", "fft3d", "ifft3d", "rfft", "irfft", "rfft2d", "irfft2d",
           "rfft3d", "irfft3d"]

# op type -> (rank, inverse)
_C2C = {"FFT": (1, False), "IFFT": (1, True), "FFT2D": (2, False), "IFFT2D": (2, True),
        "FFT3D": (3, False), "IFFT3D": (3, True)}
_R2C = {"RFFT": 1, "RFFT2D": 2, "RFFT3D": 3}
_C2R = {"IRFFT": 1, "IRFFT2D": 2, "IRFFT3D": 3}
_COMPLEX_OF = {_dt.float32: _dt.complex64, _dt.float64: _dt.complex128}


def _check_rank(op_type: str, x: _g.Tensor, rank: int) -> None:
    if x.shape.rank is not None and x.shape.rank < rank:
        raise ValueError(f"{op_type} needs an input of rank >= {rank}, got shape {x.shape}")


def _c2c_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if not x.dtype.is_complex:
        raise TypeError(f"{op.type} needs a complex64 or complex128 input, got {x.dtype.name}")
    _check_rank(op.type, x, _C2C[op.type][0])
    return [(x.dtype, x.shape)]


def _inner_replaced(shape: TensorShape, inner: Sequence[int]) -> TensorShape:
    if shape.rank is None:
        return TensorShape(None)
    dims = list(shape.dims)
    return TensorShape(dims[:len(dims) - len(inner)] + list(inner))


def _r2c_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if x.dtype not in _COMPLEX_OF:
        raise TypeError(f"{op.type} needs a float32 or float64 input, got {x.dtype.name}")
    n = op.attrs["fft_length"]
    _check_rank(op.type, x, len(n))
    return [(_COMPLEX_OF[x.dtype], _inner_replaced(x.shape, list(n[:-1]) + [n[-1] // 2 + 1]))]


def _c2r_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if not x.dtype.is_complex:
        raise TypeError(f"{op.type} needs a complex64 or complex128 input, got {x.dtype.name}")
    n = op.attrs["fft_length"]
    _check_rank(op.type, x, len(n))
    return [(x.dtype.real_dtype, _inner_replaced(x.shape, list(n)))]


for _n in _C2C:
    register_op(_n, _c2c_spec)
for _n in _R2C:
    register_op(_n, _r2c_spec)
for _n in _C2R:
    register_op(_n, _c2r_spec)


# -- constructors ---------------------------------------------------------------------------

def _c2c(op_type: str, x: Any, name: Optional[str]) -> _g.Tensor:
    x = _g.convert_to_tensor(_m._as_value(x))
    return single(op_type, [x], name=name or op_type)


def fft(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002 - TF name
    """The discrete Fourier transform over the innermost axis (tf.signal.fft)."""
    return _c2c("FFT", input, name)


def ifft(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002 - TF name
    """The inverse DFT over the innermost axis, scaled by 1/n (tf.signal.ifft)."""
    return _c2c("IFFT", input, name)


def fft2d(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002 - TF name
    """The 2-D DFT over the innermost 2 axes (tf.signal.fft2d)."""
    return _c2c("FFT2D", input, name)


def ifft2d(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002 - TF name
    """The inverse 2-D DFT over the innermost 2 axes (tf.signal.ifft2d)."""
    return _c2c("IFFT2D", input, name)


def fft3d(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002 - TF name
    """The 3-D DFT over the innermost 3 axes (tf.signal.fft3d)."""
    return _c2c("FFT3D", input, name)


def ifft3d(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002 - TF name
    """The inverse 3-D DFT over the innermost 3 axes (tf.signal.ifft3d)."""
    return _c2c("IFFT3D", input, name)


def _static_lengths(fft_length: Any, rank: int, what: str) -> Tuple[int, ...]:
    """fft_length as Python ints: a list, a NumPy array or a constant tensor."""
    if isinstance(fft_length, _g.Tensor):
        if fft_length.op.type != "Const":
            raise NotImplementedError(f"{what}: fft_length must be known when the graph is built "
                                      "(a list or a constant)")
        fft_length = fft_length.op.attrs["value"]
    n = tuple(int(v) for v in np.ravel(np.asarray(fft_length)))
    if len(n) != rank or any(v < 0 for v in n):
        raise ValueError(f"{what}: fft_length must be {rank} non-negative integers, got {list(n)}")
    return n


def _inner_dims(x: _g.Tensor, rank: int, what: str) -> List[int]:
    if x.shape.rank is None or any(d is None for d in x.shape.dims[-rank:]):
        raise NotImplementedError(f"{what}: the input's inner {rank} dimensions must be known when the graph "
                                  f"is built when fft_length is not given, got shape {x.shape}")
    return [int(d) for d in x.shape.dims[-rank:]]


def _r2c(op_type: str, x: Any, fft_length: Any, name: Optional[str]) -> _g.Tensor:
    rank = _R2C[op_type]
    x = _g.convert_to_tensor(_m._as_value(x))
    _check_rank(op_type, x, rank)
    n = _inner_dims(x, rank, op_type) if fft_length is None else _static_lengths(fft_length, rank, op_type)
    return single(op_type, [x], {"fft_length": tuple(n)}, name=name or op_type)


def _c2r(op_type: str, x: Any, fft_length: Any, name: Optional[str]) -> _g.Tensor:
    rank = _C2R[op_type]
    x = _g.convert_to_tensor(_m._as_value(x))
    _check_rank(op_type, x, rank)
    if fft_length is None:  # as TF: the inner dims, the last as 2 (m - 1)
        n = _inner_dims(x, rank, op_type)
        n[-1] = max(0, 2 * (n[-1] - 1))
    else:
        n = list(_static_lengths(fft_length, rank, op_type))
    return single(op_type, [x], {"fft_length": tuple(n)}, name=name or op_type)


def rfft(input_tensor: Any, fft_length: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """The DFT of a real signal over the innermost axis: its fft_length // 2 + 1 non-negative
    frequencies (tf.signal.rfft); the input is cropped or zero-padded to fft_length."""
    return _r2c("RFFT", input_tensor, fft_length, name)


def irfft(input_tensor: Any, fft_length: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """The real signal of length fft_length whose rfft is the input (tf.signal.irfft)."""
    return _c2r("IRFFT", input_tensor, fft_length, name)


def rfft2d(input_tensor: Any, fft_length: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """rfft over the innermost 2 axes (tf.signal.rfft2d)."""
    return _r2c("RFFT2D", input_tensor, fft_length, name)


def irfft2d(input_tensor: Any, fft_length: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """irfft over the innermost 2 axes (tf.signal.irfft2d)."""
    return _c2r("IRFFT2D", input_tensor, fft_length, name)


def rfft3d(input_tensor: Any, fft_length: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """rfft over the innermost 3 axes (tf.signal.rfft3d)."""
    return _r2c("RFFT3D", input_tensor, fft_length, name)


def irfft3d(input_tensor: Any, fft_length: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """irfft over the innermost 3 axes (tf.signal.irfft3d)."""
    return _c2r("IRFFT3D", input_tensor, fft_length, name)


_C2C_FN = {"FFT": fft, "IFFT": ifft, "FFT2D": fft2d, "IFFT2D": ifft2d, "FFT3D": fft3d, "IFFT3D": ifft3d}
_INVERSE = {"FFT": "IFFT", "IFFT": "FFT", "FFT2D": "IFFT2D", "IFFT2D": "FFT2D", "FFT3D": "IFFT3D", "IFFT3D": "FFT3D"}


# -- gradients ----------------------------------------------------------------------------------

def _inner_size(t: _g.Tensor, rank: int) -> Any:
    """The number of elements of t's inner `rank` axes: a Python int when static, else an int32 tensor."""
    dims = t.shape.dims if t.shape.rank is not None else None
    if dims is not None and all(d is not None for d in dims[-rank:]):
        return int(np.prod([int(d) for d in dims[-rank:]]))
    return _m.reduce_prod(_a.shape(t)[-rank:])


def _c2c_grad(op: _g.Operation, g: Any) -> list:
    # the DFT matrix F is symmetric, so F^H g = n ifft(g) and (F^-1)^H g = fft(g) / n (TF's rules)
    rank, inverse = _C2C[op.type]
    g = _g.convert_to_tensor(g)
    size = _inner_size(g, rank)
    back = _C2C_FN[_INVERSE[op.type]](g)
    if isinstance(size, int):
        return [back * (1.0 / size if inverse else float(size))]
    size = _m.cast(size, g.dtype)
    return [back / size if inverse else back * size]


for _n in _C2C:
    register_gradient(_n)(_c2c_grad)


def _fit_inner(t: _g.Tensor, want: Sequence[int], rank: int) -> _g.Tensor:
    """t's inner `rank` axes cropped or zero-padded (at the end) to `want` (static shapes)."""
    have = _inner_dims(t, rank, "gradient")
    lead = t.shape.rank - rank
    if list(have) == list(want):
        return t
    if any(h > w for h, w in zip(have, want)):
        t = _s.slice(t, [0] * t.shape.rank, [-1] * lead + [min(h, w) for h, w in zip(have, want)])
    pads = [[0, max(0, w - h)] for h, w in zip(have, want)]
    if any(p[1] for p in pads):
        t = _s.pad(t, [[0, 0]] * lead + pads)
    return t


def _r2c_grad(op: _g.Operation, g: Any) -> list:
    # For real x and y = rfft(x) (its non-negative frequencies k of the full DFT), TF's gradient
    # dL/dx = Re(sum_k g_k e^{+2 pi i k n / N}): n * ifft of g zero-filled to the full length N
    # (the dropped negative frequencies contribute nothing).  Equal to TF's rule (irfft plus
    # the DC/Nyquist corrections) and defined for the 3-D and cropped cases too.
    rank = _R2C[op.type]
    n = list(op.attrs["fft_length"])
    x = op.inputs[0]
    g = _g.convert_to_tensor(g)
    full = _fit_inner(g, n, rank)
    back = _C2C_FN[{1: "IFFT", 2: "IFFT2D", 3: "IFFT3D"}[rank]](full)
    gx = _real(back) * float(np.prod(n))
    return [_fit_inner(gx, _inner_dims(x, rank, op.type), rank)]


def _c2r_grad(op: _g.Operation, g: Any) -> list:
    # TF's rule: rfft of the incoming gradient over N, the frequencies 1 .. (N-1)/2 doubled
    # (each stands for itself and its dropped conjugate); DC and Nyquist enter once
    rank = _C2R[op.type]
    n = list(op.attrs["fft_length"])
    x = op.inputs[0]
    g = _g.convert_to_tensor(g)
    fwd = {1: rfft, 2: rfft2d, 3: rfft3d}[rank](g, n)
    half = n[-1] // 2 + 1
    mask = np.full([half], 2.0)
    mask[0] = 1.0
    if n[-1] % 2 == 0 and half > 1:
        mask[-1] = 1.0
    mask = mask / float(np.prod(n))
    gy = fwd * _g.convert_to_tensor(mask.astype(x.dtype.np), graph=g.graph)
    want = _inner_dims(x, rank, op.type)
    return [_fit_inner(gy, want, rank)]


for _n in _R2C:
    register_gradient(_n)(_r2c_grad)
for _n in _C2R:
    register_gradient(_n)(_c2r_grad)

