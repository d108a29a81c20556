"""tf.estimator (TF1's): Estimator train/evaluate/predict, numpy_input_fn, train_and_evaluate
and the canned linear/DNN estimators; every behaviour is checked without TensorFlow."""
import glob
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf

E = tf.estimator
RNG = np.random.RandomState(0)
X = RNG.randn(64, 3).astype(np.float32)
W_TRUE = np.array([[1.0], [-2.0], [0.5]], np.float32)
Y = (X @ W_TRUE + 0.3).astype(np.float32)


def linear_model_fn(features, labels, mode, params):
    w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    pred = tf.matmul(features["x"], w) + b
    if mode == E.ModeKeys.PREDICT:
        return E.EstimatorSpec(mode, predictions={"y": pred, "twice": 2 * pred})
    loss = tf.reduce_mean(tf.square(pred - labels))
    train_op = tf.train.GradientDescentOptimizer(params["lr"]).minimize(loss, global_step=tf.train.get_global_step())
    return E.EstimatorSpec(mode, loss=loss, train_op=train_op,
                           eval_metric_ops={"mae": tf.metrics.mean_absolute_error(labels, pred)})


class LossRecorder(tf.train.SessionRunHook):
    def __init__(self):
        self.losses = []

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(run_context.original_args.fetches)

    def after_run(self, run_context, run_values):
        self.losses.append(float(run_values.results[1]))


def inp(batch_size=16, num_epochs=1, x=X, y=Y):
    return E.inputs.numpy_input_fn({"x": x}, y, batch_size=batch_size, num_epochs=num_epochs, shuffle=False)


def test_train_checkpoints_resume_and_max_steps(tmp_path):
    d = str(tmp_path)
    est = E.Estimator(linear_model_fn, model_dir=d, params={"lr": 0.1})
    rec = LossRecorder()
    assert est.train(inp(num_epochs=3), hooks=[rec]) is est
    assert len(rec.losses) == 12 and rec.losses[-1] < rec.losses[0] / 5
    assert sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, "model.ckpt-*"))) == \
        ["model.ckpt-0.h5", "model.ckpt-12.h5"]
    assert glob.glob(os.path.join(d, "events.out.tfevents.*"))
    assert est.latest_checkpoint().endswith("model.ckpt-12")
    assert sorted(est.get_variable_names()) == ["b", "global_step", "w"]
    assert est.get_variable_value("global_step") == 12
    est.train(inp(num_epochs=None), steps=5)  # resumes from step 12
    assert est.get_variable_value("global_step") == 17
    est.train(inp(num_epochs=None), max_steps=20)
    assert est.get_variable_value("global_step") == 20
    before = est.get_variable_value("w")
    est.train(inp(num_epochs=None), max_steps=20)  # already there: no training
    np.testing.assert_array_equal(est.get_variable_value("w"), before)
    assert est.model_dir == d and est.config.model_dir == d and est.params == {"lr": 0.1}
    with pytest.raises(ValueError):
        est.train(inp(), steps=1, max_steps=3)
    with pytest.raises(ValueError):
        est.train(inp(), steps=0)


def test_checkpoint_steps_and_keep_max(tmp_path):
    cfg = E.RunConfig(save_checkpoints_steps=2, keep_checkpoint_max=2, save_summary_steps=1)
    est = E.Estimator(linear_model_fn, model_dir=str(tmp_path), config=cfg, params={"lr": 0.1})
    est.train(inp(num_epochs=None), steps=7)
    names = sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "model.ckpt-*")))
    assert names == ["model.ckpt-6.h5", "model.ckpt-7.h5"]


def test_evaluate_matches_a_by_hand_computation(tmp_path):
    est = E.Estimator(linear_model_fn, model_dir=str(tmp_path), params={"lr": 0.05})
    est.train(inp(), steps=3)
    w, b = est.get_variable_value("w"), est.get_variable_value("b")
    res = est.evaluate(inp(batch_size=20))
    assert set(res) == {"mae", "loss", "global_step"} and res["global_step"] == 3
    pred = X @ w + b
    batches = [slice(i, i + 20) for i in range(0, 64, 20)]
    loss = np.mean([np.mean((pred[s] - Y[s]) ** 2) for s in batches])  # the mean of the batch losses
    np.testing.assert_allclose(res["loss"], loss, rtol=1e-5)
    np.testing.assert_allclose(res["mae"], np.mean(np.abs(pred - Y)), rtol=1e-5)
    res2 = est.evaluate(inp(batch_size=20), steps=1, name="one")
    np.testing.assert_allclose(res2["loss"], np.mean((pred[:20] - Y[:20]) ** 2), rtol=1e-5)
    assert glob.glob(str(tmp_path / "eval" / "events.out.tfevents.*"))
    assert glob.glob(str(tmp_path / "eval_one" / "events.out.tfevents.*"))


def test_evaluate_rejects_a_loss_metric(tmp_path):
    def model_fn(features, labels, mode):
        loss = tf.reduce_mean(features["x"]) * tf.get_variable("v", [], initializer=tf.ones_initializer())
        return E.EstimatorSpec(mode, loss=loss, eval_metric_ops={"loss": tf.metrics.mean(loss)})
    with pytest.raises(ValueError, match="loss"):
        E.Estimator(model_fn, model_dir=str(tmp_path)).evaluate(E.inputs.numpy_input_fn({"x": X}, shuffle=False))


