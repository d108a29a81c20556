"""Differential tests against TensorFlow (graph mode) for TF1's core ops added in
graph/ops/scatter_more_ops.py, core_misc_ops.py, quant_ops.py and graph/core_functions.py:
the variable scatters mul/div/min/max, tensor_scatter_nd_min/max (values and gradients),
tf.fingerprint (bit for bit), to_complex64/128, guarantee_const, grad_pass_through,
recompute_grad, vectorized_map, and tf.quantization's fake quantization and
quantize_and_dequantize (values, gradients, num_bits 2..16, narrow_range).  Skipped
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


def _run(tf, build):
    """build(tf) -> (fetches, feed dict builder or None); runs after initializing variables."""
    g = tf.Graph()
    with g.as_default():
        fetches, feed = build(tf)
        init = tf.global_variables_initializer()
        with tf.Session(graph=g) as s:
            s.run(init)
            return s.run(fetches, feed or {})


def _same(build, rtol=0.0, atol=0.0):
    want = _run(tft, build)
    got = _run(cft, build)

    def cmp(a, b):
        if isinstance(a, (list, tuple)):
            assert len(a) == len(b)
            for x, y in zip(a, b):
                cmp(x, y)
            return
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, (a.shape, b.shape)
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)
    cmp(want, got)
    return got


# -- variable scatters -------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["scatter_mul", "scatter_div", "scatter_min", "scatter_max"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_variable_scatter_duplicates_in_order(op, dtype):
    r = np.random.RandomState(1)
    init = r.randint(-20, 20, (5, 3)).astype(dtype)
    idx = np.array([0, 2, 2, 4, 0, 2], np.int32)
    upd = r.randint(1, 5, (6, 3)).astype(dtype) * np.where(r.rand(6, 3) < 0.5, -1, 1).astype(dtype)

    def build(tf):
        v = tf.Variable(init, use_resource=False)
        out = getattr(tf, op)(v, idx, upd, use_locking=True)
        return [out], None
    _same(build, rtol=1e-6)


@pytest.mark.parametrize("op", ["scatter_mul", "scatter_div", "scatter_min", "scatter_max"])
def test_variable_scatter_scalar_updates_and_int64_indices(op):
    def build(tf):
        v = tf.Variable(np.arange(1, 9, dtype=np.float32).reshape(4, 2))
        out = getattr(tf, op)(v, tf.constant([3, 1], tf.int64), tf.constant(2.5))
        return [out], None
    _same(build, rtol=1e-6)


def test_variable_scatter_out_of_range_errors():
    for tf in (tft, cft):
        with tf.Graph().as_default():
            v = tf.Variable(np.ones((3, 2), np.float32))
            out = tf.scatter_max(v, [3], [[1.0, 2.0]])
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                with pytest.raises(tf.errors.InvalidArgumentError):
                    s.run(out)


def test_variable_scatter_bad_updates_shape_is_value_error():
    for tf in (tft, cft):
        with tf.Graph().as_default():
            v = tf.Variable(np.ones((3, 2), np.float32))
            with pytest.raises(ValueError):
                tf.scatter_mul(v, [0, 1], [[1.0, 2.0, 3.0]])


# -- tensor_scatter_nd_min / max -----------------------------------------------------------

def _grads_of(tf, out, xs, w):
    loss = tf.reduce_sum(out * tf.constant(w))
    return [tf.convert_to_tensor(g) for g in tf.gradients(loss, xs)]


@pytest.mark.parametrize("op", ["tensor_scatter_nd_min", "tensor_scatter_nd_max"])
def test_tensor_scatter_minmax_values_and_gradients(op):
    r = np.random.RandomState(3)
    t = r.uniform(-2, 2, (4, 3)).astype(np.float32)
    t[1, 1] = 0.5  # ties with an update: the gradient is split
    idx = np.array([[0, 1], [1, 1], [3, 2], [0, 1], [2, 0]], np.int32)
    upd = r.uniform(-2, 2, 5).astype(np.float32)
    upd[1] = 0.5
    upd[3] = upd[0]  # a duplicated index with equal updates
    w = r.uniform(0.5, 1.5, (4, 3)).astype(np.float32)

    def build(tf):
        tp = tf.placeholder(tf.float32, [4, 3])
        up = tf.placeholder(tf.float32, [5])
        out = getattr(tf, op)(tp, idx, up)
        return [out] + _grads_of(tf, out, [tp, up], w), {tp: t, up: upd}
    _same(build, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", ["tensor_scatter_nd_min", "tensor_scatter_nd_max"])
def test_tensor_scatter_minmax_slices_int(op):
    t = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    idx = np.array([[1, 2], [0, 0], [1, 2]], np.int64)
    upd = np.array([[5, 50, 22, 23], [-1, 9, 9, 9], [30, 0, 0, 40]], np.int32)

    def build(tf):
        return [getattr(tf, op)(tf.constant(t), idx, upd)], None
    _same(build)


def test_tensor_scatter_minmax_bad_index():
    for tf in (tft, cft):
        with tf.Graph().as_default():
            out = tf.tensor_scatter_nd_max(tf.zeros([3]), [[3]], [1.0])
            with tf.Session() as s:
                with pytest.raises(tf.errors.InvalidArgumentError):
                    s.run(out)


# -- fingerprint -------------------------------------------------------------------------

def test_fingerprint_strings_every_length():
    r = np.random.RandomState(0)
    words = [bytes(r.randint(0, 256, n).astype(np.uint8)) for n in range(0, 101)]
    words += [b"", b"a", b"hello world", "été".encode()]

    def build(tf):
        return [tf.fingerprint(tf.constant(words))], None
    _same(build)


def test_fingerprint_string_rows_of_several():
    words = np.array([[b"a", b"", b"ccc"], [b"x" * 40, b"y", b""]], dtype=object)

    def build(tf):
        return [tf.fingerprint(tf.constant(words)), tf.fingerprint(tf.constant(words.reshape(2, 3, 1)))], None
    _same(build)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "int8", "bool", "float16"])
def test_fingerprint_numeric_rows(dtype):
    r = np.random.RandomState(5)
    x = (r.uniform(-100, 100, (6, 5, 3)) > 0 if dtype == "bool" else r.uniform(-100, 100, (6, 5, 3))).astype(dtype)

    def build(tf):
        return [tf.fingerprint(tf.constant(x)), tf.fingerprint(tf.constant(x.reshape(-1))),
                tf.fingerprint(tf.constant(x[:, :0])), tf.fingerprint(tf.constant(x[:0]))], None
    _same(build)


def test_fingerprint_scalar_is_value_error():
    for tf in (tft, cft):
        with tf.Graph().as_default():
            with pytest.raises(ValueError):
                tf.fingerprint(tf.constant(1.0))


# -- small ops and wrappers ---------------------------------------------------------------

def test_to_complex_and_guarantee_const():
    x = np.array([[1.5, -2.0], [0.0, 3.25]], np.float32)

    def build(tf):
        p = tf.placeholder(tf.float32, [2, 2])
        return [tf.to_complex64(p), tf.to_complex128(p), tf.guarantee_const(p)], {p: x}
    _same(build)


def test_grad_pass_through_assign():
    def build(tf):
        v = tf.Variable(np.zeros(3, np.float32))
        x = tf.constant([1.0, 2.0, 3.0])
        z = tf.grad_pass_through(lambda t: v.assign(t))(x)
        loss = tf.reduce_sum(z * tf.constant([2.0, 3.0, 4.0]))
        return [z, tf.gradients(loss, x)[0]], None
    _same(build)


def test_recompute_grad_values_and_gradients():
    r = np.random.RandomState(7)
    xv = r.uniform(-1, 1, (4, 3)).astype(np.float32)
    wv = r.uniform(-1, 1, (3, 5)).astype(np.float32)

    def build(tf):
        x = tf.placeholder(tf.float32, [4, 3])

        def f(a):
            w = tf.get_variable("w", initializer=tf.constant(wv))
            return tf.tanh(tf.matmul(a, w)) * 2.0
        with tf.variable_scope("blk", reuse=tf.AUTO_REUSE):  # TF recomputes in the same scope
            y = tf.recompute_grad(f)(x)
        w = [v for v in tf.global_variables() if v.name.startswith("blk/w")][0]
        loss = tf.reduce_sum(tf.square(y))
        return [y] + tf.gradients(loss, [x, w]), {x: xv}
    _same(build, rtol=1e-5, atol=1e-6)


def test_vectorized_map_values_and_gradients():
    xv = np.random.RandomState(2).uniform(-1, 1, (5, 3)).astype(np.float32)

    def build(tf):
        x = tf.placeholder(tf.float32, [5, 3])
        y = tf.vectorized_map(lambda r: tf.reduce_sum(r * r) + tf.cast(tf.size(r), tf.float32), x)
        return [y, tf.gradients(tf.reduce_sum(y), x)[0]], {x: xv}
    _same(build, rtol=1e-6, atol=1e-6)


# -- quantization -----------------------------------------------------------------------

def _xq(lo, hi):
    """Random float32 inputs over and beyond [lo, hi], with the range's ends and 0."""
    r = np.random.RandomState(11)
    return np.concatenate([r.uniform(lo - 2, hi + 2, 400), [lo, hi, 0.0, 1e-7, -1e-7]]).astype(np.float32)


