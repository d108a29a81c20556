"""The communicator interface: one abstract base, several backends behind a factory.

A Communicator connects the `size` ranks of a job.  Every collective exists in two forms:
`allreduce(x)` blocks and returns the result; `allreduce_async(x)` starts it and returns a
CollectiveHandle whose `wait()` returns the same result (the executor's async kernels use
these).  Arrays are NumPy arrays on the host; every result is a fresh array the caller owns,
and the input must not be written while a collective on it is in flight.

Counts of the "v" variants (`allgatherv`, `alltoallv`, `reduce_scatter`) are in rows of the
first dimension, never in elements.  Every collective may carry a `name` (a key derived from
the graph, such as the op name): backends use it to name mismatches and missing ranks.
"""
from __future__ import annotations

import atexit
import os
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ..errors import CollflowError, DeadlineExceededError, InvalidArgumentError
from ..kernels.registry import AsyncHandle

__all__ = ["Communicator", "CollectiveHandle", "CompletedHandle", "Signature", "REDUCE_OPS", "KINDS",
           "default_timeout", "DEFAULT_TIMEOUT_S", "SUPPORTED_DTYPES"]

# the reductions every backend supports; "mean" is "sum" divided by size (floating types only)
REDUCE_OPS = ("sum", "mean", "max", "min", "prod")
# collective kinds, in a fixed order: the index is the kind's code on the wire
KINDS = ("allreduce", "allgather", "allgatherv", "broadcast", "alltoall", "alltoallv",
         "reduce_scatter", "reduce", "barrier")
SUPPORTED_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                    "float16", "float32", "float64")
DEFAULT_TIMEOUT_S = 300.0
_SUPPORTED_NP = frozenset(np.dtype(n) for n in SUPPORTED_DTYPES)


def default_timeout() -> float:
    """Seconds a wait on a collective may take: $COLLFLOW_COLLECTIVE_TIMEOUT, else 300."""
    v = os.environ.get("COLLFLOW_COLLECTIVE_TIMEOUT")
    if not v:
        return DEFAULT_TIMEOUT_S
    try:
        t = float(v)
    except ValueError:
        raise InvalidArgumentError(
            f"COLLFLOW_COLLECTIVE_TIMEOUT must be a number of seconds, got {v!r}") from None
    if not t > 0:
        raise InvalidArgumentError(f"COLLFLOW_COLLECTIVE_TIMEOUT must be positive, got {v!r}")
    return t


def _check_timeout(timeout: Optional[float]) -> float:
    if timeout is None:
        return default_timeout()
    t = float(timeout)
    if not t > 0:
        raise InvalidArgumentError(f"a collective timeout must be a positive number of seconds, got {timeout!r}")
    return t


class CollectiveHandle(AsyncHandle):
    """An in-flight collective: `wait(timeout=None)` returns its result, `done()` polls.

    `wait` without a timeout uses the handle's `timeout` (the communicator's, unless a kernel
    set another); past it, it raises DeadlineExceededError naming the ranks that did not arrive.
    """

    timeout: Optional[float] = None

    def wait(self, timeout: Optional[float] = None) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def done(self) -> bool:  # pragma: no cover - interface
        raise NotImplementedError

    def abandon(self) -> None:
        """Called by the executor when a run fails with this in flight; the result is dropped."""

    def then(self, fn: Callable[[Any], Any]) -> "CollectiveHandle":
        """A handle whose wait() returns fn(this handle's result)."""
        return _MappedHandle(self, fn)


class CompletedHandle(CollectiveHandle):
    """A handle that is done from the start (size-1 backends, trivial cases)."""

    __slots__ = ("_value",)

    def __init__(self, value: Any):
        self._value = value

    def wait(self, timeout: Optional[float] = None) -> Any:
        return self._value

    def done(self) -> bool:
        return True


