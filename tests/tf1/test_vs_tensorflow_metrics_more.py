"""Differential tests of the top-k and thresholded tf.metrics, mean_cosine_distance,
mean_relative_error, mean_tensor, percentage_below and tf.losses.mean_pairwise_squared_error
against TensorFlow's tensorflow.compat.v1: the same streaming program (several update batches)
built in both libraries; the values after each update, the local/metric variables' names,
dtypes and shapes, and the metrics/updates collections compared.  Skipped without TensorFlow."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tft = pytest.importorskip("tensorflow.compat.v1")
import collflow.compat.v1 as cft  # noqa: E402

tft.disable_eager_execution()

B, C = 6, 5
RNG = np.random.default_rng(2024)


def _scores(r, shape):
    # rounded so that top_k meets ties (the lower index wins in both)
    return np.round(r.uniform(0.0, 1.0, shape), 1).astype(np.float32)


def _dense_labels(r, n=2):
    lab = r.integers(0, C, (B, n)).astype(np.int64)
    lab[0, -1] = -1                 # a negative label counts as a label nobody predicts
    lab[1, :] = lab[1, 0]           # repeated labels count once
    lab[2, -1] = 7                  # out of range
    return lab


def _sparse_labels(r):
    idx, vals = [], []
    for i in range(B):
        cols = r.integers(0, 4)     # some rows without labels
        for j in range(cols):
            idx.append([i, j])
            vals.append(r.integers(0, C))
    return (np.asarray(idx, np.int64).reshape(-1, 2), np.asarray(vals, np.int64), np.asarray([B, 3], np.int64))


def _run(tf, build, batches):
    """build(tf, placeholders) -> list of (value, update); runs every batch's updates, then the
    values; returns (per-batch [update results, values], local var info, collections' values)."""
    g = tf.Graph()
    with g.as_default():
        phs = {}
        for k, v in batches[0].items():
            if isinstance(v, tuple):
                phs[k] = tf.sparse_placeholder(tf.int64, shape=[None, None])
            else:
                shape = [None] + list(np.shape(v)[1:])
                phs[k] = tf.placeholder(tf.as_dtype(v.dtype.name) if hasattr(tf, "as_dtype") else v.dtype, shape)
        pairs = build(tf, phs)
        info = sorted((v.name, v.dtype.name if hasattr(v.dtype, "name") else str(v.dtype),
                       tuple(v.shape.as_list()), v in tf.get_collection(tf.GraphKeys.METRIC_VARIABLES))
                      for v in tf.local_variables())
        mc, uc = tf.get_collection("mc"), tf.get_collection("uc")
        out = []
        with tf.Session(graph=g) as s:
            s.run(tf.local_variables_initializer())
            for b in batches:
                feed = {phs[k]: v for k, v in b.items()}
                ups = s.run([u for _, u in pairs], feed)
                vals = s.run([v for v, _ in pairs])
                out.append((ups, vals))
            cols = (s.run(mc), len(uc)) if mc else (None, len(uc))
    return out, info, cols


def _compare(build, batches, rtol=1e-5, atol=1e-6):
    want, winfo, wcols = _run(tft, build, batches)
    got, ginfo, gcols = _run(cft, build, batches)
    assert ginfo == winfo
    assert gcols[1] == wcols[1]
    for (gu, gv), (wu, wv) in zip(got, want):
        for a, b in zip(gu + gv, wu + wv):
            a, b = np.asarray(a), np.asarray(b)
            assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    if wcols[0] is not None:
        for a, b in zip(gcols[0], wcols[0]):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _batches(r, n=3, sparse=False, label_cols=2, rank1=False):
    out = []
    for _ in range(n):
        b = {"p": _scores(r, (B, C)), "w": r.uniform(0.0, 2.0, B).astype(np.float32)}
        b["w"][0] = 0.0
        if sparse:
            b["l"] = _sparse_labels(r)
        elif rank1:
            b["l"] = r.integers(0, C, B).astype(np.int64)
        else:
            b["l"] = _dense_labels(r, label_cols)
        out.append(b)
    return out


@pytest.mark.parametrize("fn", ["precision_at_k", "recall_at_k", "sparse_precision_at_k"])
@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("class_id", [None, 2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("labels", ["dense", "rank1", "sparse"])
def test_precision_recall_at_k(fn, k, class_id, weighted, labels):
    r = np.random.default_rng(k * 7 + (class_id or 0))
    batches = _batches(r, sparse=labels == "sparse", rank1=labels == "rank1")

    def build(tf, ph):
        f = getattr(tf.metrics, fn)
        return [f(ph["l"], ph["p"], k, class_id=class_id, weights=ph["w"] if weighted else None,
                  metrics_collections=["mc"], updates_collections=["uc"]),
                f(ph["l"], ph["p"], k, class_id=class_id, name="again")]
    _compare(build, batches)


@pytest.mark.parametrize("fn", ["precision_at_top_k", "recall_at_top_k"])
@pytest.mark.parametrize("k", [None, 3])
@pytest.mark.parametrize("class_id", [None, 1])
@pytest.mark.parametrize("sparse", [False, True])
def test_at_top_k(fn, k, class_id, sparse):
    r = np.random.default_rng(5)
    batches = _batches(r, sparse=sparse)
    for b in batches:
        idx = np.argsort(-b["p"], axis=1, kind="stable")[:, :3].astype(np.int32)
        idx[3, 2] = idx[3, 0]       # a repeated id counts once
        b["i"] = idx

    def build(tf, ph):
        f = getattr(tf.metrics, fn)
        return [f(ph["l"], ph["i"], k=k, class_id=class_id, weights=ph["w"])]
    _compare(build, batches)


@pytest.mark.parametrize("fn", ["average_precision_at_k", "sparse_average_precision_at_k"])
@pytest.mark.parametrize("k", [1, 3, 5])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("labels", ["dense", "rank1", "sparse"])
def test_average_precision_at_k(fn, k, weighted, labels):
    r = np.random.default_rng(k)
    batches = _batches(r, sparse=labels == "sparse", rank1=labels == "rank1", label_cols=3)
    if labels == "sparse":      # TF1 divides by the label count: keep a label in every row
        for b in batches:
            idx, vals, shape = b["l"]
            rows = {int(i) for i in idx[:, 0]}
            extra = [[i, 3] for i in range(B) if i not in rows]
            b["l"] = (np.concatenate([idx, np.asarray(extra, np.int64).reshape(-1, 2)]),
                      np.concatenate([vals, np.ones(len(extra), np.int64)]), np.asarray([B, 4], np.int64))
            order = np.lexsort((b["l"][0][:, 1], b["l"][0][:, 0]))
            b["l"] = (b["l"][0][order], b["l"][1][order], b["l"][2])

    def build(tf, ph):
        f = getattr(tf.metrics, fn)
        return [f(ph["l"], ph["p"], k, weights=ph["w"] if weighted else None,
                  metrics_collections=["mc"], updates_collections=["uc"]),
                f(ph["l"], ph["p"], k)]
    _compare(build, batches)


@pytest.mark.parametrize("fn", ["precision_at_k", "recall_at_k", "average_precision_at_k"])
def test_int32_labels_are_a_type_error(fn):
    for tf in (tft, cft):
        with tf.Graph().as_default():
            with pytest.raises(TypeError):
                getattr(tf.metrics, fn)(tf.constant([[1, 2]], tf.int32), tf.constant([[0.1, 0.2, 0.3]]), 2)


def test_at_k_errors_match():
    for tf in (tft, cft):
        with tf.Graph().as_default():
            p = tf.constant([[0.1, 0.5, 0.4, 0.0]])
            lab = tf.constant([[1]], tf.int64)
            with pytest.raises(ValueError):
                tf.metrics.precision_at_k(lab, p, 5)
            with pytest.raises(ValueError):
                tf.metrics.average_precision_at_k(lab, p, 0)
            with pytest.raises(ValueError):
                tf.metrics.recall_at_k(tf.constant([[[1]]], tf.int64), p, 1)
            with pytest.raises(ValueError):
                tf.metrics.sensitivity_at_specificity(tf.constant([1]), tf.constant([0.3]), 1.5)
            with pytest.raises(ValueError):
                tf.metrics.specificity_at_sensitivity(tf.constant([1]), tf.constant([0.3]), -0.1)
            with pytest.raises(ValueError):
                tf.metrics.precision_at_thresholds(tf.constant([1, 0, 1]), tf.constant([0.3, 0.6]), [0.5])


def _bin_batches(r, n=3, pred_shape=(B,)):
    out = []
    for _ in range(n):
        b = {"p": np.round(r.uniform(0.0, 1.0, pred_shape), 2).astype(np.float32),
             "l": r.integers(0, 2, B).astype(np.int64), "w": r.uniform(0.0, 2.0, B).astype(np.float32)}
        b["l32"] = b["l"].astype(np.int32)
        b["lb"] = b["l"].astype(bool)
        out.append(b)
    return out


@pytest.mark.parametrize("fn", ["true_positives_at_thresholds", "false_positives_at_thresholds",
                                "true_negatives_at_thresholds", "false_negatives_at_thresholds",
                                "precision_at_thresholds", "recall_at_thresholds"])
@pytest.mark.parametrize("thresholds", [[0.0, 0.3, 0.5, 0.9], [0.7, 0.2]])
@pytest.mark.parametrize("lab", ["l", "l32", "lb"])
@pytest.mark.parametrize("weighted", [False, True])
def test_at_thresholds(fn, thresholds, lab, weighted):
    batches = _bin_batches(np.random.default_rng(len(thresholds)))

    def build(tf, ph):
        f = getattr(tf.metrics, fn)
        return [f(ph[lab], ph["p"], thresholds, weights=ph["w"] if weighted else None,
                  metrics_collections=["mc"], updates_collections=["uc"]),
                f(ph[lab], ph["p"], thresholds, name="other")]
    _compare(build, batches)


def test_at_thresholds_squeezes_predictions():
    batches = _bin_batches(np.random.default_rng(3), pred_shape=(B, 1))

    def build(tf, ph):
        return [tf.metrics.recall_at_thresholds(ph["l"], ph["p"], [0.4], weights=ph["w"])]
    _compare(build, batches)


@pytest.mark.parametrize("fn,target", [("sensitivity_at_specificity", 0.5), ("sensitivity_at_specificity", 0.8),
                                       ("specificity_at_sensitivity", 0.5), ("specificity_at_sensitivity", 0.9)])
@pytest.mark.parametrize("num_thresholds", [200, 10])
@pytest.mark.parametrize("weighted", [False, True])
def test_sensitivity_specificity(fn, target, num_thresholds, weighted):
    batches = _bin_batches(np.random.default_rng(num_thresholds))

    def build(tf, ph):
        f = getattr(tf.metrics, fn)
        return [f(ph["l"], ph["p"], target, weights=ph["w"] if weighted else None, num_thresholds=num_thresholds,
                  metrics_collections=["mc"], updates_collections=["uc"])]
    _compare(build, batches)


def test_predictions_out_of_range_fail_when_run():
    for tf in (tft, cft):
        with tf.Graph().as_default():
            p = tf.placeholder(tf.float32, [None])
            _, up = tf.metrics.true_positives_at_thresholds(tf.constant([1, 0]), p, [0.5])
            with tf.Session() as s:
                s.run(tf.local_variables_initializer())
                s.run(up, {p: [0.2, 1.0]})
                with pytest.raises(tf.errors.InvalidArgumentError):
                    s.run(up, {p: [0.2, 1.5]})


@pytest.mark.parametrize("weighted", [False, True])
def test_mean_family(weighted):
    r = np.random.default_rng(9)
    batches = []
    for _ in range(3):
        a = r.normal(size=(B, 3)).astype(np.float32)
        b = r.normal(size=(B, 3)).astype(np.float32)
        a /= np.linalg.norm(a, axis=1, keepdims=True)
        b /= np.linalg.norm(b, axis=1, keepdims=True)
        nz = r.uniform(0.5, 2.0, (B, 3)).astype(np.float32)
        nz[0, 1] = 0.0
        w = r.uniform(0.0, 2.0, (B, 1)).astype(np.float32)
        batches.append({"a": a, "b": b, "n": nz, "w": w, "w3": np.broadcast_to(w, (B, 3)).copy()})

    def build(tf, ph):
        w = ph["w"] if weighted else None
        w3 = ph["w3"] if weighted else None
        return [tf.metrics.mean_cosine_distance(ph["a"], ph["b"], 1, weights=w, metrics_collections=["mc"],
                                                updates_collections=["uc"]),
                tf.metrics.mean_relative_error(ph["a"], ph["b"], ph["n"], weights=w3),
                tf.metrics.mean_tensor(tf.reshape(ph["a"], [B, 3]), weights=w),
                tf.metrics.percentage_below(ph["a"], 0.1, weights=w3),
                tf.metrics.mean_tensor(tf.reshape(ph["b"], [B, 3]), name="again")]
    _compare(build, batches)


@pytest.mark.parametrize("shape,wshape", [((4, 3), None), ((4, 3), ()), ((4, 3), (4, 1)), ((4, 3), (4, 3)),
                                          ((3, 2, 2), (3, 1, 1)), ((4, 1), (4, 1))])
def test_mean_pairwise_squared_error(shape, wshape):
    r = np.random.default_rng(sum(shape))
    lab = r.normal(size=shape).astype(np.float32)
    pred = r.normal(size=shape).astype(np.float32)
    w = None if wshape is None else r.uniform(0.0, 2.0, wshape).astype(np.float32)
    if w is not None and w.ndim == 2 and w.shape[1] == 3:
        w[1, :] = 0.0
        w[2, 0] = 0.0
    if w is not None and w.ndim == 2 and w.shape[1] == 1 and shape[1] == 3:
        w[0, 0] = 0.0

    def run(tf):
        with tf.Graph().as_default():
            p = tf.placeholder(tf.float32, shape)
            kw = {} if w is None else {"weights": tf.constant(w)}
            loss = tf.losses.mean_pairwise_squared_error(tf.constant(lab), p, **kw)
            gr = tf.gradients(loss, p)[0]
            n = len(tf.get_collection(tf.GraphKeys.LOSSES))
            with tf.Session() as s:
                return s.run([loss, gr], {p: pred}), n, loss.dtype.name
    (gl, gg), gn, gd = run(cft)
    (wl, wg), wn, wd = run(tft)
    assert (gn, gd) == (wn, wd)
    np.testing.assert_allclose(gl, wl, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gg, wg, rtol=1e-5, atol=1e-6)
