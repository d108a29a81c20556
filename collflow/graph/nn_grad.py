"""Gradients of the nn ops: one rule per op, built from graph ops.

The forward ops hand their gradients to dedicated ops (ReluGrad, SigmoidGrad,
Conv2DBackpropInput, ...) whose kernels avoid temporaries; those gradient ops that are
differentiable again have their own rules below (second derivatives, double backprop).
"""
from __future__ import annotations

from typing import Any

from .registry import register_gradient as reg
from .ops import array_ops as a
from .ops import math_ops as m
from .ops import nn_ops as n
from .ops import depthwise_ops as dw
from .ops.op_util import single
from .ops.complex_ops import conj_if_complex as _cj

# -- activations ----------------------------------------------------------------------
reg("Relu")(lambda op, g: [single("ReluGrad", [g, op.outputs[0]])])
# d/dy of relu's gradient is zero almost everywhere
# second derivatives: linear in the incoming gradient, zero in the features (TF1 returns zeros,
# not None, so a Hessian of a ReLU net is a zero tensor rather than a missing one)
reg("ReluGrad")(lambda op, gg: [single("ReluGrad", [gg, op.inputs[1]]), a.zeros_like(op.inputs[1])])
reg("LeakyRelu")(lambda op, g: [single("LeakyReluGrad", [g, op.inputs[0]], {"alpha": op.attrs["alpha"]})])
reg("LeakyReluGrad")(lambda op, gg: [single("LeakyReluGrad", [gg, op.inputs[1]], {"alpha": op.attrs["alpha"]}),
                                     a.zeros_like(op.inputs[1])])
# complex x (TF's convention): the derivative conjugated, i.e. the *Grad op of conj(y)
reg("Sigmoid")(lambda op, g: [single("SigmoidGrad", [_cj(op.outputs[0]), g])])
reg("Tanh")(lambda op, g: [single("TanhGrad", [_cj(op.outputs[0]), g])])


@reg("SigmoidGrad")
def _sigmoid_grad_grad(op: Any, gg: Any) -> list:
    y, dy = _cj(op.inputs[0]), _cj(op.inputs[1])  # out = dy * y * (1 - y)
    return [gg * dy * (1.0 - 2.0 * y), single("SigmoidGrad", [y, gg])]


@reg("TanhGrad")
def _tanh_grad_grad(op: Any, gg: Any) -> list:
    y, dy = _cj(op.inputs[0]), _cj(op.inputs[1])  # out = dy * (1 - y*y)
    return [-2.0 * gg * dy * y, single("TanhGrad", [y, gg])]


# -- softmax --------------------------------------------------------------------------


@reg("Softmax")
def _softmax_grad(op: Any, g: Any) -> list:
    y = op.outputs[0]
    gy = g * y
    return [gy - y * m.reduce_sum(gy, op.attrs["axis"], keepdims=True)]


@reg("LogSoftmax")
def _log_softmax_grad(op: Any, g: Any) -> list:
    y = op.outputs[0]
    return [g - m.exp(y) * m.reduce_sum(g, op.attrs["axis"], keepdims=True)]


def _is_zeros(t: Any) -> bool:
    """True for the zeros the gradient walk fills in for an output nobody differentiated."""
    return t is None or t.op.type == "ZerosLike"


def _xent_logits_grad(op: Any, g_loss: Any, g_backprop: Any) -> Any:
    logits, backprop = op.inputs[0], op.outputs[1]
    # the loss gradient broadcast over classes: g[..., None] * (softmax - labels), TF1's gradient
    # (for labels that do not sum to 1 it is not the exact derivative of the loss, as in TF1)
    grad = a.expand_reduced(g_loss, logits, -1) * backprop
    if not _is_zeros(g_backprop):
        # double backprop: backprop = softmax(logits) - labels, so its gradient is softmax's
        p = n.softmax(logits)
        gp = g_backprop * p
        grad = grad + (gp - p * m.reduce_sum(gp, -1, keepdims=True))
    return grad


