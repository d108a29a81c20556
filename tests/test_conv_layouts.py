"""NCHW and explicit padding in the 2-D image ops (graph/ops/layout_ops.py), and tf.nn.pool's
dilation: each equals its NHWC / padded-VALID twin, names stay TF's, bad arguments are
refused as TF refuses them.  (Against TensorFlow itself: tests/tf1/test_vs_tensorflow_conv_layouts.py;
gradients against finite differences: tests/gradtable_nn.py.)"""
import numpy as np
import pytest

import collflow as cf

pytestmark = pytest.mark.timeout(120)
R = np.random.default_rng(11)


def _nchw(a):
    return np.transpose(a, (0, 3, 1, 2))


def _run(*ts):
    with cf.Session() as s:
        return s.run(list(ts))


def test_nchw_ops_are_their_nhwc_twins_transposed():
    x = R.standard_normal((2, 7, 6, 3)).astype(np.float32)
    w = R.standard_normal((3, 2, 3, 4)).astype(np.float32)
    dw = R.standard_normal((2, 3, 3, 2)).astype(np.float32)
    b = R.standard_normal(3).astype(np.float32)
    with cf.Graph().as_default():
        xc = cf.constant(_nchw(x))
        pairs = [
            (cf.nn.conv2d(xc, w, [1, 1, 2, 1], "SAME", data_format="NCHW"), cf.nn.conv2d(x, w, [1, 2, 1, 1], "SAME")),
            (cf.nn.max_pool(xc, [1, 1, 3, 2], [1, 1, 2, 2], "SAME", data_format="NCHW"),
             cf.nn.max_pool(x, [1, 3, 2, 1], [1, 2, 2, 1], "SAME")),
            (cf.nn.avg_pool(xc, [1, 1, 2, 2], [1, 1, 1, 2], "VALID", data_format="NCHW"),
             cf.nn.avg_pool(x, [1, 2, 2, 1], [1, 1, 2, 1], "VALID")),
            (cf.nn.bias_add(xc, b, data_format="NCHW"), cf.nn.bias_add(x, b)),
            (cf.nn.depthwise_conv2d(xc, dw, [1, 1, 1, 1], "VALID", rate=[2, 1], data_format="NCHW"),
             cf.nn.depthwise_conv2d(x, dw, [1, 1, 1, 1], "VALID", rate=[2, 1])),
        ]
        outs = _run(*[p for pair in pairs for p in pair])
        names = [p[0].name for p in pairs]
    for got, want in zip(outs[::2], outs[1::2]):
        np.testing.assert_allclose(got, _nchw(want), rtol=1e-5, atol=1e-6)
    # the output transpose carries the op's name, as TF's single op would
    assert names == ["Conv2D:0", "MaxPool:0", "AvgPool:0", "BiasAdd:0", "depthwise:0"]


def test_bias_add_nchw_any_rank():
    x = R.standard_normal((2, 3, 4, 2, 2)).astype(np.float32)
    b = np.array([1.0, -2.0, 3.0], np.float32)
    with cf.Graph().as_default():
        y, = _run(cf.nn.bias_add(x, b, data_format="NCHW"))
    np.testing.assert_allclose(y, x + b.reshape(1, 3, 1, 1, 1), rtol=1e-6)


def test_explicit_padding_is_a_zero_pad_then_valid():
    x = R.standard_normal((1, 5, 6, 2)).astype(np.float32)
    w = R.standard_normal((3, 3, 2, 2)).astype(np.float32)
    pad = [[0, 0], [2, 0], [1, 3], [0, 0]]
    with cf.Graph().as_default():
        got, want, got_c = _run(
            cf.nn.conv2d(x, w, [1, 2, 1, 1], pad, dilations=[1, 1, 1, 1]),
            cf.nn.conv2d(np.pad(x, pad), w, [1, 2, 1, 1], "VALID"),
            cf.nn.conv2d(_nchw(x), w, [1, 1, 2, 1], [[0, 0], [0, 0], [2, 0], [1, 3]], data_format="NCHW"))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(got_c, _nchw(want), rtol=1e-6)


def test_explicit_padding_gradients_crop_the_padding():
    # conv2d_backprop_input with explicit padding: the padded input's gradient, cropped; the
    # static shape stays known from a list of sizes
    w = R.standard_normal((2, 2, 1, 1)).astype(np.float32)
    dy = R.standard_normal((1, 6, 4, 1)).astype(np.float32)
    pad = [[0, 0], [1, 1], [0, 1], [0, 0]]
    with cf.Graph().as_default():
        dx = cf.nn.conv2d_backprop_input([1, 5, 4, 1], w, dy, [1, 1, 1, 1], pad)
        full = cf.nn.conv2d_backprop_input([1, 7, 5, 1], w, dy, [1, 1, 1, 1], "VALID")
        assert dx.shape.as_list() == [1, 5, 4, 1]
        got, fv = _run(dx, full)
    np.testing.assert_allclose(got, fv[:, 1:6, 0:4], rtol=1e-6)


