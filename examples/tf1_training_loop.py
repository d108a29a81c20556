"""A TensorFlow 1.x training script, unchanged but for its import line.

tf.app.run parses the flags, a tf.data pipeline feeds a linear regression, a
MonitoredTrainingSession with hooks trains it, checkpoints it and writes summaries, and the
run ends when the data runs out (OutOfRangeError) or at --steps.  The result is printed as
one JSON line.

    python examples/tf1_training_loop.py [--steps 7] [--lr 0.05] [--nouse_map]
    TF1_BACKEND=tensorflow python examples/tf1_training_loop.py    # the same under TensorFlow

Both print the same losses, weights, global step and summaries (there is no shuffle: the two
libraries' random streams differ).
"""
import json
import os
import sys
import tempfile

import numpy as np

if os.environ.get("TF1_BACKEND") == "tensorflow":
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
else:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import collflow.compat.v1 as tf

tf.app.flags.DEFINE_integer("steps", 7, "stop at this global step")
tf.app.flags.DEFINE_float("lr", 0.05, "learning rate")
tf.app.flags.DEFINE_boolean("use_map", True, "scale the examples with Dataset.map")
FLAGS = tf.app.flags.FLAGS


class LossRecorder(tf.train.SessionRunHook):
    """Fetches the loss with every run (before_run) and keeps it (after_run)."""

    def __init__(self, loss):
        self.loss, self.values = loss, []

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self.loss)

    def after_run(self, run_context, run_values):
        self.values.append(round(float(run_values.results), 5))


def main(argv):
    rng = np.random.RandomState(0)
    x = rng.rand(20, 3).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    with tempfile.TemporaryDirectory() as logdir, tf.Graph().as_default():
        ds = tf.data.Dataset.from_tensor_slices((x, y))
        if FLAGS.use_map:
            ds = ds.map(lambda a, b: (a * 2.0, b * 2.0))
        xb, yb = ds.batch(6).repeat(2).make_one_shot_iterator().get_next()
        w = tf.get_variable("w", (3, 1), initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(xb, w) - yb))
        step = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(FLAGS.lr).minimize(loss, global_step=step)
        tf.summary.scalar("mse", loss)
        final = tf.train.FinalOpsHook([w, step])
        losses = LossRecorder(loss)
        hooks = [tf.train.StopAtStepHook(last_step=FLAGS.steps), final, losses]
        with tf.train.MonitoredTrainingSession(checkpoint_dir=logdir, hooks=hooks, save_summaries_steps=2,
                                               log_step_count_steps=None) as sess:
            runs = 0
            while not sess.should_stop():
                sess.run(train_op)
                runs += 1
        summaries = sorted((e.step, round(v.simple_value, 5))
                           for f in os.listdir(logdir) if "tfevents" in f
                           for e in tf.train.summary_iterator(os.path.join(logdir, f))
                           for v in e.summary.value if v.tag == "mse")
    w_end, step_end = final.final_ops_values
    print(json.dumps({"unparsed_args": argv[1:], "runs": runs, "losses": losses.values,
                      "w": [round(float(v), 5) for v in w_end.ravel()], "global_step": int(step_end),
                      "summaries": summaries}))
    return 0


if __name__ == "__main__":
    tf.app.run(main)
