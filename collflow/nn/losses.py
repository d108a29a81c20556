"""TensorFlow 1.x's tf.losses: weighted, reduced losses added to the LOSSES collection.

Every loss computes elementwise losses, multiplies them by `weights` (a scalar, or a tensor
of the losses' rank whose every dimension is 1 or the losses' size there) and reduces them
as `reduction` says (Reduction below; the default divides the weighted sum by the number of
non-zero weights).  The result is added to `loss_collection` (GraphKeys.LOSSES; None adds it
nowhere), where get_losses / get_total_loss find it:

    cf.losses.softmax_cross_entropy(onehot, logits, label_smoothing=0.1)
    cf.layers.dense(h, 10, kernel_regularizer=...)                # REGULARIZATION_LOSSES
    total = cf.losses.get_total_loss()                            # sum of both collections

As in TensorFlow 1.x: the regression losses (absolute_difference, mean_squared_error,
huber_loss, log_loss, hinge_loss, cosine_distance) cast their inputs to float32 and return
float32; the cross entropies keep the logits' dtype.  Weighted reductions run in the
losses' dtype (float16 in float32), and a reduction over nothing (all weights zero) is 0.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import nn_ops as _n
from ..graph.ops.constant_op import constant, stop_gradient

__all__ = ["Reduction", "compute_weighted_loss", "absolute_difference", "cosine_distance", "hinge_loss",
           "huber_loss", "log_loss", "mean_squared_error", "sigmoid_cross_entropy", "softmax_cross_entropy",
           "sparse_softmax_cross_entropy", "add_loss", "get_losses", "get_regularization_losses",
           "get_regularization_loss", "get_total_loss"]


class Reduction:
    """How a weighted loss is reduced (TensorFlow's tf.losses.Reduction)."""

    NONE = "none"                                               # the weighted losses, unreduced
    SUM = "weighted_sum"                                        # their sum
    MEAN = "weighted_mean"                                      # the sum / the sum of the weights
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"        # the sum / the number of losses
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"  # the sum / the number of non-zero weights
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> Tuple[str, ...]:
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE, cls.SUM_OVER_NONZERO_WEIGHTS,
                cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key: Any) -> None:
        if key not in cls.all():
            raise InvalidArgumentError(f"Invalid Reduction Key {key!r}; use one of cf.losses.Reduction."
                                       "{NONE, SUM, MEAN, SUM_OVER_BATCH_SIZE, SUM_BY_NONZERO_WEIGHTS}")


# -- collections ---------------------------------------------------------------------------------


def add_loss(loss: Any, loss_collection: Optional[str] = GraphKeys.LOSSES) -> None:
    """Adds `loss` to `loss_collection` (nothing when it is None)."""
    if loss_collection:
        g = getattr(loss, "graph", None)
        (g if isinstance(g, _g.Graph) else _g.get_default_graph()).add_to_collection(loss_collection, loss)


def get_losses(scope: Optional[str] = None, loss_collection: str = GraphKeys.LOSSES) -> List[Any]:
    """The losses in `loss_collection`, optionally only those whose name matches `scope`."""
    return _g.get_collection(loss_collection, scope)


def get_regularization_losses(scope: Optional[str] = None) -> List[Any]:
    """The REGULARIZATION_LOSSES collection (what regularizers of get_variable and layers add)."""
    return _g.get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope: Optional[str] = None, name: str = "total_regularization_loss") -> _g.Tensor:
    """The sum of the regularization losses (0.0 when there are none)."""
    losses = get_regularization_losses(scope)
    if losses:
        return _m.add_n(losses, name=name)
    return constant(0.0)    # TF1's unnamed constant ("Const"), not `name`


