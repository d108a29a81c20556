"""Backup ranks: the quorum protocol that lets a step go on without its slowest ranks.

With `b` backup ranks in a world of `N`, each step aggregates the gradients of the first
`N - b` ranks to finish their backward pass.  Rank 0 runs a small coordinator thread; every
rank runs a listener thread.  Per step `s`:

1. A rank whose local gradients are complete sends READY(s) to the coordinator and waits for
   the decision (this happens inside the first gradient collective of the step, before any
   collective is issued).
2. The coordinator takes the first `N - b` READY(s) messages it receives, in arrival order,
   as the members of step `s`, and sends DECISION(s, members) to every rank.  READY(s)
   messages arriving after that are ignored.  The coordinator is the only place where the
   quorum is decided, so a rank finishing just as the quorum closes is either a member
   everywhere or nowhere.
3. A member contributes its gradients (flag 1.0); a non-member contributes zeros (flag
   0.0).  The all-reduce carries the flags, so every rank divides by the same number of
   contributors and applies the same update: replicas stay bit-identical.
4. A rank still computing when DECISION(s) excludes it cancels its run between ops, if it
   has not issued a collective of step `s` yet, and joins the step's collectives with zeros
   (its *catch-up* run feeds zero gradients, so none of its backward pass runs again).
   DECISION messages carry their step: a decision for an old step is recorded and never
   cancels a newer step; a decision that arrives before the rank starts that step makes
   the rank skip straight to its catch-up.

With b = 0 none of this runs: the plain synchronous path is used.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Any, Dict, FrozenSet, List, Optional

import numpy as np

from ..errors import CancelledError, DeadlineExceededError, InvalidArgumentError

__all__ = ["BackupQuorum"]

_TAG_READY, _TAG_DECISION = 9101, 9102
_STOP = -1


class _Transport:
    """Moves READY and DECISION messages; one implementation per backend."""

    def send_ready(self, step: int, rank: int) -> None:
        raise NotImplementedError

    def recv_ready(self, timeout: float) -> Optional[tuple]:
        raise NotImplementedError

    def send_decision(self, step: int, members: FrozenSet[int]) -> None:
        raise NotImplementedError

    def recv_decision(self, rank: int, timeout: float) -> Optional[tuple]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class _MPITransport(_Transport):
    """Point-to-point messages on a communicator of their own (a Dup of the world)."""

    def __init__(self, comm: Any):
        self.MPI = comm._MPI
        self.c = comm.mpi_comm.Dup()
        self.size = comm.size
        self.rank = comm.rank
        self._rbuf = np.zeros(2, dtype=np.int64)
        self._rreq = self.c.Irecv(self._rbuf, source=self.MPI.ANY_SOURCE, tag=_TAG_READY) if self.rank == 0 else None
        self._dbuf = np.zeros(2 + self.size, dtype=np.int64)
        self._dreq = self.c.Irecv(self._dbuf, source=0, tag=_TAG_DECISION)
        self._sends: List[Any] = []
        self._lock = threading.Lock()

    def _isend(self, buf: np.ndarray, dest: int, tag: int) -> None:
        with self._lock:
            self._sends = [(r, b) for r, b in self._sends if not r.Test()]
            self._sends.append((self.c.Isend(buf, dest=dest, tag=tag), buf))

    def send_ready(self, step: int, rank: int) -> None:
        self._isend(np.array([step, rank], dtype=np.int64), 0, _TAG_READY)

    def _poll(self, req_attr: str, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while True:
            with self._lock:
                if getattr(self, req_attr).Test():
                    return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.0002)

    def recv_ready(self, timeout: float) -> Optional[tuple]:
        if not self._poll("_rreq", timeout):
            return None
        step, rank = int(self._rbuf[0]), int(self._rbuf[1])
        with self._lock:
            self._rreq = self.c.Irecv(self._rbuf, source=self.MPI.ANY_SOURCE, tag=_TAG_READY)
        return step, rank

    def send_decision(self, step: int, members: FrozenSet[int]) -> None:
        msg = np.zeros(2 + self.size, dtype=np.int64)
        msg[0] = step
        msg[1] = len(members)
        for m in members:
            msg[2 + m] = 1
        for r in range(self.size):
            self._isend(msg.copy(), r, _TAG_DECISION)

    def recv_decision(self, rank: int, timeout: float) -> Optional[tuple]:
        if not self._poll("_dreq", timeout):
            return None
        step = int(self._dbuf[0])
        members = frozenset(int(i) for i in np.nonzero(self._dbuf[2:])[0])
        with self._lock:
            self._dreq = self.c.Irecv(self._dbuf, source=0, tag=_TAG_DECISION)
        return step, members

    def close(self) -> None:
        with self._lock:
            for req in (self._rreq, self._dreq):
                if req is not None:
                    try:
                        req.Cancel()
                        req.Wait()
                    except Exception:
                        pass
            self._sends = []


class _ThreadTransport(_Transport):
    """For a ThreadWorld: queues in one process, shared by the world's ranks."""

    _worlds: Dict[int, dict] = {}
    _wlock = threading.Lock()

    def __init__(self, comm: Any):
        world = comm._world
        with self._wlock:
            st = self._worlds.get(id(world))
            if st is None:
                st = {"ready": queue.Queue(), "decision": [queue.Queue() for _ in range(world.size)]}
                self._worlds[id(world)] = st
        self.st = st
        self.size = world.size

    def send_ready(self, step: int, rank: int) -> None:
        self.st["ready"].put((step, rank))

    def recv_ready(self, timeout: float) -> Optional[tuple]:
        try:
            return self.st["ready"].get(timeout=timeout)
        except queue.Empty:
            return None

    def send_decision(self, step: int, members: FrozenSet[int]) -> None:
        for q in self.st["decision"]:
            q.put((step, members))

    def recv_decision(self, rank: int, timeout: float) -> Optional[tuple]:
        try:
            return self.st["decision"][rank].get(timeout=timeout)
        except queue.Empty:
            return None


