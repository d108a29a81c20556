"""The PriorityQueue resource and kernel (TF1's `tf.PriorityQueue`).

Enqueues go in as the FIFO queue's chunks (so blocking, closing and cancellation are the
FIFO queue's); a dequeue first moves the buffered rows into a heap keyed by (priority,
arrival number), then pops the lowest.  The arrival number keeps equal priorities in
insertion order.
"""
from __future__ import annotations

import heapq
import itertools
from typing import Any, List, Tuple

from ..errors import InvalidArgumentError
from .queue_kernels import PoolQueueResource
from .registry import register_kernel, KernelContext

__all__ = ["PriorityQueueResource"]


class PriorityQueueResource(PoolQueueResource):
    """A FIFO queue resource whose dequeues take the lowest component-0 value first."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.label = f"PriorityQueue {self.name!r}"
        self._heap: List[Tuple[int, int, Any, int]] = []
        self._arrival = itertools.count()

    def _absorb(self) -> None:
        while self._chunks:
            arrays, start, stop = self._chunks.popleft()
            prio = arrays[0]
            for i in range(start, stop):
                heapq.heappush(self._heap, (int(prio[i]), next(self._arrival), arrays, i))

    def _pooled(self) -> int:
        return len(self._heap)

    def _draw(self) -> Tuple[Any, int]:
        _, _, arrays, i = heapq.heappop(self._heap)
        return arrays, i


@register_kernel("PriorityQueue")
def _priority_queue(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    q = ctx.resources.get_or_create(
        "queue", a["shared_name"],
        lambda: PriorityQueueResource(a["shared_name"], a["capacity"], a["component_types"], a["shapes"]))
    if not isinstance(q, PriorityQueueResource):
        raise InvalidArgumentError(f"shared queue {a['shared_name']!r} exists and is not a PriorityQueue", op)
    q.check_compatible(a["capacity"], a["component_types"], a["shapes"], op)
    return lambda: q
