"""Differential tests of tf.keras.optimizers' Adadelta, Adamax, Nadam, Ftrl, decay / clipnorm /
clipvalue, learning-rate schedules (in fit and by value), optimizer serialization and
tf.keras.regularizers against TensorFlow's Keras (tf_keras in TF1 graph mode): the same model
from the same weights trained several steps gives the same losses, weights and optimizer state
(same names), and each library's model files restore the state in the other.  Skipped cleanly
without TensorFlow / tf_keras."""
import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)
_ENV = tfdiff

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
pytest.importorskip("tf_keras", reason="tf_keras is not installed (TF 2.16+'s Keras 2)")
h5py = pytest.importorskip("h5py")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.timeout(300)]

_OPTS = {
    "adadelta": lambda tf: tf.keras.optimizers.Adadelta(1.0),
    "adadelta_defaults": lambda tf: tf.keras.optimizers.Adadelta(),
    "adamax": lambda tf: tf.keras.optimizers.Adamax(0.02),
    "nadam": lambda tf: tf.keras.optimizers.Nadam(0.01),
    "ftrl": lambda tf: tf.keras.optimizers.Ftrl(0.2),
    "ftrl_l1_l2": lambda tf: tf.keras.optimizers.Ftrl(0.2, l1_regularization_strength=0.01,
                                                      l2_regularization_strength=0.05),
    "ftrl_shrinkage": lambda tf: tf.keras.optimizers.Ftrl(0.2, learning_rate_power=-0.6,
                                                          l2_shrinkage_regularization_strength=0.1),
    "sgd_decay": lambda tf: tf.keras.optimizers.SGD(0.05, momentum=0.9, decay=0.05),
    "adam_clipnorm": lambda tf: tf.keras.optimizers.Adam(0.01, clipnorm=0.1),
    "rmsprop_clipvalue": lambda tf: tf.keras.optimizers.RMSprop(0.005, clipvalue=0.05),
    "adamax_decay": lambda tf: tf.keras.optimizers.Adamax(0.02, decay=0.1),
    "sgd_exponential": lambda tf: tf.keras.optimizers.SGD(
        tf.keras.optimizers.schedules.ExponentialDecay(0.1, 3, 0.7, staircase=True)),
    "adam_piecewise": lambda tf: tf.keras.optimizers.Adam(
        tf.keras.optimizers.schedules.PiecewiseConstantDecay([3, 6], [0.02, 0.01, 0.002])),
    "rmsprop_polynomial": lambda tf: tf.keras.optimizers.RMSprop(
        tf.keras.optimizers.schedules.PolynomialDecay(0.01, 5, 0.001, power=2.0, cycle=True)),
    "adamax_inverse_time": lambda tf: tf.keras.optimizers.Adamax(
        tf.keras.optimizers.schedules.InverseTimeDecay(0.1, 2, 0.5)),
    "adadelta_cosine": lambda tf: tf.keras.optimizers.Adadelta(
        tf.keras.optimizers.schedules.CosineDecayRestarts(1.0, 3, t_mul=1.5, m_mul=0.8)),
    "ftrl_exponential": lambda tf: tf.keras.optimizers.Ftrl(
        tf.keras.optimizers.schedules.ExponentialDecay(0.3, 4, 0.5)),
}


def _data():
    r = np.random.RandomState(5)
    x = r.rand(40, 6).astype(np.float32)
    y = (x[:, :3].sum(1, keepdims=True) - x[:, 3:].mean(1, keepdims=True)).astype(np.float32)
    return x, y


def _model(tf, opt):
    m = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh", input_shape=(6,)),
                             tf.keras.layers.Dense(4, activation="relu"),
                             tf.keras.layers.Dense(1)])
    m.compile(_OPTS[opt](tf), "mse")
    return m


def _fit(m, x, y):
    return m.fit(x, y, epochs=3, batch_size=10, shuffle=False, verbose=0).history["loss"]


def _train_save(tf, opt, path, weights=None):
    x, y = _data()
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        m = _model(tf, opt)
        if weights is not None:
            m.set_weights(weights)
        w0 = m.get_weights()
        hist = _fit(m, x, y)
        m.save(path)
        return (w0, hist, m.get_weights(), m.optimizer.get_weights(), [w.name for w in m.optimizer.weights],
                m.optimizer.get_config())


def _load_fit(tf, path):
    x, y = _data()
    with tf.Graph().as_default():
        m = tf.keras.models.load_model(path)
        return m.optimizer.get_weights(), _fit(m, x, y), type(m.optimizer).__name__


