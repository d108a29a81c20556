"""Candidate samplers, compute_accidental_hits, nce_loss and sampled_softmax_loss against
TensorFlow 1.x's definitions (NumPy references), and their sparse gradients.

Gradients against finite differences live in gradtable_losses.py.
"""
import numpy as np
import pytest

import collflow as cf

RNG = np.random.default_rng(5)
FLT_MAX = float(np.finfo(np.float32).max)


def _log_uniform_p(c, range_max):
    return np.log((c + 2.0) / (c + 1.0)) / np.log(range_max + 1.0)


# -- samplers ---------------------------------------------------------------------------------------


def test_log_uniform_sampler_follows_zipf_and_counts_every_draw_without_unique():
    g = cf.Graph()
    with g.as_default():
        true = cf.constant(np.array([[0], [7]], np.int64))
        s, tq, sq = cf.nn.log_uniform_candidate_sampler(true, 1, 40000, False, 10, seed=3)
    vs, vtq, vsq = _run(g, [s, tq, sq])
    assert vs.dtype == np.int64 and vtq.dtype == np.float32 and vs.shape == (40000,)
    freq = np.bincount(vs, minlength=10) / vs.size
    np.testing.assert_allclose(freq, _log_uniform_p(np.arange(10), 10), atol=0.01)
    np.testing.assert_allclose(vtq, _log_uniform_p(np.array([[0], [7]]), 10) * 40000, rtol=1e-5)
    np.testing.assert_allclose(vsq, _log_uniform_p(vs, 10) * 40000, rtol=1e-5)


@pytest.mark.parametrize("sampler, prob", [
    (cf.nn.log_uniform_candidate_sampler, lambda c: _log_uniform_p(c, 50)),
    (cf.nn.uniform_candidate_sampler, lambda c: np.full(np.shape(c), 1 / 50)),
])
def test_unique_samples_are_distinct_and_expected_counts_use_the_number_of_tries(sampler, prob):
    g = cf.Graph()
    with g.as_default():
        true = cf.constant(np.array([[1, 2], [30, 49]], np.int64))
        s, tq, sq = sampler(true, 2, 20, True, 50, seed=1)
    vs, vtq, vsq = _run(g, [s, tq, sq])
    assert len(set(vs.tolist())) == 20 and vs.min() >= 0 and vs.max() < 50
    # every expected count is 1 - (1 - p)^tries for one number of tries >= 20
    tries = np.log1p(-vsq.astype(np.float64)) / np.log1p(-prob(vs))
    assert tries.min() >= 19.99 and np.ptp(tries) < 1e-2 * tries.mean()
    t = np.round(tries.mean())
    np.testing.assert_allclose(vtq, -np.expm1(t * np.log1p(-prob(np.array([[1, 2], [30, 49]])))), rtol=1e-4)


def test_unique_sampling_of_the_whole_range_is_a_permutation():
    g = cf.Graph()
    with g.as_default():
        s, _, _ = cf.nn.uniform_candidate_sampler(cf.constant(np.zeros((1, 1), np.int64)), 1, 8, True, 8)
        with pytest.raises(cf.InvalidArgumentError, match="range is too small"):
            cf.nn.uniform_candidate_sampler(cf.constant(np.zeros((1, 1), np.int64)), 1, 9, True, 8)
        with pytest.raises(cf.InvalidArgumentError, match="num_true"):
            cf.nn.log_uniform_candidate_sampler(cf.constant(np.zeros((1, 2), np.int64)), 1, 4, True, 8)
    assert sorted(_run(g, s).tolist()) == list(range(8))


def test_samplers_are_seeded_random_ops():
    def build():
        g = cf.Graph()
        with g.as_default():
            s, _, _ = cf.nn.log_uniform_candidate_sampler(cf.constant(np.zeros((1, 1), np.int64)), 1, 5, True, 1000,
                                                          seed=42)
        return g, s

    g, s = build()
    with cf.Session(graph=g) as sess:
        a, b = sess.run(s), sess.run(s)
    g2, s2 = build()
    with cf.Session(graph=g2) as sess:
        c = sess.run(s2)
    np.testing.assert_array_equal(a, c)      # same seeds, same stream
    assert not np.array_equal(a, b)          # the stream moves on between runs


