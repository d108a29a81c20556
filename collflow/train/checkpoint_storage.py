"""Checkpoint storage: durable, atomic writes and checksummed piece-wise reads and writes.

The file primitives every checkpoint write goes through (train/checkpoint_io.py lays out the
HDF5 file, then these move its bytes):

* `atomic_write_bytes` / `fsync_directory` (platform/atomic_files.py, re-exported here): write
  `<path>.<pid>-<thread>.tmp`, fsync, rename, fsync the directory, so a reader never sees a
  partial file under the final name.
* `checksum`: CRC-32 per 4 KiB block, combined, computed on helper threads
  (`_CrcChains`) while the next piece is written or read.
* `_PieceWriter` / `_write_source`: bulk bytes to their file offsets with os.pwrite (which
  releases the GIL); row sources (LiveSnapshot) read into two aligned scratch buffers in
  turn, whole blocks written through O_DIRECT where the file system has it.
* `_read_pieces`: preadv into the destination, checksummed as it arrives.
"""
from __future__ import annotations

import math
import os
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Optional

import numpy as np

from ..platform.atomic_files import (TMP_SUFFIX, _remove_quietly, atomic_write_bytes,  # noqa: F401 (re-exported)
                                     fsync_directory, temporary_name)

__all__ = ["atomic_write_bytes", "fsync_directory", "checksum", "open_direct", "TMP_SUFFIX", "temporary_name"]

# bytes per os.pwrite / preadv call and per CRC piece: large enough to run at disk speed,
# small enough that the CRC of one piece overlaps the write of the next
_PIECE = 16 << 20
# pieces larger than this are checksummed on the helper thread, smaller ones inline
_INLINE_CRC = 1 << 20
# the checksum's block (see checksum()); _PIECE is a multiple of it
_BLOCK = 4096
# bytes per piece read from a row source (LiveSnapshot), two of them in memory at a time (one
# read while the other is written).  Large pieces mean few rounds of Python per gigabyte, each
# of which takes the GIL from the training thread (measured: a 1 GB async save stalled
# training ~145 ms with 8 MB pieces, ~80 ms with 32 MB, median of 12, noise +-100 ms)
_SOURCE_PIECE = 32 << 20


def _pwrite_all(fd: int, buf: memoryview, offset: int) -> None:
    """Writes all of `buf` at `offset` (os.pwrite may write less than asked)."""
    done, n = 0, len(buf)
    while done < n:
        k = os.pwrite(fd, buf[done:], offset + done)
        if k <= 0:
            raise OSError(f"pwrite wrote {k} bytes")
        done += k


def _pread_all(fd: int, buf: memoryview, offset: int) -> int:
    """Fills `buf` from `offset`; returns the bytes read (less only at the end of the file)."""
    done, n = 0, len(buf)
    while done < n:
        k = os.preadv(fd, [buf[done:]], offset + done)
        if k <= 0:
            break
        done += k
    return done


