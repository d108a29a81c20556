"""tf.keras.mixed_precision.experimental (keras/mixed_precision.py, mixed_precision_optimizer.py)
without TensorFlow: the policies, the dtypes at each stage of a mixed_float16 model (inputs,
variables, reads inside a call, outputs, gradients, penalties), one SGD step against a NumPy
reference that rounds to float16 where the layers compute in it, a skipped step of the dynamic
loss scale and its schedule, the LossScaleOptimizer API, and float32 checkpoints under TF's names."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.keras import mixed_precision as mp
from collflow.train.loss_scale import DynamicLossScale, FixedLossScale

K = tf.keras
MPX = tf.keras.mixed_precision.experimental
f16, f32 = np.float16, np.float32


@pytest.fixture(autouse=True)
def _fresh():
    K.backend.clear_session()
    yield
    mp.set_policy(None)
    K.backend.clear_session()


# -- policies ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,compute,variable,cast,scale", [
    ("mixed_float16", "float16", "float32", True, DynamicLossScale),
    ("float32", "float32", "float32", False, None),
    ("float16", "float16", "float16", False, None),
    ("float64", "float64", "float64", False, None),
    ("infer", None, None, False, None),
    ("infer_float32_vars", None, "float32", True, None),
])
def test_policy_properties(name, compute, variable, cast, scale):
    p = MPX.Policy(name)
    assert (p.name, p.compute_dtype, p.variable_dtype, p.should_cast_variables) == (name, compute, variable, cast)
    assert (type(p.loss_scale) if scale else p.loss_scale) is scale
    assert name in repr(p)
    assert MPX.Policy.from_config(p.get_config()).name == name


def test_policy_loss_scale_argument():
    assert isinstance(MPX.Policy("mixed_float16", loss_scale=128).loss_scale, FixedLossScale)
    assert MPX.Policy("mixed_float16", loss_scale=None).loss_scale is None
    ls = DynamicLossScale(4.0)
    assert MPX.Policy("float32", loss_scale=ls).loss_scale is ls
    # a dynamic scale's variables belong to a graph: one scale per graph, made on first use
    p = MPX.Policy("mixed_float16")
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        a = p.loss_scale
        assert p.loss_scale is a and a._current_loss_scale.graph is g1
    with g2.as_default():
        assert p.loss_scale is not a and p.loss_scale._current_loss_scale.graph is g2


def test_policy_errors():
    with pytest.raises(ValueError, match="bfloat16"):
        MPX.Policy("mixed_bfloat16")
    with pytest.raises(ValueError, match="bfloat16"):
        MPX.Policy("bfloat16")
    with pytest.raises(ValueError, match="Cannot convert value 'mixed_float32'"):
        MPX.Policy("mixed_float32")
    with pytest.raises(TypeError, match="not a DType"):
        MPX.Policy(tf.float16)
    with pytest.raises(TypeError, match="must be a string"):
        MPX.Policy(16)
    with pytest.raises(ValueError, match="loss scale"):
        MPX.Policy("mixed_float16", loss_scale="static")
    with pytest.raises(ValueError, match="at least 1"):
        MPX.Policy("mixed_float16", loss_scale=0.5)
    with pytest.raises(TypeError, match="set_policy"):
        MPX.set_policy(16)
    with pytest.raises(TypeError, match="dtype"):
        K.layers.Dense(2, dtype=object())


def test_global_policy_and_scope():
    assert MPX.global_policy().name == "infer"
    MPX.set_policy("mixed_float16")
    assert MPX.global_policy().name == "mixed_float16"
    with mp.policy_scope(MPX.Policy("float64")):
        d64 = K.layers.Dense(2)
    d16 = K.layers.Dense(2)  # the policy when a layer is made decides
    assert MPX.global_policy().name == "mixed_float16"
    MPX.set_policy(None)
    x = tf.placeholder(tf.float32, [None, 3])
    assert (d64(x).dtype, d16(x).dtype, K.layers.Dense(2)(x).dtype) == (tf.float64, tf.float16, tf.float32)
    assert (d64.dtype, d16.dtype, d16._compute_dtype) == ("float64", "float32", "float16")


# -- dtypes at each stage ------------------------------------------------------------------------------

def test_dtypes_of_a_mixed_model():
    MPX.set_policy("mixed_float16")
    x = K.layers.Input((6, 6, 2))
    conv = K.layers.Conv2D(3, 3, activation="relu", kernel_regularizer=K.regularizers.l2(0.01))
    h = conv(x)
    f = K.layers.Flatten()(h)
    soft16 = K.layers.Dense(4, activation="softmax")(f)
    out = K.layers.Activation("softmax", dtype="float32")(K.layers.Dense(4)(f))
    model = K.Model(x, [soft16, out])
    assert (h.dtype, f.dtype, soft16.dtype, out.dtype) == (tf.float16,) * 3 + (tf.float32,)
    assert sorted(w.name for w in model.weights) == ["conv2d/bias:0", "conv2d/kernel:0", "dense/bias:0",
                                                     "dense/kernel:0", "dense_1/bias:0", "dense_1/kernel:0"]
    assert {w.dtype for w in model.weights} == {tf.float32}
    assert conv.kernel.dtype == tf.float32 and conv.dtype == "float32" and conv._compute_dtype == "float16"
    # the penalty is float32 (the float32 variable's), once however often the layer is called
    assert [t.dtype for t in model.losses] == [tf.float32]
    conv(x)
    assert len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 1
    grads = tf.gradients(tf.reduce_sum(out) + tf.cast(tf.reduce_sum(soft16), tf.float32), model.trainable_weights)
    assert {g.dtype for g in grads} == {tf.float32}


def test_policies_other_than_mixed():
    x64 = tf.placeholder(tf.float64, [None, 3])
    x16 = tf.placeholder(tf.float16, [None, 3])
    d = K.layers.Dense(2)  # 'infer': the input's dtype, as before
    assert d(x64).dtype == tf.float64 and d.kernel.dtype == tf.float64 and d.dtype is None
    d = K.layers.Dense(2, dtype="float32")  # an explicit dtype casts the inputs
    assert d(x16).dtype == tf.float32 and d.kernel.dtype == tf.float32
    d = K.layers.Dense(2, dtype=MPX.Policy("infer_float32_vars"))  # float32 variables read as the input's dtype
    assert d(x16).dtype == tf.float16 and d.kernel.dtype == tf.float32
    for pol, params in (("float16", tf.float32), ("float64", tf.float64)):  # one dtype (float16 BN: float32 statistics)
        bn, d = K.layers.BatchNormalization(dtype=pol), K.layers.Dense(2, dtype=pol)
        assert d(bn(tf.placeholder(tf.float32, [None, 3]), training=True)).dtype.name == pol
        assert {w.dtype for w in bn.weights} == {params} and {w.dtype.name for w in d.weights} == {pol}
    e = K.layers.Embedding(5000, 3, dtype="mixed_float16")  # float ids are not cast to float16 (4097 stays)
    ids = tf.placeholder(tf.float32, [None, 2])
    rows = e(ids)
    bn = K.layers.BatchNormalization(dtype="mixed_float16")
    y = bn(x16, training=True)
    assert rows.dtype == tf.float16 and e.embeddings.dtype == tf.float32
    assert y.dtype == tf.float16 and {w.dtype for w in bn.weights} == {tf.float32}
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    table = sess.run(e.embeddings)
    got = sess.run(rows, {ids: [[4097.0, 3.0]]})
    np.testing.assert_array_equal(got[0], table[[4097, 3]].astype(f16))


class ScaleLayer(K.layers.Layer):
    def build(self, shape):
        self.w = self.add_weight("w", [int(shape[-1])], initializer="ones")
        self.plain = self.add_weight("plain", [1], initializer="ones", experimental_autocast=False)

    def call(self, x):
        self.seen = (self.w.dtype, self.plain.dtype, x.dtype)
        return x * self.w


def test_autocast_variable_reads_in_the_call():
    layer = ScaleLayer(dtype="mixed_float16")
    y = layer(tf.placeholder(tf.float32, [None, 3]))
    assert layer.seen == (tf.float16, tf.float32, tf.float16) and y.dtype == tf.float16
    assert isinstance(layer.w, mp.AutoCastVariable) and not isinstance(layer.plain, mp.AutoCastVariable)
    assert layer.w.dtype == layer.w.true_dtype == tf.float32  # outside a call: the variable's
    assert [w.dtype for w in layer.weights] == [tf.float32, tf.float32]
    assert layer.get_config()["dtype"] == "mixed_float16"
    assign = layer.w.assign(tf.constant([0.5, 1.5, 2.5], tf.float16))  # written as float32
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    sess.run(assign)
    assert sess.run(layer.w).dtype == f32
    np.testing.assert_array_equal(sess.run(layer.weights[0]), [0.5, 1.5, 2.5])


# -- training ----------------------------------------------------------------------------------------------

def _dense_model(w0, loss_scale):
    MPX.set_policy(MPX.Policy("mixed_float16", loss_scale=loss_scale))
    m = K.Sequential([K.layers.Dense(4, activation="relu", input_shape=(3,)), K.layers.Dense(2, dtype="float32")])
    m.set_weights(w0)
    m.compile(K.optimizers.SGD(0.1), "mse")
    return m


def _w0(rng):
    return [rng.randn(3, 4).astype(f32), (rng.randn(4) * 0.1).astype(f32), rng.randn(4, 2).astype(f32),
            (rng.randn(2) * 0.1).astype(f32)]


def _reference_step(w0, x, t, scale, lr):
    """One SGD step of the mixed model in NumPy: the hidden layer in float16 (inputs, reads,
    output and its gradients rounded to float16), the last in float32, the loss scaled."""
    w1, b1, w2, b2 = w0
    x16, w1_16, b1_16 = x.astype(f16), w1.astype(f16), b1.astype(f16)
    z = (x16.astype(f32) @ w1_16.astype(f32)).astype(f16) + b1_16
    h = np.maximum(z, 0).astype(f16)
    y = h.astype(f32) @ w2 + b2
    loss = np.mean((y - t) ** 2)
    dy = (2 * (y - t) / y.size * scale).astype(f32)
    dw2, db2 = h.astype(f32).T @ dy, dy.sum(0)
    dz = ((dy @ w2.T).astype(f16) * (z > 0)).astype(f16)
    dw1 = (x16.astype(f32).T @ dz.astype(f32)).astype(f16).astype(f32)
    db1 = dz.astype(f32).sum(0).astype(f16).astype(f32)
    grads = [g / scale for g in (dw1, db1, dw2, db2)]
    return loss, [w - lr * g for w, g in zip(w0, grads)]


def test_one_step_against_numpy():
    rng = np.random.RandomState(0)
    w0 = _w0(rng)
    x, t = rng.randn(8, 3).astype(f32), rng.randn(8, 2).astype(f32)
    m = _dense_model(w0, 64)
    assert type(m.optimizer).__name__ == "LossScaleOptimizer"
    loss = m.train_on_batch(x, t)
    ref_loss, ref_w = _reference_step(w0, x, t, 64.0, 0.1)
    # tight enough that computing the hidden layer in float32 instead (errors ~1e-4) fails
    np.testing.assert_allclose(loss, ref_loss, rtol=2e-5)
    for got, want, before in zip(m.get_weights(), ref_w, w0):
        assert got.dtype == f32
        np.testing.assert_allclose(got - before, want - before, rtol=1e-4, atol=1e-5)
    assert float(K.backend.get_value(m.optimizer.loss_scale())) == 64.0


def test_dynamic_scale_skips_an_overflowing_step_and_grows():
    rng = np.random.RandomState(1)
    w0 = _w0(rng)
    x = rng.randn(8, 3).astype(f32)
    big = (rng.randn(8, 2) * 2000).astype(f32)  # scaled by 2**15 the float16 gradients are inf
    m = _dense_model(w0, DynamicLossScale(2.0 ** 15, increment_period=2))
    ls = m.optimizer.loss_scale
    state = lambda: (float(K.backend.get_value(ls())), int(K.backend.get_value(ls._num_good_steps)),  # noqa: E731
                     int(K.backend.get_value(m.optimizer.iterations)))
    m.train_on_batch(x, big)
    assert state() == (2.0 ** 14, 0, 0)  # skipped: halved, the count reset, no iteration
    for a, b in zip(m.get_weights(), w0):
        np.testing.assert_array_equal(a, b)
    small = (big / 2000).astype(f32)
    schedule = []
    for _ in range(4):
        m.train_on_batch(x, small)
        schedule.append(state())
    assert schedule == [(2.0 ** 14, 1, 1), (2.0 ** 15, 0, 2), (2.0 ** 15, 1, 3), (2.0 ** 16, 0, 4)]
    assert any(np.any(a != b) for a, b in zip(m.get_weights(), w0))


def test_compile_wraps_only_with_a_loss_scale():
    for policy, wrapped in (("float32", False), (MPX.Policy("mixed_float16", loss_scale=None), False),
                            ("mixed_float16", True)):
        K.backend.clear_session()
        MPX.set_policy(policy)
        m = K.Sequential([K.layers.Dense(2, input_shape=(3,), dtype="float32")])
        m.compile("sgd", "mse")
        assert (type(m.optimizer).__name__ == "LossScaleOptimizer") is wrapped
    assert m.optimizer.lr is m.optimizer._optimizer.lr  # the wrapped optimizer's learning rate, iterations
    assert m.optimizer.iterations is m.optimizer._optimizer.iterations
    given = MPX.LossScaleOptimizer(K.optimizers.SGD(0.1), 8)
    m.compile(given, "mse")
    assert m.optimizer is given


def test_loss_scale_optimizer_api():
    inner = K.optimizers.SGD(0.25)
    with pytest.raises(ValueError, match="tf.keras.optimizers.Optimizer"):
        MPX.LossScaleOptimizer(tf.train.GradientDescentOptimizer(0.1), "dynamic")
    with pytest.raises(ValueError, match="None"):
        MPX.LossScaleOptimizer(inner, None)
    opt = MPX.LossScaleOptimizer(inner, 8)
    assert isinstance(opt.loss_scale, FixedLossScale)
    assert opt.get_config()["loss_scale"]["config"] == {"loss_scale_value": 8.0}
    back = MPX.LossScaleOptimizer.from_config(opt.get_config())
    assert type(back._optimizer) is K.optimizers.SGD and isinstance(back.loss_scale, FixedLossScale)
    # tf_keras 2.x's arguments
    v2 = tf.keras.mixed_precision.LossScaleOptimizer(inner)
    assert (v2.dynamic, v2.initial_scale, v2.dynamic_growth_steps, v2.inner_optimizer) == (True, 2.0 ** 15, 2000, inner)
    v2 = tf.keras.mixed_precision.LossScaleOptimizer(inner, dynamic=False, initial_scale=4)
    assert (v2.dynamic, v2.initial_scale, v2.dynamic_growth_steps) == (False, 4.0, None)
    with pytest.raises(ValueError, match="initial_scale must be given"):
        tf.keras.mixed_precision.LossScaleOptimizer(inner, dynamic=False)
    with pytest.raises(ValueError, match="not both"):
        tf.keras.mixed_precision.LossScaleOptimizer(inner, 8, initial_scale=4)
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    assert tf.keras.mixed_precision.global_policy().name == "mixed_float16"
    g = [tf.constant([8.0, -16.0]), None]
    sess = tf.Session()
    assert sess.run(opt.get_scaled_loss(tf.constant(1.5))) == 12.0
    out = opt.get_unscaled_gradients(g)
    assert out[1] is None
    np.testing.assert_array_equal(sess.run(out[0]), [1.0, -2.0])


def test_checkpoint_holds_float32_variables_under_tf_names(tmp_path):
    rng = np.random.RandomState(2)
    m = _dense_model(_w0(rng), "dynamic")
    m.train_on_batch(rng.randn(4, 3).astype(f32), rng.randn(4, 2).astype(f32))
    path = tf.train.Saver().save(K.backend.get_session(), os.path.join(str(tmp_path), "model"))
    dtypes = tf.train.load_checkpoint(path).get_variable_to_dtype_map()
    for name in ("dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias", "current_loss_scale"):
        assert np.dtype(dtypes[name]) == np.float32, name
    assert np.dtype(dtypes["good_steps"]) == np.int64


# -- the other layers -----------------------------------------------------------------------------------------

_LAYERS = {
    "concatenate": lambda L: L.Concatenate()([L.Input((3,)), L.Dense(2)(L.Input((3,)))]),
    "add": lambda L: L.Add()([L.Dense(3)(L.Input((3,))), L.Input((3,))]),
    "lstm": lambda L: L.LSTM(4)(L.Input((5, 3))),
    "gru": lambda L: L.GRU(4, return_sequences=True)(L.Input((5, 3))),
    "rnn_cells": lambda L: L.RNN([L.GRUCell(4), L.SimpleRNNCell(2)])(L.Input((5, 3))),
    "bidirectional": lambda L: L.Bidirectional(L.LSTM(2))(L.Input((5, 3))),
    "time_distributed": lambda L: L.TimeDistributed(L.Dense(2))(L.Input((5, 3))),
    "conv_lstm": lambda L: L.ConvLSTM2D(2, 2)(L.Input((3, 5, 5, 2))),
    "separable": lambda L: L.SeparableConv2D(2, 2)(L.Input((5, 5, 3))),
    "transpose": lambda L: L.Conv2DTranspose(2, 2)(L.Input((4, 4, 3))),
    "multi_head": lambda L: L.MultiHeadAttention(2, 4)(L.Input((5, 3)), L.Input((5, 3))),
    "layer_norm": lambda L: L.LayerNormalization()(L.Input((3,))),
    "pooling": lambda L: L.GlobalAveragePooling2D()(L.MaxPooling2D()(L.Input((4, 4, 3)))),
}


@pytest.mark.parametrize("name", sorted(_LAYERS))
def test_other_layers_compute_in_float16(name):
    MPX.set_policy("mixed_float16")
    out = _LAYERS[name](K.layers)
    assert out.dtype == tf.float16
    variables = tf.global_variables()
    assert {v.dtype for v in variables} <= {tf.float32}
    sess = K.backend.get_session()
    sess.run(tf.variables_initializer(variables))
    if name == "lstm":  # the orthogonal recurrent kernel is drawn in float32 (float16 has no QR)
        rk = sess.run([v for v in variables if "recurrent_kernel" in v.name][0])
        np.testing.assert_allclose(rk @ rk.T, np.eye(4), atol=1e-5)


def test_a_constraint_under_the_mixed_policy():
    """get_variable(constraint=) sets the constraint on the AutoCastVariable the creator hands
    back: it reaches the float32 variable, which the optimizer projects after each update."""
    x = np.abs(np.random.RandomState(0).randn(8, 4)).astype("float32")
    with tf.Graph().as_default():
        # a fixed scale: no step is skipped, so every one projects the kernel
        K.mixed_precision.experimental.set_policy(K.mixed_precision.experimental.Policy("mixed_float16", 128))
        try:
            m = K.Sequential([K.layers.Dense(3, kernel_constraint=K.constraints.NonNeg(), input_shape=(4,))])
            m.compile(K.optimizers.SGD(0.5), "mse")
            m.fit(x, -10 * np.ones((8, 3), "float32"), epochs=2, verbose=0)
            assert m.get_weights()[0].min() >= 0
        finally:
            K.mixed_precision.experimental.set_policy(None)


def test_infer_takes_the_first_floating_input_dtype():
    """TF 1.x's 'infer': a custom layer called first on float64 makes float64 weights."""
    class L(K.layers.Layer):
        def build(self, s):
            self.w = self.add_weight("w", [3, 2])

        def call(self, x):
            return tf.matmul(x, self.w)
    with tf.Graph().as_default():
        layer = L()
        y = layer(K.layers.Input((3,), dtype="float64"))
        assert layer.dtype == "float64" and y.dtype == tf.float64 and layer.w.dtype.base_dtype == tf.float64
        ids = L()
        assert ids.dtype is None  # not called yet