def test_predict(tmp_path):
    est = E.Estimator(linear_model_fn, model_dir=str(tmp_path), params={"lr": 0.1})
    est.train(inp(), steps=4)
    w, b = est.get_variable_value("w"), est.get_variable_value("b")
    pin = E.inputs.numpy_input_fn({"x": X[:5]}, batch_size=2, shuffle=False)
    out = list(est.predict(pin))
    assert len(out) == 5 and set(out[0]) == {"y", "twice"}
    np.testing.assert_allclose(np.stack([o["y"] for o in out]), X[:5] @ w + b, rtol=1e-5)
    assert [set(o) for o in est.predict(pin, predict_keys=["y"])] == [{"y"}] * 5
    batches = list(est.predict(pin, yield_single_examples=False))
    assert [len(bt["y"]) for bt in batches] == [2, 2, 1]
    with pytest.raises(ValueError):
        list(est.predict(pin, predict_keys=["nope"]))
    # labels from input_fn are dropped; the default graph is untouched while iterating
    g = tf.get_default_graph()
    gen = est.predict(inp(batch_size=64))
    first = next(gen)
    assert tf.get_default_graph() is g and set(first) == {"y", "twice"}
    assert len(list(gen)) == 63


def test_predict_single_tensor_and_no_checkpoint(tmp_path):
    def model_fn(features, mode):
        v = tf.get_variable("v", [], initializer=tf.constant_initializer(3.0))
        return E.EstimatorSpec(mode, predictions=features["x"][:, 0] * v)
    est = E.Estimator(model_fn, model_dir=str(tmp_path))
    out = list(est.predict(E.inputs.numpy_input_fn({"x": X[:3]}, batch_size=2, shuffle=False)))
    np.testing.assert_allclose(out, X[:3, 0] * 3, rtol=1e-6)


def test_model_fn_argument_checks(tmp_path):
    with pytest.raises(ValueError):
        E.Estimator(lambda labels, mode: None)
    with pytest.raises(ValueError):
        E.Estimator(lambda features, labels, mode: None, params={"a": 1})

    def no_labels(features, mode):
        return E.EstimatorSpec(mode, predictions=features["x"])
    with pytest.raises(ValueError, match="labels"):
        E.Estimator(no_labels, model_dir=str(tmp_path)).evaluate(inp())
    with pytest.raises(ValueError):
        E.Estimator(linear_model_fn, model_dir=str(tmp_path / "a"), config=E.RunConfig(model_dir=str(tmp_path / "b")),
                    params={"lr": 1})


def test_input_fn_may_return_a_dataset_and_take_params(tmp_path):
    seen = {}

    def input_fn(params, mode, config):
        seen.update(params=params, mode=mode, config=config)
        return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(32)
    est = E.Estimator(linear_model_fn, model_dir=str(tmp_path), params={"lr": 0.1})
    est.train(input_fn)
    assert est.get_variable_value("global_step") == 2
    assert seen["mode"] == E.ModeKeys.TRAIN and seen["params"] == {"lr": 0.1} and seen["config"] is est.config


def test_estimator_spec_and_run_config_checks():
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        with pytest.raises(ValueError):
            E.EstimatorSpec(E.ModeKeys.TRAIN, loss=loss)
        with pytest.raises(ValueError):
            E.EstimatorSpec(E.ModeKeys.EVAL)
        with pytest.raises(ValueError):
            E.EstimatorSpec(E.ModeKeys.PREDICT)
        with pytest.raises(TypeError):
            E.EstimatorSpec(E.ModeKeys.EVAL, loss=loss, eval_metric_ops={"m": loss})
        spec = E.EstimatorSpec(E.ModeKeys.EVAL, loss=loss)
        assert spec.eval_metric_ops == {} and spec.training_hooks == () and spec.predictions == {}
    assert (E.ModeKeys.TRAIN, E.ModeKeys.EVAL, E.ModeKeys.PREDICT) == ("train", "eval", "infer")
    cfg = E.RunConfig()
    assert (cfg.save_checkpoints_secs, cfg.save_checkpoints_steps, cfg.save_summary_steps, cfg.keep_checkpoint_max,
            cfg.log_step_count_steps, cfg.is_chief, cfg.num_worker_replicas) == (600, None, 100, 5, 100, True, 1)
    cfg2 = E.RunConfig(save_checkpoints_steps=10)
    assert cfg2.save_checkpoints_secs is None
    with pytest.raises(ValueError):
        E.RunConfig(save_checkpoints_steps=10, save_checkpoints_secs=5)
    cfg3 = cfg.replace(save_checkpoints_steps=3, tf_random_seed=7)
    assert (cfg3.save_checkpoints_steps, cfg3.save_checkpoints_secs, cfg3.tf_random_seed) == (3, None, 7)


# -- numpy_input_fn ------------------------------------------------------------------------------------------

def _drain(input_fn):
    out = []
    with tf.Graph().as_default():
        t = input_fn()
        with tf.train.MonitoredSession() as sess:
            while not sess.should_stop():
                out.append(sess.run(t))
    return out


