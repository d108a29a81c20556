"""The placer: gives every op of a plan a device, and finds the edges that cross devices.

Rules, in order: an op consuming a resource handle (a variable's reads and updates, a
queue's ops) goes where the resource is; an op pinned with cf.device goes there (or to
the CPU under allow_soft_placement when that device is absent); host-only ops (queues,
stacks, MPI collectives, which work on host buffers) go to the CPU; anything else goes to
the session's default device when a kernel exists there, else to the CPU.  The choice for
each op is recorded in the plan (`plan.placement`) and printed with log_device_placement.
"""
from __future__ import annotations

import sys
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph.graph import Operation, Tensor, canonical_device
from ..graph.registry import declare_host_only
from ..kernels.device import available_devices, get_device
from ..kernels.registry import has_device_kernel, has_kernel

__all__ = ["place", "choose_device", "register_host_only"]


def register_host_only(*op_types: str) -> None:
    """Declares op types that must run on the host (sets their OpDef's `host_only`)."""
    declare_host_only(*op_types)


def _resource_source(t: Tensor) -> Operation:
    """The op that created the resource behind handle `t` (through Switch/Enter/Identity)."""
    op = t.op
    while op.inputs and op.inputs[0].dtype == _dt.resource and op.type in (
            "Switch", "Enter", "Identity", "Merge", "Exit", "NextIteration"):
        op = op.inputs[0].op
    return op


def choose_device(op: Operation, session: Any) -> str:
    """The device `op` runs on by its own attributes (pin, host-only, kernel availability)."""
    pinned = canonical_device(op.device)  # the local part: a job/task prefix names a rank, not a device
    if pinned is not None:
        try:
            get_device(pinned)
            return pinned
        except InvalidArgumentError:
            if session._config.get("allow_soft_placement"):
                return "/cpu:0"
            raise InvalidArgumentError(
                f"op {op.name!r} is pinned to {op.device}, which this process does not have "
                f"(available: {', '.join(d.name for d in available_devices())}); "
                "pass config={'allow_soft_placement': True} to place it on the CPU", op) from None
    default = session._default_device
    if default != "/cpu:0" and (any(t.dtype == _dt.string for t in op.inputs + op.outputs)
                                or op.attrs.get("dtype") is _dt.string):  # (a string variable's handle)
        return "/cpu:0"  # strings (file names, tensor names) have no device representation
    if op.op_def.host_only and not has_device_kernel(op.type, get_device(default).device_type):
        # (a device-specific kernel, e.g. a NCCL all-reduce on the GPU, lifts the host-only rule)
        return "/cpu:0"
    return default if has_kernel(op.type, get_device(default).device_type) else "/cpu:0"


def place(ops: Iterable[Operation], session: Any) -> Dict[Operation, str]:
    """Device name for every op in `ops` (a closed set: a plan's needed ops)."""
    out: Dict[Operation, str] = {}

    def own(op: Operation) -> str:
        return choose_device(op, session)

    def device_of(op: Operation) -> str:
        d = out.get(op)
        if d is not None:
            return d
        res = [t for t in op.inputs if t.dtype == _dt.resource]
        if res and op.type not in ("Switch", "Enter", "Identity", "Merge", "Exit", "NextIteration"):
            src = _resource_source(res[0])
            d = device_of(src) if src is not op else own(op)
        else:
            d = own(op)
        out[op] = d
        return d

    ordered = sorted(ops, key=lambda o: o._id)
    for op in ordered:
        device_of(op)
    _host_values_on_the_host(ordered, out)
    if session._config.get("log_device_placement"):
        for op in sorted(out, key=lambda o: o._id):
            print(f"[placement] {op.name} ({op.type}): {out[op]}", file=sys.stderr)
    return out


# small integer ops that compute sizes: [tf.shape(x)[0], 1], n - 1, stack/concat of such
_SHAPE_ARITHMETIC = frozenset({"Const", "StridedSlice", "Pack", "ConcatV2", "Add", "AddV2", "Sub", "Mul", "Neg",
                               "FloorDiv", "FloorMod", "Maximum", "Minimum", "Cast", "Identity", "Reshape",
                               "ExpandDims", "Squeeze", "Range", "Fill", "GatherV2", "Slice", "Prod",
                               "InvertPermutation"})


