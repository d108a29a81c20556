"""tf.keras Model and Sequential in TF1's graph mode: the model's structure (functional,
Sequential, subclassed), compile (the losses of one or several outputs, metrics, train op), weights
(get/set, Keras's HDF5 layout or a checkpoint) and summary; the training loop is in
keras/training.py, run in Keras's session (backend.get_session)."""
from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph import nest
from ..graph.ops import math_ops as _m
from ..graph.ops.constant_op import group, placeholder
from ..platform.atomic_files import temporary_name
from ..train import distribute_lib as _ds
from . import backend as K
from . import distributed_fit as _dfit
from ..train import object_checkpoint as _object_checkpoint
from . import losses as _losses
from . import loss_classes as _loss_classes
from . import metric_classes as _metric_classes
from . import optimizers as _optimizers
from .layers import InputLayer, input_layer_of, mask_of, node_of
from .training import TrainingLoop, as_list as _as_list

__all__ = ["Model", "Sequential"]


def _unique(prefix: str) -> str:
    """Keras's object names: prefix, prefix_1, prefix_2, ... per graph."""
    uid = K.get_uid(prefix)
    return prefix if uid == 1 else f"{prefix}_{uid - 1}"


def _with_class_weight(w: Any, y: np.ndarray, class_weight: dict) -> np.ndarray:
    """Sample weights times each sample's class weight (the class: y's argmax for one-hot
    rows, else its value), as Keras's fit(class_weight=) does."""
    labels = y.argmax(-1) if y.ndim > 1 and y.shape[-1] > 1 else y.reshape(len(y), -1)[:, 0]
    cw = np.array([class_weight.get(int(c), 1.0) for c in labels], dtype=np.float32)
    return cw if w is None else np.asarray(w, np.float32) * cw


def _check_loss_objects(loss_fns: List[Any]) -> None:
    for fn in loss_fns:
        if isinstance(fn, type) and issubclass(fn, _loss_classes.Loss):
            raise ValueError(f"Received uninstantiated Loss class: {fn}\nPlease call loss classes before passing "
                             "them to Model.compile.")


def _own_metrics(lists: List[Any], g: Any) -> List[Any]:
    """One list of metrics for several outputs: each output gets its own copies of the Metric
    objects (Keras's clone_metric), their states apart; so does a Metric whose state lives in
    another graph (model_to_estimator's)."""
    def copy(m: Any) -> Any:
        return type(m).from_config(m.get_config()) if isinstance(m, _metric_classes.Metric) else m

    def here(m: Any) -> Any:
        vs = m.variables if isinstance(m, _metric_classes.Metric) else []
        return copy(m) if vs and vs[0].graph is not g else m
    if len(lists) > 1 and all(ms is lists[0] for ms in lists):
        return [[copy(m) for m in (ms or [])] for ms in lists]
    return [[here(m) for m in (ms or [])] for ms in lists]


