"""tf.contrib.opt's AdaMaxOptimizer, NadamOptimizer, AddSignOptimizer, PowerSignOptimizer and
the sign decay schedules: each step against a NumPy reference of TF's kernels' formulas (dense
and sparse gradients, float32 and float64), slot and non-slot variables, and a falling loss."""
import math

import numpy as np
import pytest

import collflow.compat.v1 as tf

opt = tf.contrib.opt

LR, B1, B2, EPS, BETA, ALPHA, BASE = 0.1, 0.8, 0.95, 1e-3, 0.7, 1.5, 3.0


def h(x, dt):
    # TF1: a Python-float hyperparameter is a float32 tensor cast to the variable's dtype
    return dt(np.float32(x))


def _decay(step):
    return 0.5 * (1.0 + math.cos(math.pi * min(step, 10) / 10.0))  # get_cosine_decay_fn(10)


class Ref:
    """NumPy state of one optimizer on one variable: TF's kernel formulas."""

    def __init__(self, kind, var, dt):
        self.kind, self.dt, self.var = kind, dt, var.copy()
        self.m, self.v = np.zeros_like(var), np.zeros_like(var)
        self.b1p, self.b2p = np.float32(B1), np.float32(B2)  # float32 powers, as TF1's Adam

    def step(self, rows, g, step):
        """rows None: dense g; else g holds the summed rows of `rows` (unique)."""
        dt, k = self.dt, self.kind
        lr, b1, b2, eps = h(LR, dt), h(B1, dt), h(B2, dt), h(EPS, dt)
        b1p, b2p = dt(self.b1p), dt(self.b2p)
        sel = slice(None) if rows is None else rows
        if k == "adamax":  # lazy on sparse rows
            m = self.m[sel] + (g - self.m[sel]) * (1 - b1)
            v = np.maximum(b2 * self.v[sel], np.abs(g))
            self.m[sel], self.v[sel] = m, v
            self.var[sel] -= lr / (1 - b1p) * (m / (v + eps))
            self.b1p = np.float32(self.b1p * np.float32(B1))
        elif k == "nadam":
            lr_t = lr * np.sqrt(1 - b2p) / (1 - b1p)
            gd = np.zeros_like(self.var)
            gd[sel] = g
            self.m += (gd - self.m) * (1 - b1)  # every row's moments decay
            self.v += (gd * gd - self.v) * (1 - b2)
            upd = (g * (1 - b1) + b1 * self.m[sel]) * lr_t / (np.sqrt(self.v[sel]) + eps)
            self.var[sel] -= upd  # only the touched rows move
            self.b1p = np.float32(self.b1p * np.float32(B1))
            self.b2p = np.float32(self.b2p * np.float32(B2))
        else:
            beta = h(BETA, dt)
            gd = np.zeros_like(self.var)
            gd[sel] = g
            self.m = self.m * beta + gd * (1 - beta)
            sgm = np.sign(g) * np.sign(self.m[sel])
            decay = dt(np.float32(_decay(step)))
            if k == "addsign":
                mult = h(ALPHA, dt) + decay * sgm
            else:
                mult = np.exp(h(math.log(BASE), dt) * decay * sgm)
            self.var[sel] -= lr * mult * g

    def slots(self):
        return {"m": self.m, "v": self.v} if self.kind in ("adamax", "nadam") else {"m": self.m}


def _make(kind):
    if kind == "adamax":
        return opt.AdaMaxOptimizer(LR, B1, B2, EPS)
    if kind == "nadam":
        return opt.NadamOptimizer(LR, B1, B2, EPS)
    fn = opt.get_cosine_decay_fn(10)
    if kind == "addsign":
        return opt.AddSignOptimizer(LR, alpha=ALPHA, beta=BETA, sign_decay_fn=fn)
    return opt.PowerSignOptimizer(LR, base=BASE, beta=BETA, sign_decay_fn=fn)


