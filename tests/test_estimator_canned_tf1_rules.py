"""TF 1.15's canned-estimator rules, checked by hand (no TensorFlow): the learning rate a named
optimizer gets, the falsy-optimizer default of the linear model, the head's name scope inside
'linear'/'dnn' (not in the combined model), all_class_ids' dtype, a numeric weight column's
normalizer_fn, and graph.pbtxt in the checkpoint directory.  The differential counterpart is
tests/tf1/test_vs_tensorflow_estimator_fuzz.py."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf

E = tf.estimator
RNG = np.random.RandomState(7)
N = 12
X = RNG.randn(N, 2).astype(np.float32)
Y = (X[:, 0] - 0.5 * X[:, 1] + 0.25).astype(np.float32)
W = (0.5 + np.arange(N) % 3).astype(np.float32)
NUM = tf.feature_column.numeric_column("x", shape=[2])


def _inp(y=Y, **kw):
    return E.inputs.numpy_input_fn({"x": X, "w": W}, y, batch_size=N, shuffle=False, **kw)


def _sum_se_grads(w, b, weights=None):
    """d/d(w, b) of sum(weights * (x w + b - y)^2) (Reduction.SUM, TF1's canned default)."""
    weights = np.ones(N, np.float32) if weights is None else weights
    r = weights * 2 * (X @ w + b - Y)
    return X.T @ r, np.array([r.sum()])


def _ftrl_first_step(g, lr):
    """Ftrl from zero (lr_power -0.5, initial accumulator 0.1, no l1/l2): -g lr / sqrt(0.1 + g^2)."""
    return -g * lr / np.sqrt(0.1 + g * g)


@pytest.mark.parametrize("make,lr", [
    # TF1: get_optimizer_instance(name, learning_rate=<the model's>): Linear 0.2, Baseline 0.3,
    # the combined model's linear part min(0.005, 1/sqrt(#linear columns))
    (lambda d: E.LinearRegressor([NUM], model_dir=d, optimizer="SGD"), 0.2),
    (lambda d: E.DNNLinearCombinedRegressor(model_dir=d, linear_feature_columns=[NUM], linear_optimizer="SGD"),
     0.005),
])
def test_a_named_optimizer_gets_the_models_learning_rate(tmp_path, make, lr):
    est = make(str(tmp_path))
    est.train(_inp(num_epochs=None), steps=1)
    gw, gb = _sum_se_grads(np.zeros(2, np.float32), 0.0)
    np.testing.assert_allclose(est.get_variable_value("linear/linear_model/x/weights")[:, 0], -lr * gw, rtol=1e-5)
    np.testing.assert_allclose(est.get_variable_value("linear/linear_model/bias_weights"), -lr * gb, rtol=1e-5)


def test_baseline_named_sgd_at_0_3(tmp_path):
    est = E.BaselineRegressor(model_dir=str(tmp_path), optimizer="SGD")
    est.train(_inp(num_epochs=None), steps=1)
    np.testing.assert_allclose(est.get_variable_value("baseline/bias"), [0.3 * 2 * Y.sum()], rtol=1e-5)


def test_linear_default_ftrl_is_0_2_and_only_a_falsy_optimizer_gets_the_sqrt_rule(tmp_path):
    # 9 columns: 1/sqrt(9) = 1/3 > 0.2; 36 columns: 1/6 < 0.2 changes the falsy default only
    many = [tf.feature_column.numeric_column(f"f{i}") for i in range(36)]
    feats = {f"f{i}": X[:, i % 2] * (1 + i % 5) for i in range(36)}
    xs = np.stack([feats[f"f{i}"] for i in range(36)], 1)
    g = xs.T @ (2 * (0 - Y))  # the first step's gradient from zero weights
    for opt, lr in (("Ftrl", 0.2), (None, 1 / 6.0)):
        d = str(tmp_path / str(opt))
        kw = {} if opt == "Ftrl" else {"optimizer": opt}
        est = E.LinearRegressor(many, model_dir=d, **kw)
        est.train(E.inputs.numpy_input_fn(feats, Y, batch_size=N, shuffle=False), steps=1)
        got = np.array([est.get_variable_value(f"linear/linear_model/f{i}/weights")[0, 0] for i in range(36)])
        np.testing.assert_allclose(got, _ftrl_first_step(g, lr), rtol=1e-4)


def test_a_numeric_weight_column_applies_its_normalizer_fn(tmp_path):
    # TF1 reads a numeric weight column's dense tensor: normalizer_fn(raw feature), then float
    col = tf.feature_column.numeric_column("w", normalizer_fn=lambda t: 2.0 * t + 1.0)
    est = E.LinearRegressor([NUM], model_dir=str(tmp_path), weight_column=col, optimizer="SGD")
    est.train(_inp(num_epochs=None), steps=1)
    wn = 2.0 * W + 1.0
    gw, gb = _sum_se_grads(np.zeros(2, np.float32), 0.0, wn)
    np.testing.assert_allclose(est.get_variable_value("linear/linear_model/bias_weights"), -0.2 * gb, rtol=1e-5)
    w1 = est.get_variable_value("linear/linear_model/x/weights")[:, 0]
    b1 = est.get_variable_value("linear/linear_model/bias_weights")
    se = (X @ w1 + b1 - Y) ** 2
    res = est.evaluate(_inp(num_epochs=1))
    np.testing.assert_allclose(res["loss"], np.sum(wn * se), rtol=1e-5)
    np.testing.assert_allclose(res["average_loss"], np.sum(wn * se) / wn.sum(), rtol=1e-5)


def _graph_names(model_dir):
    with open(os.path.join(model_dir, "graph.pbtxt")) as f:
        text = f.read()
    return {line.split('"')[1] for line in text.splitlines() if line.strip().startswith("name:")}


def test_head_scopes_adam_powers_and_graph_pbtxt(tmp_path):
    yb = (Y > 0).astype(np.int64)
    lin = E.LinearClassifier([NUM], model_dir=str(tmp_path / "l"), optimizer="Adam")
    dnn = E.DNNClassifier([3], [NUM], model_dir=str(tmp_path / "d"), optimizer="Adam")
    comb = E.DNNLinearCombinedClassifier(model_dir=str(tmp_path / "c"), linear_feature_columns=[NUM],
                                         dnn_feature_columns=[NUM], dnn_hidden_units=[3], dnn_optimizer="Adam")
    for est, scope in ((lin, "linear/head"), (dnn, "dnn/head"), (comb, "head")):
        est.train(_inp(yb, num_epochs=None), steps=1)
        names = set(est.get_variable_names())
        assert {f"{scope}/beta1_power", f"{scope}/beta2_power"} <= names, sorted(names)
        # TF1's CheckpointSaverHook writes the graph next to the checkpoints
        ops = _graph_names(est.model_dir)
        assert {f"{scope}/predictions/logistic", f"{scope}/predictions/probabilities"} <= ops
    # the summaries stay at the root (TF1 opens name_scope('') for them)
    assert "linear/head/loss" not in _graph_names(lin.model_dir)


def test_all_class_ids_are_int32_class_ids_int64(tmp_path):
    est = E.LinearClassifier([NUM], model_dir=str(tmp_path), n_classes=3, label_vocabulary=["a", "b", "c"])
    labels = np.array(["a", "b", "c"])[np.arange(N) % 3]
    est.train(_inp(labels, num_epochs=None), steps=1)
    p = next(est.predict(E.inputs.numpy_input_fn({"x": X}, batch_size=N, shuffle=False)))
    assert p["all_class_ids"].dtype == np.int32 and p["all_class_ids"].tolist() == [0, 1, 2]
    assert p["class_ids"].dtype == np.int64
    assert list(p["all_classes"]) == [b"a", b"b", b"c"]  # bytes, as TF's


def test_monitored_training_session_writes_graph_pbtxt(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        step = tf.train.get_or_create_global_step()
        train = tf.group(tf.assign_add(v, 1.0), tf.assign_add(step, 1))
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path)) as s:
            s.run(train)
    assert "v" in _graph_names(str(tmp_path))


