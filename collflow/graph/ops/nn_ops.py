"""Neural-network ops (cf.nn.*): activations, softmax and cross entropy, conv2d, pooling,
bias_add, dropout, embedding lookup, l2_loss, moments.

TensorFlow 1.x names and semantics; images are NHWC and filters HWIO.  Each op type is
registered here with its shape function; gradients live in graph/nn_grad.py (dedicated
gradient ops such as ReluGrad, Conv2DBackpropInput or MaxPoolGrad are registered here
too) and kernels in kernels/nn_kernels.py.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_op, not_differentiable
from ..shape import TensorShape
from .op_util import make_op, single, axis_list
from . import array_ops as _a
from . import math_ops as _m
from . import layout_ops as _lay
from .constant_op import constant, identity, stop_gradient
from .random_ops import get_seed

__all__ = [
    "relu", "leaky_relu", "sigmoid", "tanh", "softmax", "log_softmax",
    "sparse_softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2", "sigmoid_cross_entropy_with_logits",
    "conv2d", "conv2d_backprop_input", "conv2d_backprop_filter",
    "max_pool2d", "avg_pool2d", "max_pool", "avg_pool", "bias_add", "xw_plus_b",
    "dropout", "embedding_lookup", "l2_loss", "moments",
]

# -- shape functions: elementwise --------------------------------------------------------


def _float_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if not x.dtype.is_floating:
        raise ValueError(f"{op.type} needs a floating-point input, got {x.dtype.name}")
    return [(x.dtype, x.shape)]


def _pair_spec(op: _g.Operation) -> list:
    """Two float inputs of one dtype and compatible shapes (the *Grad ops)."""
    a, b = op.inputs[0], op.inputs[1]
    complex_ok = a.dtype.is_complex and op.type in ("SigmoidGrad", "TanhGrad")
    if a.dtype != b.dtype or not (a.dtype.is_floating or complex_ok):
        raise ValueError(f"{op.type} needs two floating-point inputs of one dtype, "
                         f"got {a.dtype.name} and {b.dtype.name}")
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(f"{op.type} inputs have incompatible shapes {a.shape} and {b.shape}")
    return [(a.dtype, a.shape.merge_with(b.shape))]


def _float_or_complex_spec(op: _g.Operation) -> list:
    # sigmoid and tanh also take complex inputs, as TF's kernels
    x = op.inputs[0]
    if not (x.dtype.is_floating or x.dtype.is_complex):
        raise ValueError(f"{op.type} needs a floating-point or complex input, got {x.dtype.name}")
    return [(x.dtype, x.shape)]


def _real_spec(op: _g.Operation) -> list:
    # Relu (and Relu6) take any real number type, integers too, as TF's kernels
    x = op.inputs[0]
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise ValueError(f"{op.type} needs a real-number input, got {x.dtype.name}")
    return [(x.dtype, x.shape)]


register_op("Relu", _real_spec)
register_op("LeakyRelu", _float_spec)
for _n in ("Sigmoid", "Tanh"):
    register_op(_n, _float_or_complex_spec)
# ReluGrad(gradients, outputs), LeakyReluGrad(gradients, features),
# SigmoidGrad(y, dy), TanhGrad(y, dy): TensorFlow's argument orders
for _n in ("ReluGrad", "LeakyReluGrad", "SigmoidGrad", "TanhGrad"):
    register_op(_n, _pair_spec)


def _softmax_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if not x.dtype.is_floating:
        raise ValueError(f"{op.type} needs floating-point logits, got {x.dtype.name}")
    if x.shape.rank == 0:
        raise ValueError(f"{op.type} needs logits of rank >= 1, got a scalar")
    axis_list(op.attrs["axis"], x.shape.rank)  # range check
    return [(x.dtype, x.shape)]


register_op("Softmax", _softmax_spec)
register_op("LogSoftmax", _softmax_spec)

# -- cross entropy ---------------------------------------------------------------------


def _sparse_xent_spec(op: _g.Operation) -> list:
    logits, labels = op.inputs
    if not logits.dtype.is_floating:
        raise ValueError(f"logits must be floating-point, got {logits.dtype.name}")
    if labels.dtype not in (_dt.int32, _dt.int64):
        raise ValueError(f"labels must be int32 or int64 class indices, got {labels.dtype.name}")
    lr, yr = logits.shape.rank, labels.shape.rank
    if lr == 0:
        raise ValueError("logits must have rank >= 1 (..., num_classes), got a scalar")
    if lr is not None and yr is not None:
        if yr != lr - 1:
            raise ValueError(f"labels must have rank {lr - 1} (logits' rank minus one), got labels of shape "
                             f"{labels.shape} for logits of shape {logits.shape}")
        if not TensorShape(logits.shape.dims[:-1]).is_compatible_with(labels.shape):
            raise ValueError(f"labels of shape {labels.shape} do not match logits of shape {logits.shape} "
                             f"(expected labels of shape {TensorShape(logits.shape.dims[:-1])})")
    batch = labels.shape if lr is None else TensorShape(logits.shape.dims[:-1]).merge_with(labels.shape)
    return [(logits.dtype, batch), (logits.dtype, logits.shape)]


def _xent_spec(op: _g.Operation) -> list:
    logits, labels = op.inputs
    if not logits.dtype.is_floating or labels.dtype != logits.dtype:
        raise ValueError(f"logits and labels must be floating-point of one dtype, got {logits.dtype.name} "
                         f"and {labels.dtype.name}")
    if not logits.shape.is_compatible_with(labels.shape):
        raise ValueError(f"labels of shape {labels.shape} do not match logits of shape {logits.shape}")
    shp = logits.shape.merge_with(labels.shape)
    if shp.rank == 0:
        raise ValueError("logits must have rank >= 1 (..., num_classes), got a scalar")
    batch = TensorShape(None) if shp.rank is None else TensorShape(shp.dims[:-1])
    return [(logits.dtype, batch), (logits.dtype, shp)]


# outputs (loss, backprop): backprop = softmax(logits) - onehot(labels), the gradient of loss
register_op("SparseSoftmaxCrossEntropyWithLogits", _sparse_xent_spec)
register_op("SoftmaxCrossEntropyWithLogits", _xent_spec)

# -- convolution and pooling -----------------------------------------------------------


def conv_output_size(size: Optional[int], k: int, stride: int, dilation: int,
                     padding: str) -> Tuple[Optional[int], int, int]:
    """(output size, padding before, padding after) along one spatial dim, as TensorFlow.

    SAME: ceil(size / stride), padded evenly with the extra one after; VALID: no padding.
    """
    eff = (k - 1) * dilation + 1
    if size is None:
        return None, 0, 0
    if padding == "VALID":
        if size < eff:
            raise ValueError(f"window of effective size {eff} is larger than the input dimension {size} "
                             "with VALID padding")
        return (size - eff) // stride + 1, 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + eff - size, 0)
    return out, total // 2, total - total // 2


def _spatial_out(h: Optional[int], w: Optional[int], attrs: dict, kh: Optional[int],
                 kw: Optional[int]) -> Tuple[Optional[int], Optional[int]]:
    sh, sw = attrs["strides"]
    dh, dw = attrs.get("dilations", (1, 1))
    oh = conv_output_size(h, kh, sh, dh, attrs["padding"])[0] if kh is not None else None
    ow = conv_output_size(w, kw, sw, dw, attrs["padding"])[0] if kw is not None else None
    return oh, ow


def _dims4(t: _g.Tensor, what: str) -> List[Optional[int]]:
    if t.shape.rank is None:
        return [None] * 4
    if t.shape.rank != 4:
        raise ValueError(f"{what} must be 4-D, got shape {t.shape}")
    return list(t.shape.dims)


def _conv_spec(op: _g.Operation) -> list:
    x, w = op.inputs
    if not x.dtype.is_floating or x.dtype != w.dtype:
        raise ValueError(f"conv2d input and filter must be floating-point of one dtype, got {x.dtype.name} "
                         f"and {w.dtype.name}")
    n, h, wd, c = _dims4(x, "conv2d input (NHWC)")
    kh, kw, ci, co = _dims4(w, "conv2d filter (height, width, in_channels, out_channels)")
    if c is not None and ci is not None and c != ci:
        raise ValueError(f"input has {c} channels (shape {x.shape}) but the filter expects {ci} (shape {w.shape})")
    oh, ow = _spatial_out(h, wd, op.attrs, kh, kw)
    return [(x.dtype, TensorShape([n, oh, ow, co]))]


def _sizes_shape(sizes: _g.Tensor, hint: Any) -> TensorShape:
    """Static shape of a *_sizes input: its constant value, else the hint from the forward op."""
    if sizes.op.type == "Const":
        return TensorShape([int(d) for d in np.asarray(sizes.op.attrs["value"]).reshape(-1)])
    return hint if hint is not None else TensorShape([None] * 4)


def _conv_bp_input_spec(op: _g.Operation) -> list:
    sizes, w, dy = op.inputs
    if w.dtype != dy.dtype:
        raise ValueError(f"filter and out_backprop have different dtypes {w.dtype.name} and {dy.dtype.name}")
    return [(w.dtype, _sizes_shape(sizes, op.attrs.get("shape_hint")))]


def _conv_bp_filter_spec(op: _g.Operation) -> list:
    x, sizes, dy = op.inputs
    if x.dtype != dy.dtype:
        raise ValueError(f"input and out_backprop have different dtypes {x.dtype.name} and {dy.dtype.name}")
    return [(x.dtype, _sizes_shape(sizes, op.attrs.get("shape_hint")))]


register_op("Conv2D", _conv_spec)
# TF's HostMemory: the input/filter sizes are read on the host
register_op("Conv2DBackpropInput", _conv_bp_input_spec, host_inputs=(0,))
register_op("Conv2DBackpropFilter", _conv_bp_filter_spec, host_inputs=(1,))


def _pool_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if not x.dtype.is_floating:
        raise ValueError(f"{op.type} needs a floating-point input, got {x.dtype.name}")
    n, h, w, c = _dims4(x, f"{op.type} input (NHWC)")
    kh, kw = op.attrs["ksize"]
    oh, ow = _spatial_out(h, w, op.attrs, kh, kw)
    return [(x.dtype, TensorShape([n, oh, ow, c]))]


register_op("MaxPool", _pool_spec)
register_op("AvgPool", _pool_spec)
# MaxPoolGrad(orig_input, orig_output, grad); AvgPoolGrad(orig_input_shape, grad)
register_op("MaxPoolGrad", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)])
# MaxPoolGradGrad(orig_input, orig_output, grad of MaxPoolGrad's output): shaped as orig_output
register_op("MaxPoolGradGrad", lambda op: [(op.inputs[1].dtype, op.inputs[1].shape)])
register_op("AvgPoolGrad", lambda op: [(op.inputs[1].dtype, _sizes_shape(op.inputs[0], op.attrs.get("shape_hint")))])

# -- bias, losses, dropout ---------------------------------------------------------------


def _bias_add_spec(op: _g.Operation) -> list:
    x, b = op.inputs
    if x.dtype != b.dtype:
        raise ValueError(f"value and bias have different dtypes {x.dtype.name} and {b.dtype.name}")
    if b.shape.rank not in (None, 1):
        raise ValueError(f"bias must be 1-D, got shape {b.shape}")
    if x.shape.rank is not None and x.shape.rank < 1:
        raise ValueError("bias_add needs a value of rank >= 1")
    if x.shape.rank is not None and b.shape.rank == 1:
        c, cb = x.shape.dims[-1], b.shape.dims[0]
        if c is not None and cb is not None and c != cb:
            raise ValueError(f"bias of shape {b.shape} does not match the last dimension of value {x.shape}")
        if c is None and cb is not None:
            return [(x.dtype, TensorShape(list(x.shape.dims[:-1]) + [cb]))]
    return [(x.dtype, x.shape)]


def _bias_grad_spec(op: _g.Operation) -> list:
    g = op.inputs[0]
    c = g.shape.dims[-1] if g.shape.rank else None
    return [(g.dtype, TensorShape([c]))]


register_op("BiasAdd", _bias_add_spec)
register_op("BiasAddGrad", _bias_grad_spec)
register_op("L2Loss", lambda op: [(op.inputs[0].dtype, TensorShape(()))])


def _dropout_mask_spec(op: _g.Operation) -> list:
    x, keep = op.inputs
    if not x.dtype.is_floating:
        raise ValueError(f"dropout needs a floating-point input, got {x.dtype.name}")
    ns = op.attrs["noise_shape"]
    if ns is None:
        return [(x.dtype, x.shape)]
    if x.shape.rank is not None and len(ns) != x.shape.rank:
        raise ValueError(f"noise_shape {list(ns)} must have the rank of x (shape {x.shape})")
    dims = [d if d is not None else (x.shape.dims[i] if x.shape.rank is not None else None) for i, d in enumerate(ns)]
    return [(x.dtype, TensorShape(dims))]


# a scaled keep mask (0 or 1/keep_prob per element) of x's shape or noise_shape; random
register_op("DropoutMask", _dropout_mask_spec, stateful=True)

not_differentiable("DropoutMask")

# -- attribute helpers -----------------------------------------------------------------


def _hw(v: Any, what: str) -> Tuple[int, int]:
    """An int, a pair (h, w) or TensorFlow's [1, h, w, 1] -> (h, w)."""
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    vals = [int(x) for x in v]
    if len(vals) == 1:
        return vals[0], vals[0]
    if len(vals) == 2:
        return vals[0], vals[1]
    if len(vals) == 4:
        if vals[0] != 1 or vals[3] != 1:
            raise InvalidArgumentError(f"{what} {vals}: only the spatial dimensions may differ from 1 "
                                       "(NHWC: [1, height, width, 1])")
        return vals[1], vals[2]
    raise InvalidArgumentError(f"{what} must be an int, a pair or a list of 4 ints, got {v!r}")


