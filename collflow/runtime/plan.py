"""The plan object and the plan-level nodes every stage of compilation shares.

A plan (`Plan`) is one compiled (fetches, feeds, targets) signature: the generated function
and what it binds.  `CopyNode` moves a tensor between devices; `CancellationToken` lets
another thread stop a run between ops.  Compilation (runtime/executor.py) prunes and places;
the rewrite passes run on the ordered nodes (runtime/passes.py: constant folding and CSE;
runtime/plan_fusion.py: producer/consumer fusion; runtime/plan_buffers.py: buffer
forwarding and outputs placed into collective buffers); runtime/codegen.py turns the result
into straight-line Python.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from ..graph.graph import Operation, Tensor

__all__ = ["Plan", "CancellationToken", "CopyNode"]

# scheduling priorities: launch asynchronous ops first, wait on handles last
_PRIORITY_ASYNC, _PRIORITY_NORMAL, _PRIORITY_WAIT = 0, 1, 2


class CancellationToken:
    """Set `cancel()` from any thread; a run checks it between ops and raises CancelledError."""

    __slots__ = ("c", "reason", "trace")

    def __init__(self) -> None:
        self.c = False
        self.reason = ""
        self.trace: Optional[list] = None  # a traced run's event records (runtime/tracing.py)

    def cancel(self, reason: str = "") -> None:
        self.reason = reason
        self.c = True

    @property
    def cancelled(self) -> bool:
        return self.c


class Plan:
    """A compiled, cached execution of one (fetches, feeds, targets) signature."""

    def __init__(self, ops: List[Operation], feeds: List[Tensor], fetches: List[Optional[Tensor]],
                 fn: Callable, source: str, kernels: List[Callable], async_ops: Set[Operation]):
        self.placement: Dict[str, str] = {}
        self.copies: List[str] = []
        self.forwarded: List[str] = []  # ops running their in-place kernel (buffer forwarding)
        self.ops = ops
        self.feeds = feeds
        self.fetches = fetches
        self.fn = fn
        self.source = source
        self.kernels = kernels
        self.async_ops = async_ops
        self.num_runs = 0

    def __call__(self, feed_values: Sequence[Any], token: CancellationToken) -> list:
        self.num_runs += 1
        return self.fn(feed_values, token)


class CopyNode:
    """A plan-level Send/Recv: copies tensor `src` from its device to device `dst`.

    It is not added to the user's graph; the plan schedules it like an op.
    """

    type = "_DeviceCopy"
    control_inputs: List[Any] = []
    attrs: Dict[str, Any] = {}

    def __init__(self, src: Tensor, src_dev: str, dst_dev: str):
        self.src = src
        self.src_dev = src_dev
        self.dst_dev = dst_dev
        self.name = f"{src.op.name}:{src.value_index}->{dst_dev}"
        self.graph = src.graph
        self._id = src.op._id
        self.outputs = [_CopyTensor(self, src)]

    def creation_site(self) -> str:
        return self.src.op.creation_site()

    def __repr__(self) -> str:
        return f"<copy {self.name}>"


class _CopyTensor:
    __slots__ = ("op", "value_index", "dtype", "shape", "name")

    def __init__(self, op: CopyNode, src: Tensor):
        self.op, self.value_index, self.dtype, self.shape = op, 0, src.dtype, src.shape
        self.name = op.name


def _copy_kernel(src: Any, dst: Any) -> Tuple[Callable, bool]:
    from ..kernels.device import copy_between
    fn = copy_between(src, dst)
    return fn, bool(getattr(fn, "is_async", False))


# ops whose outputs all have at most this many elements (statically) cost about nothing:
# a collective waited for right after them has no overlap to lose
