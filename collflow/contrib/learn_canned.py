"""TF 1.x's contrib.learn canned estimators: DNN, Linear and DNNLinearCombined classifiers and
regressors, with contrib's signatures, default optimizers and variable names:
dnn/input_from_feature_columns/..., dnn/hiddenlayer_<i>/{weights,biases}, dnn/logits/{weights,biases}
(layers.fully_connected), dnn/learning_rate (optimize_loss); linear/<column>/weight and
linear/bias_weight for contrib columns (weighted_sum_from_feature_columns), or
linear/linear_model/... for core tf.feature_column columns (as TF 1.15).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

from ..graph import graph as _g
from ..graph.gradients import gradients as _gradients
from ..graph.graph import GraphKeys
from ..graph.ops import clip_ops as _clip
from ..graph.ops import nn_ops as _nn
from ..graph.ops.constant_op import group
from ..graph.ops.state_ops import assign_add
from ..graph.ops.nn_composites import zero_fraction
from ..graph.variable_scope import variable_scope
from ..nn.feature_column import columns as _core_columns
from ..nn.feature_column import models as _core_fc
from ..summary import summary_ops as _summary
from ..train.global_step import get_global_step
from ..train.optimizers import FtrlOptimizer
from . import layers as _layers
from .learn_base import Estimator, ModeKeys
from .learn_heads import PredictionKey, multi_class_head, regression_head
from .optimize_loss import OPTIMIZER_CLS_NAMES, optimize_loss

__all__ = ["DNNClassifier", "DNNRegressor", "LinearClassifier", "LinearRegressor", "DNNLinearCombinedClassifier",
           "DNNLinearCombinedRegressor"]

_DNN_LEARNING_RATE = 0.05
_LINEAR_LEARNING_RATE = 0.2


def _linear_learning_rate(num_columns: int) -> float:
    return min(_LINEAR_LEARNING_RATE, 1.0 / math.sqrt(max(num_columns, 1)))


def _feature_dict(features: Any) -> dict:
    return features if isinstance(features, dict) else {"": features}


def _all_core(columns: Sequence[Any]) -> bool:
    return all(isinstance(c, _core_columns._FeatureColumn) for c in columns)


def _contrib_fc() -> Any:
    try:
        from . import layers_feature_columns as fc
    except ImportError:  # pragma: no cover - the module ships with collflow
        fc = None
    if fc is None or not hasattr(fc, "input_from_feature_columns"):
        raise ValueError("contrib feature columns need tf.contrib.layers.input_from_feature_columns, which this "
                         "collflow does not have yet: use tf.feature_column columns")
    return fc


def _check_columns(columns: Any) -> tuple:
    cols = tuple(columns or ())
    if not cols:
        raise ValueError("feature_columns must be a non-empty iterable of feature columns")
    return cols


def _hidden_summary(value: Any, tag: str) -> None:
    _summary.scalar(f"{tag}/fraction_of_zero_values", zero_fraction(value))
    _summary.histogram(f"{tag}/activation", value)


def _get_optimizer(spec: Any) -> Any:
    """contrib's dnn rule: a callable is called; anything else (a name, an instance) is kept."""
    return spec() if callable(spec) else spec


def _dnn_logits(features: dict, columns: Sequence[Any], hidden_units: Sequence[int], activation_fn: Callable,
                dropout: Optional[float], mode: str, units: int, scope: str = "dnn") -> Any:
    with variable_scope(scope, values=list(features.values())):
        with variable_scope("input_from_feature_columns", values=list(features.values())) as in_scope:
            if _all_core(columns):
                net = _core_fc.input_layer(features, columns, weight_collections=[scope])
            else:
                net = _contrib_fc().input_from_feature_columns(features, columns, weight_collections=[scope],
                                                               scope=in_scope)
        for i, n in enumerate(hidden_units):
            with variable_scope(f"hiddenlayer_{i}", values=(net,)) as hs:
                net = _layers.fully_connected(net, int(n), activation_fn=activation_fn,
                                              variables_collections=[scope], scope=hs)
                if dropout is not None and mode == ModeKeys.TRAIN:
                    net = _layers.dropout(net, keep_prob=1.0 - dropout)
            _hidden_summary(net, hs.name)
        with variable_scope("logits", values=(net,)) as ls:
            logits = _layers.fully_connected(net, units, activation_fn=None, variables_collections=[scope],
                                             scope=ls)
        _hidden_summary(logits, ls.name)
    return logits