def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss",
                   scope: Optional[str] = None) -> _g.Tensor:
    """The sum of the LOSSES collection, plus the regularization losses unless told not to.

    Raises InvalidArgumentError when there is nothing to sum.
    """
    losses = list(get_losses(scope=scope))
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    if not losses:
        raise InvalidArgumentError("get_total_loss: no losses to sum: the LOSSES collection (and "
                                   "REGULARIZATION_LOSSES) is empty; build a cf.losses.* loss first")
    dts = {getattr(x, "dtype", None) for x in losses}
    if len(dts) > 1:
        raise InvalidArgumentError(f"get_total_loss: the losses have different dtypes "
                                   f"({', '.join(sorted(d.name for d in dts if d is not None))}); cast them to one")
    return _m.add_n(losses, name=name)


# -- weighting and reduction ---------------------------------------------------------------------


def _compute_dtype(dt: _dt.DType) -> _dt.DType:
    # TensorFlow sums every loss in float32; float64 losses keep float64 here (same value, more digits)
    return dt if dt in (_dt.float32, _dt.float64) else _dt.float32


def _check_broadcastable(weights: _g.Tensor, losses: _g.Tensor) -> None:
    ws, ls = weights.shape, losses.shape
    if ws.rank is None or ws.rank == 0 or ls.rank is None:
        return
    ok = ws.rank == ls.rank and all(w is None or lv is None or w == 1 or w == lv for w, lv in zip(ws.dims, ls.dims))
    if not ok:
        raise InvalidArgumentError(f"weights can not be broadcast to values: weights must be a scalar or have the "
                                   f"losses' rank with each dimension 1 or equal to theirs. values.shape={ls}, "
                                   f"weights.shape={ws}")


def _safe_div(num: _g.Tensor, den: _g.Tensor, name: str = "value") -> _g.Tensor:
    """num / den, 0 where den is 0 (with a finite gradient there).

    TF's div_no_nan: a negative den (MEAN with negative weights) still divides."""
    zero = _a.zeros_like(den)
    is_zero = _m.equal(den, zero)
    safe = _a.where(is_zero, _a.ones_like(den), den)
    return _a.where(is_zero, _a.zeros_like(num), num / safe, name=name)


def _num_present(losses: _g.Tensor, weights_arg: Any, weights: _g.Tensor) -> _g.Tensor:
    """The number of losses with a non-zero weight (weights broadcast over the losses)."""
    if isinstance(weights_arg, float) and weights_arg != 0.0:
        return _m.cast(_a.size(losses), losses.dtype, name="num_elements")
    zeros = _a.zeros_like(weights)
    present = _a.where(_m.equal(weights, zeros), zeros, _a.ones_like(weights))
    return _m.reduce_sum(present * _a.ones_like(losses), name="num_present")


