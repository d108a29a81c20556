"""tf.distribute's contexts for TF 1.x graph mode: strategies whose replicas are MPI ranks.

TF 1.x's `tf.distribute.Strategy` runs one replica per device of one process (or per worker
with MultiWorkerMirroredStrategy).  collflow runs one replica per rank: every rank builds the
same graph, so "the replica" a rank builds is its own, and what TF does across replicas
(summing gradients, `strategy.reduce`, `ReplicaContext.all_reduce`) is a collective over the
ranks.  Started with `mpirun -np N`, a program gets N replicas; started alone, one, as TF's
MirroredStrategy on a machine with one device.

The contexts follow TF's rules (kept per graph, as TF keeps them):
  * outside any `strategy.scope()`: the default strategy and a default replica context;
  * inside `scope()`: the cross-replica context (`get_replica_context()` is None);
  * inside `strategy.run(fn)` / `extended.call_for_each_replica`: a replica context, in which
    a v1 optimizer's `apply_gradients` sums the gradients over the replicas
    (`merge_call` -> `batch_reduce_to(SUM)`), and, under an Estimator, `compute_gradients`
    first divides a mean-reduced loss by the number of replicas (TF's get_loss_reduction).
This module is the contexts and the base classes; distribute_strategies.py has the strategies.
"""
from __future__ import annotations

import contextlib
import enum
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph import nest
from ..graph.ops import array_ops, math_ops
from ..graph.ops.collective_ops import all_reduce as _all_reduce
from ..graph.ops.constant_op import constant, group, identity

__all__ = ["ReduceOp", "InputContext", "InputReplicationMode", "Strategy", "StrategyExtended", "ReplicaContext",
           "get_strategy", "has_strategy", "in_cross_replica_context", "get_replica_context",
           "get_cross_replica_context", "get_loss_reduction", "experimental_set_strategy"]


class ReduceOp(enum.Enum):
    """How values of the replicas are combined: their SUM or their MEAN."""
    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation: Any) -> "ReduceOp":
        """The ReduceOp of a tf.VariableAggregation (SUM or MEAN)."""
        name = getattr(aggregation, "name", str(aggregation)).upper()
        if name.endswith("SUM"):
            return ReduceOp.SUM
        if name.endswith("MEAN"):
            return ReduceOp.MEAN
        raise ValueError(f"Could not convert from `tf.VariableAggregation` {aggregation} to `tf.distribute.ReduceOp` "
                         "type")


class InputReplicationMode(enum.Enum):
    """How input functions are replicated: one pipeline per worker (TF's only mode)."""
    PER_WORKER = "PER_WORKER"


class InputContext:
    """What an input function is told: how many input pipelines there are, which one it builds,
    and how many replicas take part in each step."""

    def __init__(self, num_input_pipelines: int = 1, input_pipeline_id: int = 0, num_replicas_in_sync: int = 1):
        self._num_input_pipelines = int(num_input_pipelines)
        self._input_pipeline_id = int(input_pipeline_id)
        self._num_replicas_in_sync = int(num_replicas_in_sync)

    @property
    def num_replicas_in_sync(self) -> int:
        return self._num_replicas_in_sync

    @property
    def input_pipeline_id(self) -> int:
        return self._input_pipeline_id

    @property
    def num_input_pipelines(self) -> int:
        return self._num_input_pipelines

    def get_per_replica_batch_size(self, global_batch_size: int) -> int:
        """global_batch_size / num_replicas_in_sync (TF's ValueError when it does not divide)."""
        if global_batch_size % self._num_replicas_in_sync != 0:
            raise ValueError(f"The `global_batch_size` {global_batch_size!r} is not divisible by "
                             f"`num_replicas_in_sync` {self._num_replicas_in_sync!r}")
        return global_batch_size // self._num_replicas_in_sync

    def __str__(self) -> str:
        return (f"tf.distribute.InputContext(input pipeline id {self._input_pipeline_id}, "
                f"total: {self._num_input_pipelines})")


