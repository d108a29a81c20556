"""TF 1.x's distribution strategies, with the MPI ranks as the replicas (see distribute_lib.py).

    strategy = tf.distribute.MirroredStrategy()        # N replicas under `mpirun -np N`
    with strategy.scope():
        ...build the model and the optimizer...
        loss = strategy.experimental_run_v2(step_fn, args=(iterator.get_next(),))
        mean_loss = strategy.reduce(tf.distribute.ReduceOp.MEAN, loss)

MirroredStrategy, MultiWorkerMirroredStrategy and CentralStorageStrategy all train
synchronously with the gradients summed over the replicas, which is what collflow's
all-reduce over the ranks computes; they differ in how input functions are told to shard
(one pipeline for the replicas of one process, or one per worker) and that is kept.  The
initial variables of rank 0 are broadcast before the first step, as TF's mirrored variables
start identical.  OneDeviceStrategy is one replica on every rank (no reductions).
ParameterServerStrategy and TPUStrategy are refused with the collflow alternative named.
"""
from __future__ import annotations

import enum
import logging
from typing import Any, List, Optional, Sequence, Tuple

from ..comm import fusion as _fusion  # noqa: F401  (registers the fused collective kernels)
from ..graph import graph as _g
from ..graph.indexed_slices import IndexedSlices
from ..graph.ops.fusion_ops import fused_all_reduce, sparse_all_gather
from .distribute_lib import (InputContext, ReduceOp, Strategy, StrategyExtended, _num_ranks, _this_rank)

__all__ = ["MirroredStrategy", "OneDeviceStrategy", "MultiWorkerMirroredStrategy", "CentralStorageStrategy",
           "ParameterServerStrategy", "TPUStrategy", "CollectiveCommunication", "CrossDeviceOps", "NcclAllReduce",
           "HierarchicalCopyAllReduce", "ReductionToOneDevice"]

log = logging.getLogger("collflow.distribute")


# -- cross-device ops: accepted for TF programs that choose one; the ranks' all-reduce does it ------

class CrossDeviceOps:
    """How values travel between replicas (collflow: its own fused all-reduce over the ranks)."""

    def __init__(self) -> None:
        pass


class NcclAllReduce(CrossDeviceOps):
    """TF's NCCL all-reduce choice (recorded; collflow's all-reduce, NCCL on GPUs, does it)."""
    def __init__(self, num_packs: int = 1):
        if num_packs < 0:
            raise ValueError(f"NCCL all-reduce requires num_packs >= 0, but {num_packs} is specified")
        super().__init__()
        self.num_packs = num_packs


class HierarchicalCopyAllReduce(CrossDeviceOps):
    """TF's hierarchical-copy choice (recorded; collflow's all-reduce does it)."""
    def __init__(self, num_packs: int = 1):
        if num_packs < 0:
            raise ValueError(f"HierarchicalCopy requires num_packs >= 0, but {num_packs} is specified")
        super().__init__()
        self.num_packs = num_packs


class ReductionToOneDevice(CrossDeviceOps):
    """TF's reduce-to-one-device choice (recorded; collflow's all-reduce does it)."""
    def __init__(self, reduce_to_device: Optional[str] = None, accumulation_fn: Any = None):
        super().__init__()
        self.reduce_to_device = reduce_to_device
        self.accumulation_fn = accumulation_fn


class CollectiveCommunication(enum.Enum):
    """MultiWorkerMirroredStrategy's choice of collective implementation (recorded)."""
    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


# -- the strategies ------------------------------------------------------------------------------

class _RankExtended(StrategyExtended):
    @property
    def experimental_between_graph(self) -> bool:
        return self._strategy._between_graph


