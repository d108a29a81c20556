"""The static plans' passes on plans with loops and conds (runtime/control_plan.py): producer/
consumer fusion and bucket views on the top block, collectives issued early and waited for
late (a backward loop runs while the gradients computed before it are all-reduced), the
values equal to the same plan with the passes off, and replicas identical."""
import numpy as np
import pytest

import collflow as cf
from collflow.comm import ThreadWorld

B, T, D, H, K = 4, 5, 3, 6, 2
OFF = {"fuse_ops": False, "bucket_views": False, "optimize": False, "buffer_forwarding": False}


def _rnn_model(comm=None, opt="sgd", fusion_bytes=None):
    """A tanh RNN written with cf.while_loop, a dense head on its last state; SGD/Momentum,
    through SyncReplicasOptimizer when `comm` is given."""
    x = cf.placeholder(cf.float64, [T, B, D], name="x")
    y = cf.placeholder(cf.float64, [B, K], name="y")
    r = np.random.default_rng(5)
    w = cf.Variable(r.normal(0, 0.4, (D, H)), name="w")
    u = cf.Variable(r.normal(0, 0.4, (H, H)), name="u")
    v = cf.Variable(r.normal(0, 0.4, (H, K)), name="v")
    b = cf.Variable(np.zeros(K), name="b")

    def body(i, h):
        return i + 1, cf.tanh(cf.matmul(x[i], w) + cf.matmul(h, u))
    h = cf.while_loop(lambda i, h: i < T, body, [0, cf.zeros([B, H], cf.float64)])[1]
    loss = cf.reduce_mean(cf.square(cf.matmul(h, v) + b - y))
    base = (cf.train.GradientDescentOptimizer(0.1) if opt == "sgd"
            else cf.train.MomentumOptimizer(0.1, 0.9))
    if comm is not None:
        kw = {} if fusion_bytes is None else {"fusion_threshold_bytes": fusion_bytes}
        base = cf.train.SyncReplicasOptimizer(base, comm=comm, **kw)
    train = base.minimize(loss)
    return x, y, loss, train, [w, u, v, b]


def _data(rank, step):
    r = np.random.default_rng(100 * step + rank)
    return r.normal(size=(T, B, D)), r.normal(size=(B, K))


def _train(config, comm=None, steps=3, **kw):
    g = cf.Graph()
    with g.as_default():
        x, y, loss, train, vs = _rnn_model(comm, **kw)
        init = cf.global_variables_initializer()
    cfg = dict(config)
    if comm is not None:
        cfg["comm"] = comm
    with cf.Session(graph=g, config=cfg) as s:
        s.run(init)
        losses = []
        rank = comm.rank if comm is not None else 0
        for step in range(steps):
            xv, yv = _data(rank, step)
            losses.append(s.run([loss, train], {x: xv, y: yv})[0])
        xv, yv = _data(rank, 0)
        plan = s.plan_for([loss, train], {x: xv, y: yv})
        return losses, s.run(vs), plan


@pytest.mark.host_only("the GEMM+update fusion and into-bucket gradients are NumPy BLAS paths")
@pytest.mark.parametrize("opt", ["sgd", "momentum"])
def test_weight_gradient_gemm_fuses_with_its_update_around_a_loop(opt):
    losses, values, plan = _train({}, opt=opt)
    losses0, values0, plan0 = _train(OFF, opt=opt)
    fused = [o.type for o in plan.ops if "+" in o.type]
    assert fused and all(t.startswith("MatMul+Apply") for t in fused), fused
    assert not [o for o in plan0.ops if "+" in o.type]
    np.testing.assert_allclose(losses, losses0, rtol=1e-12)
    for a, b in zip(values, values0):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def _ranks(config, n=2, **kw):
    world = ThreadWorld(n, timeout=30)
    return world.run(lambda c: _train(config, comm=c, **kw))


def test_sync_replicas_around_a_loop_overlaps_and_matches_the_plan_without_passes():
    on = _ranks({}, fusion_bytes=0)     # a bucket per gradient: the head's go out first
    off = _ranks(OFF, fusion_bytes=0)
    for r in range(2):
        np.testing.assert_allclose(on[r][0], off[r][0], rtol=1e-12)
        for a, b in zip(on[r][1], off[r][1]):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        for a, b in zip(on[r][1], on[0][1]):
            assert np.array_equal(a, b)  # replicas identical
    src = on[0][2].source.splitlines()
    issues = [k for k, ln in enumerate(src) if ln.strip().startswith("h") and "= k" in ln]
    loops = [k for k, ln in enumerate(src) if ln.strip() == "while True:"]
    assert len(loops) == 2 and issues, (loops, issues)
    # the head's gradients are all-reduced while the backward loop runs
    assert min(issues) < loops[1]
    waits = [k for k, ln in enumerate(src) if ".wait()" in ln and ln.strip().startswith("v")]
    assert max(waits) > loops[1]
    # a gradient read only by its all-reduce is dropped once issued (the collective holds
    # what it reads), not kept to the end of the step
    freed = [k for k in issues if src[k + 1].strip() == src[k].split("(")[1].rstrip(")") + " = None"]
    assert freed, [src[k] for k in issues]