# -- the per-graph context stack ------------------------------------------------------------------

class _Context:
    __slots__ = ("strategy", "replica_context", "scoped")

    def __init__(self, strategy: "Strategy", replica_context: Optional["ReplicaContext"], scoped: bool):
        self.strategy = strategy
        self.replica_context = replica_context   # None: the cross-replica context
        self.scoped = scoped                      # pushed by Strategy.scope()


def _stack(g: Optional[_g.Graph] = None) -> List[_Context]:
    """The graph's strategy contexts on this thread (TF keeps them per graph and thread)."""
    return (g or _g.get_default_graph())._stack("distribution")


def _top() -> Optional[_Context]:
    st = _stack()
    return st[-1] if st else None


@contextlib.contextmanager
def _push(ctx: _Context) -> Iterator[None]:
    st = _stack()
    st.append(ctx)
    try:
        yield
    finally:
        if st and st[-1] is ctx:
            st.pop()
        else:  # a scope left out of order: drop ours wherever it is
            st.remove(ctx) if ctx in st else None


def get_strategy() -> "Strategy":
    """The strategy of the innermost scope, or the default strategy (one replica)."""
    top = _top()
    return top.strategy if top is not None else _default_strategy()


def has_strategy() -> bool:
    """True inside a (non-default) strategy's scope or replica context."""
    top = _top()
    return top is not None and not isinstance(top.strategy, _DefaultStrategy)


def in_cross_replica_context() -> bool:
    """True inside `strategy.scope()` and outside any replica function."""
    top = _top()
    return top is not None and top.replica_context is None


def get_replica_context() -> Optional["ReplicaContext"]:
    """The replica context: None in a cross-replica context; the default one outside any scope."""
    top = _top()
    if top is None:
        return _default_strategy()._default_replica
    return top.replica_context


def get_cross_replica_context() -> Optional["Strategy"]:
    """The strategy in a cross-replica context; None in a replica context."""
    top = _top()
    if top is None:
        return _default_strategy()
    return top.strategy if top.replica_context is None else None


def get_loss_reduction() -> ReduceOp:
    """TF's rule for the v1 optimizer's loss scaling, used only under an Estimator: MEAN unless
    the last tf.losses reduction was SUM."""
    if not getattr(get_strategy(), "_scale_loss_for_estimator", False):
        return ReduceOp.SUM
    last = _g.get_default_graph().__dict__.get("_last_loss_reduction")
    # tf.losses.Reduction.SUM is "weighted_sum"; Keras's is "sum"
    if last is not None and str(getattr(last, "value", last)).lower() in ("weighted_sum", "sum"):
        return ReduceOp.SUM
    return ReduceOp.MEAN


def experimental_set_strategy(strategy: Optional["Strategy"]) -> None:
    """Makes `strategy` the graph's strategy outside any other scope (None removes it)."""
    st = _stack()
    st[:] = [c for c in st if c.scoped != "global"]
    if strategy is not None:
        st.insert(0, _Context(strategy, None, "global"))  # type: ignore[arg-type]


# -- reductions over the replicas (ranks) ------------------------------------------------------------

def _num_ranks() -> int:
    from .. import comm as _comm
    if not _comm.is_initialized():
        _comm.init()
    return _comm.size()


def _this_rank() -> int:
    from .. import comm as _comm
    if not _comm.is_initialized():
        _comm.init()
    return _comm.rank()


def _reduce_value(reduce_op: ReduceOp, value: Any, num_replicas: int) -> Any:
    """One tensor (or IndexedSlices, densified) combined over the replicas."""
    reduce_op = _as_reduce_op(reduce_op)
    if value is None:
        return None
    value = _g.convert_to_tensor(value)
    if num_replicas <= 1:
        return identity(value)
    out = _all_reduce(value, op="sum")
    if reduce_op is ReduceOp.MEAN:
        out = out / constant(float(num_replicas), dtype=out.dtype) if out.dtype.is_floating \
            else out // constant(num_replicas, dtype=out.dtype)
    return out


