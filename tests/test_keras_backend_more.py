"""By-hand tests (no TensorFlow) of tf.keras.backend's functions in backend_more.py, of
tf.keras.regularizers (classes, functions, get / serialize / deserialize, layer configs) and of
activations / initializers serialize / deserialize, against NumPy references."""
import json

import numpy as np
import pytest

import collflow.compat.v1 as tf

K = tf.keras.backend


def _run(*ts, feed=None):
    return K.get_session().run(list(ts), feed)


@pytest.fixture(autouse=True)
def _graph():
    with tf.Graph().as_default():
        yield


def test_elementwise_helpers():
    x = np.array([[-3.0, -0.5, 0.0, 0.7, 4.0]], np.float32)
    hs, el, el2, ss, c, s = _run(K.hard_sigmoid(x), K.elu(x), K.elu(x, 0.5), K.softsign(x), K.cos(x), K.sin(x))
    np.testing.assert_allclose(hs, np.clip(0.2 * x + 0.5, 0, 1), rtol=1e-6)
    np.testing.assert_allclose(el, np.where(x > 0, x, np.expm1(x)), rtol=1e-6)
    np.testing.assert_allclose(el2, np.where(x > 0, x, 0.5 * np.expm1(x)), rtol=1e-6)
    np.testing.assert_allclose(ss, x / (1 + np.abs(x)), rtol=1e-6)
    np.testing.assert_allclose(c, np.cos(x), rtol=1e-6)
    np.testing.assert_allclose(s, np.sin(x), rtol=1e-6, atol=1e-7)


