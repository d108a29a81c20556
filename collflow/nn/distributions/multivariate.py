"""tf.contrib.distributions' vector distributions TF1 programs use beyond tf.distributions:
MultivariateNormalDiag, MultivariateNormalTriL, MultivariateNormalFullCovariance (with their
KL divergences), OneHotCategorical, and the Gumbel-softmax relaxations
ExpRelaxedOneHotCategorical and RelaxedOneHotCategorical (Maddison et al.; Jang et al.).

The event is the last dimension; the batch the dimensions before it.  The normals are
loc + scale @ eps with scale diagonal or lower triangular (fully reparameterized); the
relaxed categoricals sample softmax((logits + Gumbel noise) / temperature), also
reparameterized, with the Concrete density of their log-space version.
"""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from ... import dtypes as _dt
from ...graph import graph as _g
from ...graph.ops.linalg_ops import cholesky, matrix_triangular_solve
from ...graph.ops.math_ops import matmul
from ...graph.ops.matrix_ops import matrix_diag_part
from ...graph.shape import TensorShape
from . import _ops as o
from .discrete import Categorical, _logits_and_probs
from .distribution import (FULLY_REPARAMETERIZED, Distribution, RegisterKL, VectorEvent, checked, common_params,
                           sample_shape_with)

__all__ = ["MultivariateNormalDiag", "MultivariateNormalTriL", "MultivariateNormalFullCovariance",
           "OneHotCategorical", "ExpRelaxedOneHotCategorical", "RelaxedOneHotCategorical"]

_LOG_2PI = math.log(2.0 * math.pi)


class _MVN(VectorEvent, Distribution):
    """Shared parts of the multivariate normals: loc [..., k] and a scale operator, either a
    diagonal `_diag` [..., k] or a lower-triangular `_tril` [..., k, k]."""

    _diag: Optional[_g.Tensor] = None
    _tril: Optional[_g.Tensor] = None

    def _setup(self, loc: _g.Tensor, parameters: dict, parents: list, validate_args: bool, allow_nan_stats: bool,
               name: str) -> None:
        self._loc = loc
        # the vector parameter whose last dimension is the event (and the rest the batch)
        self._vector = loc + (self._diag if self._diag is not None else matrix_diag_part(self._tril))
        super().__init__(loc.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats, parameters, parents, name)

    @property
    def loc(self) -> _g.Tensor:
        return self._loc

    def _scale_mul(self, eps: _g.Tensor) -> _g.Tensor:
        """scale @ eps for eps [..., k] (the batch of eps broadcast against the scale's)."""
        if self._diag is not None:
            return self._diag * eps
        return o.squeeze(matmul(self._tril + o.zeros_like(o.expand_dims(eps, -1)), o.expand_dims(eps, -1)), [-1])

    def _scale_solve(self, x: _g.Tensor) -> _g.Tensor:
        """scale^-1 x."""
        if self._diag is not None:
            return x / self._diag
        rhs = o.expand_dims(x, -1)
        tril = self._tril + o.zeros_like(rhs)  # broadcast the batch both ways
        rhs = rhs + o.zeros_like(tril[..., :1])
        return o.squeeze(matrix_triangular_solve(tril, rhs, lower=True), [-1])

    def _log_abs_det(self) -> _g.Tensor:
        d = self._diag if self._diag is not None else matrix_diag_part(self._tril)
        return o.reduce_sum(o.log(o.abs(d)), -1)

    def _k(self) -> _g.Tensor:
        return o.cast(o.shape(self._vector)[-1], self.dtype)

    def _sample_n(self, n: Any, seed: Optional[int]) -> _g.Tensor:
        shape = o.concat([sample_shape_with(n, self.batch_shape_tensor()), self.event_shape_tensor()], 0)
        eps = o.random_normal(shape, 0.0, 1.0, dtype=self.dtype, seed=seed)
        return self._loc + self._scale_mul(eps)

    def _log_prob(self, x: _g.Tensor) -> _g.Tensor:
        z = self._scale_solve(x - self._loc)
        return -0.5 * o.reduce_sum(o.square(z), -1) - 0.5 * self._k() * _LOG_2PI - self._log_abs_det()

    def _entropy(self) -> _g.Tensor:
        return 0.5 * self._k() * (1.0 + _LOG_2PI) + self._log_abs_det() + o.zeros_like(self._vector[..., 0])

    def _mean(self) -> _g.Tensor:
        return self._loc + o.zeros_like(self._vector)

    def _mode(self) -> _g.Tensor:
        return self._mean()

    def _covariance(self) -> _g.Tensor:
        if self._diag is not None:
            return o.matrix_diag(o.square(self._diag) + o.zeros_like(self._vector))
        return matmul(self._tril, self._tril, transpose_b=True) + o.zeros_like(o.expand_dims(self._vector, -1))

    def _variance(self) -> _g.Tensor:
        if self._diag is not None:
            return o.square(self._diag) + o.zeros_like(self._vector)
        return o.reduce_sum(o.square(self._tril), -1) + o.zeros_like(self._vector)

    def _stddev(self) -> _g.Tensor:
        return o.sqrt(self._variance())


