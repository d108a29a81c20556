"""Differential tests of raw TF ops between the layers of a functional Model (TF's automatic
op wrapping into `TensorFlowOpLayer`s) against tf_keras in TF1 graph mode: the same models,
from the same initial weights, fitted on the same data without shuffling, must give the same
layer names and order, per-epoch losses, weights, predictions and re-applied outputs.
Skipped cleanly without TensorFlow or tf_keras.
"""
import importlib
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
importlib.import_module("tfdiff")  # sets TensorFlow's environment first

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
pytest.importorskip("tf_keras", reason="tf_keras is not installed (TF1's Keras under TF 2.x)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.timeout(300)]


def _brief(tf, r):
    """Elementwise math with constants, concat, slicing and a reduce between two Dense layers."""
    x = r.rand(48, 8).astype(np.float32)
    y = np.stack([x[:, :4].sum(1), x[:, 4:].sum(1), x.prod(1)], 1).astype(np.float32)
    inp = tf.keras.Input((8,))
    h = tf.keras.layers.Dense(16)(inp)
    h = tf.nn.relu(h) * 2.0 + tf.concat([h, h], -1)[:, :16]
    out = tf.keras.layers.Dense(3)(tf.reduce_mean(h, -1, keepdims=True) + h)
    m = tf.keras.Model(inp, out)
    m.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
    return m, x, y, dict(batch_size=16)


def _reshape_reduce(tf, r):
    """Reshape, transpose, reductions and a constant vector, into a softmax classifier."""
    x = r.rand(40, 6).astype(np.float32)
    y = (x[:, :3].sum(1) > x[:, 3:].sum(1)).astype(np.int64)
    inp = tf.keras.Input((6,))
    h = tf.keras.layers.Dense(12, activation="tanh")(inp)
    h3 = tf.transpose(tf.reshape(h, [-1, 3, 4]), [0, 2, 1])
    h = tf.reduce_max(h3, axis=2) * 0.5 + tf.reduce_sum(h3, axis=2) - np.arange(4, dtype=np.float32) / 4.0
    h = tf.keras.layers.Dense(8, activation="relu")(tf.abs(h))
    out = tf.keras.layers.Dense(2, activation="softmax")(tf.sqrt(h + 1.0))
    m = tf.keras.Model(inp, out)
    m.compile(optimizer="rmsprop", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m, x, y, dict(batch_size=10)


def _two_inputs(tf, r):
    """A multi-input model: an op of two model-dependent inputs (h1 * h2), ops on an input."""
    a = r.rand(64, 3).astype(np.float32)
    b = r.rand(64, 5).astype(np.float32)
    y = ((a.sum(1) - b.mean(1)) > 1.0).astype(np.float32)
    ia, ib = tf.keras.Input(shape=(3,)), tf.keras.Input(shape=(5,))
    h1 = tf.keras.layers.Dense(4, activation="tanh")(ia)
    h2 = tf.keras.layers.Dense(6, activation="relu")(ib)
    h2 = tf.keras.layers.Dense(4)(h2)
    h = h1 * h2 - tf.reduce_sum(ib, axis=1, keepdims=True)
    out = tf.keras.layers.Dense(1, activation="sigmoid")(tf.concat([h, ia], axis=1))
    m = tf.keras.Model(inputs=[ia, ib], outputs=out)
    m.compile(optimizer=tf.keras.optimizers.SGD(0.3, momentum=0.9), loss="binary_crossentropy",
              metrics=["accuracy"])
    return m, [a, b], y, dict(batch_size=16)


def _ops_at_both_ends(tf, r):
    """A raw op directly on the model input and one producing the model output."""
    x = (r.rand(36, 8) - 0.5).astype(np.float32)
    y = np.stack([x[:, :4].mean(1), np.abs(x).mean(1)], 1).astype(np.float32)
    inp = tf.keras.Input((8,))
    h = tf.keras.layers.Dense(6, activation="relu")(tf.square(inp) + inp)
    out = tf.tanh(tf.keras.layers.Dense(2)(h)) * 1.5
    m = tf.keras.Model(inp, out)
    m.compile(optimizer="adam", loss="mse")
    return m, x, y, dict(batch_size=12)


_CASES = [_brief, _reshape_reduce, _two_inputs, _ops_at_both_ends]


def _run(tf, build, weights=None):
    r = np.random.RandomState(7)
    with tf.Graph().as_default():
        tf.set_random_seed(5)
        m, x, y, kw = build(tf, r)
        if weights is not None:
            m.set_weights(weights)
        w0 = m.get_weights()
        names = [la.name for la in m.layers if type(la).__name__ != "InputLayer"]
        types = [type(la).__name__ for la in m.layers if type(la).__name__ != "InputLayer"]
        lines = []
        m.summary(print_fn=lines.append)
        hist = m.fit(x, y, epochs=3, shuffle=False, verbose=0, **kw).history
        # the model applied to new placeholders: its op layers re-create their ops
        xs = x if isinstance(x, list) else [x]
        news = [tf.placeholder(tf.float32, [None] + list(a.shape[1:])) for a in xs]
        again = m(news if len(news) > 1 else news[0])
        sess = tf.keras.backend.get_session()
        return {"w0": w0, "names": names, "types": types, "summary": "\n".join(lines), "hist": hist,
                "w": m.get_weights(), "pred": m.predict(x), "eval": m.evaluate(x, y, verbose=0),
                "again": sess.run(again, dict(zip(news, xs))), "params": m.count_params(),
                "outputs": list(m.output_names)}


@pytest.mark.parametrize("build", _CASES, ids=lambda f: f.__name__.strip("_"))
def test_op_layers_match_tensorflow_keras(build):
    want = _run(tft, build)
    got = _run(cft, build, want["w0"])
    assert got["names"] == want["names"]
    assert got["types"] == want["types"]
    assert any(t == "TensorFlowOpLayer" for t in got["types"])
    # summary() prints tf_keras's table (op layers' long names wrap as there)
    assert got["summary"] == want["summary"]
    assert got["params"] == want["params"]
    assert got["outputs"] == want["outputs"]
    renamed = {k.replace("accuracy", "acc").replace("mae", "mean_absolute_error"): v
               for k, v in want["hist"].items()}
    assert sorted(got["hist"]) == sorted(renamed)
    for k in renamed:
        np.testing.assert_allclose(got["hist"][k], renamed[k], rtol=2e-4, atol=1e-5, err_msg=k)
    for a, b in zip(got["w"], want["w"]):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(got["pred"], want["pred"], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(got["again"], want["pred"], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(got["eval"], want["eval"], rtol=1e-3, atol=1e-5)


def test_weights_files_of_op_layer_models_read_by_either_library(tmp_path):
    x = np.random.RandomState(3).rand(5, 8).astype(np.float32)

    def make(tf):
        m, _, _, _ = _brief(tf, np.random.RandomState(0))
        return m
    with cft.Graph().as_default():
        m = make(cft)
        m.save_weights(str(tmp_path / "collflow.h5"))
        want = m.predict(x)
    with tft.Graph().as_default():
        m = make(tft)
        m.load_weights(str(tmp_path / "collflow.h5"))
        np.testing.assert_allclose(m.predict(x), want, rtol=1e-5, atol=1e-5)
        m.save_weights(str(tmp_path / "tensorflow.h5"))
        m.save(str(tmp_path / "tf_model.h5"))
    with cft.Graph().as_default():
        m = make(cft)
        m.load_weights(str(tmp_path / "tensorflow.h5"))
        np.testing.assert_allclose(m.predict(x), want, rtol=1e-5, atol=1e-5)
    with cft.Graph().as_default():
        # TF's op layers store TF NodeDefs, which collflow cannot rebuild: a clear error
        with pytest.raises(ValueError, match="NodeDef"):
            cft.keras.models.load_model(str(tmp_path / "tf_model.h5"))
