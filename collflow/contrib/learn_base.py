"""TF 1.x's tf.contrib.learn.Estimator (the TF 1.0-1.4 API) on collflow's tf.estimator.Estimator.

A contrib model_fn(features, labels[, mode][, params][, config]) returns a ModelFnOps or the
legacy tuple (predictions, loss, train_op); it is wrapped into a core model_fn giving an
EstimatorSpec, so training, checkpoints and sessions are those of collflow/estimator.  fit,
evaluate and predict also take NumPy `x`/`y` (fed in batches, shuffled and repeated for fit).
"""
from __future__ import annotations

import collections
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from ..estimator import estimator as _core_est
from ..estimator.inputs import numpy_input_fn as _core_numpy_input_fn
from ..estimator.inputs import pandas_input_fn
from ..estimator.model_fn import EstimatorSpec
from ..estimator.model_fn import RunConfig as _CoreRunConfig
from ..train import hooks as _hooks

__all__ = ["Estimator", "ModelFnOps", "MetricSpec", "ModeKeys", "NotFittedError", "RunConfig", "ProblemType",
           "SKCompat", "InputFnOps", "numpy_input_fn", "pandas_input_fn"]


class ModeKeys:
    """tf.contrib.learn.ModeKeys: INFER is the core PREDICT ('infer')."""
    TRAIN = "train"
    EVAL = "eval"
    INFER = "infer"


class ProblemType:
    """The problem kinds of contrib's heads (TF's ProblemType constants)."""
    UNSPECIFIED = 0
    CLASSIFICATION = 1
    LINEAR_REGRESSION = 2
    LOGISTIC_REGRESSION = 3


class NotFittedError(ValueError, AttributeError):
    """Raised by predict/evaluate-like calls on an Estimator that has no checkpoint yet."""


class RunConfig(_CoreRunConfig):
    """tf.contrib.learn.RunConfig: the core RunConfig plus contrib's `environment`,
    `evaluation_master` and `gpu_memory_fraction` (accepted, unused: one local process)."""

    def __init__(self, master: Optional[str] = None, num_cores: int = 0, log_device_placement: bool = False,
                 gpu_memory_fraction: float = 1, tf_random_seed: Optional[int] = None,
                 save_summary_steps: int = 100, save_checkpoints_secs: Any = "_default",
                 save_checkpoints_steps: Optional[int] = None, keep_checkpoint_max: int = 5,
                 keep_checkpoint_every_n_hours: float = 10000, log_step_count_steps: int = 100,
                 protocol: Any = None, evaluation_master: str = "", model_dir: Optional[str] = None,
                 session_config: Any = None, session_creation_timeout_secs: int = 7200):
        super().__init__(model_dir=model_dir, tf_random_seed=tf_random_seed, save_summary_steps=save_summary_steps,
                         save_checkpoints_steps=save_checkpoints_steps, save_checkpoints_secs=save_checkpoints_secs,
                         session_config=session_config, keep_checkpoint_max=keep_checkpoint_max,
                         keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
                         log_step_count_steps=log_step_count_steps, protocol=protocol,
                         session_creation_timeout_secs=session_creation_timeout_secs)
        self._num_cores = num_cores
        self._gpu_memory_fraction = gpu_memory_fraction
        self._log_device_placement = log_device_placement

    environment = property(lambda self: "local")
    gpu_memory_fraction = property(lambda self: self._gpu_memory_fraction)
    num_cores = property(lambda self: self._num_cores)

    def uid(self, whitelist: Any = None) -> str:
        """A string identifying this configuration (TF's RunConfig.uid)."""
        return repr(sorted((k, repr(v)) for k, v in vars(self).items()))


