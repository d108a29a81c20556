"""Special functions TF1 programs use in likelihoods and priors: tf.lgamma, tf.digamma,
tf.erfc, tf.lbeta and tf.math.polygamma (orders 0 and 1 here, the others in
special_more_ops.py), each with its derivative as the gradient (lgamma' = digamma,
digamma' = polygamma(1, .), polygamma(1, .)' = polygamma(2, .), erfc' = -2/sqrt(pi) exp(-x^2)).  Kernels compute in float64.
Kernels in kernels/special_kernels.py."""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .. import graph as _g
from ..registry import register_gradient, register_op
from . import math_ops as _m
from .array_util import _const_value
from .op_util import dense as _dense, single

__all__ = ["lgamma", "digamma", "erfc", "lbeta", "polygamma"]


for _n in ("Lgamma", "Digamma", "Trigamma", "Erfc"):
    register_op(_n, _m._float_unary_spec)


register_gradient("Lgamma")(lambda op, g: [_dense(g) * single("Digamma", [op.inputs[0]])])
register_gradient("Digamma")(lambda op, g: [_dense(g) * single("Trigamma", [op.inputs[0]])])
register_gradient("Erfc")(lambda op, g: [_dense(g) * (-2.0 / math.sqrt(math.pi)) * _m.exp(-_m.square(op.inputs[0]))])

# trigamma' = polygamma(2, .), the general op (graph/ops/special_more_ops.py)
register_gradient("Trigamma")(lambda op, g: [_dense(g) * single("Polygamma", [_g.convert_to_tensor(
    2.0, dtype=op.inputs[0].dtype), op.inputs[0]])])


def lgamma(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """log|Gamma(x)| elementwise (+inf at 0, -1, -2, ...)."""
    return single("Lgamma", [_g.convert_to_tensor(x)], name=name or "Lgamma")


def digamma(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """psi(x) = d lgamma(x) / dx elementwise (NaN at 0, -1, -2, ...)."""  # (float32: computed in float64)
    return single("Digamma", [_g.convert_to_tensor(x)], name=name or "Digamma")


def erfc(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """1 - erf(x), accurate where erf(x) is near 1."""
    return single("Erfc", [_g.convert_to_tensor(x)], name=name or "Erfc")


def polygamma(a: Any, x: Any, name: Optional[str] = None) -> _g.Tensor:
    """The a-th derivative of digamma at x.  Orders 0 and 1 known when the graph is built are
    Digamma and Trigamma; any other order is the general Polygamma op (special_more_ops.py)."""
    order = _const_value(a) if isinstance(a, _g.Tensor) else a
    if order is None or np.ndim(order) != 0 or float(order) not in (0.0, 1.0):
        from .special_more_ops import polygamma as _general  # (it imports this module)
        return _general(a, x, name=name)
    xt = _g.convert_to_tensor(x)
    if float(order) == 0.0:
        return digamma(xt, name=name)
    return single("Trigamma", [xt], name=name or "Polygamma")


def lbeta(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """log|Beta(x)| over the last axis: sum(lgamma(x)) - lgamma(sum(x))."""
    xt = _g.convert_to_tensor(x)
    with xt.graph.as_default(), xt.graph.name_scope(name or "lbeta"):
        return _m.reduce_sum(lgamma(xt), -1) - lgamma(_m.reduce_sum(xt, -1))