def test_shapes_and_arange():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    r1, r2, rev, cp, tp = _run(K.repeat_elements(x, 2, 1), K.repeat_elements(x, 3, -1), K.reverse(x, [0, 2]),
                               K.cumprod(x + 1.0, axis=1), K.temporal_padding(x, (1, 2)))
    np.testing.assert_array_equal(r1, np.repeat(x, 2, axis=1))
    np.testing.assert_array_equal(r2, np.repeat(x, 3, axis=2))
    np.testing.assert_array_equal(rev, x[::-1, :, ::-1])
    np.testing.assert_allclose(cp, np.cumprod(x + 1, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(tp, np.pad(x, [(0, 0), (1, 2), (0, 0)]))
    assert K.int_shape(K.repeat_elements(x, 2, 1)) == (2, 6, 4)
    a, b, c, d = _run(K.arange(5), K.arange(2, 9, 3), K.arange(-2), K.arange(1, 3, dtype="float32"))
    np.testing.assert_array_equal(a, np.arange(5))
    np.testing.assert_array_equal(b, [2, 5, 8])
    assert c.size == 0 and d.dtype == np.float32
    assert K.count_params(K.variable(np.zeros((3, 4)))) == 12 and K.dtype(x + K.constant(0.0)) == "float32"
    assert K.backend() == "tensorflow"


def test_padding_and_resize():
    x = np.arange(2 * 3 * 2 * 1, dtype=np.float32).reshape(2, 3, 2, 1)
    p, pf, nn = _run(K.spatial_2d_padding(x, ((1, 0), (0, 2))),
                     K.spatial_2d_padding(x, ((1, 0), (0, 2)), data_format="channels_first"),
                     K.resize_images(x, 2, 3, "channels_last"))
    np.testing.assert_array_equal(p, np.pad(x, [(0, 0), (1, 0), (0, 2), (0, 0)]))
    np.testing.assert_array_equal(pf, np.pad(x, [(0, 0), (0, 0), (1, 0), (0, 2)]))
    np.testing.assert_array_equal(nn, np.repeat(np.repeat(x, 2, 1), 3, 2))
    v = np.arange(2 * 2 * 2 * 2 * 1, dtype=np.float32).reshape(2, 2, 2, 2, 1)
    (rv,) = _run(K.resize_volumes(v, 2, 1, 3, "channels_last"))
    np.testing.assert_array_equal(rv, np.repeat(np.repeat(v, 2, 1), 3, 3))


def _np_conv1d(x, k, stride):
    steps = (x.shape[1] - k.shape[0]) // stride + 1
    return np.stack([np.einsum("bwi,wio->bo", x[:, i * stride:i * stride + k.shape[0]], k) for i in range(steps)], 1)


def test_conv_pool_and_local_conv():
    r = np.random.RandomState(0)
    x = r.randn(2, 9, 3).astype(np.float32)
    k = r.randn(3, 3, 4).astype(np.float32)
    lk = r.randn(4, 6, 5).astype(np.float32)
    c, causal, lc = _run(K.conv1d(x, k, strides=2), K.conv1d(x, k, padding="causal"), K.local_conv1d(x, lk, 2, 2))
    np.testing.assert_allclose(c, _np_conv1d(x, k, 2), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(causal, _np_conv1d(np.pad(x, [(0, 0), (2, 0), (0, 0)]), k, 1), rtol=1e-5, atol=1e-5)
    want = np.stack([x[:, 2 * i:2 * i + 2].reshape(2, -1) @ lk[i] for i in range(4)], 1)
    np.testing.assert_allclose(lc, want, rtol=1e-5, atol=1e-5)
    img = r.randn(1, 4, 4, 2).astype(np.float32)
    mx, av = _run(K.pool2d(img, (2, 2), (2, 2)), K.pool2d(img, (2, 2), (2, 2), pool_mode="avg"))
    blocks = img.reshape(1, 2, 2, 2, 2, 2).transpose(0, 1, 3, 2, 4, 5).reshape(1, 2, 2, 4, 2)
    np.testing.assert_allclose(mx, blocks.max(3), rtol=1e-6)
    np.testing.assert_allclose(av, blocks.mean(3), rtol=1e-6)
    b = np.array([1.0, -2.0], np.float32)
    (ba,) = _run(K.bias_add(img, b))
    np.testing.assert_allclose(ba, img + b, rtol=1e-6)
    with pytest.raises(ValueError):
        K.pool2d(img, (2, 2), pool_mode="min")
    with pytest.raises(ValueError):
        K.conv2d(img, np.zeros((2, 2, 2, 1), np.float32), padding="full")


def test_batch_normalization_helpers():
    r = np.random.RandomState(1)
    x = r.randn(5, 3).astype(np.float32)
    g, b = np.array([1.0, 2.0, 0.5], np.float32), np.array([0.0, 1.0, -1.0], np.float32)
    normed, mean, var = _run(*K.normalize_batch_in_training(x, g, b, [0]))
    np.testing.assert_allclose(mean, x.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, x.var(0), rtol=1e-5)
    np.testing.assert_allclose(normed, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3) * g + b, rtol=1e-4, atol=1e-5)
    (bn,) = _run(K.batch_normalization(x, x.mean(0), x.var(0), b, g, epsilon=0.01))
    np.testing.assert_allclose(bn, (x - x.mean(0)) / np.sqrt(x.var(0) + 0.01) * g + b, rtol=1e-4, atol=1e-5)


def test_updates_and_variables():
    v = K.variable(np.array([1.0, 2.0], np.float32))
    a, = _run(K.update_add(v, [1.0, 1.0]))
    b, = _run(K.update_sub(v, [0.5, 0.5]))
    c, = _run(K.update(v, [7.0, 8.0]))
    np.testing.assert_array_equal([a, b, c], [[2, 3], [1.5, 2.5], [7, 8]])
    e = K.eye(3)
    assert isinstance(e, tf.Variable)
    np.testing.assert_array_equal(K.get_value(e), np.eye(3))


def test_ctc_label_dense_to_sparse_and_to_dense():
    labels = np.array([[1, 2, 3, 0], [4, 0, 0, 0]], np.int32)
    sp = K.ctc_label_dense_to_sparse(tf.constant(labels), tf.constant([3, 1]))
    assert K.is_sparse(sp) and not K.is_sparse(tf.constant(1.0))
    idx, vals, dense = _run(sp.indices, sp.values, K.to_dense(sp))
    np.testing.assert_array_equal(idx, [[0, 0], [0, 1], [0, 2], [1, 0]])
    np.testing.assert_array_equal(vals, [1, 2, 3, 4])
    np.testing.assert_array_equal(dense, [[1, 2, 3, 0], [4, 0, 0, 0]])


def test_rnn_loop_by_hand():
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    mask = np.array([[True, False, True], [True, True, True]])

    def step(inp, states):
        h = states[0] + tf.reduce_sum(inp, axis=1, keepdims=True)
        return h * 2.0, [h]
    last, seq, st = K.rnn(step, tf.constant(x), [tf.zeros([2, 1])], mask=tf.constant(mask))
    lv, sv, hv = _run(last, seq, st[0])
    sums = x.sum(2)
    h, outs, prev = np.zeros(2), [], np.zeros(2)
    for t in range(3):
        new = h + sums[:, t]
        h = np.where(mask[:, t], new, h)
        prev = np.where(mask[:, t], 2 * new, prev)
        outs.append(prev)
    np.testing.assert_allclose(sv[..., 0], np.stack(outs, 1))
    np.testing.assert_allclose(lv[:, 0], outs[-1])
    np.testing.assert_allclose(hv[:, 0], h)
    with pytest.raises(ValueError):
        K.rnn(step, tf.placeholder(tf.float32, [2, None, 2]), [tf.zeros([2, 1])])


def test_learning_phase_scope_and_uids():
    with K.learning_phase_scope(1):
        assert K.learning_phase() is True
    ph = K.learning_phase()
    assert not isinstance(ph, bool)
    assert K.get_uid("q") == 1 and K.get_uid("q") == 2
    K.reset_uids()
    assert K.get_uid("q") == 1
    with pytest.raises(ValueError):
        with K.learning_phase_scope(2):
            pass


def test_set_image_data_format():
    assert K.image_data_format() == "channels_last"
    K.set_image_data_format("channels_first")
    try:
        assert K.image_data_format() == "channels_first"
    finally:
        K.set_image_data_format("channels_last")
    with pytest.raises(ValueError):
        K.set_image_data_format("nchw")


def test_is_keras_tensor():
    assert K.is_keras_tensor(tf.keras.Input((3,)))
    assert K.is_keras_tensor(tf.keras.layers.Dense(2)(tf.keras.Input((3,))))
    assert not K.is_keras_tensor(tf.constant(1.0))
    with pytest.raises(ValueError):
        K.is_keras_tensor(3)


# -- regularizers ---------------------------------------------------------------------------------

def test_regularizer_classes_and_functions():
    R = tf.keras.regularizers
    w = np.array([[1.0, -2.0], [0.5, 0.0]], np.float32)
    v = _run(R.L1L2(0.1, 0.2)(w), R.L1(0.3)(w), R.L2(0.4)(w), R.l1(0.3)(w), R.l2(0.4)(w), R.l1_l2()(w))
    l1, l2 = np.abs(w).sum(), (w ** 2).sum()
    np.testing.assert_allclose(v, [0.1 * l1 + 0.2 * l2, 0.3 * l1, 0.4 * l2, 0.3 * l1, 0.4 * l2, 0.01 * (l1 + l2)],
                               rtol=1e-6)
    assert type(R.l2(0.4)) is R.L1L2  # TF 1.15's functions give L1L2
    assert R.serialize(R.L1L2(0.5, 0.25)) == {"class_name": "L1L2", "config": {"l1": 0.5, "l2": 0.25}}
    assert R.serialize(R.L1L2(0.003))["config"]["l1"] == float(np.float32(0.003))
    again = R.deserialize({"class_name": "L2", "config": {"l2": 0.5}})
    assert type(again) is R.L2 and again.l2 == 0.5
    assert type(R.get("l1")) is R.L1 and R.get(None) is None
    fn = lambda x: tf.reduce_sum(x)  # noqa: E731
    assert R.get(fn) is fn
    with pytest.raises(ValueError):
        R.get("l3")
    assert isinstance(R.L1L2(), R.Regularizer)


class _Scaled(tf.keras.regularizers.Regularizer):
    def __init__(self, k=1.0):
        self.k = k

    def __call__(self, x):
        return self.k * tf.reduce_sum(tf.abs(x))

    def get_config(self):
        return {"k": self.k}


def test_regularizers_in_layer_configs_round_trip(tmp_path):
    R = tf.keras.regularizers
    m = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(2,), kernel_regularizer=R.L1L2(0.01, 0.02),
                                                   bias_regularizer=_Scaled(0.5))])
    cfg = json.loads(m.to_json())["config"]["layers"][-1]["config"]
    assert cfg["kernel_regularizer"] == {"class_name": "L1L2", "config": {"l1": float(np.float32(0.01)),
                                                                          "l2": float(np.float32(0.02))}}
    assert cfg["bias_regularizer"] == {"class_name": "_Scaled", "config": {"k": 0.5}}
    m.compile("sgd", "mse")
    path = str(tmp_path / "m.h5")
    m.save(path)
    want, weights = _run(*m.losses), m.get_weights()
    with tf.Graph().as_default():
        m2 = tf.keras.models.load_model(path, custom_objects={"_Scaled": _Scaled})
        cfg2 = json.loads(m2.to_json())["config"]["layers"][-1]["config"]
        assert cfg2["kernel_regularizer"] == cfg["kernel_regularizer"]
        assert cfg2["bias_regularizer"] == cfg["bias_regularizer"]
        m2.set_weights(weights)
        np.testing.assert_allclose(sorted(K.get_session().run(m2.losses)), sorted(want), rtol=1e-6)


