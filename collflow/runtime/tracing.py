"""Step tracing (TensorFlow 1.x's RunOptions / RunMetadata / timeline).

    opts = cf.RunOptions(trace_level=cf.RunOptions.FULL_TRACE)
    md = cf.RunMetadata()
    sess.run(train_op, feed, options=opts, run_metadata=md)
    open("step.json", "w").write(cf.Timeline(md.step_stats).generate_chrome_trace_format())

A traced run uses its own compiled plan: the same ops in the same order, with a clock read
around every kernel call (plans run without tracing are untouched and pay nothing).  Each
op gives one event on its device's row; an asynchronous op (a collective, a device copy)
gives two: its launch, and the wait for its result where the plan first needs it (so the
time a collective was in flight shows as the gap between them).  On a GPU an op's event is
the time to launch its kernels (CUDA runs them asynchronously), as in TensorFlow's software
trace; a device copy's wait shows when its data was there.  Open the Chrome trace in
chrome://tracing or https://ui.perfetto.dev; the communicator's own timeline
(`comm.start_timeline`) shows the same collectives from the MPI side.
"""
from __future__ import annotations

import json
import threading
import time
from typing import Any, Dict, List, Sequence, Tuple

__all__ = ["RunOptions", "RunMetadata", "StepStats", "DeviceStepStats", "NodeExecStats", "Timeline"]

# what a traced plan records per event: (index into plan.ops, kind, start, end) in seconds of
# time.perf_counter()
KIND_COMPUTE, KIND_LAUNCH, KIND_WAIT = 0, 1, 2
_KIND_LABEL = {KIND_COMPUTE: "", KIND_LAUNCH: " (launch)", KIND_WAIT: " (wait)"}


class RunOptions:
    """Options of one `Session.run`: `trace_level` (NO_TRACE, or any of the others: every op's
    start and end are recorded into the RunMetadata passed with it)."""

    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = 0, 1, 2, 3

    def __init__(self, trace_level: int = 0) -> None:
        if trace_level not in (0, 1, 2, 3):
            raise ValueError(f"trace_level must be one of RunOptions.NO_TRACE/SOFTWARE_TRACE/HARDWARE_TRACE/"
                             f"FULL_TRACE (0-3), got {trace_level!r}")
        self.trace_level = trace_level

    def __repr__(self) -> str:
        return f"RunOptions(trace_level={self.trace_level})"


class NodeExecStats:
    """One event: `node_name`, `op_type`, `all_start_micros` (since the epoch),
    `all_end_rel_micros` (duration), `timeline_label`, `thread_id`."""

    __slots__ = ("node_name", "op_type", "all_start_micros", "all_end_rel_micros", "timeline_label", "thread_id")

    def __init__(self, node_name: str, op_type: str, all_start_micros: int, all_end_rel_micros: int,
                 timeline_label: str, thread_id: int) -> None:
        self.node_name = node_name
        self.op_type = op_type
        self.all_start_micros = all_start_micros
        self.all_end_rel_micros = all_end_rel_micros
        self.timeline_label = timeline_label
        self.thread_id = thread_id

    def __repr__(self) -> str:
        return f"<{self.timeline_label}: {self.all_end_rel_micros} us>"


class DeviceStepStats:
    """The events of one device: `device` ('/cpu:0', '/gpu:0', ...), `node_stats`."""

    __slots__ = ("device", "node_stats")

    def __init__(self, device: str) -> None:
        self.device = device
        self.node_stats: List[NodeExecStats] = []


class StepStats:
    """Per-device events of the traced runs: `dev_stats` (a list of DeviceStepStats)."""

    __slots__ = ("dev_stats",)

    def __init__(self) -> None:
        self.dev_stats: List[DeviceStepStats] = []

    def _device(self, name: str) -> DeviceStepStats:
        for d in self.dev_stats:
            if d.device == name:
                return d
        d = DeviceStepStats(name)
        self.dev_stats.append(d)
        return d

    def __len__(self) -> int:
        return sum(len(d.node_stats) for d in self.dev_stats)


class RunMetadata:
    """Filled by a `Session.run` given it: `step_stats` when the RunOptions asked for a trace
    (a later traced run adds its events)."""

    def __init__(self) -> None:
        self.step_stats = StepStats()


# the wall clock at a perf_counter origin, so events carry epoch microseconds (as TF's)
_EPOCH_OFFSET = time.time() - time.perf_counter()


def wants_trace(options: Any) -> bool:
    """Whether these run options (ours, or anything with a `trace_level`) ask for a trace."""
    return options is not None and bool(getattr(options, "trace_level", 0))


def fill(run_metadata: Any, ops: Sequence[Any], placement: Dict[str, str],
         records: Sequence[Tuple[int, int, float, float]]) -> None:
    """Adds a traced run's records to run_metadata.step_stats."""
    if run_metadata is None:
        return
    stats = getattr(run_metadata, "step_stats", None)
    if not isinstance(stats, StepStats):
        stats = run_metadata.step_stats = StepStats()
    tid = threading.get_ident()
    for i, kind, t0, t1 in records:
        op = ops[i]
        name = op.name
        dev = placement.get(name, "/cpu:0")
        start = int(round((t0 + _EPOCH_OFFSET) * 1e6))
        dur = max(0, int(round((t1 - t0) * 1e6)))
        label = f"{name} = {op.type}{_KIND_LABEL[kind]}"
        stats._device(dev).node_stats.append(NodeExecStats(name + _KIND_LABEL[kind], op.type, start, dur,
                                                           label, tid))


class Timeline:
    """A Chrome trace of StepStats (TensorFlow's `timeline.Timeline`)."""

    def __init__(self, step_stats: StepStats) -> None:
        if not isinstance(step_stats, StepStats):
            raise TypeError(f"Timeline takes RunMetadata.step_stats, got {type(step_stats).__name__}")
        self._stats = step_stats

    def generate_chrome_trace_format(self, show_dataflow: bool = False, show_memory: bool = False) -> str:
        """The trace as a JSON string (one process row per device, one thread row per
        Python thread that ran the step)."""
        events: List[dict] = []
        for pid, dev in enumerate(self._stats.dev_stats):
            events.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": dev.device}})
            tids: Dict[int, int] = {}
            for ns in dev.node_stats:
                tid = tids.setdefault(ns.thread_id, len(tids))
                events.append({"name": ns.node_name, "cat": "Op", "ph": "X", "pid": pid, "tid": tid,
                               "ts": ns.all_start_micros, "dur": ns.all_end_rel_micros,
                               "args": {"name": ns.node_name, "op": ns.op_type, "label": ns.timeline_label}})
        return json.dumps({"traceEvents": events, "displayTimeUnit": "ms"})


def op_totals(step_stats: StepStats) -> List[Tuple[str, float, int]]:
    """(op type, total milliseconds, events) per op type, most expensive first: a quick
    answer to "where does the step go"."""
    acc: Dict[str, List[float]] = {}
    for dev in step_stats.dev_stats:
        for ns in dev.node_stats:
            a = acc.setdefault(ns.op_type, [0.0, 0])
            a[0] += ns.all_end_rel_micros / 1e3
            a[1] += 1
    return sorted(((k, v[0], int(v[1])) for k, v in acc.items()), key=lambda r: -r[1])