def _padding(p: Any) -> str:
    if isinstance(p, str) and p.upper() in ("SAME", "VALID"):
        return p.upper()
    raise InvalidArgumentError(f"padding must be 'SAME' or 'VALID', got {p!r}")


def _nhwc(data_format: Optional[str], what: str) -> None:
    if data_format not in (None, "NHWC"):
        raise InvalidArgumentError(f"{what}: only data_format='NHWC' is supported, got {data_format!r}")


def _conv_attrs(strides: Any, padding: Any, dilations: Any) -> dict:
    s = _hw(strides, "strides")
    d = _hw(dilations if dilations is not None else 1, "dilations")
    if min(s) < 1 or min(d) < 1:
        raise InvalidArgumentError(f"strides {s} and dilations {d} must be positive")
    return {"strides": s, "padding": _padding(padding), "dilations": d}


# -- constructors: activations -------------------------------------------------------------


def relu(features: Any, name: Optional[str] = None) -> _g.Tensor:
    """max(features, 0)."""
    return single("Relu", [features], name=name or "Relu")


def leaky_relu(features: Any, alpha: float = 0.2, name: Optional[str] = None) -> _g.Tensor:
    """features where positive, alpha * features elsewhere.  As TF1: integer features are cast
    to float32 first, and alpha is a 32-bit float attribute (a float64 input is scaled by
    float64(float32(alpha)))."""
    x = _g.convert_to_tensor(features)
    if x.dtype.is_integer:
        x = _m.cast(x, _dt.float32)
    alpha = float(np.float32(np.asarray(alpha).item() if isinstance(alpha, np.ndarray) else alpha))
    return single("LeakyRelu", [x], {"alpha": alpha}, name=name or "LeakyRelu")


