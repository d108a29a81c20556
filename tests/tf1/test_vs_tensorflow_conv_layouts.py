"""Differential fuzz against TensorFlow 1.x: NCHW and explicit padding in the 2-D image ops,
NCW and NCDHW in the 1-d and 3-d ones, and tf.nn.pool's dilation and refusals.

Random configurations (batch 1-2, 1-3 channels, 3-8 pixels a side, windows 1-3, strides 1-2,
dilations, SAME/VALID or explicit pairs) of conv2d, conv2d_transpose, the pools, bias_add,
depthwise and separable convolutions in NCHW, conv2d with explicit padding in both formats,
and tf.nn.pool with a dilation.  Values and the gradients of every input must agree.

TF's CPU kernels refuse some of these (Conv2DBackpropFilter and Conv2DBackpropInput in NCHW
"only support NHWC", so an NCHW conv2d with explicit padding has no gradient there, and
with explicit padding "do not yet support dilation rates larger than 1"): for those the
values are compared, and the gradient is collflow's NHWC one transposed (its
finite-difference check is in tests/gradtable_nn.py).  Skipped cleanly without TensorFlow.
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = pytest.mark.timeout(600)


# TF 2.21 on the CPU gets this one wrong in a graph that also takes the gradients (1 input
# channel, VALID, a 2x2 window striding 2 over a width of 3, stride 1 down a height of 7: its
# outputs are the right ones at every other row, then zeros), in NCHW and NHWC alike, while
# the same NHWC conv alone is right.  It is checked against NumPy below instead.
TF_WRONG = {"conv2d_nchw-80"}


def _t(tf, a):   # NHWC -> NCHW
    return tf.transpose(a, [0, 3, 1, 2])


def _b(tf, a):   # NCHW -> NHWC
    return tf.transpose(a, [0, 2, 3, 1])


def _same_or_valid(i, k, s, pad):
    return -(-i // s) if pad == "SAME" else (i - k) // s + 1


def make_case(seed):
    """(name, fn(tf, *inputs), input shapes, gradients comparable with TF's)."""
    r = np.random.default_rng(seed)
    kinds = ["conv2d_nchw", "conv2d_explicit", "conv2d_nchw_explicit", "pool_nchw", "bias_nchw",
             "conv2d_transpose_nchw", "depthwise_nchw", "separable_nchw", "pool_dilated", "pool_v2_nchw"]
    kind = kinds[seed % len(kinds)]
    pad = str(r.choice(["SAME", "VALID"]))
    n, c, co = int(r.integers(1, 3)), int(r.integers(1, 4)), int(r.integers(1, 4))
    h, w = int(r.integers(3, 9)), int(r.integers(3, 9))
    kh, kw = int(r.integers(1, 4)), int(r.integers(1, 4))
    sh, sw = int(r.integers(1, 3)), int(r.integers(1, 3))
    d = int(r.integers(1, 3)) if sh == sw == 1 else 1
    name = f"{kind}-{seed}"
    x, f = (n, h, w, c), (kh, kw, c, co)
    if kind == "conv2d_nchw":
        return name, lambda tf, a, k: _b(tf, tf.nn.conv2d(_t(tf, a), k, [1, 1, sh, sw], pad, data_format="NCHW",
                                                         dilations=[1, 1, d, d])), [x, f], True
    pairs = [int(r.integers(0, 3)) for _ in range(4)]
    if kind == "conv2d_explicit":
        p = [[0, 0], pairs[:2], pairs[2:], [0, 0]]
        # TF's CPU gradient kernels refuse a dilation with explicit padding
        return name, lambda tf, a, k: tf.nn.conv2d(a, k, [1, sh, sw, 1], p, dilations=[1, d, d, 1]), [x, f], d == 1
    if kind == "conv2d_nchw_explicit":
        p = [[0, 0], [0, 0], pairs[:2], pairs[2:]]
        return name, lambda tf, a, k: _b(tf, tf.nn.conv2d(_t(tf, a), k, [1, 1, sh, sw], p, data_format="NCHW",
                                                         dilations=[1, 1, d, d])), [x, f], False
    if kind == "pool_nchw":
        op = str(r.choice(["max_pool", "avg_pool"]))
        return name, lambda tf, a: _b(tf, getattr(tf.nn, op)(_t(tf, a), [1, 1, kh, kw], [1, 1, sh, sw], pad,
                                                             data_format="NCHW")), [x], True
    if kind == "bias_nchw":
        shape = (n, c) + tuple(int(r.integers(1, 4)) for _ in range(int(r.integers(1, 4))))
        return name, lambda tf, a, bias: tf.nn.bias_add(a, bias, data_format="NCHW"), [shape, (c,)], True
    if kind == "conv2d_transpose_nchw":
        out = [n, co, h * sh if pad == "SAME" else (h - 1) * sh + kh, w * sw if pad == "SAME" else (w - 1) * sw + kw]
        return name, lambda tf, a, k: _b(tf, tf.nn.conv2d_transpose(_t(tf, a), k, out, [1, 1, sh, sw], pad,
                                                                   data_format="NCHW")), [x, (kh, kw, co, c)], True
    mult = int(r.integers(1, 3))
    if kind == "depthwise_nchw":
        return name, lambda tf, a, k: _b(tf, tf.nn.depthwise_conv2d(_t(tf, a), k, [1, 1, sh, sh], pad, rate=[d, d],
                                                                   data_format="NCHW")), [x, (kh, kw, c, mult)], True
    if kind == "separable_nchw":
        return name, lambda tf, a, k, p: _b(tf, tf.nn.separable_conv2d(_t(tf, a), k, p, [1, 1, sh, sh], pad,
                                                                      data_format="NCHW")), \
            [x, (kh, kw, c, mult), (1, 1, c * mult, co)], True
    ptype = str(r.choice(["MAX", "AVG"]))
    if kind == "pool_dilated":
        dr = [int(r.integers(1, 3)), int(r.integers(2, 4))]
        fmt = str(r.choice(["NHWC", "NCHW"]))
        if fmt == "NHWC":
            return name, lambda tf, a: tf.nn.pool(a, [kh, kw], ptype, "VALID", dilation_rate=dr), [x], True
        return name, lambda tf, a: _b(tf, tf.nn.pool(_t(tf, a), [kh, kw], ptype, "VALID", dilation_rate=dr,
                                                     data_format="NCHW")), [x], True
    op = "max_pool_v2" if ptype == "MAX" else "avg_pool_v2"
    return name, lambda tf, a: _b(tf, getattr(tf.nn, op)(_t(tf, a), [kh, kw], [sh, sw], pad,
                                                         data_format="NCHW")), [x], True


def _first(tf, a):   # channels moved second, any rank
    r = len(a.shape)
    return tf.transpose(a, [0, r - 1, *range(1, r - 1)])


def _last(tf, a):
    r = len(a.shape)
    return tf.transpose(a, [0, *range(2, r), 1])


def make_case_nd(seed):
    """1-d and 3-d channels-first cases (NCW, NCDHW) and tf.nn.convolution / pool in them."""
    r = np.random.default_rng(1000 + seed)
    kinds = ["conv1d_ncw", "convolution_first", "pool_first", "conv3d_ncdhw", "pool3d_ncdhw",
             "conv3d_transpose_ncdhw", "pool1d_ncw", "pool_v2_first"]
    kind = kinds[seed % len(kinds)]
    pad = str(r.choice(["SAME", "VALID"]))
    n, c, co = int(r.integers(1, 3)), int(r.integers(1, 4)), int(r.integers(1, 4))
    nd = 1 if kind in ("conv1d_ncw", "pool1d_ncw") else (3 if "3d" in kind else int(r.integers(1, 4)))
    sizes = [int(r.integers(3, 7)) for _ in range(nd)]
    ks = [int(r.integers(1, 3)) for _ in range(nd)]
    st = [int(r.integers(1, 3)) for _ in range(nd)]
    fmt = {1: "NCW", 2: "NCHW", 3: "NCDHW"}[nd]
    x = (n, *sizes, c)
    name = f"{kind}-{seed}"
    if kind == "conv1d_ncw":
        return name, lambda tf, a, k: _last(tf, tf.nn.conv1d(_first(tf, a), k, st[0], pad, data_format="NCW")), \
            [x, (ks[0], c, co)]
    if kind == "convolution_first":
        d = [int(r.integers(1, 3)) for _ in range(nd)] if all(v == 1 for v in st) else None
        return name, lambda tf, a, k: _last(tf, tf.nn.convolution(_first(tf, a), k, pad, strides=st, dilation_rate=d,
                                                                  data_format=fmt)), [x, (*ks, c, co)]
    if kind == "pool_first":
        st2 = [min(a, b) for a, b in zip(st, ks)]
        ptype = str(r.choice(["MAX", "AVG"]))
        return name, lambda tf, a: _last(tf, tf.nn.pool(_first(tf, a), ks, ptype, pad, strides=st2,
                                                        data_format=fmt)), [x]
    if kind == "conv3d_ncdhw":
        return name, lambda tf, a, k: _last(tf, tf.nn.conv3d(_first(tf, a), k, [1, 1, *st], pad,
                                                             data_format="NCDHW")), [x, (*ks, c, co)]
    if kind == "pool3d_ncdhw":
        op = str(r.choice(["max_pool3d", "avg_pool3d"]))
        return name, lambda tf, a: _last(tf, getattr(tf.nn, op)(_first(tf, a), [1, 1, *ks], [1, 1, *st], pad,
                                                                data_format="NCDHW")), [x]
    if kind == "conv3d_transpose_ncdhw":
        out = [n, co] + [v * s if pad == "SAME" else (v - 1) * s + k for v, s, k in zip(sizes, st, ks)]
        return name, lambda tf, a, k: _last(tf, tf.nn.conv3d_transpose(_first(tf, a), k, out, [1, 1, *st], pad,
                                                                       data_format="NCDHW")), [x, (*ks, co, c)]
    if kind == "pool1d_ncw":
        op = str(r.choice(["max_pool1d", "avg_pool1d"]))
        return name, lambda tf, a: _last(tf, getattr(tf.nn, op)(_first(tf, a), ks[0], st[0], pad,
                                                                data_format="NCW")), [x]
    op = str(r.choice(["max_pool_v2", "avg_pool_v2"]))
    return name, lambda tf, a: _last(tf, getattr(tf.nn, op)(_first(tf, a), ks, st, pad, data_format=fmt)), [x]


def _fits(case):
    """Configurations whose windows fit the (padded) input: the others are refused by both."""
    name, fn, specs = case[:3]
    try:
        tfdiff.evaluate(cft, fn, [np.zeros(s, np.float32) for s in specs], 7)
    except ValueError:
        return False
    return True


CASES = [c for c in (make_case(s) for s in range(120)) if _fits(c) and c[0] not in TF_WRONG]


CASES_ND = [c for c in (make_case_nd(s) for s in range(64)) if _fits(c)]


@pytest.mark.parametrize("case", CASES_ND, ids=[c[0] for c in CASES_ND])
def test_channels_first_1d_3d_match_tensorflow(case):
    tfdiff.check_case(case, tft, cft, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_layouts_match_tensorflow(case):
    name, fn, specs, tf_has_gradient = case
    if tf_has_gradient:
        tfdiff.check_case(case[:3], tft, cft, rtol=1e-4, atol=1e-4)
        return
    r = np.random.default_rng(sum(map(ord, name)))
    values = [tfdiff.make_input(r, s) for s in specs]

    def forward(tf):
        g = tf.Graph()
        with g.as_default():
            xs = [tf.placeholder(tf.float32, v.shape) for v in values]
            y = fn(tf, *xs)
            with tf.Session(graph=g) as s:
                return s.run(y, dict(zip(xs, values)))
    np.testing.assert_allclose(forward(cft), forward(tft), rtol=1e-4, atol=1e-4)


def test_pool_refusals_match_tensorflow():
    # tf.nn.pool refuses what TF refuses, as a ValueError; TF2's max_pool takes strides > window
    x = np.zeros((1, 6, 6, 2), np.float32)
    for kwargs in ({"dilation_rate": [2, 2], "padding": "SAME"}, {"strides": [2, 2], "padding": "VALID",
                                                                 "window_shape": [1, 1]},
                   {"strides": [2, 1], "dilation_rate": [1, 2], "padding": "VALID"}):
        args = {"window_shape": [2, 2], "pooling_type": "MAX", **kwargs}
        for tf in (tft, cft):
            with tf.Graph().as_default():
                with pytest.raises(ValueError):
                    tf.nn.pool(tf.constant(x), **args)
    for tf in (tft, cft):
        with tf.Graph().as_default():
            assert tf.nn.max_pool_v2(tf.constant(x), 1, 2, "VALID").shape.as_list() == [1, 3, 3, 2]


def test_conv2d_nchw_where_tensorflow_is_wrong_matches_numpy():
    # TF_WRONG's configuration, values and gradients (the NHWC twin's, transposed) against a
    # direct NumPy correlation
    r = np.random.default_rng(1)
    x = r.uniform(-2, 2, (2, 7, 3, 1)).astype(np.float32)
    k = r.uniform(-2, 2, (2, 2, 1, 1)).astype(np.float32)
    ref = np.stack([np.sum(x[:, i:i + 2, 0:2, 0] * k[:, :, 0, 0], axis=(1, 2)) for i in range(6)], 1)
    with cft.Graph().as_default():
        a = cft.constant(x)
        y = cft.nn.conv2d(_t(cft, a), k, [1, 1, 1, 2], "VALID", data_format="NCHW")
        gx = cft.gradients(cft.reduce_sum(y * np.arange(6, dtype=np.float32).reshape(1, 1, 6, 1)), a)[0]
        with cft.Session() as s:
            got, gxv = s.run([y, gx])
    np.testing.assert_allclose(got[:, 0, :, 0], ref, rtol=1e-5, atol=1e-5)
    want = np.zeros_like(x)
    for i in range(6):
        want[:, i:i + 2, 0:2, 0] += i * k[:, :, 0, 0]
    np.testing.assert_allclose(gxv, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("training", [True, False])
def test_fused_batch_norm_nchw_matches_tensorflow(training):
    x0 = np.random.default_rng(4).uniform(-2, 2, (2, 3, 4, 5)).astype(np.float32)

    def run(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float32, x0.shape)
            scale, offset = tf.constant([1.0, 2.0, 0.5]), tf.constant([0.0, 1.0, -1.0])
            stats = {} if training else {"mean": tf.constant([0.1, -0.2, 0.3]), "variance": tf.constant([1., 2., .5])}
            y, m, v = tf.nn.fused_batch_norm(x, scale, offset, data_format="NCHW", is_training=training, **stats)
            w = np.random.default_rng(5).uniform(0.5, 1.5, x0.shape).astype(np.float32)
            grads = tf.gradients(tf.reduce_sum(y * w), [x, scale, offset])
            with tf.Session(graph=g) as s:
                return s.run([y, m, v] + grads, {x: x0})
    for k, (a, b) in enumerate(zip(run(cft), run(tft))):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"fetch {k}")


def test_nchw_with_shapes_known_only_at_run_time():
    # batch and spatial sizes unknown when the graph is built: static shapes and values as TF's
    x0 = np.random.default_rng(0).uniform(-1, 1, (2, 3, 6, 5)).astype(np.float32)
    w0 = np.random.default_rng(1).uniform(-1, 1, (3, 3, 3, 4)).astype(np.float32)
    wt = np.random.default_rng(2).uniform(-1, 1, (3, 3, 2, 3)).astype(np.float32)

    def run(tf):
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, [None, 3, None, None])
            sh = tf.shape(x)
            outs = [tf.nn.conv2d(x, w0, [1, 1, 2, 1], "SAME", data_format="NCHW"),
                    tf.nn.conv2d_transpose(x, wt, tf.stack([sh[0], 2, sh[2] * 2, sh[3] * 2]), [1, 1, 2, 2], "SAME",
                                           data_format="NCHW"),
                    tf.nn.max_pool(x, [1, 1, 2, 2], [1, 1, 2, 2], "SAME", data_format="NCHW"),
                    tf.nn.bias_add(x, tf.constant([1.0, 2.0, 3.0]), data_format="NCHW"),
                    tf.nn.fused_batch_norm(x, tf.ones([3]), tf.zeros([3]), data_format="NCHW")[0]]
            grads = [tf.gradients(tf.reduce_sum(o * o), x)[0] for o in outs]
            with tf.Session() as s:
                return [o.shape.as_list() for o in outs], s.run(outs + grads, {x: x0})
    (cs, cv), (ts, tv) = run(cft), run(tft)
    assert cs == ts
    for k, (a, b) in enumerate(zip(cv, tv)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"fetch {k}")


_R = np.random.default_rng(21)
_X4, _X3, _X5 = (_R.uniform(-1, 1, s).astype(np.float32) for s in [(2, 3, 6, 5), (2, 3, 7), (1, 2, 4, 5, 4)])
_C = {k: _R.uniform(-1, 1, s).astype(np.float32) for k, s in {
    "dw": (2, 2, 3, 2), "dy_dw": (2, 6, 5, 4), "f1t": (3, 2, 3), "dy3": (1, 3, 3, 4, 3), "pw": (1, 1, 6, 4),
    "f4": (2, 2, 3, 4)}.items()}
MORE = {
    "depthwise_native_backprop_input": lambda tf: tf.nn.depthwise_conv2d_native_backprop_input(
        [2, 3, 6, 5], _C["dw"], tf.constant(_C["dy_dw"]), [1, 1, 1, 1], "VALID", data_format="NCHW"),
    "depthwise_native_backprop_filter": lambda tf: tf.nn.depthwise_conv2d_native_backprop_filter(
        tf.constant(_X4), [2, 2, 3, 2], tf.constant(_C["dy_dw"]), [1, 1, 1, 1], "VALID", data_format="NCHW"),
    "conv1d_transpose_ncw": lambda tf: tf.nn.conv1d_transpose(tf.constant(_X3), _C["f1t"], [2, 2, 14], 2, "SAME",
                                                              data_format="NCW"),
    "conv3d_backprop_filter_v2_ncdhw": lambda tf: tf.nn.conv3d_backprop_filter_v2(
        tf.constant(_X5), [2, 2, 2, 2, 3], tf.constant(_C["dy3"]), [1, 1, 1, 1, 1], "VALID", data_format="NCDHW"),
    "separable_nchw_rate": lambda tf: tf.nn.separable_conv2d(tf.constant(_X4), _C["dw"], _C["pw"], [1, 1, 1, 1],
                                                             "SAME", rate=[2, 2], data_format="NCHW"),
    "convolution_nchw_dilated": lambda tf: tf.nn.convolution(tf.constant(_X4), _C["f4"], "SAME", dilation_rate=[2, 1],
                                                             data_format="NCHW"),
    "pool_nchw_dilated": lambda tf: tf.nn.pool(tf.constant(_X4), [2, 2], "MAX", "VALID", dilation_rate=[2, 2],
                                               data_format="NCHW"),
    "bias_add_ncw": lambda tf: tf.nn.bias_add(tf.constant(_X3), tf.constant([1.0, 2.0, 3.0]), data_format="NCW"),
}


@pytest.mark.parametrize("name", sorted(MORE))
def test_more_channels_first_ops_match_tensorflow(name):
    def run(tf):
        with tf.Graph().as_default():
            y = MORE[name](tf)
            with tf.Session() as s:
                return s.run(y)
    got, want = run(cft), run(tft)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
