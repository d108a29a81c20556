"""tf.nn.raw_rnn (collflow/nn/raw_rnn.py): the TF documentation's example against dynamic_rnn,
a greedy decoder against a NumPy reference, gradients against central differences, errors."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

pytestmark = pytest.mark.timeout(120)

T, B, D = 5, 3, 4


def _doc_loop_fn(cell, x, lengths, batch, depth, dtype=tf.float32):
    """The loop_fn of TensorFlow's raw_rnn docstring: dynamic_rnn with per-example lengths."""
    inputs_ta = tf.TensorArray(dtype=dtype, size=x.shape.dims[0]).unstack(x)

    def loop_fn(time, cell_output, cell_state, loop_state):
        next_state = cell.zero_state(batch, dtype) if cell_output is None else cell_state
        finished = time >= lengths
        next_input = tf.cond(tf.reduce_all(finished), lambda: tf.zeros([batch, depth], dtype),
                             lambda: inputs_ta.read(time))
        return finished, next_input, next_state, cell_output, None
    return loop_fn


@pytest.mark.parametrize("lengths", [[5, 2, 3], [3, 1, 2]])
def test_doc_example_matches_dynamic_rnn(lengths):
    rng = np.random.default_rng(0)
    xv = rng.uniform(-1, 1, (T, B, D)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, (T, B, D))
        seq = tf.constant(lengths)
        cell = tf.nn.rnn_cell.LSTMCell(6)
        emit_ta, final, loop_state = tf.nn.raw_rnn(cell, _doc_loop_fn(cell, x, seq, B, D))
        assert loop_state is None
        assert isinstance(emit_ta, tf.TensorArray)
        outputs = emit_ta.stack()
        assert outputs.shape.as_list() == [None, B, 6]
        # the same cell (same variables) under dynamic_rnn
        ref_out, ref_final = tf.nn.dynamic_rnn(cell, x, sequence_length=seq, time_major=True, dtype=tf.float32)
        assert sorted(v.name for v in tf.global_variables()) == ["rnn/lstm_cell/bias:0", "rnn/lstm_cell/kernel:0"]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got, c, h, want, wc, wh = s.run([outputs, final.c, final.h, ref_out, ref_final.c, ref_final.h], {x: xv})
    # the loop stops at the longest sequence; each entry emits zeros past its own length
    assert got.shape == (max(lengths), B, 6)
    for b, n in enumerate(lengths):
        np.testing.assert_allclose(got[:n, b], want[:n, b], rtol=1e-5, atol=1e-6)
        assert not got[n:, b].any()
    np.testing.assert_allclose(c, wc, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, wh, rtol=1e-5, atol=1e-6)


def _decoder_reference(h0, emb, kernel, bias, w_out, max_len, eos):
    """NumPy: greedy decoding with a BasicRNNCell, as raw_rnn runs it."""
    batch = h0.shape[0]
    h, ids = h0, np.zeros(batch, np.int64)
    finished = np.zeros(batch, bool)
    outs, all_ids, maxes, acc, t = [], [], [], np.zeros_like(h0), 0
    while not finished.all():
        out = np.tanh(np.concatenate([emb[ids], h], 1) @ kernel + bias)
        logits = out @ w_out
        ids = logits.argmax(1)
        outs.append(np.where(finished[:, None], 0.0, out))
        all_ids.append(np.where(finished, 0, ids))
        h = np.where(finished[:, None], h, out)
        maxes.append(logits.max(1))
        acc = acc + out                              # the loop state is never masked
        finished = finished | (t + 1 >= max_len) | (ids == eos)
        t += 1
    return np.stack(outs), np.stack(all_ids), h, t, np.stack(maxes), acc


