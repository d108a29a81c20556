"""TF1 math helpers that TF programs reach for next: the nan-safe products and quotients
(tf.math.multiply_no_nan, reciprocal_no_nan, xdivy, xlog1py), tf.math.is_non_decreasing /
is_strictly_increasing, reduce_euclidean_norm, unsorted_segment_sqrt_n, accumulate_n and
the deprecated aliases arg_max / arg_min / floor_div.  MulNoNan is an op of its own (its
gradient is TF's: the product rule with the nan-safe product); the rest are composed, so
their gradients come from the parts, and are TF's (checked against TF and finite
differences in tests/test_nan_safe_ops.py).
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_gradient, register_op
from . import array_ops as _a
from . import math_ops as _m
from . import segment_ops as _seg
from .constant_op import constant
from .math_extra_ops import floor
from .op_util import single

__all__ = ["mul_no_nan", "multiply_no_nan", "reciprocal_no_nan", "xdivy", "xlog1py", "is_non_decreasing",
           "is_strictly_increasing", "reduce_euclidean_norm", "unsorted_segment_sqrt_n", "accumulate_n",
           "arg_max", "arg_min", "floor_div"]

register_op("MulNoNan", _m._binary_spec, doc="x * y, and 0 where y == 0 (even where x is inf or nan)")


@register_gradient("MulNoNan")
def _mul_no_nan_grad(op: _g.Operation, g: Any) -> List[Any]:
    from ..math_grad import _ub  # (math_grad imports the op modules: a late import)
    x, y = op.inputs
    return [_ub(mul_no_nan(g, y), x, y), _ub(mul_no_nan(x, g), y, x)]


def _float_pair(x: Any, y: Any, what: str) -> Any:
    x, y = _m._operands(x, y)
    if not x.dtype.is_floating:
        raise InvalidArgumentError(f"{what} needs floating-point inputs, got {x.dtype.name}")
    return x, y


def mul_no_nan(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """x * y, and 0 where y is 0 whatever x is (inf and nan included), as tf.math.multiply_no_nan."""
    x, y = _float_pair(x, y, "multiply_no_nan")
    return single("MulNoNan", [x, y], name=name or "MulNoNan")


multiply_no_nan = mul_no_nan


def reciprocal_no_nan(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """1 / x, and 0 where x is 0."""
    from .math_more_ops import div_no_nan
    t = _g.convert_to_tensor(x)
    if not t.dtype.is_floating:
        raise InvalidArgumentError(f"reciprocal_no_nan needs a floating-point input, got {t.dtype.name}")
    with t.graph.as_default(), t.graph.name_scope(name or "reciprocal_no_nan"):
        return div_no_nan(constant(1, dtype=t.dtype), t)


def _zero_where_x_is(x: _g.Tensor, y: _g.Tensor, fn: Any, neutral: float, scope: str) -> _g.Tensor:
    """fn(x, y'), and 0 where x == 0, y' being `neutral` there: no inf or nan in the value or
    in either gradient at those places (both are 0 there, as TF's)."""
    with x.graph.as_default(), x.graph.name_scope(scope):
        zero = _m.equal(x, _a.zeros_like(x))
        safe_y = _a.where_v2(zero, constant(neutral, dtype=y.dtype), y)
        out = fn(x, safe_y)
        return _a.where_v2(zero, _a.zeros_like(out), out)


def xdivy(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """x / y, and 0 where x == 0 (whatever y is)."""
    x, y = _float_pair(x, y, "xdivy")
    return _zero_where_x_is(x, y, _m.divide, 1.0, name or "Xdivy")


def xlog1py(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """x * log1p(y), and 0 where x == 0 (whatever y is)."""
    x, y = _float_pair(x, y, "xlog1py")
    return _zero_where_x_is(x, y, lambda a, b: _m.multiply(a, _m.log1p(b)), 0.0, name or "Xlog1py")


def _monotone(x: Any, cmp: Any, scope: str) -> _g.Tensor:
    t = _g.convert_to_tensor(x)
    if not (t.dtype.is_floating or t.dtype.is_integer):
        raise InvalidArgumentError(f"{scope} needs a numeric tensor, got {t.dtype.name}")
    with t.graph.as_default(), t.graph.name_scope(scope):
        flat = _a.reshape(t, [-1])  # row-major order, as TF compares
        return _m.reduce_all(cmp(flat[1:], flat[:-1]))  # fewer than two elements: True


def is_non_decreasing(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """Whether x's elements, in row-major order, never decrease (True for fewer than two)."""
    return _monotone(x, _m.greater_equal, name or "is_non_decreasing")


def is_strictly_increasing(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """Whether x's elements, in row-major order, always increase (True for fewer than two)."""
    return _monotone(x, _m.greater, name or "is_strictly_increasing")


def reduce_euclidean_norm(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                          name: Optional[str] = None) -> _g.Tensor:
    """sqrt(sum(x**2)) over `axis` (all axes when None); integers: the root's integer part."""
    x = _g.convert_to_tensor(input_tensor)
    with x.graph.as_default(), x.graph.name_scope(name or "EuclideanNorm"):
        if x.dtype.is_floating:
            return _m.sqrt(_m.reduce_sum(_m.square(x), axis, keepdims=keepdims))
        if not x.dtype.is_integer:
            raise InvalidArgumentError(f"reduce_euclidean_norm needs a numeric tensor, got {x.dtype.name}")
        wide = _m.cast(x, _dt.float64)
        return _m.cast(floor(_m.sqrt(_m.reduce_sum(_m.square(wide), axis, keepdims=keepdims))), x.dtype)


def unsorted_segment_sqrt_n(data: Any, segment_ids: Any, num_segments: Any,
                            name: Optional[str] = None) -> _g.Tensor:
    """The sum of each segment's rows divided by the square root of their number (0 for an
    empty segment; a negative id drops its row), as tf.math.unsorted_segment_sqrt_n."""
    d = _g.convert_to_tensor(data)
    if not d.dtype.is_floating:
        raise InvalidArgumentError(f"unsorted_segment_sqrt_n needs floating-point data, got {d.dtype.name}")
    with d.graph.as_default(), d.graph.name_scope(name or "UnsortedSegmentSqrtN"):
        ids = _g.convert_to_tensor(segment_ids)
        total = _seg.unsorted_segment_sum(d, ids, num_segments)
        counts = _seg.unsorted_segment_sum(_a.ones_like(ids, dtype=d.dtype), ids, num_segments)
        # one count per segment, shaped to divide the sums' rows (ids may be of rank > 1)
        extra = _a.rank(total) - _a.rank(counts)
        counts = _a.reshape(counts, _a.concat([_a.shape(counts), _a.ones(_a.reshape(extra, [1]), _dt.int32)], 0))
        return total / _m.sqrt(_m.maximum(counts, constant(1, dtype=d.dtype)))


def accumulate_n(inputs: Sequence[Any], shape: Any = None, tensor_dtype: Any = None,
                 name: Optional[str] = None) -> _g.Tensor:
    """The elementwise sum of `inputs` (tensors of one shape and dtype; `shape` and
    `tensor_dtype`, when given, must agree with them), as tf.accumulate_n."""
    ts = [_g.convert_to_tensor(t) for t in inputs]
    if not ts:
        raise ValueError("accumulate_n: inputs must be a non-empty list of tensors")
    if tensor_dtype is not None and any(t.dtype != _dt.as_dtype(tensor_dtype) for t in ts):
        raise TypeError(f"accumulate_n: tensor_dtype is {_dt.as_dtype(tensor_dtype).name}, the inputs are "
                        f"{sorted({t.dtype.name for t in ts})}")
    if shape is not None:
        from ..shape import as_shape
        want = as_shape(shape)
        for t in ts:
            if not want.is_compatible_with(t.shape):
                raise ValueError(f"accumulate_n: shape {want} does not match input {t.name} of shape {t.shape}")
    return _m.add_n(ts, name=name or "AccumulateN")


def arg_max(input: Any, dimension: Any = None, output_type: Any = _dt.int64,  # noqa: A002
            name: Optional[str] = None) -> _g.Tensor:
    """TF1's deprecated tf.arg_max: tf.argmax along `dimension`."""
    return _m.argmax(input, dimension, name=name, output_type=output_type)


def arg_min(input: Any, dimension: Any = None, output_type: Any = _dt.int64,  # noqa: A002
            name: Optional[str] = None) -> _g.Tensor:
    """TF1's deprecated tf.arg_min: tf.argmin along `dimension`."""
    return _m.argmin(input, dimension, name=name, output_type=output_type)


def floor_div(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """TF1's tf.floor_div: tf.floordiv."""
    return _m.floordiv(x, y, name=name)

