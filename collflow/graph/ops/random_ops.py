"""Random ops: random_normal, random_uniform, truncated_normal, random_shuffle; seeding.

Seeding follows TensorFlow 1.x.  An op's stream is fixed by the pair (graph seed, op
seed), resolved when the op is built (`get_seed`):

- graph seed and op seed set: that pair;
- only the graph seed (`set_random_seed`): the op seed is derived from the number of ops
  built so far, so the same program builds the same streams;
- only the op seed: a fixed default graph seed is paired with it;
- neither: a fresh, unpredictable stream in every Session.

The generator state lives in the Session's resource container, so successive runs of
one op in one Session draw new values, and every new Session starts the stream again.
Random ops are stateful and have no gradient.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_op, not_differentiable
from ..shape import TensorShape
from .op_util import single
from .constant_op import constant

__all__ = ["set_random_seed", "get_seed", "random_normal", "random_uniform", "truncated_normal",
           "random_shuffle"]

# paired with an op seed when only the op seed is given (TensorFlow's value)
DEFAULT_GRAPH_SEED = 87654321


def set_random_seed(seed: Optional[int]) -> None:
    """Sets the graph-level seed of the default graph (None clears it).

    Random ops built afterwards derive their streams from it (see the module docstring).
    """
    _g.get_default_graph().seed = None if seed is None else int(seed)


def get_seed(op_seed: Optional[int], graph: Optional[_g.Graph] = None) -> Tuple[Optional[int], Optional[int]]:
    """(seed, seed2) for a random op about to be built; (None, None) means nondeterministic."""
    g = graph if graph is not None else _g.get_default_graph()
    if g.seed is not None:
        # the count of ops built so far: deterministic for a deterministic program
        pair = g.seed, int(op_seed) if op_seed is not None else g.version
        # TF never hands out (0, 0) (its kernels read it as "unseeded"): the op seed becomes 2^31 - 1
        return (0, 2 ** 31 - 1) if pair == (0, 0) else pair
    if op_seed is not None:
        return DEFAULT_GRAPH_SEED, int(op_seed)
    return None, None


# -- shape functions -------------------------------------------------------------------


def static_shape_value(t: _g.Tensor) -> Optional[List[int]]:
    """The value of a shape tensor when it is a constant, else None."""
    if t.op.type == "Const":
        return [int(d) for d in np.asarray(t.op.attrs["value"]).reshape(-1)]
    return None


def _shape_from_input(t: _g.Tensor) -> TensorShape:
    if not t.dtype.is_integer:
        raise ValueError(f"shape must be an integer tensor, got {t.dtype.name}")
    if t.shape.rank not in (None, 1):
        raise ValueError(f"shape must be a 1-D tensor, got shape {t.shape}")
    val = static_shape_value(t)
    if val is not None:
        if any(d < 0 for d in val):
            raise ValueError(f"shape {val} has a negative dimension")
        return TensorShape(val)
    from .shape_eval import partial_vector  # tf.shape(x), stack([shape(x)[0], 7]), ...
    part = partial_vector(t)
    if part is not None:
        return TensorShape([None if d is None or d < 0 else d for d in part])
    n = t.shape.dims[0] if t.shape.rank == 1 else None
    return TensorShape(None if n is None else [None] * n)


def _scalar_params(op: _g.Operation, names: Sequence[str]) -> None:
    dt = op.attrs["dtype"]
    for t, nm in zip(op.inputs[1:], names):
        if t.dtype != dt:
            raise ValueError(f"{nm} has dtype {t.dtype.name}, the op's dtype is {dt.name}")
        n = t.shape.num_elements()
        if n is not None and n != 1:
            raise ValueError(f"{nm} must be a scalar, got shape {t.shape}")


def _normal_spec(op: _g.Operation) -> list:
    dt = op.attrs["dtype"]
    if not dt.is_floating:
        raise ValueError(f"{op.type} needs a floating-point dtype, got {dt.name}")
    _scalar_params(op, ("mean", "stddev"))
    return [(dt, _shape_from_input(op.inputs[0]))]


def _uniform_spec(op: _g.Operation) -> list:
    dt = op.attrs["dtype"]
    if op.type == "RandomUniform" and not dt.is_floating:
        raise ValueError(f"RandomUniform needs a floating-point dtype, got {dt.name}")
    if op.type == "RandomUniformInt" and not dt.is_integer:
        raise ValueError(f"RandomUniformInt needs an integer dtype, got {dt.name}")
    _scalar_params(op, ("minval", "maxval"))
    return [(dt, _shape_from_input(op.inputs[0]))]


def _shuffle_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if x.shape.rank == 0:
        raise ValueError("random_shuffle needs a tensor of rank >= 1, got a scalar")
    return [(x.dtype, x.shape)]


register_op("RandomNormal", _normal_spec, stateful=True)
register_op("TruncatedNormal", _normal_spec, stateful=True)
register_op("RandomUniform", _uniform_spec, stateful=True)
register_op("RandomUniformInt", _uniform_spec, stateful=True)
register_op("RandomShuffle", _shuffle_spec, stateful=True)
not_differentiable("RandomNormal", "TruncatedNormal", "RandomUniform", "RandomUniformInt", "RandomShuffle")


# -- constructors ----------------------------------------------------------------------


def _shape_tensor(shape: Any, name: str) -> _g.Tensor:
    if isinstance(shape, _g.Tensor):
        return shape
    if isinstance(shape, TensorShape):
        shape = shape.as_list()
    dims = [shape] if isinstance(shape, (int, np.integer)) else list(shape)
    if _g._holds_tensor(dims):
        # [tf.shape(x)[0], 2]: TF packs the list into one int tensor, read when the op runs
        for d in dims:
            if d is None or (isinstance(d, (int, np.integer)) and int(d) < 0):
                raise InvalidArgumentError(f"random ops need a fully known shape (or a shape tensor), got {shape!r}")
        t = _g.convert_to_tensor(dims)
        if not t.dtype.is_integer:
            raise InvalidArgumentError(f"{name}: a shape must hold integers, got {t.dtype.name}")
        return t
    for d in dims:
        if d is None or int(d) < 0:
            raise InvalidArgumentError(f"random ops need a fully known shape (or a shape tensor), got {shape!r}")
    return constant(np.asarray([int(d) for d in dims], dtype=np.int32), name=f"{name}/shape")


def _param(v: Any, dt: _dt.DType, what: str) -> _g.Tensor:
    if isinstance(v, _g.Tensor) or hasattr(v, "handle"):
        t = _g.convert_to_tensor(v)
        if t.dtype != dt:
            raise InvalidArgumentError(f"{what} has dtype {t.dtype.name}, but dtype={dt.name} was requested")
        return t
    return constant(v, dtype=dt, name=what)


def _random(op_type: str, shape: Any, p0: Any, p1: Any, names: Tuple[str, str], dtype: Any,
            seed: Optional[int], name: str) -> _g.Tensor:
    dt = _dt.as_dtype(dtype)
    g = _g.get_default_graph()
    with g.as_default():
        shp = _shape_tensor(shape, name)
        if op_type in ("RandomNormal", "TruncatedNormal") and not dt.is_floating:
            # before converting mean/stddev (0.0 is no int32: TypeError, TF's error) say why
            raise InvalidArgumentError(f"{op_type} needs a floating-point dtype, got {dt.name}")
        a = _param(p0, dt, f"{name}/{names[0]}")
        b = _param(p1, dt, f"{name}/{names[1]}")
        s1, s2 = get_seed(seed, g)
        return single(op_type, [shp, a, b], {"dtype": dt, "seed": s1, "seed2": s2}, name=name)


def random_normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = _dt.float32,
                  seed: Optional[int] = None, name: Optional[str] = None) -> _g.Tensor:
    """Samples from a normal distribution N(mean, stddev**2) of the given `shape`.

    mean, stddev: scalars (Python values or 0-D tensors of `dtype`).  Random ops have no
    gradient, not even to mean/stddev: write `mean + stddev * random_normal(shape)` where
    one is needed (the reparameterisation trick).
    """
    return _random("RandomNormal", shape, mean, stddev, ("mean", "stddev"), dtype, seed, name or "random_normal")


def truncated_normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = _dt.float32,
                     seed: Optional[int] = None, name: Optional[str] = None) -> _g.Tensor:
    """Like random_normal, but values more than 2 stddev from the mean are drawn again."""
    return _random("TruncatedNormal", shape, mean, stddev, ("mean", "stddev"), dtype, seed,
                   name or "truncated_normal")


def random_uniform(shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = _dt.float32,
                   seed: Optional[int] = None, name: Optional[str] = None) -> _g.Tensor:
    """Uniform samples in [minval, maxval).

    For floating dtypes maxval defaults to 1; for integer dtypes to the dtype's largest
    value.  Integer samples are exactly uniform; minval must be below maxval.
    """
    dt = _dt.as_dtype(dtype)
    if dt.is_floating:
        op_type = "RandomUniform"
        if maxval is None:
            maxval = 1.0
    elif dt.is_integer and dt.name in ("int32", "int64"):
        op_type = "RandomUniformInt"
        if maxval is None:
            maxval = int(np.iinfo(dt.np).max)
    else:
        raise InvalidArgumentError(f"random_uniform supports float16/32/64, int32 and int64, got {dt.name}")
    if not isinstance(minval, _g.Tensor) and not isinstance(maxval, _g.Tensor) \
            and not hasattr(minval, "handle") and not hasattr(maxval, "handle"):
        if not minval < maxval:
            raise InvalidArgumentError(f"random_uniform needs minval < maxval, got minval={minval}, maxval={maxval}")
    return _random(op_type, shape, minval, maxval, ("minval", "maxval"), dt, seed, name or "random_uniform")


def random_shuffle(value: Any, seed: Optional[int] = None, name: Optional[str] = None) -> _g.Tensor:
    """`value` with its slices along the first dimension in a random order."""
    v = _g.convert_to_tensor(value)
    s1, s2 = get_seed(seed, v.graph)
    return single("RandomShuffle", [v], {"seed": s1, "seed2": s2}, name=name or "RandomShuffle")
