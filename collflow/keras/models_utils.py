"""tf.keras.models.clone_model (Sequential and functional models, on new inputs or given
input_tensors, each layer remade by clone_function: new, freshly initialized weights) and
model_from_yaml / Model.to_yaml (PyYAML, optional)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from .layers import Input, InputLayer
from .saving import _with_global_objects, deserialize_layer, model_from_config, model_to_config, serialize_layer

__all__ = ["clone_model", "model_from_yaml", "to_yaml", "convert_kernel", "convert_all_kernels_in_model",
           "multi_gpu_model"]

_YAML_MESSAGE = "Requires yaml module installed (`pip install pyyaml`)."


def _default_clone(layer: Any) -> Any:
    """A new layer of the same class and config (weights made anew when it is called)."""
    from .engine import Model
    if isinstance(layer, Model):
        return clone_model(layer)
    return deserialize_layer(serialize_layer(layer), _with_global_objects(None))


def _as_list(x: Any) -> List[Any]:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _clone_sequential(model: Any, input_tensors: Any, clone: Callable[[Any], Any]) -> Any:
    from .engine import Sequential
    layers = [clone(la) for la in list(model.layers) + list(getattr(model, "_pending", []))
              if not isinstance(la, InputLayer)]
    if input_tensors is None:
        return Sequential(layers=layers, name=model.name)
    tensors = _as_list(input_tensors)
    if len(tensors) != 1:
        raise ValueError("To clone a `Sequential` model, we expect  at most one tensor as part of "
                         "`input_tensors`.")
    x = tensors[0]
    if not hasattr(x, "op") or x.op.type != "Placeholder":  # Keras wraps a non-Input tensor
        x = Input(tensor=x, name="input_wrapper_for_" + x.op.name)
    out = Sequential(name=model.name)
    out.add(InputLayer(input_tensor=x))
    for la in layers:
        out.add(la)
    return out


def _clone_functional(model: Any, input_tensors: Any, clone: Callable[[Any], Any]) -> Any:
    from .engine import Model
    new: Dict[int, Any] = {}  # id(original tensor) -> its counterpart in the clone
    if input_tensors is None:
        t_layers = model.inputs[0].graph.__dict__.get("_keras_input_layers", {}) if model.inputs else {}
        for t in model.inputs:
            source = t_layers.get(t.name)
            name = source.name if source is not None else t.op.name
            x = Input(batch_shape=t.shape.as_list(), dtype=t.dtype.name, name=name)
            made_layer = x.graph.__dict__.get("_keras_input_layers", {}).get(x.name)
            if made_layer is not None:  # Keras's clone keeps the input layers' names (the ops get new ones)
                made_layer.name = name
            new[id(t)] = x
    else:
        tensors = _as_list(input_tensors)
        if len(tensors) != len(model.inputs):
            raise ValueError(f"the model has {len(model.inputs)} inputs, input_tensors gives {len(tensors)}")
        for t, given in zip(model.inputs, tensors):
            if not hasattr(given, "op") or given.op.type != "Placeholder":
                given = Input(tensor=given, name="input_wrapper_for_" + t.op.name)
            new[id(t)] = given
    inside = getattr(model, "_nodes", None)
    made: Dict[int, Any] = {}
    pending = []
    for layer in model.layers:
        if isinstance(layer, InputLayer):
            continue
        calls = layer.__dict__.get("_keras_calls", [])
        pending += [(layer, k) for k in range(len(calls)) if inside is None or (id(layer), k) in inside]
    # a call runs once its inputs are made (a shared layer's calls in their order)
    while pending:
        left = []
        for layer, k in pending:
            ins = _as_list(layer.__dict__["_keras_calls"][k][0])
            if not all(id(i) in new for i in ins):
                left.append((layer, k))
                continue
            if id(layer) not in made:
                made[id(layer)] = clone(layer)
            args = [new[id(i)] for i in ins]
            out = made[id(layer)](args if isinstance(layer.__dict__["_keras_calls"][k][0], (list, tuple)) else args[0])
            for o, n in zip(_as_list(layer.__dict__["_keras_calls"][k][1]), _as_list(out)):
                new[id(o)] = n
        if len(left) == len(pending):
            raise ValueError("clone_model: the model's layers cannot be connected from its inputs")
        pending = left
    inputs = [new[id(t)] for t in model.inputs]
    outputs = [new[id(t)] for t in model.outputs]
    return Model(inputs, outputs if len(outputs) > 1 else outputs[0], name=model.name)


def clone_model(model: Any, input_tensors: Any = None, clone_function: Optional[Callable[[Any], Any]] = None) -> Any:
    """A new model of the same structure: each layer replaced by clone_function(layer) (default:
    a new layer of the same config, so the weights are new and freshly initialized, not
    copied), on new Inputs or on input_tensors.  Subclassed models cannot be cloned."""
    from .engine import Model, Sequential
    if not isinstance(model, Model):
        raise ValueError(f"Expected `model` argument to be a `Model` instance, got {model}")
    if getattr(model, "_subclassed", False) and not isinstance(model, Sequential):
        raise ValueError("Expected `model` argument to be a functional `Model` instance, but got a subclass "
                         f"model instead: {model}")
    clone = clone_function or _default_clone
    if isinstance(model, Sequential):
        return _clone_sequential(model, input_tensors, clone)
    return _clone_functional(model, input_tensors, clone)


def _yaml() -> Any:
    try:
        import yaml  # noqa: F401  (an optional package)
    except ImportError:
        raise ImportError(_YAML_MESSAGE) from None
    return yaml


def to_yaml(model: Any, **kwargs: Any) -> str:
    """The model's config as YAML (Model.to_yaml)."""
    return _yaml().dump(model_to_config(model), **kwargs)


