"""tf.sort, tf.argsort, tf.roll and tf.repeat (graph/ops/rearrange_ops.py) against NumPy, with
their gradients and errors.  (Against TensorFlow: tests/tf1/test_vs_tensorflow_more.py.)"""
import numpy as np
import pytest

import collflow as cf

RNG = np.random.default_rng(11)


def _run(fetches, feeds=None):
    with cf.Session() as s:
        return s.run(fetches, feeds)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("direction", ["ASCENDING", "DESCENDING"])
def test_sort_and_argsort_match_numpy_with_ties(axis, direction):
    x = np.round(RNG.standard_normal((4, 5, 3)))  # many ties
    with cf.Graph().as_default():
        xp = cf.placeholder(cf.float64, x.shape)
        s = cf.sort(xp, axis=axis, direction=direction)
        i = cf.argsort(xp, axis=axis, direction=direction)
        (g,) = cf.gradients(cf.reduce_sum(s * np.arange(s.shape.num_elements()).reshape(x.shape)), [xp])
        sv, iv, gv = _run([s, i, g], {xp: x})
    key = x if direction == "ASCENDING" else -x
    order = np.argsort(key, axis=axis, kind="stable")  # equal values: the lower index first
    np.testing.assert_array_equal(iv, order)
    np.testing.assert_array_equal(sv, np.take_along_axis(x, order, axis))
    w = np.arange(x.size).reshape(x.shape)  # d sum(sort(x) * w) / dx: w routed back through the order
    want = np.zeros_like(x)
    np.put_along_axis(want, order, w, axis)
    np.testing.assert_array_equal(gv, want)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.uint32, np.int8])
def test_integer_sort_takes_every_value_of_the_type(dtype):
    """-x would overflow at the type's minimum (and for unsigned types): sort reverses the order
    with ~x, as TF."""
    info = np.iinfo(dtype)
    x = np.array([[3, info.min, info.max, 0, info.min, 1]], dtype)
    with cf.Graph().as_default():
        xp = cf.placeholder(cf.as_dtype(dtype), (1, 6))
        xu = cf.placeholder(cf.as_dtype(dtype))  # unknown rank: along the last axis
        out = _run([cf.sort(xp), cf.argsort(xp), cf.sort(xp, direction="DESCENDING"), cf.sort(xu)],
                   {xp: x, xu: x})
    order = np.argsort(x, axis=-1, kind="stable")
    np.testing.assert_array_equal(out[0], np.sort(x))
    np.testing.assert_array_equal(out[1], order)
    np.testing.assert_array_equal(out[2], np.sort(x)[:, ::-1])
    np.testing.assert_array_equal(out[3], np.sort(x))
    assert out[0].dtype == dtype


def test_roll_matches_numpy_and_its_gradient_rolls_back():
    x = RNG.standard_normal((3, 4, 5))
    with cf.Graph().as_default():
        xp = cf.placeholder(cf.float64, x.shape)
        r = cf.roll(xp, [2, -1, 7], [0, 2, 2])
        (g,) = cf.gradients(r, [xp], grad_ys=[cf.constant(x)])
        rv, gv = _run([r, g], {xp: x})
    np.testing.assert_array_equal(rv, np.roll(x, (2, 6), (0, 2)))
    np.testing.assert_array_equal(gv, np.roll(x, (-2, -6), (0, 2)))


def test_repeat_matches_numpy_and_sums_its_gradient():
    x = RNG.standard_normal((2, 3))
    with cf.Graph().as_default():
        xp = cf.placeholder(cf.float64, x.shape)
        a = cf.repeat(xp, 2)
        b = cf.repeat(xp, [3, 0, 1], axis=1)
        (g,) = cf.gradients(cf.reduce_sum(b), [xp])
        av, bv, gv = _run([a, b, g], {xp: x})
    np.testing.assert_array_equal(av, np.repeat(x, 2))
    np.testing.assert_array_equal(bv, np.repeat(x, [3, 0, 1], axis=1))
    np.testing.assert_array_equal(gv, np.tile([3.0, 0.0, 1.0], (2, 1)))


def test_rearrange_errors():
    with cf.Graph().as_default():
        x = cf.placeholder(cf.float32, (2, None))
        n = cf.placeholder(cf.int32, ())
        with pytest.raises(cf.UnimplementedError, match="shift must be known when the graph is built"):
            cf.roll(x, n, 0)
        with pytest.raises(cf.UnimplementedError, match="size of axis 1 must be known"):
            cf.roll(x, 1, 1)
        with pytest.raises(cf.InvalidArgumentError, match="same length"):
            cf.roll(x, [1, 2], [0])
        with pytest.raises(cf.InvalidArgumentError, match="axis 3 is out of range"):
            cf.sort(x, axis=3)
        with pytest.raises(cf.InvalidArgumentError, match="direction must be"):
            cf.sort(x, direction="UP")
        with pytest.raises(cf.InvalidArgumentError, match="3 repeat counts for an axis of size 2"):
            cf.repeat(x, [1, 2, 3], axis=0)
        with pytest.raises(cf.InvalidArgumentError, match=">= 0"):
            cf.repeat(x, -1, axis=0)
