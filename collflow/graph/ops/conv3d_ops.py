"""3-D convolution and pooling (tf.nn.conv3d, max_pool3d, avg_pool3d) on NDHWC volumes.  conv3d
and avg_pool3d are im2col in the graph: one strided slice per kernel tap, stacked and multiplied
by the filter as one matrix product (the average pool sums the taps instead).  max_pool3d is
TF's MaxPool3D op with its own kernels (kernels/pool3d_kernels.py), to keep TF's rules for
NaN, infinities and ties, which a chain of maximum ops does not.  conv3d's and avg_pool3d's
gradients come from the parts (the slices' scatter back, the product's two GEMMs), so they are
exact by construction.

For conv3d and avg_pool3d, spatial sizes, kernel sizes, strides and dilations must be known
when the graph is built; the batch may be unknown (max_pool3d takes any size at run time).
TF's padding: VALID, or SAME with the odd pixel at the end; the average pool divides by the
number of real (unpadded) voxels in each window, as TF.
"""
from __future__ import annotations

import itertools
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ...errors import InvalidArgumentError
from .. import graph as _g
from . import array_ops as _a
from . import layout_ops as _lay
from . import math_ops as _m
from ..registry import register_gradient, register_op
from ..shape import TensorShape
from .constant_op import constant
from .op_util import single

__all__ = ["conv3d", "max_pool3d", "avg_pool3d", "conv3d_transpose"]


def _five(v: Any, what: str, fn: str) -> List[int]:
    v = [int(a) for a in ([v] * 5 if isinstance(v, int) else v)]
    if len(v) == 3:
        v = [1] + v + [1]
    if len(v) != 5 or v[0] != 1 or v[4] != 1:
        raise InvalidArgumentError(f"{fn}: {what} must be [1, d, h, w, 1], got {v}")
    return v[1:4]


