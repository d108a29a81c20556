"""tf.distributions' base: `Distribution` (sample / log_prob / cdf / entropy / moments over a
batch of distributions of one family), `ReparameterizationType`, and the KL registry
(`kl_divergence`, `RegisterKL`), as in TF 1.x's tensorflow.compat.v1.distributions.

A subclass implements the underscore methods (`_log_prob`, `_sample_n`, `_batch_shape`, ...);
the public ones open a name scope, convert the argument and fall back between pairs
(log_prob <-> prob, cdf <-> log_cdf, stddev <-> variance), raising NotImplementedError where
the family has neither, as TF does.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...graph import graph as _g
from ...graph.shape import TensorShape
from . import _ops as o

__all__ = ["Distribution", "ReparameterizationType", "FULLY_REPARAMETERIZED", "NOT_REPARAMETERIZED",
           "kl_divergence", "RegisterKL"]


class ReparameterizationType:
    """Whether samples are differentiable functions of the parameters (compared by identity)."""

    def __init__(self, rep_type: str):
        self._rep_type = rep_type

    def __repr__(self) -> str:
        return f"<Reparameterization Type: {self._rep_type}>"

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = object.__hash__


FULLY_REPARAMETERIZED = ReparameterizationType("FULLY_REPARAMETERIZED")
NOT_REPARAMETERIZED = ReparameterizationType("NOT_REPARAMETERIZED")


def common_params(values: Dict[str, Any], dtype: Any = None) -> Dict[str, _g.Tensor]:
    """The parameters as tensors of one floating dtype: that of the first tensor or NumPy array
    among them (Python numbers take it), else `dtype`, else float32."""
    dt = None if dtype is None else _dt.as_dtype(dtype)
    if dt is None:
        for v in values.values():
            if isinstance(v, _g.Tensor) or hasattr(v, "handle"):
                dt = _g.convert_to_tensor(v).dtype
                break
            if isinstance(v, (np.ndarray, np.generic)) and v.dtype.kind == "f":
                dt = _dt.as_dtype(v.dtype)
                break
    dt = dt or _dt.float32
    out = {}
    for k, v in values.items():
        t = _g.convert_to_tensor(v, dtype=dt) if not isinstance(v, _g.Tensor) else v
        if t.dtype != dt:
            raise TypeError(f"{k} has dtype {t.dtype.name}, the other parameters {dt.name}")
        out[k] = t
    return out


def checked(t: _g.Tensor, checks: list) -> _g.Tensor:
    """t behind the assertion ops `checks` (validate_args=True), else t."""
    if not checks:
        return t
    with o.control_dependencies(checks):
        return o.identity(t)


class Distribution:
    """A batch of distributions of one family (TF1's tf.distributions.Distribution)."""

    def __init__(self, dtype: Any, reparameterization_type: ReparameterizationType, validate_args: bool,
                 allow_nan_stats: bool, parameters: Optional[dict] = None, graph_parents: Any = None,
                 name: Optional[str] = None):
        self._dtype = dtype
        self._reparameterization_type = reparameterization_type
        self._validate_args = bool(validate_args)
        self._allow_nan_stats = bool(allow_nan_stats)
        # (the subclass passes its locals(): drop self and the __class__ cell super() adds)
        self._parameters = {k: v for k, v in (parameters or {}).items() if k != "self" and not k.startswith("__")}
        self._graph_parents = list(graph_parents or [])
        self._name = name or type(self).__name__

    # -- properties -------------------------------------------------------------------------
    @property
    def dtype(self) -> Any:
        return self._dtype

    @property
    def name(self) -> str:
        return self._name

    @property
    def parameters(self) -> dict:
        return dict(self._parameters)

    @property
    def reparameterization_type(self) -> ReparameterizationType:
        return self._reparameterization_type

    @property
    def allow_nan_stats(self) -> bool:
        return self._allow_nan_stats

    @property
    def validate_args(self) -> bool:
        return self._validate_args

    @property
    def batch_shape(self) -> TensorShape:
        return self._batch_shape()

    @property
    def event_shape(self) -> TensorShape:
        return self._event_shape()

    def batch_shape_tensor(self, name: str = "batch_shape_tensor") -> _g.Tensor:
        with self._scope(name):
            bs = self.batch_shape
            if bs.is_fully_defined():
                return o.constant(np.asarray(bs.as_list(), np.int32), name="batch_shape")
            return self._batch_shape_tensor()

    def event_shape_tensor(self, name: str = "event_shape_tensor") -> _g.Tensor:
        with self._scope(name):
            es = self.event_shape
            if es.is_fully_defined():
                return o.constant(np.asarray(es.as_list(), np.int32), name="event_shape")
            return self._event_shape_tensor()

    def is_scalar_batch(self, name: str = "is_scalar_batch") -> _g.Tensor:
        return o.constant(self.batch_shape.rank == 0, name=name)

    def is_scalar_event(self, name: str = "is_scalar_event") -> _g.Tensor:
        return o.constant(self.event_shape.rank == 0, name=name)

    def copy(self, **override: Any) -> "Distribution":
        """A new distribution with these parameters, some replaced."""
        params = dict(self.parameters, **override)
        return type(self)(**params)

    def _event_shape(self) -> TensorShape:
        return TensorShape([])

    def _event_shape_tensor(self) -> _g.Tensor:
        return o.constant(np.zeros([0], np.int32))

    # -- sampling ---------------------------------------------------------------------------
    def sample(self, sample_shape: Any = (), seed: Optional[int] = None, name: str = "sample") -> _g.Tensor:
        """Samples of shape sample_shape + batch_shape + event_shape."""
        with self._scope(name):
            if isinstance(sample_shape, _g.Tensor):
                ss = o.reshape(o.cast(sample_shape, _dt.int32), [-1])
                n = _prod(ss)
                static = None
            else:
                dims = [int(sample_shape)] if np.ndim(sample_shape) == 0 else [int(d) for d in sample_shape]
                ss = o.constant(np.asarray(dims, np.int32), name="sample_shape")
                n = int(np.prod(dims)) if dims else 1
                static = dims
            samples = self._sample_n(n, seed)
            bs, es = self.batch_shape, self.event_shape
            if static is not None and bs.is_fully_defined() and es.is_fully_defined():
                return o.reshape(samples, static + bs.as_list() + es.as_list())
            full = o.concat([ss, self.batch_shape_tensor(), self.event_shape_tensor()], 0)
            return o.reshape(samples, full)

    # -- densities and moments --------------------------------------------------------------
    def log_prob(self, value: Any, name: str = "log_prob") -> _g.Tensor:
        with self._scope(name):
            v = self._value(value)
            if self._has("_log_prob"):
                return self._log_prob(v)
            if self._has("_prob"):
                return o.log(self._prob(v))
            raise NotImplementedError(f"log_prob is not implemented: {self.name}")

    def prob(self, value: Any, name: str = "prob") -> _g.Tensor:
        with self._scope(name):
            v = self._value(value)
            if self._has("_prob"):
                return self._prob(v)
            if self._has("_log_prob"):
                return o.exp(self._log_prob(v))
            raise NotImplementedError(f"prob is not implemented: {self.name}")

    def log_cdf(self, value: Any, name: str = "log_cdf") -> _g.Tensor:
        with self._scope(name):
            v = self._value(value)
            if self._has("_log_cdf"):
                return self._log_cdf(v)
            if self._has("_cdf"):
                return o.log(self._cdf(v))
            raise NotImplementedError(f"log_cdf is not implemented: {self.name}")

    def cdf(self, value: Any, name: str = "cdf") -> _g.Tensor:
        with self._scope(name):
            v = self._value(value)
            if self._has("_cdf"):
                return self._cdf(v)
            if self._has("_log_cdf"):
                return o.exp(self._log_cdf(v))
            raise NotImplementedError(f"cdf is not implemented: {self.name}")

    def log_survival_function(self, value: Any, name: str = "log_survival_function") -> _g.Tensor:
        with self._scope(name):
            v = self._value(value)
            if self._has("_log_survival_function"):
                return self._log_survival_function(v)
            return o.log1p(-self.cdf(v))

    def survival_function(self, value: Any, name: str = "survival_function") -> _g.Tensor:
        with self._scope(name):
            v = self._value(value)
            if self._has("_survival_function"):
                return self._survival_function(v)
            return 1.0 - self.cdf(v)

    def entropy(self, name: str = "entropy") -> _g.Tensor:
        return self._call("_entropy", name)

    def mean(self, name: str = "mean") -> _g.Tensor:
        return self._call("_mean", name)

    def mode(self, name: str = "mode") -> _g.Tensor:
        return self._call("_mode", name)

    def variance(self, name: str = "variance") -> _g.Tensor:
        with self._scope(name):
            if self._has("_variance"):
                return self._variance()
            if self._has("_stddev"):
                return o.square(self._stddev())
            raise NotImplementedError(f"variance is not implemented: {self.name}")

    def stddev(self, name: str = "stddev") -> _g.Tensor:
        with self._scope(name):
            if self._has("_stddev"):
                return self._stddev()
            if self._has("_variance"):
                return o.sqrt(self._variance())
            raise NotImplementedError(f"stddev is not implemented: {self.name}")

    def covariance(self, name: str = "covariance") -> _g.Tensor:
        """The covariance matrix of a vector event (the variance for a scalar one)."""
        with self._scope(name):
            if self._has("_covariance"):
                return self._covariance()
            if self.event_shape.rank == 0:
                return self.variance()
            raise NotImplementedError(f"covariance is not implemented: {self.name}")

    def quantile(self, value: Any, name: str = "quantile") -> _g.Tensor:
        return self._call_with("_quantile", value, name)

    def _call_with(self, method: str, value: Any, name: str) -> _g.Tensor:
        with self._scope(name):
            if not self._has(method):
                raise NotImplementedError(f"{method[1:]} is not implemented: {self.name}")
            return getattr(self, method)(self._value(value))

    def kl_divergence(self, other: "Distribution", name: str = "kl_divergence") -> _g.Tensor:
        with self._scope(name):
            return kl_divergence(self, other)

    def cross_entropy(self, other: "Distribution", name: str = "cross_entropy") -> _g.Tensor:
        with self._scope(name):
            return self.entropy() + kl_divergence(self, other)

    def __repr__(self) -> str:
        return (f"<tf.distributions.{type(self).__name__} '{self.name}' batch_shape={self.batch_shape} "
                f"event_shape={self.event_shape} dtype={getattr(self.dtype, 'name', self.dtype)}>")

    # -- helpers ----------------------------------------------------------------------------
    def _scope(self, name: str) -> Any:
        return _g.get_default_graph().name_scope(f"{self.name}/{name}" if name else self.name)

    def _has(self, method: str) -> bool:
        return getattr(type(self), method, None) is not None

    def _call(self, method: str, name: str) -> _g.Tensor:
        with self._scope(name):
            if not self._has(method):
                raise NotImplementedError(f"{method[1:]} is not implemented: {self.name}")
            return getattr(self, method)()

    def _value(self, value: Any) -> _g.Tensor:
        return _g.convert_to_tensor(value, dtype=self.dtype) if not isinstance(value, _g.Tensor) else value

    def _nan_unless(self, cond: _g.Tensor, value: _g.Tensor, what: str) -> _g.Tensor:
        """allow_nan_stats: value where cond holds, NaN elsewhere; else an assertion that cond
        holds everywhere (TF's rule for undefined statistics)."""
        if self.allow_nan_stats:
            return o.where(cond, value, o.zeros_like(value) + np.nan)
        check = o.assert_less(o.zeros_like(value), o.cast(cond, value.dtype),
                              message=f"{what} undefined for some batch member")
        return checked(value, [check])


def outer_covariance(x: _g.Tensor, y: _g.Tensor, variance: _g.Tensor) -> _g.Tensor:
    """-x y^T off the diagonal, `variance` on it (the multinomial-type covariance)."""
    outer = o.expand_dims(x, -1) * o.expand_dims(y, -2)
    return o.matrix_diag(variance + x * y) - outer


def _prod(v: _g.Tensor) -> _g.Tensor:
    return o.reduce_prod(v)


# -- KL divergence -----------------------------------------------------------------------------

_KL: Dict[Tuple[type, type], Callable] = {}


def _registered_kl(type_a: type, type_b: type) -> Optional[Callable]:
    """The KL function of the closest registered pair of ancestors (TF's MRO-distance rule)."""
    best, best_dist = None, None
    for i, pa in enumerate(type_a.__mro__):
        for j, pb in enumerate(type_b.__mro__):
            fn = _KL.get((pa, pb))
            if fn is not None and (best_dist is None or i + j < best_dist):
                best, best_dist = fn, i + j
    return best


def kl_divergence(distribution_a: Distribution, distribution_b: Distribution, allow_nan_stats: bool = True,
                  name: Optional[str] = None) -> _g.Tensor:
    """KL(a || b) by the function registered for (type(a), type(b)) (NotImplementedError if none);
    with allow_nan_stats=False an assertion that the result has no NaN."""
    fn = _registered_kl(type(distribution_a), type(distribution_b))
    if fn is None:
        raise NotImplementedError(f"No KL(distribution_a || distribution_b) registered for distribution_a type "
                                  f"{type(distribution_a).__name__} and distribution_b type "
                                  f"{type(distribution_b).__name__}")
    with _g.get_default_graph().name_scope(name or "KullbackLeibler"):
        kl = fn(distribution_a, distribution_b, name=None)
        if allow_nan_stats:
            return kl
        kl = o.identity(kl, name="kl")
        bad = o.reduce_sum(o.cast(o.is_nan(kl), _dt.int32))
        return checked(kl, [o.assert_less(bad, o.constant(1), message="KL calculation returned NaN")])


class RegisterKL:
    """Decorator registering fn(a, b, name=None) as KL(a || b) for the two classes."""

    def __init__(self, dist_cls_a: type, dist_cls_b: type):
        self._key = (dist_cls_a, dist_cls_b)

    def __call__(self, kl_fn: Callable) -> Callable:
        if not callable(kl_fn):
            raise TypeError(f"kl_fn must be callable, received: {kl_fn}")
        if self._key in _KL:
            raise ValueError(f"KL({self._key[0].__name__} || {self._key[1].__name__}) has already been registered "
                             f"to: {_KL[self._key]}")
        _KL[self._key] = kl_fn
        return kl_fn


def batch_shape_of(*params: _g.Tensor) -> TensorShape:
    """The broadcast static shape of the parameters."""
    from ...graph.shape import broadcast_static
    s = params[0].shape
    for t in params[1:]:
        s = broadcast_static(s, t.shape)
    return s


def batch_shape_tensor_of(*params: _g.Tensor) -> _g.Tensor:
    """The broadcast shape of the parameters, computed when run."""
    s = o.shape(params[0])
    for t in params[1:]:
        s = o.broadcast_dynamic_shape(s, o.shape(t))
    return s


def sample_shape_with(n: Any, batch: _g.Tensor) -> _g.Tensor:
    """[n] + batch as an int32 shape vector (n a Python int or a scalar tensor)."""
    head = o.reshape(o.cast(n, _dt.int32), [1]) if isinstance(n, _g.Tensor) else o.constant(np.asarray([n], np.int32))
    return o.concat([head, o.cast(batch, _dt.int32)], 0)


class VectorEvent:
    """The shapes of a distribution over vectors (Multinomial, Dirichlet, ...): the event is
    the last dimension of its vector parameter `_vector`, the batch the dimensions before it,
    broadcast with a count parameter `_count` where the distribution has one."""

    _vector: _g.Tensor
    _count: Optional[_g.Tensor] = None

    def _batch_shape(self) -> TensorShape:
        s = self._vector.shape
        bs = TensorShape(None) if s.rank is None else TensorShape(list(s.dims[:-1]))
        if self._count is None:
            return bs
        from ...graph.shape import broadcast_static
        return broadcast_static(bs, self._count.shape)

    def _batch_shape_tensor(self) -> _g.Tensor:
        b = o.shape(self._vector)[:-1]
        return b if self._count is None else o.broadcast_dynamic_shape(b, o.shape(self._count))

    def _event_shape(self) -> TensorShape:
        s = self._vector.shape
        return TensorShape([None]) if s.rank is None else TensorShape([s.dims[-1]])

    def _event_shape_tensor(self) -> _g.Tensor:
        return o.shape(self._vector)[-1:]
