"""Kernels of graph/ops/quant_ops.py: FakeQuant* (float32, TF's nudged range and rounding)
and QuantizeAndDequantizeV2/V4.  They run on NumPy (a GPU input is brought to the host)."""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .device import to_host
from .registry import KernelContext, register_kernel

_F = np.float32


def _std_round(z: Any) -> Any:
    """Round half away from zero, exactly (C's round)."""
    z = np.asarray(z, dtype=np.float64)
    r = np.trunc(z)
    return r + np.where(np.abs(z - r) >= 0.5, np.sign(z), 0.0)


def nudge(mn: Any, mx: Any, num_bits: int, narrow_range: bool) -> Tuple[Any, Any, Any]:
    """(nudged_min, nudged_max, scale), float32: the range moved so that 0 is on the grid."""
    nmin, nmax, scale, _ = nudge_with_zero(mn, mx, num_bits, narrow_range)
    return nmin, nmax, scale


def nudge_with_zero(mn: Any, mx: Any, num_bits: int, narrow_range: bool) -> Tuple[Any, Any, Any, Any]:
    """nudge's results and the grid offset quant_min - zero_point (float32)."""
    qmin = _F(1 if narrow_range else 0)
    qmax = _F((1 << num_bits) - 1)
    mn, mx = np.asarray(mn, dtype=_F), np.asarray(mx, dtype=_F)
    with np.errstate(all="ignore"):
        scale = ((mx - mn) / (qmax - qmin)).astype(_F)
        zp_from_min = (qmin - mn / scale).astype(_F)
        zp = np.where(zp_from_min < qmin, qmin, np.where(zp_from_min > qmax, qmax, _std_round(zp_from_min)))
        zp = np.nan_to_num(zp, nan=0.0).astype(np.uint16).astype(_F)  # TF keeps it as uint16
        return ((qmin - zp) * scale).astype(_F), ((qmax - zp) * scale).astype(_F), scale, (qmin - zp).astype(_F)


def fake_quant(x: Any, mn: Any, mx: Any, num_bits: int, narrow_range: bool) -> Any:
    """x clamped to the nudged range, rounded to its grid (half up) and scaled back; the
    result is (grid index + quant_min - zero_point) * scale, which is TF's value bit for bit
    (q * scale + nudged_min is an ulp off)."""
    nmin, nmax, scale, offset = nudge_with_zero(mn, mx, num_bits, narrow_range)
    with np.errstate(all="ignore"):
        inv = (_F(1.0) / scale).astype(_F)
        shifted = (np.minimum(np.maximum(x, nmin), nmax) - nmin).astype(_F)  # TF clamps with min, then max
        q = np.floor((shifted * inv).astype(_F) + _F(0.5)).astype(_F)
        return ((q + offset).astype(_F) * scale).astype(_F)


def _host(xp: Any, *arrays: Any) -> list:
    return [to_host(a) for a in arrays]


def _check_bits(op: Any) -> Tuple[int, bool]:
    nb, narrow = op.attrs["num_bits"], op.attrs["narrow_range"]
    if not 2 <= nb <= 16:
        raise InvalidArgumentError(f"num_bits must be between 2 and 16, inclusive; got {nb}", op)
    return nb, narrow


def _args_range(op: Any) -> Tuple[Any, Any, Any]:
    nb, narrow = _check_bits(op)
    if not op.attrs["min"] < op.attrs["max"]:
        raise InvalidArgumentError(f"min has to be smaller than max, was: {op.attrs['min']} >= {op.attrs['max']}", op)
    return nudge(op.attrs["min"], op.attrs["max"], nb, narrow)


def _args_quant(op: Any) -> Tuple[Any, Any, int, bool]:
    _args_range(op)
    return _F(op.attrs["min"]), _F(op.attrs["max"]), op.attrs["num_bits"], op.attrs["narrow_range"]


@register_kernel("FakeQuantWithMinMaxArgs")
def _args(op: Any, ctx: KernelContext) -> Any:
    q = _args_quant(op)
    xp = ctx.xp
    return lambda x: xp.asarray(fake_quant(_host(xp, x)[0], *q))


@register_kernel("FakeQuantWithMinMaxArgsGradient")
def _args_gradient(op: Any, ctx: KernelContext) -> Any:
    nmin, nmax, _ = _args_range(op)
    xp = ctx.xp

    def run(g: Any, x: Any) -> Any:
        g, x = _host(xp, g, x)
        return xp.asarray((g * ((x >= nmin) & (x <= nmax))).astype(_F))
    return run


@register_kernel("FakeQuantWithMinMaxVars")
def _vars(op: Any, ctx: KernelContext) -> Any:
    nb, narrow = _check_bits(op)
    xp = ctx.xp

    def run(x: Any, mn: Any, mx: Any) -> Any:
        x, mn, mx = _host(xp, x, mn, mx)
        return xp.asarray(fake_quant(x, mn, mx, nb, narrow))
    return run