class ModelFnOps(collections.namedtuple("ModelFnOps", [
        "predictions", "loss", "train_op", "eval_metric_ops", "output_alternatives", "training_chief_hooks",
        "training_hooks", "scaffold", "mode"])):
    """What a contrib model_fn returns (TF 1.x's ModelFnOps; the mode comes first in the call)."""

    def __new__(cls, mode: str, predictions: Any = None, loss: Any = None, train_op: Any = None,
                eval_metric_ops: Any = None, output_alternatives: Any = None, training_chief_hooks: Any = None,
                training_hooks: Any = None, scaffold: Any = None):
        if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.INFER):
            raise ValueError(f"Invalid mode {mode!r}: one of train, eval, infer")
        if mode == ModeKeys.TRAIN and (train_op is None or loss is None):
            raise ValueError("Missing train_op." if train_op is None else "Missing loss.")
        if mode == ModeKeys.EVAL and loss is None:
            raise ValueError("Missing loss.")
        if mode == ModeKeys.INFER and predictions is None:
            raise ValueError("Missing predictions.")
        if eval_metric_ops is not None and not isinstance(eval_metric_ops, dict):
            raise TypeError(f"eval_metric_ops must be a dict, given: {eval_metric_ops}")
        return super().__new__(cls, predictions, loss, train_op, dict(eval_metric_ops or {}), output_alternatives,
                               list(training_chief_hooks or []), list(training_hooks or []), scaffold, mode)

    def estimator_spec(self, default_serving_output_alternative_key: Any = None) -> EstimatorSpec:
        """The core EstimatorSpec of these ops."""
        return EstimatorSpec(self.mode, predictions=self.predictions, loss=self.loss, train_op=self.train_op,
                             eval_metric_ops=self.eval_metric_ops, training_chief_hooks=self.training_chief_hooks,
                             training_hooks=self.training_hooks, scaffold=self.scaffold)


InputFnOps = collections.namedtuple("InputFnOps", ["features", "labels", "default_inputs"])


_OWN_LOSS = "__contrib_model_loss__"


def _own_loss(results: Dict[str, Any]) -> Dict[str, Any]:
    if _OWN_LOSS in results:
        results["loss"] = results.pop(_OWN_LOSS)
    return results


def _args(fn: Callable) -> List[str]:
    return _core_est._fn_args(fn)


class MetricSpec:
    """A metric_fn with the keys of its inputs: metric_fn(predictions=, labels=[, weights=])
    over predictions[prediction_key], labels[label_key] and features[weight_key]."""

    def __init__(self, metric_fn: Callable, prediction_key: Optional[str] = None, label_key: Optional[str] = None,
                 weight_key: Optional[str] = None):
        if not callable(metric_fn):
            raise TypeError(f"metric_fn must be callable, got {metric_fn!r}")
        self._metric_fn = metric_fn
        self._prediction_key, self._label_key, self._weight_key = prediction_key, label_key, weight_key

    metric_fn = property(lambda self: self._metric_fn)
    prediction_key = property(lambda self: self._prediction_key)
    label_key = property(lambda self: self._label_key)
    weight_key = property(lambda self: self._weight_key)

    @staticmethod
    def _pick(value: Any, key: Optional[str], what: str) -> Any:
        if key is not None:
            if not isinstance(value, dict) or key not in value:
                raise KeyError(f"MetricSpec: {what} key {key!r} not in {what}s "
                               f"{sorted(value) if isinstance(value, dict) else type(value).__name__}")
            return value[key]
        if isinstance(value, dict):
            if len(value) != 1:
                raise ValueError(f"MetricSpec without a {what}_key but the {what}s are a dict with keys "
                                 f"{sorted(value)}: give {what}_key")
            return next(iter(value.values()))
        return value

    def create_metric_ops(self, inputs: Any, labels: Any, predictions: Any) -> Any:
        """The (value, update_op) of metric_fn over the picked tensors."""
        p = self._pick(predictions, self._prediction_key, "prediction")
        lab = self._pick(labels, self._label_key, "label")
        kwargs: Dict[str, Any] = {}
        if self._weight_key is not None:
            if not isinstance(inputs, dict) or self._weight_key not in inputs:
                raise KeyError(f"MetricSpec: weight key {self._weight_key!r} not in the features")
            kwargs["weights"] = inputs[self._weight_key]
        args = _args(self._metric_fn)
        if "predictions" in args and "labels" in args:
            return self._metric_fn(predictions=p, labels=lab, **kwargs)
        return self._metric_fn(lab, p, **kwargs) if args[:1] == ["labels"] else self._metric_fn(p, lab, **kwargs)


def _make_metric_ops(metrics: Dict[str, Any], features: Any, labels: Any, predictions: Any) -> Dict[str, Any]:
    out = {}
    for name, metric in (metrics or {}).items():
        if isinstance(metric, MetricSpec):
            out[name] = metric.create_metric_ops(features, labels, predictions)
        elif isinstance(name, tuple):  # TF 1.x's deprecated (name, prediction key) keys
            if not isinstance(predictions, dict):
                raise ValueError(f"Metric key {name} names a prediction key, but the predictions are not a dict")
            out[name[0]] = metric(predictions[name[1]], labels)
        else:
            if isinstance(predictions, dict):
                raise ValueError(f"Metric {name!r} is a bare function but the predictions are a dict with keys "
                                 f"{sorted(predictions)}: use MetricSpec(metric_fn, prediction_key=...)")
            out[name] = metric(predictions, labels)
    return out


