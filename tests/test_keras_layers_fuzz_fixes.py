"""tf.keras layer behaviours the randomised comparison with tf_keras
(tests/tf1/test_vs_tensorflow_keras_layers_fuzz.py) found wrong, checked by hand against the
Keras rules with NumPy: an explicit mask= to a recurrent layer, Bidirectional's masks, initial
states and zeroed masked outputs, the static batch of a recurrent layer's last output and states,
GaussianNoise(stddev), Flatten(channels_first), Reshape with its own -1, channels_first in the
2-D ZeroPadding/Cropping/UpSampling/DepthwiseConv2D layers and the global poolings,
DepthwiseConv2D(dilation_rate), Conv2DTranspose(output_padding), and padding="causal" in
Conv1D/SeparableConv1D/tf.layers.conv1d."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

pytestmark = pytest.mark.timeout(120)
L = tf.keras.layers


def _run(build, feeds=()):
    """Builds in a fresh graph, initialises the variables, runs build's fetches."""
    with tf.Graph().as_default():
        fetches, phs, setup = build()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            if setup:
                setup(s)
            return s.run(fetches, dict(zip(phs, feeds)))


def _simple_rnn_np(x, m, w, u, b, h0, backwards=False, zero_masked=False):
    """Keras's SimpleRNN with a step mask: a masked step keeps the state and repeats the previous
    output (zeros with zero_output_for_mask); go_backwards reverses inputs and mask alike."""
    if backwards:
        x, m = x[:, ::-1], m[:, ::-1]
    h, prev, outs = h0.copy(), np.zeros_like(h0), []
    for t in range(x.shape[1]):
        new = np.tanh(x[:, t] @ w + h @ u + b)
        keep = m[:, t:t + 1]
        h = np.where(keep, new, h)
        prev = np.where(keep, new, 0.0 if zero_masked else prev)
        outs.append(prev)
    return np.stack(outs, 1), h


X = np.random.default_rng(0).uniform(-1, 1, (2, 4, 3)).astype(np.float32)
MASK = np.array([[False, True, True, False], [True, False, True, True]])
W = np.random.default_rng(1).uniform(-0.5, 0.5, (3, 2)).astype(np.float32)
U = np.random.default_rng(2).uniform(-0.5, 0.5, (2, 2)).astype(np.float32)
B = np.array([0.1, -0.2], np.float32)


