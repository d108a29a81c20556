"""tf.math.igamma / igammac / betainc / zeta / polygamma and tf.random_gamma
(graph/ops/special_more_ops.py, kernels/special_more_kernels.py): values against closed forms
and series worked here, TF's edge values (recorded, and live with run_in_both), accuracy on a
wide grid against mpmath (skipped without it), gradients against finite differences and TF,
and the gamma sampler's shapes, moments and implicit gradient."""
import math

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.kernels.special_more_kernels import igamma_parts
from tf_peer import run_in_both

INF, NAN = np.inf, np.nan


def run(fetches, feed=None):
    with tf.Session() as s:
        return s.run(fetches, feed or {})


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default():
        yield


def _poisson_q(n, x):
    """Q(n, x) for integer n: P(Poisson(x) < n) = sum_{k<n} e^-x x^k / k!, summed in logs."""
    start = max(0, int(x - 60 * math.sqrt(x)))          # the terms below are < 1e-700 of the sum
    return math.fsum(math.exp(k * math.log(x) - x - math.lgamma(k + 1)) for k in range(start, n))


def _poisson_p(n, x):
    """P(n, x) = P(Poisson(x) >= n), the upper terms summed until they vanish."""
    top = int(max(n, x) + 60 * math.sqrt(max(n, x)) + 100)   # and those above, < 1e-700
    start = max(n, int(x - 60 * math.sqrt(x)))
    return math.fsum(math.exp(k * math.log(x) - x - math.lgamma(k + 1)) for k in range(start, top))


# -- values by hand --------------------------------------------------------------------------

def test_igamma_closed_forms():
    x = np.array([1e-3, 0.1, 0.9, 2.0, 7.5, 30.0])
    p1, q1, ph, qh = run([tf.math.igamma(1.0, x), tf.math.igammac(np.float64(1.0), x),
                          tf.igamma(np.float64(0.5), x), tf.igammac(np.float64(0.5), x)])
    np.testing.assert_allclose(p1, -np.expm1(-x), rtol=1e-13)
    np.testing.assert_allclose(q1, np.exp(-x), rtol=1e-13)
    np.testing.assert_allclose(ph, [math.erf(math.sqrt(v)) for v in x], rtol=1e-13)
    np.testing.assert_allclose(qh, [math.erfc(math.sqrt(v)) for v in x], rtol=1e-12)


@pytest.mark.parametrize("n", [3, 40, 1000, 10000, 1000000])
def test_igamma_integer_orders_against_poisson_sums(n):
    # around the mean, where both the series and the continued fraction need O(sqrt(n)) terms
    xs = [n * f for f in (0.5, 0.9, 0.99, 1.0, 1.01, 1.1, 1.5)]
    if n > 1000:
        xs = [n + k * math.sqrt(n) for k in (-4, -1, -0.1, 0, 0.1, 1, 4)]
    p, q = run([tf.math.igamma(np.float64(n), np.array(xs)), tf.math.igammac(np.float64(n), np.array(xs))])
    want_q = np.array([_poisson_q(n, x) for x in xs])
    want_p = np.array([_poisson_p(n, x) for x in xs])
    # the reference's terms carry exponents ~ n log n: rounding limits it to ~n log n * 1e-16
    tol = max(2e-10, 3e-16 * n * math.log(n))
    np.testing.assert_allclose(q, want_q, rtol=tol)
    np.testing.assert_allclose(p, want_p, rtol=tol)


