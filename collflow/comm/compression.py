"""Gradient compression codecs for the wire: float16 and bfloat16 (as uint16).

Encoded buffers travel by allgather and are decoded and summed in float32 on arrival, in
rank order, so the sum neither overflows float16's range nor depends on the ranks' order
(every rank computes the identical result).
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["encode", "decode", "sum_encoded", "wire_dtype"]


def wire_dtype(compression: str) -> Any:
    return {"fp16": np.float16, "bf16": np.uint16}[compression]


def encode(x: np.ndarray, compression: str) -> np.ndarray:
    """float32/float64 -> float16, or bfloat16 bits (uint16) with round-to-nearest-even."""
    if compression == "fp16":
        return x.astype(np.float16)
    if compression == "bf16":
        u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
        # round to nearest even on the 16 dropped bits
        rounded = u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))
        out = (rounded >> np.uint32(16)).astype(np.uint16)
        nan = np.isnan(x)
        if nan.any():
            out[nan] = 0x7FC0
        return out
    raise ValueError(f"unknown compression {compression!r}")


def decode(b: np.ndarray, compression: str) -> np.ndarray:
    """Back to float32."""
    if compression == "fp16":
        return b.astype(np.float32)
    if compression == "bf16":
        return (b.astype(np.uint32) << np.uint32(16)).view(np.float32)
    raise ValueError(f"unknown compression {compression!r}")


def sum_encoded(gathered: np.ndarray, size: int, compression: str) -> np.ndarray:
    """Sum over ranks of an allgathered (size * n,) encoded buffer, in float32, rank order."""
    parts = gathered.reshape(size, -1)
    acc = decode(parts[0], compression).copy()
    for r in range(1, size):
        acc += decode(parts[r], compression)
    return acc
