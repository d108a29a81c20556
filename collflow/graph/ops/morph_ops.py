"""tf.nn.dilation2d / erosion2d (grayscale morphology, TF1's argument names, with TF's
gradients: each output's gradient goes to the input element and filter tap that attained the
maximum, the first in row-major tap order on ties) and tf.nn.conv3d_backprop_filter(_v2)
(the filter gradient of conv3d given out_backprop, built from conv3d's own im2col so that it is
differentiable).  Kernels in kernels/morph_kernels.py.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from . import layout_ops as _lay
from . import math_ops as _m
from .conv3d_ops import _check_format, _five, _geometry, _taps, _volume
from .op_util import dense as _dense, single
from .reverse_ops import reverse

__all__ = ["dilation2d", "erosion2d", "conv3d_backprop_filter", "conv3d_backprop_filter_v2"]


def _four(v: Any, what: str) -> List[int]:
    v = [int(a) for a in v]
    if len(v) != 4 or v[0] != 1 or v[3] != 1:
        raise ValueError(f"dilation2d: {what} must be [1, h, w, 1], got {v}")
    return v[1:3]


def _dilation_geometry(op: _g.Operation) -> Any:
    x, f = op.inputs[0], op.inputs[1]
    if x.shape.rank != 4 or f.shape.rank != 3:
        raise ValueError(f"dilation2d needs an NHWC input and an [h, w, c] filter, got {x.shape} and {f.shape}")
    if any(d is None for d in x.shape.dims[1:3]) or not f.shape.is_fully_defined():
        raise ValueError("dilation2d: the spatial sizes and the filter must be known when the graph is built")
    if x.shape.dims[3] is not None and x.shape.dims[3] != f.shape.dims[2]:
        raise ValueError(f"dilation2d: input depth {x.shape.dims[3]} and filter depth {f.shape.dims[2]} differ")
    try:
        outs, pads = _geometry(x.shape.dims[1:3], f.shape.dims[0:2], op.attrs["strides"], op.attrs["rates"],
                               op.attrs["padding"], "dilation2d")
    except InvalidArgumentError as e:
        raise ValueError(str(e)) from None
    return outs, pads


def _dilation_spec(op: _g.Operation) -> list:
    x, f = op.inputs[0], op.inputs[1]
    outs, _ = _dilation_geometry(op)
    return [(x.dtype, TensorShape([x.shape.dims[0]] + outs + [f.shape.dims[2]]))]


register_op("Dilation2D", _dilation_spec, host_only=True)
register_op("Dilation2DBackpropInput", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], host_only=True)
register_op("Dilation2DBackpropFilter", lambda op: [(op.inputs[1].dtype, op.inputs[1].shape)], host_only=True)
# the backprops have no gradient registered (a second derivative raises LookupError, as TF)


@register_gradient("Dilation2D")
def _dilation_grad(op: _g.Operation, grad: _g.Tensor) -> list:
    x, f = op.inputs
    g = _dense(grad)
    attrs = {k: op.attrs[k] for k in ("strides", "rates", "padding")}
    return [single("Dilation2DBackpropInput", [x, f, g], attrs),
            single("Dilation2DBackpropFilter", [x, f, g], attrs)]


def dilation2d(input: Any = None, filter: Any = None, strides: Any = None, rates: Any = None,  # noqa: A002
               padding: Any = None, name: Optional[str] = None, filters: Any = None,
               dilations: Any = None) -> _g.Tensor:
    """out[b, y, x, c] = max over taps (i, j) of input[b, y sy + i ry, x sx + j rx, c] + filter[i, j, c]
    (positions in the padding do not take part).  input NHWC, filter [h, w, c], strides and
    rates [1, h, w, 1], padding "SAME" or "VALID"."""
    if filter is None:
        filter = filters   # noqa: A001
    if rates is None:
        rates = dilations
    if filter is None or strides is None or rates is None or padding is None:
        raise ValueError("dilation2d needs filter, strides, rates and padding")
    x = _g.convert_to_tensor(input)
    with x.graph.as_default():
        f = _g.convert_to_tensor(filter, dtype=x.dtype)
        if not x.dtype.is_floating:
            raise TypeError(f"dilation2d needs a floating-point input, got {x.dtype.name}")
        attrs = {"strides": _four(strides, "strides"), "rates": _four(rates, "rates"),
                 "padding": str(padding).upper()}
        return single("Dilation2D", [x, f], attrs, name=name or "dilation2d")


def erosion2d(value: Any, kernel: Any, strides: Any, rates: Any, padding: Any,
              name: Optional[str] = None) -> _g.Tensor:
    """out[b, y, x, c] = min over taps of value[b, y sy - i ry, x sx - j rx, c] - kernel[i, j, c]:
    -dilation2d(-value, kernel reversed in both spatial axes)."""
    x = _g.convert_to_tensor(value)
    with x.graph.as_default(), x.graph.name_scope(name or "erosion2d"):
        k = _g.convert_to_tensor(kernel, dtype=x.dtype)
        return _m.negative(dilation2d(_m.negative(x), reverse(k, [0, 1]), strides, rates, padding))


def conv3d_backprop_filter_v2(input: Any, filter_sizes: Any, out_backprop: Any, strides: Sequence[int],  # noqa: A002
                              padding: str, data_format: str = "NDHWC", dilations: Sequence[int] = (1, 1, 1, 1, 1),
                              name: Optional[str] = None) -> _g.Tensor:
    """The gradient of conv3d(input, filter) w.r.t. a filter of shape `filter_sizes` (known when
    the graph is built) given `out_backprop`: the im2col columns' transpose times out_backprop.
    NCDHW: input and out_backprop moved channels-last first (strides, dilations in its order)."""
    if data_format == "NCDHW":
        return conv3d_backprop_filter_v2(_lay.to_nhwc(input), filter_sizes, _lay.to_nhwc(out_backprop),
                                         _lay.nhwc_order(strides, True, 5), padding, "NDHWC",
                                         _lay.nhwc_order(dilations, True, 5), name)
    _check_format(data_format, "conv3d_backprop_filter")
    x = _g.convert_to_tensor(input)
    with x.graph.as_default(), x.graph.name_scope(name or "Conv3DBackpropFilterV2"):
        fs = filter_sizes
        if isinstance(fs, _g.Tensor):
            if fs.op.type != "Const":
                raise InvalidArgumentError("conv3d_backprop_filter: filter_sizes must be known when the graph is built")
            fs = np.asarray(fs.op.attrs["value"])
        fs = [int(v) for v in np.asarray(fs).reshape(-1)]
        if len(fs) != 5:
            raise ValueError(f"conv3d_backprop_filter: filter_sizes must have 5 elements, got {fs}")
        kd, kh, kw, cin, cout = fs
        dy = _g.convert_to_tensor(out_backprop, dtype=x.dtype)
        sizes = _volume(x, "conv3d_backprop_filter")
        st, rt = _five(strides, "strides", "conv3d_backprop_filter"), _five(dilations, "dilations",
                                                                            "conv3d_backprop_filter")
        outs, pads = _geometry(sizes, (kd, kh, kw), st, rt, padding, "conv3d_backprop_filter")
        if dy.shape.rank is not None and dy.shape.is_fully_defined() and \
                dy.shape.as_list()[1:] != outs + [cout]:
            raise ValueError(f"conv3d_backprop_filter: out_backprop has shape {dy.shape}, the convolution's output "
                             f"is [?, {', '.join(map(str, outs))}, {cout}]")
        taps = _taps(x, (kd, kh, kw), st, rt, outs, pads, 0.0)
        cols = _a.reshape(_a.stack(taps, axis=4), [-1, kd * kh * kw * cin])
        dw = _m.matmul(cols, _a.reshape(dy, [-1, cout]), transpose_a=True)
        return _a.reshape(dw, fs)


conv3d_backprop_filter = conv3d_backprop_filter_v2
