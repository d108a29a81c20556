"""tf.contrib.layers: the TF1 layer functions and helpers programs of that era build with.

    with tf.variable_scope("net", initializer=tf.contrib.layers.xavier_initializer()):
        h = tf.contrib.layers.fully_connected(x, 256)             # net/fully_connected/weights, .../biases
        h = tf.contrib.layers.batch_norm(h, is_training=training)  # net/BatchNorm/beta, moving_mean, ...
    loss += tf.contrib.layers.apply_regularization(tf.contrib.layers.l2_regularizer(1e-4), weights)

TF1's contrib defaults, which differ from tf.layers': fully_connected and conv2d apply ReLU
unless activation_fn=None, initialize weights with xavier_initializer and name their
variables `weights` and `biases` (scopes "fully_connected", "Conv"); batch_norm trains by
default (is_training=True) with decay 0.999 and no gamma (scale=False); pooling strides 2
with VALID padding; dropout takes keep_prob.  Variables these layers make are also in
MODEL_VARIABLES.  Every layer function takes its defaults from `contrib.framework.arg_scope`;
contrib/layers_more.py adds slim's repeat, stack, conv2d_transpose, separable_conv2d, bias_add
and softmax.  optimize_loss (contrib/optimize_loss.py) builds the TF1 one-call train op.
"""
from __future__ import annotations

import math
import types as _types
from collections import OrderedDict
import numbers
from typing import Any, Callable, Dict, List, Optional

from .. import dtypes as _dt
from ..errors import InvalidArgumentError, UnimplementedError
from ..graph import graph as _g
from ..graph import initializers as _init
from ..graph.graph import GraphKeys
from ..graph.ops import array_ops, math_ops, nn_impl, nn_ops, random_ops
from ..graph.ops.constant_op import constant, identity
from ..graph.variable_scope import get_variable, variable_scope
from ..nn import layers as _layers
from ..nn.normalization import batch_norm_layer

__all__ = ["xavier_initializer", "xavier_initializer_conv2d", "variance_scaling_initializer",
           "l1_regularizer", "l2_regularizer", "l1_l2_regularizer", "sum_regularizer", "apply_regularization",
           "flatten", "fully_connected", "conv2d", "convolution2d", "max_pool2d", "avg_pool2d", "dropout",
           "batch_norm", "layer_norm", "one_hot_encoding", "embed_sequence", "utils", "repeat", "stack",
           "conv2d_transpose", "convolution2d_transpose", "separable_conv2d", "separable_convolution2d", "bias_add",
           "softmax"]


# -- initializers ------------------------------------------------------------------------------


class _ContribVarianceScaling(_init.Initializer):
    """contrib's variance_scaling_initializer: stddev sqrt(factor / n) as a truncated normal
    of stddev sqrt(1.3 factor / n) (the truncation's loss made up), or uniform in
    [-sqrt(3 factor / n), sqrt(3 factor / n)]; n the fan in, out or their mean."""

    def __init__(self, factor: float, mode: str, uniform: bool, seed: Optional[int], dtype: Any):
        dt = _dt.as_dtype(dtype)
        if not dt.is_floating:
            raise TypeError(f"Cannot create initializer for non-floating point type {dt.name}.")
        if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
            raise TypeError(f"Unknown mode {mode!r}: must be FAN_IN, FAN_OUT or FAN_AVG")
        self.factor, self.mode, self.uniform, self.seed, self.dtype = float(factor), mode, bool(uniform), seed, dt

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> _g.Tensor:
        shp = [int(d) for d in shape]
        dt = _dt.as_dtype(dtype) if dtype is not None else self.dtype
        fan_in, fan_out = _init.compute_fans(shp)
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[self.mode]
        if self.uniform:
            limit = math.sqrt(3.0 * self.factor / n)
            return random_ops.random_uniform(shp, -limit, limit, dt, seed=self.seed)
        return random_ops.truncated_normal(shp, 0.0, math.sqrt(1.3 * self.factor / n), dt, seed=self.seed)

    def get_config(self) -> Dict[str, Any]:
        return {"factor": self.factor, "mode": self.mode, "uniform": self.uniform, "seed": self.seed,
                "dtype": self.dtype.name}


