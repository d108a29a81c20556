"""Edge values where TF1's kernels define the answer (found by the differential fuzz against
TensorFlow): shift counts past the width, P(a, 0), RsqrtGrad at -0, gradients of empty
products, and constant folding that prints no NumPy warnings."""
import warnings

import numpy as np
import pytest

import collflow.compat.v1 as tf

pytestmark = pytest.mark.timeout(120)


def _run(fn):
    g = tf.Graph()
    with g.as_default():
        out = fn()
        with tf.Session(graph=g) as s:
            return s.run(out)


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64, np.uint8])
def test_shift_counts_are_clamped_to_the_width(dt):
    # TF's LeftShift/RightShift clamp the count to [0, bits - 1]: a negative count shifts by 0,
    # a count of the width or more by bits - 1 (NumPy gives 0 or -1 there)
    bits = np.dtype(dt).itemsize * 8
    x = np.array([1, 5, 100, 7], dtype=dt) if dt == np.uint8 else np.array([-7, -1, 5, 100], dtype=dt)
    counts = [0, 3, bits - 1, bits, bits + 5] + ([] if dt == np.uint8 else [-1, -9])
    for c in counts:
        y = np.full(x.shape, c, dtype=dt)
        eff = min(max(c, 0), bits - 1)
        left = _run(lambda: tf.bitwise.left_shift(tf.constant(x), tf.constant(y)))
        right = _run(lambda: tf.bitwise.right_shift(tf.constant(x), tf.constant(y)))
        np.testing.assert_array_equal(left, np.left_shift(x, dt(eff)))
        np.testing.assert_array_equal(right, np.right_shift(x, dt(eff)))


def test_igamma_at_zero_is_zero_for_every_a():
    a = np.array([-2.0, -0.5, 0.0, 0.5, 3.0, np.nan, np.inf, -np.inf])
    p = _run(lambda: tf.math.igamma(tf.constant(a), tf.zeros_like(tf.constant(a))))
    np.testing.assert_array_equal(p, np.zeros_like(a))


def test_rsqrt_gradient_keeps_the_sign_at_negative_zero():
    # RsqrtGrad is -dy y^3 / 2: at x = -0, y = -inf, and d(y^2)/dx = 2 y dy/dx = -inf
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(np.array([-0.0, 0.0, 4.0], np.float32))
        y = tf.math.rsqrt(x)
        grad = tf.gradients(tf.reduce_sum(y * y), x)[0]
        with tf.Session(graph=g) as s:
            gv = s.run(grad)
    assert gv[0] == -np.inf and gv[1] == -np.inf
    np.testing.assert_allclose(gv[2], -1.0 / 16.0)   # d(1/x)/dx at 4


@pytest.mark.parametrize("shape,axis", [((0, 3), None), ((0, 3), 0), ((0, 3), 1), ((3, 0, 2), [1])])
def test_reduce_prod_gradient_of_an_empty_input(shape, axis):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, shape)
        p = tf.reduce_prod(x, axis=axis)
        grad = tf.gradients(tf.reduce_sum(p), x)[0]
        with tf.Session(graph=g) as s:
            pv, gv = s.run([p, grad], {x: np.zeros(shape, np.float32)})
    np.testing.assert_array_equal(pv, np.prod(np.zeros(shape, np.float32), axis=None if axis is None else tuple(
        [axis] if isinstance(axis, int) else axis)))
    assert gv.shape == shape


def test_constant_folding_prints_no_numpy_warnings():
    # log(0), 0/0 and friends folded at plan time: the run gives inf/nan silently, as TF
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _run(lambda: [tf.math.log(tf.constant([0.0, -1.0])), tf.constant(0.0) / tf.constant(0.0),
                            tf.math.xlogy(tf.constant(1.0), tf.constant(0.0))])
    assert out[0][0] == -np.inf and np.isnan(out[0][1]) and np.isnan(out[1]) and out[2] == -np.inf


