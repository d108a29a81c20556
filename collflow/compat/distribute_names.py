"""TF 1.x's `tf.distribute` (and `tf.contrib.distribute`'s strategies): strategies whose
replicas are the MPI ranks (collflow/train/distribute_lib.py says how)."""
from __future__ import annotations

from collflow.compat.namespaces import _Namespace
from collflow.train import distribute_lib as _lib
from collflow.train import distribute_strategies as _st
from collflow.train.cluster import Server

__all__ = ["distribute"]

_experimental = _Namespace("distribute.experimental", "tf.distribute.experimental: the multi-worker, central "
                           "storage, parameter-server and TPU strategies.", {
                               "MultiWorkerMirroredStrategy": _st.MultiWorkerMirroredStrategy,
                               "CentralStorageStrategy": _st.CentralStorageStrategy,
                               "ParameterServerStrategy": _st.ParameterServerStrategy,
                               "TPUStrategy": _st.TPUStrategy,
                               "CollectiveCommunication": _st.CollectiveCommunication})

distribute = _Namespace("distribute", "tf.distribute: synchronous strategies over the MPI ranks.", {
    **{n: getattr(_lib, n) for n in ("ReduceOp", "InputContext", "InputReplicationMode", "Strategy",
                                     "StrategyExtended", "ReplicaContext", "get_strategy", "has_strategy",
                                     "in_cross_replica_context", "get_replica_context", "get_loss_reduction",
                                     "experimental_set_strategy")},
    **{n: getattr(_st, n) for n in ("MirroredStrategy", "OneDeviceStrategy", "CrossDeviceOps", "NcclAllReduce",
                                    "HierarchicalCopyAllReduce", "ReductionToOneDevice")},
    "Server": Server, "experimental": _experimental})
