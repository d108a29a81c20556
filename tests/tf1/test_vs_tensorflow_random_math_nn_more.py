"""collflow vs TensorFlow 1.x: the stateless random ops bit for bit (many shapes, seeds and
dtypes), tf.math.cumulative_logsumexp/polyval/segment_prod/unsorted_segment_prod/zero_fraction/
nextafter and tf.nn.collapse_repeated/ctc_unique_labels/space_to_batch (values and gradients)."""
import itertools

import numpy as np
import pytest

from tfdiff import check_case

tft = pytest.importorskip("tensorflow.compat.v1")
tft.disable_eager_execution()
import collflow.compat.v1 as cft  # noqa: E402

SEEDS = [(12, 34), (0, 0), (-1, 5), (2 ** 40 + 3, -7), (7, 2 ** 62)]
SHAPES = [[7], [3, 5], [1001], [2, 3, 3], [0], [4]]


def _run(tf, build):
    g = tf.Graph()
    with g.as_default():
        out = build(tf)
        with tf.Session(graph=g) as s:
            return s.run(out)


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), (a.ravel()[:6], b.ravel()[:6])


@pytest.mark.parametrize("fn", ["stateless_uniform", "stateless_normal", "stateless_truncated_normal"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_stateless_float_bit_exact(fn, dtype):
    for seed, shape in itertools.product(SEEDS, SHAPES):
        build = lambda tf: getattr(tf.random, fn)(shape, seed=seed, dtype=getattr(tf, dtype))  # noqa: E731
        _same_bits(_run(cft, build), _run(tft, build))


def test_stateless_large_bit_exact():
    for fn in ("stateless_normal", "stateless_truncated_normal"):
        build = lambda tf: getattr(tf.random, fn)([300, 701], seed=[9, 10])  # noqa: E731
        _same_bits(_run(cft, build), _run(tft, build))


def test_stateless_affine_and_int_bit_exact():
    for seed, shape in itertools.product(SEEDS, SHAPES):
        for dt, lo, hi in [("int32", -5, 1000), ("int32", -2 ** 31, 2 ** 31 - 1), ("int64", -5, 10 ** 12),
                           ("int64", -2 ** 63, 2 ** 63 - 1), ("int64", 3, 4), ("float32", -2.5, 3.0),
                           ("float64", 1.0, 9.0)]:
            build = lambda tf: tf.random.stateless_uniform(shape, seed=seed, minval=lo, maxval=hi,  # noqa: E731
                                                           dtype=getattr(tf, dt))
            _same_bits(_run(cft, build), _run(tft, build))
        for dt in ["int32", "int64", "uint32", "uint64"]:
            build = lambda tf: tf.random.stateless_uniform(shape, seed=seed, minval=None, maxval=None,  # noqa: E731
                                                           dtype=getattr(tf, dt))
            _same_bits(_run(cft, build), _run(tft, build))
        build = lambda tf: tf.random.stateless_normal(shape, seed=tf.constant(seed, tf.int64), mean=2.0,  # noqa: E731
                                                      stddev=0.5)
        _same_bits(_run(cft, build), _run(tft, build))


def test_stateless_categorical_bit_exact():
    r = np.random.RandomState(0)
    for seed in SEEDS:
        lg = r.randn(3, 6).astype(np.float32)
        lg[1, 2] = -np.inf
        for ns, dt in [(1, "int64"), (5, "int32"), (8, "int64")]:
            for fn in ("stateless_categorical", "stateless_multinomial"):
                kw = {"dtype" if fn == "stateless_categorical" else "output_dtype": dt}
                build = lambda tf: getattr(tf.random, fn)(  # noqa: E731
                    lg, ns, seed=seed, **{k: getattr(tf, v) for k, v in kw.items()})
                _same_bits(_run(cft, build), _run(tft, build))


CASES = [
    ("cumlse", lambda tf, x: tf.math.cumulative_logsumexp(x, axis=1), [(3, 5)]),
    ("cumlse_rev", lambda tf, x: tf.math.cumulative_logsumexp(x, axis=0, reverse=True), [(4, 3)]),
    ("cumlse_excl", lambda tf, x: tf.math.cumulative_logsumexp(x, axis=1, exclusive=True)[:, 1:], [(3, 5)]),
    ("cumlse_excl_rev", lambda tf, x: tf.math.cumulative_logsumexp(x, axis=1, exclusive=True, reverse=True)[:, :-1],
     [(3, 5)]),
    ("polyval", lambda tf, x, c: tf.math.polyval([c[0], 2.0, c[1], -1.0], x), [(3, 4), (2,)]),
    ("segment_prod", lambda tf, x: tf.reshape(tf.math.segment_prod(
        x * tf.constant([[1.0], [0.0], [1], [1], [0], [0], [1]]), [0, 0, 1, 2, 2, 2, 4]), [5, 3]), [(7, 3)]),
    ("segment_prod_1d", lambda tf, x: tf.reshape(tf.segment_prod(x, [0, 1, 1, 1, 3]), [4]), [(5,)]),
    ("unsorted_segment_prod", lambda tf, x: tf.math.unsorted_segment_prod(
        x * tf.constant([[1.0], [0.0], [1], [1], [0], [0], [1]]), [2, 0, -1, 2, 0, 1, 0], 4), [(7, 2)]),
    ("unsorted_segment_prod_2d", lambda tf, x: tf.unsorted_segment_prod(x, [[0, 1, 1], [2, 0, 1]], 3), [(2, 3, 2)]),
    ("zero_fraction", lambda tf, x: [tf.math.zero_fraction(tf.nn.relu(x)), tf.nn.zero_fraction(tf.nn.relu(x))],
     [(4, 5)]),
    ("nextafter", lambda tf, x, y: tf.math.nextafter(x, y) - x, [(3, 4), (4,)]),
    ("space_to_batch", lambda tf, x: tf.nn.space_to_batch(x, [[0, 0], [1, 1]], 2), [(1, 2, 2, 3)]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_math_nn_cases(case):
    check_case(case, tft, cft)


def test_collapse_repeated_and_ctc_unique_labels():
    labels = np.array([[1, 1, 2, 2, 1], [1, 2, 3, 4, 5], [3, 3, 3, 0, 0], [2, 2, 4, 4, 4]], np.int32)
    lengths = np.array([5, 4, 2, 3], np.int32)
    build = lambda tf: list(tf.nn.collapse_repeated(labels, lengths))  # noqa: E731
    for a, b in zip(_run(cft, build), _run(tft, build)):
        np.testing.assert_array_equal(a, b)
    build = lambda tf: list(tf.nn.ctc_unique_labels(labels))  # noqa: E731
    for a, b in zip(_run(cft, build), _run(tft, build)):
        np.testing.assert_array_equal(a, b)


def test_get_seed_pairs():
    def pairs(tf):
        g = tf.Graph()
        with g.as_default():
            out = [tf.random.get_seed(5)]
            tf.set_random_seed(3)
            out.append(tf.random.get_seed(9))
            tf.set_random_seed(0)
            out.append(tf.random.get_seed(0))
            return out
    assert pairs(cft) == pairs(tft)


MORPH = [
    ("dilation_valid", lambda tf, x, f: tf.nn.dilation2d(x, f, [1, 1, 1, 1], [1, 1, 1, 1], "VALID"),
     [(2, 5, 6, 3), (2, 3, 3)]),
    ("dilation_same_strided", lambda tf, x, f: tf.nn.dilation2d(x, f, [1, 2, 1, 1], [1, 1, 2, 1], "SAME"),
     [(1, 7, 6, 2), (3, 2, 2)]),
    ("erosion_same", lambda tf, x, f: tf.nn.erosion2d(x, f, [1, 1, 2, 1], [1, 2, 1, 1], "SAME"),
     [(2, 6, 7, 2), (2, 3, 2)]),
    ("conv3d_backprop_filter", lambda tf, x, dy: tf.nn.conv3d_backprop_filter(
        x, [2, 3, 2, 3, 4], dy, [1, 1, 2, 1, 1], "SAME"), [(2, 3, 5, 4, 3), (2, 3, 3, 4, 4)]),
    ("conv3d_backprop_filter_v2", lambda tf, x, dy: tf.nn.conv3d_backprop_filter_v2(
        x, tf.constant([2, 2, 2, 3, 2]), dy, [1, 2, 1, 1, 1], "VALID"),
     [(1, 5, 4, 4, 3), (1, 2, 3, 3, 2)]),
]


@pytest.mark.parametrize("case", MORPH, ids=[c[0] for c in MORPH])
def test_morphology_and_conv3d_filter(case):
    check_case(case, tft, cft, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("fn", ["fractional_max_pool", "fractional_avg_pool"])
@pytest.mark.parametrize("pseudo,overlapping", [(True, False), (False, False), (True, True), (False, True)])
def test_fractional_pool_deterministic_matches(fn, pseudo, overlapping):
    for shape, ratio, seeds in [((2, 10, 10, 3), [1, 1.44, 1.73, 1], (5, 7)),
                                ((1, 50, 47, 2), [1, 1.44, 1.73, 1], (123, 0)),
                                ((1, 11, 21, 1), [1, 2.0, 1.5, 1], (0, 9)), ((1, 16, 9, 2), [1, 3.1, 1.7, 1], (77, 3))]:
        case = (f"{fn}{shape}", lambda tf, x: list(getattr(tf.nn, fn)(
            x, ratio, pseudo_random=pseudo, overlapping=overlapping, deterministic=True, seed=seeds[0],
            seed2=seeds[1])[:1]), [shape])
        check_case(case, tft, cft)

        def seqs(tf):
            x = tf.zeros(shape)
            return list(getattr(tf.nn, fn)(x, ratio, pseudo_random=pseudo, overlapping=overlapping,
                                           deterministic=True, seed=seeds[0], seed2=seeds[1])[1:])
        for a, b in zip(_run(cft, seqs), _run(tft, seqs)):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("unique", [False, True])
def test_learned_unigram_expected_counts(unique):
    """The samples differ (other streams); the learned distribution, hence the expected counts
    of the true classes and of each sampled class, are TF's run after run."""
    feeds = [[[0]], [[0]], [[2], [2]], [[4]], [[1], [3]]]

    def counts(tf):
        g = tf.Graph()
        with g.as_default():
            tc = tf.placeholder(tf.int64, [None, 1])
            s, te, se = tf.nn.learned_unigram_candidate_sampler(tc, 1, 3, unique, 5, seed=1)
            with tf.Session(graph=g) as sess:
                return [sess.run([s, te, se], {tc: f}) for f in feeds]
    ours, theirs = counts(cft), counts(tft)
    for (s1, te1, se1), (s2, te2, se2) in zip(ours, theirs):
        if not unique:      # p * num_sampled: no dependence on the draws
            np.testing.assert_allclose(te1, te2, rtol=1e-6)
        assert s1.dtype == s2.dtype and s1.shape == s2.shape and te1.shape == te2.shape
        assert np.all((s1 >= 0) & (s1 < 5))
    # a class's expected count is the same function of the learned p in both (all five classes)
    if not unique:
        for (s1, _, se1), (s2, _, se2) in zip(ours, theirs):
            for c in set(s1.tolist()) & set(s2.tolist()):
                np.testing.assert_allclose(se1[s1 == c][0], se2[s2 == c][0], rtol=1e-6)
