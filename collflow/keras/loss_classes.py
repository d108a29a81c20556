"""tf.keras.losses' Loss classes (TF 1.15): Loss, LossFunctionWrapper and its subclasses
(MeanSquaredError, BinaryCrossentropy(from_logits, label_smoothing), Huber(delta), ...), the
loss functions TF 1.15 adds to keras/losses.py's (categorical_hinge, cosine_similarity,
huber_loss, the aliases), and serialize / deserialize / get.

A Loss called as loss(y_true, y_pred, sample_weight) computes call()'s per-sample losses,
weights them (the weights squeezed or expanded to the losses' rank, then broadcast) and reduces
them by its `reduction`: AUTO and SUM_OVER_BATCH_SIZE divide the weighted sum by the number of
losses (not by the weights' sum), SUM sums, NONE keeps them."""
from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Optional, Tuple

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops.nn_impl import l2_normalize as _l2_normalize
from . import backend as K
import importlib as _importlib

# the module (the package attribute "losses" is the tf.keras.losses namespace once built)
_losses = _importlib.import_module(".losses", __package__)

__all__ = ["Reduction", "Loss", "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError",
           "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "BinaryCrossentropy",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "Hinge", "SquaredHinge", "CategoricalHinge",
           "Poisson", "LogCosh", "KLDivergence", "Huber", "CosineSimilarity", "categorical_hinge",
           "cosine_similarity", "cosine", "cosine_proximity", "huber_loss", "log_cosh", "kld", "kl_divergence",
           "KLD", "MSE", "MAE", "MAPE", "MSLE", "mape", "msle", "serialize", "deserialize", "get",
           "squeeze_or_expand_dimensions", "compute_weighted_loss", "reduce_weighted_loss"]


class Reduction:
    """How a Loss reduces its weighted per-sample losses (Keras's ReductionV2)."""

    AUTO = "auto"                                # SUM_OVER_BATCH_SIZE wherever Keras uses it
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls) -> Tuple[str, ...]:
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key: Any) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}.")


# -- shapes and reductions ------------------------------------------------------------------------

def _squeezable(labels: _g.Tensor, preds: _g.Tensor) -> Tuple[_g.Tensor, _g.Tensor]:
    """Drops a trailing size-1 axis of the one with rank one more than the other."""
    lr, pr = labels.shape.rank, preds.shape.rank
    if lr is None or pr is None:
        return labels, preds
    if pr - lr == 1 and preds.shape.as_list()[-1] == 1:
        preds = _a.squeeze(preds, [-1])
    elif lr - pr == 1 and labels.shape.as_list()[-1] == 1:
        labels = _a.squeeze(labels, [-1])
    return labels, preds


def squeeze_or_expand_dimensions(y_pred: Any, y_true: Any = None, sample_weight: Any = None) -> Tuple[Any, Any, Any]:
    """Keras's alignment of ranks (static ones): y_true/y_pred lose a trailing 1 when their ranks
    differ by one (unless y_pred is y_true's one-more-axis of scores); the weights are squeezed or
    expanded by one axis to y_pred's rank. Returns (y_pred, y_true, sample_weight)."""
    y_pred = _g.convert_to_tensor(y_pred)
    pr = y_pred.shape.rank
    if y_true is not None:
        y_true = _g.convert_to_tensor(y_true)
        tr = y_true.shape.rank
        if pr is not None and tr is not None and (pr - tr != 1 or y_pred.shape.as_list()[-1] == 1):
            y_true, y_pred = _squeezable(y_true, y_pred)
            pr = y_pred.shape.rank
    if sample_weight is None:
        return y_pred, y_true, None
    sample_weight = _g.convert_to_tensor(sample_weight)
    wr = sample_weight.shape.rank
    if wr == 0 or wr is None or pr is None:
        return y_pred, y_true, sample_weight
    if wr - pr == 1:
        sample_weight = _a.squeeze(sample_weight, [-1])
    elif pr - wr == 1:
        sample_weight = _a.expand_dims(sample_weight, -1)
    return y_pred, y_true, sample_weight