def test_pool_dilation_and_tf_refusals():
    x = R.standard_normal((1, 7, 6, 2)).astype(np.float32)
    with cf.Graph().as_default():
        y = cf.nn.pool(x, [2, 2], "MAX", "VALID", dilation_rate=[2, 1])
        got, = _run(y)
        with pytest.raises(ValueError, match="'SAME' padding is not implemented for dilation_rate > 1"):
            cf.nn.pool(x, [2, 2], "MAX", "SAME", dilation_rate=[2, 2])
        with pytest.raises(ValueError, match="strides > window_shape"):
            cf.nn.pool(x, [1, 2], "AVG", "VALID", strides=[2, 2])
        with pytest.raises(ValueError, match="strides > 1 .* dilation_rate > 1"):
            cf.nn.pool(x, [2, 2], "AVG", "VALID", strides=[2, 1], dilation_rate=[1, 2])
        # TF2's max_pool (and max_pool1d) take strides larger than the window
        assert cf.nn.max_pool_v2(x, 1, 2, "VALID").shape.as_list() == [1, 4, 3, 2]
    want = np.max(np.stack([x[:, a:a + 5, b:b + 5] for a in (0, 2) for b in (0, 1)]), axis=0)
    np.testing.assert_allclose(got, want)


def test_bad_layout_arguments_are_refused_by_name():
    x = np.zeros((1, 4, 4, 2), np.float32)
    w = np.zeros((2, 2, 2, 1), np.float32)
    with cf.Graph().as_default():
        with pytest.raises(cf.InvalidArgumentError, match="conv2d: data_format must be 'NHWC' or 'NCHW'"):
            cf.nn.conv2d(x, w, 1, "SAME", data_format="CHWN")
        with pytest.raises(cf.InvalidArgumentError, match="'EXPLICIT' is not a valid value"):
            cf.nn.conv2d(x, w, 1, "EXPLICIT")
        with pytest.raises(cf.InvalidArgumentError, match="must be of size 4"):
            cf.nn.conv2d(x, w, 1, [[1, 1], [1, 1]])
        with pytest.raises(cf.InvalidArgumentError, match="list/tuple of size 2"):
            cf.nn.conv2d(x, w, 1, [[0, 0], [1], [1, 1], [0, 0]])
        with pytest.raises(cf.InvalidArgumentError, match="batch or channel dimension"):
            cf.nn.conv2d(x, w, 1, [[0, 0], [1, 1], [1, 1], [1, 0]])
        with pytest.raises(cf.InvalidArgumentError, match="negative"):
            cf.nn.conv2d(x, w, 1, [[0, 0], [-1, 1], [1, 1], [0, 0]])
        with pytest.raises(cf.InvalidArgumentError, match="bias_add: data_format"):
            cf.nn.bias_add(x, np.zeros(2, np.float32), data_format="NWHC")


def test_ncw_and_ncdhw_ops_are_their_channels_last_twins_transposed():
    x1 = R.standard_normal((2, 9, 3)).astype(np.float32)
    x3 = R.standard_normal((1, 4, 5, 3, 2)).astype(np.float32)
    w1 = R.standard_normal((3, 3, 2)).astype(np.float32)
    w3 = R.standard_normal((2, 2, 2, 2, 3)).astype(np.float32)
    ncw, ncdhw = np.transpose(x1, (0, 2, 1)), np.transpose(x3, (0, 4, 1, 2, 3))
    with cf.Graph().as_default():
        outs = _run(cf.nn.conv1d(ncw, w1, 2, "SAME", data_format="NCW"), cf.nn.conv1d(x1, w1, 2, "SAME"),
                    cf.nn.conv3d(ncdhw, w3, [1, 1, 1, 2, 1], "VALID", data_format="NCDHW"),
                    cf.nn.conv3d(x3, w3, [1, 1, 2, 1, 1], "VALID"),
                    cf.nn.max_pool3d(ncdhw, [1, 1, 2, 2, 2], [1, 1, 1, 2, 1], "SAME", data_format="NCDHW"),
                    cf.nn.max_pool3d(x3, [1, 2, 2, 2, 1], [1, 1, 2, 1, 1], "SAME"),
                    cf.nn.pool(ncw, [2], "AVG", "VALID", data_format="NCW"), cf.nn.pool(x1, [2], "AVG", "VALID"),
                    cf.nn.convolution(ncdhw, w3, "SAME", data_format="NCDHW"), cf.nn.convolution(x3, w3, "SAME"))
        with pytest.raises(cf.InvalidArgumentError, match="data_format must be 'NWC' or 'NCW'"):
            cf.nn.pool(x1, [2], "MAX", "VALID", data_format="NCHW")
    for got, want in zip(outs[::2], outs[1::2]):
        r = want.ndim
        np.testing.assert_allclose(got, np.transpose(want, (0, r - 1, *range(1, r - 1))), rtol=1e-5, atol=1e-6)