def _linear_logits(features: dict, columns: Sequence[Any], units: int, scope: str = "linear") -> Any:
    with variable_scope(scope, values=list(features.values())) as sc:
        if _all_core(columns):
            return _core_fc.linear_model(features, columns, units=units, weight_collections=[scope])
        logits, _, _ = _contrib_fc().weighted_sum_from_feature_columns(
            features, columns, num_outputs=units, weight_collections=[scope], scope=sc)
        return logits


def _scope_vars(scope: str) -> list:
    found = _g.get_collection(scope)
    return list(found) if found else list(_g.get_collection(GraphKeys.TRAINABLE_VARIABLES, scope=scope + "/"))


def _dnn_model_fn(features: Any, labels: Any, mode: str, params: dict) -> Any:
    head = params["head"]
    features = _feature_dict(features)
    logits = _dnn_logits(features, params["feature_columns"], params["hidden_units"],
                         params.get("activation_fn") or _nn.relu, params.get("dropout"), mode, head.logits_dimension)

    def train_op_fn(loss: Any) -> Any:
        return optimize_loss(loss, get_global_step(), learning_rate=_DNN_LEARNING_RATE,
                             optimizer=_get_optimizer(params.get("optimizer") or "Adagrad"),
                             gradient_multipliers=params.get("embedding_lr_multipliers"),
                             clip_gradients=params.get("gradient_clip_norm"), name="dnn", summaries=[])
    return head.create_model_fn_ops(features, mode, labels, train_op_fn, logits)


def _linear_optimizer(spec: Any, columns: Sequence[Any]) -> Any:
    if spec is None:
        return FtrlOptimizer(learning_rate=_linear_learning_rate(len(columns)))
    if isinstance(spec, str):
        if spec not in OPTIMIZER_CLS_NAMES:
            raise ValueError(f"Optimizer name should be one of [{', '.join(OPTIMIZER_CLS_NAMES)}], you provided "
                             f"{spec}.")
        return OPTIMIZER_CLS_NAMES[spec](learning_rate=_LINEAR_LEARNING_RATE)
    return spec() if callable(spec) else spec


def _linear_model_fn(features: Any, labels: Any, mode: str, params: dict) -> Any:
    head = params["head"]
    columns = params["feature_columns"]
    features = _feature_dict(features)
    logits = _linear_logits(features, columns, head.logits_dimension)

    def train_op_fn(loss: Any) -> Any:
        var_list = _scope_vars("linear")
        grads = _gradients(loss, var_list)
        if params.get("gradient_clip_norm"):
            grads, _ = _clip.clip_by_global_norm(grads, params["gradient_clip_norm"])
        opt = _linear_optimizer(params.get("optimizer"), columns)
        return opt.apply_gradients(list(zip(grads, var_list)), global_step=get_global_step())
    return head.create_model_fn_ops(features, mode, labels, train_op_fn, logits)


