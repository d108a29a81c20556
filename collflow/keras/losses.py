"""tf.keras losses, metrics and activations (TF1's graph mode), with TF 1.15's numerics: a
cross-entropy over probabilities made by a softmax/sigmoid op uses that op's logits, else it
clips the probabilities to [eps, 1 - eps] (eps 1e-7)."""
from __future__ import annotations

from typing import Any, Callable, Dict

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import nn_ops as _nn
from .. import nn as _nnl
from . import backend as K

__all__ = ["mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error",
           "mean_squared_logarithmic_error", "categorical_crossentropy", "sparse_categorical_crossentropy",
           "binary_crossentropy", "hinge", "squared_hinge", "kullback_leibler_divergence", "poisson", "logcosh",
           "categorical_accuracy", "sparse_categorical_accuracy", "binary_accuracy", "get", "get_metric",
           "activation"]


def _t(x: Any) -> _g.Tensor:
    return _g.convert_to_tensor(x)


def _eps(x: _g.Tensor) -> float:
    return K.epsilon()


def mean_squared_error(y_true: Any, y_pred: Any) -> _g.Tensor:
    y_pred = _t(y_pred)
    return _m.reduce_mean(_m.square(y_pred - _m.cast(y_true, y_pred.dtype)), axis=-1)


def mean_absolute_error(y_true: Any, y_pred: Any) -> _g.Tensor:
    y_pred = _t(y_pred)
    return _m.reduce_mean(_m.abs(y_pred - _m.cast(y_true, y_pred.dtype)), axis=-1)


def mean_absolute_percentage_error(y_true: Any, y_pred: Any) -> _g.Tensor:
    y_pred = _t(y_pred)
    y_true = _m.cast(y_true, y_pred.dtype)
    diff = _m.abs((y_true - y_pred) / _m.clip_by_value(_m.abs(y_true), _eps(y_pred), float("inf")))
    return 100.0 * _m.reduce_mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true: Any, y_pred: Any) -> _g.Tensor:
    y_pred = _t(y_pred)
    y_true = _m.cast(y_true, y_pred.dtype)
    a = _m.log(_m.clip_by_value(y_pred, _eps(y_pred), float("inf")) + 1.0)
    b = _m.log(_m.clip_by_value(y_true, _eps(y_pred), float("inf")) + 1.0)
    return _m.reduce_mean(_m.square(a - b), axis=-1)


def _logits_of(y_pred: _g.Tensor, op_type: str) -> Any:
    return y_pred.op.inputs[0] if y_pred.op.type == op_type and len(y_pred.op.inputs) == 1 else None


def categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False) -> _g.Tensor:
    y_pred = _t(y_pred)
    y_true = _m.cast(y_true, y_pred.dtype)
    logits = y_pred if from_logits else _logits_of(y_pred, "Softmax")
    if logits is not None:
        return _nn.softmax_cross_entropy_with_logits_v2(labels=y_true, logits=logits)
    p = y_pred / _m.reduce_sum(y_pred, axis=-1, keepdims=True)
    p = _m.clip_by_value(p, _eps(y_pred), 1.0 - _eps(y_pred))
    return -_m.reduce_sum(y_true * _m.log(p), axis=-1)


def sparse_categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False) -> _g.Tensor:
    y_pred = _t(y_pred)
    logits = y_pred if from_logits else _logits_of(y_pred, "Softmax")
    if logits is None:
        logits = _m.log(_m.clip_by_value(y_pred, _eps(y_pred), 1.0 - _eps(y_pred)))
    labels = _m.cast(_a.reshape(y_true, [-1]), _dt.int64)
    n = logits.shape.as_list()[-1]
    flat = _a.reshape(logits, [-1, n])
    res = _nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=flat)
    return _a.reshape(res, _a.shape(logits)[:-1])


