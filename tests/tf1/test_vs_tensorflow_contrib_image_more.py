"""tf.contrib.image's dense_image_warp, interpolate_bilinear, interpolate_spline and
sparse_image_warp against TF 1.15's formulas built from TensorFlow's own ops (contrib.image
was Python over gather, matmul and matrix_solve; TF 2.x dropped it): values, and the
gradients TensorFlow's autodiff gives (its max/min tie rules at grid points included).
The labelling and YIQ ops have no kernel left in TensorFlow to compare with.  Skipped
cleanly without TensorFlow."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()


def _tf_bilinear(grid, points, indexing="ij"):
    """TF 1.15's _interpolate_bilinear in TensorFlow ops (rows clamped by the height)."""
    b, h, w, c = (tft.shape(grid)[i] for i in range(4))
    n = tft.shape(points)[1]
    parts = tft.unstack(points, axis=2)
    rows, cols = (parts[0], parts[1]) if indexing == "ij" else (parts[1], parts[0])
    floors, alphas = [], []
    for q, size in ((rows, h), (cols, w)):
        fl = tft.minimum(tft.maximum(tft.constant(0.0, q.dtype), tft.floor(q)), tft.cast(size - 2, q.dtype))
        floors.append(tft.cast(fl, tft.int32))
        alpha = tft.cast(q - fl, grid.dtype)
        alphas.append(tft.minimum(tft.maximum(tft.constant(0.0, grid.dtype), alpha), tft.constant(1.0, grid.dtype))
                      [:, :, None])
    flat = tft.reshape(grid, [b * h * w, c])
    offsets = tft.reshape(tft.range(b) * h * w, [b, 1])

    def at(y, x):
        return tft.reshape(tft.gather(flat, offsets + y * w + x), [b, n, c])

    tl, tr = at(floors[0], floors[1]), at(floors[0], floors[1] + 1)
    bl, br = at(floors[0] + 1, floors[1]), at(floors[0] + 1, floors[1] + 1)
    top = alphas[1] * (tr - tl) + tl
    bottom = alphas[1] * (br - bl) + bl
    return alphas[0] * (bottom - top) + top


def _tf_warp(image, flow):
    b, h, w, c = (tft.shape(image)[i] for i in range(4))
    gx, gy = tft.meshgrid(tft.range(w), tft.range(h))
    grid = tft.cast(tft.stack([gy, gx], axis=2), flow.dtype)[None]
    q = tft.reshape(grid - flow, [b, h * w, 2])
    return tft.reshape(_tf_bilinear(image, q), [b, h, w, c])


def _tf_phi(r, order):
    if order == 1:
        return tft.sqrt(tft.maximum(r, 1e-10))
    if order == 2:
        return 0.5 * r * tft.log(tft.maximum(r, 1e-10))
    if order == 4:
        return 0.5 * tft.square(r) * tft.log(tft.maximum(r, 1e-10))
    r = tft.maximum(r, 1e-10)
    return 0.5 * tft.pow(r, 0.5 * order) * tft.log(r) if order % 2 == 0 else tft.pow(r, 0.5 * order)


def _tf_spline(c, f, q, order, reg=0.0):
    b, n = tft.shape(c)[0], tft.shape(c)[1]
    d, k = c.shape[-1], f.shape[-1]
    gram = tft.matmul(c, c, adjoint_b=True)
    norm = tft.matrix_diag_part(gram)[:, :, None]
    a = _tf_phi(norm - 2 * gram + tft.transpose(norm, [0, 2, 1]), order)
    if reg > 0:
        a += reg * tft.eye(n, dtype=c.dtype)[None]
    bb = tft.concat([c, tft.ones_like(c[..., :1])], 2)
    lhs = tft.concat([tft.concat([a, tft.transpose(bb, [0, 2, 1])], 1),
                      tft.concat([bb, tft.zeros([b, d + 1, d + 1], c.dtype)], 1)], 2)
    wv = tft.matrix_solve(lhs, tft.concat([f, tft.zeros([b, d + 1, k], c.dtype)], 1))
    w, v = wv[:, :n], wv[:, n:]
    qn = tft.reduce_sum(tft.square(q), 2)[:, :, None]
    cn = tft.reduce_sum(tft.square(c), 2)[:, None, :]
    r = qn - 2 * tft.matmul(q, c, adjoint_b=True) + cn
    return tft.matmul(_tf_phi(r, order), w) + tft.matmul(tft.concat([q, tft.ones_like(q[..., :1])], 2), v)