class _MappedHandle(CollectiveHandle):
    __slots__ = ("_inner", "_fn", "_has", "_value", "timeout")

    def __init__(self, inner: CollectiveHandle, fn: Callable[[Any], Any]):
        self._inner = inner
        self._fn = fn
        self._has = False
        self._value = None
        self.timeout = None

    def wait(self, timeout: Optional[float] = None) -> Any:
        if not self._has:
            if timeout is None and self.timeout is not None:
                timeout = self.timeout
            self._value = self._fn(self._inner.wait(timeout))
            self._has = True
            self._inner = None  # type: ignore[assignment]  (drop the buffers)
        return self._value

    def done(self) -> bool:
        return self._has or self._inner.done()

    def abandon(self) -> None:
        if self._inner is not None:
            self._inner.abandon()


def _as_array(x: Any, what: str) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        if type(x).__module__.startswith("cupy"):
            raise InvalidArgumentError(
                f"{what}: the {type(x).__module__.split('.')[0]} array must be copied to the host first "
                "(the MPI backend works on host buffers)")
        x = np.asarray(x)
    if x.dtype not in _SUPPORTED_NP:
        raise InvalidArgumentError(
            f"{what}: dtype {x.dtype} is not supported by collectives (supported: {', '.join(SUPPORTED_DTYPES)})")
    # MPI reads raw contiguous memory (np.ascontiguousarray would turn a 0-d array into 1-d)
    return x if x.flags.c_contiguous else x.copy(order="C")


def _check_reduce(op: str, dtype: np.dtype, what: str) -> str:
    if op not in REDUCE_OPS:
        raise InvalidArgumentError(f"{what}: op must be one of {', '.join(REDUCE_OPS)}, got {op!r}")
    if op == "mean" and dtype.kind != "f":
        raise InvalidArgumentError(f"{what}: op='mean' needs a floating-point array, got {dtype}")
    if dtype.kind == "b" and op not in ("max", "min"):
        raise InvalidArgumentError(
            f"{what}: a bool array can only be reduced with op='max' (logical or) or 'min' (logical and), got {op!r}")
    return op


def _rows(x: np.ndarray) -> int:
    return int(x.shape[0]) if x.ndim else 1


def _need_rows(x: np.ndarray, what: str) -> None:
    if x.ndim == 0:
        raise InvalidArgumentError(f"{what}: needs an array with a first dimension to split, got a scalar")


