"""Whole Keras models to HDF5 and back (model.save / tf.keras.models.load_model), and their
configs as JSON (to_json / model_from_json), in Keras's schema: root attributes model_config
({"class_name": "Sequential" | "Model", "config": ...}) and training_config, the weights in
group model_weights (the save_weights layout).  Files of Sequential and functional models of
the built-in layers load in either library.  With include_optimizer (the default) a Keras
optimizer's state (iterations and slots, optimizer.weights) goes to group optimizer_weights
as Keras writes it; load_model compiles, makes the optimizer's state and sets it, so training
resumes where it stopped.  A tf.train optimizer's is not saved (Keras's TFOptimizer: no state
nor training config)."""
from __future__ import annotations

import inspect
import json
import os
from typing import Any, Dict, List, Optional

import numpy as np

from ..graph import initializers as _init
from ..platform import tf_logging as logging
from ..platform.atomic_files import temporary_name
from . import losses as _losses

__all__ = ["save_model", "load_model", "model_to_config", "model_from_config", "model_from_json",
           "serialize_layer", "deserialize_layer"]

_KERAS_VERSION = b"2.2.4-tf"
# constructor arguments that only describe the layer (handled by the Layer base)
_COMMON = ("name", "trainable", "dtype", "batch_input_shape")
# Keras arguments collflow's layer classes take through **kwargs (written to and read from configs)
_EXTRA = ("activity_regularizer", "kernel_constraint", "bias_constraint", "embeddings_constraint",
          "beta_constraint", "gamma_constraint", "recurrent_constraint", "depthwise_constraint",
          "pointwise_constraint")


def _layer_classes() -> Dict[str, type]:
    import importlib
    # by module path: the package's `layers` attribute is tf.keras.layers' namespace
    mods = [importlib.import_module(f"collflow.keras.{m}") for m in ("layers", "layers_more", "recurrent",
                                                                     "op_layer", "rnn_cells", "rnn_layer",
                                                                     "conv_recurrent", "layers_attention",
                                                                     "layers_other", "layers_local", "layers_wrap",
                                                                     "layers_v2", "layers_v2_more")]
    out: Dict[str, type] = {}
    for mod in mods:
        for n in mod.__all__:
            v = getattr(mod, n)
            if isinstance(v, type):
                out[n] = v
    out["InputLayer"] = mods[0].InputLayer
    return out


# -- values ----------------------------------------------------------------------------------

def _serialize(v: Any) -> Any:
    """A constructor argument as Keras writes it."""
    from .layers import _KerasMixin
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_serialize(e) for e in v]
    if isinstance(v, dict):
        return {k: _serialize(e) for k, e in v.items()}
    if isinstance(v, _init.Initializer):
        cfg = {k: e for k, e in v.get_config().items() if k != "dtype"}
        return {"class_name": type(v).__name__, "config": _serialize(cfg)}
    from .base_layer import Layer as _UserLayer
    if isinstance(v, (_KerasMixin, _UserLayer)):  # _UserLayer: an RNN's cell (a built-in or user one)
        return serialize_layer(v)
    from .constraints import Constraint, serialize as _serialize_constraint
    if isinstance(v, Constraint):
        return _serialize_constraint(v)
    if getattr(v, "_keras_config", None) is not None:  # a regularizer
        name, cfg = v._keras_config
        return {"class_name": name, "config": cfg}
    if callable(v):
        for name, fn in _losses._ACTIVATIONS.items():
            if fn is v:
                return name
    raise TypeError(f"cannot save {v!r} in a Keras config (a custom function or object: give it by name)")


