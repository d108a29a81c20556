"""tf.random.experimental.Generator against TensorFlow's (compat.v1, graph mode): the same
program built with both, every fetched value and the state after each run compared for
exact equality (the values are TensorFlow's CPU values bit for bit), over several seeds,
shapes, dtypes and call sequences; from_seed / from_key_counter / from_state, skip,
make_seeds, split, reset_*, create_rng_state, and the global generator's set/get.
Skipped cleanly without TensorFlow."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)
del tfdiff

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def _run(tf, build, n_runs=2, init=None):
    """Builds `build(tf) -> (generators, draws)` in a fresh graph; runs each draw `n_runs`
    times in order, recording its value and every generator's state after each run."""
    out = []
    with tf.Graph().as_default():
        gens, draws = build(tf)
        with tf.Session() as s:
            if init is None:
                s.run(tf.global_variables_initializer())
            else:
                init(tf, s, gens)
            out.append([s.run(g.state) for g in gens])
            for d in draws:
                for _ in range(n_runs):
                    out.append(s.run(d))
                    out.append([s.run(g.state) for g in gens])
    return out


def _assert_same(a, b, path="out"):
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{path}[{i}]")
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, f"{path}: dtype {a.dtype} vs {b.dtype}"
    assert a.shape == b.shape, f"{path}: shape {a.shape} vs {b.shape}"
    np.testing.assert_array_equal(a, b, err_msg=path)


def _both(build, **kw):
    _assert_same(_run(cft, build, **kw), _run(tft, build, **kw))


@pytest.mark.parametrize("seed", [0, 1234, 2 ** 63 + 5, -7, [3, 2 ** 40, 9]])
def test_draws_from_seed(seed):
    def build(tf):
        g = tf.random.experimental.Generator.from_seed(seed)
        return [g], [g.normal([2, 3]), g.uniform([5]), g.uniform([3, 2], dtype=tf.float64),
                     g.normal([7], mean=1.5, stddev=2.0, dtype=tf.float64), g.truncated_normal([9]),
                     g.uniform([4], minval=-3, maxval=11, dtype=tf.int32),
                     g.uniform([3], minval=-2 ** 40, maxval=2 ** 41, dtype=tf.int64),
                     g.uniform([6], minval=None, maxval=None, dtype=tf.int64),
                     g.uniform_full_int([5], dtype=tf.uint32), g.uniform_full_int([2, 2]),
                     g.uniform([3], minval=2.0, maxval=4.0, dtype=tf.float16), g.normal([5], dtype=tf.float16)]
    _both(build)


@pytest.mark.parametrize("shape", [[], [1], [4], [3, 5], [2, 0, 3], [2, 3, 2]])
def test_shapes(shape):
    def build(tf):
        g = tf.random.experimental.Generator.from_seed(77)
        return [g], [g.normal(shape), g.uniform(shape, dtype=tf.float64), g.truncated_normal(shape, dtype=tf.float64),
                     g.uniform(shape, maxval=100, dtype=tf.int64)]
    _both(build)


def test_interleaved_generators_and_skip():
    def build(tf):
        a = tf.random.experimental.Generator.from_seed(5)
        b = tf.random.experimental.Generator.from_key_counter(key=123, counter=[2 ** 64 - 300, 7], alg="philox")
        c = tf.random.experimental.Generator.from_state([4, 5, 6], alg=tf.random.experimental.Algorithm.PHILOX)
        return [a, b, c], [a.normal([3]), b.uniform([2]), a.skip(10), b.skip(1), b.normal([4]), c.truncated_normal([5]),
                           c.skip(0), a.uniform([2], minval=0, maxval=1 << 30, dtype=tf.int32), b.key, c.key]
    _both(build, n_runs=3)


def test_make_seeds_and_split():
    def build(tf):
        g = tf.random.experimental.Generator.from_seed(2024)
        return [g], [g.make_seeds(), g.make_seeds(4), g.normal([2])]
    _both(build)


