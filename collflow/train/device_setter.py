"""tf.train.replica_device_setter and its placement strategies, as in TF1.

The device function puts the ops that hold state (variables, mutable tables) on the
parameter-server job, a task chosen by `ps_strategy` (round robin by default), and every
other op on `worker_device`; device fields an inner scope already set win.  In collflow
the job/task part of those names is what tells the optimizers which variables the
program shares between workers (collflow/train/between_graph.py); the ops themselves run
in each rank's process.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from ..graph.device_spec import DeviceSpec
from .cluster import ClusterSpec

__all__ = ["replica_device_setter", "GreedyLoadBalancingStrategy", "byte_size_load_fn", "STATE_OPS"]

# TF's default ps_ops plus collflow's own op types for the same kinds of state
STATE_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "VarHandleOp", "VarHandle",
             "MutableHashTable", "MutableHashTableV2", "MutableHashTableOfTensors",
             "MutableHashTableOfTensorsV2", "MutableDenseHashTable", "MutableDenseHashTableV2")


class _RoundRobin:
    """Task 0, 1, ..., n-1, 0, ... for successive state ops."""

    def __init__(self, num_tasks: int):
        self._n = num_tasks
        self._next = 0

    def __call__(self, op: Any) -> int:
        t = self._next
        self._next = (self._next + 1) % self._n
        return t


def byte_size_load_fn(op: Any) -> int:
    """The bytes a variable op's value takes (its static shape times its dtype's size); an
    error for a shape that is not fully known (TF's contract for this load function)."""
    out = op.outputs[0]
    shape = op.attrs.get("shape") if op.attrs.get("shape") is not None else out.shape
    from ..graph.shape import as_shape
    shape = as_shape(shape)
    if not shape.is_fully_defined():
        raise ValueError(f"byte_size_load_fn: the shape of {op.name} is not fully defined: {shape}")
    dtype = op.attrs.get("dtype") or out.dtype
    from .. import dtypes as _dt
    dt = _dt.as_dtype(dtype)
    itemsize = dt.np.itemsize if dt.np is not None and dt.np != np.object_ else 1
    return int(shape.num_elements()) * int(itemsize)


class GreedyLoadBalancingStrategy:
    """Each state op to the ps task with the least load so far (`load_fn(op)`: its size
    in bytes by default); ties to the lowest task."""

    def __init__(self, num_tasks: int, load_fn: Callable[[Any], float] = byte_size_load_fn):
        if num_tasks < 1:
            raise ValueError(f"GreedyLoadBalancingStrategy needs num_tasks >= 1, got {num_tasks}")
        self._loads = np.zeros(int(num_tasks))
        self._load_fn = load_fn

    def __call__(self, op: Any) -> int:
        task = int(np.argmin(self._loads))
        self._loads[task] += self._load_fn(op)
        return task


class _Chooser:
    def __init__(self, ps_tasks: int, ps_device: str, worker_device: str, merge_devices: bool,
                 ps_ops: Sequence[str], ps_strategy: Callable[[Any], int]):
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge = merge_devices
        self._ps_ops = set(ps_ops)
        self._strategy = ps_strategy

    def __call__(self, op: Any) -> Optional[str]:
        current = DeviceSpec.from_string(op.device or "")
        if not self._merge and op.device:
            return op.device  # merge_devices=False: an op with a device keeps it
        if self._ps_tasks and self._ps_device and op.type in self._ps_ops:
            ps = DeviceSpec.from_string(self._ps_device)
            if ps.job and (not current.job or current.job == ps.job):
                ps = ps.replace(task=self._strategy(op))
            return ps.make_merged_spec(current).to_string()
        worker = DeviceSpec.from_string(self._worker_device or "")
        return worker.make_merged_spec(current).to_string() or None


def replica_device_setter(ps_tasks: int = 0, ps_device: str = "/job:ps", worker_device: str = "/job:worker",
                          merge_devices: bool = True, cluster: Any = None, ps_ops: Optional[List[str]] = None,
                          ps_strategy: Optional[Callable[[Any], int]] = None) -> Optional[Callable[[Any], str]]:
    """A device function for `tf.device` placing state on the ps job, the rest on the
    worker (TF1's).  With `cluster`, ps_tasks is the number of tasks of ps_device's job
    there (0 when the cluster has no such job); with no ps tasks, returns None (no device
    function: `tf.device(None)`)."""
    if cluster is not None:
        spec = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(cluster)
        ps_job = DeviceSpec.from_string(ps_device or "").job
        ps_tasks = spec.num_tasks(ps_job) if ps_job in spec.jobs else 0
    if ps_tasks == 0:
        return None
    if ps_strategy is None:
        ps_strategy = _RoundRobin(int(ps_tasks))
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")
    return _Chooser(int(ps_tasks), ps_device, worker_device, merge_devices,
                    STATE_OPS if ps_ops is None else list(ps_ops), ps_strategy)
