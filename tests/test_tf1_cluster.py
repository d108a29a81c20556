"""TF1's cluster API in one process: ClusterSpec, DeviceSpec, device scopes and device
functions, replica_device_setter, Server, and SyncReplicasOptimizer's TF1 form.  (The
multi-rank behaviour is in tests/test_tf1_cluster_mpi.py; TF's own placements are compared
in tests/tf1/test_vs_tensorflow_cluster.py.)"""
from __future__ import annotations

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import InvalidArgumentError
from collflow.train import cluster as _cluster


@pytest.fixture(autouse=True)
def _no_servers():
    yield
    _cluster._servers.clear()
    _cluster._current = None


# -- ClusterSpec --------------------------------------------------------------------------------


def test_cluster_spec_reads_lists_and_sparse_task_maps():
    c = tf.train.ClusterSpec({"worker": ["w0:1", "w1:1", "w2:1"], "ps": ["p0:1", "p1:1"]})
    assert c.jobs == ["ps", "worker"]
    assert c.num_tasks("worker") == 3 and c.task_indices("ps") == [0, 1]
    assert c.task_address("worker", 2) == "w2:1"
    assert c.as_dict() == {"ps": ["p0:1", "p1:1"], "worker": ["w0:1", "w1:1", "w2:1"]}
    assert c.job_tasks("ps") == ["p0:1", "p1:1"]
    sparse = tf.train.ClusterSpec({"worker": {1: "a:1", 3: "b:1"}})
    assert sparse.as_dict() == {"worker": {1: "a:1", 3: "b:1"}}
    assert sparse.job_tasks("worker") == [None, "a:1", None, "b:1"]
    assert tf.train.ClusterSpec(c) == c and tf.train.ClusterSpec(c.as_cluster_def()) == c
    assert c != sparse and bool(c) and not tf.train.ClusterSpec({})


def test_cluster_spec_errors_are_tensorflows():
    c = tf.train.ClusterSpec({"worker": ["a:1"]})
    with pytest.raises(ValueError, match="No such job in cluster: 'ps'"):
        c.num_tasks("ps")
    with pytest.raises(ValueError, match="No task with index 4 in job 'worker'"):
        c.task_address("worker", 4)
    with pytest.raises(TypeError, match="must be a dictionary"):
        tf.train.ClusterSpec(["a:1"])
    with pytest.raises(TypeError, match="must be a list or a dictionary"):
        tf.train.ClusterSpec({"worker": "a:1"})


# -- device names, scopes and functions --------------------------------------------------------


def test_device_spec_parses_merges_and_prints_as_tf():
    d = tf.DeviceSpec.from_string("/job:ps/replica:0/task:1/device:GPU:2")
    assert (d.job, d.replica, d.task, d.device_type, d.device_index) == ("ps", 0, 1, "GPU", 2)
    assert d.to_string() == "/job:ps/replica:0/task:1/device:GPU:2"
    assert tf.DeviceSpec(job="w", device_type="cpu").to_string() == "/job:w/device:CPU:*"
    merged = tf.DeviceSpec.from_string("/job:worker/task:3").make_merged_spec(tf.DeviceSpec.from_string("/cpu:0"))
    assert merged.to_string() == "/job:worker/task:3/device:CPU:0"
    assert d.replace(task=7).task == 7 and d.task == 1
    with pytest.raises(InvalidArgumentError, match="cannot parse device"):
        tf.DeviceSpec.from_string("/job:ps/task:x")


def test_device_scopes_merge_inner_fields_over_outer():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:worker/task:1"):
            a = tf.constant(1.0)
            with tf.device("/cpu:0"):
                b = tf.constant(1.0)
                with tf.device("/task:2"):
                    c = tf.constant(1.0)
            with tf.device(""):  # TF: no change
                d = tf.constant(1.0)
            with tf.device(None):  # TF: no device at all
                e = tf.constant(1.0)
        with tf.device(tf.DeviceSpec(job="ps", task=0)):
            f = tf.constant(1.0)
    assert a.device == "/job:worker/task:1" and b.device == "/job:worker/task:1/cpu:0"
    assert c.device == "/job:worker/task:2/cpu:0" and d.device == "/job:worker/task:1"
    assert e.device is None and f.device == "/job:ps/task:0"


def test_device_functions_see_the_op_and_inner_scopes_first():
    seen = []

    def fn(op):
        seen.append((op.type, op.device))
        return "/job:ps/task:0" if op.type == "VarHandle" else "/job:worker"

    g = tf.Graph()
    with g.as_default():
        with tf.device(fn):
            v = tf.Variable(1.0, name="v")
            with tf.device("/task:4"):
                x = tf.identity(v)
    assert v.device == "/job:ps/task:0"
    assert x.device == "/job:worker"  # a function's name replaces what the inner scopes gave (TF's rule)
    assert ("Identity", "/task:4") in seen


def test_job_prefix_does_not_pin_an_op_to_a_device_here():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:3"):
            v = tf.Variable(np.arange(3.0, dtype=np.float32))
            y = v * 2.0
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(y), [0.0, 2.0, 4.0])


# -- replica_device_setter -------------------------------------------------------------------


def test_replica_device_setter_places_state_round_robin_and_the_rest_on_the_worker():
    cluster = tf.train.ClusterSpec({"ps": ["p:1", "p:2"], "worker": ["w:1", "w:2"]})
    g = tf.Graph()
    with g.as_default():
        with tf.device(tf.train.replica_device_setter(worker_device="/job:worker/task:1", cluster=cluster)):
            v1 = tf.Variable(1.0)
            v2 = tf.get_variable("v2", [2])
            v3 = tf.Variable(2.0)
            with tf.device("/job:worker/task:0"):
                local = tf.Variable(0.0)
            y = v1 + v2
            with tf.device("/gpu:0"):
                z = tf.identity(y)
            table = tf.contrib.lookup.MutableHashTable(tf.int64, tf.float32, 0.0)
    assert [v.device for v in (v1, v2, v3)] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
    assert local.device == "/job:worker/task:0"
    assert y.device == "/job:worker/task:1" and z.device == "/job:worker/task:1/gpu:0"
    assert table.resource_handle.device.startswith("/job:ps/task:")


