"""Kernels of graph/ops/special_more_ops.py: the regularized incomplete gamma functions
(Igamma, Igammac, IgammaGradA), the regularized incomplete beta (Betainc), Hurwitz's zeta
(Zeta), polygamma of any order (Polygamma) and the gamma sampler (RandomGamma).

All compute on the host in float64 and cast to the op's dtype.  The iterative methods run on
the still-unconverged elements only (an active set that shrinks each step), so an array with
a few slow points (large a with x near a: O(sqrt(a)) terms) costs little for the rest.

- P(a, x): the power series x^a e^-x / Gamma(a+1) * sum x^n / ((a+1)...(a+n)) for x < a + 1,
  else Q(a, x) from Legendre's continued fraction (modified Lentz); the other one is 1 - it.
  For a > 1e5 within 40 sqrt(a) of the mean, Temme's uniform asymptotic expansion (its
  leading term): O(1) work where the series would need ~10 sqrt(a) terms.
- dP/da (IgammaGradA): the same series / continued fraction differentiated term by term
  (forward mode), so it is as accurate as P itself.
- I_x(a, b): the continued fraction of the incomplete beta (Lentz), on the side of the
  symmetry I_x(a, b) = 1 - I_{1-x}(b, a) where it converges fast.
- zeta(s, q): direct terms until q + N >= max(10, 2 (s + 24) / pi), then Euler-Maclaurin with
  12 Bernoulli terms.
- polygamma(n, x) = (-1)^(n+1) n! zeta(n+1, x); digamma for n = 0.
Values at the edges (x = 0, a = 0, inf, nan, negative arguments) are TensorFlow's.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Tuple

import numpy as np

from .random_kernels import stream_for, static_shape
from .registry import KernelContext, register_kernel
from .special_kernels import digamma_values, lgamma_values

_EPS = 1e-16
_TINY = 1e-300
_MAXIT = 200000


def _host(v: Any) -> np.ndarray:
    return np.asarray(v.get() if hasattr(v, "get") else v, dtype=np.float64)


def _run_active(n: int, step: Callable[[np.ndarray], np.ndarray], maxit: int = _MAXIT) -> None:
    """Calls step(active indices) until it reports every element converged (it returns the
    per-active-element done mask) or maxit steps."""
    active = np.arange(n)
    for _ in range(maxit):
        if active.size == 0:
            return
        done = step(active)
        active = active[~done]


# -- incomplete gamma ----------------------------------------------------------------------

def _gamma_series(a: np.ndarray, x: np.ndarray, grad: bool) -> Tuple[np.ndarray, np.ndarray]:
    """(S, dS/da) with P = exp(a log x - x - lgamma(a+1)) * S."""
    n = a.size
    s, ds = np.ones(n), np.zeros(n)
    t, h, ap = np.ones(n), np.zeros(n), a.copy()

    def step(i: np.ndarray) -> np.ndarray:
        ap[i] += 1.0
        t[i] *= x[i] / ap[i]
        s[i] += t[i]
        done = np.abs(t[i]) <= np.abs(s[i]) * _EPS
        if grad:
            # d t_n / da = -t_n * sum_{k<=n} 1 / (a + k)
            h[i] += 1.0 / ap[i]
            ds[i] -= t[i] * h[i]
            done &= np.abs(t[i] * h[i]) <= np.abs(ds[i]) * _EPS + _TINY
        return done
    _run_active(n, step)
    return s, ds


def _gamma_cf(a: np.ndarray, x: np.ndarray, grad: bool) -> Tuple[np.ndarray, np.ndarray]:
    """(F, dF/da) with Q = exp(a log x - x - lgamma(a)) * F (Legendre's continued fraction)."""
    b = x + 1.0 - a
    c = np.full(a.shape, 1.0 / _TINY)
    d = 1.0 / b
    f = d.copy()
    # forward-mode derivatives w.r.t. a of b, c, d, f (db/da = -1 at every level)
    dc = np.zeros(a.shape)
    dd = d * d          # d(1/b)/da = db/b^2 with db = -1 -> +1/b^2
    df = dd.copy()
    k = np.zeros(a.shape)

    def step(i: np.ndarray) -> np.ndarray:
        k[i] += 1.0
        an = -k[i] * (k[i] - a[i])
        dan = k[i]
        b[i] += 2.0
        di_prev, ci_prev = d[i], c[i]
        den = an * di_prev + b[i]
        dden = dan * di_prev + an * dd[i] - 1.0
        den = np.where(np.abs(den) < _TINY, _TINY, den)
        cn = b[i] + an / ci_prev
        dcn = -1.0 + dan / ci_prev - an * dc[i] / (ci_prev * ci_prev)
        cn = np.where(np.abs(cn) < _TINY, _TINY, cn)
        dn = 1.0 / den
        ddn = -dden * dn * dn
        delta = dn * cn
        ddelta = ddn * cn + dn * dcn
        d[i], c[i], dd[i], dc[i] = dn, cn, ddn, dcn
        df[i] = df[i] * delta + f[i] * ddelta
        f[i] *= delta
        done = np.abs(delta - 1.0) <= _EPS
        if grad:
            done &= np.abs(f[i] * ddelta) <= np.abs(df[i]) * _EPS + _TINY
        return done
    _run_active(a.size, step)
    return f, df


# Temme's uniform expansion takes over for large a near the mean, where the series and the
# fraction would need O(sqrt(a)) terms: |x - a| < _TEMME_WIDTH sqrt(a) for a > _TEMME_A
_TEMME_A = 1e5
_TEMME_WIDTH = 40.0


def _temme(a: np.ndarray, x: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(P, Q) = (erfc(-eta sqrt(a/2)) / 2 - R, erfc(eta sqrt(a/2)) / 2 + R),
    R = exp(-a eta^2 / 2) / sqrt(2 pi a) * c0(eta), with lambda = x / a,
    eta = sign(lambda - 1) sqrt(2 (lambda - 1 - log lambda)) and c0 = 1 / (lambda - 1) - 1 / eta
    (its Taylor series near eta = 0, where that cancels).  The first omitted term is
    ~ c1 / a with |c1| < 0.002 near the mean: relative error < 1e-8 for a > 1e5."""
    from .math_extra_kernels import erfc_values
    d = x / a - 1.0
    # lambda - 1 - log(lambda) without cancellation: log1p(d) subtracted from d
    eta = np.sign(d) * np.sqrt(2.0 * np.maximum(d - np.log1p(d), 0.0))
    small = np.abs(eta) < 1e-3
    safe_eta = np.where(small, 1.0, eta)
    safe_d = np.where(small, 1.0, d)
    c0 = np.where(small, -1.0 / 3 + eta * (1.0 / 12 + eta * (-2.0 / 135 + eta / 864.0)),
                  1.0 / safe_d - 1.0 / safe_eta)
    r = np.exp(-0.5 * a * eta * eta) / np.sqrt(2.0 * np.pi * a) * c0
    z = eta * np.sqrt(0.5 * a)
    return 0.5 * erfc_values(np, -z, 30, 50) - r, 0.5 * erfc_values(np, z, 30, 50) + r


def _log_prefactor(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """a log x - x - lgamma(a + 1).  For a >= 10 as -a (d - log1p(d)) - log(2 pi a) / 2 - S(a),
    d = (x - a) / a and S Stirling's series: the terms of size a log a that cancel in the
    direct form (1e-7 relative error at a = 1e8) never appear."""
    big = a >= 10.0
    ab = np.where(big, a, 10.0)
    d = (x - ab) / ab
    good = -ab * (d - np.log1p(d)) - 0.5 * np.log(2.0 * np.pi * ab) - _stirling(ab)
    return np.where(big, good, a * np.log(x) - x - lgamma_values(np, a + 1.0))


def igamma_parts(a: Any, x: Any, grad: bool = False) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P, Q, dP/da) elementwise over broadcast a, x (dP/da zeros unless grad)."""
    a, x = np.broadcast_arrays(_host(a), _host(x))
    shape = a.shape
    a, x = a.reshape(-1).copy(), x.reshape(-1).copy()
    p, q, dp = np.full(a.shape, np.nan), np.full(a.shape, np.nan), np.full(a.shape, np.nan)
    ok = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    with np.errstate(invalid="ignore"):
        temme = ok & (a > _TEMME_A) & (np.abs(x - a) < _TEMME_WIDTH * np.sqrt(np.where(ok, a, 0.0)))
    ser = ok & ~temme & (x < a + 1.0)
    cf = ok & ~temme & ~ser
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        if temme.any():
            aa, xx = a[temme], x[temme]
            p[temme], q[temme] = _temme(aa, xx)
            if grad:
                # the expansion is smooth in a: central differences over 2e-4 and 1e-4 of the
                # spread, Richardson-combined (error O(h^4)); on the side where P or Q is near
                # 1, the derivative of the small one (dP/da = -dQ/da) keeps its digits
                use_q = q[temme] < p[temme]

                def diff(h: np.ndarray) -> np.ndarray:
                    (pp, qp), (pm, qm) = _temme(aa + h, xx), _temme(aa - h, xx)
                    return np.where(use_q, qm - qp, pp - pm) / (2.0 * h)
                h = 2e-4 * np.sqrt(aa)
                dp[temme] = (4.0 * diff(0.5 * h) - diff(h)) / 3.0
        if ser.any():
            aa, xx = a[ser], x[ser]
            s, ds = _gamma_series(aa, xx, grad)
            lx = np.log(xx)
            pre = np.exp(_log_prefactor(aa, xx))
            p[ser] = pre * s
            q[ser] = 1.0 - p[ser]
            if grad:
                dp[ser] = p[ser] * (lx - digamma_values(np, aa + 1.0)) + pre * ds
        if cf.any():
            aa, xx = a[cf], x[cf]
            f, df = _gamma_cf(aa, xx, grad)
            lx = np.log(xx)
            pre = np.exp(_log_prefactor(aa, xx) + np.log(aa))     # lgamma(a) = lgamma(a + 1) - log a
            q[cf] = pre * f
            p[cf] = 1.0 - q[cf]
            if grad:
                dp[cf] = -(q[cf] * (lx - digamma_values(np, aa)) + pre * df)
    # TensorFlow's values at the edges
    valid = ~np.isnan(a) & ~np.isnan(x) & (x >= 0) & (a > 0)
    zero_x = (x == 0) & ~np.isnan(a)
    p[x == 0] = 0.0  # TF's P(a, 0) is 0 for every a, NaN and negative a included
    q[zero_x & valid] = 1.0
    dp[x == 0] = 0.0
    inf_a = valid & np.isinf(a)
    p[inf_a], q[inf_a], dp[inf_a] = 0.0, 1.0, 0.0
    inf_x = valid & np.isinf(x)
    p[inf_x & ~np.isinf(a)] = 1.0
    q[inf_x] = 0.0
    dp[inf_x] = 0.0
    return p.reshape(shape), q.reshape(shape), dp.reshape(shape)


# -- incomplete beta -----------------------------------------------------------------------

def _beta_cf(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The continued fraction of I_x(a, b) * a B(a, b) / (x^a (1-x)^b) (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones(a.shape)
    d = 1.0 - qab * x / qap
    d = np.where(np.abs(d) < _TINY, _TINY, d)
    d = 1.0 / d
    h = d.copy()
    m = np.zeros(a.shape)

    def step(i: np.ndarray) -> np.ndarray:
        m[i] += 1.0
        mi, ai, bi, xi = m[i], a[i], b[i], x[i]
        m2 = 2.0 * mi
        # even step
        aa = mi * (bi - mi) * xi / ((qam[i] + m2) * (ai + m2))
        dn = 1.0 + aa * d[i]
        dn = 1.0 / np.where(np.abs(dn) < _TINY, _TINY, dn)
        cn = 1.0 + aa / c[i]
        cn = np.where(np.abs(cn) < _TINY, _TINY, cn)
        hn = h[i] * dn * cn
        # odd step
        aa = -(ai + mi) * (qab[i] + mi) * xi / ((ai + m2) * (qap[i] + m2))
        dn = 1.0 + aa * dn
        dn = 1.0 / np.where(np.abs(dn) < _TINY, _TINY, dn)
        cn = 1.0 + aa / cn
        cn = np.where(np.abs(cn) < _TINY, _TINY, cn)
        delta = dn * cn
        d[i], c[i], h[i] = dn, cn, hn * delta
        return np.abs(delta - 1.0) <= _EPS
    _run_active(a.size, step)
    return h


def _stirling(a: np.ndarray) -> np.ndarray:
    """lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2), for a >= 10 (error < 1e-14)."""
    inv = 1.0 / a
    inv2 = inv * inv
    return inv * (1.0 / 12 - inv2 * (1.0 / 360 - inv2 * (1.0 / 1260 - inv2 / 1680)))


def _beta_log_prefactor(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """a log x + b log(1 - x) - log B(a, b).  With a, b >= 10, around the mean p0 = a / (a + b):
    a log1p(d / p0) + b log1p(-d / (1 - p0)) + log(a b / (a + b)) / 2 - log(2 pi) / 2 + Stirling
    corrections, d = x - p0, so the terms of size a log a that cancel never appear."""
    big = (a >= 10.0) & (b >= 10.0)
    ab, bb = np.where(big, a, 10.0), np.where(big, b, 10.0)
    p0 = ab / (ab + bb)
    d = x - p0
    good = (ab * np.log1p(d / p0) + bb * np.log1p(-d / (1.0 - p0)) + 0.5 * np.log(ab * bb / (ab + bb))
            - 0.5 * math.log(2.0 * math.pi) - _stirling(ab) - _stirling(bb) + _stirling(ab + bb))
    lbeta = lgamma_values(np, a) + lgamma_values(np, b) - lgamma_values(np, a + b)
    return np.where(big, good, a * np.log(x) + b * np.log1p(-x) - lbeta)


def betainc_values(a: Any, b: Any, x: Any) -> np.ndarray:
    a, b, x = np.broadcast_arrays(_host(a), _host(b), _host(x))
    shape = a.shape
    a, b, x = a.reshape(-1), b.reshape(-1), x.reshape(-1)
    out = np.full(a.shape, np.nan)
    ok = (a > 0) & (b > 0) & np.isfinite(a) & np.isfinite(b) & (x >= 0) & (x <= 1)
    inner = ok & (x > 0) & (x < 1)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        if inner.any():
            aa, bb, xx = a[inner], b[inner], x[inner]
            # the fraction converges fast for x < (a + 1) / (a + b + 2); swap to that side
            flip = xx > (aa + 1.0) / (aa + bb + 2.0)
            a2, b2, x2 = np.where(flip, bb, aa), np.where(flip, aa, bb), np.where(flip, 1.0 - xx, xx)
            front = np.exp(_beta_log_prefactor(a2, b2, x2)) / a2
            v = front * _beta_cf(a2, b2, x2)
            out[inner] = np.where(flip, 1.0 - v, v)
    out[ok & (x == 0)] = 0.0
    out[ok & (x == 1)] = 1.0
    return out.reshape(shape)


# -- Hurwitz zeta and polygamma -------------------------------------------------------------

# B_2k / (2k)!, k = 1..12: the Euler-Maclaurin tail of zeta
_B2K = [1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6, -3617.0 / 510,
        43867.0 / 798, -174611.0 / 330, 854513.0 / 138, -236364091.0 / 2730]
_EM = [b / math.factorial(2 * k + 2) for k, b in enumerate(_B2K)]


def zeta_values(s: Any, q: Any) -> np.ndarray:
    s, q = np.broadcast_arrays(_host(s), _host(q))
    shape = s.shape
    s, q = s.reshape(-1).copy(), q.reshape(-1).copy()
    out = np.full(s.shape, np.nan)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        # q <= 0: a pole at the integers; elsewhere only integer s keeps (q + k)^-s real
        pole = (q <= 0) & (q == np.floor(q))
        ok = (s > 1) & np.isfinite(s) & np.isfinite(q) & ~pole & ((q > 0) | (s == np.floor(s)))
        if ok.any():
            ss, w = s[ok], q[ok].copy()
            acc = np.zeros(ss.shape)
            # direct terms until q + N >= max(10, 2 (s + 24) / pi): there the Bernoulli terms
            # shrink by (s + 2k)^2 / (2 pi w)^2 <= 1/16 each, so 12 reach 1e-15 (negative q
            # needs more direct terms); stop early where the terms fell below 1e-17 of the sum
            thr = np.maximum(10.0, 2.0 * (ss + 24.0) / np.pi)
            for _ in range(100000):
                low = np.flatnonzero(w < thr)
                if low.size == 0:
                    break
                term = np.power(w[low], -ss[low])
                acc[low] += term
                w[low] += 1.0
                gone = (w[low] > 0) & (np.abs(term) * (1.0 + w[low] / (ss[low] - 1.0)) < 1e-17 * np.abs(acc[low]))
                thr[low[gone]] = -np.inf
            # Euler-Maclaurin: w^(1-s)/(s-1) + w^-s/2 + sum B_2k/(2k)! s(s+1)..(s+2k-2) w^(-s-2k+1)
            ws = np.power(w, -ss)
            tail = w * ws / (ss - 1.0) + 0.5 * ws
            fac = ss * ws / w           # s w^(-s-1)
            for k, c in enumerate(_EM):
                term = c * fac
                tail += term
                fac = fac * (ss + 2 * k + 1) * (ss + 2 * k + 2) / (w * w)
            out[ok] = acc + tail
        out[s == 1] = np.inf
        # Eigen's rule at the poles q = 0, -1, ...: inf for an even integer s, NaN for other s
        even = (s == np.inf) | ((s == np.floor(s)) & (np.fmod(s, 2.0) == 0))
        out[(s > 1) & pole & even] = np.inf
        out[(s == np.inf) & (q < 0) & ~pole] = np.inf
        out[(s > 1) & (q == np.inf)] = 0.0
        # s = inf: only the first term q^-inf counts
        si = (s == np.inf) & (q > 0)
        out[si] = np.where(q[si] < 1, np.inf, np.where(q[si] == 1, 1.0, 0.0))
    return out.reshape(shape)


def polygamma_values(n: Any, x: Any) -> np.ndarray:
    n, x = np.broadcast_arrays(_host(n), _host(x))
    shape = n.shape
    n, x = n.reshape(-1), x.reshape(-1)
    out = np.full(n.shape, np.nan)
    order0 = n == 0
    out[order0] = digamma_values(np, x[order0])
    pos = (n >= 1) & (n == np.floor(n)) & np.isfinite(n)
    if pos.any():
        nn, xx = n[pos], x[pos]
        with np.errstate(over="ignore", invalid="ignore"):
            sign = np.where(np.mod(nn, 2) == 1, 1.0, -1.0)       # (-1)^(n+1)
            v = sign * np.exp(lgamma_values(np, nn + 1.0)) * zeta_values(nn + 1.0, xx)
        # at the poles (x = 0, -1, ...) zeta's rule gives inf for odd n and NaN for even n, as TF
        v = np.where(xx == np.inf, 0.0 * sign, v)
        out[pos] = v
    ninf = n == np.inf   # TF's infinite order: inf * zeta(inf, x) (NaN where that zeta is 0)
    with np.errstate(invalid="ignore"):
        out[ninf] = np.inf * zeta_values(np.inf, x[ninf])
    return out.reshape(shape)


# -- gamma sampler ---------------------------------------------------------------------------

def sample_gamma(st: Any, alpha: np.ndarray, count: int) -> np.ndarray:
    """`count` standard Gamma(alpha) samples per element of alpha: shape (count,) + alpha.shape.
    Marsaglia & Tsang's squeeze for alpha >= 1; alpha < 1 boosts to alpha + 1 and multiplies
    by U^(1/alpha)."""
    al = np.broadcast_to(alpha.reshape(-1), (count, alpha.size)).reshape(-1)
    out = np.full(al.shape, np.nan)
    ok = al > 0
    boost = ok & (al < 1.0)
    d = np.where(boost, al + 1.0, al) - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * np.where(ok, d, 1.0))
    todo = np.flatnonzero(ok)
    while todo.size:
        z = _host(st.normal((todo.size,), np.float64))
        u = _host(st.uniform((todo.size,), np.float64))
        v = 1.0 + c[todo] * z
        good = v > 0
        v3 = np.where(good, v, 1.0) ** 3
        with np.errstate(divide="ignore"):
            accept = good & (np.log(u) < 0.5 * z * z + d[todo] - d[todo] * v3 + d[todo] * np.log(v3))
        out[todo[accept]] = d[todo[accept]] * v3[accept]
        todo = todo[~accept]
    bi = np.flatnonzero(boost)
    if bi.size:
        u = _host(st.uniform((bi.size,), np.float64))
        with np.errstate(divide="ignore"):
            out[bi] *= np.exp(np.log(u) / al[bi])
    return out.reshape((count,) + alpha.shape)


# -- registration ----------------------------------------------------------------------------

def _cast(xp: Any, v: np.ndarray, dt: Any) -> Any:
    return xp.asarray(v.astype(dt, copy=False))


@register_kernel("Igamma")
def _igamma(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np
    return lambda a, x: _cast(ctx.xp, igamma_parts(a, x)[0], dt)


@register_kernel("Igammac")
def _igammac(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np
    return lambda a, x: _cast(ctx.xp, igamma_parts(a, x)[1], dt)


@register_kernel("IgammaGradA")
def _igamma_grad_a(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np
    return lambda a, x: _cast(ctx.xp, igamma_parts(a, x, grad=True)[2], dt)


@register_kernel("Betainc")
def _betainc(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np
    return lambda a, b, x: _cast(ctx.xp, betainc_values(a, b, x), dt)


@register_kernel("Zeta")
def _zeta(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np
    return lambda s, q: _cast(ctx.xp, zeta_values(s, q), dt)


@register_kernel("Polygamma")
def _polygamma(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np
    return lambda n, x: _cast(ctx.xp, polygamma_values(n, x), dt)


@register_kernel("RandomGamma")
def _random_gamma(op: Any, ctx: KernelContext) -> Any:
    st = stream_for(op, ctx)
    dt = op.outputs[0].dtype.np
    fixed = static_shape(op.inputs[0])

    def run(shape: Any, alpha: Any) -> Any:
        shp = fixed if fixed is not None else tuple(int(v) for v in _host(shape).reshape(-1))
        al = _host(alpha)
        count = int(np.prod(shp)) if shp else 1
        r = sample_gamma(st, al, count).reshape(tuple(shp) + al.shape)
        # TensorFlow never returns an exact 0 (its samples are clamped to the dtype's tiny)
        r = np.maximum(r, np.finfo(dt).tiny)
        return _cast(ctx.xp, r, dt)
    return run
