"""The speech features of TF1's audio tutorial: AudioSpectrogram and Mfcc (TF's raw ops,
`contrib.framework.python.ops.audio_ops.audio_spectrogram` / `mfcc`).

audio_spectrogram(input [samples, channels], window_size, stride) gives [channels, frames,
fft_length // 2 + 1]: frames of window_size samples every stride samples (only whole frames),
a periodic Hann window, fft_length the smallest power of 2 >= window_size, the magnitude (or
its square).  mfcc(spectrogram [channels, frames, bins], sample_rate) expects a squared
magnitude spectrogram and gives [channels, frames, dct_coefficient_count]: a triangular
filterbank over the magnitudes, log (floored at 1e-12), an orthonormal-scaled DCT-II of the
filterbank channels.  Host kernels in kernels/speech_kernels.py; neither has a gradient
(TF has none).
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import register_op
from ..shape import TensorShape
from .op_util import single

__all__ = ["audio_spectrogram", "mfcc"]


def _spectrogram_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    ws, st = op.attrs["window_size"], op.attrs["stride"]
    bins = (1 << (ws - 1).bit_length()) // 2 + 1
    if x.shape.rank is None:
        return [(_dt.float32, TensorShape([None, None, bins]))]
    samples, channels = x.shape.dims
    frames = None if samples is None else (0 if samples < ws else 1 + (int(samples) - ws) // st)
    return [(_dt.float32, TensorShape([channels, frames, bins]))]


def _mfcc_spec(op: _g.Operation) -> list:
    s = op.inputs[0]
    n = op.attrs["dct_coefficient_count"]
    if s.shape.rank is None:
        return [(_dt.float32, TensorShape([None, None, n]))]
    return [(_dt.float32, TensorShape(list(s.shape.dims[:2]) + [n]))]


register_op("AudioSpectrogram", _spectrogram_spec, host_only=True,
            doc="[channels, frames, bins] spectrogram of audio [samples, channels]")
register_op("Mfcc", _mfcc_spec, host_only=True, doc="MFCCs of a squared-magnitude spectrogram [channels, frames, bins]")
# AudioSpectrogram and Mfcc: no gradient registered (LookupError through them, as TF)


def _rank_check(t: _g.Tensor, rank: int, op_type: str, what: str) -> None:
    if t.shape.rank is not None and t.shape.rank != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {t.shape.rank} for '{op_type}' ({what} {t.shape})")


def audio_spectrogram(input: Any, window_size: int, stride: int, magnitude_squared: bool = False,  # noqa: A002
                      name: Optional[str] = None) -> _g.Tensor:
    """The spectrogram of float32 audio [samples, channels] (TF's AudioSpectrogram):
    [channels, frames, fft_length // 2 + 1], frames = 1 + (samples - window_size) // stride
    (0 when shorter than a window)."""
    x = _g.convert_to_tensor(input, dtype=_dt.float32)
    if x.dtype != _dt.float32:
        raise TypeError(f"AudioSpectrogram: input must be float32, got {x.dtype.name}")
    _rank_check(x, 2, "AudioSpectrogram", "input")
    ws, st = int(window_size), int(stride)
    if ws <= 1:
        raise ValueError(f"window size must be > 1, got {ws} for 'AudioSpectrogram'")
    if st <= 0:
        raise ValueError(f"stride must be strictly positive, got {st} for 'AudioSpectrogram'")
    return single("AudioSpectrogram", [x], {"window_size": ws, "stride": st,
                                            "magnitude_squared": bool(magnitude_squared)},
                  name=name or "AudioSpectrogram")


def mfcc(spectrogram: Any, sample_rate: Any, upper_frequency_limit: float = 4000.0,
         lower_frequency_limit: float = 20.0, filterbank_channel_count: int = 40, dct_coefficient_count: int = 13,
         name: Optional[str] = None) -> _g.Tensor:
    """MFCCs of a squared-magnitude spectrogram [channels, frames, bins] (TF's Mfcc; bins stand
    for 0 .. sample_rate / 2): [channels, frames, dct_coefficient_count]."""
    s = _g.convert_to_tensor(spectrogram, dtype=_dt.float32)
    if s.dtype != _dt.float32:
        raise TypeError(f"Mfcc: spectrogram must be float32, got {s.dtype.name}")
    _rank_check(s, 3, "Mfcc", "spectrogram")
    rate = _g.convert_to_tensor(sample_rate, dtype=_dt.int32, graph=s.graph)
    if rate.dtype != _dt.int32:
        raise TypeError(f"Mfcc: sample_rate must be int32, got {rate.dtype.name}")
    _rank_check(rate, 0, "Mfcc", "sample_rate")
    attrs = {"upper_frequency_limit": float(upper_frequency_limit),
             "lower_frequency_limit": float(lower_frequency_limit),
             "filterbank_channel_count": int(filterbank_channel_count),
             "dct_coefficient_count": int(dct_coefficient_count)}
    return single("Mfcc", [s, rate], attrs, name=name or "Mfcc")