def binary_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False) -> _g.Tensor:
    y_pred = _t(y_pred)
    y_true = _m.cast(y_true, y_pred.dtype)
    logits = y_pred if from_logits else _logits_of(y_pred, "Sigmoid")
    if logits is None:
        p = _m.clip_by_value(y_pred, _eps(y_pred), 1.0 - _eps(y_pred))
        logits = _m.log(p / (1.0 - p))
    return _m.reduce_mean(_nn.sigmoid_cross_entropy_with_logits(labels=y_true, logits=logits), axis=-1)


def _signed_labels(y_true: Any, dtype: Any) -> _g.Tensor:
    """TF 1.15's hinge labels: when every label is 0 or 1 they are taken as -1 / 1."""
    y = _m.cast(y_true, dtype)
    binary = _m.cast(_m.reduce_all(_m.logical_or(_m.equal(y, 0.0), _m.equal(y, 1.0))), dtype)
    return y + binary * (y - 1.0)  # 2y - 1 when binary, else y


def hinge(y_true: Any, y_pred: Any) -> _g.Tensor:
    y_pred = _t(y_pred)
    return _m.reduce_mean(_m.maximum(1.0 - _signed_labels(y_true, y_pred.dtype) * y_pred, 0.0), axis=-1)


def squared_hinge(y_true: Any, y_pred: Any) -> _g.Tensor:
    y_pred = _t(y_pred)
    return _m.reduce_mean(_m.square(_m.maximum(1.0 - _signed_labels(y_true, y_pred.dtype) * y_pred, 0.0)), axis=-1)


def kullback_leibler_divergence(y_true: Any, y_pred: Any) -> _g.Tensor:
    y_pred = _t(y_pred)
    t = _m.clip_by_value(_m.cast(y_true, y_pred.dtype), _eps(y_pred), 1.0)
    p = _m.clip_by_value(y_pred, _eps(y_pred), 1.0)
    return _m.reduce_sum(t * _m.log(t / p), axis=-1)


def poisson(y_true: Any, y_pred: Any) -> _g.Tensor:
    y_pred = _t(y_pred)
    return _m.reduce_mean(y_pred - _m.cast(y_true, y_pred.dtype) * _m.log(y_pred + _eps(y_pred)), axis=-1)


def logcosh(y_true: Any, y_pred: Any) -> _g.Tensor:
    y_pred = _t(y_pred)
    x = y_pred - _m.cast(y_true, y_pred.dtype)
    return _m.reduce_mean(x + _nnl.softplus(-2.0 * x) - 0.6931471805599453, axis=-1)  # log 2, any float dtype


def categorical_accuracy(y_true: Any, y_pred: Any) -> _g.Tensor:
    return _m.cast(_m.equal(_m.argmax(y_true, -1), _m.argmax(y_pred, -1)), K.floatx())


def sparse_categorical_accuracy(y_true: Any, y_pred: Any) -> _g.Tensor:
    y_pred = _t(y_pred)
    y_true = _t(y_true)
    if y_true.shape.rank is not None and y_pred.shape.rank is not None and y_true.shape.rank == y_pred.shape.rank:
        y_true = _a.squeeze(y_true, [-1])
    return _m.cast(_m.equal(_m.cast(y_true, K.floatx()), _m.cast(_m.argmax(y_pred, -1), K.floatx())), K.floatx())


def binary_accuracy(y_true: Any, y_pred: Any, threshold: float = 0.5) -> _g.Tensor:
    y_pred = _t(y_pred)
    hit = _m.equal(_m.cast(y_true, y_pred.dtype), _m.cast(y_pred > threshold, y_pred.dtype))
    return _m.reduce_mean(_m.cast(hit, K.floatx()), axis=-1)


_LOSSES: Dict[str, Callable] = {f.__name__: f for f in (
    mean_squared_error, mean_absolute_error, mean_absolute_percentage_error, mean_squared_logarithmic_error,
    categorical_crossentropy, sparse_categorical_crossentropy, binary_crossentropy, hinge, squared_hinge,
    kullback_leibler_divergence, poisson, logcosh)}
