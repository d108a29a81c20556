"""tf.metrics (TensorFlow 1.x): the thresholded confusion counts and the mean-based extras.

`*_at_thresholds` count, for every threshold t of a list, the (weighted) predictions above t
(prediction > t is positive) against boolean labels, in float32 local variables of shape
[len(thresholds)] named as TF1's (`true_positives`, `false_negatives`, `true_negatives`,
`false_positives`, made in that order); predictions must lie in [0, 1] (InvalidArgumentError
when the update runs).  `sensitivity_at_specificity` / `specificity_at_sensitivity` use
`num_thresholds` evenly spaced thresholds as TF1 and pick the threshold whose specificity
(sensitivity) is nearest the target.  `mean_cosine_distance`, `mean_relative_error`,
`percentage_below` are `metrics.mean` of a transformed value; `mean_tensor` is an elementwise
streaming mean (local variables total_tensor / count_tensor).
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import state_ops as _s
from ..graph.ops.constant_op import identity
from ..graph.variable_scope import variable_scope
from .metrics import Collections, Pair, _as_bool, _collect, _floats, _local, _mean_here, _safe_div
from .metrics_shapes import broadcast_weights, squeeze_pair

__all__ = ["true_positives_at_thresholds", "false_positives_at_thresholds", "true_negatives_at_thresholds",
           "false_negatives_at_thresholds", "precision_at_thresholds", "recall_at_thresholds",
           "sensitivity_at_specificity", "specificity_at_sensitivity", "mean_cosine_distance",
           "mean_relative_error", "mean_tensor", "percentage_below"]

_ORDER = ("tp", "fn", "tn", "fp")          # TF1 makes the variables in this order
_VAR_NAMES = {"tp": "true_positives", "fn": "false_negatives", "tn": "true_negatives", "fp": "false_positives"}


_squeeze_pair = squeeze_pair      # the name this module's users know


def _check_compatible(a: _g.Tensor, b: _g.Tensor) -> None:
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(f"Shapes {a.shape} and {b.shape} are incompatible")


def _confusion_at_thresholds(labels: Any, predictions: Any, thresholds: Sequence[float], weights: Any,
                             includes: Sequence[str] = _ORDER,
                             check_range: bool = True) -> Dict[str, Tuple[Any, _g.Tensor]]:
    """{key: (variable, update)} for the counts in `includes`, in the current scope
    (check_range=False: contrib's own counts, which take predictions outside [0, 1])."""
    from ..graph.ops.check_more_ops import assert_greater_equal
    from ..graph.ops.check_ops import assert_less_equal
    labels, predictions = _g.convert_to_tensor(labels), _floats(predictions)
    labels, predictions = _squeeze_pair(labels, predictions)
    _check_compatible(predictions, labels)
    if check_range:       # TF1 refuses predictions outside [0, 1] when the counts are updated.
        checks = [assert_greater_equal(predictions, _m.cast(0.0, _dt.float32), message="predictions must be in [0, 1]"),
                  assert_less_equal(predictions, _m.cast(1.0, _dt.float32), message="predictions must be in [0, 1]")]
        with _g.get_default_graph().control_dependencies(checks):
            predictions = identity(predictions)
    th = _g.convert_to_tensor(np.asarray([float(t) for t in thresholds], np.float32))
    pos = _m.greater(_a.reshape(predictions, [1, -1]), _a.reshape(th, [-1, 1]))        # [T, N]
    lab = _a.reshape(_as_bool(labels), [1, -1])
    w = None
    if weights is not None:
        w = _a.reshape(broadcast_weights(weights, predictions), [1, -1])
    conds = {"tp": _m.logical_and(lab, pos), "fn": _m.logical_and(lab, _m.logical_not(pos)),
             "tn": _m.logical_and(_m.logical_not(lab), _m.logical_not(pos)),
             "fp": _m.logical_and(_m.logical_not(lab), pos)}
    out = {}
    for key in _ORDER:
        if key not in includes:
            continue
        var = _local(_VAR_NAMES[key], [len(thresholds)])
        c = _m.cast(conds[key], _dt.float32)
        out[key] = (var, _s.assign_add(var, _m.reduce_sum(c * w if w is not None else c, 1)))
    return out


def _counter_at_thresholds(key: str) -> Any:
    default = _VAR_NAMES[key]

    def metric(labels: Any, predictions: Any, thresholds: Sequence[float], weights: Any = None,
               metrics_collections: Collections = None, updates_collections: Collections = None,
               name: Optional[str] = None) -> Pair:
        with variable_scope(name, default_name=default):
            var, update = _confusion_at_thresholds(labels, predictions, thresholds, weights, (key,))[key]
            return _collect(metrics_collections, updates_collections, var.value(), update)
    metric.__name__ = f"{default}_at_thresholds"
    metric.__doc__ = (f"The (weighted) {default.replace('_', ' ')} at each threshold (prediction > threshold is "
                      f"positive): a float32 [len(thresholds)] value; local variable {default}/{default}.")
    return metric


true_positives_at_thresholds = _counter_at_thresholds("tp")
false_positives_at_thresholds = _counter_at_thresholds("fp")
true_negatives_at_thresholds = _counter_at_thresholds("tn")
false_negatives_at_thresholds = _counter_at_thresholds("fn")


def _ratio_at_thresholds(default: str, other: str, prefix: str) -> Any:
    def metric(labels: Any, predictions: Any, thresholds: Sequence[float], weights: Any = None,
               metrics_collections: Collections = None, updates_collections: Collections = None,
               name: Optional[str] = None) -> Pair:
        with variable_scope(name, default_name=default):
            c = _confusion_at_thresholds(labels, predictions, thresholds, weights, ("tp", other))
            (tp, tp_up), (o, o_up) = c["tp"], c[other]
            eps = 1e-7      # TF1's: tp / (eps + tp + other), so 0 (not NaN) with nothing counted
            value = _m.truediv(tp.value(), eps + tp.value() + o.value(), name=f"{prefix}_value")
            update = _m.truediv(tp_up, eps + tp_up + o_up, name=f"{prefix}_update_op")
            return _collect(metrics_collections, updates_collections, value, update)
    metric.__name__ = default
    return metric


precision_at_thresholds = _ratio_at_thresholds("precision_at_thresholds", "fp", "precision")
precision_at_thresholds.__doc__ = "tp / (tp + fp) at each threshold (float32 [len(thresholds)])."
recall_at_thresholds = _ratio_at_thresholds("recall_at_thresholds", "fn", "recall")
recall_at_thresholds.__doc__ = "tp / (tp + fn) at each threshold (float32 [len(thresholds)])."


def _even_thresholds(num_thresholds: int) -> list:
    eps = 1e-7
    inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - eps] + inner + [1.0 + eps]