class Model(TrainingLoop):
    """A functional model: `Model(inputs, outputs)` over the layers that lead from the inputs to
    the outputs (tf.keras.Model)."""

    def __init__(self, inputs: Any = None, outputs: Any = None, name: Optional[str] = None, **kwargs: Any):
        if name is None:
            from .base_layer import _snake
            base = "model" if type(self) is Model else _snake(type(self).__name__)
            name = _unique(base)
        self.name = name
        self.stop_training = False
        self.optimizer: Any = None
        self._compiled = False
        self._layers: List[Any] = []
        self.inputs: List[_g.Tensor] = []
        self.outputs: List[_g.Tensor] = []
        self._deferred_compile: Any = None
        self._pending: List[Any] = []
        # a subclass defining call() (TF's model subclassing): built on its first data or call
        self._subclassed = inputs is None and outputs is None and type(self).call is not Model.call
        self._scope: Any = None
        self.built = False
        if inputs is not None or outputs is not None:
            self._init_graph(_as_list(inputs), _as_list(outputs))

    def call(self, inputs: Any, training: Any = None) -> Any:
        """The forward pass of a subclassed model (a functional model applies its layers)."""
        return self._apply_graph(inputs, training)

    def _tracked(self) -> List[Any]:
        """The layers a subclassed model holds in its attributes (and in lists of them)."""
        from .base_layer import _is_layer
        out: List[Any] = []
        for v in vars(self).values():
            for item in (v if isinstance(v, (list, tuple)) else [v]):
                if _is_layer(item) and all(item is not o for o in out):
                    out.append(item)
        return out

    def _init_graph(self, inputs: List[Any], outputs: List[Any]) -> None:
        """The layers from the inputs to the outputs (raw TF ops among them wrapped into op
        layers first), in TF's order: by depth from the inputs, ties by first visit from the
        outputs (Keras's _map_graph_network), so weights line up with TF's."""
        from .op_layer import wrap_raw_ops
        self.inputs = [_g.convert_to_tensor(t) for t in inputs]
        self.outputs = [_g.convert_to_tensor(t) for t in outputs]
        stop = set(self.inputs)
        wrap_raw_ops(self.outputs, stop)
        post: List[tuple] = []          # (layer id, call index), inputs before their consumers
        first: dict = {}                 # layer id -> order of first visit (TF's tie-break)
        layers: dict = {}
        done: set = set()

        inputs_of = {t: input_layer_of(t) for t in self.inputs}

        def node_key(t: Any) -> tuple:
            if t in stop:
                return (id(inputs_of[t]), 0)
            pl, pk, _ = node_of(t)
            return (id(pl), pk)

        def visit(t: Any) -> None:
            if t in stop:  # an InputLayer: TF lists it among the layers, at its depth
                il = inputs_of[t]
                if (id(il), 0) not in done:
                    done.add((id(il), 0))
                    first.setdefault(id(il), len(first))
                    layers[id(il)] = il
                    post.append((id(il), 0))
                return
            rec = node_of(t)
            if rec is None:
                raise ValueError(f"Graph disconnected: cannot obtain value for tensor {t.name}: it is not made by a "
                                 "Keras layer from the model's inputs")
            layer, k, _ = rec
            key = (id(layer), k)
            if key in done:
                return
            done.add(key)
            first.setdefault(id(layer), len(first))
            layers[id(layer)] = layer
            for i in layer._keras_nodes[k]:
                visit(_g.convert_to_tensor(i))
            post.append(key)
        for o in self.outputs:
            visit(o)
        node_depth: dict = {}
        layer_depth: dict = {}
        for key in reversed(post):
            depth = max(node_depth.setdefault(key, 0), layer_depth.get(key[0], 0))
            layer_depth[key[0]] = node_depth[key] = depth
            layer = layers[key[0]]
            for i in ([] if isinstance(layer, InputLayer) else layer._keras_nodes[key[1]]):
                pkey = node_key(_g.convert_to_tensor(i))
                node_depth[pkey] = max(depth + 1, node_depth.get(pkey, 0))
        self._layers = sorted(layers.values(), key=lambda la: (-layer_depth[id(la)], first[id(la)]))
        # the layers' calls inside this model (a config leaves the others out), and by depth
        # (summary's choice of table)
        self._nodes = {k for k in done if not isinstance(layers[k[0]], InputLayer)}
        self._node_depths = node_depth

    # -- object checkpoints (collflow/train/trackable.py) ---------------------------------------
    _UNTRACKED = frozenset(("optimizer", "_layers", "inputs", "outputs", "_pending", "_deferred_compile", "_nodes",
                            "_node_depths", "_scope", "_keras_nodes"))

    def _checkpoint_children(self) -> List[Any]:
        """Keras's: a functional model or Sequential names its layers layer-<i> (and those with
        weights also layer_with_weights-<k>); a subclassed model its attributes; then the
        compiled optimizer."""
        from ..train.trackable import attribute_children
        out: List[Any] = []
        if not self._subclassed:
            k = 0
            for i, layer in enumerate(self.layers):
                if getattr(layer, "weights", None):
                    out.append((f"layer_with_weights-{k}", layer))
                    k += 1
                out.append((f"layer-{i}", layer))
        out += attribute_children(self, self._UNTRACKED, only_state=True)
        if self.optimizer is not None:
            out.append(("optimizer", self.optimizer))
        return out

    # -- structure --------------------------------------------------------------------------
    @property
    def layers(self) -> List[Any]:
        return self._tracked() if self._subclassed else list(self._layers)

    @property
    def input(self) -> Any:
        return self.inputs[0] if len(self.inputs) == 1 else self.inputs

    @property
    def output(self) -> Any:
        return self.outputs[0] if len(self.outputs) == 1 else self.outputs

    def get_layer(self, name: Optional[str] = None, index: Optional[int] = None) -> Any:
        if index is not None:
            return self._layers[index]
        for layer in self._layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}")

    @property
    def weights(self) -> List[Any]:
        out, seen = [], set()
        for layer in self.layers:
            for v in layer.weights:
                if id(v) not in seen:
                    seen.add(id(v))
                    out.append(v)
        return out

    variables = weights

    @property
    def trainable_weights(self) -> List[Any]:
        return [v for v in self.weights if v.trainable]

    trainable_variables = trainable_weights

    @property
    def non_trainable_weights(self) -> List[Any]:
        return [v for v in self.weights if not v.trainable]

    @property
    def updates(self) -> List[Any]:
        """The layers' update ops (batch norm's moving averages), run by each training step."""
        return [u for layer in self._layers for u in getattr(layer, "updates", [])]

    @property
    def losses(self) -> List[Any]:
        """The layers' regularization penalties, added to the loss."""
        return [t for layer in self._layers for t in getattr(layer, "losses", [])]

    def _graph(self) -> _g.Graph:
        self._require_built()
        return self.outputs[0].graph

    def _require_built(self) -> None:
        if not self.outputs:
            raise ValueError("This model has not yet been built. Build the model first by calling it on data or "
                             "by giving the first layer an input_shape.")

    def count_params(self) -> int:
        return int(sum(int(np.prod(v.shape.as_list())) for v in self.weights))

    def summary(self, line_length: Optional[int] = None, positions: Optional[List[float]] = None,
                print_fn: Any = None, expand_nested: bool = False, show_trainable: bool = False,
                layer_range: Any = None) -> None:
        """tf_keras's table of the layers (keras/summary.py): a "Connected to" column for a
        functional model that is not a chain; expand_nested, layer_range as tf_keras's."""
        from .summary import print_summary
        self._require_built()
        print_summary(self, line_length, positions, print_fn, show_trainable, expand_nested, layer_range)

    def __call__(self, inputs: Any, training: Any = None, **kwargs: Any) -> Any:
        """The model applied to new tensors (its layers, and so its weights, are shared)."""
        if self._subclassed:
            import inspect
            from ..graph.variable_scope import variable_scope
            if "training" in inspect.signature(self.call).parameters:
                kwargs["training"] = K.learning_phase() if training is None else training
            scope = variable_scope(self._scope, reuse=True if self.built else None) if self._scope is not None \
                else variable_scope(None, default_name=self.name)
            with scope as vs:
                self._scope = vs
                out = self.call(inputs, **kwargs)
            self.built = True
            return out
        out = self._apply_graph(inputs, training)
        # Keras: a model called on tensors is one layer of the model built on them (its row in
        # summary(), its scope in a re-created graph), not the layers it holds
        from .layers import register_call
        register_call(self, inputs, out)
        return out

    def _apply_graph(self, inputs: Any, training: Any) -> Any:
        self._require_built()
        # Keras names the re-created ops under the model's name scope (model/dense/MatMul, the
        # next call model_1/...; a nested model's under outer/inner/...)
        g = next((t.graph for t in _as_list(inputs) if hasattr(t, "graph")), None) or _g.get_default_graph()
        with g.as_default(), _g.name_scope(self.name):
            return self._apply_graph_scoped(inputs, training)

    def _apply_graph_scoped(self, inputs: Any, training: Any) -> Any:
        new = {id(t): x for t, x in zip(self.inputs, _as_list(inputs))}
        calls: dict = {}  # (layer id, call index) -> the new call's output: each call made once

        def value(t: Any) -> Any:
            if id(t) in new:
                return new[id(t)]
            layer, k, index = node_of(t)
            if (id(layer), k) not in calls:
                ins = layer._keras_nodes[k]
                args = [value(_g.convert_to_tensor(i)) for i in ins]
                arg = args if len(ins) > 1 else args[0]
                calls[(id(layer), k)] = (layer(arg, training=training) if getattr(layer, "_takes_training", False)
                                         else layer(arg))
            out = calls[(id(layer), k)]
            # a layer of several outputs (an RNN's states, a split op) gives output `index`
            res = nest.flatten(out)[index] if isinstance(out, (list, tuple)) else out
            new[id(t)] = res
            return res
        outs = [value(o) for o in self.outputs]
        return outs[0] if len(outs) == 1 else outs

    @property
    def stateful(self) -> bool:
        """Keras: a model is stateful when one of its layers is (a nested model's reset with it)."""
        given = self.__dict__.get("_stateful_given")
        return given if given is not None else any(getattr(layer, "stateful", False) for layer in self.layers)

    @stateful.setter
    def stateful(self, value: bool) -> None:  # a subclassed model may set its own
        self.__dict__["_stateful_given"] = bool(value)

    def reset_states(self) -> None:
        """Resets the states of every stateful recurrent layer to zeros (Keras's reset_states)."""
        from .recurrent import reset_model_states
        reset_model_states(self)

    # -- weights -----------------------------------------------------------------------------
    def get_weights(self) -> List[np.ndarray]:
        return K.batch_get_value(self.weights)

    def set_weights(self, weights: Sequence[Any]) -> None:
        ws = self.weights
        if len(ws) != len(weights):
            raise ValueError(f"set_weights: the model has {len(ws)} weights, got {len(weights)} arrays")
        for v, w in zip(ws, weights):
            if tuple(v.shape.as_list()) != tuple(np.shape(w)):
                raise ValueError(f"Layer weight shape {tuple(v.shape.as_list())} not compatible with provided weight "
                                 f"shape {np.shape(w)} ({v.name})")
        K.batch_set_value(list(zip(ws, weights)))

    def save_weights(self, filepath: str, overwrite: bool = True, save_format: Optional[str] = None) -> None:
        """Keras's HDF5 weights layout for .h5/.keras/.hdf5 paths (or save_format="h5"), else a
        collflow checkpoint at the prefix."""
        filepath = str(filepath)
        if not overwrite and os.path.exists(filepath):
            raise FileExistsError(f"{filepath} exists and overwrite=False")
        if save_format == "h5" or filepath.endswith((".h5", ".keras", ".hdf5")):
            self._save_h5(filepath)
        else:
            from ..train.saver import Saver
            with self._graph().as_default():
                Saver(var_list={v.op.name: v for v in self.weights}, save_rng=False).save(
                    K.get_session(), filepath, write_meta_graph=False)

    def _save_h5(self, filepath: str) -> None:
        import h5py
        values = self.get_weights()
        tmp = temporary_name(filepath)
        try:
            with h5py.File(tmp, "w") as f:
                self._write_weights(f, values)
            os.replace(tmp, filepath)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise

    def _write_weights(self, f: Any, values: List[np.ndarray]) -> None:
        """Keras's weights layout in HDF5 group `f`: attrs layer_names, a group per layer with
        attrs weight_names and a dataset per weight."""
        it = iter(values)
        layers = self.layers
        # fixed-length byte strings, as Keras writes them (its reader expects bytes)
        f.attrs["layer_names"] = np.array([la.name.encode() for la in layers], dtype="S")
        f.attrs["backend"] = b"tensorflow"
        f.attrs["keras_version"] = b"2.2.4-tf"
        for layer in layers:
            grp = f.create_group(layer.name)
            wnames = [v.name for v in layer.weights]
            grp.attrs["weight_names"] = np.array([w.encode() for w in wnames], dtype="S")
            for w in wnames:
                grp.create_dataset(w, data=next(it))

    def load_weights(self, filepath: str, by_name: bool = False) -> None:
        """Weights from save_weights' file (Keras's HDF5 layout: layer by layer in order, or
        by layer name), or from a checkpoint prefix."""
        filepath = str(filepath)
        if not filepath.endswith((".h5", ".keras", ".hdf5")):
            from ..train.saver import Saver
            with self._graph().as_default():
                Saver(var_list={v.op.name: v for v in self.weights}, save_rng=False).restore(K.get_session(), filepath)
            return
        import h5py
        try:
            f = h5py.File(filepath, "r")
        except OSError as e:
            raise InvalidArgumentError(f"load_weights: cannot read {filepath!r} as HDF5: {e}") from None
        with f:
            self._read_weights(f["model_weights"] if "model_weights" in f else f, by_name)

    def _read_weights(self, f: Any, by_name: bool) -> None:
        saved = [n.decode() if isinstance(n, bytes) else str(n) for n in f.attrs.get("layer_names", [])]
        groups = {n: f[n] for n in saved}

        def arrays(name: str) -> List[np.ndarray]:
            g = groups[name]
            return [np.asarray(g[w.decode() if isinstance(w, bytes) else w]) for w in g.attrs["weight_names"]]
        pairs = []
        if by_name:
            for layer in self.layers:
                if layer.name in groups and layer.weights:
                    pairs.append((layer, arrays(layer.name)))
        else:
            with_w = [n for n in saved if len(groups[n].attrs.get("weight_names", [])) > 0]
            layers = [layer for layer in self.layers if layer.weights]
            if len(with_w) != len(layers):
                raise ValueError(f"You are trying to load a weight file containing {len(with_w)} layers into a "
                                 f"model with {len(layers)} layers.")
            pairs = [(layer, arrays(n)) for layer, n in zip(layers, with_w)]
        todo = []
        for layer, ws in pairs:
            if len(ws) != len(layer.weights):
                raise ValueError(f"Layer {layer.name} expects {len(layer.weights)} weights, the file has {len(ws)}")
            for v, w in zip(layer.weights, ws):
                if tuple(v.shape.as_list()) != w.shape:
                    raise ValueError(f"Layer weight shape {tuple(v.shape.as_list())} not compatible with provided "
                                     f"weight shape {w.shape} ({v.name})")
                todo.append((v, w))
        K.batch_set_value(todo)

    def save(self, filepath: str, overwrite: bool = True, include_optimizer: bool = True,
             save_format: Optional[str] = None) -> None:
        """The whole model (config, training config, weights) to one HDF5 file, Keras's layout."""
        from .saving import save_model
        save_model(self, filepath, overwrite, include_optimizer)

    def get_config(self) -> dict:
        from .saving import model_to_config
        return model_to_config(self)["config"]

    def to_json(self, **kwargs: Any) -> str:
        import json
        from .saving import model_to_config
        return json.dumps(model_to_config(self), **kwargs)

    def to_yaml(self, **kwargs: Any) -> str:
        """The config as YAML (needs PyYAML; keras/models_utils.py)."""
        from .models_utils import to_yaml
        return to_yaml(self, **kwargs)

    # -- training ----------------------------------------------------------------------------
    @property
    def output_names(self) -> List[str]:
        """The names of the layers making the outputs (the keys of a dict of losses or targets)."""
        from .layers import history_of
        names = []
        for t in self.outputs:
            rec = history_of(t)
            names.append(rec[0].name if rec is not None else t.op.name.split("/")[0])
        return names

    def _per_output(self, value: Any, what: str, default: Any) -> List[Any]:
        """A compile argument per output: one for all, a list in output order, or a dict by name."""
        names = self.output_names
        if isinstance(value, dict):
            unknown = [k for k in value if k not in names]
            if unknown:
                raise ValueError(f"Unknown entries in {what} dictionary: {unknown}. Only expected following keys: "
                                 f"{names}")
            return [value.get(n, default) for n in names]
        if isinstance(value, (list, tuple)) and (what != "metrics" or len(names) > 1 and value and
                                                 all(isinstance(v, (list, tuple)) for v in value)):
            if len(value) != len(names):
                raise ValueError(f"When passing a list as {what}, it should have one entry per model output. The "
                                 f"model has {len(names)} outputs, but you passed {what}={value}")
            return list(value)
        return [value] * len(names)

    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, metrics: Optional[Sequence[Any]] = None,
                loss_weights: Any = None, sample_weight_mode: Any = None, weighted_metrics: Any = None,
                target_tensors: Any = None, **kwargs: Any) -> None:
        """Sets the optimizer (a name, a Keras or tf.train optimizer), the loss (a name or
        function; a list or dict of them for several outputs, weighted by loss_weights) and the
        metrics; the graph's loss is built here (the train op at the first fit)."""
        # compiled in a tf.distribute scope: its strategy trains the model (keras/distributed_fit.py)
        if _ds.has_strategy():
            self._distribute_strategy = _ds.get_strategy()
        if not self.outputs and (self._pending or self._subclassed):
            # built later (by fit's data or build()): compiled then
            self._deferred_compile = dict(optimizer=optimizer, loss=loss, metrics=metrics, loss_weights=loss_weights,
                                          weighted_metrics=weighted_metrics)
            self._compiled = True
            return
        self._require_built()
        if loss is None:
            raise ValueError("The model needs a loss: compile(loss=...)")
        self.optimizer = _optimizers.get(optimizer)
        from .mixed_precision import global_policy
        from .mixed_precision_optimizer import inner_optimizer, wrap_for_policy
        _optimizers.attach_lr_variable(inner_optimizer(self.optimizer), self.outputs[0].graph)
        with self.outputs[0].graph.as_default():  # the policy's loss scale: a LossScaleOptimizer (TF 1.15)
            self.optimizer = wrap_for_policy(self.optimizer, global_policy())
        self.loss = loss
        self._metric_args = list(metrics or []) if not isinstance(metrics, dict) else metrics
        self._loss_weights_arg = loss_weights
        self._weighted_metric_args = weighted_metrics
        loss_fns = [_losses.get(v) for v in self._per_output(loss, "loss", None)]
        _check_loss_objects(loss_fns)
        weights = [1.0 if w is None else float(w) for w in self._per_output(loss_weights, "loss_weights", 1.0)]
        metric_lists = self._per_output(metrics or [], "metrics", [])
        multi = len(self.outputs) > 1
        names = self.output_names
        g = self.outputs[0].graph
        self._loss_fn = loss_fns[0]
        self._targets_in, self._weights_ins = [], []
        self.metrics_names = ["loss"]
        self._metric_tensors = []
        with g.as_default(), _g.name_scope(None):
            per_output = []
            given = self._per_output(target_tensors, "target_tensors", None) if target_tensors is not None else None
            for k, (out, name, fn) in enumerate(zip(self.outputs, names, loss_fns)):
                rank = out.shape.rank if out.shape.rank is not None else 2
                if given is not None:  # Keras's target_tensors: targets from the graph (an input pipeline)
                    target = _m.cast(given[k], out.dtype)
                    w_in = self._graph_sample_weights(out, kwargs.get("_target_weights"))
                else:
                    target = placeholder(out.dtype, [None] * rank, name=f"{name}_target")
                    w_in = placeholder(out.dtype, [None], name=f"{name}_sample_weights")
                self._targets_in.append(target)
                self._weights_ins.append(w_in)
                with _g.name_scope("loss"):
                    if isinstance(fn, _loss_classes.Loss):  # its own reduction (TF 1.15)
                        per_output.append(_loss_classes.compiled_loss(fn, target, out, w_in, mask_of(out)))
                        continue
                    per = fn(target, out)
                    mask = mask_of(out)
                    if mask is not None:  # padded steps of a sequence output add nothing to the loss:
                        mk = _m.cast(mask, per.dtype)  # the mean is over the real steps (Keras's rule)
                        per = per * mk / _m.reduce_mean(mk)
                    while per.shape.rank is not None and per.shape.rank > 1:
                        per = _m.reduce_mean(per, axis=-1)
                    # TF 1.15: the weighted sum over the batch size (zero weights count in it)
                    per_output.append(_m.reduce_mean(per * w_in))
            with _g.name_scope("loss"):
                total = per_output[0] * weights[0] if weights[0] != 1.0 else per_output[0]
                for lo, w in zip(per_output[1:], weights[1:]):
                    total = total + (lo * w if w != 1.0 else lo)
                regs = self.losses
                if regs:
                    total = total + _m.add_n(regs)
                self.total_loss = total
            self._per_batch = []  # entries averaged over batches, not samples (see _run)
            self._stateful_metrics = []  # (index in [loss] + metrics, Metric object)
            if multi:  # TF 1.15's names: loss, <output>_loss ..., <output>_<metric> ...
                self.metrics_names += [f"{n}_loss" for n in names]
                self._metric_tensors += per_output
                self._per_batch += [True] * len(per_output)
            with _g.name_scope("metrics"):
                weighted_lists = _own_metrics(self._per_output(weighted_metrics or [], "metrics", []), g)
                metric_lists = _own_metrics(metric_lists, g)
                for out, name, fn, ms, wms, target, w_in in zip(self.outputs, names, loss_fns, metric_lists,
                                                               weighted_lists, self._targets_in, self._weights_ins):
                    # weighted_metrics: stateful, with the sample weights, named weighted_<name> (TF 1.15)
                    for m, w in [(m, None) for m in ms or []] + [(m, w_in) for m in wms or []]:
                        if w is not None and not isinstance(m, _metric_classes.Metric):
                            mname, mfn = _losses.get_metric(m, fn, out)
                            m = _metric_classes.MeanMetricWrapper(mfn, name=mname)
                        if isinstance(m, _metric_classes.Metric):  # stateful: its running result (training.py)
                            mname = m.name if w is None else f"weighted_{m.name}"
                            self.metrics_names.append(f"{name}_{mname}" if multi else mname)
                            self._metric_tensors.append(m(target, out) if w is None else m(target, out, w))
                            self._per_batch.append(False)
                            self._stateful_metrics.append((len(self._metric_tensors), m))
                            continue
                        mname, mfn = _losses.get_metric(m, fn, out)
                        self.metrics_names.append(f"{name}_{mname}" if multi else mname)
                        self._metric_tensors.append(_m.reduce_mean(mfn(target, out)))
                        self._per_batch.append(False)
            self._train_op = None
            self._report_loss = None
            if _dfit.replicas(self) > 1:
                _dfit.distribute_reporting(self)
        self._compiled = True

    @staticmethod
    def _graph_sample_weights(out: Any, weights: Any) -> Any:
        # with target_tensors nothing is fed: the sample weights are a given tensor or ones
        if _g.is_tensor(weights):
            return _m.cast(weights, out.dtype)
        from ..graph.ops.array_ops import ones, shape
        return ones(shape(out)[:1], dtype=out.dtype)

    def _train_function(self) -> Any:
        if self._train_op is None:
            g = self._graph()
            with g.as_default():
                create = getattr(self.optimizer, "_create_all_weights", None)
                if create is not None:  # a Keras optimizer's state, named as Keras's (training/Adam/iter, ...)
                    create(self.trainable_weights, f"training/{self.optimizer.get_name()}")
                strategy = getattr(self, "_distribute_strategy", None)

                def minimize() -> Any:
                    with _g.control_dependencies(self.updates):
                        return self.optimizer.minimize(_dfit.scaled_loss(self), var_list=self.trainable_weights)
                # under a strategy the update is built in this rank's replica context, where the
                # optimizer sums the replicas' gradients
                step = strategy.extended.call_for_each_replica(minimize) if strategy is not None else minimize()
                self._train_op = group(step, *self.updates)
        return self._train_op

    def _feed(self, xs: List[np.ndarray], ys: Optional[List[np.ndarray]], w: Any, train: bool) -> dict:
        if ys is not None and _dfit.replicas(self) > 1:
            # fit/evaluate under a strategy: this replica's rows of the global batch
            ws = w if isinstance(w, (list, tuple)) else [w] * len(ys)
            xs, ys, w = _dfit.feed_rows(self, xs), _dfit.feed_rows(self, ys), _dfit.feed_rows(self, ws)
        feed = {t: a for t, a in zip(self.inputs, xs)}
        if ys is not None:
            ws = w if isinstance(w, (list, tuple)) else [w] * len(ys)
            cw = getattr(self, "_class_weight", None)
            if train and cw:
                ws = [_with_class_weight(wi, yi, cw) for wi, yi in zip(ws, ys)]
            for target, w_in, y, wi in zip(self._targets_in, self._weights_ins, ys, ws):
                feed[target] = y
                feed[w_in] = wi if wi is not None else np.ones(len(y), dtype=w_in.dtype.np)
        phase = K.learning_phase()
        if _g.is_tensor(phase):
            feed[phase] = train
        return feed

    def _targets(self, y: Any) -> List[np.ndarray]:
        """The targets as one array per output (a list in output order, or a dict by output name)."""
        if isinstance(y, dict):
            missing = [n for n in self.output_names if n not in y]
            if missing:
                raise ValueError(f"No data provided for {missing}. Need data for each key in: {self.output_names}")
            ys = [y[n] for n in self.output_names]
        elif isinstance(y, (list, tuple)) and len(self.outputs) > 1:
            ys = list(y)
        else:
            ys = [y]
        if len(ys) != len(self.outputs):
            raise ValueError(f"the model has {len(self.outputs)} outputs, got {len(ys)} target arrays")
        out = []
        for t, yi in zip(self.outputs, ys):
            yi = np.asarray(yi)
            rank = t.shape.rank
            if rank is not None and yi.ndim == rank - 1:
                yi = yi[..., None]  # labels of shape (n,) for an output of shape (n, k), as Keras standardizes them
            out.append(yi)
        return out

    def _build_from(self, x: Any) -> None:
        """A subclassed model builds on the first data it sees: placeholders of its shapes
        and dtypes (floats as floatx), then call()."""
        if not self._subclassed or self.outputs or x is None:
            return
        from ..graph.ops.constant_op import placeholder as _ph
        arrays = [np.asarray(a) for a in _as_list(x)] if not isinstance(x, dict) else \
            [np.asarray(v) for v in x.values()]
        ins = [_ph(K.floatx() if a.dtype.kind == "f" else a.dtype, [None] + list(a.shape[1:]),
                   name=f"input_{i + 1}") for i, a in enumerate(arrays)]
        out = self(ins[0] if len(ins) == 1 else ins)
        self.inputs, self.outputs = ins, _as_list(out)
        self._layers = self._tracked()
        if self._deferred_compile is not None:
            args, self._deferred_compile = self._deferred_compile, None
            self.compile(**args)

    def _require_compiled(self) -> None:
        if not self._compiled:
            raise RuntimeError("You must compile your model before training/testing. Use `model.compile(optimizer, "
                               "loss)`.")


