"""Kernels of the fused collectives (graph/ops/fusion_ops.py): tensor fusion and compression.

FusedAllReduce packs its bucket of gradients into one flat buffer with one extra element,
1.0, this rank's *contribution flag*; after the sum that element is the number of ranks
that contributed, and the average divides by it (the backup-rank protocol sends 0.0 from
ranks that were late).  The collective is issued asynchronously: the executor keeps running
ready ops and waits only before the first op that needs the result.
"""
from __future__ import annotations

import sys
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
    total = sum(a.size for a in arrays)
    buf = np.empty(total + extra, dtype=dtype)
    o = 0
    for a in arrays:
        n = a.size
        buf[o:o + n] = a.reshape(-1)
        o += n
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
        # the send buffer is kept between steps (the result is a fresh array); a run that finds
        # it still in flight (another thread's run) packs into a new one
        state = {"buf": None, "busy": False, "recv": None}
        # without backup ranks every rank contributes: the average's 1/size is folded into
        # the packing copy instead of a pass over the result
        prescale = average and comm.size > 1 and not (ctx.config and ctx.config.get("contribution") is not None)

        def run(*arrays: np.ndarray) -> Any:
            total = sum(a.size for a in arrays) + 1
            buf = state["buf"]
            if buf is None or state["busy"] or buf.size != total:
                buf = np.empty(total, dtype=wide)
                state["buf"] = buf
            state["busy"] = True
            if prescale:
                _pack_scaled(buf, arrays, 1.0 / comm.size)
                buf[-1] = 1.0
            else:
                _pack_scaled(buf, arrays, None)
                buf[-1] = _contribution(ctx)
                if buf[-1] == 0.0:
                    buf[:-1] = 0

            # the last step's result is reusable once nothing holds it or a view of it
            # (getrefcount: the state's entry, the local, the call's argument)
            recv = state["recv"]
            if recv is not None and (recv.size != total or sys.getrefcount(recv) > 3):
                recv = None
            if recv is None:
                recv = state["recv"] = np.empty(total, dtype=wide)

            def done(summed: np.ndarray) -> Any:
                state["busy"] = False
                return finish(summed, arrays, prescale)
            return comm.allreduce_async(buf, "sum", name=key, out=recv).then(done)
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
        return _Group([hv, hi, hc.then(lambda c: c.reshape(()))])
    return run


class _Group:
    """Waits on several handles; the result is the tuple of their results."""

    __slots__ = ("hs",)

    def __init__(self, hs: list):
        self.hs = hs

    def wait(self) -> tuple:
        return tuple(h.wait() for h in self.hs)

    def done(self) -> bool:
        return all(h.done() for h in self.hs)

    def abandon(self) -> None:
        for h in self.hs:
            ab = getattr(h, "abandon", None)
            if ab is not None:
                ab()


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
        handles = []
        for dt, idx in groups.items():
            buf = pack([arrays[i] for i in idx], dt)
            handles.append((idx, comm.broadcast_async(buf, root=root, name=f"{key}/{dt.name}")))
        return _Gather(handles, arrays, nout)
    return run


class _Gather:
    __slots__ = ("handles", "arrays", "nout")

    def __init__(self, handles: list, arrays: Sequence[np.ndarray], nout: int):
        self.handles, self.arrays, self.nout = handles, arrays, nout

    def wait(self) -> Any:
        out: List[Any] = [None] * self.nout
        for idx, h in self.handles:
            buf = h.wait()
            views = unpack(buf, [self.arrays[i] for i in idx], [buf.dtype] * len(idx))
            for i, v in zip(idx, views):
                out[i] = v
        return out[0] if self.nout == 1 else tuple(out)

    def done(self) -> bool:
        return all(h.done() for _, h in self.handles)

    def abandon(self) -> None:
        for _, h in self.handles:
            ab = getattr(h, "abandon", None)
            if ab is not None:
                ab()