def _div_no_nan(x: Any, y: Any) -> _g.Tensor:
    """x / y, 0 where y is 0 (the denominator made safe first, so no inf or NaN on any path)."""
    x, y = _g.convert_to_tensor(x), _g.convert_to_tensor(y)
    zero = _m.equal(y, 0.0)
    safe = _a.where(zero, _a.ones_like(y), y)
    return _a.where(zero, _a.zeros_like(x * safe), x / safe)


def reduce_weighted_loss(weighted: _g.Tensor, reduction: str) -> _g.Tensor:
    if reduction == Reduction.NONE:
        return weighted
    total = _m.reduce_sum(weighted)
    if reduction == Reduction.SUM:
        return total
    return _div_no_nan(total, _m.cast(_a.size(weighted), weighted.dtype))


def compute_weighted_loss(losses: Any, sample_weight: Any = None, reduction: str = Reduction.SUM_OVER_BATCH_SIZE,
                          name: Optional[str] = None) -> _g.Tensor:
    """The losses times the weights (float32), reduced; in the losses' dtype."""
    Reduction.validate(reduction)
    if reduction == Reduction.AUTO:
        reduction = Reduction.SUM_OVER_BATCH_SIZE
    with _g.name_scope(name or "weighted_loss"):
        losses = _g.convert_to_tensor(losses)
        dtype = losses.dtype
        losses = _m.cast(losses, _dt.float32)
        w = _m.cast(1.0 if sample_weight is None else sample_weight, _dt.float32)
        losses, _, w = squeeze_or_expand_dimensions(losses, None, w)
        out = reduce_weighted_loss(losses * w, reduction)
        return _m.cast(out, dtype) if dtype != _dt.float32 else out


# options tf_keras 2.x writes in configs that TF 1.15's classes lack, at their default values
_TF_KERAS_DEFAULTS = {"ignore_class": None, "axis": -1, "multi_label": False, "num_labels": None,
                      "label_weights": None, "from_logits": False, "sparse_y_true": True, "sparse_y_pred": True}


def known_args(cls: type, config: Dict[str, Any]) -> Dict[str, Any]:
    """A config without what tf_keras 2.x adds that TF 1.15's classes lack ("fn", and the options
    of _TF_KERAS_DEFAULTS at their defaults), so a tf_keras file loads; another unknown option
    stays, and the class refuses it."""
    names = getattr(cls, "_arg_names", None)
    if names is None:
        params = inspect.signature(cls.__init__).parameters
        if any(p.kind == p.VAR_KEYWORD for p in params.values()):
            return dict(config)
        names = list(params)
    return {k: v for k, v in config.items()
            if k in names or not (k == "fn" or (k in _TF_KERAS_DEFAULTS and _TF_KERAS_DEFAULTS[k] == v))}


# -- classes ------------------------------------------------------------------------------------

class Loss:
    """Base of the Keras loss classes: subclasses define call(y_true, y_pred) (per-sample losses)."""

    def __init__(self, reduction: str = Reduction.AUTO, name: Optional[str] = None):
        Reduction.validate(reduction)
        self.reduction = reduction
        self.name = name

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> _g.Tensor:
        scope = "lambda" if self.name == "<lambda>" else self.name
        with _g.name_scope(scope or type(self).__name__):
            losses = self.call(y_true, y_pred)
            return compute_weighted_loss(losses, sample_weight, self.reduction)

    def call(self, y_true: Any, y_pred: Any) -> _g.Tensor:
        raise NotImplementedError("Must be implemented in subclasses.")

    def get_config(self) -> Dict[str, Any]:
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "Loss":
        return cls(**known_args(cls, config))


