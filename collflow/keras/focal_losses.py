"""tf.keras's focal cross-entropies (tf_keras 2.x names; TF 1.15 had none): the functions
binary_focal_crossentropy / categorical_focal_crossentropy and the Loss classes
BinaryFocalCrossentropy / CategoricalFocalCrossentropy, with tf_keras's numerics (for
probabilities the binary one takes log(p + eps) of p clipped to [eps, 1 - eps]; an output made
by a sigmoid/softmax op is taken by its logits)."""
from __future__ import annotations

import importlib as _importlib
from typing import Any, Optional

from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import nn_ops as _nn
from .. import nn as _nnl
from . import backend as K
from .loss_classes import LossFunctionWrapper, Reduction

__all__ = ["binary_focal_crossentropy", "categorical_focal_crossentropy", "BinaryFocalCrossentropy",
           "CategoricalFocalCrossentropy"]


def _op_logits(y_pred: _g.Tensor, op_type: str) -> Any:
    return y_pred.op.inputs[0] if y_pred.op.type == op_type and len(y_pred.op.inputs) == 1 else None


def _elementwise_bce(target: _g.Tensor, output: _g.Tensor, from_logits: bool) -> _g.Tensor:
    logits = output if from_logits else _op_logits(output, "Sigmoid")
    if logits is not None:
        return _nn.sigmoid_cross_entropy_with_logits(labels=target, logits=logits)
    eps = K.epsilon()
    p = _m.clip_by_value(output, eps, 1.0 - eps)
    return -(target * _m.log(p + eps) + (1.0 - target) * _m.log(1.0 - p + eps))


def binary_focal_crossentropy(y_true: Any, y_pred: Any, apply_class_balancing: bool = False, alpha: float = 0.25,
                              gamma: float = 2.0, from_logits: bool = False, label_smoothing: float = 0.0,
                              axis: int = -1) -> _g.Tensor:
    """The mean over `axis` of (1 - p_t)^gamma * the binary cross-entropy (times alpha for
    class 1 and 1 - alpha for class 0 with apply_class_balancing)."""
    y_pred = _g.convert_to_tensor(y_pred)
    y_true = _m.cast(y_true, y_pred.dtype)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    probs = _nnl.sigmoid(y_pred) if from_logits else y_pred
    p_t = y_true * probs + (1.0 - y_true) * (1.0 - probs)
    focal = _m.pow(1.0 - p_t, gamma) * _elementwise_bce(y_true, y_pred, from_logits)
    if apply_class_balancing:
        focal = (y_true * alpha + (1.0 - y_true) * (1.0 - alpha)) * focal
    return _m.reduce_mean(focal, axis=axis)


def categorical_focal_crossentropy(y_true: Any, y_pred: Any, alpha: float = 0.25, gamma: float = 2.0,
                                   from_logits: bool = False, label_smoothing: float = 0.0,
                                   axis: int = -1) -> _g.Tensor:
    """The sum over `axis` of alpha * (1 - p)^gamma * -y_true * log(p), p the class
    probabilities normalized and clipped to [eps, 1 - eps]."""
    if isinstance(axis, bool):
        raise ValueError(f"`axis` must be of type `int`. Received: axis={axis} of type {type(axis)}")
    y_pred = _g.convert_to_tensor(y_pred)
    y_true = _m.cast(y_true, y_pred.dtype)
    if label_smoothing:
        n = _m.cast(_a.shape(y_true)[-1], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / n
    if not y_true.shape.is_compatible_with(y_pred.shape):
        raise ValueError(f"Shapes {y_true.shape} and {y_pred.shape} are incompatible")
    logits = y_pred if from_logits else _op_logits(y_pred, "Softmax")
    out = _nnl.softmax(logits, axis=axis) if logits is not None else y_pred
    out = out / _m.reduce_sum(out, axis=axis, keepdims=True)
    eps = K.epsilon()
    out = _m.clip_by_value(out, eps, 1.0 - eps)
    cce = -y_true * _m.log(out)
    return _m.reduce_sum(alpha * _m.pow(1.0 - out, gamma) * cce, axis=axis)


class BinaryFocalCrossentropy(LossFunctionWrapper):
    """binary_focal_crossentropy as a Loss."""

    def __init__(self, apply_class_balancing: bool = False, alpha: float = 0.25, gamma: float = 2.0,
                 from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
                 reduction: str = Reduction.AUTO, name: Optional[str] = "binary_focal_crossentropy"):
        super().__init__(binary_focal_crossentropy, reduction=reduction, name=name,
                         apply_class_balancing=apply_class_balancing, alpha=alpha, gamma=gamma,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)


class CategoricalFocalCrossentropy(LossFunctionWrapper):
    """categorical_focal_crossentropy as a Loss."""

    def __init__(self, alpha: float = 0.25, gamma: float = 2.0, from_logits: bool = False,
                 label_smoothing: float = 0.0, axis: int = -1, reduction: str = Reduction.AUTO,
                 name: Optional[str] = "categorical_focal_crossentropy"):
        super().__init__(categorical_focal_crossentropy, reduction=reduction, name=name, alpha=alpha, gamma=gamma,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)


# compile(loss="binary_focal_crossentropy") by name, as tf_keras
_losses_module = _importlib.import_module(".losses", __package__)
_losses_module._LOSSES.update(binary_focal_crossentropy=binary_focal_crossentropy,
                              categorical_focal_crossentropy=categorical_focal_crossentropy)
