"""tf.contrib.legacy_seq2seq (collflow/contrib/legacy_seq2seq.py) and EmbeddingWrapper: NumPy
references for the decoders and losses, TF 1.15's variable names, the feed_previous cond, the
buckets' shared variables, finite differences, and the char-RNN and translate programs that
use them learning.  TensorFlow 2.x has no tf.contrib to compare with."""
import copy

import numpy as np
import pytest

import collflow.compat.v1 as tf
from gradcheck import Case, check_case

ls = tf.contrib.legacy_seq2seq
pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _values(sess):
    return {v.name: sess.run(v) for v in tf.global_variables()}


def _gru(x, h, p, prefix):
    gk, gb = p[prefix + "gru_cell/gates/kernel:0"], p[prefix + "gru_cell/gates/bias:0"]
    ck, cb = p[prefix + "gru_cell/candidate/kernel:0"], p[prefix + "gru_cell/candidate/bias:0"]
    r, u = np.split(1 / (1 + np.exp(-(np.concatenate([x, h], 1) @ gk + gb))), 2, axis=1)
    c = np.tanh(np.concatenate([x, r * h], 1) @ ck + cb)
    return u * h + (1 - u) * c


def test_rnn_decoder_with_loop_function_matches_numpy():
    rng = np.random.RandomState(0)
    xs = [rng.randn(2, 3).astype(np.float32) for _ in range(4)]
    h0 = rng.randn(2, 4).astype(np.float32)
    proj = tf.constant(rng.randn(4, 3).astype(np.float32))
    outs, st = ls.rnn_decoder([tf.constant(x) for x in xs], tf.constant(h0), tf.nn.rnn_cell.GRUCell(4),
                              loop_function=lambda prev, i: tf.tanh(tf.matmul(prev, proj)))
    assert [v.name for v in tf.global_variables()][0] == "rnn_decoder/gru_cell/gates/kernel:0"
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        p, got, got_st, pr = _values(s), s.run(outs), s.run(st), s.run(proj)
    h, inp = h0, xs[0]
    for t in range(4):
        h = _gru(inp, h, p, "rnn_decoder/")
        np.testing.assert_allclose(got[t], h, rtol=1e-5, atol=1e-6)
        inp = np.tanh(h @ pr)  # steps after the first read the previous output
    np.testing.assert_allclose(got_st, h, rtol=1e-5, atol=1e-6)


def test_basic_and_tied_seq2seq_names_and_sharing():
    enc = [tf.ones([2, 3]) * i for i in range(3)]
    dec = [tf.ones([2, 3]) * -i for i in range(2)]
    outs, _ = ls.basic_rnn_seq2seq(enc, dec, tf.nn.rnn_cell.BasicLSTMCell(4))
    names = [v.name for v in tf.global_variables()]
    assert names == ["basic_rnn_seq2seq/rnn/basic_lstm_cell/kernel:0", "basic_rnn_seq2seq/rnn/basic_lstm_cell/bias:0",
                     "basic_rnn_seq2seq/rnn_decoder/basic_lstm_cell/kernel:0",
                     "basic_rnn_seq2seq/rnn_decoder/basic_lstm_cell/bias:0"]
    assert len(outs) == 2 and outs[0].get_shape().as_list() == [2, 4]
    with tf.Graph().as_default():
        outs, st = ls.tied_rnn_seq2seq([tf.ones([2, 3])] * 3, [tf.ones([2, 3])] * 2, tf.nn.rnn_cell.GRUCell(4))
        assert [v.name for v in tf.global_variables()] == [
            f"combined_tied_rnn_seq2seq/tied_rnn_seq2seq/gru_cell/{n}:0"
            for n in ("gates/kernel", "gates/bias", "candidate/kernel", "candidate/bias")]


