"""Functional layers (TensorFlow 1.x `tf.layers`): each call creates its variables.

    h = cf.layers.dense(x, 256, activation=cf.nn.relu)           # variables dense/kernel, dense/bias
    h = cf.layers.conv2d(images, 32, 3, padding="same", name="conv1")
    h = cf.layers.max_pooling2d(h, 2, 2)
    h = cf.layers.dropout(cf.layers.flatten(h), rate=0.5, training=is_training)

A layer opens a variable scope, as in TensorFlow 1.x: its `name`, or without one the layer's
kind made unique (dense, dense_1, ...; the count restarts inside a re-entered named scope),
and makes its variables there with cf.get_variable, in the GLOBAL_VARIABLES and (if
trainable) TRAINABLE_VARIABLES collections; a regularizer's loss goes to
REGULARIZATION_LOSSES.  Calling a layer again under `reuse=True` (its own argument or an
enclosing cf.variable_scope's) shares the variables; the same explicit name twice without
reuse is an error.  Variables are created outside the caller's control dependencies, so
their initializers run on their own.  Images are NHWC
("channels_last"; "channels_first" runs the same layer between transposes, see
layer_formats.py) and kernels [kh, kw, in, out], as in TensorFlow.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple, Union

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.ops import array_ops, depthwise_ops, math_ops, nn_extra_ops, nn_ops
from ..graph.ops.constant_op import identity
from ..graph import initializers as _init
from ..graph.variable_scope import get_variable, layer_variable_scope
from ..graph.variables import Variable
from .layer_formats import accepts_channels_first
from .normalization import add_layer_regularization, batch_normalization  # noqa: F401  (re-exported)

__all__ = ["dense", "conv2d", "conv2d_transpose", "conv1d", "separable_conv2d", "separable_conv1d", "max_pooling2d", "average_pooling2d", "max_pooling1d", "average_pooling1d",
           "flatten", "dropout", "embedding",
           "batch_normalization", "conv3d", "max_pooling3d", "average_pooling3d"]

Activation = Union[None, str, Callable[[_g.Tensor], _g.Tensor]]


def _activation(activation: Activation) -> Optional[Callable[[_g.Tensor], _g.Tensor]]:
    if activation is None or callable(activation):
        return activation
    if isinstance(activation, str):
        if activation == "linear":
            return None
        fn = getattr(nn_ops, activation, None) or getattr(math_ops, activation, None)
        if fn is None:
            raise ValueError(f"unknown activation {activation!r}; pass a function such as cf.nn.relu")
        return fn
    raise TypeError(f"activation must be None, a name or a callable, got {activation!r}")


def _pair(v: Any, what: str) -> Tuple[int, int]:
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    v = tuple(int(d) for d in v)
    if len(v) != 2:
        raise ValueError(f"{what} must be an int or a pair, got {v}")
    return v


def _padding(padding: str) -> str:
    p = str(padding).upper()
    if p not in ("SAME", "VALID"):
        raise ValueError(f"padding must be 'same' or 'valid', got {padding!r}")
    return p


def _channels_last(data_format: str, layer: str) -> None:
    if data_format not in ("channels_last", "NHWC"):
        raise InvalidArgumentError(
            f"{layer}: only data_format='channels_last' (NHWC) is supported, got {data_format!r}")


def _input(inputs: Any, layer: str, min_rank: int) -> _g.Tensor:
    x = _g.convert_to_tensor(inputs)
    if x.shape.rank is None or x.shape.rank < min_rank:
        raise InvalidArgumentError(f"{layer} needs an input of rank >= {min_rank} (known statically), "
                                   f"got shape {x.shape}")
    if not x.dtype.is_floating:
        raise InvalidArgumentError(f"{layer} needs a floating-point input, got {x.dtype.name}")
    return x


def _last_dim(x: _g.Tensor, layer: str) -> int:
    d = x.shape.dims[-1]
    if d is None:
        raise InvalidArgumentError(f"{layer}: the last dimension of the input must be known, got shape {x.shape}")
    return int(d)


def _make_var(g: _g.Graph, name: str, shape: Sequence[int], dtype: _dt.DType, initializer: Any,
              regularizer: Optional[Callable], trainable: bool) -> Variable:
    # through get_variable: the layer's variable scope names it and decides sharing
    before = {id(v) for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES)}
    with g.control_dependencies(None):
        v = get_variable(name, list(shape), dtype, initializer=_init.get(initializer), trainable=trainable)
    add_layer_regularization(g, name, v, regularizer, id(v) not in before)
    return v


def _conv_input(inputs: Any, filters: int, data_format: str, layer: str, rank: int,
                layout: str) -> Tuple[_g.Tensor, int, int]:
    """(x, filters, input channels) of a convolution layer, its arguments checked."""
    x = _input(inputs, layer, rank)
    if x.shape.rank != rank:
        raise InvalidArgumentError(f"{layer} needs {layout}, got shape {x.shape}")
    _channels_last(data_format, layer)
    filters = int(filters)
    if filters <= 0:
        raise ValueError(f"{layer}: filters must be positive, got {filters}")
    return x, filters, _last_dim(x, layer)


def _bias(g: _g.Graph, filters: int, dtype: _dt.DType, use_bias: bool, initializer: Any,
          regularizer: Optional[Callable], trainable: bool) -> Optional[Variable]:
    """A layer's bias [filters] (zeros by default), or None without one."""
    if not use_bias:
        return None
    return _make_var(g, "bias", [filters], dtype, initializer or _init.Zeros(), regularizer, trainable)


