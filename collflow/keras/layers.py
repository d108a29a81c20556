"""tf.keras.layers in TF1's graph mode, over collflow's tf.layers classes: Keras's argument
names and defaults (string activations and initializers, `input_shape`/`input_dim` on a
first layer, `training=None` meaning the learning phase), and a record of each call (the
layer and its input) that a functional Model walks.  Variables are named as TF1's Keras
names them (dense/kernel, conv2d_1/bias, batch_normalization/moving_mean, ...)."""
from __future__ import annotations

import weakref
from typing import Any, Callable, List, Optional, Sequence

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops.constant_op import placeholder as _placeholder
from ..nn import layer_classes as _lc
from ..nn import layers as _fl
from ..graph.variable_scope import constraint_defaults
from ..nn.layer_extras import add_activity_loss, constraints_by_variable
from . import backend as K

__all__ = ["Input", "InputLayer", "Dense", "Conv1D", "Conv2D", "MaxPooling1D", "MaxPooling2D", "MaxPool2D",
           "AveragePooling1D", "AveragePooling2D", "AvgPool2D", "Flatten", "Dropout", "BatchNormalization",
           "Activation", "Embedding", "Reshape", "Concatenate", "concatenate", "Add", "add",
           "GlobalAveragePooling2D", "GlobalMaxPooling2D", "Lambda", "Masking", "history_of", "node_of",
           "register_call", "mask_of", "set_mask", "input_layer_of"]

# tensor -> (layer, input tensors): how a functional Model finds its layers
_HISTORY: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


# tensor -> its Keras mask ([batch, time] bool): which steps are real
_MASKS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def mask_of(t: Any) -> Any:
    """The Keras mask a tensor carries (None if none)."""
    return _MASKS.get(t) if isinstance(t, _g.Tensor) else None


def set_mask(t: Any, mask: Any) -> None:
    if mask is not None:
        _MASKS[t] = mask


def history_of(t: Any) -> Optional[tuple]:
    """(layer, inputs) that made tensor `t` (None for a tensor no Keras layer made)."""
    rec = _HISTORY.get(t)
    return None if rec is None else (rec[0], rec[1])


def node_of(t: Any) -> Optional[tuple]:
    """(layer, call index, output index) that made tensor `t` (a saved model's inbound node)."""
    rec = _HISTORY.get(t)
    return None if rec is None else (rec[0], rec[2], rec[3])


def _only_call(layer: Any) -> tuple:
    calls = layer.__dict__.get("_keras_calls", [])
    if not calls:
        raise AttributeError(f"Layer {layer.name} is not connected, no input to return.")
    if len(calls) > 1:
        raise AttributeError(f"Layer {layer.name} has multiple inbound nodes, hence the notion of \"layer output\" "
                             "is ill-defined. Use `get_output_at(node_index)` instead.")
    return calls[0]


def register_call(layer: Any, inputs: Any, outputs: Any) -> None:
    """Records a call of `layer`: its outputs' history (layer, inputs, call index, output index)."""
    ins = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    nodes = layer.__dict__.setdefault("_keras_nodes", [])
    nodes.append(ins)
    outs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    layer.__dict__.setdefault("_keras_calls", []).append((inputs, outputs))
    for i, o in enumerate(outs):
        if isinstance(o, _g.Tensor):
            _HISTORY[o] = (layer, ins, len(nodes) - 1, i)


def _activation(a: Any) -> Any:
    if a is None or callable(a):
        return a
    from .losses import activation
    fn = activation(a)
    return None if a == "linear" else fn


def _regularizer(r: Any) -> Any:
    """A regularizer from a callable or a Keras config dict ({"class_name": "L1L2", ...})."""
    if isinstance(r, dict):
        from .losses import l1_l2
        cfg = r.get("config") or {}
        return l1_l2(l1=float(cfg.get("l1", 0.0)), l2=float(cfg.get("l2", 0.0)))
    return r


def _initializer(i: Any) -> Any:
    from .initializers import get
    return get(i)


