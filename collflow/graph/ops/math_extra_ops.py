"""TensorFlow 1.x's remaining elementwise math: tf.div (Python 2 division), tf.realdiv,
tf.truncatediv / truncatemod, tf.floormod, tf.floor / ceil / round / rint, tf.is_nan /
is_finite / is_inf, tf.erf, tf.atan2, tf.count_nonzero and tf.linspace (tf.lin_space).

Op types are registered here with their shape functions, and the gradients of Erf and
Atan2 next to them (and FloorMod's, TensorFlow's rule, which math_ops.py left out); kernels
live in kernels/math_extra_kernels.py.  Floor, Ceil, Round and
Rint have no gradient (TensorFlow's rules return None for them), nor do the predicates;
linspace is differentiable in start and stop.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import not_differentiable, register_gradient, register_op
from ..shape import TensorShape, broadcast_static
from . import math_ops as _m
from .constant_op import constant
from .op_util import dense as _dense, single

# `round` shadows a builtin: exported by name, last, from collflow/__init__.py (as `range` is)
__all__ = ["div", "realdiv", "truncatediv", "truncatemod", "floormod", "floor", "ceil", "rint", "is_nan",
           "is_finite", "is_inf", "erf", "atan2", "count_nonzero", "linspace", "lin_space"]

# -- shape functions -------------------------------------------------------------------------


def _float_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if not x.dtype.is_floating:
        raise ValueError(f"{op.type} needs a floating-point input, got {x.dtype.name}")
    return [(x.dtype, x.shape)]


def _numeric_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise ValueError(f"{op.type} needs a numeric input, got {x.dtype.name}")
    return [(x.dtype, x.shape)]


def _predicate_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if not x.dtype.is_floating:
        raise ValueError(f"{op.type} needs a floating-point input, got {x.dtype.name}")
    return [(_dt.bool_, x.shape)]


def _binary_spec(op: _g.Operation) -> list:
    a, b = op.inputs
    if a.dtype != b.dtype:
        raise ValueError(f"inputs have different dtypes: {a.dtype.name} and {b.dtype.name}")
    if op.type == "Atan2" and not a.dtype.is_floating:
        raise ValueError(f"atan2 needs floating-point inputs, got {a.dtype.name}")
    if op.type in ("TruncateDiv", "TruncateMod") and not (a.dtype.is_integer or a.dtype.is_floating):
        raise ValueError(f"{op.type} needs numeric inputs, got {a.dtype.name}")
    return [(a.dtype, broadcast_static(a.shape, b.shape))]


for _n in ("Floor", "Ceil", "Rint", "Erf"):
    register_op(_n, _float_spec)
register_op("Round", _numeric_spec, doc="round half to even (banker's rounding)")
for _n in ("IsNan", "IsFinite", "IsInf"):
    register_op(_n, _predicate_spec)
for _n in ("TruncateDiv", "TruncateMod", "Atan2"):
    register_op(_n, _binary_spec)


def _const_scalar(t: _g.Tensor) -> Optional[Any]:
    if t.op.type == "Const":
        v = np.asarray(t.op.attrs["value"])
        if v.size == 1:
            return v.reshape(()).item()
    return None


def _lin_space_spec(op: _g.Operation) -> list:
    start, stop, num = op.inputs
    if not start.dtype.is_floating or stop.dtype != start.dtype:
        raise ValueError(f"linspace: start and stop must be floating-point of one dtype, got {start.dtype.name} "
                         f"and {stop.dtype.name}")
    if num.dtype not in (_dt.int32, _dt.int64):
        raise ValueError(f"linspace: num must be int32 or int64, got {num.dtype.name}")
    for t, what in ((start, "start"), (stop, "stop"), (num, "num")):
        if t.shape.rank not in (None, 0):
            raise ValueError(f"linspace: {what} must be a scalar, got shape {t.shape}")
    n = _const_scalar(num)
    if n is not None and n <= 0:
        raise ValueError(f"linspace requires num > 0, got {n}")
    return [(start.dtype, TensorShape([n]))]


register_op("LinSpace", _lin_space_spec)

not_differentiable("Floor", "Ceil", "Round", "Rint", "IsNan", "IsFinite", "IsInf", "TruncateDiv", "TruncateMod")

# -- gradients ---------------------------------------------------------------------------------

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@register_gradient("Erf")
def _erf_grad(op: _g.Operation, g: Any) -> list:
    x = op.inputs[0]
    return [_dense(g) * (_TWO_OVER_SQRT_PI * _m.exp(-_m.square(x)))]


@register_gradient("Atan2")
def _atan2_grad(op: _g.Operation, g: Any) -> list:
    # d atan2(y, x) = (x dy - y dx) / (x^2 + y^2)
    y, x = op.inputs
    g_inv = _dense(g) / (_m.square(x) + _m.square(y))
    return [_m.sum_to_shape_of(x * g_inv, y), _m.sum_to_shape_of(-y * g_inv, x)]


@register_gradient("FloorMod")
def _floor_mod_grad(op: _g.Operation, g: Any) -> list:
    # x mod y = x - floor(x / y) * y: d/dx = 1, d/dy = -floor(x / y) (TensorFlow's rule; math_ops
    # registers the op, its gradient lives here with tf.floormod)
    x, y = op.inputs
    if not x.dtype.is_floating:
        return [None, None]
    g = _dense(g)
    return [_m.sum_to_shape_of(g, x), _m.sum_to_shape_of(-g * _m.floordiv(x, y), y)]


@register_gradient("LinSpace")
def _lin_space_grad(op: _g.Operation, g: Any) -> list:
    # out_i = start + w_i (stop - start), w = linspace(0, 1, num): d/dstart = 1 - w_i, d/dstop = w_i
    start, _, num = op.inputs
    g = _dense(g)
    w = single("LinSpace", [constant(0, dtype=start.dtype), constant(1, dtype=start.dtype), num])
    g_stop = _m.reduce_sum(g * w)
    return [_m.reduce_sum(g) - g_stop, g_stop, None]


# -- constructors ------------------------------------------------------------------------------


def _pair(x: Any, y: Any) -> Tuple[_g.Tensor, _g.Tensor]:
    """Both operands as tensors; a Python/NumPy operand takes the dtype of the Tensor one."""
    if isinstance(x, _g.Tensor) or hasattr(x, "handle"):
        x = _g.convert_to_tensor(x)
        y = _g.convert_to_tensor(y, dtype=None if isinstance(y, _g.Tensor) else x.dtype, graph=x.graph)
    elif isinstance(y, _g.Tensor) or hasattr(y, "handle"):
        y = _g.convert_to_tensor(y)
        x = _g.convert_to_tensor(x, dtype=y.dtype, graph=y.graph)
    else:
        x = _g.convert_to_tensor(x)
        y = _g.convert_to_tensor(y, dtype=x.dtype, graph=x.graph)
    if x.dtype != y.dtype:
        raise InvalidArgumentError(f"x and y must have the same dtype, got {x.dtype.name} and {y.dtype.name}")
    return x, y


def div(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """x / y with Python 2's semantics (TensorFlow 1.x's tf.div): floor division for integers
    (-7 // 2 = -4), true division for floating-point operands."""
    x, y = _pair(x, y)
    if x.dtype.is_integer:
        return _m.floordiv(x, y, name=name or "div")
    return _m.divide(x, y, name=name or "div")


def realdiv(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """x / y, true division (TensorFlow's RealDiv)."""
    x, y = _pair(x, y)
    return _m.divide(x, y, name=name or "RealDiv")


def truncatediv(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """x / y rounded toward zero, as C does (-7 / 2 = -3); integer division by zero is an error."""
    x, y = _pair(x, y)
    return single("TruncateDiv", [x, y], name=name or "TruncateDiv")


def truncatemod(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """The remainder of truncatediv, with the sign of x (C's fmod): truncatemod(-7, 2) = -1."""
    x, y = _pair(x, y)
    return single("TruncateMod", [x, y], name=name or "TruncateMod")


def floormod(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """The remainder of floor division, with the sign of y (Python's %): floormod(-7, 2) = 1."""
    return _m.mod(x, y, name=name or "FloorMod")


def _unary(op_type: str, x: Any, name: Optional[str]) -> _g.Tensor:
    return single(op_type, [x], name=name or op_type)


def floor(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """The largest integer not greater than x, elementwise (floating-point x)."""
    return _unary("Floor", x, name)


def ceil(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """The smallest integer not less than x, elementwise (floating-point x)."""
    return _unary("Ceil", x, name)


def round(x: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A001 - TF name
    """x rounded to the nearest integer, halves to even (banker's rounding: 0.5 -> 0, 1.5 -> 2,
    -2.5 -> -2); an integer tensor is returned as it is, as TensorFlow does."""
    x = _g.convert_to_tensor(x)
    if x.dtype.is_integer:
        return x
    return _unary("Round", x, name)


def rint(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """The integer closest to x, halves to even (floating-point x; as round)."""
    return _unary("Rint", x, name)


def is_nan(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """Elementwise x != x (bool), for floating-point x."""
    return _unary("IsNan", x, name)


def is_finite(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """Elementwise: neither NaN nor +-inf (bool), for floating-point x."""
    return _unary("IsFinite", x, name)


def is_inf(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """Elementwise: +inf or -inf (bool), for floating-point x."""
    return _unary("IsInf", x, name)


def erf(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """The Gauss error function 2/sqrt(pi) * integral_0^x exp(-t^2) dt (floating-point x)."""
    return _unary("Erf", x, name)


def atan2(y: Any, x: Any, name: Optional[str] = None) -> _g.Tensor:
    """The angle of the point (x, y) in (-pi, pi], elementwise with broadcasting (note: y first)."""
    y, x = _pair(y, x)
    return single("Atan2", [y, x], name=name or "Atan2")


def count_nonzero(input_tensor: Any, axis: Any = None, keepdims: Any = None, dtype: Any = _dt.int64,
                  name: Optional[str] = None, reduction_indices: Any = None, keep_dims: Any = None) -> _g.Tensor:
    """The number of non-zero entries (True for bools) over `axis`, as `dtype` (default int64).

    TensorFlow 1.x's signature, with its older keywords reduction_indices and keep_dims.
    """
    x = _g.convert_to_tensor(input_tensor)
    if not (x.dtype.is_floating or x.dtype.is_integer or x.dtype == _dt.bool_):
        raise InvalidArgumentError(f"count_nonzero needs a numeric or bool tensor, got {x.dtype.name}")
    with x.graph.as_default(), x.graph.name_scope(name or "count_nonzero"):
        zero = constant(np.zeros((), dtype=x.dtype.np), name="zero")
        nonzero = _m.cast(_m.not_equal(x, zero), _dt.int64)
        total = _m.reduce_sum(nonzero, axis, keepdims, reduction_indices=reduction_indices, keep_dims=keep_dims)
        return _m.cast(total, dtype)


def linspace(start: Any, stop: Any, num: Any, name: Optional[str] = None) -> _g.Tensor:
    """`num` evenly spaced values from start to stop, both included (start + i * (stop - start) /
    (num - 1)); num = 1 gives [start].  start and stop: float scalars; num: an int scalar > 0."""
    if isinstance(start, _g.Tensor) or hasattr(start, "handle"):
        s = _g.convert_to_tensor(start)
    elif isinstance(stop, _g.Tensor) or hasattr(stop, "handle"):
        s = _g.convert_to_tensor(start, dtype=_g.convert_to_tensor(stop).dtype)
    else:
        s = constant(start, dtype=_dt.float32, name="start")
    with s.graph.as_default():
        e = _g.convert_to_tensor(stop, dtype=None if isinstance(stop, _g.Tensor) else s.dtype)
        n = num if isinstance(num, _g.Tensor) else constant(int(num), dtype=_dt.int32, name="num")
        if isinstance(n, _g.Tensor) and n.op.type == "Const" and int(np.asarray(n.op.attrs["value"])) <= 0:
            raise InvalidArgumentError(f"linspace requires num > 0, got {int(np.asarray(n.op.attrs['value']))}")
        return single("LinSpace", [s, e, n], name=name or "LinSpace")


lin_space = linspace
