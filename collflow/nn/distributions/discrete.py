"""tf.distributions' discrete families: Bernoulli, Categorical, Multinomial, DirichletMultinomial, with KL for
Bernoulli-Bernoulli and Categorical-Categorical.  Parameterized by logits or probs (exactly
one); the other is derived.  Samples are not reparameterized."""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...graph import graph as _g
from ...graph.shape import TensorShape
from . import _ops as o
from .distribution import (NOT_REPARAMETERIZED, Distribution, RegisterKL, checked, common_params,
                           outer_covariance, sample_shape_with, VectorEvent)

__all__ = ["Bernoulli", "Categorical", "Multinomial", "DirichletMultinomial"]


def _logits_and_probs(logits: Any, probs: Any, multidimensional: bool, validate_args: bool,
                      dtype: Any = None) -> Tuple[_g.Tensor, _g.Tensor]:
    """(logits, probs) from exactly one of them (TF's rule)."""
    if (logits is None) == (probs is None):
        raise ValueError("Must pass probs or logits, but not both.")
    if probs is None:
        lg = common_params({"logits": logits}, dtype)["logits"]
        lg = o.identity(lg, name="logits")
        pr = o.softmax(lg) if multidimensional else o.sigmoid(lg)
        return lg, o.identity(pr, name="probs")
    pr = common_params({"probs": probs}, dtype)["probs"]
    if validate_args:
        pr = checked(pr, [o.assert_non_negative(pr), o.assert_less(pr, o.ones_like(pr) * 1.000001)])
    pr = o.identity(pr, name="probs")
    lg = o.log(pr) if multidimensional else o.log(pr) - o.log1p(-pr)
    return o.identity(lg, name="logits"), pr


class _LogitsProbs(Distribution):
    """A distribution given by logits or probs (exactly one; the other derived), over one
    value (sigmoid) or the last axis (softmax, `_over_last_axis`), with samples of `dtype`."""

    _over_last_axis = False

    def __init__(self, logits: Any, probs: Any, dtype: Any, validate_args: bool, allow_nan_stats: bool,
                 parameters: dict, name: str):
        with _g.get_default_graph().name_scope(name):
            self._logits, self._probs = _logits_and_probs(logits, probs, self._over_last_axis, validate_args)
        super().__init__(_dt.as_dtype(dtype), NOT_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._logits, self._probs], name)

    @property
    def logits(self) -> _g.Tensor:
        return self._logits

    @property
    def probs(self) -> _g.Tensor:
        return self._probs


class Bernoulli(_LogitsProbs):
    """Bernoulli(p): 1 with probability p = sigmoid(logits), samples of `dtype`."""

    def __init__(self, logits: Any = None, probs: Any = None, dtype: Any = _dt.int32, validate_args: bool = False,
                 allow_nan_stats: bool = True, name: str = "Bernoulli"):
        parameters = dict(locals())
        super().__init__(logits, probs, dtype, validate_args, allow_nan_stats, parameters, name)

    def _batch_shape(self) -> TensorShape:
        return self._logits.shape

    def _batch_shape_tensor(self) -> _g.Tensor:
        return o.shape(self._logits)

    def _sample_n(self, n: Any, seed: Optional[int]) -> _g.Tensor:
        shape = sample_shape_with(n, self.batch_shape_tensor())
        u = o.random_uniform(shape, dtype=self._probs.dtype, seed=seed)
        return o.cast(o.less(u, self._probs), self.dtype)

    def _log_prob(self, event: Any) -> _g.Tensor:
        z = o.cast(event, self._logits.dtype)
        lg = self._logits
        # z log p + (1 - z) log(1 - p) = z l - softplus(l), broadcast as TF does
        return z * lg - o.softplus(lg)

    def _entropy(self) -> _g.Tensor:
        return -self._logits * (self._probs - 1.0) + o.softplus(-self._logits)

    def _mean(self) -> _g.Tensor:
        return o.identity(self._probs)

    def _variance(self) -> _g.Tensor:
        return self._probs * (1.0 - self._probs)

    def _mode(self) -> _g.Tensor:
        return o.cast(o.greater(self._probs, 0.5), self.dtype)

    def _value(self, value: Any) -> _g.Tensor:
        return _g.convert_to_tensor(value) if not isinstance(value, _g.Tensor) else value


