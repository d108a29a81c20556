"""slim.learning.create_train_op / train and tf.contrib.training.create_train_op / train against
tf_slim's (TF1 contrib's training loops kept as a package): the same small model (batch norm
UPDATE_OPS, gradient multipliers, per-gradient clipping, Momentum) trained for a number of
steps into a logdir; the returned loss, the final checkpoint's variables and global step, and
the per-step losses of a hand loop over the train op are compared.  Skipped cleanly without
TensorFlow or tf_slim."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402
from test_vs_tensorflow_feature_columns_layers_fuzz import tf_slim  # noqa: E402,F401  (the patched tf_slim)

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.timeout(300)]


@pytest.fixture
def slim(tf_slim, monkeypatch):  # noqa: F811
    """tf_slim, with the IndexedSlices name its gradient helpers read from TF 1.x's ops module."""
    from tensorflow.python.framework import ops as tf_ops
    monkeypatch.setattr(tf_ops, "IndexedSlices", tft.IndexedSlices, raising=False)
    return tf_slim


def _model(tf, slim_layers):
    rng = np.random.RandomState(0)
    x = tf.constant(rng.randn(16, 5).astype(np.float32))
    y = tf.constant(rng.randn(16, 1).astype(np.float32))
    w = tf.get_variable("w", initializer=rng.randn(5, 3).astype(np.float32) * 0.5)
    h = tf.nn.relu(slim_layers.batch_norm(tf.matmul(x, w), is_training=True, scale=True))
    v = tf.get_variable("v", initializer=rng.randn(3, 1).astype(np.float32) * 0.5)
    return tf.reduce_mean(tf.square(tf.matmul(h, v) - y))


def _slim_run(tf, learning, layers, logdir, **kw):
    with tf.Graph().as_default():
        loss = _model(tf, layers)
        opt = tf.train.MomentumOptimizer(0.1, 0.9)
        train_op = learning.create_train_op(loss, opt, clip_gradient_norm=0.5, gradient_multipliers={"v": 2.0}, **kw)
        final = learning.train(train_op, logdir, number_of_steps=12, save_summaries_secs=1000,
                               save_interval_secs=1000, log_every_n_steps=5)
    ckpt = tf.train.latest_checkpoint(logdir)
    names = sorted(n for n, _ in tf.train.list_variables(ckpt))
    return final, {n: tf.train.load_variable(ckpt, n) for n in names}, os.path.basename(ckpt)


def test_slim_learning_train_matches_tf_slim(slim, tmp_path):
    want = _slim_run(tft, slim.learning, slim, str(tmp_path / "tf"))
    got = _slim_run(cft, cft.contrib.slim.learning, cft.contrib.slim, str(tmp_path / "cf"))
    assert got[2] == want[2] == "model.ckpt-12"
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4)
    assert sorted(got[1]) == sorted(want[1])
    for name in want[1]:
        np.testing.assert_allclose(got[1][name], want[1][name], rtol=1e-4, atol=1e-6, err_msg=name)


def _hand_loop(tf, training, layers):
    with tf.Graph().as_default():
        loss = _model(tf, layers)
        opt = tf.train.AdamOptimizer(0.05)
        gs = tf.train.get_or_create_global_step()
        train_op = training.create_train_op(loss, opt, global_step=gs, summarize_gradients=True,
                                            transform_grads_fn=training.clip_gradient_norms_fn(0.3))
        assert train_op in tf.get_collection(tf.GraphKeys.TRAIN_OP)
        with tf.Session() as s:
            s.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            return [s.run(train_op) for _ in range(8)] + [s.run(gs)]


def test_contrib_training_create_train_op_matches_tf_slim(slim):
    want = _hand_loop(tft, slim.training, slim)
    got = _hand_loop(cft, cft.contrib.training, cft.contrib.slim)
    np.testing.assert_allclose(got, want, rtol=1e-4)


def _contrib_train(tf, training, layers, logdir):
    with tf.Graph().as_default():
        loss = _model(tf, layers)
        train_op = training.create_train_op(loss, tf.train.GradientDescentOptimizer(0.2))
        final = training.train(train_op, logdir, hooks=[tf.train.StopAtStepHook(last_step=7)],
                               save_checkpoint_secs=None, save_summaries_steps=None)
    return final


def test_contrib_training_train_matches_tf_slim(slim, tmp_path):
    want = _contrib_train(tft, slim.training, slim, str(tmp_path / "tf"))
    got = _contrib_train(cft, cft.contrib.training, cft.contrib.slim, str(tmp_path / "cf"))
    np.testing.assert_allclose(got, want, rtol=1e-4)


def _eval_run(tf, slim_mod, metrics, logdir, loop):
    rng = np.random.RandomState(3)
    xs = rng.randn(20, 4).astype(np.float32)
    ys = rng.randint(0, 3, 20).astype(np.int64)
    ckpt_dir = os.path.join(logdir, "train")
    os.makedirs(ckpt_dir, exist_ok=True)
    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=rng.randn(4, 3).astype(np.float32))
        gs = tf.train.get_or_create_global_step()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(gs.assign(7))
            tf.train.Saver().save(s, os.path.join(ckpt_dir, "model.ckpt"), global_step=gs)
    with tf.Graph().as_default():
        x, y = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(4).make_one_shot_iterator().get_next()
        w = tf.get_variable("w", [4, 3])
        tf.train.get_or_create_global_step()
        logits = tf.matmul(x, w)
        values, updates = metrics.aggregate_metric_map({
            "accuracy": metrics.streaming_accuracy(tf.argmax(logits, 1), y),
            "mean_logit": metrics.streaming_mean(tf.reduce_max(logits, 1))})
        for name, value in values.items():
            tf.summary.scalar(name, value)
        if loop:
            out = slim_mod.evaluation.evaluation_loop("", ckpt_dir, os.path.join(logdir, "eval"), num_evals=3,
                                                      eval_op=list(updates.values()), final_op=values,
                                                      eval_interval_secs=0, max_number_of_evaluations=1)
        else:
            out = slim_mod.evaluation.evaluate_once("", tf.train.latest_checkpoint(ckpt_dir),
                                                    os.path.join(logdir, "eval"), num_evals=3,
                                                    eval_op=list(updates.values()), final_op=values)
    events = [e for f in sorted(os.listdir(os.path.join(logdir, "eval")))
              for e in tf.train.summary_iterator(os.path.join(logdir, "eval", f)) if e.summary.value]
    return out, [(e.step, sorted((v.tag, round(v.simple_value, 5)) for v in e.summary.value)) for e in events]


@pytest.mark.parametrize("loop", [False, True])
def test_slim_evaluation_matches_tf_slim(slim, tmp_path, loop):
    want = _eval_run(tft, slim, slim.metrics, str(tmp_path / "tf"), loop)
    got = _eval_run(cft, cft.contrib.slim, cft.contrib.slim.metrics, str(tmp_path / "cf"), loop)
    assert sorted(got[0]) == sorted(want[0])
    for k in want[0]:
        np.testing.assert_allclose(got[0][k], want[0][k], rtol=1e-5)
    assert got[1] == want[1]
