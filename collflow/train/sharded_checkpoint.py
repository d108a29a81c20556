"""Checkpoints of sharded variables: every rank saves its shards with their row ranges.

A checkpoint `<base>.h5` (written by rank 0's cf.train.Saver: the replicated variables,
random streams, input position) gets one companion file per rank,

    <base>.shard-<k>-of-<n>.h5      (k = rank, n = ranks that wrote; same HDF5 format)

holding, for every ShardedVariable, rank k's rows of the table and of each optimizer slot of
it, under names that do not depend on the number of ranks ("emb", "emb/Adam", "emb/Adam_1";
see sharded.shard_state_variables), and "__ps_layout__/emb": int64 [vocab, strategy,
num_shards, shard_index, rows, row dims...], from which any rank can tell which global ids
the file's rows are.  Restoring onto m ranks (m may differ from n: resharding) reads, for
each of this rank's ids under the new layout, the row from the old shard that held it.

`ShardedSaver` bundles both: rank 0 writes the replicated variables, every rank its shards,
and a barrier makes the checkpoint complete before `save` returns.  Saver integration: a
Saver whose default var_list leaves out `replicated_variables()`'s complement, and that calls
`save_shards(sess, path, comm)` after writing (every rank) and `restore_shards` after reading,
is all it takes (see the report of issue 7).
"""
from __future__ import annotations

import glob
import os
import re
import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..comm import ps as _ps
from ..errors import InvalidArgumentError, NotFoundError
from ..graph import graph as _g
from ..kernels.device import get_device, to_host
from . import checkpoint_io as cio
from .checkpoint_policy import contained_path
from .sharded import replicated_variables, shard_state_variables

__all__ = ["shard_path", "shard_files", "save_shards", "restore_shards", "ShardedSaver", "LAYOUT_PREFIX"]

LAYOUT_PREFIX = "__ps_layout__/"
_SHARD_RE = re.compile(r"\.shard-(\d+)-of-(\d+)\.h5$")


def _base(path: str) -> str:
    root, ext = os.path.splitext(os.path.abspath(path))
    return root if ext.lower() in (".h5", ".hdf5") else os.path.abspath(path)


def shard_path(path: str, k: int, n: int) -> str:
    """The file of shard k of n belonging to checkpoint `path`."""
    return f"{_base(path)}.shard-{int(k):05d}-of-{int(n):05d}.h5"


def shard_files(path: str) -> List[str]:
    """Every shard file of checkpoint `path` on disk (any number of ranks), sorted."""
    base = _base(path)
    return sorted(p for p in glob.glob(glob.escape(base) + ".shard-*-of-*.h5") if _SHARD_RE.search(p))


def _complete_set(path: str) -> Tuple[int, List[str]]:
    """(n, the n files) of the one complete set of shard files of `path` (each one resolving
    inside the checkpoint's directory: a symlink out of it raises cio.UnsafeCheckpointError)."""
    files = [contained_path(os.path.dirname(p), os.path.basename(p)) for p in shard_files(path)]
    if not files:
        raise NotFoundError(f"checkpoint {path} has no shard files ({shard_path(path, 0, 1)} ...): it was not "
                            "saved with sharded variables, or their files were removed")
    sets: Dict[int, Dict[int, str]] = {}
    for p in files:
        m = _SHARD_RE.search(p)
        assert m is not None
        sets.setdefault(int(m.group(2)), {})[int(m.group(1))] = p
    complete = [n for n, s in sets.items() if sorted(s) == list(range(n))]
    if len(complete) != 1:
        detail = "; ".join(f"{n} ranks: have shards {sorted(s)}" for n, s in sorted(sets.items()))
        raise NotFoundError(f"checkpoint {path}: expected one complete set of shard files, found {detail}")
    n = complete[0]
    return n, [sets[n][k] for k in range(n)]


def _layout_record(lay: _ps.ShardLayout) -> np.ndarray:
    return np.array([lay.vocab, _ps.STRATEGIES.index(lay.strategy), lay.num_shards, lay.shard_index, lay.rows()]
                    + list(lay.row_shape), dtype=np.int64)


