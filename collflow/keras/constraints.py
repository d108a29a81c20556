"""tf.keras.constraints (TF 1.15 / Keras 2.2.4): projections an optimizer applies to a
variable after each update (`Dense(kernel_constraint=max_norm(2))`), by object or by name."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from ..graph import graph as _g
from ..graph.ops import math_ops as _m
from . import backend as K

__all__ = ["Constraint", "MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm", "max_norm", "non_neg", "unit_norm",
           "min_max_norm", "maxnorm", "nonneg", "unitnorm", "get", "serialize", "deserialize"]


def _norms(w: _g.Tensor, axis: Any) -> _g.Tensor:
    # the L2 norm of each slice along `axis`, kept broadcastable against w
    return _m.sqrt(_m.reduce_sum(_m.square(w), axis=axis, keepdims=True))


class Constraint:
    """Base class: `__call__(w)` returns the projected weights (the identity here)."""

    def __call__(self, w: Any) -> Any:
        return w

    def get_config(self) -> Dict[str, Any]:
        return {}

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "Constraint":
        return cls(**config)


class MaxNorm(Constraint):
    """Rescales each slice along `axis` whose L2 norm exceeds `max_value` down to it."""

    def __init__(self, max_value: float = 2, axis: Any = 0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w: Any) -> Any:
        w = _g.convert_to_tensor(w)
        norms = _norms(w, self.axis)
        desired = _m.clip_by_value(norms, 0.0, self.max_value)
        return w * (desired / (K.epsilon() + norms))

    def get_config(self) -> Dict[str, Any]:
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Zeroes the negative weights."""

    def __call__(self, w: Any) -> Any:
        w = _g.convert_to_tensor(w)
        return w * _m.cast(_m.greater_equal(w, 0.0), w.dtype)


class UnitNorm(Constraint):
    """Scales each slice along `axis` to unit L2 norm (up to epsilon)."""

    def __init__(self, axis: Any = 0):
        self.axis = axis

    def __call__(self, w: Any) -> Any:
        w = _g.convert_to_tensor(w)
        return w / (K.epsilon() + _norms(w, self.axis))

    def get_config(self) -> Dict[str, Any]:
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Moves each slice's L2 norm into [min_value, max_value], a fraction `rate` of the way."""

    def __init__(self, min_value: float = 0.0, max_value: float = 1.0, rate: float = 1.0, axis: Any = 0):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w: Any) -> Any:
        w = _g.convert_to_tensor(w)
        norms = _norms(w, self.axis)
        desired = self.rate * _m.clip_by_value(norms, self.min_value, self.max_value) + (1 - self.rate) * norms
        return w * (desired / (K.epsilon() + norms))

    def get_config(self) -> Dict[str, Any]:
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate, "axis": self.axis}


# Keras's lower-case aliases (the names configs and strings use)
max_norm = maxnorm = MaxNorm
non_neg = nonneg = NonNeg
unit_norm = unitnorm = UnitNorm
min_max_norm = MinMaxNorm

_BY_NAME: Dict[str, type] = {"MaxNorm": MaxNorm, "NonNeg": NonNeg, "UnitNorm": UnitNorm, "MinMaxNorm": MinMaxNorm,
                             "Constraint": Constraint, "max_norm": MaxNorm, "non_neg": NonNeg,
                             "unit_norm": UnitNorm, "min_max_norm": MinMaxNorm, "maxnorm": MaxNorm,
                             "nonneg": NonNeg, "unitnorm": UnitNorm}


def serialize(constraint: Any) -> Any:
    """{"class_name", "config"} of a Constraint (None stays None)."""
    if constraint is None:
        return None
    if isinstance(constraint, Constraint):
        return {"class_name": type(constraint).__name__, "config": constraint.get_config()}
    raise ValueError(f"Cannot serialize constraint {constraint!r}: not a tf.keras.constraints.Constraint")


def deserialize(config: Any, custom_objects: Optional[Dict[str, Any]] = None) -> Any:
    """The Constraint a {"class_name", "config"} (or a name) describes."""
    custom = dict(custom_objects or {})
    if isinstance(config, str):
        config = {"class_name": config, "config": {}}
    name, cfg = config["class_name"], dict(config.get("config") or {})
    cls = custom.get(name) or _BY_NAME.get(name)
    if cls is None:
        raise ValueError(f"Unknown constraint: {name}")
    return cls.from_config(cfg) if hasattr(cls, "from_config") else cls(**cfg)


def get(identifier: Any) -> Optional[Callable[[Any], Any]]:
    """A constraint from None, a name ("max_norm", "non_neg", ...), a config dict or a callable."""
    if identifier is None:
        return None
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret constraint identifier: {identifier}")
