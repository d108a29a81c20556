"""tf.estimator's baseline estimators, the estimators over a head, the public heads (and
MultiHead), VocabInfo warm starting and batch_norm in the canned DNNs, checked by hand
against TF 1.15's documented behaviour (no TensorFlow needed)."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

E = tf.estimator
fc = tf.feature_column
RNG = np.random.RandomState(0)
X = RNG.randn(96, 3).astype(np.float32)
Y_REG = (X @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
Y_BIN = (X[:, :1] + 0.5 * X[:, 1:2] > 0).astype(np.int64)
Y_MC = np.argmax(X @ RNG.randn(3, 3).astype(np.float32), axis=1).astype(np.int64)[:, None]


def inp(y=None, x=X, batch_size=32, num_epochs=1, **extra):
    feats = {"x": x, **extra}
    return E.inputs.numpy_input_fn(feats, y, batch_size=batch_size, num_epochs=num_epochs, shuffle=False)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


COLS = [fc.numeric_column("x", shape=(3,))]


class LossRecorder(tf.train.SessionRunHook):
    """The training loss of every step (the train op's fetches are [train_op, loss])."""

    def __init__(self):
        self.losses = []

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(run_context.original_args.fetches)

    def after_run(self, run_context, run_values):
        self.losses.append(float(run_values.results[1]))


# -- baseline --------------------------------------------------------------------------------------------

def test_baseline_regressor_learns_the_label_mean(tmp_path):
    y = (RNG.randn(200, 2) + [3.0, -1.0]).astype(np.float32)
    x = RNG.randn(200, 1).astype(np.float32)
    est = E.BaselineRegressor(model_dir=str(tmp_path), label_dimension=2)
    est.train(inp(y, x, batch_size=200, num_epochs=None), steps=300)
    assert sorted(est.get_variable_names()) == ["baseline/bias", "baseline/bias/Ftrl", "baseline/bias/Ftrl_1",
                                                "global_step"]
    b = est.get_variable_value("baseline/bias")
    np.testing.assert_allclose(b, y.mean(axis=0), atol=1e-3)
    ev = est.evaluate(inp(y, x, batch_size=200))
    np.testing.assert_allclose(ev["average_loss"], np.mean((y - b) ** 2), rtol=1e-5)
    np.testing.assert_allclose(ev["label/mean"], y.mean(), rtol=1e-5)
    np.testing.assert_allclose(ev["prediction/mean"], b.mean(), rtol=1e-5)
    np.testing.assert_allclose(ev["loss"], np.sum((y - b) ** 2), rtol=1e-5)  # Reduction.SUM
    preds = list(est.predict(inp(None, x[:3])))
    assert set(preds[0]) == {"predictions"}
    np.testing.assert_allclose(preds[2]["predictions"], b)


def test_baseline_classifiers_learn_the_class_log_priors(tmp_path):
    lab = RNG.choice(3, size=300, p=[0.5, 0.3, 0.2]).astype(np.int64)
    x = RNG.randn(300, 1).astype(np.float32)
    est = E.BaselineClassifier(model_dir=str(tmp_path / "mc"), n_classes=3)
    est.train(inp(lab, x, batch_size=300, num_epochs=None), steps=300)
    b = est.get_variable_value("baseline/bias")
    priors = np.bincount(lab, minlength=3) / 300.0
    np.testing.assert_allclose(softmax(b[None])[0], priors, atol=1e-3)
    ev = est.evaluate(inp(lab, x, batch_size=300))
    p = softmax(b[None])[0]
    np.testing.assert_allclose(ev["average_loss"], -np.mean(np.log(p[lab])), rtol=1e-5)
    np.testing.assert_allclose(ev["accuracy"], np.mean(lab == np.argmax(b)), rtol=1e-6)
    pred = next(est.predict(inp(None, x[:1])))
    assert set(pred) == {"logits", "probabilities", "class_ids", "classes", "all_class_ids", "all_classes"}
    np.testing.assert_allclose(pred["probabilities"], p, rtol=1e-5)

    yb = (RNG.rand(300) < 0.3).astype(np.int64)
    est = E.BaselineClassifier(model_dir=str(tmp_path / "bin"))
    est.train(inp(yb, x, batch_size=300, num_epochs=None), steps=300)
    b = est.get_variable_value("baseline/bias")
    assert b.shape == (1,)
    q = yb.mean()
    np.testing.assert_allclose(b[0], np.log(q / (1 - q)), atol=5e-3)
    ev = est.evaluate(inp(yb, x, batch_size=300))
    np.testing.assert_allclose(ev["label/mean"], q, rtol=1e-6)
    np.testing.assert_allclose(ev["prediction/mean"], sigmoid(b[0]), rtol=1e-5)
    np.testing.assert_allclose(ev["accuracy_baseline"], max(q, 1 - q), rtol=1e-6)
    assert set(next(est.predict(inp(None, x[:1])))) == {"logits", "logistic", "probabilities", "class_ids",
                                                         "classes", "all_class_ids", "all_classes"}


def test_baseline_estimator_with_a_head_and_weights(tmp_path):
    y = RNG.randn(64, 1).astype(np.float32) + 2.0
    w = RNG.rand(64, 1).astype(np.float32)
    head = E.RegressionHead(weight_column="w")
    est = E.BaselineEstimator(head, model_dir=str(tmp_path), optimizer=tf.train.GradientDescentOptimizer(0.5))
    est.train(inp(y, RNG.randn(64, 1).astype(np.float32), batch_size=64, num_epochs=None, w=w), steps=100)
    # SUM_OVER_BATCH_SIZE of weighted squared errors: the optimum is the weighted mean
    np.testing.assert_allclose(est.get_variable_value("baseline/bias")[0], (w * y).sum() / w.sum(), atol=1e-4)


# -- the heads' estimators equal the canned ones ------------------------------------------------------------

def _train_eval_predict(est, y, steps=6):
    est.train(inp(y, num_epochs=None), steps=steps)
    ev = est.evaluate(inp(y))
    preds = list(est.predict(inp(None, X[:5])))
    values = {n: est.get_variable_value(n) for n in est.get_variable_names()}
    return ev, preds, values


def _assert_same(a, b):
    ev_a, preds_a, vars_a = a
    ev_b, preds_b, vars_b = b
    assert sorted(vars_a) == sorted(vars_b)
    for n in vars_a:
        np.testing.assert_allclose(vars_a[n], vars_b[n], rtol=1e-6, atol=1e-7, err_msg=n)
    assert sorted(ev_a) == sorted(ev_b)
    for k in ev_a:
        np.testing.assert_allclose(ev_a[k], ev_b[k], rtol=1e-6, err_msg=k)
    for pa, pb in zip(preds_a, preds_b):
        assert sorted(pa) == sorted(pb)
        for k in pa:
            if np.asarray(pa[k]).dtype.kind in "OUS":
                assert list(np.ravel(pa[k])) == list(np.ravel(pb[k]))
            else:
                np.testing.assert_allclose(pa[k], pb[k], rtol=1e-6)


SUM = tf.losses.Reduction.SUM
HEAD_CASES = [
    ("binary", Y_BIN, lambda: E.BinaryClassHead(loss_reduction=SUM), {"n_classes": 2}),
    ("multi", Y_MC, lambda: E.MultiClassHead(3, loss_reduction=SUM), {"n_classes": 3}),
    ("regression", Y_REG, lambda: E.RegressionHead(loss_reduction=SUM), None),
]


@pytest.mark.parametrize("kind,y,make_head,cls_kw", HEAD_CASES, ids=[c[0] for c in HEAD_CASES])
def test_linear_and_dnn_estimators_equal_the_canned_ones(tmp_path, kind, y, make_head, cls_kw):
    cfg = E.RunConfig(tf_random_seed=7)
    if cls_kw is None:
        lin = E.LinearRegressor(COLS, model_dir=str(tmp_path / "l1"))
        dnn = E.DNNRegressor([4, 3], COLS, model_dir=str(tmp_path / "d1"), config=cfg)
        comb = E.DNNLinearCombinedRegressor(model_dir=str(tmp_path / "c1"), linear_feature_columns=COLS,
                                            dnn_feature_columns=COLS, dnn_hidden_units=[3], config=cfg)
    else:
        lin = E.LinearClassifier(COLS, model_dir=str(tmp_path / "l1"), **cls_kw)
        dnn = E.DNNClassifier([4, 3], COLS, model_dir=str(tmp_path / "d1"), config=cfg, **cls_kw)
        comb = E.DNNLinearCombinedClassifier(model_dir=str(tmp_path / "c1"), linear_feature_columns=COLS,
                                             dnn_feature_columns=COLS, dnn_hidden_units=[3], config=cfg, **cls_kw)
    lin2 = E.LinearEstimator(make_head(), COLS, model_dir=str(tmp_path / "l2"))
    dnn2 = E.DNNEstimator(make_head(), [4, 3], COLS, model_dir=str(tmp_path / "d2"), config=cfg)
    comb2 = E.DNNLinearCombinedEstimator(make_head(), model_dir=str(tmp_path / "c2"), linear_feature_columns=COLS,
                                         dnn_feature_columns=COLS, dnn_hidden_units=[3], config=cfg)
    for a, b in ((lin, lin2), (dnn, dnn2), (comb, comb2)):
        _assert_same(_train_eval_predict(a, y), _train_eval_predict(b, y))


def test_public_head_defaults_names_and_metric_keys(tmp_path):
    h = E.BinaryClassHead()
    assert h.loss_reduction == tf.losses.Reduction.SUM_OVER_BATCH_SIZE and h.name is None
    assert h.logits_dimension == 1 and E.MultiClassHead(4).logits_dimension == 4
    assert E.RegressionHead(label_dimension=2).logits_dimension == 2
    assert E.MultiLabelHead(5).logits_dimension == 5
    with pytest.raises(ValueError):
        E.BinaryClassHead(thresholds=[1.5])
    with pytest.raises(ValueError):
        E.MultiClassHead(2)
    with pytest.raises(ValueError):
        E.MultiLabelHead(1)
    with pytest.raises(ValueError):
        E.BinaryClassHead(loss_reduction=tf.losses.Reduction.NONE)
    ce = E.contrib_estimator
    assert isinstance(ce.binary_classification_head(), E.BinaryClassHead)
    assert isinstance(ce.regression_head(label_dimension=2), E.RegressionHead)
    assert isinstance(ce.multi_label_head(3), E.MultiLabelHead)
    assert isinstance(ce.poisson_regression_head(), E.PoissonRegressionHead)

    # a named binary head with thresholds: every key suffixed, values by hand (SUM_OVER_BATCH_SIZE)
    head = E.BinaryClassHead(thresholds=[0.3, 0.7], name="h")
    est = E.LinearEstimator(head, COLS, model_dir=str(tmp_path))
    est.train(inp(Y_BIN, num_epochs=None), steps=5)
    ev = est.evaluate(inp(Y_BIN, batch_size=96))
    w = est.get_variable_value("linear/linear_model/x/weights")
    b = est.get_variable_value("linear/linear_model/bias_weights")
    z = X @ w + b
    p, y = sigmoid(z), Y_BIN.astype(np.float64)
    ce_loss = np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))
    at = {f"{m}/positive_threshold_{t}/h" for m in ("accuracy", "precision", "recall") for t in ("0.3", "0.7")}
    assert {"accuracy/h", "auc/h", "average_loss/h", "label/mean/h", "prediction/mean/h", "precision/h",
            "recall/h", "accuracy_baseline/h", "auc_precision_recall/h", "loss", "global_step"} | at == set(ev)
    np.testing.assert_allclose(ev["loss"], ce_loss.mean(), rtol=1e-5)
    np.testing.assert_allclose(ev["average_loss/h"], ce_loss.mean(), rtol=1e-5)
    for t in (0.3, 0.7):
        np.testing.assert_allclose(ev[f"accuracy/positive_threshold_{t:g}/h"], np.mean((p >= t) == (y > 0)),
                                   rtol=1e-6)
        tp, fp = np.sum((p > t) & (y > 0)), np.sum((p > t) & (y == 0))
        fn = np.sum((p <= t) & (y > 0))
        np.testing.assert_allclose(ev[f"precision/positive_threshold_{t:g}/h"], tp / (tp + fp + 1e-7), rtol=1e-5)
        np.testing.assert_allclose(ev[f"recall/positive_threshold_{t:g}/h"], tp / (tp + fn + 1e-7), rtol=1e-5)