def _plain(c):
    # tf_keras 2.x's serialization adds module / registered_name, which TF 1.15 did not write
    if isinstance(c, dict):
        return {k: _plain(v) for k, v in c.items() if k not in ("module", "registered_name")}
    return c


def _close(a, b, rtol=2e-4, atol=1e-5):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=rtol, atol=atol)


@pytest.mark.parametrize("opt", sorted(_OPTS))
def test_training_matches_tensorflow_keras(tmp_path, opt):
    tf_path, cf_path = str(tmp_path / "tf.h5"), str(tmp_path / "cf.h5")
    w0, tf_hist, tf_w, tf_state, tf_names, tf_cfg = _train_save(tft, opt, tf_path)
    _, cf_hist, cf_w, cf_state, cf_names, cf_cfg = _train_save(cft, opt, cf_path, w0)
    assert cf_names == tf_names
    np.testing.assert_allclose(cf_hist, tf_hist, rtol=2e-4, atol=1e-5)
    _close(cf_w, tf_w, rtol=1e-3, atol=1e-5)
    assert int(cf_state[0]) == int(tf_state[0])
    _close(cf_state[1:], tf_state[1:], rtol=2e-3, atol=1e-5)
    # the config keys TF 1.15 writes (tf_keras adds Ftrl's beta and the *_clipnorm keys)
    extra = {"beta", "global_clipnorm", "is_legacy_optimizer", "jit_compile"}
    assert set(cf_cfg) - {"beta"} == set(tf_cfg) - extra
    for k in set(cf_cfg) & set(tf_cfg):
        if isinstance(tf_cfg[k], float):
            assert cf_cfg[k] == pytest.approx(tf_cfg[k], rel=1e-6), k
        else:
            assert cf_cfg[k] == _plain(tf_cfg[k]), k
    # resumed from the files, each library's in the other
    tf_loaded, tf_more, tf_cls = _load_fit(tft, tf_path)
    cf_loaded, cf_more, cf_cls = _load_fit(cft, cf_path)
    x_loaded, x_more, x_cls = _load_fit(cft, tf_path)
    assert cf_cls == tf_cls == x_cls
    _close(cf_loaded, cf_state, rtol=0, atol=0)
    _close(x_loaded, tf_state, rtol=0, atol=0)
    np.testing.assert_allclose(cf_more, tf_more, rtol=5e-4, atol=1e-5)
    np.testing.assert_allclose(x_more, tf_more, rtol=5e-4, atol=1e-5)


@pytest.mark.parametrize("opt", ["nadam", "ftrl", "adadelta", "sgd_exponential"])
def test_collflow_files_load_in_tensorflow(tmp_path, opt):
    path = str(tmp_path / "cf.h5")
    w0, tf_hist, _, _, _, _ = _train_save(tft, opt, str(tmp_path / "tf.h5"))
    _, _, _, cf_state, _, _ = _train_save(cft, opt, path, w0)
    loaded, more, cls = _load_fit(tft, path)
    _close(loaded, cf_state, rtol=0, atol=0)
    cf_loaded, cf_more, _ = _load_fit(cft, path)
    np.testing.assert_allclose(more, cf_more, rtol=5e-4, atol=1e-5)


def _schedules(tf):
    S = tf.keras.optimizers.schedules
    return [S.ExponentialDecay(0.1, 5, 0.5), S.ExponentialDecay(0.1, 5, 0.5, staircase=True),
            S.InverseTimeDecay(0.2, 3, 0.7), S.InverseTimeDecay(0.2, 3, 0.7, staircase=True),
            S.PolynomialDecay(0.1, 10), S.PolynomialDecay(0.1, 10, 0.01, power=0.5, cycle=True),
            S.PiecewiseConstantDecay([2, 5, 9], [1.0, 0.5, 0.25, 0.125]),
            S.CosineDecay(0.1, 12, alpha=0.1), S.CosineDecay(0.1, 8, warmup_target=0.3, warmup_steps=4),
            S.CosineDecayRestarts(0.1, 4), S.CosineDecayRestarts(0.2, 3, t_mul=1.0, m_mul=0.5, alpha=0.05)]


def _schedule_values(tf, steps):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        ys = [s(x) for s in _schedules(tf)]
        with tf.Session() as sess:
            return [sess.run(ys, {x: float(t)}) for t in steps], [tf.keras.optimizers.schedules.serialize(s)
                                                                   for s in _schedules(tf)]