def test_float_floordiv_is_floor_of_the_quotient():
    # TF's floating FloorDiv is floor(x / y) (NumPy's floor_divide follows Python's divmod)
    out = _run(lambda: tf.math.floordiv(tf.constant([-0.5, 1.0, 7.0, -7.0]), tf.constant([np.inf, 0.1, 2.0, 2.0])))
    assert out[0] == 0.0 and np.signbit(out[0])
    np.testing.assert_array_equal(out[1:], [10.0, 3.0, -4.0])
    # and FloorMod's gradient with respect to y, -floor(x / y), follows it
    g = tf.Graph()
    with g.as_default():
        x, y = tf.constant([1.0]), tf.constant([0.1])
        dy = tf.gradients(tf.math.floormod(x, y), y)[0]
        with tf.Session(graph=g) as s:
            assert s.run(dy)[0] == -10.0


def test_special_function_corner_values():
    inf, nan = np.inf, np.nan
    assert _run(lambda: tf.math.lgamma(tf.constant([inf])))[0] == inf
    # Hurwitz zeta at the poles q = 0, -1, ...: inf for an even integer s, NaN otherwise; s = 1 is inf
    z = _run(lambda: tf.math.zeta(tf.constant([2.0, 4.0, 1.5, 3.0, 1.0, inf]),
                                  tf.constant([-2.0, 0.0, -1.0, -0.0, nan, -0.5])))
    np.testing.assert_array_equal(z, [inf, inf, nan, nan, inf, inf])
    # polygamma(n, pole): inf for odd n, NaN for even n >= 2; an infinite order is inf * zeta(inf, x)
    p = _run(lambda: tf.math.polygamma(tf.constant([1.0, 3.0, 2.0, inf, inf, inf]),
                                       tf.constant([0.0, -1.0, -2.0, 0.5, 1.0, 2.0])))
    np.testing.assert_array_equal(p, [inf, inf, nan, inf, inf, nan])


def test_igamma_gradient_with_respect_to_a_is_zero_at_x_zero():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant([-0.5, 0.5, 2.0], tf.float64)
        p = tf.math.igamma(a, tf.zeros_like(a))
        da = tf.gradients(tf.reduce_sum(p), a)[0]
        with tf.Session(graph=g) as s:
            np.testing.assert_array_equal(s.run(da), [0.0, 0.0, 0.0])


def test_invert_permutation_refuses_a_non_permutation():
    np.testing.assert_array_equal(_run(lambda: tf.invert_permutation(np.array([2, 0, 1], np.int32))), [1, 2, 0])
    for bad in ([0, 0, 1], [0, 3, 1], [-1, 0, 1]):
        with pytest.raises(tf.errors.InvalidArgumentError, match="not a permutation"):
            _run(lambda: tf.invert_permutation(np.array(bad, np.int32)))


def test_argmax_and_argmin_skip_nan():
    # TF's reducer keeps the first strict maximum: NaN never wins; an all-NaN row gives 0
    x = np.array([[1.0, 3.0, 3.0], [np.nan, 1.0, np.nan], [np.nan, np.nan, np.nan]], np.float32)
    np.testing.assert_array_equal(_run(lambda: tf.argmax(x, 1)), [1, 1, 0])
    np.testing.assert_array_equal(_run(lambda: tf.argmin(np.array([[1.0, np.nan, 0.0]], np.float32), 1)), [2])


def test_unique_keeps_every_nan_apart():
    y, idx = _run(lambda: tf.unique(np.array([np.nan, 1.0, np.nan, 1.0], np.float32)))
    assert np.isnan(y[0]) and y[1] == 1.0 and np.isnan(y[2]) and len(y) == 3
    np.testing.assert_array_equal(idx, [0, 1, 2, 1])
    _, _, counts = _run(lambda: tf.unique_with_counts(np.array([np.nan, 1.0, np.nan], np.float64)))
    np.testing.assert_array_equal(counts, [1, 1, 1])