def test_poisson_logistic_and_custom_loss_heads(tmp_path):
    counts = RNG.poisson(np.exp(0.3 * X[:, :1] + 0.5)).astype(np.float32)
    est = E.LinearEstimator(E.PoissonRegressionHead(), COLS, model_dir=str(tmp_path / "p"),
                            optimizer=tf.train.GradientDescentOptimizer(0.1))
    losses = []
    for _ in range(3):
        est.train(inp(counts, num_epochs=None), steps=10)
        losses.append(est.evaluate(inp(counts, batch_size=96))["loss"])
    assert losses[-1] < losses[0]
    w = est.get_variable_value("linear/linear_model/x/weights")
    b = est.get_variable_value("linear/linear_model/bias_weights")
    z = (X @ w + b)
    # log_poisson_loss with the Stirling term (compute_full_loss=True) where the count > 1
    c = counts.astype(np.float64)
    stirling = np.where(c > 1, c * np.log(np.maximum(c, 1)) - c + 0.5 * np.log(2 * np.pi * np.maximum(c, 1)), 0)
    np.testing.assert_allclose(losses[-1], np.mean(np.exp(z) - z * c + stirling), rtol=1e-4)
    pred = next(est.predict(inp(None, X[:1])))
    assert set(pred) == {"predictions", "logits"}
    np.testing.assert_allclose(pred["predictions"], np.exp(pred["logits"]), rtol=1e-6)

    soft = sigmoid(X[:, :1]).astype(np.float32)
    est = E.LinearEstimator(E.LogisticRegressionHead(), COLS, model_dir=str(tmp_path / "l"))
    est.train(inp(soft, num_epochs=None), steps=5)
    pred = next(est.predict(inp(None, X[:1])))
    np.testing.assert_allclose(pred["predictions"], sigmoid(pred["logits"]), rtol=1e-6)

    def abs_loss(labels, logits):
        return tf.abs(labels - logits)
    est = E.LinearEstimator(E.RegressionHead(loss_fn=abs_loss), COLS, model_dir=str(tmp_path / "c"))
    est.train(inp(Y_REG, num_epochs=None), steps=5)
    ev = est.evaluate(inp(Y_REG, batch_size=96))
    z = X @ est.get_variable_value("linear/linear_model/x/weights") + \
        est.get_variable_value("linear/linear_model/bias_weights")
    np.testing.assert_allclose(ev["average_loss"], np.mean(np.abs(Y_REG - z)), rtol=1e-5)


