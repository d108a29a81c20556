"""Data-parallel training, written once per rank and run in two worlds (tests/worlds.py): on
thread ranks (2 and 3) in the serial run, and on MPI ranks through both transports (MPI's
collectives, shared memory) under `mpiexec -n 2|3 ... --with-mpi` (scripts/test.sh).

Each rank trains on its slice of the global batch and checks, on its own, that it ends where
one process trained on the whole batch does; the ranks then compare digests of their
variables (replicas bit-identical).  Also a while-loop model, whose plan issues its
gradient all-reduces before the backward loop and waits after it (runtime/control_plan.py).
"""
import numpy as np
import pytest

import collflow as cf
import dp_model as dp


def _identical_across_ranks(comm, arrays):
    digest = np.frombuffer(b"".join(np.ascontiguousarray(v).tobytes() for v in arrays), dtype=np.uint8)
    allv = np.asarray(comm.allgather(digest)).reshape(comm.size, -1)
    assert all(np.array_equal(allv[r], allv[0]) for r in range(comm.size))


@pytest.mark.parametrize("opt", ["sgd", "adam", "momentum"])
def test_n_ranks_match_one_process_with_n_times_the_batch(world, opt):
    def body(comm):
        # every rank initializes with its own seed: the broadcast from rank 0 must fix that
        m = dp.build(opt, comm=comm, init_seed=100 + comm.rank)
        mine = dp.train_rank(m, comm, steps=4, per_rank=3)
        ref = dp.train_single(dp.build(opt, sync=False, init_seed=100), steps=4, global_batch=3 * comm.size)
        for a, b in zip(mine, ref):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        _identical_across_ranks(comm, mine)
    world.run(body)


@pytest.mark.parametrize("codec", ["fp16", "bf16"])
def test_compressed_gradients_stay_close_and_replicas_identical(world, codec):
    def body(comm):
        exact = dp.train_rank(dp.build("sgd", comm=comm, init_seed=3), comm, steps=3, per_rank=4)
        comp = dp.train_rank(dp.build("sgd", comm=comm, init_seed=3, compression=codec), comm, steps=3, per_rank=4)
        tol = {"fp16": 2e-3, "bf16": 2e-2}[codec]
        for a, b in zip(comp, exact):
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
        _identical_across_ranks(comm, comp)
    world.run(body)


@pytest.mark.parametrize("as_dense", [False, True], ids=["allgather", "as-dense"])
def test_sparse_embedding_gradients_match_one_process(world, as_dense):
    def body(comm):
        m = dp.build("sgd", comm=comm, init_seed=5, sparse=True, sparse_as_dense=as_dense)
        mine = dp.train_rank(m, comm, steps=3, per_rank=4)
        ref = dp.train_single(dp.build("sgd", sync=False, init_seed=5, sparse=True), steps=3,
                              global_batch=4 * comm.size)
        for a, b in zip(mine, ref):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        _identical_across_ranks(comm, mine)
    world.run(body)


T, B, D, H, K = 4, 3, 3, 5, 2


def _rnn(comm, sync):
    """A tanh RNN in a cf.while_loop with a dense head; one bucket per gradient, so the head's
    gradients can be all-reduced while the backward loop runs."""
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, [T, None, D], name="x")
        y = cf.placeholder(cf.float64, [None, K], name="y")
        r = np.random.default_rng(9)
        w = cf.Variable(r.normal(0, 0.5, (D, H)), name="w")
        u = cf.Variable(r.normal(0, 0.5, (H, H)), name="u")
        v = cf.Variable(r.normal(0, 0.5, (H, K)), name="v")
        h0 = cf.zeros(cf.stack([cf.shape(x)[1], H]), cf.float64)
        h = cf.while_loop(lambda i, h: i < T, lambda i, h: (i + 1, cf.tanh(cf.matmul(x[i], w) + cf.matmul(h, u))),
                          [0, h0])[1]
        loss = cf.reduce_mean(cf.square(cf.matmul(h, v) - y))
        opt = cf.train.MomentumOptimizer(0.2, 0.9)
        if sync:
            opt = cf.train.SyncReplicasOptimizer(opt, comm=comm, fusion_threshold_bytes=0)
        train = opt.minimize(loss)
        init = cf.global_variables_initializer()
    return g, x, y, train, init, [w, u, v]


def test_a_while_loop_model_matches_one_process_and_overlaps_its_all_reduces(world):
    def body(comm):
        n, rank = comm.size, comm.rank
        rng = np.random.default_rng(21)
        xs, ys = rng.normal(size=(3, T, 2 * n, D)), rng.normal(size=(3, 2 * n, K))
        g, x, y, train, init, vs = _rnn(comm, True)
        with cf.Session(graph=g, config={"comm": comm}) as s:
            s.run(init)
            for k in range(3):
                s.run(train, {x: xs[k][:, 2 * rank:2 * rank + 2], y: ys[k][2 * rank:2 * rank + 2]})
            mine = s.run(vs)
            src = s.plan_for(train, {x: xs[0][:, :2], y: ys[0][:2]}).source.splitlines()
        g1, x1, y1, train1, init1, vs1 = _rnn(None, False)
        with cf.Session(graph=g1) as s:
            s.run(init1)
            for k in range(3):
                s.run(train1, {x1: xs[k], y1: ys[k]})
            ref = s.run(vs1)
        for a, b in zip(mine, ref):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        _identical_across_ranks(comm, mine)
        loops = [k for k, ln in enumerate(src) if ln.strip() == "while True:"]
        issued = [k for k, ln in enumerate(src) if ln.strip().startswith("h") and "= k" in ln]
        assert len(loops) == 2 and issued and min(issued) < loops[1]  # the head's, before the backward loop
    world.run(body)
