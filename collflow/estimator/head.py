"""The heads of TF1's canned estimators: from logits to predictions, the training loss, the
train op and the eval metrics, as TF 1.x's binary (sigmoid), multi-class (softmax) and
regression (squared error) heads.  The default loss reduction is TF1's Reduction.SUM."""
from __future__ import annotations

import collections
from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import nn_ops as _nn
from ..graph.ops.check_ops import assert_less_equal, assert_non_negative
from ..graph.ops.constant_op import constant, group, identity
from ..graph.ops.lookup_ops import index_table_from_tensor
from ..graph.ops.misc_ops import range as _range
from ..graph.ops.slicing_ops import gather
from ..graph.ops.string_more_ops import as_string
from ..nn import losses as _losses
from ..nn import metrics as _metrics
from ..summary import summary_ops as _summary
from ..train.global_step import get_global_step
from .model_fn import EstimatorSpec, ModeKeys

__all__ = ["BinaryHead", "MultiClassHead", "RegressionHead", "weights_from_features", "LossSpec", "summary_key",
           "append_update_ops", "call_loss_fn"]


def weights_from_features(features: Dict[str, Any], weight_column: Any) -> Any:
    """The example weights [batch, 1] (float32) named by weight_column (a key or a numeric column), or 1."""
    if weight_column is None:
        return 1.0
    key = weight_column if isinstance(weight_column, str) else getattr(weight_column, "key", None)
    if key is None:
        raise TypeError(f"Weight column must be either a string or _NumericColumn. Given type: {type(weight_column)}")
    if key not in features:
        raise ValueError(f"weight_column {key!r} is not in the features: {sorted(features)}")
    w = features[key]
    normalizer = getattr(weight_column, "normalizer_fn", None)
    if normalizer is not None:
        # a numeric column's weights are its dense tensor: normalizer_fn on the raw feature, then float
        w = normalizer(w)
    w = _m.cast(w, _dt.float32)
    if w.shape.rank == 1:
        w = _a.expand_dims(w, -1)
    return w


def _as_column(labels: Any, dim: int) -> _g.Tensor:
    """Labels [batch] or [batch, dim] as [batch, dim]."""
    if isinstance(labels, dict):
        raise ValueError("labels must be a tensor, not a dict, for a canned estimator's head")
    t = _g.convert_to_tensor(labels)
    if t.shape.rank == 1:
        t = _a.expand_dims(t, -1)
    if t.shape.rank is not None and t.shape.rank != 2:
        raise ValueError(f"labels shape must be [batch_size, {dim}]. Given: {t.shape}")
    if t.shape.rank == 2 and t.shape[1] is not None and int(t.shape[1]) != dim:
        raise ValueError(f"Mismatched label shape. Expected labels dimension={dim}. Received {int(t.shape[1])}.")
    return t


def get_optimizer(opt: Any, learning_rate: float, slot_prefix: str = "") -> Any:
    """An Optimizer from TF's names ('Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD') at learning_rate,
    an Optimizer, or a callable returning one.  slot_prefix names a named optimizer's slots
    `<variable>/<slot_prefix>/<name>`, as TF's canned estimators name theirs (their variables
    are one-part partitioned variables: `.../weights/part_0/Ftrl`, `.../kernel/t_0/Adagrad`)."""
    from ..train import optimizers as _o
    names = {"Adagrad": _o.AdagradOptimizer, "Adam": _o.AdamOptimizer, "Ftrl": _o.FtrlOptimizer,
             "RMSProp": _o.RMSPropOptimizer, "SGD": _o.GradientDescentOptimizer}
    if isinstance(opt, str):
        if opt not in names:
            raise ValueError(f"Unsupported optimizer name: {opt}. Supported names are: {sorted(names)}")
        name = "GradientDescent" if opt == "SGD" else opt  # the optimizers' default names
        return names[opt](learning_rate=learning_rate, name=f"{slot_prefix}/{name}" if slot_prefix else name)
    if callable(opt) and not hasattr(opt, "minimize"):
        opt = opt()
    if not hasattr(opt, "minimize"):
        raise ValueError(f"The given object is not an Optimizer instance. Given: {opt}")
    return opt


