"""The rest of tf.contrib.metrics (tf_slim.metrics): the metrics contrib defined itself.

- `streaming_concat` keeps every batch seen, concatenated along `axis`, in a local variable
  `array` that grows as TF's (to ceil(1.5^ceil(log_1.5(size)))) rows, plus `size`; update_op
  returns the new size.  `streaming_dynamic_auc` and `auc_with_confidence_intervals` keep
  predictions, labels (and weights) so, and compute the AUC from all of them (see
  metrics_auc.py).
- The `*_at_thresholds` counts, `streaming_curve_points`, `precision_at_recall` and
  `recall_at_precision` are built on tf.metrics' thresholded confusion counts (local variables
  true_positives, false_negatives, true_negatives, false_positives), without tf.metrics' check
  that predictions lie in [0, 1], as contrib's own counts.
- The `*_at_top_k` forms take given top-k class ids (scopes `..._at_k`, as TF).
- `cohen_kappa`, `precision_recall_at_equal_thresholds` (bucketed counts, float64
  `variables/tp_buckets` and `fp_buckets`) and `auc_using_histogram` (int64 histograms in
  `hist_accumulate/`, collections LOCAL_VARIABLES by default) as contrib's; `accuracy` is
  contrib's per-batch (not streamed) accuracy.
"""
from __future__ import annotations

import collections
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import state_ops as _s
from ..graph.ops.constant_op import group
from ..graph.ops.scan_ops import cumsum
from ..graph.variable_scope import variable_scope
from ..graph.variables import Variable
from ..nn import metrics_at_k as _at_k
from ..nn.metrics import Collections, Pair, _collect, _local
from ..nn.metrics_shapes import squeeze_pair
from ..nn.metrics_thresholds import _confusion_at_thresholds, _even_thresholds

__all__ = ["streaming_concat", "streaming_true_positives_at_thresholds", "streaming_false_positives_at_thresholds",
           "streaming_true_negatives_at_thresholds", "streaming_false_negatives_at_thresholds",
           "streaming_false_positive_rate_at_thresholds", "streaming_false_negative_rate_at_thresholds",
           "streaming_curve_points", "precision_at_recall", "recall_at_precision", "sparse_recall_at_top_k",
           "streaming_sparse_precision_at_top_k", "streaming_sparse_average_precision_at_top_k", "cohen_kappa",
           "precision_recall_at_equal_thresholds", "auc_using_histogram", "accuracy", "PrecisionRecallData"]

_EPSILON = 1e-7      # contrib's guard against dividing by 0

PrecisionRecallData = collections.namedtuple(
    "PrecisionRecallData", ["tp", "fp", "tn", "fn", "precision", "recall", "thresholds"])


# -- streaming_concat ------------------------------------------------------------------------

def _next_array_size(required: _g.Tensor, growth_factor: float = 1.5) -> _g.Tensor:
    """TF's capacity for `required` rows: the least power of growth_factor above it, rounded up
    (computed in float32 as TF's)."""
    from ..graph.ops.math_extra_ops import ceil
    req = _m.cast(_m.maximum(required, 1), _dt.float32)
    base = _g.convert_to_tensor(np.float32(growth_factor))
    exponent = ceil(_m.log(req) / _m.log(base))
    return _m.cast(ceil(_m.pow(base, exponent)), _dt.int32)


def _buffer(name: str, shape: Sequence[int], dtype: Any) -> Variable:
    """A local metric variable whose first dimension changes with each assignment."""
    g = _g.get_default_graph()
    with g.control_dependencies(None):
        return Variable(_a.zeros(list(shape), dtype), trainable=False, name=name, shape=[None] + list(shape[1:]),
                        validate_shape=False, collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES])


