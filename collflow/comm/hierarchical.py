"""A two-level communicator for ranks on several hosts (the scheme of ChainerMN and NCCL).

An all-reduce runs in three stages:

1. within each host, over that host's ranks (`node`: shared memory where the host allows,
   else MPI): every rank of the host gets the host's sum;
2. between hosts, over one leader per host (`leaders`, the host's first rank; MPI): each
   leader turns its host's sum into the job's;
3. within each host, the leader broadcasts the result (`node_bcast`).

Each host sends its gradient across the network once (its leader's), instead of every rank
sending its own: with l ranks per host the bytes that cross a host's network link fall by
about l times against a flat ring (benchmarks/bench_hierarchical.py; the cost model is
collflow.profile.Hierarchical).  Every rank ends with the leader's bytes, so the result is
bit-identical on every rank of a host; leaders get MPI's all-reduce result.  Summation order
differs from the flat path's (host sums first), so results agree with it to rounding.

Every other collective (allgather, broadcast, all-to-all, ...) runs on the flat world.

Ordering.  Ranks must issue collectives on each communicator in one order.  Stage 1 (and a
non-leader's broadcast receive) starts when the all-reduce is launched; stages 2 and 3 of a
leader start when the all-reduce is waited for, and a wait first completes every all-reduce
launched before it, so leaders issue stage 2 in launch order on every host.

Hosts come from MPI (ranks that share a processor name), or, to try the scheme on one
machine, from $COLLFLOW_PRETEND_HOSTS: a number H (the ranks split into H hosts of
consecutive ranks, as `mpirun --map-by slot` places them) or one label per rank
("0,0,1,1").  `cf.comm.init()` picks this communicator when the ranks span several hosts
(or pretend to); $COLLFLOW_HIERARCHICAL=0 keeps the flat one.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from .base import CollectiveHandle, Communicator, _as_array, _check_reduce, _new_stats
from .mpi import MPICommunicator, import_mpi

__all__ = ["HierarchicalCommunicator", "host_assignment", "wants_hierarchical"]

_PRETEND = "COLLFLOW_PRETEND_HOSTS"


def host_assignment(base: Any, pretend: Optional[str] = None) -> List[int]:
    """The host index (0, 1, ... in order of first appearance) of every rank of `base`;
    collective (an allgather of processor names) unless hosts are pretended."""
    size = base.Get_size()
    spec = os.environ.get(_PRETEND, "") if pretend is None else pretend
    spec = spec.strip()
    if spec:
        if "," in spec:
            labels = [s.strip() for s in spec.split(",")]
            if len(labels) != size:
                raise InvalidArgumentError(
                    f"${_PRETEND}={spec!r} gives {len(labels)} host labels for {size} ranks (one per rank)")
        else:
            try:
                h = int(spec)
            except ValueError:
                raise InvalidArgumentError(
                    f"${_PRETEND} must be a number of hosts or one host label per rank, got {spec!r}") from None
            if h < 1 or size % h:
                raise InvalidArgumentError(
                    f"${_PRETEND}={h}: {size} ranks do not split into {h} hosts of equal size")
            labels = [str(r // (size // h)) for r in range(size)]
    else:
        MPI = import_mpi()
        labels = list(base.allgather(MPI.Get_processor_name()))
    first: Dict[str, int] = {}
    return [first.setdefault(lab, len(first)) for lab in labels]


def wants_hierarchical(base: Any) -> bool:
    """Whether cf.comm.init() should build a HierarchicalCommunicator over `base`: its ranks
    span several hosts (or pretend to) and $COLLFLOW_HIERARCHICAL is not 0.  Collective."""
    if base.Get_size() < 2:
        return False
    if hasattr(base, "allgather"):  # a real communicator: settle rank 0's settings first
        from . import settings as _settings
        _settings.negotiate(base)
    if os.environ.get("COLLFLOW_HIERARCHICAL", "1") == "0":
        return False
    hosts = host_assignment(base)
    n_hosts = max(hosts) + 1
    # one host: the flat communicator is the first stage alone; a rank per host: the second
    return 1 < n_hosts < len(hosts)


class HierarchicalCommunicator(Communicator):
    """All-reduces within hosts, then between one leader per host, then a broadcast within
    each host (see the module doc); other collectives on the flat world.

    comm: an mpi4py intracommunicator (default MPI.COMM_WORLD); creating it is collective.
    hosts: "H" or per-rank labels, as $COLLFLOW_PRETEND_HOSTS (default: from MPI).
    """

    backend = "mpi"

    def __init__(self, comm: Any = None, timeout: Optional[float] = None, track_arrivals: Optional[bool] = None,
                 progress_thread: bool = True, hosts: Optional[str] = None):
        MPI = import_mpi()
        base = MPI.COMM_WORLD if comm is None else comm
        assignment = host_assignment(base, hosts)
        self._own_stats: Dict[str, int] = _new_stats()
        super().__init__(timeout)
        rank = base.Get_rank()
        self.host = assignment[rank]
        self.num_hosts = max(assignment) + 1
        self.hosts = assignment
        kw = dict(timeout=timeout, track_arrivals=track_arrivals, progress_thread=progress_thread)
        self.mpi_comm = base
        # every rank creates the same communicators in the same order (each creation is collective)
        self.world = MPICommunicator(base, shm=False, **kw)
        node_c = base.Split(color=self.host, key=rank)
        self.node = MPICommunicator(node_c, **kw)                       # shared memory where it can
        self.node_bcast = MPICommunicator(node_c.Dup(), shm=False, **kw)
        self.is_leader = node_c.Get_rank() == 0
        lead_c = base.Split(color=0 if self.is_leader else MPI.UNDEFINED, key=rank)
        self.leaders: Optional[MPICommunicator] = (MPICommunicator(lead_c, shm=False, **kw)
                                                   if self.is_leader else None)
        self._chain: List[_HierHandle] = []   # launched all-reduces whose stages are not all done
        self._chain_lock = threading.RLock()
        self._closed = False

    # -- topology and bookkeeping --------------------------------------------------------------
    @property
    def rank(self) -> int:
        return self.world.rank

    @property
    def size(self) -> int:
        return self.world.size

    @property
    def local_rank(self) -> int:
        """Rank within this (possibly pretended) host."""
        return self.node.rank

    @property
    def local_size(self) -> int:
        return self.node.size

    @property
    def pending(self) -> int:
        subs = [self.world, self.node, self.node_bcast] + ([self.leaders] if self.leaders is not None else [])
        return len(self._chain) + sum(c.pending for c in subs)

    @property
    def overlap(self) -> bool:
        return self.node.overlap

    @property
    def stats(self) -> Dict[str, int]:  # type: ignore[override]
        """This communicator's calls: its all-reduces (as one call each) and the world's."""
        out = dict(self._own_stats)
        for k, v in self.world.stats.items():
            out[k] = out.get(k, 0) + v
        return out

    @stats.setter
    def stats(self, value: Dict[str, int]) -> None:
        self._own_stats = value

    def reset_stats(self) -> None:
        with self._stats_lock:
            self._own_stats = _new_stats()
        for c in (self.world, self.node, self.node_bcast, self.leaders):
            if c is not None:
                c.reset_stats()

    def _count(self, kind: str, sent: int, received: int) -> None:
        self._tally(self._own_stats, kind, sent, received)  # `stats` is a merged copy

    @property
    def inter_host_bytes_sent(self) -> int:
        """Bytes this rank handed to collectives between hosts (a leader's stage 2; 0 elsewhere)."""
        return int(self.leaders.stats["bytes_sent"]) if self.leaders is not None else 0

    def empty(self, shape: Any, dtype: Any) -> np.ndarray:
        # stage 1 reads buffers in place from the host's shared-memory arena
        return self.node.empty(shape, dtype)

    def _block(self, nbytes: int) -> Any:
        return self.node._block(nbytes)

    # -- the all-reduce --------------------------------------------------------------------------
    def allreduce(self, x: Any, op: str = "sum", name: Optional[str] = None,
                  out: Optional[np.ndarray] = None) -> np.ndarray:
        return self.allreduce_async(x, op, name, out=out, wait_now=True).wait()

    def allreduce_async(self, x: Any, op: str = "sum", name: Optional[str] = None,
                        out: Optional[np.ndarray] = None, wait_now: bool = False) -> CollectiveHandle:
        """The three-stage all-reduce (module doc).  `out` and `wait_now` are accepted as by
        MPICommunicator (hints; the result is a fresh array or the host stage's)."""
        x = _as_array(x, "allreduce")
        _check_reduce(op, x.dtype, "allreduce")
        self._count("allreduce", x.nbytes, x.nbytes)
        key = name or "allreduce"
        part = "sum" if op == "mean" else op
        with self._chain_lock:
            h1 = self.node.allreduce_async(x, part, name=key + "/host", wait_now=wait_now)
            h3 = None
            if not self.is_leader:
                # the receive is posted now (broadcasts from the leader arrive in launch order)
                h3 = self.node_bcast.broadcast_async(np.empty(x.shape, x.dtype), root=0, name=key + "/result")
            h = _HierHandle(self, key, part, op == "mean", h1, h3)
            self._chain.append(h)
        return h

    def _complete_through(self, h: "_HierHandle", timeout: Optional[float]) -> None:
        """Runs the remaining stages of every all-reduce launched up to `h`, in launch order."""
        with self._chain_lock:
            while not h._finished:
                first = self._chain[0]
                try:
                    first._run_stages(timeout)
                finally:
                    if first._finished or first._failed:
                        self._chain.pop(0)
                if h._failed:
                    break

    # -- every other collective: the flat world ---------------------------------------------------
    def allgather_async(self, x: Any, name: Optional[str] = None) -> CollectiveHandle:
        return self.world.allgather_async(x, name)

    def allgatherv_async(self, x: Any, counts: Optional[Sequence[int]] = None,
                         name: Optional[str] = None) -> CollectiveHandle:
        return self.world.allgatherv_async(x, counts, name)

    def broadcast_async(self, x: Any, root: int = 0, name: Optional[str] = None) -> CollectiveHandle:
        return self.world.broadcast_async(x, root, name)

    def alltoall_async(self, x: Any, name: Optional[str] = None) -> CollectiveHandle:
        return self.world.alltoall_async(x, name)

    def alltoallv_async(self, x: Any, send_counts: Sequence[int], recv_counts: Optional[Sequence[int]] = None,
                        name: Optional[str] = None) -> CollectiveHandle:
        return self.world.alltoallv_async(x, send_counts, recv_counts, name)

    def reduce_scatter_async(self, x: Any, counts: Optional[Sequence[int]] = None, op: str = "sum",
                             name: Optional[str] = None) -> CollectiveHandle:
        return self.world.reduce_scatter_async(x, counts, op, name)

    def reduce_async(self, x: Any, root: int = 0, op: str = "sum", name: Optional[str] = None) -> CollectiveHandle:
        return self.world.reduce_async(x, root, op, name)

    def barrier_async(self, name: Optional[str] = None) -> CollectiveHandle:
        return self.world.barrier_async(name)

    # -- lifecycle ---------------------------------------------------------------------------------
    def abort(self, code: int = 1) -> None:
        self.world.abort(code)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.stop_timeline()
        for c in (self.leaders, self.node_bcast, self.node, self.world):
            if c is not None:
                c.exit_reason = getattr(self, "exit_reason", None)
                c.close()

    def __repr__(self) -> str:
        return (f"<HierarchicalCommunicator rank {self.rank} of {self.size}, host {self.host} of "
                f"{self.num_hosts}{' (leader)' if self.is_leader else ''}>")


class _HierHandle(CollectiveHandle):
    """One all-reduce of a HierarchicalCommunicator: stage 1 in flight from its launch; the
    rest run by `_run_stages` when it (or a later all-reduce) is waited for."""

    def __init__(self, comm: HierarchicalCommunicator, key: str, op: str, mean: bool, h1: Any, h3: Any):
        self._comm = comm
        self._key = key
        self._op = op
        self._mean = mean
        self._h1 = h1
        self._h3 = h3
        self._result: Any = None
        self._finished = False
        self._failed = False
        self.timeout = None

    def _run_stages(self, timeout: Optional[float]) -> None:
        if self._finished:
            return
        c = self._comm
        try:
            host_sum = self._h1.wait(timeout)
            if c.is_leader:
                assert c.leaders is not None
                total = c.leaders.allreduce_async(host_sum, self._op, name=self._key + "/hosts",
                                                  wait_now=True).wait(timeout)
                # the leader's own bytes are what every rank of its host gets
                c.node_bcast.broadcast_async(total, root=0, name=self._key + "/result").wait(timeout)
            else:
                total = self._h3.wait(timeout)
        except BaseException:
            self._failed = True
            self._h1 = self._h3 = None
            raise
        if self._mean:  # as MPICommunicator: the sum divided once, at the end
            if total.flags.writeable and total.dtype.kind in "fc":
                np.divide(total, c.size, out=total)
            else:
                total = np.asarray(total / c.size, dtype=total.dtype)
        self._result = total
        self._finished = True
        self._h1 = self._h3 = None

    def wait(self, timeout: Optional[float] = None) -> Any:
        if timeout is None:
            timeout = self.timeout
        if not self._finished:
            self._comm._complete_through(self, timeout)
        return self._result

    def done(self) -> bool:
        if self._finished:
            return True
        if self._comm.is_leader:
            return False  # stages 2 and 3 start only at a wait
        return bool(self._h1.done() and self._h3.done())

    def abandon(self) -> None:
        for h in (self._h1, self._h3):
            if h is not None:
                h.abandon()