def test_numpy_input_fn_batches_epochs_and_order():
    x = {"a": np.arange(10), "b": np.arange(20).reshape(10, 2)}
    y = np.arange(10) * 10
    got = _drain(E.inputs.numpy_input_fn(x, y, batch_size=4, num_epochs=2, shuffle=False))
    assert [len(f["a"]) for f, _ in got] == [4, 4, 4, 4, 4]  # batches run across the epoch boundary
    np.testing.assert_array_equal(np.concatenate([f["a"] for f, _ in got]), np.tile(np.arange(10), 2))
    np.testing.assert_array_equal(np.concatenate([lab for _, lab in got]), np.tile(y, 2))
    assert got[0][0]["b"].shape == (4, 2)
    one = _drain(E.inputs.numpy_input_fn(x, y, batch_size=4, num_epochs=1, shuffle=False))
    assert [len(lab) for _, lab in one] == [4, 4, 2]
    # shuffled: every row once per epoch
    sh = _drain(E.inputs.numpy_input_fn(x, y, batch_size=3, num_epochs=2, shuffle=True))
    a = np.concatenate([f["a"] for f, _ in sh])
    assert sorted(a) == sorted(np.tile(np.arange(10), 2)) and list(a) != list(np.tile(np.arange(10), 2))
    np.testing.assert_array_equal(np.concatenate([lab for _, lab in sh]), a * 10)  # rows stay together
    # an array x gives a tensor; no y gives features only; a dict y gives a dict
    arr = _drain(E.inputs.numpy_input_fn(np.arange(5.0), batch_size=5, shuffle=False))
    np.testing.assert_array_equal(arr[0], np.arange(5.0))
    dy = _drain(E.inputs.numpy_input_fn(x, {"t": y}, batch_size=10, shuffle=False))
    np.testing.assert_array_equal(dy[0][1]["t"], y)


def test_numpy_input_fn_checks():
    with pytest.raises(ValueError, match="shuffle"):
        E.inputs.numpy_input_fn({"a": np.arange(3)})
    with pytest.raises(ValueError, match="mismatched"):
        E.inputs.numpy_input_fn({"a": np.arange(3)}, np.arange(4), shuffle=False)()
    with pytest.raises(ValueError, match="duplicate"):
        E.inputs.numpy_input_fn({"a": np.arange(3)}, {"a": np.arange(3)}, shuffle=False)()


class _Column:
    def __init__(self, values, index):
        self.values, self.index = np.asarray(values), index


class _Frame:
    """A stand-in for a pandas DataFrame (pandas is not a dependency of the tests)."""

    def __init__(self, data, index=None):
        self._data = dict(data)
        self.columns = list(self._data)
        self.index = np.arange(len(next(iter(self._data.values())))) if index is None else np.asarray(index)

    def __getitem__(self, c):
        return _Column(self._data[c], self.index)


def test_pandas_input_fn_on_a_dataframe_like_object():
    x = _Frame({"a": np.arange(6.0), "b": np.arange(6) * 2})
    y = _Column(np.arange(6) % 2, x.index)
    got = _drain(E.inputs.pandas_input_fn(x, y, batch_size=4, shuffle=False))
    np.testing.assert_array_equal(np.concatenate([f["b"] for f, _ in got]), np.arange(6) * 2)
    np.testing.assert_array_equal(np.concatenate([lab for _, lab in got]), np.arange(6) % 2)
    with pytest.raises(ValueError, match="mismatched"):
        E.inputs.pandas_input_fn(x, _Column(np.arange(6), np.arange(1, 7)), shuffle=False)
    with pytest.raises(ValueError, match="target"):
        E.inputs.pandas_input_fn(_Frame({"target": np.arange(3)}), _Column(np.arange(3), np.arange(3)),
                                 shuffle=False)


# -- train_and_evaluate and warm start --------------------------------------------------------------------

def test_train_and_evaluate_locally(tmp_path):
    est = E.Estimator(linear_model_fn, model_dir=str(tmp_path), params={"lr": 0.1},
                      config=E.RunConfig(save_checkpoints_steps=5))
    train_spec = E.TrainSpec(inp(num_epochs=None), max_steps=12)
    eval_spec = E.EvalSpec(inp(batch_size=64), steps=None, throttle_secs=0)
    result, exports = E.train_and_evaluate(est, train_spec, eval_spec)
    assert exports == [] and result["global_step"] == 12 and set(result) == {"mae", "loss", "global_step"}
    np.testing.assert_allclose(result["loss"], est.evaluate(inp(batch_size=64))["loss"], rtol=1e-6)
    with pytest.raises(ValueError):
        E.TrainSpec(inp(), max_steps=0)
    with pytest.raises(TypeError):
        E.train_and_evaluate(est, eval_spec, train_spec)


def test_warm_start_from_a_checkpoint(tmp_path):
    src = E.Estimator(linear_model_fn, model_dir=str(tmp_path / "src"), params={"lr": 0.1})
    src.train(inp(), steps=4)
    w = src.get_variable_value("w")
    dst = E.Estimator(linear_model_fn, model_dir=str(tmp_path / "dst"), params={"lr": 0.0},
                      warm_start_from=src.model_dir)
    dst.train(inp(), steps=1)
    np.testing.assert_array_equal(dst.get_variable_value("w"), w)
    assert dst.get_variable_value("global_step") == 1  # only the trainable variables are warm-started
    only_b = E.Estimator(linear_model_fn, model_dir=str(tmp_path / "b"), params={"lr": 0.0},
                         warm_start_from=E.WarmStartSettings(src.model_dir, vars_to_warm_start="b"))
    only_b.train(inp(), steps=1)
    assert not only_b.get_variable_value("w").any()
    np.testing.assert_array_equal(only_b.get_variable_value("b"), src.get_variable_value("b"))


# -- the canned estimators ----------------------------------------------------------------------------------

