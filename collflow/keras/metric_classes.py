"""tf.keras.metrics' stateful metrics in TF 1.15's graph mode: Metric (update_state / result /
reset_states over variables made by add_weight), Sum, Mean, MeanTensor, MeanMetricWrapper and
the metrics it wraps (accuracies, errors, cross-entropies, hinges, ...), RootMeanSquaredError,
MeanRelativeError, the top-k accuracy functions and get / serialize / deserialize.

    m = tf.keras.metrics.Mean()
    op = m.update_state([1., 2.])           # an op that folds the values into total and count
    sess.run(tf.variables_initializer(m.variables)); sess.run(op); sess.run(m.result())

A metric's variables are in no collection (as TF's): Keras's session initializes them, a user's
session runs tf.variables_initializer(m.variables). m(y_true, y_pred) is the result tensor
with the update as its control dependency."""
from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import state_ops as _s
from ..graph.ops.constant_op import group as _group
from ..graph.ops.constant_op import identity as _identity
from ..graph.ops.misc_ops import in_top_k as _in_top_k
from ..graph.variables import Variable
from . import backend as K
from . import loss_classes as _lc
import importlib as _importlib

# the module (the package attribute "losses" is the tf.keras.losses namespace once built)
_losses = _importlib.import_module(".losses", __package__)

__all__ = ["Metric", "Reduce", "Sum", "Mean", "MeanTensor", "MeanMetricWrapper", "Accuracy", "BinaryAccuracy",
           "CategoricalAccuracy", "SparseCategoricalAccuracy", "TopKCategoricalAccuracy",
           "SparseTopKCategoricalAccuracy", "MeanSquaredError", "MeanAbsoluteError", "MeanAbsolutePercentageError",
           "MeanSquaredLogarithmicError", "RootMeanSquaredError", "MeanRelativeError", "BinaryCrossentropy",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "Hinge", "SquaredHinge", "CategoricalHinge",
           "Poisson", "KLDivergence", "LogCoshError", "CosineSimilarity", "accuracy", "top_k_categorical_accuracy",
           "sparse_top_k_categorical_accuracy", "cosine_proximity_metric", "div_no_nan", "broadcast_or_reduce"]


