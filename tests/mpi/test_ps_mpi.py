"""The sharded parameter server under real MPI (n = 2 and 3).

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
from collflow.train import sharded as sh  # noqa: E402
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


def _all_equal_across_ranks(comm, arrays):
    flat = np.concatenate([np.ascontiguousarray(a, dtype=np.float64).ravel() for a in arrays])
    allv = comm.allgather(flat).reshape(comm.size, -1)
    return all(np.array_equal(allv[r], allv[0]) for r in range(comm.size))


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("opt,strategy", [("sgd", "mod"), ("adagrad", "div"), ("adam", "mod"), ("adam", "div")])
def test_ps_mode_trains_the_same_parameters_as_allreduce_mode(comm, opt, strategy):
    ps = pm.train(pm.build("ps", opt, comm, strategy, seed=3), comm, steps=4)
    ar = pm.train(pm.build("allreduce", opt, comm, strategy, seed=3), comm, steps=4)
    pm.assert_same_parameters(ps, ar)
    if opt != "adam":
        # and against the dense all-reduce of the tables' gradients (dense Adam is not lazy: it
        # moves rows no one looked up, so it differs from sparse Adam by design)
        dense = pm.train(pm.build("allreduce", opt, comm, strategy, seed=3, sparse_as_dense=True), comm, steps=4)
        pm.assert_same_parameters(ps, dense)
    replicated = [val for name, (ids, val) in sorted(ps.items()) if ids is None and name != "__losses__"]
    assert _all_equal_across_ranks(comm, replicated)


@pytest.mark.mpi(min_size=2)
def test_out_of_range_id_names_the_variable_and_the_id_on_every_rank(comm):
    g = cf.Graph()
    with g.as_default():
        ids = cf.placeholder(cf.int64, (None,), name="ids")
        sv = sh.ShardedVariable("item_emb", (pm.VOCAB, pm.DIM), cf.float64, initializer=0.5, comm=comm)
        y = sh.embedding_lookup(sv, ids)
        init = cf.global_variables_initializer()
    culprit = comm.size - 1
    with cf.Session(graph=g, config={"comm": comm}) as s:
        s.run(init)
        feed = [0, pm.VOCAB + 5, 1] if comm.rank == culprit else [2, 3]
        with pytest.raises(cf.errors.InvalidArgumentError) as ei:
            s.run(y, {ids: feed})
        msg = str(ei.value)
        assert "'item_emb'" in msg and f"id {pm.VOCAB + 5} is out of range [0, {pm.VOCAB})" in msg
        assert ("this rank" if comm.rank == culprit else f"rank {culprit}") in msg
        # the communicator is still usable: the error travelled inside the collective
        np.testing.assert_array_equal(s.run(y, {ids: [1, 2]}), np.full((2, pm.DIM), 0.5))


@pytest.mark.mpi(min_size=2)
def test_mismatched_shard_layouts_are_caught_before_the_first_step(comm):
    # the last rank believes the tables are one row longer
    m = pm.build("ps", "sgd", comm, vocab=pm.VOCAB + (1 if comm.rank == comm.size - 1 else 0))
    with cf.Session(graph=m.graph, config={"comm": comm}) as s:
        with pytest.raises(cf.errors.InvalidArgumentError, match="mismatched shard layouts") as ei:
            s.run(m.init_op)
        assert f"rank {comm.size - 1} has {pm.VOCAB + 1}x{pm.DIM} float64 'mod'" in str(ei.value)


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
