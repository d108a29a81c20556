"""tf.train.Checkpoint under real MPI: every rank calls save (as TF 1.x programs do on every
worker), only rank 0 writes, and every rank restores the file from the shared directory."""
import tempfile

import numpy as np
import pytest

import collflow.compat.v1 as tf


@pytest.mark.mpi(min_size=2)
def test_every_rank_saves_rank0_writes_every_rank_restores():
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    directory = comm.bcast(tempfile.mkdtemp() if comm.Get_rank() == 0 else None, root=0)
    with tf.Graph().as_default():
        v = tf.Variable(np.arange(4.0) + 10 * comm.Get_rank(), name="v")
        ckpt = tf.train.Checkpoint(v=v)
        manager = tf.train.CheckpointManager(ckpt, directory, max_to_keep=1)
        with tf.Session() as sess:
            sess.run(v.initializer)
            with sess.as_default():
                p1 = manager.save()
                p2 = manager.save()
    assert p1.endswith("ckpt-1") and p2.endswith("ckpt-2")
    assert manager.checkpoints == [p2]  # every rank's list, not only the writer's
    comm.Barrier()
    import os
    names = sorted(os.listdir(directory))
    assert names == ["checkpoint", "ckpt-2.data-00000-of-00001", "ckpt-2.index"], names  # kept one, written once
    with tf.Graph().as_default():
        v = tf.Variable(np.zeros(4), name="v")
        status = tf.train.Checkpoint(v=v).restore(tf.train.latest_checkpoint(directory))
        with tf.Session() as sess:
            status.assert_consumed().run_restore_ops(sess)
            np.testing.assert_array_equal(sess.run(v), np.arange(4.0))  # rank 0's values