def _both(tf_fn, cf_fn, inputs, weights_seed=0):
    """(TF's, collflow's) values and gradients of sum(y * R) w.r.t. every input."""
    res = []
    for tf, fn in ((tft, tf_fn), (cft, cf_fn)):
        with tf.Graph().as_default():
            xs = [tf.constant(v) for v in inputs]
            y = fn(*xs)
            r = np.random.RandomState(weights_seed).rand(*[int(s) for s in y.shape]).astype(y.dtype.as_numpy_dtype
                                                                                           if tf is tft else
                                                                                           y.dtype.np)
            grads = tf.gradients(tf.reduce_sum(y * r), xs)
            res.append(tf.Session().run([y] + grads))
    return res


@pytest.mark.parametrize("seed", range(8))
def test_dense_image_warp_matches_tensorflow(seed):
    rng = np.random.RandomState(seed)
    dtype = [np.float32, np.float64][seed % 2]
    b, h, w, c = rng.randint(1, 3), rng.randint(2, 7), rng.randint(2, 7), rng.randint(1, 4)
    image = rng.rand(b, h, w, c).astype(dtype)
    flow = rng.uniform(-3, 3, (b, h, w, 2)).astype(dtype)
    if seed % 4 == 3:
        flow = np.round(flow)  # whole pixels: every point on the grid, where the tie rules decide
    want, got = _both(_tf_warp, lambda x, f: cft.contrib.image.dense_image_warp(x, f), [image, flow])
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, e in zip(got, want):
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_interpolate_bilinear_matches_tensorflow(indexing):
    rng = np.random.RandomState(3)
    grid = rng.rand(2, 5, 5, 3)  # square: TF 1.15 clamps 'xy' rows by the width
    points = np.concatenate([rng.uniform(-2, 6, (2, 6, 2)), rng.randint(-1, 6, (2, 4, 2)).astype(np.float64)], 1)
    want, got = _both(lambda g, q: _tf_bilinear(g, q, indexing),
                      lambda g, q: cft.contrib.image.interpolate_bilinear(g, q, indexing=indexing), [grid, points])
    for a, e in zip(got, want):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("order", [1, 2, 3, 4, 6])
def test_interpolate_spline_matches_tensorflow(order):
    rng = np.random.RandomState(order)
    c, f, q = rng.rand(2, 6, 2), rng.rand(2, 6, 3), rng.rand(2, 5, 2)
    q[0, 0] = c[0, 0]  # a query at a centre: r = 0, the clamped branch
    reg = 0.01 if order % 2 else 0.0
    want, got = _both(lambda *a: _tf_spline(*a, order, reg),
                      lambda *a: cft.contrib.image.interpolate_spline(*a, order, regularization_weight=reg), [c, f, q])
    for a, e in zip(got, want):
        np.testing.assert_allclose(a, e, rtol=1e-7, atol=1e-8)


def test_sparse_image_warp_matches_tensorflow():
    rng = np.random.RandomState(9)
    image = rng.rand(1, 6, 7, 2).astype(np.float32)
    src = np.array([[[2.0, 2.0], [4.0, 5.0]]], np.float32)
    dst = np.array([[[2.5, 3.0], [3.5, 4.0]]], np.float32)
    ys, xs = np.meshgrid(np.arange(6.0), np.arange(7.0), indexing="ij")
    grid = np.stack([ys, xs], -1).reshape(1, 42, 2).astype(np.float32)
    corners = np.array([[[0, 0], [0, 6], [5, 0], [5, 6]]], np.float32)

    def tf_fn(img, s, d):
        d2 = tft.concat([d, corners], 1)
        flows = tft.concat([d - s, tft.zeros_like(corners)], 1)
        dense = tft.reshape(_tf_spline(d2, flows, tft.constant(grid), 2), [1, 6, 7, 2])
        return _tf_warp(img, dense)

    want, got = _both(tf_fn, lambda img, s, d: cft.contrib.image.sparse_image_warp(img, s, d, num_boundary_points=1)[0],
                      [image, src, dst])
    for a, e in zip(got, want):
        np.testing.assert_allclose(a, e, rtol=2e-3, atol=2e-4)
