"""`import collflow.horovod as hvd`: Horovod's TensorFlow 1.x API on collflow's collectives.

Horovod's TF1 examples run under `mpirun` with only the imports changed
(`import collflow.compat.v1 as tf`, `import collflow.horovod as hvd`):

    hvd.init()
    opt = hvd.DistributedOptimizer(tf.train.AdamOptimizer(1e-3 * hvd.size()))
    train_op = opt.minimize(loss, global_step=tf.train.get_or_create_global_step())
    hooks = [hvd.BroadcastGlobalVariablesHook(0), tf.train.StopAtStepHook(last_step=1000)]

Everything here is built on what collflow already has: the communicator (cf.comm), the
collective graph ops, SyncReplicasOptimizer's fused, overlapped all-reduce and
broadcast_global_variables.  As in Horovod, `DistributedOptimizer.compute_gradients`
returns gradients already averaged over the ranks (so clipping between compute and apply
sees the average), IndexedSlices gradients travel by allgather, and `minimize` takes
collflow's fastest road to the same update.
"""
from __future__ import annotations

import enum
from typing import Any, List, Optional, Sequence, Tuple

from .. import comm as _comm
from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.indexed_slices import IndexedSlices
from ..graph.ops import array_ops, math_ops, state_ops
from ..graph.ops.constant_op import constant, group
from ..graph.variables import Variable, global_variables
from ..train.distributed import broadcast_global_variables as _broadcast_variables
from ..train.hooks import SessionRunHook
from ..train.optimizer import Optimizer
from ..train.sync_replicas import SyncReplicasOptimizer, add_replica_sync

__all__ = [
    "init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank", "cross_size", "cross_rank",
    "mpi_threads_supported", "mpi_enabled", "mpi_built", "nccl_built", "gloo_enabled", "gloo_built",
    "allreduce", "allgather", "broadcast", "broadcast_global_variables", "broadcast_variables",
    "BroadcastGlobalVariablesHook", "DistributedOptimizer", "Compression", "ReduceOp", "Average", "Sum", "Adasum",
]


# -- the world --------------------------------------------------------------------------------

def init(comm: Any = None) -> None:
    """Starts collflow's communicator (MPI under mpirun, a world of one otherwise).

    comm: an mpi4py communicator (or a list of ranks, as Horovod allows, taken from
    MPI.COMM_WORLD) to use instead of the whole world.
    """
    if isinstance(comm, (list, tuple)):
        from mpi4py import MPI
        ranks = [int(r) for r in comm]
        group_ = MPI.COMM_WORLD.Get_group().Incl(ranks)
        comm = MPI.COMM_WORLD.Create(group_)
        if comm == MPI.COMM_NULL:
            raise InvalidArgumentError(f"hvd.init: this rank ({MPI.COMM_WORLD.Get_rank()}) is not in {ranks}")
    if comm is None:
        _comm.init()
    else:
        _comm.init(comm=comm)


def shutdown() -> None:
    _comm.shutdown()


def is_initialized() -> bool:
    return _comm.is_initialized()


def _world() -> Any:
    if not _comm.is_initialized():
        raise ValueError("Horovod has not been initialized; use hvd.init().")
    return _comm.get()


def size() -> int:
    """The number of ranks."""
    return _world().size


def rank() -> int:
    """This process's rank, 0 .. size() - 1."""
    return _world().rank


def local_size() -> int:
    """The number of ranks on this host."""
    return _world().local_size


def local_rank() -> int:
    """This process's rank among the ranks on its host."""
    return _world().local_rank