def _geometry(sizes: Sequence[int], ks: Sequence[int], strides: Sequence[int], rates: Sequence[int],
              padding: str, fn: str) -> Tuple[List[int], List[Tuple[int, int]]]:
    """(output sizes, (before, after) padding) per spatial dimension, TF's rule."""
    padding = padding.upper()
    if padding not in ("VALID", "SAME"):
        raise InvalidArgumentError(f"{fn}: padding must be VALID or SAME, got {padding!r}")
    outs, pads = [], []
    for n, k, s, r in zip(sizes, ks, strides, rates):
        ek = (k - 1) * r + 1
        if padding == "VALID":
            o = (n - ek) // s + 1
            p = (0, 0)
        else:
            o = -(-n // s)
            total = max((o - 1) * s + ek - n, 0)
            p = (total // 2, total - total // 2)
        if o <= 0:
            raise InvalidArgumentError(f"{fn}: a window of {k} (dilation {r}) does not fit a dimension of {n} with "
                                       "VALID padding")
        outs.append(o)
        pads.append(p)
    return outs, pads


def _volume(x: _g.Tensor, fn: str) -> List[int]:
    if x.shape.rank != 5:
        raise InvalidArgumentError(f"{fn} needs an NDHWC input of rank 5, got shape {x.shape}")
    dims = x.shape.dims[1:4]
    if any(d is None for d in dims):
        raise InvalidArgumentError(f"{fn}: the depth, height and width must be known when the graph is built, got "
                                   f"{x.shape}")
    return [int(d) for d in dims]


def _taps(x: _g.Tensor, ks: Sequence[int], strides: Sequence[int], rates: Sequence[int], outs: Sequence[int],
          pads: Sequence[Tuple[int, int]], pad_value: float) -> List[_g.Tensor]:
    """One [n, od, oh, ow, c] strided slice per kernel tap, taps in row-major (d, h, w) order."""
    if any(p != (0, 0) for p in pads):
        x = _a.pad(x, [[0, 0]] + [list(p) for p in pads] + [[0, 0]], constant_values=pad_value)
    taps = []
    for idx in itertools.product(*[range(k) for k in ks]):
        key = [slice(None)]
        for i, s, r, o in zip(idx, strides, rates, outs):
            key.append(slice(i * r, i * r + (o - 1) * s + 1, s))
        taps.append(x[tuple(key + [slice(None)])])
    return taps


def _check_format(data_format: str, fn: str) -> None:
    if data_format != "NDHWC":
        raise InvalidArgumentError(f"{fn}: data_format must be 'NDHWC' or 'NCDHW', got {data_format!r}")


def conv3d(input: Any, filter: Any, strides: Sequence[int], padding: str, data_format: str = "NDHWC",  # noqa: A002
           dilations: Sequence[int] = (1, 1, 1, 1, 1), name: Optional[str] = None) -> _g.Tensor:
    """[n, d, h, w, in] * filter [kd, kh, kw, in, out] -> [n, od, oh, ow, out] (NCDHW: channels
    second, strides and dilations in its order; run as NDHWC between transposes)."""
    if data_format == "NCDHW":
        return _lay.in_nhwc(input, True, name, "Conv3D", lambda x, nm: conv3d(
            x, filter, _lay.nhwc_order(strides, True, 5), padding, "NDHWC", _lay.nhwc_order(dilations, True, 5), nm))
    _check_format(data_format, "conv3d")
    x = _g.convert_to_tensor(input)
    w = _g.convert_to_tensor(filter)
    sizes = _volume(x, "conv3d")
    if w.shape.rank != 5 or not w.shape.is_fully_defined():
        raise InvalidArgumentError(f"conv3d: filter must be a fully known [kd, kh, kw, in, out], got {w.shape}")
    kd, kh, kw, cin, cout = w.shape.as_list()
    if x.shape.dims[4] is not None and x.shape.dims[4] != cin:
        raise InvalidArgumentError(f"conv3d: the input has {x.shape.dims[4]} channels, the filter {cin}")
    st, rt = _five(strides, "strides", "conv3d"), _five(dilations, "dilations", "conv3d")
    outs, pads = _geometry(sizes, (kd, kh, kw), st, rt, padding, "conv3d")
    with x.graph.as_default(), x.graph.name_scope(name or "Conv3D"):
        taps = _taps(x, (kd, kh, kw), st, rt, outs, pads, 0.0)
        cols = _a.reshape(_a.stack(taps, axis=4), [-1, kd * kh * kw * cin])  # im2col: [n * voxels, taps * in]
        y = _m.matmul(cols, _a.reshape(w, [kd * kh * kw * cin, cout]))
        return _a.reshape(y, [-1] + outs + [cout])


def _pool_args(input: Any, ksize: Any, strides: Any, padding: str, data_format: str, fn: str) -> Any:
    _check_format(data_format, fn)
    x = _g.convert_to_tensor(input)
    sizes = _volume(x, fn)
    ks, st = _five(ksize, "ksize", fn), _five(strides, "strides", fn)
    outs, pads = _geometry(sizes, ks, st, (1, 1, 1), padding, fn)
    return x, sizes, ks, st, outs, pads


def _max_pool3d_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise InvalidArgumentError(f"max_pool3d needs a real-number input, got {x.dtype.name}")
    if x.shape.rank is not None and x.shape.rank != 5:
        raise InvalidArgumentError(f"max_pool3d needs an NDHWC input of rank 5, got shape {x.shape}")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape([None] * 5))]
    dims = x.shape.dims
    outs: List[Optional[int]] = [None] * 3
    if all(d is not None for d in dims[1:4]):
        outs = list(_geometry([int(d) for d in dims[1:4]], op.attrs["ksize"], op.attrs["strides"], (1, 1, 1),
                              op.attrs["padding"], "max_pool3d")[0])
    return [(x.dtype, TensorShape([dims[0]] + outs + [dims[4]]))]


# TF's op types and inputs: MaxPool3DGrad(orig_input, orig_output, grad) is shaped as orig_input,
# MaxPool3DGradGrad(orig_input, orig_output, grad of MaxPool3DGrad's output) as orig_output
register_op("MaxPool3D", _max_pool3d_spec)
register_op("MaxPool3DGrad", lambda op: [(op.inputs[2].dtype, op.inputs[0].shape)])
register_op("MaxPool3DGradGrad", lambda op: [(op.inputs[2].dtype, op.inputs[1].shape)])


