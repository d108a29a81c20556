"""TF 1.15's baseline estimators (canned/baseline.py): BaselineClassifier, BaselineRegressor
and BaselineEstimator.  The model ignores the feature values: its logits are one learned
bias per output, `baseline/bias` [logits_dimension], broadcast over the batch, so a
regressor learns the label mean and a classifier the classes' log-priors.  Ftrl at 0.3 by
default."""
from __future__ import annotations

from typing import Any, Optional

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.initializers import Zeros
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.sparse_tensor import SparseTensor
from ..graph.variable_scope import get_variable, variable_scope
from ..nn import losses as _losses
from ..train.global_step import get_global_step
from .canned import _class_head
from .estimator import Estimator
from .head import RegressionHead, get_optimizer

__all__ = ["BaselineClassifier", "BaselineRegressor", "BaselineEstimator"]

_LEARNING_RATE = 0.3


def _weight_key(weight_column: Any) -> Optional[str]:
    if weight_column is None:
        return None
    return weight_column if isinstance(weight_column, str) else getattr(weight_column, "key", None)


def _baseline_logits(features: Any, units: int, weight_column: Any) -> Any:
    """bias * ones([batch, units]), the batch size read from the first non-weight feature."""
    if not isinstance(features, dict):
        raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: {type(features)}")
    wkey = _weight_key(weight_column)
    batch_size = None
    for key, feature in features.items():
        if key == wkey:
            continue  # TF skips the weight column
        if isinstance(feature, SparseTensor):
            batch_size = _m.cast(feature.dense_shape[0], _dt.int32)
        else:
            batch_size = _a.shape(_g.convert_to_tensor(feature))[0]
        break
    if batch_size is None:
        raise ValueError("features dictionary is empty (a baseline model needs one feature for the batch size)")
    with variable_scope("baseline"):
        bias = get_variable("bias", shape=[units], dtype=_dt.float32, initializer=Zeros())
        return _m.multiply(bias, _a.ones(_a.stack([batch_size, units])))


def _baseline_model_fn(features: Any, labels: Any, mode: str, head: Any, optimizer: Any,
                       weight_column: Any = None) -> Any:
    logits = _baseline_logits(features, head.logits_dimension, weight_column)

    def train_op_fn(loss: Any) -> Any:
        opt = get_optimizer(optimizer, _LEARNING_RATE)
        return opt.minimize(loss, global_step=get_global_step())

    return head.create_estimator_spec(features, mode, logits, labels=labels, train_op_fn=train_op_fn)


class BaselineClassifier(Estimator):
    """Predicts the training labels' class distribution (TF1's BaselineClassifier)."""

    def __init__(self, model_dir: Optional[str] = None, n_classes: int = 2, weight_column: Any = None,
                 label_vocabulary: Any = None, optimizer: Any = "Ftrl", config: Any = None,
                 loss_reduction: str = _losses.Reduction.SUM):
        head = _class_head(n_classes, weight_column, label_vocabulary, loss_reduction)

        def model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
            return _baseline_model_fn(features, labels, mode, head, optimizer, weight_column)
        super().__init__(model_fn, model_dir=model_dir, config=config)


class BaselineRegressor(Estimator):
    """Predicts the training labels' mean (TF1's BaselineRegressor)."""

    def __init__(self, model_dir: Optional[str] = None, label_dimension: int = 1, weight_column: Any = None,
                 optimizer: Any = "Ftrl", config: Any = None, loss_reduction: str = _losses.Reduction.SUM):
        head = RegressionHead(label_dimension, weight_column, loss_reduction)

        def model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
            return _baseline_model_fn(features, labels, mode, head, optimizer, weight_column)
        super().__init__(model_fn, model_dir=model_dir, config=config)


class BaselineEstimator(Estimator):
    """A baseline model over a given head (TF1's BaselineEstimator)."""

    def __init__(self, head: Any, model_dir: Optional[str] = None, optimizer: Any = "Ftrl", config: Any = None):
        def model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
            return _baseline_model_fn(features, labels, mode, head, optimizer,
                                      getattr(head, "_weight_column", None))
        super().__init__(model_fn, model_dir=model_dir, config=config)
