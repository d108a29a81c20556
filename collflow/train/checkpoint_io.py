"""Checkpoint files on disk: the HDF5 layout, atomic and durable writes, verified reads, the index.

One checkpoint is one HDF5 file (h5py; no pickle anywhere):

    /                      attrs: format="collflow.checkpoint", format_version, collflow_version,
                                  graph_fingerprint, world_size, global_step (absent: none),
                                  timestamp (Unix seconds), num_variables, total_bytes
    /variables/<escaped>   one dataset per variable (contiguous, native dtype and shape);
                           attrs: name (the variable's name), crc_index
    /checksums/block_crc32 uint32 [num_variables]: each variable's checksum (see `checksum`)
    /rng/<escaped>         one group per random op: its NumPy bit-generator state (numeric
                           attrs; integers wider than 64 bits as little-endian uint64 words)
    /pipeline              attrs: the input pipeline's position (ints: epoch, offset, seed, ...)

Names are escaped ('%' -> '%25', '/' -> '%2F') because a variable "w" and its slot "w/Adam"
cannot both be HDF5 paths; the real name is kept in the `name` attribute.

Writing goes to `<path>.tmp` in the target directory: h5py lays out the file (datasets
allocated contiguously up front, never filled), then the bulk bytes go straight to their file
offsets with os.pwrite (which releases the GIL, so a background save does not stall the
training thread; h5py holds it, but only for the ~10 ms of the layout), each piece's checksum
computed on a helper thread while the next is written; then fsync, close, os.replace onto
the final name and fsync of the directory.  A reader never sees a partial file under the
final name, and a file whose bytes were damaged later fails its checksums.  The index (a
small JSON file listing the checkpoints of a directory, newest last) is replaced the same way.

Reading trusts nothing in the file: before any value is read, checkpoint_policy.check_file
refuses links, storage outside the file, filters, non-numeric types and sizes the file
cannot hold; every variable must have its checksum (allow_unverified=True accepts a file
without, with a warning); index entries must be plain file names inside the directory.

A variable may also be given as a row source (a zero-copy snapshot of a live variable,
collflow.kernels.resources.LiveSnapshot, what asynchronous saves write): its snapshot-time
rows are read piece by piece into one of two aligned scratch buffers, checksummed, and
written by a helper thread while the next piece is read; whole 4 KiB blocks go through an
O_DIRECT descriptor where the file system has one (the device reads the buffer: no copy into
the page cache, a tenth of the CPU time of a buffered write, and nothing for the kernel to
flush or evict later), the rest through the page cache.  The source is released as soon as
it is written.
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from .. import __version__ as _collflow_version
from ..errors import CollflowError, InvalidArgumentError, NotFoundError
from . import checkpoint_policy as _policy

__all__ = ["DataLossError", "UnsafeCheckpointError", "CheckpointData", "CheckpointReader", "write_checkpoint",
           "read_checkpoint", "read_index", "write_index", "IndexEntry", "atomic_write_bytes", "fsync_directory",
           "FORMAT", "FORMAT_VERSION", "INDEX_FILENAME", "TMP_SUFFIX", "scan_directory", "retention_plan",
           "process_rank_and_size"]

FORMAT = "collflow.checkpoint"
FORMAT_VERSION = 1
INDEX_FORMAT = "collflow.checkpoint_index"
INDEX_FILENAME = "checkpoint.json"
TMP_SUFFIX = ".tmp"

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
_CHECKSUMS = "checksums/block_crc32"


log = logging.getLogger("collflow.checkpoint")


class DataLossError(CollflowError):
    """A checkpoint file is truncated, corrupt or not a collflow checkpoint (TensorFlow's name)."""


class UnsafeCheckpointError(DataLossError):
    """A checkpoint file or index entry breaks what collflow reads (checkpoint_policy): links,
    storage outside the file, non-numeric types, sizes the file cannot hold, no checksums, a
    name outside the directory.  A DataLossError, so restores fall back past it."""


@dataclass
class CheckpointData:
    """Everything one checkpoint holds, as host (NumPy) values.

    variables: variable name -> array, or a row source: an object with `shape`, `dtype`,
    `nbytes`, `read_rows(r0, r1, out)` (rows [r0, r1) into `out`, consecutive ranges from
    row 0) and `release()` (a LiveSnapshot).  rng: random op name -> NumPy bit-generator
    state (the dict of `Generator.bit_generator.state`).  pipeline: the input position (ints).
    """

    variables: Dict[str, np.ndarray]
    rng: Dict[str, dict] = field(default_factory=dict)
    pipeline: Dict[str, int] = field(default_factory=dict)
    global_step: Optional[int] = None
    world_size: int = 1
    graph_fingerprint: str = ""
    collflow_version: str = _collflow_version
    timestamp: float = 0.0

    def release(self) -> None:
        """Releases the row sources among the variables (a save that failed or was abandoned)."""
        for v in self.variables.values():
            if _is_source(v):
                v.release()


def _is_source(v: Any) -> bool:
    return not isinstance(v, np.ndarray) and hasattr(v, "read_rows")


# -- names -------------------------------------------------------------------------------------


def _escape(name: str) -> str:
    if not name:
        raise InvalidArgumentError("a checkpoint entry needs a non-empty name")
    s = name.replace("%", "%25").replace("/", "%2F")
    # HDF5 reserves "." as a link name
    return "%2E" if s == "." else s


# -- the process's place in the job --------------------------------------------------------------


def process_rank_and_size() -> Tuple[int, int]:
    """(rank, world size) of this process: from collflow.comm when it is initialized, else from
    the launcher's environment (Open MPI, MPICH/PMI, Slurm), else (0, 1).

    Never initializes collflow.comm itself (creating an MPI communicator is collective).
    """
    try:
        from .. import comm as _comm
        if _comm.is_initialized():
            return int(_comm.rank()), int(_comm.size())
    except Exception:
        pass
    for r, s in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"),
                 ("PMIX_RANK", "PMIX_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS")):
        if os.environ.get(r, "").isdigit() and os.environ.get(s, "").isdigit():
            return int(os.environ[r]), int(os.environ[s])
    return 0, 1


