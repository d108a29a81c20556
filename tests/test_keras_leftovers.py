"""By-hand tests (no TensorFlow) of the Keras leftovers: a several-output model's per-output
validation losses over np.random-shuffled validation batches, stateful `Bidirectional`,
`summary(expand_nested=, layer_range=)`, the names of the ops `model(x)` re-creates, nested
functional models as layers, and a mask into a layer that does not support masking."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


# -- per-output validation losses ------------------------------------------------------------------

def test_validation_per_output_losses_are_means_over_shuffled_batches():
    r = np.random.RandomState(0)
    x = r.rand(30, 2).astype(np.float32)
    ya, yb = r.rand(30, 1).astype(np.float32), r.rand(30, 1).astype(np.float32)
    vx, vya, vyb = x[:11], ya[:11], yb[:11]
    with tf.Graph().as_default():
        i = tf.keras.Input((2,))
        a = tf.keras.layers.Dense(1, name="a", kernel_initializer="ones")(i)
        b = tf.keras.layers.Dense(1, name="b", kernel_initializer="ones")(i)
        m = tf.keras.Model(i, [a, b])
        m.compile(tf.keras.optimizers.SGD(0.0), loss="mse", loss_weights=[1.0, 3.0])  # fixed weights
        np.random.seed(5)
        hist = m.fit(x, [ya, yb], batch_size=4, epochs=2, shuffle=False, verbose=0,
                     validation_data=(vx, [vya, vyb])).history
    pa = pb = vx.sum(1, keepdims=True)  # kernel ones, bias zeros
    ea, eb = ((pa - vya) ** 2)[:, 0], ((pb - vyb) ** 2)[:, 0]
    np.random.seed(5)
    for epoch in range(2):
        # TF 1.15's loop: each validation shuffles the validation indices with np.random
        idx = np.arange(11)
        np.random.shuffle(idx)
        batches = [idx[s:s + 4] for s in range(0, 11, 4)]
        want_a = np.mean([ea[bt].mean() for bt in batches])
        want_b = np.mean([eb[bt].mean() for bt in batches])
        np.testing.assert_allclose(hist["val_a_loss"][epoch], want_a, rtol=1e-5)
        np.testing.assert_allclose(hist["val_b_loss"][epoch], want_b, rtol=1e-5)
        # the total is a mean over samples, whatever the batches
        np.testing.assert_allclose(hist["val_loss"][epoch], ea.mean() + 3.0 * eb.mean(), rtol=1e-5)


def test_evaluate_per_output_losses_stay_in_order():
    x = np.arange(10, dtype=np.float32)[:, None]
    with tf.Graph().as_default():
        i = tf.keras.Input((1,))
        a = tf.keras.layers.Dense(1, name="a", kernel_initializer="ones", use_bias=False)(i)
        b = tf.keras.layers.Dense(1, name="b", kernel_initializer="zeros", use_bias=False)(i)
        m = tf.keras.Model(i, [a, b])
        m.compile("sgd", loss="mse")
        got = m.evaluate(x, [np.zeros_like(x), x], batch_size=4, verbose=0)
    sq = x[:, 0] ** 2
    want_a = np.mean([sq[0:4].mean(), sq[4:8].mean(), sq[8:].mean()])
    np.testing.assert_allclose(got[1], want_a, rtol=1e-6)
    np.testing.assert_allclose(got[2], want_a, rtol=1e-6)
    np.testing.assert_allclose(got[0], 2 * sq.mean(), rtol=1e-6)


# -- stateful Bidirectional ------------------------------------------------------------------------

def _summing_bidirectional():
    # a linear SimpleRNN with unit weights: its state is the running sum of the inputs, so
    # both directions end a batch at the sum over all the steps seen since the last reset
    rnn = tf.keras.layers.SimpleRNN(1, activation=None, use_bias=False, stateful=True, kernel_initializer="ones",
                                    recurrent_initializer="ones")
    bi = tf.keras.layers.Bidirectional(rnn, batch_input_shape=(2, 3, 1))
    return tf.keras.Sequential([bi]), bi


def test_stateful_bidirectional_carries_and_resets_its_states():
    x1 = np.arange(6, dtype=np.float32).reshape(2, 3, 1)
    x2 = np.ones((2, 3, 1), np.float32)
    with tf.Graph().as_default():
        m, bi = _summing_bidirectional()
        assert bi.stateful
        s1 = x1.sum((1, 2))
        np.testing.assert_allclose(m.predict(x1, batch_size=2), np.stack([s1, s1], 1))
        s2 = s1 + 3.0
        np.testing.assert_allclose(m.predict(x2, batch_size=2), np.stack([s2, s2], 1))
        m.reset_states()
        np.testing.assert_allclose(m.predict(x2, batch_size=2), np.full((2, 2), 3.0))
        bi.reset_states()
        np.testing.assert_allclose(m.predict(x2, batch_size=2), np.full((2, 2), 3.0))
        bi.reset_states([np.full((2, 1), 10.0, np.float32), np.full((2, 1), -1.0, np.float32)])
        np.testing.assert_allclose(tf.keras.backend.batch_get_value(bi.forward_layer.states)[0], np.full((2, 1), 10.0))
        np.testing.assert_allclose(m.predict(x2, batch_size=2), np.tile([[13.0, 2.0]], (2, 1)))


def test_stateful_bidirectional_errors():
    with tf.Graph().as_default():
        m, bi = _summing_bidirectional()
        with pytest.raises(ValueError, match="Unrecognized value for `states`"):
            bi.reset_states(np.zeros((2, 1), np.float32))
        m.compile("sgd", "mse")
        with pytest.raises(ValueError, match="can be divided by the batch size"):
            m.fit(np.zeros((3, 3, 1), np.float32), np.zeros((3, 2), np.float32), batch_size=2, verbose=0)
        plain = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(2))
        plain(tf.keras.Input((3, 2)))
        assert not plain.stateful
        with pytest.raises(AttributeError, match="Layer must be stateful"):
            plain.reset_states()


# -- summary ---------------------------------------------------------------------------------------

def _nested():
    L = tf.keras.layers
    inner = tf.keras.Sequential([L.Dense(4, input_shape=(3,), name="a"), L.Dense(2, name="b")], name="inner")
    return tf.keras.Sequential([inner, L.Dense(1, name="c")], name="outer")


# tf_keras 2.21's output for this model (line_length=40), recorded once
_EXPANDED = """\
Model: "outer"
________________________________________
 Layer (type)     Output Shape    Param 
                                  #     
