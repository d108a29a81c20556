"""The heads of TF 1.x's contrib.learn canned estimators: from logits to ModelFnOps.

Losses are contrib's: the mean over the examples of (per-example loss x weight); the eval
`loss` metric is the weighted average loss.  Prediction keys are contrib's PredictionKey
values (`logits`, `logistic`, `probabilities`, `classes`, `scores`).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import nn_ops as _nn
from ..graph.ops.constant_op import identity
from ..nn import metrics as _metrics
from ..nn import metrics_thresholds as _thr
from ..summary import summary_ops as _summary
from .learn_base import ModeKeys, ModelFnOps

__all__ = ["PredictionKey", "MetricKey", "regression_head", "multi_class_head"]


class PredictionKey:
    """The keys of contrib's prediction dicts."""
    CLASSES = "classes"
    PROBABILITIES = "probabilities"
    LOGITS = "logits"
    LOGISTIC = "logistic"
    SCORES = "scores"
    TOP_K = "top_k"
    GENERIC = "output"


class MetricKey:
    """The keys of contrib's evaluation metrics."""
    LOSS = "loss"
    AUC = "auc"
    AUC_PR = "auc_precision_recall"
    CLASS_AUC = "auc/class%d"
    PREDICTION_MEAN = "labels/prediction_mean"
    CLASS_PREDICTION_MEAN = "labels/prediction_mean/class%d"
    CLASS_LOGITS_MEAN = "labels/logits_mean/class%d"
    CLASS_PROBABILITY_MEAN = "labels/probability_mean/class%d"
    LABEL_MEAN = "labels/actual_label_mean"
    CLASS_LABEL_MEAN = "labels/actual_label_mean/class%d"
    ACCURACY = "accuracy"
    ACCURACY_BASELINE = "accuracy/baseline_label_mean"
    ACCURACY_MEAN = "accuracy/threshold_%f_mean"
    PRECISION_MEAN = "precision/positive_threshold_%f_mean"
    RECALL_MEAN = "recall/positive_threshold_%f_mean"


def _weights(features: Any, weight_column_name: Optional[str]) -> Any:
    if not weight_column_name:
        return None
    if not isinstance(features, dict) or weight_column_name not in features:
        raise KeyError(f"weight_column_name {weight_column_name!r} is not in the features")
    return _a.reshape(_m.cast(features[weight_column_name], _dt.float32), [-1])


def _weighted_losses(per_example: Any, weights: Any) -> tuple:
    """(mean of loss x weight, sum(loss x weight) / sum(weight)) of the flattened losses."""
    flat = _a.reshape(per_example, [-1])
    if weights is None:
        loss = _m.reduce_mean(flat, name="loss")
        return loss, loss
    w = weights * _a.ones_like(flat)
    weighted = _m.multiply(flat, w)
    return (_m.reduce_mean(weighted, name="weighted_loss"),
            _m.truediv(_m.reduce_sum(weighted), _m.reduce_sum(w), name="weighted_average_loss"))


class _Head:
    """Builds predictions, loss, train op and eval metrics from a model's logits."""

    def __init__(self, logits_dimension: int, weight_column_name: Optional[str], enable_centered_bias: bool,
                 label_keys: Any = None):
        if enable_centered_bias:
            raise NotImplementedError("enable_centered_bias=True is not provided by collflow's contrib.learn heads")
        if label_keys is not None:
            raise NotImplementedError("label_keys (string labels) is not provided by collflow's contrib.learn "
                                      "heads: give integer class ids")
        self.logits_dimension = int(logits_dimension)
        self._weight_column_name = weight_column_name

    def create_model_fn_ops(self, features: Any, mode: str, labels: Any = None,
                            train_op_fn: Optional[Callable] = None, logits: Any = None) -> ModelFnOps:
        with _g.name_scope("head"):
            predictions = self._predictions(logits)
            if mode == ModeKeys.INFER or labels is None:
                if mode != ModeKeys.INFER:
                    raise ValueError(f"labels are required in mode {mode!r}")
                return ModelFnOps(mode, predictions=predictions)
            weights = _weights(features, self._weight_column_name)
            loss, average = _weighted_losses(self._loss(logits, labels), weights)
            with _g.name_scope(""):
                _summary.scalar("loss", identity(average))
            train_op = None
            if mode == ModeKeys.TRAIN:
                if train_op_fn is None:
                    raise ValueError("train_op_fn can not be None in TRAIN mode")
                train_op = train_op_fn(loss)
            metrics = {}
            if mode == ModeKeys.EVAL:
                with _g.name_scope("metrics"):
                    metrics = self._metrics(average, predictions, labels, weights)
            return ModelFnOps(mode, predictions=predictions, loss=loss, train_op=train_op, eval_metric_ops=metrics)