def _input_shape_kwargs(kwargs: dict) -> Optional[tuple]:
    """Takes Keras's input_shape / batch_input_shape / input_dim out of kwargs."""
    shape = None
    if "batch_input_shape" in kwargs:
        shape = tuple(kwargs.pop("batch_input_shape"))
    if "input_shape" in kwargs:
        shape = (None,) + tuple(kwargs.pop("input_shape"))
    if "input_dim" in kwargs:
        shape = (None, int(kwargs.pop("input_dim")))
    for k in ("dtype", "input_length", "weights", "activity_regularizer", "kernel_constraint", "bias_constraint",
              "embeddings_constraint", "beta_constraint", "gamma_constraint", "autocast", "dynamic"):
        if kwargs.get(k) is not None and k in ("weights",):
            raise NotImplementedError(f"Keras layer argument {k}= is not supported by collflow")
        kwargs.pop(k, None)
    return shape


def _unique_name(prefix: str) -> str:
    uid = K.get_uid(prefix)
    return prefix if uid == 1 else f"{prefix}_{uid - 1}"


class _CallRecord:
    """input_shape, and the input and output of a Keras layer's one call."""

    _batch_input_shape: Optional[tuple] = None

    @property
    def input_shape(self) -> Optional[tuple]:
        return self._batch_input_shape

    @property
    def output(self) -> Any:
        """The output of the layer's one call (a feature extractor's tensor)."""
        return _only_call(self)[1]

    @property
    def input(self) -> Any:
        return _only_call(self)[0]

    # list attributes tf_keras tracks as (empty) checkpoint nodes before the weights
    _CHECKPOINT_LISTS: tuple = ()

    def _checkpoint_children(self) -> List[Any]:
        """Object checkpoints' children (train/trackable.py): the weights by the names they
        were made with (kernel, bias, ...), as Keras tracks them."""
        from ..train.trackable import cached_node, weight_children
        return [(n, cached_node(self, n)) for n in self._CHECKPOINT_LISTS] + \
            weight_children(getattr(self, "weights", []))


