"""TF1's freeze-and-import workflow in collflow, by hand (no TensorFlow): as_graph_def with
attributes, tf.graph_util (convert_variables_to_constants, extract_sub_graph,
remove_training_nodes, tensor_shape_from_node_def_name, must_run_on_cpu), write_graph and
GraphDef.ParseFromString, tf.import_graph_def (input_map, return_elements, name scopes,
errors), and tf.make_tensor_proto / tf.make_ndarray."""
import numpy as np
import pytest

import collflow.compat.v1 as tf


def _mlp(seed=0):
    r = np.random.default_rng(seed)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        w1 = tf.Variable(r.normal(size=(4, 8)).astype(np.float32), name="w1")
        b1 = tf.Variable(np.zeros(8, np.float32), name="b1")
        w2 = tf.Variable(r.normal(size=(8, 3)).astype(np.float32), name="w2")
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
        logits = tf.matmul(h, w2, name="logits")
        out = tf.nn.softmax(logits, name="probs")
        loss = tf.reduce_mean(tf.square(out))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    return g, x, out, train


def _trained_frozen():
    g, x, out, train = _mlp()
    xv = np.random.default_rng(1).normal(size=(5, 4)).astype(np.float32)
    with tf.Session(graph=g) as s:
        s.run(tf.variables_initializer(g.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)))
        for _ in range(3):
            s.run(train, {x: xv})
        ref = s.run(out, {x: xv})
        frozen = tf.graph_util.convert_variables_to_constants(s, s.graph_def, ["probs"])
    return frozen, xv, ref


def test_freeze_write_read_import_same_predictions(tmp_path):
    frozen, xv, ref = _trained_frozen()
    ops = {n.name: n.op for n in frozen.node}
    assert ops["w1"] == "Const" and ops["w1/read"] == "Identity" and "GradientDescent" not in ops
    assert not any(o in ("VarHandle", "AssignVariable") for o in ops.values())
    path = tf.io.write_graph(frozen, str(tmp_path), "frozen.pb", as_text=False)
    gd = tf.GraphDef()
    with open(path, "rb") as f:
        assert gd.ParseFromString(f.read()) > 0
    assert gd.SerializeToString() == frozen.SerializeToString()
    with tf.Graph().as_default() as g2:
        tf.import_graph_def(gd)
        x = g2.get_tensor_by_name("import/x:0")
        y = g2.get_tensor_by_name("import/probs:0")
        with tf.Session() as s:
            np.testing.assert_allclose(s.run(y, {x: xv}), ref, rtol=1e-6)
    # the frozen graph has no variables left to initialize
    assert g2.get_collection(tf.GraphKeys.GLOBAL_VARIABLES) == []


def test_input_map_and_return_elements():
    frozen, xv, ref = _trained_frozen()
    with tf.Graph().as_default() as g2:
        data = tf.constant(xv)
        y, op, logits = tf.import_graph_def(frozen, input_map={"x:0": data},
                                            return_elements=["probs:0", "probs", "logits:0"], name="net")
        assert isinstance(op, tf.Operation) and op.name == "net/probs" and y.name == "net/probs:0"
        assert logits.shape.as_list() == [5, 3]  # the mapped input's static shape flows through
        with tf.Session() as s:
            np.testing.assert_allclose(s.run(y), ref, rtol=1e-6)
        # "x" means "x:0"; the same GraphDef imported twice gets a second scope
        y2, = tf.import_graph_def(frozen, input_map={"x": data}, return_elements=["probs:0"], name="net")
        assert y2.name == "net_1/probs:0"
        y3, = tf.import_graph_def(frozen, input_map={"x": data}, return_elements=["probs:0"], name="")
        assert y3.name == "probs:0"
        with tf.Session() as s:
            a, b = s.run([y2, y3])
        np.testing.assert_allclose(a, ref, rtol=1e-6)
        np.testing.assert_allclose(b, ref, rtol=1e-6)