N = 120
XC = RNG.randn(N, 2).astype(np.float32)
CAT = np.array(["a", "b", "c"])[RNG.randint(0, 3, N)]
Y_BIN = (XC[:, 0] + XC[:, 1] + (CAT == "a") > 0.5).astype(np.int64)
Y_MULTI = np.digitize(XC[:, 0], [-0.5, 0.5]).astype(np.int64)
Y_REG = (2 * XC[:, 0] - XC[:, 1] + (CAT == "b")).astype(np.float32)
WEIGHT = (1.0 + (np.arange(N) % 3)).astype(np.float32)
FEATS = {"x": XC, "c": CAT, "w": WEIGHT}
NUM = tf.feature_column.numeric_column("x", shape=[2])
CATCOL = tf.feature_column.categorical_column_with_vocabulary_list("c", ["a", "b", "c"])
EMB = tf.feature_column.embedding_column(CATCOL, 2)

BINARY_METRICS = {"accuracy", "accuracy_baseline", "auc", "auc_precision_recall", "average_loss", "label/mean",
                  "loss", "precision", "prediction/mean", "recall", "global_step"}
MULTI_METRICS = {"accuracy", "average_loss", "loss", "global_step"}
REG_METRICS = {"average_loss", "label/mean", "loss", "prediction/mean", "global_step"}
BINARY_KEYS = {"logits", "logistic", "probabilities", "class_ids", "classes", "all_class_ids", "all_classes"}
MULTI_KEYS = BINARY_KEYS - {"logistic"}


def cin(y, epochs=1, shuffle=False, batch_size=N):
    return E.inputs.numpy_input_fn(FEATS, y, batch_size=batch_size, num_epochs=epochs, shuffle=shuffle)


def _linear_names(cols, opt_slots):
    """TF's names: the canned linear model's (one-part partitioned) variables' slots are under part_0."""
    out = {"global_step"}
    for c in cols + ["bias_weights"]:
        v = f"linear/linear_model/{c}/weights" if c != "bias_weights" else "linear/linear_model/bias_weights"
        out |= {v} | {f"{v}/{s}" for s in opt_slots}
    return out


def _dnn_names(n_hidden, emb=False, slot="t_0/Adagrad"):
    """TF's names: the canned DNN's slots are under t_0 (not in the combined model's DNN)."""
    out = set()
    for layer in [f"hiddenlayer_{i}" for i in range(n_hidden)] + ["logits"]:
        for p in ("kernel", "bias"):
            out |= {f"dnn/{layer}/{p}", f"dnn/{layer}/{p}/{slot}"}
    if emb:
        v = "dnn/input_from_feature_columns/input_layer/c_embedding/embedding_weights"
        out |= {v, f"{v}/{slot}"}
    return out | {"global_step"}


# seeded: an unseeded DNN's initialization now and then leaves 60 steps short of the 30% drop
SEEDED = E.RunConfig(tf_random_seed=3)

CASES = [
    ("linear-binary", lambda d: E.LinearClassifier([NUM, CATCOL], model_dir=d, config=SEEDED),
     Y_BIN, BINARY_METRICS, BINARY_KEYS,
     _linear_names(["c", "x"], ["part_0/Ftrl", "part_0/Ftrl_1"])),
    ("linear-multi", lambda d: E.LinearClassifier([NUM, CATCOL], model_dir=d, config=SEEDED, n_classes=3),
     Y_MULTI, MULTI_METRICS,
     MULTI_KEYS, _linear_names(["c", "x"], ["part_0/Ftrl", "part_0/Ftrl_1"])),
    ("linear-reg", lambda d: E.LinearRegressor([NUM, CATCOL], model_dir=d, config=SEEDED),
     Y_REG, REG_METRICS, {"predictions"},
     _linear_names(["c", "x"], ["part_0/Ftrl", "part_0/Ftrl_1"])),
    ("dnn-binary", lambda d: E.DNNClassifier([8, 4], [NUM, EMB], model_dir=d, config=SEEDED),
     Y_BIN, BINARY_METRICS, BINARY_KEYS,
     _dnn_names(2, emb=True)),
    ("dnn-multi", lambda d: E.DNNClassifier([8], [NUM], model_dir=d, config=SEEDED, n_classes=3, dropout=0.1), Y_MULTI,
     MULTI_METRICS, MULTI_KEYS, _dnn_names(1)),
    ("dnn-reg", lambda d: E.DNNRegressor([8], [NUM, EMB], model_dir=d, config=SEEDED),
     Y_REG, REG_METRICS, {"predictions"},
     _dnn_names(1, emb=True)),
    ("combined-binary", lambda d: E.DNNLinearCombinedClassifier(
        model_dir=d, config=SEEDED, linear_feature_columns=[CATCOL], dnn_feature_columns=[NUM], dnn_hidden_units=[4],
        linear_optimizer=tf.train.FtrlOptimizer(0.2), dnn_optimizer=tf.train.AdagradOptimizer(0.1)), Y_BIN,
     BINARY_METRICS, BINARY_KEYS, _dnn_names(1, slot="Adagrad") | _linear_names(["c"], ["Ftrl", "Ftrl_1"])),
    ("combined-multi", lambda d: E.DNNLinearCombinedClassifier(
        model_dir=d, config=SEEDED, linear_feature_columns=[NUM], dnn_feature_columns=[NUM], dnn_hidden_units=[4],
        n_classes=3,
        dnn_optimizer=tf.train.AdagradOptimizer(0.1), linear_optimizer=tf.train.FtrlOptimizer(0.2)), Y_MULTI,
     MULTI_METRICS, MULTI_KEYS, _dnn_names(1, slot="Adagrad") | _linear_names(["x"], ["Ftrl", "Ftrl_1"])),
    ("combined-reg", lambda d: E.DNNLinearCombinedRegressor(
        model_dir=d, config=SEEDED, linear_feature_columns=[NUM, CATCOL], dnn_feature_columns=[NUM],
        dnn_hidden_units=[4],
        dnn_optimizer=tf.train.AdagradOptimizer(0.1), linear_optimizer=tf.train.FtrlOptimizer(0.2)), Y_REG,
     REG_METRICS, {"predictions"}, _dnn_names(1, slot="Adagrad") | _linear_names(["c", "x"], ["Ftrl", "Ftrl_1"])),
]