LossSpec = collections.namedtuple("LossSpec", ["training_loss", "unreduced_loss", "weights", "processed_labels"])


def summary_key(head_name: Optional[str], key: str) -> str:
    """A metric or summary key of a named head: `<key>/<head name>` (TF1's _summary_key)."""
    return f"{key}/{head_name}" if head_name else key


def append_update_ops(train_op: Any) -> Any:
    """train_op grouped with the UPDATE_OPS collection (batch norm's moving averages), as
    TF1's heads do, so a canned model's batch_norm statistics move while it trains."""
    updates = _g.get_collection(_g.GraphKeys.UPDATE_OPS)
    return group(train_op, *updates) if updates else train_op


def make_train_op(loss: Any, train_op_fn: Any, optimizer: Any) -> Any:
    """A head's train op: train_op_fn(loss) or optimizer.minimize(loss) (exactly one given),
    grouped with UPDATE_OPS (TF1's heads)."""
    if train_op_fn is not None and optimizer is not None:
        raise ValueError("train_op_fn and optimizer cannot both be set.")
    if train_op_fn is not None:
        train_op = train_op_fn(loss)
    elif optimizer is not None:
        train_op = optimizer.minimize(loss, global_step=get_global_step())
    else:
        raise ValueError("train_op_fn and optimizer cannot both be None.")
    return append_update_ops(train_op)


def call_loss_fn(loss_fn: Callable, labels: Any, logits: Any, features: Any, expected_loss_dim: int) -> Any:
    """A user loss_fn(labels, logits[, features]) whose unreduced loss must be [batch, dim]."""
    import inspect
    try:
        names = set(inspect.signature(loss_fn).parameters)
    except (TypeError, ValueError):
        names = set()
    kwargs = {"features": features} if "features" in names else {}
    loss = _g.convert_to_tensor(loss_fn(labels=labels, logits=logits, **kwargs))
    if loss.shape.rank is not None and (loss.shape.rank < 2 or (loss.shape[-1] is not None
                                                               and int(loss.shape[-1]) != expected_loss_dim)):
        raise ValueError(f"loss_fn must return Tensor of shape [D0, D1, ... DN, {expected_loss_dim}]. "
                         f"Given: {loss.shape}")
    return loss