def sigmoid(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """1 / (1 + exp(-x)), computed without overflow."""
    return single("Sigmoid", [x], name=name or "Sigmoid")


def tanh(x: Any, name: Optional[str] = None) -> _g.Tensor:
    return single("Tanh", [x], name=name or "Tanh")


def _axis(axis: Optional[int], dim: Optional[int]) -> int:
    if dim is not None:
        if axis is not None and axis != dim:
            raise InvalidArgumentError(f"give axis or its old name dim, not both (axis={axis}, dim={dim})")
        axis = dim
    return -1 if axis is None else int(axis)


def softmax(logits: Any, axis: Optional[int] = None, name: Optional[str] = None,
            dim: Optional[int] = None) -> _g.Tensor:
    """exp(logits) / sum(exp(logits), axis), stable for large logits (axis defaults to -1)."""
    return single("Softmax", [logits], {"axis": _axis(axis, dim)}, name=name or "Softmax")


def log_softmax(logits: Any, axis: Optional[int] = None, name: Optional[str] = None,
                dim: Optional[int] = None) -> _g.Tensor:
    """logits - log(sum(exp(logits), axis)), stable for large logits."""
    return single("LogSoftmax", [logits], {"axis": _axis(axis, dim)}, name=name or "LogSoftmax")


# -- constructors: cross entropy -----------------------------------------------------------


def _named_only(fn: str, sentinel: Any, labels: Any, logits: Any) -> None:
    if sentinel is not None:
        raise InvalidArgumentError(f"{fn} takes only named arguments: {fn}(labels=..., logits=...)")
    if labels is None or logits is None:
        raise InvalidArgumentError(f"{fn} needs both labels= and logits=")


def sparse_softmax_cross_entropy_with_logits_pair(labels: Any, logits: Any,
                                                  name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor]:
    """(loss, backprop) of the fused op; backprop = softmax(logits) - onehot(labels)."""
    op = make_op("SparseSoftmaxCrossEntropyWithLogits", [logits, labels],
                 name=name or "SparseSoftmaxCrossEntropyWithLogits")
    return op.outputs[0], op.outputs[1]


def sparse_softmax_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None, logits: Any = None,
                                             name: Optional[str] = None) -> _g.Tensor:
    """Per-example -log softmax(logits)[label].

    labels: int32/int64 of shape [d0, ..., dn-1], each in [0, num_classes);
    logits: float of shape [d0, ..., dn-1, num_classes].  Returns shape [d0, ..., dn-1].
    An out-of-range label is an InvalidArgumentError naming it.  Fused and stable: one
    pass computes the loss and its gradient.
    """
    _named_only("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    return sparse_softmax_cross_entropy_with_logits_pair(labels, logits, name)[0]


def softmax_cross_entropy_with_logits_pair(labels: Any, logits: Any,
                                           name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor]:
    """(loss, backprop) of the fused dense op."""
    logits = _g.convert_to_tensor(logits)
    labels = _g.convert_to_tensor(labels, dtype=logits.dtype) if not isinstance(labels, _g.Tensor) else labels
    op = make_op("SoftmaxCrossEntropyWithLogits", [logits, labels], name=name or "SoftmaxCrossEntropyWithLogits")
    return op.outputs[0], op.outputs[1]


def softmax_cross_entropy_with_logits_v2(_sentinel: Any = None, labels: Any = None, logits: Any = None,
                                         axis: int = -1, name: Optional[str] = None,
                                         dim: Optional[int] = None) -> _g.Tensor:
    """Per-example -sum(labels * log softmax(logits)) over the last axis; gradients reach labels too.

    labels: a probability distribution per example, shaped like logits (cast to logits'
    dtype, as TF casts them).
    """
    _named_only("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    ax = _axis(axis, dim)
    logits = _g.convert_to_tensor(logits)
    if isinstance(labels, _g.Tensor) or hasattr(labels, "handle"):
        labels = _g.convert_to_tensor(labels)
        if labels.dtype != logits.dtype and logits.dtype.is_floating:
            labels = _m.cast(labels, logits.dtype)  # as TF: int32 one-hot labels (PetarV-/GAT) are cast
    r = logits.shape.rank
    if ax != -1 and (r is None or ax % r != r - 1):
        if r is None:
            raise InvalidArgumentError(f"softmax_cross_entropy_with_logits: axis={ax} needs logits of known rank")
        if not -r <= ax < r:
            raise InvalidArgumentError(f"softmax_cross_entropy_with_logits: axis {ax} is out of range for logits "
                                       f"of rank {r}")
        # as TF: the class axis moved last (the loss keeps the other axes in their order)
        perm = [d for d in range(r) if d != ax % r] + [ax % r]
        if not isinstance(labels, _g.Tensor):
            labels = _g.convert_to_tensor(labels, dtype=logits.dtype)
        logits, labels = _a.transpose(logits, perm), _a.transpose(labels, perm)
    return softmax_cross_entropy_with_logits_pair(labels, logits, name)[0]


def softmax_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None, logits: Any = None,
                                      dim: int = -1, name: Optional[str] = None,
                                      axis: Optional[int] = None) -> _g.Tensor:
    """TensorFlow 1.x's version: as _v2, but no gradient flows into labels."""
    _named_only("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    logits = _g.convert_to_tensor(logits)
    if not isinstance(labels, _g.Tensor):
        labels = _g.convert_to_tensor(labels, dtype=logits.dtype)
    labels = stop_gradient(labels)
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=_axis(axis, dim), name=name)


def sigmoid_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None, logits: Any = None,
                                      name: Optional[str] = None) -> _g.Tensor:
    """Elementwise logistic loss, stable: max(x, 0) - x * z + log(1 + exp(-|x|)).

    Built as TF1 builds it, with where(x >= 0, ...) rather than relu and abs, so the gradient at
    a logit of exactly 0 is TF1's sigmoid(0) - z (relu's and abs's subgradients at 0 gave -z)."""
    _named_only("sigmoid_cross_entropy_with_logits", _sentinel, labels, logits)
    x = _g.convert_to_tensor(logits)
    z = _g.convert_to_tensor(labels, dtype=x.dtype) if not isinstance(labels, _g.Tensor) else labels
    with x.graph.name_scope(name or "logistic_loss"):
        zeros = _a.zeros_like(x)
        cond = _m.greater_equal(x, zeros)
        relu_x = _a.where(cond, x, zeros)
        neg_abs_x = _a.where(cond, -x, x)
        return relu_x - x * z + _m.log1p(_m.exp(neg_abs_x))


