"""Variable initializers: callables `init(shape, dtype=None) -> Tensor` (TensorFlow's).

    w = cf.Variable(cf.initializers.glorot_uniform(seed=1)([784, 256]), name="w")
    y = cf.layers.dense(x, 256, kernel_initializer=cf.initializers.he_normal(seed=2))

Random initializers draw with the random ops (cf.random_normal, cf.random_uniform,
cf.truncated_normal) under their seeding rules: with `seed` set, every Session draws the
same values; an initializer called twice with the same seed gives the same values (as in
TensorFlow 1.x).  Constant initializers build a Fill op, so a large variable adds no
large constant to the graph.

The variance-scaling family draws with standard deviation sqrt(scale / n), n being fan_in,
fan_out or their mean; for a kernel of shape [..., in, out] the fans are in and out times
the product of the leading (receptive-field) dimensions.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from . import graph as _g
from .ops import array_ops, random_ops
from .ops.constant_op import constant as _constant  # `constant` is the initializer here
from .shape import TensorShape, as_shape

__all__ = [
    "Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform", "TruncatedNormal",
    "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeNormal", "HeUniform", "LecunNormal", "LecunUniform",
    "zeros", "ones", "constant", "random_normal", "random_uniform", "truncated_normal", "variance_scaling",
    "glorot_uniform", "glorot_normal", "he_normal", "he_uniform", "lecun_normal", "lecun_uniform",
    "zeros_initializer", "ones_initializer", "constant_initializer", "random_normal_initializer",
    "random_uniform_initializer", "truncated_normal_initializer", "variance_scaling_initializer",
    "glorot_uniform_initializer", "glorot_normal_initializer", "get", "compute_fans",
    "Orthogonal", "Identity", "orthogonal", "identity", "orthogonal_initializer", "identity_initializer",
    "UniformUnitScaling", "uniform_unit_scaling_initializer",
]

# stddev of the standard normal truncated to [-2, 2]: dividing by it keeps the variance
_TRUNC_STD = 0.87962566103423978


def _static_shape(shape: Any) -> Tuple[int, ...]:
    shp = as_shape(shape) if not isinstance(shape, (int, np.integer)) else TensorShape([int(shape)])
    if not shp.is_fully_defined():
        raise InvalidArgumentError(f"initializers need a fully known shape, got {shp}")
    return tuple(int(d) for d in shp.as_list())


def compute_fans(shape: Sequence[int]) -> Tuple[int, int]:
    """(fan_in, fan_out) of a weight of `shape`: [in, out], or [k..., in, out] for convolutions."""
    shape = tuple(int(d) for d in shape)
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    """Base class: `init(shape, dtype=None, partition_info=None)` returns a Tensor of that shape."""

    dtype: _dt.DType = _dt.float32

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> _g.Tensor:
        raise NotImplementedError

    def get_config(self) -> Dict[str, Any]:
        return {}

    def _dtype(self, dtype: Any, need_float: bool = False) -> _dt.DType:
        dt = _dt.as_dtype(dtype) if dtype is not None else self.dtype
        if need_float and not dt.is_floating:
            raise InvalidArgumentError(f"{type(self).__name__} draws floating-point values; dtype {dt.name} given")
        return dt

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Constant(Initializer):
    """Fills with `value`: a scalar (any shape), or an array of exactly the requested size."""

    def __init__(self, value: Any = 0, dtype: Any = _dt.float32, verify_shape: bool = False):
        self.value = value
        self.dtype = _dt.as_dtype(dtype)
        self.verify_shape = verify_shape

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> _g.Tensor:
        shp = _static_shape(shape)
        dt = self._dtype(dtype)
        arr = np.asarray(self.value)
        if arr.size == 1 and not (self.verify_shape and arr.shape != shp):
            return array_ops.fill(list(shp), _constant(arr.reshape(()).item(), dtype=dt), name="Const")
        if arr.shape != shp and (self.verify_shape or arr.size != int(np.prod(shp))):
            raise InvalidArgumentError(f"Constant initializer: a value of shape {arr.shape} cannot fill shape {shp}")
        return _constant(arr.reshape(shp), dtype=dt)

    def get_config(self) -> Dict[str, Any]:
        return {"value": self.value, "dtype": self.dtype.name}


class Zeros(Constant):
    """All zeros."""

    def __init__(self, dtype: Any = _dt.float32):
        super().__init__(0, dtype)

    def get_config(self) -> Dict[str, Any]:
        return {"dtype": self.dtype.name}


class Ones(Constant):
    """All ones."""

    def __init__(self, dtype: Any = _dt.float32):
        super().__init__(1, dtype)

    def get_config(self) -> Dict[str, Any]:
        return {"dtype": self.dtype.name}


class RandomNormal(Initializer):
    """Normal samples N(mean, stddev^2)."""

    def __init__(self, mean: float = 0.0, stddev: float = 1.0, seed: Optional[int] = None, dtype: Any = _dt.float32):
        self.mean, self.stddev, self.seed, self.dtype = mean, stddev, seed, _dt.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> _g.Tensor:
        return random_ops.random_normal(_static_shape(shape), self.mean, self.stddev, self._dtype(dtype, True),
                                        seed=self.seed)

    def get_config(self) -> Dict[str, Any]:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed, "dtype": self.dtype.name}


class TruncatedNormal(RandomNormal):
    """Normal samples N(mean, stddev^2) redrawn when more than 2 stddev from the mean."""

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> _g.Tensor:
        return random_ops.truncated_normal(_static_shape(shape), self.mean, self.stddev, self._dtype(dtype, True),
                                           seed=self.seed)


class RandomUniform(Initializer):
    """Uniform samples in [minval, maxval)."""

    def __init__(self, minval: float = 0.0, maxval: float = 1.0, seed: Optional[int] = None,
                 dtype: Any = _dt.float32):
        if not minval < maxval:
            raise ValueError(f"RandomUniform needs minval < maxval, got {minval} and {maxval}")
        self.minval, self.maxval, self.seed, self.dtype = minval, maxval, seed, _dt.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> _g.Tensor:
        return random_ops.random_uniform(_static_shape(shape), self.minval, self.maxval, self._dtype(dtype, True),
                                         seed=self.seed)

    def get_config(self) -> Dict[str, Any]:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed, "dtype": self.dtype.name}


class VarianceScaling(Initializer):
    """Samples with variance scale / n, n = fan_in, fan_out or fan_avg of the shape.

    distribution: "truncated_normal" (the default; "normal" is its TF 1.x name),
    "untruncated_normal", or "uniform" (in [-sqrt(3 scale / n), sqrt(3 scale / n)]).
    """

    def __init__(self, scale: float = 1.0, mode: str = "fan_in", distribution: str = "truncated_normal",
                 seed: Optional[int] = None, dtype: Any = _dt.float32):
        if scale <= 0.0:
            raise ValueError(f"VarianceScaling scale must be positive, got {scale}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"VarianceScaling mode must be fan_in, fan_out or fan_avg, got {mode!r}")
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError("VarianceScaling distribution must be truncated_normal, untruncated_normal or "
                             f"uniform, got {distribution!r}")
        self.scale, self.mode, self.distribution = float(scale), mode, distribution
        self.seed, self.dtype = seed, _dt.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> _g.Tensor:
        shp = _static_shape(shape)
        dt = self._dtype(dtype, True)
        fan_in, fan_out = compute_fans(shp)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution == "truncated_normal":
            return random_ops.truncated_normal(shp, 0.0, math.sqrt(scale) / _TRUNC_STD, dt, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(shp, 0.0, math.sqrt(scale), dt, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(shp, -limit, limit, dt, seed=self.seed)

    def get_config(self) -> Dict[str, Any]:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed,
                "dtype": self.dtype.name}


class GlorotUniform(VarianceScaling):
    """Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio)."""

    def __init__(self, seed: Optional[int] = None, dtype: Any = _dt.float32):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)

    def get_config(self) -> Dict[str, Any]:
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """Truncated normal with stddev sqrt(2 / (fan_in + fan_out))."""

    def __init__(self, seed: Optional[int] = None, dtype: Any = _dt.float32):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)

    get_config = GlorotUniform.get_config


class HeNormal(VarianceScaling):
    """Truncated normal with stddev sqrt(2 / fan_in) (He et al., for ReLU layers)."""

    def __init__(self, seed: Optional[int] = None, dtype: Any = _dt.float32):
        super().__init__(2.0, "fan_in", "truncated_normal", seed, dtype)

    get_config = GlorotUniform.get_config


class HeUniform(VarianceScaling):
    """Uniform in [-limit, limit], limit = sqrt(6 / fan_in)."""

    def __init__(self, seed: Optional[int] = None, dtype: Any = _dt.float32):
        super().__init__(2.0, "fan_in", "uniform", seed, dtype)

    get_config = GlorotUniform.get_config


class LecunNormal(VarianceScaling):
    """Truncated normal with stddev sqrt(1 / fan_in)."""

    def __init__(self, seed: Optional[int] = None, dtype: Any = _dt.float32):
        super().__init__(1.0, "fan_in", "truncated_normal", seed, dtype)

    get_config = GlorotUniform.get_config


class LecunUniform(VarianceScaling):
    """Uniform in [-limit, limit], limit = sqrt(3 / fan_in)."""

    def __init__(self, seed: Optional[int] = None, dtype: Any = _dt.float32):
        super().__init__(1.0, "fan_in", "uniform", seed, dtype)

    get_config = GlorotUniform.get_config


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times `gain` (Saxe et al.), reshaped: the QR of a normal
    sample of shape (max(rows, cols), min(rows, cols)) with rows = prod(shape[:-1]), its Q's
    columns signed by R's diagonal, transposed when rows < cols - TensorFlow's recipe."""

    def __init__(self, gain: float = 1.0, seed: Optional[int] = None, dtype: Any = _dt.float32):
        self.gain, self.seed, self.dtype = float(gain), seed, _dt.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> _g.Tensor:
        from .ops import math_ops
        from .ops.matrix_ops import matrix_diag_part, qr
        shp = _static_shape(shape)
        if len(shp) < 2:
            raise ValueError(f"Orthogonal initializer needs a shape of rank >= 2, got {shp}")
        dt = self._dtype(dtype, True)
        rows, cols = int(np.prod(shp[:-1])), shp[-1]
        a = random_ops.random_normal((max(rows, cols), min(rows, cols)), dtype=dt, seed=self.seed)
        q, r = qr(a)
        q = q * math_ops.sign(matrix_diag_part(r))
        if rows < cols:
            q = array_ops.transpose(q)
        return array_ops.reshape(q * _constant(self.gain, dtype=dt), shp)

    def get_config(self) -> Dict[str, Any]:
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}


