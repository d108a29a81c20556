"""tf.contrib.metrics' AUCs over every prediction kept (tf_slim.metrics): predictions, labels
(0 or 1, checked when the update runs) and weights are streamed into `streaming_concat`
buffers (`<scope>/concat_preds`, `concat_labels`, `concat_weights`) and the AUC is computed
from all of them each time it is read.

- `streaming_dynamic_auc`: the trapezoidal ROC or PR AUC with every distinct prediction as a
  threshold (float64; 0 while the labels kept are all equal).
- `auc_with_confidence_intervals`: the ROC AUC from placement values (DeLong & DeLong 1988, in
  Sun & Xu's 2014 form) and its asymptotic normal confidence interval at level `alpha`, logit
  transformed by default: AucData(auc, lower, upper), float32.  As TF's, the update appends
  the batch whatever its weights and returns whether they sum to at least 1, and the value is
  0 unless the batch fed with it has both labels and weights summing to at least 1.
"""
from __future__ import annotations

import collections
from typing import Any, List, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.control_flow import cond
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops.constant_op import group, identity
from ..graph.ops.scan_ops import cumsum
from ..graph.ops.slicing_ops import gather, pad
from ..graph.variable_scope import variable_scope
from ..nn.metrics import Collections, Pair, _collect
from ..nn.metrics_shapes import align_weights, squeeze_pair
from .metrics_more import streaming_concat

__all__ = ["streaming_dynamic_auc", "auc_with_confidence_intervals", "AucData"]

_EPSILON = 1e-7

AucData = collections.namedtuple("AucData", ["auc", "lower", "upper"])


def _label_checks(labels: _g.Tensor) -> List[_g.Operation]:
    from ..graph.ops.check_more_ops import assert_greater_equal
    from ..graph.ops.check_ops import assert_less_equal
    return [assert_greater_equal(labels, _a.zeros_like(labels), message="labels must be 0 or 1, at least one is <0"),
            assert_less_equal(labels, _a.ones_like(labels), message="labels must be 0 or 1, at least one is >1")]


def _with_zero(x: _g.Tensor) -> _g.Tensor:
    """[0, running sums of x]: the sums before each position, and the total."""
    return pad(cumsum(x), [[1, 0]])


def _dynamic_auc(labels: _g.Tensor, predictions: _g.Tensor, curve: str, weights: Optional[_g.Tensor]) -> _g.Tensor:
    """The AUC of 1-D int64 labels and float64 predictions (and weights) with each distinct
    prediction as a threshold; 0 where the labels are all equal."""
    from ..graph.ops.misc_ops import top_k
    from ..graph.ops.partition_ops import unique_with_counts
    if weights is None:
        weights = _a.ones_like(labels, dtype=_dt.float64)
    total_weight = _m.reduce_sum(weights)
    total_positive = _m.reduce_sum(_a.where(_m.greater(labels, 0), weights, _a.zeros_like(weights)))

    def compute() -> _g.Tensor:
        ordered, idx = top_k(predictions, k=_a.size(predictions))       # descending
        ordered_labels, ordered_weights = gather(labels, idx), gather(weights, idx)
        zeros = _a.zeros_like(ordered_weights)
        _, _, counts = unique_with_counts(ordered)
        splits = _m.cast(_with_zero(counts), _dt.int32)    # where the predictions change
        tp = gather(_with_zero(_a.where(_m.greater(ordered_labels, 0), ordered_weights, zeros)), splits)
        if curve == "ROC":
            fp = gather(_with_zero(_a.where(_m.less(ordered_labels, 1), ordered_weights, zeros)), splits)
            xs = _m.truediv(fp, total_weight - total_positive)
            ys = _m.truediv(tp, total_positive)
        else:
            xs = _m.truediv(tp, total_positive)
            positives = gather(_with_zero(ordered_weights), splits)
            # precision 1 before any prediction is positive, as TF's
            ys = _a.where(_m.greater(splits, 0), _m.truediv(tp, positives), _a.ones_like(tp))
        heights = (ys[1:] + ys[:-1]) / 2.0
        return _m.reduce_sum(heights * _m.abs(xs[1:] - xs[:-1]))

    trivial = _m.logical_or(_m.equal(total_positive, 0.0), _m.equal(total_positive, total_weight))
    return cond(trivial, lambda: _g.convert_to_tensor(np.float64(0.0)), compute)


