"""Reductions over axes known only at run time (TF1: a non-constant reduction_indices), by hand.

TF's rules: the values are the reductions over the fed axes (negative axes count from the
end; an empty list reduces nothing); the static shape is the input's rank with unknown dims
under keepdims, unknown without; an axis out of range or given twice is an
InvalidArgumentError when the step runs; reduce_max/min share the gradient between tied
maxima; reduce_prod's is the product of the others; constant axes still build the static ops."""
import numpy as np
import pytest

import collflow as cf


def _graph(keep=False, fn=cf.reduce_sum, dtype=cf.float64):
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(dtype, None)
        a = cf.placeholder(cf.int32, [None])
        y = fn(x, axis=a, keepdims=keep)
    return g, x, a, y


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("keep", [False, True])
def test_values_and_static_shapes(name, keep):
    x = np.random.default_rng(0).normal(size=(2, 3, 4))
    g, xp, ap, y = _graph(keep, getattr(cf, "reduce_" + name))
    assert y.op.type == "ReduceDynamic"
    assert y.shape.ndims is None  # the input's rank is unknown too
    with cf.Session(graph=g) as s:
        for axes in ([0, 2], [-1], [], [2, 0, 1]):
            want = getattr(np, name)(x, axis=tuple(axes), keepdims=keep)
            np.testing.assert_allclose(s.run(y, {xp: x, ap: axes}), want, rtol=1e-12)


def test_known_rank_keepdims_gives_the_rank():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (2, None, 4))
        a = cf.placeholder(cf.int32, [None])
        assert cf.reduce_sum(x, axis=a, keepdims=True).shape.as_list() == [None, None, None]
        assert cf.reduce_sum(x, axis=a).shape.ndims is None
        assert cf.reduce_sum(x, axis=[1]).op.type == "Sum"  # constant axes: the static op


def test_all_but_the_batch_axis_of_an_unknown_rank():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, None)
        per_example = cf.reduce_sum(cf.square(x), axis=cf.range(1, cf.rank(x)))
        grad = cf.gradients(cf.reduce_sum(per_example), x)[0]
    v = np.arange(24.0).reshape(2, 3, 4)
    with cf.Session(graph=g) as s:
        pe, gr = s.run([per_example, grad], {x: v})
    np.testing.assert_array_equal(pe, (v ** 2).sum(axis=(1, 2)))
    np.testing.assert_array_equal(gr, 2 * v)


def test_max_gradient_is_shared_between_ties():
    g, x, a, y = _graph(False, cf.reduce_max)
    with g.as_default():
        grad = cf.gradients(y, x)[0]
    v = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]])
    with cf.Session(graph=g) as s:
        np.testing.assert_array_equal(s.run(grad, {x: v, a: [1]}), [[0, 0.5, 0.5], [1, 0, 0]])


def test_prod_gradient_is_the_product_of_the_others_zeros_included():
    """TF's reduce_prod gradient: each entry gets the product of the other entries of its group
    (exclusive products from both ends, so a zero in the group gives the right values)."""
    g, x, a, y = _graph(False, cf.reduce_prod)
    with g.as_default():
        grad = cf.gradients(y, x)[0]
    v = np.array([[[2.0, 0.0], [3.0, 5.0]], [[1.0, 4.0], [0.0, 0.0]]])  # 2 x 2 x 2
    want = np.empty_like(v)
    for i in range(2):  # axes [0, 2]: group j holds v[:, j, :]
        for j in range(2):
            for k in range(2):
                others = [v[ii, j, kk] for ii in range(2) for kk in range(2) if (ii, kk) != (i, k)]
                want[i, j, k] = np.prod(others)
    with cf.Session(graph=g) as s:
        np.testing.assert_array_equal(s.run(grad, {x: v, a: [0, -1]}), want)


def test_bool_reductions():
    g, x, a, y = _graph(False, cf.reduce_all, cf.bool)
    with cf.Session(graph=g) as s:
        np.testing.assert_array_equal(s.run(y, {x: [[True, False], [True, True]], a: [1]}), [False, True])


@pytest.mark.parametrize("axes,msg", [([3], r"Invalid reduction dimension \(3 for input with 3 dimension"),
                                      ([-4], r"Invalid reduction dimension \(-4"),
                                      ([1, -2], "duplicate dimension: 1")])