@pytest.mark.parametrize("name,make,y,metric_keys,pred_keys,var_names", CASES, ids=[c[0] for c in CASES])
def test_canned_estimators_train_and_match_tf_names(tmp_path, name, make, y, metric_keys, pred_keys, var_names):
    est = make(str(tmp_path))
    before = est.evaluate(cin(y))
    assert set(before) == metric_keys and before["global_step"] == 0
    est.train(cin(y, epochs=None, shuffle=True, batch_size=30), steps=60)
    after = est.evaluate(cin(y))
    assert after["global_step"] == 60
    assert after["average_loss"] < 0.7 * before["average_loss"], (before, after)
    assert set(est.get_variable_names()) == var_names
    preds = list(est.predict(cin(None)))
    assert len(preds) == N and set(preds[0]) == pred_keys
    if "classes" in pred_keys:
        n = 3 if "multi" in name else 2
        assert preds[0]["class_ids"].shape == (1,) and preds[0]["probabilities"].shape == (n,)
        assert _s(preds[0]["classes"][0]) == str(preds[0]["class_ids"][0])
        assert list(preds[0]["all_class_ids"]) == list(range(n))
        acc = np.mean([p["class_ids"][0] for p in preds] == y)
        np.testing.assert_allclose(after["accuracy"], acc, rtol=1e-6)
    else:
        assert preds[0]["predictions"].shape == (1,)


def _s(v):
    """A string value as str (collflow's string tensors hold str, TensorFlow's bytes)."""
    return v.decode() if isinstance(v, bytes) else v


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def test_linear_classifier_metrics_by_hand_with_weights(tmp_path):
    est = E.LinearClassifier([NUM, CATCOL], model_dir=str(tmp_path), weight_column="w")
    est.train(cin(Y_BIN, batch_size=40), steps=3)
    wx = est.get_variable_value("linear/linear_model/x/weights")
    wc = est.get_variable_value("linear/linear_model/c/weights")
    bias = est.get_variable_value("linear/linear_model/bias_weights")
    logits = (XC @ wx + wc[np.searchsorted(["a", "b", "c"], CAT)] + bias)[:, 0]
    p = _sigmoid(logits)
    ce = np.maximum(logits, 0) - logits * Y_BIN + np.log1p(np.exp(-np.abs(logits)))
    res = est.evaluate(cin(Y_BIN, batch_size=40))
    wsum = WEIGHT.sum()
    batches = [slice(i, i + 40) for i in range(0, N, 40)]
    np.testing.assert_allclose(res["loss"], np.mean([np.sum(WEIGHT[s] * ce[s]) for s in batches]), rtol=1e-5)
    np.testing.assert_allclose(res["average_loss"], np.sum(WEIGHT * ce) / wsum, rtol=1e-5)
    cls = (logits > 0).astype(np.int64)
    np.testing.assert_allclose(res["accuracy"], np.sum(WEIGHT * (cls == Y_BIN)) / wsum, rtol=1e-5)
    np.testing.assert_allclose(res["prediction/mean"], np.sum(WEIGHT * p) / wsum, rtol=1e-5)
    lm = np.sum(WEIGHT * Y_BIN) / wsum
    np.testing.assert_allclose(res["label/mean"], lm, rtol=1e-5)
    np.testing.assert_allclose(res["accuracy_baseline"], max(lm, 1 - lm), rtol=1e-5)
    tp = np.sum(WEIGHT * (cls == 1) * (Y_BIN == 1))
    np.testing.assert_allclose(res["precision"], tp / np.sum(WEIGHT * (cls == 1)), rtol=1e-5)
    np.testing.assert_allclose(res["recall"], tp / np.sum(WEIGHT * (Y_BIN == 1)), rtol=1e-5)
    pos, neg = p[Y_BIN == 1], p[Y_BIN == 0]
    wpos, wneg = WEIGHT[Y_BIN == 1], WEIGHT[Y_BIN == 0]
    exact_auc = np.sum(wpos[:, None] * wneg[None, :] * ((pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] ==
                                                                                                 neg[None, :])))
    assert abs(res["auc"] - exact_auc / (wpos.sum() * wneg.sum())) < 0.02
    pred = next(est.predict(cin(None), predict_keys=["logits", "logistic", "probabilities"]))
    np.testing.assert_allclose(pred["logits"], logits[:1], rtol=1e-5)
    np.testing.assert_allclose(pred["probabilities"], [1 - p[0], p[0]], rtol=1e-5)