def test_schedule_values_and_configs():
    steps = [0, 1, 2, 3, 5, 6, 9, 10, 14, 20, 31]
    tf_v, tf_c = _schedule_values(tft, steps)
    cf_v, cf_c = _schedule_values(cft, steps)
    np.testing.assert_allclose(np.array(cf_v), np.array(tf_v), rtol=1e-6, atol=1e-7)
    assert cf_c == [_plain(c) for c in tf_c]
    for c in tf_c:
        again = cft.keras.optimizers.schedules.deserialize(c)
        assert cft.keras.optimizers.schedules.serialize(again) == _plain(c)


def test_optimizer_serialize_matches():
    for name in ("Adadelta", "Adamax", "Nadam", "Ftrl"):
        t = tft.keras.optimizers.serialize(getattr(tft.keras.optimizers, name)(learning_rate=0.03))
        c = cft.keras.optimizers.serialize(getattr(cft.keras.optimizers, name)(learning_rate=0.03))
        assert c["class_name"] == t["class_name"]
        tc = {k: v for k, v in t["config"].items() if k not in ("beta", "is_legacy_optimizer")}
        assert c["config"] == pytest.approx(tc) if all(isinstance(v, float) for v in tc.values()) else True
        assert set(c["config"]) == set(tc)
        assert type(cft.keras.optimizers.deserialize(t)).__name__ == name


def _reg_model(tf):
    R = tf.keras.regularizers
    return tf.keras.Sequential([
        tf.keras.layers.Dense(5, input_shape=(4,), kernel_regularizer=R.L1L2(l1=0.01, l2=0.02),
                              bias_regularizer=R.l2(0.05), activity_regularizer=R.l1(0.001)),
        tf.keras.layers.Dense(2, kernel_regularizer=R.l1_l2(0.003, 0.004))])


def test_regularizers_losses_and_configs(tmp_path):
    r = np.random.RandomState(1)
    x = r.rand(6, 4).astype(np.float32)
    out = {}
    for tf in (tft, cft):
        with tf.Graph().as_default():
            tf.set_random_seed(0)
            m = _reg_model(tf)
            if tf is cft:
                m.set_weights(out[tft][2])
            m(tf.constant(x))
            with tf.keras.backend.get_session().as_default():
                vals = tf.keras.backend.get_session().run(m.losses + [m.output], {m.input: x})
            cfg = json.loads(m.to_json())
            out[tf] = (sorted(vals[:-1]), [_plain(ly["config"].get("kernel_regularizer"))
                                             for ly in cfg["config"]["layers"] if ly["class_name"] != "InputLayer"],
                       m.get_weights())
            R = tf.keras.regularizers
            # (R.l2(0.3) is L1L2(l2=0.3) in TF 1.15, collflow's; tf_keras 2.x gives L2)
            out[tf] += ([R.serialize(R.L1L2(0.1, 0.2)), R.serialize(R.L2(0.3)), R.serialize(R.L1(0.2))],)
    np.testing.assert_allclose(out[cft][0], out[tft][0], rtol=1e-5)
    assert out[cft][1] == out[tft][1]
    assert out[cft][3] == [_plain(c) for c in out[tft][3]]


def test_regularizers_in_saved_models_load_in_both(tmp_path):
    r = np.random.RandomState(2)
    x, y = r.rand(16, 4).astype(np.float32), r.rand(16, 2).astype(np.float32)
    path = str(tmp_path / "cf.h5")
    with cft.Graph().as_default():
        m = _reg_model(cft)
        m.compile("sgd", "mse")
        m.save(path)
        w = m.get_weights()
        ev = m.evaluate(x, y, verbose=0)
    with tft.Graph().as_default():
        m2 = tft.keras.models.load_model(path)
        m2.set_weights(w)
        np.testing.assert_allclose(m2.evaluate(x, y, verbose=0), ev, rtol=1e-5)
        assert isinstance(m2.layers[0].kernel_regularizer, tft.keras.regularizers.L1L2)


_SPARSE = {
    "adamax": lambda tf: tf.keras.optimizers.Adamax(0.05),
    "nadam": lambda tf: tf.keras.optimizers.Nadam(0.05),
    "ftrl": lambda tf: tf.keras.optimizers.Ftrl(0.3, l1_regularization_strength=0.001),
    "adadelta": lambda tf: tf.keras.optimizers.Adadelta(2.0),
}