def test_betainc_closed_forms():
    x = np.array([0.0, 0.01, 0.3, 0.5, 0.77, 0.999, 1.0])
    a, b = np.float64(2.5), np.float64(0.4)
    v1, v2, v3, v4 = run([tf.math.betainc(a, np.float64(1.0), x), tf.math.betainc(np.float64(1.0), b, x),
                          tf.betainc(a, b, x), tf.betainc(b, a, 1.0 - x)])
    np.testing.assert_allclose(v1, x ** 2.5, rtol=1e-13)
    np.testing.assert_allclose(v2, 1 - (1 - x) ** 0.4, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(v3 + v4, np.ones_like(x), rtol=1e-13)      # I_x(a, b) = 1 - I_{1-x}(b, a)
    # large parameters: I_{1/2}(a, a) = 1/2 (the log prefactor avoids terms of size a log a)
    big = run(tf.betainc(np.array([5e4, 1e8]), np.array([5e4, 1e8]), np.float64(0.5)))
    np.testing.assert_allclose(big, [0.5, 0.5], rtol=1e-10)


def test_zeta_and_polygamma_closed_forms():
    z3 = 1.2020569031595942
    v = run([tf.math.zeta(np.array([2.0, 4.0, 3.0]), np.float64(1.0)),
             tf.math.zeta(np.float64(3.5), np.array([0.3, 2.0])) - tf.math.zeta(np.float64(3.5), np.array([1.3, 3.0])),
             tf.math.polygamma(np.array([1.0, 2.0, 3.0, 0.0]), np.array([1.0, 1.0, 0.5, 1.0])),
             tf.polygamma(np.float64(4.0), np.array([-1.3, 2.7])) - tf.polygamma(np.float64(4.0),
                                                                                 np.array([-0.3, 3.7]))])
    np.testing.assert_allclose(v[0], [math.pi ** 2 / 6, math.pi ** 4 / 90, z3], rtol=1e-13)
    np.testing.assert_allclose(v[1], [0.3 ** -3.5, 2.0 ** -3.5], rtol=1e-12)
    np.testing.assert_allclose(v[2], [math.pi ** 2 / 6, -2 * z3, math.pi ** 4, -0.5772156649015329], rtol=1e-12)
    # psi_n(x) - psi_n(x + 1) = -(-1)^n n! x^-(n+1)  (n = 4)
    np.testing.assert_allclose(v[3], -24.0 * np.array([-1.3, 2.7]) ** -5.0, rtol=1e-11)
    # orders 0 and 1 known when the graph is built are Digamma and Trigamma, others the general op
    assert tf.math.polygamma(1, tf.constant(2.0)).op.type == "Trigamma"
    assert tf.math.polygamma(tf.constant(2.0), tf.constant(2.0)).op.type == "Polygamma"


# -- TensorFlow's edge values --------------------------------------------------------------

A = np.array([0, 0, 0, 1, 1, 1, -1, 1, NAN, 1, INF, INF, 2, 0.5, 2])
XA = np.array([0, 1, INF, 0, INF, -1, 1, NAN, 1, -INF, 1, INF, 3, 0, -0.0])
BA = np.array([0, 1, -1, 1, 1, 1, 1, NAN, 2, INF, 2, 2])
BB = np.array([1, 0, 1, -1, 1, 1, 1, 1, NAN, 2, INF, 2])
BX = np.array([.5, .5, .5, .5, 0, 1, 1.5, .5, .5, .5, .5, -0.1])
ZX = np.array([1, 0.5, 2, 2, 2, 2, 2, 3, INF, NAN, 2, -2, 3])
ZQ = np.array([1, 1, 0, -1, -1.5, 1, INF, -2.5, 1, 1, NAN, 1, -0.5])
PN = np.array([0, 1, 2, 3, -1, 1.5, 2, 2, 2, 2, NAN, 10])
PX = np.array([1, 1, 1, 1, 1, 1, 0, -1, -1.5, INF, 1, 0.3])

# recorded from TensorFlow 2.21's tf.compat.v1 (float64)
TF_EDGES = [
    [0, NAN, NAN, 0, 1, NAN, NAN, NAN, NAN, NAN, 0, 0, 0.8008517265285442, 0, 0],
    [NAN, NAN, NAN, 1, 0, NAN, NAN, NAN, NAN, NAN, 1, 0, 0.19914827347145578, 1, 1],
    [NAN, NAN, NAN, NAN, 0, 1, NAN, NAN, NAN, NAN, NAN, NAN],
    [INF, NAN, INF, INF, 9.379246641894297, 1.6449340668482264, 0, 0.05410203, 1, NAN, NAN, NAN,
     0.41439832],
    [-0.5772156649015329, 1.6449340668482264, -2.4041138063191885, 6.493939402266829, NAN, NAN, NAN, NAN,
     -0.23620405, 0, NAN, -2.04846842e+12],
]


def _edges(T):
    return [T.math.igamma(A, XA), T.math.igammac(A, XA), T.math.betainc(BA, BB, BX), T.math.zeta(ZX, ZQ),
            T.math.polygamma(PN, PX)]


def test_edge_values_recorded_from_tensorflow():
    for i, (got, want) in enumerate(zip(run(_edges(tf)), TF_EDGES)):
        np.testing.assert_allclose(got, want, rtol=1e-7, equal_nan=True, err_msg=f"output {i}")


def test_edge_values_match_tensorflow():
    got, want = run_in_both(_edges)
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-10, equal_nan=True, err_msg=f"output {i}")