def test_regressor_loss_is_the_weighted_sum_by_hand(tmp_path):
    est = E.LinearRegressor([NUM], model_dir=str(tmp_path), weight_column=tf.feature_column.numeric_column("w"))
    est.train(cin(Y_REG), steps=2)
    pred = XC @ est.get_variable_value("linear/linear_model/x/weights") + \
        est.get_variable_value("linear/linear_model/bias_weights")
    se = (pred[:, 0] - Y_REG) ** 2
    res = est.evaluate(cin(Y_REG))
    np.testing.assert_allclose(res["loss"], np.sum(WEIGHT * se), rtol=1e-5)
    np.testing.assert_allclose(res["average_loss"], np.sum(WEIGHT * se) / WEIGHT.sum(), rtol=1e-5)
    np.testing.assert_allclose(res["label/mean"], np.sum(WEIGHT * Y_REG) / WEIGHT.sum(), rtol=1e-5)
    mean_est = E.LinearRegressor([NUM], model_dir=est.model_dir, weight_column="w",
                                 loss_reduction=tf.losses.Reduction.SUM_OVER_BATCH_SIZE)
    np.testing.assert_allclose(mean_est.evaluate(cin(Y_REG))["loss"], np.sum(WEIGHT * se) / N, rtol=1e-5)
    with pytest.raises(ValueError):
        E.LinearRegressor([NUM], loss_reduction=tf.losses.Reduction.NONE)


def test_label_vocabulary(tmp_path):
    labels = np.array(["no", "yes", "maybe"])[Y_MULTI]
    est = E.DNNClassifier([6], [NUM], model_dir=str(tmp_path), n_classes=3, label_vocabulary=["no", "yes", "maybe"],
                          optimizer=tf.train.AdagradOptimizer(0.2))
    est.train(cin(labels, epochs=None), steps=30)
    assert est.evaluate(cin(labels))["accuracy"] > 0.8
    preds = list(est.predict(cin(None)))
    assert [_s(p["classes"][0]) for p in preds[:5]] == [["no", "yes", "maybe"][p["class_ids"][0]]
                                                              for p in preds[:5]]
    assert [_s(c) for c in preds[0]["all_classes"]] == ["no", "yes", "maybe"]
    with pytest.raises(ValueError):
        E.LinearClassifier([NUM], n_classes=2, label_vocabulary=["a", "b", "c"])


def _value_after(make, key, feats=None, steps=3):
    import tempfile
    est = make(tempfile.mkdtemp())
    est.train(E.inputs.numpy_input_fn(feats or FEATS, Y_BIN, batch_size=40, shuffle=False), steps=steps)
    return est.get_variable_value(key)


def test_default_optimizers_are_tfs():
    many = [tf.feature_column.numeric_column(f"f{i}") for i in range(30)]
    feats = {f"f{i}": XC[:, i % 2] * (i + 1) / 30 for i in range(30)}

    def lin(opt):
        def make(d):
            return E.LinearClassifier(many, model_dir=d, **({} if opt is None else {"optimizer": opt}))
        return make
    key = "linear/linear_model/f3/weights"
    # TF1's linear model_fn: `optimizer or Ftrl(min(0.2, 1/sqrt(#columns)))` then a name at 0.2, so the
    # default 'Ftrl' trains at 0.2 and only a falsy optimizer gets the 1/sqrt(#columns) rule
    default = _value_after(lin(None), key, feats)
    rule = _value_after(lin(lambda: tf.train.FtrlOptimizer(1 / np.sqrt(30))), key, feats)  # min(0.2, 1/sqrt(30))
    capped = _value_after(lin(lambda: tf.train.FtrlOptimizer(0.2)), key, feats)
    np.testing.assert_allclose(default, capped, rtol=1e-6)
    assert not np.allclose(default, rule)
    none = _value_after(lambda d: E.LinearClassifier(many, model_dir=d, optimizer=None), key, feats)
    np.testing.assert_allclose(none, rule, rtol=1e-6)
    cfg = E.RunConfig(tf_random_seed=3)
    key = "dnn/logits/kernel"
    dnn_default = _value_after(lambda d: E.DNNClassifier([4], [NUM], model_dir=d, config=cfg), key)
    dnn_05 = _value_after(lambda d: E.DNNClassifier([4], [NUM], model_dir=d, config=cfg,
                                                    optimizer=lambda: tf.train.AdagradOptimizer(0.05)), key)
    np.testing.assert_allclose(dnn_default, dnn_05, rtol=1e-6)
    # the combined model: Adagrad at 0.001 for the DNN, Ftrl at min(0.005, 1/sqrt(#columns)) for the linear part
    def comb(**kw):
        return lambda d: E.DNNLinearCombinedClassifier(model_dir=d, linear_feature_columns=[CATCOL],
                                                       dnn_feature_columns=[NUM], dnn_hidden_units=[3], config=cfg,
                                                       **kw)
    for key in ("dnn/logits/kernel", "linear/linear_model/c/weights"):
        a = _value_after(comb(), key)
        b = _value_after(comb(dnn_optimizer=lambda: tf.train.AdagradOptimizer(0.001),
                              linear_optimizer=lambda: tf.train.FtrlOptimizer(0.005)), key)
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_canned_argument_checks():
    with pytest.raises(ValueError):
        E.LinearClassifier([NUM], n_classes=1)
    with pytest.raises(ValueError):
        E.DNNLinearCombinedClassifier()
    with pytest.raises(ValueError):
        E.LinearRegressor([])


# -- differential: the same programs in TensorFlow's estimator (skipped where it is not installed) ----------

