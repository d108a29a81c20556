"""tf.distributions' gamma family: Gamma, Exponential, Beta, Dirichlet, with KL for Gamma-Gamma,
Beta-Beta and Dirichlet-Dirichlet.  Samples come from random_gamma (Marsaglia-Tsang), whose
implicit gradient makes them reparameterized, as TF's."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ...graph import graph as _g
from ...graph.shape import TensorShape
from . import _ops as o
from .distribution import (FULLY_REPARAMETERIZED, Distribution, RegisterKL, batch_shape_of, batch_shape_tensor_of,
                           checked, common_params, outer_covariance, sample_shape_with, VectorEvent)

__all__ = ["Gamma", "Exponential", "Beta", "Dirichlet"]


def _seed2(seed: Optional[int]) -> Optional[int]:
    # a second stream for the second gamma draw of Beta
    return None if seed is None else seed + 1


class Gamma(Distribution):
    """Gamma(concentration, rate): density x^(c-1) e^(-rate x) rate^c / Gamma(c)."""

    def __init__(self, concentration: Any, rate: Any, validate_args: bool = False, allow_nan_stats: bool = True,
                 name: str = "Gamma"):
        parameters = dict(locals())
        with _g.get_default_graph().name_scope(name):
            p = common_params({"concentration": concentration, "rate": rate})
            checks = [o.assert_positive(p["concentration"]), o.assert_positive(p["rate"])] if validate_args else []
            self._concentration = o.identity(checked(p["concentration"], checks), name="concentration")
            self._rate = o.identity(checked(p["rate"], checks), name="rate")
        super().__init__(self._concentration.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats,
                         parameters, [self._concentration, self._rate], name)

    @property
    def concentration(self) -> _g.Tensor:
        return self._concentration

    @property
    def rate(self) -> _g.Tensor:
        return self._rate

    def _batch_shape(self) -> TensorShape:
        return batch_shape_of(self._concentration, self._rate)

    def _batch_shape_tensor(self) -> _g.Tensor:
        return batch_shape_tensor_of(self._concentration, self._rate)

    def _sample_n(self, n: Any, seed: Optional[int]) -> _g.Tensor:
        shape = [n] if not isinstance(n, _g.Tensor) else o.reshape(n, [1])
        return o.random_gamma(shape, self._concentration, beta=self._rate, dtype=self.dtype, seed=seed)

    def _log_prob(self, x: _g.Tensor) -> _g.Tensor:
        c, r = self._concentration, self._rate
        return o.xlogy(c - 1.0, x) - r * x - (o.lgamma(c) - c * o.log(r))

    def _cdf(self, x: _g.Tensor) -> _g.Tensor:
        c = self._concentration * o.ones_like(self._rate)
        rx = self._rate * x
        return o.igamma(c * o.ones_like(rx), rx * o.ones_like(c))

    def _entropy(self) -> _g.Tensor:
        c, r = self._concentration, self._rate
        return c - o.log(r) + o.lgamma(c) + (1.0 - c) * o.digamma(c)

    def _mean(self) -> _g.Tensor:
        return self._concentration / self._rate

    def _variance(self) -> _g.Tensor:
        return self._concentration / o.square(self._rate)

    def _stddev(self) -> _g.Tensor:
        return o.sqrt(self._concentration) / self._rate

    def _mode(self) -> _g.Tensor:
        mode = (self._concentration - 1.0) / self._rate
        return self._nan_unless(self._concentration * o.ones_like(self._rate) > 1.0, mode, "mode")


@RegisterKL(Gamma, Gamma)
def _kl_gamma_gamma(a: Gamma, b: Gamma, name: Optional[str] = None) -> _g.Tensor:
    ca, ra, cb, rb = a.concentration, a.rate, b.concentration, b.rate
    return ((ca - cb) * o.digamma(ca) + o.lgamma(cb) - o.lgamma(ca) + cb * (o.log(ra) - o.log(rb))
            + ca * (rb / ra - 1.0))


class Exponential(Gamma):
    """Exponential(rate): Gamma(1, rate), sampled as -log(U) / rate."""

    def __init__(self, rate: Any, validate_args: bool = False, allow_nan_stats: bool = True,
                 name: str = "Exponential"):
        parameters = dict(locals())
        with _g.get_default_graph().name_scope(name):
            r = common_params({"rate": rate})["rate"]
        super().__init__(o.ones_like(r), r, validate_args, allow_nan_stats, name)
        self._parameters = {k: v for k, v in parameters.items() if k != "self" and not k.startswith("__")}

    def _sample_n(self, n: Any, seed: Optional[int]) -> _g.Tensor:
        shape = sample_shape_with(n, self.batch_shape_tensor())
        # U in (tiny, 1): -log(U) finite
        tiny = float(np.finfo(self.dtype.np).tiny)
        u = o.random_uniform(shape, tiny, 1.0, dtype=self.dtype, seed=seed)
        return -o.log(u) / self._rate


def _lbeta2(a: _g.Tensor, b: _g.Tensor) -> _g.Tensor:
    return o.lgamma(a) + o.lgamma(b) - o.lgamma(a + b)


class Beta(Distribution):
    """Beta(concentration1, concentration0) on [0, 1]: density x^(c1-1) (1-x)^(c0-1) / B(c1, c0)."""

    def __init__(self, concentration1: Any = None, concentration0: Any = None, validate_args: bool = False,
                 allow_nan_stats: bool = True, name: str = "Beta"):
        parameters = dict(locals())
        with _g.get_default_graph().name_scope(name):
            p = common_params({"concentration1": concentration1, "concentration0": concentration0})
            checks = [o.assert_positive(p["concentration1"]), o.assert_positive(p["concentration0"])] \
                if validate_args else []
            self._c1 = o.identity(checked(p["concentration1"], checks), name="concentration1")
            self._c0 = o.identity(checked(p["concentration0"], checks), name="concentration0")
            self._total = self._c1 + self._c0
        super().__init__(self._c1.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._c1, self._c0], name)

    @property
    def concentration1(self) -> _g.Tensor:
        return self._c1

    @property
    def concentration0(self) -> _g.Tensor:
        return self._c0

    @property
    def total_concentration(self) -> _g.Tensor:
        return self._total

    def _batch_shape(self) -> TensorShape:
        return batch_shape_of(self._c1, self._c0)

    def _batch_shape_tensor(self) -> _g.Tensor:
        return batch_shape_tensor_of(self._c1, self._c0)

    def _sample_n(self, n: Any, seed: Optional[int]) -> _g.Tensor:
        shape = [n] if not isinstance(n, _g.Tensor) else o.reshape(n, [1])
        ones = o.ones_like(self._total)
        g1 = o.random_gamma(shape, self._c1 * ones, dtype=self.dtype, seed=seed)
        g0 = o.random_gamma(shape, self._c0 * ones, dtype=self.dtype, seed=_seed2(seed))
        return g1 / (g1 + g0)

    def _log_prob(self, x: _g.Tensor) -> _g.Tensor:
        return o.xlogy(self._c1 - 1.0, x) + o.xlog1py(self._c0 - 1.0, -x) - _lbeta2(self._c1, self._c0)

    def _cdf(self, x: _g.Tensor) -> _g.Tensor:
        ones = o.ones_like(x) * o.ones_like(self._total)
        return o.betainc(self._c1 * ones, self._c0 * ones, x * ones)

    def _entropy(self) -> _g.Tensor:
        c1, c0, t = self._c1, self._c0, self._total
        return (_lbeta2(c1, c0) - (c1 - 1.0) * o.digamma(c1) - (c0 - 1.0) * o.digamma(c0)
                + (t - 2.0) * o.digamma(t))

    def _mean(self) -> _g.Tensor:
        return self._c1 / self._total

    def _variance(self) -> _g.Tensor:
        return self._c1 * self._c0 / (o.square(self._total) * (self._total + 1.0))

    def _mode(self) -> _g.Tensor:
        mode = (self._c1 - 1.0) / (self._total - 2.0)
        ok = o.logical_and(self._c1 * o.ones_like(self._total) > 1.0, self._c0 * o.ones_like(self._total) > 1.0)
        return self._nan_unless(ok, mode, "mode")


@RegisterKL(Beta, Beta)
def _kl_beta_beta(a: Beta, b: Beta, name: Optional[str] = None) -> _g.Tensor:
    ta = a.total_concentration
    return (_lbeta2(b.concentration1, b.concentration0) - _lbeta2(a.concentration1, a.concentration0)
            + (a.concentration1 - b.concentration1) * o.digamma(a.concentration1)
            + (a.concentration0 - b.concentration0) * o.digamma(a.concentration0)
            + (b.total_concentration - ta) * o.digamma(ta))


class Dirichlet(VectorEvent, Distribution):
    """Dirichlet(concentration) over the simplex of the last axis (event shape [k])."""

    @property
    def _vector(self) -> _g.Tensor:  # VectorEvent's parameter
        return self._c

    def __init__(self, concentration: Any, validate_args: bool = False, allow_nan_stats: bool = True,
                 name: str = "Dirichlet"):
        parameters = dict(locals())
        with _g.get_default_graph().name_scope(name):
            c = common_params({"concentration": concentration})["concentration"]
            checks = [o.assert_positive(c)] if validate_args else []
            self._c = o.identity(checked(c, checks), name="concentration")
            self._total = o.reduce_sum(self._c, -1)
        super().__init__(self._c.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._c], name)

    @property
    def concentration(self) -> _g.Tensor:
        return self._c

    @property
    def total_concentration(self) -> _g.Tensor:
        return self._total

    def _k(self) -> _g.Tensor:
        return o.cast(o.shape(self._c)[-1], self.dtype)

    def _sample_n(self, n: Any, seed: Optional[int]) -> _g.Tensor:
        shape = [n] if not isinstance(n, _g.Tensor) else o.reshape(n, [1])
        g = o.random_gamma(shape, self._c, dtype=self.dtype, seed=seed)
        return g / o.reduce_sum(g, -1, keepdims=True)

    def _log_prob(self, x: _g.Tensor) -> _g.Tensor:
        return o.reduce_sum(o.xlogy(self._c - 1.0, x), -1) - o.lbeta(self._c)

    def _entropy(self) -> _g.Tensor:
        return (o.lbeta(self._c) + (self._total - self._k()) * o.digamma(self._total)
                - o.reduce_sum((self._c - 1.0) * o.digamma(self._c), -1))

    def _mean(self) -> _g.Tensor:
        return self._c / o.expand_dims(self._total, -1)

    def _variance(self) -> _g.Tensor:
        # the marginal variances (covariance() has the off-diagonal terms too)
        t = o.expand_dims(self._total, -1)
        m = self._c / t
        return m * (1.0 - m) / (t + 1.0)

    def _covariance(self) -> _g.Tensor:
        m = self._mean()
        scale = o.sqrt(1.0 / (1.0 + o.expand_dims(self._total, -1)))
        return outer_covariance(scale * m, scale * m, self._variance())

    def _mode(self) -> _g.Tensor:
        mode = (self._c - 1.0) / o.expand_dims(self._total - self._k(), -1)
        # defined only where every concentration of the batch member exceeds 1
        bad = o.reduce_sum(o.cast(o.less_equal(self._c, 1.0), self.dtype), -1, keepdims=True)
        return self._nan_unless(o.less(bad + o.zeros_like(mode), 0.5), mode, "mode")

@RegisterKL(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(a: Dirichlet, b: Dirichlet, name: Optional[str] = None) -> _g.Tensor:
    ca, cb = a.concentration, b.concentration
    psi_total = o.expand_dims(o.digamma(a.total_concentration), -1)
    return o.reduce_sum((ca - cb) * (o.digamma(ca) - psi_total), -1) - o.lbeta(ca) + o.lbeta(cb)
