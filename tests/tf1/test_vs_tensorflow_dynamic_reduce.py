"""Reductions, transpose and expand_dims over run-time axes against TensorFlow 1.x's graph
mode: random ranks, axes fed through placeholders (keepdims both ways, unknown input rank),
values, gradients and static shapes, and TF's errors for bad run-time axes."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tft = pytest.importorskip("tensorflow.compat.v1")
tft.disable_eager_execution()

import collflow.compat.v1 as cft  # noqa: E402

OPS = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_all", "reduce_any"]


def _run(tf, op, x, axes, keep, known_rank):
    g = tf.Graph()
    with g.as_default():
        dt = tf.bool if op in ("reduce_all", "reduce_any") else tf.float64
        xp = tf.placeholder(dt, x.shape if known_rank else None)
        ap = tf.placeholder(tf.int32, [None])
        y = getattr(tf, op)(xp, axis=ap, keepdims=keep)
        shape = y.shape.as_list() if y.shape.ndims is not None else None
        grad = None
        if dt == tf.float64:
            grad = tf.gradients(tf.reduce_sum(y * y), xp)[0]
        with tf.Session(graph=g) as s:
            out = s.run([y] + ([grad] if grad is not None else []), {xp: x, ap: axes})
    return shape, out


@pytest.mark.parametrize("seed", range(40))
def test_random_reductions_over_fed_axes_equal_tensorflow(seed):
    r = np.random.default_rng(seed)
    rank = int(r.integers(1, 5))
    shape = tuple(int(d) for d in r.integers(1, 4, rank))
    op = OPS[seed % len(OPS)]
    x = r.normal(size=shape)
    if op in ("reduce_all", "reduce_any"):
        x = x > 0
    k = int(r.integers(0, rank + 1))
    axes = r.permutation(rank)[:k].astype(np.int32)
    axes = np.where(r.random(k) < 0.3, axes - rank, axes).astype(np.int32)  # some negative
    keep, known = bool(r.integers(0, 2)), bool(r.integers(0, 2))
    want_shape, want = _run(tft, op, x, axes, keep, known)
    got_shape, got = _run(cft, op, x, axes, keep, known)
    assert got_shape == want_shape, (op, shape, axes, keep, known)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("axes", [[3], [-4], [1, 1]])
def test_bad_axes_are_invalid_argument_errors_as_in_tensorflow(axes):
    x = np.ones((2, 3, 4))
    for tf in (tft, cft):
        g = tf.Graph()
        with g.as_default():
            xp = tf.placeholder(tf.float64, None)
            ap = tf.placeholder(tf.int32, [None])
            y = tf.reduce_sum(xp, axis=ap)
            with tf.Session(graph=g) as s, pytest.raises(tf.errors.InvalidArgumentError) as ei:
                s.run(y, {xp: x, ap: axes})
        msg = str(ei.value)
        assert ("duplicate" in msg) if len(set(axes)) < len(axes) else ("Invalid reduction dimension" in msg), msg


def _run_layout(tf, kind, x, arg, known_rank):
    g = tf.Graph()
    with g.as_default():
        xp = tf.placeholder(tf.float64, x.shape if known_rank else None)
        ap = tf.placeholder(tf.int32, [None] if kind == "transpose" else [])
        y = tf.transpose(xp, ap) if kind == "transpose" else tf.expand_dims(xp, ap)
        shape = y.shape.as_list() if y.shape.ndims is not None else None
        grad = tf.gradients(tf.reduce_sum(y * y * y), xp)[0]
        with tf.Session(graph=g) as s:
            out = s.run([y, grad], {xp: x, ap: arg})
    return shape, out


@pytest.mark.parametrize("seed", range(20))
def test_random_transposes_and_expand_dims_over_fed_arguments_equal_tensorflow(seed):
    r = np.random.default_rng(100 + seed)
    rank = int(r.integers(1, 5))
    x = r.normal(size=tuple(int(d) for d in r.integers(1, 4, rank)))
    kind = "transpose" if seed % 2 else "expand_dims"
    arg = r.permutation(rank).astype(np.int32) if kind == "transpose" else np.int32(r.integers(-rank - 1, rank + 1))
    known = bool(r.integers(0, 2))
    want_shape, want = _run_layout(tft, kind, x, arg, known)
    got_shape, got = _run_layout(cft, kind, x, arg, known)
    assert got_shape == want_shape, (kind, x.shape, arg, known)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def _loop_program(tf, xv):
    """Run-time tile multiples, paddings, reduction axes, expand_dims axis, transpose perm and
    one_hot depth inside a while_loop and a cond, with the gradient through all of them."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, (None, 3))
        n = tf.shape(x)[0]

        def body(i, acc):
            t = tf.tile(x[:1], [i + 1, 1])
            p = tf.pad(t, [[0, n - i - 1], [0, 0]])
            s = tf.reduce_sum(p * x, axis=tf.range(1, tf.rank(p)))
            e = tf.expand_dims(s, tf.rank(s))
            return i + 1, acc + tf.transpose(tf.tile(e, [1, 2]), tf.stack([1, 0]))
        zeros = tf.zeros([2, 1], tf.float64) + tf.zeros([1, n], tf.float64)
        _, out = tf.while_loop(lambda i, a: i < n, body, [tf.constant(0), zeros])
        c = tf.cond(tf.reduce_sum(x) > 0, lambda: tf.one_hot(tf.argmax(x, 1), n, dtype=tf.float64),
                    lambda: tf.zeros([n, n], tf.float64))
        loss = tf.reduce_sum(out * out) + tf.reduce_sum(tf.matmul(c, x))
        grad = tf.gradients(loss, x)[0]
        with tf.Session(graph=g) as s:
            return s.run([out, c, grad], {x: xv})


@pytest.mark.parametrize("n", [1, 3, 5])
def test_run_time_arguments_inside_a_while_loop_and_a_cond_equal_tensorflow(n):
    xv = np.random.default_rng(n).normal(size=(n, 3))
    for a, b in zip(_loop_program(cft, xv), _loop_program(tft, xv)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
