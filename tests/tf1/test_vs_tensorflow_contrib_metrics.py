"""tf.contrib.metrics (= slim.metrics: predictions FIRST) against tf_slim's metrics, TF1 contrib's
kept as a package: each metric called positionally as TF1 code calls it, updated over three
batches (weights with zeros where it takes them); the values after each update, the final
value, and the local variables' names are compared, and aggregate_metric_map as slim's
evaluation script uses it.  Skipped cleanly without TensorFlow or tf_slim."""
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

B, C = 6, 4


def _batch(rng):
    scores = rng.rand(B, C).astype(np.float32)
    return dict(scores=scores, labels=rng.randint(0, C, B).astype(np.int64),
                binary=rng.randint(0, 2, B).astype(np.int64), prob=rng.rand(B).astype(np.float32),
                value=rng.randn(B).astype(np.float32), target=rng.randn(B).astype(np.float32),
                weights=np.where(rng.rand(B) < 0.3, 0.0, rng.rand(B)).astype(np.float32),
                unit=(scores / np.linalg.norm(scores, axis=1, keepdims=True)).astype(np.float32))


def _metric(M, name, ph):
    s, lab, b, p, v, t, w = (ph[k] for k in ("scores", "labels", "binary", "prob", "value", "target", "weights"))
    argmax = ph["argmax"]
    return {
        "streaming_accuracy": lambda: M.streaming_accuracy(argmax, lab, w),
        "streaming_mean": lambda: M.streaming_mean(v, w),
        "streaming_mean_tensor": lambda: M.streaming_mean_tensor(s),
        "streaming_precision": lambda: M.streaming_precision(p > 0.5, b, w),
        "streaming_recall": lambda: M.streaming_recall(p > 0.5, b),
        "streaming_true_positives": lambda: M.streaming_true_positives(p > 0.5, b, w),
        "streaming_false_negatives": lambda: M.streaming_false_negatives(p > 0.5, b),
        "streaming_false_positive_rate": lambda: M.streaming_false_positive_rate(p > 0.5, b, w),
        "streaming_false_negative_rate": lambda: M.streaming_false_negative_rate(p > 0.5, b),
        "streaming_auc": lambda: M.streaming_auc(p, b, w, 50),
        "streaming_auc_pr": lambda: M.streaming_auc(p, b, None, 30, None, None, "PR"),
        "streaming_recall_at_k": lambda: M.streaming_recall_at_k(s, lab, 2),
        "streaming_sparse_recall_at_k": lambda: M.streaming_sparse_recall_at_k(s, lab, 2),
        "streaming_sparse_precision_at_k": lambda: M.streaming_sparse_precision_at_k(s, lab, 1),
        "streaming_sparse_average_precision_at_k": lambda: M.streaming_sparse_average_precision_at_k(s, lab, 3),
        "streaming_mean_absolute_error": lambda: M.streaming_mean_absolute_error(v, t, w),
        "streaming_mean_squared_error": lambda: M.streaming_mean_squared_error(v, t),
        "streaming_root_mean_squared_error": lambda: M.streaming_root_mean_squared_error(v, t, w),
        "streaming_mean_relative_error": lambda: M.streaming_mean_relative_error(v, t, t * 0 + 2.0),
        "streaming_percentage_less": lambda: M.streaming_percentage_less(v, 0.2, w),
        "streaming_mean_iou": lambda: M.streaming_mean_iou(argmax, lab, C),
        "streaming_precision_at_thresholds": lambda: M.streaming_precision_at_thresholds(p, b, [0.2, 0.5, 0.8]),
        "streaming_specificity_at_sensitivity": lambda: M.streaming_specificity_at_sensitivity(p, b, 0.6),
        "streaming_covariance": lambda: M.streaming_covariance(v, t, w),
        "streaming_covariance_unweighted": lambda: M.streaming_covariance(v, t),
        "streaming_pearson_correlation": lambda: M.streaming_pearson_correlation(v, t, w),
        "streaming_mean_cosine_distance": lambda: M.streaming_mean_cosine_distance(ph["unit"], ph["unit2"], 1),
        "count": lambda: M.count(v, w),
        "f1_score": lambda: M.f1_score(b, p),
        "f1_score_weighted_coarse": lambda: M.f1_score(b, p, w, num_thresholds=7),
    }[name]()


NAMES = ["streaming_accuracy", "streaming_mean", "streaming_mean_tensor", "streaming_precision", "streaming_recall",
         "streaming_true_positives", "streaming_false_negatives", "streaming_false_positive_rate",
         "streaming_false_negative_rate", "streaming_auc", "streaming_auc_pr", "streaming_recall_at_k",
         "streaming_sparse_recall_at_k", "streaming_sparse_precision_at_k", "streaming_sparse_average_precision_at_k",
         "streaming_mean_absolute_error", "streaming_mean_squared_error", "streaming_root_mean_squared_error",
         "streaming_mean_relative_error", "streaming_percentage_less", "streaming_mean_iou",
         "streaming_precision_at_thresholds", "streaming_specificity_at_sensitivity", "streaming_covariance",
         "streaming_covariance_unweighted", "streaming_pearson_correlation", "streaming_mean_cosine_distance", "count",
         "f1_score", "f1_score_weighted_coarse"]


def _run(tf, M, name):
    with tf.Graph().as_default():
        rng = np.random.RandomState(7)
        batches = [_batch(rng) for _ in range(3)]
        ph = {k: tf.placeholder(tf.as_dtype(v.dtype), v.shape) for k, v in batches[0].items()}
        ph["argmax"] = tf.argmax(ph["scores"], 1)
        ph["unit2"] = tf.reverse(ph["unit"], [0])
        value, update = _metric(M, name, ph)
        local = sorted(v.name for v in tf.local_variables())
        out = []
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            for bt in batches:
                out.append(s.run(update, {ph[k]: v for k, v in bt.items()}))
            out.append(s.run(value))
        return out, local


@pytest.mark.parametrize("name", NAMES)
def test_metric_matches_tf_slim(name, tf_slim):
    want, want_local = _run(tft, tf_slim.metrics, name)
    got, got_local = _run(cft, cft.contrib.slim.metrics, name)
    assert got_local == want_local
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"{name} step {i}")


def test_aggregate_metric_map_as_slim_eval(tf_slim):
    res = []
    for tf, M in ((tft, tf_slim.metrics), (cft, cft.contrib.metrics)):
        with tf.Graph().as_default():
            logits = tf.constant(np.random.RandomState(1).rand(8, 5).astype(np.float32))
            labels = tf.constant(np.random.RandomState(2).randint(0, 5, 8).astype(np.int64))
            values, updates = M.aggregate_metric_map({
                "Accuracy": M.streaming_accuracy(tf.argmax(logits, 1), labels),
                "Recall_5": M.streaming_recall_at_k(logits, labels, 3)})
            v2, u2 = M.aggregate_metrics(M.streaming_mean(tf.reduce_sum(logits, 1)), M.count(logits))
            with tf.Session() as s:
                s.run(tf.local_variables_initializer())
                s.run(list(updates.values()) + u2)
                res.append((sorted(values), s.run(values), s.run(v2)))
    assert res[0][0] == res[1][0]
    for k in res[0][1]:
        np.testing.assert_allclose(res[1][1][k], res[0][1][k], rtol=1e-6)
    np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-6)
    with pytest.raises(ValueError, match="at least one"):
        cft.contrib.metrics.aggregate_metrics()
