"""The rest of tf.contrib.image without TensorFlow: dense_image_warp / interpolate_bilinear
against loop references (points outside, 'ij' and 'xy', batches, channels, float64, mixed
dtypes), interpolate_spline against numpy.linalg solves, sparse_image_warp's control points,
connected_components against a BFS, bipartite_match against a greedy loop, the YIQ
adjustments against the matrix product, finite-difference gradients (tests/gradcheck.py)
and the errors for bad input.  tests/tf1/test_vs_tensorflow_contrib_image_more.py compares
the warps and the spline with TF 1.15's formulas built from TensorFlow's ops."""
import collections

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import InvalidArgumentError
from gradcheck import Case, check_case

ci = tf.contrib.image
pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test


def _run(t, feed=None):
    with tf.Session() as s:
        return s.run(t, feed)


# -- references ------------------------------------------------------------------------------


def _bilinear_ref(grid, points, indexing="ij"):
    """Loops: each point clamped to the grid (floor to [0, size - 2], fraction to [0, 1])."""
    b, h, w, c = grid.shape
    out = np.zeros((b, points.shape[1], c))
    for i in range(b):
        for n in range(points.shape[1]):
            y, x = points[i, n] if indexing == "ij" else points[i, n, ::-1]
            y0 = int(min(max(0, np.floor(y)), h - 2))
            x0 = int(min(max(0, np.floor(x)), w - 2))
            ay = min(max(y - y0, 0.0), 1.0)
            ax = min(max(x - x0, 0.0), 1.0)
            for ch in range(c):
                top = grid[i, y0, x0, ch] * (1 - ax) + grid[i, y0, x0 + 1, ch] * ax
                bottom = grid[i, y0 + 1, x0, ch] * (1 - ax) + grid[i, y0 + 1, x0 + 1, ch] * ax
                out[i, n, ch] = top * (1 - ay) + bottom * ay
    return out


def _warp_ref(image, flow):
    b, h, w, c = image.shape
    ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    points = np.stack([ys, xs], -1)[None] - flow
    return _bilinear_ref(image, points.reshape(b, h * w, 2)).reshape(image.shape)


def _phi_ref(r, order):
    if order == 1:
        return np.sqrt(np.maximum(r, 1e-10))
    if order % 2 == 0:
        return 0.5 * r ** (order / 2) * np.log(np.maximum(r, 1e-10))
    return np.maximum(r, 1e-10) ** (order / 2)


def _spline_ref(c, f, q, order, reg=0.0):
    out = []
    for b in range(c.shape[0]):
        n, d = c[b].shape
        a = _phi_ref(((c[b][:, None] - c[b][None]) ** 2).sum(-1), order) + reg * np.eye(n)
        bb = np.c_[c[b], np.ones(n)]
        lhs = np.block([[a, bb], [bb.T, np.zeros((d + 1, d + 1))]])
        wv = np.linalg.solve(lhs, np.r_[f[b], np.zeros((d + 1, f.shape[2]))])
        rq = ((q[b][:, None] - c[b][None]) ** 2).sum(-1)
        out.append(_phi_ref(rq, order) @ wv[:n] + np.c_[q[b], np.ones(len(q[b]))] @ wv[n:])
    return np.array(out)


def _components_ref(images):
    """BFS flood fill per image, labels numbered in row-major order of first pixels."""
    out = np.zeros(images.shape, np.int64)
    label = 0
    n, h, w = images.shape
    for b in range(n):
        for i in range(h):
            for j in range(w):
                v = images[b, i, j]
                if out[b, i, j] or not (len(v) if isinstance(v, bytes) else v != 0):
                    continue
                label += 1
                out[b, i, j] = label
                queue = collections.deque([(i, j)])
                while queue:
                    y, x = queue.popleft()
                    for ny, nx in ((y - 1, x), (y + 1, x), (y, x - 1), (y, x + 1)):
                        if 0 <= ny < h and 0 <= nx < w and not out[b, ny, nx] and images[b, ny, nx] == v:
                            out[b, ny, nx] = label
                            queue.append((ny, nx))
    return out


def _greedy_ref(dist, valid_rows, top_k):
    rows, cols = dist.shape
    r2c, c2r = -np.ones(rows, np.int32), -np.ones(cols, np.int32)
    limit = top_k if top_k > 0 else valid_rows * cols
    pairs = sorted((dist[r, c], r, c) for r in range(valid_rows) for c in range(cols))
    k = 0
    for _, r, c in pairs:
        if r2c[r] == -1 and c2r[c] == -1 and k < limit:
            r2c[r], c2r[c] = c, r
            k += 1
    return r2c, c2r


