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


@register_kernel("StackCreate")
def _stack_create(op: Any, ctx: KernelContext) -> Any:
    return lambda: []  # a fresh stack for every run (and every outer iteration)


@register_kernel("StackPush")
def _stack_push(op: Any, ctx: KernelContext) -> Any:
    def push(stack: list, *vals: Any) -> list:
        stack.append(vals)
        return stack
    return push


@register_kernel("StackRead")
def _stack_read(op: Any, ctx: KernelContext) -> Any:
    n = len(op.outputs)

    def read(stack: list, i: Any) -> Any:
        vals = stack[int(i)]
        return vals[0] if n == 1 else tuple(vals)
    return read