def test_binary_labels_are_floats_in_0_1(tmp_path):
    # TF1's binary head: labels cast to float (soft labels train as given) and range-checked at run time
    soft = np.array([0.0, 1.0, 0.5, 0.25] * 3, np.float32)
    est = E.LinearClassifier([NUM], model_dir=str(tmp_path / "soft"), optimizer="SGD")
    est.train(_inp(soft, num_epochs=None), steps=1)
    # d/dz sum(sigmoid_ce(z, y)) = sigmoid(z) - y, at z = 0: 0.5 - y
    r = 0.5 - soft
    np.testing.assert_allclose(est.get_variable_value("linear/linear_model/bias_weights"), [-0.2 * r.sum()],
                               rtol=1e-5)
    w1 = est.get_variable_value("linear/linear_model/x/weights")[:, 0]
    np.testing.assert_allclose(w1, -0.2 * X.T @ r, rtol=1e-5)
    z = X @ w1 + est.get_variable_value("linear/linear_model/bias_weights")
    ce = np.maximum(z, 0) - z * soft + np.log1p(np.exp(-np.abs(z)))
    res = est.evaluate(_inp(soft, num_epochs=1))
    np.testing.assert_allclose(res["loss"], ce.sum(), rtol=1e-5)
    np.testing.assert_allclose(res["label/mean"], soft.mean(), rtol=1e-5)
    # accuracy compares in the labels' dtype: a 0.5 or 0.25 label never equals a class id
    np.testing.assert_allclose(res["accuracy"], np.mean((z > 0).astype(np.float32) == soft), rtol=1e-5)
    bad = E.LinearClassifier([NUM], model_dir=str(tmp_path / "bad"))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Labels must be in range \[0, 1\]"):
        bad.train(_inp(np.arange(N) % 3, num_epochs=None), steps=1)


