"""tf.keras.utils' generic helpers (TF 1.15): Progbar, the custom-object registry
(CustomObjectScope / custom_object_scope / get_custom_objects, which load_model,
model_from_json and layer deserialization consult), serialize_keras_object /
deserialize_keras_object, normalize and get_source_inputs."""
from __future__ import annotations

import inspect
import sys
import time
from typing import Any, Dict, Iterable, List, Optional

import numpy as np

__all__ = ["Progbar", "CustomObjectScope", "custom_object_scope", "get_custom_objects", "serialize_keras_object",
           "deserialize_keras_object", "normalize", "get_source_inputs", "register_keras_serializable",
           "get_registered_name", "get_registered_object", "to_ordinal", "enable_interactive_logging",
           "disable_interactive_logging", "is_interactive_logging_enabled"]

# the process-wide registry: name -> class or function, as Keras's global custom objects
_GLOBAL_CUSTOM_OBJECTS: Dict[str, Any] = {}


def get_custom_objects() -> Dict[str, Any]:
    """The global custom-object dict itself (add to it: get_custom_objects()["name"] = obj)."""
    return _GLOBAL_CUSTOM_OBJECTS


class CustomObjectScope:
    """`with CustomObjectScope({"name": obj}, ...):` adds the dicts to the global custom objects
    for the block and restores the previous registry on exit."""

    def __init__(self, *args: Dict[str, Any]):
        self.custom_objects = args
        self.backup: Optional[Dict[str, Any]] = None

    def __enter__(self) -> "CustomObjectScope":
        self.backup = dict(_GLOBAL_CUSTOM_OBJECTS)
        for objects in self.custom_objects:
            _GLOBAL_CUSTOM_OBJECTS.update(objects)
        return self

    def __exit__(self, *args: Any) -> None:
        _GLOBAL_CUSTOM_OBJECTS.clear()
        _GLOBAL_CUSTOM_OBJECTS.update(self.backup or {})


def custom_object_scope(*args: Dict[str, Any]) -> CustomObjectScope:
    """The CustomObjectScope of the given dicts (a `with` statement's object)."""
    return CustomObjectScope(*args)


_REGISTERED_NAMES: Dict[Any, str] = {}  # object -> "package>name" (tf_keras 2.x's registry)


def register_keras_serializable(package: str = "Custom", name: Optional[str] = None) -> Any:
    """A decorator registering a class or function as "package>name" in the global custom
    objects (tf_keras 2.x; TF 1.15 had no such decorator)."""
    def decorate(obj: Any) -> Any:
        key = f"{package}>{name or obj.__name__}"
        if key in _GLOBAL_CUSTOM_OBJECTS:
            raise ValueError(f"{key} has already been registered to {_GLOBAL_CUSTOM_OBJECTS[key]}")
        _GLOBAL_CUSTOM_OBJECTS[key] = obj
        _REGISTERED_NAMES[obj] = key
        return obj
    return decorate


def get_registered_name(obj: Any) -> str:
    """The name obj was registered under, else its __name__."""
    return _REGISTERED_NAMES.get(obj, getattr(obj, "__name__", None))


def get_registered_object(name: str, custom_objects: Optional[Dict[str, Any]] = None,
                          module_objects: Optional[Dict[str, Any]] = None) -> Any:
    """The object registered (globally, or in custom_objects / module_objects) as name, else None."""
    for table in (_GLOBAL_CUSTOM_OBJECTS, custom_objects or {}, module_objects or {}):
        if name in table:
            return table[name]
    return None


def _is_keras_layer(obj: Any) -> bool:
    from .layers import _KerasMixin
    return isinstance(obj, _KerasMixin)


def serialize_keras_object(instance: Any) -> Any:
    """{"class_name", "config"} of an object with get_config (a layer's as model configs write
    it), a function's or class's __name__, None for None."""
    if instance is None:
        return None
    if _is_keras_layer(instance):
        from .saving import serialize_layer
        return serialize_layer(instance)
    if hasattr(instance, "get_config"):
        return {"class_name": type(instance).__name__, "config": instance.get_config()}
    if hasattr(instance, "__name__"):
        return instance.__name__
    raise ValueError(f"Cannot serialize {instance!r}")


