"""tf.contrib.losses (and so tf.contrib.slim.losses): TF 1.x's first loss functions, which take
the predictions or logits FIRST, unlike tf.losses:

    slim.losses.softmax_cross_entropy(logits, onehot_labels)      # contrib's order
    tf.losses.softmax_cross_entropy(onehot_labels, logits)        # core's order

Their reduction is contrib's own: the weighted sum divided by the number of present
entries (nonzero weights, broadcast over the dimensions the weights lack), computed in
float32; every loss but hinge_loss adds its mean to the LOSSES collection.  hinge_loss
returns the elementwise losses, as contrib's does.
"""
from __future__ import annotations

from typing import Any, List, Optional

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.ops import array_ops, math_ops, nn_ops
from ..graph.ops.math_more_ops import div_no_nan

__all__ = ["absolute_difference", "add_loss", "cosine_distance", "compute_weighted_loss", "get_losses",
           "get_regularization_losses", "get_total_loss", "hinge_loss", "log_loss", "mean_pairwise_squared_error",
           "mean_squared_error", "sigmoid_cross_entropy", "softmax_cross_entropy", "sparse_softmax_cross_entropy"]


def _f32(x: Any) -> _g.Tensor:
    t = _g.convert_to_tensor(x)
    return t if t.dtype == _dt.float32 else math_ops.cast(t, _dt.float32)


def _compatible(a: _g.Tensor, b: _g.Tensor) -> None:
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(f"Shapes {a.shape} and {b.shape} are incompatible")


def _scale_losses(losses: _g.Tensor, weights: _g.Tensor) -> _g.Tensor:
    """sum(losses summed over the dimensions the weights lack, times the weights)."""
    axis = list(range(max(0, weights.shape.rank), losses.shape.rank))
    reduced = math_ops.reduce_sum(losses, axis=axis) if axis else losses
    return math_ops.reduce_sum(reduced * weights)


def _num_present(losses: _g.Tensor, weights: _g.Tensor, per_batch: bool = False) -> _g.Tensor:
    """Entries that count: per example, the nonzero weights times the entries each broadcasts
    over (a scalar weight: all the example's entries, or none for a weight of 0)."""
    if weights.shape.rank == 0:
        batch = array_ops.reshape(array_ops.shape(losses)[:1], []) if losses.shape.rank else 1
        per = math_ops.cast(array_ops.size(losses), _dt.float32) / math_ops.cast(batch, _dt.float32)
        per = array_ops.where(math_ops.equal(weights, 0.0), 0.0, per)
        counts = array_ops.ones(array_ops.reshape(batch, [1])) * per
    else:
        axis = list(range(1, weights.shape.rank))
        nonzero = math_ops.cast(math_ops.not_equal(weights, 0.0), _dt.float32)
        nonzero = math_ops.reduce_sum(nonzero, axis=axis) if axis else nonzero
        spread = math_ops.cast(math_ops.reduce_prod(array_ops.shape(losses)[weights.shape.rank:]), _dt.float32)
        counts = nonzero * spread
    return counts if per_batch else math_ops.reduce_sum(counts)


def add_loss(loss: Any, loss_collection: Optional[str] = GraphKeys.LOSSES) -> None:
    """Adds loss to loss_collection (none when it is None)."""
    if loss_collection:
        _g.get_default_graph().add_to_collection(loss_collection, loss)


def get_losses(scope: Optional[str] = None, loss_collection: str = GraphKeys.LOSSES) -> List[Any]:
    """The losses in loss_collection (their names matching scope)."""
    return _g.get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope: Optional[str] = None) -> List[Any]:
    """The REGULARIZATION_LOSSES (their names matching scope)."""
    return _g.get_default_graph().get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss") -> _g.Tensor:
    """add_n of the LOSSES and, by default, the REGULARIZATION_LOSSES."""
    losses = get_losses()
    if add_regularization_losses:
        losses += get_regularization_losses()
    return math_ops.add_n(losses, name=name)


