"""tf.math.special's Bessel/Dawson/Ei/Fresnel/Spence functions, ndtri/erfinv/erfcinv, sqrtm,
matrix_solve_ls(fast=False) and svd's full_matrices gradient, checked without TensorFlow:
known values, identities (Wronskians, reflections, inverse pairs) and central finite
differences in float64."""
import math

import numpy as np
import pytest

import collflow.compat.v1 as tf

sp = tf.math.special


def _run(fn, *arrays, grad=False):
    """fn on placeholders fed arrays (float64): its value, and d sum(fn)/d inputs if grad."""
    g = tf.Graph()
    with g.as_default():
        phs = [tf.placeholder(tf.as_dtype(a.dtype), a.shape) for a in arrays]
        y = fn(*phs)
        fetch = [y] + (tf.gradients(tf.reduce_sum(y), phs) if grad else [])
        with tf.Session(graph=g) as sess:
            return sess.run(fetch, dict(zip(phs, arrays)))


def _fd(fn, x, eps=1e-6):
    """Central differences of sum(fn) w.r.t. each entry of x."""
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        out[i] = (np.sum(_run(fn, xp)[0]) - np.sum(_run(fn, xm)[0])) / (2 * eps)
    return out


KNOWN = [  # (function, x, value) from tables (Abramowitz & Stegun, DLMF)
    (sp.bessel_i0, 1.0, 1.2660658777520084), (sp.bessel_i1, 1.0, 0.5651591039924851),
    (sp.bessel_i0e, 1.0, 0.46575960759364043), (sp.bessel_i1e, 1.0, 0.20791041534970844),
    (sp.bessel_j0, 1.0, 0.7651976865579666), (sp.bessel_j1, 1.0, 0.44005058574493355),
    (sp.bessel_y0, 1.0, 0.08825696421567697), (sp.bessel_y1, 1.0, -0.7812128213002887),
    (sp.bessel_k0, 1.0, 0.42102443824070834), (sp.bessel_k1, 1.0, 0.6019072301972346),
    (sp.bessel_k0e, 1.0, 1.1444630798068949), (sp.bessel_k1e, 1.0, 1.636153486263258),
    (sp.dawsn, 1.0, 0.5380795069127684), (sp.expint, 1.0, 1.8951178163559368),
    (sp.fresnel_cos, 1.0, 0.7798934003768228), (sp.fresnel_sin, 1.0, 0.4382591473903548),
    (sp.spence, 2.0, -math.pi ** 2 / 12), (sp.spence, 0.5, math.pi ** 2 / 12 - math.log(2) ** 2 / 2),
    (sp.spence, 0.0, math.pi ** 2 / 6), (tf.math.ndtri, 0.975, 1.959963984540054),
    (tf.math.erfinv, 0.5, 0.4769362762044699), (sp.bessel_j0, 2.404825557695773, 0.0),
    (sp.expint, 0.37250741078136663, 0.0), (sp.bessel_i0e, 100.0, 0.03994437929909668),
    (sp.bessel_k0, 50.0, 3.410167749789496e-23), (sp.expint, 50.0, 1.0585636897131690e+20),
]


@pytest.mark.parametrize("fn,x,want", KNOWN, ids=[f"{k[0].__name__}({k[1]})" for k in KNOWN])
def test_known_values(fn, x, want):
    got = _run(fn, np.array([x]))[0][0]
    assert got == pytest.approx(want, rel=1e-14, abs=1e-15)


def test_identities_over_wide_ranges():
    x = np.concatenate([np.linspace(0.01, 40.0, 997), np.geomspace(40.0, 1e4, 100)])
    j0, j1, y0, y1 = (_run(f, x)[0] for f in (sp.bessel_j0, sp.bessel_j1, sp.bessel_y0, sp.bessel_y1))
    np.testing.assert_allclose(j1 * y0 - j0 * y1, 2 / (np.pi * x), rtol=1e-13)      # Wronskian
    xi = np.geomspace(1e-6, 700.0, 500)
    i0e, i1e, k0e, k1e = (_run(f, xi)[0] for f in (sp.bessel_i0e, sp.bessel_i1e, sp.bessel_k0e, sp.bessel_k1e))
    np.testing.assert_allclose(i0e * k1e + i1e * k0e, 1 / xi, rtol=1e-14)            # I0 K1 + I1 K0 = 1/x
    np.testing.assert_allclose(_run(sp.bessel_i0e, -xi)[0], i0e, rtol=0)             # even / odd
    np.testing.assert_allclose(_run(sp.bessel_i1e, -xi)[0], -i1e, rtol=0)
    s = np.geomspace(1e-8, 0.999, 300)                                                  # Euler's reflection
    lhs = _run(sp.spence, s)[0] + _run(sp.spence, 1 - s)[0]
    np.testing.assert_allclose(lhs, np.pi ** 2 / 6 - np.log(s) * np.log1p(-s), rtol=1e-14, atol=1e-15)
    big = np.geomspace(1.1, 1e8, 300)                                                   # inversion
    np.testing.assert_allclose(_run(sp.spence, big)[0] + _run(sp.spence, 1 / big)[0], -0.5 * np.log(big) ** 2,
                               rtol=1e-13, atol=1e-14)