def _scope(g: _g.Graph, name: Optional[str], default: str, reuse: Any) -> Any:
    """The variable scope of one layer call: `name` as given (sharing it needs reuse), or
    `default` made unique (dense, dense_1, ... -- restarting inside a re-entered scope).
    TF1's other rules: see layer_variable_scope."""
    return layer_variable_scope(name, default, reuse)


def _finish(y: _g.Tensor, bias: Optional[Variable], activation: Activation) -> _g.Tensor:
    if bias is not None:
        y = nn_ops.bias_add(y, bias)
    act = _activation(activation)
    return act(y) if act is not None else y


def dense(inputs: Any, units: int, activation: Activation = None, use_bias: bool = True,
          kernel_initializer: Any = None, bias_initializer: Any = None, kernel_regularizer: Optional[Callable] = None,
          bias_regularizer: Optional[Callable] = None, trainable: bool = True,
          name: Optional[str] = None, reuse: Any = None) -> _g.Tensor:
    """activation(inputs @ kernel + bias): [..., in] -> [..., units].

    Variables: kernel [in, units] (glorot_uniform by default), bias [units] (zeros).
    """
    x = _input(inputs, "dense", 2)
    if int(units) <= 0:
        raise ValueError(f"dense: units must be positive, got {units}")
    units = int(units)
    in_dim = _last_dim(x, "dense")
    g = x.graph
    with g.as_default(), _scope(g, name, "dense", reuse):
        kernel = _make_var(g, "kernel", [in_dim, units], x.dtype, kernel_initializer,
                           kernel_regularizer, trainable)
        bias = _bias(g, units, x.dtype, use_bias, bias_initializer, bias_regularizer, trainable)
        if x.shape.rank == 2:
            y = math_ops.matmul(x, kernel)
        else:
            lead = list(x.shape.dims[:-1])
            if lead.count(None) <= 1:
                # fold the leading axes into one: a plain matmul and a plain kernel gradient
                flat = array_ops.reshape(x, [-1, in_dim])
                y = array_ops.reshape(math_ops.matmul(flat, kernel), [-1 if d is None else d for d in lead] + [units])
            else:
                y = math_ops.matmul(x, kernel)  # batched: the kernel broadcasts over the leading axes
        return _finish(y, bias, activation)


def conv2d(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
           data_format: str = "channels_last", dilation_rate: Any = (1, 1), activation: Activation = None,
           use_bias: bool = True, kernel_initializer: Any = None, bias_initializer: Any = None,
           kernel_regularizer: Optional[Callable] = None, bias_regularizer: Optional[Callable] = None,
           trainable: bool = True, name: Optional[str] = None, reuse: Any = None) -> _g.Tensor:
    """2-D convolution layer on NHWC inputs: [n, h, w, in] -> [n, h', w', filters].

    Variables: kernel [kh, kw, in, filters] (glorot_uniform by default), bias [filters].
    padding: "valid" (the default, as TensorFlow) or "same".
    """
    x, filters, in_ch = _conv_input(inputs, filters, data_format, "conv2d", 4, "an NHWC input of rank 4")
    kh, kw = _pair(kernel_size, "kernel_size")
    g = x.graph
    with g.as_default(), _scope(g, name, "conv2d", reuse):
        kernel = _make_var(g, "kernel", [kh, kw, in_ch, filters], x.dtype,
                           kernel_initializer, kernel_regularizer, trainable)
        bias = _bias(g, filters, x.dtype, use_bias, bias_initializer, bias_regularizer, trainable)
        y = nn_ops.conv2d(x, kernel, strides=_pair(strides, "strides"), padding=_padding(padding),
                          dilations=_pair(dilation_rate, "dilation_rate"))
        return _finish(y, bias, activation)


