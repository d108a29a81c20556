"""tf.keras recurrent layers' dropout / recurrent_dropout and stateful mode (no TensorFlow needed):
a NumPy reference fed the same masks (outputs, and gradients by finite differences in float64),
the structure of the masks (drawn once, reused at every step, ones out of training), and the
stateful layers' states (carried over batches and calls, reset, set)."""
import warnings

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.keras.recurrent import reset_model_states

B, T, D, U = 3, 4, 5, 2


def _hard_sigmoid(z):
    return np.clip(0.2 * z + 0.5, 0.0, 1.0)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _reference(kind, x, w, in_masks, rec_masks, reset_after=False, rec_act=_hard_sigmoid):
    """Keras's cells (implementation=1) with the given masks: masks[g] multiplies the inputs /
    h before gate g's kernel columns; the same masks at every step."""
    kernel, rec, bias = w
    u = rec.shape[0]
    k = kernel.shape[1] // u
    in_masks = in_masks or [np.ones(x.shape[::2])] * k
    if len(in_masks) == 1:
        in_masks = in_masks * k
    rec_masks = rec_masks or [np.ones((x.shape[0], u))] * k
    h = np.zeros((x.shape[0], u))
    c = np.zeros_like(h)
    outs = []
    cols = [slice(g * u, (g + 1) * u) for g in range(k)]
    for t in range(x.shape[1]):
        xt = x[:, t]
        b_in = bias[0] if bias.ndim == 2 else bias
        xs = [(xt * in_masks[g]) @ kernel[:, cols[g]] + b_in[cols[g]] for g in range(k)]
        hs = [(h * rec_masks[g]) @ rec[:, cols[g]] for g in range(k)]
        if kind == "simple_rnn":
            h = np.tanh(xs[0] + hs[0])
        elif kind == "lstm":
            i, f, o = rec_act(xs[0] + hs[0]), rec_act(xs[1] + hs[1]), rec_act(xs[3] + hs[3])
            c = f * c + i * np.tanh(xs[2] + hs[2])
            h = o * np.tanh(c)
        elif reset_after:
            hs = [hs[g] + bias[1][cols[g]] for g in range(3)]
            z, r = rec_act(xs[0] + hs[0]), rec_act(xs[1] + hs[1])
            h = z * h + (1 - z) * np.tanh(xs[2] + r * hs[2])
        else:
            z, r = rec_act(xs[0] + hs[0]), rec_act(xs[1] + hs[1])
            hh = np.tanh(xs[2] + (r * (h * rec_masks[2])) @ rec[:, cols[2]])
            h = z * h + (1 - z) * hh
        outs.append(h)
    return np.stack(outs, 1)


_CASES = {
    "lstm": (lambda: tf.keras.layers.LSTM(U, dropout=0.3, recurrent_dropout=0.4, return_sequences=True), {}),
    "lstm_impl2": (lambda: tf.keras.layers.LSTM(U, dropout=0.3, implementation=2, return_sequences=True), {}),
    "gru": (lambda: tf.keras.layers.GRU(U, dropout=0.3, recurrent_dropout=0.4, return_sequences=True), {}),
    "gru_reset_after": (lambda: tf.keras.layers.GRU(U, dropout=0.2, recurrent_dropout=0.5, reset_after=True,
                                                    recurrent_activation="sigmoid", return_sequences=True),
                        {"reset_after": True, "rec_act": _sigmoid}),
    "simple_rnn": (lambda: tf.keras.layers.SimpleRNN(U, dropout=0.5, recurrent_dropout=0.5,
                                                     return_sequences=True), {}),
}


def _masks(r, rate, shape, n):
    return [(r.rand(*shape) >= rate) / (1.0 - rate) for _ in range(n)]


def _build(kind, dtype="float32"):
    make, kw = _CASES[kind]
    inp = tf.keras.Input((T, D), dtype=dtype)
    layer = make()
    out = layer(inp)
    return inp, layer, out, kw


