"""TF1's tf.signal framing and short-time Fourier transforms: frame, overlap_and_add, the Hann
and Hamming windows, stft, inverse_stft and inverse_stft_window_fn.

Everything is composed of existing ops (GatherV2, Pad, Reshape, AddN, RFFT/IRFFT, Mul), so
gradients come from theirs.  Lengths (frame_length, frame_step, fft_length, window_length)
must be known when the graph is built; the other dimensions may be unknown (the framed axis
too: the frame count is then computed in the graph).  frame is one gather with a
[frames, frame_length] index table; overlap_and_add pads and adds ceil(frame_length /
frame_step) shifted copies (a few for the usual overlaps), never a loop over frames.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from . import array_ops as _a
from . import fft_ops as _fft
from . import math_ops as _m
from . import math_more_ops as _mm
from . import misc_ops as _misc
from . import rearrange_ops as _re
from . import slicing_ops as _s
from .array_util import _norm_axis
from .op_util import static_axis

__all__ = ["frame", "overlap_and_add", "hann_window", "hamming_window", "stft", "inverse_stft",
           "inverse_stft_window_fn", "fftshift", "ifftshift"]


def static_int(v: Any, what: str) -> int:
    """An integer argument as a Python int: an int, a NumPy scalar or a constant tensor."""
    if isinstance(v, _g.Tensor) or hasattr(v, "handle"):
        try:
            v = static_axis(v, what)
        except TypeError:
            raise NotImplementedError(f"{what} must be known when the graph is built (a Python int or a constant), "
                                      f"got the run-time tensor {v!r}") from None
    arr = np.asarray(v)
    if arr.ndim != 0:
        raise ValueError(f"{what} must be a scalar, got shape {list(arr.shape)}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{what} must be an integer, got {v!r}")
    return int(arr)


def _float_dtype(dtype: Any, what: str) -> _dt.DType:
    d = _dt.as_dtype(dtype)
    if not d.is_floating:
        raise ValueError(f"{what}: dtype must be a floating point type, got {d.name}")
    return d


# -- framing ------------------------------------------------------------------------------------

def frame(signal: Any, frame_length: Any, frame_step: Any, pad_end: bool = False, pad_value: Any = 0,
          axis: Any = -1, name: Optional[str] = None) -> _g.Tensor:
    """Overlapping frames of `signal` along `axis` (tf.signal.frame): the axis of length L is
    replaced by [frames, frame_length], frame i starting at sample i * frame_step.  Without
    pad_end only whole frames (1 + (L - frame_length) // frame_step, or 0); with it
    ceil(L / frame_step) frames, the end padded with pad_value."""
    x = _g.convert_to_tensor(_m._as_value(signal))
    fl = static_int(frame_length, "frame: frame_length")
    fs = static_int(frame_step, "frame: frame_step")
    if fl < 0:
        raise ValueError(f"frame: frame_length must be non-negative, got {fl}")
    if fs <= 0:
        raise ValueError(f"frame: frame_step must be positive, got {fs}")
    if x.shape.rank is None:
        raise NotImplementedError("frame: the signal's rank must be known when the graph is built")
    if x.shape.rank < 1:
        raise ValueError(f"frame: signal must have rank at least 1, got shape {x.shape}")
    ax = _norm_axis(static_int(axis, "frame: axis"), x.shape.rank, "frame")
    length = x.shape.dims[ax]
    with _g.name_scope(name or "frame"):
        if length is None:
            return _frame_dynamic(x, fl, fs, pad_end, pad_value, ax)
        length = int(length)
        if pad_end:
            n = -(-length // fs)
            need = max(0, fl + fs * (n - 1) - length) if n > 0 else 0
            if need:
                x = _pad_axis(x, ax, need, pad_value)
        else:
            n = 1 + (length - fl) // fs if length >= fl else 0
        idx = (np.arange(n, dtype=np.int32)[:, None] * fs + np.arange(fl, dtype=np.int32)[None, :])
        return _s.gather(x, _g.convert_to_tensor(idx.reshape(n, fl), dtype=_dt.int32), axis=ax)


def _pad_axis(x: _g.Tensor, ax: int, count: int, value: Any) -> _g.Tensor:
    pads = [[0, 0]] * x.shape.rank
    pads[ax] = [0, count]
    return _s.pad(x, pads, constant_values=_g.convert_to_tensor(value, dtype=x.dtype))


def _frame_dynamic(x: _g.Tensor, fl: int, fs: int, pad_end: bool, pad_value: Any, ax: int) -> _g.Tensor:
    """frame of an axis whose length is known only at run time: the frame count and the index
    table are computed in the graph (still one gather)."""
    length = _a.shape(x)[ax]
    if pad_end:
        n = (length + (fs - 1)) // fs
        if fl > 1:  # a frame overruns the end by at most fl - 1 samples: pad that much, gather what is needed
            x = _pad_axis(x, ax, fl - 1, pad_value)
    else:
        n = _m.maximum(0, 1 + (length - fl) // fs)
    idx = _a.expand_dims(_misc.range(n) * fs, 1) + _a.reshape(_g.convert_to_tensor(np.arange(fl, dtype=np.int32)),
                                                         [1, fl])
    out = _s.gather(x, idx, axis=ax)
    dims = list(x.shape.dims)
    out.set_shape(dims[:ax] + [None, fl] + dims[ax + 1:])
    return out


def overlap_and_add(signal: Any, frame_step: Any, name: Optional[str] = None) -> _g.Tensor:
    """Frames [..., frames, frame_length] added back at frame_step apart (tf.signal.overlap_and_add):
    [..., (frames - 1) * frame_step + frame_length]."""
    x = _g.convert_to_tensor(_m._as_value(signal))
    fs = static_int(frame_step, "overlap_and_add: frame_step")
    if x.shape.rank is None:
        raise NotImplementedError("overlap_and_add: the signal's rank must be known when the graph is built")
    if x.shape.rank < 2:
        raise ValueError(f"overlap_and_add: signal must have rank at least 2, got shape {x.shape}")
    if fs <= 0:
        raise ValueError(f"overlap_and_add: frame_step must be positive, got {fs}")
    nf, fl = x.shape.dims[-2], x.shape.dims[-1]
    if fl is None:
        raise NotImplementedError(f"overlap_and_add: frame_length (the last dimension) must be known when the graph "
                                  f"is built, got shape {x.shape}")
    fl = int(fl)
    r = x.shape.rank
    lead = [[0, 0]] * (r - 2)
    with _g.name_scope(name or "overlap_and_add"):
        outer = _a.shape(x)[:-2]
        if fl == 0 or nf == 0:  # nothing to add: zeros of the output's shape
            out_len = _m.maximum(0, (_a.shape(x)[-2] - 1) * fs + fl)
            return _a.fill(_a.concat([outer, _a.reshape(out_len, [1])], 0), _g.convert_to_tensor(0, dtype=x.dtype))
        k = -(-fl // fs)  # blocks of frame_step samples per frame
        padded = _s.pad(x, lead + [[0, 0], [0, k * fs - fl]]) if k * fs != fl else x
        # [..., frames, k, step]: block j of frame f lands on output block f + j
        blocks = _a.reshape(padded, _a.concat([outer, [-1, k, fs]], 0))
        parts = []
        for j in range(k):
            bj = _s.slice(blocks, [0] * (r - 2) + [0, j, 0], [-1] * (r - 2) + [-1, 1, -1])
            bj = _a.squeeze(bj, [r - 1])
            parts.append(_s.pad(bj, lead + [[j, k - 1 - j], [0, 0]]))
        total = parts[0] if k == 1 else _m.add_n(parts)
        flat = _a.reshape(total, _a.concat([outer, [-1]], 0))
        # (frames + k - 1) * step samples, of which the last k * step - frame_length are past the end
        if k * fs != fl:
            flat = flat[..., :fl - k * fs]
        # the reshapes' -1 hide what the graph knows: the outer dims and (frames - 1) * step + frame_length
        flat.set_shape(list(x.shape.dims[:-2]) + [None if nf is None else (int(nf) - 1) * fs + fl])
        return flat


# -- windows ------------------------------------------------------------------------------------

def _cosine_window(window_length: Any, periodic: Any, dtype: Any, a: float, b: float, what: str) -> _g.Tensor:
    n = static_int(window_length, f"{what}: window_length")
    if n < 0:
        raise InvalidArgumentError(f"{what}: window_length must be non-negative, got {n}")
    if isinstance(periodic, _g.Tensor):
        pv = static_axis(periodic, f"{what}: periodic")
        periodic = bool(pv)
    d = _float_dtype(dtype, what)
    if n == 1:
        w = np.ones([1])
    else:
        # as TF: `periodic` lengthens only an even window's period (an odd one is symmetric either way)
        denom = n if periodic and n % 2 == 0 else n - 1
        w = a - b * np.cos(2.0 * math.pi * np.arange(n) / max(denom, 1))
    return _g.convert_to_tensor(w.astype(d.np), dtype=d)


def hann_window(window_length: Any, periodic: Any = True, dtype: Any = _dt.float32,
                name: Optional[str] = None) -> _g.Tensor:
    """The Hann window 0.5 - 0.5 cos(2 pi n / N) (tf.signal.hann_window); N = window_length
    when periodic and window_length is even, window_length - 1 otherwise (TF's rule); a window
    of length 1 is [1]."""
    return _cosine_window(window_length, periodic, dtype, 0.5, 0.5, "hann_window")


def hamming_window(window_length: Any, periodic: Any = True, dtype: Any = _dt.float32,
                   name: Optional[str] = None) -> _g.Tensor:
    """The Hamming window 0.54 - 0.46 cos(2 pi n / N) (tf.signal.hamming_window)."""
    return _cosine_window(window_length, periodic, dtype, 0.54, 0.46, "hamming_window")


# -- short-time Fourier transforms ----------------------------------------------------------

def _default_fft_length(frame_length: int) -> int:
    return 1 if frame_length <= 1 else 1 << (frame_length - 1).bit_length()


def stft(signals: Any, frame_length: Any, frame_step: Any, fft_length: Any = None,
         window_fn: Optional[Callable] = hann_window, pad_end: bool = False,
         name: Optional[str] = None) -> _g.Tensor:
    """The short-time Fourier transform of real signals [..., samples] (tf.signal.stft):
    [..., frames, fft_length // 2 + 1] complex; fft_length defaults to the smallest power of 2
    enclosing frame_length; window_fn(frame_length, dtype=...) or None for no window."""
    x = _g.convert_to_tensor(_m._as_value(signals), dtype=None if isinstance(signals, _g.Tensor) else _dt.float32)
    if x.dtype not in (_dt.float32, _dt.float64):
        raise ValueError(f"stft: signals must be float32 or float64, got {x.dtype.name}")
    if x.shape.rank is not None and x.shape.rank < 1:
        raise ValueError(f"stft: signals must have rank at least 1, got shape {x.shape}")
    fl = static_int(frame_length, "stft: frame_length")
    fs = static_int(frame_step, "stft: frame_step")
    n = _default_fft_length(fl) if fft_length is None else static_int(fft_length, "stft: fft_length")
    with _g.name_scope(name or "stft"):
        framed = frame(x, fl, fs, pad_end=pad_end)
        if window_fn is not None:
            framed = framed * window_fn(fl, dtype=x.dtype)
        return _fft.rfft(framed, [n])


def inverse_stft(stfts: Any, frame_length: Any, frame_step: Any, fft_length: Any = None,
                 window_fn: Optional[Callable] = hann_window, name: Optional[str] = None) -> _g.Tensor:
    """The inverse of stft (tf.signal.inverse_stft): irfft of each frame, cropped or zero-padded
    to frame_length, windowed, overlap-added.  Perfect reconstruction needs a window_fn such as
    inverse_stft_window_fn(frame_step)."""
    z = _g.convert_to_tensor(_m._as_value(stfts))
    if not z.dtype.is_complex:
        raise ValueError(f"inverse_stft: stfts must be complex64 or complex128, got {z.dtype.name}")
    if z.shape.rank is not None and z.shape.rank < 2:
        raise ValueError(f"inverse_stft: stfts must have rank at least 2, got shape {z.shape}")
    fl = static_int(frame_length, "inverse_stft: frame_length")
    fs = static_int(frame_step, "inverse_stft: frame_step")
    n = _default_fft_length(fl) if fft_length is None else static_int(fft_length, "inverse_stft: fft_length")
    with _g.name_scope(name or "inverse_stft"):
        frames = _fft.irfft(z, [n])
        r = frames.shape.rank
        if n > fl:
            frames = _s.slice(frames, [0] * r, [-1] * (r - 1) + [fl])
        elif n < fl:
            frames = _s.pad(frames, [[0, 0]] * (r - 1) + [[0, fl - n]])
        if window_fn is not None:
            frames = frames * window_fn(fl, dtype=frames.dtype)
        return overlap_and_add(frames, fs)


def inverse_stft_window_fn(frame_step: Any, forward_window_fn: Callable = hann_window,
                           name: Optional[str] = None) -> Callable:
    """A window_fn for inverse_stft that undoes stft with forward_window_fn
    (tf.signal.inverse_stft_window_fn): the forward window divided by the sum of its squares
    over the frames that overlap each sample."""
    fs = static_int(frame_step, "inverse_stft_window_fn: frame_step")

    def window_fn(frame_length: Any, dtype: Any = _dt.float32) -> _g.Tensor:
        fl = static_int(frame_length, "inverse_stft_window_fn: frame_length")
        w = forward_window_fn(fl, dtype=dtype)
        sq = w * w
        k = -(-fl // fs) if fl else 0
        if k == 0:
            return w
        padded = _s.pad(sq, [[0, k * fs - fl]]) if k * fs != fl else sq
        # the sum of the squared window over all shifts by multiples of frame_step, per phase
        denom = _m.reduce_sum(_a.reshape(padded, [k, fs]), 0)
        denom = _a.reshape(_a.tile(_a.reshape(denom, [1, fs]), [k, 1]), [k * fs])
        if k * fs != fl:
            denom = _s.slice(denom, [0], [fl])
        # a sample no frame's window reaches (denominator 0) gets 0, as TF
        return _mm.div_no_nan(w, denom)
    return window_fn


# -- spectrum shifts ------------------------------------------------------------------------------

def _shift(x: Any, axes: Any, inverse: bool, what: str) -> _g.Tensor:
    t = _g.convert_to_tensor(_m._as_value(x))
    if t.shape.rank is None:
        raise NotImplementedError(f"{what}: the input's rank must be known when the graph is built")
    r = t.shape.rank
    if axes is None:
        axes = list(range(r))
    else:
        axes = static_axis(axes, what)
        axes = [axes] if isinstance(axes, int) else list(axes)
        axes = [_norm_axis(a, r, what) for a in axes]
    if not axes:
        return t
    for a in axes:
        if t.shape.dims[a] is None:
            raise NotImplementedError(f"{what}: the size of axis {a} must be known when the graph is built, "
                                      f"got shape {t.shape}")
    shifts = [(-1 if inverse else 1) * (int(t.shape.dims[a]) // 2) for a in axes]
    return _re.roll(t, shifts, axes, name=what)


def fftshift(x: Any, axes: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """The zero-frequency term moved to the centre (tf.signal.fftshift): a roll by n // 2 along
    each of `axes` (all by default)."""
    return _shift(x, axes, False, name or "fftshift")


def ifftshift(x: Any, axes: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """The inverse of fftshift (tf.signal.ifftshift): a roll by -(n // 2)."""
    return _shift(x, axes, True, name or "ifftshift")
