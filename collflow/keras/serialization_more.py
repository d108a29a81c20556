"""tf.keras.activations.serialize / deserialize and tf.keras.initializers.serialize / deserialize
(TF 1.15's): an activation is written as its name, an initializer as {"class_name", "config"}."""
from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Optional

from ..graph import initializers as _init
from . import initializers as _kinit
from .losses import _ACTIVATIONS

__all__ = ["serialize_activation", "deserialize_activation", "serialize_initializer", "deserialize_initializer",
           "swish", "mish"]


def swish(x: Any) -> Any:
    """x * sigmoid(x) (tf_keras 2.x's; TF 1.15 had none)."""
    import collflow as cf
    return cf.nn.swish(x) if hasattr(cf.nn, "swish") else x * cf.sigmoid(x)


def mish(x: Any) -> Any:
    """x * tanh(softplus(x)) (tf_keras 2.x's)."""
    import collflow as cf
    return x * cf.tanh(cf.nn.softplus(x))


# layers find them by name (activation="swish") and configs write the name
_ACTIVATIONS.setdefault("swish", swish)
_ACTIVATIONS.setdefault("mish", mish)


def serialize_activation(activation: Callable) -> str:
    """The Keras name of a built-in activation function (its __name__ for another function)."""
    for name, fn in _ACTIVATIONS.items():
        if fn is activation:
            return name
    name = getattr(activation, "__name__", None)
    if name is None:
        raise ValueError(f"Cannot serialize activation {activation!r}")
    return name


def deserialize_activation(name: str, custom_objects: Optional[Dict[str, Any]] = None) -> Callable:
    """The activation function named `name` (custom ones through custom_objects)."""
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"Unknown activation function:{name}") from None


def serialize_initializer(initializer: Any) -> Dict[str, Any]:
    """{"class_name", "config"} of an initializer (its get_config, without the dtype, as Keras's)."""
    if not isinstance(initializer, _init.Initializer):
        raise ValueError(f"Cannot serialize {initializer!r}: not an initializer")
    cfg = {k: v for k, v in initializer.get_config().items() if k != "dtype"}
    return {"class_name": type(initializer).__name__, "config": cfg}


def deserialize_initializer(config: Any, custom_objects: Optional[Dict[str, Any]] = None) -> Any:
    """The initializer a {"class_name", "config"} dict or a name describes (Keras's defaults)."""
    if isinstance(config, str):
        if custom_objects and config in custom_objects:
            obj = custom_objects[config]
            return obj() if isinstance(obj, type) else obj
        return _kinit.get(config)
    name, cfg = config.get("class_name"), dict(config.get("config") or {})
    cls = (custom_objects or {}).get(name) or getattr(_kinit, name, None) or getattr(_init, name, None)
    if cls is None and isinstance(name, str):
        cls = _kinit._BY_NAME.get(name) or _kinit._BY_NAME.get(name.lower())
    if not (isinstance(cls, type) and issubclass(cls, _init.Initializer)):
        if cls is not None and hasattr(cls, "from_config"):
            return cls.from_config(cfg)
        raise ValueError(f"Unknown initializer: {name}")
    params = inspect.signature(cls.__init__).parameters
    return cls(**{k: v for k, v in cfg.items() if k in params})