def test_slot_names_by_name_or_instance(tmp_path):
    # TF1's checkpoints: Linear slots `<variable>/part_0/<optimizer>`, DNN `<variable>/t_0/<optimizer>`
    # whether the optimizer comes by name or as an instance; the combined model's plain `<variable>/<optimizer>`
    makes = {
        "lin_inst": lambda d: E.LinearRegressor([NUM], model_dir=d, optimizer=tf.train.AdagradOptimizer(0.1)),
        "lin_name": lambda d: E.LinearRegressor([NUM], model_dir=d),
        "dnn_inst": lambda d: E.DNNRegressor([2], [NUM], model_dir=d, optimizer=lambda: tf.train.AdamOptimizer(0.1)),
        "comb": lambda d: E.DNNLinearCombinedRegressor(model_dir=d, linear_feature_columns=[NUM],
                                                       dnn_feature_columns=[NUM], dnn_hidden_units=[2]),
    }
    expect = {
        "lin_inst": {"linear/linear_model/x/weights/part_0/Adagrad", "linear/linear_model/bias_weights/part_0/Adagrad"},
        "lin_name": {"linear/linear_model/x/weights/part_0/Ftrl", "linear/linear_model/x/weights/part_0/Ftrl_1"},
        "dnn_inst": {"dnn/hiddenlayer_0/kernel/t_0/Adam", "dnn/logits/bias/t_0/Adam_1", "dnn/head/beta1_power"},
        "comb": {"linear/linear_model/x/weights/Ftrl", "linear/linear_model/x/weights/Ftrl_1",
                 "dnn/hiddenlayer_0/kernel/Adagrad", "dnn/logits/bias/Adagrad"},
    }
    for key, make in makes.items():
        est = make(str(tmp_path / key))
        est.train(_inp(num_epochs=None), steps=1)
        names = set(est.get_variable_names())
        assert expect[key] <= names, (key, sorted(names))
        assert not any(n.endswith(("/Adagrad", "/Ftrl", "/Adam")) and "/part_0/" not in n and "/t_0/" not in n
                       for n in names) or key == "comb", (key, sorted(names))
    # the update ops keep the optimizer's own name scope: linear/head/Ftrl/...
    assert any(n.startswith("linear/head/Ftrl/") for n in _graph_names(str(tmp_path / "lin_name")))


def test_slot_name_infix_is_scoped():
    from collflow.train.optimizer import slot_name_infix
    with tf.Graph().as_default():
        v = tf.Variable([1.0], name="v")
        with slot_name_infix("part_0"):
            opt = tf.train.MomentumOptimizer(0.1, 0.9)
            opt.minimize(tf.reduce_sum(v))
        u = tf.Variable([1.0], name="u")
        tf.train.AdagradOptimizer(0.1).minimize(tf.reduce_sum(u))
        assert {x.op.name for x in tf.global_variables()} == {"v", "v/part_0/Momentum", "u", "u/Adagrad"}


def test_multi_class_labels_are_range_checked_with_tf1s_messages(tmp_path):
    # TF1's multi-class head: _assert_range(label_ids, n_classes); an out-of-vocabulary label is id -1
    est = E.LinearClassifier([NUM], model_dir=str(tmp_path / "ids"), n_classes=3)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Labels must <= n_classes - 1"):
        est.train(_inp(np.arange(N) % 4, num_epochs=None), steps=1)
    voc = E.LinearClassifier([NUM], model_dir=str(tmp_path / "voc"), n_classes=3, label_vocabulary=["a", "b", "c"])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Labels must >= 0"):
        voc.train(_inp(np.array(["a", "b", "c", "d"])[np.arange(N) % 4], num_epochs=None), steps=1)