def _as_reduce_op(op: Any) -> ReduceOp:
    if isinstance(op, ReduceOp):
        return op
    if isinstance(op, str) and op.upper() in ("SUM", "MEAN"):
        return ReduceOp[op.upper()]
    raise ValueError(f"reduce_op must be a tf.distribute.ReduceOp (SUM or MEAN), got {op!r}")


# -- the base classes -------------------------------------------------------------------------------

class ReplicaContext:
    """What a replica function sees: its strategy, its id, merge_call and all_reduce."""

    def __init__(self, strategy: "Strategy", replica_id_in_sync_group: Any):
        self._strategy = strategy
        self._replica_id = replica_id_in_sync_group

    @property
    def strategy(self) -> "Strategy":
        return self._strategy

    @property
    def num_replicas_in_sync(self) -> int:
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self) -> _g.Tensor:
        """This replica's index (this rank's, for collflow's strategies), an int32 tensor."""
        return constant(int(self._replica_id), dtype=_dt.int32)

    @property
    def devices(self) -> Tuple[str, ...]:
        return self._strategy.extended.worker_devices[:1]

    def merge_call(self, merge_fn: Callable, args: Sequence[Any] = (), kwargs: Optional[Dict[str, Any]] = None) -> Any:
        """merge_fn(strategy, *args, **kwargs) in the cross-replica context."""
        with _push(_Context(self._strategy, None, False)):
            return merge_fn(self._strategy, *args, **(kwargs or {}))

    def all_reduce(self, reduce_op: Any, value: Any) -> Any:
        """`value` (a nest of tensors) combined over every replica."""
        flat = nest.flatten(value)
        n = self.num_replicas_in_sync
        return nest.pack_sequence_as(value, [_reduce_value(reduce_op, v, n) for v in flat])

    def __enter__(self) -> "ReplicaContext":
        self._ctx = _Context(self._strategy, self, False)
        self._cm = _push(self._ctx)
        self._cm.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._cm.__exit__(*exc)


class StrategyExtended:
    """The less common half of a strategy's API (TF's StrategyExtendedV1)."""

    def __init__(self, strategy: "Strategy"):
        self._strategy = strategy

    # devices: one replica per rank, on the device collflow places this rank on
    @property
    def worker_devices(self) -> Tuple[str, ...]:
        return ("/job:localhost/replica:0/task:0/device:CPU:0",)

    @property
    def parameter_devices(self) -> Tuple[str, ...]:
        return self.worker_devices

    def non_slot_devices(self, var_list: Sequence[Any]) -> Tuple[str, ...]:
        """Where non-slot variables live: this rank's device."""
        return self.worker_devices

    @property
    def experimental_require_static_shapes(self) -> bool:
        return False

    @property
    def experimental_between_graph(self) -> bool:
        return False

    @property
    def experimental_should_init(self) -> bool:
        return True

    should_init = experimental_should_init

    @property
    def should_checkpoint(self) -> bool:
        """Only the chief (rank 0) writes checkpoints and summaries."""
        return self._strategy.num_replicas_in_sync <= 1 or _this_rank() == 0

    should_save_summary = should_checkpoint

    def colocate_vars_with(self, colocate_with_variable: Any) -> Any:
        """A no-op context: each rank holds all its variables."""
        return contextlib.nullcontext()

    def variable_created_in_scope(self, v: Any) -> bool:
        """Whether `v` was created in this strategy's scope."""
        return getattr(v, "_cf_strategy", None) is self._strategy

    def value_container(self, value: Any) -> Any:
        """The value itself (no mirrored containers: each rank has its copy)."""
        return value

    def read_var(self, v: Any) -> _g.Tensor:
        """A read of the variable on this rank."""
        return identity(v.read_value() if hasattr(v, "read_value") else v)

    def call_for_each_replica(self, fn: Callable, args: Sequence[Any] = (), kwargs: Optional[Dict[str, Any]] = None
                              ) -> Any:
        """fn(*args, **kwargs) in this rank's replica context."""
        return self._strategy._call_in_replica(fn, args, kwargs)

    def reduce_to(self, reduce_op: Any, value: Any, destinations: Any = None) -> Any:
        """`value` combined over the replicas (every rank gets the result)."""
        return _reduce_value(reduce_op, value, self._strategy.num_replicas_in_sync)

    def batch_reduce_to(self, reduce_op: Any, value_destination_pairs: Sequence[Tuple[Any, Any]]) -> List[Any]:
        """reduce_to over a list of (value, destination) pairs; gradients travel fused."""
        pairs = list(value_destination_pairs)
        return self._strategy._batch_reduce(_as_reduce_op(reduce_op), pairs)

    def broadcast_to(self, tensor: Any, destinations: Any) -> Any:
        """The tensor itself: every rank already holds the value it built."""
        return tensor

    def update(self, var: Any, fn: Callable, args: Sequence[Any] = (), kwargs: Optional[Dict[str, Any]] = None,
               group: bool = True) -> Any:
        """fn(var, *args, **kwargs): every rank updates its copy with the same (reduced) values."""
        with _push(_Context(self._strategy, None, False)):
            out = fn(var, *args, **(kwargs or {}))
        return self._group(out, group)

    def update_non_slot(self, colocate_with: Any, fn: Callable, args: Sequence[Any] = (),
                        kwargs: Optional[Dict[str, Any]] = None, group: bool = True) -> Any:
        """fn(*args, **kwargs) on this rank (non-slot variables are per rank)."""
        out = fn(*args, **(kwargs or {}))
        return self._group(out, group)

    @staticmethod
    def _group(out: Any, grouped: bool) -> Any:
        if not grouped:
            return out if isinstance(out, (list, tuple)) else [out]
        flat = [x for x in nest.flatten(out) if x is not None]
        return group(*flat) if len(flat) != 1 or not isinstance(flat[0], _g.Operation) else flat[0]


