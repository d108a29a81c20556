"""tf.bitwise: bitwise_and, bitwise_or, bitwise_xor, invert, left_shift, right_shift on
integer tensors (NumPy broadcasting; both inputs of one integer dtype), none differentiable.

right_shift is arithmetic for signed types (the sign bit is copied), logical for unsigned,
as TensorFlow's; a shift by a negative amount or by the type's width or more is, as in
TensorFlow, implementation-defined.
"""
from __future__ import annotations

from typing import Any, List, Optional

from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import broadcast_static
from .math_ops import _operands
from .op_util import single

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"]

_BINARY = ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "LeftShift", "RightShift")


def _int_binary_spec(op: _g.Operation) -> List[Any]:
    a, b = op.inputs
    if a.dtype != b.dtype:
        raise ValueError(f"{op.type}: inputs have different dtypes: {a.dtype.name} and {b.dtype.name}")
    if not a.dtype.is_integer:
        raise ValueError(f"{op.type} needs integer inputs, got {a.dtype.name}")
    return [(a.dtype, broadcast_static(a.shape, b.shape))]


def _int_unary_spec(op: _g.Operation) -> List[Any]:
    x = op.inputs[0]
    if not x.dtype.is_integer:
        raise ValueError(f"{op.type} needs an integer input, got {x.dtype.name}")
    return [(x.dtype, x.shape)]


for _n in _BINARY:
    register_op(_n, _int_binary_spec)
register_op("Invert", _int_unary_spec)
not_differentiable(*_BINARY, "Invert")


def bitwise_and(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return single("BitwiseAnd", list(_operands(x, y)), name=name or "BitwiseAnd")


def bitwise_or(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return single("BitwiseOr", list(_operands(x, y)), name=name or "BitwiseOr")


def bitwise_xor(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return single("BitwiseXor", list(_operands(x, y)), name=name or "BitwiseXor")


def invert(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """~x: every bit flipped (for signed types -x - 1, for unsigned max - x)."""
    return single("Invert", [x], name=name or "Invert")


def left_shift(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return single("LeftShift", list(_operands(x, y)), name=name or "LeftShift")


def right_shift(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return single("RightShift", list(_operands(x, y)), name=name or "RightShift")