def variance_scaling_initializer(factor: float = 2.0, mode: str = "FAN_IN", uniform: bool = False,
                                 seed: Optional[int] = None, dtype: Any = _dt.float32) -> _init.Initializer:
    """Variance factor / n (n: FAN_IN, FAN_OUT or FAN_AVG); the default is He et al.'s."""
    return _ContribVarianceScaling(factor, mode, uniform, seed, dtype)


def xavier_initializer(uniform: bool = True, seed: Optional[int] = None, dtype: Any = _dt.float32) -> _init.Initializer:
    """Glorot & Bengio's: variance 2 / (fan_in + fan_out), uniform or truncated normal."""
    return _ContribVarianceScaling(1.0, "FAN_AVG", uniform, seed, dtype)


xavier_initializer_conv2d = xavier_initializer


# -- regularizers ------------------------------------------------------------------------------


def _check_scale(scale: Any, what: str) -> Optional[float]:
    """The scale as a float; None for 0 (the regularizer then adds nothing, as TF)."""
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if not isinstance(scale, numbers.Real):
        raise TypeError(f"{what}: scale must be a float, got {scale!r}")
    if scale < 0.0:
        raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale}")
    return None if scale == 0.0 else float(scale)


def _scaled_penalty(scale: Any, scope: Optional[str], what: str,
                    penalty: Callable[[_g.Tensor], _g.Tensor]) -> Callable[[Any], Any]:
    """A regularizer: weights -> scale * penalty(weights) in a name scope (None for scale 0)."""
    s = _check_scale(scale, what)
    if s is None:
        return lambda _: None

    def regularize(weights: Any) -> _g.Tensor:
        w = _g.convert_to_tensor(weights)
        # TF1 names the product by the scope itself: "<var>/Regularizer/l2_regularizer:0"
        with w.graph.as_default(), w.graph.name_scope(scope or what) as name:
            return math_ops.multiply(constant(s, dtype=w.dtype, name="scale"), penalty(w), name=name)
    return regularize


def l2_regularizer(scale: float, scope: Optional[str] = None) -> Callable[[Any], Any]:
    """A function giving scale * sum(w ** 2) / 2 of a weight (None for scale 0)."""
    return _scaled_penalty(scale, scope, "l2_regularizer", nn_ops.l2_loss)


def l1_regularizer(scale: float, scope: Optional[str] = None) -> Callable[[Any], Any]:
    """A function giving scale * sum(|w|) of a weight (None for scale 0)."""
    return _scaled_penalty(scale, scope, "l1_regularizer", lambda w: math_ops.reduce_sum(math_ops.abs(w)))


def l1_l2_regularizer(scale_l1: float = 1.0, scale_l2: float = 1.0,
                      scope: Optional[str] = None) -> Callable[[Any], Any]:
    """The sum of an l1 and an l2 regularizer."""
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope=scope or "l1_l2_regularizer")


def sum_regularizer(regularizer_list: List[Callable[[Any], Any]],
                    scope: Optional[str] = None) -> Callable[[Any], Any]:
    """A function giving the sum of the regularizers' penalties (None where all give None)."""
    regs = [r for r in regularizer_list if r is not None]

    def summed(weights: Any) -> Any:
        terms = [t for t in (r(weights) for r in regs) if t is not None]
        if not terms:
            return None
        w = _g.convert_to_tensor(weights)
        with w.graph.as_default(), w.graph.name_scope(scope or "sum_regularizer") as name:
            return math_ops.add_n(terms, name=name) if len(terms) > 1 else identity(terms[0], name=name)
    return summed


def apply_regularization(regularizer: Callable[[Any], Any], weights_list: Any = None) -> _g.Tensor:
    """The sum of regularizer(w) over `weights_list` (default: the WEIGHTS collection), also
    added to REGULARIZATION_LOSSES; ValueError when there are no weights."""
    if weights_list is None:
        weights_list = _g.get_collection(GraphKeys.WEIGHTS)
    weights_list = list(weights_list)
    if not weights_list:
        raise ValueError("No weights to regularize.")
    g = _g.convert_to_tensor(weights_list[0]).graph
    with g.as_default(), g.name_scope("get_regularization_penalty") as scope:
        # a weight whose penalty is None counts 0, and the sum is named by the scope itself
        # ("get_regularization_penalty:0"), as TF1's
        penalties = [p if p is not None else constant(0.0) for p in (regularizer(w) for w in weights_list)]
        for p in penalties:
            if p.shape.rank != 0:
                raise ValueError(f"regularizer must return a scalar Tensor instead of a Tensor with rank "
                                 f"{p.shape.rank}.")
        total = math_ops.add_n(penalties, name=scope) if len(penalties) > 1 else identity(penalties[0], name=scope)
    g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, total)
    return total


