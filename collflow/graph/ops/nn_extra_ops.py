"""More of TensorFlow 1.x's tf.nn: the activations relu6, elu, selu, softplus and softsign,
conv2d_transpose, and local response normalization (lrn).

The activations' gradients are built from graph ops (so they differentiate again), in terms of
the output where TensorFlow's are (elu, selu).  conv2d_transpose is the gradient of conv2d with
respect to its input, run forward: the existing Conv2DBackpropInput op, whose gradients are
conv2d and the filter gradient.  LRN has a dedicated gradient op, LRNGrad (not differentiable
again, as in TensorFlow).  Kernels live in kernels/nn_extra_kernels.py.
"""
from __future__ import annotations

from typing import Any, Optional

from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from . import math_ops as _m
from . import layout_ops as _lay
from . import nn_ops as _nn
from .op_util import dense as _dense, single

__all__ = ["relu6", "elu", "selu", "softplus", "softsign", "conv2d_transpose", "lrn",
           "local_response_normalization", "conv1d"]

# SELU's constants (Klambauer et al., 2017), as TensorFlow uses them
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _float_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if not x.dtype.is_floating:
        raise ValueError(f"{op.type} needs a floating-point input, got {x.dtype.name}")
    return [(x.dtype, x.shape)]


register_op("Relu6", _nn._real_spec)
for _n in ("Elu", "Selu", "Softplus", "Softsign"):
    register_op(_n, _float_spec)


def _lrn_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if not x.dtype.is_floating:
        raise ValueError(f"lrn needs a floating-point input, got {x.dtype.name}")
    if x.shape.rank not in (None, 4):
        raise ValueError(f"lrn needs a 4-D input [batch, height, width, channels], got shape {x.shape}")
    return [(x.dtype, x.shape)]


register_op("LRN", _lrn_spec)
# LRNGrad(input_grads, input_image, output_image), TensorFlow's argument order
register_op("LRNGrad", lambda op: [(op.inputs[1].dtype, op.inputs[1].shape)])
# LRNGrad: no gradient registered (LookupError through it, as TF)

# -- gradients ---------------------------------------------------------------------------------


@register_gradient("Relu6")
def _relu6_grad(op: _g.Operation, g: Any) -> list:
    # TF's Relu6Grad multiplies by the mask (a NaN or inf gradient outside (0, 6) gives NaN)
    x, g = op.inputs[0], _dense(g)
    inside = _m.logical_and(_m.greater(x, 0.0), _m.less(x, 6.0))
    return [g * _m.cast(inside, g.dtype)]


@register_gradient("Elu")
def _elu_grad(op: _g.Operation, g: Any) -> list:
    y, g = op.outputs[0], _dense(g)       # elu' = y + 1 where x < 0 (there y < 0), else 1
    return [_a.where(_m.less(y, 0.0), g * (y + 1.0), g)]


@register_gradient("Selu")
def _selu_grad(op: _g.Operation, g: Any) -> list:
    y, g = op.outputs[0], _dense(g)       # selu' = y + scale * alpha where x < 0, else scale
    return [_a.where(_m.less(y, 0.0), g * (y + SELU_SCALE * SELU_ALPHA), g * SELU_SCALE)]


register_gradient("Softplus")(lambda op, g: [_dense(g) * _nn.sigmoid(op.inputs[0])])
register_gradient("Softsign")(lambda op, g: [_dense(g) / _m.square(1.0 + _m.abs(op.inputs[0]))])


@register_gradient("LRN")
def _lrn_grad(op: _g.Operation, g: Any) -> list:
    return [single("LRNGrad", [_dense(g), op.inputs[0], op.outputs[0]], dict(op.attrs))]

# -- constructors: activations -----------------------------------------------------------------


def relu6(features: Any, name: Optional[str] = None) -> _g.Tensor:
    """min(max(features, 0), 6)."""
    return single("Relu6", [features], name=name or "Relu6")


def elu(features: Any, name: Optional[str] = None) -> _g.Tensor:
    """exp(features) - 1 where features < 0, else features."""
    return single("Elu", [features], name=name or "Elu")


def selu(features: Any, name: Optional[str] = None) -> _g.Tensor:
    """scale * (alpha * (exp(features) - 1) where features < 0, else features), with the
    self-normalizing constants alpha = 1.6733 and scale = 1.0507."""
    return single("Selu", [features], name=name or "Selu")


