"""The send buffer a FusedAllReduce keeps between steps (`SendBucket`), and what it offers
the executor (`Slots`).

Two ways a gradient can already be in the buffer when its collective starts, so that no
packing copy is made:

* computed there: its producer wrote its result into the gradient's view of the buffer
  (the executor's `_place_outputs`; PyTorch DDP's gradient_as_bucket_view);
* hosted there: the gradient is a read of a variable (gradient accumulators, a model
  average, weights exchanged as they are), and the variable's storage *is* its part of the
  buffer.  A variable moves into the buffer after the first collective that reads it, once
  that collective is complete (its value is then the part: same bytes, no extra copy
  beyond that step's pack).  Its part is an array of its own over the buffer's memory (not
  a view of it), and the bucket keeps only a weak reference to it, so the variable's
  copy-on-write works as for any variable: an update in place while a read of it is still
  held (a collective in flight, a fetched value) copies first, and the variable then lives
  elsewhere until the next collective moves it back.  Whether a step's read is the hosted
  part is checked by identity each step (`read.base is part`), so nothing depends on how
  the graph reached the variable.
"""
from __future__ import annotations

import functools
import itertools
import operator
import sys
import threading
import weakref
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

__all__ = ["SendBucket", "Slots"]


class _Nowhere:
    """Placeholder that no array has as its base (a weak reference can point to it)."""
    __slots__ = ("__weakref__",)


_NOWHERE = _Nowhere()
_NOWHERE_REF = weakref.ref(_NOWHERE)
_base = operator.attrgetter("base")
_deref = weakref.ReferenceType.__call__


def _getter(idx: Sequence[int]) -> Any:
    """parts -> the tuple of parts at `idx` (in C; itemgetter alone unpacks a single index)."""
    idx = list(idx)
    if not idx:
        return lambda seq: ()
    if len(idx) == 1:
        j = idx[0]
        return lambda seq: (seq[j],)
    return operator.itemgetter(*idx)