# -- layers --------------------------------------------------------------------------------------


def _model_variable(g: _g.Graph, name: str, shape: List[int], dtype: Any, initializer: Any,
                    regularizer: Optional[Callable], trainable: bool, collections: Any, alias: str,
                    reg_name: Optional[str] = None) -> Any:
    """A layer variable through get_variable (the scope decides sharing), also in
    MODEL_VARIABLES and in the caller's `variables_collections` (a list, or a dict by alias).
    reg_name: the Keras name of the weight ("kernel", "bias") when TF1 builds the layer from a
    core layer, which names its penalty "<reg_name>/Regularizer/..." instead of by the variable."""
    if reg_name is None or regularizer is None:
        with g.control_dependencies(None):
            v = get_variable(name, shape, dtype, initializer=_init.get(initializer), regularizer=regularizer,
                             trainable=trainable)
    else:
        before = {id(x) for x in g.get_collection(GraphKeys.GLOBAL_VARIABLES)}
        with g.control_dependencies(None):
            v = get_variable(name, shape, dtype, initializer=_init.get(initializer), trainable=trainable)
        if id(v) not in before:  # a reused variable's penalty is already there
            with g.name_scope(reg_name + "/Regularizer"):
                loss = regularizer(v)
            if loss is not None:
                g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    _add_to(g, v, [GraphKeys.MODEL_VARIABLES], collections, alias)
    return v


def _add_to(g: _g.Graph, v: Any, base: List[str], collections: Any, alias: str) -> None:
    """v into the `base` collections and the caller's (a list, or a dict by alias), once each."""
    extra = list(base)
    if isinstance(collections, dict):
        c = collections.get(alias)
        extra += [c] if isinstance(c, str) else list(c or [])
    elif collections:
        extra += [collections] if isinstance(collections, str) else list(collections)
    for c in extra:
        if not any(x is v for x in g.get_collection(c)):
            g.add_to_collection(c, v)


def collect_named_outputs(collections: Any, alias: str, outputs: _g.Tensor) -> _g.Tensor:
    """Adds `outputs` to each of `collections` (a name or a list; none: nothing happens) under
    `alias` (a trailing "/" dropped), which `convert_collection_to_dict` keys it by; returns it."""
    names = [collections] if isinstance(collections, str) else list(collections or [])
    if names:
        alias = alias[:-1] if alias.endswith("/") else alias
        try:
            outputs.aliases.append(alias)
        except AttributeError:
            outputs.aliases = [alias]
        g = outputs.graph
        for c in names:
            g.add_to_collection(c, outputs)
    return outputs


def get_tensor_aliases(tensor: _g.Tensor) -> List[str]:
    """The aliases collect_named_outputs gave `tensor`; else its name (":0" dropped)."""
    got = getattr(tensor, "aliases", None)
    if got is not None:
        return list(got)
    name = tensor.name
    return [name[:-2] if name.endswith(":0") else name]


def convert_collection_to_dict(collection: str, clear_collection: bool = False) -> "OrderedDict[str, Any]":
    """{alias: tensor} of a collection's tensors, in the order they were added (TF1's way to
    get a model's end points); clear_collection empties the collection afterwards."""
    g = _g.get_default_graph()
    out: "OrderedDict[str, Any]" = OrderedDict(
        (alias, t) for t in g.get_collection(collection) for alias in get_tensor_aliases(t))
    if clear_collection:
        g.clear_collection(collection)
    return out


def _finish(sc: Any, y: _g.Tensor, normalizer_fn: Optional[Callable], normalizer_params: Optional[dict],
            activation_fn: Optional[Callable], outputs_collections: Any) -> _g.Tensor:
    """The layer's output after its normalizer and activation, collected under the variable
    scope's name `sc.name` (as TF1's layers do)."""
    if normalizer_fn is not None:
        y = normalizer_fn(y, **(normalizer_params or {}))
    if activation_fn is not None:
        y = activation_fn(y)
    return collect_named_outputs(outputs_collections, sc.name, y)


