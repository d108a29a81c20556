"""Kernels of the depthwise convolution and its two gradients (graph/ops/depthwise_ops.py),
written once against `xp` (NumPy or CuPy).

Each input channel has filters of its own, so there is no GEMM to hand the work to: each
kernel loops over the kh * kw filter taps (and the M multipliers), every tap a strided view
of the (padded) input over all pixels and channels at once (no loop over positions), over
cache-sized batch ranges, each multiply over whole image rows (the filter tiled along them):



    out[n, y, x, c, m]  += in[n, y*s + i*d, x*s + j*d, c] * w[i, j, c, m]
    d_in[..same cell..] += sum_m d_out[n, y, x, c, m] * w[i, j, c, m]
    d_w[i, j, c, m]      = sum_{n, y, x} in[...] * d_out[n, y, x, c, m]

Geometry (output size, SAME padding) is conv2d's (nn_kernels._Geometry).

Two NumPy passes a tap cost what they cost: a MobileNet layer (32x56x56x64, 3x3, 1 thread)
takes 36.7 ms forward and 138 ms with both gradients, against TensorFlow's 6.7 and 18.0 ms
(its kernel keeps the nine taps' sums in registers).  Broadcasting the C filter values over
each pixel instead measured 70 and 181 ms, and 63 against 10 ms forward with a channel
multiplier of 2 (NumPy then loops over rows of M values).
"""
from __future__ import annotations

from typing import Any

from .nn_kernels import _check_channels, _chunks, _geometry_cache, _offset, _pad, filter_dims, input_dims
from .registry import KernelContext, register_kernel
from ..errors import InvalidArgumentError


def _check_multiplier(op: Any, dy: Any, want: tuple) -> None:
    if tuple(dy.shape) != want:
        raise InvalidArgumentError(f"{op.type}: out_backprop has shape {tuple(dy.shape)}, expected {want} "
                                   f"(height, width and in_channels * channel_multiplier of the output)", op)


