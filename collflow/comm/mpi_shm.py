"""MPICommunicator's shared-memory all-reduces (collflow.comm.shm underneath): they are
numbered like any collective and queued when launched; the thread that waits for one (or for
a later collective, or abandons it) runs every earlier one in order, and the progress thread
runs them where a core is free, or once nobody has waited for them for _SHM_IDLE_S.
A mixin of MPICommunicator: its methods use the communicator's state.
"""
from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..errors import AbortedError, CollflowError, InternalError, InvalidArgumentError
from . import shm as _shm
from .base import _missing_error, CollectiveHandle, error_copy, mismatch_error, Signature
from .mpi_wire import _bodies_conflict, _body_signature, _fail_error

__all__: list = []

# a queued shared-memory all-reduce nobody waits for is run by the progress thread after this
# long, also without a spare core (its caller may be blocked elsewhere, e.g. in MPI or in
# another communicator's wait, while a peer waits for it); a training step waits sooner
_SHM_IDLE_S = 0.1


class _ShmHandle(CollectiveHandle):
    """An all-reduce through shared memory (collflow.comm.shm): queued when launched, run by
    the first thread that waits for it or a later collective (or abandons it)."""

    __slots__ = ("_comm", "seq", "sig", "_op", "_out", "_result", "_error", "_done", "timeout", "_t0", "_born")

    def __init__(self, comm: "Any", seq: int, sig: Signature, op: "_shm.ShmOp"):
        self._comm = comm
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

    def done(self) -> bool:
        if not self._done:
            self._comm._shm_try()
        return self._done

    def wait(self, timeout: Optional[float] = None) -> Any:
        if not self._done:
            self._comm._shm_run_until(self.seq, timeout)
        if self._error is not None:
            raise error_copy(self._error)
        return self._result

    def abandon(self) -> None:
        # the peers wait for this rank in shared memory: take part
        if not self._done:
            try:
                self._comm._shm_run_until(self.seq, None)
            except Exception:
                pass

    def _limit(self, timeout: Optional[float]) -> float:
        if timeout is not None:
            return timeout
        return self.timeout if self.timeout is not None else self._comm.timeout

    def _fail(self, err: CollflowError) -> None:
        self._error = err
        self._op = self._out = None
        self._done = True

    def _complete(self) -> None:
        self._result = self._out
        self._op = self._out = None
        self._done = True


