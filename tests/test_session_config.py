"""tf.ConfigProto / tf.GPUOptions: protobuf-like records, and what cf.Session does with them."""
import logging
import sys

import numpy as np
import pytest

import collflow as cf
from collflow.runtime.config import configure_process, session_options


def test_fields_behave_like_the_protobuf():
    c = cf.ConfigProto(allow_soft_placement=True, intra_op_parallelism_threads=2)
    c.gpu_options.allow_growth = True  # nested message edited in place
    c.gpu_options.per_process_gpu_memory_fraction = 0.5
    c.device_count["GPU"] = 0
    assert (c.allow_soft_placement, c.log_device_placement, c.intra_op_parallelism_threads) == (True, False, 2)
    assert c.gpu_options == cf.GPUOptions(allow_growth=True, per_process_gpu_memory_fraction=0.5)
    assert cf.ConfigProto().device_count == {}  # defaults are not shared between instances
    assert "allow_growth=True" in repr(c.gpu_options)
    with pytest.raises(ValueError, match='has no "allow_softplacement" field'):
        cf.ConfigProto(allow_softplacement=True)
    with pytest.raises(AttributeError, match='no field "alow_growth"'):
        c.gpu_options.alow_growth = True
    with pytest.raises(TypeError, match="takes an int"):
        c.inter_op_parallelism_threads = 1.5
    c2 = cf.ConfigProto()
    c2.CopyFrom(c)
    assert c2 == c and c2.gpu_options is not c.gpu_options


def test_session_options_from_a_config_proto():
    c = cf.ConfigProto(allow_soft_placement=True, log_device_placement=True, operation_timeout_in_ms=250,
                       device_count={"GPU": 0}, gpu_options=cf.GPUOptions(allow_growth=True))
    d = session_options(c)
    assert d == {"allow_soft_placement": True, "log_device_placement": True, "operation_timeout_in_ms": 250,
                 "device": "/cpu:0", "gpu_options": cf.GPUOptions(allow_growth=True)}
    assert session_options(None) == {} and session_options({"fuse_ops": False}) == {"fuse_ops": False}
    with pytest.raises(TypeError, match="dict of options or a cf.ConfigProto"):
        session_options("allow_soft_placement")


def _graph():
    g = cf.Graph()
    with g.as_default():
        a = cf.constant([1.0, 2.0], name="a")
        with cf.device("/gpu:0"):
            b = cf.multiply(a, 3.0, name="b")
    return g, b


def test_soft_placement_and_device_placement_log(capfd):
    g, b = _graph()
    if any(d.device_type == "GPU" for d in cf.kernels.device.available_devices()):
        pytest.skip("this test needs a process without a GPU")
    with cf.Session(graph=g) as s:  # a dict config keeps working; without soft placement the pin fails
        with pytest.raises(cf.errors.InvalidArgumentError, match="allow_soft_placement"):
            s.run(b)
    with cf.Session(graph=g, config=cf.ConfigProto(allow_soft_placement=True, log_device_placement=True)) as s:
        np.testing.assert_array_equal(s.run(b), [3.0, 6.0])
        s.run(b)  # the same plan: logged once
    err = capfd.readouterr().err
    assert err.count("b (Mul): /cpu:0") == 1


def test_operation_timeout_reaches_blocking_ops():
    g = cf.Graph()
    with g.as_default():
        q = cf.FIFOQueue(2, [cf.float32], shapes=[()])
        x = q.dequeue()
    with cf.Session(graph=g, config=cf.ConfigProto(operation_timeout_in_ms=50)) as s:
        with pytest.raises(cf.errors.DeadlineExceededError, match="operation_timeout_in_ms=50"):
            s.run(x)


def test_device_count_gpu_zero_runs_on_the_cpu():
    g, b = _graph()
    with cf.Session(graph=g, config=cf.ConfigProto(device_count={"GPU": 0}, allow_soft_placement=True)) as s:
        assert s._default_device == "/cpu:0"
        np.testing.assert_array_equal(s.run(b), [3.0, 6.0])


def test_intra_op_threads_without_threadpoolctl_is_a_debug_note(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # import fails as if not installed
    with caplog.at_level(logging.DEBUG, logger="collflow"):
        configure_process({"intra_op_parallelism_threads": 3})
    assert "intra_op_parallelism_threads=3 ignored: threadpoolctl is not installed" in caplog.text


def test_bad_gpu_options_are_named():
    with pytest.raises(cf.errors.InvalidArgumentError, match="visible_device_list must list GPU ids"):
        configure_process({"gpu_options": cf.GPUOptions(visible_device_list="first")})
