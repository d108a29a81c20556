"""Differential tests against TensorFlow for TF1's freeze-and-import workflow: the same model
trained, frozen with graph_util.convert_variables_to_constants, serialized, parsed back into
a GraphDef and imported with input_map / return_elements in both libraries gives the same
predictions; extract_sub_graph / remove_training_nodes keep the same nodes; make_tensor_proto
writes the same bytes and make_ndarray reads the same arrays.  (collflow's GraphDef carries
its attributes in its own encoding: each library imports its own GraphDefs.)"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

R = np.random.default_rng(0)
W1 = R.normal(size=(4, 8)).astype(np.float32)
W2 = R.normal(size=(8, 3)).astype(np.float32)
XV = R.normal(size=(6, 4)).astype(np.float32)


def _freeze(tf):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        w1 = tf.Variable(W1, name="w1")
        b1 = tf.Variable(np.zeros(8, np.float32), name="b1")
        w2 = tf.Variable(W2, name="w2")
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
        probs = tf.nn.softmax(tf.matmul(h, w2, name="logits"), name="probs")
        loss = tf.reduce_mean(tf.square(probs - 0.3))
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(5):
                s.run(train, {x: XV})
            ref = s.run(probs, {x: XV})
            frozen = tf.graph_util.convert_variables_to_constants(s, s.graph_def, ["probs"])
    return ref, frozen.SerializeToString(), frozen


def _import(tf, data, batch):
    gd = tf.GraphDef()
    gd.ParseFromString(data)
    with tf.Graph().as_default():
        inp = tf.placeholder(tf.float32, [None, 4], name="inp")
        y, op = tf.import_graph_def(gd, input_map={"x:0": inp}, return_elements=["probs:0", "probs"], name="net")
        assert op.name == "net/probs" and y.name == "net/probs:0"
        with tf.Session() as s:
            return s.run(y, {inp: batch})


def test_freeze_import_same_predictions():
    ref_tf, data_tf, frozen_tf = _freeze(tft)
    ref_cf, data_cf, frozen_cf = _freeze(cft)
    np.testing.assert_allclose(ref_cf, ref_tf, rtol=1e-5, atol=1e-6)
    # the frozen graphs: variables as Const, reads as Identity, nothing of training left
    kinds_tf = {n.name: n.op for n in frozen_tf.node}
    kinds_cf = {n.name: n.op for n in frozen_cf.node}
    for name in ("w1", "b1", "w2"):
        assert kinds_tf[name] == kinds_cf[name] == "Const"
    # TF reads a resource variable where it is used (".../ReadVariableOp"), collflow at
    # "w/read": both become Identity ops, and nothing of training is left
    for kinds in (kinds_tf, kinds_cf):
        assert not any("Gradient" in k or v in ("VarHandleOp", "VarHandle", "AssignVariableOp", "AssignVariable")
                       for k, v in kinds.items())
        assert sorted(v for v in kinds.values() if v != "Identity") == sorted(
            ["Placeholder", "Const", "Const", "Const", "MatMul", "MatMul", "AddV2" if kinds is kinds_tf else "Add",
             "Relu", "Softmax"])
    batch = R.normal(size=(3, 4)).astype(np.float32)
    out_tf = _import(tft, data_tf, batch)
    out_cf = _import(cft, data_cf, batch)
    np.testing.assert_allclose(out_cf, out_tf, rtol=1e-5, atol=1e-6)
    # TensorFlow's protobuf parser reads collflow's bytes (same wire format; attrs differ)
    parsed = tft.GraphDef()
    parsed.ParseFromString(data_cf)
    assert [n.name for n in parsed.node] == [n.name for n in frozen_cf.node]


def _structure(tf):
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [2], name="a")
        b = tf.identity(a, name="b")
        c = tf.check_numerics(b, "bad", name="c")
        d = tf.multiply(c, c, name="d")
        u = tf.add(a, a, name="unused")
        with tf.control_dependencies([u]):
            e = tf.identity(d, name="e")
        s = tf.stop_gradient(e, name="s")
        tf.identity(s, name="f")
    return g.as_graph_def()


def test_extract_sub_graph_and_remove_training_nodes_keep_the_same_nodes():
    out = {}
    for lib in (tft, cft):
        gd = _structure(lib)
        sub = lib.graph_util.extract_sub_graph(gd, ["f"])
        trimmed = lib.graph_util.remove_training_nodes(sub, protected_nodes=["f"])
        out[lib] = ([n.name for n in sub.node],
                    {n.name: sorted(n.input) for n in trimmed.node},
                    [n.name for n in lib.graph_util.remove_training_nodes(sub).node])
    assert out[cft] == out[tft]


def test_tensor_shape_from_node_def_name_and_must_run_on_cpu():
    res = {}
    for lib in (tft, cft):
        with lib.Graph().as_default() as g:
            x = lib.placeholder(lib.float32, [None, 3], name="x")
            lib.matmul(x, lib.ones([3, 2]), name="mm")
            i = lib.constant(3, name="i")
            f = lib.constant(3.0, name="f")
            c = lib.cast(i, lib.float32, name="c")
        res[lib] = (lib.graph_util.tensor_shape_from_node_def_name(g, "mm").as_list(),
                    [lib.graph_util.must_run_on_cpu(o.op) for o in (i, f, c)])
    assert res[cft] == res[tft]


CASES = [dict(values=1.0), dict(values=[1, 2, 3]), dict(values=[[1.5, 2], [3, 4]]), dict(values=1.0, shape=[2, 3]),
         dict(values=[1, 2], shape=[3]), dict(values=np.arange(6, dtype=np.int64).reshape(2, 3)),
         dict(values=[True, False]), dict(values=["a", b"bc"]), dict(values=np.float16([1, 2.5])),
         dict(values=[1 + 2j, 3j], dtype="complex64"), dict(values=[2 ** 40, 1]), dict(values=3, dtype="float32"),
         dict(values=np.array(5.0)), dict(values=[1, 2], dtype="int64", shape=[2, 2]),
         dict(values=np.arange(4, dtype=np.uint8)), dict(values=[-3, 4], dtype="int16"),
         dict(values=7, shape=[1, 1], allow_broadcast=True), dict(values=[], shape=[0, 2])]


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_make_tensor_proto_bytes_and_make_ndarray(case):
    a = cft.make_tensor_proto(**case)
    b = tft.make_tensor_proto(**case)
    assert a.SerializeToString() == b.SerializeToString()
    na, nb = cft.make_ndarray(a), tft.make_ndarray(b)
    assert na.dtype == nb.dtype and na.shape == nb.shape
    np.testing.assert_array_equal(na, nb)
    # each reads the other's bytes
    other = cft.TensorProto.FromString(b.SerializeToString())
    np.testing.assert_array_equal(cft.make_ndarray(other), nb)


@pytest.mark.parametrize("case", [dict(values=[1.5], dtype="int32"), dict(values=[1, 2, 3], shape=[2]),
                                  dict(values=[1, 2], shape=[1, 2, 1], verify_shape=True),
                                  dict(values=[[1], [2, 3]]), dict(values=None), dict(values=["a"], dtype="float32"),
                                  dict(values=[1, 2], shape=[3], allow_broadcast=True),
                                  dict(values=1, shape=[2], verify_shape=True, allow_broadcast=True)])
def test_make_tensor_proto_errors(case):
    errs = []
    for lib in (tft, cft):
        with pytest.raises((TypeError, ValueError)) as e:
            lib.make_tensor_proto(**case)
        errs.append(e.type)
    assert errs[0] is errs[1]


def test_import_names_same_as_tensorflow():
    names = {}
    for lib in (tft, cft):
        with lib.Graph().as_default() as g:
            lib.constant(1.0, name="a")
            lib.identity(lib.constant(2.0, name="b"), name="c")
        gd = g.as_graph_def()
        with lib.Graph().as_default() as g2:
            lib.import_graph_def(gd, name="")
            r1 = lib.import_graph_def(gd, name="", return_elements=["c:0"])
            with lib.name_scope("outer"):
                r2 = lib.import_graph_def(gd, return_elements=["c:0", "b"])
            r3 = lib.import_graph_def(gd, return_elements=["c:0"])
            r4 = lib.import_graph_def(gd, return_elements=["c:0"])
            names[lib] = ([o.name for o in g2.get_operations()], [t.name for t in r1 + r2 + r3 + r4])
    assert names[cft] == names[tft]
