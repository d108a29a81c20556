"""Sharded variables: tables whose rows are spread over the ranks (the parameter-server mode).

    emb = cf.train.sharded.get_variable("emb", shape=(vocab, dim), partitioner="mod")
    h = cf.train.sharded.embedding_lookup(emb, ids)          # routed to the owners (Alltoallv)
    opt = cf.train.sharded.ShardedSyncReplicasOptimizer(cf.train.AdamOptimizer(1e-3))
    train_op = opt.minimize(loss)   # shards: sparse pushes to owners; dense: fused all-reduce
    init = cf.global_variables_initializer()                 # also checks the ranks' layouts
    bcast = cf.train.sharded.broadcast_replicated_variables(0)
    # embedding_lookup_many(..., next_ids=...) + RoutePrefetch: the next batch's route rides in
    # this step's gradient push (one all-to-all a step fewer, the same parameters)

A `ShardedVariable` of shape (vocab,) + row_shape is split over the `num_shards` ranks of
its communicator with TensorFlow's partition strategies ("mod": row i on rank i % n;
"div": contiguous ranges); rank k holds only its shard, an ordinary cf.Variable named
"<name>/part_<k>" of shape (rows_k,) + row_shape.  Lookups are graph ops with asynchronous
collective kernels (collflow/graph/ops/ps_ops.py), and the gradient of a shard is the
IndexedSlices of the rows every rank pushed to it, already summed over ranks, so the owner
applies the wrapped optimizer's sparse update (SparseApply*: SGD, Adagrad, lazy Adam, ...)
once per step to its rows.  `ShardedSyncReplicasOptimizer` divides those by the number of
contributing ranks and sends every other gradient through SyncReplicasOptimizer's fused
all-reduce in the same step, so PS mode and all-reduce mode train the same parameters.

Shards and their optimizer slots differ between ranks: broadcasts, replica digests and the
rank-0 Saver must leave them out (`replicated_variables()`); collflow/train/
sharded_checkpoint.py saves every rank's shards with their row ranges, so a checkpoint
restores onto another number of ranks.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import dtypes as _dt
from ..comm import ps as _ps
from ..comm import ps_kernels as _ps_kernels  # noqa: F401  (registers the PS kernels)
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph import initializers as _inits
from ..graph.indexed_slices import IndexedSlices
from ..graph.variable_scope import get_variable, register_partitioned_factory  # noqa: F401 (cf.train.sharded.get_variable)
from ..graph.ops import array_ops, math_ops, ps_ops, random_ops
from ..graph.ops.constant_op import constant, identity
from ..graph.shape import TensorShape, as_shape
from ..graph.variables import Variable
from ..runtime.executor import needed_ops
from .sync_replicas import SyncReplicasOptimizer

__all__ = ["ShardedVariable", "RankPartitioner", "rank_partitioner", "get_variable", "embedding_lookup",
           "embedding_lookup_many", "RoutePrefetch",
           "is_shard_variable", "sharded_variable_of", "sharded_variables", "shard_state_variables",
           "replicated_variables", "sharded_gradient", "ShardedSyncReplicasOptimizer",
           "broadcast_replicated_variables", "SHARDED_VARIABLES"]

# graph collection of the ShardedVariable objects
SHARDED_VARIABLES = "sharded_variables"


class RankPartitioner:
    """Partitions a variable's rows over the ranks of a communicator ("mod" or "div")."""

    def __init__(self, strategy: str = "mod"):
        if strategy not in _ps.STRATEGIES:
            raise InvalidArgumentError(f"partition strategy must be one of {_ps.STRATEGIES}, got {strategy!r}")
        self.strategy = strategy

    def __repr__(self) -> str:
        return f"RankPartitioner({self.strategy!r})"


def rank_partitioner(strategy: str = "mod") -> RankPartitioner:
    """A partitioner for get_variable: one shard per rank, rows placed by `strategy`."""
    return RankPartitioner(strategy)


def _communicator(comm: Any) -> Any:
    if comm is not None:
        return comm
    from ..comm import get
    return get()


