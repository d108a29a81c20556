"""Differential tests against TensorFlow (graph mode) for complex numbers beyond the basics:
optimizer updates of complex variables, complex elementwise math and complex linear algebra.

TF1's Python optimizers refuse complex variables (ValueError in compute_gradients), but its
Apply*/ResourceApply* kernels take them; the TF side here applies tf.gradients' complex
gradients with those kernels (tf.raw_ops) and slot variables set up as TF1's optimizers set
them up, and collflow's optimizers must give the same variable values step after step.
Skipped cleanly without TensorFlow."""
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
RAW = tensorflow.raw_ops

Z0 = np.array([[1 + 2j, -0.5 + 0.3j, 0.2 - 0.7j], [0.4 + 0.1j, -1.2 - 0.6j, 0.9 + 0.9j]])
TARGET = np.array([[0.3 - 1j, 2 + 0.5j, -0.4 + 0.2j], [1.1 - 0.3j, 0.2 + 0.8j, -0.6 - 1.5j]])


def _loss(tf, v):
    # a real loss of a complex variable, holomorphic and not: |v - t|^2 + Re(v^2) + |v|^3
    t = tf.constant(TARGET.astype(v.dtype.as_numpy_dtype))
    d = v - t
    return (tf.reduce_sum(tf.real(d * tf.conj(d))) + 0.5 * tf.reduce_sum(tf.real(v * v))
            + 0.1 * tf.reduce_sum(tf.abs(v) ** 3))


def _sparse_loss(tf, v):
    # through a gather: an IndexedSlices gradient with a duplicate row
    rows = tf.gather(v, [1, 0, 1])
    t = tf.constant(TARGET[[1, 0, 1]].astype(v.dtype.as_numpy_dtype))
    d = rows - t
    return tf.reduce_sum(tf.real(d * tf.conj(d))) + 0.3 * tf.reduce_sum(tf.imag(rows * rows))


# name -> (collflow optimizer, TF raw kernel name, slots [(name, initial value)], hyperparameters)
OPTS = {
    "gd": (lambda tf: tf.train.GradientDescentOptimizer(0.1), "GradientDescent", [], {}),
    "momentum": (lambda tf: tf.train.MomentumOptimizer(0.05, 0.9), "Momentum", [("accum", 0.0)],
                 {"momentum": 0.9}),
    "nesterov": (lambda tf: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True), "Momentum",
                 [("accum", 0.0)], {"momentum": 0.9, "use_nesterov": True}),
    "adagrad": (lambda tf: tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.2), "Adagrad",
                [("accum", 0.2)], {}),
    "adam": (lambda tf: tf.train.AdamOptimizer(0.05, 0.8, 0.9, 1e-6), "Adam", [("m", 0.0), ("v", 0.0)],
             {"beta1": 0.8, "beta2": 0.9, "epsilon": 1e-6}),
    "rmsprop": (lambda tf: tf.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.3, epsilon=1e-6), "RMSProp",
                [("ms", 1.0), ("mom", 0.0)], {"rho": 0.8, "momentum": 0.3, "epsilon": 1e-6}),
    "centered_rmsprop": (lambda tf: tf.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.3, epsilon=1e-6,
                                                              centered=True), "CenteredRMSProp",
                         [("mg", 0.0), ("ms", 1.0), ("mom", 0.0)], {"rho": 0.8, "momentum": 0.3, "epsilon": 1e-6}),
    "adadelta": (lambda tf: tf.train.AdadeltaOptimizer(0.5, rho=0.9, epsilon=1e-6), "Adadelta",
                 [("accum", 0.0), ("accum_update", 0.0)], {"rho": 0.9, "epsilon": 1e-6}),
}
LR = {"gd": 0.1, "momentum": 0.05, "nesterov": 0.05, "adagrad": 0.1, "adam": 0.05, "rmsprop": 0.01,
      "centered_rmsprop": 0.01, "adadelta": 0.5}
STEPS = 5


