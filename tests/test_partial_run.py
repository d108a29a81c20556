"""Session.partial_run_setup / partial_run (TF1): pieces of one step, feeds after fetches,
shared ops run once, TF1's rules on what may be fed and fetched; against TF where installed."""
import numpy as np
import pytest

import collflow.compat.v1 as cf
from tf_peer import tensorflow_v1


def _program(T):
    a = T.placeholder(T.float32, [])
    b = T.placeholder(T.float32, [])
    c = T.placeholder(T.float32, [])
    r1 = T.add(a, b)
    r2 = T.multiply(r1, c)
    return a, b, c, r1, r2


def test_pieces_of_one_step():
    with cf.Graph().as_default():
        a, b, c, r1, r2 = _program(cf)
        with cf.Session() as s:
            h = s.partial_run_setup([r1, r2], [a, b, c])
            v1 = s.partial_run(h, r1, feed_dict={a: 1.0, b: 2.0})
            v2 = s.partial_run(h, r2, feed_dict={c: v1})
    assert v1 == 3.0 and v2 == 9.0


def test_shared_random_and_stateful_ops_run_once():
    with cf.Graph().as_default():
        x = cf.random_uniform([3], seed=1)
        counter = cf.Variable(0, name="counter")
        bumped = cf.assign_add(counter, 1)
        first = x * 1.0 + cf.cast(bumped, cf.float32) * 0.0
        c = cf.placeholder(cf.float32, [])
        second = x * c + cf.cast(bumped, cf.float32)
        with cf.Session() as s:
            s.run(counter.initializer)
            h = s.partial_run_setup([first, second], [c])
            v1 = s.partial_run(h, first)
            v2 = s.partial_run(h, second, feed_dict={c: 2.0})
            assert s.run(counter) == 1                   # the assign ran once across both pieces
    np.testing.assert_allclose(v2, v1 * 2.0 + 1.0, rtol=1e-6)   # the same random draw in both


def test_tf1s_rules():
    with cf.Graph().as_default():
        a, b, c, r1, r2 = _program(cf)
        with cf.Session() as s:
            h = s.partial_run_setup([r1], [a, b])
            with pytest.raises(cf.errors.InvalidArgumentError, match="not specified in partial_run_setup"):
                s.partial_run(h, r2, feed_dict={a: 1.0, b: 1.0})
            with pytest.raises(cf.errors.InvalidArgumentError, match="feed .* not specified"):
                s.partial_run(h, r1, feed_dict={c: 1.0})
            assert s.partial_run(h, r1, feed_dict={a: 1.0, b: 1.0}) == 2.0
            with pytest.raises(cf.errors.InvalidArgumentError, match="already fetched"):
                s.partial_run(h, r1)
            with pytest.raises(cf.errors.InvalidArgumentError, match="not a handle"):
                s.partial_run("nope", r1)


def test_same_as_tensorflow():
    tf = tensorflow_v1()
    got = []
    for T in (cf, tf):
        with T.Graph().as_default():
            a, b, c, r1, r2 = _program(T)
            with T.Session() as s:
                h = s.partial_run_setup([r1, r2], [a, b, c])
                v1 = s.partial_run(h, r1, feed_dict={a: 1.5, b: 2.0})
                got.append((v1, s.partial_run(h, r2, feed_dict={c: 4.0})))
    np.testing.assert_allclose(got[0], got[1])
