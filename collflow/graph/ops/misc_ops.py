"""Ops TensorFlow 1.x programs take for granted: tf.range, the tf.to_* casts, tf.nn.top_k and
tf.nn.in_top_k.

Range, TopKV2 and InTopKV2 are registered here with their shape functions; TopKV2's gradient
(the values' gradient scattered back to the positions they came from) is next to it; kernels
live in kernels/misc_kernels.py.
"""
from __future__ import annotations

import collections
from typing import Any, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..indexed_slices import IndexedSlices, convert_to_dense
from ..registry import register_op, register_gradient, not_differentiable
from ..shape import TensorShape
from . import array_ops as _a
from . import math_ops as _m
from .constant_op import constant, _to_array
from .op_util import make_op, single

# `range` is public too, but imported by name (last) in collflow/__init__.py: it shadows the builtin
__all__ = ["to_float", "to_double", "to_int32", "to_int64", "top_k", "in_top_k"]

_RANGE_DTYPES = (_dt.int32, _dt.int64, _dt.float32, _dt.float64)  # TensorFlow's widening order


def _const_scalar(t: _g.Tensor) -> Optional[Any]:
    if t.op.type == "Const":
        v = np.asarray(t.op.attrs["value"])
        if v.size == 1:
            return v.reshape(()).item()
    return None


