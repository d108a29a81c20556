"""tf.metrics (TensorFlow 1.x): the top-k retrieval metrics.

`precision_at_k` / `recall_at_k` take the k largest predictions of each row (top_k: the lower
index first on ties) as a set of class ids and compare it with the row's label set: a dense
int64 tensor [D1, ... DN, num_labels] (every entry a label, repeats counted once; [D1, ... DN]
means one label) or a SparseTensor (its present entries).  tp = |top-k & labels|,
fp = |top-k - labels|, fn = |labels - top-k| per row, times `weights` (broadcast to the rows),
summed into float64 local variables named as TF1's: `<scope>/true_positive_at_<k>[_class<id>]`
and `false_positive_...` / `false_negative_...`, under the name scope `precision_at_<k>`
(`recall_at_<k>`, `..._class<id>` with class_id, `..._at_k` for the `*_at_top_k` forms without k).
Values are float64 tp / (tp + fp) (NaN before anything is counted, as TF1).  With `class_id`
only that class is counted.  `average_precision_at_k` streams the (weighted) mean of each row's
average precision into `<scope>/max_1` and `<scope>/total` (TF1's names: its variable "max" is
renamed by TF's case-insensitive clash with an op "Max").

The set logic is composed from comparisons: membership of each top-k id among the labels, and
a "first occurrence" mask that counts repeated labels once.  Labels must be int64 (int32 is
TF1's TypeError).
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import state_ops as _s
from ..graph.sparse_tensor import SparseTensor
from .metrics import Collections, Pair, _collect

__all__ = ["precision_at_k", "sparse_precision_at_k", "recall_at_k", "precision_at_top_k", "recall_at_top_k",
           "average_precision_at_k", "sparse_average_precision_at_k"]


def _at_k_name(name: str, k: Optional[int] = None, class_id: Optional[int] = None) -> str:
    name = f"{name}_at_{int(k)}" if k is not None else f"{name}_at_k"
    return f"{name}_class{int(class_id)}" if class_id is not None else name


def _f64_var(name: str) -> Any:
    from ..graph.graph import GraphKeys
    from ..graph.variables import Variable
    g = _g.get_default_graph()
    with g.control_dependencies(None):
        return Variable(_a.zeros([], _dt.float64), trainable=False, name=name,
                        collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES])


def _dense_labels(labels: Any, predictions_idx: _g.Tensor) -> Tuple[_g.Tensor, _g.Tensor]:
    """(labels [D1..DN, L] int64, present [D1..DN, L] bool): TF1's _maybe_expand_labels plus
    a mask of the entries that are labels (all of a dense tensor's, a SparseTensor's present ones)."""
    from ..graph.ops.sparse_ops import sparse_tensor_to_dense
    pr = predictions_idx.shape.rank
    if isinstance(labels, SparseTensor):
        if labels.dtype != _dt.int64:
            raise TypeError(f"Types don't match, {_dt.int64!r} vs {labels.dtype!r}.")
        dense = sparse_tensor_to_dense(labels, default_value=np.int64(0), validate_indices=False)
        ones = SparseTensor(labels.indices, _a.ones_like(labels.values, dtype=_dt.int32), labels.dense_shape)
        present = _m.cast(sparse_tensor_to_dense(ones, default_value=0, validate_indices=False), _dt.bool_)
        lr = labels.shape.rank
        if lr is not None and pr is not None and pr == lr + 1:
            dense, present = _a.expand_dims(dense, -1), _a.expand_dims(present, -1)
        return dense, present
    labels = _g.convert_to_tensor(labels)
    if labels.dtype != _dt.int64:
        raise TypeError(f"Types don't match, {_dt.int64!r} vs {labels.dtype!r}.")
    lr = labels.shape.rank
    if lr is not None and pr is not None:
        if pr == lr + 1:
            labels = _a.expand_dims(labels, -1)
        elif pr != lr:
            raise ValueError(f"Unexpected labels shape {labels.shape} for predictions shape {predictions_idx.shape}. "
                             "Predictions rank should be the same rank as labels rank or labels rank plus one .")
    return labels, _a.ones_like(labels, dtype=_dt.bool_)


def _first_occurrence(x: _g.Tensor, present: _g.Tensor) -> _g.Tensor:
    """[..., n] bool: present and not equal to an earlier present entry of its row."""
    n = x.shape.dims[-1] if x.shape.rank else None
    if n is not None:
        earlier = _g.convert_to_tensor(np.tril(np.ones([n, n], bool), -1))             # [j, i]: i < j
    else:                                    # e.g. a SparseTensor's columns, known when run
        from ..graph.ops.misc_ops import range as _range
        r = _range(_a.shape(x)[-1])
        earlier = _m.less(_a.expand_dims(r, 0), _a.expand_dims(r, 1))
    same = _m.logical_and(_m.equal(_a.expand_dims(x, -1), _a.expand_dims(x, -2)),
                          _m.logical_and(_a.expand_dims(present, -2), earlier))         # [..., j, i]
    return _m.logical_and(present, _m.logical_not(_m.reduce_any(same, -1)))


def _member(x: _g.Tensor, labels: _g.Tensor, present: _g.Tensor) -> _g.Tensor:
    """[..., k] bool: x[..., j] is among the row's present labels."""
    eq = _m.equal(_a.expand_dims(x, -1), _a.expand_dims(labels, -2))                  # [..., k, L]
    return _m.reduce_any(_m.logical_and(eq, _a.expand_dims(present, -2)), -1)


