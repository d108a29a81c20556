"""Differential tests against TensorFlow (graph mode) for the complex ops and the FFTs: the same
graph built in `tensorflow.compat.v1` and `collflow.compat.v1`, fed the same real inputs (the
complex tensors are made from them in the graph, or fed as complex placeholders), outputs and
gradients compared.  Skipped cleanly without TensorFlow."""
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


def _real_outputs(tf, outs):
    """Each output as real tensors: a complex one as its real and imaginary parts."""
    res = []
    for o in outs if isinstance(outs, (list, tuple)) else [outs]:
        if o.dtype.is_complex:
            res += [tf.real(o), tf.imag(o)]
        else:
            res.append(o)
    return res


def _run_case(tf, fn, values, dtypes, weights_seed=3):
    """(outputs, gradients w.r.t. every input) of fn in library `tf`; the loss is sum(out * W)
    over the real views of the outputs."""
    g = tf.Graph()
    with g.as_default():
        xs = [tf.placeholder(dt, v.shape) for v, dt in zip(values, dtypes)]
        outs = _real_outputs(tf, fn(tf, *xs))
        r = np.random.RandomState(weights_seed)
        ws = []
        for o in outs:
            ws.append(r.uniform(0.5, 1.5, o.shape.as_list()).astype(o.dtype.as_numpy_dtype))
        loss = tf.add_n([tf.reduce_sum(o * w) for o, w in zip(outs, ws)])
        grads = tf.gradients(loss, xs)
        with tf.Session(graph=g) as s:
            ov = s.run(outs, dict(zip(xs, values)))
            gv = s.run([gr for gr in grads if gr is not None], dict(zip(xs, values)))
    return ov, gv, [gr is None for gr in grads]


def _compare(fn, values, rtol=1e-6, atol=1e-6):
    dts = [str(v.dtype) for v in values]
    o1, g1, n1 = _run_case(tft, fn, values, [getattr(tft, d) for d in dts])
    o2, g2, n2 = _run_case(cft, fn, values, [getattr(cft, d) for d in dts])
    assert n1 == n2
    assert len(o1) == len(o2)
    for a, b in zip(o1, o2):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)
    for a, b in zip(g1, g2):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)


# float32 cases: NumPy's FFTs compute in float64, TF's in float32, so a looser bound than tfdiff's
F32_TOL = 20 * tfdiff.RTOL
R = np.random.RandomState(11)


def _f(*shape, dtype=np.float64):
    return R.uniform(-2, 2, shape).astype(dtype)


def _cx(*shape, dtype=np.complex128):
    return (R.uniform(-2, 2, shape) + 1j * R.uniform(-2, 2, shape)).astype(dtype)


CASES = [
    ("complex", lambda tf, x, y: tf.complex(x, y), [_f(3, 4), _f(3, 4)]),
    ("complex_broadcast", lambda tf, x, y: tf.exp(tf.complex(x, y)), [_f(3, 4), _f(4)]),
    ("real_imag", lambda tf, z: [tf.real(z) * tf.imag(z), tf.math.real(z), tf.math.imag(z)], [_cx(3, 4)]),
    ("conj", lambda tf, z, w: tf.conj(z) * w, [_cx(3, 4), _cx(3, 4)]),
    ("angle", lambda tf, z: tf.angle(z), [_cx(3, 4)]),
    ("math_angle_conj", lambda tf, z: tf.math.angle(tf.math.conj(z)), [_cx(5)]),
    ("abs", lambda tf, z: tf.abs(z), [_cx(3, 4)]),
    ("mul", lambda tf, z, w: z * w, [_cx(3, 4), _cx(4)]),
    ("div", lambda tf, z, w: z / w, [_cx(3, 4), _cx(3, 4)]),
    ("exp", lambda tf, z: tf.exp(z), [_cx(3, 4)]),
    ("log_sqrt", lambda tf, z: [tf.log(z), tf.sqrt(z)], [_cx(3, 4)]),
    ("square_reciprocal_neg", lambda tf, z: [tf.square(z), tf.reciprocal(z), -z], [_cx(6)]),
    ("matmul", lambda tf, a, b: tf.matmul(a, b), [_cx(3, 4), _cx(4, 2)]),
    ("matmul_t", lambda tf, a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True), [_cx(4, 3), _cx(2, 4)]),
    ("reduce", lambda tf, z: [tf.reduce_sum(z, 0), tf.reduce_mean(z), tf.reduce_prod(z, 1)], [_cx(3, 4)]),
    ("structural", lambda tf, z, w: tf.concat([tf.transpose(z), tf.reshape(w, [4, 3])], 0), [_cx(3, 4), _cx(3, 4)]),
    ("cast", lambda tf, z, x: [tf.cast(z, tf.float64), tf.cast(x, tf.complex128) * z], [_cx(5), _f(5)]),
    ("cast_c64", lambda tf, z: tf.cast(z, tf.complex128), [_cx(5, dtype=np.complex64)]),
    ("complex64_ops", lambda tf, z, w: [tf.exp(z) * w, tf.abs(z / w)],
     [_cx(2, 3, dtype=np.complex64), _cx(2, 3, dtype=np.complex64)]),
    ("pow", lambda tf, z, w: tf.pow(z, w), [_cx(5), _cx(5)]),
]

