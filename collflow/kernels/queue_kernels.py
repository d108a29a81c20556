"""The FIFO queue resource and the kernels of the queue ops.

The queue holds *chunks*: a tuple of arrays (one per component) sharing dimension 0, and
the range of rows not yet dequeued.  enqueue_many stores its (copied) batch as one chunk
and a dequeue_many that falls inside one chunk returns a view of it, so a batch that goes
in whole comes out without per-row work.  Views handed out never overlap (each row leaves
the queue once), and the queue owns its copies, so nobody can change a queued value.

Waiting never hangs: a blocked op wakes every `_POLL_S` to see whether its run was
cancelled (Session.cancel or a CancellationToken), whether the session closed, or whether
`operation_timeout_in_ms` has passed; closing the queue or the session wakes it at once.
Waiters of one kind are served in arrival order, so a big enqueue_many's rows stay
contiguous and a dequeue_many larger than the capacity fills up without starving.
"""
from __future__ import annotations

import sys
import threading
import time
from collections import deque
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import CancelledError, DeadlineExceededError, InvalidArgumentError, OutOfRangeError
from ..graph.ops.data_flow_ops import queue_attrs
from .registry import current_cancellation_token, register_kernel, KernelContext

__all__ = ["FIFOQueueResource"]

# how often a blocked op checks for cancellation (seconds)
_POLL_S = 0.05


def _run_token() -> Any:
    """The CancellationToken of the run executing on this thread, or None."""
    return current_cancellation_token()


class _Waiter:
    """One blocked op: why it waits, and what may end the wait."""

    __slots__ = ("q", "op", "what", "session", "deadline", "timeout_ms", "token", "_looked")

    def __init__(self, q: "FIFOQueueResource", op: Any, what: str, session: Any, timeout_ms: Optional[float]):
        self.q = q
        self.op = op
        self.what = what
        self.session = session
        self.timeout_ms = timeout_ms
        self.deadline = time.monotonic() + timeout_ms / 1000.0 if timeout_ms else None
        self.token: Any = None
        self._looked = False

    def wait(self, waiting_for: str) -> None:
        """Waits (lock held) for a notify or one poll interval; raises if the wait must end."""
        q = self.q
        if q._abort_reason is not None:
            raise CancelledError(f"{self.what} on {q.label} was cancelled: {q._abort_reason}", self.op)
        if not self._looked:
            self._looked = True
            self.token = _run_token()
        tok = self.token
        if tok is not None and tok.c:
            raise CancelledError(f"{self.what} on {q.label} was cancelled while waiting for {waiting_for}"
                                 + (f": {tok.reason}" if tok.reason else ""), self.op)
        if self.session is not None and getattr(self.session, "_closed", False):
            raise CancelledError(f"{self.what} on {q.label} was cancelled: session closed", self.op)
        timeout = _POLL_S
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise DeadlineExceededError(
                    f"{self.what} on {q.label} timed out after {self.timeout_ms:g} ms waiting for "
                    f"{waiting_for} (size {q._size}, capacity {q.capacity}; "
                    f"operation_timeout_in_ms={self.timeout_ms:g})", self.op)
            timeout = min(timeout, left)
        q._cond.wait(timeout)


