"""Complex dtypes, the complex ops and the FFTs: values against NumPy, gradients against finite
differences in TF's convention (for a real loss L of z = x + iy the gradient is dL/dx + i dL/dy),
complex variables in checkpoints."""
import os

import numpy as np
import pytest

import collflow as cf
import collflow.compat.v1 as tf

RNG = np.random.RandomState(7)


def _c(shape, dtype=np.complex128):
    return (RNG.randn(*shape) + 1j * RNG.randn(*shape)).astype(dtype)


def _run(fetches, feed=None):
    with tf.Session() as s:
        return s.run(fetches, feed)


def test_dtypes():
    assert tf.complex64.is_complex and tf.complex128.is_complex
    assert not tf.complex64.is_floating and not tf.float32.is_complex
    assert tf.complex64.real_dtype == tf.float32 and tf.complex128.real_dtype == tf.float64
    assert tf.float32.real_dtype == tf.float32
    assert tf.as_dtype(np.complex64) == tf.complex64 and tf.as_dtype("complex128") == tf.complex128
    assert tf.as_dtype(complex) == tf.complex128
    assert tf.complex64.size == 8 and tf.complex128.as_numpy_dtype is np.complex128
    with pytest.raises(TypeError):
        tf.as_dtype(np.clongdouble)


def test_complex_part_ops_values():
    with tf.Graph().as_default():
        x = np.array([1.0, -2.0, 0.0], np.float32)
        y = np.array([0.5, 3.0, -1.0], np.float32)
        z = tf.complex(x, y)
        assert z.dtype == tf.complex64
        zv = x + 1j * y
        out = _run([z, tf.real(z), tf.imag(z), tf.conj(z), tf.angle(z), tf.abs(z), tf.math.real(z),
                    tf.math.imag(z), tf.math.conj(z), tf.math.angle(z), tf.cast(z, tf.float32),
                    tf.cast(tf.constant(x), tf.complex64), tf.cast(z, tf.complex128), tf.cast(z, tf.int32)])
        exp = [zv, x, y, np.conj(zv), np.angle(zv), np.abs(zv), x, y, np.conj(zv), np.angle(zv), x,
               x.astype(np.complex64), zv, x.astype(np.int32)]
        for o, e in zip(out, exp):
            np.testing.assert_allclose(o, e, rtol=1e-6, atol=1e-6)
        assert out[5].dtype == np.float32 and out[4].dtype == np.float32 and out[12].dtype == np.complex128
        # real tensors: real is itself, imag zeros, conj itself, angle pi where negative
        r = tf.constant([-1.0, 2.0])
        v = _run([tf.real(r), tf.imag(r), tf.conj(r), tf.angle(r)])
        np.testing.assert_allclose(v[0], [-1, 2])
        np.testing.assert_allclose(v[1], [0, 0])
        np.testing.assert_allclose(v[3], [np.pi, 0], rtol=1e-6)
        with pytest.raises(TypeError):
            tf.complex(tf.constant([1.0]), tf.constant([1.0], tf.float64))


def test_elementwise_and_structural_ops():
    with tf.Graph().as_default():
        a, b = _c((2, 3), np.complex64), _c((2, 3), np.complex64)
        m = _c((3, 4), np.complex64)
        pa = tf.placeholder(tf.complex64, [2, 3])
        tb = tf.constant(b)
        feed = {pa: a}
        got = _run([pa + tb, pa - tb, pa * tb, pa / tb, -pa, tf.square(pa), tf.exp(pa), tf.log(pa), tf.sqrt(pa),
                    tf.reciprocal(pa), tf.sin(pa), tf.cos(pa), tf.reduce_sum(pa, 1), tf.reduce_mean(pa),
                    tf.matmul(pa, m), tf.reshape(pa, [3, 2]), tf.transpose(pa), tf.concat([pa, tb], 0),
                    tf.reduce_prod(pa, 0), pa * 2.0, tf.add_n([pa, tb, pa])], feed)
        exp = [a + b, a - b, a * b, a / b, -a, a * a, np.exp(a), np.log(a), np.sqrt(a), 1 / a, np.sin(a),
               np.cos(a), a.sum(1), a.mean(), a @ m, a.reshape(3, 2), a.T, np.concatenate([a, b]),
               a.prod(0), a * 2, a + b + a]
        for g, e in zip(got, exp):
            assert g.dtype == np.complex64
            np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5)
        assert tf.constant(1 + 2j).dtype == tf.complex128
        assert tf.constant(1.0, tf.complex64).dtype == tf.complex64