def _combined_model_fn(features: Any, labels: Any, mode: str, params: dict) -> Any:
    head = params["head"]
    lin_cols, dnn_cols = params["linear_feature_columns"], params["dnn_feature_columns"]
    features = _feature_dict(features)
    if not lin_cols and not dnn_cols:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
    logits = []
    if dnn_cols:
        if not params.get("dnn_hidden_units"):
            raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns is specified.")
        logits.append(_dnn_logits(features, dnn_cols, params["dnn_hidden_units"],
                                  params.get("dnn_activation_fn") or _nn.relu, params.get("dnn_dropout"), mode,
                                  head.logits_dimension))
    if lin_cols:
        logits.append(_linear_logits(features, lin_cols, head.logits_dimension))
    total = logits[0] if len(logits) == 1 else logits[1] + logits[0]
    fixed = params.get("fix_global_step_increment_bug", False)

    def train_op_fn(loss: Any) -> Any:
        gs = get_global_step()
        ops = []
        # TF 1.x: without fix_global_step_increment_bug each part's step increments the global step
        if lin_cols:
            ops.append(optimize_loss(loss, gs, learning_rate=_linear_learning_rate(len(lin_cols)),
                                     optimizer=_get_optimizer(params.get("linear_optimizer") or "Ftrl"),
                                     clip_gradients=params.get("gradient_clip_norm"), variables=_scope_vars("linear"),
                                     name="linear", summaries=[], increment_global_step=not fixed))
        if dnn_cols:
            ops.append(optimize_loss(loss, gs, learning_rate=_DNN_LEARNING_RATE,
                                     optimizer=_get_optimizer(params.get("dnn_optimizer") or "Adagrad"),
                                     gradient_multipliers=params.get("embedding_lr_multipliers"),
                                     clip_gradients=params.get("gradient_clip_norm"), variables=_scope_vars("dnn"),
                                     name="dnn", summaries=[], increment_global_step=not fixed))
        train_op = group(*ops)
        if not fixed:
            return train_op
        with _g.control_dependencies([train_op]):
            return assign_add(gs, 1).op
    return head.create_model_fn_ops(features, mode, labels, train_op_fn, total)


# -- the estimators ------------------------------------------------------------------------------------------

class _Canned(Estimator):
    def __init__(self, model_fn: Callable, params: dict, model_dir: Any, config: Any,
                 feature_engineering_fn: Any):
        def fn(features: Any, labels: Any, mode: str) -> Any:
            return model_fn(features, labels, mode, params)
        super().__init__(fn, model_dir=model_dir, config=config, feature_engineering_fn=feature_engineering_fn)

    def _predict_key(self, key: str, x: Any, input_fn: Any, batch_size: Any, as_iterable: bool) -> Any:
        preds = Estimator.predict(self, x=x, input_fn=input_fn, batch_size=batch_size, outputs=[key],
                                  as_iterable=as_iterable)
        return (p[key] for p in preds) if as_iterable else preds[key]


class _Classifier(_Canned):
    def predict_classes(self, x: Any = None, input_fn: Any = None, batch_size: Any = None,
                        as_iterable: bool = True) -> Any:
        """The predicted class ids (an iterator, or an array with as_iterable=False)."""
        return self._predict_key(PredictionKey.CLASSES, x, input_fn, batch_size, as_iterable)

    def predict_proba(self, x: Any = None, input_fn: Any = None, batch_size: Any = None,
                      as_iterable: bool = True) -> Any:
        """The class probabilities (an iterator, or an array with as_iterable=False)."""
        return self._predict_key(PredictionKey.PROBABILITIES, x, input_fn, batch_size, as_iterable)

    def predict(self, x: Any = None, input_fn: Any = None, batch_size: Any = None, outputs: Any = None,
                as_iterable: bool = True) -> Any:
        """outputs None: the classes (predict_classes); else the dicts of those outputs."""
        if outputs is None:
            return self.predict_classes(x=x, input_fn=input_fn, batch_size=batch_size, as_iterable=as_iterable)
        return Estimator.predict(self, x=x, input_fn=input_fn, batch_size=batch_size, outputs=outputs,
                                 as_iterable=as_iterable)


class _Regressor(_Canned):
    def predict_scores(self, x: Any = None, input_fn: Any = None, batch_size: Any = None,
                       as_iterable: bool = True) -> Any:
        """The predicted values (an iterator, or an array with as_iterable=False)."""
        return self._predict_key(PredictionKey.SCORES, x, input_fn, batch_size, as_iterable)

    def predict(self, x: Any = None, input_fn: Any = None, batch_size: Any = None, outputs: Any = None,
                as_iterable: bool = True) -> Any:
        """outputs None: the scores (predict_scores); else the dicts of those outputs."""
        if outputs is None:
            return self.predict_scores(x=x, input_fn=input_fn, batch_size=batch_size, as_iterable=as_iterable)
        return Estimator.predict(self, x=x, input_fn=input_fn, batch_size=batch_size, outputs=outputs,
                                 as_iterable=as_iterable)


