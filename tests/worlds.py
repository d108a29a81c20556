"""One test body, two worlds (mpi4py's habit): a test written once, per rank, runs serially on
thread ranks and under mpiexec on real ones.

A test takes the `world` fixture and calls `world.run(body)`, where `body(comm)` is what one
rank does.  In a serial run the body runs on a ThreadWorld of 2 and of 3 ranks (one thread
each); under `mpiexec -n N ... --with-mpi` it runs once per process on MPI.COMM_WORLD, through
both transports of the MPI backend (MPI's collectives, and shared memory).  `run` returns the
bodies' results by rank (one entry under MPI: this rank's).
"""
from __future__ import annotations

import os
from typing import Any, Callable, List

import pytest

import collflow.comm as cc


def mpi_world_size() -> int:
    """Ranks of the MPI job this process belongs to (1 outside mpiexec), from the launcher."""
    for v in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"):
        s = os.environ.get(v, "")
        if s.isdigit():
            return int(s)
    return 1


class _Threads:
    def __init__(self, size: int):
        self.size = size

    def run(self, body: Callable[[Any], Any]) -> List[Any]:
        return cc.ThreadWorld(self.size, timeout=30).run(body)


class _OnMPI:
    def __init__(self, comm: Any):
        self.comm = comm
        self.size = comm.size

    def run(self, body: Callable[[Any], Any]) -> List[Any]:
        return [body(self.comm)]


WORLDS = ["mpi", "shm"] if mpi_world_size() > 1 else ["threads-2", "threads-3"]


@pytest.fixture(scope="module", params=WORLDS)
def world(request):
    if request.param.startswith("threads"):
        yield _Threads(int(request.param.split("-")[1]))
        return
    from mpi4py import MPI
    c = cc.MPICommunicator(MPI.COMM_WORLD, timeout=30, shm=request.param == "shm")
    assert c.shm_active == (request.param == "shm")
    yield _OnMPI(c)
    c.close()
