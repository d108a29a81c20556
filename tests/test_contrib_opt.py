"""tf.contrib.opt's decoupled weight decay (collflow/contrib/opt.py) without TensorFlow: one
AdamW and MomentumW step against NumPy, decay_var_list through minimize, a sparse gradient
decaying each touched row once, the gradient_scale path, extend_with_decoupled_weight_decay.
tests/tf1/test_vs_tensorflow_contrib_opt.py compares training runs with TensorFlow."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test


def test_adamw_and_momentumw_steps():
    w0 = np.array([1.0, -2.0, 3.0], np.float32)
    w = tf.get_variable("w", initializer=w0)
    u = tf.get_variable("u", initializer=w0)
    loss = tf.reduce_sum(w * w) + tf.reduce_sum(u * u)
    adam = tf.contrib.opt.AdamWOptimizer(0.1, learning_rate=0.01).minimize(loss, decay_var_list=[w])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(adam)
        gw = 2 * w0
        m, v = 0.1 * gw, 0.001 * gw * gw
        lr_t = 0.01 * np.sqrt(1 - 0.999) / (1 - 0.9)
        np.testing.assert_allclose(s.run(w), w0 * 0.9 - lr_t * m / (np.sqrt(v) + 1e-8), rtol=1e-5)
        np.testing.assert_allclose(s.run(u), w0 - lr_t * m / (np.sqrt(v) + 1e-8), rtol=1e-5)  # not in the list
    assert tf.contrib.opt.AdamWOptimizer(0.1).get_name() == "AdamW"


def test_sparse_rows_decay_once_and_extension_of_sgd():
    emb = tf.get_variable("emb", initializer=np.ones((4, 2), np.float32))
    loss = tf.reduce_sum(tf.nn.embedding_lookup(emb, [1, 1, 3]))
    SGDW = tf.contrib.opt.extend_with_decoupled_weight_decay(tf.train.GradientDescentOptimizer)
    step = SGDW(0.5, 0.1).minimize(loss)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(step)
        np.testing.assert_allclose(s.run(emb), [[1, 1], [0.3, 0.3], [1, 1], [0.4, 0.4]], rtol=1e-6)
    with pytest.raises(TypeError, match="Optimizer class"):
        tf.contrib.opt.extend_with_decoupled_weight_decay(object)


def test_momentumw_with_a_gradient_scale():
    w = tf.get_variable("w", initializer=[2.0])
    opt = tf.contrib.opt.MomentumWOptimizer(0.25, 0.1, 0.9)
    op = opt.apply_gradients([(tf.constant([4.0]), w)], gradient_scale=0.5)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(op)
        np.testing.assert_allclose(s.run(w), [2.0 * 0.75 - 0.1 * 2.0], rtol=1e-6)


def test_sgdw_with_a_gradient_scale_decays_once():
    w = tf.get_variable("w", initializer=[2.0])
    SGDW = tf.contrib.opt.extend_with_decoupled_weight_decay(tf.train.GradientDescentOptimizer)
    op = SGDW(0.25, 0.1).apply_gradients([(tf.constant([4.0]), w)], gradient_scale=0.5)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(op)
        np.testing.assert_allclose(s.run(w), [2.0 * 0.75 - 0.1 * 2.0], rtol=1e-6)