@pytest.mark.parametrize("kind", sorted(_CASES))
def test_masked_outputs_and_gradients_match_numpy_reference(kind):
    r = np.random.RandomState(0)
    x = r.rand(B, T, D)
    with tf.Graph().as_default():
        inp, layer, out, kw = _build(kind, "float64")
        ws = [r.uniform(-0.6, 0.6, v.shape.as_list()) for v in layer.weights]
        layer.set_weights(ws)
        got_in, got_rec = layer._dropout_masks
        in_masks = _masks(r, layer.dropout, (B, D), len(got_in))
        rec_masks = _masks(r, layer.recurrent_dropout, (B, U), len(got_rec))
        coef = r.rand(B, T, U)
        loss = tf.reduce_sum(out * coef)
        grads = tf.gradients(loss, [inp] + layer.weights)
        feed = {inp: x, tf.keras.backend.learning_phase(): True}
        feed.update(zip(got_in, in_masks))
        feed.update(zip(got_rec, rec_masks))
        sess = tf.keras.backend.get_session()
        res = sess.run([out] + grads, feed)
    want = _reference(kind.replace("_impl2", "").replace("_reset_after", ""), x, ws, in_masks, rec_masks, **kw)
    np.testing.assert_allclose(res[0], want, rtol=1e-10, atol=1e-12)
    # the gradients through the masked computation, against central differences of the reference
    params = [x] + ws
    for p, g in zip(params, res[1:]):
        num = np.zeros_like(p)
        for idx in np.ndindex(p.shape):
            saved = p[idx]
            p[idx] = saved + 1e-6
            hi = np.sum(_reference(kind.split("_impl")[0].replace("_reset_after", ""), params[0], params[1:],
                                   in_masks, rec_masks, **kw) * coef)
            p[idx] = saved - 1e-6
            lo = np.sum(_reference(kind.split("_impl")[0].replace("_reset_after", ""), params[0], params[1:],
                                   in_masks, rec_masks, **kw) * coef)
            p[idx] = saved
            num[idx] = (hi - lo) / 2e-6
        np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("kind", sorted(_CASES))
def test_inference_equals_the_layer_without_dropout(kind):
    x = np.random.RandomState(1).rand(B, T, D).astype(np.float32)
    with tf.Graph().as_default():
        inp, layer, out, _ = _build(kind)
        cfg = dict(layer._init_args[1], dropout=0.0, recurrent_dropout=0.0)
        plain = type(layer)(*layer._init_args[0], **cfg)
        ref = plain(inp)
        plain.set_weights(layer.get_weights())
        sess = tf.keras.backend.get_session()
        a, b = sess.run([out, ref], {inp: x})
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
        c = sess.run(out, {inp: x, tf.keras.backend.learning_phase(): True})
        assert not np.allclose(a, c)  # training does drop


def _identity_rnn(rate, **kw):
    """A linear SimpleRNN whose outputs are its inputs times the input mask: x W with W = I."""
    inp = tf.keras.Input((T, D))
    layer = tf.keras.layers.SimpleRNN(D, activation="linear", dropout=rate, return_sequences=True, **kw)
    out = layer(inp)
    layer.set_weights([np.eye(D, dtype=np.float32), np.zeros((D, D), np.float32), np.zeros(D, np.float32)])
    return inp, layer, out


def test_one_input_mask_per_sequence_reused_at_every_step():
    with tf.Graph().as_default():
        inp, _, out = _identity_rnn(0.4)
        sess = tf.keras.backend.get_session()
        x = np.ones((200, T, D), np.float32)
        a = sess.run(out, {inp: x, tf.keras.backend.learning_phase(): True})
        b = sess.run(out, {inp: x, tf.keras.backend.learning_phase(): True})
    for t in range(1, T):
        np.testing.assert_array_equal(a[:, t], a[:, 0])  # one mask for all the steps
    assert np.all((a == 0) | np.isclose(a, 1 / 0.6, rtol=1e-6))  # kept ones scaled by 1 / (1 - rate)
    assert abs((a[:, 0] == 0).mean() - 0.4) < 0.05  # about `rate` of the entries dropped
    assert not np.array_equal(a, b)  # a new mask for each batch


