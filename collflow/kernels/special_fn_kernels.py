"""Kernels of graph/ops/special_fn_ops.py: the Bessel functions (I0, I1, K0, K1 and their
exponentially scaled forms, J0, J1, Y0, Y1), Dawson's integral, the exponential integral Ei,
the Fresnel integrals, Spence's function and the normal quantile ndtri (erfinv through it).

Every kernel computes in float64 with the Chebyshev tables of kernels/special_fn_tables.py
(the function with its singular, oscillating or exponential part factored out), then casts to
the op's dtype, written once against `xp` (NumPy or CuPy).  Edge values (0, negative
arguments, +-inf, NaN) are TensorFlow's, as its Cephes-derived kernels give them: Y0/Y1 are
-inf and K0/K1 +inf for x <= 0, Ei is NaN for x < 0, I0/I1 are NaN at +-inf (exp(inf) * 0),
Fresnel integrals are exactly 1/2 beyond x = 36974.9, Spence is NaN for x < 0.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from . import special_fn_tables as T
from .registry import KernelContext, register_kernel

_EULER = 0.57721566490153286061
_TWO_OVER_PI = 2.0 / math.pi
_EXP_M2 = math.exp(-2.0)
_FRESNEL_FLAT = 36974.925676896424    # beyond: C = S = 1/2 (TF's, where the phase is noise)


def cheb(xp: Any, table: T.Cheb, u: Any) -> Any:
    """The Chebyshev series `table` at u (Clenshaw's recurrence; u clipped into its interval
    so that the lanes another branch takes stay finite)."""
    lo, hi, c = table
    t = (2.0 * xp.clip(u, lo, hi) - (lo + hi)) / (hi - lo)
    t2 = 2.0 * t
    b1 = xp.zeros_like(t)
    b2 = xp.zeros_like(t)
    for k in range(len(c) - 1, 0, -1):
        b1, b2 = t2 * b1 - b2 + c[k], b1
    out = t * b1 - b2 + c[0]
    # clip() maps NaN to NaN on NumPy, but keep it explicit for backends that do not
    return xp.where(xp.isnan(u), np.nan, out)


def _f64(xp: Any, x: Any) -> Any:
    return xp.asarray(x, dtype=np.float64)


# -- modified Bessel functions of the first kind -------------------------------------------

def i0e(xp: Any, x: Any) -> Any:
    """exp(-|x|) I0(x): a series in x up to 8, sqrt(x) I0e(x) in 8/x beyond."""
    a = xp.abs(_f64(xp, x))
    small = a <= 8.0
    big = cheb(xp, T._I0E_LARGE, 8.0 / xp.where(small, 8.0, a)) / xp.sqrt(xp.where(small, 1.0, a))
    return xp.where(small, cheb(xp, T._I0E_SMALL, a), big)


def i1e(xp: Any, x: Any) -> Any:
    """exp(-|x|) I1(x) (odd): x times a series in |x| up to 8, then as I0e."""
    x = _f64(xp, x)
    a = xp.abs(x)
    small = a <= 8.0
    big = xp.sign(x) * cheb(xp, T._I1E_LARGE, 8.0 / xp.where(small, 8.0, a)) / xp.sqrt(xp.where(small, 1.0, a))
    return xp.where(small, x * cheb(xp, T._I1E_SMALL, a), big)


def i0(xp: Any, x: Any) -> Any:
    """I0(x) = exp(|x|) I0e(x) (inf past |x| ~ 709.8 and NaN at +-inf, as TF)."""
    return xp.exp(xp.abs(_f64(xp, x))) * i0e(xp, x)


def i1(xp: Any, x: Any) -> Any:
    """I1(x) = exp(|x|) I1e(x)."""
    return xp.exp(xp.abs(_f64(xp, x))) * i1e(xp, x)


# -- modified Bessel functions of the second kind ------------------------------------------

def _k_parts(xp: Any, x: Any, order: int) -> tuple:
    """(x <= 2, K(x) there, sqrt(x) e^x K(x) for x > 2): K0 = f(x^2) - log(x/2) I0(x),
    K1 = g(x^2)/x + log(x/2) I1(x) near 0; sqrt(x) e^x K in 2/x beyond."""
    small = x <= 2.0
    xs = xp.where(small, x, 1.0)
    log_half = xp.log(xs / 2.0)
    if order == 0:
        near = cheb(xp, T._K0_SMALL, xs * xs) - log_half * i0(xp, xs)
        far = cheb(xp, T._K0E_LARGE, 2.0 / xp.where(small, 2.0, x))
    else:
        near = cheb(xp, T._K1_SMALL, xs * xs) / xs + log_half * i1(xp, xs)
        far = cheb(xp, T._K1E_LARGE, 2.0 / xp.where(small, 2.0, x))
    # TF's K is +inf at 0 and for every negative argument (-inf included)
    near = xp.where(xs <= 0.0, np.inf, near)
    return small, near, far / xp.sqrt(xp.where(small, 1.0, x))


def _k(xp: Any, x: Any, order: int, scaled: bool) -> Any:
    x = _f64(xp, x)
    small, near, far = _k_parts(xp, x, order)
    if scaled:   # (x <= 0 stays +inf, -inf included: inf * exp(-inf) would be NaN)
        return xp.where(small, xp.where(x <= 0.0, np.inf, near * xp.exp(xp.where(small, x, 0.0))), far)
    return xp.where(small, near, far * xp.exp(-xp.where(small, 0.0, x)))


# -- Bessel functions of the first and second kind -----------------------------------------

def _pq(xp: Any, a: Any, order: int) -> tuple:
    """(P, Q, chi) of Hankel's form for a > 5: J = sqrt(2/(pi a)) (P cos chi - Q sin chi),
    Y = sqrt(2/(pi a)) (P sin chi + Q cos chi), chi = a - (2 order + 1) pi/4."""
    u = 25.0 / (a * a)
    p = cheb(xp, T._P1_LARGE if order else T._P0_LARGE, u)
    q = cheb(xp, T._Q1_LARGE if order else T._Q0_LARGE, u) * (5.0 / a)
    return p, q, a - (0.75 if order else 0.25) * math.pi


def _jy(xp: Any, x: Any, order: int, second: bool) -> Any:
    x = _f64(xp, x)
    a = xp.abs(x)
    small = a <= 5.0
    al = xp.where(small, 5.0, a)
    p, q, chi = _pq(xp, al, order)
    amp = xp.sqrt(_TWO_OVER_PI / al)
    if not second:
        far = amp * (p * xp.cos(chi) - q * xp.sin(chi))
        if order == 0:
            return xp.where(small, cheb(xp, T._J0_SMALL, a * a), far)
        return xp.sign(x) * xp.where(small, a * cheb(xp, T._J1_SMALL, a * a), far)
    far = amp * (p * xp.sin(chi) + q * xp.cos(chi))
    xs = xp.where(small & (x > 0), x, 1.0)
    lx = xp.log(xs)
    if order == 0:
        near = cheb(xp, T._Y0_SMALL, xs * xs) + _TWO_OVER_PI * lx * _jy(xp, xs, 0, False)
    else:
        near = xs * cheb(xp, T._Y1_SMALL, xs * xs) + _TWO_OVER_PI * (_jy(xp, xs, 1, False) * lx - 1.0 / xs)
    out = xp.where(small, near, far)
    # TF's Y0/Y1: -inf at 0 and for negative arguments
    return xp.where(x <= 0.0, -np.inf, out)


def _y1(xp: Any, x: Any) -> Any:
    """Y1 as TF's kernels give it: its float32 kernel is NaN at +-0 (the float64 one -inf)."""
    out = _jy(xp, x, 1, True)
    return xp.where(x == 0, np.nan, out) if x.dtype == np.float32 else out