def _deserialize(key: str, v: Any, custom_objects: Dict[str, Any]) -> Any:
    if isinstance(v, dict) and "class_name" in v and "config" in v:
        name, cfg = v["class_name"], dict(v["config"] or {})
        if name in custom_objects:
            obj = custom_objects[name]
            return obj.from_config(cfg) if hasattr(obj, "from_config") else obj(**cfg)
        if name in ("L1L2", "L1", "L2"):
            from .regularizer_classes import deserialize as _deserialize_regularizer
            return _deserialize_regularizer(v)
        if name in _layer_classes():
            return deserialize_layer(v, custom_objects)
        from . import constraints as _constraints
        if name in _constraints._BY_NAME:
            return _constraints.deserialize(v)
        from . import initializers as _kinit
        cls = getattr(_kinit, name, None) or getattr(_init, name, None)  # Keras's defaults first
        if isinstance(cls, type) and issubclass(cls, _init.Initializer):
            params = inspect.signature(cls.__init__).parameters
            return cls(**{k: e for k, e in cfg.items() if k in params})
        raise ValueError(f"Unknown {key} in a Keras config: {name} (pass it in custom_objects)")
    if isinstance(v, str) and v in custom_objects:
        return custom_objects[v]
    if isinstance(v, list) and v and all(isinstance(e, dict) and "class_name" in e for e in v):
        return [_deserialize(key, e, custom_objects) for e in v]  # StackedRNNCells' cells
    return v