# -- constructors: convolution and pooling ------------------------------------------------


def conv2d(input: Any, filter: Any = None, strides: Any = None, padding: Any = None,  # noqa: A002 - TF names
           use_cudnn_on_gpu: bool = True, data_format: str = "NHWC", dilations: Any = None,
           name: Optional[str] = None, filters: Any = None) -> _g.Tensor:
    """2-D convolution (cross-correlation, as TensorFlow).

    input: [batch, height, width, in_channels] (NCHW: [batch, in_channels, height, width]);
    filter (or filters=): [kh, kw, in, out].  strides/dilations: an int, a pair, or 4 ints in
    the data format's order; padding: "SAME", "VALID" or explicit pairs, one per dimension
    in the data format's order (0 for batch and channels).
    Returns [batch, out_height, out_width, out_channels] (NCHW: channels second).
    """
    if filter is None:
        filter = filters
    if filter is None or strides is None or padding is None:
        raise InvalidArgumentError("conv2d needs filter, strides and padding")
    first = _lay.channels_first(data_format, "conv2d")
    pairs = _lay.explicit_padding(padding, first, "conv2d")
    strides, dilations = _lay.nhwc_order(strides, first), _lay.nhwc_order(dilations, first)

    def body(x: _g.Tensor, nm: Optional[str]) -> _g.Tensor:
        p = padding
        if pairs is not None:
            x, p = _lay.pad_spatial(x, pairs), "VALID"
        return single("Conv2D", [x, filter], _conv_attrs(strides, p, dilations), name=nm or "Conv2D")
    return _lay.in_nhwc(input, first, name, "Conv2D", body)


