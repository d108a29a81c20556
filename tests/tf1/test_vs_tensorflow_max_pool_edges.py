"""Differential fuzz against TensorFlow 1.x: tf.nn.max_pool, max_pool3d, max_pool_with_argmax,
fractional_max_pool, dilation2d and erosion2d on inputs full of ties, NaN, -inf and +inf (small integers with non-finite values at a random
rate), VALID and SAME, strides 1-3, windows up to 3 per dimension.  The pooled values (and
argmax indices), the gradient and, for the first two, the gradient of the gradient (d/d
grad_ys, MaxPoolGradGrad / MaxPool3DGradGrad) must agree.  fractional_max_pool's gradient
is compared where TF gives one: TF's kernel refuses regions whose argmax value is not the
pooled one (a leading NaN, only -inf), where collflow routes it by the same argmax rule.

Skipped cleanly without TensorFlow (`pip install -e ".[conformance]"`).  The 3-D configurations
have 16 or 32 channels (TF's vectorised path, whose NaN rule collflow follows) and leave out
SAME padding whose total would be negative by 2 or more (a window smaller than its stride):
TF's CPU kernels shift the windows there (Eigen's padding), which is not TF's documented
geometry nor its GPU kernels' (see kernels/pool3d_kernels.py).
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


def _eval(tf, x, rank, k, s, pad, relu, seed):
    g = tf.Graph()
    with g.as_default():
        xt = tf.constant(x)
        z = tf.nn.relu(xt) if relu else xt
        if rank == 2:
            y = tf.nn.max_pool(z, [1, *k, 1], [1, *s, 1], pad)
        else:
            y = tf.nn.max_pool3d(z, [1, *k, 1], [1, *s, 1], pad)
        rng = np.random.default_rng(seed)
        gy = tf.constant(rng.normal(size=y.shape.as_list()).astype(x.dtype))
        gg = tf.constant(rng.normal(size=x.shape).astype(x.dtype))
        dx = tf.gradients(y, xt, grad_ys=gy)[0]
        ddy = tf.gradients(dx, gy, grad_ys=gg)[0]
        with tf.Session(graph=g) as sess:
            return sess.run([y, dx, ddy])


def _configs(rank, seed, count):
    rng = np.random.default_rng(seed)
    made = 0
    while made < count:
        k = tuple(int(v) for v in rng.integers(1, 4, rank))
        s = tuple(int(v) for v in rng.integers(1, 4, rank))
        pad = ["VALID", "SAME"][int(rng.integers(2))]
        sizes = tuple(kk + int(rng.integers(0, 3)) for kk in k)
        if rank == 3 and pad == "SAME" and any((-(-n // st) - 1) * st + kk - n <= -2
                                               for n, kk, st in zip(sizes, k, s)):
            continue
        # 3-D: 16 or 32 channels, TF's vectorised path (with a few channels TF's NaN results
        # depend on its scalar fold order; see kernels/pool3d_kernels.py)
        channels = int(rng.choice([16, 32])) if rank == 3 else int(rng.integers(1, 4))
        shape = (int(rng.integers(1, 3)),) + sizes + (channels,)
        x = rng.integers(-2, 3, size=shape).astype(np.float32)
        m, p = rng.random(shape), rng.random() * 0.6
        x[m < p / 3] = np.nan
        x[(m >= p / 3) & (m < 2 * p / 3)] = -np.inf
        x[(m >= 2 * p / 3) & (m < 0.8 * p)] = np.inf
        made += 1
        yield x, k, s, pad, bool(rng.integers(2)) if rank == 2 else False


@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_max_pool_edges_match_tensorflow(rank, seed):
    for i, (x, k, s, pad, relu) in enumerate(_configs(rank, 100 * rank + seed, 40)):
        want = _eval(tft, x, rank, k, s, pad, relu, i)
        got = _eval(cft, x, rank, k, s, pad, relu, i)
        what = f"config {i}: rank {rank} k {k} s {s} {pad} relu {relu} shape {x.shape}"
        np.testing.assert_array_equal(got[0], want[0], err_msg=what)
        for name, a, b in (("gradient", got[1], want[1]), ("gradient of the gradient", got[2], want[2])):
            np.testing.assert_allclose(a, b, rtol=tfdiff.RTOL, atol=1e-6, err_msg=f"{name}, {what}")


def _eval_argmax(tf, x, k, s, pad, include_batch, seed):
    g = tf.Graph()
    with g.as_default():
        xt = tf.constant(x)
        y, am = tf.nn.max_pool_with_argmax(xt, [1, *k, 1], [1, *s, 1], pad, include_batch_in_index=include_batch)
        gy = tf.constant(np.random.default_rng(seed).normal(size=y.shape.as_list()).astype(x.dtype))
        dx = tf.gradients(y, xt, grad_ys=gy)[0]
        with tf.Session(graph=g) as sess:
            return sess.run([y, am, dx])


@pytest.mark.parametrize("seed", [0, 1])
def test_max_pool_with_argmax_edges_match_tensorflow(seed):
    for i, (x, k, s, pad, include_batch) in enumerate(_configs(2, 300 + seed, 40)):
        want = _eval_argmax(tft, x, k, s, pad, include_batch, i)
        got = _eval_argmax(cft, x, k, s, pad, include_batch, i)
        what = f"config {i}: k {k} s {s} {pad} include_batch_in_index {include_batch} shape {x.shape}"
        np.testing.assert_array_equal(got[0], want[0], err_msg=what)
        np.testing.assert_array_equal(got[1], want[1], err_msg=what)
        np.testing.assert_allclose(got[2], want[2], rtol=tfdiff.RTOL, atol=1e-6, err_msg=f"gradient, {what}")


def _eval_fractional(tf, x, ratio, pseudo, overlapping, seed):
    """(y, rows, cols, gradient or None where TF's FractionalMaxPoolGrad refuses the input)."""
    g = tf.Graph()
    with g.as_default():
        xt = tf.constant(x)
        y, rows, cols = tf.nn.fractional_max_pool(xt, ratio, pseudo_random=pseudo, overlapping=overlapping,
                                                  deterministic=True, seed=seed, seed2=seed + 1)
        with tf.Session(graph=g) as sess:
            out = sess.run([y, rows, cols])
        gy = tf.constant(np.random.default_rng(seed).normal(size=out[0].shape).astype(x.dtype))
        dx = tf.gradients(y, xt, grad_ys=gy)[0]
        with tf.Session(graph=g) as sess:
            try:
                out.append(sess.run(dx))
            except tf.errors.InvalidArgumentError:
                # TF: "tensor_out_dup is not the same as tensor_out" where the argmax cell's
                # value is not the pooled one (a region starting with NaN, or of -inf only)
                out.append(None)
    return out


def test_fractional_max_pool_edges_match_tensorflow():
    rng = np.random.default_rng(400)
    compared = 0
    for i in range(60):
        shape = (int(rng.integers(1, 3)), int(rng.integers(3, 9)), int(rng.integers(3, 9)), int(rng.choice([1, 3, 8, 9])))
        ratio = [1.0, float(rng.uniform(1.1, 2.5)), float(rng.uniform(1.1, 2.5)), 1.0]
        x = rng.integers(-2, 3, size=shape).astype(np.float32)
        m, p = rng.random(shape), rng.random() * 0.6
        x[m < p / 3] = np.nan
        x[(m >= p / 3) & (m < 2 * p / 3)] = -np.inf
        x[(m >= 2 * p / 3) & (m < 0.8 * p)] = np.inf
        pseudo, overlapping = bool(rng.integers(2)), bool(rng.integers(2))
        want = _eval_fractional(tft, x, ratio, pseudo, overlapping, i + 1)
        got = _eval_fractional(cft, x, ratio, pseudo, overlapping, i + 1)
        what = f"config {i}: shape {shape} ratio {ratio} pseudo {pseudo} overlapping {overlapping}"
        for a, b in zip(got[:3], want[:3]):
            np.testing.assert_array_equal(a, b, err_msg=what)
        assert got[3] is not None, what  # collflow routes every gradient
        if want[3] is not None:
            compared += 1
            np.testing.assert_allclose(got[3], want[3], rtol=tfdiff.RTOL, atol=1e-6, err_msg=f"gradient, {what}")
    assert compared >= 10


def _eval_morph(tf, dilate, x, f, s, r, pad, seed):
    g = tf.Graph()
    with g.as_default():
        xt, ft = tf.constant(x), tf.constant(f)
        y = (tf.nn.dilation2d if dilate else tf.nn.erosion2d)(xt, ft, [1, *s, 1], [1, *r, 1], pad)
        with tf.Session(graph=g) as sess:
            out = [sess.run(y)]
        gy = tf.constant(np.random.default_rng(seed).normal(size=out[0].shape).astype(x.dtype))
        with tf.Session(graph=g) as sess:
            return out + sess.run(tf.gradients(y, [xt, ft], grad_ys=gy))


def test_dilation_and_erosion_edges_match_tensorflow():
    # the max-plus (min-plus) windows of tf.nn.dilation2d / erosion2d: NaN skipped, the lowest
    # float for a window with nothing above it, gradients to TF's argmax taps (strides or rates)
    rng = np.random.default_rng(500)
    for i in range(60):
        k = tuple(int(v) for v in rng.integers(1, 4, 2))
        s, r = [(1, 1), tuple(int(v) for v in rng.integers(1, 3, 2))][::1 if rng.random() < 0.5 else -1]
        pad = ["VALID", "SAME"][int(rng.integers(2))]
        shape = (int(rng.integers(1, 3)),) + tuple((kk - 1) * rr + 1 + int(rng.integers(0, 3)) for kk, rr in zip(k, r)) \
            + (int(rng.integers(1, 3)),)
        x = rng.integers(-2, 3, size=shape).astype(np.float32)
        m, p = rng.random(shape), rng.random() * 0.6
        x[m < p / 3] = np.nan
        x[(m >= p / 3) & (m < 2 * p / 3)] = -np.inf
        x[(m >= 2 * p / 3) & (m < 0.8 * p)] = np.inf
        f = rng.integers(-1, 2, size=k + (shape[3],)).astype(np.float32)
        dilate = bool(rng.integers(2))
        want = _eval_morph(tft, dilate, x, f, s, r, pad, i)
        got = _eval_morph(cft, dilate, x, f, s, r, pad, i)
        what = f"config {i}: {'dilation' if dilate else 'erosion'} k {k} strides {s} rates {r} {pad} shape {shape}"
        np.testing.assert_array_equal(got[0], want[0], err_msg=what)
        for name, a, b in zip(("input gradient", "filter gradient"), got[1:], want[1:]):
            np.testing.assert_allclose(a, b, rtol=tfdiff.RTOL, atol=1e-5, err_msg=f"{name}, {what}")
