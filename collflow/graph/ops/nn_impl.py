"""nn functions composed from other ops (TensorFlow keeps them in nn_impl.py too):
l2_normalize, batch_normalization, weighted_cross_entropy_with_logits, and the sampled
losses nce_loss and sampled_softmax_loss.

The sampled losses look up the rows of the true and the sampled classes with
embedding_lookup, so the gradient reaching `weights` and `biases` is IndexedSlices over
those rows only (what makes word2vec-sized vocabularies cheap to train).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..indexed_slices import IndexedSlices, convert_to_dense
from ..shape import TensorShape
from . import array_ops as _a
from . import math_ops as _m
from . import nn_ops as _n
from .candidate_sampling_ops import compute_accidental_hits, log_uniform_candidate_sampler
from .constant_op import constant, stop_gradient
from .op_util import single

__all__ = ["l2_normalize", "batch_normalization", "weighted_cross_entropy_with_logits", "nce_loss",
           "sampled_softmax_loss"]


def _axis_arg(axis: Any, dim: Any, fn: str) -> Any:
    if dim is not None:
        if axis is not None and axis != dim:
            raise InvalidArgumentError(f"{fn}: give axis or its old name dim, not both")
        return dim
    return axis


def l2_normalize(x: Any, axis: Any = None, epsilon: float = 1e-12, name: Optional[str] = None,
                 dim: Any = None) -> _g.Tensor:
    """x / sqrt(max(sum(x ** 2, axis), epsilon)): unit L2 norm along `axis` (None: all axes)."""
    axis = _axis_arg(axis, dim, "l2_normalize")
    x = _g.convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise InvalidArgumentError(f"l2_normalize needs a floating-point x, got {x.dtype.name}")
    g = x.graph
    with g.as_default(), g.name_scope(name or "l2_normalize"):
        square_sum = _m.reduce_sum(_m.square(x), axis, keepdims=True)
        inv_norm = _m.rsqrt(_m.maximum(square_sum, constant(epsilon, dtype=x.dtype)))
        return _m.multiply(x, inv_norm, name="l2_normalize")


def batch_normalization(x: Any, mean: Any, variance: Any, offset: Any, scale: Any, variance_epsilon: float,
                        name: Optional[str] = None) -> _g.Tensor:
    """(x - mean) * scale / sqrt(variance + variance_epsilon) + offset, broadcasting.

    mean, variance, offset, scale broadcast against x (offset and scale may be None).
    Computed as TensorFlow does: x * inv + (offset - mean * inv), inv = scale * rsqrt(var + eps).
    """
    x = _g.convert_to_tensor(x)
    g = x.graph
    with g.as_default(), g.name_scope(name or "batchnorm"):
        mean = _g.convert_to_tensor(mean, dtype=x.dtype) if not isinstance(mean, _g.Tensor) else mean
        variance = _g.convert_to_tensor(variance, dtype=x.dtype) if not isinstance(variance, _g.Tensor) else variance
        inv = _m.rsqrt(variance + constant(variance_epsilon, dtype=variance.dtype))
        if scale is not None:
            inv = inv * scale
        shift = (offset - mean * inv) if offset is not None else -(mean * inv)
        if inv.dtype != x.dtype:
            inv, shift = _m.cast(inv, x.dtype), _m.cast(shift, x.dtype)
        return x * inv + shift


def weighted_cross_entropy_with_logits(labels: Any = None, logits: Any = None, pos_weight: Any = None,
                                       name: Optional[str] = None, targets: Any = None) -> _g.Tensor:
    """Sigmoid cross entropy with the positive term weighted by pos_weight, elementwise:

    labels * -log(sigmoid(logits)) * pos_weight + (1 - labels) * -log(1 - sigmoid(logits)),
    computed stably as (1 - z) * x + (1 + (q - 1) * z) * (log(1 + exp(-|x|)) + max(-x, 0)).
    `targets` is TensorFlow 1.x's older name of labels.
    """
    if targets is not None:
        if labels is not None:
            raise InvalidArgumentError("weighted_cross_entropy_with_logits: give labels or targets, not both")
        labels = targets
    if labels is None or logits is None or pos_weight is None:
        raise InvalidArgumentError("weighted_cross_entropy_with_logits needs labels, logits and pos_weight")
    x = _g.convert_to_tensor(logits)
    g = x.graph
    with g.as_default(), g.name_scope(name or "logistic_loss"):
        z = _g.convert_to_tensor(labels, dtype=x.dtype) if not isinstance(labels, _g.Tensor) else labels
        if not x.shape.is_compatible_with(z.shape):
            raise InvalidArgumentError(f"weighted_cross_entropy_with_logits: logits and labels must have the same "
                                       f"shape ({x.shape} vs {z.shape})")
        q = _g.convert_to_tensor(pos_weight, dtype=x.dtype) if not isinstance(pos_weight, _g.Tensor) else pos_weight
        one = constant(1.0, dtype=x.dtype)
        log_weight = one + (q - one) * z
        return (one - z) * x + log_weight * (_m.log1p(_m.exp(-_m.abs(x))) + _n.relu(-x))


# -- sampled losses ---------------------------------------------------------------------------


def _shards(weights: Any) -> Any:
    if isinstance(weights, (list, tuple)):
        return list(weights)
    return weights


def _compute_sampled_logits(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
                            num_classes: int, num_true: int, sampled_values: Any, subtract_log_q: bool,
                            remove_accidental_hits: bool, partition_strategy: str, name: str,
                            seed: Optional[int]) -> Tuple[_g.Tensor, _g.Tensor]:
    """([batch, num_true + num_sampled] logits, labels): the true classes' columns first.

    labels put 1/num_true on each true column, 0 on the sampled ones.  Built in the
    caller's name scope.
    """
    x = _g.convert_to_tensor(inputs)
    num_true, num_sampled = int(num_true), int(num_sampled)
    if x.shape.rank not in (None, 2) or not x.dtype.is_floating:
        raise InvalidArgumentError(f"{name}: inputs must be a float [batch_size, dim] tensor, got {x.dtype.name} "
                                   f"of shape {x.shape}")
    y = _g.convert_to_tensor(labels)
    if not y.dtype.is_integer:
        raise InvalidArgumentError(f"{name}: labels must be integer class ids, got {y.dtype.name}")
    if y.dtype != _dt.int64:
        y = _m.cast(y, _dt.int64)
    if y.shape.rank == 1 and num_true == 1:  # a common slip: [batch] for [batch, 1]
        y = _a.expand_dims(y, 1)
    if y.shape.rank not in (None, 2) or (y.shape.rank == 2 and y.shape.dims[1] not in (None, num_true)):
        raise InvalidArgumentError(f"{name}: labels must have shape [batch_size, num_true={num_true}], got "
                                   f"{y.shape}")
    labels_flat = _a.reshape(y, [-1])
    if sampled_values is None:
        sampled_values = log_uniform_candidate_sampler(y, num_true, num_sampled, True, num_classes, seed)
    if len(sampled_values) != 3:
        raise InvalidArgumentError(f"{name}: sampled_values must be (sampled_candidates, true_expected_count, "
                                   "sampled_expected_count)")
    sampled, true_expected, sampled_expected = (stop_gradient(_g.convert_to_tensor(s)) for s in sampled_values)
    if sampled.dtype != _dt.int64:
        sampled = _m.cast(sampled, _dt.int64)
    ws = _shards(weights)
    # two lookups (true rows, sampled rows): each gradient is IndexedSlices over its rows
    true_w = _n.embedding_lookup(ws, labels_flat, partition_strategy=partition_strategy)
    sampled_w = _n.embedding_lookup(ws, sampled, partition_strategy=partition_strategy)
    true_b = _n.embedding_lookup(biases, labels_flat, partition_strategy=partition_strategy)
    sampled_b = _n.embedding_lookup(biases, sampled, partition_strategy=partition_strategy)
    true_w, sampled_w, true_b, sampled_b = (t if t.dtype == x.dtype else _m.cast(t, x.dtype)
                                            for t in (true_w, sampled_w, true_b, sampled_b))
    sampled_logits = _m.matmul(x, sampled_w, transpose_b=True) + sampled_b        # [batch, num_sampled]
    if num_true == 1:
        dots = _m.reduce_sum(x * true_w, 1)
    else:
        # row r of true_w belongs to example r // num_true
        n = _a.size(labels_flat, out_type=_dt.int64)
        rows = _m.floordiv(single("Range", [constant(0, dtype=_dt.int64), n, constant(1, dtype=_dt.int64)]),
                           constant(num_true, dtype=_dt.int64))
        dots = _m.reduce_sum(_a.gather(x, rows) * true_w, 1)
    true_logits = _a.reshape(dots, [-1, num_true]) + _a.reshape(true_b, [-1, num_true])  # [batch, num_true]
    if remove_accidental_hits:
        acc_indices, acc_ids, _ = compute_accidental_hits(y, sampled, num_true)
        flat = _m.cast(acc_indices, _dt.int64) * constant(num_sampled, dtype=_dt.int64) + acc_ids
        dense_shape = _a.strided_slice(_a.shape(y, out_type=_dt.int64), (slice(0, 1),)) * num_sampled
        hits = convert_to_dense(IndexedSlices(_m.cast(_a.ones_like(acc_ids), x.dtype), flat, dense_shape),
                                TensorShape([None]))
        # TensorFlow adds -FLT_MAX (the same class twice in a row is still one hit)
        big = float(np.finfo(np.float32).max) if x.dtype != _dt.float16 else float(np.finfo(np.float16).max)
        mask = _m.minimum(_a.reshape(hits, [-1, num_sampled]), constant(1.0, dtype=x.dtype))
        sampled_logits = sampled_logits + mask * constant(-big, dtype=x.dtype)
    if subtract_log_q:
        # log Q(class): how likely the sampler was to draw it
        true_logits = true_logits - _m.log(_m.cast(true_expected, x.dtype))
        sampled_logits = sampled_logits - _m.log(_m.cast(sampled_expected, x.dtype))
    out_logits = _a.concat([true_logits, sampled_logits], 1)
    out_labels = _a.concat([_a.ones_like(true_logits) / constant(float(num_true), dtype=x.dtype),
                            _a.zeros_like(sampled_logits)], 1)
    return out_logits, out_labels


def nce_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int, num_classes: int,
             num_true: int = 1, sampled_values: Optional[Sequence[Any]] = None, remove_accidental_hits: bool = False,
             partition_strategy: str = "mod", name: str = "nce_loss", seed: Optional[int] = None) -> _g.Tensor:
    """Noise-contrastive estimation loss per example, [batch_size] (TensorFlow's tf.nn.nce_loss).

    weights: [num_classes, dim] (or a list of row shards, split by partition_strategy);
    biases: [num_classes]; labels: int [batch_size, num_true]; inputs: [batch_size, dim].
    Each example scores its true classes and num_sampled classes drawn by
    sampled_values (default: log_uniform_candidate_sampler, unique, so class ids should be
    sorted by decreasing frequency), subtracts log Q (the expected counts) and sums the
    logistic losses (true classes labelled 1/num_true, sampled 0).  remove_accidental_hits
    drops sampled classes that equal a true one.  Train with this; evaluate with the full
    sigmoid loss.
    """
    g = _g.convert_to_tensor(inputs).graph
    with g.as_default(), g.name_scope(name):
        logits, targets = _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes,
                                                  num_true, sampled_values, True, remove_accidental_hits,
                                                  partition_strategy, "nce_loss", seed)
        losses = _n.sigmoid_cross_entropy_with_logits(labels=targets, logits=logits, name="sampled_losses")
        return _m.reduce_sum(losses, 1, name="nce_loss")


def sampled_softmax_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int, num_classes: int,
                         num_true: int = 1, sampled_values: Optional[Sequence[Any]] = None,
                         remove_accidental_hits: bool = True, partition_strategy: str = "mod",
                         name: str = "sampled_softmax_loss", seed: Optional[int] = None) -> _g.Tensor:
    """Softmax cross entropy over the true and num_sampled sampled classes, [batch_size].

    Arguments as nce_loss; the default removes accidental hits (TensorFlow's default).  An
    estimate of the full softmax loss for training; evaluate with the full softmax.
    """
    g = _g.convert_to_tensor(inputs).graph
    with g.as_default(), g.name_scope(name):
        logits, targets = _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes,
                                                  num_true, sampled_values, True, remove_accidental_hits,
                                                  partition_strategy, "sampled_softmax_loss", seed)
        targets = stop_gradient(targets, name="labels_stop_gradient")
        return _n.softmax_cross_entropy_with_logits_v2(labels=targets, logits=logits, name="sampled_losses")
