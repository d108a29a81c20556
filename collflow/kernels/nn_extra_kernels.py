"""Kernels of graph/ops/nn_extra_ops.py (relu6, elu, selu, softplus, softsign, LRN and its
gradient), written once against `xp`; and max_pool_with_argmax's (graph/ops/nn_more_tf1_ops.py).

Exponentials see only the negative side (exp of min(x, 0)), so large inputs never overflow.
LRN's window sums over channels are 2 * depth_radius + 1 shifted adds of whole arrays.
"""
from __future__ import annotations

from typing import Any

from ..errors import InvalidArgumentError
from .nn_kernels import _pad, _pool_setup, tf_window_argmax
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
    kh, kw, strides, geometry = _pool_setup(op)
    same, with_batch, targ = op.attrs["padding"] == "SAME", op.attrs["include_batch_in_index"], op.attrs["Targmax"].np
    xp = ctx.xp

    def run(x: Any) -> Any:
        n, h, w, c = x.shape
        if min(h, w) == 0 or (not same and (h < kh or w < kw)):
            raise InvalidArgumentError(f"max_pool_with_argmax: a {kh}x{kw} window does not fit {h}x{w} (VALID)", op)
        geo = geometry(h, w, kh, kw)
        oh, ow, pt, pl = geo.oh, geo.ow, geo.pt, geo.pl
        # TF's rule, MaxPoolGrad's where NaN is present: a NaN held first stays, a later NaN is
        # never taken, a window of -inf gives -inf, the padding (zeros here) is never read
        out, k = tf_window_argmax(xp, _pad(xp, x, geo), geo, kh, kw, strides, (n, oh, ow, c))
        sh, sw = strides
        y = xp.arange(oh)[None, :, None, None] * sh - pt + k // kw
        xx = xp.arange(ow)[None, None, :, None] * sw - pl + k % kw
        idx = (y * w + xx) * c + xp.arange(c)[None, None, None, :]
        if with_batch:
            idx = idx + xp.arange(n)[:, None, None, None] * (h * w * c)
        return out, idx.astype(targ)
    return run
