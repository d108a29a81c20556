"""Differential tests against TensorFlow: variable constraints (tf.Variable / get_variable /
tf.layers `*_constraint=`), applied by TF1's optimizers after each update, Keras's
constraints (tf.keras.constraints) and activity regularizers, through fit.  The same
programs from the same initial values must give the same variables and losses.  Skipped
cleanly without TensorFlow."""
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
tft.experimental.output_all_intermediates(True)  # TF's v1 graphs need it for a while loop's gradient

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.timeout(300)]


@pytest.mark.parametrize("name,kwargs", [("MaxNorm", dict(max_value=0.7, axis=0)),
                                         ("MaxNorm", dict(max_value=1.5, axis=[0, 1])),
                                         ("NonNeg", {}), ("UnitNorm", dict(axis=1)),
                                         ("MinMaxNorm", dict(min_value=0.5, max_value=0.9, rate=0.6, axis=0))])
def test_constraint_values_match(name, kwargs):
    w = np.random.RandomState(0).randn(3, 4, 2).astype(np.float32)
    out = []
    for tf in (tft, cft):
        with tf.Graph().as_default(), tf.Session() as s:
            out.append(s.run(getattr(tf.keras.constraints, name)(**kwargs)(tf.constant(w))))
    np.testing.assert_allclose(out[1], out[0], rtol=1e-6, atol=1e-7)


def _program(tf, opt_name):
    r = np.random.RandomState(4)
    x0 = r.randn(16, 5).astype(np.float32)
    y0 = r.randn(16, 3).astype(np.float32)
    k0 = r.randn(5, 6).astype(np.float32)
    k1 = r.randn(6, 3).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.constant(x0)
        h = tf.layers.dense(x, 6, activation=tf.nn.tanh, kernel_initializer=tf.constant_initializer(k0),
                            kernel_constraint=tf.keras.constraints.max_norm(1.0),
                            bias_constraint=lambda b: tf.clip_by_value(b, -0.05, 0.05), name="d0")
        layer = tf.layers.Dense(3, kernel_initializer=tf.constant_initializer(k1),
                                kernel_constraint=tf.keras.constraints.UnitNorm(axis=1), name="d1")
        out = layer(h)
        v = tf.Variable(np.ones((3,), np.float32), constraint=tf.keras.constraints.non_neg())
        with tf.variable_scope("raw"):
            gv = tf.get_variable("g", initializer=np.full((3,), 2.0, np.float32),
                                 constraint=lambda t: tf.clip_by_value(t, 1.5, 3.0))
        with tf.variable_scope("cs", constraint=lambda t: tf.clip_by_value(t, 0.0, 0.45)):
            sv = tf.get_variable("s", initializer=np.full((3,), 0.4, np.float32))
        loss = tf.reduce_mean(tf.square(out * v * gv - y0 + sv))
        opt = tf.train.GradientDescentOptimizer(0.5) if opt_name == "sgd" else tf.train.AdamOptimizer(0.2)
        step = opt.minimize(loss)
        names = ["d0/kernel", "d0/bias", "d1/kernel", "d1/bias"]
        tvars = {vv.op.name: vv for vv in tf.global_variables()}
        watch = [tvars[n] for n in names] + [v, gv, sv]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            losses = [s.run([step, loss])[1] for _ in range(5)]
            return losses, s.run(watch)


@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_layers_and_variables_trained_with_constraints(opt_name):
    want = _program(tft, opt_name)
    got = _program(cft, opt_name)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    for a, b in zip(got[1], want[1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert np.all(np.linalg.norm(got[1][0], axis=0) <= 1.0 + 1e-5)


def test_sparse_gradient_with_constraint_raises():
    for tf in (tft, cft):
        with tf.Graph().as_default():
            e = tf.get_variable("e", [5, 2], constraint=lambda t: t)
            loss = tf.reduce_sum(tf.nn.embedding_lookup(e, [1, 3]))
            with pytest.raises(RuntimeError, match="Cannot use a constraint function on a sparse variable"):
                tf.train.GradientDescentOptimizer(0.1).minimize(loss)


def _keras(tf, weights=None):
    r = np.random.RandomState(7)
    x = r.rand(60, 6).astype(np.float32)
    y = (x[:, :3].sum(1) > 1.5).astype(np.int64)
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        m = tf.keras.Sequential([
            tf.keras.layers.Dense(8, activation="relu", input_shape=(6,), kernel_constraint="max_norm",
                                  bias_constraint=tf.keras.constraints.NonNeg(),
                                  activity_regularizer=tf.keras.regularizers.l2(0.01)),
            tf.keras.layers.BatchNormalization(beta_constraint=tf.keras.constraints.MaxNorm(0.3),
                                               gamma_constraint=tf.keras.constraints.MinMaxNorm(0.5, 1.2, axis=0)),
            tf.keras.layers.Dense(2, activation="softmax", kernel_constraint=tf.keras.constraints.max_norm(1.0),
                                  activity_regularizer=tf.keras.regularizers.l1(0.02))])
        m.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="sparse_categorical_crossentropy")
        if weights is not None:
            m.set_weights(weights)
        w0 = m.get_weights()
        hist = m.fit(x, y, batch_size=15, epochs=3, shuffle=False, verbose=0).history
        ev = m.evaluate(x, y, verbose=0)
        return w0, hist["loss"], m.get_weights(), ev


def test_keras_constraints_and_activity_regularizer_in_fit():
    w0, want_loss, want_w, want_ev = _keras(tft)
    _, got_loss, got_w, got_ev = _keras(cft, w0)
    np.testing.assert_allclose(got_loss, want_loss, rtol=2e-4, atol=1e-5)
    np.testing.assert_allclose(got_ev, want_ev, rtol=2e-4, atol=1e-5)
    for a, b in zip(got_w, want_w):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-4)
    assert np.all(np.linalg.norm(got_w[-2], axis=0) <= 1.0 + 1e-5)


