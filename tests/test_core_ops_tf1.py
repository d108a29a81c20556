"""By-hand tests (no TensorFlow) of TF1's core ops added in graph/ops/scatter_more_ops.py,
core_misc_ops.py, quant_ops.py and graph/core_functions.py: closed-form values, errors,
gradients, and the statefulness of tf.timestamp."""
import threading
import time

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.kernels.farmhash import fingerprint64


def _run(fetches, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feed)


# -- scatters ---------------------------------------------------------------------

def test_variable_scatters_apply_duplicates_in_order():
    with tf.Graph().as_default():
        v = tf.Variable([7, -7, 9, 10])
        f = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
        div = tf.scatter_div(v, [0, 1, 2, 2], [2, 2, -2, 2])
        with tf.control_dependencies([div]):
            mul = tf.scatter_mul(f, [0, 0], [[2.0, 3.0], [4.0, 5.0]])
        out = _run([div, mul])
    np.testing.assert_array_equal(out[0], [3, -3, -2, 10])  # -7/2 -> -3, 9/-2 -> -4, /2 -> -2 (C's truncation)
    np.testing.assert_array_equal(out[1], [[8.0, 30.0], [3.0, 4.0]])


def test_scatter_min_max_and_errors():
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 5.0, 3.0])
        mn = tf.scatter_min(v, [1, 1, 2], [4.0, 2.0, 9.0])
        with tf.control_dependencies([mn]):
            mx = tf.scatter_max(v, [0], [6.0], use_locking=True)
        np.testing.assert_array_equal(_run(mx), [6.0, 2.0, 3.0])
        with pytest.raises(ValueError):
            tf.scatter_min(v, [0, 1], [[1.0, 2.0]])
        with pytest.raises(TypeError):
            tf.scatter_max(tf.Variable([1 + 2j]), [0], [1j])
        bad = tf.scatter_mul(v, [3], [1.0])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError):
                s.run(bad)
        iv = tf.Variable([4, 4])
        zero = tf.scatter_div(iv, [0], [0])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError):
                s.run(zero)


def test_tensor_scatter_nd_min_max_values_and_split_gradient():
    with tf.Graph().as_default():
        t = tf.constant([1.0, 5.0, 3.0, 2.0])
        u = tf.constant([4.0, 6.0, 1.0, 2.0])
        mx = tf.tensor_scatter_nd_max(t, [[0], [0], [3], [3]], u)
        mn = tf.tensor_scatter_nd_min(t, [[1]], [0.5])
        gt, gu = tf.gradients(tf.reduce_sum(mx * tf.constant([1.0, 2.0, 3.0, 4.0])), [t, u])
        out = _run([mx, mn, gt, gu])
    np.testing.assert_array_equal(out[0], [6.0, 5.0, 3.0, 2.0])
    np.testing.assert_array_equal(out[1], [1.0, 0.5, 3.0, 2.0])
    # position 3: the tensor's 2 and the update 2 tie: each gets half of 4
    np.testing.assert_array_equal(out[2], [0.0, 2.0, 3.0, 2.0])
    np.testing.assert_array_equal(out[3], [0.0, 1.0, 0.0, 2.0])
    with tf.Graph().as_default():
        with pytest.raises(ValueError):
            tf.tensor_scatter_nd_max(tf.zeros([3, 2]), [[0]], [1.0])


# -- timestamp, fingerprint, small ops ---------------------------------------------

def test_timestamp_is_stateful_and_current():
    with tf.Graph().as_default():
        a, b = tf.timestamp(), tf.timestamp()
        assert a.dtype == tf.float64 and a.shape.as_list() == []
        assert a.op.stateful
        with tf.Session() as s:
            t0 = time.time()
            x = s.run(a)
            time.sleep(0.01)
            y = s.run(a)
            z = s.run([a, b])
            # neither folded to a constant nor merged (the two sums are both folded away)
            kinds = [getattr(o, "type", "") for o in s.plan_for([a, b, tf.constant(1.0) + 1.0]).ops]
            assert kinds.count("Timestamp") == 2
        assert t0 - 1 < x < y and len(set(z)) in (1, 2)