def _attention_numpy(p, pre, xs, h0, att, heads, out_size, initial_state_attention):
    """TF 1.15's attention_decoder in NumPy (GRU cell), with all variables from p."""
    A = att.shape[2]
    feats = [att @ p[f"{pre}AttnW_{a}:0"][0, 0] for a in range(heads)]

    def attention(q):
        reads = []
        for a in range(heads):
            y = q @ p[f"{pre}Attention_{a}/kernel:0"] + p[f"{pre}Attention_{a}/bias:0"]
            s = (p[f"{pre}AttnV_{a}:0"] * np.tanh(feats[a] + y[:, None, :])).sum(-1)
            reads.append((_softmax(s)[:, :, None] * att).sum(1))
        return reads
    h = h0
    attns = attention(h0) if initial_state_attention else [np.zeros((len(h0), A), np.float32)] * heads
    outs = []
    for x in xs:
        inp = np.concatenate([x] + attns, 1) @ p[pre + "kernel:0"] + p[pre + "bias:0"]
        h = _gru(inp, h, p, pre)
        attns = attention(h)
        o = np.concatenate([h] + attns, 1) @ p[pre + "AttnOutputProjection/kernel:0"]
        outs.append(o + p[pre + "AttnOutputProjection/bias:0"])
    return outs, h


@pytest.mark.parametrize("heads,initial_state_attention,out_size", [(1, False, None), (2, True, 3)])
def test_attention_decoder_matches_numpy(heads, initial_state_attention, out_size):
    rng = np.random.RandomState(1)
    xs = [rng.randn(2, 3).astype(np.float32) for _ in range(3)]
    h0 = rng.randn(2, 4).astype(np.float32)
    att = rng.randn(2, 5, 6).astype(np.float32)
    att_in = tf.placeholder(tf.float32, [None, None, 6])  # the attention length known only when run
    outs, st = ls.attention_decoder([tf.constant(x) for x in xs], tf.constant(h0), att_in,
                                    tf.nn.rnn_cell.GRUCell(4), output_size=out_size, num_heads=heads,
                                    initial_state_attention=initial_state_attention)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        p = _values(s)
        got, got_st = s.run([outs, st], {att_in: att})
    want, want_st = _attention_numpy(p, "attention_decoder/", xs, h0, att, heads, out_size, initial_state_attention)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_st, want_st, rtol=1e-5, atol=1e-5)
    assert got[0].shape == (2, out_size or 4)


def test_sequence_losses_match_numpy():
    rng = np.random.RandomState(2)
    logits = [rng.randn(4, 5).astype(np.float32) for _ in range(3)]
    targets = [rng.randint(0, 5, 4).astype(np.int32) for _ in range(3)]
    weights = [rng.rand(4).astype(np.float32) for _ in range(3)]
    weights[1][2] = 0.0
    xent = [-np.log(_softmax(l.astype(np.float64))[np.arange(4), t]) for l, t in zip(logits, targets)]
    by_example = sum(x * w for x, w in zip(xent, weights))
    total = sum(weights) + 1e-12
    fetch = [ls.sequence_loss_by_example(logits, targets, weights),
             ls.sequence_loss_by_example(logits, targets, weights, average_across_timesteps=False),
             ls.sequence_loss(logits, targets, weights),
             ls.sequence_loss(logits, targets, weights, average_across_batch=False),
             ls.sequence_loss(logits, targets, weights, softmax_loss_function=lambda labels, logits:
                              tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits) * 2)]
    with tf.Session() as s:
        a, b, c, d, e = s.run(fetch)
    np.testing.assert_allclose(a, by_example / total, rtol=1e-5)
    np.testing.assert_allclose(b, by_example, rtol=1e-5)
    np.testing.assert_allclose(c, (by_example / total).sum() / 4, rtol=1e-5)
    np.testing.assert_allclose(d, (by_example / total).sum(), rtol=1e-5)
    np.testing.assert_allclose(e, 2 * c, rtol=1e-5)
    with pytest.raises(ValueError, match="Lengths of logits, weights, and targets must be the same"):
        ls.sequence_loss_by_example(logits, targets[:2], weights)


