"""tf.keras.layers.RNN and the cells (SimpleRNNCell, LSTMCell, GRUCell, StackedRNNCells, user
cells), no TensorFlow needed: NumPy step-by-step references, RNN(cell) against the recurrent
layers with the same weights, masks / initial states / constants / stateful / nested states,
finite-difference gradients (float64) and config / model-file round trips."""
import json
import os
import tempfile

import numpy as np
import pytest

import collflow.compat.v1 as tf

K = tf.keras
L = tf.keras.layers
B, T, D = 3, 4, 5


def _hs(z):
    return np.clip(0.2 * z + 0.5, 0.0, 1.0)


def _np_cell(kind, x, states, w, reset_after=False):
    """One Keras step in NumPy: (output, new_states)."""
    kernel, rec, bias = w
    if kind == "simple":
        h = np.tanh(x @ kernel + states[0] @ rec + bias)
        return h, [h]
    if kind == "lstm":
        h, c = states
        z = x @ kernel + h @ rec + bias
        i, f, cc, o = np.split(z, 4, axis=1)
        c = _hs(f) * c + _hs(i) * np.tanh(cc)
        h = _hs(o) * np.tanh(c)
        return h, [h, c]
    h = states[0]
    u = h.shape[1]
    b_in, b_rec = (bias[0], bias[1]) if reset_after else (bias, np.zeros_like(bias))
    xz = x @ kernel + b_in
    if reset_after:
        inner = h @ rec + b_rec
        z, r = _hs(xz[:, :u] + inner[:, :u]), _hs(xz[:, u:2 * u] + inner[:, u:2 * u])
        hh = np.tanh(xz[:, 2 * u:] + r * inner[:, 2 * u:])
    else:
        z, r = _hs(xz[:, :u] + h @ rec[:, :u]), _hs(xz[:, u:2 * u] + h @ rec[:, u:2 * u])
        hh = np.tanh(xz[:, 2 * u:] + (r * h) @ rec[:, 2 * u:])
    h = z * h + (1 - z) * hh
    return h, [h]


def _np_rnn(kind, x, w, states, mask=None, go_backwards=False, **kw):
    outs, out = [], np.zeros_like(states[0])
    steps = range(x.shape[1])[::-1] if go_backwards else range(x.shape[1])
    for t in steps:
        o, new = _np_cell(kind, x[:, t], states, w, **kw)
        if mask is not None:
            m = mask[:, t][:, None]
            new = [np.where(m, a, b) for a, b in zip(new, states)]
            o = np.where(m, o, out)
        states, out = new, o
        outs.append(out)
    return np.stack(outs, 1), states


_CELLS = {"simple": (lambda u, **k: L.SimpleRNNCell(u, **k), lambda u, **k: L.SimpleRNN(u, **k), 1),
          "lstm": (lambda u, **k: L.LSTMCell(u, **k), lambda u, **k: L.LSTM(u, **k), 2),
          "gru": (lambda u, **k: L.GRUCell(u, **k), lambda u, **k: L.GRU(u, **k), 1)}