def _host_values_on_the_host(ops: List[Operation], out: Dict[Operation, str]) -> None:
    """Values only the host reads are made on the host, as TF keeps int32 tensors of a GPU in
    host memory: integer size arithmetic whose every reader takes it there (a HostMemory size
    argument, a metadata-only op, an op on the CPU) and a constant of any dtype that only
    HostMemory inputs read go to the CPU.  tile(x, [shape(x)[0], 1]) on a GPU would otherwise
    copy shape(x) to the device for the slice and the stack and the multiples back for the
    tile, and a backprop op's constant filter sizes back to the host every step."""
    readers: Dict[Operation, List[Tuple[Operation, int]]] = {}
    for op in ops:
        for i, t in enumerate(op.inputs):
            readers.setdefault(t.op, []).append((op, i))
    for op in reversed(ops):  # consumers (made later) are decided before their producers
        if op.device or out.get(op) == "/cpu:0" or not readers.get(op):
            continue
        ints = all(t.dtype in (_dt.int32, _dt.int64) for t in list(op.inputs) + list(op.outputs))
        if ints and op.type in _SHAPE_ARITHMETIC:
            on_host = all(out.get(c) == "/cpu:0" or c.op_def.metadata_only or i in c.op_def.host_inputs
                          for c, i in readers[op])
        elif op.type == "Const":
            on_host = all(c.op_def.metadata_only or i in c.op_def.host_inputs for c, i in readers[op])
        else:
            continue
        if on_host:
            out[op] = "/cpu:0"


# ops that only route values through frames and branches: their consumers move the values
_ROUTING = frozenset({"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond", "RefEnter", "RefSwitch",
                      "RefMerge", "RefExit", "RefNextIteration", "Identity", "NoOp", "ControlTrigger"})


def bridge_devices(kernels: Dict[Any, Any], placement: Dict[Any, str], ops: Iterable[Any],
                   inplace: Optional[Dict[Any, Tuple[Any, int]]] = None) -> None:
    """Plans with loops and conds run without copy nodes (one device per op): when a plan
    uses a GPU, each kernel is wrapped to move the inputs that live on another device (feeds,
    host-only ops' outputs, values from a CPU op) to its own device as it runs."""
    import numpy as np
    devs = {get_device(placement[op]) for op in ops if isinstance(op, Operation)}
    if all(d.xp is np for d in devs):
        return
    for op in ops:
        if not isinstance(op, Operation) or not op.inputs or op.type in _ROUTING or op not in kernels:
            continue
        if op.op_def.metadata_only:  # reads shapes only: its inputs stay where they are
            continue
        xp = get_device(placement[op]).xp
        wrap = _on_host if xp is np else (lambda k, xp=xp, h=op.op_def.host_inputs: _on_device(k, xp, h))
        kernels[op] = wrap(kernels[op])
        if inplace and op in inplace:  # the buffer-forwarding variant takes the same inputs
            fn, idx = inplace[op]
            inplace[op] = (wrap(fn), idx)


def _host(a: Any) -> Any:
    return a.get() if type(a).__module__.startswith("cupy") else a


def _on_host(k: Any) -> Any:
    def run(*args: Any) -> Any:
        return k(*[_host(a) for a in args])
    return _like(run, k)


def _on_device(k: Any, xp: Any, host_inputs: Tuple[int, ...] = ()) -> Any:
    import numpy as np

    def move(a: Any) -> Any:
        if isinstance(a, (np.ndarray, np.generic)) and a.dtype.kind in "biuf":
            return xp.asarray(a)
        return a

    if host_inputs:  # shape arguments the kernel reads on the host (TF's HostMemory)
        def run(*args: Any) -> Any:
            return k(*[_host(a) if i in host_inputs else move(a) for i, a in enumerate(args)])
    else:
        def run(*args: Any) -> Any:
            return k(*[move(a) for a in args])
    return _like(run, k)


def _like(run: Any, k: Any) -> Any:
    for attr in ("is_async", "constant_result"):  # what the executors read off a kernel
        if hasattr(k, attr):
            setattr(run, attr, getattr(k, attr))
    return run