# -- interpolate_bilinear / dense_image_warp -------------------------------------------------


@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_interpolate_bilinear_matches_loops(indexing, dtype):
    rng = np.random.RandomState(0)
    grid = rng.rand(2, 4, 6, 3).astype(dtype)  # not square: 'xy' must clamp rows by the height
    points = rng.uniform(-2, 7, size=(2, 9, 2)).astype(dtype)  # many outside the grid
    points[0, 0] = [1.0, 2.0] if indexing == "ij" else [2.0, 1.0]  # a grid point exactly
    out = _run(ci.interpolate_bilinear(grid, points, indexing=indexing))
    assert out.dtype == dtype and out.shape == (2, 9, 3)
    want = _bilinear_ref(grid.astype(np.float64), points.astype(np.float64), indexing)
    np.testing.assert_allclose(out, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
    np.testing.assert_allclose(out[0, 0], grid[0, 1, 2], rtol=1e-6)


def test_interpolate_bilinear_mixed_dtypes_and_dynamic_shapes():
    rng = np.random.RandomState(1)
    grid = rng.rand(1, 3, 3, 2).astype(np.float32)
    points = rng.uniform(0, 2, size=(1, 5, 2))
    out = _run(ci.interpolate_bilinear(grid, points))  # float64 points, float32 grid: the grid's dtype
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, _bilinear_ref(grid.astype(np.float64), points), rtol=1e-5)
    g = tf.placeholder(tf.float64, [None, None, None, None])
    q = tf.placeholder(tf.float64, [None, None, 2])
    y = ci.interpolate_bilinear(g, q)
    grid64 = rng.rand(3, 2, 5, 1)
    pts = rng.uniform(-1, 5, size=(3, 4, 2))
    np.testing.assert_allclose(_run(y, {g: grid64, q: pts}), _bilinear_ref(grid64, pts), rtol=1e-12)


def test_dense_image_warp_matches_loops_and_shifts():
    rng = np.random.RandomState(2)
    image = rng.rand(2, 5, 4, 3)
    flow = rng.uniform(-3, 3, size=(2, 5, 4, 2))  # some reach past the border
    out = _run(ci.dense_image_warp(image, flow))
    np.testing.assert_allclose(out, _warp_ref(image, flow), rtol=1e-12)
    # a whole-pixel flow (1, -1): output[j, i] = image[j - 1, i + 1], the border repeated outside
    shift = np.tile(np.array([1.0, -1.0]), (2, 5, 4, 1))
    out = _run(ci.dense_image_warp(image.astype(np.float32), shift.astype(np.float32)))
    rows = np.clip(np.arange(5) - 1, 0, 4)
    cols = np.clip(np.arange(4) + 1, 0, 3)
    np.testing.assert_allclose(out, image[:, rows][:, :, cols].astype(np.float32), rtol=1e-6)
    assert out.dtype == np.float32
    # float16 image with a float32 flow keeps the image's dtype
    half = _run(ci.dense_image_warp(image.astype(np.float16), (0.5 * shift).astype(np.float32)))
    assert half.dtype == np.float16
    np.testing.assert_allclose(half, _warp_ref(image, 0.5 * shift), atol=2e-3)


def test_warp_errors():
    with pytest.raises(ValueError, match="Indexing mode must be 'ij' or 'xy'"):
        ci.interpolate_bilinear(np.zeros((1, 2, 2, 1)), np.zeros((1, 1, 2)), indexing="yx")
    with pytest.raises(ValueError, match="Grid must be 4 dimensional"):
        ci.interpolate_bilinear(np.zeros((2, 2, 1)), np.zeros((1, 1, 2)))
    with pytest.raises(InvalidArgumentError, match="Query points must be 3 dimensional"):
        ci.interpolate_bilinear(np.zeros((1, 2, 2, 1)), np.zeros((1, 2)))
    with pytest.raises(InvalidArgumentError, match="Query points must be size 2 in dim 2"):
        _run(ci.interpolate_bilinear(np.zeros((1, 2, 2, 1)), np.zeros((1, 4, 3))))
    with pytest.raises(InvalidArgumentError, match="Grid height must be at least 2"):
        _run(ci.interpolate_bilinear(np.zeros((1, 1, 3, 1)), np.zeros((1, 4, 2))))
    with pytest.raises(InvalidArgumentError, match="Grid width must be at least 2"):
        _run(ci.dense_image_warp(np.zeros((1, 3, 1, 1)), np.zeros((1, 3, 1, 2))))
    with pytest.raises(ValueError, match="flow must have shape"):
        ci.dense_image_warp(np.zeros((1, 3, 3, 1)), np.zeros((1, 3, 3, 3)))
    with pytest.raises(TypeError, match="float"):
        ci.interpolate_bilinear(np.zeros((1, 2, 2, 1), np.int32), np.zeros((1, 1, 2)))


