"""Kernels of the array ops, written once against `xp`.

Reshapes, transposes, slices and splits return views of their input where NumPy/CuPy
can (kernels never write into their inputs, so sharing memory is safe); ops that build a
new array allocate it once and fill it in place.
"""
from __future__ import annotations

from typing import Any, Sequence, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .registry import register_kernel, KernelContext, variadic_outputs
from .sparse_kernels import add_at

_ALL = slice(None)


def _at(axis: int, s: Any) -> Tuple[Any, ...]:
    """An index tuple selecting `s` along `axis` (all of every earlier dim)."""
    return (_ALL,) * axis + (s,)


# -- creation ------------------------------------------------------------------------------


@register_kernel("ZerosLike")
def _zeros_like(op: Any, ctx: KernelContext) -> Any:
    xp, dt = ctx.xp, op.outputs[0].dtype.np
    if dt == object:  # a string tensor's zeros are empty strings (TF's), not the integer 0
        return lambda x: np.full(np.shape(x), b"", dtype=object)
    return lambda x: xp.zeros(x.shape, dtype=dt)


@register_kernel("OnesLike")
def _ones_like(op: Any, ctx: KernelContext) -> Any:
    xp, dt = ctx.xp, op.outputs[0].dtype.np
    return lambda x: xp.ones(x.shape, dtype=dt)


@register_kernel("Fill")
def _fill(op: Any, ctx: KernelContext) -> Any:
    xp, dt = ctx.xp, op.outputs[0].dtype.np

    def fill(dims: Any, v: Any) -> Any:
        shape = tuple(int(d) for d in dims)
        if any(d < 0 for d in shape):
            raise InvalidArgumentError(f"fill: dims must be non-negative, got {list(shape)}", op)
        return xp.full(shape, v, dtype=dt)
    return fill


register_kernel("Select")(lambda op, ctx: ctx.xp.where)

@register_kernel("OneHot")
def _one_hot(op: Any, ctx: KernelContext) -> Any:
    xp, dt = ctx.xp, op.outputs[0].dtype.np
    depth, axis = op.attrs["depth"], op.attrs["axis"]

    def one_hot(idx: Any, on: Any, off: Any) -> Any:
        return one_hot_values(xp, idx, depth, on, off, axis, dt)
    return one_hot


def one_hot_values(xp: Any, idx: Any, depth: int, on: Any, off: Any, axis: int, dt: Any) -> Any:
    """TF's OneHot: `on` where idx equals the position along the new `axis`, `off` elsewhere."""
    # out-of-range indices (negative or >= depth) match no column: an all-off row
    hit = xp.expand_dims(idx, -1) == xp.arange(depth)
    out = xp.where(hit, xp.asarray(on, dtype=dt), xp.asarray(off, dtype=dt))
    if axis != -1 and axis != idx.ndim:
        out = xp.moveaxis(out, -1, axis)
    return out


# -- shapes and reshaping ------------------------------------------------------------------


@register_kernel("Reshape")
def _reshape(op: Any, ctx: KernelContext) -> Any:
    shape = op.attrs["shape"]

    def reshape(x: Any) -> Any:
        try:
            return x.reshape(shape)
        except ValueError:
            raise InvalidArgumentError(
                f"cannot reshape a tensor of shape {tuple(x.shape)} ({x.size} elements) to {list(shape)}", op) from None
    return reshape


@register_kernel("ReshapeLike")
def _reshape_like(op: Any, ctx: KernelContext) -> Any:
    def reshape_like(x: Any, like: Any) -> Any:
        if x.size != like.size:
            raise InvalidArgumentError(
                f"cannot reshape a tensor of shape {tuple(x.shape)} to shape {tuple(like.shape)}", op)
        return x.reshape(like.shape)
    return reshape_like


@register_kernel("ReshapeRows")
def _reshape_rows(op: Any, ctx: KernelContext) -> Any:
    def reshape_rows(g: Any, idx: Any) -> Any:
        return g.reshape((idx.size,) + tuple(g.shape[idx.ndim:]))
    return reshape_rows


@register_kernel("Shape")
def _shape(op: Any, ctx: KernelContext) -> Any:
    xp, dt = ctx.xp, op.attrs["out_type"].np
    return lambda x: xp.asarray(x.shape, dtype=dt)