class ShardedVariable:
    """A table of shape (vocab,) + row_shape whose rows live on the ranks; this rank holds one shard.

    initializer: a NumPy array of the whole table (each rank keeps its rows: the same
    values under any number of ranks), a scalar, or an initializer `init(shape, dtype)` called
    with the shard's shape (a seeded one gets a different seed per shard); default uniform
    in [-0.05, 0.05).  partition_strategy: "mod" or "div".  comm: the communicator whose
    ranks hold the shards (default: the process's); num_shards/shard_index override it.
    """

    def __init__(self, name: str, shape: Any, dtype: Any = _dt.float32, initializer: Any = None,
                 partition_strategy: str = "mod", trainable: bool = True, comm: Any = None,
                 num_shards: Optional[int] = None, shard_index: Optional[int] = None):
        shp = as_shape(shape)
        if shp.rank is None or shp.rank < 1 or not shp.is_fully_defined():
            raise InvalidArgumentError(f"sharded variable {name!r} needs a fully known shape of rank >= 1, got {shp}")
        dt = _dt.as_dtype(dtype)
        if not dt.is_floating:
            raise InvalidArgumentError(f"sharded variable {name!r} must be floating point, got {dt.name}")
        if num_shards is None or shard_index is None:
            c = _communicator(comm)
            num_shards = c.size if num_shards is None else num_shards
            shard_index = c.rank if shard_index is None else shard_index
        g = _g.get_default_graph()
        full = g.unique_name(name)
        dims = [int(d) for d in shp.as_list()]
        self._layout = _ps.ShardLayout(full, dims[0], tuple(dims[1:]), dt.name, partition_strategy,
                                       int(num_shards), int(shard_index))
        self._name = full
        self._dtype = dt
        self._shape = shp
        self._graph = g
        lay = self._layout
        with g.name_scope(full + "/"):
            def init() -> _g.Tensor:
                value = _initial_value(lay, initializer, dt)
                # the ranks compare their layouts before the first step (in the initializer)
                chk = ps_ops.check_layout(lay, key=f"ps/{full}", name="check_layout")
                with g.control_dependencies([chk]):
                    return identity(value, name="checked")
            self._shard = Variable(init, trainable=trainable, name=f"part_{lay.shard_index}", dtype=dt)
        self._shard._sharded_variable = self  # type: ignore[attr-defined]
        g.add_to_collection(SHARDED_VARIABLES, self)

    # -- properties ------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def shape(self) -> TensorShape:
        """The whole table's shape."""
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def graph(self) -> _g.Graph:
        return self._graph

    @property
    def layout(self) -> _ps.ShardLayout:
        return self._layout

    @property
    def partition_strategy(self) -> str:
        return self._layout.strategy

    @property
    def num_shards(self) -> int:
        return self._layout.num_shards

    @property
    def shard_index(self) -> int:
        return self._layout.shard_index

    @property
    def shard(self) -> Variable:
        """This rank's shard: a cf.Variable of shape (rows,) + row_shape."""
        return self._shard

    @property
    def initializer(self) -> _g.Operation:
        return self._shard.initializer

    def owned_ids(self) -> np.ndarray:
        """The ids of this rank's rows, in the shard's row order."""
        return self._layout.global_ids()

    def lookup(self, ids: Any, name: Optional[str] = None) -> _g.Tensor:
        """Rows at `ids` (shape ids.shape + row_shape), fetched from their owners."""
        return embedding_lookup(self, ids, name=name)

    def _embedding_lookup(self, ids: Any, name: Optional[str] = None) -> _g.Tensor:
        # the hook cf.nn.embedding_lookup may call for objects that route their own lookups
        return embedding_lookup(self, ids, name=name)

    def _as_graph_element(self) -> Any:
        raise TypeError(
            f"sharded variable {self._name!r} has no value on one rank (each rank holds only its shard); "
            "read rows with cf.train.sharded.embedding_lookup(var, ids), or the shard with var.shard")

    def __repr__(self) -> str:
        return f"<cf.ShardedVariable {self._name!r} {self._layout.describe()}>"


def _no_dense_value(sv: ShardedVariable, dtype: Any = None) -> Any:
    return sv._as_graph_element()


_g.register_tensor_conversion(ShardedVariable, _no_dense_value)