def compute_weighted_loss(losses: Any, weights: Any = 1.0, scope: Optional[str] = None) -> _g.Tensor:
    """The weighted mean of `losses` over the present entries (0 with none), in the losses'
    dtype, added to LOSSES.  weights: a scalar, or [batch, ...] of a prefix of the losses'
    dimensions (a trailing 1 squeezed)."""
    with _g.name_scope(scope, "weighted_loss", [losses, weights]):
        losses = _g.convert_to_tensor(losses)
        dtype = losses.dtype
        losses = _f32(losses)
        weights = _f32(weights)
        if losses.shape.rank is None:
            raise ValueError("losses.get_shape().ndims cannot be None")
        if weights.shape.rank is None:
            raise ValueError("weights.get_shape().ndims cannot be None")
        if weights.shape.rank > 1 and weights.shape.dims[-1] in (1, None):
            weights = array_ops.squeeze(weights, [-1])
        total = _scale_losses(losses, weights)
        mean = div_no_nan(math_ops.reduce_sum(total), _num_present(losses, weights), name="value")
        mean = math_ops.cast(mean, dtype) if dtype != _dt.float32 else mean
        add_loss(mean)
        return mean


def absolute_difference(predictions: Any, labels: Any = None, weights: Any = 1.0,
                        scope: Optional[str] = None) -> _g.Tensor:
    """compute_weighted_loss of |predictions - labels|."""
    with _g.name_scope(scope, "absolute_difference", [predictions, labels, weights]) as sc:
        p, lab = _f32(predictions), _f32(labels)
        _compatible(p, lab)
        return compute_weighted_loss(math_ops.abs(p - lab), weights, scope=sc)


def sigmoid_cross_entropy(logits: Any, multi_class_labels: Any, weights: Any = 1.0, label_smoothing: float = 0,
                          scope: Optional[str] = None) -> _g.Tensor:
    """compute_weighted_loss of the sigmoid cross-entropy; label_smoothing moves the labels
    toward 1/2."""
    with _g.name_scope(scope, "sigmoid_cross_entropy_loss", [logits, multi_class_labels, weights]) as sc:
        logits = _g.convert_to_tensor(logits)
        labels = math_ops.cast(_g.convert_to_tensor(multi_class_labels), logits.dtype)
        _compatible(logits, labels)
        if label_smoothing > 0:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = nn_ops.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, scope=sc)


def softmax_cross_entropy(logits: Any, onehot_labels: Any, weights: Any = 1.0, label_smoothing: float = 0,
                          scope: Optional[str] = None) -> _g.Tensor:
    """compute_weighted_loss of the softmax cross-entropy of [batch, classes] logits;
    label_smoothing mixes the labels with the uniform distribution."""
    with _g.name_scope(scope, "softmax_cross_entropy_loss", [logits, onehot_labels, weights]) as sc:
        logits = _g.convert_to_tensor(logits)
        labels = math_ops.cast(_g.convert_to_tensor(onehot_labels), logits.dtype)
        _compatible(logits, labels)
        if label_smoothing > 0:
            n = math_ops.cast(array_ops.shape(labels)[1], logits.dtype)
            labels = labels * (1.0 - label_smoothing) + label_smoothing / n
        losses = nn_ops.softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, scope=sc)


def sparse_softmax_cross_entropy(logits: Any, labels: Any, weights: Any = 1.0,
                                 scope: Optional[str] = None) -> _g.Tensor:
    """compute_weighted_loss of the sparse softmax cross-entropy (labels [batch] or [batch, 1])."""
    with _g.name_scope(scope, "sparse_softmax_cross_entropy_loss", [logits, labels, weights]) as sc:
        labels = _g.convert_to_tensor(labels)
        labels = array_ops.reshape(labels, array_ops.shape(labels)[:1])
        losses = nn_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, scope=sc)


