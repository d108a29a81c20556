"""Differential tests against real TensorFlow 1.x (graph mode): the same graph built in both,
fed the same data, values and gradients compared (float32, 1e-5).

Skipped cleanly without TensorFlow (`pip install -e ".[conformance]"`; TF1's RNN cells also
need `pip install --no-deps tf_keras`).  Each case is written once against TF1's API as
`fn(tf, *inputs)`, with `tf` either `tensorflow.compat.v1` or `collflow.compat.v1`.
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfdiff import check_case  # noqa: E402  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

# (id, fn(tf, *xs) -> tensor or list, input specs): see tfdiff.py
CASES = [
    ("add", lambda tf, a, b: a + b, [(3, 4), (4,)]),
    ("sub", lambda tf, a, b: a - b, [(3, 4), (3, 1)]),
    ("mul", lambda tf, a, b: a * b, [(3, 4), (3, 4)]),
    ("div", lambda tf, a, b: a / b, [(3, 4), ("pos", 3, 4)]),
    ("pow", lambda tf, a, b: tf.pow(a, b), [("pos", 3, 4), (3, 4)]),
    ("maximum", lambda tf, a, b: tf.maximum(a, b), [(5,), (5,)]),
    ("minimum", lambda tf, a, b: tf.minimum(a, b), [(5,), (5,)]),
    ("squared_difference", lambda tf, a, b: tf.squared_difference(a, b), [(2, 3), (2, 3)]),
    ("exp", lambda tf, a: tf.exp(a), [(6,)]),
    ("log", lambda tf, a: tf.log(a), [("pos", 6)]),
    ("log1p", lambda tf, a: tf.log1p(a), [("pos", 6)]),
    ("sqrt", lambda tf, a: tf.sqrt(a), [("pos", 6)]),
    ("rsqrt", lambda tf, a: tf.rsqrt(a), [("pos", 6)]),
    ("square", lambda tf, a: tf.square(a), [(6,)]),
    ("abs", lambda tf, a: tf.abs(a), [(6,)]),
    ("sin_cos", lambda tf, a: tf.sin(a) * tf.cos(a), [(6,)]),
    ("tanh", lambda tf, a: tf.tanh(a), [(6,)]),
    ("sigmoid", lambda tf, a: tf.sigmoid(a), [(6,)]),
    ("reciprocal", lambda tf, a: tf.reciprocal(a), [("pos", 6)]),
    ("relu", lambda tf, a: tf.nn.relu(a), [(3, 5)]),
    ("softmax", lambda tf, a: tf.nn.softmax(a), [(3, 5)]),
    ("log_softmax", lambda tf, a: tf.nn.log_softmax(a), [(3, 5)]),
    ("l2_normalize", lambda tf, a: tf.nn.l2_normalize(a, 1), [(3, 5)]),
    ("matmul", lambda tf, a, b: tf.matmul(a, b), [(3, 4), (4, 5)]),
    ("matmul_tt", lambda tf, a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True), [(4, 3), (5, 4)]),
    ("reduce_sum", lambda tf, a: [tf.reduce_sum(a), tf.reduce_sum(a, 1, keepdims=True)], [(3, 4)]),
    ("reduce_mean", lambda tf, a: [tf.reduce_mean(a, 0), tf.reduce_mean(a)], [(3, 4)]),
    ("reduce_max", lambda tf, a: tf.reduce_max(a, 1), [(3, 4)]),
    ("reduce_min", lambda tf, a: tf.reduce_min(a, 0), [(3, 4)]),
    ("reduce_prod", lambda tf, a: tf.reduce_prod(a, 1), [("pos", 3, 4)]),
    ("reduce_logsumexp", lambda tf, a: tf.reduce_logsumexp(a, 1), [(3, 4)]),
    ("reshape_transpose", lambda tf, a: tf.transpose(tf.reshape(a, [4, 3]), [1, 0]), [(3, 4)]),
    ("concat_split", lambda tf, a, b: tf.split(tf.concat([a, b], 1), [2, 5], 1), [(2, 3), (2, 4)]),
    ("stack_unstack", lambda tf, a, b: tf.unstack(tf.stack([a, b], 1), axis=0), [(2, 3), (2, 3)]),
    ("slice", lambda tf, a: tf.slice(a, [1, 0], [2, 3]), [(3, 4)]),
    ("getitem", lambda tf, a: a[1:, ::2] * 2.0, [(3, 4)]),
    ("gather", lambda tf, a: tf.gather(a, [2, 0, 2]), [(3, 4)]),
    ("gather_axis1", lambda tf, a: tf.gather(a, [1, 3], axis=1), [(3, 4)]),
    ("tile", lambda tf, a: tf.tile(a, [2, 3]), [(2, 2)]),
    ("pad", lambda tf, a: tf.pad(a, [[1, 0], [2, 1]]), [(2, 3)]),
    ("expand_squeeze", lambda tf, a: tf.squeeze(tf.expand_dims(a, 1), [1]), [(3, 4)]),
    ("reverse", lambda tf, a: tf.reverse(a, [1]), [(3, 4)]),
    ("where", lambda tf, a, b: tf.where(a > b, a * 2.0, b), [(3, 4), (3, 4)]),
    ("clip_by_value", lambda tf, a: tf.clip_by_value(a, -0.5, 0.7), [(3, 4)]),
    ("clip_by_norm", lambda tf, a: tf.clip_by_norm(a, 1.0), [(3, 4)]),
    ("norm", lambda tf, a: tf.norm(a), [(3, 4)]),
    ("cumsum", lambda tf, a: tf.cumsum(a, axis=1), [(3, 4)]),
    ("cumsum_exclusive_reverse", lambda tf, a: tf.cumsum(a, axis=0, exclusive=True, reverse=True), [(3, 4)]),
    ("cumprod", lambda tf, a: tf.cumprod(a, axis=1, exclusive=True), [("pos", 3, 4)]),
    ("bias_add", lambda tf, a, b: tf.nn.bias_add(a, b), [(2, 3, 4), (4,)]),
    ("conv2d_same", lambda tf, a, w: tf.nn.conv2d(a, w, [1, 1, 1, 1], "SAME"), [(2, 5, 5, 3), (3, 3, 3, 4)]),
    ("conv2d_valid_stride", lambda tf, a, w: tf.nn.conv2d(a, w, [1, 2, 2, 1], "VALID"), [(2, 7, 7, 2), (3, 3, 2, 3)]),
    ("max_pool", lambda tf, a: tf.nn.max_pool(a, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"), [(2, 5, 5, 3)]),
    ("avg_pool", lambda tf, a: tf.nn.avg_pool(a, [1, 3, 3, 1], [1, 2, 2, 1], "VALID"), [(2, 7, 7, 2)]),
    ("l2_loss", lambda tf, a: tf.nn.l2_loss(a), [(3, 4)]),
    ("moments", lambda tf, a: list(tf.nn.moments(a, [0])), [(5, 3)]),
    ("batch_normalization", lambda tf, a, m, v: tf.nn.batch_normalization(a, m, v, 0.1, 2.0, 1e-3),
     [(4, 3), (3,), ("pos", 3)]),
    ("softmax_xent", lambda tf, a, b: tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.nn.softmax(b), logits=a),
     [(4, 5), (4, 5)]),
    ("sigmoid_xent", lambda tf, a, b: tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.sigmoid(b), logits=a),
     [(4, 5), (4, 5)]),
    # a class axis other than the last: moved last, as TF does (gradients to labels too)
    ("softmax_xent_axis0", lambda tf, a, b: tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=tf.nn.softmax(b, axis=0), logits=a, axis=0), [(4, 3, 2), (4, 3, 2)]),
    ("softmax_xent_dim1", lambda tf, a, b: tf.nn.softmax_cross_entropy_with_logits(
        labels=tf.nn.softmax(b, axis=1), logits=a, dim=1), [(2, 5, 3), (2, 5, 3)]),
    ("sparse_softmax_xent", lambda tf, a: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.constant([0, 4, 2, 1]), logits=a), [(4, 5)]),
    ("embedding_lookup", lambda tf, a: tf.nn.embedding_lookup(a, [[1, 2], [2, 0]]), [(4, 3)]),
    ("top_k", lambda tf, a: tf.nn.top_k(a, 2)[0], [(3, 6)]),
    ("losses_mse", lambda tf, a, b: tf.losses.mean_squared_error(b, a), [(4, 3), (4, 3)]),
    ("losses_huber", lambda tf, a, b: tf.losses.huber_loss(b, a, delta=0.5), [(4, 3), (4, 3)]),
    ("losses_absolute", lambda tf, a, b: tf.losses.absolute_difference(b, a), [(4, 3), (4, 3)]),
    ("losses_log", lambda tf, a, b: tf.losses.log_loss(tf.sigmoid(b), tf.sigmoid(a)), [(4, 3), (4, 3)]),
    ("losses_hinge", lambda tf, a, b: tf.losses.hinge_loss(tf.cast(b > 0.0, tf.float32), a), [(4, 3), (4, 3)]),
    ("losses_softmax_smoothing", lambda tf, a, b: tf.losses.softmax_cross_entropy(
        tf.one_hot(tf.argmax(b, 1), 5), a, label_smoothing=0.1), [(4, 5), (4, 5)]),
    ("losses_sigmoid_weights", lambda tf, a, b: tf.losses.sigmoid_cross_entropy(
        tf.cast(b > 0.0, tf.float32), a, weights=tf.constant([[1.0], [0.0], [2.0], [1.0]])), [(4, 3), (4, 3)]),
    ("losses_sparse_softmax", lambda tf, a: tf.losses.sparse_softmax_cross_entropy(tf.constant([1, 0, 3]), a),
     [(3, 4)]),
    # control flow: the TF1-fidelity cases
    ("while_nested_capture", lambda tf, x: tf.while_loop(
        lambda i, acc: i < 4,
        lambda i, acc: (i + 1, acc + x * tf.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, a + x * tf.cast(j, tf.float32)),
                                                       [0, tf.zeros_like(x)])[1]),
        [0, tf.zeros_like(x)])[1], [(3,)]),
    ("cond_in_while", lambda tf, v, w: tf.while_loop(
        lambda i, u: i < 4,
        lambda i, u: (i + 1, tf.cond(tf.equal(i % 2, 0), lambda: u * w, lambda: tf.sin(u) + w)), [0, v])[1],
     [(3,), (3,)]),
    ("while_max_iterations", lambda tf, a, w: tf.while_loop(lambda i, u: i < 100, lambda i, u: (i + 1, tf.sin(u) * w),
                                                           [0, a], maximum_iterations=3)[1], [(3,), (3,)]),
    ("scan", lambda tf, a: tf.scan(lambda acc, x: acc * 0.5 + tf.tanh(x), a), [(5, 3)]),
    ("map_fn", lambda tf, a: tf.map_fn(lambda r: tf.reduce_sum(r * r), a), [(4, 3)]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_tensorflow(case):
    check_case(case, tft, cft)


# -- optimizers: one step each from the same start ----------------------------------------------------

OPTIMIZERS = [
    ("sgd", lambda tf: tf.train.GradientDescentOptimizer(0.1)),
    ("momentum", lambda tf: tf.train.MomentumOptimizer(0.1, 0.9)),
    ("nesterov", lambda tf: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True)),
    ("adam", lambda tf: tf.train.AdamOptimizer(0.01)),
    ("adagrad", lambda tf: tf.train.AdagradOptimizer(0.1)),
    ("rmsprop", lambda tf: tf.train.RMSPropOptimizer(0.01)),
    ("rmsprop_momentum_centered", lambda tf: tf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True)),
    ("adadelta", lambda tf: tf.train.AdadeltaOptimizer(1.0, rho=0.9)),
    ("ftrl", lambda tf: tf.train.FtrlOptimizer(0.1)),
    ("ftrl_l1_l2_power", lambda tf: tf.train.FtrlOptimizer(0.2, learning_rate_power=-0.7, l1_regularization_strength=0.05,
                                                           l2_regularization_strength=0.1)),
    ("ftrl_shrinkage_beta", lambda tf: tf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=0.05, beta=0.5,
                                                              initial_accumulator_value=0.5)),
]


@pytest.mark.parametrize("opt", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_optimizer_steps_match_tensorflow(opt):
    name, make = opt
    r = np.random.default_rng(3)

    def _rand(r, *s):
        return r.uniform(-2.0, 2.0, s).astype(np.float32)
    w0, x0 = _rand(r, 4, 3), _rand(r, 5, 4)
    emb0 = _rand(r, 6, 3)

    def run(tf):
        g = tf.Graph()
        with g.as_default():
            w = tf.Variable(w0)
            emb = tf.Variable(emb0)
            x = tf.constant(x0)
            loss = tf.reduce_sum(tf.square(tf.matmul(x, w) - 1.0)) + tf.reduce_sum(
                tf.sin(tf.nn.embedding_lookup(emb, [1, 4, 1])))
            train = make(tf).minimize(loss)
            with tf.Session(graph=g) as s:
                s.run(tf.global_variables_initializer())
                for _ in range(3):
                    s.run(train)
                return s.run([w, emb])
    for a, b in zip(run(cft), run(tft)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)