def _same_up_to_ties(build, n_values, scale_of):
    """The first n_values fetches may differ from TF's by one grid step at a rare exact
    half-step (TF's float32 evaluation order rounds those the other way); the rest exactly."""
    want, got = _run(tft, build), _run(cft, build)
    assert len(want) == len(got)
    for k, (a, b) in enumerate(zip(want, got)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, k
        if k < n_values:
            bad = a != b
            assert bad.sum() <= 2, (k, bad.sum())
            np.testing.assert_allclose(b[bad], a[bad], rtol=0, atol=float(np.max(scale_of)) * 1.001)
        else:
            np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6, err_msg=f"fetch {k}")


@pytest.mark.parametrize("num_bits", [2, 3, 4, 5, 7, 8, 11, 16])
@pytest.mark.parametrize("narrow", [False, True])
@pytest.mark.parametrize("rng", [(-6.0, 6.0), (-0.3, 5.1), (0.2, 3.0), (-4.0, -1.0), (-2.5, 0.1)])
def test_fake_quant_args_and_vars(num_bits, narrow, rng):
    lo, hi = rng
    xq = _xq(lo, hi)
    w = np.random.RandomState(num_bits).uniform(0.5, 1.5, xq.shape).astype(np.float32)

    def build(tf):
        x = tf.placeholder(tf.float32, xq.shape)
        mn, mx = tf.placeholder(tf.float32, []), tf.placeholder(tf.float32, [])
        a = tf.fake_quant_with_min_max_args(x, lo, hi, num_bits=num_bits, narrow_range=narrow)
        v = tf.quantization.fake_quant_with_min_max_vars(x, mn, mx, num_bits=num_bits, narrow_range=narrow)
        ga = _grads_of(tf, a, [x], w)
        gv = _grads_of(tf, v, [x, mn, mx], w)
        explicit = tf.fake_quant_with_min_max_vars_gradient(tf.constant(w), x, mn, mx, num_bits=num_bits,
                                                           narrow_range=narrow)
        ea = tf.fake_quant_with_min_max_args_gradient(tf.constant(w), x, lo, hi, num_bits, narrow)
        return [a, v] + ga + gv + list(explicit) + [ea], {x: xq, mn: lo, mx: hi}
    _same_up_to_ties(build, 2, (hi - lo) / ((1 << num_bits) - 1 - int(narrow)))