class Strategy:
    """TF 1.x's tf.distribute.Strategy; subclasses say how many replicas there are."""

    # Estimator sets it while it builds a distributed model: the v1 optimizer then divides
    # a mean-reduced loss by the number of replicas (TF's get_loss_reduction)
    _scale_loss_for_estimator = False

    def __init__(self, extended: Optional[StrategyExtended] = None):
        self._extended = extended or StrategyExtended(self)
        self._default_replica = ReplicaContext(self, 0)

    # -- the world --------------------------------------------------------------------------------
    @property
    def num_replicas_in_sync(self) -> int:
        return 1

    @property
    def extended(self) -> StrategyExtended:
        return self._extended

    def _replica_id(self) -> int:
        return 0

    # -- contexts ----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def scope(self) -> Iterator["Strategy"]:
        """The strategy's cross-replica context (where models, optimizers and variables are made)."""
        top = _top()
        if top is not None and top.strategy is not self and not isinstance(top.strategy, _DefaultStrategy):
            raise RuntimeError(f"Mixing different tf.distribute.Strategy objects: {self} is not {top.strategy}")
        if top is not None and top.replica_context is not None and top.strategy is self:
            raise RuntimeError("Method requires being in cross-replica context, use get_replica_context()."
                               "merge_call()")
        with _push(_Context(self, None, True)):
            yield self

    def _call_in_replica(self, fn: Callable, args: Sequence[Any] = (), kwargs: Optional[Dict[str, Any]] = None
                         ) -> Any:
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        with ReplicaContext(self, self._replica_id()):
            return fn(*tuple(args or ()), **(kwargs or {}))

    def experimental_run_v2(self, fn: Callable, args: Sequence[Any] = (), kwargs: Optional[Dict[str, Any]] = None
                            ) -> Any:
        """fn(*args, **kwargs) on this rank's replica; returns this replica's results."""
        return self._call_in_replica(fn, args, kwargs)

    run = experimental_run_v2

    def experimental_run(self, fn: Callable, input_iterator: Any = None) -> Any:
        """fn(next element of input_iterator) on this rank's replica (fn() without an iterator)."""
        if input_iterator is None:
            return self._call_in_replica(fn)
        return self._call_in_replica(fn, (input_iterator.get_next(),))

    def reduce(self, reduce_op: Any, value: Any, axis: Optional[int] = None) -> Any:
        """`value` (this replica's result) combined over the replicas; with `axis`, also along
        that axis of each replica's value (a MEAN then counts every element of every replica)."""
        reduce_op = _as_reduce_op(reduce_op)
        if get_replica_context() is not None and has_strategy():
            raise RuntimeError("`tf.distribute.Strategy.reduce` must be called in a cross-replica context, "
                               "not inside the replica function")
        n = self.num_replicas_in_sync
        flat = nest.flatten(value)
        out = []
        for v in flat:
            v = _g.convert_to_tensor(v)
            if axis is None:
                out.append(_reduce_value(reduce_op, v, n))
                continue
            total = _reduce_value(ReduceOp.SUM, math_ops.reduce_sum(v, axis=axis), n)
            if reduce_op is ReduceOp.SUM:
                out.append(total)
                continue
            count = math_ops.cast(array_ops.shape(v)[axis], total.dtype)
            out.append(total / _reduce_value(ReduceOp.SUM, count, n))
        return nest.pack_sequence_as(value, out)

    def experimental_local_results(self, value: Any) -> Tuple[Any, ...]:
        """This rank's values: a tuple of one per local replica (one)."""
        return (value,)

    unwrap = experimental_local_results

    def group(self, value: Any, name: Optional[str] = None) -> _g.Operation:
        """One op running every op or tensor of `value`."""
        flat = [getattr(x, "op", x) for x in nest.flatten(value) if x is not None]
        return group(*flat, name=name)

    # -- input ---------------------------------------------------------------------------------------
    def experimental_distribute_dataset(self, dataset: Any) -> Any:
        """This rank's part of each global batch of `dataset` (TF splits each batch over the
        replicas: replica i takes rows [i*b, (i+1)*b), b = ceil(batch / replicas))."""
        return _split_batches(dataset, self._replica_id(), self.num_replicas_in_sync)

    def make_dataset_iterator(self, dataset: Any) -> "_DistributedIterator":
        """An iterator over experimental_distribute_dataset(dataset) (initialize() before use)."""
        return _DistributedIterator(self.experimental_distribute_dataset(dataset))

    def _input_context(self) -> InputContext:
        return InputContext(1, 0, self.num_replicas_in_sync)

    def _per_replica_dataset(self, dataset: Any) -> Any:
        """From one pipeline's dataset, this replica's elements: whole elements round robin."""
        return _round_robin(dataset, self._replica_id(), self.num_replicas_in_sync)

    def experimental_distribute_datasets_from_function(self, dataset_fn: Callable) -> Any:
        """dataset_fn(InputContext) builds per-replica batches; each replica gets its own."""
        ds = dataset_fn(self._input_context())
        _require_dataset(ds, "dataset_fn")
        return self._per_replica_dataset(ds)

    distribute_datasets_from_function = experimental_distribute_datasets_from_function

    def make_input_fn_iterator(self, input_fn: Callable, replication_mode: InputReplicationMode =
                               InputReplicationMode.PER_WORKER) -> "_DistributedIterator":
        """input_fn(InputContext) returns a Dataset of per-replica batches; the iterator
        yields this replica's."""
        if replication_mode is not InputReplicationMode.PER_WORKER:
            raise ValueError(f"Unsupported replication mode {replication_mode}: only PER_WORKER")
        ds = input_fn(self._input_context())
        _require_dataset(ds, "input_fn")
        return _DistributedIterator(self._per_replica_dataset(ds))

    # -- configuration -------------------------------------------------------------------------------
    def configure(self, session_config: Any = None, cluster_spec: Any = None, task_type: Any = None,
                  task_id: Any = None) -> None:
        """Nothing to configure: the ranks are the cluster."""

    def update_config_proto(self, config_proto: Any) -> Any:
        """The ConfigProto unchanged: collflow needs nothing of it."""
        return config_proto

    # gradients of v1 optimizers in a replica context (see Optimizer.apply_gradients)
    def _batch_reduce(self, reduce_op: ReduceOp, pairs: List[Tuple[Any, Any]]) -> List[Any]:
        n = self.num_replicas_in_sync
        return [_reduce_value(reduce_op, v, n) for v, _ in pairs]

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.num_replicas_in_sync} replica(s)>"


