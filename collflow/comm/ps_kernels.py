"""Asynchronous kernels of the sharded parameter server's ops (graph/ops/ps_ops.py).

Each kernel does its local NumPy work, starts one collective on the session's communicator
(`communicator_for(ctx)`) and returns the handle; the rest of its work (checking headers,
restoring the order of rows) runs in the handle's `wait`, right before the first consumer.
Routing and sums happen on the host (the communicator works on host buffers); on a GPU the
shard's rows are gathered on the device and copied once each way.

Collective keys: "<key>/ids" (requests), "<key>/rows" (replies), "<key>/push" (gradients),
"<key>/layout" (the initializer's check).  PSGatherN and PSPushN (several tables at the same
route) put the tables' rows side by side, flattened, so one exchange carries them all.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.registry import KernelContext, register_kernel
from ..runtime.placement import register_host_only
from . import ps as _ps
from .fusion import _contribution, communicator_for

__all__: list = []

# routing and pushes are host work around MPI; PSGather runs where the shard lives (it gathers
# the served rows there and copies only those to the host)
register_host_only("PSRoute", "PSPush", "PSPushN", "PSCheckLayout")


class _Setup:
    """What every PS kernel binds at plan time."""

    __slots__ = ("comm", "layout", "layouts", "key", "timeout", "xp", "to_host", "to_dev", "op")

    def __init__(self, op: Any, ctx: KernelContext):
        self.op = op
        self.comm = communicator_for(ctx)
        self.layouts = tuple(op.attrs.get("layouts") or (op.attrs["layout"],))
        self.layout = self.layouts[0]
        self.key = op.attrs["key"]
        t = ctx.config.get("collective_timeout") if ctx.config else None
        self.timeout = None if t is None else float(t)
        self.xp = ctx.xp
        if ctx.xp is np:
            self.to_host: Optional[Callable[[Any], Any]] = None
            self.to_dev: Optional[Callable[[Any], Any]] = None
        else:  # pragma: no cover - needs a GPU
            self.to_host, self.to_dev = ctx.xp.asnumpy, ctx.xp.asarray

    def host(self, x: Any) -> np.ndarray:
        return x if self.to_host is None else self.to_host(x)

    def dev(self, x: Any) -> Any:
        return x if self.to_dev is None else self.to_dev(x)

    def then(self, h: Any, fn: Callable[[Any], Any]) -> Any:
        h = h.then(fn)
        if self.timeout is not None:
            h.timeout = self.timeout
        return h


def _routable(s: _Setup) -> bool:
    """Whether this rank's layout fits its communicator (else only headers travel, and fail)."""
    lay, c = s.layout, s.comm
    return lay.num_shards == c.size and lay.shard_index == c.rank


def _route_send(lay: Any, flat: np.ndarray, size: int, fits: bool) -> tuple:
    """The requests of a route: (send buffer [per owner: header, local rows asked], counts per
    owner with the header, request_counts, inverse).  Bad ids, or a layout that does not fit
    the communicator, send only headers: every rank learns of the problem."""
    H = _ps.ROUTE_HEADER
    bad_count, bad_id = _ps.first_bad_id(flat, lay.vocab)
    if bad_count or not fits:
        rows = np.empty(0, dtype=np.int64)
        counts = np.zeros(size, dtype=np.int64)
        inverse = np.zeros(flat.shape[0], dtype=np.int64)
    else:
        rows, counts, inverse = _ps.plan_requests(lay, flat)
    header = _ps.route_header(lay, bad_count, bad_id)
    send = np.empty(rows.shape[0] + size * H, dtype=np.int64)
    o = r = 0
    for k in range(size):
        send[o:o + H] = header
        o += H
        c = int(counts[k])
        send[o:o + c] = rows[r:r + c]
        o += c
        r += c
    return send, counts + H, counts, inverse


