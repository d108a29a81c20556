"""Differential tests of tf.keras.backend's functions (backend_more.py) against TensorFlow's Keras
backend (tf_keras in TF1 graph mode): each case builds the same expression in both libraries from
the same inputs and compares values (and, for the differentiable ones, gradients of a weighted
sum).  Skipped cleanly without TensorFlow / tf_keras."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)
_ENV = tfdiff

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
pytest.importorskip("tf_keras", reason="tf_keras is not installed (TF 2.16+'s Keras 2)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.timeout(300)]

_R = np.random.RandomState(7)


def _a(*s):
    return _R.uniform(-2.0, 2.0, s).astype(np.float32)


X4 = _a(2, 7, 6, 3)
X3 = _a(2, 9, 3)
X5 = _a(2, 5, 4, 6, 3)
K2 = _a(3, 3, 3, 4)
K1 = _a(3, 3, 4)
K3 = _a(2, 2, 3, 3, 2)
DK = _a(3, 3, 3, 2)
PK = _a(1, 1, 6, 5)
KT = _a(3, 3, 5, 3)
LC1 = _a(4, 6, 5)      # (out_steps (9-3)/2+1=4, 2*3, filters)
LC2 = _a(4, 12, 4)     # (2*2 outputs, 2*2*3, filters)
M = _a(4, 5)
B3 = _a(3)
IDX = np.array([[1, 0, 2], [2, 2, 0]], np.int32)

# (id, fn(K, tf, *inputs) -> tensors, inputs, differentiable)
CASES = [
    ("bias_add", lambda K, tf, x, b: K.bias_add(x, b), (X4, B3), True),
    ("bias_add_first", lambda K, tf, x, b: K.bias_add(tf.transpose(x, [0, 3, 1, 2]), b, "channels_first"),
     (X4, B3), True),
    ("bias_add_full", lambda K, tf, x, b: K.bias_add(x, b), (X3, _a(9, 3)), True),
    ("conv1d", lambda K, tf, x, k: K.conv1d(x, k, strides=2, padding="same"), (X3, K1), True),
    ("conv1d_causal", lambda K, tf, x, k: K.conv1d(x, k, padding="causal", dilation_rate=2), (X3, K1), True),
    ("conv2d", lambda K, tf, x, k: K.conv2d(x, k, strides=(2, 1), padding="valid"), (X4, K2), True),
    ("conv2d_dilated", lambda K, tf, x, k: K.conv2d(x, k, padding="same", dilation_rate=(2, 2)), (X4, K2), True),
    ("conv2d_first", lambda K, tf, x, k: K.conv2d(tf.transpose(x, [0, 3, 1, 2]), k, padding="same",
                                                   data_format="channels_first"), (X4, K2), True),
    ("conv3d", lambda K, tf, x, k: K.conv3d(x, k, strides=(1, 2, 1), padding="same"), (X5, K3), True),
    ("conv2d_transpose", lambda K, tf, x, k: K.conv2d_transpose(x, k, (2, 14, 12, 5), strides=(2, 2),
                                                                 padding="same"), (X4, KT), True),
    ("depthwise_conv2d", lambda K, tf, x, k: K.depthwise_conv2d(x, k, padding="same"), (X4, DK), True),
    ("separable_conv2d", lambda K, tf, x, d, p: K.separable_conv2d(x, d, p, padding="valid"), (X4, DK, PK), True),
    ("pool2d_max", lambda K, tf, x: K.pool2d(x, (2, 2), strides=(2, 2)), (X4,), True),
    ("pool2d_avg", lambda K, tf, x: K.pool2d(x, (3, 2), padding="same", pool_mode="avg"), (X4,), True),
    ("pool3d", lambda K, tf, x: K.pool3d(x, (2, 2, 2), strides=(2, 2, 2), pool_mode="avg"), (X5,), True),
    ("local_conv1d", lambda K, tf, x, k: K.local_conv1d(x, k, (2,), (2,)), (X3, LC1), True),
    ("local_conv2d", lambda K, tf, x, k: K.local_conv2d(x, k, (2, 2), (3, 3), (2, 2)), (X4, LC2), True),
    ("cos_sin", lambda K, tf, x: [K.cos(x), K.sin(x)], (M,), True),
    ("softsign_elu_hard_sigmoid", lambda K, tf, x: [K.softsign(x), K.elu(x), K.elu(x, 0.5), K.hard_sigmoid(x)],
     (M,), True),
    ("cumprod", lambda K, tf, x: [K.cumprod(x, axis=1), K.cumprod(x)], (M,), True),
    ("reverse", lambda K, tf, x: [K.reverse(x, 1), K.reverse(x, [0, 2])], (X3,), True),
    ("repeat_elements", lambda K, tf, x: [K.repeat_elements(x, 3, 1), K.repeat_elements(x, 2, -1)], (X3,), True),
    ("padding", lambda K, tf, x, y: [K.temporal_padding(y, (2, 1)), K.spatial_2d_padding(x, ((1, 0), (2, 3))),
                                     K.spatial_2d_padding(x, ((1, 2), (0, 1)), "channels_first")], (X4, X3), True),
    ("spatial_3d_padding", lambda K, tf, x: K.spatial_3d_padding(x, ((1, 0), (0, 2), (1, 1))), (X5,), True),
    ("resize_images", lambda K, tf, x: [K.resize_images(x, 2, 3, "channels_last"),
                                        K.resize_images(x, 2, 2, "channels_last", interpolation="bilinear")],
     (X4,), True),
    ("resize_volumes", lambda K, tf, x: K.resize_volumes(x, 2, 1, 2, "channels_last"), (X5,), True),
    ("batch_normalization", lambda K, tf, x, m, v, b, g: K.batch_normalization(x, m, v, b, g, epsilon=0.01),
     (X4, B3, np.abs(_a(3)) + 0.5, _a(3), _a(3)), False),  # (TF's fused path has no mean / var gradients)
    ("normalize_batch_in_training", lambda K, tf, x, g, b: list(K.normalize_batch_in_training(x, g, b, [0, 1, 2])),
     (X4, _a(3), _a(3)), False),
    ("normalize_batch_in_training_axes", lambda K, tf, x, g, b: list(K.normalize_batch_in_training(
        x, g, b, [0, 2], epsilon=0.01)), (X3, _a(9), _a(9)), True),
    ("arange", lambda K, tf: [K.arange(5), K.arange(2, 11, 3), K.arange(-3), K.arange(1, 4, dtype="float32")],
     (), False),
    ("in_top_k", lambda K, tf, p: K.in_top_k(p, tf.constant([1, 0, 4, 2]), 2), (M,), False),
    ("map_fold", lambda K, tf, x: [K.map_fn(lambda r: r * 2.0 + 1.0, x), K.foldl(lambda a, r: a * 0.5 + r, x),
                                   K.foldr(lambda a, r: a * 0.5 + r, x),
                                   K.foldl(lambda a, r: a + tf.reduce_sum(r), x, initializer=tf.constant(1.0))],
     (M,), True),
    ("to_dense_eye", lambda K, tf: [K.to_dense(tf.SparseTensor([[0, 1], [2, 0]], [3.0, 4.0], [3, 2])),
                                    K.eye(3) + 0.0, K.eye(4, dtype="float64") + 0.0], (), False),
    ("focal_crossentropies", lambda K, tf, t, o: [
        K.binary_focal_crossentropy(t, o, from_logits=True),
        K.binary_focal_crossentropy(t, tf.sigmoid(o), apply_class_balancing=True, alpha=0.3, gamma=1.5),
        K.categorical_focal_crossentropy(t, o, from_logits=True),
        K.categorical_focal_crossentropy(t, tf.nn.softmax(o), alpha=0.5, gamma=3.0)],
     (np.abs(_a(4, 5)) / 2.0, M), True),
    ("swish_mish", lambda K, tf, x: [tf.keras.activations.swish(x), tf.keras.activations.mish(x),
                                     tf.keras.layers.Dense(3, activation="swish", kernel_initializer="ones")(x)],
     (M,), True),
    ("ctc_label_dense_to_sparse", lambda K, tf: [tf.sparse.to_dense(K.ctc_label_dense_to_sparse(
        tf.constant(IDX), tf.constant([2, 3])))], (), False),
]


def _build(tf, fn, values, diff):
    g = tf.Graph()
    with g.as_default():
        xs = [tf.placeholder(tf.as_dtype(v.dtype), v.shape) for v in values]
        K = tf.keras.backend
        out = fn(K, tf, *xs)
        outs = out if isinstance(out, (list, tuple)) else [out]
        grads = []
        if values and diff:
            r = np.random.RandomState(3)
            loss = tf.add_n([tf.reduce_sum(tf.cast(o, tf.float32) * r.uniform(-1, 1, o.shape.as_list()).astype(
                np.float32)) for o in outs if o.dtype in (tf.float32,)])
            grads = [gr for gr in tf.gradients(loss, xs) if gr is not None]
        with tf.Session(graph=g) as s:
            s.run(tf.global_variables_initializer())
            feed = dict(zip(xs, values))
            return s.run(list(outs), feed), s.run(grads, feed)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_backend_function_matches_tensorflow(case):
    _, fn, values, diff = case
    tf_out, tf_gr = _build(tft, fn, values, diff)
    cf_out, cf_gr = _build(cft, fn, values, diff)
    assert len(cf_out) == len(tf_out)
    for c, t in zip(cf_out, tf_out):
        assert np.shape(c) == np.shape(t)
        assert np.asarray(c).dtype == np.asarray(t).dtype
        np.testing.assert_allclose(c, t, rtol=1e-4, atol=1e-5)
    if diff:
        assert len(cf_gr) == len(tf_gr)
        for c, t in zip(cf_gr, tf_gr):
            np.testing.assert_allclose(c, t, rtol=1e-4, atol=1e-4)


def _softmax(a):
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_ctc_batch_cost_and_decode_match():
    r = np.random.RandomState(4)
    y_pred = _softmax(r.randn(3, 8, 5)).astype(np.float32)
    labels = np.array([[1, 2, 1, 0], [3, 3, 0, 0], [0, 2, 3, 1]], np.int32)
    in_len = np.array([[8], [6], [7]], np.int32)
    lab_len = np.array([[3], [2], [4]], np.int32)
    res = {}
    for tf in (tft, cft):
        with tf.Graph().as_default():
            K = tf.keras.backend
            yp = tf.placeholder(tf.float32, y_pred.shape)
            cost = K.ctc_batch_cost(tf.constant(labels), yp, tf.constant(in_len), tf.constant(lab_len))
            g = tf.gradients(tf.reduce_sum(cost), yp)[0]
            greedy, lp = K.ctc_decode(yp, tf.constant(in_len[:, 0]))
            beam, blp = K.ctc_decode(yp, tf.constant(in_len[:, 0]), greedy=False, beam_width=10, top_paths=2)
            with tf.Session() as s:
                res[tf] = s.run([cost, g, greedy[0], lp, beam[0], beam[1], blp], {yp: y_pred})
    for i, (c, t) in enumerate(zip(res[cft], res[tft])):
        if i in (2, 4, 5):
            # decoded paths: TF 1.15 pads them to the longest one (collflow's), tf_keras 2.x to the step count
            assert (t[:, c.shape[1]:] == -1).all()
            t = t[:, :c.shape[1]]
        assert np.shape(c) == np.shape(t)
        np.testing.assert_allclose(c, t, rtol=1e-4, atol=1e-4)


def test_rnn_loop_matches():
    r = np.random.RandomState(5)
    x = r.randn(2, 5, 3).astype(np.float32)
    w = r.randn(3, 4).astype(np.float32) * 0.5
    u = r.randn(4, 4).astype(np.float32) * 0.5
    mask = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]], bool)
    res = {}
    for tf in (tft, cft):
        with tf.Graph().as_default():
            K = tf.keras.backend
            xi = tf.placeholder(tf.float32, x.shape)

            def step(inp, states):
                h = tf.tanh(tf.matmul(inp, w) + tf.matmul(states[0], u))
                return h, [h]
            h0 = tf.zeros([2, 4])
            outs = []
            for kw in (dict(), dict(go_backwards=True), dict(mask=tf.constant(mask)),
                       dict(mask=tf.constant(mask), zero_output_for_mask=True), dict(unroll=True)):
                last, seq, states = K.rnn(step, xi, [h0], **kw)
                outs += [last, seq, states[0]]
            gx = tf.gradients(tf.add_n([tf.reduce_sum(o) for o in outs]), xi)[0]
            with tf.Session() as s:
                res[tf] = s.run(outs + [gx], {xi: x})
    for c, t in zip(res[cft], res[tft]):
        np.testing.assert_allclose(c, t, rtol=1e-5, atol=1e-5)


def test_variables_updates_and_helpers():
    res = {}
    for tf in (tft, cft):
        with tf.Graph().as_default():
            K = tf.keras.backend
            v = K.variable(np.array([1.0, 2.0, 3.0], np.float32), name="v")
            u1, u2, u3 = K.update(v, [5.0, 6.0, 7.0]), K.update_add(v, [1.0, 1.0, 1.0]), K.update_sub(v, [0.5] * 3)
            s = K.get_session()
            vals = [s.run(u1), s.run(u2), s.run(u3)]
            extra = [K.dtype(v), K.count_params(v), K.is_sparse(tf.SparseTensor([[0]], [1.0], [2])),
                     K.is_sparse(v), K.backend(), K.is_keras_tensor(tf.keras.Input((3,))),
                     K.is_keras_tensor(tf.constant(1.0))]
            with K.learning_phase_scope(1):
                ph = K.learning_phase()
                extra.append(int(s.run(ph) if not isinstance(ph, (int, bool)) else ph))
            extra.append(K.get_uid("zz"))
            K.reset_uids()
            extra.append(K.get_uid("zz"))
            res[tf] = (vals, extra)
    for c, t in zip(res[cft][0], res[tft][0]):
        np.testing.assert_allclose(c, t, rtol=1e-6)
    assert res[cft][1] == res[tft][1]
    with pytest.raises(ValueError):
        cft.keras.backend.is_keras_tensor(np.zeros(2))


def test_moving_average_update_is_zero_debiased_as_tf1s():
    """TF 1.15's Keras (TF1 behaviour) zero-debiases; tf_keras 2.x under tf.compat.v1 takes its TF2
    branch (a plain x -= (x - value) * (1 - momentum)), so this checks TF 1.15's rule by hand."""
    with cft.Graph().as_default():
        K = cft.keras.backend
        a = K.variable(np.array([4.0, 4.0], np.float32), name="a")
        ma = K.moving_average_update(a, cft.constant([2.0, 0.0]), 0.9)
        s = K.get_session()
        got = [s.run(ma) for _ in range(3)]
    biased, want = np.zeros(2), []
    for t in range(1, 4):
        biased = 0.9 * biased + 0.1 * np.array([2.0, 0.0])
        want.append(biased / (1 - 0.9 ** t))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_random_functions_shapes_and_statistics():
    with cft.Graph().as_default():
        K = cft.keras.backend
        b = K.random_binomial((400, 50), p=0.3, seed=1)
        bb = K.random_bernoulli((10,), p=0.5, seed=2)
        t = K.truncated_normal((400, 50), mean=1.0, stddev=2.0, seed=3)
        d = K.dropout(cft.ones((400, 50)), 0.25, seed=4)
        nv = K.random_normal_variable((300, 40), 0.5, 2.0, seed=5)
        uv = K.random_uniform_variable((300, 40), -1.0, 3.0, seed=6)
        s = K.get_session()
        bv, bbv, tv, dv, nvv, uvv = s.run([b, bb, t, d, nv, uv])
    assert set(np.unique(bv)) <= {0.0, 1.0} and abs(bv.mean() - 0.3) < 0.03 and bbv.shape == (10,)
    assert tv.min() >= -3.0 and tv.max() <= 5.0 and abs(tv.mean() - 1.0) < 0.1
    assert np.all(np.isclose(dv, 0.0) | np.isclose(dv, 1 / 0.75)) and abs((dv == 0).mean() - 0.25) < 0.03
    assert abs(nvv.mean() - 0.5) < 0.1 and abs(nvv.std() - 2.0) < 0.1
    assert uvv.min() >= -1.0 and uvv.max() <= 3.0 and abs(uvv.mean() - 1.0) < 0.1


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_radial_constraint_matches(n):
    w = _R.uniform(-1, 1, (n, n, 2, 3)).astype(np.float32)
    res = {}
    for tf in (tft, cft):
        with tf.Graph().as_default():
            c = tf.keras.constraints.RadialConstraint()
            out = c(tf.constant(w))
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())  # (tf_keras's even case makes a K.zeros variable)
                res[tf] = s.run(out)
    np.testing.assert_allclose(res[cft], res[tft])
    assert cft.keras.constraints.serialize(cft.keras.constraints.RadialConstraint()) == {
        "class_name": "RadialConstraint", "config": {}}