@pytest.mark.parametrize("backwards", [False, True])
def test_explicit_mask_to_a_recurrent_layer_is_used(backwards):
    # TF: layer(x, mask=m) runs with m (collflow dropped it and ran unmasked)
    def build():
        x, m = tf.placeholder(tf.float32, X.shape), tf.placeholder(tf.bool, MASK.shape)
        la = L.SimpleRNN(2, return_sequences=True, return_state=True, go_backwards=backwards)
        out = la(x, mask=m)
        return out, [x, m], lambda s: la.set_weights([W, U, B])
    seq, last = _run(build, [X, MASK])
    want_seq, want_last = _simple_rnn_np(X, MASK, W, U, B, np.zeros((2, 2), np.float32), backwards)
    np.testing.assert_allclose(seq, want_seq, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(last, want_last, rtol=1e-5, atol=1e-6)


def test_bidirectional_explicit_mask_zero_outputs_and_initial_states():
    # TF: Bidirectional passes mask= to both directions, forces zero_output_for_mask when it
    # returns sequences (a masked step's output is 0, not the previous one), and splits
    # initial_state into the forward then the backward layer's states
    h0f = np.array([[0.3, -0.1], [0.0, 0.2]], np.float32)
    h0b = np.array([[-0.4, 0.5], [0.1, 0.1]], np.float32)

    def build():
        x, m = tf.placeholder(tf.float32, X.shape), tf.placeholder(tf.bool, MASK.shape)
        la = L.Bidirectional(L.SimpleRNN(2, return_sequences=True), merge_mode=None)
        out = la(x, mask=m, initial_state=[tf.constant(h0f), tf.constant(h0b)])
        assert [o.shape.as_list() for o in out] == [[2, 4, 2], [2, 4, 2]]
        return out, [x, m], lambda s: la.set_weights([W, U, B, W * 0.5, U, -B])
    fwd, bwd = _run(build, [X, MASK])
    want_f, _ = _simple_rnn_np(X, MASK, W, U, B, h0f, zero_masked=True)
    want_b, _ = _simple_rnn_np(X, MASK, W * 0.5, U, -B, h0b, backwards=True, zero_masked=True)
    np.testing.assert_allclose(fwd, want_f, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bwd, want_b[:, ::-1], rtol=1e-5, atol=1e-6)
    assert np.all(fwd[~MASK] == 0) and np.all(bwd[~MASK] == 0)


@pytest.mark.parametrize("kind", ["SimpleRNN", "LSTM", "GRU"])
def test_recurrent_last_output_and_states_keep_the_static_batch(kind):
    # TF: a static batch of 3 stays in the last output's and the states' static shapes
    with tf.Graph().as_default():
        outs = getattr(L, kind)(4, return_state=True)(tf.placeholder(tf.float32, [3, 5, 2]))
        assert all(o.shape.as_list() == [3, 4] for o in outs)


def test_gaussian_noise_takes_stddev():
    # Keras: GaussianNoise(stddev): x + N(0, stddev) in training, the identity otherwise
    x = np.zeros((400, 50), np.float32)

    def build():
        p = tf.placeholder(tf.float32, x.shape)
        la = L.GaussianNoise(stddev=0.25)
        assert la.stddev == 0.25
        return [la(p, training=True), la(p, training=False)], [p], None
    noisy, same = _run(build, [x])
    assert abs(noisy.std() - 0.25) < 0.01 and abs(noisy.mean()) < 0.01
    np.testing.assert_array_equal(same, x)


def test_flatten_channels_first_flattens_in_channels_last_order():
    # Keras: Flatten(data_format="channels_first") moves the channel axis last, then flattens
    x = np.arange(2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 3, 2, 2)

    def build():
        p = tf.placeholder(tf.float32, x.shape)
        return [L.Flatten(data_format="channels_first")(p), tf.layers.Flatten(data_format="channels_first")(p)], \
            [p], None
    for got in _run(build, [x]):
        np.testing.assert_array_equal(got, np.transpose(x, (0, 2, 3, 1)).reshape(2, -1))


def test_reshape_target_with_its_own_minus_one():
    # Keras reshapes to (batch,) + target_shape: the target may hold one -1 of its own
    x = np.arange(2 * 24, dtype=np.float32).reshape(2, 2, 3, 4)

    def build():
        p = tf.placeholder(tf.float32, x.shape)
        out = L.Reshape((2, -1, 3))(p)
        assert out.shape.as_list() == [2, 2, 4, 3]
        dyn = L.Reshape((-1, 6))(tf.placeholder_with_default(p, [None, 2, 3, 4]))
        return [out, dyn], [p], None
    out, dyn = _run(build, [x])
    np.testing.assert_array_equal(out, x.reshape(2, 2, 4, 3))
    np.testing.assert_array_equal(dyn, x.reshape(2, 4, 6))


def test_2d_padding_cropping_upsampling_channels_first():
    # Keras: with channels_first the spatial axes are 2 and 3 (collflow padded axes 1 and 2)
    x = np.random.default_rng(3).uniform(-1, 1, (1, 2, 4, 5)).astype(np.float32)

    def build():
        p = tf.placeholder(tf.float32, x.shape)
        return [L.ZeroPadding2D(((1, 0), (2, 1)), data_format="channels_first")(p),
                L.Cropping2D(((1, 2), (0, 3)), data_format="channels_first")(p),
                L.UpSampling2D((2, 3), data_format="channels_first")(p)], [p], None
    padded, cropped, up = _run(build, [x])
    np.testing.assert_array_equal(padded, np.pad(x, [(0, 0), (0, 0), (1, 0), (2, 1)]))
    np.testing.assert_array_equal(cropped, x[:, :, 1:2, 0:2])
    np.testing.assert_array_equal(up, x.repeat(2, 2).repeat(3, 3))


def _depthwise_np(x, k, rate, stride=1):
    """A 'valid' NHWC depthwise convolution: out[..., c * m + j] = sum x * k[..., c, j]."""
    kh, kw, c, mult = k.shape
    eh, ew = (kh - 1) * rate[0] + 1, (kw - 1) * rate[1] + 1
    oh, ow = (x.shape[1] - eh) // stride + 1, (x.shape[2] - ew) // stride + 1
    out = np.zeros((x.shape[0], oh, ow, c * mult), np.float32)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + eh:rate[0], j * stride:j * stride + ew:rate[1], :]
            out[:, i, j] = np.einsum("nhwc,hwcm->ncm", patch, k).reshape(x.shape[0], -1)
    return out


