"""tf.losses.mean_pairwise_squared_error (TensorFlow 1.x).

For each example (first dimension) with d = predictions - labels over its n present entries,
the mean over ordered pairs of ((d_i - d_j))^2 is
    2 * sum(d^2) / (n - 1) - 2 * (sum d)^2 / (n (n - 1))
(0 where n < 2).  As TF1: n counts the entries with a non-zero weight (weights broadcast to
the labels), every entry of d counts in the sums whatever its weight, each example's term is
multiplied by the weights (broadcast over the example's entries, then summed), and the loss is
the sum (there is no `reduction` argument); it is 0 when no weight is non-zero.
"""
from __future__ import annotations

from typing import Any, Optional

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from .losses import _check_broadcastable, add_loss

__all__ = ["mean_pairwise_squared_error"]


def _div_no_nan(num: _g.Tensor, den: _g.Tensor) -> _g.Tensor:
    ok = _m.greater(den, 0.0)
    return _a.where(ok, num / _a.where(ok, den, _a.ones_like(den)), _a.zeros_like(num))


def mean_pairwise_squared_error(labels: Any, predictions: Any, weights: Any = 1.0, scope: Optional[str] = None,
                                loss_collection: Optional[str] = GraphKeys.LOSSES) -> _g.Tensor:
    """The weighted sum over examples of the mean squared pairwise difference (float32 scalar)."""
    if labels is None:
        raise ValueError("Argument `labels` must not be None.")
    if predictions is None:
        raise ValueError("Argument `predictions` must not be None.")
    lab = _g.convert_to_tensor(labels)
    with lab.graph.as_default(), _g.name_scope(scope, "mean_pairwise_squared_error"):
        w = _m.cast(_g.convert_to_tensor(weights), _dt.float32)
        lab = _m.cast(lab, _dt.float32) if lab.dtype != _dt.float32 else lab
        pred = _g.convert_to_tensor(predictions)
        pred = _m.cast(pred, _dt.float32) if pred.dtype != _dt.float32 else pred
        if not pred.shape.is_compatible_with(lab.shape):
            raise ValueError(f"Shapes {pred.shape} and {lab.shape} are incompatible")
        _check_broadcastable(w, lab)
        diffs = pred - lab
        rank = diffs.shape.rank
        if rank is None:
            raise ValueError("mean_pairwise_squared_error: the rank of predictions must be known")
        axes = list(range(1, rank))
        present = _a.where(_m.equal(w, 0.0), _a.zeros_like(w), _a.ones_like(w)) * _a.ones_like(diffs)
        n = _m.reduce_sum(present, axis=axes, keepdims=True)
        sum_sq = _m.reduce_sum(_m.square(diffs), axis=axes, keepdims=True)
        sum_d = _m.reduce_sum(diffs, axis=axes, keepdims=True)
        term1 = 2.0 * _div_no_nan(sum_sq, _m.maximum(n - 1.0, 0.0))
        term2 = 2.0 * _div_no_nan(_m.square(sum_d), _m.maximum(n * (n - 1.0), 0.0))
        loss = _m.reduce_sum((term1 - term2) * w)
        value = _a.where(_m.greater(_m.reduce_sum(n), 0.0), loss, _a.zeros_like(loss), name="value")
        add_loss(value, loss_collection)
        return value
