"""Differential tests against TensorFlow's compat.v1 graph mode: tf.linalg.expm, lu (+ lu_solve,
lu_reconstruct, lu_matrix_inverse), pinv, matrix_rank, matvec, normalize, adjoint, cross,
tridiagonal_matmul/solve; values and gradients.  Skipped without TensorFlow."""
import numpy as np
import pytest

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()


def _run(tf, fn, arrays, grad=False):
    g = tf.Graph()
    with g.as_default():
        phs = [tf.placeholder(tf.as_dtype(a.dtype), a.shape) for a in arrays]
        y = fn(tf, *phs)
        fetch = [y] + (tf.gradients(tf.reduce_sum(y * y), phs) if grad else [])
        with tf.Session(graph=g) as sess:
            return sess.run(fetch, dict(zip(phs, arrays)))


def _both(fn, arrays, grad=False):
    return _run(tft, fn, arrays, grad), _run(cft, fn, arrays, grad)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("scale", [1e-3, 0.05, 0.4, 1.2, 3.0, 40.0])
def test_expm(dtype, scale):
    rng = np.random.default_rng(int(scale * 1000))
    if dtype == np.float32:
        scale = min(scale, 8.0)        # exp of larger matrices overflows float32
    a = (rng.normal(size=(2, 3, 5, 5)) * scale).astype(dtype)
    # per-matrix norms that differ, so the batch mixes Pade orders and squarings
    a[0, 0] *= 0.01
    (t, tg), (c, cg) = _both(lambda tf, x: tf.linalg.expm(x), [a], grad=True)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(c, t, rtol=tol, atol=tol * np.abs(t).max())
    np.testing.assert_allclose(cg, tg, rtol=tol * 10, atol=tol * 10 * np.abs(tg).max())


def test_expm_nonfinite():
    a = np.array([[[np.nan, 0.0], [0.0, 1.0]], [[1.0, 2.0], [3.0, 4.0]]])
    (t,), (c,) = _both(lambda tf, x: tf.linalg.expm(x), [a])
    np.testing.assert_array_equal(np.isnan(c), np.isnan(t))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lu_family(dtype):
    rng = np.random.default_rng(3)
    a = rng.normal(size=(2, 3, 6, 6)).astype(dtype)
    rhs = rng.normal(size=(2, 3, 6, 2)).astype(dtype)

    def fn(tf, x, r):
        lu, p = tf.linalg.lu(x)
        return [lu, p, tf.linalg.lu_reconstruct(lu, p), tf.linalg.lu_matrix_inverse(lu, p),
                tf.linalg.lu_solve(lu, p, r)]
    (t,), (c,) = _both(fn, [a, rhs])
    np.testing.assert_array_equal(c[1], t[1])
    assert c[1].dtype == t[1].dtype
    tol = 1e-12 if dtype == np.float64 else 1e-4
    for ci, ti in zip(c[:1] + c[2:], t[:1] + t[2:]):
        np.testing.assert_allclose(ci, ti, rtol=tol, atol=tol)


def test_lu_exact_pivots_and_singular():
    a = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 10.0]])
    (t,), (c,) = _both(lambda tf, x: list(tf.linalg.lu(x, output_idx_type=tf.int64)), [a])
    np.testing.assert_array_equal(c[1], t[1])
    assert c[1].dtype == np.int64
    np.testing.assert_allclose(c[0], t[0], rtol=1e-15)
    for tf, err in ((tft, tensorflow.errors.InvalidArgumentError), (cft, cft.errors.InvalidArgumentError)):
        with pytest.raises(err, match="not invertible"):
            _run(tf, lambda tf, x: tf.linalg.lu(x)[0], [np.array([[1.0, 2.0], [2.0, 4.0]])])