def test_multi_label_head_metrics_by_hand(tmp_path):
    y = (X @ RNG.randn(3, 4).astype(np.float32) > 0).astype(np.int64)
    head = E.MultiLabelHead(4, thresholds=[0.5], classes_for_class_based_metrics=[1])
    est = E.LinearEstimator(head, COLS, model_dir=str(tmp_path))
    losses = []
    for _ in range(3):
        est.train(inp(y, num_epochs=None), steps=5)
        losses.append(est.evaluate(inp(y, batch_size=96)))
    assert losses[-1]["loss"] < losses[0]["loss"]
    ev = losses[-1]
    z = X @ est.get_variable_value("linear/linear_model/x/weights") + \
        est.get_variable_value("linear/linear_model/bias_weights")
    p, yf = sigmoid(z), y.astype(np.float64)
    per = (np.maximum(z, 0) - z * yf + np.log1p(np.exp(-np.abs(z)))).mean(axis=1)
    np.testing.assert_allclose(ev["loss"], per.mean(), rtol=1e-5)
    np.testing.assert_allclose(ev["average_loss"], per.mean(), rtol=1e-5)
    np.testing.assert_allclose(ev["accuracy/positive_threshold_0.5"], np.mean((p >= 0.5) == (y > 0)), rtol=1e-6)
    np.testing.assert_allclose(ev["probability_mean/class1"], p[:, 1].mean(), rtol=1e-5)
    assert {"auc", "auc_precision_recall", "auc/class1", "auc_precision_recall/class1",
            "precision/positive_threshold_0.5", "recall/positive_threshold_0.5"} <= set(ev)
    pred = next(est.predict(inp(None, X[:1])))
    assert set(pred) == {"logits", "probabilities"}


