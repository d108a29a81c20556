"""tf.image.decode_and_crop_jpeg / tf.io.decode_and_crop_jpeg, adjust_jpeg_quality,
random_jpeg_quality, tf.image.transpose and tf.test.assert_equal_graph_def, without
TensorFlow: crops against decode_jpeg + NumPy slicing, the quality round trips against
encode_jpeg + decode_jpeg and the dtype rules, the window and quality checks, and the
GraphDef comparison's messages (TF's wording, as TF 2.21 writes them)."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow import errors
from collflow.summary import proto

R = np.random.RandomState(5)
YY, XX = np.mgrid[0:37, 0:45]
SMOOTH = np.stack([128 + 100 * np.sin(XX / 5.), 128 + 90 * np.cos(YY / 4.), 60 + 2 * XX + 3 * YY], -1
                  ).clip(0, 255).astype(np.uint8)


def _run(fn, feed=None):
    with tf.Graph().as_default(), tf.Session() as s:
        return s.run(fn(), feed)


def _psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return np.inf if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


DATA = _run(lambda: tf.image.encode_jpeg(SMOOTH, quality=90))


# -- decode_and_crop_jpeg --------------------------------------------------------------------------
@pytest.mark.parametrize("channels", [0, 1, 3])
def test_decode_and_crop_is_decode_then_crop(channels):
    full = _run(lambda: tf.image.decode_jpeg(DATA, channels=channels))
    for w in ([0, 0, 37, 45], [2, 3, 5, 7], [36, 44, 1, 1], [9, 1, 28, 44]):
        got = _run(lambda: tf.image.decode_and_crop_jpeg(DATA, w, channels=channels))
        np.testing.assert_array_equal(got, full[w[0]:w[0] + w[2], w[1]:w[1] + w[3]])
        assert got.dtype == np.uint8


def test_decode_and_crop_ratio_placeholder_and_io():
    half = _run(lambda: tf.image.decode_jpeg(DATA, ratio=2))
    with tf.Graph().as_default(), tf.Session() as s:
        w = tf.placeholder(tf.int32, [4])
        out = tf.io.decode_and_crop_jpeg(DATA, w, ratio=2)
        assert out.shape.as_list() == [None, None, None]
        np.testing.assert_array_equal(s.run(out, {w: [1, 2, 10, 12]}), half[1:11, 2:14])
        assert tf.io.decode_and_crop_jpeg is tf.image.decode_and_crop_jpeg
        assert tf.image.decode_and_crop_jpeg(DATA, [0, 0, 1, 1], channels=3).shape[-1] == 3


@pytest.mark.parametrize("window", [[0, 0, 0, 5], [2, 3, 0, 0], [-1, 0, 2, 2], [0, -1, 2, 2], [0, 0, 10, 46],
                                    [30, 0, 8, 4], [0, 0, -1, 2], [1, 2, 3], [1, 2, 3, 4, 5]])
def test_decode_and_crop_bad_windows(window):
    with tf.Graph().as_default(), tf.Session() as s:
        w = tf.placeholder(tf.int32, [None])
        out = tf.image.decode_and_crop_jpeg(DATA, w)
        with pytest.raises(errors.InvalidArgumentError, match="crop window|four elements"):
            s.run(out, {w: window})


def test_decode_and_crop_build_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="rank 1"):
            tf.image.decode_and_crop_jpeg(DATA, [[1, 2, 3, 4]])
        with pytest.raises(TypeError, match="int32"):
            tf.image.decode_and_crop_jpeg(DATA, [1.0, 2, 3, 4])
        with pytest.raises(TypeError):
            tf.image.decode_and_crop_jpeg(DATA, tf.constant([1, 2, 3, 4], tf.int64))
        with pytest.raises(ValueError, match="channels"):
            tf.image.decode_and_crop_jpeg(DATA, [1, 2, 3, 4], channels=2)


# -- adjust_jpeg_quality / random_jpeg_quality -----------------------------------------------------
def _round_trip(img, q):
    return _run(lambda: tf.image.decode_jpeg(tf.image.encode_jpeg(img, quality=q), channels=img.shape[-1]))


@pytest.mark.parametrize("q", [0, 10, 50, 95, 100])
def test_adjust_jpeg_quality_is_encode_then_decode(q):
    got = _run(lambda: tf.image.adjust_jpeg_quality(SMOOTH, q))
    np.testing.assert_array_equal(got, _round_trip(SMOOTH, q))
    assert got.dtype == np.uint8 and got.shape == SMOOTH.shape


def test_adjust_jpeg_quality_lossiness_grows_as_quality_falls():
    p = [_psnr(_run(lambda: tf.image.adjust_jpeg_quality(SMOOTH, q)), SMOOTH) for q in (5, 25, 60, 95)]
    assert p == sorted(p) and p[0] < 30 < p[-1]


def test_adjust_jpeg_quality_gray_and_tensor_quality():
    gray = SMOOTH[..., :1]
    np.testing.assert_array_equal(_run(lambda: tf.image.adjust_jpeg_quality(gray, 30)), _round_trip(gray, 30))
    with tf.Graph().as_default(), tf.Session() as s:
        q = tf.placeholder(tf.int32, [])
        out = tf.image.adjust_jpeg_quality(SMOOTH, q)
        assert out.shape.as_list() == [None, None, 3]
        for k in (0, 37, 100):
            np.testing.assert_array_equal(s.run(out, {q: k}), _round_trip(SMOOTH, k))
        for bad in (-1, 101):
            with pytest.raises(errors.InvalidArgumentError, match=r"quality must be in \[0,100\]"):
                s.run(out, {q: bad})


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.uint16])
def test_adjust_jpeg_quality_dtypes(dtype):
    """uint8 (saturating) in, the dtype back: floats in [0, 1], out-of-range floats clipped."""
    u8 = _round_trip(SMOOTH, 80)
    if np.dtype(dtype).kind == "f":
        img = (SMOOTH / 255.0).astype(dtype)
        want = u8.astype(np.float64) / 255
        atol = 1e-3
    else:
        scale = np.iinfo(dtype).max // 255
        img = (SMOOTH.astype(np.int64) * scale).astype(dtype)
        # convert_image_dtype: down by a shift, back up by multiplying by (max(dtype) + 1) // 256
        want = u8.astype(np.int64) * ((np.iinfo(dtype).max + 1) // 256)
        atol = 0
    got = _run(lambda: tf.image.adjust_jpeg_quality(img, 80))
    assert got.dtype == dtype and got.shape == SMOOTH.shape
    np.testing.assert_allclose(got.astype(np.float64), want, atol=atol)
    if np.dtype(dtype).kind == "f":
        sat = _run(lambda: tf.image.adjust_jpeg_quality(np.full((8, 8, 3), [2.0, -1.0, 0.5], dtype), 95))
        np.testing.assert_allclose(sat[0, 0], [1.0, 0.0, 0.5], atol=3 / 255)


@pytest.mark.parametrize("make,exc", [
    (lambda: tf.image.adjust_jpeg_quality(SMOOTH[0], 5), ValueError),
    (lambda: tf.image.adjust_jpeg_quality(np.stack([SMOOTH, SMOOTH]), 5), ValueError),
    (lambda: tf.image.adjust_jpeg_quality(SMOOTH, 5.5), TypeError),
    (lambda: tf.image.adjust_jpeg_quality(SMOOTH, tf.constant(5.0)), TypeError),
    (lambda: tf.image.adjust_jpeg_quality(SMOOTH, 101), errors.InvalidArgumentError),
    (lambda: tf.image.random_jpeg_quality(SMOOTH, -1, 5), ValueError),
    (lambda: tf.image.random_jpeg_quality(SMOOTH, 5, 101), ValueError),
    (lambda: tf.image.random_jpeg_quality(SMOOTH, 5, 5), ValueError),
    (lambda: tf.image.random_jpeg_quality(SMOOTH, 6, 5), ValueError),
])
def test_jpeg_quality_errors(make, exc):
    with tf.Graph().as_default(), pytest.raises(exc):
        make()


def test_two_channels_fail_at_run_time():
    with tf.Graph().as_default(), tf.Session() as s:
        out = tf.image.adjust_jpeg_quality(SMOOTH[..., :2], 50)
        with pytest.raises(errors.InvalidArgumentError, match="1 or 3 channels"):
            s.run(out)


def test_random_jpeg_quality_draws_from_the_range():
    small = SMOOTH[:16, :16]
    choices = {q: _round_trip(small, q) for q in range(40, 44)}
    seen = set()
    with tf.Graph().as_default(), tf.Session() as s:
        out = tf.image.random_jpeg_quality(small, 40, 44, seed=1)
        assert out.dtype == tf.uint8
        for _ in range(12):
            v = s.run(out)
            match = [q for q, c in choices.items() if np.array_equal(c, v)]
            assert match, "not the round trip of any quality in [40, 44)"
            seen.update(match)
    assert len(seen) >= 2


def test_transpose():
    x = R.randn(2, 3, 4, 2).astype(np.float32)
    np.testing.assert_array_equal(_run(lambda: tf.image.transpose(x)), np.transpose(x, (0, 2, 1, 3)))
    np.testing.assert_array_equal(_run(lambda: tf.image.transpose(x[0])), np.transpose(x[0], (1, 0, 2)))
    with tf.Graph().as_default():
        assert tf.image.transpose(x, name="t").name.startswith("t/")
        with pytest.raises(ValueError):
            tf.image.transpose(np.zeros((2, 2), np.float32))
    assert "transpose" in tf.image.__all__ and "adjust_jpeg_quality" in tf.image.__all__


# -- assert_equal_graph_def ------------------------------------------------------------------------
def _node(name, op, inputs=(), device="", **attrs):
    n = proto.NodeDef(name=name, op=op, input=list(inputs), device=device)
    n.attr = [proto.NodeDef.AttrEntry(key=k, value=proto.AttrValue(**v)) for k, v in attrs.items()]
    return n


def _gd(*nodes):
    return proto.GraphDef(node=list(nodes))


def _msg(a, b, **kw):
    try:
        tf.test.assert_equal_graph_def(a, b, **kw)
    except AssertionError as e:
        return str(e)
    return None


def _base(**over):
    nodes = {"a": _node("a", "Const", dtype={"type": 1}),
             "b": _node("b", "Add", ["a", "a:0", "^c", "^c", "^d"], device="/cpu:0"),
             "c": _node("c", "NoOp"), "d": _node("d", "NoOp")}
    nodes.update(over)
    return _gd(*[n for n in nodes.values() if n is not None])


def test_graph_def_equal_up_to_order():
    a = _base()
    b = _gd(*reversed(_base().node))
    assert _msg(a, b) is None
    assert _msg(a, _base(b=_node("b", "Add", ["a:0", "a", "^d", "^c", "^c"], device="/cpu:0"))) is None


@pytest.mark.parametrize("other,want", [
    (dict(b=_node("b", "Sub", ["a", "a:0", "^c", "^c", "^d"], device="/cpu:0")),
     "Node named 'b' has op 'Add' that is not expected 'Sub'"),
    (dict(b=_node("b", "Add", ["a", "a:0", "^c", "^c", "^d"], device="/gpu:0")),
     "Node named 'b' has device '/cpu:0' that is not expected '/gpu:0'"),
    (dict(b=_node("b", "Add", ["a", "a:0", "^d"], device="/cpu:0")),
     "Node named 'b' has inputs 'a, a:0, ^c, ^c, ^d' that don't match expected 'a, a:0, ^d'"),
    (dict(b=_node("b", "Add", ["a", "c", "^c", "^c", "^d"], device="/cpu:0")),
     "Node named 'b' has input 1 'a:0' that doesn't match expected 'c'"),
    (dict(b=_node("b", "Add", ["a", "a:0", "^d", "^d", "^d"], device="/cpu:0")),
     "Node named 'b' has unexpected control input '^c'"),
    (dict(d=None), "Found unexpected node '{{node d}} = NoOp[]()'"),
    (dict(a=_node("a", "Const")), "Node named 'a' has unexpected attr 'dtype' with value: DT_FLOAT"),
    (dict(c=_node("c", "NoOp", x={"i": 3})), "Node named 'c' missing expected attr 'x' with value: 3"),
    (dict(c=_node("c", "NoOp", x={"s": b"q\n"})), "Node named 'c' missing expected attr 'x' with value: \"q\\n\""),
    (dict(c=_node("c", "NoOp", x={"f": 1.5})), "Node named 'c' missing expected attr 'x' with value: 1.5"),
    (dict(c=_node("c", "NoOp", x={"b": True})), "Node named 'c' missing expected attr 'x' with value: true"),
    (dict(c=_node("c", "NoOp", x={"list": proto.AttrValue.ListValue(i=[1, 2])})),
     "Node named 'c' missing expected attr 'x' with value: [1, 2]"),
    (dict(c=_node("c", "NoOp", _x={"i": 3})), None),
    # control inputs compare as sets: repeats do not count
    (dict(b=_node("b", "Add", ["a", "a:0", "^c", "^d", "^d"], device="/cpu:0")), None),
])
def test_graph_def_differences(other, want):
    assert _msg(_base(), _base(**other)) == want


def test_graph_def_missing_node_and_type_errors():
    assert _msg(_base(d=None), _base()) == "Did not find expected node '{{node d}} = NoOp[]()'"
    with pytest.raises(TypeError, match="Expected tf.GraphDef for actual, got int"):
        tf.test.assert_equal_graph_def(1, _base())
    with pytest.raises(TypeError, match="Expected tf.GraphDef for expected, got str"):
        tf.test.assert_equal_graph_def(_base(), "x")


def test_graph_def_randomized_names():
    def save(h):
        t = proto.TensorProto(dtype=7, string_val=[f"_temp_{h * 32}/part".encode()])
        return _gd(_node("s", "Const", value={"tensor": t}))

    assert _msg(save("0"), save("1")).startswith("Node named 's' has attr 'value'")
    assert _msg(save("0"), save("1"), checkpoint_v2=True) is None

    def table(name):
        return _gd(_node("h", "HashTableV2", shared_name={"s": name.encode()}))

    assert _msg(table("hash_table_1a-b"), table("hash_table_2"), hash_table_shared_name=True) is None
    assert _msg(table("hash_table_1a-b"), table("hash_table_2")) is not None
    assert _msg(table("table_1"), table("table_2"), hash_table_shared_name=True) is not None


def _graph(order, value=2.0, ctrl=True):
    g = tf.Graph()
    with g.as_default():
        made = {}
        for name in order:
            if name == "a":
                made["a"] = tf.constant([1.0, value], name="a")
            elif name == "p":
                made["p"] = tf.placeholder(tf.float32, [None, 2], name="p")
            elif name == "n":
                made["n"] = tf.no_op(name="n")
        with g.control_dependencies([made["n"]] if ctrl else []):
            tf.identity(made["a"], name="i")
    return g.as_graph_def()


def test_graph_def_of_collflow_graphs():
    """collflow's attributes (carried in its "_collflow" attr) are compared one by one."""
    assert _msg(_graph("apn"), _graph("npa")) is None
    assert _msg(_graph("apn", value=3.0), _graph("apn")) == (
        "Node named 'a' has attr 'value' with value: Tensor<type: float shape: [2] values: 1 3> that does not "
        "match expected: Tensor<type: float shape: [2] values: 1 2>")
    assert _msg(_graph("apn", ctrl=False), _graph("apn")) == (
        "Node named 'i' has inputs 'a' that don't match expected 'a, ^n'")
    g = tf.Graph()
    with g.as_default():
        tf.placeholder(tf.float32, [None, 2], name="p")
    assert _msg(g.as_graph_def(), _gd()) == (
        "Found unexpected node '{{node p}} = Placeholder[dtype=DT_FLOAT, shape=[?,2]]()'")