def test_feed_previous_tensor_picks_the_matching_decoder():
    rng = np.random.RandomState(3)
    V = 6
    enc = [tf.constant(rng.randint(0, V, 2).astype(np.int32)) for _ in range(3)]
    dec = [tf.constant(rng.randint(0, V, 2).astype(np.int32)) for _ in range(3)]
    feed = tf.placeholder(tf.bool, [])
    for fn in (ls.embedding_rnn_seq2seq, ls.embedding_attention_seq2seq):
        with tf.variable_scope(fn.__name__):
            both, st = fn(enc, dec, tf.nn.rnn_cell.LSTMCell(4), V, V, 3, feed_previous=feed)
            n_vars = len(tf.global_variables())
        with tf.variable_scope(fn.__name__, reuse=True):
            on, st_on = fn(enc, dec, tf.nn.rnn_cell.LSTMCell(4), V, V, 3, feed_previous=True)
            off, _ = fn(enc, dec, tf.nn.rnn_cell.LSTMCell(4), V, V, 3, feed_previous=False)
        assert len(tf.global_variables()) == n_vars  # every decoder shares the same variables
        assert isinstance(st, tf.nn.rnn_cell.LSTMStateTuple)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            a, b, c, d = s.run([both, on, off, st.h], {feed: True})
            e = s.run(both, {feed: False})
            np.testing.assert_allclose(d, s.run(st_on.h), rtol=1e-6)
        np.testing.assert_allclose(a, b, rtol=1e-6)
        np.testing.assert_allclose(e, c, rtol=1e-6)
        assert not np.allclose(b, c)


def test_embedding_tied_seq2seq_and_projection():
    V = 5
    enc = [tf.constant([1, 2])] * 3
    dec = [tf.constant([0, 4])] * 2
    w = tf.get_variable("proj_w", [4, V])
    b = tf.get_variable("proj_b", [V])
    outs, _ = ls.embedding_tied_rnn_seq2seq(enc, dec, tf.nn.rnn_cell.GRUCell(4), V, 3,
                                            output_projection=(w, b), feed_previous=True)
    names = [v.name for v in tf.global_variables()]
    assert "embedding_tied_rnn_seq2seq/embedding:0" in names
    assert "embedding_tied_rnn_seq2seq/combined_tied_rnn_seq2seq/tied_rnn_seq2seq/gru_cell/gates/kernel:0" in names
    assert outs[0].get_shape().as_list() == [2, 4]
    with pytest.raises(ValueError, match="output_projection"):
        ls.embedding_rnn_decoder(dec, tf.zeros([2, 4]), tf.nn.rnn_cell.GRUCell(4), V, 3,
                                 output_projection=(tf.zeros([4, V + 1]), tf.zeros([V + 1])))