def test_multi_head_weights_losses_and_keys(tmp_path):
    ha = E.BinaryClassHead(name="a")
    hb = E.RegressionHead(name="b")
    head = E.MultiHead([ha, hb], head_weights=[1.0, 2.0])
    assert head.logits_dimension == 2 and head.name == "a_b"
    with pytest.raises(ValueError):
        E.MultiHead([E.BinaryClassHead()])
    with pytest.raises(ValueError):
        E.MultiHead([ha, hb], head_weights=[1.0])

    def input_fn():
        feats = inp(None, batch_size=96)()
        ds_y = {"a": tf.constant(Y_BIN), "b": tf.constant(Y_REG)}
        return feats, ds_y
    est = E.LinearEstimator(head, COLS, model_dir=str(tmp_path))
    first = est.evaluate(input_fn, steps=1)["loss"]
    est.train(input_fn, steps=10)
    ev = est.evaluate(input_fn, steps=1)
    assert ev["loss"] < first
    z = X @ est.get_variable_value("linear/linear_model/x/weights") + \
        est.get_variable_value("linear/linear_model/bias_weights")
    za, zb = z[:, :1], z[:, 1:]
    yb = Y_BIN.astype(np.float64)
    loss_a = np.mean(np.maximum(za, 0) - za * yb + np.log1p(np.exp(-np.abs(za))))
    loss_b = np.mean((zb - Y_REG) ** 2)
    np.testing.assert_allclose(ev["loss"], loss_a + 2.0 * loss_b, rtol=1e-5)
    np.testing.assert_allclose(ev["average_loss/a"], loss_a, rtol=1e-5)
    np.testing.assert_allclose(ev["average_loss/b"], loss_b, rtol=1e-5)
    np.testing.assert_allclose(ev["accuracy/a"], np.mean((za > 0) == (yb > 0)), rtol=1e-6)
    assert {"auc/a", "label/mean/b", "prediction/mean/b"} <= set(ev)
    pred = next(est.predict(inp(None, batch_size=96)))
    assert ("a", "logistic") in pred and ("b", "predictions") in pred
    np.testing.assert_allclose(pred[("b", "predictions")], zb[0], rtol=1e-5)