def deserialize_keras_object(identifier: Any, module_objects: Optional[Dict[str, Any]] = None,
                             custom_objects: Optional[Dict[str, Any]] = None,
                             printable_module_name: str = "object") -> Any:
    """The object a serialized form names: a {"class_name", "config"} dict (made with the
    class's from_config, or its constructor) or a name, looked up in custom_objects, then the
    global custom objects, then module_objects.  With module_objects None a Keras layer's
    class name also finds collflow's built-in layers."""
    custom = custom_objects or {}
    module_objects = module_objects or {}
    if isinstance(identifier, dict):
        if "class_name" not in identifier or "config" not in identifier:
            raise ValueError(f"Improper config format: {identifier}")
        name, cfg = identifier["class_name"], identifier["config"]
        cls = custom.get(name) or _GLOBAL_CUSTOM_OBJECTS.get(name) or module_objects.get(name)
        if cls is None:
            from .saving import _layer_classes, deserialize_layer
            if not module_objects and name in _layer_classes():
                return deserialize_layer(identifier, custom)
            raise ValueError(f"Unknown {printable_module_name}: {name}")
        if hasattr(cls, "from_config"):
            try:
                takes_custom = "custom_objects" in inspect.signature(cls.from_config).parameters
            except (TypeError, ValueError):
                takes_custom = False
            if takes_custom:
                return cls.from_config(cfg, custom_objects={**_GLOBAL_CUSTOM_OBJECTS, **custom})
            with CustomObjectScope(custom):
                return cls.from_config(cfg)
        with CustomObjectScope(custom):
            return cls(**cfg)
    if isinstance(identifier, str):
        found = custom.get(identifier) or _GLOBAL_CUSTOM_OBJECTS.get(identifier) or module_objects.get(identifier)
        if found is None:
            raise ValueError(f"Unknown {printable_module_name}: {identifier}")
        return found
    raise ValueError(f"Could not interpret serialized {printable_module_name}: {identifier}")


def normalize(x: Any, axis: int = -1, order: int = 2) -> np.ndarray:
    """x divided by its `order`-norm along `axis` (a zero norm left as 1)."""
    x = np.asarray(x)
    norm = np.atleast_1d(np.linalg.norm(x, order, axis))
    norm[norm == 0] = 1
    return x / np.expand_dims(norm, axis)


def get_source_inputs(tensor: Any, layer: Any = None, node_index: Any = None) -> List[Any]:
    """The input tensors (Keras Inputs or tensors no layer made) `tensor` is computed from,
    each once, in the order a depth-first walk of its layers' calls meets them."""
    from .layers import history_of
    out: List[Any] = []
    seen: set = set()

    def walk(t: Any) -> None:
        if id(t) in seen:
            return
        seen.add(id(t))
        rec = history_of(t)
        if rec is None or not rec[1]:
            out.append(t)
            return
        inputs = rec[1] if isinstance(rec[1], (list, tuple)) else [rec[1]]
        for i in inputs:
            walk(i)
    walk(tensor)
    return out


_INTERACTIVE = [True]


def enable_interactive_logging() -> None:
    """Progress text to stdout (the default; tf_keras 2.x)."""
    _INTERACTIVE[0] = True


def disable_interactive_logging() -> None:
    """Progress text to tf.logging's INFO instead of stdout (tf_keras 2.x)."""
    _INTERACTIVE[0] = False


def is_interactive_logging_enabled() -> bool:
    return _INTERACTIVE[0]


def _write(text: str) -> None:
    if _INTERACTIVE[0]:
        sys.stdout.write(text)
        sys.stdout.flush()
    elif text.strip():
        from ..platform import tf_logging
        tf_logging.info(text.strip("\b\r\n"))


def to_ordinal(y: Any, num_classes: Optional[int] = None, dtype: str = "float32") -> np.ndarray:
    """Ordinal rows of integer labels: class k as k ones then zeros, num_classes - 1 columns
    (tf_keras 2.x)."""
    y = np.asarray(y, dtype=int)
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    y = y.ravel()
    n = int(num_classes or (y.max() + 1 if y.size else 1))
    out = (np.arange(n - 1)[None, :] < y[:, None]).astype(dtype)
    return out.reshape(shape + (n - 1,))


