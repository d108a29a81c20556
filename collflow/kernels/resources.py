"""The Session's resource container: variable states, queues, RNG states.

Resources outlive one run; kernels reach them through `ctx.resources`.  Reads of a
variable hand out its current array; an in-place update first checks (by reference
count) that nobody else still holds that array, and copies it if someone does, so a value
read earlier in a run, or fetched by the user, is a snapshot that never changes under them.
A read is a view of one read-only view of the value that the state keeps (`ro`: marking
a fresh view read-only costs 5x a view); the checks discount that one reference.

An asynchronous checkpoint takes a zero-copy snapshot of a variable (`LiveSnapshot`): it
keeps the live array, and until its writer has read a row, an in-place update of that row
(`writable_rows`, used by the sparse updates) first saves the row's old value in the
snapshot's undo buffer; a dense in-place update (`writable`) copies the whole array first,
because the snapshot's reference makes the array shared.  The writer reads the snapshot-time
rows back in order (`LiveSnapshot.read_rows`) while training goes on.
"""
from __future__ import annotations

import sys
import threading
from typing import Any, Dict, Optional

import numpy as np

from ..errors import FailedPreconditionError, InvalidArgumentError

__all__ = ["VariableState", "ResourceContainer", "LiveSnapshot", "UndoBuffer"]

# getrefcount(v) inside writable(): the state's slot, the local `v`, the call's argument
_EXCLUSIVE_REFS = 3


class VariableState:
    """Storage of one variable: its array (None until initialized), dtype and static shape.

    `busy`: an in-place collective writing this variable's array (AverageVariables), or
    None.  Every access below waits for it first (`settle`), so nobody reads a value that
    is still changing, or updates one that peers are writing."""

    __slots__ = ("name", "dtype", "shape", "value", "lock", "xp", "pending", "busy", "ro")

    def __init__(self, name: str, dtype: Any, shape: Any, xp: Any = np):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.value: Optional[Any] = None
        self.lock = threading.Lock()
        self.xp = xp
        # the zero-copy snapshot of an asynchronous save not yet written, or None
        self.pending: Optional["LiveSnapshot"] = None
        self.busy: Any = None
        # a read-only view of `value` (NumPy), made by the first snapshot of that value: every
        # snapshot is a view of it, which is cheaper than marking a fresh view read-only.
        # It holds one reference to the value, which the copy-on-write checks discount.
        self.ro: Any = None

    def cached_refs(self, v: Any) -> int:
        """References to `v` this state holds besides `value` (the cached read-only view)."""
        ro = self.ro
        return 1 if ro is not None and ro.base is v else 0

    def set_value(self, v: Any) -> None:
        """Replaces the array; the caller holds `lock` (see `replace`)."""
        self.value = v
        self.ro = None  # a view of the old array would keep it alive

    def replace(self, v: Any) -> None:
        """Makes `v` the value (the state owns it from now on), once no collective is writing
        the old one, under the lock the updates hold: an update between its count of
        references and its write would otherwise write into an array that is no longer the
        value (lost), and that readers of the old value still hold."""
        self.settle()
        with self.lock:
            self.set_value(v)

    def _shared(self, v: Any, refs: int, cached: int) -> bool:
        """Whether `v`, the value, must be copied before an update in place: `refs` references
        to it as counted in writable() (`cached` of them the state's cached view), or a
        read-only array, or a view of another array (reads of it reference that array, so
        the count cannot see them)."""
        if isinstance(v, np.ndarray):
            return refs > _EXCLUSIVE_REFS + cached or not v.flags.writeable or isinstance(v.base, np.ndarray)
        # a device (CuPy) array: always writable; a view shares another array's memory
        return refs > _EXCLUSIVE_REFS + cached or getattr(v, "base", None) is not None

    def settle(self) -> None:
        """Waits until no collective is writing this variable's array (see `busy`)."""
        b = self.busy
        if b is not None:
            b.finish()

    def read(self, op: Any = None) -> Any:
        if self.busy is not None:
            self.settle()
        v = self.value
        if v is None:
            raise FailedPreconditionError(
                f"Attempting to use uninitialized variable {self.name!r}; "
                "run cf.global_variables_initializer() (or the variable's initializer) first", op)
        return v

    def snapshot(self, op: Any = None) -> Any:
        """A read-only view of the current value: consumers and fetches can never write into
        the storage, and while the view lives an in-place update copies first."""
        if self.busy is not None:
            self.settle()
        v = self.value
        if v is None:
            self.read(op)
        if self.xp is np:
            ro = self.ro
            # ro.base is the array a view was made of (NumPy collapses chains of views to
            # the array that owns the memory): a cache made for another value is replaced
            if ro is None or ro.base is not v:
                ro = v.view()
                ro.flags.writeable = False
                if self.value is v:  # not replaced meanwhile (a cache of it would keep it alive)
                    self.ro = ro
            return ro.view()  # a view of a read-only array is read-only
        return v

    def writable(self, op: Any = None) -> Any:
        """The array, safe to update in place (copied first if anyone else holds it)."""
        if self.busy is not None:
            self.settle()
        v = self.value
        if v is None:
            self.read(op)
        # the cache's share first: a cache made after the count only raises it (a safe copy)
        cached = self.cached_refs(v)
        refs = sys.getrefcount(v)  # before `v` is an argument (which would count)
        if self._shared(v, refs, cached):
            v = v.copy()
            self.set_value(v)
        return v

    def writable_rows(self, op: Any, rows: Any, sorted_unique: bool = False, gather: bool = False) -> Any:
        """The array, safe to update the given rows (of the first axis) in place.

        Like writable(), except while a zero-copy snapshot of this variable is pending: then
        the old values of `rows` are saved in the snapshot's undo buffer instead of copying
        the whole array.  Call it under the variable's lock, before touching the rows;
        `sorted_unique` says `rows` is already sorted without duplicates.  gather=True
        returns (array, array[rows]): the rows the caller reads anyway, read once.
        """
        if self.busy is not None:
            self.settle()
        v = self.value
        if v is None:
            self.read(op)
        p = self.pending
        cached = self.cached_refs(v)  # first, as in writable()
        if p is not None and p.array is v:
            with p.lock:
                # referenced by: the slot, `v`, getrefcount's argument, the snapshot, and the
                # views the writer is reading through right now; anyone else: copy-on-write
                if (p.array is v and v.flags.writeable
                        and sys.getrefcount(v) <= _EXCLUSIVE_REFS + 1 + p.views + cached):
                    if sorted_unique:
                        old = v[rows] if gather else None
                        p.save_rows(rows, old)
                        return (v, old) if gather else v
                    p.save_rows(np.unique(rows))
                    return (v, v[rows]) if gather else v
        refs = sys.getrefcount(v)  # before `v` is an argument (which would count)
        if self._shared(v, refs, cached):
            v = v.copy()
            self.set_value(v)
        return (v, v[rows]) if gather else v

    def live_snapshot(self, undo: Optional["UndoBuffer"] = None) -> Optional["LiveSnapshot"]:
        """A zero-copy snapshot of the current value (see LiveSnapshot), or None when the value
        is not a C-contiguous NumPy array of rank >= 1 or another snapshot is pending.

        `undo`: a buffer left by an earlier snapshot of this variable, reused when it fits.
        """
        self.settle()
        with self.lock:
            v = self.value
            if (self.pending is not None or not isinstance(v, np.ndarray) or v.ndim == 0
                    or not v.flags.c_contiguous):
                return None
            p = LiveSnapshot(self, v, undo)
            self.pending = p
            return p

    def assign(self, value: Any, op: Any = None, validate_shape: bool = True) -> Any:
        self.settle()
        xp = self.xp
        if validate_shape and self.shape is not None and not self.shape.matches_value(value.shape):
            raise InvalidArgumentError(
                f"cannot assign a value of shape {tuple(value.shape)} to variable {self.name!r} "
                f"of shape {self.shape}", op)
        # own a private copy: the value may be a constant or an array the caller keeps
        self.replace(xp.array(value, dtype=self.dtype.np, copy=True))
        return self.snapshot()


