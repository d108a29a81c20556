"""tf.keras's R2Score, FBetaScore and F1Score (tf_keras 2.x names; TF 1.15 had none), stateful
over 2-D (batch, classes) inputs, their state made at the first update as tf_keras's.  (In TF1
graph mode tf_keras's own update_state of these makes no update op; here it returns one.)"""
from __future__ import annotations

from typing import Any, Dict, Optional

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import state_ops as _s
from ..graph.ops.constant_op import group as _group
from ..graph.ops.math_extra_ops import is_inf as _is_inf
from .metric_classes import Metric, div_no_nan

__all__ = ["R2Score", "FBetaScore", "F1Score"]


def _two_d(name: str, y_true: _g.Tensor, y_pred: _g.Tensor) -> int:
    ts, ps = y_true.shape, y_pred.shape
    if ts.rank != 2 or ps.rank != 2:
        raise ValueError(f"{name} expects 2D inputs with shape (batch_size, output_dim). Received input shapes: "
                         f"y_pred.shape={ps} and y_true.shape={ts}.")
    if ps.as_list()[-1] is None or ts.as_list()[-1] is None:
        raise ValueError(f"{name} expects 2D inputs with shape (batch_size, output_dim), with output_dim fully "
                         f"defined (not None). Received input shapes: y_pred.shape={ps} and y_true.shape={ts}.")
    return int(ps.as_list()[-1])


class R2Score(Metric):
    """The coefficient of determination per output column, aggregated ("uniform_average",
    "variance_weighted_average" or None), adjusted for num_regressors when given."""

    def __init__(self, class_aggregation: Optional[str] = "uniform_average", num_regressors: int = 0,
                 name: str = "r2_score", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        allowed = (None, "uniform_average", "variance_weighted_average")
        if class_aggregation not in allowed:
            raise ValueError(f"Invalid value for argument `class_aggregation`. Expected one of {allowed}. "
                             f"Received: class_aggregation={class_aggregation}")
        if num_regressors < 0:
            raise ValueError(f"Invalid value for argument `num_regressors`. Expected a value >= 0. Received: "
                             f"num_regressors={num_regressors}")
        self.class_aggregation = class_aggregation
        self.num_regressors = int(num_regressors)
        self.num_samples = self.add_weight("num_samples", dtype=_dt.int32)
        self._state_built = False

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true = _m.cast(y_true, self._dtype)
        y_pred = _m.cast(y_pred, self._dtype)
        if not self._state_built:
            n = _two_d("R2Score", y_true, y_pred)
            self.squared_sum = self.add_weight("squared_sum", shape=[n])
            self.sum = self.add_weight("sum", shape=[n])
            self.total_mse = self.add_weight("residual", shape=[n])
            self.count = self.add_weight("count", shape=[n])
            self._state_built = True
        w = _m.cast(1.0 if sample_weight is None else sample_weight, self._dtype)
        if w.shape.rank == 1:
            w = _a.expand_dims(w, 1)
        w = w * _a.ones_like(y_true)
        wt = y_true * w
        return _group(_s.assign_add(self.sum, _m.reduce_sum(wt, 0)),
                      _s.assign_add(self.squared_sum, _m.reduce_sum(y_true * wt, 0)),
                      _s.assign_add(self.total_mse, _m.reduce_sum(_m.square(y_true - y_pred) * w, 0)),
                      _s.assign_add(self.count, _m.reduce_sum(w, 0)),
                      _s.assign_add(self.num_samples, _m.cast(_a.size(y_true), _dt.int32)))

    def result(self) -> _g.Tensor:
        mean = self.sum / self.count
        total = self.squared_sum - self.sum * mean
        raw = 1.0 - self.total_mse / total
        raw = _a.where(_is_inf(raw), _a.zeros_like(raw), raw)
        if self.class_aggregation == "uniform_average":
            score = _m.reduce_mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            score = _m.reduce_sum(total * raw) / _m.reduce_sum(total)
        else:
            score = raw
        if self.num_regressors:
            # adjusted R2 where there are more samples than regressors + 1 (else the plain score)
            n = _m.cast(self.num_samples, _dt.float32)
            p = float(self.num_regressors)
            ok = _m.greater(n - 1.0, p)
            adjusted = 1.0 - (1.0 - score) * (n - 1.0) / _a.where(ok, n - p - 1.0, _a.ones_like(n))
            score = _a.where(ok, adjusted * _a.ones_like(score), score)
        return score

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}