# -- Dawson, Ei, Fresnel, Spence -----------------------------------------------------------

def dawsn(xp: Any, x: Any) -> Any:
    """Dawson's integral exp(-x^2) int_0^x exp(t^2) dt (odd)."""
    x = _f64(xp, x)
    a = xp.abs(x)
    near = x * cheb(xp, T._DAWSN_SMALL, a * a)
    mid = xp.sign(x) * cheb(xp, T._DAWSN_MID, a)
    al = xp.where(a > 6.25, a, 6.25)
    far = cheb(xp, T._DAWSN_LARGE, (6.25 / al) ** 2) / (2.0 * xp.where(a > 6.25, x, 6.25))
    out = xp.where(a <= 3.25, near, xp.where(a <= 6.25, mid, far))
    return xp.where(xp.isnan(x), x, out)  # the pieces' selection would hide a NaN argument


_EI_PIECES = (T._EI_POS0, T._EI_POS1, T._EI_POS2, T._EI_POS3, T._EI_POS4)


def expint(xp: Any, x: Any) -> Any:
    """The exponential integral Ei(x) for x >= 0 (TF's: NaN for x < 0, -inf at 0):
    gamma + log x + x S(x) up to 4, e^x/x times a series in 1/x (five octaves) beyond."""
    x = _f64(xp, x)
    small = x <= 4.0
    xs = xp.where(small, x, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        near = _EULER + xp.log(xs) + xs * cheb(xp, T._EI_SMALL, xs)
        xl = xp.where(small, 8.0, x)
        u = 1.0 / xl
        far = xp.zeros_like(x)
        for table in _EI_PIECES:          # each u lies in one table's interval
            inside = (u >= table.lo) & (u <= table.hi)
            far = xp.where(inside, cheb(xp, table, u), far)
        far = xp.exp(xl) / xl * far
    out = xp.where(small, near, far)
    return xp.where(x < 0.0, np.nan, out)


def _fresnel(xp: Any, x: Any) -> tuple:
    """(C(x), S(x)) with TF's convention int_0^x cos(pi t^2 / 2) dt (odd): power series in
    x^4 below 1.6, the auxiliary functions f, g (in (1.6/x)^2) beyond."""
    x = _f64(xp, x)
    a = xp.abs(x)
    x2 = a * a
    small = a < 1.6
    c_near = a * cheb(xp, T._FC_SMALL, x2 * x2)
    s_near = a * x2 * cheb(xp, T._FS_SMALL, x2 * x2)
    x2l = xp.where(small, 2.56, x2)
    f = cheb(xp, T._FRESNEL_F, 2.56 / x2l)
    g = cheb(xp, T._FRESNEL_G, 2.56 / x2l)
    phase = (math.pi / 2.0) * x2l
    cs, sn = xp.cos(phase), xp.sin(phase)
    pa = math.pi * xp.where(small, 1.6, a)
    c_far = 0.5 + (f * sn - g * cs) / pa
    s_far = 0.5 - (f * cs + g * sn) / pa
    flat = a > _FRESNEL_FLAT
    c = xp.where(small, c_near, xp.where(flat, 0.5, c_far))
    s = xp.where(small, s_near, xp.where(flat, 0.5, s_far))
    sign = xp.sign(x)
    return sign * c, sign * s


def spence(xp: Any, x: Any) -> Any:
    """Spence's function int_1^x log t / (1 - t) dt (= Li2(1 - x)) for x >= 0: a series in
    w = x - 1 on [1/2, 3/2], carried there by the reflections x -> 1 - x and x -> 1/x."""
    x = _f64(xp, x)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv2 = x > 2.0
        y = xp.where(inv2, 1.0 / x, x)
        inv15 = y > 1.5
        refl = ~inv15 & (y < 0.5)
        w = xp.where(inv15, 1.0 / y - 1.0, xp.where(refl, -y, y - 1.0))
        s = w * cheb(xp, T._SPENCE, w)
        # reflection: spence(y) = pi^2/6 - log(y) log(1 - y) - spence(1 - y)
        s = xp.where(refl, math.pi ** 2 / 6.0 - xp.log(y) * xp.log1p(-y) - s, s)
        # inversion: spence(y) = -log(y)^2 / 2 - spence(1/y)
        ly = xp.log(y)
        s = xp.where(inv2 | inv15, -0.5 * ly * ly - s, s)
        s = xp.where(x == 0.0, math.pi ** 2 / 6.0, xp.where(x == 1.0, 0.0, s))
    return xp.where(x < 0.0, np.nan, s)


# -- the normal quantile --------------------------------------------------------------------

def ndtri(xp: Any, p: Any) -> Any:
    """The inverse of the standard normal CDF: a series in (p - 1/2)^2 on [e^-2, 1 - e^-2],
    in 1/z with z = sqrt(-2 log q) in the tails (q = min(p, 1 - p))."""
    p = _f64(xp, p)
    upper = p > 1.0 - _EXP_M2
    q = xp.where(upper, 1.0 - p, p)
    central = q > _EXP_M2
    y = p - 0.5
    mid = y * cheb(xp, T._NDTRI_MID, y * y)
    with np.errstate(divide="ignore", invalid="ignore"):
        qt = xp.where(central | (q <= 0.0), _EXP_M2, q)
        z = xp.sqrt(-2.0 * xp.log(qt))
        v = 1.0 / z
        corr = xp.where(v >= T._NDTRI_TAIL0.lo, cheb(xp, T._NDTRI_TAIL0, v), cheb(xp, T._NDTRI_TAIL1, v))
        tail = -(z + corr)
        tail = xp.where(q == 0.0, -np.inf, tail)
        tail = xp.where(upper, -tail, tail)
    out = xp.where(central, mid, tail)
    return xp.where((p < 0.0) | (p > 1.0), np.nan, out)


def erfinv(xp: Any, x: Any) -> Any:
    """erfinv(x) = ndtri((x + 1)/2) / sqrt(2), TF's formula: (x + 1)/2 is formed in the
    input's dtype (so float32's tiny arguments round as TF's do)."""
    x = xp.asarray(x)
    half = x.dtype.type(0.5)
    return ndtri(xp, half * x + half) * math.sqrt(0.5)


_FUNCS: dict = {
    "BesselI0": i0, "BesselI0e": i0e, "BesselI1": i1, "BesselI1e": i1e,
    "BesselK0": lambda xp, x: _k(xp, x, 0, False), "BesselK0e": lambda xp, x: _k(xp, x, 0, True),
    "BesselK1": lambda xp, x: _k(xp, x, 1, False), "BesselK1e": lambda xp, x: _k(xp, x, 1, True),
    "BesselJ0": lambda xp, x: _jy(xp, x, 0, False), "BesselJ1": lambda xp, x: _jy(xp, x, 1, False),
    "BesselY0": lambda xp, x: _jy(xp, x, 0, True), "BesselY1": lambda xp, x: _y1(xp, x),
    "Dawsn": dawsn, "Expint": expint, "Spence": spence, "Ndtri": ndtri, "Erfinv": erfinv,
    "FresnelCos": lambda xp, x: _fresnel(xp, x)[0], "FresnelSin": lambda xp, x: _fresnel(xp, x)[1],
}


def _register(op_type: str, fn: Callable[[Any, Any], Any]) -> None:
    @register_kernel(op_type)
    def factory(op: Any, ctx: KernelContext) -> Any:
        xp = ctx.xp
        dt = op.outputs[0].dtype.np
        tiny = np.finfo(dt).tiny

        def kernel(x: Any) -> Any:
            with np.errstate(all="ignore"):   # inf/NaN lanes are TF's values, not warnings
                # TF's CPU kernels run with denormals read as zero (DAZ): ndtri(1e-40f) is -inf there
                x = xp.where(xp.abs(x) < tiny, xp.zeros_like(x) * xp.sign(x), x)
                return xp.asarray(fn(xp, x)).astype(dt, copy=False)
        return kernel


for _name, _fn in _FUNCS.items():
    _register(_name, _fn)
