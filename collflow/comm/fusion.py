"""Kernels of the fused collectives (graph/ops/fusion_ops.py): tensor fusion and compression,
and the in-place average of a bucket of variables (`_ParamBucket`).

FusedAllReduce packs its bucket of gradients into one flat buffer with one extra element,
1.0, this rank's *contribution flag*; after the sum that element is the number of ranks
that contributed, and the average divides by it (the backup-rank protocol sends 0.0 from
ranks that were late).  The collective is issued asynchronously: the executor keeps running
ready ops and waits only before the first op that needs the result.
"""
from __future__ import annotations

import sys
import threading
import time
import weakref
from typing import Any, List, Optional, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.registry import register_kernel, KernelContext
from . import compression as _codec
from .base import CompletedHandle
from .buckets import split_direct
from .send_bucket import SendBucket as _SendBucket, Slots as _Slots

__all__ = ["pack", "unpack", "communicator_for"]


def communicator_for(ctx: KernelContext) -> Any:
    """The session's communicator (config 'comm'), else the process default."""
    c = ctx.config.get("comm") if ctx.config else None
    if c is not None:
        return c
    from . import get
    return get()


def pack(arrays: Sequence[np.ndarray], dtype: Any, extra: int = 0) -> np.ndarray:
    """One flat buffer holding `arrays` back to back, plus `extra` trailing elements."""
    buf = np.empty(sum(a.size for a in arrays) + extra, dtype=dtype)
    _pack(buf, arrays, None)
    return buf


def _pack_scaled(buf: np.ndarray, arrays: Sequence[np.ndarray], scale: Any) -> None:
    """Copies `arrays` back to back into buf (times `scale` when given) in one pass each."""
    o = 0
    for a in arrays:
        n = a.size
        dst = buf[o:o + n].reshape(a.shape)
        if scale is None:
            np.copyto(dst, a, casting="same_kind")
        else:
            np.multiply(a, np.asarray(scale, dtype=buf.dtype), out=dst, casting="same_kind")
        o += n


def _pack(buf: np.ndarray, arrays: Sequence[np.ndarray], scale: Any, n: Optional[int] = None,
          same_dtype: Optional[bool] = None) -> None:
    """Packs `arrays` into buf (times `scale` when given): per array for few large ones (the
    scaling rides on the copy), else one C-level concatenate (then one scaling pass): the
    per-array Python cost dominates for many small gradients.  `n` (their total size) and
    `same_dtype` (all of buf's dtype), when the caller knows them, save a pass over the list."""
    if n is None:
        n = sum(a.size for a in arrays)
    if same_dtype is None:
        same_dtype = all(a.dtype == buf.dtype for a in arrays)
    if len(arrays) <= 4 or n >= 65536 * len(arrays) or not same_dtype:
        _pack_scaled(buf, arrays, scale)
        return
    body = buf[:n]
    np.concatenate(arrays, axis=None, out=body)  # axis=None: each array flattened, in C
    if scale is not None:
        np.multiply(body, np.asarray(scale, dtype=buf.dtype), out=body)


def _allreduce(comm: Any, send: np.ndarray, key: str, recv: np.ndarray, wait_now: bool, op: str = "sum") -> Any:
    if wait_now and getattr(comm, "backend", "") == "mpi":
        return comm.allreduce_async(send, op, name=key, out=recv, wait_now=True)
    return comm.allreduce_async(send, op, name=key, out=recv)


def unpack(buf: np.ndarray, like: Sequence[Any], dtypes: Sequence[Any]) -> List[np.ndarray]:
    """Views of `buf` shaped like each of `like` (cast to each dtype when it differs)."""
    out = []
    o = 0
    for a, dt in zip(like, dtypes):
        n = a.size
        v = buf[o:o + n].reshape(a.shape)
        out.append(v if v.dtype == dt else v.astype(dt))
        o += n
    return out


def _contribution(ctx: KernelContext) -> float:
    """1.0 unless this rank's gradients are to be excluded this step (backup ranks)."""
    fn = ctx.config.get("contribution") if ctx.config else None
    return 1.0 if fn is None else float(fn())


def _static_size(t: Any) -> Optional[int]:
    return t.shape.num_elements() if t.shape.is_fully_defined() else None