def fully_connected(inputs: Any, num_outputs: int, activation_fn: Optional[Callable] = nn_ops.relu,
                    normalizer_fn: Optional[Callable] = None, normalizer_params: Optional[dict] = None,
                    weights_initializer: Any = None, weights_regularizer: Optional[Callable] = None,
                    biases_initializer: Any = _init.Zeros(), biases_regularizer: Optional[Callable] = None,
                    reuse: Any = None, variables_collections: Any = None, outputs_collections: Any = None,
                    trainable: bool = True, scope: Optional[str] = None) -> _g.Tensor:
    """activation_fn(inputs @ weights + biases) over the last axis: [..., in] -> [..., num_outputs].
    weights_initializer None is xavier_initializer(); a normalizer_fn replaces the biases."""
    x = _g.convert_to_tensor(inputs)
    if x.shape.rank is None or x.shape.rank < 2:
        raise InvalidArgumentError(f"fully_connected needs an input of rank >= 2, got shape {x.shape}")
    in_dim = x.shape.dims[-1]
    if in_dim is None:
        raise InvalidArgumentError(f"fully_connected: the last dimension of the input must be known, got {x.shape}")
    n = int(num_outputs)
    g = x.graph
    with g.as_default(), variable_scope(scope, default_name="fully_connected", reuse=reuse) as sc:
        w = _model_variable(g, "weights", [int(in_dim), n], x.dtype, weights_initializer or xavier_initializer(),
                            weights_regularizer, trainable, variables_collections, "weights", "kernel")
        if x.shape.rank == 2:
            y = math_ops.matmul(x, w)
        else:  # over the last axis: the leading ones folded into the rows of one matmul
            lead = list(x.shape.dims[:-1])
            y = math_ops.matmul(array_ops.reshape(x, [-1, int(in_dim)]), w)
            if lead.count(None) <= 1:
                y = array_ops.reshape(y, [-1 if d is None else d for d in lead] + [n])
            else:
                y = array_ops.reshape(y, array_ops.concat([array_ops.shape(x)[:-1], constant([n])], 0))
        if normalizer_fn is None and biases_initializer is not None:
            b = _model_variable(g, "biases", [n], x.dtype, biases_initializer, biases_regularizer, trainable,
                                variables_collections, "biases", "bias")
            y = nn_ops.bias_add(y, b)
        return _finish(sc, y, normalizer_fn, normalizer_params, activation_fn, outputs_collections)