_LOSSES.update(mse=mean_squared_error, mae=mean_absolute_error, mape=mean_absolute_percentage_error,
               msle=mean_squared_logarithmic_error, kld=kullback_leibler_divergence,
               kullback_leibler_divergence=kullback_leibler_divergence)


def get(identifier: Any) -> Callable:
    """A loss function from its Keras name or the function itself."""
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in _LOSSES:
        return _LOSSES[identifier]
    raise ValueError(f"Unknown loss function:{identifier}")


# metric functions by name beyond the accuracies (keras/metric_classes.py adds top_k_... ones)
_METRIC_FNS: Dict[str, Callable] = {}


def get_metric(identifier: Any, loss_fn: Callable, output: _g.Tensor) -> tuple:
    """(history name, fn) of a metric: "accuracy"/"acc" picks the accuracy that fits the loss
    (or the output's width), as TF1's Keras does, under the name "acc"."""
    if identifier in ("accuracy", "acc"):
        # a Loss object (keras/loss_classes.py) goes by the function it wraps
        loss_fn = getattr(loss_fn, "_accuracy_hint", getattr(loss_fn, "fn", loss_fn))
        if loss_fn is sparse_categorical_crossentropy:
            return "acc", sparse_categorical_accuracy
        if loss_fn is binary_crossentropy or output.shape.as_list()[-1] == 1:
            return "acc", binary_accuracy
        return "acc", categorical_accuracy
    if callable(identifier):
        return identifier.__name__, identifier
    named = {f.__name__: f for f in (categorical_accuracy, sparse_categorical_accuracy, binary_accuracy)}
    named.update(_METRIC_FNS)
    if identifier in named:
        return identifier, named[identifier]
    fn = get(identifier)
    return fn.__name__, fn


def _hard_sigmoid(x: Any) -> _g.Tensor:
    return _m.clip_by_value(0.2 * _t(x) + 0.5, 0.0, 1.0)


def _linear(x: Any) -> Any:
    return x


_ACTIVATIONS: Dict[str, Callable] = {
    "relu": _nnl.relu, "softmax": _nnl.softmax, "sigmoid": _nnl.sigmoid, "tanh": _nnl.tanh, "linear": _linear,
    "elu": _nnl.elu, "selu": _nnl.selu, "softplus": _nnl.softplus, "softsign": _nnl.softsign, "exponential": _m.exp,
    "hard_sigmoid": _hard_sigmoid, "relu6": _nnl.relu6}


def activation(identifier: Any) -> Callable:
    """An activation from its Keras name or the function itself."""
    if identifier is None:
        return _linear
    if callable(identifier):
        return identifier
    try:
        return _ACTIVATIONS[identifier]
    except KeyError:
        raise ValueError(f"Unknown activation function:{identifier}") from None


# -- regularizers (Keras's: l2 is l * sum(w^2), without tf.nn.l2_loss's 1/2) -------------------

def l1(l: float = 0.01) -> Callable[[Any], _g.Tensor]:  # noqa: E741  (Keras's name)
    return l1_l2(l1=l, l2=0.0)


def l2(l: float = 0.01) -> Callable[[Any], _g.Tensor]:  # noqa: E741
    return l1_l2(l1=0.0, l2=l)


def l1_l2(l1: float = 0.01, l2: float = 0.01) -> Callable[[Any], _g.Tensor]:  # noqa: E741
    def regularizer(w: Any) -> _g.Tensor:
        w = _t(w)
        out = _m.cast(0.0, w.dtype)
        if l1:
            out = out + l1 * _m.reduce_sum(_m.abs(w))
        if l2:
            out = out + l2 * _m.reduce_sum(_m.square(w))
        return out
    regularizer._keras_config = ("L1L2", {"l1": float(l1), "l2": float(l2)})  # type: ignore[attr-defined]
    return regularizer