def streaming_concat(values: Any, axis: int = 0, max_size: Optional[int] = None,
                     metrics_collections: Collections = None, updates_collections: Collections = None,
                     name: Optional[str] = None) -> Pair:
    """Every batch of `values` so far, concatenated along `axis` (the other dimensions must be
    known); with max_size, no more than max_size entries are kept.  update_op returns the
    number kept (int32)."""
    with variable_scope(name, default_name="streaming_concat"):
        values = _g.convert_to_tensor(values)
        if values.shape.rank is None:
            raise ValueError("`values` must have known statically known rank")
        ndim = values.shape.rank
        if axis < 0:
            axis += ndim
        if not 0 <= axis < ndim:
            raise ValueError(f"axis = {axis!r} not in [0, {ndim!r})")
        fixed = [d for n, d in enumerate(values.shape.dims) if n != axis]
        if any(d is None for d in fixed):
            raise ValueError("all dimensions of `values` other than the dimension to concatenate along must have "
                             "statically known size")
        # the concatenation axis is kept first, so that each batch lands in contiguous rows
        array = _buffer("array", [0 if max_size is None else int(max_size)] + fixed, values.dtype)
        size = _local("size", (), _dt.int32)
        back = [0 if n == axis else n + 1 if n < axis else n for n in range(ndim)]
        value = _a.transpose(array.value()[:size.value()], back, name="concat")

        old, cur = array.value(), size.value()
        batch = _a.shape(values)[axis]
        if max_size is not None:
            batch = _m.minimum(batch, int(max_size) - cur)
        front = [axis] + [n for n in range(ndim) if n != axis]
        new_size = cur + batch
        capacity = _a.shape(old)[0]
        new_capacity = _a.where(_m.greater(new_size, capacity), _next_array_size(new_size), capacity)
        # TF writes the batch into rows [size, new_size), reallocating zeros (and copying the
        # first `size` rows) when it does not fit: the same contents, assigned at once here
        tail = old[new_size:]
        padding = _a.zeros(_a.concat([_a.reshape(new_capacity - new_size - _a.shape(tail)[0], [1]),
                                      _g.convert_to_tensor(np.asarray(fixed, np.int32))], 0), values.dtype)
        grown = _a.concat([old[:cur], _a.transpose(values, front)[:batch], tail, padding], 0)
        write = _s.assign(array, grown, validate_shape=False)
        with _g.get_default_graph().control_dependencies([write]):
            update = _s.assign(size, new_size)
    return _collect(metrics_collections, updates_collections, value, update)


# -- thresholded counts ----------------------------------------------------------------------

def _count_at_thresholds(key: str, default: str) -> Any:
    def metric(predictions: Any, labels: Any, thresholds: Sequence[float], weights: Any = None) -> Tuple[Any, Any]:
        var, update = _confusion_at_thresholds(labels, predictions, thresholds, weights, (key,),
                                               check_range=False)[key]
        return var, update
    metric.__name__ = f"streaming_{default}_at_thresholds"
    metric.__doc__ = (f"(the local variable `{default}` of shape [len(thresholds)], its update): the (weighted) "
                      f"{default.replace('_', ' ')} at each threshold, made in the current scope as contrib's.")
    return metric


streaming_true_positives_at_thresholds = _count_at_thresholds("tp", "true_positives")
streaming_false_positives_at_thresholds = _count_at_thresholds("fp", "false_positives")
streaming_true_negatives_at_thresholds = _count_at_thresholds("tn", "true_negatives")
streaming_false_negatives_at_thresholds = _count_at_thresholds("fn", "false_negatives")


def _rate_at_thresholds(default: str, num: str, other: str, prefix: str) -> Any:
    def metric(predictions: Any, labels: Any, thresholds: Sequence[float], weights: Any = None,
               metrics_collections: Collections = None, updates_collections: Collections = None,
               name: Optional[str] = None) -> Pair:
        with variable_scope(name, default_name=default):
            c = _confusion_at_thresholds(labels, predictions, thresholds, weights, (num, other), check_range=False)
            (n, n_up), (o, o_up) = c[num], c[other]
            value = _m.truediv(n.value(), _EPSILON + n.value() + o.value(), name=f"{prefix}_value")
            update = _m.truediv(n_up, _EPSILON + n_up + o_up, name=f"{prefix}_update_op")
            return _collect(metrics_collections, updates_collections, value, update)
    metric.__name__ = f"streaming_{default}"
    return metric