class _Head:
    logits_dimension = 1
    n_classes: Optional[int] = None
    _name: Optional[str] = None          # the public heads' name: name scope and metric key suffix
    _loss_fn: Optional[Callable] = None  # the public heads' custom loss

    def __init__(self, weight_column: Any = None, loss_reduction: str = _losses.Reduction.SUM):
        if loss_reduction not in _losses.Reduction.all() or loss_reduction == _losses.Reduction.NONE:
            raise ValueError(f"Invalid loss_reduction: {loss_reduction}")
        self._weight_column = weight_column
        self._reduction = loss_reduction

    # subclasses: _labels(labels) -> processed labels; _unweighted_loss(labels, logits) -> [batch, k];
    # _predictions(logits) -> dict; _eval_metrics(labels, predictions, unweighted, weights) -> dict

    def _export_outputs(self, predictions: Dict[str, Any]) -> dict:
        from .export import canned_export_outputs
        return canned_export_outputs(self._export_kind, predictions)

    def _loss_fn_labels(self, processed: Any) -> Any:
        """The labels a custom loss_fn sees (TF1's processed labels)."""
        return processed

    def _loss(self, processed: Any, logits: Any, features: Any) -> Any:
        if self._loss_fn is None:
            return self._unweighted_loss(processed, logits)
        dim = self.logits_dimension if self.n_classes is None else 1
        return call_loss_fn(self._loss_fn, self._loss_fn_labels(processed), logits, features, dim)

    def create_loss(self, features: Dict[str, Any], mode: str, logits: Any, labels: Any) -> LossSpec:
        """TF1's LossSpec(training_loss, unreduced_loss, weights, processed_labels)."""
        logits = _g.convert_to_tensor(logits)
        processed = self._labels(labels)
        unweighted = self._loss(processed, logits, features)
        weights = weights_from_features(features, self._weight_column)
        training_loss = _losses.compute_weighted_loss(unweighted, weights=weights, reduction=self._reduction)
        return LossSpec(training_loss, unweighted, weights, processed)

    def create_estimator_spec(self, features: Dict[str, Any], mode: str, logits: Any, labels: Any = None,
                              optimizer: Any = None, train_op_fn: Optional[Callable] = None,
                              regularization_losses: Optional[Sequence[Any]] = None) -> EstimatorSpec:
        name = self._name
        with _g.name_scope(name or "head"):
            logits = _g.convert_to_tensor(logits)
            with _g.name_scope("predictions"):
                predictions = self._predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(mode, predictions=predictions, export_outputs=self._export_outputs(predictions))
            training_loss, unweighted, weights, processed = self.create_loss(features, mode, logits, labels)
            reg = _m.add_n(list(regularization_losses)) if regularization_losses else None
            loss = _m.add(training_loss, reg) if reg is not None else training_loss
            if mode == ModeKeys.EVAL:
                with _g.name_scope("metrics"):
                    ops = self._eval_metrics(processed, predictions, unweighted, weights)
                    if reg is not None:
                        ops["regularization_loss"] = _metrics.mean(reg, name="regularization_loss")
                ops = {summary_key(name, k): v for k, v in ops.items()}
                return EstimatorSpec(mode, predictions=predictions, loss=loss, eval_metric_ops=ops)
            train_op = make_train_op(loss, train_op_fn, optimizer)
        # at the root name scope, as TF1 (whose canned models call the head inside 'dnn'/'linear')
        with _g.name_scope(""):
            _summary.scalar(summary_key(name, "loss"), loss)
            wsum = _m.reduce_sum(weights * _a.ones_like(unweighted))
            _summary.scalar(summary_key(name, "average_loss"),
                            training_loss / wsum if self._reduction == _losses.Reduction.SUM else training_loss)
            if reg is not None:
                _summary.scalar(summary_key(name, "regularization_loss"), reg)
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)


class _ClassHead(_Head):
    def __init__(self, n_classes: int, weight_column: Any = None, label_vocabulary: Optional[Sequence[str]] = None,
                 loss_reduction: str = _losses.Reduction.SUM):
        super().__init__(weight_column, loss_reduction)
        if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
            raise ValueError(f"label_vocabulary should be a list or a tuple. Given type: {type(label_vocabulary)}")
        if label_vocabulary is not None and len(label_vocabulary) != n_classes:
            raise ValueError(f"label_vocabulary has {len(label_vocabulary)} entries, n_classes is {n_classes}")
        self.n_classes = n_classes
        self._vocab = list(label_vocabulary) if label_vocabulary is not None else None

    def _labels(self, labels: Any) -> _g.Tensor:
        """Class ids [batch, 1] (int64)."""
        if labels is None:
            raise ValueError("You must provide a labels Tensor. Given: None. Suggested troubleshooting steps: Check "
                             "that your data contain your label feature. Check that your input_fn properly parses "
                             "and returns labels.")
        t = _as_column(labels, 1)
        if self._vocab is not None:
            if t.dtype != _dt.string:
                raise ValueError("Labels dtype should be string if there is a vocabulary. Given: " + str(t.dtype))
            return index_table_from_tensor(self._vocab, name="class_id_lookup").lookup(t)
        if t.dtype == _dt.string:
            raise ValueError("Labels dtype should be integer. Instead got string: give label_vocabulary")
        return _m.cast(t, _dt.int64)

    def _class_predictions(self, two_logits: _g.Tensor, out: Dict[str, Any]) -> Dict[str, Any]:
        class_ids = _a.expand_dims(_m.argmax(two_logits, axis=1), -1, name="class_ids")
        class_ids = _m.cast(class_ids, _dt.int64)
        n = self.n_classes
        # TF1 tiles tf.range(n_classes) over the batch: all_class_ids is int32 (class_ids int64)
        all_ids = _m.add(_a.zeros_like(_m.cast(class_ids, _dt.int32)), _a.expand_dims(_range(n), 0),
                         name="all_class_ids")
        if self._vocab is not None:
            vocab = constant(np.asarray(self._vocab, dtype=object), dtype=_dt.string)
            classes = gather(vocab, class_ids, name="str_classes")
            all_classes = gather(vocab, all_ids, name="all_classes")
        else:
            classes = as_string(class_ids, name="str_classes")
            all_classes = as_string(all_ids, name="all_classes")
        out.update(class_ids=class_ids, classes=classes, all_class_ids=all_ids, all_classes=all_classes)
        return out


