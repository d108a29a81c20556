"""Loss scaling (tf.train.experimental / tf.mixed_precision) against TensorFlow's compat.v1 graph
mode with TF 1.x's control flow: the same training programs (dense, sparse and float16 models;
SGD, Momentum, Adam; Fixed and Dynamic loss scales, the wrapper made directly, through
enable_mixed_precision_graph_rewrite and through tf.mixed_precision) run for a scripted list of
steps, some with inf/NaN gradients.  After every step all global variables (model, slots,
beta powers, current_loss_scale, good_steps, global_step) are compared, and so are the
variables' names and the train-op collection.  Skipped cleanly without TensorFlow."""
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
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]

INF, NAN = np.inf, np.nan


@pytest.fixture(autouse=True)
def tf1_control_flow():
    """TF 1.15's conds (collflow's), so variables made in a cond branch are named as TF 1.15 names them."""
    was_v2 = tft.control_flow_v2_enabled()
    tft.disable_control_flow_v2()
    yield
    if was_v2:
        tft.enable_control_flow_v2()


def _model(tf, kind):
    """(loss, {feed name: placeholder}); scale multiplies the loss so a step can make it inf/NaN."""
    scale = tf.placeholder(tf.float32, [], name="s")
    if kind == "dense":
        x = tf.placeholder(tf.float32, [4, 2], name="x")
        w = tf.Variable([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], name="w")
        b = tf.Variable([0.1, 0.2, 0.3], name="b")
        loss = scale * tf.reduce_mean(tf.square(tf.matmul(x, w) + b - 1.0))
        return loss, {"x": x, "s": scale}
    if kind == "sparse":
        ids = tf.placeholder(tf.int32, [3], name="ids")
        emb = tf.Variable(np.arange(10, dtype=np.float32).reshape(5, 2) / 10.0, name="emb")
        v = tf.Variable([1.0, -1.0], name="v")
        loss = scale * tf.reduce_sum(tf.square(tf.gather(emb, ids) * v - 0.5))
        return loss, {"ids": ids, "s": scale}
    # float16 compute on float32 variables: a big loss scale overflows the float16 gradients
    x = tf.placeholder(tf.float32, [3], name="x")
    w = tf.Variable([0.5, -0.25, 1.0], name="w")
    y = tf.reduce_sum(tf.cast(w, tf.float16) * tf.cast(x, tf.float16))
    return scale * tf.cast(y, tf.float32), {"x": x, "s": scale}


def _optimizer(tf, name):
    return {"sgd": lambda: tf.train.GradientDescentOptimizer(0.1),
            "momentum": lambda: tf.train.MomentumOptimizer(0.05, 0.9),
            "adam": lambda: tf.train.AdamOptimizer(0.01)}[name]()


def _wrap(tf, opt, how):
    E = tf.train.experimental
    if how == "fixed":
        return E.MixedPrecisionLossScaleOptimizer(opt, E.FixedLossScale(8))
    if how == "fixed_int":
        return E.MixedPrecisionLossScaleOptimizer(opt, 128)
    if how == "dynamic":
        return E.MixedPrecisionLossScaleOptimizer(opt, E.DynamicLossScale(initial_loss_scale=4, increment_period=2))
    if how == "dynamic3":
        ls = tf.mixed_precision.DynamicLossScale(initial_loss_scale=8, increment_period=3, multiplier=4.)
        return tf.mixed_precision.MixedPrecisionLossScaleOptimizer(opt, ls)
    if how == "default":  # DynamicLossScale() through the "rewrite"
        try:
            return E.enable_mixed_precision_graph_rewrite(opt)
        finally:
            E.disable_mixed_precision_graph_rewrite()
    raise AssertionError(how)


