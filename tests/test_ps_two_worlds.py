"""The sharded parameter server, written once per rank and run in two worlds (tests/worlds.py):
thread ranks (2 and 3) in the serial run, MPI ranks through both transports under
`mpiexec -n 2|3 ... --with-mpi` (scripts/test.sh).

PS mode trains the same parameters as all-reduce mode (and as the dense all-reduce of the
tables' gradients, where the optimizer is not lazy); a bad id names the table and the id on
every rank and leaves the communicator usable; ranks that disagree on a table's layout fail
before the first step.
"""
import numpy as np
import pytest

import collflow as cf
from collflow.train import sharded as sh
import ps_model as pm


def _identical_across_ranks(comm, arrays):
    flat = np.concatenate([np.ascontiguousarray(a, dtype=np.float64).ravel() for a in arrays])
    allv = np.asarray(comm.allgather(flat)).reshape(comm.size, -1)
    assert all(np.array_equal(allv[r], allv[0]) for r in range(comm.size))


@pytest.mark.parametrize("opt,strategy", [("sgd", "mod"), ("adagrad", "div"), ("adam", "mod"), ("adam", "div")])
def test_ps_mode_trains_the_same_parameters_as_allreduce_mode(world, opt, strategy):
    def body(comm):
        ps = pm.train(pm.build("ps", opt, comm, strategy, seed=3), comm, steps=4)
        ar = pm.train(pm.build("allreduce", opt, comm, strategy, seed=3), comm, steps=4)
        pm.assert_same_parameters(ps, ar)
        if opt != "adam":
            # and against the dense all-reduce of the tables' gradients (dense Adam is not lazy:
            # it moves rows no one looked up, so it differs from sparse Adam by design)
            dense = pm.train(pm.build("allreduce", opt, comm, strategy, seed=3, sparse_as_dense=True), comm, steps=4)
            pm.assert_same_parameters(ps, dense)
        # each rank's shard rows equal all-reduce mode's rows (above); the replicated part is
        # bit-identical across ranks
        _identical_across_ranks(comm, [val for name, (ids, val) in sorted(ps.items())
                                       if ids is None and name != "__losses__"])
    world.run(body)


@pytest.mark.parametrize("bad", [pm.VOCAB + 5, -1])
def test_out_of_range_id_names_the_table_and_the_id_on_every_rank(world, bad):
    def body(comm):
        g = cf.Graph()
        with g.as_default():
            ids = cf.placeholder(cf.int64, (None,), name="ids")
            sv = sh.ShardedVariable("item_emb", (pm.VOCAB, pm.DIM), cf.float64, initializer=0.5, comm=comm)
            y = sh.embedding_lookup(sv, ids)
            init = cf.global_variables_initializer()
        culprit = comm.size - 1
        with cf.Session(graph=g, config={"comm": comm}) as s:
            s.run(init)
            feed = [0, bad, 1] if comm.rank == culprit else [2, 3]
            with pytest.raises(cf.errors.InvalidArgumentError) as ei:
                s.run(y, {ids: feed})
            msg = str(ei.value)
            assert "'item_emb'" in msg and f"id {bad} is out of range [0, {pm.VOCAB})" in msg
            assert ("this rank" if comm.rank == culprit else f"rank {culprit}") in msg
            # the communicator is still usable: the error travelled inside the collective
            np.testing.assert_array_equal(s.run(y, {ids: [1, 2]}), np.full((2, pm.DIM), 0.5))
    world.run(body)


def test_mismatched_shard_layouts_are_caught_before_the_first_step(world):
    def body(comm):
        # the last rank believes the tables are one row longer
        m = pm.build("ps", "sgd", comm, vocab=pm.VOCAB + (1 if comm.rank == comm.size - 1 else 0))
        with cf.Session(graph=m.graph, config={"comm": comm}) as s:
            with pytest.raises(cf.errors.InvalidArgumentError, match="mismatched shard layouts") as ei:
                s.run(m.init_op)
            assert f"rank {comm.size - 1} has {pm.VOCAB + 1}x{pm.DIM} float64 'mod'" in str(ei.value)
    world.run(body)
