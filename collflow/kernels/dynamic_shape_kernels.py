"""Kernels of the ops whose size arguments are run-time tensors (collflow/graph/ops/dynamic_args_ops.py).

The size arguments (multiples, paddings, depth, shape, axis, size_splits) are HostMemory inputs
(their ops' `host_inputs`): they arrive as host arrays and are read as Python ints here; the
results are built with `ctx.xp`, so on a GPU they stay device arrays.  Bad run-time values
raise InvalidArgumentError with TF's messages.
"""
from __future__ import annotations

from typing import Any, List, Tuple

from ..errors import InvalidArgumentError
from .array_kernels import constant_pad, fold_mirror_pad, one_hot_values
from .registry import KernelContext, register_kernel, variadic_outputs



def _ints(v: Any) -> List[int]:
    """A host int tensor's entries as Python ints (a 0-d tensor gives one)."""
    return [int(d) for d in v.reshape(-1).tolist()]


def _pairs(op: Any, pads: Any, x: Any) -> List[Tuple[int, int]]:
    """The [before, after] rows of a run-time paddings matrix, checked against x as TF checks them."""
    if pads.ndim != 2 or pads.shape[1] != 2 or pads.shape[0] != x.ndim:
        raise InvalidArgumentError(
            f"The first dimension of paddings must be the rank of inputs[{','.join(map(str, pads.shape))}] "
            f"[{','.join(map(str, x.shape))}]", op)
    rows = [(int(a), int(b)) for a, b in pads.tolist()]
    for a, b in rows:
        if a < 0 or b < 0:
            raise InvalidArgumentError(f"Paddings must be non-negative: {a} {b}", op)
    return rows


