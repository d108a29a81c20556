"""slim.learning.create_train_op / train and tf.contrib.training.create_train_op / train
(collflow/contrib/train_ops.py) without TensorFlow: the step count, the final checkpoint, the
loss falling, UPDATE_OPS, gradient multipliers and clipping, and the errors.
tests/tf1/test_vs_tensorflow_contrib_training.py compares them with tf_slim's loops."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf

slim = tf.contrib.slim
pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test


def _loss():
    rng = np.random.RandomState(0)
    xv = rng.randn(32, 4).astype(np.float32)
    x, y = tf.constant(xv), tf.constant(xv @ np.ones((4, 1), np.float32))
    pred = slim.fully_connected(slim.batch_norm(x, is_training=True), 1, activation_fn=None, scope="fc")
    return slim.losses.mean_squared_error(pred, y)


def test_slim_learning_train_steps_saves_and_learns(tmp_path):
    tf.set_random_seed(0)  # the same initial values in both sessions
    loss = _loss()
    train_op = slim.learning.create_train_op(loss, tf.train.AdamOptimizer(0.1), clip_gradient_norm=10.0)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        first = s.run(loss)
    final = slim.learning.train(train_op, str(tmp_path), number_of_steps=60, save_summaries_secs=1000,
                                save_interval_secs=1000, log_every_n_steps=0)
    ckpt = tf.train.latest_checkpoint(str(tmp_path))
    assert os.path.basename(ckpt) == "model.ckpt-60"
    assert tf.train.load_variable(ckpt, "global_step") == 60
    assert final < 0.2 * first
    # batch norm's moving averages moved: UPDATE_OPS ran with every step
    assert np.abs(tf.train.load_variable(ckpt, "BatchNorm/moving_mean")).max() > 0


def test_create_train_op_multipliers_and_update_ops():
    w = tf.get_variable("w", initializer=[1.0, 2.0])
    counter = tf.get_variable("counter", initializer=0.0, trainable=False)
    tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, counter.assign_add(1.0))
    loss = tf.reduce_sum(w * w)
    gs = tf.train.get_or_create_global_step()
    op = tf.contrib.slim.learning.create_train_op(loss, tf.train.GradientDescentOptimizer(0.5),
                                                  gradient_multipliers={"w": 0.5})
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert s.run(op) == 5.0  # the loss before the step
        np.testing.assert_allclose(s.run(w), [0.5, 1.0])  # w - 0.5 * 0.5 * 2w
        assert s.run([counter, gs]) == [1.0, 1]
    with pytest.raises(ValueError, match="gradient_multipliers` must be a dict"):
        tf.contrib.training.multiply_gradients([(loss, w)], [2.0])


def test_contrib_training_train_and_errors(tmp_path):
    loss = _loss()
    op = tf.contrib.training.create_train_op(loss, tf.train.AdamOptimizer(0.1))
    last = tf.contrib.training.train(op, str(tmp_path), hooks=[tf.train.StopAtStepHook(last_step=5)],
                                     save_summaries_steps=None)
    assert np.isfinite(last)
    with pytest.raises(ValueError, match="logdir cannot be None"):
        tf.contrib.training.train(op, None)
    with pytest.raises(ValueError, match="train_op cannot be None"):
        slim.learning.train(None, str(tmp_path))
    with pytest.raises(ValueError, match="number_of_steps"):
        slim.learning.train(op, str(tmp_path), number_of_steps=0)


def test_slim_evaluation_runs_num_evals_batches_from_the_checkpoint(tmp_path):
    rng = np.random.RandomState(1)
    xs, ys = rng.randn(20, 3).astype(np.float32), rng.randint(0, 2, 20).astype(np.int64)
    wv = rng.randn(3, 2).astype(np.float32)
    ckpt = str(tmp_path / "model.ckpt")
    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=wv)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            tf.train.Saver().save(s, ckpt)
    for _ in range(2):  # the eval step starts at 0 in every evaluation
        with tf.Graph().as_default():
            x, y = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(4).make_one_shot_iterator().get_next()
            w = tf.get_variable("w", [3, 2])  # restored from the checkpoint, not initialized
            acc, update = slim.metrics.streaming_accuracy(tf.argmax(tf.matmul(x, w), 1), y)
            value = slim.evaluation.evaluate_once("", ckpt, str(tmp_path / "eval"), num_evals=3, eval_op=update,
                                                  final_op=acc, summary_op=None)
        want = (np.argmax(xs[:12] @ wv, 1) == ys[:12]).mean()
        np.testing.assert_allclose(value, want, rtol=1e-6)