def _initial_value(lay: _ps.ShardLayout, initializer: Any, dt: _dt.DType) -> _g.Tensor:
    shard_shape = list(lay.shard_shape)
    if initializer is None:
        return random_ops.random_uniform(shard_shape, -0.05, 0.05, dtype=dt)
    if isinstance(initializer, (_g.Tensor, Variable)):
        raise InvalidArgumentError(
            f"sharded variable {lay.name!r}: the initializer must be a NumPy array of the whole table, a scalar "
            "or an initializer function, not a Tensor (each rank builds only its rows)")
    if isinstance(initializer, (np.ndarray, list, tuple, int, float, np.number)):
        arr = np.asarray(initializer)
        if arr.ndim == 0:
            return array_ops.fill(shard_shape, constant(arr.item(), dtype=dt))
        if arr.shape != lay.shape:
            raise InvalidArgumentError(
                f"sharded variable {lay.name!r}: an initial value of shape {arr.shape} does not fill the table "
                f"of shape {lay.shape}")
        return constant(np.ascontiguousarray(arr[lay.global_ids()], dtype=dt.np))
    init = initializer
    if isinstance(init, str):
        init = _inits.get(init)
    if not callable(init):
        raise InvalidArgumentError(f"sharded variable {lay.name!r}: cannot use {initializer!r} as an initializer")
    seed = getattr(init, "seed", None)
    if seed is not None and lay.num_shards > 1:
        # the same seed on every shard would repeat the same rows on every rank
        init = copy.copy(init)
        init.seed = int(seed) + 1000003 * lay.shard_index
    return _g.convert_to_tensor(init(shard_shape, dt), dtype=dt)


def _partitioned(full: str, shp: Any, dt: _dt.DType, initializer: Any, partitioner: Any,
                 partition_strategy: Optional[str], trainable: bool, comm: Any) -> Optional[ShardedVariable]:
    """get_variable with a partitioner: a ShardedVariable over the ranks of `comm` (None: one
    partition, a plain variable).

    partitioner: "mod" or "div"; `rank_partitioner(strategy)`; or TensorFlow's form, a
    callable (shape, dtype) -> partitions per axis (tf.fixed_size_partitioner, ...), whose
    first entry must be 1 or the number of ranks (strategy from `partition_strategy`,
    default "mod").
    """
    strategy = partition_strategy or "mod"
    if isinstance(partitioner, str):
        strategy = partitioner
    elif isinstance(partitioner, RankPartitioner):
        strategy = partitioner.strategy
    elif callable(partitioner):
        parts = list(partitioner(shp, dt))
        if parts and all(int(p) == 1 for p in parts):
            return None
        n = _communicator(comm).size
        if not parts or int(parts[0]) != n or any(int(p) != 1 for p in parts[1:]):
            raise InvalidArgumentError(
                f"get_variable {full!r}: collflow shards a variable over the ranks along axis 0, so the partitioner "
                f"must return [{n}, 1, ...] (one shard per rank) or one partition; it returned {parts} (TF1's "
                f"partitioned variables of several parts in one process are not implemented)")
    else:
        raise InvalidArgumentError(f"get_variable {full!r}: cannot use {partitioner!r} as a partitioner; "
                                   "use 'mod', 'div' or cf.train.sharded.rank_partitioner(...)")
    if shp is None:
        raise InvalidArgumentError(f"get_variable {full!r}: a partitioned variable needs a shape")
    return ShardedVariable(full, shp, dt, initializer, strategy, trainable, comm)


register_partitioned_factory(_partitioned)


# -- lookups ---------------------------------------------------------------------------------------


def embedding_lookup(params: Any, ids: Any, name: Optional[str] = None, **kwargs: Any) -> _g.Tensor:
    """Rows of `params` at `ids`: routed to their owners for a ShardedVariable, else cf.nn's lookup.

    The result has shape ids.shape + row_shape.  Ids outside [0, vocab) raise on every rank,
    naming the variable and the id.
    """
    if not isinstance(params, ShardedVariable):
        from ..graph.ops import nn_ops
        return nn_ops.embedding_lookup(params, ids, name=name, **kwargs)
    sv = params
    g = sv.graph
    lay = sv.layout
    with g.as_default(), g.name_scope(name or "embedding_lookup"):
        ids_t = _ids_tensor(g, ids, sv, "embedding_lookup")
        routed = _route_for(g, ids_t, sv)
        return ps_ops.gather(sv.shard.value(), routed, ids_t, lay, key=f"ps/{sv.name}", name="gather")


