"""tf.contrib.seq2seq (collflow/contrib/seq2seq/): sequence_loss, the helpers, BasicDecoder,
dynamic_decode and the attention mechanisms, checked against NumPy by hand (TensorFlow 2.x
has no tf.contrib, and tensorflow_addons' seq2seq does not import with TF 2.21), and gradients
against finite differences (tests/gradcheck.py)."""
import numpy as np
import pytest

import collflow as cf
import collflow.compat.v1 as tf
from gradcheck import Case, check_case

s2s = tf.contrib.seq2seq


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _run(fetches, graph, feed=None):
    with tf.Session(graph=graph) as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


# -- sequence_loss ------------------------------------------------------------------------

def _xent_by_hand(logits, targets):
    p = _softmax(logits.astype(np.float64))
    b, t = targets.shape
    return -np.log(p[np.arange(b)[:, None], np.arange(t)[None, :], targets])


@pytest.mark.parametrize("mode", ["avg_both", "sum_both", "avg_time", "avg_batch", "sum_time", "sum_batch", "none",
                                  "avg_time_sum_batch"])
def test_sequence_loss_matches_numpy(mode):
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(3, 4, 5)).astype(np.float32)
    targets = rng.integers(0, 5, size=(3, 4)).astype(np.int32)
    weights = np.array([[1, 1, 0.5, 0], [1, 0, 0, 0], [2, 1, 1, 1]], np.float32)
    kw = dict(average_across_timesteps=False, average_across_batch=False)
    if mode == "avg_both":
        kw = {}
    elif mode == "sum_both":
        kw.update(sum_over_timesteps=True, sum_over_batch=True)
    elif mode == "avg_time":
        kw.update(average_across_timesteps=True)
    elif mode == "avg_batch":
        kw.update(average_across_batch=True)
    elif mode == "sum_time":
        kw.update(sum_over_timesteps=True)
    elif mode == "sum_batch":
        kw.update(sum_over_batch=True)
    elif mode == "avg_time_sum_batch":
        kw.update(average_across_timesteps=True, sum_over_batch=True)
    g = tf.Graph()
    with g.as_default():
        loss = s2s.sequence_loss(tf.constant(logits), tf.constant(targets), tf.constant(weights), **kw)
    got = _run(loss, g)
    ce = _xent_by_hand(logits, targets) * weights
    nz = (weights != 0).astype(np.float64)
    want = {"avg_both": ce.sum() / weights.sum(),
            "sum_both": ce.sum() / nz.sum(),
            "avg_time": ce.sum(1) / weights.sum(1),
            "avg_batch": ce.sum(0) / weights.sum(0),
            "sum_time": ce.sum(1) / nz.sum(1),
            "sum_batch": ce.sum(0) / nz.sum(0),
            "none": ce,
            # averaged over time ([batch]), then summed over the batch and divided by the
            # nonzero weights per step ([time]): TF 1.x's reductions broadcast to [time]
            "avg_time_sum_batch": (ce.sum(1) / weights.sum(1)).sum() / nz.sum(0)}[mode]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_sequence_loss_zero_weights_and_custom_loss():
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(2, 3, 4)).astype(np.float32)
    targets = rng.integers(0, 4, size=(2, 3)).astype(np.int32)
    weights = np.array([[1, 1, 1], [0, 0, 0]], np.float32)
    seen = {}

    def loss_fn(labels, logits):
        seen["shapes"] = (labels.shape.as_list(), logits.shape.as_list())
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits) * 2.0

    g = tf.Graph()
    with g.as_default():
        per_row = s2s.sequence_loss(logits, targets, weights, average_across_batch=False)
        custom = s2s.sequence_loss(logits, targets, weights, softmax_loss_function=loss_fn)
    r, c = _run([per_row, custom], g)
    ce = _xent_by_hand(logits, targets)
    np.testing.assert_allclose(r, [ce[0].mean(), 0.0], rtol=1e-5)   # 0/0 -> 0 (div_no_nan)
    np.testing.assert_allclose(c, 2 * ce[0].mean(), rtol=1e-5)
    assert seen["shapes"] == ([6], [6, 4])
    with pytest.raises(ValueError):
        s2s.sequence_loss(logits, targets, weights, average_across_timesteps=True, sum_over_timesteps=True)
    with pytest.raises(ValueError):
        s2s.sequence_loss(logits, targets, weights, sum_over_batch=True)   # with average_across_batch


# -- TrainingHelper + BasicDecoder + dynamic_decode ----------------------------------------