def test_soft_nms_decays_overlaps_above_the_iou_threshold():
    # Soft-NMS (sigma > 0) scales each overlapping score by exp(-iou^2 / (2 sigma)), also where
    # the IoU passes iou_threshold (TF's kernel); only hard NMS (sigma = 0) drops those boxes
    boxes = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11]], np.float32)
    scores = np.array([0.9, 0.75, 0.6, 0.95], np.float32)
    idx, sc = _run(lambda: list(tf.image.non_max_suppression_with_scores(boxes, scores, 4, 0.5, soft_nms_sigma=0.5)))
    iou01 = 0.9 / 1.1          # boxes 0 and 1 (and 0 and 2) overlap by 0.9 of width 1
    iou12 = 0.8 / 1.2
    s1 = 0.75 * np.exp(-iou01 ** 2)
    s2 = 0.6 * np.exp(-iou01 ** 2) * np.exp(-iou12 ** 2)
    np.testing.assert_array_equal(idx, [3, 0, 1, 2])
    np.testing.assert_allclose(sc, [0.95, 0.9, s1, s2], rtol=1e-5)
    hard = _run(lambda: tf.image.non_max_suppression(boxes, scores, 4, 0.5))
    np.testing.assert_array_equal(hard, [3, 0])


def test_mean_of_nothing_is_nan_without_a_warning():
    # NumPy's mean of an empty slice warns (an error under this suite's filterwarnings); TF's is NaN
    x = np.zeros([0, 3], np.float32)
    m0, m1, v = _run(lambda: [tf.reduce_mean(x), tf.reduce_mean(x, axis=0), tf.math.reduce_variance(x)])
    assert np.isnan(m0) and m1.shape == (3,) and np.isnan(m1).all() and np.isnan(v)


def test_clip_by_value_with_min_above_max_gives_min():
    # TF1's clip_by_value is maximum(minimum(x, max), min): with min > max every element is the
    # min (np.clip would give the max), and no gradient passes; inside, bounds included, it does
    def fn():
        x = tf.constant([-3.0, -1.0, 0.0, 1.0, 3.0])
        inv = tf.clip_by_value(x, 1.0, -1.0)
        ok = tf.clip_by_value(x, -1.0, 1.0)
        return inv, ok, tf.gradients(inv, x)[0], tf.gradients(ok, x)[0]
    inv, ok, ginv, gok = _run(fn)
    np.testing.assert_array_equal(inv, [1.0] * 5)
    np.testing.assert_array_equal(ok, [-1.0, -1.0, 0.0, 1.0, 1.0])
    np.testing.assert_array_equal(ginv, [0.0] * 5)
    np.testing.assert_array_equal(gok, [0.0, 1.0, 1.0, 1.0, 0.0])