# -- NumPy input -------------------------------------------------------------------------------------------

def numpy_input_fn(x: Any, y: Any = None, batch_size: int = 128, num_epochs: Optional[int] = 1,
                   shuffle: bool = True, queue_capacity: int = 1000, num_threads: int = 1) -> Callable:
    """tf.contrib.learn.io.numpy_input_fn: the core one, shuffling by default."""
    return _core_numpy_input_fn(x, y, batch_size=batch_size, num_epochs=num_epochs, shuffle=bool(shuffle),
                                queue_capacity=queue_capacity, num_threads=num_threads)


def _num_rows(x: Any) -> int:
    if isinstance(x, dict):
        if not x:
            raise ValueError("x cannot be an empty dict")
        return len(np.asarray(next(iter(x.values()))))
    return len(np.asarray(x))


def _input_fn_from_arrays(x: Any, y: Any, batch_size: Optional[int], train: bool) -> Callable:
    """The input_fn of fit's/evaluate's/predict's x and y: fit shuffles and repeats forever,
    the others read the rows once in order.  batch_size None: all the rows in one batch."""
    if hasattr(x, "values") and hasattr(x, "columns"):  # a pandas DataFrame
        x = {str(c): x[c].values for c in x.columns}
    if hasattr(y, "values") and not isinstance(y, (dict, np.ndarray)):
        y = y.values
    x = x if isinstance(x, dict) else np.asarray(x)
    n = _num_rows(x)
    if batch_size is not None and batch_size <= 0:
        raise ValueError(f"batch_size must be > 0, got {batch_size}")
    bs = int(batch_size) if batch_size is not None else n
    return _core_numpy_input_fn(x, y, batch_size=bs, num_epochs=None if train else 1, shuffle=train,
                                queue_capacity=max(n, 1))


def _check_input(x: Any, y: Any, input_fn: Any, feed_fn: Any = None) -> None:
    if input_fn is None and x is None:
        raise ValueError("Either x or input_fn must be provided.")
    if input_fn is not None and (x is not None or y is not None):
        raise ValueError("Can not provide both input_fn and x or y.")
    if feed_fn is not None:
        raise ValueError("feed_fn is not supported by collflow: give an input_fn that returns the tensors")


