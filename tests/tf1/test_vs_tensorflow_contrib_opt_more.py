"""tf.contrib.opt's AdaMaxOptimizer, NadamOptimizer, AddSignOptimizer and PowerSignOptimizer
against TensorFlow's own update kernels: TF 2.x has no contrib.opt, so TF's side runs the
kernels TF 1.15's contrib optimizers call (ResourceApplyAdaMax, ResourceApplyAdam with
use_nesterov=True, ResourceApplyPowerSign, ResourceApplyAddSign) on tf.compat.v1 variables,
with the same gradients fed and the beta powers and sign decay fed as the kernels' inputs.

Sparse gradients: TF's kernel runs on the densified (duplicate-summed) gradient, which is
exactly TF 1.15's contrib sparse path for AddSign/PowerSign (every row of m decays; an
untouched row's var step is lr * ... * 0).  AdaMax's contrib sparse path is lazy and Nadam's
moves only the touched rows of var, so there the untouched rows the kernel changed are put
back (var, m, v for AdaMax; var for Nadam).  Variables and slots compared after every step.
Skipped cleanly without TensorFlow."""
import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
raw = tensorflow.raw_ops
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")

LR, B1, B2, EPS, BETA, ALPHA, BASE = 0.05, 0.8, 0.95, 1e-3, 0.7, 1.5, 3.0
STEPS, SHAPE = 5, (6, 3)
KINDS = ["adamax", "nadam", "addsign", "powersign"]


def _data(dtype):
    rng = np.random.RandomState(7)
    init = rng.randn(*SHAPE).astype(dtype)
    dense = [rng.randn(*SHAPE).astype(dtype) for _ in range(STEPS)]
    idx = [np.array([4, 1, 4, 0], np.int32), np.array([2, 2], np.int32), np.array([5, 0, 1], np.int32),
           np.array([1, 4, 1, 1], np.int32), np.array([3], np.int32)]
    vals = [rng.randn(len(i), SHAPE[1]).astype(dtype) for i in idx]
    return init, dense, idx, vals


def _slot_names(kind):
    return ["m", "v"] if kind in ("adamax", "nadam") else ["m"]


def _collflow(kind, dtype, sparse):
    """[(var, {slot: value})] after each step of collflow's optimizer."""
    init, dense, idx, vals = _data(dtype)
    out = []
    with cft.Graph().as_default():
        var = cft.get_variable("w", initializer=init)
        gs = cft.train.get_or_create_global_step()
        o = {"adamax": lambda: cft.contrib.opt.AdaMaxOptimizer(LR, B1, B2, EPS),
             "nadam": lambda: cft.contrib.opt.NadamOptimizer(LR, B1, B2, EPS),
             "addsign": lambda: cft.contrib.opt.AddSignOptimizer(
                 LR, ALPHA, BETA, sign_decay_fn=cft.contrib.opt.get_cosine_decay_fn(8)),
             "powersign": lambda: cft.contrib.opt.PowerSignOptimizer(
                 LR, BASE, BETA, sign_decay_fn=cft.contrib.opt.get_cosine_decay_fn(8))}[kind]()
        if sparse:
            vp, ip = cft.placeholder(dtype, [None, SHAPE[1]]), cft.placeholder(cft.int32, [None])
            grad = cft.IndexedSlices(vp, ip, cft.constant(list(SHAPE)))
        else:
            gp = cft.placeholder(dtype, SHAPE)
            grad = gp
        train = o.apply_gradients([(grad, var)], global_step=gs)
        slots = {n: o.get_slot(var, n) for n in _slot_names(kind)}
        with cft.Session() as s:
            s.run(cft.global_variables_initializer())
            for t in range(STEPS):
                s.run(train, {vp: vals[t], ip: idx[t]} if sparse else {gp: dense[t]})
                out.append(s.run((var, slots)))
    return out