def conv2d_transpose(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
                     data_format: str = "channels_last", activation: Activation = None, use_bias: bool = True,
                     kernel_initializer: Any = None, bias_initializer: Any = None,
                     kernel_regularizer: Optional[Callable] = None, bias_regularizer: Optional[Callable] = None,
                     trainable: bool = True, name: Optional[str] = None, reuse: Any = None,
                     output_padding: Any = None) -> _g.Tensor:
    """Transposed 2-D convolution layer on NHWC inputs: [n, h, w, in] -> [n, h', w', filters],
    h' = h * stride ("same") or h * stride + max(kernel - stride, 0) ("valid"), as TF1's; with
    Keras's output_padding p, h' = (h - 1) * stride + kernel - 2 * pad + p (pad kernel // 2 for
    "same", 0 for "valid").

    Variables: kernel [kh, kw, filters, in] (glorot_uniform by default), bias [filters].
    """
    x, filters, in_ch = _conv_input(inputs, filters, data_format, "conv2d_transpose", 4, "an NHWC input of rank 4")
    (kh, kw), (sh, sw) = _pair(kernel_size, "kernel_size"), _pair(strides, "strides")
    pad = _padding(padding)
    g = x.graph
    with g.as_default(), _scope(g, name, "conv2d_transpose", reuse):
        kernel = _make_var(g, "kernel", [kh, kw, filters, in_ch], x.dtype,
                           kernel_initializer, kernel_regularizer, trainable)
        bias = _bias(g, filters, x.dtype, use_bias, bias_initializer, bias_regularizer, trainable)
        dyn = array_ops.shape(x)
        sizes = []
        outpad = None if output_padding is None else _pair(output_padding, "output_padding")
        for i, (axis, k, st) in enumerate(((1, kh, sh), (2, kw, sw))):
            n = x.shape.dims[axis]
            n = n if n is not None else dyn[axis]
            if outpad is None:
                sizes.append(n * st + (0 if pad == "SAME" else max(k - st, 0)))
            else:
                sizes.append((n - 1) * st + k - 2 * (k // 2 if pad == "SAME" else 0) + outpad[i])
        out_shape = array_ops.stack([dyn[0], sizes[0], sizes[1], filters])
        y = nn_extra_ops.conv2d_transpose(x, kernel, out_shape, strides=[1, sh, sw, 1], padding=pad)
        return _finish(y, bias, activation)


def separable_conv2d(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
                     data_format: str = "channels_last", dilation_rate: Any = (1, 1), depth_multiplier: int = 1,
                     activation: Activation = None, use_bias: bool = True, depthwise_initializer: Any = None,
                     pointwise_initializer: Any = None, bias_initializer: Any = None,
                     depthwise_regularizer: Optional[Callable] = None,
                     pointwise_regularizer: Optional[Callable] = None, bias_regularizer: Optional[Callable] = None,
                     trainable: bool = True, name: Optional[str] = None, reuse: Any = None) -> _g.Tensor:
    """Depthwise-separable 2-D convolution layer on NHWC inputs: [n, h, w, in] -> [n, h', w', filters]
    (each channel filtered on its own, depth_multiplier times, then a 1x1 convolution).

    Variables: depthwise_kernel [kh, kw, in, depth_multiplier], pointwise_kernel [1, 1, in *
    depth_multiplier, filters] (glorot_uniform by default), bias [filters].
    """
    x, filters, in_ch = _conv_input(inputs, filters, data_format, "separable_conv2d", 4, "an NHWC input of rank 4")
    kh, kw = _pair(kernel_size, "kernel_size")
    mult = int(depth_multiplier)
    if mult <= 0:
        raise ValueError(f"separable_conv2d: depth_multiplier must be positive, got {depth_multiplier}")
    g = x.graph
    with g.as_default(), _scope(g, name, "separable_conv2d", reuse):
        depthwise = _make_var(g, "depthwise_kernel", [kh, kw, in_ch, mult], x.dtype, depthwise_initializer,
                              depthwise_regularizer, trainable)
        pointwise = _make_var(g, "pointwise_kernel", [1, 1, in_ch * mult, filters], x.dtype,
                              pointwise_initializer, pointwise_regularizer, trainable)
        bias = _bias(g, filters, x.dtype, use_bias, bias_initializer, bias_regularizer, trainable)
        sh, sw = _pair(strides, "strides")
        y = depthwise_ops.separable_conv2d(x, depthwise, pointwise, [1, sh, sw, 1], _padding(padding),
                                           rate=_pair(dilation_rate, "dilation_rate"))
        return _finish(y, bias, activation)


def separable_conv1d(inputs: Any, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                     data_format: str = "channels_last", dilation_rate: Any = 1, depth_multiplier: int = 1,
                     activation: Activation = None, use_bias: bool = True, depthwise_initializer: Any = None,
                     pointwise_initializer: Any = None, bias_initializer: Any = None,
                     depthwise_regularizer: Optional[Callable] = None,
                     pointwise_regularizer: Optional[Callable] = None, bias_regularizer: Optional[Callable] = None,
                     trainable: bool = True, name: Optional[str] = None, reuse: Any = None) -> _g.Tensor:
    """Depthwise-separable 1-D convolution layer on [n, w, in] inputs -> [n, w', filters]: as
    separable_conv2d over a height of one.  Variables: depthwise_kernel [k, in, depth_multiplier],
    pointwise_kernel [1, in * depth_multiplier, filters], bias [filters] (TF1's shapes)."""
    x, filters, in_ch = _conv_input(inputs, filters, data_format, "separable_conv1d", 3, "an NWC input of rank 3")
    k = _one_int(kernel_size, "kernel_size")
    mult = int(depth_multiplier)
    if mult <= 0:
        raise ValueError(f"separable_conv1d: depth_multiplier must be positive, got {depth_multiplier}")
    g = x.graph
    with g.as_default(), _scope(g, name, "separable_conv1d", reuse):
        depthwise = _make_var(g, "depthwise_kernel", [k, in_ch, mult], x.dtype, depthwise_initializer,
                              depthwise_regularizer, trainable)
        pointwise = _make_var(g, "pointwise_kernel", [1, in_ch * mult, filters], x.dtype,
                              pointwise_initializer, pointwise_regularizer, trainable)
        bias = _bias(g, filters, x.dtype, use_bias, bias_initializer, bias_regularizer, trainable)
        s, d = _one_int(strides, "strides"), _one_int(dilation_rate, "dilation_rate")
        x, padding = _causal(x, padding, k, d)
        y = depthwise_ops.separable_conv2d(array_ops.expand_dims(x, 1), array_ops.expand_dims(depthwise, 0),
                                           array_ops.expand_dims(pointwise, 0), [1, 1, s, 1], _padding(padding),
                                           rate=(1, d))
        return _finish(array_ops.squeeze(y, [1]), bias, activation)


def _one_int(v: Any, what: str) -> int:
    if isinstance(v, (list, tuple)):
        if len(v) != 1:
            raise ValueError(f"{what} must be an int or a list of one int, got {v}")
        v = v[0]
    return int(v)


def max_pooling2d(inputs: Any, pool_size: Any, strides: Any = None, padding: str = "valid",
                  data_format: str = "channels_last", name: Optional[str] = None) -> _g.Tensor:
    """Max over pool_size windows of an NHWC input (strides default to pool_size)."""
    _channels_last(data_format, "max_pooling2d")
    k = _pair(pool_size, "pool_size")
    s = _pair(strides, "strides") if strides is not None else k
    return nn_ops.max_pool2d(_input(inputs, "max_pooling2d", 4), k, s, _padding(padding),
                             name=name or "max_pooling2d")


def average_pooling2d(inputs: Any, pool_size: Any, strides: Any = None, padding: str = "valid",
                      data_format: str = "channels_last", name: Optional[str] = None) -> _g.Tensor:
    """Mean over pool_size windows of an NHWC input (strides default to pool_size)."""
    _channels_last(data_format, "average_pooling2d")
    k = _pair(pool_size, "pool_size")
    s = _pair(strides, "strides") if strides is not None else k
    return nn_ops.avg_pool2d(_input(inputs, "average_pooling2d", 4), k, s, _padding(padding),
                             name=name or "average_pooling2d")


def _one(v: Any, what: str) -> int:
    if isinstance(v, (list, tuple)):
        if len(v) != 1:
            raise ValueError(f"{what} must be an int or a list of one int, got {v}")
        v = v[0]
    if int(v) < 1:
        raise ValueError(f"{what} must be positive, got {v}")
    return int(v)


def conv1d(inputs: Any, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
           data_format: str = "channels_last", dilation_rate: Any = 1, activation: Activation = None,
           use_bias: bool = True, kernel_initializer: Any = None, bias_initializer: Any = None,
           kernel_regularizer: Optional[Callable] = None, bias_regularizer: Optional[Callable] = None,
           trainable: bool = True, name: Optional[str] = None, reuse: Any = None) -> _g.Tensor:
    """1-D convolution layer on [n, width, in] inputs: -> [n, width', filters] (text CNNs).

    Variables: kernel [k, in, filters] (glorot_uniform by default), bias [filters].
    """
    x, filters, in_ch = _conv_input(inputs, filters, data_format, "conv1d", 3,
                                    "an input of rank 3 [batch, width, channels]")
    k = _one(kernel_size, "kernel_size")
    g = x.graph
    with g.as_default(), _scope(g, name, "conv1d", reuse):
        kernel = _make_var(g, "kernel", [k, in_ch, filters], x.dtype, kernel_initializer,
                           kernel_regularizer, trainable)
        bias = _bias(g, filters, x.dtype, use_bias, bias_initializer, bias_regularizer, trainable)
        x, padding = _causal(x, padding, _one_int(k, "kernel_size"), _one_int(dilation_rate, "dilation_rate"))
        y = nn_extra_ops.conv1d(x, kernel, _one(strides, "strides"), _padding(padding),
                                dilations=_one(dilation_rate, "dilation_rate"))
        return _finish(y, bias, activation)


def _causal(x: _g.Tensor, padding: str, k: int, d: int) -> Tuple[_g.Tensor, str]:
    """Keras's padding="causal" of the 1-D convolutions: the input left-padded by
    dilation * (kernel - 1) steps, then a "valid" convolution (no output sees a later step)."""
    if not (isinstance(padding, str) and padding.lower() == "causal"):
        return x, padding
    return array_ops.pad(x, [[0, 0], [d * (k - 1), 0], [0, 0]]), "valid"


def _pool1d(pool: Callable, what: str, inputs: Any, pool_size: Any, strides: Any, padding: str,
            data_format: str, name: Optional[str]) -> _g.Tensor:
    _channels_last(data_format, what)
    x = _input(inputs, what, 3)
    k, s = _one(pool_size, "pool_size"), _one(strides, "strides")
    g = x.graph
    with g.as_default(), g.name_scope(name or what):
        y = pool(array_ops.expand_dims(x, 1), (1, k), (1, s), _padding(padding))
        return array_ops.squeeze(y, [1])


def max_pooling1d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                  data_format: str = "channels_last", name: Optional[str] = None) -> _g.Tensor:
    """Max over windows of pool_size steps of a [n, width, channels] input."""
    return _pool1d(nn_ops.max_pool2d, "max_pooling1d", inputs, pool_size, strides, padding, data_format, name)


def average_pooling1d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                      data_format: str = "channels_last", name: Optional[str] = None) -> _g.Tensor:
    """Mean over windows of pool_size steps of a [n, width, channels] input."""
    return _pool1d(nn_ops.avg_pool2d, "average_pooling1d", inputs, pool_size, strides, padding, data_format, name)


