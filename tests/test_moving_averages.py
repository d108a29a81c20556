"""tf.train.ExponentialMovingAverage (collflow/train/moving_averages.py): shadow values against
the formula, TF1's names, num_updates, zero-debiased tensor averages, and restoring averaged
weights into a model's variables with a Saver (the CIFAR-10 tutorial's evaluation); against
TensorFlow where it is installed."""
import os

import numpy as np
import pytest

import collflow as cf


def _program(decay=0.9, num_updates=False, zero_debias=False, tf=cf):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4, 3])
        y = tf.placeholder(tf.float32, [4, 2])
        w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) * 0.1, name="w")
        b = tf.Variable(np.zeros(2, np.float32), name="b")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        gs = tf.train.get_or_create_global_step()
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
        ema = tf.train.ExponentialMovingAverage(decay, num_updates=gs if num_updates else None,
                                                zero_debias=zero_debias)
        with tf.control_dependencies([train]):
            step = ema.apply([w, b, loss])
        init = tf.global_variables_initializer()
    return dict(g=g, x=x, y=y, w=w, b=b, loss=loss, gs=gs, step=step, init=init, ema=ema)


def _steps(m, n=4, tf=cf):
    rng = np.random.default_rng(0)
    s = tf.Session(graph=m["g"])
    s.run(m["init"])
    out = []
    for _ in range(n):
        feed = {m["x"]: rng.normal(size=(4, 3)).astype(np.float32), m["y"]: rng.normal(size=(4, 2)).astype(np.float32)}
        w0, b0, l0 = s.run([m["w"], m["b"], m["loss"]], feed)   # before the step: what apply() averages
        s.run(m["step"], feed)
        w1, b1 = s.run([m["w"], m["b"]])
        avg = s.run([m["ema"].average(m["w"]), m["ema"].average(m["b"]), m["ema"].average(m["loss"])])
        out.append(((w1, b1, l0), avg))
    return s, out


@pytest.mark.parametrize("num_updates", [False, True])
def test_shadows_follow_the_formula_and_carry_tf1_names(num_updates):
    m = _program(num_updates=num_updates)
    ema = m["ema"]
    assert ema.average(m["w"]).op.name == "w/ExponentialMovingAverage" == ema.average_name(m["w"])
    assert ema.average(m["loss"]).op.name == "Mean/ExponentialMovingAverage"
    assert not ema.average(m["w"]).trainable
    assert m["w"] in m["g"].get_collection(cf.GraphKeys.MOVING_AVERAGE_VARIABLES)
    _, out = _steps(m)
    sw, sb, sl = np.arange(6, dtype=np.float64).reshape(3, 2) * 0.1, np.zeros(2), 0.0
    for k, ((w1, b1, l0), (aw, ab, al)) in enumerate(out):
        d = min(0.9, (1.0 + (k + 1)) / (10.0 + (k + 1))) if num_updates else 0.9
        # the update runs after the training step: it averages the new weights, and the loss
        # of the batch (the tensor's value in that run)
        sw, sb, sl = sw - (sw - w1) * (1 - d), sb - (sb - b1) * (1 - d), sl - (sl - l0) * (1 - d)
        np.testing.assert_allclose(aw, sw, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ab, sb, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(al, sl, rtol=1e-5, atol=1e-6)


def test_zero_debiased_tensor_average_is_the_plain_mean_at_first():
    m = _program(decay=0.5, zero_debias=True)
    _, out = _steps(m, n=3)
    losses = [o[0][2] for o in out]
    biased = 0.0
    for t, (_, (_, _, al)) in enumerate(out, start=1):
        biased = biased - (biased - losses[t - 1]) * 0.5
        np.testing.assert_allclose(al, biased / (1 - 0.5 ** t), rtol=1e-5)
    np.testing.assert_allclose(out[0][1][2], losses[0], rtol=1e-6)   # step 1: exactly the value


def test_averaged_weights_restore_into_the_models_variables(tmp_path):
    m = _program()
    s, out = _steps(m, n=3)
    with m["g"].as_default():
        saver = cf.train.Saver()
    path = saver.save(s, os.path.join(str(tmp_path), "model.ckpt"))
    aw, ab = out[-1][1][0], out[-1][1][1]
    # evaluation: a fresh model whose variables are loaded from the shadows' names
    e = _program()
    with e["g"].as_default():
        restore = e["ema"].variables_to_restore()
        assert restore["w/ExponentialMovingAverage"] is e["w"] and restore["b/ExponentialMovingAverage"] is e["b"]
        assert restore["global_step"] is e["gs"]
        sess = cf.Session(graph=e["g"])
        cf.train.Saver(restore).restore(sess, path)
    np.testing.assert_allclose(sess.run(e["w"]), aw, rtol=1e-6)
    np.testing.assert_allclose(sess.run(e["b"]), ab, rtol=1e-6)


def test_bad_arguments():
    g = cf.Graph()
    with g.as_default():
        ema = cf.train.ExponentialMovingAverage(0.99)
        with pytest.raises(TypeError, match="half, float, or double"):
            ema.apply([cf.Variable(np.zeros(2, np.int32))])
        with pytest.raises(TypeError, match="not a Variable or a Tensor"):
            ema.apply([np.zeros(2)])


def test_against_tensorflow():
    tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
    tft = tensorflow.compat.v1
    tft.disable_eager_execution()
    for zd in (False, True):
        for nu in (False, True):
            got, want = _program(num_updates=nu, zero_debias=zd), _program(num_updates=nu, zero_debias=zd, tf=tft)
            names = [sorted(v.op.name for v in m["g"].get_collection("variables")) for m in (got, want)]
            assert names[0] == names[1]
            for m in (got, want):
                with m["g"].as_default():
                    m["restore"] = sorted(m["ema"].variables_to_restore())
            assert got["restore"] == want["restore"]
            _, o1 = _steps(got)
            _, o2 = _steps(want, tf=tft)
            for (_, a1), (_, a2) in zip(o1, o2):
                for p, q in zip(a1, a2):
                    np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)
