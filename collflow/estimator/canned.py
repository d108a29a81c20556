"""TF1's canned estimators: LinearClassifier/Regressor, DNNClassifier/Regressor and
DNNLinearCombinedClassifier/Regressor, with TF1's defaults and variable names
(linear/linear_model/<column>/weights, linear/linear_model/bias_weights,
dnn/input_from_feature_columns/input_layer/..., dnn/hiddenlayer_<i>/{kernel,bias},
dnn/logits/{kernel,bias}) so their checkpoints name-match TensorFlow's."""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.initializers import GlorotUniform, Zeros
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import nn_ops as _nn
from ..graph.ops.constant_op import group
from ..graph.ops.state_ops import assign_add
from ..graph.variable_scope import get_variable, variable_scope
from ..nn import losses as _losses
from ..nn.layers import dropout as _dropout
from ..nn.normalization import batch_normalization as _batch_norm
from ..nn.feature_column import models as _fc
from ..graph.ops.nn_composites import zero_fraction
from ..summary import summary_ops as _summary
from ..train.global_step import get_global_step
from ..train.optimizer import slot_name_infix
from .estimator import Estimator
from .head import BinaryHead, MultiClassHead, RegressionHead, get_optimizer

__all__ = ["LinearClassifier", "LinearRegressor", "DNNClassifier", "DNNRegressor", "DNNLinearCombinedClassifier",
           "DNNLinearCombinedRegressor"]

_LINEAR_LEARNING_RATE = 0.2      # a named optimizer's; min(0.2, 1/sqrt(#columns)) when optimizer is None
_DNN_LEARNING_RATE = 0.05
_COMBINED_DNN_LEARNING_RATE = 0.001
_COMBINED_LINEAR_LEARNING_RATE = 0.005


def _linear_learning_rate(feature_columns: Sequence[Any], cap: float) -> float:
    return min(cap, 1.0 / math.sqrt(max(len(list(feature_columns)), 1)))


def _class_head(n_classes: int, weight_column: Any, label_vocabulary: Any, loss_reduction: str) -> Any:
    if n_classes is None or n_classes < 2:
        raise ValueError(f"n_classes must be > 1: {n_classes}")
    if n_classes == 2:
        return BinaryHead(weight_column, label_vocabulary, loss_reduction)
    return MultiClassHead(n_classes, weight_column, label_vocabulary, loss_reduction)


def _check_features(features: Any) -> None:
    if not isinstance(features, dict):
        raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: {type(features)}")


def _check_columns(feature_columns: Any, what: str) -> list:
    cols = list(feature_columns or [])
    if not cols:
        raise ValueError(f"Empty {what} feature_columns.")
    return cols


def _linear_logits(features: dict, feature_columns: Sequence[Any], units: int, sparse_combiner: str) -> Any:
    """The linear model's logits, with TF's summaries of its bias and of its weights' zeros."""
    cols_to_vars: dict = {}
    logits = _fc.linear_model(features, feature_columns, units=units, sparse_combiner=sparse_combiner,
                              cols_to_vars=cols_to_vars)
    bias = cols_to_vars.pop("bias")[0]
    if units > 1:
        _summary.histogram("bias", bias)
    else:
        _summary.scalar("bias", bias[0])
    weights = [v for vs in cols_to_vars.values() for v in vs]
    if weights:
        flat = _a.concat([_a.reshape(w, [-1]) for w in weights], 0)
        _summary.scalar("fraction_of_zero_weights", zero_fraction(flat))
    return logits


def _hidden_summary(value: Any, tag: str) -> None:
    _summary.scalar(f"{tag}/fraction_of_zero_values", zero_fraction(value))
    _summary.histogram(f"{tag}/activation", value)


def _dense(net: Any, units: int, activation: Optional[Callable]) -> Any:
    n_in = int(net.shape[-1])
    kernel = get_variable("kernel", shape=[n_in, units], dtype=_dt.float32, initializer=GlorotUniform())
    bias = get_variable("bias", shape=[units], dtype=_dt.float32, initializer=Zeros())
    out = _nn.bias_add(_m.matmul(net, kernel), bias)
    return activation(out) if activation is not None else out


