"""Backup ranks on simulated ranks (threads): the quorum protocol, exclusion, no hangs."""
import time

import numpy as np
import pytest

import collflow as cf
from collflow.comm import ThreadWorld
import dp_model as dp


def _build(comm, b, seed=100):
    g = cf.Graph()
    with g.as_default():
        rng = np.random.default_rng(seed)
        x = cf.placeholder(cf.float64, (None, dp.IN), name="x")
        y = cf.placeholder(cf.int32, (None,), name="y")
        slow = cf.placeholder_with_default(cf.constant(0.0, dtype=cf.float64), (), name="slow")
        w1 = cf.Variable(rng.normal(size=(dp.IN, dp.HID)) * 0.5, name="w1")
        w2 = cf.Variable(rng.normal(size=(dp.HID, dp.OUT)) * 0.5, name="w2")
        # the straggler's delay sits in the backward pass's input: a real delay inside the step
        h = cf.nn.relu(cf.matmul(cf.delay(x, slow), w1))
        loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=cf.matmul(h, w2)))
        opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.3), comm=comm, backup_ranks=b)
        train = opt.minimize(loss)
        init = cf.global_variables_initializer()
        bcast = cf.train.broadcast_global_variables(0)
    return dict(graph=g, x=x, y=y, slow=slow, loss=loss, train=train, init=init, bcast=bcast, opt=opt,
                vars=[w1, w2])


def train_rank(m, c, xs, ys, delays, per_rank=3):
    """One rank's training with run_step; returns (values, quorum history, step times)."""
    r = c.rank
    times = []
    with cf.Session(graph=m["graph"], config={"comm": c}) as s:
        s.run(m["init"])
        s.run(m["bcast"])
        for k in range(xs.shape[0]):
            sl = slice(r * per_rank, (r + 1) * per_rank)
            t0 = time.perf_counter()
            m["opt"].run_step(s, m["loss"], {m["x"]: xs[k, sl], m["y"]: ys[k, sl], m["slow"]: delays(k, r)})
            times.append(time.perf_counter() - t0)
        vals = s.run(m["vars"])
        hist = m["opt"].quorum_history(s)
        m["opt"].close(s)
    return vals, hist, times


def _world_run(n, b, steps, delays, per_rank=3):
    """delays(step, rank) -> seconds; returns per rank (values, quorum history, step times)."""
    world = ThreadWorld(n, timeout=60)
    models = [_build(world.comm(r), b) for r in range(n)]
    xs, ys, _ = dp.data(steps, per_rank * n)
    return world.run(lambda c: train_rank(models[c.rank], c, xs, ys, delays, per_rank), timeout=120), xs, ys


def test_slow_rank_is_excluded_and_steps_do_not_wait_for_it():
    steps, n = 4, 3
    (res, xs, ys) = _world_run(n, 1, steps, lambda k, r: 1.5 if r == 2 else 0.0)
    for r in range(n):
        hist = res[r][1]
        assert [h["late"] for h in hist] == [[2]] * steps
        # nobody waited the 1.5 s the straggler would have taken
        assert max(res[r][2]) < 1.0, res[r][2]
    for r in range(1, n):
        for a, b in zip(res[r][0], res[0][0]):
            assert np.array_equal(a, b)
    # same as two ranks (0 and 1) on their data: one process with their rows
    m = dp.build("sgd", sync=False, init_seed=100)
    g = m["graph"]
    ref_vals = _two_rank_reference(xs, ys, steps)
    for a, b in zip(res[0][0], ref_vals):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _two_rank_reference(xs, ys, steps, per_rank=3):
    g = cf.Graph()
    with g.as_default():
        rng = np.random.default_rng(100)
        x = cf.placeholder(cf.float64, (None, dp.IN))
        y = cf.placeholder(cf.int32, (None,))
        w1 = cf.Variable(rng.normal(size=(dp.IN, dp.HID)) * 0.5)
        w2 = cf.Variable(rng.normal(size=(dp.HID, dp.OUT)) * 0.5)
        h = cf.nn.relu(cf.matmul(x, w1))
        loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=cf.matmul(h, w2)))
        train = cf.train.GradientDescentOptimizer(0.3).minimize(loss)
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        for k in range(steps):
            s.run(train, {x: xs[k, :2 * per_rank], y: ys[k, :2 * per_rank]})
        return s.run([w1, w2])


def test_b0_is_the_plain_synchronous_path():
    (res, xs, ys) = _world_run(3, 0, 3, lambda k, r: 0.0)
    ref = dp.train_single(dp.build("sgd", sync=False, init_seed=100), 3, 9) if False else None
    for r in range(1, 3):
        for a, b in zip(res[r][0], res[0][0]):
            assert np.array_equal(a, b)
    assert res[0][1] == []  # no quorum protocol ran
    m = _build(None, 0)
    assert "gate" not in " ".join(op.name for op in m["graph"].get_operations())


def test_no_hang_when_the_slow_rank_changes_every_step():
    steps, n = 6, 3
    (res, _, _) = _world_run(n, 1, steps, lambda k, r: 0.6 if r == k % n else 0.0)
    for r in range(n):
        late = [h["late"] for h in res[r][1]]
        assert late == [[k % n] for k in range(steps)], late
    for r in range(1, n):
        for a, b in zip(res[r][0], res[0][0]):
            assert np.array_equal(a, b)