class _ReusedResult:
    """A receive buffer kept between steps, and the views of it handed out as results.

    It is reused once nobody else holds it or any of the views (reference counts), so a
    result the user fetched or an op still reads is never overwritten.  `alloc(n, dtype)`
    makes a buffer (the communicator's `empty`: shared memory where it all-reduces there)."""

    __slots__ = ("buf", "handed", "vrefs", "alloc")

    def __init__(self, alloc: Any = np.empty) -> None:
        self.buf: Any = None
        self.handed: List[np.ndarray] = []
        self.vrefs = 0
        self.alloc = alloc

    def held(self) -> bool:
        """Whether anyone but this object references the buffer or a handed-out view."""
        # the buffer: the slot and getrefcount's argument, plus one per handed-out view (their
        # base); a view: as counted when handed out (checked in C: 200 views ~ 5 us)
        return (sys.getrefcount(self.buf) > 2 + len(self.handed)
                or bool(self.handed) and max(map(sys.getrefcount, self.handed)) > self.vrefs)

    def buffer(self, n: int, dtype: Any) -> np.ndarray:
        if self.buf is None or self.buf.size != n or self.buf.dtype != dtype or self.held():
            self.buf = None  # the old one goes back to the allocator first
            self.handed = []
            self.buf = self.alloc(n, dtype)
        return self.buf

    def views(self, summed: np.ndarray, like: Sequence[np.ndarray], dts: Sequence[Any]) -> List[Any]:
        if summed is not self.buf:
            return unpack(summed, like, dts)  # fresh arrays: nothing to cache
        if not self.handed:  # views of the reused buffer are built once
            if any(np.dtype(dt) != summed.dtype for dt in dts):
                return unpack(summed, like, dts)  # casts copy: nothing to cache
            self.handed = unpack(summed, like, dts)
            self.vrefs = max(map(sys.getrefcount, self.handed))
        return self.handed


class _Joined:
    """Several collectives as one handle: wait() returns fn([their results]).  `after`, if
    given, runs once when the wait ends, however it ends, or when the handle is abandoned:
    after(True) when every collective completed, after(False) otherwise."""

    __slots__ = ("hs", "fn", "after")

    def __init__(self, hs: list, fn: Any, after: Any = None):
        self.hs, self.fn, self.after = hs, fn, after

    def _end(self, ok: bool) -> None:
        after, self.after = self.after, None
        if after is not None:
            after(ok)

    def wait(self) -> Any:
        if self.after is None:
            return self.fn([h.wait() for h in self.hs])
        ok = False
        try:
            got = [h.wait() for h in self.hs]
            ok = True
        finally:
            self._end(ok)
        return self.fn(got)

    def done(self) -> bool:
        return all(h.done() for h in self.hs)

    def abandon(self) -> None:
        try:
            for h in self.hs:
                ab = getattr(h, "abandon", None)
                if ab is not None:
                    ab()
        finally:
            self._end(False)


def _read_variable_state(t: Any, ctx: KernelContext) -> Any:
    """The VariableState whose read `t` is (through Identity ops), or None: such an input of
    a bucket may have the variable live in the bucket's send buffer (send_bucket.py)."""
    p = t.op
    while p.type == "Identity" and p.inputs:
        p = p.inputs[0].op
    if p.type != "ReadVariable" or ctx.resources is None or ctx.xp is not np:
        return None
    h = p.inputs[0].op
    if h.type != "VarHandle":
        return None
    return ctx.resources.variable(h.attrs["shared_name"], h.attrs["dtype"], h.attrs["shape"], ctx.xp)


