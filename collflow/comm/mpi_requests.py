"""The MPI transport of MPICommunicator: the MPI requests of the collectives in flight.

A collective is one nonblocking MPI call (its first phase), or two: an allgatherv or
alltoallv whose counts must first be exchanged has a second phase, posted once the first
completed and strictly in the order of the collectives (on its own duplicate communicator),
whichever first phase finished first.  `InFlight` keeps the handles whose requests MPI still
holds, tests them oldest first (a few per poll: collectives complete about in the order they
started, so testing the later ones of a long queue every time only costs time), posts the
second phases in turn, and on a failure keeps the requests and buffers of the collectives
that can no longer complete (MPI may still write those buffers).

A handle (mpi.py's _MPIHandle) is the record: `req` (the request), `stage`, `post2` (the
second phase's call), `vseq` (its turn), `bufs` (the arrays MPI may touch), `settled`
(completed or failed), `complete()` and `fail(err)`.
Not thread-safe by itself: called under the communicator's lock.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional

from ..errors import CollflowError

__all__ = ["InFlight", "UNPOSTED", "PHASE1", "TURN", "PHASE2"]

# a collective's stages: not posted yet (a wait-now collective waiting for the peers' votes);
# first phase in flight; first phase done, waiting its turn to post the second; second phase
# in flight
UNPOSTED, PHASE1, TURN, PHASE2 = "unposted", "phase 1", "turn", "phase 2"
_POLL_DEPTH = 4                     # incomplete collectives tested per poll, oldest first


class InFlight:
    """The collectives whose MPI requests are in flight (see the module doc)."""

    def __init__(self) -> None:
        self._handles: List[Any] = []
        self._v_next = 0      # next second-phase turn to hand out
        self._v_posted = 0    # second phases started so far (they start in this order)
        self.zombies: List[tuple] = []  # (request, buffers) of collectives that cannot finish

    def __len__(self) -> int:
        return len(self._handles)

    def handles(self) -> List[Any]:
        return list(self._handles)

    def post(self, h: Any, post1: Callable[[], Any], post2: Optional[Callable[[], Any]] = None) -> None:
        """Hands h's first nonblocking call to MPI (its exception propagates: nothing is
        queued then) and queues h for testing; `post2`: its second phase, posted in turn."""
        h.req = post1()
        if post2 is not None:
            h.post2 = post2
            h.vseq = self._v_next
            self._v_next += 1
        self._handles.append(h)

    def add_unposted(self, h: Any) -> None:
        """Queues a handle with no request (to be failed with the rest)."""
        self._handles.append(h)

    def test(self) -> None:
        """Tests the oldest requests; completes the finished collectives, posts second phases
        whose turn came.  An MPI exception propagates (the queue is left as it was, less the
        collectives completed before it: the caller fails the rest)."""
        if not self._handles:
            return
        keep = []
        pending = 0
        inflight = self._handles
        for k, h in enumerate(inflight):
            if pending >= _POLL_DEPTH:
                keep.extend(inflight[k:])
                break
            pending += 1
            if h.stage == PHASE1 and h.req.Test():
                if h.post2 is None:
                    h.complete()
                    pending -= 1
                    continue
                h.stage = TURN
            if h.stage == TURN:
                if h.vseq == self._v_posted:  # second phases start in collective order
                    h.req = h.post2()
                    h.stage = PHASE2
                    self._v_posted += 1
            elif h.stage == PHASE2 and h.req.Test():
                h.complete()
                pending -= 1
                continue
            keep.append(h)
        self._handles = keep

    def fail_all(self, err: CollflowError) -> None:
        """Every collective in flight fails with err; their requests and buffers are kept."""
        for h in self._handles:
            if h.settled:
                continue
            if h.req is not None:
                self.zombies.append((h.req, h.bufs))  # MPI may still write these buffers
            h.fail(err)
        self._handles = []

    def requests(self) -> List[Any]:
        """Every request MPI may still hold (in flight or kept after a failure)."""
        return [h.req for h in self._handles if h.req is not None] + [z[0] for z in self.zombies]

    @property
    def clean(self) -> bool:
        """Nothing in flight and nothing kept after a failure."""
        return not self._handles and not self.zombies