========================================
 inner (Sequenti  (None, 2)       26    
 al)                                    
|~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~|
| a (Dense)       (None, 4)       16   |
|                                      |
| b (Dense)       (None, 2)       10   |
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 c (Dense)        (None, 1)       3     
                                        
========================================
Total params: 29 (116.00 Byte)
Trainable params: 29 (116.00 Byte)
Non-trainable params: 0 (0.00 Byte)
________________________________________""".replace("~", "\u00af")  # "~" stands for tf_keras's macron


def test_summary_expand_nested_frames_the_nested_layers():
    with tf.Graph().as_default():
        lines = []
        _nested().summary(line_length=40, print_fn=lines.append, expand_nested=True)
    assert "\n".join(lines) == _EXPANDED


def test_summary_layer_range_picks_a_slice_by_regex():
    with tf.Graph().as_default():
        m = _nested()
        rows = {}
        for rng in (["c", "c"], ["in.*", "in.*"], ["c", "inner"], [".*", "c"]):
            lines = []
            m.summary(print_fn=lines.append, layer_range=rng)
            rows[tuple(rng)] = [ln.split()[0] for ln in lines[4:-5] if ln.strip()]
        assert rows[("c", "c")] == ["c"]
        assert rows[("in.*", "in.*")] == ["inner"]
        assert rows[("c", "inner")] == ["inner", "c"]  # given in reverse order: the same slice
        assert rows[(".*", "c")] == ["inner", "c"]
        for bad, msg in ((["c"], "length 2"), (["c", 1], "string type only"), (["zz", "c"], "do not match")):
            with pytest.raises(ValueError, match=msg):
                m.summary(print_fn=lambda s: None, layer_range=bad)


# -- ops re-created by model(x), nested models as layers -------------------------------------------

def test_ops_recreated_by_a_model_call_are_under_its_name_scope():
    with tf.Graph().as_default() as g:
        i = tf.keras.Input((4,))
        m = tf.keras.Model(i, tf.keras.layers.Dense(2, name="d")(i), name="net")
        x = tf.placeholder(tf.float32, [None, 4])
        n0 = len(g.get_operations())
        y1, y2 = m(x), m(x)
        assert y1.name == "net/d/BiasAdd:0" and y2.name == "net_1/d/BiasAdd:0"
        assert [op.name for op in g.get_operations()[n0:]] == ["net/d/MatMul", "net/d/BiasAdd", "net_1/d/MatMul",
                                                             "net_1/d/BiasAdd"]
        j = tf.keras.Input((4,))
        outer = tf.keras.Model(j, m(j), name="top")
        assert [la.name for la in outer.layers] == [j.op.name, "net"]  # the nested model is one layer
        assert outer(x).name == "top/net/d/BiasAdd:0"
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            v = np.ones((1, 4), np.float32)
            a, b = s.run([outer(x), m(x)], {x: v})
        np.testing.assert_allclose(a, b)


def test_nested_functional_model_round_trips_through_its_config():
    x = np.random.RandomState(1).rand(2, 3).astype(np.float32)
    with tf.Graph().as_default():
        L = tf.keras.layers
        sub_in = tf.keras.Input((3,))
        sub = tf.keras.Model(sub_in, L.Dense(2)(sub_in), name="sub")
        i = tf.keras.Input((3,))
        m = tf.keras.Model(i, L.Dense(1)(sub(i)))
        cfg = m.get_config()
        assert [la["class_name"] for la in cfg["layers"]] == ["InputLayer", "Model", "Dense"]
        # Keras counts the nested model's own graph as its node 0
        assert cfg["layers"][2]["inbound_nodes"] == [[["sub", 1, 0, {}]]]
        want = m.predict(x)
        weights = m.get_weights()
    with tf.Graph().as_default():
        again = tf.keras.Model.from_config(cfg) if hasattr(tf.keras.Model, "from_config") else \
            tf.keras.models.model_from_json(m.to_json())
        again.set_weights(weights)
        np.testing.assert_allclose(again.predict(x), want, rtol=1e-6)


# -- a mask into a layer that does not support masking --------------------------------------------

@pytest.mark.parametrize("make", [lambda L: L.Flatten(), lambda L: L.Conv1D(2, 2), lambda L: L.GlobalMaxPooling1D()],
                         ids=["flatten", "conv1d", "global_max_pooling1d"])
def test_mask_into_a_layer_without_masking_is_dropped(make):
    with tf.Graph().as_default():
        e = tf.keras.layers.Embedding(10, 4, mask_zero=True)(tf.keras.Input((5,)))
        from collflow.keras.layers import mask_of
        assert mask_of(e) is not None
        out = make(tf.keras.layers)(e)  # TF 1.15's __call__ drops the mask: no error, no output mask
        assert mask_of(out) is None


def test_reset_states_reaches_a_nested_model():
    x = np.ones((2, 3, 1), np.float32)
    with tf.Graph().as_default():
        rnn = tf.keras.layers.SimpleRNN(1, activation=None, use_bias=False, stateful=True, kernel_initializer="ones",
                                        recurrent_initializer="ones")
        i = tf.keras.Input(batch_shape=(2, 3, 1))
        sub = tf.keras.Model(i, rnn(i), name="sub")
        j = tf.keras.Input(batch_shape=(2, 3, 1))
        m = tf.keras.Model(j, sub(j))
        assert sub.stateful and m.stateful
        np.testing.assert_allclose(m.predict(x, batch_size=2), np.full((2, 1), 3.0))
        np.testing.assert_allclose(m.predict(x, batch_size=2), np.full((2, 1), 6.0))
        m.reset_states()
        np.testing.assert_allclose(m.predict(x, batch_size=2), np.full((2, 1), 3.0))


def test_input_of_a_named_tensor_is_keyed_by_its_layer_name(tmp_path):
    """Input(tensor=x, name="images"): Keras keys the input by the layer's name in fit's dicts,
    the model config and summary, whatever x's op is called; the name survives save/load."""
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None, 3], name="feat")
    inp = tf.keras.Input(tensor=x, name="images")
    model = tf.keras.Model(inp, tf.keras.layers.Dense(2, name="d")(inp))
    assert model.layers[0].name == "images"
    model.compile("sgd", "mse")
    xs, ys = np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32)
    model.fit({"images": xs}, ys, epochs=1, verbose=0)
    with pytest.raises(ValueError, match=r"No data provided for \['images'\]"):
        model.fit({"feat": xs}, ys, epochs=1, verbose=0)
    cfg = model.get_config()
    assert cfg["input_layers"][0][0] == "images" and cfg["layers"][0]["name"] == "images"
    path = str(tmp_path / "m.h5")
    model.save(path)
    back = tf.keras.models.load_model(path)
    assert back.layers[0].name == "images"
    unnamed = tf.keras.Input(tensor=tf.placeholder(tf.float32, [None, 3]))
    assert tf.keras.Model(unnamed, unnamed).layers[0].name.startswith("input_")


def test_global_pool_keepdims_masked_and_config():
    tf.reset_default_graph()
    x = tf.keras.Input((4, 3))
    masked = tf.keras.layers.Masking()(x)
    y = tf.keras.layers.GlobalAveragePooling1D(keepdims=True)(masked)
    z = tf.keras.layers.GlobalAveragePooling1D()(masked)
    model = tf.keras.Model(x, [y, z])
    xs = np.random.RandomState(0).rand(2, 4, 3).astype(np.float32)
    xs[0, 2:] = 0.0
    a, b = model.predict(xs)
    assert a.shape == (2, 1, 3) and b.shape == (2, 3)
    np.testing.assert_allclose(a[:, 0], b, rtol=1e-6)
    np.testing.assert_allclose(b[0], xs[0, :2].mean(0), rtol=1e-6)
    layers = model.get_config()["layers"]
    # keepdims (newer than TF 1.15's Keras) is written only when set
    assert [("keepdims" in la["config"]) for la in layers if la["class_name"] == "GlobalAveragePooling1D"] == \
        [True, False]
