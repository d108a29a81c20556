"""tf.contrib.seq2seq.sequence_loss: the weighted cross-entropy of a batch of sequences."""
from __future__ import annotations

from typing import Any, Callable, Optional

from ...graph import graph as _g
from ...graph.ops import array_ops as _a
from ...graph.ops import math_ops as _m
from ...graph.ops import nn_ops as _nn
from ...graph.ops.math_extra_ops import count_nonzero
from ...graph.ops.math_more_ops import div_no_nan

__all__ = ["sequence_loss"]


def sequence_loss(logits: Any, targets: Any, weights: Any, average_across_timesteps: bool = True,
                  average_across_batch: bool = True, sum_over_timesteps: bool = False,
                  sum_over_batch: bool = False, softmax_loss_function: Optional[Callable] = None,
                  name: Optional[str] = None) -> _g.Tensor:
    """Weighted cross-entropy of logits [batch, time, classes] against int targets [batch, time].

    weights [batch, time] (floats) scale each step's cross-entropy.  average_across_* divides
    the weighted sum over that axis by the sum of the weights over it; sum_over_* divides it by
    the number of nonzero weights over it (TF 1.x's `div_no_nan`: 0 where the divisor is 0).
    Neither on an axis keeps that axis: the result is a scalar, [time], [batch] or
    [batch, time].  softmax_loss_function(labels=, logits=) replaces the sparse softmax
    cross-entropy (called on the flattened [batch * time] targets and [batch * time, classes]
    logits).
    """
    if average_across_timesteps and sum_over_timesteps:
        raise ValueError("average_across_timesteps and sum_over_timesteps cannot be set to True at same time.")
    if average_across_batch and sum_over_batch:
        raise ValueError("average_across_batch and sum_over_batch cannot be set to True at same time.")
    logits = _g.convert_to_tensor(logits)
    targets = _g.convert_to_tensor(targets)
    weights = _g.convert_to_tensor(weights, dtype=logits.dtype)
    if logits.shape.rank is not None and logits.shape.rank != 3:
        raise ValueError("Logits must be a [batch_size x sequence_length x logits] tensor")
    if targets.shape.rank is not None and targets.shape.rank != 2:
        raise ValueError("Targets must be a [batch_size x sequence_length] tensor")
    if weights.shape.rank is not None and weights.shape.rank != 2:
        raise ValueError("Weights must be a [batch_size x sequence_length] tensor")
    g = logits.graph
    with g.as_default(), g.name_scope(name or "sequence_loss"):
        num_classes = logits.shape.dims[2] if logits.shape.rank is not None else None
        if num_classes is None:
            raise ValueError(f"sequence_loss: the number of classes (logits' last dimension) must be known "
                             f"statically, got logits of shape {logits.shape}")
        logits_flat = _a.reshape(logits, [-1, int(num_classes)])
        targets_flat = _a.reshape(targets, [-1])
        if softmax_loss_function is None:
            crossent = _nn.sparse_softmax_cross_entropy_with_logits(labels=targets_flat, logits=logits_flat)
        else:
            crossent = softmax_loss_function(labels=targets_flat, logits=logits_flat)
        crossent = crossent * _a.reshape(weights, [-1])
        if average_across_timesteps and average_across_batch:
            return div_no_nan(_m.reduce_sum(crossent), _m.reduce_sum(weights))
        if sum_over_timesteps and sum_over_batch:
            return div_no_nan(_m.reduce_sum(crossent), _m.cast(count_nonzero(weights), logits.dtype))
        crossent = _a.reshape_like(crossent, weights)
        if average_across_timesteps and not average_across_batch:
            crossent = div_no_nan(_m.reduce_sum(crossent, axis=1), _m.reduce_sum(weights, axis=1))
        if not average_across_timesteps and average_across_batch:
            crossent = div_no_nan(_m.reduce_sum(crossent, axis=0), _m.reduce_sum(weights, axis=0))
        if sum_over_timesteps and not sum_over_batch:
            crossent = div_no_nan(_m.reduce_sum(crossent, axis=1),
                                  _m.cast(count_nonzero(weights, axis=1), logits.dtype))
        if not sum_over_timesteps and sum_over_batch:
            crossent = div_no_nan(_m.reduce_sum(crossent, axis=0),
                                  _m.cast(count_nonzero(weights, axis=0), logits.dtype))
        return crossent