def flatten(inputs: Any, name: Optional[str] = None) -> _g.Tensor:
    """[n, d1, d2, ...] -> [n, d1 * d2 * ...] (that product unknown when a d_i is)."""
    x = _g.convert_to_tensor(inputs)
    if x.shape.rank is None or x.shape.rank < 1:
        raise InvalidArgumentError(f"flatten needs an input of known rank >= 1, got shape {x.shape}")
    rest = x.shape.dims[1:]
    if any(d is None for d in rest):
        # TF1's Flatten: reshape to (batch, -1), the batch read at run time when unknown
        b = x.shape.dims[0]
        return array_ops.reshape(x, [b if b is not None else array_ops.shape(x)[0], -1], name=name or "flatten")
    n = int(np.prod(rest)) if rest else 1
    return array_ops.reshape(x, [-1, n], name=name or "flatten")


def dropout(inputs: Any, rate: float = 0.5, noise_shape: Any = None, seed: Optional[int] = None,
            training: Any = False, name: Optional[str] = None) -> _g.Tensor:
    """Dropout while training: each element zeroed with probability `rate`, the rest scaled by 1/(1-rate).

    training: a Python bool, or a bool scalar Tensor (a placeholder) chosen at run time;
    when false the input passes through unchanged.
    """
    x = _g.convert_to_tensor(inputs)
    if isinstance(training, (bool, np.bool_)):
        if not training:
            return identity(x, name=name or "dropout")
        return nn_ops.dropout(x, rate=rate, noise_shape=noise_shape, seed=seed, name=name or "dropout")
    t = _g.convert_to_tensor(training)
    if t.dtype != _dt.bool_:
        raise InvalidArgumentError(f"dropout: training must be a Python bool or a bool Tensor, got {t.dtype.name}")
    g = x.graph
    with g.as_default(), g.name_scope(name or "dropout"):
        dropped = nn_ops.dropout(x, rate=rate, noise_shape=noise_shape, seed=seed)
        return array_ops.where(t, dropped, x, name="select")


