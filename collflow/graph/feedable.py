"""Graph.prevent_feeding / prevent_fetching (TF1): marks that Session.run checks.

A graph mixes this in; the marked sets are created on first use so Graph.__init__ stays as is.
TF1's Session.run refuses to feed an unfeedable tensor (ValueError "Tensor ... may not be
fed.") and to fetch a tensor or run an op marked not fetchable (ValueError "Operation ... has
been marked as not fetchable.").  As TF1's cond and while_loop mark everything they build
inside a branch or the loop, so do these checks (from the op's control-flow context).
"""
from __future__ import annotations

from typing import Any, Set

__all__ = ["FeedFetchMarks"]


class FeedFetchMarks:
    """The feedable/fetchable marks of a graph's tensors and operations."""

    def _marks(self, key: str) -> Set[Any]:
        s = self.__dict__.get(key)
        if s is None:
            s = self.__dict__[key] = set()
        return s

    def prevent_feeding(self, tensor: Any) -> None:
        """Marks `tensor` as not feedable."""
        self._marks("_unfeedable").add(tensor)

    def is_feedable(self, tensor: Any) -> bool:
        """Whether `tensor` may be fed: not given to prevent_feeding, nor built inside a cond
        branch or a while loop (TF1 marks those)."""
        if _in_control_flow(getattr(tensor, "op", None)):
            return False
        return tensor not in self.__dict__.get("_unfeedable", ())

    def prevent_fetching(self, op: Any) -> None:
        """Marks the operation `op` as not fetchable (nor its outputs)."""
        self._marks("_unfetchable").add(op)

    def is_fetchable(self, tensor_or_op: Any) -> bool:
        """Whether an operation, or a tensor's operation, may be fetched."""
        op = getattr(tensor_or_op, "op", tensor_or_op)
        if _in_control_flow(op):
            return False
        marks = self.__dict__.get("_unfetchable", ())
        return not marks or op not in marks


def _in_control_flow(op: Any) -> bool:
    """Whether the op was built inside a cond branch or while loop (a loop's Exit belongs to the
    enclosing context): TF1's control-flow contexts prevent feeding and fetching those.  Ops of
    an imported GraphDef keep no TF1 context, so they stay fetchable."""
    ctx = getattr(op, "_ctx", None)
    if ctx is None:
        return False
    from .control_flow import ImportedContext  # (control_flow imports graph: import here)
    return not isinstance(ctx, ImportedContext)
