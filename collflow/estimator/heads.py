"""The public heads API: TF 2's tf.estimator.BinaryClassHead, MultiClassHead, RegressionHead,
PoissonRegressionHead, LogisticRegressionHead, MultiLabelHead and MultiHead, and TF 1.15's
tf.contrib.estimator factories (binary_classification_head, multi_class_head, ...) that make
them.  They are thin wrappers of the canned estimators' internal heads (head.py) adding a
`name` (the name scope and the `<metric>/<name>` key suffix), `loss_fn`, `thresholds` and
`inverse_link_fn`; their default loss reduction is SUM_OVER_BATCH_SIZE, as TF's public heads."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import nn_ops as _nn
from ..graph.ops.constant_op import constant
from ..graph.ops.lookup_ops import index_table_from_tensor
from ..graph.ops.misc_ops import range as _range
from ..graph.ops.nn_composites import log_poisson_loss
from ..graph.ops.slicing_ops import gather
from ..graph.ops.string_more_ops import as_string
from ..graph.sparse_tensor import SparseTensor
from ..nn import losses as _losses
from ..nn import metrics as _metrics
from . import head as _h
from .export import DEFAULT_SERVING_KEY, ClassificationOutput, PredictOutput

__all__ = ["BinaryClassHead", "MultiClassHead", "RegressionHead", "PoissonRegressionHead", "LogisticRegressionHead",
           "MultiLabelHead", "binary_classification_head", "multi_class_head", "regression_head",
           "poisson_regression_head", "logistic_regression_head", "multi_label_head"]

_SOBS = _losses.Reduction.SUM_OVER_BATCH_SIZE
_EPSILON = 1e-7  # TF1's precision_at_thresholds / recall_at_thresholds add it to the denominators


def _check_name(name: Optional[str]) -> Optional[str]:
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a string. Given: {type(name)}")
    return name


def _check_thresholds(thresholds: Optional[Sequence[float]]) -> tuple:
    out = tuple(thresholds or ())
    for t in out:
        if t <= 0.0 or t >= 1.0:
            raise ValueError(f"thresholds not in (0, 1): {out}.")
    return out


def _at_threshold_metrics(labels: Any, probabilities: Any, weights: Any, thresholds: Sequence[float]) -> dict:
    """TF1's `accuracy/positive_threshold_<t>` (probability >= t), `precision/...` and
    `recall/...` (probability > t, with TF's 1e-7 in the denominators)."""
    out = {}
    flabels = _m.cast(labels, _dt.float32)
    for t in thresholds:
        acc_key, prec_key, rec_key = (f"{k}/positive_threshold_{t:g}" for k in ("accuracy", "precision", "recall"))
        above_eq = _m.cast(_m.greater_equal(probabilities, t), _dt.float32)
        out[acc_key] = _metrics.accuracy(flabels, above_eq, weights=weights, name=acc_key)
        above = _m.greater(probabilities, t)
        tp = _metrics.true_positives(flabels, above, weights=weights, name=f"{prec_key}/true_positives")
        fp = _metrics.false_positives(flabels, above, weights=weights, name=f"{prec_key}/false_positives")
        out[prec_key] = tuple(_m.divide(tp[i], _EPSILON + tp[i] + fp[i]) for i in range(2))
        tp = _metrics.true_positives(flabels, above, weights=weights, name=f"{rec_key}/true_positives")
        fn = _metrics.false_negatives(flabels, above, weights=weights, name=f"{rec_key}/false_negatives")
        out[rec_key] = tuple(_m.divide(tp[i], _EPSILON + tp[i] + fn[i]) for i in range(2))
    return out


class _Public:
    """The public heads' read-only properties (TF's Head interface)."""

    name = property(lambda self: self._name)
    loss_reduction = property(lambda self: self._reduction)

    def predictions(self, logits: Any, keys: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        """The predictions dict from logits (TF 2's Head.predictions), optionally only `keys`."""
        with _g.name_scope(self._name or "head"), _g.name_scope("predictions"):
            out = self._predictions(_g.convert_to_tensor(logits))
        return out if keys is None else {k: out[k] for k in keys}

    def loss(self, labels: Any, logits: Any, features: Any = None, mode: Any = None,
             regularization_losses: Optional[Sequence[Any]] = None) -> Any:
        """The reduced training loss plus the regularization losses (TF 2's Head.loss)."""
        spec = self.create_loss(features or {}, mode, logits, labels)
        if regularization_losses:
            return _m.add(spec.training_loss, _m.add_n(list(regularization_losses)))
        return spec.training_loss


class BinaryClassHead(_Public, _h.BinaryHead):
    """Sigmoid cross entropy on one logit (TF's BinaryClassHead); `thresholds` add the
    accuracy/precision/recall at each threshold to the eval metrics."""

    def __init__(self, weight_column: Any = None, thresholds: Optional[Sequence[float]] = None,
                 label_vocabulary: Optional[Sequence[str]] = None, loss_reduction: str = _SOBS,
                 loss_fn: Optional[Callable] = None, name: Optional[str] = None):
        super().__init__(weight_column, label_vocabulary, loss_reduction)
        self._thresholds = _check_thresholds(thresholds)
        self._loss_fn = loss_fn
        self._name = _check_name(name)

    def _loss_fn_labels(self, processed: Any) -> Any:
        return _m.cast(processed, _dt.float32)  # TF1's binary head hands loss_fn float labels

    def _eval_metrics(self, labels: Any, predictions: Dict[str, Any], unweighted: Any, weights: Any) -> dict:
        ops = super()._eval_metrics(labels, predictions, unweighted, weights)
        w = None if isinstance(weights, float) else weights
        ops.update(_at_threshold_metrics(labels, predictions["logistic"], w, self._thresholds))
        return ops


class MultiClassHead(_Public, _h.MultiClassHead):
    """Softmax cross entropy on n_classes logits (TF's MultiClassHead)."""

    def __init__(self, n_classes: int, weight_column: Any = None, label_vocabulary: Optional[Sequence[str]] = None,
                 loss_reduction: str = _SOBS, loss_fn: Optional[Callable] = None, name: Optional[str] = None):
        super().__init__(n_classes, weight_column, label_vocabulary, loss_reduction)
        self._loss_fn = loss_fn
        self._name = _check_name(name)


class RegressionHead(_Public, _h.RegressionHead):
    """Squared error on label_dimension outputs (TF's RegressionHead); with inverse_link_fn the
    predictions are inverse_link_fn(logits) and the logits are a prediction too."""

    def __init__(self, label_dimension: int = 1, weight_column: Any = None, loss_reduction: str = _SOBS,
                 loss_fn: Optional[Callable] = None, inverse_link_fn: Optional[Callable] = None,
                 name: Optional[str] = None):
        super().__init__(label_dimension, weight_column, loss_reduction)
        self._loss_fn = loss_fn
        self._inverse_link_fn = inverse_link_fn
        self._name = _check_name(name)

    def _predictions(self, logits: _g.Tensor) -> Dict[str, Any]:
        if self._inverse_link_fn is None:
            return super()._predictions(logits)
        return {"predictions": self._inverse_link_fn(logits), "logits": logits}


class PoissonRegressionHead(RegressionHead):
    """Poisson loss on log-rates (TF's PoissonRegressionHead): predictions exp(logits)."""

    def __init__(self, label_dimension: int = 1, weight_column: Any = None, loss_reduction: str = _SOBS,
                 compute_full_loss: bool = True, name: Optional[str] = None):
        def poisson_loss(labels: Any, logits: Any) -> Any:
            return log_poisson_loss(targets=labels, log_input=logits, compute_full_loss=compute_full_loss)
        super().__init__(label_dimension, weight_column, loss_reduction, loss_fn=poisson_loss,
                         inverse_link_fn=_m.exp, name=name)


class LogisticRegressionHead(RegressionHead):
    """Sigmoid cross entropy against labels in [0, 1] (TF's LogisticRegressionHead):
    predictions sigmoid(logits)."""

    def __init__(self, weight_column: Any = None, loss_reduction: str = _SOBS, name: Optional[str] = None):
        def logistic_loss(labels: Any, logits: Any) -> Any:
            return _nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        super().__init__(1, weight_column, loss_reduction, loss_fn=logistic_loss, inverse_link_fn=_nn.sigmoid,
                         name=name)


class MultiLabelHead(_Public, _h._Head):
    """Independent sigmoid cross entropies on n_classes logits, averaged over the classes
    (TF's MultiLabelHead); labels are multi-hot [batch, n_classes] (strings of
    label_vocabulary, or ids, as a SparseTensor become multi-hot too)."""

    _export_kind = "multi_label"

    def __init__(self, n_classes: int, weight_column: Any = None, thresholds: Optional[Sequence[float]] = None,
                 label_vocabulary: Optional[Sequence[str]] = None, loss_reduction: str = _SOBS,
                 loss_fn: Optional[Callable] = None, classes_for_class_based_metrics: Optional[Sequence[Any]] = None,
                 name: Optional[str] = None):
        if n_classes is None or n_classes < 2:
            raise ValueError(f"n_classes must be > 1 for multi-label classification. Given: {n_classes}")
        if label_vocabulary is not None:
            if not isinstance(label_vocabulary, (list, tuple)):
                raise ValueError(f"label_vocabulary must be a list or tuple. Given type: {type(label_vocabulary)}")
            if len(label_vocabulary) != n_classes:
                raise ValueError(f"Length of label_vocabulary must be n_classes ({n_classes}). "
                                 f"Given: {len(label_vocabulary)}")
        super().__init__(weight_column, loss_reduction)
        self.n_classes = self.logits_dimension = n_classes
        self._thresholds = _check_thresholds(thresholds)
        self._vocab = list(label_vocabulary) if label_vocabulary is not None else None
        self._loss_fn = loss_fn
        self._name = _check_name(name)
        ids = []
        for c in classes_for_class_based_metrics or ():
            if isinstance(c, str):
                if self._vocab is None or c not in self._vocab:
                    raise ValueError(f"class {c!r} is not in label_vocabulary {self._vocab}")
                c = self._vocab.index(c)
            if not 0 <= int(c) < n_classes:
                raise ValueError(f"All classes_for_class_based_metrics must be in range [0, {n_classes - 1}]. "
                                 f"Given: {classes_for_class_based_metrics}")
            ids.append(int(c))
        self._class_ids = tuple(ids)

    def _loss(self, processed: Any, logits: Any, features: Any) -> Any:
        # a custom loss is per example ([batch, 1]), as the averaged sigmoid loss
        if self._loss_fn is not None:
            return _h.call_loss_fn(self._loss_fn, processed, logits, features, 1)
        return self._unweighted_loss(processed, logits)

    def _labels(self, labels: Any) -> _g.Tensor:
        """Multi-hot int64 [batch, n_classes]."""
        if labels is None:
            raise ValueError("You must provide a labels Tensor. Given: None.")
        from ..graph.ops.sparse_extra_ops import sparse_to_indicator
        if isinstance(labels, SparseTensor):
            ids = labels
            if labels.dtype == _dt.string:
                if self._vocab is None:
                    raise ValueError("Labels dtype should be integer. Instead got string: give label_vocabulary")
                table = index_table_from_tensor(self._vocab, name="class_id_lookup")
                ids = table.lookup(labels)
            return _m.cast(sparse_to_indicator(ids, self.n_classes), _dt.int64)
        t = _g.convert_to_tensor(labels)
        if t.shape.rank != 2 or (t.shape[1] is not None and int(t.shape[1]) != self.n_classes):
            raise ValueError(f"labels shape must be [D0, D1, ... DN, {self.n_classes}]. Given: {t.shape}")
        return _m.cast(t, _dt.int64)

    def _unweighted_loss(self, labels: _g.Tensor, logits: _g.Tensor) -> _g.Tensor:
        per_class = _nn.sigmoid_cross_entropy_with_logits(labels=_m.cast(labels, _dt.float32), logits=logits)
        return _m.reduce_mean(per_class, axis=-1, keepdims=True, name="loss")  # TF: the mean over the classes

    def _predictions(self, logits: _g.Tensor) -> Dict[str, Any]:
        return {"logits": logits, "probabilities": _nn.sigmoid(logits, name="probabilities")}

    def _export_outputs(self, predictions: Dict[str, Any]) -> dict:
        probs = predictions["probabilities"]
        # the class names row by row, [batch, n_classes] (a broadcast add, as the class heads' all_classes)
        ids = _m.add(_m.cast(_a.zeros_like(probs), _dt.int64),
                     _a.expand_dims(_m.cast(_range(self.n_classes), _dt.int64), 0))
        if self._vocab is not None:
            classes = gather(constant(np.asarray(self._vocab, dtype=object), dtype=_dt.string), ids)
        else:
            classes = as_string(ids)
        cls = ClassificationOutput(scores=probs, classes=classes)
        return {DEFAULT_SERVING_KEY: cls, "classification": cls, "predict": PredictOutput(dict(predictions))}

    def _eval_metrics(self, labels: Any, predictions: Dict[str, Any], unweighted: Any, weights: Any) -> dict:
        w = None if isinstance(weights, float) else weights
        probs = predictions["probabilities"]
        # [batch, 1] example weights broadcast over the classes
        wb = None if w is None else _m.multiply(w, _a.ones_like(probs))
        ops = {"average_loss": _metrics.mean(unweighted, weights=w, name="average_loss"),
               "auc": _metrics.auc(labels, probs, weights=wb, name="auc"),
               "auc_precision_recall": _metrics.auc(labels, probs, weights=wb, curve="PR",
                                                    name="auc_precision_recall")}
        ops.update(_at_threshold_metrics(labels, probs, wb, self._thresholds))
        for c in self._class_ids:
            cp, cl = probs[:, c:c + 1], labels[:, c:c + 1]
            key = f"probability_mean/class{c}"
            ops[key] = _metrics.mean(cp, weights=w, name=key)
            ops[f"auc/class{c}"] = _metrics.auc(cl, cp, weights=w, name=f"auc/class{c}")
            ops[f"auc_precision_recall/class{c}"] = _metrics.auc(cl, cp, weights=w, curve="PR",
                                                                 name=f"auc_precision_recall/class{c}")
        return ops


# -- TF 1.15's tf.contrib.estimator factories ------------------------------------------------------------

def binary_classification_head(weight_column: Any = None, thresholds: Optional[Sequence[float]] = None,
                               label_vocabulary: Optional[Sequence[str]] = None, loss_reduction: str = _SOBS,
                               loss_fn: Optional[Callable] = None, name: Optional[str] = None) -> BinaryClassHead:
    """tf.contrib.estimator.binary_classification_head."""
    return BinaryClassHead(weight_column, thresholds, label_vocabulary, loss_reduction, loss_fn, name)


def multi_class_head(n_classes: int, weight_column: Any = None, label_vocabulary: Optional[Sequence[str]] = None,
                     loss_reduction: str = _SOBS, loss_fn: Optional[Callable] = None,
                     name: Optional[str] = None) -> MultiClassHead:
    """tf.contrib.estimator.multi_class_head."""
    return MultiClassHead(n_classes, weight_column, label_vocabulary, loss_reduction, loss_fn, name)


def regression_head(weight_column: Any = None, label_dimension: int = 1, loss_reduction: str = _SOBS,
                    loss_fn: Optional[Callable] = None, inverse_link_fn: Optional[Callable] = None,
                    name: Optional[str] = None) -> RegressionHead:
    """tf.contrib.estimator.regression_head (weight_column first, as TF1's)."""
    return RegressionHead(label_dimension, weight_column, loss_reduction, loss_fn, inverse_link_fn, name)


def poisson_regression_head(weight_column: Any = None, label_dimension: int = 1, loss_reduction: str = _SOBS,
                            compute_full_loss: bool = True, name: Optional[str] = None) -> PoissonRegressionHead:
    """tf.contrib.estimator.poisson_regression_head."""
    return PoissonRegressionHead(label_dimension, weight_column, loss_reduction, compute_full_loss, name)


def logistic_regression_head(weight_column: Any = None, loss_reduction: str = _SOBS,
                             name: Optional[str] = None) -> LogisticRegressionHead:
    """tf.contrib.estimator.logistic_regression_head."""
    return LogisticRegressionHead(weight_column, loss_reduction, name)


def multi_label_head(n_classes: int, weight_column: Any = None, thresholds: Optional[Sequence[float]] = None,
                     label_vocabulary: Optional[Sequence[str]] = None, loss_reduction: str = _SOBS,
                     loss_fn: Optional[Callable] = None, classes_for_class_based_metrics: Optional[Sequence[Any]] = None,
                     name: Optional[str] = None) -> MultiLabelHead:
    """tf.contrib.estimator.multi_label_head."""
    return MultiLabelHead(n_classes, weight_column, thresholds, label_vocabulary, loss_reduction, loss_fn,
                          classes_for_class_based_metrics, name)