def test_values_and_float32_match_tensorflow():
    r = np.random.default_rng(3)
    a = np.exp(r.uniform(np.log(1e-2), np.log(2e3), 400))
    x = a * np.exp(r.uniform(-2, 2, 400))
    b = np.exp(r.uniform(np.log(1e-2), np.log(2e3), 400))
    u = r.uniform(0, 1, 400)
    s = r.uniform(1.05, 20, 400)
    n = r.integers(0, 8, 400).astype(np.float64)
    z = r.uniform(-6, 20, 400)

    def prog(T):
        out = []
        for dt in (np.float64, np.float32):
            c = lambda v: v.astype(dt)  # noqa: E731
            out += [T.math.igamma(c(a), c(x)), T.math.igammac(c(a), c(x)), T.math.betainc(c(a), c(b), c(u)),
                    T.math.zeta(c(s), c(a)), T.math.polygamma(c(n), c(z))]
        return out
    got, want = run_in_both(prog)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype
        tol = 1e-8 if g.dtype == np.float64 else 2e-3     # TF's float32 kernels compute in float32
        big = np.abs(w) > (1e-200 if g.dtype == np.float64 else 1e-30)
        np.testing.assert_allclose(g[big], w[big], rtol=tol, err_msg=f"output {i}")


def test_accuracy_against_mpmath():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    r = np.random.default_rng(5)
    a = np.exp(r.uniform(np.log(1e-3), np.log(1e5), 150))
    x = a * np.exp(r.uniform(-1.5, 1.5, 150))
    p, q, dp = igamma_parts(a, x, grad=True)
    for i in range(len(a)):
        A, Xv = mp.mpf(a[i]), mp.mpf(x[i])
        try:
            P = mp.gammainc(A, 0, Xv, regularized=True)
            Q = mp.gammainc(A, Xv, mp.inf, regularized=True)
            dP = mp.diff(lambda t: mp.gammainc(t, 0, Xv, regularized=True), A)
        except mp.libmp.NoConvergence:
            continue
        for got, want in ((p[i], P), (q[i], Q), (dp[i], dP)):
            if abs(want) > 1e-250:
                assert abs(got - float(want)) <= 1e-6 * abs(float(want)), (a[i], x[i], got, want)
    s, qq = r.uniform(1.01, 30, 100), np.exp(r.uniform(-5, 5, 100))
    zv = run(tf.math.zeta(s, qq))
    for i in range(len(s)):
        assert abs(zv[i] - float(mp.zeta(s[i], qq[i]))) <= 1e-6 * abs(float(mp.zeta(s[i], qq[i])))


# -- gradients -------------------------------------------------------------------------------

def test_igamma_grad_a_against_finite_differences():
    a = np.array([1e-3, 0.4, 2.0, 7.0, 50.0, 300.0, 2e4])
    x = np.array([2e-3, 1.5, 0.3, 9.0, 45.0, 320.0, 2e4 + 50])
    _, _, dp = igamma_parts(a, x, grad=True)
    h = 1e-5 * a
    fd = (igamma_parts(a + h, x)[0] - igamma_parts(a - h, x)[0]) / (2 * h)
    np.testing.assert_allclose(dp, fd, rtol=1e-5)


def test_gradients_match_tensorflow():
    a = np.array([0.3, 1.7, 4.2, 25.0])
    x = np.array([0.2, 2.5, 3.0, 20.0])
    b = np.array([1.5, 3.0, 0.6, 2.0])
    u = np.array([0.2, 0.55, 0.9, 0.4])

    def prog(T):
        ta, tx, tb, tu = (T.constant(v) for v in (a, x, b, u))
        gi = T.gradients(T.math.igamma(ta, tx), [ta, tx])
        gc = T.gradients(T.math.igammac(ta, tx), [ta, tx])
        gb = T.gradients(T.math.betainc(ta, tb, tu), [tu])
        gz = T.gradients(T.math.zeta(ta + 1.5, tb), [tb])
        gp = T.gradients(T.math.polygamma(T.constant(np.array([0.0, 1.0, 2.0, 3.0])), tx), [tx])
        return gi + gc + gb + gz + gp
    got, want = run_in_both(prog)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-8, err_msg=f"gradient {i}")


def test_gradients_tf_leaves_undefined_are_none():
    a, b, x = (tf.constant(np.float64(v)) for v in (2.0, 3.0, 0.4))
    assert tf.gradients(tf.math.betainc(a, b, x), [a, b]) == [None, None]
    assert tf.gradients(tf.math.zeta(a, b), [a]) == [None]
    assert tf.gradients(tf.math.polygamma(a, b), [a]) == [None]
    # broadcasting: the gradient of a scalar a sums over x
    ga = tf.gradients(tf.reduce_sum(tf.math.igamma(a, tf.constant([0.5, 1.0, 4.0], tf.float64))), [a])[0]
    want = igamma_parts(np.full(3, 2.0), np.array([0.5, 1.0, 4.0]), grad=True)[2].sum()
    assert ga.shape.as_list() == [] and run(ga) == pytest.approx(want, rel=1e-12)


