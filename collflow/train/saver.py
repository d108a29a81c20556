"""cf.train.Saver: a Session's training state to an HDF5 checkpoint and back (TensorFlow 1.x names);
TensorFlow's own checkpoint format too (tf_checkpoint), written on request and read always.

What is saved: every variable of `var_list` (default: the graph's global variables, so the
optimizer's slots, Adam's beta powers and the global step come along) read straight from the
Session's resource container; the state of every random op's stream (so dropout masks
continue exactly); the input pipeline's position the caller passes; the global step, the
world size, the graph's fingerprint and the collflow version.  Variables are identical on
every rank in all-reduce mode, so under N ranks only rank 0 writes, and any number of ranks
can restore the file.

Restoring validates the file against the graph first and reports every missing, unexpected
and mis-shaped or mis-typed entry in one error; `strict=False` restores what matches and
says what it skipped.
"""
from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from ..errors import FailedPreconditionError, InvalidArgumentError, NotFoundError
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.ops import io_ops as _io_ops  # registers Save/Restore
from ..graph.ops.constant_op import group
from ..graph.ops.state_ops import assign
from ..graph.variables import Variable
from . import io_kernels as _io_kernels  # noqa: F401  (and their kernels)
from ..kernels.device import get_device, to_host as _to_host
from . import checkpoint_io as cio
from . import checkpoint_policy as _policy
from . import table_checkpoint as _tables
from . import tf_checkpoint as _tfc
from .global_step import get_global_step

__all__ = ["Saver", "RestoreResult", "latest_checkpoint", "checkpoint_exists", "get_checkpoint_mtimes",
           "remove_checkpoint", "tf_state_files"]

log = logging.getLogger("collflow.checkpoint")

_H5_SUFFIXES = (".h5", ".hdf5")


@dataclass
class RestoreResult:
    """What a restore did.

    restored: variable names set from the file; missing: graph variables the file lacks;
    unexpected: file entries the graph lacks; mismatched: "name: file <dtype>[shape], graph ..."
    lines; rng_restored: random ops whose streams were restored; pipeline: the saved input
    position; world_size: ranks that wrote the file.
    """

    path: str
    global_step: Optional[int]
    pipeline: Dict[str, int]
    world_size: int
    restored: List[str] = field(default_factory=list)
    missing: List[str] = field(default_factory=list)
    unexpected: List[str] = field(default_factory=list)
    mismatched: List[str] = field(default_factory=list)
    rng_restored: List[str] = field(default_factory=list)
    graph_fingerprint: str = ""

    @property
    def skipped(self) -> List[str]:
        """Everything not restored, one line each."""
        return ([f"{n} (missing from the checkpoint)" for n in self.missing]
                + [f"{n} (not in the graph)" for n in self.unexpected] + list(self.mismatched))


# -- helpers ------------------------------------------------------------------------------------


def _state_name(v: Variable) -> str:
    """The key of a variable's storage in the Session's container (its VarHandle's shared_name)."""
    return v.op.attrs.get("shared_name", v.op.name)


def _resolve_var_list(var_list: Any, allow_empty: bool = False) -> Tuple[Dict[str, Variable], Optional[_g.Graph]]:
    if var_list is None:
        g = _g.get_default_graph()
        var_list = g.get_collection(GraphKeys.GLOBAL_VARIABLES)
        if not var_list and not allow_empty:
            raise ValueError("No variables to save: the default graph has no global variables "
                             "(build the model before creating the Saver, or pass var_list)")
    if isinstance(var_list, Mapping):
        items = [(str(k), v) for k, v in var_list.items()]
    else:
        items = [(_state_name(v) if isinstance(v, Variable) else None, v) for v in var_list]
    out: Dict[str, Variable] = {}
    graph = None
    for key, v in items:
        if not isinstance(v, Variable):
            raise TypeError(f"a Saver's var_list holds cf.Variables, got {type(v).__name__} ({v!r})")
        if key in out and out[key] is not v:
            raise ValueError(f"two variables would be saved under the name {key!r}")
        if graph is None:
            graph = v.graph
        elif v.graph is not graph:
            raise ValueError(f"the variables of a Saver must belong to one graph; {v.name} does not")
        out[key] = v  # type: ignore[index]
    if not out and not allow_empty:
        raise ValueError("No variables to save")
    return out, graph


def _spec(dtype: Any, shape: Any) -> str:
    """'float32[3, 4]' ('?' for an unknown dimension, '[...]' for an unknown rank)."""
    dims = getattr(shape, "dims", shape)
    if dims is None:
        return f"{np.dtype(dtype).name}[...]"
    return f"{np.dtype(dtype).name}[{', '.join('?' if d is None else str(d) for d in dims)}]"


