"""NCCL communicator for GPU tensors (CuPy's `cupy.cuda.nccl`), behind the Communicator interface.

Created lazily, after the rank's GPU is set (collflow.kernels.gpu.setup): rank 0 makes a NCCL
unique id and broadcasts it over the MPI communicator, then every rank joins.  Collectives run
on a dedicated stream that first waits (via a CUDA event) for the compute stream; completion is
another event the consumer's stream waits on, so no host synchronisation happens.  A fused
bucket's all-reduces are issued in one NCCL group.

NCCL cannot put two ranks on one GPU: when a node runs more ranks than it has GPUs,
`nccl_for` returns None and logs that GPU tensors go through MPI via pinned host staging.
"""
from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ..errors import InvalidArgumentError, UnavailableError
from .base import CollectiveHandle, Communicator

__all__ = ["NCCLCommunicator", "nccl_for"]

_CACHE: Dict[int, Optional["NCCLCommunicator"]] = {}


class _NCCLHandle(CollectiveHandle):
    __slots__ = ("value", "event", "cp", "timeout")

    def __init__(self, value: Any, event: Any, cp: Any):
        self.value, self.event, self.cp, self.timeout = value, event, cp, None

    def wait(self, timeout: Optional[float] = None) -> Any:
        # the consumer's stream waits on the collective's event: the host does not block
        self.cp.cuda.get_current_stream().wait_event(self.event)
        return self.value

    def done(self) -> bool:
        return bool(self.event.done)


def _shared_unique_id(nccl: Any, mpi_comm: Communicator) -> Any:
    """Rank 0's NCCL unique id on every rank, in the form this CuPy's NcclCommunicator takes
    (a tuple of 128 ints in older CuPy, 128 bytes in newer): byte 0 of the broadcast says which."""
    buf = np.zeros(129, dtype=np.int8)
    if mpi_comm.rank == 0:
        uid = nccl.get_unique_id()
        as_bytes = isinstance(uid, (bytes, bytearray))
        buf[0] = int(as_bytes)
        buf[1:] = np.frombuffer(bytes(uid), dtype=np.int8) if as_bytes else np.asarray(uid, dtype=np.int64)
    buf = mpi_comm.broadcast(buf, root=0, name="nccl/unique_id")
    return buf[1:].tobytes() if buf[0] == 1 else tuple(int(v) for v in buf[1:])