def _pool3d_attrs(op: _g.Operation) -> dict:
    return {k: op.attrs[k] for k in ("ksize", "strides", "padding")}


@register_gradient("MaxPool3D")
def _max_pool3d_grad(op: _g.Operation, g: Any) -> list:
    return [single("MaxPool3DGrad", [op.inputs[0], op.outputs[0], g], _pool3d_attrs(op))]


# both are linear in their gradient input, and the window maxima stay put for small changes
# of x: zeros for orig_input and orig_output, as TF1
@register_gradient("MaxPool3DGrad")
def _max_pool3d_grad_grad(op: _g.Operation, gg: Any) -> list:
    x, y = op.inputs[0], op.inputs[1]
    return [_a.zeros_like(x), _a.zeros_like(y), single("MaxPool3DGradGrad", [x, y, gg], _pool3d_attrs(op))]


@register_gradient("MaxPool3DGradGrad")
def _max_pool3d_grad_grad_grad(op: _g.Operation, g: Any) -> list:
    x, y = op.inputs[0], op.inputs[1]
    return [_a.zeros_like(x), _a.zeros_like(y), single("MaxPool3DGrad", [x, y, g], _pool3d_attrs(op))]


def max_pool3d(input: Any, ksize: Any, strides: Any, padding: str, data_format: str = "NDHWC",  # noqa: A002
               name: Optional[str] = None) -> _g.Tensor:
    """The maximum of each ksize window of an NDHWC volume, stepping `strides`, by TF's CPU
    rules for NaN, infinities and ties (kernels/pool3d_kernels.py).  NCDHW: as NDHWC between transposes."""
    if data_format == "NCDHW":
        return _lay.in_nhwc(input, True, name, "MaxPool3D", lambda x, nm: max_pool3d(
            x, _lay.nhwc_order(ksize, True, 5), _lay.nhwc_order(strides, True, 5), padding, "NDHWC", nm))
    _check_format(data_format, "max_pool3d")
    padding = str(padding).upper()
    if padding not in ("VALID", "SAME"):
        raise InvalidArgumentError(f"max_pool3d: padding must be VALID or SAME, got {padding!r}")
    attrs = {"ksize": _five(ksize, "ksize", "max_pool3d"), "strides": _five(strides, "strides", "max_pool3d"),
             "padding": padding}
    if min(attrs["ksize"]) < 1 or min(attrs["strides"]) < 1:
        raise InvalidArgumentError(f"max_pool3d: ksize {attrs['ksize']} and strides {attrs['strides']} must be "
                                   "positive")
    return single("MaxPool3D", [input], attrs, name=name or "MaxPool3D")


def avg_pool3d(input: Any, ksize: Any, strides: Any, padding: str, data_format: str = "NDHWC",  # noqa: A002
               name: Optional[str] = None) -> _g.Tensor:
    """The mean of each ksize window of an NDHWC volume (padding not counted), stepping `strides`.
    NCDHW: as NDHWC between transposes."""
    if data_format == "NCDHW":
        return _lay.in_nhwc(input, True, name, "AvgPool3D", lambda x, nm: avg_pool3d(
            x, _lay.nhwc_order(ksize, True, 5), _lay.nhwc_order(strides, True, 5), padding, "NDHWC", nm))
    x, sizes, ks, st, outs, pads = _pool_args(input, ksize, strides, padding, data_format, "avg_pool3d")
    # each window's count of real voxels, known now (a constant of the output's spatial shape)
    ones = np.pad(np.ones(sizes), [list(p) for p in pads])
    count = np.zeros(outs)
    for idx in itertools.product(*[range(k) for k in ks]):
        count += ones[tuple(slice(i, i + (o - 1) * s + 1, s) for i, s, o in zip(idx, st, outs))]
    with x.graph.as_default(), x.graph.name_scope(name or "AvgPool3D"):
        total = _m.add_n(_taps(x, ks, st, (1, 1, 1), outs, pads, 0.0))
        return total / constant(count.reshape([1] + outs + [1]), dtype=x.dtype)


