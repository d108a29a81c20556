"""MPICommunicator's shared-memory all-reduces (collflow.comm.shm underneath), as a part of
its own: `ShmQueue`.  They are numbered like any collective (by the communicator) and queued
here when launched; the thread that waits for one (or for a later collective, or abandons it)
runs every earlier one in order, and the progress thread runs them where a core is free, or
once nobody has waited for them for _SHM_IDLE_S.

The queue talks to its communicator only through `ShmHost` (below): the state lock they
share, whether it broke, polling MPI and the control messages, failing everything in flight,
the peers' last records (for timeout messages).
"""
from __future__ import annotations

import threading
import time
from typing import Any, ContextManager, Dict, List, Optional, Protocol, Tuple

import numpy as np

from ..errors import CollflowError, InternalError, InvalidArgumentError
from . import shm as _shm
from .base import _missing_error, CollectiveHandle, error_copy, mismatch_error, Signature
from .mpi_wire import _bodies_conflict, _body_signature, _fail_error

__all__ = ["ShmHost", "ShmQueue"]

# a queued shared-memory all-reduce nobody waits for is run by the progress thread after this
# long, also without a spare core (its caller may be blocked elsewhere, e.g. in MPI or in
# another communicator's wait, while a peer waits for it); a training step waits sooner
_SHM_IDLE_S = 0.1


class ShmHost(Protocol):
    """What a ShmQueue needs of its communicator."""

    lock: threading.Lock      # the communicator's state lock (the queue's list is read under it too)
    timeout: float            # a collective's default time limit
    timeline: Any             # the communicator's timeline recorder, or None
    rank: int
    negotiation: Any          # mpi_negotiation.Negotiation: the peers' last records
    broken: bool              # whether the communicator broke (read without the lock)

    def check_usable(self) -> None:
        """(lock held) Raises the communicator's error if it broke."""

    def poll(self) -> None:
        """MPI progress and control messages (takes the lock); raises if the communicator broke."""

    def adopt_failure(self, rank: int, err: CollflowError) -> CollflowError:
        """(lock held) A peer broke (its shared-memory flag): the communicator's error now."""

    def fail(self, err: CollflowError) -> None:
        """(lock held) Breaks the communicator with err and fails every collective in flight."""

    def waiting(self) -> ContextManager[None]:
        """While inside, a thread waits and polls itself (the progress thread stands aside)."""


class _ShmHandle(CollectiveHandle):
    """An all-reduce through shared memory (collflow.comm.shm): queued when launched, run by
    the first thread that waits for it or a later collective (or abandons it)."""

    __slots__ = ("_queue", "seq", "sig", "_op", "_out", "_result", "_error", "_done", "timeout", "_t0", "_born")

    def __init__(self, queue: "ShmQueue", seq: int, sig: Signature, op: "_shm.ShmOp"):
        self._queue = queue
        self.seq = seq
        self.sig = sig
        self._born = time.monotonic()
        self._op: Optional[_shm.ShmOp] = op
        self._out = op.out
        self._result: Any = None
        self._error: Optional[CollflowError] = None
        self._done = False
        self.timeout: Optional[float] = None
        self._t0 = 0.0

    @property
    def description(self) -> str:
        return f"collective #{self.seq} {self.sig.describe()}"

    @property
    def settled(self) -> bool:
        """Completed or failed (without running anything, unlike done())."""
        return self._done

    def done(self) -> bool:
        if not self._done:
            self._queue.try_advance()
        return self._done

    def wait(self, timeout: Optional[float] = None) -> Any:
        if not self._done:
            self._queue.run_until(self.seq, timeout)
        if self._error is not None:
            raise error_copy(self._error)
        return self._result

    def abandon(self) -> None:
        # the peers wait for this rank in shared memory: take part
        if not self._done:
            try:
                self._queue.run_until(self.seq, None)
            except Exception:
                pass

    def _limit(self, timeout: Optional[float]) -> float:
        if timeout is not None:
            return timeout
        return self.timeout if self.timeout is not None else self._queue.host.timeout

    def _fail(self, err: CollflowError) -> None:
        self._error = err
        self._op = self._out = None
        self._done = True

    def _complete(self) -> None:
        self._result = self._out
        self._op = self._out = None
        self._done = True


