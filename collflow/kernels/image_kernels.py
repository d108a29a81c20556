"""Kernels of graph/ops/image_ops.py (bilinear and nearest-neighbour resizing and their
gradients), written once against `xp`.

Sampling positions are computed per axis, in float32 as TensorFlow computes them, so the
results agree with TensorFlow's to rounding.  A resize is separable: rows are gathered (and
blended) first, then columns; a gradient scatters back the same way, columns then rows.
"""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel
from .segment_kernels import add_rows

_F32 = np.float32


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return _F32(in_size - 1) / _F32(out_size - 1)
    return _F32(in_size) / _F32(out_size)


def _positions(in_size: int, out_size: int, align: bool, half: bool, nearest: bool) -> np.ndarray:
    s = _scale(in_size, out_size, align)
    i = np.arange(out_size, dtype=_F32)
    if half:
        return (i + _F32(0.5)) * s - (_F32(0) if nearest else _F32(0.5))
    return i * s


def linear_axis(in_size: int, out_size: int, align: bool, half: bool) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower index, upper index, float32 weight of the upper) per output position."""
    v = _positions(in_size, out_size, align, half, nearest=False)
    f = np.floor(v)
    lo = np.maximum(f.astype(np.int64), 0)
    hi = np.minimum(np.ceil(v).astype(np.int64), in_size - 1)
    return lo, hi, (v - f).astype(_F32)


def nearest_axis(in_size: int, out_size: int, align: bool, half: bool) -> np.ndarray:
    """The input index each output position copies."""
    v = _positions(in_size, out_size, align, half, nearest=True)
    f = np.floor(v)
    idx = f + (v - f >= _F32(0.5)) if align else f   # align_corners rounds halves away from zero
    idx = np.minimum(idx.astype(np.int64), in_size - 1)
    return np.maximum(idx, 0) if half else idx


def _size(size: Any, op: Any) -> Tuple[int, int]:
    h, w = (int(d) for d in size.reshape(-1).tolist())
    if h <= 0 or w <= 0:
        raise InvalidArgumentError(f"{op.type}: size must be positive, got [{h}, {w}]", op)
    return h, w


def _check_image(x: Any, op: Any) -> None:
    if x.ndim != 4:
        raise InvalidArgumentError(f"{op.type}: input must be 4-D [batch, height, width, channels], got shape "
                                   f"{tuple(x.shape)}", op)
    if x.shape[1] <= 0 or x.shape[2] <= 0:
        raise InvalidArgumentError(f"{op.type}: input image must be of non-zero size, got shape {tuple(x.shape)}",
                                   op)


def _scatter_axis(xp: Any, out: Any, axis: int, idx: Any, vals: Any) -> None:
    """out[..., idx[k], ...] += vals[..., k, ...] along `axis` (repeated indices add)."""
    add_rows(xp, xp.moveaxis(out, axis, 0), xp.asarray(idx), xp.moveaxis(vals, axis, 0))


@register_kernel("ResizeBilinear")
def _resize_bilinear(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    align, half = op.attrs["align_corners"], op.attrs["half_pixel_centers"]

    def resize_bilinear(x: Any, size: Any) -> Any:
        _check_image(x, op)
        oh, ow = _size(size, op)
        ylo, yhi, yl = (xp.asarray(a) for a in linear_axis(x.shape[1], oh, align, half))
        xlo, xhi, xl = (xp.asarray(a) for a in linear_axis(x.shape[2], ow, align, half))
        xf = x.astype(_F32, copy=False)
        xl = xl[None, None, :, None]

        def blend_columns(rows: Any) -> Any:
            left = xp.take(rows, xlo, axis=2)
            right = xp.take(rows, xhi, axis=2)
            right -= left
            right *= xl
            right += left
            return right

        top = blend_columns(xp.take(xf, ylo, axis=1))
        bottom = blend_columns(xp.take(xf, yhi, axis=1))
        bottom -= top
        bottom *= yl[None, :, None, None]
        bottom += top
        return bottom
    return resize_bilinear


@register_kernel("ResizeBilinearGrad")
def _resize_bilinear_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    align, half = op.attrs["align_corners"], op.attrs["half_pixel_centers"]
    dt = op.attrs["dtype"].np
    work = np.float64 if dt == np.float64 else _F32

    def resize_bilinear_grad(g: Any, size: Any) -> Any:
        ih, iw = _size(size, op)
        n, oh, ow, c = g.shape
        ylo, yhi, yl = linear_axis(ih, oh, align, half)
        xlo, xhi, xl = linear_axis(iw, ow, align, half)
        yl, xl = xp.asarray(yl.astype(work)), xp.asarray(xl.astype(work))
        gw = g.astype(work, copy=False)
        cols = xp.zeros((n, oh, iw, c), dtype=work)
        xw = xl[None, None, :, None]
        _scatter_axis(xp, cols, 2, xlo, gw * (1 - xw))
        _scatter_axis(xp, cols, 2, xhi, gw * xw)
        out = xp.zeros((n, ih, iw, c), dtype=work)
        yw = yl[None, :, None, None]
        _scatter_axis(xp, out, 1, ylo, cols * (1 - yw))
        _scatter_axis(xp, out, 1, yhi, cols * yw)
        return out.astype(dt, copy=False)
    return resize_bilinear_grad


@register_kernel("ResizeNearestNeighbor")
def _resize_nearest(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    align, half = op.attrs["align_corners"], op.attrs["half_pixel_centers"]

    def resize_nearest(x: Any, size: Any) -> Any:
        _check_image(x, op)
        oh, ow = _size(size, op)
        rows = xp.asarray(nearest_axis(x.shape[1], oh, align, half))
        cols = xp.asarray(nearest_axis(x.shape[2], ow, align, half))
        return xp.take(xp.take(x, rows, axis=1), cols, axis=2)
    return resize_nearest


@register_kernel("ResizeNearestNeighborGrad")
def _resize_nearest_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    align, half = op.attrs["align_corners"], op.attrs["half_pixel_centers"]
    dt = op.attrs["dtype"].np

    def resize_nearest_grad(g: Any, size: Any) -> Any:
        ih, iw = _size(size, op)
        n, oh, ow, c = g.shape
        gw = g.astype(dt, copy=False)
        cols = xp.zeros((n, oh, iw, c), dtype=dt)
        _scatter_axis(xp, cols, 2, nearest_axis(iw, ow, align, half), gw)
        out = xp.zeros((n, ih, iw, c), dtype=dt)
        _scatter_axis(xp, out, 1, nearest_axis(ih, oh, align, half), cols)
        return out
    return resize_nearest_grad
