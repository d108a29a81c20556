"""Differential tests of tf.keras.layers.RNN with the built-in cells, a user cell and stacked
cells against TensorFlow's Keras (tf_keras in TF1 graph mode): the outputs and states of the
same weights, one fit step's weights, gradients w.r.t. the inputs, and model files of either
library.  Skipped cleanly without TensorFlow.

tf_keras 2.x's cell defaults are TF 2's (sigmoid gates, GRU reset_after=True): the cases give
every such argument explicitly.  tf_keras returns a stack's states nested per cell, TF 1.15
(and collflow) flat: the states are compared flat.
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
tft.experimental.output_all_intermediates(True)  # TF's v1 graphs need it for a while loop's gradient

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.timeout(300)]

B, T, D, U = 4, 5, 3, 3


def _minimal_cell_class(tf):
    class MinimalRNNCell(tf.keras.layers.Layer):
        def __init__(self, units, **kwargs):
            self.units = units
            self.state_size = units
            super().__init__(**kwargs)

        def build(self, input_shape):
            self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="uniform", name="kernel")
            self.recurrent_kernel = self.add_weight(shape=(self.units, self.units), initializer="uniform",
                                                    name="recurrent_kernel")
            self.built = True

        def call(self, inputs, states):
            prev_output = states[0]
            output = tf.tanh(tf.keras.backend.dot(inputs, self.kernel)
                             + tf.keras.backend.dot(prev_output, self.recurrent_kernel))
            return output, [output]

        def get_config(self):
            return dict(super().get_config(), units=self.units)
    return MinimalRNNCell


_CELLS = {
    "simple": lambda tf: tf.keras.layers.SimpleRNNCell(U),
    "lstm": lambda tf: tf.keras.layers.LSTMCell(U, recurrent_activation="hard_sigmoid"),
    "lstm_sigmoid": lambda tf: tf.keras.layers.LSTMCell(U, recurrent_activation="sigmoid", unit_forget_bias=False,
                                                        bias_initializer="ones"),
    "gru": lambda tf: tf.keras.layers.GRUCell(U, recurrent_activation="hard_sigmoid", reset_after=False),
    "gru_reset_after": lambda tf: tf.keras.layers.GRUCell(U, recurrent_activation="sigmoid", reset_after=True),
    "custom": lambda tf: _minimal_cell_class(tf)(U),
    "stacked": lambda tf: [tf.keras.layers.LSTMCell(U, recurrent_activation="sigmoid"),
                           tf.keras.layers.GRUCell(2, recurrent_activation="sigmoid", reset_after=True),
                           _minimal_cell_class(tf)(2)],
}


def _flat(tf, xs):
    return [np.asarray(v) for v in tensorflow.nest.flatten(xs)] if tf is tft else [np.asarray(v) for v in xs]


def _run(tf, kind, options, weights=None):
    r = np.random.RandomState(3)
    x = r.randn(B, T, D).astype(np.float32)
    y = r.randn(B, 2 if kind == "stacked" else U).astype(np.float32)
    if options.get("mask"):
        x[1, 3:] = 0.0
        x[2, 1:] = 0.0
    with tf.Graph().as_default():
        inp = tf.keras.Input((T, D))
        h = tf.keras.layers.Masking()(inp) if options.get("mask") else inp
        layer = tf.keras.layers.RNN(_CELLS[kind](tf), return_sequences=True, return_state=True,
                                    go_backwards=options.get("go_backwards", False))
        outs = layer(h)
        seq, states = outs[0], outs[1:]
        model = tf.keras.Model(inp, tf.keras.layers.GlobalAveragePooling1D()(seq) if False else seq[:, -1])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.5), loss="mse")
        if weights is not None:
            layer.set_weights(weights)
        w0 = layer.get_weights()
        sess = tf.keras.backend.get_session()
        grads = tf.gradients(tf.reduce_sum(seq * np.linspace(0.5, 1.5, seq.shape[-1]).astype(np.float32)),
                             [inp] + layer.weights)
        got_seq, got_states, got_grads = sess.run([seq, states, grads], {inp: x})
        model.fit(x, y, batch_size=B, epochs=1, shuffle=False, verbose=0)
        return {"w0": w0, "seq": got_seq, "states": _flat(tf, got_states), "grads": got_grads,
                "w1": layer.get_weights(), "names": [v.name for v in layer.weights]}


@pytest.mark.parametrize("options", [{}, {"mask": True}, {"go_backwards": True}],
                         ids=["plain", "masked", "backwards"])
@pytest.mark.parametrize("kind", sorted(_CELLS))
def test_rnn_of_cell_matches_tensorflow_keras(kind, options):
    want = _run(tft, kind, options)
    got = _run(cft, kind, options, want["w0"])
    assert [w.shape for w in got["w0"]] == [w.shape for w in want["w0"]]
    assert [n.rsplit("/", 1)[-1] for n in got["names"]] == [n.rsplit("/", 1)[-1] for n in want["names"]]
    np.testing.assert_allclose(got["seq"], want["seq"], rtol=1e-5, atol=1e-5)
    assert len(got["states"]) == len(want["states"])
    for a, b in zip(got["states"], want["states"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    for a, b in zip(got["grads"], want["grads"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    for a, b in zip(got["w1"], want["w1"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def _initial_state_run(tf, weights=None):
    r = np.random.RandomState(9)
    x = r.randn(B, T, D).astype(np.float32)
    s = [r.randn(B, U).astype(np.float32) for _ in range(2)]
    with tf.Graph().as_default():
        inp = tf.keras.Input((T, D))
        h0, c0 = tf.keras.Input((U,)), tf.keras.Input((U,))
        layer = tf.keras.layers.RNN(tf.keras.layers.LSTMCell(U, recurrent_activation="sigmoid"), return_state=True)
        outs = layer(inp, initial_state=[h0, c0])
        if weights is not None:
            layer.set_weights(weights)
        w = layer.get_weights()
        return w, tf.keras.backend.get_session().run(outs, {inp: x, h0: s[0], c0: s[1]})


def test_initial_state_matches_tensorflow_keras():
    w, want = _initial_state_run(tft)
    _, got = _initial_state_run(cft, w)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def _saved(tf):
    m = tf.keras.Sequential([
        tf.keras.layers.RNN([tf.keras.layers.LSTMCell(U, recurrent_activation="sigmoid"),
                             tf.keras.layers.GRUCell(U, reset_after=True, recurrent_activation="sigmoid")],
                            return_sequences=True, input_shape=(T, D)),
        tf.keras.layers.RNN(tf.keras.layers.SimpleRNNCell(2), go_backwards=True)])
    m.compile("sgd", "mse")
    return m, np.random.RandomState(8).rand(4, T, D).astype(np.float32)


def test_model_files_of_rnn_cells_load_in_either_library(tmp_path):
    for src, dst in ((cft, tft), (tft, cft)):
        path = str(tmp_path / f"{src.__name__}.h5")
        with src.Graph().as_default():
            m, x = _saved(src)
            want = m.predict(x)
            m.save(path)
        with dst.Graph().as_default():
            loaded = dst.keras.models.load_model(path, compile=False)
            np.testing.assert_allclose(loaded.predict(x), want, rtol=1e-5, atol=1e-5)
            assert type(loaded.layers[0].cell).__name__ == "StackedRNNCells"


# -- ConvLSTM2D, and the CuDNN layers' math ----------------------------------------------------
_CONV = {
    "valid": dict(padding="valid"),
    "same_backwards": dict(padding="same", go_backwards=True, recurrent_activation="sigmoid"),
    "strides": dict(padding="same", strides=(2, 1)),
    "dilation": dict(padding="valid", dilation_rate=2, unit_forget_bias=False, bias_initializer="ones"),
    "channels_first": dict(padding="same", strides=(1, 2), data_format="channels_first"),
    "channels_first_valid_backwards": dict(padding="valid", data_format="channels_first", go_backwards=True),
}


def _conv_run(tf, kind, weights=None):
    r = np.random.RandomState(4)
    x = r.randn(3, 3, 7, 6, 2).astype(np.float32)
    if _CONV[kind].get("data_format") == "channels_first":
        x = np.ascontiguousarray(x.transpose(0, 1, 4, 2, 3))
    with tf.Graph().as_default():
        inp = tf.keras.Input(x.shape[1:])
        layer = tf.keras.layers.ConvLSTM2D(2, (3, 2), return_sequences=True, **_CONV[kind])
        seq = layer(inp)
        if _CONV[kind].get("data_format") == "channels_first":  # [batch, time, filters, rows, cols]
            pooled = tf.keras.layers.Lambda(lambda t: tf.reduce_mean(t, [1, 3, 4]))(seq)
        else:
            pooled = tf.keras.layers.GlobalAveragePooling3D()(seq)
        model = tf.keras.Model(inp, pooled)
        model.compile(optimizer=tf.keras.optimizers.SGD(0.5), loss="mse")
        if weights is not None:
            layer.set_weights(weights)
        w0 = layer.get_weights()
        sess = tf.keras.backend.get_session()
        grads = tf.gradients(tf.reduce_sum(seq * seq), [inp] + layer.weights)
        got_seq, got_grads = sess.run([seq, grads], {inp: x})
        y = r.randn(3, 2).astype(np.float32)
        model.fit(x, y, batch_size=3, epochs=1, shuffle=False, verbose=0)
        return {"w0": w0, "seq": got_seq, "grads": got_grads, "w1": layer.get_weights()}


@pytest.mark.parametrize("kind", sorted(_CONV))
def test_convlstm2d_matches_tensorflow_keras(kind):
    want = _conv_run(tft, kind)
    got = _conv_run(cft, kind, want["w0"])
    if kind == "dilation":  # bias_initializer with unit_forget_bias=False: the same initial bias
        np.testing.assert_array_equal(got["w0"][2], want["w0"][2])
    np.testing.assert_allclose(got["seq"], want["seq"], rtol=1e-5, atol=1e-5)
    for a, b in zip(got["grads"], want["grads"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    for a, b in zip(got["w1"], want["w1"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_convlstm2d_initial_bias_matches_tensorflow_keras():
    out = []
    for tf in (tft, cft):
        with tf.Graph().as_default():
            layer = tf.keras.layers.ConvLSTM2D(3, 2)
            layer(tf.keras.Input((2, 4, 4, 1)))
            out.append(tf.keras.backend.get_session().run(layer.weights[2]))
    np.testing.assert_array_equal(out[0], out[1])


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_cudnn_layers_math_matches_tensorflow_keras(kind):
    """TensorFlow runs CuDNNLSTM / CuDNNGRU on cuDNN only: collflow's CuDNN layers are compared
    with tf_keras's LSTM (sigmoid gates, the two biases summed) and GRU (reset_after, sigmoid,
    the bias as its two rows), from the same canonical weights."""
    r = np.random.RandomState(6)
    x = r.randn(B, T, D).astype(np.float32)
    with cft.Graph().as_default():
        inp = cft.keras.Input((T, D))
        layer = (cft.keras.layers.CuDNNLSTM if kind == "lstm" else cft.keras.layers.CuDNNGRU)(
            U, return_sequences=True, return_state=True)
        outs = layer(inp)
        w = [v + r.randn(*v.shape).astype(np.float32) * 0.3 for v in layer.get_weights()]
        layer.set_weights(w)
        got = cft.keras.backend.get_session().run(outs, {inp: x})
    with tft.Graph().as_default():
        inp = tft.keras.Input((T, D))
        if kind == "lstm":
            ref = tft.keras.layers.LSTM(U, recurrent_activation="sigmoid", return_sequences=True, return_state=True)
            bias = w[2][:4 * U] + w[2][4 * U:]
        else:
            ref = tft.keras.layers.GRU(U, recurrent_activation="sigmoid", reset_after=True, return_sequences=True,
                                       return_state=True)
            bias = w[2].reshape(2, 3 * U)
        outs = ref(inp)
        ref.set_weights([w[0], w[1], bias])
        want = tft.keras.backend.get_session().run(outs, {inp: x})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_cudnn_weights_layout_matches_tensorflow_keras():
    """Names and shapes of the weights (the HDF5 layout), built without running cuDNN."""
    shapes = {}
    for tf in (tft, cft):
        with tf.Graph().as_default():
            x = tf.keras.Input((T, D))
            a, b = tf.keras.layers.CuDNNLSTM(U), tf.keras.layers.CuDNNGRU(U)
            a(x)
            b(x)
            shapes[tf] = [(v.name, tuple(v.shape.as_list())) for v in a.weights + b.weights]
    assert shapes[tft] == shapes[cft]