streaming_false_positive_rate_at_thresholds = _rate_at_thresholds("false_positive_rate_at_thresholds", "fp", "tn",
                                                                  "fpr")
streaming_false_positive_rate_at_thresholds.__doc__ = "fp / (fp + tn) at each threshold (float32 [len(thresholds)])."
streaming_false_negative_rate_at_thresholds = _rate_at_thresholds("false_negative_rate_at_thresholds", "fn", "tp",
                                                                  "fnr")
streaming_false_negative_rate_at_thresholds.__doc__ = "fn / (fn + tp) at each threshold (float32 [len(thresholds)])."


def _all_counts(labels: Any, predictions: Any, num_thresholds: int, weights: Any) -> Tuple[list, list]:
    """([tp, fn, tn, fp] variables' values, their updates) at the evenly spaced thresholds."""
    c = _confusion_at_thresholds(labels, predictions, _even_thresholds(num_thresholds), weights, check_range=False)
    keys = ("tp", "fn", "tn", "fp")
    return [c[k][0].value() for k in keys], [c[k][1] for k in keys]


def streaming_curve_points(labels: Any = None, predictions: Any = None, weights: Any = None,
                           num_thresholds: int = 200, metrics_collections: Collections = None,
                           updates_collections: Collections = None, curve: str = "ROC",
                           name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Operation]:
    """The [num_thresholds, 2] points of the ROC curve (false positive rate, recall) or the PR
    curve (recall, precision) at evenly spaced thresholds; update_op is an op."""
    with variable_scope(name, default_name="curve_points"):
        if curve not in ("ROC", "PR"):
            raise ValueError(f"curve must be either ROC or PR, {curve} unknown")
        (tp, fn, tn, fp), updates = _all_counts(labels, predictions, num_thresholds, weights)
        eps = 1.0e-6
        rec = _m.truediv(tp + eps, tp + fn + eps)
        if curve == "ROC":
            xs, ys = _m.truediv(fp, fp + tn + eps), rec
        else:
            xs, ys = rec, _m.truediv(tp + eps, tp + fp + eps)
        points = _a.stack([xs, ys], axis=1)
        update = group(*updates)
    return _collect(metrics_collections, updates_collections, points, update)


def _at(x: _g.Tensor, i: _g.Tensor) -> _g.Tensor:
    """x[i], a negative i counting from the end (TF's tensor indexing)."""
    n = _a.shape(x, out_type=i.dtype)[0]
    return _a.gather(x, _a.where(_m.less(i, 0), i + n, i))


def precision_at_recall(labels: Any, predictions: Any, target_recall: float, weights: Any = None,
                        num_thresholds: int = 200, metrics_collections: Collections = None,
                        updates_collections: Collections = None, name: Optional[str] = None) -> Pair:
    """The precision at the largest threshold whose recall is at least target_recall (the
    last threshold when none is)."""
    if target_recall < 0 or target_recall > 1:
        raise ValueError("`target_recall` must be in the range [0, 1].")
    with variable_scope(name, default_name="precision_at_recall"):
        counts, updates = _all_counts(labels, predictions, num_thresholds, weights)

        def compute(tp: Any, fn: Any, tn: Any, fp: Any, nm: str) -> _g.Tensor:
            recalls = _m.truediv(tp, tp + fn + _EPSILON)
            # recall falls as the threshold rises: the admissible thresholds come first
            i = _m.reduce_sum(_m.cast(_m.greater_equal(recalls, float(target_recall)), _dt.int64)) - 1
            tpi, fpi = _at(tp, i), _at(fp, i)
            return _m.truediv(tpi + _EPSILON, tpi + fpi + _EPSILON, name=nm)

        value = compute(*counts, "value")
        update = compute(*updates, "update_op")
    return _collect(metrics_collections, updates_collections, value, update)


