"""Randomised differential checks of tf.losses.* and tf.metrics.* against TensorFlow's
tensorflow.compat.v1 (graph mode), with fixed seeds.

Losses: every tf.losses function over random shapes and dtypes, weights (none, Python float,
scalar, per-sample, per-element, broadcastable, with zeros, all zeros, negative, int; fed or
constant), every Reduction and loss_collection (default, None, a custom one); compared: the
values, dtypes, the LOSSES collection's size, get_total_loss, and the gradients w.r.t. the
predictions/logits and the fed weights.  Errors must match too (both or neither).
Metrics: the streaming metrics not covered by test_vs_tensorflow_metrics_more.py's fixed cases
(and some that are, over random shapes) fed 1-3 random batches with weights (none, per-sample
[B, 1..], per-sample flat [B], per-element, with zeros, scalar, all zeros), labels with a
squeezable trailing dimension, and sometimes tf.local_variables_initializer() re-run before the
last batch; compared: the value before/after each update, the update results, the local
variables' names/dtypes/shapes, the METRIC_VARIABLES count and the value/update dtypes.
Skipped without TensorFlow.
"""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tft = pytest.importorskip("tensorflow.compat.v1")
import collflow.compat.v1 as cft  # noqa: E402

tft.disable_eager_execution()


def _outcome(fn):
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 - the two libraries must fail alike
        return None, e


def _both(run, *args):
    (want, we), (got, ge) = _outcome(lambda: run(tft, *args)), _outcome(lambda: run(cft, *args))
    assert (we is None) == (ge is None), f"tf: {we!r}\ncollflow: {ge!r}"
    return want, got


def _close(a, b, rtol, atol, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol, err_msg=what)


# -- losses ------------------------------------------------------------------------------------

REDUCTIONS = [None, "none", "weighted_sum", "weighted_mean", "weighted_sum_over_batch_size",
              "weighted_sum_by_nonzero_weights"]
LOSSES = ["absolute_difference", "mean_squared_error", "huber_loss", "log_loss", "hinge_loss", "cosine_distance",
          "sigmoid_cross_entropy", "softmax_cross_entropy", "sparse_softmax_cross_entropy", "compute_weighted_loss",
          "mean_pairwise_squared_error"]
WEIGHTS = ["default", "pyfloat", "scalar", "scalar0", "per_sample", "per_element", "broadcast", "allzero", "zeros",
           "negative", "int"]


def _loss_weights(r, lshape, kind):
    if kind == "default":
        return None
    if kind == "pyfloat":
        return float(r.choice([0.0, 0.5, 2.0]))
    if kind == "scalar":
        return np.float32(r.uniform(0, 2))
    if kind == "scalar0":
        return np.float32(0)
    if kind == "per_sample":
        return r.uniform(0, 2, [lshape[0]] + [1] * (len(lshape) - 1)).astype(np.float32)
    if kind == "allzero":
        return np.zeros([d if r.random() < 0.5 else 1 for d in lshape], np.float32)
    if kind == "negative":
        return r.uniform(-2, 0.5, lshape).astype(np.float32)
    if kind == "int":
        return r.integers(0, 3, lshape).astype(np.int32)
    if kind == "broadcast":
        w = r.uniform(0, 2, [d if r.random() < 0.5 else 1 for d in lshape]).astype(np.float32)
    else:
        w = r.uniform(0, 2, lshape).astype(np.float32)
    if kind == "zeros":
        w[r.random(w.shape) < 0.4] = 0.0
    return w


