"""tf.config (TF 1.14/1.15 and its compat.v1 names): the process's devices and threads.

    gpus = tf.config.experimental.list_physical_devices("GPU")
    for gpu in gpus:
        tf.config.experimental.set_memory_growth(gpu, True)
    tf.config.threading.set_intra_op_parallelism_threads(4)

TF1 programs call these before their first Session.  What each does here:
- list_physical_devices: the CPU, and one GPU per CUDA device CuPy sees (none without CuPy).
- set_visible_devices: which GPUs this process may use; an empty GPU list keeps it on the
  CPU.  As in TF, only before the GPU is initialized (the first Session or GPU op).
- experimental.set_memory_growth: recorded.  collflow's GPU memory comes from CuPy's pool, which grows on
  demand, so memory always "grows"; TF's alternative (take the whole GPU up front) is not done.
- experimental.set_virtual_device_configuration (set_logical_device_configuration) with one LogicalDeviceConfiguration(memory_limit=MB):
  caps CuPy's pool at that size; several logical GPUs on one device are refused.
- threading.set_intra_op_parallelism_threads: the BLAS thread count (threadpoolctl), as the
  ConfigProto field; inter-op threads and the optimizer/JIT settings are recorded only.
"""
from __future__ import annotations

import collections
import types
from typing import Any, Dict, List, Optional

from ..kernels import gpu as _gpu
from .config import set_blas_threads

__all__ = ["PhysicalDevice", "LogicalDevice", "LogicalDeviceConfiguration", "list_physical_devices",
           "list_logical_devices", "get_visible_devices", "set_visible_devices", "get_logical_device_configuration",
           "set_logical_device_configuration", "get_soft_device_placement", "set_soft_device_placement",
           "experimental_list_devices", "threading", "optimizer", "experimental",
           "experimental_run_functions_eagerly", "experimental_functions_run_eagerly"]

PhysicalDevice = collections.namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = collections.namedtuple("LogicalDevice", ["name", "device_type"])


class LogicalDeviceConfiguration(collections.namedtuple(
        "LogicalDeviceConfiguration", ["memory_limit", "experimental_priority", "experimental_device_ordinal"])):
    """A logical device's settings: memory_limit in MB (experimental.VirtualDeviceConfiguration)."""

    def __new__(cls, memory_limit: Optional[int] = None, experimental_priority: Optional[int] = None,
                experimental_device_ordinal: Optional[int] = None):
        return super().__new__(cls, memory_limit, experimental_priority, experimental_device_ordinal)


_settings: Dict[str, Any] = {"memory_growth": {}, "virtual": {}, "soft_placement": True, "inter_op": 0,
                             "intra_op": 0, "jit": False, "optimizer_options": {}, "functions_eagerly": False}