@RegisterKL(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(a: Bernoulli, b: Bernoulli, name: Optional[str] = None) -> _g.Tensor:
    # sum over outcomes of p_a log(p_a / p_b), with log p = -softplus(-l), log(1 - p) = -softplus(l)
    d0 = o.softplus(-b.logits) - o.softplus(-a.logits)
    d1 = o.softplus(b.logits) - o.softplus(a.logits)
    return o.sigmoid(a.logits) * d0 + o.sigmoid(-a.logits) * d1


class Categorical(_LogitsProbs):
    """A categorical over the last axis of logits / probs: samples are class indices of `dtype`."""

    _over_last_axis = True

    def __init__(self, logits: Any = None, probs: Any = None, dtype: Any = _dt.int32, validate_args: bool = False,
                 allow_nan_stats: bool = True, name: str = "Categorical"):
        parameters = dict(locals())
        super().__init__(logits, probs, dtype, validate_args, allow_nan_stats, parameters, name)

    @property
    def event_size(self) -> _g.Tensor:
        return o.shape(self._logits)[-1]

    def _batch_shape(self) -> TensorShape:
        s = self._logits.shape
        return TensorShape(None) if s.rank is None else TensorShape(list(s.dims[:-1]))

    def _batch_shape_tensor(self) -> _g.Tensor:
        return o.shape(self._logits)[:-1]

    def _sample_n(self, n: Any, seed: Optional[int]) -> _g.Tensor:
        k = o.shape(self._logits)[-1:]
        flat = o.reshape(self._logits, o.concat([o.constant(np.asarray([-1], np.int32)), k], 0))
        draws = o.multinomial(flat, n, seed=seed, output_dtype=_dt.int64)     # [batch, n]
        out = o.reshape(o.transpose(draws), sample_shape_with(n, self.batch_shape_tensor()))
        return o.cast(out, self.dtype)

    def _log_prob(self, k: Any) -> _g.Tensor:
        k = o.cast(k, _dt.int32)
        lsm = o.log_softmax(self._logits)
        depth = self._logits.shape.dims[-1] if self._logits.shape.rank else None
        if depth is None:
            raise ValueError("Categorical.log_prob needs the number of classes known when the graph is built")
        # one_hot(k) broadcasts k against the batch
        return o.reduce_sum(o.one_hot(k, depth, dtype=lsm.dtype) * lsm, -1)

    def _cdf(self, k: Any) -> _g.Tensor:
        # TF's rule: the probability of the classes below k (k itself excluded)
        k = o.cast(k, self._probs.dtype)
        depth = self._logits.shape.dims[-1] if self._logits.shape.rank else None
        if depth is None:
            raise ValueError("Categorical.cdf needs the number of classes known when the graph is built")
        below = o.less(o.constant(np.arange(depth, dtype=self._probs.dtype.np)), o.expand_dims(k, -1))
        probs = self._probs + o.zeros_like(o.cast(below, self._probs.dtype))
        return o.reduce_sum(o.where(below, probs, o.zeros_like(probs)), -1)

    def _entropy(self) -> _g.Tensor:
        return -o.reduce_sum(o.softmax(self._logits) * o.log_softmax(self._logits), -1)

    def _mode(self) -> _g.Tensor:
        return o.cast(o.argmax(self._logits, -1), self.dtype)

    def _value(self, value: Any) -> _g.Tensor:
        return _g.convert_to_tensor(value) if not isinstance(value, _g.Tensor) else value


@RegisterKL(Categorical, Categorical)
def _kl_categorical_categorical(a: Categorical, b: Categorical, name: Optional[str] = None) -> _g.Tensor:
    la, lb = o.log_softmax(a.logits), o.log_softmax(b.logits)
    return o.reduce_sum(o.softmax(a.logits) * (la - lb), -1)


class Multinomial(VectorEvent, Distribution):
    """Counts of total_count draws over the classes of the last axis (event shape [k])."""

    @property
    def _vector(self) -> _g.Tensor:  # VectorEvent's parameter
        return self._logits

    @property
    def _count(self) -> _g.Tensor:
        return self._n

    def __init__(self, total_count: Any, logits: Any = None, probs: Any = None, validate_args: bool = False,
                 allow_nan_stats: bool = True, name: str = "Multinomial"):
        parameters = dict(locals())
        with _g.get_default_graph().name_scope(name):
            self._logits, self._probs = _logits_and_probs(logits, probs, True, validate_args)
            n = common_params({"total_count": total_count}, self._logits.dtype)["total_count"]
            checks = [o.assert_non_negative(n)] if validate_args else []
            self._n = o.identity(checked(n, checks), name="total_count")
        super().__init__(self._logits.dtype, NOT_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._n, self._logits, self._probs], name)

    @property
    def total_count(self) -> _g.Tensor:
        return self._n

    @property
    def logits(self) -> _g.Tensor:
        return self._logits

    @property
    def probs(self) -> _g.Tensor:
        return self._probs

    def _sample_n(self, n: Any, seed: Optional[int]) -> _g.Tensor:
        # draw max(total_count) classes per (sample, batch member), keep the first total_count
        # of each as one-hots and add them up
        logits = self._logits * o.expand_dims(o.ones_like(self._n), -1)
        counts = self._n + o.reduce_sum(o.zeros_like(logits), -1)
        k = o.shape(logits)[-1:]
        flat = o.reshape(logits, o.concat([o.constant(np.asarray([-1], np.int32)), k], 0))
        nflat = o.reshape(counts, [-1])
        m = o.cast(o.reduce_max(nflat), _dt.int32)
        reps = n if isinstance(n, _g.Tensor) else o.constant(np.int32(n))
        # n copies of the batch, sample-major: [n * B, K] and [n * B]
        lead = o.zeros(o.concat([o.reshape(reps, [1]), o.constant(np.asarray([1, 1], np.int32))], 0), self.dtype)
        tiled = o.reshape(o.expand_dims(flat, 0) + lead, o.concat([o.constant(np.asarray([-1], np.int32)), k], 0))
        ntiled = o.reshape(o.expand_dims(nflat, 0) + o.reshape(lead, [-1, 1]), [-1])
        draws = o.multinomial(tiled, m, seed=seed, output_dtype=_dt.int32)            # [n * B, m]
        keep = o.less(o.cast(o.expand_dims(o.range(m), 0), self.dtype), o.expand_dims(ntiled, -1))  # [n * B, m]
        hot = o.one_hot(draws, self._logits.shape.dims[-1], dtype=self.dtype) * o.expand_dims(o.cast(keep, self.dtype), -1)
        summed = o.reduce_sum(hot, 1)                                                # [n * B, K]
        full = o.concat([o.reshape(reps, [1]), o.shape(counts), k], 0)
        return o.reshape(summed, full)

    def _log_prob(self, counts: _g.Tensor) -> _g.Tensor:
        lsm = o.log_softmax(self._logits)
        log_coef = o.lgamma(self._n + 1.0) - o.reduce_sum(o.lgamma(counts + 1.0), -1)
        return log_coef + o.reduce_sum(counts * lsm, -1)

    def _mean(self) -> _g.Tensor:
        return o.expand_dims(self._n, -1) * self._probs

    def _variance(self) -> _g.Tensor:
        return o.expand_dims(self._n, -1) * self._probs * (1.0 - self._probs)

    def _covariance(self) -> _g.Tensor:
        mean = self._mean()
        return outer_covariance(mean, self._probs * o.ones_like(mean), self._variance())


