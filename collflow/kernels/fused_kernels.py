"""Fused kernels the executor substitutes for an (op, the op computing its input) pair.

NumPy's matmul always writes a fresh product; its BLAS (kernels/blas.py) can instead
accumulate into an existing array, C = alpha * op(A) @ op(B) + beta * C.  A dense layer's
weight update uses that:

- ApplyGradientDescent(var, lr, MatMul(a, b)): var += (-lr) * op(a) @ op(b) as one BLAS call
  into the variable.  The gradient (as large as the weight) is never allocated, the update's
  own pass over the weight disappears, and so does the pass in which BLAS zeroes a fresh
  output (beta = 0).  Measured on the 784-1024-1024-10 MLP step (2 cores): 25.2 -> 21.7 ms.
- ApplyMomentum(var, accum, lr, momentum, MatMul(a, b)) (not Nesterov): accum = momentum *
  accum + op(a) @ op(b) as one BLAS call (beta = momentum), then var -= lr * accum.

The executor fuses a pair only when the product feeds nothing else and is not fetched
(runtime/executor.py); the results equal the unfused ops' up to rounding (the product is
summed onto the variable inside BLAS instead of after it).  When NumPy's BLAS cannot be
called directly, the kernels compute the product with NumPy and apply it (the unfused
arithmetic).  Fusing a forward product with its bias (output prefilled with the bias,
beta = 1) and a bias gradient with its update (gemv against ones) measured no faster on
that step, so neither is done.

One fusion is not a product (and runs on any device): ReluGrad(MaxPoolGrad(r, y, g), r), a
conv -> ReLU -> max-pool layer's backward, applies ReLU's mask to the pooled gradient
instead of the input-sized one (MNIST tutorial's conv net, 1 thread: the two ops 4.7 ->
2.4 ms for the first layer).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..errors import InvalidArgumentError
from . import blas
from .nn_kernels import _max_pool_grad, _needs_tf_argmax
from .registry import KernelContext, register_fusion
from .training_kernels import _axpy, _scale

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _matrix_product(mm: Any) -> Optional[tuple]:
    """(transpose_a, transpose_b) of a MatMul of two matrices (static rank 2), else None."""
    a, b = mm.inputs
    if a.shape.rank != 2 or b.shape.rank != 2 or a.dtype.np not in _FLOATS or b.dtype != a.dtype:
        return None
    return bool(mm.attrs.get("transpose_a", False)), bool(mm.attrs.get("transpose_b", False))


def _product(a: Any, ta: bool, b: Any, tb: bool) -> Any:
    return np.matmul(a.T if ta else a, b.T if tb else b)


@register_fusion("ApplyGradientDescent", "MatMul")
def _matmul_gradient_descent(mm: Any, apply: Any, k: int, ctx: KernelContext) -> Optional[Callable]:
    """ApplyGradientDescent(var, lr, MatMul(a, b)) -> fn(var, lr, a, b): var -= lr * op(a) @ op(b)."""
    flags = _matrix_product(mm)
    if ctx.xp is not np or k != 2 or flags is None:
        return None
    ta, tb = flags

    def matmul_gd(st: Any, lr: Any, a: Any, b: Any) -> None:
        alpha = -float(lr)
        with st.lock:
            v = st.writable(apply)
            if blas.gemm(a, ta, b, tb, v, alpha, 1.0):
                return
            g = _product(a, ta, b, tb)
            if g.shape != v.shape:
                raise InvalidArgumentError(
                    f"{apply.type}: gradient of shape {tuple(g.shape)} does not match variable {st.name!r} "
                    f"of shape {tuple(v.shape)}", apply)
            _axpy(np, v, alpha, g)
    return matmul_gd


@register_fusion("ApplyMomentum", "MatMul")
def _matmul_momentum(mm: Any, apply: Any, k: int, ctx: KernelContext) -> Optional[Callable]:
    """ApplyMomentum(var, accum, lr, momentum, MatMul(a, b)), not Nesterov ->
    fn(var, accum, lr, momentum, a, b): accum = momentum * accum + op(a) @ op(b) as one BLAS
    call into the accumulator, then var -= lr * accum."""
    flags = _matrix_product(mm)
    if ctx.xp is not np or k != 4 or flags is None or apply.attrs.get("use_nesterov", False):
        return None
    ta, tb = flags

    def matmul_momentum(st: Any, acc_st: Any, lr: Any, momentum: Any, a: Any, b: Any) -> None:
        mom = float(momentum)
        with st.lock:
            v = st.writable(apply)
            acc = acc_st.writable(apply)
            if acc.shape != v.shape:
                raise InvalidArgumentError(
                    f"{apply.type}: slot {acc_st.name!r} of shape {tuple(acc.shape)} does not match variable "
                    f"{st.name!r} of shape {tuple(v.shape)}", apply)
            if not blas.gemm(a, ta, b, tb, acc, 1.0, mom):
                g = _product(a, ta, b, tb)
                if g.shape != v.shape:
                    raise InvalidArgumentError(
                        f"{apply.type}: gradient of shape {tuple(g.shape)} does not match variable {st.name!r} "
                        f"of shape {tuple(v.shape)}", apply)
                _momentum_accumulate(acc, mom, g)
            _axpy(np, v, -float(lr), acc)
    return matmul_momentum


def _momentum_accumulate(acc: Any, momentum: float, g: Any) -> None:
    """acc = momentum * acc + g in place (the unfused kernel's arithmetic)."""
    _scale(np, acc, momentum)
    _axpy(np, acc, 1.0, g)


@register_fusion("ReluGrad", "MaxPoolGrad")
def _max_pool_grad_relu(pool_grad: Any, relu_grad: Any, k: int, ctx: KernelContext) -> Optional[Callable]:
    """ReluGrad(MaxPoolGrad(r, pool(r), g), r) for r = relu(z), as in every conv -> ReLU ->
    max-pool layer -> fn(r, y, g, r): MaxPoolGrad(r, y, g * (y > 0)).

    MaxPoolGrad puts a window's gradient only on the window's first maximum, where r equals
    the window's pooled value y; so ReLU's mask there is y > 0, and it is applied to the
    pooled gradient (ksize times smaller) instead of the input-sized one, which is never
    materialized.  Only for windows that do not overlap (stride >= ksize), where each input
    cell takes at most one window's gradient: the result then equals the unfused ops' exactly,
    NaN and inf included."""
    if k != 0 or pool_grad.inputs[0] != relu_grad.inputs[1]:
        return None
    ksize, strides = pool_grad.attrs["ksize"], pool_grad.attrs["strides"]
    if any(s < w for s, w in zip(strides, ksize)):
        return None
    pool = _max_pool_grad(pool_grad, ctx)
    xp = ctx.xp

    def max_pool_relu_grad(x: Any, y: Any, g: Any, _r: Any) -> Any:
        if _needs_tf_argmax(xp, x, y):  # a window's gradient may go to a NaN, not its maximum
            return xp.where(x > 0, pool(x, y, g, exact=True), x.dtype.type(0))
        return pool(x, y, xp.multiply(g, y > 0), exact=False)
    return max_pool_relu_grad
