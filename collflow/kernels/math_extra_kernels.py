"""Kernels of graph/ops/math_extra_ops.py, written once against `xp` (NumPy or CuPy).

erf is computed here rather than taken from SciPy (not a dependency, and CuPy's lives in
cupyx): a power series below |x| = 2 and a continued fraction for erfc above, both in
float64, with as many terms as the output dtype needs (float64: within 1e-15 of math.erf;
float32: within one ulp).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .math_kernels import check_int_divisor
from .registry import KernelContext, register_kernel


def _direct(op_type: str, fname: str) -> None:
    register_kernel(op_type)(lambda op, ctx: getattr(ctx.xp, fname))


for _t, _f in (("Floor", "floor"), ("Ceil", "ceil"), ("Rint", "rint"), ("IsNan", "isnan"),
               ("IsFinite", "isfinite"), ("IsInf", "isinf"), ("Atan2", "arctan2")):
    _direct(_t, _f)


@register_kernel("Round")
def _round(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    # NumPy's round is half-to-even, TensorFlow's rule
    return lambda x: xp.asarray(xp.round(x))


@register_kernel("TruncateDiv")
def _truncate_div(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    dt = op.outputs[0].dtype

    def truncate_div(x: Any, y: Any) -> Any:
        if dt.is_floating:
            return xp.trunc(xp.true_divide(x, y))
        check_int_divisor(xp, y, op)
        q = xp.floor_divide(x, y)
        # floor and truncation differ where the division is inexact and the signs differ
        q += ((x - q * y) != 0) & ((x < 0) != (y < 0))
        return q
    return truncate_div


@register_kernel("TruncateMod")
def _truncate_mod(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    is_int = op.outputs[0].dtype.is_integer

    def truncate_mod(x: Any, y: Any) -> Any:
        if is_int:
            check_int_divisor(xp, y, op)
        return xp.fmod(x, y)
    return truncate_mod


# -- erf -----------------------------------------------------------------------------------------

_SPLIT = 2.0
_TERMS = {8: (30, 50), 4: (18, 26), 2: (18, 26)}   # itemsize -> (series terms, fraction terms)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)


def _erf_series(xp: Any, small: Any, terms: int) -> Any:
    """erf of 0 <= small <= 2: 2/sqrt(pi) x exp(-x^2) sum_n (2x^2)^n / (1*3*...*(2n+1)), a
    series of positive terms (no cancellation), evaluated in nested form."""
    a = 2.0 * small * small
    s = xp.ones_like(a)
    for n in range(terms, 0, -1):
        s *= a
        s *= 1.0 / (2 * n + 1)
        s += 1.0
    s *= small
    s *= xp.exp(-small * small)
    s *= _TWO_OVER_SQRT_PI
    return s


def _erfc_tail(xp: Any, big: Any, terms: int) -> Any:
    """erfc of big >= 2: exp(-x^2) / (sqrt(pi) (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))),
    the continued fraction evaluated from its tail."""
    t = big.copy()
    for k in range(terms, 0, -1):
        t = big + (0.5 * k) / t
    erfc = xp.exp(-big * big)
    erfc /= t
    erfc *= _INV_SQRT_PI
    return erfc


def erf_values(xp: Any, x: Any, series_terms: int, fraction_terms: int) -> Any:
    """erf(x) in float64: the series for |x| < 2, 1 - erfc from the continued fraction above.
    Each branch runs on all elements with |x| clipped into its range."""
    x = xp.asarray(x, dtype=np.float64)
    ax = xp.abs(x)
    r = xp.where(ax < _SPLIT, _erf_series(xp, xp.minimum(ax, _SPLIT), series_terms),
                 1.0 - _erfc_tail(xp, xp.maximum(ax, _SPLIT), fraction_terms))
    return xp.copysign(r, x)


def erfc_values(xp: Any, x: Any, series_terms: int, fraction_terms: int) -> Any:
    """erfc(x) in float64: 1 - erf from the series for |x| < 2; the continued fraction for
    x >= 2 (no cancellation where erf is near 1), 2 - it for x <= -2."""
    x = xp.asarray(x, dtype=np.float64)
    ax = xp.abs(x)
    near = 1.0 - xp.copysign(_erf_series(xp, xp.minimum(ax, _SPLIT), series_terms), x)
    tail = _erfc_tail(xp, xp.maximum(ax, _SPLIT), fraction_terms)
    return xp.where(ax < _SPLIT, near, xp.where(x < 0, 2.0 - tail, tail))


def _series_kernel(values: Any) -> Any:
    """The kernel factory of erf and erfc: values(xp, x, terms...) with the terms the dtype needs."""
    def factory(op: Any, ctx: KernelContext) -> Any:
        xp = ctx.xp
        dt = op.outputs[0].dtype.np
        ns, nc = _TERMS[dt.itemsize]
        return lambda x: values(xp, x, ns, nc).astype(dt, copy=False)
    return factory


register_kernel("Erf")(_series_kernel(erf_values))
register_kernel("Erfc")(_series_kernel(erfc_values))


# -- linspace ------------------------------------------------------------------------------------


@register_kernel("LinSpace")
def _lin_space(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    dt = op.outputs[0].dtype.np

    def lin_space(start: Any, stop: Any, num: Any) -> Any:
        n = int(num)
        if n <= 0:
            raise InvalidArgumentError(f"linspace requires num > 0, got {n}", op)
        # 0-d arrays of the device's module (a CuPy scalar has no implicit host conversion)
        s, e = xp.asarray(start, dtype=dt).reshape(()), xp.asarray(stop, dtype=dt).reshape(())
        out = xp.arange(n, dtype=dt)
        if n > 1:
            # start + i * step in the output dtype, the last value exactly stop (as TensorFlow)
            out *= (e - s) / dt.type(n - 1)
        out += s
        out[n - 1:] = e if n > 1 else s
        return out
    return lin_space