# -- VocabInfo ----------------------------------------------------------------------------------------

def _write(path, words):
    path.write_text("".join(w + "\n" for w in words))
    return str(path)


def test_vocab_info_remaps_rows_with_the_backup_initializer(tmp_path):
    from collflow.estimator.warm_starting import warm_start_var_with_vocab
    old = _write(tmp_path / "old.txt", ["apple", "banana", "cherry", "date"])
    new = _write(tmp_path / "new.txt", ["date", "fig", "apple", "grape", "cherry"])
    old_val = np.arange(12, dtype=np.float32).reshape(4, 3) + 100.0
    with pytest.raises(ValueError):
        E.VocabInfo(new, 5, 1, old, axis=2)

    def counting(shape, dtype=None, partition_info=None):  # values in the order they are consumed
        n = int(np.prod(shape))
        return tf.reshape(tf.cast(tf.range(n), tf.float32), shape) - 1.0 - n

    with tf.Graph().as_default():
        v = tf.get_variable("emb", [6, 3], initializer=tf.zeros_initializer())
        warm_start_var_with_vocab(v, old_val, E.VocabInfo(new, 5, 1, old, backup_initializer=counting))
        v2 = tf.get_variable("out", [3, 4], initializer=tf.zeros_initializer())
        # axis 1 with old_vocab_size 3: "date" is outside the old vocabulary
        warm_start_var_with_vocab(v2, old_val.T, E.VocabInfo(new, 4, 0, old, old_vocab_size=3, axis=1))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got, got2 = s.run([v, v2])
    # rows: date<-3, fig: backup, apple<-0, grape: backup, cherry<-2, then one OOV row
    missing = np.arange(6, dtype=np.float32) - 7.0          # counting([6]): fig's 3 values, then grape's
    want = np.stack([old_val[3], missing[:3], old_val[0], missing[3:], old_val[2],
                     np.arange(3, dtype=np.float32) - 4.0])  # counting([1, 3]) for the OOV row
    np.testing.assert_array_equal(got, want)
    want2 = np.stack([np.zeros(3), np.zeros(3), old_val[0], np.zeros(3)], axis=1)  # date, fig, apple, grape
    np.testing.assert_array_equal(got2, want2)