class Sequential(Model):
    """A stack of layers, each fed the previous one's output (tf.keras.Sequential).  Built when
    a layer with an input shape is added, or on its first call."""

    def __init__(self, layers: Optional[Sequence[Any]] = None, name: Optional[str] = None):
        super().__init__(name=name)
        self._subclassed = False
        for layer in layers or []:
            self.add(layer)

    def add(self, layer: Any) -> None:
        if isinstance(layer, InputLayer):
            self.inputs, self.outputs = [layer.output], [layer.output]
            return
        if not self.outputs:
            shape = getattr(layer, "_batch_input_shape", None)
            if shape is None and isinstance(layer, Model) and len(layer.inputs) == 1:
                # a built model as the first layer: the stack takes its input shape (Keras)
                shape = tuple(layer.inputs[0].shape.as_list())
            if shape is None:
                self._pending.append(layer)
                return
            x = InputLayer(batch_input_shape=shape, name=f"{layer.name}_input").output  # Keras's name
            self.inputs, self.outputs = [x], [x]
        self._apply(layer)

    def _apply(self, layer: Any) -> None:
        out = layer(self.outputs[0])
        self.outputs = [out]
        self._layers.append(layer)

    def pop(self) -> None:
        raise NotImplementedError("Sequential.pop() is not supported by collflow (the graph keeps its ops)")

    def build(self, input_shape: Any) -> None:
        """Builds on a placeholder of `input_shape` (batch first) once."""
        if self.outputs:
            return
        first = self._pending[0].name if self._pending else "sequential"
        x = InputLayer(batch_input_shape=tuple(input_shape), name=f"{first}_input").output
        self.inputs, self.outputs = [x], [x]
        pending, self._pending = self._pending, []
        for layer in pending:
            self._apply(layer)
        if self._deferred_compile is not None:
            args, self._deferred_compile = self._deferred_compile, None
            self.compile(**args)

    def _require_built(self) -> None:
        if not self.outputs and self._pending:
            raise ValueError("This model has not yet been built. Build the model first by calling `build()` or "
                             "calling `fit()` with some data, or specify an `input_shape` argument in the first layer"
                             "(s) for automatic build.")
        super()._require_built()

    def _build_from(self, x: Any) -> None:
        if not self.outputs and self._pending and x is not None:
            first = list(x.values())[0] if isinstance(x, dict) else x[0] if isinstance(x, (list, tuple)) else x
            self.build((None,) + np.asarray(first).shape[1:])


def _keras_session() -> Any:
    """Keras's session of the default graph when Keras has made one (tf.train.Checkpoint's
    save/restore without a session then use it, as TF 1.x's Keras registers its session)."""
    sess = K._state().get("session")
    return K.get_session() if sess is not None and not getattr(sess, "_closed", False) else None


_object_checkpoint.register_session_provider(_keras_session)