def _off_grid(rng, shape, low, high):
    """Uniform values kept 0.05 away from integers: the clamped floor is not differentiable there."""
    v = rng.uniform(low, high, size=shape)
    frac = v - np.floor(v)
    return np.floor(v) + np.clip(frac, 0.05, 0.95)


@pytest.mark.parametrize("case", [
    Case("GatherV2", lambda img, flow: ci.dense_image_warp(img, flow), [],
         make_inputs=lambda r: [r.uniform(-1, 1, (2, 3, 4, 2)), _off_grid(r, (2, 3, 4, 2), -1.5, 1.5)],
         id="dense_image_warp"),
    Case("GatherV2", lambda g, q: ci.interpolate_bilinear(g, q, indexing="xy"), [],
         make_inputs=lambda r: [r.uniform(-1, 1, (2, 3, 4, 2)), _off_grid(r, (2, 5, 2), -1.0, 4.0)],
         id="interpolate_bilinear_xy"),
], ids=str)
def test_warp_gradients(case):
    check_case(case)


def test_warp_gradient_is_zero_outside_and_flows_into_the_image():
    image = tf.constant(np.arange(12, dtype=np.float64).reshape(1, 3, 4, 1))
    flow = tf.constant(np.full((1, 3, 4, 2), -5.5))  # every point far outside: the corner pixel
    y = ci.dense_image_warp(image, flow)
    gi, gf = _run(tf.gradients(tf.reduce_sum(y), [image, flow]))
    np.testing.assert_array_equal(gf, 0)
    want = np.zeros((1, 3, 4, 1))
    want[0, 2, 3, 0] = 12  # all 12 outputs read the bottom-right pixel
    np.testing.assert_allclose(gi, want)


# -- interpolate_spline / sparse_image_warp --------------------------------------------------