def _tf_estimator():
    """TensorFlow (v1 API) and its estimator package's modules, or skip."""
    tfv1 = pytest.importorskip("tensorflow.compat.v1")
    try:
        from tensorflow_estimator.python.estimator import estimator as est_mod
        from tensorflow_estimator.python.estimator.canned import dnn, dnn_linear_combined, linear
        from tensorflow_estimator.python.estimator.inputs import numpy_io
        from tensorflow_estimator.python.estimator import model_fn as mfn
    except Exception as e:  # noqa: BLE001 - not installed, or not loadable with this TensorFlow
        pytest.skip(f"tensorflow_estimator is not usable here: {e}")
    import types
    ns = types.SimpleNamespace(
        Estimator=est_mod.Estimator, WarmStartSettings=est_mod.WarmStartSettings, EstimatorSpec=mfn.EstimatorSpec,
        ModeKeys=mfn.ModeKeys, numpy_input_fn=numpy_io.numpy_input_fn, LinearClassifier=linear.LinearClassifier,
        LinearRegressor=linear.LinearRegressor, DNNClassifier=dnn.DNNClassifier, DNNRegressor=dnn.DNNRegressor,
        DNNLinearCombinedClassifier=dnn_linear_combined.DNNLinearCombinedClassifier)
    return tfv1, ns


def _close(a, b, keys=None, rtol=2e-4, atol=2e-5):
    keys = keys or sorted(set(a) | set(b))
    assert set(a) == set(b), (sorted(a), sorted(b))
    for k in keys:
        np.testing.assert_allclose(np.asarray(a[k], np.float64), np.asarray(b[k], np.float64), rtol=rtol, atol=atol,
                                   err_msg=k)


def _both(tfv1, build, tf_ns, d1, d2):
    """build(api, estimator ns, input factory, model_dir) on both sides; returns (collflow's, TF's)."""
    cf_inputs = E.inputs.numpy_input_fn
    return build(tf, E, cf_inputs, d1), build(tfv1, tf_ns, tf_ns.numpy_input_fn, d2)


def test_differential_custom_model_fn(tmp_path):
    tfv1, tns = _tf_estimator()

    def run(api, est_ns, numpy_input_fn, d):
        def model_fn(features, labels, mode):
            w = api.get_variable("w", [3, 1], initializer=api.constant_initializer([[0.1], [0.2], [-0.3]]))
            b = api.get_variable("b", [1], initializer=api.constant_initializer(0.05))
            pred = api.matmul(features["x"], w) + b
            loss = api.reduce_mean(api.square(pred - labels))
            opt = api.train.MomentumOptimizer(0.05, 0.9)
            return est_ns.EstimatorSpec(mode, loss=loss,
                                        train_op=opt.minimize(loss, global_step=api.train.get_global_step()),
                                        eval_metric_ops={"mae": api.metrics.mean_absolute_error(labels, pred),
                                                         "rmse": api.metrics.root_mean_squared_error(labels, pred)})
        est = est_ns.Estimator(model_fn, model_dir=d)
        rec = []

        class Hook(api.train.SessionRunHook):
            def before_run(self, ctx):
                return api.train.SessionRunArgs(ctx.original_args.fetches)

            def after_run(self, ctx, values):
                rec.append(float(values.results[1]))
        est.train(numpy_input_fn({"x": X}, Y, batch_size=10, num_epochs=2, shuffle=False), hooks=[Hook()])
        res = est.evaluate(numpy_input_fn({"x": X}, Y, batch_size=16, shuffle=False))
        return rec, res, est.get_variable_value("w")
    (cl, cr, cw), (tl, tr, tw) = _both(tfv1, run, tns, str(tmp_path / "cf"), str(tmp_path / "tf"))
    np.testing.assert_allclose(cl, tl, rtol=1e-4)
    _close(cr, tr)
    np.testing.assert_allclose(cw, tw, rtol=1e-4)


def test_differential_linear_estimators(tmp_path):
    tfv1, tns = _tf_estimator()
    feats = {"x": XC, "c": CAT, "w": WEIGHT}
    for k, (cls, y, kw) in enumerate([("LinearClassifier", Y_BIN, {"weight_column": "w"}),
                                      ("LinearClassifier", Y_MULTI, {"n_classes": 3}),
                                      ("LinearClassifier", np.array(["lo", "mid", "hi"])[Y_MULTI],
                                       {"n_classes": 3, "label_vocabulary": ["lo", "mid", "hi"]}),
                                      ("LinearRegressor", Y_REG, {"weight_column": "w"})]):
        def run(api, est_ns, numpy_input_fn, d):
            cols = [api.feature_column.numeric_column("x", shape=[2]),
                    api.feature_column.categorical_column_with_vocabulary_list("c", ["a", "b", "c"])]
            est = getattr(est_ns, cls)(cols, model_dir=d, **kw)
            est.train(numpy_input_fn(feats, y, batch_size=40, num_epochs=None, shuffle=False), steps=6)
            res = est.evaluate(numpy_input_fn(feats, y, batch_size=40, shuffle=False))
            pred = list(est.predict(numpy_input_fn(feats, batch_size=40, shuffle=False)))
            vals = {n: est.get_variable_value(n) for n in est.get_variable_names()}
            return res, pred, vals
        (cr, cp, cv), (tr, tp, tv) = _both(tfv1, run, tns, str(tmp_path / f"cf{k}"), str(tmp_path / f"tf{k}"))
        _close(cr, tr)
        _close(cv, tv)
        assert len(cp) == len(tp) == N and set(cp[0]) == set(tp[0])
        for key in cp[0]:
            a, b = np.stack([p[key] for p in cp]), np.stack([p[key] for p in tp])
            if key in ("classes", "all_classes"):
                assert np.vectorize(_s)(a).tolist() == np.vectorize(_s)(b).tolist()
            else:
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=key)