def _gpu_count() -> int:
    cp = _gpu.cupy_or_none()
    if cp is None:
        return 0
    try:
        return int(cp.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - a broken driver: no usable GPU
        return 0


def _cpu() -> PhysicalDevice:
    return PhysicalDevice("/physical_device:CPU:0", "CPU")


def list_physical_devices(device_type: Optional[str] = None) -> List[PhysicalDevice]:
    """The devices this host has: 'CPU' and 'GPU' ones (device_type filters; None lists all)."""
    devices = [_cpu()] + [PhysicalDevice(f"/physical_device:GPU:{i}", "GPU") for i in range(_gpu_count())]
    if device_type is None:
        return devices
    return [d for d in devices if d.device_type == str(device_type).upper()]


def _check_device(device: Any, what: str) -> PhysicalDevice:
    if not isinstance(device, PhysicalDevice) or device not in list_physical_devices():
        raise ValueError(f"{what}: unrecognized device {device!r}; pass one of "
                         f"tf.config.experimental.list_physical_devices()")
    return device


def _gpu_index(device: PhysicalDevice) -> int:
    return int(device.name.rsplit(":", 1)[1])


def get_visible_devices(device_type: Optional[str] = None) -> List[PhysicalDevice]:
    """The physical devices this process may use (all, unless set_visible_devices narrowed them)."""
    visible = _gpu.visible_gpus()
    devices = [d for d in list_physical_devices(device_type)
               if d.device_type != "GPU" or visible is None or _gpu_index(d) in visible]
    return devices


def set_visible_devices(devices: Any, device_type: Optional[str] = None) -> None:
    """Restricts this process to `devices` (a PhysicalDevice or a list) of `device_type`; the
    CPU always stays visible.  RuntimeError once the GPU is initialized, as TF's."""
    devices = [devices] if isinstance(devices, PhysicalDevice) or not isinstance(devices, (list, tuple)) \
        else list(devices)
    for d in devices:
        _check_device(d, "set_visible_devices")
    kinds = {device_type.upper()} if device_type else {d.device_type for d in devices} | {"GPU"}
    if "CPU" in kinds and not any(d.device_type == "CPU" for d in devices):
        raise ValueError("set_visible_devices: the CPU must stay visible (collflow runs its host ops there)")
    if "GPU" in kinds:
        _gpu.set_visible_gpus([_gpu_index(d) for d in devices if d.device_type == "GPU"])


def list_logical_devices(device_type: Optional[str] = None) -> List[LogicalDevice]:
    """The devices Sessions use: /device:CPU:0 and, with a visible GPU, /device:GPU:0 (each
    process drives one GPU: its local rank's among the visible ones)."""
    devices = [LogicalDevice("/device:CPU:0", "CPU")]
    if any(d.device_type == "GPU" for d in get_visible_devices()):
        devices.append(LogicalDevice("/device:GPU:0", "GPU"))
    if device_type is None:
        return devices
    return [d for d in devices if d.device_type == str(device_type).upper()]


def experimental_list_devices() -> List[str]:
    """TF 1.14's tf.config.experimental_list_devices: the logical devices' full names."""
    return [f"/job:localhost/replica:0/task:0{d.name}" for d in list_logical_devices()]


def _check_gpu(device: Any, what: str) -> PhysicalDevice:
    d = _check_device(device, what)
    if d.device_type != "GPU":
        raise ValueError(f"Cannot {what.replace('_', ' ')} on non-GPU devices ({d.name})")
    return d


def _get_memory_growth(device: PhysicalDevice) -> Optional[bool]:
    """The memory-growth setting of a GPU (None until set, as TF)."""
    return _settings["memory_growth"].get(_check_gpu(device, "get_memory_growth").name)


def _set_memory_growth(device: PhysicalDevice, enable: bool) -> None:
    """Records the setting (collflow's pool grows on demand either way: see the module doc);
    RuntimeError once the GPU is initialized, as TF's."""
    d = _check_gpu(device, "set_memory_growth")
    if _gpu.initialized():
        raise RuntimeError("Physical devices cannot be modified after being initialized")
    if _settings["virtual"].get(d.name):
        raise ValueError("Cannot set memory growth on device when virtual devices configured")
    _settings["memory_growth"][d.name] = bool(enable)


def _get_virtual_device_configuration(device: PhysicalDevice) -> Optional[List[LogicalDeviceConfiguration]]:
    """The logical-device configurations set for a device (None until set)."""
    return _settings["virtual"].get(_check_device(device, "get_virtual_device_configuration").name)


def _set_virtual_device_configuration(device: PhysicalDevice, logical_devices: Any) -> None:
    """One LogicalDeviceConfiguration(memory_limit=MB) for a GPU caps collflow's memory pool on
    it; several logical devices per GPU (or any on the CPU) are refused."""
    d = _check_device(device, "set_virtual_device_configuration")
    configs = [logical_devices] if isinstance(logical_devices, LogicalDeviceConfiguration) or \
        not isinstance(logical_devices, (list, tuple)) else list(logical_devices)
    if _gpu.initialized():
        raise RuntimeError("Virtual devices cannot be modified after being initialized")
    if d.device_type != "GPU" or len(configs) != 1:
        raise ValueError(f"set_virtual_device_configuration: collflow runs one logical device per GPU and none on "
                         f"the CPU; got {len(configs)} for {d.name}")
    limit = configs[0].memory_limit
    if limit is not None and (not isinstance(limit, (int, float)) or limit <= 0):
        raise ValueError(f"memory_limit must be a positive number of MB, got {limit!r}")
    _settings["virtual"][d.name] = configs
    _gpu.set_memory_limit(None if limit is None else int(limit * 2 ** 20))


def get_soft_device_placement() -> bool:
    return _settings["soft_placement"]


def set_soft_device_placement(enabled: bool) -> None:
    """Recorded (a Session's ConfigProto(allow_soft_placement=) is what its placement reads)."""
    _settings["soft_placement"] = bool(enabled)


def _set_intra(num_threads: int) -> None:
    n = int(num_threads)
    if n < 0:
        raise ValueError(f"intra_op_parallelism_threads must be >= 0, got {n}")
    _settings["intra_op"] = n
    set_blas_threads(n)  # 0: the library's default again


def _set_inter(num_threads: int) -> None:
    n = int(num_threads)
    if n < 0:
        raise ValueError(f"inter_op_parallelism_threads must be >= 0, got {n}")
    _settings["inter_op"] = n


threading = types.SimpleNamespace(
    get_intra_op_parallelism_threads=lambda: _settings["intra_op"],
    set_intra_op_parallelism_threads=_set_intra,
    get_inter_op_parallelism_threads=lambda: _settings["inter_op"],
    set_inter_op_parallelism_threads=_set_inter)
threading.__doc__ = ("tf.config.threading: intra-op threads set the BLAS thread count (0: the library's "
                     "default); inter-op threads are recorded.")


def _set_jit(enabled: bool) -> None:
    _settings["jit"] = bool(enabled)


def _set_options(options: Dict[str, Any]) -> None:
    _settings["optimizer_options"].update(dict(options))


optimizer = types.SimpleNamespace(get_jit=lambda: _settings["jit"], set_jit=_set_jit,
                                  get_experimental_options=lambda: dict(_settings["optimizer_options"]),
                                  set_experimental_options=_set_options)
optimizer.__doc__ = "tf.config.optimizer: recorded only (collflow has no XLA and no Grappler)."

get_logical_device_configuration = _get_virtual_device_configuration
set_logical_device_configuration = _set_virtual_device_configuration

experimental = types.SimpleNamespace(
    list_physical_devices=list_physical_devices, list_logical_devices=list_logical_devices,
    get_visible_devices=get_visible_devices, set_visible_devices=set_visible_devices,
    get_memory_growth=_get_memory_growth, set_memory_growth=_set_memory_growth,
    get_virtual_device_configuration=_get_virtual_device_configuration,
    set_virtual_device_configuration=_set_virtual_device_configuration,
    VirtualDeviceConfiguration=LogicalDeviceConfiguration)
experimental.__doc__ = "tf.config.experimental: TF 1.14/1.15's names of the device functions."


def experimental_run_functions_eagerly(run_eagerly: bool) -> None:
    """True: a tf.function calls its Python function directly (no tracing, caching or automatic
    control dependencies); in graph mode its ops are then built where it is called, as TF's."""
    _settings["functions_eagerly"] = bool(run_eagerly)


def experimental_functions_run_eagerly() -> bool:
    """Whether tf.functions call their Python functions directly (experimental_run_functions_eagerly)."""
    return _settings["functions_eagerly"]
