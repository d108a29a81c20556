"""By-hand tests (no TensorFlow) of complex numbers beyond the basics: optimizer updates of
complex variables, complex elementwise math, complex linear algebra and tf.linalg.logm.
References are NumPy closed forms; TF's conventions as documented in docs/tf1_compat.md."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from tf1_hyper import f32, f32_power

Z0 = np.array([[1 + 2j, -0.5 + 0.3j], [0.2 - 0.7j, 1.5 + 0.1j]])
T = np.array([[0.3 - 1j, 2 + 0.5j], [-0.4 + 0.2j, 0.1 - 0.3j]])


def _train(opt, steps=3, dtype=np.complex128, sparse=False):
    with tf.Graph().as_default():
        v = tf.Variable(Z0.astype(dtype))
        z = tf.gather(v, [0, 1, 1]) if sparse else v
        t = tf.constant((T[[0, 1, 1]] if sparse else T).astype(dtype))
        d = z - t
        loss = tf.reduce_sum(tf.real(d * tf.conj(d)))       # |z - t|^2: TF's gradient 2 (z - t)
        op = opt.minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out = []
            for _ in range(steps):
                s.run(op)
                out.append(s.run(v))
            return out, opt


def test_gradient_descent_on_complex_variable():
    got, _ = _train(tf.train.GradientDescentOptimizer(0.1))
    z = Z0.copy()
    (lr,) = f32(0.1)
    for step in got:
        z = z - lr * 2 * (z - T)
        np.testing.assert_allclose(step, z, rtol=1e-12)


def test_momentum_nesterov_on_complex_variable():
    got, _ = _train(tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True))
    z, acc = Z0.copy(), np.zeros_like(Z0)
    lr, mu = f32(0.05, 0.9)
    for step in got:
        g = 2 * (z - T)
        acc = mu * acc + g
        z = z - lr * g - lr * mu * acc
        np.testing.assert_allclose(step, z, rtol=1e-12)


def _adam_reference(steps, lr=0.1, b1=0.9, b2=0.999, eps=1e-8):
    # TF's kernels in complex arithmetic: g*g is the complex square, sqrt the principal root
    z, m, v = Z0.copy(), np.zeros_like(Z0), np.zeros_like(Z0)
    out = []
    for t in range(1, steps + 1):
        g = 2 * (z - T)
        b1p, b2p = f32_power(b1, t), f32_power(b2, t)
        lr_, b1_, b2_, eps_ = f32(lr, b1, b2, eps)
        m = b1_ * m + (1 - b1_) * g
        v = b2_ * v + (1 - b2_) * g * g
        z = z - lr_ * np.sqrt(1 - b2p) / (1 - b1p) * m / (np.sqrt(v) + eps_)
        out.append(z)
    return out


def test_adam_on_complex_variable_and_real_beta_powers():
    got, opt = _train(tf.train.AdamOptimizer(0.1))
    for a, b in zip(got, _adam_reference(3)):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    # the bias-correction powers stay real for a complex model (float32: from Python floats)
    with tf.Graph().as_default():
        v = tf.Variable(Z0)
        o = tf.train.AdamOptimizer(0.1)
        o.minimize(tf.reduce_sum(tf.abs(v)))
        b1p, b2p = o._get_beta_accumulators()
        assert b1p.dtype == tf.float32 and b2p.dtype == tf.float32
        assert o.get_slot(v, "m").dtype == tf.complex128


def test_sparse_adam_on_complex_variable():
    # TF1's AdamOptimizer on an IndexedSlices gradient: every row's moments decay, touched rows
    # add the (duplicate-summed) gradient, every row moves
    got, _ = _train(tf.train.AdamOptimizer(0.1), steps=2, sparse=True)
    z, m, v = Z0.copy(), np.zeros_like(Z0), np.zeros_like(Z0)
    lr, b1, b2, eps = f32(0.1, 0.9, 0.999, 1e-8)
    for t, step in enumerate(got, 1):
        g = np.zeros_like(z)
        g[0] = 2 * (z[0] - T[0])
        g[1] = 2 * 2 * (z[1] - T[1])
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        z = z - lr * np.sqrt(1 - f32_power(0.999, t)) / (1 - f32_power(0.9, t)) * m / (np.sqrt(v) + eps)
        np.testing.assert_allclose(step, z, rtol=1e-10)


@pytest.mark.parametrize("make", [lambda: tf.train.AdagradOptimizer(0.1), lambda: tf.train.RMSPropOptimizer(0.01),
                                  lambda: tf.train.AdadeltaOptimizer(1.0),
                                  lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True)])
def test_other_optimizers_step_complex_variables(make):
    got, _ = _train(make(), steps=2, dtype=np.complex64)
    assert got[-1].dtype == np.complex64 and np.all(np.isfinite(got[-1]))
    assert not np.allclose(got[-1], Z0)


def test_adagrad_complex_closed_form():
    got, _ = _train(tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.5), steps=2)
    z, acc = Z0.copy(), np.full_like(Z0, 0.5)
    (lr,) = f32(0.1)
    for step in got:
        g = 2 * (z - T)
        acc = acc + g * g
        z = z - lr * g / np.sqrt(acc)
        np.testing.assert_allclose(step, z, rtol=1e-12)


@pytest.mark.parametrize("make", [lambda: tf.train.FtrlOptimizer(0.1),
                                  lambda: tf.train.ProximalGradientDescentOptimizer(0.1),
                                  lambda: tf.train.ProximalAdagradOptimizer(0.1)])
def test_real_only_optimizers_refuse_complex_variables(make):
    # TF's Ftrl and proximal kernels are real only
    with tf.Graph().as_default():
        v = tf.Variable(Z0)
        with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match="real floating-point"):
            make().minimize(tf.reduce_sum(tf.abs(v)))


# -- elementwise --------------------------------------------------------------------------------

X = np.array([[0.3 + 0.4j, -1.2 + 0.5j, 0.7 + 0.9j], [2.0 - 1.5j, 0.1 + 0.2j, -0.4 - 0.8j]])


def _run(fn, *values):
    with tf.Graph().as_default():
        xs = [tf.constant(v) for v in values]
        out = fn(*xs)
        with tf.Session() as s:
            return s.run(out)


@pytest.mark.parametrize("name,ref", [("tan", np.tan), ("sinh", np.sinh), ("cosh", np.cosh), ("tanh", np.tanh),
                                      ("asinh", np.arcsinh), ("acosh", np.arccosh), ("atanh", np.arctanh),
                                      ("asin", np.arcsin), ("acos", np.arccos), ("atan", np.arctan),
                                      ("expm1", np.expm1), ("sigmoid", lambda x: 1 / (1 + np.exp(-x)))])
def test_complex_unary_values(name, ref):
    got = _run(getattr(tf.math, name), X)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, ref(X), rtol=1e-12)


def _grad(fn, x, w):
    """TF-convention gradient of sum(Re(fn(x) * w)) w.r.t. complex x."""
    with tf.Graph().as_default():
        c = tf.constant(x)
        loss = tf.reduce_sum(tf.real(fn(c) * tf.constant(w)))
        g = tf.gradients(loss, [c])[0]
        with tf.Session() as s:
            return s.run(g)


@pytest.mark.parametrize("name,deriv", [("tan", lambda x: 1 / np.cos(x) ** 2), ("tanh", lambda x: 1 - np.tanh(x) ** 2),
                                        ("asin", lambda x: 1 / np.sqrt(1 - x * x)),
                                        ("acosh", lambda x: 1 / np.sinh(np.arccosh(x))),
                                        ("sigmoid", lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2),
                                        ("expm1", np.exp), ("atanh", lambda x: 1 / (1 - x * x))])
def test_complex_unary_gradients_conjugate_the_derivative(name, deriv):
    w = np.array([[1.0 + 0.5j, 0.3 - 1j, 2.0 + 0j], [-0.5 + 0.5j, 1j, 0.7 + 0.2j]])
    # d Re(f(x) w) = Re(w f'(x) dx): TF's gradient conj(w f'(x))
    np.testing.assert_allclose(_grad(getattr(tf.math, name), X, w), np.conj(w * deriv(X)), rtol=1e-10)


def test_complex_sign():
    x = X.copy()
    x[0, 1] = 0
    got = _run(tf.sign, x)
    want = np.where(x == 0, 0, x / np.where(x == 0, 1, np.abs(x)))
    np.testing.assert_allclose(got, want, rtol=1e-14)
    # not Sign's zero gradient: that of x / |x| (0 at 0)
    g = _grad(tf.sign, x, np.ones_like(x))
    assert g[0, 1] == 0 and np.abs(g).sum() > 0
    # real sign unchanged (and its zero gradient)
    np.testing.assert_array_equal(_run(tf.sign, np.array([-2.0, 0.0, 3.0])), [-1.0, 0.0, 1.0])


def test_complex_squared_difference():
    y = X[::-1]
    got = _run(tf.squared_difference, X, y)
    np.testing.assert_allclose(got, np.abs(X - y) ** 2 + 0j, rtol=1e-14)
    assert got.dtype == np.complex128 and np.all(got.imag == 0)
    # TF's rule: 2 g (x - y)
    w = np.full_like(X, 1.0)
    np.testing.assert_allclose(_grad(lambda c: tf.squared_difference(c, tf.constant(y)), X, w), 2 * (X - y))


# -- linear algebra -----------------------------------------------------------------------------

A = np.array([[3 + 1j, 0.5 - 0.2j, 0.1j], [0.3 + 0.3j, 2.5 - 1j, 0.4], [-0.2 + 0.1j, 0.6j, 4 + 0.5j]])
B = np.array([[1 + 1j, 0.5], [2j, -1 + 0.3j], [0.2, 1 - 1j]])


def test_complex_square_matrix_ops():
    inv, inv_adj, det, (sign, logabs), x, x_adj = _run(
        lambda a, b: [tf.linalg.inv(a), tf.linalg.inv(a, adjoint=True), tf.linalg.det(a), tf.linalg.slogdet(a),
                      tf.linalg.solve(a, b), tf.linalg.solve(a, b, adjoint=True)], A, B)
    np.testing.assert_allclose(inv, np.linalg.inv(A), rtol=1e-12)
    np.testing.assert_allclose(inv_adj, np.linalg.inv(A.conj().T), rtol=1e-12)
    np.testing.assert_allclose(det, np.linalg.det(A), rtol=1e-12)
    s, l = np.linalg.slogdet(A)
    np.testing.assert_allclose(sign, s, rtol=1e-12)
    np.testing.assert_allclose(logabs, l + 0j, rtol=1e-12)
    assert logabs.dtype == np.complex128
    np.testing.assert_allclose(x, np.linalg.solve(A, B), rtol=1e-12)
    np.testing.assert_allclose(x_adj, np.linalg.solve(A.conj().T, B), rtol=1e-12)


def test_complex_triangular_solve_and_cholesky():
    up = np.triu(A)
    x = _run(lambda a, b: tf.linalg.triangular_solve(a, b, lower=False, adjoint=True), A, B)
    np.testing.assert_allclose(x, np.linalg.solve(up.conj().T, B), rtol=1e-12)
    h = A @ A.conj().T + np.eye(3)
    chol, logdet = _run(lambda m: [tf.linalg.cholesky(m), tf.linalg.logdet(m)], h)
    np.testing.assert_allclose(chol @ chol.conj().T, h, rtol=1e-12)
    assert logdet.dtype == np.float64
    np.testing.assert_allclose(logdet, np.log(np.linalg.det(h).real), rtol=1e-12)


def test_complex_svd_eigh_qr():
    s, u, v = _run(lambda a: list(tf.linalg.svd(a)), A)
    assert s.dtype == np.float64 and u.dtype == np.complex128
    np.testing.assert_allclose(s, np.linalg.svd(A, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose(u @ np.diag(s) @ v.conj().T, A, atol=1e-12)
    h = A + A.conj().T
    e, w = _run(lambda m: list(tf.linalg.eigh(m)), h)
    assert e.dtype == np.complex128 and np.all(e.imag == 0)        # TF's dtype for a Hermitian input
    np.testing.assert_allclose(e.real, np.linalg.eigvalsh(h), rtol=1e-12)
    np.testing.assert_allclose(w @ np.diag(e) @ w.conj().T, h, atol=1e-12)
    q, r = _run(lambda a: list(tf.linalg.qr(a)), A)
    np.testing.assert_allclose(q @ r, A, atol=1e-12)
    np.testing.assert_allclose(q.conj().T @ q, np.eye(3), atol=1e-12)


def test_adjoint_conjugates():
    np.testing.assert_array_equal(_run(tf.linalg.adjoint, B), B.conj().T)
    np.testing.assert_allclose(_run(lambda a, b: tf.linalg.matvec(a, b, adjoint_a=True), A, B[:, 0]),
                               A.conj().T @ B[:, 0])


def _expm(m):
    w, v = np.linalg.eig(m)
    return v @ np.diag(np.exp(w)) @ np.linalg.inv(v)


def test_logm():
    batch = np.stack([A, A @ A.conj().T, np.diag([1j, -1 + 1e-3j, 2.0]) + 0j])
    got = _run(tf.linalg.logm, batch)
    for g, a in zip(got, batch):
        np.testing.assert_allclose(_expm(g), a, atol=1e-11)
        # the principal branch: eigenvalues' imaginary parts in (-pi, pi]
        assert np.all(np.abs(np.linalg.eigvals(g).imag) <= np.pi + 1e-9)
    np.testing.assert_allclose(got[2], np.diag(np.log(np.diag(batch[2]))), atol=1e-11)
    np.testing.assert_allclose(_run(tf.linalg.logm, np.eye(2, dtype=np.complex64)), np.zeros((2, 2)), atol=1e-7)
    assert _run(tf.linalg.logm, A.astype(np.complex64)).dtype == np.complex64


def test_logm_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError):
            tf.linalg.logm(tf.constant(np.eye(2)))
        with pytest.raises(ValueError):
            tf.linalg.logm(tf.constant(np.ones((2, 3), np.complex128)))
        x = tf.placeholder(tf.complex128, [2, 2])
        with pytest.raises(LookupError):
            tf.gradients(tf.real(tf.linalg.logm(x)), [x])


def test_complex_expm_sqrtm_lu():
    e, r = _run(lambda a: [tf.linalg.expm(a), tf.linalg.sqrtm(a)], A)
    np.testing.assert_allclose(e, _expm(A), rtol=1e-10)
    np.testing.assert_allclose(r @ r, A, atol=1e-11)
    lu, perm = _run(lambda a: list(tf.linalg.lu(a)), A)
    low = np.tril(lu, -1) + np.eye(3)
    np.testing.assert_allclose(low @ np.triu(lu), A[perm], atol=1e-12)


def test_complex_einsum_gradient_conjugates_the_other_operand():
    w = np.array([[1 + 1j], [0.5 - 2j], [1j]])
    g = _grad(lambda a: tf.einsum("ij,jk->ik", a, tf.constant(w)), A, np.ones((3, 1), np.complex128))
    np.testing.assert_allclose(g, np.ones((3, 1)) @ np.conj(w).T)


def test_complex_while_loop_gradient_by_hand():
    # z_{k+1} = z_k * w, three times: d Re(z_3) / dz = conj(w^3) in TF's convention
    w = 0.8 + 0.6j
    with tf.Graph().as_default():
        x = tf.constant(np.array([1 + 2j, -0.5j]))
        _, out = tf.while_loop(lambda i, z: i < 3, lambda i, z: (i + 1, z * w), [tf.constant(0), x])
        g = tf.gradients(tf.reduce_sum(tf.real(out)), [x])[0]
        with tf.Session() as s:
            np.testing.assert_allclose(s.run(g), np.conj(w ** 3) * np.ones(2), rtol=1e-12)
