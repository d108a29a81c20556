"""tf.saved_model (TF1): simple_save / SavedModelBuilder write a directory that loader.load
serves from without the model's code; errors are clear and nothing half-written appears."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import DataLossError, NotFoundError

pytestmark = pytest.mark.timeout(120)


def _model():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    h = tf.layers.dense(x, 5, activation=tf.nn.tanh)
    y = tf.identity(tf.layers.dense(h, 2), name="y")
    return x, y


def test_simple_save_then_load_serves_the_signature(tmp_path):
    X = np.random.RandomState(0).rand(4, 3).astype(np.float32)
    export = str(tmp_path / "export" / "1")
    with tf.Graph().as_default(), tf.Session() as s:
        x, y = _model()
        s.run(tf.global_variables_initializer())
        want = s.run(y, {x: X})
        tf.saved_model.simple_save(s, export, inputs={"x": x}, outputs={"y": y})
    assert tf.saved_model.loader.maybe_saved_model_directory(export)
    assert sorted(os.listdir(export)) == ["saved_model.cfmodel", "variables"]
    assert not [f for f in os.listdir(tmp_path / "export") if f != "1"]  # no staging left
    with tf.Graph().as_default() as g, tf.Session() as s:
        meta = tf.saved_model.loader.load(s, [tf.saved_model.tag_constants.SERVING], export)
        sig = meta.signature_def[tf.saved_model.signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
        assert sig.method_name == tf.saved_model.signature_constants.PREDICT_METHOD_NAME
        assert sig.inputs["x"].dtype == tf.float32 and sig.inputs["x"].tensor_shape.as_list() == [None, 3]
        xt = tf.saved_model.utils.get_tensor_from_tensor_info(sig.inputs["x"])
        yt = tf.saved_model.utils.get_tensor_from_tensor_info(sig.outputs["y"], graph=g)
        np.testing.assert_array_equal(s.run(yt, {xt: X}), want)


def test_builder_with_two_tag_sets_main_op_and_import_scope(tmp_path):
    X = np.random.RandomState(1).rand(2, 3).astype(np.float32)
    export = str(tmp_path / "m")
    with tf.Graph().as_default(), tf.Session() as s:
        x, y = _model()
        counter = tf.Variable(0, name="counter", trainable=False, collections=[tf.GraphKeys.LOCAL_VARIABLES])
        tf.identity(counter.assign_add(1), name="served")
        s.run(tf.global_variables_initializer())
        want = s.run(y, {x: X})
        b = tf.saved_model.builder.SavedModelBuilder(export)
        assert not os.path.exists(export)  # nothing before save()
        sig = tf.saved_model.signature_def_utils.build_signature_def(
            inputs={"in": tf.saved_model.utils.build_tensor_info(x)},
            outputs={"out": tf.saved_model.utils.build_tensor_info(y)},
            method_name=tf.saved_model.signature_constants.PREDICT_METHOD_NAME)
        assert tf.saved_model.signature_def_utils.is_valid_signature(sig)
        b.add_meta_graph_and_variables(s, ["serve"], signature_def_map={"pred": sig},
                                       main_op=tf.saved_model.main_op.main_op())
        b.add_meta_graph(["train", "gpu"])
        with pytest.raises(AssertionError, match="already"):
            b.add_meta_graph(["serve"])
        assert b.save() == os.path.abspath(export)
    with tf.Graph().as_default(), tf.Session() as s:
        meta = tf.saved_model.loader.load(s, ["serve"], export, import_scope="net")
        assert meta.meta_info_def["tags"] == ["serve"]
        np.testing.assert_array_equal(s.run("net/y:0", {"net/x:0": X}), want)
        assert s.run("net/served:0") == 1  # the main op initialized the local counter
    with tf.Graph().as_default(), tf.Session() as s:
        tf.saved_model.loader.load(s, ["gpu", "train"], export)
        np.testing.assert_array_equal(s.run("y:0", {"x:0": X}), want)
    with tf.Graph().as_default(), tf.Session() as s:
        with pytest.raises(RuntimeError, match=r"could not be found in SavedModel.*\['serve'\]"):
            tf.saved_model.loader.load(s, ["eval"], export)
    with pytest.raises(AssertionError, match="isn't empty"):
        tf.saved_model.builder.SavedModelBuilder(export)


def test_signature_helpers_and_their_errors():
    with tf.Graph().as_default():
        ex = tf.placeholder(tf.string, [None], name="ex")
        scores = tf.placeholder(tf.float32, [None, 3], name="scores")
        c = tf.saved_model.signature_def_utils.classification_signature_def(ex, None, scores)
        assert sorted(c.outputs) == ["scores"] and c.method_name == "tensorflow/serving/classify"
        r = tf.saved_model.signature_def_utils.regression_signature_def(ex, scores)
        assert r.outputs["outputs"].name == "scores:0" and r.inputs["inputs"].dtype == tf.string
        with pytest.raises(ValueError):
            tf.saved_model.signature_def_utils.classification_signature_def(ex, None, None)
        with pytest.raises(ValueError):
            tf.saved_model.signature_def_utils.predict_signature_def({}, {"s": scores})
        assert not tf.saved_model.signature_def_utils.is_valid_signature(
            tf.saved_model.signature_def_utils.build_signature_def({}, {}, ""))


def test_damaged_missing_and_foreign_saved_models(tmp_path):
    export = str(tmp_path / "ok")
    with tf.Graph().as_default(), tf.Session() as s:
        x, y = _model()
        s.run(tf.global_variables_initializer())
        tf.saved_model.simple_save(s, export, {"x": x}, {"y": y})
    path = os.path.join(export, "saved_model.cfmodel")
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:-3])
    with tf.Graph().as_default() as g, tf.Session() as s:
        with pytest.raises(DataLossError, match="damaged"):
            tf.saved_model.loader.load(s, ["serve"], export)
        assert g.get_operations() == []
    tf_dir = tmp_path / "tf"
    tf_dir.mkdir()
    (tf_dir / "saved_model.pb").write_bytes(b"\x08\x01")
    with tf.Graph().as_default(), tf.Session() as s:
        with pytest.raises(NotFoundError, match="TensorFlow's saved_model.pb"):
            tf.saved_model.loader.load(s, ["serve"], str(tf_dir))
        with pytest.raises(NotFoundError, match="does not exist"):
            tf.saved_model.loader.load(s, ["serve"], str(tmp_path / "none"))
    assert not tf.saved_model.contains_saved_model(str(tf_dir))