class SendBucket:
    """The send buffer of a bucket's packed gradients, kept between steps, with one view
    (slot) per gradient that the gradient's producer may compute into instead of a fresh
    array (see the module docstring), and the variables hosted in it (`hosts`: slot index
    -> the VariableState that input reads, for the inputs that are variable reads).  Only
    for buckets of static shapes whose send buffer is never written after the gradients
    are in it (no contribution flag, no scaling).

    One step at a time uses it: the thread whose producer first takes a slot (or whose run
    sends it) owns it until the collective completes; any other thread meanwhile gets no
    slot and packs into a buffer of its own.  A buffer that anyone still references when a
    step claims it (a fetched gradient, a view of one) is left to them and replaced."""

    __slots__ = ("shapes", "total", "dtype", "buf", "views", "owner", "inflight", "lock", "refs", "vrefs",
                 "placed", "alloc", "alloc_group", "hosts", "hosted", "offsets", "host_slots", "_split")

    def __init__(self, shapes: Sequence[tuple], dtype: Any, alloc: Any = np.empty,
                 hosts: Optional[Dict[int, Any]] = None, alloc_group: Any = None) -> None:
        self.shapes = [tuple(s) for s in shapes]
        sizes = [int(np.prod(s, dtype=np.int64)) for s in self.shapes]
        self.offsets = [0, *itertools.accumulate(sizes)][:len(sizes)]
        self.total = int(sum(sizes))
        self.dtype = np.dtype(dtype)
        self.buf: Any = None
        self.views: List[np.ndarray] = []
        self.owner: Any = None
        self.inflight = False
        self.lock = threading.Lock()
        self.refs = self.vrefs = 0
        self.placed = 0  # how many gradients the last step found in place (computed or hosted)
        self.alloc = alloc  # the communicator's `empty` (shared memory where it all-reduces there)
        # its `empty_group`: a buffer over a block of memory that is not an ndarray, so a part
        # can be an array of its own (hosting needs that)
        self.alloc_group = alloc_group
        # slot -> VariableState whose reads that input is; only NumPy variables of this dtype,
        # and a variable read by several inputs lives in the first one's slot only
        self.hosts: Dict[int, Any] = {}
        for j, st in sorted((hosts or {}).items()):
            if (alloc_group is not None and getattr(st, "xp", None) is np and np.dtype(st.dtype.np) == self.dtype
                    and all(st is not other for other in self.hosts.values())):
                self.hosts[j] = st
        self.host_slots = sorted(self.hosts)
        n = len(self.shapes)
        self._split = (_getter(self.host_slots), _getter([j for j in range(n) if j not in self.hosts]))
        # per hosted slot: a weak reference to the part its variable lives in (this buffer's
        # memory), or to a placeholder that is nobody's base
        self.hosted: List[Any] = [_NOWHERE_REF] * len(self.host_slots)

    def _fresh(self) -> None:
        self.buf, self.views = None, []  # the old buffer goes back to the allocator first
        # variables in the old buffer stay there until they move again
        self.hosted = [_NOWHERE_REF] * len(self.host_slots)
        buf = (self.alloc_group([(self.total,)], self.dtype)[0] if self.hosts
               else self.alloc(self.total, self.dtype))
        views = [buf[o:o + int(np.prod(shp, dtype=np.int64))].reshape(shp)
                 for o, shp in zip(self.offsets, self.shapes)]
        self.buf, self.views = buf, views
        del buf, views
        # the references a free buffer has (this object's, each view's base, the argument)
        self.refs = sys.getrefcount(self.buf)
        self.vrefs = max(map(sys.getrefcount, self.views)) if self.views else 0

    def _claim(self, tid: int) -> bool:
        """(lock held) Whether thread `tid` may fill the buffer now, claiming it if free."""
        if self.inflight:
            return False
        if self.owner is None:
            if (self.buf is None or sys.getrefcount(self.buf) > self.refs
                    or (self.views and max(map(sys.getrefcount, self.views)) > self.vrefs)):
                self._fresh()
            self.owner = tid
            return True
        return self.owner == tid

    def slot(self, j: int) -> Optional[np.ndarray]:
        """Gradient j's view of the buffer to compute into, or None (compute as usual)."""
        tid = threading.get_ident()
        if self.owner != tid or self.inflight:
            with self.lock:
                if not self._claim(tid):
                    return None
        return self.views[j]

    def take(self) -> Optional[np.ndarray]:
        """The buffer, claimed for sending by this thread; None when another step has it."""
        with self.lock:
            if not self._claim(threading.get_ident()):
                return None
            self.inflight = True
            return self.buf

    def release(self) -> None:
        with self.lock:
            self.inflight = False
            self.owner = None

    def abort(self) -> None:
        """A step of this thread failed before its collective started: give the claim up."""
        with self.lock:
            if self.owner == threading.get_ident() and not self.inflight:
                self.owner = None

    def missing(self, parts: Sequence[np.ndarray]) -> List[int]:
        """(buffer taken) The slots whose gradient is not in the buffer yet: neither computed
        into its view nor a read of the variable living there; sets `placed`."""
        views = self.views
        if not self.hosts:
            if all(map(operator.is_, parts, views)):
                out: List[int] = []
            else:
                out = [j for j, (a, v) in enumerate(zip(parts, views)) if a is not v]
        else:
            # the common case checked in C: every other slot computed into, every variable
            # read the part it lives in (a read's base is the variable's array)
            hosted, others = self._split
            if (all(map(operator.is_, map(_base, hosted(parts)), map(_deref, self.hosted)))
                    and all(map(operator.is_, others(parts), others(views)))):
                out = []
            else:
                homes = dict(zip(self.host_slots, map(_deref, self.hosted)))
                out = [j for j, (a, v) in enumerate(zip(parts, views))
                       if a is not v and (j not in homes or a.base is not homes[j])]
        self.placed = len(parts) - len(out)
        return out

    def move_variables(self, parts: Sequence[np.ndarray], slots: Sequence[int]) -> None:
        """(after a complete collective that sent `parts`, buffer still taken) Makes each
        hosted variable among `slots` whose value is still the array that step read live in
        its part of the buffer, which holds the same bytes (the step packed them there)."""
        buf = self.buf
        block = getattr(buf, "base", None)
        if block is None or isinstance(block, np.ndarray):
            return  # the allocator's arrays own their memory: no array of its own over a part
        pos = {j: k for k, j in enumerate(self.host_slots)}
        for j in slots:
            st = self.hosts.get(j)
            if st is None or st.busy is not None or st.pending is not None:
                continue
            a = parts[j]
            with st.lock:
                v = st.value
                if v is None or a.base is not v or not isinstance(v, np.ndarray) or v.dtype != self.dtype:
                    continue  # updated since the read, or not a read of it: leave it
                part = np.ndarray(self.shapes[j], self.dtype, buffer=block,
                                  offset=self.offsets[j] * self.dtype.itemsize)
                st.set_value(part)
            self.hosted[pos[j]] = weakref.ref(part)


class Slots:
    """What a FusedAllReduce kernel offers the executor: `slot_for(i)` -> a callable giving
    input i's slot in a send buffer each step (or None then), or None if input i has none
    (its shape is not static, or it is of another dtype than its buffer); `abort()`, which
    the plan calls when a run fails, so a claim its producers made does not outlive the step.
    `index` maps an input to (its send buffer, its slot there): the packed gradients share
    the bucket's, a gradient all-reduced on its own has one of its own."""

    __slots__ = ("bucket", "index", "buckets")

    def __init__(self, index: dict) -> None:
        self.index = index
        self.buckets = list({id(b): b for b, _ in index.values()}.values())
        self.bucket = self.buckets[0] if self.buckets else None  # the first (for inspection)

    def abort(self) -> None:
        for b in self.buckets:
            b.abort()

    def slot_for(self, i: int) -> Optional[Any]:
        got = self.index.get(i)
        if got is None:
            return None
        bucket, j = got
        return functools.partial(bucket.slot, j)  # called once per gradient per step
