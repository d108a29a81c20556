"""Differential tests of the optimizer state in Keras model files against TensorFlow's Keras
(tf_keras in TF1 graph mode): a model trained, saved with its optimizer's state
(optimizer_weights), loaded and trained on must give the same per-epoch losses in both
libraries, and each library's files must restore the state in the other.  Skipped cleanly
without TensorFlow / tf_keras."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)
_ENV = tfdiff  # kept: importing it sets the environment

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
pytest.importorskip("tf_keras", reason="tf_keras is not installed (TF 2.16+'s Keras 2)")
h5py = pytest.importorskip("h5py")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.timeout(300)]

_OPTS = {
    "adam": lambda tf: tf.keras.optimizers.Adam(0.01),
    "sgd_momentum": lambda tf: tf.keras.optimizers.SGD(0.05, momentum=0.9),
    "sgd_nesterov": lambda tf: tf.keras.optimizers.SGD(0.05, momentum=0.8, nesterov=True),
    "sgd": lambda tf: tf.keras.optimizers.SGD(0.05),
    "rmsprop": lambda tf: tf.keras.optimizers.RMSprop(0.005),
    "rmsprop_momentum": lambda tf: tf.keras.optimizers.RMSprop(0.002, momentum=0.5),
    "adagrad": lambda tf: tf.keras.optimizers.Adagrad(0.05),
    "adam_amsgrad": lambda tf: tf.keras.optimizers.Adam(0.01, amsgrad=True),
    "rmsprop_centered": lambda tf: tf.keras.optimizers.RMSprop(0.005, centered=True),
    "rmsprop_centered_momentum": lambda tf: tf.keras.optimizers.RMSprop(0.002, momentum=0.5, centered=True),
}


def _data():
    r = np.random.RandomState(11)
    x = r.rand(48, 6).astype(np.float32)
    y = (x[:, :3].sum(1, keepdims=True) - x[:, 3:].mean(1, keepdims=True)).astype(np.float32)
    return x, y


def _model(tf, opt):
    m = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh", input_shape=(6,)),
                             tf.keras.layers.Dense(4, activation="relu"),
                             tf.keras.layers.Dense(1)])
    m.compile(_OPTS[opt](tf), "mse", metrics=["mae"])
    return m


def _fit(m, x, y):
    return m.fit(x, y, epochs=2, batch_size=12, shuffle=False, verbose=0).history["loss"]


def _train_save(tf, opt, path, weights=None):
    """Trains two epochs, saves; returns (initial weights, losses, optimizer state, names)."""
    x, y = _data()
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        m = _model(tf, opt)
        if weights is not None:
            m.set_weights(weights)
        w0 = m.get_weights()
        hist = _fit(m, x, y)
        m.save(path)
        return w0, hist, m.optimizer.get_weights(), [w.name for w in m.optimizer.weights]


def _load_fit(tf, path):
    x, y = _data()
    with tf.Graph().as_default():
        m = tf.keras.models.load_model(path)
        state = m.optimizer.get_weights()
        return state, _fit(m, x, y), m.predict(x)


def _names(f):
    return [n.decode() if isinstance(n, bytes) else str(n) for n in f["optimizer_weights"].attrs["weight_names"]]


def _close(a, b, rtol=2e-4, atol=1e-5):
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=rtol, atol=atol)


@pytest.mark.parametrize("opt", sorted(_OPTS))
def test_resumed_training_matches_tensorflow_keras(tmp_path, opt):
    tf_path, cf_path = str(tmp_path / "tf.h5"), str(tmp_path / "cf.h5")
    w0, tf_hist, tf_state, tf_names = _train_save(tft, opt, tf_path)
    _, cf_hist, cf_state, cf_names = _train_save(cft, opt, cf_path, w0)
    assert cf_names == tf_names
    np.testing.assert_allclose(cf_hist, tf_hist, rtol=2e-4, atol=1e-5)
    assert len(cf_state) == len(tf_state) and int(cf_state[0]) == int(tf_state[0])
    _close(cf_state[1:], tf_state[1:], rtol=2e-3, atol=1e-5)
    with h5py.File(cf_path, "r") as a, h5py.File(tf_path, "r") as b:
        assert _names(a) == _names(b) == tf_names
        assert a["optimizer_weights"][tf_names[0]].dtype == b["optimizer_weights"][tf_names[0]].dtype
    tf_loaded, tf_more, tf_pred = _load_fit(tft, tf_path)
    cf_loaded, cf_more, cf_pred = _load_fit(cft, cf_path)
    _close(tf_loaded, tf_state, rtol=0, atol=0)
    _close(cf_loaded, cf_state, rtol=0, atol=0)
    np.testing.assert_allclose(cf_more, tf_more, rtol=2e-4, atol=1e-5)
    np.testing.assert_allclose(cf_pred, tf_pred, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("opt", ["adam", "sgd_momentum", "rmsprop"])
def test_files_restore_the_state_in_either_library(tmp_path, opt):
    for src, dst in ((tft, cft), (cft, tft)):
        path = str(tmp_path / f"{src.__name__}.h5")
        _, _, state, _ = _train_save(src, opt, path)
        same_loaded, same_more, _ = _load_fit(src, path)
        other_loaded, other_more, _ = _load_fit(dst, path)
        _close(other_loaded, state, rtol=0, atol=0)
        np.testing.assert_allclose(other_more, same_more, rtol=2e-4, atol=1e-5)


def test_tf_train_optimizer_state_is_not_saved_by_either(tmp_path):
    x, y = _data()
    for tf in (tft, cft):
        path = str(tmp_path / f"{tf.__name__}.h5")
        with tf.Graph().as_default():
            m = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(6,))])
            m.compile(tf.train.AdamOptimizer(0.01), "mse")
            m.fit(x, y, epochs=1, verbose=0)
            m.save(path)
        with h5py.File(path, "r") as f:
            assert "optimizer_weights" not in f and "training_config" not in f.attrs
