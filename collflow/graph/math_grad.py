"""Gradients of the math ops: one rule per op, built from the same ops.

`_ub(g, x)` (unbroadcast) reduces a gradient of a broadcasting op back to the shape of
the input it belongs to.
"""
from __future__ import annotations

from typing import Any

from .registry import register_gradient as reg
from .ops import math_ops as m
from .ops import array_ops as a
# TF's rules for complex inputs conjugate the derivative; for real tensors this is the identity
from .ops.complex_ops import conj_if_complex as _cj


def _ub(g: Any, x: Any, other: Any = None) -> Any:
    """Reduces `g` to x's shape; static when the broadcast pattern is known, else an op."""
    axes = _static_reduce_axes(x, other) if other is not None else None
    if axes is None:
        return m.sum_to_shape_of(g, x)
    lead, ones = axes
    if lead:
        g = m.reduce_sum(g, lead)
    if ones:
        g = m.reduce_sum(g, ones, keepdims=True)
    return g


def _static_reduce_axes(x: Any, other: Any) -> Any:
    """(leading axes, size-1 axes) to sum so a broadcast gradient matches x, or None if unknown.

    Avoids keeping x alive until the backward pass just to learn its shape.
    """
    xr, orank = x.shape.rank, other.shape.rank
    if xr is None or orank is None:
        return None
    n = max(xr, orank)
    lead = tuple(range(n - xr))
    xd = list(x.shape.dims)
    od = [None] * 0 + list(other.shape.dims)
    od = [1] * (n - orank) + od
    ones = []
    for i, d in enumerate(xd):
        o = od[n - xr + i]
        if d == 1:
            ones.append(i)  # harmless even when the output dim is 1 too
        elif d is None and o != 1:
            return None  # x's dim may be 1 while the other's is larger
    return lead, tuple(ones)


# -- binary, broadcasting ---------------------------------------------------------------
reg("Add")(lambda op, g: [_ub(g, *op.inputs), _ub(g, *op.inputs[::-1])])
reg("Sub")(lambda op, g: [_ub(g, *op.inputs), _ub(-g, *op.inputs[::-1])])
# the products are named "Mul", "Mul_1" as TF1's _MulGrad's (gradients/<op>_grad/Mul_1:0)
reg("Mul")(lambda op, g: [_ub(m.multiply(g, _cj(op.inputs[1]), name="Mul"), *op.inputs),
                          _ub(m.multiply(_cj(op.inputs[0]), g, name="Mul"), *op.inputs[::-1])])
reg("RealDiv")(lambda op, g: [_ub(g / _cj(op.inputs[1]), *op.inputs),
                              _ub(-g * _cj(op.outputs[0]) / _cj(op.inputs[1]), *op.inputs[::-1])])
reg("Maximum")(lambda op, g: _select_grad(op, g, m.greater_equal(op.inputs[0], op.inputs[1])))
reg("Minimum")(lambda op, g: _select_grad(op, g, m.less_equal(op.inputs[0], op.inputs[1])))
reg("SquaredDifference")(lambda op, g: _sqdiff_grad(op, g))


@reg("Pow")
def _pow_grad(op: Any, g: Any) -> list:
    x, y = op.inputs
    z = op.outputs[0]
    if x.dtype.is_complex:
        return _complex_pow_grad(op, g)
    gx = g * y * m.pow(x, y - a.ones_like(y))
    # d/dy x**y = x**y log x, defined as 0 where x <= 0 (as TensorFlow does)
    safe_log = a.where(m.greater(x, a.zeros_like(x)), m.log(a.where(m.greater(x, a.zeros_like(x)), x, a.ones_like(x))),
                       a.zeros_like(x))
    gy = g * z * safe_log
    return [_ub(gx, x, y), _ub(gy, y, x)]


