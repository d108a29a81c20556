"""More of tf.contrib.layers (slim's layers): repeat, stack, conv2d_transpose,
separable_conv2d, bias_add and softmax, with contrib's defaults and variable names
(`weights`, `biases`, `depthwise_weights`, `pointwise_weights`).  Re-exported by
contrib/layers.py, which makes every layer arg_scope-able."""
from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph import initializers as _init
from ..graph.ops import array_ops, nn_ops
from ..graph.ops.depthwise_ops import depthwise_conv2d, separable_conv2d as _separable
from ..graph.ops.nn_extra_ops import conv2d_transpose as _conv2d_transpose
from ..graph.variable_scope import variable_scope
from ..nn import layers as _layers
from .layers import _finish, _model_variable, xavier_initializer

__all__ = ["repeat", "stack", "conv2d_transpose", "convolution2d_transpose", "separable_conv2d",
           "separable_convolution2d", "bias_add", "softmax"]


def _layer_name(layer: Callable, default: str) -> str:
    if hasattr(layer, "__name__"):
        return layer.__name__
    if hasattr(layer, "func") and hasattr(layer.func, "__name__"):  # a functools.partial
        return layer.func.__name__
    return default


def repeat(inputs: Any, repetitions: int, layer: Callable, *args: Any, **kwargs: Any) -> Any:
    """layer applied `repetitions` times (same arguments), in scopes scope/scope_1, scope/scope_2, ...
    (scope defaults to the layer's name), as slim.repeat."""
    scope = kwargs.pop("scope", None)
    x = _g.convert_to_tensor(inputs)
    with x.graph.as_default(), variable_scope(scope, default_name="Repeat"):
        if scope is None:
            scope = _layer_name(layer, "repeat")
        out = x
        for i in range(int(repetitions)):
            kwargs["scope"] = f"{scope}_{i + 1}"
            out = layer(out, *args, **kwargs)
        return out


def stack(inputs: Any, layer: Callable, stack_args: Any, **kwargs: Any) -> Any:
    """layer applied once per entry of stack_args (its positional arguments), each output the
    next input, in scopes scope/scope_1, scope/scope_2, ... (slim.stack)."""
    scope = kwargs.pop("scope", None)
    if not isinstance(stack_args, (list, tuple)):
        raise ValueError("stack_args need to be a list or tuple")
    x = _g.convert_to_tensor(inputs)
    with x.graph.as_default(), variable_scope(scope, default_name="Stack"):
        if scope is None:
            scope = _layer_name(layer, "stack")
        out = x
        for i, layer_args in enumerate(stack_args):
            kwargs["scope"] = f"{scope}_{i + 1}"
            out = layer(out, *(layer_args if isinstance(layer_args, (list, tuple)) else [layer_args]), **kwargs)
        return out


