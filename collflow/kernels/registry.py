"""Kernels, registered per (op type, device type).

A kernel *factory* is called once per op when a plan is compiled: `factory(op, ctx)`
returns the callable that the executor invokes on every run with the op's input values
positionally.  The callable returns the single output, a tuple of outputs, or None for an
op with no outputs.  Binding attributes at plan time keeps the per-run dispatch to one
Python call (`np.add` itself, for Add).

A kernel registered with `device=None` is written against `ctx.xp` and serves every
device whose array module is NumPy-compatible (CPU with NumPy, GPU with CuPy); a kernel
registered for one device type wins over it.  A missing kernel is an error at plan time;
nothing falls back to another device silently.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Optional, Tuple

from ..errors import UnimplementedError

__all__ = ["register_kernel", "get_kernel", "KernelContext", "AsyncHandle", "kernel_devices", "has_kernel",
           "current_cancellation_token", "run_token_scope"]

KernelFactory = Callable[[Any, "KernelContext"], Callable]

# (op_type, device_type or None) -> (factory, is_async)
_KERNELS: Dict[Tuple[str, Optional[str]], Tuple[KernelFactory, bool]] = {}


def register_kernel(op_type: str, device: Optional[str] = None, is_async: bool = False) -> Callable[[KernelFactory], KernelFactory]:
    """Decorator registering a kernel factory for `op_type` on `device` ('CPU', 'GPU' or None=all).

    An async kernel's callable returns an AsyncHandle; the executor keeps running ready ops
    and calls `handle.wait()` only right before the first consumer needs the value.
    """
    dev = device.upper() if device else None

    def deco(factory: KernelFactory) -> KernelFactory:
        key = (op_type, dev)
        if key in _KERNELS:
            raise ValueError(f"kernel for {op_type} on {dev or 'any device'} registered twice")
        _KERNELS[key] = (factory, is_async)
        return factory
    return deco


def get_kernel(op: Any, device_type: str) -> Tuple[KernelFactory, bool]:
    """The kernel for `op` on `device_type`: device-specific first, then the generic one."""
    hit = _KERNELS.get((op.type, device_type)) or _KERNELS.get((op.type, None))
    if hit is None:
        have = kernel_devices(op.type)
        raise UnimplementedError(
            f"no kernel for op type {op.type} on device {device_type}; "
            f"registered for: {', '.join(have) if have else 'no device'}", op)
    return hit


def variadic_outputs(op: Any, fn: Callable) -> Callable:
    """fn for a kernel that returns a tuple of as many values as the op has outputs (split,
    unstack, identity_n, ...): with one output the value itself must come back, not a 1-tuple
    (a 1-tuple would flow on as the tensor's value)."""
    if len(op.outputs) != 1:
        return fn
    return lambda *args: fn(*args)[0]


def has_kernel(op_type: str, device_type: str) -> bool:
    return (op_type, device_type) in _KERNELS or (op_type, None) in _KERNELS


def kernel_devices(op_type: str) -> list:
    return sorted({d or "any" for (t, d) in _KERNELS if t == op_type})


class KernelContext:
    """What a kernel factory may use: the array module, device, session resources, config."""

    __slots__ = ("xp", "device", "resources", "session", "config")

    def __init__(self, xp: Any, device: Any, resources: Any, session: Any, config: Any):
        self.xp = xp
        self.device = device
        self.resources = resources
        self.session = session
        self.config = config


class AsyncHandle:
    """Result of an asynchronous kernel; `wait()` blocks until the outputs are ready.

    Subclasses wrap an MPI request, a CUDA event or a thread's future.  `done()` polls.
    """

    def wait(self) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def done(self) -> bool:  # pragma: no cover - interface
        raise NotImplementedError


class ThreadHandle(AsyncHandle):
    """Runs `fn()` on a worker thread; wait() returns its result or re-raises its error."""

    __slots__ = ("_future",)

    def __init__(self, fn: Callable[[], Any]):
        self._future = _pool().submit(fn)

    def wait(self) -> Any:
        return self._future.result()

    def done(self) -> bool:
        return self._future.done()


_POOL = None


def _pool() -> Any:
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor
        _POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="collflow-async")
    return _POOL


_run_tls = threading.local()


def current_cancellation_token() -> Any:
    """The CancellationToken of the run executing on this thread (None outside a run).

    Blocking kernels (queues, collectives) poll it so a cancelled run never hangs in them.
    """
    return getattr(_run_tls, "token", None)