def _complex_pow_grad(op: Any, g: Any) -> list:
    # TF: the conjugated derivatives, and log x taken as 0 only at x == 0 (complex log is defined elsewhere)
    x, y, z = _cj(op.inputs[0]), _cj(op.inputs[1]), _cj(op.outputs[0])
    gx = g * y * m.pow(x, y - a.ones_like(y))
    nz = m.not_equal(x, a.zeros_like(x))
    log_x = a.where(nz, m.log(a.where(nz, x, a.ones_like(x))), a.zeros_like(x))
    return [_ub(gx, op.inputs[0], op.inputs[1]), _ub(g * z * log_x, op.inputs[1], op.inputs[0])]


def _select_grad(op: Any, g: Any, mask: Any) -> list:
    x, y = op.inputs
    zeros = a.zeros_like(g)
    return [_ub(a.where(mask, g, zeros), x, y), _ub(a.where(mask, zeros, g), y, x)]


def _sqdiff_grad(op: Any, g: Any) -> list:
    x, y = op.inputs
    # complex too: TF's rule 2 g (x - y), unconjugated, for its (x - y) conj(x - y)
    d = g * (2.0 * (x - y)) if (x.dtype.is_floating or x.dtype.is_complex) else g * (x - y)
    return [_ub(d, x, y), _ub(-d, y, x)]


# -- unary -----------------------------------------------------------------------------
reg("Neg")(lambda op, g: [-g])
reg("Exp")(lambda op, g: [g * _cj(op.outputs[0])])
reg("Log")(lambda op, g: [g / _cj(op.inputs[0])])
reg("Log1p")(lambda op, g: [g / (_cj(op.inputs[0]) + 1.0)])
reg("Sqrt")(lambda op, g: [g * 0.5 / _cj(op.outputs[0])])
# TF's RsqrtGrad: -dy y^3 / 2, which keeps the sign of 1/sqrt(-0) = -inf
reg("Rsqrt")(lambda op, g: [g * -0.5 * _cj(op.outputs[0]) * m.square(_cj(op.outputs[0]))])
reg("Reciprocal")(lambda op, g: [-g * m.square(_cj(op.outputs[0]))])
reg("Square")(lambda op, g: [g * 2.0 * _cj(op.inputs[0])])
reg("Abs")(lambda op, g: [g * m.sign(op.inputs[0])])
# sign is piecewise constant: a zero gradient (TF1 registers zeros, so |x| has a zero second derivative)
reg("Sign")(lambda op, g: [a.zeros_like(op.inputs[0])])
reg("Sin")(lambda op, g: [g * _cj(m.cos(op.inputs[0]))])
reg("Cos")(lambda op, g: [-g * _cj(m.sin(op.inputs[0]))])
# between floating and complex types both ways (complex -> real: the real part, as TF)
reg("Cast")(lambda op, g: [m.cast(g, op.inputs[0].dtype)
                           if op.inputs[0].dtype.is_floating or op.inputs[0].dtype.is_complex else None])
reg("ClipByValue")(lambda op, g: _clip_grad(op, g))


def _clip_grad(op: Any, g: Any) -> list:
    x, lo, hi = op.inputs
    inside = m.logical_and(m.greater_equal(x, lo), m.less_equal(x, hi))
    return [a.where(inside, g, a.zeros_like(g)), None, None]


# -- n-ary, matmul ------------------------------------------------------------------------
reg("AddN")(lambda op, g: [g] * len(op.inputs))


@reg("MatMul")
def _matmul_grad(op: Any, g: Any) -> list:
    x, y = _cj(op.inputs[0]), _cj(op.inputs[1])
    ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
    if not ta and not tb:
        gx, gy = m.matmul(g, y, transpose_b=True), m.matmul(x, g, transpose_a=True)
    elif not ta and tb:
        gx, gy = m.matmul(g, y), m.matmul(g, x, transpose_a=True)
    elif ta and not tb:
        gx, gy = m.matmul(y, g, transpose_b=True), m.matmul(x, g)
    else:
        gx, gy = m.matmul(y, g, transpose_a=True, transpose_b=True), m.matmul(g, x, transpose_a=True, transpose_b=True)
    # batched matmul broadcasts leading dims
    if (x.shape.rank or 0) > 2 or (y.shape.rank or 0) > 2:
        gx, gy = _ub(gx, op.inputs[0]), _ub(gy, op.inputs[1])
    return [gx, gy]


