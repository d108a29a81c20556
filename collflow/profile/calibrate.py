"""Measuring a transport: time collectives of several sizes, fit seconds = a + b * bytes.

    t = time_collective(comm, "allreduce", sizes=[1 << 12, 1 << 20, 1 << 23])
    a, b = fit_affine(t.sizes, t.seconds)              # per call, this world size
    link = link_from_fit("allreduce", comm.size, a, b)  # the ring's alpha and beta

Each size is timed `repeats` times after `warmup` calls; a call's time is the slowest rank's
(one max-allreduce of the times at the end, never inside the timed loop), and the median
over repeats is kept.  The fit weighs every size alike in relative terms (least squares on
t / t_measured), so a latency of microseconds and megabyte transfers both count.  A clock
(`clock=`, default time.perf_counter) can be given: the tests drive a fake transport with a
known alpha and beta through it.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, List, Sequence, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .collectives import Link

__all__ = ["Timings", "time_collective", "time_sync_point", "fit_affine", "link_from_fit", "KINDS"]

# what time_collective measures, and what `nbytes` means for each (collectives.py's doc)
KINDS = ("allreduce", "allgather", "alltoall")


@dataclass
class Timings:
    """Median seconds per call of collective `kind` for each of `sizes` (bytes, as the cost
    models read them) on `n` ranks."""

    kind: str
    n: int
    sizes: List[int]
    seconds: List[float]


def _call(comm: Any, kind: str, send: np.ndarray, out: np.ndarray, name: str) -> Callable[[], Any]:
    n = comm.size
    if kind == "allreduce":
        return lambda: comm.allreduce_async(send, "sum", name=name, out=out).wait()
    if kind == "allgather":
        return lambda: comm.allgatherv_async(send, name=name).wait()
    counts = np.full(n, send.shape[0] // n, dtype=np.int64)
    counts[: send.shape[0] - int(counts.sum())] += 1
    # every rank sends counts[j] rows to rank j, so each rank gets counts[rank] from every peer
    recv = np.full(n, counts[comm.rank], dtype=np.int64)
    return lambda: comm.alltoallv_async(send, counts, recv, name=name).wait()


def time_collective(comm: Any, kind: str, sizes: Sequence[int], repeats: int = 7, warmup: int = 2,
                    clock: Callable[[], float] = time.perf_counter) -> Timings:
    """Times collective `kind` ('allreduce', 'allgather' (allgatherv), 'alltoall'
    (alltoallv)) on float32 buffers of each size in bytes (rounded down to whole elements;
    from `comm.empty`, where the step's buffers live).  Collective: every rank calls it."""
    if kind not in KINDS:
        raise InvalidArgumentError(f"time_collective: kind must be one of {KINDS}, got {kind!r}")
    if repeats < 1 or warmup < 0:
        raise InvalidArgumentError(f"time_collective: repeats must be >= 1 and warmup >= 0, got {repeats}, {warmup}")
    n = comm.size
    sizes = [int(s) for s in sizes]
    if not sizes or min(sizes) < 4 * max(1, n if kind == "alltoall" else 1):
        raise InvalidArgumentError(f"time_collective: sizes must be at least one float32 per rank, got {sizes}")
    per: List[List[float]] = []
    for k, nbytes in enumerate(sizes):
        elems = nbytes // 4
        send = comm.empty((elems,), np.float32)
        send[...] = 1.0
        out = comm.empty((elems,), np.float32)
        fn = _call(comm, kind, send, out, f"calibrate/{kind}/{k}")
        for _ in range(warmup):
            fn()
        ts = []
        for _ in range(repeats):
            t0 = clock()
            fn()
            ts.append(clock() - t0)
        per.append(ts)
    t = np.asarray(per, dtype=np.float64)
    if n > 1:  # the slowest rank's time of each call
        t = np.asarray(comm.allreduce(t, "max"), dtype=np.float64)
    return Timings(kind, n, sizes, [float(statistics.median(row)) for row in t])


def fit_affine(sizes: Sequence[float], seconds: Sequence[float]) -> Tuple[float, float]:
    """(a, b) minimising sum(((a + b * size) / t - 1)^2): seconds = a + b * bytes, fitted with
    every point weighted by 1/t (relative error)."""
    x = np.asarray(sizes, dtype=np.float64)
    t = np.asarray(seconds, dtype=np.float64)
    if x.shape != t.shape or x.ndim != 1 or x.size < 2:
        raise InvalidArgumentError(f"fit_affine needs two or more (size, seconds) pairs, got {x.size} and {t.size}")
    if np.unique(x).size < 2:
        raise InvalidArgumentError("fit_affine needs at least two different sizes")
    if not (np.all(t > 0) and np.all(np.isfinite(t))):
        raise InvalidArgumentError(f"fit_affine: every time must be positive and finite, got {t.tolist()}")
    w = 1.0 / t
    A = np.stack([w, w * x], axis=1)
    (a, b), *_ = np.linalg.lstsq(A, np.ones_like(t), rcond=None)
    return float(a), float(b)


def link_from_fit(kind: str, n: int, a: float, b: float, name: str = "fitted", source: str = "") -> Link:
    """The link whose textbook cost (ring all-reduce, ring all-gather, pairwise all-to-all
    on n ranks) is a + b * nbytes: alpha = a / steps, beta = b / (bytes factor)."""
    if n < 2:
        raise InvalidArgumentError(f"link_from_fit: a link is seen only between 2 or more ranks, got n={n}")
    if kind == "allreduce":
        steps, factor = 2 * (n - 1), 2 * (n - 1) / n
    elif kind == "allgather":
        steps, factor = n - 1, n - 1
    elif kind == "alltoall":
        steps, factor = n - 1, (n - 1) / n
    else:
        raise InvalidArgumentError(f"link_from_fit: kind must be one of {KINDS}, got {kind!r}")
    return Link(name, max(0.0, a) / steps, max(0.0, b) / factor, source)


def time_sync_point(comm: Any, work: Callable[[], Any], iterations: int = 10, repeats: int = 5,
                    clock: Callable[[], float] = time.perf_counter) -> Tuple[float, float]:
    """(seconds per iteration of `work` then a one-element all-reduce, seconds per iteration
    of `work` alone), every rank running them at once; medians over `repeats` of the slowest
    rank.  Their difference less the all-reduce's own cost is what synchronising ranks that
    were computing costs beyond the transfer: nothing where every rank has a core, a share
    of the scheduler's time slices where ranks time-share cores (one descheduled rank holds
    up the others).  Collective."""
    if iterations < 1 or repeats < 1:
        raise InvalidArgumentError(f"time_sync_point: iterations and repeats must be >= 1, got {iterations}, "
                                   f"{repeats}")
    one = np.ones(1, dtype=np.float64)
    out = np.empty(2 * repeats, dtype=np.float64)
    for r in range(repeats):
        for j, sync in enumerate((True, False)):
            comm.allreduce(one)  # start together
            t0 = clock()
            for _ in range(iterations):
                work()
                if sync:
                    comm.allreduce_async(one, "sum", name="calibrate/sync").wait()
            out[2 * r + j] = (clock() - t0) / iterations
    if comm.size > 1:
        out = np.asarray(comm.allreduce(out, "max"), dtype=np.float64)
    return float(np.median(out[0::2])), float(np.median(out[1::2]))