def _loss_case(seed):
    """(build(tf, placeholders), feeds, keys to differentiate) of a random loss case."""
    r = np.random.default_rng(seed)
    fn = LOSSES[seed % len(LOSSES)]
    red = REDUCTIONS[r.integers(len(REDUCTIONS))]
    rank = int(r.integers(1, 5))
    if "softmax" in fn:
        rank = max(rank, 2)
    shape = [int(r.integers(1, 5)) for _ in range(rank)]
    dt = np.float32 if r.random() < 0.85 else np.float64
    feeds, kw, lshape = {}, {}, shape
    if fn == "sparse_softmax_cross_entropy":
        feeds["x"] = r.normal(0, 2, shape).astype(dt)
        lab = r.integers(0, shape[-1], shape[:-1]).astype(np.int32 if r.random() < .5 else np.int64)
        feeds["y"] = lab[..., None] if r.random() < 0.3 else lab
        lshape = shape[:-1]
    elif fn == "softmax_cross_entropy":
        feeds["x"] = r.normal(0, 2, shape).astype(dt)
        lab = np.eye(shape[-1])[r.integers(0, shape[-1], shape[:-1])]
        if r.random() < 0.3:
            lab = r.dirichlet(np.ones(shape[-1]), shape[:-1])
        feeds["y"] = lab.astype(dt)
        lshape = shape[:-1]
        if r.random() < 0.5:
            kw["label_smoothing"] = float(r.choice([0.1, 0.3, 1.0]))
    elif fn == "sigmoid_cross_entropy":
        feeds["x"] = r.normal(0, 2, shape).astype(dt)
        feeds["y"] = ((r.random(shape) < 0.5) if r.random() < .7 else r.random(shape)).astype(dt)
        if r.random() < 0.5:
            kw["label_smoothing"] = float(r.choice([0.1, 0.3, 1.0]))
    elif fn == "log_loss":
        feeds["x"] = r.uniform(0.01, 0.99, shape).astype(dt)
        feeds["y"] = (r.random(shape) < .5).astype(dt)
        if r.random() < 0.5:
            kw["epsilon"] = float(r.choice([1e-3, 0.1]))
    elif fn == "hinge_loss":
        feeds["x"] = r.normal(0, 2, shape).astype(dt)
        feeds["y"] = (r.random(shape) < .5).astype(dt)
    elif fn == "cosine_distance":
        a, b = r.normal(size=shape), r.normal(size=shape)
        ax = int(r.integers(-rank, rank))
        feeds["x"] = (a / np.linalg.norm(a, axis=ax, keepdims=True)).astype(dt)
        feeds["y"] = (b / np.linalg.norm(b, axis=ax, keepdims=True)).astype(dt)
        kw["axis"] = ax
        lshape = list(shape)
        lshape[ax] = 1
    elif fn == "compute_weighted_loss":
        feeds["x"] = r.uniform(0, 3, shape).astype(dt)
    else:
        feeds["x"] = r.normal(size=shape).astype(dt)
        feeds["y"] = r.normal(size=shape).astype(dt)
        if fn == "huber_loss" and r.random() < .6:
            kw["delta"] = float(r.choice([0.3, 1.0, 2.5]))
    wkind = WEIGHTS[r.integers(len(WEIGHTS))]
    if fn == "sparse_softmax_cross_entropy" and r.random() < 0.3 and wkind not in ("default", "pyfloat", "scalar",
                                                                                      "scalar0"):
        lshape = list(lshape) + [1]          # [batch, 1] weights are squeezed as [batch, 1] labels
    w = _loss_weights(r, lshape, wkind)
    fed = w is not None and not isinstance(w, float) and r.random() < 0.6
    if fed:
        feeds["w"] = np.asarray(w)
    if red is not None and fn != "mean_pairwise_squared_error":
        kw["reduction"] = red
    coll = ["default", "none", "custom"][r.integers(3)]

    def build(tf, ph):
        k = dict(kw)
        if w is not None:
            k["weights"] = ph["w"] if fed else w
        if coll != "default":
            k["loss_collection"] = None if coll == "none" else "my_losses"
        f = getattr(tf.losses, fn)
        return f(ph["x"], **k) if fn == "compute_weighted_loss" else f(ph["y"], ph["x"], **k)
    keys = ["x"] + (["w"] if fed and wkind != "int" else [])
    return build, feeds, keys


def _run_loss(tf, build, feeds, keys):
    g = tf.Graph()
    with g.as_default():
        ph = {k: tf.placeholder(tf.as_dtype(v.dtype.name), v.shape) for k, v in feeds.items()}
        out = build(tf, ph)
        listed = tf.get_collection(tf.GraphKeys.LOSSES)
        total = [tf.losses.get_total_loss()] if listed else []
        s = tf.reduce_sum(tf.cast(out, tf.float32) * 1.5)
        grads = [tf.gradients(s, ph[k])[0] for k in keys]
        grads = [tf.zeros_like(ph[k]) if gr is None else gr for gr, k in zip(grads, keys)]
        with tf.Session(graph=g) as sess:
            vals = sess.run([out] + total + grads, {ph[k]: v for k, v in feeds.items()})
    return vals, out.dtype.name, len(listed), len(g.get_collection("my_losses"))


@pytest.mark.parametrize("chunk", range(10))
def test_losses_random(chunk):
    for seed in range(chunk * 15, chunk * 15 + 15):
        build, feeds, keys = _loss_case(seed)
        want, got = _both(_run_loss, build, feeds, keys)
        if want is None:
            continue
        assert got[1:] == want[1:], (seed, got[1:], want[1:])
        for i, (a, b) in enumerate(zip(got[0], want[0])):
            _close(a, b, 1e-4, 1e-5, f"seed {seed} fetch {i}")