def test_differential_dnn_estimators_from_the_same_start(tmp_path):
    tfv1, tns = _tf_estimator()
    feats = {"x": XC, "c": CAT}
    for k, (cls, y, kw) in enumerate([("DNNClassifier", Y_BIN, {"hidden_units": [5, 3]}),
                                      ("DNNClassifier", Y_MULTI, {"hidden_units": [4], "n_classes": 3}),
                                      ("DNNRegressor", Y_REG, {"hidden_units": [4]}),
                                      ("DNNLinearCombinedClassifier", Y_BIN, {"dnn_hidden_units": [4]})]):
        combined = cls.startswith("DNNLinear")

        def make(api, est_ns, d, warm=None):
            num = api.feature_column.numeric_column("x", shape=[2])
            emb = api.feature_column.embedding_column(
                api.feature_column.categorical_column_with_vocabulary_list("c", ["a", "b", "c"]), 2)
            if combined:
                return getattr(est_ns, cls)(model_dir=d, linear_feature_columns=[num], dnn_feature_columns=[num, emb],
                                            warm_start_from=warm, **kw)
            return getattr(est_ns, cls)(feature_columns=[num, emb], model_dir=d, warm_start_from=warm, **kw)
        # collflow's random start, written into a TensorFlow checkpoint for TF's warm start
        cf_est = make(tf, E, str(tmp_path / f"cf{k}"))
        cf_est.train(E.inputs.numpy_input_fn(feats, y, batch_size=40, shuffle=False), max_steps=1)
        start = {n: cf_est.get_variable_value(n) for n in cf_est.get_variable_names()
                 if not n.startswith("global_step") and not n.split("/")[-1].startswith(("Adagrad", "Ftrl"))}
        with tfv1.Graph().as_default():
            vs = [tfv1.Variable(v, name=n) for n, v in start.items()]
            with tfv1.Session() as s:
                s.run(tfv1.global_variables_initializer())
                ws = tfv1.train.Saver(vs).save(s, str(tmp_path / f"start{k}" / "ckpt"))
        # collflow from the same start: a fresh model warm-started from the first one's checkpoint
        cf2 = make(tf, E, str(tmp_path / f"cf2{k}"), warm=E.WarmStartSettings(cf_est.model_dir))
        tf_est = make(tfv1, tns, str(tmp_path / f"tf{k}"), warm=tns.WarmStartSettings(ws))
        res = []
        for est, nif in ((cf2, E.inputs.numpy_input_fn), (tf_est, tns.numpy_input_fn)):
            est.train(nif(feats, y, batch_size=40, num_epochs=None, shuffle=False), steps=5)
            res.append((est.evaluate(nif(feats, y, batch_size=40, shuffle=False)),
                        {n: est.get_variable_value(n) for n in est.get_variable_names()}))
        _close(res[0][0], res[1][0], rtol=5e-4, atol=5e-5)
        _close(res[0][1], res[1][1], rtol=5e-4, atol=5e-5)


def _tags(directory):
    tags = set()
    for f in glob.glob(os.path.join(directory, "events.out.tfevents.*")):
        for ev in tf.train.summary_iterator(f):
            if ev.HasField("summary") if hasattr(ev, "HasField") else getattr(ev, "summary", None):
                tags |= {v.tag for v in ev.summary.value}
    return tags


def test_summaries_in_model_dir_and_eval_dir(tmp_path):
    est = E.DNNRegressor([3], [NUM], model_dir=str(tmp_path), config=E.RunConfig(save_summary_steps=1))
    est.train(cin(Y_REG, batch_size=40), steps=2)
    est.evaluate(cin(Y_REG))
    # TF's tags (its summaries run inside the "dnn" name scope too)
    assert {"loss", "average_loss", "dnn/dnn/hiddenlayer_0/fraction_of_zero_values",
            "dnn/dnn/hiddenlayer_0/activation", "dnn/dnn/logits/fraction_of_zero_values",
            "dnn/dnn/logits/activation"} == _tags(str(tmp_path))
    assert {"loss", "average_loss", "label/mean", "prediction/mean"} == _tags(str(tmp_path / "eval"))
    comb = E.DNNLinearCombinedClassifier(model_dir=str(tmp_path / "c"), linear_feature_columns=[NUM],
                                         dnn_feature_columns=[NUM], dnn_hidden_units=[3],
                                         config=E.RunConfig(save_summary_steps=1))
    comb.train(cin(Y_BIN, batch_size=40), steps=1)
    assert {"linear/bias", "linear/fraction_of_zero_weights", "linear/linear/fraction_of_zero_values",
            "linear/linear/activation", "dnn/dnn/logits/activation", "loss", "average_loss"} <= \
        _tags(str(tmp_path / "c"))
    lin = E.LinearClassifier([NUM, CATCOL], model_dir=str(tmp_path / "l"), config=E.RunConfig(save_summary_steps=1))
    lin.train(cin(Y_BIN, batch_size=40), steps=1)
    assert _tags(str(tmp_path / "l")) == {"linear/bias", "linear/fraction_of_zero_weights", "loss", "average_loss"}
    assert E.SessionRunHook is tf.train.SessionRunHook and E.StopAtStepHook is tf.train.StopAtStepHook
