"""Estimator.export_saved_model and tf.estimator.export (TF1): the SavedModel of a trained
estimator serves the same predictions as Estimator.predict, under TF1's signature keys."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf

pytestmark = pytest.mark.timeout(300)


def _examples(xs):
    return [tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=list(map(float, row))))})).SerializeToString()
        for row in xs]


def _data(seed=0, n=64):
    r = np.random.RandomState(seed)
    x = r.rand(n, 3).astype(np.float32)
    y = (x.sum(1) > 1.5).astype(np.int64)
    return x, y


def test_canned_classifier_exports_tf1_signatures_that_serve_its_predictions(tmp_path):
    x, y = _data()
    cols = [tf.feature_column.numeric_column("x", shape=[3])]
    est = tf.estimator.DNNClassifier([8], cols, n_classes=2, model_dir=str(tmp_path / "model"),
                                     config=tf.estimator.RunConfig(tf_random_seed=1))
    train_fn = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=16, num_epochs=3, shuffle=False)
    est.train(train_fn)
    pred_fn = tf.estimator.inputs.numpy_input_fn({"x": x[:5]}, shuffle=False)
    want = list(est.predict(pred_fn))
    spec = tf.feature_column.make_parse_example_spec(cols)
    path = est.export_saved_model(str(tmp_path / "export"),
                                  tf.estimator.export.build_parsing_serving_input_receiver_fn(spec))
    assert isinstance(path, bytes) and os.path.dirname(path.decode()) == str(tmp_path / "export")
    assert os.path.basename(path.decode()).isdigit()
    with tf.Graph().as_default(), tf.Session() as s:
        meta = tf.saved_model.loader.load(s, ["serve"], path.decode())
        assert sorted(meta.signature_def) == ["classification", "predict", "regression", "serving_default"]
        cls = meta.signature_def["serving_default"]
        assert cls.method_name == "tensorflow/serving/classify" and sorted(cls.outputs) == ["classes", "scores"]
        feed = {cls.inputs["inputs"].name: _examples(x[:5])}
        scores, classes = s.run([cls.outputs["scores"].name, cls.outputs["classes"].name], feed)
        np.testing.assert_allclose(scores, [w["probabilities"] for w in want], rtol=1e-6)
        assert classes.tolist() == [[b"0", b"1"]] * 5
        reg = meta.signature_def["regression"]
        np.testing.assert_allclose(s.run(reg.outputs["outputs"].name, {reg.inputs["inputs"].name: _examples(x[:5])}),
                                   [w["logistic"] for w in want], rtol=1e-6)
        pred = meta.signature_def["predict"]
        assert sorted(pred.outputs) == sorted(want[0])
        ids = s.run(pred.outputs["class_ids"].name, {pred.inputs["examples"].name: _examples(x[:5])})
        assert ids.ravel().tolist() == [int(w["class_ids"][0]) for w in want]
    # a second export gets its own directory
    path2 = est.export_savedmodel(str(tmp_path / "export"),
                                  tf.estimator.export.build_parsing_serving_input_receiver_fn(spec))
    assert path2 != path and sorted(os.listdir(tmp_path / "export")) == sorted(
        [os.path.basename(path.decode()), os.path.basename(path2.decode())])


def test_custom_model_fn_raw_receiver_and_export_outputs(tmp_path):
    x, y = _data(1)

    def model_fn(features, labels, mode):
        logits = tf.layers.dense(features["x"], 2, name="out")
        preds = {"probs": tf.nn.softmax(logits), "label": tf.argmax(logits, 1)}
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions=preds, export_outputs={
                "serving_default": tf.estimator.export.PredictOutput({"probs": preds["probs"]}),
                "scores_only": tf.estimator.export.ClassificationOutput(scores=preds["probs"])})
        loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)

    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "m"))
    with pytest.raises(ValueError, match="Couldn't find trained model"):
        est.export_saved_model(str(tmp_path / "e"), lambda: None)
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=16, num_epochs=2, shuffle=False))
    want = np.array([p["probs"] for p in est.predict(tf.estimator.inputs.numpy_input_fn({"x": x[:4]}, shuffle=False))])
    with tf.Graph().as_default():
        raw = tf.estimator.export.build_raw_serving_input_receiver_fn({"x": tf.placeholder(tf.float32, [None, 3])})
    path = est.export_saved_model(str(tmp_path / "e"), raw).decode()
    with tf.Graph().as_default(), tf.Session() as s:
        meta = tf.saved_model.loader.load(s, [tf.saved_model.tag_constants.SERVING], path)
        # the classify output needs one string input: left out for the raw float receiver, as in TF1
        assert sorted(meta.signature_def) == ["serving_default"]
        sig = meta.signature_def["serving_default"]
        np.testing.assert_allclose(s.run(sig.outputs["probs"].name, {sig.inputs["x"].name: x[:4]}), want, rtol=1e-6)
    with pytest.raises(TypeError, match="ExportOutput"):
        with tf.Graph().as_default():
            tf.estimator.EstimatorSpec("infer", predictions=tf.constant(1.0), export_outputs={"a": tf.constant(1.0)})


def _linear_estimator(model_dir, **cfg):
    cols = [tf.feature_column.numeric_column("x", shape=[3])]
    est = tf.estimator.LinearClassifier(cols, model_dir=model_dir,
                                        config=tf.estimator.RunConfig(tf_random_seed=1, **cfg))
    return est, tf.estimator.export.build_parsing_serving_input_receiver_fn(
        tf.feature_column.make_parse_example_spec(cols))


def test_train_and_evaluate_runs_the_exporters(tmp_path):
    x, y = _data(2)
    est, receiver = _linear_estimator(str(tmp_path / "m"), save_checkpoints_steps=4)
    train_fn = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=8, num_epochs=None, shuffle=False)
    eval_fn = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=64, num_epochs=1, shuffle=False)
    latest = tf.estimator.LatestExporter("latest", receiver, exports_to_keep=2)
    final = tf.estimator.FinalExporter("final", receiver)
    seen = []

    def better_accuracy(best_eval_result, current_eval_result):
        seen.append((best_eval_result["global_step"], current_eval_result["global_step"]))
        return current_eval_result["accuracy"] > best_eval_result["accuracy"]
    best = tf.estimator.BestExporter("best", receiver, compare_fn=better_accuracy)
    with pytest.raises(ValueError, match="unique names"):
        tf.estimator.EvalSpec(eval_fn, exporters=[latest, tf.estimator.LatestExporter("latest", receiver)])
    result, exports = tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(train_fn, max_steps=16),
        tf.estimator.EvalSpec(eval_fn, steps=None, exporters=[latest, final, best], throttle_secs=0))
    assert result["global_step"] == 16 and len(exports) == 3
    export_dir = tmp_path / "m" / "export"
    assert len(os.listdir(export_dir / "latest")) == 2  # exports_to_keep
    assert len(os.listdir(export_dir / "final")) == 1 and exports[1] is not None
    # the first evaluation is exported; later ones only when compare_fn says better
    assert 1 <= len(os.listdir(export_dir / "best")) <= 4 and seen[0][0] < seen[0][1]
    with tf.Graph().as_default(), tf.Session() as s:
        meta = tf.saved_model.loader.load(s, ["serve"], exports[0].decode())
        sig = meta.signature_def["predict"]
        probs = s.run(sig.outputs["probabilities"].name, {sig.inputs["examples"].name: _examples(x[:3])})
    want = [p["probabilities"] for p in est.predict(tf.estimator.inputs.numpy_input_fn({"x": x[:3]},
                                                                                         shuffle=False))]
    np.testing.assert_allclose(probs, want, rtol=1e-6)
    # a resumed job's BestExporter starts from the earlier evaluations' event files: a worse
    # result is not exported, a better one is
    resumed = tf.estimator.BestExporter("best2", receiver)
    ckpt = est.latest_checkpoint()
    assert resumed.export(est, str(export_dir / "best2"), ckpt, {"loss": 1e9, "global_step": 99}, False) is None
    assert resumed.export(est, str(export_dir / "best2"), ckpt, {"loss": 0.0, "global_step": 99}, False) is not None