class DirichletMultinomial(VectorEvent, Distribution):
    """Counts of total_count draws whose class probabilities are Dirichlet(concentration)."""

    @property
    def _vector(self) -> _g.Tensor:  # VectorEvent's parameter
        return self._c

    @property
    def _count(self) -> _g.Tensor:
        return self._n

    def __init__(self, total_count: Any, concentration: Any, validate_args: bool = False,
                 allow_nan_stats: bool = True, name: str = "DirichletMultinomial"):
        parameters = dict(locals())
        with _g.get_default_graph().name_scope(name):
            p = common_params({"concentration": concentration, "total_count": total_count})
            checks = [o.assert_positive(p["concentration"]), o.assert_non_negative(p["total_count"])] \
                if validate_args else []
            self._c = o.identity(checked(p["concentration"], checks), name="concentration")
            self._n = o.identity(checked(p["total_count"], checks), name="total_count")
            self._total = o.reduce_sum(self._c, -1)
        super().__init__(self._c.dtype, NOT_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._c, self._n], name)

    @property
    def total_count(self) -> _g.Tensor:
        return self._n

    @property
    def concentration(self) -> _g.Tensor:
        return self._c

    @property
    def total_concentration(self) -> _g.Tensor:
        return self._total

    def _sample_n(self, n: Any, seed: Optional[int]) -> _g.Tensor:
        from .gamma_family import Dirichlet    # (the two families share this module's Multinomial)
        probs = Dirichlet(self._c * o.expand_dims(o.ones_like(self._n), -1)).sample(n, seed=seed)
        draws = Multinomial(self._n, probs=probs).sample(seed=None if seed is None else seed + 2)
        return draws

    def _log_prob(self, counts: _g.Tensor) -> _g.Tensor:
        # log multinomial coefficient + log B(c + counts) - log B(c)
        coef = o.lgamma(self._n + 1.0) - o.reduce_sum(o.lgamma(counts + 1.0), -1)
        return coef + o.lbeta(self._c + counts) - o.lbeta(self._c)

    def _mean(self) -> _g.Tensor:
        return o.expand_dims(self._n, -1) * self._c / o.expand_dims(self._total, -1)

    def _spread(self) -> _g.Tensor:
        # (n + total) / (1 + total): the overdispersion against a multinomial
        t = o.expand_dims(self._total, -1)
        return (o.expand_dims(self._n, -1) + t) / (1.0 + t)

    def _variance(self) -> _g.Tensor:
        m = self._c / o.expand_dims(self._total, -1)
        return o.expand_dims(self._n, -1) * m * (1.0 - m) * self._spread()

    def _covariance(self) -> _g.Tensor:
        m = self._c / o.expand_dims(self._total, -1)
        scaled = o.expand_dims(self._n, -1) * m * self._spread()
        return outer_covariance(scaled, m * o.ones_like(scaled), self._variance())
