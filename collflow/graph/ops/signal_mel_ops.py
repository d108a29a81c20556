"""TF1's tf.signal DCTs and mel features: dct / idct (types 1-4, norm None or 'ortho', n),
linear_to_mel_weight_matrix and mfccs_from_log_mel_spectrograms.

A DCT along the innermost axis is a product with a constant cosine matrix built in float64
(exact to the input's precision, its gradient is the transposed product), so the transform
length must be known when the graph is built; the mel matrix is a constant too.  The
conventions are scipy.fftpack's, which TF's follow:

  type 1: y_k = x_0 + (-1)^k x_{N-1} + 2 sum_{0<n<N-1} x_n cos(pi k n / (N - 1))
  type 2: y_k = 2 sum_n x_n cos(pi k (2n + 1) / 2N)
  type 3: y_k = x_0 + 2 sum_{n>0} x_n cos(pi (2k + 1) n / 2N)
  type 4: y_k = 2 sum_n x_n cos(pi (2k + 1)(2n + 1) / 4N)
"""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from . import array_ops as _a
from . import math_ops as _m
from . import matrix_ops as _mx
from .signal_ops import static_int

__all__ = ["dct", "idct", "linear_to_mel_weight_matrix", "mfccs_from_log_mel_spectrograms"]

_INVERSE_TYPE = {1: 1, 2: 3, 3: 2, 4: 4}


def dct_matrix(n_in: int, n: int, dct_type: int, norm: Optional[str]) -> np.ndarray:
    """The float64 [n_in, n] matrix M with dct(x, type, n, norm) = x @ M for x of length n_in
    (the input cropped or zero-padded to n, as TF's `n`)."""
    j = np.arange(n)[:, None].astype(np.float64)   # input index
    k = np.arange(n)[None, :].astype(np.float64)   # output index
    if dct_type == 1:
        m = 2.0 * np.cos(math.pi * j * k / (n - 1))
        m[0, :] = 1.0
        m[-1, :] = (-1.0) ** np.arange(n)
    elif dct_type == 2:
        m = 2.0 * np.cos(math.pi * k * (2 * j + 1) / (2 * n))
        if norm == "ortho":
            m[:, 0] *= math.sqrt(1.0 / (4 * n))
            m[:, 1:] *= math.sqrt(1.0 / (2 * n))
    elif dct_type == 3:
        m = 2.0 * np.cos(math.pi * (2 * k + 1) * j / (2 * n))
        m[0, :] = 1.0
        if norm == "ortho":
            m[0, :] *= math.sqrt(1.0 / n)
            m[1:, :] *= math.sqrt(1.0 / (2 * n))
    else:
        m = 2.0 * np.cos(math.pi * (2 * k + 1) * (2 * j + 1) / (4 * n))
        if norm == "ortho":
            m *= math.sqrt(1.0 / (2 * n))
    if n_in <= n:
        return m[:n_in]
    return np.concatenate([m, np.zeros([n_in - n, n])], 0)


def _last_axis_product(x: _g.Tensor, m: np.ndarray) -> _g.Tensor:
    """x [..., a] times the constant [a, b]: [..., b] (unknown outer dimensions allowed)."""
    mt = _g.convert_to_tensor(m.astype(x.dtype.np), dtype=x.dtype, graph=x.graph)
    if x.shape.rank == 1:
        return _a.reshape(_m.matmul(_a.reshape(x, [1, -1]), mt), [m.shape[1]])
    if x.shape.rank == 2:
        return _m.matmul(x, mt)
    return _mx.tensordot(x, mt, 1)


def dct(input: Any, type: int = 2, n: Any = None, axis: int = -1, norm: Optional[str] = None,  # noqa: A002
        name: Optional[str] = None) -> _g.Tensor:
    """The DCT of [..., samples] float32/float64 signals along the last axis (tf.signal.dct):
    types 1, 2, 3 (TF 1.15's) and 4 (TF 2's), norm None or 'ortho' (not for type 1), n crops or
    zero-pads the input to the transform length."""
    x = _g.convert_to_tensor(_m._as_value(input), dtype=None if isinstance(input, _g.Tensor) else _dt.float32)
    if type not in (1, 2, 3, 4):
        raise ValueError(f"Types I, II, III and IV (I)DCT are supported, got type {type!r}")
    if axis != -1:
        raise NotImplementedError(f"axis must be -1. Got: {axis}")
    if n is not None:
        n = static_int(n, "dct: n")
        if n < 1:
            raise ValueError(f"n should be a positive integer or None, got {n}")
    if norm not in (None, "ortho"):
        raise ValueError(f"Unknown normalization. Expected None or 'ortho', got: {norm}")
    if type == 1 and norm == "ortho":
        raise ValueError("Normalization is not supported for the Type-I DCT.")
    if x.dtype not in (_dt.float32, _dt.float64):
        raise ValueError(f"dct: input must be float32 or float64, got {x.dtype.name}")
    if x.shape.rank is None or x.shape.rank < 1 or x.shape.dims[-1] is None:
        raise NotImplementedError(f"dct: the input's rank and last dimension must be known when the graph is "
                                  f"built, got shape {x.shape}")
    n_in = int(x.shape.dims[-1])
    size = n_in if n is None else n
    if type == 1 and size < 2:
        raise ValueError("Type-I DCT requires the dimension to be greater than one.")
    with _g.name_scope(name or "dct"):
        return _last_axis_product(x, dct_matrix(n_in, size, type, norm))


