"""Raw TF ops between the layers of a functional tf.keras Model (collflow/keras/op_layer.py),
checked by hand against NumPy (tests/tf1/test_vs_tensorflow_keras_op_layers.py compares with
TensorFlow's Keras where it is installed)."""
import json

import numpy as np
import pytest

import collflow.compat.v1 as tf

pytestmark = pytest.mark.timeout(120)
K = tf.keras.backend


def _x(n=12, d=8, seed=0):
    return np.random.RandomState(seed).rand(n, d).astype(np.float32)


def _brief_model():
    inp = tf.keras.Input((8,))
    h = tf.keras.layers.Dense(16)(inp)
    h = tf.nn.relu(h) * 2.0 + tf.concat([h, h], -1)[:, :16]
    out = tf.keras.layers.Dense(3)(tf.reduce_mean(h, -1, keepdims=True) + h)
    return tf.keras.Model(inp, out)


def _brief_numpy(x, w1, b1, w2, b2):
    h = x @ w1 + b1
    h = np.maximum(h, 0) * 2.0 + np.concatenate([h, h], -1)[:, :16]
    return (h.mean(-1, keepdims=True) + h) @ w2 + b2


def test_raw_ops_become_op_layers_in_tf_order_with_tf_names():
    with tf.Graph().as_default():
        m = _brief_model()
        names = [la.name for la in m.layers]
        # TF's order and names (tf_keras in graph mode lists the same, its InputLayer first)
        assert names[0] == "input_1" and type(m.layers[0]).__name__ == "InputLayer"
        names = names[1:]
        assert names == ["dense", "tf_op_layer_Relu", "tf_op_layer_concat", "tf_op_layer_mul",
                         "tf_op_layer_strided_slice", "tf_op_layer_add", "tf_op_layer_Mean", "tf_op_layer_add_1",
                         "dense_1"]
        assert {type(la).__name__ for la in m.layers[2:-1]} == {"TensorFlowOpLayer"}
        assert m.count_params() == 8 * 16 + 16 + 16 * 3 + 3
        assert [la.count_params() for la in m.layers[2:-1]] == [0] * 7
        lines = []
        m.summary(print_fn=lines.append)
        text = "\n".join(lines)  # tf_keras's table: long names wrap, op layers' shapes are lists
        assert " tf_op_layer_concat (Tensor  [(None, 32)] " in text
        assert "Total params: 195" in text
        assert m.get_layer("tf_op_layer_Relu").output.op.type == "Relu"
        x = _x()
        np.testing.assert_allclose(m.predict(x), _brief_numpy(x, *m.get_weights()), rtol=1e-5, atol=1e-5)


def test_reapplication_recreates_the_ops_on_new_inputs():
    with tf.Graph().as_default():
        m = _brief_model()
        x2 = tf.placeholder(tf.float32, [None, 8])
        y2 = m(x2)
        assert y2.shape.as_list() == [None, 3]  # shapes inferred afresh
        assert y2.op.type == "BiasAdd"
        x = _x(seed=1)
        got = K.get_session().run(y2, {x2: x})
        np.testing.assert_allclose(got, _brief_numpy(x, *m.get_weights()), rtol=1e-5, atol=1e-5)
        # a model of the model: the op layers come along
        i3 = tf.keras.Input((8,))
        outer = tf.keras.Model(i3, tf.keras.layers.Dense(1)(m(i3)))
        assert outer.count_params() == m.count_params() + 4
        assert outer.predict(x).shape == (12, 1)


def test_gradients_through_op_layers_match_finite_differences():
    x = _x(n=5)
    with tf.Graph().as_default():
        m = _brief_model()
        loss = tf.reduce_sum(tf.square(m.output))
        grads = tf.gradients(loss, m.trainable_weights)
        sess = K.get_session()
        g = sess.run(grads, {m.input: x})
        assert all(np.isfinite(a).all() and np.abs(a).sum() > 0 for a in g)
        w = m.get_weights()

        def f(ws):
            return float(np.square(_brief_numpy(x.astype(np.float64), *ws)).sum())
        eps = 1e-4
        for idx in [(0, 1), (3, 2)]:
            wp = [a.astype(np.float64) for a in w]
            wm = [a.astype(np.float64) for a in w]
            wp[0][idx] += eps
            wm[0][idx] -= eps
            np.testing.assert_allclose(g[0][idx], (f(wp) - f(wm)) / (2 * eps), rtol=2e-3, atol=2e-3)


