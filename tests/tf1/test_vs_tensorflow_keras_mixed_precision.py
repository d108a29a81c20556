"""tf.keras.mixed_precision against tf_keras's in TF1 graph mode (tensorflow.compat.v1, eager
execution off): under "mixed_float16" the same Dense and Conv2D models, from the same initial
weights, give the same dtypes at each stage (variables, layer and model outputs, gradients),
the same losses, weights and loss-scale schedule over several train_on_batch steps (the
default dynamic scale with an overflowing, skipped first step; a fixed scale; a dynamic one
that grows), to float16's tolerance.  Skipped cleanly without TensorFlow or tf_keras."""
import os
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
tf_keras = pytest.importorskip("tf_keras", reason="tf_keras is not installed")

import collflow.compat.v1 as cft  # noqa: E402
from collflow.keras import mixed_precision as cmp  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.timeout(300)]


@pytest.fixture(autouse=True)
def _policies():
    """Both libraries under mixed_float16 for the test, fresh Keras graphs before and after."""
    tft.keras.backend.clear_session()
    cft.keras.backend.clear_session()
    tf_keras.mixed_precision.set_global_policy("mixed_float16")
    cmp.set_policy("mixed_float16")
    yield
    tf_keras.mixed_precision.set_global_policy(None)
    cmp.set_policy(None)
    tft.keras.backend.clear_session()
    cft.keras.backend.clear_session()


def _dense_model(tf):
    x = tf.keras.layers.Input((5,))
    h = tf.keras.layers.Dense(8, activation="relu")(x)
    h = tf.keras.layers.Dense(6, activation="tanh")(h)
    y = tf.keras.layers.Dense(3, dtype="float32")(h)
    return tf.keras.Model(x, y), [h, y]


def _conv_model(tf):
    x = tf.keras.layers.Input((6, 6, 2))
    h = tf.keras.layers.Conv2D(4, 3, activation="relu")(x)
    h = tf.keras.layers.Flatten()(h)
    y = tf.keras.layers.Dense(2, activation="softmax", dtype="float32")(h)
    return tf.keras.Model(x, y), [h, y]


def _weights(model, rng):
    return [(rng.randn(*w.shape) * 0.4).astype(np.float32) for w in model.get_weights()]


def _lso(lib, inner, kind):
    """The loss-scale optimizer of each library: ('fixed', v) or ('dynamic', initial, growth steps)."""
    if lib == "tf":
        if kind[0] == "fixed":
            return tf_keras.mixed_precision.LossScaleOptimizer(inner, dynamic=False, initial_scale=kind[1])
        return tf_keras.mixed_precision.LossScaleOptimizer(inner, initial_scale=kind[1], dynamic_growth_steps=kind[2])
    if kind[0] == "fixed":  # TF 1.15's arguments, then tf_keras's
        return cft.keras.mixed_precision.experimental.LossScaleOptimizer(inner, kind[1])
    return cft.keras.mixed_precision.LossScaleOptimizer(inner, initial_scale=kind[1], dynamic_growth_steps=kind[2])


def _train(lib, build, x, y, loss, w0, steps, kind=None):
    tf = tft if lib == "tf" else cft
    model, _ = build(tf)
    model.set_weights(w0)
    opt = tf.keras.optimizers.SGD(0.05) if lib == "cf" else tft.keras.optimizers.legacy.SGD(0.05)
    model.compile(opt if kind is None else _lso(lib, opt, kind), loss)
    ls = model.optimizer.loss_scale
    scale = (lambda: float(tf.keras.backend.get_value(ls if lib == "tf" else ls())))
    losses, scales = [], []
    for _ in range(steps):
        losses.append(float(model.train_on_batch(x, y)))
        scales.append(scale())
    return losses, scales, model.get_weights(), type(model.optimizer).__name__


def _compare(build, x, y, loss, steps, kind=None, seed=0):
    tft.keras.backend.clear_session()
    w0 = _weights(build(cft)[0], np.random.RandomState(seed))
    cft.keras.backend.clear_session()
    t = _train("tf", build, x, y, loss, w0, steps, kind)
    c = _train("cf", build, x, y, loss, w0, steps, kind)
    assert t[3] == c[3] == "LossScaleOptimizer"
    np.testing.assert_allclose(c[0], t[0], rtol=2e-2, atol=2e-3)
    assert c[1] == t[1]  # the loss-scale schedule is exact (powers of two)
    for a, b in zip(c[2], t[2]):
        assert a.dtype == b.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-2, atol=3e-3)
    return t, c


