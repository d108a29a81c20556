"""tf.metrics (TensorFlow 1.x): streaming metrics over the batches of an evaluation.

Each metric returns (value, update_op): `update_op` folds one batch into the metric's local
variables (in LOCAL_VARIABLES and METRIC_VARIABLES, under a variable scope named after the
metric and made unique: "accuracy/total", "accuracy/count", then "accuracy_1/...") and returns
the updated value; `value` reads the current one.  tf.local_variables_initializer() starts
(or restarts) an evaluation.  Values are float32; with `weights` each element counts by its
weight (broadcast to the values); a metric over nothing is 0 (TensorFlow's safe division).
Booleans for the counting metrics: a nonzero label or prediction is true.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import state_ops as _s
from ..graph.variable_scope import variable_scope
from ..graph.variables import Variable
from .metrics_shapes import broadcast_weights, squeeze_pair

__all__ = ["mean", "accuracy", "mean_squared_error", "root_mean_squared_error", "mean_absolute_error",
           "true_positives", "false_positives", "false_negatives", "true_negatives", "precision", "recall", "auc",
           "mean_iou", "mean_per_class_accuracy"]

Collections = Optional[Sequence[str]]
Pair = Tuple[_g.Tensor, _g.Tensor]


def _local(name: str, shape: Sequence[int] = (), dtype: Any = _dt.float32) -> Variable:
    """An accumulator of the current scope (a float32 scalar by default), starting at 0."""
    g = _g.get_default_graph()
    with g.control_dependencies(None):
        return Variable(_a.zeros(list(shape), dtype), trainable=False, name=name,
                        collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES])


def _collect(metrics_collections: Collections, updates_collections: Collections, value: Any, update: Any) -> Pair:
    g = _g.get_default_graph()
    for c in metrics_collections or ():
        g.add_to_collection(c, value)
    for c in updates_collections or ():
        g.add_to_collection(c, update)
    return value, update


def _safe_div(num: Any, den: Any, name: str) -> _g.Tensor:
    """num / den, 0 where den is 0 (TensorFlow's safe division)."""
    return _a.where(_m.greater(den, 0.0), _m.truediv(num, _m.maximum(den, 1e-37)), _a.zeros_like(num), name=name)


def _floats(x: Any) -> _g.Tensor:
    x = _g.convert_to_tensor(x)
    return x if x.dtype == _dt.float32 else _m.cast(x, _dt.float32)


def _weighted(x: _g.Tensor, weights: Any) -> Tuple[_g.Tensor, _g.Tensor]:
    """(sum of x * w, sum of w) with w broadcast to x (1 where weights is None)."""
    if weights is None:
        return _m.reduce_sum(x), _m.cast(_a.size(x), _dt.float32)
    w = broadcast_weights(weights, x)
    return _m.reduce_sum(x * w), _m.reduce_sum(w)


def _mean_here(values: Any, weights: Any, metrics_collections: Collections, updates_collections: Collections) -> Pair:
    """The mean metric in the current variable scope: total / count."""
    total, count = _local("total"), _local("count")
    s, n = _weighted(_floats(values), weights)
    update = _safe_div(_s.assign_add(total, s), _s.assign_add(count, n), "update_op")
    value = _safe_div(total.value(), count.value(), "value")
    return _collect(metrics_collections, updates_collections, value, update)


def _count_here(condition: _g.Tensor, weights: Any, metrics_collections: Collections,
                updates_collections: Collections) -> Pair:
    """A (weighted) count of true elements in the current variable scope."""
    c = _local("count")
    s, _ = _weighted(_m.cast(condition, _dt.float32), weights)
    update = _s.assign_add(c, s)
    return _collect(metrics_collections, updates_collections, c.value(), update)


def _as_bool(x: Any) -> _g.Tensor:
    """x as bool: a nonzero entry is true."""
    x = _g.convert_to_tensor(x)
    return x if x.dtype == _dt.bool_ else _m.not_equal(x, _a.zeros_like(x))


def _bools(labels: Any, predictions: Any) -> Tuple[_g.Tensor, _g.Tensor]:
    return squeeze_pair(_as_bool(labels), _as_bool(predictions))


def _float_pair(labels: Any, predictions: Any) -> Tuple[_g.Tensor, _g.Tensor]:
    """Both float32, a squeezable trailing dimension dropped (TF1's remove_squeezable_dimensions)."""
    return squeeze_pair(_floats(labels), _floats(predictions))


def mean(values: Any, weights: Any = None, metrics_collections: Collections = None,
         updates_collections: Collections = None, name: Optional[str] = None) -> Pair:
    """The (weighted) mean of every value seen."""
    with variable_scope(name, default_name="mean"):
        return _mean_here(values, weights, metrics_collections, updates_collections)


def accuracy(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Collections = None,
             updates_collections: Collections = None, name: Optional[str] = None) -> Pair:
    """How often predictions equal labels (compared in the labels' dtype)."""
    with variable_scope(name, default_name="accuracy"):
        labels, predictions = squeeze_pair(_g.convert_to_tensor(labels), _g.convert_to_tensor(predictions))
        if (labels.shape.rank is not None and predictions.shape.rank is not None
                and not labels.shape.is_compatible_with(predictions.shape)):
            raise InvalidArgumentError(f"accuracy: labels of shape {labels.shape} and predictions of shape "
                                       f"{predictions.shape} do not match")
        if predictions.dtype != labels.dtype:
            predictions = _m.cast(predictions, labels.dtype)
        return _mean_here(_m.equal(predictions, labels), weights, metrics_collections, updates_collections)


def mean_squared_error(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Collections = None,
                       updates_collections: Collections = None, name: Optional[str] = None) -> Pair:
    """The mean of (labels - predictions)^2."""
    with variable_scope(name, default_name="mean_squared_error"):
        d = _m.squared_difference(*_float_pair(labels, predictions))
        return _mean_here(d, weights, metrics_collections, updates_collections)


def root_mean_squared_error(labels: Any, predictions: Any, weights: Any = None,
                            metrics_collections: Collections = None, updates_collections: Collections = None,
                            name: Optional[str] = None) -> Pair:
    """The square root of the mean squared error."""
    with variable_scope(name, default_name="root_mean_squared_error"):
        value, update = _mean_here(_m.squared_difference(*_float_pair(labels, predictions)), weights, None, None)
        return _collect(metrics_collections, updates_collections, _m.sqrt(value), _m.sqrt(update))


def mean_absolute_error(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Collections = None,
                        updates_collections: Collections = None, name: Optional[str] = None) -> Pair:
    """The mean of |labels - predictions|."""
    with variable_scope(name, default_name="mean_absolute_error"):
        lab, pred = _float_pair(labels, predictions)
        d = _m.abs(lab - pred)
        return _mean_here(d, weights, metrics_collections, updates_collections)


def _counter(default: str, which: Any) -> Any:
    def metric(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Collections = None,
               updates_collections: Collections = None, name: Optional[str] = None) -> Pair:
        with variable_scope(name, default_name=default):
            lab, pred = _bools(labels, predictions)
            return _count_here(which(lab, pred), weights, metrics_collections, updates_collections)
    metric.__name__ = default
    metric.__doc__ = f"The (weighted) number of {default.replace('_', ' ')} (a nonzero label or prediction is true)."
    return metric


true_positives = _counter("true_positives", lambda l, p: _m.logical_and(l, p))
false_positives = _counter("false_positives", lambda l, p: _m.logical_and(_m.logical_not(l), p))
false_negatives = _counter("false_negatives", lambda l, p: _m.logical_and(l, _m.logical_not(p)))
true_negatives = _counter("true_negatives", lambda l, p: _m.logical_and(_m.logical_not(l), _m.logical_not(p)))


def _ratio(default: str, other: Any) -> Any:
    def metric(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Collections = None,
               updates_collections: Collections = None, name: Optional[str] = None) -> Pair:
        with variable_scope(name, default_name=default):
            tp, tp_up = true_positives(labels, predictions, weights)
            o, o_up = other(labels, predictions, weights)
            value = _safe_div(tp, tp + o, "value")
            update = _safe_div(tp_up, tp_up + o_up, "update_op")
            return _collect(metrics_collections, updates_collections, value, update)
    metric.__name__ = default
    return metric


precision = _ratio("precision", false_positives)
precision.__doc__ = "true positives / (true positives + false positives)."
recall = _ratio("recall", false_negatives)
recall.__doc__ = "true positives / (true positives + false negatives)."


def auc(labels: Any, predictions: Any, weights: Any = None, num_thresholds: int = 200,
        metrics_collections: Collections = None, updates_collections: Collections = None, curve: str = "ROC",
        name: Optional[str] = None, summation_method: str = "trapezoidal", thresholds: Any = None) -> Pair:
    """The area under the ROC (or precision-recall, curve="PR") curve, TF1's estimate: the
    confusion counts at num_thresholds thresholds evenly spaced in [0, 1] (predictions are
    probabilities), summed by the trapezoidal rule ("minoring"/"majoring": the lower/upper
    Riemann sums; "careful_interpolation" interpolates PR curves as TF1, and is trapezoidal
    for ROC); given `thresholds` are sorted, and both ways get end points -1e-7 and 1 + 1e-7;
    local variables auc/true_positives, false_negatives, true_negatives,
    false_positives of shape [num_thresholds]."""
    if curve not in ("ROC", "PR"):
        raise ValueError(f"curve must be either ROC or PR, {curve} unknown")
    if summation_method not in ("trapezoidal", "careful_interpolation", "minoring", "majoring"):
        raise ValueError(f"Invalid summation_method: {summation_method}")
    if thresholds is not None:
        ths = sorted(float(t) for t in thresholds)       # TF1 sorts the given thresholds
    else:
        if num_thresholds < 2:
            raise ValueError("num_thresholds must be > 1.")
        ths = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    ths = [0.0 - 1e-7] + ths + [1.0 + 1e-7]               # both ways get the end points
    n = len(ths)
    from .metrics_thresholds import _confusion_at_thresholds  # it imports this module
    with variable_scope(name, default_name="auc"):
        # squeezes, weights' alignment and the [0, 1] check of predictions, as TF1's auc
        counts = _confusion_at_thresholds(labels, predictions, ths, weights)

        def compute(tp: Any, fn: Any, tn: Any, fp: Any, nm: str) -> _g.Tensor:
            if curve == "PR" and summation_method == "careful_interpolation":
                return _interpolated_pr_auc(tp, fn, fp, n, nm)
            eps = 1.0e-6
            rec = _m.truediv(tp + eps, tp + fn + eps)
            if curve == "ROC":
                x, y = _m.truediv(fp, fp + tn + eps), rec
            else:
                x, y = rec, _m.truediv(tp + eps, tp + fp + eps)
            dx = x[:n - 1] - x[1:]
            if summation_method == "minoring":
                h = _m.minimum(y[:n - 1], y[1:])
            elif summation_method == "majoring":
                h = _m.maximum(y[:n - 1], y[1:])
            else:
                h = (y[:n - 1] + y[1:]) / 2.0
            return _m.reduce_sum(dx * h, name=nm)

        order = ("tp", "fn", "tn", "fp")
        value = compute(*[counts[k][0].value() for k in order], "value")
        update = compute(*[counts[k][1] for k in order], "update_op")
        return _collect(metrics_collections, updates_collections, value, update)


def _interpolated_pr_auc(tp: Any, fn: Any, fp: Any, n: int, name: str) -> _g.Tensor:
    """TF1's PR AUC by careful interpolation (Davis & Goadrich 2006): between two adjacent
    thresholds tp grows linearly with the predicted positives P = tp + fp, tp = a + s * P,
    so precision = s + a / P, and the area over recall (d recall = d tp / positives) is
    s * (d tp + a * log(P_lo / P_hi)) / positives, each division 0 where its divisor is 0."""
    from ..graph.ops.math_more_ops import div_no_nan
    p = tp + fp
    p_lo, p_hi = p[:n - 1], p[1:]                 # thresholds ascend: P shrinks
    dtp = tp[:n - 1] - tp[1:]
    slope = div_no_nan(dtp, _m.maximum(p_lo - p_hi, 0.0))
    intercept = tp[1:] - slope * p_hi
    both = _m.logical_and(_m.greater(p_lo, 0.0), _m.greater(p_hi, 0.0))
    ratio = _a.where(both, div_no_nan(p_lo, _m.maximum(p_hi, 0.0)), _a.ones_like(p_hi))
    area = div_no_nan(slope * (dtp + intercept * _m.log(ratio)), _m.maximum(tp[1:] + fn[1:], 0.0))
    return _m.reduce_sum(area, name=name)


def _flat_pair(labels: Any, predictions: Any, what: str) -> Tuple[_g.Tensor, _g.Tensor]:
    labels, predictions = squeeze_pair(_g.convert_to_tensor(labels), _g.convert_to_tensor(predictions))
    if (labels.shape.rank is not None and predictions.shape.rank is not None
            and not labels.shape.is_compatible_with(predictions.shape)):
        raise InvalidArgumentError(f"{what}: labels of shape {labels.shape} and predictions of shape "
                                   f"{predictions.shape} do not match")
    return _a.reshape(labels, [-1]), _a.reshape(predictions, [-1])


def mean_iou(labels: Any, predictions: Any, num_classes: int, weights: Any = None,
             metrics_collections: Collections = None, updates_collections: Collections = None,
             name: Optional[str] = None) -> Pair:
    """The mean over classes of intersection over union, tp / (tp + fp + fn), from a
    streaming confusion matrix (local variable total_confusion_matrix, float64); classes
    never seen nor predicted are left out of the mean.  As TF, update_op returns the updated
    confusion matrix."""
    from ..graph.ops.matrix_ops import matrix_diag_part
    from ..graph.ops.tally_ops import confusion_matrix
    with variable_scope(name, default_name="mean_iou"):
        lab, pred = _flat_pair(labels, predictions, "mean_iou")
        total = _local("total_confusion_matrix", [int(num_classes), int(num_classes)], _dt.float64)
        w = None if weights is None else _a.reshape(_m.cast(broadcast_weights(
            weights, _g.convert_to_tensor(predictions)), _dt.float64), [-1])
        current = confusion_matrix(lab, _m.cast(pred, lab.dtype) if pred.dtype != lab.dtype else pred,
                                   num_classes=int(num_classes), weights=w, dtype=_dt.float64)
        update = _s.assign_add(total, current)
        cm = _m.cast(total.value(), _dt.float32)
        diag = matrix_diag_part(cm)
        denominator = _m.reduce_sum(cm, 0) + _m.reduce_sum(cm, 1) - diag
        valid = _m.reduce_sum(_m.cast(_m.not_equal(denominator, 0.0), _dt.float32))
        iou = diag / _a.where(_m.greater(denominator, 0.0), denominator, _a.ones_like(denominator))
        value = _safe_div(_m.reduce_sum(iou), valid, "mean_iou")
        return _collect(metrics_collections, updates_collections, value, update)


def mean_per_class_accuracy(labels: Any, predictions: Any, num_classes: int, weights: Any = None,
                            metrics_collections: Collections = None, updates_collections: Collections = None,
                            name: Optional[str] = None) -> Pair:
    """The mean over classes of each class's accuracy (local variables total and count, one
    entry per class); as TF, update_op returns the per-class accuracies."""
    with variable_scope(name, default_name="mean_accuracy"):
        lab, pred = _flat_pair(labels, predictions, "mean_per_class_accuracy")
        if pred.dtype != lab.dtype:
            pred = _m.cast(pred, lab.dtype)
        total = _local("total", [int(num_classes)])
        count = _local("count", [int(num_classes)])
        ones = _a.ones_like(lab, dtype=_dt.float32)
        correct = _m.cast(_m.equal(pred, lab), _dt.float32)
        if weights is not None:
            w = _a.reshape(broadcast_weights(weights, _g.convert_to_tensor(predictions)), [-1])
            ones, correct = ones * w, correct * w
        update = _safe_div(_s.scatter_add(count, lab, correct), _s.scatter_add(total, lab, ones), "update_op")
        value = _m.reduce_mean(_safe_div(count.value(), total.value(), "per_class"), name="mean_accuracy")
        return _collect(metrics_collections, updates_collections, value, update)


# The thresholded and top-k metrics live in their own modules (they import the helpers above).
from .metrics_thresholds import *  # noqa: F401,F403,E402
from .metrics_thresholds import __all__ as _thresholds_all  # noqa: E402
from .metrics_at_k import *  # noqa: F401,F403,E402
from .metrics_at_k import __all__ as _at_k_all  # noqa: E402

__all__ += _thresholds_all + _at_k_all