def _sizes(v: Any) -> _g.Tensor:
    if isinstance(v, _g.Tensor):
        return v
    return constant(np.asarray([int(d) for d in v], dtype=np.int32), name="sizes")


def conv2d_backprop_input(input_sizes: Any, filter: Any, out_backprop: Any, strides: Any, padding: Any,  # noqa: A002
                          data_format: str = "NHWC", dilations: Any = None, name: Optional[str] = None,
                          shape_hint: Any = None) -> _g.Tensor:
    """The gradient of conv2d with respect to its input (of shape input_sizes); the arguments
    read as conv2d's (data format, explicit padding)."""
    first = _lay.channels_first(data_format, "conv2d_backprop_input")
    pairs = _lay.explicit_padding(padding, first, "conv2d_backprop_input")
    strides, dilations = _lay.nhwc_order(strides, first), _lay.nhwc_order(dilations, first)
    if first:
        input_sizes, shape_hint = _lay.nhwc_sizes(input_sizes), _lay.nhwc_shape(shape_hint)

    def body(dy: _g.Tensor, nm: Optional[str]) -> _g.Tensor:
        if pairs is None:
            return _conv2d_bp_input(input_sizes, filter, dy, strides, padding, dilations, nm, shape_hint)
        # the gradient of the padded input, cropped: the padding's cells receive nothing
        (t, b), (lft, r) = pairs[1], pairs[2]
        grow = [0, t + b, lft + r, 0]
        if isinstance(input_sizes, _g.Tensor):
            sizes, padded = input_sizes, _m.add(input_sizes, np.array(grow, np.int32))
        else:   # known sizes stay Python ints, so the result's static shape is known
            sizes = [int(d) for d in np.asarray(input_sizes).reshape(-1)]
            padded = [d + e for d, e in zip(sizes, grow)]
        hint = None
        if shape_hint is not None and TensorShape(shape_hint).rank == 4:
            hint = TensorShape([d if d is None else d + e for d, e in zip(TensorShape(shape_hint).dims, grow)])
        full = _conv2d_bp_input(padded, filter, dy, strides, "VALID", dilations, None, hint)
        return _lay.crop_spatial(full, pairs, sizes, nm)
    return _lay.in_nhwc(out_backprop, first, name, "Conv2DBackpropInput", body)


