"""tf.contrib.predictor: from_saved_model (default and chosen signatures, explicit tensor names,
TF's argument checks) and from_estimator, each giving what a Session over the same model gives."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("graph")


def _export(tmp_path):
    export_dir = str(tmp_path / "model")
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
        y = tf.matmul(x, w, name="y")
        z = tf.reduce_sum(y, axis=1, name="z")
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            b = tf.saved_model.builder.SavedModelBuilder(export_dir)
            sig = tf.saved_model.signature_def_utils.predict_signature_def({"inputs": x}, {"y": y})
            sig2 = tf.saved_model.signature_def_utils.predict_signature_def({"x": x}, {"z": z})
            b.add_meta_graph_and_variables(s, [tf.saved_model.tag_constants.SERVING],
                                           signature_def_map={"serving_default": sig, "sum": sig2})
            b.save()
    return export_dir, np.arange(6, dtype=np.float32).reshape(3, 2)


def test_from_saved_model(tmp_path):
    export_dir, w = _export(tmp_path)
    xv = np.random.RandomState(0).rand(4, 3).astype(np.float32)
    p = tf.contrib.predictor.from_saved_model(export_dir)
    out = p({"inputs": xv})
    assert set(out) == {"y"}
    np.testing.assert_allclose(out["y"], xv @ w, rtol=1e-6)
    assert sorted(p.feed_tensors) == ["inputs"] and p.fetch_tensors["y"].name == "y:0"
    assert p.graph is p.session.graph
    p2 = tf.contrib.predictor.from_saved_model(export_dir, signature_def_key="sum", tags="serve")
    np.testing.assert_allclose(p2({"x": xv})["z"], (xv @ w).sum(1), rtol=1e-6)
    p3 = tf.contrib.predictor.from_saved_model(export_dir, input_names={"a": "x:0"},
                                               output_names={"b": "z:0", "c": "y:0"})
    got = p3({"a": xv})
    np.testing.assert_allclose(got["c"], xv @ w, rtol=1e-6)
    with pytest.raises(ValueError, match=r"Unknown input key\(s\) \['x'\]: this predictor takes \['inputs'\]"):
        p({"x": xv})


def test_from_saved_model_argument_errors(tmp_path):
    export_dir, _ = _export(tmp_path)
    fs = tf.contrib.predictor.from_saved_model
    with pytest.raises(ValueError, match='Got signature_def_key "nope". Available signatures are'):
        fs(export_dir, signature_def_key="nope")
    with pytest.raises(ValueError, match="both be specified or both be unspecified"):
        fs(export_dir, input_names={"a": "x:0"})
    with pytest.raises(ValueError, match="Cannot specify more than one"):
        fs(export_dir, signature_def_key="sum", input_names={"a": "x:0"}, output_names={"b": "z:0"})
    with pytest.raises(RuntimeError, match="could not be found in SavedModel"):
        fs(export_dir, tags=["train"])


def test_from_estimator(tmp_path):
    r = np.random.RandomState(1)
    xs = r.rand(64, 2).astype(np.float32)
    ys = (xs @ np.array([[2.0], [-1.0]], np.float32) + 0.5)

    def model_fn(features, labels, mode):
        pred = tf.layers.dense(features["x"], 1, name="d")
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions={"y": pred})
        loss = tf.losses.mean_squared_error(labels, pred)
        step = tf.train.GradientDescentOptimizer(0.5).minimize(loss, tf.train.get_or_create_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=step)

    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "est"))
    est.train(tf.estimator.inputs.numpy_input_fn({"x": xs}, ys, batch_size=16, num_epochs=None, shuffle=True),
              steps=50)

    def receiver():
        x = tf.placeholder(tf.float32, [None, 2], name="x_in")
        return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})

    p = tf.contrib.predictor.from_estimator(est, receiver)
    want = np.array([p_["y"] for p_ in est.predict(tf.estimator.inputs.numpy_input_fn({"x": xs[:5]}, shuffle=False))])
    np.testing.assert_allclose(p({"x": xs[:5]})["y"], want, rtol=1e-5)
    with pytest.raises(KeyError, match="output_key 'nope'"):
        tf.contrib.predictor.from_estimator(est, receiver, output_key="nope")


def test_predictor_none_input_and_closed_session_on_error(tmp_path):
    export_dir = str(tmp_path / "m")
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        scale = tf.placeholder_with_default(2.0, [], name="scale")
        y = tf.identity(x * scale, name="y")
        with tf.Session() as s:
            tf.saved_model.simple_save(s, export_dir, {"x": x, "scale": scale}, {"y": y})
    p = tf.contrib.predictor.from_saved_model(export_dir)
    np.testing.assert_allclose(p({"x": [[1.0, 2.0]], "scale": None})["y"], [[2.0, 4.0]])
    np.testing.assert_allclose(p({"x": [[1.0, 2.0]], "scale": 3.0})["y"], [[3.0, 6.0]])
    g = tf.Graph()
    with pytest.raises(ValueError, match="Available signatures"):
        tf.contrib.predictor.from_saved_model(export_dir, signature_def_key="other", graph=g)