def _route_received(lay: Any, names: str, rank: int, blocks: list) -> tuple:
    """The owner's side of a route: (served rows, served_counts) from each rank's block
    [header, rows]; raises on every rank alike when any header reports a problem."""
    H = _ps.ROUTE_HEADER
    _ps.check_route_headers(lay, names, [b[:H] for b in blocks], rank)
    served_counts = np.array([b.shape[0] - H for b in blocks], dtype=np.int64)
    served = np.concatenate([b[H:] for b in blocks]) if blocks else np.empty(0, dtype=np.int64)
    return served, served_counts


@register_kernel("PSRoute", is_async=True)
def _route(op: Any, ctx: KernelContext) -> Any:
    s = _Setup(op, ctx)
    lay, comm = s.layout, s.comm
    size = comm.size
    names = ", ".join(repr(n) for n in op.attrs.get("names", (lay.name,)))
    fits = _routable(s)
    key = s.key + "/ids"

    def run(ids: Any) -> Any:
        send, send_counts, counts, inverse = _route_send(lay, s.host(ids).reshape(-1), size, fits)

        def finish(res: Any) -> tuple:
            recv, rc = res
            off = _ps.block_offsets(rc)
            served, served_counts = _route_received(lay, names, comm.rank,
                                                    [recv[off[j]:off[j] + rc[j]] for j in range(size)])
            return counts, served, served_counts, inverse
        return s.then(comm.alltoallv_async(send, send_counts, name=key), finish)
    return run


def _check_served(s: _Setup, served: Any, shard: Any, lay: Any) -> None:
    if served.shape[0] and int(served.max()) >= shard.shape[0]:
        raise InvalidArgumentError(
            f"sharded variable {lay.name!r}: a rank asked for row {int(served.max())} of this rank's shard, "
            f"which has {shard.shape[0]} rows (mismatched shard layouts?)")


@register_kernel("PSGather", is_async=True)
def _gather(op: Any, ctx: KernelContext) -> Any:
    s = _Setup(op, ctx)
    lay, comm = s.layout, s.comm
    row_shape = tuple(lay.row_shape)
    key = s.key + "/rows"

    def run(shard: Any, served: Any, served_counts: Any, request_counts: Any, inverse: Any, ids: Any) -> Any:
        served_counts, request_counts, inverse = s.host(served_counts), s.host(request_counts), s.host(inverse)
        _check_served(s, served, shard, lay)
        rows = s.host(s.xp.take(shard, s.dev(served), axis=0))
        out_shape = tuple(ids.shape) + row_shape

        def finish(res: Any) -> Any:
            vals = res[0]
            return s.dev(np.take(vals, inverse, axis=0).reshape(out_shape))
        return s.then(comm.alltoallv_async(rows, served_counts, request_counts, name=key), finish)
    return run


def _widths(layouts: tuple) -> list:
    return [int(np.prod(lay.row_shape, dtype=np.int64)) for lay in layouts]


@register_kernel("PSGatherN", is_async=True)
def _gather_n(op: Any, ctx: KernelContext) -> Any:
    s = _Setup(op, ctx)
    lays, comm = s.layouts, s.comm
    k = len(lays)
    widths = _widths(lays)
    edges = np.cumsum([0] + widths)
    key = s.key + "/rows"

    def run(*args: Any) -> Any:
        shards = args[:k]
        served, served_counts, request_counts, inverse, ids = args[k:]
        served_counts, request_counts, inverse = s.host(served_counts), s.host(request_counts), s.host(inverse)
        dev_served = s.dev(served)
        rows = np.empty((served.shape[0], int(edges[-1])), dtype=np.dtype(lays[0].dtype))
        for i, (shard, lay) in enumerate(zip(shards, lays)):
            _check_served(s, served, shard, lay)
            rows[:, edges[i]:edges[i + 1]] = s.host(s.xp.take(shard, dev_served, axis=0)).reshape(-1, widths[i])
        lead = tuple(ids.shape)

        def finish(res: Any) -> Any:
            vals = np.take(res[0], inverse, axis=0)
            out = tuple(s.dev(np.ascontiguousarray(vals[:, edges[i]:edges[i + 1]]).reshape(
                lead + tuple(lays[i].row_shape))) for i in range(k))
            return out if k > 1 else out[0]  # an op of one output returns its value, not a tuple
        return s.then(comm.alltoallv_async(rows, served_counts, request_counts, name=key), finish)
    return run


