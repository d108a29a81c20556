"""tf.contrib.metrics (and so tf.contrib.slim.metrics): TF 1.x's streaming metrics, which take
the predictions FIRST, unlike tf.metrics, plus the helpers slim's evaluation scripts use:

    names_to_values, names_to_updates = slim.metrics.aggregate_metric_map({
        "Accuracy": slim.metrics.streaming_accuracy(predictions, labels),
        "Recall_5": slim.metrics.streaming_recall_at_k(logits, labels, 5)})

Most are tf.metrics with the arguments passed by name; streaming_covariance,
streaming_pearson_correlation, the false positive/negative rates, streaming_recall_at_k and
count are contrib's own, with its local variables and update rules.  The rest of contrib's
own (streaming_concat, the *_at_thresholds counts and rates, streaming_curve_points,
precision_at_recall, recall_at_precision, the *_at_top_k forms, cohen_kappa,
precision_recall_at_equal_thresholds, auc_using_histogram) are in metrics_more.py, and
streaming_dynamic_auc and auc_with_confidence_intervals in metrics_auc.py.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops, math_ops
from ..graph.ops.misc_ops import in_top_k
from ..graph.ops.math_more_ops import div_no_nan
from ..graph.variable_scope import variable_scope
from ..nn import metrics as _metrics
from ..nn.metrics import _collect, _local
from ..nn.metrics_shapes import broadcast_weights, squeeze_pair

Pair = Tuple[Any, Any]

_DIRECT = {  # contrib name -> (tf.metrics function, its contrib positional argument names)
    "streaming_true_positives": ("true_positives", ("predictions", "labels", "weights")),
    "streaming_true_negatives": ("true_negatives", ("predictions", "labels", "weights")),
    "streaming_false_positives": ("false_positives", ("predictions", "labels", "weights")),
    "streaming_false_negatives": ("false_negatives", ("predictions", "labels", "weights")),
    "streaming_mean": ("mean", ("values", "weights")),
    "streaming_mean_tensor": ("mean_tensor", ("values", "weights")),
    "streaming_accuracy": ("accuracy", ("predictions", "labels", "weights")),
    "streaming_precision": ("precision", ("predictions", "labels", "weights")),
    "streaming_recall": ("recall", ("predictions", "labels", "weights")),
    "streaming_auc": ("auc", ("predictions", "labels", "weights", "num_thresholds", "metrics_collections",
                              "updates_collections", "curve", "name")),
    "streaming_specificity_at_sensitivity": ("specificity_at_sensitivity",
                                             ("predictions", "labels", "sensitivity", "weights", "num_thresholds")),
    "streaming_sensitivity_at_specificity": ("sensitivity_at_specificity",
                                             ("predictions", "labels", "specificity", "weights", "num_thresholds")),
    "streaming_precision_at_thresholds": ("precision_at_thresholds", ("predictions", "labels", "thresholds", "weights")),
    "streaming_recall_at_thresholds": ("recall_at_thresholds", ("predictions", "labels", "thresholds", "weights")),
    "streaming_sparse_recall_at_k": ("recall_at_k", ("predictions", "labels", "k", "class_id", "weights")),
    "streaming_sparse_precision_at_k": ("precision_at_k", ("predictions", "labels", "k", "class_id", "weights")),
    "streaming_sparse_average_precision_at_k": ("average_precision_at_k", ("predictions", "labels", "k", "weights")),
    "streaming_mean_absolute_error": ("mean_absolute_error", ("predictions", "labels", "weights")),
    "streaming_mean_relative_error": ("mean_relative_error", ("predictions", "labels", "normalizer", "weights")),
    "streaming_mean_squared_error": ("mean_squared_error", ("predictions", "labels", "weights")),
    "streaming_root_mean_squared_error": ("root_mean_squared_error", ("predictions", "labels", "weights")),
    "streaming_percentage_less": ("percentage_below", ("values", "threshold", "weights")),
    "streaming_mean_iou": ("mean_iou", ("predictions", "labels", "num_classes", "weights")),
}
_TRAILING = ("metrics_collections", "updates_collections", "name")


def _direct(contrib_name: str, core: str, params: Tuple[str, ...]) -> Any:
    fn = getattr(_metrics, core)
    order = params if params[-1] == "name" else params + _TRAILING

    def metric(*args: Any, **kwargs: Any) -> Pair:
        if len(args) > len(order):
            raise TypeError(f"{contrib_name}() takes at most {len(order)} positional arguments ({len(args)} given)")
        for key, value in zip(order, args):
            if key in kwargs:
                raise TypeError(f"{contrib_name}() got multiple values for argument '{key}'")
            kwargs[key] = value
        return fn(**kwargs)
    metric.__name__ = contrib_name
    metric.__doc__ = f"tf.metrics.{core} with contrib's argument order ({', '.join(order)})."
    return metric


for _metric_name, (_core, _params) in _DIRECT.items():
    globals()[_metric_name] = _direct(_metric_name, _core, _params)
del _metric_name, _core, _params


def _at_k_name(name: str, k: Optional[int] = None, class_id: Optional[int] = None) -> str:
    name = f"{name}_at_{k}" if k is not None else f"{name}_at_k"
    return f"{name}_class{class_id}" if class_id is not None else name


def streaming_recall_at_k(predictions: Any, labels: Any, k: int, weights: Any = None, metrics_collections: Any = None,
                          updates_collections: Any = None, name: Optional[str] = None) -> Pair:
    """The streaming mean of in_top_k(predictions, labels, k) (scope "recall_at_<k>")."""
    hit = math_ops.cast(in_top_k(predictions, labels, k), _dt.float32)
    return _metrics.mean(hit, weights, metrics_collections, updates_collections, name or _at_k_name("recall", k))


def _rate(default: str, num_fn: Any, other_fn: Any, predictions: Any, labels: Any, weights: Any,
          metrics_collections: Any, updates_collections: Any, name: Optional[str]) -> Pair:
    with variable_scope(name, default_name=default):
        labels = math_ops.cast(_g.convert_to_tensor(labels), _dt.bool_)
        predictions = math_ops.cast(_g.convert_to_tensor(predictions), _dt.bool_)
        labels, predictions = squeeze_pair(labels, predictions)
        num, num_update = num_fn(labels=labels, predictions=predictions, weights=weights)
        other, other_update = other_fn(labels=labels, predictions=predictions, weights=weights)

        def ratio(a: Any, b: Any, op_name: str) -> _g.Tensor:
            return array_ops.where(math_ops.greater(a + b, 0), math_ops.divide(a, a + b), 0.0, name=op_name)
        return _collect(metrics_collections, updates_collections, ratio(num, other, "value"),
                        ratio(num_update, other_update, "update_op"))


def streaming_false_positive_rate(predictions: Any, labels: Any, weights: Any = None, metrics_collections: Any = None,
                                  updates_collections: Any = None, name: Optional[str] = None) -> Pair:
    """false positives / (false positives + true negatives), 0 with neither."""
    return _rate("false_positive_rate", _metrics.false_positives, _metrics.true_negatives, predictions, labels,
                 weights, metrics_collections, updates_collections, name)


def streaming_false_negative_rate(predictions: Any, labels: Any, weights: Any = None, metrics_collections: Any = None,
                                  updates_collections: Any = None, name: Optional[str] = None) -> Pair:
    """false negatives / (false negatives + true positives), 0 with neither."""
    return _rate("false_negative_rate", _metrics.false_negatives, _metrics.true_positives, predictions, labels,
                 weights, metrics_collections, updates_collections, name)


def streaming_covariance(predictions: Any, labels: Any, weights: Any = None, metrics_collections: Any = None,
                         updates_collections: Any = None, name: Optional[str] = None) -> Pair:
    """The (weighted) unbiased covariance of predictions and labels over every batch so far:
    local count, mean_prediction, mean_label and comoment, merged batch by batch; NaN until
    more than one (weight) unit has been seen."""
    with variable_scope(name, default_name="covariance"):
        p = math_ops.cast(_g.convert_to_tensor(predictions), _dt.float32)
        lab = math_ops.cast(_g.convert_to_tensor(labels), _dt.float32)
        lab, p = squeeze_pair(lab, p)
        if not p.shape.is_compatible_with(lab.shape):
            raise ValueError(f"Shapes {p.shape} and {lab.shape} are incompatible")
        count = _local("count")
        mean_p = _local("mean_prediction")
        mean_l = _local("mean_label")
        comoment = _local("comoment")
        if weights is None:
            batch = math_ops.cast(array_ops.size(lab), _dt.float32)
            wp, wl = p, lab
        else:
            weights = broadcast_weights(weights, lab)
            batch = math_ops.reduce_sum(weights)
            wp, wl = p * weights, lab * weights
        new_count = count.assign_add(batch)
        prev_count = new_count - batch
        batch_mean_p = div_no_nan(math_ops.reduce_sum(wp), batch)
        delta_p = div_no_nan((batch_mean_p - mean_p) * batch, new_count)
        new_mean_p = mean_p.assign_add(delta_p)
        prev_mean_p = new_mean_p - delta_p
        batch_mean_l = div_no_nan(math_ops.reduce_sum(wl), batch)
        delta_l = div_no_nan((batch_mean_l - mean_l) * batch, new_count)
        new_mean_l = mean_l.assign_add(delta_l)
        prev_mean_l = new_mean_l - delta_l
        coresiduals = (p - batch_mean_p) * (lab - batch_mean_l)
        batch_comoment = math_ops.reduce_sum(coresiduals if weights is None else coresiduals * weights)
        delta_c = batch_comoment + (prev_mean_p - batch_mean_p) * (prev_mean_l - batch_mean_l) * (
            prev_count * batch / new_count)
        new_comoment = comoment.assign_add(delta_c)
        nan = float("nan")
        value = array_ops.where(math_ops.less_equal(count, 1.0), nan, math_ops.truediv(comoment, count - 1),
                                name="covariance")
        with _g.get_default_graph().control_dependencies([new_comoment]):
            update = array_ops.where(math_ops.less_equal(count, 1.0), nan, math_ops.truediv(comoment, count - 1),
                                     name="update_op")
    return _collect(metrics_collections, updates_collections, value, update)


def streaming_pearson_correlation(predictions: Any, labels: Any, weights: Any = None, metrics_collections: Any = None,
                                  updates_collections: Any = None, name: Optional[str] = None) -> Pair:
    """covariance / (std(predictions) std(labels)) from three streaming covariances."""
    with variable_scope(name, default_name="pearson_r"):
        p = _g.convert_to_tensor(predictions)
        lab = _g.convert_to_tensor(labels)
        lab, p = squeeze_pair(lab, p)
        if weights is not None:
            weights = broadcast_weights(weights, math_ops.cast(lab, _dt.float32))
        cov, up_cov = streaming_covariance(p, lab, weights=weights, name="covariance")
        var_p, up_var_p = streaming_covariance(p, p, weights=weights, name="variance_predictions")
        var_l, up_var_l = streaming_covariance(lab, lab, weights=weights, name="variance_labels")
        value = math_ops.truediv(cov, math_ops.sqrt(var_p) * math_ops.sqrt(var_l), name="pearson_r")
        update = math_ops.truediv(up_cov, math_ops.sqrt(up_var_p) * math_ops.sqrt(up_var_l), name="update_op")
    return _collect(metrics_collections, updates_collections, value, update)


def streaming_mean_cosine_distance(predictions: Any, labels: Any, dim: int, weights: Any = None,
                                   metrics_collections: Any = None, updates_collections: Any = None,
                                   name: Optional[str] = None) -> Pair:
    """1 - the streaming mean of sum(predictions * labels) over `dim` (unit vectors assumed)."""
    p = _g.convert_to_tensor(predictions)
    lab = _g.convert_to_tensor(labels)
    lab, p = squeeze_pair(lab, p)
    radial = math_ops.reduce_sum(p * lab, axis=[dim], keepdims=True)
    value, update = _metrics.mean(radial, weights, None, None, name or "mean_cosine_distance")
    return _collect(metrics_collections, updates_collections, 1.0 - value, 1.0 - update)


def count(values: Any, weights: Any = None, metrics_collections: Any = None, updates_collections: Any = None,
          name: Optional[str] = None) -> Pair:
    """The number of values seen (the sum of their weights, if given): (count, update_op)."""
    with variable_scope(name, default_name="count"):
        total = _local("count")
        v = _g.convert_to_tensor(values)
        if weights is None:
            n = math_ops.cast(array_ops.size(v), _dt.float32)
        else:
            n = math_ops.reduce_sum(broadcast_weights(math_ops.cast(weights, _dt.float32),
                                                      math_ops.cast(v, _dt.float32)))
        value = _g.convert_to_tensor(total)  # read outside the update's dependency on the values
        with _g.get_default_graph().control_dependencies([v]):
            update = total.assign_add(n)
    return _collect(metrics_collections, updates_collections, value, update)


def f1_score(labels: Any, predictions: Any, weights: Any = None, num_thresholds: int = 200,
             metrics_collections: Any = None, updates_collections: Any = None, name: Optional[str] = None) -> Pair:
    """The best F1 over `num_thresholds` thresholds spread over [0, 1] (labels first, as
    contrib.metrics.f1_score): streaming true/false positive and false negative counts per
    threshold, then max over thresholds of 2PR / (P + R), each ratio guarded by 1e-7."""
    from ..nn.metrics_thresholds import _confusion_at_thresholds
    eps = 1e-7
    thresholds = [-eps] + [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)] + [1.0 + eps]
    with variable_scope(name, default_name="f1"):
        counts = _confusion_at_thresholds(labels, predictions, thresholds, weights, includes=("tp", "fp", "fn"))

        def best(tp: Any, fp: Any, fn: Any, suffix: str) -> Any:
            precision = math_ops.divide(tp, eps + tp + fp, name="precision_" + suffix)
            recall = math_ops.divide(tp, eps + tp + fn, name="recall_" + suffix)
            return math_ops.reduce_max(2.0 * precision * recall / (precision + recall + eps))
        value = best(*(_g.convert_to_tensor(counts[k][0]) for k in ("tp", "fp", "fn")), "value")
        update = best(*(counts[k][1] for k in ("tp", "fp", "fn")), "update")
    return _collect(metrics_collections, updates_collections, value, update)


def aggregate_metrics(*value_update_tuples: Pair) -> Tuple[List[Any], List[Any]]:
    """([values], [update ops]) of (value, update_op) pairs."""
    if not value_update_tuples:
        raise ValueError("Expected at least one value_tensor/update_op pair")
    values, updates = zip(*value_update_tuples)
    return list(values), list(updates)


def aggregate_metric_map(names_to_tuples: Dict[str, Pair]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """({name: value}, {name: update_op}) of {name: (value, update_op)}."""
    names = list(names_to_tuples.keys())
    values, updates = zip(*names_to_tuples.values())
    return dict(zip(names, values)), dict(zip(names, updates))


__all__ = sorted(list(_DIRECT) + [
    "streaming_recall_at_k", "streaming_false_positive_rate", "streaming_false_negative_rate", "streaming_covariance",
    "streaming_pearson_correlation", "streaming_mean_cosine_distance", "count", "aggregate_metrics",
    "aggregate_metric_map", "f1_score"])

# contrib's other metrics (built on collflow.nn's metrics, not on this module)
from .metrics_more import *  # noqa: F401,F403,E402
from .metrics_more import __all__ as _more_all  # noqa: E402
from .metrics_auc import *  # noqa: F401,F403,E402
from .metrics_auc import __all__ as _auc_all  # noqa: E402

__all__ = sorted(__all__ + [n for n in _more_all + _auc_all if n not in ("PrecisionRecallData", "AucData")])
