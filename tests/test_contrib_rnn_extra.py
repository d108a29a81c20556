"""tf.contrib.rnn's stacked bidirectional runners, LayerNormBasicLSTMCell and the projection
wrappers (collflow/contrib/rnn_extra.py) without TensorFlow: NumPy references, TF 1.15's
variable names, errors and finite-difference gradients.  tests/tf1/test_vs_tensorflow_contrib_rnn.py
compares them with TensorFlow."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from gradcheck import Case, check_case

rnn = tf.contrib.rnn

pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _ln(x, gain, shift):
    m = x.mean(1, keepdims=True)
    v = ((x - m) ** 2).mean(1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-12) * gain + shift


def test_layer_norm_lstm_step_matches_numpy():
    rng = np.random.RandomState(0)
    x, c, h = rng.randn(3, 4), rng.randn(3, 5), rng.randn(3, 5)
    cell = rnn.LayerNormBasicLSTMCell(5, forget_bias=0.7, norm_gain=1.3, norm_shift=0.2)
    out, st = cell(tf.constant(x, tf.float64), rnn.LSTMStateTuple(tf.constant(c), tf.constant(h)))
    names = [v.name for v in tf.global_variables()]
    assert names == ["layer_norm_basic_lstm_cell/kernel:0"] + [
        f"layer_norm_basic_lstm_cell/{p}/{v}:0" for p in ("input", "transform", "forget", "output", "state")
        for v in ("gamma", "beta")]
    assert not tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        kernel = s.run(cell.trainable_variables[0])
        o, (c2, h2) = s.run([out, st])
    i, j, f, og = np.split(np.concatenate([x, h], 1) @ kernel, 4, axis=1)
    i, j, f, og = (_ln(t, 1.3, 0.2) for t in (i, j, f, og))
    want_c = _ln(c * _sig(f + 0.7) + _sig(i) * np.tanh(j), 1.3, 0.2)
    want_h = np.tanh(want_c) * _sig(og)
    np.testing.assert_allclose(c2, want_c, rtol=1e-10)
    np.testing.assert_allclose(h2, want_h, rtol=1e-10)
    np.testing.assert_allclose(o, want_h, rtol=1e-10)


def test_layer_norm_lstm_without_norm_has_a_bias_and_dropout_takes_a_tensor():
    keep = tf.placeholder_with_default(1.0, [])
    cell = rnn.LayerNormBasicLSTMCell(3, layer_norm=False, dropout_keep_prob=keep, dropout_prob_seed=1)
    x = tf.ones([2, 4, 2])
    out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    assert [v.name for v in tf.trainable_variables()] == ["rnn/layer_norm_basic_lstm_cell/kernel:0",
                                                          "rnn/layer_norm_basic_lstm_cell/bias:0"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        a, b = s.run(out), s.run(out, {keep: 0.5})
    assert a.shape == (2, 4, 3) and not np.allclose(a, b)


def test_projection_wrappers_names_and_values():
    rng = np.random.RandomState(1)
    x = rng.randn(2, 3, 4).astype(np.float32)
    cell = rnn.OutputProjectionWrapper(rnn.InputProjectionWrapper(rnn.BasicRNNCell(5), 6), 2)
    assert cell.output_size == 2 and cell.state_size == 5
    out, st = tf.nn.dynamic_rnn(cell, tf.constant(x), dtype=tf.float32)
    assert [v.name for v in cell.trainable_variables] == [
        "rnn/output_projection_wrapper/input_projection_wrapper/basic_rnn_cell/kernel:0",
        "rnn/output_projection_wrapper/input_projection_wrapper/basic_rnn_cell/bias:0",
        "rnn/output_projection_wrapper/input_projection_wrapper/kernel:0",
        "rnn/output_projection_wrapper/input_projection_wrapper/bias:0",
        "rnn/output_projection_wrapper/kernel:0", "rnn/output_projection_wrapper/bias:0"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        cw, cb, iw, ib, ow, ob = s.run(cell.trainable_variables)
        o, h = s.run([out, st])
    state = np.zeros((2, 5), np.float32)
    for t in range(3):
        state = np.tanh(np.concatenate([x[:, t] @ iw + ib, state], 1) @ cw + cb)
        np.testing.assert_allclose(o[:, t], state @ ow + ob, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, state, rtol=1e-5, atol=1e-6)


def test_stack_bidirectional_dynamic_is_layers_of_bidirectional():
    rng = np.random.RandomState(2)
    x = tf.constant(rng.randn(3, 4, 2).astype(np.float32))
    n = tf.constant([4, 2, 1])
    out, sf, sb = rnn.stack_bidirectional_dynamic_rnn([rnn.GRUCell(3), rnn.GRUCell(2)],
                                                      [rnn.GRUCell(3), rnn.GRUCell(4)], x, sequence_length=n,
                                                      dtype=tf.float32)
    assert out.get_shape().as_list() == [3, 4, 6] and len(sf) == len(sb) == 2
    names = [v.name for v in tf.trainable_variables()]
    assert names[0] == "stack_bidirectional_rnn/cell_0/bidirectional_rnn/fw/gru_cell/gates/kernel:0"
    assert "stack_bidirectional_rnn/cell_1/bidirectional_rnn/bw/gru_cell/candidate/bias:0" in names
    # the same layers by hand, sharing the variables
    with tf.variable_scope("stack_bidirectional_rnn", reuse=True):
        layer = x
        for i, (f, b) in enumerate([(3, 3), (2, 4)]):
            with tf.variable_scope(f"cell_{i}"):
                (of, ob), _ = tf.nn.bidirectional_dynamic_rnn(rnn.GRUCell(f), rnn.GRUCell(b), layer,
                                                              sequence_length=n, dtype=tf.float32)
                layer = tf.concat([of, ob], 2)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        a, b = s.run([out, layer])
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_stack_bidirectional_static_names_and_checks():
    xs = [tf.ones([2, 3]) for _ in range(3)]
    outs, sf, sb = rnn.stack_bidirectional_rnn([rnn.BasicLSTMCell(2)], [rnn.BasicLSTMCell(3)], xs, dtype=tf.float32)
    assert len(outs) == 3 and outs[0].get_shape().as_list() == [2, 5]
    assert tf.trainable_variables()[0].name == "stack_bidirectional_rnn/cell_0/fw/basic_lstm_cell/kernel:0"
    for args, msg in [(([], [rnn.GRUCell(2)]), "at least one fw cell"),
                      (([rnn.GRUCell(2)], [rnn.GRUCell(2)] * 2), "same depth"),
                      (((rnn.GRUCell(2),), [rnn.GRUCell(2)]), "cells_fw must be a list")]:
        with pytest.raises(ValueError, match=msg):
            rnn.stack_bidirectional_dynamic_rnn(*args, tf.ones([2, 3, 2]), dtype=tf.float32)
    with pytest.raises(ValueError, match="initial_states_fw must be a list"):
        rnn.stack_bidirectional_rnn([rnn.GRUCell(2)], [rnn.GRUCell(2)], xs, initial_states_fw=tf.zeros([2, 2]))
    with pytest.raises(ValueError, match="output_size must be > 0"):
        rnn.OutputProjectionWrapper(rnn.GRUCell(2), 0)
    with pytest.raises(TypeError, match="not RNNCell"):
        rnn.InputProjectionWrapper("cell", 2)


def test_conv_lstm_in_dynamic_rnn_freezes_past_lengths():
    rng = np.random.RandomState(3)
    xv = rng.randn(2, 4, 5, 3).astype(np.float32)  # [batch, time, width, channels]
    cell = rnn.Conv1DLSTMCell(input_shape=[5, 3], output_channels=2, kernel_shape=[3], skip_connection=True)
    assert cell.output_size.as_list() == [5, 5] and cell.state_size.h.as_list() == [5, 2]
    out, st = tf.nn.dynamic_rnn(cell, tf.constant(xv), sequence_length=[4, 2], dtype=tf.float32)
    step_out, step_st = cell(tf.constant(xv[:, 0]), cell.zero_state(2, tf.float32))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        o, h, o1, h1 = s.run([out, st.h, step_out, step_st.h])
    assert o.shape == (2, 4, 5, 5)
    np.testing.assert_allclose(o[:, 0], o1, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(o[1, 2:], 0)                   # past the length: zeros
    np.testing.assert_allclose(h[1], o[1, 1, :, :2], rtol=1e-6)  # the state stopped at step 2
    np.testing.assert_array_equal(o[0, :, :, 2:], xv[0])         # skip_connection: the inputs
    np.testing.assert_array_equal(o[1, :2, :, 2:], xv[1, :2])
    assert h1.shape == (2, 5, 2)
    with pytest.raises(ValueError, match="conv_ndims"):
        rnn.ConvLSTMCell(2, [5, 3], 2, [3])


def test_time_reversed_fused_rnn_is_the_backward_half():
    rng = np.random.RandomState(4)
    xv = rng.randn(5, 3, 2).astype(np.float32)  # [time, batch, depth]
    lens = tf.constant([5, 3, 1])
    fused = rnn.LSTMBlockFusedCell(4)
    bw_out, bw_state = rnn.TimeReversedFusedRNN(fused)(tf.constant(xv), dtype=tf.float32, sequence_length=lens,
                                                      scope="bw")
    adaptor = rnn.FusedRNNCellAdaptor(rnn.BasicRNNCell(3), use_dynamic_rnn=True)
    ad_out, _ = adaptor(tf.constant(xv), dtype=tf.float32, scope="ad")
    list_out, _ = rnn.FusedRNNCellAdaptor(rnn.BasicRNNCell(3))(list(tf.unstack(tf.constant(xv))), dtype=tf.float32,
                                                               scope="ad_list")
    # the same LSTM by hand: dynamic_rnn over each sequence reversed within its length
    cell = rnn.LSTMBlockCell(4)
    rev = tf.reverse_sequence(tf.constant(xv), lens, seq_axis=0, batch_axis=1)
    ref_out, ref_state = tf.nn.dynamic_rnn(cell, rev, sequence_length=lens, time_major=True, dtype=tf.float32,
                                           scope="ref")
    ref_out = tf.reverse_sequence(ref_out, lens, seq_axis=0, batch_axis=1)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        src = {v.op.name.split("/")[-1]: v for v in tf.global_variables() if v.op.name.startswith("bw/")}
        for v in tf.global_variables():
            if v.op.name.startswith("ref/"):
                s.run(v.assign(src[v.op.name.split("/")[-1]]))
        a, b, c, d, e, f = s.run([bw_out, ref_out, bw_state.h, ref_state.h, ad_out, list_out])
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, d, rtol=1e-5, atol=1e-6)
    assert e.shape == (5, 3, 3) and len(f) == 5


def _conv_lstm(x):
    cell = rnn.Conv2DLSTMCell(input_shape=[3, 3, 2], output_channels=2, kernel_shape=[2, 2])
    out, st = tf.nn.dynamic_rnn(cell, x, sequence_length=[3, 1], dtype=tf.float64)
    return [out, st.c]


def _ln_lstm(x):
    out, st = tf.nn.dynamic_rnn(rnn.LayerNormBasicLSTMCell(3), x, sequence_length=[3, 1], dtype=tf.float64)
    return [out, st.c]


def _projected(x):
    cell = rnn.OutputProjectionWrapper(rnn.InputProjectionWrapper(rnn.GRUCell(3), 2, activation=tf.tanh), 2)
    out, st = tf.nn.dynamic_rnn(cell, x, dtype=tf.float64)
    return [out, st]


@pytest.mark.parametrize("case", [
    Case("Mean", _ln_lstm, [(2, 3, 4)], id="LayerNormBasicLSTMCell"),
    Case("MatMul", _projected, [(2, 3, 4)], id="projection_wrappers"),
    Case("Conv2D", _conv_lstm, [(2, 3, 3, 3, 2)], id="Conv2DLSTMCell"),
], ids=str)
def test_gradients_match_finite_differences(case):
    check_case(case)