@pytest.mark.parametrize("time_major", [False, True])
def test_training_decode_equals_dynamic_rnn(time_major):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 5, 4)).astype(np.float32)
    lens = np.array([5, 2, 3], np.int32)
    g = tf.Graph()
    with g.as_default():
        cell = tf.nn.rnn_cell.LSTMCell(6)
        init = cell.zero_state(3, tf.float32)
        xin = np.transpose(x, (1, 0, 2)) if time_major else x
        helper = s2s.TrainingHelper(tf.constant(xin), tf.constant(lens), time_major=time_major)
        dec = s2s.BasicDecoder(cell, helper, init)
        out, st, sl = s2s.dynamic_decode(dec, impute_finished=True, output_time_major=time_major)
        out2, _, sl2 = s2s.dynamic_decode(dec, impute_finished=False)
        ro, rs = tf.nn.dynamic_rnn(cell, tf.constant(x), sequence_length=lens, initial_state=init)
        names = sorted(v.op.name for v in tf.global_variables())
    o, s, l, o2, l2, r, rst = _run([out, st, sl, out2, sl2, ro, rs], g)
    assert names == ["decoder/lstm_cell/bias", "decoder/lstm_cell/kernel"]
    rnn_out = o.rnn_output.transpose(1, 0, 2) if time_major else o.rnn_output
    np.testing.assert_allclose(rnn_out, r, rtol=1e-5, atol=1e-6)   # zeros past each length on both sides
    np.testing.assert_allclose(s.c, rst.c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s.h, rst.h, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(l, lens)
    np.testing.assert_array_equal(l2, lens)
    sid = o.sample_id.T if time_major else o.sample_id
    want_ids = np.where(np.arange(5)[None, :] < lens[:, None], r.argmax(-1), 0)
    np.testing.assert_array_equal(sid, want_ids)
    # without impute_finished the outputs inside each length are the same, past it not zeroed
    mask = np.arange(5)[None, :, None] < lens[:, None, None]
    np.testing.assert_allclose(np.where(mask, o2.rnn_output, 0), r, rtol=1e-5, atol=1e-6)
    assert np.abs(o2.rnn_output[1, 3:]).sum() > 0


def test_training_decode_maximum_iterations_and_dynamic_batch():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 6, 3)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        xp = tf.placeholder(tf.float32, [None, None, 3])
        lp = tf.placeholder(tf.int32, [None])
        cell = tf.nn.rnn_cell.GRUCell(4)
        init = cell.zero_state(tf.shape(xp)[0], tf.float32)
        dec = s2s.BasicDecoder(cell, s2s.TrainingHelper(xp, lp), init,
                               output_layer=tf.layers.Dense(5, name="proj"))
        out, st, sl = s2s.dynamic_decode(dec, maximum_iterations=4, impute_finished=True)
        ro, _ = tf.nn.dynamic_rnn(cell, xp[:, :4], sequence_length=tf.minimum(lp, 4), initial_state=init)
        with tf.variable_scope("decoder/proj", reuse=True):
            k = tf.get_variable("kernel")
            b = tf.get_variable("bias")
    o, l, r, kk, bb = _run([out, sl, ro, k, b], g, {xp: x, lp: [6, 3]})
    np.testing.assert_array_equal(l, [4, 3])
    assert o.rnn_output.shape == (2, 4, 5)
    want = np.where(np.arange(4)[None, :, None] < np.array([4, 3])[:, None, None], r @ kk + bb, 0)
    np.testing.assert_allclose(o.rnn_output, want, rtol=1e-5, atol=1e-6)


# -- GreedyEmbeddingHelper -----------------------------------------------------------------

def _greedy_by_hand(emb, start, w, b, wo, bo, n_steps):
    """BasicRNNCell (tanh([x, h] W + b)) and a Dense output layer, fed back greedily."""
    h = np.zeros((len(start), w.shape[1]), np.float64)
    x = emb[start]
    ids, logits = [], []
    for _ in range(n_steps):
        h = np.tanh(np.concatenate([x, h], 1) @ w + b)
        lo = h @ wo + bo
        s = lo.argmax(-1)
        ids.append(s)
        logits.append(lo)
        x = emb[s]
    return np.stack(ids, 1), np.stack(logits, 1)


