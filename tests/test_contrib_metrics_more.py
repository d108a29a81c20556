"""The rest of tf.contrib.metrics (collflow/contrib/metrics_more.py, metrics_auc.py) without
TensorFlow: each metric streamed over batches against closed forms in NumPy (counts at
thresholds, curve points, Mann-Whitney AUCs, DeLong's interval, Cohen's kappa, top-k sets),
streaming_concat's growth, variable names and argument errors.
tests/tf1/test_vs_tensorflow_contrib_metrics_more.py compares each with tf_slim's."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

M = tf.contrib.metrics
pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test

RNG = np.random.RandomState(3)
N = 8
P = RNG.rand(3, N).astype(np.float32)                 # three batches of predictions in [0, 1)
L = RNG.randint(0, 2, (3, N)).astype(np.int64)
L[:, :2] = [0, 1]                                     # both labels in every batch
W = np.where(RNG.rand(3, N) < 0.3, 0.0, RNG.rand(3, N) + 0.5).astype(np.float32)


def _stream(value, update, feeds):
    """[(update's result, value after it)] over the feeds, from freshly initialized locals."""
    out = []
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        for feed in feeds:
            out.append((s.run(update, feed), s.run(value, feed)))
    return out


def _placeholders():
    return tf.placeholder(tf.float32, [N]), tf.placeholder(tf.int64, [N]), tf.placeholder(tf.float32, [N])


def _feeds(p, lab, w, k=3):
    return [{p: P[i], lab: L[i], w: W[i]} for i in range(k)]


def _even(n):
    return np.array([-1e-7] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + 1e-7], np.float32)


def _counts(th, k, weighted=True, preds=P):
    """tp, fn, tn, fp at each threshold over the first k batches (prediction > threshold)."""
    p, lab = preds[:k].ravel(), L[:k].ravel().astype(bool)
    w = W[:k].ravel() if weighted else np.ones_like(p)
    pos = p[None, :] > np.asarray(th, np.float32)[:, None]
    return [((a[None, :] & b) * w).sum(1) for a, b in ((lab, pos), (lab, ~pos), (~lab, ~pos), (~lab, pos))]


# -- streaming_concat ------------------------------------------------------------------------

def _capacity(n):
    return int(np.ceil(1.5 ** np.ceil(np.log(n) / np.log(1.5))))


def test_streaming_concat_grows_by_half_and_keeps_every_row():
    x = tf.placeholder(tf.float32, [None, 3])
    value, update = M.streaming_concat(x)
    array = [v for v in tf.local_variables() if v.op.name == "streaming_concat/array"][0]
    assert sorted(v.op.name for v in tf.local_variables()) == ["streaming_concat/array", "streaming_concat/size"]
    rows = [np.arange(n * 3, dtype=np.float32).reshape(n, 3) + 100 * i for i, n in enumerate([2, 1, 3, 0, 5])]
    cap = 0
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        for i, r in enumerate(rows):
            want = np.concatenate(rows[:i + 1])
            assert s.run(update, {x: r}) == len(want)
            np.testing.assert_array_equal(s.run(value), want)
            cap = _capacity(len(want)) if len(want) > cap else cap       # 3, 3, 8, 8, 12
            buf = s.run(array)
            assert buf.shape == (cap, 3)
            np.testing.assert_array_equal(buf[len(want):], 0)
        s.run(tf.local_variables_initializer())                          # a new evaluation
        assert s.run(value).shape == (0, 3)


def test_streaming_concat_other_axis_and_max_size():
    x = tf.placeholder(tf.int32, [2, None])
    value, update = M.streaming_concat(x, axis=-1, max_size=5)
    batches = [np.arange(6).reshape(2, 3), 10 + np.arange(4).reshape(2, 2), 20 + np.arange(4).reshape(2, 2)]
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        got = [(s.run(update, {x: b}), s.run(value)) for b in batches]
    assert [g[0] for g in got] == [3, 5, 5]                  # at most 5 columns kept
    np.testing.assert_array_equal(got[2][1], np.concatenate(batches, 1)[:, :5])
    assert value.dtype == tf.int32


@pytest.mark.parametrize("shape, axis, match", [(None, 0, "statically known rank"), ([2, 3], 2, "not in"),
                                                ([None, None], 1, "statically known size")])
def test_streaming_concat_rejects_unknown_shapes(shape, axis, match):
    with pytest.raises(ValueError, match=match):
        M.streaming_concat(tf.placeholder(tf.float32, shape), axis)


# -- counts and rates at thresholds, curve points ------------------------------------------------

def test_counts_at_thresholds_in_the_current_scope_any_range():
    p, lab, w = _placeholders()
    th = [-0.5, 0.3, 0.7, 1.2]
    fns = [M.streaming_true_positives_at_thresholds, M.streaming_false_negatives_at_thresholds,
           M.streaming_true_negatives_at_thresholds, M.streaming_false_positives_at_thresholds]
    # predictions outside [0, 1] are counted (contrib's counts do not check the range)
    pairs = [fn(p * 2.0 - 0.5, lab, th, w) for fn in fns]
    tp2 = M.streaming_true_positives_at_thresholds(p, lab, [0.5])
    names = sorted(v.op.name for v in tf.local_variables())
    assert names == ["false_negatives", "false_positives", "true_negatives", "true_positives", "true_positives_1"]
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        for i, feed in enumerate(_feeds(p, lab, w)):
            ups = s.run([u for _, u in pairs], feed)
            want = _counts(th, i + 1, preds=P * 2.0 - 0.5)
            for u, v, c in zip(ups, s.run([v for v, _ in pairs]), want):
                np.testing.assert_allclose(u, c, rtol=1e-5)
                np.testing.assert_allclose(v, c, rtol=1e-5)
        assert s.run(tp2[1], feed) == pytest.approx(((P[2] > 0.5) & (L[2] == 1)).sum())


def test_false_positive_and_negative_rates_at_thresholds():
    p, lab, w = _placeholders()
    th = [0.2, 0.5, 0.8]
    fpr = M.streaming_false_positive_rate_at_thresholds(p, lab, th, w)
    fnr = M.streaming_false_negative_rate_at_thresholds(p, lab, th)
    for i, ((fu, fv), (nu, nv)) in enumerate(zip(_stream(fpr[0], fpr[1], _feeds(p, lab, w)),
                                                 _stream(fnr[0], fnr[1], _feeds(p, lab, w)))):
        tp, fn, tn, fp = _counts(th, i + 1)
        np.testing.assert_allclose([fu, fv], [fp / (fp + tn + 1e-7)] * 2, rtol=1e-5)
        tp, fn, tn, fp = _counts(th, i + 1, weighted=False)
        np.testing.assert_allclose([nu, nv], [fn / (fn + tp + 1e-7)] * 2, rtol=1e-5)
    assert sorted(v.op.name for v in tf.local_variables()) == [
        "false_negative_rate_at_thresholds/false_negatives", "false_negative_rate_at_thresholds/true_positives",
        "false_positive_rate_at_thresholds/false_positives", "false_positive_rate_at_thresholds/true_negatives"]


@pytest.mark.parametrize("curve", ["ROC", "PR"])
def test_curve_points(curve):
    p, lab, w = _placeholders()
    points, update = M.streaming_curve_points(lab, p, w, 9, curve=curve)
    assert points.shape.as_list() == [9, 2]
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        for i, feed in enumerate(_feeds(p, lab, w)):
            assert s.run(update, feed) is None
            tp, fn, tn, fp = _counts(_even(9), i + 1)
            rec = (tp + 1e-6) / (tp + fn + 1e-6)
            want = [fp / (fp + tn + 1e-6), rec] if curve == "ROC" else [rec, (tp + 1e-6) / (tp + fp + 1e-6)]
            np.testing.assert_allclose(s.run(points), np.stack(want, 1), rtol=1e-5)
    with pytest.raises(ValueError, match="ROC or PR"):
        M.streaming_curve_points(lab, p, curve="XY")


def test_precision_at_recall_and_recall_at_precision():
    p, lab, w = _placeholders()
    n = 11
    par = M.precision_at_recall(lab, p, 0.6, w, n)
    rap = M.recall_at_precision(lab, p, 0.6, w, n)
    strict = M.recall_at_precision(lab, p, 0.75, w, n, strict_mode=True)
    eps = 1e-7
    for i, ((a, av), (b, bv), (c, cv)) in enumerate(zip(*(_stream(v, u, _feeds(p, lab, w))
                                                         for v, u in (par, rap, strict)))):
        tp, fn, tn, fp = _counts(_even(n), i + 1)
        rec, prec = tp / (tp + fn + eps), tp / (tp + fp + eps)
        j = (rec >= 0.6).sum() - 1                       # the last threshold still recalling 60%
        np.testing.assert_allclose([a, av], [(tp[j] + eps) / (tp[j] + fp[j] + eps)] * 2, rtol=1e-5)
        j = np.argmin(np.abs(prec - 0.6))
        np.testing.assert_allclose([b, bv], [tp[j] / (tp[j] + fn[j] + eps)] * 2, rtol=1e-5)
        above = np.where(prec >= 0.75, prec, np.inf)     # the least precision of at least 75%
        want = tp[np.argmin(above)] / (tp[np.argmin(above)] + fn[np.argmin(above)] + eps) if np.isfinite(
            above.min()) else 0.0
        np.testing.assert_allclose([c, cv], [want] * 2, rtol=1e-5)
    assert {v.op.name.split("/")[0] for v in tf.local_variables()} == {
        "precision_at_recall", "recall_at_precision", "recall_at_precision_1"}


def test_precision_at_recall_without_positives_takes_the_last_threshold():
    p, lab, w = _placeholders()
    value, update = M.precision_at_recall(lab * 0, p, 0.5)
    # no threshold recalls 50%: the last one (above 1) is taken, where nothing is predicted
    assert [u for u, _ in _stream(value, update, _feeds(p, lab, w))] == pytest.approx([1.0] * 3)


@pytest.mark.parametrize("call, match", [
    (lambda lab, p: M.precision_at_recall(lab, p, 1.5), "target_recall"),
    (lambda lab, p: M.recall_at_precision(lab, p, -0.1), "precision")])
def test_rates_reject_targets_outside_0_1(call, match):
    p, lab, _ = _placeholders()
    with pytest.raises(ValueError, match=match):
        call(lab, p)


# -- precision_recall_at_equal_thresholds ------------------------------------------------------

def test_precision_recall_at_equal_thresholds_buckets():
    p, lab, w = _placeholders()
    data, update = M.precision_recall_at_equal_thresholds(tf.cast(lab, tf.bool), p, w, 6)
    assert type(data).__name__ == "PrecisionRecallData"
    assert sorted(v.op.name for v in tf.local_variables()) == [
        "precision_recall_at_equal_thresholds/variables/fp_buckets",
        "precision_recall_at_equal_thresholds/variables/tp_buckets"]
    th = np.linspace(0, 1, 6)
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        for i, feed in enumerate(_feeds(p, lab, w)):
            assert s.run(update, feed) is None
            got = s.run(list(data))
            pp, ll, ww = (x[:i + 1].ravel().astype(np.float64) for x in (P, L, W))
            on = pp[None, :] >= th[:, None] - 1e-9      # prediction >= threshold is positive
            tp, fp = (on * ll * ww).sum(1), (on * (1 - ll) * ww).sum(1)
            tn, fn = fp[0] - fp, tp[0] - tp
            want = [tp, fp, tn, fn, tp / np.maximum(1e-7, tp + fp), tp / np.maximum(1e-7, tp + fn), th]
            for g, x in zip(got, want):
                assert g.dtype == np.float32
                np.testing.assert_allclose(g, x, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError):
        M.precision_recall_at_equal_thresholds(lab, p)     # labels must be bool


# -- cohen_kappa --------------------------------------------------------------------------------

@pytest.mark.parametrize("weighted", [False, True])
def test_cohen_kappa(weighted):
    rng = np.random.RandomState(5)
    labels = rng.randint(0, 3, (3, 10)).astype(np.int64)
    preds = np.where(rng.rand(3, 10) < 0.6, labels, rng.randint(0, 3, (3, 10))).astype(np.int64)
    weights = rng.rand(3, 10).astype(np.float32)
    lab, pred, w = tf.placeholder(tf.int64, [10]), tf.placeholder(tf.int64, [10]), tf.placeholder(tf.float32, [10])
    value, update = M.cohen_kappa(lab, pred, 3, w if weighted else None)
    names = sorted(v.op.name for v in tf.local_variables())
    assert names == ["cohen_kappa/pe_col", "cohen_kappa/pe_row", "cohen_kappa/po"]
    assert {v.dtype.base_dtype for v in tf.local_variables()} == {tf.float32 if weighted else tf.int64}
    got = _stream(value, update, [{lab: labels[i], pred: preds[i], w: weights[i]} for i in range(3)])
    for i, (u, v) in enumerate(got):
        cm = np.zeros((3, 3))
        np.add.at(cm, (labels[:i + 1].ravel(), preds[:i + 1].ravel()),
                  weights[:i + 1].ravel() if weighted else 1.0)
        total = cm.sum()
        po, pe = np.trace(cm) / total, (cm.sum(0) * cm.sum(1)).sum() / total ** 2
        np.testing.assert_allclose([u, v], [(po - pe) / (1 - pe)] * 2, rtol=1e-5)
    with pytest.raises(ValueError, match="num_classes"):
        M.cohen_kappa(lab, pred, 1)


# -- AUCs ---------------------------------------------------------------------------------------

def _mann_whitney(p, lab, w):
    """The weighted probability that a positive outranks a negative (ties count half)."""
    pos, neg = lab == 1, lab == 0
    d = p[pos][:, None] - p[neg][None, :]
    ww = w[pos][:, None] * w[neg][None, :]
    return ((d > 0) * ww + 0.5 * (d == 0) * ww).sum() / ww.sum()


@pytest.mark.parametrize("weighted", [False, True])
def test_streaming_dynamic_auc_roc_is_mann_whitney(weighted):
    p, lab, w = _placeholders()
    coarse = tf.round(p * 4) / 4                              # ties
    value, update = M.streaming_dynamic_auc(lab, coarse, weights=w if weighted else None)
    assert value.dtype == tf.float64
    got = _stream(value, update, _feeds(p, lab, w))
    for i, (u, v) in enumerate(got):
        assert u is None
        pp = np.round(P[:i + 1].ravel() * 4) / 4
        ww = W[:i + 1].ravel() if weighted else np.ones(pp.size)
        assert v == pytest.approx(_mann_whitney(pp, L[:i + 1].ravel(), ww), rel=1e-6)
    names = sorted(x.op.name for x in tf.local_variables())
    assert names == sorted(f"dynamic_auc/concat_{k}/{v}" for k in ["preds", "labels"] + ["weights"] * weighted
                           for v in ("array", "size"))


def test_streaming_dynamic_auc_pr_and_trivial_labels():
    p, lab = tf.placeholder(tf.float32, [None]), tf.placeholder(tf.int64, [None])
    value, update = M.streaming_dynamic_auc(lab, p, curve="PR")
    scores, labels = np.array([0.9, 0.8, 0.8, 0.3, 0.1], np.float32), np.array([1, 0, 1, 1, 0])
    # thresholds 0.9, 0.8, 0.3, 0.1: (recall, precision) from (0, 1): (1/3, 1), (2/3, 2/3), (1, 3/4), (1, 3/5)
    xs, ys = np.array([0, 1 / 3, 2 / 3, 1, 1]), np.array([1, 1, 2 / 3, 3 / 4, 3 / 5])
    want = ((ys[1:] + ys[:-1]) / 2 * np.diff(xs)).sum()
    got = _stream(value, update, [{p: scores[:1], lab: [1]}, {p: scores[1:], lab: labels[1:]}])
    assert got[0][1] == 0.0                                   # one label only: 0
    assert got[1][1] == pytest.approx(want, rel=1e-9)
    with pytest.raises(ValueError, match="ROC or PR"):
        M.streaming_dynamic_auc(lab, p, curve="XY")


def _delong(p, lab, alpha=0.95, logit=True):
    """The AUC and its normal interval from DeLong's placement values (NumPy)."""
    pos, neg = p[lab == 1], p[lab == 0]
    v10 = np.array([((x > neg) + 0.5 * (x == neg)).mean() for x in pos])     # per positive
    v01 = np.array([((pos > y) + 0.5 * (pos == y)).mean() for y in neg])     # per negative
    auc = v10.mean()
    se = np.sqrt(v10.var(ddof=1) / len(pos) + v01.var(ddof=1) / len(neg))
    z = 1.959963984540054 if alpha == 0.95 else 1.6448536269514722
    if not logit:
        return auc, auc - z * se, auc + z * se
    est, se_l = np.log(auc / (1 - auc)), se / (auc * (1 - auc))
    return auc, 1 / (1 + np.exp(-(est - z * se_l))), 1 / (1 + np.exp(-(est + z * se_l)))


@pytest.mark.parametrize("alpha, logit", [(0.95, True), (0.9, False)])
def test_auc_with_confidence_intervals_is_delong(alpha, logit):
    p, lab, w = _placeholders()
    coarse = tf.round(p * 5) / 5
    data, update = M.auc_with_confidence_intervals(lab, coarse, None, alpha, logit)
    assert type(data).__name__ == "AucData" and data.auc.dtype == tf.float32
    got = _stream(list(data), update, _feeds(p, lab, w))
    for i, (u, v) in enumerate(got):
        assert u
        pp = (np.round(P[:i + 1] * 5) / 5).ravel().astype(np.float64)
        np.testing.assert_allclose(v, _delong(pp, L[:i + 1].ravel(), alpha, logit), rtol=2e-5, atol=1e-6)


def test_auc_with_confidence_intervals_light_or_one_label_batches():
    p, lab, w = _placeholders()
    data, update = M.auc_with_confidence_intervals(lab, p, w)
    sizes = [v for v in tf.local_variables() if v.op.name.endswith("/size")]
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        light = {p: P[0], lab: L[0], w: np.full(N, 0.1, np.float32)}
        assert not s.run(update, light)              # weighs less than 1: kept all the same
        assert s.run(sizes) == [N] * 3
        assert s.run(list(data), light) == [0.0] * 3  # ... and the value it is fed with is 0
        one_label = {p: P[1], lab: np.ones(N, np.int64), w: W[1]}
        assert s.run(update, one_label)
        assert s.run(list(data), one_label) == [0.0] * 3
        auc = s.run(data.auc, {p: P[2], lab: L[2], w: W[2]})
    pp = np.concatenate([P[0], P[1]]).astype(np.float64)
    ll, ww = np.concatenate([L[0], np.ones(N, np.int64)]), np.concatenate([np.full(N, 0.1), W[1]])
    assert auc == pytest.approx(_mann_whitney(pp, ll, ww), rel=1e-5)
    with pytest.raises(ValueError, match="alpha"):
        M.auc_with_confidence_intervals(lab, p, alpha=1.0)


def test_auc_using_histogram():
    s_, b = tf.placeholder(tf.float32, [None]), tf.placeholder(tf.bool, [None])
    value, update = M.auc_using_histogram(b, s_, [0.0, 1.0], nbins=4)
    assert sorted(v.op.name for v in tf.local_variables()) == [
        "auc_using_histogram/hist_accumulate/hist_false_acc", "auc_using_histogram/hist_accumulate/hist_true_acc"]
    assert tf.global_variables() == []
    scores = np.array([0.9, 0.7, 0.6, 0.1, 0.3, 0.65], np.float32)
    labels = np.array([1, 1, 0, 0, 1, 0], bool)
    got = _stream(value, update, [{s_: scores[:3], b: labels[:3]}, {s_: scores[3:], b: labels[3:]}])
    # bins [0, .25), [.25, .5), [.5, .75), [.75, 1]: true 0, 1, 1, 1 and false 1, 0, 2, 0; from
    # the top bin down the curve rises by y (true share) 1/3, 1/3, 1/3, 0 as x moves by the
    # false share 0, 2/3, 0, 1/3: area 2/3 * 1/2 + 1/3 * 1, Mann-Whitney's over the bins
    assert got[1][1] == pytest.approx(2 / 3, rel=1e-6)
    assert got[1][1] == pytest.approx(_mann_whitney(np.floor(scores * 4), labels.astype(int), np.ones(6)))
    assert got[0][1] == pytest.approx(0.75)           # first batch: 0.9 above 0.6, 0.7 in its bin
    assert got[0][0] is None
    with pytest.raises(ValueError, match="dtype bool"):
        M.auc_using_histogram(tf.cast(b, tf.int64), s_, [0.0, 1.0])


# -- top-k ids given, accuracy --------------------------------------------------------------------

def test_top_k_forms():
    rng = np.random.RandomState(9)
    scores = rng.rand(3, 5, 4).astype(np.float32)
    labels = rng.randint(0, 4, (3, 5)).astype(np.int64)
    weights = rng.rand(3, 5).astype(np.float32)
    s_, lab, w = tf.placeholder(tf.float32, [5, 4]), tf.placeholder(tf.int64, [5]), tf.placeholder(tf.float32, [5])
    idx = tf.nn.top_k(s_, 2)[1]
    rec = M.sparse_recall_at_top_k(lab, idx)
    prec = M.streaming_sparse_precision_at_top_k(idx, lab, 1, w)
    ap = M.streaming_sparse_average_precision_at_top_k(idx, lab, w)
    names = sorted(v.op.name for v in tf.local_variables())
    assert names == ["average_precision_at_top_k/max", "average_precision_at_top_k/total",
                     "precision_at_k_class1/false_positive_at_k_class1",
                     "precision_at_k_class1/true_positive_at_k_class1",
                     "recall_at_k/false_negative_at_k", "recall_at_k/true_positive_at_k"]
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        for i in range(3):
            feed = {s_: scores[i], lab: labels[i], w: weights[i]}
            got = s.run([rec[1], prec[1], ap[1]], feed)
            top = np.argsort(-scores[:i + 1], -1, kind="stable")[..., :2].reshape(-1, 2)
            ll, ww = labels[:i + 1].ravel(), weights[:i + 1].ravel()
            hit1, hit2 = top[:, 0] == ll, top[:, 1] == ll
            assert got[0] == pytest.approx((hit1 | hit2).mean())
            has1 = (top == 1).any(1)
            assert got[1] == pytest.approx((ww * (has1 & (ll == 1))).sum() / (ww * has1).sum())
            assert got[2] == pytest.approx((ww * (hit1 + hit2 / 2)).sum() / ww.sum())


def test_accuracy_of_one_batch():
    p, lab = tf.constant([1, 2, 3, 4]), tf.constant([1, 2, 0, 4])
    w = tf.constant([1.0, 0.0, 2.0, 1.0])
    with tf.Session() as s:
        assert s.run(M.accuracy(p, lab)) == pytest.approx(0.75)
        assert s.run(M.accuracy(p, lab, w)) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="should match"):
        M.accuracy(tf.cast(p, tf.int64), lab)
    with pytest.raises(ValueError, match="integer"):
        M.accuracy(tf.cast(p, tf.float32), tf.cast(lab, tf.float32))
