"""tf.keras.estimator.model_to_estimator (TF 1.15's behaviour): an Estimator whose model_fn
rebuilds the compiled Keras model on the input_fn's features and trains, evaluates and
predicts with its loss, optimizer and metrics.

The model's current weights go to a warm-start checkpoint, model_dir/keras/keras_model.ckpt
(written once: a later call finds it), that the Estimator's first graph starts from.  Features
are a dict keyed by the model's input names (or a single tensor, or a list in input order);
{"features": ..., "sample_weights": ...} adds sample weights to the loss.  Labels are a
tensor, a list in output order or a dict keyed by output names; predictions are keyed by
output names.  The Keras optimizer is made afresh from its config and counts the global step
(TF's clone sets optimizer.iterations to it); a tf.train optimizer is used as it is."""
from __future__ import annotations

import os
import re
import tempfile
from typing import Any, Callable, Dict, List, Optional

from ..estimator import Estimator, EstimatorSpec, ModeKeys, RunConfig, WarmStartSettings
from ..estimator.export import PredictOutput
from ..graph import graph as _g
from ..graph.ops import random_ops
from ..graph.ops.constant_op import group
from ..nn import metrics as _metrics
from ..platform import tf_logging as logging
from ..train.global_step import create_global_step, get_global_step
from ..train.saver import Saver, latest_checkpoint
from . import backend as K
from .losses import get as _get_loss, get_metric as _get_metric
from .saving import load_model, model_from_config, model_to_config

__all__ = ["model_to_estimator"]

_SERVING_KEY = "serving_default"


class _Recipe:
    """What the model_fn rebuilds a compiled Keras model from (no tensors of the model's graph)."""

    def __init__(self, model: Any, custom_objects: Optional[Dict[str, Any]]):
        self.config = model_to_config(model)
        self.custom_objects = dict(custom_objects or {})
        from .layers import input_name
        self.input_names = [input_name(t) for t in model.inputs]
        self.output_names = list(model.output_names)
        self.weight_names = [v.op.name for v in model.weights]
        with model._graph().as_default():
            self.weights = model.get_weights()
            opt = model.optimizer
            cfg = getattr(opt, "_keras_config", None)
            if cfg is not None:
                args = dict(cfg[1])
                lr = getattr(opt, "lr", None)
                if lr is not None and not isinstance(lr, (int, float)) and not callable(lr):  # a schedule stays
                    args["learning_rate"] = float(K.get_value(lr))  # the rate now, as Keras's get_config
                self._opt = (type(opt), args)
            else:
                self._opt = opt  # tf.train's: shared, as TF's TFOptimizer is
        self.loss = model.loss
        self.metrics = getattr(model, "_metric_args", [])
        self.loss_weights = getattr(model, "_loss_weights_arg", None)

    def optimizer(self) -> Any:
        if isinstance(self._opt, tuple):
            cls, args = self._opt
            return cls.from_config(args)
        return self._opt

    def build(self, inputs: Optional[List[Any]] = None) -> Any:
        return model_from_config(self.config, self.custom_objects, input_tensors=inputs)


def _by_name(value: Any, names: List[str], what: str) -> List[Any]:
    """A dict (keyed by names), list or single tensor as one tensor per name, in order."""
    if isinstance(value, dict):
        if sorted(value) != sorted(names):
            raise KeyError(f"The dictionary passed into {what} does not have the expected {what} keys defined in the "
                           f"keras model.\n\tExpected keys: {set(names)}\n\t{what} keys: {set(value)}\n\tDifference: "
                           f"{set(names) ^ set(value)}")
        return [_g.convert_to_tensor(value[n]) for n in names]
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(values) != len(names):
        raise ValueError(f"the keras model has {len(names)} {what}s ({names}), the input_fn gave {len(values)}")
    return [_g.convert_to_tensor(v) for v in values]


def _eval_metric_ops(model: Any, recipe: _Recipe) -> Dict[str, Any]:
    """Streaming means of the compiled metrics per sample (Keras's metric objects), by Keras's names."""
    names = recipe.output_names
    loss_fns = [_get_loss(v) for v in model._per_output(recipe.loss, "loss", None)]
    metric_lists = model._per_output(recipe.metrics or [], "metrics", [])
    ops: Dict[str, Any] = {}
    multi = len(names) > 1
    for out, name, fn, ms, target in zip(model.outputs, names, loss_fns, metric_lists, model._targets_in):
        for m in ms or []:
            from .metric_classes import Metric
            if isinstance(m, Metric):  # a copy in this graph, its state local variables (each evaluation's)
                m = type(m).from_config(m.get_config())
                for v in m.variables:
                    for c in (_g.GraphKeys.LOCAL_VARIABLES, _g.GraphKeys.METRIC_VARIABLES):
                        _g.get_default_graph().add_to_collection(c, v)
                ops[f"{name}_{m.name}" if multi else m.name] = (m.result(), m.update_state(target, out))
                continue
            mname, mfn = _get_metric(m, fn, out)
            ops[f"{name}_{mname}" if multi else mname] = _metrics.mean(mfn(target, out))
    return ops


