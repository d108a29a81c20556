"""wide_deep: a click-through-rate model with large sparse embeddings, and synthetic click data.

The model (Cheng et al., "Wide & Deep Learning", 2016, in the shape used by CTR benchmarks):

  ids     [batch, num_fields] int64     categorical features, one id per field (shared vocab)
  dense   [batch, num_dense]            numeric features
  deep    = MLP(concat(flatten(embedding[ids]), dense))        -> [batch]
  wide    = sum over fields of wide_weight[ids] + bias          -> [batch]
  loss    = mean sigmoid cross-entropy(labels, deep + wide)

Both tables (`embedding` [vocab, dim] and `wide` [vocab, 1]) are cf.nn.Embedding layers in
mode "ps" (rows sharded over the ranks; both tables share one route and one Alltoallv each way)
or "allreduce" (replicated; sparse gradients allgathered, or all-reduced densely).  Dense
layers always go through the fused all-reduce.

`ClickData` draws ids from a Zipf distribution over the vocabulary (rank k has probability
proportional to k^-s; ranks are scattered over the ids by a fixed permutation, each field
offset so fields differ) and labels from a hidden logistic model: every id has a random
effect and the numeric features a random weight vector, so the loss can fall well below
log(2) by learning the effects of frequent ids.  A global batch depends only on (seed, step),
so N ranks taking slices of it see the same data as one process taking all of it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.ops import array_ops, constant_op, math_ops, nn_ops
from ..graph.variables import Variable, global_variables_initializer

__all__ = ["ClickData", "WideDeep", "build_wide_deep", "MODES"]

MODES = ("allreduce", "ps")
# tables up to this many elements start from NumPy arrays (identical in both modes);
# larger ones from a random op (no table-sized constant in the graph)
EXACT_INIT_MAX = 1 << 22


class ClickData:
    """Synthetic click logs with Zipf-distributed ids and a learnable signal (see the module doc)."""

    def __init__(self, vocab_size: int, num_fields: int = 8, num_dense: int = 4, zipf_exponent: float = 1.1,
                 seed: int = 0, dtype: Any = np.float32, signal: float = 1.5):
        if vocab_size < 1 or num_fields < 1 or num_dense < 0:
            raise InvalidArgumentError(f"ClickData needs vocab_size, num_fields >= 1 and num_dense >= 0, got "
                                       f"{vocab_size}, {num_fields}, {num_dense}")
        if zipf_exponent < 0:
            raise InvalidArgumentError(f"zipf_exponent must be >= 0, got {zipf_exponent}")
        self.vocab_size, self.num_fields, self.num_dense = int(vocab_size), int(num_fields), int(num_dense)
        self.zipf_exponent = float(zipf_exponent)
        self.seed = int(seed)
        self.dtype = np.dtype(dtype)
        rng = np.random.default_rng([self.seed, 7])
        v = self.vocab_size
        self.effects = (rng.standard_normal(v) * signal).astype(np.float32)
        self.dense_weights = rng.standard_normal(self.num_dense).astype(np.float32) * 0.5
        self.perm = rng.permutation(v).astype(np.int64)
        p = np.arange(1, v + 1, dtype=np.float64) ** -self.zipf_exponent
        self.cdf = np.cumsum(p)
        self.cdf /= self.cdf[-1]
        self.offsets = (np.arange(self.num_fields, dtype=np.int64) * (v // self.num_fields)) % v

    def global_batch(self, step: int, size: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids [size, fields] int64, dense [size, num_dense], labels [size]) of step `step`."""
        rng = np.random.default_rng([self.seed, 11, int(step)])
        ranks = np.searchsorted(self.cdf, rng.random((size, self.num_fields)), side="right")
        np.minimum(ranks, self.vocab_size - 1, out=ranks)
        ids = self.perm[(ranks + self.offsets) % self.vocab_size]
        dense = rng.standard_normal((size, self.num_dense))
        logit = self.effects[ids].sum(axis=1) / math.sqrt(self.num_fields) + dense @ self.dense_weights
        labels = (rng.random(size) < 1.0 / (1.0 + np.exp(-logit))).astype(self.dtype)
        return ids, dense.astype(self.dtype), labels

    def batch(self, step: int, rank: int, size: int, per_rank: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rank `rank`'s slice (per_rank examples) of step `step`'s global batch of size * per_rank."""
        ids, dense, labels = self.global_batch(step, per_rank * size)
        sl = slice(rank * per_rank, (rank + 1) * per_rank)
        return ids[sl], dense[sl], labels[sl]

    def fraction_touched(self, step: int, global_batch: int) -> float:
        """Fraction of the vocabulary's rows that step's global batch looks up."""
        ids, _, _ = self.global_batch(step, global_batch)
        return float(np.unique(ids).shape[0]) / self.vocab_size


@dataclass
class WideDeep:
    """Handles of a built wide_deep model (see build_wide_deep)."""

    graph: _g.Graph
    mode: str
    ids: _g.Tensor
    dense: _g.Tensor
    labels: _g.Tensor
    logits: _g.Tensor
    loss: _g.Tensor
    train_op: Optional[_g.Operation]
    init_op: _g.Operation
    bcast_op: Optional[_g.Operation]
    global_step: Optional[Variable]
    deep_table: Any
    wide_table: Any
    optimizer: Any
    data: ClickData
    batch_size: int
    rank: int = 0
    size: int = 1
    dense_variables: List[Variable] = field(default_factory=list)
    next_ids: Optional[_g.Tensor] = None  # with prefetch_routes: fed the next step's ids

    def feed(self, batch: Tuple[np.ndarray, np.ndarray, np.ndarray]) -> Dict[_g.Tensor, np.ndarray]:
        ids, dense, labels = batch
        return {self.ids: ids, self.dense: dense, self.labels: labels}

    def batches(self, steps: Optional[int] = None, start: int = 0) -> Iterator[Dict[_g.Tensor, np.ndarray]]:
        """Feed dicts of this rank's slices of steps start, start+1, ... (forever when steps is
        None); with prefetch_routes each also feeds next_ids with the following step's ids."""
        k = start
        while steps is None or k < start + steps:
            fd = self.feed(self.data.batch(k, self.rank, self.size, self.batch_size))
            if self.next_ids is not None:
                fd[self.next_ids] = self.data.batch(k + 1, self.rank, self.size, self.batch_size)[0]
            yield fd
            k += 1

    def variables(self) -> List[Any]:
        """Trainable state this rank holds, for inspection: dense layers, then the tables' local parts."""
        out: List[Any] = list(self.dense_variables)
        for t in (self.deep_table, self.wide_table):
            out.append(t.shard if hasattr(t, "shard") else t)
        return out


