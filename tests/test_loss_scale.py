"""Loss scaling (tf.train.experimental's MixedPrecisionLossScaleOptimizer and loss scales,
tf.contrib.mixed_precision's LossScaleOptimizer and managers), checked without TensorFlow:
the dynamic schedules over scripted finite/non-finite steps against a Python model of TF's
rules, skipped steps leaving variables, slots and global_step unchanged, bit-equality with
the unwrapped optimizer when nothing overflows (power-of-two scales are exact), float16
gradients that underflow without a scale and overflow with a too big one, variable names,
checkpoints, a strategy's replica context, and the errors."""
import logging

import numpy as np
import pytest

import collflow.compat.v1 as tf

INF, NAN = np.inf, np.nan
E = tf.train.experimental
C = np.array([1.0, -2.0, 0.5], np.float32)


def _dynamic_reference(finite_steps, init, period, mult):
    """TF's DynamicLossScale rules in Python: (scale, good_steps) after each step."""
    scale, good, out = np.float32(init), 0, []
    for finite in finite_steps:
        if finite:
            if good + 1 >= period:
                grown = np.float32(scale * np.float32(mult))
                scale = grown if np.isfinite(grown) else scale
                good = 0
            else:
                good += 1
        else:
            good, scale = 0, max(np.float32(scale / np.float32(mult)), np.float32(1.0))
        out.append((float(scale), good))
    return out


def _linear_program(opt_fn, mults, loss_scale=None, split=False):
    """loss = s * sum(C * w): the gradient is s * C; s = inf/NaN makes a step non-finite.
    Returns, after each step, {name: value} of every global variable."""
    with tf.Graph().as_default():
        w = tf.Variable([0.5, 1.0, -1.5], name="w")
        s = tf.placeholder(tf.float32, [])
        gs = tf.train.get_or_create_global_step()
        opt = opt_fn()
        if loss_scale is not None:
            opt = E.MixedPrecisionLossScaleOptimizer(opt, loss_scale() if callable(loss_scale) else loss_scale)
        loss = s * tf.reduce_sum(tf.constant(C) * w)
        if split:
            train = opt.apply_gradients(opt.compute_gradients(loss), global_step=gs)
        else:
            train = opt.minimize(loss, global_step=gs)
        gvars = tf.global_variables()
        out = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for m in mults:
                sess.run(train, {s: m})
                out.append(dict(zip([v.op.name for v in gvars], sess.run(gvars))))
        return out


def test_dynamic_schedule_and_skipped_sgd_steps():
    mults = [1, INF, 1, 1, 1, NAN, NAN, NAN, NAN, 1, 1, 1, 1, 1, 1, INF, 1, 1]
    got = _linear_program(lambda: tf.train.GradientDescentOptimizer(0.25), mults,
                          lambda: E.DynamicLossScale(initial_loss_scale=4, increment_period=3, multiplier=2))
    want = _dynamic_reference([np.isfinite(m) for m in mults], 4, 3, 2)
    applied = np.cumsum([np.isfinite(m) for m in mults])
    for k, (vals, (scale, good)) in enumerate(zip(got, want)):
        assert vals["current_loss_scale"] == scale, k
        assert vals["good_steps"] == good, k
        assert vals["global_step"] == applied[k], k   # skipped steps do not count
        np.testing.assert_allclose(vals["w"], np.array([0.5, 1.0, -1.5], np.float32) - 0.25 * applied[k] * C,
                                   rtol=1e-6, atol=1e-6)
    # the scale hit its floor of 1 and grew back
    assert min(s for s, _ in want) == 1.0 and want[-1][0] > 1.0


def test_scale_growth_that_would_overflow_is_not_taken():
    got = _linear_program(lambda: tf.train.GradientDescentOptimizer(1e-3), [1, 1],
                          lambda: E.DynamicLossScale(initial_loss_scale=2.0 ** 120, increment_period=1,
                                                     multiplier=2.0 ** 10))
    assert [v["current_loss_scale"] for v in got] == [2.0 ** 120, 2.0 ** 120]
    assert [v["good_steps"] for v in got] == [0, 0]
    assert [v["global_step"] for v in got] == [1, 2]


@pytest.mark.parametrize("opt_fn", [lambda: tf.train.MomentumOptimizer(0.1, 0.9),
                                    lambda: tf.train.AdamOptimizer(0.05),
                                    lambda: tf.train.RMSPropOptimizer(0.05)], ids=["momentum", "adam", "rmsprop"])
