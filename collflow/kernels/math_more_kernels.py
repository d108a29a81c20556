"""Kernels of graph/ops/math_more_ops.py: the array library's own elementwise functions."""
from __future__ import annotations

from .registry import register_kernel

for _t, _f in (("Expm1", "expm1"), ("Tan", "tan"), ("Atan", "arctan"), ("Asin", "arcsin"), ("Acos", "arccos"),
               ("Sinh", "sinh"), ("Cosh", "cosh"), ("Asinh", "arcsinh"), ("Acosh", "arccosh"), ("Atanh", "arctanh")):
    register_kernel(_t)(lambda op, ctx, _f=_f: getattr(ctx.xp, _f))