class DNNClassifier(_Classifier):
    """A feed-forward network classifier (Adagrad at 0.05 by default)."""

    def __init__(self, hidden_units: Sequence[int], feature_columns: Any, model_dir: Optional[str] = None,
                 n_classes: int = 2, weight_column_name: Optional[str] = None, optimizer: Any = None,
                 activation_fn: Callable = _nn.relu, dropout: Optional[float] = None,
                 gradient_clip_norm: Optional[float] = None, enable_centered_bias: bool = False, config: Any = None,
                 feature_engineering_fn: Any = None, embedding_lr_multipliers: Any = None,
                 input_layer_min_slice_size: Any = None, label_keys: Any = None):
        head = multi_class_head(n_classes, weight_column_name=weight_column_name,
                                enable_centered_bias=enable_centered_bias, label_keys=label_keys)
        params = dict(head=head, hidden_units=list(hidden_units), feature_columns=_check_columns(feature_columns),
                      optimizer=optimizer, activation_fn=activation_fn, dropout=dropout,
                      gradient_clip_norm=gradient_clip_norm, embedding_lr_multipliers=embedding_lr_multipliers)
        super().__init__(_dnn_model_fn, params, model_dir, config, feature_engineering_fn)


class DNNRegressor(_Regressor):
    """A feed-forward network regressor (mean squared error; Adagrad at 0.05 by default)."""

    def __init__(self, hidden_units: Sequence[int], feature_columns: Any, model_dir: Optional[str] = None,
                 weight_column_name: Optional[str] = None, optimizer: Any = None, activation_fn: Callable = _nn.relu,
                 dropout: Optional[float] = None, gradient_clip_norm: Optional[float] = None,
                 enable_centered_bias: bool = False, config: Any = None, feature_engineering_fn: Any = None,
                 label_dimension: int = 1, embedding_lr_multipliers: Any = None,
                 input_layer_min_slice_size: Any = None):
        head = regression_head(weight_column_name=weight_column_name, label_dimension=label_dimension,
                               enable_centered_bias=enable_centered_bias)
        params = dict(head=head, hidden_units=list(hidden_units), feature_columns=_check_columns(feature_columns),
                      optimizer=optimizer, activation_fn=activation_fn, dropout=dropout,
                      gradient_clip_norm=gradient_clip_norm, embedding_lr_multipliers=embedding_lr_multipliers)
        super().__init__(_dnn_model_fn, params, model_dir, config, feature_engineering_fn)


class LinearClassifier(_Classifier):
    """A linear classifier (Ftrl at min(0.2, 1/sqrt(#columns)) by default; a name: at 0.2)."""

    def __init__(self, feature_columns: Any, model_dir: Optional[str] = None, n_classes: int = 2,
                 weight_column_name: Optional[str] = None, optimizer: Any = None,
                 gradient_clip_norm: Optional[float] = None, enable_centered_bias: bool = False,
                 _joint_weight: bool = False, config: Any = None, feature_engineering_fn: Any = None,
                 label_keys: Any = None):
        if _joint_weight:
            raise NotImplementedError("_joint_weight=True is not provided by collflow")
        head = multi_class_head(n_classes, weight_column_name=weight_column_name,
                                enable_centered_bias=enable_centered_bias, label_keys=label_keys)
        params = dict(head=head, feature_columns=_check_columns(feature_columns), optimizer=optimizer,
                      gradient_clip_norm=gradient_clip_norm)
        super().__init__(_linear_model_fn, params, model_dir, config, feature_engineering_fn)


class LinearRegressor(_Regressor):
    """A linear regressor (mean squared error; Ftrl as LinearClassifier)."""

    def __init__(self, feature_columns: Any, model_dir: Optional[str] = None,
                 weight_column_name: Optional[str] = None, optimizer: Any = None,
                 gradient_clip_norm: Optional[float] = None, enable_centered_bias: bool = False,
                 label_dimension: int = 1, _joint_weights: bool = False, config: Any = None,
                 feature_engineering_fn: Any = None):
        if _joint_weights:
            raise NotImplementedError("_joint_weights=True is not provided by collflow")
        head = regression_head(weight_column_name=weight_column_name, label_dimension=label_dimension,
                               enable_centered_bias=enable_centered_bias)
        params = dict(head=head, feature_columns=_check_columns(feature_columns), optimizer=optimizer,
                      gradient_clip_norm=gradient_clip_norm)
        super().__init__(_linear_model_fn, params, model_dir, config, feature_engineering_fn)