# -- gradients ------------------------------------------------------------------------------------

def _numeric_grad(f, v, eps=1e-6):
    """dL/dx (+ i dL/dy for complex v) by central differences of the float64 function f."""
    g = np.zeros(v.shape, np.complex128 if np.iscomplexobj(v) else np.float64)
    flat = g.reshape(-1)
    for i in range(v.size):
        for unit in ((1.0, 1j) if np.iscomplexobj(v) else (1.0,)):
            d = np.zeros(v.size, v.dtype)
            d[i] = eps * unit
            d = d.reshape(v.shape)
            flat[i] += unit * (f(v + d) - f(v - d)) / (2 * eps)
    return g


def _check_grad(build, v, rtol=1e-6, atol=1e-7):
    """build(t) -> a tensor; the loss is a fixed random real projection of it (its real and
    imaginary parts for a complex result).  Compares tf.gradients with finite differences."""
    with tf.Graph().as_default():
        p = tf.placeholder(tf.as_dtype(v.dtype), v.shape)
        y = build(p)
        shape = tuple(y.shape.as_list())
        wr = np.random.RandomState(1).randn(*shape)
        wi = np.random.RandomState(2).randn(*shape)
        if y.dtype.is_complex:
            loss = tf.reduce_sum(tf.real(y) * wr + tf.imag(y) * wi)
        else:
            loss = tf.reduce_sum(y * wr)
        grad, = tf.gradients(loss, p)
        with tf.Session() as s:
            analytic = s.run(grad, {p: v})
            num = _numeric_grad(lambda u: s.run(loss, {p: u}), v)
    np.testing.assert_allclose(analytic, num, rtol=rtol, atol=atol)
    return analytic


_Z = _c((2, 3))
_W = _c((2, 3))
_UNARY = {
    "exp": tf.exp, "log": tf.log, "sqrt": tf.sqrt, "rsqrt": tf.rsqrt, "square": tf.square,
    "reciprocal": tf.reciprocal, "sin": tf.sin, "cos": tf.cos, "neg": tf.negative, "log1p": tf.log1p,
    "conj": tf.conj, "real": tf.real, "imag": tf.imag, "angle": tf.angle, "abs": tf.abs,
    "cast_real": lambda z: tf.cast(z, tf.float64),
    "mul_const": lambda z: z * tf.constant(_W), "div_const": lambda z: z / tf.constant(_W),
    "const_div": lambda z: tf.constant(_W) / z, "mul_self": lambda z: z * z,
    "matmul": lambda z: tf.matmul(z, tf.constant(_c((3, 2)))),
    "matmul_tb": lambda z: tf.matmul(tf.constant(_c((4, 3))), z, transpose_b=True),
    "sum": lambda z: tf.reduce_sum(z, 0), "mean": lambda z: tf.reduce_mean(z, 1),
    "prod": lambda z: tf.reduce_prod(z, 1), "pow": lambda z: tf.pow(z, tf.constant(_W)),
    "pow_exp": lambda z: tf.pow(tf.constant(_W), z),
    "transpose_concat": lambda z: tf.concat([tf.transpose(z), tf.reshape(z, [3, 2])], 0),
    "broadcast_mul": lambda z: z * tf.constant(_c((1, 3))),
}


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_complex_gradients(name):
    _check_grad(_UNARY[name], _Z)


def test_complex_of_reals_gradient():
    x, y = RNG.randn(2, 3), RNG.randn(1, 3)
    _check_grad(lambda p: tf.exp(tf.complex(p, tf.constant(y))), x)
    _check_grad(lambda p: tf.exp(tf.complex(tf.constant(x), p)), y)  # broadcast: summed back
    _check_grad(lambda p: tf.abs(tf.cast(p, tf.complex128) * tf.constant(_W)), x)


def test_cast_between_complex_types_gradient():
    with tf.Graph().as_default():
        z = tf.constant(_Z)
        y = tf.cast(z, tf.complex64) * tf.constant(_W.astype(np.complex64))
        g, = tf.gradients(tf.reduce_sum(tf.real(y)), z)
        got = _run(g)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, np.conj(_W), rtol=1e-6)


