"""Differential tests against TensorFlow's compat.v1 graph mode: tf.math.special's functions,
ndtri/erfinv/erfcinv, sqrtm, matrix_solve_ls(fast=False) and svd's full_matrices gradient;
values over wide ranges (edge values included) and gradients.  Skipped without TensorFlow."""
import numpy as np
import pytest

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

SPECIAL = ["bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
           "bessel_k0", "bessel_k0e", "bessel_k1", "bessel_k1e", "dawsn", "expint", "fresnel_cos", "fresnel_sin",
           "spence"]
# oscillating functions: relative accuracy is lost near their zeros (both sides), hence atol
OSC = {"bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "fresnel_cos", "fresnel_sin"}


def _fn(tf, name):
    return getattr(tf.math.special, name) if name in SPECIAL else getattr(tf.math, name)


def _run(tf, fn, arrays, grad=False):
    g = tf.Graph()
    with g.as_default():
        phs = [tf.placeholder(tf.as_dtype(a.dtype), a.shape) for a in arrays]
        y = fn(tf, *phs)
        fetch = [y] + (tf.gradients(tf.reduce_sum(y), phs) if grad else [])
        with tf.Session(graph=g) as sess:
            return sess.run(fetch, dict(zip(phs, arrays)))


def _args(name):
    rng = np.random.default_rng(0)
    edges = [-np.inf, -1.0, -0.0, 0.0, 1e-300, 1e-12, 1.0, 1e6, np.inf, np.nan]
    if name in ("ndtri",):
        return np.concatenate([[0.0, 1.0, -0.5, 2.0, np.nan], np.geomspace(1e-300, 0.1, 200), rng.uniform(0, 1, 200),
                               1 - np.geomspace(1e-16, 0.1, 50)])
    if name == "erfinv":
        return np.concatenate([[-2.0, -1.0, 1.0, np.nan], rng.uniform(-1, 1, 300), 1 - np.geomspace(1e-16, 0.1, 50)])
    if name == "erfcinv":
        return np.concatenate([[-1.0, 0.0, 2.0, 3.0], rng.uniform(0, 2, 300), np.geomspace(1e-300, 0.1, 100)])
    wide = np.concatenate([np.linspace(-40, 40, 801), np.geomspace(1e-8, 700, 300), -np.geomspace(1e-8, 700, 100)])
    return np.concatenate([edges, wide])


NAMES = SPECIAL + ["ndtri", "erfinv", "erfcinv"]


@pytest.mark.parametrize("name", NAMES)
def test_values_float64(name):
    x = _args(name)
    fn = lambda tf, t: _fn(tf, name)(t)  # noqa: E731
    want = _run(tft, fn, [x])[0]
    got = _run(cft, fn, [x])[0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14 if name in OSC else 0)


@pytest.mark.parametrize("name", NAMES)
def test_values_float32(name):
    x = _args(name).astype(np.float32)
    x = x[np.abs(x) < 80] if name in ("bessel_i0", "bessel_i1", "expint") else x   # float32 overflow edges
    fn = lambda tf, t: _fn(tf, name)(t)  # noqa: E731
    want = _run(tft, fn, [x])[0]
    got = _run(cft, fn, [x])[0]
    assert got.dtype == np.float32
    # TF's float32 kernels are float32 polynomials: near the zeros of oscillating functions
    # collflow's (float64, rounded) differ by their error
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=3e-5 if name in OSC else 1e-30)


GRAD_RANGES = {"bessel_y0": (0.3, 20), "bessel_y1": (0.3, 20), "bessel_k0": (0.1, 20), "bessel_k0e": (0.1, 20),
               "bessel_k1": (0.1, 20), "bessel_k1e": (0.1, 20), "expint": (0.1, 30), "spence": (0.0, 5),
               "ndtri": (0.001, 0.999), "erfinv": (-0.99, 0.99), "erfcinv": (0.01, 1.99)}


@pytest.mark.parametrize("name", NAMES)
def test_gradients(name):
    x = np.random.default_rng(1).uniform(*GRAD_RANGES.get(name, (-20, 20)), size=50)
    x[:2] = [0.0, 1.0] if name not in GRAD_RANGES or name == "spence" else x[:2]
    fn = lambda tf, t: _fn(tf, name)(t)  # noqa: E731
    want = _run(tft, fn, [x], grad=True)[1]
    got = _run(cft, fn, [x], grad=True)[1]
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-13)


def test_sqrtm_values_and_gradient():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 4, 4)) + 6 * np.eye(4)
    s = rng.standard_normal((2, 3, 3))
    s = s @ np.swapaxes(s, -1, -2) + np.eye(3)
    w = rng.standard_normal((3, 4, 4))
    fn = lambda tf, t: tf.linalg.sqrtm(t) * w  # noqa: E731
    for x in (a, s):
        f = (lambda tf, t: tf.linalg.sqrtm(t) * w) if x is a else (lambda tf, t: tf.matrix_square_root(t))
        want, got = _run(tft, f, [x], grad=True), _run(cft, f, [x], grad=True)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-10, atol=1e-12)
    want32 = _run(tft, fn, [a.astype(np.float32)])[0]
    np.testing.assert_allclose(_run(cft, fn, [a.astype(np.float32)])[0], want32, rtol=1e-5, atol=1e-5)
    rot = np.array([[[0.0, -1.0], [1.0, 0.0]], [[-1.0, 0.0], [0.0, 4.0]]])
    f = lambda tf, t: tf.linalg.sqrtm(t)  # noqa: E731
    np.testing.assert_allclose(_run(cft, f, [rot])[0], _run(tft, f, [rot])[0], rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("shape", [(6, 3), (3, 6), (5, 5)])
def test_matrix_solve_ls_fast_false(shape):
    rng = np.random.default_rng(3)
    m, n = shape
    a = rng.standard_normal((2, m, 2)) @ rng.standard_normal((2, 2, n))      # rank 2: rank deficient
    full = rng.standard_normal((2, m, n))
    b = rng.standard_normal((2, m, 3))
    for mat in (a, full):
        fn = lambda tf, x, y: tf.matrix_solve_ls(x, y, l2_regularizer=0.5, fast=False)  # noqa: E731
        np.testing.assert_allclose(_run(cft, fn, [mat, b])[0], _run(tft, fn, [mat, b])[0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 3, 3)])
def test_svd_full_matrices_gradient(shape):
    a = np.random.default_rng(4).standard_normal(shape)
    m, n = shape[-2:]
    k = min(m, n)
    wu = np.random.default_rng(5).standard_normal(shape[:-2] + (m, m))
    wv = np.random.default_rng(6).standard_normal(shape[:-2] + (n, n))

    def fn(tf, t):
        s, u, v = tf.svd(t, full_matrices=True)
        pu = tf.matmul(u[..., :, :k] * s[..., None, :], u[..., :, :k], transpose_b=True)
        pv = tf.matmul(v[..., :, k:], v[..., :, k:], transpose_b=True) + tf.matmul(v, v * 0.5, transpose_b=True)
        return tf.reduce_sum(pu * wu) + tf.reduce_sum(pv * wv) + tf.reduce_sum(s ** 2)
    want, got = _run(tft, fn, [a], grad=True), _run(cft, fn, [a], grad=True)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-9, atol=1e-11)


def test_svd_full_matrices_far_from_square_raises_in_both():
    for tf in (tft, cft):
        with tf.Graph().as_default():
            x = tf.constant(np.ones((2, 5)))
            _, _, v = tf.svd(x, full_matrices=True)
            with pytest.raises(NotImplementedError):
                tf.gradients(tf.reduce_sum(v), x)