def test_import_errors():
    frozen, xv, _ = _trained_frozen()
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="not found in graph_def"):
            tf.import_graph_def(frozen, input_map={"nope:0": tf.constant(1.0)})
        with pytest.raises(ValueError, match="Requested return_element 'nope:0' not found"):
            tf.import_graph_def(frozen, return_elements=["nope:0"])
        with pytest.raises(TypeError, match="graph_def must be a GraphDef"):
            tf.import_graph_def(frozen.SerializeToString())
        with pytest.raises(TypeError, match="return_elements must be a list of strings"):
            tf.import_graph_def(frozen, return_elements="probs:0")
        with pytest.raises(ValueError):  # an int32 tensor where a float32 one was
            tf.import_graph_def(frozen, input_map={"x:0": tf.constant([[1, 2, 3, 4]])})
        # a node without collflow's attrs is read as TensorFlow's: a Const must have its value
        foreign = tf.GraphDef(node=[tf.NodeDef(name="a", op="Const")])
        with pytest.raises(ValueError, match="no attr 'value'"):
            tf.import_graph_def(foreign)


def test_as_graph_def_copies_a_graph_with_control_flow():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [], name="x")
        i0 = tf.constant(0)
        _, acc = tf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a * x), [i0, tf.constant(1.0)])
        y = tf.cond(x > 1.0, lambda: acc * 2.0, lambda: acc - 1.0)
        out = tf.identity(y, name="out")
    gd = g.as_graph_def()
    with tf.Graph().as_default() as g2:
        xin = tf.placeholder(tf.float32, [], name="xin")
        o, = tf.import_graph_def(gd, input_map={"x": xin}, return_elements=["out:0"])
        with tf.Session() as s:
            assert s.run(o, {xin: 2.0}) == pytest.approx(64.0)
            assert s.run(o, {xin: 0.5}) == pytest.approx(0.5 ** 5 - 1.0)
    with tf.Session(graph=g) as s:
        assert s.run(out, {x: 2.0}) == pytest.approx(64.0)


def test_extract_sub_graph_and_remove_training_nodes():
    with tf.Graph().as_default() as g:
        a = tf.placeholder(tf.float32, [2], name="a")
        b = tf.identity(a, name="b")
        c = tf.check_numerics(b, "bad", name="c")
        d = tf.multiply(c, 2.0, name="d")
        tf.add(a, 1.0, name="unused")
        with tf.control_dependencies([d]):
            e = tf.identity(d, name="e")
        tf.identity(e, name="f")
    gd = g.as_graph_def()
    sub = tf.graph_util.extract_sub_graph(gd, ["f"])
    names = [n.name for n in sub.node]
    assert "unused" not in names and "unused/y" not in names and names[0] == "a" and names[-1] == "f"
    with pytest.raises(TypeError):
        tf.graph_util.extract_sub_graph(gd, "f")
    with pytest.raises(AssertionError, match="nope is not in graph"):
        tf.graph_util.extract_sub_graph(gd, ["nope"])
    trimmed = tf.graph_util.remove_training_nodes(sub, protected_nodes=["f"])
    tnames = {n.name: list(n.input) for n in trimmed.node}
    assert "b" not in tnames and "c" not in tnames   # spliced out
    assert "f" not in {n.name for n in tf.graph_util.remove_training_nodes(sub).node}
    assert "e" in tnames                             # has a control input: kept
    assert "c" not in tnames["d"] and len(tnames["d"]) == 1  # TF drops inputs that named a CheckNumerics
    kept = tf.graph_util.remove_training_nodes(sub, protected_nodes=["b", "f"])
    assert "b" in {n.name for n in kept.node}
    with tf.Graph().as_default() as g4:
        a = tf.placeholder(tf.float32, [2], name="a")
        b = tf.stop_gradient(tf.identity(a, name="b"), name="sg")
        tf.identity(tf.multiply(b, 2.0, name="d"), name="f")
    spliced = tf.graph_util.remove_training_nodes(g4.as_graph_def(), protected_nodes=["f"])
    assert {n.name: list(n.input) for n in spliced.node}["d"][0] == "a"
    with tf.Graph().as_default():
        av = tf.constant([1.0, 3.0])
        f, = tf.import_graph_def(spliced, input_map={"a:0": av}, return_elements=["f:0"])
        with tf.Session() as s:
            np.testing.assert_allclose(s.run(f), [2.0, 6.0])


