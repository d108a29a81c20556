"""Size arguments computed at run time, as TF1 takes them (no TensorFlow needed).

TF1 programs pass tensors where a size is expected: tf.tile(x, [tf.shape(x)[0], 1]),
tf.pad(x, [[0, n], [1, 1]]), tf.one_hot(i, depth_tensor), tf.broadcast_to(t, [n, 3]),
tf.random_normal([n, 2]), tf.reverse(x, axis_tensor).  TF packs such a list into one int
tensor read when the op runs; the static shape keeps what TF's shape inference knows (the rank,
and each entry the graph determines).  Expected values come from NumPy; the static shapes and
error messages are TF 2.21 compat.v1's (tests/tf1/test_vs_tensorflow_dynamic_shapes.py checks
them against TF itself).
"""
import numpy as np
import pytest

import collflow as tf
import collflow.compat.v1 as v1
from collflow.errors import InvalidArgumentError

from test_device_discipline import ARTIFACTS, strict_gpu  # noqa: F401  (the simulated-device fixture)


def _run(fetches, feed):
    with tf.Session() as s:
        return s.run(fetches, feed)


@pytest.fixture
def batch():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, (None, 3))
        yield g, x, tf.shape(x)[0]


X = np.arange(6, dtype=np.float32).reshape(2, 3)


# -- tile ------------------------------------------------------------------------------------


def test_tile_by_the_batch_size(batch):
    g, x, n = batch
    r = tf.placeholder(tf.float32, (1, 3))
    a = tf.tile(x, [n, 1])
    b = tf.tile(r, tf.stack([n, 2]))     # seq2seq: a [1, d] tensor tiled to the batch
    c = tf.tile(r, [0, n])
    assert a.op.type == "TileDynamic"
    # TF's Tile shape: dims times the known multiples; 0 times anything is 0, 1 times d is d
    assert a.shape.as_list() == [None, 3] and b.shape.as_list() == [None, 6] and c.shape.as_list() == [0, None]
    va, vb, vc = _run([a, b, c], {x: X, r: X[:1]})
    np.testing.assert_array_equal(va, np.tile(X, (2, 1)))
    np.testing.assert_array_equal(vb, np.tile(X[:1], (2, 2)))
    assert vc.shape == (0, 6)


def test_tile_by_an_int_tensor_and_its_gradients():
    x = tf.placeholder(tf.float64, (2, 3))
    m = tf.placeholder(tf.int32, (None,))
    y = tf.tile(x, m)
    assert y.shape.as_list() == [None, None]
    w = np.arange(36, dtype=np.float64).reshape(6, 6)
    (gx,) = tf.gradients(tf.reduce_sum(y * w), [x])
    # d/dx of sum(tile(x) * w): the tiles of w summed back onto x
    xv = np.ones((2, 3))
    vy, vg = _run([y, gx], {x: xv, m: [3, 2]})
    np.testing.assert_array_equal(vy, np.tile(xv, (3, 2)))
    np.testing.assert_array_equal(vg, w.reshape(3, 2, 2, 3).sum(axis=(0, 2)))
    # the gradient is differentiable again (TF's tile gradient is): d/dw of sum(gx * v) = tile(v)
    v = tf.placeholder(tf.float64, (2, 3))
    wt = tf.placeholder(tf.float64, (None, None))
    (gx2,) = tf.gradients(tf.reduce_sum(y * wt), [x])
    (gw,) = tf.gradients(tf.reduce_sum(gx2 * v), [wt])
    vv = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(_run(gw, {x: xv, m: [3, 2], wt: w, v: vv}), np.tile(vv, (3, 2)))


def test_tile_bad_run_time_multiples():
    x = tf.placeholder(tf.float32, (None, 3))
    m = tf.placeholder(tf.int32, (None,))
    y = tf.tile(x, m)
    with pytest.raises(InvalidArgumentError, match=r"Expected multiples argument to be a vector of length 2 but "
                                                   r"got length 3"):
        _run(y, {x: X, m: [1, 2, 3]})
    with pytest.raises(InvalidArgumentError, match=r"Expected multiples\[1\] >= 0, but got -2"):
        _run(y, {x: X, m: [1, -2]})