def test_replica_device_setter_without_ps_tasks_is_none_and_greedy_balances_bytes():
    assert tf.train.replica_device_setter(cluster={"worker": ["a:1"]}) is None
    assert tf.train.replica_device_setter() is None
    st = tf.contrib.training.GreedyLoadBalancingStrategy(2, tf.contrib.training.byte_size_load_fn)
    g = tf.Graph()
    with g.as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=2, ps_strategy=st)):
            a = tf.Variable(np.zeros(100, np.float32))
            b = tf.Variable(np.zeros(10, np.float32))
            c = tf.Variable(np.zeros(10, np.float32))
            d = tf.Variable(np.zeros(85, np.float32))
    assert [v.device for v in (a, b, c, d)] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:1",
                                                "/job:ps/task:1"]


# -- Server ----------------------------------------------------------------------------------


def test_server_in_one_process_names_its_task_and_target():
    c = tf.train.ClusterSpec({"worker": ["localhost:2223"]})
    s = tf.train.Server(c)
    assert s.target == "grpc://localhost:2223"
    assert s.server_def.job_name == "worker" and s.server_def.task_index == 0
    s.join()  # a worker's join returns
    local = tf.train.Server.create_local_server()
    assert local.target.startswith("grpc://localhost:")


def test_server_needs_the_task_where_the_cluster_leaves_a_choice():
    c = tf.train.ClusterSpec({"ps": ["p:1"], "worker": ["w:1", "w:2"]})
    with pytest.raises(ValueError, match="explicit `job_name`"):
        tf.train.Server(c)
    with pytest.raises(ValueError, match="explicit `task_index`"):
        tf.train.Server(c, job_name="worker")
    with pytest.raises(ValueError, match="No task with index 5"):
        tf.train.Server(c, job_name="worker", task_index=5)
    with pytest.raises(ValueError, match="No such job"):
        tf.train.Server(c, job_name="chief", task_index=0)


def test_a_lone_worker_of_a_bigger_cluster_trains_and_says_so(caplog):
    c = tf.train.ClusterSpec({"ps": ["p:1"], "worker": ["w:1", "w:2"]})
    with caplog.at_level("WARNING", logger="collflow"):
        server = tf.train.Server(c, job_name="worker", task_index=0)
    assert "/job:worker/task:1" in caplog.text
    g = tf.Graph()
    with g.as_default():
        with tf.device(tf.train.replica_device_setter(cluster=c)):
            w = tf.Variable(1.0)
            gs = tf.train.get_or_create_global_step()
            train = tf.train.GradientDescentOptimizer(0.5).minimize(tf.square(w), global_step=gs)
        hooks = [tf.train.StopAtStepHook(last_step=3)]
        with tf.train.MonitoredTrainingSession(master=server.target, hooks=hooks) as sess:
            while not sess.should_stop():
                sess.run(train)
            assert sess.run(gs) == 3
            np.testing.assert_allclose(sess.run(w), 0.0)  # w -> w - 0.5 * 2w = 0 at once


def test_monitored_session_refuses_an_unknown_master():
    g = tf.Graph()
    with g.as_default():
        tf.Variable(1.0)
        with pytest.raises(ValueError, match="target of this process's tf.train.Server"):
            tf.train.MonitoredTrainingSession(master="grpc://elsewhere:1")


# -- SyncReplicasOptimizer's TF1 form ----------------------------------------------------------


def test_sync_replicas_tf1_arguments_and_queue_interface():
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(2.0)
        gs = tf.train.get_or_create_global_step()
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.25), 1, 1)
        with pytest.raises(ValueError, match="after apply_gradients"):
            opt.get_chief_queue_runner()
        train = opt.minimize(tf.square(w), global_step=gs)
        assert opt.get_chief_queue_runner().create_threads(None) == []
        init_tokens = opt.get_init_tokens_op()
        hook = opt.make_session_run_hook(is_chief=True, num_tokens=0)
        with tf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
            sess.run(init_tokens)
            sess.run(train)
            np.testing.assert_allclose(sess.run(w), 1.0)  # 2 - 0.25 * 4
            assert sess.run(gs) == 1


def test_sync_replicas_tf1_checks():
    base = tf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(InvalidArgumentError, match="replicas_to_aggregate=3 > total_num_replicas=2"):
        tf.train.SyncReplicasOptimizer(base, replicas_to_aggregate=3, total_num_replicas=2)
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(1.0)
        opt = tf.train.SyncReplicasOptimizer(base, replicas_to_aggregate=2, total_num_replicas=2)
        assert opt.backup_ranks == 0
        with pytest.raises(InvalidArgumentError, match="total_num_replicas=2 but this job has 1 compute ranks"):
            opt.minimize(tf.square(w))
    assert tf.train.SyncReplicasOptimizer(base, replicas_to_aggregate=2, total_num_replicas=3).backup_ranks == 1


def test_sync_replicas_variable_averages_follow_each_update():
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(2.0)
        ema = tf.train.ExponentialMovingAverage(0.5)
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.25), replicas_to_aggregate=1,
                                             variable_averages=ema, variables_to_average=[w])
        train = opt.minimize(tf.square(w))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            np.testing.assert_allclose(sess.run([w, ema.average(w)]), [1.0, 1.5])  # 0.5 * 2 + 0.5 * 1
