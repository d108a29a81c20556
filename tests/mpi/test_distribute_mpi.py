"""tf.distribute under real MPI: an Estimator with RunConfig(train_distribute=MirroredStrategy())
on N ranks ends where one process without a strategy ends with N times the batch (TF's N
replicas: per-replica batches dealt round robin, the mean loss divided by the replicas and
the gradients summed), on every rank, with the loss it reports the mean over the replicas."""
import tempfile

import numpy as np
import pytest

import collflow.compat.v1 as tf

RNG = np.random.RandomState(2)
X = RNG.randn(60, 4).astype(np.float32)
Y = (X @ RNG.randn(4, 1)).astype(np.float32)


class _Capture(tf.train.SessionRunHook):
    def begin(self):
        self.w = tf.get_default_graph().get_tensor_by_name("w:0")

    def end(self, session):
        self.value = session.run(self.w)


def _train(strategy, batch, model_dir):
    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(batch)

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [4, 1], initializer=tf.zeros_initializer())
        loss = tf.losses.mean_squared_error(labels, tf.matmul(features["x"], w))
        train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)
    cfg = tf.estimator.RunConfig(train_distribute=strategy, save_checkpoints_steps=None, save_checkpoints_secs=None)
    hook = _Capture()
    tf.estimator.Estimator(model_fn, model_dir=model_dir, config=cfg).train(input_fn, hooks=[hook])
    return hook.value


@pytest.mark.mpi(min_size=2)
def test_estimator_train_distribute_n_ranks_is_one_process_with_n_times_the_batch():
    from mpi4py import MPI
    n = MPI.COMM_WORLD.Get_size()
    ref = _train(None, 5 * n, tempfile.mkdtemp())
    got = _train(tf.distribute.MirroredStrategy(), 5, tempfile.mkdtemp())
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    allw = MPI.COMM_WORLD.allgather(got)
    assert all(np.array_equal(a, allw[0]) for a in allw)