def _planes(xp: Any, a: Any, m: int) -> Any:
    """[n, oh, ow, C * M] -> [M, n, oh, ow, C]: one contiguous plane per multiplier, so every
    pass below runs along C (a view when M = 1; M > 1 would otherwise make M the innermost
    loop, 2-3 elements long)."""
    n, oh, ow, cm = a.shape
    a5 = a.reshape(n, oh, ow, cm // m, m)
    if m == 1:
        return a5[None, ..., 0]
    return xp.ascontiguousarray(xp.moveaxis(a5, -1, 0))


def _taps(geo: Any, kh: int, kw: int, strides: Any, dil: Any) -> list:
    """(i, j, rows, cols) of every filter tap, row-major (the order the sums are taken in)."""
    return [(i, j) + _offset(geo, i, j, strides, dil) for i in range(kh) for j in range(kw)]


def _tiled(xp: Any, w: Any, kh: int, kw: int, m: int, ow: int) -> Any:
    """w[i, j, :, mm] repeated ow times: [kh, kw, M, ow * C], to multiply whole image rows
    (ow * C values) at once; broadcasting the C filter values instead makes NumPy loop over
    rows of C (64 values: most of the time went to the loop, not the arithmetic)."""
    c = w.shape[2]
    return xp.ascontiguousarray(xp.broadcast_to(xp.moveaxis(w, 3, 2)[:, :, :, None, :], (kh, kw, m, ow, c))
                                ).reshape(kh, kw, m, ow * c)


def _rows(v: Any, flat_ok: bool) -> Any:
    """v [b, oh, ow, C] as [b, oh, ow * C] when its columns are contiguous (stride 1), else as
    it is.  The arrays written through it are this module's own (slices of fresh C-order
    buffers along the outer axes), whose reshape is always a view; an input that is not
    contiguous is only read, so a copy of it would do."""
    if flat_ok:
        b, oh, ow, c = v.shape
        return v.reshape(b, oh, ow * c)
    return v


def _batches(xp: Any, n: int, oh: int, ow: int, c: int, dtype: Any) -> tuple:
    """(batch ranges, scratch [largest range, oh, ow, c]): a range's output plane, its scratch
    and its input stay in cache through the taps."""
    ranges = _chunks(xp, n, 3 * oh * ow * c * dtype.itemsize)
    return ranges, xp.empty((max(b - a for a, b in ranges), oh, ow, c), dtype=dtype)


@register_kernel("DepthwiseConv2dNative")
def _depthwise(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    strides, dil = op.attrs["strides"], op.attrs["dilations"]
    geometry = _geometry_cache(op)

    def depthwise_conv2d(x: Any, w: Any) -> Any:
        n, h, wd, c = x.shape
        kh, kw, ci, m = w.shape
        _check_channels(c, ci, op, x.shape, w.shape)
        geo = geometry(h, wd, kh, kw)
        oh, ow = geo.oh, geo.ow
        if n * oh * ow * c * m == 0:  # nothing to compute (an empty batch, no channels)
            return xp.zeros((n, oh, ow, c * m), dtype=x.dtype)
        xpad = _pad(xp, x, geo)
        taps = _taps(geo, kh, kw, strides, dil)
        flat = strides[1] == 1
        wt = _tiled(xp, w, kh, kw, m, ow if flat else 1)
        if not flat:
            wt = wt.reshape(kh, kw, m, 1, c)
        out = xp.empty((m, n, oh, ow, c), dtype=x.dtype)
        ranges, t = _batches(xp, n, oh, ow, c, x.dtype)
        for a, b in ranges:
            tb = _rows(t[:b - a], flat)
            for mm in range(m):
                o = _rows(out[mm, a:b], flat)
                for k, (i, j, rs, cs) in enumerate(taps):
                    v = _rows(xpad[a:b, rs, cs, :], flat)
                    if k == 0:
                        xp.multiply(v, wt[i, j, mm], out=o)
                    else:
                        xp.multiply(v, wt[i, j, mm], out=tb)
                        o += tb
        if m == 1:
            return out[0]
        return xp.moveaxis(out, 0, -1).reshape(n, oh, ow, c * m)
    return depthwise_conv2d


@register_kernel("DepthwiseConv2dNativeBackpropInput")
def _depthwise_bp_input(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    strides, dil = op.attrs["strides"], op.attrs["dilations"]
    geometry = _geometry_cache(op)
    in_dims = input_dims(op)

    def depthwise_conv2d_backprop_input(sizes: Any, w: Any, dy: Any) -> Any:
        n, h, wd, c = in_dims(sizes, dy)
        kh, kw, ci, m = w.shape
        _check_channels(c, ci, op, (n, h, wd, c), w.shape)
        geo = geometry(h, wd, kh, kw)
        oh, ow = geo.oh, geo.ow
        _check_multiplier(op, dy, (n, oh, ow, c * m))
        if n * oh * ow * c * m == 0:  # no gradient flows (an empty batch or output, no channels)
            return xp.zeros((n, h, wd, c), dtype=dy.dtype)
        dyp = _planes(xp, dy, m)
        taps = _taps(geo, kh, kw, strides, dil)
        dx = xp.zeros((n, h + geo.pt + geo.pb, wd + geo.pl + geo.pr, c), dtype=dy.dtype)
        flat = strides[1] == 1
        wt = _tiled(xp, w, kh, kw, m, ow)
        ranges, t = _batches(xp, n, oh, ow, c, dy.dtype)
        for a, b in ranges:
            tb = t[:b - a].reshape(b - a, oh, ow * c)
            for i, j, rs, cs in taps:
                d = _rows(dx[a:b, rs, cs, :], flat)
                for mm in range(m):
                    xp.multiply(dyp[mm, a:b].reshape(b - a, oh, ow * c), wt[i, j, mm], out=tb)
                    d += tb if flat else tb.reshape(b - a, oh, ow, c)
        if geo.padded:
            dx = dx[:, geo.pt:geo.pt + h, geo.pl:geo.pl + wd, :]
        return dx
    return depthwise_conv2d_backprop_input


@register_kernel("DepthwiseConv2dNativeBackpropFilter")
def _depthwise_bp_filter(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    strides, dil = op.attrs["strides"], op.attrs["dilations"]
    geometry = _geometry_cache(op)
    f_dims = filter_dims(op)

    def depthwise_conv2d_backprop_filter(x: Any, sizes: Any, dy: Any) -> Any:
        kh, kw, ci, m = f_dims(sizes)
        n, h, wd, c = x.shape
        _check_channels(c, ci, op, x.shape, (kh, kw, ci, m))
        geo = geometry(h, wd, kh, kw)
        oh, ow = geo.oh, geo.ow
        _check_multiplier(op, dy, (n, oh, ow, c * m))
        if n * oh * ow * c * m == 0:  # sums over no pixels (or a filter with no entries)
            return xp.zeros((kh, kw, c, m), dtype=x.dtype)
        dyp = _planes(xp, dy, m)
        xpad = _pad(xp, x, geo)
        taps = _taps(geo, kh, kw, strides, dil)
        # per channel, one dot product over all pixels: summed along whole rows first (ow * C
        # values a row), the ow partial sums of each channel folded at the end
        acc = xp.zeros((kh, kw, m, ow * c), dtype=x.dtype)
        ranges, t = _batches(xp, n, oh, ow, c, x.dtype)
        for a, b in ranges:
            tb = t[:b - a]
            for i, j, rs, cs in taps:
                for mm in range(m):
                    xp.multiply(xpad[a:b, rs, cs, :], dyp[mm, a:b], out=tb)
                    acc[i, j, mm] += tb.reshape(-1, ow * c).sum(axis=0)
        return xp.ascontiguousarray(acc.reshape(kh, kw, m, ow, c).sum(axis=3).transpose(0, 1, 3, 2))
    return depthwise_conv2d_backprop_filter