def _push_send(ctx: KernelContext, size: int, g: np.ndarray, inverse: Any, request_counts: Any) -> np.ndarray:
    """The push's send buffer: the gradient rows `g` [ids, ...] summed per unique id, one flag
    row in front of each owner's block (its first element tells the owner whether this rank
    contributed: late backup ranks send 0 and zero rows, so counts stay as routed)."""
    row_shape = tuple(g.shape[1:])
    n_uniq = int(request_counts.sum())
    summed = _ps.segment_sum(g, inverse, n_uniq)
    flag = _contribution(ctx)
    send = np.empty((n_uniq + size,) + row_shape, dtype=g.dtype)
    o = r = 0
    for k in range(size):
        if row_shape:
            send[o] = 0
            send[o].flat[0] = flag
        else:
            send[o] = flag
        o += 1
        c = int(request_counts[k])
        if flag == 0.0:
            send[o:o + c] = 0
        else:
            send[o:o + c] = summed[r:r + c]
        o += c
        r += c
    return send


def _push_received(recv: np.ndarray, size: int, served: Any, served_counts: Any,
                   finish_rows: Callable[[np.ndarray, np.ndarray, Any], Any]) -> Any:
    """The owner's side of a push: the rows every rank sent (flag rows first in each block),
    summed per served row, with their rows and the number of contributing ranks."""
    off = _ps.block_offsets(served_counts + 1)[:-1]
    count = np.asarray(recv[off].reshape(size, -1)[:, 0].sum(), dtype=recv.dtype).reshape(())
    keep = np.ones(recv.shape[0], dtype=bool)
    keep[off] = False
    rows = recv[keep]
    # several ranks may push the same row: the owner sums them here, once, so the optimizer's
    # sparse update gets each row once
    uniq, inv = np.unique(served, return_inverse=True)
    if uniq.shape[0] == served.shape[0]:
        merged = rows[np.argsort(inv.reshape(-1), kind="stable")]
    else:
        merged = _ps.segment_sum(rows, inv.reshape(-1), uniq.shape[0])
    return finish_rows(merged, uniq, count)


def _push_exchange(s: _Setup, ctx: KernelContext, g: np.ndarray, inverse: Any, request_counts: Any, served: Any,
                   served_counts: Any, key: str, finish_rows: Callable[[np.ndarray, np.ndarray, Any], Any]) -> Any:
    """Sums the gradient rows `g` [ids, ...] per unique id, sends them to their owners in one
    Alltoallv, and hands the owner's rows summed per served row (and their rows, and the
    number of contributing ranks) to `finish_rows`."""
    size = s.comm.size
    send = _push_send(ctx, size, g, inverse, request_counts)
    return s.then(s.comm.alltoallv_async(send, request_counts + 1, served_counts + 1, name=key),
                  lambda res: _push_received(res[0], size, served, served_counts, finish_rows))


@register_kernel("PSPush", is_async=True)
def _push(op: Any, ctx: KernelContext) -> Any:
    s = _Setup(op, ctx)
    row_shape = tuple(s.layout.row_shape)

    def run(grad: Any, inverse: Any, request_counts: Any, served: Any, served_counts: Any) -> Any:
        # host-only op: every input arrives on the host
        return _push_exchange(s, ctx, grad.reshape((-1,) + row_shape), inverse, request_counts, served,
                              served_counts, s.key, lambda rows, uniq, count: (rows, uniq, count))
    return run


