"""Kernels of graph/ops/nn_extra_ops.py (relu6, elu, selu, softplus, softsign, LRN and its
gradient), written once against `xp`; and max_pool_with_argmax's (graph/ops/nn_more_tf1_ops.py).

Exponentials see only the negative side (exp of min(x, 0)), so large inputs never overflow.
LRN's window sums over channels are 2 * depth_radius + 1 shifted adds of whole arrays.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@register_kernel("Relu6")
def _relu6(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    dt = op.outputs[0].dtype.np.type
    return lambda x: xp.clip(x, dt(0), dt(6))


def _negative_expm1(xp: Any, x: Any) -> Any:
    """exp(x) - 1 where x < 0, else 0 (exp only of the non-positive part)."""
    return xp.expm1(xp.minimum(x, x.dtype.type(0)))


@register_kernel("Elu")
def _elu(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    return lambda x: xp.where(x < 0, _negative_expm1(xp, x), x)


@register_kernel("Selu")
def _selu(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def selu(x: Any) -> Any:
        t = x.dtype.type
        r = xp.where(x < 0, _negative_expm1(xp, x) * t(_SELU_ALPHA), x)
        r *= t(_SELU_SCALE)
        return r
    return selu


@register_kernel("Softplus")
def _softplus(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    # log(1 + exp(x)) = logaddexp(0, x): exact for large |x| in both directions
    return lambda x: xp.logaddexp(x.dtype.type(0), x)


@register_kernel("Softsign")
def _softsign(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def softsign(x: Any) -> Any:
        d = xp.abs(x)
        d += x.dtype.type(1)
        return xp.divide(x, d, out=d) if getattr(d, "ndim", 0) else x / d
    return softsign


# -- local response normalization -------------------------------------------------------------


def window_sum(a: Any, radius: int) -> Any:
    """s[..., c] = sum of a[..., c - radius : c + radius + 1] along the last axis (clipped)."""
    out = a.copy()
    c = a.shape[-1]
    for off in range(1, min(radius, c - 1) + 1):
        out[..., off:] += a[..., :-off]     # channel c - off
        out[..., :-off] += a[..., off:]     # channel c + off
    return out


def _norm(op: Any, x: Any) -> Any:
    """bias + alpha * (window sum of x^2): the denominator before the power."""
    t = x.dtype.type
    n = window_sum(x * x, op.attrs["depth_radius"])
    n *= t(op.attrs["alpha"])
    n += t(op.attrs["bias"])
    return n


@register_kernel("LRN")
def _lrn(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    beta = op.attrs["beta"]

    def lrn(x: Any) -> Any:
        n = _norm(op, x)
        xp.power(n, x.dtype.type(-beta), out=n)
        n *= x
        return n
    return lrn


@register_kernel("LRNGrad")
def _lrn_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    alpha, beta, radius = op.attrs["alpha"], op.attrs["beta"], op.attrs["depth_radius"]

    def lrn_grad(g: Any, x: Any, y: Any) -> Any:
        # dx_j = g_j n_j^-beta - 2 alpha beta x_j sum_{c near j} g_c y_c / n_c
        t = x.dtype.type
        n = _norm(op, x)
        s = window_sum(g * y / n, radius)
        s *= x
        s *= t(-2.0 * alpha * beta)
        xp.power(n, t(-beta), out=n)
        n *= g
        n += s
        return n
    return lrn_grad


@register_kernel("MaxPoolWithArgmax")
def _max_pool_with_argmax(op: Any, ctx: KernelContext) -> Any:
    (kh, kw), (sh, sw) = op.attrs["ksize"], op.attrs["strides"]
    same, with_batch, targ = op.attrs["padding"] == "SAME", op.attrs["include_batch_in_index"], op.attrs["Targmax"].np
    xp = ctx.xp

    def run(x: Any) -> Any:
        n, h, w, c = x.shape
        if same:
            oh, ow = -(-h // sh), -(-w // sw)
            pt = max((oh - 1) * sh + kh - h, 0) // 2
            pl = max((ow - 1) * sw + kw - w, 0) // 2
        else:
            oh, ow, pt, pl = (h - kh) // sh + 1, (w - kw) // sw + 1, 0, 0
        if oh <= 0 or ow <= 0:
            raise InvalidArgumentError(f"max_pool_with_argmax: a {kh}x{kw} window does not fit {h}x{w} (VALID)", op)
        hp, wp = max(h + 2 * pt, (oh - 1) * sh + kh), max(w + 2 * pl, (ow - 1) * sw + kw)
        xpad = xp.zeros((n, hp, wp, c), dtype=x.dtype)  # the padding is never read (masked below)
        xpad[:, pt:pt + h, pl:pl + w] = x
        s = xpad.strides
        win = xp.lib.stride_tricks.as_strided(xpad, (n, oh, ow, kh, kw, c),
                                              (s[0], s[1] * sh, s[2] * sw, s[1], s[2], s[3]))
        # TF's rule: each window holds its first real cell, replaced by each later one strictly
        # greater (row-major); so a NaN held first stays and a NaN read later is never taken,
        # and a window of -inf gives -inf, never the padding
        rows = xp.arange(oh) * sh - pt
        cols = xp.arange(ow) * sw - pl
        out = xp.zeros((n, oh, ow, c), dtype=x.dtype)
        k = xp.zeros((n, oh, ow, c), dtype=np.int64)
        held = xp.zeros((1, oh, ow, 1), dtype=bool)
        for t in range(kh * kw):
            i, j = divmod(t, kw)
            real = (((rows + i >= 0) & (rows + i < h))[:, None] & ((cols + j >= 0) & (cols + j < w))[None, :])
            real = real[None, :, :, None]
            v = win[:, :, :, i, j, :]
            take = xp.greater(v, out)
            take |= xp.logical_not(held)
            take &= real
            xp.copyto(out, v, where=take)
            xp.copyto(k, t, where=take)
            held = held | real
        y = xp.arange(oh)[None, :, None, None] * sh - pt + k // kw
        xx = xp.arange(ow)[None, None, :, None] * sw - pl + k % kw
        idx = (y * w + xx) * c + xp.arange(c)[None, None, None, :]
        if with_batch:
            idx = idx + xp.arange(n)[:, None, None, None] * (h * w * c)
        return out, idx.astype(targ)
    return run
