"""TF1's asynchronous between-graph training, run deterministically over MPI ranks.

In a TF1 cluster every worker applies its own gradients to the variables on the
parameter servers whenever it has them; no two runs interleave alike.  collflow has no
parameter servers: each compute rank keeps a replica of the variables the program put on
another job (tf.train.replica_device_setter's "/job:ps/..."), and a plain optimizer's
train op on such variables does, every step, what one possible TF schedule does: all
workers read the variables, compute their gradients, and the updates are applied one
worker after the other in rank order, each with the optimizer's own rule (slots, Adam's
bias correction and the global step move once per worker update, as in TF).  Every rank
applies the same sequence, so the replicas stay equal; the gradients travel in one
allgather per dtype (sparse ones as their rows).

Variables on the worker's own job (or with no job) are each worker's own, as in TF: they
are updated with that rank's gradient only.  SyncReplicasOptimizer (and collflow's other
synchronous wrappers) combine the gradients themselves; their inner apply is not
replicated again (`synchronized()`).
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.device_spec import job_part
from ..graph.indexed_slices import IndexedSlices
from ..graph.ops import array_ops, slicing_ops
from ..graph.ops.collective_ops import allgather
from ..graph.ops.constant_op import constant, group
from ..graph.ops.scan_ops import cumsum
from ..graph.variables import Variable
from .cluster import current_server

__all__ = ["synchronized", "shared_variable", "async_apply"]

_state = threading.local()


@contextlib.contextmanager
def synchronized() -> Iterator[None]:
    """Gradients applied inside were already combined across the ranks."""
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        yield
    finally:
        _state.depth -= 1


def shared_variable(v: Variable) -> bool:
    """Whether the program placed `v` on a task of another job of its cluster (so every
    worker shares it in TF)."""
    server = current_server()
    if server is None or not server.is_compute_task:
        return False
    job, _ = job_part(v.device)
    return job is not None and job in server.cluster_spec.jobs and job != server.job_name


def _workers() -> Tuple[int, int]:
    from .. import comm as _comm
    c = _comm.get()
    return c.size, c.rank


def async_apply(opt: Any, pairs: Sequence[Tuple[Any, Variable]], global_step: Optional[Variable],
                name: Optional[str]) -> Optional[_g.Operation]:
    """The replicated asynchronous step for `opt.apply_gradients(pairs)`, or None where it
    does not apply (no cluster, one worker, no shared variable, or inside a synchronous
    wrapper)."""
    if getattr(_state, "depth", 0) or current_server() is None:
        return None
    live = [(gr, v, shared_variable(v)) for gr, v in pairs if gr is not None]
    shared = [(gr, v) for gr, v, is_shared in live if is_shared]
    if not shared:
        return None
    n, rank = _workers()
    if n <= 1:
        return None
    own = [(gr, v) for gr, v, is_shared in live if not is_shared]
    g = shared[0][1].graph
    base = name or opt.get_name()
    with g.as_default(), g.name_scope(base + "_replicas"):
        per_rank = _gather(shared, n)
    step = None
    with synchronized():
        for i in range(n):
            batch = [(per_rank[j][i], v) for j, (_, v) in enumerate(shared)]
            if i == rank:
                batch += own
            deps = [step] if step is not None else []
            with g.as_default(), g.control_dependencies(deps):
                step = opt.apply_gradients(batch, global_step=global_step, name=f"{base}_worker{i}")
    from .sync_replicas import add_replica_sync
    add_replica_sync(g, step)  # the replicas start from rank 0's values, as from one ps
    if global_step is not None:
        from .hooks import STEP_INCREMENTS
        g.add_to_collection(STEP_INCREMENTS, n)  # StopAtStepHook's estimate of the next step
    with g.as_default():
        return group(step, name=base)


def _gather(pairs: Sequence[Tuple[Any, Variable]], n: int) -> List[List[Any]]:
    """[pair][rank] -> that rank's gradient for the pair's variable."""
    out: List[List[Any]] = [[] for _ in pairs]
    dense: Dict[_dt.DType, List[int]] = {}
    for j, (gr, _) in enumerate(pairs):
        if isinstance(gr, IndexedSlices):
            out[j] = _gather_rows(gr, n)
        else:
            gr = _g.convert_to_tensor(gr)
            if gr.shape.is_fully_defined():
                dense.setdefault(gr.dtype, []).append(j)
            else:
                all_ = allgather(array_ops.expand_dims(gr, 0), name="allgather_grad")
                out[j] = [all_[i] for i in range(n)]
    for dt, idx in dense.items():
        ts = [_g.convert_to_tensor(pairs[j][0]) for j in idx]
        sizes = [int(t.shape.num_elements()) for t in ts]
        flat = array_ops.concat([array_ops.reshape(t, [-1]) for t in ts], 0) if len(ts) > 1 else \
            array_ops.reshape(ts[0], [-1])
        rows = allgather(array_ops.reshape(flat, [1, -1]), name=f"allgather_{dt.name}")
        for i in range(n):
            row = rows[i]
            parts = array_ops.split(row, sizes, 0) if len(ts) > 1 else [row]
            for j, t, p in zip(idx, ts, parts):
                out[j].append(array_ops.reshape(p, t.shape.as_list()))
    return out


def _gather_rows(gr: IndexedSlices, n: int) -> List[IndexedSlices]:
    """Every rank's rows of a sparse gradient (counts may differ between ranks)."""
    idx = _g.convert_to_tensor(gr.indices)
    vals = _g.convert_to_tensor(gr.values)
    if vals.shape.rank is None:  # checked before any op is made
        raise ValueError(f"cannot replicate a sparse gradient of unknown rank: {vals}")
    tail = vals.shape.rank - 1  # the row's own dimensions
    count = array_ops.reshape(array_ops.size(idx), [1])
    counts = allgather(count, name="allgather_counts")
    starts = cumsum(counts, exclusive=True)
    all_idx = allgather(idx, name="allgather_indices")
    all_vals = allgather(vals, name="allgather_values")
    out = []
    for i in range(n):
        s, c = starts[i], counts[i]
        ii = slicing_ops.slice(all_idx, array_ops.reshape(s, [1]), array_ops.reshape(c, [1]))
        begin = array_ops.concat([array_ops.reshape(s, [1]), constant([0] * tail, dtype=_dt.int32)], 0) \
            if tail else array_ops.reshape(s, [1])
        size = array_ops.concat([array_ops.reshape(c, [1]), constant([-1] * tail, dtype=_dt.int32)], 0) \
            if tail else array_ops.reshape(c, [1])
        vv = slicing_ops.slice(all_vals, begin, size)
        out.append(IndexedSlices(vv, ii, gr.dense_shape))
    return out
