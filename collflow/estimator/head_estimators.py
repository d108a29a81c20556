"""TF 1.15's canned estimators over a given head (a public head or MultiHead, heads.py):
LinearEstimator, DNNEstimator and DNNLinearCombinedEstimator.  They build the same models,
variables and defaults as the canned classifiers and regressors (canned.py); the head
decides the loss, predictions and metrics."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from ..graph.ops import nn_ops as _nn
from .canned import _check_columns, _combined_model_fn, _dnn_model_fn, _linear_model_fn
from .estimator import Estimator

__all__ = ["LinearEstimator", "DNNEstimator", "DNNLinearCombinedEstimator"]


class LinearEstimator(Estimator):
    """A linear model over feature_columns with the given head (Ftrl at min(0.2, 1/sqrt(#columns)))."""

    def __init__(self, head: Any, feature_columns: Sequence[Any], model_dir: Optional[str] = None,
                 optimizer: Any = "Ftrl", config: Any = None, partitioner: Any = None,
                 sparse_combiner: str = "sum", warm_start_from: Any = None):
        cols = _check_columns(feature_columns, "linear")

        def model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
            return _linear_model_fn(features, labels, mode, head, cols, optimizer, partitioner, sparse_combiner)
        super().__init__(model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNEstimator(Estimator):
    """A feed-forward network over feature_columns with the given head (Adagrad at 0.05)."""

    def __init__(self, head: Any, hidden_units: Sequence[int], feature_columns: Sequence[Any],
                 model_dir: Optional[str] = None, optimizer: Any = "Adagrad", activation_fn: Callable = _nn.relu,
                 dropout: Optional[float] = None, input_layer_partitioner: Any = None, config: Any = None,
                 warm_start_from: Any = None, batch_norm: bool = False):
        cols = _check_columns(feature_columns, "dnn")

        def model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
            return _dnn_model_fn(features, labels, mode, head, hidden_units, cols, optimizer, activation_fn, dropout,
                                 input_layer_partitioner, batch_norm)
        super().__init__(model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedEstimator(Estimator):
    """Wide (linear, Ftrl) and deep (DNN, Adagrad) logits summed, with the given head."""

    def __init__(self, head: Any, model_dir: Optional[str] = None, linear_feature_columns: Any = None,
                 linear_optimizer: Any = "Ftrl", dnn_feature_columns: Any = None, dnn_optimizer: Any = "Adagrad",
                 dnn_hidden_units: Any = None, dnn_activation_fn: Callable = _nn.relu,
                 dnn_dropout: Optional[float] = None, input_layer_partitioner: Any = None, config: Any = None,
                 linear_sparse_combiner: str = "sum", warm_start_from: Any = None, batch_norm: bool = False):
        lin, dnn = list(linear_feature_columns or []), list(dnn_feature_columns or [])
        if not lin and not dnn:
            raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")

        def model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
            return _combined_model_fn(features, labels, mode, head, lin, linear_optimizer, dnn, dnn_optimizer,
                                      dnn_hidden_units, dnn_activation_fn, dnn_dropout, input_layer_partitioner,
                                      batch_norm, linear_sparse_combiner)
        super().__init__(model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)