def embedding(ids: Any, input_dim: int, output_dim: int, embeddings_initializer: Any = None,
              embeddings_regularizer: Optional[Callable] = None, trainable: bool = True, dtype: Any = _dt.float32,
              name: Optional[str] = None, reuse: Any = None) -> _g.Tensor:
    """Rows of a new [input_dim, output_dim] table at integer `ids`: shape ids.shape + [output_dim].

    The table (variable "embedding/embeddings", uniform in [-0.05, 0.05] by default) gets a
    sparse (IndexedSlices) gradient, so optimizers update only the looked-up rows.
    """
    ids_t = _g.convert_to_tensor(ids)
    if not ids_t.dtype.is_integer:
        raise InvalidArgumentError(f"embedding needs integer ids, got {ids_t.dtype.name}")
    if int(input_dim) <= 0 or int(output_dim) <= 0:
        raise ValueError(f"embedding: input_dim and output_dim must be positive, got {input_dim}, {output_dim}")
    g = ids_t.graph
    with g.as_default(), _scope(g, name, "embedding", reuse):
        table = _make_var(g, "embeddings", [int(input_dim), int(output_dim)], _dt.as_dtype(dtype),
                          embeddings_initializer or _init.RandomUniform(-0.05, 0.05), embeddings_regularizer,
                          trainable)
        return nn_ops.embedding_lookup(table, ids_t)


