"""The model and per-rank training loop of the backup-rank tests (tests/test_backup_two_worlds.py:
exclusion, no hangs, b=0, on thread ranks and under mpiexec)."""
import time

import numpy as np

import collflow as cf
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
