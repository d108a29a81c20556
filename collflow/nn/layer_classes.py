"""tf.layers' classes (TensorFlow 1.x): Dense, Conv1D, Conv2D, the pooling layers, Flatten,
Dropout, BatchNormalization, as objects over the functional layers (nn/layers.py).

A layer keeps its configuration; its first call creates its variables in a variable scope of
its own (`name`, or the functional layer's name made unique: dense, dense_1, ... - the
same names as tf.layers.Dense gives) and every later call reuses them (re-entering that scope
exactly, wherever it is called from).  `variables`, `trainable_variables`,
`non_trainable_variables` (and the `weights` aliases), `kernel`/`bias` where there are such,
`built`, `name`, `apply(inputs)`.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from ..graph import graph as _g
from ..graph.graph import GraphKeys
from contextlib import nullcontext as _nullcontext

from ..graph.variable_scope import VariableScope, constraint_defaults, variable_scope
from .layer_extras import CONSTRAINED_NAMES, add_activity_loss, constraints_by_variable
from . import layers as _fl

__all__ = ["Layer", "Dense", "Conv1D", "Conv2D", "SeparableConv2D", "SeparableConv1D", "MaxPooling1D", "MaxPooling2D", "AveragePooling1D",
           "AveragePooling2D", "Flatten", "Dropout", "BatchNormalization"]


class Layer:
    """A layer object (see the module doc).  Subclasses say their functional layer
    (`_call(inputs, name, reuse, **call_kwargs)`) and its default name (`_base`)."""

    _base = "layer"
    _has_vars = True
    # tf.layers re-enter a scope named explicitly (TF1's); Keras layers take a graph-unique
    # scope from their name (TF's Keras: a second model loaded with the same layer names puts
    # its variables under dense_2/, dense_1_1/, ...)
    _unique_scope = False

    def __init__(self, trainable: bool = True, name: Optional[str] = None, **kwargs: Any):
        kwargs.pop("dtype", None)  # the inputs' dtype decides, as the functional layers do
        # kernel_constraint= etc.: the variables named "kernel", ... carry them (TF1's layers)
        self._constraints = constraints_by_variable(kwargs)
        for k in CONSTRAINED_NAMES:
            kwargs.pop(k + "_constraint", None)
        self._activity_regularizer = kwargs.pop("activity_regularizer", None)
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected keyword arguments {sorted(kwargs)}")
        self.trainable = bool(trainable)
        self._name = name
        self._scope: Any = None
        self._vars: List[Any] = []
        self.built = False

    @property
    def name(self) -> str:
        return self._scope.name.rsplit("/", 1)[-1] if self._scope is not None else (self._name or self._base)

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        x = _g.convert_to_tensor(inputs)
        g = x.graph
        with g.as_default():
            if not self._has_vars:
                return self._call(x, self._name, None, *args, **kwargs)
            first = self._scope is None
            if first:
                if self._unique_scope:
                    # TF 1.x Keras: the layer's name scope (its name, made unique inside the
                    # current name scope) names its weights: tf.name_scope / K.name_scope
                    # around a Keras layer prefix them, a variable scope only through the name
                    # scope it opens, and its reuse does not apply
                    with g.name_scope(self._name or self._base) as ns_first:
                        pass
                    self._scope = VariableScope(reuse=None, name=ns_first.rstrip("/"), name_scope=ns_first)
                else:
                    with variable_scope(self._name, default_name=self._base) as vs:
                        self._scope = vs   # the unique name is taken now; the call re-enters it
                before = set(id(v) for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES))
            # TF1's tf.layers object: every call's ops go under the scope's original name scope
            # (dense/BiasAdd, dense/BiasAdd_1); Keras layers take a new name scope per call
            # after the first, whose ops go under the name scope just taken
            ns = self._scope.original_name_scope if (not self._unique_scope or first) else ""
            with constraint_defaults(self._constraints) if self._constraints else _nullcontext(), \
                    (g.name_scope(ns) if ns else _nullcontext()):
                out = self._call(x, self._scope, None if first else True, *args, **kwargs)
            if self._activity_regularizer is not None:
                add_activity_loss(self._activity_regularizer, out, self._scope.name)
            if first:
                self._vars = [v for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES) if id(v) not in before]
                self.built = True
            return out

    apply = __call__

    def _call(self, x: Any, name: Any, reuse: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    # -- variables ------------------------------------------------------------------------------
    @property
    def variables(self) -> List[Any]:
        return list(self._vars)

    @property
    def trainable_variables(self) -> List[Any]:
        return [v for v in self._vars if v.trainable]

    @property
    def non_trainable_variables(self) -> List[Any]:
        return [v for v in self._vars if not v.trainable]

    weights = variables
    trainable_weights = trainable_variables

    def _checkpoint_children(self) -> List[Any]:
        """Object checkpoints' children (train/trackable.py): the variables by the names they
        were made with (kernel, bias, ...)."""
        from ..train.trackable import weight_children
        return weight_children(self._vars)
    non_trainable_weights = non_trainable_variables

    def _var(self, suffix: str) -> Any:
        for v in self._vars:
            if v.op.name.endswith("/" + suffix):
                return v
        return None

    @property
    def kernel(self) -> Any:
        return self._var("kernel")

    @property
    def bias(self) -> Any:
        return self._var("bias")


def _config(**kw: Any) -> Dict[str, Any]:
    return kw


class Dense(Layer):
    """tf.layers.Dense: activation(inputs @ kernel + bias)."""

    _base = "dense"

    def __init__(self, units: int, activation: Any = None, use_bias: bool = True, kernel_initializer: Any = None,
                 bias_initializer: Any = None, kernel_regularizer: Optional[Callable] = None,
                 bias_regularizer: Optional[Callable] = None, trainable: bool = True, name: Optional[str] = None,
                 **kwargs: Any):
        super().__init__(trainable, name, **kwargs)
        self.units = int(units)
        self._cfg = _config(units=self.units, activation=activation, use_bias=use_bias,
                            kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                            kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer)

    def _call(self, x: Any, name: Any, reuse: Any) -> Any:
        return _fl.dense(x, trainable=self.trainable, name=name, reuse=reuse, **self._cfg)


class _Conv(Layer):
    _fn: Callable = staticmethod(lambda *a, **k: None)

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 data_format: str = "channels_last", dilation_rate: Any = 1, activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = None, bias_initializer: Any = None,
                 kernel_regularizer: Optional[Callable] = None, bias_regularizer: Optional[Callable] = None,
                 trainable: bool = True, name: Optional[str] = None, **kwargs: Any):
        super().__init__(trainable, name, **kwargs)
        self.filters = int(filters)
        self._cfg = _config(filters=self.filters, kernel_size=kernel_size, strides=strides, padding=padding,
                            data_format=data_format, dilation_rate=dilation_rate, activation=activation,
                            use_bias=use_bias, kernel_initializer=kernel_initializer,
                            bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                            bias_regularizer=bias_regularizer)

    def _call(self, x: Any, name: Any, reuse: Any) -> Any:
        return type(self)._fn(x, trainable=self.trainable, name=name, reuse=reuse, **self._cfg)


class Conv1D(_Conv):
    """tf.layers.Conv1D over [batch, width, channels]."""
    _base = "conv1d"
    _fn = staticmethod(_fl.conv1d)


class Conv2D(_Conv):
    """tf.layers.Conv2D over NHWC inputs."""
    _base = "conv2d"
    _fn = staticmethod(_fl.conv2d)

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
                 data_format: str = "channels_last", dilation_rate: Any = (1, 1), **kwargs: Any):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, **kwargs)


class SeparableConv2D(Layer):
    """tf.layers.SeparableConv2D over NHWC inputs (see layers.separable_conv2d)."""

    _base = "separable_conv2d"

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
                 data_format: str = "channels_last", dilation_rate: Any = (1, 1), depth_multiplier: int = 1,
                 activation: Any = None, use_bias: bool = True, depthwise_initializer: Any = None,
                 pointwise_initializer: Any = None, bias_initializer: Any = None,
                 depthwise_regularizer: Optional[Callable] = None, pointwise_regularizer: Optional[Callable] = None,
                 bias_regularizer: Optional[Callable] = None, trainable: bool = True, name: Optional[str] = None,
                 **kwargs: Any):
        super().__init__(trainable, name, **kwargs)
        self.filters = int(filters)
        self._cfg = _config(filters=self.filters, kernel_size=kernel_size, strides=strides, padding=padding,
                            data_format=data_format, dilation_rate=dilation_rate, depth_multiplier=depth_multiplier,
                            activation=activation, use_bias=use_bias, depthwise_initializer=depthwise_initializer,
                            pointwise_initializer=pointwise_initializer, bias_initializer=bias_initializer,
                            depthwise_regularizer=depthwise_regularizer, pointwise_regularizer=pointwise_regularizer,
                            bias_regularizer=bias_regularizer)

    def _call(self, x: Any, name: Any, reuse: Any) -> Any:
        return _fl.separable_conv2d(x, trainable=self.trainable, name=name, reuse=reuse, **self._cfg)

    @property
    def depthwise_kernel(self) -> Any:
        return self._var("depthwise_kernel")

    @property
    def pointwise_kernel(self) -> Any:
        return self._var("pointwise_kernel")


class SeparableConv1D(SeparableConv2D):
    """tf.layers.SeparableConv1D over [n, w, in] inputs (see layers.separable_conv1d)."""

    _base = "separable_conv1d"

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 data_format: str = "channels_last", dilation_rate: Any = 1, depth_multiplier: int = 1,
                 **kwargs: Any):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, depth_multiplier,
                         **kwargs)

    def _call(self, x: Any, name: Any, reuse: Any) -> Any:
        return _fl.separable_conv1d(x, trainable=self.trainable, name=name, reuse=reuse, **self._cfg)


class _Pool(Layer):
    _has_vars = False
    _fn: Callable = staticmethod(lambda *a, **k: None)

    def __init__(self, pool_size: Any, strides: Any, padding: str = "valid", data_format: str = "channels_last",
                 name: Optional[str] = None, **kwargs: Any):
        super().__init__(True, name, **kwargs)
        self._cfg = _config(pool_size=pool_size, strides=strides, padding=padding, data_format=data_format)

    def _call(self, x: Any, name: Any, reuse: Any) -> Any:
        return type(self)._fn(x, name=name, **self._cfg)


class MaxPooling1D(_Pool):
    """tf.layers.MaxPooling1D."""
    _base = "max_pooling1d"
    _fn = staticmethod(_fl.max_pooling1d)


class MaxPooling2D(_Pool):
    """tf.layers.MaxPooling2D."""
    _base = "max_pooling2d"
    _fn = staticmethod(_fl.max_pooling2d)


class AveragePooling1D(_Pool):
    """tf.layers.AveragePooling1D."""
    _base = "average_pooling1d"
    _fn = staticmethod(_fl.average_pooling1d)


class AveragePooling2D(_Pool):
    """tf.layers.AveragePooling2D."""
    _base = "average_pooling2d"
    _fn = staticmethod(_fl.average_pooling2d)


class Flatten(Layer):
    """tf.layers.Flatten: [n, ...] -> [n, prod(...)]."""
    _base = "flatten"
    _has_vars = False

    def __init__(self, data_format: str = "channels_last", name: Optional[str] = None, **kwargs: Any):
        super().__init__(True, name, **kwargs)
        self.data_format = data_format or "channels_last"

    def _call(self, x: Any, name: Any, reuse: Any) -> Any:
        if self.data_format == "channels_first" and x.shape.rank is not None and x.shape.rank > 2:
            # Keras flattens channels_first inputs in channels_last order: the channel axis
            # moves last first, so the features come out as a channels_last model's would
            from ..graph.ops import array_ops as _a
            x = _a.transpose(x, [0] + list(range(2, x.shape.rank)) + [1])
        return _fl.flatten(x, name=name)


class Dropout(Layer):
    """tf.layers.Dropout: call(inputs, training=False)."""
    _base = "dropout"
    _has_vars = False

    def __init__(self, rate: float = 0.5, noise_shape: Any = None, seed: Optional[int] = None,
                 name: Optional[str] = None, **kwargs: Any):
        super().__init__(True, name, **kwargs)
        self.rate = rate
        self._cfg = _config(rate=rate, noise_shape=noise_shape, seed=seed)

    def _call(self, x: Any, name: Any, reuse: Any, training: Any = False) -> Any:
        return _fl.dropout(x, training=training, name=name, **self._cfg)


class BatchNormalization(Layer):
    """tf.layers.BatchNormalization: call(inputs, training=False); moving-average updates go
    to UPDATE_OPS as with the functional layer."""
    _base = "batch_normalization"

    def __init__(self, axis: Any = -1, momentum: float = 0.99, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer: Any = None, gamma_initializer: Any = None,
                 moving_mean_initializer: Any = None, moving_variance_initializer: Any = None,
                 beta_regularizer: Optional[Callable] = None, gamma_regularizer: Optional[Callable] = None,
                 trainable: bool = True, name: Optional[str] = None, renorm: bool = False,
                 renorm_clipping: Any = None, renorm_momentum: float = 0.99, fused: Optional[bool] = None,
                 virtual_batch_size: Optional[int] = None, adjustment: Any = None, **kwargs: Any):
        super().__init__(trainable, name, **kwargs)
        self._cfg = _config(axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                            beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
                            moving_mean_initializer=moving_mean_initializer,
                            moving_variance_initializer=moving_variance_initializer,
                            beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
                            renorm=renorm, renorm_clipping=renorm_clipping, renorm_momentum=renorm_momentum,
                            fused=fused, virtual_batch_size=virtual_batch_size, adjustment=adjustment)

    def _call(self, x: Any, name: Any, reuse: Any, training: Any = False) -> Any:
        return _fl.batch_normalization(x, training=training, trainable=self.trainable, name=name, reuse=reuse,
                                       **self._cfg)

    @property
    def moving_mean(self) -> Any:
        return self._var("moving_mean")

    @property
    def moving_variance(self) -> Any:
        return self._var("moving_variance")

    @property
    def gamma(self) -> Any:
        return self._var("gamma")

    @property
    def beta(self) -> Any:
        return self._var("beta")
