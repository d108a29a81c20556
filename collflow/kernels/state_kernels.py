"""Kernels of variable ops: the handle resolves to the VariableState in the container."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError, OutOfRangeError
from .registry import register_kernel, KernelContext


@register_kernel("VarHandle")
def _var_handle(op: Any, ctx: KernelContext) -> Any:
    st = ctx.resources.variable(op.attrs["shared_name"], op.attrs["dtype"], op.attrs["shape"], ctx.xp)

    def handle() -> Any:
        return st
    # always the same state: a compiled plan binds it once instead of calling this per run
    handle.constant_result = True  # type: ignore[attr-defined]
    return handle


@register_kernel("ReadVariable")
def _read(op: Any, ctx: KernelContext) -> Any:
    def read(st: Any) -> Any:
        return st.snapshot(op)
    return read


@register_kernel("ZerosLikeVariable")
def _zeros_like_variable(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def zeros(st: Any) -> Any:
        return xp.zeros_like(st.read(op))
    return zeros


@register_kernel("AssignVariable")
def _assign(op: Any, ctx: KernelContext) -> Any:
    validate = op.attrs.get("validate_shape", True)

    def assign(st: Any, value: Any) -> Any:
        return st.assign(value, op, validate)
    return assign


def _check_same_shape(st: Any, v: Any, value: Any, op: Any) -> None:
    if value.shape != v.shape and v.shape != ctx_broadcast(value.shape, v.shape):
        raise InvalidArgumentError(
            f"{op.type} on variable {st.name!r}: value of shape {tuple(value.shape)} does not match "
            f"the variable's shape {tuple(v.shape)}", op)


def ctx_broadcast(a: tuple, b: tuple) -> tuple:
    import numpy as np
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return ()


@register_kernel("AssignAddVariable")
def _assign_add(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def assign_add(st: Any, value: Any) -> Any:
        with st.lock:
            v = st.writable(op)
            _check_same_shape(st, v, value, op)
            xp.add(v, value, out=v)
            return v.copy()
    return assign_add


@register_kernel("AssignSubVariable")
def _assign_sub(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def assign_sub(st: Any, value: Any) -> Any:
        with st.lock:
            v = st.writable(op)
            _check_same_shape(st, v, value, op)
            xp.subtract(v, value, out=v)
            return v.copy()
    return assign_sub


def _check_indices(st: Any, v: Any, idx: Any, op: Any, xp: Any) -> None:
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= v.shape[0]):
        bad = idx[(idx < 0) | (idx >= v.shape[0])].ravel()[0]
        raise InvalidArgumentError(
            f"{op.type} on variable {st.name!r}: index {int(bad)} is out of range [0, {v.shape[0]})", op)


def _scatter(op: Any, ctx: KernelContext, how: str) -> Any:
    xp = ctx.xp

    def scatter(st: Any, idx: Any, upd: Any) -> Any:
        with st.lock:
            _check_indices(st, st.read(op), idx, op, xp)
            # only the touched rows are made writable (a pending checkpoint saves just those)
            v = st.writable_rows(op, idx.reshape(-1))
            if how == "update":
                v[idx] = upd
            elif how == "add":
                xp.add.at(v, idx, upd)  # atomic on the GPU (CuPy's ufunc.at)
            elif xp is np:
                np.subtract.at(v, idx, upd)
            else:  # CuPy's subtract.at takes integers only; a - b is a + (-b) exactly in IEEE
                xp.add.at(v, idx, -upd)
            del v  # drop our reference before taking the snapshot
            return st.snapshot(op)
    return scatter


register_kernel("ScatterAdd")(lambda op, ctx: _scatter(op, ctx, "add"))
register_kernel("ScatterSub")(lambda op, ctx: _scatter(op, ctx, "sub"))
register_kernel("ScatterUpdate")(lambda op, ctx: _scatter(op, ctx, "update"))


@register_kernel("VarIsInitialized")
def _is_init(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    return lambda st: xp.asarray(st.value is not None)


@register_kernel("CountUpTo")
def _count_up_to(op: Any, ctx: KernelContext) -> Any:
    limit = op.attrs["limit"]

    def count_up_to(st: Any) -> Any:
        with st.lock:
            v = st.writable(op)
            before = v.copy()
            if int(before) >= limit:
                raise OutOfRangeError(f"Reached limit of {limit}", op)
            v += 1
            return before
    return count_up_to

