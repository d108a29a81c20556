"""tf.contrib.cudnn_rnn's layers against TensorFlow on a CPU.  TensorFlow's CudnnRNN ops need a
GPU (and TF 2.x has no contrib), so the references are TF's CPU kernels of the same math: the
BlockLSTM op with forget_bias 0 (what TF's CudnnCompatibleLSTMCell, an LSTMBlockCell, runs) on the
layer's canonical kernel and bias, and Keras's GRU with reset_after=True (cuDNN's GRU) on the
weights rearranged into Keras's layout.  Skipped cleanly without TensorFlow."""
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
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def _collflow(cls, num_layers, n, x, direction="unidirectional"):
    g = cft.Graph()
    with g.as_default():
        layer = cls(num_layers, n, direction=direction, dtype=cft.as_dtype(x.dtype),
                    bias_initializer=cft.random_uniform_initializer(-0.5, 0.5, seed=3))
        out, states = layer(cft.constant(x))
        with cft.Session() as sess:
            sess.run(cft.global_variables_initializer())
            return sess.run(layer.variables), sess.run([out, states])


@pytest.mark.parametrize("num_layers", [1, 2])
def test_lstm_vs_tf_block_lstm(num_layers):
    rng = np.random.RandomState(0)
    T, B, I, n = 5, 3, 4, 6
    x = rng.randn(T, B, I).astype(np.float32)  # TF's BlockLSTM has no float64 kernel
    weights, (out, (h, c)) = _collflow(cft.contrib.cudnn_rnn.CudnnLSTM, num_layers, n, x)
    g = tft.Graph()
    with g.as_default():
        inp, hs, cs = tft.constant(x), [], []
        zeros = tft.zeros([B, n])
        peep = tft.zeros([n])
        for layer in range(num_layers):
            kernel, bias = weights[2 * layer], weights[2 * layer + 1]
            res = tensorflow.raw_ops.BlockLSTM(seq_len_max=tft.constant(T, tft.int64), x=inp, cs_prev=zeros,
                                               h_prev=zeros, w=tft.constant(kernel), wci=peep, wcf=peep, wco=peep,
                                               b=tft.constant(bias), forget_bias=0.0, cell_clip=-1.0,
                                               use_peephole=False)
            inp = res.h
            hs.append(res.h[-1])
            cs.append(res.cs[-1])
        with tft.Session() as sess:
            want_out, want_h, want_c = sess.run([inp, tft.stack(hs), tft.stack(cs)])
    np.testing.assert_allclose(out, want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, want_c, rtol=1e-5, atol=1e-6)


def _keras_gru_weights(gk, gb, cxk, cxb, chk, chb, width, n):
    # ours: gates/kernel [width + n, 2n] (r | u), candidate kernels apart; Keras: z, r, h and
    # a bias [2, 3n] of input and recurrent rows (the gate biases go whole to the input row)
    wx, wh = gk[:width], gk[width:]
    kernel = np.concatenate([wx[:, n:], wx[:, :n], cxk], 1)
    recurrent = np.concatenate([wh[:, n:], wh[:, :n], chk], 1)
    bias = np.stack([np.concatenate([gb[n:], gb[:n], cxb]), np.concatenate([np.zeros(2 * n), chb])])
    return [kernel, recurrent, bias]


@pytest.mark.parametrize("direction", ["unidirectional", "bidirectional"])
def test_gru_vs_keras_gru_reset_after(direction):
    rng = np.random.RandomState(1)
    T, B, I, n = 5, 3, 4, 6
    x = rng.randn(T, B, I)
    weights, (out, (h,)) = _collflow(cft.contrib.cudnn_rnn.CudnnGRU, 1, n, x, direction)
    g = tft.Graph()
    with g.as_default():
        keras = tensorflow.keras
        gru = lambda back: keras.layers.GRU(n, reset_after=True, return_sequences=True, return_state=True,  # noqa: E731
                                            recurrent_activation="sigmoid", go_backwards=back, dtype="float64")
        xb = tft.constant(x.transpose(1, 0, 2))
        layers = [gru(False)] + ([gru(True)] if direction == "bidirectional" else [])
        runs = [lay(xb) for lay in layers]
        with tft.Session() as sess:
            sess.run(tft.global_variables_initializer())
            for d, lay in enumerate(layers):
                w = _keras_gru_weights(*weights[6 * d:6 * d + 6], I, n)
                for var, v in zip(lay.weights, w):
                    var.load(v, sess)
            got = sess.run(runs)
    want_out = got[0][0]
    want_h = [got[0][1]]
    if direction == "bidirectional":
        want_out = np.concatenate([want_out, got[1][0][:, ::-1]], 2)  # go_backwards emits reversed steps
        want_h.append(got[1][1])
    np.testing.assert_allclose(out, want_out.transpose(1, 0, 2), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(h, np.stack(want_h), rtol=1e-9, atol=1e-11)
