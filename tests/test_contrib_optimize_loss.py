"""tf.contrib.layers.optimize_loss: every step checked against a hand (NumPy) computation of
TF 1.15's documented behaviour (contrib/layers/python/layers/optimizers.py; TF2 has no
tf.contrib to compare with)."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

pytestmark = pytest.mark.timeout(120)

optimize_loss = tf.contrib.layers.optimize_loss

W0 = np.array([1.0, -2.0, 3.0], np.float32)
C = np.array([0.5, 1.5, -1.0], np.float32)


def _model():
    """w (3,) and b (); loss = sum(c * w^2) + 3 b^2: grads 2 c w and 6 b."""
    w = tf.get_variable("w", initializer=tf.constant(W0))
    b = tf.get_variable("b", initializer=tf.constant(0.5))
    loss = tf.reduce_sum(tf.constant(C) * w * w) + 3.0 * b * b
    return w, b, loss


def _grads(w, b):
    return 2 * C * w, 6 * b


def _tags():
    return {op.op.get_attr("tag"): op.op.type for op in tf.get_collection(tf.GraphKeys.SUMMARIES)}


def _run(train, steps, fetch):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(train)
        return sess.run(fetch)


def test_sgd_by_name_one_step_and_global_step():
    with tf.Graph().as_default():
        w, b, loss = _model()
        gs = tf.train.get_or_create_global_step()
        train = optimize_loss(loss, gs, learning_rate=0.1, optimizer="SGD")
        assert isinstance(train, tf.Tensor) and train.shape.rank == 0
        assert train.name.startswith("OptimizeLoss/control_dependency")
        lr = [v for v in tf.global_variables() if v.name == "OptimizeLoss/learning_rate:0"]
        assert len(lr) == 1 and lr[0] not in tf.trainable_variables()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert np.isclose(sess.run(lr[0]), 0.1)
            pre = float(np.sum(C * W0 * W0) + 0.75)
            val = sess.run(train)
            gw, gb = _grads(W0, 0.5)
            ew, eb = W0 - 0.1 * gw, 0.5 - 0.1 * gb
            post = float(np.sum(C * ew * ew) + 3 * eb * eb)
            assert np.isclose(val, pre) or np.isclose(val, post)   # the fetched value is the loss
            np.testing.assert_allclose(sess.run(w), ew, rtol=1e-6)
            assert np.isclose(sess.run(b), eb)
            assert sess.run(gs) == 1
            sess.run(train)
            assert sess.run(gs) == 2


def test_adam_by_name_two_steps():
    with tf.Graph().as_default():
        w, b, loss = _model()
        train = optimize_loss(loss, tf.train.get_or_create_global_step(), learning_rate=0.01, optimizer="Adam")
        got_w, got_b = _run(train, 2, [w, b])
    ew, eb = W0.astype(np.float64), 0.5
    m, v = [np.zeros(3), 0.0], [np.zeros(3), 0.0]
    b1, b2, eps = 0.9, 0.999, 1e-8
    for t in (1, 2):
        g = _grads(ew, eb)
        lr_t = 0.01 * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        params = [ew, eb]
        for i in range(2):
            m[i] = b1 * m[i] + (1 - b1) * g[i]
            v[i] = b2 * v[i] + (1 - b2) * g[i] ** 2
            params[i] = params[i] - lr_t * m[i] / (np.sqrt(v[i]) + eps)
        ew, eb = params
    np.testing.assert_allclose(got_w, ew, rtol=1e-5)
    assert np.isclose(got_b, eb, rtol=1e-5)


def _momentum(lr, mom, steps):
    ew, eb = W0.astype(np.float64), 0.5
    acc = [np.zeros(3), 0.0]
    for _ in range(steps):
        g = _grads(ew, eb)
        acc = [mom * acc[0] + g[0], mom * acc[1] + g[1]]
        ew, eb = ew - lr * acc[0], eb - lr * acc[1]
    return ew, eb


@pytest.mark.parametrize("how", ["name", "callable"])
def test_momentum(how):
    # "Momentum" by name is TF 1.15's fixed momentum=0.9; a callable picks its own
    with tf.Graph().as_default():
        w, b, loss = _model()
        opt = "Momentum" if how == "name" else (lambda lr: tf.train.MomentumOptimizer(lr, momentum=0.5))
        train = optimize_loss(loss, tf.train.get_or_create_global_step(), learning_rate=0.05, optimizer=opt)
        got_w, got_b = _run(train, 3, [w, b])
    ew, eb = _momentum(0.05, 0.9 if how == "name" else 0.5, 3)
    np.testing.assert_allclose(got_w, ew, rtol=1e-5)
    assert np.isclose(got_b, eb, rtol=1e-5)


def test_other_names_build_and_step():
    for name in ("Adagrad", "Ftrl", "RMSProp"):
        with tf.Graph().as_default():
            w, _, loss = _model()
            # only w: collflow's ApplyFtrl kernel fails on a 0-d variable (a kernel bug, not optimize_loss's)
            train = optimize_loss(loss, tf.train.get_or_create_global_step(), learning_rate=0.1, optimizer=name,
                                  variables=[w])
            assert not np.allclose(_run(train, 1, w), W0), name


def test_optimizer_class_instance_and_no_arg_callable():
    for kind in ("class", "instance", "noarg"):
        with tf.Graph().as_default():
            w, b, loss = _model()
            if kind == "class":
                train = optimize_loss(loss, None, 0.1, tf.train.GradientDescentOptimizer)
            elif kind == "instance":
                train = optimize_loss(loss, None, None, tf.train.GradientDescentOptimizer(0.1))
                assert not [v for v in tf.global_variables() if "learning_rate" in v.name]
            else:
                train = optimize_loss(loss, None, None, lambda: tf.train.GradientDescentOptimizer(0.1))
            got_w = _run(train, 1, w)
        np.testing.assert_allclose(got_w, W0 - 0.1 * _grads(W0, 0.5)[0], rtol=1e-6, err_msg=kind)


def test_tensor_learning_rate_is_used_as_is_and_name_scope():
    with tf.Graph().as_default():
        w, _, loss = _model()
        lr = tf.constant(0.2)
        train = optimize_loss(loss, None, lr, "SGD", name="Opt")
        assert not [v for v in tf.global_variables() if "learning_rate" in v.name]
        assert train.name.startswith("Opt/")
        np.testing.assert_allclose(_run(train, 1, w), W0 - 0.2 * _grads(W0, 0.5)[0], rtol=1e-6)
    with tf.Graph().as_default():
        _, _, loss = _model()
        optimize_loss(loss, None, 0.3, "SGD", name="Opt")
        assert "Opt/learning_rate:0" in [v.name for v in tf.global_variables()]


def test_learning_rate_decay_fn():
    with tf.Graph().as_default():
        w, b, loss = _model()
        gs = tf.train.get_or_create_global_step()
        seen = []

        def decay(lr, step):
            seen.append((lr, step))
            return tf.train.exponential_decay(lr, step, decay_steps=1, decay_rate=0.5)

        train = optimize_loss(loss, gs, 0.1, "SGD", learning_rate_decay_fn=decay)
        assert seen[0][0].name == "OptimizeLoss/learning_rate:0" and seen[0][1] is gs
        # written only for a decayed rate, as TF 1.15; its name scope "learning_rate" is taken by the
        # variable, so the tag is made unique as TF's name_scope makes it
        assert "OptimizeLoss/learning_rate_1" in _tags()
        got_w, got_b = _run(train, 3, [w, b])
    ew, eb = W0.astype(np.float64), 0.5
    for k in range(3):
        g = _grads(ew, eb)
        ew, eb = ew - 0.1 * 0.5 ** k * g[0], eb - 0.1 * 0.5 ** k * g[1]
    np.testing.assert_allclose(got_w, ew, rtol=1e-5)
    assert np.isclose(got_b, eb, rtol=1e-5)


def test_clip_gradients_by_global_norm():
    for clip in (1.0, 100.0):
        with tf.Graph().as_default():
            w, b, loss = _model()
            train = optimize_loss(loss, None, 0.1, "SGD", clip_gradients=clip)
            got_w, got_b = _run(train, 1, [w, b])
        gw, gb = _grads(W0.astype(np.float64), 0.5)
        norm = np.sqrt(np.sum(gw ** 2) + gb ** 2)
        scale = clip / max(norm, clip)
        assert (scale < 1.0) == (clip == 1.0)
        np.testing.assert_allclose(got_w, W0 - 0.1 * scale * gw, rtol=1e-5)
        assert np.isclose(got_b, 0.5 - 0.1 * scale * gb, rtol=1e-5)


def test_clip_gradients_callable():
    with tf.Graph().as_default():
        w, b, loss = _model()
        received = []

        def clip(gv):
            received.append(gv)
            return [(g * 2.0, v) for g, v in gv]

        train = optimize_loss(loss, None, 0.1, "SGD", clip_gradients=clip)
        assert [v for _, v in received[0]] == [w, b]
        got_w = _run(train, 1, w)
    np.testing.assert_allclose(got_w, W0 - 0.2 * _grads(W0, 0.5)[0], rtol=1e-6)


def test_gradient_multipliers_by_variable_and_name():
    for key in ("var", "name"):
        with tf.Graph().as_default():
            w, b, loss = _model()
            mult = {w: 3.0} if key == "var" else {"b:0": 0.0}
            train = optimize_loss(loss, None, 0.1, "SGD", gradient_multipliers=mult)
            got_w, got_b = _run(train, 1, [w, b])
        gw, gb = _grads(W0, 0.5)
        if key == "var":
            np.testing.assert_allclose(got_w, W0 - 0.3 * gw, rtol=1e-6)
            assert np.isclose(got_b, 0.5 - 0.1 * gb)
        else:
            np.testing.assert_allclose(got_w, W0 - 0.1 * gw, rtol=1e-6)
            assert got_b == 0.5


def test_gradient_noise():
    with tf.Graph().as_default():
        w, _, loss = _model()
        train = optimize_loss(loss, None, 0.1, "SGD", gradient_noise_scale=0.5, variables=[w])
        got_w = _run(train, 1, w)
    exact = W0 - 0.1 * _grads(W0, 0.5)[0]
    dev = np.abs(got_w - exact)
    assert np.all(dev <= 0.1 * 0.5 * 2.0 + 1e-5)    # truncated normal: within 2 stddev
    assert np.any(dev > 0)


def test_update_ops_run_with_the_train_op():
    for mode in ("collection", "explicit", "none"):
        with tf.Graph().as_default():
            _, _, loss = _model()
            counter = tf.get_variable("counter", initializer=tf.constant(0.0), trainable=False)
            bump = tf.assign_add(counter, 1.0)
            if mode == "collection":
                tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, bump)
                train = optimize_loss(loss, None, 0.1, "SGD")
            elif mode == "explicit":
                train = optimize_loss(loss, None, 0.1, "SGD", update_ops=[bump])
            else:
                tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, bump)
                train = optimize_loss(loss, None, 0.1, "SGD", update_ops=[])
            got = _run(train, 2, counter)
        assert got == (0.0 if mode == "none" else 2.0), mode


def test_global_step_handling():
    with tf.Graph().as_default():
        _, _, loss = _model()
        gs = tf.train.get_or_create_global_step()
        train = optimize_loss(loss, None, 0.1, "SGD")   # None: the graph's global step
        assert _run(train, 3, gs) == 3
    with tf.Graph().as_default():
        _, _, loss = _model()
        gs = tf.train.get_or_create_global_step()
        train = optimize_loss(loss, gs, 0.1, "SGD", increment_global_step=False)
        assert _run(train, 3, gs) == 0
    with tf.Graph().as_default():
        w, _, loss = _model()
        train = optimize_loss(loss, None, 0.1, "SGD")   # no global step anywhere: fine, none counted
        assert tf.train.get_global_step() is None
        assert not np.allclose(_run(train, 1, w), W0)


def test_variables_subset():
    with tf.Graph().as_default():
        w, b, loss = _model()
        train = optimize_loss(loss, None, 0.1, "SGD", variables=[b])
        got_w, got_b = _run(train, 1, [w, b])
    np.testing.assert_allclose(got_w, W0)
    assert np.isclose(got_b, 0.5 - 0.1 * 3.0)


def test_summaries_default_and_all():
    with tf.Graph().as_default():
        _, _, loss = _model()
        optimize_loss(loss, None, 0.1, "SGD")
        assert _tags() == {"OptimizeLoss/loss": "ScalarSummary",
                           "OptimizeLoss/global_norm/gradient_norm": "ScalarSummary"}
    with tf.Graph().as_default():
        _, _, loss = _model()
        gs = tf.train.get_or_create_global_step()
        train = optimize_loss(loss, gs, 0.1, "SGD", clip_gradients=1.0, summaries=[
            "learning_rate", "loss", "gradients", "gradient_norm", "global_gradient_norm"],
            learning_rate_decay_fn=lambda lr, step: lr * 1.0)
        assert _tags() == {
            "OptimizeLoss/learning_rate_1": "ScalarSummary", "OptimizeLoss/loss": "ScalarSummary",
            "OptimizeLoss/global_norm/gradient_norm": "ScalarSummary",
            "OptimizeLoss/global_norm/clipped_gradient_norm": "ScalarSummary",
            "OptimizeLoss/gradients/w_0": "HistogramSummary", "OptimizeLoss/gradients/b_0": "HistogramSummary",
            "OptimizeLoss/gradient_norm/w_0": "ScalarSummary", "OptimizeLoss/gradient_norm/b_0": "ScalarSummary"}
        merged = tf.summary.merge_all()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            raw = sess.run(merged)
            sess.run(train)
        values = {v.tag: v for v in tf.summary.Summary.FromString(raw).value}
        gw, gb = _grads(W0.astype(np.float64), 0.5)
        norm = np.sqrt(np.sum(gw ** 2) + gb ** 2)
        assert np.isclose(values["OptimizeLoss/global_norm/gradient_norm"].simple_value, norm, rtol=1e-5)
        assert np.isclose(values["OptimizeLoss/global_norm/clipped_gradient_norm"].simple_value, 1.0, rtol=1e-5)
        # per-variable norms are of the clipped gradients (TF writes them after clipping)
        assert np.isclose(values["OptimizeLoss/gradient_norm/b_0"].simple_value, 3.0 / norm, rtol=1e-5)
    with tf.Graph().as_default():
        _, _, loss = _model()
        optimize_loss(loss, None, 0.1, "SGD", summaries=[])
        assert _tags() == {}
    with tf.Graph().as_default():
        _, _, loss = _model()
        optimize_loss(loss, tf.train.get_or_create_global_step(), tf.constant(0.1), "SGD",
                      summaries=["learning_rate"], learning_rate_decay_fn=lambda lr, step: lr)
        assert _tags() == {"OptimizeLoss/learning_rate": "ScalarSummary"}   # no variable took the name


def test_errors():
    with tf.Graph().as_default():
        w, b, loss = _model()
        gs = tf.train.get_or_create_global_step()
        with pytest.raises(ValueError, match=r"Optimizer name should be one of \[Adagrad, Adam, Ftrl, Momentum, "
                                             r"RMSProp, SGD\], you provided Nope"):
            optimize_loss(loss, gs, 0.1, "Nope")
        with pytest.raises(ValueError, match="Learning rate is None, but should be specified if optimizer is string"):
            optimize_loss(loss, gs, None, "SGD")
        with pytest.raises(ValueError, match="Learning rate is None, but should be specified if optimizer is class"):
            optimize_loss(loss, gs, None, tf.train.AdamOptimizer)
        with pytest.raises(ValueError, match="Learning rate should be 0d Tensor or float"):
            optimize_loss(loss, gs, 1, "SGD", name="int_lr")
        with pytest.raises(ValueError, match="Learning rate should be 0d Tensor or float"):
            optimize_loss(loss, gs, tf.constant([0.1, 0.2]), "SGD")
        with pytest.raises(ValueError, match="Invalid learning_rate"):
            optimize_loss(loss, gs, -0.1, "SGD", name="neg_lr")
        with pytest.raises(ValueError, match="Summaries should be one of .* you provided weights"):
            optimize_loss(loss, gs, tf.constant(0.1), "SGD", summaries=["loss", "weights"])
        with pytest.raises(ValueError, match="Unrecognized optimizer: function should return subclass of Optimizer"):
            optimize_loss(loss, gs, tf.constant(0.1), lambda lr: "sgd")
        with pytest.raises(ValueError, match="Unrecognized optimizer: should be string"):
            optimize_loss(loss, gs, tf.constant(0.1), 5)
        with pytest.raises(ValueError, match="No variables to optimize"):
            optimize_loss(loss, gs, tf.constant(0.1), "SGD", variables=[])
        with pytest.raises(ValueError, match="Unknown type <class 'int'> for clip_gradients"):
            optimize_loss(loss, gs, tf.constant(0.1), "SGD", clip_gradients=5)
        with pytest.raises(ValueError, match="Expected scalar shape"):
            optimize_loss(tf.reduce_sum(w * w, keepdims=True), gs, tf.constant(0.1), "SGD")
        with pytest.raises(TypeError, match="global_step"):
            optimize_loss(loss, tf.constant(1.5), tf.constant(0.1), "SGD")

        class _NoGrads(tf.train.GradientDescentOptimizer):
            def compute_gradients(self, *args, **kwargs):
                return []

        with pytest.raises(ValueError, match=r"Empty list of \(gradient, var\) pairs encountered"):
            optimize_loss(loss, gs, tf.constant(0.1), _NoGrads(0.1), gradient_multipliers={})
    with tf.Graph().as_default():
        _, _, loss = _model()
        with pytest.raises(ValueError, match="global_step is required for learning_rate_decay_fn"):
            optimize_loss(loss, None, 0.1, "SGD", learning_rate_decay_fn=lambda lr, gs: lr)
    with tf.Graph().as_default():
        _, _, loss = _model()
        _ = tf.get_variable("unused", initializer=tf.constant(1.0))
        with pytest.raises(ValueError, match="No gradients provided for any variable"):
            optimize_loss(loss, None, 0.1, "SGD", variables=[_], summaries=[])
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        with pytest.raises(ValueError, match="No variables to optimize"):
            optimize_loss(loss, None, 0.1, "SGD")      # no trainable variables at all