class FIFOQueueResource:
    """A bounded FIFO queue of tuples of arrays, shared by the ops of one Session."""

    def __init__(self, name: str, capacity: int, dtypes: Sequence[Any], shapes: Optional[Sequence[Any]]):
        self.name = name
        self.capacity = capacity
        self.dtypes = tuple(dtypes)
        self.shapes = None if shapes is None else tuple(shapes)
        self.label = f"FIFOQueue {name!r}"
        self._cond = threading.Condition(threading.Lock())
        # each chunk: [tuple of arrays sharing dim 0, first row not yet dequeued, end row]
        self._chunks: deque = deque()
        self._size = 0
        self._closed = False
        self._cancel_enqueues = False
        self._abort_reason: Optional[str] = None
        self._enq_line: deque = deque()
        self._deq_line: deque = deque()
        self.padding = False  # a PaddingFIFOQueue: dequeue_many pads elements of varying shape

    # -- inspection ---------------------------------------------------------------------------
    def size(self) -> int:
        return self._size

    @property
    def closed(self) -> bool:
        return self._closed

    def check_compatible(self, capacity: int, dtypes: Sequence[Any], shapes: Any, op: Any) -> None:
        """A second FIFOQueue op with this shared_name must describe the same queue."""
        if capacity != self.capacity or tuple(dtypes) != self.dtypes or (
                (shapes is None) != (self.shapes is None) or
                (shapes is not None and [s.dims for s in shapes] != [s.dims for s in self.shapes])):
            raise InvalidArgumentError(
                f"shared queue {self.name!r} exists with capacity {self.capacity}, dtypes "
                f"{[d.name for d in self.dtypes]}, shapes {self.shapes}; this op asks for capacity {capacity}, "
                f"dtypes {[d.name for d in dtypes]}, shapes {None if shapes is None else tuple(shapes)}", op)

    # -- closing --------------------------------------------------------------------------------
    def close(self, cancel_pending: bool = False, reason: Optional[str] = None) -> None:
        """Closes the queue and wakes every waiter.

        cancel_pending: enqueues blocked on a full queue fail (CancelledError).
        reason: the Session is shutting down; every blocked op fails with this reason.
        """
        with self._cond:
            self._closed = True
            if cancel_pending:
                self._cancel_enqueues = True
            if reason is not None:
                self._abort_reason = reason
            self._cond.notify_all()

    # -- enqueue --------------------------------------------------------------------------------
    def put(self, arrays: Tuple[Any, ...], n: int, w: _Waiter) -> None:
        """Appends `n` rows (dimension 0 of every array), waiting for room as needed."""
        with self._cond:
            if self._closed:
                raise CancelledError(f"{self.label} is closed; {w.what} is not allowed", w.op)
            if n == 0:
                return
            ticket = object()
            self._enq_line.append(ticket)
            try:
                done = 0
                while True:
                    if self._enq_line[0] is ticket and self._size < self.capacity:
                        take = min(n - done, self.capacity - self._size)
                        self._chunks.append([arrays, done, done + take])
                        self._size += take
                        done += take
                        self._cond.notify_all()
                        if done == n:
                            return
                        continue
                    if self._cancel_enqueues and self._abort_reason is None:
                        raise CancelledError(
                            f"{w.what} on {self.label} was cancelled: the queue was closed with "
                            f"cancel_pending_enqueues=True ({done} of {n} elements were enqueued)", w.op)
                    w.wait("free space")
            finally:
                self._enq_line.remove(ticket)
                self._cond.notify_all()

    # -- dequeue --------------------------------------------------------------------------------
    def take(self, n: int, allow_smaller: bool, w: _Waiter) -> List[Tuple[Any, int, int]]:
        """Removes `n` rows (fewer only when `allow_smaller` and the queue is closed).

        Returns pieces (arrays, start, stop) in order.  If it fails, rows it had taken go
        back to the front of the queue, so a failed dequeue loses nothing.
        """
        with self._cond:
            ticket = object()
            self._deq_line.append(ticket)
            pieces: List[Tuple[Any, int, int]] = []
            got = 0
            ok = False
            try:
                while True:
                    if self._deq_line[0] is ticket:
                        while got < n and self._chunks:
                            ch = self._chunks[0]
                            arrays, start, stop = ch
                            k = min(n - got, stop - start)
                            pieces.append((arrays, start, start + k))
                            got += k
                            self._size -= k
                            if start + k == stop:
                                self._chunks.popleft()
                            else:
                                ch[1] = start + k
                        if got:
                            self._cond.notify_all()  # room for enqueuers
                        if got == n:
                            ok = True
                            return pieces
                        if self._closed and self._abort_reason is None:
                            if allow_smaller and got > 0:
                                ok = True
                                return pieces
                            raise OutOfRangeError(
                                f"{self.label} is closed and has insufficient elements "
                                f"(requested {n}, current size {got})", w.op)
                    w.wait("elements")
            finally:
                if not ok and pieces:
                    for arrays, start, stop in reversed(pieces):
                        self._chunks.appendleft([arrays, start, stop])
                    self._size += got
                self._deq_line.remove(ticket)
                self._cond.notify_all()


