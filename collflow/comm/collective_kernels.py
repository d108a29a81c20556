"""Kernels of the collective ops: asynchronous, each returning the communicator's handle.

The communicator is the session's (`Session(config={"comm": c})`), else the process
default (`cf.comm.get()`), fixed when the plan is compiled.  The executor starts these
kernels as early as their inputs allow and waits on the handle only right before the first
consumer, so other ops run while the collective is in flight.  `config["collective_timeout"]`
(seconds) overrides the communicator's timeout for the waits of this session.

In a world of one rank every collective is the identity (alltoall/allgather also report
their row counts): the kernels skip the communicator and alias the input, which kernels
never write.  On a GPU device the value goes through host memory (MPI works on host buffers).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..errors import InvalidArgumentError
from .base import CompletedHandle
from ..kernels.registry import KernelContext, register_kernel


def _communicator(ctx: KernelContext) -> Any:
    c = ctx.config.get("comm") if ctx.config else None
    if c is None:
        from . import get  # the package's default communicator (comm/__init__ imports this module)
        c = get()
    return c


class _Setup:
    """What every collective kernel binds at plan time."""

    __slots__ = ("comm", "key", "timeout", "to_host", "to_dev")

    def __init__(self, op: Any, ctx: KernelContext):
        self.comm = _communicator(ctx)
        self.key = op.attrs.get("key", op.name)
        t = ctx.config.get("collective_timeout") if ctx.config else None
        self.timeout = None if t is None else float(t)
        xp = ctx.xp
        if xp is np:
            self.to_host: Optional[Callable[[Any], Any]] = None
            self.to_dev: Optional[Callable[[Any], Any]] = None
        else:
            self.to_host, self.to_dev = xp.asnumpy, xp.asarray

    def host(self, x: Any) -> Any:
        return x if self.to_host is None else self.to_host(x)

    def finish(self, h: Any, fn: Optional[Callable[[Any], Any]] = None) -> Any:
        """Applies the session's timeout, the post-processing `fn` and the copy back to the device."""
        dev = self.to_dev
        if dev is not None:
            inner = fn
            fn = (lambda r: _map_arrays(dev, r)) if inner is None else (lambda r: _map_arrays(dev, inner(r)))
        if fn is not None:
            h = h.then(fn)
        if self.timeout is not None:
            h.timeout = self.timeout
        return h

    def check_root(self, root: int, op: Any) -> int:
        if not 0 <= root < self.comm.size:
            raise InvalidArgumentError(
                f"{op.type} op {op.name!r}: root {root} is not a rank of this world of size {self.comm.size}", op)
        return root


def _map_arrays(fn: Callable[[Any], Any], r: Any) -> Any:
    if isinstance(r, tuple):
        return tuple(fn(v) for v in r)
    return fn(r)


def _completed(value: Any) -> Any:
    return CompletedHandle(value)


def _counts(v: Any, n: int, what: str, op: Any) -> np.ndarray:
    c = np.asarray(v)
    if c.shape != (n,):
        raise InvalidArgumentError(f"{what} must hold one count per rank ({n}), got shape {c.shape}", op)
    return c


def _as_int32(c: np.ndarray) -> np.ndarray:
    return c.astype(np.int32)


@register_kernel("AllReduce", is_async=True)
def _all_reduce(op: Any, ctx: KernelContext) -> Callable:
    s = _Setup(op, ctx)
    if s.comm.size == 1:
        return _completed
    comm, red, key = s.comm, op.attrs["reduction"], s.key

    def all_reduce(x: Any) -> Any:
        return s.finish(comm.allreduce_async(s.host(x), red, key))
    return all_reduce


@register_kernel("Allgather", is_async=True)
def _allgather(op: Any, ctx: KernelContext) -> Callable:
    s = _Setup(op, ctx)
    comm, key = s.comm, s.key
    if comm.size == 1:
        xp = ctx.xp
        return lambda x: _completed((x.reshape(1) if x.ndim == 0 else x,
                                     xp.asarray(np.array([x.shape[0] if x.ndim else 1], dtype=np.int32))))

    def allgather(x: Any) -> Any:
        return s.finish(comm.allgatherv_async(s.host(x), None, key), lambda r: (r[0], _as_int32(r[1])))
    return allgather