@register_kernel("PSPushN", is_async=True)
def _push_n(op: Any, ctx: KernelContext) -> Any:
    s = _Setup(op, ctx)
    lays = s.layouts
    k = len(lays)
    widths = _widths(lays)
    edges = np.cumsum([0] + widths)
    dtype = op.outputs[0].dtype.np

    def split(rows: np.ndarray, uniq: np.ndarray, count: Any) -> tuple:
        return tuple(np.ascontiguousarray(rows[:, edges[i]:edges[i + 1]]).reshape(
            (-1,) + tuple(lays[i].row_shape)) for i in range(k)) + (uniq, count)

    with_next = bool(op.attrs.get("with_next"))
    names = ", ".join(repr(n) for n in op.attrs.get("names", tuple(lay.name for lay in lays)))
    names += " (routing the next step's ids, fed as next_ids)"
    fits = _routable(s)

    def run(*args: Any) -> Any:
        grads = args[:k]
        inverse, request_counts, served, served_counts = args[k:k + 4]
        m = inverse.shape[0]
        g = np.empty((m, int(edges[-1])), dtype=dtype)
        for i in range(k):
            g[:, edges[i]:edges[i + 1]] = grads[i].reshape(m, widths[i])
        if not with_next:
            return _push_exchange(s, ctx, g, inverse, request_counts, served, served_counts, s.key, split)
        return _push_and_route(s, ctx, g, inverse, request_counts, served, served_counts,
                               s.host(args[k + 4]).reshape(-1), names, fits, split)
    return run


def _push_and_route(s: _Setup, ctx: KernelContext, g: np.ndarray, inverse: Any, request_counts: Any, served: Any,
                    served_counts: Any, next_ids: np.ndarray, names: str, fits: bool,
                    finish_rows: Callable[[np.ndarray, np.ndarray, Any], Any]) -> Any:
    """The push of this step's gradient rows and the route of the next batch's ids in ONE
    Alltoallv (both go from requesters to owners): per owner, the push block (flag row and
    rows, as _push_send) then the route block (header and rows asked, as _route_send), as
    bytes.  Returns the push's results followed by the next route (request_counts, served rows,
    served_counts, inverse), as PSRoute would give them for next_ids."""
    comm, lay, size = s.comm, s.layout, s.comm.size
    psend = _push_send(ctx, size, g, inverse, request_counts)
    rsend, rcounts, next_counts, next_inverse = _route_send(lay, next_ids, size, fits)
    row_bytes = int(np.prod(g.shape[1:], dtype=np.int64)) * g.dtype.itemsize
    pbytes = (np.asarray(request_counts, dtype=np.int64) + 1) * row_bytes
    rbytes = rcounts * 8
    send = np.empty(int(pbytes.sum() + rbytes.sum()), dtype=np.uint8)
    praw, rraw = psend.reshape(-1).view(np.uint8), rsend.view(np.uint8)
    o = po = ro = 0
    for k in range(size):
        send[o:o + pbytes[k]] = praw[po:po + pbytes[k]]
        o, po = o + pbytes[k], po + pbytes[k]
        send[o:o + rbytes[k]] = rraw[ro:ro + rbytes[k]]
        o, ro = o + rbytes[k], ro + rbytes[k]

    def finish(res: Any) -> tuple:
        recv, rc = res
        off = _ps.block_offsets(rc)
        pushed, routed = [], []
        for j in range(size):
            block = recv[off[j]:off[j] + rc[j]]
            cut = int(served_counts[j] + 1) * row_bytes
            # views of the bytes (maybe unaligned; NumPy handles that): the concatenation
            # below is the one copy
            pushed.append(block[:cut].view(g.dtype))
            routed.append(block[cut:].view(np.int64))
        next_served, next_served_counts = _route_received(lay, names, comm.rank, routed)
        rows = np.concatenate(pushed).reshape((-1,) + tuple(g.shape[1:]))
        out = _push_received(rows, size, served, served_counts, finish_rows)
        return tuple(out) + (next_counts, next_served, next_served_counts, next_inverse)
    return s.then(comm.alltoallv_async(send, pbytes + rbytes, name=s.key + "+route"), finish)


@register_kernel("PSCheckLayout", is_async=True)
def _check_layout(op: Any, ctx: KernelContext) -> Any:
    s = _Setup(op, ctx)
    lay, comm = s.layout, s.comm

    def run() -> Any:
        def finish(descs: np.ndarray) -> None:
            _ps.check_descriptors(lay, descs, comm.size)
            return None
        return s.then(comm.allgather_async(lay.descriptor(), name=s.key + "/layout"), finish)
    return run
