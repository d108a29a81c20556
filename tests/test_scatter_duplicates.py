"""An index given twice to tensor_scatter_nd_update / scatter_nd_update: TF's CPU kernel
applies the updates in order, so the last one wins (collflow added them up before); the
gradient reaches every update at its index, as TF's gathers it for all of them."""
import numpy as np

import pytest

import collflow.compat.v1 as tf
from collflow import errors as cf_errors


def test_last_update_wins_and_every_update_gets_its_gradient():
    g = tf.Graph()
    with g.as_default():
        t = tf.constant(np.zeros((4, 3), np.float32))
        rows = tf.tensor_scatter_nd_update(t, [[1], [2], [1]], np.array([[1] * 3, [2] * 3, [3] * 3], np.float32))
        elems = tf.tensor_scatter_nd_update(t, [[0, 0], [0, 0], [3, 2], [0, 0]], [5.0, 6.0, 7.0, 8.0])
        v = tf.Variable(np.zeros(5, np.float32))
        assigned = tf.scatter_nd_update(v, [[1], [1], [4]], [1.0, 2.0, 3.0])
        u = tf.placeholder(tf.float32, [3])
        d = tf.tensor_scatter_nd_update(tf.ones([5]), [[1], [1], [4]], u)
        grad = tf.gradients(tf.reduce_sum(d * tf.range(5, dtype=tf.float32)), u)[0]
        none = tf.tensor_scatter_nd_update(tf.ones([3]), tf.zeros([0, 1], tf.int32), tf.zeros([0]))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            r, e, a, gr, n = sess.run([rows, elems, assigned, grad, none], {u: [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(r, [[0] * 3, [3] * 3, [2] * 3, [0] * 3])
    np.testing.assert_array_equal(e, [[8, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 7]])
    np.testing.assert_array_equal(a, [0, 2, 0, 0, 3])
    np.testing.assert_array_equal(gr, [1, 1, 4])
    np.testing.assert_array_equal(n, [1, 1, 1])


def test_scatter_update_duplicates_and_tf1_variable_keywords():
    # TF1's keywords are accepted (use_resource, caching_device, the distribution hints);
    # expected_shape checks the value's shape as `shape` does
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.zeros((4, 2), np.float32), use_resource=True, caching_device="/cpu:0",
                        synchronization=None, aggregation=None, expected_shape=[4, 2])
        a = tf.scatter_update(v, [1, 2, 1], np.array([[1, 1], [2, 2], [3, 3]], np.float32))
        b = tf.batch_scatter_update(tf.Variable(np.zeros((2, 3), np.float32)), [[0, 0], [2, 2]],
                                    [[1.0, 2.0], [3.0, 4.0]])
        with pytest.raises(cf_errors.InvalidArgumentError, match="incompatible"):
            tf.Variable(np.zeros(3, np.float32), expected_shape=[4])
        with pytest.raises(NotImplementedError, match="variable_def"):
            tf.Variable(1.0, variable_def=object())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got_a, got_b = sess.run([a, b])
    np.testing.assert_array_equal(got_a, [[0, 0], [3, 3], [2, 2], [0, 0]])  # TF's values: the last wins
    np.testing.assert_array_equal(got_b, [[2, 0, 0], [0, 0, 4]])