def compute_weighted_loss(losses: Any, weights: Any = 1.0, scope: Optional[str] = None,
                          loss_collection: Optional[str] = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> _g.Tensor:
    """losses * weights, reduced by `reduction`, in losses' dtype, added to loss_collection.

    losses: [batch_size, d1, ... dN]; weights: a scalar or a tensor of the same rank whose
    dimensions are each 1 or the losses' (a mismatch is InvalidArgumentError).  Returns a
    scalar, or the weighted losses' shape for Reduction.NONE.  Gradients reach the weights
    too; stop_gradient them if they depend on trainable values you do not want moved.
    """
    Reduction.validate(reduction)
    if weights is None:
        raise InvalidArgumentError("compute_weighted_loss: weights must not be None (use 1.0)")
    lt = _g.convert_to_tensor(losses)
    g = lt.graph
    # read by a v1 optimizer under a distribution strategy (distribute_lib.get_loss_reduction)
    g.__dict__["_last_loss_reduction"] = reduction
    with g.as_default(), g.name_scope(scope or "weighted_loss"):
        in_dt = lt.dtype
        if not in_dt.is_floating and not in_dt.is_integer:
            raise InvalidArgumentError(f"compute_weighted_loss: losses must be numbers, got {in_dt.name}")
        cdt = _compute_dtype(in_dt)
        lc = lt if lt.dtype == cdt else _m.cast(lt, cdt)
        w = weights if isinstance(weights, _g.Tensor) else _g.convert_to_tensor(
            weights, dtype=None if hasattr(weights, "handle") else cdt)
        if w.dtype != cdt:
            w = _m.cast(w, cdt)
        _check_broadcastable(w, lc)
        weighted = _m.multiply(lc, w)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            total = _m.reduce_sum(weighted)
            if reduction == Reduction.MEAN:
                loss = _safe_div(total, _m.reduce_sum(_a.ones_like(lc) * w))
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _safe_div(total, _num_present(lc, weights, w))
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_div(total, _m.cast(_a.size(lc), cdt, name="num_elements"))
            else:
                loss = total
        if loss.dtype != in_dt:
            loss = _m.cast(loss, in_dt)
        add_loss(loss, loss_collection)
        return loss


# -- the losses ------------------------------------------------------------------------------------


def _not_none(**kw: Any) -> None:
    for k, v in kw.items():
        if v is None:
            raise InvalidArgumentError(f"{k} must not be None.")


def _pair(a: Any, b: Any, what: Tuple[str, str], fn: str) -> Tuple[_g.Tensor, _g.Tensor]:
    """Both as float32 tensors of compatible shapes (TensorFlow's to_float in these losses)."""
    at = _g.convert_to_tensor(a)
    with at.graph.as_default():
        bt = _g.convert_to_tensor(b)
    at = at if at.dtype == _dt.float32 else _m.cast(at, _dt.float32)
    bt = bt if bt.dtype == _dt.float32 else _m.cast(bt, _dt.float32)
    if not at.shape.is_compatible_with(bt.shape):
        raise InvalidArgumentError(f"{fn}: {what[0]} of shape {at.shape} and {what[1]} of shape {bt.shape} are "
                                   "incompatible")
    return at, bt


def _graph_of(*xs: Any) -> _g.Graph:
    for x in xs:
        g = getattr(x, "graph", None)
        if isinstance(g, _g.Graph):
            return g
    return _g.get_default_graph()


def absolute_difference(labels: Any, predictions: Any, weights: Any = 1.0, scope: Optional[str] = None,
                        loss_collection: Optional[str] = GraphKeys.LOSSES,
                        reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> _g.Tensor:
    """|predictions - labels|, weighted and reduced (float32)."""
    _not_none(labels=labels, predictions=predictions)
    g = _graph_of(predictions, labels)
    with g.as_default(), g.name_scope(scope or "absolute_difference") as sc:
        p, y = _pair(predictions, labels, ("predictions", "labels"), "absolute_difference")
        return compute_weighted_loss(_m.abs(p - y), weights, sc, loss_collection, reduction)


def cosine_distance(labels: Any, predictions: Any, axis: Optional[int] = None, weights: Any = 1.0,
                    scope: Optional[str] = None, loss_collection: Optional[str] = GraphKeys.LOSSES,
                    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS, dim: Optional[int] = None) -> _g.Tensor:
    """1 - sum(predictions * labels, axis), for unit-normalized inputs (the axis is kept, size 1)."""
    if dim is not None:
        if axis is not None:
            raise InvalidArgumentError("cosine_distance: cannot specify both 'axis' and 'dim'")
        axis = dim
    if axis is None:
        raise InvalidArgumentError("cosine_distance: you must specify 'axis'.")
    _not_none(labels=labels, predictions=predictions)
    g = _graph_of(predictions, labels)
    with g.as_default(), g.name_scope(scope or "cosine_distance_loss") as sc:
        p, y = _pair(predictions, labels, ("predictions", "labels"), "cosine_distance")
        losses = constant(1.0) - _m.reduce_sum(p * y, axis=(int(axis),), keepdims=True)
        return compute_weighted_loss(losses, weights, sc, loss_collection, reduction)


def hinge_loss(labels: Any, logits: Any, weights: Any = 1.0, scope: Optional[str] = None,
               loss_collection: Optional[str] = GraphKeys.LOSSES,
               reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> _g.Tensor:
    """max(0, 1 - (2 * labels - 1) * logits) for labels in {0, 1} (float32)."""
    _not_none(labels=labels, logits=logits)
    g = _graph_of(logits, labels)
    with g.as_default(), g.name_scope(scope or "hinge_loss") as sc:
        x, y = _pair(logits, labels, ("logits", "labels"), "hinge_loss")
        ones = _a.ones_like(y)
        signs = y * constant(2.0) - ones
        return compute_weighted_loss(_n.relu(ones - signs * x), weights, sc, loss_collection, reduction)


def huber_loss(labels: Any, predictions: Any, weights: Any = 1.0, delta: float = 1.0, scope: Optional[str] = None,
               loss_collection: Optional[str] = GraphKeys.LOSSES,
               reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> _g.Tensor:
    """0.5 * x^2 where |x| <= delta, else 0.5 * delta^2 + delta * (|x| - delta); x = predictions - labels."""
    _not_none(labels=labels, predictions=predictions)
    g = _graph_of(predictions, labels)
    with g.as_default(), g.name_scope(scope or "huber_loss") as sc:
        p, y = _pair(predictions, labels, ("predictions", "labels"), "huber_loss")
        abs_error = _m.abs(p - y)
        d = constant(float(delta), dtype=_dt.float32)
        quadratic = _m.minimum(abs_error, d)
        linear = abs_error - quadratic  # |x| - delta beyond delta, 0 within
        losses = constant(0.5) * quadratic * quadratic + d * linear
        return compute_weighted_loss(losses, weights, sc, loss_collection, reduction)


def log_loss(labels: Any, predictions: Any, weights: Any = 1.0, epsilon: float = 1e-7, scope: Optional[str] = None,
             loss_collection: Optional[str] = GraphKeys.LOSSES,
             reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> _g.Tensor:
    """-labels * log(predictions + eps) - (1 - labels) * log(1 - predictions + eps) (float32)."""
    _not_none(labels=labels, predictions=predictions)
    g = _graph_of(predictions, labels)
    with g.as_default(), g.name_scope(scope or "log_loss") as sc:
        p, y = _pair(predictions, labels, ("predictions", "labels"), "log_loss")
        eps = constant(float(epsilon))
        one = constant(1.0)
        losses = -(y * _m.log(p + eps)) - (one - y) * _m.log(one - p + eps)
        return compute_weighted_loss(losses, weights, sc, loss_collection, reduction)


def mean_squared_error(labels: Any, predictions: Any, weights: Any = 1.0, scope: Optional[str] = None,
                       loss_collection: Optional[str] = GraphKeys.LOSSES,
                       reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> _g.Tensor:
    """(predictions - labels)^2, weighted and reduced (float32)."""
    _not_none(labels=labels, predictions=predictions)
    g = _graph_of(predictions, labels)
    with g.as_default(), g.name_scope(scope or "mean_squared_error") as sc:
        p, y = _pair(predictions, labels, ("predictions", "labels"), "mean_squared_error")
        return compute_weighted_loss(_m.squared_difference(p, y), weights, sc, loss_collection, reduction)


def _float_logits(logits: Any, fn: str) -> _g.Tensor:
    x = _g.convert_to_tensor(logits)
    if not x.dtype.is_floating:
        raise InvalidArgumentError(f"{fn}: logits must be floating-point, got {x.dtype.name}")
    return x


def sigmoid_cross_entropy(multi_class_labels: Any, logits: Any, weights: Any = 1.0, label_smoothing: float = 0,
                          scope: Optional[str] = None, loss_collection: Optional[str] = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> _g.Tensor:
    """Elementwise logistic loss of logits against labels in [0, 1] (of logits' shape).

    label_smoothing s > 0 moves the labels towards 1/2: labels * (1 - s) + 0.5 * s.
    """
    _not_none(multi_class_labels=multi_class_labels, logits=logits)
    g = _graph_of(logits, multi_class_labels)
    with g.as_default(), g.name_scope(scope or "sigmoid_cross_entropy_loss") as sc:
        x = _float_logits(logits, "sigmoid_cross_entropy")
        z = _g.convert_to_tensor(multi_class_labels)
        if not x.shape.is_compatible_with(z.shape):
            raise InvalidArgumentError(f"sigmoid_cross_entropy: logits of shape {x.shape} and multi_class_labels of "
                                       f"shape {z.shape} are incompatible")
        z = z if z.dtype == x.dtype else _m.cast(z, x.dtype)
        if label_smoothing > 0:
            z = z * constant(1.0 - label_smoothing, dtype=x.dtype) + constant(0.5 * label_smoothing, dtype=x.dtype)
        losses = _n.sigmoid_cross_entropy_with_logits(labels=z, logits=x, name="xentropy")
        return compute_weighted_loss(losses, weights, sc, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels: Any, logits: Any, weights: Any = 1.0, label_smoothing: float = 0,
                          scope: Optional[str] = None, loss_collection: Optional[str] = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> _g.Tensor:
    """Softmax cross entropy per example of logits [batch, classes] against one-hot labels.

    label_smoothing s > 0: labels * (1 - s) + s / num_classes.  No gradient reaches the
    labels.  weights broadcast against the per-example losses [batch].
    """
    _not_none(onehot_labels=onehot_labels, logits=logits)
    g = _graph_of(logits, onehot_labels)
    with g.as_default(), g.name_scope(scope or "softmax_cross_entropy_loss") as sc:
        x = _float_logits(logits, "softmax_cross_entropy")
        y = _g.convert_to_tensor(onehot_labels)
        if not x.shape.is_compatible_with(y.shape):
            raise InvalidArgumentError(f"softmax_cross_entropy: logits of shape {x.shape} and onehot_labels of shape "
                                       f"{y.shape} are incompatible")
        y = y if y.dtype == x.dtype else _m.cast(y, x.dtype)
        if label_smoothing > 0:
            shp = x.shape.merge_with(y.shape)
            n = shp.dims[-1] if shp.rank else None
            num_classes = constant(float(n), dtype=x.dtype) if n is not None else _m.cast(_a.shape(y)[-1], x.dtype)
            smooth = constant(label_smoothing, dtype=x.dtype)
            y = y * constant(1.0 - label_smoothing, dtype=x.dtype) + smooth / num_classes
        y = stop_gradient(y, name="labels_stop_gradient")
        losses = _n.softmax_cross_entropy_with_logits_v2(labels=y, logits=x, name="xentropy")
        return compute_weighted_loss(losses, weights, sc, loss_collection, reduction)


def _squeeze_last(t: _g.Tensor) -> _g.Tensor:
    return _a.squeeze(t, [-1])


def sparse_softmax_cross_entropy(labels: Any, logits: Any, weights: Any = 1.0, scope: Optional[str] = None,
                                 loss_collection: Optional[str] = GraphKeys.LOSSES,
                                 reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> _g.Tensor:
    """Softmax cross entropy of logits [batch, classes] against class ids labels [batch].

    labels of shape [batch, 1] and weights of shape [batch, 1] are squeezed to [batch], as
    TensorFlow does.  An out-of-range label fails the run with InvalidArgumentError.
    """
    _not_none(labels=labels, logits=logits)
    g = _graph_of(logits, labels)
    with g.as_default(), g.name_scope(scope or "sparse_softmax_cross_entropy_loss") as sc:
        x = _float_logits(logits, "sparse_softmax_cross_entropy")
        y = _g.convert_to_tensor(labels)
        xr, yr = x.shape.rank, y.shape.rank
        if xr is not None and yr is not None and yr == xr and y.shape.dims[-1] in (None, 1):
            y = _squeeze_last(y)  # [batch, 1] ids
            yr = xr - 1
        if not isinstance(weights, (int, float)):
            w = _g.convert_to_tensor(weights)
            if w.shape.rank is not None and yr is not None and w.shape.rank == yr + 1 \
                    and w.shape.dims[-1] in (None, 1):
                weights = _squeeze_last(w)
        losses = _n.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x, name="xentropy")
        return compute_weighted_loss(losses, weights, sc, loss_collection, reduction)


from .losses_pairwise import mean_pairwise_squared_error  # noqa: F401,E402  (its own module; uses the helpers above)

__all__ += ["mean_pairwise_squared_error"]