@register_kernel("Broadcast", is_async=True)
def _broadcast(op: Any, ctx: KernelContext) -> Callable:
    s = _Setup(op, ctx)
    root = s.check_root(int(op.attrs["root"]), op)
    if s.comm.size == 1:
        return _completed
    comm, key = s.comm, s.key

    def broadcast(x: Any) -> Any:
        return s.finish(comm.broadcast_async(s.host(x), root, key))
    return broadcast


@register_kernel("AllToAll", is_async=True)
def _alltoall(op: Any, ctx: KernelContext) -> Callable:
    s = _Setup(op, ctx)
    comm, key, n = s.comm, s.key, s.comm.size
    xp = ctx.xp

    def send_counts(x: Any, splits: Any) -> np.ndarray:
        rows = x.shape[0]
        if splits is None:
            if rows % n:
                raise InvalidArgumentError(
                    f"alltoall without splits: the first dimension ({rows}) must be divisible by the "
                    f"number of ranks ({n})", op)
            return np.full(n, rows // n, dtype=np.int64)
        c = _counts(s.host(splits), n, "alltoall splits", op)
        if int(c.sum()) != rows or (c < 0).any():
            raise InvalidArgumentError(
                f"alltoall splits {c.tolist()} must be non-negative and add up to the {rows} rows of the input", op)
        return c

    if n == 1:
        def alltoall1(x: Any, splits: Any = None) -> Any:
            send_counts(x, splits)
            return _completed((x, xp.asarray(np.array([x.shape[0]], dtype=np.int32))))
        return alltoall1

    def alltoall(x: Any, splits: Any = None) -> Any:
        sc = send_counts(x, splits)
        return s.finish(comm.alltoallv_async(s.host(x), sc, None, key), lambda r: (r[0], _as_int32(r[1])))
    return alltoall


@register_kernel("ReduceScatter", is_async=True)
def _reduce_scatter(op: Any, ctx: KernelContext) -> Callable:
    s = _Setup(op, ctx)
    comm, key, n, red = s.comm, s.key, s.comm.size, op.attrs["reduction"]

    def counts(x: Any, sizes: Any) -> Optional[np.ndarray]:
        if sizes is None:
            if x.shape[0] % n:
                raise InvalidArgumentError(
                    f"reduce_scatter without sizes: the first dimension ({x.shape[0]}) must be divisible by "
                    f"the number of ranks ({n})", op)
            return None
        c = _counts(s.host(sizes), n, "reduce_scatter sizes", op)
        if int(c.sum()) != x.shape[0] or (c < 0).any():
            raise InvalidArgumentError(
                f"reduce_scatter sizes {c.tolist()} must be non-negative and add up to the {x.shape[0]} rows "
                "of the input", op)
        return c

    if n == 1:
        def reduce_scatter1(x: Any, sizes: Any = None) -> Any:
            counts(x, sizes)
            return _completed(x)
        return reduce_scatter1

    def reduce_scatter(x: Any, sizes: Any = None) -> Any:
        return s.finish(comm.reduce_scatter_async(s.host(x), counts(x, sizes), red, key))
    return reduce_scatter


@register_kernel("CollectiveReduce", is_async=True)
def _collective_reduce(op: Any, ctx: KernelContext) -> Callable:
    s = _Setup(op, ctx)
    root = s.check_root(int(op.attrs["root"]), op)
    if s.comm.size == 1:
        return _completed
    comm, key, red = s.comm, s.key, op.attrs["reduction"]

    def collective_reduce(x: Any) -> Any:
        hx = s.host(x)
        return s.finish(comm.reduce_async(hx, root, red, key),
                        lambda r: r if r is not None else np.zeros_like(hx))
    return collective_reduce