def test_abs_gradient_at_zero_is_zero():
    with tf.Graph().as_default():
        z = tf.constant(np.array([0j, 3 + 4j]))
        g, = tf.gradients(tf.reduce_sum(tf.abs(z)), z)
        np.testing.assert_allclose(_run(g), [0, 0.6 + 0.8j])


def test_gradient_of_real_and_complex_mixed_graph_keeps_real_graph():
    # the conjugations add nothing to a real graph: a Mul's gradient has no Conj op
    with tf.Graph().as_default() as g:
        x = tf.constant([1.0, 2.0])
        tf.gradients(tf.reduce_sum(x * x), x)
        assert not [op for op in g.get_operations() if op.type == "Conj"]


# -- FFTs ------------------------------------------------------------------------------------------

_C2C = [("fft", 1, np.fft.fftn), ("ifft", 1, np.fft.ifftn), ("fft2d", 2, np.fft.fftn),
        ("ifft2d", 2, np.fft.ifftn), ("fft3d", 3, np.fft.fftn), ("ifft3d", 3, np.fft.ifftn)]


@pytest.mark.parametrize("name,rank,npfn", _C2C)
def test_c2c_fft_values_and_gradients(name, rank, npfn):
    for ns in (tf.signal, tf.spectral):
        fn = getattr(ns, name)
        x = _c((2, 3, 4, 5), np.complex64)
        with tf.Graph().as_default():
            got = _run(fn(tf.constant(x)))
        assert got.dtype == np.complex64
        np.testing.assert_allclose(got, npfn(x, axes=tuple(range(-rank, 0))), rtol=1e-4, atol=1e-4)
    _check_grad(getattr(tf.signal, name), _c((2, 3, 4)), rtol=1e-5, atol=1e-6)
    assert getattr(tf, name) is getattr(tf.signal, name)  # TF1's top-level aliases


_R = [("rfft", "irfft", 1), ("rfft2d", "irfft2d", 2), ("rfft3d", "irfft3d", 3)]


@pytest.mark.parametrize("fwd,inv,rank", _R)
def test_real_fft_values(fwd, inv, rank):
    axes = tuple(range(-rank, 0))
    x = RNG.randn(2, 4, 6, 5).astype(np.float32)
    inner = list(x.shape[-rank:])
    with tf.Graph().as_default():
        for n in (None, inner, [d + 2 for d in inner], [max(1, d - 1) for d in inner]):
            y = getattr(tf.signal, fwd)(tf.constant(x), n)
            got = _run(y)
            assert got.dtype == np.complex64
            exp = np.fft.rfftn(x, s=n or inner, axes=axes)
            assert list(y.shape.as_list()) == list(exp.shape)
            np.testing.assert_allclose(got, exp, rtol=1e-4, atol=1e-4)
        c = np.fft.rfftn(x, axes=axes).astype(np.complex64)
        for n in (None, inner, [d + 3 for d in inner], [max(1, d - 2) for d in inner], inner[:-1] + [inner[-1] + 1]):
            y = getattr(tf.spectral, inv)(tf.constant(c), n)
            got = _run(y)
            assert got.dtype == np.float32
            s = n
            if s is None:
                s = list(c.shape[-rank:])
                s[-1] = 2 * (s[-1] - 1)
            exp = np.fft.irfftn(c, s=s, axes=axes)
            assert list(y.shape.as_list()) == list(exp.shape)
            np.testing.assert_allclose(got, exp, rtol=1e-4, atol=1e-4)
        # float64 in, complex128 out (TF 2's Tcomplex)
        assert getattr(tf.signal, fwd)(tf.constant(x.astype(np.float64))).dtype == tf.complex128


@pytest.mark.parametrize("fwd,inv,rank", _R)
def test_real_fft_gradients(fwd, inv, rank):
    x = RNG.randn(2, 4, 5, 6) if rank == 3 else RNG.randn(2, 5, 6)
    inner = list(x.shape[-rank:])
    for n in (None, [d - 1 for d in inner], [d + 2 for d in inner]):
        _check_grad(lambda p: getattr(tf.signal, fwd)(p, n), x, rtol=1e-5, atol=1e-6)
    c = _c(x.shape[:-1] + (4,))
    cin = list(c.shape[-rank:])
    for n in (None, cin[:-1] + [6], cin[:-1] + [7], [d + 1 for d in cin[:-1]] + [3], cin[:-1] + [9]):
        _check_grad(lambda p: getattr(tf.signal, inv)(p, n), c, rtol=1e-5, atol=1e-6)


