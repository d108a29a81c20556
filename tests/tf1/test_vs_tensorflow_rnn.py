"""Differential tests against real TensorFlow 1.x for recurrent networks, layers and loop
idioms as TF1 programs write them: dynamic_rnn with LSTMCell (peepholes, projection, clipping),
GRUCell, MultiRNNCell (time-major), the Dropout/Residual/Device wrappers, bidirectional and
static runners with sequence_length, an RNN inside a cond, tf.layers (conv2d,
batch_normalization in training and inference mode, dropout, pooling, dense), while_loop with
a TensorArray, nested loops, a cond inside a loop, maximum_iterations, map_fn, scan with two
accumulators, foldl/foldr.

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
        grads = tf.gradients(loss, vs + [t for t in feeds if t.dtype.is_floating])
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


def rnn_inside_a_cond(tf, rng):
    x, f = _x(tf, rng)
    flag = tf.placeholder(tf.bool, [])
    f[flag] = True
    cell = tf.nn.rnn_cell.GRUCell(4)
    return [tf.cond(flag, lambda: tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)[1], lambda: tf.zeros([3, 4]))], f


def wrappers_residual_device_dropout(tf, rng):
    x, f = _x(tf, rng, d=4)
    cell = tf.nn.rnn_cell.MultiRNNCell([
        tf.nn.rnn_cell.ResidualWrapper(tf.nn.rnn_cell.GRUCell(4)),
        tf.nn.rnn_cell.DeviceWrapper(tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.LSTMCell(3, num_proj=2)), "/cpu:0")])
    out, st = tf.nn.dynamic_rnn(cell, x, sequence_length=tf.constant([5, 1, 3]), dtype=tf.float32)
    return [out, st[0], st[1].c, st[1].h], f


def residual_with_its_own_function(tf, rng):
    x, f = _x(tf, rng, d=4)
    cell = tf.nn.rnn_cell.ResidualWrapper(tf.nn.rnn_cell.BasicRNNCell(4), residual_fn=lambda i, o: i * 0.5 + o)
    out, st = tf.nn.dynamic_rnn(cell, x, sequence_length=tf.constant([2, 5, 3]), dtype=tf.float32)
    return [out, st], f


def layers_inference_mode(tf, rng):
    xv = rng.uniform(-1, 1, (6, 5)).astype(np.float32)
    x = tf.placeholder(tf.float32, xv.shape)
    training = tf.placeholder_with_default(False, [])
    h = tf.layers.batch_normalization(tf.layers.dense(x, 4), training=training)
    h = tf.layers.dropout(h, rate=0.5, training=training)
    return [tf.layers.dense(h, 2)], {x: xv}


def nested_while_loops(tf, rng):
    xv = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    x = tf.placeholder(tf.float32, xv.shape)
    w = tf.get_variable("w", [4])

    def outer(i, acc):
        inner = lambda j, a: (j + 1, a * 0.9 + tf.sin(x[i] * w) * tf.cast(j, tf.float32))  # noqa: E731
        return i + 1, tf.while_loop(lambda j, a: j < 3, inner, [0, acc])[1]
    return [tf.while_loop(lambda i, acc: i < 3, outer, [0, tf.zeros([4])])[1]], {x: xv}


def cond_inside_a_loop(tf, rng):
    xv = rng.uniform(-1, 1, (4,)).astype(np.float32)
    x = tf.placeholder(tf.float32, xv.shape)
    w = tf.get_variable("w", [4])

    def body(i, v):
        return i + 1, tf.tanh(tf.cond(tf.reduce_sum(v) > 0, lambda: v * w, lambda: v + w))
    return [tf.while_loop(lambda i, v: i < 5, body, [0, x])[1]], {x: xv}


def loop_stopped_by_maximum_iterations(tf, rng):
    xv = rng.uniform(0.5, 1, (3,)).astype(np.float32)
    x = tf.placeholder(tf.float32, xv.shape)
    w = tf.get_variable("w", [3])
    out = tf.while_loop(lambda v: tf.reduce_sum(v) < 100.0, lambda v: v * (1.5 + w * w), [x], maximum_iterations=4)
    return [out[0] if isinstance(out, (list, tuple)) else out], {x: xv}


def map_fn_and_scan(tf, rng):
    xv = rng.uniform(-1, 1, (5, 3)).astype(np.float32)
    x = tf.placeholder(tf.float32, xv.shape)
    w = tf.get_variable("w", [3, 3])
    m = tf.map_fn(lambda r: tf.tanh(tf.reshape(tf.matmul(tf.reshape(r, [1, 3]), w), [3])), x)
    a, b = tf.scan(lambda acc, e: (acc[0] * 0.5 + e * w[0], acc[1] + tf.sin(acc[0])), m,
                   initializer=(tf.zeros([3]), tf.ones([3])))
    return [m, a, b], {x: xv}


def text_cnn(tf, rng):
    xv = rng.uniform(-1, 1, (3, 12, 4)).astype(np.float32)
    x = tf.placeholder(tf.float32, xv.shape)
    h = tf.layers.conv1d(x, 6, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.max_pooling1d(h, 2, 2)
    h = tf.layers.conv1d(h, 5, 2, strides=2, dilation_rate=1)
    h = tf.layers.average_pooling1d(h, 2, 1, padding="same")
    return [tf.layers.dense(tf.reduce_max(h, axis=1), 2), tf.nn.conv1d(x, tf.ones([2, 4, 3]) * 0.1, 2, "VALID")], {
        x: xv}


def layer_objects(tf, rng):
    xv = rng.uniform(-1, 1, (4, 6, 6, 2)).astype(np.float32)
    x = tf.placeholder(tf.float32, xv.shape)
    conv = tf.layers.Conv2D(3, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.MaxPooling2D(2, 2)(conv(x))
    h = tf.layers.BatchNormalization(momentum=0.9)(h, training=True)
    h = tf.layers.Flatten()(tf.layers.Dropout(0.5)(h, training=False))
    shared = tf.layers.Dense(5, activation=tf.tanh)
    a, b = shared(h), shared(h * 0.5)                  # one set of variables, called twice
    seq = tf.layers.Conv1D(2, 2)(tf.reshape(a, [4, 5, 1]))
    seq = tf.layers.AveragePooling1D(2, 1)(tf.layers.MaxPooling1D(2, 1, padding="same")(seq))
    return [a + b, tf.layers.Dense(2)(tf.layers.Flatten()(seq)), conv(x * 2.0)], {x: xv}


CASES = [lstm_lengths, lstm_peepholes_projection, gru_lengths, multi_cell_time_major, bidirectional_lengths,
         basic_rnn_initial_state, static_rnn_concatenated_state, static_bidirectional, layers_conv_batch_norm,
         while_tensor_array, fold_left_right, rnn_inside_a_cond, wrappers_residual_device_dropout,
         residual_with_its_own_function, layers_inference_mode, nested_while_loops, cond_inside_a_loop,
         loop_stopped_by_maximum_iterations, map_fn_and_scan, text_cnn, layer_objects]


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