class _DefaultStrategy(Strategy):
    """The strategy outside any scope: one replica, no reductions."""

    @contextlib.contextmanager
    def scope(self) -> Iterator["Strategy"]:
        yield self


_DEFAULT: List[_DefaultStrategy] = []


def _default_strategy() -> _DefaultStrategy:
    if not _DEFAULT:
        _DEFAULT.append(_DefaultStrategy())
    return _DEFAULT[0]


# -- datasets -------------------------------------------------------------------------------------------

def _require_dataset(ds: Any, what: str) -> None:
    if not (hasattr(ds, "map") and hasattr(ds, "shard") and hasattr(ds, "element_spec")):
        raise ValueError(f"{what} must return a tf.data.Dataset under a distribution strategy, got "
                         f"{type(ds).__name__}")


def replica_rows(rows: Any, rank: int, n: int) -> Tuple[Any, Any]:
    """[begin, end) of the rows of a global batch of `rows` that replica `rank` of n takes, as
    TF splits a batch: ceil(rows / n) each, the last replicas fewer or none.  `rows` is an int
    (NumPy batches: Keras) or an integer tensor (dataset elements)."""
    per = (rows + (n - 1)) // n
    minimum = min if isinstance(rows, (int, np.integer)) else math_ops.minimum
    begin = minimum(per * rank, rows)
    return begin, minimum(begin + per, rows)


