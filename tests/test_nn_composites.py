"""tf.nn's composites (graph/ops/nn_composites.py) against NumPy written from TF's
definitions, shapes known only at run time, and clear errors.  (Against TensorFlow itself:
tests/tf1/test_vs_tensorflow_more.py.)"""
import math

import numpy as np
import pytest

import collflow as cf

RNG = np.random.default_rng(3)


def _run(fetches, feeds=None):
    with cf.Session() as s:
        return s.run(fetches, feeds)


def ref_space_to_depth(x, b):
    n, h, w, c = x.shape
    out = np.empty((n, h // b, w // b, b * b * c))
    for i in range(h // b):
        for j in range(w // b):
            for bi in range(b):
                for bj in range(b):
                    out[:, i, j, (bi * b + bj) * c:(bi * b + bj + 1) * c] = x[:, i * b + bi, j * b + bj, :]
    return out


def test_space_to_depth_and_back_with_shapes_known_at_run_time():
    x = RNG.standard_normal((2, 6, 4, 3))
    with cf.Graph().as_default():
        xp = cf.placeholder(cf.float64, (None, None, None, 3))
        s2d = cf.nn.space_to_depth(xp, 2)
        back = cf.depth_to_space(s2d, 2)
        (g,) = cf.gradients(cf.reduce_sum(s2d * s2d), [xp])
        assert s2d.shape.as_list() == [None, None, None, 12]
        sv, bv, gv = _run([s2d, back, g], {xp: x})
    np.testing.assert_array_equal(sv, ref_space_to_depth(x, 2))
    np.testing.assert_array_equal(bv, x)
    np.testing.assert_allclose(gv, 2 * x)


def test_space_to_depth_errors():
    with cf.Graph().as_default():
        with pytest.raises(cf.InvalidArgumentError, match="width 5 is not divisible by block_size 2"):
            cf.nn.space_to_depth(np.zeros((1, 4, 5, 1)), 2)
        with pytest.raises(cf.InvalidArgumentError, match="depth 6 is not divisible"):
            cf.nn.depth_to_space(np.zeros((1, 2, 2, 6)), 2)
        with pytest.raises(cf.InvalidArgumentError, match="block_size must be at least 2"):
            cf.nn.space_to_depth(np.zeros((1, 4, 4, 1)), 1)
        with pytest.raises(cf.InvalidArgumentError, match="only data_format='NHWC'"):
            cf.nn.space_to_depth(np.zeros((1, 4, 4, 1)), 2, data_format="NCHW")


def test_activations_and_zero_fraction():
    x = RNG.standard_normal((3, 5))
    with cf.Graph().as_default():
        sw, si, cr, zf = _run([cf.nn.swish(x), cf.nn.silu(x, beta=2.0), cf.nn.crelu(x, axis=0),
                               cf.nn.zero_fraction(cf.nn.relu(x))])
        w, b = RNG.standard_normal((5, 2)), RNG.standard_normal(2)
        rl = _run(cf.nn.relu_layer(x, w, b))
    np.testing.assert_allclose(sw, x / (1 + np.exp(-x)))
    np.testing.assert_allclose(si, x / (1 + np.exp(-2 * x)))
    np.testing.assert_allclose(cr, np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)], axis=0))
    assert zf.dtype == np.float32 and zf == pytest.approx((x <= 0).mean())
    np.testing.assert_allclose(rl, np.maximum(x @ w + b, 0))


def test_moment_helpers():
    x = RNG.standard_normal((6, 4, 3))
    wts = RNG.uniform(0.5, 2.0, (6, 1, 3))
    with cf.Graph().as_default():
        count, m_ss, v_ss, shift = cf.nn.sufficient_statistics(x, [0, 1], shift=0.5)
        mean, var = cf.nn.normalize_moments(count, m_ss, v_ss, shift)
        xp = cf.placeholder(cf.float64, (None, 4, 3))
        dyn_count = cf.nn.sufficient_statistics(xp, [0, 1])[0]
        wm, wv = cf.nn.weighted_moments(x, [0, 1], wts, keep_dims=True)
        cv, mv, vv, dv, wmv, wvv = _run([count, mean, var, dyn_count, wm, wv], {xp: x})
    assert cv == 24 and dv == 24
    with cf.Graph().as_default():  # negative axes over sizes known only at run time
        xp = cf.placeholder(cf.float64, (None, None, 3))
        xu = cf.placeholder(cf.float64)  # unknown rank too
        counts = [cf.nn.sufficient_statistics(xp, [-3, -2])[0], cf.nn.sufficient_statistics(xu, [-1, 0])[0]]
        assert _run(counts, {xp: x, xu: x}) == [24, 18]
    np.testing.assert_allclose(mv, x.mean((0, 1)))
    np.testing.assert_allclose(vv, x.var((0, 1)))
    wb = np.broadcast_to(wts, x.shape)
    m = (wb * x).sum((0, 1), keepdims=True) / wb.sum((0, 1), keepdims=True)
    np.testing.assert_allclose(wmv, m)
    np.testing.assert_allclose(wvv, (wb * (x - m) ** 2).sum((0, 1), keepdims=True) / wb.sum((0, 1), keepdims=True))


def test_log_poisson_loss_full_adds_stirling_above_one():
    z = np.array([0.0, 0.5, 1.0, 3.0, 10.0])
    li = np.array([0.1, -0.3, 0.0, 1.2, 2.0])
    with cf.Graph().as_default():
        plain, full = _run([cf.nn.log_poisson_loss(z, li), cf.nn.log_poisson_loss(z, li, compute_full_loss=True)])
    np.testing.assert_allclose(plain, np.exp(li) - li * z)
    stirling = np.where(z > 1, z * np.log(np.maximum(z, 1e-300)) - z + 0.5 * np.log(2 * math.pi * np.maximum(z, 1e-300)),
                        0.0)
    np.testing.assert_allclose(full, plain + stirling)


def test_fused_batch_norm_training_and_inference():
    x = RNG.standard_normal((4, 3, 2, 5))
    scale, offset = RNG.uniform(0.5, 2, 5), RNG.standard_normal(5)
    with cf.Graph().as_default():
        y, bm, bv = cf.nn.fused_batch_norm(x, scale, offset, epsilon=1e-7)
        yi, mi, vi = cf.nn.fused_batch_norm(x, scale, offset, bm, bv, epsilon=1e-7, is_training=False)
        xp = cf.placeholder(cf.float64, x.shape)
        (g_mean,) = cf.gradients(cf.nn.fused_batch_norm(xp, scale, offset)[1], [xp])
        yv, bmv, bvv, yiv, miv, viv = _run([y, bm, bv, yi, mi, vi])
        with pytest.raises(cf.InvalidArgumentError, match="must be None when is_training"):
            cf.nn.fused_batch_norm(x, scale, offset, bm, bv)
        with pytest.raises(cf.InvalidArgumentError, match="needs mean and variance"):
            cf.nn.fused_batch_norm(x, scale, offset, is_training=False)
    n = 4 * 3 * 2
    eps = 1.001e-5  # TF1 raises a smaller epsilon to this
    np.testing.assert_allclose(bmv, x.mean((0, 1, 2)))
    np.testing.assert_allclose(bvv, x.var((0, 1, 2)) * n / (n - 1))  # the unbiased variance is returned
    np.testing.assert_allclose(yv, (x - bmv) / np.sqrt(x.var((0, 1, 2)) + eps) * scale + offset)
    np.testing.assert_allclose(yiv, (x - bmv) / np.sqrt(bvv + eps) * scale + offset)
    np.testing.assert_allclose(miv, bmv)
    np.testing.assert_allclose(viv, bvv)
    assert g_mean is None  # the batch statistics pass no gradient back, as TF's


def test_conv2d_transpose_nchw_is_the_nhwc_answer_transposed():
    # NCHW: output_shape and strides in its order; a format TF does not name is refused by name
    r = np.random.default_rng(3)
    x = r.standard_normal((1, 2, 5, 5)).astype(np.float32)
    w = r.standard_normal((3, 3, 4, 2)).astype(np.float32)
    with cf.Graph().as_default():
        y = cf.nn.conv2d_transpose(x, w, [1, 4, 10, 10], [1, 1, 2, 2], "SAME", data_format="NCHW")
        ref = cf.nn.conv2d_transpose(np.transpose(x, (0, 2, 3, 1)), w, [1, 10, 10, 4], [1, 2, 2, 1], "SAME")
        assert y.shape.as_list() == [1, 4, 10, 10] and y.name == "conv2d_transpose:0"
        with cf.Session() as s:
            got, want = s.run([y, ref])
        np.testing.assert_allclose(got, np.transpose(want, (0, 3, 1, 2)), rtol=1e-6)
        with pytest.raises(cf.InvalidArgumentError, match="conv2d_transpose: data_format must be 'NHWC' or 'NCHW'"):
            cf.nn.conv2d_transpose(x, w, [1, 4, 10, 10], [1, 1, 2, 2], "SAME", data_format="CHWN")