# variables at least this large are taken as zero-copy snapshots by asynchronous saves; smaller
# ones are copied (a copy of a few hundred KB costs less than the bookkeeping of a live snapshot)
LIVE_SNAPSHOT_MIN_BYTES = 1 << 20

_COPY_POOL: Optional[ThreadPoolExecutor] = None
_COPY_LOCK = threading.Lock()
# arrays above this are copied by several threads (np.copyto releases the GIL)
_PARALLEL_COPY = 32 << 20


# threads copying a snapshot: one thread nearly saturates the memory bus of a small machine,
# where a second one only competes with training; large machines gain from a few
_COPY_THREADS = min(4, (os.cpu_count() or 1) // 2)


def _copy_pool() -> ThreadPoolExecutor:
    global _COPY_POOL
    with _COPY_LOCK:
        if _COPY_POOL is None:
            _COPY_POOL = ThreadPoolExecutor(max_workers=_COPY_THREADS, thread_name_prefix="collflow-snapshot")
        return _COPY_POOL


def _copy_into(dst: np.ndarray, src: Any) -> None:
    """dst[...] = src (host), split over threads when large and the machine has cores to spare."""
    if not isinstance(src, np.ndarray):  # a CuPy array: one device-to-host copy into dst
        src.get(out=dst)
        return
    if dst.nbytes < _PARALLEL_COPY or dst.ndim == 0 or _COPY_THREADS < 2:
        np.copyto(dst, src)
        return
    d, s = dst.reshape(-1), src.reshape(-1)
    pool = _copy_pool()
    k = pool._max_workers  # type: ignore[attr-defined]
    step = -(-d.size // k)
    futs = [pool.submit(np.copyto, d[i:i + step], s[i:i + step]) for i in range(0, d.size, step)]
    for f in futs:
        f.result()


_FP_CACHE: "weakref.WeakKeyDictionary[_g.Graph, Tuple[int, str]]" = weakref.WeakKeyDictionary()


def _fingerprint(g: _g.Graph) -> str:
    """graph.fingerprint(), cached until the graph changes (it hashes every constant: seconds
    for a graph holding a gigabyte of them)."""
    hit = _FP_CACHE.get(g)
    if hit is not None and hit[0] == g.version:
        return hit[1]
    fp = g.fingerprint()
    _FP_CACHE[g] = (g.version, fp)
    return fp


def _step_suffix(global_step: int, pad: bool) -> str:
    """`-<step>`; pad=True: eight digits at least (TF1's pad_step_number)."""
    return f"-{int(global_step):08d}" if pad else f"-{int(global_step)}"


def _path_with_step(save_path: str, global_step: Optional[int], pad: bool = False) -> str:
    """The HDF5 file a save writes: `<prefix>[-<step>].h5`, or the .h5/.hdf5 name given."""
    base, ext = os.path.splitext(save_path)
    if ext.lower() not in _H5_SUFFIXES:
        base, ext = save_path, ".h5"
    if global_step is not None:
        base += _step_suffix(global_step, pad)
    return os.path.abspath(base + ext)


def _user_path(save_path: str, global_step: Optional[int], pad: bool = False) -> str:
    """What save() returns, as TensorFlow 1.x does: the user's prefix with `-<step>` appended
    (`dir/model.ckpt-100`; the data is in `dir/model.ckpt-100.h5`), or the file path when the
    user named an .h5/.hdf5 file."""
    if os.path.splitext(save_path)[1].lower() in _H5_SUFFIXES:
        return _path_with_step(save_path, global_step, pad)
    return save_path if global_step is None else save_path + _step_suffix(global_step, pad)


def checkpoint_file(path: str) -> str:
    """The file behind a checkpoint path: the path itself, the prefix's '.h5' file, or the
    '.index' file of a checkpoint in TensorFlow's own format."""
    if not os.path.isfile(path):
        if os.path.isfile(path + ".h5"):
            return path + ".h5"
        if os.path.isfile(path + _tfc.INDEX_SUFFIX):
            return path + _tfc.INDEX_SUFFIX
    return path


def _as_prefix(file_path: str) -> str:
    """latest_checkpoint's answer: the prefix of a '<prefix>.h5' or '<prefix>.index' file (TensorFlow's form)."""
    for suffix in (".h5", _tfc.INDEX_SUFFIX):
        if file_path.endswith(suffix):
            return file_path[:-len(suffix)]
    return file_path


def _checkpoint_files(file_path: str) -> List[str]:
    """Every file of one checkpoint: the .h5 file, or a TensorFlow checkpoint's index and data."""
    if file_path.endswith(_tfc.INDEX_SUFFIX):
        return _tfc.bundle_files(file_path)
    return [file_path]


def _meta_path(prefix: str, suffix: str) -> str:
    """Where a checkpoint's meta graph goes: `<prefix>.<suffix>` (an .h5/.hdf5 name loses its suffix first)."""
    base, ext = os.path.splitext(prefix)
    return (base if ext.lower() in _H5_SUFFIXES else prefix) + "." + suffix


def _step_value(sess: Any, global_step: Any) -> Optional[int]:
    if global_step is None:
        return None
    if isinstance(global_step, (int, np.integer)):
        return int(global_step)
    return int(sess.run(global_step))


# -- the Saver ------------------------------------------------------------------------------------


class Saver:
    """Saves and restores variables, random streams and the input position (HDF5, validated).

    var_list: Variables (saved under their names) or a dict {name in the file: Variable};
    default: the default graph's global variables.  max_to_keep: how many of the files this
    Saver wrote to keep (None or 0: all); keep_checkpoint_every_n_hours: also keep one every
    N hours.  rank / world_size: this process's place in the job (default: from collflow.comm
    or the MPI launcher); only rank 0 writes.  save_rng: also save random ops' streams.

    checkpoint_format: "collflow" (default; one HDF5 file per checkpoint holding the variables,
    the random streams and the input position) or "tensorflow": TensorFlow's own V2 format
    (`<prefix>.index` + `<prefix>.data-00000-of-00001`, and TF's `checkpoint` state file), which
    TensorFlow's Saver restores; it holds the variables only.  The environment variable
    COLLFLOW_CHECKPOINT_FORMAT sets the default.  restore() reads either format, whichever
    wrote it.
    """

    def __init__(self, var_list: Any = None, max_to_keep: Optional[int] = 5,
                 keep_checkpoint_every_n_hours: Optional[float] = None, name: Optional[str] = None,
                 save_rng: bool = True, rank: Optional[int] = None, world_size: Optional[int] = None, *,
                 reshape: bool = False, sharded: bool = False, allow_empty: bool = False,
                 pad_step_number: bool = False, defer_build: bool = False, restore_sequentially: bool = False,
                 saver_def: Any = None, builder: Any = None, write_version: Any = None,
                 save_relative_paths: bool = False, filename: Optional[str] = None,
                 checkpoint_format: Optional[str] = None):
        # no variables: TF1's "No variables to save", unless allow_empty (a Saver of nothing);
        # mutable lookup tables (TF's saveable objects) are saved beside the variables
        var_list, self._tables = _tables.split_var_list(var_list)
        self._vars, self._graph = _resolve_var_list(var_list, allow_empty or bool(self._tables))
        self._graph = self._graph or _tables.graph_of(self._tables)
        # TF1's options: reshape restores an entry of another shape with as many elements;
        # pad_step_number writes -00000100; sharded, restore_sequentially, saver_def, builder,
        # write_version, save_relative_paths (the index holds file names already) and filename
        # are accepted and change nothing: one HDF5 file per checkpoint, collflow's format
        self._reshape = bool(reshape)
        self._pad = bool(pad_step_number)
        if checkpoint_format is None:
            checkpoint_format = os.environ.get("COLLFLOW_CHECKPOINT_FORMAT", "collflow") or "collflow"
        if checkpoint_format not in ("collflow", "tensorflow"):
            raise InvalidArgumentError(f"checkpoint_format must be 'collflow' or 'tensorflow', got "
                                       f"{checkpoint_format!r}")
        self._tf_format = checkpoint_format == "tensorflow"
        # a Saver of chosen variables restores those only: the checkpoint's other entries are
        # not its business (TF1's partial restore: fine-tuning, averaged weights)
        self._explicit = var_list is not None
        self._max_to_keep = max_to_keep
        self._keep_hours = keep_checkpoint_every_n_hours
        self._last_preserved = time.time()
        self._name = name or "save"
        self._save_rng = bool(save_rng)
        r, s = cio.process_rank_and_size()
        self.rank = r if rank is None else int(rank)
        self.world_size = s if world_size is None else int(world_size)
        if self.world_size < 1 or not 0 <= self.rank < self.world_size:
            raise InvalidArgumentError(f"need 0 <= rank < world_size, got rank={self.rank}, "
                                       f"world_size={self.world_size}")
        self._last: List[cio.IndexEntry] = []  # files this Saver wrote, oldest first
        self._meta_cache: Optional[Tuple[Any, bytes]] = None  # ((graph, version, n), the file's bytes)
        self._meta_suffix = "meta"

    # -- what is saved --------------------------------------------------------------------------
    @property
    def var_list(self) -> Dict[str, Variable]:
        """{name in the file: Variable}."""
        return dict(self._vars)

    @property
    def is_chief(self) -> bool:
        """Whether this process writes checkpoints (rank 0)."""
        return self.rank == 0

    @property
    def last_checkpoints(self) -> List[str]:
        """The checkpoints this Saver wrote and still keeps, oldest first, as the prefixes
        save() returned (TF1's form; restore() and checkpoint_file() take them)."""
        return [_as_prefix(e.path) for e in self._last]

    def _check_session(self, sess: Any) -> None:
        if self._graph is not None and sess.graph is not self._graph:
            raise InvalidArgumentError("the Session runs another graph than the one this Saver's variables belong to")

    def snapshot(self, sess: Any, global_step: Any = None, pipeline: Optional[Mapping[str, int]] = None,
                 buffers: Optional[Dict[str, np.ndarray]] = None, live: bool = False,
                 undo: Optional[Dict[str, Any]] = None) -> cio.CheckpointData:
        """The state to save, taken now.

        Without `buffers`, NumPy variables are referenced, not copied: an update that runs
        later copies the array first (the container's copy-on-write), so the snapshot stays
        as it was.  With `buffers` (name -> reusable host array, filled in here), every value
        is copied into them: what an asynchronous save writes while training goes on.

        live=True (asynchronous saves): NumPy variables of at least LIVE_SNAPSHOT_MIN_BYTES
        are taken as zero-copy snapshots (collflow.kernels.resources.LiveSnapshot): nothing
        is copied now; until the writer has read a row, a sparse update saves the old values
        of the rows it touches and a dense update copies the variable first.  The writer must
        release them (write_checkpoint does, and CheckpointData.release() after a failure).
        `undo` (name -> UndoBuffer) keeps their undo buffers from save to save.  Smaller and
        GPU variables are copied (into `buffers` when given).
        """
        self._check_session(sess)
        res = sess.resources
        values: Dict[str, Any] = {}
        uninit = []
        try:
            self._take_values(res, values, uninit, buffers, live, undo)
            values.update(_tables.snapshot(sess, self._tables, encode=not self._tf_format))
            if uninit:
                raise FailedPreconditionError(
                    f"cannot save: {len(uninit)} variable(s) are not initialized: {', '.join(uninit)}; "
                    "run their initializers (or restore them) first")
            return self._finish_snapshot(sess, res, values, global_step, pipeline)
        except BaseException:
            cio.CheckpointData(values).release()  # live snapshots taken so far end here
            raise

    def _take_values(self, res: Any, values: Dict[str, Any], uninit: List[str],
                     buffers: Optional[Dict[str, np.ndarray]], live: bool, undo: Optional[Dict[str, Any]]) -> None:
        for key, v in self._vars.items():
            st = res.variables.get(_state_name(v))
            if st is not None:
                st.settle()  # no collective still writing it
            val = None if st is None else st.value
            if val is None:
                uninit.append(v.op.name)
                continue
            if live and isinstance(val, np.ndarray) and val.nbytes >= LIVE_SNAPSHOT_MIN_BYTES:
                del val  # not held here: the snapshot's reference must be the only extra one
                snap = st.live_snapshot(None if undo is None else undo.get(key))
                if snap is not None:
                    if undo is not None:
                        undo[key] = snap.undo
                    values[key] = snap
                    continue
                val = st.value
            if live and buffers is None:
                with st.lock:
                    h = _to_host(st.value)
                    values[key] = h.copy() if h is st.value else h
            elif buffers is not None:
                buf = buffers.get(key)
                if buf is None or buf.shape != tuple(val.shape) or buf.dtype != val.dtype:
                    buf = np.empty(tuple(val.shape), dtype=val.dtype)
                    buffers[key] = buf
                with st.lock:
                    _copy_into(buf, st.value)
                values[key] = buf
            else:
                values[key] = _to_host(val)

    def _finish_snapshot(self, sess: Any, res: Any, values: Dict[str, Any], global_step: Any,
                         pipeline: Optional[Mapping[str, int]]) -> cio.CheckpointData:
        rng: Dict[str, dict] = {}
        if self._save_rng:
            for op_name, stream in list(res.rng.items()):
                get = getattr(stream, "get_state", None)
                rng[op_name] = get() if get is not None else stream.bit_generator.state
        step = _step_value(sess, global_step)
        if step is None:
            gs = get_global_step(sess.graph)
            if gs is not None:
                key = next((k for k, v in self._vars.items() if v is gs), None)
                if key is not None and isinstance(values[key], np.ndarray):
                    step = int(np.asarray(values[key]).reshape(()))
        return cio.CheckpointData(variables=values, rng=rng, pipeline={k: int(v) for k, v in (pipeline or {}).items()},
                                  global_step=step, world_size=self.world_size,
                                  graph_fingerprint=_fingerprint(sess.graph), timestamp=time.time())

    # -- save -----------------------------------------------------------------------------------------
    def save(self, sess: Any, save_path: str, global_step: Any = None, latest_filename: Optional[str] = None,
             meta_graph_suffix: str = "meta", write_meta_graph: bool = True, write_state: bool = True,
             strip_default_attrs: bool = False, save_debug_info: bool = False, *,
             pipeline: Optional[Mapping[str, int]] = None) -> str:
        """Writes a checkpoint; returns its path as TensorFlow 1.x does (TF1's signature).

        save_path: a prefix (`dir/model.ckpt`: the data goes to `dir/model.ckpt[-<step>].h5`
        and the prefix `dir/model.ckpt[-<step>]` is returned, which restore() and
        latest_checkpoint() understand), or an explicit .h5/.hdf5 file name (returned with
        the step inserted before the suffix).  global_step: an int, or the global step
        Variable/Tensor (its value is read).  pipeline: the input position (ints).
        write_state: update the directory's index (checkpoint.json) and prune old files.
        write_meta_graph: also write the graph, its collections and this Saver to
        `<returned path>.<meta_graph_suffix>` (tf.train.import_meta_graph reads it back; written
        once per graph version and reused).  latest_filename, strip_default_attrs and
        save_debug_info are accepted for TF1 programs and change nothing: collflow keeps its
        own index file.
        On ranks other than 0 nothing is written and the path is returned.  Saves of one
        Saver are serialized (a Supervisor's checkpoint thread and the training loop's final
        save may overlap), so the index keeps every checkpoint and the last saved is latest.
        """
        with self.__dict__.setdefault("_save_lock", threading.Lock()):
            return self._save(sess, save_path, global_step, meta_graph_suffix, write_meta_graph, write_state,
                              pipeline)

    def _save(self, sess: Any, save_path: str, global_step: Any, meta_graph_suffix: str, write_meta_graph: bool,
              write_state: bool, pipeline: Optional[Mapping[str, int]]) -> str:
        step = _step_value(sess, global_step)
        path = _path_with_step(save_path, step, self._pad)
        user = _user_path(save_path, step, self._pad)
        if not self.is_chief:
            return user
        data = self.snapshot(sess, step, pipeline)
        if self._tf_format:  # TensorFlow's V2 checkpoint: <user>.index + <user>.data-00000-of-00001
            path = user + _tfc.INDEX_SUFFIX
            values = {k: v if isinstance(v, np.ndarray) else np.asarray(_to_host(v)) for k, v in data.variables.items()}
            _tfc.write_bundle(user, values)
        else:
            cio.write_checkpoint(path, data)
        if write_meta_graph:
            self._meta_suffix = meta_graph_suffix
            self._write_meta(sess.graph, _meta_path(user, meta_graph_suffix))
        if write_state:
            self._record(path, data.global_step, data.timestamp)
            if self._tf_format:  # TensorFlow's own state file, for TF's latest_checkpoint
                _tfc.write_state_file(os.path.dirname(path), [os.path.basename(_as_prefix(e.path))
                                                              for e in self._last])
        return user

    def _saver_def(self) -> Dict[str, Any]:
        """What import_meta_graph needs to rebuild this Saver: its variables and options."""
        return {"variables": {k: v.op.name for k, v in self._vars.items()}, "max_to_keep": self._max_to_keep,
                "keep_checkpoint_every_n_hours": self._keep_hours, "pad_step_number": self._pad,
                "reshape": self._reshape, "save_rng": self._save_rng}

    def _write_meta(self, graph: _g.Graph, filename: str) -> None:
        from .meta_graph import export_meta_graph, write_meta_graph
        key = (id(graph), graph.version, len(self._vars))
        if self._meta_cache is None or self._meta_cache[0] != key:
            # serialized once per graph version: a 15,000-op graph takes ~0.5 s to export
            self._meta_cache = (key, export_meta_graph(graph=graph, saver_def=self._saver_def()).SerializeToString())
        write_meta_graph(self._meta_cache[1], filename)

    def export_meta_graph(self, filename: Optional[str] = None, collection_list: Any = None, as_text: bool = False,
                          export_scope: Optional[str] = None, clear_devices: bool = False,
                          clear_extraneous_attributes: bool = False, strip_default_attrs: bool = False,
                          save_debug_info: bool = False) -> Any:
        """tf.train.export_meta_graph of this Saver's graph, with this Saver (TF1's Saver.export_meta_graph)."""
        from .meta_graph import export_meta_graph
        return export_meta_graph(filename, collection_list=collection_list, graph=self._graph or _g.get_default_graph(),
                                 saver_def=self._saver_def(), export_scope=export_scope, clear_devices=clear_devices)

    def build(self) -> None:
        """TF1's deferred build: nothing to build (a Saver works from its variable list)."""

    def _record(self, path: str, step: Optional[int], when: float) -> None:
        directory = os.path.dirname(path)
        rel = os.path.basename(path)
        self._last = [e for e in self._last if e.path != path] + [cio.IndexEntry(path, step, when)]
        kept, delete, self._last_preserved = cio.retention_plan(self._last, self._max_to_keep, self._keep_hours,
                                                                self._last_preserved)
        self._last = kept
        try:
            entries = cio.read_index(directory)
        except cio.DataLossError as e:
            log.warning("%s; rewriting it", e)
            entries = []
        gone = {os.path.basename(e.path) for e in delete}
        entries = [e for e in entries if e.path != rel and e.path not in gone]
        entries.append(cio.IndexEntry(rel, step, when))
        cio.write_index(directory, entries)
        for e in delete:
            for f in _checkpoint_files(e.path) + [_meta_path(_as_prefix(e.path), self._meta_suffix)]:
                try:
                    os.remove(f)
                except FileNotFoundError:
                    pass

    # -- restore ------------------------------------------------------------------------------------
    def restore(self, sess: Any, save_path: str, strict: bool = True, verify: bool = True,
                allow_unverified: bool = False) -> RestoreResult:
        """Restores the variables (and random streams) of this Saver from `save_path` (a file,
        or a prefix as save() and latest_checkpoint() return).

        Validates first: with strict=True any missing, unexpected or mis-shaped/mis-typed
        entry raises one error listing all of them (a Saver made with an explicit var_list
        restores just those variables, as TF1's does: entries it does not name are not
        unexpected) (InvalidArgumentError when any entry is
        mismatched, else NotFoundError) and nothing is changed; with strict=False what
        matches is restored and the rest reported (a warning, and the result's `skipped`).
        A damaged file raises DataLossError; a missing one NotFoundError; one that breaks
        checkpoint_policy, or has no checksums, cio.UnsafeCheckpointError (a DataLossError).
        allow_unverified: accept a file without checksums (a warning is logged).
        """
        self._check_session(sess)
        with cio.open_checkpoint(checkpoint_file(save_path), allow_unverified=allow_unverified) as r:
            result = RestoreResult(r.path, r.global_step, dict(r.pipeline), r.world_size,
                                   graph_fingerprint=r.graph_fingerprint)
            specs = r.variable_specs()
            todo = []
            for key, v in self._vars.items():
                if key not in specs:
                    result.missing.append(key)
                    continue
                fdt, fshape = specs[key]
                reshaped = (self._reshape and fdt == v.dtype.np and v.shape.is_fully_defined()
                            and int(np.prod(fshape, dtype=np.int64)) == v.shape.num_elements())
                if fdt != v.dtype.np or not (v.shape.matches_value(fshape) or reshaped):
                    result.mismatched.append(f"{key}: checkpoint {_spec(fdt, fshape)}, graph "
                                             f"{_spec(v.dtype.np, v.shape)}")
                    continue
                todo.append(key)
            # entries this Saver does not hold (variables of a bigger training graph, random
            # streams of ops an eval graph lacks) are left alone, as TF1's Saver does: only its
            # own variables must be there and fit
            result.unexpected = [] if self._explicit else sorted(k for k in specs if k not in self._vars)
            table_todo = _tables.plan_restore(self._tables, specs, result)
            rng_todo, rng_unexpected = self._match_rng(sess, r.rng)
            if strict and (result.missing or result.mismatched):
                raise self._mismatch_error(r.path, result, [], len(todo))
            values = r.read(todo + table_todo, verify=verify)
        for key in todo:
            v = self._vars[key]
            val = values.pop(key)
            if self._reshape and not v.shape.matches_value(val.shape):
                val = val.reshape(v.shape.as_list())
            self._assign(sess, v, val)
        result.restored = todo + _tables.restore(sess, self._tables, values)
        result.rng_restored = self._restore_rng(sess, rng_todo)
        if result.missing or result.mismatched:
            log.warning("restored %d of %d variables from %s; skipped %s", len(todo), len(self._vars), r.path,
                        "; ".join(result.skipped))
        if result.unexpected or rng_unexpected:
            log.info("%s holds %d entries this Saver does not restore (%s)", r.path,
                     len(result.unexpected) + len(rng_unexpected),
                     ", ".join((result.unexpected + [f"random state of {n}" for n in rng_unexpected])[:8]))
        if result.world_size != self.world_size:
            log.info("checkpoint %s was written by %d rank(s), restoring on %d", r.path, result.world_size,
                     self.world_size)
        if result.graph_fingerprint and result.graph_fingerprint != _fingerprint(sess.graph):
            log.info("checkpoint %s was written by a different graph; its entries were matched by name", r.path)
        return result

    @staticmethod
    def _mismatch_error(path: str, res: RestoreResult, rng_unexpected: List[str], n_ok: int) -> Exception:
        lines = []
        if res.missing:
            lines.append(f"  missing from the checkpoint ({len(res.missing)}): {', '.join(res.missing)}")
        if res.unexpected:
            lines.append(f"  in the checkpoint but not in the graph ({len(res.unexpected)}): "
                         f"{', '.join(res.unexpected)}")
        if res.mismatched:
            lines.append(f"  mismatched dtype or shape ({len(res.mismatched)}):")
            lines.extend("    " + m for m in res.mismatched)
        if rng_unexpected:
            lines.append(f"  random states of ops not in the graph ({len(rng_unexpected)}): {', '.join(rng_unexpected)}")
        n = len(res.missing) + len(res.unexpected) + len(res.mismatched) + len(rng_unexpected)
        msg = (f"checkpoint {path} does not match the graph ({n} problem{'s' if n != 1 else ''}):\n"
               + "\n".join(lines) + f"\nNothing was restored; restore(..., strict=False) restores the {n_ok} "
               "matching variable(s) and skips the rest.")
        return InvalidArgumentError(msg) if res.mismatched else NotFoundError(msg)

    def _match_rng(self, sess: Any, saved: Dict[str, dict]) -> Tuple[List[Tuple[str, dict, Any]], List[str]]:
        if not self._save_rng:
            return [], []
        todo, unexpected = [], []
        for name, state in sorted(saved.items()):
            try:
                op = sess.graph.get_operation_by_name(name)
            except NotFoundError:
                unexpected.append(name)
                continue
            todo.append((name, state, op))
        return todo, unexpected

    def _restore_rng(self, sess: Any, todo: List[Tuple[str, dict, Any]]) -> List[str]:
        from ..kernels.random_kernels import new_stream
        done = []
        for name, state, op in todo:
            xp = get_device(sess._device_for(op)).xp
            seed, seed2 = op.attrs.get("seed"), op.attrs.get("seed2")
            stream = sess.resources.get_or_create("rng", name, lambda: new_stream(xp, seed, seed2))
            kind = state.get("bit_generator")
            want = stream.get_state().get("bit_generator") if hasattr(stream, "get_state") else kind
            if kind != want:  # saved on the other kind of device: PCG64 on a host, Philox on a GPU
                log.warning("random op %r: the checkpoint holds a %s stream, this session draws from a %s "
                            "stream (another device); its draws start afresh", name, kind, want)
                continue
            try:
                if hasattr(stream, "set_state"):
                    stream.set_state(state)
                else:
                    stream.bit_generator.state = state
            except (TypeError, ValueError, KeyError) as e:
                raise cio.DataLossError(f"the saved random state of {name!r} is invalid: {e}") from None
            done.append(name)
        return done

    @staticmethod
    def _assign(sess: Any, v: Variable, value: np.ndarray) -> None:
        xp = get_device(sess._device_for(v.op)).xp
        st = sess.resources.variable(_state_name(v), v.dtype, v.shape, xp)
        # the array was just read for us: the variable owns it (no copy, unlike Variable.load)
        st.replace(value if xp is np else xp.asarray(value))

    # -- as graph ops ---------------------------------------------------------------------------------
    def build_save_op(self, filename: Any, name: Optional[str] = None) -> _g.Operation:
        """A Save op writing this Saver's variables to `filename` (a string or string tensor) when run.

        Build it inside `cf.control_dependencies([train_op])` to checkpoint after the step in
        the same run.  The file holds variables only (no random states or input position).
        """
        g = self._graph or _g.get_default_graph()
        keys = list(self._vars)
        with g.as_default():
            return _io_ops.save(filename, keys, [self._vars[k].value() for k in keys],
                                name=name or f"{self._name}/save")

    def build_restore_op(self, filename: Any, name: Optional[str] = None) -> _g.Operation:
        """An op that, when run, assigns this Saver's variables from the checkpoint `filename`."""
        g = self._graph or _g.get_default_graph()
        keys = list(self._vars)
        vs = [self._vars[k] for k in keys]
        with g.as_default():
            scope = name or f"{self._name}/restore"
            outs = _io_ops.restore(filename, keys, [v.dtype for v in vs], [v.shape for v in vs], name=scope)
            return group(*[assign(v, t).op for v, t in zip(vs, outs)], name=scope + "_all")


# -- finding checkpoints --------------------------------------------------------------------------


def latest_checkpoint(checkpoint_dir: str, prefix: Optional[str] = None) -> Optional[str]:
    """The newest checkpoint in `checkpoint_dir` (by its index), or None, as TensorFlow 1.x
    gives it: the prefix (`dir/model.ckpt-100` for `dir/model.ckpt-100.h5`).

    Without a readable index, the newest checkpoint TensorFlow's `checkpoint` state file lists
    (a directory TensorFlow wrote), else the newest `<prefix>-<step>.h5` file (prefix default
    "ckpt") is taken.  The file is not validated here; CheckpointManager.restore falls back past a
    damaged one.  Entries resolving outside `checkpoint_dir` (a symlink out) are skipped.
    """
    try:
        entries = cio.read_index(checkpoint_dir)
    except cio.DataLossError as e:
        log.warning("%s; looking for checkpoint files instead", e)
        entries = []
    scanned = cio.scan_directory(checkpoint_dir, prefix or "ckpt")
    names = [e.path for e in reversed(entries)] + list(reversed(tf_state_files(checkpoint_dir)))
    for name in names + [e.path for e in reversed(scanned)]:
        try:
            p = _policy.contained_path(checkpoint_dir, name)
        except cio.UnsafeCheckpointError as err:
            log.warning("%s", err)
            continue
        if os.path.exists(p):
            return _as_prefix(os.path.abspath(p))
    return None


def tf_state_files(checkpoint_dir: str) -> List[str]:
    """The index files (names inside `checkpoint_dir`) of the TensorFlow checkpoints that TF's
    `checkpoint` state file lists, oldest first.  TF records absolute paths by default: one
    that points elsewhere is taken by its base name when that exists here (a directory copied
    or moved since), else skipped; a damaged state file is ignored with a warning."""
    try:
        listed = _tfc.read_state_file(checkpoint_dir)
    except cio.DataLossError as e:
        log.warning("%s; ignoring it", e)
        return []
    out = []
    for p in listed:
        name = os.path.basename(p) if os.path.isabs(p) else p
        if os.path.isabs(p) and os.path.realpath(os.path.dirname(p)) != os.path.realpath(checkpoint_dir):
            log.info("TensorFlow's state file in %s lists %s; using %s from this directory", checkpoint_dir, p, name)
        v2 = name + _tfc.INDEX_SUFFIX
        # a V1 checkpoint is the one file the state file names
        out.append(name if not os.path.exists(os.path.join(checkpoint_dir, v2)) and
                   os.path.isfile(os.path.join(checkpoint_dir, name)) else v2)
    return out


def checkpoint_exists(path: str) -> bool:
    """Whether `path` names an existing checkpoint (a file, or a prefix; TensorFlow's checkpoint_exists)."""
    f = checkpoint_file(path)
    return os.path.isfile(f) and not f.endswith(cio.TMP_SUFFIX)


def get_checkpoint_mtimes(checkpoint_prefixes: Any) -> List[float]:
    """The modification times of the checkpoints named (those that exist), as TF1's."""
    out = []
    for p in checkpoint_prefixes:
        f = checkpoint_file(p)
        if os.path.isfile(f):
            out.append(os.path.getmtime(f))
    return out


def remove_checkpoint(checkpoint_prefix: str, checkpoint_format_version: Any = None, meta_graph_suffix: str = "meta") -> None:
    """Deletes the checkpoint's file (TF1's tf.train.remove_checkpoint); the directory's index
    forgets it the next time it is read (an entry without its file is skipped)."""
    f = checkpoint_file(checkpoint_prefix)
    for p in _checkpoint_files(f) + [_meta_path(_as_prefix(f), meta_graph_suffix)]:
        if os.path.isfile(p):
            os.remove(p)