def test_dtypes_at_each_stage():
    seen = {}
    for lib, tf in (("tf", tft), ("cf", cft)):
        model, (h, y) = _conv_model(tf)
        d = model.layers[-1]
        conv = [la for la in model.layers if "conv" in la.name][0]
        loss = tf.reduce_mean(model.output)
        grads = tf.gradients(loss, model.trainable_weights)
        seen[lib] = dict(h=h.dtype.name, y=y.dtype.name, vars=[w.dtype.name for w in model.weights],
                         grads=[gr.dtype.name for gr in grads], conv=(conv.dtype, conv._compute_dtype),
                         dense=(d.dtype, d._compute_dtype),
                         names=[w.name for w in model.weights])
        tf.keras.backend.clear_session()
    assert seen["cf"] == seen["tf"]
    assert seen["cf"]["h"] == "float16" and set(seen["cf"]["vars"]) == {"float32"}


def test_dense_default_dynamic_scale_skips_overflowing_steps():
    rng = np.random.RandomState(1)
    x = rng.randn(16, 5).astype(np.float32)
    y = (rng.randn(16, 3) * 300).astype(np.float32)  # 2**15-scaled float16 gradients overflow at first
    t, c = _compare(_dense_model, x, y, "mse", 9, seed=1)
    assert c[1][:3] == [2.0 ** 14, 2.0 ** 13, 2.0 ** 12]  # halved on each overflow
    assert c[0][0] == c[0][1] == c[0][2]  # the skipped steps left the weights (the loss) as they were
    assert c[0][-1] < c[0][0]  # and later steps applied


def test_dense_fixed_scale():
    rng = np.random.RandomState(2)
    x = rng.randn(16, 5).astype(np.float32)
    y = rng.randn(16, 3).astype(np.float32)
    t, c = _compare(_dense_model, x, y, "mse", 6, kind=("fixed", 128.0), seed=2)
    assert c[1] == [128.0] * 6
    assert c[0][-1] < c[0][0]


def test_conv_dynamic_scale_grows_and_halves():
    rng = np.random.RandomState(3)
    x = rng.randn(8, 6, 6, 2).astype(np.float32)
    y = np.eye(2, dtype=np.float32)[rng.randint(0, 2, 8)]
    t, c = _compare(_conv_model, x, y, "categorical_crossentropy", 7, kind=("dynamic", 2.0 ** 14, 2), seed=3)
    assert max(c[1]) > 2 ** 14  # grew after two good steps


def _seq_model(tf):
    L = tf.keras.layers
    ids = L.Input((5,))
    x = L.Input((5, 3))
    e = L.Embedding(7, 3)(ids)
    h = L.Concatenate()([e, L.Conv1D(3, 1, padding="same")(x)])
    h = L.BatchNormalization()(h)
    h = L.GRU(4, return_sequences=True)(h)
    y = L.Dense(2, dtype="float32")(L.LSTM(3)(h))
    return tf.keras.Model([ids, x], y), [e, h, y]


def _key(w):
    """A weight's name without the cell's scope tf_keras's recurrent layers add (gru/gru_cell/kernel)."""
    return re.sub(r"/\w+_cell(_\d+)?/", "/", w.name)


def test_recurrent_model_forward_and_dtypes():
    rng = np.random.RandomState(4)
    model = _seq_model(cft)[0]
    values = {_key(w): (np.abs(v) + 0.5 if "variance" in w.name else v)
              for w, v in zip(model.weights, _weights(model, rng))}
    cft.keras.backend.clear_session()
    feed = [rng.randint(0, 7, (6, 5)).astype(np.float32), rng.randn(6, 5, 3).astype(np.float32)]
    got = {}
    for lib, tf in (("tf", tft), ("cf", cft)):
        model, stages = _seq_model(tf)
        model.set_weights([values[_key(w)] for w in model.weights])  # by name
        got[lib] = ([t.dtype.name for t in stages], sorted((_key(w), w.dtype.name) for w in model.weights),
                    model.predict(feed))
        tf.keras.backend.clear_session()
    assert got["cf"][0] == got["tf"][0] == ["float16", "float16", "float32"]
    assert got["cf"][1] == got["tf"][1]
    np.testing.assert_allclose(got["cf"][2], got["tf"][2], rtol=2e-2, atol=2e-3)