def test_fingerprint_known_values():
    with tf.Graph().as_default():
        fp = tf.fingerprint(tf.constant(["", "a"]))
        fi = tf.fingerprint(tf.constant([[1, 2]], tf.int32))
        out = _run([fp, fi])
    # FarmHash's Fingerprint64 of the empty string is its constant k2
    assert bytes(out[0][0]) == (0x9AE16A3B2F90404F).to_bytes(8, "little")
    assert bytes(out[0][1]) == fingerprint64(b"a").to_bytes(8, "little")
    assert bytes(out[1][0]) == fingerprint64(np.array([1, 2], "<i4").tobytes()).to_bytes(8, "little")
    assert out[0].dtype == np.uint8 and out[0].shape == (2, 8)
    with tf.Graph().as_default():
        bad = tf.fingerprint(tf.constant(["x"]), method="md5")
        with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError):
            s.run(bad)


def test_to_complex_guarantee_const_and_versions():
    with tf.Graph().as_default():
        x = tf.constant([1.5, -2.0])
        c64, c128, g = tf.to_complex64(x), tf.to_complex128(x), tf.guarantee_const(x)
        assert (c64.dtype, c128.dtype) == (tf.complex64, tf.complex128)
        out = _run([c64, c128, g])
        np.testing.assert_array_equal(out[0], [1.5 + 0j, -2.0 + 0j])
        np.testing.assert_array_equal(out[2], [1.5, -2.0])
        with pytest.raises(LookupError):  # TF registers no gradient for GuaranteeConst
            tf.gradients(tf.reduce_sum(g), x)
    assert tf.version.VERSION == tf.VERSION and tf.version.GIT_VERSION == tf.GIT_VERSION
    assert tf.GRAPH_DEF_VERSION == tf.version.GRAPH_DEF_VERSION and tf.GRAPH_DEF_VERSION_MIN_CONSUMER == 0


def test_op_scope_and_tensor_conversion_function():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    def convert(value, dtype=None, name=None, as_ref=False):
        return tf.constant([value.a, value.b], dtype=dtype or tf.float32)

    tf.register_tensor_conversion_function(Pair, convert)
    with pytest.raises(TypeError):
        tf.register_tensor_conversion_function(float, convert)
    with tf.Graph().as_default():
        with tf.op_scope([], "outer", "dflt") as scope:
            y = tf.add(Pair(1.0, 2.0), 1.0)
        assert scope == "outer/" and y.op.name.startswith("outer/")
        z = tf.convert_to_tensor(Pair(3, 4), dtype=tf.int32)
        np.testing.assert_array_equal(_run([y, z])[0], [2.0, 3.0])
        assert z.dtype == tf.int32


# -- wrappers around gradients ----------------------------------------------------

def test_grad_pass_through_and_recompute_grad():
    with tf.Graph().as_default():
        v = tf.Variable(np.zeros(2, np.float32))
        x = tf.constant([1.0, 2.0])
        z = tf.grad_pass_through(v.assign)(x)
        gz = tf.gradients(tf.reduce_sum(z * 3.0), x)[0]
        w0 = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
        a = tf.constant([[0.5, -1.0]])

        def f(h):
            w = tf.get_variable("w", initializer=tf.constant(w0))
            return tf.square(tf.matmul(h, w))
        with tf.variable_scope("r", reuse=tf.AUTO_REUSE):
            y = tf.recompute_grad(f)(a)
        n_matmul = sum(op.type == "MatMul" for op in tf.get_default_graph().get_operations())
        w = tf.global_variables()[-1]
        ga, gw = tf.gradients(tf.reduce_sum(y), [a, w])
        # the backward pass holds a second forward MatMul (the recomputation)
        assert sum(op.type == "MatMul" for op in tf.get_default_graph().get_operations()) >= n_matmul + 1
        out = _run([z, gz, y, ga, gw])
    np.testing.assert_array_equal(out[0], [1.0, 2.0])
    np.testing.assert_array_equal(out[1], [3.0, 3.0])
    h = np.array([[0.5, -1.0]]) @ w0
    np.testing.assert_allclose(out[2], h ** 2)
    np.testing.assert_allclose(out[3], (2 * h) @ w0.T, rtol=1e-6)
    np.testing.assert_allclose(out[4], np.array([[0.5], [-1.0]]) @ (2 * h), rtol=1e-6)


def test_vectorized_map_changes_dtype():
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        y = tf.vectorized_map(lambda r: tf.cast(tf.reduce_sum(r), tf.int32), x)
        assert y.dtype == tf.int32
        np.testing.assert_array_equal(_run(y), [3, 7])


# -- quantization ------------------------------------------------------------------