def _with_global_objects(custom_objects: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """custom_objects over the global ones (tf.keras.utils.get_custom_objects / CustomObjectScope)."""
    from .generic_utils import get_custom_objects
    return {**get_custom_objects(), **(custom_objects or {})}


# -- layers ----------------------------------------------------------------------------------

# arguments newer than TF 1.15's Keras, written only when not at their default
_NEWER_ARGS = {"keepdims": False}


def serialize_layer(layer: Any) -> Dict[str, Any]:
    """{"class_name", "config"} of a layer: the arguments it was made with, with their defaults."""
    if hasattr(layer, "get_config") and not hasattr(layer, "_init_args"):
        return {"class_name": type(layer).__name__, "config": layer.get_config()}
    args, kwargs = getattr(layer, "_init_args", ((), {}))
    sig = inspect.signature(type(layer).__init__)
    bound = sig.bind(layer, *args, **kwargs)
    bound.apply_defaults()
    cfg: Dict[str, Any] = {"name": layer.name, "trainable": bool(getattr(layer, "trainable", True)),
                           "dtype": "float32"}
    if getattr(layer, "_batch_input_shape", None) is not None:
        cfg["batch_input_shape"] = list(layer._batch_input_shape)
    for k, v in bound.arguments.items():
        if k == "self" or sig.parameters[k].kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if _NEWER_ARGS.get(k, object()) == v:
            continue  # left out at its default, so TF 1.15's Keras (which lacks it) reads the file
        cfg[k] = _serialize(v)
    for k in _EXTRA:  # given through **kwargs: Keras writes them (null when not given)
        if k not in cfg and any(p.kind == inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
            if kwargs.get(k) is not None:
                from .constraints import get as _get_constraint
                cfg[k] = _serialize(_get_constraint(kwargs[k]) if k.endswith("_constraint") else kwargs[k])
    return {"class_name": type(layer).__name__, "config": cfg}


def deserialize_layer(data: Dict[str, Any], custom_objects: Optional[Dict[str, Any]] = None) -> Any:
    """The layer a {"class_name", "config"} describes (unknown keys of other Keras versions are
    dropped: constraints, renorm, groups, ...)."""
    custom = _with_global_objects(custom_objects)
    name, cfg = data["class_name"], dict(data["config"])
    classes = _layer_classes()
    cls = custom.get(name) or classes.get(name)
    if cls is None:
        raise ValueError(f"Unknown layer: {name}. A custom layer must be passed in custom_objects")
    if hasattr(cls, "from_config") and (name in custom or name == "TensorFlowOpLayer"):
        return cls.from_config(cfg)
    params = inspect.signature(cls.__init__).parameters
    takes_kwargs = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values())
    kw: Dict[str, Any] = {}
    for k, v in cfg.items():
        if k in params or (takes_kwargs and (k in _COMMON or (k in _EXTRA and v is not None))):
            if k == "dtype" or (k == "trainable" and v is True):  # the defaults (some layers take no trainable=)
                continue
            kw[k] = _deserialize(k, v, custom)
    if name == "InputLayer":
        kw = {"batch_input_shape": cfg.get("batch_input_shape") or cfg.get("batch_shape"), "name": cfg.get("name"),
              "dtype": cfg.get("dtype")}
    return cls(**kw)


# -- models ----------------------------------------------------------------------------------

def model_to_config(model: Any) -> Dict[str, Any]:
    """Keras's model_config of a Sequential or functional model."""
    from .engine import Model, Sequential
    from .layers import InputLayer, input_name, node_of
    if getattr(model, "_subclassed", False):
        raise NotImplementedError("Saving the model to HDF5 format requires the model to be a Functional model or "
                                  "a Sequential model. It does not work for subclassed models")
    model._require_built()
    if isinstance(model, Sequential):
        return {"class_name": "Sequential", "config": {"name": model.name,
                                                       "layers": [serialize_layer(la) for la in model.layers]}}
    names: Dict[int, str] = {}
    layers: List[Dict[str, Any]] = []
    for t in model.inputs:
        names[id(t)] = input_name(t)

    # the calls inside this model, renumbered per layer (a call on other tensors, such as
    # model(new_input)'s, is left out as Keras leaves it out)
    inside = getattr(model, "_nodes", None)

    def calls(layer: Any) -> List[int]:
        n = len(getattr(layer, "_keras_nodes", []))
        return [k for k in range(n) if inside is None or (id(layer), k) in inside]

    def ref(t: Any) -> list:
        if id(t) in names:
            return [names[id(t)], 0, 0, {}]
        layer, node, index = node_of(t)
        # Keras counts a nested model's own graph as its node 0: its calls are nodes 1, 2, ...
        return [layer.name, calls(layer).index(node) + (1 if isinstance(layer, Model) else 0), index, {}]
    for layer in model.layers:
        if isinstance(layer, InputLayer):  # listed where model.layers has it, as Keras writes it
            t = layer.output
            layers.append({"name": input_name(t), "class_name": "InputLayer", "inbound_nodes": [],
                           "config": {"batch_input_shape": t.shape.as_list(), "dtype": t.dtype.name,
                                      "sparse": False, "name": input_name(t)}})
            continue
        entry = serialize_layer(layer)
        entry["name"] = layer.name
        entry["inbound_nodes"] = [[ref(i) for i in layer._keras_nodes[k]] for k in calls(layer)]
        layers.append(entry)
    return {"class_name": "Model", "config": {"name": model.name, "layers": layers,
                                              "input_layers": [ref(t)[:3] for t in model.inputs],
                                              "output_layers": [ref(t)[:3] for t in model.outputs]}}


def model_from_config(config: Dict[str, Any], custom_objects: Optional[Dict[str, Any]] = None,
                      input_tensors: Optional[List[Any]] = None) -> Any:
    """The model a model_config describes, built in the default graph (on input_tensors, one
    per model input in order, instead of new placeholders when given: clone_model's)."""
    from .engine import Model, Sequential
    from .layers import InputLayer
    custom = _with_global_objects(custom_objects)
    cls, cfg = config["class_name"], config["config"]
    if cls == "Sequential":
        specs = cfg["layers"] if isinstance(cfg, dict) else cfg
        model = Sequential(name=cfg.get("name") if isinstance(cfg, dict) else None)
        if input_tensors is not None:
            model.add(InputLayer(input_tensor=input_tensors[0]))
            specs = [sp for sp in specs if sp["class_name"] != "InputLayer"]
        for spec in specs:
            model.add(deserialize_layer(spec, custom))
        return model
    if cls not in ("Model", "Functional"):
        raise ValueError(f"Unknown model class {cls} (Sequential and functional models can be loaded)")
    made: Dict[str, Any] = {}      # layer name -> layer
    outputs: Dict[str, list] = {}  # layer name -> [output tensors per call]
    pending: List[tuple] = []      # (layer name, call index, inbound node) still to make
    given = {} if input_tensors is None else {r[0]: t for r, t in zip(cfg["input_layers"], input_tensors)}
    # a nested model's node 0 is its own graph (Keras): a reference to its call k says k + 1
    nested = {spec["name"] for spec in cfg["layers"] if spec["class_name"] in ("Model", "Functional", "Sequential")}

    def local(ref: list) -> list:
        return [ref[0], int(ref[1]) - 1] + list(ref[2:]) if ref[0] in nested else list(ref)
    for spec in cfg["layers"]:
        if spec["name"] in nested:
            layer = model_from_config(spec, custom)
        else:
            layer = InputLayer(input_tensor=given[spec["name"]]) if spec["name"] in given else \
                deserialize_layer(spec, custom)
        made[spec["name"]] = layer
        if isinstance(layer, InputLayer):
            outputs[spec["name"]] = [[layer.output]]
        else:
            pending += [(spec["name"], k, [local(n) for n in node])
                        for k, node in enumerate(spec.get("inbound_nodes", []))]
    # a call needs its inputs made and the layer's earlier calls done (a shared layer's second
    # call may read a layer listed after it): repeat until every call is made
    while pending:
        left = []
        for name, k, node in pending:
            ready = len(outputs.get(name, [])) == k and all(
                n[0] in outputs and int(n[1]) < len(outputs[n[0]]) for n in node)
            if not ready:
                left.append((name, k, node))
                continue
            ins = [_tensor(outputs, n) for n in node]
            kwargs = node[0][3] if node and len(node[0]) > 3 and isinstance(node[0][3], dict) else {}
            out = made[name](ins if len(ins) > 1 else ins[0], **kwargs)
            outputs.setdefault(name, []).append(out if isinstance(out, list) else [out])
        if len(left) == len(pending):
            raise ValueError(f"the model config's layers cannot be connected: {[p[0] for p in left]} wait for inputs "
                             "that never come")
        pending = left

    inputs = [_tensor(outputs, local(r)) for r in cfg["input_layers"]]
    outs = [_tensor(outputs, local(r)) for r in cfg["output_layers"]]
    return Model(inputs, outs if len(outs) > 1 else outs[0], name=cfg.get("name"))


def _tensor(outputs: Dict[str, list], ref: list) -> Any:
    name, node, index = ref[0], int(ref[1]), int(ref[2])
    try:
        return outputs[name][node][index]
    except (KeyError, IndexError):
        raise ValueError(f"the model config refers to output {index} of call {node} of layer {name!r}, which comes "
                         "later or does not exist") from None


def model_from_json(json_string: str, custom_objects: Optional[Dict[str, Any]] = None) -> Any:
    return model_from_config(json.loads(json_string), custom_objects)


def _training_config(model: Any) -> Optional[Dict[str, Any]]:
    if not getattr(model, "_compiled", False) or getattr(model, "optimizer", None) is None:
        return None
    opt = getattr(model.optimizer, "_keras_config", None)
    if opt is None:
        logging.warning("model.save: the optimizer is a tf.train optimizer, which Keras cannot describe; the model "
                        "is saved without its training config (compile it again after loading)")
        return None
    def name(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: name(e) for k, e in v.items()}
        if isinstance(v, (list, tuple)):
            return [name(e) for e in v]
        if hasattr(v, "get_config") and not isinstance(v, type):  # a Loss or Metric object, as Keras
            return {"class_name": type(v).__name__, "config": v.get_config()}
        return v if isinstance(v, str) or v is None else getattr(v, "__name__", None)
    loss = name(model.loss)
    metrics = name(getattr(model, "_metric_args", []))
    return {"loss": loss, "metrics": metrics, "loss_weights": getattr(model, "_loss_weights_arg", None),
            "sample_weight_mode": None,
            "weighted_metrics": name(getattr(model, "_weighted_metric_args", None)),
            "optimizer_config": {"class_name": opt[0], "config": model.optimizer.get_config()}}


def save_model(model: Any, filepath: str, overwrite: bool = True, include_optimizer: bool = True) -> None:
    """model.save(filepath): config, training config and weights in one HDF5 file, written whole."""
    import h5py
    filepath = str(filepath)
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{filepath} exists and overwrite=False")
    config = model_to_config(model)
    training = _training_config(model) if include_optimizer else None
    values = model.get_weights()
    tmp = temporary_name(filepath)
    try:
        with h5py.File(tmp, "w") as f:
            f.attrs["keras_version"] = _KERAS_VERSION
            f.attrs["backend"] = b"tensorflow"
            f.attrs["model_config"] = json.dumps(config).encode()
            if training is not None:
                f.attrs["training_config"] = json.dumps(training).encode()
            model._write_weights(f.create_group("model_weights"), values)
            if training is not None:
                _write_optimizer_weights(f, model.optimizer)
        os.replace(tmp, filepath)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def load_model(filepath: str, custom_objects: Optional[Dict[str, Any]] = None, compile: bool = True) -> Any:  # noqa: A002
    """The model model.save wrote (or Keras's HDF5 file of a Sequential or functional model), its
    weights loaded, compiled again from its training config, its optimizer's saved state set."""
    import h5py
    try:
        f = h5py.File(str(filepath), "r")
    except OSError as e:
        raise IOError(f"Unable to open file {filepath!r} as a Keras HDF5 model: {e}") from None
    with f:
        if "model_config" not in f.attrs:
            raise ValueError(f"No model found in config file {filepath!r} (a weights-only file: build the model and "
                             "use load_weights)")
        cfg = f.attrs["model_config"]
        config = json.loads(cfg.decode() if isinstance(cfg, bytes) else cfg)
        model = model_from_config(config, custom_objects)
        group = f["model_weights"] if "model_weights" in f else f
        model._read_weights(group, by_name=False)
        training = f.attrs.get("training_config")
        opt_values = _read_optimizer_weights(f)
    if compile and training is not None:
        custom_objects = _with_global_objects(custom_objects)  # a custom_object_scope's too
        tc = json.loads(training.decode() if isinstance(training, bytes) else training)
        oc = tc["optimizer_config"]
        from .optimizers_more import deserialize as _deserialize_optimizer
        try:
            opt = _deserialize_optimizer(oc, custom_objects)
        except ValueError:
            logging.warning("load_model: optimizer %s is not supported; the model is not compiled", oc["class_name"])
            return model
        loss, metrics = _compile_objects(tc.get("loss"), tc.get("metrics"), custom_objects)
        weighted = _compile_objects(None, tc.get("weighted_metrics"), custom_objects)[1]
        model.compile(opt, loss, metrics=metrics or None, loss_weights=tc.get("loss_weights"),
                      weighted_metrics=weighted or None)
        if opt_values is not None:
            _restore_optimizer(model, opt_values)
    return model


def _compile_objects(loss: Any, metrics: Any, custom_objects: Optional[Dict[str, Any]]) -> tuple:
    """The training config's Loss and Metric objects ({"class_name", "config"}) made again."""
    from . import loss_classes, metric_classes

    def is_obj(v: Any) -> bool:
        return isinstance(v, dict) and "class_name" in v and "config" in v

    def walk(v: Any, make: Any) -> Any:
        if is_obj(v):
            return make(v, custom_objects)
        if isinstance(v, dict):
            return {k: walk(e, make) for k, e in v.items()}
        if isinstance(v, list):
            return [walk(e, make) for e in v]
        return (custom_objects or {}).get(v, v) if isinstance(v, str) else v
    return walk(loss, loss_classes.deserialize), walk(metrics, metric_classes.deserialize)


def _write_optimizer_weights(f: Any, optimizer: Any) -> None:
    """Group optimizer_weights as Keras writes it: attr weight_names (the variables' names, in
    optimizer.weights' order) and a dataset per name ("/" in a name nests groups)."""
    weights = list(getattr(optimizer, "weights", None) or [])
    if not weights:  # a tf.train optimizer, or one that has not trained yet: nothing, as Keras
        return
    from . import backend as K
    group = f.create_group("optimizer_weights")
    names = [w.name for w in weights]
    group.attrs["weight_names"] = np.array([n.encode() for n in names], dtype="S")
    for n, value in zip(names, K.batch_get_value(weights)):
        group.create_dataset(n, data=np.asarray(value))


def _read_optimizer_weights(f: Any) -> Optional[List[np.ndarray]]:
    if "optimizer_weights" not in f:
        return None
    group = f["optimizer_weights"]
    return [np.asarray(group[n.decode() if isinstance(n, bytes) else str(n)])
            for n in group.attrs.get("weight_names", [])]


def _restore_optimizer(model: Any, values: List[np.ndarray]) -> None:
    """Keras's load_model step: the optimizer makes its state for the model's trainable weights,
    then takes the saved values; what does not fit leaves it fresh, with Keras's warnings."""
    opt = model.optimizer
    try:
        with model._graph().as_default():
            opt._create_all_weights(model.trainable_weights)
    except (NotImplementedError, AttributeError):
        logging.warning("Error when creating the weights of optimizer %s, making it impossible to restore the saved "
                        "optimizer state. As a result, your model is starting with a freshly initialized optimizer.",
                        opt)
        return
    try:
        opt.set_weights(values)
    except ValueError:
        logging.warning("Error in loading the saved optimizer state. As a result, your model is starting with a "
                        "freshly initialized optimizer.")