class NCCLCommunicator(Communicator):
    """All-reduce, broadcast and allgather of CuPy arrays over NCCL (same ranks as `mpi_comm`)."""

    backend = "nccl"

    def __init__(self, mpi_comm: Communicator, timeout: Optional[float] = None):
        super().__init__(timeout)
        import cupy as cp
        from cupy.cuda import nccl
        self.cp, self.nccl = cp, nccl
        self.mpi = mpi_comm
        self.comm = nccl.NcclCommunicator(mpi_comm.size, _shared_unique_id(nccl, mpi_comm), mpi_comm.rank)
        self.stream = cp.cuda.Stream(non_blocking=True)
        self._types = {np.dtype(np.float16): nccl.NCCL_FLOAT16, np.dtype(np.float32): nccl.NCCL_FLOAT32,
                       np.dtype(np.float64): nccl.NCCL_FLOAT64, np.dtype(np.int32): nccl.NCCL_INT32,
                       np.dtype(np.int64): nccl.NCCL_INT64}
        self._ops = {"sum": nccl.NCCL_SUM, "mean": nccl.NCCL_SUM, "max": nccl.NCCL_MAX, "min": nccl.NCCL_MIN,
                     "prod": nccl.NCCL_PROD}

    @property
    def rank(self) -> int:
        return self.mpi.rank

    @property
    def size(self) -> int:
        return self.mpi.size

    def _dtype(self, x: Any) -> Any:
        t = self._types.get(np.dtype(x.dtype))
        if t is None:
            raise InvalidArgumentError(f"NCCL does not reduce {x.dtype}; supported: {sorted(map(str, self._types))}")
        return t

    def _begin(self) -> None:
        # the collective must see everything the compute stream wrote before it
        self.stream.wait_event(self.cp.cuda.get_current_stream().record())

    def allreduce_async(self, x: Any, op: str = "sum", name: Optional[str] = None,
                        out: Any = None) -> CollectiveHandle:
        return self.allreduce_group_async([x], op, name, [out] if out is not None else None)

    def allreduce_group_async(self, xs: Sequence[Any], op: str = "sum", name: Optional[str] = None,
                              outs: Optional[Sequence[Any]] = None) -> CollectiveHandle:
        """All-reduces several arrays as one NCCL group; the result is the list of sums."""
        cp = self.cp
        if op not in self._ops:
            raise InvalidArgumentError(f"unknown reduction {op!r}")
        self._begin()
        res = []
        with self.stream:
            self.nccl.groupStart()
            try:
                for k, x in enumerate(xs):
                    x = cp.ascontiguousarray(x).reshape(x.shape)  # keeps 0-d
                    o = outs[k] if outs is not None and outs[k] is not None else cp.empty_like(x)
                    self.comm.allReduce(x.data.ptr, o.data.ptr, x.size, self._dtype(x), self._ops[op],
                                        self.stream.ptr)
                    res.append(o)
            finally:
                self.nccl.groupEnd()
            if op == "mean":
                for o in res:
                    o /= self.size
            ev = self.stream.record()
        self._count("allreduce", sum(int(x.nbytes) for x in xs), sum(int(x.nbytes) for x in xs))
        return _NCCLHandle(res[0] if len(res) == 1 and outs is None and len(xs) == 1 else res, ev, cp)

    def broadcast_async(self, x: Any, root: int = 0, name: Optional[str] = None) -> CollectiveHandle:
        cp = self.cp
        self._begin()
        with self.stream:
            buf = cp.array(x, copy=True)
            self.comm.bcast(buf.data.ptr, buf.size, self._dtype(buf), root, self.stream.ptr)
            ev = self.stream.record()
        return _NCCLHandle(buf, ev, cp)

    def allgather_async(self, x: Any, name: Optional[str] = None) -> CollectiveHandle:
        cp = self.cp
        x = cp.ascontiguousarray(x)
        self._begin()
        with self.stream:
            out = cp.empty((self.size * x.shape[0],) + tuple(x.shape[1:]), dtype=x.dtype)
            self.comm.allGather(x.data.ptr, out.data.ptr, x.size, self._dtype(x), self.stream.ptr)
            ev = self.stream.record()
        return _NCCLHandle(out, ev, cp)

    def barrier_async(self, name: Optional[str] = None) -> CollectiveHandle:
        return self.mpi.barrier_async(name)

    def close(self) -> None:
        try:
            self.comm.destroy()
        except Exception:
            pass


def nccl_for(comm: Communicator) -> Optional[NCCLCommunicator]:
    """The NCCL communicator over the ranks of `comm` (made once), or None when NCCL cannot be
    used: no CuPy/NCCL, a world of one, or several ranks sharing a GPU on one node."""
    key = id(comm)
    if key in _CACHE:
        return _CACHE[key]
    nc: Optional[NCCLCommunicator] = None
    try:
        import cupy as cp
        from cupy.cuda import nccl  # noqa: F401
        gpus = cp.cuda.runtime.getDeviceCount()
    except Exception:
        gpus = 0
    if comm.size > 1 and gpus > 0:
        if comm.local_size > gpus:
            if comm.rank == 0:
                print(f"[rank {comm.rank}] collflow: {comm.local_size} ranks share {gpus} GPU(s) on a node; NCCL "
                      "cannot put two ranks on one GPU, so GPU tensors go through MPI via pinned host staging",
                      file=sys.stderr, flush=True)
        else:
            try:
                nc = NCCLCommunicator(comm)
            except Exception as e:  # pragma: no cover - depends on the machine
                raise UnavailableError(f"NCCL initialisation failed: {e}") from e
    _CACHE[key] = nc
    return nc