class MultivariateNormalDiag(_MVN):
    """N(loc, diag(scale_diag)^2) over vectors; scale_identity_multiplier adds c * I to the
    diagonal (alone: an isotropic scale)."""

    def __init__(self, loc: Any = None, scale_diag: Any = None, scale_identity_multiplier: Any = None,
                 validate_args: bool = False, allow_nan_stats: bool = True, name: str = "MultivariateNormalDiag"):
        parameters = dict(locals())
        if loc is None and scale_diag is None:
            raise ValueError("MultivariateNormalDiag needs loc or scale_diag (the event size)")
        with _g.get_default_graph().name_scope(name):
            vals = {k: v for k, v in (("loc", loc), ("scale_diag", scale_diag),
                                      ("scale_identity_multiplier", scale_identity_multiplier)) if v is not None}
            p = common_params(vals)
            ref = p.get("loc", p.get("scale_diag"))
            diag = p.get("scale_diag", o.ones_like(ref) if "scale_identity_multiplier" not in p else None)
            if "scale_identity_multiplier" in p:
                mult = o.expand_dims(p["scale_identity_multiplier"], -1)
                diag = (diag + mult) if diag is not None else mult + o.zeros_like(ref)
            checks = [o.assert_positive(o.abs(diag))] if validate_args else []
            self._diag = o.identity(checked(diag, checks), name="scale_diag")
            loc_t = p["loc"] if "loc" in p else o.zeros_like(self._diag)
            self._setup(o.identity(loc_t, name="loc"), parameters, [loc_t, self._diag], validate_args,
                        allow_nan_stats, name)

    @property
    def scale_diag(self) -> _g.Tensor:
        return self._diag


class MultivariateNormalTriL(_MVN):
    """N(loc, L L^T) over vectors, L = scale_tril lower triangular with a nonzero diagonal
    (only the lower triangle is read)."""

    def __init__(self, loc: Any = None, scale_tril: Any = None, validate_args: bool = False,
                 allow_nan_stats: bool = True, name: str = "MultivariateNormalTriL"):
        parameters = dict(locals())
        if scale_tril is None:
            raise ValueError("MultivariateNormalTriL needs scale_tril")
        with _g.get_default_graph().name_scope(name):
            vals = {"scale_tril": scale_tril} if loc is None else {"loc": loc, "scale_tril": scale_tril}
            p = common_params(vals)
            from ...graph.ops.linalg_ops import matrix_band_part
            tril = matrix_band_part(p["scale_tril"], -1, 0)
            checks = [o.assert_positive(o.abs(matrix_diag_part(tril)))] if validate_args else []
            self._tril = o.identity(checked(tril, checks), name="scale_tril")
            loc_t = p["loc"] if "loc" in p else o.zeros_like(tril[..., 0])
            self._setup(o.identity(loc_t, name="loc"), parameters, [loc_t, self._tril], validate_args,
                        allow_nan_stats, name)

    @property
    def scale_tril(self) -> _g.Tensor:
        return self._tril