def test_depthwise_conv2d_dilation_rate_and_channels_first():
    # Keras's DepthwiseConv2D(dilation_rate=...) dilates the kernel; channels_first runs over
    # axes 2 and 3 with the channels on axis 1
    x = np.random.default_rng(4).uniform(-1, 1, (2, 7, 6, 3)).astype(np.float32)
    k = np.random.default_rng(5).uniform(-1, 1, (2, 3, 3, 2)).astype(np.float32)
    b = np.arange(6, dtype=np.float32)

    def build():
        p = tf.placeholder(tf.float32, x.shape)
        dil = L.DepthwiseConv2D((2, 3), dilation_rate=(2, 1), depth_multiplier=2)
        first = L.DepthwiseConv2D((2, 3), strides=2, depth_multiplier=2, data_format="channels_first")
        outs = [dil(p), first(tf.transpose(p, [0, 3, 1, 2]))]

        def setup(s):
            dil.set_weights([k, b])
            first.set_weights([k, b])
        return outs, [p], setup
    dilated, first = _run(build, [x])
    np.testing.assert_allclose(dilated, _depthwise_np(x, k, (2, 1)) + b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(first, np.transpose(_depthwise_np(x, k, (1, 1), 2) + b, (0, 3, 1, 2)),
                               rtol=1e-5, atol=1e-5)


def test_conv2d_transpose_output_padding():
    # Keras: out = (n - 1) * stride + kernel - 2 * pad + output_padding (pad = kernel // 2 for
    # "same"); each input pixel scatters kernel * value from i * stride, and the output starts
    # after the forward "same" convolution's top padding, (2 * pad - output_padding) // 2
    x = np.random.default_rng(6).uniform(-1, 1, (1, 3, 2, 1)).astype(np.float32)
    k = np.random.default_rng(7).uniform(-1, 1, (3, 3, 1, 1)).astype(np.float32)  # [kh, kw, out, in]

    def want(pad, op):
        oh, ow = (3 - 1) * 2 + 3 - 2 * pad + op[0], (2 - 1) * 2 + 3 - 2 * pad + op[1]
        full = np.zeros((oh + 2 * pad + 3, ow + 2 * pad + 3), np.float32)
        for i in range(3):
            for j in range(2):
                full[i * 2:i * 2 + 3, j * 2:j * 2 + 3] += x[0, i, j, 0] * k[:, :, 0, 0]
        top, left = max(2 * pad - op[0], 0) // 2, max(2 * pad - op[1], 0) // 2
        return full[top:top + oh, left:left + ow]

    for padding, pad, op in (("valid", 0, (1, 0)), ("same", 1, (1, 1))):
        def build():
            p = tf.placeholder(tf.float32, x.shape)
            la = L.Conv2DTranspose(1, 3, strides=2, padding=padding, output_padding=op, use_bias=False)
            out = la(p)
            return out, [p], lambda s: la.set_weights([k])
        got = _run(build, [x])
        np.testing.assert_allclose(got[0, :, :, 0], want(pad, op), rtol=1e-5, atol=1e-6)


def test_causal_padding_of_the_1d_convolutions():
    # Keras: padding="causal" left-pads by dilation * (kernel - 1), then a "valid" convolution:
    # out[t] = sum_i x[t - dilation * (kernel - 1 - i)] * k[i] (zeros before the start)
    x = np.random.default_rng(8).uniform(-1, 1, (1, 6, 1)).astype(np.float32)
    k = np.array([0.5, -1.0, 2.0], np.float32)
    xp = np.concatenate([np.zeros(4, np.float32), x[0, :, 0]])
    want = np.array([sum(xp[t + 2 * i] * k[i] for i in range(3)) for t in range(6)], np.float32)

    def build():
        p = tf.placeholder(tf.float32, x.shape)
        conv = L.Conv1D(1, 3, padding="causal", dilation_rate=2, use_bias=False)
        sep = L.SeparableConv1D(1, 3, padding="causal", dilation_rate=2, use_bias=False)
        outs = [conv(p), sep(p), tf.layers.conv1d(p, 1, 3, padding="causal", dilation_rate=2, use_bias=False,
                                                  kernel_initializer=tf.constant_initializer(k), name="tl")]

        def setup(s):
            conv.set_weights([k.reshape(3, 1, 1)])
            sep.set_weights([k.reshape(3, 1, 1), np.ones((1, 1, 1), np.float32)])
        return outs, [p], setup
    for got in _run(build, [x]):
        np.testing.assert_allclose(got[0, :, 0], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_global_poolings_channels_first(n):
    # Keras: the global poolings reduce axes 2.. with channels_first (1..-1 with channels_last)
    x = np.random.default_rng(9).uniform(-1, 1, (2, 3) + (4, 2, 3)[:n]).astype(np.float32)

    def build():
        p = tf.placeholder(tf.float32, x.shape)
        avg = getattr(L, f"GlobalAveragePooling{n}D")(data_format="channels_first")(p)
        mx = getattr(L, f"GlobalMaxPooling{n}D")(data_format="channels_first")(p)
        last = getattr(L, f"GlobalAveragePooling{n}D")()(p)
        assert avg.shape.as_list() == mx.shape.as_list() == [2, 3]
        return [avg, mx, last], [p], None
    avg, mx, last = _run(build, [x])
    axes = tuple(range(2, 2 + n))
    np.testing.assert_allclose(avg, x.mean(axes), rtol=1e-6)
    np.testing.assert_array_equal(mx, x.max(axes))
    np.testing.assert_allclose(last, x.mean(tuple(range(1, 1 + n))), rtol=1e-6)
