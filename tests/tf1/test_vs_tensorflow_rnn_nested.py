"""dynamic_rnn with a structure of inputs and a cell whose output is a structure (TF 1.x
runs both: each step gets the inputs in their structure, outputs come back stacked in the
cell's output_size structure), against TensorFlow: a user cell written TF1's way (subclass
of tf.nn.rnn_cell.RNNCell with build(inputs_shape) and call), fed (features, gate) tuples or
a dict, emitting (h, attention-like scores); values, final states and gradients compared.
Skipped cleanly without TensorFlow."""
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

pytestmark = [pytest.mark.timeout(120), pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

B, T, D, G, H = 3, 5, 4, 2, 6


def _make_cell(tf, dict_inputs, single_output=False):
    class GatedCell(tf.nn.rnn_cell.RNNCell):
        """h' = tanh([x, h] W + b) * sigmoid(gate . v); outputs (h', softmax(h' U))."""

        def __init__(self, units):
            super().__init__()
            self._units = units

        @property
        def state_size(self):
            return self._units

        @property
        def output_size(self):
            return self._units if single_output else (self._units, 3)

        def build(self, inputs_shape):
            x_shape, g_shape = ((inputs_shape["x"], inputs_shape["gate"]) if dict_inputs else inputs_shape)
            d = int(x_shape[-1])
            self._w = self.add_variable("w", [d + self._units, self._units])
            self._b = self.add_variable("b", [self._units], initializer=tf.zeros_initializer())
            self._v = self.add_variable("v", [int(g_shape[-1]), 1])
            self._u = self.add_variable("u", [self._units, 3])
            self.built = True

        def call(self, inputs, state):
            x, gate = (inputs["x"], inputs["gate"]) if dict_inputs else inputs
            h = tf.tanh(tf.matmul(tf.concat([x, state], 1), self._w) + self._b)
            h = h * tf.sigmoid(tf.matmul(gate, self._v))
            return (h if single_output else (h, tf.nn.softmax(tf.matmul(h, self._u)))), h

    return GatedCell(H)


def _program(tf, seed, time_major, with_lengths, dict_inputs):
    rng = np.random.RandomState(seed)
    xv = rng.randn(B, T, D).astype(np.float32)
    gv = rng.randn(B, T, G).astype(np.float32)
    if time_major:
        xv, gv = xv.transpose(1, 0, 2), gv.transpose(1, 0, 2)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, xv.shape)
        gate = tf.placeholder(tf.float32, gv.shape)
        cell = _make_cell(tf, dict_inputs)
        inputs = {"x": x, "gate": gate} if dict_inputs else (x, gate)
        lengths = tf.constant([5, 2, 4]) if with_lengths else None
        (h, scores), final = tf.nn.dynamic_rnn(cell, inputs, sequence_length=lengths, dtype=tf.float32,
                                               time_major=time_major)
        names = sorted(v.name for v in tf.global_variables())
        loss = tf.reduce_sum(h * h) + tf.reduce_sum(scores * np.arange(3, dtype=np.float32))
        variables = sorted(tf.trainable_variables(), key=lambda v: v.name)
        grads = tf.gradients(loss, variables + [x, gate])
        with tf.Session(graph=g) as sess:
            wrng = np.random.RandomState(100 + seed)
            for v in variables:
                v.load(wrng.uniform(-0.5, 0.5, v.shape.as_list()).astype(np.float32), sess)
            got = sess.run([h, scores, final] + grads, {x: xv, gate: gv})
    return names, [h.shape.as_list(), scores.shape.as_list()], got


@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("with_lengths", [False, True])
@pytest.mark.parametrize("dict_inputs", [False, True])
def test_structured_inputs_and_outputs_match_tensorflow(time_major, with_lengths, dict_inputs):
    names, shapes, got = _program(cft, 3, time_major, with_lengths, dict_inputs)
    want_names, want_shapes, want = _program(tft, 3, time_major, with_lengths, dict_inputs)
    assert names == want_names == ["rnn/gated_cell/b:0", "rnn/gated_cell/u:0", "rnn/gated_cell/v:0",
                                   "rnn/gated_cell/w:0"]
    assert shapes == want_shapes
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _bidirectional(tf, seed):
    rng = np.random.RandomState(seed)
    xv = rng.randn(B, T, D).astype(np.float32)
    gv = rng.randn(B, T, G).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, xv.shape)
        gate = tf.placeholder(tf.float32, gv.shape)
        (fw, bw), (sf, sb) = tf.nn.bidirectional_dynamic_rnn(
            _make_cell(tf, False, True), _make_cell(tf, False, True), (x, gate),
            sequence_length=tf.constant([5, 3, 1]), dtype=tf.float32)
        variables = sorted(tf.trainable_variables(), key=lambda v: v.name)
        used = [v for v in variables if not v.name.endswith("/u:0")]  # the unused output projection
        fetches = [fw, bw, sf, sb]
        grads = tf.gradients(sum(tf.reduce_sum(f * f) for f in fetches), used + [x, gate])
        with tf.Session(graph=g) as sess:
            wrng = np.random.RandomState(7)
            for v in variables:
                v.load(wrng.uniform(-0.5, 0.5, v.shape.as_list()).astype(np.float32), sess)
            return [v.name for v in variables], sess.run(fetches + grads, {x: xv, gate: gv})


def test_bidirectional_structured_inputs_match_tensorflow():
    """TF's bidirectional_dynamic_rnn takes a structure of inputs (not of outputs: it reverses
    the backward outputs as one tensor; collflow takes both)."""
    names, got = _bidirectional(cft, 4)
    want_names, want = _bidirectional(tft, 4)
    assert names == want_names
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _stacked(tf, wrap):
    rng = np.random.RandomState(11)
    xv = rng.randn(B, T, D).astype(np.float32)
    gv = rng.randn(B, T, G).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, xv.shape)
        gate = tf.placeholder(tf.float32, gv.shape)
        inner = _make_cell(tf, False)
        if wrap == "multi":
            cell = tf.nn.rnn_cell.MultiRNNCell([inner])
        elif wrap == "dropout":
            cell = tf.nn.rnn_cell.DropoutWrapper(inner, input_keep_prob=1.0, output_keep_prob=1.0)
        else:
            cell = tf.nn.rnn_cell.DeviceWrapper(inner, "/cpu:0")
        outs, final = tf.nn.dynamic_rnn(cell, (x, gate), sequence_length=tf.constant([5, 2, 4]), dtype=tf.float32)
        variables = sorted(tf.trainable_variables(), key=lambda v: v.name)
        with tf.Session(graph=g) as sess:
            wrng = np.random.RandomState(5)
            for v in variables:
                v.load(wrng.uniform(-0.5, 0.5, v.shape.as_list()).astype(np.float32), sess)
            return [v.name for v in variables], sess.run([outs, final], {x: xv, gate: gv})


@pytest.mark.parametrize("wrap", ["multi", "dropout", "device"])
def test_wrapped_cells_take_structured_inputs_as_tensorflow(wrap):
    names, got = _stacked(cft, wrap)
    want_names, want = _stacked(tft, wrap)
    assert names == want_names
    for a, b in zip(_flat(got), _flat(want)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [leaf for part in x for leaf in _flat(part)]
    return [x]
