"""tf.sets, tf.nest, tf.compat, tf.dtypes/tf.initializers and the tf.debugging extras by hand
(NumPy/closed-form references; no TensorFlow)."""
import collections
import pathlib

import numpy as np
import pytest

import collflow.compat.v1 as tf


def _run(x, feed=None):
    with tf.Session() as s:
        return s.run(x, feed)


def _ref_set_op(a_rows, b_rows, fn):
    """The SparseTensor TF gives for per-row python sets."""
    idx, vals, width = [], [], 0
    for r, (a, b) in enumerate(zip(a_rows, b_rows)):
        res = sorted(fn(set(a), set(b)))
        idx += [[r, j] for j in range(len(res))]
        vals += res
        width = max(width, len(res))
    return np.array(idx, np.int64).reshape(-1, 2), np.array(vals), np.array([len(a_rows), width])


@pytest.mark.parametrize("name,fn", [("intersection", lambda a, b: a & b), ("union", lambda a, b: a | b),
                                     ("difference", lambda a, b: a - b)])
def test_dense_sets_match_python_sets(name, fn):
    r = np.random.RandomState(3)
    a = r.randint(0, 6, [5, 4]).astype(np.int64)
    b = r.randint(0, 6, [5, 3]).astype(np.int64)
    op = getattr(tf.sets, name)
    out = _run(op(tf.constant(a), tf.constant(b)))
    ri, rv, rs = _ref_set_op(a.tolist(), b.tolist(), fn)
    np.testing.assert_array_equal(out.indices, ri)
    np.testing.assert_array_equal(out.values, rv)
    np.testing.assert_array_equal(out.dense_shape, rs)
    assert out.values.dtype == np.int64
    assert getattr(tf.sets, "set_" + name) is op


def test_difference_b_minus_a_and_dense_sparse_swap():
    a = tf.constant([[1, 2, 3]])
    sb = tf.SparseTensor([[0, 0], [0, 1]], [2, 9], [1, 2])
    out = _run(tf.sets.set_difference(a, sb))  # dense a, sparse b: a - b all the same
    np.testing.assert_array_equal(out.values, [1, 3])
    out = _run(tf.sets.set_difference(a, sb, aminusb=False))
    np.testing.assert_array_equal(out.values, [9])
    np.testing.assert_array_equal(out.dense_shape, [1, 1])


def test_sparse_sets_rank3_and_size():
    sa = tf.SparseTensor([[0, 0, 0], [0, 0, 3], [1, 0, 1], [1, 1, 0]], [5, 1, 1, 7], [2, 3, 4])
    sb = tf.SparseTensor([[0, 0, 0], [1, 2, 0]], [5, 8], [2, 3, 9])
    u = _run(tf.sets.union(sa, sb))
    np.testing.assert_array_equal(u.indices, [[0, 0, 0], [0, 0, 1], [1, 0, 0], [1, 1, 0], [1, 2, 0]])
    np.testing.assert_array_equal(u.values, [1, 5, 1, 7, 8])
    np.testing.assert_array_equal(u.dense_shape, [2, 3, 2])
    np.testing.assert_array_equal(_run(tf.sets.size(sa)), [[2, 0, 0], [1, 1, 0]])
    assert _run(tf.sets.set_size(sa)).dtype == np.int32


def test_string_sets_and_duplicates():
    a = tf.constant([[b"b", b"a", b"a"], [b"c", b"c", b"c"]])
    b = tf.constant([[b"a", b"z", b"z"], [b"d", b"d", b"c"]])
    out = _run(tf.sets.union(a, b))
    assert out.values.tolist() == [b"a", b"b", b"z", b"c", b"d"]  # bytes, as TF's
    np.testing.assert_array_equal(out.dense_shape, [2, 3])
    out = _run(tf.sets.intersection(a, b))
    assert out.values.tolist() == [b"a", b"c"]


