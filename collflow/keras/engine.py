"""tf.keras Model and Sequential in TF1's graph mode: compile / fit / evaluate / predict over
the graph the layers built, run in Keras's session (backend.get_session).

One model output (a loss per output is not supported).  fit() runs TF 1.15's loop over NumPy
arrays: per epoch the samples are shuffled with np.random (unless shuffle=False), cut into
batches, each batch runs the train op with the learning phase on; an epoch's loss and metrics
are the batch values averaged with the batch sizes as weights; validation runs at each epoch's
end under "val_" names.  Weights are saved as Keras's HDF5 layout (".h5": per-layer groups with
weight_names, which Keras's load_weights reads too) or, for other paths, a collflow
checkpoint.
"""
from __future__ import annotations

import os
import time
from typing import Any, List, Optional, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.ops import math_ops as _m
from ..graph.ops.constant_op import group, placeholder
from ..platform.atomic_files import temporary_name
from . import backend as K
from . import callbacks as _cb
from . import losses as _losses
from . import optimizers as _optimizers
from .layers import InputLayer, history_of

__all__ = ["Model", "Sequential"]


def _unique(prefix: str) -> str:
    """Keras's object names: prefix, prefix_1, prefix_2, ... per graph."""
    uid = K.get_uid(prefix)
    return prefix if uid == 1 else f"{prefix}_{uid - 1}"


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _standardize(x: Any, inputs: List[_g.Tensor], what: str) -> List[np.ndarray]:
    if isinstance(x, dict):
        by_name = {t.op.name: t for t in inputs}
        missing = [t.op.name for t in inputs if t.op.name not in x]
        if missing:
            raise ValueError(f"No data provided for {missing}. Need data for each key in: {sorted(by_name)}")
        arrays = [np.asarray(x[t.op.name]) for t in inputs]
    else:
        arrays = [np.asarray(a) for a in _as_list(x)]
    if len(arrays) != len(inputs):
        raise ValueError(f"Error when checking model {what}: the list of Numpy arrays that you are passing to your "
                         f"model is not the size the model expected. Expected to see {len(inputs)} array(s), but "
                         f"instead got {len(arrays)}")
    for a, t in zip(arrays, inputs):
        want = t.shape.as_list() if t.shape.rank is not None else None
        if want is not None and (a.ndim != len(want) or any(w is not None and w != d for w, d in zip(want[1:], a.shape[1:]))):
            raise ValueError(f"Error when checking {what}: expected {t.op.name} to have shape {tuple(want)} but got "
                             f"array with shape {a.shape}")
    n = {len(a) for a in arrays}
    if len(n) > 1:
        raise ValueError(f"All input arrays (x) should have the same number of samples. Got array shapes: "
                         f"{[a.shape for a in arrays]}")
    return arrays


