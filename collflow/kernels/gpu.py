"""The GPU layer: CuPy devices, streams, and host<->device copies.

`setup()` runs once per process: when CuPy imports and sees at least one GPU it registers
`/gpu:0` as this process's GPU, chosen by the rank's local rank (the launcher's variables:
OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID, LOCAL_RANK, ...) modulo the
number of GPUs, and loads the GPU-specific kernels.  Without CuPy or a GPU it does nothing,
and asking for a GPU is a clear error from the device registry.

Copies between host and device run on their own stream: the copy is recorded with a CUDA
event and the consumer's stream waits on that event (no host synchronisation) unless the
consumer is on the host, which must wait for the bytes.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Optional

import numpy as np

from .device import Device, register_device

__all__ = ["setup", "is_available", "local_rank_from_env", "copy_function", "cupy_or_none", "capture_graph",
           "pick_gpu", "initialized", "visible_gpus", "set_visible_gpus", "set_memory_limit"]

_state: dict = {"done": False, "cupy": None, "device": None, "copy_stream": None,
                "visible": None, "memory_limit": None, "chosen": False}  # the last three: tf.config's
_LOCAL_RANK_VARS = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                    "SLURM_LOCALID", "PMI_LOCAL_RANK", "LOCAL_RANK")


def local_rank_from_env() -> Optional[int]:
    """This process's rank among the ranks on its node, as the launcher announced it."""
    for v in _LOCAL_RANK_VARS:
        s = os.environ.get(v)
        if s is not None and s.strip().isdigit():
            return int(s)
    return None


def cupy_or_none() -> Any:
    if os.environ.get("COLLFLOW_DISABLE_GPU") == "1":
        return None
    try:
        import cupy  # noqa: F401
    except Exception:
        return None
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:
        return None
    return cupy


def setup(local_rank: Optional[int] = None) -> Optional[Device]:
    """Registers this process's GPU as /gpu:0 (once); returns it, or None without a GPU."""
    if _state["done"]:
        return _state["device"]
    _state["done"] = True
    cp = cupy_or_none()
    if cp is None:
        return None
    _state["chosen"] = True  # the choice is made, even if it is "no GPU" (nothing visible)
    n = cp.cuda.runtime.getDeviceCount()
    lr = local_rank if local_rank is not None else (local_rank_from_env() or 0)
    phys = pick_gpu(lr, n, _state["visible"])
    if phys is None:
        return None  # tf.config.set_visible_devices([], "GPU"): this process stays on the CPU
    cp.cuda.Device(phys).use()
    if _state["memory_limit"] is not None:
        cp.get_default_memory_pool().set_limit(size=_state["memory_limit"])
    from . import gpu_blas
    # kernels see CuPy with capture-aware matmul/dot (capture_graph below)
    dev = Device("/gpu:0", "GPU", phys, gpu_blas.namespace(cp))
    register_device(dev)
    _state.update(cupy=cp, device=dev, copy_stream=cp.cuda.Stream(non_blocking=True))
    from . import gpu_kernels  # noqa: F401  (fused CuPy kernels override the generic ones)
    return dev


def pick_gpu(local_rank: int, count: int, visible: Optional[list]) -> Optional[int]:
    """The GPU of a process: its local rank's among the visible ones (all when None), or None."""
    allowed = [i for i in (visible if visible is not None else range(count)) if i < count]
    return allowed[local_rank % len(allowed)] if allowed else None


def initialized() -> bool:
    """Whether this process's GPU choice is made (setup ran on a host with a GPU)."""
    return bool(_state.get("chosen"))


def visible_gpus() -> Optional[list]:
    """The GPU indices tf.config.set_visible_devices allowed (None: all)."""
    return None if _state["visible"] is None else list(_state["visible"])


def set_visible_gpus(indices: list) -> None:
    """Which GPUs setup() may pick from (before it runs, as TF's rule)."""
    if initialized():
        raise RuntimeError("Visible devices cannot be modified after being initialized")
    _state["visible"] = sorted(set(int(i) for i in indices))


