"""MPICommunicator's collective methods, as a part of their own: `MPICollectives`.  Each
builds its Signature, counts its bytes and hands its MPI calls (and its finisher) to the
core's launch; all-reduces go through the shared-memory queue where the communicator has
one.  It knows the core only through what it is given: its rank and size, the duplicated
communicators for first and second phases, and the calls launch, launch_shm (None without
shared memory), count (statistics), check_root and empty (receive buffers in the arena).
The numpy-to-MPI datatype and reduction mapping lives here too.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .base import (_as_array, _check_counts, _check_reduce, _equal_blocks, _need_rows, _rows, CollectiveHandle,
                   Signature)

__all__ = ["MPICollectives"]


def _has_float16(MPI: Any) -> bool:
    """Whether this MPI moves and reduces float16 itself (Open MPI does, as MPI_SHORT_FLOAT)."""
    try:
        MPI.Datatype.fromcode("e")
    except Exception:
        return False
    return True


class MPICollectives:
    """The collective methods of an MPICommunicator (see the module doc)."""

    def __init__(self, *, MPI: Any, rank: int, size: int, c1: Any, c2: Any, launch: Callable[..., CollectiveHandle],
                 launch_shm: Optional[Callable[..., CollectiveHandle]], count: Callable[[str, int, int], None],
                 check_root: Callable[[int, str], int], empty: Callable[[Any, Any], np.ndarray]):
        self._MPI, self._rank, self._size, self._c1, self._c2 = MPI, rank, size, c1, c2
        self._launch, self._launch_shm, self._count, self._check_root, self.empty = (
            launch, launch_shm, count, check_root, empty)
        self._f16_native = _has_float16(MPI)
        self._dtypes: Dict[str, Any] = {}
        self._ops = {"sum": MPI.SUM, "mean": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN, "prod": MPI.PROD}

    def _mpi_type(self, dt: np.dtype) -> Any:
        t = self._dtypes.get(dt.char)
        if t is None:
            t = self._dtypes[dt.char] = self._MPI.Datatype.fromcode(dt.char)
        return t

    def _mpi_op(self, op: str, dt: np.dtype) -> Any:
        if dt.kind == "b":
            return self._MPI.LOR if op == "max" else self._MPI.LAND
        return self._ops[op]

    # -- the collectives ---------------------------------------------------------------------
    def _reduce_wire(self, x: np.ndarray) -> Tuple[np.ndarray, Any]:
        """(the array MPI reduces, the dtype to turn the result back into, or None)."""
        if x.dtype == np.float16 and not self._f16_native:  # reduce in float32 where MPI lacks float16
            return x.astype(np.float32), np.float16
        return x, None

    def _move_wire(self, x: np.ndarray) -> Tuple[np.ndarray, Any]:
        """Moving data is copying bits: float16 travels as uint16 where MPI lacks float16."""
        if x.dtype == np.float16 and not self._f16_native:
            return x.view(np.uint16), np.float16
        return x, None

    def allreduce(self, x: Any, op: str = "sum", name: Optional[str] = None,
                  out: Optional[np.ndarray] = None) -> np.ndarray:
        return self.allreduce_async(x, op, name, out=out, wait_now=True).wait()

    def allreduce_async(self, x: Any, op: str = "sum", name: Optional[str] = None,
                        out: Optional[np.ndarray] = None, wait_now: bool = False) -> CollectiveHandle:
        """Nonblocking all-reduce.  `out`: a receive buffer to reuse.  `wait_now`: the caller
        waits for the result before anything else (no overlap to lose), so the collective may
        run as MPI's blocking call when every rank says the same."""
        x = _as_array(x, "allreduce")
        _check_reduce(op, x.dtype, "allreduce")
        self._count("allreduce", x.nbytes, x.nbytes)
        if self._launch_shm is not None:
            recv = out if (out is not None and out.shape == x.shape and out.dtype == x.dtype
                           and out.flags.c_contiguous and out.flags.writeable) else self.empty(x.shape, x.dtype)
            return self._launch_shm(Signature.of("allreduce", name, x, op), x, recv, op, wait_now)
        w, back = self._reduce_wire(x)
        mop = self._mpi_op(op, x.dtype)
        c1, n = self._c1, self._size
        if out is x and out.flags.writeable and back is None:  # in place (MPI_IN_PLACE)
            recv = x
            send: Any = self._MPI.IN_PLACE
        else:
            # a caller-kept receive buffer saves the page faults of a fresh one (several ms per 16 MiB)
            recv = out if (out is not None and back is None and out.shape == w.shape and out.dtype == w.dtype
                           and out.flags.c_contiguous and out.flags.writeable and out is not w) \
                else np.empty_like(w)
            send = w

        def finish() -> np.ndarray:
            if op == "mean":
                np.divide(recv, n, out=recv)
            return recv if back is None else recv.astype(back)
        return self._launch(Signature.of("allreduce", name, x, op), lambda: c1.Iallreduce(send, recv, op=mop),
                            finish, (w, recv),
                            blocking=(lambda: c1.Allreduce(send, recv, op=mop)) if wait_now else None)

    def allgather_async(self, x: Any, name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "allgather")
        self._count("allgather", x.nbytes, x.nbytes * (self._size - 1))
        w, back = self._move_wire(x)
        recv = np.empty((self._size * _rows(w),) + w.shape[1:], dtype=w.dtype)
        c1 = self._c1
        return self._launch(Signature.of("allgather", name, x), lambda: c1.Iallgather(w, recv),
                            lambda: recv if back is None else recv.view(back), (w, recv))

    def allgatherv_async(self, x: Any, counts: Optional[Sequence[int]] = None,
                         name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "allgatherv")
        rows = _rows(x)
        self._count("allgatherv", x.nbytes, 0)
        sig = Signature.of("allgatherv", name, x)
        w, back = self._move_wire(x)
        row_elems = int(np.prod(w.shape[1:], dtype=np.int64))
        mt = self._mpi_type(w.dtype)
        st: Dict[str, Any] = {}

        def post_v(comm: Any, cnt: np.ndarray) -> Any:
            recv = np.empty((int(cnt.sum()),) + w.shape[1:], dtype=w.dtype)
            ecnt = cnt * row_elems
            displs = np.concatenate([[0], np.cumsum(ecnt)[:-1]]).astype(np.int64)
            st["recv"], st["cnt"] = recv, cnt
            st["keep"] = (recv, ecnt, displs)
            return comm.Iallgatherv(w, [recv, (ecnt, displs), mt])

        def finish() -> Tuple[np.ndarray, np.ndarray]:
            recv = st["recv"]
            return (recv if back is None else recv.view(back)), st["cnt"].copy()

        if counts is not None:
            cnt = _check_counts(counts, self._size, "allgatherv")
            if int(cnt[self._rank]) != rows:
                raise InvalidArgumentError(
                    f"allgatherv: counts[{self._rank}] = {int(cnt[self._rank])}, but this rank has {rows} rows")
            c1 = self._c1
            return self._launch(sig, lambda: post_v(c1, cnt), finish, (w, st))
        mine = np.array([rows], dtype=np.int64)
        all_counts = np.empty(self._size, dtype=np.int64)
        c1, c2 = self._c1, self._c2
        return self._launch(sig, lambda: c1.Iallgather(mine, all_counts), finish, (w, mine, all_counts, st),
                            post2=lambda: post_v(c2, all_counts))

    def broadcast_async(self, x: Any, root: int = 0, name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "broadcast")
        root = self._check_root(root, "broadcast")
        me = self._rank == root
        self._count("broadcast", x.nbytes if me else 0, 0 if me else x.nbytes)
        w, back = self._move_wire(x)
        buf = w.copy() if me else np.empty_like(w)
        c1 = self._c1
        return self._launch(Signature.of("broadcast", name, x, root=root), lambda: c1.Ibcast(buf, root=root),
                            lambda: buf if back is None else buf.view(back), (buf,))

    def alltoall_async(self, x: Any, name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "alltoall")
        _need_rows(x, "alltoall")
        _equal_blocks(x.shape[0], self._size, "alltoall")
        other = x.nbytes - x.nbytes // self._size
        self._count("alltoall", other, other)
        w, back = self._move_wire(x)
        recv = np.empty_like(w)
        c1 = self._c1
        return self._launch(Signature.of("alltoall", name, x), lambda: c1.Ialltoall(w, recv),
                            lambda: recv if back is None else recv.view(back), (w, recv))

    def alltoallv_async(self, x: Any, send_counts: Sequence[int], recv_counts: Optional[Sequence[int]] = None,
                        name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "alltoallv")
        _need_rows(x, "alltoallv")
        sc = _check_counts(send_counts, self._size, "alltoallv send_counts", total=x.shape[0])
        row_elems = int(np.prod(x.shape[1:], dtype=np.int64))
        self._count("alltoallv", int(sc.sum() - sc[self._rank]) * row_elems * x.itemsize, 0)
        sig = Signature.of("alltoallv", name, x)
        w, back = self._move_wire(x)
        mt = self._mpi_type(w.dtype)
        es = sc * row_elems
        sd = np.concatenate([[0], np.cumsum(es)[:-1]]).astype(np.int64)
        st: Dict[str, Any] = {}

        def post_v(comm: Any, rc: np.ndarray) -> Any:
            recv = np.empty((int(rc.sum()),) + w.shape[1:], dtype=w.dtype)
            er = rc * row_elems
            rd = np.concatenate([[0], np.cumsum(er)[:-1]]).astype(np.int64)
            st["recv"], st["rc"] = recv, rc
            st["keep"] = (recv, er, rd)
            return comm.Ialltoallv([w, (es, sd), mt], [recv, (er, rd), mt])

        def finish() -> Tuple[np.ndarray, np.ndarray]:
            recv = st["recv"]
            return (recv if back is None else recv.view(back)), st["rc"].copy()

        if recv_counts is not None:
            rc = _check_counts(recv_counts, self._size, "alltoallv recv_counts")
            c1 = self._c1
            return self._launch(sig, lambda: post_v(c1, rc), finish, (w, es, sd, st))
        rc_buf = np.empty(self._size, dtype=np.int64)
        c1, c2 = self._c1, self._c2
        return self._launch(sig, lambda: c1.Ialltoall(sc, rc_buf), finish, (w, sc, es, sd, rc_buf, st),
                            post2=lambda: post_v(c2, rc_buf))

    def reduce_scatter_async(self, x: Any, counts: Optional[Sequence[int]] = None, op: str = "sum",
                             name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "reduce_scatter")
        _check_reduce(op, x.dtype, "reduce_scatter")
        _need_rows(x, "reduce_scatter")
        rows = x.shape[0]
        cnt = (_equal_blocks(rows, self._size, "reduce_scatter") if counts is None
               else _check_counts(counts, self._size, "reduce_scatter counts", total=rows))
        self._count("reduce_scatter", x.nbytes, 0)
        w, back = self._reduce_wire(x)
        row_elems = int(np.prod(w.shape[1:], dtype=np.int64))
        recv = np.empty((int(cnt[self._rank]),) + w.shape[1:], dtype=w.dtype)
        ecnt = (cnt * row_elems).tolist()
        mop = self._mpi_op(op, x.dtype)
        c1, n = self._c1, self._size

        def finish() -> np.ndarray:
            if op == "mean":
                np.divide(recv, n, out=recv)
            return recv if back is None else recv.astype(back)
        return self._launch(Signature.of("reduce_scatter", name, x, op),
                            lambda: c1.Ireduce_scatter(w, recv, ecnt, op=mop), finish, (w, recv))

    def reduce_async(self, x: Any, root: int = 0, op: str = "sum", name: Optional[str] = None) -> CollectiveHandle:
        x = _as_array(x, "reduce")
        _check_reduce(op, x.dtype, "reduce")
        root = self._check_root(root, "reduce")
        me = self._rank == root
        self._count("reduce", x.nbytes, x.nbytes if me else 0)
        w, back = self._reduce_wire(x)
        recv = np.empty_like(w) if me else None
        mop = self._mpi_op(op, x.dtype)
        c1, n = self._c1, self._size

        def finish() -> Optional[np.ndarray]:
            if recv is None:
                return None
            if op == "mean":
                np.divide(recv, n, out=recv)
            return recv if back is None else recv.astype(back)
        return self._launch(Signature.of("reduce", name, x, op, root),
                            lambda: c1.Ireduce(w, recv, op=mop, root=root), finish, (w, recv))

    def barrier_async(self, name: Optional[str] = None) -> CollectiveHandle:
        self._count("barrier", 0, 0)
        c1 = self._c1
        return self._launch(Signature.of("barrier", name, None), lambda: c1.Ibarrier(), lambda: None, ())