def _layout_from_record(name: str, rec: np.ndarray, dtype: str) -> _ps.ShardLayout:
    vocab, strat, n, k, _rows = (int(x) for x in rec[:5])
    return _ps.ShardLayout(name, vocab, tuple(int(x) for x in rec[5:]), dtype, _ps.STRATEGIES[strat], n, k)


def _comm(comm: Any) -> Any:
    if comm is not None:
        return comm
    from ..comm import get
    return get()


def save_shards(sess: Any, path: str, comm: Any = None, global_step: Optional[int] = None,
                barrier: bool = True) -> str:
    """Writes this rank's shards (and their slots) next to checkpoint `path`; returns the file.

    Every rank calls it.  With `barrier`, it returns once every rank has written, and rank 0
    then removes shard files of this checkpoint left by another number of ranks.
    """
    c = _comm(comm)
    states = shard_state_variables(sess.graph)
    if not states:
        raise InvalidArgumentError("save_shards: the graph has no sharded variables")
    values: Dict[str, np.ndarray] = {}
    for logical, (sv, v) in sorted(states.items()):
        if sv.layout.num_shards != c.size or sv.layout.shard_index != c.rank:
            raise InvalidArgumentError(
                f"save_shards: {sv.name!r} is shard {sv.layout.shard_index} of {sv.layout.num_shards}, but this is "
                f"rank {c.rank} of {c.size}")
        st = sess.resources.variables.get(v.op.attrs.get("shared_name", v.op.name))
        if st is None or st.value is None:
            raise InvalidArgumentError(f"save_shards: variable {v.op.name!r} is not initialized")
        with st.lock:
            val = st.value
            values[logical] = np.array(to_host(val), copy=True)
        if logical == sv.name:
            values[LAYOUT_PREFIX + sv.name] = _layout_record(sv.layout)
    out = shard_path(path, c.rank, c.size)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    cio.write_checkpoint(out, cio.CheckpointData(variables=values, global_step=global_step, world_size=c.size,
                                                 timestamp=time.time()))
    if barrier:
        c.barrier(name="save_shards")
        if c.rank == 0:
            for p in shard_files(path):
                m = _SHARD_RE.search(p)
                if m is not None and int(m.group(2)) != c.size:
                    try:
                        os.remove(p)
                    except FileNotFoundError:
                        pass
    return out


def restore_shards(sess: Any, path: str, comm: Any = None, strict: bool = True, verify: bool = True,
                   allow_unverified: bool = False) -> List[str]:
    """Sets this rank's shards (and slots) from the shard files of checkpoint `path`.

    `comm` is accepted for symmetry with save_shards; reading needs no collective.
    allow_unverified: accept shard files without checksums (see cio.CheckpointReader).

    The files may come from any number of ranks: each row is read from the old shard that
    held its id.  With `strict`, state in the graph missing from the files, or file state not
    in the graph, raises before anything changes.  Returns the logical names restored.
    """
    states = shard_state_variables(sess.graph)
    if not states:
        raise InvalidArgumentError("restore_shards: the graph has no sharded variables")
    n_old, files = _complete_set(path)
    readers: List[cio.CheckpointReader] = []
    try:
        for p in files:  # opened one by one inside the try: a refused file closes those before it
            readers.append(cio.CheckpointReader(p, allow_unverified=allow_unverified))
        specs = readers[0].variable_specs()
        in_file = {k for k in specs if not k.startswith(LAYOUT_PREFIX)}
        missing = sorted(set(states) - in_file)
        unexpected = sorted(in_file - set(states))
        problems = []
        old_layouts: Dict[str, List[_ps.ShardLayout]] = {}
        for sv in {id(sv): sv for sv, _ in states.values()}.values():
            key = LAYOUT_PREFIX + sv.name
            if key not in specs:
                continue
            lays = []
            for k, r in enumerate(readers):
                rec = r.read([key], verify=verify)[key]
                old = _layout_from_record(sv.name, rec, sv.layout.dtype)
                if old.num_shards != n_old or old.shard_index != k:
                    problems.append(f"{files[k]} says it holds shard {old.shard_index} of {old.num_shards}")
                lays.append(old)
            old = lays[0]
            if old.vocab != sv.layout.vocab or tuple(old.row_shape) != tuple(sv.layout.row_shape):
                problems.append(f"{sv.name}: checkpoint table {old.shape}, graph {sv.layout.shape}")
            old_layouts[sv.name] = lays
        for logical, (sv, v) in states.items():
            if logical in specs and specs[logical][0] != v.dtype.np:
                problems.append(f"{logical}: checkpoint {specs[logical][0]}, graph {v.dtype.name}")
        if problems or (strict and (missing or unexpected)):
            lines = problems + ([f"missing from the checkpoint: {', '.join(missing)}"] if missing else []) \
                + ([f"in the checkpoint but not in the graph: {', '.join(unexpected)}"] if unexpected else [])
            raise InvalidArgumentError(f"sharded checkpoint {path} ({n_old} shard files) does not match the graph: "
                                       + "; ".join(lines) + ". Nothing was restored.")
        restored = []
        todo = [(lg, sv, v) for lg, (sv, v) in sorted(states.items()) if lg in in_file]
        new_values = []
        for logical, sv, v in todo:
            lay = sv.layout
            mine = lay.global_ids()
            old0 = old_layouts[sv.name][0]
            owner = old0.owner(mine)
            rows = old0.local_rows(mine, owner)
            value = np.empty(lay.shard_shape, dtype=v.dtype.np)
            for j in np.unique(owner):
                arr = readers[int(j)].read([logical], verify=verify)[logical]
                sel = owner == j
                value[sel] = arr[rows[sel]]
                del arr
            new_values.append((v, value))
            restored.append(logical)
    finally:
        for r in readers:
            r.close()
    for v, value in new_values:
        xp = get_device(sess._device_for(v.op)).xp
        st = sess.resources.variable(v.op.attrs.get("shared_name", v.op.name), v.dtype, v.shape, xp)
        st.replace(value if xp is np else xp.asarray(value))
    return restored