class BinaryHead(_ClassHead):
    """TF1's binary logistic head: sigmoid cross entropy on one logit."""

    _export_kind = "binary"

    def __init__(self, weight_column: Any = None, label_vocabulary: Optional[Sequence[str]] = None,
                 loss_reduction: str = _losses.Reduction.SUM):
        super().__init__(2, weight_column, label_vocabulary, loss_reduction)

    def _labels(self, labels: Any) -> _g.Tensor:
        """TF1's binary labels: float32 [batch, 1] in [0, 1] (soft labels train as given), range-checked
        when the graph runs; string labels go through the vocabulary first."""
        if self._vocab is None and labels is not None:
            t = _as_column(labels, 1)
            if t.dtype == _dt.string:
                raise ValueError("Labels dtype should be integer. Instead got string: give label_vocabulary")
        else:
            t = super()._labels(labels)
        t = _m.cast(t, _dt.float32)
        with _g.name_scope("assert_range"):
            msg = "Labels must be in range [0, 1]"
            checks = [assert_less_equal(t, constant(1.0, dtype=_dt.float32), message=msg),
                      assert_non_negative(t, message=msg)]
        with _g.control_dependencies(checks):
            return identity(t)

    def _predictions(self, logits: _g.Tensor) -> Dict[str, Any]:
        logistic = _nn.sigmoid(logits, name="logistic")
        two = _a.concat([_a.zeros_like(logits), logits], 1, name="two_class_logits")
        probabilities = _nn.softmax(two, name="probabilities")
        return self._class_predictions(two, {"logits": logits, "logistic": logistic,
                                             "probabilities": probabilities})

    def _unweighted_loss(self, labels: _g.Tensor, logits: _g.Tensor) -> _g.Tensor:
        return _nn.sigmoid_cross_entropy_with_logits(labels=_m.cast(labels, _dt.float32), logits=logits,
                                                     name="loss")

    def _eval_metrics(self, labels: Any, predictions: Dict[str, Any], unweighted: Any, weights: Any) -> dict:
        w = None if isinstance(weights, float) else weights
        flabels = _m.cast(labels, _dt.float32)
        label_mean = _metrics.mean(flabels, weights=w, name="label/mean")
        baseline = _m.maximum(label_mean[0], 1.0 - label_mean[0])
        baseline_up = _m.maximum(label_mean[1], 1.0 - label_mean[1])
        return {
            "average_loss": _metrics.mean(unweighted, weights=w, name="average_loss"),
            "accuracy": _metrics.accuracy(labels, predictions["class_ids"], weights=w, name="accuracy"),
            "precision": _metrics.precision(labels, predictions["class_ids"], weights=w, name="precision"),
            "recall": _metrics.recall(labels, predictions["class_ids"], weights=w, name="recall"),
            "prediction/mean": _metrics.mean(predictions["logistic"], weights=w, name="prediction/mean"),
            "label/mean": label_mean,
            "accuracy_baseline": (baseline, baseline_up),
            "auc": _metrics.auc(labels, predictions["logistic"], weights=w, curve="ROC", name="auc"),
            "auc_precision_recall": _metrics.auc(labels, predictions["logistic"], weights=w, curve="PR",
                                                 name="auc_precision_recall"),
        }


