"""tf.random.stateless_uniform/normal/truncated_normal/categorical/multinomial (the values are
a function of (shape, seed pair) only, bit for bit TensorFlow's CPU values: see
kernels/philox.py and kernels/stateless_random_kernels.py), tf.random.poisson
(tf.random_poisson) and tf.random.get_seed.

The stateless ops have no gradient (the seed is not differentiable); the affine `* stddev +
mean` / `* (maxval - minval) + minval` around them is built with ordinary ops, as TF does, so
gradients flow to mean, stddev, minval and maxval.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from . import math_ops as _m
from .op_util import single
from .random_ops import _shape_from_input, _shape_tensor, get_seed

__all__ = ["stateless_uniform", "stateless_normal", "stateless_truncated_normal", "stateless_categorical",
           "stateless_multinomial", "random_poisson", "get_seed"]

_FLOATS = (_dt.float16, _dt.float32, _dt.float64)


def _check_seed(t: _g.Tensor) -> None:
    if t.dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"seed must be int32 or int64, got {t.dtype.name}")
    if t.shape.rank is not None and (t.shape.rank != 1 or t.shape.dims[0] not in (None, 2)):
        raise ValueError(f"Shape must be [2] for the seed, got {t.shape}")


def _shaped_spec(op: _g.Operation) -> list:
    _check_seed(op.inputs[1])
    return [(op.attrs["dtype"], _shape_from_input(op.inputs[0]))]


def _multinomial_spec(op: _g.Operation) -> list:
    logits = op.inputs[0]
    _check_seed(op.inputs[2])
    if logits.shape.rank is not None and logits.shape.rank != 2:
        raise ValueError(f"logits must be 2-D, got shape {logits.shape}")
    b = logits.shape.dims[0] if logits.shape.rank == 2 else None
    k = op.inputs[1]
    n = int(np.asarray(k.op.attrs["value"]).reshape(())) if k.op.type == "Const" else None
    return [(op.attrs["output_dtype"], TensorShape([b, n]))]


def _poisson_spec(op: _g.Operation) -> list:
    base, lam = _shape_from_input(op.inputs[0]), op.inputs[1].shape
    if base.rank is None or lam.rank is None:
        return [(op.attrs["dtype"], TensorShape(None))]
    return [(op.attrs["dtype"], TensorShape(list(base.dims) + list(lam.dims)))]


for _n in ("StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal",
           "StatelessRandomUniformInt", "StatelessRandomUniformFullInt"):
    register_op(_n, _shaped_spec, host_only=True)
register_op("StatelessMultinomial", _multinomial_spec, host_only=True)
register_op("RandomPoissonV2", _poisson_spec, stateful=True, host_only=True)
# RandomPoissonV2 has no gradient registered (LookupError through its rate, as TF)
not_differentiable("StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal",
                   "StatelessRandomUniformInt", "StatelessRandomUniformFullInt", "StatelessMultinomial")


def _seed_tensor(seed: Any) -> _g.Tensor:
    t = _g.convert_to_tensor(seed)
    if t.dtype not in (_dt.int32, _dt.int64):
        t = _g.convert_to_tensor(np.asarray(seed, np.int64))
    _check_seed(t)
    return t


def _float_dtype(dtype: Any, what: str) -> _dt.DType:
    dt = _dt.as_dtype(dtype)
    if dt not in _FLOATS:
        raise ValueError(f"{what}: dtype must be float16, float32 or float64, got {dt.name}")
    return dt


def stateless_uniform(shape: Any, seed: Any, minval: Any = 0, maxval: Any = None, dtype: Any = _dt.float32,
                      name: Optional[str] = None, alg: Any = "auto_select") -> _g.Tensor:
    """Deterministic uniform values in [minval, maxval) for the seed pair `seed` ([2] int).

    Floats: maxval defaults to 1.  int32/int64: minval + word % (maxval - minval) (slightly
    biased for ranges that do not divide 2^32 / 2^64, as TF's); both bounds None gives every
    bit pattern (also uint32/uint64)."""
    dt = _dt.as_dtype(dtype)
    g = _g.get_default_graph()
    with g.as_default(), g.name_scope(name or "stateless_random_uniform"):
        shp = _shape_tensor(shape, "stateless_random_uniform")
        sd = _seed_tensor(seed)
        if dt.is_integer:
            if (minval is None) != (maxval is None):
                raise ValueError(f"For integer dtype {dt.name}, minval and maxval must be both `None` or both "
                                 f"non-`None`; got minval={minval} and maxval={maxval}")
            if minval is None:
                return single("StatelessRandomUniformFullInt", [shp, sd], {"dtype": dt})
            if dt not in (_dt.int32, _dt.int64):
                raise ValueError(f"dtype {dt.name} is not supported with minval/maxval (int32, int64 only)")
            lo = _g.convert_to_tensor(minval, dtype=dt)
            hi = _g.convert_to_tensor(maxval, dtype=dt)
            return single("StatelessRandomUniformInt", [shp, sd, lo, hi], {"dtype": dt})
        dt = _float_dtype(dt, "stateless_uniform")
        if maxval is None:
            maxval = 1
        lo = _g.convert_to_tensor(minval, dtype=dt)
        hi = _g.convert_to_tensor(maxval, dtype=dt)
        rnd = single("StatelessRandomUniform", [shp, sd], {"dtype": dt})
        return _m.add(rnd * (hi - lo), lo)


def _affine(op_type: str, shape: Any, seed: Any, mean: Any, stddev: Any, dtype: Any, name: str) -> _g.Tensor:
    dt = _float_dtype(dtype, name)
    g = _g.get_default_graph()
    with g.as_default(), g.name_scope(name):
        shp = _shape_tensor(shape, name)
        sd = _seed_tensor(seed)
        mu = _g.convert_to_tensor(mean, dtype=dt)
        sig = _g.convert_to_tensor(stddev, dtype=dt)
        rnd = single(op_type, [shp, sd], {"dtype": dt})
        return _m.add(rnd * sig, mu)


def stateless_normal(shape: Any, seed: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = _dt.float32,
                     name: Optional[str] = None, alg: Any = "auto_select") -> _g.Tensor:
    """Deterministic N(mean, stddev^2) values for the seed pair `seed`."""
    return _affine("StatelessRandomNormal", shape, seed, mean, stddev, dtype, name or "stateless_random_normal")


def stateless_truncated_normal(shape: Any, seed: Any, mean: Any = 0.0, stddev: Any = 1.0,
                               dtype: Any = _dt.float32, name: Optional[str] = None,
                               alg: Any = "auto_select") -> _g.Tensor:
    """Deterministic normal values within 2 stddev of the mean for the seed pair `seed`."""
    return _affine("StatelessTruncatedNormal", shape, seed, mean, stddev, dtype,
                   name or "stateless_truncated_normal")


def stateless_multinomial(logits: Any, num_samples: Any, seed: Any, output_dtype: Any = _dt.int64,
                          name: Optional[str] = None) -> _g.Tensor:
    """Deterministic class samples [batch, num_samples] from unnormalized log-probabilities."""
    odt = _dt.as_dtype(output_dtype)
    if odt not in (_dt.int32, _dt.int64):
        raise TypeError(f"output_dtype must be int32 or int64, got {odt.name}")
    g = _g.get_default_graph()
    with g.as_default(), g.name_scope(name or "stateless_multinomial"):
        lg = _g.convert_to_tensor(logits)
        if not lg.dtype.is_floating:
            raise TypeError(f"logits must be floating point, got {lg.dtype.name}")
        k = _g.convert_to_tensor(num_samples, dtype=_dt.int32)
        return single("StatelessMultinomial", [lg, k, _seed_tensor(seed)], {"output_dtype": odt})


def stateless_categorical(logits: Any, num_samples: Any, seed: Any, dtype: Any = _dt.int64,
                          name: Optional[str] = None) -> _g.Tensor:
    """stateless_multinomial under TF2's argument names."""
    return stateless_multinomial(logits, num_samples, seed, output_dtype=dtype,
                                 name=name or "stateless_categorical")


def random_poisson(lam: Any, shape: Any, dtype: Any = _dt.float32, seed: Optional[int] = None,
                   name: Optional[str] = None) -> _g.Tensor:
    """Poisson(lam) samples of shape `shape + lam.shape` (TF1's argument order; seeding as the
    other stateful random ops, the stream is not TensorFlow's)."""
    dt = _dt.as_dtype(dtype)
    if dt not in (_dt.float16, _dt.float32, _dt.float64, _dt.int32, _dt.int64):
        raise TypeError(f"random_poisson: unsupported dtype {dt.name}")
    g = _g.get_default_graph()
    with g.as_default(), g.name_scope(name or "random_poisson"):
        shp = _shape_tensor(shape, "random_poisson")
        lt = _g.convert_to_tensor(lam, dtype=dt if dt.is_floating else _dt.float32)
        s1, s2 = get_seed(seed, g)
        return single("RandomPoissonV2", [shp, lt], {"dtype": dt, "seed": s1, "seed2": s2})
