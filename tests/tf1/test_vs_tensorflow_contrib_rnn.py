"""collflow's tf.contrib.rnn additions (stack_bidirectional_dynamic_rnn, stack_bidirectional_rnn,
LayerNormBasicLSTMCell, OutputProjectionWrapper, InputProjectionWrapper, Conv1D/2D/3DLSTMCell in
dynamic_rnn over [batch, time, ..., channels] inputs) against TensorFlow.

TF 2.x has no tf.contrib, so TensorFlow's side is the same construction from its core
pieces, as TF 1.15's contrib builds it: bidirectional runners in TF's scopes, and TF RNNCell
subclasses with TF 1.15's math, whose variable scopes TF's own Layer machinery names.  The
outputs, final states and gradients to every variable and input are compared, and so are the
variables' names (a TF1 checkpoint's keys).
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

RTOL, ATOL = 2e-4, 2e-5
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")


def _tf_cells():
    """TF 1.15's contrib cells written on TF's core RNNCell (the reference side)."""

    class LayerNormBasicLSTMCell(tft.nn.rnn_cell.RNNCell):
        def __init__(self, num_units, forget_bias=1.0, layer_norm=True, norm_gain=1.0, norm_shift=0.0):
            super().__init__()
            self._n, self._fb, self._ln = num_units, forget_bias, layer_norm
            self._gain, self._shift = norm_gain, norm_shift

        state_size = property(lambda self: tft.nn.rnn_cell.LSTMStateTuple(self._n, self._n))
        output_size = property(lambda self: self._n)

        def _norm(self, x, scope):
            with tft.variable_scope(scope):
                gamma = tft.get_variable("gamma", [self._n], initializer=tft.constant_initializer(self._gain))
                beta = tft.get_variable("beta", [self._n], initializer=tft.constant_initializer(self._shift))
            mean, var = tft.nn.moments(x, [1], keep_dims=True)
            return tft.nn.batch_normalization(x, mean, var, beta, gamma, 1e-12)

        def call(self, inputs, state):
            c, h = state
            args = tft.concat([inputs, h], 1)
            out = tft.matmul(args, tft.get_variable("kernel", [int(args.shape[1]), 4 * self._n]))
            if not self._ln:
                out = tft.nn.bias_add(out, tft.get_variable("bias", [4 * self._n]))
            i, j, f, o = tft.split(out, 4, axis=1)
            if self._ln:
                i, j, f, o = (self._norm(t, s) for t, s in zip((i, j, f, o), ("input", "transform", "forget",
                                                                              "output")))
            new_c = c * tft.sigmoid(f + self._fb) + tft.sigmoid(i) * tft.tanh(j)
            if self._ln:
                new_c = self._norm(new_c, "state")
            new_h = tft.tanh(new_c) * tft.sigmoid(o)
            return new_h, tft.nn.rnn_cell.LSTMStateTuple(new_c, new_h)

    class _Proj(tft.nn.rnn_cell.RNNCell):
        def _dense(self, x, size):
            w = tft.get_variable("kernel", [int(x.shape[1]), size])
            b = tft.get_variable("bias", [size], initializer=tft.zeros_initializer())
            y = tft.nn.bias_add(tft.matmul(x, w), b)
            return self._act(y) if self._act else y

    class OutputProjectionWrapper(_Proj):
        def __init__(self, cell, output_size, activation=None):
            super().__init__()
            self._cell, self._size, self._act = cell, output_size, activation

        state_size = property(lambda self: self._cell.state_size)
        output_size = property(lambda self: self._size)

        def call(self, inputs, state):
            out, st = self._cell(inputs, state)
            return self._dense(out, self._size), st

    class InputProjectionWrapper(_Proj):
        def __init__(self, cell, num_proj, activation=None):
            super().__init__()
            self._cell, self._size, self._act = cell, num_proj, activation

        state_size = property(lambda self: self._cell.state_size)
        output_size = property(lambda self: self._cell.output_size)

        def call(self, inputs, state):
            return self._cell(self._dense(inputs, self._size), state)

    class ConvLSTMCell(tft.nn.rnn_cell.RNNCell):
        def __init__(self, conv_ndims, input_shape, output_channels, kernel_shape, skip_connection=False,
                     forget_bias=1.0, name="conv_lstm_cell"):
            super().__init__(name=name)
            self._nd, self._in, self._out, self._k = conv_ndims, input_shape, output_channels, kernel_shape
            self._skip, self._fb = skip_connection, forget_bias
            self._shape = tft.TensorShape(input_shape[:-1] + [output_channels])

        state_size = property(lambda self: tft.nn.rnn_cell.LSTMStateTuple(self._shape, self._shape))
        output_size = property(lambda self: tft.TensorShape(
            self._in[:-1] + [self._out + (self._in[-1] if self._skip else 0)]))

        def call(self, inputs, state):
            c, h = state
            x = tft.concat([inputs, h], self._nd + 1)
            k = tft.get_variable("kernel", self._k + [int(x.shape[-1]), 4 * self._out])
            conv = {1: lambda: tft.nn.conv1d(x, k, 1, "SAME"), 2: lambda: tft.nn.conv2d(x, k, [1] * 4, "SAME"),
                    3: lambda: tft.nn.conv3d(x, k, [1] * 5, "SAME")}[self._nd]
            y = conv() + tft.get_variable("biases", [4 * self._out], initializer=tft.zeros_initializer())
            i, j, f, o = tft.split(y, 4, axis=self._nd + 1)
            new_c = tft.sigmoid(f + self._fb) * c + tft.sigmoid(i) * tft.tanh(j)
            new_h = tft.tanh(new_c) * tft.sigmoid(o)
            # skip_connection: the inputs join the output, not the state (TF 1.15's state grew,
            # and dynamic_rnn refused it)
            out = tft.concat([new_h, inputs], -1) if self._skip else new_h
            return out, tft.nn.rnn_cell.LSTMStateTuple(new_c, new_h)

    return dict(LayerNormBasicLSTMCell=LayerNormBasicLSTMCell, OutputProjectionWrapper=OutputProjectionWrapper,
                InputProjectionWrapper=InputProjectionWrapper,
                Conv1DLSTMCell=lambda **kw: ConvLSTMCell(1, name="conv_1d_lstm_cell", **kw),
                Conv2DLSTMCell=lambda **kw: ConvLSTMCell(2, name="conv_2d_lstm_cell", **kw),
                Conv3DLSTMCell=lambda **kw: ConvLSTMCell(3, name="conv_3d_lstm_cell", **kw))


def _stack_dynamic(tf, cells_fw, cells_bw, x, **kw):
    if tf is cft:
        return cft.contrib.rnn.stack_bidirectional_dynamic_rnn(cells_fw, cells_bw, x, **kw)
    states_fw, states_bw, layer = [], [], x
    s_fw, s_bw = kw.pop("initial_states_fw", None), kw.pop("initial_states_bw", None)
    with tf.variable_scope("stack_bidirectional_rnn"):
        for i, (f, b) in enumerate(zip(cells_fw, cells_bw)):
            with tf.variable_scope(f"cell_{i}"):
                outs, (sf, sb) = tf.nn.bidirectional_dynamic_rnn(
                    f, b, layer, initial_state_fw=s_fw[i] if s_fw else None,
                    initial_state_bw=s_bw[i] if s_bw else None, **kw)
                layer = tf.concat(outs, 2)
            states_fw.append(sf), states_bw.append(sb)
    return layer, tuple(states_fw), tuple(states_bw)


def _stack_static(tf, cells_fw, cells_bw, xs, **kw):
    if tf is cft:
        return cft.contrib.rnn.stack_bidirectional_rnn(cells_fw, cells_bw, xs, **kw)
    states_fw, states_bw, layer = [], [], xs
    with tf.variable_scope("stack_bidirectional_rnn"):
        for i, (f, b) in enumerate(zip(cells_fw, cells_bw)):
            with tf.variable_scope(f"cell_{i}") as sc:
                layer, sf, sb = tf.nn.static_bidirectional_rnn(f, b, layer, scope=sc, **kw)
            states_fw.append(sf), states_bw.append(sb)
    return layer, tuple(states_fw), tuple(states_bw)


def _cells(tf):
    return cft.contrib.rnn if tf is cft else type("C", (), _tf_cells())


def _lengths(tf):
    n = tf.placeholder(tf.int32, [3])
    return n, {n: np.array([5, 2, 0], np.int32)}


def stack_dynamic_lstm_gru(tf, rng):
    x = tf.placeholder(tf.float32, [3, 5, 4])
    n, feed = _lengths(tf)
    out, sf, sb = _stack_dynamic(tf, [tf.nn.rnn_cell.LSTMCell(3), tf.nn.rnn_cell.GRUCell(2)],
                                 [tf.nn.rnn_cell.LSTMCell(3), tf.nn.rnn_cell.GRUCell(4)], x,
                                 sequence_length=n, dtype=tf.float32)
    return [out] + tf.nest.flatten(sf) + tf.nest.flatten(sb), {**feed, x: rng.uniform(-1, 1, (3, 5, 4))}


def stack_dynamic_time_major_initial_states(tf, rng):
    x = tf.placeholder(tf.float32, [4, 2, 3])
    s0 = [tf.placeholder(tf.float32, [2, 3]) for _ in range(4)]
    out, sf, sb = _stack_dynamic(tf, [tf.nn.rnn_cell.GRUCell(3)] * 1 + [tf.nn.rnn_cell.GRUCell(3)],
                                 [tf.nn.rnn_cell.GRUCell(3), tf.nn.rnn_cell.GRUCell(3)], x,
                                 initial_states_fw=s0[:2], initial_states_bw=s0[2:], time_major=True)
    feed = {x: rng.uniform(-1, 1, (4, 2, 3))}
    feed.update({s: rng.uniform(-1, 1, (2, 3)) for s in s0})
    return [out] + list(sf) + list(sb), feed


def stack_static_lengths(tf, rng):
    xs = [tf.placeholder(tf.float32, [3, 2]) for _ in range(4)]
    n, feed = _lengths(tf)
    feed[n] = np.array([4, 1, 3], np.int32)
    outs, sf, sb = _stack_static(tf, [tf.nn.rnn_cell.BasicLSTMCell(3), tf.nn.rnn_cell.BasicRNNCell(2)],
                                 [tf.nn.rnn_cell.BasicLSTMCell(2), tf.nn.rnn_cell.BasicRNNCell(2)], xs,
                                 sequence_length=n, dtype=tf.float32)
    feed.update({x: rng.uniform(-1, 1, (3, 2)) for x in xs})
    return list(outs) + tf.nest.flatten(sf) + tf.nest.flatten(sb), feed


def layer_norm_lstm(tf, rng, **kw):
    x = tf.placeholder(tf.float32, [3, 5, 4])
    n, feed = _lengths(tf)
    cell = _cells(tf).LayerNormBasicLSTMCell(6, **kw)
    out, st = tf.nn.dynamic_rnn(cell, x, sequence_length=n, dtype=tf.float32)
    return [out, st.c, st.h], {**feed, x: rng.uniform(-1, 1, (3, 5, 4))}


def layer_norm_lstm_in_multi_cell(tf, rng):
    x = tf.placeholder(tf.float32, [2, 4, 3])
    c = _cells(tf)
    cell = tf.nn.rnn_cell.MultiRNNCell([c.LayerNormBasicLSTMCell(4, norm_gain=0.5, norm_shift=0.1),
                                        c.LayerNormBasicLSTMCell(3, layer_norm=False)])
    out, st = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    return [out] + tf.nest.flatten(st), {x: rng.uniform(-1, 1, (2, 4, 3))}


def output_projection(tf, rng):
    x = tf.placeholder(tf.float32, [3, 5, 4])
    cell = _cells(tf).OutputProjectionWrapper(tf.nn.rnn_cell.BasicRNNCell(6), 2, activation=tf.nn.relu)
    out, st = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    return [out, st], {x: rng.uniform(-1, 1, (3, 5, 4))}


def input_projection_lstm(tf, rng):
    x = tf.placeholder(tf.float32, [3, 5, 4])
    n, feed = _lengths(tf)
    cell = _cells(tf).InputProjectionWrapper(tf.nn.rnn_cell.LSTMCell(3), 5)
    out, st = tf.nn.dynamic_rnn(cell, x, sequence_length=n, dtype=tf.float32)
    return [out, st.c, st.h], {**feed, x: rng.uniform(-1, 1, (3, 5, 4))}


def projections_stacked_static(tf, rng):
    xs = [tf.placeholder(tf.float32, [2, 3]) for _ in range(3)]
    c = _cells(tf)
    cell = c.OutputProjectionWrapper(c.InputProjectionWrapper(tf.nn.rnn_cell.GRUCell(4), 2), 3)
    outs, st = tf.nn.static_rnn(cell, xs, dtype=tf.float32)
    return list(outs) + [st], {x: rng.uniform(-1, 1, (2, 3)) for x in xs}


def conv2d_lstm_lengths(tf, rng):
    x = tf.placeholder(tf.float32, [3, 4, 5, 6, 2])
    n, feed = _lengths(tf)
    n_feed = {n: np.array([4, 2, 0], np.int32)}
    cell = _cells(tf).Conv2DLSTMCell(input_shape=[5, 6, 2], output_channels=3, kernel_shape=[3, 2])
    out, st = tf.nn.dynamic_rnn(cell, x, sequence_length=n, dtype=tf.float32)
    return [out, st.c, st.h], {**n_feed, x: rng.uniform(-1, 1, (3, 4, 5, 6, 2))}


def conv1d_lstm_skip_time_major_bidirectional(tf, rng):
    x = tf.placeholder(tf.float32, [4, 2, 7, 3])
    c = _cells(tf)
    kw = dict(input_shape=[7, 3], output_channels=2, kernel_shape=[3], skip_connection=True, forget_bias=0.5)
    (fw, bw), (sf, sb) = tf.nn.bidirectional_dynamic_rnn(c.Conv1DLSTMCell(**kw), c.Conv1DLSTMCell(**kw), x,
                                                         time_major=True, dtype=tf.float32)
    return [fw, bw, sf.c, sb.h], {x: rng.uniform(-1, 1, (4, 2, 7, 3))}


def conv3d_lstm(tf, rng):
    x = tf.placeholder(tf.float32, [2, 3, 3, 4, 4, 1])
    cell = _cells(tf).Conv3DLSTMCell(input_shape=[3, 4, 4, 1], output_channels=2, kernel_shape=[2, 3, 3])
    out, st = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    return [out, st.c], {x: rng.uniform(-1, 1, (2, 3, 3, 4, 4, 1))}


CASES = [stack_dynamic_lstm_gru, stack_dynamic_time_major_initial_states, stack_static_lengths,
         layer_norm_lstm, lambda tf, rng: layer_norm_lstm(tf, rng, forget_bias=0.5, norm_gain=1.5),
         lambda tf, rng: layer_norm_lstm(tf, rng, layer_norm=False),
         layer_norm_lstm_in_multi_cell, output_projection, input_projection_lstm, projections_stacked_static,
         conv2d_lstm_lengths, conv1d_lstm_skip_time_major_bidirectional, conv3d_lstm]
IDS = ["stack_dynamic_lstm_gru", "stack_dynamic_time_major_initial_states", "stack_static_lengths",
       "layer_norm_lstm", "layer_norm_lstm_gain_forget_bias", "layer_norm_lstm_no_norm",
       "layer_norm_lstm_in_multi_cell", "output_projection", "input_projection_lstm", "projections_stacked_static",
       "conv2d_lstm_lengths", "conv1d_lstm_skip_time_major_bidirectional", "conv3d_lstm"]


def _run(tf, build, seed):
    g = tf.Graph()
    with g.as_default():
        outs, feeds = build(tf, np.random.default_rng(seed))
        feeds = {k: np.asarray(v, np.float32) if np.asarray(v).dtype.kind == "f" else v for k, v in feeds.items()}
        names = [v.name for v in tf.global_variables()]  # creation order, as a checkpoint lists them
        vs = sorted(tf.trainable_variables(), key=lambda v: v.name)
        r = np.random.default_rng(seed + 100)
        wts = [r.uniform(-1, 1, [int(d) for d in o.shape]).astype(np.float32) for o in outs]
        loss = tf.add_n([tf.reduce_sum(o * w) for o, w in zip(outs, wts)])
        grads = tf.gradients(loss, vs + [t for t in feeds if t.dtype.is_floating])
        init = tf.global_variables_initializer()
        with tf.Session(graph=g) as s:
            s.run(init)
            vr = np.random.default_rng(seed + 200)
            for v in vs:
                s.run(v.assign(vr.uniform(-0.5, 0.5, [int(d) for d in v.shape]).astype(np.float32)))
            return s.run(outs + grads, feeds), names


@pytest.mark.parametrize("build", CASES, ids=IDS)
def test_matches_tensorflow(build):
    want, want_names = _run(tft, build, 3)
    got, got_names = _run(cft, build, 3)
    assert got_names == want_names
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"fetch {i}")
