"""tf.linalg's expm, lu (and lu_solve / lu_reconstruct / lu_matrix_inverse), pinv,
matrix_rank, adjoint, matvec, normalize, cross, tridiagonal_matmul/solve: NumPy references,
identities and central finite-difference gradients in float64 (no TensorFlow needed)."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import InvalidArgumentError


def _run(fn, arrays, grad=False):
    g = tf.Graph()
    with g.as_default():
        phs = [tf.placeholder(tf.as_dtype(a.dtype), a.shape) for a in arrays]
        y = fn(*phs)
        fetch = [y] + (tf.gradients(tf.reduce_sum(y * y), phs) if grad else [])
        with tf.Session(graph=g) as sess:
            return sess.run(fetch, dict(zip(phs, arrays)))


def _fd(fn, x, eps=1e-6):
    """Central differences of sum(fn(x)^2) w.r.t. x (evaluated with NumPy via the graph)."""
    g = tf.Graph()
    with g.as_default():
        ph = tf.placeholder(tf.float64, x.shape)
        y = tf.reduce_sum(tf.square(fn(ph)))
        with tf.Session(graph=g) as sess:
            out = np.zeros_like(x)
            for i in np.ndindex(x.shape):
                xp, xm = x.copy(), x.copy()
                xp[i] += eps
                xm[i] -= eps
                out[i] = (sess.run(y, {ph: xp}) - sess.run(y, {ph: xm})) / (2 * eps)
            return out


def _expm_ref(a):
    """Taylor series after scaling, then squaring: an independent float64 reference."""
    s = max(0, int(np.ceil(np.log2(max(np.abs(a).sum(axis=0).max(), 1e-300)))) + 4)
    b = a / 2.0 ** s
    out, term = np.eye(len(a)), np.eye(len(a))
    for k in range(1, 30):
        term = term @ b / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.mark.parametrize("scale", [1e-3, 0.1, 0.5, 1.5, 3.0, 20.0])
def test_expm_matches_series(rng, scale):
    a = rng.normal(size=(2, 3, 4, 4)) * scale
    (e,) = _run(tf.linalg.expm, [a])
    ref = np.array([[_expm_ref(m) for m in row] for row in a])
    np.testing.assert_allclose(e, ref, rtol=1e-12 * max(1, scale * 4), atol=1e-14)


def test_expm_identities_and_float32(rng):
    a = rng.normal(size=(5, 5))
    e, e_neg = _run(lambda x: tf.stack([tf.linalg.expm(x), tf.linalg.expm(-x)]), [a])[0]
    np.testing.assert_allclose(e @ e_neg, np.eye(5), atol=1e-12)
    d = np.diag([0.5, -1.0, 2.0])
    np.testing.assert_allclose(_run(tf.linalg.expm, [d])[0], np.diag(np.exp(np.diag(d))), rtol=1e-14)
    (e32,) = _run(tf.linalg.expm, [a.astype(np.float32)])
    assert e32.dtype == np.float32
    np.testing.assert_allclose(e32, _expm_ref(a), rtol=2e-5, atol=1e-5)
    (z,) = _run(tf.linalg.expm, [np.zeros((2, 0, 0))])
    assert z.shape == (2, 0, 0)
    (nan,) = _run(tf.linalg.expm, [np.array([[np.inf, 0.0], [0.0, 1.0]])])
    assert np.isnan(nan).all()


@pytest.mark.parametrize("scale", [0.01, 0.3, 4.0])
def test_expm_gradient(rng, scale):
    a = rng.normal(size=(3, 3)) * scale
    _, g = _run(tf.linalg.expm, [a], grad=True)
    np.testing.assert_allclose(g, _fd(tf.linalg.expm, a), rtol=1e-5, atol=1e-6)


def test_lu_packing_and_pivoting(rng):
    a = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 10.0]])
    lu, p = _run(lambda x: tf.linalg.lu(x), [a])[0]
    np.testing.assert_array_equal(p, [2, 0, 1])          # TF's (LAPACK getrf's) pivots
    np.testing.assert_allclose(lu, [[7, 8, 10], [1 / 7, 6 / 7, 11 / 7], [4 / 7, 0.5, -0.5]], rtol=1e-14)
    b = rng.normal(size=(2, 3, 5, 5))
    lu, p = _run(lambda x: tf.linalg.lu(x), [b])[0]
    assert p.dtype == np.int32 and p.shape == (2, 3, 5)
    low = np.tril(lu, -1) + np.eye(5)
    up = np.triu(lu)
    np.testing.assert_allclose(low @ up, np.take_along_axis(b, p[..., None], axis=-2), atol=1e-13)
    assert np.all(np.abs(np.tril(lu, -1)) <= 1 + 1e-15)     # partial pivoting bounds the multipliers
    (p64,) = _run(lambda x: tf.linalg.lu(x, output_idx_type=tf.int64)[1], [b])
    assert p64.dtype == np.int64


def test_lu_singular_is_error():
    with pytest.raises(InvalidArgumentError, match="not invertible"):
        _run(lambda x: tf.linalg.lu(x)[0], [np.array([[1.0, 2.0], [2.0, 4.0]])])
    with pytest.raises(ValueError):
        tf.linalg.lu(tf.zeros([2, 3], tf.float64))


def test_lu_solve_inverse_reconstruct(rng):
    a = rng.normal(size=(3, 4, 4))
    rhs = rng.normal(size=(3, 4, 2))

    def fn(x, r):
        lu, p = tf.linalg.lu(x)
        return [tf.linalg.lu_reconstruct(lu, p), tf.linalg.lu_matrix_inverse(lu, p), tf.linalg.lu_solve(lu, p, r)]
    rec, inv, sol = _run(fn, [a, rhs])[0]
    np.testing.assert_allclose(rec, a, atol=1e-13)
    np.testing.assert_allclose(inv, np.linalg.inv(a), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sol, np.linalg.solve(a, rhs), rtol=1e-10, atol=1e-12)
    # broadcasting: one factorization, a batch of right-hand sides
    rhs2 = rng.normal(size=(2, 4, 3))

    def fn2(x, r):
        lu, p = tf.linalg.lu(x)
        return tf.linalg.lu_solve(lu, p, r)
    (sol2,) = _run(fn2, [a[0], rhs2])
    np.testing.assert_allclose(sol2, np.linalg.solve(a[0], rhs2), rtol=1e-10, atol=1e-12)


def test_lu_solve_gradient(rng):
    a = rng.normal(size=(4, 4)) + 4 * np.eye(4)
    rhs = rng.normal(size=(4, 2))
    lu_v, p_v = _run(lambda x: tf.linalg.lu(x), [a])[0]
    _, g_lu = _run(lambda x: tf.linalg.lu_solve(x, tf.constant(p_v), tf.constant(rhs)), [lu_v], grad=True)
    np.testing.assert_allclose(g_lu, _fd(lambda x: tf.linalg.lu_solve(x, tf.constant(p_v), tf.constant(rhs)), lu_v),
                               rtol=1e-5, atol=1e-7)
    _, g_rec = _run(lambda x: tf.linalg.lu_reconstruct(x, tf.constant(p_v)), [lu_v], grad=True)
    np.testing.assert_allclose(g_rec, _fd(lambda x: tf.linalg.lu_reconstruct(x, tf.constant(p_v)), lu_v),
                               rtol=1e-5, atol=1e-7)


def test_lu_has_no_gradient():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [2, 2])
        with pytest.raises(LookupError):
            tf.gradients(tf.reduce_sum(tf.linalg.lu(x)[0]), x)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 6)])
def test_pinv_matches_numpy(rng, shape):
    a = rng.normal(size=shape)
    (p,) = _run(tf.linalg.pinv, [a])
    np.testing.assert_allclose(p, np.linalg.pinv(a), rtol=1e-10, atol=1e-12)
    # rank deficient: Penrose conditions
    b = rng.normal(size=(5, 2)) @ rng.normal(size=(2, 4))
    (q,) = _run(tf.linalg.pinv, [b])
    np.testing.assert_allclose(b @ q @ b, b, atol=1e-12)
    np.testing.assert_allclose(q @ b @ q, q, atol=1e-12)
    np.testing.assert_allclose(q, np.linalg.pinv(b, rcond=10 * 5 * np.finfo(float).eps), atol=1e-12)


def test_pinv_gradient(rng):
    a = rng.normal(size=(4, 3))
    _, g = _run(tf.linalg.pinv, [a], grad=True)
    np.testing.assert_allclose(g, _fd(tf.linalg.pinv, a), rtol=1e-5, atol=1e-7)


def test_matrix_rank(rng):
    b = rng.normal(size=(3, 6, 2)) @ rng.normal(size=(3, 2, 5))
    (r,) = _run(tf.linalg.matrix_rank, [b])
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r, [2, 2, 2])
    (r1,) = _run(lambda x: tf.linalg.matrix_rank(x, tol=0.5), [np.diag([1.0, 0.4, 2.0])])
    assert r1 == 2


def test_small_helpers(rng):
    a = rng.normal(size=(2, 3, 4))
    v = rng.normal(size=(2, 4))
    (adj,) = _run(tf.linalg.adjoint, [a])
    np.testing.assert_array_equal(adj, np.swapaxes(a, -1, -2))
    (mv,) = _run(tf.linalg.matvec, [a, v])
    np.testing.assert_allclose(mv, np.einsum("bij,bj->bi", a, v), rtol=1e-14)
    (mvt,) = _run(lambda x, y: tf.linalg.matvec(x, y, adjoint_a=True), [a, rng.normal(size=(2, 3))])
    assert mvt.shape == (2, 4)
    n, nn = _run(lambda x: list(tf.linalg.normalize(x, axis=-1)), [a])[0]
    np.testing.assert_allclose(nn, np.linalg.norm(a, axis=-1, keepdims=True), rtol=1e-14)
    np.testing.assert_allclose(n, a / nn, rtol=1e-14)
    x3, y3 = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    (c,) = _run(tf.linalg.cross, [x3, y3])
    np.testing.assert_allclose(c, np.cross(x3, y3), rtol=1e-13)


def _tri_dense(sup, main, sub):
    m = main.shape[-1]
    t = np.zeros(main.shape[:-1] + (m, m))
    idx = np.arange(m)
    t[..., idx, idx] = main
    t[..., idx[:-1], idx[1:]] = sup[..., :-1]
    t[..., idx[1:], idx[:-1]] = sub[..., 1:]
    return t


def test_tridiagonal(rng):
    d = rng.normal(size=(2, 3, 5))
    d[:, 1] += 4.0
    rhs = rng.normal(size=(2, 5, 3))
    t = _tri_dense(d[:, 0], d[:, 1], d[:, 2])
    (mm,) = _run(tf.linalg.tridiagonal_matmul, [d, rhs])
    np.testing.assert_allclose(mm, t @ rhs, rtol=1e-13, atol=1e-14)
    (x,) = _run(tf.linalg.tridiagonal_solve, [d, rhs])
    np.testing.assert_allclose(x, np.linalg.solve(t, rhs), rtol=1e-11, atol=1e-13)
    (xv,) = _run(tf.linalg.tridiagonal_solve, [d, rhs[..., 0]])
    np.testing.assert_allclose(xv, np.linalg.solve(t, rhs[..., :1])[..., 0], rtol=1e-11, atol=1e-13)
    (xs,) = _run(lambda a, b, c, r: tf.linalg.tridiagonal_solve([a, b, c], r, diagonals_format="sequence"),
                 [d[:, 0], d[:, 1], d[:, 2], rhs])
    np.testing.assert_allclose(xs, x, rtol=1e-14)
    (xm,) = _run(lambda a, r: tf.linalg.tridiagonal_solve(a, r, diagonals_format="matrix"), [t, rhs])
    np.testing.assert_allclose(xm, x, rtol=1e-12)
    _, g = _run(lambda a: tf.linalg.tridiagonal_solve(a, tf.constant(rhs[0])), [d[0]], grad=True)
    np.testing.assert_allclose(g, _fd(lambda a: tf.linalg.tridiagonal_solve(a, tf.constant(rhs[0])), d[0]),
                               rtol=1e-5, atol=1e-7)


def test_missing_names_still_say_so():
    # (tf.linalg.logm and the LinearOperators exist now: test_complex_more.py, test_linear_operator.py)
    with pytest.raises(AttributeError, match="not implemented"):
        tf.linalg.experimental  # TF 2.x's (Householder and BlockLowerTriangular exist now)
