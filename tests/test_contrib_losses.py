"""tf.contrib.losses / slim.losses (collflow/contrib/losses.py) without TensorFlow: the
predictions-first argument order, contrib's weighted mean over present entries, hinge_loss
unreduced, the LOSSES collection.  tests/tf1/test_vs_tensorflow_contrib_losses.py compares
every loss with tf_slim's."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test


def test_slim_losses_take_logits_first_and_weight_present_entries():
    rng = np.random.RandomState(0)
    logits = rng.randn(4, 3).astype(np.float32)
    labels = np.eye(3, dtype=np.float32)[[0, 2, 1, 2]]
    w = np.array([1.0, 0.0, 2.0, 0.5], np.float32)
    slim = tf.contrib.slim
    a = slim.losses.softmax_cross_entropy(logits, labels, w)
    b = tf.losses.softmax_cross_entropy(labels, logits, w, reduction=tf.losses.Reduction.SUM_BY_NONZERO_WEIGHTS)
    pred, target = rng.rand(4, 3).astype(np.float32), rng.rand(4, 3).astype(np.float32)
    ww = rng.rand(4, 3).astype(np.float32)
    ww[0, 1] = ww[2, 2] = 0.0
    mse = tf.contrib.losses.mean_squared_error(pred, target, ww)
    hinge = tf.contrib.losses.hinge_loss(tf.constant(logits), labels)
    assert len(tf.contrib.losses.get_losses()) == 3  # tf.losses adds too; hinge_loss adds nothing
    with tf.Session() as s:
        va, vb, vm, vh, total = s.run([a, b, mse, hinge, tf.contrib.losses.get_total_loss()])
    np.testing.assert_allclose(va, vb, rtol=1e-6)
    xent = -np.log((np.exp(logits) / np.exp(logits).sum(1, keepdims=True))[np.arange(4), [0, 2, 1, 2]])
    np.testing.assert_allclose(va, (xent * w).sum() / 3, rtol=1e-5)  # three nonzero weights
    np.testing.assert_allclose(vm, (((pred - target) ** 2) * ww).sum() / 10, rtol=1e-5)
    np.testing.assert_allclose(vh, np.maximum(0, 1 - (2 * labels - 1) * logits), rtol=1e-6)
    np.testing.assert_allclose(total, va + vb + vm, rtol=1e-6)
    with pytest.raises(ValueError, match="must specify 'axis'"):
        tf.contrib.losses.cosine_distance(pred, target)