def _dnn_logits(features: dict, feature_columns: Sequence[Any], units: int, hidden_units: Sequence[int],
                activation_fn: Optional[Callable], dropout: Optional[float], mode: str, batch_norm: bool,
                input_layer_partitioner: Any) -> Any:
    """In the caller's scope ('dnn'): the input layer, the hidden layers and the logits layer."""
    with variable_scope("input_from_feature_columns", values=list(features.values()),
                        partitioner=input_layer_partitioner):
        net = _fc.input_layer(features, feature_columns)
    for i, n in enumerate(hidden_units):
        with variable_scope(f"hiddenlayer_{i}", values=(net,)) as scope:
            net = _dense(net, int(n), activation_fn)
            if dropout is not None and mode == "train":
                net = _dropout(net, rate=dropout, training=True)
            if batch_norm:
                # TF1's _DNNModel: after the activation (and dropout), momentum 0.999 (contrib's
                # batch_norm default: 0.99 diverged on some problems), `hiddenlayer_<i>/batchnorm_<i>`
                net = _batch_norm(net, momentum=0.999, training=mode == "train", name=f"batchnorm_{i}")
        _hidden_summary(net, scope.name)
    with variable_scope("logits", values=(net,)) as scope:
        logits = _dense(net, units, None)
    _hidden_summary(logits, scope.name)
    return logits


# -- the model functions ----------------------------------------------------------------------------------

def _linear_model_fn(features: Any, labels: Any, mode: str, head: Any, feature_columns: Sequence[Any],
                     optimizer: Any, partitioner: Any, sparse_combiner: str) -> Any:
    _check_features(features)
    if not optimizer:
        # TF1's default optimizer (only when `optimizer` is falsy): Ftrl at min(0.2, 1/sqrt(#columns))
        optimizer = get_optimizer("Ftrl", _linear_learning_rate(feature_columns, _LINEAR_LEARNING_RATE))
    # a name ('Ftrl', the constructors' default, included) gets TF1's fixed learning rate 0.2
    opt = get_optimizer(optimizer, _LINEAR_LEARNING_RATE)
    with variable_scope("linear", values=list(features.values()), partitioner=partitioner) as scope:
        logits = _linear_logits(features, feature_columns, head.logits_dimension, sparse_combiner)
    # TF1 builds the head inside the model's scope: `linear/head/predictions/...`, `linear/head/beta1_power`
    # (only the name scope here); TF's slots, by name or instance: `<variable>/part_0/<optimizer name>`
    with _g.name_scope(scope.original_name_scope), slot_name_infix("part_0"):
        return head.create_estimator_spec(features, mode, logits, labels=labels, optimizer=opt)


def _dnn_model_fn(features: Any, labels: Any, mode: str, head: Any, hidden_units: Sequence[int],
                  feature_columns: Sequence[Any], optimizer: Any, activation_fn: Callable, dropout: Optional[float],
                  input_layer_partitioner: Any, batch_norm: bool) -> Any:
    _check_features(features)
    opt = get_optimizer(optimizer, _DNN_LEARNING_RATE)
    with variable_scope("dnn", values=list(features.values())) as scope:
        logits = _dnn_logits(features, feature_columns, head.logits_dimension, hidden_units, activation_fn,
                             dropout, mode, batch_norm, input_layer_partitioner)
    # inside 'dnn', as TF1: `dnn/head/predictions/logistic`, `dnn/head/beta1_power`, slots `<variable>/t_0/<name>`
    with _g.name_scope(scope.original_name_scope), slot_name_infix("t_0"):
        return head.create_estimator_spec(features, mode, logits, labels=labels, optimizer=opt)


