"""The rest of TF1's tf.assert_* family (check_ops.py has equal/less/less_equal/positive/
non_negative/rank): greater, greater_equal, none_equal, negative, non_positive, near,
rank_at_least, rank_in, integer, type, scalar, and tf.ensure_shape.  As TF: a check the
graph can decide is decided when it is built (an error then, else a no-op), the rest is an
Assert op that raises InvalidArgumentError when it runs.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_gradient, register_op
from ..shape import TensorShape, as_shape
from . import array_ops as _a
from . import math_ops as _m
from .check_ops import Assert, _binary_assert, _graph_of, _message_prefix, _sign_assert, assert_less, \
    assert_less_equal
from .constant_op import constant, no_op
from .op_util import single

__all__ = ["assert_greater", "assert_greater_equal", "assert_none_equal", "assert_negative", "assert_non_positive",
           "assert_near", "assert_rank_at_least", "assert_rank_in", "assert_integer", "assert_type", "assert_scalar",
           "ensure_shape"]


def assert_greater(x: Any, y: Any, data: Any = None, summarize: Optional[int] = None, message: Optional[str] = None,
                   name: Optional[str] = None) -> _g.Operation:
    """An op raising InvalidArgumentError unless x > y everywhere (with broadcasting)."""
    return _binary_assert(">", "assert_greater", _m.greater, np.greater, x, y, data, summarize, message, name)


def assert_greater_equal(x: Any, y: Any, data: Any = None, summarize: Optional[int] = None,
                         message: Optional[str] = None, name: Optional[str] = None) -> _g.Operation:
    """An op raising InvalidArgumentError unless x >= y everywhere (with broadcasting)."""
    return _binary_assert(">=", "assert_greater_equal", _m.greater_equal, np.greater_equal, x, y, data, summarize,
                          message, name)


def assert_none_equal(x: Any, y: Any, data: Any = None, summarize: Optional[int] = None,
                      message: Optional[str] = None, name: Optional[str] = None) -> _g.Operation:
    """An op raising InvalidArgumentError unless x != y everywhere (with broadcasting)."""
    return _binary_assert("!=", "assert_none_equal", _m.not_equal, np.not_equal, x, y, data, summarize, message,
                          name)


def assert_negative(x: Any, data: Any = None, summarize: Optional[int] = None, message: Optional[str] = None,
                    name: Optional[str] = None) -> _g.Operation:
    """An op raising InvalidArgumentError unless x < 0 everywhere."""
    return _sign_assert("<", "assert_negative", lambda zero, t, **kw: assert_less(t, zero, **kw), x, data, summarize,
                        message, name)


def assert_non_positive(x: Any, data: Any = None, summarize: Optional[int] = None, message: Optional[str] = None,
                        name: Optional[str] = None) -> _g.Operation:
    """An op raising InvalidArgumentError unless x <= 0 everywhere."""
    return _sign_assert("<=", "assert_non_positive", lambda zero, t, **kw: assert_less_equal(t, zero, **kw), x, data,
                        summarize, message, name)


def assert_near(x: Any, y: Any, rtol: Any = None, atol: Any = None, data: Any = None, summarize: Optional[int] = None,
                message: Optional[str] = None, name: Optional[str] = None) -> _g.Operation:
    """An op raising InvalidArgumentError unless |x - y| <= atol + rtol * |y| everywhere
    (floats; rtol and atol default to 10 times the dtype's epsilon, as TF)."""
    g = _graph_of([x, y])
    with g.as_default(), g.name_scope(name or "assert_near"):
        xt = _g.convert_to_tensor(x, name="x")
        yt = _g.convert_to_tensor(y, dtype=xt.dtype, name="y")
        if not xt.dtype.is_floating:
            raise InvalidArgumentError(f"assert_near needs floating-point tensors, got {xt.dtype.name}")
        eps = float(np.finfo(xt.dtype.np).eps)
        rt = constant(10 * eps if rtol is None else rtol, dtype=xt.dtype, name="rtol")
        at = constant(10 * eps if atol is None else atol, dtype=xt.dtype, name="atol")
        if data is None:
            data = [_message_prefix(message), "x and y not equal to tolerance rtol = ", rt, ", atol = ", at,
                    f"x ({xt.name}) = ", xt, f"y ({yt.name}) = ", yt]
        tol = at + rt * _m.abs(yt)
        return Assert(_m.reduce_all(_m.less_equal(_m.abs(xt - yt), tol)), data, summarize=summarize)


def _rank_check(x: Any, ok: Any, describe: str, runtime: Any, data: Any, summarize: Optional[int],
                message: Optional[str], name: str) -> _g.Operation:
    g = _graph_of([x])
    with g.as_default(), g.name_scope(name):
        xt = _g.convert_to_tensor(x)
        prefix = _message_prefix(message)
        if xt.shape.rank is not None:
            if not ok(xt.shape.rank):
                raise InvalidArgumentError(f"{prefix}Tensor {xt.name} must have rank {describe}.  Received rank "
                                           f"{xt.shape.rank}, shape {xt.shape}")
            return no_op(name="static_checks_determined_all_ok")
        if data is None:
            data = [prefix, f"Tensor {xt.name} must have rank {describe}.  Received shape: ", _a.shape(xt)]
        return Assert(runtime(_a.rank(xt)), data, summarize=summarize)


def assert_rank_at_least(x: Any, rank: int, data: Any = None, summarize: Optional[int] = None,
                         message: Optional[str] = None, name: Optional[str] = None) -> _g.Operation:
    """Checks that x's rank is at least `rank` (at once when the graph knows it)."""
    r = int(rank)
    return _rank_check(x, lambda k: k >= r, f"at least {r}",
                       lambda rk: _m.greater_equal(rk, constant(r, dtype=_dt.int32)),
                       data, summarize, message, name or "assert_rank_at_least")


def assert_rank_in(x: Any, ranks: Sequence[int], data: Any = None, summarize: Optional[int] = None,
                   message: Optional[str] = None, name: Optional[str] = None) -> _g.Operation:
    """Checks that x's rank is one of `ranks` (at once when the graph knows it)."""
    rs = [int(r) for r in ranks]
    return _rank_check(x, lambda k: k in rs, f"in {rs}",
                       lambda rk: _m.reduce_any(_m.equal(rk, constant(np.asarray(rs, np.int32)))),
                       data, summarize, message, name or "assert_rank_in")


def assert_integer(x: Any, message: Optional[str] = None, name: Optional[str] = None) -> _g.Operation:
    """TypeError unless x is of an integer dtype (decided now: the dtype is static)."""
    xt = _g.convert_to_tensor(x)
    if not xt.dtype.is_integer:
        raise TypeError(f"{_message_prefix(message)}Expected {xt.name} to be of integer type, got {xt.dtype.name}")
    with xt.graph.as_default():
        return no_op(name=name or "assert_integer")


def assert_type(tensor: Any, tf_type: Any, message: Optional[str] = None, name: Optional[str] = None) -> _g.Operation:
    """TypeError unless `tensor` has dtype tf_type (decided now)."""
    t = _g.convert_to_tensor(tensor)
    want = _dt.as_dtype(tf_type)
    if t.dtype != want:
        raise TypeError(f"{_message_prefix(message)}{t.name} must be of type {want.name}, got {t.dtype.name}")
    with t.graph.as_default():
        return no_op(name=name or "assert_type")


def assert_scalar(tensor: Any, name: Optional[str] = None, message: Optional[str] = None) -> _g.Tensor:
    """`tensor` itself, after checking that its static shape is a scalar's (ValueError)."""
    t = _g.convert_to_tensor(tensor)
    if t.shape.rank != 0:
        raise ValueError(f"{_message_prefix(message)}Expected scalar shape for {t.name}, saw shape: {t.shape}.")
    return t


# -- ensure_shape: an identity that checks the shape when it runs ----------------------------

def _ensure_shape_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    want: TensorShape = op.attrs["shape"]
    if not want.is_compatible_with(x.shape):
        raise ValueError(f"Shape of tensor {x.name} {x.shape} is not compatible with expected shape {want}.")
    return [(x.dtype, x.shape.merge_with(want))]


register_op("EnsureShape", _ensure_shape_spec, doc="x, checked to have a shape compatible with `shape`")
register_gradient("EnsureShape")(lambda op, g: [g])


def ensure_shape(x: Any, shape: Any, name: Optional[str] = None) -> _g.Tensor:
    """x, with the static shape `shape` (None dimensions left free); running it raises
    InvalidArgumentError when x's shape does not match, as tf.ensure_shape."""
    t = _g.convert_to_tensor(x)
    return single("EnsureShape", [t], {"shape": as_shape(shape)}, name=name or "EnsureShape")