def test_sets_errors():
    with pytest.raises(TypeError):
        tf.sets.union(tf.constant([[1.0]]), tf.constant([[1.0]]))
    with pytest.raises(TypeError):
        tf.sets.union(tf.constant([[1]]), tf.constant([[1]], tf.int64))
    with pytest.raises(ValueError):
        tf.sets.union(tf.constant([1]), tf.constant([1]))
    with pytest.raises(TypeError):
        tf.sets.size(tf.constant([[1]]))
    with pytest.raises(ValueError):  # groups that differ in the static shapes
        tf.sets.union(tf.constant([[1], [2]]), tf.constant([[1]]))
    p = tf.placeholder(tf.int32, [None, 1])
    with pytest.raises(tf.errors.InvalidArgumentError):  # ... or at run time
        _run(tf.sets.union(p, tf.constant([[1]])), {p: [[1], [2]]})
    unsorted = tf.SparseTensor([[0, 1], [0, 0]], [1, 2], [1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError):
        _run(tf.sets.size(unsorted))
    assert _run(tf.sets.size(unsorted, validate_indices=False)).tolist() == [2]
    assert tf.gradients(tf.cast(tf.sets.size(unsorted), tf.float32), [unsorted.values])[0] is None


def test_nest():
    P = collections.namedtuple("P", "b a")
    s = {"z": [1, (2, 3)], "a": P(4, {"y": 5, "x": 6}), "n": None}
    assert tf.nest.flatten(s) == [4, 6, 5, None, 1, 2, 3]
    back = tf.nest.pack_sequence_as(s, list("abcdefg"))
    assert list(back) == ["z", "a", "n"]  # the structure's own key order
    assert back["a"] == P("a", {"y": "c", "x": "b"}) and back["z"] == ["e", ("f", "g")]
    assert tf.nest.flatten("abc") == ["abc"] and tf.nest.flatten(np.ones(3))[0].shape == (3,)
    assert tf.nest.map_structure(lambda x, y: x + y, (1, [2]), (10, [20])) == (11, [22])
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    assert list(tf.nest.map_structure(lambda v: v * 2, od).items()) == [("b", 2), ("a", 4)]
    assert tf.nest.is_nested([1]) and tf.nest.is_nested({}) and not tf.nest.is_nested("ab")
    tf.nest.assert_same_structure((1, [2]), (3, [4]))
    with pytest.raises(TypeError):
        tf.nest.assert_same_structure((1, 2), [1, 2])
    tf.nest.assert_same_structure((1, 2), [1, 2], check_types=False)
    with pytest.raises(ValueError):
        tf.nest.assert_same_structure((1, 2), (1, (2,)))
    with pytest.raises(ValueError):
        tf.nest.assert_same_structure({"a": 1}, {"b": 1})
    with pytest.raises(ValueError):
        tf.nest.pack_sequence_as([1, 2], [1])
    assert tf.nest.pack_sequence_as(7, [8]) == 8


def test_compat():
    c = tf.compat
    assert c.as_bytes("é") == "é".encode() and c.as_bytes(bytearray(b"x")) == b"x"
    assert c.as_text(b"ab") == "ab" and c.as_str is c.as_text and c.as_str_any(3) == "3"
    with pytest.raises(TypeError):
        c.as_bytes(3)
    with pytest.raises(TypeError):
        c.as_text(3)
    assert c.path_to_str(pathlib.Path("/a/b")) == "/a/b" and c.path_to_str(3) == 3
    assert isinstance(np.int8(1), c.integral_types) and isinstance(1.5, c.real_types)
    assert isinstance(1j, c.complex_types) and str in c.bytes_or_text_types
    assert c.dimension_value(tf.TensorShape([3, None])[0]) == 3
    assert c.v1 is tf
    with c.forward_compatibility_horizon(2030, 1, 2):
        assert c.forward_compatible(2030, 1, 1) and not c.forward_compatible(2030, 1, 2)
    assert not c.forward_compatible(2030, 1, 1)
    with pytest.raises(ValueError):
        with c.forward_compatibility_horizon(2030, 2, 30):
            pass


def test_dtypes_initializers_toplevel():
    assert tf.dtypes.bool is tf.bool and tf.dtypes.float32 is tf.float32
    assert _run(tf.dtypes.cast(tf.constant([1.7]), tf.int32)).tolist() == [1]
    assert _run(tf.dtypes.saturate_cast(tf.constant([300.0]), tf.uint8)).tolist() == [255]
    assert tf.dtypes.qint8.is_quantized  # the quantized dtypes (collflow/compat/quant_names.py)
    v = tf.Variable(3.0)
    with tf.Session() as s:
        s.run(tf.initializers.global_variables())
        assert s.run(v) == 3.0
        s.run(tf.initializers.variables([v]))
    assert tf.initializers.uniform_unit_scaling is tf.uniform_unit_scaling_initializer
    assert tf.initializers.GlorotUniform is not None and tf.get_logger() is not None
    sp = tf.convert_to_tensor_or_sparse_tensor(tf.SparseTensorValue([[0]], [1.0], [2]))
    assert isinstance(sp, tf.SparseTensor)
    with pytest.raises(ValueError):
        tf.convert_to_tensor_or_sparse_tensor(sp, dtype=tf.int32)
    assert isinstance(tf.convert_to_tensor_or_indexed_slices([1.0]), tf.Tensor)
    ind = tf.IndexedSlices(tf.constant([1.0]), tf.constant([0]))
    assert tf.convert_to_tensor_or_indexed_slices(ind) is ind


def test_add_check_numerics_ops():
    with tf.Graph().as_default() as g0:  # it checks every float tensor of the graph
        x = tf.placeholder(tf.float32)
        y = tf.log(x)
        chk = tf.add_check_numerics_ops()
    with tf.Session(graph=g0) as s:
        s.run([y, chk], {x: 2.0})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Log"):
            s.run([y, chk], {x: -1.0})
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.bool)
        tf.cond(p, lambda: tf.constant(1.0), lambda: tf.constant(2.0))
        with pytest.raises(ValueError, match="control flow"):
            tf.add_check_numerics_ops()


