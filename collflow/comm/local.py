"""In-process communicators: size 1, and a fake multi-rank world of threads for serial tests.

`LocalCommunicator()` is the world of one process: every collective completes at once.
`ThreadWorld(n)` simulates n ranks inside one process, one thread per rank, each holding
`world.comm(r)`: contributions meet in a shared table keyed by the collective's sequence
number, and the last rank to arrive computes every rank's result.  Multi-rank logic
(SyncReplicasOptimizer, sharding, timeouts, mismatches) is testable this way without MPI.

The semantics of every collective are written once here, in `reference()`, in plain NumPy:
the thread world runs them and the MPI tests compare against them.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import AbortedError, CollflowError, DeadlineExceededError, InvalidArgumentError
from .base import (CollectiveHandle, CompletedHandle, Communicator, Signature, _as_array, _check_counts,
                   _check_reduce, _equal_blocks, _missing_error, _need_rows, _rows, error_copy,
                   mismatch_error)

__all__ = ["LocalCommunicator", "ThreadWorld", "ThreadCommunicator", "reference"]

_UFUNCS = {"sum": np.add, "mean": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}
_BOOL_UFUNCS = {"max": np.logical_or, "min": np.logical_and}


def _reduce_all(xs: Sequence[np.ndarray], op: str) -> np.ndarray:
    """Reduction over ranks in rank order, into a fresh array."""
    f = (_BOOL_UFUNCS if xs[0].dtype.kind == "b" else _UFUNCS)[op]
    out = xs[0].copy()
    for x in xs[1:]:
        f(out, x, out=out)
    if op == "mean":
        np.divide(out, len(xs), out=out)
    return out


def _blocks(x: np.ndarray, counts: Sequence[int]) -> List[np.ndarray]:
    offs = np.concatenate([[0], np.cumsum(counts)])
    return [x[offs[i]:offs[i + 1]] for i in range(len(counts))]


def _rows_view(x: np.ndarray) -> np.ndarray:
    return x.reshape(1) if x.ndim == 0 else x


def reference(kind: str, xs: Sequence[Optional[np.ndarray]], op: str = "sum", root: int = 0,
              counts: Optional[Sequence[Sequence[int]]] = None) -> List[Any]:
    """Every rank's result of collective `kind` given every rank's input (plain NumPy).

    `counts`: for allgatherv unused (first dims are used); for alltoallv the send counts of
    each rank; for reduce_scatter one list of rows per rank (the same on every rank).
    """
    n = len(xs)
    if kind == "allreduce":
        red = _reduce_all(xs, op)  # type: ignore[arg-type]
        return [red] + [red.copy() for _ in range(n - 1)]
    if kind in ("allgather", "allgatherv"):
        parts = [_rows_view(x) for x in xs]  # type: ignore[arg-type]
        cat = np.concatenate(parts, axis=0)
        if kind == "allgather":
            return [cat] + [cat.copy() for _ in range(n - 1)]
        cnt = np.array([p.shape[0] for p in parts], dtype=np.int64)
        return [(cat, cnt)] + [(cat.copy(), cnt.copy()) for _ in range(n - 1)]
    if kind == "broadcast":
        return [xs[root].copy() for _ in range(n)]  # type: ignore[union-attr]
    if kind == "alltoall":
        split = [np.array_split(_rows_view(x), n) for x in xs]  # type: ignore[arg-type]
        return [np.concatenate([split[s][r] for s in range(n)], axis=0) for r in range(n)]
    if kind == "alltoallv":
        assert counts is not None
        split = [_blocks(x, counts[s]) for s, x in enumerate(xs)]  # type: ignore[arg-type]
        return [(np.concatenate([split[s][r] for s in range(n)], axis=0),
                 np.array([counts[s][r] for s in range(n)], dtype=np.int64)) for r in range(n)]
    if kind == "reduce_scatter":
        assert counts is not None
        red = _reduce_all(xs, op)  # type: ignore[arg-type]
        return [b.copy() for b in _blocks(red, counts[0])]
    if kind == "reduce":
        red = _reduce_all(xs, op)  # type: ignore[arg-type]
        return [red if r == root else None for r in range(n)]
    if kind == "barrier":
        return [None] * n
    raise InvalidArgumentError(f"unknown collective kind {kind!r}")


class _Slot:
    """One collective (one sequence number) of a ThreadWorld: who posted what, the results."""

    __slots__ = ("posts", "sigs", "results", "error", "fetched", "kind")

    def __init__(self, size: int, kind: str):
        self.posts: List[Optional[tuple]] = [None] * size
        self.sigs: Dict[int, Signature] = {}
        self.results: Optional[List[Any]] = None
        self.error: Optional[CollflowError] = None
        self.fetched = 0
        self.kind = kind


class ThreadWorld:
    """n simulated ranks in one process; `comm(r)` is rank r's communicator.

    Each rank must be driven by its own thread (collectives block until all ranks arrive);
    `run(fn)` does that: it calls fn(comm) on n threads and returns their results by rank.
    """

    def __init__(self, size: int, timeout: Optional[float] = None):
        if int(size) < 1:
            raise InvalidArgumentError(f"a ThreadWorld needs at least 1 rank, got {size}")
        self.size = int(size)
        self._cond = threading.Condition()
        self._slots: Dict[int, _Slot] = {}
        self._broken: Optional[Tuple[int, CollflowError]] = None  # (reporting rank, error)
        self._comms = [ThreadCommunicator(self, r, timeout) for r in range(self.size)]

    def comm(self, rank: int) -> "ThreadCommunicator":
        return self._comms[rank]

    def communicators(self) -> List["ThreadCommunicator"]:
        return list(self._comms)

    def run(self, fn: Callable[["ThreadCommunicator"], Any], timeout: float = 60.0) -> List[Any]:
        """fn(comm) on one thread per rank; returns results by rank, re-raises the first error."""
        results: List[Any] = [None] * self.size
        errors: List[Optional[BaseException]] = [None] * self.size

        def body(r: int) -> None:
            try:
                results[r] = fn(self._comms[r])
            except BaseException as e:  # noqa: B902 - handed to the caller
                errors[r] = e
                with self._cond:  # the other ranks' waits end now instead of at their timeout
                    self._fail(r, AbortedError(f"rank {r} failed: {type(e).__name__}: {e}"))

        threads = [threading.Thread(target=body, args=(r,), name=f"collflow-rank{r}", daemon=True)
                   for r in range(self.size)]
        for t in threads:
            t.start()
        end = time.monotonic() + timeout
        for t in threads:
            t.join(max(0.0, end - time.monotonic()))
        stuck = [r for r, t in enumerate(threads) if t.is_alive()]
        if stuck:
            raise DeadlineExceededError(f"ThreadWorld.run: ranks {stuck} still running after {timeout:g} s")
        for e in errors:
            if e is not None:
                raise e
        return results

    # -- called by the communicators, under self._cond -------------------------------------
    def _fail(self, rank: int, err: CollflowError) -> None:
        if self._broken is None:
            self._broken = (rank, err)
        self._cond.notify_all()

    def _raise_broken(self, rank: int) -> None:
        assert self._broken is not None
        who, err = self._broken
        if who == rank:
            raise error_copy(err)
        raise type(err)(f"rank {who} reported: {err.message}")


class _ThreadHandle(CollectiveHandle):
    __slots__ = ("_comm", "_slot", "_seq", "_desc", "_value", "_has", "timeout")

    def __init__(self, comm: "ThreadCommunicator", slot: _Slot, seq: int, desc: str):
        self._comm = comm
        self._slot = slot
        self._seq = seq
        self._desc = desc
        self._has = False
        self._value: Any = None
        self.timeout: Optional[float] = None

    def done(self) -> bool:
        return self._has or self._slot.results is not None or self._slot.error is not None

    def wait(self, timeout: Optional[float] = None) -> Any:
        if self._has:
            return self._value
        c = self._comm
        w = c._world
        t = timeout if timeout is not None else (self.timeout if self.timeout is not None else c.timeout)
        slot = self._slot
        with w._cond:
            w._cond.wait_for(lambda: slot.results is not None or slot.error is not None or w._broken is not None, t)
            if slot.results is not None:
                self._value = slot.results[c.rank]
                slot.results[c.rank] = None
                slot.fetched += 1
                if slot.fetched == w.size:
                    w._slots.pop(self._seq, None)
                self._has = True
                return self._value
            if slot.error is not None:
                raise error_copy(slot.error)
            if w._broken is not None:
                w._raise_broken(c.rank)
            missing = [p for p in range(w.size) if slot.posts[p] is None]
            err = _missing_error(f"{self._desc} (rank {c.rank})", t, missing)
            w._fail(c.rank, err)
            raise err


class ThreadCommunicator(Communicator):
    """Rank `rank` of a ThreadWorld (see there)."""

    backend = "threads"

    def __init__(self, world: ThreadWorld, rank: int, timeout: Optional[float] = None):
        super().__init__(timeout)
        self._world = world
        self._rank = rank
        self._seq = 0

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def size(self) -> int:
        return self._world.size

    @property
    def pending(self) -> int:
        w = self._world
        with w._cond:
            return sum(1 for s in w._slots.values()
                       if s.posts[self._rank] is not None and s.results is None and s.error is None)

    def _post(self, kind: str, x: Optional[np.ndarray], sig: Signature,
              finish: Callable[[List[tuple]], List[Any]], params: tuple = ()) -> CollectiveHandle:
        w = self._world
        if w.size == 1:  # nothing to meet: compute now
            return CompletedHandle(finish([(x, params)])[0])
        with w._cond:
            if w._broken is not None:
                w._raise_broken(self._rank)
            seq = self._seq
            self._seq += 1
            slot = w._slots.get(seq)
            if slot is None:
                slot = w._slots[seq] = _Slot(w.size, kind)
            for other in slot.sigs.values():
                if sig.conflicts(other):
                    sigs = dict(slot.sigs)
                    sigs[self._rank] = sig
                    err = mismatch_error(seq, sigs)
                    slot.error = err
                    w._fail(self._rank, err)
                    raise error_copy(err)
            slot.sigs[self._rank] = sig
            slot.posts[self._rank] = (x, params)
            if all(p is not None for p in slot.posts):
                try:
                    slot.results = finish(slot.posts)  # type: ignore[arg-type]
                except CollflowError as e:
                    slot.error = e
                    w._fail(self._rank, e)
                # the inputs are read: let go of them (a rank may reuse its buffer at once)
                slot.posts = [(None, p[1]) for p in slot.posts]  # type: ignore[index]
                w._cond.notify_all()
        h = _ThreadHandle(self, slot, seq, f"collective #{seq} {sig.describe()}")
        return h

    # -- the collectives --------------------------------------------------------------------
    def allreduce_async(self, x: Any, op: str = "sum", name: Optional[str] = None,
                        out: Optional[np.ndarray] = None) -> CollectiveHandle:
        x = _as_array(x, "allreduce")
        _check_reduce(op, x.dtype, "allreduce")
        self._count("allreduce", x.nbytes, x.nbytes)
        return self._post("allreduce", x, Signature.of("allreduce", name, x, op),
                          lambda posts: reference("allreduce", [p[0] for p in posts], op=op))

    def allgather_async(self, x: Any, name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "allgather")
        self._count("allgather", x.nbytes, x.nbytes * (self.size - 1))
        return self._post("allgather", x, Signature.of("allgather", name, x),
                          lambda posts: reference("allgather", [p[0] for p in posts]))

    def allgatherv_async(self, x: Any, counts: Optional[Sequence[int]] = None,
                         name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "allgatherv")
        if counts is not None:
            _check_counts(counts, self.size, "allgatherv")
            if int(counts[self._rank]) != _rows(x):
                raise InvalidArgumentError(
                    f"allgatherv: counts[{self._rank}] = {int(counts[self._rank])}, but this rank has {_rows(x)} rows")
        self._count("allgatherv", x.nbytes, 0)
        return self._post("allgatherv", x, Signature.of("allgatherv", name, x),
                          lambda posts: reference("allgatherv", [p[0] for p in posts]))

    def broadcast_async(self, x: Any, root: int = 0, name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "broadcast")
        root = self._check_root(root, "broadcast")
        me = self._rank == root
        self._count("broadcast", x.nbytes if me else 0, 0 if me else x.nbytes)
        return self._post("broadcast", x, Signature.of("broadcast", name, x, root=root),
                          lambda posts: reference("broadcast", [p[0] for p in posts], root=root))

    def alltoall_async(self, x: Any, name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "alltoall")
        _need_rows(x, "alltoall")
        _equal_blocks(_rows(x), self.size, "alltoall")
        other = x.nbytes - x.nbytes // self.size
        self._count("alltoall", other, other)
        return self._post("alltoall", x, Signature.of("alltoall", name, x),
                          lambda posts: reference("alltoall", [p[0] for p in posts]))

    def alltoallv_async(self, x: Any, send_counts: Sequence[int], recv_counts: Optional[Sequence[int]] = None,
                        name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "alltoallv")
        _need_rows(x, "alltoallv")
        sc = _check_counts(send_counts, self.size, "alltoallv send_counts", total=x.shape[0])
        rc = None if recv_counts is None else _check_counts(recv_counts, self.size, "alltoallv recv_counts")
        row = x.nbytes // max(1, x.shape[0]) if x.shape[0] else 0
        self._count("alltoallv", int(sc.sum() - sc[self._rank]) * row, 0)

        def finish(posts: List[tuple]) -> List[Any]:
            out = reference("alltoallv", [p[0] for p in posts], counts=[p[1][0] for p in posts])
            for s, p in enumerate(posts):
                want = p[1][1]
                if want is not None and not np.array_equal(want, out[s][1]):
                    raise InvalidArgumentError(
                        f"alltoallv: rank {s} expected recv_counts {want.tolist()}, "
                        f"the senders sent {out[s][1].tolist()}")
            return out
        return self._post("alltoallv", x, Signature.of("alltoallv", name, x), finish, (sc, rc))

    def reduce_scatter_async(self, x: Any, counts: Optional[Sequence[int]] = None, op: str = "sum",
                             name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "reduce_scatter")
        _check_reduce(op, x.dtype, "reduce_scatter")
        _need_rows(x, "reduce_scatter")
        rows = _rows(x)
        c = (_equal_blocks(rows, self.size, "reduce_scatter") if counts is None
             else _check_counts(counts, self.size, "reduce_scatter counts", total=rows))
        self._count("reduce_scatter", x.nbytes, 0)
        return self._post("reduce_scatter", x, Signature.of("reduce_scatter", name, x, op),
                          lambda posts: reference("reduce_scatter", [p[0] for p in posts], op=op,
                                                  counts=[p[1][0] for p in posts]), (c,))

    def reduce_async(self, x: Any, root: int = 0, op: str = "sum", name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "reduce")
        _check_reduce(op, x.dtype, "reduce")
        root = self._check_root(root, "reduce")
        self._count("reduce", x.nbytes, x.nbytes if self._rank == root else 0)
        return self._post("reduce", x, Signature.of("reduce", name, x, op, root),
                          lambda posts: reference("reduce", [p[0] for p in posts], op=op, root=root))

    def barrier_async(self, name: Optional[str] = None) -> CollectiveHandle:
        self._count("barrier", 0, 0)
        return self._post("barrier", None, Signature.of("barrier", name, None),
                          lambda posts: [None] * len(posts))


class LocalCommunicator(ThreadCommunicator):
    """The world of one process (size 1): every collective completes at once.

    Results are fresh arrays (a copy of the input where the collective is the identity).
    """

    backend = "local"

    def __init__(self, timeout: Optional[float] = None):
        super().__init__(ThreadWorld(1, timeout), 0, timeout)
        self._world._comms = [self]
