"""A step as the scaling model sees it: compute segments and collectives, from a trace.

    comm = LoopbackCommunicator(8)                  # rank 0 of 8, in this process
    ... build the model with comm, Session(config={"comm": comm}) ...
    prof = profile_step(sess, fetches, feed, comm=comm)

`profile_step` runs the step a few times untraced (its median is `step_s`) and traced
(RunOptions FULL_TRACE; RunMetadata.step_stats), and turns the trace into a sequence of
segments in the order the plan ran them:

  compute   op time, including the executor's own time up to the next op;
  launch    an asynchronous collective op starting (its own time, e.g. packing a fusion
            bucket, is counted as compute before it);
  wait      the plan waiting for that collective's result (the wait's own time is the
            loopback's stand-in for the transfer and is dropped: the model puts the
            transport's cost there).

Each collective op carries the communicator calls it made (`calls`: kind and bytes; a
FusedAllReduce bucket makes one per large gradient plus one for the packed rest), matched
to the op through its collective key.  The segments' median over the traced runs is
scaled so that they add up to the untraced step minus the stand-in transfers: a traced
run reads the clock around every op, an untraced one does not.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import InvalidArgumentError, NotFoundError
from ..runtime.tracing import RunMetadata, RunOptions, StepStats

__all__ = ["Segment", "StepProfile", "profile_step", "from_step_stats", "median_profile", "segment_keys"]

COMPUTE, LAUNCH, WAIT = "compute", "launch", "wait"
_SUFFIX = {" (launch)": LAUNCH, " (wait)": WAIT}


@dataclass(frozen=True)
class Segment:
    """One piece of a step: `kind` (compute / launch / wait), `seconds` (compute only),
    `op` (op name), and for a launch the communicator `calls` it made: (kind, bytes) each."""

    kind: str
    seconds: float = 0.0
    op: str = ""
    calls: Tuple[Tuple[str, float], ...] = ()


@dataclass
class StepProfile:
    """A step's segments (see the module doc), the world `size` it was built for and the
    measured untraced `step_s` (None when not measured)."""

    segments: List[Segment]
    size: int = 1
    step_s: Optional[float] = None
    notes: List[str] = field(default_factory=list)

    @property
    def compute_s(self) -> float:
        """Seconds of compute in the step (everything but the collectives' transport)."""
        return float(sum(s.seconds for s in self.segments))

    def collectives(self) -> List[Segment]:
        """The launch segments, in launch order."""
        return [s for s in self.segments if s.kind == LAUNCH]

    def comm_bytes(self) -> Dict[str, float]:
        """Bytes per collective kind the step hands to its collectives."""
        out: Dict[str, float] = {}
        for s in self.collectives():
            for kind, nb in s.calls:
                out[kind] = out.get(kind, 0.0) + nb
        return out

    def scaled(self, factor: float) -> "StepProfile":
        """The same step with every compute segment `factor` times as long."""
        if not factor > 0:
            raise InvalidArgumentError(f"StepProfile.scaled: factor must be positive, got {factor}")
        segs = [replace(s, seconds=s.seconds * factor) for s in self.segments]
        return StepProfile(segs, self.size, None if self.step_s is None else self.step_s * factor, list(self.notes))

    def with_calls(self, calls: Dict[str, Sequence[Tuple[str, float]]]) -> "StepProfile":
        """The same step with the calls of the named collective ops replaced (bytes worked
        out elsewhere, e.g. a sparse exchange at another world size)."""
        known = {s.op for s in self.collectives()}
        missing = sorted(set(calls) - known)
        if missing:
            raise InvalidArgumentError(f"with_calls: no collective op named {missing} in this step "
                                       f"(its collectives: {sorted(known)})")
        segs = [replace(s, calls=tuple((k, float(b)) for k, b in calls[s.op])) if s.kind == LAUNCH and s.op in calls
                else s for s in self.segments]
        return StepProfile(segs, self.size, self.step_s, list(self.notes))

    def to_dict(self) -> Dict[str, Any]:
        """A JSON-able form (StepProfile.from_dict reads it back)."""
        return {"size": self.size, "step_s": self.step_s, "notes": list(self.notes),
                "segments": [[s.kind, s.seconds, s.op, [list(c) for c in s.calls]] for s in self.segments]}

    @staticmethod
    def from_dict(d: Dict[str, Any]) -> "StepProfile":
        try:
            segs = [Segment(str(k), float(t), str(op), tuple((str(c[0]), float(c[1])) for c in calls))
                    for k, t, op, calls in d["segments"]]
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidArgumentError(f"StepProfile.from_dict: not a saved profile ({e})") from None
        bad = sorted({s.kind for s in segs} - {COMPUTE, LAUNCH, WAIT})
        if bad:
            raise InvalidArgumentError(f"StepProfile.from_dict: unknown segment kinds {bad}")
        return StepProfile(segs, int(d.get("size", 1)), d.get("step_s"), list(d.get("notes", [])))

    @staticmethod
    def synthetic(forward_s: float, backward_s: float, grad_bytes: float, buckets: int = 1, update_s: float = 0.0,
                  kind: str = "allreduce") -> "StepProfile":
        """A step without a trace (a published model): a forward pass, a backward pass that
        produces `grad_bytes` of gradients at a steady rate in `buckets` equal buckets (each
        launched when complete), and an update after the last one arrives."""
        if buckets < 1 or min(forward_s, backward_s, grad_bytes, update_s) < 0:
            raise InvalidArgumentError("StepProfile.synthetic needs buckets >= 1 and non-negative times and bytes")
        segs = [Segment(COMPUTE, forward_s, "forward")]
        for b in range(buckets):
            segs.append(Segment(COMPUTE, backward_s / buckets, f"backward{b}"))
            segs.append(Segment(LAUNCH, 0.0, f"bucket{b}", ((kind, grad_bytes / buckets),)))
        segs += [Segment(WAIT, 0.0, f"bucket{b}") for b in range(buckets)]
        segs.append(Segment(COMPUTE, update_s, "update"))
        return StepProfile(segs, 0, forward_s + backward_s + update_s, ["synthetic"])


def _events(step_stats: StepStats) -> List[Tuple[int, int, str, str, str]]:
    """(start us, duration us, kind, op name, op type) of every event, in execution order."""
    out = []
    for dev in step_stats.dev_stats:
        for ns in dev.node_stats:
            kind, name = COMPUTE, ns.node_name
            for suffix, k in _SUFFIX.items():
                if name.endswith(suffix):
                    kind, name = k, name[: -len(suffix)]
            out.append((int(ns.all_start_micros), int(ns.all_end_rel_micros), kind, name, ns.op_type))
    out.sort(key=lambda e: e[0])  # stable: events of one microsecond keep their recorded order
    return out


def _op_named(graph: Any, name: str) -> Any:
    """The op called `name`, or None (a copy node's name, "x:0->/gpu:0", is no op of the graph)."""
    if graph is None:
        return None
    try:
        return graph.get_operation_by_name(name)
    except NotFoundError:
        return None


def _op_keys(graph: Any, ops: Sequence[str]) -> List[Tuple[str, str]]:
    """(collective key, op name) of the collective ops, the longest key first ("a/b" before "a")."""
    keys = []
    for name in ops:
        op = _op_named(graph, name)
        key = op.attrs.get("key") if op is not None else None
        if key:
            keys.append((str(key), name))
    return sorted(keys, key=lambda kv: -len(kv[0]))


def _owner(keys: List[Tuple[str, str]], call_name: Optional[str]) -> Optional[str]:
    for key, name in keys:
        if call_name is not None and str(call_name).startswith(key):
            return name
    return None


def _match_calls(keys: List[Tuple[str, str]], ops: Sequence[str],
                 calls: Sequence[Any]) -> Dict[str, List[Tuple[str, float]]]:
    """Assigns each communicator call to the collective op whose key prefixes its name."""
    out: Dict[str, List[Tuple[str, float]]] = {name: [] for name in ops}
    for c in calls:
        name = _owner(keys, c.name)
        if name is not None:
            out[name].append((c.kind, float(c.nbytes)))
    return out


def from_step_stats(step_stats: StepStats, graph: Any = None, calls: Sequence[Any] = (), size: int = 1,
                    step_s: Optional[float] = None, standins: Sequence[Tuple[Optional[str], float]] = ()
                    ) -> StepProfile:
    """A StepProfile of one traced run (see the module doc); `calls` are the communicator
    calls of that run (LoopbackCommunicator.calls), matched to ops through `graph`, and
    `standins` the time its stand-in transfers took (LoopbackCommunicator.standins): a
    wait's own time less its op's stand-ins is the kernel's work on the result (compute)."""
    ev = _events(step_stats)
    if not ev:
        raise InvalidArgumentError("from_step_stats: the step stats hold no events (was the run traced? "
                                   "pass options=RunOptions(trace_level=RunOptions.FULL_TRACE))")
    launched = [e[3] for e in ev if e[2] == LAUNCH]
    keys = _op_keys(graph, launched)
    matched = _match_calls(keys, launched, calls)
    standin: Dict[str, float] = {}
    for call_name, secs in standins:
        name = _owner(keys, call_name)
        if name is not None:
            standin[name] = standin.get(name, 0.0) + secs
    segs: List[Segment] = []
    for i, (start, dur, kind, name, _) in enumerate(ev):
        nxt = ev[i + 1][0] if i + 1 < len(ev) else start + dur
        if kind == COMPUTE:
            segs.append(Segment(COMPUTE, max(0, nxt - start) * 1e-6, name))
        elif kind == LAUNCH:
            segs.append(Segment(COMPUTE, max(0, nxt - start) * 1e-6, name + " (launch)"))
            segs.append(Segment(LAUNCH, 0.0, name, tuple(matched.get(name, ()))))
        else:
            # without stand-in times the whole wait is taken for the transfer
            own = max(0.0, dur * 1e-6 - standin[name]) if name in standin else 0.0
            segs.append(Segment(WAIT, 0.0, name))
            segs.append(Segment(COMPUTE, max(0, nxt - start - dur) * 1e-6 + own, name + " (after wait)"))
    return StepProfile(segs, size, step_s)


def segment_keys(segments: Sequence[Segment]) -> List[Tuple[str, str, int]]:
    """(kind, op, k): the k-th segment of that kind and op (segments matched across runs)."""
    seen: Dict[Tuple[str, str], int] = {}
    out = []
    for s in segments:
        k = seen.get((s.kind, s.op), 0)
        seen[(s.kind, s.op)] = k + 1
        out.append((s.kind, s.op, k))
    return out


def median_profile(runs: Sequence[StepProfile]) -> StepProfile:
    """The per-segment median of profiles of one step (the same segments in each); its
    `step_s` is the median of theirs."""
    if not runs:
        raise InvalidArgumentError("median_profile needs at least one profile")
    keys = segment_keys(runs[0].segments)
    rows = []
    for r in runs:
        secs = dict(zip(segment_keys(r.segments), (s.seconds for s in r.segments)))
        if set(secs) != set(keys):
            raise InvalidArgumentError("median_profile: the profiles ran different ops (a data-dependent plan?); "
                                       "profile one run with from_step_stats instead")
        rows.append([secs[k] for k in keys])
    # segments matched by op, not position (independent waits may come in another order);
    # the first profile's order is kept
    secs = np.median(np.array(rows), axis=0)
    steps = [r.step_s for r in runs if r.step_s is not None]
    return StepProfile([replace(s, seconds=float(t)) for s, t in zip(runs[0].segments, secs)], runs[0].size,
                       statistics.median(steps) if steps else None)


def profile_step(sess: Any, fetches: Any, feed_dict: Optional[dict] = None, comm: Any = None, traces: int = 5,
                 repeats: int = 9, warmup: int = 2) -> StepProfile:
    """Profiles `sess.run(fetches, feed_dict)` (see the module doc).  `comm`: the session's
    communicator when it is a LoopbackCommunicator (its calls give the collectives' bytes).
    Feeds may be a list of feed dicts, used in turn (distinct batches)."""
    if traces < 1 or repeats < 1:
        raise InvalidArgumentError(f"profile_step: traces and repeats must be >= 1, got {traces}, {repeats}")
    feeds = feed_dict if isinstance(feed_dict, list) else [feed_dict]
    k = [0]

    def run(**kw: Any) -> None:
        sess.run(fetches, feeds[k[0] % len(feeds)], **kw)
        k[0] += 1
    for _ in range(warmup):
        run()
    calls = getattr(comm, "calls", None)
    stand = getattr(comm, "standins", None)
    size = getattr(comm, "size", 1) if comm is not None else 1
    opts = RunOptions(trace_level=RunOptions.FULL_TRACE)
    runs, waits, untraced = [], [], []
    for _ in range(traces):  # traced and untraced runs interleaved: drifts in load hit both
        if calls is not None:
            calls.clear()
        if stand is not None:
            stand.clear()
        md = RunMetadata()
        run(options=opts, run_metadata=md)
        runs.append(from_step_stats(md.step_stats, sess.graph, list(calls or ()), size, standins=list(stand or ())))
        for _ in range(max(1, repeats // traces)):
            s0 = getattr(comm, "standin_s", None)
            t0 = time.perf_counter()
            run()
            untraced.append(time.perf_counter() - t0)
            # what the untraced step spent in stand-in transfers (all of its waits without them)
            waits.append(comm.standin_s - s0 if s0 is not None
                         else sum(e[1] for e in _events(md.step_stats) if e[2] == WAIT) * 1e-6)
    prof = median_profile(runs)
    step = statistics.median(untraced)
    target = step - statistics.median(waits)
    if prof.compute_s > 0 and target > 0:
        prof = prof.scaled(target / prof.compute_s)
    prof.step_s = step
    prof.notes.append(f"{traces} traced runs (median per segment), untraced median {step * 1e3:.3f} ms")
    return prof
