"""The rest of tf.assert_* and tf.ensure_shape (graph/ops/check_more_ops.py), stated as TF1
behaves: decided when the graph knows enough (an error then), else an op that raises
InvalidArgumentError when it runs; each outcome also checked against TensorFlow."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf

# (assert call, value that passes, value that fails); x is fed (unknown values)
CASES = [
    (lambda T, x: T.assert_greater(x, 0.0), [1.0, 2.0], [1.0, 0.0]),
    (lambda T, x: T.assert_greater_equal(x, 0.0), [0.0, 2.0], [-1.0, 2.0]),
    (lambda T, x: T.assert_none_equal(x, 1.0), [0.0, 2.0], [1.0, 2.0]),
    (lambda T, x: T.assert_negative(x), [-1.0, -2.0], [-1.0, 0.0]),
    (lambda T, x: T.assert_non_positive(x), [0.0, -2.0], [0.5, 0.0]),
    (lambda T, x: T.assert_near(x, [1.0, 2.0], atol=0.1), [1.05, 1.95], [1.0, 2.2]),
    (lambda T, x: T.debugging.assert_greater(x, [0.0, 1.0]), [1.0, 2.0], [1.0, 1.0]),
]


def _outcomes(T):
    out = []
    for make, good, bad in CASES:
        with T.Graph().as_default():
            x = T.placeholder(T.float32, [2])
            check = make(T, x)
            with T.Session() as s:
                s.run(check, {x: good})
                try:
                    s.run(check, {x: bad})
                    out.append("passed")
                except T.errors.InvalidArgumentError:
                    out.append("raised")
    return out


def test_runtime_checks():
    assert _outcomes(tf) == ["raised"] * len(CASES)


def test_runtime_checks_match_tensorflow():
    tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tft = tensorflow.compat.v1
    tft.disable_eager_execution()
    assert _outcomes(tft) == _outcomes(tf)


def test_static_decisions_and_ensure_shape():
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match="x > y did not hold"):
            tf.assert_greater(tf.constant([1, 2]), 2)
        with pytest.raises(tf.errors.InvalidArgumentError, match="must have rank at least 2"):
            tf.assert_rank_at_least(tf.constant([1, 2]), 2)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"must have rank in \[0, 2\]"):
            tf.assert_rank_in(tf.constant([1, 2]), [0, 2])
        with pytest.raises(TypeError, match="integer type"):
            tf.assert_integer(tf.constant([1.0]))
        with pytest.raises(TypeError, match="must be of type int64"):
            tf.assert_type(tf.constant([1]), tf.int64)
        with pytest.raises(ValueError, match="Expected scalar"):
            tf.assert_scalar(tf.constant([1]))
        s0 = tf.constant(3)
        assert tf.assert_scalar(s0) is s0
        assert tf.assert_integer(tf.constant([1])).type == "NoOp"
        unknown = tf.placeholder(tf.float32)
        at_least = tf.assert_rank_at_least(unknown, 2)
        rank_in = tf.assert_rank_in(unknown, [1, 3])
        p = tf.placeholder(tf.float32, [None, None])
        e = tf.ensure_shape(p, [None, 3])
        assert e.shape.as_list() == [None, 3]
        with pytest.raises(ValueError, match="not compatible"):
            tf.ensure_shape(tf.zeros([2, 2]), [2, 3])
        g = tf.gradients(tf.reduce_sum(e * 2.0), p)[0]
        with tf.Session() as s:
            s.run(at_least, {unknown: np.zeros((1, 2, 3))})
            with pytest.raises(tf.errors.InvalidArgumentError):
                s.run(at_least, {unknown: np.zeros(3)})
            s.run(rank_in, {unknown: np.zeros(3)})
            with pytest.raises(tf.errors.InvalidArgumentError):
                s.run(rank_in, {unknown: np.zeros((2, 2))})
            np.testing.assert_array_equal(s.run(g, {p: np.ones((2, 3))}), np.full((2, 3), 2.0))
            with pytest.raises(tf.errors.InvalidArgumentError, match="not compatible with expected shape"):
                s.run(e, {p: np.ones((2, 4))})