def model_from_yaml(yaml_string: str, custom_objects: Optional[Dict[str, Any]] = None) -> Any:
    """The model a YAML config (to_yaml's) describes, with new weights."""
    config = _yaml().safe_load(yaml_string)
    return model_from_config(config, custom_objects)



def convert_kernel(kernel: Any) -> Any:
    """A convolution kernel flipped along its spatial axes (Theano's and TF's conventions)."""
    import numpy as np
    kernel = np.asarray(kernel)
    if not 3 <= kernel.ndim <= 5:
        raise ValueError(f"Invalid kernel shape: {kernel.shape}")
    return np.copy(kernel[(slice(None, None, -1),) * (kernel.ndim - 2) + (slice(None), slice(None))])


def convert_all_kernels_in_model(model: Any) -> None:
    """Flips the kernels of the model's Conv1D/2D/3D and Conv2DTranspose layers in place
    (TF 1.15's deprecated Theano converter)."""
    from . import backend as K
    from ..platform import tf_logging as logging
    logging.warning("convert_all_kernels_in_model (from tensorflow.python.keras.utils.layer_utils) is deprecated "
                    "and will be removed in a future version.")
    pairs = [(layer.kernel, convert_kernel(K.get_value(layer.kernel))) for layer in model.layers
             if type(layer).__name__ in ("Conv1D", "Conv2D", "Conv3D", "Conv2DTranspose")]
    K.batch_set_value(pairs)


def multi_gpu_model(model: Any, gpus: Any, cpu_merge: bool = True, cpu_relocation: bool = False) -> Any:
    """TF 1.15's data-parallel replica model: collflow's Keras places a model on one device, so
    this answers as TF does on a machine without the requested GPUs (its ValueErrors)."""
    targets = list(gpus) if isinstance(gpus, (list, tuple)) else None
    count = len(targets) if targets is not None else int(gpus)
    if count <= 1:
        raise ValueError("For multi-gpu usage to be effective, call `multi_gpu_model` with `gpus >= 2`. "
                         f"Received: `gpus={gpus}`")
    wanted = [f"/gpu:{g}" for g in (targets if targets is not None else range(count))]
    raise ValueError(f"To call `multi_gpu_model` with `gpus={gpus}`, we expect the following devices to be "
                     f"available: {wanted}. However this machine only has: ['/cpu:0']. Try reducing `gpus`.")
