"""SyncReplicasOptimizer: synchronous data-parallel training over all-reduce.

Wraps any optimizer.  `apply_gradients` takes each rank's local gradients and, before the
wrapped optimizer applies them, combines them across ranks:

  dense gradients, in the order the backward pass produces them -> fusion buckets of at most
  `fusion_threshold_bytes` -> one FusedAllReduce per bucket (optional fp16/bf16 compression on
  the wire, summed in float32) -> divided by the number of ranks that contributed;
  IndexedSlices gradients -> SparseAllGather of their rows (never a dense all-reduce of a table),
  values divided by the same count; or densified first with `sparse_as_dense=True`.

Every bucket's collective is asynchronous, so it starts as soon as its last gradient exists
and overlaps the rest of the backward pass.  Every rank applies the same update, so replicas
that start identical (broadcast_global_variables) stay bit-identical.

Plain SGD (`average_parameters`; by default when the communicator all-reduces in shared
memory, i.e. every rank on one host) takes the other, equivalent road: each rank applies its
own gradient, W_r = W - lr * g_r, and the updated variables are then averaged in place,
bucket by bucket (AverageVariables), which gives W - lr * mean(g_r) on every rank.  The same
bytes cross the wire, but the update keeps its fused form (on the CPU one BLAS call,
W += -lr * X^T dY, instead of a gradient and a separate pass), the variables live in the
communicator's memory between steps, and the average is written into them directly: no
gradient buffer, no pass to apply it.  In shared memory the mean is taken relative to one
replica (exact for equal replicas); elsewhere it is MPI's sum divided by the ranks.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

from ..comm import fusion as _fusion  # noqa: F401  (registers the fused collective kernels)
from ..comm.buckets import GradSpec, plan_buckets
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.device_spec import canonical_device
from ..graph.indexed_slices import IndexedSlices
from ..graph.ops import array_ops, math_ops
from ..graph.ops.constant_op import identity
from .. import dtypes as _dt
from ..graph.ops.fusion_ops import COMPRESSIONS, average_variables, comm_size, fused_all_reduce, sparse_all_gather
from ..graph.variables import Variable
from .between_graph import synchronized
from .optimizer import Optimizer
from .sync_replicas_tf1 import ChiefQueueRunner, SyncReplicasHook, check_num_tokens, init_ops, tf1_arguments

__all__ = ["SyncReplicasOptimizer", "DistributedOptimizer", "GradBucket"]

DEFAULT_FUSION_BYTES = 64 * 1024 * 1024


class GradBucket:
    """One bucket of dense gradients, as a reduce_hook sees it (PyTorch DDP's GradBucket).

    index: its place in the order buckets are reduced (the backward pass's); gradients: the
    local gradient tensors; variables: theirs; key: the bucket's collective name (the same on
    every rank); average, compression: the optimizer's settings.
    """

    def __init__(self, index: int, gradients: List[Any], variables: List[Variable], key: str, average: bool,
                 compression: str):
        self.index, self.gradients, self.variables = index, gradients, variables
        self.key, self.average, self.compression = key, average, compression

    def all_reduce(self, gradients: Optional[Sequence[Any]] = None, average: Optional[bool] = None) -> List[Any]:
        """The default reduction: one fused all-reduce of `gradients` (default: the bucket's),
        averaged unless `average` says otherwise, with the optimizer's compression."""
        ts = list(self.gradients if gradients is None else gradients)
        avg = self.average if average is None else bool(average)
        return list(fused_all_reduce(ts, key=self.key, average=avg, compression=self.compression,
                                     name=f"allreduce_bucket{self.index}"))

    def __repr__(self) -> str:
        return f"<GradBucket {self.index}: {', '.join(v.op.name for v in self.variables)}>"


class SyncReplicasOptimizer(Optimizer):
    """Synchronous data-parallel training: all-reduce the gradients, then apply them.

    opt: the optimizer to wrap.  comm: communicator (default: the process's, cf.comm.init()).
    fusion_threshold_bytes: bucket size (0 = one collective per gradient).
    compression: None/'none', 'fp16' or 'bf16' on the wire.  sparse_as_dense: all-reduce
    IndexedSlices as dense tensors.  average: divide by the number of contributing ranks.
    average_parameters: for an optimizer whose update is linear in the gradient (plain
    SGD), apply each rank's gradient and average the updated variables instead of averaging
    gradients (the same result; see the module doc).  None (default): where it applies
    (dense gradients of known shapes, no backup ranks, compression or shards) and the
    communicator all-reduces through shared memory; False: never; True: wherever it applies
    (an error where it cannot).
    reduce_hook: `hook(bucket: GradBucket) -> [reduced gradient per bucket.gradients]`, called
    once per bucket while the graph is built (PyTorch DDP's communication hooks): it decides
    how the bucket's dense gradients are combined, e.g. `bucket.all_reduce()` (the default)
    after a graph op of its own, or per-gradient `cf.comm.all_reduce`.  Its results replace
    the averaged gradients (so it averages where it means to).  Implies
    average_parameters=False and plain gradient application.
    """

    def __init__(self, opt: Optimizer, comm: Any = None, fusion_threshold_bytes: int = DEFAULT_FUSION_BYTES,
                 compression: Optional[str] = None, sparse_as_dense: bool = False, average: bool = True,
                 backup_ranks: int = 0, name: str = "SyncReplicas", average_parameters: Optional[bool] = None,
                 reduce_hook: Optional[Callable[["GradBucket"], Sequence[Any]]] = None, *,
                 replicas_to_aggregate: Optional[int] = None, total_num_replicas: Optional[int] = None,
                 variable_averages: Any = None, variables_to_average: Any = None, use_locking: bool = False):
        super().__init__(False, name)
        # TF1's form (opt, replicas_to_aggregate, total_num_replicas, ...): sync_replicas_tf1.py
        comm, fusion_threshold_bytes, compression, sparse_as_dense, self._tf1 = tf1_arguments(
            comm, fusion_threshold_bytes, compression, sparse_as_dense, DEFAULT_FUSION_BYTES,
            replicas_to_aggregate, total_num_replicas, variable_averages, variables_to_average)
        if self._tf1 is not None:
            backup_ranks = max(int(backup_ranks), self._tf1.backup_ranks)
        if not isinstance(opt, Optimizer):
            raise TypeError(f"SyncReplicasOptimizer wraps a cf.train.Optimizer, got {type(opt).__name__}")
        compression = compression or "none"
        if compression not in COMPRESSIONS:
            raise InvalidArgumentError(f"compression must be one of {COMPRESSIONS}, got {compression!r}")
        if fusion_threshold_bytes < 0:
            raise InvalidArgumentError(f"fusion_threshold_bytes must be >= 0, got {fusion_threshold_bytes}")
        if backup_ranks < 0:
            raise InvalidArgumentError(f"backup_ranks must be >= 0, got {backup_ranks}")
        self._opt = opt
        self._comm = comm
        self._fusion = int(fusion_threshold_bytes)
        self._compression = compression
        self._sparse_as_dense = sparse_as_dense
        self._average = average
        self.backup_ranks = int(backup_ranks)
        if average_parameters and not opt.folds_gradient_scale:
            raise InvalidArgumentError(
                f"average_parameters=True needs an optimizer whose update is linear in the gradient (plain "
                f"SGD); {type(opt).__name__} is not: its gradients are averaged instead")
        if reduce_hook is not None and not callable(reduce_hook):
            raise InvalidArgumentError(f"reduce_hook must be callable, got {type(reduce_hook).__name__}")
        if reduce_hook is not None and average_parameters:
            raise InvalidArgumentError("reduce_hook decides how gradients are combined; it cannot be used with "
                                       "average_parameters=True (which averages variables instead)")
        self._reduce_hook = reduce_hook
        self._average_parameters = False if reduce_hook is not None else average_parameters
        self.buckets: List[List[str]] = []  # names of the gradients in each bucket (for inspection)
        self._local_grads: List[Any] = []   # this rank's gradient tensors, as the collectives take them
        self._train_op: Optional[_g.Operation] = None
        self._quorums: dict = {}            # session -> BackupQuorum

    # -- the wrapped optimizer's interface -----------------------------------------------
    def compute_gradients(self, *args: Any, **kwargs: Any) -> List[Tuple[Any, Variable]]:
        """The local (this rank's) gradients, as the wrapped optimizer computes them."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars: Sequence[Tuple[Any, Variable]], global_step: Optional[Variable] = None,
                        name: Optional[str] = None) -> _g.Operation:
        """All-reduces the gradients across ranks, then applies them with the wrapped optimizer."""
        pairs = list(grads_and_vars)
        if self._tf1 is not None:
            from ..comm import get
            self._tf1.check_world((self._comm or get()).size)
        with synchronized():  # combined here: between_graph's replicated step does not apply
            step = self._apply_synchronized(pairs, global_step, name)
        if self._tf1 is not None:
            self._train_op = step = self._tf1.after_step(step)
        # TF1's queue interface for Supervisor programs (sync_replicas_tf1.py)
        (self.local_step_init_op, self.chief_init_op, self.ready_for_local_init_op,
         self._init_tokens_op) = init_ops(step.graph)
        return step

    def _apply_synchronized(self, pairs: List[Tuple[Any, Variable]], global_step: Optional[Variable],
                            name: Optional[str]) -> _g.Operation:
        from .sharded import split_sharded
        # Plain SGD takes the sums and folds the 1/ranks of the average into its learning rate
        # (a scalar product instead of a pass over every gradient; Horovod's postscale, for
        # free).  Not with backup ranks (the divisor changes per step), compression, or PS shards.
        fold = (self._average and not self.backup_ranks and self._compression == "none" and self._reduce_hook is None
                and self._opt.folds_gradient_scale and not split_sharded(pairs)[0])
        if self._averages_parameters(pairs, fold):
            self._train_op = self._step_then_average(pairs, global_step, name)
        elif fold:
            reduced = self.reduce_gradients(pairs, average=False)
            g = pairs[0][1].graph
            with g.as_default(), g.name_scope(self._name):
                scale = 1.0 / comm_size(_dt.float64, name="comm_size")  # cast per variable dtype
            self._train_op = self._opt.apply_gradients(reduced, global_step=global_step, name=name,
                                                       gradient_scale=scale)
        else:
            reduced = self.reduce_gradients(pairs)
            self._train_op = self._opt.apply_gradients(reduced, global_step=global_step, name=name)
        add_replica_sync(pairs[0][1].graph, self._train_op)
        return self._train_op

    def _averages_parameters(self, pairs: List[Tuple[Any, Variable]], fold: bool) -> bool:
        """Whether apply_gradients averages the updated variables (see the module doc)."""
        if self._average_parameters is False:
            return False
        why = None
        if not fold:
            why = ("it needs an optimizer linear in the gradient, averaged over all ranks, without backup "
                   "ranks, compression or parameter-server shards")
        elif not self._sparse_as_dense and any(isinstance(gr, IndexedSlices) for gr, _ in pairs):
            why = "a sparse gradient would average the whole table (sparse_as_dense=True allows it)"
        else:
            bad = [v.op.name for gr, v in pairs if gr is not None
                   and (not v.shape.is_fully_defined() or not v.dtype.is_floating)]
            if bad:
                why = f"variables of unknown shape cannot live in a bucket: {', '.join(bad)}"
        if why is not None:
            if self._average_parameters:
                raise InvalidArgumentError(f"average_parameters=True cannot be honoured: {why}")
            return False
        if self._average_parameters:
            return True
        # by default where the all-reduce runs in shared memory: there the mean is computed
        # relative to one replica (exact for equal replicas); MPI's sum / n would round a sum of
        # full-size values every step (and measured no faster there)
        comm = self._comm
        if comm is None:
            from ..comm import get, is_initialized
            comm = get() if is_initialized() else None
        return bool(getattr(comm, "shm_active", False))

    def _step_then_average(self, pairs: List[Tuple[Any, Variable]], global_step: Optional[Variable],
                           name: Optional[str]) -> _g.Operation:
        """Each rank applies its own gradients; then the updated variables are averaged in
        place, a bucket at a time, each bucket once its variables' updates ran (in the order
        the backward pass produces their gradients, like gradient buckets)."""
        g = pairs[0][1].graph
        local = [(_g.convert_to_tensor(gr) if isinstance(gr, IndexedSlices) else gr, v) for gr, v in pairs]
        if self._comm is not None and self._comm.size == 1:
            return self._opt.apply_gradients(local, global_step=global_step, name=name)
        dense = sorted([(i, gr, v) for i, (gr, v) in enumerate(local) if gr is not None],
                       key=lambda item: item[1].op._id)
        buckets = self._buckets(dense)

        def average(updates: dict) -> List[_g.Operation]:
            ops = []
            with g.name_scope(self._name):
                for b, bucket in enumerate(buckets):
                    vs = [v for _, _, v in bucket]
                    key = f"{self._name}/average{b}:" + ",".join(v.op.name for v in vs)
                    with g.control_dependencies([updates[v] for v in vs]), g.device(vs[0].device):
                        ops.append(average_variables(vs, key=key, name=f"average_bucket{b}"))
                    self.buckets.append([v.op.name for v in vs])
            return ops
        return self._opt.apply_gradients(local, global_step=global_step, name=name, after_updates=average)

    def get_slot(self, var: Variable, name: str) -> Any:
        return self._opt.get_slot(var, name)

    # -- TF1's token-queue interface (nothing to run here: see sync_replicas_tf1.py) ------
    def make_session_run_hook(self, is_chief: bool, num_tokens: int = -1) -> SyncReplicasHook:
        """TF's hook for MonitoredTrainingSession; checks the world size when the session starts."""
        return SyncReplicasHook(self._tf1, is_chief, num_tokens)

    def get_chief_queue_runner(self) -> ChiefQueueRunner:
        if self._train_op is None:
            raise ValueError("get_chief_queue_runner() should be called after apply_gradients().")
        return ChiefQueueRunner()

    def get_init_tokens_op(self, num_tokens: int = -1) -> _g.Operation:
        if self._train_op is None:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        check_num_tokens(num_tokens)
        return self._init_tokens_op

    def get_slot_names(self) -> List[str]:
        return self._opt.get_slot_names()

    def variables(self) -> List[Variable]:
        return self._opt.variables()

    # -- the collective part --------------------------------------------------------------
    def reduce_gradients(self, grads_and_vars: Sequence[Tuple[Any, Variable]],
                         average: Optional[bool] = None) -> List[Tuple[Any, Variable]]:
        """(gradient averaged over ranks, variable) for each pair; None gradients stay None.

        average: override the optimizer's setting (False: dense gradients are the sums).

        Gradients of sharded (parameter-server) variables already reached their owners through
        the PS push of the backward pass: they are only averaged over the contributors.
        """
        from .sharded import sharded_gradient, split_sharded
        orig = list(grads_and_vars)
        shard_idx, grads_and_vars = split_sharded(orig)
        if shard_idx:
            res = self.reduce_gradients(grads_and_vars, average)
            for i in shard_idx:
                res[i] = (sharded_gradient(orig[i][0], orig[i][1], self._average), orig[i][1])
            return res
        pairs = list(grads_and_vars)
        live = [(i, gr, v) for i, (gr, v) in enumerate(pairs) if gr is not None]
        if not live:
            return pairs
        if self._comm is not None and self._comm.size == 1 and not self.backup_ranks:
            return pairs  # a world of one: nothing to combine, no collective to pay for
        g = live[0][2].graph
        out: List[Any] = [gr for gr, _ in pairs]
        with g.as_default(), g.name_scope(self._name):
            if self.backup_ranks:
                live = self._gate(g, live)
            dense = []
            for i, gr, v in live:
                vs = v.shape.as_list() if v.shape.is_fully_defined() else None
                if isinstance(gr, IndexedSlices):
                    # a late rank sends no rows
                    self._local_grads.append((gr.values, None if vs is None else [0] + vs[1:]))
                    self._local_grads.append((gr.indices, [0]))
                else:
                    self._local_grads.append((gr, vs))
                if isinstance(gr, IndexedSlices) and not self._sparse_as_dense:
                    out[i] = self._gather_sparse(gr, v)
                else:
                    t = _g.convert_to_tensor(gr) if isinstance(gr, IndexedSlices) else gr
                    dense.append((i, t, v))
            # the backward pass creates later layers' gradients first: their op ids are lower
            dense.sort(key=lambda item: item[1].op._id)
            for b, bucket in enumerate(self._buckets(dense)):
                tensors = [t for _, t, _ in bucket]
                key = f"{self._name}/bucket{b}:" + ",".join(v.op.name for _, _, v in bucket)
                avg = self._average if average is None else bool(average)
                gb = GradBucket(b, tensors, [v for _, _, v in bucket], key, avg, self._compression)
                reduced = gb.all_reduce() if self._reduce_hook is None else self._run_hook(gb)
                self.buckets.append([v.op.name for _, _, v in bucket])
                for (i, t, v), r in zip(bucket, reduced):
                    r.set_shape(t.shape)
                    out[i] = r
        return [(o, v) for o, (_, v) in zip(out, pairs)]

    def _run_hook(self, bucket: "GradBucket") -> List[Any]:
        hook = self._reduce_hook
        assert hook is not None
        out = list(hook(bucket))
        if len(out) != len(bucket.gradients):
            raise InvalidArgumentError(
                f"reduce_hook returned {len(out)} tensors for bucket {bucket.index}, which holds "
                f"{len(bucket.gradients)} gradients ({', '.join(v.op.name for v in bucket.variables)})")
        res = []
        for t, gr, v in zip(out, bucket.gradients, bucket.variables):
            t = _g.convert_to_tensor(t)
            if t.dtype != gr.dtype or not t.shape.is_compatible_with(gr.shape):
                raise InvalidArgumentError(
                    f"reduce_hook returned {t.dtype.name} {t.shape} for the gradient of {v.op.name!r}, which is "
                    f"{gr.dtype.name} {gr.shape}")
            res.append(t)
        return res

    def _gate(self, g: _g.Graph, live: list) -> list:
        """Backup ranks: a rank reports "ready" once its whole backward pass is done, so every
        gradient reaches the collectives through an identity that waits for all of them.
        (A late rank's catch-up run feeds these identities, so no gradient op runs again.)"""
        deps: List[Any] = []
        for _, gr, _ in live:
            deps.extend([gr.values, gr.indices] if isinstance(gr, IndexedSlices) else [gr])
        out = []
        with g.name_scope("gate"), g.control_dependencies(deps):
            for i, gr, v in live:
                if isinstance(gr, IndexedSlices):
                    gr = IndexedSlices(identity(gr.values), identity(gr.indices), gr.dense_shape, gr._static_shape)
                else:
                    gr = identity(gr)
                out.append((i, gr, v))
        return out

    def _buckets(self, dense: List[Tuple[int, _g.Tensor, Variable]]) -> List[list]:
        """The (index, gradient, variable) items grouped by collflow.comm.buckets.plan_buckets."""
        specs = [GradSpec(t.shape.num_elements(), t.dtype, t.dtype.itemsize, canonical_device(v.device)) for _, t, v in dense]
        return [[dense[i] for i in b.members] for b in plan_buckets(specs, self._fusion)]

    def _gather_sparse(self, gr: IndexedSlices, v: Variable) -> IndexedSlices:
        key = f"{self._name}/sparse:{v.op.name}"
        vals, idx, count = sparse_all_gather(gr.values, gr.indices, key=key,
                                             name="allgather_" + v.op.name.replace("/", "_"))
        if self._average:
            # the update sums every rank's rows; the mean divides by the ranks that contributed
            vals = vals / math_ops.maximum(count, 1.0)
        return IndexedSlices(vals, idx, gr.dense_shape, gr._static_shape)


    # -- backup ranks -----------------------------------------------------------------------
    def run_step(self, sess: Any, fetches: Any = None, feed_dict: Optional[dict] = None) -> Any:
        """Runs one training step (the train op plus `fetches`) and returns the fetched values.

        With backup_ranks = 0 this is `sess.run([train_op, fetches], feed_dict)[1]`.  With
        backup ranks, a rank left out of the step's quorum returns None: its run was cancelled
        (or skipped) and it joined the step's collectives with zero gradients.
        """
        if self._train_op is None:
            raise InvalidArgumentError("run_step needs apply_gradients/minimize to have built the train op")
        if not self.backup_ranks:
            return sess.run([self._train_op, fetches], feed_dict)[1] if fetches is not None \
                else sess.run(self._train_op, feed_dict)
        from ..comm.backup import BackupQuorum
        from ..errors import CancelledError
        from ..runtime.executor import CancellationToken
        q = self._quorums.get(sess)
        if q is None:
            comm = sess._config.get("comm") or self._comm
            if comm is None:
                from ..comm import get
                comm = get()
            q = BackupQuorum(comm, self.backup_ranks)
            self._quorums[sess] = q
            sess._config["contribution"] = q.contribution
        tok = CancellationToken()
        result = None
        if q.begin_step(tok):
            try:
                result = sess.run([self._train_op, fetches], feed_dict, cancel_token=tok)[1] \
                    if fetches is not None else sess.run(self._train_op, feed_dict, cancel_token=tok)
                q.end_step()
                return result
            except CancelledError:
                if not q.excluded():
                    raise
        # left out of this step: send zeros (no backward pass runs: the gradients are fed)
        zeros = {t: _zeros_for(t, shape) for t, shape in self._local_grads}
        q.begin_catch_up()
        sess.run(self._train_op, zeros)
        q.end_step()
        return None

    def quorum_history(self, sess: Any) -> List[dict]:
        """Per step: which ranks were members of the quorum and which were late."""
        q = self._quorums.get(sess)
        return list(q.history) if q is not None else []

    def close(self, sess: Any = None) -> None:
        for s, q in list(self._quorums.items()):
            if sess is None or s is sess:
                q.close()
                del self._quorums[s]


class ReplicaSync:
    """The broadcast of rank 0's variables and the training steps it must precede."""

    def __init__(self, broadcast: _g.Operation):
        self.broadcast = broadcast
        self.steps: set = set()


def add_replica_sync(g: _g.Graph, step: Optional[_g.Operation]) -> None:
    """Registers `step` as a synchronous training step: a Session runs one broadcast of rank
    0's variables before its first run of such a step (as PyTorch's DDP broadcasts when a
    model is wrapped), so replicas start identical even when nobody ran
    broadcast_global_variables.  One broadcast per graph, built on first use."""
    recs = g.get_collection(_g.GraphKeys.REPLICA_SYNC)
    if not recs:
        from .distributed import broadcast_global_variables
        # outside any cond/while body being built (a step applied inside a loss-scale cond or
        # a loop) and at the top name scope: the broadcast is run on its own, before the step
        with g.as_default(), g.init_scope(), g.name_scope(""):
            rec = ReplicaSync(broadcast_global_variables(0, name="replica_sync"))
        g.add_to_collection(_g.GraphKeys.REPLICA_SYNC, rec)
    else:
        rec = recs[0]
    if step is not None:
        rec.steps.add(step)


def _zeros_for(t: _g.Tensor, shape: Optional[List[int]]) -> Any:
    import numpy as np
    if shape is None:
        dims = t.shape.as_list() if t.shape.rank is not None else None
        if dims is None or any(d is None for d in dims):
            raise InvalidArgumentError(f"cannot make zero gradients for {t.name} of shape {t.shape}")
        shape = dims
    return np.zeros(shape, dtype=t.dtype.np)


DistributedOptimizer = SyncReplicasOptimizer