@register_kernel("TileDynamic")
def _tile(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def tile(x: Any, multiples: Any) -> Any:
        mult = _ints(multiples)
        if multiples.ndim != 1 or len(mult) != x.ndim:
            raise InvalidArgumentError(f"Expected multiples argument to be a vector of length {x.ndim} but got "
                                       f"length {len(mult)}", op)
        for i, m in enumerate(mult):
            if m < 0:
                raise InvalidArgumentError(f"Expected multiples[{i}] >= 0, but got {m}", op)
        return xp.tile(x, mult) if mult else xp.array(x, copy=True)
    return tile


@register_kernel("TileDynamicGrad")
def _tile_grad(op: Any, ctx: KernelContext) -> Any:
    def tile_grad(g: Any, multiples: Any, shape: Any) -> Any:
        mult, dims = _ints(multiples), _ints(shape)
        if len(mult) != len(dims) or tuple(g.shape) != tuple(m * d for m, d in zip(mult, dims)):
            raise InvalidArgumentError(f"tile gradient: a gradient of shape {tuple(g.shape)} is not the tiles "
                                       f"{mult} of shape {dims}", op)
        # view g as (m0, d0, m1, d1, ...) and sum over the tile axes
        split: List[int] = []
        red = []
        for m, d in zip(mult, dims):
            red.append(len(split))
            split += [m, d]
        return g.reshape(split).sum(axis=tuple(red)) if red else g.reshape(())
    return tile_grad


@register_kernel("PadDynamic")
def _pad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def pad(x: Any, paddings: Any, c: Any) -> Any:
        return constant_pad(xp, x, _pairs(op, paddings, x), c)
    return pad


@register_kernel("PadDynamicGrad")
def _pad_grad(op: Any, ctx: KernelContext) -> Any:
    def pad_grad(g: Any, paddings: Any) -> Any:
        rows = _pairs(op, paddings, g)
        return g[tuple(slice(a, d - b) for d, (a, b) in zip(g.shape, rows))]
    return pad_grad


def _check_mirror(op: Any, rows: List[Tuple[int, int]], shape: Tuple[int, ...], mode: str) -> None:
    for (a, b), d in zip(rows, shape):
        if mode == "REFLECT" and (a >= d or b >= d):
            raise InvalidArgumentError(f"paddings must be less than the dimension size: {a}, {b} not less than {d}",
                                       op)
        if mode == "SYMMETRIC" and (a > d or b > d):
            raise InvalidArgumentError(f"paddings must be no greater than the dimension size: {a}, {b} greater "
                                       f"than {d}", op)


@register_kernel("MirrorPadDynamic")
def _mirror_pad(op: Any, ctx: KernelContext) -> Any:
    xp, mode = ctx.xp, op.attrs["mode"]
    np_mode = "reflect" if mode == "REFLECT" else "symmetric"

    def mirror_pad(x: Any, paddings: Any) -> Any:
        rows = _pairs(op, paddings, x)
        _check_mirror(op, rows, tuple(x.shape), mode)
        return xp.pad(x, rows, mode=np_mode)
    return mirror_pad


@register_kernel("MirrorPadDynamicGrad")
def _mirror_pad_grad(op: Any, ctx: KernelContext) -> Any:
    mode = op.attrs["mode"]
    off = 1 if mode == "REFLECT" else 0  # REFLECT mirrors about the edge element, SYMMETRIC after it

    def mirror_pad_grad(g: Any, paddings: Any) -> Any:
        rows = _pairs(op, paddings, g)
        inner = tuple(d - a - b for d, (a, b) in zip(g.shape, rows))
        if any(n < 0 for n in inner):
            raise InvalidArgumentError(f"mirror pad gradient: paddings {rows} exceed the gradient's shape "
                                       f"{tuple(g.shape)}", op)
        _check_mirror(op, rows, inner, mode)
        return fold_mirror_pad(g, rows, off)
    return mirror_pad_grad


@register_kernel("OneHotDynamic")
def _one_hot(op: Any, ctx: KernelContext) -> Any:
    xp, dt, axis = ctx.xp, op.outputs[0].dtype.np, op.attrs["axis"]

    def one_hot(idx: Any, depth: Any, on: Any, off: Any) -> Any:
        d = _ints(depth)[0]
        if d < 0:
            raise InvalidArgumentError(f"depth must be non-negative, got: {d}", op)
        return one_hot_values(xp, idx, d, on, off, axis, dt)
    return one_hot


@register_kernel("BroadcastToDynamic")
def _broadcast_to(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def broadcast_to(x: Any, shape: Any) -> Any:
        target = _ints(shape)
        if x.ndim > len(target):
            raise InvalidArgumentError(f"Rank of input ({x.ndim}) must be no greater than rank of output shape "
                                       f"({len(target)}).", op)
        for d in target:
            if d < 0:
                raise InvalidArgumentError(f"Dimension {d} must be >= 0", op)
        for d, t in zip(x.shape[::-1], target[::-1]):
            if d != 1 and d != t:
                raise InvalidArgumentError(f"Incompatible shapes: [{','.join(map(str, x.shape))}] vs. "
                                           f"[{','.join(map(str, target))}]", op)
        # a read-only view is fine: kernels never write into their inputs
        return xp.broadcast_to(x, tuple(target))
    return broadcast_to


@register_kernel("ReverseDynamic")
def _reverse(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def reverse(x: Any, axis: Any) -> Any:
        axes = _ints(axis)
        seen = set()
        for i, a in enumerate(axes):
            if not -x.ndim <= a < x.ndim:
                raise InvalidArgumentError(f"'axis'[{i}] = {a} is out of valid range [0, {x.ndim - 1}", op)
            if a % x.ndim in seen:
                raise InvalidArgumentError(f"axis {a % x.ndim} specified more than once.", op)
            seen.add(a % x.ndim)
        return xp.flip(x, axis=tuple(sorted(seen))) if seen else x
    return reverse


@register_kernel("SplitVDynamic")
def _split_v(op: Any, ctx: KernelContext) -> Any:
    n, axis = op.attrs["num_split"], op.attrs["axis"]

    def split_v(x: Any, size_splits: Any) -> Any:
        sizes = _ints(size_splits)
        if len(sizes) != n:
            raise InvalidArgumentError(f"Determined shape must either match input shape along split_dim exactly "
                                       f"if fully specified, or be less than the size of the input along split_dim "
                                       f"if not fully specified.  Got: {n} splits, {len(sizes)} sizes", op)
        d = x.shape[axis]
        rest = [i for i, s in enumerate(sizes) if s == -1]
        known = sum(s for s in sizes if s != -1)
        if len(rest) > 1 or any(s < -1 for s in sizes) or (rest and known > d) or (not rest and known != d):
            raise InvalidArgumentError(f"Determined shape must either match input shape along split_dim exactly "
                                       f"if fully specified, or be less than the size of the input along split_dim "
                                       f"if not fully specified.  Got: {sum(sizes) if not rest else known} "
                                       f"(sizes {sizes}, dimension {d})", op)
        if rest:
            sizes[rest[0]] = d - known
        bounds, acc = [], 0
        for s in sizes[:-1]:
            acc += s
            bounds.append(acc)
        return tuple(ctx.xp.split(x, bounds, axis=axis))
    return variadic_outputs(op, split_v)