def _feeds(kind, steps):
    out = []
    for k, s in enumerate(steps):
        if kind == "dense":
            x = np.array([[1.0, 2.0], [0.5, -1.0], [-2.0, 1.0], [3.0, 0.5]], np.float32) * (1 + 0.1 * k)
            out.append({"x": x, "s": np.float32(s)})
        elif kind == "sparse":
            out.append({"ids": np.array([k % 5, (2 * k + 1) % 5, k % 5], np.int32), "s": np.float32(s)})
        else:
            out.append({"x": np.array([10.0, -3.0, 0.5], np.float32) * (1 + 0.05 * k), "s": np.float32(s)})
    return out


def _run(tf, kind, opt_name, how, steps, split):
    with tf.Graph().as_default():
        loss, ph = _model(tf, kind)
        gs = tf.train.get_or_create_global_step()
        opt = _wrap(tf, _optimizer(tf, opt_name), how)
        if split:  # compute_gradients + apply_gradients with a name, under a name scope
            with tf.name_scope("train"):
                gv = opt.compute_gradients(loss)
                train = opt.apply_gradients(gv, global_step=gs, name="step")
        else:
            train = opt.minimize(loss, global_step=gs)
        gvars = tf.global_variables()
        names = [v.name for v in gvars]
        info = dict(names=names, opt_vars=sorted(v.name for v in opt.variables()), train=train.name,
                    train_ops=[op.name for op in tf.get_collection(tf.GraphKeys.TRAIN_OP)],
                    slots=opt.get_slot_names())
        values = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for feed in _feeds(kind, steps):
                sess.run(train, {ph[k]: v for k, v in feed.items()})
                values.append(sess.run(gvars))
        return info, values


# (model, optimizer, loss scale, loss multipliers per step, compute/apply separately)
CASES = [
    ("dense", "sgd", "fixed", [1, 2, 1, INF], False),
    ("dense", "momentum", "fixed_int", [1, 1, NAN], True),
    ("dense", "sgd", "dynamic", [1, INF, 1, 1, 1, NAN, 1, 1, INF, INF, INF, 1], False),
    ("dense", "momentum", "dynamic", [1, 1, INF, 1, 1, 1, NAN, 1], True),
    ("dense", "adam", "dynamic", [1, INF, 1, 1, 1, 1, NAN, 1, 1], False),
    ("dense", "adam", "dynamic3", [1, 1, 1, INF, 1, 1, 1, 1], True),
    ("sparse", "sgd", "dynamic", [1, INF, 1, 1, 1, NAN, 1], False),
    ("sparse", "adam", "dynamic", [1, 1, INF, 1, 1, 1], False),
    ("sparse", "momentum", "fixed", [1, 1, 1], False),
    ("fp16", "sgd", "default", [1, 1, 1, 1, 1, 1], False),
    ("fp16", "adam", "default", [1, 1, 1, 1, 1], True),
    ("fp16", "momentum", "dynamic", [1, INF, 1, 1, 1], False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c[:3])) + ("-split" if c[4] else ""))
def test_training_matches_tensorflow(case):
    kind, opt_name, how, steps, split = case
    want_info, want = _run(tft, kind, opt_name, how, steps, split)
    got_info, got = _run(cft, kind, opt_name, how, steps, split)
    assert got_info == want_info
    for k, (a_step, b_step) in enumerate(zip(got, want)):
        for name, a, b in zip(want_info["names"], a_step, b_step):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-6, equal_nan=True,
                                       err_msg=f"{case}: {name} after step {k}")


def test_fp16_overflow_is_skipped_in_both():
    """The default scale 2**15 overflows the float16 gradients (x * scale > 65504) until it is 4096."""
    _, want = _run(tft, "fp16", "sgd", "default", [1, 1, 1, 1], False)
    _, got = _run(cft, "fp16", "sgd", "default", [1, 1, 1, 1], False)
    for vals in (want, got):
        # [w, global_step, current_loss_scale, good_steps] after each step
        assert [int(v[1]) for v in vals] == [0, 0, 0, 1]
        assert [float(v[2]) for v in vals] == [16384.0, 8192.0, 4096.0, 4096.0]
        np.testing.assert_array_equal(vals[2][0], [0.5, -0.25, 1.0])


