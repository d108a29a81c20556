"""Kernels of constants, placeholders, identity and no-op."""
from __future__ import annotations

from typing import Any

from ..errors import InvalidArgumentError
from .registry import register_kernel, KernelContext


@register_kernel("Const")
def _const(op: Any, ctx: KernelContext) -> Any:
    # moved to the device once, when the plan is compiled
    v = ctx.xp.asarray(op.attrs["value"])

    def const() -> Any:
        return v
    # the same object on every call: a plan binds it once (a constant inside a loop body is
    # then no call per iteration)
    const.constant_result = True  # type: ignore[attr-defined]
    return const


@register_kernel("Placeholder")
def _placeholder(op: Any, ctx: KernelContext) -> Any:
    def run() -> Any:
        raise InvalidArgumentError(
            f"You must feed a value for placeholder {op.name!r} "
            f"(dtype {op.attrs['dtype'].name}, shape {op.attrs['shape']})", op)
    return run


@register_kernel("PlaceholderWithDefault")
def _pwd(op: Any, ctx: KernelContext) -> Any:
    return _ident


def _ident(x: Any) -> Any:
    return x


register_kernel("Identity")(lambda op, ctx: _ident)
register_kernel("StopGradient")(lambda op, ctx: _ident)


def _noop() -> None:
    return None


register_kernel("NoOp")(lambda op, ctx: _noop)
