"""A TF1 between-graph program (tests/tf1_cluster_program.py: ClusterSpec, Server,
replica_device_setter, MonitoredTrainingSession) under mpirun, each task with its own
flags: the asynchronous step equals every worker's update applied in rank order, the
synchronous one the average over the workers' batches, a ps task's join() ends with the
workers, and launch mistakes are named at once."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import collflow.compat.v1 as tf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAM = os.path.join(ROOT, "tests", "tf1_cluster_program.py")
pytestmark = [pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not found"),
              pytest.mark.timeout(180)]


def _env():
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", COLLFLOW_COLLECTIVE_TIMEOUT="60", PYTHONPATH=ROOT)
    env.pop("COLLFLOW_CHECK_OUTPUTS", None)
    return env


def _launch(tasks, *flags, timeout=100):
    """mpirun with one app per (job, task): the MPMD launch a TF cluster maps to."""
    cmd = ["timeout", str(timeout), "mpirun", "--oversubscribe", "--bind-to", "none"]
    for i, (job, task) in enumerate(tasks):
        cmd += ([":"] if i else []) + ["-np", "1", sys.executable, PROGRAM, "--job_name", job,
                                       "--task_index", str(task)] + list(flags)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=timeout + 30)
    return p.returncode, p.stdout + p.stderr, time.monotonic() - t0


def _batch(ph, task, step):
    x, y, ids = ph
    r = np.random.RandomState(100 * task + step)
    return {x: r.rand(4, 3).astype(np.float32), y: r.rand(4, 1).astype(np.float32),
            ids: r.randint(0, 6, 4).astype(np.int32)}


def _reference(mode, optimizer, workers, steps):
    """One process, no cluster: the schedule the program's step stands for."""
    g = tf.Graph()
    with g.as_default():
        emb = tf.get_variable("emb", [6, 3], initializer=tf.random_normal_initializer(seed=1))
        w = tf.get_variable("w", [3, 1], initializer=tf.random_normal_initializer(seed=2))
        b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
        gs = tf.train.get_or_create_global_step()
        opt = {"sgd": lambda: tf.train.GradientDescentOptimizer(0.05),
               "momentum": lambda: tf.train.MomentumOptimizer(0.05, 0.9),
               "adam": lambda: tf.train.AdamOptimizer(0.05),
               "adagrad": lambda: tf.train.AdagradOptimizer(0.1)}[optimizer]()
        phs, losses = [], []
        for _ in range(workers):
            x = tf.placeholder(tf.float32, [None, 3])
            y = tf.placeholder(tf.float32, [None, 1])
            ids = tf.placeholder(tf.int32, [None])
            h = x + tf.nn.embedding_lookup(emb, ids)
            losses.append(tf.reduce_mean(tf.square(tf.matmul(h, w) + b - y)))
            phs.append((x, y, ids))
        if mode == "async":
            grads = [opt.compute_gradients(loss) for loss in losses]
            every = [tf.convert_to_tensor(gr) if not isinstance(gr, tf.IndexedSlices) else gr.values
                     for gv in grads for gr, _ in gv]
            step = None
            for gv in grads:  # every gradient from the round's start values, then the updates in rank order
                with tf.control_dependencies(every if step is None else [step]):
                    step = opt.apply_gradients(gv, global_step=gs)
        else:
            step = opt.minimize(tf.add_n(losses) / workers, global_step=gs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for s in range(steps):
                feed = {}
                for t, ph in enumerate(phs):
                    feed.update(_batch(ph, t, s))
                sess.run(step, feed)
            return dict(zip(["emb", "w", "b", "gs"], sess.run([emb, w, b, gs])))


def _results(tmp_path, workers):
    return [np.load(tmp_path / f"worker{i}.npz") for i in range(workers)]


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam"])
def test_asynchronous_program_applies_every_workers_update_in_rank_order(tmp_path, optimizer):
    rc, out, _ = _launch([("worker", 0), ("worker", 1)], "--mode", "async", "--optimizer", optimizer,
                         "--steps", "5", "--out", str(tmp_path))
    assert rc == 0, out
    got = _results(tmp_path, 2)
    want = _reference("async", optimizer, 2, 5)
    for k in ("emb", "w", "b"):
        np.testing.assert_array_equal(got[0][k], got[1][k], err_msg=k)  # the replicas stay equal
        np.testing.assert_allclose(got[0][k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)
    assert int(got[0]["gs"]) == int(want["gs"]) == 10  # one global step per worker update, as in TF
    assert int(got[0]["steps"]) == int(got[1]["steps"]) == 5  # StopAtStepHook(10) stops after 5 runs


@pytest.mark.parametrize("optimizer", ["sgd", "adagrad"])
def test_sync_replicas_program_averages_the_workers_batches(tmp_path, optimizer):
    rc, out, _ = _launch([("worker", 0), ("worker", 1)], "--mode", "sync", "--optimizer", optimizer,
                         "--steps", "4", "--out", str(tmp_path))
    assert rc == 0, out
    got = _results(tmp_path, 2)
    want = _reference("sync", optimizer, 2, 4)
    for k in ("emb", "w", "b"):
        np.testing.assert_array_equal(got[0][k], got[1][k], err_msg=k)
        np.testing.assert_allclose(got[0][k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)
    assert int(got[0]["gs"]) == 4


def test_supervisor_program_with_the_sync_queue_interface(tmp_path):
    # TF's mnist_replica.py shape: Supervisor, chief_init_op / local_step_init_op,
    # ready_for_local_init_op, the init tokens op and the chief queue runner
    rc, out, _ = _launch([("worker", 0), ("worker", 1)], "--mode", "sync", "--loop", "supervisor", "--steps", "4",
                         "--out", str(tmp_path))
    assert rc == 0, out
    got = _results(tmp_path, 2)
    want = _reference("sync", "sgd", 2, 4)
    for k in ("emb", "w", "b"):
        np.testing.assert_array_equal(got[0][k], got[1][k], err_msg=k)
        np.testing.assert_allclose(got[0][k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_parameter_server_task_joins_until_the_workers_finish(tmp_path):
    # the full TF launch: ps and workers as ranks of one job; the ranks out of cluster order
    rc, out, secs = _launch([("ps", 0), ("worker", 1), ("worker", 0)], "--mode", "sync", "--steps", "3",
                            "--out", str(tmp_path))
    assert rc == 0, out
    assert "ps 0 joined" in out and "worker 0 done after 3 steps" in out and "worker 1 done after 3 steps" in out
    got = _results(tmp_path, 2)
    want = _reference("sync", "sgd", 2, 3)
    np.testing.assert_allclose(got[0]["w"], want["w"], rtol=1e-5, atol=1e-6)


def test_two_ranks_running_one_task_is_named(tmp_path):
    rc, out, secs = _launch([("worker", 0), ("worker", 0)], "--steps", "2")
    assert rc != 0
    assert "ranks 0 and 1 both run /job:worker/task:0" in out, out
    assert secs < 60


def test_a_worker_task_no_rank_runs_is_named(tmp_path):
    rc, out, secs = _launch([("worker", 0), ("worker", 1)], "--worker_hosts", "a:1,a:2,a:3", "--steps", "2")
    assert rc != 0
    assert "/job:worker/task:2 run on no rank" in out, out
    assert secs < 60
