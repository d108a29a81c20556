"""tf.config (TF 1.14/1.15): device listing, visible GPUs, memory growth and logical-device
settings (before the GPU is initialized, as TF), threads.  Runs without a GPU; a stand-in
CuPy with two devices checks the GPU bookkeeping."""
import types

import pytest

import collflow.compat.v1 as tf
from collflow.kernels import gpu as _gpu
from collflow.runtime import device_config


@pytest.fixture
def two_gpus(monkeypatch):
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 2)))
    monkeypatch.setattr(_gpu, "cupy_or_none", lambda: fake)
    monkeypatch.setitem(_gpu._state, "visible", None)
    monkeypatch.setitem(_gpu._state, "memory_limit", None)
    monkeypatch.setitem(device_config._settings, "memory_growth", {})
    monkeypatch.setitem(device_config._settings, "virtual", {})
    return fake


def test_cpu_only_listing():
    cpu = tf.config.experimental.list_physical_devices("CPU")
    assert cpu == [tf.config.PhysicalDevice(name="/physical_device:CPU:0", device_type="CPU")]
    if not _gpu.cupy_or_none():
        assert tf.config.experimental.list_physical_devices("GPU") == []
        assert tf.config.list_logical_devices() == [tf.config.LogicalDevice("/device:CPU:0", "CPU")]
        assert tf.config.experimental_list_devices() == ["/job:localhost/replica:0/task:0/device:CPU:0"]
    with pytest.raises(ValueError, match="Cannot set memory growth on non-GPU devices"):
        tf.config.experimental.set_memory_growth(cpu[0], True)
    with pytest.raises(ValueError, match="unrecognized device"):
        tf.config.experimental.set_memory_growth("/gpu:0", True)


def test_the_tf1_memory_growth_idiom(two_gpus):
    gpus = tf.config.experimental.list_physical_devices("GPU")
    assert [g.name for g in gpus] == ["/physical_device:GPU:0", "/physical_device:GPU:1"]
    for g in gpus:
        assert tf.config.experimental.get_memory_growth(g) is None
        tf.config.experimental.set_memory_growth(g, True)
        assert tf.config.experimental.get_memory_growth(g) is True
    assert [d.device_type for d in tf.config.list_logical_devices()] == ["CPU", "GPU"]


def test_visible_devices_choose_the_gpu(two_gpus):
    gpus = tf.config.list_physical_devices("GPU")
    tf.config.set_visible_devices(gpus[1], "GPU")
    assert tf.config.get_visible_devices("GPU") == [gpus[1]]
    assert _gpu.pick_gpu(0, 2, _gpu.visible_gpus()) == 1 and _gpu.pick_gpu(3, 2, _gpu.visible_gpus()) == 1
    tf.config.set_visible_devices([], "GPU")
    assert tf.config.get_visible_devices("GPU") == [] and _gpu.pick_gpu(0, 2, _gpu.visible_gpus()) is None
    assert tf.config.list_logical_devices("GPU") == []
    assert _gpu.pick_gpu(1, 2, None) == 1 and _gpu.pick_gpu(2, 2, None) == 0  # by local rank, all visible
    with pytest.raises(ValueError, match="CPU must stay visible"):
        tf.config.set_visible_devices(gpus, "CPU")


def test_logical_device_configuration_caps_the_pool(two_gpus):
    g0 = tf.config.list_physical_devices("GPU")[0]
    tf.config.experimental.set_virtual_device_configuration(
        g0, [tf.config.experimental.VirtualDeviceConfiguration(memory_limit=1024)])
    assert _gpu._state["memory_limit"] == 1024 * 2 ** 20
    assert tf.config.get_logical_device_configuration(g0)[0].memory_limit == 1024
    with pytest.raises(ValueError, match="virtual devices configured"):
        tf.config.experimental.set_memory_growth(g0, True)
    with pytest.raises(ValueError, match="one logical device per GPU"):
        tf.config.set_logical_device_configuration(g0, [tf.config.LogicalDeviceConfiguration(512)] * 2)


def test_no_changes_after_the_gpu_is_initialized(two_gpus, monkeypatch):
    monkeypatch.setattr(_gpu, "initialized", lambda: True)
    g0 = tf.config.list_physical_devices("GPU")[0]
    with pytest.raises(RuntimeError, match="after being initialized"):
        tf.config.experimental.set_memory_growth(g0, True)
    with pytest.raises(RuntimeError, match="after being initialized"):
        tf.config.set_logical_device_configuration(g0, [tf.config.LogicalDeviceConfiguration(512)])


def test_threads_and_recorded_options():
    pytest.importorskip("threadpoolctl")
    import threadpoolctl
    before = tf.config.threading.get_intra_op_parallelism_threads()
    try:
        original = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        tf.config.threading.set_intra_op_parallelism_threads(1)
        assert tf.config.threading.get_intra_op_parallelism_threads() == 1
        assert all(i["num_threads"] == 1 for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas")
        tf.config.threading.set_intra_op_parallelism_threads(0)  # back to the library's default
        assert [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"] == original
        tf.config.threading.set_inter_op_parallelism_threads(2)
        assert tf.config.threading.get_inter_op_parallelism_threads() == 2
        with pytest.raises(ValueError):
            tf.config.threading.set_intra_op_parallelism_threads(-1)
    finally:
        device_config._settings["intra_op"] = before
        from collflow.runtime.config import set_blas_threads
        set_blas_threads(0)
    tf.config.optimizer.set_jit(True)
    assert tf.config.optimizer.get_jit() is True
    tf.config.optimizer.set_jit(False)
    tf.config.set_soft_device_placement(True)
    assert tf.config.get_soft_device_placement() is True


def test_names_are_tensorflows():
    tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
    t = tensorflow.compat.v1.config
    assert set(dir(tf.config)) - set(dir(t)) == {"experimental_list_devices"}  # TF 1.14's, since removed
    assert {n for n in dir(tf.config.experimental) if not n.startswith("_")} <= set(dir(t.experimental))
    assert tf.config.list_physical_devices("CPU")[0].name == t.list_physical_devices("CPU")[0].name