def test_greedy_decoder_nested_emit_and_loop_state():
    vocab, units, eos = 6, 4, 2
    max_len = np.array([3, 6, 1])
    rng = np.random.default_rng(3)
    vals = {"emb": rng.uniform(-1, 1, (vocab, D)), "kernel": rng.uniform(-1, 1, (D + units, units)),
            "bias": rng.uniform(-0.5, 0.5, units), "w_out": rng.uniform(-1, 1, (units, vocab))}
    vals = {k: v.astype(np.float32) for k, v in vals.items()}
    h0v = rng.uniform(-1, 1, (B, units)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        h0 = tf.placeholder(tf.float32, (B, units))
        cell = tf.nn.rnn_cell.BasicRNNCell(units)
        emb = tf.get_variable("embedding", [vocab, D])
        w_out = tf.get_variable("w_out", [units, vocab])
        seen = []

        def loop_fn(time, cell_output, cell_state, loop_state):
            seen.append(loop_state)
            if cell_output is None:
                ids = tf.zeros([B], tf.int32)
                # per-example templates: the emits get [batch] prepended
                emit = {"out": tf.zeros([units]), "ids": tf.zeros([], tf.int32)}
                loop = (tf.constant(0), tf.TensorArray(tf.float32, size=0, dynamic_size=True), tf.zeros([B, units]))
                return tf.zeros([B], tf.bool), tf.nn.embedding_lookup(emb, ids), h0, emit, loop
            logits = tf.matmul(cell_output, w_out)
            ids = tf.argmax(logits, axis=1, output_type=tf.int32)
            count, ta, acc = loop_state
            loop = (count + 1, ta.write(time - 1, tf.reduce_max(logits, axis=1)), acc + cell_output)
            finished = tf.logical_or(time >= max_len, tf.equal(ids, eos))
            return finished, tf.nn.embedding_lookup(emb, ids), cell_state, {"out": cell_output, "ids": ids}, loop

        emit_ta, final, (count, ta, acc) = tf.nn.raw_rnn(cell, loop_fn, scope="decoder")
        assert seen[0] is None and seen[1] is not None
        assert set(emit_ta) == {"out", "ids"} and emit_ta["ids"].dtype == tf.int32
        fetch = [emit_ta["out"].stack(), emit_ta["ids"].stack(), final, count, ta.stack(), acc]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            by_name = {"emb": emb, "w_out": w_out, "kernel": cell.variables[0], "bias": cell.variables[1]}
            assert cell.variables[0].name == "decoder/basic_rnn_cell/kernel:0"
            for k, v in by_name.items():
                v.load(vals[k], s)
            got = s.run(fetch, {h0: h0v})
    want = _decoder_reference(h0v, vals["emb"], vals["kernel"], vals["bias"], vals["w_out"], max_len, eos)
    assert got[0].shape == (want[0].shape[0], B, units) and got[1].shape == (want[0].shape[0], B)
    assert got[3] == want[3]
    np.testing.assert_array_equal(got[1], want[1])
    for k in (0, 2, 4, 5):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=f"fetch {k}")


def test_no_loop_state_sees_int_surrogate_and_all_finished_at_start():
    g = tf.Graph()
    with g.as_default():
        cell = tf.nn.rnn_cell.GRUCell(3)
        seen = []

        def loop_fn(time, cell_output, cell_state, loop_state):
            seen.append(loop_state)
            state = cell.zero_state(2, tf.float32) if cell_output is None else cell_state
            # no emit returned later: None there keeps the surrogate loop state
            return time >= 0, tf.zeros([2, 4]), state, cell_output, None

        emit_ta, final, loop_state = tf.nn.raw_rnn(cell, loop_fn)
        assert loop_state is None and seen[0] is None
        assert seen[1].dtype == tf.int32 and seen[1].shape.rank == 0  # TensorFlow's int32 0 stand-in
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out, st = s.run([emit_ta.stack(), final])
    assert out.shape == (0, 2, 3) and not st.any()


# -- gradients ---------------------------------------------------------------------------


def _central_differences(sess, loss, feed, x, xv, variables, eps=1e-6):
    """d loss / d x and d loss / d each variable by central differences (float64)."""
    def f(xval):
        return sess.run(loss, {**feed, x: xval})

    def diff(value, setter):
        num = np.zeros_like(value)
        for j in range(value.size):
            v = value.copy().reshape(-1)
            v[j] += eps
            fp = setter(v.reshape(value.shape))
            v[j] -= 2 * eps
            fm = setter(v.reshape(value.shape))
            num.reshape(-1)[j] = (fp - fm) / (2 * eps)
        setter(value)
        return num

    grads = [diff(xv, f)]
    for var in variables:
        val = sess.run(var)

        def setter(v, var=var):
            var.load(v, sess)
            return f(xv)
        grads.append(diff(val, setter))
    return grads


