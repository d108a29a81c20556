"""Kernels of graph/ops/math_more_ops.py (the array library's own elementwise functions) and of
nan_safe_ops.py's MulNoNan."""
from __future__ import annotations

from .registry import register_kernel

for _t, _f in (("Expm1", "expm1"), ("Tan", "tan"), ("Atan", "arctan"), ("Asin", "arcsin"), ("Acos", "arccos"),
               ("Sinh", "sinh"), ("Cosh", "cosh"), ("Asinh", "arcsinh"), ("Acosh", "arccosh"), ("Atanh", "arctanh")):
    register_kernel(_t)(lambda op, ctx, _f=_f: getattr(ctx.xp, _f))


@register_kernel("MulNoNan")
def _mul_no_nan(op, ctx):  # type: ignore[no-untyped-def]
    """x * y, and 0 where y == 0 (graph/ops/nan_safe_ops.py)."""
    xp = ctx.xp

    def mul_no_nan(x, y):  # type: ignore[no-untyped-def]
        # x zeroed first where y is 0: no inf * 0 (nan) computed at all
        return xp.multiply(xp.where(y == 0, xp.zeros((), dtype=x.dtype), x), y)
    return mul_no_nan
