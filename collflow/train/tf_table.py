"""The sorted string table under TensorFlow's checkpoint index (TF's lib/io/table, LevelDB's
table format), read and written in pure Python.

A table file is data blocks, an index block, an empty meta-index block and a footer:

    block   entries: varint shared-prefix length, varint rest length, varint value length,
            the key's rest, the value (each key shares a prefix with the one before, except
            at a restart point); the restart offsets (uint32 each) and their count (uint32)
    trailer after each block: 1 byte compression (0 none, 1 snappy) and the masked CRC-32C
            of the block's bytes and that byte
    index   one entry per data block: a key >= the block's last key -> the block's handle
            (varint offset, varint size, the size without the trailer)
    footer  the meta-index and index handles, zero padding to 40 bytes, the 8-byte magic
            0xdb4775248b80fb57 (little-endian)

Reading trusts nothing: every length, offset and checksum is checked against the file before
it is used, and a damaged table raises DataLossError naming the file.
"""
from __future__ import annotations

import struct
from typing import Any, Iterator, List, Sequence, Tuple

from ..errors import DataLossError, InvalidArgumentError
from ..platform.crc32c import mask, crc32c
from ..summary.proto import _decode_varint, encode_varint as _varint

__all__ = ["build_table", "read_table", "TABLE_MAGIC"]

TABLE_MAGIC = 0xDB4775248B80FB57
_FOOTER = 48  # two handles padded to 40 bytes + the magic
_RESTART_INTERVAL = 16
_BLOCK_SIZE = 256 << 10  # data block target size (bytes before the trailer)
_NONE, _SNAPPY = 0, 1


def get_varint(buf: bytes, pos: int, end: int, what: str = "varint") -> Tuple[int, int]:
    """(value, next position) of the base-128 varint at buf[pos]; DataLossError past `end`."""
    try:
        return _decode_varint(buf, pos, end)
    except InvalidArgumentError as e:  # a damaged file, not a bad argument
        raise DataLossError(f"{what}: {e.message if hasattr(e, 'message') else e}") from None


# -- writing -----------------------------------------------------------------------------------


def _block(entries: Sequence[Tuple[bytes, bytes]], restart_interval: int) -> bytes:
    out = bytearray()
    restarts: List[int] = []
    prev = b""
    for i, (k, v) in enumerate(entries):
        if i % restart_interval == 0:
            restarts.append(len(out))
            shared = 0
        else:
            shared = 0
            limit = min(len(prev), len(k))
            while shared < limit and prev[shared] == k[shared]:
                shared += 1
        out += _varint(shared) + _varint(len(k) - shared) + _varint(len(v)) + k[shared:] + v
        prev = k
    restarts = restarts or [0]
    out += struct.pack(f"<{len(restarts)}I", *restarts) + struct.pack("<I", len(restarts))
    return bytes(out)


def _with_trailer(block: bytes) -> bytes:
    return block + bytes([_NONE]) + struct.pack("<I", int(mask(crc32c(block + bytes([_NONE])))))


def build_table(entries: Sequence[Tuple[bytes, bytes]]) -> bytes:
    """The table file holding `entries` (key, value), which must be sorted by key (bytewise)
    and unique; uncompressed, as TensorFlow writes checkpoint indexes."""
    for (a, _), (b, _) in zip(entries, entries[1:]):
        if not a < b:
            raise ValueError(f"table keys must be sorted and unique: {a!r} before {b!r}")
    out = bytearray()
    index: List[Tuple[bytes, bytes]] = []
    start, size = 0, 0
    for i, (k, v) in enumerate(entries):
        size += len(k) + len(v) + 8
        if size >= _BLOCK_SIZE or i == len(entries) - 1:
            block = _block(entries[start:i + 1], _RESTART_INTERVAL)
            # the block's last key separates it from the next one (any key >= it and < the
            # next block's first key would do)
            index.append((k, _varint(len(out)) + _varint(len(block))))
            out += _with_trailer(block)
            start, size = i + 1, 0
    meta = _block([], 1)
    meta_handle = _varint(len(out)) + _varint(len(meta))
    out += _with_trailer(meta)
    idx = _block(index, 1)
    idx_handle = _varint(len(out)) + _varint(len(idx))
    out += _with_trailer(idx)
    handles = meta_handle + idx_handle
    out += handles + bytes(40 - len(handles)) + struct.pack("<Q", TABLE_MAGIC)
    return bytes(out)


# -- reading -----------------------------------------------------------------------------------


