"""The sharded parameter server under real MPI (n = 2 and 3): checkpoints resharded between
numbers of ranks.  PS mode vs all-reduce mode, bad ids and mismatched layouts run in both
worlds (tests/test_ps_two_worlds.py).

    mpiexec -n 3 python -m pytest -q -p no:cacheprovider --with-mpi tests/mpi/test_ps_mpi.py
"""
import os
import shutil
import sys
import tempfile

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import collflow as cf  # noqa: E402
from collflow.train.sharded_checkpoint import ShardedSaver, shard_files  # noqa: E402
import ps_model as pm  # noqa: E402


@pytest.fixture(scope="module")
def comm():
    return cf.comm.init(backend="mpi", timeout=60)


@pytest.fixture(scope="module")
def shared_dir(comm):
    d = comm.mpi_comm.bcast(tempfile.mkdtemp(prefix="collflow_ps_") if comm.rank == 0 else None, root=0)
    yield d
    comm.barrier()
    if comm.rank == 0:
        shutil.rmtree(d, ignore_errors=True)


def _state_everywhere(comm, st):
    """Whole tables assembled from every rank's per-rank state."""
    return pm.assemble(comm.mpi_comm.allgather(st))


@pytest.mark.mpi(min_size=2)
def test_checkpoint_reshards_n_to_n_minus_1_and_back(comm, shared_dir):
    from mpi4py import MPI
    n = comm.size
    m_ranks = n - 1
    m = pm.build("ps", "adam", comm, "mod", seed=7 + comm.rank)
    with m.graph.as_default():
        saver = ShardedSaver(comm=comm)
    with cf.Session(graph=m.graph, config={"comm": comm}) as s:
        s.run(m.init_op)
        s.run(m.bcast_op)
        for fd in m.batches(2):
            s.run(m.train_op, fd)
        path = saver.save(s, os.path.join(shared_dir, "ckpt"), global_step=m.global_step)
        saved = _state_everywhere(comm, pm.state(s, m))
    assert len(shard_files(path)) == n

    # the first n-1 ranks restore it onto n-1 shards ("div" this time), train a step, save
    sub_mpi = comm.mpi_comm.Split(0 if comm.rank < m_ranks else MPI.UNDEFINED, comm.rank)
    path2 = None
    if comm.rank < m_ranks:
        sub = cf.comm.MPICommunicator(sub_mpi, timeout=60)
        try:
            m2 = pm.build("ps", "adam", sub, "div", seed=100 + sub.rank)
            with m2.graph.as_default():
                saver2 = ShardedSaver(comm=sub)
            with cf.Session(graph=m2.graph, config={"comm": sub}) as s:
                saver2.restore(s, path)
                got = pm.assemble(sub_mpi.allgather(pm.state(s, m2)))
                for name, val in saved.items():
                    if name != "__losses__":
                        np.testing.assert_array_equal(got[name], val, err_msg=name)
                for fd in m2.batches(1, start=2):
                    s.run(m2.train_op, fd)
                path2 = saver2.save(s, os.path.join(shared_dir, "ckpt_m"), global_step=m2.global_step)
                trained = pm.assemble(sub_mpi.allgather(pm.state(s, m2)))
        finally:
            sub.close()
            sub_mpi.Free()
    else:
        trained = None
    path2 = comm.mpi_comm.bcast(path2, root=0)
    trained = comm.mpi_comm.bcast(trained, root=0)
    assert len(shard_files(path2)) == m_ranks

    # and back onto all n ranks
    m3 = pm.build("ps", "adam", comm, "mod", seed=1000)
    with m3.graph.as_default():
        saver3 = ShardedSaver(comm=comm)
    with cf.Session(graph=m3.graph, config={"comm": comm}) as s:
        saver3.restore(s, path2)
        back = _state_everywhere(comm, pm.state(s, m3))
    for name, val in trained.items():
        if name != "__losses__":
            np.testing.assert_array_equal(back[name], val, err_msg=name)
