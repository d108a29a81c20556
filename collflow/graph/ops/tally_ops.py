"""TF1 helpers composed from existing ops (so their gradients come from the parts):
tf.math.reduce_variance / reduce_std, tf.math.xlogy, tf.confusion_matrix, tf.bincount,
tf.invert_permutation, tf.saturate_cast, tf.shape_n, tf.where_v2 and tf.parallel_stack.
"""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from . import array_ops as _a
from . import check_ops as _chk
from . import math_ops as _m
from . import misc_ops as _misc
from . import rearrange_ops as _r
from . import segment_ops as _seg
from .constant_op import constant

__all__ = ["reduce_variance", "reduce_std", "xlogy", "confusion_matrix", "bincount", "invert_permutation",
           "saturate_cast", "shape_n", "where_v2", "parallel_stack"]


def reduce_variance(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                    name: Optional[str] = None) -> _g.Tensor:
    """The mean squared deviation from the mean over `axis` (all axes when None), as TF:
    mean((x - mean(x))^2); integer inputs are refused."""
    x = _g.convert_to_tensor(input_tensor)
    if not x.dtype.is_floating:
        raise TypeError(f"reduce_variance: input must be real floating point, got {x.dtype.name}")
    with x.graph.as_default(), x.graph.name_scope(name or "reduce_variance"):
        means = _m.reduce_mean(x, axis, keepdims=True)
        return _m.reduce_mean(_m.square(x - means), axis, keepdims=keepdims)


def reduce_std(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: Optional[str] = None) -> _g.Tensor:
    """sqrt(reduce_variance(...))."""
    x = _g.convert_to_tensor(input_tensor)
    with x.graph.as_default(), x.graph.name_scope(name or "reduce_std"):
        return _m.sqrt(reduce_variance(x, axis, keepdims))