class MultiClassHead(_ClassHead):
    """TF1's multi-class head: softmax cross entropy on n_classes logits."""

    _export_kind = "multi_class"

    def __init__(self, n_classes: int, weight_column: Any = None, label_vocabulary: Optional[Sequence[str]] = None,
                 loss_reduction: str = _losses.Reduction.SUM):
        if n_classes is None or n_classes <= 2:
            raise ValueError(f"n_classes must be > 2: {n_classes}")
        super().__init__(n_classes, weight_column, label_vocabulary, loss_reduction)
        self.logits_dimension = n_classes

    def _labels(self, labels: Any) -> _g.Tensor:
        """Class ids [batch, 1] checked in [0, n_classes) when the graph runs, with TF1's messages
        (an out-of-vocabulary label looks up as -1)."""
        ids = super()._labels(labels)
        with _g.name_scope("assert_range"):
            checks = [assert_less_equal(ids, constant(self.n_classes - 1, dtype=ids.dtype),
                                        message="Labels must <= n_classes - 1"),
                      assert_non_negative(ids, message="Labels must >= 0")]
        with _g.control_dependencies(checks):
            return identity(ids)

    def _predictions(self, logits: _g.Tensor) -> Dict[str, Any]:
        probabilities = _nn.softmax(logits, name="probabilities")
        return self._class_predictions(logits, {"logits": logits, "probabilities": probabilities})

    def _unweighted_loss(self, labels: _g.Tensor, logits: _g.Tensor) -> _g.Tensor:
        ids = _a.squeeze(labels, axis=[1])
        loss = _nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=logits)
        return _a.expand_dims(loss, -1, name="loss")

    def _eval_metrics(self, labels: Any, predictions: Dict[str, Any], unweighted: Any, weights: Any) -> dict:
        w = None if isinstance(weights, float) else weights
        return {"average_loss": _metrics.mean(unweighted, weights=w, name="average_loss"),
                "accuracy": _metrics.accuracy(labels, predictions["class_ids"], weights=w, name="accuracy")}


class RegressionHead(_Head):
    """TF1's regression head: squared error on label_dimension outputs."""

    _export_kind = "regression"

    def __init__(self, label_dimension: int = 1, weight_column: Any = None,
                 loss_reduction: str = _losses.Reduction.SUM):
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        super().__init__(weight_column, loss_reduction)
        self.logits_dimension = label_dimension

    def _predictions(self, logits: _g.Tensor) -> Dict[str, Any]:
        return {"predictions": identity(logits, name="predictions")}

    def _labels(self, labels: Any) -> _g.Tensor:
        if labels is None:
            raise ValueError("You must provide a labels Tensor. Given: None.")
        return _m.cast(_as_column(labels, self.logits_dimension), _dt.float32)

    def _unweighted_loss(self, labels: _g.Tensor, logits: _g.Tensor) -> _g.Tensor:
        return _m.squared_difference(logits, labels, name="loss")

    def _eval_metrics(self, labels: Any, predictions: Dict[str, Any], unweighted: Any, weights: Any) -> dict:
        w = None if isinstance(weights, float) else weights
        return {"average_loss": _metrics.mean(unweighted, weights=w, name="average_loss"),
                "prediction/mean": _metrics.mean(predictions["predictions"], weights=w, name="prediction/mean"),
                "label/mean": _metrics.mean(labels, weights=w, name="label/mean")}