class _KerasMixin(_CallRecord):
    """Keras's call convention over a collflow layer class."""

    _batch_input_shape: Optional[tuple] = None
    _takes_training = False
    # masks (Embedding(mask_zero=True), Masking): a layer that supports them passes its input's
    # mask on; one that consumes it (the recurrent layers) gets it as `mask`; others drop it
    _supports_masking = False
    _consumes_mask = False

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        obj = super().__new__(cls)
        obj._init_args = (args, dict(kwargs))  # get_config: the arguments it was made with
        # Keras names a layer when it is made (dense, dense_1, ... per graph), not when it is
        # first called: Dense(4)(Dense(6)(x)) makes the outer layer "dense", as TF does
        obj._auto_name = _unique_name(cls._base) if kwargs.get("name") is None else None
        # *_constraint= and activity_regularizer= (taken out of kwargs before the collflow
        # layer class sees them): the new variables carry the constraints, the outputs' penalty
        # joins the layer's losses
        from .constraints import get as _get_constraint
        obj._keras_constraints = constraints_by_variable(
            {k: _get_constraint(v) for k, v in kwargs.items() if k.endswith("_constraint")})
        obj._keras_activity_regularizer = kwargs.get("activity_regularizer")
        # dtype=: the layer's mixed-precision policy (keras/mixed_precision.py; None: the global one)
        from .mixed_precision import policy_of
        obj._dtype_policy = policy_of(kwargs.get("dtype"))
        if kwargs.get("autocast") is not None:
            obj._autocast = bool(kwargs["autocast"])
        return obj

    _autocast = True  # cast floating inputs to the policy's compute dtype (not Embedding's ids)

    @property
    def dtype(self) -> Any:
        """The dtype of the layer's variables (its policy's; None under 'infer')."""
        return self._dtype_policy.variable_dtype

    @property
    def _compute_dtype(self) -> Any:
        return self._dtype_policy.compute_dtype

    _unique_scope = True

    @property
    def name(self) -> str:
        # the layer's own name, not its variable scope's (dense_2/ when "dense" was taken)
        return getattr(self, "_name", None) or getattr(self, "_auto_name", None) or self._base  # type: ignore[attr-defined]

    def __call__(self, inputs: Any, *args: Any, training: Any = None, **kwargs: Any) -> Any:
        if self._name is None:  # type: ignore[attr-defined]
            self._name = self._auto_name or _unique_name(self._base)  # type: ignore[attr-defined]
        if self._takes_training:
            kwargs["training"] = K.learning_phase() if training is None else training
        # a mask into a layer that neither supports nor consumes masks is dropped, as TF 1.15's
        # __call__ drops it (its compute_mask is not called there); the output has no mask
        in_mask = mask_of(inputs) if (self._supports_masking or self._consumes_mask) else None
        if self._consumes_mask:
            # a mask given to the call (layer(x, mask=m)) wins over the one x carries, as in TF
            if kwargs.get("mask") is not None:
                in_mask = kwargs["mask"]
            kwargs["mask"] = in_mask
        g = _g.get_default_graph()
        before = {k: len(g.get_collection(k)) for k in (GraphKeys.UPDATE_OPS, GraphKeys.REGULARIZATION_LOSSES)}
        # always this layer's constraints (even none): a wrapped layer does not take its wrapper's
        # the policy: floating inputs cast to its compute dtype, float32 variables read in it
        from .mixed_precision import autocast_scope, cast_inputs
        policy = getattr(self, "_dtype_policy", None)
        cast = cast_inputs(policy, inputs) if self._autocast else inputs
        with constraint_defaults(getattr(self, "_keras_constraints", {})), \
                autocast_scope(policy, g, cast, first=not getattr(self, "built", False)):
            out = super().__call__(cast, *args, **kwargs)  # type: ignore[misc]
        activity = getattr(self, "_keras_activity_regularizer", None)
        if activity is not None:
            first = out[0] if isinstance(out, (list, tuple)) else out  # a recurrent layer's states are not
            add_activity_loss(_regularizer(activity), first, self.name)  # type: ignore[attr-defined]
        out_mask = self._output_mask(inputs, in_mask)
        if out_mask is not None:
            _MASKS[out[0] if isinstance(out, (list, tuple)) else out] = out_mask
        # what this call added: the moving-average updates fit() runs, the penalties it adds
        new_updates = g.get_collection(GraphKeys.UPDATE_OPS)[before[GraphKeys.UPDATE_OPS]:]
        self.updates = getattr(self, "updates", []) + new_updates
        self.losses = getattr(self, "losses", []) + \
            g.get_collection(GraphKeys.REGULARIZATION_LOSSES)[before[GraphKeys.REGULARIZATION_LOSSES]:]
        register_call(self, inputs, out)  # a recurrent layer's outputs are [output, *states]
        return out

    def _output_mask(self, inputs: Any, mask: Any) -> Any:
        return mask if self._supports_masking else None

    def get_weights(self) -> List[Any]:
        return K.batch_get_value(self.weights)  # type: ignore[attr-defined]

    def set_weights(self, weights: Sequence[Any]) -> None:
        ws = self.weights  # type: ignore[attr-defined]
        if len(ws) != len(weights):
            name = self.name  # type: ignore[attr-defined]
            raise ValueError(f"You called `set_weights(weights)` on layer \"{name}\" with a weight list of "
                             f"length {len(weights)}, but the layer was expecting {len(ws)} weights.")
        K.batch_set_value(list(zip(ws, weights)))


class Dense(_KerasMixin, _lc.Dense):
    _supports_masking = True
    def __init__(self, units: int, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Optional[Callable] = None, bias_regularizer: Optional[Callable] = None,
                 **kwargs: Any):
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        super().__init__(units, _activation(activation), use_bias, _initializer(kernel_initializer),
                         _initializer(bias_initializer), kernel_regularizer, bias_regularizer, **kwargs)


