"""tf.contrib.learn's Estimators (TF 1.0-1.4's API): the names copied onto `tf.contrib.learn`.

Estimator/ModelFnOps/MetricSpec/SKCompat/RunConfig are in learn_base.py, the heads in
learn_heads.py, the canned models in learn_canned.py, Experiment/learn_runner/monitors in
learn_experiment.py; this module gathers them and infers real-valued columns from input.
"""
from __future__ import annotations

import types as _types
from typing import Any, Callable, List

import numpy as np

from ..graph import graph as _g
from ..nn.feature_column import columns as _core_columns
from . import learn_heads as _heads
from .learn_base import (Estimator, InputFnOps, MetricSpec, ModeKeys, ModelFnOps, NotFittedError, ProblemType,
                         RunConfig, SKCompat, numpy_input_fn, pandas_input_fn)
from .learn_canned import (DNNClassifier, DNNLinearCombinedClassifier, DNNLinearCombinedRegressor, DNNRegressor,
                           LinearClassifier, LinearRegressor)
from .learn_experiment import Experiment, learn_runner, monitors
from .learn_heads import MetricKey, PredictionKey

__all__ = ["Estimator", "ModelFnOps", "MetricSpec", "ModeKeys", "NotFittedError", "RunConfig", "ProblemType",
           "SKCompat", "InputFnOps", "DNNClassifier", "DNNRegressor", "LinearClassifier", "LinearRegressor",
           "DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor", "Experiment", "learn_runner", "monitors",
           "infer_real_valued_columns_from_input", "infer_real_valued_columns_from_input_fn", "io",
           "regression_head", "multi_class_head", "PredictionKey", "MetricKey", "read_batch_examples"]

regression_head = _heads.regression_head
multi_class_head = _heads.multi_class_head

io = _types.ModuleType("collflow.contrib.learn.io", "tf.contrib.learn.io: numpy_input_fn (shuffle=True by "
                       "default, as contrib's) and pandas_input_fn.")
io.numpy_input_fn = numpy_input_fn
io.pandas_input_fn = pandas_input_fn


def _real_valued_column(name: str, dims: List[int], dtype: Any) -> Any:
    """contrib's real_valued_column when tf.contrib.layers has it, else the core numeric_column."""
    from . import layers_feature_columns as fc
    if hasattr(fc, "real_valued_column"):
        dimension = dims[0] if len(dims) == 1 else (dims or None)
        return fc.real_valued_column(name, dimension=dimension if dimension is not None else 1, dtype=dtype)
    return _core_columns.numeric_column(name, shape=tuple(dims) or (1,), dtype=dtype)


def _column_of(name: str, shape: Any, dtype: Any) -> Any:
    from .. import dtypes as _dt
    dt = _dt.as_dtype(dtype)
    if not (dt.is_floating or dt.is_integer):
        raise ValueError(f"Unsupported dtype {dt.name} for feature {name!r}: real-valued columns need numbers")
    return _real_valued_column(name, [int(d) for d in shape[1:]], _dt.float32 if dt.is_integer else dt)


def infer_real_valued_columns_from_input(x: Any) -> List[Any]:
    """Real-valued columns of an array x (one column named '') or a dict of arrays (one per key),
    of each row's shape; integers become float32 columns."""
    if isinstance(x, dict):
        return [_column_of(k, np.shape(v), np.asarray(v).dtype) for k, v in sorted(x.items())]
    a = np.asarray(x)
    if a.ndim < 1:
        raise ValueError(f"x must have a batch dimension, got shape {a.shape}")
    return [_column_of("", a.shape if a.ndim > 1 else a.shape + (1,), a.dtype)]


def infer_real_valued_columns_from_input_fn(input_fn: Callable) -> List[Any]:
    """Real-valued columns of the features input_fn returns (built in a scratch graph)."""
    with _g.Graph().as_default():
        out = input_fn()
        features = out[0] if isinstance(out, (tuple, list)) else out
        items = sorted(features.items()) if isinstance(features, dict) else [("", features)]
        cols = []
        for k, t in items:
            shape = t.shape.as_list() if t.shape.rank is not None else [None]
            if len(shape) == 1:
                shape = shape + [1]
            if any(d is None for d in shape[1:]):
                raise ValueError(f"Feature {k!r} has an unknown row shape {shape}")
            cols.append(_column_of(k, shape, t.dtype))
        return cols


def read_batch_examples(*args: Any, **kwargs: Any) -> Any:
    """TF 1.x's queue-based reader of batches from files: refused (NotImplementedError), use tf.data."""
    raise NotImplementedError("tf.contrib.learn.read_batch_examples (queue readers) is not provided by collflow: "
                              "use tf.data")
