"""Device objects: what array module a device computes with.

`/cpu:0` computes with NumPy.  GPU devices (CuPy) are created by the GPU layer when CuPy
is importable and sees a device; without one, asking for a GPU is a clear error.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from ..errors import InvalidArgumentError

__all__ = ["Device", "cpu_device", "get_device", "available_devices", "get_array_module", "to_host"]


class Device:
    """A compute device: its canonical name ('/cpu:0'), type ('CPU'/'GPU'), index and xp."""

    __slots__ = ("name", "device_type", "index", "xp")

    def __init__(self, name: str, device_type: str, index: int, xp: Any):
        self.name = name
        self.device_type = device_type
        self.index = index
        self.xp = xp

    def __repr__(self) -> str:
        return f"<Device {self.name}>"


_CPU = Device("/cpu:0", "CPU", 0, np)
_EXTRA: Dict[str, Device] = {}


def cpu_device() -> Device:
    return _CPU


def register_device(dev: Device) -> None:
    """Adds a device (the GPU layer registers GPUs; tests register simulated ones)."""
    _EXTRA[dev.name] = dev


def unregister_device(name: str) -> None:
    _EXTRA.pop(name, None)


def available_devices() -> List[Device]:
    return [_CPU] + list(_EXTRA.values())


def get_device(name: Optional[str]) -> Device:
    if name is None or name == "/cpu:0":
        return _CPU
    dev = _EXTRA.get(name)
    if dev is None:
        have = ", ".join(d.name for d in available_devices())
        raise InvalidArgumentError(f"device {name} is not available in this process (available: {have})")
    return dev


def get_array_module(x: Any) -> Any:
    """numpy for NumPy arrays and scalars, cupy for CuPy arrays (Chainer's helper)."""
    mod = type(x).__module__
    if mod.startswith("cupy"):
        import cupy
        return cupy
    return np


def to_host(x: Any) -> np.ndarray:
    """x as a NumPy array: a CuPy array is copied to the host (CuPy refuses np.asarray on one)."""
    if isinstance(x, np.ndarray):
        return x
    return x.get() if type(x).__module__.startswith("cupy") else np.asarray(x)


def copy_between(src: Device, dst: Device) -> Any:
    """A function copying an array from device `src` to device `dst` (Send/Recv's work).

    Between a NumPy device and a CuPy device the copy goes through the GPU layer
    (asynchronous on a copy stream); between two NumPy devices (a simulated device in
    tests) it is a plain copy, so the consumer never aliases the producer's memory.
    """
    if src.xp is np and dst.xp is np:
        return lambda x: np.array(x, copy=True)
    from . import gpu
    return gpu.copy_function(src, dst)
