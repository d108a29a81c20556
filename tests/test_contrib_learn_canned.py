"""tf.contrib.learn's LinearClassifier/Regressor and DNNLinearCombined models (contrib and core
feature columns, variable names, default Ftrl learning rate rule checked by one exact step),
Experiment, learn_runner, ValidationMonitor and the io input functions."""
import tempfile

import numpy as np
import pytest

import collflow.compat.v1 as tf

learn = tf.contrib.learn
layers = tf.contrib.layers


def _words(n, seed=0):
    rng = np.random.RandomState(seed)
    vocab_pos, vocab_neg = ["good", "great", "fine"], ["bad", "awful", "poor"]
    y = (np.arange(n) % 2).astype(np.int64)
    words = np.array([[rng.choice(vocab_pos if t else vocab_neg)] for t in y])
    return words, y


def test_linear_classifier_sparse_hashed_contrib_columns(tmp_path):
    words, y = _words(60)
    col = layers.sparse_column_with_hash_bucket("word", hash_bucket_size=50)
    clf = learn.LinearClassifier(feature_columns=[col], model_dir=str(tmp_path))

    def input_fn():
        return {"word": tf.SparseTensor(indices=[[i, 0] for i in range(len(words))], values=words[:, 0],
                                        dense_shape=[len(words), 1])}, tf.constant(y)
    clf.fit(input_fn=input_fn, steps=30)
    names = clf.get_variable_names()
    assert "linear/word/weights" in names and "linear/bias_weight" in names
    assert clf.get_variable_value("linear/word/weights").shape == (50, 1)
    res = clf.evaluate(input_fn=input_fn, steps=1)
    for key in ("loss", "accuracy", "auc", "auc_precision_recall", "labels/prediction_mean",
                "labels/actual_label_mean", "accuracy/baseline_label_mean", "accuracy/threshold_0.500000_mean",
                "precision/positive_threshold_0.500000_mean", "recall/positive_threshold_0.500000_mean",
                "global_step"):
        assert key in res, key
    assert res["accuracy"] == 1.0 and res["auc"] > 0.99
    assert res["accuracy/baseline_label_mean"] == pytest.approx(0.5)
    # predict reads its input until it ends: x (dense strings, made sparse by the column) is read once
    probs = np.array(list(clf.predict_proba(x={"word": words}, batch_size=25)))
    assert probs.shape == (60, 2) and np.array_equal(np.argmax(probs, 1), y)
    assert np.array_equal(np.array(list(clf.predict(x={"word": words}))), y)


def test_linear_classifier_core_hashed_columns(tmp_path):
    words, y = _words(40, seed=1)
    col = tf.feature_column.categorical_column_with_hash_bucket("word", hash_bucket_size=20)
    clf = learn.LinearClassifier(feature_columns=[col], model_dir=str(tmp_path))
    clf.fit(x={"word": words}, y=y, steps=20)
    assert "linear/linear_model/word/weights" in clf.get_variable_names()
    assert clf.evaluate(x={"word": words}, y=y)["accuracy"] == 1.0