def _tf_steps(key, dtype, sparse):
    """Variable values after each step: tf.gradients + TF's ResourceApply* kernels, with the
    hyperparameters as TF1's Python optimizers make them: float32 tensors cast to the variable's
    dtype, Adam's beta powers float32 variables."""
    _, kernel, slots, hp = OPTS[key]
    g = tft.Graph()
    with g.as_default():
        c = lambda x: tft.constant(np.asarray(np.float32(x), dtype))  # noqa: E731
        v = tft.Variable(Z0.astype(dtype), use_resource=True)
        sl = [tft.Variable(np.full(Z0.shape, x0, dtype), use_resource=True) for _, x0 in slots]
        loss = (_sparse_loss if sparse else _loss)(tft, v)
        grad = tft.gradients(loss, [v])[0]
        kw = {"var": v.handle, "lr": c(LR[key])}
        kw.update({n: s.handle for (n, _), s in zip(slots, sl)})
        for n, x in hp.items():
            kw[n] = x if n == "use_nesterov" else c(x)
        b1p = b2p = None
        if key == "adam":
            b1p = tft.Variable(np.float32(hp["beta1"]), use_resource=True)
            b2p = tft.Variable(np.float32(hp["beta2"]), use_resource=True)
            kw.update(beta1_power=tft.cast(b1p.read_value(), dtype), beta2_power=tft.cast(b2p.read_value(), dtype))
        if sparse:
            # duplicate rows summed first, as TF1's Optimizer does before _apply_sparse
            idx, pos = tft.unique(grad.indices)
            vals = tft.unsorted_segment_sum(grad.values, pos, tft.shape(idx)[0])
            grad = tft.IndexedSlices(vals, idx)
            kw.update(grad=grad.values, indices=grad.indices)
            if key == "gd":
                op = RAW.ResourceScatterSub(resource=v.handle, indices=grad.indices,
                                            updates=grad.values * c(LR[key]))
            else:
                op = getattr(RAW, "ResourceSparseApply" + kernel)(**kw)
        else:
            kw["grad"] = grad
            if key == "gd":
                op = RAW.ResourceApplyGradientDescent(var=v.handle, alpha=kw["lr"], delta=grad)
            else:
                op = getattr(RAW, "ResourceApply" + kernel)(**kw)
        if key == "adam":
            with tft.control_dependencies([op]):
                op = tft.group(b1p.assign(b1p * np.float32(hp["beta1"])), b2p.assign(b2p * np.float32(hp["beta2"])))
        with tft.Session(graph=g) as s:
            s.run(tft.global_variables_initializer())
            out = []
            for _ in range(STEPS):
                s.run(op)
                out.append(s.run(v.read_value()))
    return out


def _cf_steps(key, dtype, sparse):
    g = cft.Graph()
    with g.as_default():
        v = cft.Variable(Z0.astype(dtype))
        loss = (_sparse_loss if sparse else _loss)(cft, v)
        op = OPTS[key][0](cft).minimize(loss)
        with cft.Session(graph=g) as s:
            s.run(cft.global_variables_initializer())
            out = []
            for _ in range(STEPS):
                s.run(op)
                out.append(s.run(v))
    return out


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("key", sorted(OPTS))
def test_optimizer_updates_complex_variable(key, dtype):
    want = _tf_steps(key, dtype, False)
    got = _cf_steps(key, dtype, False)
    tol = 1e-10 if dtype == np.complex128 else 2e-5
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("key", sorted(set(OPTS) - {"adam"}))
def test_sparse_optimizer_updates_complex_variable(key):
    # Adam's sparse update in TF1 is no kernel (scatter ops in the optimizer); see the by-hand tests
    want = _tf_steps(key, np.complex128, True)
    got = _cf_steps(key, np.complex128, True)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


# -- complex elementwise math and linear algebra: outputs and gradients -----------------------

def _real_outputs(tf, outs):
    res = []
    for o in outs if isinstance(outs, (list, tuple)) else [outs]:
        if o.dtype.is_complex:
            res += [tf.real(o), tf.imag(o)]
        else:
            res.append(o)
    return res


