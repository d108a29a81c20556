"""tf.keras's Loss and Metric classes against NumPy reference values (no TensorFlow needed):
the losses' reductions and sample weights, the stateful metrics over several updates (AUC
against a direct trapezoid sum), compile/fit/evaluate with Loss and Metric objects (the epoch
value is the metric's running result), train_on_batch's reset_metrics, save / load_model, the
config round trips and the errors."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

K = tf.keras
R = np.random.RandomState(0)
YT = R.uniform(0.5, 2.0, (5, 3)).astype(np.float32)
YP = R.uniform(0.5, 2.0, (5, 3)).astype(np.float32)
SW = np.array([1.0, 0.0, 2.0, 0.5, 3.0], np.float32)


def _run(*ts):
    with tf.Session() as sess:
        return sess.run(list(ts))


def _reduce(per, sw, reduction):
    w = per * (1.0 if sw is None else sw)
    return {"none": w, "sum": w.sum(), "auto": w.sum() / w.size, "sum_over_batch_size": w.sum() / w.size}[reduction]


@pytest.mark.parametrize("reduction", ["auto", "sum", "sum_over_batch_size", "none"])
def test_mse_reductions_and_weights(reduction):
    with tf.Graph().as_default():
        loss = K.losses.MeanSquaredError(reduction=reduction)
        a, b = _run(loss(YT, YP), loss(YT, YP, sample_weight=SW))
    per = ((YT - YP) ** 2).mean(-1)
    np.testing.assert_allclose(a, _reduce(per, None, reduction), rtol=1e-5)
    np.testing.assert_allclose(b, _reduce(per, SW, reduction), rtol=1e-5)


def test_loss_classes_by_hand():
    d = YP - YT
    ad = np.abs(d)
    quad = np.minimum(ad, 0.5)
    lab = (R.rand(5, 3) > 0.5).astype(np.float32)
    logit = R.uniform(-2, 2, (5, 3)).astype(np.float32)
    p = 1 / (1 + np.exp(-logit))
    onehot = np.eye(3, dtype=np.float32)[[0, 2, 1, 1, 0]]
    soft = np.exp(logit) / np.exp(logit).sum(-1, keepdims=True)
    cases = [
        (K.losses.MeanAbsoluteError(), YT, YP, ad.mean(-1)),
        (K.losses.MeanAbsolutePercentageError(), YT, YP, 100 * (ad / YT).mean(-1)),
        (K.losses.MeanSquaredLogarithmicError(), YT, YP, ((np.log1p(YP) - np.log1p(YT)) ** 2).mean(-1)),
        (K.losses.Huber(delta=0.5), YT, YP, (0.5 * quad ** 2 + 0.5 * (ad - quad)).mean(-1)),
        (K.losses.LogCosh(), YT, YP, np.log(np.cosh(d)).mean(-1)),
        (K.losses.Poisson(), YT, YP, (YP - YT * np.log(YP + 1e-7)).mean(-1)),
        (K.losses.CosineSimilarity(), YT, YP, -(YT * YP).sum(-1) / np.linalg.norm(YT, axis=-1)
         / np.linalg.norm(YP, axis=-1)),
        (K.losses.Hinge(), lab, logit, np.maximum(1 - (2 * lab - 1) * logit, 0).mean(-1)),
        (K.losses.SquaredHinge(), lab, logit, (np.maximum(1 - (2 * lab - 1) * logit, 0) ** 2).mean(-1)),
        (K.losses.CategoricalHinge(), onehot, logit,
         np.maximum(0, ((1 - onehot) * logit).max(-1) - (onehot * logit).sum(-1) + 1)),
        (K.losses.BinaryCrossentropy(from_logits=True), lab, logit,
         -(lab * np.log(p) + (1 - lab) * np.log(1 - p)).mean(-1)),
        (K.losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.2), lab, logit,
         -((lab * 0.8 + 0.1) * np.log(p) + (1 - (lab * 0.8 + 0.1)) * np.log(1 - p)).mean(-1)),
        (K.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.3), onehot, logit,
         -((onehot * 0.7 + 0.1) * np.log(soft)).sum(-1)),
        (K.losses.SparseCategoricalCrossentropy(from_logits=True), np.array([0, 2, 1, 1, 0]), logit,
         -np.log(soft[np.arange(5), [0, 2, 1, 1, 0]])),
        (K.losses.KLDivergence(), soft[::-1].copy(), soft, (soft[::-1] * np.log(soft[::-1] / soft)).sum(-1)),
    ]
    with tf.Graph().as_default():
        got = _run(*[loss(t, q, sample_weight=SW) for loss, t, q, _ in cases])
    for (loss, _, _, per), g in zip(cases, got):
        np.testing.assert_allclose(g, (per * SW).sum() / per.size, rtol=2e-5, atol=1e-6, err_msg=loss.name)


def test_loss_functions_and_aliases():
    with tf.Graph().as_default():
        a, b, c = _run(K.losses.cosine_similarity(YT, YP), K.losses.log_cosh(YT, YP), K.losses.MSLE(YT, YP))
    np.testing.assert_allclose(a, -(YT * YP).sum(-1) / np.linalg.norm(YT, axis=-1) / np.linalg.norm(YP, axis=-1),
                               rtol=1e-5)
    np.testing.assert_allclose(b, np.log(np.cosh(YP - YT)).mean(-1), rtol=1e-5)
    np.testing.assert_allclose(c, ((np.log1p(YP) - np.log1p(YT)) ** 2).mean(-1), rtol=1e-5)
    assert K.losses.cosine is K.losses.cosine_proximity is K.losses.cosine_similarity
    assert K.losses.kld is K.losses.KLD is K.losses.kullback_leibler_divergence
    assert K.losses.MSE is K.losses.mean_squared_error and K.losses.mape is K.losses.MAPE
    assert K.metrics.cosine_proximity is K.losses.cosine_similarity  # TF 1.15's v1 alias: the loss


def test_loss_gradient_finite_difference():
    x0 = R.uniform(-1, 1, (4, 3))
    t = R.uniform(-1, 1, (4, 3))
    for make in (lambda: K.losses.Huber(0.4), lambda: K.losses.LogCosh(), lambda: K.losses.CosineSimilarity()):
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float64, [4, 3])
            loss = make()(tf.constant(t), x, sample_weight=tf.constant([1.0, 2.0, 0.5, 0.0], tf.float64))
            g = tf.gradients(loss, x)[0]
            with tf.Session() as sess:
                got = sess.run(g, {x: x0})
                num = np.zeros_like(x0)
                for idx in np.ndindex(*x0.shape):
                    e = np.zeros_like(x0)
                    e[idx] = 1e-3  # the weighted loss is computed in float32, as TF's
                    num[idx] = (sess.run(loss, {x: x0 + e}) - sess.run(loss, {x: x0 - e})) / 2e-3
        np.testing.assert_allclose(got, num, rtol=2e-3, atol=2e-4)


def test_loss_config_and_errors():
    loss = K.losses.Huber(0.25, reduction="sum", name="h")
    cfg = K.losses.serialize(loss)
    assert cfg == {"class_name": "Huber", "config": {"reduction": "sum", "name": "h", "delta": 0.25}}
    back = K.losses.deserialize(cfg)
    assert isinstance(back, K.losses.Huber) and back.get_config() == loss.get_config()
    assert K.losses.get("mse") is K.losses.mean_squared_error
    assert K.losses.get(None) is None
    assert K.losses.serialize(K.losses.mean_absolute_error) == "mean_absolute_error"
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        K.losses.MeanSquaredError(reduction="mean")
    with pytest.raises(ValueError):
        K.losses.deserialize("no_such_loss")
    with pytest.raises(NotImplementedError):
        K.losses.Loss()(YT, YP)


# -- metrics -----------------------------------------------------------------------------------

def _metric(m, batches):
    """The result after each update, then after reset_states and one more update."""
    ops = [m.update_state(*b) for b in batches]
    res = m.result()
    with tf.Session() as sess:
        sess.run(tf.variables_initializer(m.variables))
        out = []
        for op in ops:
            sess.run(op)
            out.append(sess.run(res))
        m.reset_states()
        out.append(sess.run(res))
        sess.run(ops[0])
        out.append(sess.run(res))
    return out


def test_mean_sum_standalone():
    with tf.Graph().as_default():
        got = _metric(K.metrics.Mean(), [([1.0, 2.0, 3.0],), ([[1.0, 2.0], [3.0, 4.0]], [1.0, 0.0]), (5.0, 2.0)])
    np.testing.assert_allclose(got, [2.0, 9 / 5, 19 / 7, 0.0, 2.0], rtol=1e-6)
    with tf.Graph().as_default():
        got = _metric(K.metrics.Sum(), [([1.0, 2.0, 3.0],), ([[1.0, 2.0], [3.0, 4.0]], [1.0, 0.5])])
    np.testing.assert_allclose(got, [6.0, 6 + 3 + 3.5, 0.0, 6.0], rtol=1e-6)


def test_metric_call_and_variables_in_no_collection():
    with tf.Graph().as_default():
        m = K.metrics.Mean(name="m")
        out = m([2.0, 4.0])
        assert m.name == "m" and [v.op.name for v in m.variables] == ["total", "count"]
        assert not tf.global_variables() and not tf.local_variables()
        with tf.Session() as sess:
            sess.run(tf.variables_initializer(m.variables))
            assert sess.run(out) == 3.0
            assert sess.run(out) == 3.0  # a second run folds the same values in again


def test_mean_metric_wrappers_weighted():
    lab = np.array([[1.0], [0.0], [1.0], [1.0]], np.float32)
    pred = np.array([[0.8], [0.6], [0.2], [0.9]], np.float32)
    sw = np.array([1.0, 2.0, 0.5, 0.0], np.float32)
    onehot = np.eye(3, dtype=np.float32)[[0, 1, 2, 1]]
    scores = np.array([[0.5, 0.3, 0.2], [0.1, 0.2, 0.7], [0.3, 0.4, 0.3], [0.2, 0.5, 0.3]], np.float32)
    with tf.Graph().as_default():
        got = [_metric(K.metrics.BinaryAccuracy(threshold=0.5), [(lab, pred, sw)])[0],
               _metric(K.metrics.CategoricalAccuracy(), [(onehot, scores)])[0],
               _metric(K.metrics.SparseCategoricalAccuracy(), [(np.array([[0], [1], [2], [1]]), scores, sw)])[0],
               _metric(K.metrics.TopKCategoricalAccuracy(k=2), [(onehot, scores)])[0],
               _metric(K.metrics.SparseTopKCategoricalAccuracy(k=1), [(np.array([0, 1, 2, 1]), scores)])[0],
               _metric(K.metrics.RootMeanSquaredError(), [(YT, YP, SW)])[0],
               _metric(K.metrics.MeanRelativeError(normalizer=[2.0, 1.0, 4.0]), [(YT, YP)])[0],
               _metric(K.metrics.Accuracy(), [([1, 2, 3, 4], [1, 2, 0, 4])])[0]]
    hit = np.array([1.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(got[0], (hit * sw).sum() / sw.sum(), rtol=1e-6)
    np.testing.assert_allclose(got[1], 0.5)
    np.testing.assert_allclose(got[2], (np.array([1, 0, 0, 1]) * sw).sum() / sw.sum(), rtol=1e-6)
    np.testing.assert_allclose(got[3], 1.0)  # row 3's tie at the k-th score counts as in the top k
    np.testing.assert_allclose(got[4], 0.5)
    np.testing.assert_allclose(got[5], np.sqrt((((YT - YP) ** 2) * SW[:, None]).sum() / (3 * SW.sum())), rtol=1e-5)
    np.testing.assert_allclose(got[6], (np.abs(YT - YP) / [2.0, 1.0, 4.0]).mean(), rtol=1e-5)
    np.testing.assert_allclose(got[7], 0.75)


def test_mean_tensor():
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    with tf.Graph().as_default():
        got = _metric(K.metrics.MeanTensor(), [(a,), (3 * a, [[1.0, 0.0], [2.0, 1.0]])])
    np.testing.assert_allclose(got[1], (a + 3 * a * [[1, 0], [2, 1]]) / [[2, 1], [3, 2]], rtol=1e-6)
    with tf.Graph().as_default():
        m = K.metrics.MeanTensor()
        with pytest.raises(ValueError, match="does not have any result"):
            m.result()
        m.update_state(a)
        with pytest.raises(ValueError, match="same shape"):
            m.update_state([1.0, 2.0])


def _counts(lab, pred, w, ths):
    pos = pred[None, :] > np.asarray(ths)[:, None]
    lab = lab.astype(bool)[None, :]
    return {k: (c * w).sum(1) for k, c in (("tp", lab & pos), ("fp", ~lab & pos), ("tn", ~lab & ~pos),
                                             ("fn", lab & ~pos))}


LAB = (R.rand(40) > 0.5).astype(np.float32)
PRED = np.clip(LAB * 0.3 + R.rand(40) * 0.7, 0, 1).astype(np.float32)
W = R.uniform(0, 2, 40).astype(np.float32)


def test_counts_precision_recall():
    with tf.Graph().as_default():
        got = [_metric(K.metrics.TruePositives(), [(LAB, PRED, W)])[0],
               _metric(K.metrics.FalsePositives(thresholds=[0.2, 0.7]), [(LAB, PRED, W)])[0],
               _metric(K.metrics.TrueNegatives(), [(LAB, PRED)])[0],
               _metric(K.metrics.FalseNegatives(0.4), [(LAB, PRED, W)])[0],
               _metric(K.metrics.Precision(), [(LAB[:20], PRED[:20], W[:20]), (LAB[20:], PRED[20:], W[20:])])[1],
               _metric(K.metrics.Recall(thresholds=[0.3, 0.6]), [(LAB, PRED, W)])[0]]
    c = _counts(LAB, PRED, W, [0.5])
    np.testing.assert_allclose(got[0], c["tp"][0], rtol=1e-5)
    np.testing.assert_allclose(got[1], _counts(LAB, PRED, W, [0.2, 0.7])["fp"], rtol=1e-5)
    np.testing.assert_allclose(got[2], _counts(LAB, PRED, np.ones(40), [0.5])["tn"][0], rtol=1e-5)
    np.testing.assert_allclose(got[3], _counts(LAB, PRED, W, [0.4])["fn"][0], rtol=1e-5)
    np.testing.assert_allclose(got[4], c["tp"][0] / (c["tp"][0] + c["fp"][0]), rtol=1e-5)
    c2 = _counts(LAB, PRED, W, [0.3, 0.6])
    np.testing.assert_allclose(got[5], c2["tp"] / (c2["tp"] + c2["fn"]), rtol=1e-5)


def test_precision_top_k_and_class_id():
    lab = np.array([[0, 1, 1], [1, 0, 0]], np.float32)
    pred = np.array([[0.9, 0.8, 0.1], [0.2, 0.7, 0.6]], np.float32)
    with tf.Graph().as_default():
        p_top1 = _metric(K.metrics.Precision(top_k=1), [(lab, pred)])[0]
        r_cls = _metric(K.metrics.Recall(class_id=1), [(lab, pred)])[0]
    np.testing.assert_allclose(p_top1, 0.0)   # the top scores (0.9, 0.7) are both wrong
    np.testing.assert_allclose(r_cls, 1.0)


def _trapezoid_auc(lab, pred, w, n, curve="ROC", method="interpolation"):
    """The AUC over thresholds [-eps, 1/(n-1), ..., 1+eps] by a direct sum of pieces."""
    ths = [-1e-7] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + 1e-7]
    c = _counts(lab, pred, w, ths)

    def div(a, b):
        return np.where(b > 0, a / np.where(b > 0, b, 1), 0.0)
    rec = div(c["tp"], c["tp"] + c["fn"])
    if curve == "ROC":
        x, y = div(c["fp"], c["fp"] + c["tn"]), rec
    else:
        x, y = rec, div(c["tp"], c["tp"] + c["fp"])
    total = 0.0
    for i in range(n - 1):
        h = {"interpolation": (y[i] + y[i + 1]) / 2, "minoring": min(y[i], y[i + 1]),
             "majoring": max(y[i], y[i + 1])}[method]
        total += (x[i] - x[i + 1]) * h
    return total


@pytest.mark.parametrize("curve,method,n", [("ROC", "interpolation", 200), ("ROC", "minoring", 11),
                                            ("ROC", "majoring", 7), ("PR", "minoring", 50),
                                            ("PR", "majoring", 13)])
def test_auc_against_trapezoid(curve, method, n):
    with tf.Graph().as_default():
        got = _metric(K.metrics.AUC(num_thresholds=n, curve=curve, summation_method=method),
                      [(LAB[:25], PRED[:25], W[:25]), (LAB[25:], PRED[25:], W[25:])])
    np.testing.assert_allclose(got[1], _trapezoid_auc(LAB, PRED, W, n, curve, method), rtol=1e-5)
    assert got[2] == 0.0


def test_auc_pr_interpolation_separable():
    # positives all scored above negatives: precision 1 over every recall, the area 1
    lab = np.array([0, 0, 1, 1, 1], np.float32)
    pred = np.array([0.1, 0.2, 0.7, 0.8, 0.9], np.float32)
    with tf.Graph().as_default():
        got = _metric(K.metrics.AUC(curve="PR"), [(lab, pred)])[0]
    np.testing.assert_allclose(got, 1.0, rtol=1e-5)


def test_sensitivity_specificity_tf115_rule():
    with tf.Graph().as_default():
        sens = _metric(K.metrics.SensitivityAtSpecificity(0.6, num_thresholds=11), [(LAB, PRED, W)])[0]
        spec = _metric(K.metrics.SpecificityAtSensitivity(0.8, num_thresholds=11), [(LAB, PRED, W)])[0]
        par = _metric(K.metrics.PrecisionAtRecall(0.7, num_thresholds=11), [(LAB, PRED, W)])[0]
    ths = [0.0] + [(i + 1) / 10 for i in range(9)] + [1.0]
    c = _counts(LAB, PRED, W, ths)
    tpr = c["tp"] / (c["tp"] + c["fn"])
    tnr = c["tn"] / (c["tn"] + c["fp"])
    prec = c["tp"] / np.maximum(c["tp"] + c["fp"], 1e-30)
    np.testing.assert_allclose(sens, tpr[np.argmin(np.abs(tnr - 0.6))], rtol=1e-5)
    np.testing.assert_allclose(spec, tnr[np.argmin(np.abs(tpr - 0.8))], rtol=1e-5)
    np.testing.assert_allclose(par, prec[tpr >= 0.7].max(), rtol=1e-5)


def test_mean_iou():
    yt = np.array([0, 1, 2, 2, 1])
    yp = np.array([0, 2, 2, 1, 1])
    w = np.array([1.0, 2.0, 1.0, 0.5, 1.0], np.float32)
    with tf.Graph().as_default():
        got = _metric(K.metrics.MeanIoU(num_classes=4), [(yt, yp, w)])[0]
    cm = np.zeros((4, 4))
    for a, b, c in zip(yt, yp, w):
        cm[a, b] += c
    tp = np.diag(cm)
    den = cm.sum(0) + cm.sum(1) - tp
    np.testing.assert_allclose(got, (tp[den > 0] / den[den > 0]).mean(), rtol=1e-6)


def test_metric_errors_and_configs():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Invalid curve"):
            K.metrics.AUC(curve="XY")
        with pytest.raises(ValueError, match="Invalid summation method"):
            K.metrics.AUC(summation_method="midpoint")
        with pytest.raises(ValueError, match="num_thresholds"):
            K.metrics.AUC(num_thresholds=1)
        with pytest.raises(ValueError, match=r"Threshold values must be in \[0, 1\]"):
            K.metrics.Precision(thresholds=[0.5, 1.5])
        with pytest.raises(ValueError, match="range"):
            K.metrics.SensitivityAtSpecificity(1.5)
        m = K.metrics.AUC(num_thresholds=20, curve="PR", name="pr")
        back = K.metrics.deserialize(K.metrics.serialize(m))
        assert (back.name, back.curve, back.num_thresholds) == ("pr", "PR", 20)
        b = K.metrics.deserialize(K.metrics.serialize(K.metrics.BinaryAccuracy(threshold=0.2)))
        assert b.get_config() == {"name": "binary_accuracy", "dtype": "float32", "threshold": 0.2}
        assert K.metrics.get("top_k_categorical_accuracy") is K.metrics.top_k_categorical_accuracy
        assert K.metrics.BinaryAccuracy("ba", None, 0.7).get_config()["threshold"] == 0.7  # TF 1.15's order
        assert K.metrics.TopKCategoricalAccuracy(3).get_config()["k"] == 3


def test_subclassed_metric_without_returned_op():
    class Count(K.metrics.Metric):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.n = self.add_weight("n", initializer="zeros")

        def update_state(self, y_true, y_pred, sample_weight=None):
            self.n.assign_add(tf.cast(tf.size(y_true), tf.float32))  # nothing returned (TF 2 style)

        def result(self):
            return self.n
    with tf.Graph().as_default():
        assert _metric(Count(name="count"), [([1, 2, 3], [0, 0, 0])]) == [3.0, 0.0, 3.0]


# -- models ----------------------------------------------------------------------------------

def _data():
    r = np.random.RandomState(3)
    x = r.rand(30, 4).astype(np.float32)
    y = (x.sum(1, keepdims=True) > 2).astype(np.float32)
    return x, y


def test_fit_reports_running_metric_results():
    x, y = _data()
    with tf.Graph().as_default():
        m = K.Sequential([K.layers.Dense(1, activation="sigmoid", input_shape=(4,))])
        auc = K.metrics.AUC(name="auc")
        m.compile(K.optimizers.SGD(0.0), loss=K.losses.BinaryCrossentropy(),
                  metrics=[auc, K.metrics.Precision(name="p"), "acc"])
        assert m.metrics == [auc, m.metrics[1]] and m.metrics_names == ["loss", "auc", "p", "acc"]
        h = m.fit(x, y, batch_size=7, epochs=2, shuffle=False, verbose=0).history
        pred = m.predict(x)[:, 0]
        ev = m.evaluate(x, y, batch_size=4, verbose=0)
    want_auc = _trapezoid_auc(y[:, 0], pred, np.ones(30), 200)
    c = _counts(y[:, 0], pred, np.ones(30), [0.5])
    want_p = c["tp"][0] / max(c["tp"][0] + c["fp"][0], 1e-30) if c["tp"][0] + c["fp"][0] else 0.0
    # lr 0: each epoch sees the same predictions; the value is over all 30 samples, not a batch mean
    np.testing.assert_allclose(h["auc"], [want_auc] * 2, rtol=1e-5)
    np.testing.assert_allclose(h["p"], [want_p] * 2, rtol=1e-5)
    np.testing.assert_allclose(ev[1:3], [want_auc, want_p], rtol=1e-5)
    eps = 1e-7
    q = np.clip(pred, eps, 1 - eps)
    np.testing.assert_allclose(ev[0], -(y[:, 0] * np.log(q) + (1 - y[:, 0]) * np.log(1 - q)).mean(), rtol=1e-4)


def test_train_on_batch_reset_metrics():
    x, y = _data()
    with tf.Graph().as_default():
        m = K.Sequential([K.layers.Dense(1, input_shape=(4,), kernel_initializer="ones")])
        m.compile(K.optimizers.SGD(0.0), loss="mse", metrics=[K.metrics.MeanAbsoluteError(name="mae_obj")])
        pred = x.sum(1)
        err = np.abs(pred - y[:, 0])
        a = m.train_on_batch(x[:10], y[:10], reset_metrics=False)[1]
        b = m.train_on_batch(x[10:20], y[10:20], reset_metrics=False)[1]
        c = m.train_on_batch(x[20:], y[20:])[1]
        d = m.test_on_batch(x[:10], y[:10])[1]
        m.train_on_batch(x[:10], y[:10], reset_metrics=False)
        m.reset_metrics()
        e = m.test_on_batch(x[10:20], y[10:20])[1]
    np.testing.assert_allclose([a, b, c, d, e], [err[:10].mean(), err[:20].mean(), err.mean(), err[:10].mean(),
                                                 err[10:20].mean()], rtol=1e-5)


def test_compile_loss_object_reduction_and_weights():
    x, y = _data()
    w = np.linspace(0, 2, 30).astype(np.float32)
    with tf.Graph().as_default():
        m = K.Sequential([K.layers.Dense(1, input_shape=(4,), kernel_initializer="ones")])
        m.compile("sgd", loss=K.losses.MeanSquaredError(reduction="sum"))
        ev_sum = m.evaluate(x, y, batch_size=30, sample_weight=w, verbose=0)
        m.compile("sgd", loss=K.losses.MeanSquaredError())
        ev_mean = m.evaluate(x, y, batch_size=30, sample_weight=w, verbose=0)
        m.compile("sgd", loss="mse")
        ev_str = m.evaluate(x, y, batch_size=30, sample_weight=w, verbose=0)
        with pytest.raises(ValueError, match="uninstantiated Loss class"):
            m.compile("sgd", loss=K.losses.MeanSquaredError)
        with pytest.raises(ValueError, match="NONE"):
            m.compile("sgd", loss=K.losses.MeanSquaredError(reduction="none"))
    per = (x.sum(1) - y[:, 0]) ** 2
    np.testing.assert_allclose(ev_sum, (per * w).sum(), rtol=1e-5)
    # TF 1.15: the weighted sum over the batch size, zero weights counted (string losses too)
    np.testing.assert_allclose([ev_mean, ev_str], [(per * w).sum() / 30] * 2, rtol=1e-5)


def test_save_load_with_loss_and_metric_objects(tmp_path):
    x, y = _data()
    path = str(tmp_path / "m.h5")
    with tf.Graph().as_default():
        m = K.Sequential([K.layers.Dense(1, activation="sigmoid", input_shape=(4,))])
        m.compile("adam", loss=K.losses.BinaryCrossentropy(label_smoothing=0.1),
                  metrics=[K.metrics.AUC(num_thresholds=30, name="auc30"), "acc"])
        m.fit(x, y, epochs=1, verbose=0)
        want = m.evaluate(x, y, verbose=0)
        m.save(path)
    with tf.Graph().as_default():
        m2 = K.models.load_model(path)
        assert isinstance(m2.loss, K.losses.BinaryCrossentropy)
        assert m2.loss.get_config()["label_smoothing"] == 0.1
        assert m2.metrics_names == ["loss", "auc30", "acc"] and m2.metrics[0].num_thresholds == 30
        np.testing.assert_allclose(m2.evaluate(x, y, verbose=0), want, rtol=1e-5)


def test_weighted_metrics_and_per_output_copies():
    x, y = _data()
    w = np.linspace(0, 2, 30).astype(np.float32)
    with tf.Graph().as_default():
        a = K.Input((4,))
        o1 = K.layers.Dense(1, activation="sigmoid", name="o1")(a)
        o2 = K.layers.Dense(1, activation="sigmoid", name="o2")(a)
        m = K.Model(a, [o1, o2])
        mae = K.metrics.MeanAbsoluteError()
        m.compile(K.optimizers.SGD(0.0), ["binary_crossentropy", "binary_crossentropy"], metrics=[mae],
                  weighted_metrics=["acc", K.metrics.MeanSquaredError(name="se")])
        assert m.metrics_names == ["loss", "o1_loss", "o2_loss", "o1_mean_absolute_error", "o1_weighted_acc",
                                   "o1_weighted_se", "o2_mean_absolute_error", "o2_weighted_acc", "o2_weighted_se"]
        assert len(m.metrics) == 6 and mae not in m.metrics  # each output its own copy
        ev = m.evaluate(x, [y, y], sample_weight=[w, w], batch_size=7, verbose=0)
        p1, p2 = m.predict(x)
    for i, p in ((3, p1[:, 0]), (6, p2[:, 0])):
        t = y[:, 0]
        np.testing.assert_allclose(ev[i], np.abs(p - t).mean(), rtol=1e-5)
        np.testing.assert_allclose(ev[i + 1], (((p > 0.5) == t) * w).sum() / w.sum(), rtol=1e-5)
        np.testing.assert_allclose(ev[i + 2], (((p - t) ** 2) * w).sum() / w.sum(), rtol=1e-5)


def test_model_to_estimator_with_loss_and_metric_objects(tmp_path):
    r = np.random.RandomState(2)
    x = r.rand(48, 4).astype(np.float32)
    y = (x.sum(1) > 2).astype(np.int64)
    with tf.Graph().as_default():
        inp = K.Input((4,), name="feat")
        out = K.layers.Dense(2, activation="softmax", name="probs")(inp)
        m = K.Model(inp, out)
        m.compile(K.optimizers.SGD(0.1), K.losses.SparseCategoricalCrossentropy(),
                  metrics=[K.metrics.SparseCategoricalAccuracy(name="sacc"),
                           K.metrics.SparseTopKCategoricalAccuracy(k=1, name="top1")])
        est = K.estimator.model_to_estimator(keras_model=m, model_dir=str(tmp_path))
        want = m.evaluate(x, y, batch_size=16, verbose=0)

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"feat": x}, y)).batch(16)
    for _ in range(2):  # each evaluation starts its metrics from zero
        res = est.evaluate(input_fn)
        np.testing.assert_allclose([res["loss"], res["sacc"], res["top1"]], want, rtol=1e-5)


def test_focal_losses_by_hand():
    lab = (R.rand(5, 3) > 0.5).astype(np.float32)
    p = R.uniform(0.05, 0.95, (5, 3)).astype(np.float32)
    onehot = np.eye(3, dtype=np.float32)[[0, 2, 1, 1, 0]]
    q = p / p.sum(-1, keepdims=True)
    with tf.Graph().as_default():
        b, c = _run(K.losses.BinaryFocalCrossentropy(gamma=2.0, apply_class_balancing=True, alpha=0.3)(lab, p),
                    K.losses.CategoricalFocalCrossentropy(alpha=0.5, gamma=1.0)(onehot, p))
    pt = lab * p + (1 - lab) * (1 - p)
    bce = -(lab * np.log(p + 1e-7) + (1 - lab) * np.log(1 - p + 1e-7))
    np.testing.assert_allclose(b, ((lab * 0.3 + (1 - lab) * 0.7) * (1 - pt) ** 2 * bce).mean(), rtol=1e-5)
    np.testing.assert_allclose(c, (0.5 * (1 - q) * -onehot * np.log(q)).sum(-1).mean(), rtol=1e-5)


def test_r2_and_f_scores_by_hand():
    """tf_keras 2.x's R2Score / FBetaScore / F1Score (its own graph-mode update makes no op, so
    these are checked against NumPy only)."""
    r = np.random.RandomState(9)
    yt, yp, w = r.rand(12, 3).astype(np.float32), r.rand(12, 3).astype(np.float32), r.uniform(0, 2, 12)
    lab = (r.rand(12, 3) > 0.5).astype(np.float32)
    with tf.Graph().as_default():
        r2 = _metric(K.metrics.R2Score(), [(yt[:5], yp[:5]), (yt[5:], yp[5:], w[5:].astype(np.float32))])[1]
        r2c = _metric(K.metrics.R2Score(class_aggregation=None, num_regressors=2), [(yt, yp)])[0]
        fb = _metric(K.metrics.FBetaScore(beta=2.0, threshold=0.5), [(lab, yp, w.astype(np.float32))])[0]
        f1 = _metric(K.metrics.F1Score(average="micro"), [(lab, yp)])[0]
    ww = np.concatenate([np.ones(5), w[5:]])[:, None]
    mean = (yt * ww).sum(0) / ww.sum()
    raw = 1 - (((yt - yp) ** 2) * ww).sum(0) / (((yt - mean) ** 2) * ww).sum(0)
    np.testing.assert_allclose(r2, raw.mean(), rtol=1e-4)
    plain = 1 - ((yt - yp) ** 2).sum(0) / ((yt - yt.mean(0)) ** 2).sum(0)
    np.testing.assert_allclose(r2c, 1 - (1 - plain) * 35 / (36 - 2 - 1), rtol=1e-4)
    pos = (yp > 0.5).astype(np.float64)
    tp, fp, fn = ((pos * lab * w[:, None]).sum(0), (pos * (1 - lab) * w[:, None]).sum(0),
                  ((1 - pos) * lab * w[:, None]).sum(0))
    p, rc = tp / (tp + fp), tp / (tp + fn)
    np.testing.assert_allclose(fb, 5 * p * rc / (4 * p + rc), rtol=1e-5)
    top = (yp >= yp.max(-1, keepdims=True)).astype(np.float64)
    tp, fp, fn = (top * lab).sum(), (top * (1 - lab)).sum(), ((1 - top) * lab).sum()
    p, rc = tp / (tp + fp), tp / (tp + fn)
    np.testing.assert_allclose(f1, 2 * p * rc / (p + rc), rtol=1e-5)
    with pytest.raises(ValueError, match="average"):
        K.metrics.F1Score(average="mean")
    with pytest.raises(ValueError, match="2D inputs"):
        K.metrics.R2Score().update_state([1.0, 2.0], [1.0, 2.0])
