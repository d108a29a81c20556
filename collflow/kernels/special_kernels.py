"""Kernels of graph/ops/special_ops.py: lgamma, digamma and trigamma, written once against
`xp` in float64 (the result cast to the op's dtype); erfc's is beside erf's, whose series and
continued fraction it shares (kernels/math_extra_kernels.py).

lgamma: Lanczos' approximation (g = 7, nine terms; relative error of Gamma ~1e-15) for
x >= 1/2, the reflection formula below.  digamma and trigamma (polygamma(1, .)): the recurrences
psi(x) = psi(x + 1) - 1/x and psi1(x) = psi1(x + 1) + 1/x^2 carry x above 10, where the
asymptotic series (Bernoulli numbers) is accurate to ~1e-14; reflection below 1/2.  At the
poles (0, -1, -2, ...) lgamma and trigamma are +inf, digamma NaN, as TensorFlow's.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .registry import KernelContext, register_kernel

_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _lgamma_right(xp: Any, x: Any) -> Any:
    """log|Gamma(x)| for x >= 1/2 (Lanczos)."""
    z = x - 1.0
    a = xp.full_like(z, _LANCZOS[0])
    for i in range(1, len(_LANCZOS)):
        a += _LANCZOS[i] / (z + i)
    t = z + (_LANCZOS_G + 0.5)
    return _HALF_LOG_2PI + (z + 0.5) * xp.log(t) - t + xp.log(a)


def lgamma_values(xp: Any, x: Any) -> Any:
    x = xp.asarray(x, dtype=np.float64)
    left = x < 0.5
    right = xp.where(left, 1.0 - x, x)                     # >= 1/2 everywhere
    lg = _lgamma_right(xp, right)
    with np.errstate(divide="ignore"):
        refl = math.log(math.pi) - xp.log(xp.abs(xp.sin(math.pi * x))) - lg
    out = xp.where(left, refl, lg)
    pole = (left & (x == xp.floor(x))) | (x == np.inf)   # lgamma(inf) = inf, as TF's
    return xp.where(pole, np.inf, out)


def _shift_up(xp: Any, y: Any, term: Any) -> Any:
    """(y raised above 10 by unit steps, the sum of term(y) over the values stepped over)."""
    acc = xp.zeros_like(y)
    for _ in range(10):
        low = y < 10.0
        acc += xp.where(low, term(xp.where(low, y, 1.0)), 0.0)
        y = xp.where(low, y + 1.0, y)
    return y, acc


def digamma_values(xp: Any, x: Any) -> Any:
    x = xp.asarray(x, dtype=np.float64)
    left = x < 0.5
    y = xp.where(left, 1.0 - x, x)
    y, acc = _shift_up(xp, y, lambda v: 1.0 / v)
    r = 1.0 / (y * y)
    series = r * (1.0 / 12 - r * (1.0 / 120 - r * (1.0 / 252 - r * (1.0 / 240 - r * (1.0 / 132)))))
    psi = xp.log(y) - 0.5 / y - series - acc
    with np.errstate(divide="ignore", invalid="ignore"):
        refl = psi - math.pi / xp.tan(math.pi * x)
    out = xp.where(left, refl, psi)
    return xp.where(left & (x == xp.floor(x)), np.nan, out)


def trigamma_values(xp: Any, x: Any) -> Any:
    x = xp.asarray(x, dtype=np.float64)
    left = x < 0.5
    y = xp.where(left, 1.0 - x, x)
    y, acc = _shift_up(xp, y, lambda v: 1.0 / (v * v))
    r = 1.0 / (y * y)
    series = (1.0 / y) * (1.0 + 0.5 / y + r * (1.0 / 6 - r * (1.0 / 30 - r * (1.0 / 42 - r * (1.0 / 30 - r * (5.0 / 66))))))
    psi1 = series + acc
    with np.errstate(divide="ignore", invalid="ignore"):
        refl = (math.pi / xp.sin(math.pi * x)) ** 2 - psi1
    out = xp.where(left, refl, psi1)
    return xp.where(left & (x == xp.floor(x)), np.inf, out)


def _register(op_type: str, fn: Any) -> None:
    @register_kernel(op_type)
    def factory(op: Any, ctx: KernelContext) -> Any:
        xp = ctx.xp
        dt = op.outputs[0].dtype.np
        return lambda x: fn(xp, x).astype(dt, copy=False)


_register("Lgamma", lgamma_values)
_register("Digamma", digamma_values)
_register("Trigamma", trigamma_values)

# the Bessel, Dawson, Ei, Fresnel, Spence and ndtri/erfinv kernels live beside these
import importlib as _importlib  # noqa: E402  (imported for its kernel registrations)
_importlib.import_module(".special_fn_kernels", __package__)
