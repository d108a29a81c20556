"""Variable constraints (tf.Variable / get_variable / tf.layers / Keras `*_constraint=`),
tf.keras.constraints' formulas and Keras activity regularizers, checked by hand (NumPy)."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

EPS = 1e-7


def _run(t):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(t)


def _norms(w, axis):
    return np.sqrt(np.sum(np.square(w), axis=axis, keepdims=True))


W = np.random.RandomState(0).randn(4, 3).astype(np.float32)


@pytest.mark.parametrize("make,ref", [
    (lambda: tf.keras.constraints.max_norm(1.0), lambda w: w * np.clip(_norms(w, 0), 0, 1.0) / (EPS + _norms(w, 0))),
    (lambda: tf.keras.constraints.MaxNorm(0.5, axis=1),
     lambda w: w * np.clip(_norms(w, 1), 0, 0.5) / (EPS + _norms(w, 1))),
    (lambda: tf.keras.constraints.non_neg(), lambda w: w * (w >= 0)),
    (lambda: tf.keras.constraints.unit_norm(), lambda w: w / (EPS + _norms(w, 0))),
    (lambda: tf.keras.constraints.min_max_norm(0.8, 1.1, rate=0.5),
     lambda w: w * (0.5 * np.clip(_norms(w, 0), 0.8, 1.1) + 0.5 * _norms(w, 0)) / (EPS + _norms(w, 0))),
])
def test_constraint_formulas(make, ref):
    with tf.Graph().as_default():
        np.testing.assert_allclose(_run(make()(tf.constant(W))), ref(W), rtol=1e-6, atol=1e-7)


def test_get_serialize_deserialize():
    c = tf.keras.constraints
    assert isinstance(c.get("max_norm"), c.MaxNorm) and isinstance(c.get("non_neg"), c.NonNeg)
    assert isinstance(c.get("unit_norm"), c.UnitNorm) and isinstance(c.get("min_max_norm"), c.MinMaxNorm)
    cfg = c.serialize(c.MinMaxNorm(0.1, 2.0, 0.3, axis=[0, 1]))
    assert cfg == {"class_name": "MinMaxNorm", "config": {"min_value": 0.1, "max_value": 2.0, "rate": 0.3,
                                                         "axis": [0, 1]}}
    back = c.deserialize(cfg)
    assert isinstance(back, c.MinMaxNorm) and back.get_config() == cfg["config"]
    assert c.get(None) is None
    f = lambda w: w  # noqa: E731
    assert c.get(f) is f
    with pytest.raises(ValueError):
        c.get("no_such_constraint")
    assert c.Constraint().get_config() == {}


def test_variable_constraint_applied_after_the_update():
    with tf.Graph().as_default():
        v = tf.Variable([[3.0, -4.0], [0.5, 1.0]], constraint=lambda w: tf.clip_by_value(w, -1.0, 1.0))
        assert v.constraint is not None
        step = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(v * v))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(step)
            # w - 0.1 * 2w = 0.8 w, then clipped to [-1, 1]
            np.testing.assert_allclose(s.run(v), np.clip(0.8 * np.array([[3.0, -4.0], [0.5, 1.0]]), -1, 1),
                                       rtol=1e-6)


def test_get_variable_constraint_and_bad_constraint():
    with tf.Graph().as_default():
        g = tf.get_variable("g", initializer=np.array([-1.0, 2.0], np.float32),
                            constraint=tf.keras.constraints.non_neg())
        step = tf.train.MomentumOptimizer(0.5, 0.9).minimize(tf.reduce_sum(g))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(step)
            np.testing.assert_allclose(s.run(g), [0.0, 1.5])
        with pytest.raises(ValueError, match="callable"):
            tf.Variable(1.0, constraint=3)


def test_variable_scope_constraint_is_the_default():
    with tf.Graph().as_default():
        clip = lambda t: tf.clip_by_value(t, 0.0, 1.0)  # noqa: E731
        own = lambda t: t  # noqa: E731
        with tf.variable_scope("a", constraint=clip):
            a = tf.get_variable("a", [2])
            b = tf.get_variable("b", [2], constraint=own)
            with tf.variable_scope("inner"):
                c = tf.get_variable("c", [2])
        d = tf.get_variable("d", [2])
        assert a.constraint is clip and b.constraint is own and c.constraint is clip and d.constraint is None


def test_sparse_gradient_with_constraint_is_runtime_error():
    with tf.Graph().as_default():
        e = tf.get_variable("e", [5, 2], constraint=lambda t: t)
        loss = tf.reduce_sum(tf.nn.embedding_lookup(e, [0, 2]))
        with pytest.raises(RuntimeError, match="Cannot use a constraint function on a sparse variable."):
            tf.train.AdamOptimizer(0.1).minimize(loss)


def test_tf_layers_dense_kernel_constraint():
    with tf.Graph().as_default():
        x = tf.constant(np.ones((4, 3), np.float32))
        y = tf.layers.dense(x, 2, kernel_initializer=tf.constant_initializer(5.0),
                            kernel_constraint=tf.keras.constraints.max_norm(1.0), name="d")
        layer = tf.layers.Dense(2, bias_constraint=tf.keras.constraints.non_neg(), name="e")
        z = layer(x)
        kernel = [v for v in tf.global_variables() if v.op.name == "d/kernel"][0]
        assert isinstance(kernel.constraint, tf.keras.constraints.MaxNorm)
        assert layer.bias.constraint is not None and layer.kernel.constraint is None
        step = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(y) + tf.reduce_sum(z))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(step)
            np.testing.assert_allclose(np.linalg.norm(s.run(kernel), axis=0), [1.0, 1.0], rtol=1e-5)
            assert np.all(s.run(layer.bias) >= 0)


def test_keras_dense_max_norm_after_fit():
    r = np.random.RandomState(3)
    x = r.randn(64, 5).astype(np.float32) * 3
    y = x @ r.randn(5, 3).astype(np.float32) * 4
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(5,), kernel_constraint=tf.keras.constraints.max_norm(1))])
        m.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
        assert isinstance(m.layers[0].kernel.constraint, tf.keras.constraints.MaxNorm)
        m.fit(x, y, batch_size=16, epochs=3, verbose=0)
        kernel = m.get_weights()[0]
        assert np.all(np.linalg.norm(kernel, axis=0) <= 1.0 + 1e-5)
        assert np.linalg.norm(kernel, axis=0).max() > 0.99  # the constraint was active


def test_keras_user_layer_add_weight_constraint():
    class Scale(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", [int(input_shape[-1])], initializer="ones", constraint="non_neg")

        def call(self, x):
            return x * self.w

    with tf.Graph().as_default():
        inp = tf.keras.Input((2,))
        m = tf.keras.Model(inp, Scale()(inp))
        m.compile(optimizer=tf.keras.optimizers.SGD(1.0), loss="mse")
        m.fit(np.ones((4, 2), np.float32), np.full((4, 2), -5.0, np.float32), batch_size=4, epochs=1, verbose=0)
        np.testing.assert_allclose(m.get_weights()[0], [0.0, 0.0])


def test_activity_regularizer_adds_to_the_loss():
    x = np.arange(12, dtype=np.float32).reshape(6, 2) / 10
    y = np.zeros((6, 1), np.float32)
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,), kernel_initializer="ones",
                                                       activity_regularizer=tf.keras.regularizers.l2(0.5))])
        m.compile(optimizer="sgd", loss="mse")
        assert len(m.losses) == 1
        assert len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 1
        h = x.sum(1, keepdims=True)
        # Keras divides the activity penalty by the batch size
        for bs in (6, 3):
            want = np.mean([np.mean(np.square(h[i:i + bs])) + 0.5 * np.sum(np.square(h[i:i + bs])) / bs
                            for i in range(0, 6, bs)])
            np.testing.assert_allclose(m.evaluate(x, y, batch_size=bs, verbose=0), want, rtol=1e-6)


def test_keras_config_carries_constraints_and_activity_regularizer():
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,), kernel_constraint="max_norm",
                                                       activity_regularizer=tf.keras.regularizers.l1(0.1))])
        cfg = m.get_config()
        layer_cfg = (cfg["layers"] if isinstance(cfg, dict) else cfg)[0]["config"]
        assert layer_cfg["kernel_constraint"]["class_name"] == "MaxNorm"
        assert layer_cfg["activity_regularizer"]["class_name"] == "L1L2"
        m2 = tf.keras.models.model_from_json(m.to_json())
        assert isinstance(m2.layers[0]._keras_constraints["kernel"], tf.keras.constraints.MaxNorm)
        m2.build((None, 3)) if not m2.built else None
        assert len(m2.losses) == 1
