"""The quantized dtypes and their ops, checked against values worked out by hand from TF's
documented formulas (tf.quantize's MIN_COMBINED / MIN_FIRST / SCALED, tf.dequantize,
quantized_concat's requantization, quantized_conv2d's zero offsets and output range, the
pools and quantized_relu_x), plus the dtype facts, the errors and the missing gradients.
No TensorFlow needed."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow import errors
from collflow.kernels import quantized_kernels as qk


def run(fetch, feed=None):
    with tf.Session() as s:
        return s.run(fetch, feed)


@pytest.fixture(autouse=True)
def _graph():
    with tf.Graph().as_default():
        yield


# -- dtypes ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,storage", [("qint8", np.int8), ("quint8", np.uint8), ("qint16", np.int16),
                                          ("quint16", np.uint16), ("qint32", np.int32)])
def test_dtype_facts(name, storage):
    d = getattr(tf, name)
    assert d is tf.as_dtype(name) is getattr(tf.dtypes, name) and d.name == name and repr(d) == f"cf.{name}"
    assert d.is_quantized and not d.is_integer and not d.is_floating and not d.is_unsigned and not d.is_bool
    assert d.size == np.dtype(storage).itemsize and d.base_dtype is d and d.np == np.dtype(storage)
    assert d.as_numpy_dtype == np.dtype([(name, storage)])  # TF's structured name of the type
    assert tf.as_dtype(d.as_numpy_dtype) is d
    assert tf.as_dtype(storage) is not d and tf.as_dtype(storage).name == np.dtype(storage).name  # plain ints
    assert d in tf.dtypes.QUANTIZED_DTYPES and d != tf.as_dtype(storage)
    with pytest.raises(TypeError, match="minimum"):
        d.min
    with pytest.raises(TypeError, match="maximum"):
        d.max


def test_plain_dtypes_unchanged():
    assert tf.int8.is_integer and not tf.int8.is_quantized and tf.uint8.is_unsigned and tf.int8.min == -128
    assert tf.int32.as_numpy_dtype is np.int32 and len(tf.dtypes.QUANTIZED_DTYPES) == 5


def test_constant_placeholder_feed_fetch_and_cast():
    c = tf.constant(np.array([1, -2, 3], np.int8), dtype=tf.qint8)
    assert c.dtype == tf.qint8
    p = tf.placeholder(tf.quint8, [None])
    v = run([c, tf.identity(p), tf.cast(p, tf.float32), tf.cast(tf.constant([1.7, -2.5]), tf.qint8),
             tf.reshape(c, [3, 1])], {p: np.array([0, 7, 255], np.uint8)})
    np.testing.assert_array_equal(v[0], [1, -2, 3])
    assert v[0].dtype == np.int8 and v[1].dtype == np.uint8  # fetched as the plain integers
    np.testing.assert_array_equal(v[2], [0.0, 7.0, 255.0])
    np.testing.assert_array_equal(v[3], [1, -2])  # a cast treats them as their integers (TF 2.x)
    assert v[4].shape == (3, 1)


# -- quantize ----------------------------------------------------------------------------------

def test_quantize_min_combined_doc_example():
    # qint8 over [-4, 4]: round((x + 4) * 255 / 8 - 128); out of range clamps
    x = tf.constant([1.0, -2.5, 3.7, -9.0, 9.0])
    q = tf.quantize(x, -4.0, 4.0, tf.qint8)
    out, mn, mx = run(q)
    np.testing.assert_array_equal(out, [31, -80, 117, -128, 127])
    assert (mn, mx) == (-4.0, 4.0) and out.dtype == np.int8
    # quint8 over [0, 6]: (x * 255 / 6) + 0.5, truncated
    out = run(tf.quantize(tf.constant([0.0, 3.0, 1.0, 6.0, 7.0, -1.0]), 0.0, 6.0, tf.quint8).output)
    np.testing.assert_array_equal(out, [0, 128, 43, 255, 255, 0])


def test_quantize_range_includes_zero_and_minimum_width():
    # [2, 5] becomes [0, 5]; [1, 1] becomes [0, 1] (the ensure_minimum_range nudge is smaller)
    q = tf.quantize(tf.constant([2.5, 5.0]), 2.0, 5.0, tf.quint8)
    out, mn, mx = run(q)
    assert (mn, mx) == (0.0, 5.0)
    np.testing.assert_array_equal(out, [128, 255])  # 2.5 * 51 + 0.5 = 128
    _, mn, mx = run(tf.quantize(tf.constant([0.0]), 0.0, 0.0, tf.quint8, ensure_minimum_range=0.5))
    assert (mn, mx) == (0.0, 0.5)


def test_quantize_min_first():
    # quint8 over [0, 6]: round(x * 255 / 6) - round(0); [-1, 1]: round(x * 127.5) + 128 (127.5 -> 128)
    out = run(tf.quantize(tf.constant([0.0, 3.0, 1.0, 6.0, 7.0]), 0.0, 6.0, tf.quint8, mode="MIN_FIRST").output)
    np.testing.assert_array_equal(out, [0, 128, 43, 255, 255])
    out = run(tf.quantize(tf.constant([-1.0, 0.0, 0.5, 1.0]), -1.0, 1.0, tf.quint8, mode="MIN_FIRST").output)
    np.testing.assert_array_equal(out, [0, 128, 192, 255])


@pytest.mark.parametrize("round_mode,expect", [("HALF_AWAY_FROM_ZERO", [3, -3, 4, 127, -128, 0]),
                                               ("HALF_TO_EVEN", [2, -2, 4, 127, -128, 0])])
def test_quantize_scaled_round_modes(round_mode, expect):
    # qint8 over [-127, 127]: scale = min(-128 / -127, 127 / 127) = 1, range [-128, 127]
    x = tf.constant([2.5, -2.5, 3.5, 200.0, -200.0, 0.25])
    out, mn, mx = run(tf.quantize(x, -127.0, 127.0, tf.qint8, mode="SCALED", round_mode=round_mode))
    np.testing.assert_array_equal(out, expect)
    assert (mn, mx) == (-128.0, 127.0)


def test_quantize_scaled_narrow_range_and_unsigned():
    out, mn, mx = run(tf.quantize(tf.constant([-200.0, 5.0]), -127.0, 127.0, tf.qint8, mode="SCALED",
                                  narrow_range=True))
    np.testing.assert_array_equal(out, [-127, 5])
    assert (mn, mx) == (-127.0, 127.0)
    # quint8: [0, max]; scale 255 / 2
    out, mn, mx = run(tf.quantize(tf.constant([-1.0, 1.0, 2.0]), -1.0, 2.0, tf.quint8, mode="SCALED"))
    np.testing.assert_array_equal(out, [0, 128, 255])  # 127.5 -> 128
    assert (mn, mx) == (0.0, 2.0)


def test_quantize_per_axis():
    x = np.array([[1.0, 2.0, -1.0], [1.0, 2.0, -1.0]], np.float32)
    q = tf.quantize(tf.constant(x), [-1.0, -2.0, -4.0], [1.0, 2.0, 4.0], tf.qint8, mode="SCALED", axis=1)
    out, mn, mx = run(q)
    assert q.output_min.shape.as_list() == [3]
    # scales 127, 63.5, 31.75: 127, 127, -31.75 -> -32
    np.testing.assert_array_equal(out, [[127, 127, -32]] * 2)
    np.testing.assert_allclose(mx, [1.0, 2.0, 4.0])


def test_quantize_qint32_top_wraps_as_tf():
    # TF's float -> int32 cast of 2^31 gives INT_MIN (MIN_COMBINED / SCALED); MIN_FIRST clamps
    x = tf.constant([-1.0, 0.5, 1.0])
    np.testing.assert_array_equal(run(tf.quantize(x, -1.0, 1.0, tf.qint32).output),
                                  [-2147483648, 1073741824, -2147483648])
    np.testing.assert_array_equal(run(tf.quantize(x, -1.0, 1.0, tf.qint32, mode="MIN_FIRST").output),
                                  [-2147483648, 1073741824, 2147483520])


# -- dequantize --------------------------------------------------------------------------------

def test_dequantize_modes():
    q = tf.constant(np.array([-128, 0, 127], np.int8), dtype=tf.qint8)
    np.testing.assert_allclose(run(tf.dequantize(q, -4.0, 4.0)), [-4.0, 128 * 8 / 255 - 4, 4.0], atol=1e-6)
    np.testing.assert_allclose(run(tf.dequantize(q, -1.0, 1.0, mode="SCALED")), [-128 / 127, 0.0, 1.0], rtol=1e-6)
    u = tf.constant(np.array([0, 128, 255], np.uint8), dtype=tf.quint8)
    np.testing.assert_allclose(run(tf.dequantize(u, 0.0, 6.0, mode="MIN_FIRST")), [0.0, 128 * 6 / 255, 6.0],
                               rtol=1e-6)
    per_axis = run(tf.dequantize(tf.constant(np.array([[127, 127], [-127, 0]], np.int8), dtype=tf.qint8),
                                 [-1.0, -2.0], [1.0, 2.0], mode="SCALED", axis=0))
    np.testing.assert_allclose(per_axis, [[1.0, 1.0], [-2.0, 0.0]], rtol=1e-6)


def test_quantize_dequantize_round_trip():
    x = np.linspace(-3, 3, 101).astype(np.float32)
    for mode in ("MIN_COMBINED", "MIN_FIRST", "SCALED"):
        q = tf.quantize(tf.constant(x), -3.0, 3.0, tf.qint16, mode=mode)
        back = run(tf.dequantize(q.output, q.output_min, q.output_max, mode=mode))
        assert np.abs(back - x).max() <= 6.0 / 65535 + 1e-6, mode


# -- quantized_concat ----------------------------------------------------------------------------

def test_quantized_concat_requantizes():
    a = tf.constant(np.array([0, 100, 255], np.uint8), dtype=tf.quint8)
    out, mn, mx = run(tf.quantized_concat(0, [a, a], [0.0, 0.0], [1.0, 2.0]))
    # the first input moves to [0, 2]: q / 255 * 127.5 rounded; the second is copied
    np.testing.assert_array_equal(out, [0, 50, 128, 0, 100, 255])
    assert (mn, mx) == (0.0, 2.0)
    out, mn, mx = run(tf.quantized_concat(0, [a, a], [0.5, 0.5], [2.0, 2.0]))
    assert mn == 0.0  # TF's output range always reaches 0
    i = tf.constant(np.array([[5, -5]], np.int32), dtype=tf.qint32)
    out, mn, mx = run(tf.quantized_concat(0, [i, i], [-2.0, -2.0], [2.0, 2.0]))
    np.testing.assert_array_equal(out, [[5, -5], [5, -5]])
    assert out.dtype == np.int32 and (mn, mx) == (-2.0, 2.0)


def test_quantized_concat_errors():
    a = tf.constant(np.array([1, 2], np.uint8), dtype=tf.quint8)
    with pytest.raises(TypeError, match="don't all match"):
        tf.quantized_concat(0, [a, tf.constant(np.array([1], np.int8), dtype=tf.qint8)], [0.0, 0.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="input_mins"):
        tf.quantized_concat(0, [a, a], [0.0], [1.0, 1.0])
    q8 = tf.constant(np.array([1], np.int8), dtype=tf.qint8)
    with pytest.raises(errors.InvalidArgumentError, match="No OpKernel"):
        run(tf.quantized_concat(0, [q8, q8], [0.0, 0.0], [1.0, 1.0]).output)


# -- tf.nn ---------------------------------------------------------------------------------------

def test_quantized_conv2d_offsets_and_range():
    # input range [0, 1]: level 0 is 0.0; filter range [-1, 1]: level 128 is 0.0
    x = np.array([[1, 2], [3, 4]], np.uint8).reshape(1, 2, 2, 1)
    w = np.array([130, 126], np.uint8).reshape(1, 1, 1, 2)
    out, mn, mx = run(tf.nn.quantized_conv2d(tf.constant(x, dtype=tf.quint8), tf.constant(w, dtype=tf.quint8),
                                             0.0, 1.0, -1.0, 1.0, [1, 1, 1, 1], "SAME"))
    np.testing.assert_array_equal(out[0, :, :, 0], [[2, 4], [6, 8]])
    np.testing.assert_array_equal(out[0, :, :, 1], [[-2, -4], [-6, -8]])
    level = np.float32(np.float32(1 / 255) * np.float32(np.float32(2) / np.float32(255)))
    assert mn == np.float32(level * np.float32(-2147483648.0)) and mx == np.float32(level * np.float32(2147483647))
    # a 2x2 window with SAME padding: padding counts as 0.0 (it adds nothing)
    ones = tf.constant(np.ones((2, 2, 1, 1), np.uint8) * 129, dtype=tf.quint8)
    out = run(tf.nn.quantized_conv2d(tf.constant(x, dtype=tf.quint8), ones, 0.0, 1.0, -1.0, 1.0, [1, 1, 1, 1],
                                     "SAME").output)
    np.testing.assert_array_equal(out[0, :, :, 0], [[10, 6], [7, 4]])


def test_quantized_conv2d_errors():
    x = tf.constant(np.ones((1, 3, 3, 1), np.uint8), dtype=tf.quint8)
    w = tf.constant(np.ones((2, 2, 1, 1), np.uint8), dtype=tf.quint8)
    with pytest.raises(errors.InvalidArgumentError, match="dilated"):
        run(tf.nn.quantized_conv2d(x, w, 0.0, 1.0, 0.0, 1.0, [1, 1, 1, 1], "SAME", dilations=[1, 2, 2, 1]).output)
    with pytest.raises(errors.InvalidArgumentError, match="equal length strides"):
        run(tf.nn.quantized_conv2d(x, w, 0.0, 1.0, 0.0, 1.0, [1, 1, 2, 1], "SAME").output)
    with pytest.raises(errors.InvalidArgumentError, match="No OpKernel"):
        run(tf.nn.quantized_conv2d(x, w, 0.0, 1.0, 0.0, 1.0, [1, 1, 1, 1], "SAME", out_type=tf.qint8).output)
    with pytest.raises(TypeError):
        tf.nn.quantized_conv2d(tf.ones([1, 3, 3, 1]), w, 0.0, 1.0, 0.0, 1.0, [1, 1, 1, 1], "SAME")


def test_quantized_pools():
    x = np.array([[0, 1, 0, 3], [2, 2, 5, 6], [7, 8, 9, 9], [1, 1, 1, 2]], np.uint8).reshape(1, 4, 4, 1)
    xt = tf.constant(x, dtype=tf.quint8)
    avg, mn, mx = run(tf.nn.quantized_avg_pool(xt, -1.0, 2.0, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"))
    # means 1.25, 3.5, 4.25, 5.25 rounded half to even
    np.testing.assert_array_equal(avg[0, :, :, 0], [[1, 4], [4, 5]])
    assert (mn, mx) == (-1.0, 2.0)
    mx_ = run(tf.nn.quantized_max_pool(xt, -1.0, 2.0, [1, 2, 2, 1], [1, 2, 2, 1], "VALID").output)
    np.testing.assert_array_equal(mx_[0, :, :, 0], [[2, 6], [8, 9]])
    mx_ = run(tf.nn.quantized_max_pool(xt, -1.0, 2.0, [1, 1, 3, 1], [1, 1, 3, 1], "SAME").output)
    np.testing.assert_array_equal(mx_[0, :, :, 0], [[1, 3], [2, 6], [8, 9], [1, 2]])
    neg = tf.constant(-x.astype(np.int8), dtype=tf.qint8)  # the padding never wins, even over negatives
    mx_ = run(tf.nn.quantized_max_pool(neg, -1.0, 2.0, [1, 1, 3, 1], [1, 1, 3, 1], "SAME").output)
    np.testing.assert_array_equal(mx_[0, 3, :, 0], [-1, -1])
    # SAME averages count only the in-image levels: the corner window holds 9, 9, 1, 2
    avg = run(tf.nn.quantized_avg_pool(xt, -1.0, 2.0, [1, 3, 3, 1], [1, 2, 2, 1], "SAME").output)
    assert avg[0, 1, 1, 0] == 5  # 21 / 4 = 5.25
    with pytest.raises(errors.UnimplementedError):
        run(tf.nn.quantized_max_pool(xt, 0.0, 1.0, [2, 1, 1, 1], [1, 1, 1, 1], "VALID").output)


def test_quantized_relu_x():
    # quint8 over [-1, 1]: 0.0 is level 128, 0.5 is level 192
    x = tf.constant(np.array([0, 100, 128, 150, 200, 255], np.uint8), dtype=tf.quint8)
    r = tf.nn.quantized_relu_x(x, 0.5, -1.0, 1.0)
    out, mn, mx = run(r)
    np.testing.assert_array_equal(out, [128, 128, 128, 150, 192, 192])
    assert (mn, mx) == (-1.0, 1.0) and r._fields == ("activations", "min_activations", "max_activations")


# -- errors, gradients, namespaces ---------------------------------------------------------------

def test_quantize_errors():
    x = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="int8"):
        tf.quantize(x, 0.0, 1.0, tf.int8)
    with pytest.raises(TypeError, match="float32"):
        tf.quantize(tf.constant([1, 2]), 0.0, 1.0, tf.qint8)
    with pytest.raises(ValueError, match="mode"):
        tf.quantize(x, 0.0, 1.0, tf.qint8, mode="MAX")
    with pytest.raises(ValueError, match="rank 0"):
        tf.quantize(x, [0.0], [1.0], tf.qint8)
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.quantize(tf.ones([2, 3]), [0.0] * 3, [1.0] * 3, tf.qint8, axis=0)
    with pytest.raises(errors.InvalidArgumentError, match="larger than"):
        run(tf.quantize(x, 1.0, 0.0, tf.qint8).output)
    with pytest.raises(errors.InvalidArgumentError, match="HALF_TO_EVEN"):
        run(tf.quantize(x, 0.0, 1.0, tf.qint8, round_mode="HALF_TO_EVEN").output)
    with pytest.raises(errors.UnimplementedError, match="MIN_FIRST"):
        run(tf.quantize(tf.ones([2, 3]), [0.0, 0.0], [1.0, 1.0], tf.qint8, axis=0, mode="MIN_FIRST").output)
    with pytest.raises(TypeError, match="float64"):
        tf.dequantize(tf.constant(np.ones(2, np.int8), dtype=tf.qint8), 0.0, 1.0, dtype=tf.float64)
    with pytest.raises(TypeError, match="int8"):
        tf.dequantize(tf.constant(np.ones(2, np.int8)), 0.0, 1.0)


def test_no_gradients():
    x = tf.constant([1.0, 2.0])
    q = tf.quantize(x, 0.0, 1.0, tf.quint8)
    with pytest.raises(LookupError, match="QuantizeV2"):
        tf.gradients(q.output_min, x)
    d = tf.constant(np.ones(2, np.uint8), dtype=tf.quint8)
    assert tf.gradients(tf.dequantize(d, 0.0, 1.0), d) == [None]  # no float path into an integer input


def test_namespaces():
    assert tf.quantization.quantize is tf.quantize and tf.quantization.dequantize is tf.dequantize
    assert tf.quantization.quantized_concat is tf.quantized_concat and callable(tf.quantize_v2)
    for n in ("quantized_conv2d", "quantized_avg_pool", "quantized_max_pool", "quantized_relu_x"):
        assert callable(getattr(tf.nn, n))
    assert tf.dtypes.QUANTIZED_DTYPES is tf.dtypes.QUANTIZED_DTYPES and tf.qint32 in tf.dtypes.QUANTIZED_DTYPES


# -- the kernels' C++ details ---------------------------------------------------------------------

def test_kernel_helpers():
    np.testing.assert_array_equal(qk.round_away(np.float32([0.5, -0.5, 1.5, 2.5, 0.49999997])), [1, -1, 2, 3, 0])
    np.testing.assert_array_equal(qk.to_int32(np.float32([2.0 ** 31, -2.0 ** 31, np.nan, -3.7])),
                                  [-2147483648, -2147483648, -2147483648, -3])
    assert qk.ftz(np.float32(1e-39)) == 0.0 and qk.ftz(np.float32(1e-30)) != 0.0
    assert qk.unclamped_offset(-1.0, 1.0, np.dtype(np.uint8)) == 128
    assert qk.unclamped_offset(0.5, 2.0, np.dtype(np.uint8)) < 0  # zero below the range
    assert qk.float_to_quantized(0.5, -1.0, 1.0, np.dtype(np.uint8)) == 192


def test_zeros_and_ones_keep_a_quantized_dtype():
    with tf.Graph().as_default():
        z, o = tf.zeros([2], tf.qint8), tf.ones([2, 1], tf.quint8)
        assert (z.dtype, o.dtype) == (tf.qint8, tf.quint8)
        assert tf.zeros([2]).dtype == tf.float32 and tf.ones([3], tf.int64).dtype == tf.int64
        with tf.Session() as s:
            zv, ov = s.run([z, o])
        np.testing.assert_array_equal(zv, [0, 0])
        np.testing.assert_array_equal(ov, [[1], [1]])