class run_token_scope:
    """Makes `token` the current run's token on this thread for the `with` block."""

    __slots__ = ("token", "prev")

    def __init__(self, token: Any):
        self.token = token

    def __enter__(self) -> Any:
        self.prev = getattr(_run_tls, "token", None)
        _run_tls.token = self.token
        return self.token

    def __exit__(self, *exc: Any) -> None:
        _run_tls.token = self.prev


# -- buffer forwarding -------------------------------------------------------------------
# op type -> (factory of an in-place variant, index of the input it may overwrite)
_INPLACE: Dict[str, Tuple[KernelFactory, int]] = {}


def register_inplace(op_type: str, index: int = 0) -> Callable[[KernelFactory], KernelFactory]:
    """Registers an in-place variant of an op's (NumPy) kernel that may write its result into
    input `index` when the executor knows that input dies at this op.  The variant must still
    check at run time, with `exclusively_owned`, that nothing else holds the array, and fall
    back to allocating otherwise."""
    def deco(factory: KernelFactory) -> KernelFactory:
        _INPLACE[op_type] = (factory, index)
        return factory
    return deco


def get_inplace(op_type: str) -> Optional[Tuple[KernelFactory, int]]:
    return _INPLACE.get(op_type)


def exclusively_owned(a: Any) -> bool:
    """True when NumPy array `a` owns its writable buffer and only the running plan holds it.

    References when called from an in-place kernel invoked by a plan: the plan's slot, the
    kernel's parameter, this function's parameter and getrefcount's argument.
    """
    return (type(a) is _np.ndarray and a.base is None and a.flags.writeable
            and _sys.getrefcount(a) <= 4)


import sys as _sys  # noqa: E402
import numpy as _np  # noqa: E402


# -- outputs written into a consumer's buffer ---------------------------------------------
# op type -> factory(op, ctx) -> fn(*inputs, out=array) writing the op's one output there, or None
_INTO: Dict[str, KernelFactory] = {}


def register_into(op_type: str) -> Callable[[KernelFactory], KernelFactory]:
    """Registers a variant of an op's (NumPy) kernel that writes its single output into a
    given array: `factory(op, ctx)` returns fn(*inputs, out=array) -> out, NumPy's own
    convention (a ufunc is such a function), or None when the op's attributes or dtypes
    do not allow it.  The executor uses it to let a producer compute
    straight into a slot its consumer offers, e.g. a gradient into the fusion buffer of the
    all-reduce that reads it (runtime/plan_buffers.py `_place_outputs`).  `out` has the op's
    static output shape and dtype; the result must equal the plain kernel's."""
    def deco(factory: KernelFactory) -> KernelFactory:
        if op_type in _INTO:
            raise ValueError(f"into-variant of {op_type} registered twice")
        _INTO[op_type] = factory
        return factory
    return deco


def get_into(op_type: str) -> Optional[KernelFactory]:
    return _INTO.get(op_type)


# -- plan-level fusion -------------------------------------------------------------------
# (consumer op type, producer op type) -> factory(producer, consumer, index, ctx) -> callable or None
_FUSIONS: Dict[Tuple[str, str], KernelFactory] = {}


def register_fusion(consumer_type: str, producer_type: str) -> Callable[[Callable], Callable]:
    """Registers a kernel that runs a `consumer_type` op together with the `producer_type` op
    computing one of its inputs (say input k), so the intermediate is never materialized.

    The executor fuses a pair when that input is the producer's only output, the consumer is
    its only use in the plan, it is neither fed nor fetched, and both ops run on one device
    (see runtime/plan_fusion.py `_fuse_pairs`).  `factory(producer, consumer, k, ctx)` returns the
    fused callable, or None when this pair does not qualify; the callable takes the
    consumer's inputs with input k replaced by the producer's inputs, and returns what the
    consumer returns.  The fused result must equal the unfused one up to rounding.
    """
    def deco(factory: Callable) -> Callable:
        key = (consumer_type, producer_type)
        if key in _FUSIONS:
            raise ValueError(f"fusion of {producer_type} into {consumer_type} registered twice")
        _FUSIONS[key] = factory
        return factory
    return deco


def get_fusion(consumer_type: str, producer_type: str) -> Optional[Callable]:
    return _FUSIONS.get((consumer_type, producer_type))


def has_fusions(consumer_type: str) -> bool:
    return any(c == consumer_type for c, _ in _FUSIONS)


def has_device_kernel(op_type: str, device_type: str) -> bool:
    """True when a kernel written for exactly this device type exists (not only a generic one)."""
    return (op_type, device_type) in _KERNELS