def _run_case(tf, fn, values, real_weights_only=False):
    """(outputs, gradients w.r.t. every input) of fn; the loss is sum(out * W) over the real
    views of the outputs (only the real parts with real_weights_only)."""
    g = tf.Graph()
    with g.as_default():
        xs = [tf.placeholder(getattr(tf, str(v.dtype)), v.shape) for v in values]
        outs = _real_outputs(tf, fn(tf, *xs))
        r = np.random.RandomState(5)
        terms = []
        for k, o in enumerate(outs):
            w = r.uniform(0.5, 1.5, o.shape.as_list()).astype(o.dtype.as_numpy_dtype)
            if not (real_weights_only and k % 2):
                terms.append(tf.reduce_sum(o * w))
        grads = tf.gradients(tf.add_n(terms), xs)
        with tf.Session(graph=g) as s:
            return s.run(outs, dict(zip(xs, values))), s.run(grads, dict(zip(xs, values)))


def _compare(fn, values, rtol=1e-7, atol=1e-8, real_weights_only=False):
    o1, g1 = _run_case(tft, fn, values, real_weights_only)
    o2, g2 = _run_case(cft, fn, values, real_weights_only)
    assert len(o1) == len(o2) and len(g1) == len(g2)
    for a, b in zip(o1 + g1, o2 + g2):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)


R = np.random.RandomState(17)


def _cx(*shape, lo=-1.2, hi=1.2, ilo=-1.2, ihi=1.2, dtype=np.complex128):
    return (R.uniform(lo, hi, shape) + 1j * R.uniform(ilo, ihi, shape)).astype(dtype)


# the inverse functions' inputs off the real axis (their branch cuts lie on it)
_OFF_AXIS = dict(ilo=0.2, ihi=1.2)
UNARY = ["tan", "sinh", "cosh", "tanh", "sigmoid", "asinh", "acosh", "atanh", "asin", "acos", "atan", "expm1",
         "sign", "sqrt", "rsqrt", "reciprocal", "exp", "log", "log1p", "square", "sin", "cos"]


def _unary_fn(name):
    return lambda tf, x: getattr(tf.math, name)(x)


@pytest.mark.parametrize("name", UNARY)
def test_complex_unary(name):
    _compare(_unary_fn(name), [_cx(3, 4, **_OFF_AXIS)])


@pytest.mark.parametrize("name", ["tan", "tanh", "asin", "acosh", "sign", "expm1"])
def test_complex64_unary(name):
    _compare(_unary_fn(name), [_cx(3, 4, dtype=np.complex64, **_OFF_AXIS)], rtol=2e-5, atol=2e-5)


def test_sign_of_zero_and_its_gradient():
    z = _cx(2, 3)
    z[0, 1] = 0
    _compare(lambda tf, x: tf.sign(x), [z])


def test_complex_pow_and_squared_difference():
    _compare(lambda tf, x, y: tf.pow(x, y), [_cx(3, 4, **_OFF_AXIS), _cx(3, 4)])
    # TF's squared_difference gradient 2 g (x - y) is the derivative for a real incoming g only
    _compare(lambda tf, x, y: tf.squared_difference(x, y), [_cx(3, 4), _cx(4)])
    _compare(lambda tf, x, y: tf.math.squared_difference(x, y), [_cx(3, 4), _cx(3, 4)], real_weights_only=True)


def _square(n=3, batch=(), dtype=np.complex128):
    return (_cx(*batch, n, n, dtype=dtype) + 2.5 * np.eye(n)).astype(dtype)


def _hermitian_pd(n=3, batch=()):
    a = _cx(*batch, n, n)
    return a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)