def _conv2d_bp_input(sizes: Any, filter: Any, dy: Any, strides: Any, padding: Any, dilations: Any,  # noqa: A002
                     name: Optional[str], shape_hint: Any) -> _g.Tensor:
    attrs = _conv_attrs(strides, padding, dilations)
    attrs["shape_hint"] = shape_hint
    return single("Conv2DBackpropInput", [_sizes(sizes), filter, dy], attrs, name=name or "Conv2DBackpropInput")


def conv2d_backprop_filter(input: Any, filter_sizes: Any, out_backprop: Any, strides: Any, padding: Any,  # noqa: A002
                           data_format: str = "NHWC", dilations: Any = None, name: Optional[str] = None,
                           shape_hint: Any = None) -> _g.Tensor:
    """The gradient of conv2d with respect to its filter (of shape filter_sizes); the arguments
    read as conv2d's (data format, explicit padding)."""
    first = _lay.channels_first(data_format, "conv2d_backprop_filter")
    pairs = _lay.explicit_padding(padding, first, "conv2d_backprop_filter")
    strides, dilations = _lay.nhwc_order(strides, first), _lay.nhwc_order(dilations, first)
    if first:
        x, dy = _lay.to_nhwc(input), _lay.to_nhwc(out_backprop)
    else:
        x, dy = input, out_backprop
    p = padding
    if pairs is not None:
        x, p = _lay.pad_spatial(x, pairs), "VALID"
    attrs = _conv_attrs(strides, p, dilations)
    attrs["shape_hint"] = shape_hint
    return single("Conv2DBackpropFilter", [x, _sizes(filter_sizes), dy], attrs,
                  name=name or "Conv2DBackpropFilter")


def _pool_attrs(ksize: Any, strides: Any, padding: Any) -> dict:
    k, s = _hw(ksize, "ksize"), _hw(strides, "strides")
    if min(k) < 1 or min(s) < 1:
        raise InvalidArgumentError(f"ksize {k} and strides {s} must be positive")
    return {"ksize": k, "strides": s, "padding": _padding(padding)}


def _pool2d(op_type: str, what: str, input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
            data_format: Optional[str], name: Optional[str]) -> _g.Tensor:
    first = _lay.channels_first(data_format, what)
    attrs = _pool_attrs(_lay.nhwc_order(ksize, first), _lay.nhwc_order(strides, first), padding)
    return _lay.in_nhwc(input, first, name, op_type,
                        lambda x, nm: single(op_type, [x], attrs, name=nm or op_type))


def max_pool2d(input: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NHWC",  # noqa: A002
               name: Optional[str] = None) -> _g.Tensor:
    """Max over ksize windows of an NHWC (or NCHW) input (ksize/strides: int, pair or 4 ints in
    the data format's order)."""
    return _pool2d("MaxPool", "max_pool", input, ksize, strides, padding, data_format, name)


def avg_pool2d(input: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NHWC",  # noqa: A002
               name: Optional[str] = None) -> _g.Tensor:
    """Mean over ksize windows; with SAME padding the padded cells are not counted (as TensorFlow)."""
    return _pool2d("AvgPool", "avg_pool", input, ksize, strides, padding, data_format, name)


def max_pool(value: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NHWC",
             name: Optional[str] = None) -> _g.Tensor:
    """TensorFlow 1.x name of max_pool2d."""
    return max_pool2d(value, ksize, strides, padding, data_format, name)


def avg_pool(value: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NHWC",
             name: Optional[str] = None) -> _g.Tensor:
    """TensorFlow 1.x name of avg_pool2d."""
    return avg_pool2d(value, ksize, strides, padding, data_format, name)


