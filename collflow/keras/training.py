"""Keras's training loop (TF 1.15's v1 loop) for Model: fit / evaluate / predict over NumPy
arrays, tf.data Datasets or generators, fit_generator and friends, and the *_on_batch calls.

An epoch's loss and metrics are the batch values averaged with the batch sizes as weights;
validation runs at each epoch's end under "val_" names; callbacks see TF1's hooks."""
from __future__ import annotations

import itertools
from typing import Any, List, Optional, Sequence

import numpy as np

from ..graph import graph as _g
from . import backend as K
from . import callbacks as _cb
from . import distributed_fit as _dfit
from .data_adapter import ArraySource, DatasetSource, GeneratorSource, is_dataset, is_generator
from .data_adapter import Sequence as Sequence_

__all__ = ["TrainingLoop", "as_list", "standardize"]


def as_list(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def standardize(x: Any, inputs: List[_g.Tensor], what: str) -> List[np.ndarray]:
    """x as one array per model input (a dict is matched by input names), shapes checked."""
    if isinstance(x, dict):
        from .layers import input_name
        names = [input_name(t) for t in inputs]
        missing = [n for n in names if n not in x]
        if missing:
            raise ValueError(f"No data provided for {missing}. Need data for each key in: {sorted(names)}")
        arrays = [np.asarray(x[n]) for n in names]
    else:
        arrays = [np.asarray(a) for a in as_list(x)]
    if len(arrays) != len(inputs):
        raise ValueError(f"Error when checking model {what}: the list of Numpy arrays that you are passing to your "
                         f"model is not the size the model expected. Expected to see {len(inputs)} array(s), but "
                         f"instead got {len(arrays)}")
    for a, t in zip(arrays, inputs):
        want = t.shape.as_list() if t.shape.rank is not None else None
        if want is not None and (a.ndim != len(want) or
                                 any(w is not None and w != d for w, d in zip(want[1:], a.shape[1:]))):
            raise ValueError(f"Error when checking {what}: expected {t.op.name} to have shape {tuple(want)} but got "
                             f"array with shape {a.shape}")
    if len({len(a) for a in arrays}) > 1:
        raise ValueError(f"All input arrays (x) should have the same number of samples. Got array shapes: "
                         f"{[a.shape for a in arrays]}")
    return arrays


def _weights(sample_weight: Any) -> Any:
    """Sample weights as float32: one vector for every output, or a list (or dict) per output."""
    if sample_weight is None:
        return None
    if isinstance(sample_weight, (list, tuple)):
        return [np.asarray(w, np.float32) for w in sample_weight]
    return np.asarray(sample_weight, np.float32)


class TrainingLoop:
    """The fit/evaluate/predict half of Model (it supplies inputs, outputs, total_loss,
    metrics, _feed, _targets, _train_function, _build_from, _require_*)."""

    # -- sources ------------------------------------------------------------------------------
    def _source(self, x: Any, y: Any, sample_weight: Any, batch_size: Optional[int], steps: Optional[int],
                shuffle: bool, with_targets: bool, what: str) -> Any:
        std = lambda v: standardize(v, self.inputs, what)  # noqa: E731
        if is_dataset(x):
            if y is not None:
                raise ValueError("`y` argument is not supported when using dataset as input.")
            return DatasetSource(x, steps, std, self._targets, with_targets, K.get_session)
        if is_generator(x):
            return GeneratorSource(x, steps, std, self._targets, with_targets, shuffle)
        if steps is not None:
            raise NotImplementedError("steps with NumPy inputs are not supported by collflow's Keras; use batch_size")
        if with_targets and y is None:
            raise ValueError("fit/evaluate on arrays need the targets `y`")
        xs = std(x)
        batch_size = self._static_batch_size(batch_size, xs)
        src = ArraySource(xs, None if y is None else self._targets(y), _weights(sample_weight),
                          int(batch_size or 32), shuffle)
        if shuffle and _dfit.replicas(self) > 1:
            # the replicas split one global batch: every rank takes rank 0's shuffled order
            src.order_hook = lambda index: _dfit.shared_order(self, index)
        return src

    def _static_batch_size(self, batch_size: Optional[int], xs: List[Any]) -> Optional[int]:
        """Keras's batch size check: a model whose inputs fix the batch dimension (a stateful
        RNN's batch_input_shape) runs batches of that size; another batch_size is an error, and
        a stateful model needs a number of samples that size divides."""
        fixed = {t.shape.as_list()[0] for t in getattr(self, "inputs", []) if t.shape.rank} - {None}
        if not fixed:
            return batch_size
        static = fixed.pop()
        if batch_size is not None and int(batch_size) != static:
            raise ValueError(f"The `batch_size` argument value {batch_size} is incompatible with the specified "
                             f"batch size of your Input Layer: {static}")
        stateful = any(getattr(layer, "stateful", False) for layer in getattr(self, "layers", []))
        n = len(xs[0]) if xs else 0
        if stateful and n % static:
            raise ValueError("In a stateful network, you should only pass inputs with a number of samples that can "
                             f"be divided by the batch size. Found: {n} samples")
        return static

    def _run(self, fetches: List[Any], batches: Any, train: bool,
             callbacks: Optional[_cb.CallbackList] = None) -> List[float]:
        sess = K.get_session()
        # the loss and the metrics average over samples; a several-output model's per-output
        # losses over batches (TF's Mean of each batch's value)
        per_batch = np.array([False] + list(getattr(self, "_per_batch", [])))
        # a Metric object's value is its own running result over the run (TF 1.15), from zero
        stateful = np.zeros(len(per_batch), dtype=bool)
        stateful[[i for i, _ in getattr(self, "_stateful_metrics", [])]] = True
        self.reset_metrics()
        totals = np.zeros(len(fetches) - (1 if train else 0))
        last = totals
        n = batches_seen = 0
        for b, (xs, y, w) in enumerate(batches):
            size = len(xs[0])
            if callbacks is not None:
                callbacks.on_train_batch_begin(b, {"batch": b, "size": size})
            out = sess.run(fetches, self._feed(xs, y, w, train))
            vals = np.asarray(out[1:] if train else out, dtype=np.float64)
            totals += np.where(per_batch, vals, vals * size)
            last = vals
            n += size
            batches_seen += 1
            if callbacks is not None:
                callbacks.on_train_batch_end(b, dict(zip(self.metrics_names, map(float, vals)), batch=b, size=size))
        if n == 0:
            raise ValueError("no batches: the input is empty")
        return [float(v) for v in np.where(stateful, last, np.where(per_batch, totals / batches_seen, totals / n))]

    @property
    def _loss_fetch(self) -> Any:
        """The loss fit/evaluate report: the whole global batch's under a strategy's replicas."""
        report = getattr(self, "_report_loss", None)
        return self.total_loss if report is None else report

    @property
    def metrics(self) -> List[Any]:
        """The Metric objects given to compile (string metrics are not objects here)."""
        return [m for _, m in getattr(self, "_stateful_metrics", [])]

    def reset_metrics(self) -> None:
        """Zeros the state of the compiled Metric objects."""
        ops = [op for op in (m.reset_op() for m in self.metrics) if op is not None]
        if ops:
            K.get_session().run(ops)

    # -- fit ----------------------------------------------------------------------------------
    def fit(self, x: Any = None, y: Any = None, batch_size: Optional[int] = None, epochs: int = 1, verbose: int = 1,
            callbacks: Optional[Sequence[_cb.Callback]] = None, validation_split: float = 0.0,
            validation_data: Any = None, shuffle: Any = True, class_weight: Any = None, sample_weight: Any = None,
            initial_epoch: int = 0, steps_per_epoch: Any = None, validation_steps: Any = None,
            validation_freq: Any = 1, **kwargs: Any) -> _cb.History:
        """Trains on arrays, a tf.data Dataset of (x, y[, w]) or a generator; returns the History.
        validation_freq: validate every N epochs, or on the epochs (1-based) listed."""
        if is_generator(x) and not isinstance(x, Sequence_) and not self.outputs:
            # a model built on data takes the generator's first batch to see its shapes (and
            # trains on it first, as Keras does)
            first = next(x)
            x = itertools.chain([first], x)
            self._build_from(first[0] if isinstance(first, tuple) else first)
        self._build_from(self._first_inputs(x))
        self._require_compiled()
        if class_weight is not None and len(self.outputs) > 1 and not isinstance(class_weight, dict):
            raise ValueError("class_weight for a several-output model must be a dict")
        self._class_weight = dict(class_weight) if class_weight else None
        val = None
        if validation_data is not None:
            if is_dataset(validation_data) or is_generator(validation_data):
                val = self._source(validation_data, None, None, batch_size, validation_steps, False, True,
                                   "validation input")
            else:
                vw = validation_data[2] if len(validation_data) > 2 else None
                # TF 1.15's array loop validates with its default shuffle=True: the validation
                # samples are np.random-shuffled at each validation whatever fit's `shuffle`
                # (order-free values agree; a several-output model's per-output losses, means
                # of the batch values, depend on which samples share a batch)
                val = self._source(validation_data[0], validation_data[1], vw, batch_size, None,
                                   not is_generator(x), True, "validation input")
        elif validation_split and 0.0 < validation_split < 1.0:
            if is_dataset(x) or is_generator(x):
                raise ValueError("`validation_split` is only supported for Tensors or NumPy arrays")
            xs = standardize(x, self.inputs, "input")
            ys = self._targets(y)
            split = int(len(ys[0]) * (1.0 - validation_split))
            w = _weights(sample_weight)

            def part(ws: Any, sl: slice) -> Any:
                return None if ws is None else [a[sl] for a in ws] if isinstance(ws, list) else ws[sl]
            val = ArraySource([a[split:] for a in xs], [a[split:] for a in ys], part(w, slice(split, None)),
                              int(batch_size or 32), True)  # shuffled, as above
            x, y = [a[:split] for a in xs], [a[:split] for a in ys]
            y = y if len(y) > 1 else y[0]
            sample_weight = part(w, slice(None, split))
        source = self._source(x, y, sample_weight, batch_size, steps_per_epoch, bool(shuffle), True, "input")
        if isinstance(validation_freq, int):
            if validation_freq < 1:
                raise ValueError("`validation_freq` can not be less than 1.")
            run_val = lambda e: (e + 1) % validation_freq == 0  # noqa: E731
        else:
            wanted = set(int(v) for v in validation_freq)
            run_val = lambda e: (e + 1) in wanted  # noqa: E731
        return self._fit_loop(source, val, epochs, verbose, callbacks, initial_epoch, run_val)

    def _first_inputs(self, x: Any) -> Any:
        """A sample of the inputs to build a model on (arrays as given; a Dataset's or
        Sequence's first element's inputs)."""
        if is_dataset(x):
            shapes, types = x.output_shapes, x.output_types
            if isinstance(shapes, tuple):
                shapes, types = shapes[0], types[0]
            if isinstance(shapes, dict):
                shapes, types = list(shapes.values()), list(types.values())
            return [np.zeros([1] + s.as_list()[1:], dtype=t.np) for s, t in zip(as_list(shapes), as_list(types))]
        if isinstance(x, Sequence_):
            first = x[0]
            return first[0] if isinstance(first, tuple) else first
        return None if is_generator(x) else x

    def _fit_loop(self, source: Any, val: Any, epochs: int, verbose: int, callbacks: Any,
                  initial_epoch: int, run_val: Any = lambda e: True) -> _cb.History:
        train_op = self._train_function()
        history = _cb.History()
        # History after the user's callbacks, as Keras: it records what they add to the logs
        # (lr); then verbose's ProgbarLogger (TF 1.15's order), counting samples of arrays
        from .callbacks_more import ProgbarLogger
        samples = len(source.xs[0]) if isinstance(source, ArraySource) and source.xs else None
        steps = None if samples is not None else getattr(source, "steps", None)
        if steps is None and isinstance(getattr(source, "gen", None), Sequence_):
            steps = len(source.gen)
        shown = [ProgbarLogger("samples" if samples is not None else "steps")] if verbose else []
        cbs = _cb.CallbackList(list(callbacks or []) + [history] + shown)
        for c in cbs.callbacks:
            c.set_model(self)
            c.set_params({"epochs": epochs, "verbose": verbose, "samples": samples, "steps": steps,
                          "batch_size": getattr(source, "batch_size", None), "do_validation": val is not None,
                          "metrics": self.metrics_names + ["val_" + n for n in self.metrics_names] * (val is not None)})
        counted = samples if samples is not None else steps if isinstance(source, DatasetSource) else None
        if verbose and counted is not None:  # TF 1.15's array / dataset loop says what it trains on
            unit = "samples" if samples is not None else "steps"
            n_val = None if val is None else len(val.xs[0]) if isinstance(val, ArraySource) and val.xs else \
                getattr(val, "steps", None)
            print(f"Train on {counted} {unit}" + (f", validate on {n_val} {unit}" if n_val else ""))
        self.stop_training = False
        cbs.on_train_begin({})
        fetches = [train_op, self._loss_fetch] + self._metric_tensors
        for epoch in range(initial_epoch, epochs):
            cbs.on_epoch_begin(epoch, {})
            logs = dict(zip(self.metrics_names, self._run(fetches, source.epoch(), True, cbs)))
            if val is not None and run_val(epoch):
                vvals = self._run([self._loss_fetch] + self._metric_tensors, val.epoch(), False)
                logs.update({"val_" + k: v for k, v in zip(self.metrics_names, vvals)})
            cbs.on_epoch_end(epoch, logs)  # verbose's ProgbarLogger shows them
            if self.stop_training:
                break
        cbs.on_train_end({})
        self._class_weight = None
        return history

    def fit_generator(self, generator: Any, steps_per_epoch: Optional[int] = None, epochs: int = 1,
                      verbose: int = 1, callbacks: Any = None, validation_data: Any = None,
                      validation_steps: Optional[int] = None, validation_freq: int = 1, class_weight: Any = None,
                      max_queue_size: int = 10, workers: int = 1, use_multiprocessing: bool = False,
                      shuffle: bool = True, initial_epoch: int = 0) -> _cb.History:
        """fit() over a generator or keras.utils.Sequence of (x, y[, w]) batches."""
        return self.fit(generator, steps_per_epoch=steps_per_epoch, epochs=epochs, verbose=verbose,
                        callbacks=callbacks, validation_data=validation_data, validation_steps=validation_steps,
                        class_weight=class_weight, shuffle=shuffle, initial_epoch=initial_epoch,
                        validation_freq=validation_freq)

    # -- evaluate / predict ----------------------------------------------------------------------
    def evaluate(self, x: Any = None, y: Any = None, batch_size: Optional[int] = None, verbose: int = 1,
                 sample_weight: Any = None, steps: Any = None, callbacks: Any = None, **kwargs: Any) -> Any:
        """The loss (and metrics) over the data, test mode: a scalar, or [loss, *metrics]."""
        self._build_from(self._first_inputs(x))
        self._require_compiled()
        source = self._source(x, y, sample_weight, batch_size, steps, False, True, "input")
        vals = self._run([self._loss_fetch] + self._metric_tensors, source.epoch(), False)
        if verbose:
            print(" - ".join(f"{k}: {v:.4f}" for k, v in zip(self.metrics_names, vals)))
        return vals[0] if len(vals) == 1 else vals

    def evaluate_generator(self, generator: Any, steps: Optional[int] = None, **kwargs: Any) -> Any:
        return self.evaluate(generator, steps=steps, verbose=kwargs.get("verbose", 0))

    def predict(self, x: Any, batch_size: Optional[int] = None, verbose: int = 0, steps: Any = None,
                **kwargs: Any) -> Any:
        """The outputs for x (arrays, a Dataset or a generator), in batches, test mode (NumPy)."""
        self._build_from(self._first_inputs(x))
        self._require_built()
        source = self._source(x, None, None, batch_size, steps, False, False, "input")
        sess = K.get_session()
        parts = [sess.run(self.outputs, self._feed(xs, None, None, False)) for xs, _, _ in source.epoch()]
        outs = [np.concatenate([p[i] for p in parts]) if parts else np.zeros((0,)) for i in range(len(self.outputs))]
        return outs[0] if len(outs) == 1 else outs

    def predict_generator(self, generator: Any, steps: Optional[int] = None, **kwargs: Any) -> Any:
        return self.predict(generator, steps=steps)

    # -- one batch -----------------------------------------------------------------------------
    def train_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None, class_weight: Any = None,
                       reset_metrics: bool = True) -> Any:
        self._build_from(x)
        self._require_compiled()
        xs = standardize(x, self.inputs, "input")
        train_op = self._train_function()  # first: the session then initializes the optimizer's state
        out = K.get_session().run([train_op, self._loss_fetch] + self._metric_tensors,
                                  self._feed(xs, self._targets(y), sample_weight, True))[1:]
        if reset_metrics:  # after the batch, as TF 1.15: the next call starts from zero
            self.reset_metrics()
        return float(out[0]) if len(out) == 1 else [float(v) for v in out]

    def test_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None, reset_metrics: bool = True) -> Any:
        self._build_from(x)
        self._require_compiled()
        out = K.get_session().run([self._loss_fetch] + self._metric_tensors,
                                  self._feed(standardize(x, self.inputs, "input"), self._targets(y), sample_weight,
                                             False))
        if reset_metrics:
            self.reset_metrics()
        return float(out[0]) if len(out) == 1 else [float(v) for v in out]

    def predict_on_batch(self, x: Any) -> Any:
        self._build_from(x)
        return self.predict(x, batch_size=len(standardize(x, self.inputs, "input")[0]) or 1)
