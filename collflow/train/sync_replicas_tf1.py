"""TF1's SyncReplicasOptimizer interface on collflow's all-reduce one.

TF1 programs write `tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=R,
total_num_replicas=T)`: every update averages the first R of the T workers' gradients (so
T - R workers are backups whose late gradients are dropped), then the chief applies them.
collflow all-reduces instead: R of the T ranks contribute (`backup_ranks = T - R`, the
slowest dropped) and every rank applies the same average, so T must be the number of
compute ranks.  The token queue and the chief's queue runner that TF's workers wait on do
not exist here (the all-reduce is the barrier): the hook, the queue runner and the init
tokens op are there for the programs that run them, and do nothing.
"""
from __future__ import annotations

import numbers
from typing import Any, List, Optional, Sequence

from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.ops.constant_op import group, no_op
from .hooks import SessionRunHook

__all__ = ["TF1Options", "tf1_arguments", "SyncReplicasHook", "ChiefQueueRunner", "init_ops", "check_num_tokens"]


class TF1Options:
    """What a TF1-style construction asked for."""

    def __init__(self, replicas_to_aggregate: int, total_num_replicas: Optional[int], variable_averages: Any,
                 variables_to_average: Optional[Sequence[Any]]):
        if int(replicas_to_aggregate) < 1:
            raise InvalidArgumentError(f"replicas_to_aggregate must be >= 1, got {replicas_to_aggregate}")
        self.replicas_to_aggregate = int(replicas_to_aggregate)
        self.total_num_replicas = self.replicas_to_aggregate if total_num_replicas is None else int(total_num_replicas)
        if self.replicas_to_aggregate > self.total_num_replicas:
            raise InvalidArgumentError(
                f"replicas_to_aggregate={self.replicas_to_aggregate} > total_num_replicas={self.total_num_replicas}: "
                "TF then lets one worker contribute several gradients to an update; collflow's all-reduce takes "
                "one gradient per rank (accumulate gradients over several steps instead)")
        if variable_averages is not None and variables_to_average is None:
            raise InvalidArgumentError("variable_averages needs variables_to_average (TF's rule)")
        self.variable_averages = variable_averages
        self.variables_to_average = None if variables_to_average is None else list(variables_to_average)

    @property
    def backup_ranks(self) -> int:
        return self.total_num_replicas - self.replicas_to_aggregate

    def check_world(self, size: int) -> None:
        if size != self.total_num_replicas:
            raise InvalidArgumentError(
                f"SyncReplicasOptimizer: total_num_replicas={self.total_num_replicas} but this job has {size} "
                "compute ranks; collflow runs each worker as one MPI rank, so the two must agree")

    def after_step(self, step: _g.Operation) -> _g.Operation:
        """The moving averages TF's chief updates after each aggregated update."""
        if self.variable_averages is None:
            return step
        g = step.graph
        with g.as_default(), g.control_dependencies([step]):
            avg = self.variable_averages.apply(self.variables_to_average)
        with g.as_default():
            return group(step, avg, name=step.name.split("/")[-1] + "_with_averages")


def tf1_arguments(comm: Any, fusion_threshold_bytes: Any, compression: Any, sparse_as_dense: Any,
                  default_fusion: int, replicas_to_aggregate: Optional[int], total_num_replicas: Optional[int],
                  variable_averages: Any, variables_to_average: Any) -> tuple:
    """Sorts TF1's positional arguments (opt, replicas_to_aggregate, total_num_replicas,
    variable_averages, variables_to_average) out of collflow's (opt, comm,
    fusion_threshold_bytes, compression, sparse_as_dense).  Returns (comm,
    fusion_threshold_bytes, compression, sparse_as_dense, TF1Options or None)."""
    if isinstance(comm, numbers.Integral) and not isinstance(comm, bool):
        if replicas_to_aggregate is not None:
            raise TypeError("SyncReplicasOptimizer got replicas_to_aggregate twice")
        replicas_to_aggregate, comm = int(comm), None
        if fusion_threshold_bytes is None or fusion_threshold_bytes != default_fusion:
            total_num_replicas, fusion_threshold_bytes = fusion_threshold_bytes, default_fusion
        if compression is not None and not isinstance(compression, str):
            variable_averages, compression = compression, None
        if not isinstance(sparse_as_dense, bool):
            variables_to_average, sparse_as_dense = sparse_as_dense, False
    if replicas_to_aggregate is None:
        if total_num_replicas is not None or variable_averages is not None:
            raise TypeError("SyncReplicasOptimizer: total_num_replicas and variable_averages need replicas_to_aggregate")
        return comm, fusion_threshold_bytes, compression, sparse_as_dense, None
    return comm, fusion_threshold_bytes, compression, sparse_as_dense, TF1Options(
        replicas_to_aggregate, total_num_replicas, variable_averages, variables_to_average)


class SyncReplicasHook(SessionRunHook):
    """TF's hook that starts the token queue and the chief's queue runner; collflow's
    all-reduce needs neither, so it has nothing to do (it checks the world size once)."""

    def __init__(self, options: Optional[TF1Options], is_chief: bool, num_tokens: int):
        self._options = options
        self.is_chief = bool(is_chief)
        self.num_tokens = int(num_tokens)

    def begin(self) -> None:
        if self._options is not None:
            from .. import comm as _comm
            self._options.check_world(_comm.get().size)


class ChiefQueueRunner:
    """The QueueRunner TF's chief starts for the token queue: no threads here."""

    name = "sync_replicas_chief_queue_runner"
    queue = None
    enqueue_ops: List[Any] = []

    def create_threads(self, sess: Any, coord: Any = None, daemon: bool = False, start: bool = False) -> List[Any]:
        return []


def init_ops(g: _g.Graph) -> tuple:
    """(local_step_init_op, chief_init_op, ready_for_local_init_op, init_tokens_op) as TF's
    optimizer has them after apply_gradients, for Supervisor-based programs: made with the
    train op (a program may ask for them after its Supervisor finalized the graph).  The
    init ops have nothing to initialize here (no local steps, no token queue to fill); the
    readiness op reports the uninitialized global variables, as TF's."""
    from ..graph.variables import global_variables, report_uninitialized_variables
    with g.as_default(), g.name_scope("sync_replicas"):
        return (no_op(name="local_step_init"), no_op(name="chief_init"),
                report_uninitialized_variables(global_variables()), no_op(name="init_tokens"))


def check_num_tokens(num_tokens: int) -> None:
    if num_tokens < -1:
        raise InvalidArgumentError(f"num_tokens must be >= -1, got {num_tokens}")