@pytest.mark.parametrize("cell_kind", ["lstm", "gru"])
def test_gradients_match_finite_differences(cell_kind):
    t, b, d = 4, 2, 2
    rng = np.random.default_rng(5)
    xv = rng.uniform(-1, 1, (t, b, d))
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, (t, b, d))
        cell = tf.nn.rnn_cell.LSTMCell(3) if cell_kind == "lstm" else tf.nn.rnn_cell.GRUCell(3)
        inner = _doc_loop_fn(cell, x, tf.constant([4, 2]), b, d, tf.float64)

        def loop_fn(time, cell_output, cell_state, loop_state):
            finished, nxt, state, emit, _ = inner(time, cell_output, cell_state, loop_state)
            if cell_output is None:  # a nested emit and a float loop state
                return finished, nxt, state, (tf.zeros([3], tf.float64), tf.zeros([], tf.float64)), \
                    tf.zeros([b, 3], tf.float64)
            return finished, nxt, state, (emit, tf.reduce_sum(emit * emit, 1)), loop_state * 0.5 + emit

        (ta_out, ta_sq), final, acc = tf.nn.raw_rnn(cell, loop_fn)
        stacked = ta_out.stack()
        w = tf.sin(tf.reshape(tf.cast(tf.range(tf.size(stacked)), tf.float64), tf.shape(stacked)) + 0.3)
        final_parts = [final.c, final.h] if cell_kind == "lstm" else [final]
        loss = (tf.reduce_sum(stacked * w) + tf.reduce_sum(ta_sq.stack() * 0.7) + tf.reduce_sum(acc * 1.3)
                + tf.add_n([tf.reduce_sum(p * (k + 0.5)) for k, p in enumerate(final_parts)]))
        variables = tf.trainable_variables()
        assert variables and all(v.dtype == tf.float64 for v in variables)
        grads = tf.gradients(loss, [x] + variables)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for v in variables:  # away from the default init, so every weight matters
                v.load(rng.uniform(-0.8, 0.8, v.shape.as_list()), s)
            analytic = s.run(grads, {x: xv})
            numeric = _central_differences(s, loss, {}, x, xv, variables)
    for a, n, what in zip(analytic, numeric, ["inputs"] + [v.name for v in variables]):
        np.testing.assert_allclose(a, n, rtol=1e-5, atol=1e-7, err_msg=f"d loss / d {what}")


# -- errors ------------------------------------------------------------------------------


def _lstm_program(loop_fn_factory):
    g = tf.Graph()
    with g.as_default():
        cell = tf.nn.rnn_cell.LSTMCell(3)
        return tf.nn.raw_rnn(cell, loop_fn_factory(cell))


def _ok_init(cell):
    return tf.zeros([2], tf.bool), tf.zeros([2, 4]), cell.zero_state(2, tf.float32), None, None


def test_loop_fn_returning_the_wrong_number_of_values():
    with pytest.raises(TypeError, match=r"loop_fn must return \(finished, next_input, next_cell_state"):
        _lstm_program(lambda cell: lambda t, o, s, ls: _ok_init(cell)[:4])


def test_non_bool_finished():
    def factory(cell):
        def loop_fn(t, o, s, ls):
            return (tf.zeros([2], tf.int32),) + _ok_init(cell)[1:]
        return loop_fn
    with pytest.raises(TypeError, match=r"`finished` must be a bool vector \[batch\], got int32"):
        _lstm_program(factory)


def test_non_bool_finished_inside_the_loop():
    def factory(cell):
        def loop_fn(t, o, s, ls):
            if o is None:
                return _ok_init(cell)
            return t, tf.zeros([2, 4]), s, o, None
        return loop_fn
    with pytest.raises(TypeError, match="got int32 .* inside the loop"):
        _lstm_program(factory)


def test_initial_state_of_the_wrong_structure():
    def factory(cell):
        return lambda t, o, s, ls: (tf.zeros([2], tf.bool), tf.zeros([2, 4]), tf.zeros([2, 3]), None, None)
    with pytest.raises(ValueError, match="next_cell_state from loop_fn at its first call has the structure"):
        _lstm_program(factory)


def test_emit_of_the_wrong_structure_inside_the_loop():
    def factory(cell):
        def loop_fn(t, o, s, ls):
            if o is None:
                return _ok_init(cell)
            return t >= 3, tf.zeros([2, 4]), s, (o, o), None
        return loop_fn
    with pytest.raises(ValueError, match=r"emit_output from loop_fn inside the loop has the structure \(\., \.\), "
                                         r"expected \."):
        _lstm_program(factory)


def test_next_input_of_the_wrong_structure_inside_the_loop():
    def factory(cell):
        def loop_fn(t, o, s, ls):
            if o is None:
                return _ok_init(cell)
            return t >= 3, [tf.zeros([2, 4])], s, o, None
        return loop_fn
    with pytest.raises(ValueError, match="next_input from loop_fn inside the loop"):
        _lstm_program(factory)


def test_bad_cell_and_loop_fn():
    with pytest.raises(TypeError, match="loop_fn must be callable"):
        tf.nn.raw_rnn(tf.nn.rnn_cell.GRUCell(2), None)
    with pytest.raises(TypeError, match="cell must be an RNNCell"):
        tf.nn.raw_rnn(object(), lambda *a: None)
