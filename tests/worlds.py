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

import numpy as np
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


def rank_data(rank, shape, dtype, seed=0, low=-3, high=3):
    """Rank `rank`'s input of a collective test: any rank can make every rank's, from seeds."""
    rng = np.random.default_rng(7919 * seed + rank)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(low, high, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.integers(low * 10, high * 10, size=shape).astype(dtype)


def assert_close(a, b, dtype):
    """A collective's result against the expected one: exact for integers, to rounding for
    floats (half precision loosely: MPI may sum in another order)."""
    assert a.dtype == np.dtype(dtype), (a.dtype, dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    if np.dtype(dtype) == np.float16:
        np.testing.assert_allclose(a.astype(np.float32), b.astype(np.float32), rtol=2e-2, atol=2e-2)
    elif np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(a, b)