class LossFunctionWrapper(Loss):
    """A Loss of a function fn(y_true, y_pred, **kwargs)."""

    def __init__(self, fn: Callable, reduction: str = Reduction.AUTO, name: Optional[str] = None, **kwargs: Any):
        super().__init__(reduction=reduction, name=name)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true: Any, y_pred: Any) -> _g.Tensor:
        if _g.is_tensor(y_true) and _g.is_tensor(y_pred):
            y_pred, y_true, _ = squeeze_or_expand_dimensions(y_pred, y_true)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self) -> Dict[str, Any]:
        config = {k: (K.get_value(v) if _g.is_tensor(v) else v) for k, v in self._fn_kwargs.items()}
        return {**super().get_config(), **config}


# -- functions TF 1.15 adds --------------------------------------------------------------------

def categorical_hinge(y_true: Any, y_pred: Any) -> _g.Tensor:
    """max(0, max over wrong classes of y_pred - y_pred of the true class + 1)."""
    y_pred = _g.convert_to_tensor(y_pred)
    y_true = _m.cast(y_true, y_pred.dtype)
    pos = _m.reduce_sum(y_true * y_pred, axis=-1)
    neg = _m.reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return _m.maximum(0.0, neg - pos + 1.0)


def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> _g.Tensor:
    """Minus the cosine of y_true and y_pred along `axis` (a loss: -1 is best)."""
    y_pred = _g.convert_to_tensor(y_pred)
    y_true = _l2_normalize(_m.cast(y_true, y_pred.dtype), axis=axis)
    y_pred = _l2_normalize(y_pred, axis=axis)
    return -_m.reduce_sum(y_true * y_pred, axis=axis)


def huber_loss(y_true: Any, y_pred: Any, delta: float = 1.0) -> _g.Tensor:
    """0.5 e^2 where |e| <= delta, else delta (|e| - 0.5 delta); the mean over the last axis."""
    y_pred = _m.cast(y_pred, K.floatx())
    y_true = _m.cast(y_true, K.floatx())
    err = _m.abs(y_pred - y_true)
    quad = _m.minimum(err, delta)
    return _m.reduce_mean(0.5 * quad * quad + delta * (err - quad), axis=-1)


def _smoothed(y_true: _g.Tensor, label_smoothing: float, num_classes: Any) -> _g.Tensor:
    return y_true * (1.0 - label_smoothing) + label_smoothing / num_classes


def binary_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                        label_smoothing: float = 0) -> _g.Tensor:
    """keras/losses.py's binary_crossentropy with TF 1.15's label_smoothing (towards 1/2)."""
    y_pred = _g.convert_to_tensor(y_pred)
    y_true = _m.cast(y_true, y_pred.dtype)
    if label_smoothing:
        y_true = _smoothed(y_true, float(label_smoothing), 2.0)
    return _losses.binary_crossentropy(y_true, y_pred, from_logits=from_logits)


def categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                             label_smoothing: float = 0) -> _g.Tensor:
    """keras/losses.py's categorical_crossentropy with label_smoothing (towards 1/num_classes)."""
    y_pred = _g.convert_to_tensor(y_pred)
    y_true = _m.cast(y_true, y_pred.dtype)
    if label_smoothing:
        y_true = _smoothed(y_true, float(label_smoothing), _m.cast(_a.shape(y_true)[1], y_pred.dtype))
    return _losses.categorical_crossentropy(y_true, y_pred, from_logits=from_logits)