from .layers3d import average_pooling3d, conv3d, max_pooling3d  # noqa: E402  (3-D layers, their own module)


def _with_constraints(fn: Callable[..., _g.Tensor]) -> Callable[..., _g.Tensor]:
    """fn taking TF1's `<name>_constraint=` (the new variable `<name>` carries it; optimizers
    project it after each update) and `activity_regularizer=` (regularizer(output) / batch
    size into REGULARIZATION_LOSSES) keyword arguments."""
    import functools

    from .layer_extras import CONSTRAINED_NAMES, add_activity_loss, constraints_by_variable
    from ..graph.variable_scope import constraint_defaults

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> _g.Tensor:
        cons = constraints_by_variable(kwargs)
        for k in CONSTRAINED_NAMES:
            kwargs.pop(k + "_constraint", None)
        activity = kwargs.pop("activity_regularizer", None)
        if cons:
            with constraint_defaults(cons):
                out = fn(*args, **kwargs)
        else:
            out = fn(*args, **kwargs)
        if activity is not None:
            add_activity_loss(activity, out, out.op.name.rsplit("/", 1)[0])
        return out
    return wrapped


dense = _with_constraints(dense)
conv1d = _with_constraints(accepts_channels_first(conv1d))
conv2d = _with_constraints(accepts_channels_first(conv2d))
conv2d_transpose = _with_constraints(accepts_channels_first(conv2d_transpose))
separable_conv1d = _with_constraints(accepts_channels_first(separable_conv1d))
separable_conv2d = _with_constraints(accepts_channels_first(separable_conv2d))
max_pooling1d = accepts_channels_first(max_pooling1d)
max_pooling2d = accepts_channels_first(max_pooling2d)
average_pooling1d = accepts_channels_first(average_pooling1d)
average_pooling2d = accepts_channels_first(average_pooling2d)
conv3d = _with_constraints(conv3d)
