"""By-hand checks (no TensorFlow needed) of the static-shape rules that the differential fuzz
(test_vs_tensorflow_static_shapes_fuzz.py) checks against TensorFlow.

TF1's C++ shape inference evaluates the small integer subgraphs that compute shape arguments
(constants, shape(x) of a partly known x, slices, stacks, concats, casts, integer arithmetic),
so `tf.reshape(x, tf.cast(tf.constant([3, 2], tf.int64), tf.int32))` has the static shape
(3, 2); an entry that depends on a fed value or an unknown dimension stays unknown.  The
expected shapes below are worked out by hand; the values by NumPy.
"""
import numpy as np
import pytest

import collflow.compat.v1 as tf


def _sl(t):
    return None if t.shape.ndims is None else t.shape.as_list()


def _run(t, feed):
    with tf.Session() as s:
        return s.run(t, feed)


def test_reshape_to_cast_constant_is_static():
    x = tf.placeholder(tf.float32, [None])
    y = tf.reshape(x, tf.cast(tf.constant([3, 2], tf.int64), tf.int32))
    assert _sl(y) == [3, 2]
    v = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(_run(y, {x: v}), v.reshape(3, 2))


def test_reshape_to_shape_slices_concat_and_arith():
    x = tf.placeholder(tf.float32, [4, 2, 3])
    sh = tf.shape(x)
    assert _sl(tf.reshape(x, tf.concat([sh[:1], [-1]], 0))) == [4, 6]       # 24 / 4
    assert _sl(tf.reshape(x, tf.stack([sh[0] * sh[1], sh[2]]))) == [8, 3]   # 4 * 2
    assert _sl(tf.reshape(x, [sh[-1], -1, tf.constant(1) + 0])) == [3, 8, 1]
    assert _sl(tf.reshape(x, tf.stack([tf.size(x) // sh[0], sh[0]]))) == [6, 4]


def test_reshape_flatten_idiom_reduce_prod_of_shape_slice():
    # reduce_prod(shape(x)[1:]) is 2 * 3 = 6 whatever the batch: collflow knows it (TF 2.21's
    # shape inference leaves it unknown; knowing more is always right here)
    x = tf.placeholder(tf.float32, [None, 2, 3])
    y = tf.reshape(x, [-1, tf.reduce_prod(tf.shape(x)[1:])])
    assert _sl(y) == [None, 6]
    v = np.arange(30, dtype=np.float32).reshape(5, 2, 3)
    np.testing.assert_array_equal(_run(y, {x: v}), v.reshape(5, 6))


def test_unknown_entries_stay_unknown():
    x = tf.placeholder(tf.float32, [None, 2, 3])
    n = tf.placeholder(tf.int32, [])
    sh = tf.shape(x)
    assert _sl(tf.reshape(x, tf.stack([sh[0], -1]))) == [None, None]  # the batch is fed
    assert _sl(tf.reshape(x, tf.stack([n, 6]))) == [None, 6]
    assert _sl(tf.zeros(tf.shape(x)[:-1])) == [None, 2]
    assert _sl(tf.fill([n, 3], 1.0)) == [None, 3]
    assert _sl(tf.range(n)) == [None]
    assert _sl(tf.reshape(x, tf.shape(x) + 0)) == [None, None, None]  # shape + 0 of a partial shape


def test_fill_range_zeros_of_evaluable_sizes():
    assert _sl(tf.fill(tf.cast(tf.constant([2, 3], tf.int64), tf.int32), 0.5)) == [2, 3]
    r = tf.range(tf.constant(1) + 2, 9, 2)   # 3, 5, 7
    assert _sl(r) == [3]
    np.testing.assert_array_equal(_run(r, {}), np.arange(3, 9, 2))
    x = tf.placeholder(tf.float32, [None, 3, 4])
    assert _sl(tf.ones(tf.concat([tf.shape(x), [2]], 0))) == [None, 3, 4, 2]
    assert _sl(tf.reshape(x, tf.concat([tf.fill([1], -1), tf.ones([2], tf.int32)], 0))) == [None, 1, 1]


def test_conv2d_transpose_output_shape_from_shape_arith():
    x = tf.placeholder(tf.float32, [None, 5, None, 2])
    c = tf.shape(x)
    w = tf.ones([2, 2, 4, 2])
    y = tf.nn.conv2d_transpose(x, w, tf.stack([c[0], c[1] * 2, c[2] * 2, 4]), [1, 2, 2, 1], "SAME")
    assert _sl(y) == [None, 10, None, 4]
    out = _run(y, {x: np.ones((1, 5, 3, 2), np.float32)})
    assert out.shape == (1, 10, 6, 4)


def test_resize_to_computed_size():
    x = tf.placeholder(tf.float32, [None, 6, 5, 3])
    y = tf.image.resize_images(x, tf.shape(x)[1:3] * 2)
    assert _sl(y) == [None, 12, 10, 3]  # TF 2.21 says (?, ?, ?, 3); 6*2 and 5*2 are fixed
    assert _run(y, {x: np.zeros((1, 6, 5, 3), np.float32)}).shape == (1, 12, 10, 3)


def test_cond_output_is_the_most_specific_common_shape():
    p = tf.placeholder(tf.bool, [])
    a = tf.placeholder(tf.float32, [2, 3])
    b = tf.placeholder(tf.float32, [None, 3])
    assert _sl(tf.cond(p, lambda: a, lambda: b)) == [None, 3]   # not (2, 3): b may have 5 rows
    u = tf.placeholder(tf.float32, None)
    assert _sl(tf.cond(p, lambda: u, lambda: tf.reshape(u, [-1]))) is None  # rank 1 or any
    c = tf.placeholder(tf.float32, [2])
    d = tf.placeholder(tf.float32, [3])
    assert _sl(tf.cond(p, lambda: c, lambda: d)) == [None]
    out = _run(tf.cond(p, lambda: a, lambda: b), {p: False, a: np.zeros((2, 3)), b: np.ones((5, 3))})
    assert out.shape == (5, 3)


def test_reduce_all_axes_of_unknown_rank_is_scalar():
    u = tf.placeholder(tf.float32, None)
    assert _sl(tf.reduce_sum(u)) == []
    assert _sl(tf.reduce_mean(u)) == []
    assert _sl(tf.reduce_sum(u, keepdims=True)) is None
    assert _sl(tf.reduce_sum(u, axis=0)) is None
    assert _run(tf.reduce_sum(u), {u: np.ones((2, 3), np.float32)}) == 6.0


def test_boolean_mask_with_several_unknown_dims():
    x = tf.placeholder(tf.float32, [None, None, None])
    m = tf.placeholder(tf.bool, [None, None])
    y = tf.boolean_mask(x, m)
    assert _sl(y) == [None, None]
    xv = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    mv = np.array([[1, 0, 1], [0, 1, 1]], bool)
    np.testing.assert_array_equal(_run(y, {x: xv, m: mv}), xv[mv])
    assert _run(y, {x: np.zeros((0, 3, 4), np.float32), m: np.zeros((0, 3), bool)}).shape == (0, 4)


def test_reshape_empty_with_minus_one_is_built_and_refused_at_run_time():
    z = tf.placeholder(tf.float32, [4, 0])
    r = tf.reshape(z, [-1, 0])   # -1 is ambiguous for 0 elements: TF builds it, unknown
    assert _sl(r) == [None, 0]
    with pytest.raises(tf.errors.InvalidArgumentError):
        _run(r, {z: np.zeros((4, 0), np.float32)})
    with pytest.raises(ValueError):
        tf.reshape(tf.placeholder(tf.float32, [4, 2]), [-1, 0])  # 8 elements into 0 per row


def test_set_shape_incompatible_raises_value_error():
    x = tf.placeholder(tf.float32, [None, 3])
    for bad in ([2, 4], [3], [None, 3, 1]):
        with pytest.raises(ValueError):
            tf.identity(x).set_shape(bad)
    y = tf.identity(x)
    y.set_shape([2, None])
    assert _sl(y) == [2, 3]


def test_tensor_shape_algebra():
    T = tf.TensorShape
    assert T([None]).concatenate(T([3])).as_list() == [None, 3]
    assert T(None).concatenate([3]).ndims is None
    assert (T([1]) + [2, None]).as_list() == [1, 2, None]
    assert ([1] + T([2])).as_list() == [1, 2]
    assert T([2, 3]).most_specific_compatible_shape(T([2, 4])).as_list() == [2, None]
    assert T([2, 3]).most_specific_compatible_shape(T([2])).ndims is None
    assert T(None).with_rank(2).as_list() == [None, None]
    with pytest.raises(ValueError):
        T([2]).with_rank(2)
    with pytest.raises(ValueError):
        T([2]).with_rank_at_least(2)
    assert T([2, 3]).with_rank_at_least(1).as_list() == [2, 3]
    with pytest.raises(ValueError):
        T([2, 3]).with_rank_at_most(1)
    with pytest.raises(ValueError):
        T([2]).assert_is_compatible_with(T([3]))
    with pytest.raises(ValueError):
        T([2]).assert_same_rank(T([2, 3]))
    with pytest.raises(ValueError):
        T([2, None]).assert_is_fully_defined()
    T(None).assert_has_rank(4)
    with pytest.raises(ValueError):
        T([1]).assert_has_rank(2)
    # TF: a shape is truthy when its rank is known (a scalar's too)
    assert bool(T([])) is True and bool(T(None)) is False and bool(T([None])) is True


def test_shape_arguments_of_other_ops_are_evaluated():
    y = tf.placeholder(tf.float32, [4, None, 5])
    x = tf.placeholder(tf.float32, [None, 3])
    sh = tf.shape(y)
    assert _sl(tf.tile(x, [sh[0], 1])) == [None, 3]            # multiples [4, 1]
    assert _sl(tf.nn.top_k(y, k=sh[2])[0]) == [4, None, 5]
    assert _sl(tf.unsorted_segment_sum(y, tf.placeholder(tf.int32, [4]), sh[0])) == [4, None, 5]
    sc = tf.scatter_nd(tf.placeholder(tf.int32, [None, 1]), tf.placeholder(tf.float32, [None, 3]),
                       tf.stack([sh[0], 3]))
    assert _sl(sc) == [4, 3]
    assert _sl(tf.random_normal(sh)) == [4, None, 5]
    assert _sl(tf.random_uniform(tf.stack([tf.shape(x)[0], 7]))) == [None, 7]
    assert _sl(tf.eye(sh[0])) == [4, 4]
    # a float constant cast to int is folded, truncating as Cast does: [3.7, 1.2] -> [3, 1]
    z = tf.reshape(tf.placeholder(tf.float32, [None]), tf.cast(tf.constant([3.7, 1.2]), tf.int32))
    assert _sl(z) == [3, 1]
    out = _run(tf.tile(x, [sh[0], 1]), {x: np.ones((2, 3), np.float32), y: np.zeros((4, 1, 5), np.float32)})
    assert out.shape == (8, 3)


def test_layers_flatten_with_unknown_inner_dims():
    # TF1's Flatten reshapes to (batch, -1): the product of unknown dims is unknown
    x = tf.placeholder(tf.float32, [4, None, 5])
    assert _sl(tf.layers.flatten(x)) == [4, None]
    u = tf.placeholder(tf.float32, [None, None, 5])
    f = tf.layers.flatten(u)
    assert _sl(f) == [None, None]
    v = np.arange(30, dtype=np.float32).reshape(2, 3, 5)
    np.testing.assert_array_equal(_run(f, {u: v}), v.reshape(2, 15))


def test_reshape_of_tensor_with_a_known_empty_dim():
    # a known 0 dimension means 0 elements whatever the unknown dims are
    x = tf.placeholder(tf.float32, [3, None, 0])
    assert _sl(tf.reshape(x, [-1])) == [0]
    assert _sl(tf.reshape(x, [-1, 3])) == [0, 3]
    assert _sl(tf.reshape(x, tf.stack([-1, tf.constant(3)]))) == [0, 3]
    with pytest.raises(ValueError):
        tf.reshape(x, [2, 3])  # 0 elements into 6
    assert _run(tf.reshape(x, [-1, 3]), {x: np.zeros((3, 5, 0), np.float32)}).shape == (0, 3)


def test_slice_bounds_the_graph_determines_are_static():
    y = tf.placeholder(tf.float32, [4, None, 5])
    a = y[tf.constant(1):]                 # rows 1..3
    assert _sl(a) == [3, None, 5]
    b = y[:, :, :tf.shape(y)[0] - 1]       # 4 - 1 = 3 columns of 5
    assert _sl(b) == [4, None, 3]
    c = y[tf.constant(-1)]                 # the last row
    assert _sl(c) == [None, 5]
    v = np.arange(40, dtype=np.float32).reshape(4, 2, 5)
    np.testing.assert_array_equal(_run(a, {y: v}), v[1:])
    np.testing.assert_array_equal(_run(b, {y: v}), v[:, :, :3])
    np.testing.assert_array_equal(_run(c, {y: v}), v[-1])
    n = tf.placeholder(tf.int32, [])
    assert _sl(y[:n]) == [None, None, 5]   # a fed bound stays unknown