@register_kernel("FusedAllReduce", is_async=True)
def _fused_all_reduce(op: Any, ctx: KernelContext) -> Any:
    comm = communicator_for(ctx)
    key = op.attrs["key"]
    average = op.attrs["average"]
    codec = op.attrs["compression"]
    dtypes = [t.dtype.np for t in op.outputs]
    # one wire dtype per bucket: the widest of its gradients
    wide = np.result_type(*dtypes)
    nout = len(op.outputs)

    def finish(summed: np.ndarray, arrays: Sequence[np.ndarray], prescaled: bool = False) -> Any:
        count = float(summed[-1])
        if count <= 0:
            raise InvalidArgumentError(f"{key}: no rank contributed gradients to this step", op)
        if average and count != 1.0 and not prescaled:
            body = summed[:-1]
            body /= np.asarray(count, dtype=body.dtype)
        outs = unpack(summed, arrays, dtypes)
        return outs[0] if nout == 1 else tuple(outs)

    if codec == "none":
        # Backup ranks send a contribution flag (one extra element: how many ranks
        # contributed); without them every rank contributes and the count is the world size.
        flagged = bool(ctx.config and ctx.config.get("contribution") is not None)
        size = comm.size
        averaged = average and size > 1 and not flagged
        # The average divides the sum on arrival, so the send buffer is only read (gradients
        # can be computed into it); 16-bit gradients are scaled while packing instead, as
        # their sum could overflow.  Every rank decides alike (statically).
        prescale = averaged and any(np.dtype(d).itemsize < 4 for d in dtypes)
        scale_after = averaged and not prescale
        # Gradients that travel on their own, read by MPI where they are (no packing copy): a
        # lone gradient, and large ones.  Packing pays for small gradients (one collective's
        # latency for all); for a large one it is only a copy.  Decided from the static
        # shapes, so every rank splits the bucket alike.
        direct, packed = split_direct([_static_size(t) for t in op.inputs], pack_all=flagged or prescale)
        wide_p = np.result_type(*[dtypes[i] for i in packed]) if packed else wide
        static = packed and all(op.inputs[i].shape.is_fully_defined() for i in packed)
        # buffers from the communicator: where it all-reduces through shared memory, these
        # are in this rank's arena, and collectives on them need no staging copy
        alloc = comm.empty
        bucket = None
        if static and not flagged and not prescale:
            hosts = {j: st for j, i in enumerate(packed)
                     if (st := _read_variable_state(op.inputs[i], ctx)) is not None}
            def new_bucket() -> _SendBucket:
                return _SendBucket([op.inputs[i].shape.as_list() for i in packed], wide_p, alloc,
                                   hosts, comm.empty_group if hosts else None)
            # where variables live in it: one per session and op, whatever plan runs it (else
            # two plans would move the variables back and forth every step)
            res = ctx.resources
            bucket = (res.get_or_create("other", ("SendBucket", op.name), new_bucket)
                      if hosts and res is not None else new_bucket())
        # a direct gradient of static shape has a send buffer of its own to be computed into
        lone = [_SendBucket([op.inputs[i].shape.as_list()], dtypes[i], alloc)
                if op.inputs[i].shape.is_fully_defined() else None for i in direct]
        n_packed = bucket.total if bucket is not None else 0
        same_p = all(dtypes[i] == wide_p for i in packed)
        packed_dtypes = [dtypes[i] for i in packed]
        all_packed = packed == list(range(nout))
        results = [_ReusedResult(alloc) for _ in range(len(direct) + (1 if packed else 0))]
        names = ([key] if packed else []) + [key if not packed and len(direct) == 1 else f"{key}[{i}]"
                                             for i in direct]
        hints = {"wait_now": False}   # set by the executor: the plan waits for the result at once
        inv = 1.0 / size if prescale else None

        def run(*arrays: np.ndarray) -> Any:
            # deferred to the wait (and then MPI's blocking call when every rank agrees) when
            # the plan waits at once, or when the communicator says overlap does not pay here
            wait_now = hints["wait_now"] or not getattr(comm, "overlap", True)
            handles: List[Any] = []
            parts = [arrays[i] for i in packed]
            own = None
            owned: List[_SendBucket] = []  # send buffers this step took (freed when done)
            moves: List[int] = []  # slots of variables to move into the buffer once it is sent
            try:
                if packed:
                    send = bucket.take() if bucket is not None else None
                    if send is not None:
                        own = bucket
                        owned.append(own)
                        total = n_packed
                    else:  # shapes known only now, or another thread's step has the bucket
                        total = sum(a.size for a in parts) + (1 if flagged else 0)
                        send = alloc(total, wide_p)
                    tl = getattr(comm, "timeline", None)
                    t0 = time.perf_counter() if tl is not None else 0.0
                    placed = 0
                    if own is not None:
                        # computed into the buffer, or variables living there: no copy
                        missing = own.missing(parts)
                        placed = own.placed
                        if placed and missing:
                            for j in missing:
                                np.copyto(own.views[j], parts[j], casting="same_kind")
                        if missing and own.hosts:
                            moves.extend(j for j in missing if j in own.hosts)
                    if not placed:
                        if own is not None:  # sizes as the static shapes say (concatenate checks)
                            _pack(send, parts, None, n_packed, same_p)
                        else:
                            _pack(send, parts, inv)
                    if tl is not None:
                        tl.span("PACK " + key, 3, t0, time.perf_counter(), "fusion",
                                {"tensors": len(parts), "bytes": int(send.nbytes), "computed_in_place": placed})
                    if flagged:
                        send[-1] = _contribution(ctx)
                        if send[-1] == 0.0:
                            send[:-1] = 0
                    handles.append(_allreduce(comm, send, names[0], results[0].buffer(total, wide_p), wait_now))
                base = len(handles)
                for j, i in enumerate(direct):
                    a = arrays[i]
                    lb = lone[j]
                    if lb is not None and lb.views and a is lb.views[0] and lb.take() is not None:
                        owned.append(lb)  # computed into its send buffer
                        lb.placed = 1
                        a = lb.buf
                    elif not a.flags.c_contiguous:
                        a = np.ascontiguousarray(a)
                    handles.append(_allreduce(comm, a.reshape(-1), names[base + j],
                                              results[base + j].buffer(a.size, a.dtype), wait_now))
            except BaseException:
                # nothing is returned to wait on: end what started, free the buffers (a
                # collective MPI may still read keeps a buffer referenced: the next step
                # then takes a fresh one)
                for h in handles:
                    try:
                        h.abandon()
                    except Exception:
                        pass
                for b in owned:
                    b.release()
                raise

            def done(summed: List[np.ndarray]) -> Any:
                if scale_after:  # true division, as MPI's "mean" and the contribution count
                    for s_ in summed:
                        np.divide(s_, size, out=s_)
                if all_packed and not flagged:  # the common bucket: its views, in order
                    vals = results[0].views(summed[0], parts, packed_dtypes)
                    return vals[0] if nout == 1 else tuple(vals)
                outs: List[Any] = [None] * nout
                if packed:
                    if flagged:
                        got = finish(summed[0], parts)
                        vals = [got] if len(parts) == 1 else list(got)
                    else:
                        vals = results[0].views(summed[0], parts, packed_dtypes)
                    for i, v in zip(packed, vals):
                        outs[i] = v
                for j, i in enumerate(direct):
                    outs[i] = results[base + j].views(summed[base + j], [arrays[i]], [dtypes[i]])[0]
                return outs[0] if nout == 1 else tuple(outs)

            def release(ok: bool) -> None:
                try:
                    if ok and moves:
                        own.move_variables(parts, moves)
                finally:
                    for b in owned:
                        b.release()
            # the send buffers are free again once the collectives have read them
            return _Joined(handles, done, release if owned else None)
        run.launch_hints = hints  # type: ignore[attr-defined]
        run.result_buffers = results  # type: ignore[attr-defined]  (for inspection)
        run.send_bucket = bucket  # type: ignore[attr-defined]  (for inspection)
        index = {}
        if bucket is not None:
            # no slot where a variable may live: nothing may compute into its storage
            index = {i: (bucket, j) for j, i in enumerate(packed)
                     if np.dtype(dtypes[i]) == bucket.dtype and j not in bucket.hosts}
        index.update({i: (lb, 0) for i, lb in zip(direct, lone) if lb is not None})
        if index:
            run.input_slots = _Slots(index)  # type: ignore[attr-defined]
        return run

    def run_compressed(*arrays: np.ndarray) -> Any:
        flag = _contribution(ctx)
        buf = pack(arrays, np.float32, extra=1)
        buf[-1] = flag
        if flag == 0.0:
            buf[:-1] = 0
        enc = _codec.encode(buf, codec)
        size = comm.size

        def done(gathered: np.ndarray) -> Any:
            s = _codec.sum_encoded(gathered, size, codec)
            # the flag column is exact in both codecs (small integers)
            return finish(s.astype(wide, copy=False), arrays)
        return comm.allgather_async(enc, name=key).then(done)
    return run_compressed