def test_ndtri_inverts_the_normal_cdf_and_erfinv_erf():
    p = np.concatenate([np.geomspace(1e-300, 0.1, 300), np.linspace(0.1, 0.9, 81), 1 - np.geomspace(1e-15, 0.1, 50)])
    x = _run(tf.math.ndtri, p)[0]
    cdf = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in x])
    np.testing.assert_allclose(cdf, p, rtol=1e-13 * 40)       # the CDF's slope magnifies x's rounding
    z = np.linspace(-0.999, 0.999, 201)
    np.testing.assert_allclose([math.erf(v) for v in _run(tf.math.erfinv, z)[0]], z, rtol=1e-14, atol=3e-16)  # TF: ndtri((x+1)/2)
    np.testing.assert_allclose(_run(tf.math.erfcinv, 1 - z)[0], _run(tf.math.erfinv, z)[0], rtol=1e-12, atol=1e-15)


def test_edge_values_are_tensorflows():
    e = np.array([-np.inf, -1.0, 0.0, np.inf, np.nan])
    assert np.array_equal(_run(sp.bessel_y0, e)[0], [-np.inf, -np.inf, -np.inf, np.nan, np.nan], equal_nan=True)
    assert np.array_equal(_run(sp.bessel_k1, e)[0], [np.inf, np.inf, np.inf, 0.0, np.nan], equal_nan=True)
    assert np.array_equal(_run(sp.expint, e)[0], [np.nan, np.nan, -np.inf, np.nan, np.nan], equal_nan=True)
    np.testing.assert_allclose(_run(sp.fresnel_cos, e)[0], [-0.5, -0.7798934003768228, 0.0, 0.5, np.nan], rtol=1e-15)
    np.testing.assert_allclose(_run(sp.bessel_i0e, e)[0], [0.0, 0.46575960759364043, 1.0, 0.0, np.nan], rtol=1e-15)
    assert np.array_equal(_run(tf.math.ndtri, np.array([0.0, 1.0, -0.5, 2.0]))[0], [-np.inf, np.inf, np.nan, np.nan],
                          equal_nan=True)


def test_float32_values():
    x = np.linspace(0.05, 30.0, 200)
    for f in (sp.bessel_i0e, sp.bessel_k1e, sp.dawsn, sp.expint, sp.spence, sp.fresnel_sin):
        got = _run(f, x.astype(np.float32))[0]
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, _run(f, x.astype(np.float32).astype(np.float64))[0], rtol=1e-6)


GRAD_FNS = [(sp.bessel_i0, (-3, 3)), (sp.bessel_i0e, (-3, 3)), (sp.bessel_i1, (-3, 3)), (sp.bessel_i1e, (-3, 3)),
            (sp.bessel_j0, (-9, 9)), (sp.bessel_j1, (-9, 9)), (sp.bessel_y0, (0.5, 9)), (sp.bessel_y1, (0.5, 9)),
            (sp.bessel_k0, (0.5, 9)), (sp.bessel_k0e, (0.5, 9)), (sp.bessel_k1, (0.5, 9)), (sp.bessel_k1e, (0.5, 9)),
            (sp.dawsn, (-7, 7)), (sp.expint, (0.2, 9)), (sp.fresnel_cos, (-3, 3)), (sp.fresnel_sin, (-3, 3)),
            (sp.spence, (0.1, 4)), (tf.math.ndtri, (0.01, 0.99)), (tf.math.erfinv, (-0.95, 0.95)),
            (tf.math.erfcinv, (0.05, 1.95))]


@pytest.mark.parametrize("fn,rng", GRAD_FNS, ids=[f[0].__name__ for f in GRAD_FNS])
def test_gradients_match_finite_differences(fn, rng):
    x = np.random.default_rng(1).uniform(*rng, size=7)
    np.testing.assert_allclose(_run(fn, x, grad=True)[1], _fd(fn, x), rtol=1e-7, atol=1e-8)


def test_gradients_at_zero_are_tfs_limits():
    z = np.zeros(1)
    assert _run(tf.math.bessel_i1, z, grad=True)[1][0] == 1.0
    assert _run(tf.math.bessel_i1e, z, grad=True)[1][0] == 0.5
    assert _run(sp.bessel_j1, z, grad=True)[1][0] == 0.5
    assert _run(sp.spence, np.ones(1), grad=True)[1][0] == -1.0