def _equal_blocks(rows: int, size: int, what: str) -> np.ndarray:
    if rows % size:
        raise InvalidArgumentError(
            f"{what}: the first dimension ({rows}) must be divisible by the number of ranks ({size})")
    return np.full(size, rows // size, dtype=np.int64)


def _check_counts(counts: Any, size: int, what: str, total: Optional[int] = None) -> np.ndarray:
    c = np.asarray(counts)
    if c.ndim != 1 or c.shape[0] != size or c.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{what}: expected {size} integer counts (one per rank), got {counts!r}")
    c = c.astype(np.int64)
    if (c < 0).any():
        raise InvalidArgumentError(f"{what}: counts must be non-negative, got {c.tolist()}")
    if total is not None and int(c.sum()) != total:
        raise InvalidArgumentError(
            f"{what}: counts {c.tolist()} add up to {int(c.sum())} rows, but the array has {total}")
    return c


def _new_stats() -> Dict[str, int]:
    s = {"calls": 0, "bytes_sent": 0, "bytes_received": 0}
    for k in KINDS:
        s[f"{k}_calls"] = 0
        s[f"{k}_bytes_sent"] = 0
    return s


class Communicator:
    """The ranks of a job and the collectives between them (abstract).

    Subclasses implement the `*_async` methods; the blocking forms are `*_async(...).wait()`.
    `stats` counts calls and payload bytes per collective kind: `bytes_sent` is what this rank
    hands to collectives (its whole array for reductions and allgathers, the root's array for
    a broadcast, the blocks for other ranks in an alltoall), `bytes_received` what it gets
    from other ranks; both stay 0 at size 1.  Wire bytes depend on MPI's algorithm.
    """

    backend = "abstract"

    def __init__(self, timeout: Optional[float] = None):
        self.timeout = _check_timeout(timeout)
        self.stats: Dict[str, int] = _new_stats()
        self._stats_lock = threading.Lock()
        self.timeline: Any = None  # a CommTimeline while one is recorded

    # -- timeline ---------------------------------------------------------------------------
    def start_timeline(self, path: str) -> str:
        """Records this rank's collectives (negotiation, MPI calls, fusion packing) as a Chrome
        trace written to `path` (see collflow.comm.timeline for the per-rank file names) by
        stop_timeline(), close() or the end of the process.  Returns this rank's file path."""
        from .timeline import CommTimeline, timeline_path
        self.stop_timeline()
        tl = CommTimeline(timeline_path(str(path), self.rank), self.rank)
        self.timeline = tl
        _OPEN_TIMELINES.add(tl)
        return tl.path

    def stop_timeline(self) -> Optional[str]:
        """Stops recording and writes the file; returns its path (None if none was recording)."""
        tl, self.timeline = self.timeline, None
        if tl is None:
            return None
        _OPEN_TIMELINES.discard(tl)
        return tl.close()

    # -- topology ---------------------------------------------------------------------------
    @property
    def rank(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    @property
    def size(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    @property
    def local_rank(self) -> int:
        """Rank among the processes on this host (picks the GPU)."""
        return self.rank

    @property
    def local_size(self) -> int:
        return self.size

    @property
    def pending(self) -> int:
        """Number of collectives started here and not yet complete."""
        return 0

    def empty(self, shape: Any, dtype: Any) -> np.ndarray:
        """An uninitialised array this communicator's collectives read and write without a
        staging copy (the MPI backend: in shared memory when every rank is on one host).
        Fusion buckets and result buffers come from here."""
        return np.empty(shape, dtype)

    def _block(self, nbytes: int) -> Any:
        """A buffer object of `nbytes` the collectives read and write without staging."""
        return bytearray(nbytes)

    def empty_group(self, shapes: Sequence[Any], dtype: Any) -> Tuple[np.ndarray, List[np.ndarray]]:
        """(flat, parts): one uninitialised 1-d array and arrays of `shapes` laid out back to
        back in it, from the memory `empty` uses.  Each part is an array of its own over that
        memory, not a view of `flat`: views of a part have the part as their base, so its
        reference count tells whether anyone holds one (the variables' copy-on-write)."""
        dt = np.dtype(dtype)
        shapes = [tuple(int(d) for d in s) for s in shapes]
        sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
        total = sum(sizes)
        buf = self._block(max(total, 1) * dt.itemsize)
        parts, o = [], 0
        for s, n in zip(shapes, sizes):
            parts.append(np.ndarray(s, dt, buffer=buf, offset=o * dt.itemsize))
            o += n
        return np.ndarray((total,), dt, buffer=buf), parts

    def reset_stats(self) -> None:
        with self._stats_lock:
            self.stats = _new_stats()

    def _count(self, kind: str, sent: int, received: int) -> None:
        self._tally(self.stats, kind, sent, received)

    def _tally(self, s: Dict[str, int], kind: str, sent: int, received: int) -> None:
        """Adds one `kind` call to the counters `s` (bytes stay 0 at size 1)."""
        if self.size == 1:
            sent = received = 0
        with self._stats_lock:
            s["calls"] += 1
            s[f"{kind}_calls"] += 1
            s["bytes_sent"] += sent
            s[f"{kind}_bytes_sent"] += sent
            s["bytes_received"] += received

    # -- asynchronous collectives (backends implement these) ---------------------------
    def allreduce_async(self, x: Any, op: str = "sum", name: Optional[str] = None,
                        out: Optional[np.ndarray] = None) -> CollectiveHandle:
        """Elementwise reduction of x over all ranks; every rank gets the result (same shape)."""
        raise NotImplementedError

    def allgather_async(self, x: Any, name: Optional[str] = None) -> CollectiveHandle:
        """Concatenation along axis 0 of every rank's x (same shape everywhere; 0-d arrays stack)."""
        raise NotImplementedError

    def allgatherv_async(self, x: Any, counts: Optional[Sequence[int]] = None,
                         name: Optional[str] = None) -> CollectiveHandle:
        """Concatenation along axis 0 when first dimensions differ; result (values, counts).

        `counts` (rows per rank) saves a round of messages when every rank knows them.
        """
        raise NotImplementedError

    def broadcast_async(self, x: Any, root: int = 0, name: Optional[str] = None) -> CollectiveHandle:
        """Root's x on every rank (x gives the shape and dtype everywhere else)."""
        raise NotImplementedError

    def alltoall_async(self, x: Any, name: Optional[str] = None) -> CollectiveHandle:
        """Block i of x (axis 0 split in `size` equal blocks) goes to rank i; the result
        concatenates the blocks received, in rank order."""
        raise NotImplementedError

    def alltoallv_async(self, x: Any, send_counts: Sequence[int], recv_counts: Optional[Sequence[int]] = None,
                        name: Optional[str] = None) -> CollectiveHandle:
        """send_counts[i] rows of x (in order) go to rank i; result (values, recv_counts)."""
        raise NotImplementedError

    def reduce_scatter_async(self, x: Any, counts: Optional[Sequence[int]] = None, op: str = "sum",
                             name: Optional[str] = None) -> CollectiveHandle:
        """Reduces x over all ranks and gives rank i its counts[i] rows (equal blocks if None)."""
        raise NotImplementedError

    def reduce_async(self, x: Any, root: int = 0, op: str = "sum", name: Optional[str] = None) -> CollectiveHandle:
        """Reduction of x over all ranks on `root`; the other ranks get None."""
        raise NotImplementedError

    def barrier_async(self, name: Optional[str] = None) -> CollectiveHandle:
        raise NotImplementedError

    # -- blocking forms -------------------------------------------------------------------
    def allreduce(self, x: Any, op: str = "sum", name: Optional[str] = None) -> np.ndarray:
        return self.allreduce_async(x, op, name).wait()

    def allgather(self, x: Any, name: Optional[str] = None) -> np.ndarray:
        return self.allgather_async(x, name).wait()

    def allgatherv(self, x: Any, counts: Optional[Sequence[int]] = None,
                   name: Optional[str] = None) -> Tuple[np.ndarray, np.ndarray]:
        return self.allgatherv_async(x, counts, name).wait()

    def broadcast(self, x: Any, root: int = 0, name: Optional[str] = None) -> np.ndarray:
        return self.broadcast_async(x, root, name).wait()

    def alltoall(self, x: Any, name: Optional[str] = None) -> np.ndarray:
        return self.alltoall_async(x, name).wait()

    def alltoallv(self, x: Any, send_counts: Sequence[int], recv_counts: Optional[Sequence[int]] = None,
                  name: Optional[str] = None) -> Tuple[np.ndarray, np.ndarray]:
        return self.alltoallv_async(x, send_counts, recv_counts, name).wait()

    def reduce_scatter(self, x: Any, counts: Optional[Sequence[int]] = None, op: str = "sum",
                       name: Optional[str] = None) -> np.ndarray:
        return self.reduce_scatter_async(x, counts, op, name).wait()

    def reduce(self, x: Any, root: int = 0, op: str = "sum", name: Optional[str] = None) -> Optional[np.ndarray]:
        return self.reduce_async(x, root, op, name).wait()

    def barrier(self, name: Optional[str] = None) -> None:
        self.barrier_async(name).wait()

    # -- lifecycle ---------------------------------------------------------------------------
    def abort(self, code: int = 1) -> None:
        """Ends every rank of the job now (used on an uncaught exception)."""
        os._exit(code)

    def close(self) -> None:
        """Releases the backend's resources; the communicator cannot be used afterwards."""
        self.stop_timeline()

    def _check_root(self, root: int, what: str) -> int:
        r = int(root)
        if not 0 <= r < self.size:
            raise InvalidArgumentError(f"{what}: root must be a rank in [0, {self.size}), got {root!r}")
        return r

    def __repr__(self) -> str:
        return f"<{type(self).__name__} rank {self.rank} of {self.size}>"


def _missing_error(what: str, timeout: float, missing: Sequence[int], detail: str = "") -> DeadlineExceededError:
    if missing:
        who = ("rank " if len(missing) == 1 else "ranks ") + ", ".join(str(r) for r in missing)
        msg = (f"{what} did not complete within {timeout:g} s: {who} did not arrive"
               f"{detail} (timeout: COLLFLOW_COLLECTIVE_TIMEOUT or the communicator's timeout=)")
    else:
        msg = f"{what} did not complete within {timeout:g} s{detail}"
    err = DeadlineExceededError(msg)
    err.missing_ranks = list(missing)  # type: ignore[attr-defined]
    return err


_DTYPE_NAMES: Dict[Any, str] = {}
_OPEN_TIMELINES: "weakref.WeakSet[Any]" = weakref.WeakSet()


@atexit.register
def _write_open_timelines() -> None:
    for tl in list(_OPEN_TIMELINES):
        try:
            tl.close()
        except Exception:
            pass


class Signature(NamedTuple):
    """What a rank says it issued as one collective; ranks must agree on it.

    `aux` packs the reduction (REDUCE_OPS index, low byte) and the root (<< 8).
    """
    kind: str
    name: str
    dtype: str
    shape: Tuple[int, ...]
    aux: int

    @staticmethod
    def of(kind: str, name: Optional[str], x: Optional[np.ndarray], op: Optional[str] = None,
           root: int = 0) -> "Signature":
        aux = (REDUCE_OPS.index(op) if op else 0) | (int(root) << 8)
        if x is None:
            return Signature(kind, name or "", "", (), aux)
        dt = x.dtype
        dname = _DTYPE_NAMES.get(dt)
        if dname is None:  # numpy's dtype.name is Python code: look it up once per dtype
            dname = _DTYPE_NAMES[dt] = dt.name
        return Signature(kind, name or "", dname, tuple(map(int, x.shape)), aux)

    def conflicts(self, other: "Signature") -> bool:
        """True when the two ranks' collectives cannot be the same collective."""
        if self.kind != other.kind:
            return True
        if self.kind == "barrier":
            return False
        if self.name and other.name and self.name != other.name:
            return True
        if self.dtype != other.dtype or self.aux != other.aux:
            return True
        if self.kind in VARIABLE_ROWS:
            return len(self.shape) != len(other.shape) or self.shape[1:] != other.shape[1:]
        return self.shape != other.shape

    def describe(self) -> str:
        s = self.kind + (f" {self.name!r}" if self.name else "")
        if self.kind == "barrier":
            return s
        s += f" {self.dtype}{self.shape}"
        op, root = REDUCE_OPS[self.aux & 0xFF], self.aux >> 8
        if self.kind in ("allreduce", "reduce_scatter", "reduce"):
            s += f" op={op}"
        if self.kind in ("broadcast", "reduce"):
            s += f" root={root}"
        return s


# kinds whose first dimension may differ between ranks
VARIABLE_ROWS = ("allgatherv", "alltoallv")


def mismatch_error(seq: int, sigs: Dict[int, "Signature"]) -> InvalidArgumentError:
    """Names what each rank issued as collective #seq (Horovod-style)."""
    parts = "; ".join(f"rank {r}: {s.describe()}" for r, s in sorted(sigs.items()))
    return InvalidArgumentError(
        f"mismatched collectives: ranks issued different collectives as collective #{seq} ({parts}). "
        "Every rank must issue the same collectives (names, shapes, dtypes) in the same order")


def describe(kind: str, name: Optional[str], dtype: Any = None, shape: Any = None, seq: Optional[int] = None,
             extra: str = "") -> str:
    """'collective #3 allreduce "grad/w" float32(10, 4)' for messages."""
    s = "collective" + (f" #{seq}" if seq is not None else "") + f" {kind}"
    if name:
        s += f" {name!r}"
    if dtype is not None:
        s += f" {np.dtype(dtype).name}{tuple(shape) if shape is not None else ''}"
    return s + extra


def sleep_backoff(start: float, now: float, yield_cpu: bool = False) -> None:
    """Pause between two polls of a wait: spin for the first millisecond, then sleep up to 1 ms.

    Spinning keeps small collectives at MPI's own latency; a rank that shares its core with
    other ranks (`yield_cpu`) yields instead, since the peer it waits for may need the core.
    """
    waited = now - start
    if waited >= 1e-3:
        time.sleep(min(1e-3, waited * 0.1))
    elif yield_cpu:
        time.sleep(0)


def error_copy(err: CollflowError) -> CollflowError:
    """A fresh exception of the same type and message (one per raising rank or handle)."""
    new = type(err)(err.message)
    for k in ("missing_ranks",):
        if hasattr(err, k):
            setattr(new, k, getattr(err, k))
    return new