class ShardedSaver:
    """Saves and restores a graph with sharded variables: rank 0 writes the replicated
    variables (a cf.train.Saver over replicated_variables()), every rank its shards.

    comm: the communicator of the ranks (default: the process's).  Other keyword arguments go
    to cf.train.Saver (max_to_keep, ...).  A checkpoint written by n ranks restores on any m.
    """

    def __init__(self, comm: Any = None, graph: Optional[_g.Graph] = None, **saver_kwargs: Any):
        from .saver import Saver
        self.comm = _comm(comm)
        g = graph or _g.get_default_graph()
        with g.as_default():
            self.saver = Saver(var_list=replicated_variables(g), rank=self.comm.rank, world_size=self.comm.size,
                               **{"allow_empty": True, **saver_kwargs})  # all variables sharded: none here

    def save(self, sess: Any, save_path: str, global_step: Any = None, pipeline: Any = None) -> str:
        """Writes the checkpoint on every rank's part; returns the main file's path.

        save_path: a TensorFlow-style prefix (`dir/model.ckpt`) or an .h5 file name."""
        from .saver import _path_with_step, _step_value
        self.saver.save(sess, save_path, global_step=global_step, pipeline=pipeline)
        step = _step_value(sess, global_step)
        path = _path_with_step(save_path, step)  # the main file, whatever form save_path had
        save_shards(sess, path, self.comm, global_step=step)
        if self.comm.rank == 0:
            _remove_orphans(os.path.dirname(path))
        return path

    def restore(self, sess: Any, save_path: str, strict: bool = True, allow_unverified: bool = False) -> Any:
        """Restores the replicated variables and this rank's shards (from any number of ranks).

        allow_unverified: accept files without checksums (see cio.CheckpointReader)."""
        from .saver import checkpoint_file
        save_path = checkpoint_file(save_path)  # a prefix names <prefix>.h5
        res = self.saver.restore(sess, save_path, strict=strict, allow_unverified=allow_unverified)
        restore_shards(sess, save_path, self.comm, strict=strict, allow_unverified=allow_unverified)
        return res


def _remove_orphans(directory: str) -> None:
    """Shard files whose main checkpoint is gone (pruned by the Saver's max_to_keep)."""
    for p in glob.glob(os.path.join(glob.escape(directory), "*.shard-*-of-*.h5")):
        m = _SHARD_RE.search(p)
        if m is None:
            continue
        main = p[:m.start()] + ".h5"
        if not os.path.exists(main):
            try:
                os.remove(p)
            except FileNotFoundError:
                pass
