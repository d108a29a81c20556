"""What MPICommunicator's ranks tell each other about their collectives, on the control
communicator: arrival records and notices (mpi_wire.py has their bytes).

* Arrival records.  Starting collective #k, a rank sends every peer a 256-byte record (k,
  kind, dtype, shape, reduction/root, name, whether it waits at once).  A peer's record of
  #k is compared with this rank's own as soon as both exist (whichever came first): a
  conflict is a mismatch error naming both.  The newest record of each peer says where it
  is (named by timeouts); the "waits at once" flags are votes for running #k as MPI's
  blocking call.
* Notices.  A rank that breaks tells every peer why (timeout, mismatch, other); a rank that
  leaves tells them how many collectives it issued (collflow.comm.departure).

`Negotiation` keeps that state and the control traffic; the communicator decides what an
arrival or a notice means for its collectives (it owns their numbering and its broken state).
Not thread-safe by itself: every call is made under the communicator's lock.
"""
from __future__ import annotations

import sys
import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..errors import CollflowError
from . import departure as _departure
from .base import Signature, mismatch_error
from .mpi_wire import (_FAIL_BYTES, _FAIL_LEFT, _REC_INTS, _REC_MODE, _TAG_ARRIVE, _TAG_FAIL, _bodies_conflict,
                       _body_signature, _decode_fail, _encode_fail, _encode_record, _fail_code, _fail_error, _sent)

__all__ = ["Negotiation"]


