"""tf.contrib.learn's Estimator API (TF 1.x): the iris and boston tutorial programs, custom
model_fns (ModelFnOps and the legacy tuple), MetricSpec, SKCompat, NotFittedError, contrib's
variable names, and one training step checked against a hand-built collflow graph."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

learn = tf.contrib.learn


def _iris_like(n=150, seed=0):
    rng = np.random.RandomState(seed)
    centers = np.array([[5.0, 3.4, 1.5, 0.2], [5.9, 2.8, 4.3, 1.3], [6.6, 3.0, 5.6, 2.0]], np.float32)
    y = np.arange(n) % 3
    x = centers[y] + 0.25 * rng.randn(n, 4).astype(np.float32)
    return x.astype(np.float32), y.astype(np.int64)


def _hook_reading_initial_values():
    class Hook(tf.train.SessionRunHook):
        def begin(self):
            self._vars = tf.trainable_variables()

        def after_create_session(self, session, coord):
            self.values = {v.op.name: session.run(v) for v in self._vars}
    return Hook()


def test_iris_tutorial_dnn_classifier(tmp_path):
    x, y = _iris_like()
    cols = [tf.contrib.layers.real_valued_column("", dimension=4)]
    clf = learn.DNNClassifier(feature_columns=cols, hidden_units=[10, 20, 10], n_classes=3,
                              model_dir=str(tmp_path), config=learn.RunConfig(tf_random_seed=3))
    clf.fit(x=x, y=y, steps=300)
    scores = clf.evaluate(x=x, y=y, steps=1)
    assert set(scores) == {"loss", "accuracy", "global_step"}
    assert scores["global_step"] == 300 and scores["accuracy"] > 0.9
    classes = list(clf.predict(x=x[:6]))
    assert classes == list(y[:6])
    assert list(clf.predict_classes(x=x[:6])) == list(y[:6])
    proba = clf.predict_proba(x=x[:6], as_iterable=False)
    assert proba.shape == (6, 3) and np.allclose(proba.sum(1), 1, atol=1e-5)
    assert np.array_equal(np.argmax(proba, 1), y[:6])
    names = clf.get_variable_names()
    for want in ("dnn/hiddenlayer_0/weights", "dnn/hiddenlayer_0/biases", "dnn/hiddenlayer_2/weights",
                 "dnn/logits/weights", "dnn/logits/biases", "dnn/learning_rate", "global_step"):
        assert want in names
    assert clf.get_variable_value("dnn/hiddenlayer_1/weights").shape == (10, 20)
    assert clf.get_variable_value("dnn/learning_rate") == pytest.approx(0.05)
    # fit resumes from the checkpoint
    clf.fit(x=x, y=y, steps=5)
    assert clf.evaluate(x=x, y=y)["global_step"] == 305


def test_not_fitted_and_bad_input(tmp_path):
    x, y = _iris_like(30)
    clf = learn.DNNClassifier(hidden_units=[4], feature_columns=learn.infer_real_valued_columns_from_input(x),
                              n_classes=3, model_dir=str(tmp_path))
    with pytest.raises(learn.NotFittedError):
        list(clf.predict(x=x))
    with pytest.raises(learn.NotFittedError):
        clf.evaluate(x=x, y=y)
    assert issubclass(learn.NotFittedError, ValueError)
    with pytest.raises(ValueError, match="Either x or input_fn"):
        clf.fit(steps=1)
    with pytest.raises(ValueError, match="both input_fn and x"):
        clf.fit(x=x, y=y, input_fn=lambda: None, steps=1)
    with pytest.raises(ValueError, match="n_classes"):
        learn.DNNClassifier(hidden_units=[4], feature_columns=[], n_classes=1)
    with pytest.raises(NotImplementedError, match="centered_bias"):
        learn.DNNClassifier(hidden_units=[4], feature_columns=learn.infer_real_valued_columns_from_input(x),
                            enable_centered_bias=True)


def test_boston_like_dnn_regressor_one_step_exact(tmp_path):
    rng = np.random.RandomState(1)
    x = rng.randn(40, 3).astype(np.float32)
    y = (x @ np.array([1.5, -2.0, 0.5], np.float32) + 3.0).astype(np.float32)
    cols = [tf.contrib.layers.real_valued_column(k) for k in ("a", "b", "c")]
    feats = {"a": x[:, :1], "b": x[:, 1:2], "c": x[:, 2:]}
    reg = learn.DNNRegressor(hidden_units=[5, 4], feature_columns=cols, model_dir=str(tmp_path),
                             config=learn.RunConfig(tf_random_seed=7))
    hook = _hook_reading_initial_values()
    reg.fit(x=feats, y=y, steps=1, monitors=[hook])  # batch_size None: all 40 rows in one batch
    init = hook.values
    assert sorted(init) == ["dnn/hiddenlayer_0/biases", "dnn/hiddenlayer_0/weights", "dnn/hiddenlayer_1/biases",
                            "dnn/hiddenlayer_1/weights", "dnn/logits/biases", "dnn/logits/weights"]
    # the same step by hand: relu layers, mean squared error, Adagrad(0.05)
    g = tf.Graph()
    with g.as_default():
        vs = {k: tf.Variable(v, name=k.replace("/", "_")) for k, v in init.items()}
        h = tf.constant(x)  # the input layer orders the columns by name: a, b, c
        h = tf.nn.relu(tf.matmul(h, vs["dnn/hiddenlayer_0/weights"]) + vs["dnn/hiddenlayer_0/biases"])
        h = tf.nn.relu(tf.matmul(h, vs["dnn/hiddenlayer_1/weights"]) + vs["dnn/hiddenlayer_1/biases"])
        out = tf.matmul(h, vs["dnn/logits/weights"]) + vs["dnn/logits/biases"]
        loss = tf.reduce_mean(tf.square(out - tf.constant(y[:, None])))
        step = tf.train.AdagradOptimizer(0.05).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            want = {k: sess.run(v) for k, v in vs.items()}
    for k, v in want.items():
        np.testing.assert_allclose(reg.get_variable_value(k), v, rtol=1e-5, atol=1e-6, err_msg=k)
    assert not np.allclose(want["dnn/logits/weights"], init["dnn/logits/weights"])
    reg.fit(x=feats, y=y, steps=400, batch_size=20)
    res = reg.evaluate(x=feats, y=y)
    assert set(res) == {"loss", "global_step"} and res["loss"] < 1.0
    scores = reg.predict_scores(x=feats, as_iterable=False)
    assert scores.shape == (40,)
    np.testing.assert_allclose(np.mean((scores - y) ** 2), res["loss"], rtol=1e-4)
    assert set(next(reg.predict(x=feats, outputs=["scores"]))) == {"scores"}


def _linear_model_fn(features, labels, mode, params):
    w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    pred = tf.squeeze(tf.matmul(features["x"], w) + b, 1)
    loss = tf.losses.mean_squared_error(labels, pred) if labels is not None else None
    train_op = None
    if mode == learn.ModeKeys.TRAIN:
        train_op = tf.train.GradientDescentOptimizer(params["lr"]).minimize(
            loss, global_step=tf.train.get_global_step())
    return learn.ModelFnOps(mode, predictions={"y": pred}, loss=loss, train_op=train_op,
                            eval_metric_ops={"mae": tf.metrics.mean_absolute_error(labels, pred)}
                            if labels is not None else None)


def test_custom_model_fn_ops_and_metric_spec(tmp_path):
    rng = np.random.RandomState(2)
    x = rng.randn(64, 2).astype(np.float32)
    y = (x @ np.array([2.0, -1.0], np.float32) + 0.5).astype(np.float32)
    est = learn.Estimator(model_fn=_linear_model_fn, model_dir=str(tmp_path), params={"lr": 0.1})
    est.fit(x={"x": x}, y=y, steps=200, batch_size=16)
    np.testing.assert_allclose(est.get_variable_value("w").ravel(), [2.0, -1.0], atol=1e-3)
    np.testing.assert_allclose(est.get_variable_value("b"), [0.5], atol=1e-3)
    metrics = {"rmse": learn.MetricSpec(tf.metrics.root_mean_squared_error, prediction_key="y"),
               "bare_mean": learn.MetricSpec(lambda predictions, labels: tf.metrics.mean(predictions))}
    res = est.evaluate(x={"x": x}, y=y, metrics=metrics, name="x")
    assert set(res) == {"loss", "mae", "rmse", "bare_mean", "global_step"}
    assert res["bare_mean"] == pytest.approx(np.mean(y), abs=2e-3)
    assert res["rmse"] < 1e-2 and res["mae"] < 1e-2 and res["global_step"] == 200
    preds = est.predict(x={"x": x[:3]}, as_iterable=False)
    np.testing.assert_allclose(preds["y"], x[:3] @ np.array([2.0, -1.0]) + 0.5, atol=5e-3)
    # a MetricSpec with weights, computed by hand
    wts = np.linspace(0.1, 1.0, 64).astype(np.float32)
    res = est.evaluate(x={"x": x, "w": wts}, y=y + 1.0, metrics={"wmae": learn.MetricSpec(
        tf.metrics.mean_absolute_error, prediction_key="y", weight_key="w")})
    pred_all = est.predict(x={"x": x}, as_iterable=False)["y"]
    want = np.sum(wts * np.abs(pred_all - y - 1.0)) / np.sum(wts)
    assert res["wmae"] == pytest.approx(want, rel=1e-4)
    with pytest.raises(ValueError, match="MetricSpec"):
        est.evaluate(x={"x": x}, y=y, metrics={"m": lambda p, l: tf.metrics.mean(p)})


def test_legacy_tuple_model_fn_and_skcompat(tmp_path):
    def model_fn(features, labels):
        w = tf.get_variable("w", [3, 2], initializer=tf.zeros_initializer())
        logits = tf.matmul(features, w)
        loss = train_op = None
        if labels is not None:
            loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
            train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss,
                                                                       global_step=tf.train.get_global_step())
        return {"class": tf.argmax(logits, 1), "prob": tf.nn.softmax(logits)}, loss, train_op

    rng = np.random.RandomState(3)
    x = rng.randn(80, 3).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
    est = learn.SKCompat(learn.Estimator(model_fn=model_fn, model_dir=str(tmp_path)))
    est.fit(x, y, steps=100, batch_size=80)
    res = est.score(x, y, metrics={"acc": learn.MetricSpec(tf.metrics.accuracy, prediction_key="class")})
    assert res["acc"] > 0.95 and res["global_step"] == 100
    out = est.predict(x, batch_size=30)
    assert set(out) == {"class", "prob"} and out["class"].shape == (80,) and out["prob"].shape == (80, 2)
    assert np.mean(out["class"] == y) == pytest.approx(res["acc"])
    with pytest.raises(ValueError, match="model_fn"):
        learn.Estimator(model_fn=None)
    with pytest.raises(ValueError, match="params"):
        learn.Estimator(model_fn=model_fn, params={"a": 1})


def test_model_fn_ops_checks():
    with pytest.raises(ValueError, match="train_op"):
        learn.ModelFnOps(learn.ModeKeys.TRAIN, loss=tf.constant(1.0))
    with pytest.raises(ValueError, match="predictions"):
        learn.ModelFnOps(learn.ModeKeys.INFER)
    assert learn.ModeKeys.INFER == "infer" and learn.ModeKeys.EVAL == "eval"
    cfg = learn.RunConfig(tf_random_seed=5, save_checkpoints_steps=10)
    assert cfg.tf_random_seed == 5 and cfg.save_checkpoints_secs is None and cfg.environment == "local"
    assert learn.ProblemType.LINEAR_REGRESSION == 2


def test_export_savedmodel_with_input_fn_ops(tmp_path):
    rng = np.random.RandomState(8)
    x = rng.randn(32, 2).astype(np.float32)
    y = (x @ np.array([1.0, 1.0], np.float32)).astype(np.float32)
    est = learn.Estimator(model_fn=_linear_model_fn, model_dir=str(tmp_path / "m"), params={"lr": 0.1})

    def serving_input_fn():
        ph = tf.placeholder(tf.float32, [None, 2], name="x")
        return learn.InputFnOps({"x": ph}, None, {"x": ph})
    with pytest.raises(learn.NotFittedError):
        est.export_savedmodel(str(tmp_path / "e"), serving_input_fn)
    est.fit(x={"x": x}, y=y, steps=50, batch_size=32)
    path = est.export_savedmodel(str(tmp_path / "e"), serving_input_fn)
    want = est.predict(x={"x": x[:4]}, as_iterable=False)["y"]
    with tf.Graph().as_default(), tf.Session() as s:
        meta = tf.saved_model.loader.load(s, ["serve"], path.decode())
        sig = meta.signature_def["serving_default"]
        got = s.run(sig.outputs["y"].name, {sig.inputs["x"].name: x[:4]})
    np.testing.assert_allclose(got, want, rtol=1e-5)