def test_warm_start_settings_with_vocab_info_in_an_estimator(tmp_path):
    old = _write(tmp_path / "old.txt", ["a", "b", "c"])
    new = _write(tmp_path / "new.txt", ["c", "z", "a"])
    words = np.array([["a"], ["b"], ["c"], ["a"]] * 8, dtype=object)
    y = np.array([[1.0], [2.0], [3.0], [1.0]] * 8, np.float32)

    def input_fn():
        return {"w": tf.constant(words)}, tf.constant(y)
    col_old = fc.categorical_column_with_vocabulary_file("w", old, num_oov_buckets=1)
    est = E.LinearRegressor([col_old], model_dir=str(tmp_path / "old"))
    est.train(input_fn, steps=20)
    old_w = est.get_variable_value("linear/linear_model/w/weights")
    col_new = fc.categorical_column_with_vocabulary_file("w", new, num_oov_buckets=2)
    name = "linear/linear_model/w/weights"
    ws = E.WarmStartSettings(str(tmp_path / "old"), vars_to_warm_start=name,
                             var_name_to_vocab_info={name: E.VocabInfo(new, 3, 2, old,
                                                                       backup_initializer=tf.ones_initializer())})
    est2 = E.LinearRegressor([col_new], model_dir=str(tmp_path / "new"), warm_start_from=ws,
                             optimizer=tf.train.GradientDescentOptimizer(0.0))
    est2.train(input_fn, steps=1)
    got = est2.get_variable_value(name)
    np.testing.assert_allclose(got, np.stack([old_w[2], [1.0], old_w[0], [1.0], [1.0]]))
    assert est2.get_variable_value("linear/linear_model/bias_weights")[0] == 0.0  # not warm-started
    bad = E.WarmStartSettings(str(tmp_path / "old"), ".*bias_weights", var_name_to_vocab_info={
        "no/such/var": E.VocabInfo(new, 3, 2, old)})
    with pytest.raises(ValueError, match="var_name_to_vocab_info"):
        E.LinearRegressor([col_new], model_dir=str(tmp_path / "bad"), warm_start_from=bad).train(input_fn, steps=1)


# -- batch_norm ------------------------------------------------------------------------------------------