def test_lu_solve_and_reconstruct_gradients():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(2, 4, 4)) + 3 * np.eye(4)
    rhs = rng.normal(size=(2, 4, 3))
    (t,), _ = _both(lambda tf, x: list(tf.linalg.lu(x)), [a])
    lu, p = t

    def solve(tf, x, r):
        return tf.linalg.lu_solve(x, tf.constant(p), r)

    def rec(tf, x):
        return tf.linalg.lu_reconstruct(x, tf.constant(p))
    (tv, tg1, tg2), (cv, cg1, cg2) = _both(solve, [lu, rhs], grad=True)
    np.testing.assert_allclose(cv, tv, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cg1, tg1, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(cg2, tg2, rtol=1e-10, atol=1e-10)
    (tv, tg), (cv, cg) = _both(rec, [lu], grad=True)
    np.testing.assert_allclose(cv, tv, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(cg, tg, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (3, 5)])
def test_pinv_and_rank(shape):
    rng = np.random.default_rng(5)
    a = rng.normal(size=shape)
    (tv, tg), (cv, cg) = _both(lambda tf, x: tf.linalg.pinv(x), [a], grad=True)
    np.testing.assert_allclose(cv, tv, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cg, tg, rtol=1e-8, atol=1e-10)
    b = rng.normal(size=(3, 5, 2)) @ rng.normal(size=(3, 2, 4))
    (tp, tr), (cp, cr) = [x[0] for x in _both(lambda tf, x: [tf.linalg.pinv(x), tf.linalg.matrix_rank(x)], [b])]
    np.testing.assert_allclose(cp, tp, rtol=1e-9, atol=1e-11)
    np.testing.assert_array_equal(cr, tr)
    assert cr.dtype == tr.dtype


def test_small_helpers():
    rng = np.random.default_rng(6)
    a = rng.normal(size=(2, 3, 4))
    v = rng.normal(size=(2, 4))
    w = rng.normal(size=(2, 3))
    x3, y3 = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))

    def fn(tf, a, v, w, x, y):
        n, nn = tf.linalg.normalize(a, axis=[-2, -1])
        n2, nn2 = tf.linalg.normalize(a, ord=1, axis=-1)
        return [tf.linalg.adjoint(a), tf.linalg.matvec(a, v), tf.linalg.matvec(a, w, transpose_a=True),
                n, nn, n2, nn2, tf.linalg.cross(x, y)]
    (t,), (c,) = _both(fn, [a, v, w, x3, y3])
    for ci, ti in zip(c, t):
        assert ci.shape == ti.shape
        np.testing.assert_allclose(ci, ti, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("fmt", ["compact", "sequence", "matrix"])
def test_tridiagonal(fmt):
    rng = np.random.default_rng(8)
    d = rng.normal(size=(2, 3, 6))
    d[:, 1] += 2.0
    rhs = rng.normal(size=(2, 6, 3))
    m = np.zeros((2, 6, 6))
    i = np.arange(6)
    m[:, i, i] = d[:, 1]
    m[:, i[:-1], i[1:]] = d[:, 0, :-1]
    m[:, i[1:], i[:-1]] = d[:, 2, 1:]

    def diags(tf, x):
        if fmt == "sequence":
            return [x[:, 0], x[:, 1], x[:, 2]]
        return x
    arg = m if fmt == "matrix" else d
    (tv, tg, _), (cv, cg, _) = _both(lambda tf, x, r: tf.linalg.tridiagonal_solve(diags(tf, x), r,
                                                                                    diagonals_format=fmt),
                                     [arg, rhs], grad=True)
    np.testing.assert_allclose(cv, tv, rtol=1e-10, atol=1e-12)
    # w.r.t. a full matrix the gradient is zero off the band in both
    np.testing.assert_allclose(cg, tg, rtol=1e-8, atol=1e-10)
    (tv, tg, tr), (cv, cg, cr) = _both(lambda tf, x, r: tf.linalg.tridiagonal_matmul(diags(tf, x), r,
                                                                                      diagonals_format=fmt),
                                       [arg, rhs], grad=True)
    np.testing.assert_allclose(cv, tv, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(cg, tg, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cr, tr, rtol=1e-12, atol=1e-12)


def test_unknown_shapes():
    rng = np.random.default_rng(9)
    a = rng.normal(size=(2, 4, 4))
    outs = []
    for tf in (tft, cft):
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float64, [None, None, None])
            lu, p = tf.linalg.lu(x)
            y = [tf.linalg.expm(x), tf.linalg.pinv(x), tf.linalg.matrix_rank(x), tf.linalg.lu_matrix_inverse(lu, p)]
            y.append(tf.gradients(tf.reduce_sum(y[0]), x)[0])
            with tf.Session(graph=g) as sess:
                outs.append(sess.run(y, {x: a}))
    for c, t in zip(outs[1], outs[0]):
        np.testing.assert_allclose(c, t, rtol=1e-10, atol=1e-12)
