"""Differential tests of the recurrent layers' dropout and stateful modes against TensorFlow's
Keras (tf_keras in TF1 graph mode).  Skipped cleanly without TensorFlow.

Random streams differ between the libraries, so the dropout tests feed the same masks to both:
tf_keras's cached DropoutRNNCellMixin masks (reachable with `unroll=True` only: its scanned
graph-mode loop draws new masks at every step) and collflow's `layer._dropout_masks`.
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

B, T, D, U = 3, 5, 4, 3

# name -> (factory(tf, unroll), gates, input masks collflow draws)
_DROPOUT = {
    "lstm": (lambda tf, **kw: tf.keras.layers.LSTM(U, dropout=0.3, recurrent_dropout=0.4, return_sequences=True,
                                                   return_state=True, **kw), 4, 4),
    "lstm_impl2_dropout_only": (lambda tf, **kw: tf.keras.layers.LSTM(U, dropout=0.3, implementation=2,
                                                                      recurrent_activation="sigmoid", **kw), 4, 1),
    "lstm_impl2_falls_back": (lambda tf, **kw: tf.keras.layers.LSTM(U, dropout=0.2, recurrent_dropout=0.5,
                                                                    implementation=2, go_backwards=True, **kw), 4, 4),
    "gru": (lambda tf, **kw: tf.keras.layers.GRU(U, dropout=0.3, recurrent_dropout=0.4, reset_after=False,
                                                 return_sequences=True, **kw), 3, 3),
    "gru_reset_after": (lambda tf, **kw: tf.keras.layers.GRU(U, dropout=0.25, recurrent_dropout=0.35,
                                                             reset_after=True, recurrent_activation="sigmoid",
                                                             return_state=True, **kw), 3, 3),
    "simple_rnn": (lambda tf, **kw: tf.keras.layers.SimpleRNN(U, dropout=0.5, recurrent_dropout=0.5,
                                                              return_sequences=True, **kw), 1, 1),
}


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _masks(rate, shape, n, seed):
    r = np.random.RandomState(seed)
    return [((r.rand(*shape) >= rate) / (1.0 - rate)).astype(np.float32) for _ in range(n)]


def _dropout_run(tf, kind, x, phase, weights=None):
    make, gates, n_in = _DROPOUT[kind]
    with tf.Graph().as_default():
        inp = tf.keras.Input((T, D))
        layer = make(tf, unroll=True) if tf is tft else make(tf)
        outs = _as_list(layer(inp))
        if weights is not None:
            layer.set_weights(weights)
        sess = tf.keras.backend.get_session()
        loss = tf.reduce_sum(outs[0] * np.linspace(0.5, 1.5, U).astype(np.float32))
        grads = tf.gradients(loss, [inp] + layer.weights)
        in_masks = _masks(layer.dropout, (B, D), gates, 1)
        rec_masks = _masks(layer.recurrent_dropout, (B, U), gates, 2) if layer.recurrent_dropout else []
        feed = {inp: x, tf.keras.backend.learning_phase(): phase}
        if phase:
            if tf is tft:  # tf_keras's cached masks of this call: [batch, features] and [batch, units]
                dm = _as_list(layer.cell.get_dropout_mask_for_cell(inp[:, 0], None, count=gates))
                feed.update(zip(dm, in_masks))
                if rec_masks:
                    rm = _as_list(layer.cell.get_recurrent_dropout_mask_for_cell(outs[0], None, count=gates))
                    feed.update(zip(rm, rec_masks))
            else:
                got_in, got_rec = layer._dropout_masks
                assert len(got_in) == n_in and len(got_rec) == len(rec_masks)
                feed.update(zip(got_in, in_masks))
                feed.update(zip(got_rec, rec_masks))
        return layer.get_weights(), sess.run(outs + grads, feed)


@pytest.mark.parametrize("phase", [True, False], ids=["training", "inference"])
@pytest.mark.parametrize("kind", sorted(_DROPOUT))
def test_dropout_with_the_same_masks_matches_tensorflow_keras(kind, phase):
    x = np.random.RandomState(3).rand(B, T, D).astype(np.float32)
    w, want = _dropout_run(tft, kind, x, phase)
    _, got = _dropout_run(cft, kind, x, phase, w)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tfdiff.RTOL, atol=tfdiff.ATOL)


# -- stateful -----------------------------------------------------------------------------------
_STATEFUL = {
    "lstm": lambda tf: tf.keras.layers.LSTM(U, stateful=True, batch_input_shape=(2, T, D), return_sequences=True),
    "gru": lambda tf: tf.keras.layers.GRU(U, stateful=True, batch_input_shape=(2, T, D), reset_after=True,
                                          recurrent_activation="sigmoid"),
    "simple_rnn": lambda tf: tf.keras.layers.SimpleRNN(U, stateful=True, batch_size=2, input_shape=(T, D)),
}


def _stateful_run(tf, kind, weights=None):
    r = np.random.RandomState(11)
    x = r.rand(8, T, D).astype(np.float32)
    with tf.Graph().as_default():
        rnn = _STATEFUL[kind](tf)
        layers = [rnn] + ([tf.keras.layers.Flatten()] if rnn.return_sequences else []) + [tf.keras.layers.Dense(1)]
        m = tf.keras.Sequential(layers)
        y = r.rand(8, 1).astype(np.float32)
        m.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
        if weights is not None:
            m.set_weights(weights)
        out = {"w0": m.get_weights(), "n_weights": len(m.weights),
               "state_names": [v.name for v in rnn.states]}
        out["p1"] = m.predict(x, batch_size=2)
        out["s1"] = [tf.keras.backend.get_value(s) for s in rnn.states]
        out["p2"] = m.predict(x, batch_size=2)  # carries on from the last batch of p1
        rnn.reset_states()
        out["s0"] = [tf.keras.backend.get_value(s) for s in rnn.states]
        out["p3"] = m.predict(x, batch_size=2)  # as p1
        rnn.reset_states()
        out["hist"] = m.fit(x, y, batch_size=2, epochs=3, shuffle=False, verbose=0).history["loss"]
        out["p4"] = m.predict(x[:2], batch_size=2)  # the states fit left
        out["eval"] = m.evaluate(x, y, batch_size=2, verbose=0)
        given = [np.full((2, U), 0.1 * (i + 1), np.float32) for i in range(len(rnn.states))]
        rnn.reset_states(given)
        out["s_given"] = [tf.keras.backend.get_value(s) for s in rnn.states]
        out["p5"] = m.predict(x[:2], batch_size=2)
        out["w"] = m.get_weights()
        return out


@pytest.mark.parametrize("kind", sorted(_STATEFUL))
def test_stateful_rnn_matches_tensorflow_keras(kind):
    want = _stateful_run(tft, kind)
    got = _stateful_run(cft, kind, want["w0"])
    assert got["n_weights"] == want["n_weights"]  # the states are no weights
    assert [n.split("/")[-1] for n in got["state_names"]] == [n.split("/")[-1] for n in want["state_names"]]
    assert not np.allclose(want["p1"], want["p2"])  # the states do carry on
    np.testing.assert_allclose(want["p1"], want["p3"], rtol=1e-6, atol=1e-6)
    for k in ("p1", "p2", "p3", "p4", "p5", "s1", "s0", "s_given"):
        for a, b in zip(_as_list(got[k]), _as_list(want[k])):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=k)
    np.testing.assert_allclose(got["hist"], want["hist"], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got["eval"], want["eval"], rtol=1e-4, atol=1e-6)
    for a, b in zip(got["w"], want["w"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def _stateful_functional(tf, weights=None):
    x = np.random.RandomState(5).rand(4, T, D).astype(np.float32)
    with tf.Graph().as_default():
        inp = tf.keras.Input(batch_shape=(2, T, D))
        out, h, c = tf.keras.layers.LSTM(U, stateful=True, return_state=True)(inp)
        m = tf.keras.Model(inp, [out, h, c])
        if weights is not None:
            m.set_weights(weights)
        first = m.predict(x, batch_size=2)
        second = m.predict(x, batch_size=2)
        m.layers[-1].reset_states()
        third = m.predict(x, batch_size=2)
        return m.get_weights(), first + second + third


def test_stateful_functional_model_with_return_state_matches_tensorflow_keras():
    w, want = _stateful_functional(tft)
    _, got = _stateful_functional(cft, w)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tf", [tft, cft], ids=["tensorflow", "collflow"])
def test_stateful_without_batch_size_raises_in_both(tf):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="needs to know its batch size"):
            tf.keras.Sequential([tf.keras.layers.LSTM(U, stateful=True, input_shape=(T, D))])
        layer = tf.keras.layers.GRU(U)
        with pytest.raises(AttributeError, match="Layer must be stateful"):
            layer.reset_states()


def _saved(tf):
    m = tf.keras.Sequential([
        tf.keras.layers.LSTM(U, dropout=0.2, recurrent_dropout=0.3, return_sequences=True, stateful=True,
                             batch_input_shape=(2, T, D)),
        tf.keras.layers.GRU(U, dropout=0.1, reset_after=True, recurrent_activation="sigmoid", go_backwards=True,
                            stateful=True)])
    m.compile("sgd", "mse")
    return m, np.random.RandomState(8).rand(4, T, D).astype(np.float32)


def test_model_files_keep_dropout_and_stateful_in_either_library(tmp_path):
    for src, dst in ((cft, tft), (tft, cft)):
        path = str(tmp_path / f"{src.__name__}.h5")
        with src.Graph().as_default():
            m, x = _saved(src)
            want = m.predict(x, batch_size=2)
            m.save(path)
        with dst.Graph().as_default():
            loaded = dst.keras.models.load_model(path)
            lstm, gru = loaded.layers
            assert (lstm.dropout, lstm.recurrent_dropout, lstm.return_sequences, lstm.stateful) == (0.2, 0.3, True,
                                                                                                     True)
            assert (gru.dropout, gru.reset_after, gru.go_backwards, gru.stateful) == (0.1, True, True, True)
            np.testing.assert_allclose(loaded.predict(x, batch_size=2), want, rtol=1e-5, atol=1e-6)