def _collections_program(tf):
    out = {}
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 2.0], [3.0, -1.0]])
        y = tf.constant([[0.5, 2.5], [2.0, 0.0]])
        with tf.name_scope("a"):
            l1 = tf.losses.mean_squared_error(y, x)
        with tf.name_scope("b"):
            l2 = tf.losses.absolute_difference(y, x, loss_collection="mine")
            l3 = tf.losses.huber_loss(y, x, loss_collection=None)
        tf.losses.add_loss(tf.constant(0.25, name="extra"))
        tf.losses.add_loss(tf.constant(0.5), loss_collection=tf.GraphKeys.REGULARIZATION_LOSSES)
        with tf.variable_scope("v"):
            tf.get_variable("k", [2], initializer=tf.ones_initializer(),
                            regularizer=lambda t: 0.1 * tf.reduce_sum(t))
        out["lists"] = [[t.name for t in ts] for ts in (
            tf.losses.get_losses(), tf.losses.get_losses(scope="a"), tf.losses.get_losses(loss_collection="mine"),
            tf.losses.get_regularization_losses(), tf.losses.get_regularization_losses(scope="v"))]
        ts = [tf.losses.get_total_loss(), tf.losses.get_total_loss(add_regularization_losses=False, name="tl2"),
              tf.losses.get_regularization_loss(), tf.losses.get_regularization_loss(scope="nothing"),
              tf.losses.get_total_loss(scope="a")]
        out["names"] = [t.name for t in ts]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out["values"] = s.run(ts + [l1, l2, l3])
    with tf.Graph().as_default():
        out["empty_reg"] = tf.losses.get_regularization_loss().name
        with pytest.raises(ValueError):
            tf.losses.get_total_loss()
    return out


def test_loss_collections():
    want, got = _collections_program(tft), _collections_program(cft)
    assert got["lists"] == want["lists"]
    # [3]: get_regularization_loss() of nothing is an unnamed constant ("Const_<n>": n counts
    # the graph's other unnamed constants, which the two libraries make differently)
    assert got["names"][:3] + got["names"][4:] == want["names"][:3] + want["names"][4:]
    assert got["names"][3].startswith("Const") and want["names"][3].startswith("Const")
    assert got["empty_reg"] == want["empty_reg"] == "Const:0"
    _close(got["values"], want["values"], 1e-6, 1e-6, "values")


# -- metrics -----------------------------------------------------------------------------------

METRICS = ["accuracy", "mean", "mean_absolute_error", "mean_squared_error", "root_mean_squared_error",
           "true_positives", "false_positives", "true_negatives", "false_negatives", "precision", "recall", "auc",
           "mean_iou", "mean_per_class_accuracy", "precision_at_thresholds", "recall_at_thresholds",
           "true_positives_at_thresholds", "false_negatives_at_thresholds", "sensitivity_at_specificity",
           "specificity_at_sensitivity", "mean_cosine_distance", "mean_relative_error", "percentage_below",
           "mean_tensor"]
METRIC_WEIGHTS = ["none", "per_sample", "per_sample_flat", "per_element", "zeros", "scalar", "allzero"]


def _metric_batch(r, fn, shape, ncls, labels_squeezable, wkind, boolean):
    b = {}
    if fn == "accuracy":
        b["l"], b["p"] = r.integers(0, 3, shape), r.integers(0, 3, shape)
    elif fn in ("mean_iou", "mean_per_class_accuracy"):
        b["l"], b["p"] = r.integers(0, ncls, shape).astype(np.int32), r.integers(0, ncls, shape).astype(np.int32)
    elif fn in ("true_positives", "false_positives", "true_negatives", "false_negatives", "precision", "recall"):
        b["l"], b["p"] = r.integers(0, 2, shape), r.integers(0, 2, shape)
        if boolean:
            b["l"], b["p"] = b["l"].astype(bool), b["p"].astype(bool)
    elif fn == "auc" or "thresholds" in fn or "_at_s" in fn:
        b["l"], b["p"] = r.integers(0, 2, shape), np.round(r.uniform(0, 1, shape), 2).astype(np.float32)
    elif fn == "mean_cosine_distance":
        a, c = r.normal(size=shape), r.normal(size=shape)
        b["l"] = (a / np.linalg.norm(a, axis=-1, keepdims=True)).astype(np.float32)
        b["p"] = (c / np.linalg.norm(c, axis=-1, keepdims=True)).astype(np.float32)
    else:
        b["l"], b["p"] = r.normal(size=shape).astype(np.float32), r.normal(size=shape).astype(np.float32)
    if fn == "mean_relative_error":
        b["n"] = r.uniform(-1, 2, shape).astype(np.float32)
        b["n"][r.random(shape) < .2] = 0
    if labels_squeezable:
        b["l"] = b["l"][..., None]
    B, rank = shape[0], len(shape)
    if wkind == "per_sample":
        b["w"] = r.uniform(0, 2, [B] + [1] * (rank - 1)).astype(np.float32)
    elif wkind == "per_sample_flat":
        b["w"] = r.uniform(0, 2, [B]).astype(np.float32)
    elif wkind in ("per_element", "zeros"):
        b["w"] = r.uniform(0, 2, shape).astype(np.float32)
        if wkind == "zeros":
            b["w"][r.random(shape) < .5] = 0
    elif wkind == "scalar":
        b["w"] = np.float32(r.uniform(0, 2))
    elif wkind == "allzero":
        b["w"] = np.zeros(shape, np.float32)
    return b