def _conv_init(init: Callable, self: Any, filters: int, kernel_size: Any, strides: Any, padding: str,
               data_format: Optional[str], dilation_rate: Any, activation: Any, use_bias: bool,
               kernel_initializer: Any, bias_initializer: Any, kernel_regularizer: Any, bias_regularizer: Any,
               kwargs: dict) -> None:
    """A Keras convolution's arguments, resolved, to the collflow layer's constructor `init`."""
    self._batch_input_shape = _input_shape_kwargs(kwargs)
    kwargs.pop("groups", None) if kwargs.get("groups", 1) == 1 else None
    init(filters, kernel_size, strides, padding, K.normalize_data_format(data_format), dilation_rate,
         activation=_activation(activation), use_bias=use_bias, kernel_initializer=_initializer(kernel_initializer),
         bias_initializer=_initializer(bias_initializer), kernel_regularizer=kernel_regularizer,
         bias_regularizer=bias_regularizer, **kwargs)


class Conv2D(_KerasMixin, _lc.Conv2D):
    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
                 data_format: Optional[str] = None, dilation_rate: Any = (1, 1), activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Optional[Callable] = None, bias_regularizer: Optional[Callable] = None,
                 **kwargs: Any):
        _conv_init(super().__init__, self, filters, kernel_size, strides, padding, data_format, dilation_rate,
                   activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
                   kwargs)


class Conv1D(_KerasMixin, _lc.Conv1D):
    # Keras's 1-D layers default to channels_last, not to image_data_format()
    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 data_format: Optional[str] = "channels_last", dilation_rate: Any = 1, activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Optional[Callable] = None, bias_regularizer: Optional[Callable] = None,
                 **kwargs: Any):
        _conv_init(super().__init__, self, filters, kernel_size, strides, padding, data_format, dilation_rate,
                   activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
                   kwargs)


def _pool(base: type, default_format: Optional[str] = None) -> type:
    """A Keras pooling class over the tf.layers one; default_format: the data_format default
    (None: image_data_format(); Keras's 1-D poolings say channels_last)."""
    class Pool(_KerasMixin, base):
        def __init__(self, pool_size: Any = 2, strides: Any = None, padding: str = "valid",
                     data_format: Optional[str] = default_format, **kwargs: Any):
            self._batch_input_shape = _input_shape_kwargs(kwargs)
            kwargs.pop("trainable", None)  # no weights (a saved config still lists it)
            super().__init__(pool_size, strides if strides is not None else pool_size, padding,
                             K.normalize_data_format(data_format), **kwargs)
    Pool.__name__ = Pool.__qualname__ = base.__name__
    return Pool


MaxPooling1D = _pool(_lc.MaxPooling1D, "channels_last")
MaxPooling2D = MaxPool2D = _pool(_lc.MaxPooling2D)
AveragePooling1D = _pool(_lc.AveragePooling1D, "channels_last")
AveragePooling2D = AvgPool2D = _pool(_lc.AveragePooling2D)


class Flatten(_KerasMixin, _lc.Flatten):
    def __init__(self, data_format: Optional[str] = None, **kwargs: Any):
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        kwargs.pop("trainable", None)
        super().__init__(K.normalize_data_format(data_format), **kwargs)


class Dropout(_KerasMixin, _lc.Dropout):
    """Dropout in the learning phase (fit), the identity otherwise."""
    _supports_masking = True
    _takes_training = True

    def __init__(self, rate: float, noise_shape: Any = None, seed: Optional[int] = None, **kwargs: Any):
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        kwargs.pop("trainable", None)
        super().__init__(rate, noise_shape, seed, **kwargs)


