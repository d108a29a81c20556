"""tf.keras.regularizers: the Regularizer base class, L1L2 (TF 1.15's one class) with L1 and L2
(tf_keras 2.x's), the l1 / l2 / l1_l2 functions returning L1L2, and get / serialize /
deserialize.  A layer's kernel_regularizer=L1L2(...) is written in its config as
{"class_name": "L1L2", "config": {"l1": ..., "l2": ...}} and read back by load_model; a custom
Regularizer subclass is written by its get_config and read back through custom_objects.
Keras's l2 term is l2 * sum(w^2) (no 1/2, unlike tf.nn.l2_loss)."""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

__all__ = ["Regularizer", "L1L2", "L1", "L2", "l1", "l2", "l1_l2", "get", "serialize", "deserialize"]


class Regularizer:
    """The base class: __call__(x) -> a scalar loss tensor; get_config / from_config."""

    def __call__(self, x: Any) -> Any:
        return 0.0

    def get_config(self) -> Dict[str, Any]:
        return {}

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "Regularizer":
        return cls(**config)

    @property
    def _keras_config(self) -> Tuple[str, Dict[str, Any]]:
        # what saving.py writes for a layer's *_regularizer argument
        return type(self).__name__, self.get_config()


def _floatx(v: Any) -> float:
    # Keras keeps the factors as floatx scalars: configs show float32's value (0.003 -> 0.003000000026...)
    import numpy as np
    from .backend import floatx
    return float(np.asarray(0.0 if v is None else v, dtype=floatx()))


def _penalty(x: Any, l1: float, l2: float) -> Any:
    import collflow as cf  # the ops (on use: keras sits above them)
    x = cf.convert_to_tensor(x)
    out = cf.constant(0.0, dtype=x.dtype)
    if l1:
        out = out + cf.constant(l1, dtype=x.dtype) * cf.reduce_sum(cf.abs(x))
    if l2:
        out = out + cf.constant(l2, dtype=x.dtype) * cf.reduce_sum(cf.square(x))
    return out


class L1L2(Regularizer):
    """l1 * sum(|x|) + l2 * sum(x^2)."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0):  # noqa: E741
        self.l1, self.l2 = _floatx(l1), _floatx(l2)

    def __call__(self, x: Any) -> Any:
        return _penalty(x, self.l1, self.l2)

    def get_config(self) -> Dict[str, Any]:
        return {"l1": self.l1, "l2": self.l2}


class L1(Regularizer):
    """l1 * sum(|x|) (tf_keras 2.x's class; config {"l1": ...})."""

    def __init__(self, l1: float = 0.01, **kwargs: Any):  # noqa: E741
        l1 = kwargs.pop("l", l1)  # Keras's alias
        if kwargs:
            raise TypeError(f"L1: unexpected arguments {sorted(kwargs)}")
        self.l1 = _floatx(l1)

    def __call__(self, x: Any) -> Any:
        return _penalty(x, self.l1, 0.0)

    def get_config(self) -> Dict[str, Any]:
        return {"l1": self.l1}


class L2(Regularizer):
    """l2 * sum(x^2) (tf_keras 2.x's class; config {"l2": ...})."""

    def __init__(self, l2: float = 0.01, **kwargs: Any):  # noqa: E741
        l2 = kwargs.pop("l", l2)
        if kwargs:
            raise TypeError(f"L2: unexpected arguments {sorted(kwargs)}")
        self.l2 = _floatx(l2)

    def __call__(self, x: Any) -> Any:
        return _penalty(x, 0.0, self.l2)

    def get_config(self) -> Dict[str, Any]:
        return {"l2": self.l2}


def l1(l: float = 0.01) -> L1L2:  # noqa: E741  (Keras's name)
    """L1L2(l1=l), as TF 1.15's."""
    return L1L2(l1=l)


def l2(l: float = 0.01) -> L1L2:  # noqa: E741
    """L1L2(l2=l), as TF 1.15's."""
    return L1L2(l2=l)


def l1_l2(l1: float = 0.01, l2: float = 0.01) -> L1L2:  # noqa: E741
    return L1L2(l1=l1, l2=l2)


_CLASSES = {"Regularizer": Regularizer, "L1L2": L1L2, "L1": L1, "L2": L2}
_NAMES = {"l1": L1, "l2": L2, "l1_l2": L1L2}


def serialize(regularizer: Any) -> Dict[str, Any]:
    """{"class_name", "config"} of a regularizer (one of Keras's functions' results included)."""
    cfg = getattr(regularizer, "_keras_config", None)
    if cfg is None:
        raise ValueError(f"Cannot serialize {regularizer!r}: not a Keras regularizer")
    return {"class_name": cfg[0], "config": dict(cfg[1])}


def deserialize(config: Any, custom_objects: Optional[Dict[str, Any]] = None) -> Any:
    """The regularizer serialize described; a name ("l2") gives that class with its defaults."""
    custom = dict(custom_objects or {})
    if isinstance(config, str):
        cls = custom.get(config) or _NAMES.get(config) or _CLASSES.get(config)
        if cls is None:
            raise ValueError(f"Unknown regularizer: {config}")
        return cls() if isinstance(cls, type) else cls
    name = config.get("class_name")
    cls = custom.get(name) or _CLASSES.get(name) or _NAMES.get(str(name))
    if cls is None:
        raise ValueError(f"Unknown regularizer: {name}")
    cfg = dict(config.get("config") or {})
    return cls.from_config(cfg) if hasattr(cls, "from_config") else cls(**cfg)


def get(identifier: Any) -> Any:
    """None, a regularizer, a callable, a name or a {"class_name", "config"} dict -> a regularizer."""
    if identifier is None:
        return None
    if isinstance(identifier, (dict, str)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier: {identifier}")