@pytest.mark.parametrize("impute", [False, True])
def test_greedy_decode_matches_by_hand_loop(impute):
    V, E, H, B, MAX = 6, 3, 5, 4, 7
    rng = np.random.default_rng(5)
    g = tf.Graph()
    with g.as_default():
        emb = tf.constant(rng.normal(size=(V, E)).astype(np.float32))
        end = tf.placeholder(tf.int32, [])
        cell = tf.nn.rnn_cell.BasicRNNCell(H)
        helper = s2s.GreedyEmbeddingHelper(emb, tf.constant([1, 2, 3, 4]), end)
        dec = s2s.BasicDecoder(cell, helper, cell.zero_state(B, tf.float32),
                               output_layer=tf.layers.Dense(V, name="out"))
        out, st, sl = s2s.dynamic_decode(dec, maximum_iterations=MAX, impute_finished=impute)
        vars_ = {v.op.name: v for v in tf.global_variables()}
        assert sorted(vars_) == ["decoder/basic_rnn_cell/bias", "decoder/basic_rnn_cell/kernel",
                                 "decoder/out/bias", "decoder/out/kernel"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w, b, wo, bo, e = sess.run([vars_["decoder/basic_rnn_cell/kernel"], vars_["decoder/basic_rnn_cell/bias"],
                                        vars_["decoder/out/kernel"], vars_["decoder/out/bias"], emb])
            ids, logits = _greedy_by_hand(e, np.array([1, 2, 3, 4]), w, b, wo, bo, MAX)
            # an end token that some entry emits early: the entry with the earliest emission
            end_tok = int(ids[0, 1])
            lengths = np.array([(list(r).index(end_tok) + 1) if end_tok in r else MAX for r in ids])
            o, l = sess.run([out, sl], {end: end_tok})
            never = V + 3   # a token that is never emitted: every entry runs maximum_iterations
            o_max, l_max = sess.run([out, sl], {end: never})
    np.testing.assert_array_equal(l, lengths)
    n = lengths.max()
    assert o.sample_id.shape == (B, n)
    live = np.arange(n)[None, :] < lengths[:, None]
    if impute:
        np.testing.assert_array_equal(o.sample_id, np.where(live, ids[:, :n], 0))
        np.testing.assert_allclose(o.rnn_output, np.where(live[..., None], logits[:, :n], 0), rtol=1e-4, atol=1e-5)
    else:
        np.testing.assert_array_equal(o.sample_id, ids[:, :n])
        np.testing.assert_allclose(o.rnn_output, logits[:, :n], rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(l_max, [MAX] * B)
    np.testing.assert_array_equal(o_max.sample_id, ids)


def test_sample_embedding_helper_samples_valid_ids():
    V = 5
    g = tf.Graph()
    with g.as_default():
        emb = tf.constant(np.eye(V, dtype=np.float32))
        cell = tf.nn.rnn_cell.BasicRNNCell(4)
        helper = s2s.SampleEmbeddingHelper(emb, tf.fill([3], 0), V + 1, softmax_temperature=0.5, seed=3)
        dec = s2s.BasicDecoder(cell, helper, cell.zero_state(3, tf.float32), output_layer=tf.layers.Dense(V))
        out, _, sl = s2s.dynamic_decode(dec, maximum_iterations=6)
    o, l = _run([out, sl], g)
    assert o.sample_id.shape == (3, 6) and o.sample_id.dtype == np.int32
    assert ((o.sample_id >= 0) & (o.sample_id < V)).all()
    np.testing.assert_array_equal(l, [6, 6, 6])


# -- attention -----------------------------------------------------------------------------

def _attention_case(kind, normalize_or_scale, seq_len):
    rng = np.random.default_rng(6)
    B, T, D, U = 3, 4, 5, 6
    mem = rng.normal(size=(B, T, D)).astype(np.float32)
    q = rng.normal(size=(B, U)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        if kind == "bahdanau":
            mech = s2s.BahdanauAttention(U, tf.constant(mem), memory_sequence_length=seq_len,
                                         normalize=normalize_or_scale)
        else:
            mech = s2s.LuongAttention(U, tf.constant(mem), memory_sequence_length=seq_len, scale=normalize_or_scale)
        prev = mech.initial_state(B, tf.float32)
        align, nxt = mech(tf.constant(q), prev)
        names = {v.op.name: v for v in tf.global_variables()}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            if normalize_or_scale and "attention_g" in " ".join(names):
                gname = [n for n in names if n.endswith("attention_g")][0]
                sess.run(names[gname].assign(1.7))
            vals = sess.run({n: v for n, v in names.items()})
            a, n2, values, p = sess.run([align, nxt, mech.values, prev])
    return mem, q, names, vals, a, n2, values, p


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("seq_len", [None, [4, 2, 3]])
def test_bahdanau_attention_by_hand(normalize, seq_len):
    mem, q, names, vals, a, n2, values, p = _attention_case("bahdanau", normalize, seq_len)
    want_names = {"memory_layer/kernel", "bahdanau_attention/query_layer/kernel", "bahdanau_attention/attention_v"}
    if normalize:
        want_names |= {"bahdanau_attention/attention_g", "bahdanau_attention/attention_b"}
    assert set(names) == want_names
    m = mem.astype(np.float64)
    if seq_len is not None:
        m = m * (np.arange(4)[None, :] < np.array(seq_len)[:, None])[..., None]
    keys = m @ vals["memory_layer/kernel"]
    pq = q @ vals["bahdanau_attention/query_layer/kernel"]
    v = vals["bahdanau_attention/attention_v"]
    if normalize:
        v = vals["bahdanau_attention/attention_g"] * v / np.sqrt((v ** 2).sum())
        score = (v * np.tanh(keys + pq[:, None] + vals["bahdanau_attention/attention_b"])).sum(-1)
    else:
        score = (v * np.tanh(keys + pq[:, None])).sum(-1)
    if seq_len is not None:
        score = np.where(np.arange(4)[None, :] < np.array(seq_len)[:, None], score, -np.inf)
    np.testing.assert_allclose(values, m, rtol=1e-6)
    np.testing.assert_allclose(a, _softmax(score), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(n2, a)
    np.testing.assert_array_equal(p, np.zeros((3, 4)))


@pytest.mark.parametrize("scale", [False, True])
@pytest.mark.parametrize("seq_len", [None, [1, 4, 2]])
def test_luong_attention_by_hand(scale, seq_len):
    mem, q, names, vals, a, _, _, _ = _attention_case("luong", scale, seq_len)
    assert set(names) == ({"memory_layer/kernel"} | ({"luong_attention/attention_g"} if scale else set()))
    m = mem.astype(np.float64)
    if seq_len is not None:
        m = m * (np.arange(4)[None, :] < np.array(seq_len)[:, None])[..., None]
    score = np.einsum("bu,btu->bt", q, m @ vals["memory_layer/kernel"])
    if scale:
        assert vals["luong_attention/attention_g"] == pytest.approx(1.7)
        score = 1.7 * score
    if seq_len is not None:
        score = np.where(np.arange(4)[None, :] < np.array(seq_len)[:, None], score, -np.inf)
        assert (a[0, 1:] == 0).all()
    np.testing.assert_allclose(a, _softmax(score), rtol=1e-5, atol=1e-6)


def test_luong_attention_rejects_mismatched_query():
    g = tf.Graph()
    with g.as_default():
        mech = s2s.LuongAttention(4, tf.zeros([2, 3, 5]))
        with pytest.raises(ValueError):
            mech(tf.zeros([2, 3]), mech.initial_state(2, tf.float32))


@pytest.mark.parametrize("output_attention", [True, False])
def test_attention_wrapper_step_by_hand(output_attention):
    rng = np.random.default_rng(7)
    B, T, D, U, H, A, E = 2, 3, 4, 5, 6, 3, 2
    mem = rng.normal(size=(B, T, D)).astype(np.float32)
    xs = rng.normal(size=(B, 2, E)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        mech = s2s.BahdanauAttention(U, tf.constant(mem), memory_sequence_length=[3, 2])
        cell = s2s.AttentionWrapper(tf.nn.rnn_cell.BasicRNNCell(H), mech, attention_layer_size=A,
                                    alignment_history=True, output_attention=output_attention)
        assert cell.output_size == (A if output_attention else H)
        s0 = cell.zero_state(B, tf.float32)
        assert isinstance(s0, s2s.AttentionWrapperState)
        o1, s1 = cell(tf.constant(xs[:, 0]), s0)
        o2, s2 = cell(tf.constant(xs[:, 1]), s1)
        hist = s2.alignment_history.stack()
        names = {v.op.name: v for v in tf.global_variables()}
        fetch = [o1, o2, s2.attention, s2.alignments, s2.time, hist, s2.cell_state]
        res, vals = None, None
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            vals = sess.run(names)
            res = sess.run(fetch)
    assert set(names) == {"memory_layer/kernel", "attention_wrapper/basic_rnn_cell/kernel",
                          "attention_wrapper/basic_rnn_cell/bias", "attention_wrapper/attention_layer/kernel",
                          "attention_wrapper/bahdanau_attention/query_layer/kernel",
                          "attention_wrapper/bahdanau_attention/attention_v"}
    mask = np.arange(T)[None, :] < np.array([3, 2])[:, None]
    m = mem * mask[..., None]
    keys = m @ vals["memory_layer/kernel"]
    h = np.zeros((B, H))
    att = np.zeros((B, A))
    outs, aligns = [], []
    for t in range(2):
        h = np.tanh(np.concatenate([xs[:, t], att, h], 1) @ vals["attention_wrapper/basic_rnn_cell/kernel"]
                    + vals["attention_wrapper/basic_rnn_cell/bias"])
        pq = h @ vals["attention_wrapper/bahdanau_attention/query_layer/kernel"]
        score = (vals["attention_wrapper/bahdanau_attention/attention_v"] * np.tanh(keys + pq[:, None])).sum(-1)
        al = _softmax(np.where(mask, score, -np.inf))
        ctx = np.einsum("bt,btd->bd", al, m)
        att = np.concatenate([h, ctx], 1) @ vals["attention_wrapper/attention_layer/kernel"]
        outs.append(att if output_attention else h)
        aligns.append(al)
    r1, r2, ratt, ral, rtime, rhist, rcell = res
    np.testing.assert_allclose(r1, outs[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(r2, outs[1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ratt, att, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ral, aligns[1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rhist, np.stack(aligns), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rcell, h, rtol=1e-4, atol=1e-5)
    assert rtime == 2


def test_attention_wrapper_without_layer_clone_and_multi():
    g = tf.Graph()
    with g.as_default():
        mem = tf.ones([2, 3, 4])
        m1 = s2s.LuongAttention(5, mem)
        m2 = s2s.BahdanauAttention(3, mem)
        cell = s2s.AttentionWrapper(tf.nn.rnn_cell.GRUCell(5), [m1, m2], attention_layer_size=[2, 3])
        assert cell.output_size == 5
        s0 = cell.zero_state(2, tf.float32)
        s0 = s0.clone(cell_state=tf.ones([2, 5]))
        assert isinstance(s0.alignments, tuple) and len(s0.alignments) == 2
        out, s1 = cell(tf.zeros([2, 1]), s0)
        single = s2s.AttentionWrapper(tf.nn.rnn_cell.GRUCell(5), s2s.LuongAttention(5, mem), name="plain")
        assert single.output_size == 4    # no attention layer: the context, the memory's depth
        o2, _ = single(tf.zeros([2, 1]), single.zero_state(2, tf.float32))
    a, b, c = _run([out, s1.alignments[1], o2], g)
    assert a.shape == (2, 5) and c.shape == (2, 4)
    np.testing.assert_allclose(b, np.full((2, 3), 1 / 3), rtol=1e-6)   # identical memory rows
    np.testing.assert_allclose(c, np.ones((2, 4)), rtol=1e-6)           # the context of equal rows
    with pytest.raises(TypeError):
        cell(tf.zeros([2, 1]), tf.zeros([2, 5]))


# -- a tiny seq2seq model with attention learns ---------------------------------------------

def test_seq2seq_with_attention_trains_and_decodes():
    rng = np.random.default_rng(0)
    B, S, T, V, E, H = 4, 6, 5, 7, 5, 8
    src = rng.integers(2, V, size=(B, S)).astype(np.int32)
    src_len = np.array([6, 4, 5, 3], np.int32)
    tgt_in = np.concatenate([np.ones((B, 1), np.int32), src[:, :T - 1]], 1)
    tgt_len = np.array([5, 4, 5, 3], np.int32)
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(1)
        emb = tf.get_variable("emb", [V, E])
        enc_out, enc_st = tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(H), tf.nn.embedding_lookup(emb, src),
                                            sequence_length=src_len, dtype=tf.float32, scope="encoder")
        with tf.variable_scope("dynamic_seq2seq"):
            mech = s2s.LuongAttention(H, enc_out, memory_sequence_length=src_len, scale=True)
            cell = s2s.AttentionWrapper(tf.nn.rnn_cell.LSTMCell(H), mech, attention_layer_size=H,
                                        alignment_history=True, name="attention")
            init = cell.zero_state(B, tf.float32).clone(cell_state=enc_st)
            proj = tf.layers.Dense(V, use_bias=False, name="output_projection")
            helper = s2s.TrainingHelper(tf.nn.embedding_lookup(emb, tgt_in), tgt_len)
            out, st, _ = s2s.dynamic_decode(s2s.BasicDecoder(cell, helper, init, output_layer=proj),
                                            scope="decoder")
        loss = s2s.sequence_loss(out.rnn_output, src[:, :T], tf.sequence_mask(tgt_len, T, dtype=tf.float32))
        train = tf.train.AdamOptimizer(0.05).minimize(loss)
        with tf.variable_scope("dynamic_seq2seq", reuse=True):
            gh = s2s.GreedyEmbeddingHelper(emb, tf.fill([B], 1), 0)
            gout, _, gsl = s2s.dynamic_decode(s2s.BasicDecoder(cell, gh, init, output_layer=proj),
                                              maximum_iterations=T, scope="decoder")
        names = sorted(v.op.name for v in tf.trainable_variables())
        hist = st.alignment_history.stack()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([loss, train])[0] for _ in range(40)]
            ids, h = sess.run([gout.sample_id, hist])
    assert names == sorted([
        "emb", "encoder/lstm_cell/kernel", "encoder/lstm_cell/bias", "dynamic_seq2seq/memory_layer/kernel",
        "dynamic_seq2seq/decoder/attention/lstm_cell/kernel", "dynamic_seq2seq/decoder/attention/lstm_cell/bias",
        "dynamic_seq2seq/decoder/attention/luong_attention/attention_g",
        "dynamic_seq2seq/decoder/attention/attention_layer/kernel",
        "dynamic_seq2seq/decoder/output_projection/kernel"])
    assert losses[-1] < 0.3 * losses[0], losses
    # the copy task is learned: greedy decoding reproduces the source inside each length
    assert (ids[np.arange(T)[None, :] < tgt_len[:, None]] == src[:, :T][np.arange(T)[None, :] < tgt_len[:, None]]
            ).mean() > 0.8
    assert h.shape == (T, B, S)
    np.testing.assert_allclose(h.sum(-1), 1.0, rtol=1e-5)
    assert (h[:, 3, 3:] == 0).all()   # masked past memory length 3


# -- gradients against finite differences --------------------------------------------------

def _seq_loss_case(logits, weights):
    targets = tf.constant([[0, 2, 1], [3, 3, 0]])
    return [s2s.sequence_loss(logits, targets, weights),
            s2s.sequence_loss(logits, targets, weights, average_across_timesteps=False, sum_over_batch=True,
                              average_across_batch=False)]


def _attention_step_case(query, memory):
    mech = s2s.BahdanauAttention(3, memory, memory_sequence_length=[3, 2], normalize=True)
    cell = s2s.AttentionWrapper(tf.nn.rnn_cell.BasicRNNCell(3), mech, attention_layer_size=2)
    out, state = cell(query, cell.zero_state(2, tf.float64))
    return [out, state.alignments]


def _luong_decode_case(inputs, memory):
    mech = s2s.LuongAttention(3, memory, memory_sequence_length=[3, 1], scale=True)
    cell = s2s.AttentionWrapper(tf.nn.rnn_cell.GRUCell(3), mech, attention_layer_size=2)
    dec = s2s.BasicDecoder(cell, s2s.TrainingHelper(inputs, [3, 2]), cell.zero_state(2, tf.float64))
    out, state, _ = s2s.dynamic_decode(dec, impute_finished=True)
    return [out.rnn_output, state.cell_state]


_W = lambda rng: [rng.normal(size=(2, 3, 4)), rng.uniform(0.2, 1.5, size=(2, 3))]  # noqa: E731


@pytest.mark.parametrize("case", [
    Case("SparseSoftmaxCrossEntropyWithLogits", _seq_loss_case, [(2, 3, 4), (2, 3)], make_inputs=_W,
         id="sequence_loss"),
    Case("Tanh", _attention_step_case, [(2, 2), (2, 3, 4)], id="bahdanau_attention_wrapper_step", rtol=1e-4,
         atol=1e-6),
    Case("MatMul", _luong_decode_case, [(2, 3, 2), (2, 3, 3)], id="luong_attention_dynamic_decode", rtol=1e-4,
         atol=1e-6),
], ids=str)
def test_seq2seq_gradients(case):
    check_case(case)


def test_exposed_under_tf_contrib():
    assert cf.contrib.seq2seq is tf.contrib.seq2seq
    for n in ("sequence_loss", "dynamic_decode", "BasicDecoder", "BasicDecoderOutput", "TrainingHelper",
              "GreedyEmbeddingHelper", "SampleEmbeddingHelper", "Helper", "BahdanauAttention", "LuongAttention",
              "AttentionWrapper", "AttentionWrapperState"):
        assert hasattr(tf.contrib.seq2seq, n), n


# -- beam search -----------------------------------------------------------------------------

def test_tile_batch():
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    g = tf.Graph()
    with g.as_default():
        st = tf.nn.rnn_cell.LSTMStateTuple(tf.constant(x[:, 0]), tf.constant(x[:, 1]))
        tiled = s2s.tile_batch(st, 3)
        t3 = s2s.tile_batch(tf.constant(x), 2)
    a, b = _run([tiled, t3], g)
    np.testing.assert_array_equal(a.c, np.repeat(x[:, 0], 3, axis=0))
    np.testing.assert_array_equal(a.h, np.repeat(x[:, 1], 3, axis=0))
    np.testing.assert_array_equal(b, np.repeat(x, 2, axis=0))


def _gather_tree_by_hand(step_ids, parent_ids, lengths, end):
    T, B, K = step_ids.shape
    out = np.full_like(step_ids, end)
    for b in range(B):
        n = min(T, lengths[b])
        for k in range(K):
            if n <= 0:
                continue
            out[n - 1, b, k] = step_ids[n - 1, b, k]
            parent = parent_ids[n - 1, b, k]
            for t in range(n - 2, -1, -1):
                out[t, b, k] = step_ids[t, b, parent]
                parent = parent_ids[t, b, parent]
            done = False
            for t in range(n):
                if done:
                    out[t, b, k] = end
                elif out[t, b, k] == end:
                    done = True
    return out


def test_gather_tree_matches_by_hand():
    rng = np.random.default_rng(8)
    T, B, K, end = 6, 3, 4, 1
    step_ids = rng.integers(0, 7, size=(T, B, K)).astype(np.int32)
    parent_ids = rng.integers(0, K, size=(T, B, K)).astype(np.int32)
    lengths = np.array([6, 3, 0], np.int32)
    g = tf.Graph()
    with g.as_default():
        out = s2s.gather_tree(step_ids, parent_ids, lengths, end)
    got = _run(out, g)
    np.testing.assert_array_equal(got, _gather_tree_by_hand(step_ids, parent_ids, lengths, end))
    # a published worked example of the algorithm (no end token inside, full lengths)
    ids = np.array([[[2, 2], [6, 1]], [[3, 9], [6, 1]], [[0, 1], [9, 0]]], np.int32)
    par = np.array([[[0, 0], [1, 1]], [[1, 0], [1, 0]], [[0, 0], [0, 1]]], np.int32)
    want = np.array([[[2, 2], [1, 6]], [[3, 3], [6, 1]], [[0, 1], [9, 0]]], np.int32)
    g = tf.Graph()
    with g.as_default():
        out = s2s.gather_tree(ids, par, [3, 3], 10)
    np.testing.assert_array_equal(_run(out, g), want)
    np.testing.assert_array_equal(_gather_tree_by_hand(ids, par, np.array([3, 3]), 10), want)


def test_gather_tree_from_array_matches_by_hand():
    from collflow.contrib.seq2seq.beam_search import gather_tree_from_array
    rng = np.random.default_rng(11)
    T, B, K, D = 5, 2, 3, 2
    t = rng.normal(size=(T, B * K, D)).astype(np.float32)
    parents = rng.integers(0, K, size=(T, B, K)).astype(np.int32)
    lengths = np.array([[5, 2, 4], [3, 3, 1]], np.int64)
    g = tf.Graph()
    with g.as_default():
        out = gather_tree_from_array(tf.constant(t), tf.constant(parents), tf.constant(lengths))
    got = _run(out, g)
    beam_ids = np.broadcast_to(np.arange(K), (T, B, K)).astype(np.int32)
    srt = _gather_tree_by_hand(beam_ids, parents, lengths.max(1).astype(np.int32), K + 1)
    srt = np.where(np.arange(T)[:, None, None] < lengths[None], srt, beam_ids)
    want = np.stack([t[s_, (np.arange(B)[:, None] * K + srt[s_]).ravel()] for s_ in range(T)])
    np.testing.assert_allclose(got, want)


def _log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def _beam_search_by_hand(emb, start, end, w, b, wo, bo, K, n_steps, lp_weight):
    """TF 1.x's beam search step by step in NumPy (BasicRNNCell + Dense output layer)."""
    B = len(start)
    V = wo.shape[1]
    h = np.zeros((B, K, w.shape[1]))
    log_probs = np.where(np.arange(K)[None, :] == 0, 0.0, -np.inf) * np.ones((B, 1))
    finished = np.broadcast_to(np.arange(K)[None, :] != 0, (B, K)).copy()
    lengths = np.zeros((B, K), np.int64)
    x = emb[np.repeat(start[:, None], K, 1)]
    scores_all, words_all, parents_all = [], [], []
    for _ in range(n_steps):
        h = np.tanh(np.concatenate([x, h], -1) @ w + b)
        logits = h @ wo + bo
        step = _log_softmax(logits)
        end_row = np.where(np.arange(V) == end, 0.0, np.finfo(np.float32).min)   # one_hot: none if out of range
        step = np.where(finished[..., None], end_row, step)
        total = log_probs[..., None] + step
        new_len = lengths[..., None] + (np.arange(V) != end)[None, None, :] * (~finished)[..., None]
        scores = total if lp_weight == 0 else total / (((5.0 + new_len) ** lp_weight) / (6.0 ** lp_weight))
        flat = scores.reshape(B, K * V)
        idx = np.argsort(-flat, axis=1, kind="stable")[:, :K]
        next_scores = np.take_along_axis(flat, idx, 1)
        next_probs = np.take_along_axis(total.reshape(B, K * V), idx, 1)
        words, beams = idx % V, idx // V
        prev_fin = np.take_along_axis(finished, beams, 1)
        finished = prev_fin | (words == end)
        lengths = np.take_along_axis(lengths, beams, 1) + (~prev_fin)
        h = np.take_along_axis(h, beams[..., None], 1)
        log_probs = next_probs
        x = emb[words]
        scores_all.append(next_scores)
        words_all.append(words)
        parents_all.append(beams)
        if finished.all():
            break
    return np.stack(scores_all), np.stack(words_all), np.stack(parents_all), lengths


@pytest.mark.parametrize("lp_weight", [0.0, 0.6])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_beam_search_matches_by_hand(lp_weight, seed):
    V, E, H, B, K, MAX = 7, 3, 5, 2, 3, 6
    rng = np.random.default_rng(9)
    e = rng.normal(size=(V, E)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(seed)
        end = tf.placeholder(tf.int32, [])
        cell = tf.nn.rnn_cell.BasicRNNCell(H)
        dec = s2s.BeamSearchDecoder(cell, tf.constant(e), tf.constant([1, 2]), end,
                                    cell.zero_state(B * K, tf.float32), beam_width=K,
                                    output_layer=tf.layers.Dense(V, name="out"), length_penalty_weight=lp_weight)
        out, st, sl = s2s.dynamic_decode(dec, maximum_iterations=MAX, output_time_major=True)
        vs = {v.op.name: v for v in tf.global_variables()}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w, bb, wo, bo = sess.run([vs["decoder/basic_rnn_cell/kernel"], vs["decoder/basic_rnn_cell/bias"],
                                      vs["decoder/out/kernel"], vs["decoder/out/bias"]])
            _, words0, _, _ = _beam_search_by_hand(e, np.array([1, 2]), V + 5, w, bb, wo, bo, K, MAX, lp_weight)
            end_tok = int(words0[2, 0, 0])    # a token the best beam emits at step 2
            o, s, l = sess.run([out, st, sl], {end: end_tok})
    scores, words, parents, lengths = _beam_search_by_hand(e, np.array([1, 2]), end_tok, w, bb, wo, bo, K, MAX,
                                                           lp_weight)
    raw = o.beam_search_decoder_output
    assert (parents != np.arange(K)).any()                 # beams reorder
    if seed == 1:
        assert len(set(lengths.ravel())) > 1                 # and, with these weights, finish apart
    np.testing.assert_array_equal(raw.predicted_ids, words)
    np.testing.assert_array_equal(raw.parent_ids, parents)
    np.testing.assert_allclose(raw.scores, scores, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(s.lengths, lengths)
    np.testing.assert_array_equal(o.predicted_ids,
                                  _gather_tree_by_hand(words, parents, lengths.max(1).astype(np.int32), end_tok))
    assert o.predicted_ids.shape[0] <= MAX
    np.testing.assert_array_equal(l.shape, (B, K))


def test_beam_width_one_with_attention_equals_greedy():
    rng = np.random.default_rng(10)
    V, E, H, B, S = 6, 3, 4, 2, 5
    mem = rng.normal(size=(B, S, H)).astype(np.float32)
    mem_len = np.array([5, 3], np.int32)
    g = tf.Graph()
    with g.as_default():
        emb = tf.constant(rng.normal(size=(V, E)).astype(np.float32))
        with tf.variable_scope("m") as vs:
            mech = s2s.BahdanauAttention(H, tf.constant(mem), memory_sequence_length=mem_len)
            cell = s2s.AttentionWrapper(tf.nn.rnn_cell.LSTMCell(H), mech, attention_layer_size=H,
                                        alignment_history=True)
            proj = tf.layers.Dense(V, name="proj")
            gd = s2s.BasicDecoder(cell, s2s.GreedyEmbeddingHelper(emb, tf.fill([B], 0), V + 1),
                                  cell.zero_state(B, tf.float32), output_layer=proj)
            gout, gst, _ = s2s.dynamic_decode(gd, maximum_iterations=5)
        with tf.variable_scope(vs, reuse=True):
            K = 3
            bmech = s2s.BahdanauAttention(H, s2s.tile_batch(tf.constant(mem), K),
                                          memory_sequence_length=s2s.tile_batch(mem_len, K))
            bcell = s2s.AttentionWrapper(tf.nn.rnn_cell.LSTMCell(H), bmech, attention_layer_size=H,
                                         alignment_history=True)
            bd = s2s.BeamSearchDecoder(bcell, emb, tf.fill([B], 0), V + 1, bcell.zero_state(B * K, tf.float32),
                                       beam_width=K, output_layer=proj)
            bout, bst, _ = s2s.dynamic_decode(bd, maximum_iterations=5)
            one = s2s.BeamSearchDecoder(cell, emb, tf.fill([B], 0), V + 1, cell.zero_state(B, tf.float32),
                                        beam_width=1, output_layer=proj)
            oout, ost, _ = s2s.dynamic_decode(one, maximum_iterations=5)
        n_vars = len(tf.global_variables())
    greedy, beam, beam1, ghist, bhist, ohist = _run(
        [gout.sample_id, bout.predicted_ids, oout.predicted_ids, gst.alignment_history.stack(),
         bst.cell_state.alignment_history, ost.cell_state.alignment_history], g)
    np.testing.assert_allclose(ohist, ghist, rtol=1e-5, atol=1e-6)   # width 1: the greedy path's alignments
    assert bhist.shape[1:] == (B * K, S)
    np.testing.assert_allclose(bhist.sum(-1), 1.0, rtol=1e-5)
    assert (bhist[:, K:, 3:] == 0).all()   # entry 1's beams: masked past memory length 3
    assert n_vars == 8   # the beam decoders share the greedy decoder's variables
    np.testing.assert_array_equal(beam1[..., 0], greedy)
    assert beam.shape == (B, 5, K) and ((beam >= 0) & (beam < V)).all()


# -- the other helpers -------------------------------------------------------------------------

def _rnn_by_hand(xs, w, b):
    h = np.zeros((xs[0].shape[0], w.shape[1]))
    out = []
    for x in xs:
        h = np.tanh(np.concatenate([x, h], 1) @ w + b)
        out.append(h)
    return np.stack(out, 1)


def test_scheduled_embedding_training_helper_feeds_sampled_embeddings():
    rng = np.random.default_rng(12)
    B, T, E, H = 6, 5, 3, 4
    e = rng.normal(size=(H, E)).astype(np.float32)        # the cell's output is the logits: H classes
    x = rng.normal(size=(B, T, E)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        cell = tf.nn.rnn_cell.BasicRNNCell(H)
        helper = s2s.ScheduledEmbeddingTrainingHelper(tf.constant(x), tf.fill([B], T), tf.constant(e), 0.5, seed=1,
                                                      scheduling_seed=2)
        out, _, _ = s2s.dynamic_decode(s2s.BasicDecoder(cell, helper, cell.zero_state(B, tf.float32)))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w, b = sess.run(cell.variables)
            o = sess.run(out)
    ids = o.sample_id
    assert (ids == -1).any() and (ids >= 0).any() and (ids < H).all()
    feeds = [x[:, 0]] + [np.where((ids[:, t] >= 0)[:, None], e[np.maximum(ids[:, t], 0)], x[:, t + 1])
                         for t in range(T - 1)]
    np.testing.assert_allclose(o.rnn_output, _rnn_by_hand(feeds, w, b), rtol=1e-5, atol=1e-6)


def test_scheduled_output_training_helper_feeds_outputs_with_auxiliary_inputs():
    rng = np.random.default_rng(13)
    B, T, D, A = 6, 4, 3, 2
    x = rng.normal(size=(B, T, D)).astype(np.float32)
    aux = rng.normal(size=(B, T, A)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        cell = tf.nn.rnn_cell.BasicRNNCell(D)
        helper = s2s.ScheduledOutputTrainingHelper(tf.constant(x), [T] * B, 0.5, seed=4,
                                                   next_inputs_fn=lambda o: 2.0 * o, auxiliary_inputs=tf.constant(aux))
        out, _, _ = s2s.dynamic_decode(s2s.BasicDecoder(cell, helper, cell.zero_state(B, tf.float32)))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w, b = sess.run(cell.variables)
            o = sess.run(out)
    sel = o.sample_id
    assert sel.dtype == np.bool_ and sel[:, :-1].any() and not sel[:, :-1].all()
    feeds = [np.concatenate([x[:, 0], aux[:, 0]], 1)]
    for t in range(T - 1):
        out_t = _rnn_by_hand(feeds, w, b)[:, -1]
        feeds.append(np.where(sel[:, t][:, None], np.concatenate([2.0 * out_t, aux[:, t + 1]], 1),
                              np.concatenate([x[:, t + 1], aux[:, t + 1]], 1)))
    np.testing.assert_allclose(o.rnn_output, _rnn_by_hand(feeds, w, b), rtol=1e-5, atol=1e-6)


def test_inference_helper_continuous_outputs():
    rng = np.random.default_rng(14)
    B, H = 3, 4
    start = rng.normal(size=(B, H)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        cell = tf.nn.rnn_cell.BasicRNNCell(H)
        helper = s2s.InferenceHelper(lambda o: o, [H], tf.float32, tf.constant(start),
                                     end_fn=lambda s: s[:, 0] > 0.5, next_inputs_fn=lambda s: s * 0.5)
        out, _, sl = s2s.dynamic_decode(s2s.BasicDecoder(cell, helper, cell.zero_state(B, tf.float32)),
                                        maximum_iterations=6)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w, b = sess.run(cell.variables)
            o, l = sess.run([out, sl])
    h = np.zeros((B, H))
    x = start
    outs = []
    for _ in range(6):
        h = np.tanh(np.concatenate([x, h], 1) @ w + b)
        outs.append(h)
        x = 0.5 * h
    outs = np.stack(outs, 1)
    ended = outs[:, :, 0] > 0.5
    want_len = np.where(ended.any(1), ended.argmax(1) + 1, 6)
    np.testing.assert_array_equal(l, want_len)
    n = want_len.max()
    np.testing.assert_allclose(o.rnn_output, outs[:, :n], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(o.sample_id, outs[:, :n], rtol=1e-5, atol=1e-6)


# -- monotonic attention --------------------------------------------------------------------------

def _monotonic_by_hand(p, prev):
    B, T = p.shape
    out = np.zeros_like(p)
    for b in range(B):
        for i in range(T):
            out[b, i] = p[b, i] * sum(prev[b, j] * np.prod(1 - p[b, j:i]) for j in range(i + 1))
    return out


def test_hardmax_safe_cumprod_and_monotonic_attention_modes():
    rng = np.random.default_rng(15)
    p = rng.uniform(0.05, 0.95, size=(3, 5))
    prev = _softmax(rng.normal(size=(3, 5)))
    hard_p = (rng.uniform(size=(3, 5)) > 0.5).astype(np.float64)
    hard_prev = np.eye(5)[[0, 2, 4]]
    x = rng.normal(size=(2, 4))
    g = tf.Graph()
    with g.as_default():
        res = [s2s.monotonic_attention(p, prev, "recursive"), s2s.monotonic_attention(p, prev, "parallel"),
               s2s.monotonic_attention(hard_p, hard_prev, "hard"), s2s.hardmax(x),
               s2s.safe_cumprod(p, axis=1, exclusive=True)]
        with pytest.raises(ValueError):
            s2s.monotonic_attention(p, prev, "soft")
    rec, par, hard, hm, cp = _run(res, g)
    want = _monotonic_by_hand(p, prev)
    np.testing.assert_allclose(rec, want, rtol=1e-10)
    np.testing.assert_allclose(par, want, rtol=1e-6)
    np.testing.assert_allclose(hard, _monotonic_by_hand(hard_p, hard_prev), atol=0)
    assert set(np.unique(hard)) <= {0.0, 1.0}
    np.testing.assert_array_equal(hm, np.eye(4)[x.argmax(-1)])
    np.testing.assert_allclose(cp, np.concatenate([np.ones((3, 1)), np.cumprod(p, 1)[:, :-1]], 1), rtol=1e-10)


@pytest.mark.parametrize("kind", ["bahdanau", "luong"])
def test_monotonic_mechanisms_by_hand(kind):
    rng = np.random.default_rng(16)
    B, T, D, U = 2, 4, 3, 3
    mem = rng.normal(size=(B, T, D)).astype(np.float32)
    q = rng.normal(size=(B, U)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        if kind == "bahdanau":
            mech = s2s.BahdanauMonotonicAttention(U, mem, memory_sequence_length=[4, 2], score_bias_init=-0.5,
                                                  mode="recursive")
        else:
            mech = s2s.LuongMonotonicAttention(U, mem, memory_sequence_length=[4, 2], score_bias_init=-0.5)
        prev = mech.initial_alignments(B, tf.float32)
        a, _ = mech(tf.constant(q), prev)
        vs = {v.op.name: v for v in tf.global_variables()}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            vals, got, p0 = sess.run(vs), sess.run(a), sess.run(prev)
    scope = f"{kind}_monotonic_attention"
    assert vals[f"{scope}/attention_score_bias"] == pytest.approx(-0.5)
    np.testing.assert_array_equal(p0, np.eye(T)[[0, 0]])
    mask = np.arange(T)[None, :] < np.array([4, 2])[:, None]
    keys = (mem * mask[..., None]) @ vals["memory_layer/kernel"]
    if kind == "bahdanau":
        pq = q @ vals[f"{scope}/query_layer/kernel"]
        score = (vals[f"{scope}/attention_v"] * np.tanh(keys + pq[:, None])).sum(-1)
    else:
        score = np.einsum("bu,btu->bt", q, keys)
    score = np.where(mask, score - 0.5, -np.inf)
    want = _monotonic_by_hand(1 / (1 + np.exp(-score)), p0.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert (got[1, 2:] == 0).all()


def test_monotonic_attention_in_a_decoder():
    g = tf.Graph()
    with g.as_default():
        mech = s2s.BahdanauMonotonicAttention(4, tf.ones([2, 5, 3]), memory_sequence_length=[5, 3], mode="hard")
        cell = s2s.AttentionWrapper(tf.nn.rnn_cell.GRUCell(4), mech, alignment_history=True)
        dec = s2s.BasicDecoder(cell, s2s.TrainingHelper(tf.ones([2, 3, 2]), [3, 3]), cell.zero_state(2, tf.float32))
        _, st, _ = s2s.dynamic_decode(dec)
    hist = _run(st.alignment_history.stack(), g)
    assert hist.shape == (3, 2, 5)
    assert set(np.unique(hist)) <= {0.0, 1.0} and (hist.sum(-1) <= 1).all()


def test_custom_key_value_fn():
    mem = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10
    g = tf.Graph()
    with g.as_default():
        mech = s2s.LuongAttention(2, mem, memory_sequence_length=[3, 2],
                                  custom_key_value_fn=lambda k, v: (k * 0.5, v[..., :2]))
        cell = s2s.AttentionWrapper(tf.nn.rnn_cell.GRUCell(2), mech)
        assert cell.output_size == 2          # the new values' depth
        out, st = cell(tf.zeros([2, 1]), cell.zero_state(2, tf.float32))
        kernel = [v for v in tf.global_variables() if v.op.name == "memory_layer/kernel"][0]
    o, a, keys, values, k = _run([out, st.alignments, mech.keys, mech.values, kernel], g)
    masked = mem * (np.arange(3)[None, :] < np.array([3, 2])[:, None])[..., None]
    np.testing.assert_allclose(keys, 0.5 * masked @ k, rtol=1e-5)
    np.testing.assert_allclose(values, masked[..., :2], rtol=1e-6)
    np.testing.assert_allclose(o, np.einsum("bt,btd->bd", a, masked[..., :2]), rtol=1e-5, atol=1e-6)