def _model_fn(recipe: _Recipe) -> Callable:
    def model_fn(features: Any, labels: Any, mode: str) -> EstimatorSpec:
        # layers such as Dropout and BatchNormalization read the phase when they are built
        K.set_learning_phase(1 if mode == ModeKeys.TRAIN else 0)
        weights = None
        if isinstance(features, dict) and set(features) == {"features", "sample_weights"}:
            features, weights = features["features"], features["sample_weights"]
        model = recipe.build(_by_name(features, recipe.input_names, "input"))
        predictions = dict(zip(recipe.output_names, model.outputs))
        exports = {_SERVING_KEY: PredictOutput(predictions)}
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode, predictions=predictions, export_outputs=exports)
        if labels is None:
            raise ValueError("the input_fn gave no labels: training and evaluating a keras model need them")
        opt = recipe.optimizer()
        step = get_global_step()
        if hasattr(opt, "_use_iterations"):
            opt._use_iterations(step)
        model.compile(opt, recipe.loss, metrics=recipe.metrics or None, loss_weights=recipe.loss_weights,
                      target_tensors=_by_name(labels, recipe.output_names, "output"), _target_weights=weights)
        train_op = None
        if mode == ModeKeys.TRAIN:
            if hasattr(opt, "_use_iterations"):
                train_op = model._train_function()  # the Keras optimizer advances the global step
            else:
                with _g.control_dependencies(model.updates):
                    minimize = opt.minimize(model.total_loss, global_step=step, var_list=model.trainable_weights)
                train_op = group(minimize, *model.updates)
        return EstimatorSpec(mode, predictions=predictions, loss=model.total_loss, train_op=train_op,
                             eval_metric_ops=_eval_metric_ops(model, recipe), export_outputs=exports)
    return model_fn


class _KerasEstimator(Estimator):
    """An Estimator that, as TF 1.15's, also starts evaluate and predict from the warm-start
    checkpoint while model_dir has none of its own (collflow's Estimator warm-starts training only)."""

    def _build(self, input_fn: Callable, mode: str) -> tuple:
        out = super()._build(input_fn, mode)
        if mode != ModeKeys.TRAIN and self.latest_checkpoint() is None:
            self._warm_start()
        return out


def _save_first_checkpoint(recipe: _Recipe, model_dir: str, seed: Any) -> str:
    """model_dir/keras/keras_model.ckpt with the Keras model's weights (and the optimizer's fresh
    state, as TF writes it), unless one is there already."""
    keras_dir = os.path.join(model_dir, "keras")
    latest = latest_checkpoint(keras_dir)
    if latest:
        return latest
    os.makedirs(keras_dir, exist_ok=True)
    with _g.Graph().as_default() as g:
        random_ops.set_random_seed(seed)
        create_global_step(g)
        model = recipe.build()
        model.compile(recipe.optimizer(), recipe.loss, metrics=recipe.metrics or None,
                      loss_weights=recipe.loss_weights)
        model._train_function()  # the optimizer's variables too, as TF's _make_train_function
        model.set_weights(recipe.weights)
        return Saver().save(K.get_session(), os.path.join(keras_dir, "keras_model.ckpt"), write_meta_graph=False)


def model_to_estimator(keras_model: Any = None, keras_model_path: Optional[str] = None,
                       custom_objects: Optional[Dict[str, Any]] = None, model_dir: Optional[str] = None,
                       config: Optional[RunConfig] = None, checkpoint_format: str = "saver") -> Estimator:
    """An Estimator of a compiled Sequential or functional Keras model (or of the model file at
    keras_model_path), starting from its current weights."""
    if keras_model is None and keras_model_path is None:
        raise ValueError("Either `keras_model` or `keras_model_path` needs to be provided.")
    if keras_model is not None and keras_model_path is not None:
        raise ValueError("Please specity either `keras_model` or `keras_model_path`, but not both.")
    if keras_model_path is not None:
        if not os.path.exists(keras_model_path):
            raise ValueError(f"{keras_model_path} does not exist")
        logging.info("Loading models from %s", keras_model_path)
        with _g.Graph().as_default():
            keras_model = load_model(keras_model_path, custom_objects)
    if getattr(keras_model, "_subclassed", False):
        raise NotImplementedError("collflow's model_to_estimator needs a Sequential or functional model (a "
                                  "subclassed model has no config to rebuild it from)")
    if not getattr(keras_model, "_compiled", False) or keras_model.optimizer is None:
        raise ValueError("The given keras model has not been compiled yet. Please compile the model with "
                         "`model.compile()` before calling `model_to_estimator()`.")
    config = config if config is not None else RunConfig()
    if model_dir is not None and config.model_dir is not None and \
            os.path.abspath(model_dir) != os.path.abspath(config.model_dir):
        raise ValueError(f"`model_dir` are set both in constructor and `RunConfig`, but with different values. In "
                         f"constructor: '{model_dir}', in `RunConfig`: '{config.model_dir}' ")
    model_dir = model_dir or config.model_dir or tempfile.mkdtemp()
    config = config.replace(model_dir=model_dir)
    recipe = _Recipe(keras_model, custom_objects)
    ckpt = _save_first_checkpoint(recipe, model_dir, config.tf_random_seed)
    # the model's weights by name: TF warm-starts the trainable ones only; the moving statistics
    # of batch norm are the Keras model's too
    warm = WarmStartSettings(ckpt, vars_to_warm_start=[re.escape(n) + "$" for n in recipe.weight_names])
    return _KerasEstimator(_model_fn(recipe), config=config, warm_start_from=warm)