def embedding_lookup_many(params: Sequence[Any], ids: Any, name: Optional[str] = None,
                          next_ids: Any = None) -> List[_g.Tensor]:
    """[embedding_lookup(p, ids) for p in params], with the sharded tables that are split alike
    and share a dtype looked up together: one route, one exchange of their rows (PSGatherN)
    and, for their gradients, one exchange back (PSPushN), instead of one pair per table.

    Values and gradients are those of separate lookups; a table no loss reads gets no gradient.
    next_ids (a tensor fed with the NEXT step's ids): the gradient's exchange also routes
    them, so with `RoutePrefetch` feeding that route back at the next run a training step makes
    one exchange fewer (the route's); the results are the same.
    """
    params = list(params)
    out: List[Optional[_g.Tensor]] = [None] * len(params)
    groups: Dict[tuple, List[int]] = {}
    for i, p in enumerate(params):
        if isinstance(p, ShardedVariable):
            # the tables that share a route (and a dtype, for one exchange buffer)
            groups.setdefault(_route_key(p.layout) + (p.layout.dtype, id(p.graph)), []).append(i)
    for members in groups.values():
        if len(members) < 2 and next_ids is None:
            continue
        svs = [params[i] for i in members]
        g = svs[0].graph
        with g.as_default(), g.name_scope(name or "embedding_lookup"):
            ids_t = _ids_tensor(g, ids, svs[0], "embedding_lookup_many")
            nxt = _ids_tensor(g, next_ids, svs[0], "embedding_lookup_many (next_ids)") if next_ids is not None else None
            routed = None
            for sv in svs:
                routed = _route_for(g, ids_t, sv)
            vals = ps_ops.gather_many([sv.shard.value() for sv in svs], routed, ids_t, [sv.layout for sv in svs],
                                      key="ps/" + "+".join(sv.name for sv in svs), name="gather", next_ids=nxt)
        for i, v in zip(members, vals):
            out[i] = v
    for i, p in enumerate(params):
        if out[i] is None:
            out[i] = embedding_lookup(p, ids, name=name)
    return out  # type: ignore[return-value]


class RoutePrefetch:
    """Feeds each run the parameter-server routes that the run before computed for its ids.

        e, w = cf.train.sharded.embedding_lookup_many([deep, wide], ids, next_ids=next_ids)
        ...                                        # loss, train_op (the gradients) as usual
        pf = cf.train.sharded.RoutePrefetch(train_op=train_op)
        for batch, following in pairs_of_batches:   # following: the next step's ids
            out = sess.run([loss, train_op] + pf.fetches, pf.feed({ids: batch, next_ids: following}))
            pf.update(out[2:])

    The route of a batch's ids (which rank owns which row: PSRoute, an all-to-all) does not
    read the tables, so it rides in the previous step's gradient push; fed back, it spares
    each step that exchange.  A run whose ids are not the ones routed the run before (the
    first run, or after `reset()`) routes them itself, with the same results.  Every rank
    must feed alike: the ranks' collectives follow their feeds.
    """

    def __init__(self, graph: Optional[_g.Graph] = None, train_op: Any = None):
        """train_op: the op (or tensor) each run computes; only the pushes it runs carry routes
        worth fetching (without it: the first gradient built of each lookup)."""
        g = graph if graph is not None else _g.get_default_graph()
        pairs = list(g.get_collection(ps_ops.PS_ROUTE_PREFETCH))
        if train_op is not None:
            needed = needed_ops([], [getattr(train_op, "op", train_op)], set())
            pairs = [p for p in pairs if p.next[0].op in needed]
        else:  # a second gradient of the same lookup would push (and route) again each run
            first: Dict[int, Any] = {}
            for p in pairs:
                first.setdefault(id(p.now[0]), p)
            pairs = list(first.values())
        self._pairs = pairs
        if not self._pairs:
            raise InvalidArgumentError("RoutePrefetch: this graph has no embedding_lookup_many(..., next_ids=...) "
                                       "whose gradient is built" + (" and run by train_op" if train_op is not None
                                                                    else ""))
        self._pending: Optional[tuple] = None  # (fetched next routes, the next ids they route)
        self._asked: Optional[list] = None

    @property
    def fetches(self) -> List[_g.Tensor]:
        """The tensors to fetch with each training run (the next step's routes)."""
        return [t for p in self._pairs for t in p.next]

    def feed(self, feed_dict: Dict[Any, Any]) -> Dict[Any, Any]:
        """`feed_dict` plus the routes the last run computed, when they route this run's ids.
        The dict must feed every prefetching lookup's ids and next ids."""
        fd = dict(feed_dict)
        for p in self._pairs:
            for t, what in ((p.ids, "ids"), (p.next_ids, "next ids")):
                if t not in fd:
                    raise InvalidArgumentError(f"RoutePrefetch.feed: feed the lookup's {what} ({t.name})")
        if self._pending is not None:
            values, routed_ids = self._pending
            if all(np.array_equal(np.asarray(fd[p.ids]), r) for p, r in zip(self._pairs, routed_ids)):
                for j, p in enumerate(self._pairs):
                    fd.update(zip(p.now, values[4 * j:4 * j + 4]))
        self._asked = [np.array(fd[p.next_ids], copy=True) for p in self._pairs]
        self._pending = None
        return fd

    def update(self, fetched: Sequence[Any]) -> None:
        """Keeps the routes just fetched (the values of `fetches`) for the next `feed`."""
        if self._asked is None or len(fetched) != 4 * len(self._pairs):
            raise InvalidArgumentError(f"RoutePrefetch.update: pass the {4 * len(self._pairs)} values of "
                                       f"`fetches` from a run fed by feed()")
        self._pending = (list(fetched), self._asked)
        self._asked = None

    def reset(self) -> None:
        """Forgets the kept routes: the next run routes its ids itself."""
        self._pending = self._asked = None