LINALG = [
    ("inv", lambda tf, a: tf.linalg.inv(a), lambda: [_square(3, (2,))]),
    ("inv_adjoint", lambda tf, a: tf.linalg.inv(a, adjoint=True), lambda: [_square()]),
    ("det", lambda tf, a: tf.linalg.det(a), lambda: [_square(3, (2,))]),
    ("slogdet", lambda tf, a: list(tf.linalg.slogdet(a)), lambda: [_square(4)]),
    ("logdet", lambda tf, a: tf.linalg.logdet(a), lambda: [_hermitian_pd(3)]),
    ("solve", lambda tf, a, b: tf.linalg.solve(a, b), lambda: [_square(3, (2,)), _cx(2, 3, 2)]),
    ("solve_adjoint", lambda tf, a, b: tf.linalg.solve(a, b, adjoint=True), lambda: [_square(3), _cx(3, 2)]),
    ("triangular_solve", lambda tf, a, b: tf.linalg.triangular_solve(a, b), lambda: [_square(3), _cx(3, 2)]),
    ("triangular_solve_upper_adjoint", lambda tf, a, b: tf.linalg.triangular_solve(a, b, lower=False, adjoint=True),
     lambda: [_square(3), _cx(3, 2)]),
    ("cholesky", lambda tf, a: tf.linalg.cholesky(a), lambda: [_hermitian_pd(3, (2,))]),
    ("cholesky_solve", lambda tf, a, b: tf.linalg.cholesky_solve(tf.linalg.cholesky(a), b),
     lambda: [_hermitian_pd(3), _cx(3, 2)]),
    ("lstsq", lambda tf, a, b: tf.linalg.lstsq(a, b), lambda: [_cx(4, 3), _cx(4, 2)]),
    ("matmul_adjoint", lambda tf, a, b: tf.matmul(a, b, adjoint_a=True, adjoint_b=True),
     lambda: [_cx(3, 4), _cx(2, 3)]),
    ("adjoint", lambda tf, a: tf.linalg.adjoint(a), lambda: [_cx(2, 3)]),
    ("einsum", lambda tf, a, b: tf.einsum("ij,jk->ik", a, b), lambda: [_cx(3, 4), _cx(4, 2)]),
    ("tensordot", lambda tf, a, b: tf.tensordot(a, b, 1), lambda: [_cx(2, 3), _cx(3, 2)]),
    ("einsum_trace", lambda tf, a: tf.einsum("ii->", a), lambda: [_cx(3, 3)]),
    ("sqrtm", lambda tf, a: tf.linalg.sqrtm(a), lambda: [_square(3, (2,))]),
    ("expm", lambda tf, a: tf.linalg.expm(a), lambda: [_cx(2, 3, 3)]),
    ("expm_large_norm", lambda tf, a: tf.linalg.expm(a), lambda: [3 * _cx(3, 3)]),
    ("matvec_adjoint", lambda tf, a, b: tf.linalg.matvec(a, b, adjoint_a=True), lambda: [_cx(3, 4), _cx(3)]),
    # the decompositions' vectors are unique up to a phase per column: gauge-invariant uses
    ("svd_values", lambda tf, a: tf.linalg.svd(a, compute_uv=False), lambda: [_cx(2, 3, 4)]),
    ("svd_projectors", lambda tf, a: _svd_projectors(tf, a, False), lambda: [_cx(3, 4)]),
    ("svd_projectors_tall", lambda tf, a: _svd_projectors(tf, a, False), lambda: [_cx(4, 3)]),
    ("svd_projectors_square", lambda tf, a: _svd_projectors(tf, a, False), lambda: [_cx(2, 3, 3)]),
    ("svd_moduli", lambda tf, a: [tf.abs(t) for t in tf.linalg.svd(a)], lambda: [_cx(3, 3)]),
    ("eigh", lambda tf, a: _eigh_invariants(tf, a), lambda: [_hermitian_pd(3, (2,))]),
    ("eigvalsh", lambda tf, a: tf.linalg.eigvalsh(a), lambda: [_hermitian_pd(4)]),
    ("qr_values", lambda tf, a: list(tf.linalg.qr(a)), lambda: [_cx(4, 3)]),
    ("qr_square_batch", lambda tf, a: list(tf.linalg.qr(a)), lambda: [_cx(2, 3, 3)]),
    ("qr_wide", lambda tf, a: list(tf.linalg.qr(a)), lambda: [_cx(3, 5)]),
    ("qr_wide_full", lambda tf, a: list(tf.linalg.qr(a, full_matrices=True)), lambda: [_cx(2, 4)]),
    ("qr_real", lambda tf, a: list(tf.linalg.qr(a)), lambda: [R.uniform(-1, 1, (2, 5, 3))]),
    ("qr_real_wide", lambda tf, a: list(tf.linalg.qr(a)), lambda: [R.uniform(-1, 1, (3, 4))]),
    ("qr_only_q", lambda tf, a: tf.linalg.qr(a)[0], lambda: [_cx(4, 4)]),
]