def _tf(kind, dtype, sparse):
    """The same steps through TF's kernels (see the module docstring)."""
    init, dense, idx, vals = _data(dtype)
    tdt = tft.as_dtype(dtype)
    h = lambda x: dtype(np.float32(x))  # noqa: E731  (TF1: a float hyperparameter is float32, cast)
    out = []
    with tft.Graph().as_default():
        var = tft.Variable(init, name="w", use_resource=True)
        slots = {n: tft.Variable(np.zeros(SHAPE, dtype), name=n, use_resource=True) for n in _slot_names(kind)}
        p = {n: tft.placeholder(tdt, []) for n in ("b1p", "b2p", "decay")}
        if sparse:
            vp, ip = tft.placeholder(tdt, [None, SHAPE[1]]), tft.placeholder(tft.int32, [None])
            grad = tft.convert_to_tensor(tft.IndexedSlices(vp, ip, tft.constant(list(SHAPE))))  # sums duplicates
        else:
            gp = tft.placeholder(tdt, SHAPE)
            grad = gp
        c = lambda x: tft.constant(h(x), tdt)  # noqa: E731
        if kind == "adamax":
            op = raw.ResourceApplyAdaMax(var=var.handle, m=slots["m"].handle, v=slots["v"].handle,
                                         beta1_power=p["b1p"], lr=c(LR), beta1=c(B1), beta2=c(B2),
                                         epsilon=c(EPS), grad=grad)
        elif kind == "nadam":
            op = raw.ResourceApplyAdam(var=var.handle, m=slots["m"].handle, v=slots["v"].handle,
                                       beta1_power=p["b1p"], beta2_power=p["b2p"], lr=c(LR), beta1=c(B1),
                                       beta2=c(B2), epsilon=c(EPS), grad=grad, use_nesterov=True)
        elif kind == "addsign":
            op = raw.ResourceApplyAddSign(var=var.handle, m=slots["m"].handle, lr=c(LR), alpha=c(ALPHA),
                                          sign_decay=p["decay"], beta=c(BETA), grad=grad)
        else:
            op = raw.ResourceApplyPowerSign(var=var.handle, m=slots["m"].handle, lr=c(LR),
                                            logbase=c(math.log(BASE)), sign_decay=p["decay"], beta=c(BETA),
                                            grad=grad)
        restore = {"adamax": [var] + list(slots.values()), "nadam": [var]}.get(kind, []) if sparse else []
        fix = {v: tft.placeholder(tdt, SHAPE) for v in restore}
        assigns = [v.assign(fix[v]) for v in restore]
        b1p, b2p = np.float32(B1), np.float32(B2)  # the float32 powers of TF1's Adam/AdaMax
        with tft.Session() as s:
            s.run(tft.global_variables_initializer())
            for t in range(STEPS):
                old = s.run(restore)
                # get_cosine_decay_fn(8) at global_step t, in float32 as TF's decay ops
                frac = np.float32(t) / np.float32(8)
                decay = np.float32(0.5) * (np.float32(1) + np.cos(np.float32(math.pi) * frac, dtype=np.float32))
                feed = {p["b1p"]: dtype(b1p), p["b2p"]: dtype(b2p), p["decay"]: dtype(np.float32(decay))}
                feed.update({vp: vals[t], ip: idx[t]} if sparse else {gp: dense[t]})
                s.run(op, feed)
                if restore:  # contrib's sparse path leaves the untouched rows of these alone
                    touched = np.zeros(SHAPE[0], bool)
                    touched[idx[t]] = True
                    new = s.run(restore)
                    s.run(assigns, {fix[v]: np.where(touched[:, None], n, o) for v, n, o in zip(restore, new, old)})
                b1p, b2p = np.float32(b1p * np.float32(B1)), np.float32(b2p * np.float32(B2))
                out.append(s.run((var, slots)))
    return out


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", KINDS)
def test_matches_tf_kernels(kind, dtype, sparse):
    got, want = _collflow(kind, dtype, sparse), _tf(kind, dtype, sparse)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    for step, ((gv, gs), (wv, ws)) in enumerate(zip(got, want)):
        np.testing.assert_allclose(gv, wv, err_msg=f"var after step {step}", **tol)
        for n in ws:
            assert gs[n].dtype == ws[n].dtype
            np.testing.assert_allclose(gs[n], ws[n], err_msg=f"slot {n} after step {step}", **tol)