@pytest.mark.parametrize("order", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("reg", [0.0, 0.01])
def test_interpolate_spline_matches_numpy_solve(order, reg):
    rng = np.random.RandomState(order)
    c, f, q = rng.rand(2, 6, 2), rng.rand(2, 6, 3), rng.rand(2, 8, 2)
    out = _run(ci.interpolate_spline(c, f, q, order, regularization_weight=reg))
    # the pairwise distances go through |x|^2 - 2 x.y + |y|^2 (rounding near 0), as TF's
    np.testing.assert_allclose(out, _spline_ref(c, f, q, order, reg), rtol=1e-6, atol=1e-6)
    if reg == 0.0:  # an exact fit at the training points
        np.testing.assert_allclose(_run(ci.interpolate_spline(c, f, c, order)), f, atol=1e-6)


def test_interpolate_spline_dynamic_batch_and_errors():
    rng = np.random.RandomState(3)
    c, f, q = rng.rand(3, 5, 3).astype(np.float32), rng.rand(3, 5, 1).astype(np.float32), rng.rand(3, 4, 3)
    cp = tf.placeholder(tf.float32, [None, None, 3])
    fp = tf.placeholder(tf.float32, [None, None, 1])
    qp = tf.placeholder(tf.float32, [None, None, 3])
    out = _run(ci.interpolate_spline(cp, fp, qp, 3), {cp: c, fp: f, qp: q})
    assert out.dtype == np.float32 and out.shape == (3, 4, 1)
    np.testing.assert_allclose(out, _spline_ref(c.astype(np.float64), f.astype(np.float64), q.astype(np.float32)
                                                .astype(np.float64), 3), rtol=2e-3, atol=2e-4)
    with pytest.raises(ValueError, match=r"input points \(d\) must be statically-inferrable"):
        ci.interpolate_spline(tf.placeholder(tf.float32, [None, None, None]), fp, qp, 2)
    with pytest.raises(ValueError, match=r"output values \(k\) must be statically-inferrable"):
        ci.interpolate_spline(cp, tf.placeholder(tf.float32, [None, None, None]), qp, 2)


@pytest.mark.parametrize("case", [
    Case("MatrixSolve", lambda c, f, q: ci.interpolate_spline(c, f, q, 2), [],
         make_inputs=lambda r: [r.uniform(0, 3, (2, 5, 2)), r.uniform(-1, 1, (2, 5, 2)), r.uniform(0, 3, (2, 4, 2))],
         rtol=1e-4, atol=1e-6, id="interpolate_spline_order2"),
    Case("MatrixSolve", lambda c, f, q: ci.interpolate_spline(c, f, q, 3, regularization_weight=0.1), [],
         make_inputs=lambda r: [r.uniform(0, 3, (1, 4, 3)), r.uniform(-1, 1, (1, 4, 1)), r.uniform(0, 3, (1, 3, 3))],
         rtol=1e-4, atol=1e-6, id="interpolate_spline_order3_regularized"),
], ids=str)
def test_spline_gradients(case):
    check_case(case)


def test_sparse_image_warp_moves_control_points():
    rng = np.random.RandomState(4)
    image = rng.rand(2, 7, 8, 3).astype(np.float32)
    src = np.array([[[2.0, 3.0], [4.0, 5.0]], [[3.0, 3.0], [5.0, 2.0]]], np.float32)
    dst = src + np.array([[[1.0, 1.0], [0.0, -1.0]], [[-1.0, 2.0], [1.0, 0.0]]], np.float32)
    warped, flow = ci.sparse_image_warp(image, src, dst, num_boundary_points=2)
    warped, flow = _run([warped, flow])
    assert warped.shape == image.shape and flow.shape == (2, 7, 8, 2)
    for b in range(2):
        for (sy, sx), (dy, dx) in zip(src[b].astype(int), dst[b].astype(int)):
            np.testing.assert_allclose(flow[b, dy, dx], [dy - sy, dx - sx], atol=1e-3)
            np.testing.assert_allclose(warped[b, dy, dx], image[b, sy, sx], atol=2e-3)
        for y, x in ((0, 0), (0, 7), (6, 0), (6, 7), (0, 3.5), (3, 0), (6, 3.5), (3, 7)):
            if float(x).is_integer():  # boundary points at pixels: zero flow there
                np.testing.assert_allclose(flow[b, int(y), int(x)], 0, atol=1e-3)
    same, zero = _run(list(ci.sparse_image_warp(image, src, src)))
    np.testing.assert_allclose(zero, 0, atol=1e-4)
    np.testing.assert_allclose(same, image, atol=1e-4)
    with pytest.raises(ValueError, match="static shape"):
        ci.sparse_image_warp(tf.placeholder(tf.float32, [None, 4, 4, 1]), src[:1], dst[:1])


def test_sparse_image_warp_gradient():
    check_case(Case("MatrixSolve", lambda img, d: ci.sparse_image_warp(img, tf.constant(
        np.array([[[1.0, 1.0], [2.0, 2.5]]])), d, interpolation_order=2, num_boundary_points=1)[0], [],
        make_inputs=lambda r: [r.uniform(0, 1, (1, 4, 4, 1)), np.array([[[1.3, 1.2], [2.2, 2.1]]])],
        rtol=1e-4, atol=1e-6, id="sparse_image_warp"))


# -- connected_components --------------------------------------------------------------------


def test_connected_components_matches_bfs():
    rng = np.random.RandomState(5)
    for shape, values in (((3, 9, 11), 3), ((2, 16, 16), 2), ((1, 1, 7), 4), ((2, 6, 1), 2)):
        images = rng.randint(0, values, size=shape).astype(np.int32)
        out = _run(ci.connected_components(images))
        assert out.dtype == np.int64
        np.testing.assert_array_equal(out, _components_ref(images))
    spiral = np.ones((9, 9), bool)  # a long winding component
    spiral[1, 1:8] = spiral[1:8, 7] = spiral[7, 1:8] = spiral[3:8, 1] = spiral[3, 1:6] = spiral[3:6, 5] = False
    spiral[5, 3:6] = False
    out = _run(ci.connected_components(spiral))
    np.testing.assert_array_equal(out, _components_ref(spiral[None])[0])


def test_connected_components_dtypes_and_ranks():
    floats = np.array([[[1.5, 1.5, np.nan], [0.0, np.nan, np.nan]]], np.float32)
    np.testing.assert_array_equal(_run(ci.connected_components(floats)), [[[1, 1, 2], [0, 3, 4]]])  # NaN != NaN
    strings = np.array([[b"a", b"a", b""], [b"b", b"", b"a"]], object)
    np.testing.assert_array_equal(_run(ci.connected_components(tf.constant(strings))), [[1, 1, 0], [2, 0, 3]])
    empty = _run(ci.connected_components(np.zeros((2, 0, 3), np.uint8)))
    assert empty.shape == (2, 0, 3) and empty.dtype == np.int64
    np.testing.assert_array_equal(_run(ci.connected_components(np.zeros((2, 2), bool))), 0)
    with pytest.raises(TypeError, match=r"images should have rank 2 \(HW\) or 3 \(NHW\)"):
        ci.connected_components(np.zeros(4, bool))
    with pytest.raises(TypeError, match="does not take"):
        ci.connected_components(np.zeros((2, 2), np.complex64))
    assert tf.gradients(tf.cast(ci.connected_components(tf.constant(np.ones((2, 2)))), tf.float32),
                        []) == []


# -- bipartite_match -------------------------------------------------------------------------


def test_bipartite_match_matches_greedy_loop():
    rng = np.random.RandomState(6)
    for rows, cols, valid, top_k in ((4, 6, -1, -1), (6, 4, -1, -1), (5, 5, 3, -1), (5, 7, 4.0, 2), (3, 3, 0, -1)):
        dist = rng.permutation(rows * cols).reshape(rows, cols).astype(np.float32) / 7.0
        r2c, c2r = _run(list(ci.bipartite_match(dist, valid, top_k)))
        valid_rows = rows if valid < 0 else int(valid)
        want_r, want_c = _greedy_ref(dist, valid_rows, top_k)
        assert r2c.dtype == np.int32 and r2c.shape == (rows,) and c2r.shape == (cols,)
        np.testing.assert_array_equal(r2c, want_r)
        np.testing.assert_array_equal(c2r, want_c)


def test_bipartite_match_ties_and_errors():
    # equal distances leave in the order of TF's std::priority_queue: the heap pushed row-major
    dist = np.array([[0.5, 0.1, 0.9], [0.2, 0.1, 0.3]], np.float32)
    r2c, c2r = _run(list(ci.bipartite_match(dist, -1)))
    np.testing.assert_array_equal(r2c, [1, 0])
    np.testing.assert_array_equal(c2r, [1, 0, -1])
    ones = np.ones((3, 4), np.float32)
    r2c, c2r = _run(list(ci.bipartite_match(ones, [2.9])))  # int(2.9 + 0.1) == 3 rows
    assert sorted(r2c) == sorted(set(r2c)) and (r2c >= 0).all()
    np.testing.assert_array_equal(c2r[r2c], [0, 1, 2])
    with pytest.raises(ValueError, match="rank 2"):
        ci.bipartite_match(np.zeros(3, np.float32), -1)
    with pytest.raises(InvalidArgumentError, match="at least 4 rows in distance_mat, but only got 3 rows"):
        _run(ci.bipartite_match(ones, 4)[0])
    with pytest.raises(InvalidArgumentError, match="should be a tensor with 1 element, but got 2"):
        _run(ci.bipartite_match(ones, [1.0, 2.0])[0])
    with pytest.raises(TypeError, match="has type float64 that does not match expected type of float32"):
        ci.bipartite_match(tf.constant(np.ones((2, 2))), -1)


def test_heap_order_is_libstdcxx_priority_queue():
    # pushing 0..n-1 with many ties: the pop order of equal keys follows the heap's layout
    from collflow.kernels.image_label_kernels import _heap_order
    dist = np.array([[1, 0, 1, 0], [0, 1, 0, 1]], np.float32)
    order = list(_heap_order(dist))
    assert [dist[r, c] for r, c in order] == sorted(dist.ravel())
    assert sorted(order) == [(r, c) for r in range(2) for c in range(4)]
    assert order[0] == (0, 1)  # the first 0 pushed rises to the top and stays there


# -- adjust_hsv_in_yiq / random_hsv_in_yiq ---------------------------------------------------

_YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]])
_YIQ_INV = np.array([[1, 0.95617069, 0.62143257], [1, -0.2726886, -0.64681324], [1, -1.103744, 1.70062309]])