def sensitivity_at_specificity(labels: Any, predictions: Any, specificity: float, weights: Any = None,
                               num_thresholds: int = 200, metrics_collections: Collections = None,
                               updates_collections: Collections = None, name: Optional[str] = None) -> Pair:
    """The sensitivity (recall) at the threshold whose specificity is nearest `specificity`
    (the first such threshold on ties)."""
    if specificity < 0 or specificity > 1:
        raise ValueError(f"`specificity` must be in the range [0, 1]. Currently, `specificity` got {specificity}.")
    with variable_scope(name, default_name="sensitivity_at_specificity"):
        c = _confusion_at_thresholds(labels, predictions, _even_thresholds(num_thresholds), weights)
        eps = 1e-7

        def compute(tp: Any, tn: Any, fp: Any, fn: Any, nm: str) -> _g.Tensor:
            spec = _m.truediv(tn, tn + fp + eps)
            i = _m.cast(_m.argmin(_m.abs(spec - float(specificity)), 0), _dt.int32)
            tpi, fni = _a.gather(tp, i), _a.gather(fn, i)
            return _m.truediv(tpi, tpi + fni + eps, name=nm)

        value = compute(*[c[k][0].value() for k in ("tp", "tn", "fp", "fn")], "value")
        update = compute(*[c[k][1] for k in ("tp", "tn", "fp", "fn")], "update_op")
        return _collect(metrics_collections, updates_collections, value, update)