@register_kernel("FakeQuantWithMinMaxVarsGradient")
def _vars_gradient(op: Any, ctx: KernelContext) -> Any:
    nb, narrow = _check_bits(op)
    xp = ctx.xp

    def run(g: Any, x: Any, mn: Any, mx: Any) -> Any:
        g, x, mn, mx = _host(xp, g, x, mn, mx)
        nmin, nmax, _ = nudge(mn, mx, nb, narrow)
        inside = (x >= nmin) & (x <= nmax)
        dx = (g * inside).astype(_F)
        dmin = np.asarray((g * (x < nmin)).sum(dtype=_F), dtype=_F)
        dmax = np.asarray((g * (x > nmax)).sum(dtype=_F), dtype=_F)
        return xp.asarray(dx), xp.asarray(dmin), xp.asarray(dmax)
    return run


def _channel_check(op: Any, x: Any, mn: Any, mx: Any) -> None:
    d = x.shape[-1]
    if mn.shape != (d,) or mx.shape != (d,):
        raise InvalidArgumentError(f"{op.type}: min and max must have shape [{d}] (the inputs' last dimension), "
                                   f"got {list(mn.shape)} and {list(mx.shape)}", op)


@register_kernel("FakeQuantWithMinMaxVarsPerChannel")
def _channel(op: Any, ctx: KernelContext) -> Any:
    nb, narrow = _check_bits(op)
    xp = ctx.xp

    def run(x: Any, mn: Any, mx: Any) -> Any:
        x, mn, mx = _host(xp, x, mn, mx)
        _channel_check(op, x, mn, mx)
        return xp.asarray(fake_quant(x, mn, mx, nb, narrow))
    return run


@register_kernel("FakeQuantWithMinMaxVarsPerChannelGradient")
def _channel_gradient(op: Any, ctx: KernelContext) -> Any:
    nb, narrow = _check_bits(op)
    xp = ctx.xp

    def run(g: Any, x: Any, mn: Any, mx: Any) -> Any:
        g, x, mn, mx = _host(xp, g, x, mn, mx)
        _channel_check(op, x, mn, mx)
        nmin, nmax, _ = nudge(mn, mx, nb, narrow)
        dx = (g * ((x >= nmin) & (x <= nmax))).astype(_F)
        d = x.shape[-1]
        g2, x2 = g.reshape(-1, d), x.reshape(-1, d)
        dmin = (g2 * (x2 < nmin)).sum(axis=0, dtype=_F).astype(_F)
        dmax = (g2 * (x2 > nmax)).sum(axis=0, dtype=_F).astype(_F)
        return xp.asarray(dx), xp.asarray(dmin), xp.asarray(dmax)
    return run


def _qdq_one(x: Any, lo: Any, hi: Any, signed: bool, nb: int, range_given: bool, half_up: bool,
             narrow: bool) -> Any:
    t = x.dtype.type
    if signed:
        qmin = -(1 << (nb - 1)) + (1 if narrow else 0)
        qmax = (1 << (nb - 1)) - 1
    else:
        qmin, qmax = 0, (1 << nb) - 1
    lo, hi = t(lo), t(hi)
    big = np.finfo(x.dtype).max
    with np.errstate(all="ignore"):
        from_min = t(t(qmin) / lo) if qmin * lo > 0 else big
        from_max = t(t(qmax) / hi) if qmax * hi > 0 else big
        if from_min < from_max:
            scale, inv = from_min, t(lo / t(qmin))
            hi = t(t(qmax) * inv)
        else:
            scale, inv = from_max, t(hi / t(qmax))
            lo = t(t(qmin) * inv)
        v = np.minimum(np.maximum(x, lo), hi) if range_given else x
        v = (v * scale).astype(x.dtype)
        r = np.floor(v + t(0.5)) if half_up else np.rint(v)
        return (r * inv).astype(x.dtype)


@register_kernel("QuantizeAndDequantizeV2")
@register_kernel("QuantizeAndDequantizeV4")
def _qdq(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    signed, nb, given, axis = a["signed_input"], a["num_bits"], a["range_given"], a["axis"]
    if not 0 < nb < (62 if signed else 63):
        raise InvalidArgumentError(f"num_bits is out of range: {nb} with signed_input_ {signed}", op)
    xp = ctx.xp
    half_up = a["round_mode"] == "HALF_UP"

    def run(x: Any, mn: Any, mx: Any) -> Any:
        x, mn, mx = _host(xp, x, mn, mx)
        if axis == -1:
            lo, hi = (mn, mx) if given else ((x.min(), x.max()) if x.size else (0, 0))
            if given and lo > hi:
                raise InvalidArgumentError(f"Invalid range: input_min {float(lo)} > input_max {float(hi)}", op)
            return xp.asarray(_qdq_one(x, lo, hi, signed, nb, given, half_up, a["narrow_range"]))
        d = x.shape[axis]
        if given and (mn.shape != (d,) or mx.shape != (d,)):
            raise InvalidArgumentError(f"input_min and input_max must have shape [{d}], got {list(mn.shape)} and "
                                       f"{list(mx.shape)}", op)
        moved = np.moveaxis(x, axis, 0)
        out = np.empty_like(moved)
        for i in range(d):
            lo, hi = (mn[i], mx[i]) if given else ((moved[i].min(), moved[i].max()) if moved[i].size else (0, 0))
            if given and lo > hi:
                raise InvalidArgumentError(f"Invalid range: input_min {float(lo)} > input_max {float(hi)}", op)
            out[i] = _qdq_one(moved[i], lo, hi, signed, nb, given, half_up, a["narrow_range"])
        return xp.asarray(np.moveaxis(out, 0, axis))
    return run