def _rand(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


@pytest.mark.parametrize("kind", ["simple", "lstm", "gru", "gru_reset_after"])
def test_cell_step_against_numpy(kind):
    base = kind.split("_")[0]
    kw = {"reset_after": True} if kind == "gru_reset_after" else {}
    u = 3
    with tf.Graph().as_default():
        cell = _CELLS[base][0](u, **kw)
        x = tf.placeholder(tf.float32, [B, D])
        states = [tf.placeholder(tf.float32, [B, u]) for _ in range(_CELLS[base][2])]
        out, new = cell(x, states)
        assert [v.op.name for v in cell.weights] == [f"{cell.name}/kernel", f"{cell.name}/recurrent_kernel",
                                                     f"{cell.name}/bias"]
        assert cell.state_size == ([u, u] if base == "lstm" else u) and cell.output_size == u
        sess = K.backend.get_session()
        w = [_rand(*v.shape.as_list(), seed=i + 3) * 0.5 for i, v in enumerate(cell.weights)]
        cell.set_weights(w)
        xv = _rand(B, D, seed=1)
        sv = [_rand(B, u, seed=2 + i) for i in range(len(states))]
        got_out, got_new = sess.run([out, new], {x: xv, **dict(zip(states, sv))})
    want_out, want_new = _np_cell(base, xv, sv, w, **kw)
    np.testing.assert_allclose(got_out, want_out, rtol=1e-5, atol=1e-5)
    for a, b in zip(got_new, want_new):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_cell_defaults_and_initial_state():
    lstm = L.LSTMCell(4)
    assert lstm.recurrent_activation is tf.keras.activations.get("hard_sigmoid")
    assert lstm.get_config()["unit_forget_bias"] is True and lstm.get_config()["implementation"] == 1
    gru = L.GRUCell(2)
    assert gru.get_config()["reset_after"] is False
    with tf.Graph().as_default():
        z = lstm.get_initial_state(batch_size=3, dtype=tf.float32)
        assert len(z) == 2 and z[0].shape.as_list() == [3, 4]
        assert gru.get_initial_state(batch_size=2, dtype=tf.float32).shape.as_list() == [2, 2]
        x = tf.zeros([2, 3])
        lstm(x, z[:1] * 0 + [tf.zeros([2, 4])] * 2)
        bias = K.backend.get_value(lstm.bias)
        np.testing.assert_array_equal(bias, np.r_[np.zeros(4), np.ones(4), np.zeros(8)])


@pytest.mark.parametrize("kind", ["simple", "lstm", "gru"])
@pytest.mark.parametrize("opts", [{}, {"go_backwards": True}, {"mask": True}, {"initial_state": True}])
def test_rnn_of_cell_equals_layer_and_numpy(kind, opts):
    u = 3
    make_cell, make_layer, n_states = _CELLS[kind]
    xv = _rand(B, T, D, seed=5)
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], bool)
    if opts.get("mask"):
        xv = xv * mask[:, :, None]
    with tf.Graph().as_default():
        inp = K.Input((T, D))
        x = L.Masking()(inp) if opts.get("mask") else inp
        gb = opts.get("go_backwards", False)
        rnn = L.RNN(make_cell(u), return_sequences=True, return_state=True, go_backwards=gb)
        layer = make_layer(u, return_sequences=True, return_state=True, go_backwards=gb)
        init = [tf.constant(_rand(B, u, seed=9 + i)) for i in range(n_states)] if opts.get("initial_state") \
            else None
        a, b = rnn(x, initial_state=init), layer(x, initial_state=init)
        assert [v.op.name for v in rnn.weights] == ["rnn/kernel", "rnn/recurrent_kernel", "rnn/bias"]
        sess = K.backend.get_session()
        w = layer.get_weights()
        rnn.set_weights(w)
        ra, rb = sess.run([a, b], {inp: xv})
    assert len(ra) == 1 + n_states
    for p, q in zip(ra, rb):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)
    s0 = [_rand(B, u, seed=9 + i) for i in range(n_states)] if init else [np.zeros((B, u), np.float32)] * n_states
    seq, last = _np_rnn(kind, xv, w, s0, mask=mask if opts.get("mask") else None, go_backwards=gb)
    np.testing.assert_allclose(ra[0], seq, rtol=1e-5, atol=1e-5)
    for p, q in zip(ra[1:], last):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-5)


class MinimalRNNCell(L.Layer):
    """The Keras custom-cell tutorial's cell."""

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
        h = K.backend.dot(inputs, self.kernel)
        output = h + K.backend.dot(prev_output, self.recurrent_kernel)
        return output, [output]

    def get_config(self):
        return dict(super().get_config(), units=self.units)


class NestedCell(L.Layer):
    """Two states of different ranks ([u] and [2, u]) and a constant added to every step."""

    def __init__(self, units, **kwargs):
        self.units = units
        self.state_size = [units, tf.TensorShape([2, units])]
        self.output_size = units
        super().__init__(**kwargs)

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[0][-1], self.units), name="kernel")

    def call(self, inputs, states, constants=None):
        a, b = states
        h = tf.tanh(tf.matmul(inputs, self.kernel) + a + constants[0])
        return h, [h, b + tf.expand_dims(h, 1)]