def test_dnn_batch_norm_variables_and_moving_statistics(tmp_path):
    est = E.DNNClassifier([4], COLS, model_dir=str(tmp_path / "bn"), batch_norm=True,
                          optimizer=tf.train.GradientDescentOptimizer(0.0))
    est.train(inp(Y_BIN, batch_size=96), steps=1)
    names = set(est.get_variable_names())
    bn = {f"dnn/hiddenlayer_0/batchnorm_0/{n}" for n in ("gamma", "beta", "moving_mean", "moving_variance")}
    assert bn <= names
    k = est.get_variable_value("dnn/hiddenlayer_0/kernel")
    b = est.get_variable_value("dnn/hiddenlayer_0/bias")
    h = np.maximum(X @ k + b, 0.0)  # after the activation, as TF's _DNNModel
    np.testing.assert_allclose(est.get_variable_value("dnn/hiddenlayer_0/batchnorm_0/moving_mean"),
                               0.001 * h.mean(axis=0), rtol=1e-4, atol=1e-7)       # momentum 0.999
    np.testing.assert_allclose(est.get_variable_value("dnn/hiddenlayer_0/batchnorm_0/moving_variance"),
                               0.999 + 0.001 * h.var(axis=0), rtol=1e-5)
    # inference uses the moving statistics
    mm = est.get_variable_value("dnn/hiddenlayer_0/batchnorm_0/moving_mean")
    mv = est.get_variable_value("dnn/hiddenlayer_0/batchnorm_0/moving_variance")
    hn = (h - mm) / np.sqrt(mv + 1e-3)
    logits = hn @ est.get_variable_value("dnn/logits/kernel") + est.get_variable_value("dnn/logits/bias")
    pred = list(est.predict(inp(None, X[:4])))
    np.testing.assert_allclose([p["logits"][0] for p in pred], logits[:4, 0], rtol=1e-4, atol=1e-5)

    # the training loss falls (evaluation uses the slow moving statistics, momentum 0.999)
    est = E.DNNRegressor([4, 3], COLS, model_dir=str(tmp_path / "reg"), batch_norm=True)
    rec = LossRecorder()
    est.train(inp(Y_REG, num_epochs=None), steps=60, hooks=[rec])
    assert np.mean(rec.losses[-5:]) < np.mean(rec.losses[:5]) / 2
    assert "dnn/hiddenlayer_1/batchnorm_1/moving_mean" in est.get_variable_names()
    comb = E.DNNLinearCombinedClassifier(model_dir=str(tmp_path / "comb"), linear_feature_columns=COLS,
                                         dnn_feature_columns=COLS, dnn_hidden_units=[3], batch_norm=True)
    comb.train(inp(Y_BIN), steps=2)
    assert np.any(comb.get_variable_value("dnn/hiddenlayer_0/batchnorm_0/moving_mean") != 0)


def test_multi_head_and_multi_label_exports(tmp_path):
    head = E.MultiHead([E.MultiLabelHead(2, name="m"), E.RegressionHead(name="r")])

    def input_fn():
        return inp(None, batch_size=96)(), {"m": tf.constant((X[:, :2] > 0).astype(np.int64)),
                                             "r": tf.constant(Y_REG)}
    est = E.LinearEstimator(head, COLS, model_dir=str(tmp_path / "m"))
    est.train(input_fn, steps=2)
    raw = E.export.build_raw_serving_input_receiver_fn({"x": tf.placeholder(tf.float32, [None, 3])})
    path = est.export_saved_model(str(tmp_path / "e"), raw).decode()
    want = list(est.predict(inp(None, X[:4])))
    with tf.Graph().as_default(), tf.Session() as s:
        meta = tf.saved_model.loader.load(s, ["serve"], path)
        # the raw receiver serves the predict signatures only (a classify/regress one needs examples)
        assert {"predict", "m/predict", "r/predict"} <= set(meta.signature_def)
        pred = meta.signature_def["predict"]
        assert sorted(pred.outputs) == ["m/logits", "m/probabilities", "r/predictions"]
        got = s.run(pred.outputs["m/probabilities"].name, {pred.inputs["x"].name: X[:4]})
    np.testing.assert_allclose(got, [w[("m", "probabilities")] for w in want], rtol=1e-6)
