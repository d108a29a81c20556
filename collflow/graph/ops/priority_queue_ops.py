"""TensorFlow 1.x's `tf.PriorityQueue`: a bounded queue whose first component is an int64
scalar priority; dequeues take the elements of lowest priority first.

The queue is one more queue op beside FIFOQueue (collflow/graph/ops/data_flow_ops.py): the
enqueue/dequeue/close/size ops are the shared queue ops, so every QueueBase method works on
it; only the resource (collflow/kernels/priority_queue_kernels.py) orders the elements.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ... import dtypes as _dt
from ..registry import register_op, not_differentiable
from ..shape import TensorShape, as_shape
from . import data_flow_ops as _dfo

__all__ = ["PriorityQueue"]

register_op("PriorityQueue", _dfo._queue_spec, stateful=True, host_only=True,
            doc="a bounded queue dequeuing the lowest int64 priority (component 0) first")
not_differentiable("PriorityQueue")


class PriorityQueue(_dfo.QueueBase):
    """A bounded queue of tuples whose first component is an int64 scalar priority (TF1's
    `tf.PriorityQueue`): `types` and `shapes` describe the other components (shapes are
    required, as TF's); `names`, when given, name every component, the priority's first.
    Elements of equal priority come out in the order they went in (TF leaves that order
    unspecified)."""

    def __init__(self, capacity: int, types: Any, shapes: Any = None, names: Optional[Sequence[str]] = None,
                 shared_name: Optional[str] = None, name: Optional[str] = None):
        if shapes is None:
            raise TypeError("Expected list for 'shapes' argument to 'PriorityQueue' Op, not None.")
        types = list(types) if isinstance(types, (list, tuple)) else [types]
        shapes = [as_shape(s) for s in (shapes if isinstance(shapes, (list, tuple)) else [shapes])]
        if len(shapes) != len(types):
            raise ValueError("Queue shapes must have the same length as dtypes, received "
                             f"len(shapes)={len(shapes)}, len(dtypes)={len(types)}")
        dts = [_dt.int64] + [_dt.as_dtype(t) for t in types]
        shps = [TensorShape(())] + shapes
        if names is not None:
            names = list(names) if isinstance(names, (list, tuple)) else [names]
            if len(names) != len(dts):
                raise ValueError("Queue names must have the same length as dtypes, received "
                                 f"len(names)={len(names)}, len {len(dts)}")
        dts, shps, nms, op = _dfo._make_queue("PriorityQueue", name or "priority_queue", capacity, dts, shps,
                                              names, shared_name, {})
        super().__init__(dts, shps, nms, op.outputs[0])
        self._capacity = int(capacity)

    @property
    def capacity(self) -> int:
        return self._capacity