def test_keras_model_file_with_constraints_loads_in_either_library(tmp_path):
    x = np.random.RandomState(1).rand(4, 5).astype(np.float32)

    def make(tf):
        return tf.keras.Sequential([
            tf.keras.layers.Dense(3, input_shape=(5,), kernel_constraint=tf.keras.constraints.MaxNorm(1.5, axis=0),
                                  bias_constraint="non_neg", activity_regularizer=tf.keras.regularizers.l2(0.1)),
            tf.keras.layers.Dense(2, kernel_constraint=tf.keras.constraints.UnitNorm())])
    with cft.Graph().as_default():
        m = make(cft)
        m.compile(optimizer="sgd", loss="mse")
        m.save(str(tmp_path / "cf.h5"))
        want = m.predict(x)
    with tft.Graph().as_default():
        m = tft.keras.models.load_model(str(tmp_path / "cf.h5"))
        np.testing.assert_allclose(m.predict(x), want, rtol=1e-6, atol=1e-6)
        d0 = m.layers[0]
        assert isinstance(d0.kernel_constraint, tft.keras.constraints.MaxNorm)
        assert d0.kernel_constraint.max_value == 1.5
        assert isinstance(d0.bias_constraint, tft.keras.constraints.NonNeg)
        assert d0.activity_regularizer is not None
        m.save(str(tmp_path / "tf.h5"))
    with cft.Graph().as_default():
        m = cft.keras.models.load_model(str(tmp_path / "tf.h5"))
        np.testing.assert_allclose(m.predict(x), want, rtol=1e-6, atol=1e-6)
        kern = m.layers[0].kernel
        assert isinstance(kern.constraint, cft.keras.constraints.MaxNorm) and kern.constraint.max_value == 1.5
        assert isinstance(m.layers[1].kernel.constraint, cft.keras.constraints.UnitNorm)
        assert len(m.losses) == 1


def _keras_more(tf, weights=None):
    r = np.random.RandomState(5)
    x = r.rand(24, 6, 6, 2).astype(np.float32)
    s = r.rand(24, 4, 3).astype(np.float32)
    y = r.rand(24, 2).astype(np.float32)
    C = tf.keras.constraints
    with tf.Graph().as_default():
        tf.set_random_seed(2)
        ix, iseq = tf.keras.Input((6, 6, 2)), tf.keras.Input((4, 3))
        a = tf.keras.layers.Conv2D(3, 3, kernel_constraint=C.MaxNorm(0.8, axis=[0, 1, 2]), bias_constraint="non_neg",
                                   activity_regularizer=tf.keras.regularizers.l1_l2(0.01, 0.02))(ix)
        a = tf.keras.layers.SeparableConv2D(2, 3, depthwise_constraint=C.UnitNorm(axis=[0, 1]),
                                            pointwise_constraint=C.NonNeg())(a)
        a = tf.keras.layers.Flatten()(a)
        b = tf.keras.layers.LSTM(3, kernel_constraint=C.MaxNorm(0.5), recurrent_constraint=C.UnitNorm(),
                                 bias_constraint=C.NonNeg(), activity_regularizer=tf.keras.regularizers.l2(0.1))(iseq)
        out = tf.keras.layers.Dense(2)(tf.keras.layers.concatenate([a, b]))
        m = tf.keras.Model([ix, iseq], out)
        m.compile(optimizer=tf.keras.optimizers.SGD(0.1, momentum=0.5), loss="mse")
        if weights is not None:
            m.set_weights(weights)
        w0 = m.get_weights()
        hist = m.fit([x, s], y, batch_size=8, epochs=2, shuffle=False, verbose=0).history
        return w0, hist["loss"], m.get_weights()


def test_keras_conv_and_recurrent_constraints_in_fit():
    w0, want_loss, want_w = _keras_more(tft)
    _, got_loss, got_w = _keras_more(cft, w0)
    np.testing.assert_allclose(got_loss, want_loss, rtol=2e-4, atol=1e-5)
    for a, b in zip(got_w, want_w):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-4)