# -- constructors: bias, dropout, embeddings, losses, moments ------------------------------


def bias_add(value: Any, bias: Any, data_format: Optional[str] = None, name: Optional[str] = None) -> _g.Tensor:
    """value + bias, bias a 1-D tensor matching value's last dimension (NCHW: its second)."""
    if not _lay.channels_first(data_format, "bias_add"):
        return single("BiasAdd", [value, bias], name=name or "BiasAdd")
    value = _g.convert_to_tensor(value)
    r = value.shape.rank
    if r is None or r < 2:
        raise InvalidArgumentError(f"bias_add: an NCHW value needs a known rank of at least 2, got shape "
                                   f"{value.shape}")
    if r == 2:
        return single("BiasAdd", [value, bias], name=name or "BiasAdd")
    # channels moved last and back: the BiasAdd op (and its gradient) stays channels-last
    return _lay.in_nhwc(value, True, name, "BiasAdd", lambda x, nm: single("BiasAdd", [x, bias], name=nm or "BiasAdd"))


def xw_plus_b(x: Any, weights: Any, biases: Any, name: Optional[str] = None) -> _g.Tensor:
    """matmul(x, weights) + biases."""
    return bias_add(_m.matmul(x, weights), biases, name=name or "xw_plus_b")


def dropout(x: Any, keep_prob: Any = None, noise_shape: Any = None, seed: Optional[int] = None,
            name: Optional[str] = None, rate: Any = None) -> _g.Tensor:
    """Zeroes each element with probability `rate` and scales the rest by 1 / (1 - rate).

    TensorFlow 1.x's signature: the second positional argument is `keep_prob`
    (`dropout(x, 0.9)` keeps 90%); give `keep_prob=` or `rate=` (= 1 - keep_prob, TF 1.13+)
    as a Python number or a scalar tensor (a placeholder lets training and evaluation share
    the graph).
    noise_shape: the shape of the random keep mask, broadcast against x (None entries
    take x's size).  The mask follows the random ops' seeding rules (`seed`, the graph seed).
    """
    if (rate is None) == (keep_prob is None):
        raise InvalidArgumentError("dropout needs exactly one of rate= and keep_prob=")
    x = _g.convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise InvalidArgumentError(f"dropout needs a floating-point x, got {x.dtype.name}")
    if rate is not None and not isinstance(rate, _g.Tensor):
        if not 0 <= float(rate) < 1:
            raise InvalidArgumentError(f"dropout rate must be in [0, 1), got {rate}")
        keep_prob = 1.0 - float(rate)
    elif rate is not None:
        keep_prob = 1.0 - rate
    if not isinstance(keep_prob, _g.Tensor):
        if not 0 < float(keep_prob) <= 1:
            raise InvalidArgumentError(f"dropout keep_prob must be in (0, 1], got {keep_prob}")
        if float(keep_prob) == 1.0:
            return identity(x, name=name or "dropout")
    g = x.graph
    ns = run_time_ns = None
    if noise_shape is not None:
        from .array_util import _int_list, _run_time
        if _run_time(noise_shape):  # [tf.shape(x)[0], 1, d]: the mask's shape is read when it runs, as TF
            run_time_ns = noise_shape
        else:
            if isinstance(noise_shape, _g.Tensor) or _g._holds_tensor(noise_shape):
                noise_shape = _int_list(noise_shape, "dropout noise_shape")
            ns = tuple(None if d is None or int(d) < 0 else int(d) for d in noise_shape)
    with g.as_default(), g.name_scope(name or "dropout"):
        kp = keep_prob if isinstance(keep_prob, _g.Tensor) else constant(keep_prob, dtype=x.dtype, name="keep_prob")
        if kp.dtype != x.dtype:
            kp = _m.cast(kp, x.dtype)
        s1, s2 = get_seed(seed, g)
        # a run-time noise_shape: the mask is drawn in the shape of a zeros tensor of that shape
        src = x
        if run_time_ns is not None:
            if not isinstance(run_time_ns, _g.Tensor):
                run_time_ns = _g.convert_to_tensor(run_time_ns, dtype=_dt.int32)
            src = _a.zeros(run_time_ns, x.dtype)
        mask = single("DropoutMask", [src, kp], {"seed": s1, "seed2": s2, "noise_shape": ns}, name="mask")
        return _m.multiply(x, mask, name="dropout")