def range_size(start: Any, limit: Any, delta: Any) -> int:
    """Number of elements of range(start, limit, delta), or InvalidArgumentError (TF's checks)."""
    if delta == 0:
        raise InvalidArgumentError(f"range requires delta != 0, got delta={delta}")
    if delta > 0 and start > limit:
        raise InvalidArgumentError(f"range requires start <= limit when delta > 0: {start}/{limit}")
    if delta < 0 and start < limit:
        raise InvalidArgumentError(f"range requires start >= limit when delta < 0: {start}/{limit}")
    if all(isinstance(v, (int, np.integer)) for v in (start, limit, delta)):
        return int(-(-(abs(int(limit) - int(start))) // abs(int(delta))))  # exact integer ceil
    return int(np.ceil(abs((limit - start) / delta)))


def _range_spec(op: _g.Operation) -> list:
    ts = op.inputs
    dt = ts[0].dtype
    for t, nm in zip(ts, ("start", "limit", "delta")):
        if t.dtype != dt:
            raise ValueError(f"range: {nm} has dtype {t.dtype.name}, start has {dt.name}")
        if t.shape.rank not in (None, 0):
            raise ValueError(f"range: {nm} must be a scalar, got shape {t.shape}")
    if dt not in _RANGE_DTYPES:
        raise ValueError(f"range supports int32, int64, float32 and float64, got {dt.name}")
    from .shape_eval import scalar_value  # TF evaluates small int subgraphs: range(shape(x)[0] + 1)
    vals = [scalar_value(t) if t.dtype.is_integer else _const_scalar(t) for t in ts]
    if any(v is None for v in vals):
        return [(dt, TensorShape([None]))]
    return [(dt, TensorShape([range_size(*vals)]))]


register_op("Range", _range_spec)


def _top_k_spec(op: _g.Operation) -> list:
    x, k = op.inputs
    if k.dtype != _dt.int32 or k.shape.rank not in (None, 0):
        raise ValueError(f"top_k: k must be a scalar int32, got {k.dtype.name} of shape {k.shape}")
    if x.shape.rank == 0:
        raise ValueError("top_k needs an input of rank >= 1, got a scalar")
    if x.dtype == _dt.bool_ or x.dtype == _dt.string:
        raise ValueError(f"top_k needs a real-number input, got {x.dtype.name}")
    from .shape_eval import scalar_value  # k = shape(x)[-1] of a known dim: TF evaluates it
    kv = scalar_value(k)
    if kv is not None:
        if kv < 0:
            raise ValueError(f"top_k: k must be non-negative, got {kv}")
        n = x.shape.dims[-1] if x.shape.rank else None
        if n is not None and kv > n:
            raise ValueError(f"top_k: input must have at least k={kv} columns, got shape {x.shape}")
    if x.shape.rank is None:
        out = TensorShape(None)
    else:
        out = TensorShape(list(x.shape.dims[:-1]) + [kv])
    return [(x.dtype, out), (_dt.int32, out)]


def _in_top_k_spec(op: _g.Operation) -> list:
    pred, targets, k = op.inputs
    if not pred.dtype.is_floating:
        raise ValueError(f"in_top_k: predictions must be floating-point, got {pred.dtype.name}")
    if targets.dtype not in (_dt.int32, _dt.int64) or k.dtype != targets.dtype:
        raise ValueError(f"in_top_k: targets and k must be int32 or int64 of one dtype, got {targets.dtype.name} "
                         f"and {k.dtype.name}")
    if pred.shape.rank not in (None, 2):
        raise ValueError(f"in_top_k: predictions must be 2-D [batch, classes], got shape {pred.shape}")
    if targets.shape.rank not in (None, 1):
        raise ValueError(f"in_top_k: targets must be 1-D [batch], got shape {targets.shape}")
    if k.shape.rank not in (None, 0):
        raise ValueError(f"in_top_k: k must be a scalar, got shape {k.shape}")
    b = pred.shape.dims[0] if pred.shape.rank else None
    batch = TensorShape([b]).merge_with(targets.shape) if targets.shape.rank is not None else TensorShape([b])
    return [(_dt.bool_, batch)]


register_op("TopKV2", _top_k_spec)
register_op("InTopKV2", _in_top_k_spec)
not_differentiable("Range", "InTopKV2")


@register_gradient("TopKV2")
def _top_k_grad(op: _g.Operation, g_values: Any, g_indices: Any) -> list:
    """Each value's gradient goes back to the input position it was taken from.

    Flat input positions: the k indices of a row plus the flat position of the row's first
    element; the values' gradient is scattered (densified) there and reshaped like the input.
    """
    if g_values is None:
        return [None, None]
    x, idx = op.inputs[0], op.outputs[1]
    if isinstance(g_values, IndexedSlices):
        g_values = _g.convert_to_tensor(g_values)
    n = _a.size(x, out_type=_dt.int64)
    positions = _a.reshape_like(single("Range", [constant(0, dtype=_dt.int64), n, constant(1, dtype=_dt.int64)]), x)
    row_starts = _a.strided_slice(positions, (Ellipsis, slice(0, 1)))     # [..., 1]
    flat_idx = _a.reshape(_m.add(_m.cast(idx, _dt.int64), row_starts), [-1])
    dense = convert_to_dense(IndexedSlices(_a.reshape(g_values, [-1]), flat_idx, _a.reshape(n, [1])),
                             TensorShape([x.shape.num_elements()]))
    return [_a.reshape_like(dense, x), None]


# -- constructors --------------------------------------------------------------------------


def _natural_dtype(v: Any) -> _dt.DType:
    """The dtype a range argument has by itself: a tensor's, else TensorFlow's for a Python value."""
    if isinstance(v, _g.Tensor) or hasattr(v, "handle"):
        return _g.convert_to_tensor(v).dtype
    return _dt.as_dtype(_to_array(v, None).dtype)


def range(start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None,  # noqa: A001 - TF name
          name: str = "range") -> _g.Tensor:
    """[start, start + delta, ...] up to but excluding `limit` (TensorFlow's tf.range).

    range(n) is range(0, n).  Without `dtype` the widest of the arguments' dtypes is used
    (int32 < int64 < float32 < float64; Python ints are int32, floats float32).  delta = 0,
    or a delta that moves away from limit, is an InvalidArgumentError.
    """
    if limit is None:
        start, limit = 0, start
    vals = (start, limit, delta)
    g = _g.get_default_graph()
    for v in vals:
        if isinstance(v, _g.Tensor):
            g = v.graph
            break
    if dtype is not None:
        dt = _dt.as_dtype(dtype)
    else:
        dts = [_natural_dtype(v) for v in vals]
        for d in dts:
            if d not in _RANGE_DTYPES:
                raise InvalidArgumentError(f"range supports int32, int64, float32 and float64, got {d.name}")
        dt = max(dts, key=_RANGE_DTYPES.index)
    if dt not in _RANGE_DTYPES:
        raise InvalidArgumentError(f"range supports int32, int64, float32 and float64, got {dt.name}")
    with g.as_default():
        args = []
        for v, what in zip(vals, ("start", "limit", "delta")):
            if isinstance(v, _g.Tensor) or hasattr(v, "handle"):
                t = _g.convert_to_tensor(v)
                if t.dtype != dt:
                    if dtype is not None:
                        raise InvalidArgumentError(f"range: {what} has dtype {t.dtype.name}, but dtype={dt.name} "
                                                   "was given")
                    t = _m.cast(t, dt)  # widened to the widest argument's dtype
            else:
                t = constant(v, dtype=dt, name=what)
            args.append(t)
        consts = [_const_scalar(a) for a in args]
        if all(c is not None for c in consts):
            range_size(*consts)  # the bad cases fail here, when the graph is built
        return single("Range", args, name=name or "range")


def to_float(x: Any, name: str = "ToFloat") -> _g.Tensor:
    """cast(x, float32) (TensorFlow 1.x's tf.to_float)."""
    return _m.cast(x, _dt.float32, name=name)


def to_double(x: Any, name: str = "ToDouble") -> _g.Tensor:
    """cast(x, float64)."""
    return _m.cast(x, _dt.float64, name=name)


def to_int32(x: Any, name: str = "ToInt32") -> _g.Tensor:
    """cast(x, int32)."""
    return _m.cast(x, _dt.int32, name=name)


def to_int64(x: Any, name: str = "ToInt64") -> _g.Tensor:
    """cast(x, int64)."""
    return _m.cast(x, _dt.int64, name=name)


TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])  # what TF1's top_k returns


