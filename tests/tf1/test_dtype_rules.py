"""TF1's rules for converting Python/NumPy values next to tensors (by hand, no TensorFlow):
each rule as TF 1.x/2.x's graph mode applies it (checked against TF by
tests/tf1/test_vs_tensorflow_dtype_rules_fuzz.py), the expected values computed with NumPy."""
import numpy as np
import pytest

import collflow.compat.v1 as tf


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def run(t, feed=None):
    with tf.Session() as s:
        return s.run(t, feed)


X64 = np.array([5, -7], np.int64)


# -- a Python value beside a tensor takes the tensor's dtype; TypeError where its kind differs
@pytest.mark.parametrize("fn", [lambda x: x * 2.0, lambda x: 2.0 * x, lambda x: x / 3.0, lambda x: x * [1.0, 2.0],
                                lambda x: x ** 0.5, lambda x: x % 2.0, lambda x: x < 2.5, lambda x: x + 1j,
                                lambda x: tf.equal(x, 2.5), lambda x: tf.maximum(x, 2.5), lambda x: x + "a"])
def test_python_float_next_to_int_tensor_is_a_type_error(fn):
    # TF: "Expected int64, but got 2.0 of type 'float'" (even an integral float)
    with pytest.raises(TypeError, match="int64"):
        fn(tf.constant(X64))


def test_python_ints_take_the_tensor_dtype_and_wrap():
    x = tf.constant(X64)
    for t in (x * 2, 2 * x, x ** 2, 2 ** tf.constant([1, 3], tf.int64)):
        assert t.dtype == tf.int64
    u8 = tf.constant(np.array([10, 250], np.uint8))
    r = u8 + 300  # 300 wraps to 44 in uint8, as NumPy 1.x / TF 1.15
    assert r.dtype == tf.uint8
    np.testing.assert_array_equal(run(r), (np.array([10, 250]) + 44) % 256)
    np.testing.assert_array_equal(run(tf.constant(-1, tf.uint8)), 255)
    np.testing.assert_array_equal(run(tf.constant(2 ** 40 + 5, tf.int32)), 5)
    np.testing.assert_array_equal(run(tf.constant([2 ** 31], tf.int32)), [-2 ** 31])


def test_numpy_values_are_cast_without_a_check():
    # TF casts NumPy values with astype: np.float32(2.5) into an int64 tensor is 2
    x = tf.constant(X64)
    np.testing.assert_array_equal(run(x * np.float32(2.5)), X64 * 2)
    np.testing.assert_array_equal(run(x * np.array([1.5, -2.7])), X64 * np.array([1, -2]))
    np.testing.assert_array_equal(run(tf.constant(np.array([1.5, -2.5]), tf.int32)), [1, -2])
    assert run(tf.constant(np.int64(2 ** 40 + 3), tf.int32)) == 3
    with pytest.raises(TypeError):
        tf.constant(np.array([1, 2]), tf.string)  # numbers never become strings


@pytest.mark.parametrize("value,dtype", [(1.5, "int32"), (2.0, "int32"), ([1, 2.5], "int32"), (1, "bool"),
                                         ([1, 0], "bool"), (1j, "float32"), ("a", "int32"), (1, "string"),
                                         ([np.float32(1.5)], "int32")])
def test_constant_refuses_python_values_of_another_kind(value, dtype):
    with pytest.raises(TypeError, match=f"Expected {dtype}"):
        tf.constant(value, getattr(tf, dtype))


def test_constant_accepts_compatible_python_values():
    assert run(tf.constant(True, tf.int32)) == 1
    assert run(tf.constant(3, tf.complex64)) == 3 + 0j
    assert run(tf.constant([1, 2], tf.float16)).dtype == np.float16
    assert tf.constant(2 ** 63).dtype == tf.uint64
    for bad in (2 ** 64, [1, "a"]):  # no dtype holds them: TypeError, as TF
        with pytest.raises(TypeError):
            tf.constant(bad)


def test_tensor_of_another_dtype_is_a_value_error():
    with pytest.raises(ValueError):
        tf.convert_to_tensor(tf.constant([1.0]), tf.int32)


# -- list inputs: the Python values take the dtype of the first tensor (stack, concat)
def test_list_inputs_take_the_first_tensors_dtype():
    x = tf.constant(X64)
    for t in (tf.stack([x, [3, 4]]), tf.stack([[3, 4], x]), tf.convert_to_tensor([x, [3, 4]])):
        assert t.dtype == tf.int64
        assert run(t).tolist() in ([[5, -7], [3, 4]], [[3, 4], [5, -7]])
    c = tf.concat([x, [3, 4]], 0)
    assert c.dtype == tf.int64 and run(c).tolist() == [5, -7, 3, 4]
    with pytest.raises(TypeError, match="int64"):
        tf.stack([x, [3.5, 4]])
    with pytest.raises(TypeError, match=r"\[float32, float64\]"):
        tf.concat([tf.constant([1.0]), tf.constant([1.0], tf.float64)], 0)


