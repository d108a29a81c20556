"""Differential test against tf_keras: layer and variable names when models share layer names
in one graph (a saved model loaded twice, two models with the same explicit names, layers made
in one order and called in another).  Keras names a layer when it is made and puts its
variables under a graph-unique scope from that name (dense_2/, dense_1_1/, fc_1/).  Skipped
cleanly without TensorFlow (tests/test_keras.py checks the same by hand).
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
pytest.importorskip("tf_keras", reason="tf_keras is not installed")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.timeout(300)]


def _program(tf, d):
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(3,)), tf.keras.layers.Dense(2)])
        m.compile("sgd", "mse")
        m.save(os.path.join(d, "m.h5"))
        a = tf.keras.models.load_model(os.path.join(d, "m.h5"))
        b = tf.keras.models.load_model(os.path.join(d, "m.h5"))
        c = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(3,), name="fc"),
                                 tf.keras.layers.Dense(2, name="out")])
        e = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(3,), name="fc"),
                                 tf.keras.layers.Dense(2, name="out")])
        x = tf.keras.Input((3,))
        outer, inner = tf.keras.layers.Dense(4), tf.keras.layers.Dense(5)
        f = tf.keras.Model(x, outer(inner(x)))
        xs = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
        preds = [mm.predict(xs) for mm in (m, a, b)]
        names = [layer.name for mm in (m, a, b, c, e, f) for layer in mm.layers if "input" not in layer.name]
        variables = sorted(v.name for v in tf.global_variables() if "/" in v.name and v.name.split("/")[-1] in
                           ("kernel:0", "bias:0"))
        return names, variables, preds


def test_shared_layer_names_as_tensorflow(tmp_path):
    os.makedirs(tmp_path / "cf")
    os.makedirs(tmp_path / "tf")
    cn, cv, cp = _program(cft, str(tmp_path / "cf"))
    tn, tv, tp = _program(tft, str(tmp_path / "tf"))
    assert cn == tn
    assert cv == tv
    np.testing.assert_allclose(cp[1], cp[0], rtol=1e-6)
    np.testing.assert_allclose(cp[2], cp[0], rtol=1e-6)


def _scoped(tf, K):
    """Keras layers under name scopes (K.name_scope, tf.name_scope, a variable scope, one
    reused), called twice, inside a layer of another library: weight and op names."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4])
        with K.backend.name_scope("blockA"):
            d = K.layers.Dense(3)
            y = d(x)
        with tf.name_scope("outer"):
            z = K.layers.Dense(2, name="head")(y)
            z2 = d(x)                      # the shared layer again: same weights, new op scope
        with tf.variable_scope("vs"):
            w = K.layers.Dense(2)(y)
        with tf.variable_scope("vs", reuse=True):  # Keras ignores the variable scope's reuse
            u = K.layers.Conv1D(2, 1)(tf.expand_dims(y, 1))
        with tf.name_scope("bn"):
            v = K.layers.BatchNormalization()(y, training=False)
        return (sorted(var.name for var in tf.global_variables()),
                [t.op.name for t in (y, z, z2, w, u, v)])


def test_name_scopes_name_keras_weights_as_tensorflow():
    import tf_keras
    got = _scoped(cft, cft.keras)
    want = _scoped(tft, tf_keras)
    assert got == want
    assert "blockA/dense/kernel:0" in got[0] and "outer/head/kernel:0" in got[0]
