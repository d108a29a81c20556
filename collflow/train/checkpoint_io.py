"""Checkpoint files on disk: the HDF5 layout, atomic and durable writes, verified reads.

Checkpoint code by idea: this module is the format (layout, writing and reading a file);
checkpoint_storage the file primitives under it (durable writes, checksums, pieces, O_DIRECT);
checkpoint_index a directory's index and retention; checkpoint_policy what a file may hold;
sharded_checkpoint the resharding of sharded variables onto another number of ranks.

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

Writing goes to `<path>.<pid>-<thread>.tmp` in the target directory: h5py lays out the file (datasets
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

import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np

from .. import __version__ as _collflow_version
from ..errors import DataLossError, InvalidArgumentError, NotFoundError, UnsafeCheckpointError
from ..kernels.device import to_host
from . import checkpoint_policy as _policy
# the file primitives and the directory index are modules of their own (the storage module is
# used by name, so a test that replaces one of its functions reaches every caller); the public
# names stay importable from here
from . import checkpoint_storage as _st
from .checkpoint_index import (INDEX_FILENAME, IndexEntry, _short, read_index, retention_plan, scan_directory,
                               write_index)
from .checkpoint_storage import (TMP_SUFFIX, atomic_write_bytes, checksum, fsync_directory, open_direct,
                                 temporary_name)

__all__ = ["DataLossError", "UnsafeCheckpointError", "CheckpointData", "CheckpointReader", "open_checkpoint",
           "write_checkpoint",
           "read_checkpoint", "read_index", "write_index", "IndexEntry", "atomic_write_bytes", "fsync_directory",
           "FORMAT", "FORMAT_VERSION", "INDEX_FILENAME", "TMP_SUFFIX", "scan_directory", "retention_plan",
           "process_rank_and_size", "checksum", "open_direct"]

FORMAT = "collflow.checkpoint"
FORMAT_VERSION = 1

_CHECKSUMS = "checksums/block_crc32"


log = logging.getLogger("collflow.checkpoint")


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


def _storable(dt: Any) -> bool:
    """A variable dtype a checkpoint holds (the policy reads back complex64/128, not complex256)."""
    dt = np.dtype(dt)
    return dt.kind in "biuf" or dt in (np.dtype(np.complex64), np.dtype(np.complex128))


def _host_array(name: str, value: Any) -> np.ndarray:
    value = to_host(value)
    if not _storable(value.dtype):
        raise InvalidArgumentError(
            f"cannot checkpoint variable {name!r} of dtype {value.dtype}: only bool, integer, "
            "floating-point and complex64/128 variables are supported")
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
    tmp = temporary_name(path)
    names = sorted(data.variables)
    arrays = [data.variables[n] if _is_source(data.variables[n]) else _c_contiguous(_host_array(n, data.variables[n]))
              for n in names]
    for n, a in zip(names, arrays):
        if _is_source(a) and not _storable(a.dtype):
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
                        arr = _st._materialize(arr)
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
        dfd = _st.open_direct(tmp) if any(_is_source(arr) for _, arr in layout) else None
        try:
            chains = _st._CrcChains(parallel)
            source_crcs: Dict[int, int] = {}
            pieces = _st._PieceWriter(fd, dfd)
            for i, (off, arr) in enumerate(layout):
                if off is None:  # empty, or already written through HDF5
                    if _is_source(arr):
                        arr = _st._materialize(arr)
                    chains.add(i, _st._byte_view(arr))
                elif _is_source(arr):
                    source_crcs[i] = _st._write_source(pieces, arr, off)
                else:
                    _st._write_pieces(fd, _st._byte_view(arr), off, chains, i)
            done = chains.result()
            done.update(source_crcs)
            crcs = np.array([done.get(i, 0) for i in range(len(names))], dtype="<u4")
            if len(names):
                _st._pwrite_all(fd, memoryview(crcs.view(np.uint8)), crc_off)
            if durable:
                os.fsync(fd)  # the O_DIRECT writes too: it flushes the device's cache
        finally:
            os.close(fd)
            if dfd is not None:
                os.close(dfd)
        os.replace(tmp, path)
    except BaseException:
        _st._remove_quietly(tmp)
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
        chains = _st._CrcChains() if verify else None
        try:
            for n in names:
                e = self.entries[n]
                arr = np.empty(e.shape, dtype=e.dtype)
                if e.offset is None or arr.nbytes == 0:
                    # scalars, empty arrays, files not written by collflow (chunked, compressed)
                    if arr.nbytes:
                        self._file[e.dataset].read_direct(arr)
                    if chains is not None:
                        chains.add(n, _st._byte_view(arr))
                elif _st._read_pieces(fd, _st._byte_view(arr), e.offset, chains, n) != arr.nbytes:
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


def open_checkpoint(path: str, allow_unverified: bool = False) -> Any:
    """A reader of the checkpoint at `path`: a TensorFlow V2 checkpoint (a prefix with a
    `.index` file, or that file: tf_checkpoint.BundleReader), a TensorFlow V1 file
    (tf_checkpoint_v1.V1Reader) or a collflow file (CheckpointReader); all have the same
    interface."""
    from . import tf_checkpoint, tf_checkpoint_v1
    if not os.path.isfile(path) and tf_checkpoint.is_bundle(path) or path.endswith(tf_checkpoint.INDEX_SUFFIX):
        return tf_checkpoint.BundleReader(path, allow_unverified=allow_unverified)
    if tf_checkpoint_v1.is_v1_checkpoint(path):  # TF's single-file format of before 1.0
        return tf_checkpoint_v1.V1Reader(path, allow_unverified=allow_unverified)
    return CheckpointReader(path, allow_unverified=allow_unverified)


def read_checkpoint(path: str, verify: bool = True, allow_unverified: bool = False) -> CheckpointData:
    """Reads a whole checkpoint (every variable, verified) into a CheckpointData.

    allow_unverified: accept a file without checksums (see CheckpointReader)."""
    with open_checkpoint(path, allow_unverified=allow_unverified) as r:
        variables = r.read(verify=verify)
        return CheckpointData(variables=variables, rng=r.rng, pipeline=r.pipeline, global_step=r.global_step,
                              world_size=r.world_size, graph_fingerprint=r.graph_fingerprint,
                              collflow_version=r.collflow_version, timestamp=r.timestamp)
