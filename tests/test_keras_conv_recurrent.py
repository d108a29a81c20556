"""tf.keras.layers.ConvLSTM2D, CuDNNLSTM and CuDNNGRU (no TensorFlow needed): a NumPy
ConvLSTM2D, the CuDNN layers against LSTM / GRU(reset_after) with their two biases folded,
finite-difference gradients (float64), weights layout and model-file round trips."""
import os
import tempfile

import numpy as np
import pytest

import collflow.compat.v1 as tf

K = tf.keras
L = tf.keras.layers


def _conv(x, k, stride, padding, dilation):
    """NHWC cross-correlation in NumPy (TF's SAME / VALID padding)."""
    n, h, w, _ = x.shape
    kh, kw, _, out = k.shape
    eh, ew = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    if padding == "same":
        oh, ow = -(-h // stride[0]), -(-w // stride[1])
        ph = max((oh - 1) * stride[0] + eh - h, 0)
        pw = max((ow - 1) * stride[1] + ew - w, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    else:
        oh, ow = (h - eh) // stride[0] + 1, (w - ew) // stride[1] + 1
    y = np.zeros((n, oh, ow, out))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride[0]:i * stride[0] + eh:dilation[0], j * stride[1]:j * stride[1] + ew:dilation[1]]
            y[:, i, j] = np.tensordot(patch, k, axes=([1, 2, 3], [0, 1, 2]))
    return y


def _hs(z):
    return np.clip(0.2 * z + 0.5, 0.0, 1.0)


def _np_convlstm(x, w, filters, stride, padding, dilation, go_backwards=False):
    kernel, rec, bias = w
    f = filters
    h = c = None
    outs = []
    steps = range(x.shape[1])[::-1] if go_backwards else range(x.shape[1])
    for t in steps:
        zx = [_conv(x[:, t], kernel[..., g * f:(g + 1) * f], stride, padding, dilation) + bias[g * f:(g + 1) * f]
              for g in range(4)]
        if h is None:
            h = c = np.zeros_like(zx[0])
        z = [zx[g] + _conv(h, rec[..., g * f:(g + 1) * f], (1, 1), "same", (1, 1)) for g in range(4)]
        c = _hs(z[1]) * c + _hs(z[0]) * np.tanh(z[2])
        h = _hs(z[3]) * np.tanh(c)
        outs.append(h)
    return np.stack(outs, 1), h, c


@pytest.mark.parametrize("opts", [dict(padding="valid"), dict(padding="same"), dict(padding="valid", strides=2),
                                  dict(padding="same", dilation_rate=2, go_backwards=True)])
def test_convlstm2d_against_numpy(opts):
    x = np.random.RandomState(0).randn(2, 3, 7, 6, 2).astype(np.float32)
    with tf.Graph().as_default():
        inp = K.Input((3, 7, 6, 2))
        layer = L.ConvLSTM2D(3, (3, 2), return_sequences=True, return_state=True, bias_initializer="uniform", **opts)
        seq, h, c = layer(inp)
        assert [v.op.name.split("/")[-1] for v in layer.weights] == ["kernel", "recurrent_kernel", "bias"]
        assert layer.name.startswith("conv_lst_m2d")
        sess = K.backend.get_session()
        w = layer.get_weights()
        assert w[0].shape == (3, 2, 2, 12) and w[1].shape == (3, 2, 3, 12) and w[2].shape == (12,)
        got = sess.run([seq, h, c], {inp: x})
    s = opts.get("strides", 1)
    d = opts.get("dilation_rate", 1)
    want = _np_convlstm(x, w, 3, (s, s), opts["padding"], (d, d), opts.get("go_backwards", False))
    assert seq.shape.as_list()[2:] == list(want[0].shape[2:])
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_convlstm2d_unit_forget_bias_and_last_state():
    x = np.random.RandomState(1).randn(2, 4, 5, 5, 1).astype(np.float32)
    with tf.Graph().as_default():
        inp = K.Input((4, 5, 5, 1))
        layer = L.ConvLSTM2D(2, 3, padding="same", return_state=True)
        out = layer(inp)
        sess = K.backend.get_session()
        np.testing.assert_array_equal(sess.run(layer.cell.bias), [0, 0, 1, 1, 0, 0, 0, 0])
        w = layer.get_weights()
        got = sess.run(out, {inp: x})
    want = _np_convlstm(x, w, 2, (1, 1), "same", (1, 1))
    np.testing.assert_allclose(got[0], want[1], rtol=1e-4, atol=1e-5)


def _cudnn_run(kind, x, seed=0):
    u = 3
    with tf.Graph().as_default():
        inp = K.Input(x.shape[1:])
        if kind == "lstm":
            cu = L.CuDNNLSTM(u, return_sequences=True, return_state=True)
            ref = L.LSTM(u, recurrent_activation="sigmoid", return_sequences=True, return_state=True)
        else:
            cu = L.CuDNNGRU(u, return_sequences=True, return_state=True)
            ref = L.GRU(u, recurrent_activation="sigmoid", reset_after=True, return_sequences=True,
                        return_state=True)
        a, b = cu(inp), ref(inp)
        sess = K.backend.get_session()
        kernel, rec, bias = cu.get_weights()
        init_bias = bias.copy()
        bias = np.random.RandomState(seed).randn(*bias.shape).astype(np.float32)
        cu.set_weights([kernel, rec, bias])
        half = bias.size // 2
        ref.set_weights([kernel, rec, bias[:half] + bias[half:] if kind == "lstm" else bias.reshape(2, half)])
        return init_bias, sess.run([a, b], {inp: x}), [v.op.name for v in cu.weights]


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_cudnn_layers_are_lstm_and_gru_reset_after_with_two_biases(kind):
    x = np.random.RandomState(2).randn(2, 4, 5).astype(np.float32)
    init_bias, (a, b), names = _cudnn_run(kind, x)
    assert names == [f"cu_dnn{kind}/kernel", f"cu_dnn{kind}/recurrent_kernel", f"cu_dnn{kind}/bias"]
    if kind == "lstm":  # Keras: the ones in the recurrent half's forget gate
        np.testing.assert_array_equal(init_bias, np.r_[np.zeros(15), np.ones(3), np.zeros(6)])
    else:
        assert init_bias.shape == (18,) and not init_bias.any()
    for p, q in zip(a, b):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)