class FBetaScore(Metric):
    """(1 + beta^2) precision recall / (beta^2 precision + recall) per class, or averaged
    ("micro", "macro", "weighted"); a score above `threshold` (or a row's maximum) is positive."""

    def __init__(self, average: Optional[str] = None, beta: float = 1.0, threshold: Optional[float] = None,
                 name: str = "fbeta_score", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        if average not in (None, "micro", "macro", "weighted"):
            raise ValueError("Invalid `average` argument value. Expected one of: {None, 'micro', 'macro', "
                             f"'weighted'}}. Received: average={average}")
        if not isinstance(beta, float):
            raise ValueError(f"Invalid `beta` argument value. It should be a Python float. Received: beta={beta} of "
                             f"type '{type(beta)}'")
        if beta <= 0.0:
            raise ValueError(f"Invalid `beta` argument value. It should be > 0. Received: beta={beta}")
        if threshold is not None:
            if not isinstance(threshold, float):
                raise ValueError("Invalid `threshold` argument value. It should be a Python float. Received: "
                                 f"threshold={threshold} of type '{type(threshold)}'")
            if threshold > 1.0 or threshold <= 0.0:
                raise ValueError("Invalid `threshold` argument value. It should verify 0 < threshold <= 1. "
                                 f"Received: threshold={threshold}")
        self.average = average
        self.beta = beta
        self.threshold = threshold
        self.axis = None if average == "micro" else 0
        self._state_built = False

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true = _m.cast(y_true, self._dtype)
        y_pred = _m.cast(y_pred, self._dtype)
        if not self._state_built:
            n = _two_d("FBetaScore", y_true, y_pred)
            shape = [] if self.average == "micro" else [n]
            self.true_positives = self.add_weight("true_positives", shape=shape)
            self.false_positives = self.add_weight("false_positives", shape=shape)
            self.false_negatives = self.add_weight("false_negatives", shape=shape)
            self.intermediate_weights = self.add_weight("intermediate_weights", shape=shape)
            self._state_built = True
        if self.threshold is None:
            top = _m.reduce_max(y_pred, axis=-1, keepdims=True)
            pos = _m.logical_and(_m.greater_equal(y_pred, top), _m.greater(_m.abs(y_pred), 1e-9))
        else:
            pos = _m.greater(y_pred, self.threshold)
        y_pred = _m.cast(pos, self._dtype)

        def wsum(v: _g.Tensor) -> _g.Tensor:
            if sample_weight is not None:
                v = v * _a.expand_dims(_m.cast(sample_weight, self._dtype), 1)
            return _m.reduce_sum(v, axis=self.axis)
        return _group(_s.assign_add(self.true_positives, wsum(y_pred * y_true)),
                      _s.assign_add(self.false_positives, wsum(y_pred * (1.0 - y_true))),
                      _s.assign_add(self.false_negatives, wsum((1.0 - y_pred) * y_true)),
                      _s.assign_add(self.intermediate_weights, wsum(y_true)))

    def result(self) -> _g.Tensor:
        tp, fp, fn = self.true_positives, self.false_positives, self.false_negatives
        precision = div_no_nan(tp, tp + fp)
        recall = div_no_nan(tp, tp + fn)
        b2 = self.beta ** 2
        score = div_no_nan(precision * recall, b2 * precision + recall) * (1.0 + b2)
        if self.average == "weighted":
            w = self.intermediate_weights
            return _m.reduce_sum(score * div_no_nan(w, _m.reduce_sum(w)))
        if self.average is not None:
            return _m.reduce_mean(score)
        return score

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "average": self.average, "beta": self.beta, "threshold": self.threshold}


class F1Score(FBetaScore):
    """FBetaScore with beta 1."""

    def __init__(self, average: Optional[str] = None, threshold: Optional[float] = None, name: str = "f1_score",
                 dtype: Any = None):
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self) -> Dict[str, Any]:
        cfg = super().get_config()
        del cfg["beta"]
        return cfg
