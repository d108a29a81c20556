"""The rest of tf.contrib.metrics (collflow/contrib/metrics_more.py, metrics_auc.py) against
tf_slim's metrics: each metric called positionally as TF1 code calls it and updated over three
batches (weights with zeros where it takes them); the update's result, the value and the local
variables' contents after each update, the local variables' names, and the errors of bad arguments are
compared.  Skipped cleanly without TensorFlow or tf_slim."""
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
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

B, C = 6, 4


@pytest.fixture
def slim(tf_slim, monkeypatch):
    """tf_slim, with the other TF-internal names its metric_ops use put back."""
    from tensorflow.python.ops import array_ops, control_flow_ops
    monkeypatch.setattr(array_ops, "stack", tft.stack, raising=False)
    monkeypatch.setattr(control_flow_ops, "Assert", tft.Assert, raising=False)
    return tf_slim


def _batch(rng, i):
    prob = rng.rand(B).astype(np.float32)
    binary = rng.randint(0, 2, B).astype(np.int64)
    binary[:2] = [0, 1]                        # both labels in the first two batches,
    binary[np.argmax(prob)] = 1                # the highest prediction positive, the lowest not
    binary[np.argmin(prob)] = 0
    if i == 2:
        binary[:] = 1                          # one label only in the last
    weights = np.where(rng.rand(B) < 0.3, 0.0, rng.rand(B)).astype(np.float32)
    if i == 1:
        weights *= 0.1                         # a batch weighing less than 1
    return dict(scores=rng.rand(B, C).astype(np.float32), labels=rng.randint(0, C, B).astype(np.int64),
                binary=binary, prob=prob, coarse=np.round(prob * 4) / 4, weights=weights)


def _metric(M, tf, name, ph):
    s, lab, b, p, w, q = (ph[k] for k in ("scores", "labels", "binary", "prob", "weights", "coarse"))
    am = tf.argmax(s, 1)
    idx = tf.nn.top_k(s, 2)[1]
    bb = tf.cast(b, tf.bool)
    return {
        "cohen_kappa": lambda: M.cohen_kappa(lab, am, C),
        "cohen_kappa_weighted": lambda: M.cohen_kappa(lab, am, C, w),
        "cohen_kappa_int_weights": lambda: M.cohen_kappa(tf.expand_dims(lab, 1), am, C, tf.cast(w > 0, tf.int32)),
        "streaming_concat": lambda: M.streaming_concat(s),
        "streaming_concat_axis1": lambda: M.streaming_concat(s, 1),
        "streaming_concat_max_size": lambda: M.streaming_concat(p, 0, 8),
        "streaming_concat_flat": lambda: M.streaming_concat(tf.reshape(s, [-1])),     # 24, 48, 72 of 26, 58, 87
        "streaming_dynamic_auc": lambda: M.streaming_dynamic_auc(b, q),
        "streaming_dynamic_auc_pr_weighted": lambda: M.streaming_dynamic_auc(b, q, "PR", None, None, None, w),
        "streaming_dynamic_auc_roc_weighted": lambda: M.streaming_dynamic_auc(b, p, "ROC", None, None, None, w),
        "auc_using_histogram": lambda: M.auc_using_histogram(bb, p, [0.0, 1.0], 10),
        "auc_using_histogram_default": lambda: M.auc_using_histogram(bb, q, [0.0, 1.0]),
        "auc_with_confidence_intervals": lambda: M.auc_with_confidence_intervals(b, p, w),
        "auc_with_confidence_intervals_plain": lambda: M.auc_with_confidence_intervals(b, q, None, 0.9, False),
        "precision_at_recall": lambda: M.precision_at_recall(b, p, 0.6, w, 20),
        "precision_at_recall_none": lambda: M.precision_at_recall(b, p, 1.0),
        "precision_at_recall_no_positives": lambda: M.precision_at_recall(b * 0, p, 0.5),
        "recall_at_precision": lambda: M.recall_at_precision(b, p, 0.6, w, 20),
        "recall_at_precision_strict": lambda: M.recall_at_precision(b, p, 0.7, None, 20, None, None, None, True),
        "precision_recall_at_equal_thresholds": lambda: M.precision_recall_at_equal_thresholds(bb, p, w, 11),
        "precision_recall_at_equal_thresholds_default": lambda: M.precision_recall_at_equal_thresholds(bb, q),
        "precision_recall_at_equal_thresholds_column_weights":
            lambda: M.precision_recall_at_equal_thresholds(bb, p, tf.expand_dims(w, 1), 5),
        "streaming_curve_points": lambda: M.streaming_curve_points(b, p, w, 10),
        "streaming_curve_points_pr": lambda: M.streaming_curve_points(b, p * 1.5 - 0.2, None, 7, None, None, "PR"),
        "sparse_recall_at_top_k": lambda: M.sparse_recall_at_top_k(lab, idx),
        "sparse_recall_at_top_k_class": lambda: M.sparse_recall_at_top_k(lab, idx, 1, w),
        "streaming_sparse_precision_at_top_k": lambda: M.streaming_sparse_precision_at_top_k(idx, lab),
        "streaming_sparse_precision_at_top_k_class": lambda: M.streaming_sparse_precision_at_top_k(idx, lab, 2, w),
        "streaming_sparse_average_precision_at_top_k": lambda: M.streaming_sparse_average_precision_at_top_k(idx,
                                                                                                            lab),
        "streaming_sparse_average_precision_at_top_k_weighted":
            lambda: M.streaming_sparse_average_precision_at_top_k(idx, lab, w),
        "streaming_true_positives_at_thresholds":
            lambda: M.streaming_true_positives_at_thresholds(p, b, [0.2, 0.5, 0.8], w),
        "streaming_false_positives_at_thresholds": lambda: M.streaming_false_positives_at_thresholds(p, b, [0.5]),
        "streaming_true_negatives_at_thresholds":
            lambda: M.streaming_true_negatives_at_thresholds(p, b, [0.1, 0.9], w),
        "streaming_false_negatives_at_thresholds":
            lambda: M.streaming_false_negatives_at_thresholds(p * 2.0 - 0.5, b, [0.3, 0.6]),   # outside [0, 1]
        "streaming_false_positive_rate_at_thresholds":
            lambda: M.streaming_false_positive_rate_at_thresholds(p, b, [0.2, 0.5, 0.8], w),
        "streaming_false_negative_rate_at_thresholds":
            lambda: M.streaming_false_negative_rate_at_thresholds(p, b, [0.2, 0.5, 0.8]),
        "counts_at_thresholds_twice": lambda: [M.streaming_true_positives_at_thresholds(p, b, [0.4])[1],
                                               M.streaming_true_positives_at_thresholds(p, b, [0.6])[1]],
        "accuracy": lambda: [M.accuracy(am, lab), M.accuracy(am, lab, w)],     # per batch, not streamed
    }[name]()