def test_skipped_steps_leave_variables_and_slots_unchanged(opt_fn):
    mults = [1, 2, INF, NAN, 1, INF]
    got = _linear_program(opt_fn, mults, "dynamic")
    for k in range(1, len(mults)):
        if np.isfinite(mults[k]):
            assert got[k]["global_step"] == got[k - 1]["global_step"] + 1
            assert not np.array_equal(got[k]["w"], got[k - 1]["w"])
            continue
        for name, v in got[k].items():
            if name in ("current_loss_scale", "good_steps"):
                continue
            np.testing.assert_array_equal(v, got[k - 1][name], err_msg=f"{name} changed on skipped step {k}")
        assert got[k]["current_loss_scale"] == got[k - 1]["current_loss_scale"] / 2
    assert {"w/Momentum", "beta1_power", "w/RMSProp"} & {n.split("cond_1/")[-1] for n in got[0]}


@pytest.mark.parametrize("opt_fn", [lambda: tf.train.GradientDescentOptimizer(0.1),
                                    lambda: tf.train.AdamOptimizer(0.05),
                                    lambda: tf.train.AdagradOptimizer(0.1)], ids=["sgd", "adam", "adagrad"])
@pytest.mark.parametrize("scale", [lambda: 1024, lambda: E.FixedLossScale(2.0 ** 12), lambda: "dynamic",
                                   lambda: E.DynamicLossScale(2.0 ** 5, increment_period=2)],
                         ids=["int", "fixed", "dynamic", "dynamic_growing"])
def test_equal_to_unwrapped_optimizer_without_overflow(opt_fn, scale):
    """Power-of-two scales multiply and divide exactly: bit-equal to the plain optimizer."""
    mults = [1.0, 0.5, 2.0, 1.5, 1.0]
    plain = _linear_program(opt_fn, mults)
    wrapped = _linear_program(opt_fn, mults, scale, split=True)
    for a, b in zip(wrapped, plain):
        np.testing.assert_array_equal(a["w"], b["w"])
        assert a["global_step"] == b["global_step"]


def _fp16_program(loss_scale, x_value, steps=1):
    """float32 variable, float16 compute: grad(w) = x (float16) times the scale."""
    with tf.Graph().as_default():
        w = tf.Variable([1.0, 2.0], name="w")
        x = tf.constant(np.array(x_value, np.float16))
        loss = tf.cast(tf.reduce_sum(tf.cast(w, tf.float16) * x), tf.float32)
        opt = tf.train.GradientDescentOptimizer(1.0)
        if loss_scale is not None:
            opt = E.MixedPrecisionLossScaleOptimizer(opt, loss_scale)
        gv = opt.compute_gradients(loss)
        train = opt.apply_gradients(gv)
        out = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                grad = sess.run(gv[0][0])
                sess.run(train)
                out.append((grad, sess.run(w)))
        return out


