"""Run-time checks of TensorFlow 1.x: tf.Assert, tf.assert_equal / assert_less /
assert_positive / assert_non_negative / assert_rank, tf.check_numerics and
tf.verify_tensor_all_finite.

An assertion is an op with no outputs: run it, or build what must be checked under
`tf.control_dependencies([assert_op])`.  When it fails it raises InvalidArgumentError
"assertion failed: [d0] [d1] ..." with each data entry summarized as tf.Print does.  Where
both sides are constants the comparison is also checked when the graph is built, as
TensorFlow does (the message then shows the values).  Messages follow TensorFlow 1.x's
compat.v1 functions.  Kernels live in kernels/logging_kernels.py.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import not_differentiable, register_gradient, register_op
from . import array_ops as _a
from . import math_ops as _m
from .constant_op import constant, identity, no_op
from .op_util import make_op, single

__all__ = ["Assert", "assert_equal", "assert_less", "assert_less_equal", "assert_positive", "assert_non_negative",
           "assert_rank", "check_numerics", "verify_tensor_all_finite"]


def _assert_spec(op: _g.Operation) -> list:
    c = op.inputs[0]
    if c.dtype != _dt.bool_:
        raise ValueError(f"Assert: condition must be bool, got {c.dtype.name}")
    if c.shape.rank not in (None, 0):
        raise ValueError(f"Assert: condition must be a scalar, got shape {c.shape}")
    return []


def _check_numerics_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if not x.dtype.is_floating:
        raise ValueError(f"check_numerics needs a floating-point tensor, got {x.dtype.name}")
    return [(x.dtype, x.shape)]


register_op("Assert", _assert_spec, stateful=True, host_only=True,
            doc="raises InvalidArgumentError showing the data when the condition is false")
register_op("CheckNumerics", _check_numerics_spec, stateful=True,
            doc="identity that raises InvalidArgumentError on NaN or Inf entries")
not_differentiable("Assert")

_GRAD_MESSAGE = "Not a number (NaN) or infinity (Inf) values detected in gradient. "


@register_gradient("CheckNumerics")
def _check_numerics_grad(op: _g.Operation, g: Any) -> list:
    # TensorFlow checks the gradient on its way back too
    g = g if isinstance(g, _g.Tensor) else _g.convert_to_tensor(g)
    return [check_numerics(g, _GRAD_MESSAGE + op.attrs["message"])]


def _graph_of(values: List[Any]) -> _g.Graph:
    for v in values:
        gg = getattr(v, "graph", None)
        if isinstance(gg, _g.Graph):
            return gg
    return _g.get_default_graph()


def Assert(condition: Any, data: Any, summarize: Optional[int] = None,  # noqa: N802 - TF name
           name: Optional[str] = None) -> _g.Operation:
    """An op that raises InvalidArgumentError "assertion failed: [d0] [d1] ..." when the scalar
    bool `condition` is False at run time; `data` (tensors or Python values) is shown with
    `summarize` entries each (default 3).  Returns the op (no outputs)."""
    items = list(data)
    g = _graph_of([condition] + items)
    with g.as_default():
        c = _g.convert_to_tensor(condition)
        ts = [_g.convert_to_tensor(d) for d in items]
    return make_op("Assert", [c] + ts, {"summarize": 3 if summarize is None else int(summarize)},
                   name=name or "Assert")


def _const_value(t: _g.Tensor) -> Optional[np.ndarray]:
    return np.asarray(t.op.attrs["value"]) if t.op.type == "Const" else None


def _static_text(d: Any) -> str:
    """An entry of the message of a check that failed when the graph was built."""
    if isinstance(d, _g.Tensor):
        v = _const_value(d)
        return str(v) if v is not None else repr(d)
    return str(d)


def _binary_assert(sym: str, scope: str, cmp: Callable, np_cmp: Callable, x: Any, y: Any, data: Any,
                   summarize: Optional[int], message: Optional[str], name: Optional[str]) -> _g.Operation:
    g = _graph_of([x, y])
    with g.as_default(), g.name_scope(name or scope):
        xt = _g.convert_to_tensor(x, name="x")
        yt = _g.convert_to_tensor(y, dtype=None if isinstance(y, _g.Tensor) else xt.dtype, name="y")
        if data is None:
            data = [f"Condition x {sym} y did not hold element-wise:", f"x ({xt.name}) = ", xt,
                    f"y ({yt.name}) = ", yt]
        if message is not None:
            data = [message] + list(data)
        xs, ys = _const_value(xt), _const_value(yt)
        if xs is not None and ys is not None and not np.all(np_cmp(xs, ys)):
            raise InvalidArgumentError("\n".join(_static_text(d) for d in data))
        condition = _m.reduce_all(cmp(xt, yt))
        return Assert(condition, data, summarize=summarize)


def assert_equal(x: Any, y: Any, data: Any = None, summarize: Optional[int] = None, message: Optional[str] = None,
                 name: Optional[str] = None) -> _g.Operation:
    """An op raising InvalidArgumentError unless x == y everywhere (with broadcasting)."""
    return _binary_assert("==", "assert_equal", _m.equal, np.equal, x, y, data, summarize, message, name)


def assert_less(x: Any, y: Any, data: Any = None, summarize: Optional[int] = None, message: Optional[str] = None,
                name: Optional[str] = None) -> _g.Operation:
    """An op raising InvalidArgumentError unless x < y everywhere (with broadcasting)."""
    return _binary_assert("<", "assert_less", _m.less, np.less, x, y, data, summarize, message, name)


def assert_less_equal(x: Any, y: Any, data: Any = None, summarize: Optional[int] = None,
                      message: Optional[str] = None, name: Optional[str] = None) -> _g.Operation:
    """An op raising InvalidArgumentError unless x <= y everywhere (with broadcasting)."""
    return _binary_assert("<=", "assert_less_equal", _m.less_equal, np.less_equal, x, y, data, summarize,
                          message, name)


def _message_prefix(message: Optional[str]) -> str:
    return f"{message}.  " if message else ""


def _sign_assert(sym: str, scope: str, check: Callable, x: Any, data: Any, summarize: Optional[int],
                 message: Optional[str], name: Optional[str]) -> _g.Operation:
    g = _graph_of([x])
    with g.as_default(), g.name_scope(name or scope):
        xt = _g.convert_to_tensor(x)
        if data is None:
            data = [_message_prefix(message), f"Condition x {sym} 0 did not hold element-wise:",
                    f"x ({xt.name}) = ", xt]
        zero = constant(np.zeros((), dtype=xt.dtype.np), name="zero")
        return check(zero, xt, data=data, summarize=summarize)


def assert_positive(x: Any, data: Any = None, summarize: Optional[int] = None, message: Optional[str] = None,
                    name: Optional[str] = None) -> _g.Operation:
    """An op raising InvalidArgumentError unless x > 0 everywhere."""
    return _sign_assert(">", "assert_positive", assert_less, x, data, summarize, message, name)


def assert_non_negative(x: Any, data: Any = None, summarize: Optional[int] = None, message: Optional[str] = None,
                        name: Optional[str] = None) -> _g.Operation:
    """An op raising InvalidArgumentError unless x >= 0 everywhere."""
    return _sign_assert(">=", "assert_non_negative", assert_less_equal, x, data, summarize, message, name)


def assert_rank(x: Any, rank: Any, data: Any = None, summarize: Optional[int] = None,
                message: Optional[str] = None, name: Optional[str] = None) -> _g.Operation:
    """Checks that x has rank `rank`: at once when x's rank is known statically (raising
    InvalidArgumentError, a ValueError, as TensorFlow raises ValueError; else returning a no-op),
    otherwise with an op raising InvalidArgumentError at run time."""
    g = _graph_of([x, rank])
    with g.as_default(), g.name_scope(name or "assert_rank"):
        xt = _g.convert_to_tensor(x)
        rt = rank if isinstance(rank, _g.Tensor) else constant(int(rank), dtype=_dt.int32, name="rank")
        if rt.shape.rank not in (None, 0):
            raise InvalidArgumentError(f"assert_rank: rank must be a scalar, got shape {rt.shape}")
        prefix = _message_prefix(message)
        want = _const_value(rt)
        have = xt.shape.rank
        if want is not None and have is not None:
            if have != int(want):
                raise InvalidArgumentError(f"{prefix}Tensor {xt.name} must have rank {int(want)}.  "
                                           f"Received rank {have}, shape {xt.shape}")
            return no_op(name="static_checks_determined_all_ok")
        if data is None:
            data = [prefix, f"Tensor {xt.name} must have rank", rt, "Received shape: ", _a.shape(xt)]
        condition = _m.equal(_m.cast(_a.rank(xt), rt.dtype), rt)
        return Assert(condition, data, summarize=summarize)


def check_numerics(tensor: Any, message: str, name: Optional[str] = None) -> _g.Tensor:
    """`tensor` unchanged, or InvalidArgumentError "<message> : Tensor had NaN values" (or Inf,
    or Inf and NaN) at run time.  Its gradient is the incoming gradient, checked the same way."""
    return single("CheckNumerics", [tensor], {"message": str(message)}, name=name or "CheckNumerics")


def verify_tensor_all_finite(t: Any = None, msg: Any = None, name: Optional[str] = None, x: Any = None,
                             message: Any = None) -> _g.Tensor:
    """t, after check_numerics(t, msg) has run (a control dependency): the gradient of the result
    is that of an identity.  `x` and `message` are TensorFlow 1.x's newer names of t and msg."""
    t = x if t is None else t
    msg = message if msg is None else msg
    if t is None or msg is None:
        raise InvalidArgumentError("verify_tensor_all_finite needs a tensor (t=) and a message (msg=)")
    tt = _g.convert_to_tensor(t)
    g = tt.graph
    with g.as_default(), g.name_scope(name or "VerifyFinite"):
        verify = check_numerics(tt, msg)
        with g.control_dependencies([verify.op]):
            return identity(tt, name="control_dependency")