def test_recurrent_mask_is_reused_at_every_step():
    # h_t = x_t + h_{t-1} * m (recurrent kernel I, input 1 at the first step only): the mask's
    # entries are 0 or s = 1/(1-rate), so h_t = s^(t) on the kept units and 0 on the dropped ones
    with tf.Graph().as_default():
        inp = tf.keras.Input((T, D))
        layer = tf.keras.layers.SimpleRNN(D, activation="linear", recurrent_dropout=0.5, return_sequences=True)
        out = layer(inp)
        layer.set_weights([np.eye(D, dtype=np.float32), np.eye(D, dtype=np.float32), np.zeros(D, np.float32)])
        x = np.zeros((50, T, D), np.float32)
        x[:, 0] = 1.0
        a = tf.keras.backend.get_session().run(out, {inp: x, tf.keras.backend.learning_phase(): True})
    kept = a[:, 1] != 0
    for t in range(1, T):
        np.testing.assert_allclose(a[:, t], np.where(kept, 2.0 ** t, 0.0), rtol=1e-6)
    assert 0 < kept.mean() < 1


def test_rate_near_one_drops_nearly_everything_and_training_arg_and_fixed_phase():
    with tf.Graph().as_default():
        inp, layer, _ = _identity_rnn(0.999)
        forced = layer(inp, training=True)  # training=True draws masks whatever the learning phase
        sess = tf.keras.backend.get_session()
        a = sess.run(forced, {inp: np.ones((20, T, D), np.float32)})
        assert (a == 0).mean() > 0.95
    with tf.Graph().as_default():
        tf.keras.backend.set_learning_phase(1)
        inp, _, out = _identity_rnn(0.5)
        a = tf.keras.backend.get_session().run(out, {inp: np.ones((20, T, D), np.float32)})
        assert 0.2 < (a == 0).mean() < 0.8


def test_rate_one_fails_and_implementation_fallback():
    with tf.Graph().as_default():
        with pytest.raises(ValueError):
            tf.keras.layers.LSTM(U, dropout=1.0)(tf.keras.Input((T, D)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        layer = tf.keras.layers.LSTM(U, recurrent_dropout=0.2, implementation=2)
    assert layer.implementation == 1 and any("implementation=2" in str(w.message) for w in caught)
    assert tf.keras.layers.LSTM(U, dropout=0.2, implementation=2).implementation == 2
    assert tf.keras.layers.GRU(U).implementation == 1  # TF1's default


def test_fit_with_dropout_trains_and_predict_is_deterministic():
    r = np.random.RandomState(2)
    x, y = r.rand(16, T, D).astype(np.float32), r.rand(16, 1).astype(np.float32)
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.GRU(4, dropout=0.2, recurrent_dropout=0.2, input_shape=(T, D)),
                                 tf.keras.layers.Dense(1)])
        m.compile("sgd", "mse")
        hist = m.fit(x, y, batch_size=4, epochs=2, verbose=0).history["loss"]
        assert np.all(np.isfinite(hist))
        np.testing.assert_array_equal(m.predict(x), m.predict(x))