def test_linear_regressor_one_ftrl_step_exact(tmp_path):
    # 30 columns: TF's default Ftrl learning rate min(0.2, 1/sqrt(30)) = 0.1826 (not 0.2)
    rng = np.random.RandomState(4)
    x = rng.randn(30, 30).astype(np.float32)
    y = (x @ rng.randn(30).astype(np.float32) + 2.0).astype(np.float32)
    names = [f"c{i:02d}" for i in range(30)]
    cols = [layers.real_valued_column(n) for n in names]
    feats = {n: x[:, i:i + 1] for i, n in enumerate(names)}
    reg = learn.LinearRegressor(feature_columns=cols, model_dir=str(tmp_path))
    reg.fit(x=feats, y=y, steps=1)
    assert sorted(v for v in reg.get_variable_names() if "Ftrl" not in v) == sorted(
        ["global_step", "linear/bias_weight"] + [f"linear/{n}/weight" for n in names])
    # by hand: zero weights, mean squared error, Ftrl at 1/sqrt(30)
    with tf.Graph().as_default():
        w = tf.Variable(tf.zeros([30, 1]))
        b = tf.Variable(tf.zeros([1]))
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y[:, None]))
        step = tf.train.FtrlOptimizer(1 / np.sqrt(30)).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            want_w, want_b = sess.run([w, b])
    got_w = np.concatenate([reg.get_variable_value(f"linear/{n}/weight") for n in names])
    np.testing.assert_allclose(got_w, want_w, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(reg.get_variable_value("linear/bias_weight"), want_b, rtol=1e-5, atol=1e-7)
    assert np.abs(got_w).max() > 0


def test_dnn_linear_combined(tmp_path):
    words, y = _words(60, seed=2)
    rng = np.random.RandomState(5)
    num = (y[:, None] + 0.3 * rng.randn(60, 1)).astype(np.float32)
    word = layers.sparse_column_with_hash_bucket("word", hash_bucket_size=30)
    real = layers.real_valued_column("num")

    def input_fn():
        return {"word": tf.SparseTensor([[i, 0] for i in range(60)], words[:, 0], [60, 1]),
                "num": tf.constant(num)}, tf.constant(y)
    clf = learn.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path / "c"), linear_feature_columns=[word],
        dnn_feature_columns=[layers.embedding_column(word, dimension=3), real], dnn_hidden_units=[4],
        config=learn.RunConfig(tf_random_seed=1))
    clf.fit(input_fn=input_fn, steps=2)
    loss0 = clf.evaluate(input_fn=input_fn, steps=1)["loss"]
    clf.fit(input_fn=input_fn, steps=60)
    names = clf.get_variable_names()
    for want in ("linear/word/weights", "linear/bias_weight", "dnn/hiddenlayer_0/weights", "dnn/logits/biases",
                 "dnn/learning_rate", "linear/learning_rate"):
        assert want in names, want
    # TF 1.x's default (fix_global_step_increment_bug=False): both parts increment the step
    res = clf.evaluate(input_fn=input_fn, steps=1)
    assert res["global_step"] >= 62 and res["global_step"] % 2 == 0 and res["accuracy"] > 0.8 and res["loss"] < 0.7 * loss0
    assert clf.get_variable_value("global_step") % 2 == 0  # 2 increments per step
    assert clf.get_variable_value("linear/learning_rate") == pytest.approx(min(0.2, 1.0))
    fixed = learn.DNNLinearCombinedRegressor(
        model_dir=str(tmp_path / "r"), linear_feature_columns=[real], dnn_feature_columns=[real],
        dnn_hidden_units=[3], fix_global_step_increment_bug=True)
    fixed.fit(input_fn=input_fn, steps=6)
    assert fixed.evaluate(input_fn=input_fn, steps=1)["global_step"] == 6
    assert fixed.predict_scores(x={"num": num}, as_iterable=False).shape == (60,)
    with pytest.raises(ValueError, match="Either linear_feature_columns"):
        learn.DNNLinearCombinedClassifier()


def _experiment_fn(output_dir):
    rng = np.random.RandomState(6)
    x = rng.randn(50, 2).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    est = learn.LinearClassifier(feature_columns=learn.infer_real_valued_columns_from_input(x),
                                 model_dir=output_dir)
    return learn.Experiment(est, train_input_fn=learn.io.numpy_input_fn({"": x}, y, batch_size=10, num_epochs=None),
                            eval_input_fn=learn.io.numpy_input_fn({"": x}, y, batch_size=50, shuffle=False),
                            train_steps=40, eval_steps=1)


def test_experiment_and_learn_runner(tmp_path):
    res, exports = learn.learn_runner.run(_experiment_fn, output_dir=str(tmp_path / "a"))
    assert exports == [] and res["global_step"] == 40 and res["accuracy"] > 0.85
    ex = _experiment_fn(str(tmp_path / "b"))
    res, _ = ex.continuous_train_and_eval()
    assert res["global_step"] == 40
    with pytest.raises(ValueError, match="non-existent task"):
        learn.learn_runner.run(_experiment_fn, output_dir=str(tmp_path / "c"), schedule="nope")
    with pytest.raises(ValueError, match="output_dir or run_config"):
        learn.learn_runner.run(_experiment_fn)
    with pytest.raises(NotImplementedError):
        ex.run_std_server()