class _ParamBucket:
    """The flat buffer of an AverageVariables bucket, in which its variables live.

    Between steps each variable's value (its VariableState's array) is its part of the
    buffer, so averaging them is one in-place all-reduce of the buffer: no packing, no copy
    back, and in shared memory (the communicator's `empty_group`) the peers read and write
    it where it is.  The parts are arrays of their own (not views of the buffer), so the
    variables' copy-on-write keeps working: when a part is held by anyone else (a fetched
    value, a pending checkpoint), a variable was assigned a new array, or on the first step,
    every variable of the bucket moves into a fresh buffer (one copy, that step only); the
    old arrays stay as they were for whoever holds them."""

    __slots__ = ("shapes", "dtype", "alloc", "flat", "parts")

    def __init__(self, shapes: Sequence[tuple], dtype: Any, alloc: Any) -> None:
        self.shapes = [tuple(s) for s in shapes]
        self.dtype = np.dtype(dtype)
        self.alloc = alloc
        self.flat: Any = None
        self.parts: List[Any] = []  # weak references: a strong one would count as a holder

    def place(self, states: Sequence[Any], op: Any) -> np.ndarray:
        """The buffer, with every state's current value in its part (moved there if needed)."""
        for st in states:
            st.settle()  # an earlier average of these variables is complete
        if self.parts:
            for st, ref in zip(states, self.parts):
                with st.lock:
                    v = st.value
                    # held by: the state, `v`, getrefcount's argument (and the state's cached
                    # read-only view); anyone else: move
                    cached = st.cached_refs(v)
                    if (v is None or v is not ref() or sys.getrefcount(v) > 3 + cached
                            or not v.flags.writeable):
                        break
            else:
                return self.flat
        self.flat, self.parts = None, []  # let the old buffer go unless someone holds it
        flat, arrays = self.alloc(self.shapes, self.dtype)
        for st, a in zip(states, arrays):
            with st.lock:
                v = st.read(op)
                if v.shape != a.shape:
                    raise InvalidArgumentError(
                        f"{op.type}: variable {st.name!r} has shape {tuple(v.shape)}, the graph says "
                        f"{tuple(a.shape)}", op)
                np.copyto(a, v, casting="same_kind")
                st.set_value(a)
        self.flat = flat
        self.parts = [weakref.ref(a) for a in arrays]
        return flat


