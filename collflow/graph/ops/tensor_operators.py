"""TF1's bit operators on tensors: `&`, `|`, `^` and `~` are logical on bool tensors and
bitwise on integer tensors (tf.Tensor.__and__ is math_ops.and_ etc.), with their reflected
forms; the Python operand takes the tensor's dtype by the conversion rule of dtype_rules.py
(`b | 1` is a TypeError: an int is not a bool)."""
from __future__ import annotations

from typing import Any, Callable, Optional

from ... import dtypes as _dt
from .. import graph as _g
from . import bitwise_ops, math_ops

__all__ = ["and_", "or_", "xor_", "invert_"]


def _pick(x: Any, y: Any, logical: Callable, bitwise: Callable, name: str) -> _g.Tensor:
    x, y = math_ops._operands(x, y)
    if x.dtype == _dt.bool_:
        return logical(x, y, name=name)
    if x.dtype.is_integer:
        return bitwise(x, y, name=name)
    raise TypeError(f"operator {name!r} needs bool or integer tensors, got {x.dtype.name}")


def _logical_xor(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    # TF's composite: (x or y) and not (x and y)
    return math_ops.logical_and(math_ops.logical_or(x, y), math_ops.logical_not(math_ops.logical_and(x, y)),
                                name=name)


def and_(x: Any, y: Any) -> _g.Tensor:
    """x & y: logical_and of bools, bitwise_and of integers."""
    return _pick(x, y, math_ops.logical_and, bitwise_ops.bitwise_and, "and")


def or_(x: Any, y: Any) -> _g.Tensor:
    """x | y: logical_or of bools, bitwise_or of integers."""
    return _pick(x, y, math_ops.logical_or, bitwise_ops.bitwise_or, "or")


def xor_(x: Any, y: Any) -> _g.Tensor:
    """x ^ y: logical_xor of bools, bitwise_xor of integers."""
    return _pick(x, y, _logical_xor, bitwise_ops.bitwise_xor, "xor")


def invert_(x: Any) -> _g.Tensor:
    """~x: logical_not of a bool tensor, bitwise invert of an integer one."""
    x = _g.convert_to_tensor(math_ops._as_value(x))
    if x.dtype == _dt.bool_:
        return math_ops.logical_not(x)
    if x.dtype.is_integer:
        return bitwise_ops.invert(x)
    raise TypeError(f"operator '~' needs a bool or integer tensor, got {x.dtype.name}")


_g._OPERATORS.update({"and_": and_, "or_": or_, "xor_": xor_, "invert_": invert_})