def softplus(features: Any, name: Optional[str] = None) -> _g.Tensor:
    """log(exp(features) + 1), computed without overflow."""
    return single("Softplus", [features], name=name or "Softplus")


def softsign(features: Any, name: Optional[str] = None) -> _g.Tensor:
    """features / (abs(features) + 1)."""
    return single("Softsign", [features], name=name or "Softsign")

# -- conv2d_transpose --------------------------------------------------------------------------


def _output_shape(output_shape: Any, g: _g.Graph) -> Any:
    """(sizes input, static shape hint) of conv2d_transpose's output_shape argument."""
    if isinstance(output_shape, _g.Tensor) or hasattr(output_shape, "handle"):
        t = _g.convert_to_tensor(output_shape)
        if not t.dtype.is_integer or t.shape.rank not in (None, 1) or t.shape.dims not in (None, (4,)):
            raise InvalidArgumentError(f"conv2d_transpose: output_shape must be a 1-D int tensor of 4 elements, "
                                       f"got {t.dtype.name} of shape {t.shape}")
        from .shape_eval import partial_vector  # the entries TF's shape inference can evaluate
        dims = partial_vector(t)
        if dims is None or len(dims) != 4:
            return t, TensorShape([None] * 4)
        return t, TensorShape([None if d is None or d < 0 else d for d in dims])
    dims = [int(d) for d in output_shape]
    if len(dims) != 4:
        raise InvalidArgumentError(f"conv2d_transpose: output_shape must have 4 elements, got {dims}")
    with g.as_default():
        return _nn._sizes(dims), TensorShape(dims)


def conv2d_transpose(value: Any = None, filter: Any = None, output_shape: Any = None,  # noqa: A002 - TF name
                     strides: Any = None, padding: str = "SAME", data_format: str = "NHWC",
                     name: Optional[str] = None, input: Any = None, filters: Any = None,  # noqa: A002
                     dilations: Any = None) -> _g.Tensor:
    """The transpose of conv2d (the gradient of conv2d with respect to its input), sometimes
    called deconvolution.

    value (or input=): [batch, height, width, in_channels]; filter (or filters=): [kh, kw,
    out_channels, in_channels]; output_shape: [batch, out_height, out_width, out_channels], a
    list or a 1-D int tensor, which conv2d with the same strides and padding would map back to
    value's height and width.
    """
    value = input if value is None else value
    filter = filters if filter is None else filter
    if value is None or filter is None or output_shape is None or strides is None:
        raise InvalidArgumentError("conv2d_transpose needs value, filter, output_shape and strides")
    if _lay.channels_first(data_format, "conv2d_transpose"):
        # NHWC between transposes; output_shape, strides and dilations reordered to match
        sizes_nhwc = _lay.nhwc_sizes(output_shape)
        return _lay.in_nhwc(value, True, name, "conv2d_transpose", lambda xh, nm: conv2d_transpose(
            xh, filter, sizes_nhwc, _lay.nhwc_order(strides, True), padding, "NHWC", nm,
            dilations=_lay.nhwc_order(dilations, True)))
    x = _g.convert_to_tensor(value)
    w = _g.convert_to_tensor(filter, dtype=None if isinstance(filter, _g.Tensor) else x.dtype, graph=x.graph)
    sizes, hint = _output_shape(output_shape, x.graph)
    xs, ws = x.shape, w.shape
    if xs.rank not in (None, 4) or ws.rank not in (None, 4):
        raise InvalidArgumentError(f"conv2d_transpose needs a 4-D value and filter, got shapes {xs} and {ws}")
    if xs.rank == 4 and ws.rank == 4 and None not in (xs.dims[3], ws.dims[3]) and xs.dims[3] != ws.dims[3]:
        raise InvalidArgumentError(f"conv2d_transpose: input channels ({xs.dims[3]}, value of shape {xs}) do not "
                                   f"match the filter's input channels ({ws.dims[3]}, filter of shape {ws})")
    if ws.rank == 4 and None not in (hint.dims[3], ws.dims[2]) and hint.dims[3] != ws.dims[2]:
        raise InvalidArgumentError(f"conv2d_transpose: output_shape {hint} does not match the filter's output "
                                   f"channels ({ws.dims[2]}, filter of shape {ws})")
    if (isinstance(padding, str) and xs.rank == 4 and ws.rank == 4
            and None not in (hint.dims[1], hint.dims[2], ws.dims[0], ws.dims[1])):
        attrs = _nn._conv_attrs(strides, padding, dilations)
        got = [_nn.conv_output_size(hint.dims[1 + i], ws.dims[i], attrs["strides"][i], attrs["dilations"][i],
                                    attrs["padding"])[0] for i in range(2)]
        have = list(xs.dims[1:3])
        if any(h is not None and h != o for h, o in zip(have, got)):
            raise InvalidArgumentError(f"conv2d_transpose: output_shape {hint} would convolve back to height and "
                                       f"width {got}, but value has shape {xs}")
    if hint.dims[0] is None and xs.rank == 4:
        hint = TensorShape([xs.dims[0]] + list(hint.dims[1:]))
    if hint.dims[3] is None and ws.rank == 4 and ws.dims[2] is not None:   # the filter's, as TF's shape function
        hint = TensorShape(list(hint.dims[:3]) + [ws.dims[2]])
    return _nn.conv2d_backprop_input(sizes, w, x, strides, padding, data_format=data_format, dilations=dilations,
                                     name=name or "conv2d_transpose", shape_hint=hint)

