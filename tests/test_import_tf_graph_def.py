"""tf.import_graph_def of GraphDefs TensorFlow wrote, without TensorFlow: the .pb files under
tests/data/tf_graph_defs/ (TF 2.21's compat.v1 froze them with its convert_variables_to_constants
and wrote them with tf.io.write_graph(as_text=False); tests/tf1/make_tf_graph_def_data.py
regenerates them) against TF's outputs saved next to them, and GraphDefs built by hand with
TF's typed AttrValues against NumPy (collflow/train/tf_graph_def_import.py, tf_graph_def_ops.py)."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.summary.proto import AttrValue, NodeDef, TensorProto, TensorShapeProto

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tf_graph_defs")
CASES = ["mlp", "cnn", "embedding", "slicing", "rnn", "nchw", "extras", "keras", "raw_ops"]


def _read(name):
    """The GraphDef of a .pb as a TF1 user reads one: tf.gfile bytes, ParseFromString."""
    gd = tf.GraphDef()
    with tf.gfile.GFile(os.path.join(DATA, name + ".pb"), "rb") as f:
        gd.ParseFromString(f.read())
    return gd


def _expected(name):
    z = np.load(os.path.join(DATA, name + ".npz"))
    feeds = {str(k): z[f"feed{i}"] for i, k in enumerate(z["feed_names"])}
    outs = [str(o) for o in z["out_names"]]
    return feeds, outs, [z[f"out{i}"] for i in range(len(outs))]


def _close(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)


@pytest.mark.parametrize("name", CASES)
def test_tf_written_pb_gives_tensorflows_outputs(name):
    gd = _read(name)
    feeds, outs, want = _expected(name)
    with tf.Graph().as_default() as g:
        res = tf.import_graph_def(gd, return_elements=outs)
        assert [t.name for t in res] == ["import/" + o for o in outs]
        with tf.Session(graph=g) as s:
            got = s.run(res, {g.get_tensor_by_name("import/" + k): v for k, v in feeds.items()})
    for o, a, b in zip(outs, got, want):
        _close(a, b)


def test_input_map_return_elements_scope_and_control_inputs():
    gd = _read("rnn")
    feeds, outs, want = _expected("rnn")
    with tf.Graph().as_default() as g:
        x = tf.constant(feeds["x:0"])
        gate = tf.no_op(name="gate")
        y, before, y_op = tf.import_graph_def(gd, input_map={"x:0": x, "^before": gate},
                                              return_elements=["y:0", "before", "y"], name="m")
        assert y.name == "m/y:0" and y_op is y.op and before.name == "m/before"
        # node pow/y reads "^before"; mapped, its control input is the op given
        assert gate in g.get_operation_by_name("m/pow/y").control_inputs
        with tf.Session(graph=g) as s:
            _close(s.run(y), want[0])
        # a second import gets a unique scope; name="" imports without one
        (y2,) = tf.import_graph_def(gd, return_elements=["y:0"], name="m")
        assert y2.name == "m_1/y:0"
    with tf.Graph().as_default() as g:
        (y3,) = tf.import_graph_def(gd, return_elements=["y:0"], name="")
        assert y3.name == "y:0"
        assert g.get_operation_by_name("before") in g.get_operation_by_name("pow/y").control_inputs
        with tf.Session(graph=g) as s:
            _close(s.run(y3, {"x:0": feeds["x:0"]}), want[0])


def test_graph_util_keeps_tf_attrs():
    # extract_sub_graph copies nodes by serializing them: TF's typed attrs must survive
    gd = _read("mlp")
    sub = tf.graph_util.extract_sub_graph(gd, ["probs"])
    assert GraphDefBytes(sub) <= GraphDefBytes(gd)
    feeds, outs, want = _expected("mlp")
    with tf.Graph().as_default() as g:
        (p,) = tf.import_graph_def(sub, return_elements=["probs:0"], name="")
        with tf.Session(graph=g) as s:
            _close(s.run(p, {"x:0": feeds["x:0"]}), want[0])


def GraphDefBytes(gd):  # noqa: N802
    return len(gd.SerializeToString())


def _attr(**kw):
    return AttrValue(**kw)


def _shape(dims):
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in dims])


def _node(name, op, inputs=(), **attrs):
    return NodeDef(name=name, op=op, input=list(inputs), attr=[NodeDef.AttrEntry(key=k, value=v)
                                                               for k, v in attrs.items()])


DT_FLOAT, DT_INT32, DT_INT64, DT_BOOL, DT_HALF = 1, 3, 9, 10, 19


def _run(nodes, fetches, feeds=None):
    gd = tf.GraphDef.FromString(tf.GraphDef(node=nodes).SerializeToString())  # as read from a file
    with tf.Graph().as_default() as g:
        res = tf.import_graph_def(gd, return_elements=fetches, name="")
        with tf.Session(graph=g) as s:
            return s.run(res, feeds or {})


def test_const_tensor_fields():
    # TF's TensorProto: tensor_content (raw little-endian), or a typed field whose last value
    # fills the rest of the shape; half_val holds float16 bit patterns
    w = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    nodes = [
        _node("content", "Const", dtype=_attr(type=DT_FLOAT),
              value=_attr(tensor=TensorProto(dtype=DT_FLOAT, tensor_shape=_shape([2, 3]),
                                             tensor_content=w.tobytes()))),
        _node("fill", "Const", dtype=_attr(type=DT_FLOAT),
              value=_attr(tensor=TensorProto(dtype=DT_FLOAT, tensor_shape=_shape([2, 2]), float_val=[1.5, -2.0]))),
        _node("half", "Const", dtype=_attr(type=DT_HALF),
              value=_attr(tensor=TensorProto(dtype=DT_HALF, tensor_shape=_shape([2]),
                                             half_val=[int(np.float16(0.5).view(np.uint16)),
                                                       int(np.float16(-3).view(np.uint16))]))),
        _node("i64", "Const", dtype=_attr(type=DT_INT64),
              value=_attr(tensor=TensorProto(dtype=DT_INT64, tensor_shape=_shape([3]), int64_val=[-(2 ** 40), 7, 0]))),
        _node("flags", "Const", dtype=_attr(type=DT_BOOL),
              value=_attr(tensor=TensorProto(dtype=DT_BOOL, tensor_shape=_shape([]), bool_val=[True]))),
        _node("words", "Const", dtype=_attr(type=7),
              value=_attr(tensor=TensorProto(dtype=7, tensor_shape=_shape([2]), string_val=[b"ab", b"c"]))),
    ]
    c, f, h, i, b, s = _run(nodes, ["content:0", "fill:0", "half:0", "i64:0", "flags:0", "words:0"])
    np.testing.assert_array_equal(c, w)
    np.testing.assert_array_equal(f, np.array([[1.5, -2.0], [-2.0, -2.0]], np.float32))
    assert h.dtype == np.float16 and h.tolist() == [0.5, -3.0]
    assert i.dtype == np.int64 and i.tolist() == [-(2 ** 40), 7, 0]
    assert b.dtype == np.bool_ and bool(b) is True
    assert [x if isinstance(x, bytes) else x.encode() for x in s.ravel()] == [b"ab", b"c"]


def _const(name, value, dt=DT_FLOAT):
    v = np.asarray(value)
    return _node(name, "Const", dtype=_attr(type=dt), value=_attr(tensor=TensorProto(
        dtype=dt, tensor_shape=_shape(v.shape), tensor_content=v.tobytes())))


def test_dense_layer_by_hand():
    # MatMul(transpose_b) + BiasAdd + Relu6, Placeholder with a partly known shape
    r = np.random.default_rng(0)
    x = r.normal(size=(3, 4)).astype(np.float32)
    w = r.normal(size=(5, 4)).astype(np.float32)
    b = r.normal(size=5).astype(np.float32)
    nodes = [
        _node("x", "Placeholder", dtype=_attr(type=DT_FLOAT), shape=_attr(shape=_shape([-1, 4]))),
        _const("w", w), _const("b", b),
        _node("mm", "MatMul", ["x", "w"], T=_attr(type=DT_FLOAT), transpose_a=_attr(b=False),
              transpose_b=_attr(b=True)),
        _node("ba", "BiasAdd", ["mm", "b"], T=_attr(type=DT_FLOAT), data_format=_attr(s=b"NHWC")),
        _node("out", "Relu6", ["ba"], T=_attr(type=DT_FLOAT)),
    ]
    (got,) = _run(nodes, ["out:0"], {"x:0": x})
    np.testing.assert_allclose(got, np.clip(x @ w.T + b, 0, 6), rtol=1e-6, atol=1e-6)


def test_strided_slice_masks_by_hand():
    # begin_mask 1 (dim 0 from the start), end_mask 4 (dim 2 to the end), shrink_axis_mask 2
    # (dim 1 indexed), new_axis_mask 8: x[:2, 1, 1:, None]; and ellipsis_mask: x[..., ::-2]
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    nodes = [
        _const("x", x),
        _const("b1", np.array([1, 1, 1, 0], np.int32), DT_INT32),
        _const("e1", np.array([2, 2, 3, 0], np.int32), DT_INT32),
        _const("s1", np.array([1, 1, 1, 1], np.int32), DT_INT32),
        _node("a", "StridedSlice", ["x", "b1", "e1", "s1"], T=_attr(type=DT_FLOAT), Index=_attr(type=DT_INT32),
              begin_mask=_attr(i=1), end_mask=_attr(i=4), ellipsis_mask=_attr(i=0), new_axis_mask=_attr(i=8),
              shrink_axis_mask=_attr(i=2)),
        _const("b2", np.array([0, -1], np.int32), DT_INT32),
        _const("e2", np.array([0, 0], np.int32), DT_INT32),
        _const("s2", np.array([1, -2], np.int32), DT_INT32),
        _node("c", "StridedSlice", ["x", "b2", "e2", "s2"], T=_attr(type=DT_FLOAT), Index=_attr(type=DT_INT32),
              begin_mask=_attr(i=0), end_mask=_attr(i=2), ellipsis_mask=_attr(i=1), new_axis_mask=_attr(i=0),
              shrink_axis_mask=_attr(i=0)),
    ]
    a, c = _run(nodes, ["a:0", "c:0"])
    np.testing.assert_array_equal(a, x[:2, 1, 1:, None])
    np.testing.assert_array_equal(c, x[..., ::-2])


def test_nchw_conv_and_explicit_padding_by_hand():
    # Conv2D NCHW with EXPLICIT padding: explicit_paddings in NCHW order pad H by (1, 0) and
    # W by (0, 2); strides [1, 1, 2, 1] stride H by 2.  NumPy: pad, then correlate.
    r = np.random.default_rng(1)
    x = r.normal(size=(1, 2, 5, 4)).astype(np.float32)  # N C H W
    w = r.normal(size=(2, 3, 2, 3)).astype(np.float32)  # kh kw in out
    nodes = [_const("x", x), _const("w", w),
             _node("y", "Conv2D", ["x", "w"], T=_attr(type=DT_FLOAT), data_format=_attr(s=b"NCHW"),
                   strides=_attr(list=AttrValue.ListValue(i=[1, 1, 2, 1])), padding=_attr(s=b"EXPLICIT"),
                   explicit_paddings=_attr(list=AttrValue.ListValue(i=[0, 0, 0, 0, 1, 0, 0, 2])),
                   dilations=_attr(list=AttrValue.ListValue(i=[1, 1, 1, 1])))]
    (got,) = _run(nodes, ["y:0"])
    xp = np.pad(x.transpose(0, 2, 3, 1), [(0, 0), (1, 0), (0, 2), (0, 0)])
    oh, ow = (xp.shape[1] - 2) // 2 + 1, xp.shape[2] - 3 + 1
    want = np.zeros((1, oh, ow, 3), np.float64)
    for i in range(oh):
        for j in range(ow):
            want[0, i, j] = np.einsum("hwc,hwco->o", xp[0, 2 * i:2 * i + 2, j:j + 3], w)
    np.testing.assert_allclose(got, want.transpose(0, 3, 1, 2), rtol=1e-5, atol=1e-5)


def test_nchw_pool_depth_space_and_conv_transpose_equal_their_nhwc_nodes():
    # An NCHW node's value is its NHWC twin's value transposed (collflow computes NHWC and
    # transposes around it); the node's name names the NCHW output
    r = np.random.default_rng(2)
    x = r.normal(size=(2, 4, 6, 6)).astype(np.float32)  # N C H W
    w = r.normal(size=(3, 3, 5, 4)).astype(np.float32)  # kh kw out in (backprop input's filter)
    dy = r.normal(size=(2, 4, 3, 3)).astype(np.float32)
    L = AttrValue.ListValue

    def nodes(df):
        hw = (lambda n, c, h, w_: [n, c, h, w_]) if df == b"NCHW" else (lambda n, c, h, w_: [n, h, w_, c])
        xin = x if df == b"NCHW" else x.transpose(0, 2, 3, 1)
        dyin = dy if df == b"NCHW" else dy.transpose(0, 2, 3, 1)
        return [_const("x", xin), _const("w", w), _const("dy", dyin),
                _const("sizes", np.array(hw(2, 5, 6, 6), np.int32), DT_INT32),
                _node("mp", "MaxPool", ["x"], T=_attr(type=DT_FLOAT), data_format=_attr(s=df),
                      ksize=_attr(list=L(i=hw(1, 1, 3, 2))), strides=_attr(list=L(i=hw(1, 1, 2, 2))),
                      padding=_attr(s=b"SAME")),
                _node("d2s", "DepthToSpace", ["x"], T=_attr(type=DT_FLOAT), data_format=_attr(s=df),
                      block_size=_attr(i=2)),
                _node("ct", "Conv2DBackpropInput", ["sizes", "w", "dy"], T=_attr(type=DT_FLOAT),
                      data_format=_attr(s=df), strides=_attr(list=L(i=hw(1, 1, 2, 2))), padding=_attr(s=b"SAME"),
                      dilations=_attr(list=L(i=[1, 1, 1, 1])))]
    got = _run(nodes(b"NCHW"), ["mp:0", "d2s:0", "ct:0"])
    want = _run(nodes(b"NHWC"), ["mp:0", "d2s:0", "ct:0"])
    for g_, w_ in zip(got, want):
        np.testing.assert_allclose(g_, w_.transpose(0, 3, 1, 2), rtol=1e-5, atol=1e-5)
    assert got[2].shape == (2, 5, 6, 6)


def test_fused_batch_norm_inference_keeps_small_epsilon():
    # TF's FusedBatchNorm op uses its epsilon as given (only TF1's Python wrapper raises it to
    # 1.001e-5): y = (x - mean) * scale / sqrt(var + eps) + offset
    x = np.array([[[[1.0, 2.0]], [[3.0, -1.0]]]], np.float32)  # 1x2x1x2 NHWC
    scale, offset = np.array([2.0, 0.5], np.float32), np.array([0.1, -0.2], np.float32)
    mean, var = np.array([1.5, 0.0], np.float32), np.array([1e-6, 4.0], np.float32)
    nodes = [_const("x", x), _const("s", scale), _const("o", offset), _const("m", mean), _const("v", var),
             _node("bn", "FusedBatchNormV3", ["x", "s", "o", "m", "v"], T=_attr(type=DT_FLOAT),
                   U=_attr(type=DT_FLOAT), epsilon=_attr(f=1e-7), is_training=_attr(b=False),
                   data_format=_attr(s=b"NHWC"))]
    y, m = _run(nodes, ["bn:0", "bn:1"])
    want = (x - mean) * scale / np.sqrt(var.astype(np.float64) + 1e-7) + offset
    np.testing.assert_allclose(y, want, rtol=1e-5)
    np.testing.assert_array_equal(m, mean)


def test_unimported_op_types_are_all_named():
    nodes = [_const("a", np.float32(1)),
             _node("w1", "Enter", ["a"], T=_attr(type=DT_FLOAT), frame_name=_attr(s=b"f")),
             _node("f1", "FancyOp", ["a"]), _node("f2", "FancyOp", ["a"]),
             _node("v", "VariableV2", dtype=_attr(type=DT_FLOAT), shape=_attr(shape=_shape([])))]
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.NotFoundError) as e:
            tf.import_graph_def(tf.GraphDef(node=nodes))
        msg = str(e.value)
        for part in ("Enter", "control flow", "'w1'", "FancyOp", "'f1'", "'f2'", "VariableV2", "'v'",
                     "convert_variables_to_constants"):
            assert part in msg
        assert tf.get_default_graph().get_operations() == []  # refused before building anything


def test_missing_attr_and_missing_input_are_clear():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="node 'a' \\(Const\\).*no attr 'value'"):
            tf.import_graph_def(tf.GraphDef(node=[tf.NodeDef(name="a", op="Const")]))
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="not in graph_def: 'nope'"):
            tf.import_graph_def(tf.GraphDef(node=[_const("a", np.float32(1)),
                                                  _node("b", "Neg", ["nope"], T=_attr(type=DT_FLOAT))]))


def test_unsorted_nodes_and_attr_round_trip():
    # TF's GraphDefs need not list inputs first; a parsed GraphDef serializes its typed
    # attrs back unchanged
    nodes = [_node("n", "Neg", ["a"], T=_attr(type=DT_FLOAT)), _const("a", np.array([1.0, -2.0], np.float32))]
    raw = tf.GraphDef(node=nodes).SerializeToString()
    assert tf.GraphDef.FromString(raw).SerializeToString() == raw
    (got,) = _run(nodes, ["n:0"])
    np.testing.assert_array_equal(got, [-1.0, 2.0])
    av = tf.GraphDef.FromString(raw).node[0].attr[0].value
    assert av.WhichOneof("value") == "type" and av.type == DT_FLOAT


def test_text_graph_def():
    # write_graph(as_text=True)'s .pbtxt, read with collflow's text-format reader
    from collflow.summary.proto_text import merge
    with open(os.path.join(DATA, "mlp.pbtxt")) as f:
        gd = merge(f.read(), tf.GraphDef())
    def canon(g):  # a map's entries: the text format sorts them by key, the binary one need not
        return [(n.name, n.op, list(n.input), sorted((e.key, e.value.SerializeToString()) for e in n.attr))
                for n in g.node]
    assert canon(gd) == canon(_read("mlp"))
    feeds, outs, want = _expected("mlp")
    with tf.Graph().as_default() as g:
        res = tf.import_graph_def(gd, return_elements=outs, name="")
        with tf.Session(graph=g) as s:
            got = s.run(res, feeds)
    for a, b in zip(got, want):
        _close(a, b)


def test_text_format_values():
    # protobuf's text format: octal/hex/escaped bytes, adjacent strings, DataType names,
    # [list] syntax, '<>' messages, comments, and fields the message lacks skipped
    from collflow.summary.proto_text import merge, parse
    text = r'''
    node {  # a comment
      name: "c" op: 'Const'
      attr { key: "dtype" value { type: DT_INT32 } }
      attr { key: "value" value < tensor { dtype: DT_INT32 tensor_shape { dim { size: 3 } }
                                            tensor_content: "\001\000\000\000" "\x02\000\000\000\377\377\377\377" } > }
      attr { key: "l" value { list { i: [1, -2, 0x10] f: 1e-05 f: -inf } } }
      experimental_debug_info { original_node_names: "x" }
    }
    versions { producer: 27 min_consumer: 12 }
    '''
    gd = merge(text, tf.GraphDef())
    (n,) = gd.node
    assert (n.name, n.op) == ("c", "Const")
    entries = {e.key: e.value for e in n.attr}
    assert entries["dtype"].type == DT_INT32
    assert entries["l"].list.i == [1, -2, 16] and entries["l"].list.f[0] == np.float32(1e-5)
    assert entries["l"].list.f[1] == -np.inf
    (got,) = _run(list(gd.node), ["c:0"])
    np.testing.assert_array_equal(got, np.array([1, 2, -1], np.int32))
    assert parse('node { name: "z" }', gd) is gd and [x.name for x in gd.node] == ["z"]
