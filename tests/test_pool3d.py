"""tf.nn.max_pool3d (MaxPool3D, MaxPool3DGrad, MaxPool3DGradGrad): TF's rules for NaN,
infinities and ties (those of its vectorised CPU path, 16 or more channels; with a few
channels TF's NaN results differ, see kernels/pool3d_kernels.py), checked against a plain loop
over the windows, and the gradients against finite differences.
tests/tf1/test_vs_tensorflow_max_pool_edges.py compares with TensorFlow itself."""
import itertools

import numpy as np
import pytest

import collflow.compat.v1 as tf

pytestmark = pytest.mark.timeout(300)
NAN, INF = np.nan, np.inf


def _out_pad(n, k, s, pad):
    if pad == "SAME":
        o = -(-n // s)
        return o, max((o - 1) * s + k - n, 0) // 2
    return (n - k) // s + 1, 0


def reference(x, k, s, pad):
    """MaxPool3D by a loop: (y: the window's numbers' maximum from -inf, NaN skipped, SAME
    padding the lowest float; per window the real cells with v - y == 0 (the gradient's); per
    window the first real cell equal to y (the gradient of the gradient's))."""
    n, c = x.shape[0], x.shape[4]
    geo = [_out_pad(d, kk, ss, pad) for d, kk, ss in zip(x.shape[1:4], k, s)]
    outs = [o for o, _ in geo]
    low = np.finfo(x.dtype).min
    y = np.empty([n] + outs + [c], x.dtype)
    ties, first = {}, {}
    for b, i, j, m, ch in np.ndindex(*y.shape):
        cur, cells = None, []
        for off in np.ndindex(*k):
            q = tuple(o * ss - p + a for o, ss, (_, p), a in zip((i, j, m), s, geo, off))
            inside = all(0 <= v < d for v, d in zip(q, x.shape[1:4]))
            v = x[(b,) + q + (ch,)] if inside else low
            cur = np.fmax(-np.inf if cur is None else cur, v)
            if inside:
                cells.append(q)
        y[b, i, j, m, ch] = cur
        with np.errstate(invalid="ignore"):
            ties[b, i, j, m, ch] = [q for q in cells if x[(b,) + q + (ch,)] - cur == 0]
        first[b, i, j, m, ch] = [q for q in cells if x[(b,) + q + (ch,)] == cur][:1]
    return y, ties, first


def _routes(routes, src, shape, to_input):
    out = np.zeros(shape, src.dtype)
    for (b, i, j, m, ch), cells in routes.items():
        for q in cells:
            if to_input:
                out[(b,) + q + (ch,)] += src[b, i, j, m, ch]
            else:
                out[b, i, j, m, ch] += src[(b,) + q + (ch,)]
    return out


def _pool_and_grads(x, k, s, pad, gy_seed=0):
    g = tf.Graph()
    with g.as_default():
        xt = tf.constant(x)
        y = tf.nn.max_pool3d(xt, [1, *k, 1], [1, *s, 1], pad)
        rng = np.random.default_rng(gy_seed)
        gy = rng.normal(size=y.shape.as_list()).astype(x.dtype)
        gg = rng.normal(size=x.shape).astype(x.dtype)
        gyt = tf.constant(gy)
        dx = tf.gradients(y, xt, grad_ys=gyt)[0]
        ddy = tf.gradients(dx, gyt, grad_ys=tf.constant(gg))[0]
        with tf.Session(graph=g) as sess:
            yv, dxv, ddyv = sess.run([y, dx, ddy])
    return yv, dxv, ddyv, gy, gg


@pytest.mark.parametrize("row, y, dx, ddy", [
    # gradient input 1; gradient-of-gradient input [10, 20, 30, 40]
    ([1, 2, 2, 0], 2, [0, 1, 1, 0], 20),            # every tie gets the gradient; gg from the first
    ([NAN, 1, 2, 0], 2, [0, 0, 1, 0], 30),          # NaN is skipped wherever it is
    ([1, 2, NAN, 0], 2, [0, 1, 0, 0], 20),
    ([NAN] * 4, -INF, [0, 0, 0, 0], 0),             # nothing but NaN: -inf, no gradient
    ([-INF] * 4, -INF, [0, 0, 0, 0], 10),           # no gradient (-inf - -inf is NaN), gg from the first
    ([INF, 1, 2, 0], INF, [0, 0, 0, 0], 10),
    ([NAN, 5, NAN, 5], 5, [0, 1, 0, 1], 20),
])
def test_max_pool3d_follows_tf1_on_nan_inf_and_ties(row, y, dx, ddy):
    # 16 channels holding the same row: TF's vectorised path, whose answers these are
    x = np.repeat(np.array(row, np.float32).reshape(1, 1, 1, 4, 1), 16, axis=4)
    g = tf.Graph()
    with g.as_default():
        xt = tf.constant(x)
        yt = tf.nn.max_pool3d(xt, [1, 1, 1, 4, 1], [1, 1, 1, 4, 1], "VALID")
        gyt = tf.constant(np.ones((1, 1, 1, 1, 16), np.float32))
        dxt = tf.gradients(yt, xt, grad_ys=gyt)[0]
        gg = np.repeat(np.arange(10, 50, 10, dtype=np.float32).reshape(1, 1, 1, 4, 1), 16, axis=4)
        ddyt = tf.gradients(dxt, gyt, grad_ys=tf.constant(gg))[0]
        with tf.Session(graph=g) as sess:
            yv, dxv, ddyv = sess.run([yt, dxt, ddyt])
    np.testing.assert_array_equal(yv, np.full((1, 1, 1, 1, 16), y, np.float32))
    np.testing.assert_array_equal(dxv, np.repeat(np.array(dx, np.float32).reshape(1, 1, 1, 4, 1), 16, axis=4))
    np.testing.assert_array_equal(ddyv, np.full((1, 1, 1, 1, 16), ddy, np.float32))


def test_max_pool3d_same_padding_is_the_lowest_float():
    # SAME padding takes part as the lowest float: a window of -inf (or NaN) and padding pools
    # to -3.4e38, one of -inf only to -inf, one of NaN only to -inf
    x = np.array([-INF, -INF, -INF], np.float32).reshape(1, 1, 1, 3, 1)
    yv = _pool_and_grads(x, (1, 1, 2), (1, 1, 1), "SAME")[0]
    np.testing.assert_array_equal(yv.ravel(), [-INF, -INF, np.finfo(np.float32).min])
    x = np.array([1, NAN, NAN], np.float32).reshape(1, 1, 1, 3, 1)
    yv = _pool_and_grads(x, (1, 1, 2), (1, 1, 1), "SAME")[0]
    np.testing.assert_array_equal(yv.ravel(), [1, -INF, np.finfo(np.float32).min])


def _random_configs(seed, count):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        k = tuple(int(v) for v in rng.integers(1, 4, 3))
        s = tuple(int(v) for v in rng.integers(1, 4, 3))
        pad = ["VALID", "SAME"][int(rng.integers(2))]
        shape = (int(rng.integers(1, 3)),) + tuple(kk + int(rng.integers(0, 3)) for kk in k) + (int(rng.integers(1, 4)),)
        # small integers: many ties; NaN, -inf and +inf at a random rate
        x = rng.integers(-2, 3, size=shape).astype(np.float32)
        m, p = rng.random(shape), rng.random() * 0.5
        x[m < p / 3] = NAN
        x[(m >= p / 3) & (m < 2 * p / 3)] = -INF
        x[(m >= 2 * p / 3) & (m < 0.8 * p)] = INF
        yield x, k, s, pad


@pytest.mark.parametrize("seed", [0, 1])
def test_max_pool3d_matches_the_window_loop(seed):
    for x, k, s, pad in _random_configs(seed, 12):
        yv, dxv, ddyv, gy, gg = _pool_and_grads(x, k, s, pad, seed)
        ry, ties, first = reference(x, k, s, pad)
        np.testing.assert_array_equal(yv, ry, err_msg=f"{k} {s} {pad}")
        np.testing.assert_allclose(dxv, _routes(ties, gy, x.shape, True), rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(ddyv, _routes(first, gg, ry.shape, False))


@pytest.mark.parametrize("k, s, pad", [((2, 2, 2), (2, 2, 2), "VALID"), ((2, 3, 2), (1, 2, 1), "SAME"),
                                       ((3, 1, 2), (2, 1, 3), "SAME")])
def test_max_pool3d_gradient_matches_finite_differences(k, s, pad):
    rng = np.random.default_rng(3)
    shape = (2, 4, 5, 4, 2)
    x0 = rng.permutation(np.prod(shape)).reshape(shape).astype(np.float64) * 0.1  # distinct: no ties
    g = tf.Graph()
    with g.as_default():
        xt = tf.constant(x0)
        y = tf.nn.max_pool3d(xt, [1, *k, 1], [1, *s, 1], pad)
        with tf.Session(graph=g):
            err = tf.test.compute_gradient_error(xt, list(shape), y, y.shape.as_list(), x_init_value=x0, delta=1e-3)
    assert err < 1e-6


def test_max_pool3d_second_order_matches_finite_differences():
    # d/d(gy) of sum(dx * w) where dx = MaxPool3DGrad(x, y, gy): linear in gy, exact
    rng = np.random.default_rng(4)
    x = rng.permutation(2 * 4 * 4 * 4).reshape(2, 4, 4, 4, 1).astype(np.float64)
    w = rng.normal(size=x.shape)
    g = tf.Graph()
    with g.as_default():
        xt = tf.constant(x)
        y = tf.nn.max_pool3d(xt, [1, 2, 2, 2, 1], [1, 1, 2, 1, 1], "SAME")
        gy = tf.placeholder(tf.float64, y.shape)
        dx = tf.gradients(y, xt, grad_ys=gy)[0]
        loss = tf.reduce_sum(dx * w)
        with tf.Session(graph=g):
            err = tf.test.compute_gradient_error(gy, y.shape.as_list(), loss, [], delta=1e-2)
    assert err < 1e-9


def test_max_pool3d_takes_its_spatial_size_at_run_time_and_any_real_dtype():
    x = np.random.default_rng(5).integers(-9, 9, size=(2, 4, 5, 6, 3)).astype(np.int32)
    g = tf.Graph()
    with g.as_default():
        ph = tf.placeholder(tf.int32, [None, None, None, None, 3])
        y = tf.nn.max_pool3d(ph, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "SAME")
        assert y.shape.as_list() == [None, None, None, None, 3]
        known = tf.nn.max_pool3d(tf.constant(x), [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "SAME")
        assert known.shape.as_list() == [2, 2, 3, 3, 3]
        with tf.Session(graph=g) as sess:
            yv = sess.run(y, {ph: x})
    want = np.full((2, 2, 3, 3, 3), np.iinfo(np.int32).min, np.int32)
    for a, b, c in itertools.product(range(2), range(2), range(2)):
        part = x[:, a::2, b::2, c::2, :]
        want[:, :part.shape[1], :part.shape[2], :part.shape[3]] = np.maximum(
            want[:, :part.shape[1], :part.shape[2], :part.shape[3]], part)
    np.testing.assert_array_equal(yv, want)


def test_max_pool3d_errors_are_clear():
    g = tf.Graph()
    with g.as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match="rank 5"):
            tf.nn.max_pool3d(tf.zeros([2, 4, 4, 3]), [1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "VALID")
        with pytest.raises(tf.errors.InvalidArgumentError, match="'NDHWC' or 'NCDHW'"):
            tf.nn.max_pool3d(tf.zeros([2, 3, 4, 4, 4]), [1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "VALID", data_format="NDCHW")
        with pytest.raises(tf.errors.InvalidArgumentError, match="batch and channel"):
            tf.nn.max_pool3d(tf.zeros([2, 3, 4, 4, 4]), [1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "VALID", data_format="NCDHW")
        # NCDHW itself: the NDHWC pool between transposes
        assert tf.nn.max_pool3d(tf.zeros([2, 3, 4, 4, 4]), [1, 1, 2, 2, 2], [1, 1, 1, 1, 1], "VALID",
                                data_format="NCDHW").shape.as_list() == [2, 3, 3, 3, 3]
        with pytest.raises(tf.errors.InvalidArgumentError, match="does not fit"):
            tf.nn.max_pool3d(tf.zeros([1, 1, 4, 4, 1]), [1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "VALID")
        with pytest.raises(tf.errors.InvalidArgumentError, match="real-number"):
            tf.nn.max_pool3d(tf.zeros([1, 2, 2, 2, 1], tf.complex64), [1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "VALID")
        ph = tf.placeholder(tf.float32, [None, None, None, None, 1])
        y = tf.nn.max_pool3d(ph, [1, 3, 3, 3, 1], [1, 1, 1, 1, 1], "VALID")
        with tf.Session(graph=g) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="does not fit"):
                sess.run(y, {ph: np.zeros((1, 2, 4, 4, 1), np.float32)})
