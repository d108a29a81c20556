"""One rank of an N-rank job, profiled in one process: the loopback communicator.

`LoopbackCommunicator(size)` is rank `rank` of a simulated world of `size` ranks in which
every peer contributes what this rank contributes (or what `peers(kind, name, x, p)` says
peer p contributes).  Each collective completes at once with the result the real job
would give for those contributions: a sum is `size` times this rank's array, an allgather
stacks `size` copies.  So a graph built for N ranks runs in one process with its real
local work (a SparseAllGather's update applies N ranks' rows), its collectives at the
places the plan issues them, and no transport time: tracing it gives the compute side of a
step, and `calls` says what each collective would move (collflow.profile.trace).

The result is computed when the handle is waited for, not when launched, so a traced
step's launch events hold only the kernel's own work (packing); its wait events hold the
stand-in for the transfer (timed: `standins`), which the scaling model replaces, and the
kernel's own work on the result (unpacking, a parameter server's merge of pushed rows).

All-to-alls are mirrored: peer p sends this rank what this rank sends p (symmetric traffic;
`peers` may rewrite the block, e.g. the sender's shard in the parameter server's route
headers: benchmarks/scale_model_cases.py).
"""
from __future__ import annotations

import time
from typing import Any, Callable, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ..comm.base import (CollectiveHandle, Communicator, _as_array, _check_counts, _check_reduce,
                         _equal_blocks, _need_rows, _rows)
from ..errors import InvalidArgumentError

__all__ = ["LoopbackCommunicator", "CollectiveCall"]


class CollectiveCall(NamedTuple):
    """One collective a LoopbackCommunicator was asked for: `kind` ('allreduce', ...), the
    `name` (key) it was issued under, `nbytes` this rank contributes, `rows` (first dimension
    of its array; 1 for a scalar), `time` (time.perf_counter() at launch)."""

    kind: str
    name: Optional[str]
    nbytes: int
    rows: int
    time: float


class _LazyHandle(CollectiveHandle):
    """A collective whose result is computed at the first wait (see the module doc)."""

    __slots__ = ("_fn", "_has", "_value", "timeout")

    def __init__(self, fn: Callable[[], Any]):
        self._fn = fn
        self._has = False
        self._value: Any = None
        self.timeout = None

    def wait(self, timeout: Optional[float] = None) -> Any:
        if not self._has:
            self._value = self._fn()
            self._has = True
            self._fn = None  # type: ignore[assignment]  (drop the inputs)
        return self._value

    def done(self) -> bool:
        return True


PeerFn = Callable[[str, Optional[str], np.ndarray, int], np.ndarray]


