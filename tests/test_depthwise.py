"""Depthwise, separable and atrous convolutions (graph/ops/depthwise_ops.py): values against
loops written from TensorFlow's definitions, TF1's argument rules, the separable layer.
(Gradients: the gradient table, tests/gradtable_nn.py; against TensorFlow itself:
tests/tf1/test_vs_tensorflow_more.py.)"""
import numpy as np
import pytest

import collflow as cf

RNG = np.random.default_rng(7)


def _out_size(size, k, s, d, padding):
    eff = (k - 1) * d + 1
    if padding == "VALID":
        return (size - eff) // s + 1, 0
    out = -(-size // s)
    return out, max((out - 1) * s + eff - size, 0) // 2


def ref_depthwise(x, w, s, d, padding):
    """out[n, y, x, c * M + m] = sum_ij in[n, y*s + i*d - pad, x*s + j*d - pad, c] * w[i, j, c, m]."""
    n, h, wd, c = x.shape
    kh, kw, _, m = w.shape
    oh, pt = _out_size(h, kh, s[0], d[0], padding)
    ow, pl = _out_size(wd, kw, s[1], d[1], padding)
    out = np.zeros((n, oh, ow, c, m))
    for y in range(oh):
        for xx in range(ow):
            for i in range(kh):
                for j in range(kw):
                    r, q = y * s[0] + i * d[0] - pt, xx * s[1] + j * d[1] - pl
                    if 0 <= r < h and 0 <= q < wd:
                        out[:, y, xx] += x[:, r, q, :, None] * w[i, j]
    return out.reshape(n, oh, ow, c * m)


def _run(fetches, feeds=None):
    with cf.Session() as s:
        s.run(cf.global_variables_initializer())
        return s.run(fetches, feeds)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("s,d,m", [((1, 1), (1, 1), 1), ((2, 2), (1, 1), 3), ((2, 1), (1, 1), 2),
                                   ((1, 1), (2, 3), 1), ((3, 3), (1, 1), 1)])
def test_depthwise_matches_loops(padding, s, d, m):
    x = RNG.standard_normal((2, 7, 8, 3))
    w = RNG.standard_normal((3, 2, 3, m))
    with cf.Graph().as_default():
        y = cf.nn.depthwise_conv2d_native(cf.constant(x), cf.constant(w), [1, s[0], s[1], 1], padding,
                                          dilations=[1, d[0], d[1], 1])
        assert y.shape.as_list() == list(ref_depthwise(x, w, s, d, padding).shape)
        np.testing.assert_allclose(_run(y), ref_depthwise(x, w, s, d, padding), rtol=1e-12, atol=1e-12)


def test_depthwise_rate_and_tf1_argument_rules():
    x = RNG.standard_normal((1, 6, 6, 2))
    w = RNG.standard_normal((2, 2, 2, 1))
    with cf.Graph().as_default():
        y = cf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", rate=[2, 2])
        np.testing.assert_allclose(_run(y), ref_depthwise(x, w, (1, 1), (2, 2), "SAME"), rtol=1e-12)
        with pytest.raises(cf.InvalidArgumentError, match="strides > 1 .* rate > 1"):
            cf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME", rate=[2, 2])
        with pytest.raises(cf.InvalidArgumentError, match="data_format must be 'NHWC' or 'NCHW'"):
            cf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", data_format="NWHC")
        # NCHW: strides in its order, rate spatial; the NHWC answer transposed
        yc = cf.nn.depthwise_conv2d(np.transpose(x, (0, 3, 1, 2)), w, [1, 1, 1, 1], "SAME", rate=[2, 2],
                                    data_format="NCHW")
        np.testing.assert_allclose(_run(yc), np.transpose(ref_depthwise(x, w, (1, 1), (2, 2), "SAME"), (0, 3, 1, 2)),
                                   rtol=1e-12)
        with pytest.raises(ValueError, match="2 channels .* expects 3"):
            cf.nn.depthwise_conv2d(x, np.zeros((2, 2, 3, 1)), [1, 1, 1, 1], "SAME")


def test_depthwise_channel_mismatch_at_run_time_is_a_clear_error():
    with cf.Graph().as_default():
        xp = cf.placeholder(cf.float64, (None, 4, 4, None))
        y = cf.nn.depthwise_conv2d(xp, np.ones((2, 2, 3, 1)), [1, 1, 1, 1], "VALID")
        with pytest.raises(cf.InvalidArgumentError, match="input has 2 channels .* expects 3"):
            _run(y, {xp: np.ones((1, 4, 4, 2))})


def test_separable_is_depthwise_then_pointwise():
    x = RNG.standard_normal((2, 6, 5, 3))
    dw = RNG.standard_normal((3, 3, 3, 2))
    pw = RNG.standard_normal((1, 1, 6, 4))
    with cf.Graph().as_default():
        y = cf.nn.separable_conv2d(x, dw, pw, [1, 2, 2, 1], "SAME")
        want = ref_depthwise(x, dw, (2, 2), (1, 1), "SAME") @ pw[0, 0]
        np.testing.assert_allclose(_run(y), want, rtol=1e-12, atol=1e-12)
        with pytest.raises(cf.InvalidArgumentError, match=r"pointwise filter must be \[1, 1, in, out\]"):
            cf.nn.separable_conv2d(x, dw, np.ones((3, 1, 6, 4)), [1, 1, 1, 1], "SAME")
        with pytest.raises(cf.InvalidArgumentError, match="must take the depthwise output's 6 channels"):
            cf.nn.separable_conv2d(x, dw, np.ones((1, 1, 5, 4)), [1, 1, 1, 1], "SAME")


def test_atrous_is_dilated_conv2d_and_its_transpose_the_gradient():
    x = RNG.standard_normal((1, 7, 7, 2))
    w = RNG.standard_normal((3, 3, 2, 3))
    with cf.Graph().as_default():
        y = cf.nn.atrous_conv2d(x, w, 2, "SAME")
        ref = cf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", dilations=2)
        dy = RNG.standard_normal((1, 7, 7, 3))
        t = cf.nn.atrous_conv2d_transpose(dy, w, [1, 7, 7, 2], 2, "SAME")
        xp = cf.placeholder(cf.float64, (1, 7, 7, 2))
        (gx,) = cf.gradients(cf.nn.conv2d(xp, w, [1, 1, 1, 1], "SAME", dilations=2), [xp], grad_ys=[dy])
        yv, rv, tv, gv = _run([y, ref, t, gx], {xp: x})
        np.testing.assert_allclose(yv, rv, rtol=1e-12)
        np.testing.assert_allclose(tv, gv, rtol=1e-12)
        with pytest.raises(cf.InvalidArgumentError, match="rate must be positive"):
            cf.nn.atrous_conv2d(x, w, 0, "SAME")


def test_separable_layer_variables_reuse_and_training():
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((16, 8, 8, 3)).astype(np.float32)
    ys = (xs[:, :4, :4, 0].sum((1, 2)) > 0).astype(np.int32)
    with cf.Graph().as_default():
        x = cf.placeholder(cf.float32, (None, 8, 8, 3))
        y = cf.placeholder(cf.int32, (None,))
        h = cf.layers.separable_conv2d(x, 8, 3, strides=2, padding="same", depth_multiplier=2,
                                       activation=cf.nn.relu, name="sep")
        shapes = {v.name: v.shape.as_list() for v in cf.trainable_variables()}
        assert shapes == {"sep/depthwise_kernel:0": [3, 3, 3, 2], "sep/pointwise_kernel:0": [1, 1, 6, 8],
                          "sep/bias:0": [8]}
        assert h.shape.as_list() == [None, 4, 4, 8]
        with cf.variable_scope("", reuse=True):
            h2 = cf.layers.separable_conv2d(x, 8, 3, strides=2, padding="same", depth_multiplier=2,
                                            activation=cf.nn.relu, name="sep")
        assert len(cf.trainable_variables()) == 3
        layer = cf.layers.SeparableConv2D(4, (2, 3), padding="valid", name="cls")
        h3 = layer(h)
        assert h3.shape.as_list() == [None, 3, 2, 4]
        logits = cf.layers.dense(cf.layers.flatten(h3), 2)
        loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = cf.train.AdamOptimizer(0.01).minimize(loss)
        with cf.Session() as s:
            s.run(cf.global_variables_initializer())
            a, b = s.run([h, h2], {x: xs})
            np.testing.assert_array_equal(a, b)
            losses = [s.run([loss, train], {x: xs, y: ys})[0] for _ in range(60)]
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.parametrize("xs,ws", [((2, 5, 5, 0), (3, 3, 0, 2)), ((2, 5, 5, 3), (3, 3, 3, 0)),
                                   ((0, 5, 5, 3), (3, 3, 3, 2))])
def test_depthwise_with_an_empty_dimension(xs, ws):
    """No channels, a multiplier of 0 or an empty batch: empty outputs, zero gradients."""
    x, w = np.ones(xs), np.ones(ws)
    with cf.Graph().as_default():
        xp, wp = cf.placeholder(cf.float64, xs), cf.placeholder(cf.float64, ws)
        y = cf.nn.depthwise_conv2d(xp, wp, [1, 1, 1, 1], "SAME")
        gx, gw = cf.gradients(cf.reduce_sum(y), [xp, wp])
        yv, gxv, gwv = _run([y, gx, gw], {xp: x, wp: w})
    assert yv.shape == (xs[0], 5, 5, xs[3] * ws[3])
    assert gxv.shape == xs and not gxv.any()
    assert gwv.shape == ws and not gwv.any()


def test_separable_names_and_a_pointwise_filter_of_unknown_shape():
    """The output is named as its scope (TF's "separable_conv2d:0"); a pointwise filter whose
    size only the run knows is accepted (TF requires it to be compatible with 1x1)."""
    x = RNG.standard_normal((1, 5, 5, 3))
    dw = RNG.standard_normal((3, 3, 3, 2))
    pw = RNG.standard_normal((1, 1, 6, 4))
    with cf.Graph().as_default():
        p = cf.placeholder(cf.float64, (None, None, None, None))
        y = cf.nn.separable_conv2d(x, dw, p, [1, 1, 1, 1], "SAME")
        y2 = cf.nn.separable_conv2d(x, dw, pw, [1, 1, 1, 1], "SAME", name="sep")
        y3 = cf.nn.separable_conv2d(x, dw, pw, [1, 1, 1, 1], "SAME", name="sep")
        assert (y.name, y2.name, y3.name) == ("separable_conv2d:0", "sep:0", "sep_1:0")
        layer = cf.layers.SeparableConv2D(4, 3, name="sc")
        layer(cf.constant(x))
        assert (layer.depthwise_kernel.name, layer.pointwise_kernel.name) == ("sc/depthwise_kernel:0",
                                                                              "sc/pointwise_kernel:0")
        a, b = _run([y, y2], {p: pw})
    np.testing.assert_allclose(a, b)