def test_add_n_converts_each_input_on_its_own():
    x = tf.constant(X64)
    with pytest.raises(TypeError, match=r"\[int64, int32\]"):  # [3, 4] is int32 on its own
        tf.add_n([x, [3, 4]])
    np.testing.assert_array_equal(run(tf.add_n([x, np.array([3, 4])])), X64 + [3, 4])


def test_tuple_converts_python_values():
    a, b = tf.tuple([tf.constant(X64), 2])
    assert b.dtype == tf.int32 and run(b) == 2


# -- & | ^ ~: logical on bools, bitwise on integers
def test_bit_operators():
    x = tf.constant(np.array([5, 12], np.int64))
    b = tf.constant([True, False])
    r = run([x & 3, 3 | x, x ^ 6, ~x, b & True, True | b, b ^ True, ~b, ~tf.constant(np.uint8(5))])
    want = [np.array([5, 12]) & 3, np.array([5, 12]) | 3, np.array([5, 12]) ^ 6, ~np.array([5, 12]),
            [True, False], [True, True], [False, True], [False, True], np.uint8(250)]
    for got, w in zip(r, want):
        np.testing.assert_array_equal(got, w)
    assert (x & 3).dtype == tf.int64
    with pytest.raises(TypeError):
        b | 1  # an int is not a bool
    with pytest.raises(TypeError):
        tf.logical_and(b, 1)
    with pytest.raises(TypeError):
        tf.constant([1.0]) & 1.0


# -- dtypes TF's kernels lack: TypeError when the graph is built
@pytest.mark.parametrize("fn", [lambda: tf.constant([1 + 1j]) < 1, lambda: tf.constant([1 + 1j]) // 1,
                                lambda: tf.constant([1 + 1j]) % 1, lambda: tf.constant(np.uint8([3])) ** 2,
                                lambda: tf.constant([True]) - True, lambda: tf.constant([True]) < True,
                                lambda: tf.constant(["a"]) * tf.constant(["b"]),
                                lambda: tf.maximum(tf.constant([1j]), 1j)])
def test_kernel_dtypes_refused(fn):
    with pytest.raises(TypeError):
        fn()


def test_kept_bool_arithmetic_and_string_add():
    # collflow keeps bool Add/Mul (docs/tf1_compat.md); string + string is TF's Add
    b = tf.constant([True, False])
    np.testing.assert_array_equal(run(b + b), [True, False])
    assert run(tf.constant(["a"]) + "b").tolist() == [b"ab"]


def test_truediv_and_floordiv_dtypes():
    # TF1's truediv: 8/16-bit integers through float32, 32/64-bit through float64
    assert (tf.constant(np.int16([7])) / tf.constant(np.int16([2]))).dtype == tf.float32
    assert (tf.constant(np.uint8([7])) / 2).dtype == tf.float32
    assert (tf.constant([7]) / 2).dtype == tf.float64
    np.testing.assert_array_equal(run(tf.constant([7], tf.int64) / 2), [3.5])
    f = tf.constant(np.float16([7.5, -7.5])) // 2.0
    assert f.dtype == tf.float16
    np.testing.assert_array_equal(run(f), np.floor(np.float16([7.5, -7.5]) / 2))


def test_variable_operators():
    v = tf.Variable(np.array([5, 6], np.int64))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        r = s.run([v // 2, v % 4, 2 ** v, abs(-v), v & 3, 3 | v, v ^ 1, ~v, 20 // v, 20 % v])
    a = np.array([5, 6])
    for got, w in zip(r, [a // 2, a % 4, 2 ** a, a, a & 3, 3 | a, a ^ 1, ~a, 20 // a, 20 % a]):
        np.testing.assert_array_equal(got, w)
    with pytest.raises(TypeError):
        v * 2.0


def test_lists_without_tensors():
    # TF: stack along axis 0 of constants is one constant (Python floats float32, ints int32)
    s = tf.stack([[True, False], [1, 1.5]])
    assert s.dtype == tf.float32
    np.testing.assert_array_equal(run(s), [[1.0, 0.0], [1.0, 1.5]])
    # concat converts each on its own: int32 beside float32 is TF's TypeError
    with pytest.raises(TypeError, match=r"\[int32, float32\]"):
        tf.concat([[1, 2], [1.5]], 0)
    # where's y takes the dtype x converted to: the int64 array is cast to int32
    w = tf.where([True, False], [1, 2], np.array([7, 8], np.int64))
    assert w.dtype == tf.int32 and run(w).tolist() == [1, 8]
    with pytest.raises(TypeError):
        tf.where([True, False], [1, 2], [2.5, 3.5])
