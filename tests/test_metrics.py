"""tf.metrics (collflow/nn/metrics.py): streaming values over batches against NumPy, weights,
restarting with the local-variables initializer, TF1's variable and tensor names; against
TensorFlow where it is installed."""
import numpy as np
import pytest

import collflow.compat.v1 as cft

BATCHES = [(np.array([1, 0, 1, 1]), np.array([1, 1, 0, 1]), np.array([1.0, 2.0, 0.5, 1.0])),
           (np.array([0, 0, 1, 0]), np.array([0, 1, 1, 0]), np.array([2.0, 1.0, 1.0, 3.0])),
           (np.array([1, 1, 1, 0]), np.array([0, 1, 1, 1]), np.array([1.0, 0.0, 1.0, 1.0]))]


def _eval(tf):
    g = tf.Graph()
    with g.as_default():
        lab = tf.placeholder(tf.int64, [4])
        pred = tf.placeholder(tf.int64, [4])
        w = tf.placeholder(tf.float32, [4])
        lf, pf = tf.cast(lab, tf.float32), tf.cast(pred, tf.float32)
        ms = {"accuracy": tf.metrics.accuracy(lab, pred),
              "accuracy_w": tf.metrics.accuracy(lab, pred, weights=w),
              "mean": tf.metrics.mean(lf * 2.0 + pf),
              "mse": tf.metrics.mean_squared_error(lf, pf * 0.5, weights=w),
              "rmse": tf.metrics.root_mean_squared_error(lf, pf * 0.5),
              "mae": tf.metrics.mean_absolute_error(lf, pf * 0.3, weights=w),
              "precision": tf.metrics.precision(lab, pred),
              "recall": tf.metrics.recall(lab, pred, weights=w),
              "tp": tf.metrics.true_positives(lab, pred), "fp": tf.metrics.false_positives(lab, pred),
              "fn": tf.metrics.false_negatives(lab, pred), "tn": tf.metrics.true_negatives(lab, pred, weights=w),
              "iou": tf.metrics.mean_iou(lab, pred, 3), "iou_w": tf.metrics.mean_iou(lab, pred, 2, weights=w),
              "class_acc": tf.metrics.mean_per_class_accuracy(lab, pred, 2),
              "class_acc_w": tf.metrics.mean_per_class_accuracy(lab, pred, 2, weights=w)}
        names = sorted(v.op.name for v in tf.local_variables())
        init = tf.local_variables_initializer()
    s = tf.Session(graph=g)
    s.run(init)
    updates, values = [], []
    for lv, pv, wv in BATCHES:
        updates.append(s.run({k: m[1] for k, m in ms.items()}, {lab: lv, pred: pv, w: wv}))
        values.append(s.run({k: m[0] for k, m in ms.items()}))
    s.run(init)
    restarted = s.run({k: m[0] for k, m in ms.items()})
    return names, updates, values, restarted


def test_streaming_values_match_numpy():
    names, updates, values, restarted = _eval(cft)
    assert "accuracy/total" in names and "precision/true_positives/count" in names and "accuracy_1/count" in names
    for k in range(3):
        lab = np.concatenate([b[0] for b in BATCHES[:k + 1]]).astype(np.float64)
        pred = np.concatenate([b[1] for b in BATCHES[:k + 1]]).astype(np.float64)
        w = np.concatenate([b[2] for b in BATCHES[:k + 1]])
        tp, fp, fn = ((lab > 0) & (pred > 0)), ((lab == 0) & (pred > 0)), ((lab > 0) & (pred == 0))
        want = {"accuracy": np.mean(lab == pred), "accuracy_w": np.sum((lab == pred) * w) / w.sum(),
                "mean": np.mean(lab * 2 + pred), "mse": np.sum((lab - pred * 0.5) ** 2 * w) / w.sum(),
                "rmse": np.sqrt(np.mean((lab - pred * 0.5) ** 2)), "mae": np.sum(np.abs(lab - pred * 0.3) * w) / w.sum(),
                "precision": tp.sum() / (tp.sum() + fp.sum()), "recall": (tp * w).sum() / ((tp * w).sum() + (fn * w).sum()),
                "tp": tp.sum(), "fp": fp.sum(), "fn": fn.sum(), "tn": (((lab == 0) & (pred == 0)) * w).sum()}
        for name, v in want.items():
            np.testing.assert_allclose(updates[k][name], v, rtol=1e-6, err_msg=name)
            np.testing.assert_allclose(values[k][name], v, rtol=1e-6, err_msg=name)
        # mean IoU over the classes seen (class 2 never is: left out); its update_op is the matrix
        cm = np.array([[np.sum((lab == i) & (pred == j)) for j in range(3)] for i in range(3)], np.float64)
        inter, union = np.diag(cm), cm.sum(0) + cm.sum(1) - np.diag(cm)
        np.testing.assert_allclose(values[k]["iou"], np.mean(inter[:2] / union[:2]), rtol=1e-6)
        np.testing.assert_array_equal(updates[k]["iou"], cm)
        per_class = [np.mean(pred[lab == c] == c) for c in (0, 1)]
        np.testing.assert_allclose(values[k]["class_acc"], np.mean(per_class), rtol=1e-6)
        np.testing.assert_allclose(updates[k]["class_acc"], per_class, rtol=1e-6)
    assert all(v == 0.0 for v in restarted.values())  # a metric over nothing is 0


def test_mismatched_shapes_are_named():
    g = cft.Graph()
    with g.as_default():
        with pytest.raises(cft.errors.InvalidArgumentError, match="accuracy: labels of shape"):
            cft.metrics.accuracy(cft.constant([1, 2, 3]), cft.constant([1, 2]))


def test_against_tensorflow():
    tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
    tft = tensorflow.compat.v1
    tft.disable_eager_execution()
    got, want = _eval(cft), _eval(tft)
    assert got[0] == want[0]  # the local variables' names
    for a, b in zip(got[1] + got[2] + [got[3]], want[1] + want[2] + [want[3]]):
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-6, err_msg=k)
