"""More of TF1's tf.nn: conv1d_transpose (conv2d_transpose over a height of one),
batch_norm_with_global_normalization (the old batch-norm signature) and
max_pool_with_argmax (the max and where it was, SegNet-style unpooling; its gradient routes
to those positions)."""
from __future__ import annotations

from typing import Any, Optional, Tuple

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from . import layout_ops as _lay
from . import math_ops as _m
from .nn_extra_ops import conv2d_transpose, _one
from .op_util import make_op

__all__ = ["conv1d_transpose", "batch_norm_with_global_normalization", "max_pool_with_argmax"]


def conv1d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002 - TF's names
                     padding: str = "SAME", data_format: str = "NWC", dilations: Any = None,
                     name: Optional[str] = None) -> _g.Tensor:
    """The transpose of conv1d: input [batch, width, in], filters [width, out, in],
    output_shape [batch, out_width, out] (tf.nn.conv1d_transpose); NCW: channels second
    (output_shape and strides in its order), as NWC between transposes."""
    if data_format not in ("NWC", "NCW", None):
        raise InvalidArgumentError(f"conv1d_transpose: data_format must be 'NWC' or 'NCW', got {data_format!r}")
    if data_format == "NCW":
        shape = _lay.nhwc_sizes(output_shape, 3)
        return _lay.in_nhwc(input, True, name, "conv1d_transpose", lambda x, nm: conv1d_transpose(
            x, filters, shape, _lay.nhwc_order(strides, True, 3), padding, "NWC", _lay.nhwc_order(dilations, True, 3),
            nm))
    s = _one(strides, "strides")
    x = _g.convert_to_tensor(input)
    f = _g.convert_to_tensor(filters, dtype=x.dtype)
    with x.graph.as_default(), x.graph.name_scope(name or "conv1d_transpose"):
        if isinstance(output_shape, _g.Tensor):
            shape4 = _a.concat([output_shape[:1], _g.convert_to_tensor([1], dtype=output_shape.dtype),
                                output_shape[1:]], 0)
        else:
            o = [int(v) for v in output_shape]
            if len(o) != 3:
                raise InvalidArgumentError(f"conv1d_transpose: output_shape must have 3 entries, got {o}")
            shape4 = [o[0], 1, o[1], o[2]]
        y = conv2d_transpose(_a.expand_dims(x, 1), _a.expand_dims(f, 0), shape4, strides=[1, 1, s, 1],
                             padding=padding, dilations=None if dilations is None else [1, 1, _one(dilations, "dilations"), 1])
        return _a.squeeze(y, [1])


def batch_norm_with_global_normalization(t: Any = None, m: Any = None, v: Any = None, beta: Any = None,
                                         gamma: Any = None, variance_epsilon: Any = None,
                                         scale_after_normalization: Any = None, name: Optional[str] = None,
                                         input: Any = None, mean: Any = None,  # noqa: A002 - TF's names
                                         variance: Any = None) -> _g.Tensor:
    """(t - m) / sqrt(v + eps) * gamma (if scale_after_normalization) + beta: TF1's old
    batch-norm op over the last dimension."""
    t = input if t is None else t
    m = mean if m is None else m
    v = variance if v is None else v
    if any(a is None for a in (t, m, v, beta, gamma, variance_epsilon, scale_after_normalization)):
        raise TypeError("batch_norm_with_global_normalization needs t, m, v, beta, gamma, variance_epsilon and "
                        "scale_after_normalization")
    x = _g.convert_to_tensor(t)
    with x.graph.as_default(), x.graph.name_scope(name or "batchnorm"):
        inv = _m.rsqrt(_m.add(_g.convert_to_tensor(v, dtype=x.dtype), variance_epsilon))
        if scale_after_normalization:
            inv = inv * _g.convert_to_tensor(gamma, dtype=x.dtype)
        return x * inv + (_g.convert_to_tensor(beta, dtype=x.dtype) - _g.convert_to_tensor(m, dtype=x.dtype) * inv)