def recall_at_precision(labels: Any, predictions: Any, precision: float, weights: Any = None,
                        num_thresholds: int = 200, metrics_collections: Collections = None,
                        updates_collections: Collections = None, name: Optional[str] = None,
                        strict_mode: bool = False) -> Pair:
    """The recall at the threshold whose precision is nearest `precision` (strict_mode: the
    smallest precision not below it, else 0)."""
    if not 0 <= precision <= 1:
        raise ValueError("`precision` must be in the range [0, 1].")
    with variable_scope(name, default_name="recall_at_precision"):
        counts, updates = _all_counts(labels, predictions, num_thresholds, weights)

        def compute(tp: Any, fn: Any, tn: Any, fp: Any, nm: str) -> _g.Tensor:
            precisions = _m.truediv(tp, tp + fp + _EPSILON)
            if not strict_mode:
                i = _m.argmin(_m.abs(precisions - float(precision)), 0, output_type=_dt.int32)
                return _m.truediv(_a.gather(tp, i), _a.gather(tp, i) + _a.gather(fn, i) + _EPSILON, name=nm)
            # 1 / (p - target) is largest for the smallest p above the target, negative below it
            i = _m.argmax(_m.truediv(1.0, precisions - float(precision) + _EPSILON), 0, output_type=_dt.int32)
            tpi = _a.gather(tp, i)
            good = _m.truediv(tpi, tpi + _a.gather(fn, i) + _EPSILON)
            return _a.where(_m.greater_equal(_a.gather(precisions, i), float(precision)), good,
                            _a.zeros_like(good), name=nm)

        value = compute(*counts, "value")
        update = compute(*updates, "update_op")
    return _collect(metrics_collections, updates_collections, value, update)


# -- top-k ids given ---------------------------------------------------------------------------

def sparse_recall_at_top_k(labels: Any, top_k_predictions: Any, class_id: Optional[int] = None,
                           weights: Any = None, metrics_collections: Collections = None,
                           updates_collections: Collections = None, name: Optional[str] = None) -> Pair:
    """Recall of given top-k class ids against the labels (float64; scope recall_at_k)."""
    with _g.name_scope(name, _at_k._at_k_name("recall", class_id=class_id)) as scope:
        return _at_k.recall_at_top_k(labels, top_k_predictions, None, class_id, weights, metrics_collections,
                                     updates_collections, scope)


def streaming_sparse_precision_at_top_k(top_k_predictions: Any, labels: Any, class_id: Optional[int] = None,
                                        weights: Any = None, metrics_collections: Collections = None,
                                        updates_collections: Collections = None, name: Optional[str] = None) -> Pair:
    """Precision of given top-k class ids against the labels (float64; scope precision_at_k)."""
    with _g.name_scope(name, _at_k._at_k_name("precision", class_id=class_id)) as scope:
        return _at_k.precision_at_top_k(labels, top_k_predictions, None, class_id, weights, metrics_collections,
                                        updates_collections, scope)


def streaming_sparse_average_precision_at_top_k(top_k_predictions: Any, labels: Any, weights: Any = None,
                                                metrics_collections: Collections = None,
                                                updates_collections: Collections = None,
                                                name: Optional[str] = None) -> Pair:
    """The (weighted) mean average precision of given ranked class ids [D1, ... DN, k] (k
    known) over the rows seen; local variables average_precision_at_top_k/max and total."""
    with _g.name_scope(name, "average_precision_at_top_k") as scope:
        max_var = _at_k._f64_var("max")          # made first, so that no op takes their names
        total_var = _at_k._f64_var("total")
        idx = _m.cast(_g.convert_to_tensor(top_k_predictions), _dt.int64)
        ap = _at_k._average_precision(labels, idx)
        if weights is not None:
            w = _m.cast(_g.convert_to_tensor(weights), _dt.float64) * _a.ones_like(ap)
            ap = ap * w
            batch_max = _m.reduce_sum(w)
        else:
            batch_max = _m.cast(_a.size(ap), _dt.float64)
        max_up = _s.assign_add(max_var, batch_max)
        total_up = _s.assign_add(total_var, _m.reduce_sum(ap))
        from ..graph.ops.math_more_ops import div_no_nan
        value = div_no_nan(total_var.value(), max_var.value(), name="mean")
        update = div_no_nan(total_up, max_up, name=scope.rstrip("/").split("/")[-1])
    return _collect(metrics_collections, updates_collections, value, update)