def _tf_max_pool_ref(x, k, s, pad):
    """TF's CPU MaxPool and MaxPoolGrad rule, cell by cell: a window's value is the largest
    non-NaN cell, at least the lowest float; its gradient goes to the first real cell, replaced
    by each later cell strictly greater than the one held (so a leading NaN keeps it)."""
    n, h, w, c = x.shape
    if pad == "SAME":
        oh, ow = -(-h // s[0]), -(-w // s[1])
        pt = max((oh - 1) * s[0] + k[0] - h, 0) // 2
        pl = max((ow - 1) * s[1] + k[1] - w, 0) // 2
    else:
        oh, ow, pt, pl = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1, 0, 0
    y = np.full((n, oh, ow, c), np.finfo(x.dtype).min, x.dtype)
    arg = {}
    for b, i, j, ch in np.ndindex(n, oh, ow, c):
        held = None
        for di, dj in np.ndindex(*k):
            r, q = i * s[0] - pt + di, j * s[1] - pl + dj
            if 0 <= r < h and 0 <= q < w:
                v = x[b, r, q, ch]
                if not np.isnan(v):
                    y[b, i, j, ch] = max(y[b, i, j, ch], v)
                if held is None or v > x[b, held[0], held[1], ch]:
                    held = (r, q)
        arg[b, i, j, ch] = held
    return y, arg


@pytest.mark.parametrize("relu", [False, True], ids=["pool", "relu-pool"])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_max_pool_with_nan_and_neg_inf_follows_tf(dt, relu):
    # TF skips NaN in a window (its value is the largest number), gives the lowest float to a
    # window of NaN and -inf only, and routes the gradient by its own argmax (a leading NaN
    # holds it): [nan, 1, 2, 3] pools to 3 and sends its gradient to the NaN; [-inf] * 4 pools
    # to -3.4e38.  Tiled, overlapping and SAME-padded windows; relu -> pool takes the fused path
    rng = np.random.default_rng(5)
    for shape, k, s, pad in [((2, 4, 4, 3), (2, 2), (2, 2), "VALID"), ((1, 5, 6, 2), (3, 3), (2, 2), "SAME"),
                             ((2, 5, 5, 2), (2, 3), (1, 2), "SAME"), ((1, 6, 4, 2), (3, 2), (3, 2), "VALID")]:
        x = rng.integers(-3, 4, size=shape).astype(dt)
        m = rng.random(shape)
        x[m < 0.2] = np.nan
        x[(m >= 0.2) & (m < 0.4)] = -np.inf
        x[0, :k[0], :k[1], 0] = [[np.nan] + [1.0] * (k[1] - 1)] + [[2.0] * k[1]] * (k[0] - 1)
        x[-1, -k[0]:, -k[1]:, -1] = -np.inf
        g = tf.Graph()
        with g.as_default():
            xt = tf.constant(x)
            z = tf.nn.relu(xt) if relu else xt
            y = tf.nn.max_pool(z, [1, k[0], k[1], 1], [1, s[0], s[1], 1], pad)
            gy = rng.normal(size=y.shape.as_list()).astype(dt)
            dx = tf.gradients(y, xt, grad_ys=tf.constant(gy))[0]
            with tf.Session(graph=g) as sess:
                yv, dxv = sess.run([y, dx])
        zr = np.where(np.isnan(x), x, np.maximum(x, 0)) if relu else x
        ry, arg = _tf_max_pool_ref(zr, k, s, pad)
        rdx = np.zeros_like(x)
        for (b, i, j, ch), (r, q) in arg.items():
            if not relu or zr[b, r, q, ch] > 0:
                rdx[b, r, q, ch] += gy[b, i, j, ch]
        np.testing.assert_array_equal(yv, ry)
        np.testing.assert_allclose(dxv, rdx, rtol=1e-6, atol=0)
        assert np.isfinite(yv).all()  # no NaN, and the lowest float for an empty window


@pytest.mark.parametrize("include_batch", [False, True])
def test_max_pool_with_argmax_follows_tf_with_nan_and_inf(include_batch):
    # TF's MaxPoolWithArgmax holds each window's first real cell and replaces it by each later
    # one strictly greater, and outputs the held value: a leading NaN stays (NaN out), a later
    # NaN is never taken, a window of -inf gives -inf and an index inside the image
    rng = np.random.default_rng(11)
    for shape, k, s, pad in [((2, 4, 4, 3), (2, 2), (2, 2), "VALID"), ((1, 5, 6, 2), (3, 3), (2, 2), "SAME"),
                             ((2, 5, 5, 2), (2, 3), (1, 2), "SAME"), ((1, 6, 4, 2), (3, 2), (3, 2), "VALID")]:
        x = rng.integers(-3, 4, size=shape).astype(np.float32)
        m = rng.random(shape)
        x[m < 0.2] = np.nan
        x[(m >= 0.2) & (m < 0.4)] = -np.inf
        x[(m >= 0.4) & (m < 0.45)] = np.inf
        x[0, :k[0], :k[1], 0] = [[2.0] + [np.nan] * (k[1] - 1)] + [[1.0] * k[1]] * (k[0] - 1)
        g = tf.Graph()
        with g.as_default():
            xt = tf.constant(x)
            y, am = tf.nn.max_pool_with_argmax(xt, [1, *k, 1], [1, *s, 1], pad, include_batch_in_index=include_batch)
            gy = rng.normal(size=y.shape.as_list()).astype(np.float32)
            dx = tf.gradients(y, xt, grad_ys=tf.constant(gy))[0]
            with tf.Session(graph=g) as sess:
                yv, amv, dxv = sess.run([y, am, dx])
        _, arg = _tf_max_pool_ref(x, k, s, pad)
        n, h, w, c = shape
        ry, ram, rdx = np.empty(yv.shape, np.float32), np.empty(amv.shape, np.int64), np.zeros_like(x)
        for (b, i, j, ch), (r, q) in arg.items():
            ry[b, i, j, ch] = x[b, r, q, ch]
            ram[b, i, j, ch] = ((b * h if include_batch else 0) + r) * w * c + q * c + ch
            rdx[b, r, q, ch] += gy[b, i, j, ch]
        np.testing.assert_array_equal(yv, ry)
        np.testing.assert_array_equal(amv, ram)
        np.testing.assert_allclose(dxv, rdx, rtol=1e-6, atol=0)
        assert yv[0, 0, 0, 0] == 2.0 and amv[0, 0, 0, 0] == 0


@pytest.mark.parametrize("overlapping", [False, True])
def test_fractional_max_pool_skips_nan_as_tf(overlapping):
    # TF's FractionalMaxPool folds each region with max from the lowest float, so NaN is
    # skipped and a region of NaN and -inf pools to -3.4e38; its gradient goes to the cell TF's
    # argmax rule picks (first cell, replaced by each later one strictly greater)
    rng = np.random.default_rng(12)
    x = rng.integers(-2, 3, size=(2, 7, 8, 3)).astype(np.float32)
    m = rng.random(x.shape)
    x[m < 0.25] = np.nan
    x[(m >= 0.25) & (m < 0.4)] = -np.inf
    x[0, :3, :3, 0] = np.nan                      # a region of NaN only
    x[1, :3, :3, 1] = -np.inf
    x[0, 1, 1, 0] = 5.0
    g = tf.Graph()
    with g.as_default():
        xt = tf.constant(x)
        y, rows, cols = tf.nn.fractional_max_pool(xt, [1, 1.6, 1.7, 1], pseudo_random=True, overlapping=overlapping,
                                                  deterministic=True, seed=3, seed2=4)
        with tf.Session(graph=g) as sess:
            yv, rv, cv = sess.run([y, rows, cols])
        gy = rng.normal(size=yv.shape).astype(np.float32)
        dx = tf.gradients(y, xt, grad_ys=tf.constant(gy))[0]
        with tf.Session(graph=g) as sess:
            dxv = sess.run(dx)
    extra = 1 if overlapping else 0
    ry, rdx = np.empty_like(yv), np.zeros_like(x)
    for b, i, j, ch in np.ndindex(*yv.shape):
        cells = [(r, q) for r in range(rv[i], min(rv[i + 1] + extra, 7)) for q in range(cv[j], min(cv[j + 1] + extra, 8))]
        vals = [x[b, r, q, ch] for r, q in cells]
        ry[b, i, j, ch] = max([v for v in vals if not np.isnan(v)] + [np.finfo(np.float32).min])
        held = 0
        for t, v in enumerate(vals):
            if v > vals[held]:
                held = t
        rdx[b, cells[held][0], cells[held][1], ch] += gy[b, i, j, ch]
    np.testing.assert_array_equal(yv, ry)
    assert np.isfinite(yv).all()
    np.testing.assert_allclose(dxv, rdx, rtol=1e-6, atol=0)


def test_dilation2d_follows_tf_with_nan_and_inf():
    # TF's Dilation2D: each output starts at the lowest float and takes x + f of each real tap
    # strictly greater (row-major): NaN is skipped, +inf taken, a window of NaN and -inf gives
    # -3.4e38 and sends its gradient to the window's first real cell and the filter's tap (0, 0)
    low = np.finfo(np.float32).min
    x = np.array([[1, np.nan, 2],
                  [np.inf, 0, -np.inf],
                  [np.nan, -np.inf, -np.inf]], np.float32).reshape(1, 3, 3, 1)
    f = np.array([[0, 1], [2, 0]], np.float32).reshape(2, 2, 1)
    g = tf.Graph()
    with g.as_default():
        xt, ft = tf.constant(x), tf.constant(f)
        y = tf.nn.dilation2d(xt, ft, [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
        gy = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)
        dx, df = tf.gradients(y, [xt, ft], grad_ys=tf.constant(gy))
        e = tf.nn.erosion2d(-xt, ft[::-1, ::-1], [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
        with tf.Session(graph=g) as sess:
            yv, dxv, dfv, ev = sess.run([y, dx, df, e])
    # windows (SAME pads below and right): taps x[i, j] + 0, x[i, j+1] + 1, x[i+1, j] + 2, x[i+1, j+1] + 0
    np.testing.assert_array_equal(yv.reshape(3, 3), [[np.inf, 3, 2], [np.inf, 0, low], [low, low, low]])
    np.testing.assert_array_equal(ev, -yv)  # erosion is the dilation of -x by the reflected filter
    want_dx = np.zeros((3, 3), np.float32)
    # (0,0) -> inf at x[1,0]; (0,1) -> x[0,2] + 1; (0,2) -> x[0,2]; (1,0) -> x[1,0]; (1,1) -> x[1,1];
    # (1,2) -> x[1,2] = -inf is not above the lowest float: nothing taken, the first real cell
    # x[1,2]; row 2: nothing taken, the first real cell
    for (i, j), (r, q) in {(0, 0): (1, 0), (0, 1): (0, 2), (0, 2): (0, 2), (1, 0): (1, 0), (1, 1): (1, 1),
                           (1, 2): (1, 2), (2, 0): (2, 0), (2, 1): (2, 1), (2, 2): (2, 2)}.items():
        want_dx[r, q] += gy[0, i, j, 0]
    np.testing.assert_array_equal(dxv.reshape(3, 3), want_dx)
    want_df = np.zeros((2, 2), np.float32)
    for (i, j), tap in {(0, 0): (1, 0), (0, 1): (0, 1), (0, 2): (0, 0), (1, 0): (0, 0), (1, 1): (0, 0),
                        (1, 2): (0, 0), (2, 0): (0, 0), (2, 1): (0, 0), (2, 2): (0, 0)}.items():
        want_df[tap] += gy[0, i, j, 0]
    np.testing.assert_array_equal(dfv.reshape(2, 2), want_df)


def test_relu_family_dtypes_and_nan_gradients_follow_tf():
    # TF1: relu and relu6 take integers (same dtype out); leaky_relu casts integers to float32
    # and holds alpha as a 32-bit float (a float64 input is scaled by float64(float32(0.2)));
    # Relu6Grad multiplies the gradient by its mask, so a NaN gradient outside (0, 6) stays NaN
    g = tf.Graph()
    with g.as_default():
        i = tf.constant(np.array([-3, 0, 2, 9], np.int32))
        f = tf.constant(np.array([-1.5, 0.5], np.float64))
        leaky_i = tf.nn.leaky_relu(i)
        assert leaky_i.dtype == tf.float32
        x = tf.constant(np.array([np.nan, 7.0, 3.0], np.float32))
        y = tf.nn.relu6(x)
        dx = tf.gradients(y, x, grad_ys=tf.constant(np.array([np.nan, np.nan, 1.0], np.float32)))[0]
        with tf.Session(graph=g) as sess:
            r, r6, li, lf, dxv = sess.run([tf.nn.relu(i), tf.nn.relu6(i), leaky_i, tf.nn.leaky_relu(f), dx])
    np.testing.assert_array_equal(r, [0, 0, 2, 9])
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r6, [0, 0, 2, 6])
    np.testing.assert_array_equal(li, np.array([-3 * np.float32(0.2), 0, 2, 9], np.float32))
    np.testing.assert_array_equal(lf, [-1.5 * float(np.float32(0.2)), 0.5])
    np.testing.assert_array_equal(dxv, [np.nan, np.nan, 1.0])


def test_resize_area_on_one_pixel_with_align_corners_and_its_missing_gradient():
    # align_corners=True on a dimension of one pixel: TF's area resize uses in / out there (its
    # output equals align_corners=False's; a zero scale gave NaN); TF registers no gradient
    # for ResizeArea, so tf.gradients through it raises LookupError
    x = np.array([3.0, 5.0], np.float32).reshape(1, 1, 2, 1)
    g = tf.Graph()
    with g.as_default():
        xt = tf.constant(x)
        a = tf.image.resize_area(xt, [3, 1], align_corners=True)
        b = tf.image.resize_area(xt, [3, 1], align_corners=False)
        with tf.Session(graph=g) as sess:
            av, bv = sess.run([a, b])
        with pytest.raises(LookupError, match="ResizeArea"):
            tf.gradients(tf.reduce_sum(a), xt)
    np.testing.assert_array_equal(av, bv)
    np.testing.assert_allclose(av.ravel(), [4.0, 4.0, 4.0], rtol=1e-6)


def test_missing_gradients_raise_lookup_error_only_on_a_float_path():
    # TF registers no gradient for RandomPoissonV2 or LRNGrad: a gradient that has to pass
    # through one raises LookupError; an op reached from x only through integers (its shape)
    # is not on the path, so x's gradient there is simply None
    g = tf.Graph()
    with g.as_default():
        lam = tf.constant([1.0, 2.0])
        with pytest.raises(LookupError, match="RandomPoissonV2"):
            tf.gradients(tf.reduce_sum(tf.random.poisson(lam, [3])), lam)
        x = tf.constant(np.ones((1, 2, 2, 3), np.float32))
        dx = tf.gradients(tf.reduce_sum(tf.nn.lrn(x)), x)[0]
        with pytest.raises(LookupError, match="LRNGrad"):
            tf.gradients(tf.reduce_sum(dx), x)
        v = tf.constant([1.0, 2.0, 3.0])
        r = tf.random.poisson(1.5, [tf.shape(v)[0], 2])
        assert tf.gradients(tf.reduce_sum(r * r), v) == [None]
        # integers between x and the loss carry nothing either
        w = tf.cast(tf.cast(v, tf.int32) * 2, tf.float32)
        assert tf.gradients(tf.reduce_sum(w), v) == [None]


def test_string_to_number_reads_as_c_and_string_sparse_to_dense_pads_empty():
    # TF converts with C's rules: hexadecimal floats are numbers, "1_000" and other scripts'
    # digits are not (Python's float and int take those); a string SparseTensor densifies
    # with "" where TF's default value is the dtype's zero
    g = tf.Graph()
    with g.as_default():
        ok = tf.strings.to_number(tf.constant(["0x10", "0x1.8p1", " 4 ", "-inf"]))
        bad = [tf.strings.to_number(tf.constant([s]), out_type=dt) for s in ("1_000", "\u0663")
               for dt in (tf.float32, tf.int32)]
        dense = tf.sparse.to_dense(tf.strings.split(tf.constant(["a b", "c"])))
        with tf.Session(graph=g) as sess:
            np.testing.assert_array_equal(sess.run(ok), [16.0, 3.0, 4.0, -np.inf])
            for b in bad:
                with pytest.raises(tf.errors.InvalidArgumentError, match="could not correctly convert"):
                    sess.run(b)
            np.testing.assert_array_equal(sess.run(dense), [[b"a", b"b"], [b"c", b""]])