class BatchNormalization(_KerasMixin, _lc.BatchNormalization):
    """Batch statistics in the learning phase, the moving ones otherwise; the moving-average
    updates go to UPDATE_OPS (fit runs them)."""
    _supports_masking = True
    _takes_training = True
    _CHECKPOINT_LISTS = ("axis",)

    def __init__(self, axis: Any = -1, momentum: float = 0.99, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer: Any = "zeros", gamma_initializer: Any = "ones",
                 moving_mean_initializer: Any = "zeros", moving_variance_initializer: Any = "ones",
                 beta_regularizer: Optional[Callable] = None, gamma_regularizer: Optional[Callable] = None,
                 **kwargs: Any):
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        super().__init__(axis, momentum, epsilon, center, scale, _initializer(beta_initializer),
                         _initializer(gamma_initializer), _initializer(moving_mean_initializer),
                         _initializer(moving_variance_initializer), beta_regularizer, gamma_regularizer, **kwargs)


class _Stateless(_KerasMixin, _lc.Layer):
    """A Keras layer without variables: `_fn(x)` under a name scope named after the layer."""
    _has_vars = False

    def __init__(self, name: Optional[str] = None, **kwargs: Any):
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        kwargs.pop("trainable", None)
        super().__init__(True, name, **kwargs)

    def _call(self, x: Any, name: Any, reuse: Any, *args: Any, **kwargs: Any) -> Any:
        with _g.name_scope(name or self._base):
            return self._fn(x)

    def _fn(self, x: Any) -> Any:
        raise NotImplementedError


