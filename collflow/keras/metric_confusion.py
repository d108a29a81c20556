"""tf.keras.metrics over confusion counts at thresholds (TF 1.15): TruePositives,
FalsePositives, TrueNegatives, FalseNegatives, Precision, Recall (thresholds, top_k, class_id),
AUC (ROC or PR; interpolation, minoring or majoring sums), SensitivityAtSpecificity,
SpecificityAtSensitivity, PrecisionAtRecall, RecallAtPrecision, and MeanIoU.

A prediction counts as positive at threshold t when it is > t; a label is true when nonzero;
predictions must lie in [0, 1] (checked when the counts are updated)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import state_ops as _s
from ..graph.ops.check_more_ops import assert_greater_equal as _assert_ge
from ..graph.ops.check_ops import assert_less_equal as _assert_le
from ..graph.ops.constant_op import group as _group
from ..graph.ops.constant_op import identity as _identity
from ..graph.ops.misc_ops import top_k as _top_k
from ..graph.ops.slicing_ops import gather as _gather
from ..graph.ops.tally_ops import confusion_matrix as _confusion_matrix
from . import backend as K
from . import loss_classes as _lc
from .metric_classes import Metric, div_no_nan

__all__ = ["TruePositives", "FalsePositives", "TrueNegatives", "FalseNegatives", "Precision", "Recall", "AUC",
           "SensitivityAtSpecificity", "SpecificityAtSensitivity", "PrecisionAtRecall", "RecallAtPrecision",
           "MeanIoU", "update_confusion_matrix_variables"]

NEG_INF = -1e10  # a score below every threshold: what top_k filtering gives the scores it drops
_KEYS = ("tp", "fp", "tn", "fn")


def _thresholds(thresholds: Any, default: float) -> List[float]:
    if thresholds is not None:
        values = [float(t) for t in (thresholds if isinstance(thresholds, (list, tuple, np.ndarray))
                                     else [thresholds])]
        bad = [t for t in values if t < 0 or t > 1]
        if bad:
            raise ValueError(f"Threshold values must be in [0, 1]. Invalid values: {bad}")
        return values
    return [default]


def _filter_top_k(x: _g.Tensor, k: int) -> _g.Tensor:
    """x where it is among the k largest of its row, NEG_INF elsewhere."""
    _, idx = _top_k(x, k, sorted=False)
    n = x.shape.as_list()[-1]
    keep = _m.reduce_sum(_a.one_hot(idx, n, dtype=x.dtype), axis=-2)
    return x * keep + NEG_INF * (1.0 - keep)


def update_confusion_matrix_variables(variables: Dict[str, Any], y_true: Any, y_pred: Any,
                                      thresholds: Sequence[float], top_k: Optional[int] = None,
                                      class_id: Optional[int] = None, sample_weight: Any = None) -> Any:
    """Adds the (weighted) counts at each threshold to variables {"tp"|"fp"|"tn"|"fn": var}."""
    y_true = _m.cast(y_true, _dt.float32)
    y_pred = _m.cast(y_pred, _dt.float32)
    y_pred, y_true, sample_weight = _lc.squeeze_or_expand_dimensions(
        y_pred, y_true, None if sample_weight is None else _m.cast(sample_weight, _dt.float32))
    if not y_pred.shape.is_compatible_with(y_true.shape):
        raise ValueError(f"Shapes {y_pred.shape} and {y_true.shape} are incompatible")
    checks = [_assert_ge(y_pred, _m.cast(0.0, _dt.float32), message="predictions must be >= 0"),
              _assert_le(y_pred, _m.cast(1.0, _dt.float32), message="predictions must be <= 1")]
    with _g.control_dependencies(checks):
        y_pred = _identity(y_pred)
    if top_k is not None:
        y_pred = _filter_top_k(y_pred, int(top_k))
    if class_id is not None:
        y_true = y_true[..., class_id]
        y_pred = y_pred[..., class_id]
        if sample_weight is not None and sample_weight.shape.rank is not None and \
                sample_weight.shape.rank > y_pred.shape.rank:
            sample_weight = _a.squeeze(sample_weight, [-1])
    th = _g.convert_to_tensor(np.asarray(thresholds, np.float32))
    pred = _a.reshape(y_pred, [1, -1])
    pos = _m.greater(pred, _a.reshape(th, [-1, 1]))                     # [T, N]
    lab = _a.reshape(_m.cast(y_true, _dt.bool_), [1, -1])
    neg_lab, neg_pos = _m.logical_not(lab), _m.logical_not(pos)
    conds = {"tp": _m.logical_and(lab, pos), "fn": _m.logical_and(lab, neg_pos),
             "tn": _m.logical_and(neg_lab, neg_pos), "fp": _m.logical_and(neg_lab, pos)}
    w = None
    if sample_weight is not None:
        w = _a.reshape(sample_weight * _a.ones_like(y_pred), [1, -1])
    ups = []
    for key in _KEYS:
        if key in variables:
            c = _m.cast(conds[key], _dt.float32)
            var = variables[key]
            ups.append(_s.assign_add(var, _m.cast(_m.reduce_sum(c * w if w is not None else c, 1), var.dtype)))
    return _group(*ups)


class _ConditionCount(Metric):
    """One count at each threshold; a scalar result for one threshold."""

    _key = ""

    def __init__(self, thresholds: Any = None, name: Optional[str] = None, dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.thresholds = _thresholds(thresholds, 0.5)
        self.accumulator = self.add_weight("accumulator", shape=(len(self.thresholds),), initializer="zeros")

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        return update_confusion_matrix_variables({self._key: self.accumulator}, y_true, y_pred, self.thresholds,
                                                 sample_weight=sample_weight)

    def result(self) -> _g.Tensor:
        return self.accumulator[0] if len(self.thresholds) == 1 else _identity(self.accumulator)

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "thresholds": self.init_thresholds}


class TruePositives(_ConditionCount):
    """The (weighted) number of true positives."""
    _key = "tp"


class FalsePositives(_ConditionCount):
    """The (weighted) number of false positives."""
    _key = "fp"


class TrueNegatives(_ConditionCount):
    """The (weighted) number of true negatives."""
    _key = "tn"


class FalseNegatives(_ConditionCount):
    """The (weighted) number of false negatives."""
    _key = "fn"


class _RatioAtThresholds(Metric):
    """tp / (tp + other) at each threshold (Precision: other = fp; Recall: fn)."""

    _other = ""

    def __init__(self, thresholds: Any = None, top_k: Optional[int] = None, class_id: Optional[int] = None,
                 name: Optional[str] = None, dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.top_k = top_k
        self.class_id = class_id
        self.thresholds = _thresholds(thresholds, 0.5 if top_k is None else NEG_INF)
        n = len(self.thresholds)
        self.true_positives = self.add_weight("true_positives", shape=(n,), initializer="zeros")
        other = "false_positives" if self._other == "fp" else "false_negatives"
        setattr(self, other, self.add_weight(other, shape=(n,), initializer="zeros"))
        self._other_var = getattr(self, other)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        return update_confusion_matrix_variables({"tp": self.true_positives, self._other: self._other_var}, y_true,
                                                 y_pred, self.thresholds, top_k=self.top_k, class_id=self.class_id,
                                                 sample_weight=sample_weight)

    def result(self) -> _g.Tensor:
        r = div_no_nan(self.true_positives, self.true_positives + self._other_var)
        return r[0] if len(self.thresholds) == 1 else r

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "thresholds": self.init_thresholds, "top_k": self.top_k,
                "class_id": self.class_id}


class Precision(_RatioAtThresholds):
    """tp / (tp + fp)."""
    _other = "fp"


class Recall(_RatioAtThresholds):
    """tp / (tp + fn)."""
    _other = "fn"


class _FourCounts(Metric):
    def _make_counts(self, n: int) -> None:
        self.true_positives = self.add_weight("true_positives", shape=(n,), initializer="zeros")
        self.true_negatives = self.add_weight("true_negatives", shape=(n,), initializer="zeros")
        self.false_positives = self.add_weight("false_positives", shape=(n,), initializer="zeros")
        self.false_negatives = self.add_weight("false_negatives", shape=(n,), initializer="zeros")

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        return update_confusion_matrix_variables(
            {"tp": self.true_positives, "tn": self.true_negatives, "fp": self.false_positives,
             "fn": self.false_negatives}, y_true, y_pred, self.thresholds, sample_weight=sample_weight)


class AUC(_FourCounts):
    """The area under the ROC or PR curve by a Riemann sum over num_thresholds thresholds."""

    def __init__(self, num_thresholds: int = 200, curve: str = "ROC", summation_method: str = "interpolation",
                 name: Optional[str] = None, dtype: Any = None, thresholds: Any = None):
        if curve not in ("ROC", "PR"):
            raise ValueError(f'Invalid curve: "{curve}". Valid options are: "ROC", "PR"')
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError(f'Invalid summation method: "{summation_method}". Valid options are: '
                             '"interpolation", "majoring", "minoring"')
        super().__init__(name=name, dtype=dtype)
        self.curve = curve
        self.summation_method = summation_method
        if thresholds is not None:
            inner = sorted(_thresholds(thresholds, 0.5))
            self.num_thresholds = len(inner) + 2
        else:
            if num_thresholds <= 1:
                raise ValueError("`num_thresholds` must be > 1.")
            self.num_thresholds = int(num_thresholds)
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        # the ends just outside [0, 1]: every prediction above the first, none above the last
        eps = K.epsilon()
        self.thresholds = [0.0 - eps] + inner + [1.0 + eps]
        self._make_counts(self.num_thresholds)

    def _interpolate_pr_auc(self) -> _g.Tensor:
        """The PR curve's area with precision interpolated between thresholds as a function of
        the positives' count (Davis & Goadrich), each piece integrated exactly."""
        n = self.num_thresholds
        tp, fp, fn = self.true_positives, self.false_positives, self.false_negatives
        dtp = tp[:n - 1] - tp[1:]
        p = tp + fp
        dp = p[:n - 1] - p[1:]
        slope = div_no_nan(dtp, _m.maximum(dp, 0.0))
        intercept = tp[1:] - slope * p[1:]
        both = _m.logical_and(p[:n - 1] > 0, p[1:] > 0)
        ratio = _a.where(both, div_no_nan(p[:n - 1], _m.maximum(p[1:], 0.0)), _a.ones_like(p[1:]))
        return _m.reduce_sum(div_no_nan(slope * (dtp + intercept * _m.log(ratio)), _m.maximum(tp[1:] + fn[1:], 0.0)))

    def result(self) -> _g.Tensor:
        n = self.num_thresholds
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._interpolate_pr_auc()
        tp, fp, tn, fn = self.true_positives, self.false_positives, self.true_negatives, self.false_negatives
        recall = div_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = div_no_nan(fp, fp + tn), recall
        else:
            x, y = recall, div_no_nan(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[:n - 1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = _m.minimum(y[:n - 1], y[1:])
        else:
            heights = _m.maximum(y[:n - 1], y[1:])
        return _m.reduce_sum((x[:n - 1] - x[1:]) * heights)

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "num_thresholds": self.num_thresholds, "curve": self.curve,
                "summation_method": self.summation_method, "thresholds": self.thresholds[1:-1]}


class _AtValue(_FourCounts):
    """A rate at the threshold picked by a constraint on another (value in [0, 1])."""

    _value_name = "value"

    def __init__(self, value: float, num_thresholds: int = 200, name: Optional[str] = None, dtype: Any = None):
        if value < 0 or value > 1:
            raise ValueError(f"`{self._value_name}` must be in the range [0, 1].")
        if num_thresholds <= 0:
            raise ValueError("`num_thresholds` must be > 0.")
        super().__init__(name=name, dtype=dtype)
        self.value = float(value)
        self.num_thresholds = int(num_thresholds)
        if num_thresholds == 1:
            self.thresholds = [0.5]
        else:
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self.thresholds = [0.0] + inner + [1.0]
        self._make_counts(self.num_thresholds)

    def _rates(self) -> Dict[str, _g.Tensor]:
        tp, fp, tn, fn = self.true_positives, self.false_positives, self.true_negatives, self.false_negatives
        return {"sensitivity": div_no_nan(tp, tp + fn), "specificity": div_no_nan(tn, tn + fp),
                "precision": div_no_nan(tp, tp + fp)}

    def _at_closest(self, constrained: _g.Tensor, dependent: _g.Tensor) -> _g.Tensor:
        """TF 1.15's rule: `dependent` at the first threshold where `constrained` is closest to value."""
        i = _m.cast(_m.argmin(_m.abs(constrained - self.value), 0), _dt.int32)
        return _gather(dependent, i)

    def _max_where_at_least(self, constrained: _g.Tensor, dependent: _g.Tensor) -> _g.Tensor:
        """tf_keras's rule: the largest `dependent` where `constrained` >= value (0 if none)."""
        ok = _m.greater_equal(constrained, self.value)
        low = _a.fill(_a.shape(dependent), _m.cast(-1.0, dependent.dtype))
        best = _m.reduce_max(_a.where(ok, dependent, low))
        return _m.maximum(best, 0.0)

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "num_thresholds": self.num_thresholds, self._value_name: self.value}