class Negotiation:
    """Arrival records and notices of one communicator (see the module doc).

    Read by the other parts: `peer_last[p]` (the newest collective number rank p announced,
    -1 before any) and `peer_record(p)` (its record body); `departed` (who left, after how
    many collectives); `last_drain` (when the control messages were last read).
    """

    def __init__(self, ctl: Any, MPI: Any, rank: int, size: int, track: bool):
        self._ctl = ctl
        self._MPI = MPI
        self.rank, self.size, self.track = rank, size, track
        self.peer_last = [-1] * size
        self._peer_rec: List[Optional[bytes]] = [None] * size  # last record body of each peer
        self._mine: Dict[int, bytes] = {}                      # own record bodies by number
        self._mine_limit = 256                                 # prune _mine beyond this many
        self._theirs: Dict[int, Dict[int, bytes]] = {}         # records of peers ahead of this rank
        self._templates: Dict[Signature, np.ndarray] = {}      # encoded records, reused every step
        self._votes: Dict[int, int] = {}                       # number -> peers that wait at once
        self._sends: List[Tuple[Any, np.ndarray]] = []
        self.departed = _departure.Departures()
        self.last_drain = 0.0
        self._status = MPI.Status()
        if size > 1:
            self._arr_buf = np.zeros(_REC_INTS, dtype=np.int64)
            self._arr_req = ctl.Irecv(self._arr_buf, source=MPI.ANY_SOURCE, tag=_TAG_ARRIVE)
            self._fail_buf = np.zeros(_FAIL_BYTES, dtype=np.uint8)
            self._fail_req = ctl.Irecv(self._fail_buf, source=MPI.ANY_SOURCE, tag=_TAG_FAIL)

    # -- this rank's records --------------------------------------------------------------
    def template(self, sig: Signature) -> np.ndarray:
        """The encoded arrival record of `sig` (number 0, mode 0), cached."""
        tpl = self._templates.get(sig)
        if tpl is None:
            tpl = np.zeros(_REC_INTS, dtype=np.int64)
            _encode_record(tpl, 0, sig)
            if len(self._templates) < 4096:
                self._templates[sig] = tpl
        return tpl

    def record_body(self, sig: Signature) -> bytes:
        """A record body for `sig` without announcing it (arrival tracking off)."""
        return self.template(sig).tobytes()[8:]

    def announce(self, seq: int, sig: Signature, wait_now: bool = False,
                 send: bool = True) -> Tuple[bytes, Optional[CollflowError]]:
        """Records collective #seq as this rank's and (send=True) sends the record to every
        peer.  Returns its body, and the mismatch error when a peer's record of #seq came
        first and conflicts (the caller breaks the communicator with it).  send=False
        (shared-memory collectives, whose records the peers read in shared memory): only
        recorded, so a peer's MPI collective issued as #seq is still caught."""
        buf = self.template(sig).copy()
        buf[0] = seq
        buf[_REC_MODE] = int(wait_now)
        mine = buf.tobytes()[8:]
        theirs = self._theirs.pop(seq, None)
        if theirs:
            bad = {p: b for p, b in theirs.items() if _bodies_conflict(mine, b)}
            if bad:
                bad[self.rank] = mine
                return mine, mismatch_error(seq, {p: _body_signature(b) for p, b in bad.items()})
        self._mine[seq] = mine
        if send:
            isend = self._ctl.Isend
            for p in range(self.size):
                if p != self.rank:
                    self._sends.append((isend(buf, dest=p, tag=_TAG_ARRIVE), buf))
        if len(self._mine) > self._mine_limit:
            self._prune()
        return mine, None

    def _prune(self) -> None:
        lo = min(v for p, v in enumerate(self.peer_last) if p != self.rank)
        for k in [k for k in self._mine if k <= lo]:
            del self._mine[k]
        for k in [k for k in self._votes if k <= lo - 256]:
            del self._votes[k]
        if len(self._mine) > 4096:
            # peers that send no records (their collectives ran in shared memory) leave lo
            # behind: keep the newest; a record 4096 collectives late is not waited for
            for k in sorted(self._mine)[:-4096]:
                del self._mine[k]
        # next pass once it has doubled: pruning stays O(1) per collective
        self._mine_limit = max(256, 2 * len(self._mine))

    # -- the peers' messages ----------------------------------------------------------------
    def peer_record(self, p: int) -> Optional[bytes]:
        return self._peer_rec[p]

    def pop_votes(self, seq: int) -> int:
        """How many peers announced they wait for #seq at once (forgotten after)."""
        return self._votes.pop(seq, 0)

    def drain(self, next_seq: int, checking: bool) -> Tuple[Optional[CollflowError], Optional[Tuple[int, CollflowError]]]:
        """Reads the control messages received so far.  `next_seq`: the number this rank's next
        collective will get (a record beyond it is kept until then); `checking`: compare
        records (False once the communicator broke).  Returns (the first mismatch found, the
        first failure notice as (rank, error)); departures are recorded in `departed`."""
        self.last_drain = time.monotonic()
        st = self._status
        mismatch: Optional[CollflowError] = None
        notice: Optional[Tuple[int, CollflowError]] = None
        while self._arr_req.Test(st):
            src = st.Get_source()
            rec = self._arr_buf.tobytes()
            self._arr_req = self._ctl.Irecv(self._arr_buf, source=self._MPI.ANY_SOURCE, tag=_TAG_ARRIVE)
            err = self._on_arrival(src, int.from_bytes(rec[:8], sys.byteorder, signed=True), rec[8:], next_seq,
                                   checking and mismatch is None)
            mismatch = mismatch or err
        while self._fail_req.Test(st):
            src = st.Get_source()
            code, msg = _decode_fail(self._fail_buf)
            self._fail_req = self._ctl.Irecv(self._fail_buf, source=self._MPI.ANY_SOURCE, tag=_TAG_FAIL)
            if code == _FAIL_LEFT:
                self.departed.record(src, msg)
            elif notice is None:
                notice = (src, _fail_error(code, f"rank {src} reported: {msg}"))
        return mismatch, notice

    def _on_arrival(self, src: int, seq: int, body: bytes, next_seq: int, checking: bool) -> Optional[CollflowError]:
        self.peer_last[src] = seq
        self._peer_rec[src] = body
        if body[(_REC_MODE - 1) * 8]:
            self._votes[seq] = self._votes.get(seq, 0) + 1
        mine = self._mine.get(seq)
        if mine is None:
            if seq >= next_seq:  # the peer is ahead: compare when this rank gets there
                self._theirs.setdefault(seq, {})[src] = body
            return None
        if checking and _bodies_conflict(mine, body):
            return mismatch_error(seq, {self.rank: _body_signature(mine), src: _body_signature(body)})
        return None

    # -- notices ------------------------------------------------------------------------------
    def notify_failure(self, err: CollflowError) -> None:
        """Tells every peer this rank broke, and why."""
        self._notify(_encode_fail(_fail_code(err), err.message))

    def notify_departure(self, issued: int, reason: Optional[str]) -> None:
        """Tells every peer this rank leaves after `issued` collectives, and why."""
        self._notify(_encode_fail(_FAIL_LEFT, _departure.encode(issued, reason)))

    def _notify(self, buf: np.ndarray) -> None:
        for p in range(self.size):
            if p != self.rank:
                try:
                    self._sends.append((self._ctl.Isend(buf, dest=p, tag=_TAG_FAIL), buf))
                except Exception:
                    pass

    def reap_sends(self) -> None:
        """Forgets the sends that are over."""
        if self._sends:
            self._sends = [s for s in self._sends if not _sent(s[0])]

    def close(self, linger_s: float = 0.02) -> None:
        """Gives the sends a moment to leave (one still pending is completed by MPI while the
        process finalizes) and cancels the receives."""
        end = time.monotonic() + linger_s
        while self._sends and time.monotonic() < end:
            self.reap_sends()
        if self.size > 1:
            for req in (self._arr_req, self._fail_req):
                try:
                    req.Cancel()
                    req.Wait()
                except Exception:
                    pass