def embedding_lookup(params: Any, ids: Any, partition_strategy: str = "mod", name: Optional[str] = None,
                     validate_indices: bool = True, max_norm: Any = None) -> _g.Tensor:
    """Rows of `params` at `ids` (shape ids.shape + params.shape[1:]).

    params: a tensor or Variable, or a list of them sharding the table by rows ("mod":
    id i lives in shard i % n at row i // n; "div": contiguous ranges, static sizes).
    The gradient to each table is IndexedSlices (only the looked-up rows).
    """
    lookup = getattr(params, "_embedding_lookup", None)
    if lookup is not None:  # a sharded (parameter-server) variable routes ids to its owners
        return lookup(ids, name=name)
    if max_norm is not None:
        # as TF: each looked-up embedding (the dimensions after the ids') clipped to L2 norm max_norm
        from .clip_ops import clip_by_norm
        out = embedding_lookup(params, ids, partition_strategy, name, validate_indices)
        ids_rank = _g.convert_to_tensor(ids).shape.rank
        if ids_rank is None or out.shape.rank is None:
            raise InvalidArgumentError("embedding_lookup with max_norm needs ids and params of known rank")
        return clip_by_norm(out, max_norm, axes=list(range(ids_rank, out.shape.rank)))
    shards = list(params) if isinstance(params, (list, tuple)) else [params]
    if not shards:
        raise InvalidArgumentError("embedding_lookup needs at least one params tensor")
    if len(shards) == 1:
        return _a.gather(shards[0], ids, name=name or "embedding_lookup")
    if partition_strategy not in ("mod", "div"):
        raise InvalidArgumentError(f"partition_strategy must be 'mod' or 'div', got {partition_strategy!r}")
    tensors = [_g.convert_to_tensor(p) for p in shards]
    g = tensors[0].graph
    n = len(tensors)
    with g.as_default(), g.name_scope(name or "embedding_lookup"):
        ids = _g.convert_to_tensor(ids)
        if not ids.dtype.is_integer:
            raise InvalidArgumentError(f"embedding_lookup ids must be integers, got {ids.dtype.name}")
        if ids.shape.rank is None:
            raise InvalidArgumentError("embedding_lookup over several shards needs ids of known rank")
        if partition_strategy == "mod":
            owner = _m.mod(ids, constant(n, dtype=ids.dtype))
            local = _m.floordiv(ids, constant(n, dtype=ids.dtype))
        else:
            sizes = [t.shape.dims[0] if t.shape.rank else None for t in tensors]
            if any(s is None for s in sizes):
                raise InvalidArgumentError("embedding_lookup with partition_strategy='div' needs shards of "
                                           f"static sizes, got {[str(t.shape) for t in tensors]}")
            starts = np.concatenate([[0], np.cumsum(sizes)]).astype(ids.dtype.np)
            owner = None
            local = None
        out = None
        zero = constant(0, dtype=ids.dtype)
        for p, t in enumerate(tensors):
            if partition_strategy == "mod":
                mine = _m.equal(owner, constant(p, dtype=ids.dtype))
                rows_at = local
            else:
                lo = constant(starts[p], dtype=ids.dtype)
                hi = constant(starts[p + 1], dtype=ids.dtype)
                mine = _m.logical_and(_m.greater_equal(ids, lo), _m.less(ids, hi))
                rows_at = ids - lo
            # ids another shard owns read row 0 here and are masked out below
            rows = _a.gather(t, _a.where(mine, rows_at, zero))
            extra = t.shape.rank - 1 if t.shape.rank is not None else None
            if extra is None:
                raise InvalidArgumentError("embedding_lookup shards need a known rank")
            cond = _a.expand_reduced(mine, rows, list(range(ids.shape.rank, ids.shape.rank + extra))) if extra else mine
            part = _a.where(cond, rows, _a.zeros_like(rows))
            out = part if out is None else out + part
        return out


def l2_loss(t: Any, name: Optional[str] = None) -> _g.Tensor:
    """sum(t ** 2) / 2 as a scalar."""
    return single("L2Loss", [t], name=name or "L2Loss")


def moments(x: Any, axes: Any, shift: Any = None, name: Optional[str] = None, keep_dims: Optional[bool] = None,
            keepdims: bool = False) -> Tuple[_g.Tensor, _g.Tensor]:
    """(mean, variance) of x over `axes` (population variance, as TensorFlow).

    Built as TF1 builds it, so the outputs have TF1's names (moments/Squeeze and
    moments/Squeeze_1; moments/mean and moments/variance with keep_dims), which name the
    shadow variables of an ExponentialMovingAverage of them; float16 is reduced in float32."""
    if keep_dims is not None:
        keepdims = keep_dims
    x = _g.convert_to_tensor(x)
    axes = [int(a) for a in ([axes] if isinstance(axes, (int, np.integer)) else axes)]
    g = x.graph
    with g.as_default(), g.name_scope(name or "moments"):
        y = _m.cast(x, _dt.float32) if x.dtype == _dt.float16 else x
        mean = _m.reduce_mean(y, axes, keepdims=True, name="mean")
        # the mean's own gradient term is zero (deviations sum to 0), so stop it: cheaper
        var = _m.reduce_mean(_m.squared_difference(y, stop_gradient(mean)), axes, keepdims=True, name="variance")
        if not keepdims:
            mean, var = _a.squeeze(mean, axes), _a.squeeze(var, axes)
        if x.dtype == _dt.float16:
            mean, var = _m.cast(mean, _dt.float16), _m.cast(var, _dt.float16)
        return mean, var


# gradients: one table for the family
from .. import nn_grad  # noqa: E402,F401