class Activation(_Stateless):
    _supports_masking = True
    _base = "activation"

    def __init__(self, activation: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self._act = _activation(activation)

    def _fn(self, x: Any) -> Any:
        return x if self._act is None else self._act(x)


class Reshape(_Stateless):
    _base = "reshape"

    def __init__(self, target_shape: Sequence[int], **kwargs: Any):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)

    def _fn(self, x: Any) -> Any:
        # Keras reshapes to (shape(x)[0],) + target_shape: the target may hold its own -1,
        # resolved here from the static feature shape where it is known
        target = list(self.target_shape)
        if -1 not in target:
            return _a.reshape(x, [-1] + target)
        feats = x.shape.dims[1:] if x.shape.rank is not None else [None]
        known = 1
        for d in target:
            known *= d if d != -1 else 1
        if all(d is not None for d in feats) and known and _prod(feats) % known == 0:
            return _a.reshape(x, [-1] + [_prod(feats) // known if d == -1 else d for d in target])
        return _a.reshape(x, _a.concat([_a.shape(x)[:1], _a.constant(target, _dt.int32)], 0))


def _prod(dims: Sequence[Any]) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


class Lambda(_Stateless):
    _base = "lambda"

    def __init__(self, function: Callable, output_shape: Any = None, mask: Any = None, arguments: Any = None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self._function, self._arguments = function, dict(arguments or {})
        # TF's Lambda supports masking only when given `mask` (a function or a fixed mask)
        self.mask = mask
        self._supports_masking = mask is not None

    def _fn(self, x: Any) -> Any:
        return self._function(x, **self._arguments)

    def _output_mask(self, inputs: Any, mask: Any) -> Any:
        if self.mask is None:
            return None
        return self.mask(inputs, mask) if callable(self.mask) else self.mask


class _GlobalPool(_Stateless):
    """Keras's global poolings: a reduction over the spatial axes, 1.. with channels_last (the
    default), 2.. with channels_first."""
    _reduce = staticmethod(_m.reduce_mean)
    _default_format: Optional[str] = None   # None: image_data_format() (the 1-D ones: channels_last)

    def __init__(self, data_format: Optional[str] = None, keepdims: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        self.data_format = K.normalize_data_format(data_format if data_format is not None else self._default_format)
        self.keepdims = bool(keepdims)  # keep the pooled axes as size 1 (MobileNet's top needs it)

    def _fn(self, x: Any) -> Any:
        rank = x.shape.rank
        axes = list(range(2, rank)) if self.data_format == "channels_first" else list(range(1, rank - 1))
        return type(self)._reduce(x, axis=axes, keepdims=self.keepdims)


class GlobalAveragePooling2D(_GlobalPool):
    _base = "global_average_pooling2d"


class GlobalMaxPooling2D(_GlobalPool):
    _base = "global_max_pooling2d"
    _reduce = staticmethod(_m.reduce_max)


class _Merge(_KerasMixin, _lc.Layer):
    _has_vars = False

    def __init__(self, name: Optional[str] = None, **kwargs: Any):
        kwargs.pop("trainable", None)
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        super().__init__(True, name or self._auto_name, **kwargs)  # named once, in __new__

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(f"A merge layer should be called on a list of at least 2 inputs. Got {inputs!r}")
        from .mixed_precision import cast_inputs
        with _g.name_scope(self._name or self._base):
            # the policy's compute dtype (a float16 and a float32 input under mixed_float16: float16)
            xs = cast_inputs(getattr(self, "_dtype_policy", None), [_g.convert_to_tensor(t) for t in inputs])
            out = self._merge(xs)
            set_mask(out, self._merged_mask(list(inputs)))  # Keras's merge layers support masking
        register_call(self, inputs, out)
        return out

    def _merged_mask(self, inputs: List[Any]) -> Any:
        from .masking import merge_mask
        return merge_mask(inputs)


class Concatenate(_Merge):
    _base = "concatenate"

    def __init__(self, axis: int = -1, **kwargs: Any):
        super().__init__(**kwargs)
        self.axis = axis

    def _merge(self, xs: List[Any]) -> Any:
        return _a.concat(xs, self.axis)

    def _merged_mask(self, inputs: List[Any]) -> Any:
        from .masking import concat_mask
        return concat_mask(inputs, self.axis)


class Add(_Merge):
    _base = "add"

    def _merge(self, xs: List[Any]) -> Any:
        out = xs[0]
        for x in xs[1:]:
            out = _m.add(out, x)
        return out


def concatenate(inputs: Sequence[Any], axis: int = -1, **kwargs: Any) -> Any:
    return Concatenate(axis=axis, **kwargs)(list(inputs))


def add(inputs: Sequence[Any], **kwargs: Any) -> Any:
    return Add(**kwargs)(list(inputs))


class Embedding(_KerasMixin, _lc.Layer):
    """Rows of an [input_dim, output_dim] matrix ("embeddings", uniform(-0.05, 0.05))."""
    _base = "embedding"
    _autocast = False  # float ids are not cast to float16 (TF's Embedding: autocast=False)

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer: Any = "uniform",
                 embeddings_regularizer: Optional[Callable] = None, mask_zero: bool = False, **kwargs: Any):
        self.mask_zero = bool(mask_zero)
        if "input_length" in kwargs and kwargs["input_length"] is not None:
            kwargs.setdefault("input_shape", (kwargs["input_length"],))
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        super().__init__(kwargs.pop("trainable", True), kwargs.pop("name", None), **kwargs)
        init = _initializer(embeddings_initializer)  # "uniform": Keras's [-0.05, 0.05)
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self._cfg = dict(embeddings_initializer=init, embeddings_regularizer=embeddings_regularizer)

    def _call(self, x: Any, name: Any, reuse: Any) -> Any:
        if not x.dtype.is_integer:
            x = _m.cast(x, _dt.int32)  # Keras feeds ids through a float32 Input and casts them, as here
        # the table in the policy's variable dtype, read in its compute dtype (mixed: float16 rows)
        p = self._dtype_policy
        dt = p.compute_dtype if p.should_cast_variables else p.variable_dtype
        return _fl.embedding(x, self.input_dim, self.output_dim, trainable=self.trainable, name=name, reuse=reuse,
                             **self._cfg, **({"dtype": dt} if dt is not None else {}))

    def _output_mask(self, inputs: Any, mask: Any) -> Any:
        # mask_zero: id 0 is padding; the layers after it skip those steps
        return _m.not_equal(_m.cast(_g.convert_to_tensor(inputs), _dt.int32), 0) if self.mask_zero else None

    @property
    def embeddings(self) -> Any:
        return self._var("embeddings")


class Masking(_Stateless):
    """Zeroes the steps whose features all equal mask_value and masks them for later layers."""
    _base = "masking"
    _supports_masking = True

    def __init__(self, mask_value: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.mask_value = float(mask_value)

    def _keep(self, x: Any) -> Any:
        return _m.reduce_any(_m.not_equal(x, self.mask_value), axis=-1)

    def _fn(self, x: Any) -> Any:
        return x * _m.cast(_a.expand_dims(self._keep(x), -1), x.dtype)

    def _output_mask(self, inputs: Any, mask: Any) -> Any:
        return self._keep(_g.convert_to_tensor(inputs))


class InputLayer:
    """The placeholder a model is fed through."""

    def __init__(self, input_shape: Any = None, batch_size: Optional[int] = None, dtype: Any = None,
                 input_tensor: Any = None, sparse: bool = False, name: Optional[str] = None,
                 batch_input_shape: Any = None):
        if input_tensor is not None:
            self.output = _g.convert_to_tensor(input_tensor)
        else:
            shape = tuple(batch_input_shape) if batch_input_shape is not None else \
                (batch_size,) + tuple(input_shape or ())
            # a named input takes no number from "input" (Input(name="x"), then input_1, as Keras)
            name = name or f"input_{K.get_uid('input')}"
            self.output = _placeholder(_dt.as_dtype(dtype or K.floatx()), list(shape), name=name)
        # a wrapped tensor keeps its op's name, but the layer takes the name asked for (Keras's)
        self.name = name if input_tensor is not None and name else self.output.op.name
        self.weights: List[Any] = []
        self.trainable_weights: List[Any] = []
        self.non_trainable_weights: List[Any] = []
        self.trainable = True
        self.built = True
        # a functional model finds the InputLayer of each of its inputs (TF lists them in `layers`)
        # (kept on the graph, not in a weak dict: the layer holds its tensor, which would pin it)
        self.output.graph.__dict__.setdefault("_keras_input_layers", {})[self.output.name] = self

    def count_params(self) -> int:
        return 0

    def _checkpoint_children(self) -> List[Any]:
        return []  # a node of its own in a functional model's checkpoint (layer-0), without values

    def get_weights(self) -> List[Any]:
        return []

    def set_weights(self, weights: Sequence[Any]) -> None:
        if len(weights):
            raise ValueError(f"You called `set_weights(weights)` on layer \"{self.name}\" with a weight list of "
                             f"length {len(weights)}, but the layer was expecting 0 weights.")

    def get_config(self) -> dict:
        t = self.output
        return {"batch_input_shape": t.shape.as_list(), "dtype": t.dtype.name, "sparse": False, "name": self.name}


def input_name(t: Any) -> str:
    """The name a model input is keyed by (fit's dicts, configs, summaries): its InputLayer's,
    which is the placeholder's op name unless Input(tensor=t, name=...) named the layer."""
    layer = t.graph.__dict__.get("_keras_input_layers", {}).get(t.name)
    return layer.name if layer is not None and layer.output is t else t.op.name


def input_layer_of(t: Any) -> "InputLayer":
    """The InputLayer that made placeholder `t` (one is made for a bare placeholder, as Keras
    wraps a model's non-Keras input tensors)."""
    layer = t.graph.__dict__.get("_keras_input_layers", {}).get(t.name)
    return layer if layer is not None and layer.output is t else InputLayer(input_tensor=t)


def Input(shape: Any = None, batch_size: Optional[int] = None, name: Optional[str] = None, dtype: Any = None,  # noqa: N802
          sparse: bool = False, tensor: Any = None, batch_shape: Any = None) -> Any:
    """A placeholder to build a functional Model on (tf.keras.Input)."""
    if tensor is not None and name is None:
        name = f"input_{K.get_uid('input')}"  # Keras numbers a wrapped tensor's layer as any Input's
    return InputLayer(shape, batch_size, dtype, tensor, sparse, name, batch_shape).output

