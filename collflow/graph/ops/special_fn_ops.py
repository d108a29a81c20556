"""tf.math.special (TF 2.x's names under tensorflow.compat.v1): the Bessel functions
bessel_i0/i0e/i1/i1e (also tf.math.bessel_*), bessel_j0/j1, bessel_y0/y1, bessel_k0/k0e/k1/k1e,
dawsn, expint (Ei), fresnel_cos/fresnel_sin, spence; and tf.math.ndtri, erfinv, erfcinv.

Gradients are TensorFlow's (math_grad.py), written with the same ops so that edge values
agree: d i0e = i1e - sign(x) i0e, d i1 = i0 - i1/x (1 at 0), d k1 = -k0 - k1/x, d ei = e^x/x,
d spence = log(x)/(1 - x) (-1 at 1), d ndtri = sqrt(2 pi) exp(ndtri^2 / 2), ...
erfcinv is TF's composite -ndtri(x/2) / sqrt(2).  Kernels in kernels/special_fn_kernels.py.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional

from .. import graph as _g
from ..registry import register_gradient, register_op
from . import array_ops as _a
from . import math_ops as _m
from .op_util import dense as _dense, single

__all__ = ["bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e", "bessel_j0", "bessel_j1", "bessel_y0",
           "bessel_y1", "bessel_k0", "bessel_k0e", "bessel_k1", "bessel_k1e", "dawsn", "expint", "fresnel_cos",
           "fresnel_sin", "spence", "ndtri", "erfinv", "erfcinv"]

_OPS = ("BesselI0", "BesselI0e", "BesselI1", "BesselI1e", "BesselJ0", "BesselJ1", "BesselY0", "BesselY1",
        "BesselK0", "BesselK0e", "BesselK1", "BesselK1e", "Dawsn", "Expint", "FresnelCos", "FresnelSin", "Spence",
        "Ndtri", "Erfinv")
for _n in _OPS:
    register_op(_n, _m._float_unary_spec)


def _unary(op_type: str, default_name: str) -> Callable[..., _g.Tensor]:
    def fn(x: Any, name: Optional[str] = None) -> _g.Tensor:
        return single(op_type, [_g.convert_to_tensor(x)], name=name or default_name)
    fn.__name__ = default_name.lower()
    return fn


bessel_i0 = _unary("BesselI0", "bessel_i0")
bessel_i0e = _unary("BesselI0e", "bessel_i0e")
bessel_i1 = _unary("BesselI1", "bessel_i1")
bessel_i1e = _unary("BesselI1e", "bessel_i1e")
bessel_j0 = _unary("BesselJ0", "bessel_j0")
bessel_j1 = _unary("BesselJ1", "bessel_j1")
bessel_y0 = _unary("BesselY0", "bessel_y0")
bessel_y1 = _unary("BesselY1", "bessel_y1")
bessel_k0 = _unary("BesselK0", "bessel_k0")
bessel_k0e = _unary("BesselK0e", "bessel_k0e")
bessel_k1 = _unary("BesselK1", "bessel_k1")
bessel_k1e = _unary("BesselK1e", "bessel_k1e")
dawsn = _unary("Dawsn", "dawsn")
expint = _unary("Expint", "expint")
fresnel_cos = _unary("FresnelCos", "fresnel_cos")
fresnel_sin = _unary("FresnelSin", "fresnel_sin")
spence = _unary("Spence", "spence")
ndtri = _unary("Ndtri", "ndtri")
erfinv = _unary("Erfinv", "erfinv")
_DOCS = {
    bessel_i0: "The modified Bessel function I0(x).", bessel_i0e: "exp(-|x|) I0(x).",
    bessel_i1: "The modified Bessel function I1(x).", bessel_i1e: "exp(-|x|) I1(x).",
    bessel_j0: "The Bessel function J0(x).", bessel_j1: "The Bessel function J1(x).",
    bessel_y0: "The Bessel function Y0(x) (-inf for x <= 0).", bessel_y1: "The Bessel function Y1(x) (-inf for x <= 0).",
    bessel_k0: "The modified Bessel function K0(x) (inf for x <= 0).", bessel_k0e: "exp(x) K0(x).",
    bessel_k1: "The modified Bessel function K1(x) (inf for x <= 0).", bessel_k1e: "exp(x) K1(x).",
    dawsn: "Dawson's integral exp(-x^2) int_0^x exp(t^2) dt.", expint: "The exponential integral Ei(x) (NaN for x < 0).",
    fresnel_cos: "int_0^x cos(pi t^2 / 2) dt.", fresnel_sin: "int_0^x sin(pi t^2 / 2) dt.",
    spence: "Spence's function int_1^x log(t) / (1 - t) dt (NaN for x < 0).",
    ndtri: "The standard normal quantile: the inverse of ndtr.", erfinv: "The inverse of erf on (-1, 1).",
}
for _f, _d in _DOCS.items():
    _f.__doc__ = _d


def erfcinv(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """The inverse of erfc on (0, 2): TF's -ndtri(x / 2) / sqrt(2)."""
    xt = _g.convert_to_tensor(x)
    with xt.graph.as_default(), xt.graph.name_scope(name or "erfcinv"):
        return -ndtri(0.5 * xt) * math.sqrt(0.5)