class ShmScheduling:
    """MPICommunicator's shared-memory scheduling (see the module doc)."""

    def _shm_due(self) -> Optional[float]:
        """Seconds until the progress thread may advance the oldest queued shared-memory
        collective (0: now), None when none is queued."""
        try:
            h = self._shm_pending[0]
        except IndexError:
            return None
        if self.shm_background:
            return 0.0
        return max(0.0, h._born + _SHM_IDLE_S - time.monotonic())


    # -- shared memory ---------------------------------------------------------------------------
    def _launch_shm(self, sig: Signature, x: np.ndarray, out: np.ndarray, op: str,
                    wait_now: bool = False) -> _ShmHandle:
        """Queues an all-reduce through shared memory (numbered like any collective).  Unless
        the caller waits at once, the progress thread may advance it (see the module doc)."""
        if self._closed:
            raise AbortedError(f"{sig.kind} on a closed communicator")
        shm = self._shm
        assert shm is not None
        with self._post_lock:
            if self._deferred:  # an earlier wait-now collective goes first
                for d in list(self._deferred):
                    self._resolve(d)
            with self._lock:
                # MPI calls cost tens of microseconds here: control messages are read at
                # most every millisecond (a wait polls them anyway)
                self._check_usable(drain=time.monotonic() - self._neg.last_drain >= 1e-3, launching=sig)
                seq = self._seq
                # the peers compare records in shared memory; this rank's is kept for a peer
                # that issues an MPI collective as #seq (its record then names both)
                record = self._announce(seq, sig, send=False) if self._track else self._neg.record_body(sig)
                h = _ShmHandle(self, seq, sig, shm.start(x, out, op, seq, record))
                self._seq += 1
                if self.timeline is not None:
                    h._t0 = time.perf_counter()
                self._shm_pending.append(h)
                # the progress thread advances it in the background where a core is free,
                # else once it has waited _SHM_IDLE_S for its caller (who may be blocked
                # elsewhere: a peer's collective must not hang on it)
                if not wait_now and self._progress and not self._closed:
                    if self._thread is None:
                        self._start_progress()
                    else:
                        self._wake.set()
        return h

    def _shm_run_until(self, seq: int, timeout: Optional[float]) -> None:
        """Runs the queued shared-memory collectives numbered <= seq to completion, in order;
        each one's error goes to its handle (and breaks the communicator).  `timeout` bounds
        them all together (else each has its own limit)."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._shm_lock:
            while True:
                with self._lock:
                    if not self._shm_pending or self._shm_pending[0].seq > seq:
                        return
                    h = self._shm_pending[0]
                self._shm_step(h, True, None if end is None else max(0.0, end - time.monotonic()))

    def _shm_try(self) -> None:
        """Moves the queued shared-memory collectives on as far as they go without waiting
        (the progress thread, done()); does nothing while another thread is running them."""
        if not self._shm_lock.acquire(blocking=False):
            return
        try:
            while True:
                with self._lock:
                    if not self._shm_pending:
                        return
                    h = self._shm_pending[0]
                if not self._shm_step(h, False, None):
                    return
        finally:
            self._shm_lock.release()

    def _shm_step(self, h: _ShmHandle, blocking: bool, timeout: Optional[float]) -> bool:
        """(_shm_lock held; h heads the queue) Advances h: to completion when `blocking` (bounded
        by its limit), else as far as it goes without waiting.  Whether h is done."""
        shm = self._shm
        assert shm is not None
        t = h._limit(timeout)
        try:
            if self._broken is not None:
                with self._lock:
                    self._check_usable(drain=False)
            if blocking:
                self._waiters += 1  # the progress thread stands aside
                try:
                    shm.run(h._op, time.monotonic() + t, self._shm_poll, _bodies_conflict)
                finally:
                    self._waiters -= 1
            else:
                shm.check_broken()
                if not shm.advance(h._op, _bodies_conflict):
                    return False
        except CollflowError as e:  # the communicator broke meanwhile (a notice, a poll)
            err: CollflowError = e
        except _shm.ShmMismatch as m:
            err = self._shm_mismatch_error(h.seq, m.published)
        except _shm.ShmTimeout as m:
            err = self._shm_timeout_error(h, t, m.missing)
        except _shm.ShmPeerBroken as b:
            with self._lock:
                if self._broken is None:
                    self._broken = (b.rank, _fail_error(b.code, f"rank {b.rank} reported: {b.message}"))
                err = self._broken[1]
        except Exception as e:  # pragma: no cover - a bug: fail this collective, not the process
            err = InternalError(f"{h.description} failed in shared memory: {type(e).__name__}: {e}")
        else:
            tl = self.timeline
            if tl is not None and h._t0:
                tl.span(h.sig.name or h.sig.kind, 2, h._t0, time.perf_counter(), h.sig.kind,
                        {"seq": h.seq, "kind": h.sig.kind, "dtype": h.sig.dtype, "shape": list(h.sig.shape),
                         "mode": "shared memory"})
            with self._lock:
                if self._shm_pending and self._shm_pending[0] is h:
                    del self._shm_pending[0]
            h._complete()
            return True
        with self._lock:
            self._break(err)
            self._fail_inflight()  # fails every queued one, h included
        if not h._done:
            h._fail(err)
        return True

    def _shm_poll(self) -> None:
        """Called by shared-memory waits every millisecond: MPI progress, control messages,
        and the error if the communicator broke."""
        with self._lock:
            self._poll_locked(drain=True)
            self._check_usable(drain=False)

    def _shm_mismatch_error(self, seq: int, published: Dict[int, Tuple[int, bytes]]) -> CollflowError:
        if all(pseq == seq for pseq, _ in published.values()):
            return mismatch_error(seq, {p: _body_signature(b) for p, (_, b) in published.items()})
        parts = "; ".join(f"rank {p}: collective #{pseq} {_body_signature(b).describe()}"
                          for p, (pseq, b) in sorted(published.items()))
        return InvalidArgumentError(
            f"mismatched collectives: ranks met in shared memory at different collectives ({parts}). "
            "Every rank must issue the same collectives (names, shapes, dtypes) in the same order")

    def _shm_timeout_error(self, h: _ShmHandle, timeout: float, missing: List[int]) -> CollflowError:
        shm = self._shm
        assert shm is not None
        notes = []
        for p in missing:
            # where the peer is: its last MPI record or the last collective it entered in
            # shared memory, whichever is newer
            last, body = self._neg.peer_last[p], self._neg.peer_record(p)
            pseq, pbody = shm.published(p)
            if pbody.strip(b"\0") and pseq > last:
                last, body = pseq, pbody
            if last >= h.seq:
                notes.append(f"rank {p} started it but did not reach the shared-memory exchange (stuck or dead?)")
            elif body is None or last < 0:
                notes.append(f"rank {p} has started no collective")
            else:
                notes.append(f"rank {p} is at collective #{last} {_body_signature(body).describe()}")
        return _missing_error(f"{h.description} on rank {self._rank}", timeout, missing,
                              f" ({'; '.join(notes)})" if notes else "")