def _format_eta(eta: float) -> str:
    if eta > 3600:
        return "%d:%02d:%02d" % (eta // 3600, (eta % 3600) // 60, eta % 60)
    if eta > 60:
        return "%d:%02d" % (eta // 60, eta % 60)
    return "%ds" % eta


def _format_value(avg: float) -> str:
    return " %.4f" % avg if abs(avg) > 1e-3 else " %.4e" % avg


class Progbar:
    """Keras's progress bar: `update(current, values)` draws
    ` 32/100 [=========>....................] - ETA: 1s - loss: 0.3120` on stdout (values are
    averaged over the steps since they were given, save the stateful_metrics, shown as given);
    verbose=2 writes one line when current reaches the target."""

    def __init__(self, target: Optional[int], width: int = 30, verbose: int = 1, interval: float = 0.05,
                 stateful_metrics: Optional[Iterable[str]] = None, unit_name: str = "step"):
        self.target, self.width, self.verbose, self.interval = target, width, verbose, interval
        self.unit_name = unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        # redraw in place on a terminal or notebook; on POSIX Keras always does (posix is loaded)
        self._dynamic_display = ((hasattr(sys.stdout, "isatty") and sys.stdout.isatty())
                                 or "ipykernel" in sys.modules or "posix" in sys.modules)
        self._total_width = 0
        self._seen_so_far = 0
        self._values: Dict[str, list] = {}
        self._values_order: List[str] = []
        self._start = time.time()
        self._last_update = 0.0

    def _accumulate(self, current: int, values: Iterable[Any]) -> None:
        steps = current - self._seen_so_far
        for k, v in values:
            if k not in self._values_order:
                self._values_order.append(k)
            if k in self.stateful_metrics:
                self._values[k] = [v, 1]  # shown as given, formatted as an average
            elif k in self._values:
                self._values[k][0] += v * steps
                self._values[k][1] += steps
            else:
                self._values[k] = [v * steps, steps]
        self._seen_so_far = current

    def _bar(self, current: int) -> str:
        if self.target is None:
            return "%7d/Unknown" % current
        digits = int(np.log10(self.target)) + 1
        bar = ("%" + str(digits) + "d/%d [") % (current, self.target)
        filled = int(self.width * float(current) / self.target)
        if filled > 0:
            bar += "=" * (filled - 1) + (">" if current < self.target else "=")
        return bar + "." * (self.width - filled) + "]"

    def _values_text(self) -> str:
        text = ""
        for k in self._values_order:
            total, count = self._values[k]
            text += " - %s:" % k + _format_value(float(np.mean(total / max(1, count))))
        return text

    def update(self, current: int, values: Optional[Iterable[Any]] = None) -> None:
        """Shows the progress at step `current` with (name, value) pairs."""
        self._accumulate(current, values or [])
        now = time.time()
        elapsed = " - %.0fs" % (now - self._start)
        done = self.target is not None and current >= self.target
        if self.verbose == 1:
            if now - self._last_update < self.interval and self.target is not None and not done:
                return
            previous = self._total_width
            bar = self._bar(current)
            self._total_width = len(bar)
            per_unit = (now - self._start) / current if current else 0
            if self.target is not None and not done:
                info = " - ETA: " + _format_eta(per_unit * (self.target - current))
            elif per_unit >= 1 or per_unit == 0:
                info = elapsed + " %.0fs/%s" % (per_unit, self.unit_name)
            elif per_unit >= 1e-3:
                info = elapsed + " %.0fms/%s" % (per_unit * 1e3, self.unit_name)
            else:
                info = elapsed + " %.0fus/%s" % (per_unit * 1e6, self.unit_name)
            info += self._values_text()
            self._total_width += len(info)
            if previous > self._total_width:  # blank what the longer previous line left
                info += " " * (previous - self._total_width)
            if done:
                info += "\n"
            _write(("\b" * previous + "\r" if self._dynamic_display else "\n") + bar + info)
        elif self.verbose == 2 and done:
            digits = int(np.log10(self.target)) + 1
            _write(("%" + str(digits) + "d/%d") % (current, self.target) + elapsed + self._values_text() + "\n")
        self._last_update = now

    def add(self, n: int, values: Optional[Iterable[Any]] = None) -> None:
        """update() n steps further on."""
        self.update(self._seen_so_far + n, values)