def _combined_model_fn(features: Any, labels: Any, mode: str, head: Any, linear_feature_columns: Sequence[Any],
                       linear_optimizer: Any, dnn_feature_columns: Sequence[Any], dnn_optimizer: Any,
                       dnn_hidden_units: Sequence[int], dnn_activation_fn: Callable, dnn_dropout: Optional[float],
                       input_layer_partitioner: Any, batch_norm: bool, linear_sparse_combiner: str) -> Any:
    _check_features(features)
    if not linear_feature_columns and not dnn_feature_columns:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
    dnn_logits = linear_logits = None
    if dnn_feature_columns:
        if not dnn_hidden_units:
            raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns is specified.")
        dnn_opt = get_optimizer(dnn_optimizer, _COMBINED_DNN_LEARNING_RATE)
        with variable_scope("dnn", values=list(features.values())) as dnn_scope:
            dnn_logits = _dnn_logits(features, dnn_feature_columns, head.logits_dimension, dnn_hidden_units,
                                     dnn_activation_fn, dnn_dropout, mode, batch_norm, input_layer_partitioner)
    if linear_feature_columns:
        linear_opt = get_optimizer(linear_optimizer,
                                   _linear_learning_rate(linear_feature_columns, _COMBINED_LINEAR_LEARNING_RATE))
        with variable_scope("linear", values=list(features.values())) as linear_scope:
            linear_logits = _linear_logits(features, linear_feature_columns, head.logits_dimension,
                                           linear_sparse_combiner)
            _hidden_summary(linear_logits, linear_scope.name)
    if dnn_logits is not None and linear_logits is not None:
        logits = _m.add(dnn_logits, linear_logits)
    else:
        logits = dnn_logits if dnn_logits is not None else linear_logits

    def train_op_fn(loss: Any) -> Any:
        ops = []
        if dnn_logits is not None:
            ops.append(dnn_opt.minimize(loss, var_list=_g.get_collection(GraphKeys.TRAINABLE_VARIABLES,
                                                                         scope=dnn_scope.name + "/")))
        if linear_logits is not None:
            ops.append(linear_opt.minimize(loss, var_list=_g.get_collection(GraphKeys.TRAINABLE_VARIABLES,
                                                                            scope=linear_scope.name + "/")))
        with _g.control_dependencies([group(*ops)]):
            return assign_add(get_global_step(), 1)

    return head.create_estimator_spec(features, mode, logits, labels=labels, train_op_fn=train_op_fn)


# -- the estimators -----------------------------------------------------------------------------------------

_SUM = _losses.Reduction.SUM