def _snake(name: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


div_no_nan = _lc._div_no_nan

# ops whose running changes a variable: what a subclass's update_state made when it returns nothing
_STATE_OPS = ("Assign", "Scatter", "ResourceScatter")  # op type prefixes


def _wrap_update(fn: Callable) -> Callable:
    """update_state returning the update op: the one it returns, else a group of the variable
    writes it made (a subclass written for TF 2's eager style returns nothing)."""
    def update_state(self: "Metric", *args: Any, **kwargs: Any) -> Any:
        g = _g.get_default_graph()
        before = len(g.get_operations())
        op = fn(self, *args, **kwargs)
        if op is None:
            made = [o for o in g.get_operations()[before:] if o.type.startswith(_STATE_OPS)]
            op = _group(*made) if made else _group()
        return op
    update_state.__wrapped__ = fn  # type: ignore[attr-defined]
    update_state.__doc__ = fn.__doc__
    return update_state


class Metric:
    """Base of the stateful metrics (tf.keras.metrics.Metric); see the module doc."""

    def __init__(self, name: Optional[str] = None, dtype: Any = None, **kwargs: Any):
        self._name = name or _snake(type(self).__name__)
        self._dtype = _dt.as_dtype(dtype or K.floatx())
        self._weights: List[Variable] = []
        self._reset: Any = None
        self.stateful = True
        self.built = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "update_state" in cls.__dict__ and not hasattr(cls.__dict__["update_state"], "__wrapped__"):
            cls.update_state = _wrap_update(cls.__dict__["update_state"])

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> str:
        return self._dtype.name

    @property
    def variables(self) -> List[Variable]:
        return list(self._weights)

    weights = variables
    non_trainable_weights = variables

    @property
    def trainable_weights(self) -> List[Variable]:
        return []

    def add_weight(self, name: str, shape: Any = (), aggregation: Any = None, synchronization: Any = None,
                   initializer: Any = None, dtype: Any = None) -> Variable:
        """A non-trainable state variable (zeros unless `initializer` says otherwise), in no
        collection; Keras's session initializes it."""
        dtype = _dt.as_dtype(dtype or self._dtype)
        shape = [int(d) for d in (shape if isinstance(shape, (list, tuple)) else tuple(shape))]
        g = _g.get_default_graph()
        with g.control_dependencies(None):
            if initializer is None or initializer == "zeros":
                init: Any = _a.zeros(shape, dtype)
            elif isinstance(initializer, str):
                from .initializers import get as _get_init
                init = _get_init(initializer)(shape, dtype=dtype)
            else:
                init = initializer(shape, dtype=dtype)
            v = Variable(init, trainable=False, name=name, dtype=dtype, collections=[])
        K._state(g).setdefault("tracked", []).append(v)
        self._weights.append(v)
        self._reset = None
        return v

    def update_state(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("Must be implemented in subclasses.")

    def result(self) -> Any:
        raise NotImplementedError("Must be implemented in subclasses.")

    def __call__(self, *args: Any, **kwargs: Any) -> _g.Tensor:
        """The result after folding in this input (the update as a control dependency)."""
        update = self.update_state(*args, **kwargs)
        with _g.control_dependencies([update]):
            out = _identity(self.result())
        return out

    def reset_op(self) -> Any:
        """An op setting every state variable back to zero (cached)."""
        if self._reset is None and self._weights:
            g = self._weights[0].graph
            with g.as_default(), g.control_dependencies(None):
                self._reset = _group(*[_s.assign(v, _a.zeros(v.shape.as_list(), v.dtype.base_dtype))
                                       for v in self._weights])
        return self._reset

    def reset_states(self) -> None:
        """Zeros the state (in Keras's session)."""
        op = self.reset_op()
        if op is not None:
            with self._weights[0].graph.as_default():
                K.get_session().run(op)

    reset_state = reset_states

    def get_config(self) -> Dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "Metric":
        return cls(**_lc.known_args(cls, config))


def broadcast_or_reduce(values: _g.Tensor, sample_weight: Any, dtype: Any, summing: bool) -> tuple:
    """(values, weights) aligned as Keras's Reduce: weights squeezed/expanded to the values'
    rank, then broadcast; weights of lower rank that do not broadcast reduce the values' extra
    axes instead (sum or mean)."""
    w = _m.cast(sample_weight, dtype)
    values, _, w = _lc.squeeze_or_expand_dimensions(values, None, w)
    vs, ws = values.shape, w.shape
    if ws.rank is not None and vs.rank is not None:
        ok = ws.rank == 0 or (ws.rank == vs.rank and all(a is None or b is None or a == b or a == 1
                                                          for a, b in zip(ws.as_list(), vs.as_list())))
        if not ok:
            if ws.rank > vs.rank:
                raise ValueError(f"weights can not be broadcast to values. values.shape={vs}, weights.shape={ws}")
            axes = list(range(ws.rank, vs.rank))
            values = _m.reduce_sum(values, axis=axes) if summing else _m.reduce_mean(values, axis=axes)
            return values, w
    return values, w * _a.ones_like(values)


class Reduce(Metric):
    """Sum (reduction "sum") or weighted mean ("weighted_mean") of all values seen."""

    def __init__(self, reduction: str, name: Optional[str] = None, dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self.reduction = reduction
        self.total = self.add_weight("total", initializer="zeros")
        if reduction != "sum":
            self.count = self.add_weight("count", initializer="zeros")

    def update_state(self, values: Any, sample_weight: Any = None) -> Any:
        values = _m.cast(values, self._dtype)
        if sample_weight is not None:
            values, w = broadcast_or_reduce(values, sample_weight, self._dtype, self.reduction == "sum")
            values = values * w
        else:
            w = None
        value_sum = _m.reduce_sum(values)
        with _g.control_dependencies([value_sum]):
            up_total = _s.assign_add(self.total, value_sum)
        if self.reduction == "sum":
            return up_total
        n = _m.cast(_a.size(values), self._dtype) if w is None or self.reduction == "sum_over_batch_size" \
            else _m.reduce_sum(w)
        with _g.control_dependencies([up_total]):
            return _s.assign_add(self.count, n)

    def result(self) -> _g.Tensor:
        if self.reduction == "sum":
            return _identity(self.total)
        return div_no_nan(self.total, self.count)


class Sum(Reduce):
    """The (weighted) sum of the values."""

    def __init__(self, name: str = "sum", dtype: Any = None):
        super().__init__("sum", name=name, dtype=dtype)


class Mean(Reduce):
    """The (weighted) mean of the values."""

    def __init__(self, name: str = "mean", dtype: Any = None):
        super().__init__("weighted_mean", name=name, dtype=dtype)


class MeanTensor(Metric):
    """The element-wise (weighted) mean of tensors of one shape."""

    def __init__(self, name: str = "mean_tensor", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self._shape: Any = None
        self._built = False

    def update_state(self, values: Any, sample_weight: Any = None) -> Any:
        values = _m.cast(values, self._dtype)
        if not self._built:
            self._shape = values.shape
            if not self._shape.is_fully_defined():
                raise ValueError(f"MeanTensor needs values of a fully defined shape, got {self._shape}")
            self.total = self.add_weight("total", shape=self._shape.as_list())
            self.count = self.add_weight("count", shape=self._shape.as_list())
            self._built = True
        elif values.shape.as_list() != self._shape.as_list():
            raise ValueError("MeanTensor input values must always have the same shape. Expected shape (set during "
                             f"the first call): {self._shape}. Got: {values.shape}")
        n = _a.ones_like(values)
        if sample_weight is not None:
            values, w = broadcast_or_reduce(values, sample_weight, self._dtype, False)
            n = n * w
            values = values * w
        up = _s.assign_add(self.total, values)
        with _g.control_dependencies([up]):
            return _s.assign_add(self.count, n)

    def result(self) -> _g.Tensor:
        if not self._built:
            raise ValueError("MeanTensor does not have any result yet. Please call the MeanTensor instance or use "
                             "`.update_state(value)` before retrieving the result.")
        return div_no_nan(self.total, self.count)


class MeanMetricWrapper(Mean):
    """The weighted mean of fn(y_true, y_pred, **kwargs) over all samples seen."""

    def __init__(self, fn: Callable, name: Optional[str] = None, dtype: Any = None, **kwargs: Any):
        super().__init__(name=name, dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true = _m.cast(y_true, self._dtype)
        y_pred = _m.cast(y_pred, self._dtype)
        y_pred, y_true, _ = _lc.squeeze_or_expand_dimensions(y_pred, y_true)
        matches = self._fn(y_true, y_pred, **self._fn_kwargs)
        return Reduce.update_state(self, matches, sample_weight=sample_weight)

    def get_config(self) -> Dict[str, Any]:
        config = {k: (K.get_value(v) if _g.is_tensor(v) else v) for k, v in self._fn_kwargs.items()}
        return {**super().get_config(), **config}

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "Metric":
        config = dict(config)
        if cls is MeanMetricWrapper:  # the function by name
            fn = config.pop("fn", None)
            return cls(get(fn) if isinstance(fn, str) else fn, **config)
        return cls(**_lc.known_args(cls, config))


# -- functions ---------------------------------------------------------------------------------

def accuracy(y_true: Any, y_pred: Any) -> _g.Tensor:
    """1 where y_pred equals y_true, else 0."""
    y_pred, y_true = _g.convert_to_tensor(y_pred), _g.convert_to_tensor(y_true)
    if not y_pred.shape.is_compatible_with(y_true.shape):
        raise ValueError(f"Shapes {y_pred.shape} and {y_true.shape} are incompatible")
    if y_true.dtype != y_pred.dtype:
        y_pred = _m.cast(y_pred, y_true.dtype)
    return _m.cast(_m.equal(y_true, y_pred), K.floatx())


def top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> _g.Tensor:
    """1 where the true class (y_true's argmax) is among y_pred's k top scores."""
    y_pred = _g.convert_to_tensor(y_pred)
    return _m.cast(_in_top_k(y_pred, _m.cast(_m.argmax(y_true, -1), _dt.int32), k), K.floatx())


def sparse_top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> _g.Tensor:
    """1 where the integer label is among y_pred's k top scores."""
    y_pred, y_true = _g.convert_to_tensor(y_pred), _g.convert_to_tensor(y_true)
    if y_true.shape.rank is not None and y_pred.shape.rank is not None and y_true.shape.rank == y_pred.shape.rank:
        y_true = _a.squeeze(y_true, [-1])
    return _m.cast(_in_top_k(y_pred, _m.cast(y_true, _dt.int32), k), K.floatx())


def cosine_proximity_metric(y_true: Any, y_pred: Any, axis: int = -1) -> _g.Tensor:
    """The cosine of y_true and y_pred along `axis` (CosineSimilarity's: 1 is best)."""
    return -_lc.cosine_similarity(y_true, y_pred, axis=axis)


def _squared_difference(y_true: Any, y_pred: Any) -> _g.Tensor:
    return _m.square(y_pred - y_true)


# -- the wrappers ----------------------------------------------------------------------------

def _wrapper(cls_name: str, fn: Callable, default_name: str, doc: str, **defaults: Any) -> type:
    """A MeanMetricWrapper subclass of fn with options `defaults`, its positional order TF 1.15's
    (the options then name and dtype, or name and dtype first for the classes in _NAME_FIRST)."""
    opts = list(defaults)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        names = type(self)._arg_names
        if len(args) > len(names):
            raise TypeError(f"{cls_name}() takes at most {len(names)} positional arguments")
        given = dict(zip(names, args))
        for k in kwargs:
            if k in given:
                raise TypeError(f"{cls_name}() got multiple values for argument {k!r}")
            if k not in names:
                raise TypeError(f"{cls_name}() got an unexpected keyword argument {k!r}")
        given.update(kwargs)
        fn_kwargs = {k: given.get(k, v) for k, v in defaults.items()}
        MeanMetricWrapper.__init__(self, fn, name=given.get("name", default_name), dtype=given.get("dtype"),
                                   **fn_kwargs)
    arg_names = opts + ["name", "dtype"] if opts and cls_name not in _NAME_FIRST else ["name", "dtype"] + opts
    return type(cls_name, (MeanMetricWrapper,), {"__init__": __init__, "__doc__": doc, "__module__": __name__,
                                                 "_arg_names": arg_names})


# TF 1.15 puts name and dtype before the options in these (BinaryAccuracy(name, dtype, threshold))
_NAME_FIRST = {"BinaryAccuracy", "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
               "CosineSimilarity"}

Accuracy = _wrapper("Accuracy", accuracy, "accuracy", "How often y_pred equals y_true.")
BinaryAccuracy = _wrapper("BinaryAccuracy", _losses.binary_accuracy, "binary_accuracy",
                          "How often y_pred > threshold matches the 0/1 label.", threshold=0.5)
CategoricalAccuracy = _wrapper("CategoricalAccuracy", _losses.categorical_accuracy, "categorical_accuracy",
                               "How often y_pred's argmax is y_true's.")
SparseCategoricalAccuracy = _wrapper("SparseCategoricalAccuracy", _losses.sparse_categorical_accuracy,
                                     "sparse_categorical_accuracy", "How often y_pred's argmax is the integer label.")
TopKCategoricalAccuracy = _wrapper("TopKCategoricalAccuracy", top_k_categorical_accuracy,
                                   "top_k_categorical_accuracy", "How often the true class is in the top k.", k=5)
SparseTopKCategoricalAccuracy = _wrapper("SparseTopKCategoricalAccuracy", sparse_top_k_categorical_accuracy,
                                         "sparse_top_k_categorical_accuracy",
                                         "How often the integer label is in the top k.", k=5)
MeanSquaredError = _wrapper("MeanSquaredError", _losses.mean_squared_error, "mean_squared_error",
                            "The mean squared error over all samples.")
MeanAbsoluteError = _wrapper("MeanAbsoluteError", _losses.mean_absolute_error, "mean_absolute_error",
                             "The mean absolute error over all samples.")
MeanAbsolutePercentageError = _wrapper("MeanAbsolutePercentageError", _losses.mean_absolute_percentage_error,
                                       "mean_absolute_percentage_error", "The mean absolute percentage error.")
MeanSquaredLogarithmicError = _wrapper("MeanSquaredLogarithmicError", _losses.mean_squared_logarithmic_error,
                                       "mean_squared_logarithmic_error", "The mean squared logarithmic error.")
BinaryCrossentropy = _wrapper("BinaryCrossentropy", _lc.binary_crossentropy, "binary_crossentropy",
                              "The mean binary cross-entropy.", from_logits=False, label_smoothing=0)
CategoricalCrossentropy = _wrapper("CategoricalCrossentropy", _lc.categorical_crossentropy,
                                   "categorical_crossentropy", "The mean categorical cross-entropy.",
                                   from_logits=False, label_smoothing=0)
SparseCategoricalCrossentropy = _wrapper("SparseCategoricalCrossentropy", _losses.sparse_categorical_crossentropy,
                                         "sparse_categorical_crossentropy",
                                         "The mean sparse categorical cross-entropy.", from_logits=False)
Hinge = _wrapper("Hinge", _losses.hinge, "hinge", "The mean hinge loss.")
SquaredHinge = _wrapper("SquaredHinge", _losses.squared_hinge, "squared_hinge", "The mean squared hinge loss.")
CategoricalHinge = _wrapper("CategoricalHinge", _lc.categorical_hinge, "categorical_hinge",
                            "The mean categorical hinge loss.")
Poisson = _wrapper("Poisson", _losses.poisson, "poisson", "The mean Poisson loss.")
KLDivergence = _wrapper("KLDivergence", _losses.kullback_leibler_divergence, "kullback_leibler_divergence",
                        "The mean Kullback-Leibler divergence.")
LogCoshError = _wrapper("LogCoshError", _losses.logcosh, "logcosh", "The mean log(cosh(error)).")
CosineSimilarity = _wrapper("CosineSimilarity", cosine_proximity_metric, "cosine_similarity",
                            "The mean cosine of y_true and y_pred along axis.", axis=-1)


class RootMeanSquaredError(Mean):
    """sqrt of the (weighted) mean of (y_pred - y_true)^2."""

    def __init__(self, name: str = "root_mean_squared_error", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true = _m.cast(y_true, self._dtype)
        y_pred = _m.cast(y_pred, self._dtype)
        y_pred, y_true, _ = _lc.squeeze_or_expand_dimensions(y_pred, y_true)
        return Reduce.update_state(self, _squared_difference(y_true, y_pred), sample_weight=sample_weight)

    def result(self) -> _g.Tensor:
        return _m.sqrt(div_no_nan(self.total, self.count))


class MeanRelativeError(Mean):
    """The (weighted) mean of |y_pred - y_true| / normalizer."""

    def __init__(self, normalizer: Any, name: Optional[str] = None, dtype: Any = None):
        super().__init__(name=name or "mean_relative_error", dtype=dtype)
        self.normalizer = _m.cast(normalizer, self._dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true = _m.cast(y_true, self._dtype)
        y_pred = _m.cast(y_pred, self._dtype)
        y_pred, y_true, _ = _lc.squeeze_or_expand_dimensions(y_pred, y_true)
        y_pred, normalizer, _ = _lc.squeeze_or_expand_dimensions(y_pred, self.normalizer)
        rel = div_no_nan(_m.abs(y_true - y_pred), normalizer)
        return Reduce.update_state(self, rel, sample_weight=sample_weight)

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "normalizer": K.get_value(self.normalizer).tolist()}


# compile(metrics=["top_k_categorical_accuracy", ...]) by name
_losses._METRIC_FNS.update(top_k_categorical_accuracy=top_k_categorical_accuracy,
                           sparse_top_k_categorical_accuracy=sparse_top_k_categorical_accuracy)


def _objects() -> Dict[str, Any]:
    from . import iou_metrics as _iou
    from . import metric_confusion as _mc
    from . import score_metrics as _sm
    out: Dict[str, Any] = dict(_lc._objects())
    out = {k: v for k, v in out.items() if not isinstance(v, type)}  # the loss classes are not metrics
    out.update(categorical_accuracy=_losses.categorical_accuracy,
               sparse_categorical_accuracy=_losses.sparse_categorical_accuracy,
               binary_accuracy=_losses.binary_accuracy, top_k_categorical_accuracy=top_k_categorical_accuracy,
               sparse_top_k_categorical_accuracy=sparse_top_k_categorical_accuracy, accuracy=accuracy, acc=accuracy,
               ACC=accuracy)
    for mod in (globals(), vars(_mc), vars(_iou), vars(_sm)):
        for n in mod.get("__all__", []):
            v = mod[n]
            if isinstance(v, type) and issubclass(v, Metric):
                out[n] = v
    return out


def serialize(metric: Any) -> Any:
    """A Metric as {"class_name", "config"}; a function as its name."""
    return _lc.serialize(metric)


def deserialize(config: Any, custom_objects: Optional[Dict[str, Any]] = None) -> Any:
    """A metric function from its name, or a Metric from its {"class_name", "config"}."""
    return _lc.deserialize_named(config, {**_objects(), **(custom_objects or {})}, "metric")


def get(identifier: Any) -> Any:
    """A metric from a name, a config dict, a Metric or a function."""
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret metric function identifier: {identifier}")