# -- activations / initializers --------------------------------------------------------------------

def test_activation_and_initializer_serialization():
    A, I = tf.keras.activations, tf.keras.initializers
    assert A.serialize(A.get("relu")) == "relu" and A.deserialize("tanh") is A.get("tanh")
    with pytest.raises(ValueError):
        A.deserialize("nope")
    s = I.serialize(I.RandomNormal(stddev=0.2, seed=3))
    assert s["class_name"] == "RandomNormal" and s["config"]["stddev"] == 0.2 and s["config"]["seed"] == 3
    again = I.deserialize(s)
    assert type(again) is I.RandomNormal and again.get_config()["stddev"] == 0.2
    assert type(I.deserialize("glorot_uniform")) is I.GlorotUniform
    assert type(I.deserialize({"class_name": "Zeros", "config": {}})) is I.Zeros
    with pytest.raises(ValueError):
        I.deserialize({"class_name": "Nope", "config": {}})


def test_focal_crossentropies_and_swish_mish():
    t = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], np.float32)
    logits = np.array([[2.0, -1.0, 0.5], [0.3, 0.2, -2.0]], np.float32)
    p = 1 / (1 + np.exp(-logits))
    bce = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    p_t = t * p + (1 - t) * (1 - p)
    sm = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    b1, b2, c1 = _run(K.binary_focal_crossentropy(t, logits, from_logits=True),
                      K.binary_focal_crossentropy(t, logits, apply_class_balancing=True, from_logits=True),
                      K.categorical_focal_crossentropy(t, logits, from_logits=True))
    np.testing.assert_allclose(b1, (1 - p_t) ** 2 * bce, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(b2, (t * 0.25 + (1 - t) * 0.75) * (1 - p_t) ** 2 * bce, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(c1, (0.25 * (1 - sm) ** 2 * -t * np.log(sm)).sum(1), rtol=1e-4, atol=1e-6)
    A = tf.keras.activations
    x = np.linspace(-3, 3, 7).astype(np.float32)
    sw, mi = _run(A.swish(tf.constant(x)), A.mish(tf.constant(x)))
    np.testing.assert_allclose(sw, x / (1 + np.exp(-x)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mi, x * np.tanh(np.log1p(np.exp(x))), rtol=1e-5, atol=1e-6)
    assert A.serialize(A.swish) == "swish" and A.deserialize("mish") is A.mish


def test_radial_constraint_by_hand():
    C = tf.keras.constraints
    w3 = np.arange(9 * 2, dtype=np.float32).reshape(3, 3, 2, 1)
    w4 = np.arange(16 * 2, dtype=np.float32).reshape(4, 4, 1, 2)
    r3, r4 = _run(C.RadialConstraint()(w3), C.radial_constraint()(w4))
    ring3 = np.ones((3, 3), bool)
    ring3[1, 1] = False
    np.testing.assert_array_equal(r3[~ring3], w3[0, 0][None])  # the centre: tf_keras's diagonal entry 0
    np.testing.assert_array_equal(r3[ring3], np.broadcast_to(w3[1, 1], (8, 2, 1)))
    inner = np.zeros((4, 4), bool)
    inner[1:3, 1:3] = True
    np.testing.assert_array_equal(r4[inner], np.broadcast_to(w4[1, 1], (4, 1, 2)))
    np.testing.assert_array_equal(r4[~inner], np.broadcast_to(w4[3, 3], (12, 1, 2)))
    with pytest.raises(ValueError):
        C.RadialConstraint()(np.zeros((3, 3), np.float32))
    m = tf.keras.Sequential([tf.keras.layers.Conv2D(2, 3, input_shape=(5, 5, 1),
                                                    kernel_constraint=C.RadialConstraint())])
    cfg = json.loads(m.to_json())
    again = tf.keras.models.model_from_json(json.dumps(cfg))
    assert json.loads(again.to_json())["config"]["layers"][-1]["config"]["kernel_constraint"] == {
        "class_name": "RadialConstraint", "config": {}}
