"""tf.math.multiply_no_nan, reciprocal_no_nan, xdivy, xlog1py, is_non_decreasing,
is_strictly_increasing, reduce_euclidean_norm, unsorted_segment_sqrt_n, accumulate_n and the
arg_max / arg_min / floor_div aliases (graph/ops/nan_safe_ops.py): values at the special
points, gradients against finite differences, and everything against TensorFlow where it
is installed."""

import numpy as np
import pytest

import collflow.compat.v1 as tf
from gradcheck import Case, check_case
from tf_peer import run_in_both

X = np.array([0.0, 1.5, -2.0, 0.0, np.inf, np.nan], np.float32)
Y = np.array([0.0, 2.0, 0.0, -3.0, 0.0, 0.0], np.float32)


def _program(T):
    x, y = T.constant(X), T.constant(Y)
    xs, ys = T.constant([0.0, 1.5, -2.0, 0.5]), T.constant([0.0, 2.0, -0.5, 3.0])
    out = [T.math.multiply_no_nan(x, y), T.math.reciprocal_no_nan(T.constant([0.0, 4.0, -0.5])),
           T.math.xdivy(xs, ys), T.math.xlog1py(xs, ys), T.math.xdivy(T.constant(0.0), T.constant(0.0)),
           T.math.is_non_decreasing([1, 1, 2]), T.math.is_strictly_increasing([1, 1, 2]),
           T.math.is_strictly_increasing([[1, 2], [3, 4]]), T.math.is_non_decreasing(T.constant([], T.float32)),
           T.math.reduce_euclidean_norm(T.constant([[3.0, 4.0], [5.0, 12.0]]), 1),
           T.math.reduce_euclidean_norm(T.constant([[3, 4], [1, 1]]), 1, keepdims=True),
           T.math.unsorted_segment_sqrt_n(T.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]),
                                          [0, 0, 2, -1], 4),
           T.accumulate_n([T.constant([1.0, 2.0]), T.constant([3.0, 4.0]), T.constant([5.0, 6.0])]),
           T.arg_max([[1, 3], [4, 2]], 1), T.arg_min([[1, 3], [4, 2]], 0), T.floor_div(7, -2)]
    # gradients at the special points: x == 0 for xdivy/xlog1py, y == 0 for multiply_no_nan
    a, b = T.constant([0.0, 1.5, -2.0, 0.5]), T.constant([0.0, 2.0, -0.5, 3.0])
    w = T.constant([1.0, 2.0, 3.0, 4.0])
    for f in (T.math.multiply_no_nan, T.math.xdivy, T.math.xlog1py):
        out.extend(T.gradients(T.reduce_sum(f(a, b) * w), [a, b]))
    return out


def test_values_at_the_special_points():
    with tf.Graph().as_default(), tf.Session() as s:
        r = s.run(_program(tf))
    np.testing.assert_array_equal(r[0], [0.0, 3.0, 0.0, -0.0, 0.0, 0.0])  # inf * 0 and nan * 0: 0
    np.testing.assert_array_equal(r[1], [0.0, 0.25, -2.0])
    np.testing.assert_allclose(r[2], [0.0, 0.75, 4.0, 1.0 / 6.0], rtol=1e-6)
    assert r[4] == 0.0
    assert [bool(v) for v in r[5:9]] == [True, False, True, True]
    np.testing.assert_allclose(r[9], [5.0, 13.0])
    np.testing.assert_array_equal(r[10], [[5], [1]])  # integers: the root's integer part
    np.testing.assert_allclose(r[11], [[4 / np.sqrt(2), 6 / np.sqrt(2)], [0, 0], [5, 6], [0, 0]], rtol=1e-6)
    np.testing.assert_array_equal(r[12], [9.0, 12.0])
    assert r[13].tolist() == [1, 0] and r[14].tolist() == [0, 1] and r[15] == -4
    gx, gy = r[16], r[17]  # multiply_no_nan: d/dx = w * y (0 where y == 0), d/dy = w * x
    np.testing.assert_allclose(gx, [0.0, 4.0, -1.5, 12.0])
    np.testing.assert_allclose(gy, [0.0, 3.0, -6.0, 2.0])
    assert r[18][0] == 0.0 and r[19][0] == 0.0 and r[20][0] == 0.0 and r[21][0] == 0.0  # x == 0: both 0


def test_values_and_gradients_match_tensorflow():
    ours, theirs = run_in_both(_program)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, (k, a, b)
        np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=str(k))


# (MulNoNan, an op of its own, has its cases in gradtable_more.py with every op's)
CASES = [
    Case("RealDiv", lambda x, y: tf.math.xdivy(x, y), [(3, 4), (3, 4)], low=0.5, high=2.0, id="xdivy"),
    Case("Log1p", lambda x, y: tf.math.xlog1py(x, y), [(3, 4), (3, 4)], low=0.1, high=2.0, id="xlog1py"),
    Case("Sqrt", lambda x: tf.math.reduce_euclidean_norm(x, 1), [(3, 4)], low=0.5, high=2.0, id="euclidean_norm"),
    Case("Sqrt", lambda x: tf.math.unsorted_segment_sqrt_n(x, [1, 0, 1], 3), [(3, 4)], id="unsorted_segment_sqrt_n"),
    Case("Select", lambda x: tf.math.reciprocal_no_nan(x), [(5,)], low=0.5, high=2.0, id="reciprocal_no_nan"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_gradients_match_finite_differences(case):
    check_case(case)
