"""Depthwise, separable and atrous convolutions (TensorFlow 1.x `tf.nn` names).

A depthwise convolution filters each input channel on its own: filter [kh, kw, C, M] maps an
NHWC input of C channels to C * M channels, output channel c * M + m being channel c
correlated with filter[:, :, c, m] (MobileNet's layers, M = 1).  A separable convolution is a
depthwise one followed by a 1x1 (pointwise) conv2d; an atrous one is conv2d with dilations.
Strides, padding and dilations follow conv2d (`nn_ops.conv_output_size`); unlike TF's CPU
kernel, DepthwiseConv2dNative here also takes dilations and unequal strides.
"""
from __future__ import annotations

from typing import Any, Optional

from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_op
from ..shape import TensorShape
from . import layout_ops as _lay
from . import nn_ops as _nn
from . import nn_extra_ops as _nx
from .op_util import single

__all__ = ["depthwise_conv2d", "depthwise_conv2d_native", "depthwise_conv2d_native_backprop_input",
           "depthwise_conv2d_native_backprop_filter", "depthwise_conv2d_backprop_input",
           "depthwise_conv2d_backprop_filter", "separable_conv2d", "atrous_conv2d", "atrous_conv2d_transpose"]


def _depthwise_spec(op: _g.Operation) -> list:
    x, w = op.inputs
    if not x.dtype.is_floating or x.dtype != w.dtype:
        raise ValueError(f"depthwise_conv2d input and filter must be floating-point of one dtype, got "
                         f"{x.dtype.name} and {w.dtype.name}")
    n, h, wd, c = _nn._dims4(x, "depthwise_conv2d input (NHWC)")
    kh, kw, ci, m = _nn._dims4(w, "depthwise_conv2d filter (height, width, in_channels, channel_multiplier)")
    if c is not None and ci is not None and c != ci:
        raise ValueError(f"input has {c} channels (shape {x.shape}) but the depthwise filter expects {ci} "
                         f"(shape {w.shape})")
    oh, ow = _nn._spatial_out(h, wd, op.attrs, kh, kw)
    c = c if c is not None else ci
    return [(x.dtype, TensorShape([n, oh, ow, c * m if c is not None and m is not None else None]))]


register_op("DepthwiseConv2dNative", _depthwise_spec)
register_op("DepthwiseConv2dNativeBackpropInput", _nn._conv_bp_input_spec, host_inputs=(0,))  # sizes on the host
register_op("DepthwiseConv2dNativeBackpropFilter", _nn._conv_bp_filter_spec, host_inputs=(1,))


def _attrs(strides: Any, padding: Any, dilations: Any, data_format: Optional[str], what: str) -> dict:
    _nn._nhwc(data_format, what)
    if strides is None or padding is None:
        raise InvalidArgumentError(f"{what} needs strides and padding")
    return _nn._conv_attrs(strides, padding, dilations)