def conv3d_transpose(value: Any = None, filter: Any = None, output_shape: Any = None,  # noqa: A002 - TF names
                     strides: Any = None, padding: str = "SAME", data_format: str = "NDHWC",
                     name: Optional[str] = None, input: Any = None, filters: Any = None,  # noqa: A002
                     dilations: Any = None) -> _g.Tensor:
    """The transpose of conv3d (its gradient with respect to its input): value [n, d, h, w, in]
    and filter [kd, kh, kw, out, in] -> output_shape [n, D, H, W, out], which conv3d with the
    same strides and padding maps back to value's size.  Built as conv3d's own backward pass,
    so its gradients are those of the parts."""
    from ..gradients import gradients
    value = input if value is None else value
    filter = filters if filter is None else filter
    if data_format == "NCDHW" and value is not None and output_shape is not None:
        shape = _lay.nhwc_sizes(output_shape, 5)
        return _lay.in_nhwc(value, True, name, "conv3d_transpose", lambda x, nm: conv3d_transpose(
            x, filter, shape, _lay.nhwc_order(strides, True, 5), padding, "NDHWC", nm,
            dilations=_lay.nhwc_order(dilations, True, 5)))
    _check_format(data_format, "conv3d_transpose")
    if value is None or filter is None or output_shape is None or strides is None:
        raise InvalidArgumentError("conv3d_transpose needs value, filter, output_shape and strides")
    x = _g.convert_to_tensor(value)
    w = _g.convert_to_tensor(filter, dtype=x.dtype)
    if w.shape.rank != 5 or not w.shape.is_fully_defined():
        raise InvalidArgumentError(f"conv3d_transpose: filter must be a fully known [kd, kh, kw, out, in], got "
                                   f"{w.shape}")
    kd, kh, kw, cout, cin = w.shape.as_list()
    if x.shape.rank != 5 or (x.shape.dims[4] is not None and x.shape.dims[4] != cin):
        raise InvalidArgumentError(f"conv3d_transpose: value must be [n, d, h, w, {cin}] for filter {w.shape}, got "
                                   f"{x.shape}")
    from .misc_more_ops import get_static_value
    shape = get_static_value(output_shape) if isinstance(output_shape, _g.Tensor) else np.asarray(output_shape)
    if shape is None or shape.size != 5:
        raise InvalidArgumentError("conv3d_transpose: output_shape must be 5 numbers known when the graph is built "
                                   f"(the batch may be -1 or a tensor's), got {output_shape!r}")
    spatial = [int(d) for d in shape.reshape(-1)[1:4]]
    if int(shape.reshape(-1)[4]) != cout:
        raise InvalidArgumentError(f"conv3d_transpose: output_shape has {int(shape.reshape(-1)[4])} channels, the "
                                   f"filter {cout}")
    st = _five(strides, "strides", "conv3d_transpose")
    rt = _five(dilations if dilations is not None else (1, 1, 1, 1, 1), "dilations", "conv3d_transpose")
    outs, _ = _geometry(spatial, (kd, kh, kw), st, rt, padding, "conv3d_transpose")
    if list(x.shape.dims[1:4]) != outs and all(d is not None for d in x.shape.dims[1:4]):
        raise InvalidArgumentError(f"conv3d_transpose: value's spatial size {x.shape.dims[1:4]} is not what conv3d "
                                   f"maps output_shape {spatial} to ({outs})")
    with x.graph.as_default(), x.graph.name_scope(name or "conv3d_transpose"):
        # a stand-in input of output_shape: only its shape is read by conv3d's backward pass
        batch = _a.shape(x)[:1]
        probe = _a.zeros(_a.concat([batch, constant(spatial + [cout], dtype=batch.dtype)], 0), dtype=x.dtype)
        probe.set_shape([x.shape.dims[0]] + spatial + [cout])
        # the filter [.., out, in] is conv3d's [.., in, out] for probe -> value
        y = conv3d(probe, w, [1] + st + [1], padding, dilations=[1] + rt + [1])
        return gradients(y, probe, grad_ys=x)[0]
