"""Differential tests against tf_keras in TF1 graph mode: functional models' `layers` (the
InputLayers first, as tf_keras lists them), `summary()` strings (both tables, whitespace
exactly), and masks through the merge layers, GlobalAveragePooling1D, Lambda(mask=) and user
layers with supports_masking: masks, predictions and per-epoch losses from the same initial
weights.  Skipped cleanly without TensorFlow / tf_keras."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

_ = tfdiff

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
pytest.importorskip("tf_keras", reason="tf_keras is not installed")

import collflow.compat.v1 as cft  # noqa: E402
from collflow.keras.layers import mask_of  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
tft.experimental.output_all_intermediates(True)  # TF's v1 graphs need it for a while loop's gradient

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.timeout(300)]


def _mask(tf, t):
    return mask_of(t) if tf is cft else getattr(t, "_keras_mask", None)


def _branchy(tf):
    L = tf.keras.layers
    x = L.Input((5,), name="inp")
    a, b = L.Dense(4)(x), L.Dense(4, activation="tanh")(x)
    c = L.Concatenate()([a, b])
    return tf.keras.Model(x, L.Dense(2)(c))


def _two_inputs_shared(tf):
    L = tf.keras.layers
    i1, i2 = L.Input((3,)), L.Input((3,))
    shared = L.Dense(2)
    return tf.keras.Model([i1, i2], L.Add()([shared(i1), shared(i2)]))


def _chain(tf):
    L = tf.keras.layers
    x = L.Input((6,))
    return tf.keras.Model(x, L.Dense(3)(L.Dense(4, activation="relu")(x)))


def _sequential(tf):
    L = tf.keras.layers
    return tf.keras.Sequential([L.Dense(3, input_shape=(4,)), L.Dropout(0.2), L.Dense(2)])


def _late_input(tf):
    L = tf.keras.layers
    ia, ib = L.Input(shape=(3,), name="a"), L.Input(shape=(4,), name="b")
    h = L.concatenate([L.Dense(5, activation="tanh")(ia), ib])
    return tf.keras.Model([ia, ib], L.Dense(1)(L.Activation("relu")(h)))


def _structure(tf, build):
    with tf.Graph().as_default():
        m = build(tf)
        lines = []
        m.summary(print_fn=lines.append)
        wide = []
        m.summary(line_length=110, print_fn=wide.append)
        return {"layers": [(la.name, type(la).__name__) for la in m.layers], "summary": lines, "wide": wide,
                "first": m.get_layer(index=0).name, "weights": [v.name for v in m.weights]}


@pytest.mark.parametrize("build", [_branchy, _two_inputs_shared, _chain, _sequential, _late_input],
                         ids=lambda f: f.__name__.strip("_"))
def test_layers_and_summary_match_tf_keras(build):
    want, got = _structure(tft, build), _structure(cft, build)
    assert got["layers"] == want["layers"]
    assert got["first"] == want["first"]
    assert got["weights"] == want["weights"]
    assert got["summary"] == want["summary"]
    assert got["wide"] == want["wide"]


def test_weights_files_with_input_layers_load_in_either_library(tmp_path):
    r = np.random.RandomState(1)
    x = r.rand(4, 5).astype(np.float32)
    with tft.Graph().as_default():
        m = _branchy(tft)
        want = m.predict(x)
        m.save_weights(str(tmp_path / "tf.h5"))
        m.save(str(tmp_path / "tf_model.h5"))
    with cft.Graph().as_default():
        m = _branchy(cft)
        m.load_weights(str(tmp_path / "tf.h5"))
        np.testing.assert_allclose(m.predict(x), want, rtol=1e-5, atol=1e-6)
        m.save_weights(str(tmp_path / "cf.h5"))
        m.save(str(tmp_path / "cf_model.h5"))
    with cft.Graph().as_default():
        again = cft.keras.models.load_model(str(tmp_path / "tf_model.h5"))
        assert [la.name for la in again.layers] == ["inp", "dense", "dense_1", "concatenate", "dense_2"]
        np.testing.assert_allclose(again.predict(x), want, rtol=1e-5, atol=1e-6)
    with tft.Graph().as_default():
        m = _branchy(tft)
        m.load_weights(str(tmp_path / "cf.h5"))
        np.testing.assert_allclose(m.predict(x), want, rtol=1e-5, atol=1e-6)
        back = tensorflow.keras.models.load_model(str(tmp_path / "cf_model.h5"))
        assert [la.name for la in back.layers] == ["inp", "dense", "dense_1", "concatenate", "dense_2"]
        np.testing.assert_allclose(back.predict(x), want, rtol=1e-5, atol=1e-6)


_MERGES = ["Concatenate", "Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum"]


def _masked_model(tf, merge):
    """Two masked embeddings of the same ids merged, then averaged over the real steps."""
    L = tf.keras.layers
    x = L.Input((5,))
    e1 = L.Embedding(6, 3, mask_zero=True)(x)
    e2 = L.Embedding(6, 3, mask_zero=True)(x)
    merged = getattr(L, merge)()([e1, e2])
    pooled = L.GlobalAveragePooling1D()(merged)
    return tf.keras.Model(x, L.Dense(1)(pooled)), merged


def _masked_run(tf, merge, weights=None):
    ids = np.array([[1, 2, 3, 0, 0], [4, 0, 0, 0, 0], [5, 5, 1, 2, 0], [2, 3, 4, 5, 1]], np.float32)
    y = np.array([[1.0], [0.0], [0.5], [-1.0]], np.float32)
    with tf.Graph().as_default():
        m, merged = _masked_model(tf, merge)
        if weights is not None:
            m.set_weights(weights)
        w0 = m.get_weights()
        sess = tf.keras.backend.get_session()
        mask = sess.run(_mask(tf, merged), {m.inputs[0]: ids})
        pred = m.predict(ids)
        m.compile(tf.keras.optimizers.SGD(0.2), "mse")
        hist = m.fit(ids, y, epochs=3, batch_size=2, shuffle=False, verbose=0).history["loss"]
        return {"w0": w0, "mask": mask, "pred": pred, "hist": hist}


@pytest.mark.parametrize("merge", _MERGES)
def test_masks_through_merge_layers_and_pooling(merge):
    want = _masked_run(tft, merge)
    got = _masked_run(cft, merge, want["w0"])
    np.testing.assert_array_equal(got["mask"], want["mask"])
    np.testing.assert_allclose(got["pred"], want["pred"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["hist"], want["hist"], rtol=1e-4, atol=1e-6)


def _lambda_and_custom(tf, weights=None):
    L = tf.keras.layers

    class Double(L.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.supports_masking = True

        def call(self, inputs):
            return inputs * 2.0

    class DropFirst(L.Layer):
        """Masks the first step too (compute_mask) and sees the mask in call()."""

        def call(self, inputs, mask=None):
            return inputs * tensorflow.cast(tensorflow.expand_dims(mask, -1), inputs.dtype) if tf is tft else \
                inputs * cft.cast(cft.expand_dims(mask, -1), inputs.dtype)

        def compute_mask(self, inputs, mask=None):
            ops = tensorflow if tf is tft else cft
            first = ops.concat([ops.zeros_like(mask[:, :1]), ops.ones_like(mask[:, 1:])], 1)
            return ops.logical_and(mask, ops.cast(first, "bool"))

    ids = np.array([[1, 2, 3, 0], [4, 0, 0, 0], [5, 5, 1, 2]], np.float32)
    y = np.array([[1.0], [0.0], [0.5]], np.float32)
    with tf.Graph().as_default():
        x = L.Input((4,))
        e = L.Embedding(6, 2, mask_zero=True)(x)
        h = L.Lambda(lambda t: t + 1.0, mask=lambda i, m: m)(e)
        h = DropFirst()(Double()(h))
        out = L.Dense(1)(L.LSTM(3)(h))
        m = tf.keras.Model(x, out)
        if weights is not None:
            m.set_weights(weights)
        w0 = m.get_weights()
        mask = tf.keras.backend.get_session().run(_mask(tf, h), {x: ids})
        pred = m.predict(ids)
        m.compile(tf.keras.optimizers.SGD(0.2), "mse")
        hist = m.fit(ids, y, epochs=3, batch_size=3, shuffle=False, verbose=0).history["loss"]
        return {"w0": w0, "mask": mask, "pred": pred, "hist": hist}


def test_lambda_mask_and_custom_layer_masks():
    want = _lambda_and_custom(tft)
    got = _lambda_and_custom(cft, want["w0"])
    np.testing.assert_array_equal(got["mask"], want["mask"])
    np.testing.assert_allclose(got["pred"], want["pred"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["hist"], want["hist"], rtol=1e-4, atol=1e-6)


def test_concatenate_on_the_time_axis_concatenates_masks():
    ids = np.array([[1, 0, 2], [0, 0, 3]], np.float32)
    got = {}
    for tf in (tft, cft):
        with tf.Graph().as_default():
            L = tf.keras.layers
            x = L.Input((3,))
            e = L.Embedding(4, 2, mask_zero=True)(x)
            plain = L.Dense(2)(L.Input((3, 2)))
            c = L.Concatenate(axis=1)([e, e])
            mixed = L.Concatenate()([e, plain])
            got[tf is cft] = (tf.keras.backend.get_session().run(_mask(tf, c), {x: ids}),
                              _mask(tf, mixed).shape.as_list())
    np.testing.assert_array_equal(got[True][0], got[False][0])
    assert got[True][1] == got[False][1]
