"""Code generation: an ordered, rewritten plan as one Python function of straight-line code.

    _i = 7; v12 = k7(v3, v9)     # call the kernel bound at compile time
    v3 = None                   # free an intermediate right after its last consumer

Asynchronous kernels are issued as early as the order allows and waited on right before
their first consumer; the cancellation token is checked between ops; an error is re-raised
naming the op, its type, its input shapes and its creation site (`raise_op_error`).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Set

import numpy as np

from ..errors import CancelledError, CollflowError, InternalError, InvalidArgumentError, ResourceExhaustedError
from ..graph.graph import Operation, Tensor
from .plan import CancellationToken, CopyNode, Plan

__all__ = ["raise_op_error", "check_outputs"]


_TRIVIAL_ELEMENTS = 64


def _trivial(node: Any, async_ops: Set[Any]) -> bool:
    if node in async_ops or isinstance(node, CopyNode):
        return False
    for t in node.outputs:
        n = t.shape.num_elements() if t.shape.is_fully_defined() else None
        if n is None or n > _TRIVIAL_ELEMENTS:
            return False
    return True


def _codegen(session: Any, order: List[Any], ins: Dict[Any, List[Any]], feeds: List[Tensor],
             fetch_tensors: List[Optional[Tensor]], kernels: Dict[Any, Callable], async_ops: Set[Any],
             on_fail: Sequence[Callable[[], None]] = (), trace: bool = False) -> Plan:
    slot: Dict[Tensor, str] = {}
    names: Dict[str, Any] = {}
    lines: List[str] = []
    emit = lines.append
    check = bool(session._config.get("check_outputs", False))
    pos = {op: i for i, op in enumerate(order)}
    fetch_set = {t for t in fetch_tensors if t is not None}

    for k, t in enumerate(feeds):
        slot[t] = f"f{k}"
        emit(f"f{k} = _feeds[{k}]")

    # last use of each tensor (by position); fetched tensors live to the end
    last_use: Dict[Tensor, int] = {}
    for i, op in enumerate(order):
        for t in ins[op]:
            last_use[t] = i
    # first position needing an async op's completion (data or control)
    first_need: Dict[Operation, int] = {}
    for i, op in enumerate(order):
        for t in ins[op]:
            if t.op in async_ops and t not in slot and t.op not in first_need:
                first_need[t.op] = i
        for c in op.control_inputs:
            if c in async_ops and c not in first_need:
                first_need[c] = i
    waits_before: Dict[int, List[Operation]] = {}
    end = len(order)
    for op in async_ops:
        waits_before.setdefault(first_need.get(op, end), []).append(op)
        # an async kernel that offers launch hints learns whether the plan waits for it at once
        # (nothing runs in between: no overlap to lose, so e.g. a collective may block in MPI)
        hints = getattr(kernels[op], "launch_hints", None)
        if isinstance(hints, dict):
            between = order[pos[op] + 1:first_need.get(op, end)]
            hints["wait_now"] = all(_trivial(n, async_ops) for n in between)

    def out_targets(op: Operation) -> str:
        outs = []
        for t in op.outputs:
            if t in slot:  # fed: the fed value wins, the computed one is dropped
                outs.append("_")
            elif t in last_use or t in fetch_set:
                s = f"v{pos[op]}_{t.value_index}"
                slot[t] = s
                outs.append(s)
            else:
                outs.append("_")
        if not outs:
            return ""
        if len(outs) == 1:
            return outs[0]
        return ", ".join(outs) + ","

    def emit_wait(a: Operation) -> None:
        tgt = out_targets(a)
        emit(f"_i = {pos[a]}")
        if trace:
            emit("_t0 = _clock()")
        emit(f"{tgt + ' = ' if tgt else ''}h{pos[a]}.wait()")
        if trace:
            emit(f"_tr.append(({pos[a]}, 2, _t0, _clock()))")
        emit(f"h{pos[a]} = None")

    if trace:  # the run's recorder (a traced run always has one)
        emit("_tr = _tok.trace if _tok.trace is not None else []")

    consts: Set[str] = set()
    for i, op in enumerate(order):
        for a in waits_before.get(i, ()):
            emit_wait(a)
        kernel = kernels[op]
        if (getattr(kernel, "constant_result", False) and not trace and not ins[op] and op not in async_ops
                and len(op.outputs) == 1 and op.outputs[0] not in slot):
            # a kernel that returns the same object on every call (a variable's handle): called
            # once now, its result a global of the plan (a variable read then costs one call)
            cname = f"c{i}"
            names[cname] = kernel()
            consts.add(cname)
            slot[op.outputs[0]] = cname
            continue
        kname = f"k{i}"
        names[kname] = kernel
        args = ", ".join(slot[t] for t in ins[op])
        emit(f"_i = {i}")
        emit("if _tok.c: _cancelled(_i, _tok)")
        if trace:
            emit("_t0 = _clock()")
        if op in async_ops:
            emit(f"h{i} = {kname}({args})")
            if trace:
                emit(f"_tr.append(({i}, 1, _t0, _clock()))")
        else:
            tgt = out_targets(op)
            emit(f"{tgt + ' = ' if tgt else ''}{kname}({args})")
            if trace:
                emit(f"_tr.append(({i}, 0, _t0, _clock()))")
            if check and op.outputs:
                outs = [slot.get(t, "None") for t in op.outputs]
                emit(f"_chk({i}, ({', '.join(outs)},))")
        # free inputs whose last consumer this was (feeds included: the caller keeps its own)
        for t in dict.fromkeys(ins[op]):
            if last_use.get(t) == i and t not in fetch_set and t in slot and slot[t] not in consts:
                emit(f"{slot[t]} = None")
    for a in waits_before.get(end, ()):
        emit_wait(a)

    ret = []
    for t in fetch_tensors:
        ret.append("None" if t is None else slot[t])
    emit(f"return [{', '.join(ret)}]")

    body = "\n".join("        " + ln for ln in lines)
    src = (
        "def _plan(_feeds, _tok):\n"
        "    _i = -1\n"
        "    try:\n"
        f"{body}\n"
        "    except BaseException as _e:\n"
        "        _fail(_i, _e, locals())\n"
    )
    ops_t = tuple(order)

    def _cancelled(i: int, tok: CancellationToken) -> None:
        raise CancelledError("run cancelled" + (f": {tok.reason}" if tok.reason else "")
                             + f" before op {ops_t[i].name!r}", ops_t[i])

    fail_hooks = tuple(on_fail)

    def _fail(i: int, e: BaseException, frame: dict) -> None:
        _abandon_handles(frame)
        for hook in fail_hooks:  # e.g. give up fusion-buffer claims of this run's producers
            try:
                hook()
            except Exception:
                pass
        if isinstance(e, (KeyboardInterrupt, SystemExit)) or i < 0:
            raise e
        op = ops_t[i]
        raise_op_error(op, e, [names[s] if s in consts else frame.get(s, None)
                               for s in (slot.get(t, "") for t in ins[op])])

    def _chk(i: int, outs: tuple) -> None:
        check_outputs(ops_t[i], outs)

    names.update(_cancelled=_cancelled, _fail=_fail, _chk=_chk, _clock=time.perf_counter)
    code = compile(src, f"<collflow plan {len(order)} ops>", "exec")
    exec(code, names)
    return Plan(list(order), list(feeds), list(fetch_tensors), names["_plan"], src,
                [kernels[o] for o in order], async_ops)


def raise_op_error(op: Operation, e: BaseException, inputs: Sequence[Any]) -> None:
    """Re-raises `e` from running `op` as a collflow error naming the op and its inputs."""
    if isinstance(e, CollflowError):
        if e.op is None:
            raise type(e)(e.message, op) from e
        raise e
    shapes = []
    for v in inputs:
        shp = getattr(v, "shape", None)
        shapes.append(f"{tuple(shp)} {getattr(v, 'dtype', '')}" if shp is not None else type(v).__name__)
    msg = (f"{op.type} op {op.name!r} failed: {type(e).__name__}: {e}"
           + (f"\n  input shapes: {', '.join(shapes)}" if shapes else ""))
    if isinstance(e, MemoryError):
        raise ResourceExhaustedError(msg, op) from e
    if isinstance(e, (ValueError, TypeError, IndexError, ArithmeticError)):
        raise InvalidArgumentError(msg, op) from e
    raise InternalError(msg, op) from e


def check_outputs(op: Operation, outs: Sequence[Any]) -> None:
    """Verifies a kernel's outputs against the op's static dtypes and shapes."""
    for t, v in zip(op.outputs, outs):
        if v is None or t.dtype.name == "resource":
            continue
        dt = getattr(v, "dtype", None)
        if dt is None or np.dtype(dt) != t.dtype.np:
            raise InternalError(f"kernel of {op.type} returned dtype {dt} for output {t.name}, "
                                f"expected {t.dtype.name}", op)
        if not t.shape.matches_value(v.shape):
            raise InternalError(f"kernel of {op.type} returned shape {tuple(v.shape)} for output "
                                f"{t.name}, static shape says {t.shape}", op)


def _abandon_handles(frame: dict) -> None:
    """After a failure, give outstanding async handles a chance to clean up."""
    for k, v in frame.items():
        if k.startswith("h") and v is not None and hasattr(v, "wait"):
            abandon = getattr(v, "abandon", None)
            try:
                if abandon is not None:
                    abandon()
            except Exception:
                pass
