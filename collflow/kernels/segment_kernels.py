"""Kernels of graph/ops/segment_ops.py, written once against `xp`.

Every reduction is a scatter of data's rows into the output's rows: adds for sums and means,
maximum/minimum for the extremes (ufunc.at: atomic on the GPU with CuPy).  On NumPy, rows of
several elements go through a reduceat over runs of equal ids instead of ufunc.at (2-3x
faster at 100k rows of 64: 40 ms instead of 63 ms for a sum, 43 instead of 110 for a max).
"""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel
from .sparse_kernels import scatter_add_rows


def add_rows(xp: Any, out: Any, ids: Any, rows: Any) -> None:
    """out[ids] += rows with repeated ids accumulating; exact for integer dtypes too (the
    float path may sum through float64)."""
    if xp is np and rows.dtype.kind in "iub":
        np.add.at(out, ids, rows)
    else:
        scatter_add_rows(xp, out, ids, rows)


def _scatter_extreme(xp: Any, kind: str, out: Any, ids: Any, rows: Any) -> None:
    """out[ids] = kind(out[ids], rows), ids repeating."""
    f = xp.maximum if kind == "max" else xp.minimum
    if xp is np or np.dtype(out.dtype) in _ATOMIC_EXACT:
        f.at(out, ids, rows)  # NumPy's, or CuPy's atomic one (cupyx.scatter_max/min are deprecated)
    else:
        _scatter_extreme_sorted(xp, f, out, ids, rows)


# CuPy's maximum.at/minimum.at are exact for these; float64 came back rounded to float32 on
# an H200 (CuPy 14.2) and float16 is refused, so those go through a sort instead
_ATOMIC_EXACT = frozenset(np.dtype(t) for t in (np.float32, np.int32, np.int64, np.uint32, np.uint64))


def _scatter_extreme_sorted(xp: Any, f: Any, out: Any, ids: Any, rows: Any) -> None:
    """out[ids] = f(out[ids], rows) without atomics: rows sorted by id, a segmented
    Hillis-Steele scan (log2(n) vectorised passes) leaves each id's extreme in its last row."""
    n = int(ids.shape[0])
    if n == 0:
        return
    order = xp.argsort(ids)
    sid = ids[order]
    v = rows[order]
    tail = (1,) * (v.ndim - 1)
    shift = 1
    while shift < n:
        same = (sid[shift:] == sid[:-shift]).reshape((n - shift,) + tail)
        v[shift:] = xp.where(same, f(v[shift:], v[:-shift]), v[shift:])  # right side read first
        shift *= 2
    last = xp.ones(n, dtype=bool)
    last[:-1] = sid[1:] != sid[:-1]
    seg = sid[last]
    out[seg] = f(out[seg], v[last])


def _extreme_fill(dt: np.dtype, kind: str) -> Any:
    """The dtype's lowest (for max) or highest (for min) value: what an empty segment holds."""
    info = np.finfo(dt) if dt.kind == "f" else np.iinfo(dt)
    return info.min if kind == "max" else info.max


def _reduce_sorted_runs(kind: str, data: np.ndarray, ids: np.ndarray, out: np.ndarray, is_sorted: bool) -> None:
    """NumPy: out[id] = reduce(out[id], rows of that id) through one reduceat over runs of equal
    ids (after a stable sort when not sorted): about 2x (sum) to 3x (max) faster than ufunc.at
    for rows of many elements."""
    if not is_sorted:
        order = np.argsort(ids, kind="stable")
        ids, data = ids[order], data[order]
    starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
    ufunc = {"sum": np.add, "mean": np.add, "max": np.maximum, "min": np.minimum}[kind]
    part = ufunc.reduceat(data, starts, axis=0)
    at = ids[starts]
    out[at] = part if kind in ("sum", "mean") else ufunc(out[at], part)