def _x0_where(x: _g.Tensor, at_zero: float, other: _g.Tensor) -> _g.Tensor:
    """other, and at_zero where x == 0 (TF imputes the limits where its formula divides by x)."""
    return _a.where_v2(_m.equal(x, 0.0), _m.cast(at_zero, x.dtype), other)


def _grad(op_type: str) -> Callable[[Callable[[_g.Tensor, _g.Tensor], _g.Tensor]], None]:
    """Registers d(op)/dx given as a function of (x, y) times the incoming gradient."""
    def deco(partial: Callable[[_g.Tensor, _g.Tensor], _g.Tensor]) -> None:
        register_gradient(op_type)(lambda op, g: [_dense(g) * partial(op.inputs[0], op.outputs[0])])
    return deco


_grad("BesselI0")(lambda x, y: bessel_i1(x))
_grad("BesselI0e")(lambda x, y: bessel_i1e(x) - _m.sign(x) * y)
_grad("BesselI1")(lambda x, y: _x0_where(x, 1.0, bessel_i0(x) - y / x))
_grad("BesselI1e")(lambda x, y: _x0_where(x, 0.5, bessel_i0e(x) - y * (_m.sign(x) + _m.reciprocal(x))))
_grad("BesselK0")(lambda x, y: -bessel_k1(x))
_grad("BesselK0e")(lambda x, y: y - bessel_k1e(x))
_grad("BesselK1")(lambda x, y: -bessel_k0(x) - y / x)
_grad("BesselK1e")(lambda x, y: y * (1.0 - _m.reciprocal(x)) - bessel_k0e(x))
_grad("BesselJ0")(lambda x, y: -bessel_j1(x))
_grad("BesselJ1")(lambda x, y: _x0_where(x, 0.5, bessel_j0(x) - y / x))
_grad("BesselY0")(lambda x, y: -bessel_y1(x))
_grad("BesselY1")(lambda x, y: bessel_y0(x) - y / x)
_grad("Dawsn")(lambda x, y: 1.0 - 2.0 * x * y)
_grad("Expint")(lambda x, y: _m.exp(x) / x)
_grad("FresnelCos")(lambda x, y: _m.cos((math.pi / 2.0) * _m.square(x)))
_grad("FresnelSin")(lambda x, y: _m.sin((math.pi / 2.0) * _m.square(x)))
_grad("Spence")(lambda x, y: _a.where_v2(_m.equal(x, 1.0), -_a.ones_like(x), _m.log(x) / (1.0 - x)))
_grad("Ndtri")(lambda x, y: math.sqrt(2.0 * math.pi) * _m.exp(_m.square(y) / 2.0))
_grad("Erfinv")(lambda x, y: (math.sqrt(math.pi) / 2.0) * _m.exp(_m.square(y)))
