"""TF1's shape rules for tf.metrics inputs (metrics_impl._remove_squeezable_dimensions and
weights_broadcast_ops): a trailing size-1 dimension is dropped from whichever of labels and
predictions has one more dimension than the other; weights of one more dimension than the
values lose their last (size-1) dimension, weights of one fewer gain a trailing one (so
per-example weights [batch] weigh predictions [batch, n] row by row); then weights must be a
scalar or of the values' rank with each dimension 1 or the values' (else ValueError when the
graph is built, as TF1 where the shapes are known).
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m

__all__ = ["squeeze_pair", "align_weights", "broadcast_weights"]


def squeeze_pair(labels: _g.Tensor, predictions: _g.Tensor) -> Tuple[_g.Tensor, _g.Tensor]:
    """TF1's remove_squeezable_dimensions: drops a trailing size-1 dimension of whichever of
    the two has one more dimension than the other."""
    lr, pr = labels.shape.rank, predictions.shape.rank
    if lr is not None and pr is not None:
        if pr - lr == 1 and predictions.shape.dims[-1] in (1, None):
            predictions = _a.squeeze(predictions, [-1])
        elif lr - pr == 1 and labels.shape.dims[-1] in (1, None):
            labels = _a.squeeze(labels, [-1])
    return labels, predictions


def align_weights(weights: Any, values: _g.Tensor) -> Optional[_g.Tensor]:
    """float32 weights of the values' rank (or a scalar), checked broadcastable to the values."""
    if weights is None:
        return None
    w = _g.convert_to_tensor(weights)
    w = w if w.dtype == _dt.float32 else _m.cast(w, _dt.float32)
    wr, vr = w.shape.rank, values.shape.rank
    if wr in (None, 0) or vr is None:
        return w
    if wr - vr == 1:
        w = _a.squeeze(w, [-1])
    elif vr - wr == 1:
        w = _a.expand_dims(w, -1)
    ws, vs = w.shape, values.shape
    if ws.rank != vs.rank:
        raise ValueError(f"weights can not be broadcast to values. values.rank={vs.rank}. weights.rank={ws.rank}. "
                         f"values.shape={vs}. weights.shape={ws}.")
    if not all(a is None or b is None or a == 1 or a == b for a, b in zip(ws.dims, vs.dims)):
        raise ValueError(f"weights can not be broadcast to values. values.shape={vs}. weights.shape={ws}.")
    return w


def broadcast_weights(weights: Any, values: _g.Tensor) -> Optional[_g.Tensor]:
    """align_weights, then broadcast to the values' shape (float32); where the shapes are only
    known when run, a weights dimension that is neither 1 nor the values' fails the run
    (InvalidArgumentError), as TF1's assertion, instead of growing the values."""
    w = align_weights(weights, values)
    if w is None:
        return None
    bw = w * _a.ones_like(values, dtype=_dt.float32)
    if w.shape.rank not in (None, 0) and not (w.shape.is_fully_defined() and values.shape.is_fully_defined()):
        from ..graph.ops.check_ops import assert_equal
        from ..graph.ops.constant_op import identity
        check = assert_equal(_a.shape(bw), _a.shape(values), message="weights can not be broadcast to values.")
        with _g.get_default_graph().control_dependencies([check]):
            bw = identity(bw)
    return bw
