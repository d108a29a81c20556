"""TF1's remaining special functions: tf.math.igamma / igammac (regularized incomplete gamma),
tf.math.betainc, tf.math.zeta (Hurwitz), tf.math.polygamma of any integer order, and the
gamma sampler tf.random_gamma (tf.random.gamma).

Gradients are TensorFlow's: igamma and igammac w.r.t. a (IgammaGradA, itself without a
gradient, as in TF) and x; betainc w.r.t. x only (None for a and b); zeta w.r.t. q only;
polygamma w.r.t. x only; random_gamma w.r.t. alpha by implicit differentiation of the CDF
(d sample / d alpha = -(dP/dalpha) / (dP/dx) at the sample), as TF's RandomGammaGrad, and
w.r.t. beta through the division by it.
Kernels in kernels/special_more_kernels.py.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_gradient, register_op
from ..shape import TensorShape, broadcast_static
from . import array_ops as _a, constant_op as _c, math_extra_ops as _x, math_ops as _m
from .op_util import dense as _dense, single
from .random_ops import _shape_from_input, _shape_tensor, get_seed
from .special_ops import lgamma

__all__ = ["igamma", "igammac", "betainc", "zeta", "polygamma", "random_gamma"]


def _float_nary_spec(op: _g.Operation) -> list:
    dt = op.inputs[0].dtype
    shape = op.inputs[0].shape
    for t in op.inputs:
        if t.dtype != dt:
            raise ValueError(f"{op.type}: inputs have different dtypes: {dt.name} and {t.dtype.name}")
        shape = broadcast_static(shape, t.shape)
    if dt not in (_dt.float32, _dt.float64):
        raise ValueError(f"{op.type} needs float32 or float64 inputs, got {dt.name}")
    return [(dt, shape)]


def _betainc_spec(op: _g.Operation) -> list:
    # TF's rule: a, b and x broadcast only when each is a scalar or all shapes are equal
    shapes = [t.shape for t in op.inputs]
    known = [s for s in shapes if s.rank is not None and s.rank > 0 and s.is_fully_defined()]
    if any(s != known[0] for s in known[1:]):
        raise ValueError(f"betainc: shapes of a, b and x must be equal (or scalars), got {shapes}")
    return _float_nary_spec(op)


for _n in ("Igamma", "Igammac", "IgammaGradA", "Zeta", "Polygamma"):
    register_op(_n, _float_nary_spec)
register_op("Betainc", _betainc_spec)
# IgammaGradA: no gradient registered (LookupError through it, as TF)


def _igamma_partials(op: _g.Operation) -> tuple:
    a, x = op.inputs
    # dP/dx = x^(a-1) e^-x / Gamma(a)
    dx = _m.exp(-x + (a - 1.0) * _m.log(x) - lgamma(a))
    da = single("IgammaGradA", [a, x])
    return a, x, da, dx


@register_gradient("Igamma")
def _igamma_grad(op: _g.Operation, g: Any) -> list:
    a, x, da, dx = _igamma_partials(op)
    g = _dense(g)
    return [_m.sum_to_shape_of(g * da, a), _m.sum_to_shape_of(g * dx, x)]


@register_gradient("Igammac")
def _igammac_grad(op: _g.Operation, g: Any) -> list:
    a, x, da, dx = _igamma_partials(op)
    g = _dense(g)
    return [_m.sum_to_shape_of(-g * da, a), _m.sum_to_shape_of(-g * dx, x)]


@register_gradient("Betainc")
def _betainc_grad(op: _g.Operation, g: Any) -> list:
    a, b, x = op.inputs
    # dI/dx = x^(a-1) (1-x)^(b-1) / B(a, b); TF has no gradient for a and b
    log_beta = lgamma(a) + lgamma(b) - lgamma(a + b)
    dx = _m.exp((a - 1.0) * _m.log(x) + (b - 1.0) * _m.log1p(-x) - log_beta)
    return [None, None, _m.sum_to_shape_of(_dense(g) * dx, x)]


@register_gradient("Zeta")
def _zeta_grad(op: _g.Operation, g: Any) -> list:
    s, q = op.inputs
    # d zeta(s, q) / dq = -s zeta(s + 1, q); TF has none for s
    dq = -s * single("Zeta", [s + 1.0, q])
    return [None, _m.sum_to_shape_of(_dense(g) * dq, q)]


@register_gradient("Polygamma")
def _polygamma_grad(op: _g.Operation, g: Any) -> list:
    n, x = op.inputs
    dx = single("Polygamma", [n + 1.0, x])
    return [None, _m.sum_to_shape_of(_dense(g) * dx, x)]


def _pair(a: Any, x: Any) -> tuple:
    """Two float operands of one dtype: a Python number takes the dtype of the other operand
    when that is a tensor or a NumPy value."""
    def typed(v: Any) -> bool:
        return isinstance(v, (_g.Tensor, np.ndarray, np.generic)) or hasattr(v, "handle")
    if typed(a) or not typed(x):
        at = _g.convert_to_tensor(a)
        return at, _g.convert_to_tensor(x, dtype=at.dtype)
    xt = _g.convert_to_tensor(x)
    return _g.convert_to_tensor(a, dtype=xt.dtype), xt


def igamma(a: Any, x: Any, name: Optional[str] = None) -> _g.Tensor:
    """The regularized lower incomplete gamma P(a, x) = gamma(a, x) / Gamma(a)."""
    at, xt = _pair(a, x)
    return single("Igamma", [at, xt], name=name or "Igamma")


def igammac(a: Any, x: Any, name: Optional[str] = None) -> _g.Tensor:
    """The regularized upper incomplete gamma Q(a, x) = 1 - P(a, x)."""
    at, xt = _pair(a, x)
    return single("Igammac", [at, xt], name=name or "Igammac")


def betainc(a: Any, b: Any, x: Any, name: Optional[str] = None) -> _g.Tensor:
    """The regularized incomplete beta I_x(a, b)."""
    at, xt = _pair(a, x)
    bt = _g.convert_to_tensor(b, dtype=at.dtype)
    return single("Betainc", [at, bt, xt], name=name or "Betainc")


def zeta(x: Any, q: Any, name: Optional[str] = None) -> _g.Tensor:
    """Hurwitz's zeta: sum over k >= 0 of (k + q)^-x."""
    xt, qt = _pair(x, q)
    return single("Zeta", [xt, qt], name=name or "Zeta")