NAMES = ["cohen_kappa", "cohen_kappa_weighted", "cohen_kappa_int_weights", "streaming_concat", "streaming_concat_axis1",
         "streaming_concat_max_size", "streaming_concat_flat", "streaming_dynamic_auc",
         "streaming_dynamic_auc_pr_weighted", "streaming_dynamic_auc_roc_weighted", "auc_using_histogram",
         "auc_using_histogram_default", "auc_with_confidence_intervals", "auc_with_confidence_intervals_plain",
         "precision_at_recall", "precision_at_recall_none", "precision_at_recall_no_positives",
         "recall_at_precision", "recall_at_precision_strict", "precision_recall_at_equal_thresholds",
         "precision_recall_at_equal_thresholds_default", "streaming_curve_points", "streaming_curve_points_pr",
         "sparse_recall_at_top_k", "sparse_recall_at_top_k_class", "streaming_sparse_precision_at_top_k",
         "streaming_sparse_precision_at_top_k_class", "streaming_sparse_average_precision_at_top_k",
         "streaming_sparse_average_precision_at_top_k_weighted", "streaming_true_positives_at_thresholds",
         "streaming_false_positives_at_thresholds", "streaming_true_negatives_at_thresholds",
         "streaming_false_negatives_at_thresholds", "streaming_false_positive_rate_at_thresholds",
         "streaming_false_negative_rate_at_thresholds", "counts_at_thresholds_twice", "accuracy",
         "precision_recall_at_equal_thresholds_column_weights"]


def _fetchable(x):
    """A metric's value or update (a tensor, an op, or a tuple of them) as a list of fetches."""
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _run(tf, M, name):
    with tf.Graph().as_default():
        rng = np.random.RandomState(11)
        batches = [_batch(rng, i) for i in range(3)]
        ph = {k: tf.placeholder(tf.as_dtype(v.dtype), v.shape) for k, v in batches[0].items()}
        out = _metric(M, tf, name, ph)
        value, update = (None, out) if isinstance(out, list) else out
        local = sorted(v.name for v in tf.local_variables())
        res = []
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            for bt in batches:
                feed = {ph[k]: v for k, v in bt.items()}
                res.append(s.run(_fetchable(update), feed))         # an op's result is None
                if value is not None:
                    # the concat-based values wait on the batch's label checks: fed as TF needs
                    res.append(s.run(_fetchable(value), feed))
                res.append(s.run(sorted(tf.local_variables(), key=lambda v: v.name)))
        return res, local


@pytest.mark.parametrize("name", NAMES)
def test_metric_matches_tf_slim(name, slim):
    want, want_local = _run(tft, slim.metrics, name)
    got, got_local = _run(cft, cft.contrib.metrics, name)
    assert got_local == want_local
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        assert len(a) == len(b), f"{name} fetch {i}"
        for j, (x, y) in enumerate(zip(a, b)):
            if y is None or x is None:
                assert x is None and y is None, f"{name} fetch {i}.{j}: {x!r} vs {y!r}"
                continue
            x, y = np.asarray(x), np.asarray(y)
            assert x.shape == y.shape and x.dtype == y.dtype, f"{name} fetch {i}.{j}: {x!r} vs {y!r}"
            np.testing.assert_allclose(x, y, rtol=2e-5, atol=1e-6, err_msg=f"{name} fetch {i}.{j}")