def _snappy_decompress(data: bytes) -> bytes:
    """Snappy's raw format (a varint length, then literals and back-references)."""
    n, pos = get_varint(data, 0, len(data), "snappy length")
    out = bytearray()
    end = len(data)
    while pos < end:
        tag = data[pos]
        pos += 1
        kind = tag & 3
        if kind == 0:  # literal
            ln = tag >> 2
            if ln >= 60:
                extra = ln - 59
                if pos + extra > end:
                    raise DataLossError("truncated snappy literal")
                ln = int.from_bytes(data[pos:pos + extra], "little")
                pos += extra
            ln += 1
            if pos + ln > end:
                raise DataLossError("truncated snappy literal")
            out += data[pos:pos + ln]
            pos += ln
            continue
        if kind == 1:
            if pos >= end:
                raise DataLossError("truncated snappy copy")
            ln, off = ((tag >> 2) & 7) + 4, ((tag >> 5) << 8) | data[pos]
            pos += 1
        else:
            width = 2 if kind == 2 else 4
            if pos + width > end:
                raise DataLossError("truncated snappy copy")
            ln, off = (tag >> 2) + 1, int.from_bytes(data[pos:pos + width], "little")
            pos += width
        if off == 0 or off > len(out):
            raise DataLossError("snappy copy reaches before the start of the output")
        for _ in range(ln):  # copies may overlap their own output
            out.append(out[-off])
        if len(out) > n:
            break
    if len(out) != n:
        raise DataLossError(f"snappy block decodes to {len(out)} bytes, its header says {n}")
    return bytes(out)


def _read_block(data: memoryview, handle: Tuple[int, int], what: str) -> Any:
    """A block's contents: a view into `data` (uncompressed), or the decompressed bytes."""
    off, size = handle
    if off + size + 5 > len(data):
        raise DataLossError(f"{what} block at {off} (+{size} bytes) runs past the end of the file ({len(data)} bytes)")
    block = data[off:off + size]
    kind = data[off + size]
    want = struct.unpack_from("<I", data, off + size + 1)[0]
    got = int(mask(crc32c(data[off:off + size + 1])))
    if got != want:
        raise DataLossError(f"{what} block at {off} fails its checksum ({got:#010x}, expected {want:#010x})")
    if kind == _SNAPPY:
        return _snappy_decompress(bytes(block))
    if kind != _NONE:
        raise DataLossError(f"{what} block at {off} has unknown compression {kind}")
    return block


def _entries(block: Any, what: str) -> Iterator[Tuple[bytes, Any]]:
    if len(block) < 4:
        raise DataLossError(f"{what} block is too short ({len(block)} bytes)")
    nres = struct.unpack_from("<I", block, len(block) - 4)[0]
    end = len(block) - 4 - 4 * nres
    if nres == 0 and len(block) > 4 or end < 0:
        raise DataLossError(f"{what} block has a bad restart count ({nres})")
    pos, key = 0, b""
    while pos < end:
        shared, pos = get_varint(block, pos, end, f"{what} entry")
        rest, pos = get_varint(block, pos, end, f"{what} entry")
        vlen, pos = get_varint(block, pos, end, f"{what} entry")
        if shared > len(key) or pos + rest + vlen > end:
            raise DataLossError(f"{what} block has an entry running past its end")
        key = key[:shared] + bytes(block[pos:pos + rest])
        pos += rest
        yield key, block[pos:pos + vlen]
        pos += vlen


def _handle(buf: bytes, pos: int, end: int) -> Tuple[Tuple[int, int], int]:
    off, pos = get_varint(buf, pos, end, "block handle")
    size, pos = get_varint(buf, pos, end, "block handle")
    return (off, size), pos


def read_table(data: bytes) -> List[Tuple[bytes, Any]]:
    """Every (key, value) of a table file's bytes, in order; DataLossError when damaged.

    Keys are bytes; values of uncompressed blocks are memoryviews into `data` (a V1
    checkpoint's table holds every tensor's values: copying each block and then each value
    would hold the file three times over)."""
    data = memoryview(data).cast("B")
    if len(data) < _FOOTER:
        raise DataLossError(f"file too short for a table ({len(data)} bytes)")
    foot = len(data) - _FOOTER
    if struct.unpack_from("<Q", data, len(data) - 8)[0] != TABLE_MAGIC:
        raise DataLossError("not a table file (bad magic number)")
    _, pos = _handle(data, foot, foot + 40)
    index_handle, _ = _handle(data, pos, foot + 40)
    out: List[Tuple[bytes, Any]] = []
    for _, value in _entries(_read_block(data, index_handle, "index"), "index"):
        handle, _ = _handle(value, 0, len(value))
        for k, v in _entries(_read_block(data, handle, "data"), "data"):
            if out and not out[-1][0] < k:
                raise DataLossError(f"table keys out of order ({out[-1][0]!r} before {k!r})")
            out.append((k, v))
    return out