def test_fft_errors():
    bad = (TypeError, ValueError, cf.errors.InvalidArgumentError)
    with tf.Graph().as_default():
        with pytest.raises(bad):
            tf.signal.fft(tf.constant([1.0, 2.0]))
        with pytest.raises(bad):
            tf.signal.rfft(tf.constant([1 + 1j]))
        with pytest.raises(bad):
            tf.signal.rfft2d(tf.constant([1.0, 2.0]))
        with pytest.raises(bad):
            tf.signal.rfft(tf.constant([1.0, 2.0]), [2, 2])
        with pytest.raises(NotImplementedError):
            tf.signal.rfft(tf.placeholder(tf.float32, [None]))
        # a constant fft_length tensor is read when the graph is built
        assert tf.signal.rfft(tf.constant([1.0, 2.0, 3.0]), tf.constant([4])).shape.as_list() == [3]


# -- variables and checkpoints -----------------------------------------------------------------------

def test_complex_variable_checkpoint(tmp_path):
    init = _c((3,), np.complex64)
    with tf.Graph().as_default():
        v = tf.Variable(init, name="z")
        w = tf.get_variable("w", [2], dtype=tf.complex128, initializer=tf.zeros_initializer())
        up = [tf.assign(v, v * (1 + 1j)), tf.assign(w, w + 2j)]
        saver = tf.train.Saver()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(up)
            path = saver.save(s, os.path.join(str(tmp_path), "m"))
        with tf.Session() as s:
            saver.restore(s, path)
            vv, wv = s.run([v, w])
    assert vv.dtype == np.complex64 and wv.dtype == np.complex128
    np.testing.assert_allclose(vv, init * (1 + 1j), rtol=1e-6)
    np.testing.assert_allclose(wv, [2j, 2j])


def test_checkpoint_policy_refuses_other_compounds(tmp_path):
    h5py = pytest.importorskip("h5py")
    from collflow.train.checkpoint_policy import _is_complex_type
    p = str(tmp_path / "c.h5")
    with h5py.File(p, "w") as f:
        f["c64"] = np.zeros(2, np.complex64)
        f["c128"] = np.zeros(2, np.complex128)
        f["pair"] = np.zeros(2, [("r", "<f4"), ("x", "<f4")])
        f["mixed"] = np.zeros(2, [("r", "<f4"), ("i", "<f8")])
        f["ints"] = np.zeros(2, [("r", "<i4"), ("i", "<i4")])
    with h5py.File(p, "r") as f:
        t = {k: _is_complex_type(h5py.h5t, f[k].id.get_type()) for k in f}
    assert t == {"c64": True, "c128": True, "pair": False, "mixed": False, "ints": False}


def test_training_a_real_variable_through_rfft():
    sig = RNG.randn(16)
    with tf.Graph().as_default():
        w = tf.Variable(np.ones(16), dtype=tf.float64)
        spec = tf.abs(tf.signal.rfft(w * sig))
        loss = tf.reduce_mean(tf.square(spec - 1.0))
        step = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run(loss)
            for _ in range(20):
                s.run(step)
            assert s.run(loss) < first
    assert cf.complex64 is tf.complex64


def test_complex_constants_and_ffts_in_a_meta_graph(tmp_path):
    with tf.Graph().as_default():
        tf.Variable(np.array([1 + 2j, 3 - 1j], np.complex64), name="z")
        tf.abs(tf.signal.rfft(tf.constant([1.0, 2.0, 3.0, 4.0]), [6]) * tf.constant(1j, tf.complex64), name="out")
        saver = tf.train.Saver()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            path = saver.save(s, os.path.join(str(tmp_path), "m"))
    with tf.Graph().as_default():
        tf.train.import_meta_graph(path + ".meta")
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            z, out = s.run(["z:0", "out:0"])
    np.testing.assert_allclose(z, [1 + 2j, 3 - 1j])
    np.testing.assert_allclose(out, np.abs(np.fft.rfft([1.0, 2, 3, 4], 6)), rtol=1e-6)