class LinearClassifier(Estimator):
    """A linear model over feature columns for n_classes classes (Ftrl at 0.2 by default, as TF1:
    min(0.2, 1/sqrt(#columns)) only for optimizer=None)."""

    def __init__(self, feature_columns: Sequence[Any], model_dir: Optional[str] = None, n_classes: int = 2,
                 weight_column: Any = None, label_vocabulary: Any = None, optimizer: Any = "Ftrl",
                 config: Any = None, partitioner: Any = None, warm_start_from: Any = None,
                 loss_reduction: str = _SUM, sparse_combiner: str = "sum"):
        cols = _check_columns(feature_columns, "linear")
        head = _class_head(n_classes, weight_column, label_vocabulary, loss_reduction)

        def model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
            return _linear_model_fn(features, labels, mode, head, cols, optimizer, partitioner, sparse_combiner)
        super().__init__(model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearRegressor(Estimator):
    """A linear model over feature columns predicting label_dimension values (squared error)."""

    def __init__(self, feature_columns: Sequence[Any], model_dir: Optional[str] = None, label_dimension: int = 1,
                 weight_column: Any = None, optimizer: Any = "Ftrl", config: Any = None, partitioner: Any = None,
                 warm_start_from: Any = None, loss_reduction: str = _SUM, sparse_combiner: str = "sum"):
        cols = _check_columns(feature_columns, "linear")
        head = RegressionHead(label_dimension, weight_column, loss_reduction)

        def model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
            return _linear_model_fn(features, labels, mode, head, cols, optimizer, partitioner, sparse_combiner)
        super().__init__(model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNClassifier(Estimator):
    """A feed-forward network over feature columns for n_classes classes (Adagrad at 0.05)."""

    def __init__(self, hidden_units: Sequence[int], feature_columns: Sequence[Any], model_dir: Optional[str] = None,
                 n_classes: int = 2, weight_column: Any = None, label_vocabulary: Any = None,
                 optimizer: Any = "Adagrad", activation_fn: Callable = _nn.relu, dropout: Optional[float] = None,
                 input_layer_partitioner: Any = None, config: Any = None, warm_start_from: Any = None,
                 loss_reduction: str = _SUM, batch_norm: bool = False):
        cols = _check_columns(feature_columns, "dnn")
        head = _class_head(n_classes, weight_column, label_vocabulary, loss_reduction)

        def model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
            return _dnn_model_fn(features, labels, mode, head, hidden_units, cols, optimizer, activation_fn, dropout,
                                 input_layer_partitioner, batch_norm)
        super().__init__(model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNRegressor(Estimator):
    """A feed-forward network over feature columns predicting label_dimension values."""

    def __init__(self, hidden_units: Sequence[int], feature_columns: Sequence[Any], model_dir: Optional[str] = None,
                 label_dimension: int = 1, weight_column: Any = None, optimizer: Any = "Adagrad",
                 activation_fn: Callable = _nn.relu, dropout: Optional[float] = None,
                 input_layer_partitioner: Any = None, config: Any = None, warm_start_from: Any = None,
                 loss_reduction: str = _SUM, batch_norm: bool = False):
        cols = _check_columns(feature_columns, "dnn")
        head = RegressionHead(label_dimension, weight_column, loss_reduction)

        def model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
            return _dnn_model_fn(features, labels, mode, head, hidden_units, cols, optimizer, activation_fn, dropout,
                                 input_layer_partitioner, batch_norm)
        super().__init__(model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedClassifier(Estimator):
    """Wide (linear, Ftrl at min(0.005, 1/sqrt(#columns))) and deep (DNN, Adagrad at 0.001)
    logits summed, for n_classes classes; each part is trained by its own optimizer."""

    def __init__(self, model_dir: Optional[str] = None, linear_feature_columns: Any = None,
                 linear_optimizer: Any = "Ftrl", dnn_feature_columns: Any = None, dnn_optimizer: Any = "Adagrad",
                 dnn_hidden_units: Any = None, dnn_activation_fn: Callable = _nn.relu,
                 dnn_dropout: Optional[float] = None, n_classes: int = 2, weight_column: Any = None,
                 label_vocabulary: Any = None, input_layer_partitioner: Any = None, config: Any = None,
                 warm_start_from: Any = None, loss_reduction: str = _SUM, batch_norm: bool = False,
                 linear_sparse_combiner: str = "sum"):
        lin, dnn = list(linear_feature_columns or []), list(dnn_feature_columns or [])
        if not lin and not dnn:
            raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
        head = _class_head(n_classes, weight_column, label_vocabulary, loss_reduction)

        def model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
            return _combined_model_fn(features, labels, mode, head, lin, linear_optimizer, dnn, dnn_optimizer,
                                      dnn_hidden_units, dnn_activation_fn, dnn_dropout, input_layer_partitioner,
                                      batch_norm, linear_sparse_combiner)
        super().__init__(model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedRegressor(Estimator):
    """Wide and deep logits summed, predicting label_dimension values."""

    def __init__(self, model_dir: Optional[str] = None, linear_feature_columns: Any = None,
                 linear_optimizer: Any = "Ftrl", dnn_feature_columns: Any = None, dnn_optimizer: Any = "Adagrad",
                 dnn_hidden_units: Any = None, dnn_activation_fn: Callable = _nn.relu,
                 dnn_dropout: Optional[float] = None, label_dimension: int = 1, weight_column: Any = None,
                 input_layer_partitioner: Any = None, config: Any = None, warm_start_from: Any = None,
                 loss_reduction: str = _SUM, batch_norm: bool = False, linear_sparse_combiner: str = "sum"):
        lin, dnn = list(linear_feature_columns or []), list(dnn_feature_columns or [])
        if not lin and not dnn:
            raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
        head = RegressionHead(label_dimension, weight_column, loss_reduction)

        def model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
            return _combined_model_fn(features, labels, mode, head, lin, linear_optimizer, dnn, dnn_optimizer,
                                      dnn_hidden_units, dnn_activation_fn, dnn_dropout, input_layer_partitioner,
                                      batch_norm, linear_sparse_combiner)
        super().__init__(model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)
