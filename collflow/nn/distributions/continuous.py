"""tf.distributions' location-scale families: Normal, Laplace, Uniform, StudentT (and KL for
Normal-Normal).  Samples are affine maps of collflow's normal / uniform / gamma draws, so
Normal, Laplace, Uniform and StudentT are fully reparameterized: gradients flow from samples
to the parameters."""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from ...graph import graph as _g
from ...graph.shape import TensorShape
from . import _ops as o
from .distribution import (FULLY_REPARAMETERIZED, Distribution, RegisterKL, batch_shape_of, batch_shape_tensor_of,
                           checked, common_params, sample_shape_with)

__all__ = ["Normal", "Laplace", "Uniform", "StudentT"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _ndtr(z: _g.Tensor) -> _g.Tensor:
    """The standard normal CDF; erfc keeps the lower tail's relative accuracy."""
    return 0.5 * o.erfc(-z * (1.0 / math.sqrt(2.0)))


def _log_ndtr(z: _g.Tensor) -> _g.Tensor:
    """log of the standard normal CDF, finite far into the lower tail: log(ndtr) down to -20,
    below it the asymptotic series of log(erfc) (4 terms: error < 1e-12 there); above 6,
    log1p(-ndtr(-z)) (where ndtr(z) rounds to 1)."""
    lo, hi = -20.0, 6.0
    zm = o.clip_by_value(z, lo, hi)
    mid = o.log(_ndtr(zm))
    zh = o.maximum(z, hi)
    upper = o.log1p(-_ndtr(-zh))
    zl = o.minimum(z, lo)
    r = 1.0 / o.square(zl)
    series = 1.0 - r * (1.0 - 3.0 * r * (1.0 - 5.0 * r * (1.0 - 7.0 * r)))
    lower = -0.5 * o.square(zl) - o.log(-zl) - _HALF_LOG_2PI + o.log(series)
    return o.where(z > hi, upper, o.where(z < lo, lower, mid))


def _ndtri(p: _g.Tensor) -> _g.Tensor:
    """The standard normal quantile: Abramowitz & Stegun 26.2.23 (error < 4.5e-4) on the lower
    tail q = min(p, 1 - p), then three Halley steps on ndtr(z) = q (cubic convergence: full
    precision), the sign restored."""
    q = o.minimum(p, 1.0 - p)
    qs = o.clip_by_value(q, 1e-300 if p.dtype.np == np.float64 else 1e-37, 0.5)
    t = o.sqrt(-2.0 * o.log(qs))
    z = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))))
    for _ in range(3):
        pdf = o.exp(-0.5 * o.square(z) - _HALF_LOG_2PI)
        u = (_ndtr(z) - qs) / pdf
        z = z - u / (1.0 + 0.5 * z * u)
    z = o.where(p > 0.5, -z, z)
    inf = o.zeros_like(p) + np.inf
    # TF's values: -inf at and below 0, inf at and above 1 (NaN stays NaN)
    return o.where(p <= 0.0, -inf, o.where(p >= 1.0, inf, z))


class _LocScale(Distribution):
    """Shared plumbing of the (loc, scale) families."""

    def __init__(self, loc: Any, scale: Any, validate_args: bool, allow_nan_stats: bool, name: str,
                 parameters: dict):
        with _g.get_default_graph().name_scope(name):
            p = common_params({"loc": loc, "scale": scale})
            checks = [o.assert_positive(p["scale"])] if validate_args else []
            self._loc = o.identity(p["loc"], name="loc")
            self._scale = o.identity(checked(p["scale"], checks), name="scale")
        super().__init__(self._loc.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._loc, self._scale], name)

    @property
    def loc(self) -> _g.Tensor:
        return self._loc

    @property
    def scale(self) -> _g.Tensor:
        return self._scale

    def _batch_shape(self) -> TensorShape:
        return batch_shape_of(self._loc, self._scale)

    def _batch_shape_tensor(self) -> _g.Tensor:
        return batch_shape_tensor_of(self._loc, self._scale)

    def _z(self, x: _g.Tensor) -> _g.Tensor:
        return (x - self._loc) / self._scale

    def _mean(self) -> _g.Tensor:
        return self._loc * o.ones_like(self._scale)

    def _mode(self) -> _g.Tensor:
        return self._mean()