def polygamma(a: Any, x: Any, name: Optional[str] = None) -> _g.Tensor:
    """The a-th derivative of digamma at x (a a non-negative integer value; NaN otherwise)."""
    at, xt = _pair(a, x)
    return single("Polygamma", [at, xt], name=name or "Polygamma")


# -- the gamma sampler -----------------------------------------------------------------------

def _random_gamma_spec(op: _g.Operation) -> list:
    shape, alpha = op.inputs
    dt = op.attrs["dtype"]
    if alpha.dtype != dt or dt not in (_dt.float16, _dt.float32, _dt.float64):
        raise ValueError(f"RandomGamma needs a float alpha of the op's dtype, got {alpha.dtype.name}")
    lead, tail = _shape_from_input(shape), alpha.shape
    if lead.rank is None or tail.rank is None:
        return [(dt, TensorShape(None))]
    return [(dt, TensorShape(list(lead.dims) + list(tail.dims)))]


register_op("RandomGamma", _random_gamma_spec, stateful=True)


# the op itself has no gradient (its stream moves on every run, so no finite-difference check
# could see one); random_gamma attaches the implicit one with deterministic ops, below
not_differentiable("RandomGamma")


def _implicit_alpha_grad(alpha: _g.Tensor, s: _g.Tensor) -> _g.Tensor:
    """s, with the gradient d s / d alpha = -(dP/dalpha) / (dP/ds) at (alpha, s) (P(alpha, s) = u
    held fixed) attached by custom_gradient: the forward pass only passes s through, the
    IgammaGradA work happens in a backward pass that asks for it."""
    from ..custom_gradient import custom_gradient   # (it imports the ops package)

    @custom_gradient
    def attach(a: _g.Tensor) -> Any:
        def grad(dy: Any) -> _g.Tensor:
            log_pdf = (a - 1.0) * _m.log(s) - s - lgamma(a)
            ds = -single("IgammaGradA", [a + _a.zeros_like(s), s]) * _m.exp(-log_pdf)
            ds = _a.where(_x.is_finite(ds), ds, _a.zeros_like(ds))    # tiny / huge samples: 0, not NaN
            return _m.sum_to_shape_of(_dense(dy) * ds, a)
        return _c.identity(s), grad
    return attach(alpha)


def random_gamma(shape: Any, alpha: Any, beta: Any = None, dtype: Any = _dt.float32,
                 seed: Optional[int] = None, name: Optional[str] = None) -> _g.Tensor:
    """Gamma(alpha, rate=beta) samples of shape `shape + broadcast(alpha, beta).shape`
    (beta defaults to 1).  Differentiable w.r.t. alpha and beta (implicit reparameterization)."""
    dt = _dt.as_dtype(dtype)
    g = _g.get_default_graph()
    with g.as_default(), g.name_scope(name or "random_gamma"):
        shp = _shape_tensor(shape, "random_gamma")
        at = _g.convert_to_tensor(alpha, dtype=dt)
        bt = None if beta is None else _g.convert_to_tensor(beta, dtype=dt)
        if bt is not None:
            at = at + _a.zeros_like(bt)        # alpha broadcast against beta
        s1, s2 = get_seed(seed, g)
        sample = single("RandomGamma", [shp, at], {"dtype": dt, "seed": s1, "seed2": s2})
        if dt != _dt.float16:
            sample = _implicit_alpha_grad(at, sample)
        if bt is not None:
            sample = sample / bt
        return _m.maximum(sample, float(np.finfo(dt.np).tiny))