def checksum(buf: memoryview, value: int = 0) -> int:
    """The checkpoint checksum of `buf`, continuing `value` (feed pieces of 4 KiB multiples).

    CRC-32 of the sequence of little-endian uint64 sums (mod 2**64) of each 4096-byte block,
    then of the trailing bytes: position-sensitive like a CRC (blocks swapped, truncated or
    zeroed change it; so does any one changed word), at about 3x the speed of zlib.crc32 over
    the data itself, since NumPy sums at memory bandwidth and the CRC sees 1/512 of the bytes.
    """
    nb = len(buf) // _BLOCK
    if nb:
        words = np.frombuffer(buf, dtype="<u8", count=nb * (_BLOCK // 8)).reshape(nb, _BLOCK // 8)
        value = zlib.crc32(memoryview(words.sum(axis=1, dtype=np.uint64).astype("<u8", copy=False)), value)
    if len(buf) > nb * _BLOCK:
        value = zlib.crc32(buf[nb * _BLOCK:], value)
    return value


class _RunningChecksum:
    """checksum() of a byte stream fed in pieces of any length (carries a partial block over)."""

    def __init__(self) -> None:
        self.value = 0
        self._tail = bytearray()

    def update(self, buf: memoryview) -> None:
        if self._tail:
            need = _BLOCK - len(self._tail)
            self._tail += buf[:need]
            buf = buf[need:]
            if len(self._tail) < _BLOCK:
                return
            self.value = checksum(memoryview(self._tail), self.value)
            self._tail = bytearray()
        whole = len(buf) - len(buf) % _BLOCK
        if whole:
            self.value = checksum(buf[:whole], self.value)
        if whole < len(buf):
            self._tail = bytearray(buf[whole:])

    def digest(self) -> int:
        if self._tail:
            self.value = checksum(memoryview(self._tail), self.value)
            self._tail = bytearray()
        return self.value


class _CrcChains:
    """Checksums computed on one helper thread, in submission order, beside this thread's I/O.

    `add(key, buf)` queues checksum(buf) continuing key's running value; `result()` waits for
    all and returns {key: crc}.  One worker keeps each key's pieces in order; zlib releases
    the GIL, so the checksums overlap the reads or writes of the next pieces.
    """

    def __init__(self, parallel: bool = True):
        self.parallel = parallel
        self.crcs: Dict[Any, int] = {}
        self._futs: list = []

    def _step(self, key: Any, buf: memoryview) -> None:
        self.crcs[key] = checksum(buf, self.crcs.get(key, 0))

    def add(self, key: Any, buf: memoryview) -> None:
        if self.parallel and len(buf) > _INLINE_CRC:
            self._futs.append(_crc_pool().submit(self._step, key, buf))
        else:
            if self._futs:  # keep the order of key's pieces
                self.wait()
            self._step(key, buf)

    def wait(self) -> None:
        futs, self._futs = self._futs, []
        for f in futs:
            f.result()

    def result(self) -> Dict[Any, int]:
        self.wait()
        return self.crcs


_CRC_POOL: Optional[ThreadPoolExecutor] = None
_CRC_POOL_LOCK = threading.Lock()


def _crc_pool() -> ThreadPoolExecutor:
    global _CRC_POOL
    with _CRC_POOL_LOCK:
        if _CRC_POOL is None:
            # one worker: the pieces of one array are checksummed in order
            _CRC_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="collflow-crc")
        return _CRC_POOL


def _byte_view(arr: np.ndarray) -> memoryview:
    """The raw bytes of a C-contiguous array, without a copy."""
    return memoryview(arr.reshape(-1).view(np.uint8))


def _write_pieces(fd: int, mv: memoryview, offset: int, crcs: _CrcChains, key: Any) -> None:
    """Writes `mv` at `offset` piece by piece, queueing each piece's checksum."""
    for start in range(0, len(mv), _PIECE):
        piece = mv[start:start + _PIECE]
        crcs.add(key, piece)
        _pwrite_all(fd, piece, offset + start)


def _materialize(src: Any) -> np.ndarray:
    """A row source's snapshot-time value as one array (for the tiny ones HDF5 stores inline)."""
    try:
        full = np.empty(tuple(src.shape), dtype=src.dtype)
        if full.size:
            src.read_rows(0, full.shape[0], full)
        return full
    finally:
        src.release()


_IO_POOL: Optional[ThreadPoolExecutor] = None


def _io_pool() -> ThreadPoolExecutor:
    global _IO_POOL
    with _CRC_POOL_LOCK:
        if _IO_POOL is None:
            # one worker: the pieces of a row source are written in order, one at a time
            _IO_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="collflow-ckpt-io")
        return _IO_POOL


