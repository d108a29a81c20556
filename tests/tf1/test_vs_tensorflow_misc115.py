"""Differential tests against TensorFlow (graph mode) for tf.image.decode_and_crop_jpeg (and
tf.io's), adjust_jpeg_quality, random_jpeg_quality, tf.image.transpose and
tf.test.assert_equal_graph_def.  JPEG files are written by TensorFlow's encoder and decoded
by both; the quality round trips (whose encoders differ) are compared by PSNR.  The GraphDef
comparisons run TF's checker and collflow's on the same GraphDef bytes and compare messages.
Skipped cleanly without TensorFlow."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402
from collflow.summary import proto as cf_proto  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

R = np.random.RandomState(7)
YY, XX = np.mgrid[0:37, 0:45]
SMOOTH = np.stack([128 + 100 * np.sin(XX / 5.), 128 + 90 * np.cos(YY / 4.), 60 + 2 * XX + 3 * YY], -1
                  ).clip(0, 255).astype(np.uint8)
NOISY = (R.rand(37, 45, 3) * 255).astype(np.uint8)


def _run(tf, fn, feed_fn=None):
    with tf.Graph().as_default(), tf.Session() as s:
        return s.run(fn(tf))


def _tf_jpeg(img, **kw):
    return _run(tft, lambda tf: tf.image.encode_jpeg(img, **kw))


def _psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return np.inf if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


# -- decode_and_crop_jpeg --------------------------------------------------------------------------
WINDOWS = [[0, 0, 37, 45], [2, 3, 5, 7], [15, 20, 5, 8], [9, 1, 28, 44], [36, 44, 1, 1], [0, 16, 16, 16]]


@pytest.mark.parametrize("chroma", [False, True])
@pytest.mark.parametrize("channels", [0, 1, 3])
def test_decode_and_crop_jpeg(chroma, channels):
    """4:4:4 and gray files: TF's pixels exactly; 4:2:0: exactly TF's decode_jpeg + crop, and
    close to TF's cropped decode (libjpeg upsamples chroma at the window's edges itself)."""
    data = _tf_jpeg(NOISY, chroma_downsampling=chroma)
    for w in WINDOWS:
        want = _run(tft, lambda tf: tf.image.decode_and_crop_jpeg(data, w, channels=channels))
        got = _run(cft, lambda tf: tf.image.decode_and_crop_jpeg(data, w, channels=channels))
        assert got.shape == want.shape and got.dtype == want.dtype
        full = _run(tft, lambda tf: tf.image.decode_jpeg(data, channels=channels))
        np.testing.assert_array_equal(got, full[w[0]:w[0] + w[2], w[1]:w[1] + w[3]])
        if not chroma or channels == 1:
            np.testing.assert_array_equal(got, want, err_msg=str(w))
        else:
            assert np.abs(got.astype(int) - want).max() <= 64 and _psnr(got, want) > 20, w


def test_decode_and_crop_jpeg_ratio_io_and_static_shape():
    data = _tf_jpeg(SMOOTH, chroma_downsampling=False)
    for tf in (tft, cft):
        with tf.Graph().as_default():
            assert tf.io.decode_and_crop_jpeg is not None
            shape = tf.image.decode_and_crop_jpeg(data, [1, 2, 3, 4], channels=1).shape.as_list()
            assert len(shape) == 3 and shape[-1] == 1 and shape[0] in (None, 3) and shape[1] in (None, 4)
    w = [2, 3, 10, 12]
    want = _run(tft, lambda tf: tf.io.decode_and_crop_jpeg(data, w, ratio=2))
    got = _run(cft, lambda tf: tf.io.decode_and_crop_jpeg(data, w, ratio=2))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("window", [[0, 0, 0, 5], [2, 3, 0, 0], [-1, 0, 2, 2], [0, -1, 2, 2], [0, 0, 10, 46],
                                    [30, 0, 8, 4], [0, 0, -1, 2], [1, 2, 3]])
def test_decode_and_crop_jpeg_bad_windows(window):
    data = _tf_jpeg(SMOOTH)
    for tf in (tft, cft):
        with tf.Graph().as_default(), tf.Session() as s:
            w = tf.placeholder(tf.int32, [None])
            out = tf.image.decode_and_crop_jpeg(data, w)
            with pytest.raises(tf.errors.InvalidArgumentError):
                s.run(out, {w: window})


@pytest.mark.parametrize("window", [[[1, 2, 3, 4]], [1.0, 2, 3, 4]])
def test_decode_and_crop_jpeg_build_errors(window):
    def err(tf):
        with tf.Graph().as_default():
            try:
                tf.image.decode_and_crop_jpeg(b"", window)
            except Exception as e:  # noqa: BLE001 - comparing the class
                return type(e)
    want, got = err(tft), err(cft)
    assert want is not None and got is not None and issubclass(got, want), (got, want)


# -- adjust_jpeg_quality / random_jpeg_quality -----------------------------------------------------
@pytest.mark.parametrize("quality,floor", [(0, 20), (10, 35), (50, 40), (95, 40), (100, 40)])
def test_adjust_jpeg_quality_uint8(quality, floor):
    want = _run(tft, lambda tf: tf.image.adjust_jpeg_quality(SMOOTH, quality))
    got = _run(cft, lambda tf: tf.image.adjust_jpeg_quality(SMOOTH, quality))
    assert got.shape == want.shape == SMOOTH.shape and got.dtype == want.dtype == np.uint8
    assert _psnr(got, want) > floor
    # as lossy as TF's: the same distance to the input, within 1.5 dB
    assert abs(_psnr(got, SMOOTH) - _psnr(want, SMOOTH)) < 1.5
    if quality >= 50:
        assert _psnr(got, SMOOTH) > 30


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint16])
def test_adjust_jpeg_quality_dtypes(dtype):
    """Converted to uint8 (saturating) and back as TF: the same dtype, range and, on an image
    whose every pixel one JPEG block holds flat, exactly TF's values."""
    if np.dtype(dtype).kind == "f":
        img = np.concatenate([SMOOTH / 255.0, [[[2.0, -1.0, 0.5]] * 45]], 0).astype(dtype)
    else:
        img = (SMOOTH.astype(np.int64) * (np.iinfo(dtype).max // 255)).astype(dtype)
    flat = np.full((16, 16, 3), 1, dtype) * (img.reshape(-1, 3)[5])
    for x, exact in ((img, False), (flat, True)):
        want = _run(tft, lambda tf: tf.image.adjust_jpeg_quality(x, 90))
        got = _run(cft, lambda tf: tf.image.adjust_jpeg_quality(x, 90))
        assert got.dtype == want.dtype == dtype and got.shape == want.shape
        scale = 1.0 if np.dtype(dtype).kind == "f" else float(np.iinfo(dtype).max)
        if np.dtype(dtype).kind == "f":
            assert got.min() >= 0 and got.max() <= 1
        if exact:
            np.testing.assert_allclose(got, want, atol=1.01 * scale / 255)
        else:
            a8, b8 = (np.round(v.astype(np.float64) / scale * 255) for v in (want, got))
            assert _psnr(a8, b8) > 38


def test_adjust_jpeg_quality_static_shapes_and_tensor_quality():
    for tf in (tft, cft):
        with tf.Graph().as_default():
            assert tf.image.adjust_jpeg_quality(tf.placeholder(tf.float32, [5, 6, 3]), 50).shape.as_list() == [
                None, None, 3]
            assert tf.image.adjust_jpeg_quality(tf.placeholder(tf.uint8, [5, 6, 1]), 50).shape.as_list() == [
                None, None, 1]
    want = _run(tft, lambda tf: tf.image.adjust_jpeg_quality(SMOOTH, tf.constant(35) + 5))
    got = _run(cft, lambda tf: tf.image.adjust_jpeg_quality(SMOOTH, tf.constant(35) + 5))
    assert _psnr(got, want) > 40
    for tf in (tft, cft):
        with tf.Graph().as_default(), tf.Session() as s:
            q = tf.placeholder(tf.int32, [])
            out = tf.image.adjust_jpeg_quality(SMOOTH, q)
            s.run(out, {q: 100})
            for bad in (-1, 101):
                with pytest.raises(tf.errors.InvalidArgumentError):
                    s.run(out, {q: bad})


@pytest.mark.parametrize("make", [
    lambda tf: tf.image.adjust_jpeg_quality(SMOOTH[0], 5),
    lambda tf: tf.image.adjust_jpeg_quality(np.stack([SMOOTH, SMOOTH]), 5),
    lambda tf: tf.image.adjust_jpeg_quality(SMOOTH, 5.5),
    lambda tf: tf.image.random_jpeg_quality(SMOOTH, -1, 5),
    lambda tf: tf.image.random_jpeg_quality(SMOOTH, 5, 101),
    lambda tf: tf.image.random_jpeg_quality(SMOOTH, 5, 5),
    lambda tf: tf.image.random_jpeg_quality(SMOOTH, 6, 5),
])
def test_jpeg_quality_build_errors(make):
    def err(tf):
        with tf.Graph().as_default():
            try:
                make(tf)
            except Exception as e:  # noqa: BLE001 - comparing the class and message
                return type(e), str(e)
    want, got = err(tft), err(cft)
    assert want is not None and got is not None and issubclass(got[0], want[0]), (got, want)
    if want[0] is ValueError and want[1].startswith(("jpeg encoding", "`min_jpeg")):
        assert got[1] == want[1]


def test_jpeg_quality_run_time_errors():
    """Two channels: TF's run-time InvalidArgumentError in both."""
    for tf in (tft, cft):
        with tf.Graph().as_default(), tf.Session() as s:
            with pytest.raises(tf.errors.InvalidArgumentError):
                s.run(tf.image.adjust_jpeg_quality(SMOOTH[..., :2], 50))


def test_random_jpeg_quality():
    for tf in (tft, cft):
        with tf.Graph().as_default(), tf.Session() as s:
            out = tf.image.random_jpeg_quality(SMOOTH, 60, 95, seed=3)
            assert out.dtype == tf.uint8 and out.shape.as_list() == [None, None, 3]
            vals = [s.run(out) for _ in range(3)]
            for v in vals:
                assert v.shape == SMOOTH.shape and _psnr(v, SMOOTH) > 30
    f = _run(cft, lambda tf: tf.image.random_jpeg_quality(SMOOTH / 255.0, 0, 2))
    assert f.dtype == np.float64 and _psnr(f * 255, SMOOTH) < 30  # quality 0 or 1: very lossy


def test_transpose():
    x = R.randn(2, 3, 4, 2).astype(np.float32)
    for arg in (x, x[0]):
        want = _run(tft, lambda tf: tf.image.transpose(arg))
        got = _run(cft, lambda tf: tf.image.transpose(arg))
        np.testing.assert_array_equal(got, want)
    for tf in (tft, cft):
        assert hasattr(tf.image, "transpose_image")
        with tf.Graph().as_default():
            assert tf.image.transpose(tf.placeholder(tf.float32, [None, 3, 4, 1])).shape.as_list() == [None, 4, 3, 1]
            with pytest.raises(ValueError):
                tf.image.transpose(np.zeros((2, 2), np.float32))


# -- assert_equal_graph_def ------------------------------------------------------------------------
BASE = ('node{name:"a" op:"Const" attr{key:"dtype" value{type:DT_FLOAT}} attr{key:"value" value{tensor{'
        'dtype:DT_FLOAT tensor_shape{dim{size:2}} float_val:1 float_val:2}}}} '
        'node{name:"b" op:"Add" input:"a" input:"a:0" input:"^c" input:"^d" device:"/cpu:0"} '
        'node{name:"c" op:"NoOp"} node{name:"d" op:"NoOp"}')
PAIRS = [
    (BASE, BASE),
    (BASE, BASE.replace('input:"a" input:"a:0"', 'input:"a:0" input:"a"')),
    (BASE, BASE.replace('input:"^c" input:"^d"', 'input:"^d" input:"^c"')),
    (BASE, BASE.replace('input:"^c" input:"^d"', 'input:"^d" input:"^d"')),
    (BASE, BASE.replace('op:"Add"', 'op:"Sub"')),
    (BASE, BASE.replace("/cpu:0", "/gpu:0")),
    (BASE, BASE.replace('input:"^c" ', "")),
    (BASE, BASE.replace('input:"a" input:"a:0"', 'input:"a" input:"c"')),
    (BASE, BASE.replace("float_val:2", "float_val:3")),
    (BASE, BASE.replace('node{name:"d" op:"NoOp"}', "")),
    (BASE.replace('node{name:"d" op:"NoOp"}', ""), BASE),
    (BASE.replace('node{name:"d" op:"NoOp"}', 'node{name:"d" op:"NoOp" device:"/cpu:0" attr{key:"k" value{i:3}}}'),
     BASE.replace('node{name:"d" op:"NoOp"}', "")),
    (BASE, BASE.replace('attr{key:"dtype" value{type:DT_FLOAT}} ', "")),
    (BASE.replace('attr{key:"dtype" value{type:DT_FLOAT}} ', ""), BASE),
    (BASE, BASE.replace('op:"NoOp"}', 'op:"NoOp" attr{key:"_x" value{i:3}}}', 1)),
    (BASE, BASE.replace('op:"NoOp"}', 'op:"NoOp" attr{key:"x" value{i:3}}}', 1)),
    (BASE, BASE.replace('op:"NoOp"}', 'op:"NoOp" attr{key:"x" value{s:"q\\n"}}}', 1)),
    (BASE, BASE.replace('op:"NoOp"}', 'op:"NoOp" attr{key:"x" value{f:1.5}}}', 1)),
    (BASE, BASE.replace('op:"NoOp"}', 'op:"NoOp" attr{key:"x" value{f:0.1}}}', 1)),
    (BASE, BASE.replace('op:"NoOp"}', 'op:"NoOp" attr{key:"x" value{b:true}}}', 1)),
    (BASE, BASE.replace('op:"NoOp"}', 'op:"NoOp" attr{key:"x" value{shape{dim{size:-1} dim{size:2}}}}}', 1)),
    (BASE, BASE.replace('op:"NoOp"}', 'op:"NoOp" attr{key:"x" value{list{i:1 i:2}}}}', 1)),
    (BASE.replace('op:"NoOp"}', 'op:"NoOp" attr{key:"x" value{i:4}}}', 1),
     BASE.replace('op:"NoOp"}', 'op:"NoOp" attr{key:"x" value{i:3}}}', 1)),
    ('node{name:"a" op:"X" input:"b" input:"^c"}', 'node{name:"a" op:"X" input:"^c" input:"b"}'),
    ('node{name:"a" op:"X" input:"b"}', 'node{name:"a" op:"X" input:"b" input:"c"}'),
    ('node{name:"a" op:"X" input:"b:0"}', 'node{name:"a" op:"X" input:"b"}'),
    ('node{name:"a" op:"X" input:"^c" input:"^c" input:"^d"}', 'node{name:"a" op:"X" input:"^c" input:"^d" input:"^d"}'),
    ('node{name:"a" op:"X" input:"b:1"}', 'node{name:"a" op:"X" input:"b"}'),
    ('node{name:"a" op:"X" attr{key:"t" value{tensor{dtype:DT_INT32 tensor_shape{dim{size:5}} int_val:1 int_val:2 '
     'int_val:3 int_val:4 int_val:5}}}}', ""),
]


def _both(a_text, b_text, **kw):
    from google.protobuf import text_format
    a, b = (text_format.Parse(t, tft.GraphDef()) for t in (a_text, b_text))
    ca, cb = (cf_proto.GraphDef.FromString(g.SerializeToString()) for g in (a, b))
    out = []
    for fn, x, y in ((tft.test.assert_equal_graph_def, a, b), (cft.test.assert_equal_graph_def, ca, cb)):
        try:
            fn(x, y, **kw)
            out.append(None)
        except AssertionError as e:
            out.append(str(e))
    return out


@pytest.mark.parametrize("k", range(len(PAIRS)))
def test_assert_equal_graph_def_messages(k):
    want, got = _both(*PAIRS[k])
    assert got == want


SAVE = 'node{name:"s" op:"Const" attr{key:"value" value{tensor{dtype:DT_STRING string_val:"_temp_%s/part"}}}}'
TABLE = 'node{name:"h" op:"HashTableV2" attr{key:"shared_name" value{s:"%s"}}}'


@pytest.mark.parametrize("a,b,kw", [
    (SAVE % ("0" * 32), SAVE % ("1" * 32), {"checkpoint_v2": True}),
    (SAVE % ("0" * 32), SAVE % ("1" * 32), {}),
    (TABLE % "hash_table_1a-b", TABLE % "hash_table_2", {"hash_table_shared_name": True}),
    (TABLE % "hash_table_1a-b", TABLE % "hash_table_2", {}),
    (TABLE % "table_1", TABLE % "table_2", {"hash_table_shared_name": True}),
])
def test_assert_equal_graph_def_randomized_names(a, b, kw):
    want, got = _both(a, b, **kw)
    assert (got is None) == (want is None)
    if want is not None:
        assert got.split(" with value")[0] == want.split(" with value")[0]


def _graph(tf, order, value=2.0, ctrl=True):
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


def test_assert_equal_graph_def_collflow_graphs():
    """Graphs built by collflow: node order ignored; a changed constant or a dropped control
    input named as TF names them in the same graph built by TF."""
    cft.test.assert_equal_graph_def(_graph(cft, "apn"), _graph(cft, "npa"))
    for kw, in (({"value": 3.0},), ({"ctrl": False},)):
        msgs = []
        for tf in (tft, cft):
            try:
                tf.test.assert_equal_graph_def(_graph(tf, "apn", **kw), _graph(tf, "apn"))
            except AssertionError as e:
                msgs.append(str(e))
        assert len(msgs) == 2 and msgs[1] == msgs[0]


def test_assert_equal_graph_def_type_errors():
    gd = _graph(cft, "apn")
    for args, want in (((1, gd), "Expected tf.GraphDef for actual, got int"),
                       ((gd, "x"), "Expected tf.GraphDef for expected, got str")):
        for tf, g in ((tft, _graph(tft, "apn")), (cft, gd)):
            a, b = (g if x is gd else x for x in args)
            with pytest.raises(TypeError) as e:
                tf.test.assert_equal_graph_def(a, b)
            assert str(e.value) == want