class SensitivityAtSpecificity(_AtValue):
    """The recall at the threshold whose specificity is closest to `specificity` (TF 1.15)."""

    _value_name = "specificity"

    def __init__(self, specificity: float, num_thresholds: int = 200, name: Optional[str] = None, dtype: Any = None):
        super().__init__(specificity, num_thresholds, name=name, dtype=dtype)
        self.specificity = self.value

    def result(self) -> _g.Tensor:
        r = self._rates()
        return self._at_closest(r["specificity"], r["sensitivity"])


class SpecificityAtSensitivity(_AtValue):
    """The specificity at the threshold whose recall is closest to `sensitivity` (TF 1.15)."""

    _value_name = "sensitivity"

    def __init__(self, sensitivity: float, num_thresholds: int = 200, name: Optional[str] = None, dtype: Any = None):
        super().__init__(sensitivity, num_thresholds, name=name, dtype=dtype)
        self.sensitivity = self.value

    def result(self) -> _g.Tensor:
        r = self._rates()
        return self._at_closest(r["sensitivity"], r["specificity"])


class PrecisionAtRecall(_AtValue):
    """The best precision among the thresholds whose recall is >= `recall` (tf_keras's rule)."""

    _value_name = "recall"

    def __init__(self, recall: float, num_thresholds: int = 200, name: Optional[str] = None, dtype: Any = None):
        super().__init__(recall, num_thresholds, name=name, dtype=dtype)
        self.recall = self.value

    def result(self) -> _g.Tensor:
        r = self._rates()
        return self._max_where_at_least(r["sensitivity"], r["precision"])