def streaming_dynamic_auc(labels: Any, predictions: Any, curve: str = "ROC", metrics_collections: Collections = (),
                          updates_collections: Collections = (), name: Optional[str] = None,
                          weights: Any = None) -> Tuple[_g.Tensor, _g.Operation]:
    """The ROC (or PR) AUC of every prediction so far, each distinct one a threshold
    (float64); update_op (an op) keeps the batch."""
    if curve not in ("PR", "ROC"):
        raise ValueError(f"curve must be either ROC or PR, {curve} unknown")
    with variable_scope(name, default_name="dynamic_auc"):
        labels, predictions = _g.convert_to_tensor(labels), _g.convert_to_tensor(predictions)
        if not labels.shape.is_compatible_with(predictions.shape):
            raise ValueError(f"Shapes {labels.shape} and {predictions.shape} are incompatible")
        predictions = _a.reshape(_m.cast(predictions, _dt.float64), [-1])
        labels = _a.reshape(_m.cast(labels, _dt.int64), [-1])
        with _g.get_default_graph().control_dependencies(_label_checks(labels)):
            preds_all, update_preds = streaming_concat(predictions, name="concat_preds")
            labels_all, update_labels = streaming_concat(labels, name="concat_labels")
            weights_all = None
            updates = [update_labels, update_preds]
            if weights is not None:
                weights = _a.reshape(_m.cast(_g.convert_to_tensor(weights), _dt.float64), [-1])
                weights_all, update_weights = streaming_concat(weights, name="concat_weights")
                updates.append(update_weights)
            update = group(*updates)
            auc = _dynamic_auc(labels_all, preds_all, curve, weights_all)
    return _collect(metrics_collections, updates_collections, auc, update)