def _hsv_ref(rgb, h, s, v):
    hsv = np.array([[v, 0, 0], [0, v * s * np.cos(h), -v * s * np.sin(h)], [0, v * s * np.sin(h), v * s * np.cos(h)]])
    return rgb @ (_YIQ_INV @ hsv @ _YIQ).T


def test_adjust_hsv_in_yiq_matches_the_matrix():
    rng = np.random.RandomState(7)
    rgb = rng.rand(2, 3, 4, 3).astype(np.float32)
    out = _run(ci.adjust_hsv_in_yiq(rgb, 0.7, 1.3, 0.8))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, _hsv_ref(rgb.astype(np.float64), 0.7, 1.3, 0.8), atol=1e-5)
    np.testing.assert_allclose(_run(ci.adjust_hsv_in_yiq(rgb)), rgb, atol=1e-5)  # the defaults: identity
    gray = np.full((2, 2, 3), 0.4, np.float32)  # hue and saturation leave grays alone
    np.testing.assert_allclose(_run(ci.adjust_hsv_in_yiq(gray, 1.0, 0.2)), gray, atol=1e-5)
    u8 = (rgb[0] * 255).astype(np.uint8)
    out8 = _run(ci.adjust_hsv_in_yiq(u8, 0.0, 1.0, 0.5))
    assert out8.dtype == np.uint8
    np.testing.assert_allclose(out8, u8 / 2.0, atol=1.01)
    with pytest.raises(ValueError, match="input must have 3 channels but instead has 4 channels"):
        ci.adjust_hsv_in_yiq(np.zeros((2, 2, 4), np.float32))
    with pytest.raises(ValueError, match="at least 3-D"):
        ci.adjust_hsv_in_yiq(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="delta_h must be scalar"):
        ci.adjust_hsv_in_yiq(rgb, [0.1, 0.2])