class PoolQueueResource(FIFOQueueResource):
    """A FIFO queue whose dequeues draw rows from a pool (the buffered chunks moved there
    first) in an order of the subclass's: `_absorb()` fills the pool, `_pooled()` counts
    it, `_draw()` takes one row out, `_reserve()` rows must stay while the queue is open."""

    def _pooled(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def _draw(self) -> Tuple[Any, int]:  # pragma: no cover - interface
        raise NotImplementedError

    def _reserve(self) -> int:
        return 0

    def take(self, n: int, allow_smaller: bool, w: _Waiter) -> List[Tuple[Any, int, int]]:
        with self._cond:
            ticket = object()
            self._deq_line.append(ticket)
            try:
                while True:
                    if self._deq_line[0] is ticket:
                        self._absorb()
                        have = self._pooled()
                        closed = self._closed and self._abort_reason is None
                        if have >= n + (0 if self._closed else self._reserve()) or (
                                closed and allow_smaller and have > 0):
                            # Drawn rows leave the pool only on this path, which cannot fail
                            # half-way, so there is nothing to put back on an error.
                            pieces: List[Tuple[Any, int, int]] = []
                            for _ in range(min(n, have)):
                                arrays, i = self._draw()
                                pieces.append((arrays, i, i + 1))
                            self._size -= len(pieces)
                            self._cond.notify_all()  # room for enqueuers
                            return pieces
                        if closed:
                            raise OutOfRangeError(
                                f"{self.label} is closed and has insufficient elements "
                                f"(requested {n}, current size {have})", w.op)
                    w.wait("elements")
            finally:
                self._deq_line.remove(ticket)
                self._cond.notify_all()


class RandomShuffleQueueResource(PoolQueueResource):
    """A queue that dequeues uniformly random elements once more than `min_after_dequeue`
    would remain (or it is closed): TensorFlow's RandomShuffleQueue.  Enqueues as the FIFO
    queue; a dequeue moves the buffered chunks into a pool of rows and draws from it."""

    def __init__(self, name: str, capacity: int, dtypes: Sequence[Any], shapes: Optional[Sequence[Any]],
                 min_after_dequeue: int, seed: Optional[int], seed2: Optional[int]):
        super().__init__(name, capacity, dtypes, shapes)
        self.label = f"RandomShuffleQueue {name!r}"
        self.min_after_dequeue = int(min_after_dequeue)
        self._rows: List[Tuple[Any, int]] = []
        seq = None if seed is None and seed2 is None else [int(seed or 0), int(seed2 or 0)]
        self._rng = np.random.default_rng(seq)

    def _absorb(self) -> None:
        while self._chunks:
            arrays, start, stop = self._chunks.popleft()
            self._rows.extend((arrays, i) for i in range(start, stop))

    def _pooled(self) -> int:
        return len(self._rows)

    def _reserve(self) -> int:
        return self.min_after_dequeue

    def _draw(self) -> Tuple[Any, int]:
        k = int(self._rng.integers(len(self._rows)))
        self._rows[k], self._rows[-1] = self._rows[-1], self._rows[k]
        return self._rows.pop()


# -- kernels ----------------------------------------------------------------------------------


def _timeout_ms(ctx: KernelContext) -> Optional[float]:
    t = (ctx.config or {}).get("operation_timeout_in_ms")
    return float(t) if t and t > 0 else None


@register_kernel("FIFOQueue")
def _fifo_queue(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    q = ctx.resources.get_or_create(
        "queue", a["shared_name"],
        lambda: FIFOQueueResource(a["shared_name"], a["capacity"], a["component_types"], a["shapes"]))
    q.check_compatible(a["capacity"], a["component_types"], a["shapes"], op)
    return lambda: q


@register_kernel("PaddingFIFOQueue")
def _padding_fifo_queue(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs

    def make() -> FIFOQueueResource:
        q = FIFOQueueResource(a["shared_name"], a["capacity"], a["component_types"], a["shapes"])
        q.label = f"PaddingFIFOQueue {a['shared_name']!r}"
        q.padding = True
        return q
    q = ctx.resources.get_or_create("queue", a["shared_name"], make)
    q.check_compatible(a["capacity"], a["component_types"], a["shapes"], op)
    return lambda: q


def _padded(xp: Any, parts: List[Any], dtype: Any) -> Any:
    """The rows of `parts` (arrays sharing dimension 0's meaning, of one rank) in one array,
    each padded with zeros ("" for strings) to the largest size in every other dimension."""
    full = [max(p.shape[d] for p in parts) for d in range(1, parts[0].ndim)]
    n = sum(p.shape[0] for p in parts)
    out = xp.full((n, *full), "" if dtype == object else 0, dtype=dtype)
    o = 0
    for p in parts:
        out[(slice(o, o + p.shape[0]),) + tuple(slice(0, k) for k in p.shape[1:])] = p
        o += p.shape[0]
    return out


@register_kernel("RandomShuffleQueue")
def _random_shuffle_queue(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    q = ctx.resources.get_or_create(
        "queue", a["shared_name"],
        lambda: RandomShuffleQueueResource(a["shared_name"], a["capacity"], a["component_types"], a["shapes"],
                                           a["min_after_dequeue"], a.get("seed"), a.get("seed2")))
    q.check_compatible(a["capacity"], a["component_types"], a["shapes"], op)
    return lambda: q


def _element_checks(op: Any, many: bool) -> List[Tuple[int, Any]]:
    """(component, queue shape) pairs whose shape the graph could not prove; checked per run."""
    shapes = queue_attrs(op.inputs[0])["shapes"]
    if shapes is None:
        return []
    out = []
    for i, t in enumerate(op.inputs[1:]):
        st = t.shape
        elem = st.dims if st.dims is None else (st.dims[1:] if many else st.dims)
        want = shapes[i].dims
        if want is None:
            continue
        if elem is None or any(w is not None and e is None for w, e in zip(want, elem)):
            out.append((i, shapes[i]))
    return out


def _enqueue(op: Any, ctx: KernelContext, many: bool) -> Any:
    xp = ctx.xp
    checks = _element_checks(op, many)
    session, tmo = ctx.session, _timeout_ms(ctx)
    what = "enqueue_many" if many else "enqueue"
    ncomp = len(op.inputs) - 1
    names = [t.name for t in op.inputs[1:]]

    def run(q: FIFOQueueResource, *vals: Any) -> None:
        if many:
            n = None
            for i, v in enumerate(vals):
                if v.ndim == 0:
                    raise InvalidArgumentError(f"{what} on {q.label}: component {i} ({names[i]}) is a scalar; "
                                               "enqueue_many needs a batch along dimension 0", op)
                if n is None:
                    n = v.shape[0]
                elif v.shape[0] != n:
                    raise InvalidArgumentError(
                        f"{what} on {q.label}: components have different batch sizes: "
                        f"{', '.join(f'{names[j]} has {vals[j].shape[0]}' for j in range(ncomp))}", op)
        for i, shp in checks:
            got = vals[i].shape[1:] if many else vals[i].shape
            if not shp.matches_value(got):
                raise InvalidArgumentError(
                    f"{what} on {q.label}: component {i} ({names[i]}) has {'elements of ' if many else ''}"
                    f"shape {tuple(got)}, the queue expects {shp}", op)
        # the queue keeps its own copy: a fed buffer may be reused by the caller
        if many:
            arrays = tuple(xp.array(v, copy=True) for v in vals)
            n = int(arrays[0].shape[0])
        else:
            arrays = tuple(xp.array(v, copy=True)[None] for v in vals)
            n = 1
        q.put(arrays, n, _Waiter(q, op, what, session, tmo))
    return run


register_kernel("QueueEnqueue")(lambda op, ctx: _enqueue(op, ctx, False))
register_kernel("QueueEnqueueMany")(lambda op, ctx: _enqueue(op, ctx, True))


@register_kernel("QueueDequeue")
def _dequeue(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    session, tmo = ctx.session, _timeout_ms(ctx)
    single = len(op.outputs) == 1

    def run(q: FIFOQueueResource) -> Any:
        (arrays, start, _), = q.take(1, False, _Waiter(q, op, "dequeue", session, tmo))
        # a[start, ...] is a 0-d array (not a NumPy scalar) for scalar elements
        outs = tuple(xp.asarray(a[start, ...]) for a in arrays)
        return outs[0] if single else outs
    return run


def _dequeue_many(op: Any, ctx: KernelContext, allow_smaller: bool) -> Any:
    xp = ctx.xp
    session, tmo = ctx.session, _timeout_ms(ctx)
    single = len(op.outputs) == 1
    what = "dequeue_up_to" if allow_smaller else "dequeue_many"
    shapes = queue_attrs(op.inputs[0])["shapes"]
    dtypes = queue_attrs(op.inputs[0])["component_types"]
    static_n = op.attrs.get("n")

    def run(q: FIFOQueueResource, n: Any = None) -> Any:
        n = static_n if static_n is not None else int(n)
        if n < 0:
            raise InvalidArgumentError(f"{what} on {q.label}: n must be >= 0, got {n}", op)
        if n == 0:
            if shapes is None or not all(s.is_fully_defined() for s in shapes):
                raise InvalidArgumentError(
                    f"{what}(0) on {q.label} needs fully defined component shapes, the queue has {shapes}", op)
            outs = tuple(xp.empty((0,) + tuple(s.dims), dtype=d.np) for s, d in zip(shapes, dtypes))
            return outs[0] if single else outs
        pieces = q.take(n, allow_smaller, _Waiter(q, op, what, session, tmo))
        outs = []
        for c in range(len(dtypes)):
            parts = [arrays[c][s:e] for arrays, s, e in pieces]
            if len(parts) == 1:
                outs.append(xp.asarray(parts[0]))
                continue
            if q.padding:
                outs.append(_padded(xp, parts, dtypes[c].np))
                continue
            first = parts[0].shape[1:]
            for p in parts[1:]:
                if p.shape[1:] != first:
                    raise InvalidArgumentError(
                        f"{what} on {q.label}: component {c} has elements of different shapes "
                        f"({tuple(first)} and {tuple(p.shape[1:])}); give the queue shapes= "
                        "or dequeue one element at a time", op)
            outs.append(xp.concatenate([xp.asarray(p) for p in parts]))
        return outs[0] if single else tuple(outs)
    return run


register_kernel("QueueDequeueMany")(lambda op, ctx: _dequeue_many(op, ctx, False))
register_kernel("QueueDequeueUpTo")(lambda op, ctx: _dequeue_many(op, ctx, True))


@register_kernel("QueueClose")
def _close(op: Any, ctx: KernelContext) -> Any:
    cancel = bool(op.attrs.get("cancel_pending_enqueues", False))

    def run(q: FIFOQueueResource) -> None:
        q.close(cancel_pending=cancel)
    return run


@register_kernel("QueueSize")
def _size(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    return lambda q: xp.asarray(q.size(), dtype=np.int32)


@register_kernel("QueueIsClosed")
def _is_closed(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    return lambda q: xp.asarray(q.closed)
