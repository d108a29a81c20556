"""tf.contrib.crf (collflow/contrib/crf.py): every score, the log-norm and both decoders checked
against brute force over all tag sequences (TensorFlow 2.x has no tf.contrib), the gradients
against finite differences (tests/gradcheck.py), and a BiLSTM-CRF tagger that learns."""
import itertools

import numpy as np
import pytest

import collflow.compat.v1 as tf
from gradcheck import Case, check_case

crf = tf.contrib.crf

pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test


def _score(x, trans, tags, n):
    if n <= 0:
        return 0.0
    return (sum(x[t, tags[t]] for t in range(n))
            + sum(trans[tags[t], tags[t + 1]] for t in range(n - 1)))


def _all_paths(x, trans, n, allowed=None):
    """{path: score} over every tag sequence of length n (allowed[t, tag] filters them)."""
    paths = itertools.product(range(x.shape[1]), repeat=n)
    if allowed is not None:
        paths = [p for p in paths if all(allowed[t, p[t]] for t in range(n))]
    return {p: _score(x, trans, p, n) for p in paths}


def _log_norm(x, trans, n, allowed=None):
    if n <= 0:
        return 0.0
    v = np.array(list(_all_paths(x, trans, n, allowed).values()), np.float64)
    return float(np.log(np.exp(v - v.max()).sum()) + v.max())


def _data(seed, b, t, o, dtype=np.float32):
    rng = np.random.RandomState(seed)
    x = rng.randn(b, t, o).astype(dtype)
    trans = rng.randn(o, o).astype(dtype)
    tags = rng.randint(0, o, (b, t)).astype(np.int32)
    lens = rng.randint(0, t + 1, b).astype(np.int32)
    lens[0] = t  # a full-length row
    return x, trans, tags, lens