def _fd_check(build, xv, eps=1e-6, tol=1e-5):
    K.backend.set_floatx("float64")
    try:
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float64, xv.shape)
            layer = build()
            out = layer(x)
            wt = np.random.RandomState(1).randn(*out.shape.as_list())
            loss = tf.reduce_sum(out * wt)
            sess = K.backend.get_session()
            params = [x] + layer.trainable_weights
            grads = sess.run(tf.gradients(loss, params), {x: xv})
            vals = [xv] + sess.run(layer.trainable_weights)
            rng = np.random.RandomState(3)
            for p, g, v in zip(params, grads, vals):
                for _ in range(3):
                    idx = tuple(rng.randint(n) for n in v.shape)
                    numeric = []
                    for sgn in (1, -1):
                        vv = v.copy()
                        vv[idx] += sgn * eps
                        if p is x:
                            numeric.append(sess.run(loss, {x: vv}))
                        else:
                            p.load(vv, sess)
                            numeric.append(sess.run(loss, {x: xv}))
                    if p is not x:
                        p.load(v, sess)
                    nd = (numeric[0] - numeric[1]) / (2 * eps)
                    assert abs(nd - g[idx]) <= tol * max(1.0, abs(nd)), (p.name, idx, nd, g[idx])
    finally:
        K.backend.set_floatx("float32")


@pytest.mark.parametrize("which", ["convlstm", "cudnn_lstm", "cudnn_gru"])
def test_finite_difference_gradients(which):
    if which == "convlstm":
        xv = np.random.RandomState(0).randn(1, 2, 4, 3, 2)
        _fd_check(lambda: L.ConvLSTM2D(2, 2, padding="same", return_sequences=True, bias_initializer="uniform"), xv)
    else:
        xv = np.random.RandomState(0).randn(2, 3, 3)
        make = L.CuDNNLSTM if which == "cudnn_lstm" else L.CuDNNGRU
        _fd_check(lambda: make(2, bias_initializer="uniform", return_sequences=True), xv)


def test_model_file_round_trip():
    path = os.path.join(tempfile.mkdtemp(), "m.h5")
    x = np.random.RandomState(4).randn(3, 2, 5, 5, 1).astype(np.float32)
    s = np.random.RandomState(5).randn(3, 4, 2).astype(np.float32)
    with tf.Graph().as_default():
        a, b = K.Input((2, 5, 5, 1)), K.Input((4, 2))
        h = L.ConvLSTM2D(2, 3, strides=2, padding="same", recurrent_activation="sigmoid", dropout=0.1)(a)
        g = L.CuDNNGRU(3, return_sequences=True)(b)
        g = L.CuDNNLSTM(2, go_backwards=True)(g)
        model = K.Model([a, b], [L.Flatten()(h), g])
        want = model.predict([x, s])
        model.save(path)
    with tf.Graph().as_default():
        loaded = K.models.load_model(path, compile=False)
        got = loaded.predict([x, s])
        conv = [la for la in loaded.layers if isinstance(la, L.ConvLSTM2D)][0]
        assert conv.cell.strides == (2, 2) and conv.cell.dropout == pytest.approx(0.1)
    for p, q in zip(got, want):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)


def test_convlstm2d_channels_first_is_channels_last_transposed():
    x = np.random.RandomState(3).randn(2, 3, 5, 4, 2).astype(np.float32)   # [batch, time, rows, cols, ch]
    with tf.Graph().as_default():
        last = L.ConvLSTM2D(3, 2, padding="same", return_sequences=True, return_state=True)
        first = L.ConvLSTM2D(3, 2, padding="same", return_sequences=True, return_state=True,
                             data_format="channels_first")
        outs_last = last(tf.constant(x))
        outs_first = first(tf.constant(x.transpose(0, 1, 4, 2, 3)))
        assert [o.get_shape().as_list() for o in outs_first] == [[2, 3, 3, 5, 4], [2, 3, 5, 4], [2, 3, 5, 4]]
        sess = K.backend.get_session()
        first.set_weights(last.get_weights())
        a, b = sess.run([outs_last, outs_first])
    np.testing.assert_allclose(b[0], a[0].transpose(0, 1, 4, 2, 3), rtol=1e-6)
    for s_first, s_last in zip(b[1:], a[1:]):
        np.testing.assert_allclose(s_first, s_last.transpose(0, 3, 1, 2), rtol=1e-6)


def test_convlstm2d_refuses_a_bad_rank():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="ndim=5"):
            L.ConvLSTM2D(2, 3)(K.Input((3, 4, 4)))