def test_bad_axes_fail_when_the_step_runs(axes, msg):
    g, x, a, y = _graph()
    with cf.Session(graph=g) as s, pytest.raises(cf.errors.InvalidArgumentError, match=msg):
        s.run(y, {x: np.ones((2, 3, 4)), a: axes})


def test_axes_must_be_integers():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, None)
        with pytest.raises(ValueError, match="int32/int64"):
            cf.reduce_sum(x, axis=cf.placeholder(cf.float32, [None]))


# -- transpose and expand_dims with run-time arguments (graph/ops/dynamic_layout_ops.py) -----------


def test_transpose_by_a_run_time_permutation_and_its_gradient():
    """TF: the rank is kept (dims unknown); tf's batch/time swap of an unknown rank works; the
    gradient transposes back by the inverse permutation."""
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (2, None, 4))
        p = cf.placeholder(cf.int32, [3])
        y = cf.transpose(x, p)
        assert y.op.type == "TransposeDynamic" and y.shape.as_list() == [None, None, None]
        xu = cf.placeholder(cf.float64, None)
        swap = cf.transpose(xu, cf.concat([[1, 0], cf.range(2, cf.rank(xu))], 0))
        gx = cf.gradients(cf.reduce_sum(y * cf.constant(np.arange(24.0).reshape(4, 2, 3))), x)[0]
    v = np.random.default_rng(0).normal(size=(2, 3, 4))
    with cf.Session(graph=g) as s:
        yv, sv, gv = s.run([y, swap, gx], {x: v, p: [2, 0, 1], xu: v})
    np.testing.assert_array_equal(yv, v.transpose(2, 0, 1))
    np.testing.assert_array_equal(sv, v.transpose(1, 0, 2))
    np.testing.assert_array_equal(gv, np.arange(24.0).reshape(4, 2, 3).transpose(1, 2, 0))


@pytest.mark.parametrize("perm,msg", [([0, 1], "expects a vector of size 3. But input.1. is a vector of size 2"),
                                      ([0, 0, 1], "2 is missing from {0,0,1}"),
                                      ([0, 1, 3], r"3 is out of range \[0 .. 3\)")])
def test_bad_run_time_permutations_are_tfs_errors(perm, msg):
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, None)
        p = cf.placeholder(cf.int32, [None])
        y = cf.transpose(x, p)
    with cf.Session(graph=g) as s, pytest.raises(cf.errors.InvalidArgumentError, match=msg):
        s.run(y, {x: np.ones((2, 3, 4)), p: perm})


def test_expand_dims_at_a_run_time_axis():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (2, 3))
        a = cf.placeholder(cf.int32, [])
        y = cf.expand_dims(x, a)
        assert y.op.type == "ExpandDimsDynamic" and y.shape.ndims is None  # TF: unknown
        gx = cf.gradients(cf.reduce_sum(y * 3.0), x)[0]
    v = np.arange(6.0).reshape(2, 3)
    with cf.Session(graph=g) as s:
        assert s.run(y, {x: v, a: -1}).shape == (2, 3, 1)
        assert s.run(y, {x: v, a: 1}).shape == (2, 1, 3)
        np.testing.assert_array_equal(s.run(gx, {x: v, a: 0}), np.full((2, 3), 3.0))
        with pytest.raises(cf.errors.InvalidArgumentError, match="Tried to expand dim index 3 for tensor with 2"):
            s.run(y, {x: v, a: 3})


@pytest.mark.parametrize("shape", [None, (2, None, 2)])
def test_static_prod_gradient_with_unknown_sizes_and_zeros(shape):
    """reduce_prod over constant axes of an input whose rank or reduced sizes are unknown when
    the graph is built: TF's gradient (the product of the others) is finite at zeros; collflow
    divided y by x there (NaN) before it used the run-time form."""
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, shape)
        y = cf.reduce_prod(x, axis=[0, 1])
        assert y.op.type == "Prod"
        grad = cf.gradients(cf.reduce_sum(y), x)[0]
    v = np.array([[[2.0, 1.0], [0.0, 3.0]], [[5.0, 0.0], [7.0, 2.0]]])
    want = np.empty_like(v)
    for i in range(2):
        for j in range(2):
            for k in range(2):
                want[i, j, k] = np.prod([v[ii, jj, k] for ii in range(2) for jj in range(2) if (ii, jj) != (i, j)])
    with cf.Session(graph=g) as s:
        np.testing.assert_array_equal(s.run(grad, {x: v}), want)