class Identity(Initializer):
    """`gain` times the identity matrix (2-D shapes only; rectangular: ones on the diagonal)."""

    def __init__(self, gain: float = 1.0, dtype: Any = _dt.float32):
        self.gain, self.dtype = float(gain), _dt.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> _g.Tensor:
        shp = _static_shape(shape)
        if len(shp) != 2:
            raise ValueError(f"Identity initializer needs a 2-D shape, got {shp}")
        dt = self._dtype(dtype, True)
        return _constant(np.eye(shp[0], shp[1]) * self.gain, dtype=dt)

    def get_config(self) -> Dict[str, Any]:
        return {"gain": self.gain, "dtype": self.dtype.name}


# lower-case names (tf.initializers.*, tf.keras.initializers.*) and TF 1.x *_initializer names
zeros = zeros_initializer = Zeros
ones = ones_initializer = Ones
constant = constant_initializer = Constant
random_normal = random_normal_initializer = RandomNormal
random_uniform = random_uniform_initializer = RandomUniform
truncated_normal = truncated_normal_initializer = TruncatedNormal
variance_scaling = variance_scaling_initializer = VarianceScaling
glorot_uniform = glorot_uniform_initializer = GlorotUniform
glorot_normal = glorot_normal_initializer = GlorotNormal
he_normal = HeNormal
he_uniform = HeUniform
lecun_normal = LecunNormal
lecun_uniform = LecunUniform
orthogonal = orthogonal_initializer = Orthogonal
identity = identity_initializer = Identity