def test_compute_accidental_hits_marks_the_last_position_of_each_true_class():
    g = cf.Graph()
    with g.as_default():
        idx, ids, w = cf.nn.compute_accidental_hits(cf.constant(np.array([[1, 2], [3, 4], [5, 5]], np.int64)),
                                                    cf.constant(np.array([2, 5, 1, 2], np.int64)), num_true=2)
    vi, vid, vw = _run(g, [idx, ids, w])
    np.testing.assert_array_equal(vi, [0, 0, 2, 2])
    np.testing.assert_array_equal(vid, [2, 3, 1, 1])
    assert vi.dtype == np.int32 and vid.dtype == np.int64
    np.testing.assert_array_equal(vw, np.full(4, -FLT_MAX, np.float32))


# -- the sampled losses --------------------------------------------------------------------------------


def _run(g, fetches, feed=None):
    with cf.Session(graph=g) as s:
        return s.run(fetches, feed)


def _ref_logits(W, b, labels, x, sampled, tq, sq, remove_hits):
    nt = labels.shape[1]
    true_logits = (x[:, None, :] * W[labels]).sum(-1) + b[labels] - np.log(tq)
    sampled_logits = x @ W[sampled].T + b[sampled] - np.log(sq)
    if remove_hits:
        for i in range(labels.shape[0]):
            for j, c in enumerate(sampled):
                if c in labels[i]:
                    sampled_logits[i, j] += -FLT_MAX
    logits = np.concatenate([true_logits, sampled_logits], 1)
    targets = np.concatenate([np.full(true_logits.shape, 1 / nt), np.zeros(sampled_logits.shape)], 1)
    return logits, targets


def _ref_nce(*args):
    z, t = _ref_logits(*args)
    return (np.maximum(z, 0) - z * t + np.log1p(np.exp(-np.abs(z)))).sum(1)


def _ref_sampled_softmax(*args):
    z, t = _ref_logits(*args)
    m = z.max(1, keepdims=True)
    log_sm = z - m - np.log(np.exp(z - m).sum(1, keepdims=True))
    return -(t * log_sm).sum(1)


V, D = 12, 3
W0 = RNG.normal(size=(V, D))
B0 = RNG.normal(size=V)
X0 = RNG.normal(size=(4, D))
SAMPLED = np.array([4, 9, 0, 7, 2])
SQ = np.array([0.3, 0.1, 0.5, 0.2, 0.25])


@pytest.mark.parametrize("num_true", [1, 2])
@pytest.mark.parametrize("remove_hits", [False, True])
@pytest.mark.parametrize("loss_fn, ref", [(cf.nn.nce_loss, _ref_nce),
                                          (cf.nn.sampled_softmax_loss, _ref_sampled_softmax)],
                         ids=["nce", "sampled_softmax"])
def test_sampled_losses_match_the_definition(loss_fn, ref, remove_hits, num_true):
    labels = np.array([[4, 1], [3, 9], [0, 0], [11, 5]])[:, :num_true]   # rows 0, 1, 2 hit a sampled class
    tq = RNG.uniform(0.1, 0.9, labels.shape)
    g = cf.Graph()
    with g.as_default():
        sv = (cf.constant(SAMPLED.astype(np.int64)), cf.constant(tq.astype(np.float32)),
              cf.constant(SQ.astype(np.float32)))
        loss = loss_fn(cf.constant(W0), cf.constant(B0), cf.constant(labels), cf.constant(X0), num_sampled=5,
                       num_classes=V, num_true=num_true, sampled_values=sv, remove_accidental_hits=remove_hits)
    assert loss.shape.as_list() == [4]
    expect = ref(W0, B0, labels, X0, SAMPLED, tq.astype(np.float32), SQ.astype(np.float32), remove_hits)
    np.testing.assert_allclose(_run(g, loss), expect, rtol=1e-6)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_sharded_weights_give_the_same_loss(strategy):
    labels = np.array([[4], [3], [0], [11]])
    if strategy == "mod":
        shards = [W0[0::2], W0[1::2]]
    else:
        shards = [W0[:6], W0[6:]]
    g = cf.Graph()
    with g.as_default():
        sv = (cf.constant(SAMPLED.astype(np.int64)), cf.constant(np.full((4, 1), 0.5, np.float32)),
              cf.constant(SQ.astype(np.float32)))
        one = cf.nn.nce_loss(cf.constant(W0), cf.constant(B0), cf.constant(labels), cf.constant(X0), 5, V,
                             sampled_values=sv)
        split = cf.nn.nce_loss([cf.constant(s) for s in shards], cf.constant(B0), cf.constant(labels),
                               cf.constant(X0), 5, V, sampled_values=sv, partition_strategy=strategy)
    a, b = _run(g, [one, split])
    np.testing.assert_allclose(b, a, rtol=1e-12)