# -- durable file primitives ---------------------------------------------------------------------


def fsync_directory(directory: str) -> None:
    """Makes a rename or unlink in `directory` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str, data: bytes, durable: bool = True) -> None:
    """Replaces `path` by `data` atomically: write path.tmp, fsync, rename, fsync the directory."""
    tmp = path + TMP_SUFFIX
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _remove_quietly(tmp)
        raise
    if durable:
        fsync_directory(os.path.dirname(os.path.abspath(path)))


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


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


# -- RNG state encoding (nested dicts of ints / strings / arrays as HDF5 attrs) --------------------

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def _int_to_words(v: int) -> np.ndarray:
    if v < 0:
        raise InvalidArgumentError(f"cannot store the negative {v.bit_length()}-bit integer {v} of an RNG state")
    words = []
    while True:
        words.append(v & 0xFFFFFFFFFFFFFFFF)
        v >>= 64
        if not v:
            break
    return np.array(words, dtype=np.uint64)


def _words_to_int(a: np.ndarray) -> int:
    v = 0
    for i, w in enumerate(np.asarray(a, dtype=np.uint64).reshape(-1).tolist()):
        v |= int(w) << (64 * i)
    return v


def _encode_state(group: Any, state: dict) -> None:
    """Writes a bit-generator state dict into `group` (sub-dicts become subgroups)."""
    big = []
    for k, v in state.items():
        key = _escape(str(k))
        if isinstance(v, dict):
            _encode_state(group.create_group(key), v)
        elif isinstance(v, (bool, np.bool_)):
            group.attrs[key] = np.bool_(v)
        elif isinstance(v, (int, np.integer)):
            v = int(v)
            if _I64_MIN <= v <= _I64_MAX:
                group.attrs[key] = np.int64(v)
            else:
                group.attrs[key] = _int_to_words(v)
                big.append(key)
        elif isinstance(v, (float, np.floating)):
            group.attrs[key] = np.float64(v)
        elif isinstance(v, str):
            group.attrs[key] = v
        elif isinstance(v, np.ndarray) and v.dtype.kind in "biuf":
            group.create_dataset(key, data=v)
        else:
            raise InvalidArgumentError(f"cannot store RNG state entry {k!r} of type {type(v).__name__}")
    if big:
        group.attrs["__bigint__"] = ",".join(big)


def _unescape(s: str) -> str:
    return s.replace("%2E", ".").replace("%2F", "/").replace("%25", "%")


def _decode_state(group: Any) -> dict:
    import h5py
    big = set(filter(None, str(group.attrs.get("__bigint__", "")).split(",")))
    out: Dict[str, Any] = {}
    for k, v in group.attrs.items():
        if k == "__bigint__":
            continue
        if k in big:
            out[_unescape(k)] = _words_to_int(v)
        elif isinstance(v, (bytes, str)):
            out[_unescape(k)] = v.decode() if isinstance(v, bytes) else v
        elif isinstance(v, np.bool_):
            out[_unescape(k)] = bool(v)
        elif isinstance(v, np.integer):
            out[_unescape(k)] = int(v)
        elif isinstance(v, np.floating):
            out[_unescape(k)] = float(v)
        else:
            out[_unescape(k)] = np.asarray(v)
    for k, item in group.items():
        if isinstance(item, h5py.Group):
            out[_unescape(k)] = _decode_state(item)
        else:
            out[_unescape(k)] = item[()]
    return out


# -- writing --------------------------------------------------------------------------------------


def _contiguous_dcpl() -> Any:
    import h5py
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.CONTIGUOUS)
    # allocate now (so the offset is known) and never write a fill value we overwrite anyway
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
    return dcpl


def _host_array(name: str, value: Any) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        get = getattr(value, "get", None)
        value = get() if get is not None and type(value).__module__.startswith("cupy") else np.asarray(value)
    if value.dtype.kind not in "biuf":
        raise InvalidArgumentError(
            f"cannot checkpoint variable {name!r} of dtype {value.dtype}: only bool, integer and "
            "floating-point variables are supported")
    return value


def _c_contiguous(a: np.ndarray) -> np.ndarray:
    # not np.ascontiguousarray: it turns a 0-d array into shape (1,)
    return a if a.flags.c_contiguous else a.copy(order="C")


def write_checkpoint(path: str, data: CheckpointData, durable: bool = True, parallel: bool = True) -> int:
    """Writes `data` to the HDF5 file `path` atomically; returns the bytes of variable data.

    The file appears under `path` only complete, flushed and (durable=True) fsynced, with its
    directory entry fsynced too.  An existing file at `path` is replaced atomically.
    parallel=False keeps the work on the calling thread (background saves).
    """
    import h5py
    path = os.path.abspath(path)
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        raise NotFoundError(f"cannot write checkpoint {path}: directory {directory} does not exist")
    tmp = path + TMP_SUFFIX
    names = sorted(data.variables)
    arrays = [data.variables[n] if _is_source(data.variables[n]) else _c_contiguous(_host_array(n, data.variables[n]))
              for n in names]
    for n, a in zip(names, arrays):
        if _is_source(a) and np.dtype(a.dtype).kind not in "biuf":
            _host_array(n, np.empty(0, a.dtype))  # the same error as for an array
    total = int(sum(a.nbytes for a in arrays))
    try:
        layout: List[Tuple[Optional[int], Any]] = []
        # page-align the bulk data: aligned writes and reads run at disk speed
        with h5py.File(tmp, "w", alignment_threshold=1 << 16, alignment_interval=4096) as f:
            a = f.attrs
            a["format"] = FORMAT
            a["format_version"] = np.int64(FORMAT_VERSION)
            a["collflow_version"] = str(data.collflow_version)
            a["graph_fingerprint"] = str(data.graph_fingerprint or "")
            a["world_size"] = np.int64(data.world_size)
            if data.global_step is not None:
                a["global_step"] = np.int64(data.global_step)
            a["timestamp"] = np.float64(data.timestamp or time.time())
            a["num_variables"] = np.int64(len(names))
            a["total_bytes"] = np.int64(total)
            vg = f.create_group("variables")
            for i, (name, arr) in enumerate(zip(names, arrays)):
                ds = vg.create_dataset(_escape(name), shape=arr.shape, dtype=arr.dtype, dcpl=_contiguous_dcpl())
                ds.attrs["name"] = name
                ds.attrs["crc_index"] = np.int64(i)
                off = ds.id.get_offset()
                if off is None and arr.nbytes:
                    # HDF5 stores some tiny datasets (scalars) without a fixed offset: write those through it
                    if _is_source(arr):
                        arr = _materialize(arr)
                    ds[...] = arr
                layout.append((off, arr))
            crc_ds = f.create_dataset(_CHECKSUMS, shape=(len(names),), dtype=np.uint32, dcpl=_contiguous_dcpl())
            crc_off = crc_ds.id.get_offset()
            rg = f.create_group("rng")
            for op_name in sorted(data.rng):
                sg = rg.create_group(_escape(op_name))
                sg.attrs["__name__"] = op_name
                _encode_state(sg, data.rng[op_name])
            pg = f.create_group("pipeline")
            for k, v in (data.pipeline or {}).items():
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                    raise InvalidArgumentError(
                        f"the input pipeline position must map names to ints, got {k!r}: {v!r}")
                pg.attrs[str(k)] = np.int64(v)
        fd = os.open(tmp, os.O_WRONLY)
        dfd = open_direct(tmp) if any(_is_source(arr) for _, arr in layout) else None
        try:
            chains = _CrcChains(parallel)
            source_crcs: Dict[int, int] = {}
            pieces = _PieceWriter(fd, dfd)
            for i, (off, arr) in enumerate(layout):
                if off is None:  # empty, or already written through HDF5
                    if _is_source(arr):
                        arr = _materialize(arr)
                    chains.add(i, _byte_view(arr))
                elif _is_source(arr):
                    source_crcs[i] = _write_source(pieces, arr, off)
                else:
                    _write_pieces(fd, _byte_view(arr), off, chains, i)
            done = chains.result()
            done.update(source_crcs)
            crcs = np.array([done.get(i, 0) for i in range(len(names))], dtype="<u4")
            if len(names):
                _pwrite_all(fd, memoryview(crcs.view(np.uint8)), crc_off)
            if durable:
                os.fsync(fd)  # the O_DIRECT writes too: it flushes the device's cache
        finally:
            os.close(fd)
            if dfd is not None:
                os.close(dfd)
        os.replace(tmp, path)
    except BaseException:
        _remove_quietly(tmp)
        raise
    if durable:
        fsync_directory(directory)
    return total


# -- reading --------------------------------------------------------------------------------------


@dataclass
class VariableEntry:
    """Where and what one variable is in a checkpoint file."""

    name: str
    dtype: np.dtype
    shape: Tuple[int, ...]
    offset: Optional[int]
    crc_index: Optional[int]
    dataset: str

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


class CheckpointReader:
    """Opens a checkpoint, checks its header and layout; reads variables on request.

    Raises NotFoundError when the file does not exist and DataLossError when it is not a
    readable collflow checkpoint (not HDF5, truncated, unknown format version);
    UnsafeCheckpointError (a DataLossError) when it holds what collflow does not read
    (checkpoint_policy) or has no checksums.  allow_unverified: accept a file without
    checksums (logged as a warning); its values are then read unchecked.
    """

    def __init__(self, path: str, allow_unverified: bool = False):
        import h5py
        self.path = os.path.abspath(path)
        self.allow_unverified = bool(allow_unverified)
        if not os.path.exists(self.path):
            raise NotFoundError(f"checkpoint {self.path} does not exist")
        try:
            self._file = h5py.File(self.path, "r")
        except OSError as e:
            raise DataLossError(f"checkpoint {self.path} is not a readable HDF5 file ({_short(e)})") from None
        try:
            # the whole file is checked before any value is read: nothing is allocated or
            # fetched on the word of a file that points elsewhere or declares more than it holds
            _policy.check_file(self._file, self.path)
            self._read_header()
        except DataLossError:
            self.close()
            raise
        except Exception as e:  # h5py raises KeyError/OSError/ValueError on damaged metadata
            self.close()
            raise DataLossError(f"checkpoint {self.path} is damaged: {_short(e)}") from None

    def _read_header(self) -> None:
        import h5py
        f = self._file
        a = f.attrs
        fmt = a.get("format")
        fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
        if fmt is not None and fmt != FORMAT:
            raise DataLossError(f"{self.path} is not a collflow checkpoint (format {fmt!r})")
        self.format_version = int(a.get("format_version", FORMAT_VERSION))
        if self.format_version > FORMAT_VERSION:
            raise DataLossError(f"checkpoint {self.path} has format version {self.format_version}; this "
                                f"collflow reads up to {FORMAT_VERSION} (upgrade collflow)")
        self.collflow_version = str(a.get("collflow_version", ""))
        self.graph_fingerprint = str(a.get("graph_fingerprint", ""))
        self.world_size = int(a.get("world_size", 1))
        self.global_step = int(a["global_step"]) if "global_step" in a else None
        self.timestamp = float(a.get("timestamp", 0.0))
        self.entries: Dict[str, VariableEntry] = {}
        vg = f.get("variables")
        if vg is not None:
            for key, ds in vg.items():
                if not isinstance(ds, h5py.Dataset):
                    continue
                name = ds.attrs.get("name", _unescape(key))
                name = name.decode() if isinstance(name, bytes) else str(name)
                ci = int(ds.attrs["crc_index"]) if "crc_index" in ds.attrs else None
                self.entries[name] = VariableEntry(name, np.dtype(ds.dtype), tuple(ds.shape),
                                                   ds.id.get_offset(), ci, ds.name)
        expected = int(a.get("num_variables", len(self.entries)))
        if expected != len(self.entries):
            raise DataLossError(f"checkpoint {self.path} lists {expected} variables but holds {len(self.entries)}")
        # every variable's checksum is required (unless allow_unverified): a file without
        # them could hold anything, and the next save would copy it into the job's own
        self._crcs = _policy.checksum_table(f, _CHECKSUMS, self.entries.values(), self.path, self.allow_unverified)
        size = os.path.getsize(self.path)
        for e in self.entries.values():
            if e.offset is not None and e.offset + e.nbytes > size:
                raise DataLossError(f"checkpoint {self.path} is truncated: variable {e.name!r} needs bytes "
                                    f"up to {e.offset + e.nbytes}, the file has {size}")
        self.rng: Dict[str, dict] = {}
        for key, grp in (f.get("rng") or {}).items():
            nm = grp.attrs.get("__name__", _unescape(key))
            nm = nm.decode() if isinstance(nm, bytes) else str(nm)
            st = _decode_state(grp)
            st.pop("__name__", None)
            self.rng[nm] = st
        self.pipeline: Dict[str, int] = {}
        if "pipeline" in f:
            self.pipeline = {str(k): int(v) for k, v in f["pipeline"].attrs.items()}

    def variable_specs(self) -> Dict[str, Tuple[np.dtype, Tuple[int, ...]]]:
        """name -> (NumPy dtype, shape) of every variable in the file."""
        return {n: (e.dtype, e.shape) for n, e in self.entries.items()}

    def read(self, names: Optional[Iterable[str]] = None, verify: bool = True) -> Dict[str, np.ndarray]:
        """Reads variables (all by default) into fresh arrays; verify: check their CRC-32."""
        names = list(self.entries) if names is None else list(names)
        out: Dict[str, np.ndarray] = {}
        missing = [n for n in names if n not in self.entries]
        if missing:
            raise NotFoundError(f"checkpoint {self.path} has no variable(s) {', '.join(missing)}")
        fd = os.open(self.path, os.O_RDONLY)
        chains = _CrcChains() if verify else None
        try:
            for n in names:
                e = self.entries[n]
                arr = np.empty(e.shape, dtype=e.dtype)
                if e.offset is None or arr.nbytes == 0:
                    # scalars, empty arrays, files not written by collflow (chunked, compressed)
                    if arr.nbytes:
                        self._file[e.dataset].read_direct(arr)
                    if chains is not None:
                        chains.add(n, _byte_view(arr))
                elif _read_pieces(fd, _byte_view(arr), e.offset, chains, n) != arr.nbytes:
                    raise DataLossError(f"checkpoint {self.path} is truncated inside variable {n!r}")
                out[n] = arr
        finally:
            os.close(fd)
            got = chains.result() if chains is not None else {}
        for n in out:
            if chains is not None:
                self._check_crc(self.entries[n], got.get(n, 0))
        return out

    def _check_crc(self, e: VariableEntry, crc: Optional[int]) -> None:
        if self._crcs is None or e.crc_index is None:  # unverified, accepted (and logged) by checksum_table
            return
        want = int(self._crcs[e.crc_index])
        if crc is not None and int(crc) != want:
            raise DataLossError(f"checkpoint {self.path} is corrupt: variable {e.name!r} fails its checksum "
                                f"(checksum {int(crc):#010x}, expected {want:#010x})")

    def close(self) -> None:
        f = getattr(self, "_file", None)
        if f is not None:
            try:
                f.close()
            except Exception:
                pass
            self._file = None

    def __enter__(self) -> "CheckpointReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _short(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return s[0] if s else type(e).__name__


def read_checkpoint(path: str, verify: bool = True, allow_unverified: bool = False) -> CheckpointData:
    """Reads a whole checkpoint (every variable, verified) into a CheckpointData.

    allow_unverified: accept a file without checksums (see CheckpointReader)."""
    with CheckpointReader(path, allow_unverified=allow_unverified) as r:
        variables = r.read(verify=verify)
        return CheckpointData(variables=variables, rng=r.rng, pipeline=r.pipeline, global_step=r.global_step,
                              world_size=r.world_size, graph_fingerprint=r.graph_fingerprint,
                              collflow_version=r.collflow_version, timestamp=r.timestamp)


# -- the index of a directory ----------------------------------------------------------------------


@dataclass
class IndexEntry:
    """One checkpoint of a directory: its file name (relative), step, time written, kept forever."""

    path: str
    step: Optional[int]
    time: float
    keep: bool = False

    def to_json(self) -> dict:
        return {"path": self.path, "step": self.step, "time": self.time, "keep": self.keep}


def read_index(directory: str) -> List[IndexEntry]:
    """The checkpoints listed in `directory`'s index, oldest first ([] when there is none).

    An unreadable index is reported as DataLossError (callers fall back to scanning).  An
    entry that is not a plain file name ('/', '..', an absolute path, NUL) is left out with a
    warning naming it: it could make a restore read, or retention delete, outside `directory`.
    """
    p = os.path.join(directory, INDEX_FILENAME)
    try:
        with open(p, "rb") as f:
            doc = json.loads(f.read().decode())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as e:
        raise DataLossError(f"checkpoint index {p} is unreadable: {_short(e)}") from None
    if not isinstance(doc, dict) or doc.get("format") != INDEX_FORMAT:
        raise DataLossError(f"{p} is not a collflow checkpoint index")
    out = []
    for d in doc.get("checkpoints", []):
        try:
            e = IndexEntry(d["path"], None if d.get("step") is None else int(d["step"]),
                           float(d.get("time", 0.0)), bool(d.get("keep", False)))
        except (KeyError, TypeError, ValueError):
            raise DataLossError(f"checkpoint index {p} has a malformed entry {d!r}") from None
        why = _policy.entry_problem(e.path)
        if why is not None:
            log.warning("checkpoint index %s: entry %r refused (%s); ignoring it, nothing outside %s is read or "
                        "deleted", p, e.path, why, directory)
            continue
        out.append(e)
    return out


def write_index(directory: str, entries: Sequence[IndexEntry], durable: bool = True) -> None:
    """Replaces `directory`'s index atomically (entries oldest first; the last is the latest)."""
    doc = {"format": INDEX_FORMAT, "version": 1,
           "latest": entries[-1].path if entries else None,
           "checkpoints": [e.to_json() for e in entries]}
    atomic_write_bytes(os.path.join(directory, INDEX_FILENAME),
                       (json.dumps(doc, indent=1) + "\n").encode(), durable=durable)