class Averaging:
    """The handle of one AverageVariables run.  From before its collective starts until it is
    complete, the bucket's variables are busy (VariableState.busy): any access to them waits
    for it (`finish`), so a value read or fetched is never one that is still changing.  It
    finishes once, whichever thread asks first; the executor's wait is one of them."""

    __slots__ = ("states", "h", "lock", "started", "finished")

    def __init__(self, states: Sequence[Any]) -> None:
        self.states = list(states)
        self.h: Any = None
        self.lock = threading.Lock()
        self.started = threading.Event()
        self.finished = False
        for st in self.states:
            st.busy = self

    def start(self, h: Any) -> "Averaging":
        self.h = h
        self.started.set()
        return self

    def _release(self) -> None:
        self.finished = True
        for st in self.states:
            if st.busy is self:
                st.busy = None

    def fail_to_start(self) -> None:
        """The collective could not be started: nothing will write the variables."""
        with self.lock:
            self._release()
        self.started.set()

    def finish(self) -> None:
        with self.lock:
            if self.finished:
                return
            self.started.wait()
            try:
                if self.h is not None:
                    self.h.wait()
            finally:
                self._release()

    def wait(self) -> None:
        self.finish()

    def done(self) -> bool:
        return self.finished or (self.h is not None and self.h.done())

    def abandon(self) -> None:
        # a failed run: take part in the collective (peers may be in it), then let go
        with self.lock:
            if self.finished:
                return
            try:
                ab = getattr(self.h, "abandon", None)
                if ab is not None:
                    ab()
            finally:
                self._release()