def _svd_projectors(tf, a, full):
    s, u, v = tf.linalg.svd(a, full_matrices=full)
    # u_k v_k^H (phase-free), the reconstruction, |u|, |v|
    rec = tf.matmul(u * tf.cast(s, a.dtype)[..., None, :], v, adjoint_b=True)
    return [s, rec, tf.abs(u), tf.abs(v), tf.matmul(u[..., :1], v[..., :1], adjoint_b=True)]


def _eigh_invariants(tf, a):
    e, v = tf.linalg.eigh(a)
    return [e, tf.matmul(v[..., :1], v[..., :1], adjoint_b=True), tf.abs(v)]


@pytest.mark.parametrize("case", LINALG, ids=[c[0] for c in LINALG])
def test_complex_linalg(case):
    _, fn, make = case
    _compare(fn, make(), rtol=1e-6, atol=1e-8)


def test_complex64_linalg():
    _compare(lambda tf, a, b: [tf.linalg.inv(a), tf.linalg.solve(a, b), tf.linalg.det(a)],
             [_square(3, dtype=np.complex64), _cx(3, 2, dtype=np.complex64)], rtol=1e-4, atol=1e-5)


def _logm_values(tf, a):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(getattr(tf, str(a.dtype)), a.shape)
        out = tf.linalg.logm(x)
        with tf.Session(graph=g) as s:
            return s.run(out, {x: a})


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_logm_values(dtype):
    a = np.concatenate([_square(4, (2,)), _hermitian_pd(4)[None], _cx(1, 4, 4) + 3 * np.eye(4)]).astype(dtype)
    tol = 1e-9 if dtype == np.complex128 else 2e-4
    np.testing.assert_allclose(_logm_values(cft, a), _logm_values(tft, a), rtol=tol, atol=tol)


def test_logm_has_no_gradient_and_needs_complex():
    for tf in (tft, cft):
        with tf.Graph().as_default():
            x = tf.placeholder(tf.complex128, [2, 2])
            with pytest.raises(LookupError):
                tf.gradients(tf.real(tf.linalg.logm(x)), [x])
            with pytest.raises((TypeError, ValueError)):
                tf.linalg.logm(tf.placeholder(tf.float64, [2, 2]))


def _values(tf, fn, values):
    g = tf.Graph()
    with g.as_default():
        xs = [tf.placeholder(getattr(tf, str(v.dtype)), v.shape) for v in values]
        out = fn(tf, *xs)
        with tf.Session(graph=g) as s:
            return s.run(out, dict(zip(xs, values)))


def test_complex_lu_values():
    a = _square(4, (2,))
    lu = lambda tf, x: list(tf.linalg.lu(x))  # noqa: E731
    got, want = _values(cft, lu, [a]), _values(tft, lu, [a])
    for x, y in zip(got, want):
        assert x.dtype == y.dtype
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)


def test_complex_while_loop_gradient():
    def fn(tf, x, w):
        _, out = tf.while_loop(lambda i, z: i < 3, lambda i, z: (i + 1, tf.sin(z) * w), [tf.constant(0), x])
        return out
    _compare(fn, [_cx(2, 3), _cx(2, 3)])


def test_complex_cond_gradient():
    def fn(tf, x, w):
        return tf.cond(tf.constant(True), lambda: tf.tanh(x) * w, lambda: tf.zeros_like(x))
    _compare(fn, [_cx(2, 3), _cx(2, 3)])