def test_tile_static_multiples_keep_the_static_op(batch):
    g, x, n = batch
    c = tf.constant([[1.0, 2.0]])
    assert tf.tile(c, [tf.shape(c)[0] * 2, 1]).op.type == "Tile"  # the graph determines 2
    with pytest.raises(ValueError, match="multiples"):
        tf.tile(x, [n, 1, 1])  # three entries for a rank-2 input: a build-time error, as TF


# -- pad -------------------------------------------------------------------------------------


def test_pad_with_computed_paddings(batch):
    g, x, n = batch
    a = tf.pad(x, [[0, n], [1, 1]], constant_values=-1.0)
    p = tf.placeholder(tf.int32, (None, 2))
    b = tf.pad(x, p)
    c = tf.pad(x, [[n - 1, 0], [2, 1]], "REFLECT")
    d = tf.pad(x, p, mode="symmetric")
    assert a.op.type == "PadDynamic" and c.op.type == "MirrorPadDynamic"
    # TF restores each dimension whose two paddings the graph determines
    assert a.shape.as_list() == [None, 5] and b.shape.as_list() == [None, None]
    assert c.shape.as_list() == [None, 6] and d.shape.as_list() == [None, None]
    va, vb, vc, vd = _run([a, b, c, d], {x: X, p: [[1, 0], [0, 2]]})
    np.testing.assert_array_equal(va, np.pad(X, [[0, 2], [1, 1]], constant_values=-1))
    np.testing.assert_array_equal(vb, np.pad(X, [[1, 0], [0, 2]]))
    np.testing.assert_array_equal(vc, np.pad(X, [[1, 0], [2, 1]], mode="reflect"))
    np.testing.assert_array_equal(vd, np.pad(X, [[1, 0], [0, 2]], mode="symmetric"))


@pytest.mark.parametrize("mode", ["CONSTANT", "REFLECT", "SYMMETRIC"])
def test_pad_gradient_with_run_time_paddings(mode):
    x = tf.placeholder(tf.float64, (3, 4))
    p = tf.placeholder(tf.int32, (2, 2))
    y = tf.pad(x, p, mode)
    pads = [[1, 2], [2, 1]]
    w = np.random.default_rng(0).normal(size=(6, 7))
    (gx,) = tf.gradients(tf.reduce_sum(y * w), [x])
    # the gradient is the transpose of the padding map: each output position adds its weight
    # to the input position it copies (NumPy's pad of an index array says which)
    idx = np.arange(12).reshape(3, 4)
    src = (np.pad(idx, pads, constant_values=-1) if mode == "CONSTANT" else np.pad(idx, pads, mode=mode.lower()))
    want = np.zeros(12)
    np.add.at(want, src[src >= 0], w[src >= 0])
    np.testing.assert_allclose(_run(gx, {x: np.ones((3, 4)), p: pads}), want.reshape(3, 4))


def test_pad_bad_run_time_paddings():
    x = tf.placeholder(tf.float32, (None, 3))
    p = tf.placeholder(tf.int32, (None, 2))
    with pytest.raises(InvalidArgumentError, match=r"The first dimension of paddings must be the rank of inputs"
                                                   r"\[1,2\] \[2,3\]"):
        _run(tf.pad(x, p), {x: X, p: [[1, 1]]})
    with pytest.raises(InvalidArgumentError, match="Paddings must be non-negative: -1 0"):
        _run(tf.pad(x, p), {x: X, p: [[1, 1], [-1, 0]]})
    with pytest.raises(InvalidArgumentError, match="paddings must be less than the dimension size: 2, 0 not less "
                                                   "than 2"):
        _run(tf.pad(x, p, "REFLECT"), {x: X, p: [[2, 0], [0, 0]]})
    with pytest.raises(InvalidArgumentError, match="paddings must be no greater than the dimension size: 3, 0 "
                                                   "greater than 2"):
        _run(tf.pad(x, p, "SYMMETRIC"), {x: X, p: [[3, 0], [0, 0]]})


# -- one_hot ---------------------------------------------------------------------------------