def _ids_tensor(g: _g.Graph, ids: Any, sv: ShardedVariable, what: str) -> _g.Tensor:
    """`ids` as a tensor of `g`, checked to be integers (the error names `what` and the table)."""
    ids_t = _g.convert_to_tensor(ids)
    if ids_t.graph is not g:
        raise InvalidArgumentError(f"{what}: ids {ids_t.name} belong to another graph than {sv.name!r}")
    if not ids_t.dtype.is_integer:
        raise InvalidArgumentError(f"{what} on {sv.name!r}: ids must be integers, got {ids_t.dtype.name}")
    return ids_t


def _route_key(lay: _ps.ShardLayout) -> tuple:
    """What a route depends on besides the ids: the partitioning."""
    return (lay.vocab, lay.strategy, lay.num_shards, lay.shard_index)


def _route_for(g: _g.Graph, ids: _g.Tensor, sv: ShardedVariable) -> tuple:
    """One PSRoute per (ids, partitioning): tables split alike share their routes."""
    lay = sv.layout
    cache_key = ("ps_route", ids) + _route_key(lay)
    in_cf = g._get_control_flow_context() is not None
    hit = None if in_cf else g._aux.get(cache_key)
    if hit is not None:
        op = hit[0].op
        if sv.name not in op.attrs["names"]:
            op.attrs["names"] = tuple(op.attrs["names"]) + (sv.name,)
        return hit
    with g.control_dependencies(None) if not in_cf else _nullcontext():
        routed = ps_ops.route(ids, lay, key="", names=(sv.name,), name="route")
    routed[0].op.attrs["key"] = "ps/" + routed[0].op.name  # derived from the graph: equal on every rank
    if not in_cf:
        g._aux[cache_key] = routed
    return routed


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


# -- which variables are shards ------------------------------------------------------------------


def sharded_variable_of(v: Any) -> Optional[ShardedVariable]:
    """The ShardedVariable whose shard `v` is, or None."""
    return getattr(v, "_sharded_variable", None)


def is_shard_variable(v: Any) -> bool:
    """Whether `v` is this rank's shard of a ShardedVariable."""
    return sharded_variable_of(v) is not None


def sharded_variables(graph: Optional[_g.Graph] = None) -> List[ShardedVariable]:
    g = graph or _g.get_default_graph()
    return list(g.get_collection(SHARDED_VARIABLES))