def test_fit_lowers_the_loss_and_evaluate_predict_work():
    r = np.random.RandomState(3)
    x = r.rand(64, 8).astype(np.float32)
    y = np.stack([x[:, :4].sum(1), x[:, 4:].sum(1), x.prod(1)], 1).astype(np.float32)
    with tf.Graph().as_default():
        m = _brief_model()
        m.compile(tf.keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
        h = m.fit(x, y, epochs=20, batch_size=16, verbose=0).history
        assert h["loss"][-1] < 0.3 * h["loss"][0]
        loss, mae = m.evaluate(x, y, verbose=0)
        assert np.isfinite(loss) and mae > 0
        assert m.predict(x).shape == (64, 3)


def test_two_model_dependent_inputs_and_multi_input_model():
    r = np.random.RandomState(4)
    a, b = r.rand(10, 3).astype(np.float32), r.rand(10, 5).astype(np.float32)
    with tf.Graph().as_default():
        ia, ib = tf.keras.Input((3,)), tf.keras.Input((5,))
        h1 = tf.keras.layers.Dense(4, activation="tanh")(ia)
        h2 = tf.keras.layers.Dense(4)(ib)
        h = h1 * h2 - tf.reduce_sum(ib, axis=1, keepdims=True)  # ops on an input directly too
        out = tf.keras.layers.Dense(1)(tf.concat([h, ia], axis=1))
        m = tf.keras.Model([ia, ib], out)
        assert [la.name for la in m.layers][:2] == ["input_1", "input_2"]
        assert [la.name for la in m.layers][2:] == ["dense", "dense_1", "tf_op_layer_mul", "tf_op_layer_Sum",
                                                 "tf_op_layer_sub", "tf_op_layer_concat", "dense_2"]
        assert m.get_layer("tf_op_layer_mul").input[0] is h1
        wa, ba, wb, bb, wo, bo = m.get_weights()
        hh = np.tanh(a @ wa + ba) * (b @ wb + bb) - b.sum(1, keepdims=True)
        want = np.concatenate([hh, a], 1) @ wo + bo
        np.testing.assert_allclose(m.predict([a, b]), want, rtol=1e-5, atol=1e-5)
        pa, pb = tf.placeholder(tf.float32, [None, 3]), tf.placeholder(tf.float32, [None, 5])
        np.testing.assert_allclose(K.get_session().run(m([pa, pb]), {pa: a, pb: b}), want, rtol=1e-5, atol=1e-5)


def test_raw_ops_on_the_input_and_making_the_output():
    x = _x(seed=5) - 0.5
    with tf.Graph().as_default():
        inp = tf.keras.Input((8,))
        h = tf.reshape(tf.square(inp) + 1.0, [-1, 2, 4])
        h = tf.keras.layers.Flatten()(tf.transpose(h, [0, 2, 1]))
        out = tf.nn.softmax(tf.keras.layers.Dense(3)(h))
        m = tf.keras.Model(inp, out)
        assert m.layers[1].name == "tf_op_layer_Square" and m.layers[-1].name == "tf_op_layer_Softmax"
        assert m.output_names == ["tf_op_layer_Softmax"]
        w, b = m.get_weights()
        z = (np.square(x) + 1.0).reshape(-1, 2, 4).transpose(0, 2, 1).reshape(-1, 8) @ w + b
        want = np.exp(z) / np.exp(z).sum(1, keepdims=True)
        np.testing.assert_allclose(m.predict(x), want, rtol=1e-5, atol=1e-6)
        m.compile("adam", "categorical_crossentropy")
        y = np.eye(3, dtype=np.float32)[np.arange(12) % 3]
        h = m.fit(x, y, epochs=30, batch_size=12, verbose=0).history["loss"]
        assert h[-1] < h[0]


def test_op_with_several_outputs():
    x = _x(seed=6)
    with tf.Graph().as_default():
        inp = tf.keras.Input((8,))
        lo, hi = tf.split(tf.keras.layers.Dense(6)(inp), 2, axis=1)
        out = tf.keras.layers.Dense(2)(lo * tf.sigmoid(hi))
        m = tf.keras.Model(inp, out)
        w1, b1, w2, b2 = m.get_weights()
        h = x @ w1 + b1
        want = (h[:, :3] / (1 + np.exp(-h[:, 3:]))) @ w2 + b2
        np.testing.assert_allclose(m.predict(x), want, rtol=1e-5, atol=1e-5)
        p = tf.placeholder(tf.float32, [None, 8])
        np.testing.assert_allclose(K.get_session().run(m(p), {p: x}), want, rtol=1e-5, atol=1e-5)


def test_weights_files_and_whole_model_round_trip(tmp_path):
    x = _x(seed=7)
    with tf.Graph().as_default():
        m = _brief_model()
        m.compile("sgd", "mse")
        want = m.predict(x)
        m.save_weights(str(tmp_path / "w.h5"))
        m.save_weights(str(tmp_path / "ckpt"))
        m.save(str(tmp_path / "m.h5"))
        config = json.loads(m.to_json())
    ops = [la for la in config["config"]["layers"] if la["class_name"] == "TensorFlowOpLayer"]
    assert ops[0]["name"] == "tf_op_layer_Relu" and ops[0]["config"]["name"] == "Relu"
    mul = next(la for la in ops if la["name"] == "tf_op_layer_mul")
    assert mul["config"]["constants"] == {"1": {"class_name": "__numpy__", "config": {"value": 2.0,
                                                                                         "dtype": "float32"}}}
    for weights in ("w.h5", "ckpt"):
        with tf.Graph().as_default():
            m2 = _brief_model()
            assert np.abs(m2.predict(x) - want).max() > 1e-3
            m2.load_weights(str(tmp_path / weights))
            np.testing.assert_allclose(m2.predict(x), want, rtol=1e-6, atol=1e-6)
    with tf.Graph().as_default():
        m3 = tf.keras.models.load_model(str(tmp_path / "m.h5"))
        assert [la.name for la in m3.layers] == [la["name"] for la in config["config"]["layers"]]
        np.testing.assert_allclose(m3.predict(x), want, rtol=1e-6, atol=1e-6)
        m3.fit(x, want, epochs=1, verbose=0)
    with tf.Graph().as_default():
        m4 = tf.keras.models.model_from_json(json.dumps(config))
        assert m4.predict(x).shape == (12, 3)


def test_captured_tensors_stay_live_and_save_as_their_values(tmp_path):
    x = _x(seed=8)
    with tf.Graph().as_default():
        scale = tf.Variable(np.full(16, 3.0, np.float32), name="scale")
        inp = tf.keras.Input((8,))
        h = tf.keras.layers.Dense(16)(inp) * scale
        m = tf.keras.Model(inp, tf.keras.layers.Dense(1)(h))
        sess = K.get_session()
        sess.run(scale.initializer)
        w1, b1, w2, b2 = m.get_weights()
        np.testing.assert_allclose(m.predict(x), ((x @ w1 + b1) * 3.0) @ w2 + b2, rtol=1e-5, atol=1e-5)
        assert len(m.weights) == 4  # the captured variable is not a weight of the model (as in TF)
        m.save(str(tmp_path / "m.h5"))
        want = m.predict(x)
    with tf.Graph().as_default():
        np.testing.assert_allclose(tf.keras.models.load_model(str(tmp_path / "m.h5")).predict(x), want, rtol=1e-6)


def test_random_ops_are_wrapped_stateful_and_control_flow_refused():
    with tf.Graph().as_default():
        inp = tf.keras.Input((4,))
        noisy = inp + tf.random.uniform([4], seed=1)  # random ops: wrapped, as TF wraps them
        m = tf.keras.Model(inp, tf.keras.layers.Dense(2)(noisy))
        assert "tf_op_layer_add" in [la.name for la in m.layers]
        assert m.predict(np.ones((3, 4), np.float32)).shape == (3, 2)
    with tf.Graph().as_default():
        inp = tf.keras.Input((4,))
        h = tf.keras.layers.Dense(4)(inp)
        out = tf.cond(tf.constant(True), lambda: h * 2.0, lambda: h)
        with pytest.raises(ValueError, match="control-flow.*Lambda"):
            tf.keras.Model(inp, out)
    with tf.Graph().as_default():
        inp = tf.keras.Input((4,))
        h = tf.keras.layers.Dense(4)(inp)
        out = tf.py_func(lambda a: a * 2.0, [h], tf.float32)
        with pytest.raises(ValueError, match="stateful.*Lambda"):
            tf.keras.Model(inp, out)
    with tf.Graph().as_default():
        inp = tf.keras.Input((4,))
        other = tf.placeholder(tf.float32, [None, 4])
        with pytest.raises(ValueError, match="Graph disconnected"):
            tf.keras.Model(inp, tf.keras.layers.Dense(2)(inp) + tf.keras.layers.Dense(2)(other))