def top_k(input: Any, k: Any = 1, sorted: bool = True, index_type: Any = None,  # noqa: A002 - TF names
          name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor]:
    """(values, indices) of the k largest entries along the last dimension.

    input: [..., n] of a real dtype; k: a Python int or a scalar int32 tensor, 0 <= k <= n.
    Returns values [..., k] (input's dtype) and indices [..., k] (int32), largest first;
    equal values keep their order (the lower index first), as TensorFlow.  `sorted=False`
    is accepted (the result is sorted anyway, which TensorFlow allows).
    """
    x = _g.convert_to_tensor(input)
    if isinstance(k, _g.Tensor):
        kt = k
    else:
        if int(k) < 0:
            raise InvalidArgumentError(f"top_k: k must be non-negative, got {k}")
        with x.graph.as_default():
            kt = constant(int(k), dtype=_dt.int32, name="k")
    op = make_op("TopKV2", [x, kt], {"sorted": bool(sorted)}, name=name or "TopKV2")
    idx = op.outputs[1]
    if index_type is not None and _dt.as_dtype(index_type) != _dt.int32:  # TF's index_type (int16/int64)
        from .math_ops import cast
        idx = cast(idx, _dt.as_dtype(index_type))
    return TopKV2(op.outputs[0], idx)


def in_top_k(predictions: Any, targets: Any, k: Any, name: Optional[str] = None) -> _g.Tensor:
    """[batch] bool: whether targets[i] is among the k largest of predictions[i].

    predictions: [batch, classes] float; targets: [batch] int32/int64.  Ties straddling the
    k-th place all count as in the top k; a target out of range, or a row with a non-finite
    prediction, gives False (TensorFlow's rules).
    """
    p = _g.convert_to_tensor(predictions)
    with p.graph.as_default():
        t = _g.convert_to_tensor(targets)
        kt = k if isinstance(k, _g.Tensor) else constant(int(k), dtype=t.dtype, name="k")
    return single("InTopKV2", [p, t, kt], name=name or "InTopKV2")