KINDS = ["adamax", "nadam", "addsign", "powersign"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sparse", [False, True])
def test_steps_match_numpy(kind, dtype, sparse):
    rng = np.random.RandomState(3)
    init = rng.randn(6, 3).astype(dtype)
    steps = 4
    grads = [rng.randn(6, 3).astype(dtype) for _ in range(steps)]
    idx = [np.array([4, 1, 4, 0], np.int32), np.array([2, 2], np.int32), np.array([5, 0, 1], np.int32),
           np.array([1, 4], np.int32)]
    vals = [rng.randn(len(i), 3).astype(dtype) for i in idx]
    ref = Ref(kind, init, dtype)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    with tf.Graph().as_default():
        var = tf.get_variable("w", initializer=init)
        gs = tf.train.get_or_create_global_step()
        o = _make(kind)
        if sparse:
            vp, ip = tf.placeholder(dtype, [None, 3]), tf.placeholder(tf.int32, [None])
            grad = tf.IndexedSlices(vp, ip, tf.constant([6, 3]))
        else:
            gp = tf.placeholder(dtype, [6, 3])
            grad = gp
        train = o.apply_gradients([(grad, var)], global_step=gs)
        names = sorted(o.get_slot_names())
        assert names == (["m", "v"] if kind in ("adamax", "nadam") else ["m"])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for t in range(steps):
                if sparse:
                    u, inv = np.unique(idx[t], return_inverse=True)
                    g = np.zeros((len(u), 3), dtype)
                    np.add.at(g, inv, vals[t])
                    ref.step(u, g, t)
                    s.run(train, {vp: vals[t], ip: idx[t]})
                else:
                    ref.step(None, grads[t], t)
                    s.run(train, {gp: grads[t]})
                np.testing.assert_allclose(s.run(var), ref.var, **tol)
                for n, want in ref.slots().items():
                    got = s.run(o.get_slot(var, n))
                    assert got.dtype == dtype
                    np.testing.assert_allclose(got, want, **tol)


@pytest.mark.parametrize("kind", KINDS)
def test_loss_falls_and_variables(kind):
    with tf.Graph().as_default():
        x = tf.get_variable("x", initializer=np.array([1.0, -2.0, 3.0], np.float32))
        emb = tf.get_variable("emb", initializer=np.ones((4, 2), np.float32))
        gs = tf.train.get_or_create_global_step()
        loss = tf.reduce_sum(tf.square(x - 0.5)) + tf.reduce_sum(tf.square(tf.gather(emb, [0, 2, 2]) - 0.2))
        o = _make(kind)
        train = o.minimize(loss, global_step=gs)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run(loss)
            for _ in range(30):
                s.run(train)
            assert s.run(loss) < 0.5 * first
            names = [v.op.name for v in o.variables()]
            # untouched embedding rows keep their values under a lazy (AdaMax) or row-only update
            np.testing.assert_array_equal(s.run(emb)[[1, 3]], np.ones((2, 2), np.float32))
    slot = {"adamax": "AdaMax", "nadam": "Adam", "addsign": "AddSignOptimizer",
            "powersign": "PowerSignOptimizer"}[kind]
    expect = {"emb/" + slot, "x/" + slot}
    if kind in ("adamax", "nadam"):
        expect |= {"emb/" + slot + "_1", "x/" + slot + "_1", "beta1_power"}
    if kind == "nadam":
        expect.add("beta2_power")
    assert set(names) == expect


def test_adamax_has_only_beta1_power():
    with tf.Graph().as_default():
        x = tf.get_variable("x", initializer=np.ones(2, np.float64))
        o = opt.AdaMaxOptimizer()
        o.minimize(tf.reduce_sum(x * x))
        b1p = o._get_beta_accumulators()
        assert b1p.op.name == "beta1_power" and b1p.dtype == tf.float32
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            assert s.run(b1p) == np.float32(0.9)


def test_defaults():
    a = opt.AddSignOptimizer()
    assert (a._learning_rate, a._alpha, a._beta, a._sign_decay_fn, a.get_name()) == \
        (0.1, 1.0, 0.9, None, "AddSignOptimizer")
    p = opt.PowerSignOptimizer()
    assert (p._learning_rate, p._base, p._beta, p.get_name()) == (0.1, math.e, 0.9, "PowerSignOptimizer")
    for o, name in ((opt.AdaMaxOptimizer(), "AdaMax"), (opt.NadamOptimizer(), "Adam")):
        assert (o._learning_rate, o._beta1, o._beta2, o._epsilon, o.get_name()) == (0.001, 0.9, 0.999, 1e-8, name)


def _eval_fn(fn, steps):
    with tf.Graph().as_default():
        step = tf.placeholder(tf.int64, [])
        out = fn(step)
        with tf.Session() as s:
            return [float(s.run(out, {step: t})) for t in steps]


def test_decay_functions():
    steps = [0, 1, 3, 5, 10, 12]
    want = [max(0.0, (10 - min(t, 10)) / 10) for t in steps]
    np.testing.assert_allclose(_eval_fn(opt.get_linear_decay_fn(10), steps), want, atol=1e-6)

    def cosine(t, periods, zero_after=None):
        f = 2 * periods * min(t, 10) / 10
        return 0.0 if zero_after is not None and f >= 2 * zero_after else 0.5 * (1 + math.cos(math.pi * f))
    for periods, za in ((0.5, None), (2, None), (1.5, 0.5)):
        np.testing.assert_allclose(_eval_fn(opt.get_cosine_decay_fn(10, periods, za), steps),
                                   [cosine(t, periods, za) for t in steps], atol=1e-6)

    def restart(t, periods, zero_after=None):
        t = min(t, 10)
        if zero_after is not None and periods * t / 10 >= zero_after:
            return 0.0
        return 0.5 * (1 + math.cos(math.pi * ((periods * t) % 10) / 10))
    for periods, za in ((1, None), (3, None), (2, 1.0)):
        np.testing.assert_allclose(_eval_fn(opt.get_restart_decay_fn(10, periods, za), steps),
                                   [restart(t, periods, za) for t in steps], atol=1e-6)
    with pytest.raises(ValueError):
        opt.get_linear_decay_fn(10)(None)


def test_sign_decay_needs_global_step():
    with tf.Graph().as_default():
        x = tf.get_variable("x", initializer=np.ones(2, np.float32))
        o = opt.PowerSignOptimizer(sign_decay_fn=opt.get_linear_decay_fn(5))
        with pytest.raises(ValueError, match="global_step"):
            o.minimize(tf.reduce_sum(x * x))


def _clip_rows(x, n, axis):
    norm = np.sqrt((x * x).sum(axis=axis, keepdims=True))
    return x * n / np.maximum(norm, n)


@pytest.mark.parametrize("sparse,dims", [(False, [1]), (False, [0, 1]), (True, [1]), (True, [0])])
def test_variable_clipping(sparse, dims):
    rng = np.random.RandomState(5)
    init = (3 * rng.randn(5, 4)).astype(np.float32)
    idx = np.array([3, 0, 3], np.int32)
    vals = (5 * rng.randn(3, 4)).astype(np.float32)
    dense = (5 * rng.randn(5, 4)).astype(np.float32)
    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=init)
        o = opt.VariableClippingOptimizer(tf.train.GradientDescentOptimizer(0.5), {w: dims}, 2.0)
        grad = tf.IndexedSlices(tf.constant(vals), tf.constant(idx), tf.constant([5, 4])) if sparse \
            else tf.constant(dense)
        train = o.apply_gradients([(grad, w)])
        assert train.name.startswith("VariableClipping")
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(train)
            got = s.run(w)
    want = init.copy()
    if sparse:
        np.subtract.at(want, idx, 0.5 * vals)
    else:
        want -= 0.5 * dense
    axis = tuple(dims)
    if sparse and 0 not in dims:
        rows = np.unique(idx)  # only the touched rows are clipped, each once
        want[rows] = _clip_rows(want[rows], 2.0, axis)
    else:
        want = _clip_rows(want, 2.0, axis)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    clipped = got[np.unique(idx)] if sparse and 0 not in dims else got
    assert np.all(np.sqrt((clipped * clipped).sum(axis=axis)) <= 2.0 + 1e-5)


