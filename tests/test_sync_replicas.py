"""SyncReplicasOptimizer on simulated ranks (threads): N ranks = one process with N x batch."""
import numpy as np
import pytest

import collflow as cf
from collflow.comm import ThreadWorld
import dp_model as dp


def _run_world(n, **build_kw):
    world = ThreadWorld(n, timeout=30)
    models = [dp.build(comm=world.comm(r), init_seed=100 + r, **build_kw) for r in range(n)]
    steps, per_rank = build_kw.pop("steps", 4), 3
    return world.run(lambda c: dp.train_rank(models[c.rank], c, steps, per_rank))


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("opt", ["sgd", "adam", "momentum"])
def test_n_ranks_match_one_process_with_n_times_the_batch(n, opt):
    results = _run_world(n, opt_name=opt)
    # rank 0's initial values are what every rank starts from (broadcast)
    ref = dp.train_single(dp.build(opt, sync=False, init_seed=100), steps=4, global_batch=3 * n)
    for r in range(n):
        for a, b in zip(results[r], ref):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    # replicas are bit-identical
    for r in range(1, n):
        for a, b in zip(results[r], results[0]):
            assert np.array_equal(a, b)


def test_fusion_buckets_follow_the_threshold():
    m = dp.build("sgd", sync=True, fusion=0)
    assert len(m["opt"].buckets) == 3  # one collective per gradient
    m = dp.build("sgd", sync=True, fusion=1 << 20)
    assert len(m["opt"].buckets) == 1
    # backward order: the last layer's gradient comes first
    assert m["opt"].buckets[0][0] == "w2"
    m = dp.build("sgd", sync=True, fusion=8 * (dp.HID * dp.OUT + dp.HID))
    assert m["opt"].buckets == [["w2", "b1"], ["w1"]]


@pytest.mark.parametrize("codec", ["fp16", "bf16"])
def test_compression_is_close_and_replicas_stay_identical(codec):
    exact = _run_world(2, opt_name="sgd")
    comp = _run_world(2, opt_name="sgd", compression=codec)
    tol = {"fp16": 2e-3, "bf16": 2e-2}[codec]
    for a, b in zip(comp[0], exact[0]):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    for a, b in zip(comp[1], comp[0]):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("as_dense", [False, True])
def test_sparse_gradients_allgather_matches_single_process(as_dense):
    results = _run_world(3, opt_name="sgd", sparse=True, sparse_as_dense=as_dense)
    ref = dp.train_single(dp.build("sgd", sync=False, init_seed=100, sparse=True), steps=4, global_batch=9)
    for a, b in zip(results[2], ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_sparse_gradients_do_not_use_a_dense_all_reduce():
    m = dp.build("sgd", sync=True, sparse=True)
    types = [op.type for op in m["graph"].get_operations()]
    assert "SparseAllGather" in types
    emb_bucket = [b for b in m["opt"].buckets if "emb" in b]
    assert not emb_bucket


def test_broadcast_makes_replicas_identical_and_digest_checks_it():
    world = ThreadWorld(2, timeout=30)
    models = [dp.build("sgd", comm=world.comm(r), init_seed=7 + r) for r in range(2)]

    def fn(c):
        m = models[c.rank]
        with cf.Session(graph=m["graph"], config={"comm": c}) as s:
            s.run(m["init"])
            before = cf.train.replica_digest(s)
            s.run(m["bcast"])
            cf.train.check_replicas_identical(s, comm=c)
            return before, cf.train.replica_digest(s)
    (b0, a0), (b1, a1) = world.run(fn)
    assert b0 != b1 and a0 == a1 == b0


def test_check_replicas_identical_names_the_diverged_rank():
    world = ThreadWorld(2, timeout=30)
    models = [dp.build("sgd", comm=world.comm(r), init_seed=7 + r) for r in range(2)]

    def fn(c):
        m = models[c.rank]
        with cf.Session(graph=m["graph"], config={"comm": c}) as s:
            s.run(m["init"])
            with pytest.raises(cf.errors.InvalidArgumentError, match=r"rank\(s\) \[1\]"):
                cf.train.check_replicas_identical(s, comm=c)
    world.run(fn)


def test_bad_arguments():
    with pytest.raises(cf.errors.InvalidArgumentError, match="compression"):
        cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.1), compression="int8")
    with pytest.raises(TypeError):
        cf.train.SyncReplicasOptimizer("sgd")


def test_fused_buckets_mixing_large_and_small_gradients_and_reused_results():
    """Large gradients are all-reduced where they are, small ones packed; a result the caller
    still holds is never overwritten by the next step (the receive buffers are reused only
    when nobody holds them)."""
    from collflow.comm.fusion import DIRECT_ELEMENTS
    shapes = [(DIRECT_ELEMENTS,), (3, 5), (2, DIRECT_ELEMENTS // 2 + 1), (7,)]
    world = ThreadWorld(2, timeout=30)

    def rank(c):
        g = cf.Graph()
        with g.as_default():
            xs = [cf.placeholder(cf.float64, s) for s in shapes]
            vs = [cf.Variable(np.zeros(s), name=f"v{i}") for i, s in enumerate(shapes)]
            opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(1.0), comm=c)
            sums = [t for t, _ in opt.reduce_gradients(list(zip(xs, vs)), average=False)]
            means = [t for t, _ in opt.reduce_gradients(list(zip(xs, vs)))]
        out = []
        with cf.Session(graph=g, config={"comm": c}) as s:
            for step in range(3):
                feed = {x: np.full(sh, 10.0 * step + c.rank + i) for i, (x, sh) in enumerate(zip(xs, shapes))}
                out.append((s.run(sums, feed), s.run(means, feed)))
        return out

    res = world.run(rank)
    for r in range(2):
        for step, (sums, means) in enumerate(res[r]):  # the held results of every step are intact
            for i, sh in enumerate(shapes):
                want = (10.0 * step + i) * 2 + 1
                np.testing.assert_array_equal(sums[i], np.full(sh, want))
                np.testing.assert_allclose(means[i], np.full(sh, want / 2))