def _split_batches(dataset: Any, rank: int, n: int) -> Any:
    _require_dataset(dataset, "experimental_distribute_dataset's argument")
    if n <= 1:
        return dataset

    def part(*elem: Any) -> Any:
        value = elem[0] if len(elem) == 1 else elem
        flat = nest.flatten(value)
        out = []
        for t in flat:
            if not isinstance(t, _g.Tensor) or t.shape.rank == 0:
                raise ValueError("experimental_distribute_dataset needs a batched dataset: every component must "
                                 f"have a batch dimension, got {t!r}")
            begin, end = replica_rows(array_ops.shape(t)[0], rank, n)
            out.append(t[begin:end])
        return nest.pack_sequence_as(value, out)
    return dataset.map(part)


def _round_robin(dataset: Any, rank: int, n: int) -> Any:
    """Elements rank, rank + n, ... of `dataset`, stopping when any replica would lack one (as
    a TF step fails when one replica's input ends): windows of n elements, read from upstream
    once, of which this rank takes its own."""
    if n <= 1:
        return dataset

    def mine(*parts: Any) -> Any:
        win = parts[0] if len(parts) == 1 else parts
        elements = win if hasattr(win, "skip") else type(dataset).zip(win)
        return elements.skip(rank).take(1)
    return dataset.window(n, drop_remainder=True).flat_map(mine)


class _DistributedIterator:
    """TF 1.x's DistributedIterator: initialize() (or .initializer), get_next()."""

    def __init__(self, dataset: Any):
        self._dataset = dataset
        self._it = dataset.make_initializable_iterator()

    def initialize(self) -> List[_g.Operation]:
        return [self._it.initializer]

    @property
    def initializer(self) -> _g.Operation:
        return self._it.initializer

    def get_next(self) -> Any:
        return self._it.get_next()

    @property
    def output_types(self) -> Any:
        return self._it.output_types

    @property
    def output_shapes(self) -> Any:
        return self._it.output_shapes

    @property
    def element_spec(self) -> Any:
        return getattr(self._it, "element_spec", None)