def test_moving_average_optimizer_and_swapping_saver(tmp_path):
    init = np.array([1.0, -2.0], np.float32)
    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=init)
        b = tf.get_variable("b", initializer=np.float32(0.5), trainable=False)
        loss = tf.reduce_sum(tf.square(w - 3.0))
        o = opt.MovingAverageOptimizer(tf.train.GradientDescentOptimizer(0.1), average_decay=0.5)
        train = o.minimize(loss)
        assert train.name.startswith("train_with_avg")
        avg = o._ema.average(w)
        assert avg.op.name == "w/ExponentialMovingAverage"
        saver = o.swapping_saver()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            x, a = init.astype(np.float64), init.astype(np.float64)
            for _ in range(3):
                s.run(train)
                x = x - 0.1 * 2 * (x - 3.0)
                a = a - (a - x) * 0.5  # the average reads the updated variable
            np.testing.assert_allclose(s.run(w), x, rtol=1e-6)
            np.testing.assert_allclose(s.run(avg), a, rtol=1e-6)
            path = saver.save(s, str(tmp_path / "ckpt"))
    with tf.Graph().as_default():  # a plain model restores the averages as its weights
        w = tf.get_variable("w", initializer=np.zeros(2, np.float32))
        b = tf.get_variable("b", initializer=np.float32(0.0))
        with tf.Session() as s:
            tf.train.Saver([w, b]).restore(s, path)
            np.testing.assert_allclose(s.run(w), a, rtol=1e-6)
            assert s.run(b) == np.float32(0.5)
    with pytest.raises(RuntimeError):
        opt.MovingAverageOptimizer(tf.train.GradientDescentOptimizer(0.1)).swapping_saver()