def test_custom_cell_numpy_mask_initial_state():
    xv = _rand(B, T, D, seed=2)
    mask = np.array([[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 0]], bool)
    xv = xv * mask[:, :, None]
    with tf.Graph().as_default():
        inp = K.Input((T, D))
        layer = L.RNN(MinimalRNNCell(2), return_sequences=True, return_state=True)
        s0 = tf.constant(_rand(B, 2, seed=4))
        out = layer(L.Masking()(inp), initial_state=s0)
        assert [v.op.name for v in layer.weights] == ["rnn/kernel", "rnn/recurrent_kernel"]
        sess = K.backend.get_session()
        k, r = layer.get_weights()
        got = sess.run(out, {inp: xv})
    h, prev, outs = _rand(B, 2, seed=4), _rand(B, 2, seed=4) * 0, []
    for t in range(T):
        new = xv[:, t] @ k + h @ r
        m = mask[:, t][:, None]
        h, prev = np.where(m, new, h), np.where(m, new, prev)
        outs.append(prev)
    np.testing.assert_allclose(got[0], np.stack(outs, 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], h, rtol=1e-5, atol=1e-6)


def test_nested_state_size_and_constants_and_time_major():
    xv = _rand(T, B, D, seed=3)
    cv = _rand(B, 2, seed=8)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [T, B, D])
        c = tf.placeholder(tf.float32, [B, 2])
        layer = L.RNN(NestedCell(2), return_sequences=True, return_state=True, time_major=True)
        seq, a, b = layer(x, constants=c)
        assert seq.shape.as_list() == [T, B, 2] and b.shape.as_list() == [B, 2, 2]
        sess = K.backend.get_session()
        (k,) = layer.get_weights()
        got = sess.run([seq, a, b], {x: xv, c: cv})
    ha, hb, outs = np.zeros((B, 2)), np.zeros((B, 2, 2)), []
    for t in range(T):
        ha = np.tanh(xv[t] @ k + ha + cv)
        hb = hb + ha[:, None]
        outs.append(ha)
    np.testing.assert_allclose(got[0], np.stack(outs), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[2], hb, rtol=1e-5, atol=1e-5)


def test_zero_output_for_mask():
    xv = _rand(B, T, D)
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 1], [1, 0, 0, 0]], bool)
    with tf.Graph().as_default():
        inp = K.Input((T, D))
        m = L.Masking()(inp)
        out = L.RNN(L.SimpleRNNCell(2), return_sequences=True, zero_output_for_mask=True)(m)
        got = K.backend.get_session().run(out, {inp: xv * mask[:, :, None]})
    assert np.all(got[~mask] == 0) and np.all(got[mask] != 0)


def test_stacked_cells_equal_two_layers():
    xv = _rand(B, T, D, seed=6)
    with tf.Graph().as_default():
        inp = K.Input((T, D))
        stacked = L.RNN([L.LSTMCell(3), L.GRUCell(2)], return_sequences=True, return_state=True)
        l1, l2 = L.LSTM(3, return_sequences=True), L.GRU(2, return_sequences=True, return_state=True)
        a = stacked(inp)
        b = l2(l1(inp))
        assert isinstance(stacked.cell, L.StackedRNNCells)
        assert stacked.cell.state_size == (3, 3, 2)
        assert [v.op.name for v in stacked.weights][::3] == ["rnn/lstm_cell/kernel", "rnn/gru_cell/kernel"]
        stacked.set_weights(l1.get_weights() + l2.get_weights())
        sess = K.backend.get_session()
        ra, rb = sess.run([a, b], {inp: xv})
    assert len(ra) == 4  # output, then the states flat (TF 1.15): h1, c1, h2
    np.testing.assert_allclose(ra[0], rb[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ra[3], rb[1], rtol=1e-5, atol=1e-6)


def _fd_check(build, xv, eps=1e-6, tol=1e-5):
    """Finite differences in float64 of sum(out * w) w.r.t. the input and every weight."""
    K.backend.set_floatx("float64")
    try:
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float64, xv.shape)
            layer = build()
            out = layer(x)
            out = out[0] if isinstance(out, list) else out
            wt = np.random.RandomState(1).randn(*out.shape.as_list())
            loss = tf.reduce_sum(out * wt)
            sess = K.backend.get_session()
            params = [x] + layer.trainable_weights
            grads = sess.run(tf.gradients(loss, params), {x: xv})
            vals = [xv] + sess.run(layer.trainable_weights)
            rng = np.random.RandomState(3)
            for p, g, v in zip(params, grads, vals):
                for _ in range(4):
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


