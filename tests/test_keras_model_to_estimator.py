"""tf.keras.estimator.model_to_estimator: an Estimator over a compiled Keras model that starts
from the model's weights (model_dir/keras/keras_model.ckpt), predicts by output name and trains
and evaluates with the model's loss, optimizer and metrics as fit/evaluate would."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf


def _data():
    r = np.random.RandomState(2)
    x = r.rand(64, 4).astype(np.float32)
    return x, (x.sum(1) > 2).astype(np.int64)


def _functional(opt):
    inp = tf.keras.Input((4,), name="feat")
    h = tf.keras.layers.Dense(8, activation="relu")(inp)
    out = tf.keras.layers.Dense(2, activation="softmax", name="probs")(h)
    m = tf.keras.Model(inp, out)
    m.compile(opt(), "sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


def _input_fn(x, y=None, key="feat"):
    def fn():
        feats = {key: x} if key else x
        return tf.data.Dataset.from_tensor_slices(feats if y is None else (feats, y)).batch(16)
    return fn


def _predict(est, x, key="probs"):
    return np.stack([p[key] for p in est.predict(_input_fn(x))])


@pytest.mark.parametrize("opt", [lambda: tf.keras.optimizers.Adam(0.02),
                                 lambda: tf.keras.optimizers.SGD(0.1, momentum=0.9),
                                 lambda: tf.train.GradientDescentOptimizer(0.2)], ids=["adam", "sgd", "tf_train"])
def test_train_evaluate_predict_match_keras(tmp_path, opt):
    x, y = _data()
    with tf.Graph().as_default():
        m = _functional(opt)
        before = m.predict(x)
        est = tf.keras.estimator.model_to_estimator(keras_model=m, model_dir=str(tmp_path))
        m.fit(x, y, epochs=1, batch_size=16, shuffle=False, verbose=0)  # the same 4 steps
        after = m.predict(x)
        loss, acc = m.evaluate(x, y, batch_size=16, verbose=0)
    assert os.path.exists(str(tmp_path / "keras" / "checkpoint.json"))
    np.testing.assert_allclose(_predict(est, x), before, rtol=1e-6, atol=1e-7)  # the model's weights
    est.train(_input_fn(x, y), steps=4)
    np.testing.assert_allclose(_predict(est, x), after, rtol=1e-5, atol=1e-6)
    res = est.evaluate(_input_fn(x, y))
    assert res["global_step"] == 4
    np.testing.assert_allclose(res["acc"], acc, rtol=1e-6)
    np.testing.assert_allclose(res["loss"], loss, rtol=1e-5)


def test_sequential_model_path_and_single_tensor_features(tmp_path):
    x, y = _data()
    path = str(tmp_path / "m.h5")
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.Dense(3, activation="tanh", input_shape=(4,)),
                                 tf.keras.layers.Dropout(0.5), tf.keras.layers.Dense(1, name="out")])
        m.compile("rmsprop", "mse", metrics=["mae"])
        m.fit(x, y.astype(np.float32), epochs=1, verbose=0)
        want = m.predict(x)
        m.save(path)
    est = tf.keras.estimator.model_to_estimator(keras_model_path=path, model_dir=str(tmp_path / "est"))
    got = np.stack([p["out"] for p in est.predict(_input_fn(x, key=None))])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)  # dropout is off when predicting
    est.train(_input_fn(x, y.astype(np.float32)[:, None], key=None), steps=2)
    res = est.evaluate(_input_fn(x, y.astype(np.float32)[:, None], key=None))
    assert set(res) == {"loss", "mean_absolute_error", "global_step"} and res["global_step"] == 2


def test_sample_weights_and_arguments_checked(tmp_path):
    x, y = _data()
    with tf.Graph().as_default():
        m = _functional(lambda: tf.keras.optimizers.SGD(0.1))
        loss = m.evaluate(x, y, sample_weight=np.where(y == 1, 2.0, 0.5), batch_size=64, verbose=0)[0]
        est = tf.keras.estimator.model_to_estimator(m, model_dir=str(tmp_path))
        with pytest.raises(ValueError, match="Either"):
            tf.keras.estimator.model_to_estimator()
        with pytest.raises(ValueError, match="not both"):
            tf.keras.estimator.model_to_estimator(m, keras_model_path="x.h5")
        bare = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
        with pytest.raises(ValueError, match="not been compiled"):
            tf.keras.estimator.model_to_estimator(bare)

    def weighted():
        w = np.where(y == 1, 2.0, 0.5).astype(np.float32)
        return tf.data.Dataset.from_tensors(({"features": {"feat": x}, "sample_weights": w}, y))
    res = est.evaluate(weighted, steps=1)
    np.testing.assert_allclose(res["loss"], loss, rtol=1e-5)
    with pytest.raises(KeyError, match="expected input keys"):
        est.evaluate(_input_fn(x, y, key="wrong"), steps=1)