@pytest.mark.host_only("the GEMM+update fusion and into-bucket gradients are NumPy BLAS paths")
def test_gradients_computed_into_the_bucket_around_a_loop():
    def rank(c, views):
        cfg = {"bucket_views": views}
        losses, values, plan = _train(cfg, comm=c)
        ks = [k for o, k in zip(plan.ops, plan.kernels) if o.type == "FusedAllReduce"]
        return losses, values, sum(k.input_slots.bucket.placed for k in ks if getattr(k, "input_slots", None))
    on = ThreadWorld(2, timeout=30).run(lambda c: rank(c, True))
    off = ThreadWorld(2, timeout=30).run(lambda c: rank(c, False))
    for r in range(2):
        assert on[r][2] > 0 and off[r][2] == 0
        np.testing.assert_allclose(on[r][0], off[r][0], rtol=1e-12)
        for a, b in zip(on[r][1], off[r][1]):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_a_run_failing_after_a_collective_was_issued_fails_cleanly_and_the_next_runs():
    """An op failing while a collective of the top block is in flight: the error names the op,
    the handle is abandoned, and the next run (good feed) gives the right sums."""
    def rank(c):
        g = cf.Graph()
        with g.as_default():
            v = cf.Variable(np.full(3, 1.0 + c.rank), name="v")
            ids = cf.placeholder(cf.int32, [2], name="ids")
            opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(1.0), comm=c)
            red = opt.reduce_gradients([(v.value() * 2.0, v)], average=False)[0][0]
            picked = cf.gather(cf.constant([1.0, 2.0, 3.0], cf.float64), ids)   # fails on a bad id
            loop = cf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + picked), [0, picked])[1]
            init = cf.global_variables_initializer()
        with cf.Session(graph=g, config={"comm": c}) as s:
            s.run(init)
            src = s.plan_for([red, loop], {ids: [0, 1]}).source
            with pytest.raises(cf.errors.InvalidArgumentError, match="Gather"):
                s.run([red, loop], {ids: [0, 7]})
            return s.run([red, loop], {ids: [0, 2]}), src
    for (red, loop), src in ThreadWorld(2, timeout=30).run(rank):
        np.testing.assert_array_equal(red, np.full(3, 2.0 * (1.0 + 2.0)))
        np.testing.assert_array_equal(loop, [4.0, 12.0])
        lines = src.splitlines()
        issue = next(k for k, ln in enumerate(lines) if ln.strip().startswith("h") and "= k" in ln)
        gather = next(k for k, ln in enumerate(lines) if "while True:" in ln)
        assert issue < gather  # the all-reduce was in flight when the gather failed


@pytest.mark.host_only("the GEMM+update fusion and into-bucket gradients are NumPy BLAS paths")
def test_a_gradient_computed_into_the_bucket_is_not_forwarded_instead():
    """An elementwise gradient whose input dies at it could run in place (buffer forwarding) or
    be computed into the all-reduce's bucket (bucket views): the bucket wins, as in static
    plans, also with a loop in the graph."""
    def rank(c):
        g = cf.Graph()
        with g.as_default():
            x = cf.placeholder(cf.float64, [8], name="x")
            v0, v1 = cf.Variable(np.zeros(8), name="v0"), cf.Variable(np.zeros(8), name="v1")
            looped = cf.while_loop(lambda i, a: i < 2, lambda i, a: (i + 1, a * 2.0), [0, x])[1]
            grads = [(looped * 3.0) + 1.0, (x * 2.0) - 1.0]   # the Add/Sub: input dies there
            opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(1.0), comm=c)
            red = [t for t, _ in opt.reduce_gradients(list(zip(grads, [v0, v1])), average=False)]
        with cf.Session(graph=g, config={"comm": c}) as s:
            xv = np.arange(8.0) + c.rank
            out = s.run(red, {x: xv})
            plan = s.plan_for(red, {x: xv})
            k = [k for o, k in zip(plan.ops, plan.kernels) if o.type == "FusedAllReduce"][0]
            return out, k.input_slots.bucket.placed, plan.forwarded
    for out, placed, forwarded in ThreadWorld(2, timeout=30).run(rank):
        xs = [np.arange(8.0) + r for r in range(2)]
        np.testing.assert_array_equal(out[0], sum(a * 4.0 * 3.0 + 1.0 for a in xs))
        np.testing.assert_array_equal(out[1], sum(a * 2.0 - 1.0 for a in xs))
        assert placed == 2
        assert not any(n.endswith(("add", "Add", "sub", "Sub")) for n in forwarded), forwarded