def test_fake_quant_closed_form():
    with tf.Graph().as_default():
        x = tf.constant([-2.0, -1.1, -0.4, 0.0, 0.3, 0.5, 1.0, 2.0])
        # [-1, 1] on 2 bits: scale 2/3, zero point 1.5 -> 2 (round half away): nudged [-4/3, 2/3]
        y = tf.fake_quant_with_min_max_args(x, -1.0, 1.0, num_bits=2)
        v = tf.fake_quant_with_min_max_vars(x, tf.constant(-1.0), tf.constant(1.0), num_bits=2)
        gx, gmin, gmax = tf.gradients(tf.reduce_sum(v), [x] + list(v.op.inputs[1:]))
        out = _run([y, v, gx, gmin, gmax])
    s = 2.0 / 3.0
    want = np.array([-2 * s, -2 * s, -s, 0.0, 0.0, s, s, s], np.float32)
    np.testing.assert_allclose(out[0], want, rtol=1e-6)
    np.testing.assert_allclose(out[1], want, rtol=1e-6)
    np.testing.assert_array_equal(out[2], [0, 1, 1, 1, 1, 1, 0, 0])  # inside [-4/3, 2/3]
    assert out[3] == 1.0 and out[4] == 2.0


def test_fake_quant_narrow_range_and_bad_attrs():
    with tf.Graph().as_default():
        # narrow range on 8 bits: grid [1, 255], scale 12/254, zero at 128
        y = tf.fake_quant_with_min_max_args([-6.0, 6.0, 0.0], -6.0, 6.0, num_bits=8, narrow_range=True)
        bad = tf.fake_quant_with_min_max_args([0.0], 1.0, -1.0)
        np.testing.assert_allclose(_run(y), [-6.0, 6.0, 0.0], atol=1e-6)
        with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError):
            s.run(bad)


def test_quantize_and_dequantize_closed_form():
    with tf.Graph().as_default():
        x = tf.constant([-1.0, -0.5, 0.3, 0.71, 1.0])
        # signed 3 bits over [-1, 1]: grid -4..3; scale min(-4/-1, 3/1) = 3; 0.71 * 3 = 2.13 -> 2
        y = tf.quantization.quantize_and_dequantize(x, -1.0, 1.0, num_bits=3, range_given=True)
        g = tf.gradients(tf.reduce_sum(y), x)[0]
        u = tf.quantization.quantize_and_dequantize(tf.abs(x), 0.0, 1.0, signed_input=False, num_bits=2,
                                                    range_given=True, round_mode="HALF_UP")
        out = _run([y, g, u])
    np.testing.assert_allclose(out[0], [-1.0, -2 / 3, 1 / 3, 2 / 3, 1.0], rtol=1e-6)
    np.testing.assert_array_equal(out[1], np.ones(5))
    np.testing.assert_allclose(out[2], [1.0, 2 / 3, 1 / 3, 2 / 3, 1.0], rtol=1e-6)  # 0.5*3 = 1.5 -> 2 (half up)


# -- CriticalSection ----------------------------------------------------------------

def test_critical_section_serializes_concurrent_runs():
    with tf.Graph().as_default():
        cs = tf.CriticalSection()
        v = tf.Variable(0.0)
        log = []

        def slow_step(x):
            log.append(("in", threading.get_ident()))
            time.sleep(0.02)
            log.append(("out", threading.get_ident()))
            return x

        def fn():
            r = v.read_value()
            r = tf.py_func(slow_step, [r], tf.float32)
            with tf.control_dependencies([r]):
                return v.assign_add(1.0)
        out = cs.execute(fn)
        plain = tf.group(out)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            threads = [threading.Thread(target=lambda: [s.run(out) for _ in range(3)]) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert s.run(v) == 12.0
            s.run(plain)
            assert s.run(v) == 13.0
    # never two threads inside at once: "in" and "out" alternate
    assert [k for k, _ in log] == ["in", "out"] * 13


def test_critical_section_values_gradients_and_error_recovery():
    with tf.Graph().as_default():
        cs = tf.CriticalSection()
        x = tf.placeholder(tf.float32, [2])
        y = cs.execute(lambda: x * 3.0)
        g = tf.gradients(tf.reduce_sum(y), x)[0]
        bad = cs.execute(lambda: tf.py_func(lambda a: np.log(a) if a.min() > 0 else 1 / 0, [x], tf.float32))
        with tf.Session() as s:
            np.testing.assert_array_equal(s.run([y, g], {x: [1.0, 2.0]}), [[3.0, 6.0], [3.0, 3.0]])
            with pytest.raises(Exception):
                s.run(bad, {x: [-1.0, 1.0]})
            # the failed run no longer holds the lock
            np.testing.assert_array_equal(s.run(y, {x: [1.0, 1.0]}), [3.0, 3.0])