@register_kernel("Size")
def _size(op: Any, ctx: KernelContext) -> Any:
    xp, dt = ctx.xp, op.attrs["out_type"].np
    return lambda x: xp.asarray(x.size, dtype=dt)


@register_kernel("Rank")
def _rank(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    return lambda x: xp.asarray(x.ndim, dtype=np.int32)


@register_kernel("Transpose")
def _transpose(op: Any, ctx: KernelContext) -> Any:
    xp, perm = ctx.xp, op.attrs["perm"]

    def transpose(x: Any) -> Any:
        if perm is not None and len(perm) != x.ndim:
            raise InvalidArgumentError(f"transpose: perm {list(perm)} does not match a tensor of shape "
                                       f"{tuple(x.shape)}", op)
        return xp.transpose(x, perm)  # a view
    return transpose


@register_kernel("ExpandDims")
def _expand_dims(op: Any, ctx: KernelContext) -> Any:
    xp, axis = ctx.xp, op.attrs["axis"]

    def expand_dims(x: Any) -> Any:
        if not -x.ndim - 1 <= axis <= x.ndim:
            raise InvalidArgumentError(f"expand_dims: axis {axis} is out of range for shape {tuple(x.shape)}", op)
        return xp.expand_dims(x, axis)
    return expand_dims


@register_kernel("Squeeze")
def _squeeze(op: Any, ctx: KernelContext) -> Any:
    xp, axis = ctx.xp, op.attrs["axis"]

    def squeeze(x: Any) -> Any:
        if axis is not None:
            for a in axis:
                if not -x.ndim <= a < x.ndim or x.shape[a] != 1:
                    raise InvalidArgumentError(f"squeeze: cannot squeeze axis {a} of shape {tuple(x.shape)}: "
                                               "it is not of size 1", op)
        return xp.squeeze(x, axis)
    return squeeze


@register_kernel("BroadcastLike")
def _bcast_like(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    # a read-only view is fine: kernels never write into their inputs
    return lambda x, like: xp.broadcast_to(x, like.shape)


@register_kernel("BroadcastTo")
def _bcast_to(op: Any, ctx: KernelContext) -> Any:
    xp, shape = ctx.xp, op.attrs["shape"]
    return lambda x: xp.broadcast_to(x, shape)


@register_kernel("SizeRatio")
def _size_ratio(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    return lambda x, y: xp.asarray(x.size // max(y.size, 1), dtype=np.int64)


@register_kernel("ExpandReduced")
def _expand_reduced(op: Any, ctx: KernelContext) -> Any:
    axis = op.attrs["axis"]

    def expand(t: Any, x: Any) -> Any:
        nd = x.ndim
        axes = range(nd) if axis is None else {a % nd for a in ((axis,) if isinstance(axis, int) else axis)}
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        return t.reshape(shape)
    return expand


@register_kernel("Tile")
def _tile(op: Any, ctx: KernelContext) -> Any:
    xp, mult = ctx.xp, op.attrs["multiples"]

    def tile(x: Any) -> Any:
        if x.ndim != len(mult):
            raise InvalidArgumentError(f"tile: multiples {list(mult)} need one entry per dimension of shape "
                                       f"{tuple(x.shape)}", op)
        return xp.tile(x, mult)
    return tile


@register_kernel("TileGrad")
def _tile_grad(op: Any, ctx: KernelContext) -> Any:
    mult = op.attrs["multiples"]
    static = op.attrs["shape"]
    # sum over the tile axes: view g as (m0, d0, m1, d1, ...), skipping axes with m == 1
    tiled_axes = [i for i, m in enumerate(mult) if m != 1]

    def tile_grad(g: Any, x: Any = None) -> Any:
        shape = static if static is not None else x.shape
        if not tiled_axes:
            return g.reshape(shape)
        split: list = []
        red = []
        for i, (m, d) in enumerate(zip(mult, shape)):
            if m != 1:
                red.append(len(split))
                split.append(m)
            split.append(d)
        return g.reshape(split).sum(axis=tuple(red))
    return tile_grad


# -- joining and splitting -----------------------------------------------------------------


@register_kernel("ConcatV2")
def _concat(op: Any, ctx: KernelContext) -> Any:
    xp, axis = ctx.xp, op.attrs["axis"]
    return lambda *xs: xp.concatenate(xs, axis=axis)


@register_kernel("Pack")
def _pack(op: Any, ctx: KernelContext) -> Any:
    xp, axis = ctx.xp, op.attrs["axis"]

    def pack(*xs: Any) -> Any:
        try:
            return xp.stack(xs, axis=axis)
        except ValueError:
            raise InvalidArgumentError("stack: inputs must have the same shape, got "
                                       + ", ".join(str(tuple(x.shape)) for x in xs), op) from None
    return pack


@register_kernel("Unpack")
def _unpack(op: Any, ctx: KernelContext) -> Any:
    xp, num, axis = ctx.xp, op.attrs["num"], op.attrs["axis"]

    def unpack(x: Any) -> Any:
        if not -x.ndim <= axis < x.ndim or x.shape[axis] != num:
            raise InvalidArgumentError(f"unstack: expected {num} entries along axis {axis}, got a tensor of "
                                       f"shape {tuple(x.shape)}", op)
        return tuple(xp.moveaxis(x, axis, 0))  # views
    return variadic_outputs(op, unpack)


def _split_at(xp: Any, x: Any, axis: int, sizes: Sequence[int]) -> tuple:
    ax = axis % x.ndim
    idx = []
    acc = 0
    for s in sizes[:-1]:
        acc += s
        idx.append(acc)
    parts = xp.split(x, idx, axis=ax)  # views
    return tuple(parts)


@register_kernel("Split")
def _split(op: Any, ctx: KernelContext) -> Any:
    xp, n, axis = ctx.xp, op.attrs["num_split"], op.attrs["axis"]

    def split(x: Any) -> Any:
        if not -x.ndim <= axis < x.ndim or x.shape[axis] % n:
            raise InvalidArgumentError(f"split: axis {axis} of shape {tuple(x.shape)} cannot be split evenly into "
                                       f"{n} pieces", op)
        return _split_at(xp, x, axis, [x.shape[axis] // n] * n)
    return variadic_outputs(op, split)


@register_kernel("SplitV")
def _split_v(op: Any, ctx: KernelContext) -> Any:
    xp, sizes, axis = ctx.xp, list(op.attrs["size_splits"]), op.attrs["axis"]
    known = sum(s for s in sizes if s != -1)
    rest = sizes.index(-1) if -1 in sizes else None

    def split_v(x: Any) -> Any:
        d = x.shape[axis] if -x.ndim <= axis < x.ndim else None
        if d is None or (rest is None and known != d) or known > d:
            raise InvalidArgumentError(f"split: size_splits {sizes} do not add up to axis {axis} of shape "
                                       f"{tuple(x.shape)}", op)
        ss = sizes
        if rest is not None:
            ss = list(sizes)
            ss[rest] = d - known
        return _split_at(xp, x, axis, ss)
    return variadic_outputs(op, split_v)


@register_kernel("SplitLike")
def _split_like(op: Any, ctx: KernelContext) -> Any:
    xp, axis = ctx.xp, op.attrs["axis"]

    def split_like(g: Any, *likes: Any) -> Any:
        sizes = [t.shape[axis] for t in likes]
        if sum(sizes) != g.shape[axis]:
            raise InvalidArgumentError(f"split_like: pieces of sizes {sizes} do not add up to axis {axis} of "
                                       f"shape {tuple(g.shape)}", op)
        return _split_at(xp, g, axis, sizes)
    return split_like


def _identity_n(*xs: Any) -> tuple:
    return xs


register_kernel("IdentityN")(lambda op, ctx: variadic_outputs(op, _identity_n))


@register_kernel("CustomGradient")
def _custom_gradient(op: Any, ctx: KernelContext) -> Any:
    n = op.attrs["n_in"]  # the function's arguments come first; its outputs pass through
    return variadic_outputs(op, lambda *xs: xs[n:])

# -- gathering and scattering --------------------------------------------------------------


@register_kernel("GatherV2")
def _gather(op: Any, ctx: KernelContext) -> Any:
    xp, axis = ctx.xp, op.attrs["axis"]

    def gather(params: Any, idx: Any) -> Any:
        if not -params.ndim <= axis < params.ndim:
            raise InvalidArgumentError(f"gather: axis {axis} is out of range for params of shape "
                                       f"{tuple(params.shape)}", op)
        n = params.shape[axis]
        ax = axis % params.ndim
        out_shape = tuple(params.shape[:ax]) + tuple(idx.shape) + tuple(params.shape[ax + 1:])
        if not int(np.prod(out_shape)):
            # an empty result reads nothing: TF checks no index then (an unsorted segment op's
            # gradient with num_segments=0 gathers from an empty tensor)
            return xp.zeros(out_shape, dtype=params.dtype)
        # negative indices are an error (as in TensorFlow): sparse gradients scatter by index
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= n):
            bad = idx[(idx < 0) | (idx >= n)].ravel()[0]
            raise InvalidArgumentError(f"gather: index {int(bad)} is out of range [0, {n}) for params of "
                                       f"shape {tuple(params.shape)} along axis {axis}", op)
        return xp.take(params, idx, axis=axis)
    return gather


def _scatter_add(xp: Any, out: Any, idx: Any, rows: Any) -> None:
    """out[idx[i]] += rows[i] for every i, duplicates accumulating (in place on `out`)."""
    add_at(xp, out, idx, rows)  # CuPy's is an atomic add on the GPU (cupyx.scatter_add is deprecated)


@register_kernel("ScatterLike")
def _scatter_like(op: Any, ctx: KernelContext) -> Any:
    xp, axis, static = ctx.xp, op.attrs["axis"], op.attrs["shape"]

    def scatter_like(upd: Any, idx: Any, params: Any = None) -> Any:
        shape = tuple(static if static is not None else params.shape)
        ax = axis % len(shape)
        out = xp.zeros(shape, dtype=upd.dtype)
        if not upd.size:  # nothing to add (and GatherV2 left the indices of an empty result unchecked)
            return out
        # move the scattered axis first on both sides, then add rows (duplicates accumulate)
        upd_t = xp.moveaxis(upd.reshape(shape[:ax] + (idx.size,) + shape[ax + 1:]), ax, 0)
        _scatter_add(xp, xp.moveaxis(out, ax, 0), idx.reshape(-1), upd_t)
        return out
    return scatter_like


# -- slicing and padding -------------------------------------------------------------------


def _full_key(key: Tuple[Any, ...]) -> Tuple[Any, ...]:
    # a trailing Ellipsis keeps NumPy from returning a scalar for a fully integer key
    return key if Ellipsis in key else key + (Ellipsis,)


@register_kernel("StridedSlice")
def _strided_slice(op: Any, ctx: KernelContext) -> Any:
    key = _full_key(op.attrs["key"])
    return lambda x: x[key]


def _axis_key(op: Any, rank: int, start: Any, stop: Any) -> tuple:
    a = op.attrs
    key = [slice(None)] * rank
    key[a["axis"]] = slice(int(start) if a["has_start"] else None, int(stop) if a["has_stop"] else None, a["step"])
    return tuple(key)


@register_kernel("SliceAxis")
def _slice_axis(op: Any, ctx: KernelContext) -> Any:
    return lambda x, start, stop: x[_axis_key(op, x.ndim, start, stop)]


@register_kernel("SliceAxisGrad")
def _slice_axis_grad(op: Any, ctx: KernelContext) -> Any:
    xp, static = ctx.xp, op.attrs["shape"]

    def slice_axis_grad(g: Any, start: Any, stop: Any, x: Any = None) -> Any:
        shape = static if static is not None else x.shape
        out = xp.zeros(shape, dtype=g.dtype)
        out[_axis_key(op, len(shape), start, stop)] = g
        return out
    return slice_axis_grad


@register_kernel("StridedSliceGrad")
def _strided_slice_grad(op: Any, ctx: KernelContext) -> Any:
    xp, static = ctx.xp, op.attrs["shape"]
    key = _full_key(op.attrs["key"])

    def strided_slice_grad(g: Any, x: Any = None) -> Any:
        out = xp.zeros(static if static is not None else x.shape, dtype=g.dtype)
        out[key] = g
        return out
    return strided_slice_grad


@register_kernel("Slice")
def _slice(op: Any, ctx: KernelContext) -> Any:
    begin, size = op.attrs["begin"], op.attrs["size"]
    key = tuple(slice(b, None if s == -1 else b + s) for b, s in zip(begin, size))

    def slice_(x: Any) -> Any:
        # NumPy clamps out-of-range slices silently; TensorFlow's Slice is an error
        if x.ndim != len(begin) or any(b > d or (s != -1 and b + s > d) for b, s, d in zip(begin, size, x.shape)):
            raise InvalidArgumentError(f"slice: begin {list(begin)} and size {list(size)} are out of range for "
                                       f"shape {tuple(x.shape)}", op)
        return x[key]
    return slice_


@register_kernel("PadV2")
def _pad(op: Any, ctx: KernelContext) -> Any:
    xp, pads = ctx.xp, op.attrs["paddings"]

    def pad(x: Any, c: Any) -> Any:
        if x.ndim != len(pads):
            raise InvalidArgumentError(f"pad: {len(pads)} paddings for a tensor of shape {tuple(x.shape)}", op)
        return constant_pad(xp, x, pads, c)
    return pad


def constant_pad(xp: Any, x: Any, pads: Sequence[Tuple[int, int]], c: Any) -> Any:
    """x with pads[i] = (before, after) entries of the scalar c around dimension i."""
    out = xp.full(tuple(d + a + b for d, (a, b) in zip(x.shape, pads)), c, dtype=x.dtype)
    out[tuple(slice(a, a + d) for d, (a, _) in zip(x.shape, pads))] = x
    return out


@register_kernel("MirrorPad")
def _mirror_pad(op: Any, ctx: KernelContext) -> Any:
    xp, pads, mode = ctx.xp, op.attrs["paddings"], op.attrs["mode"]
    np_mode = "reflect" if mode == "REFLECT" else "symmetric"

    def mirror_pad(x: Any) -> Any:
        if x.ndim != len(pads):
            raise InvalidArgumentError(f"pad: {len(pads)} paddings for a tensor of shape {tuple(x.shape)}", op)
        for i, ((a, b), d) in enumerate(zip(pads, x.shape)):
            lim = d - 1 if mode == "REFLECT" else d
            if a > lim or b > lim:
                raise InvalidArgumentError(f"pad: {mode} paddings {[a, b]} of dimension {i} must be at most {lim} "
                                           f"for shape {tuple(x.shape)}", op)
        return xp.pad(x, pads, mode=np_mode)
    return mirror_pad


@register_kernel("MirrorPadGrad")
def _mirror_pad_grad(op: Any, ctx: KernelContext) -> Any:
    pads, mode = op.attrs["paddings"], op.attrs["mode"]
    off = 1 if mode == "REFLECT" else 0  # REFLECT mirrors about the edge element, SYMMETRIC after it

    def mirror_pad_grad(g: Any) -> Any:
        return fold_mirror_pad(g, pads, off)
    return mirror_pad_grad


def fold_mirror_pad(g: Any, pads: Sequence[Tuple[int, int]], off: int) -> Any:
    """MirrorPad's gradient: the mirrored borders of g added back onto its centre, axis by
    axis; off = 1 for REFLECT (mirrored about the edge element), 0 for SYMMETRIC."""
    for ax, (a, b) in enumerate(pads):
        if a == 0 and b == 0:
            continue
        n = g.shape[ax] - a - b
        core = g[_at(ax, slice(a, a + n))].copy()  # fresh: accumulated into below
        if a:
            core[_at(ax, slice(off, off + a))] += g[_at(ax, slice(a - 1, None, -1))]
        if b:  # padding <= n (SYMMETRIC) or < n (REFLECT), so a + n - 1 >= 0 here
            core[_at(ax, slice(n - off - b, n - off))] += g[_at(ax, slice(a + n + b - 1, a + n - 1, -1))]
        g = core
    return g


@register_kernel("ReshapeDynamic")
def _reshape_dynamic(op: Any, ctx: KernelContext) -> Any:
    def reshape(x: Any, shape: Any) -> Any:
        return x.reshape(tuple(int(d) for d in shape.reshape(-1)))
    return reshape