def set_memory_limit(nbytes: Optional[int]) -> None:
    """A cap on the GPU memory pool, applied when setup() picks the GPU."""
    if initialized():
        raise RuntimeError("Virtual devices cannot be modified after being initialized")
    _state["memory_limit"] = nbytes


def is_available() -> bool:
    return setup() is not None


def capture_graph(fn: Callable[[], Any], stream: Any = None) -> Any:
    """Records what `fn()` queues on `stream` (a non-blocking CuPy stream; a new one if None)
    into a CUDA graph and returns it (`graph.launch(stream)` replays it).  `fn` must have run
    on that stream before, so the memory pool already holds its buffers, and must not
    synchronise the host.  GEMMs go through collflow's own cuBLAS handle while recording:
    CuPy refuses cuBLAS calls during a capture (kernels/gpu_blas.py)."""
    cp = _state["cupy"]
    if cp is None:
        raise RuntimeError("capture_graph needs CuPy and a GPU")
    from . import gpu_blas
    s = stream if stream is not None else cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        gpu_blas.set_capturing(True)
        try:
            fn()
        finally:
            gpu_blas.set_capturing(False)
            graph = s.end_capture()
    return graph


class _CopyHandle:
    """An in-flight copy on the copy stream; wait() orders the consumer after it.  `source`
    keeps a device source alive until the copy has read it: freed earlier, CuPy's pool could
    hand its memory to a kernel on the compute stream while the copy stream still reads it."""

    __slots__ = ("value", "event", "to_host", "source")

    def __init__(self, value: Any, event: Any, to_host: bool, source: Any = None):
        self.value, self.event, self.to_host, self.source = value, event, to_host, source

    def wait(self) -> Any:
        if self.to_host:
            self.event.synchronize()  # the host needs the bytes now
            self.source = None
        else:
            _state["cupy"].cuda.get_current_stream().wait_event(self.event)
        return self.value

    def done(self) -> bool:
        return self.event.done


class _Ready:
    """A copy with nothing to do (the value is already where it is wanted)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def wait(self) -> Any:
        return self.value

    def done(self) -> bool:
        return True


def copy_function(src: Device, dst: Device) -> Callable[[Any], Any]:
    """An asynchronous copy kernel from `src` to `dst` (one side a CuPy device)."""
    cp = _state["cupy"]
    if cp is None:
        raise RuntimeError("GPU copies need CuPy and a GPU")
    stream = _state["copy_stream"]
    if src.xp is np:  # host -> device
        def h2d(x: Any) -> Any:  # a handle: _CopyHandle or _Ready
            if isinstance(x, cp.ndarray):  # a CuPy array fed to a host tensor: already there
                return _Ready(x)
            # The copy stream first waits for the work already queued on the compute stream:
            # the block the pool hands out here may have been freed by the host while kernels
            # that read it (last step's feed, say) are still queued there; seen as a flaky
            # wrong average in test_gpu on an H200.  (Not np.ascontiguousarray: it turns a 0-d
            # array into shape (1,).)
            stream.wait_event(cp.cuda.get_current_stream().record())
            with stream:
                d = cp.asarray(x)
                ev = stream.record()
            return _CopyHandle(d, ev, False)
        h2d.is_async = True  # type: ignore[attr-defined]
        return h2d
    if dst.xp is np:  # device -> host
        def d2h(x: Any) -> Any:
            if not isinstance(x, cp.ndarray):  # a host value (a NumPy feed, say): nothing to copy
                return _Ready(x)
            x = cp.ascontiguousarray(x).reshape(x.shape)  # get(out=) needs C order; keeps 0-d
            # the copy stream must see the producer's writes first
            stream.wait_event(cp.cuda.get_current_stream().record())
            out = cp.cuda.alloc_pinned_memory(x.nbytes)
            host = np.frombuffer(out, dtype=x.dtype, count=x.size).reshape(x.shape)
            x.get(stream=stream, out=host)
            return _CopyHandle(host, stream.record(), True, source=x)
        d2h.is_async = True  # type: ignore[attr-defined]
        return d2h

    def d2d(x: Any) -> Any:
        return cp.array(x, copy=True)
    return d2d