def cross_size() -> int:
    """The number of hosts (ranks with the same local rank)."""
    c = _world()
    return max(1, c.size // max(1, c.local_size))


def cross_rank() -> int:
    """This host's index among the hosts."""
    c = _world()
    return c.rank // max(1, c.local_size)


def mpi_threads_supported() -> bool:
    return True


def mpi_enabled() -> bool:
    return type(_world()).__name__ == "MPICommunicator"


def mpi_built() -> bool:
    return True


def nccl_built() -> bool:
    try:
        import cupy  # noqa: F401
        return True
    except ImportError:
        return False


def gloo_enabled() -> bool:
    return False


gloo_built = gloo_enabled


# -- reduction ops and compression ---------------------------------------------------------------

class ReduceOp(enum.Enum):
    AVERAGE = "average"
    SUM = "sum"
    ADASUM = "adasum"


Average = ReduceOp.AVERAGE
Sum = ReduceOp.SUM
Adasum = ReduceOp.ADASUM


class _Compressor:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"Compression.{self.name}"


class Compression:
    """Wire compression of the gradients (collflow compresses inside the fused all-reduce)."""
    none = _Compressor("none")
    fp16 = _Compressor("fp16")
    bf16 = _Compressor("bf16")


def _compression_name(compression: Any) -> str:
    if compression is None:
        return "none"
    if isinstance(compression, _Compressor):
        return compression.name
    if isinstance(compression, str) and compression in ("none", "fp16", "bf16"):
        return compression
    raise InvalidArgumentError(f"compression must be hvd.Compression.none, .fp16 or .bf16, got {compression!r}")


def _reduce_op(op: Any, average: Optional[bool]) -> ReduceOp:
    if op is not None and average is not None:
        raise ValueError("The op parameter supersedes average. Please provide only one of them.")
    if op is None:
        return Average if average in (None, True) else Sum
    if isinstance(op, str):
        op = ReduceOp(op.lower())
    if op is Adasum:
        raise NotImplementedError(
            "hvd.Adasum is not implemented in collflow: use hvd.Average (the default) or hvd.Sum")
    return op


# -- collectives as graph ops ---------------------------------------------------------------------

def allreduce(tensor: Any, average: Optional[bool] = None, device_dense: str = "", device_sparse: str = "",
              compression: Any = Compression.none, op: Any = None, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0, name: Optional[str] = None) -> Any:
    """The sum or average of `tensor` over the ranks (an IndexedSlices goes by allgather)."""
    rop = _reduce_op(op, average)
    if isinstance(tensor, IndexedSlices):
        values = allgather(tensor.values)
        indices = allgather(tensor.indices)
        if rop is Average:
            values = values / math_ops.cast(size(), values.dtype)
        return IndexedSlices(values, indices, tensor.dense_shape, tensor._static_shape)
    t = _g.convert_to_tensor(tensor)
    if prescale_factor != 1.0:
        t = t * constant(prescale_factor, dtype=t.dtype)
    comp = _compression_name(compression)
    src = t
    if comp == "bf16":
        raise InvalidArgumentError("hvd.allreduce: bf16 compression is only for DistributedOptimizer's fused "
                                   "all-reduce; use hvd.Compression.fp16 or none here")
    if comp == "fp16" and t.dtype.is_floating:
        src = math_ops.cast(t, _dt.float16)  # Horovod's fp16 compressor: reduce in half precision
    r = _comm.all_reduce(src, op="mean" if rop is Average else "sum", name=name)
    if r.dtype != t.dtype:
        r = math_ops.cast(r, t.dtype)
    if postscale_factor != 1.0:
        r = r * constant(postscale_factor, dtype=r.dtype)
    return r


def allgather(tensor: Any, name: Optional[str] = None) -> _g.Tensor:
    """The ranks' tensors concatenated along axis 0 (their first dimensions may differ)."""
    return _comm.allgather(tensor, name=name)


def broadcast(tensor: Any, root_rank: int, name: Optional[str] = None) -> _g.Tensor:
    """root_rank's value of `tensor`, on every rank."""
    return _comm.broadcast(tensor, root=int(root_rank), name=name)


def broadcast_global_variables(root_rank: int) -> _g.Operation:
    """An op setting every global variable to root_rank's value."""
    return _broadcast_variables(int(root_rank))


def broadcast_variables(variables: Sequence[Variable], root_rank: int) -> _g.Operation:
    """An op setting `variables` to root_rank's values."""
    return _broadcast_variables(int(root_rank), var_list=list(variables))


class BroadcastGlobalVariablesHook(SessionRunHook):
    """A SessionRunHook that broadcasts root_rank's variables once the session exists, so
    every replica starts identical (also after a restore from a checkpoint)."""

    def __init__(self, root_rank: int, device: str = ""):
        self.root_rank = int(root_rank)
        self.device = device
        self.bcast_op: Optional[_g.Operation] = None

    def begin(self) -> None:
        g = _g.get_default_graph()
        if self.bcast_op is None or self.bcast_op.graph is not g:
            with g.as_default():
                self.bcast_op = broadcast_global_variables(self.root_rank)

    def after_create_session(self, session: Any, coord: Any) -> None:
        session.run(self.bcast_op)


# -- the optimizer -------------------------------------------------------------------------------

class _DistributedOptimizer(Optimizer):
    """Horovod's DistributedOptimizer over SyncReplicasOptimizer (see DistributedOptimizer)."""

    def __init__(self, optimizer: Optimizer, name: Optional[str] = None, use_locking: bool = False,
                 compression: Any = Compression.none, sparse_as_dense: bool = False,
                 backward_passes_per_step: int = 1, op: Any = Average, gradient_predivide_factor: float = 1.0,
                 average_aggregated_gradients: bool = False):
        super().__init__(use_locking, name or f"Distributed{type(optimizer).__name__}")
        rop = _reduce_op(op, None)
        if gradient_predivide_factor != 1.0 and rop is not Average:
            raise ValueError("gradient_predivide_factor not supported with op != Average")
        if gradient_predivide_factor <= 0:
            raise ValueError(f"gradient_predivide_factor must be positive, got {gradient_predivide_factor}")
        if int(backward_passes_per_step) < 1:
            raise ValueError(f"backward_passes_per_step must be >= 1, got {backward_passes_per_step}")
        self._opt = optimizer
        self._passes = int(backward_passes_per_step)
        self._average_passes = bool(average_aggregated_gradients)
        self._sync = SyncReplicasOptimizer(optimizer, compression=_compression_name(compression),
                                           sparse_as_dense=sparse_as_dense, average=rop is Average,
                                           name=self._name)

    # the wrapped optimizer's slots are the ones that exist
    def get_slot(self, var: Variable, name: str) -> Any:
        return self._opt.get_slot(var, name)

    def get_slot_names(self) -> List[str]:
        return self._opt.get_slot_names()

    def variables(self) -> List[Variable]:
        return self._opt.variables()

    def compute_gradients(self, *args: Any, **kwargs: Any) -> List[Tuple[Any, Variable]]:
        """Gradients averaged (or summed) over the ranks, as Horovod returns them."""
        local = self._opt.compute_gradients(*args, **kwargs)
        if self._passes > 1:
            return local  # aggregated locally first; reduced when applied (see apply_gradients)
        return self._sync.reduce_gradients(local)

    def apply_gradients(self, grads_and_vars: Sequence[Tuple[Any, Variable]], global_step: Optional[Variable] = None,
                        name: Optional[str] = None) -> _g.Operation:
        """Applies the (already reduced) gradients with the wrapped optimizer."""
        pairs = list(grads_and_vars)
        from ..train.between_graph import synchronized
        with synchronized():  # reduced already: not a TF1 cluster's asynchronous step
            if self._passes > 1:
                op = self._aggregated_apply(pairs, global_step, name)
            else:
                op = self._opt.apply_gradients(pairs, global_step=global_step, name=name)
        add_replica_sync(op.graph, op)  # replicas start identical even without the broadcast hook
        return op

    def minimize(self, loss: Any, global_step: Optional[Variable] = None, var_list: Any = None,
                 gate_gradients: int = Optimizer.GATE_OP, aggregation_method: Any = None,
                 colocate_gradients_with_ops: bool = False, name: Optional[str] = None,
                 grad_loss: Any = None) -> _g.Operation:
        """The same update as compute_gradients + apply_gradients, on collflow's fastest road
        (fused buckets overlapping the backward pass; plain SGD may average the variables)."""
        if self._passes > 1:
            return super().minimize(loss, global_step, var_list, gate_gradients, aggregation_method,
                                    colocate_gradients_with_ops, name, grad_loss)
        return self._sync.minimize(loss, global_step=global_step, var_list=var_list, gate_gradients=gate_gradients,
                                   aggregation_method=aggregation_method,
                                   colocate_gradients_with_ops=colocate_gradients_with_ops, name=name,
                                   grad_loss=grad_loss)

    def _aggregated_apply(self, pairs: List[Tuple[Any, Variable]], global_step: Optional[Variable],
                          name: Optional[str]) -> _g.Operation:
        """backward_passes_per_step > 1: every run adds this rank's gradients to local
        accumulators; every `passes`-th run reduces the accumulated sums over the ranks,
        applies them (divided by `passes` with average_aggregated_gradients) and clears the
        accumulators.  global_step counts applied steps."""
        from ..graph.control_flow import cond
        live = [(gr, v) for gr, v in pairs if gr is not None]
        if not live:
            raise ValueError("No gradients provided for any variable")
        g = live[0][1].graph
        with g.as_default(), g.name_scope(self._name + "_aggregation"), g.control_dependencies(None):
            accs = []
            for gr, v in live:
                with g.device(v.device):
                    accs.append(Variable(array_ops.zeros(v.shape.as_list(), dtype=v.dtype), trainable=False,
                                         name=v.op.name.replace("/", "_") + "_grad_acc",
                                         collections=[_g.GraphKeys.LOCAL_VARIABLES]))
            counter = Variable(constant(0, dtype=_dt.int32), trainable=False, name="passes",
                               collections=[_g.GraphKeys.LOCAL_VARIABLES])
        with g.as_default(), g.name_scope(self._name + "_aggregation"):
            adds = [state_ops.assign_add(a, _g.convert_to_tensor(gr)) for a, (gr, _) in zip(accs, live)]
            with g.control_dependencies(adds):
                count = state_ops.assign_add(counter, 1)
            due = math_ops.equal(count % self._passes, 0)

            def apply() -> _g.Tensor:
                vals = [a.read_value() for a in accs]
                if self._average_passes:
                    vals = [x / constant(float(self._passes), dtype=x.dtype) for x in vals]
                reduced = self._sync.reduce_gradients(list(zip(vals, [v for _, v in live])))
                step = self._opt.apply_gradients(reduced, global_step=global_step, name=name)
                with g.control_dependencies([step]):
                    clears = [state_ops.assign(a, array_ops.zeros_like(a.read_value())) for a in accs]
                with g.control_dependencies(clears):
                    return constant(True)

            def skip() -> _g.Tensor:
                return constant(False)
            applied = cond(due, apply, skip)
            return group(applied.op, name="apply")


def DistributedOptimizer(optimizer: Optimizer, name: Optional[str] = None, use_locking: bool = False,
                         device_dense: str = "", device_sparse: str = "", compression: Any = Compression.none,
                         sparse_as_dense: bool = False, backward_passes_per_step: int = 1, op: Any = Average,
                         gradient_predivide_factor: float = 1.0, average_aggregated_gradients: bool = False,
                         num_groups: int = 0, groups: Any = None) -> Optimizer:
    """Wraps a cf.train optimizer so gradients are combined over the ranks (Horovod's).

    op: hvd.Average (default) or hvd.Sum (hvd.Adasum raises NotImplementedError).
    compression: hvd.Compression.none / .fp16 / .bf16 on the wire.
    sparse_as_dense: all-reduce IndexedSlices as dense tensors instead of allgathering them.
    backward_passes_per_step: reduce and apply every N-th run, accumulating locally between.
    gradient_predivide_factor: accepted with op=Average (the same average; collflow sums in
    float32 and divides once). num_groups/groups: accepted (collflow fuses by size).
    """
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"hvd.DistributedOptimizer wraps a cf.train optimizer, got {type(optimizer).__name__}")
    return _DistributedOptimizer(optimizer, name=name, use_locking=use_locking, compression=compression,
                                 sparse_as_dense=sparse_as_dense, backward_passes_per_step=backward_passes_per_step,
                                 op=op, gradient_predivide_factor=gradient_predivide_factor,
                                 average_aggregated_gradients=average_aggregated_gradients)
