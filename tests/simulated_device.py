"""A simulated GPU for machines without one: NumPy through a module whose every array is a
subclass (`DevArray`), registered as /gpu:0.  tests/test_device_discipline.py uses it to flag
kernels that hand host arrays to device ops; `COLLFLOW_TEST_DEVICE=sim` (tests/conftest.py)
runs every session of the suite on it, the CPU-only twin of the GPU diagnostic
`COLLFLOW_TEST_DEVICE=gpu` (placement, copies and the kernels' device paths, with NumPy's
semantics: CuPy's own differences need a real GPU)."""
import contextlib
import types

import numpy as np


class DevArray(np.ndarray):
    """An array 'on the device'."""


def _dev(r):
    if type(r) is np.ndarray:
        return r.view(DevArray)
    if isinstance(r, np.generic):
        return np.asarray(r).view(DevArray)
    if isinstance(r, tuple) and hasattr(r, "_fields"):  # a named tuple (linalg's results)
        return type(r)(*(_dev(x) for x in r))
    if isinstance(r, (tuple, list)):
        return type(r)(_dev(x) for x in r)
    return r


class DeviceModule:
    """NumPy, with every array it returns a DevArray (ufuncs keep the subclass themselves)."""

    def __init__(self, mod):
        self._m = mod

    def __getattr__(self, name):
        if name == "asnumpy" and self._m is np:  # CuPy's device-to-host copy: a plain array
            return lambda a, *args, **kw: np.array(a, copy=True).view(np.ndarray)
        obj = getattr(self._m, name)
        if isinstance(obj, types.ModuleType):
            return DeviceModule(obj)
        if isinstance(obj, (np.ufunc, type)) or not callable(obj):
            return obj
        return lambda *a, **k: _dev(obj(*a, **k))


def simulated_copy(plain, xp):
    """device.copy_between for the simulated device: copies to it make DevArrays, copies from
    it plain arrays; other pairs as `plain`."""
    def copy_between(src, dst):
        if dst.xp is xp:
            return lambda x: np.array(x, copy=True).view(DevArray) if isinstance(x, (np.ndarray, np.generic)) else x
        if src.xp is xp:
            return lambda x: np.array(x, copy=True) if isinstance(x, np.ndarray) else x
        return plain(src, dst)
    return copy_between


def install():
    """Registers the simulated device as /gpu:0 for the whole process (the suite's diagnostic)."""
    import collflow.kernels.device as device_mod
    from collflow.kernels.device import Device, register_device
    xp = DeviceModule(np)
    register_device(Device("/gpu:0", "GPU", 0, xp))
    device_mod.copy_between = simulated_copy(device_mod.copy_between, xp)


@contextlib.contextmanager
def registered(dev):
    """`dev` registered for the block; what had its name before (the suite's simulated GPU
    under COLLFLOW_TEST_DEVICE=sim) is registered again after it."""
    from collflow.kernels.device import available_devices, register_device, unregister_device
    prev = next((d for d in available_devices() if d.name == dev.name), None)
    register_device(dev)
    try:
        yield dev
    finally:
        if prev is None:
            unregister_device(dev.name)
        else:
            register_device(prev)