def test_debugging_extras():
    d = tf.debugging
    assert d.is_numeric_tensor(tf.constant(1)) and not d.is_numeric_tensor(tf.constant("a"))
    assert _run(d.is_non_decreasing([1, 1, 2])) and not _run(d.is_strictly_increasing([1, 1, 2]))
    a, b = tf.constant(1.0), tf.constant(2.0)
    assert d.assert_same_float_dtype([a, b]) is tf.float32 and tf.assert_same_float_dtype() is tf.float32
    with pytest.raises(ValueError):
        d.assert_same_float_dtype([a, tf.constant(1.0, tf.float64)])
    with pytest.raises(ValueError):
        d.assert_same_float_dtype([tf.constant(1)])
    d.assert_proper_iterable([1, 2])
    for bad in ("ab", np.ones(2), a):
        with pytest.raises(TypeError):
            tf.assert_proper_iterable(bad)
    with pytest.raises(TypeError):
        d.assert_proper_iterable(3)
    d.set_log_device_placement(True)
    assert d.get_log_device_placement()
    d.set_log_device_placement(False)


def test_assert_shapes_static_and_dynamic():
    x, y = tf.zeros([10, 3]), tf.ones([10, 7])
    s = tf.zeros([])
    tf.debugging.assert_shapes([(x, ("N", "Q")), (y, ("N", "D")), (tf.zeros([3]), ("Q",)), (s, ())])
    tf.debugging.assert_shapes({x: (..., 3), y: ("*", "D")})
    with pytest.raises(ValueError):
        tf.debugging.assert_shapes([(x, ("N", "D")), (y, ("N", "D"))])
    with pytest.raises(ValueError):
        tf.debugging.assert_shapes([(x, ("N", 4))])
    with pytest.raises(ValueError):
        tf.debugging.assert_shapes([(x, ("N",))])
    p = tf.placeholder(tf.float32, [None, 3])
    q = tf.placeholder(tf.float32, [None])
    chk = tf.debugging.assert_shapes([(p, ("N", 3)), (q, ("N",))])
    with tf.Session() as sess:
        sess.run(chk, {p: np.zeros([4, 3]), q: np.zeros([4])})
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(chk, {p: np.zeros([4, 3]), q: np.zeros([5])})