def xlogy(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """x * log(y), and 0 where x == 0 (whatever y is); both gradients are 0 there too (TF's)."""
    x, y = _m._operands(x, y)
    with x.graph.as_default(), x.graph.name_scope(name or "Xlogy"):
        zero = _m.equal(x, constant(0, dtype=x.dtype))
        # y replaced by 1 where x is 0: no log(0) there, so no 0 * inf in value or gradient
        safe_y = _a.where_v2(zero, constant(1, dtype=y.dtype), y)
        return _m.multiply(x, _m.log(safe_y), name="xlogy")


def _int_tensor(v: Any, g: _g.Graph, what: str) -> _g.Tensor:
    t = v if isinstance(v, _g.Tensor) else _g.convert_to_tensor(v, graph=g)
    if t.dtype not in (_dt.int32, _dt.int64):
        raise InvalidArgumentError(f"{what} must be int32 or int64, got {t.dtype.name}")
    return t


def confusion_matrix(labels: Any, predictions: Any, num_classes: Any = None, dtype: Any = _dt.int32,
                     name: Optional[str] = None, weights: Any = None) -> _g.Tensor:
    """[num_classes, num_classes]: entry [i, j] counts (or sums the weights of) the examples
    with label i predicted as j.  num_classes None: one more than the largest label or
    prediction.  A negative or out-of-range class is InvalidArgumentError at run time."""
    lab = _g.convert_to_tensor(labels)
    g = lab.graph
    with g.as_default(), g.name_scope(name or "confusion_matrix"):
        lab = _int_tensor(lab, g, "confusion_matrix labels")
        pred = _int_tensor(predictions, g, "confusion_matrix predictions")
        for t, what in ((lab, "labels"), (pred, "predictions")):
            if t.shape.rank not in (None, 1):
                raise InvalidArgumentError(f"confusion_matrix: {what} must be 1-D, got shape {t.shape}")
        lab, pred = _m.cast(lab, _dt.int64), _m.cast(pred, _dt.int64)
        checks = [_chk.assert_non_negative(lab, message="`labels` contains negative values"),
                  _chk.assert_non_negative(pred, message="`predictions` contains negative values")]
        if num_classes is None:
            n = _m.maximum(_m.reduce_max(lab), _m.reduce_max(pred)) + 1
        else:
            n = _m.cast(num_classes, _dt.int64) if isinstance(num_classes, _g.Tensor) else \
                constant(int(num_classes), dtype=_dt.int64)
            checks += [_chk.assert_less(lab, n, message="`labels` out of bound"),
                       _chk.assert_less(pred, n, message="`predictions` out of bound")]
        dt = _dt.as_dtype(dtype)
        w = _a.ones_like(lab, dtype=dt) if weights is None else _m.cast(weights, dt)
        with g.control_dependencies(checks):
            flat = lab * n + pred
        counts = _seg.unsorted_segment_sum(w, flat, n * n)
        return _a.reshape(counts, _a.stack([n, n]), name="confusion_matrix")


def bincount(arr: Any, weights: Any = None, minlength: Any = None, maxlength: Any = None,
             dtype: Any = _dt.int32, name: Optional[str] = None) -> _g.Tensor:
    """How often each value 0..n-1 occurs in the int32 `arr` (or the sum of its `weights`),
    n = max(arr) + 1 raised to minlength and capped at maxlength (values >= maxlength are not
    counted); a negative value is InvalidArgumentError at run time."""
    a = _g.convert_to_tensor(arr)
    g = a.graph
    with g.as_default(), g.name_scope(name or "bincount"):
        if a.dtype != _dt.int32:
            raise InvalidArgumentError(f"bincount: arr must be int32, got {a.dtype.name}")
        flat = _a.reshape(a, [-1])
        check = _chk.assert_non_negative(flat, message="Input arr must be non-negative!")
        # max(arr) + 1, and 0 for an empty arr (the 0 appended is the maximum then)
        size = _m.reduce_max(_a.concat([flat + 1, constant([0], dtype=_dt.int32)], 0))
        if minlength is not None:
            size = _m.maximum(size, _m.cast(minlength, _dt.int32))
        if maxlength is not None:
            size = _m.minimum(size, _m.cast(maxlength, _dt.int32))
        out_dt = _dt.as_dtype(dtype) if weights is None else _g.convert_to_tensor(weights).dtype
        w = _a.ones_like(flat, dtype=out_dt) if weights is None else _a.reshape(_g.convert_to_tensor(weights), [-1])
        with g.control_dependencies([check]):
            ids = _a.where(_m.less(flat, size), flat, -_a.ones_like(flat))  # beyond maxlength: dropped
        return _seg.unsorted_segment_sum(w, ids, size, name="bincount")


def invert_permutation(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """y with y[x[i]] = i, for a 1-D permutation x of 0..n-1 (int32 or int64)."""
    t = _g.convert_to_tensor(x)
    if t.dtype not in (_dt.int32, _dt.int64) or t.shape.rank not in (None, 1):
        raise InvalidArgumentError(f"invert_permutation needs a 1-D int32/int64 tensor, got {t.dtype.name} of shape "
                                   f"{t.shape}")
    with t.graph.as_default(), t.graph.name_scope(name or "InvertPermutation"):
        order = _r.argsort(t)
        # TF's kernel refuses a value out of [0, n) or given twice: sorted, x must be 0..n-1
        check = _chk.assert_equal(_r.sort(t), _misc.range(_a.size(t, out_type=t.dtype)),
                                  message="invert_permutation: x is not a permutation of 0..n-1 "
                                          "(a value out of range or repeated)")
        with t.graph.control_dependencies([check]):
            return _m.cast(order, t.dtype)


def saturate_cast(value: Any, dtype: Any, name: Optional[str] = None) -> _g.Tensor:
    """value cast to dtype, first clamped to the range dtype can hold (as TF 1.15)."""
    x = _g.convert_to_tensor(value)
    dt = _dt.as_dtype(dtype)
    with x.graph.as_default(), x.graph.name_scope(name or "saturate_cast"):
        src, dst = _limits(x.dtype), _limits(dt)
        if src[0] < dst[0]:
            x = _m.maximum(x, constant(dst[0], dtype=x.dtype))
        if src[1] > dst[1]:
            x = _m.minimum(x, constant(dst[1], dtype=x.dtype))
        return _m.cast(x, dt)


def _limits(dt: _dt.DType) -> tuple:
    if dt.is_floating:
        f = np.finfo(dt.np)
        return float(f.min), float(f.max)
    if dt.is_integer:
        i = np.iinfo(dt.np)
        return int(i.min), int(i.max)
    return 0, 1


def shape_n(input: Any, out_type: Any = _dt.int32, name: Optional[str] = None) -> List[_g.Tensor]:  # noqa: A002
    """The run-time shape of each tensor."""
    return [_a.shape(t, out_type=out_type) for t in input]


def where_v2(condition: Any, x: Any = None, y: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """x where condition else y, the three broadcast together (NumPy's rules); with neither x
    nor y, the coordinates of the true entries (as tf.where)."""
    if x is None and y is None:
        return _a.where(condition, name=name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return _a.where_v2(condition, x, y, name=name)


def parallel_stack(values: Any, name: str = "parallel_stack") -> _g.Tensor:
    """tf.stack along a new first axis (TF copies the inputs in parallel; the values are the same)."""
    return _a.stack(values, axis=0, name=name)