def test_validation_monitor_and_infer_columns(tmp_path):
    rng = np.random.RandomState(7)
    x = rng.randn(40, 3).astype(np.float32)
    y = (x.sum(1) > 0).astype(np.int64)
    cols = learn.infer_real_valued_columns_from_input_fn(learn.io.numpy_input_fn({"x": x}, y, batch_size=4))
    assert len(cols) == 1 and cols[0].name == "x" and cols[0].dimension == 3
    mon = learn.monitors.ValidationMonitor(x={"x": x}, y=y, every_n_steps=5, early_stopping_rounds=1000)
    clf = learn.DNNClassifier(hidden_units=[4], feature_columns=cols, model_dir=str(tmp_path),
                              config=learn.RunConfig(save_checkpoints_steps=5, tf_random_seed=2))
    clf.fit(x={"x": x}, y=y, steps=20, batch_size=8, monitors=[mon])
    assert mon.latest_step is not None and mon.latest_step >= 10 and "loss" in mon.latest_results
    with pytest.raises(AttributeError, match="not provided"):
        learn.monitors.GraphDump  # noqa: B018


def test_weight_column_loss(tmp_path):
    rng = np.random.RandomState(9)
    x = rng.randn(24, 2).astype(np.float32)
    y = (x[:, 0] - x[:, 1]).astype(np.float32)
    w = np.linspace(0.5, 2.0, 24).astype(np.float32)
    feats = {"x": x, "w": w}
    reg = learn.LinearRegressor(feature_columns=[layers.real_valued_column("x", dimension=2)],
                                weight_column_name="w", model_dir=str(tmp_path))
    reg.fit(x=feats, y=y, steps=3)
    pred = reg.predict_scores(x=feats, as_iterable=False)
    res = reg.evaluate(x=feats, y=y)
    # contrib's eval loss: the weighted average sum(w * err^2) / sum(w)
    assert res["loss"] == pytest.approx(np.sum(w * (pred - y) ** 2) / np.sum(w), rel=1e-4)


def test_dnn_with_core_columns(tmp_path):
    rng = np.random.RandomState(10)
    x = rng.randn(20, 2).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    clf = learn.DNNClassifier(hidden_units=[3], feature_columns=[tf.feature_column.numeric_column("x", shape=[2])],
                              model_dir=str(tmp_path))
    clf.fit(x={"x": x}, y=y, steps=3)
    assert {"dnn/hiddenlayer_0/weights", "dnn/logits/biases"} <= set(clf.get_variable_names())
    assert clf.predict_proba(x={"x": x}, as_iterable=False).shape == (20, 2)
    out = clf.predict(x={"x": x}, outputs=["logits", "logistic"], as_iterable=False)
    assert set(out) == {"logits", "logistic"} and out["logits"].shape == (20, 1)


@pytest.mark.timeout(60)
def test_predict_not_iterable_is_one_run_of_an_endless_input_fn():
    """TF 1.15: predict(as_iterable=False) runs the predictions once; an input_fn of constants
    (the boston and census tutorials' style) never ends, and gives its one batch."""
    rng = np.random.RandomState(3)
    x = rng.randn(12, 3).astype(np.float32)
    y = (x @ np.array([1., -2., .5], np.float32)).astype(np.float32)

    def input_fn():
        return {k: tf.constant(x[:, i]) for i, k in enumerate("abc")}, tf.constant(y)
    with tf.Graph().as_default():
        reg = tf.contrib.learn.DNNRegressor(feature_columns=[tf.contrib.layers.real_valued_column(k) for k in "abc"],
                                            hidden_units=[4], model_dir=tempfile.mkdtemp())
        reg.fit(input_fn=input_fn, steps=3)
        assert reg.predict(input_fn=input_fn, as_iterable=False).shape == (12,)
        assert reg.predict_scores(input_fn=input_fn, as_iterable=False).shape == (12,)