@pytest.mark.parametrize("seed,b,t,o", [(0, 6, 4, 3), (1, 4, 5, 2), (2, 5, 1, 4), (3, 7, 3, 3)])
@pytest.mark.parametrize("static", [True, False])
def test_scores_norm_and_decode_match_brute_force(seed, b, t, o, static):
    x, trans, tags, lens = _data(seed, b, t, o)
    if static:
        X, Y, L = tf.constant(x), tf.constant(tags), tf.constant(lens)
    else:
        X = tf.placeholder(tf.float32, [None, None, o])
        Y = tf.placeholder(tf.int32, [None, None])
        L = tf.placeholder(tf.int32, [None])
    T = tf.constant(trans)
    ll, t_out = crf.crf_log_likelihood(X, Y, L, T)
    assert t_out is T
    fetch = dict(ll=ll, norm=crf.crf_log_norm(X, L, T), seq=crf.crf_sequence_score(X, Y, L, T),
                 unary=crf.crf_unary_score(Y, L, X), binary=crf.crf_binary_score(Y, L, T),
                 decode=crf.crf_decode(X, T, L))
    with tf.Session() as sess:
        r = sess.run(fetch, {} if static else {X: x, Y: tags, L: lens})
    tags_out, best = r["decode"]
    assert tags_out.dtype == np.int32 and tags_out.shape == (b, t)
    for i in range(b):
        n = lens[i]
        norm = _log_norm(x[i], trans, n)
        np.testing.assert_allclose(r["norm"][i], norm, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(r["seq"][i], _score(x[i], trans, tags[i], n), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(r["ll"][i], _score(x[i], trans, tags[i], n) - norm, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(r["unary"][i], sum(x[i, s, tags[i, s]] for s in range(n)), rtol=1e-5, atol=1e-6)
        if n >= 1:
            paths = _all_paths(x[i], trans, n)
            want = max(paths, key=paths.get)
            assert tuple(tags_out[i, :n]) == want
            np.testing.assert_allclose(best[i], paths[want], rtol=1e-5, atol=1e-6)
            path, score = crf.viterbi_decode(x[i, :n], trans)
            assert tuple(path) == want
            np.testing.assert_allclose(score, paths[want], rtol=1e-5, atol=1e-6)
        else:
            # TF's rule for an empty sequence: the first position's best tag and its score
            assert tags_out[i, 0] == np.argmax(x[i, 0])
            np.testing.assert_allclose(best[i], x[i, 0].max())
        assert (tags_out[i, max(n, 1):] == 0).all()


def test_multitag_score_is_the_log_norm_of_allowed_paths():
    x, trans, _, lens = _data(4, 5, 4, 3)
    rng = np.random.RandomState(5)
    bitmap = rng.rand(*x.shape) < 0.6
    bitmap[..., 0] |= ~bitmap.any(-1)  # each position allows at least one tag
    out = crf.crf_multitag_sequence_score(tf.constant(x), tf.constant(bitmap), tf.constant(lens), tf.constant(trans))
    with tf.Session() as sess:
        got = sess.run(out)
    for i in range(len(lens)):
        np.testing.assert_allclose(got[i], _log_norm(x[i], trans, lens[i], bitmap[i]), rtol=1e-5, atol=1e-5)


def test_forward_cell_in_dynamic_rnn_and_crf_forward():
    x, trans, _, lens = _data(6, 4, 5, 3)
    lens = np.maximum(lens, 1)
    cell = crf.CrfForwardRnnCell(tf.constant(trans))
    assert cell.state_size == 3 and cell.output_size == 3
    X = tf.constant(x)
    _, alphas = tf.nn.dynamic_rnn(cell, X[:, 1:], sequence_length=lens - 1, initial_state=X[:, 0])
    fwd = crf.crf_forward(X[:, 1:], X[:, 0], tf.constant(trans), tf.constant(lens))
    with tf.Session() as sess:
        a, f = sess.run([alphas, fwd])
    np.testing.assert_allclose(f, a, rtol=1e-6)
    for i in range(len(lens)):
        lse = np.log(np.exp(a[i].astype(np.float64)).sum())
        np.testing.assert_allclose(lse, _log_norm(x[i], trans, lens[i]), rtol=1e-5)


def test_int64_tags_and_lengths():
    x, trans, tags, lens = _data(7, 3, 4, 3)
    ll, _ = crf.crf_log_likelihood(tf.constant(x), tf.constant(tags.astype(np.int64)),
                                   tf.constant(lens.astype(np.int64)), tf.constant(trans))
    ll32, _ = crf.crf_log_likelihood(tf.constant(x), tf.constant(tags), tf.constant(lens), tf.constant(trans))
    with tf.Session() as sess:
        a, b = sess.run([ll, ll32])
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_log_likelihood_makes_transitions_variable():
    with tf.variable_scope("tagger"):
        ll, trans = crf.crf_log_likelihood(tf.zeros([2, 3, 5]), tf.zeros([2, 3], tf.int32), tf.constant([3, 2]))
    assert trans.name == "tagger/transitions:0" and trans.get_shape().as_list() == [5, 5]
    assert trans in tf.trainable_variables()


def test_errors_are_clear():
    with pytest.raises(ValueError, match="number of tags"):
        crf.crf_log_likelihood(tf.placeholder(tf.float32, [2, 3, None]), tf.zeros([2, 3], tf.int32), [3, 2])
    with pytest.raises(ValueError, match="batch_size, max_seq_len, num_tags"):
        crf.crf_log_norm(tf.zeros([2, 3]), [1, 2], tf.zeros([3, 3]))
    with pytest.raises(TypeError, match="integers"):
        crf.crf_log_norm(tf.zeros([2, 3, 3]), [1.0, 2.0], tf.zeros([3, 3]))
    with pytest.raises(ValueError, match="seq_len, num_tags"):
        crf.viterbi_decode(np.zeros((3, 4)), np.zeros((3, 3)))


def _grad_inputs(t, lens):
    def make(rng):
        return [rng.normal(size=(len(lens), t, 3)), rng.normal(size=(3, 3))]
    return make


LENS = np.array([4, 2, 1, 0, 3], np.int32)
TAGS = np.random.RandomState(9).randint(0, 3, (5, 4)).astype(np.int32)


@pytest.mark.parametrize("case", [
    Case("Select", lambda x, t: crf.crf_log_likelihood(x, TAGS, LENS, t)[0], [(5, 4, 3), (3, 3)],
         make_inputs=_grad_inputs(4, LENS), id="crf_log_likelihood"),
    Case("Select", lambda x, t: crf.crf_log_norm(x, LENS, t), [(5, 4, 3), (3, 3)],
         make_inputs=_grad_inputs(4, LENS), id="crf_log_norm"),
    Case("Max", lambda x, t: crf.crf_decode(x, t, LENS)[1], [(5, 4, 3), (3, 3)],
         make_inputs=_grad_inputs(4, LENS), id="crf_decode_best_score"),
    Case("Select", lambda x, t: crf.crf_multitag_sequence_score(
        x, np.random.RandomState(2).rand(5, 4, 3) < 0.7, LENS, t), [(5, 4, 3), (3, 3)],
         make_inputs=_grad_inputs(4, LENS), id="crf_multitag_sequence_score"),
], ids=str)
def test_gradients_match_finite_differences(case):
    check_case(case)


def test_bilstm_crf_tagger_learns():
    """A BiLSTM-CRF tagger as TF1 programs write it: the loss falls and decoding gets the
    (learnable) tags right."""
    rng = np.random.RandomState(0)
    V, O, B, T = 12, 4, 16, 6
    words = rng.randint(0, V, (B, T)).astype(np.int32)
    lens = rng.randint(2, T + 1, B).astype(np.int32)
    tags = (words % O).astype(np.int32)  # each word's tag is fixed
    tf.set_random_seed(1)
    w = tf.placeholder(tf.int32, [None, None])
    y = tf.placeholder(tf.int32, [None, None])
    n = tf.placeholder(tf.int32, [None])
    emb = tf.nn.embedding_lookup(tf.get_variable("emb", [V, 8]), w)
    (fw, bw), _ = tf.nn.bidirectional_dynamic_rnn(tf.nn.rnn_cell.LSTMCell(8), tf.nn.rnn_cell.LSTMCell(8), emb,
                                                  sequence_length=n, dtype=tf.float32)
    logits = tf.layers.dense(tf.concat([fw, bw], -1), O)
    ll, trans = crf.crf_log_likelihood(logits, y, n)
    loss = tf.reduce_mean(-ll)
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    pred, _ = crf.crf_decode(logits, trans, n)
    feed = {w: words, y: tags, n: lens}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, feed)
        for _ in range(60):
            sess.run(train, feed)
        last, p = sess.run([loss, pred], feed)
    assert last < first * 0.2, (first, last)
    mask = np.arange(T)[None] < lens[:, None]
    assert (p[mask] == tags[mask]).mean() > 0.95
    assert (p[~mask] == 0).all()
