"""The Keras optimizers' state (iterations and slots: weights / get_weights / set_weights) and
its place in model files (group optimizer_weights): saved by model.save, restored by
load_model, so a resumed fit continues as if it had not stopped."""
import h5py
import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.keras import saving

_OPTS = {
    "adam": lambda: tf.keras.optimizers.Adam(0.01),
    "sgd": lambda: tf.keras.optimizers.SGD(0.05),
    "sgd_momentum": lambda: tf.keras.optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    "rmsprop_momentum": lambda: tf.keras.optimizers.RMSprop(0.005, momentum=0.5),
    "adagrad": lambda: tf.keras.optimizers.Adagrad(0.05),
}
_SLOTS = {"adam": ["m", "v"], "sgd": [], "sgd_momentum": ["momentum"], "rmsprop_momentum": ["rms", "momentum"],
          "adagrad": ["accumulator"]}


def _data():
    r = np.random.RandomState(4)
    x = r.rand(40, 5).astype(np.float32)
    return x, (x.sum(1, keepdims=True) - 2.0).astype(np.float32)


def _model(opt):
    m = tf.keras.Sequential([tf.keras.layers.Dense(6, activation="tanh", input_shape=(5,)),
                             tf.keras.layers.Dense(1)])
    m.compile(_OPTS[opt](), "mse")
    return m


def _fit(m, epochs=2):
    x, y = _data()
    return m.fit(x, y, epochs=epochs, batch_size=8, shuffle=False, verbose=0).history["loss"]


@pytest.mark.parametrize("opt", sorted(_OPTS))
def test_weights_are_keras_names_and_order(opt):
    with tf.Graph().as_default():
        m = _model(opt)
        assert m.optimizer.weights == []
        _fit(m, 1)
        name = m.optimizer.get_name()
        want = [f"training/{name}/iter:0"] + [f"training/{name}/{v}/{s}:0" for s in _SLOTS[opt]
                                               for v in ("dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias")]
        assert [w.name for w in m.optimizer.weights] == want
        state = m.optimizer.get_weights()
        assert state[0].dtype == np.int64 and int(state[0]) == 5  # 40 samples in batches of 8
        assert m.optimizer.iterations is m.optimizer.weights[0]


@pytest.mark.parametrize("opt", sorted(_OPTS))
def test_resumed_fit_matches_the_uninterrupted_one(tmp_path, opt):
    path = str(tmp_path / "m.h5")
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        m = _model(opt)
        _fit(m)
        m.save(path)
        state = m.optimizer.get_weights()
        want = _fit(m)
    with tf.Graph().as_default():
        loaded = tf.keras.models.load_model(path)
        assert [w.name for w in loaded.optimizer.weights][0] == "iter:0"  # made outside training/, as Keras's
        for a, b in zip(loaded.optimizer.get_weights(), state):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(_fit(loaded), want, rtol=1e-6)


def test_set_weights_checks_count_and_shapes():
    with tf.Graph().as_default():
        m = _model("adam")
        _fit(m, 1)
        state = m.optimizer.get_weights()
        with pytest.raises(ValueError, match="weight list of length"):
            m.optimizer.set_weights(state[:-1])
        with pytest.raises(ValueError, match="not compatible"):
            m.optimizer.set_weights(state[:1] + [np.zeros((2, 2), np.float32)] + state[2:])
        state[0] = np.int64(100)
        m.optimizer.set_weights(state)
        assert int(tf.keras.backend.get_value(m.optimizer.iterations)) == 100


def test_include_optimizer_false_and_untrained_models_save_no_state(tmp_path):
    x, y = _data()
    with tf.Graph().as_default():
        m = _model("adam")
        m.save(str(tmp_path / "untrained.h5"))
        _fit(m, 1)
        m.save(str(tmp_path / "bare.h5"), include_optimizer=False)
        m.save(str(tmp_path / "full.h5"))
    for name, has in (("untrained", False), ("bare", False), ("full", True)):
        with h5py.File(str(tmp_path / f"{name}.h5"), "r") as f:
            assert ("optimizer_weights" in f) is has, name
    with tf.Graph().as_default():
        loaded = tf.keras.models.load_model(str(tmp_path / "bare.h5"))
        assert loaded.optimizer is None or loaded.optimizer.weights == []
    with tf.Graph().as_default():
        fresh = tf.keras.models.load_model(str(tmp_path / "untrained.h5"))
        assert fresh.optimizer.weights == []
        fresh.fit(x, y, epochs=1, batch_size=8, verbose=0)
        assert int(fresh.optimizer.get_weights()[0]) == 5


def test_state_that_does_not_fit_loads_with_a_warning_and_a_fresh_optimizer(tmp_path, monkeypatch):
    path = str(tmp_path / "m.h5")
    with tf.Graph().as_default():
        m = _model("adam")
        _fit(m, 1)
        m.save(path)
    with h5py.File(path, "a") as f:  # one slot fewer than the model needs
        g = f["optimizer_weights"]
        g.attrs["weight_names"] = g.attrs["weight_names"][:-1]
    warnings = []
    monkeypatch.setattr(saving.logging, "warning", lambda msg, *a: warnings.append(msg % a if a else msg))
    with tf.Graph().as_default():
        loaded = tf.keras.models.load_model(path)
        assert any("Error in loading the saved optimizer state" in w for w in warnings)
        state = loaded.optimizer.get_weights()
        assert int(state[0]) == 0 and all(not np.any(s) for s in state[1:])


def test_tf_train_optimizer_state_is_not_saved(tmp_path):
    path = str(tmp_path / "m.h5")
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(5,))])
        m.compile(tf.train.AdamOptimizer(0.01), "mse")
        _fit(m, 1)
        m.save(path)
    with h5py.File(path, "r") as f:
        assert "optimizer_weights" not in f and "training_config" not in f.attrs
