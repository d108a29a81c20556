"""Shrinking the world when a rank dies (ULFM: Open MPI 5 started with `mpirun --with-ft ulfm`).

A rank that sees a collective fail (a dead peer, or a communicator another survivor revoked)
calls `shrink(comm)`: it revokes every MPI communicator under `comm`, so survivors still
blocked in one return at once; all survivors then agree, with MPI_Comm_shrink, on a new
communicator of the ranks still alive, and get a fresh MPICommunicator over it (MPI
transport: shared memory segments would name the dead rank's peers).  When nobody died (the
error was something else) the shrunk world is as large as the old one and `shrink` returns
None: the caller re-raises the error.  With `respawn`, the survivors then start one new process
per dead rank (MPI_Comm_spawn of the same program) and merge with it: the world is whole again,
the newcomers last; in a newcomer, `elastic_communicator()` is that merged world.  The training
side (in-memory commits, rollback, re-sharding, handing the commit to newcomers) is
collflow.train.elastic.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any, Optional, Sequence, Tuple

from ..errors import FailedPreconditionError
from .mpi import MPICommunicator, import_mpi

__all__ = ["ft_enabled", "require_ft", "elastic_communicator", "shrink", "is_respawned"]


def ft_enabled() -> bool:
    """Whether this process runs under `mpirun --with-ft ulfm` (MPI reports dead peers
    instead of the launcher killing the job)."""
    return os.environ.get("OMPI_MCA_mpi_ft_enable", "").strip().lower() in ("1", "true", "yes", "on")


def require_ft() -> None:
    if not ft_enabled():
        raise FailedPreconditionError(
            "the elastic mode needs MPI fault tolerance: start the job with `mpirun --with-ft ulfm ...` "
            "(Open MPI 5; `collflowrun --elastic` adds it), else the launcher ends every rank when one dies")


def is_respawned() -> bool:
    """Whether this process was started by survivors to replace a dead rank."""
    MPI = import_mpi()
    return MPI.Comm.Get_parent() != MPI.COMM_NULL


def _wrap(comm: Any, timeout: Optional[float]) -> MPICommunicator:
    MPI = import_mpi()
    comm.Set_errhandler(MPI.ERRORS_RETURN)  # MPI reports a dead peer to the caller
    return MPICommunicator(comm, timeout=timeout, track_arrivals=False, shm=False)


def elastic_communicator(base: Any = None, timeout: Optional[float] = None) -> MPICommunicator:
    """An MPICommunicator that a failure can shrink: over a duplicate of `base` (default
    MPI.COMM_WORLD), MPI transport, no arrival records; in a process the survivors spawned, the
    world it joined (its parents first).  Collective."""
    MPI = import_mpi()
    parent = MPI.Comm.Get_parent()
    if base is None and parent != MPI.COMM_NULL:
        return _wrap(parent.Merge(high=True), timeout)
    return _wrap((MPI.COMM_WORLD if base is None else base).Dup(), timeout)


def shrink(comm: MPICommunicator, timeout: Optional[float] = None, respawn: Optional[Sequence[str]] = None
           ) -> Tuple[Optional[MPICommunicator], int, float]:
    """(the new communicator, or None when no rank is gone; how many ranks died; seconds it
    took).  Every survivor must call it (MPI_Comm_shrink is collective over the survivors);
    `comm` is closed either way.  `respawn`: the program (argv, run with this Python) that
    replaces each dead rank; the new communicator then has the old size, newcomers last."""
    t0 = time.monotonic()
    base = comm.mpi_comm
    comm.revoke()
    comm.close()
    new = base.Shrink()
    lost = base.Get_size() - new.Get_size()
    if lost <= 0:
        new.Free()
        return None, 0, time.monotonic() - t0
    timeout = timeout if timeout is not None else comm.timeout
    if respawn:
        inter = new.Spawn(sys.executable, args=list(respawn), maxprocs=lost, root=0)
        # survivors first, in their shrunk order; the intercommunicator is kept (not freed):
        # freed on one side only, the newcomer's MPI_Finalize waited forever for its parents
        new = inter.Merge(high=False)
    return _wrap(new, timeout), lost, time.monotonic() - t0
