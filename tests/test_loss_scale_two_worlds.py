"""Loss scaling on several ranks (tests/worlds.py: thread ranks serially, MPI ranks under
mpiexec): when only one rank's gradients overflow, every rank skips the step and halves its
scale (under a strategy, as TF's cross-replica check; with SyncReplicasOptimizer inside, by
one agreed flag), the replicas stay identical and nobody waits for a collective the others
skipped.  The replica-sync broadcast of a step applied inside the loss-scale cond is built
outside it."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from worlds import mpi_world_size

pytestmark = pytest.mark.timeout(120)


def _run(comm, build):
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable([1.0, 2.0], name="w")
        x = tf.placeholder(tf.float32, [2], name="x")
        train, scale = build(w, x)
        init = tf.global_variables_initializer()
    bad = np.array([np.inf, 1.0], np.float32)
    good = np.ones(2, np.float32)
    with tf.Session(graph=g, config={"comm": comm}) as sess:
        sess.run(init)
        sess.run(train, {x: good})
        after_good = sess.run(w)
        # only the last rank's input overflows
        sess.run(train, {x: bad if comm.rank == comm.size - 1 else good})
        return after_good, sess.run(w), sess.run(scale)


def test_strategy_dynamic_loss_scale_skips_on_every_rank(world):
    def body(comm):
        def build(w, x):
            s = tf.distribute.MirroredStrategy(comm=comm)
            with s.scope():
                opt = tf.train.experimental.MixedPrecisionLossScaleOptimizer(
                    tf.train.GradientDescentOptimizer(0.1), "dynamic")
                train = s.experimental_run_v2(lambda: opt.minimize(tf.reduce_sum(w * x)))
            return train, opt._loss_scale()
        after_good, after_bad, scale = _run(comm, build)
        n = comm.size
        np.testing.assert_allclose(after_good, [1.0 - 0.1 * n, 2.0 - 0.1 * n], rtol=1e-6)  # summed gradients
        np.testing.assert_array_equal(after_bad, after_good)   # skipped everywhere
        assert scale == 2.0 ** 14
        allw = np.asarray(comm.allgather(after_bad)).reshape(comm.size, -1)
        assert all(np.array_equal(allw[r], allw[0]) for r in range(comm.size))
    world.run(body)


@pytest.mark.skipif(mpi_world_size() <= 1, reason="the agreed flag is per MPI process (run under mpiexec)")
def test_contrib_loss_scale_over_sync_replicas_agrees(world):
    def body(comm):
        def build(w, x):
            mgr = tf.contrib.mixed_precision.ExponentialUpdateLossScaleManager(256.0, 1000,
                                                                               decr_every_n_nan_or_inf=1)
            sync = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), comm=comm)
            opt = tf.contrib.mixed_precision.LossScaleOptimizer(sync, mgr)
            return opt.minimize(tf.reduce_sum(w * x)), mgr.get_loss_scale()
        after_good, after_bad, scale = _run(comm, build)
        np.testing.assert_allclose(after_good, [0.9, 1.9], rtol=1e-6)   # the averaged gradient
        np.testing.assert_array_equal(after_bad, after_good)
        np.testing.assert_allclose(scale, 256.0 * 0.8)   # decr_ratio 0.8, TF 1.x's default
    world.run(body)