@pytest.mark.parametrize("which", ["simple", "lstm", "gru", "gru_reset_after", "custom", "stacked"])
def test_finite_difference_gradients(which):
    xv = np.random.RandomState(0).randn(2, 3, 3)
    builds = {
        "simple": lambda: L.RNN(L.SimpleRNNCell(2), return_sequences=True),
        "lstm": lambda: L.RNN(L.LSTMCell(2, bias_initializer="uniform")),
        "gru": lambda: L.RNN(L.GRUCell(2, bias_initializer="uniform"), go_backwards=True),
        "gru_reset_after": lambda: L.RNN(L.GRUCell(2, reset_after=True, bias_initializer="uniform")),
        "custom": lambda: L.RNN(MinimalRNNCell(2), return_sequences=True),
        "stacked": lambda: L.RNN([L.LSTMCell(2), L.SimpleRNNCell(2)], return_sequences=True),
    }
    _fd_check(builds[which], xv)


def test_recurrent_dropout_masks_held_for_the_whole_sequence():
    xv = _rand(B, T, D, seed=1)
    with tf.Graph().as_default():
        inp = K.Input((T, D))
        cell = L.LSTMCell(3, dropout=0.4, recurrent_dropout=0.3)
        out = L.RNN(cell, return_sequences=True)(inp)
        in_masks, rec_masks = cell._dropout_masks
        assert len(in_masks) == 4 and len(rec_masks) == 4
        sess = K.backend.get_session()
        w = sess.run(cell.weights)
        got, im, rm = sess.run([out, in_masks, rec_masks], {inp: xv, K.backend.learning_phase(): True})
        plain = sess.run(out, {inp: xv})
    kernel, rec, bias = w
    u = 3
    h, c, outs = np.zeros((B, u)), np.zeros((B, u)), []
    for t in range(T):
        z = [(xv[:, t] * im[g]) @ kernel[:, g * u:(g + 1) * u] + bias[g * u:(g + 1) * u]
             + (h * rm[g]) @ rec[:, g * u:(g + 1) * u] for g in range(4)]
        c = _hs(z[1]) * c + _hs(z[0]) * np.tanh(z[2])
        h = _hs(z[3]) * np.tanh(c)
        outs.append(h)
    np.testing.assert_allclose(got, np.stack(outs, 1), rtol=1e-5, atol=1e-5)
    seq, _ = _np_rnn("lstm", xv, w, [np.zeros((B, u))] * 2)
    np.testing.assert_allclose(plain, seq, rtol=1e-5, atol=1e-5)