def scan_directory(directory: str, prefix: str) -> List[IndexEntry]:
    """Checkpoint files named `<prefix>-<step>.h5` in `directory`, by step (then time written).

    Finds checkpoints the index does not list (a crash between the rename of a checkpoint
    and the update of the index leaves one); `*.tmp` files are never included.
    """
    pat = re.compile(r"^" + re.escape(prefix) + r"-(\d+)\.h5$")
    out = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    for n in names:
        m = pat.match(n)
        if m:
            try:
                mtime = os.path.getmtime(os.path.join(directory, n))
            except OSError:
                continue
            out.append(IndexEntry(n, int(m.group(1)), mtime))
    out.sort(key=lambda e: (e.step, e.time))
    return out


def retention_plan(entries: Sequence[IndexEntry], max_to_keep: Optional[int], keep_every_n_hours: Optional[float],
                   last_preserved: float) -> Tuple[List[IndexEntry], List[IndexEntry], float]:
    """Which checkpoints (oldest first) to keep and which to delete.

    The newest `max_to_keep` are kept (None or 0: all); an older one is kept for good (its
    `keep` flag set) when it was written at least `keep_every_n_hours` after the last one kept
    that way (TensorFlow's keep_checkpoint_every_n_hours).  Returns (kept, to_delete, the new
    time of the last checkpoint kept for good).
    """
    entries = list(entries)
    if not max_to_keep or max_to_keep <= 0:
        return entries, [], last_preserved
    recent = [e for e in entries if not e.keep]
    delete: List[IndexEntry] = []
    for e in recent[:max(0, len(recent) - max_to_keep)]:
        if keep_every_n_hours is not None and keep_every_n_hours > 0 \
                and e.time - last_preserved >= keep_every_n_hours * 3600.0:
            e.keep = True
            last_preserved = e.time
        else:
            delete.append(e)
    gone = {id(e) for e in delete}
    return [e for e in entries if id(e) not in gone], delete, last_preserved
