"""Shrinking the world when a rank dies (ULFM: Open MPI 5 started with `mpirun --with-ft ulfm`).

A rank that sees a collective fail (a dead peer, or a communicator another survivor revoked)
calls `shrink(comm)`: it revokes every MPI communicator under `comm`, so survivors still
blocked in one return at once; all survivors then agree, with MPI_Comm_shrink, on a new
communicator of the ranks still alive, and get a fresh MPICommunicator over it (MPI
transport: shared memory segments would name the dead rank's peers).  When nobody died (the
error was something else) the shrunk world is as large as the old one and `shrink` returns
None: the caller re-raises the error.  The training side (in-memory commits, rollback,
re-sharding) is collflow.train.elastic.
"""
from __future__ import annotations

import os
import time
from typing import Any, Optional, Tuple

from ..errors import FailedPreconditionError
from .mpi import MPICommunicator, import_mpi

__all__ = ["ft_enabled", "require_ft", "elastic_communicator", "shrink"]


def ft_enabled() -> bool:
    """Whether this process runs under `mpirun --with-ft ulfm` (MPI reports dead peers
    instead of the launcher killing the job)."""
    return os.environ.get("OMPI_MCA_mpi_ft_enable", "").strip().lower() in ("1", "true", "yes", "on")


def require_ft() -> None:
    if not ft_enabled():
        raise FailedPreconditionError(
            "the elastic mode needs MPI fault tolerance: start the job with `mpirun --with-ft ulfm ...` "
            "(Open MPI 5; `collflowrun --elastic` adds it), else the launcher ends every rank when one dies")


def elastic_communicator(base: Any = None, timeout: Optional[float] = None) -> MPICommunicator:
    """An MPICommunicator that a failure can shrink: over a duplicate of `base` (default
    MPI.COMM_WORLD), MPI transport, no arrival records.  Collective."""
    MPI = import_mpi()
    base = (MPI.COMM_WORLD if base is None else base).Dup()
    base.Set_errhandler(MPI.ERRORS_RETURN)  # MPI reports a dead peer to the caller
    return MPICommunicator(base, timeout=timeout, track_arrivals=False, shm=False)


def shrink(comm: MPICommunicator, timeout: Optional[float] = None) -> Tuple[Optional[MPICommunicator], float]:
    """(the survivors' new communicator, or None when no rank is gone; seconds it took).
    Every survivor must call it (MPI_Comm_shrink is collective over the survivors); `comm`
    is closed either way."""
    t0 = time.monotonic()
    base = comm.mpi_comm
    comm.revoke()
    comm.close()
    new = base.Shrink()
    if new.Get_size() >= base.Get_size():
        new.Free()
        return None, time.monotonic() - t0
    MPI = import_mpi()
    new.Set_errhandler(MPI.ERRORS_RETURN)
    out = MPICommunicator(new, timeout=timeout if timeout is not None else comm.timeout, track_arrivals=False,
                          shm=False)
    return out, time.monotonic() - t0
