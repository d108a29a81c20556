"""Array ops against NumPy: values, static shapes, edge cases and error messages.

Gradients are checked against finite differences in gradtable_array.py; here only what the
gradient *is* (IndexedSlices for gathers) and how it is shaped.
"""
import numpy as np
import pytest

import collflow as cf
from collflow.graph.ops import array_ops as A

RNG = np.random.default_rng(0)
X345 = np.arange(60, dtype=np.float32).reshape(3, 4, 5)


def run(fetches, feed=None):
    g = fetches_graph(fetches)
    with cf.Session(graph=g, config={"check_outputs": True}) as sess:
        return sess.run(fetches, feed)


def fetches_graph(f):
    if isinstance(f, (list, tuple)):
        return fetches_graph(f[0])
    if isinstance(f, dict):
        return fetches_graph(next(iter(f.values())))
    return f.graph


def dyn(x, rank_known=True):
    """A tensor with x's value and no static shape."""
    x = cf.convert_to_tensor(x)
    return cf.placeholder_with_default(x, [None] * x.shape.rank if rank_known else None)


def scalar(v, dtype=None):
    return A._scalar(v, dtype)


def assert_same(got, want):
    want = np.asarray(want)
    # as in TensorFlow 1.x, a 0-d fetch is a NumPy scalar, anything else an ndarray
    assert isinstance(got, np.generic if want.ndim == 0 else np.ndarray), type(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


# -- creation --------------------------------------------------------------------------------


def test_zeros_ones_fill(graph):
    x = cf.placeholder(cf.float32, (None, 3))
    z, o = cf.zeros((2, 3), cf.int32), cf.ones([4])
    zs, os_ = cf.zeros(cf.shape(x)), cf.ones(cf.shape(x), cf.float64)
    f1, f2 = cf.fill([2, 2], 7), cf.fill(cf.constant([3]), scalar(1.5))
    assert zs.shape == (None, 3) and f1.shape == (2, 2) and f2.shape == (3,)
    r = run([z, o, zs, os_, f1, f2], {x: np.ones((2, 3), np.float32)})
    assert_same(r[0], np.zeros((2, 3), np.int32))
    assert_same(r[1], np.ones(4, np.float32))
    assert_same(r[2], np.zeros((2, 3), np.float32))
    assert_same(r[3], np.ones((2, 3), np.float64))
    assert_same(r[4], np.full((2, 2), 7, np.int32))
    assert_same(r[5], np.full(3, 1.5, np.float32))
    zl, ol = cf.zeros_like(x), cf.ones_like(x, dtype=cf.int64)
    r = run([zl, ol], {x: np.ones((1, 3), np.float32)})
    assert_same(r[0], np.zeros((1, 3), np.float32))
    assert_same(r[1], np.ones((1, 3), np.int64))


def test_fill_errors(graph):
    with pytest.raises(cf.InvalidArgumentError, match="non-negative"):
        cf.fill([2, -1], 1.0)
    with pytest.raises(cf.InvalidArgumentError, match="must be a scalar"):
        cf.fill([2], cf.constant(np.ones(2, np.float32)))
    with pytest.raises(ValueError, match="fully known"):
        cf.zeros((None, 2))
    d = cf.placeholder(cf.int64, (2,))
    f = cf.fill(d, scalar(0.0))
    assert f.shape == (None, None)
    assert cf.fill(cf.stack([cf.placeholder(cf.int64, ()), scalar(3, cf.int64)]), 1.0).shape == (None, 3)
    with pytest.raises(cf.InvalidArgumentError, match="non-negative"):
        run(f, {d: np.array([1, -2])})


def test_where(graph):
    c = cf.constant(np.array([True, False, True]))
    x, y = cf.constant(np.ones((2, 3), np.float32)), cf.constant(np.zeros(3, np.float32))
    w = cf.where(c, x, y)
    assert w.shape == (2, 3)
    assert_same(run(w), np.where([True, False, True], np.ones((2, 3), np.float32), np.zeros(3, np.float32)))
    with pytest.raises(cf.InvalidArgumentError, match="condition must be bool"):
        cf.where(x, x, x)


def test_one_hot(graph):
    idx = np.array([[0, 2, -1], [3, 1, 4]], np.int32)  # -1 and 4 (= depth) give all-off rows
    i = cf.constant(idx)
    eye = np.eye(4, dtype=np.float32)
    want = np.where((idx[..., None] == np.arange(4)), 1.0, 0.0).astype(np.float32)
    ys = [cf.one_hot(i, 4), cf.one_hot(i, 4, axis=0), cf.one_hot(i, 4, axis=1),
          cf.one_hot(i, 4, on_value=5, off_value=-1, dtype=cf.int32)]
    assert [y.shape for y in ys] == [(2, 3, 4), (4, 2, 3), (2, 4, 3), (2, 3, 4)]
    r = run(ys)
    assert_same(r[0], want)
    assert_same(r[1], np.moveaxis(want, -1, 0))
    assert_same(r[2], np.moveaxis(want, -1, 1))
    assert_same(r[3], np.where(want > 0, 5, -1).astype(np.int32))
    assert r[0][0, 0].tolist() == eye[0].tolist()
    with pytest.raises(cf.InvalidArgumentError, match="indices must be integers"):
        cf.one_hot(cf.constant([1.0]), 3)
    with pytest.raises(cf.InvalidArgumentError, match="axis 3 is out of range"):
        cf.one_hot(i, 4, axis=3)


# -- shapes and reshaping ----------------------------------------------------------------------


def test_reshape(graph):
    x = cf.placeholder(cf.float32, (None, 4, 5))
    a, b = cf.reshape(x, [-1, 10]), cf.reshape(x, cf.constant([2, -1, 5]))
    y = cf.placeholder(cf.float32, (None, 2, 10))
    c = cf.reshape(x, cf.shape(y))  # a target shape known only in part: Reshape with -1
    y2 = cf.placeholder(cf.float32, (None, None))
    d = cf.reshape(x, cf.shape(y2))  # known only at run time
    assert a.shape == (None, 10) and b.shape == (2, None, 5) and c.shape == (None, 2, 10)
    assert c.op.type == "Reshape" and d.op.type == "ReshapeLike" and d.shape == (None, None)
    r = run([a, b, c, d], {x: X345[:2], y: np.zeros((2, 2, 10), np.float32), y2: np.zeros((8, 5), np.float32)})
    assert_same(r[0], X345[:2].reshape(-1, 10))
    assert_same(r[1], X345[:2].reshape(2, -1, 5))
    assert_same(r[2], X345[:2].reshape(2, 2, 10))
    assert_same(r[3], X345[:2].reshape(8, 5))
    with pytest.raises(cf.InvalidArgumentError, match="cannot reshape a tensor of 60 elements"):
        cf.reshape(cf.constant(X345), [7, -1])
    with pytest.raises(cf.InvalidArgumentError, match="at most one -1"):
        cf.reshape(x, [-1, -1])
    with pytest.raises(cf.InvalidArgumentError, match=r"cannot reshape a tensor of shape \(1, 4, 5\)"):
        run(cf.reshape(x, [3, -1]), {x: X345[:1]})
    # a target computed at run time (TF1 allows it): rank known, entries where constant
    target = cf.placeholder(cf.int32, (2,))
    e = cf.reshape(x, target)
    f = cf.reshape(x, [cf.shape(x)[0] * 2, -1])
    assert e.op.type == "ReshapeDynamic" and e.shape == (None, None) and f.shape == (None, None)
    re, rf = run([e, f], {x: X345[:2], target: np.array([4, 10], np.int32)})
    assert_same(re, X345[:2].reshape(4, 10))
    assert_same(rf, X345[:2].reshape(4, -1))
    with pytest.raises(cf.InvalidArgumentError, match="cannot reshape"):
        run(e, {x: X345[:2], target: np.array([7, 7], np.int32)})


def test_reshape_like_and_rows(graph):
    x, like = dyn(X345), dyn(np.zeros((5, 12), np.float32))
    r = A.reshape_like(x, like)
    assert r.op.type == "ReshapeLike" and r.shape == (None, None)
    assert_same(run(r), X345.reshape(5, 12))
    assert A.reshape_like(x, cf.zeros((6, 10))).op.type == "Reshape"  # static when known
    with pytest.raises(cf.InvalidArgumentError, match=r"cannot reshape a tensor of shape \(3, 4, 5\) to shape \(2, 1\)"):
        run(A.reshape_like(x, dyn(np.zeros((2, 1), np.float32))))
    rows = A.reshape_rows(cf.constant(X345), cf.constant(np.zeros((3, 4), np.int32)))
    assert rows.shape == (12, 5)
    assert_same(run(rows), X345.reshape(12, 5))


def test_shape_size_rank(graph):
    x = cf.placeholder(cf.float32, None)
    r = run([cf.shape(x), cf.size(x), cf.rank(x), cf.shape(x, out_type=cf.int64)], {x: X345})
    assert_same(r[0], np.array([3, 4, 5], np.int32))
    assert_same(r[1], np.array(60, np.int32))
    assert_same(r[2], np.array(3, np.int32))
    assert_same(r[3], np.array([3, 4, 5], np.int64))


def test_transpose(graph):
    x = cf.placeholder(cf.float32, (None, 4, 5))
    a, b = cf.transpose(x, [2, 0, 1]), cf.transpose(x)
    c = cf.transpose(dyn(X345, False), [1, 2, 0])
    assert a.shape == (5, None, 4) and b.shape == (5, 4, None) and c.shape == (None, None, None)
    r = run([a, b, c], {x: X345})
    assert_same(r[0], X345.transpose(2, 0, 1))
    assert_same(r[1], X345.T)
    assert_same(r[2], X345.transpose(1, 2, 0))
    with pytest.raises(cf.InvalidArgumentError, match="not a permutation"):
        cf.transpose(x, [0, 0, 1])
    with pytest.raises(cf.InvalidArgumentError, match="has 2 entries for a tensor of rank 3"):
        cf.transpose(x, [1, 0])
    with pytest.raises(cf.InvalidArgumentError, match="does not match a tensor of shape"):
        run(cf.transpose(dyn(X345, False), [1, 0]))


def test_expand_dims_squeeze(graph):
    x = cf.placeholder(cf.float32, (None, 4, 5))
    e0, e1, e2 = cf.expand_dims(x, 0), cf.expand_dims(x, -1), cf.expand_dims(x, 2)
    assert (e0.shape, e1.shape, e2.shape) == ((1, None, 4, 5), (None, 4, 5, 1), (None, 4, 1, 5))
    y = cf.constant(np.zeros((1, 3, 1, 2), np.float32))
    s0, s1, s2 = cf.squeeze(y), cf.squeeze(y, [2]), cf.squeeze(y, -2)
    assert (s0.shape, s1.shape, s2.shape) == ((3, 2), (1, 3, 2), (1, 3, 2))
    assert cf.squeeze(x).shape.rank is None  # unknown dims might be 1
    r = run([e0, e1, e2, s0, s1, cf.squeeze(dyn(y))], {x: X345})
    assert_same(r[0], X345[None])
    assert_same(r[1], X345[..., None])
    assert_same(r[2], X345[:, :, None])
    assert r[3].shape == (3, 2) and r[4].shape == (1, 3, 2) and r[5].shape == (3, 2)
    with pytest.raises(cf.InvalidArgumentError, match=r"axis 4 is out of range \[-4, 4\)"):
        cf.expand_dims(x, 4)
    with pytest.raises(cf.InvalidArgumentError, match="cannot squeeze axis 1 .* its size is 3"):
        cf.squeeze(y, [1])
    with pytest.raises(cf.InvalidArgumentError, match=r"cannot squeeze axis 0 of shape \(3, 4, 5\)"):
        run(cf.squeeze(x, [0]), {x: X345})


def test_broadcast_to_and_like(graph):
    x = cf.constant(np.arange(3, dtype=np.float32).reshape(3, 1))
    b = cf.broadcast_to(x, [2, 3, 4])
    assert b.shape == (2, 3, 4)
    assert_same(run(b), np.broadcast_to(np.arange(3, dtype=np.float32).reshape(3, 1), (2, 3, 4)))
    bl = A.broadcast_like(x, dyn(np.zeros((3, 2), np.float32)))
    assert_same(run(bl), np.broadcast_to(np.arange(3, dtype=np.float32).reshape(3, 1), (3, 2)))
    with pytest.raises(cf.InvalidArgumentError, match=r"cannot broadcast shape \(3, 1\) to \(2, 4\)"):
        cf.broadcast_to(x, [2, 4])
    with pytest.raises(cf.InvalidArgumentError, match="lower-rank"):
        cf.broadcast_to(x, [3])


def test_tile(graph):
    x = cf.placeholder(cf.float32, (None, 4, 5))
    t = cf.tile(x, [2, 1, 3])
    assert t.shape == (None, 4, 15)
    assert_same(run(t, {x: X345}), np.tile(X345, (2, 1, 3)))
    assert_same(run(cf.tile(x, [0, 1, 1]), {x: X345}), np.zeros((0, 4, 5), np.float32))
    with pytest.raises(cf.InvalidArgumentError, match="one entry per dimension"):
        cf.tile(x, [2, 2])
    tg = A.tile_grad(cf.constant(np.tile(X345, (2, 1, 3))), dyn(X345), [2, 1, 3])
    assert_same(run(tg), 6 * X345)


# -- joining and splitting -----------------------------------------------------------------


def test_concat(graph):
    a = cf.placeholder(cf.float32, (None, 2))
    b = cf.constant(np.ones((3, 5), np.float32))
    c = cf.concat([a, b], 1)
    assert c.shape == (3, 7)  # the unknown dim is learned from b
    d = cf.concat([a, a], -2)
    assert d.shape == (None, 2)
    av = np.arange(6, dtype=np.float32).reshape(3, 2)
    r = run([c, d], {a: av})
    assert_same(r[0], np.concatenate([av, np.ones((3, 5), np.float32)], 1))
    assert_same(r[1], np.concatenate([av, av], 0))
    assert cf.concat([b], 0) is b
    with pytest.raises(cf.InvalidArgumentError, match=r"dimension 1 differs between inputs: 2 vs 5"):
        cf.concat([a, b], 0)
    with pytest.raises(cf.InvalidArgumentError, match="different ranks"):
        cf.concat([a, cf.constant(np.ones(3, np.float32))], 0)
    with pytest.raises(TypeError, match=r"types \[float32, float64\] that don't all match"):  # TF's TypeError
        cf.concat([a, cf.constant(np.ones((1, 2), np.float64))], 0)
    with pytest.raises(cf.InvalidArgumentError, match="axis 2 is out of range"):
        cf.concat([a, a], 2)


def test_stack_unstack(graph):
    x = cf.placeholder(cf.float32, (3, None))
    s0, s1, s2 = cf.stack([x, x * 2.0]), cf.stack([x, x], axis=1), cf.stack([x, x], axis=-1)
    assert (s0.shape, s1.shape, s2.shape) == ((2, 3, None), (3, 2, None), (3, None, 2))
    u = cf.unstack(x)
    assert len(u) == 3 and u[0].shape == (None,)
    u1 = cf.unstack(x, num=4, axis=1)
    xv = np.arange(12, dtype=np.float32).reshape(3, 4)
    r = run([s0, s1, s2, u, u1], {x: xv})
    assert_same(r[0], np.stack([xv, 2 * xv]))
    assert_same(r[1], np.stack([xv, xv], 1))
    assert_same(r[2], np.stack([xv, xv], -1))
    for i in range(3):
        assert_same(r[3][i], xv[i])
    for i in range(4):
        assert_same(r[4][i], xv[:, i])
    with pytest.raises(ValueError, match="cannot infer num"):
        cf.unstack(x, axis=1)
    with pytest.raises(cf.InvalidArgumentError, match="expected 5 entries along axis 1"):
        run(cf.unstack(x, num=5, axis=1), {x: xv})
    with pytest.raises(cf.InvalidArgumentError, match="same shape"):
        cf.stack([x, cf.constant(np.ones((2, 2), np.float32))])
    with pytest.raises(cf.InvalidArgumentError, match="same shape"):
        run(cf.stack([x, dyn(np.ones((2, 2), np.float32))]), {x: xv})


def test_iteration_and_len(graph):
    x = cf.placeholder(cf.float32, (3, None))
    rows = list(x)
    assert len(rows) == 3 == len(x)
    xv = np.arange(6, dtype=np.float32).reshape(3, 2)
    for got, want in zip(run(rows, {x: xv}), xv):
        assert_same(got, want)
    with pytest.raises(TypeError, match="first dimension is not known"):
        iter(cf.placeholder(cf.float32, (None, 3)))


def test_split(graph):
    x = cf.placeholder(cf.float32, (None, 6))
    a = cf.split(x, 3, axis=1)
    b = cf.split(x, [1, -1, 2], axis=-1)
    c = cf.split(x, 2)  # along the unknown dim
    assert [t.shape for t in a] == [(None, 2)] * 3
    assert [t.shape for t in b] == [(None, 1), (None, 3), (None, 2)]
    assert [t.shape for t in c] == [(None, 6)] * 2
    xv = np.arange(24, dtype=np.float32).reshape(4, 6)
    r = run([a, b, c], {x: xv})
    for got, want in zip(r[0], np.split(xv, 3, 1)):
        assert_same(got, want)
    for got, want in zip(r[1], np.split(xv, [1, 4], 1)):
        assert_same(got, want)
    for got, want in zip(r[2], np.split(xv, 2, 0)):
        assert_same(got, want)
    with pytest.raises(cf.InvalidArgumentError, match=r"size 6\) cannot be split evenly into 4 pieces"):
        cf.split(x, 4, axis=1)
    with pytest.raises(cf.InvalidArgumentError, match="do not add up"):
        cf.split(x, [2, 2], axis=1)
    with pytest.raises(cf.InvalidArgumentError, match="at most one -1"):
        cf.split(x, [-1, -1], axis=1)
    with pytest.raises(cf.InvalidArgumentError, match="cannot be split evenly into 2 pieces"):
        run(c, {x: xv[:3]})
    with pytest.raises(cf.InvalidArgumentError, match="do not add up"):
        run(cf.split(x, [1, 7], axis=0), {x: xv})


def test_split_like(graph):
    g = cf.constant(np.arange(10, dtype=np.float32).reshape(2, 5))
    p = A.split_like(g, [dyn(np.zeros((2, 2), np.float32)), dyn(np.zeros((2, 3), np.float32))], 1)
    assert p[0].op.type == "SplitLike"
    r = run(p)
    assert_same(r[0], np.arange(10, dtype=np.float32).reshape(2, 5)[:, :2])
    assert_same(r[1], np.arange(10, dtype=np.float32).reshape(2, 5)[:, 2:])
    # static sizes: a plain SplitV that does not keep the pieces' tensors alive
    assert A.split_like(g, [cf.zeros((2, 1)), cf.zeros((2, 4))], 1)[0].op.type == "SplitV"


def test_identity_n(graph):
    a, b = cf.constant(np.ones(2, np.float32)), cf.constant(np.arange(3))
    ia, ib = cf.identity_n([a, b])
    assert ia.op is ib.op and ia.shape == (2,) and ib.dtype == b.dtype
    r = run([ia, ib])
    assert_same(r[1], np.arange(3).astype(b.dtype.np))


# -- slicing and indexing --------------------------------------------------------------------

KEYS = [
    1, -1, (0, 2), (0, 2, 3), (-3, -4, -5), np.int64(2),
    np.s_[1:], np.s_[::-1], np.s_[1:3, ::2], np.s_[:, -1, ::-2], np.s_[::2, 1:-1, 4:0:-2],
    np.s_[..., 1], np.s_[1, ...], np.s_[..., None], np.s_[None, 1, ..., None, 2:], np.s_[:, None, :, None],
    np.s_[2, 1:3, ...], np.s_[5:10], np.s_[-100:100], np.s_[0, 0, 0, ...], (),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_getitem_matches_numpy(graph, key):
    x = cf.placeholder(cf.float32, (3, 4, 5))
    xd = cf.placeholder(cf.float32, (None, 4, None))
    xu = cf.placeholder(cf.float32, None)
    want = np.asarray(X345[key])
    y, yd, yu = x[key], xd[key], xu[key]
    assert y.shape == want.shape  # a fully known input gives a fully known output
    assert yd.shape.rank == want.ndim and yd.shape.is_compatible_with(want.shape)
    assert yu.shape.rank is None or yu.shape.is_compatible_with(want.shape)
    for got in run([y, yd, yu], {x: X345, xd: X345, xu: X345}):
        assert_same(got, want)


def test_getitem_tensor_index(graph):
    x = cf.placeholder(cf.float32, (3, 4, 5))
    i, j = cf.placeholder(cf.int32, ()), cf.placeholder(cf.int64, ())
    a, b, c = x[i], x[1:, j, ::2], x[..., i, None]
    assert (a.shape, b.shape, c.shape) == ((4, 5), (2, 3), (3, 4, 1))
    r = run([a, b, c], {x: X345, i: 2, j: 3})
    assert_same(r[0], X345[2])
    assert_same(r[1], X345[1:, 3, ::2])
    assert_same(r[2], X345[..., 2, None])
    with pytest.raises(cf.InvalidArgumentError, match=r"index 4 is out of range \[0, 3\)"):
        run(a, {x: X345, i: 4})


def test_getitem_errors(graph):
    x = cf.placeholder(cf.float32, (3, 4))
    with pytest.raises(cf.InvalidArgumentError, match="too many indices"):
        x[1, 2, 3]
    with pytest.raises(cf.InvalidArgumentError, match="index 3 is out of bounds"):
        x[3]
    with pytest.raises(cf.InvalidArgumentError, match="index -5 is out of bounds"):
        x[:, -5]
    with pytest.raises(ValueError, match="step cannot be zero"):
        x[::0]
    with pytest.raises(ValueError, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(TypeError, match="boolean"):
        x[True]
    with pytest.raises(TypeError, match="cf.gather"):
        x[[0, 1]]
    with pytest.raises(TypeError, match="cf.gather"):
        x[cf.constant(np.array([0, 1], np.int32))]
    with pytest.raises(TypeError, match="slice bounds"):
        x[:1.5]
    with pytest.raises(TypeError, match="step must be a Python int"):
        x[:cf.placeholder(cf.int32, ()):cf.placeholder(cf.int32, ())]  # (a constant step is folded: fine)
    with pytest.raises(cf.InvalidArgumentError, match="scalar integer"):
        x[:cf.placeholder(cf.float32, ())]
    xd = cf.placeholder(cf.float32, (None, 4))
    with pytest.raises(cf.InvalidArgumentError, match="index 3 is out of bounds"):
        run(xd[3], {xd: np.zeros((2, 4), np.float32)})


def test_getitem_scalar_result_is_a_numpy_scalar(graph):
    # TensorFlow 1.x's Session.run returns a 0-d value as a NumPy scalar (np.float32 here)
    y = cf.constant(X345)[1, 2, 3]
    got = run(y)
    assert type(got) is np.float32 and got.shape == () and got == X345[1, 2, 3]


def test_slice(graph):
    x = cf.placeholder(cf.float32, (3, None, 5))
    a, b = cf.slice(x, [1, 0, 2], [2, -1, 3]), cf.slice(x, [0, 1, 0], [1, 2, -1])
    assert a.shape == (2, None, 3) and b.shape == (1, 2, 5)
    r = run([a, b], {x: X345})
    assert_same(r[0], X345[1:3, :, 2:5])
    assert_same(r[1], X345[0:1, 1:3, :])
    with pytest.raises(cf.InvalidArgumentError, match="begin 2 \\+ size 4 exceeds dimension 2"):
        cf.slice(x, [0, 0, 2], [1, 1, 4])
    with pytest.raises(cf.InvalidArgumentError, match="one entry per dimension"):
        cf.slice(x, [0], [1])
    with pytest.raises(cf.InvalidArgumentError, match="begin must be >= 0"):
        cf.slice(x, [0, -1, 0], [1, 1, 1])
    with pytest.raises(cf.InvalidArgumentError, match="out of range for shape"):
        run(cf.slice(x, [0, 2, 0], [1, 3, 1]), {x: X345})  # NumPy would clamp; TensorFlow errors


def test_strided_slice_grad_values(graph):
    g = cf.constant(np.ones((2, 3), np.float32))
    y = A.strided_slice_grad(g, dyn(np.zeros((4, 5), np.float32)), (slice(1, 3), slice(None, None, 2)))
    want = np.zeros((4, 5), np.float32)
    want[1:3, ::2] = 1
    assert_same(run(y), want)


@pytest.mark.parametrize("mode", ["CONSTANT", "reflect", "Symmetric"])
def test_pad(graph, mode):
    x = cf.placeholder(cf.float32, (3, None, 5))
    pads = [[1, 2], [0, 3], [2, 2]]
    y = cf.pad(x, pads, mode)
    assert y.shape == (6, None, 9)
    kw = {"mode": mode.lower()} if mode != "CONSTANT" else {}
    assert_same(run(y, {x: X345}), np.pad(X345, pads, **kw))


def test_pad_constant_values_and_errors(graph):
    x = cf.placeholder(cf.int32, (2, None))
    xv = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert_same(run(cf.pad(x, np.array([[0, 1], [1, 0]]), constant_values=9), {x: xv}),
                np.pad(xv, [[0, 1], [1, 0]], constant_values=9))
    with pytest.raises(ValueError, match="mode must be one of"):
        cf.pad(x, [[0, 0], [0, 0]], "WRAP")
    with pytest.raises(cf.InvalidArgumentError, match="one \\[before, after\\] pair per dimension"):
        cf.pad(x, [[1, 1]])
    with pytest.raises(cf.InvalidArgumentError, match="non-negative"):
        cf.pad(x, [[1, -1], [0, 0]])
    with pytest.raises(cf.InvalidArgumentError, match="REFLECT paddings of dimension 0 must be at most 1"):
        cf.pad(x, [[2, 0], [0, 0]], "REFLECT")
    with pytest.raises(cf.InvalidArgumentError, match="SYMMETRIC paddings .* of dimension 1 must be at most 3"):
        run(cf.pad(x, [[0, 0], [4, 0]], "SYMMETRIC"), {x: xv})


def test_mirror_pad_grad_is_the_adjoint():
    # <pad(x), g> == <x, pad_grad(g)> for random x, g: the folding is exactly MirrorPad's transpose
    for mode in ("REFLECT", "SYMMETRIC"):
        g = cf.Graph()
        with g.as_default():
            pads = [[2, 1], [0, 3], [1, 1]]
            xv, gv = RNG.normal(size=(4, 5, 3)), RNG.normal(size=(7, 8, 5))
            lhs = cf.reduce_sum(cf.pad(cf.constant(xv), pads, mode) * cf.constant(gv))
            rhs = cf.reduce_sum(cf.constant(xv) * A.mirror_pad_grad(cf.constant(gv), pads, mode))
            a, b = run([lhs, rhs])
            np.testing.assert_allclose(a, b, rtol=1e-12)


# -- gathering and scattering --------------------------------------------------------------


def test_gather_values_and_shapes(graph):
    p = cf.placeholder(cf.float32, (3, None, 5))
    i2 = cf.constant(np.array([[2, 0], [1, 1]], np.int32))
    a, b, c = cf.gather(p, i2), cf.gather(p, i2, axis=2), cf.gather(p, scalar(1), axis=-1)
    assert (a.shape, b.shape, c.shape) == ((2, 2, None, 5), (3, None, 2, 2), (3, None))
    assert c.op.get_attr("axis") == 2  # negative axes are normalized when the rank is known
    r = run([a, b, c], {p: X345})
    assert_same(r[0], X345[[[2, 0], [1, 1]]])
    assert_same(r[1], np.take(X345, [[2, 0], [1, 1]], axis=2))
    assert_same(r[2], X345[..., 1])
    with pytest.raises(cf.InvalidArgumentError, match="indices must be integers"):
        cf.gather(p, cf.constant([0.5]))
    with pytest.raises(cf.InvalidArgumentError, match="axis 3 out of range"):
        cf.gather(p, i2, axis=3)


@pytest.mark.parametrize("bad", [3, -1])
def test_gather_out_of_range_index(graph, bad):
    p = cf.placeholder(cf.float32, (3, 4))
    i = cf.placeholder(cf.int32, (None,))
    with pytest.raises(cf.InvalidArgumentError, match=rf"index {bad} is out of range \[0, 3\)"):
        run(cf.gather(p, i), {p: np.zeros((3, 4), np.float32), i: np.array([0, bad], np.int32)})


def test_gather_gradient_is_indexed_slices(graph):
    w = cf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3), name="w")
    idx = cf.constant(np.array([[3, 0], [3, 1]], np.int32))
    loss = cf.reduce_sum(cf.gather(w, idx) * 2.0)
    (gw,) = cf.gradients(loss, [w])
    assert isinstance(gw, cf.IndexedSlices)
    assert gw.shape == (4, 3) and gw.values.shape == (4, 3) and gw.indices.shape == (4,)
    with cf.Session(graph=graph) as sess:
        sess.run(cf.global_variables_initializer())
        v = sess.run(gw)
        dense = sess.run(cf.convert_to_tensor(gw))
    assert_same(v.indices, np.array([3, 0, 3, 1], np.int32))
    assert_same(v.values, np.full((4, 3), 2.0, np.float32))
    assert_same(v.dense_shape, np.array([4, 3], np.int32))  # int32, as TF1's
    assert_same(dense, np.array([[2, 2, 2], [2, 2, 2], [0, 0, 0], [4, 4, 4]], np.float32))


def test_gather_gradient_unknown_inner_dims(graph):
    p = cf.placeholder(cf.float32, (None, None, None))
    idx = cf.constant(np.array([[1, 1], [0, 1]], np.int32))
    (gp,) = cf.gradients(cf.reduce_sum(cf.gather(p, idx)), [p])
    assert isinstance(gp, cf.IndexedSlices) and gp.values.op.type == "ReshapeRows"
    v = run(gp, {p: X345[:2]})
    assert_same(v.values, np.ones((4, 4, 5), np.float32))
    assert_same(v.indices, np.array([1, 1, 0, 1], np.int32))
    assert_same(v.dense_shape, np.array([2, 4, 5], np.int32))  # int32, as TF1's


@pytest.mark.parametrize("shape,idx", [((5, 0), [1, 2, 1]), ((0, 3), []), ((4, 0, 2), [3])])
def test_gather_gradient_densifies_empty_rows(graph, shape, idx):
    """Zero-width rows (or no rows) give an all-zero dense gradient of the params' shape."""
    p = cf.placeholder(cf.float32, (None,) * len(shape))
    (gp,) = cf.gradients(cf.reduce_sum(cf.gather(p, np.array(idx, np.int32))), [p])
    assert_same(run(cf.convert_to_tensor(gp), {p: np.zeros(shape, np.float32)}), np.zeros(shape, np.float32))


def test_scatter_like(graph):
    u = np.arange(2 * 2 * 2 * 2, dtype=np.float32).reshape(2, 2, 2, 2)
    idx = np.array([[1, 0], [1, 1]])
    y = A.scatter_like(cf.constant(u), cf.constant(idx.astype(np.int32)), dyn(np.zeros((2, 3, 2), np.float32)), 1)
    want = np.zeros((2, 3, 2), np.float32)
    for a in range(2):
        for b in range(2):
            want[:, idx[a, b]] += u[:, a, b]
    assert_same(run(y), want)


def test_ops_do_not_write_into_their_inputs(graph):
    # views are returned where possible; the fed array must come back untouched
    x = cf.placeholder(cf.float32, (3, 4, 5))
    xv = X345.copy()
    ys = [x[1:, ::2], cf.transpose(x), cf.reshape(x, [-1]), cf.split(x, 2, axis=1)[0], cf.unstack(x)[1],
          cf.squeeze(cf.expand_dims(x, 0)), cf.slice(x, [0, 1, 1], [1, 1, 1]), cf.pad(x, [[1, 1]] * 3, "SYMMETRIC")]
    ys = [y * 2.0 for y in ys]
    run(ys, {x: xv})
    assert_same(xv, X345)


def test_zeros_like_of_strings_is_empty_strings():
    """TF's ZerosLike of a string tensor gives b"" (the kernel and the plan-time fold alike)."""
    import collflow.compat.v1 as tf1
    with tf1.Graph().as_default():
        p = tf1.placeholder(tf1.string, [2])
        with tf1.Session() as s:
            assert s.run(tf1.zeros_like(p), {p: ["a", "b"]}).tolist() == [b"", b""]
            assert s.run(tf1.zeros_like(tf1.constant(["a", "bc", "d"]))).tolist() == [b"", b"", b""]


def test_indexing_with_none_adds_an_axis():
    # t[None] and t[tf.newaxis] (None) are NumPy's new axis, as in TF, not a missing key
    g = cf.Graph()
    with g.as_default():
        c = cf.constant([1.0, 2.0, 3.0])
        a, b = c[None], c[None, :, None]
        assert a.shape.as_list() == [1, 3] and b.shape.as_list() == [1, 3, 1]
        with cf.Session(graph=g) as s:
            av, bv = s.run([a, b])
    np.testing.assert_array_equal(av, [[1.0, 2.0, 3.0]])
    assert bv.shape == (1, 3, 1)


def test_where_static_shape_merges_its_operands_as_tf1():
    # TF1's Select takes x, y (and a same-rank condition) of one shape: its static shape is their
    # merge, [1, 3] from x [1, 3] and y [None, 3] (where_v2 broadcasts: [None, 3])
    g = cf.Graph()
    with g.as_default():
        c = cf.placeholder(cf.bool, [3])
        x = cf.placeholder(cf.float32, [1, 3])
        y = cf.placeholder(cf.float32, [None, 3])
        assert cf.where(c[None], x, y).shape.as_list() == [1, 3]
        assert cf.where(c[None], y, y).shape.as_list() == [1, 3]
        assert cf.where_v2(c[None], x, y).shape.as_list() == [None, 3]
        r = cf.where(cf.placeholder(cf.bool, [None]), y, y)  # rows picked by a vector condition
        assert r.shape.as_list() == [None, 3]
        with cf.Session(graph=g) as s:
            out = s.run(cf.where(c[None], x, y), {c: [True, False, True], x: [[1, 2, 3]], y: [[7, 8, 9]]})
    np.testing.assert_array_equal(out, [[1, 8, 3]])
