"""Protocol-buffer base-128 varints: the one encoder and decoder the hand-written wire formats
share (summary protos, checkpoint tables, TFRecord reader state, TensorProto bytes)."""
from __future__ import annotations

from typing import Optional, Tuple

__all__ = ["encode_varint", "decode_varint", "VarintError"]


class VarintError(ValueError):
    """Bytes that do not hold a varint where one should be (each caller names its own error)."""


def encode_varint(n: int) -> bytes:
    """Base-128 varint of `n`; a negative int64 is written as its 64-bit two's complement."""
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def decode_varint(buf: bytes, pos: int, end: Optional[int] = None) -> Tuple[int, int]:
    """(value, next position) of the varint at buf[pos], not reading at or past `end`."""
    end = len(buf) if end is None else end
    result = shift = 0
    while True:
        if pos >= end:
            raise VarintError("a varint runs past the end")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise VarintError("a varint longer than 10 bytes")
