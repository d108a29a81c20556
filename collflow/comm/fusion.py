"""Kernels of the fused collectives (graph/ops/fusion_ops.py): tensor fusion and compression.

FusedAllReduce packs its bucket of gradients into one flat buffer with one extra element,
1.0, this rank's *contribution flag*; after the sum that element is the number of ranks
that contributed, and the average divides by it (the backup-rank protocol sends 0.0 from
ranks that were late).  The collective is issued asynchronously: the executor keeps running
ready ops and waits only before the first op that needs the result.
"""
from __future__ import annotations

import sys
import time
from typing import Any, List, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.registry import register_kernel, KernelContext
from . import compression as _codec

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


def _pack(buf: np.ndarray, arrays: Sequence[np.ndarray], scale: Any) -> None:
    """Packs `arrays` into buf (times `scale` when given): per array for few large ones (the
    scaling rides on the copy), else one C-level concatenate (then one scaling pass): the
    per-array Python cost dominates for many small gradients."""
    n = sum(a.size for a in arrays)
    if len(arrays) <= 4 or n >= 65536 * len(arrays) or any(a.dtype != buf.dtype for a in arrays):
        _pack_scaled(buf, arrays, scale)
        return
    body = buf[:n]
    np.concatenate(arrays, axis=None, out=body)  # axis=None: each array flattened, in C
    if scale is not None:
        np.multiply(body, np.asarray(scale, dtype=buf.dtype), out=body)


def _allreduce(comm: Any, send: np.ndarray, key: str, recv: np.ndarray, wait_now: bool) -> Any:
    if wait_now and getattr(comm, "backend", "") == "mpi":
        return comm.allreduce_async(send, "sum", name=key, out=recv, wait_now=True)
    return comm.allreduce_async(send, "sum", name=key, out=recv)


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


# a gradient of at least this many elements (256 KiB of float32) is all-reduced on its own
DIRECT_ELEMENTS = 1 << 16


def _static_size(t: Any) -> int:
    return t.shape.num_elements() if t.shape.is_fully_defined() else 0


class _ReusedResult:
    """A receive buffer kept between steps, and the views of it handed out as results.

    It is reused once nobody else holds it or any of the views (reference counts), so a
    result the user fetched or an op still reads is never overwritten."""

    __slots__ = ("buf", "handed")

    def __init__(self) -> None:
        self.buf: Any = None
        self.handed: List[np.ndarray] = []

    def buffer(self, n: int, dtype: Any) -> np.ndarray:
        b = self.buf
        # getrefcount: the slot and the argument, plus one per handed-out view (their base);
        # a view: the list, the loop variable and the argument
        if b is not None and (b.size != n or b.dtype != dtype or sys.getrefcount(b) > 3 + len(self.handed)
                              or any(sys.getrefcount(v) > 3 for v in self.handed)):
            b = None
        if b is None:
            b = self.buf = np.empty(n, dtype=dtype)
            self.handed = []
        return b

    def views(self, summed: np.ndarray, like: Sequence[np.ndarray], dts: Sequence[Any]) -> List[Any]:
        if summed is not self.buf or any(np.dtype(dt) != summed.dtype for dt in dts):
            return unpack(summed, like, dts)  # fresh arrays: nothing to cache
        if not self.handed:  # views of the reused buffer are built once
            self.handed = unpack(summed, like, dts)
        return self.handed


class _Joined:
    """Several collectives as one handle: wait() returns fn([their results])."""

    __slots__ = ("hs", "fn")

    def __init__(self, hs: list, fn: Any):
        self.hs, self.fn = hs, fn

    def wait(self) -> Any:
        return self.fn([h.wait() for h in self.hs])

    def done(self) -> bool:
        return all(h.done() for h in self.hs)

    def abandon(self) -> None:
        for h in self.hs:
            ab = getattr(h, "abandon", None)
            if ab is not None:
                ab()


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
        scaled = average and size > 1 and not flagged  # the average rides on the packing copy
        # Gradients that travel on their own, read by MPI where they are (no packing copy): a
        # lone gradient, and large ones, when nothing is scaled on the way (the sums that
        # optimizers folding the 1/ranks take).  Packing pays for small gradients (one
        # collective's latency for all); for a large one it is only a copy.  Decided from the
        # static shapes, so every rank splits the bucket alike.
        direct = [] if (flagged or scaled) else [
            i for i, t in enumerate(op.inputs) if nout == 1 or _static_size(t) >= DIRECT_ELEMENTS]
        packed = [i for i in range(nout) if i not in direct]
        wide_p = np.result_type(*[dtypes[i] for i in packed]) if packed else wide
        pack_state = {"buf": None, "busy": False}
        results = [_ReusedResult() for _ in range(len(direct) + (1 if packed else 0))]
        names = ([key] if packed else []) + [key if not packed and len(direct) == 1 else f"{key}[{i}]"
                                             for i in direct]
        hints = {"wait_now": False}   # set by the executor: the plan waits for the result at once

        def run(*arrays: np.ndarray) -> Any:
            # deferred to the wait (and then MPI's blocking call when every rank agrees) when
            # the plan waits at once, or when the communicator says overlap does not pay here
            wait_now = hints["wait_now"] or not getattr(comm, "overlap", True)
            handles = []
            parts = [arrays[i] for i in packed]
            if packed:
                total = sum(a.size for a in parts) + (1 if flagged else 0)
                send = pack_state["buf"]
                # the send buffer is kept between steps; a run that finds it still in flight
                # (another thread's run of this plan) packs into a new one
                if send is None or pack_state["busy"] or send.size != total:
                    send = pack_state["buf"] = np.empty(total, dtype=wide_p)
                pack_state["busy"] = True
                tl = getattr(comm, "timeline", None)
                t0 = time.perf_counter() if tl is not None else 0.0
                _pack(send, parts, 1.0 / size if scaled else None)
                if tl is not None:
                    tl.span("PACK " + key, 3, t0, time.perf_counter(), "fusion",
                            {"tensors": len(parts), "bytes": int(send.nbytes)})
                if flagged:
                    send[-1] = _contribution(ctx)
                    if send[-1] == 0.0:
                        send[:-1] = 0
                handles.append(_allreduce(comm, send, names[0], results[0].buffer(total, wide_p), wait_now))
            base = len(handles)
            for j, i in enumerate(direct):
                a = arrays[i] if arrays[i].flags.c_contiguous else np.ascontiguousarray(arrays[i])
                handles.append(_allreduce(comm, a.reshape(-1), names[base + j],
                                          results[base + j].buffer(a.size, a.dtype), wait_now))

            def done(summed: List[np.ndarray]) -> Any:
                outs: List[Any] = [None] * nout
                if packed:
                    pack_state["busy"] = False
                    if flagged:
                        got = finish(summed[0], parts)
                        vals = [got] if len(parts) == 1 else list(got)
                    else:
                        vals = results[0].views(summed[0], parts, [dtypes[i] for i in packed])
                    for i, v in zip(packed, vals):
                        outs[i] = v
                for j, i in enumerate(direct):
                    outs[i] = results[base + j].views(summed[base + j], [arrays[i]], [dtypes[i]])[0]
                return outs[0] if nout == 1 else tuple(outs)
            return _Joined(handles, done)
        run.launch_hints = hints  # type: ignore[attr-defined]
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


@register_kernel("CommSize")
def _comm_size(op: Any, ctx: KernelContext) -> Any:
    comm = communicator_for(ctx)
    dt = op.attrs["dtype"].np

    def run() -> np.ndarray:
        return np.asarray(comm.size, dtype=dt)
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