def test_adjust_hsv_in_yiq_gradient():
    check_case(Case("MatMul", lambda x: tf.cast(ci.adjust_hsv_in_yiq(tf.cast(x, tf.float32), 0.4, 1.1, 0.9), tf.float64), [],
                    make_inputs=lambda r: [r.uniform(0, 1, (2, 2, 3))], rtol=2e-2, atol=2e-3, eps=1e-3,
                    id="adjust_hsv_in_yiq"))


def test_random_hsv_in_yiq():
    rgb = np.random.RandomState(8).rand(4, 4, 3).astype(np.float32)
    fixed = _run(ci.random_hsv_in_yiq(rgb, 0, 0.5, 0.5, 2.0, 2.0))
    np.testing.assert_allclose(fixed, _hsv_ref(rgb.astype(np.float64), 0, 0.5, 2.0), atol=1e-5)
    y = ci.random_hsv_in_yiq(rgb, 0.5, 0.5, 1.5, 0.5, 1.5, seed=11)
    with tf.Session() as s:
        a, b = s.run(y), s.run(y)
    assert not np.allclose(a, b)  # fresh draws per run
    with pytest.raises(ValueError, match="max_delta must be non-negative"):
        ci.random_hsv_in_yiq(rgb, -0.1)
    with pytest.raises(ValueError, match="lower_saturation must be non-negative"):
        ci.random_hsv_in_yiq(rgb, lower_saturation=-1)
    with pytest.raises(ValueError, match="lower_value must be non-negative"):
        ci.random_hsv_in_yiq(rgb, lower_value=-1)
    with pytest.raises(ValueError, match="lower_saturation must be < upper_saturation"):
        ci.random_hsv_in_yiq(rgb, lower_saturation=2, upper_saturation=1)
    with pytest.raises(ValueError, match="lower_value must be < upper_value"):
        ci.random_hsv_in_yiq(rgb, lower_value=2, upper_value=1)


# -- single_image_random_dot_stereograms -----------------------------------------------------


