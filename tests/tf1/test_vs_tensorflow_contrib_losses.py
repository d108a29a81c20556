"""tf.contrib.losses (= slim.losses: predictions or logits FIRST, contrib's weighted mean over
the present entries) against tf_slim's losses, TF1 contrib's kept as a package: every loss
with positional arguments, scalar / per-example / per-entry weights with zeros, label
smoothing, the LOSSES collection and get_total_loss, values and gradients.  Skipped cleanly
without TensorFlow or tf_slim."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402
from test_vs_tensorflow_feature_columns_layers_fuzz import tf_slim  # noqa: E402,F401  (the patched tf_slim)

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]

B, C = 4, 3


def _weights(kind, rng, shape):
    if kind == "scalar":
        return 0.7
    if kind == "zero":
        return 0.0
    if kind == "batch":
        w = rng.uniform(0, 2, [shape[0]]).astype(np.float32)
    elif kind == "batch1":
        w = rng.uniform(0, 2, [shape[0], 1]).astype(np.float32)
    else:
        w = rng.uniform(0, 2, shape).astype(np.float32)
    w.flat[0] = 0.0  # an absent entry
    return w


def _build(tf, L, name, kind, seed):
    rng = np.random.RandomState(seed)
    logits = tf.constant(rng.randn(B, C).astype(np.float32))
    probs = tf.constant(rng.uniform(0.05, 0.95, (B, C)).astype(np.float32))
    onehot = tf.constant(np.eye(C, dtype=np.float32)[rng.randint(0, C, B)])
    binary = tf.constant(rng.randint(0, 2, (B, C)).astype(np.float32))
    target = tf.constant(rng.randn(B, C).astype(np.float32))
    w = _weights(kind, rng, [B, C] if name != "sparse_softmax_cross_entropy" else [B])
    if name in ("softmax_cross_entropy", "sparse_softmax_cross_entropy", "cosine_distance") and kind == "full":
        w = _weights("batch", rng, [B])
    ins = [logits, probs]
    if name == "softmax_cross_entropy":
        out = L.softmax_cross_entropy(logits, onehot, w, 0.1 * (seed % 2))
    elif name == "sparse_softmax_cross_entropy":
        out = L.sparse_softmax_cross_entropy(logits, tf.constant(rng.randint(0, C, (B, 1)).astype(np.int32)), w)
    elif name == "sigmoid_cross_entropy":
        out = L.sigmoid_cross_entropy(logits, binary, w, 0.2 * (seed % 2))
    elif name == "log_loss":
        out = L.log_loss(probs, binary, w)
    elif name == "hinge_loss":
        out = L.hinge_loss(logits, binary)
    elif name == "cosine_distance":
        out = L.cosine_distance(tf.nn.l2_normalize(logits, 1), tf.nn.l2_normalize(target, 1), 1, w)
    else:
        out = getattr(L, name)(logits, target, w)
    return out, ins


NAMES = ["softmax_cross_entropy", "sparse_softmax_cross_entropy", "sigmoid_cross_entropy", "log_loss", "hinge_loss",
         "mean_squared_error", "absolute_difference", "mean_pairwise_squared_error", "cosine_distance"]
KINDS = ["scalar", "zero", "batch", "batch1", "full"]


def _run(tf, L, name, kind, seed):
    with tf.Graph().as_default():
        out, ins = _build(tf, L, name, kind, seed)
        grads = [g for g in tf.gradients(tf.reduce_sum(out), ins) if g is not None]
        n_losses = len(L.get_losses())
        total = L.get_total_loss() if n_losses else tf.constant(0.0)
        with tf.Session() as s:
            return s.run([out, total] + grads), n_losses


# hinge_loss takes no weights: one case
CASES = [(n, k) for n in NAMES for k in KINDS if n != "hinge_loss" or k == "scalar"]


@pytest.mark.parametrize("name,kind", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_loss_matches_tf_slim(name, kind, tf_slim):
    if name == "mean_pairwise_squared_error" and kind == "full":
        # per-example terms [batch] times weights [batch, classes]: both refuse the shapes
        for tf, L in ((tft, tf_slim.losses), (cft, cft.contrib.slim.losses)):
            with pytest.raises(ValueError):
                _run(tf, L, name, kind, 0)
        return
    for seed in (0, 1):
        want, n_want = _run(tft, tf_slim.losses, name, kind, seed)
        got, n_got = _run(cft, cft.contrib.slim.losses, name, kind, seed)
        assert n_got == n_want and len(got) == len(want)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"{name} {kind} seed {seed}")


def test_compute_weighted_loss_rank3_and_regularization(tf_slim):
    res = []
    for tf, L in ((tft, tf_slim.losses), (cft, cft.contrib.losses)):
        with tf.Graph().as_default():
            rng = np.random.RandomState(3)
            losses = tf.constant(rng.rand(2, 3, 4).astype(np.float32))
            w = rng.rand(2, 3).astype(np.float32)
            w[1, 2] = 0
            a = L.compute_weighted_loss(losses, w)
            b = L.compute_weighted_loss(losses, tf.constant(w[:, :, None] * 0 + 1))
            tf.add_to_collection(tf.GraphKeys.REGULARIZATION_LOSSES, tf.constant(0.25))
            with tf.Session() as s:
                res.append(s.run([a, b, L.get_total_loss(), L.get_total_loss(False)]))
    np.testing.assert_allclose(res[1], res[0], rtol=1e-6)