class Estimator(_core_est.Estimator):
    """tf.contrib.learn.Estimator: fit/evaluate/predict over a contrib model_fn."""

    def __init__(self, model_fn: Optional[Callable] = None, model_dir: Optional[str] = None, config: Any = None,
                 params: Optional[dict] = None, feature_engineering_fn: Optional[Callable] = None):
        if model_fn is None:
            raise ValueError("model_fn must be provided to Estimator.")
        args = _args(model_fn)
        if params is not None and "params" not in args:
            raise ValueError(f"Estimator's model_fn ({model_fn}) does not have a params argument, but params "
                             f"({params}) were passed to the Estimator's constructor.")
        if params is None and "params" in args:
            raise ValueError(f"Estimator's model_fn ({model_fn}) has a params argument, but no params are passed "
                             "to the Estimator's constructor.")
        self._contrib_model_fn = model_fn
        self._feature_engineering_fn = feature_engineering_fn or (lambda features, labels: (features, labels))
        self._contrib_params = params
        self._extra_metrics: Optional[dict] = None
        config = config if config is not None else RunConfig()
        super().__init__(self._wrapped_model_fn, model_dir=model_dir, config=config)

    params = property(lambda self: self._contrib_params)
    model_fn = property(lambda self: self._contrib_model_fn)

    def _get_model_fn_ops(self, features: Any, labels: Any, mode: str) -> ModelFnOps:
        features, labels = self._feature_engineering_fn(features, labels)
        args = _args(self._contrib_model_fn)
        kwargs: Dict[str, Any] = {}
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self._contrib_params
        if "config" in args:
            kwargs["config"] = self.config
        out = self._contrib_model_fn(features, labels, **kwargs)
        if isinstance(out, ModelFnOps):
            return out
        if isinstance(out, EstimatorSpec):
            return ModelFnOps(out.mode, out.predictions, out.loss, out.train_op, out.eval_metric_ops,
                              training_chief_hooks=out.training_chief_hooks, training_hooks=out.training_hooks,
                              scaffold=out.scaffold)
        if isinstance(out, (tuple, list)) and len(out) == 3:  # the legacy (predictions, loss, train_op)
            predictions, loss, train_op = out
            return ModelFnOps(mode, predictions, loss, train_op if mode == ModeKeys.TRAIN else None)
        raise ValueError(f"model_fn must return a ModelFnOps or a (predictions, loss, train_op) tuple, got {out!r}")

    def _wrapped_model_fn(self, features: Any, labels: Any, mode: str, config: Any) -> EstimatorSpec:
        ops = self._get_model_fn_ops(features, labels, mode)
        if mode == ModeKeys.EVAL and self._extra_metrics:
            extra = _make_metric_ops(self._extra_metrics, features, labels, ops.predictions)
            ops = ops._replace(eval_metric_ops={**ops.eval_metric_ops, **extra})
        if mode == ModeKeys.EVAL and "loss" in ops.eval_metric_ops:
            # contrib keeps a model's own 'loss' metric (core would add the mean of the loss)
            ops.eval_metric_ops[_OWN_LOSS] = ops.eval_metric_ops.pop("loss")
        return ops._replace(mode=mode).estimator_spec()

    def _require_fitted(self) -> str:
        path = self.latest_checkpoint()
        if path is None:
            raise NotFittedError(f"Couldn't find trained model at {self.model_dir}.")
        return path

    # -- fit -----------------------------------------------------------------------------------------------
    def fit(self, x: Any = None, y: Any = None, input_fn: Optional[Callable] = None, steps: Optional[int] = None,
            batch_size: Optional[int] = None, monitors: Optional[Sequence[Any]] = None,
            max_steps: Optional[int] = None) -> "Estimator":
        """Trains on x/y (shuffled, repeated batches of batch_size; None: all rows) or input_fn's
        tensors for `steps` more steps or up to global step max_steps; monitors are SessionRunHooks
        (ValidationMonitor included).  Returns self."""
        _check_input(x, y, input_fn)
        if x is not None and steps is None and max_steps is None:
            raise ValueError("fit with x and y runs forever without steps or max_steps")
        if input_fn is None:
            input_fn = _input_fn_from_arrays(x, y, batch_size, train=True)
        elif batch_size is not None:
            raise ValueError("Can not provide both input_fn and batch_size.")
        hooks = []
        for m in monitors or []:
            if not isinstance(m, _hooks.SessionRunHook):
                raise TypeError(f"monitors must be SessionRunHooks (or contrib.learn monitors), got {m!r}")
            if hasattr(m, "_set_estimator"):
                m._set_estimator(self)
            hooks.append(m)
        self.train(input_fn, hooks=hooks, steps=steps, max_steps=max_steps)
        return self

    def partial_fit(self, x: Any = None, y: Any = None, input_fn: Optional[Callable] = None, steps: int = 1,
                    batch_size: Optional[int] = None, monitors: Optional[Sequence[Any]] = None) -> "Estimator":
        """fit for `steps` more steps (TF's partial_fit: one step by default)."""
        return self.fit(x=x, y=y, input_fn=input_fn, steps=steps, batch_size=batch_size, monitors=monitors)

    # -- evaluate ------------------------------------------------------------------------------------------
    def evaluate(self, x: Any = None, y: Any = None, input_fn: Optional[Callable] = None, feed_fn: Any = None,
                 batch_size: Optional[int] = None, steps: Optional[int] = None, metrics: Optional[dict] = None,
                 name: Optional[str] = None, checkpoint_path: Optional[str] = None,
                 hooks: Optional[Sequence[Any]] = None, log_progress: bool = True) -> Dict[str, Any]:
        """The model's eval metrics plus `metrics` (name -> MetricSpec or fn(predictions, labels))
        over x/y (read once) or input_fn, with `loss` and `global_step`."""
        _check_input(x, y, input_fn, feed_fn)
        if metrics is not None and not isinstance(metrics, dict):
            raise ValueError(f"Metrics argument should be None or dict. Got {metrics}.")
        if input_fn is None:
            input_fn = _input_fn_from_arrays(x, y, batch_size, train=False)
        if checkpoint_path is None:
            self._require_fitted()
        self._extra_metrics = metrics
        try:
            out = super().evaluate(input_fn, steps=steps, hooks=hooks, checkpoint_path=checkpoint_path, name=name)
        finally:
            self._extra_metrics = None
        return _own_loss(out)

    def _write_eval_summary(self, results: Dict[str, Any], name: Optional[str]) -> None:
        super()._write_eval_summary(_own_loss(dict(results)), name)

    # -- predict -------------------------------------------------------------------------------------------
    def predict(self, x: Any = None, input_fn: Optional[Callable] = None, batch_size: Optional[int] = None,
                outputs: Optional[Sequence[str]] = None, as_iterable: bool = True,
                iterate_batches: bool = False) -> Any:
        """The predictions of x (read once) or input_fn's features: with as_iterable one dict
        (or value) per example; otherwise one run's, as TF 1.15's (a dict of arrays: all of
        x without a batch_size, else its first batch; input_fn's first batch, so an input_fn
        of constants, which never ends, gives its batch)."""
        _check_input(x, None, input_fn)
        if input_fn is None:
            input_fn = _input_fn_from_arrays(x, None, batch_size, train=False)
        self._require_fitted()
        if outputs is not None and isinstance(outputs, str):
            outputs = [outputs]
        if as_iterable:
            return super().predict(input_fn, predict_keys=outputs, yield_single_examples=not iterate_batches)
        gen = super().predict(input_fn, predict_keys=outputs, yield_single_examples=False)
        try:
            return next(gen, {})
        finally:
            gen.close()

    def get_variable_value(self, name: str) -> np.ndarray:
        """The value of variable `name` in the newest checkpoint (NotFittedError before one)."""
        self._require_fitted()
        return super().get_variable_value(name)

    def get_variable_names(self) -> List[str]:
        """The names of the variables in the newest checkpoint (NotFittedError before one)."""
        self._require_fitted()
        return super().get_variable_names()

    def export_savedmodel(self, export_dir_base: str, serving_input_fn: Callable,
                          default_output_alternative_key: Any = None, assets_extra: Any = None,
                          as_text: bool = False, checkpoint_path: Optional[str] = None,
                          graph_rewrite_specs: Any = None, strip_default_attrs: bool = False) -> bytes:
        """A SavedModel (predict signature of the predictions) over serving_input_fn's inputs: an
        InputFnOps (features, labels, default_inputs) or a core ServingInputReceiver; returns
        the export directory as bytes."""
        from ..estimator.export import ServingInputReceiver
        if checkpoint_path is None:
            self._require_fitted()

        def receiver_fn() -> Any:
            out = serving_input_fn()
            if isinstance(out, InputFnOps):
                return ServingInputReceiver(out.features, out.default_inputs)
            return out
        return self.export_saved_model(export_dir_base, receiver_fn, checkpoint_path=checkpoint_path)

    def export(self, *args: Any, **kwargs: Any) -> Any:
        """TF 1.x's old export: refused; use export_savedmodel."""
        raise NotImplementedError("contrib.learn's Estimator.export (session_bundle) is not provided by collflow: "
                                  "use export_savedmodel")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_dir={self.model_dir!r})"