class LoopbackCommunicator(Communicator):
    """Rank `rank` of `size` simulated ranks, each contributing what this rank contributes
    (or `peers(kind, name, x, p)`: peer p's array for the collective `kind` named `name`,
    given this rank's `x`; for an all-to-all, `x` is the block this rank sends p and the
    answer the block p sends this rank; the attribute may be set after construction).
    Every call is appended to `calls` (a list of CollectiveCall; clear it to start a new
    record), and the time computing each result to `standins` (see the module doc)."""

    backend = "loopback"

    def __init__(self, size: int, rank: int = 0, peers: Optional[PeerFn] = None, timeout: Optional[float] = None):
        super().__init__(timeout)
        if int(size) < 1 or not 0 <= int(rank) < int(size):
            raise InvalidArgumentError(f"LoopbackCommunicator: rank {rank} of {size} ranks is not a rank")
        self._size = int(size)
        self._rank = int(rank)
        self.peers = peers
        self.calls: List[CollectiveCall] = []
        self.standins: List[Tuple[Optional[str], float]] = []
        self.standin_s = 0.0

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def size(self) -> int:
        return self._size

    def _lazy(self, name: Optional[str], fn: Callable[[], Any]) -> CollectiveHandle:
        """A handle computing fn() at its wait, the time it takes recorded as a stand-in for
        the transfer (`standins`: (name, seconds); `standin_s`: their total)."""
        def timed() -> Any:
            t0 = time.perf_counter()
            try:
                return fn()
            finally:
                dt = time.perf_counter() - t0
                self.standins.append((name, dt))
                self.standin_s += dt
        return _LazyHandle(timed)

    def _record(self, kind: str, name: Optional[str], x: Optional[np.ndarray]) -> None:
        nbytes = 0 if x is None else int(x.nbytes)
        rows = 0 if x is None else _rows(x)
        self.calls.append(CollectiveCall(kind, name, nbytes, rows, time.perf_counter()))
        self._count(kind, nbytes, nbytes * (self._size - 1))

    def _contributions(self, kind: str, name: Optional[str], x: np.ndarray) -> List[np.ndarray]:
        """Every rank's array, in rank order."""
        if self.peers is None:
            return [x] * self._size
        out = []
        for p in range(self._size):
            if p == self._rank:
                out.append(x)
                continue
            y = _as_array(self.peers(kind, name, x, p), kind)
            if y.dtype != x.dtype or y.shape[1:] != x.shape[1:] or (kind != "allgatherv" and y.shape != x.shape):
                raise InvalidArgumentError(
                    f"LoopbackCommunicator: peers() gave rank {p} an array of {y.dtype} {y.shape} for {kind} "
                    f"{name!r}, where this rank has {x.dtype} {x.shape}")
            out.append(y)
        return out

    # -- the collectives ------------------------------------------------------------------------
    def allreduce_async(self, x: Any, op: str = "sum", name: Optional[str] = None,
                        out: Optional[np.ndarray] = None) -> CollectiveHandle:
        return self._reduction("allreduce", x, op, name, out)

    def _reduction(self, kind: str, x: Any, op: str, name: Optional[str], out: Optional[np.ndarray]) -> Any:
        """The sum (or other op) over the ranks' arrays, recorded as collective `kind`."""
        x = _as_array(x, kind)
        _check_reduce(op, x.dtype, kind)
        if kind == "reduce_scatter":
            _need_rows(x, kind)
        self._record(kind, name, x)
        n = self._size

        def result() -> np.ndarray:
            dst = out if out is not None and out.shape == x.shape and out.dtype == x.dtype else np.empty_like(x)
            if self.peers is None:
                if op == "sum":
                    np.multiply(x, x.dtype.type(n), out=dst)
                elif op == "prod":
                    np.power(x, n, out=dst)
                elif dst is not x:  # mean, max, min of n equal arrays: the array itself
                    np.copyto(dst, x)
                return dst
            xs = self._contributions(kind, name, x)
            f = {"sum": np.add, "mean": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[op]
            if x.dtype.kind == "b":
                f = np.logical_or if op == "max" else np.logical_and
            np.copyto(dst, xs[0])
            for y in xs[1:]:
                f(dst, y, out=dst)
            if op == "mean":
                np.divide(dst, n, out=dst)
            return dst
        return self._lazy(name, result)

    def allgather_async(self, x: Any, name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "allgather")
        self._record("allgather", name, x)
        return self._lazy(name, lambda: np.concatenate(
            [y.reshape(1) if y.ndim == 0 else y for y in self._contributions("allgather", name, x)], axis=0))

    def allgatherv_async(self, x: Any, counts: Optional[Sequence[int]] = None,
                         name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "allgatherv")
        self._record("allgatherv", name, x)

        def result() -> tuple:
            parts = [y.reshape(1) if y.ndim == 0 else y for y in self._contributions("allgatherv", name, x)]
            got = np.array([p.shape[0] for p in parts], dtype=np.int64)
            if counts is not None and not np.array_equal(_check_counts(counts, self._size, "allgatherv"), got):
                raise InvalidArgumentError(f"allgatherv {name!r}: counts {list(counts)} do not match the ranks' "
                                           f"rows {got.tolist()}")
            return np.concatenate(parts, axis=0), got
        return self._lazy(name, result)

    def broadcast_async(self, x: Any, root: int = 0, name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "broadcast")
        root = self._check_root(root, "broadcast")
        self._record("broadcast", name, x)
        return self._lazy(name, lambda: self._contributions("broadcast", name, x)[root].copy())

    def reduce_scatter_async(self, x: Any, counts: Optional[Sequence[int]] = None, op: str = "sum",
                             name: Optional[str] = None) -> CollectiveHandle:
        whole = self._reduction("reduce_scatter", x, op, name, None)
        rows = self.calls[-1].rows
        c = (_equal_blocks(rows, self._size, "reduce_scatter") if counts is None
             else _check_counts(counts, self._size, "reduce_scatter counts", total=rows))
        start = int(c[:self._rank].sum())
        return whole.then(lambda r: r[start:start + int(c[self._rank])].copy())

    def reduce_async(self, x: Any, root: int = 0, op: str = "sum", name: Optional[str] = None) -> CollectiveHandle:
        root = self._check_root(root, "reduce")
        whole = self._reduction("reduce", x, op, name, None)
        return whole.then(lambda r: r if self._rank == root else None)

    def barrier_async(self, name: Optional[str] = None) -> CollectiveHandle:
        self._record("barrier", name, None)
        return self._lazy(name, lambda: None)

    def _exchange(self, kind: str, name: Optional[str], x: np.ndarray, counts: np.ndarray) -> tuple:
        """Mirrored all-to-all: peer p sends this rank what this rank sends p (or what
        `peers(kind, name, block, p)` makes of that block)."""
        off = np.concatenate([[0], np.cumsum(counts)])
        parts = []
        for p in range(self._size):
            block = x[off[p]:off[p + 1]]
            if p != self._rank and self.peers is not None:
                got = _as_array(self.peers(kind, name, block, p), kind)
                if got.dtype != block.dtype or got.shape[1:] != block.shape[1:]:
                    raise InvalidArgumentError(
                        f"LoopbackCommunicator: peers() gave rank {p} a block of {got.dtype} {got.shape} for "
                        f"{kind} {name!r}, where this rank sends {block.dtype} {block.shape}")
                block = got
            parts.append(block)
        got_counts = np.array([b.shape[0] for b in parts], dtype=np.int64)
        return np.concatenate(parts, axis=0), got_counts

    def alltoall_async(self, x: Any, name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "alltoall")
        _need_rows(x, "alltoall")
        counts = _equal_blocks(_rows(x), self._size, "alltoall")
        self._record("alltoall", name, x)
        return self._lazy(name, lambda: self._exchange("alltoall", name, x, counts)[0])

    def alltoallv_async(self, x: Any, send_counts: Sequence[int], recv_counts: Optional[Sequence[int]] = None,
                        name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "alltoallv")
        _need_rows(x, "alltoallv")
        sc = _check_counts(send_counts, self._size, "alltoallv send_counts", total=x.shape[0])
        rc = None if recv_counts is None else _check_counts(recv_counts, self._size, "alltoallv recv_counts")
        self._record("alltoallv", name, x)

        def result() -> tuple:
            vals, got = self._exchange("alltoallv", name, x, sc)
            if rc is not None and not np.array_equal(rc, got):
                raise InvalidArgumentError(f"alltoallv {name!r}: recv_counts {rc.tolist()} do not match the rows the "
                                           f"ranks send {got.tolist()} (peers that mirror this rank send it what it "
                                           "sends them)")
            return vals, got
        return self._lazy(name, result)