def test_the_gradient_reaches_only_the_looked_up_rows_sparsely():
    labels = np.array([[4], [3], [3], [11]])
    g = cf.Graph()
    with g.as_default():
        W = cf.Variable(W0.astype(np.float32), name="W")
        b = cf.Variable(B0.astype(np.float32), name="b")
        sv = (cf.constant(SAMPLED.astype(np.int64)), cf.constant(np.full((4, 1), 0.5, np.float32)),
              cf.constant(SQ.astype(np.float32)))
        loss = cf.reduce_mean(cf.nn.nce_loss(W, b, cf.constant(labels), cf.constant(X0.astype(np.float32)), 5, V,
                                             sampled_values=sv))
        gw, gb = cf.gradients(loss, [W, b])
        assert isinstance(gw, cf.IndexedSlices) and isinstance(gb, cf.IndexedSlices)
        step = cf.train.GradientDescentOptimizer(1.0).minimize(loss)
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        rows = set(s.run(gw.indices).tolist())
        s.run(step)
        w1, b1 = s.run([W, b])
    touched = {4, 3, 11} | set(SAMPLED.tolist())
    assert rows == touched
    untouched = sorted(set(range(V)) - touched)
    np.testing.assert_array_equal(w1[untouched], W0.astype(np.float32)[untouched])
    np.testing.assert_array_equal(b1[untouched], B0.astype(np.float32)[untouched])
    assert not np.allclose(w1[sorted(touched)], W0.astype(np.float32)[sorted(touched)])


def test_word2vec_style_training_with_the_default_sampler_lowers_the_loss():
    # skip-gram pairs of a tiny vocabulary whose ids are sorted by frequency
    vocab, dim, batch = 40, 8, 32
    centers = RNG.integers(0, vocab, 512)
    contexts = (centers + 1) % vocab
    g = cf.Graph()
    with g.as_default():
        cf.set_random_seed(0)
        emb = cf.Variable(cf.random_uniform((vocab, dim), -1.0, 1.0, seed=1))
        nce_w = cf.Variable(cf.truncated_normal((vocab, dim), stddev=1.0 / np.sqrt(dim), seed=2))
        nce_b = cf.Variable(cf.zeros((vocab,)))
        c = cf.placeholder(cf.int32, (batch,))
        t = cf.placeholder(cf.int64, (batch, 1))
        loss = cf.reduce_mean(cf.nn.nce_loss(nce_w, nce_b, t, cf.nn.embedding_lookup(emb, c), num_sampled=8,
                                             num_classes=vocab))
        step = cf.train.GradientDescentOptimizer(1.0).minimize(loss)
        init = cf.global_variables_initializer()
    losses = []
    with cf.Session(graph=g) as s:
        s.run(init)
        for i in range(60):
            k = (i * batch) % 512
            losses.append(s.run([loss, step], {c: centers[k:k + batch], t: contexts[k:k + batch, None]})[0])
    assert np.all(np.isfinite(losses))
    assert np.mean(losses[-10:]) < 0.6 * np.mean(losses[:10])


def test_argument_errors_are_clear():
    g = cf.Graph()
    with g.as_default():
        W, b, x = cf.constant(W0), cf.constant(B0), cf.constant(X0)
        with pytest.raises(cf.InvalidArgumentError, match="num_true=2"):
            cf.nn.nce_loss(W, b, cf.constant(np.zeros((4, 1), np.int64)), x, 5, V, num_true=2)
        with pytest.raises(cf.InvalidArgumentError, match="integer class ids"):
            cf.nn.sampled_softmax_loss(W, b, cf.constant(np.zeros((4, 1))), x, 5, V)
        with pytest.raises(cf.InvalidArgumentError, match="range is too small"):
            cf.nn.nce_loss(W, b, cf.constant(np.zeros((4, 1), np.int64)), x, 20, V)
