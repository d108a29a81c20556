"""By-hand tests (no TensorFlow) of the stateless random ops, tf.random.poisson/get_seed, the
tf.math additions (cumulative_logsumexp, polyval, segment_prod, unsorted_segment_prod,
zero_fraction, nextafter) and the tf.nn additions (collapse_repeated, ctc_unique_labels,
space_to_batch, dilation2d/erosion2d, conv3d_backprop_filter, fractional pooling)."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.kernels import philox as P


def run(fetch, feed=None):
    with tf.Session() as s:
        return s.run(fetch, feed)


# -- Philox and the stateless ops -----------------------------------------------------------------

def test_philox_known_answer():
    # Salmon et al.'s Philox4x32-10 known-answer vectors (Random123's kat_vectors)
    out = P.philox(np.zeros((1, 4), np.uint64), (0, 0))[0]
    assert [hex(v) for v in out] == ["0x6627e8d5", "0xe169c58d", "0xbc57ac4c", "0x9b00dbd8"]
    out = P.philox(np.full((1, 4), 0xFFFFFFFF, np.uint64), (0xFFFFFFFF, 0xFFFFFFFF))[0]
    assert [hex(v) for v in out] == ["0x408f276d", "0x41c83b0e", "0xa20bc7c6", "0x6d5451fd"]


def test_counter_carry_across_64_bits():
    key, ctr = (1, 2), (0xFFFFFFFF, 0xFFFFFFFF, 5, 0)
    a = P.blocks(key, ctr, np.array([1]))
    b = P.philox(np.array([[0, 0, 6, 0]], np.uint64), key)
    np.testing.assert_array_equal(a, b)


def test_stateless_uniform_deterministic_and_in_range():
    with tf.Graph().as_default():
        a = tf.random.stateless_uniform([3, 1001], seed=[1, 2])
        b = tf.random.stateless_uniform([3, 1001], seed=tf.constant([1, 2], tf.int64))
        c = tf.random.stateless_uniform([3, 1001], seed=[1, 3])
        d = tf.random.stateless_uniform([5], seed=[1, 2], minval=-3, maxval=4, dtype=tf.int32)
        e = tf.random.stateless_uniform([4], seed=[1, 2], minval=2.0, maxval=3.0, dtype=tf.float64)
        va, vb, vc, vd, ve = run([a, b, c, d, e])
    np.testing.assert_array_equal(va, vb)
    assert not np.array_equal(va, vc)
    assert va.min() >= 0 and va.max() < 1 and abs(va.mean() - 0.5) < 0.02
    assert vd.dtype == np.int32 and vd.min() >= -3 and vd.max() < 4
    assert ve.dtype == np.float64 and np.all((ve >= 2) & (ve < 3))


def test_stateless_uniform_is_prefix_stable_and_uses_23_bits():
    w = P.words(*P.key_counter(7, 8), 10)
    expect = ((w & 0x7FFFFF) / 2.0 ** 23).astype(np.float32)
    with tf.Graph().as_default():
        got = run(tf.random.stateless_uniform([10], seed=[7, 8]))
    np.testing.assert_array_equal(got, expect)


def test_stateless_normal_and_truncated_statistics():
    with tf.Graph().as_default():
        n = tf.random.stateless_normal([20000], seed=[3, 4], dtype=tf.float64)
        t = tf.random.stateless_truncated_normal([20001], seed=[3, 4], mean=1.0, stddev=2.0)
        vn, vt = run([n, t])
    assert abs(vn.mean()) < 0.03 and abs(vn.std() - 1) < 0.03
    assert np.all(np.abs(vt - 1.0) < 4.0) and abs(vt.mean() - 1.0) < 0.05
    # the truncated normal's std: sqrt(1 - 2 * 2 phi(2) / (2 Phi(2) - 1)) = 0.8796
    assert abs(np.std((vt - 1.0) / 2.0) - 0.8796) < 0.02


def test_stateless_categorical():
    logits = np.log(np.array([[0.2, 0.8, 0.0], [1.0, 0.0, 0.0]], np.float32) + 1e-30)
    with tf.Graph().as_default():
        out = run(tf.random.stateless_categorical(logits, 4000, seed=[5, 6]))
    assert out.shape == (2, 4000) and out.dtype == np.int64
    assert abs((out[0] == 1).mean() - 0.8) < 0.03 and np.all(out[1] == 0)


def test_stateless_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError):
            tf.random.stateless_uniform([2], seed=[1, 2, 3])
        with pytest.raises(ValueError):
            tf.random.stateless_uniform([2], seed=[1, 2], maxval=5, minval=None, dtype=tf.int32)
        with pytest.raises(ValueError):
            tf.random.stateless_normal([2], seed=[1, 2], dtype=tf.int32)


def test_random_poisson_statistics():
    with tf.Graph().as_default():
        lam = tf.constant([0.5, 3.0, 40.0])
        x = tf.random.poisson(lam, [20000], seed=1)
        y = tf.random_poisson([2.0], [3, 2], dtype=tf.int64, seed=2)
        vx, vy = run([x, y])
    assert vx.shape == (20000, 3) and vy.shape == (3, 2, 1) and vy.dtype == np.int64
    np.testing.assert_allclose(vx.mean(0), [0.5, 3.0, 40.0], rtol=0.04)
    np.testing.assert_allclose(vx.var(0), [0.5, 3.0, 40.0], rtol=0.06)
    assert np.all(vx == np.round(vx))


def test_get_seed_rules():
    with tf.Graph().as_default():
        assert tf.random.get_seed(5) == (87654321, 5)
        assert tf.random.get_seed(None) == (None, None)
        tf.set_random_seed(3)
        assert tf.random.get_seed(9) == (3, 9)
        assert tf.random.get_seed(None)[0] == 3
        tf.set_random_seed(0)
        assert tf.random.get_seed(0) == (0, 2 ** 31 - 1)     # never (0, 0), as TF


# -- tf.math ---------------------------------------------------------------------------------------

def test_cumulative_logsumexp():
    x = np.array([[1.0, -2.0, 3.0, 700.0], [0.0, 0.0, 0.0, 0.0]])
    ref = lambda v: np.log(np.cumsum(np.exp(v - 700.0), 1)) + 700.0   # noqa: E731
    with tf.Graph().as_default():
        xt = tf.constant(x)
        a = tf.math.cumulative_logsumexp(xt, axis=1)
        b = tf.math.cumulative_logsumexp(xt, axis=1, exclusive=True, reverse=True)
        g = tf.gradients(tf.reduce_sum(a), xt)[0]
        va, vb, vg = run([a, b, g])
    np.testing.assert_allclose(va[0], ref(x[:1])[0])
    np.testing.assert_allclose(va[1], np.log([1, 2, 3, 4]))
    np.testing.assert_allclose(vb[1], [np.log(3), np.log(2), 0.0, -np.inf])
    # d/dx_j sum_i lse(x_0..x_i) = sum_{i >= j} softmax_i(x_0..x_i)[j]; row of zeros: 1/1+1/2+...
    np.testing.assert_allclose(vg[1], [1 + 1 / 2 + 1 / 3 + 1 / 4, 1 / 2 + 1 / 3 + 1 / 4, 1 / 3 + 1 / 4, 1 / 4])


def test_polyval():
    with tf.Graph().as_default():
        x = tf.constant([0.0, 1.0, 2.0])
        p = tf.math.polyval([2.0, -1.0, 3.0], x)
        e = tf.math.polyval([], x)
        g = tf.gradients(tf.reduce_sum(p), x)[0]
        vp, ve, vg = run([p, e, g])
    np.testing.assert_allclose(vp, [3.0, 4.0, 9.0])
    np.testing.assert_allclose(ve, [0, 0, 0])
    np.testing.assert_allclose(vg, [-1.0, 3.0, 7.0])


def test_segment_prod_values_and_gradients():
    x = np.array([2.0, 3.0, 0.0, 5.0, 0.0, 0.0, 7.0])
    with tf.Graph().as_default():
        xt = tf.constant(x)
        s = tf.math.segment_prod(xt, [0, 0, 1, 1, 2, 2, 4])
        u = tf.math.unsorted_segment_prod(xt, [0, 3, 1, 1, -1, 0, 2], 5)
        gs = tf.gradients(tf.reduce_sum(s), xt)[0]
        gu = tf.gradients(tf.reduce_sum(u), xt)[0]
        vs, vu, vgs, vgu = run([s, u, gs, gu])
    np.testing.assert_allclose(vs, [6.0, 0.0, 0.0, 1.0, 7.0])
    np.testing.assert_allclose(vu, [0.0, 0.0, 7.0, 3.0, 1.0])
    np.testing.assert_allclose(vgs, [3.0, 2.0, 5.0, 0.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(vgu, [0.0, 1.0, 5.0, 0.0, 0.0, 2.0, 1.0])


def test_zero_fraction_and_nextafter():
    with tf.Graph().as_default():
        z = tf.math.zero_fraction(tf.constant([0.0, 1.0, 0.0, 2.0]))
        n = tf.math.nextafter(tf.constant([1.0, 1.0], tf.float64), tf.constant([2.0, 0.0], tf.float64))
        vz, vn = run([z, n])
    assert vz == 0.5
    np.testing.assert_array_equal(vn, [1.0 + 2.0 ** -52, 1.0 - 2.0 ** -53])
    assert tf.nn.zero_fraction is tf.math.zero_fraction


# -- tf.nn -----------------------------------------------------------------------------------------

def test_collapse_repeated_and_unique_labels():
    labels = np.array([[1, 1, 2, 2, 1], [1, 2, 3, 4, 5], [3, 3, 3, 0, 0]], np.int32)
    with tf.Graph().as_default():
        c, n = tf.nn.collapse_repeated(labels, [5, 3, 2])
        u, i = tf.nn.ctc_unique_labels(labels)
        vc, vn, vu, vi = run([c, n, u, i])
    np.testing.assert_array_equal(vc, [[1, 2, 1], [1, 2, 3], [3, 0, 0]])
    np.testing.assert_array_equal(vn, [3, 3, 1])
    np.testing.assert_array_equal(vu, [[1, 2, 0, 0, 0], [1, 2, 3, 4, 5], [3, 0, 0, 0, 0]])
    np.testing.assert_array_equal(vi, [[0, 0, 1, 1, 0], [0, 1, 2, 3, 4], [0, 0, 0, 1, 1]])


def test_space_to_batch_alias():
    assert tf.nn.space_to_batch is tf.space_to_batch


def test_dilation_and_erosion_by_hand():
    x = np.arange(16, dtype=np.float64).reshape(1, 4, 4, 1) % 5
    f = np.array([[0.0, 1.0], [0.5, 0.0]]).reshape(2, 2, 1)
    ref = np.zeros((1, 3, 3, 1))
    for i in range(3):
        for j in range(3):
            ref[0, i, j, 0] = max(x[0, i + a, j + b, 0] + f[a, b, 0] for a in range(2) for b in range(2))
    with tf.Graph().as_default():
        xt, ft = tf.constant(x), tf.constant(f)
        d = tf.nn.dilation2d(xt, ft, [1, 1, 1, 1], [1, 1, 1, 1], "VALID")
        e = tf.nn.erosion2d(xt, ft, [1, 1, 1, 1], [1, 1, 1, 1], "VALID")
        gx, gf = tf.gradients(tf.reduce_sum(d), [xt, ft])
        vd, ve, vgx, vgf = run([d, e, gx, gf])
    np.testing.assert_allclose(vd, ref)
    fr = f[::-1, ::-1]
    eref = np.array([[min(x[0, i + a, j + b, 0] - fr[a, b, 0] for a in range(2) for b in range(2))
                      for j in range(3)] for i in range(3)]).reshape(1, 3, 3, 1)
    np.testing.assert_allclose(ve, eref)
    assert vgx.sum() == 9 and vgf.sum() == 9


def test_conv3d_backprop_filter_matches_conv3d_gradient():
    r = np.random.default_rng(0)
    x = r.standard_normal((2, 4, 5, 3, 2))
    dy = r.standard_normal((2, 2, 5, 3, 3))
    with tf.Graph().as_default():
        xt = tf.constant(x)
        w = tf.zeros([2, 3, 1, 2, 3], tf.float64)
        y = tf.nn.conv3d(xt, w, [1, 2, 1, 1, 1], "SAME")
        want = tf.gradients(y, w, grad_ys=tf.constant(dy))[0]
        got = tf.nn.conv3d_backprop_filter(xt, [2, 3, 1, 2, 3], tf.constant(dy), [1, 2, 1, 1, 1], "SAME")
        a, b = run([got, want])
    np.testing.assert_allclose(a, b, rtol=1e-10)


def test_fractional_pool_regions():
    x = np.arange(100, dtype=np.float32).reshape(1, 10, 10, 1)
    with tf.Graph().as_default():
        out, rows, cols = tf.nn.fractional_max_pool(x, [1, 1.44, 1.73, 1], pseudo_random=True,
                                                    deterministic=True, seed=5, seed2=7)
        avg, r2, c2 = tf.nn.fractional_avg_pool(x, [1, 2.0, 2.0, 1], deterministic=True, seed=1, seed2=1)
        vo, vr, vc, va, vr2 = run([out, rows, cols, avg, r2])
    assert vo.shape == (1, 6, 5, 1)
    for seq, n in ((vr, 10), (vc, 10)):
        assert seq[0] == 0 and seq[-1] == n and set(np.diff(seq)) <= {1, 2}
    expect = np.array([[x[0, vr[i]:vr[i + 1], vc[j]:vc[j + 1], 0].max() for j in range(5)] for i in range(6)])
    np.testing.assert_array_equal(vo[0, :, :, 0], expect)
    np.testing.assert_array_equal(np.diff(vr2), [2] * 5)        # ratio 2 divides 10: regions of 2
    np.testing.assert_allclose(va[0, 0, 0, 0], x[0, :2, :2, 0].mean())


def test_learned_unigram_candidate_sampler_learns_after_sampling():
    with tf.Graph().as_default():
        tc = tf.placeholder(tf.int64, [None, 1])
        s, te, se = tf.nn.learned_unigram_candidate_sampler(tc, 1, 4, False, 5, seed=1)
        with tf.Session() as sess:
            out = [sess.run([s, te, se], {tc: f}) for f in [[[0]], [[0]], [[2], [2]], [[4]]]]
    # counts start at 1 each and take each run's true classes after it samples
    np.testing.assert_allclose(out[0][1], [[4 / 5]])
    np.testing.assert_allclose(out[1][1], [[4 * 2 / 6]])
    np.testing.assert_allclose(out[2][1], [[4 / 7], [4 / 7]])
    np.testing.assert_allclose(out[3][1], [[4 / 9]])
    p = np.array([3, 1, 3, 1, 1]) / 9
    np.testing.assert_allclose(out[3][2], 4 * p[out[3][0]], rtol=1e-6)
    assert tf.random.learned_unigram_candidate_sampler is tf.nn.learned_unigram_candidate_sampler
