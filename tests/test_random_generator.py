"""tf.random.experimental.Generator (TF 1.15's stateful RNG) without TensorFlow: the state's
layout and how each draw advances it (closed form: 256 counter steps per value, 128-bit
carry), the draws' streams against the Philox words computed directly, statistics of each
distribution, determinism of reset/skip/split/make_seeds, Saver round trips, the global
generator, shapes/dtypes and the errors."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.kernels import philox as P
from collflow.kernels import stateless_random_kernels as SRK

R = tf.random.experimental


def _session_run(build, *, n=1):
    """Builds `build() -> fetches` in a fresh graph, initializes, runs the fetches n times."""
    with tf.Graph().as_default():
        fetches = build()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            return [s.run(fetches) for _ in range(n)]


def _kc(state):
    c0, c1, k = (int(x) & (2 ** 64 - 1) for x in state)
    return (k & 0xFFFFFFFF, k >> 32), (c0 & 0xFFFFFFFF, c0 >> 32, c1 & 0xFFFFFFFF, c1 >> 32)


def test_names_and_algorithm():
    assert {"Algorithm", "Generator", "create_rng_state", "get_global_generator", "set_global_generator"} <= set(dir(R))
    assert [a.value for a in R.Algorithm] == [1, 2, 3]
    for n in ("from_seed", "from_non_deterministic_state", "from_state", "from_key_counter", "reset",
              "reset_from_seed", "reset_from_key_counter", "skip", "state", "algorithm", "key", "normal", "uniform",
              "uniform_full_int", "truncated_normal", "binomial", "make_seeds", "split"):
        assert hasattr(R.Generator, n), n


def test_create_rng_state():
    # the seed's 64-bit words, low word last, padded with zeros on the left
    np.testing.assert_array_equal(R.create_rng_state(1234, "philox"), [1234, 0, 0])
    np.testing.assert_array_equal(R.create_rng_state(2 ** 64 + 3, 1), [3, 1, 0])
    np.testing.assert_array_equal(R.create_rng_state(2 ** 64 - 1, R.Algorithm.PHILOX), [-1, 0, 0])
    np.testing.assert_array_equal(R.create_rng_state([12, 34], "threefry"), [12, 34])
    np.testing.assert_array_equal(R.create_rng_state([5], "philox"), [0, 0, 5])
    np.testing.assert_array_equal(R.create_rng_state([1, 2, 3, 4], "philox"), [1, 2, 3])
    np.testing.assert_array_equal(R.create_rng_state(7, algorithm=1), [7, 0, 0])    # TF 1.15's keyword
    with tf.Graph().as_default(), tf.Session() as s:
        t = R.create_rng_state(tf.constant([9, 8], tf.int64), "philox")
        assert t.shape.as_list() == [3]
        np.testing.assert_array_equal(s.run(t), [0, 9, 8])
    with pytest.raises(ValueError, match="unsupported value"):
        R.create_rng_state(1, "mt19937")
    with pytest.raises(ValueError, match="Unsupported algorithm id"):
        R.create_rng_state(1, 7)
    with pytest.raises(ValueError, match="one dimension"):
        R.create_rng_state([[1, 2]], "philox")


def test_state_variable_and_advance():
    with tf.Graph().as_default():
        g = R.Generator.from_seed(1234)
        v = g.state
        assert v.name == "Variable:0" and v.dtype == tf.int64 and v.shape.as_list() == [3]
        assert v in tf.global_variables() and v not in tf.trainable_variables()
        assert g.algorithm == 1
        x = g.normal([2, 3])
        y = g.uniform([5], dtype=tf.float64)
        z = g.uniform([0])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(s.run(v), [1234, 0, 0])
            s.run(x)
            np.testing.assert_array_equal(s.run(v), [1234 + 256 * 6, 0, 0])
            s.run(y)
            np.testing.assert_array_equal(s.run(v), [1234 + 256 * 11, 0, 0])
            assert s.run(z).shape == (0,)
            np.testing.assert_array_equal(s.run(v), [1234 + 256 * 11, 0, 0])
            assert int(s.run(g.key)) == 0


def test_counter_carries_into_high_word():
    def build():
        g = R.Generator.from_key_counter(key=77, counter=[-256, 5], alg="philox")
        with tf.control_dependencies([g.normal([3])]):
            return tf.identity(g.state.read_value())
    np.testing.assert_array_equal(_session_run(build)[0], [512, 6, 77])


def test_draws_are_the_philox_stream_at_the_state():
    state = [2 ** 40 + 3, 17, -5]
    with tf.Graph().as_default():
        g = R.Generator.from_state(state, alg="philox")
        u = g.uniform([7])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got = s.run(u)
            st2 = s.run(g.state)
    kc = _kc(state)
    np.testing.assert_array_equal(got, P.uniform_f32(P.words(kc[0], kc[1], 7)))
    np.testing.assert_array_equal(st2, [2 ** 40 + 3 + 256 * 7, 17, -5])
    # integers: word % range + minval; full range: the words themselves
    with tf.Graph().as_default():
        g = R.Generator.from_state(state, alg=1)
        a = g.uniform([5], minval=-4, maxval=9, dtype=tf.int32)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got = s.run(a)
    np.testing.assert_array_equal(got, P.words(kc[0], kc[1], 5).astype(np.int64) % 13 - 4)
    with tf.Graph().as_default():
        g = R.Generator.from_state(state, alg=1)
        a = g.uniform_full_int([4], dtype=tf.uint32)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got = s.run(a)
    np.testing.assert_array_equal(got, P.words(kc[0], kc[1], 4))
    np.testing.assert_array_equal(SRK.uniform((4,), np.float32, kc), P.uniform_f32(P.words(kc[0], kc[1], 4)))


def test_statistics():
    def build():
        g = R.Generator.from_seed(99)
        return [g.normal([20000], mean=2.0, stddev=3.0), g.uniform([20000], minval=-1.0, maxval=3.0),
                g.truncated_normal([20000], dtype=tf.float64), g.uniform([20000], maxval=10, dtype=tf.int64),
                g.binomial([4000, 2], counts=[50., 8.], probs=[0.3, 0.6]),
                g.uniform([20000], dtype=tf.float16)]
    n, u, t, i, b, h = _session_run(build)[0]
    assert n.dtype == np.float32 and abs(n.mean() - 2.0) < 4 * 3 / np.sqrt(2e4) and abs(n.std() - 3.0) < 0.08
    assert u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1.0) < 0.04
    assert t.dtype == np.float64 and np.abs(t).max() < 2 and abs(t.std() - 0.8796) < 0.02
    assert i.dtype == np.int64 and set(np.unique(i)) == set(range(10))
    assert b.dtype == np.int32 and b.shape == (4000, 2)
    assert abs(b[:, 0].mean() - 15) < 0.3 and abs(b[:, 1].mean() - 4.8) < 0.1
    assert abs(b[:, 0].var() - 10.5) < 1.0 and 0 <= b.min() and b[:, 1].max() <= 8
    assert h.dtype == np.float16 and 0 <= h.min() and h.max() < 1 and abs(h.astype(float).mean() - 0.5) < 0.01


def test_binomial_edges_and_advance():
    def build():
        g = R.Generator.from_seed(5)
        b = g.binomial([3, 4], counts=[0., 5., 7., 9.], probs=[0.5, 0.0, 1.0, 1.0], dtype=tf.int64)
        with tf.control_dependencies([b]):
            return b, tf.identity(g.state.read_value())
    b, st = _session_run(build)[0]
    np.testing.assert_array_equal(b, [[0, 0, 7, 9]] * 3)
    # TF's reservation: 256 * (num_batches * 200 * (samples_per_batch + 3) // 4)
    np.testing.assert_array_equal(st, [5 + 256 * (4 * 200 * 6 // 4), 0, 0])


def test_same_seed_same_values_and_runs_differ():
    def build():
        g = R.Generator.from_seed(7)
        return g.normal([4])
    r1 = _session_run(build, n=3)
    r2 = _session_run(build, n=3)
    np.testing.assert_array_equal(np.array(r1), np.array(r2))
    assert not np.array_equal(r1[0], r1[1])


def test_reset_skip_and_key_counter():
    with tf.Graph().as_default():
        g = R.Generator.from_seed(3)
        x = g.normal([5])
        sk = g.skip(5)
        rs = g.reset_from_seed(3)
        rk = g.reset_from_key_counter(3, [0, 0])
        rr = g.reset([0, 0, 3])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run(x)
            after = s.run(g.state)
            s.run(rs)
            np.testing.assert_array_equal(s.run(x), first)
            s.run(rk)
            np.testing.assert_array_equal(s.run(g.state), [0, 0, 3])
            np.testing.assert_array_equal(s.run(x), SRK.normal((5,), np.float32, _kc([0, 0, 3])))
            s.run(rr)
            old = s.run(sk)       # the state before the skip; skip(5) advances as normal([5])
            np.testing.assert_array_equal(old, [0, 0, 3])
            second = s.run(x)
            s.run(rs)
            s.run(x)
            np.testing.assert_array_equal(s.run(g.state), after)
            np.testing.assert_array_equal(s.run(x), SRK.normal((5,), np.float32, _kc(after)))
            assert not np.array_equal(second, first)


def test_make_seeds_and_split():
    with tf.Graph().as_default():
        g = R.Generator.from_seed(11)
        seeds = g.make_seeds(4)
        assert seeds.shape.as_list() == [2, 4] and seeds.dtype == tf.int64
        kids = g.split(3)
        assert len(kids) == 3 and all(k.algorithm == 1 for k in kids)
        draws = [k.normal([2]) for k in kids]
        with tf.Session() as s:
            s.run(g.state.initializer)
            sd = s.run(seeds)
            np.testing.assert_array_equal(sd[1], 0)
            kc = _kc([11, 0, 0])
            w = P.words(kc[0], kc[1], 8).astype(np.uint64)
            np.testing.assert_array_equal(sd[0], ((w[1::2] << np.uint64(32)) | w[0::2]).view(np.int64))
            s.run([k.state.initializer for k in kids])
            states = [s.run(k.state) for k in kids]
            assert all(st[0] == 0 and st[1] == 0 for st in states) and len({int(st[2]) for st in states}) == 3
            np.testing.assert_array_equal(s.run(g.state), [11 + 256 * 7, 0, 0])
            vals = s.run(draws)
            for st, v in zip(states, vals):
                np.testing.assert_array_equal(v, SRK.normal((2,), np.float32, _kc(st)))


def test_copy_from_and_variable_state():
    with tf.Graph().as_default():
        g = R.Generator.from_seed(8)
        c = R.Generator(copy_from=g)
        v = tf.Variable(np.array([0, 0, 8], np.int64), trainable=False, name="my_state")
        h = R.Generator(state=v, alg="philox")
        assert h.state is v and c.state is not g.state and c.algorithm == 1
        xs = [g.normal([3]), c.normal([3]), h.normal([3])]
        with tf.Session() as s:
            s.run(g.state.initializer)
            s.run([c.state.initializer, v.initializer])
            a, b, d = s.run(xs)
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(s.run(v), [256 * 3, 0, 8])
            np.testing.assert_array_equal(d, SRK.normal((3,), np.float32, _kc([0, 0, 8])))
    assert tf.random.Generator is R.Generator and tf.random.Algorithm is R.Algorithm


def test_saver_round_trip(tmp_path):
    with tf.Graph().as_default():
        g = R.Generator.from_seed(21)
        x = g.uniform([3])
        saver = tf.train.Saver()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(x)
            path = saver.save(s, str(tmp_path / "rng"))
            want = s.run(x)
            s.run(x)
            saver.restore(s, path)
            np.testing.assert_array_equal(s.run(x), want)
    names = [n for n, _ in tf.train.list_variables(str(tmp_path / "rng"))]
    assert names == ["Variable"]


def test_global_generator():
    with tf.Graph().as_default():
        g1 = R.get_global_generator()
        assert R.get_global_generator() is g1
        mine = R.Generator.from_seed(1)
        R.set_global_generator(mine)
        assert R.get_global_generator() is mine
        y = R.get_global_generator().normal([2])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(s.run(y), SRK.normal((2,), np.float32, _kc([1, 0, 0])))
    R.set_global_generator(None)
    with tf.Graph().as_default() as gr:
        g2 = R.get_global_generator()
        assert g2.state.graph is gr and g2.state.shape.as_list() == [3]
        with tf.Session() as s:
            s.run(g2.state.initializer)
            a = s.run(g2.state)
            s.run(g2.state.initializer)
            assert not np.array_equal(a, s.run(g2.state))   # OS entropy at each initialization
    with tf.Graph().as_default() as gr2:
        assert R.get_global_generator().state.graph is gr2  # made again for the new graph
    with gr.as_default():
        assert R.get_global_generator() is g2  # each graph keeps its own
    # the implicit generator does not keep its graph alive
    import gc
    import weakref
    ref = weakref.ref(gr2)
    del gr2
    gc.collect()
    assert ref() is None


def test_shapes_and_dtypes():
    with tf.Graph().as_default():
        g = R.Generator.from_seed(4)
        assert g.normal([2, 3]).shape.as_list() == [2, 3]
        assert g.normal([]).shape.as_list() == []
        assert g.uniform(tf.constant([4, 1])).shape.as_list() == [4, 1]
        assert g.truncated_normal([5], dtype=tf.float64).dtype == tf.float64
        assert g.uniform([2], maxval=5, dtype=tf.int64).dtype == tf.int64
        assert g.uniform([2], minval=None, maxval=None, dtype=tf.uint64).dtype == tf.uint64
        assert g.uniform_full_int([2]).dtype == tf.uint64
        assert g.binomial([3, 2], [1., 2.], [0.5, 0.5], dtype=tf.float32).shape.as_list() == [3, 2]
        assert g.skip(3).shape.as_list() == [3] and g.skip(3).dtype == tf.int64


def test_errors():
    with pytest.raises(ValueError, match="unsupported value"):
        R.Generator.from_seed(1, alg="mersenne")
    with pytest.raises(TypeError, match="alg"):
        R.Generator.from_seed(1, alg=1.5)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"shape \[3\]"):
            R.Generator.from_state([1, 2], alg="philox")
        with pytest.raises(ValueError, match=r"shape \[2\]"):
            R.Generator.from_key_counter(1, [1, 2, 3], alg="philox")
        with pytest.raises(ValueError, match="scalar"):
            R.Generator.from_key_counter([1, 2], [1, 2], alg="philox")
        with pytest.raises(ValueError, match="state"):
            R.Generator()
        g = R.Generator.from_seed(1)
        with pytest.raises(ValueError, match="both `None` or both"):
            g.uniform([2], maxval=None, dtype=tf.int32)
        with pytest.raises(TypeError, match="dtype"):
            g.normal([2], dtype=tf.int32)
        with pytest.raises(TypeError, match="counts and probs"):
            g.binomial([2], counts=[1, 2], probs=[0.5, 0.5])
        bad_int = g.uniform([2], minval=5, maxval=5, dtype=tf.int32)
        bad_bin = g.binomial([2, 3], counts=[1., 2.], probs=[0.5, 0.5])
        x = g.normal([2])
        tg = R.Generator.from_seed(1, alg="threefry")
        assert tg.state.shape.as_list() == [2]
        tx = tg.normal([2])
        with tf.Session() as s:
            with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized"):
                s.run(x)
            s.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match="minval < maxval"):
                s.run(bad_int)
            with pytest.raises(tf.errors.InvalidArgumentError, match="broadcasted shape"):
                s.run(bad_bin)
            np.testing.assert_array_equal(s.run(g.state), [1, 0, 0])   # failed draws do not advance
            with pytest.raises(NotImplementedError, match="ThreeFry"):
                s.run(tx)


def test_global_generator_first_used_in_a_loop_body():
    with tf.Graph().as_default():
        def body(i, acc):
            return i + 1, acc + R.get_global_generator().uniform([])
        _, total = tf.while_loop(lambda i, a: i < 3, body, [tf.constant(0), tf.constant(0.0)])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            v = s.run(total)
            assert 0.0 <= v < 3.0
