"""By-hand tests (NumPy references, no TensorFlow) of the top-k and thresholded tf.metrics,
mean_cosine_distance, mean_relative_error, mean_tensor, percentage_below and
tf.losses.mean_pairwise_squared_error: values streamed over batches, variable names and
collections, and the errors (shapes, k, ranges, label dtypes)."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import InvalidArgumentError

RNG = np.random.default_rng(31)


def _stream(build, batches):
    """build(placeholders) -> (value, update); per batch: (update result, value after it)."""
    g = tf.Graph()
    with g.as_default():
        phs = {k: tf.placeholder(tf.as_dtype(v.dtype.name), [None] + list(v.shape[1:]))
               for k, v in batches[0].items()}
        value, update = build(phs)
        out = []
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            for b in batches:
                u = s.run(update, {phs[k]: v for k, v in b.items()})
                out.append((u, s.run(value)))
        return out


def _topk(p, k):
    return np.argsort(-p, axis=-1, kind="stable")[..., :k]


def _np_counts(p, lab, k, class_id=None):
    tp, fp, fn = [], [], []
    for row, lrow in zip(_topk(p, k), lab):
        P, L = set(row.tolist()), set(np.atleast_1d(lrow).tolist())
        if class_id is not None:
            P, L = P & {class_id}, L & {class_id}
        tp.append(len(P & L))
        fp.append(len(P - L))
        fn.append(len(L - P))
    return np.array(tp, float), np.array(fp, float), np.array(fn, float)


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("class_id", [None, 0, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_precision_recall_at_k_stream(k, class_id, weighted):
    batches = []
    for _ in range(3):
        lab = RNG.integers(-1, 6, (5, 3)).astype(np.int64)
        lab[0, :] = lab[0, 0]
        batches.append({"p": np.round(RNG.uniform(0, 1, (5, 4)), 1).astype(np.float32), "l": lab,
                        "w": RNG.uniform(0, 2, 5).astype(np.float32)})
    for which in ("precision", "recall"):
        fn = tf.metrics.precision_at_k if which == "precision" else tf.metrics.recall_at_k
        got = _stream(lambda ph: fn(ph["l"], ph["p"], k, class_id=class_id, weights=ph["w"] if weighted else None),
                      batches)
        num = den = 0.0
        for b, (u, v) in zip(batches, got):
            tp, fp, fneg = _np_counts(b["p"], b["l"], k, class_id)
            w = b["w"] if weighted else np.ones(5)
            num += (tp * w).sum()
            den += (tp * w).sum() + ((fp if which == "precision" else fneg) * w).sum()
            want = num / den if den else np.nan
            assert isinstance(u, np.floating) and u.dtype == np.float64
            np.testing.assert_allclose([u, v], [want, want], rtol=1e-12)


def test_at_k_variables_and_collections():
    with tf.Graph().as_default():
        p = tf.constant([[0.1, 0.9, 0.3]])
        lab = tf.constant([[1, 2]], tf.int64)
        v, u = tf.metrics.recall_at_k(lab, p, 2, class_id=1, metrics_collections=["m"], updates_collections=["u"])
        tf.metrics.precision_at_k(lab, p, 1)
        tf.metrics.average_precision_at_k(lab, p, 2)
        tf.metrics.precision_at_top_k(lab, tf.constant([[1, 2]]))
        names = [x.name for x in tf.local_variables()]
        assert names == ["recall_at_2_class1/true_positive_at_2_class1:0",
                         "recall_at_2_class1/false_negative_at_2_class1:0",
                         "precision_at_1/true_positive_at_1:0", "precision_at_1/false_positive_at_1:0",
                         "average_precision_at_2/max_1:0", "average_precision_at_2/total:0",
                         "precision_at_k/true_positive_at_k:0", "precision_at_k/false_positive_at_k:0"]
        assert [x.name for x in tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)] == names
        assert tf.get_collection("m") == [v] and tf.get_collection("u") == [u]
        assert tf.trainable_variables() == []


def test_sparse_labels_at_k():
    idx = np.array([[0, 0], [0, 1], [1, 0]], np.int64)
    vals = np.array([2, 0, 1], np.int64)
    p = np.array([[0.1, 0.2, 0.9], [0.8, 0.1, 0.3]], np.float32)
    with tf.Graph().as_default():
        sp = tf.SparseTensor(idx, vals, [2, 2])
        _, up_r = tf.metrics.recall_at_k(sp, p, 1)
        _, up_p = tf.metrics.precision_at_k(sp, p, 2)
        _, up_ap = tf.metrics.average_precision_at_k(sp, p, 2)
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            r, pr, ap = s.run([up_r, up_p, up_ap])
    # top1: {2}, {0}; labels {2, 0}, {1}: tp 1 + 0, fn 1 + 1
    assert r == pytest.approx(1 / 3)
    # top2: {2, 1}, {0, 2}: tp 1 + 0 of 4
    assert pr == pytest.approx(1 / 4)
    # AP row 0: ranks [2, 1] -> 1/1 at rank 1, / min(2, 2); row 1: [0, 2] -> 0
    assert ap == pytest.approx((0.5 + 0.0) / 2)


def test_average_precision_by_hand():
    p = np.array([[0.9, 0.1, 0.5, 0.3], [0.2, 0.4, 0.3, 0.1]], np.float32)
    lab = np.array([[2, 3, -1], [0, 0, 3]], np.int64)
    w = np.array([1.0, 3.0], np.float32)
    got = _stream(lambda ph: tf.metrics.average_precision_at_k(ph["l"], ph["p"], 3, weights=ph["w"]),
                  [{"p": p, "l": lab, "w": w}])
    # row 0: ranking [0, 2, 3]: hits at ranks 2, 3 -> (1/2 + 2/3) / min(2 labels >= 0, 3)
    ap0 = (0.5 + 2 / 3) / 2
    # row 1: ranking [1, 2, 0]: hit at rank 3 -> (1/3) / min(3 labels >= 0, 3)
    ap1 = (1 / 3) / 3
    np.testing.assert_allclose(got[0], [(ap0 + 3 * ap1) / 4] * 2, rtol=1e-12)


def test_at_k_errors():
    with tf.Graph().as_default():
        p = tf.constant([[0.1, 0.5, 0.4]])
        with pytest.raises(ValueError, match="k = 4"):
            tf.metrics.precision_at_k(tf.constant([[1]], tf.int64), p, 4)
        with pytest.raises(ValueError, match="Invalid k=0"):
            tf.metrics.average_precision_at_k(tf.constant([[1]], tf.int64), p, 0)
        with pytest.raises(ValueError, match="Unexpected labels shape"):
            tf.metrics.recall_at_k(tf.constant([[[1]]], tf.int64), p, 1)
        with pytest.raises(TypeError):
            tf.metrics.recall_at_k(tf.constant([[1]], tf.int32), p, 1)
        with pytest.raises(ValueError, match="broadcast"):
            tf.metrics.precision_at_k(tf.constant([[1]], tf.int64), p, 1, weights=tf.ones([3]))


def _confusion(p, lab, ths, w):
    pos = p[None, :] > np.asarray(ths)[:, None]
    lab = lab[None, :].astype(bool)
    return {"tp": ((lab & pos) * w).sum(1), "fp": ((~lab & pos) * w).sum(1),
            "tn": ((~lab & ~pos) * w).sum(1), "fn": ((lab & ~pos) * w).sum(1)}


@pytest.mark.parametrize("weighted", [False, True])
def test_thresholded_counts_stream(weighted):
    ths = [0.8, 0.0, 0.5]          # TF1 does not require them sorted
    batches = [{"p": RNG.uniform(0, 1, 7).astype(np.float32), "l": RNG.integers(0, 2, 7).astype(np.int32),
                "w": RNG.uniform(0, 2, 7).astype(np.float32)} for _ in range(3)]
    fns = {"tp": tf.metrics.true_positives_at_thresholds, "fp": tf.metrics.false_positives_at_thresholds,
           "tn": tf.metrics.true_negatives_at_thresholds, "fn": tf.metrics.false_negatives_at_thresholds}
    for key, fn in fns.items():
        got = _stream(lambda ph: fn(ph["l"], ph["p"], ths, weights=ph["w"] if weighted else None), batches)
        acc = np.zeros(3)
        for b, (u, v) in zip(batches, got):
            acc += _confusion(b["p"], b["l"], ths, b["w"] if weighted else 1.0)[key]
            np.testing.assert_allclose(u, acc, rtol=1e-5)
            np.testing.assert_allclose(v, acc, rtol=1e-5)
    got = _stream(lambda ph: tf.metrics.precision_at_thresholds(ph["l"], ph["p"], ths), batches)
    c = {k: 0.0 for k in ("tp", "fp", "fn", "tn")}
    for b, (u, v) in zip(batches, got):
        for k, x in _confusion(b["p"], b["l"], ths, 1.0).items():
            c[k] = c[k] + x
        np.testing.assert_allclose(v, c["tp"] / (1e-7 + c["tp"] + c["fp"]), rtol=1e-5)
    got = _stream(lambda ph: tf.metrics.recall_at_thresholds(ph["l"], ph["p"], ths), batches[:1])
    c = _confusion(batches[0]["p"], batches[0]["l"], ths, 1.0)
    np.testing.assert_allclose(got[0][1], c["tp"] / (1e-7 + c["tp"] + c["fn"]), rtol=1e-5)


def test_thresholds_names_and_errors():
    with tf.Graph().as_default():
        lab, p = tf.constant([1, 0]), tf.constant([0.3, 0.6])
        tf.metrics.false_negatives_at_thresholds(lab, p, [0.5])
        tf.metrics.recall_at_thresholds(lab, p, [0.5, 0.7])
        tf.metrics.sensitivity_at_specificity(lab, p, 0.5, num_thresholds=7)
        assert [(v.name, v.shape.as_list()) for v in tf.local_variables()] == [
            ("false_negatives/false_negatives:0", [1]), ("recall_at_thresholds/true_positives:0", [2]),
            ("recall_at_thresholds/false_negatives:0", [2]),
            ("sensitivity_at_specificity/true_positives:0", [7]),
            ("sensitivity_at_specificity/false_negatives:0", [7]),
            ("sensitivity_at_specificity/true_negatives:0", [7]),
            ("sensitivity_at_specificity/false_positives:0", [7])]
        with pytest.raises(ValueError, match="incompatible"):
            tf.metrics.precision_at_thresholds(tf.constant([1, 0, 1]), p, [0.5])
        with pytest.raises(ValueError, match="specificity"):
            tf.metrics.sensitivity_at_specificity(lab, p, 1.2)
        with pytest.raises(ValueError, match="sensitivity"):
            tf.metrics.specificity_at_sensitivity(lab, p, -0.5)
        ph = tf.placeholder(tf.float32, [2])
        _, up = tf.metrics.true_positives_at_thresholds(lab, ph, [0.5])
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            with pytest.raises(InvalidArgumentError, match=r"\[0, 1\]"):
                s.run(up, {ph: [0.5, -0.1]})


def _even(n):
    return np.array([-1e-7] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + 1e-7], np.float32)


def test_sensitivity_specificity_by_hand():
    p = RNG.uniform(0, 1, 40).astype(np.float32)
    lab = RNG.integers(0, 2, 40).astype(np.int64)
    n = 20
    c = _confusion(p, lab, _even(n), 1.0)
    eps = 1e-7
    spec = c["tn"] / (c["tn"] + c["fp"] + eps)
    i = int(np.argmin(np.abs(spec - 0.7)))
    want_sens = c["tp"][i] / (c["tp"][i] + c["fn"][i] + eps)
    sens = c["tp"] / (c["tp"] + c["fn"] + eps)
    d = np.abs(sens - 0.6)
    j = int(np.nonzero(d == d.min())[0][-1])       # the last threshold at the minimum
    want_spec = c["tn"][j] / (c["tn"][j] + c["fp"][j] + eps)
    b = [{"p": p, "l": lab}]
    got = _stream(lambda ph: tf.metrics.sensitivity_at_specificity(ph["l"], ph["p"], 0.7, num_thresholds=n), b)
    np.testing.assert_allclose(got[0], [want_sens] * 2, rtol=1e-5)
    got = _stream(lambda ph: tf.metrics.specificity_at_sensitivity(ph["l"], ph["p"], 0.6, num_thresholds=n), b)
    np.testing.assert_allclose(got[0], [want_spec] * 2, rtol=1e-5)


def test_mean_family_by_hand():
    a = RNG.normal(size=(4, 3)).astype(np.float32)
    b = RNG.normal(size=(4, 3)).astype(np.float32)
    nz = RNG.uniform(0.5, 2, (4, 3)).astype(np.float32)
    nz[1, 2] = 0.0
    w = RNG.uniform(0, 2, (4, 1)).astype(np.float32)
    batches = [{"a": a, "b": b, "n": nz, "w": w}, {"a": b, "b": a, "n": nz, "w": w}]
    got = _stream(lambda ph: tf.metrics.mean_cosine_distance(ph["a"], ph["b"], 1, weights=ph["w"]), batches)
    radial = [(x["a"] * x["b"]).sum(1, keepdims=True) for x in batches]
    np.testing.assert_allclose(got[1][1], 1 - (sum((r * w).sum() for r in radial) / (2 * w.sum())), rtol=1e-5)
    got = _stream(lambda ph: tf.metrics.mean_relative_error(ph["a"], ph["b"], ph["n"]), batches[:1])
    rel = np.where(nz == 0, 0.0, np.abs(a - b) / np.where(nz == 0, 1, nz))
    np.testing.assert_allclose(got[0][1], rel.mean(), rtol=1e-5)
    got = _stream(lambda ph: tf.metrics.percentage_below(ph["a"], 0.2, weights=ph["w"]), batches[:1])
    np.testing.assert_allclose(got[0][1], ((a < 0.2) * w).sum() / (w.sum() * 3), rtol=1e-5)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 2])
        ww = tf.placeholder(tf.float32, [2, 2])
        v, u = tf.metrics.mean_tensor(x, weights=ww)
        assert [q.name for q in tf.local_variables()] == ["mean/total_tensor:0", "mean/count_tensor:0"]
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            s.run(u, {x: [[1, 2], [3, 4]], ww: [[1, 0], [1, 1]]})
            got = s.run(u, {x: [[3, 2], [5, 4]], ww: [[1, 0], [3, 1]]})
        np.testing.assert_allclose(got, [[2, 0], [4.5, 4]])
        with pytest.raises(ValueError, match="incompatible"):
            tf.metrics.mean_cosine_distance(tf.ones([2, 3]), tf.ones([2, 4]), 1)
        with pytest.raises(ValueError, match="incompatible"):
            tf.metrics.mean_relative_error(tf.ones([2, 3]), tf.ones([2, 3]), tf.ones([2, 4]))
        with pytest.raises(ValueError, match="fully defined"):
            tf.metrics.mean_tensor(tf.placeholder(tf.float32, [None, 2]))


def _np_pairwise(lab, pred, w):
    """TF1's rule: each example's term, shaped [batch, 1, ...], times the weights, summed."""
    d = (pred - lab).reshape(lab.shape[0], -1)
    wb = np.broadcast_to(w, lab.shape).reshape(lab.shape[0], -1)
    terms = np.zeros([lab.shape[0]] + [1] * (lab.ndim - 1))
    for i in range(d.shape[0]):
        n = (wb[i] != 0).sum()
        if n > 1:
            terms[i] = 2 * (d[i] ** 2).sum() / (n - 1) - 2 * d[i].sum() ** 2 / (n * (n - 1))
    return (terms * w).sum() if (wb != 0).any() else 0.0


@pytest.mark.parametrize("wshape", [None, (4, 1), (4, 3)])
def test_mean_pairwise_squared_error_by_hand(wshape):
    lab = RNG.normal(size=(4, 3)).astype(np.float32)
    pred = RNG.normal(size=(4, 3)).astype(np.float32)
    w = 1.0 if wshape is None else RNG.uniform(0.5, 2, wshape).astype(np.float32)
    if wshape == (4, 3):
        w[2, :2] = 0.0
    with tf.Graph().as_default():
        loss = tf.losses.mean_pairwise_squared_error(lab, pred, weights=w)
        assert tf.get_collection(tf.GraphKeys.LOSSES) == [loss]
        assert loss.name.startswith("mean_pairwise_squared_error/")
        with tf.Session() as s:
            got = s.run(loss)
    if wshape is None:
        # the mean over ordered pairs of squared differences of differences, per example, summed
        d = pred - lab
        want = sum(((d[i][:, None] - d[i][None, :]) ** 2).sum() / (3 * 2) for i in range(4))
        np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(got, _np_pairwise(lab, pred, w), rtol=1e-5)


def test_mean_pairwise_squared_error_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError):
            tf.losses.mean_pairwise_squared_error(None, tf.ones([2, 2]))
        with pytest.raises(ValueError, match="incompatible"):
            tf.losses.mean_pairwise_squared_error(tf.ones([2, 2]), tf.ones([2, 3]))
        with pytest.raises(InvalidArgumentError):
            tf.losses.mean_pairwise_squared_error(tf.ones([2, 2]), tf.ones([2, 2]), weights=tf.ones([3]))
        zero = tf.losses.mean_pairwise_squared_error(tf.ones([2, 2]), tf.zeros([2, 2]), weights=0.0)
        with tf.Session() as s:
            assert s.run(zero) == 0.0