def test_namespaces_match_tensorflow():
    for path in ("train.experimental", "mixed_precision", "mixed_precision.experimental"):
        t, c = tft, cft
        for part in path.split("."):
            t, c = getattr(t, part), getattr(c, part)
        want = {n for n in dir(t) if not n.startswith("_") and ("LossScale" in n or "mixed_precision" in n
                                                                or n == "experimental")}
        assert want <= set(dir(c)), (path, want - set(dir(c)))


def test_loss_scale_config_and_errors_match_tensorflow():
    for tf in (tft, cft):
        with tf.Graph().as_default():
            E = tf.train.experimental
            d = E.DynamicLossScale(initial_loss_scale=16, increment_period=5, multiplier=3)
            assert d.get_config() == {"initial_loss_scale": 16.0, "increment_period": 5, "multiplier": 3.0}
            assert E.FixedLossScale(3).get_config() == {"loss_scale_value": 3.0}
            assert repr(E.FixedLossScale(3)) == "FixedLossScale(3.0)"
            with pytest.raises(ValueError):
                E.FixedLossScale(0.5)
            with pytest.raises(ValueError):
                E.MixedPrecisionLossScaleOptimizer(tf.train.GradientDescentOptimizer(0.1), "static")
            with pytest.raises(ValueError):
                E.MixedPrecisionLossScaleOptimizer(tf.train.GradientDescentOptimizer(0.1), None)
            with pytest.raises(ValueError):
                E.MixedPrecisionLossScaleOptimizer("sgd", 8)
            wrapped = E.MixedPrecisionLossScaleOptimizer(tf.train.GradientDescentOptimizer(0.1), 8)
            assert wrapped.get_name() == "GradientDescent"
            with pytest.raises(ValueError):
                E.enable_mixed_precision_graph_rewrite(wrapped)


def _checkpoint_program(tf, path, restore_from=None):
    """Adam + DynamicLossScale on the dense model: TF trains 4 steps and saves (name-based and
    object-based); collflow restores TF's name-based file instead.  Both then take 3 more steps."""
    with tf.Graph().as_default():
        loss, ph = _model(tf, "dense")
        gs = tf.train.get_or_create_global_step()
        opt = _wrap(tf, _optimizer(tf, "adam"), "dynamic")
        train = opt.minimize(loss, global_step=gs)
        gvars = tf.global_variables()
        saver = tf.train.Saver()
        ck = tf.train.Checkpoint(optimizer=opt, step=gs)
        feeds = _feeds("dense", [1, INF, 1, 1, 1, NAN, 1])
        out = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            if restore_from is None:
                for feed in feeds[:4]:
                    sess.run(train, {ph[k]: v for k, v in feed.items()})
                saver.save(sess, path + "/model")
                obj = ck.save(path + "/obj", session=sess)
            else:
                saver.restore(sess, restore_from + "/model")
                obj = ck.save(path + "/obj", session=sess)
            for feed in feeds[4:]:
                sess.run(train, {ph[k]: v for k, v in feed.items()})
                out.append(sess.run(gvars))
        return out, sorted(n for n, _ in tf.train.list_variables(obj))


def test_tensorflow_checkpoint_restores_and_object_keys_match(tmp_path):
    (tmp_path / "tf").mkdir()
    (tmp_path / "cf").mkdir()
    want, want_keys = _checkpoint_program(tft, str(tmp_path / "tf"))
    got, got_keys = _checkpoint_program(cft, str(tmp_path / "cf"), restore_from=str(tmp_path / "tf"))
    assert got_keys == want_keys
    assert "optimizer/loss_scale/current_loss_scale/.ATTRIBUTES/VARIABLE_VALUE" in got_keys
    for a_step, b_step in zip(got, want):
        for a, b in zip(a_step, b_step):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-6)