# -- cohen_kappa, precision_recall_at_equal_thresholds, auc_using_histogram ---------------------

def cohen_kappa(labels: Any, predictions_idx: Any, num_classes: int, weights: Any = None,
                metrics_collections: Collections = None, updates_collections: Collections = None,
                name: Optional[str] = None) -> Pair:
    """Cohen's kappa (po - pe) / (N - pe) of class labels and predicted classes (float64), from
    the streamed diagonal (po) and marginals (pe_row, pe_col) of their confusion matrix: int64,
    or float32 with non-integer weights."""
    from ..graph.ops.math_more_ops import div_no_nan
    from ..graph.ops.matrix_ops import matrix_diag_part
    from ..graph.ops.tally_ops import confusion_matrix
    from ..nn.metrics_shapes import broadcast_weights
    if num_classes < 2:
        raise ValueError(f"`num_classes` must be >= 2.Found: {num_classes}")
    with variable_scope(name, default_name="cohen_kappa"):
        labels = _g.convert_to_tensor(labels)
        predictions_idx = _g.convert_to_tensor(predictions_idx)
        if labels.shape.rank is not None and labels.shape.rank > 2:
            raise ValueError(f"Shape {labels.shape} must have rank at most 2")
        if labels.shape.rank == 2:
            labels = _a.squeeze(labels, [-1])
        labels, predictions_idx = squeeze_pair(labels, predictions_idx)
        if not predictions_idx.shape.is_compatible_with(labels.shape):
            raise ValueError(f"Shapes {predictions_idx.shape} and {labels.shape} are incompatible")
        stat = _dt.int64
        if weights is not None:
            weights = _g.convert_to_tensor(weights)
            stat = _dt.int64 if weights.dtype.is_integer else _dt.float32
            weights = _m.cast(_a.reshape(broadcast_weights(weights, _m.cast(predictions_idx, _dt.float32)), [-1]),
                              stat)
        po = _local("po", [int(num_classes)], stat)
        pe_row = _local("pe_row", [int(num_classes)], stat)
        pe_col = _local("pe_col", [int(num_classes)], stat)
        table = confusion_matrix(labels, predictions_idx, num_classes=int(num_classes), weights=weights, dtype=stat,
                                 name="counts_in_table")
        up_po = _s.assign_add(po, matrix_diag_part(table))
        up_row = _s.assign_add(pe_row, _m.reduce_sum(table, 0))
        up_col = _s.assign_add(pe_col, _m.reduce_sum(table, 1))

        def kappa(po: Any, row: Any, col: Any, nm: str) -> _g.Tensor:
            f64 = lambda t: _m.cast(t, _dt.float64)  # noqa: E731
            total = f64(_m.reduce_sum(row))
            pe = _m.reduce_sum(div_no_nan(f64(row * col), total))
            return div_no_nan(f64(_m.reduce_sum(po)) - pe, total - pe, name=nm)

        value = kappa(po.value(), pe_row.value(), pe_col.value(), "value")
        update = kappa(up_po, up_row, up_col, "update_op")
    return _collect(metrics_collections, updates_collections, value, update)