# -- the gamma sampler -----------------------------------------------------------------------

def test_random_gamma_shapes_and_names():
    assert tf.random.gamma is tf.random_gamma
    s = tf.random_gamma([5, 2], alpha=[[1.0], [2.0], [3.0]], beta=[1.0, 2.0, 4.0, 0.5], seed=1)
    assert s.shape.as_list() == [5, 2, 3, 4] and s.dtype == tf.float32
    v = run(s)
    assert v.shape == (5, 2, 3, 4) and (v > 0).all()
    v64 = run(tf.random_gamma(3, np.float64(0.5), dtype=tf.float64, seed=2))
    assert v64.shape == (3,) and v64.dtype == np.float64
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.random_gamma([2], tf.constant(np.float64(1.0)), dtype=tf.float32)


@pytest.mark.parametrize("alpha", [0.05, 0.4, 1.0, 3.5, 80.0])
def test_random_gamma_moments(alpha):
    n = 60000
    v = run(tf.random_gamma([n], np.float64(alpha), beta=np.float64(2.0), dtype=tf.float64, seed=7))
    mean, var = alpha / 2.0, alpha / 4.0
    assert abs(v.mean() - mean) < 5 * math.sqrt(var / n)
    assert abs(v.var() / var - 1) < 0.08
    # the distribution, not just its moments: P(alpha, 2 v) is uniform
    u = np.sort(igamma_parts(np.float64(alpha), 2.0 * v)[0])
    assert np.max(np.abs(u - (np.arange(n) + 0.5) / n)) < 1.6 / math.sqrt(n) * 1.5


def test_random_gamma_implicit_gradient():
    alpha = tf.constant(np.array([0.3, 2.0, 15.0]))
    beta = tf.constant(np.float64(2.0))
    s = tf.random_gamma([4], alpha, beta=beta, dtype=tf.float64, seed=3)
    ga, gb, sv = run(tf.gradients(tf.reduce_sum(s), [alpha, beta]) + [s])
    # hold u = P(alpha, beta s) fixed and move alpha: solve P(alpha +- h, y) = u for y by bisection
    av = np.array([0.3, 2.0, 15.0])
    y = 2.0 * sv
    u = igamma_parts(np.broadcast_to(av, y.shape), y)[0]

    def solve(a2):
        lo, hi = np.full(y.shape, 1e-300), np.full(y.shape, 1e3)
        for _ in range(200):
            mid = (lo + hi) / 2
            low = igamma_parts(np.broadcast_to(a2, y.shape), mid)[0] < u
            lo, hi = np.where(low, mid, lo), np.where(low, hi, mid)
        return (lo + hi) / 2
    h = 1e-6
    dyda = (solve(av + h) - solve(av - h)) / (2 * h)
    np.testing.assert_allclose(ga, (dyda / 2.0).sum(0), rtol=1e-5)
    np.testing.assert_allclose(gb, -(sv / 2.0).sum(), rtol=1e-10)


def test_large_a_expansion_agrees_with_the_series(monkeypatch):
    """Temme's expansion (a > 1e5 near the mean) against the series / continued fraction run to
    convergence (forced by raising the switch point), values and dP/da."""
    import collflow.kernels.special_more_kernels as K
    rows = []
    for a in (3e5, 1e7, 1e8):
        s = math.sqrt(a)
        x = a + s * np.array([-37, -10, -3, -0.5, -1e-6, 0, 1e-6, 0.7, 3, 10])
        rows.append(K.igamma_parts(np.full(x.shape, a), x, grad=True))
        monkeypatch.setattr(K, "_TEMME_A", 1e300)
        want = K.igamma_parts(np.full(x.shape, a), x, grad=True)
        monkeypatch.setattr(K, "_TEMME_A", 1e5)
        p, q, dp = rows[-1]
        np.testing.assert_allclose(p, want[0], rtol=1e-9)
        np.testing.assert_allclose(q, want[1], rtol=1e-9)
        np.testing.assert_allclose(dp, want[2], rtol=1e-7)
    # far beyond the series' reach: P(a, a) = 1/2 + 1/(3 sqrt(2 pi a)) + O(a^-3/2)
    a = 1e12
    p, q = run([tf.math.igamma(np.float64(a), np.float64(a)), tf.math.igammac(np.float64(a), np.float64(a))])
    assert p == pytest.approx(0.5 + 1 / (3 * math.sqrt(2 * math.pi * a)), rel=1e-12)
    assert p + q == pytest.approx(1.0, rel=1e-15)