def test_a_run_time_quality_is_one_encoder_op():
    """TF's EncodeJpegVariableQuality: one op reads the quality when it runs (not one encoder
    per possible quality in the graph); the result equals the constant quality's."""
    with tf.Graph().as_default() as g:
        q = tf.placeholder(tf.int32, [])
        n0 = len(g.get_operations())
        out = tf.image.adjust_jpeg_quality(SMOOTH, q)
        assert len(g.get_operations()) - n0 < 40
        assert sum(op.type == "EncodeJpegVariableQuality" for op in g.get_operations()) == 1
        want = tf.image.adjust_jpeg_quality(SMOOTH, 37)
        rnd = tf.image.random_jpeg_quality(SMOOTH, 20, 30, seed=3)
        with tf.Session() as s:
            np.testing.assert_array_equal(s.run(out, {q: 37}), s.run(want))
            assert s.run(rnd).shape == SMOOTH.shape
            with pytest.raises(errors.InvalidArgumentError, match=r"quality must be in \[0,100\], got 101"):
                s.run(out, {q: 101})


def test_crop_static_shape_from_a_constant_window():
    with tf.Graph().as_default():
        assert tf.image.decode_and_crop_jpeg(DATA, [1, 2, 10, 5]).shape.as_list() == [10, 5, None]
        assert tf.image.decode_and_crop_jpeg(DATA, [1, 2, 10, 5], channels=3).shape.as_list() == [10, 5, 3]
        w = tf.placeholder(tf.int32, [4])
        assert tf.image.decode_and_crop_jpeg(DATA, w).shape.as_list() == [None, None, None]
