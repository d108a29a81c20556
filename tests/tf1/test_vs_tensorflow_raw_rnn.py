"""Differential tests of tf.nn.raw_rnn against real TensorFlow 1.x (collflow/nn/raw_rnn.py).

Each program is built in `tensorflow.compat.v1` and in `collflow.compat.v1`, its trainable
variables set by name to the same random values and fed the same inputs; the emits, the
final state, the loop state and the gradients of sum(fetch * W) with respect to every
variable and float input are compared (the variables' names must agree too, as a TF1
checkpoint would need).  Skipped cleanly without TensorFlow.
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

RTOL, ATOL = tfdiff.RTOL, 1e-6  # rtol 1e-5

pytestmark = [pytest.mark.timeout(120), pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")]

T, B, D = 5, 3, 4


def _cell(tf, kind, units):
    return tf.nn.rnn_cell.LSTMCell(units) if kind == "lstm" else tf.nn.rnn_cell.GRUCell(units)


def _state_parts(st):
    return [st.c, st.h] if hasattr(st, "c") else [st]


def doc_example(tf, rng, kind):
    """The raw_rnn docstring's dynamic_rnn: inputs read from a TensorArray up to each length."""
    xv = rng.uniform(-1, 1, (T, B, D)).astype(np.float32)
    x = tf.placeholder(tf.float32, (T, B, D))
    lengths = tf.constant([5, 2, 3])
    inputs_ta = tf.TensorArray(dtype=tf.float32, size=T).unstack(x)
    cell = _cell(tf, kind, 6)

    def loop_fn(time, cell_output, cell_state, loop_state):
        next_state = cell.zero_state(B, tf.float32) if cell_output is None else cell_state
        finished = time >= lengths
        next_input = tf.cond(tf.reduce_all(finished), lambda: tf.zeros([B, D], tf.float32),
                             lambda: inputs_ta.read(time))
        return finished, next_input, next_state, cell_output, None

    emit_ta, final_state, loop_state = tf.nn.raw_rnn(cell, loop_fn)
    assert loop_state is None
    return [emit_ta.stack()] + _state_parts(final_state), {x: xv}


def dynamic_batch(tf, rng, kind):
    """The batch size known only at run time; the lengths fed; a scalar-per-example emit."""
    xv = rng.uniform(-1, 1, (T, B, D)).astype(np.float32)
    x = tf.placeholder(tf.float32, (T, None, D))
    lengths = tf.placeholder(tf.int32, (None,))
    batch = tf.shape(x)[1]
    inputs_ta = tf.TensorArray(dtype=tf.float32, size=T).unstack(x)
    cell = _cell(tf, kind, 4)

    def loop_fn(time, cell_output, cell_state, loop_state):
        if cell_output is None:
            next_state, emit = cell.zero_state(batch, tf.float32), tf.zeros([], tf.float32)
        else:
            next_state, emit = cell_state, tf.reduce_sum(tf.tanh(cell_output), axis=1)
        finished = time >= lengths
        next_input = tf.cond(tf.reduce_all(finished), lambda: tf.zeros_like(x[0]), lambda: inputs_ta.read(time))
        return finished, next_input, next_state, emit, None

    emit_ta, final_state, _ = tf.nn.raw_rnn(cell, loop_fn)
    return [emit_ta.stack()] + _state_parts(final_state), {x: xv, lengths: np.array([4, 1, 3], np.int32)}


def decoder(tf, rng, kind):
    """Greedy decoding: the next input is the embedding of the argmax of a projection of the
    output; a nested emit (output, ids) and a loop state (step count, TensorArray of the
    per-step max logit, running sum of outputs)."""
    vocab, units, eos = 7, 5, 3
    hv = rng.uniform(-1, 1, (B, units)).astype(np.float32)
    h0 = tf.placeholder(tf.float32, (B, units))
    max_len = tf.constant([4, 6, 2])
    cell = _cell(tf, kind, units)
    with tf.variable_scope("decoder"):
        emb = tf.get_variable("embedding", [vocab, D])
        w_out = tf.get_variable("w_out", [units, vocab])

    def loop_fn(time, cell_output, cell_state, loop_state):
        if cell_output is None:
            state = tf.nn.rnn_cell.LSTMStateTuple(h0 * 0.5, h0) if kind == "lstm" else h0
            ids = tf.zeros([B], tf.int32)
            emit = (tf.zeros([units]), tf.zeros([], tf.int32))
            loop = (tf.constant(0), tf.TensorArray(tf.float32, size=0, dynamic_size=True),
                    tf.zeros([B, units]))
            finished = tf.zeros([B], tf.bool)
        else:
            state = cell_state
            logits = tf.matmul(cell_output, w_out)
            ids = tf.argmax(logits, axis=1, output_type=tf.int32)
            emit = (cell_output, ids)
            count, ta, acc = loop_state
            loop = (count + 1, ta.write(time - 1, tf.reduce_max(logits, axis=1)), acc + cell_output)
            finished = tf.logical_or(time >= max_len, tf.equal(ids, eos))
        return finished, tf.nn.embedding_lookup(emb, ids), state, emit, loop

    (out_ta, ids_ta), final_state, (count, ta, acc) = tf.nn.raw_rnn(cell, loop_fn, scope="dec_rnn")
    fetches = [out_ta.stack(), acc, ta.stack()] + _state_parts(final_state)
    return fetches, {h0: hv}, [ids_ta.stack(), count]


def _run(tf, build, kind, seed):
    g = tf.Graph()
    with g.as_default():
        made = build(tf, np.random.default_rng(seed), kind)
        outs, feeds = made[:2]
        extra = made[2] if len(made) > 2 else []
        vs = sorted(tf.trainable_variables(), key=lambda v: v.name)
        # sum(o * W) with W a fixed pattern made in the graph (the time dimension is only
        # known at run time), so every entry of every fetch matters
        loss = tf.add_n([tf.reduce_sum(o * tf.sin(tf.reshape(tf.cast(tf.range(tf.size(o)), tf.float32),
                                                             tf.shape(o)) * 0.7 + (seed + k)))
                         for k, o in enumerate(outs)])
        floats = [t for t in feeds if t.dtype.is_floating]
        grads = [tf.convert_to_tensor(gr) for gr in tf.gradients(loss, vs + floats)]
        with tf.Session(graph=g) as s:
            s.run(tf.global_variables_initializer())
            vr = np.random.default_rng(seed + 200)
            for v in vs:
                s.run(v.assign(vr.uniform(-0.8, 0.8, [int(d) for d in v.shape]).astype(np.float32)))
            return s.run(outs + grads + extra, feeds), [v.name for v in vs]


CASES = [doc_example, dynamic_batch, decoder]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("build", CASES, ids=[c.__name__ for c in CASES])
def test_raw_rnn_matches_tensorflow(build, kind, seed):
    want, want_names = _run(tft, build, kind, seed)
    got, got_names = _run(cft, build, kind, seed)
    assert got_names == want_names
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, (k, a.shape, b.shape)
        assert a.dtype == b.dtype, (k, a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"fetch/gradient {k}")
