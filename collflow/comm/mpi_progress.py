"""The progress engine of MPICommunicator: a daemon thread that moves collectives on while the
rank computes.

Open MPI advances a nonblocking collective only inside MPI calls, so a collective started
before a long computation would sit idle until its wait.  While any request is in flight the
thread tests them every ~50 us (mpi4py releases the GIL inside MPI), which is what lets
gradient all-reduces overlap the backward pass; it also runs queued shared-memory all-reduces
when they are due (mpi_shm.ShmQueue.due).  A thread that waits on a collective polls itself:
inside `waiting()` the engine stands aside.  Started with the first collective that needs it
(a rank whose collectives all run as blocking calls has no second thread: an idle one
measurably slowed such steps).
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional

__all__ = ["Progress"]

_INTERVAL_S = 5e-5


class Progress:
    """The engine of one communicator.  `in_flight()`: whether MPI requests are in flight;
    `poll()`: tests them (without blocking on the communicator's lock); `shm_due()`: seconds
    until the oldest queued shared-memory all-reduce may run (None: none queued);
    `advance_shm()`: runs the queued ones as far as they go.  `enabled=False`: never started
    (every wait polls for itself)."""

    def __init__(self, enabled: bool, in_flight: Callable[[], bool], poll: Callable[[], None],
                 shm_due: Callable[[], Optional[float]], advance_shm: Callable[[], None]):
        self.enabled = enabled
        self._in_flight, self._poll, self._shm_due, self._advance_shm = in_flight, poll, shm_due, advance_shm
        self._waiters = 0
        self._wake = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._stopped = False

    @property
    def started(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        """Starts the thread if it is enabled and not started (or stopped) yet."""
        if self.enabled and self._thread is None and not self._stopped:
            self._thread = threading.Thread(target=self._loop, name="collflow-mpi-progress", daemon=True)
            self._thread.start()

    def wake(self) -> None:
        """Something new to move on: end the thread's idle wait."""
        if self._thread is not None:
            self._wake.set()

    def waiting(self) -> "_Waiting":
        """A context: the calling thread polls for itself meanwhile; the engine stands aside."""
        return _Waiting(self)

    def stop(self) -> None:
        """Tells the thread to end (join() waits for it)."""
        self._stopped = True
        self._wake.set()

    def join(self, timeout: float) -> None:
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=timeout)

    def _loop(self) -> None:
        while not self._stopped:
            due = self._shm_due()
            busy = self._in_flight()
            if not busy and (due is None or due > 0):
                self._wake.wait(0.1 if due is None else min(0.1, due))
                self._wake.clear()
                continue
            if self._waiters:  # a waiting thread polls itself; stay out of its way
                time.sleep(1e-3)
                continue
            if due == 0:
                self._advance_shm()
            if busy:
                try:
                    self._poll()
                except Exception:  # pragma: no cover - poll records its errors itself
                    pass
            time.sleep(_INTERVAL_S)


class _Waiting:
    __slots__ = ("_p",)

    def __init__(self, p: Progress):
        self._p = p

    def __enter__(self) -> None:
        self._p._waiters += 1

    def __exit__(self, *exc: Any) -> None:
        self._p._waiters -= 1