FFTS = [(n, r) for r, names in ((1, ("fft", "ifft")), (2, ("fft2d", "ifft2d")), (3, ("fft3d", "ifft3d")))
        for n in names]
CASES += [(f"{ns}.{n}", (lambda ns, n: lambda tf, z: getattr(getattr(tf, ns), n)(z))(ns, n), [_cx(2, 3, 4, 5)])
          for n, _ in FFTS for ns in ("signal", "spectral")]
CASES += [(f"{n}_complex64", (lambda n: lambda tf, z: getattr(tf.signal, n)(z))(n),
           [_cx(2, 3, 4, dtype=np.complex64)]) for n, _ in FFTS]

# rfft with fft_length: None, equal, cropping, padding (TF has no gradient for the 3-D ones)
RFFT = []
for name, rank in (("rfft", 1), ("rfft2d", 2), ("rfft3d", 3)):
    inner = [4, 5, 6][-rank:]
    for n in (None, inner, [d + 2 for d in inner]):
        RFFT.append((f"{name}-{n}", rank, (lambda name, n: lambda tf, x: getattr(tf.signal, name)(x, n))(name, n),
                     [_f(2, 4, 5, 6, dtype=np.float32)]))
    RFFT.append((f"{name}-crop", rank, (lambda name, n: lambda tf, x: getattr(tf.signal, name)(x, n))(
        name, [d - 1 for d in inner]), [_f(2, 4, 5, 6, dtype=np.float32)]))
IRFFT = []
for name, rank in (("irfft", 1), ("irfft2d", 2), ("irfft3d", 3)):
    inner = [3, 5, 4][-rank:]
    for n in (None, inner[:-1] + [6], inner[:-1] + [7], inner[:-1] + [4], inner[:-1] + [10]):
        # hermitian-consistent input (an rfft), so TF's and NumPy's c2r agree on every bin
        IRFFT.append((f"{name}-{n}", rank, (lambda name, n, rank: lambda tf, x: getattr(tf.signal, name)(
            getattr(tf.signal, name[1:])(x), n))(name, n, rank), [_f(2, 3, 5, 6, dtype=np.float32)]))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_complex_ops_match_tensorflow(case):
    _, fn, values = case
    single = any(v.dtype in (np.float32, np.complex64) for v in values)
    _compare(fn, values, *((F32_TOL, F32_TOL) if single else (1e-6, 1e-6)))


@pytest.mark.parametrize("case", RFFT + IRFFT, ids=[c[0] for c in RFFT + IRFFT])
def test_real_ffts_match_tensorflow(case):
    cid, rank, fn, values = case
    if rank == 3 or "crop" in cid or cid.endswith("4]"):
        # TF registers no gradient for the 3-D real FFTs, and its RFFT/IRFFT gradients assume an
        # uncropped input (they fail to build otherwise): compare values only (collflow's
        # gradients of these are checked against finite differences in tests/test_complex_fft.py)
        outs = []
        for tf in (tft, cft):
            with tf.Graph().as_default():
                x = tf.placeholder(tf.float32, values[0].shape)
                y = fn(tf, x)
                with tf.Session() as s:
                    outs.append(s.run(y, {x: values[0]}))
        assert outs[0].shape == outs[1].shape and outs[0].dtype == outs[1].dtype
        np.testing.assert_allclose(outs[1], outs[0], rtol=F32_TOL, atol=F32_TOL)
        return
    _compare(fn, values, F32_TOL, F32_TOL)


def test_irfft_of_arbitrary_spectrum_matches_tensorflow():
    # a non-hermitian spectrum: both drop the DC (and Nyquist) bins' imaginary parts
    z = _cx(3, 5, dtype=np.complex64)
    _compare(lambda tf, z: [tf.signal.irfft(z), tf.signal.irfft(z, [9])], [z], F32_TOL, F32_TOL)


def test_spectrum_magnitude_program_trains_the_same():
    """A real signal -> rfft -> magnitude -> loss -> SGD on a real variable, in both libraries."""
    sig = np.random.RandomState(5).randn(4, 32).astype(np.float32)
    target = np.abs(np.fft.rfft(np.random.RandomState(6).randn(4, 32), axis=-1)).astype(np.float32)
    losses = []
    for tf in (tft, cft):
        with tf.Graph().as_default():
            tf.set_random_seed(0)
            x = tf.placeholder(tf.float32, [4, 32])
            w = tf.Variable(np.linspace(0.5, 1.5, 32).astype(np.float32), name="w")
            b = tf.Variable(np.zeros(32, np.float32), name="b")
            spec = tf.signal.rfft(x * w + b)
            mag = tf.abs(spec)
            phase = tf.angle(spec)
            loss = tf.reduce_mean(tf.square(mag - target)) + 1e-3 * tf.reduce_mean(tf.square(phase))
            step = tf.train.GradientDescentOptimizer(1e-3).minimize(loss)
            run = []
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                for _ in range(5):
                    lv, _ = s.run([loss, step], {x: sig})
                    run.append(lv)
                run.append(s.run(loss, {x: sig}))
                run.append(s.run(w))
        losses.append(run)
    np.testing.assert_allclose(losses[1][:-1], losses[0][:-1], rtol=1e-4)
    np.testing.assert_allclose(losses[1][-1], losses[0][-1], rtol=1e-4, atol=1e-5)
    assert losses[0][5] < losses[0][0]