@pytest.mark.parametrize("num_bits", [2, 8, 16])
@pytest.mark.parametrize("narrow", [False, True])
def test_fake_quant_per_channel(num_bits, narrow):
    r = np.random.RandomState(num_bits)
    x = r.uniform(-5, 5, (7, 2, 4)).astype(np.float32)
    lo = np.array([-3.0, -0.1, 0.5, -4.0], np.float32)
    hi = np.array([3.0, 2.7, 4.0, -1.0], np.float32)
    x[0, 0] = lo
    x[1, 1] = hi
    w = r.uniform(0.5, 1.5, x.shape).astype(np.float32)

    def build(tf):
        xp = tf.placeholder(tf.float32, x.shape)
        mn, mx = tf.placeholder(tf.float32, [4]), tf.placeholder(tf.float32, [4])
        y = tf.fake_quant_with_min_max_vars_per_channel(xp, mn, mx, num_bits=num_bits, narrow_range=narrow)
        explicit = tf.quantization.fake_quant_with_min_max_vars_per_channel_gradient(
            tf.constant(w), xp, mn, mx, num_bits=num_bits, narrow_range=narrow)
        return [y] + _grads_of(tf, y, [xp, mn, mx], w) + list(explicit), {xp: x, mn: lo, mx: hi}
    _same_up_to_ties(build, 1, (hi - lo) / ((1 << num_bits) - 1 - int(narrow)))


