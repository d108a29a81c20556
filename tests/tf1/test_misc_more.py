"""tf.cross, broadcast_static_shape / broadcast_dynamic_shape, histogram_fixed_width(_bins),
hessians, get_static_value, is_numeric_tensor, colocate_with / container and the
VariableAggregation / VariableSynchronization enums (graph/ops/misc_more_ops.py): by hand,
with finite differences for cross's gradient, and against TensorFlow where installed."""

import numpy as np
import pytest

import collflow as cf
import collflow.compat.v1 as tf
from gradcheck import Case, check_case
from tf_peer import run_in_both


def _program(T):
    a = T.constant([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [2.0, -1.0, 0.5]])
    b = T.constant([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.3, 0.7, -2.0]])
    x = T.constant([1.0, 2.0, -0.5])
    y = T.reduce_sum(x ** 3) + x[0] * x[1] * x[2]
    vals = T.constant([-1.0, 0.0, 0.5, 1.0, 1.99, 2.0, 5.0, 0.49])
    out = [T.cross(a, b), T.broadcast_dynamic_shape(T.constant([2, 1, 3]), T.constant([4, 3])),
           T.broadcast_dynamic_shape(T.constant([5, 1]), T.constant([1])),
           T.histogram_fixed_width(vals, [0.0, 2.0], nbins=4),
           T.histogram_fixed_width_bins(vals, [0.0, 2.0], nbins=4), T.hessians(y, x)[0]]
    out += T.gradients(T.reduce_sum(T.cross(a, b) * T.constant([1.0, 2.0, 3.0])), [a, b])
    return out


def test_values_by_hand():
    with tf.Graph().as_default(), tf.Session() as s:
        r = s.run(_program(tf))
    np.testing.assert_allclose(r[0][:2], [[0, 0, 1], [1, 0, 0]])
    assert r[1].tolist() == [2, 4, 3] and r[2].tolist() == [5, 1]
    assert r[3].tolist() == [3, 1, 1, 3] and r[4].tolist() == [0, 0, 1, 2, 3, 3, 3, 0]
    x = np.array([1.0, 2.0, -0.5])
    want = np.diag(6 * x) + np.array([[0, x[2], x[1]], [x[2], 0, x[0]], [x[1], x[0], 0]])
    np.testing.assert_allclose(r[5], want, rtol=1e-6)
    with tf.Graph().as_default():
        assert tf.broadcast_static_shape(tf.TensorShape([2, 1]), tf.TensorShape([3])).as_list() == [2, 3]
        with pytest.raises(ValueError, match="Incompatible shapes"):
            tf.broadcast_static_shape(tf.TensorShape([2]), tf.TensorShape([3]))
        bad = tf.broadcast_dynamic_shape(tf.constant([2, 3]), tf.constant([4, 3]))
        p = tf.placeholder(tf.float32, [None, 3])
        assert tf.get_static_value(tf.shape(tf.zeros([2, 3]))).tolist() == [2, 3]
        assert tf.get_static_value(tf.shape(p)) is None and tf.get_static_value(tf.rank(p)) == 2
        assert tf.is_numeric_tensor(p) and not tf.is_numeric_tensor(tf.constant("s"))
        with tf.colocate_with(p), tf.container("c"):
            v = tf.get_variable("v", [2], aggregation=tf.VariableAggregation.MEAN,
                                synchronization=tf.VariableSynchronization.ON_READ)
        assert v.shape.as_list() == [2]
        with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError, match="Incompatible shapes"):
            s.run(bad)


def test_cross_gradient_matches_finite_differences():
    check_case(Case("Pack", lambda a, b: cf.cross(a, b), [(4, 3), (4, 3)], id="cross"))


def test_matches_tensorflow():
    ours, theirs = run_in_both(_program)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=str(k))