def specificity_at_sensitivity(labels: Any, predictions: Any, sensitivity: float, weights: Any = None,
                               num_thresholds: int = 200, metrics_collections: Collections = None,
                               updates_collections: Collections = None, name: Optional[str] = None) -> Pair:
    """The specificity at the threshold whose sensitivity is nearest `sensitivity` (the last
    such threshold on ties, as TF1)."""
    if sensitivity < 0 or sensitivity > 1:
        raise ValueError(f"`sensitivity` must be in the range [0, 1]. Currently, `sensitivity` got {sensitivity}.")
    with variable_scope(name, default_name="specificity_at_sensitivity"):
        c = _confusion_at_thresholds(labels, predictions, _even_thresholds(num_thresholds), weights)
        eps = 1e-7

        def compute(tp: Any, tn: Any, fp: Any, fn: Any, nm: str) -> _g.Tensor:
            dist = _m.abs(_m.truediv(tp, tp + fn + eps) - float(sensitivity))
            # the last index at the minimum: argmax of the running count of minima
            at_min = _m.cast(_m.equal(dist, _m.reduce_min(dist)), _dt.int64)
            from ..graph.ops.scan_ops import cumsum
            i = _m.cast(_m.argmax(cumsum(at_min, 0), 0), _dt.int32)
            tni, fpi = _a.gather(tn, i), _a.gather(fp, i)
            return _m.truediv(tni, tni + fpi + eps, name=nm)

        value = compute(*[c[k][0].value() for k in ("tp", "tn", "fp", "fn")], "value")
        update = compute(*[c[k][1] for k in ("tp", "tn", "fp", "fn")], "update_op")
        return _collect(metrics_collections, updates_collections, value, update)


def mean_cosine_distance(labels: Any, predictions: Any, dim: int, weights: Any = None,
                         metrics_collections: Collections = None, updates_collections: Collections = None,
                         name: Optional[str] = None) -> Pair:
    """1 - the (weighted) mean of sum(labels * predictions, dim) (inputs assumed unit-normalized,
    as TF1); local variables mean_cosine_distance/total and count."""
    labels, predictions = _squeeze_pair(_floats(labels), _floats(predictions))
    _check_compatible(predictions, labels)
    radial = _m.reduce_sum(predictions * labels, axis=[dim], keepdims=True)
    with variable_scope(name, default_name="mean_cosine_distance"):
        value, update = _mean_here(radial, weights, None, None)
    return _collect(metrics_collections, updates_collections, 1.0 - value, 1.0 - update)


def mean_relative_error(labels: Any, predictions: Any, normalizer: Any, weights: Any = None,
                        metrics_collections: Collections = None, updates_collections: Collections = None,
                        name: Optional[str] = None) -> Pair:
    """The (weighted) mean of |labels - predictions| / normalizer (0 where normalizer is 0)."""
    labels, predictions = _squeeze_pair(_floats(labels), _floats(predictions))
    _check_compatible(predictions, labels)
    normalizer = _floats(normalizer)
    normalizer, predictions = _squeeze_pair(normalizer, predictions)
    _check_compatible(predictions, normalizer)
    zero = _m.equal(normalizer, 0.0)
    safe = _a.where(zero, _a.ones_like(normalizer), normalizer)
    rel = _a.where(zero, _a.zeros_like(labels), _m.abs(labels - predictions) / safe)
    with variable_scope(name, default_name="mean_relative_error"):
        return _mean_here(rel, weights, metrics_collections, updates_collections)


def mean_tensor(values: Any, weights: Any = None, metrics_collections: Collections = None,
                updates_collections: Collections = None, name: Optional[str] = None) -> Pair:
    """The elementwise (weighted) mean of `values` over the batches (its static shape must be
    fully known); local variables mean/total_tensor and mean/count_tensor."""
    with variable_scope(name, default_name="mean"):
        values = _floats(values)
        shape = values.shape.as_list() if values.shape.rank is not None else None
        if shape is None or any(d is None for d in shape):
            raise ValueError(f"mean_tensor: the shape of values must be fully defined, got {values.shape}")
        total, count = _local("total_tensor", shape), _local("count_tensor", shape)
        num = _a.ones_like(values)
        if weights is not None:
            w = broadcast_weights(weights, values)
            values, num = values * w, w
        update = _safe_div(_s.assign_add(total, values), _s.assign_add(count, num), "update_op")
        value = _safe_div(total.value(), count.value(), "value")
        return _collect(metrics_collections, updates_collections, value, update)


def percentage_below(values: Any, threshold: float, weights: Any = None, metrics_collections: Collections = None,
                     updates_collections: Collections = None, name: Optional[str] = None) -> Pair:
    """The (weighted) fraction of values < threshold."""
    below = _m.cast(_m.less(_floats(values), float(threshold)), _dt.float32)
    with variable_scope(name, default_name="percentage_below_threshold"):
        return _mean_here(below, weights, metrics_collections, updates_collections)
