"""Bucket planning: which gradients travel together, decided in one place.

Two decisions, both pure functions of static facts, so every rank makes them alike:

* `plan_buckets`: gradients, in the order the backward pass produces them, grouped into
  buckets of at most `threshold` bytes (PyTorch DDP's bucket_cap_mb, Horovod's fusion
  threshold); a bucket holds one dtype on one device; threshold 0 puts every gradient in a
  bucket of its own.  SyncReplicasOptimizer builds one FusedAllReduce (or, for plain SGD,
  one AverageVariables) per bucket.
* `split_direct`: inside a bucket's collective, which gradients go on their own, read by the
  transport where they are (no packing copy): a lone gradient and those of at least
  DIRECT_ELEMENTS elements; the rest are packed into one buffer, one collective's latency
  for all of them (collflow/comm/fusion.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

__all__ = ["Bucket", "GradSpec", "plan_buckets", "split_direct", "DIRECT_ELEMENTS"]

# a gradient of at least this many elements (256 KiB of float32) is all-reduced on its own
DIRECT_ELEMENTS = 1 << 16
# elements assumed for a gradient whose size is not known when the graph is built: it closes
# the bucket it would join (its true size could be anything)
_UNKNOWN_ELEMENTS = 1 << 30


@dataclass(frozen=True)
class GradSpec:
    """What the planner needs to know of one gradient: its elements (None: unknown until it
    runs), dtype (a name or NumPy dtype) and device (None: the default)."""

    elements: Optional[int]
    dtype: Any
    itemsize: int
    device: Optional[str] = None

    @property
    def nbytes(self) -> int:
        return (self.elements if self.elements is not None else _UNKNOWN_ELEMENTS) * self.itemsize


@dataclass(frozen=True)
class Bucket:
    """Positions (into the planner's input, in order) of the gradients that travel together."""

    members: Tuple[int, ...]
    nbytes: int


def plan_buckets(grads: Sequence[GradSpec], threshold: int) -> List[Bucket]:
    """Consecutive gradients grouped into buckets of at most `threshold` bytes, one dtype and
    one device each (a gradient larger than the threshold gets a bucket of its own)."""
    buckets: List[Bucket] = []
    cur: List[int] = []
    size = 0
    for i, g in enumerate(grads):
        if cur:
            first = grads[cur[0]]
            if threshold <= 0 or size + g.nbytes > threshold or g.dtype != first.dtype or g.device != first.device:
                buckets.append(Bucket(tuple(cur), size))
                cur, size = [], 0
        cur.append(i)
        size += g.nbytes
    if cur:
        buckets.append(Bucket(tuple(cur), size))
    return buckets


def split_direct(elements: Sequence[Optional[int]], pack_all: bool = False,
                 direct_elements: int = DIRECT_ELEMENTS) -> Tuple[List[int], List[int]]:
    """(gradients sent on their own, gradients packed) of one bucket, by position.

    elements: each gradient's static size (None: unknown, always packed).  pack_all: every
    gradient packed (a contribution flag or a pre-scale rides in the packed buffer).
    """
    n = len(elements)
    if pack_all:
        return [], list(range(n))
    direct = [i for i, e in enumerate(elements) if n == 1 or (e is not None and e >= direct_elements)]
    chosen = set(direct)
    return direct, [i for i in range(n) if i not in chosen]