def shard_state_variables(graph: Optional[_g.Graph] = None) -> Dict[str, Tuple[ShardedVariable, Variable]]:
    """{logical name: (ShardedVariable, Variable)} of every per-rank piece of state.

    The shard itself is "<name>"; an optimizer slot "<name>/part_<k>/Adam_1" of it (slots are
    named after their variable and shaped like it) is "<name>/Adam_1", a name that does not
    depend on the number of ranks.
    """
    g = graph or _g.get_default_graph()
    out: Dict[str, Tuple[ShardedVariable, Variable]] = {}
    svs = sharded_variables(g)
    prefixes = {sv.shard.op.name + "/": sv for sv in svs}
    for sv in svs:
        out[sv.name] = (sv, sv.shard)
    for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES):
        if is_shard_variable(v):
            continue
        for pre, sv in prefixes.items():
            if v.op.name.startswith(pre) and v.shape.is_compatible_with(sv.shard.shape) \
                    and v.shape.rank == sv.shard.shape.rank:
                out[sv.name + "/" + v.op.name[len(pre):]] = (sv, v)
                break
    return out


def replicated_variables(graph: Optional[_g.Graph] = None) -> List[Variable]:
    """The global variables every rank holds in full (all but the shards and their slots).

    Pass these to broadcast_global_variables, replica_digest / check_replicas_identical and
    the rank-0 Saver.
    """
    g = graph or _g.get_default_graph()
    per_rank = {id(v) for _, v in shard_state_variables(g).values()}
    return [v for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES) if id(v) not in per_rank]


def broadcast_replicated_variables(root_rank: int = 0, name: str = "broadcast_variables") -> _g.Operation:
    """broadcast_global_variables of the replicated variables only (shards stay where they are)."""
    from .distributed import broadcast_global_variables
    return broadcast_global_variables(root_rank, var_list=replicated_variables(), name=name)


# -- optimizer integration -----------------------------------------------------------------------------


def sharded_gradient(grad: Any, var: Variable, average: bool = True) -> IndexedSlices:
    """The gradient of a shard as its owner applies it.

    The PS push already summed every rank's rows for this shard; with `average` they are
    divided by the number of ranks that contributed (as all-reduce mode averages).
    """
    if grad is None:
        return grad
    if not isinstance(grad, IndexedSlices):
        raise InvalidArgumentError(
            f"the gradient of shard {var.op.name!r} must be the IndexedSlices of its embedding lookups; got a dense "
            f"{grad!r} (was the shard read directly instead of through cf.train.sharded.embedding_lookup?)")
    if not average:
        return grad
    count = ps_ops.push_count(grad.values)
    if count is None:
        raise InvalidArgumentError(
            f"the gradient of shard {var.op.name!r} does not come from a PS push (PSPush); read sharded "
            "variables through cf.train.sharded.embedding_lookup")
    g = var.graph
    with g.as_default(), g.name_scope("average_" + var.op.name.replace("/", "_")):
        vals = grad.values / math_ops.maximum(count, 1.0)
    return IndexedSlices(vals, grad.indices, grad.dense_shape, grad._static_shape)


def split_sharded(grads_and_vars: Sequence[Tuple[Any, Variable]]) -> Tuple[List[int], List[Tuple[Any, Variable]]]:
    """(positions of shard gradients, the pairs with those gradients replaced by None)."""
    pairs = list(grads_and_vars)
    idx = [i for i, (gr, v) in enumerate(pairs) if gr is not None and is_shard_variable(v)]
    s = set(idx)
    return idx, [(None, v) if i in s else (gr, v) for i, (gr, v) in enumerate(pairs)]


class ShardedSyncReplicasOptimizer(SyncReplicasOptimizer):
    """SyncReplicasOptimizer for models with sharded variables (the hybrid PS + all-reduce step).

    Shards' gradients arrive at their owners through the PS push of the backward pass and are
    averaged over the contributing ranks; every other gradient goes through the fused
    all-reduce (or sparse allgather) as in SyncReplicasOptimizer, in the same step.  Takes the
    same arguments.
    """

    def reduce_gradients(self, grads_and_vars: Sequence[Tuple[Any, Variable]],
                         average: Optional[bool] = None) -> List[Tuple[Any, Variable]]:
        idx, rest = split_sharded(grads_and_vars)
        out = super().reduce_gradients(rest, average)
        pairs = list(grads_and_vars)
        for i in idx:
            gr, v = pairs[i]
            out[i] = (sharded_gradient(gr, v, self._average), v)
        return out