def test_slim_namespace_has_them_all(slim):
    missing = [n for n in dir(slim.metrics) if not n.startswith("_") and callable(getattr(slim.metrics, n))
               and not hasattr(cft.contrib.slim.metrics, n)]
    assert missing == []


def _bad(M, tf, case):
    p = tf.placeholder(tf.float32, [B])
    b = tf.placeholder(tf.int64, [B])
    return {
        "concat_unknown_rank": lambda: M.streaming_concat(tf.placeholder(tf.float32)),
        "concat_axis": lambda: M.streaming_concat(p, 1),
        "concat_unknown_dim": lambda: M.streaming_concat(tf.placeholder(tf.float32, [None, None]), 1),
        "curve": lambda: M.streaming_curve_points(b, p, None, 10, None, None, "XY"),
        "dynamic_curve": lambda: M.streaming_dynamic_auc(b, p, "XY"),
        "dynamic_shapes": lambda: M.streaming_dynamic_auc(tf.placeholder(tf.int64, [B + 1]), p),
        "alpha": lambda: M.auc_with_confidence_intervals(b, p, None, 1.0),
        "target_recall": lambda: M.precision_at_recall(b, p, 1.5),
        "precision": lambda: M.recall_at_precision(b, p, -0.1),
        "kappa_classes": lambda: M.cohen_kappa(b, b, 1),
        "kappa_rank": lambda: M.cohen_kappa(tf.placeholder(tf.int64, [B, 1, 1]), b, 3),
        "equal_thresholds_labels": lambda: M.precision_recall_at_equal_thresholds(b, p),
        "histogram_labels": lambda: M.auc_using_histogram(b, p, [0.0, 1.0]),
        "thresholds_shapes": lambda: M.streaming_true_positives_at_thresholds(p, tf.placeholder(tf.int64, [B + 1]),
                                                                              [0.5]),
    }[case]()


@pytest.mark.parametrize("case", ["concat_unknown_rank", "concat_axis", "concat_unknown_dim", "curve",
                                  "dynamic_curve", "dynamic_shapes", "alpha", "target_recall", "precision",
                                  "kappa_classes", "kappa_rank", "equal_thresholds_labels", "histogram_labels",
                                  "thresholds_shapes"])
def test_bad_arguments_fail_as_tf_slim(case, slim):
    errors = []
    for tf, M in ((tft, slim.metrics), (cft, cft.contrib.metrics)):
        with tf.Graph().as_default():
            with pytest.raises((ValueError, TypeError)) as e:
                _bad(M, tf, case)
            errors.append(e.type)
    assert errors[0] is errors[1], errors


@pytest.mark.parametrize("which", ["dynamic", "confidence"])
def test_labels_outside_0_1_fail_when_updated(which, slim):
    for tf, M in ((tft, slim.metrics), (cft, cft.contrib.metrics)):
        with tf.Graph().as_default():
            b = tf.constant(np.array([0, 2, 1], np.int64))
            p = tf.constant(np.array([0.1, 0.5, 0.7], np.float32))
            fn = M.streaming_dynamic_auc if which == "dynamic" else M.auc_with_confidence_intervals
            _, update = fn(b, p)
            with tf.Session() as s:
                s.run(tf.local_variables_initializer())
                with pytest.raises(tf.errors.InvalidArgumentError, match="labels must be 0 or 1"):
                    s.run(update)


def test_collections(slim):
    got = []
    for tf, M in ((tft, slim.metrics), (cft, cft.contrib.metrics)):
        with tf.Graph().as_default():
            p = tf.placeholder(tf.float32, [B])
            b = tf.placeholder(tf.int64, [B])
            M.streaming_concat(p, 0, None, ["m"], ["u"])
            M.streaming_curve_points(b, p, None, 5, ["m"], ["u"])
            M.precision_at_recall(b, p, 0.5, None, 5, ["m"], ["u"])
            M.recall_at_precision(b, p, 0.5, None, 5, ["m"], ["u"])
            M.cohen_kappa(b, b, 2, None, ["m"], ["u"])
            M.streaming_dynamic_auc(b, p, "ROC", ["m"], ["u"])
            M.auc_with_confidence_intervals(b, p, None, 0.95, True, ["m"], ["u"])
            M.streaming_false_positive_rate_at_thresholds(p, b, [0.5], None, ["m"], ["u"])
            M.streaming_sparse_average_precision_at_top_k(tf.placeholder(tf.int64, [B, 2]), b, None, ["m"], ["u"])
            g = tf.get_default_graph()
            got.append((len(g.get_collection("m")), len(g.get_collection("u"))))
    assert got[0] == got[1] == (9, 9)