def log_loss(predictions: Any, labels: Any = None, weights: Any = 1.0, epsilon: float = 1e-7,
             scope: Optional[str] = None) -> _g.Tensor:
    """compute_weighted_loss of -labels log(p + eps) - (1 - labels) log(1 - p + eps)."""
    with _g.name_scope(scope, "log_loss", [predictions, labels, weights]) as sc:
        p, lab = _f32(predictions), _f32(labels)
        _compatible(p, lab)
        losses = -(lab * math_ops.log(p + epsilon)) - (1 - lab) * math_ops.log(1 - p + epsilon)
        return compute_weighted_loss(losses, weights, scope=sc)


def hinge_loss(logits: Any, labels: Any = None, scope: Optional[str] = None) -> _g.Tensor:
    """max(0, 1 - (2 labels - 1) logits) per entry (not reduced, not added to LOSSES)."""
    with _g.name_scope(scope, "hinge_loss", [logits, labels]):
        logits = _g.convert_to_tensor(logits)
        lab = _f32(labels)
        _compatible(logits, lab)
        ones = array_ops.ones_like(lab)
        return nn_ops.relu(ones - (2 * lab - ones) * logits)


def mean_squared_error(predictions: Any, labels: Any = None, weights: Any = 1.0,
                       scope: Optional[str] = None) -> _g.Tensor:
    """compute_weighted_loss of (predictions - labels)^2."""
    with _g.name_scope(scope, "mean_squared_error", [predictions, labels, weights]) as sc:
        p, lab = _f32(predictions), _f32(labels)
        _compatible(p, lab)
        return compute_weighted_loss(math_ops.squared_difference(p, lab), weights, scope=sc)


def mean_pairwise_squared_error(predictions: Any, labels: Any = None, weights: Any = 1.0,
                                scope: Optional[str] = None) -> _g.Tensor:
    """The weighted mean over examples of the mean squared difference between every pair of
    an example's entries' errors (2 mean(d^2) - 2 mean(d)^2 per example)."""
    with _g.name_scope(scope, "mean_pairwise_squared_error", [predictions, labels, weights]):
        p, lab = _f32(predictions), _f32(labels)
        _compatible(p, lab)
        weights = _f32(weights)
        diffs = p - lab
        if diffs.shape.rank is None:
            raise ValueError("diffs.get_shape().ndims cannot be None")
        if weights.shape.rank is None:
            raise ValueError("weights.get_shape().ndims cannot be None")
        axis = list(range(1, diffs.shape.rank))
        present = _num_present(diffs, weights, per_batch=True)
        term1 = 2.0 * div_no_nan(math_ops.reduce_sum(math_ops.square(diffs), axis=axis), present, name="value")
        term2 = 2.0 * div_no_nan(math_ops.square(math_ops.reduce_sum(diffs, axis=axis)), math_ops.square(present),
                                 name="value")
        loss = _scale_losses(term1 - term2, weights)
        mean = array_ops.where(math_ops.reduce_sum(present) > 0, loss, array_ops.zeros_like(loss), name="value")
        add_loss(mean)
        return mean


def cosine_distance(predictions: Any, labels: Any = None, axis: Optional[int] = None, weights: Any = 1.0,
                    scope: Optional[str] = None, dim: Optional[int] = None) -> _g.Tensor:
    """compute_weighted_loss of 1 - sum(predictions * labels) over `axis` (unit vectors assumed)."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("You must specify 'axis'.")
    with _g.name_scope(scope, "cosine_distance_loss", [predictions, labels, weights]) as sc:
        p, lab = _f32(predictions), _f32(labels)
        _compatible(p, lab)
        losses = 1 - math_ops.reduce_sum(p * lab, axis=[axis])
        return compute_weighted_loss(losses, weights, scope=sc)


# tf.contrib.losses.metric_learning (labels first), also under the flat names as TF 1.15's
from . import metric_learning  # noqa: E402
for _ml_name in metric_learning.LOSSES:
    globals()[_ml_name] = getattr(metric_learning, _ml_name)
del _ml_name
__all__ += ["metric_learning", *metric_learning.LOSSES]
