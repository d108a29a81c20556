"""Kernels of the per-run stacks used by while-loop gradients.

Switch/Merge/Enter/Exit/NextIteration/LoopCond are interpreted by the dynamic executor
itself; their registered kernels only make plan-time lookups succeed.
"""
from __future__ import annotations

from typing import Any

from .registry import register_kernel, KernelContext


def _passthrough(x: Any, *rest: Any) -> Any:
    return x


for _t in ("Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"):
    register_kernel(_t)(lambda op, ctx: _passthrough)


class _Dead:
    """The value of a tensor on the untaken side of a Switch (the dynamic executor's marker)."""
    __slots__ = ()

    def __repr__(self) -> str:
        return "<dead>"


DEAD = _Dead()


@register_kernel("StackCreate")
def _stack_create(op: Any, ctx: KernelContext) -> Any:
    return lambda: {}  # a fresh stack for every run (and every outer iteration)


@register_kernel("StackPush")
def _stack_push(op: Any, ctx: KernelContext) -> Any:
    slot = op.attrs["slot"]

    def push(stack: dict, i: Any, value: Any) -> dict:
        if value is not DEAD:  # the executor hands a push its dead value (see DynamicPlan)
            stack[(slot, int(i))] = value
        return stack
    return push


@register_kernel("StackRead")
def _stack_read(op: Any, ctx: KernelContext) -> Any:
    slot = op.attrs["slot"]

    def read(stack: dict, i: Any) -> Any:
        # never saved: the value lay on a cond branch not taken in that iteration
        return stack.get((slot, int(i)), DEAD)
    return read
