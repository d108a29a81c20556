"""tf.contrib.distribute (TF 1.x's first home of the strategies), over tf.distribute's: the
replicas are the MPI ranks (collflow/train/distribute_lib.py)."""
from __future__ import annotations

import collections
from typing import Any, Optional, Sequence

from ..train import distribute_lib as _lib
from ..train import distribute_strategies as _st
from ..train.distribute_lib import (ReduceOp, ReplicaContext, Strategy, StrategyExtended, get_loss_reduction,  # noqa: F401
                                    get_replica_context, get_strategy, has_strategy, in_cross_replica_context)
from ..train.distribute_strategies import (CrossDeviceOps, OneDeviceStrategy, ParameterServerStrategy,  # noqa: F401
                                           ReductionToOneDevice, TPUStrategy)

__all__ = ["MirroredStrategy", "CollectiveAllReduceStrategy", "OneDeviceStrategy", "ParameterServerStrategy",
           "TPUStrategy", "DistributeConfig", "DistributionStrategy", "CrossDeviceOps", "AllReduceCrossDeviceOps",
           "ReductionToOneDevice", "ReduceOp", "ReplicaContext", "StrategyExtended", "get_strategy",
           "has_strategy", "get_distribution_strategy", "has_distribution_strategy", "get_replica_context",
           "get_cross_replica_context", "in_cross_replica_context", "get_loss_reduction"]

DistributionStrategy = Strategy
get_distribution_strategy = get_strategy
has_distribution_strategy = has_strategy
get_cross_replica_context = _lib.get_cross_replica_context


class DistributeConfig(collections.namedtuple("DistributeConfig",
                                              ["train_distribute", "eval_distribute", "remote_cluster"])):
    """RunConfig(experimental_distribute=...)'s strategies (remote_cluster: the ranks are the cluster)."""

    def __new__(cls, train_distribute: Any = None, eval_distribute: Any = None, remote_cluster: Any = None):
        return super().__new__(cls, train_distribute, eval_distribute, remote_cluster)


class AllReduceCrossDeviceOps(_st.CrossDeviceOps):
    """contrib's all-reduce choice (recorded; the ranks' all-reduce does the work)."""
    def __init__(self, all_reduce_alg: str = "nccl", num_packs: int = 1, agg_small_grads_max_bytes: int = 0,
                 agg_small_grads_max_group: int = 10):
        super().__init__()
        self.all_reduce_alg, self.num_packs = all_reduce_alg, num_packs


class MirroredStrategy(_st.MirroredStrategy):
    """contrib's form: (devices, num_gpus, num_gpus_per_worker, cross_device_ops,
    auto_shard_dataset, cross_tower_ops); the replicas are the ranks."""

    def __init__(self, devices: Optional[Sequence[str]] = None, num_gpus: Optional[int] = None,
                 num_gpus_per_worker: Optional[int] = None, cross_device_ops: Any = None,
                 auto_shard_dataset: bool = False, cross_tower_ops: Any = None):
        if cross_device_ops is not None and cross_tower_ops is not None:
            raise ValueError("`cross_device_ops` and `cross_tower_ops` cannot both be set")
        if devices is not None and (num_gpus is not None or num_gpus_per_worker is not None):
            raise ValueError("Must only specify one of `devices` and `num_gpus`.")
        super().__init__(devices=devices, cross_device_ops=cross_device_ops or cross_tower_ops)


class CollectiveAllReduceStrategy(_st.MultiWorkerMirroredStrategy):
    """contrib's multi-worker all-reduce strategy: workers = the ranks."""

    def __init__(self, num_gpus_per_worker: int = 0, communication: Any = _st.CollectiveCommunication.AUTO):
        super().__init__(communication=communication)
