"""TF1's WAV codec: tf.audio.encode_wav / decode_wav (16-bit PCM, as TensorFlow's wav_io).

Host kernels in kernels/audio_kernels.py.  encode_wav takes float audio [frames, channels] in
[-1, 1] and a sample rate; decode_wav gives float32 audio [frames, channels] and the sample
rate, optionally fixed to `desired_channels` / `desired_samples`.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from .op_util import single

__all__ = ["encode_wav", "decode_wav"]


def _decoded(op: _g.Operation) -> list:
    c, n = op.attrs["desired_channels"], op.attrs["desired_samples"]
    return [(_dt.float32, TensorShape([n if n > 0 else None, c if c > 0 else None])), (_dt.int32, TensorShape([]))]


register_op("EncodeWav", lambda op: [(_dt.string, TensorShape([]))], host_only=True,
            doc="16-bit PCM WAV bytes of float audio [frames, channels]")
register_op("DecodeWav", _decoded, host_only=True, doc="float32 audio [frames, channels] and the sample rate of a WAV")
not_differentiable("EncodeWav", "DecodeWav")


def encode_wav(audio: Any, sample_rate: Any, name: Optional[str] = None) -> _g.Tensor:
    """A WAV file (16-bit PCM) of float32 `audio` [frames, channels]: values are clipped to
    [-1, 1] and scaled by 32768 (TF's wav_io), `sample_rate` an int32 scalar."""
    x = _g.convert_to_tensor(audio, dtype=_dt.float32)
    if x.dtype != _dt.float32:
        raise TypeError(f"encode_wav: audio must be float32, got {x.dtype.name}")
    if x.shape.rank not in (None, 2):
        raise ValueError(f"Shape must be rank 2 but is rank {x.shape.rank} for 'EncodeWav' (audio {x.shape})")
    rate = _g.convert_to_tensor(sample_rate, dtype=_dt.int32)
    if rate.shape.rank not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {rate.shape.rank} for 'EncodeWav' (sample_rate)")
    return single("EncodeWav", [x, rate], {}, name=name or "EncodeWav")


def decode_wav(contents: Any, desired_channels: int = -1, desired_samples: int = -1,
               name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor]:
    """(audio, sample_rate) of a 16-bit PCM WAV file: float32 [frames, channels] in [-1, 1) and
    an int32 scalar.  desired_channels: keep the first channels, or repeat the last one;
    desired_samples: truncate or pad with zeros (-1: as in the file)."""
    t = _g.convert_to_tensor(contents, dtype=_dt.string)
    if t.shape.rank not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {t.shape.rank} for 'DecodeWav' (contents {t.shape})")
    op = _g.get_default_graph().create_op("DecodeWav", [t], {"desired_channels": int(desired_channels),
                                                             "desired_samples": int(desired_samples)},
                                          name=name or "DecodeWav")
    return op.outputs[0], op.outputs[1]