def _placement_auc(labels: _g.Tensor, predictions: _g.Tensor, weights: _g.Tensor, alpha: float,
                   logit_transformation: bool, is_valid: _g.Tensor) -> AucData:
    """AucData of 1-D int64 labels, float64 predictions and float32 weights; zeros unless
    is_valid."""
    from ..graph.ops.misc_ops import top_k
    from ..graph.ops.partition_ops import unique
    from ..graph.ops.reverse_ops import reverse
    from ..graph.ops.segment_ops import segment_sum
    from ..graph.ops.special_fn_ops import ndtri
    f32 = lambda t: _m.cast(t, _dt.float32)  # noqa: E731
    total_0 = _m.reduce_sum(f32(1 - labels) * weights)
    total_1 = _m.reduce_sum(f32(labels) * weights)
    ordered, idx = top_k(predictions, k=_a.size(predictions), sorted=True)
    ordered, idx = reverse(ordered, [0]), reverse(idx, [0])                        # ascending
    ordered_labels, ordered_weights = gather(labels, idx), gather(weights, idx)
    _, segments = unique(ordered)                   # one id per distinct prediction, increasing
    is_true = f32(ordered_labels)
    is_false = 1.0 - is_true
    # a true label's placement is the share of the false labels' weight below its prediction
    # (half of that at it), and the reverse for a false label
    below_true = segment_sum(ordered_weights * is_false, segments)
    below_false = segment_sum(ordered_weights * is_true, segments)

    def placements(at: _g.Tensor) -> _g.Tensor:
        p = (cumsum(at, exclusive=True) + at / 2.0) / (_m.reduce_sum(at) + _EPSILON)
        return gather(p, segments)
    placement = placements(below_true) * is_true + placements(below_false) * is_false
    neg, pos = f32(1 - ordered_labels), f32(ordered_labels)
    p0, w0, p1, w1 = placement * neg, ordered_weights * neg, placement * pos, ordered_weights * pos
    auc_0 = _m.reduce_sum(w0 * (1.0 - p0)) / (total_0 + _EPSILON)
    auc_1 = _m.reduce_sum(w1 * p1) / (total_1 + _EPSILON)
    auc = _a.where(_m.less(total_0, total_1), auc_1, auc_0)
    var_0 = _m.reduce_sum(w0 * _m.square(1.0 - p0 - auc_0)) / (total_0 - 1.0 + _EPSILON)
    var_1 = _m.reduce_sum(w1 * _m.squared_difference(p1, auc_1)) / (total_1 - 1.0 + _EPSILON)
    std_err = _m.sqrt(var_0 / (total_0 + _EPSILON) + var_1 / (total_1 + _EPSILON))
    z = ndtri(_g.convert_to_tensor(np.float32((1.0 - alpha) / 2.0)))           # negative
    if logit_transformation:
        estimate = _m.log(auc / (1.0 - auc + _EPSILON))
        std_err = std_err / (auc * (1.0 - auc + _EPSILON))

        def inverse_logit(x: _g.Tensor) -> _g.Tensor:
            return 1.0 / (1.0 + _m.exp(-x) + _EPSILON)
        lower, upper = inverse_logit(estimate + z * std_err), inverse_logit(estimate - z * std_err)
    else:
        lower, upper = auc + z * std_err, auc - z * std_err
    # an AUC of 0 or 1 has no variance: its interval is the point
    degenerate = _m.logical_or(_m.equal(auc, 1.0), _m.equal(auc, 0.0))
    zero = _a.zeros_like(auc)
    return AucData(*(_a.where(is_valid, t, zero) for t in
                     (auc, _a.where(degenerate, auc, lower), _a.where(degenerate, auc, upper))))


def auc_with_confidence_intervals(labels: Any, predictions: Any, weights: Any = None, alpha: float = 0.95,
                                  logit_transformation: bool = True, metrics_collections: Collections = (),
                                  updates_collections: Collections = (), name: Optional[str] = None) -> Pair:
    """(AucData(auc, lower, upper), update_op): the ROC AUC of every prediction so far and its
    `alpha` confidence interval (see the module docstring)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1; currently {alpha:.02f}")
    predictions = _g.convert_to_tensor(predictions)
    if weights is None:
        weights = _a.ones_like(predictions, dtype=_dt.float32)
    with variable_scope(name, default_name="auc_with_confidence_intervals"):
        labels, predictions = squeeze_pair(_g.convert_to_tensor(labels), predictions)
        weights = align_weights(weights, predictions)
        total_weight = _m.reduce_sum(weights)
        weights = _a.reshape(weights, [-1])
        predictions = _a.reshape(_m.cast(predictions, _dt.float64), [-1])
        labels = _a.reshape(_m.cast(labels, _dt.int64), [-1])
        with _g.get_default_graph().control_dependencies(_label_checks(labels)):
            preds_all, update_preds = streaming_concat(predictions, name="concat_preds")
            labels_all, update_labels = streaming_concat(labels, name="concat_labels")
            weights_all, update_weights = streaming_concat(weights, name="concat_weights")
            both_labels = _m.logical_and(_m.equal(_m.reduce_min(labels), 0), _m.equal(_m.reduce_max(labels), 1))
            enough_weight = _m.greater_equal(total_weight, 1.0)
            is_valid = _m.logical_and(both_labels, enough_weight)
            # TF's cond between the (already made) update group and a no-op runs the update
            # either way and yields the predicate
            with _g.get_default_graph().control_dependencies([group(update_labels, update_preds, update_weights)]):
                update = identity(enough_weight)
            auc = _placement_auc(labels_all, preds_all, weights_all, alpha, logit_transformation, is_valid)
    return _collect(metrics_collections, updates_collections, auc, update)