def _glorot(rng: np.random.Generator, fan_in: int, fan_out: int, dtype: Any) -> np.ndarray:
    lim = math.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-lim, lim, size=(fan_in, fan_out)).astype(dtype)


def build_wide_deep(vocab_size: int = 100_000, embedding_dim: int = 16, mode: str = "ps", num_fields: int = 8,
                    num_dense: int = 4, hidden: Sequence[int] = (64, 32), optimizer: Any = "adam",
                    learning_rate: Optional[float] = None, dtype: Any = _dt.float32,
                    partition_strategy: str = "mod", comm: Any = None, sync: Optional[bool] = None,
                    sparse_as_dense: bool = False, batch_size: int = 256, zipf_exponent: float = 1.1,
                    seed: int = 0, data_seed: Optional[int] = None, exact_init: Optional[bool] = None,
                    fusion_threshold_bytes: Optional[int] = None, graph: Optional[_g.Graph] = None,
                    fuse_lookups: bool = True, prefetch_routes: bool = False) -> WideDeep:
    """Builds wide_deep in a new graph (or `graph`) and returns its handles and data.

    mode: "ps" (tables sharded over the ranks of `comm`) or "allreduce" (replicated).
    fuse_lookups: in "ps" mode, the two tables' rows (and gradients) travel in one exchange
    each way (embedding_lookup_many); False looks them up one by one (for comparison).
    prefetch_routes: in "ps" mode, the next step's route rides in this step's gradient push
    (`next_ids`, fed by `batches()`; run with cf.train.sharded.RoutePrefetch).
    optimizer: a name ("sgd", "adam" = LazyAdamOptimizer here, "adagrad", "momentum", "rmsprop") or a cf.train
    Optimizer.  comm: the communicator (default: the process's).  sync: wrap the optimizer in
    ShardedSyncReplicasOptimizer (default: when there is more than one rank).
    sparse_as_dense: in "allreduce" mode, all-reduce the tables' gradients as dense tensors
    (the classic dense all-reduce) instead of allgathering their rows.  batch_size: examples
    per rank per step.  The data iterator (`model.batches()`) yields this rank's slices of
    global batches drawn from ClickData(vocab_size, num_fields, num_dense, zipf_exponent).
    Weights start from NumPy draws of `seed` (tables too, up to EXACT_INIT_MAX elements), so
    both modes and any number of ranks start from the same parameters.
    """
    from .. import models as _models
    from ..nn.embedding_ps import Embedding
    from ..train import sharded as _sharded
    from ..train.global_step import get_or_create_global_step
    from ..train.optimizer import Optimizer

    if mode not in MODES:
        raise InvalidArgumentError(f"wide_deep mode must be one of {MODES}, got {mode!r}")
    if comm is None:
        from ..comm import get
        comm = get()
    dt = _dt.as_dtype(dtype)
    npdt = dt.np
    if sync is None:
        sync = comm.size > 1
    if exact_init is None:
        exact_init = vocab_size * embedding_dim <= EXACT_INIT_MAX
    g = graph if graph is not None else _g.Graph()
    rng = np.random.default_rng([seed, 3])
    with g.as_default():
        ids = constant_op.placeholder(_dt.int64, (None, num_fields), name="ids")
        dense = constant_op.placeholder(dt, (None, num_dense), name="dense")
        labels = constant_op.placeholder(dt, (None,), name="labels")
        if exact_init:
            deep_init: Any = rng.uniform(-0.05, 0.05, size=(vocab_size, embedding_dim)).astype(npdt)
        else:
            from ..graph.initializers import RandomUniform
            deep_init = RandomUniform(-0.05, 0.05, seed=seed)
        deep_emb = Embedding(vocab_size, embedding_dim, mode, deep_init, dt, partition_strategy, comm=comm,
                             name="embedding")
        wide_emb = Embedding(vocab_size, 1, mode, 0.0, dt, partition_strategy, comm=comm, name="wide")
        dense_vars: List[Variable] = []
        # both tables at the same ids: in "ps" mode one route and one exchange each way for both
        next_ids = None
        if prefetch_routes and mode == "ps":
            next_ids = constant_op.placeholder(_dt.int64, (None, num_fields), name="next_ids")
        if fuse_lookups or next_ids is not None:
            e, wide_rows = _sharded.embedding_lookup_many([deep_emb.table, wide_emb.table], ids, next_ids=next_ids)
        else:
            e, wide_rows = deep_emb(ids), wide_emb(ids)
        with g.name_scope("deep"):
            # e: [b, fields, dim]
            x = array_ops.reshape(e, [-1, num_fields * embedding_dim])
            if num_dense:
                x = array_ops.concat([x, dense], 1)
            width = num_fields * embedding_dim + num_dense
            for i, h in enumerate(list(hidden) + [1]):
                w = Variable(_glorot(rng, width, h, npdt), name=f"w{i}")
                b = Variable(np.zeros(h, dtype=npdt), name=f"b{i}")
                dense_vars += [w, b]
                x = math_ops.matmul(x, w) + b
                if i < len(hidden):
                    x = nn_ops.relu(x)
                width = h
            deep_logit = array_ops.reshape(x, [-1])
        with g.name_scope("wide"):
            wsum = math_ops.reduce_sum(wide_rows, axis=[1, 2])
            wbias = Variable(np.zeros((), dtype=npdt), name="bias")
            dense_vars.append(wbias)
        logits = deep_logit + wsum + wbias
        loss = math_ops.reduce_mean(nn_ops.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits),
                                    name="loss")
        # "adam" on embedding tables is LazyAdam, as TF1 recommenders use (tf.contrib.opt): TF1's
        # AdamOptimizer would move all vocab_size rows of both tables every step
        opt = optimizer if isinstance(optimizer, Optimizer) else _models.make_optimizer(optimizer, learning_rate,
                                                                                        sparse=True)
        if sync:
            kw: Dict[str, Any] = {}
            if fusion_threshold_bytes is not None:
                kw["fusion_threshold_bytes"] = int(fusion_threshold_bytes)
            opt = _sharded.ShardedSyncReplicasOptimizer(opt, comm=comm, sparse_as_dense=sparse_as_dense, **kw)
        gstep = get_or_create_global_step(g)
        train_op = opt.minimize(loss, global_step=gstep)
        init = global_variables_initializer()
        bcast = _sharded.broadcast_replicated_variables(0) if sync else None
    data = ClickData(vocab_size, num_fields, num_dense, zipf_exponent, seed if data_seed is None else data_seed,
                     npdt)
    return WideDeep(g, mode, ids, dense, labels, logits, loss, train_op, init, bcast, gstep, deep_emb.table,
                    wide_emb.table, opt, data, int(batch_size), comm.rank, comm.size, dense_vars, next_ids)