class Normal(_LocScale):
    """N(loc, scale^2)."""

    def __init__(self, loc: Any, scale: Any, validate_args: bool = False, allow_nan_stats: bool = True,
                 name: str = "Normal"):
        super().__init__(loc, scale, validate_args, allow_nan_stats, name, dict(locals()))

    def _sample_n(self, n: Any, seed: Optional[int]) -> _g.Tensor:
        shape = sample_shape_with(n, self.batch_shape_tensor())
        return o.random_normal(shape, 0.0, 1.0, dtype=self.dtype, seed=seed) * self._scale + self._loc

    def _log_prob(self, x: _g.Tensor) -> _g.Tensor:
        return -0.5 * o.square(self._z(x)) - (_HALF_LOG_2PI + o.log(self._scale))

    def _cdf(self, x: _g.Tensor) -> _g.Tensor:
        return _ndtr(self._z(x))

    def _log_cdf(self, x: _g.Tensor) -> _g.Tensor:
        return _log_ndtr(self._z(x))

    def _survival_function(self, x: _g.Tensor) -> _g.Tensor:
        return _ndtr(-self._z(x))

    def _log_survival_function(self, x: _g.Tensor) -> _g.Tensor:
        return _log_ndtr(-self._z(x))

    def _quantile(self, p: _g.Tensor) -> _g.Tensor:
        return self._loc + self._scale * _ndtri(p)

    def _entropy(self) -> _g.Tensor:
        scale = self._scale * o.ones_like(self._loc)
        return 0.5 * math.log(2.0 * math.pi * math.e) + o.log(scale)

    def _stddev(self) -> _g.Tensor:
        return self._scale * o.ones_like(self._loc)


@RegisterKL(Normal, Normal)
def _kl_normal_normal(a: Normal, b: Normal, name: Optional[str] = None) -> _g.Tensor:
    # log(sb / sa) + (sa^2 + (ma - mb)^2) / (2 sb^2) - 1/2
    ratio = o.square(a.scale / b.scale)
    return 0.5 * o.square((a.loc - b.loc) / b.scale) + 0.5 * (ratio - 1.0 - o.log(ratio))


class Laplace(_LocScale):
    """The Laplace distribution: density exp(-|x - loc| / scale) / (2 scale)."""

    def __init__(self, loc: Any, scale: Any, validate_args: bool = False, allow_nan_stats: bool = True,
                 name: str = "Laplace"):
        super().__init__(loc, scale, validate_args, allow_nan_stats, name, dict(locals()))

    def _sample_n(self, n: Any, seed: Optional[int]) -> _g.Tensor:
        shape = sample_shape_with(n, self.batch_shape_tensor())
        # u in (-1, 1): the open lower end keeps log1p(-|u|) finite
        lo = float(np.nextafter(np.array(-1.0, self.dtype.np), np.array(0.0, self.dtype.np)))
        u = o.random_uniform(shape, lo, 1.0, dtype=self.dtype, seed=seed)
        return self._loc - self._scale * o.sign(u) * o.log1p(-o.abs(u))

    def _log_prob(self, x: _g.Tensor) -> _g.Tensor:
        return -o.abs(self._z(x)) - (math.log(2.0) + o.log(self._scale))

    def _cdf(self, x: _g.Tensor) -> _g.Tensor:
        z = self._z(x)
        return 0.5 - 0.5 * o.sign(z) * o.expm1(-o.abs(z))

    def _log_cdf(self, x: _g.Tensor) -> _g.Tensor:
        z = self._z(x)
        # below loc: z - log 2 exactly; above: log(1 - exp(-z) / 2)
        return o.where(z < 0, z - math.log(2.0), o.log1p(-0.5 * o.exp(-o.abs(z))))

    def _entropy(self) -> _g.Tensor:
        return math.log(2.0) + 1.0 + o.log(self._scale * o.ones_like(self._loc))

    def _stddev(self) -> _g.Tensor:
        return math.sqrt(2.0) * self._scale * o.ones_like(self._loc)


class Uniform(Distribution):
    """Uniform on [low, high): density 1 / (high - low) inside, 0 outside."""

    def __init__(self, low: Any = 0.0, high: Any = 1.0, validate_args: bool = False, allow_nan_stats: bool = True,
                 name: str = "Uniform"):
        parameters = dict(locals())
        with _g.get_default_graph().name_scope(name):
            p = common_params({"low": low, "high": high})
            checks = [o.assert_less(p["low"], p["high"], message="uniform not defined when low >= high.")] \
                if validate_args else []
            self._low = o.identity(checked(p["low"], checks), name="low")
            self._high = o.identity(checked(p["high"], checks), name="high")
        super().__init__(self._low.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._low, self._high], name)

    @property
    def low(self) -> _g.Tensor:
        return self._low

    @property
    def high(self) -> _g.Tensor:
        return self._high

    def range(self, name: str = "range") -> _g.Tensor:
        with self._scope(name):
            return self._high - self._low

    def _batch_shape(self) -> TensorShape:
        return batch_shape_of(self._low, self._high)

    def _batch_shape_tensor(self) -> _g.Tensor:
        return batch_shape_tensor_of(self._low, self._high)

    def _sample_n(self, n: Any, seed: Optional[int]) -> _g.Tensor:
        shape = sample_shape_with(n, self.batch_shape_tensor())
        return self._low + (self._high - self._low) * o.random_uniform(shape, dtype=self.dtype, seed=seed)

    def _prob(self, x: _g.Tensor) -> _g.Tensor:
        x = x * o.ones_like(self._low) * o.ones_like(self._high)
        inside = o.logical_and(o.greater_equal(x, self._low), o.less(x, self._high))
        dens = o.ones_like(x) / (self._high - self._low)
        # NaN stays NaN (TF's rule); outside the support the density is 0
        return o.where(o.is_nan(x), x, o.where(inside, dens, o.zeros_like(x)))

    def _cdf(self, x: _g.Tensor) -> _g.Tensor:
        x = x * o.ones_like(self._low) * o.ones_like(self._high)
        frac = (x - self._low) / (self._high - self._low)
        return o.where(o.less(x, self._low), o.zeros_like(x), o.where(o.greater_equal(x, self._high),
                                                                      o.ones_like(x), frac))

    def _entropy(self) -> _g.Tensor:
        return o.log(self._high - self._low)

    def _mean(self) -> _g.Tensor:
        return (self._low + self._high) / 2.0

    def _variance(self) -> _g.Tensor:
        return o.square(self._high - self._low) / 12.0

    def _stddev(self) -> _g.Tensor:
        return (self._high - self._low) / math.sqrt(12.0)