def _metric_case(seed):
    r = np.random.default_rng(seed + 100000)
    fn = METRICS[seed % len(METRICS)]
    rank = int(r.integers(1, 4))
    shape = [int(r.integers(1, 6))] + [int(r.integers(1, 4)) for _ in range(rank - 1)]
    wkind = METRIC_WEIGHTS[r.integers(len(METRIC_WEIGHTS))]
    squeezable = r.random() < 0.2 and fn not in ("mean", "mean_tensor", "percentage_below", "mean_relative_error",
                                                 "mean_iou")
    if fn in ("mean_iou", "mean_per_class_accuracy") and wkind in ("scalar", "per_sample", "per_sample_flat"):
        wkind = "zeros"      # TF1 fails on weights not of the labels' size here (collflow broadcasts them)
    ncls = int(r.integers(2, 5))
    kw = {}
    if fn == "auc":
        kw["curve"] = ["ROC", "PR"][r.integers(2)]
        kw["summation_method"] = ["trapezoidal", "careful_interpolation", "minoring", "majoring"][r.integers(4)]
        if r.random() < .4:
            kw["num_thresholds"] = int(r.integers(3, 30))
        if r.random() < .25:
            kw["thresholds"] = [float(x) for x in np.round(r.uniform(0, 1, 4), 2)]
    if fn.endswith("_at_thresholds"):
        kw["thresholds"] = [float(x) for x in np.round(r.uniform(0, 1, int(r.integers(1, 4))), 2)]
    if fn == "sensitivity_at_specificity":
        kw.update(specificity=float(r.uniform()), num_thresholds=int(r.integers(3, 50)))
    if fn == "specificity_at_sensitivity":
        kw.update(sensitivity=float(r.uniform()), num_thresholds=int(r.integers(3, 50)))
    if fn == "mean_cosine_distance":
        kw["dim"] = rank - 1
    if fn == "percentage_below":
        kw["threshold"] = float(r.uniform(-1, 1))
    if fn in ("mean_iou", "mean_per_class_accuracy"):
        kw["num_classes"] = ncls
    batches = [_metric_batch(r, fn, shape, ncls, squeezable, wkind, seed % 3 == 0)
               for _ in range(int(r.integers(1, 4)))]
    reinit = bool(r.random() < 0.3)

    def build(tf, ph):
        f = getattr(tf.metrics, fn)
        k = dict(kw)
        if "w" in ph:
            k["weights"] = ph["w"]
        if fn in ("mean", "percentage_below"):
            return f(ph["p"], **k)
        if fn == "mean_tensor":
            return f(tf.reshape(ph["p"], shape), **k)
        if fn == "mean_relative_error":
            return f(ph["l"], ph["p"], ph["n"], **k)
        return f(ph["l"], ph["p"], **k)
    return build, batches, reinit


def _run_metric(tf, build, batches, reinit):
    g = tf.Graph()
    with g.as_default():
        ph = {k: tf.placeholder(tf.as_dtype(v.dtype.name), [None] + list(v.shape[1:]) if v.ndim else [])
              for k, v in batches[0].items()}
        value, update = build(tf, ph)
        info = sorted((v.op.name, v.dtype.base_dtype.name, tuple(v.shape.as_list())) for v in tf.local_variables())
        meta = (info, len(tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)), value.dtype.name, update.dtype.name)
        res = []
        with tf.Session(graph=g) as s:
            s.run(tf.local_variables_initializer())
            res.append(s.run(value))
            for i, b in enumerate(batches):
                if reinit and i == len(batches) - 1:
                    s.run(tf.local_variables_initializer())
                    res.append(s.run(value))
                res.append(s.run(update, {ph[k]: v for k, v in b.items()}))
                res.append(s.run(value))
    return res, meta