def test_float16_gradients_underflow_without_scaling():
    """d/dw of 1e-4 * sum(w * x) in float16 is 1e-4 * x ~ 1e-8: below float16's smallest
    subnormal (6e-8) it is 0; with the loss scaled by 2**15 it survives and is divided back."""
    with tf.Graph().as_default():
        w = tf.Variable([1.0, 2.0])
        x = tf.constant(np.array([1e-4, -2e-4], np.float16))
        loss = tf.cast(tf.reduce_sum(tf.cast(w, tf.float16) * x) * tf.constant(np.float16(1e-4)), tf.float32)
        plain = tf.train.GradientDescentOptimizer(1.0).compute_gradients(loss)[0][0]
        scaled = E.MixedPrecisionLossScaleOptimizer(tf.train.GradientDescentOptimizer(1.0), 2 ** 15) \
            .compute_gradients(loss)[0][0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            p, s = sess.run([plain, scaled])
    np.testing.assert_array_equal(p, [0.0, 0.0])
    np.testing.assert_allclose(s, [1e-8, -2e-8], rtol=2e-2)
    assert s.dtype == np.float32


def test_float16_gradients_overflow_and_the_dynamic_scale_backs_off():
    # x * scale > 65504 (float16's max) for scale >= 2**13 with x = 10
    out = _fp16_program("dynamic", [10.0, -3.0], steps=5)
    assert [bool(np.all(np.isfinite(g))) for g, _ in out] == [False, False, False, True, True]
    np.testing.assert_array_equal(out[2][1], [1.0, 2.0])     # nothing applied while overflowing
    np.testing.assert_allclose(out[3][1], [1.0 - 10.0, 2.0 + 3.0])
    # a fixed scale cannot back off: the overflow reaches the variable
    (_, w), = _fp16_program(2 ** 15, [10.0, -3.0])
    assert not np.all(np.isfinite(w))


def test_sparse_gradients_are_unscaled_and_checked():
    with tf.Graph().as_default():
        emb = tf.Variable(np.ones((4, 2), np.float32), name="emb")
        s = tf.placeholder(tf.float32, [])
        loss = s * tf.reduce_sum(tf.gather(emb, [1, 3]))
        opt = E.MixedPrecisionLossScaleOptimizer(tf.train.GradientDescentOptimizer(0.5),
                                                 E.DynamicLossScale(8, increment_period=10))
        gv = opt.compute_gradients(loss)
        assert isinstance(gv[0][0], tf.IndexedSlices)
        train = opt.apply_gradients(gv)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train, {s: 1.0})
            np.testing.assert_array_equal(sess.run(emb), [[1, 1], [0.5, 0.5], [1, 1], [0.5, 0.5]])
            sess.run(train, {s: INF})
            np.testing.assert_array_equal(sess.run(emb), [[1, 1], [0.5, 0.5], [1, 1], [0.5, 0.5]])
            assert sess.run(opt.loss_scale()) == 4.0


def test_names_variables_and_checkpoint(tmp_path):
    with tf.Graph().as_default():
        w = tf.Variable([1.0], name="w")
        gs = tf.train.get_or_create_global_step()
        opt = tf.mixed_precision.MixedPrecisionLossScaleOptimizer(tf.train.AdamOptimizer(0.1), "dynamic")
        train = opt.minimize(tf.reduce_sum(w * w), global_step=gs)
        assert train.name == "Adam"
        assert [v.name for v in tf.global_variables()] == [
            "w:0", "global_step:0", "current_loss_scale:0", "good_steps:0", "cond_1/beta1_power:0",
            "cond_1/beta2_power:0", "w/Adam:0", "w/Adam_1:0"]
        assert sorted(v.name for v in opt.variables()) == sorted(v.name for v in tf.global_variables()[2:])
        assert opt.get_slot_names() == [] and opt._optimizer.get_slot_names() == ["m", "v"]
        assert [op.name for op in tf.get_collection(tf.GraphKeys.TRAIN_OP)] == ["cond_1/Adam-wrapped"]
        assert [n for n, _ in opt._checkpoint_children()] == ["base_optimizer", "loss_scale"]
        assert [n for n, _ in opt.loss_scale._checkpoint_children()] == ["current_loss_scale", "good_steps"]
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(opt.loss_scale._current_loss_scale.assign(64.0))
            sess.run(opt.loss_scale._num_good_steps.assign(7))
            path = saver.save(sess, str(tmp_path / "model"))
    names = dict(tf.train.list_variables(path))
    assert names["current_loss_scale"] == [] and names["good_steps"] == []
    assert tf.train.load_variable(path, "current_loss_scale") == 64.0
    assert tf.train.load_variable(path, "good_steps") == 7


def test_fixed_scale_applies_every_step_and_names_the_step():
    with tf.Graph().as_default():
        w = tf.Variable([1.0, 2.0], name="w")
        opt = E.MixedPrecisionLossScaleOptimizer(tf.train.GradientDescentOptimizer(0.5), 16)
        with tf.name_scope("train"):
            step = opt.apply_gradients(opt.compute_gradients(tf.reduce_sum(w)), name="step")
        assert step.name == "train/step"
        assert opt.variables() == []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            np.testing.assert_array_equal(sess.run(w), [0.5, 1.5])