def _counts(labels: Any, predictions_idx: _g.Tensor, class_id: Optional[int]) -> Tuple[_g.Tensor, ...]:
    """Per-row float64 (tp, fp, fn) of the top-k sets against the label sets."""
    lab, present = _dense_labels(labels, predictions_idx)
    idx_present = _a.ones_like(predictions_idx, dtype=_dt.bool_)
    if class_id is not None:
        c = np.int64(class_id)
        in_p = _m.reduce_any(_m.equal(predictions_idx, c), -1)
        in_l = _m.reduce_any(_m.logical_and(_m.equal(lab, c), present), -1)
        f = lambda b: _m.cast(b, _dt.float64)  # noqa: E731
        return (f(_m.logical_and(in_p, in_l)), f(_m.logical_and(in_p, _m.logical_not(in_l))),
                f(_m.logical_and(in_l, _m.logical_not(in_p))))
    p_first = _first_occurrence(predictions_idx, idx_present)
    l_first = _first_occurrence(lab, present)
    tp = _m.reduce_sum(_m.cast(_m.logical_and(p_first, _member(predictions_idx, lab, present)), _dt.float64), -1)
    n_p = _m.reduce_sum(_m.cast(p_first, _dt.float64), -1)
    n_l = _m.reduce_sum(_m.cast(l_first, _dt.float64), -1)
    return tp, n_p - tp, n_l - tp


def _weigh(x: _g.Tensor, weights: Any) -> _g.Tensor:
    if weights is None:
        return x
    w = _m.cast(_g.convert_to_tensor(weights), _dt.float64)
    if w.shape.rank not in (None, 0) and x.shape.rank is not None:
        if w.shape.rank != x.shape.rank or not all(a is None or b is None or a == 1 or a == b
                                                   for a, b in zip(w.shape.dims, x.shape.dims)):
            raise ValueError(f"weights can not be broadcast to values. values.shape={x.shape}. "
                             f"weights.shape={w.shape}.")
    return x * w


def _streamed_ratio(kind: str, other: str, labels: Any, predictions_idx: Any, k: Optional[int],
                    class_id: Optional[int], weights: Any, metrics_collections: Collections,
                    updates_collections: Collections, name: Optional[str]) -> Pair:
    """precision (other="false_positive") or recall (other="false_negative") over top-k ids."""
    with _g.name_scope(name, _at_k_name(kind, k, class_id)) as scope:
        idx = _m.cast(_g.convert_to_tensor(predictions_idx), _dt.int64)
        tp, fp, fn = _counts(labels, idx, class_id)
        o = fp if other == "false_positive" else fn
        tp_var = _f64_var(_at_k_name("true_positive", k, class_id))
        o_var = _f64_var(_at_k_name(other, k, class_id))
        tp_up = _s.assign_add(tp_var, _m.reduce_sum(_weigh(tp, weights)))
        o_up = _s.assign_add(o_var, _m.reduce_sum(_weigh(o, weights)))
        value = _m.truediv(tp_var.value(), tp_var.value() + o_var.value(), name=scope.rstrip("/").split("/")[-1])
        update = _m.truediv(tp_up, tp_up + o_up, name="update")
        return _collect(metrics_collections, updates_collections, value, update)


def _top_k_idx(predictions: Any, k: int) -> _g.Tensor:
    from ..graph.ops.misc_ops import top_k
    p = _g.convert_to_tensor(predictions)
    n = p.shape.dims[-1] if p.shape.rank else None
    if n is not None and int(k) > n:
        raise ValueError(f"input must have last dimension >= k = {int(k)} but is {n}")
    return top_k(p, int(k))[1]


def precision_at_top_k(labels: Any, predictions_idx: Any, k: Optional[int] = None, class_id: Optional[int] = None,
                       weights: Any = None, metrics_collections: Collections = None,
                       updates_collections: Collections = None, name: Optional[str] = None) -> Pair:
    """Precision of given top-k class ids [D1, ... DN, k] against the labels (k names only)."""
    return _streamed_ratio("precision", "false_positive", labels, predictions_idx, k, class_id, weights,
                           metrics_collections, updates_collections, name)


def recall_at_top_k(labels: Any, predictions_idx: Any, k: Optional[int] = None, class_id: Optional[int] = None,
                    weights: Any = None, metrics_collections: Collections = None,
                    updates_collections: Collections = None, name: Optional[str] = None) -> Pair:
    """Recall of given top-k class ids [D1, ... DN, k] against the labels (k names only)."""
    return _streamed_ratio("recall", "false_negative", labels, predictions_idx, k, class_id, weights,
                           metrics_collections, updates_collections, name)