def test_stateful_rnn_of_cell():
    xv = _rand(2, T, D, seed=7)
    with tf.Graph().as_default():
        layer = L.RNN(L.LSTMCell(3), stateful=True, return_state=True, batch_input_shape=(2, T, D))
        x = tf.placeholder(tf.float32, [2, T, D])
        out = layer(x)
        assert len(layer.states) == 2 and layer.weights == layer.trainable_weights
        sess = K.backend.get_session()
        w = layer.get_weights()
        first = sess.run(out, {x: xv})
        second = sess.run(out, {x: xv})
        _, s1 = _np_rnn("lstm", xv, w, [np.zeros((2, 3))] * 2)
        _, s2 = _np_rnn("lstm", xv, w, s1)
        np.testing.assert_allclose(first[1], s1[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(second[2], s2[1], rtol=1e-5, atol=1e-5)
        layer.reset_states()
        np.testing.assert_allclose(sess.run(out, {x: xv})[1], s1[0], rtol=1e-5, atol=1e-5)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="batch size"):
            L.RNN(L.SimpleRNNCell(2), stateful=True)(K.Input((T, D)))


def test_errors():
    with pytest.raises(ValueError, match="state_size"):
        L.RNN(L.Layer())
    with pytest.raises(ValueError, match="call"):
        L.RNN(object())


def test_config_and_model_file_round_trip():
    xv = _rand(4, T, D, seed=11)
    yv = _rand(4, 2, seed=12)
    path = os.path.join(tempfile.mkdtemp(), "m.h5")
    custom = {"MinimalRNNCell": MinimalRNNCell}
    with tf.Graph().as_default():
        inp = K.Input((T, D))
        h = L.RNN([L.LSTMCell(3, dropout=0.1), L.GRUCell(3, reset_after=True)], return_sequences=True)(
            L.Masking()(inp))
        h = L.RNN(L.SimpleRNNCell(3, activation="relu"), return_sequences=True, go_backwards=True)(h)
        out = L.RNN(MinimalRNNCell(2))(h)
        model = K.Model(inp, out)
        model.compile("sgd", "mse")
        model.fit(xv, yv, epochs=1, verbose=0)
        want = model.predict(xv)
        js = model.to_json()
        model.save(path)
    cells = [la["config"]["cell"]["class_name"] for la in json.loads(js)["config"]["layers"]
             if la["class_name"] == "RNN"]
    assert cells == ["StackedRNNCells", "SimpleRNNCell", "MinimalRNNCell"]
    with tf.Graph().as_default():
        loaded = K.models.load_model(path, custom_objects=custom, compile=False)
        np.testing.assert_allclose(loaded.predict(xv), want, rtol=1e-5, atol=1e-6)
        kinds = [type(la.cell).__name__ for la in loaded.layers if isinstance(la, L.RNN)]
        assert kinds == ["StackedRNNCells", "SimpleRNNCell", "MinimalRNNCell"]
        assert loaded.layers[2].cell.cells[0].dropout == pytest.approx(0.1)
        assert loaded.layers[2].cell.cells[1].reset_after is True
    with tf.Graph().as_default():
        again = K.models.model_from_json(js, custom_objects=custom)
        assert again.layers[-1].cell.units == 2


def test_cell_get_config_from_config():
    cell = L.GRUCell(4, recurrent_activation="sigmoid", reset_after=True, dropout=0.2,
                     kernel_initializer="he_normal")
    cfg = cell.get_config()
    assert cfg["units"] == 4 and cfg["recurrent_activation"] == "sigmoid" and cfg["reset_after"] is True
    assert cfg["kernel_initializer"]["class_name"] == "HeNormal"
    cfg.pop("name")
    again = L.GRUCell.from_config(cfg)
    assert again.reset_after and again.dropout == pytest.approx(0.2)
    stack = L.StackedRNNCells([L.LSTMCell(2), L.SimpleRNNCell(3)])
    back = L.StackedRNNCells.from_config(stack.get_config())
    assert [type(c).__name__ for c in back.cells] == ["LSTMCell", "SimpleRNNCell"]
    assert back.state_size == (2, 2, 3) and back.output_size == 3


def test_bidirectional_rnn_of_cell_equals_bidirectional_layer():
    xv = _rand(B, T, D, seed=13)
    with tf.Graph().as_default():
        inp = K.Input((T, D))
        a = L.Bidirectional(L.RNN(L.GRUCell(3), return_sequences=True))
        b = L.Bidirectional(L.GRU(3, return_sequences=True))
        oa, ob = a(inp), b(inp)
        assert len(a.weights) == 6 and len({id(w) for w in a.weights}) == 6  # the backward cell's own weights
        a.set_weights(b.get_weights())
        ra, rb = K.backend.get_session().run([oa, ob], {inp: xv})
    np.testing.assert_allclose(ra, rb, rtol=1e-5, atol=1e-6)


def test_custom_cell_model_learns():
    r = np.random.RandomState(0)
    xv = r.randn(32, T, D).astype(np.float32)
    yv = xv.sum(axis=(1, 2))[:, None] * 0.1
    with tf.Graph().as_default():
        model = K.Sequential([L.RNN(MinimalRNNCell(4), input_shape=(T, D)), L.Dense(1)])
        model.compile(K.optimizers.Adam(0.02), "mse")
        hist = model.fit(xv, yv, epochs=15, batch_size=8, verbose=0).history["loss"]
    assert hist[-1] < 0.5 * hist[0]