def _argmax_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    a = op.attrs
    if x.shape.rank not in (None, 4):
        raise ValueError(f"max_pool_with_argmax needs an NHWC input, got shape {x.shape}")
    dims = x.shape.dims if x.shape.rank == 4 else [None] * 4
    out = [dims[0]]
    for size, k, s in zip(dims[1:3], a["ksize"], a["strides"]):
        if size is None:
            out.append(None)
        elif a["padding"] == "SAME":
            out.append(-(-size // s))
        else:
            out.append((size - k) // s + 1)
    out.append(dims[3])
    return [(x.dtype, TensorShape(out)), (a["Targmax"], TensorShape(out))]


register_op("MaxPoolWithArgmax", _argmax_spec, doc="max pooling with the flat index of each maximum")


def _quad(v: Any, what: str) -> Tuple[int, int]:
    v = [int(a) for a in ([v] * 4 if isinstance(v, int) else v)]
    if len(v) == 2:
        return v[0], v[1]
    if len(v) != 4 or v[0] != 1 or v[3] != 1:
        raise InvalidArgumentError(f"max_pool_with_argmax: {what} must be [1, h, w, 1], got {v}")
    return v[1], v[2]


def max_pool_with_argmax(input: Any, ksize: Any, strides: Any, padding: str,  # noqa: A002 - TF's names
                         data_format: str = "NHWC", Targmax: Any = None, name: Optional[str] = None,  # noqa: N803
                         output_dtype: Any = None, include_batch_in_index: bool = False) -> Tuple[_g.Tensor, _g.Tensor]:
    """(max_pool(input), argmax): each maximum's flat position, ((b * height + y) * width + x)
    * channels + c with include_batch_in_index, else without the b term (TF's layout); the
    first maximum of a window in row-major order, padding never chosen."""
    if data_format != "NHWC":
        raise InvalidArgumentError(f"max_pool_with_argmax supports NHWC only, got {data_format!r}")
    pad = padding.upper()
    if pad not in ("SAME", "VALID"):
        raise InvalidArgumentError(f"max_pool_with_argmax: padding must be SAME or VALID, got {padding!r}")
    targ = _dt.as_dtype(Targmax if Targmax is not None else (output_dtype or _dt.int64))
    if targ not in (_dt.int32, _dt.int64):
        raise TypeError(f"max_pool_with_argmax: Targmax must be int32 or int64, got {targ.name}")
    x = _g.convert_to_tensor(input)
    op = make_op("MaxPoolWithArgmax", [x], {"ksize": _quad(ksize, "ksize"), "strides": _quad(strides, "strides"),
                                            "padding": pad, "Targmax": targ,
                                            "include_batch_in_index": bool(include_batch_in_index)},
                 name=name or "MaxPoolWithArgmax")
    return op.outputs[0], op.outputs[1]


@register_gradient("MaxPoolWithArgmax")
def _max_pool_with_argmax_grad(op: _g.Operation, grad: Any, _grad_argmax: Any) -> list:
    # each output's gradient goes to the input cell its argmax names (summed where windows share one)
    x = op.inputs[0]
    idx = _m.cast(op.outputs[1], _dt.int64)
    if not op.attrs["include_batch_in_index"]:
        shape = _a.shape(x, out_type=_dt.int64)
        per_image = shape[1] * shape[2] * shape[3]
        from .misc_ops import range as _range
        batch = _a.reshape(_range(shape[0]), [-1, 1, 1, 1]) * per_image
        idx = idx + batch
    from .segment_ops import unsorted_segment_sum
    flat = unsorted_segment_sum(_a.reshape(grad, [-1]), _a.reshape(idx, [-1]), _a.size(x, out_type=_dt.int64))
    return [_a.reshape(flat, _a.shape(x))]