class SKCompat:
    """sklearn-style fit(x, y)/score(x, y)/predict(x) over a contrib Estimator."""

    def __init__(self, estimator: Estimator):
        self._estimator = estimator

    def fit(self, x: Any, y: Any, batch_size: int = 128, steps: Optional[int] = None, max_steps: Optional[int] = None,
            monitors: Optional[Sequence[Any]] = None) -> "SKCompat":
        """sklearn-style fit of the wrapped Estimator on arrays x and y."""
        self._estimator.fit(x=x, y=y, batch_size=batch_size, steps=steps, max_steps=max_steps, monitors=monitors)
        return self

    def score(self, x: Any, y: Any, batch_size: int = 128, steps: Optional[int] = None,
              metrics: Optional[dict] = None, name: Optional[str] = None) -> Dict[str, Any]:
        """The wrapped Estimator's evaluate on arrays x and y (its metrics dict)."""
        return self._estimator.evaluate(x=x, y=y, batch_size=batch_size, steps=steps, metrics=metrics, name=name)

    def predict(self, x: Any, batch_size: int = 128, outputs: Optional[Sequence[str]] = None) -> Any:
        """The predictions of all of x, batch by batch, concatenated (a dict of arrays), as TF's."""
        batches = list(Estimator.predict(self._estimator, x=x, batch_size=batch_size, outputs=outputs,
                                         as_iterable=True, iterate_batches=True))
        if not batches:
            return {}
        if isinstance(batches[0], dict):
            return {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}
        return np.concatenate(batches)