# -- stateful -----------------------------------------------------------------------------------
def _stateful(make, batch=2):
    inp = tf.keras.Input(batch_shape=(batch, T, D))
    layer = make()
    return inp, layer, layer(inp)


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "SimpleRNN"])
def test_stateful_batches_continue_one_long_sequence(cls):
    x = np.random.RandomState(4).rand(2, 2 * T, D).astype(np.float32)
    with tf.Graph().as_default():
        inp, layer, out = _stateful(lambda: getattr(tf.keras.layers, cls)(U, stateful=True, return_sequences=True))
        long_in = tf.keras.Input((2 * T, D))
        plain = getattr(tf.keras.layers, cls)(U, return_sequences=True)
        long_out = plain(long_in)
        plain.set_weights(layer.get_weights())
        sess = tf.keras.backend.get_session()
        want = sess.run(long_out, {long_in: x})
        first = sess.run(out, {inp: x[:, :T]})
        second = sess.run(out, {inp: x[:, T:]})
        np.testing.assert_allclose(np.concatenate([first, second], 1), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(tf.keras.backend.get_value(layer.states[0]), want[:, -1], rtol=1e-5, atol=1e-6)
        layer.reset_states()
        assert all(not np.any(tf.keras.backend.get_value(s)) for s in layer.states)
        np.testing.assert_allclose(sess.run(out, {inp: x[:, :T]}), first, rtol=1e-6)


def test_reset_states_with_values_equals_initial_state():
    x = np.random.RandomState(5).rand(2, T, D).astype(np.float32)
    h0, c0 = np.full((2, U), 0.3, np.float32), np.full((2, U), -0.2, np.float32)
    with tf.Graph().as_default():
        inp, layer, out = _stateful(lambda: tf.keras.layers.LSTM(U, stateful=True))
        hi, ci = tf.keras.Input(batch_shape=(2, U)), tf.keras.Input(batch_shape=(2, U))
        plain = tf.keras.layers.LSTM(U)
        ref = plain(inp, initial_state=[hi, ci])
        plain.set_weights(layer.get_weights())
        sess = tf.keras.backend.get_session()
        layer.reset_states([h0, c0])
        np.testing.assert_array_equal(tf.keras.backend.get_value(layer.states[1]), c0)
        np.testing.assert_allclose(sess.run(out, {inp: x}), sess.run(ref, {inp: x, hi: h0, ci: c0}), rtol=1e-6)
        with pytest.raises(ValueError, match="expects 2 states"):
            layer.reset_states([h0])
        with pytest.raises(ValueError, match="State 0 is incompatible"):
            layer.reset_states([np.zeros((3, U)), c0])


def test_stateful_weights_updates_and_errors():
    with tf.Graph().as_default():
        layer = tf.keras.layers.GRU(U, stateful=True)
        assert layer.states == [None]
        with pytest.raises(ValueError, match="needs to know its batch size"):
            layer.reset_states()
        with pytest.raises(ValueError, match="needs to know its batch size"):
            layer(tf.keras.Input((T, D)))
        with pytest.raises(AttributeError, match="Layer must be stateful"):
            tf.keras.layers.GRU(U).reset_states()
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.LSTM(U, stateful=True, batch_input_shape=(2, T, D)),
                                 tf.keras.layers.Dense(1)])
        rnn = m.layers[0]
        assert [v.name for v in rnn.states] == ["lstm/Variable:0", "lstm/Variable_1:0"]
        assert len(m.weights) == 5 and len(m.get_weights()) == 5  # the states are no weights
        assert all(not s.trainable for s in rnn.states)
        assert len(rnn.updates) == 2 and len(m.updates) == 2
    with tf.Graph().as_default():  # batch_size= with input_shape fixes the batch too
        m = tf.keras.Sequential([tf.keras.layers.SimpleRNN(U, stateful=True, batch_size=3, input_shape=(T, D))])
        assert m.layers[0].states[0].shape.as_list() == [3, U]


def test_stateful_fit_and_predict_carry_states_and_model_reset():
    r = np.random.RandomState(6)
    x, y = r.rand(6, T, D).astype(np.float32), r.rand(6, 1).astype(np.float32)
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.GRU(U, stateful=True, batch_input_shape=(2, T, D)),
                                 tf.keras.layers.Dense(1)])
        m.compile("sgd", "mse")
        rnn = m.layers[0]
        m.fit(x, y, batch_size=2, epochs=1, shuffle=False, verbose=0)
        after_fit = tf.keras.backend.get_value(rnn.states[0])
        assert np.any(after_fit)  # fit leaves the last batch's states
        p = m.predict(x[:2], batch_size=2)
        reset_model_states(m)
        assert not np.any(tf.keras.backend.get_value(rnn.states[0]))
        p0 = m.predict(x[:2], batch_size=2)
        assert not np.allclose(p, p0)  # predict started from fit's states before the reset
        m.predict(x[:2], batch_size=2)
        m.reset_states()
        assert not np.any(tf.keras.backend.get_value(rnn.states[0]))
        # the model's fixed batch is the default batch size, as Keras takes it
        m.reset_states()
        np.testing.assert_allclose(m.predict(x[:2]), p0, rtol=1e-6)
        with pytest.raises(ValueError, match="incompatible with the specified batch size"):
            m.predict(x[:2], batch_size=1)
        with pytest.raises(ValueError, match="can be divided by the batch size"):
            m.predict(x[:3])