def conv2d(inputs: Any, num_outputs: int, kernel_size: Any, stride: Any = 1, padding: str = "SAME",
           data_format: Optional[str] = None, rate: Any = 1, activation_fn: Optional[Callable] = nn_ops.relu,
           normalizer_fn: Optional[Callable] = None, normalizer_params: Optional[dict] = None,
           weights_initializer: Any = None, weights_regularizer: Optional[Callable] = None,
           biases_initializer: Any = _init.Zeros(), biases_regularizer: Optional[Callable] = None,
           reuse: Any = None, variables_collections: Any = None, outputs_collections: Any = None,
           trainable: bool = True, scope: Optional[str] = None) -> _g.Tensor:
    """A 2-D convolution on NHWC (or NCHW) images, weights [kh, kw, in, num_outputs] (scope "Conv"),
    then biases (unless a normalizer_fn) and activation_fn (ReLU by default)."""
    if data_format not in (None, "NHWC", "NCHW"):
        raise InvalidArgumentError(f"conv2d: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    fmt = data_format or "NHWC"
    x = _g.convert_to_tensor(inputs)
    channel = 1 if fmt == "NCHW" else -1
    if x.shape.rank != 4 or x.shape.dims[channel] is None:
        raise InvalidArgumentError(f"conv2d needs an {fmt} input with known channels, got shape {x.shape}")
    kh, kw = _layers._pair(kernel_size, "kernel_size")
    n = int(num_outputs)
    g = x.graph
    with g.as_default(), variable_scope(scope, default_name="Conv", reuse=reuse) as sc:
        w = _model_variable(g, "weights", [kh, kw, int(x.shape.dims[channel]), n], x.dtype,
                            weights_initializer or xavier_initializer(), weights_regularizer, trainable,
                            variables_collections, "weights", "kernel")
        y = nn_ops.conv2d(x, w, strides=_layers._pair(stride, "stride"), padding=padding.upper(),
                          dilations=_layers._pair(rate, "rate"), data_format=fmt)
        if normalizer_fn is None and biases_initializer is not None:
            b = _model_variable(g, "biases", [n], x.dtype, biases_initializer, biases_regularizer, trainable,
                                variables_collections, "biases", "bias")
            y = nn_ops.bias_add(y, b, data_format=fmt)
        return _finish(sc, y, normalizer_fn, normalizer_params, activation_fn, outputs_collections)


convolution2d = conv2d


class _ScopeName:
    """A scope's name where a layer has no VariableScope object to hand `_finish`."""
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _pool(fn: Callable, default: str, inputs: Any, kernel_size: Any, stride: Any, padding: str,
          data_format: str, scope: Optional[str], outputs_collections: Any) -> _g.Tensor:
    if data_format not in ("NHWC", "NCHW"):
        raise InvalidArgumentError(f"{default}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    x = _g.convert_to_tensor(inputs)
    kh, kw = _layers._pair(kernel_size, "kernel_size")
    sh, sw = _layers._pair(stride, "stride")
    with x.graph.as_default(), x.graph.name_scope(scope or default) as sc:
        return collect_named_outputs(outputs_collections, sc, fn(x, (kh, kw), (sh, sw), padding.upper(),
                                                                 data_format=data_format))


def max_pool2d(inputs: Any, kernel_size: Any, stride: Any = 2, padding: str = "VALID", data_format: str = "NHWC",
               outputs_collections: Any = None, scope: Optional[str] = None) -> _g.Tensor:
    """Max over kernel_size windows, stepping `stride` (2 by default), VALID padding by default."""
    return _pool(nn_ops.max_pool, "MaxPool2D", inputs, kernel_size, stride, padding, data_format, scope,
                 outputs_collections)


def avg_pool2d(inputs: Any, kernel_size: Any, stride: Any = 2, padding: str = "VALID", data_format: str = "NHWC",
               outputs_collections: Any = None, scope: Optional[str] = None) -> _g.Tensor:
    """Mean over kernel_size windows, stepping `stride` (2 by default), VALID padding by default."""
    return _pool(nn_ops.avg_pool, "AvgPool2D", inputs, kernel_size, stride, padding, data_format, scope,
                 outputs_collections)


def flatten(inputs: Any, outputs_collections: Any = None, scope: Optional[str] = None) -> _g.Tensor:
    """[batch, d1, d2, ...] -> [batch, d1 * d2 * ...]."""
    x = _g.convert_to_tensor(inputs)
    with x.graph.as_default(), x.graph.name_scope(scope or "Flatten") as sc:
        return collect_named_outputs(outputs_collections, sc, _layers.flatten(x))


def dropout(inputs: Any, keep_prob: Any = 0.5, noise_shape: Any = None, is_training: Any = True,
            outputs_collections: Any = None, scope: Optional[str] = None, seed: Optional[int] = None) -> _g.Tensor:
    """Each element kept with probability keep_prob (scaled by 1 / keep_prob) while is_training
    (a Python bool or a bool tensor); the input unchanged otherwise."""
    x = _g.convert_to_tensor(inputs)
    with x.graph.as_default(), variable_scope(scope, default_name="Dropout") as sc:
        y = _layers.dropout(x, rate=1.0 - keep_prob, noise_shape=noise_shape, seed=seed, training=is_training)
        return collect_named_outputs(outputs_collections, sc.name, y)


def batch_norm(inputs: Any, decay: float = 0.999, center: bool = True, scale: bool = False, epsilon: float = 0.001,
               activation_fn: Optional[Callable] = None, param_initializers: Optional[dict] = None,
               param_regularizers: Optional[dict] = None, updates_collections: Any = GraphKeys.UPDATE_OPS,
               is_training: Any = True, reuse: Any = None, variables_collections: Any = None,
               outputs_collections: Any = None, trainable: bool = True, batch_weights: Any = None,
               fused: Optional[bool] = None, data_format: str = "NHWC", zero_debias_moving_mean: bool = False,
               scope: Optional[str] = None, renorm: bool = False, renorm_clipping: Any = None,
               renorm_decay: float = 0.99, adjustment: Any = None) -> _g.Tensor:
    """Batch normalization over every axis but the channels (the last; NCHW: axis 1), in the
    variable scope "BatchNorm": beta (center), gamma (scale), moving_mean, moving_variance.
    While is_training (True by default) the batch's statistics are used and the moving
    averages (decay 0.999) updated by ops in `updates_collections`; None runs those updates
    with the output instead.  batch_weights, zero_debias_moving_mean, renorm and adjustment
    are not supported (an error says so)."""
    if data_format not in ("NHWC", "NCHW"):
        raise InvalidArgumentError(f"batch_norm: data_format must be NHWC or NCHW, got {data_format!r}")
    if renorm:
        # TF 1.15's contrib renorm kept debiasing weights (renorm_*_weight) that tf.layers' in TF 2.x
        # dropped; only the latter is checked against TF here
        raise UnimplementedError("batch_norm: renorm is not supported (tf.layers.batch_normalization(renorm=True) "
                                 "is, as TF 2.x computes it)")
    pi, pr = param_initializers or {}, param_regularizers or {}
    x = _g.convert_to_tensor(inputs)
    g = x.graph
    with g.as_default():
        y, updates, params = batch_norm_layer(
            x, 1 if data_format == "NCHW" else -1, decay, epsilon, center, scale, pi.get("beta"), pi.get("gamma"),
            pi.get("moving_mean"), pi.get("moving_variance"), pr.get("beta"), pr.get("gamma"), is_training,
            trainable, scope, reuse, fused, default_name="BatchNorm", updates_collections=updates_collections,
            batch_weights=batch_weights is not None, zero_debias_moving_mean=zero_debias_moving_mean,
            adjustment=adjustment, fuse_rank2=True)
        for v in params:
            _add_to(g, v, [GraphKeys.MODEL_VARIABLES], variables_collections, v.op.name.rsplit("/", 1)[-1])
        if updates_collections is None and updates:
            with g.control_dependencies(updates):
                y = identity(y)
        sc = _ScopeName(params[-1].op.name.rsplit("/", 1)[0])  # the variable scope it opened
        return _finish(sc, y, None, None, activation_fn, outputs_collections)


def layer_norm(inputs: Any, center: bool = True, scale: bool = True, activation_fn: Optional[Callable] = None,
               reuse: Any = None, variables_collections: Any = None, outputs_collections: Any = None,
               trainable: bool = True, begin_norm_axis: int = 1, begin_params_axis: int = -1,
               scope: Optional[str] = None) -> _g.Tensor:
    """Normalizes over the axes from begin_norm_axis on (each example's own mean and variance,
    epsilon 1e-12), then scales by gamma and shifts by beta of shape inputs.shape[begin_params_axis:]
    (variable scope "LayerNorm")."""
    x = _g.convert_to_tensor(inputs)
    rank = x.shape.rank
    if rank is None:
        raise InvalidArgumentError(f"layer_norm needs an input of known rank, got shape {x.shape}")
    norm_axis = begin_norm_axis + rank if begin_norm_axis < 0 else begin_norm_axis
    if begin_params_axis >= rank or norm_axis >= rank or norm_axis < 0:
        raise ValueError(f"begin_params_axis ({begin_params_axis}) and begin_norm_axis ({begin_norm_axis}) must be "
                         f"< rank(inputs) ({rank})")
    params_shape = list(x.shape.dims[begin_params_axis:])
    if any(d is None for d in params_shape):
        raise InvalidArgumentError(f"layer_norm: inputs.shape[{begin_params_axis}:] must be known, got {x.shape}")
    g = x.graph
    with g.as_default(), variable_scope(scope, default_name="LayerNorm", reuse=reuse) as sc:
        beta = _model_variable(g, "beta", params_shape, x.dtype, _init.Zeros(), None, trainable,
                               variables_collections, "beta") if center else None
        gamma = _model_variable(g, "gamma", params_shape, x.dtype, _init.Ones(), None, trainable,
                                variables_collections, "gamma") if scale else None
        mean, variance = nn_ops.moments(x, list(range(norm_axis, rank)), keep_dims=True)
        y = nn_impl.batch_normalization(x, mean, variance, beta, gamma, 1e-12)
        return _finish(sc, y, None, None, activation_fn, outputs_collections)


def one_hot_encoding(labels: Any, num_classes: int, on_value: float = 1.0, off_value: float = 0.0,
                     outputs_collections: Any = None, scope: Optional[str] = None) -> _g.Tensor:
    """float32 one-hot rows of the integer labels."""
    t = _g.convert_to_tensor(labels)
    with t.graph.as_default(), t.graph.name_scope(scope or "OneHotEncoding") as sc:
        y = array_ops.one_hot(t, num_classes, on_value=constant(on_value), off_value=constant(off_value))
        return collect_named_outputs(outputs_collections, sc, y)


def embed_sequence(ids: Any, vocab_size: Optional[int] = None, embed_dim: Optional[int] = None,
                   unique: bool = False, initializer: Any = None, regularizer: Optional[Callable] = None,
                   trainable: bool = True, scope: Optional[str] = None, reuse: Any = None) -> _g.Tensor:
    """Rows of an `embeddings` [vocab_size, embed_dim] variable (scope "EmbedSequence") at ids:
    [batch, time] -> [batch, time, embed_dim]."""
    if vocab_size is None or embed_dim is None:
        raise ValueError("Must specify vocab size and embedding dimension")
    t = _g.convert_to_tensor(ids)
    g = t.graph
    with g.as_default(), variable_scope(scope, default_name="EmbedSequence", reuse=reuse):
        emb = _model_variable(g, "embeddings", [int(vocab_size), int(embed_dim)], _dt.float32,
                              initializer or _init.GlorotUniform(), regularizer, trainable, None, "embeddings")
        return nn_ops.embedding_lookup(emb, t)


# tf.contrib.layers.utils: the end-points helpers of `outputs_collections`
utils = _types.SimpleNamespace(collect_named_outputs=collect_named_outputs, get_tensor_aliases=get_tensor_aliases,
                               convert_collection_to_dict=convert_collection_to_dict)
utils.__doc__ = "tf.contrib.layers.utils: collect_named_outputs, get_tensor_aliases, convert_collection_to_dict."


# every layer takes arg_scope defaults (as TF1's, whose contrib layers are all @add_arg_scope);
# the aliases stay the same functions, so a scope on conv2d covers convolution2d
from .framework import add_arg_scope  # noqa: E402
from . import layers_more as _more  # noqa: E402

fully_connected = add_arg_scope(fully_connected)
conv2d = convolution2d = add_arg_scope(conv2d)
max_pool2d = add_arg_scope(max_pool2d)
avg_pool2d = add_arg_scope(avg_pool2d)
flatten = add_arg_scope(flatten)
dropout = add_arg_scope(dropout)
batch_norm = add_arg_scope(batch_norm)
layer_norm = add_arg_scope(layer_norm)
one_hot_encoding = add_arg_scope(one_hot_encoding)
embed_sequence = add_arg_scope(embed_sequence)
repeat = add_arg_scope(_more.repeat)
stack = add_arg_scope(_more.stack)
conv2d_transpose = convolution2d_transpose = add_arg_scope(_more.conv2d_transpose)
separable_conv2d = separable_convolution2d = add_arg_scope(_more.separable_conv2d)
bias_add = add_arg_scope(_more.bias_add)
softmax = add_arg_scope(_more.softmax)

from .optimize_loss import OPTIMIZER_CLS_NAMES, OPTIMIZER_SUMMARIES, optimize_loss  # noqa: E402
__all__ += ["optimize_loss", "OPTIMIZER_CLS_NAMES", "OPTIMIZER_SUMMARIES"]

# instance/group norm, the 1-D/3-D layers, maxout, unit_norm, ... (contrib/layers_extra.py)
from . import layers_extra as _extra  # noqa: E402
for _extra_name in _extra.__all__:
    _extra_fn = getattr(_extra, _extra_name)
    globals()[_extra_name] = (_extra_fn if _extra_name.startswith("summarize") or _extra_name == "scale_gradient"
                              else add_arg_scope(_extra_fn))
del _extra_name, _extra_fn
__all__ += list(_extra.__all__)

# gdn/GDN, poincare_normalize, pool, elu/relu/relu6/linear, the legacy_* layers (contrib/layers_gdn.py)
from . import layers_gdn as _gdn  # noqa: E402
for _gdn_name in _gdn.__all__:
    globals()[_gdn_name] = getattr(_gdn, _gdn_name)
del _gdn_name
__all__ += list(_gdn.__all__)

# TF 1.x's contrib feature columns and the functions over them (contrib/layers_feature_columns.py)
from . import layers_feature_columns as _fc  # noqa: E402
for _fc_name in _fc.__all__:
    globals()[_fc_name] = getattr(_fc, _fc_name)
__all__ += list(_fc.__all__)
