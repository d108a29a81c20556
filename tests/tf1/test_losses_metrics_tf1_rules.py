"""By-hand checks (no TensorFlow needed) of TF1 rules of tf.losses / tf.metrics that collflow
once got wrong; the expected numbers are computed here with NumPy from the documented rules."""
import numpy as np
import pytest

import collflow.compat.v1 as tf


def _run(fetches, feed=None, init_locals=True):
    with tf.Session() as s:
        if init_locals:
            s.run(tf.local_variables_initializer())
        return s.run(fetches, feed)


def test_mean_reduction_divides_by_a_negative_weight_sum():
    # TF1: Reduction.MEAN is div_no_nan(sum(w * l), sum(w)): only a zero sum gives 0
    with tf.Graph().as_default():
        p = tf.constant([1.0, 2.0])
        loss = tf.losses.absolute_difference([0.0, 0.0], p, weights=[1.0, -3.0], reduction=tf.losses.Reduction.MEAN)
        grad = tf.gradients(loss, p)[0]
        zero = tf.losses.absolute_difference([0.0, 0.0], p, weights=[1.0, -1.0], reduction=tf.losses.Reduction.MEAN)
        value, g, z = _run([loss, grad, zero], init_locals=False)
    np.testing.assert_allclose(value, (1.0 - 6.0) / (1.0 - 3.0))      # 2.5
    np.testing.assert_allclose(g, [1.0 / -2.0, -3.0 / -2.0])          # w * sign(p) / sum(w)
    assert z == 0.0


def test_regularization_loss_of_nothing_is_an_unnamed_constant():
    with tf.Graph().as_default():
        t = tf.losses.get_regularization_loss()
        assert t.name == "Const:0"
        assert _run(t, init_locals=False) == 0.0
        with pytest.raises(ValueError):
            tf.losses.get_total_loss()


def test_labels_with_a_squeezable_dimension():
    # TF1's remove_squeezable_dimensions: labels [B, 1] against predictions [B] lose the 1
    lab = np.array([[1], [2], [0], [1]], np.int64)
    pred = np.array([1, 0, 0, 1], np.int64)
    with tf.Graph().as_default():
        acc, acc_up = tf.metrics.accuracy(lab, pred)
        mae, mae_up = tf.metrics.mean_absolute_error(lab.astype(np.float32), pred.astype(np.float32))
        tp, tp_up = tf.metrics.true_positives(lab > 0, pred > 0)
        rec, rec_up = tf.metrics.recall(lab > 0, pred > 0)
        a, m, t, r = _values([acc, mae, tp, rec], [acc_up, mae_up, tp_up, rec_up])
    flat = lab[:, 0]
    np.testing.assert_allclose(a, np.mean(flat == pred))                        # 0.75
    np.testing.assert_allclose(m, np.mean(np.abs(flat - pred)))                 # 0.5
    assert t == np.sum((flat > 0) & (pred > 0))                                 # 2
    np.testing.assert_allclose(r, 2 / 3, rtol=1e-6)


def _values(values, updates):
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        s.run(updates)
        return s.run(values)


def test_per_example_weights_weigh_rows():
    # TF1: weights of one dimension fewer than the predictions gain a trailing 1, so weights
    # [B] weigh predictions [B, C] row by row (B == C here, where a trailing alignment would
    # silently weigh columns instead)
    v = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], np.float32)
    w = np.array([1.0, 0.0, 2.0], np.float32)
    wr = w[:, None] * np.ones_like(v)
    lab = np.array([[1, 0, 1], [1, 1, 0], [0, 1, 1]], np.int64)
    prob = np.array([[0.9, 0.2, 0.4], [0.6, 0.8, 0.1], [0.3, 0.7, 0.55]], np.float32)
    with tf.Graph().as_default():
        pairs = [tf.metrics.mean(v, weights=w), tf.metrics.true_positives(lab, prob > 0.5, weights=w),
                 tf.metrics.precision_at_thresholds(lab, prob, [0.5], weights=w),
                 tf.metrics.mean_tensor(v, weights=w)]
        mean, tp, prec, mt = _values([p[0] for p in pairs], [p[1] for p in pairs])
    np.testing.assert_allclose(mean, np.sum(v * wr) / np.sum(wr), rtol=1e-6)     # 5.5
    pos = (lab > 0) & (prob > 0.5)
    assert tp == np.sum(pos * wr)
    fp = (lab == 0) & (prob > 0.5)
    np.testing.assert_allclose(prec, [np.sum(pos * wr) / (1e-7 + np.sum(pos * wr) + np.sum(fp * wr))], rtol=1e-6)
    np.testing.assert_allclose(mt, np.where(wr > 0, v, 0.0), rtol=1e-6)   # elementwise: row 1 never counted