def test_split():
    # TF 2.21's split cannot build in graph mode (its variables' initializers ask for the
    # parent's initialized_value): TF's side builds what split computes, each child's state
    # [0, 0, key] with the keys of uniform_full_int([count], int64)
    def cf_side():
        out = []
        with cft.Graph().as_default():
            g = cft.random.experimental.Generator.from_seed(11)
            kids = g.split(3)
            draws = [k.normal([3]) for k in kids] + [g.uniform([2])]
            with cft.Session() as s:
                s.run(g.state.initializer)
                s.run([k.state.initializer for k in kids])
                out += [s.run(g.state)] + [s.run(k.state) for k in kids] + [s.run(d) for d in draws]
                out += [s.run(g.state)] + [s.run(k.state) for k in kids]
        return out

    def tf_side():
        out = []
        with tft.Graph().as_default():
            g = tft.random.experimental.Generator.from_seed(11)
            keys = g.uniform_full_int([3], dtype=tft.int64)
            with tft.Session() as s:
                s.run(g.state.initializer)
                kv = s.run(keys)
                kids = [tft.random.experimental.Generator.from_state([0, 0, int(k)], alg="philox") for k in kv]
                draws = [k.normal([3]) for k in kids] + [g.uniform([2])]
                s.run([k.state.initializer for k in kids])
                out += [s.run(g.state)] + [s.run(k.state) for k in kids] + [s.run(d) for d in draws]
                out += [s.run(g.state)] + [s.run(k.state) for k in kids]
        return out
    _assert_same(cf_side(), tf_side())


def test_binomial():
    # TF's kernel loses the first update after the initializer (its state buffer is still
    # shared then): a draw before the binomial makes TF's state advance as intended
    def build(tf):
        g = tf.random.experimental.Generator.from_seed(234)
        return [g], [g.normal([1]),
                     g.binomial([2, 3], counts=[10., 20., 30.], probs=[0.8, 0.5, 0.01]),
                     g.binomial([4], counts=200., probs=0.3, dtype=tf.int64),
                     g.binomial([3, 2], counts=np.array([[5.], [50.], [0.]], np.float64),
                                probs=np.array([0.97, 0.45]), dtype=tf.float32),
                     g.binomial([40, 4], counts=[15., 100., 1000., 7.], probs=[0.6, 0.35, 0.9, 0.5]),
                     g.binomial([30], counts=np.float16(40), probs=np.float16(0.7), dtype=tf.float16)]
    _both(build, n_runs=2)


def test_resets_and_create_rng_state():
    # TF's reset_* return None (they only build an assignment): its side assigns the states
    # those methods compute; collflow's side runs the assignments reset_* return
    def run(tf, resets):
        out = []
        with tf.Graph().as_default():
            g = tf.random.experimental.Generator.from_seed(3)
            steps = [g.normal([2]), resets[0](g), g.normal([2]), resets[1](g), g.uniform([3]), resets[2](g),
                     g.normal([2])]
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                for i, d in enumerate(steps):
                    r = s.run(d)
                    if i % 2 == 0:
                        out.append(r)
                    out.append(s.run(g.state))
        return out
    cf_out = run(cft, [lambda g: g.reset_from_seed(99), lambda g: g.reset_from_key_counter(5, [1, 2]),
                       lambda g: g.reset([7, 8, 9])])
    tf_out = run(tft, [lambda g: g.state.assign(tft.random.experimental.create_rng_state(99, "philox")),
                       lambda g: g.state.assign([1, 2, 5]), lambda g: g.state.assign([7, 8, 9])])
    _assert_same(cf_out, tf_out)
    A = tft.random.experimental.Algorithm
    for seed in (0, 5, 2 ** 64 - 1, 2 ** 130 + 2 ** 70 + 3, [1, 2, 3, 4], [9], [2 ** 63 + 1, 4]):
        for alg in ("philox", "threefry", 1, "PHILOX"):
            with tft.Graph().as_default(), tft.Session() as s:
                want = s.run(tft.random.experimental.create_rng_state(seed, alg))
            np.testing.assert_array_equal(cft.random.experimental.create_rng_state(seed, alg), want)
    with tft.Graph().as_default(), tft.Session() as s:
        want = s.run(tft.random.experimental.create_rng_state(17, A.THREEFRY))
    np.testing.assert_array_equal(
        cft.random.experimental.create_rng_state(17, cft.random.experimental.Algorithm.THREEFRY), want)


def test_global_generator_set_get():
    def build(tf):
        g = tf.random.experimental.Generator.from_seed(42)
        tf.random.experimental.set_global_generator(g)
        gg = tf.random.experimental.get_global_generator()
        assert gg is g
        return [g], [gg.normal([3]), gg.uniform([2], maxval=7, dtype=tf.int32)]
    _both(build)


def test_threefry_unimplemented_on_cpu():
    for tf, err in ((tft, tensorflow.errors.UnimplementedError), (cft, cft.errors.UnimplementedError)):
        with tf.Graph().as_default():
            g = tf.random.experimental.Generator.from_seed(12, alg="threefry")
            x = g.normal([3])
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                np.testing.assert_array_equal(s.run(g.state), [12, 0])
                with pytest.raises(err, match="ThreeFry"):
                    s.run(x)
