"""A Horovod-style timeline of one rank's collectives, in Chrome's trace format.

    comm.start_timeline("/tmp/timeline.json")     # or COLLFLOW_TIMELINE=/tmp/timeline.json
    ... train ...
    comm.stop_timeline()                          # also on comm.close() and at exit

Open the file in chrome://tracing or https://ui.perfetto.dev.  Per collective (named by its
key, e.g. the gradient bucket) it shows: NEGOTIATE (waiting until every rank announced the
same collective), the blocking MPI call or the nonblocking one in flight (from posting to the
poll that saw it complete), and the fusion kernel's PACK copy.  With several ranks each
writes its own file: a "{rank}" in the path is replaced by the rank, else ".rank<R>" is
inserted before the extension for ranks other than 0.
"""
from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Dict, List, Optional

__all__ = ["CommTimeline", "timeline_path"]

# events kept in memory at most (a long run keeps its first events and says how many it dropped)
MAX_EVENTS = 1_000_000

# lanes (Chrome "threads") of a rank's timeline
LANE_NEGOTIATE, LANE_MPI, LANE_FUSION = 1, 2, 3
_LANE_NAMES = {LANE_NEGOTIATE: "negotiate", LANE_MPI: "collectives", LANE_FUSION: "fusion buffer"}


def timeline_path(path: str, rank: int) -> str:
    """Each rank's file: "{rank}" in `path` becomes the rank; else ".rank<R>" before the
    extension (rank 0 keeps `path` as given)."""
    if "{rank}" in path:
        return path.replace("{rank}", str(rank))
    if rank == 0:
        return path
    root, ext = os.path.splitext(path)
    return f"{root}.rank{rank}{ext or '.json'}"


class CommTimeline:
    """Collects trace events of one rank and writes them as a Chrome trace JSON file."""

    def __init__(self, path: str, rank: int = 0):
        self.path = path
        self.rank = rank
        self._events: List[Dict[str, Any]] = []
        self._dropped = 0
        self._lock = threading.Lock()
        self._t0 = time.perf_counter()
        self._wall0 = time.time()
        self.closed = False
        d = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(d):
            raise FileNotFoundError(f"timeline directory {d!r} does not exist")

    def _us(self, t: float) -> float:
        return round((t - self._t0) * 1e6, 3)

    def _add(self, ev: Dict[str, Any]) -> None:
        with self._lock:
            if len(self._events) >= MAX_EVENTS:
                self._dropped += 1
                return
            self._events.append(ev)

    def span(self, name: str, lane: int, start: float, end: float, cat: str = "collective",
             args: Optional[Dict[str, Any]] = None) -> None:
        """A complete event [start, end] (perf_counter seconds) on one lane."""
        ev = {"name": name, "cat": cat, "ph": "X", "ts": self._us(start), "dur": round((end - start) * 1e6, 3),
              "pid": self.rank, "tid": lane}
        if args:
            ev["args"] = args
        self._add(ev)

    def flight(self, name: str, ident: int, start: float, end: float, cat: str = "collective",
               args: Optional[Dict[str, Any]] = None) -> None:
        """An asynchronous span (collectives in flight may overlap each other)."""
        b = {"name": name, "cat": cat, "ph": "b", "id": ident, "ts": self._us(start), "pid": self.rank,
             "tid": LANE_MPI}
        if args:
            b["args"] = args
        self._add(b)
        self._add({"name": name, "cat": cat, "ph": "e", "id": ident, "ts": self._us(end), "pid": self.rank,
                   "tid": LANE_MPI})

    def write(self) -> str:
        """Writes the events so far (atomically: a temporary file renamed over the target)."""
        with self._lock:
            events = list(self._events)
            dropped = self._dropped
        meta = [{"name": "process_name", "ph": "M", "pid": self.rank, "args": {"name": f"rank {self.rank}"}}]
        meta += [{"name": "thread_name", "ph": "M", "pid": self.rank, "tid": k, "args": {"name": v}}
                 for k, v in _LANE_NAMES.items()]
        doc = {"traceEvents": meta + events, "displayTimeUnit": "ms",
               "otherData": {"rank": self.rank, "start_unix_time": self._wall0, "dropped_events": dropped}}
        tmp = f"{self.path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        return self.path

    def close(self) -> Optional[str]:
        if self.closed:
            return None
        self.closed = True
        return self.write()