def test_embedding_wrapper_in_static_rnn():
    cell = tf.contrib.rnn.EmbeddingWrapper(tf.nn.rnn_cell.BasicRNNCell(3), embedding_classes=5, embedding_size=2)
    ids = [tf.constant([0, 4]), tf.constant([3, 3])]
    outs, st = tf.nn.static_rnn(cell, ids, dtype=tf.float32)
    assert [v.name for v in tf.global_variables()] == [
        "rnn/embedding_wrapper/embedding:0", "rnn/embedding_wrapper/basic_rnn_cell/kernel:0",
        "rnn/embedding_wrapper/basic_rnn_cell/bias:0"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        p, got = _values(s), s.run(outs)
    emb = p["rnn/embedding_wrapper/embedding:0"]
    assert np.abs(emb).max() <= np.sqrt(3)
    h = np.zeros((2, 3), np.float32)
    for t, i in enumerate(([0, 4], [3, 3])):
        h = np.tanh(np.concatenate([emb[i], h], 1) @ p["rnn/embedding_wrapper/basic_rnn_cell/kernel:0"]
                    + p["rnn/embedding_wrapper/basic_rnn_cell/bias:0"])
        np.testing.assert_allclose(got[t], h, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="must be > 0"):
        tf.contrib.rnn.EmbeddingWrapper(tf.nn.rnn_cell.GRUCell(2), 0, 2)
    with pytest.raises(ValueError, match="dtype must be specified"):
        tf.nn.static_rnn(tf.contrib.rnn.EmbeddingWrapper(tf.nn.rnn_cell.GRUCell(2), 3, 2), ids)


def test_translate_model_with_buckets_learns():
    """The translate tutorial's model: buckets share variables, sampled softmax aside."""
    rng = np.random.RandomState(4)
    V, B = 8, 6
    enc = [tf.placeholder(tf.int32, [None]) for _ in range(4)]
    dec = [tf.placeholder(tf.int32, [None]) for _ in range(4)]
    wts = [tf.placeholder(tf.float32, [None]) for _ in range(3)]
    cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.GRUCell(8) for _ in range(2)])

    def seq2seq(e, d):
        return ls.embedding_attention_seq2seq(e, d, copy.deepcopy(cell), V, V, 6, feed_previous=False)
    targets = dec[1:]
    outputs, losses = ls.model_with_buckets(enc, dec, targets, wts, [(2, 2), (4, 3)], seq2seq)
    n_vars = len(tf.trainable_variables())
    assert len(outputs) == 2 and len(outputs[1]) == 3 and outputs[1][0].get_shape().as_list()[-1] == V
    opt = tf.train.AdamOptimizer(0.03)
    train = [opt.minimize(l) for l in losses]
    assert len(tf.trainable_variables()) == n_vars
    src = rng.randint(1, V, (B, 4)).astype(np.int32)
    feed = {p: src[:, i] for i, p in enumerate(enc)}
    feed.update({p: (np.zeros(B, np.int32) if i == 0 else src[:, i - 1]) for i, p in enumerate(dec)})
    feed.update({w: np.ones(B, np.float32) for w in wts})
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        first = s.run(losses, feed)
        for step in range(40):
            s.run(train[step % 2], feed)
        last = s.run(losses, feed)
    assert last[0] < 0.3 * first[0] and last[1] < 0.3 * first[1], (first, last)


def test_char_rnn_with_rnn_decoder_learns():
    """char-rnn-tensorflow's model: rnn_decoder over embedded steps and sequence_loss_by_example."""
    rng = np.random.RandomState(5)
    V, B, T = 10, 4, 6
    text = rng.randint(0, V, B * (T + 1)).reshape(B, T + 1).astype(np.int32)
    x = tf.placeholder(tf.int32, [B, T])
    y = tf.placeholder(tf.int32, [B, T])
    cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(16) for _ in range(2)])
    with tf.variable_scope("rnnlm"):
        w = tf.get_variable("softmax_w", [16, V])
        b = tf.get_variable("softmax_b", [V])
        emb = tf.get_variable("embedding", [V, 8])
        inputs = [tf.squeeze(t, [1]) for t in tf.split(tf.nn.embedding_lookup(emb, x), T, 1)]
    outputs, last = ls.rnn_decoder(inputs, cell.zero_state(B, tf.float32), cell, scope="rnnlm")
    logits = tf.matmul(tf.reshape(tf.concat(outputs, 1), [-1, 16]), w) + b
    loss = ls.sequence_loss_by_example([logits], [tf.reshape(y, [-1])], [tf.ones([B * T])])
    cost = tf.reduce_sum(loss) / B / T
    train = tf.train.AdamOptimizer(0.02).minimize(cost)
    feed = {x: text[:, :-1], y: text[:, 1:]}
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        first = s.run(cost, feed)
        for _ in range(80):
            s.run(train, feed)
        assert s.run(cost, feed) < 0.3 * first


def _attn(x, att):
    outs, st = ls.attention_decoder(tf.unstack(x, axis=1), tf.zeros([2, 3], tf.float64), att,
                                    tf.nn.rnn_cell.GRUCell(3), num_heads=2, initial_state_attention=True,
                                    dtype=tf.float64)
    return outs + [st]


@pytest.mark.parametrize("case", [Case("Softmax", _attn, [(2, 3, 2), (2, 4, 5)], id="attention_decoder")], ids=str)
def test_gradients_match_finite_differences(case):
    check_case(case)
