"""Differential test against TensorFlow 1.x: tf.layers.batch_normalization(renorm=True).

Batch renormalization in training, inference and under a bool placeholder, with clipping,
another axis and no beta: the output, the gradients of the input and every trainable
variable, the variables' names, and every variable after two runs of UPDATE_OPS must equal
TF's.  Skipped cleanly without TensorFlow.
"""
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
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.timeout(600)]

X = np.random.default_rng(0).uniform(-1, 1, (8, 3, 4, 5)).astype(np.float32)
CONFIGS = {
    "train": dict(renorm=True, training=True),
    "clipping": dict(renorm=True, renorm_clipping={"rmax": 1.5, "rmin": 0.5, "dmax": 0.3}, renorm_momentum=0.9,
                     training=True),
    "axis1_no_center": dict(renorm=True, axis=1, center=False, training=True, renorm_momentum=0.5),
    "inference": dict(renorm=True, training=False),
    "placeholder_true": dict(renorm=True, training=True, renorm_clipping={"rmax": 1.2, "dmax": 0.1}, feed=True),
    "placeholder_false": dict(renorm=True, training=False, feed=True),
}


def _run(tf, cfg):
    cfg = dict(cfg)
    feed_it = cfg.pop("feed", False)
    with tf.Graph().as_default():
        x = tf.constant(X)
        feed = {}
        if feed_it:
            ph = tf.placeholder(tf.bool, [])
            feed = {ph: cfg["training"]}
            cfg["training"] = ph
        y = tf.layers.batch_normalization(x, **cfg)
        grads = tf.gradients(tf.reduce_sum(y * y), [x] + tf.trainable_variables())
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out = s.run([y] + [g for g in grads if g is not None], feed)
            for _ in range(2):
                s.run(tf.get_collection(tf.GraphKeys.UPDATE_OPS), feed)
            vs = sorted(tf.global_variables(), key=lambda v: v.name)
            return [v.name for v in vs], out + s.run(vs)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_batch_renorm_matches_tensorflow(name):
    want_names, want = _run(tft, CONFIGS[name])
    got_names, got = _run(cft, CONFIGS[name])
    assert got_names == want_names
    for k, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"{name}: fetch {k}")


def test_keras_and_layer_classes_take_renorm():
    # tf.layers.BatchNormalization and Keras's take the same renorm arguments
    def run(tf, keras):
        with tf.Graph().as_default():
            x = tf.constant(X)
            a = tf.layers.BatchNormalization(renorm=True, renorm_momentum=0.8)(x, training=True)
            b = keras.layers.BatchNormalization(renorm=True, renorm_clipping={"rmax": 1.3})(x, training=True)
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                return sorted(v.name for v in tf.global_variables()), s.run([a, b])
    import tf_keras
    want_names, want = run(tft, tf_keras)
    got_names, got = run(cft, cft.keras)
    assert got_names == want_names
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