def test_fake_quant_bad_attrs_are_run_time_errors():
    for tf in (tft, cft):
        for build in (lambda x: tf.fake_quant_with_min_max_args(x, min=1.0, max=-1.0),
                      lambda x: tf.fake_quant_with_min_max_args(x, num_bits=1),
                      lambda x: tf.fake_quant_with_min_max_vars(x, -1.0, 1.0, num_bits=17)):
            with tf.Graph().as_default():
                x = tf.constant([0.5])
                y = build(x)
                with tf.Session() as s:
                    with pytest.raises(tf.errors.InvalidArgumentError):
                        s.run(y)


@pytest.mark.parametrize("signed", [True, False])
@pytest.mark.parametrize("num_bits", [2, 4, 8, 16])
@pytest.mark.parametrize("given", [True, False])
@pytest.mark.parametrize("round_mode", ["HALF_TO_EVEN", "HALF_UP"])
@pytest.mark.parametrize("narrow", [False, True])
def test_quantize_and_dequantize(signed, num_bits, given, round_mode, narrow):
    x = np.concatenate([np.linspace(-3, 3, 121), [0.25, -0.25, 0.125]]).astype(np.float32)
    if not signed:
        x = np.abs(x)
    w = np.random.RandomState(1).uniform(0.5, 1.5, x.shape).astype(np.float32)
    lo, hi = (-1.7 if signed else 0.0), 2.3

    def build(tf):
        xp = tf.placeholder(tf.float32, x.shape)
        y = tf.quantization.quantize_and_dequantize(xp, lo, hi, signed_input=signed, num_bits=num_bits,
                                                    range_given=given, round_mode=round_mode, narrow_range=narrow)
        return [y] + _grads_of(tf, y, [xp], w), {xp: x}
    _same(build, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("given", [False])  # TF 2.21 refuses per-axis given ranges ("input_min must be a scalar")
def test_quantize_and_dequantize_per_axis(given):
    x = np.random.RandomState(4).uniform(-3, 3, (5, 3)).astype(np.float64)

    def build(tf):
        y = tf.quantization.quantize_and_dequantize(tf.constant(x), tf.constant([-1.0, -2.0, -0.5], tf.float64),
                                                    tf.constant([1.0, 0.5, 2.5], tf.float64), num_bits=5,
                                                    range_given=given, axis=1)
        return [y], None
    _same(build, rtol=1e-12)


def test_quantize_and_dequantize_bad_range():
    for tf in (tft, cft):
        with tf.Graph().as_default():
            y = tf.quantization.quantize_and_dequantize(tf.constant([0.5]), 1.0, -1.0, range_given=True)
            with tf.Session() as s:
                with pytest.raises(tf.errors.InvalidArgumentError):
                    s.run(y)
        with tf.Graph().as_default(), pytest.raises(ValueError):
            tf.quantization.quantize_and_dequantize(tf.constant([0.5]), -1.0, 1.0, round_mode="X")


# -- timestamp, op_scope, conversion functions, CriticalSection ----------------------------

def test_timestamp_dtype_shape_and_value():
    import time
    for tf in (tft, cft):
        with tf.Graph().as_default():
            t = tf.timestamp()
            assert t.dtype == tf.float64 and t.shape.as_list() == []
            with tf.Session() as s:
                a = s.run(t)
                b = s.run(t)
            assert abs(a - time.time()) < 60 and b >= a


def test_op_scope_names():
    names = []
    for tf in (tft, cft):
        with tf.Graph().as_default():
            with tf.op_scope([], None, "dflt") as sc1:
                pass
            with tf.op_scope([], "given") as sc2:
                c = tf.constant(1.0, name="c")
            names.append((sc1, sc2, c.op.name))
    assert names[0] == names[1]


class _Celsius:
    def __init__(self, deg):
        self.deg = deg


def test_register_tensor_conversion_function():
    def conv(value, dtype=None, name=None, as_ref=False):
        return value.deg * 1.8 + 32.0 if dtype is None else NotImplemented

    outs = []
    for tf in (tft, cft):
        tf.register_tensor_conversion_function(_Celsius, lambda v, dtype=None, name=None, as_ref=False, tf=tf:
                                               tf.constant(v.deg * 1.8 + 32.0, dtype=dtype or tf.float32))
        with tf.Graph().as_default():
            y = tf.add(_Celsius(100.0), 1.0)
            with tf.Session() as s:
                outs.append(s.run(y))
        with pytest.raises(TypeError):
            tf.register_tensor_conversion_function(float, conv)
    assert outs[0] == outs[1] == np.float32(213.0)


def test_critical_section_values_and_gradients():
    xv = np.array([1.0, -2.0, 0.5], np.float32)

    def build(tf):
        x = tf.placeholder(tf.float32, [3])
        v = tf.Variable(np.ones(3, np.float32))
        cs = tf.CriticalSection()
        y = cs.execute(lambda: tf.sin(x) * v)
        z = cs.execute(lambda: v.assign_add(x))
        return [y, tf.gradients(tf.reduce_sum(y), x)[0], z], {x: xv}
    _same(build, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("given", [True, False])
@pytest.mark.parametrize("signed", [True, False])
def test_quantize_and_dequantize_v2_values_and_gradients(given, signed):
    x = np.concatenate([np.linspace(-2.5, 2.5, 41), [-1.0, 1.5]]).astype(np.float32)
    w = np.random.RandomState(2).uniform(0.5, 1.5, x.shape).astype(np.float32)

    def build(tf):
        xp = tf.placeholder(tf.float32, x.shape)
        mn, mx = tf.placeholder(tf.float32, []), tf.placeholder(tf.float32, [])
        y = tf.quantization.quantize_and_dequantize_v2(xp, mn, mx, signed_input=signed, num_bits=4,
                                                       range_given=given)
        return [y] + _grads_of(tf, y, [xp, mn, mx], w), {xp: x, mn: -1.0 if signed else 0.0, mx: 1.5}
    _same(build, rtol=1e-6, atol=1e-6)


def test_quantize_and_dequantize_v2_per_axis_gradient():
    x = np.random.RandomState(4).uniform(-3, 3, (5, 3)).astype(np.float32)
    w = np.random.RandomState(5).uniform(0.5, 1.5, x.shape).astype(np.float32)

    def build(tf):
        xp = tf.placeholder(tf.float32, x.shape)
        y = tf.quantization.quantize_and_dequantize_v2(xp, tf.constant([-1.0, -2.0, -0.5]),
                                                       tf.constant([1.0, 0.5, 2.5]), num_bits=5, axis=1)
        return [y] + _grads_of(tf, y, [xp], w), {xp: x}
    _same(build, rtol=1e-6, atol=1e-6)