def _well_conditioned(rng, batch, n, symmetric):
    a = rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n) if symmetric else a + 3 * n * np.eye(n)


@pytest.mark.parametrize("symmetric", [True, False])
def test_sqrtm_squares_back(symmetric):
    a = _well_conditioned(np.random.default_rng(2), (2, 3), 5, symmetric)
    r = _run(tf.linalg.sqrtm, a)[0]
    np.testing.assert_allclose(r @ r, a, rtol=1e-12, atol=1e-12)
    rot = np.array([[0.0, -1.0], [1.0, 0.0]])                     # complex eigenvalues +-i
    np.testing.assert_allclose(_run(tf.matrix_square_root, rot)[0], np.array([[1, -1], [1, 1]]) / math.sqrt(2),
                               atol=1e-15)
    r32 = _run(tf.linalg.sqrtm, a.astype(np.float32))[0]
    assert r32.dtype == np.float32
    np.testing.assert_allclose(r32, r, rtol=1e-5, atol=1e-5)


def test_sqrtm_without_a_principal_root_is_nan():
    out = _run(tf.linalg.sqrtm, np.array([[[-1.0, 0.0], [0.0, 4.0]], [[4.0, 0.0], [0.0, 9.0]]]))[0]
    assert np.isnan(out[0]).all() and np.allclose(out[1], [[2.0, 0.0], [0.0, 3.0]], rtol=1e-15)
    assert np.isnan(_run(tf.linalg.sqrtm, np.zeros((3, 3)))[0]).all()


def test_sqrtm_gradient():
    a = _well_conditioned(np.random.default_rng(3), (2,), 3, False)
    w = np.random.default_rng(4).standard_normal((2, 3, 3))
    fn = lambda t: tf.linalg.sqrtm(t) * w  # noqa: E731
    np.testing.assert_allclose(_run(fn, a, grad=True)[1], _fd(fn, a), rtol=1e-7, atol=1e-9)


def test_matrix_solve_ls_complete_orthogonal_decomposition():
    a = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [3.0, 6.0, 1.0], [0.0, 0.0, 1.0]])   # rank 2
    b = np.array([[1.0, 0.0], [2.0, 1.0], [4.0, 0.0], [1.0, 2.0]])
    for l2 in (0.0, 1.0):                                # ignored on this path (TF's kernel)
        x = _run(lambda m, r: tf.matrix_solve_ls(m, r, l2_regularizer=l2, fast=False), a, b)[0]
        np.testing.assert_allclose(x, np.linalg.pinv(a) @ b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(x[0] * 2, x[1], rtol=1e-12)     # minimum norm: no part in the null space
    wide = a.T
    xw = _run(lambda m, r: tf.linalg.lstsq(m, r, fast=False), wide, b[:3])[0]
    np.testing.assert_allclose(xw, np.linalg.pinv(wide) @ b[:3], rtol=1e-12, atol=1e-14)
    with tf.Graph().as_default():
        y = tf.matrix_solve_ls(tf.constant(a), tf.constant(b), fast=False)
        with pytest.raises(ValueError, match="fast=False"):
            tf.gradients(y, y.op.inputs[0])


@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (3, 3)])
def test_svd_gradient_with_full_matrices(shape):
    m, n = shape
    a = np.random.default_rng(5).standard_normal((2,) + shape)
    k = min(m, n)
    wu, wv = np.random.default_rng(6).standard_normal((2, m, m)), np.random.default_rng(7).standard_normal((2, n, n))

    def loss(t):   # sign-invariant: projectors onto the columns, singular values
        s, u, v = tf.svd(t, full_matrices=True)
        pu = tf.matmul(u[..., :, :k] * s[..., None, :], u[..., :, :k], transpose_b=True)
        pv = tf.matmul(v[..., :, k:], v[..., :, k:], transpose_b=True) + tf.matmul(v[..., :, :k], v[..., :, :k],
                                                                                   transpose_b=True) * 0.5
        return tf.reduce_sum(pu * wu) + tf.reduce_sum(pv * wv) + tf.reduce_sum(s ** 2)
    np.testing.assert_allclose(_run(loss, a, grad=True)[1], _fd(loss, a), rtol=1e-6, atol=1e-7)


def test_svd_gradient_full_matrices_far_from_square_raises():
    with tf.Graph().as_default():
        x = tf.constant(np.ones((2, 5)))
        s, u, v = tf.svd(x, full_matrices=True)
        with pytest.raises(NotImplementedError, match="abs\\(m - n\\) > 1"):
            tf.gradients(tf.reduce_sum(v), x)