class MultivariateNormalFullCovariance(MultivariateNormalTriL):
    """N(loc, covariance_matrix): MultivariateNormalTriL of its Cholesky factor."""

    def __init__(self, loc: Any = None, covariance_matrix: Any = None, validate_args: bool = False,
                 allow_nan_stats: bool = True, name: str = "MultivariateNormalFullCovariance"):
        if covariance_matrix is None:
            raise ValueError("MultivariateNormalFullCovariance needs covariance_matrix")
        with _g.get_default_graph().name_scope(name):
            cov = common_params({"covariance_matrix": covariance_matrix})["covariance_matrix"]
            tril = cholesky(cov)
        super().__init__(loc=loc, scale_tril=tril, validate_args=validate_args, allow_nan_stats=allow_nan_stats,
                         name=name)
        self._parameters = {"loc": loc, "covariance_matrix": covariance_matrix, "validate_args": validate_args,
                            "allow_nan_stats": allow_nan_stats, "name": name}


def _kl_mvn(a: _MVN, b: _MVN, name: Optional[str] = None) -> _g.Tensor:
    # KL = 1/2 (tr(Sb^-1 Sa) + |Lb^-1 (mb - ma)|^2 - k + log det Sb - log det Sa)
    if a._diag is not None and b._diag is not None:
        ratio = a._diag / b._diag
        trace = o.reduce_sum(o.square(ratio), -1)
    else:
        la = a._tril if a._tril is not None else o.matrix_diag(a._diag)
        if b._tril is not None:
            lb = b._tril + o.zeros_like(la)
            la = la + o.zeros_like(lb)
            m = matrix_triangular_solve(lb, la, lower=True)
        else:
            m = la / o.expand_dims(b._diag, -1)
        trace = o.reduce_sum(o.square(m), [-2, -1])
    mahal = o.reduce_sum(o.square(b._scale_solve(b._loc - a._loc)), -1)
    return 0.5 * (trace + mahal - a._k()) + b._log_abs_det() - a._log_abs_det()


for _a in (MultivariateNormalDiag, MultivariateNormalTriL, MultivariateNormalFullCovariance):
    for _b in (MultivariateNormalDiag, MultivariateNormalTriL, MultivariateNormalFullCovariance):
        RegisterKL(_a, _b)(_kl_mvn)
del _a, _b


class OneHotCategorical(Categorical):
    """A categorical over the last axis whose samples are one-hot vectors of `dtype` (its
    batch, logits and entropy are Categorical's; the event is the last axis)."""

    def __init__(self, logits: Any = None, probs: Any = None, dtype: Any = _dt.int32, validate_args: bool = False,
                 allow_nan_stats: bool = True, name: str = "OneHotCategorical"):
        super().__init__(logits, probs, dtype, validate_args, allow_nan_stats, name)
        self._parameters["name"] = name

    def _event_shape(self) -> TensorShape:
        s = self._logits.shape
        return TensorShape([None]) if s.rank is None else TensorShape([s.dims[-1]])

    def _event_shape_tensor(self) -> _g.Tensor:
        return o.shape(self._logits)[-1:]

    def _depth(self) -> int:
        d = self._logits.shape.dims[-1] if self._logits.shape.rank else None
        if d is None:
            raise ValueError("OneHotCategorical needs the number of classes known when the graph is built")
        return int(d)

    def _sample_n(self, n: Any, seed: Optional[int]) -> _g.Tensor:
        return o.one_hot(super()._sample_n(n, seed), self._depth(), dtype=self.dtype)

    def _log_prob(self, x: Any) -> _g.Tensor:
        lsm = o.log_softmax(self._logits)
        return o.reduce_sum(o.cast(x, lsm.dtype) * lsm, -1)

    def _cdf(self, x: Any) -> _g.Tensor:
        raise NotImplementedError("OneHotCategorical has no cdf")

    def _mode(self) -> _g.Tensor:
        return o.one_hot(o.argmax(self._logits, -1), self._depth(), dtype=self.dtype)

    def _mean(self) -> _g.Tensor:
        return self._probs

    def _variance(self) -> _g.Tensor:
        return self._probs * (1.0 - self._probs)