class _RankStrategy(Strategy):
    """Replicas = the ranks of collflow's communicator (started on first use, as hvd.init)."""

    _between_graph = False

    def __init__(self, comm: Any = None) -> None:
        super().__init__(_RankExtended(self))
        # comm (collflow's extension): a communicator other than the default one (MPI's world)
        self._n = comm.size if comm is not None else _num_ranks()
        self._rank = comm.rank if comm is not None else _this_rank()
        self._comm = comm

    def _communicator(self) -> Any:
        """The communicator the replicas share (host-side collectives, e.g. Keras's order)."""
        if self._comm is not None:
            return self._comm
        from .. import comm as _comm
        return _comm.get()

    @property
    def num_replicas_in_sync(self) -> int:
        return self._n

    def _replica_id(self) -> int:
        return self._rank

    def _batch_reduce(self, reduce_op: ReduceOp, pairs: List[Tuple[Any, Any]]) -> List[Any]:
        """Dense values in one fused all-reduce per dtype; IndexedSlices gathered (their rows
        concatenated: a sum once applied, as TF sums sparse gradients)."""
        values = [v for v, _ in pairs]
        if self._n <= 1:
            return values
        # a name of the graph alone: the same on every rank
        base = _g.get_default_graph().unique_name("distribute_batch_reduce")
        mean = reduce_op is ReduceOp.MEAN
        out: List[Any] = list(values)
        dense: dict = {}
        for i, v in enumerate(values):
            if v is None:
                continue
            if isinstance(v, IndexedSlices):
                vals, idx, _ = sparse_all_gather(v.values, v.indices, key=f"{base}/sparse{i}")
                if mean:
                    vals = vals / _g.convert_to_tensor(float(self._n), dtype=vals.dtype)
                out[i] = IndexedSlices(vals, idx, v.dense_shape)
                continue
            t = _g.convert_to_tensor(v)
            dense.setdefault(t.dtype, []).append((i, t))
        for dt, items in dense.items():
            reduced = fused_all_reduce([t for _, t in items], key=f"{base}/{dt.name}", average=mean,
                                       name="FusedAllReduce")
            for (i, t), r in zip(items, reduced):
                r.set_shape(t.shape)
                out[i] = r
        return out


class MirroredStrategy(_RankStrategy):
    """Synchronous training with one replica per rank (TF: one per local device).

    devices / cross_device_ops: accepted; collflow's replicas are the MPI ranks, each on its
    own device, and its all-reduce combines them.  Input functions are called as TF calls them
    for the replicas of one worker (one pipeline; its batches dealt out to the replicas)."""

    def __init__(self, devices: Optional[Sequence[str]] = None, cross_device_ops: Optional[CrossDeviceOps] = None,
                 *, comm: Any = None):
        if cross_device_ops is not None and not isinstance(cross_device_ops, CrossDeviceOps):
            raise ValueError(f"cross_device_ops must be a tf.distribute.CrossDeviceOps, got {cross_device_ops!r}")
        super().__init__(comm)
        if devices is not None:
            devices = list(devices)
            if not devices:
                raise ValueError("Got an empty `devices` list. Please make sure the `devices` you pass in is not empty.")
            if len(devices) != self._n:
                log.warning("MirroredStrategy(devices=%s): collflow runs one replica per MPI rank; this job has %d "
                            "(start it with `mpirun -np %d` for %d replicas)", devices, self._n, len(devices),
                            len(devices))
        self._devices = devices
        self._cross_device_ops = cross_device_ops


class MultiWorkerMirroredStrategy(_RankStrategy):
    """Synchronous training over workers = the ranks; each worker's input function is told its
    pipeline id (InputContext), as TF tells each worker."""

    _between_graph = True

    def __init__(self, communication: CollectiveCommunication = CollectiveCommunication.AUTO,
                 cluster_resolver: Any = None, *, comm: Any = None):
        if not isinstance(communication, CollectiveCommunication):
            raise ValueError(f"communication must be a tf.distribute.experimental.CollectiveCommunication, got "
                             f"{communication!r}")
        super().__init__(comm)
        self._communication = communication

    def _input_context(self) -> InputContext:
        return InputContext(self._n, self._rank, self._n)

    def _per_replica_dataset(self, dataset: Any) -> Any:
        return dataset  # each worker's pipeline already is its replica's


class CentralStorageStrategy(_RankStrategy):
    """TF keeps the variables on one device and the replicas compute; the arithmetic is the
    mirrored strategy's (summed gradients, one update), which is what runs here."""

    def __init__(self, compute_devices: Optional[Sequence[str]] = None, parameter_device: Optional[str] = None,
                 *, comm: Any = None):
        super().__init__(comm)
        self._compute_devices = compute_devices
        self._parameter_device = parameter_device


class OneDeviceStrategy(Strategy):
    """One replica on `device`: a strategy's API with no reductions (on every rank)."""

    def __init__(self, device: str):
        if not isinstance(device, str):
            raise TypeError(f"device must be a string, got {type(device).__name__}")
        super().__init__()
        self._device = device

    @property
    def num_replicas_in_sync(self) -> int:
        return 1


class ParameterServerStrategy(Strategy):
    """Refused: collflow trains synchronously over the ranks (the error names the alternatives)."""
    def __init__(self, *args: Any, **kwargs: Any):
        raise NotImplementedError(
            "tf.distribute.experimental.ParameterServerStrategy is not supported: collflow trains synchronously "
            "over MPI ranks; use MirroredStrategy (all-reduce), or collflow's sharded parameter server for large "
            "embeddings (docs/data_parallel.md)")


class TPUStrategy(Strategy):
    """Refused: collflow has no TPU support."""
    def __init__(self, *args: Any, **kwargs: Any):
        raise NotImplementedError("TPUStrategy: collflow has no TPU support; use MirroredStrategy under mpirun")