def _reduce_rows(xp: Any, kind: str, data: Any, ids: Any, n: int, empty_zero: bool, is_sorted: bool) -> Any:
    """Rows of data reduced into n output rows by segment id (ids: 1-D, all in [0, n))."""
    inner: Tuple[int, ...] = tuple(data.shape[1:])
    dt = data.dtype
    runs = xp is np and ids.size and data.ndim > 1   # 1-D sums are faster still through bincount
    if kind in ("sum", "mean"):
        out = xp.zeros((n,) + inner, dtype=dt)
        if runs:
            _reduce_sorted_runs(kind, data, ids, out, is_sorted)
        elif ids.size:
            add_rows(xp, out, ids, data)
        if kind == "mean":
            counts = xp.bincount(ids, minlength=n)[:n].astype(dt)
            counts = xp.maximum(counts, dt.type(1)).reshape((n,) + (1,) * len(inner))
            if dt.kind == "f":
                out = out / counts
            else:  # integer division truncating toward zero, as C++
                out = xp.sign(out) * (xp.abs(out) // counts)
        return out
    out = xp.full((n,) + inner, _extreme_fill(dt, kind), dtype=dt)
    if runs:
        _reduce_sorted_runs(kind, data, ids, out, is_sorted)
    elif ids.size:
        _scatter_extreme(xp, kind, out, ids, data)
    if empty_zero:
        empty = xp.bincount(ids, minlength=n)[:n] == 0
        out[empty] = 0
    return out


@register_kernel("SegmentSum")
def _segment_sum(op: Any, ctx: KernelContext) -> Any:
    return _sorted_kernel(op, ctx, "sum")


@register_kernel("SegmentMean")
def _segment_mean(op: Any, ctx: KernelContext) -> Any:
    return _sorted_kernel(op, ctx, "mean")


@register_kernel("SegmentMax")
def _segment_max(op: Any, ctx: KernelContext) -> Any:
    return _sorted_kernel(op, ctx, "max")


@register_kernel("SegmentMin")
def _segment_min(op: Any, ctx: KernelContext) -> Any:
    return _sorted_kernel(op, ctx, "min")


def _sorted_kernel(op: Any, ctx: KernelContext, kind: str) -> Any:
    xp = ctx.xp

    def segment(data: Any, ids: Any) -> Any:
        if ids.shape[0] != data.shape[0]:
            raise InvalidArgumentError(f"segment_ids should be the same size as dimension 0 of data: "
                                       f"{ids.shape[0]} ids for data of shape {tuple(data.shape)}", op)
        ids = ids.astype(np.int64, copy=False)
        n = 0
        if ids.size:
            if int(ids[0]) < 0:
                raise InvalidArgumentError(f"segment ids must be >= 0, got segment_ids[0] = {int(ids[0])}", op)
            down = ids[1:] < ids[:-1]
            if bool(down.any()):
                i = int(xp.argmax(down)) + 1
                raise InvalidArgumentError(f"segment ids are not increasing: segment_ids[{i}] = {int(ids[i])} "
                                           f"follows {int(ids[i - 1])}", op)
            n = int(ids[-1]) + 1
        return _reduce_rows(xp, kind, data, ids, n, empty_zero=True, is_sorted=True)
    return segment


@register_kernel("UnsortedSegmentSum")
def _unsorted_sum(op: Any, ctx: KernelContext) -> Any:
    return _unsorted_kernel(op, ctx, "sum")


@register_kernel("UnsortedSegmentMax")
def _unsorted_max(op: Any, ctx: KernelContext) -> Any:
    return _unsorted_kernel(op, ctx, "max")


@register_kernel("UnsortedSegmentMin")
def _unsorted_min(op: Any, ctx: KernelContext) -> Any:
    return _unsorted_kernel(op, ctx, "min")


def _unsorted_kernel(op: Any, ctx: KernelContext, kind: str) -> Any:
    xp = ctx.xp

    def unsorted_segment(data: Any, ids: Any, num: Any) -> Any:
        n = int(num)
        if n < 0:
            raise InvalidArgumentError(f"num_segments must be non-negative, got {n}", op)
        r = ids.ndim
        if tuple(data.shape[:r]) != tuple(ids.shape):
            raise InvalidArgumentError(f"segment_ids.shape = {list(ids.shape)} must be a prefix of data.shape = "
                                       f"{list(data.shape)}", op)
        flat = ids.reshape(-1).astype(np.int64, copy=False)
        rows = data.reshape((flat.shape[0],) + tuple(data.shape[r:]))
        too_big = flat >= n
        if bool(too_big.any()):
            i = int(xp.argmax(too_big))
            at = ",".join(str(int(v)) for v in np.unravel_index(i, ids.shape)) if r > 1 else str(i)
            raise InvalidArgumentError(f"segment_ids[{at}] = {int(flat[i])} is out of range [0, {n})", op)
        keep = flat >= 0
        if not bool(keep.all()):  # negative ids drop their rows
            flat, rows = flat[keep], rows[keep]
        return _reduce_rows(xp, kind, rows, flat, n, empty_zero=False, is_sorted=False)
    return unsorted_segment
