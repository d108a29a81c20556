"""Kernels of EncodeWav / DecodeWav (graph/ops/audio_ops.py) and the WAV codec they share with
tf.summary.audio: RIFF/WAVE, one `fmt ` chunk (PCM, 16 bits), one `data` chunk; other chunks
are skipped when reading, as TensorFlow's wav_io skips them."""
from __future__ import annotations

import struct
from typing import Any, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .registry import register_kernel, KernelContext

__all__ = ["encode_wav", "decode_wav"]

_SCALE = 32768.0


def encode_wav(audio: np.ndarray, sample_rate: int) -> bytes:
    """16-bit PCM WAV bytes of float audio [frames, channels] (clipped to [-1, 1], x * 32768
    rounded half away from zero, at most 32767: TF's FloatToInt16Sample)."""
    a = np.asarray(audio, dtype=np.float32)
    if a.ndim != 2:
        raise InvalidArgumentError(f"audio must be 2-dimensional (frames, channels), got shape {a.shape}")
    frames, channels = a.shape
    if channels < 1 or channels > 0xFFFF:
        raise InvalidArgumentError(f"audio must have between 1 and 65535 channels, got {channels}")
    if not 0 < int(sample_rate) < 1 << 32:
        raise InvalidArgumentError(f"sample_rate must be positive, got {sample_rate}")
    scaled = np.clip(np.nan_to_num(a, nan=0.0), -1.0, 1.0).astype(np.float64) * _SCALE
    ints = np.clip(np.sign(scaled) * np.floor(np.abs(scaled) + 0.5), -32768, 32767).astype("<i2")
    data = ints.tobytes()
    block = 2 * channels
    fmt = struct.pack("<HHIIHH", 1, channels, int(sample_rate), int(sample_rate) * block, block, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def decode_wav(data: bytes, desired_channels: int = -1, desired_samples: int = -1) -> Tuple[np.ndarray, int]:
    """(float32 [frames, channels], sample rate) of 16-bit PCM WAV bytes; InvalidArgumentError
    naming what is wrong for anything else."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise InvalidArgumentError(f"Header mismatch: a WAV file starts with RIFF....WAVE (got {data[:12]!r})")
    pos, fmt, samples = 12, None, None
    while pos + 8 <= len(data):
        cid, size = data[pos:pos + 4], struct.unpack_from("<I", data, pos + 4)[0]
        body = data[pos + 8:pos + 8 + size]
        if len(body) < size:
            raise InvalidArgumentError(f"WAV chunk {cid!r} runs past the end of the data ({size} bytes declared)")
        if cid == b"fmt ":
            if size < 16:
                raise InvalidArgumentError(f"WAV fmt chunk is {size} bytes, needs 16")
            fmt = struct.unpack_from("<HHIIHH", body)
        elif cid == b"data":
            samples = body
        pos += 8 + size + (size & 1)  # chunks are padded to an even size
    if fmt is None:
        raise InvalidArgumentError("WAV data has no fmt chunk")
    audio_format, channels, rate, _, _, bits = fmt
    if audio_format != 1:
        raise InvalidArgumentError(f"Bad audio format for WAV: Expected 1 (PCM), but got {audio_format}")
    if bits != 16:
        raise InvalidArgumentError(f"Can only read 16-bit WAV files, but received {bits}")
    if channels < 1:
        raise InvalidArgumentError("WAV data declares no channels")
    if samples is None:
        raise InvalidArgumentError("WAV data has no data chunk")
    frames = len(samples) // (2 * channels)
    a = np.frombuffer(samples[:frames * 2 * channels], dtype="<i2").reshape(frames, channels)
    out = a.astype(np.float32) / np.float32(_SCALE)
    if desired_channels > 0 and desired_channels != channels:
        # fewer: the first ones; more: the last one repeated (TF's decoder)
        idx = np.minimum(np.arange(desired_channels), channels - 1)
        out = out[:, idx]
    if desired_samples > 0 and desired_samples != frames:
        fixed = np.zeros((desired_samples, out.shape[1]), np.float32)
        n = min(desired_samples, frames)
        fixed[:n] = out[:n]
        out = fixed
    return np.ascontiguousarray(out), int(rate)


def _bytes(x: Any) -> bytes:
    v = np.asarray(x, dtype=object).reshape(()).item() if not isinstance(x, (bytes, str)) else x
    return v.encode("utf-8", "surrogateescape") if isinstance(v, str) else bytes(v)


@register_kernel("EncodeWav")
def _encode_wav_k(op: Any, ctx: KernelContext) -> Any:
    def run(audio: Any, rate: Any) -> np.ndarray:
        try:
            return np.array(encode_wav(np.asarray(audio), int(np.asarray(rate))), dtype=object)
        except InvalidArgumentError as e:
            raise InvalidArgumentError(str(e), op) from None
    return run


@register_kernel("DecodeWav")
def _decode_wav_k(op: Any, ctx: KernelContext) -> Any:
    c, n = op.attrs["desired_channels"], op.attrs["desired_samples"]

    def run(contents: Any) -> tuple:
        try:
            audio, rate = decode_wav(_bytes(contents), c, n)
        except InvalidArgumentError as e:
            raise InvalidArgumentError(str(e), op) from None
        return audio, np.array(rate, dtype=np.int32)
    return run