class RecallAtPrecision(_AtValue):
    """The best recall among the thresholds whose precision is >= `precision` (tf_keras's rule)."""

    _value_name = "precision"

    def __init__(self, precision: float, num_thresholds: int = 200, name: Optional[str] = None, dtype: Any = None):
        super().__init__(precision, num_thresholds, name=name, dtype=dtype)
        self.precision = self.value

    def result(self) -> _g.Tensor:
        r = self._rates()
        return self._max_where_at_least(r["precision"], r["sensitivity"])


class MeanIoU(Metric):
    """The mean over classes of intersection / union of the (weighted) confusion matrix of
    integer labels and predicted class ids (classes never seen left out)."""

    def __init__(self, num_classes: int, name: Optional[str] = None, dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self.num_classes = int(num_classes)
        # float64 counts, as TF's (exact over many samples)
        self.total_cm = self.add_weight("total_confusion_matrix", shape=(self.num_classes, self.num_classes),
                                        initializer="zeros", dtype=_dt.float64)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true = _a.reshape(_m.cast(y_true, self._dtype), [-1])
        y_pred = _a.reshape(_m.cast(y_pred, self._dtype), [-1])
        w = None
        if sample_weight is not None:
            w = _a.reshape(_m.cast(sample_weight, self._dtype), [-1])
        cm = _confusion_matrix(_m.cast(y_true, _dt.int64), _m.cast(y_pred, _dt.int64), self.num_classes,
                               weights=w, dtype=_dt.float64)
        return _s.assign_add(self.total_cm, cm)

    def result(self) -> _g.Tensor:
        cm = self.total_cm
        rows = _m.cast(_m.reduce_sum(cm, 0), self._dtype)
        cols = _m.cast(_m.reduce_sum(cm, 1), self._dtype)
        eye = _g.convert_to_tensor(np.eye(self.num_classes))
        tp = _m.cast(_m.reduce_sum(cm * eye, 1), self._dtype)  # the diagonal
        den = rows + cols - tp
        valid = _m.reduce_sum(_m.cast(_m.not_equal(den, 0.0), self._dtype))
        return div_no_nan(_m.reduce_sum(div_no_nan(tp, den)), valid)

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "num_classes": self.num_classes}