def _aligned_empty(nbytes: int) -> np.ndarray:
    """Uninitialized bytes starting at a multiple of _BLOCK (what O_DIRECT needs)."""
    raw = np.empty(nbytes + _BLOCK, dtype=np.uint8)
    start = -raw.ctypes.data % _BLOCK
    return raw[start:start + nbytes]


def open_direct(path: str) -> Optional[int]:
    """A write descriptor of `path` bypassing the page cache (O_DIRECT), or None where the
    platform or file system has none."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return None
    try:
        return os.open(path, os.O_WRONLY | flag)
    except OSError:
        return None


class _PieceWriter:
    """Writes pieces at file offsets on a helper thread, one in flight, while the caller
    prepares the next.  Whole 4 KiB blocks of aligned pieces go through the O_DIRECT
    descriptor when there is one (no page-cache copy, and almost no CPU: the device reads the
    buffer), the rest through the ordinary one."""

    def __init__(self, fd: int, dfd: Optional[int]):
        self.fd, self.dfd = fd, dfd
        self._fut: Any = None

    def _write(self, mv: memoryview, off: int, direct: bool) -> None:
        whole = len(mv) - len(mv) % _BLOCK if direct and self.dfd is not None else 0
        if whole:
            try:
                _pwrite_all(self.dfd, mv[:whole], off)  # type: ignore[arg-type]
            except OSError as e:
                import errno
                if e.errno != errno.EINVAL:
                    raise
                self.dfd = None  # the file system refused this alignment: the page cache from now on
                whole = 0
        if whole < len(mv):
            _pwrite_all(self.fd, mv[whole:], off + whole)

    def submit(self, mv: memoryview, off: int, direct: bool) -> None:
        self.wait()
        self._fut = _io_pool().submit(self._write, mv, off, direct)

    def wait(self) -> None:
        fut, self._fut = self._fut, None
        if fut is not None:
            fut.result()


def _write_source(writer: _PieceWriter, src: Any, offset: int) -> int:
    """Writes a row source's snapshot-time rows at `offset`; returns their checksum.

    Rows are read piece by piece into two alternating scratch buffers: while one is written
    (on the helper thread), the next is read and checksummed.  Pieces are whole 4 KiB blocks
    where the row size allows, so they can bypass the page cache.  Releases the source once
    written (or on failure).
    """
    try:
        shape, dt = tuple(src.shape), np.dtype(src.dtype)
        n = shape[0]
        row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * dt.itemsize
        crc = _RunningChecksum()
        if n and row_bytes:
            unit = _BLOCK // math.gcd(row_bytes, _BLOCK)  # rows filling whole blocks
            direct = writer.dfd is not None and offset % _BLOCK == 0 and unit * row_bytes <= _SOURCE_PIECE
            step = max(1, _SOURCE_PIECE // row_bytes)
            if direct:
                step = step // unit * unit
            step = min(step, n)
            bufs = [_aligned_empty(step * row_bytes).view(dt).reshape((step,) + shape[1:]) for _ in range(2)]
            try:
                for i, r0 in enumerate(range(0, n, step)):
                    r1 = min(n, r0 + step)
                    buf = bufs[i % 2][:r1 - r0]  # its last write was waited for before the previous submit
                    src.read_rows(r0, r1, buf)
                    mv = _byte_view(buf)
                    crc.update(mv)
                    writer.submit(mv, offset + r0 * row_bytes, direct)
            finally:
                writer.wait()
        return crc.digest()
    finally:
        src.release()


def _read_pieces(fd: int, mv: memoryview, offset: int, crcs: Optional[_CrcChains], key: Any) -> int:
    """Fills `mv` from `offset` piece by piece (queueing checksums); returns the bytes read."""
    got = 0
    for start in range(0, len(mv), _PIECE):
        piece = mv[start:start + _PIECE]
        k = _pread_all(fd, piece, offset + start)
        got += k
        if crcs is not None:
            crcs.add(key, piece[:k])
        if k < len(piece):
            break
    return got