def precision_recall_at_equal_thresholds(labels: Any, predictions: Any, weights: Any = None,
                                         num_thresholds: Optional[int] = None, use_locking: Optional[bool] = None,
                                         name: Optional[str] = None) -> Tuple[PrecisionRecallData, _g.Operation]:
    """(PrecisionRecallData(tp, fp, tn, fn, precision, recall, thresholds), update_op) at
    num_thresholds (default 201) thresholds evenly spaced over [0, 1], prediction >= threshold
    positive, in O(T + N): each prediction is counted in its bucket floor(p * (T - 1)) of the
    float64 variables tp_buckets / fp_buckets, and the counts are reversed running sums.
    labels must be bool; predictions in [0, 1] (checked when the update runs)."""
    from ..graph.ops.check_more_ops import assert_greater_equal, assert_type
    from ..graph.ops.check_ops import assert_less_equal
    from ..graph.ops.constant_op import identity
    from ..graph.ops.math_extra_ops import floor, linspace
    num_thresholds = 201 if num_thresholds is None else int(num_thresholds)
    labels = _g.convert_to_tensor(labels)
    assert_type(labels, _dt.bool_)
    with variable_scope(name, default_name="precision_recall_at_equal_thresholds"):
        predictions = _g.convert_to_tensor(predictions)
        checks = [assert_greater_equal(predictions, _m.cast(0.0, predictions.dtype),
                                       message="predictions must be in [0, 1]"),
                  assert_less_equal(predictions, _m.cast(1.0, predictions.dtype),
                                    message="predictions must be in [0, 1]")]
        with _g.get_default_graph().control_dependencies(checks):
            predictions = identity(predictions)
        labels, predictions = squeeze_pair(labels, predictions)
        if not predictions.shape.is_compatible_with(labels.shape):
            raise ValueError(f"Shapes {predictions.shape} and {labels.shape} are incompatible")
        # float64 sums: float32 would lose counts past ~2^24
        f_labels = _m.cast(labels, _dt.float64)
        w = _m.cast(_g.convert_to_tensor(1.0 if weights is None else weights), _dt.float64)
        wr, pr = w.shape.rank, predictions.shape.rank
        if wr not in (None, 0) and pr is not None:     # TF1's squeezable weights dimension
            if wr - pr == 1:
                w = _a.squeeze(w, [-1])
            elif pr - wr == 1:
                w = _a.expand_dims(w, -1)
        true_labels = _a.reshape(f_labels * w, [-1])
        false_labels = _a.reshape((1.0 - f_labels) * w, [-1])
        flat = _a.reshape(predictions, [-1])
        buckets = _m.cast(floor(flat * (num_thresholds - 1)), _dt.int32)
        with _g.name_scope("variables"):
            tp_buckets = _local("tp_buckets", [num_thresholds], _dt.float64)
            fp_buckets = _local("fp_buckets", [num_thresholds], _dt.float64)
        with _g.name_scope("update_op"):
            update_tp = _s.scatter_add(tp_buckets, buckets, true_labels)
            update_fp = _s.scatter_add(fp_buckets, buckets, false_labels)
        tp = cumsum(tp_buckets.value(), reverse=True, name="tp")
        fp = cumsum(fp_buckets.value(), reverse=True, name="fp")
        tn, fn = fp[0] - fp, tp[0] - tp
        eps = _g.convert_to_tensor(np.float64(1e-7))
        precision = tp / _m.maximum(eps, tp + fp)
        recall = tp / _m.maximum(eps, tp + fn)
        out = lambda t: _m.cast(t, predictions.dtype)  # noqa: E731
        result = PrecisionRecallData(tp=out(tp), fp=out(fp), tn=out(tn), fn=out(fn), precision=out(precision),
                                     recall=out(recall), thresholds=out(linspace(0.0, 1.0, num_thresholds)))
        return result, group(update_tp, update_fp)