@pytest.mark.parametrize("opt", sorted(_SPARSE))
def test_sparse_embedding_updates_match(opt):
    """An Embedding's gradient is IndexedSlices with repeated ids: Keras sums the repeats and
    updates only the rows' state (Adamax, Ftrl, Adadelta) or decays all of it (Nadam's m, v)."""
    r = np.random.RandomState(9)
    x = r.randint(0, 10, (24, 4)).astype(np.int32)  # a batch sees some ids; 10 and 11 never
    y = r.rand(24, 1).astype(np.float32)
    res, w0 = {}, None
    for tf in (tft, cft):
        with tf.Graph().as_default():
            tf.set_random_seed(1)
            m = tf.keras.Sequential([tf.keras.layers.Embedding(12, 3, input_length=4), tf.keras.layers.Flatten(),
                                     tf.keras.layers.Dense(1)])
            m.compile(_SPARSE[opt](tf), "mse")
            if w0 is None:
                w0 = m.get_weights()
            else:
                m.set_weights(w0)
            h = m.fit(x, y, epochs=3, batch_size=2, shuffle=False, verbose=0).history["loss"]
            res[tf] = (h, m.get_weights(), m.optimizer.get_weights())
    np.testing.assert_allclose(res[cft][0], res[tft][0], rtol=2e-4, atol=1e-6)
    _close(res[cft][1], res[tft][1], rtol=1e-3, atol=1e-5)
    _close(res[cft][2], res[tft][2], rtol=2e-3, atol=1e-5)


_FLOAT64_CASES = {
    "sgd_momentum_decay": ("SGD", dict(learning_rate=0.1, momentum=0.7, decay=0.3)),
    "sgd_numpy_hypers": ("SGD", dict(learning_rate=np.float64(0.1), momentum=np.float64(0.9), nesterov=True)),
    "rmsprop_momentum": ("RMSprop", dict(learning_rate=0.1, rho=0.8, momentum=0.5, epsilon=1e-3)),
    "adam_decay": ("Adam", dict(learning_rate=0.01, beta_1=0.85, beta_2=0.99, epsilon=1e-3, decay=0.2)),
    "adagrad": ("Adagrad", dict(learning_rate=0.3, initial_accumulator_value=0.3, epsilon=0.01)),
    "adadelta": ("Adadelta", dict(learning_rate=0.7, rho=0.9, epsilon=1e-3)),
    "adamax": ("Adamax", dict(learning_rate=0.1, beta_1=0.8, epsilon=1e-2)),
    "nadam": ("Nadam", dict(learning_rate=0.1, beta_1=0.85, epsilon=1e-3)),
    "adam_amsgrad": ("Adam", dict(learning_rate=0.05, beta_1=0.8, amsgrad=True, decay=0.1)),
    "rmsprop_centered": ("RMSprop", dict(learning_rate=0.05, centered=True)),
    "rmsprop_centered_momentum": ("RMSprop", dict(learning_rate=0.05, centered=True, momentum=0.6)),
    "ftrl": ("Ftrl", dict(learning_rate=0.1, learning_rate_power=-0.7, l1_regularization_strength=0.01,
                          l2_regularization_strength=0.1, l2_shrinkage_regularization_strength=0.3, beta=0.2)),
}


def _float64_steps(tf, keras_optimizers, name, kwargs, sparse=False):
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.array([0.3, -1.7, 2.5, 0.01]), use_resource=True)
        x = tf.constant(np.array([1.1, 0.9, -0.7, 3.0]))
        # sparse: a gather's IndexedSlices gradient with a repeated row
        loss = tf.reduce_sum(tf.square((tf.gather(v, [0, 2, 2, 3]) if sparse else v) * x - 0.37))
        opt = getattr(keras_optimizers, name)(**kwargs)
        step = opt.apply_gradients(zip(tf.gradients(loss, [v]), [v]))
        with tf.Session(graph=g) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(4):
                sess.run(step)
            return sess.run(v)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("case", sorted(_FLOAT64_CASES))
def test_float64_variables_match_tf_keras(case, sparse):
    # Keras's hyperparameters: a Python number a float32 weight cast to the variable's dtype, a
    # NumPy float64 exact, epsilon exact; a float64 model agrees to the last bits
    name, kwargs = _FLOAT64_CASES[case]
    want = _float64_steps(tft, tft.keras.optimizers.legacy, name, kwargs, sparse)
    got = _float64_steps(cft, cft.keras.optimizers, name, kwargs, sparse)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)