def _wrapper_class(cls_name: str, fn: Callable, default_name: str, doc: str) -> type:
    """A LossFunctionWrapper subclass of `fn` without options (MeanSquaredError, Hinge, ...)."""
    def __init__(self: Any, reduction: str = Reduction.AUTO, name: str = default_name) -> None:
        LossFunctionWrapper.__init__(self, fn, reduction=reduction, name=name)
    return type(cls_name, (LossFunctionWrapper,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


MeanSquaredError = _wrapper_class("MeanSquaredError", _losses.mean_squared_error, "mean_squared_error",
                                  "The mean of (y_true - y_pred)^2 over the last axis, reduced.")
MeanAbsoluteError = _wrapper_class("MeanAbsoluteError", _losses.mean_absolute_error, "mean_absolute_error",
                                   "The mean of |y_true - y_pred| over the last axis, reduced.")
MeanAbsolutePercentageError = _wrapper_class(
    "MeanAbsolutePercentageError", _losses.mean_absolute_percentage_error, "mean_absolute_percentage_error",
    "100 * the mean of |(y_true - y_pred) / y_true| over the last axis, reduced.")
MeanSquaredLogarithmicError = _wrapper_class(
    "MeanSquaredLogarithmicError", _losses.mean_squared_logarithmic_error, "mean_squared_logarithmic_error",
    "The mean of (log(y_true + 1) - log(y_pred + 1))^2 over the last axis, reduced.")
Hinge = _wrapper_class("Hinge", _losses.hinge, "hinge", "The mean of max(1 - y_true * y_pred, 0) (0/1 labels "
                       "taken as -1/1).")
SquaredHinge = _wrapper_class("SquaredHinge", _losses.squared_hinge, "squared_hinge",
                              "The mean of max(1 - y_true * y_pred, 0)^2 (0/1 labels taken as -1/1).")
CategoricalHinge = _wrapper_class("CategoricalHinge", categorical_hinge, "categorical_hinge",
                                  "max(0, the top wrong score - the true class's score + 1).")
Poisson = _wrapper_class("Poisson", _losses.poisson, "poisson", "The mean of y_pred - y_true * log(y_pred).")
LogCosh = _wrapper_class("LogCosh", _losses.logcosh, "logcosh", "The mean of log(cosh(y_pred - y_true)).")
KLDivergence = _wrapper_class("KLDivergence", _losses.kullback_leibler_divergence, "kullback_leibler_divergence",
                              "The sum of y_true * log(y_true / y_pred) (both clipped to [eps, 1]).")


class BinaryCrossentropy(LossFunctionWrapper):
    """The cross-entropy of 0/1 labels and probabilities (or logits: from_logits=True)."""

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0, reduction: str = Reduction.AUTO,
                 name: str = "binary_crossentropy"):
        super().__init__(binary_crossentropy, reduction=reduction, name=name, from_logits=from_logits,
                         label_smoothing=label_smoothing)
        self.from_logits = from_logits


class CategoricalCrossentropy(LossFunctionWrapper):
    """The cross-entropy of one-hot labels and class probabilities (or logits)."""

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0, reduction: str = Reduction.AUTO,
                 name: str = "categorical_crossentropy"):
        super().__init__(categorical_crossentropy, reduction=reduction, name=name, from_logits=from_logits,
                         label_smoothing=label_smoothing)


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """The cross-entropy of integer labels and class probabilities (or logits)."""

    def __init__(self, from_logits: bool = False, reduction: str = Reduction.AUTO,
                 name: str = "sparse_categorical_crossentropy"):
        super().__init__(_losses.sparse_categorical_crossentropy, reduction=reduction, name=name,
                         from_logits=from_logits)


class Huber(LossFunctionWrapper):
    """Quadratic for errors up to delta, linear beyond."""

    def __init__(self, delta: float = 1.0, reduction: str = Reduction.AUTO, name: str = "huber_loss"):
        super().__init__(huber_loss, reduction=reduction, name=name, delta=delta)


class CosineSimilarity(LossFunctionWrapper):
    """Minus the cosine of y_true and y_pred along `axis`."""

    def __init__(self, axis: int = -1, reduction: str = Reduction.AUTO, name: str = "cosine_similarity"):
        super().__init__(cosine_similarity, reduction=reduction, name=name, axis=axis)


# the accuracy compile's "accuracy" picks for a Loss object goes by the function it wraps
for _cls, _fn in ((BinaryCrossentropy, _losses.binary_crossentropy),
                  (CategoricalCrossentropy, _losses.categorical_crossentropy)):
    _cls._accuracy_hint = staticmethod(_fn)