def _clip_run(tf, sparse, dims):
    """Three steps of VariableClippingOptimizer(GradientDescent) on an embedding; TF's side is
    TF 1.15's construction from TF's ops: the update, then var -= var - clip_by_norm(var)."""
    rng = np.random.RandomState(11)
    init = (3 * rng.randn(*SHAPE)).astype(np.float32)
    idx = [np.array([4, 1, 4], np.int32), np.array([0, 2], np.int32), np.array([5, 5, 3], np.int32)]
    vals = [(4 * rng.randn(len(i), SHAPE[1])).astype(np.float32) for i in idx]
    dense = [(4 * rng.randn(*SHAPE)).astype(np.float32) for _ in idx]
    out = []
    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=init, use_resource=True)
        vp, ip = tf.placeholder(tf.float32, [None, SHAPE[1]]), tf.placeholder(tf.int32, [None])
        grad = tf.IndexedSlices(vp, ip, tf.constant(list(SHAPE))) if sparse else vp
        sgd = tf.train.GradientDescentOptimizer(0.3)
        if tf is cft:
            train = cft.contrib.opt.VariableClippingOptimizer(sgd, {w: dims}, 2.0).apply_gradients([(grad, w)])
        else:
            up = sgd.apply_gradients([(grad, w)])
            with tf.control_dependencies([up]):
                if sparse and 0 not in dims:
                    rows, _ = tf.unique(ip)
                    sub = tf.gather(w.read_value(), rows)
                    train = tf.scatter_sub(w, rows, sub - tf.clip_by_norm(sub, 2.0, dims))
                else:
                    cur = w.read_value()
                    train = w.assign_sub(cur - tf.clip_by_norm(cur, 2.0, dims))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for t in range(len(idx)):
                s.run(train, {vp: vals[t], ip: idx[t]} if sparse else {vp: dense[t]})
                out.append(s.run(w))
    return out


@pytest.mark.parametrize("sparse,dims", [(False, [1]), (False, [0, 1]), (True, [1]), (True, [0])])
def test_variable_clipping_matches_tf(sparse, dims):
    for got, want in zip(_clip_run(cft, sparse, dims), _clip_run(tft, sparse, dims)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_moving_average_swapping_saver_restores_in_tf(tmp_path):
    """MovingAverageOptimizer's averages match TF's ExponentialMovingAverage run after the same
    update, and its swapping_saver's TF-format checkpoint gives TF's plain Saver the averages."""
    init = np.array([[1.0, -2.0], [0.5, 4.0]], np.float32)
    xs = np.random.RandomState(2).randn(4, 2).astype(np.float32)
    res = {}
    for tf in (cft, tft):
        with tf.Graph().as_default():
            w = tf.get_variable("w", initializer=init, use_resource=True)
            gs = tf.train.get_or_create_global_step()
            loss = tf.reduce_sum(tf.square(tf.matmul(tf.constant(xs), w) - 1.0))
            sgd = tf.train.GradientDescentOptimizer(0.05)
            if tf is cft:
                o = cft.contrib.opt.MovingAverageOptimizer(sgd, average_decay=0.9, num_updates=gs)
                train = o.minimize(loss, global_step=gs)
                avg = o._ema.average(w)
                saver = o.swapping_saver(checkpoint_format="tensorflow")
            else:
                ema = tft.train.ExponentialMovingAverage(0.9, num_updates=gs)
                up = sgd.minimize(loss, global_step=gs)
                with tft.control_dependencies([up]):
                    train = ema.apply([w])
                avg = ema.average(w)
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                for _ in range(4):
                    s.run(train)
                res[tf] = s.run([w, avg])
                if tf is cft:
                    path = saver.save(s, str(tmp_path / "avg"))
    for got, want in zip(res[cft], res[tft]):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    with tft.Graph().as_default():
        w = tft.get_variable("w", shape=[2, 2], use_resource=True)
        with tft.Session() as s:
            tft.train.Saver([w]).restore(s, path)
            np.testing.assert_allclose(s.run(w), res[tft][1], rtol=2e-5, atol=1e-6)
