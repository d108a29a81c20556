"""ProximalGradientDescentOptimizer and ProximalAdagradOptimizer (train/optimizers.py):
TF's updates written out in NumPy, dense and sparse (an embedding's looked-up rows only),
and the same training steps against TensorFlow where it is installed."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf

W0 = np.array([[0.5, -0.2, 0.05], [-1.0, 0.3, 0.0], [0.2, 0.2, -0.4], [0.8, -0.6, 0.1]], np.float64)
IDS = np.array([2, 0, 2], np.int64)


def _train(T, opt, steps=3, dtype=np.float64):
    w = T.Variable(W0.astype(dtype), name="w")
    e = T.Variable(W0.astype(dtype), name="e")
    loss = T.reduce_sum(T.square(T.matmul(w, T.constant(np.arange(3.0, dtype=dtype).reshape(3, 1))) - 1.0)) + \
        T.reduce_sum(T.sin(T.nn.embedding_lookup(e, IDS)))
    step = opt(T).minimize(loss)
    with T.Session() as s:
        s.run(T.global_variables_initializer())
        for _ in range(steps):
            s.run(step)
        return s.run([w, e])


OPTS = {
    "pgd_l1_l2": lambda T: T.train.ProximalGradientDescentOptimizer(0.1, 0.05, 0.2),
    "pgd_plain": lambda T: T.train.ProximalGradientDescentOptimizer(0.1),
    "padagrad_l1_l2": lambda T: T.train.ProximalAdagradOptimizer(0.2, 0.1, 0.05, 0.3),
    "padagrad_l2": lambda T: T.train.ProximalAdagradOptimizer(0.2, l2_regularization_strength=0.3),
}


def _reference(kind, lr, l1, l2, init_acc=0.1, steps=3):
    """NumPy: TF's formulas on the dense weight and on the embedding's rows; Python-float
    hyperparameters pass through float32 first, as every TF1 optimizer's do."""
    lr, l1, l2 = (float(np.float32(v)) for v in (lr, l1, l2))
    w, e = W0.copy(), W0.copy()
    aw, ae = np.full_like(w, init_acc), np.full_like(e, init_acc)
    x = np.arange(3.0).reshape(3, 1)

    def prox(v, a, g):
        p = v - a * g
        return np.sign(p) * np.maximum(np.abs(p) - a * l1, 0) / (1 + a * l2)
    for _ in range(steps):
        gw = 2 * (w @ x - 1.0) @ x.T
        rows, counts = np.unique(IDS, return_counts=True)
        ge = np.cos(e[rows]) * counts[:, None]
        if kind == "pgd":
            w = prox(w, lr, gw)
            e[rows] = prox(e[rows], lr, ge)
        else:
            aw += gw * gw
            w = prox(w, lr / np.sqrt(aw), gw)
            ae[rows] += ge * ge
            e[rows] = prox(e[rows], lr / np.sqrt(ae[rows]), ge)
    return w, e


@pytest.mark.parametrize("name,ref", [("pgd_l1_l2", ("pgd", 0.1, 0.05, 0.2)), ("pgd_plain", ("pgd", 0.1, 0.0, 0.0)),
                                      ("padagrad_l1_l2", ("adagrad", 0.2, 0.05, 0.3)),
                                      ("padagrad_l2", ("adagrad", 0.2, 0.0, 0.3))])
def test_updates_are_tfs_formulas(name, ref):
    kind, lr, l1, l2 = ref
    with tf.Graph().as_default():
        w, e = _train(tf, OPTS[name])
    rw, re_ = _reference(kind, lr, l1, l2)
    np.testing.assert_allclose(w, rw, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(e, re_, rtol=1e-12, atol=1e-14)
    if "l1" in name:
        assert (w == 0).any() or (e == 0).any()  # L1 zeroes small weights exactly


@pytest.mark.parametrize("name", sorted(OPTS))
def test_matches_tensorflow(name):
    tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tft = tensorflow.compat.v1
    tft.disable_eager_execution()
    # float32: TF's ProximalAdagrad refuses float64 variables (its hyperparameters are float32)
    with tf.Graph().as_default():
        ours = _train(tf, OPTS[name], dtype=np.float32)
    with tft.Graph().as_default():
        theirs = _train(tft, OPTS[name], dtype=np.float32)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6)
