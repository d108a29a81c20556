"""Differential tests against real TensorFlow 1.x for recurrent networks, layers and loop
idioms as TF1 programs write them: dynamic_rnn with LSTMCell (peepholes, projection, clipping),
GRUCell, MultiRNNCell (time-major), bidirectional and static runners with sequence_length,
tf.layers (conv2d, batch_normalization in training mode, pooling, dense), while_loop with a
TensorArray, foldl/foldr.

Each case is built in both, its trainable variables set by name to the same random values,
fed the same inputs; the outputs and the gradients of sum(output * W) with respect to every
variable and input are compared (float32; the variables' names must agree too, as a TF1
checkpoint would need).  Skipped cleanly without TensorFlow (`pip install -e ".[conformance]"`).
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

RTOL, ATOL = 2e-4, 2e-5  # long chains of float32 GEMMs in two BLAS orders

# TensorFlow's own notices that its TF1 RNN cells and runners are deprecated
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")


def _run(tf, build, seed):
    g = tf.Graph()
    with g.as_default():
        outs, feeds = build(tf, np.random.default_rng(seed))
        vs = sorted(tf.trainable_variables(), key=lambda v: v.name)
        r = np.random.default_rng(seed + 100)
        wts = [r.uniform(-1, 1, [int(d) for d in o.shape]).astype(np.float32) for o in outs]
        loss = tf.add_n([tf.reduce_sum(o * w) for o, w in zip(outs, wts)])
        grads = tf.gradients(loss, vs + list(feeds))
        grads = [tf.convert_to_tensor(gr) for gr in grads]  # IndexedSlices densified
        init = tf.global_variables_initializer()
        with tf.Session(graph=g) as s:
            s.run(init)
            vr = np.random.default_rng(seed + 200)
            for v in vs:
                s.run(v.assign(vr.uniform(-0.5, 0.5, [int(d) for d in v.shape]).astype(np.float32)))
            return s.run(outs + grads, feeds), [v.name for v in vs]


def _x(tf, rng, time_major=False, b=3, t=5, d=4):
    shape = [t, b, d] if time_major else [b, t, d]
    x = tf.placeholder(tf.float32, shape)
    return x, {x: rng.uniform(-1, 1, shape).astype(np.float32)}


def lstm_lengths(tf, rng):
    x, f = _x(tf, rng)
    out, st = tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(6), x, sequence_length=tf.constant([5, 2, 3]),
                                dtype=tf.float32)
    return [out, st.c, st.h], f


def lstm_peepholes_projection(tf, rng):
    x, f = _x(tf, rng)
    cell = tf.nn.rnn_cell.LSTMCell(6, use_peepholes=True, num_proj=3, cell_clip=0.7, proj_clip=0.5,
                                   forget_bias=0.5)
    out, st = tf.nn.dynamic_rnn(cell, x, sequence_length=tf.constant([4, 5, 1]), dtype=tf.float32)
    return [out, st.c, st.h], f


def gru_lengths(tf, rng):
    x, f = _x(tf, rng)
    out, st = tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(5), x, sequence_length=tf.constant([2, 5, 4]),
                                dtype=tf.float32)
    return [out, st], f


def multi_cell_time_major(tf, rng):
    x, f = _x(tf, rng, time_major=True)
    cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.LSTMCell(4), tf.nn.rnn_cell.GRUCell(3)])
    out, st = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, time_major=True)
    return [out, st[0].c, st[0].h, st[1]], f


def bidirectional_lengths(tf, rng):
    x, f = _x(tf, rng)
    (of, ob), (sf, sb) = tf.nn.bidirectional_dynamic_rnn(
        tf.nn.rnn_cell.BasicLSTMCell(4), tf.nn.rnn_cell.GRUCell(3), x, sequence_length=tf.constant([5, 3, 1]),
        dtype=tf.float32)
    return [of, ob, sf.c, sf.h, sb], f


def basic_rnn_initial_state(tf, rng):
    x, f = _x(tf, rng)
    h0 = tf.placeholder(tf.float32, [3, 4])
    f[h0] = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    out, st = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicRNNCell(4), x, initial_state=h0)
    return [out, st], f


def static_rnn_concatenated_state(tf, rng):
    x, f = _x(tf, rng)
    cell = tf.nn.rnn_cell.LSTMCell(4, state_is_tuple=False)
    outs, st = tf.nn.static_rnn(cell, tf.unstack(x, axis=1), sequence_length=tf.constant([5, 2, 4]),
                                dtype=tf.float32)
    return [tf.stack(outs), st], f


def static_bidirectional(tf, rng):
    x, f = _x(tf, rng)
    outs, sf, sb = tf.nn.static_bidirectional_rnn(tf.nn.rnn_cell.GRUCell(3), tf.nn.rnn_cell.LSTMCell(2),
                                                  tf.unstack(x, axis=1), sequence_length=tf.constant([5, 2, 4]),
                                                  dtype=tf.float32)
    return [tf.stack(outs), sf, sb.c, sb.h], f


def layers_conv_batch_norm(tf, rng):
    xv = rng.uniform(-1, 1, (8, 6, 6, 3)).astype(np.float32)
    x = tf.placeholder(tf.float32, xv.shape)
    h = tf.layers.conv2d(x, 4, 3, strides=2, padding="same", activation=tf.nn.relu)
    h = tf.layers.batch_normalization(h, training=True, momentum=0.9)
    h = tf.layers.max_pooling2d(h, 2, 1)
    h = tf.layers.dense(tf.layers.flatten(h), 5, activation=tf.nn.tanh)
    return [h], {x: xv}


def while_tensor_array(tf, rng):
    xv = rng.uniform(-1, 1, (6, 3)).astype(np.float32)
    x = tf.placeholder(tf.float32, xv.shape)
    w = tf.get_variable("w", [3, 3])

    def body(i, h, ta):
        h = tf.tanh(tf.matmul(tf.reshape(x[i], [1, 3]), w) + h)
        return i + 1, h, ta.write(i, h[0])
    _, h, ta = tf.while_loop(lambda i, h, ta: i < 6, body,
                             [tf.constant(0), tf.zeros([1, 3]), tf.TensorArray(tf.float32, size=6)])
    return [h, ta.stack()], {x: xv}


def fold_left_right(tf, rng):
    xv = rng.uniform(-1, 1, (5, 4)).astype(np.float32)
    x = tf.placeholder(tf.float32, xv.shape)
    w = tf.get_variable("w", [4])
    return [tf.foldl(lambda a, e: a * 0.5 + tf.sin(e * w), x), tf.foldr(lambda a, e: a * e, x + 1.5)], {x: xv}


CASES = [lstm_lengths, lstm_peepholes_projection, gru_lengths, multi_cell_time_major, bidirectional_lengths,
         basic_rnn_initial_state, static_rnn_concatenated_state, static_bidirectional, layers_conv_batch_norm,
         while_tensor_array, fold_left_right]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("build", CASES, ids=[c.__name__ for c in CASES])
def test_matches_tensorflow(build, seed):
    want, want_names = _run(tft, build, seed)
    got, got_names = _run(cft, build, seed)
    assert got_names == want_names
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, (k, a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"output/gradient {k}")