def idct(input: Any, type: int = 2, n: Any = None, axis: int = -1, norm: Optional[str] = None,  # noqa: A002
         name: Optional[str] = None) -> _g.Tensor:
    """The inverse DCT (tf.signal.idct): the DCT of the inverse type (3 for 2, 2 for 3, 1 and 4
    themselves); with norm=None the round trip scales by 2N (2(N - 1) for type 1), as TF."""
    if type not in _INVERSE_TYPE:
        raise ValueError(f"Types I, II, III and IV (I)DCT are supported, got type {type!r}")
    return dct(input, type=_INVERSE_TYPE[type], n=n, axis=axis, norm=norm, name=name or "idct")


# -- mel scale ----------------------------------------------------------------------------------

def _hz_to_mel(f: np.ndarray) -> np.ndarray:
    # the HTK mel scale in natural-log form, as TF's mel_ops
    return 1127.0 * np.log1p(np.asarray(f, np.float64) / 700.0)


def _static_float(v: Any, what: str) -> float:
    if isinstance(v, _g.Tensor):
        if v.op.type != "Const":
            raise NotImplementedError(f"linear_to_mel_weight_matrix: {what} must be known when the graph is built")
        v = v.op.attrs["value"]
    return float(np.asarray(v))


def linear_to_mel_weight_matrix(num_mel_bins: Any = 20, num_spectrogram_bins: Any = 129, sample_rate: Any = 8000,
                                lower_edge_hertz: Any = 125.0, upper_edge_hertz: Any = 3800.0,
                                dtype: Any = _dt.float32, name: Optional[str] = None) -> _g.Tensor:
    """The [num_spectrogram_bins, num_mel_bins] matrix of triangular mel filters
    (tf.signal.linear_to_mel_weight_matrix): spectrogram bin i stands for frequency
    i * (sample_rate / 2) / (num_spectrogram_bins - 1); filter m rises from band edge m to
    m + 1 and falls to m + 2, the num_mel_bins + 2 edges equally spaced in mel from
    lower_edge_hertz to upper_edge_hertz; the DC bin's row is zero."""
    bins = static_int(num_mel_bins, "linear_to_mel_weight_matrix: num_mel_bins")
    nspec = static_int(num_spectrogram_bins, "linear_to_mel_weight_matrix: num_spectrogram_bins")
    rate = _static_float(sample_rate, "sample_rate")
    lo = _static_float(lower_edge_hertz, "lower_edge_hertz")
    hi = _static_float(upper_edge_hertz, "upper_edge_hertz")
    if bins <= 0:
        raise ValueError(f"num_mel_bins must be positive. Got: {bins}")
    if lo < 0.0:
        raise ValueError(f"lower_edge_hertz must be non-negative. Got: {lo}")
    if lo >= hi:
        raise ValueError(f"lower_edge_hertz {lo:.1f} >= upper_edge_hertz {hi:.1f}")
    if rate <= 0.0:
        raise ValueError(f"sample_rate must be positive. Got: {rate}")
    if hi > rate / 2:
        raise ValueError(f"upper_edge_hertz must not be larger than the Nyquist frequency (sample_rate / 2). "
                         f"Got {hi} for sample_rate: {rate}")
    d = _dt.as_dtype(dtype)
    if not d.is_floating:
        raise ValueError(f"dtype must be a floating point type. Got: {d.name}")
    if nspec < 1:
        raise ValueError(f"num_spectrogram_bins must be positive. Got: {nspec}")
    freqs = np.linspace(0.0, rate / 2, nspec)[1:]
    mel = _hz_to_mel(freqs)[:, None]
    edges = np.linspace(_hz_to_mel(lo), _hz_to_mel(hi), bins + 2)
    left, center, right = edges[:-2][None, :], edges[1:-1][None, :], edges[2:][None, :]
    rising = (mel - left) / (center - left)
    falling = (right - mel) / (right - center)
    w = np.maximum(0.0, np.minimum(rising, falling))
    w = np.concatenate([np.zeros([1, bins]), w], 0)
    with _g.name_scope(name or "linear_to_mel_weight_matrix"):
        return _g.convert_to_tensor(w.astype(d.np), dtype=d)


def mfccs_from_log_mel_spectrograms(log_mel_spectrograms: Any, name: Optional[str] = None) -> _g.Tensor:
    """MFCCs of [..., num_mel_bins] log-magnitude mel spectrograms
    (tf.signal.mfccs_from_log_mel_spectrograms): the type-2 DCT scaled by 1 / sqrt(2 num_mel_bins),
    all num_mel_bins coefficients (slice the first few, as TF's docs show)."""
    x = _g.convert_to_tensor(_m._as_value(log_mel_spectrograms),
                             dtype=None if isinstance(log_mel_spectrograms, _g.Tensor) else _dt.float32)
    if x.shape.rank is None or x.shape.rank < 1 or x.shape.dims[-1] is None:
        raise NotImplementedError("mfccs_from_log_mel_spectrograms: the number of mel bins (the last dimension) "
                                  f"must be known when the graph is built, got shape {x.shape}")
    bins = int(x.shape.dims[-1])
    if bins == 0:
        raise ValueError(f"num_mel_bins must be positive. Got: {x}")
    with _g.name_scope(name or "mfccs_from_log_mel_spectrograms"):
        m = dct_matrix(bins, bins, 2, None) / math.sqrt(2.0 * bins)
        return _last_axis_product(x, m)

