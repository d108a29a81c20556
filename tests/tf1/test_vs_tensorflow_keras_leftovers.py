"""Differential tests against tf_keras in TF1 graph mode for the Keras leftovers: a
several-output model's per-output validation losses (fit's validation samples np.random-shuffled,
each output's loss a mean of the batch values), stateful `Bidirectional`, `summary(expand_nested=,
layer_range=)`, the names of the ops `model(x)` re-creates, and a mask into a layer that does not
support masking (a deliberate difference: TF 1.15's documented TypeError).  Skipped cleanly
without TensorFlow.
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


# -- 1. per-output validation losses ---------------------------------------------------------------

def _three_outputs(tf, weights, fit_kw, loss_weights):
    r = np.random.RandomState(4)
    x = r.rand(47, 6).astype(np.float32)
    y = {"cls": (x[:, 0] > x[:, 1]).astype(np.int64), "reg": x[:, 2:4].sum(1, keepdims=True),
         "bin": (x[:, 4] > 0.5).astype(np.float32)[:, None]}
    val = (x[:23] + 0.1, {k: v[:23] for k, v in y.items()})
    np.random.seed(17)  # both libraries shuffle (training and) validation samples with np.random
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        i = tf.keras.Input((6,))
        h = tf.keras.layers.Dense(8, activation="tanh")(i)
        outs = [tf.keras.layers.Dense(3, activation="softmax", name="cls")(h),
                tf.keras.layers.Dense(1, name="reg")(h),
                tf.keras.layers.Dense(1, activation="sigmoid", name="bin")(h)]
        m = tf.keras.Model(i, outs)
        m.compile(tf.keras.optimizers.SGD(0.1), loss={"cls": "sparse_categorical_crossentropy", "reg": "mse",
                                                      "bin": "binary_crossentropy"},
                  loss_weights=loss_weights)
        if weights is not None:
            m.set_weights(weights)
        w0 = m.get_weights()
        if "validation_split" not in fit_kw:
            fit_kw = dict(fit_kw, validation_data=val)
        hist = m.fit(x, y, epochs=3, verbose=0, **fit_kw).history
        return w0, hist


@pytest.mark.parametrize("fit_kw,loss_weights", [
    (dict(batch_size=10, shuffle=False), {"cls": 1.0, "reg": 0.5, "bin": 2.0}),
    (dict(batch_size=7, shuffle=True), {"cls": 0.3, "reg": 1.0, "bin": 1.0}),
    (dict(batch_size=6, shuffle=False, validation_split=0.3), None),
    (dict(batch_size=9, shuffle=False, validation_freq=2), {"cls": 2.0, "reg": 0.1, "bin": 0.7}),
], ids=["uneven_last_batch", "shuffled_fit", "validation_split", "validation_freq"])
def test_validation_per_output_losses_match_tensorflow_keras(fit_kw, loss_weights):
    w0, want = _three_outputs(tft, None, fit_kw, loss_weights)
    _, got = _three_outputs(cft, w0, fit_kw, loss_weights)
    assert sorted(got) == sorted(want)
    assert "val_cls_loss" in want and "val_bin_loss" in want
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=2e-4, atol=1e-5, err_msg=k)


# -- 2. stateful Bidirectional ---------------------------------------------------------------------

def _bidirectional(tf, kind, merge, seq, weights=None):
    r = np.random.RandomState(1)
    xs = [r.rand(2, 4, 3).astype(np.float32) for _ in range(3)]
    with tf.Graph().as_default():
        bi = tf.keras.layers.Bidirectional(getattr(tf.keras.layers, kind)(3, stateful=True, return_sequences=seq),
                                           merge_mode=merge, batch_input_shape=(2, 4, 3))
        layers = [bi] + ([tf.keras.layers.Flatten()] if seq else []) + [tf.keras.layers.Dense(1)]
        m = tf.keras.Sequential(layers)
        if weights is not None:
            m.set_weights(weights)
        out = {"w0": m.get_weights(), "stateful": bi.stateful}
        out["p"] = [m.predict(x, batch_size=2) for x in xs]  # each batch goes on from the last
        states = bi.forward_layer.states + bi.backward_layer.states
        out["s"] = tf.keras.backend.batch_get_value(states)
        m.reset_states()
        out["after_model_reset"] = m.predict(xs[0], batch_size=2)
        bi.reset_states()
        out["after_layer_reset"] = m.predict(xs[1], batch_size=2)
        given = [np.full((2, 3), 0.1 * (k + 1), np.float32) for k in range(len(states))]
        bi.reset_states(given)
        out["s_given"] = tf.keras.backend.batch_get_value(states)
        out["after_given"] = m.predict(xs[2], batch_size=2)
        bi.reset_states()
        m.compile(tf.keras.optimizers.SGD(0.1), "mse")
        out["hist"] = m.fit(np.concatenate(xs), np.ones((6, 1), np.float32), batch_size=2, shuffle=False, epochs=2,
                            verbose=0).history["loss"]
        out["after_fit"] = m.predict(xs[0], batch_size=2)
        return out


@pytest.mark.parametrize("kind,merge,seq", [("LSTM", "concat", False), ("GRU", "sum", True),
                                            ("SimpleRNN", "mul", False), ("LSTM", "ave", True)])
def test_stateful_bidirectional_matches_tensorflow_keras(kind, merge, seq):
    want = _bidirectional(tft, kind, merge, seq)
    got = _bidirectional(cft, kind, merge, seq, want["w0"])
    assert got["stateful"] and want["stateful"]
    assert not np.allclose(want["p"][0], want["after_layer_reset"])  # the states carried on
    for k in ("p", "s", "after_model_reset", "after_layer_reset", "s_given", "after_given", "hist", "after_fit"):
        a, b = got[k], want[k]
        for u, v in zip(a if isinstance(a, list) else [a], b if isinstance(b, list) else [b]):
            np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-5, err_msg=k)


@pytest.mark.parametrize("tf", [tft, cft], ids=["tensorflow", "collflow"])
def test_bidirectional_reset_states_errors_in_both(tf):
    with tf.Graph().as_default():
        bi = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(2))
        bi(tf.keras.Input((3, 2)))
        with pytest.raises(AttributeError, match="Layer must be stateful"):
            bi.reset_states()
        st = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(2, stateful=True))
        st(tf.keras.Input(batch_shape=(2, 3, 2)))
        with pytest.raises(ValueError, match="Unrecognized value for `states`"):
            st.reset_states(np.zeros((2, 2), np.float32))


# -- 3. summary(expand_nested=, layer_range=) ------------------------------------------------------

def _summaries(tf, kind):
    L = tf.keras.layers
    with tf.Graph().as_default():
        if kind == "nested":
            inner = tf.keras.Sequential([L.Dense(4, input_shape=(3,)), L.Dense(2)], name="inner")
            deep = tf.keras.Sequential([L.Dense(5, input_shape=(2,)),
                                        tf.keras.Sequential([L.Dense(3, input_shape=(5,))], name="deepest")],
                                       name="mid")
            m = tf.keras.Sequential([inner, deep, L.BatchNormalization(name="bn"), L.Dense(1, name="last")],
                                    name="outer")
        else:
            i, a = tf.keras.Input((3,), name="x"), tf.keras.Input((3,), name="y")
            sub_in = tf.keras.Input((3,), name="sub_in")
            sub = tf.keras.Model(sub_in, L.Dense(2, name="sd")(L.Dense(4, name="sa")(sub_in)), name="sub")
            h = L.concatenate([L.Dense(2, name="d1")(i), L.Dense(2, name="d2")(a), sub(a)], name="cat")
            m = tf.keras.Model([i, a], L.Dense(1, name="out")(h), name="top")
        lines = []
        positions = [0.5, 0.8, 1.0] if kind == "nested" else [0.4, 0.6, 0.7, 1.0]
        for kw in ({"expand_nested": True}, {"expand_nested": True, "show_trainable": True},
                   {"expand_nested": True, "line_length": 80}, {"expand_nested": True, "positions": positions},
                   {"layer_range": ["mid", "bn"]}, {"layer_range": ["mid", "bn"], "expand_nested": True},
                   {"layer_range": ["las.*", "in+er"]}, {"layer_range": ["d.", "cat"]}, {"layer_range": [".*", "x"]},
                   {"layer_range": ["nope", "bn"]}, {"layer_range": ["bn"]}, {"layer_range": ["bn", 3]}):
            lines.append(repr(kw))
            try:
                m.summary(print_fn=lines.append, **kw)
            except ValueError as e:
                lines.append(f"ValueError: {e}")
        return lines


@pytest.mark.parametrize("kind", ["nested", "functional"])
def test_summary_expand_nested_and_layer_range_match_tensorflow_keras(kind):
    # a nested functional model's type: TF 1.15's class is Model, tf_keras 2.x's Functional
    want = [line.replace("(Functional)", "(Model)" + " " * 5) for line in _summaries(tft, kind)]
    got = _summaries(cft, kind)
    assert any("\u00af" in line for line in want)
    assert got == want


# -- 4. the ops model(x) re-creates ----------------------------------------------------------------

def _call_names(tf):
    L = tf.keras.layers
    with tf.Graph().as_default() as g:
        i = tf.keras.Input((4,))
        m = tf.keras.Model(i, L.Dense(2)(L.Dense(3, activation="relu")(i)))
        seq = tf.keras.Sequential([L.Dense(2, input_shape=(4,)), L.Activation("tanh"),
                                   tf.keras.Sequential([L.Dense(3, input_shape=(2,))], name="sub")])
        j = tf.keras.Input((4,))
        outer = tf.keras.Model(j, L.Dense(1, name="head")(m(j)), name="outer")
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        n0 = len(g.get_operations())
        outs = [m(x), m(x), seq(x), seq(x), outer(x)]
        with tf.name_scope("outer_scope"):
            outs.append(m(x))
        made = [op.name for op in g.get_operations()[n0:] if not op.name.endswith("ReadVariableOp")]
        return [t.name for t in outs], made


def test_ops_recreated_by_calling_a_model_are_named_as_tensorflow_keras():
    want_outs, want_ops = _call_names(tft)
    got_outs, got_ops = _call_names(cft)
    assert got_outs == want_outs
    assert got_ops == want_ops


# -- 5. a mask into a layer that does not support masking ------------------------------------------

_NO_MASKING = {
    "flatten": lambda L: L.Flatten(),
    "conv1d": lambda L: L.Conv1D(2, 2),
    "global_max_pooling1d": lambda L: L.GlobalMaxPooling1D(),
}


@pytest.mark.parametrize("kind", sorted(_NO_MASKING))
def test_mask_into_a_layer_without_masking_is_dropped_as_tf_drops_it(kind):
    # TF 1.15's and tf_keras's __call__ drop the mask (no output mask, no error)
    for tf in (tft, cft):
        with tf.Graph().as_default():
            L = tf.keras.layers
            e = L.Embedding(10, 4, mask_zero=True)(tf.keras.Input((5,)))
            out = _NO_MASKING[kind](L)(e)
            if tf is cft:
                from collflow.keras.layers import mask_of
                assert mask_of(e) is not None and mask_of(out) is None
            else:
                assert getattr(out, "_keras_mask", None) is None


def test_nested_functional_model_files_load_in_either_library(tmp_path):
    x = np.random.RandomState(2).rand(3, 3).astype(np.float32)
    for src, dst in ((cft, tft), (tft, cft), (cft, cft)):
        path = str(tmp_path / f"{src.__name__}.h5")
        with src.Graph().as_default():
            L = src.keras.layers
            sub_in = src.keras.Input((3,))
            sub = src.keras.Model(sub_in, L.Dense(2, activation="tanh")(sub_in), name="sub")
            i = src.keras.Input((3,))
            m = src.keras.Model(i, L.Dense(1)(L.concatenate([sub(i), i])))
            want = m.predict(x)
            m.save(path)
        with dst.Graph().as_default():
            loaded = dst.keras.models.load_model(path)
            assert [la.name for la in loaded.layers] == [la.name for la in m.layers]
            np.testing.assert_allclose(loaded.predict(x), want, rtol=1e-5, atol=1e-6)
