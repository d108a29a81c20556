"""tf.contrib.metrics / slim.metrics (collflow/contrib/metrics.py) without TensorFlow: the
predictions-first order, streaming covariance and Pearson correlation over several batches
against NumPy, the rates, count and aggregate_metric_map.
tests/tf1/test_vs_tensorflow_contrib_metrics.py compares each with tf_slim's."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

M = tf.contrib.metrics
pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test


def test_streaming_metrics_over_batches_match_numpy():
    rng = np.random.RandomState(0)
    xs, ys = rng.randn(3, 8).astype(np.float32), rng.randn(3, 8).astype(np.float32)
    ys += xs  # correlated
    x, y = tf.placeholder(tf.float32, [8]), tf.placeholder(tf.float32, [8])
    pred, lab = tf.placeholder(tf.int64, [8]), tf.placeholder(tf.int64, [8])
    values, updates = M.aggregate_metric_map({
        "cov": M.streaming_covariance(x, y), "r": M.streaming_pearson_correlation(x, y),
        "acc": M.streaming_accuracy(pred, lab), "fpr": M.streaming_false_positive_rate(pred > 0, lab > 0),
        "n": M.count(x)})
    ps, ls = rng.randint(0, 2, (3, 8)), rng.randint(0, 2, (3, 8))
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        for i in range(3):
            s.run(updates, {x: xs[i], y: ys[i], pred: ps[i], lab: ls[i]})
        got = s.run(values)
    np.testing.assert_allclose(got["cov"], np.cov(xs.ravel(), ys.ravel())[0, 1], rtol=1e-5)
    np.testing.assert_allclose(got["r"], np.corrcoef(xs.ravel(), ys.ravel())[0, 1], rtol=1e-5)
    np.testing.assert_allclose(got["acc"], (ps == ls).mean())
    fp, tn = ((ps == 1) & (ls == 0)).sum(), ((ps == 0) & (ls == 0)).sum()
    np.testing.assert_allclose(got["fpr"], fp / (fp + tn), rtol=1e-6)
    assert got["n"] == 24.0


def test_covariance_is_nan_until_two_values():
    x = tf.placeholder(tf.float32, [None])
    value, update = M.streaming_covariance(x, x * 2.0)
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        assert np.isnan(s.run(update, {x: [1.0]}))
        assert s.run(update, {x: [3.0]}) == pytest.approx(4.0)


def test_f1_score_is_the_best_over_thresholds():
    # thresholds below 0.3 call every example positive: tp 3, fp 1 -> P 3/4, R 1 -> F1 6/7, the
    # best of the curve (from 0.3: 2/3; from 0.6: 0.4; from 0.8: 0.5)
    labels = tf.constant([1, 0, 1, 1])
    preds = tf.constant([0.9, 0.8, 0.3, 0.6])
    f1, update = tf.contrib.metrics.f1_score(labels, preds, num_thresholds=11)
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        assert s.run(update) == pytest.approx(6 / 7, abs=1e-6)
        assert s.run(f1) == pytest.approx(6 / 7, abs=1e-6)
        s.run(update)  # a second identical batch doubles every count: the same best F1
        assert s.run(f1) == pytest.approx(6 / 7, abs=1e-6)
    names = sorted(v.op.name for v in tf.local_variables())
    assert names == ["f1/false_negatives", "f1/false_positives", "f1/true_positives"]