@reg("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_grad(op: Any, g_loss: Any, g_backprop: Any) -> list:
    return [_xent_logits_grad(op, g_loss, g_backprop), None]


@reg("SoftmaxCrossEntropyWithLogits")
def _xent_grad(op: Any, g_loss: Any, g_backprop: Any) -> list:
    logits, labels = op.inputs
    # loss = -sum(labels * log_softmax(logits)); backprop = softmax - labels
    g_labels = a.expand_reduced(g_loss, logits, -1) * -n.log_softmax(logits)
    if not _is_zeros(g_backprop):
        g_labels = g_labels - g_backprop
    return [_xent_logits_grad(op, g_loss, g_backprop), g_labels]


# -- convolution ----------------------------------------------------------------------


def _conv_kw(op: Any) -> dict:
    return {"strides": op.attrs["strides"], "padding": op.attrs["padding"], "dilations": op.attrs["dilations"]}


def _sizes_of(t: Any) -> Any:
    """A constant shape when static (no run-time dependency), else a Shape op."""
    if t.shape.is_fully_defined():
        return list(t.shape.dims)
    return a.shape(t)


def _register_conv_family(fwd_type: str, conv: Any, bp_input: Any, bp_filter: Any) -> None:
    """The gradients of a convolution op and of its two backprop ops, all linear in each of
    their two tensor inputs: conv2d's three rules, written once for conv2d and depthwise."""

    @reg(fwd_type)
    def _conv_grad(op: Any, g: Any) -> list:
        x, w = op.inputs
        kw = _conv_kw(op)
        return [bp_input(_sizes_of(x), w, g, shape_hint=x.shape, **kw),
                bp_filter(x, _sizes_of(w), g, shape_hint=w.shape, **kw)]

    @reg(fwd_type + "BackpropInput")
    def _bp_input_grad(op: Any, gg: Any) -> list:
        _, w, dy = op.inputs
        kw = _conv_kw(op)
        return [None, bp_filter(gg, _sizes_of(w), dy, shape_hint=w.shape, **kw), conv(gg, w, **kw)]

    @reg(fwd_type + "BackpropFilter")
    def _bp_filter_grad(op: Any, gg: Any) -> list:
        x, _, dy = op.inputs
        kw = _conv_kw(op)
        return [bp_input(_sizes_of(x), gg, dy, shape_hint=x.shape, **kw), None, conv(x, gg, **kw)]


_register_conv_family("Conv2D", n.conv2d, n.conv2d_backprop_input, n.conv2d_backprop_filter)
_register_conv_family("DepthwiseConv2dNative", dw.depthwise_conv2d_native, dw.depthwise_conv2d_native_backprop_input,
                      dw.depthwise_conv2d_native_backprop_filter)


# -- pooling --------------------------------------------------------------------------


def _pool_attrs(op: Any) -> dict:
    return {"ksize": op.attrs["ksize"], "strides": op.attrs["strides"], "padding": op.attrs["padding"]}


reg("MaxPool")(lambda op, g: [single("MaxPoolGrad", [op.inputs[0], op.outputs[0], g], _pool_attrs(op))])


@reg("MaxPoolGrad")
def _max_pool_grad_grad(op: Any, gg: Any) -> list:
    # linear in its gradient input (the window maxima stay put for small changes of x): as TF1,
    # zeros for orig_input and orig_output, MaxPoolGradGrad for grad (gradient penalties)
    x, y = op.inputs[0], op.inputs[1]
    return [a.zeros_like(x), a.zeros_like(y), single("MaxPoolGradGrad", [x, y, gg], _pool_attrs(op))]


@reg("AvgPool")
def _avg_pool_grad(op: Any, g: Any) -> list:
    x = op.inputs[0]
    attrs = dict(_pool_attrs(op), shape_hint=x.shape)
    sizes = _sizes_of(x)
    if isinstance(sizes, list):
        sizes = n._sizes(sizes)
    return [single("AvgPoolGrad", [sizes, g], attrs)]


# AvgPoolGrad is linear in its gradient input: its own gradient is the average pool
reg("AvgPoolGrad")(lambda op, gg: [None, single("AvgPool", [gg], _pool_attrs(op))])

# -- bias, losses ------------------------------------------------------------------------
reg("BiasAdd")(lambda op, g: [g, single("BiasAddGrad", [g])])
reg("BiasAddGrad")(lambda op, gg: [a.broadcast_like(gg, op.inputs[0])])
reg("L2Loss")(lambda op, g: [op.inputs[0] * g])