def precision_at_k(labels: Any, predictions: Any, k: int, class_id: Optional[int] = None, weights: Any = None,
                   metrics_collections: Collections = None, updates_collections: Collections = None,
                   name: Optional[str] = None) -> Pair:
    """Precision of the k largest predictions of each row against its labels (float64)."""
    with _g.name_scope(name, _at_k_name("precision", k, class_id)) as scope:
        return precision_at_top_k(labels, _top_k_idx(predictions, k), k, class_id, weights, metrics_collections,
                                  updates_collections, scope)


sparse_precision_at_k = precision_at_k   # TF1's deprecated alias


def recall_at_k(labels: Any, predictions: Any, k: int, class_id: Optional[int] = None, weights: Any = None,
                metrics_collections: Collections = None, updates_collections: Collections = None,
                name: Optional[str] = None) -> Pair:
    """Recall of the k largest predictions of each row against its labels (float64)."""
    with _g.name_scope(name, _at_k_name("recall", k, class_id)) as scope:
        return recall_at_top_k(labels, _top_k_idx(predictions, k), k, class_id, weights, metrics_collections,
                               updates_collections, scope)


def _average_precision(labels: Any, idx: _g.Tensor) -> _g.Tensor:
    """Each row's average precision of the ranked ids idx [..., k] (float64 [...])."""
    k = idx.shape.dims[-1] if idx.shape.rank else None
    if idx.shape.rank == 0:
        raise ValueError("The rank of predictions_idx must be at least 1.")
    if k is None:
        raise ValueError("The last dimension of predictions_idx must be set. Currently, it is None.")
    lab, present = _dense_labels(labels, idx)
    rel = _m.cast(_member(idx, lab, present), _dt.float64)                            # [..., k]
    from ..graph.ops.scan_ops import cumsum
    ranks = _g.convert_to_tensor(np.arange(1, k + 1, dtype=np.float64))
    prec_sum = _m.reduce_sum(cumsum(rel, -1) / ranks * rel, -1)
    if isinstance(labels, SparseTensor):     # TF1: the size of the label set, at most k
        n_rel = _m.reduce_sum(_m.cast(_first_occurrence(lab, present), _dt.float64), -1)
    else:                                    # TF1: the number of non-negative labels, at most k
        n_rel = _m.reduce_sum(_m.cast(_m.greater_equal(lab, np.int64(0)), _dt.float64), -1)
    return _m.truediv(prec_sum, _m.minimum(n_rel, float(k)))


def _clean_labels(labels: Any, predictions: Any) -> Any:
    """TF1's average_precision_at_k first turns labels >= num_classes into -1 (so a label set
    loses its out-of-range repeats and dense rows stop counting them as relevant)."""
    n = _m.cast(_a.shape(_g.convert_to_tensor(predictions))[-1], _dt.int64)

    def clean(v: _g.Tensor) -> _g.Tensor:
        return _a.where(_m.greater_equal(v, n), -_a.ones_like(v), v)
    if isinstance(labels, SparseTensor):
        if labels.dtype != _dt.int64:
            raise TypeError(f"Types don't match, {_dt.int64!r} vs {labels.dtype!r}.")
        return SparseTensor(labels.indices, clean(labels.values), labels.dense_shape)
    labels = _g.convert_to_tensor(labels)
    if labels.dtype != _dt.int64:
        raise TypeError(f"Types don't match, {_dt.int64!r} vs {labels.dtype!r}.")
    return clean(labels)


def average_precision_at_k(labels: Any, predictions: Any, k: int, weights: Any = None,
                           metrics_collections: Collections = None, updates_collections: Collections = None,
                           name: Optional[str] = None) -> Pair:
    """The (weighted) mean average precision at k over the rows seen (float64)."""
    if k < 1:
        raise ValueError(f"Invalid k={k}. `k` should be >= 1.")
    with _g.name_scope(name, _at_k_name("average_precision", k)):
        # made first, so that no op of the scope takes their names
        max_var = _f64_var("max_1")      # TF1's name (see the module docstring)
        total_var = _f64_var("total")
        idx = _m.cast(_top_k_idx(predictions, k), _dt.int64)
        ap = _average_precision(_clean_labels(labels, predictions), idx)
        if weights is not None:
            w = _m.cast(_g.convert_to_tensor(weights), _dt.float64) * _a.ones_like(ap)
            ap = ap * w
            batch_max = _m.reduce_sum(w)
        else:
            batch_max = _m.cast(_a.size(ap), _dt.float64)
        max_up = _s.assign_add(max_var, batch_max)
        total_up = _s.assign_add(total_var, _m.reduce_sum(ap))

        def div(t: Any, m: Any, nm: str) -> _g.Tensor:
            return _a.where(_m.greater(m, 0.0), _m.truediv(t, _m.maximum(m, 1e-300)), _a.zeros_like(t), name=nm)

        value = div(total_var.value(), max_var.value(), "mean")
        update = div(total_up, max_up, "update")
        return _collect(metrics_collections, updates_collections, value, update)


sparse_average_precision_at_k = average_precision_at_k   # TF1's deprecated alias