def _combined_params(head: Any, linear_feature_columns: Any, linear_optimizer: Any, joint: bool,
                     dnn_feature_columns: Any, dnn_optimizer: Any, dnn_hidden_units: Any, dnn_activation_fn: Any,
                     dnn_dropout: Any, gradient_clip_norm: Any, embedding_lr_multipliers: Any, fix: bool) -> dict:
    if joint:
        raise NotImplementedError("_joint_linear_weights=True is not provided by collflow")
    lin, dnn = tuple(linear_feature_columns or ()), tuple(dnn_feature_columns or ())
    if not lin and not dnn:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
    return dict(head=head, linear_feature_columns=lin, linear_optimizer=linear_optimizer, dnn_feature_columns=dnn,
                dnn_optimizer=dnn_optimizer, dnn_hidden_units=dnn_hidden_units, dnn_activation_fn=dnn_activation_fn,
                dnn_dropout=dnn_dropout, gradient_clip_norm=gradient_clip_norm,
                embedding_lr_multipliers=embedding_lr_multipliers, fix_global_step_increment_bug=fix)


class DNNLinearCombinedClassifier(_Classifier):
    """Wide (linear: Ftrl at min(0.2, 1/sqrt(#columns))) and deep (DNN: Adagrad at 0.05) logits
    summed; each part has its own optimizer.  Without fix_global_step_increment_bug (TF's
    default) each part's update increments the global step, as TF 1.x did."""

    def __init__(self, model_dir: Optional[str] = None, n_classes: int = 2,
                 weight_column_name: Optional[str] = None, linear_feature_columns: Any = None,
                 linear_optimizer: Any = None, _joint_linear_weights: bool = False, dnn_feature_columns: Any = None,
                 dnn_optimizer: Any = None, dnn_hidden_units: Any = None, dnn_activation_fn: Callable = _nn.relu,
                 dnn_dropout: Optional[float] = None, gradient_clip_norm: Optional[float] = None,
                 enable_centered_bias: bool = False, config: Any = None, feature_engineering_fn: Any = None,
                 embedding_lr_multipliers: Any = None, input_layer_min_slice_size: Any = None,
                 label_keys: Any = None, fix_global_step_increment_bug: bool = False):
        head = multi_class_head(n_classes, weight_column_name=weight_column_name,
                                enable_centered_bias=enable_centered_bias, label_keys=label_keys)
        params = _combined_params(head, linear_feature_columns, linear_optimizer, _joint_linear_weights,
                                  dnn_feature_columns, dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
                                  gradient_clip_norm, embedding_lr_multipliers, fix_global_step_increment_bug)
        super().__init__(_combined_model_fn, params, model_dir, config, feature_engineering_fn)


class DNNLinearCombinedRegressor(_Regressor):
    """Wide and deep logits summed, mean squared error (optimizers as the classifier's)."""

    def __init__(self, model_dir: Optional[str] = None, weight_column_name: Optional[str] = None,
                 linear_feature_columns: Any = None, linear_optimizer: Any = None,
                 _joint_linear_weights: bool = False, dnn_feature_columns: Any = None, dnn_optimizer: Any = None,
                 dnn_hidden_units: Any = None, dnn_activation_fn: Callable = _nn.relu,
                 dnn_dropout: Optional[float] = None, gradient_clip_norm: Optional[float] = None,
                 enable_centered_bias: bool = False, label_dimension: int = 1, config: Any = None,
                 feature_engineering_fn: Any = None, embedding_lr_multipliers: Any = None,
                 input_layer_min_slice_size: Any = None, fix_global_step_increment_bug: bool = False):
        head = regression_head(weight_column_name=weight_column_name, label_dimension=label_dimension,
                               enable_centered_bias=enable_centered_bias)
        params = _combined_params(head, linear_feature_columns, linear_optimizer, _joint_linear_weights,
                                  dnn_feature_columns, dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
                                  gradient_clip_norm, embedding_lr_multipliers, fix_global_step_increment_bug)
        super().__init__(_combined_model_fn, params, model_dir, config, feature_engineering_fn)