def _nhwc(x: _g.Tensor, what: str, data_format: Optional[str]) -> Tuple[_g.Tensor, bool]:
    """(x as NHWC, whether it came NCHW): slim's layers compute NHWC; an NCHW input is
    transposed in and its result back before the bias, normalizer and activation, which then
    see NCHW as slim's do."""
    if data_format not in (None, "NHWC", "NCHW"):
        raise InvalidArgumentError(f"{what}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    first = data_format == "NCHW"
    if x.shape.rank != 4 or x.shape.dims[1 if first else -1] is None:
        raise InvalidArgumentError(f"{what} needs an {data_format or 'NHWC'} input with known channels, got shape "
                                   f"{x.shape}")
    return (array_ops.transpose(x, [0, 2, 3, 1]) if first else x), first


def _back(y: _g.Tensor, first: bool) -> _g.Tensor:
    return array_ops.transpose(y, [0, 3, 1, 2]) if first else y


def _out_size(size: Any, k: int, s: int, padding: str) -> Any:
    """conv2d_transpose's output length along one axis (TF's deconv_output_length)."""
    if size is None:
        return None
    return size * s if padding == "SAME" else size * s + max(k - s, 0)


def conv2d_transpose(inputs: Any, num_outputs: int, kernel_size: Any, stride: Any = 1, padding: str = "SAME",
                     data_format: str = "NHWC", activation_fn: Optional[Callable] = nn_ops.relu,
                     normalizer_fn: Optional[Callable] = None, normalizer_params: Optional[dict] = None,
                     weights_initializer: Any = None, weights_regularizer: Optional[Callable] = None,
                     biases_initializer: Any = _init.Zeros(), biases_regularizer: Optional[Callable] = None,
                     reuse: Any = None, variables_collections: Any = None, outputs_collections: Any = None,
                     trainable: bool = True, scope: Optional[str] = None) -> _g.Tensor:
    """The transpose of conv2d (weights [kh, kw, num_outputs, in], scope "Conv2d_transpose"):
    SAME makes each spatial size `stride` times larger, VALID adds max(kernel - stride, 0)."""
    x, first = _nhwc(_g.convert_to_tensor(inputs), "conv2d_transpose", data_format)
    kh, kw = _layers._pair(kernel_size, "kernel_size")
    sh, sw = _layers._pair(stride, "stride")
    pad = padding.upper()
    n = int(num_outputs)
    g = x.graph
    with g.as_default(), variable_scope(scope, default_name="Conv2d_transpose", reuse=reuse) as sc:
        w = _model_variable(g, "weights", [kh, kw, n, int(x.shape.dims[-1])], x.dtype,
                            weights_initializer or xavier_initializer(), weights_regularizer, trainable,
                            variables_collections, "weights", "kernel")
        h, wd = x.shape.dims[1], x.shape.dims[2]
        oh, ow = _out_size(h, kh, sh, pad), _out_size(wd, kw, sw, pad)
        dyn = array_ops.shape(x)
        size_h = oh if oh is not None else _out_dyn(dyn[1], kh, sh, pad)
        size_w = ow if ow is not None else _out_dyn(dyn[2], kw, sw, pad)
        out_shape = array_ops.stack([dyn[0], size_h, size_w, n])
        y = _back(_conv2d_transpose(x, w, out_shape, strides=[1, sh, sw, 1], padding=pad), first)
        if normalizer_fn is None and biases_initializer is not None:
            b = _model_variable(g, "biases", [n], x.dtype, biases_initializer, biases_regularizer, trainable,
                                variables_collections, "biases", "bias")
            y = nn_ops.bias_add(y, b, data_format="NCHW" if first else "NHWC")
        return _finish(sc, y, normalizer_fn, normalizer_params, activation_fn, outputs_collections)


def _out_dyn(size: Any, k: int, s: int, padding: str) -> Any:
    return size * s if padding == "SAME" else size * s + max(k - s, 0)


def separable_conv2d(inputs: Any, num_outputs: Optional[int], kernel_size: Any, depth_multiplier: int = 1,
                     stride: Any = 1, padding: str = "SAME", data_format: str = "NHWC", rate: Any = 1,
                     activation_fn: Optional[Callable] = nn_ops.relu, normalizer_fn: Optional[Callable] = None,
                     normalizer_params: Optional[dict] = None, weights_initializer: Any = None,
                     pointwise_initializer: Any = None, weights_regularizer: Optional[Callable] = None,
                     biases_initializer: Any = _init.Zeros(), biases_regularizer: Optional[Callable] = None,
                     reuse: Any = None, variables_collections: Any = None, outputs_collections: Any = None,
                     trainable: bool = True, scope: Optional[str] = None) -> _g.Tensor:
    """A depthwise convolution (depthwise_weights [kh, kw, in, depth_multiplier]) then, unless
    num_outputs is None, a pointwise one (pointwise_weights [1, 1, in * depth_multiplier,
    num_outputs]); scope "SeparableConv2d"."""
    x, first = _nhwc(_g.convert_to_tensor(inputs), "separable_conv2d", data_format)
    kh, kw = _layers._pair(kernel_size, "kernel_size")
    sh, sw = _layers._pair(stride, "stride")
    rh, rw = _layers._pair(rate, "rate")
    c = int(x.shape.dims[-1])
    m = int(depth_multiplier)
    g = x.graph
    with g.as_default(), variable_scope(scope, default_name="SeparableConv2d", reuse=reuse) as sc:
        init = weights_initializer or xavier_initializer()
        # with num_outputs TF1 builds a core SeparableConv2D layer, whose penalties are named by
        # its weights' Keras names; without, plain model variables named as they are
        core = num_outputs is not None
        dw = _model_variable(g, "depthwise_weights", [kh, kw, c, m], x.dtype, init, weights_regularizer, trainable,
                             variables_collections, "weights", "depthwise_kernel" if core else None)
        strides = [1, sh, sw, 1]
        rates = None if (rh, rw) == (1, 1) else [rh, rw]
        if num_outputs is not None:
            n = int(num_outputs)
            pw = _model_variable(g, "pointwise_weights", [1, 1, c * m, n], x.dtype, pointwise_initializer or init,
                                 weights_regularizer, trainable, variables_collections, "weights", "pointwise_kernel")
            y = _separable(x, dw, pw, strides, padding.upper(), rate=rates)
        else:
            n = c * m
            y = depthwise_conv2d(x, dw, strides, padding.upper(), rate=rates)
        y = _back(y, first)
        if normalizer_fn is None and biases_initializer is not None:
            b = _model_variable(g, "biases", [n], x.dtype, biases_initializer, biases_regularizer, trainable,
                                variables_collections, "biases", "bias" if core else None)
            y = nn_ops.bias_add(y, b, data_format="NCHW" if first else "NHWC")
        return _finish(sc, y, normalizer_fn, normalizer_params, activation_fn, outputs_collections)


def bias_add(inputs: Any, activation_fn: Optional[Callable] = None, initializer: Any = _init.Zeros(),
             regularizer: Optional[Callable] = None, reuse: Any = None, variables_collections: Any = None,
             outputs_collections: Any = None, trainable: bool = True, data_format: str = "NHWC",
             scope: Optional[str] = None) -> _g.Tensor:
    """inputs + a `biases` variable over the channels (the last axis; NCHW: the second), scope "BiasAdd"."""
    x = _g.convert_to_tensor(inputs)
    if data_format not in ("NHWC", "NCHW"):
        raise InvalidArgumentError(f"bias_add: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    axis = 1 if data_format == "NCHW" else -1
    if x.shape.rank is None or x.shape.dims[axis] is None:
        raise InvalidArgumentError(f"bias_add: the channel dimension of the input must be known, got {x.shape}")
    g = x.graph
    with g.as_default(), variable_scope(scope, default_name="BiasAdd", reuse=reuse) as sc:
        b = _model_variable(g, "biases", [int(x.shape.dims[axis])], x.dtype, initializer, regularizer, trainable,
                            variables_collections, "biases")
        y = nn_ops.bias_add(x, b, data_format=data_format)
        return _finish(sc, y, None, None, activation_fn, outputs_collections)


def softmax(logits: Any, scope: Optional[str] = None) -> _g.Tensor:
    """Softmax over the last axis (name scope "softmax")."""
    x = _g.convert_to_tensor(logits)
    with x.graph.as_default(), x.graph.name_scope(scope or "softmax"):
        return nn_ops.softmax(x)


convolution2d_transpose = conv2d_transpose
separable_convolution2d = separable_conv2d
