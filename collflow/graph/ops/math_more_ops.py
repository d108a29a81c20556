"""Elementwise functions TF1 has beyond the core math ops: expm1, the trigonometric and hyperbolic
functions and their inverses (tf.atan, tf.sinh, ...), and div_no_nan.  Kernels in
kernels/math_more_kernels.py; each gradient is the function's derivative."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from .. import graph as _g
from ..registry import register_gradient, register_op
from . import array_ops as _a
from . import math_ops as _m
from .op_util import single

# op type -> (tf name, d f / d x as a function of x and f(x))
_FUNCS: Dict[str, tuple] = {
    "Expm1": ("expm1", lambda x, y: y + 1.0),
    "Tan": ("tan", lambda x, y: 1.0 + _m.square(y)),
    "Atan": ("atan", lambda x, y: _m.reciprocal(1.0 + _m.square(x))),
    "Asin": ("asin", lambda x, y: _m.rsqrt(1.0 - _m.square(x))),
    "Acos": ("acos", lambda x, y: -_m.rsqrt(1.0 - _m.square(x))),
    "Sinh": ("sinh", lambda x, y: single("Cosh", [x])),
    "Cosh": ("cosh", lambda x, y: single("Sinh", [x])),
    "Asinh": ("asinh", lambda x, y: _m.rsqrt(_m.square(x) + 1.0)),
    # 1 / sinh(acosh x): the same as rsqrt(x^2 - 1) for real x >= 1, and for complex x the
    # branch TF's rule takes (sqrt(x^2 - 1) flips sign where Re x < 0)
    "Acosh": ("acosh", lambda x, y: _m.reciprocal(single("Sinh", [y])) if x.dtype.is_complex
              else _m.rsqrt(_m.square(x) - 1.0)),
    "Atanh": ("atanh", lambda x, y: _m.reciprocal(1.0 - _m.square(x))),
}

__all__ = [name for name, _ in _FUNCS.values()] + ["div_no_nan"]


def _make(op_type: str, tf_name: str, deriv: Callable) -> Callable:
    # complex inputs too, as TF's kernels (complex_more_ops.py's module doc)
    register_op(op_type, _m._float_or_complex_unary_spec)

    @register_gradient(op_type)
    def _grad(op: _g.Operation, g: Any) -> list:
        from .complex_ops import conj_if_complex
        g = g if isinstance(g, _g.Tensor) else _g.convert_to_tensor(g)
        # TF's convention for complex x: the incoming gradient times the conjugated derivative
        return [g * conj_if_complex(deriv(op.inputs[0], op.outputs[0]))]

    def fn(x: Any, name: Optional[str] = None) -> _g.Tensor:
        return single(op_type, [_g.convert_to_tensor(x)], name=name or op_type)
    fn.__name__ = tf_name
    fn.__doc__ = f"Elementwise {tf_name}(x) (TF1's tf.{tf_name}), floating-point or complex x."
    return fn


for _t, (_name, _d) in _FUNCS.items():
    globals()[_name] = _make(_t, _name, _d)


def div_no_nan(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """x / y, and 0 where y is 0 (tf.div_no_nan); the gradient is finite there too (the division
    runs on a safe denominator)."""
    x, y = _m._operands(x, y)
    g = x.graph
    with g.as_default(), g.name_scope(name or "div_no_nan"):
        zero = _m.equal(y, _a.zeros_like(y))
        safe = _a.where(zero, _a.ones_like(y), y)
        q = _m.divide(x, safe)
        return _a.where(zero, _a.zeros_like(q), q)
