"""tf.keras.initializers: collflow's initializers under Keras's names and defaults.  Keras's
random ones are small (RandomNormal/TruncatedNormal stddev 0.05, RandomUniform [-0.05, 0.05]),
where tf's *_initializer defaults are 1.0 and [0, 1): a layer given "random_normal" gets
Keras's."""
from __future__ import annotations

from typing import Any, Optional

from ..graph import initializers as _init
from ..graph.initializers import (Constant, GlorotNormal, GlorotUniform, HeNormal, HeUniform, Identity,  # noqa: F401
                                  Initializer, LecunNormal, LecunUniform, Ones, Orthogonal, VarianceScaling, Zeros)

__all__ = ["get", "Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform", "TruncatedNormal",
           "VarianceScaling", "Orthogonal", "Identity", "GlorotNormal", "GlorotUniform", "HeNormal", "HeUniform",
           "LecunNormal", "LecunUniform", "zeros", "ones", "constant", "random_normal", "random_uniform",
           "truncated_normal", "uniform", "normal", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
           "lecun_normal", "lecun_uniform", "orthogonal", "identity", "variance_scaling"]


class RandomNormal(_init.RandomNormal):
    """N(mean, stddev^2), Keras's default stddev 0.05."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: Optional[int] = None, dtype: Any = "float32"):
        super().__init__(mean, stddev, seed, dtype)


class TruncatedNormal(_init.TruncatedNormal):
    """N(mean, stddev^2) within two stddev, Keras's default stddev 0.05."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: Optional[int] = None, dtype: Any = "float32"):
        super().__init__(mean, stddev, seed, dtype)


class RandomUniform(_init.RandomUniform):
    """Uniform in [minval, maxval), Keras's default [-0.05, 0.05)."""

    def __init__(self, minval: float = -0.05, maxval: float = 0.05, seed: Optional[int] = None,
                 dtype: Any = "float32"):
        super().__init__(minval, maxval, seed, dtype)


zeros, ones, constant = Zeros, Ones, Constant
random_normal = normal = RandomNormal
random_uniform = uniform = RandomUniform
truncated_normal = TruncatedNormal
variance_scaling, orthogonal, identity = VarianceScaling, Orthogonal, Identity
glorot_normal, glorot_uniform = GlorotNormal, GlorotUniform
he_normal, he_uniform, lecun_normal, lecun_uniform = HeNormal, HeUniform, LecunNormal, LecunUniform

_BY_NAME = {n: globals()[n] for n in ("zeros", "ones", "constant", "random_normal", "random_uniform",
                                       "truncated_normal", "uniform", "normal", "glorot_normal", "glorot_uniform",
                                       "he_normal", "he_uniform", "lecun_normal", "lecun_uniform", "orthogonal",
                                       "identity", "variance_scaling")}


def get(identifier: Any) -> Any:
    """An initializer from None, a Keras name (Keras's defaults), a class, an instance or a callable."""
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier) or _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Unknown initializer: {identifier}")
        return cls()
    return _init.get(identifier)
