"""The stateful random ops of tf.random.experimental.Generator (TF 1.15's op names, and TF
2.x's RngReadAndSkip for `skip`): each reads the Philox state (an int64 [3] resource
variable: counter, key) and advances it in the same run; the values are TensorFlow's CPU
values bit for bit (see
kernels/stateful_random_kernels.py).  The Generator class itself is in
graph/random_generator.py.

No op here is differentiable (the state is an integer).
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from .op_util import single
from .random_ops import _shape_from_input

__all__ = ["stateful_uniform", "stateful_uniform_int", "stateful_uniform_full_int", "stateful_standard_normal",
           "stateful_truncated_normal", "stateful_random_binomial", "rng_read_and_skip", "non_deterministic_ints"]

_FLOATS = (_dt.float16, _dt.float32, _dt.float64)
_FULL_INTS = (_dt.int32, _dt.int64, _dt.uint32, _dt.uint64)


def _check_resource(op: _g.Operation) -> None:
    if op.inputs[0].dtype != _dt.resource:
        raise TypeError(f"{op.type}: input 0 must be a resource variable handle, got {op.inputs[0].dtype.name}")
    alg = op.inputs[1]
    if alg.shape.rank not in (None, 0):
        raise ValueError(f"{op.type}: algorithm must be a scalar, got shape {alg.shape}")


def _drawn_spec(allowed: tuple) -> Any:
    def spec(op: _g.Operation) -> list:
        _check_resource(op)
        dt = op.attrs["dtype"]
        if dt not in allowed:
            raise TypeError(f"{op.type}: dtype {dt.name} is not one of {', '.join(d.name for d in allowed)}")
        if op.type == "StatefulUniformInt":
            for t, what in zip(op.inputs[3:5], ("minval", "maxval")):
                if t.dtype != dt:
                    raise TypeError(f"{what} has dtype {t.dtype.name}, the op's dtype is {dt.name}")
                if t.shape.rank not in (None, 0):
                    raise ValueError(f"{what} must be 0-D, got shape {t.shape}")
        return [(dt, _shape_from_input(op.inputs[2]))]
    return spec


def _binomial_spec(op: _g.Operation) -> list:
    _check_resource(op)
    c, p = op.inputs[3], op.inputs[4]
    if c.dtype not in _FLOATS or p.dtype != c.dtype:
        raise TypeError(f"counts and probs must have one floating dtype, got {c.dtype.name} and {p.dtype.name}")
    return [(op.attrs["dtype"], _shape_from_input(op.inputs[2]))]


def _skip_spec(op: _g.Operation) -> list:
    _check_resource(op)
    return [(_dt.int64, TensorShape([3]))]


register_op("StatefulUniform", _drawn_spec(_FLOATS), variable_state=True, host_only=True)
register_op("StatefulStandardNormalV2", _drawn_spec(_FLOATS), variable_state=True, host_only=True)
register_op("StatefulTruncatedNormal", _drawn_spec(_FLOATS), variable_state=True, host_only=True)
register_op("StatefulUniformInt", _drawn_spec((_dt.int32, _dt.int64)), variable_state=True, host_only=True)
register_op("StatefulUniformFullInt", _drawn_spec(_FULL_INTS), variable_state=True, host_only=True)
register_op("StatefulRandomBinomial", _binomial_spec, variable_state=True, host_only=True)
register_op("RngReadAndSkip", _skip_spec, variable_state=True, host_only=True)
register_op("NonDeterministicInts", lambda op: [(op.attrs["dtype"], _shape_from_input(op.inputs[0]))],
            stateful=True, host_only=True)
not_differentiable("StatefulUniform", "StatefulStandardNormalV2", "StatefulTruncatedNormal", "StatefulUniformInt",
                   "StatefulUniformFullInt", "StatefulRandomBinomial", "RngReadAndSkip", "NonDeterministicInts")


def _alg(alg: Any, dtype: _dt.DType = _dt.int64) -> _g.Tensor:
    return _g.convert_to_tensor(alg, dtype=dtype)


def stateful_uniform(resource: _g.Tensor, algorithm: Any, shape: _g.Tensor, dtype: Any = _dt.float32,
                     name: Optional[str] = None) -> _g.Tensor:
    """Uniform [0, 1) floats; advances the state."""
    return single("StatefulUniform", [resource, _alg(algorithm), shape], {"dtype": _dt.as_dtype(dtype)}, name=name)


def stateful_uniform_int(resource: _g.Tensor, algorithm: Any, shape: _g.Tensor, minval: _g.Tensor,
                         maxval: _g.Tensor, name: Optional[str] = None) -> _g.Tensor:
    """minval + word % (maxval - minval) (int32/int64); advances the state."""
    return single("StatefulUniformInt", [resource, _alg(algorithm), shape, minval, maxval],
                  {"dtype": minval.dtype}, name=name)


def stateful_uniform_full_int(resource: _g.Tensor, algorithm: Any, shape: _g.Tensor, dtype: Any = _dt.uint64,
                              name: Optional[str] = None) -> _g.Tensor:
    """Every bit pattern of an integer dtype; advances the state."""
    return single("StatefulUniformFullInt", [resource, _alg(algorithm), shape], {"dtype": _dt.as_dtype(dtype)},
                  name=name)


def stateful_standard_normal(resource: _g.Tensor, algorithm: Any, shape: _g.Tensor, dtype: Any = _dt.float32,
                             name: Optional[str] = None) -> _g.Tensor:
    """N(0, 1) values; advances the state."""
    return single("StatefulStandardNormalV2", [resource, _alg(algorithm), shape], {"dtype": _dt.as_dtype(dtype)},
                  name=name)


def stateful_truncated_normal(resource: _g.Tensor, algorithm: Any, shape: _g.Tensor, dtype: Any = _dt.float32,
                              name: Optional[str] = None) -> _g.Tensor:
    """N(0, 1) values within 2 of 0; advances the state."""
    return single("StatefulTruncatedNormal", [resource, _alg(algorithm), shape], {"dtype": _dt.as_dtype(dtype)},
                  name=name)


def stateful_random_binomial(resource: _g.Tensor, algorithm: Any, shape: _g.Tensor, counts: _g.Tensor,
                             probs: _g.Tensor, dtype: Any = _dt.int64, name: Optional[str] = None) -> _g.Tensor:
    """Binomial(counts, probs) samples; advances the state."""
    return single("StatefulRandomBinomial", [resource, _alg(algorithm), shape, counts, probs],
                  {"dtype": _dt.as_dtype(dtype)}, name=name)


def rng_read_and_skip(resource: _g.Tensor, algorithm: Any, delta: Any, name: Optional[str] = None) -> _g.Tensor:
    """The state before (int64 [3]); advances it as a draw of `delta` values would."""
    d = delta if isinstance(delta, _g.Tensor) else _g.convert_to_tensor(delta, dtype=_dt.int64)
    return single("RngReadAndSkip", [resource, _alg(algorithm, _dt.int32), d], {}, name=name)


def non_deterministic_ints(shape: Any, dtype: Any = _dt.int64, name: Optional[str] = None) -> _g.Tensor:
    """Integers from the OS's entropy (new ones at every run)."""
    shp = _g.convert_to_tensor(shape, dtype=_dt.int64) if not isinstance(shape, _g.Tensor) else shape
    return single("NonDeterministicInts", [shp], {"dtype": _dt.as_dtype(dtype)}, name=name)
