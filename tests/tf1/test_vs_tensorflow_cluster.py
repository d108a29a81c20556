"""TF1's cluster API against TensorFlow's: ClusterSpec's reads, DeviceSpec, the device names
that scopes, device functions and replica_device_setter give ops (collflow writes a local
device as '/cpu:0' where TF writes '/device:CPU:0', and no device as None where TF has '').
Skipped cleanly without TensorFlow."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()


def _norm(dev):
    """TF's and collflow's spellings of the same device name."""
    dev = dev or ""
    for i in range(4):
        dev = dev.replace(f"/device:CPU:{i}", f"/cpu:{i}").replace(f"/device:GPU:{i}", f"/gpu:{i}")
    return dev


def _cluster_reads(tf):
    c = tf.train.ClusterSpec({"worker": ["w0:1", "w1:1", "w2:1"], "ps": ["p0:1", "p1:1"]})
    s = tf.train.ClusterSpec({"worker": {1: "a:1", 3: "b:1"}, "chief": ["c:1"]})
    return (c.as_dict(), sorted(c.jobs), c.num_tasks("worker"), c.task_indices("ps"), c.task_address("worker", 2),
            c.job_tasks("ps"), s.as_dict(), s.job_tasks("worker"), s.task_indices("worker"), bool(c),
            tf.train.ClusterSpec(c) == c)


def test_cluster_spec_reads_match():
    assert _cluster_reads(cft) == _cluster_reads(tft)


@pytest.mark.parametrize("spec", ["/job:ps/replica:0/task:1/device:GPU:2", "/job:worker/task:3", "/cpu:0",
                                  "/device:CPU:1", "/job:a/device:GPU:*", "/replica:2"])
def test_device_spec_matches(spec):
    a, b = cft.DeviceSpec.from_string(spec), tft.DeviceSpec.from_string(spec)
    assert a.to_string() == b.to_string()
    assert (a.job, a.replica, a.task, a.device_type, a.device_index) == \
        (b.job, b.replica, b.task, b.device_type, b.device_index)
    m = cft.DeviceSpec.from_string("/job:x/task:0/device:CPU:0").make_merged_spec(a)
    n = tft.DeviceSpec.from_string("/job:x/task:0/device:CPU:0").make_merged_spec(b)
    assert m.to_string() == n.to_string()


def _placements(tf, strategy):
    seen = []

    def fn(op):
        seen.append((op.type, _norm(op.device)))
        return "/job:ps/task:1" if op.type in ("VariableV2", "VarHandleOp", "VarHandle") else "/job:worker"

    cluster = tf.train.ClusterSpec({"ps": ["p:1", "p:2", "p:3"], "worker": ["w:1", "w:2"]})
    g = tf.Graph()
    out = []
    with g.as_default():
        setter = tf.train.replica_device_setter(worker_device="/job:worker/task:1", cluster=cluster,
                                                ps_strategy=strategy)
        with tf.device(setter):
            vs = [tf.Variable(np.zeros((i + 1, 4), np.float32), name=f"v{i}") for i in range(5)]
            vs.append(tf.get_variable("gv", [3]))
            with tf.device("/job:worker/task:0"):
                vs.append(tf.Variable(0.0, name="local"))
            with tf.device("/job:ps/task:2"):
                vs.append(tf.Variable(0.0, name="pinned"))
            y = tf.add(vs[0], 1.0, name="y")
            with tf.device("/cpu:0"):
                z = tf.identity(y, name="z")
                with tf.device("/task:0"):
                    z2 = tf.identity(y, name="z2")
        out += [_norm(v.device) for v in vs] + [_norm(t.device) for t in (y, z, z2)]
        with tf.device("/job:worker/task:1"):
            with tf.device(""):
                out.append(_norm(tf.identity(y, name="e").device))
            with tf.device(None):
                out.append(_norm(tf.identity(y, name="n").device))
            with tf.device(fn):
                v = tf.Variable(1.0, name="fv")
                with tf.device("/task:4"):
                    out.append(_norm(tf.identity(v, name="fi").device))
            out.append(_norm(v.device))
        out.append(tf.train.replica_device_setter(cluster={"worker": ["a:1"]}))
    return out, [s for s in seen if s[0] == "Identity"]


@pytest.mark.parametrize("strategy", ["round_robin", "custom"])
def test_device_names_match(strategy):
    def make():
        if strategy == "round_robin":
            return None
        calls = []

        def last_task_first(op):  # a user strategy: tasks 2, 1, 0, 2, ...
            calls.append(op.name)
            return 2 - (len(calls) - 1) % 3
        return last_task_first
    assert _placements(cft, make()) == _placements(tft, make())