class Model:
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
        self.inputs = [_g.convert_to_tensor(t) for t in inputs]
        self.outputs = [_g.convert_to_tensor(t) for t in outputs]
        order: List[Any] = []
        seen: set = set()
        stop = set(self.inputs)

        def visit(t: Any) -> None:
            if t in stop:
                return
            rec = history_of(t)
            if rec is None:
                raise ValueError(f"Graph disconnected: cannot obtain value for tensor {t.name}: it is not made by a "
                                 "Keras layer from the model's inputs")
            layer, ins = rec
            for i in ins:
                visit(_g.convert_to_tensor(i))
            if id(layer) not in seen:
                seen.add(id(layer))
                order.append(layer)
        for o in self.outputs:
            visit(o)
        self._layers = order

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

    def summary(self, line_length: int = 65, print_fn: Any = print) -> None:
        self._require_built()
        print_fn(f'Model: "{self.name}"')
        print_fn("_" * line_length)
        print_fn(f"{'Layer (type)':<29}{'Output Shape':<22}Param #")
        print_fn("=" * line_length)
        for layer in self._layers:
            n = int(sum(int(np.prod(v.shape.as_list())) for v in layer.weights))
            shape = getattr(layer, "_output_shape", None)
            print_fn(f"{layer.name + ' (' + type(layer).__name__ + ')':<29}{str(shape):<22}{n}")
        print_fn("=" * line_length)
        print_fn(f"Total params: {self.count_params():,}")
        print_fn(f"Trainable params: {sum(int(np.prod(v.shape.as_list())) for v in self.trainable_weights):,}")
        print_fn(f"Non-trainable params: {sum(int(np.prod(v.shape.as_list())) for v in self.non_trainable_weights):,}")
        print_fn("_" * line_length)

    def __call__(self, inputs: Any, training: Any = None, **kwargs: Any) -> Any:
        """The model applied to new tensors (its layers, and so its weights, are shared)."""
        if self._subclassed:
            import inspect
            from ..graph.variable_scope import variable_scope
            if "training" in inspect.signature(self.call).parameters:
                kwargs["training"] = K.learning_phase() if training is None else training
            with variable_scope(self._scope if self._scope is not None else self.name,
                                reuse=True if self.built else None) as vs:
                self._scope = vs
                out = self.call(inputs, **kwargs)
            self.built = True
            return out
        return self._apply_graph(inputs, training)

    def _apply_graph(self, inputs: Any, training: Any) -> Any:
        self._require_built()
        new = {id(t): x for t, x in zip(self.inputs, _as_list(inputs))}

        def value(t: Any) -> Any:
            if id(t) in new:
                return new[id(t)]
            layer, ins = history_of(t)
            args = [value(_g.convert_to_tensor(i)) for i in ins]
            arg = args if len(ins) > 1 else args[0]
            out = layer(arg, training=training) if getattr(layer, "_takes_training", False) else layer(arg)
            new[id(t)] = out
            return out
        outs = [value(o) for o in self.outputs]
        return outs[0] if len(outs) == 1 else outs

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
        it = iter(values)
        try:
            with h5py.File(tmp, "w") as f:
                names = [layer.name for layer in self._layers]
                # fixed-length byte strings, as Keras writes them (its reader expects bytes)
                f.attrs["layer_names"] = np.array([n.encode() for n in names], dtype="S")
                f.attrs["backend"] = b"tensorflow"
                f.attrs["keras_version"] = b"2.2.4-tf"
                for layer in self._layers:
                    grp = f.create_group(layer.name)
                    wnames = [v.name for v in layer.weights]
                    grp.attrs["weight_names"] = np.array([w.encode() for w in wnames], dtype="S")
                    for w in wnames:
                        grp.create_dataset(w, data=next(it))
            os.replace(tmp, filepath)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise

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
            saved = [n.decode() if isinstance(n, bytes) else str(n) for n in f.attrs.get("layer_names", [])]
            groups = {n: f[n] for n in saved}

            def arrays(name: str) -> List[np.ndarray]:
                g = groups[name]
                return [np.asarray(g[w.decode() if isinstance(w, bytes) else w]) for w in g.attrs["weight_names"]]
            pairs = []
            if by_name:
                for layer in self._layers:
                    if layer.name in groups and layer.weights:
                        pairs.append((layer, arrays(layer.name)))
            else:
                with_w = [n for n in saved if len(groups[n].attrs.get("weight_names", [])) > 0]
                layers = [layer for layer in self._layers if layer.weights]
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

    # -- training ----------------------------------------------------------------------------
    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, metrics: Optional[Sequence[Any]] = None,
                loss_weights: Any = None, sample_weight_mode: Any = None, weighted_metrics: Any = None,
                target_tensors: Any = None, **kwargs: Any) -> None:
        """Sets the optimizer (a name, a Keras or tf.train optimizer), the loss (a name or
        function) and the metrics; the graph's loss and train op are built here."""
        if not self.outputs and (self._pending or self._subclassed):
            # built later (by fit's data or build()): compiled then
            self._deferred_compile = dict(optimizer=optimizer, loss=loss, metrics=metrics)
            self._compiled = True
            return
        self._require_built()
        if len(self.outputs) != 1:
            raise NotImplementedError("collflow's Keras trains models of one output only")
        if isinstance(loss, (dict, list)):
            if len(loss) != 1:
                raise NotImplementedError("one loss per output: collflow's Keras trains models of one output only")
            loss = list(loss.values())[0] if isinstance(loss, dict) else loss[0]
        if loss is None:
            raise ValueError("The model needs a loss: compile(loss=...)")
        self.optimizer = _optimizers.get(optimizer)
        self.loss = loss
        self._loss_fn = _losses.get(loss)
        out = self.outputs[0]
        g = out.graph
        with g.as_default(), _g.name_scope(None):
            rank = out.shape.rank if out.shape.rank is not None else 2
            name = out.op.name.split("/")[0]
            self._target = placeholder(out.dtype, [None] * rank, name=f"{name}_target")
            self._weights_in = placeholder(out.dtype, [None], name=f"{name}_sample_weights")
            with _g.name_scope("loss"):
                per = self._loss_fn(self._target, out)
                while per.shape.rank is not None and per.shape.rank > 1:
                    per = _m.reduce_mean(per, axis=-1)
                weighted = per * self._weights_in
                nonzero = _m.reduce_mean(_m.cast(_m.not_equal(self._weights_in, 0.0), out.dtype))
                total = _m.reduce_mean(weighted / nonzero)
                regs = self.losses
                if regs:
                    total = total + _m.add_n(regs)
                self.total_loss = total
            self.metrics_names = ["loss"]
            self._metric_tensors = []
            with _g.name_scope("metrics"):
                for m in metrics or []:
                    mname, fn = _losses.get_metric(m, self._loss_fn, out)
                    v = fn(self._target, out)
                    self.metrics_names.append(mname)
                    self._metric_tensors.append(_m.reduce_mean(v))
            self._train_op = None
        self._compiled = True

    def _train_function(self) -> Any:
        if self._train_op is None:
            g = self._graph()
            with g.as_default():
                with _g.control_dependencies(self.updates):
                    step = self.optimizer.minimize(self.total_loss, var_list=self.trainable_weights)
                self._train_op = group(step, *self.updates)
        return self._train_op

    def _feed(self, xs: List[np.ndarray], y: Optional[np.ndarray], w: Optional[np.ndarray], train: bool) -> dict:
        feed = {t: a for t, a in zip(self.inputs, xs)}
        if y is not None:
            feed[self._target] = y
            feed[self._weights_in] = w if w is not None else np.ones(len(y), dtype=self._weights_in.dtype.np)
        phase = K.learning_phase()
        if _g.is_tensor(phase):
            feed[phase] = train
        return feed

    def _targets(self, y: Any) -> np.ndarray:
        y = np.asarray(y)
        rank = self.outputs[0].shape.rank
        if rank is not None and y.ndim == rank - 1:
            y = y[..., None]  # labels of shape (n,) for an output of shape (n, k), as Keras standardizes them
        return y

    def _run_batches(self, fetches: List[Any], xs: List[np.ndarray], y: Optional[np.ndarray],
                     w: Optional[np.ndarray], batch_size: int, index: np.ndarray, train: bool,
                     callbacks: Optional[_cb.CallbackList] = None) -> List[float]:
        sess = K.get_session()
        totals = np.zeros(len(fetches) - (1 if train else 0))
        for b, start in enumerate(range(0, len(index), batch_size)):
            ids = index[start:start + batch_size]
            feed = self._feed([a[ids] for a in xs], None if y is None else y[ids], None if w is None else w[ids], train)
            if callbacks is not None:
                callbacks.on_train_batch_begin(b, {"batch": b, "size": len(ids)})
            out = sess.run(fetches, feed)
            vals = out[1:] if train else out
            totals += np.asarray(vals, dtype=np.float64) * len(ids)
            if callbacks is not None:
                callbacks.on_train_batch_end(b, dict(zip(self.metrics_names, map(float, vals)), batch=b,
                                                     size=len(ids)))
        return [float(v) for v in totals / max(len(index), 1)]

    def fit(self, x: Any = None, y: Any = None, batch_size: Optional[int] = None, epochs: int = 1, verbose: int = 1,
            callbacks: Optional[Sequence[_cb.Callback]] = None, validation_split: float = 0.0,
            validation_data: Any = None, shuffle: Any = True, class_weight: Any = None, sample_weight: Any = None,
            initial_epoch: int = 0, steps_per_epoch: Any = None, validation_steps: Any = None,
            **kwargs: Any) -> _cb.History:
        """Trains on NumPy arrays (see the module doc); returns the History."""
        self._build_from(x)
        self._require_compiled()
        if steps_per_epoch is not None or class_weight is not None:
            raise NotImplementedError("fit(steps_per_epoch=, class_weight=) are not supported by collflow's Keras")
        xs = _standardize(x, self.inputs, "input")
        ys = self._targets(y)
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float32)
        val = None
        if validation_data is not None:
            vx, vy = validation_data[0], validation_data[1]
            vw = validation_data[2] if len(validation_data) > 2 else None
            val = (_standardize(vx, self.inputs, "validation input"), self._targets(vy), vw)
        elif validation_split and 0.0 < validation_split < 1.0:
            split = int(len(ys) * (1.0 - validation_split))
            val = ([a[split:] for a in xs], ys[split:], None if w is None else w[split:])
            xs, ys, w = [a[:split] for a in xs], ys[:split], None if w is None else w[:split]
        batch_size = int(batch_size or 32)
        train_op = self._train_function()
        history = _cb.History()
        cbs = _cb.CallbackList([history] + list(callbacks or []))
        for c in cbs.callbacks:
            c.set_model(self)
            c.set_params({"batch_size": batch_size, "epochs": epochs, "samples": len(ys), "verbose": verbose,
                          "metrics": self.metrics_names + ["val_" + n for n in self.metrics_names] * (val is not None)})
        self.stop_training = False
        cbs.on_train_begin({})
        n = len(ys)
        for epoch in range(initial_epoch, epochs):
            cbs.on_epoch_begin(epoch, {})
            t0 = time.time()
            index = np.arange(n)
            if shuffle:
                np.random.shuffle(index)
            vals = self._run_batches([train_op, self.total_loss] + self._metric_tensors, xs, ys, w, batch_size,
                                     index, True, cbs)
            logs = dict(zip(self.metrics_names, vals))
            if val is not None:
                vvals = self._evaluate_arrays(val[0], val[1], val[2], batch_size)
                logs.update({"val_" + k: v for k, v in zip(self.metrics_names, vvals)})
            if verbose:
                if verbose == 1:
                    print(f"Epoch {epoch + 1}/{epochs}")
                print(f"{n}/{n} - {time.time() - t0:.0f}s - " + " - ".join(f"{k}: {v:.4f}" for k, v in logs.items()))
            cbs.on_epoch_end(epoch, logs)
            if self.stop_training:
                break
        cbs.on_train_end({})
        return history

    def _evaluate_arrays(self, xs: List[np.ndarray], y: np.ndarray, w: Any, batch_size: int) -> List[float]:
        return self._run_batches([self.total_loss] + self._metric_tensors, xs, y,
                                 None if w is None else np.asarray(w, np.float32), batch_size, np.arange(len(y)), False)

    def evaluate(self, x: Any = None, y: Any = None, batch_size: Optional[int] = None, verbose: int = 1,
                 sample_weight: Any = None, steps: Any = None, callbacks: Any = None, **kwargs: Any) -> Any:
        """The loss (and metrics) over the data, test mode: a scalar, or [loss, *metrics]."""
        self._build_from(x)
        self._require_compiled()
        vals = self._evaluate_arrays(_standardize(x, self.inputs, "input"), self._targets(y), sample_weight,
                                     int(batch_size or 32))
        if verbose:
            print(" - ".join(f"{k}: {v:.4f}" for k, v in zip(self.metrics_names, vals)))
        return vals[0] if len(vals) == 1 else vals

    def predict(self, x: Any, batch_size: Optional[int] = None, verbose: int = 0, steps: Any = None,
                **kwargs: Any) -> Any:
        """The outputs for x, in batches, test mode (NumPy)."""
        self._build_from(x)
        self._require_built()
        xs = _standardize(x, self.inputs, "input")
        sess = K.get_session()
        bs = int(batch_size or 32)
        n = len(xs[0])
        parts: List[List[np.ndarray]] = []
        for start in range(0, n, bs):
            parts.append(sess.run(self.outputs, self._feed([a[start:start + bs] for a in xs], None, None, False)))
        outs = [np.concatenate([p[i] for p in parts]) if parts else np.zeros((0,)) for i in range(len(self.outputs))]
        return outs[0] if len(outs) == 1 else outs

    def train_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None, class_weight: Any = None,
                       reset_metrics: bool = True) -> Any:
        self._require_compiled()
        xs = _standardize(x, self.inputs, "input")
        ys = self._targets(y)
        out = K.get_session().run([self._train_function(), self.total_loss] + self._metric_tensors,
                                  self._feed(xs, ys, sample_weight, True))[1:]
        return float(out[0]) if len(out) == 1 else [float(v) for v in out]

    def test_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None, reset_metrics: bool = True) -> Any:
        self._require_compiled()
        out = K.get_session().run([self.total_loss] + self._metric_tensors,
                                  self._feed(_standardize(x, self.inputs, "input"), self._targets(y), sample_weight,
                                             False))
        return float(out[0]) if len(out) == 1 else [float(v) for v in out]

    def predict_on_batch(self, x: Any) -> Any:
        return self.predict(x, batch_size=len(_standardize(x, self.inputs, "input")[0]) or 1)

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
            if shape is None:
                self._pending.append(layer)
                return
            x = InputLayer(batch_input_shape=shape).output
            self.inputs, self.outputs = [x], [x]
        self._apply(layer)

    def _apply(self, layer: Any) -> None:
        out = layer(self.outputs[0])
        layer._output_shape = tuple(out.shape.as_list()) if out.shape.rank is not None else None
        self.outputs = [out]
        self._layers.append(layer)

    def pop(self) -> None:
        raise NotImplementedError("Sequential.pop() is not supported by collflow (the graph keeps its ops)")

    def build(self, input_shape: Any) -> None:
        """Builds on a placeholder of `input_shape` (batch first) once."""
        if self.outputs:
            return
        x = InputLayer(batch_input_shape=tuple(input_shape)).output
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
            self.build((None,) + np.asarray(x).shape[1:])