# -- local response normalization -------------------------------------------------------------


def lrn(input: Any, depth_radius: int = 5, bias: float = 1.0, alpha: float = 1.0,  # noqa: A002 - TF name
        beta: float = 0.5, name: Optional[str] = None) -> _g.Tensor:
    """Local response normalization across channels of a 4-D input:
    sqr_sum[..., d] = sum(input[..., d - depth_radius : d + depth_radius + 1] ** 2);
    output = input / (bias + alpha * sqr_sum) ** beta."""
    if int(depth_radius) < 0:
        raise InvalidArgumentError(f"lrn: depth_radius must be non-negative, got {depth_radius}")
    attrs = {"depth_radius": int(depth_radius), "bias": float(bias), "alpha": float(alpha), "beta": float(beta)}
    return single("LRN", [input], attrs, name=name or "LRN")


local_response_normalization = lrn


def _one(v: Any, what: str) -> int:
    """conv1d's stride/dilation: an int, or a list of 1 or 3 ints ([1, s, 1])."""
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return int(v[0])
        if len(v) == 3 and int(v[0]) == 1 and int(v[2]) == 1:
            return int(v[1])
        raise InvalidArgumentError(f"conv1d: {what} must be an int or a list of 1 or 3 ints [1, {what}, 1], got {v}")
    return int(v)


def conv1d(value: Any = None, filters: Any = None, stride: Any = None, padding: Any = None,
           use_cudnn_on_gpu: Any = None, data_format: Optional[str] = None, name: Optional[str] = None,
           input: Any = None, dilations: Any = None) -> _g.Tensor:  # noqa: A002 - TF's names
    """1-D convolution over [batch, width, in_channels] with filters [width, in, out]
    (tf.nn.conv1d): as TensorFlow computes it, a conv2d over a height of one."""
    x = value if value is not None else input
    if x is None or filters is None or stride is None or padding is None:
        raise InvalidArgumentError("conv1d needs value (or input), filters, stride and padding")
    if data_format not in (None, "NWC", "NHWC", "NCW", "NCHW"):
        raise InvalidArgumentError(f"conv1d: data_format must be 'NWC' or 'NCW', got {data_format!r}")
    first = data_format in ("NCW", "NCHW")   # TF1 takes NCHW for NCW too
    if first:   # [1, c, w] stride/dilation lists read as [1, w, c]
        stride = _lay.nhwc_order(stride, True, 3)
        dilations = _lay.nhwc_order(dilations, True, 3)
    s, d = _one(stride, "stride"), _one(1 if dilations is None else dilations, "dilations")
    g = _g.get_default_graph()
    with g.name_scope(name or "conv1d"):
        # as TF: a height of one added (NCW -> NCHW with axis 2), a conv2d, the height removed
        axis = 2 if first else 1
        x4 = _a.expand_dims(_g.convert_to_tensor(x), axis, name="ExpandDims")
        f4 = _a.expand_dims(_g.convert_to_tensor(filters), 0, name="ExpandDims_1")
        if first:
            y = _nn.conv2d(x4, f4, strides=[1, 1, 1, s], padding=padding, dilations=[1, 1, 1, d], name="Conv2D",
                           data_format="NCHW")
        else:
            y = _nn.conv2d(x4, f4, strides=[1, 1, s, 1], padding=padding, dilations=[1, 1, d, 1], name="Conv2D")
        return _a.squeeze(y, [axis], name="Squeeze")