_BY_NAME = {n: globals()[n] for n in ("zeros", "ones", "constant", "random_normal", "random_uniform",
                                       "truncated_normal", "variance_scaling", "glorot_uniform", "glorot_normal",
                                       "he_normal", "he_uniform", "lecun_normal", "lecun_uniform", "orthogonal",
                                       "identity")}


def get(identifier: Any) -> Optional[Any]:
    """An initializer from None, a name ("glorot_uniform"), a class, an instance or a callable."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier.lower()]()
        except KeyError:
            raise ValueError(f"unknown initializer {identifier!r}; known: {sorted(_BY_NAME)}") from None
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if callable(identifier):
        return identifier
    raise TypeError(f"cannot interpret {identifier!r} as an initializer")


class UniformUnitScaling(Initializer):
    """TF1's uniform_unit_scaling_initializer: uniform in [-m, m], m = factor * sqrt(3 / n),
    n the product of the shape's dimensions but the last (the inputs of a linear layer)."""

    def __init__(self, factor: float = 1.0, seed: Optional[int] = None, dtype: Any = _dt.float32):
        self.factor, self.seed, self.dtype = float(factor), seed, _dt.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> _g.Tensor:
        dims = list(_static_shape(shape))
        n = 1.0
        for d in dims[:-1]:
            n *= d
        limit = math.sqrt(3.0 / max(n, 1.0)) * self.factor
        return random_ops.random_uniform(dims, -limit, limit, self._dtype(dtype, True), seed=self.seed)

    def get_config(self) -> Dict[str, Any]:
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


uniform_unit_scaling_initializer = UniformUnitScaling