# -- reductions -------------------------------------------------------------------------
reg("Sum")(lambda op, g: [a.broadcast_like(_keep(op, g), op.inputs[0])])
reg("Mean")(lambda op, g: [a.broadcast_like(_keep(op, g), op.inputs[0]) / m.cast(a.size_ratio(op.inputs[0], op.outputs[0]), g.dtype)])
@reg("Prod")
def _prod_grad(op: Any, g: Any) -> list:
    """d prod / d x_i is the product of the other entries of x_i's group: the exclusive cumulative
    products from the left and from the right, multiplied (TF1's way), so zeros in x give the
    right gradient (dividing the product by x_i gave nan there).  With static sizes of the
    reduced axes the permutation and the sizes are built in; otherwise (an unknown rank or
    size) they are computed at run time (dynamic_reduce_ops._prod_others)."""
    from .ops import scan_ops
    from .ops.constant_op import constant
    from .ops.dynamic_reduce_ops import _prod_others
    from .ops.misc_ops import range as _range
    x = op.inputs[0]
    rank = x.shape.rank
    gb = a.broadcast_like(_keep(op, g), x)
    if rank is None:
        ax = op.attrs["axis"]
        axes_t = _range(0, a.rank(x)) if ax is None else constant([ax] if isinstance(ax, int) else list(ax),
                                                                   dtype="int32")
        return [gb * _prod_others(x, axes_t)]
    from .ops.op_util import axis_list
    axes = axis_list(op.attrs["axis"], rank)
    red = list(range(rank)) if axes is None else sorted(axes)
    if not red:
        return [gb]
    if any(x.shape.dims[i] is None for i in red):
        return [gb * _prod_others(x, constant(red, dtype="int32"))]
    other = [i for i in range(rank) if i not in red]
    perm = other + red
    n_red = 1
    for i in red:
        n_red *= int(x.shape.dims[i])
    if n_red == 0:  # an empty x: its gradient is empty too (a [-1, 0] reshape would be ambiguous)
        return [a.zeros_like(x)]
    xt = a.transpose(x, perm)
    flat = a.reshape(xt, [-1, n_red])
    rest = _cj(scan_ops.cumprod(flat, axis=1, exclusive=True) *
               scan_ops.cumprod(flat, axis=1, exclusive=True, reverse=True))
    inverse = [perm.index(i) for i in range(rank)]
    return [gb * a.transpose(a.reshape(rest, a.shape(xt)), inverse)]
reg("Max")(lambda op, g: _minmax_grad(op, g))
reg("Min")(lambda op, g: _minmax_grad(op, g))


def _keep(op: Any, t: Any) -> Any:
    """Re-inserts reduced axes as size 1 so the value broadcasts against the input."""
    if op.attrs["keepdims"]:
        return t
    return a.expand_reduced(t, op.inputs[0], op.attrs["axis"])


def _minmax_grad(op: Any, g: Any) -> list:
    x = op.inputs[0]
    y = a.broadcast_like(_keep(op, op.outputs[0]), x)
    mask = m.cast(m.equal(x, y), g.dtype)
    count = a.broadcast_like(_keep(op, _count(op, mask)), x)
    return [a.broadcast_like(_keep(op, g), x) * mask / count]


def _count(op: Any, mask: Any) -> Any:
    c = m.reduce_sum(mask, op.attrs["axis"], keepdims=op.attrs["keepdims"])
    return c


reg("SumToShapeOf")(lambda op, g: [a.broadcast_like(g, op.inputs[0]), None])