def test_one_hot_with_a_depth_tensor(batch):
    g, x, n = batch
    idx = tf.constant([[0, 2], [5, -1]])
    a = tf.one_hot(idx, n + 1)
    b = tf.one_hot(idx, n + 1, on_value=5, off_value=-2, axis=0)
    assert a.op.type == "OneHotDynamic" and a.dtype == tf.float32 and b.dtype == tf.int32
    assert a.shape.as_list() == [2, 2, None] and b.shape.as_list() == [None, 2, 2]
    va, vb = _run([a, b], {x: X})
    want = (np.array([[0, 2], [5, -1]])[..., None] == np.arange(3)).astype(np.float32)  # out of range: all off
    np.testing.assert_array_equal(va, want)
    np.testing.assert_array_equal(vb, np.moveaxis(np.where(want > 0, 5, -2), -1, 0))
    # TF's OneHot has no gradient, not even for on/off values
    on = tf.placeholder(tf.float32, ())
    assert tf.gradients(tf.reduce_sum(tf.one_hot(idx, n, on_value=on)), [on]) == [None]


def test_one_hot_negative_run_time_depth():
    d = tf.placeholder(tf.int32, ())
    with pytest.raises(InvalidArgumentError, match="depth must be non-negative, got: -1"):
        _run(tf.one_hot([0, 1], d), {d: -1})


# -- broadcast_to ----------------------------------------------------------------------------


def test_broadcast_to_a_computed_shape(batch):
    g, x, n = batch
    t = tf.constant([1.0, 2.0, 3.0])
    a = tf.broadcast_to(t, [n, 3])
    b = tf.broadcast_to(t, [n, n])          # TF: an input dim over 1 is the output's: [None, 3]
    m = tf.placeholder(tf.int32, (2,))
    c = tf.broadcast_to(x, m)
    assert a.op.type == "BroadcastToDynamic"
    assert a.shape.as_list() == [None, 3] and b.shape.as_list() == [None, 3] and c.shape.as_list() == [None, 3]
    va, vc = _run([a, c], {x: X[:1], m: [4, 3]})
    np.testing.assert_array_equal(va, np.broadcast_to([1, 2, 3], (1, 3)))
    np.testing.assert_array_equal(vc, np.broadcast_to(X[:1], (4, 3)))
    (gx,) = tf.gradients(tf.reduce_sum(c * c), [x])  # d/dx sum(bcast(x)^2) = 2 x * 4 rows
    np.testing.assert_array_equal(_run(gx, {x: X[:1], m: [4, 3]}), 8 * X[:1])


def test_broadcast_to_bad_run_time_shapes():
    x = tf.placeholder(tf.float32, (None, 3))
    m = tf.placeholder(tf.int32, (None,))
    y = tf.broadcast_to(x, m)
    with pytest.raises(InvalidArgumentError, match=r"Incompatible shapes: \[2,3\] vs. \[2,2\]"):
        _run(y, {x: X, m: [2, 2]})
    with pytest.raises(InvalidArgumentError, match=r"Rank of input \(2\) must be no greater than rank of output "
                                                   r"shape \(1\)"):
        _run(y, {x: X, m: [3]})


# -- random constructors, reverse ------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda n: tf.random_normal([n, 2]), lambda n: tf.random_uniform([n, 2]),
    lambda n: tf.truncated_normal([n, 2]), lambda n: tf.random_gamma([n, 2], 1.0),
    lambda n: tf.random_poisson(1.0, [n, 2]),
    lambda n: v1.random.stateless_normal([n, 2], seed=[1, 2]),
    lambda n: v1.random.stateless_uniform([n, 2], seed=[1, 2]),
    lambda n: v1.random.stateless_truncated_normal([n, 2], seed=[1, 2]),
], ids=["normal", "uniform", "truncated", "gamma", "poisson", "stateless_normal", "stateless_uniform",
        "stateless_truncated"])
def test_random_shapes_holding_a_tensor(batch, make):
    g, x, n = batch
    y = make(n)  # TF packs [n, 2] into one int tensor
    assert y.shape.as_list() == [None, 2]
    assert _run(y, {x: np.zeros((5, 3), np.float32)}).shape == (5, 2)


def test_random_shape_with_none_is_a_clear_error(batch):
    g, x, n = batch
    with pytest.raises(InvalidArgumentError, match="fully known shape"):
        tf.random_normal([n, None])