def test_in_a_strategy_replica_context():
    """One replica: a MirroredStrategy's replica function trains as the plain wrapper does."""
    mults = [1.0, INF, 2.0]
    want = _linear_program(lambda: tf.train.MomentumOptimizer(0.1, 0.9), mults,
                           lambda: E.DynamicLossScale(4, increment_period=2))
    with tf.Graph().as_default():
        strategy = tf.distribute.MirroredStrategy()
        with strategy.scope():
            w = tf.Variable([0.5, 1.0, -1.5], name="w")
            s = tf.placeholder(tf.float32, [])
            gs = tf.train.get_or_create_global_step()
            opt = E.MixedPrecisionLossScaleOptimizer(tf.train.MomentumOptimizer(0.1, 0.9),
                                                     E.DynamicLossScale(4, increment_period=2))
            with pytest.raises(ValueError, match="replica context"):
                opt.apply_gradients([(tf.ones([3]), w)])

            def step():
                return opt.minimize(s * tf.reduce_sum(tf.constant(C) * w), global_step=gs)
            train = strategy.experimental_run_v2(step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for k, m in enumerate(mults):
                sess.run(train, {s: m})
                np.testing.assert_allclose(sess.run(w), want[k]["w"], rtol=1e-6)
                assert sess.run(gs) == want[k]["global_step"]
                assert sess.run(opt.loss_scale()) == want[k]["current_loss_scale"]


def test_inside_sync_replicas_optimizer():
    """SyncReplicasOptimizer passes collflow's apply_gradients keywords through the wrapper."""
    mults = [1.0, INF, 2.0, NAN, 1.0]
    want = _linear_program(lambda: tf.train.GradientDescentOptimizer(0.5), mults, "dynamic")
    with tf.Graph().as_default():
        w = tf.Variable([0.5, 1.0, -1.5], name="w")
        s = tf.placeholder(tf.float32, [])
        gs = tf.train.get_or_create_global_step()
        inner = E.MixedPrecisionLossScaleOptimizer(tf.train.GradientDescentOptimizer(0.5), "dynamic")
        assert inner.folds_gradient_scale
        opt = tf.train.SyncReplicasOptimizer(inner, replicas_to_aggregate=1)
        train = opt.minimize(s * tf.reduce_sum(tf.constant(C) * w), global_step=gs)
        got = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for m in mults:
                sess.run(train, {s: m})
                got.append(sess.run([w, gs, inner.loss_scale()]))
    for (wv, step, scale), ref in zip(got, want):
        np.testing.assert_allclose(wv, ref["w"], rtol=1e-6)
        assert step == ref["global_step"] and scale == ref["current_loss_scale"]


def test_graph_rewrite_wraps_the_optimizer(caplog):
    from collflow.train import loss_scale as ls
    opt = tf.train.experimental.enable_mixed_precision_graph_rewrite(tf.train.GradientDescentOptimizer(0.1), 8)
    try:
        assert isinstance(opt, E.MixedPrecisionLossScaleOptimizer)
        assert isinstance(opt.loss_scale, E.FixedLossScale)
        assert ls.is_mixed_precision_graph_rewrite_enabled()
    finally:
        tf.mixed_precision.disable_mixed_precision_graph_rewrite()
    assert not ls.is_mixed_precision_graph_rewrite_enabled()
    with caplog.at_level(logging.WARNING):
        tf.train.experimental.disable_mixed_precision_graph_rewrite()
    assert "already disabled" in caplog.text


def test_errors():
    with tf.Graph().as_default():
        sgd = tf.train.GradientDescentOptimizer(0.1)
        for bad in (0.5, 0):
            with pytest.raises(ValueError, match="at least 1"):
                E.FixedLossScale(bad)
        with pytest.raises(ValueError, match="int or float"):
            E.FixedLossScale("8")
        with pytest.raises(TypeError, match="initial_loss_scale"):
            E.DynamicLossScale(initial_loss_scale="big")
        with pytest.raises(TypeError, match="increment_period"):
            E.DynamicLossScale(increment_period=None)
        with pytest.raises(ValueError, match="Could not interpret loss scale"):
            E.MixedPrecisionLossScaleOptimizer(sgd, "static")
        with pytest.raises(ValueError, match="cannot be None"):
            E.MixedPrecisionLossScaleOptimizer(sgd, None)
        with pytest.raises(ValueError, match="instance of Optimizer"):
            E.MixedPrecisionLossScaleOptimizer("sgd", 8)
        with pytest.raises(ValueError, match="must not already be"):
            E.enable_mixed_precision_graph_rewrite(E.MixedPrecisionLossScaleOptimizer(sgd, 8))
        with pytest.raises(ValueError, match="tf.train.Optimizer"):
            E.enable_mixed_precision_graph_rewrite(object())
        ls = E.DynamicLossScale()
        with pytest.raises(RuntimeError, match="Duplicate"):
            ls._add_weight("good_steps", 0, tf.int64)
        with pytest.raises(TypeError, match="abstract"):
            E.LossScale()
        opt = E.MixedPrecisionLossScaleOptimizer(sgd, ls)
        w = tf.Variable([1.0])
        with pytest.raises(TypeError, match="loss Tensor"):
            opt.compute_gradients(lambda: tf.reduce_sum(w))
        with pytest.raises(tf.errors.InvalidArgumentError, match="floating point"):
            opt.compute_gradients(tf.constant(3))
        with pytest.raises(ValueError, match="No variables provided"):
            opt.apply_gradients([])
        with pytest.raises(RuntimeError, match="wrapped optimizer"):
            opt._apply_dense(tf.ones([1]), w)


# -- tf.contrib.mixed_precision -----------------------------------------------------------------

def _exponential_reference(finite_steps, init, n_incr, n_decr, incr, decr):
    scale, good, bad, out = np.float32(init), 0, 0, []
    for finite in finite_steps:
        if finite:
            if good + 1 >= n_incr:
                grown = np.float32(scale * np.float32(incr))
                scale = grown if np.isfinite(grown) else scale
                good = bad = 0
            else:
                good += 1
        elif bad + 1 >= n_decr:
            scale, good, bad = max(np.float32(1.0), np.float32(scale * np.float32(decr))), 0, 0
        else:
            bad, good = bad + 1, 0
        out.append((float(scale), good, bad))
    return out


def test_contrib_exponential_manager_schedule():
    M = tf.contrib.mixed_precision
    mults = [1, 1, INF, 1, NAN, 1, 1, 1, INF, INF, INF, INF, 1, INF, INF, INF, INF, INF, INF, 1, 1, 1]
    with tf.Graph().as_default():
        w = tf.Variable([0.5, 1.0, -1.5], name="w")
        s = tf.placeholder(tf.float32, [])
        with tf.name_scope("mp"):
            mgr = M.ExponentialUpdateLossScaleManager(16, 3, decr_every_n_nan_or_inf=2, incr_ratio=2, decr_ratio=0.5)
        assert [v.op.name for v in tf.global_variables()][1:] == ["mp/loss_scale", "mp/good_steps", "mp/bad_steps"]
        opt = M.LossScaleOptimizer(tf.train.MomentumOptimizer(0.1, 0.9), mgr)
        train = opt.minimize(s * tf.reduce_sum(tf.constant(C) * w))
        mom = opt.get_slot(w, "momentum")
        want = _exponential_reference([np.isfinite(m) for m in mults], 16, 3, 2, 2, 0.5)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            prev = sess.run([w, mom])
            for k, m in enumerate(mults):
                sess.run(train, {s: m})
                assert tuple(sess.run([mgr._loss_scale, mgr._num_good_steps, mgr._num_bad_steps])) == want[k], k
                cur = sess.run([w, mom])
                if not np.isfinite(m):
                    np.testing.assert_array_equal(cur[0], prev[0])
                    np.testing.assert_array_equal(cur[1], prev[1])
                prev = cur
    assert min(s for s, _, _ in want) == 1.0


def test_contrib_fixed_manager_skips_non_finite_steps():
    M = tf.contrib.mixed_precision
    with tf.Graph().as_default():
        w = tf.Variable([0.5, 1.0, -1.5], name="w")
        s = tf.placeholder(tf.float32, [])
        gs = tf.train.get_or_create_global_step()
        opt = M.LossScaleOptimizer(tf.train.GradientDescentOptimizer(0.25), M.FixedLossScaleManager(128))
        train = opt.minimize(s * tf.reduce_sum(tf.constant(C) * w), global_step=gs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for m in (1.0, INF, NAN, 1.0):
                sess.run(train, {s: m})
            np.testing.assert_allclose(sess.run(w), np.array([0.5, 1.0, -1.5], np.float32) - 0.5 * C, rtol=1e-6)
            assert sess.run(gs) == 2
        with pytest.raises(ValueError, match="at least 1"):
            M.FixedLossScaleManager(0.5)
        with pytest.raises(TypeError, match="LossScaleManager"):
            M.LossScaleOptimizer(tf.train.GradientDescentOptimizer(0.1), 8)