@RegisterKL(OneHotCategorical, OneHotCategorical)
def _kl_one_hot(a: OneHotCategorical, b: OneHotCategorical, name: Optional[str] = None) -> _g.Tensor:
    return o.reduce_sum(o.softmax(a.logits) * (o.log_softmax(a.logits) - o.log_softmax(b.logits)), -1)


class ExpRelaxedOneHotCategorical(VectorEvent, Distribution):
    """The log of a Gumbel-softmax sample: log_softmax((logits + Gumbel) / temperature), with
    the Concrete log density (Maddison et al. 2016)."""

    def __init__(self, temperature: Any, logits: Any = None, probs: Any = None, dtype: Any = None,
                 validate_args: bool = False, allow_nan_stats: bool = True, name: str = "ExpRelaxedOneHotCategorical"):
        parameters = dict(locals())
        with _g.get_default_graph().name_scope(name):
            # one dtype for all three (the first tensor's), then the categorical's logits/probs rule
            vals = {k: v for k, v in (("logits", logits), ("probs", probs)) if v is not None}
            p = common_params(dict(vals, temperature=temperature), dtype)
            self._logits, self._probs = _logits_and_probs(p.get("logits"), p.get("probs"), True, validate_args)
            checks = [o.assert_positive(p["temperature"])] if validate_args else []
            self._temperature = o.identity(checked(p["temperature"], checks), name="temperature")
            self._vector = self._logits + o.zeros_like(o.expand_dims(self._temperature, -1))
        super().__init__(self._logits.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats, parameters,
                         [self._logits, self._temperature], name)

    @property
    def logits(self) -> _g.Tensor:
        return self._logits

    @property
    def probs(self) -> _g.Tensor:
        return self._probs

    @property
    def temperature(self) -> _g.Tensor:
        return self._temperature

    def _temp(self) -> _g.Tensor:
        return o.expand_dims(self._temperature, -1)

    def _sample_n(self, n: Any, seed: Optional[int]) -> _g.Tensor:
        shape = o.concat([sample_shape_with(n, self.batch_shape_tensor()), self.event_shape_tensor()], 0)
        tiny = float(np.finfo(self.dtype.np).tiny)
        u = o.random_uniform(shape, minval=tiny, maxval=1.0, dtype=self.dtype, seed=seed)
        gumbel = -o.log(-o.log(u))
        return o.log_softmax((gumbel + self._logits) / self._temp())

    def _log_prob(self, x: _g.Tensor) -> _g.Tensor:
        k = o.cast(o.shape(self._vector)[-1], self.dtype)
        logits = self._logits + o.zeros_like(x)
        x = x + o.zeros_like(logits)
        log_norm = o.lgamma(k) + (k - 1.0) * o.log(self._temperature)
        return log_norm + o.reduce_sum(o.log_softmax(logits - x * self._temp()), -1)


class RelaxedOneHotCategorical(ExpRelaxedOneHotCategorical):
    """The Gumbel-softmax (Concrete) relaxation of a one-hot categorical: samples
    softmax((logits + Gumbel) / temperature) on the simplex, reparameterized; its density is
    ExpRelaxedOneHotCategorical's at log(x) over prod(x)."""

    def __init__(self, temperature: Any, logits: Any = None, probs: Any = None, dtype: Any = None,
                 validate_args: bool = False, allow_nan_stats: bool = True, name: str = "RelaxedOneHotCategorical"):
        super().__init__(temperature, logits, probs, dtype, validate_args, allow_nan_stats, name)

    def _sample_n(self, n: Any, seed: Optional[int]) -> _g.Tensor:
        return o.exp(super()._sample_n(n, seed))

    def _log_prob(self, x: _g.Tensor) -> _g.Tensor:
        log_x = o.log(x)
        return super()._log_prob(log_x) - o.reduce_sum(log_x, -1)