@pytest.mark.parametrize("chunk", range(10))
def test_metrics_random(chunk):
    for seed in range(chunk * 16, chunk * 16 + 16):
        build, batches, reinit = _metric_case(seed)
        want, got = _both(_run_metric, build, batches, reinit)
        if want is None:
            continue
        assert got[1] == want[1], (seed, got[1], want[1])
        for i, (a, b) in enumerate(zip(got[0], want[0])):
            _close(a, b, 1e-5, 1e-6, f"seed {seed} result {i}")


def _dynamic_loss(tf, fn, x, y, w, reduction, dynamic, kw):
    g = tf.Graph()
    with g.as_default():
        def ph(a):
            return tf.placeholder(tf.as_dtype(a.dtype.name), [None] * a.ndim if dynamic else a.shape)
        px, py, pw = ph(x), ph(y), ph(w)
        loss = getattr(tf.losses, fn)(py, px, weights=pw, reduction=reduction, **kw)
        grad = tf.gradients(tf.reduce_sum(tf.cast(loss, tf.float32)), px)[0]
        with tf.Session() as s:
            return s.run([loss, grad], {px: x, py: y, pw: w}), loss.dtype.name


def test_losses_unknown_shapes_and_dtypes():
    """float16/32/64 logits and predictions, shapes known only when run, weights [B], [B, 1], ..."""
    r = np.random.default_rng(11)
    for t in range(40):
        fn = ["softmax_cross_entropy", "sigmoid_cross_entropy", "mean_squared_error", "sparse_softmax_cross_entropy",
              "hinge_loss"][t % 5]
        dt = [np.float16, np.float32, np.float64][t % 3]
        B, C = int(r.integers(1, 5)), int(r.integers(2, 5))
        x = r.normal(size=(B, C)).astype(dt)
        if fn == "softmax_cross_entropy":
            y, shapes = np.eye(C)[r.integers(0, C, B)].astype(dt), [(B,), (1,), ()]
        elif fn == "sparse_softmax_cross_entropy":
            y, shapes = r.integers(0, C, B).astype(np.int32), [(B,), (B, 1), ()]
        else:
            y, shapes = (r.random((B, C)) < .5).astype(dt), [(B, 1), (B, C), (1, C), ()]
        w = r.uniform(0, 2, shapes[r.integers(len(shapes))]).astype(np.float32)
        if w.ndim and r.random() < .4:
            w.ravel()[0] = 0
        reduction = REDUCTIONS[1 + r.integers(len(REDUCTIONS) - 1)]
        kw = {"label_smoothing": 0.2} if fn in ("softmax_cross_entropy", "sigmoid_cross_entropy") and t % 2 else {}
        want, got = _both(_dynamic_loss, fn, x, y, w, reduction, bool(t % 4 < 2), kw)
        if want is None:
            continue
        assert got[1] == want[1], (t, got[1], want[1])
        tol = 2e-2 if dt == np.float16 else 1e-5
        for a, b in zip(got[0], want[0]):
            _close(a, b, tol, tol, f"case {t} {fn}")


def _several_metrics(tf):
    with tf.Graph().as_default():
        lab = tf.constant([1, 0, 1, 1])
        p = tf.constant([0.8, 0.3, 0.4, 0.9])
        hard = tf.cast(p > 0.5, tf.int32)
        ms = [tf.metrics.accuracy(lab, hard), tf.metrics.accuracy(lab, hard), tf.metrics.auc(lab, p),
              tf.metrics.precision(lab, p > 0.5), tf.metrics.recall(lab, p > 0.5, name="rec"),
              tf.metrics.mean_iou(lab, hard, 2), tf.metrics.mean_per_class_accuracy(lab, hard, 2),
              tf.metrics.root_mean_squared_error(tf.cast(lab, tf.float32), p),
              tf.metrics.sensitivity_at_specificity(lab, p, 0.5)]
        with tf.variable_scope("outer"):
            ms += [tf.metrics.mean(p), tf.metrics.true_negatives(lab, p > 0.5)]
        names = [v.op.name for v in tf.local_variables()]
        metric_vars = [v.op.name for v in tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)]
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            s.run([m[1] for m in ms])
            values = s.run([m[0] for m in ms])
        return names, metric_vars, [m[0].dtype.name for m in ms], [m[1].dtype.name for m in ms], values


def test_metric_variables_of_several_metrics():
    want, got = _several_metrics(tft), _several_metrics(cft)
    assert got[:4] == want[:4]
    for a, b in zip(got[4], want[4]):
        _close(a, b, 1e-6, 1e-6, "values")
