"""Complex numbers beyond complex_ops.py: sign of a complex tensor, and the notes on which
elementwise ops take complex inputs.

The elementwise functions tan, sinh, cosh, tanh, sigmoid, asinh, acosh, atanh, asin, acos,
atan and expm1 take complex tensors as TF's kernels do (their ops are registered in
math_more_ops.py and nn_ops.py; each gradient is the incoming gradient times the conjugated
derivative, TF's convention).  squared_difference of complex x, y is TF's (x - y) conj(x - y)
(a complex result with a zero imaginary part; its gradient TF's 2 g (x - y), unconjugated).
"""
from __future__ import annotations

from typing import Any, Optional

from .. import graph as _g
from . import math_ops as _m

__all__ = ["complex_sign"]


def complex_sign(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """x / |x| elementwise, 0 where x is 0 (what tf.sign builds for a complex x: a no-NaN
    division by |x|, so its gradient is that composite's, not Sign's zero)."""
    from .complex_ops import complex_abs
    from .math_more_ops import div_no_nan
    x = _g.convert_to_tensor(_m._as_value(x))
    g = x.graph
    with g.as_default(), g.name_scope(name or "Sign"):
        return div_no_nan(x, _m.cast(complex_abs(x), x.dtype))