def _sirds_roots_ref(depth, width, height, win, dots, dpi, eye, mu, hsr=True, border=0.0):
    """The SIRDS ties by plain loops: per row, each visible pixel ties x - s/2 to x - s/2 + s."""
    mu = float(np.float32(mu))
    e2e = int(np.float32(eye) * np.float32(dpi))
    z = (depth - depth.min()) / (depth.max() - depth.min())
    dy = height - win[1]
    top = max(0, dy - dots) // 3 if dots > 0 else int(dy / 2)
    left0 = int((width - win[0]) / 2)

    def zat(x, y):
        xz = depth.shape[1] * (x - left0) / win[0]
        yz = depth.shape[0] * (y - top) / win[1]
        if xz < 0 or yz < 0 or xz >= depth.shape[1] or yz >= depth.shape[0]:
            return float(np.float32(border))
        return z[int(yz), int(xz)]

    def sep(v):
        return int(np.floor((1 - mu * v) * e2e / (2 - mu * v) + 0.5))

    roots = np.zeros((height, width), np.int64)
    for y in range(height):
        same = list(range(width))
        for x in range(width):
            g = zat(x, y)
            s = sep(g)
            left = x - s // 2
            right = left + s
            if left < 0 or right >= width:
                continue
            visible, t = True, 1
            while hsr:
                zt = g + 2 * (2 - mu * g) * t / float(np.float32(mu) * np.float32(e2e))
                visible = zat(x - t, y) < zt and zat(x + t, y) < zt
                t += 1
                if not visible or zt >= 1:
                    break
            if not visible:
                continue
            k = same[left]
            while k != left and k != right:
                if k < right:
                    left, k = k, same[k]
                else:
                    same[left] = right
                    left = right
                    k = same[left]
                    right = k
            same[left] = right
        for x in range(width - 1, -1, -1):
            roots[y, x] = x if same[x] == x else roots[y, same[x]]
    return roots


@pytest.mark.parametrize("hsr", [True, False])
def test_single_image_random_dot_stereograms_ties(hsr):
    from collflow.kernels.image_sirds_kernels import _roots
    depth = np.random.RandomState(9).randint(0, 6, size=(5, 7)).astype(np.float32)
    kw = dict(hidden_surface_removal=hsr, convergence_dots_size=4, dots_per_inch=10, eye_separation=2.5, mu=0.3333,
              output_image_shape=[64, 24, 1], output_data_window=[56, 16])
    out = _run(ci.single_image_random_dot_stereograms(depth, **kw))
    assert out.dtype == np.uint8 and out.shape == (24, 64, 1)
    want = _sirds_roots_ref(depth, 64, 24, (56, 16), 4, 10, 2.5, 0.3333, hsr)
    attrs = dict(kw, normalize=True, normalize_max=-100.0, normalize_min=100.0, border_level=0.0, number_colors=256,
                 output_image_shape=(64, 24, 1), output_data_window=(56, 16))
    np.testing.assert_array_equal(_roots(depth, attrs)[1], want)
    dot_rows = slice(24 - 1 - (24 - 16 - 4) // 3 - 3, 24 - (24 - 16 - 4) // 3)
    body = np.ones(24, bool)
    body[dot_rows] = False
    tied = np.take_along_axis(out[:, :, 0], want, axis=1)
    np.testing.assert_array_equal(out[body, :, 0], tied[body])  # a pixel shows its root's dot


def test_single_image_random_dot_stereograms_shapes_and_errors():
    flat = np.zeros((3, 3), np.int32)
    y = ci.single_image_random_dot_stereograms(flat, normalize=False, convergence_dots_size=0, number_colors=2,
                                               output_image_shape=[200, 10, 1], output_data_window=[180, 8])
    assert y.shape.as_list() == [10, 200, 1]
    out = _run(y)
    assert set(np.unique(out)) <= {0, 255}
    np.testing.assert_array_equal(out[:, :-90], out[:, 90:])  # a flat far plane repeats every E2E / 2 = 90
    color = ci.single_image_random_dot_stereograms(flat.astype(np.float64), number_colors=1000, normalize=False,
                                                   output_image_shape=[40, 12, 1], output_data_window=[30, 4])
    assert color.shape.as_list() == [12, 40, 3] and _run(color).shape == (12, 40, 3)
    assert ci.single_image_random_dot_stereograms(np.zeros((2, 2))).shape.as_list() == [768, 1024, 1]
    with pytest.raises(TypeError, match="depth_values must be one of"):
        ci.single_image_random_dot_stereograms(np.zeros((2, 2), np.uint8))
    with pytest.raises(ValueError, match="2-D"):
        ci.single_image_random_dot_stereograms(np.zeros((2, 2, 2), np.float32))
    with pytest.raises(ValueError, match="output_image_shape must be 3"):
        ci.single_image_random_dot_stereograms(flat, output_image_shape=[4, 4])