def _transport_for(comm: Any) -> _Transport:
    backend = getattr(comm, "backend", "")
    if backend == "mpi":
        return _MPITransport(comm)
    if backend == "threads":
        return _ThreadTransport(comm)
    raise InvalidArgumentError(f"backup ranks need an MPI or thread-world communicator, got {comm!r}")


class BackupQuorum:
    """One rank's side of the quorum protocol (see the module docstring)."""

    def __init__(self, comm: Any, backup_ranks: int, timeout: Optional[float] = None):
        n = comm.size
        if not 0 <= backup_ranks < n:
            raise InvalidArgumentError(f"backup_ranks must be in [0, {n - 1}] for {n} ranks, got {backup_ranks}")
        self.comm = comm
        self.rank = comm.rank
        self.size = n
        self.need = n - backup_ranks
        self.timeout = timeout if timeout is not None else getattr(comm, "timeout", None) or 300.0
        self.step = -1
        self.history: List[dict] = []           # per step: members and late ranks
        self._decisions: Dict[int, FrozenSet[int]] = {}
        self._cond = threading.Condition()
        self._token: Any = None
        self._issued = False                     # a collective of the current step was issued
        self._closed = False
        self._t = _transport_for(comm)
        self._threads = [threading.Thread(target=self._listen, name=f"collflow-quorum-listen{self.rank}", daemon=True)]
        if self.rank == 0:
            self._threads.append(threading.Thread(target=self._coordinate, name="collflow-quorum-coord", daemon=True))
        for th in self._threads:
            th.start()

    # -- the worker's side ---------------------------------------------------------------
    def begin_step(self, token: Any) -> bool:
        """Starts the next step with this run's token; False if the rank is already excluded."""
        with self._cond:
            self.step += 1
            self._token = token
            self._issued = False
            d = self._decisions.get(self.step)
            return d is None or self.rank in d

    def contribution(self) -> float:
        """1.0 if this rank's gradients count this step, else 0.0 (blocks for the decision).

        Called by every gradient collective before it is issued.
        """
        with self._cond:
            s = self.step
            if not self._issued:
                tok = self._token
                if tok is not None and tok.c:
                    # cancelled (by the quorum or anyone) before any collective of the step was
                    # issued: leave this run; a catch-up run sends zeros for the step
                    raise CancelledError(f"step {s}: run cancelled before its gradients were sent"
                                         + (f" ({tok.reason})" if tok.reason else ""))
                self._issued = True
                if s not in self._decisions:
                    self._t.send_ready(s, self.rank)
            end = time.monotonic() + self.timeout
            while s not in self._decisions:
                left = end - time.monotonic()
                if left <= 0 or self._closed:
                    raise DeadlineExceededError(
                        f"step {s}: no quorum decision from rank 0 within {self.timeout:g} s "
                        f"(needs {self.need} of {self.size} ranks ready)")
                self._cond.wait(min(left, 0.5))
            return 1.0 if self.rank in self._decisions[s] else 0.0

    def excluded(self) -> bool:
        """True when the current step's decision leaves this rank out."""
        with self._cond:
            d = self._decisions.get(self.step)
            return d is not None and self.rank not in d

    def begin_catch_up(self) -> None:
        """The excluded rank's catch-up run starts: it sends zeros, nothing cancels it."""
        with self._cond:
            self._token = None
            self._issued = False

    def end_step(self) -> dict:
        """Records the finished step (members, late ranks) and forgets old decisions."""
        with self._cond:
            members = self._decisions.get(self.step, frozenset(range(self.size)))
            rec = {"step": self.step, "members": sorted(members),
                   "late": sorted(set(range(self.size)) - set(members))}
            self.history.append(rec)
            for k in [k for k in self._decisions if k < self.step]:
                del self._decisions[k]
            self._token = None
            return rec

    # -- threads ------------------------------------------------------------------------
    def _listen(self) -> None:
        while not self._closed:
            msg = self._t.recv_decision(self.rank, 0.2)
            if msg is None:
                continue
            step, members = msg
            if step == _STOP:
                return
            with self._cond:
                if step < self.step:
                    continue  # an old step's decision: already handled
                self._decisions[step] = members
                if step == self.step and self.rank not in members and not self._issued and self._token is not None:
                    self._token.cancel(f"step {step}: quorum of {len(members)} reached without rank {self.rank}")
                self._cond.notify_all()

    def _coordinate(self) -> None:
        ready: Dict[int, List[int]] = {}
        decided: List[int] = []
        while not self._closed:
            msg = self._t.recv_ready(0.2)
            if msg is None:
                continue
            step, rank = msg
            if step == _STOP:
                return
            if step in decided:
                continue
            got = ready.setdefault(step, [])
            if rank not in got:
                got.append(rank)
            if len(got) >= self.need:
                members = frozenset(got[:self.need])
                decided.append(step)
                del ready[step]
                if len(decided) > 64:
                    decided.pop(0)
                self._t.send_decision(step, members)

    def close(self) -> None:
        self._closed = True
        with self._cond:
            self._cond.notify_all()
        for th in self._threads:
            th.join(timeout=2)
        self._t.close()