def test_reverse_along_a_computed_axis(batch):
    g, x, n = batch
    a = tf.reverse(x, [n - n])
    ax = tf.placeholder(tf.int32, (None,))
    b = tf.reverse(x, ax)
    assert a.op.type == "ReverseDynamic" and a.shape.as_list() == [None, 3]
    va, vb = _run([a, b], {x: X, ax: [0, -1]})
    np.testing.assert_array_equal(va, X[::-1])
    np.testing.assert_array_equal(vb, X[::-1, ::-1])
    (gx,) = tf.gradients(tf.reduce_sum(b * tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])), [x])
    np.testing.assert_array_equal(_run(gx, {x: X, ax: [1]}), [[3, 2, 1], [6, 5, 4]])
    with pytest.raises(InvalidArgumentError, match=r"'axis'\[0\] = 2 is out of valid range \[0, 1"):
        _run(b, {x: X, ax: [2]})
    with pytest.raises(InvalidArgumentError, match="axis 0 specified more than once"):
        _run(b, {x: X, ax: [0, -2]})


def test_reverse_with_a_determined_axis_tensor_stays_static():
    c = tf.constant([[1.0, 2.0]])
    assert tf.reverse(c, [tf.rank(c) - 1]).op.type == "ReverseV2"


# -- device placement ------------------------------------------------------------------------


def test_size_arguments_stay_on_the_host(strict_gpu):  # noqa: F811
    """TF's HostMemory: the multiples/paddings/depth/shape/axis are read on the host, so a
    GPU session copies nothing but its feeds, and the results are device arrays."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, (None, 3))
        n = tf.shape(x)[0]
        outs = [tf.tile(x, [n, 1]), tf.pad(x, [[0, n], [1, 1]]), tf.broadcast_to(x[:1], [n, 3]),
                tf.one_hot(tf.constant([0, 1]), n), tf.reverse(x, [n - n])]
        loss = tf.add_n([tf.reduce_sum(o) for o in outs])
        (gx,) = tf.gradients(loss, [x])
    with tf.Session(graph=g, config={"device": "/gpu:0"}) as s:
        v = s.run(outs + [gx], {x: X})
        plan = s.plan_for(outs + [gx], {x: X})
        dyn = [op for op in g.get_operations() if op.type.endswith("Dynamic") or op.type.endswith("DynamicGrad")]
        assert dyn and {plan.placement[op.name] for op in dyn} == {"/gpu:0"}
        copies = [c for c in plan.ops if c.type == "_DeviceCopy"]
        assert {c.src.op.type for c in copies} <= {"Placeholder"}, [c.name for c in copies]
    np.testing.assert_array_equal(v[0], np.tile(X, (2, 1)))
    # per row: tile (2 copies) + pad + broadcast of row 0 (2 rows) + reverse
    np.testing.assert_array_equal(v[-1], [[2 + 1 + 2 + 1] * 3, [2 + 1 + 0 + 1] * 3])
    leaks = {t: sorted(n)[:3] for t, n in strict_gpu.items() if t not in ARTIFACTS}
    assert not leaks, f"kernels on the GPU returned host arrays: {leaks}"


def test_keras_backend_tile_takes_a_multiples_tensor():
    """K.tile passes a tensor n through to tf.tile as TF's backend does (it used to list() it)."""
    from collflow.keras import backend as K
    x = tf.placeholder(tf.float32, (None, 3))
    m = tf.placeholder(tf.int32, (2,))
    y = K.tile(x, m)
    assert y.shape.as_list() == [None, None]
    np.testing.assert_array_equal(_run(y, {x: X, m: [2, 1]}), np.tile(X, (2, 1)))


@pytest.mark.parametrize("run_time", [False, True])
def test_pad_gives_no_gradient_for_its_constant_values(run_time):
    """TF's PadV2 gradient: the input's gradient is the centre of g; constant_values gets None
    (tf.gradients returns None for it), static and run-time paddings alike."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, (2, 3))
        c = tf.placeholder(tf.float64, ())
        pads = tf.placeholder_with_default(np.int32([[1, 0], [2, 3]]), [2, 2]) if run_time else [[1, 0], [2, 3]]
        y = tf.pad(x, pads, constant_values=c)
        assert y.op.type == ("PadDynamic" if run_time else "PadV2")
        gx, gc = tf.gradients(tf.reduce_sum(y * y), [x, c])
    assert gc is None
    xv = np.arange(6.0).reshape(2, 3)
    with tf.Session(graph=g) as s:
        np.testing.assert_array_equal(s.run(gx, {x: xv, c: 5.0}), 2 * xv)