def test_whitelist_blacklist_and_shape_helpers():
    g, x, out, _ = _mlp()
    with tf.Session(graph=g) as s:
        s.run(tf.variables_initializer(g.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)))
        only = tf.graph_util.convert_variables_to_constants(s, g.as_graph_def(), ["probs"],
                                                            variable_names_whitelist=["w1"])
        notw2 = tf.graph_util.convert_variables_to_constants(s, g.as_graph_def(), ["probs"],
                                                             variable_names_blacklist=["w2"])
    ops1 = {n.name: n.op for n in only.node}
    assert ops1["w1"] == "Const" and ops1["w2"] == "VarHandle" and ops1["w2/read"] == "ReadVariable"
    ops2 = {n.name: n.op for n in notw2.node}
    assert ops2["w1"] == "Const" and ops2["b1"] == "Const" and ops2["w2"] == "VarHandle"
    assert tf.graph_util.tensor_shape_from_node_def_name(g, "logits").as_list() == [None, 3]
    assert tf.graph_util.tensor_shape_from_node_def_name(g, "logits:0").as_list() == [None, 3]
    with tf.Graph().as_default() as g3:
        i = tf.constant(3, name="i")
        f = tf.constant(3.0, name="f")
        tf.constant("s", name="s")
        tf.cast(i, tf.float32, name="ci")
        v = tf.Variable(1.0, name="v")
    gd = g3.as_graph_def()
    node = {n.name: n for n in gd.node}
    assert tf.graph_util.must_run_on_cpu(node["i"]) and tf.graph_util.must_run_on_cpu(node["s"])
    assert not tf.graph_util.must_run_on_cpu(node["f"])
    assert tf.graph_util.must_run_on_cpu(i.op) and not tf.graph_util.must_run_on_cpu(f.op)
    assert tf.graph_util.must_run_on_cpu(g3.get_operation_by_name("ci"))
    assert tf.graph_util.must_run_on_cpu(v.op, pin_variables_on_cpu=True)
    assert not tf.graph_util.must_run_on_cpu(v.op)
    assert tf.compat.v1.graph_util.import_graph_def is tf.import_graph_def


def test_make_tensor_proto_and_make_ndarray():
    p = tf.make_tensor_proto([[1.0, 2.0], [3.0, 4.0]])
    assert p.dtype == 1 and [d.size for d in p.tensor_shape.dim] == [2, 2]
    assert p.tensor_content == np.array([[1, 2], [3, 4]], np.float32).tobytes()
    a = tf.make_ndarray(p)
    assert a.dtype == np.float32 and a.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    s = tf.make_tensor_proto(7)  # a scalar goes to the typed field, as int32
    assert s.dtype == 3 and s.int_val == [7] and s.tensor_content == b""
    assert tf.make_ndarray(s).shape == () and tf.make_ndarray(s).dtype == np.int32
    b = tf.make_tensor_proto(1.5, shape=[2, 3])  # a scalar broadcast: one value, the shape
    assert b.float_val == [1.5] and tf.make_ndarray(b).tolist() == [[1.5] * 3] * 2
    fill = tf.make_tensor_proto([1, 2], shape=[4])  # fewer values: the last one repeats
    assert tf.make_ndarray(fill).tolist() == [1, 2, 2, 2]
    assert tf.make_tensor_proto([2 ** 40]).dtype == 9  # int64 when int32 cannot hold it
    st = tf.make_tensor_proto(["ab", b"c"])
    assert st.dtype == 7 and st.string_val == [b"ab", b"c"]
    assert tf.make_ndarray(st).tolist() == [b"ab", b"c"]
    c = tf.make_ndarray(tf.make_tensor_proto(np.array([1 + 2j, 3j], np.complex64)))
    assert c.dtype == np.complex64 and c.tolist() == [1 + 2j, 3j]
    h = tf.make_ndarray(tf.make_tensor_proto(np.array([0.5, 2.0], np.float16)))
    assert h.dtype == np.float16 and h.tolist() == [0.5, 2.0]
    rt = tf.TensorProto.FromString(tf.make_tensor_proto([True, False, True]).SerializeToString())
    assert tf.make_ndarray(rt).tolist() == [True, False, True]
    with pytest.raises(TypeError, match="Expected int32, but got 1.5 of type 'float'"):
        tf.make_tensor_proto([1.5], dtype=tf.int32)
    with pytest.raises(ValueError, match="Too many elements provided. Takes at most 2, but got 3"):
        tf.make_tensor_proto([1, 2, 3], shape=[2])
    with pytest.raises(TypeError, match=r"Expected Tensor's shape: \(1, 2\), but got \(2,\)"):
        tf.make_tensor_proto([1, 2], shape=[1, 2], verify_shape=True)
    with pytest.raises(ValueError, match="None values not supported"):
        tf.make_tensor_proto(None)
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="non-tensor"):
            tf.make_tensor_proto(tf.constant(1.0))