def _label_column(labels: Any, dim: int, dtype: Any) -> Any:
    return _a.reshape(_m.cast(labels, dtype), [-1, dim])


class _RegressionHead(_Head):
    def _predictions(self, logits: Any) -> Dict[str, Any]:
        scores = _a.squeeze(logits, axis=[1]) if self.logits_dimension == 1 else logits
        return {PredictionKey.SCORES: scores}

    def _loss(self, logits: Any, labels: Any) -> Any:
        return _m.squared_difference(logits, _label_column(labels, self.logits_dimension, logits.dtype))

    def _metrics(self, loss: Any, predictions: Any, labels: Any, weights: Any) -> Dict[str, Any]:
        return {MetricKey.LOSS: _metrics.mean(loss)}


class _BinaryLogisticHead(_Head):
    thresholds = (0.5,)

    def _predictions(self, logits: Any) -> Dict[str, Any]:
        two = _a.concat([_a.zeros_like(logits), logits], 1)
        return {PredictionKey.LOGITS: logits, PredictionKey.LOGISTIC: _nn.sigmoid(logits),
                PredictionKey.PROBABILITIES: _nn.softmax(two), PredictionKey.CLASSES: _m.argmax(two, 1)}

    def _loss(self, logits: Any, labels: Any) -> Any:
        return _nn.sigmoid_cross_entropy_with_logits(labels=_label_column(labels, 1, logits.dtype), logits=logits)

    def _metrics(self, loss: Any, predictions: Any, labels: Any, weights: Any) -> Dict[str, Any]:
        y = _a.reshape(_m.cast(labels, _dt.float32), [-1])
        p = _a.reshape(predictions[PredictionKey.LOGISTIC], [-1])
        classes = predictions[PredictionKey.CLASSES]
        out = {MetricKey.LOSS: _metrics.mean(loss),
               MetricKey.ACCURACY: _metrics.accuracy(_m.cast(y, _dt.int64), classes, weights),
               MetricKey.PREDICTION_MEAN: _metrics.mean(p, weights),
               MetricKey.LABEL_MEAN: _metrics.mean(y, weights),
               MetricKey.ACCURACY_BASELINE: _metrics.mean(y, weights),
               MetricKey.AUC: _metrics.auc(y, p, weights),
               MetricKey.AUC_PR: _metrics.auc(y, p, weights, curve="PR")}
        for t in self.thresholds:
            hit = _m.cast(_m.greater_equal(p, t), _dt.float32)
            out[MetricKey.ACCURACY_MEAN % t] = _metrics.mean(_m.cast(_m.equal(hit, y), _dt.float32), weights)
            prec, prec_up = _thr.precision_at_thresholds(y, p, [t], weights)
            rec, rec_up = _thr.recall_at_thresholds(y, p, [t], weights)
            out[MetricKey.PRECISION_MEAN % t] = (_a.squeeze(prec), prec_up)
            out[MetricKey.RECALL_MEAN % t] = (_a.squeeze(rec), rec_up)
        return out


class _MultiClassHead(_Head):
    def _predictions(self, logits: Any) -> Dict[str, Any]:
        return {PredictionKey.LOGITS: logits, PredictionKey.PROBABILITIES: _nn.softmax(logits),
                PredictionKey.CLASSES: _m.argmax(logits, 1)}

    def _loss(self, logits: Any, labels: Any) -> Any:
        ids = _a.reshape(_m.cast(labels, _dt.int64), [-1])
        return _nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=logits)

    def _metrics(self, loss: Any, predictions: Any, labels: Any, weights: Any) -> Dict[str, Any]:
        ids = _a.reshape(_m.cast(labels, _dt.int64), [-1])
        return {MetricKey.LOSS: _metrics.mean(loss),
                MetricKey.ACCURACY: _metrics.accuracy(ids, predictions[PredictionKey.CLASSES], weights)}


def regression_head(label_name: Any = None, weight_column_name: Optional[str] = None, label_dimension: int = 1,
                    enable_centered_bias: bool = False, head_name: Any = None) -> _Head:
    """contrib's regression head: mean squared error, predictions `scores`."""
    return _RegressionHead(label_dimension, weight_column_name, enable_centered_bias)


def multi_class_head(n_classes: int, label_name: Any = None, weight_column_name: Optional[str] = None,
                     enable_centered_bias: bool = False, head_name: Any = None, thresholds: Any = None,
                     metric_class_ids: Any = None, loss_fn: Any = None, label_keys: Any = None) -> _Head:
    """contrib's classification head: logistic for 2 classes, softmax for more."""
    if n_classes is None or n_classes < 2:
        raise ValueError(f"n_classes must be > 1 for classification: {n_classes}.")
    if n_classes == 2:
        return _BinaryLogisticHead(1, weight_column_name, enable_centered_bias, label_keys)
    return _MultiClassHead(n_classes, weight_column_name, enable_centered_bias, label_keys)