class ShmQueue:
    """The queued shared-memory all-reduces of one communicator (see the module doc)."""

    def __init__(self, world: "_shm.ShmWorld", host: ShmHost, background: bool):
        self.world = world
        self.host = host
        # whether the progress thread runs them in the background (only with a core to spare)
        self.background = background
        self._pending: List[_ShmHandle] = []  # launched, not yet run (collective order)
        self._run_lock = threading.Lock()      # one shared-memory collective runs at a time

    # -- the queue (read under the host's lock) ---------------------------------------------
    def __len__(self) -> int:
        return len(self._pending)

    def handles(self) -> List[_ShmHandle]:
        return list(self._pending)

    def enqueue(self, seq: int, sig: Signature, x: np.ndarray, out: np.ndarray, op: str,
                record: bytes) -> _ShmHandle:
        """(host lock held) Queues collective #seq, an all-reduce of x into out; `record`: its
        signature record, which the peers compare in shared memory."""
        h = _ShmHandle(self, seq, sig, self.world.start(x, out, op, seq, record))
        if self.host.timeline is not None:
            h._t0 = time.perf_counter()
        self._pending.append(h)
        return h

    def fail_all(self, err: CollflowError) -> None:
        """(host lock held) The communicator broke: every queued one fails; the arena is
        frozen (peers may still write into this rank's blocks)."""
        self.world.freeze()
        for s in self._pending:
            if not s.settled:
                s._fail(err)
        self._pending = []

    def due(self) -> Optional[float]:
        """Seconds until the progress thread may advance the oldest queued collective (0:
        now), None when none is queued."""
        try:
            h = self._pending[0]
        except IndexError:
            return None
        if self.background:
            return 0.0
        return max(0.0, h._born + _SHM_IDLE_S - time.monotonic())

    # -- running them ----------------------------------------------------------------------------
    def run_until(self, seq: int, timeout: Optional[float]) -> None:
        """Runs the queued shared-memory collectives numbered <= seq to completion, in order;
        each one's error goes to its handle (and breaks the communicator).  `timeout` bounds
        them all together (else each has its own limit)."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._run_lock:
            while True:
                with self.host.lock:
                    if not self._pending or self._pending[0].seq > seq:
                        return
                    h = self._pending[0]
                self._step(h, True, None if end is None else max(0.0, end - time.monotonic()))

    def try_advance(self) -> None:
        """Moves the queued shared-memory collectives on as far as they go without waiting
        (the progress thread, done()); does nothing while another thread is running them."""
        if not self._run_lock.acquire(blocking=False):
            return
        try:
            while True:
                with self.host.lock:
                    if not self._pending:
                        return
                    h = self._pending[0]
                if not self._step(h, False, None):
                    return
        finally:
            self._run_lock.release()

    def _step(self, h: _ShmHandle, blocking: bool, timeout: Optional[float]) -> bool:
        """(_run_lock held; h heads the queue) Advances h: to completion when `blocking` (bounded
        by its limit), else as far as it goes without waiting.  Whether h is done."""
        shm, host = self.world, self.host
        t = h._limit(timeout)
        try:
            if host.broken:
                with host.lock:
                    host.check_usable()
            if blocking:
                with host.waiting():  # the progress thread stands aside
                    shm.run(h._op, time.monotonic() + t, host.poll, _bodies_conflict)
            else:
                shm.check_broken()
                if not shm.advance(h._op, _bodies_conflict):
                    return False
        except CollflowError as e:  # the communicator broke meanwhile (a notice, a poll)
            err: CollflowError = e
        except _shm.ShmMismatch as m:
            err = _mismatch_error(h.seq, m.published)
        except _shm.ShmTimeout as m:
            err = self._timeout_error(h, t, m.missing)
        except _shm.ShmPeerBroken as b:
            with host.lock:
                err = host.adopt_failure(b.rank, _fail_error(b.code, f"rank {b.rank} reported: {b.message}"))
        except Exception as e:  # pragma: no cover - a bug: fail this collective, not the process
            err = InternalError(f"{h.description} failed in shared memory: {type(e).__name__}: {e}")
        else:
            tl = host.timeline
            if tl is not None and h._t0:
                tl.span(h.sig.name or h.sig.kind, 2, h._t0, time.perf_counter(), h.sig.kind,
                        {"seq": h.seq, "kind": h.sig.kind, "dtype": h.sig.dtype, "shape": list(h.sig.shape),
                         "mode": "shared memory"})
            with host.lock:
                if self._pending and self._pending[0] is h:
                    del self._pending[0]
            h._complete()
            return True
        with host.lock:
            host.fail(err)  # fails every queued one, h included
        if not h._done:
            h._fail(err)
        return True

    def _timeout_error(self, h: _ShmHandle, timeout: float, missing: List[int]) -> CollflowError:
        shm, neg = self.world, self.host.negotiation
        notes = []
        for p in missing:
            # where the peer is: its last MPI record or the last collective it entered in
            # shared memory, whichever is newer
            last, body = neg.peer_last[p], neg.peer_record(p)
            pseq, pbody = shm.published(p)
            if pbody.strip(b"\0") and pseq > last:
                last, body = pseq, pbody
            if last >= h.seq:
                notes.append(f"rank {p} started it but did not reach the shared-memory exchange (stuck or dead?)")
            elif body is None or last < 0:
                notes.append(f"rank {p} has started no collective")
            else:
                notes.append(f"rank {p} is at collective #{last} {_body_signature(body).describe()}")
        return _missing_error(f"{h.description} on rank {self.host.rank}", timeout, missing,
                              f" ({'; '.join(notes)})" if notes else "")


def _mismatch_error(seq: int, published: Dict[int, Tuple[int, bytes]]) -> CollflowError:
    if all(pseq == seq for pseq, _ in published.values()):
        return mismatch_error(seq, {p: _body_signature(b) for p, (_, b) in published.items()})
    parts = "; ".join(f"rank {p}: collective #{pseq} {_body_signature(b).describe()}"
                      for p, (pseq, b) in sorted(published.items()))
    return InvalidArgumentError(
        f"mismatched collectives: ranks met in shared memory at different collectives ({parts}). "
        "Every rank must issue the same collectives (names, shapes, dtypes) in the same order")
