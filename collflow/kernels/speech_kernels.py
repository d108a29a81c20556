"""Kernels of AudioSpectrogram and Mfcc (graph/ops/speech_ops.py), vectorized NumPy in float64
(as TF's, which compute in double), float32 results.

The Mfcc filterbank (the conventions TF's op uses, checked against it numerically): FFT bin i
stands for i * hz_per_bin, hz_per_bin = sample_rate / 2 / (bins - 1); mel(f) = 1127 ln(1 + f/700);
channel_count + 1 centre frequencies equally spaced in mel above mel(lower), the (channel_count
+ 2)-th edge at mel(upper); only bins int(1.5 + lower / hz_per_bin) .. int(upper / hz_per_bin)
count.  A bin between centres c and c + 1 gives its magnitude sqrt(power) to channel c with
the weight (centre[c+1] - mel) / (centre[c+1] - centre[c]) and the rest to channel c + 1
(below the first centre only the rising part, to channel 0).  Then log(max(x, 1e-12)) and
y_k = sqrt(2 / C) sum_j x_j cos(pi k (j + 1/2) / C).
"""
from __future__ import annotations

from typing import Any, Dict, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .registry import register_kernel, KernelContext

__all__ = ["spectrogram", "mfcc_weights", "mfcc"]

_FLOOR = 1e-12


def spectrogram(x: np.ndarray, window_size: int, stride: int, magnitude_squared: bool) -> np.ndarray:
    """[channels, frames, fft_length // 2 + 1] float32 spectrogram of audio [samples, channels]."""
    a = np.asarray(x, np.float64)
    if a.ndim != 2:
        raise InvalidArgumentError(f"input must be 2-dimensional, got shape {list(a.shape)}")
    samples, channels = a.shape
    fft_length = 1 << (window_size - 1).bit_length()
    bins = fft_length // 2 + 1
    frames = 0 if samples < window_size else 1 + (samples - window_size) // stride
    if frames == 0 or channels == 0:
        return np.zeros((channels, frames, bins), np.float32)
    window = 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(window_size) / window_size)  # periodic Hann
    idx = np.arange(frames)[:, None] * stride + np.arange(window_size)[None, :]
    framed = a.T[:, idx] * window                       # [channels, frames, window_size]
    power = np.abs(np.fft.rfft(framed, n=fft_length, axis=-1)) ** 2
    out = power if magnitude_squared else np.sqrt(power)
    return out.astype(np.float32)


_WEIGHTS: Dict[Tuple[int, int, int, float, float], np.ndarray] = {}


def _mel(f: Any) -> Any:
    return 1127.0 * np.log1p(np.asarray(f, np.float64) / 700.0)


def mfcc_weights(bins: int, sample_rate: int, channels: int, lower: float, upper: float) -> np.ndarray:
    """The [bins, channels] filterbank applied to the magnitudes (cached per configuration)."""
    key = (bins, sample_rate, channels, lower, upper)
    w = _WEIGHTS.get(key)
    if w is not None:
        return w
    mel_lo = _mel(lower)
    centres = mel_lo + (_mel(upper) - mel_lo) / (channels + 1) * np.arange(1, channels + 2)
    hz_per_bin = 0.5 * sample_rate / (bins - 1)
    start, end = int(1.5 + lower / hz_per_bin), int(upper / hz_per_bin)
    i = np.arange(max(start, 0), min(end, bins - 1) + 1)
    m = _mel(i * hz_per_bin)
    c = np.searchsorted(centres, m, side="left") - 1      # the channel whose rising edge m is past
    w = np.zeros((bins, channels + 1))
    lower_centre = np.where(c >= 0, centres[np.maximum(c, 0)], mel_lo)
    upper_centre = centres[np.minimum(c + 1, channels)]
    frac = (upper_centre - m) / (upper_centre - lower_centre)
    inside = c >= 0
    np.add.at(w, (i[inside], c[inside]), frac[inside])
    nxt = c + 1
    ok = nxt < channels
    np.add.at(w, (i[ok], nxt[ok]), 1.0 - frac[ok])
    w = w[:, :channels]
    _WEIGHTS[key] = w
    return w


def mfcc(spec: np.ndarray, sample_rate: int, upper: float, lower: float, channels: int,
         coefficients: int) -> np.ndarray:
    """[channels_in, frames, coefficients] float32 MFCCs of a squared-magnitude spectrogram."""
    s = np.asarray(spec, np.float64)
    if s.ndim != 3:
        raise InvalidArgumentError(f"Input spectrogram must be 3-dimensional, got shape {list(s.shape)}")
    bins = s.shape[-1]
    if (bins < 2 or sample_rate <= 0 or channels < 1 or lower < 0 or upper <= lower or coefficients < 1
            or coefficients > channels):
        raise InvalidArgumentError(f"Mfcc initialization failed for channel count {bins}, sample rate {sample_rate} "
                                   f"and filterbank_channel_count {channels}")
    if upper > sample_rate / 2:
        # TF's filterbank refuses an upper limit past Nyquist but the op goes on: all zeros
        return np.zeros(s.shape[:2] + (coefficients,), np.float32)
    fb = np.sqrt(np.maximum(s, 0.0)) @ mfcc_weights(bins, int(sample_rate), channels, float(lower), float(upper))
    logs = np.log(np.maximum(fb, _FLOOR))
    j, k = np.arange(channels), np.arange(coefficients)
    dct = np.cos(np.pi / channels * (j[:, None] + 0.5) * k[None, :]) * np.sqrt(2.0 / channels)
    return (logs @ dct).astype(np.float32)


@register_kernel("AudioSpectrogram")
def _spectrogram_kernel(op: Any, ctx: KernelContext) -> Any:
    ws, st, sq = op.attrs["window_size"], op.attrs["stride"], op.attrs["magnitude_squared"]
    return lambda x: spectrogram(np.asarray(x), ws, st, sq)


@register_kernel("Mfcc")
def _mfcc_kernel(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    return lambda s, rate: mfcc(np.asarray(s), int(np.asarray(rate)), a["upper_frequency_limit"],
                                a["lower_frequency_limit"], a["filterbank_channel_count"], a["dct_coefficient_count"])
