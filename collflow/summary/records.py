"""Reading TFRecord framing with masked CRC-32C, the container of TensorBoard's event files
(cf.train.summary_iterator).  Writing is tensorboardX's (summary/writer.py).

A record is: length (uint64, little-endian), masked crc32c of those 8 bytes (uint32),
the data, masked crc32c of the data (uint32).  CRC-32C (Castagnoli, reflected polynomial
0x82F63B78) is computed here from a 256-entry table; masking rotates it right by 15 bits
and adds 0xa282ead8, as TensorFlow's crc32c::Mask.
"""
from __future__ import annotations

import struct
from typing import BinaryIO, Iterator, List

from ..errors import InvalidArgumentError

__all__ = ["crc32c", "masked_crc32c", "read_records"]


def _make_table() -> List[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _make_table()


def crc32c(data: bytes) -> int:
    """The CRC-32C of `data` (crc32c(b"123456789") == 0xE3069283)."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TensorFlow's masked CRC: storing a CRC of data that itself holds CRCs stays robust."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(f: BinaryIO, path: str = "<stream>") -> Iterator[bytes]:
    """The data of each record in `f`, checking both CRCs; a truncated last record ends the
    iteration (a writer may still be appending), a wrong CRC is an error naming the offset."""
    offset = 0
    while True:
        header = f.read(12)
        if len(header) < 12:
            return
        (length,), (hcrc,) = struct.unpack("<Q", header[:8]), struct.unpack("<I", header[8:])
        if hcrc != masked_crc32c(header[:8]):
            raise InvalidArgumentError(f"{path}: corrupt record header at byte {offset} (length CRC mismatch)")
        body = f.read(length + 4)
        if len(body) < length + 4:
            return
        data, (dcrc,) = body[:length], struct.unpack("<I", body[length:])
        if dcrc != masked_crc32c(data):
            raise InvalidArgumentError(f"{path}: corrupt record at byte {offset} (data CRC mismatch)")
        offset += 12 + length + 4
        yield data