class UndoBuffer:
    """The writer's side of a snapshot's saved rows, reusable from save to save.

    store[pos[r] - 1] is the snapshot-time value of row r where pos[r] > 0: rows saved by
    updates, filed away by the writer until it reads their piece.  The arrays are allocated
    empty (NumPy's large allocations are mapped lazily), so memory is committed only for the
    rows actually filed.
    """

    __slots__ = ("store", "pos", "count", "busy")

    def __init__(self, shape: tuple, dtype: Any):
        self.store = np.empty(shape, dtype=dtype)
        self.pos = np.zeros(shape[0], dtype=np.int64)
        self.count = 0  # rows of `store` in use
        self.busy = False  # in use by a snapshot not yet released

    def fits(self, a: np.ndarray) -> bool:
        return self.store.shape == a.shape and self.store.dtype == a.dtype

    def clear(self, start: int) -> None:
        """Forgets everything (entries of rows below `start` were cleared as they were read)."""
        if self.count and start < self.pos.shape[0]:
            self.pos[start:] = 0
        self.count = 0
        self.busy = False


class LiveSnapshot:
    """The value a variable had when an asynchronous save began, kept without copying it.

    It holds the live array.  Until the writer has read a row, an in-place update of that row
    first saves its old value here (VariableState.writable_rows, under `lock`), and a dense
    in-place update copies the whole array first (VariableState.writable: this object's
    reference makes the array shared).  `read_rows(r0, r1, out)` fills `out` with rows
    [r0, r1) as they were at the snapshot, for consecutive ranges from row 0; rows already
    read need no saving any more.  `release()` ends the snapshot (the writer calls it when the
    variable is written, or when the save fails).

    The training thread's share is kept small: an update costs it one copy of the rows it
    touches that are not read yet (in cache: the update has just read them), appended as a
    chunk; the writer sorts the chunks out: a row saved twice keeps its first (older) value.
    """

    __slots__ = ("state", "array", "shape", "dtype", "nbytes", "lock", "views", "undo", "_frontier", "_chunks")

    def __init__(self, state: VariableState, array: np.ndarray, undo: Optional[UndoBuffer] = None):
        self.state = state
        self.array: Optional[np.ndarray] = array
        self.shape = tuple(array.shape)
        self.dtype = array.dtype
        self.nbytes = int(array.nbytes)
        self.lock = threading.Lock()
        self.views = 0  # views of `array` the writer holds (each one is a reference to it)
        self.undo = (undo if undo is not None and not undo.busy and undo.fits(array)
                     else UndoBuffer(self.shape, self.dtype))
        self.undo.busy = True
        self._frontier = 0  # rows below it are read: updates to them need no saving
        self._chunks: list = []  # (sorted rows, their old values) saved since the writer last looked

    @property
    def released(self) -> bool:
        return self.array is None

    def save_rows(self, rows: np.ndarray, old: Optional[np.ndarray] = None) -> None:
        """Saves the current values of `rows` (sorted, unique; not modified afterwards) not yet
        read, before an update changes them; under `lock`.

        old: their values (array[rows]) when the caller has them, else they are read here.
        `old` is copied (the caller may update it afterwards)."""
        if self._frontier:
            i = int(np.searchsorted(rows, self._frontier))
            if i:
                rows = rows[i:]
                old = None if old is None else old[i:]
        if rows.size:
            self._chunks.append((rows, self.array[rows] if old is None else old.copy()))

    def read_rows(self, r0: int, r1: int, out: np.ndarray) -> None:
        """Copies rows [r0, r1) as they were at the snapshot into `out` (r0: the rows read so far)."""
        with self.lock:
            if self.array is None:
                raise RuntimeError(f"the snapshot of variable {self.state.name!r} was released")
            if r0 != self._frontier:
                raise ValueError(f"rows of a snapshot are read in order: expected row {self._frontier}, got {r0}")
            self.views += 1
            src = self.array[r0:r1]
        try:
            # a row updated during the copy may come out torn: its old value was saved first
            # (save_rows runs before the update), and is put back below
            np.copyto(out, src)
        finally:
            with self.lock:
                del src  # before `views` drops, so the count never undercounts the references
                self.views -= 1
                chunks, self._chunks = self._chunks, []
                self._frontier = r1  # from now on only rows >= r1 are saved
        # the rest is the writer's alone.  A row may have been saved more than once: its first
        # value is the snapshot's.  Chunks are in the order they were saved, all of them after
        # what `store` holds, and hold rows >= r0 (saved while the frontier was r0).
        cut = [int(np.searchsorted(rows, r1)) for rows, _ in chunks]
        for (rows, vals), i in zip(reversed(chunks), reversed(cut)):  # so the first saved wins
            if i:
                out[rows[:i] - r0] = vals[:i]
        u = self.undo
        if u.count:
            s = u.pos[r0:r1]
            hit = np.flatnonzero(s)
            if hit.size:
                out[hit] = u.store[s[hit] - 1]
                s[hit] = 0
        for (rows, vals), i in zip(chunks, cut):  # rows of later pieces: filed away, first value kept
            if i < rows.size:
                rows, vals = rows[i:], vals[i:]
                if u.count:
                    new = u.pos[rows] == 0
                    if not new.all():
                        rows, vals = rows[new], vals[new]
                c, k = u.count, rows.size
                u.store[c:c + k] = vals
                u.pos[rows] = np.arange(c + 1, c + k + 1)
                u.count = c + k

    def release(self) -> None:
        """Ends the snapshot: updates stop saving rows; the undo buffer is cleared for reuse."""
        with self.lock:
            if self.array is None:
                return
            self.array = None
            start, self._frontier = self._frontier, self.shape[0]
            self._chunks = []
            self.undo.clear(start)
        st = self.state
        with st.lock:
            if st.pending is self:
                st.pending = None


class ResourceContainer:
    """Named resources of one Session (TensorFlow's ResourceMgr)."""

    def __init__(self) -> None:
        self.variables: Dict[str, VariableState] = {}
        self.queues: Dict[str, Any] = {}
        self.rng: Dict[str, Any] = {}
        self.other: Dict[str, Any] = {}
        self._lock = threading.Lock()

    def variable(self, name: str, dtype: Any, shape: Any, xp: Any = np) -> VariableState:
        with self._lock:
            st = self.variables.get(name)
            if st is None:
                st = VariableState(name, dtype, shape, xp)
                self.variables[name] = st
            elif st.dtype != dtype:
                raise InvalidArgumentError(
                    f"variable {name!r} exists with dtype {st.dtype.name}, requested {dtype.name}")
            return st

    def get_or_create(self, kind: str, name: str, factory: Any) -> Any:
        table = {"queue": self.queues, "rng": self.rng}.get(kind, self.other)
        with self._lock:
            r = table.get(name)
            if r is None:
                r = factory()
                table[name] = r
            return r