def test_weights_that_cannot_broadcast():
    with tf.Graph().as_default():
        with pytest.raises(ValueError):      # rank 1 against rank 3: known when built
            tf.metrics.mean(np.ones([2, 2, 2], np.float32), weights=np.ones([2], np.float32))
        with pytest.raises(ValueError):      # a dimension neither 1 nor the values'
            tf.metrics.mean(np.ones([2, 3], np.float32), weights=np.ones([2, 2], np.float32))
        v = tf.placeholder(tf.float32, [None])
        w = tf.placeholder(tf.float32, [None])
        _, up = tf.metrics.mean(v, weights=w)
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            assert s.run(up, {v: [2.0, 4.0], w: [1.0, 3.0]}) == pytest.approx(3.5)
            with pytest.raises(tf.errors.InvalidArgumentError):   # known only when run: TF1's assertion
                s.run(up, {v: [5.0], w: [1.0, 1.0]})


def _np_counts(lab, pred, ths):
    pos = pred[None, :] > np.asarray(ths)[:, None]
    lab = lab[None, :] > 0
    return ((lab & pos).sum(1), (lab & ~pos).sum(1), (~lab & ~pos).sum(1), (~lab & pos).sum(1))


def test_auc_given_thresholds_are_sorted_and_get_end_points():
    # TF1: thresholds -> [-1e-7] + sorted(thresholds) + [1 + 1e-7]
    lab = np.array([1, 0, 1, 1, 0, 0, 1], np.int64)
    pred = np.array([0.9, 0.6, 0.3, 0.8, 0.1, 0.4, 0.65], np.float32)
    with tf.Graph().as_default():
        value, update = tf.metrics.auc(lab, pred, thresholds=[0.7, 0.2])
        shapes = sorted((x.op.name, tuple(x.shape.as_list())) for x in tf.local_variables())
        got = _values(value, update)
    assert shapes == [(f"auc/{n}", (4,)) for n in ("false_negatives", "false_positives", "true_negatives",
                                                     "true_positives")]
    tp, fn, tn, fp = [c.astype(np.float64) for c in _np_counts(lab, pred, [-1e-7, 0.2, 0.7, 1 + 1e-7])]
    eps = 1e-6
    tpr, fpr = (tp + eps) / (tp + fn + eps), fp / (fp + tn + eps)
    want = np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_auc_pr_careful_interpolation():
    # TF1 (Davis & Goadrich): between adjacent thresholds tp grows linearly with the predicted
    # positives P, and the area is the integral of precision tp(P) / P over recall tp / positives;
    # integrated here numerically
    r = np.random.default_rng(3)
    lab = (r.random(40) < 0.4).astype(np.int64)
    pred = np.round(r.random(40), 2).astype(np.float32)
    n = 7
    with tf.Graph().as_default():
        value, update = tf.metrics.auc(lab, pred, curve="PR", summation_method="careful_interpolation",
                                       num_thresholds=n)
        got = _values(value, update)
    ths = [-1e-7] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + 1e-7]
    tp, fn, tn, fp = [c.astype(np.float64) for c in _np_counts(lab, pred, ths)]
    p, positives = tp + fp, tp[0] + fn[0]
    want = 0.0
    for i in range(n - 1):
        if p[i] - p[i + 1] <= 0:
            continue
        slope = (tp[i] - tp[i + 1]) / (p[i] - p[i + 1])
        grid = np.linspace(p[i + 1], p[i], 200001)
        mid = (grid[:-1] + grid[1:]) / 2
        precision = (tp[i + 1] + slope * (mid - p[i + 1])) / mid
        want += np.sum(precision * slope * np.diff(grid)) / positives
    np.testing.assert_allclose(got, want, rtol=1e-4)
    # the trapezoidal estimate differs on these numbers, so the check above has teeth
    eps = 1e-6
    rec, prec = (tp + eps) / (tp + fn + eps), (tp + eps) / (tp + fp + eps)
    assert abs(np.sum((rec[:-1] - rec[1:]) * (prec[:-1] + prec[1:]) / 2) - want) > 1e-3