@register_kernel("AverageVariables", is_async=True)
def _average_variables(op: Any, ctx: KernelContext) -> Any:
    from ..graph.ops.state_ops import variable_dtype_shape
    comm = communicator_for(ctx)
    key = op.attrs["key"]
    specs = [variable_dtype_shape(h) for h in op.inputs]
    def new_bucket() -> _ParamBucket:
        return _ParamBucket([shp.as_list() for _, shp in specs], specs[0][0].np, comm.empty_group)
    # one per session and bucket, whatever plan runs it (else two plans would move the
    # variables back and forth every step)
    res = ctx.resources
    bucket = res.get_or_create("other", ("AverageVariables", key), new_bucket) if res is not None else new_bucket()
    hints = {"wait_now": False}  # set by the executor: the plan waits for the result at once
    # In shared memory the owners write the mean straight into every rank's variables.
    # Elsewhere the sum lands in a buffer of its own and one pass divides it into the
    # variables (an in-place MPI all-reduce and then a division pass measured slower).
    in_place = bool(getattr(comm, "shm_active", False))
    sums = None if in_place else _ReusedResult()

    def run(*states: Any) -> Any:
        n = comm.size
        if n == 1:
            return CompletedHandle(None)
        flat = bucket.place(states, op)
        wait_now = hints["wait_now"] or not getattr(comm, "overlap", True)
        avg = Averaging(states)  # busy before the peers may write into them
        try:
            if in_place:
                def done(mean: np.ndarray) -> None:
                    if mean is not flat:  # a transport that returns a fresh array after all
                        np.copyto(flat, mean)
                return avg.start(_allreduce(comm, flat, key, flat, wait_now, "mean").then(done))

            def divide(total: np.ndarray) -> None:
                np.divide(total, n, out=flat)  # true division, as "mean"
            return avg.start(_allreduce(comm, flat, key, sums.buffer(flat.size, flat.dtype), wait_now).then(divide))
        except BaseException:
            avg.fail_to_start()
            raise
    run.launch_hints = hints  # type: ignore[attr-defined]
    run.bucket = bucket  # type: ignore[attr-defined]  (for inspection)
    return run


@register_kernel("CommSize")
def _comm_size(op: Any, ctx: KernelContext) -> Any:
    comm = communicator_for(ctx)
    dt = op.attrs["dtype"].np

    xp = ctx.xp

    def run() -> Any:  # on the op's device: a GPU consumer gets a CuPy scalar, not a host one
        return xp.asarray(comm.size, dtype=dt)
    return run


@register_kernel("SparseAllGather", is_async=True)
def _sparse_all_gather(op: Any, ctx: KernelContext) -> Any:
    comm = communicator_for(ctx)
    key = op.attrs["key"]

    vdt = op.outputs[0].dtype.np

    def run(values: np.ndarray, indices: np.ndarray) -> Any:
        flag = _contribution(ctx)
        if flag == 0.0:  # a late rank sends no rows
            values = values[:0]
            indices = indices[:0]
        v = np.ascontiguousarray(values)
        i = np.ascontiguousarray(indices.reshape(-1))
        # allgatherv's result is (rows, rows per rank)
        hv = comm.allgatherv_async(v, name=key + "/values").then(lambda r: r[0])
        hi = comm.allgatherv_async(i, name=key + "/indices").then(lambda r: r[0])
        hc = comm.allreduce_async(np.asarray([flag], dtype=vdt), "sum", name=key + "/count")
        return _Joined([hv, hi, hc.then(lambda c: c.reshape(()))], tuple)
    return run


@register_kernel("FusedBroadcast", is_async=True)
def _fused_broadcast(op: Any, ctx: KernelContext) -> Any:
    comm = communicator_for(ctx)
    key = op.attrs["key"]
    root = op.attrs["root"]
    dtypes = [t.dtype.np for t in op.outputs]
    nout = len(op.outputs)
    # one buffer per dtype keeps every value bit-exact
    groups: dict = {}
    for i, dt in enumerate(dtypes):
        groups.setdefault(np.dtype(dt), []).append(i)

    def run(*arrays: np.ndarray) -> Any:
        handles = [comm.broadcast_async(pack([arrays[i] for i in idx], dt), root=root, name=f"{key}/{dt.name}")
                   for dt, idx in groups.items()]

        def done(bufs: List[np.ndarray]) -> Any:
            out: List[Any] = [None] * nout
            for idx, buf in zip(groups.values(), bufs):
                for i, v in zip(idx, unpack(buf, [arrays[i] for i in idx], [buf.dtype] * len(idx))):
                    out[i] = v
            return out[0] if nout == 1 else tuple(out)
        return _Joined(handles, done)
    return run