def auc_using_histogram(boolean_labels: Any, scores: Any, score_range: Any, nbins: int = 100,
                        collections: Optional[Sequence[str]] = None, check_shape: bool = True,
                        name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Operation]:
    """The ROC AUC approximated from streamed int64 histograms (nbins bins over score_range)
    of the scores of true and of false labels (Bouckaert 2006, the bins taken from high to
    low): local variables hist_accumulate/hist_true_acc and hist_false_acc.  boolean_labels
    must be bool.  As TF's, check_shape's rank-1 assertions are made but nothing waits on
    them, so scores of any shape are counted."""
    from ..graph.initializers import zeros_initializer
    from ..graph.ops.check_ops import Assert
    from ..graph.ops.index_ops import boolean_mask
    from ..graph.ops.misc_more_ops import histogram_fixed_width
    from ..graph.ops.reverse_ops import reverse
    from ..graph.variable_scope import get_variable
    if collections is None:
        collections = [GraphKeys.LOCAL_VARIABLES]
    with variable_scope(name, default_name="auc_using_histogram"):
        scores, boolean_labels = squeeze_pair(_g.convert_to_tensor(scores), _g.convert_to_tensor(boolean_labels))
        score_range = _g.convert_to_tensor(score_range, name="score_range")
        if boolean_labels.dtype != _dt.bool_:
            raise ValueError(f"Argument boolean_labels should have dtype bool.  Found: {boolean_labels.dtype}")
        if check_shape:
            for t, what in ((boolean_labels, "boolean_labels"), (scores, "scores")):
                Assert(_m.equal(1, _a.rank(t)), [f"Argument {what} should have rank 1.  Found: ", _a.shape(t)])
        with variable_scope(None, default_name="make_auc_histograms"):
            hist_true = histogram_fixed_width(boolean_mask(scores, boolean_labels), score_range, nbins=nbins,
                                              dtype=_dt.int64, name="hist_true")
            hist_false = histogram_fixed_width(boolean_mask(scores, _m.logical_not(boolean_labels)), score_range,
                                               nbins=nbins, dtype=_dt.int64, name="hist_false")
        with variable_scope(None, default_name="hist_accumulate"):
            accs = [get_variable(n, shape=[nbins], dtype=_dt.int64, initializer=zeros_initializer(),
                                 collections=collections, trainable=False) for n in ("hist_true_acc", "hist_false_acc")]
            update = group(_s.assign_add(accs[0], hist_true), _s.assign_add(accs[1], hist_false), name="update_op")
        # each bin's share of the true (false) scores, from the highest scores down: the
        # steps dy (dx) of the ROC curve, integrated by the trapezoidal rule
        dy, dx = (_m.cast(reverse(_m.truediv(a.value(), _m.reduce_sum(a.value())), [0]), _dt.float32) for a in accs)
        y = cumsum(dy)[:nbins]
        traps = dx[1:] * (y[1:] + y[:nbins - 1]) / 2.0
        auc = _m.add(dx[0] * y[0] / 2.0, _m.reduce_sum(traps), name="auc")
    return auc, update


def accuracy(predictions: Any, labels: Any, weights: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """How often predictions equal labels in this batch (not streamed): a float32 scalar, the
    weighted mean with weights.  Labels must be bool, integer or string, predictions of their
    dtype."""
    predictions, labels = _g.convert_to_tensor(predictions), _g.convert_to_tensor(labels)
    if not (labels.dtype.is_integer or labels.dtype in (_dt.bool_, _dt.string)):
        raise ValueError(f"Labels should have bool, integer, or string dtype, not {labels.dtype!r}")
    if labels.dtype != predictions.dtype:
        raise ValueError(f"Dtypes of predictions and labels should match. Given: predictions ({predictions.dtype!r}) "
                         f"and labels ({labels.dtype!r})")
    with _g.name_scope(name, "accuracy"):
        correct = _m.cast(_m.equal(predictions, labels), _dt.float32)
        if weights is None:
            return _m.reduce_mean(correct)
        correct = correct * weights
        return _m.truediv(_m.reduce_sum(correct), _m.reduce_sum(weights * _a.ones_like(correct)))