class StudentT(Distribution):
    """Student's t with df degrees of freedom, location loc and scale scale."""

    def __init__(self, df: Any, loc: Any, scale: Any, validate_args: bool = False, allow_nan_stats: bool = True,
                 name: str = "StudentT"):
        parameters = dict(locals())
        with _g.get_default_graph().name_scope(name):
            p = common_params({"df": df, "loc": loc, "scale": scale})
            checks = [o.assert_positive(p["df"])] if validate_args else []
            self._df = o.identity(checked(p["df"], checks), name="df")
            self._loc = o.identity(p["loc"], name="loc")
            self._scale = o.identity(p["scale"], name="scale")
        super().__init__(self._df.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._df, self._loc, self._scale], name)

    @property
    def df(self) -> _g.Tensor:
        return self._df

    @property
    def loc(self) -> _g.Tensor:
        return self._loc

    @property
    def scale(self) -> _g.Tensor:
        return self._scale

    def _batch_shape(self) -> TensorShape:
        return batch_shape_of(self._df, self._loc, self._scale)

    def _batch_shape_tensor(self) -> _g.Tensor:
        return batch_shape_tensor_of(self._df, self._loc, self._scale)

    def _ones(self) -> _g.Tensor:
        return o.ones_like(self._df) * o.ones_like(self._loc) * o.ones_like(self._scale)

    def _sample_n(self, n: Any, seed: Optional[int]) -> _g.Tensor:
        # loc + scale * N / sqrt(G / df), G ~ Gamma(df / 2, rate 1 / 2) = chi^2(df)
        shape = sample_shape_with(n, self.batch_shape_tensor())
        normal = o.random_normal(shape, dtype=self.dtype, seed=seed)
        df = self._df * self._ones()
        gamma = o.random_gamma([n] if not isinstance(n, _g.Tensor) else o.reshape(n, [1]), 0.5 * df, beta=0.5,
                               dtype=self.dtype, seed=None if seed is None else seed + 1)
        return self._loc + self._scale * normal * o.sqrt(df / gamma)

    def _log_prob(self, x: _g.Tensor) -> _g.Tensor:
        y = (x - self._loc) / o.abs(self._scale)
        half = 0.5 * self._df
        unnorm = -(half + 0.5) * o.log1p(o.square(y) / self._df)
        norm = (o.log(o.abs(self._scale)) + 0.5 * o.log(self._df) + 0.5 * math.log(math.pi)
                + o.lgamma(half) - o.lgamma(half + 0.5))
        return unnorm - norm

    def _cdf(self, x: _g.Tensor) -> _g.Tensor:
        y = (x - self._loc) / o.abs(self._scale)
        xt = self._df / (o.square(y) + self._df)
        neg = 0.5 * o.betainc(0.5 * self._df * self._ones() * o.ones_like(y), 0.5 * o.ones_like(xt) * self._ones(),
                              xt * self._ones())
        return o.where(y < 0, neg, 1.0 - neg)

    def _entropy(self) -> _g.Tensor:
        half = 0.5 * self._df * self._ones()
        lbeta = o.lgamma(half) + math.lgamma(0.5) - o.lgamma(half + 0.5)
        return ((half + 0.5) * (o.digamma(half + 0.5) - o.digamma(half)) + 0.5 * o.log(2.0 * half) + lbeta
                + o.log(o.abs(self._scale)))

    def _mean(self) -> _g.Tensor:
        mean = self._loc * self._ones()
        return self._nan_unless(self._df * self._ones() > 1.0, mean, "mean")

    def _mode(self) -> _g.Tensor:
        return self._loc * self._ones()

    def _variance(self) -> _g.Tensor:
        df = self._df * self._ones()
        safe = o.where(df > 2.0, df, o.ones_like(df) * 3.0)
        var = o.square(self._scale) * safe / (safe - 2.0) * self._ones()
        # 1 < df <= 2: infinite; df <= 1: undefined
        var = o.where(df > 2.0, var, o.zeros_like(var) + np.inf)
        return self._nan_unless(df > 1.0, var, "variance")