def depthwise_conv2d_native(input: Any, filter: Any, strides: Any, padding: Any,  # noqa: A002 - TF names
                            data_format: str = "NHWC", dilations: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """Depthwise 2-D convolution: input [n, h, w, C], filter [kh, kw, C, M] -> [n, h', w', C * M]."""
    return _depthwise(input, filter, strides, padding, dilations, data_format, name, "DepthwiseConv2dNative",
                      "depthwise_conv2d_native")


def _depthwise(input: Any, filter: Any, strides: Any, padding: Any, dilations: Any,  # noqa: A002
               data_format: Optional[str], name: Optional[str], default: str, what: str) -> _g.Tensor:
    """The DepthwiseConv2dNative op; NCHW (strides, dilations in its order) between transposes."""
    first = _lay.channels_first(data_format, what)
    attrs = _attrs(_lay.nhwc_order(strides, first), padding, _lay.nhwc_order(dilations, first), None, what)
    return _lay.in_nhwc(input, first, name, default,
                        lambda x, nm: single("DepthwiseConv2dNative", [x, filter], attrs, name=nm or default))


def _rate(rate: Any, dilations: Any, strides: Any, what: str) -> Any:
    """TF1's `rate` (or dilations=), refused together with strides > 1 as TF1 does."""
    if rate is not None and dilations is not None:
        raise InvalidArgumentError(f"{what}: give rate or dilations, not both")
    d = _nn._hw(rate if rate is not None else (dilations if dilations is not None else 1), "rate")
    s = _nn._hw(strides, "strides")
    if max(d) > 1 and max(s) > 1:
        raise InvalidArgumentError(f"{what}: strides > 1 ({list(s)}) are not supported together with rate > 1 "
                                   f"({list(d)}), as in TensorFlow")
    return d


def depthwise_conv2d(input: Any, filter: Any, strides: Any, padding: Any, rate: Any = None,  # noqa: A002
                     name: Optional[str] = None, data_format: Optional[str] = None,
                     dilations: Any = None) -> _g.Tensor:
    """TF1's depthwise_conv2d: depthwise_conv2d_native with an atrous `rate` ([rh, rw])."""
    first = _lay.channels_first(data_format, "depthwise_conv2d")
    d = _rate(rate, dilations, _lay.nhwc_order(strides, first), "depthwise_conv2d")  # rate: [rh, rw]
    return _depthwise(input, filter, strides, padding, d, data_format, name, "depthwise", "depthwise_conv2d")


def depthwise_conv2d_native_backprop_input(input_sizes: Any, filter: Any, out_backprop: Any,  # noqa: A002
                                           strides: Any, padding: Any, data_format: str = "NHWC",
                                           dilations: Any = None, name: Optional[str] = None,
                                           shape_hint: Any = None) -> _g.Tensor:
    """The gradient of depthwise_conv2d_native with respect to its input (of shape input_sizes);
    NCHW (sizes, strides, dilations in its order) as NHWC between transposes."""
    what = "depthwise_conv2d_native_backprop_input"
    first = _lay.channels_first(data_format, what)
    attrs = _attrs(_lay.nhwc_order(strides, first), padding, _lay.nhwc_order(dilations, first), None, what)
    if first:
        input_sizes, shape_hint = _lay.nhwc_sizes(input_sizes), _lay.nhwc_shape(shape_hint)
    attrs["shape_hint"] = shape_hint
    return _lay.in_nhwc(out_backprop, first, name, "DepthwiseConv2dNativeBackpropInput", lambda dy, nm: single(
        "DepthwiseConv2dNativeBackpropInput", [_nn._sizes(input_sizes), filter, dy], attrs,
        name=nm or "DepthwiseConv2dNativeBackpropInput"))


def depthwise_conv2d_native_backprop_filter(input: Any, filter_sizes: Any, out_backprop: Any,  # noqa: A002
                                            strides: Any, padding: Any, data_format: str = "NHWC",
                                            dilations: Any = None, name: Optional[str] = None,
                                            shape_hint: Any = None) -> _g.Tensor:
    """The gradient of depthwise_conv2d_native with respect to its filter (of shape filter_sizes);
    NCHW input and out_backprop are moved channels-last first."""
    what = "depthwise_conv2d_native_backprop_filter"
    first = _lay.channels_first(data_format, what)
    attrs = _attrs(_lay.nhwc_order(strides, first), padding, _lay.nhwc_order(dilations, first), None, what)
    attrs["shape_hint"] = shape_hint
    if first:
        input, out_backprop = _lay.to_nhwc(input), _lay.to_nhwc(out_backprop)
    return single("DepthwiseConv2dNativeBackpropFilter", [input, _nn._sizes(filter_sizes), out_backprop], attrs,
                  name=name or "DepthwiseConv2dNativeBackpropFilter")


depthwise_conv2d_backprop_input = depthwise_conv2d_native_backprop_input
depthwise_conv2d_backprop_filter = depthwise_conv2d_native_backprop_filter


def separable_conv2d(input: Any, depthwise_filter: Any, pointwise_filter: Any, strides: Any,  # noqa: A002
                     padding: Any, rate: Any = None, name: Optional[str] = None, data_format: Optional[str] = None,
                     dilations: Any = None) -> _g.Tensor:
    """A depthwise convolution ([kh, kw, C, M]) followed by a pointwise one ([1, 1, C * M, out]):
    [n, h, w, C] -> [n, h', w', out]."""
    x = _g.convert_to_tensor(input)
    pw = _g.convert_to_tensor(pointwise_filter, dtype=None if isinstance(pointwise_filter, _g.Tensor) else x.dtype,
                              graph=x.graph)
    dw = _g.convert_to_tensor(depthwise_filter, dtype=None if isinstance(depthwise_filter, _g.Tensor) else x.dtype,
                              graph=x.graph)
    if pw.shape.rank == 4 and any(d is not None and d != 1 for d in pw.shape.dims[:2]):
        raise InvalidArgumentError(f"separable_conv2d: the pointwise filter must be [1, 1, in, out], got "
                                   f"shape {pw.shape}")
    if (pw.shape.rank == 4 and dw.shape.rank == 4 and None not in (pw.shape.dims[2], dw.shape.dims[2],
                                                                   dw.shape.dims[3])
            and pw.shape.dims[2] != dw.shape.dims[2] * dw.shape.dims[3]):
        raise InvalidArgumentError(f"separable_conv2d: the pointwise filter ({pw.shape}) must take the depthwise "
                                   f"output's {dw.shape.dims[2] * dw.shape.dims[3]} channels (depthwise filter "
                                   f"{dw.shape})")
    with x.graph.as_default(), x.graph.name_scope(name or "separable_conv2d") as scope:
        depth = depthwise_conv2d(x, dw, strides, padding, rate=rate, data_format=data_format,
                                 dilations=dilations, name="depthwise")
        # named as the scope ("separable_conv2d:0"), as TF names it
        return _nn.conv2d(depth, pw, [1, 1, 1, 1], "VALID", data_format=data_format, name=scope)


def atrous_conv2d(value: Any, filters: Any, rate: int, padding: Any, name: Optional[str] = None) -> _g.Tensor:
    """conv2d with holes: the filter's taps `rate` apart (conv2d with dilations=rate, stride 1)."""
    if int(rate) < 1:
        raise InvalidArgumentError(f"atrous_conv2d: rate must be positive, got {rate}")
    return _nn.conv2d(value, filters, [1, 1, 1, 1], padding, dilations=int(rate), name=name or "atrous_conv2d")


def atrous_conv2d_transpose(value: Any, filters: Any, output_shape: Any, rate: int, padding: Any,
                            name: Optional[str] = None) -> _g.Tensor:
    """The transpose (gradient) of atrous_conv2d."""
    if int(rate) < 1:
        raise InvalidArgumentError(f"atrous_conv2d_transpose: rate must be positive, got {rate}")
    return _nx.conv2d_transpose(value, filters, output_shape, [1, 1, 1, 1], padding, dilations=int(rate),
                                name=name or "atrous_conv2d_transpose")