# aliases (TF 1.15's names)
log_cosh = _losses.logcosh
kld = KLD = kl_divergence = _losses.kullback_leibler_divergence
MSE = _losses.mean_squared_error
MAE = _losses.mean_absolute_error
MAPE = mape = _losses.mean_absolute_percentage_error
MSLE = msle = _losses.mean_squared_logarithmic_error
cosine = cosine_proximity = cosine_similarity

# compile(loss="categorical_hinge") etc.: the string table of keras/losses.py gets the new ones
_losses._LOSSES.update(categorical_hinge=categorical_hinge, cosine_similarity=cosine_similarity,
                       cosine_proximity=cosine_similarity, cosine=cosine_similarity, huber_loss=huber_loss,
                       log_cosh=_losses.logcosh, kl_divergence=_losses.kullback_leibler_divergence,
                       MSE=MSE, MAE=MAE, MAPE=MAPE, MSLE=MSLE, KLD=KLD)


def _objects() -> Dict[str, Any]:
    from . import focal_losses as _focal
    out: Dict[str, Any] = dict(_losses._LOSSES)
    out.update({n: globals()[n] for n in __all__ if inspect.isclass(globals()[n]) and n != "Reduction"})
    out.update({n: getattr(_focal, n) for n in _focal.__all__})
    return out


def serialize(loss: Any) -> Any:
    """A Loss as {"class_name", "config"}; a function as its name."""
    if loss is None:
        return None
    if hasattr(loss, "get_config"):
        return {"class_name": type(loss).__name__, "config": loss.get_config()}
    if hasattr(loss, "__name__"):
        return loss.__name__
    raise ValueError(f"Cannot serialize {loss!r}")


def deserialize_named(name: Any, objects: Dict[str, Any], kind: str) -> Any:
    """A function from its name, or an object from its {"class_name", "config"}, looked up in
    `objects`, with Keras's errors naming the `kind` ("loss", "metric")."""
    if isinstance(name, dict):
        if "class_name" not in name or "config" not in name:
            raise ValueError(f"Improper config format: {name}")
        cls = objects.get(name["class_name"])
        if cls is None:
            raise ValueError(f"Unknown {kind} function: {name['class_name']}")
        return cls.from_config(name["config"]) if hasattr(cls, "from_config") else cls(**name["config"])
    if isinstance(name, str):
        if name not in objects:
            raise ValueError(f"Unknown {kind} function:{name}")
        return objects[name]
    raise ValueError(f"Could not interpret serialized {kind} function: {name}")


def deserialize(name: Any, custom_objects: Optional[Dict[str, Any]] = None) -> Any:
    """A loss function from its name, or a Loss from its {"class_name", "config"}."""
    return deserialize_named(name, {**_objects(), **(custom_objects or {})}, "loss")


def get(identifier: Any) -> Any:
    """A loss from a name, a config dict, a Loss or a function (None stays None)."""
    if identifier is None:
        return None
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss function identifier: {identifier}")


# compile(loss=tf.keras.losses.binary_crossentropy): "accuracy" picks by the base function
binary_crossentropy._accuracy_hint = _losses.binary_crossentropy  # type: ignore[attr-defined]
categorical_crossentropy._accuracy_hint = _losses.categorical_crossentropy  # type: ignore[attr-defined]


def compiled_loss(loss: Loss, y_true: Any, y_pred: Any, sample_weight: Any, mask: Any) -> _g.Tensor:
    """An output's loss in Model.compile for a Loss object (TF 1.15's rule): call()'s per-sample
    losses, weighted, reduced by the object's own reduction (AUTO as SUM_OVER_BATCH_SIZE); a
    mask of padded steps as the string losses' path takes it (keras/engine.py)."""
    if loss.reduction == Reduction.NONE:
        raise ValueError("A Loss with reduction NONE gives a loss per sample, which compile cannot train on or "
                         "report (collflow); use SUM or SUM_OVER_BATCH_SIZE")
    per = loss.call(y_true, y_pred)
    if mask is not None:
        mk = _m.cast(mask, per.dtype)
        per = per * mk / _m.reduce_mean(mk)
    return compute_weighted_loss(per, sample_weight, loss.reduction)
