"""Into-variants of NumPy kernels: the op's output written into an array the executor gives.

The executor uses them to let an op compute its result straight into a slot its consumer
offers instead of a fresh array (runtime/plan_buffers.py `_place_outputs`).  The case that pays:
a gradient computed into the fusion buffer of the FusedAllReduce that reads it (PyTorch
DDP's gradient_as_bucket_view), so the bucket needs no packing copy before the collective.
The ops here are the ones that compute gradients of small parameters (bias gradients,
elementwise chain-rule products, sums, products of small matrices, AddN of several paths).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .math_kernels import ColumnSums, leading_axes, wide_nt_product
from .registry import KernelContext, register_into

_UFUNCS = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "RealDiv": np.true_divide,
           "Maximum": np.maximum, "Minimum": np.minimum, "Neg": np.negative, "Square": np.square,
           "Exp": np.exp, "Log": np.log, "Sqrt": np.sqrt, "Abs": np.abs}


def _float_numpy(op: Any, ctx: KernelContext) -> bool:
    """NumPy kernels of an op whose one output and every input have the output's float dtype
    (then the ufunc's result dtype is the output's and writing into `out` casts nothing)."""
    if ctx.xp is not np or len(op.outputs) != 1 or not op.outputs[0].dtype.is_floating:
        return False
    dt = op.outputs[0].dtype
    return all(t.dtype == dt for t in op.inputs)


def _ufunc_factory(uf: Any) -> Callable[[Any, KernelContext], Optional[Callable]]:
    def factory(op: Any, ctx: KernelContext) -> Optional[Callable]:
        if not _float_numpy(op, ctx) or len(op.inputs) != uf.nin:
            return None
        return uf  # the ufunc itself takes out=: no Python frame per call
    return factory


for _t, _uf in _UFUNCS.items():
    register_into(_t)(_ufunc_factory(_uf))


@register_into("MatMul")
def _matmul_into(op: Any, ctx: KernelContext) -> Optional[Callable]:
    if not _float_numpy(op, ctx):
        return None
    ta, tb = bool(op.attrs.get("transpose_a", False)), bool(op.attrs.get("transpose_b", False))

    def into(a: Any, b: Any, *, out: Any) -> Any:
        if tb and not ta and wide_nt_product(a, b, out) is not None:
            return out
        # transposed views: BLAS reads them with its transpose flag, no copy
        return np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b, out=out)
    return into


@register_into("BiasAddGrad")
def _bias_add_grad_into(op: Any, ctx: KernelContext) -> Optional[Callable]:
    if not _float_numpy(op, ctx):
        return None

    colsum = ColumnSums()

    def into(g: Any, *, out: Any) -> Any:
        if not g.size:  # nothing to add (and no (-1, 0) view of an empty g)
            out[...] = 0
            return out
        return colsum(g.reshape(-1, g.shape[-1]), out=out)
    return into


def _reduction_into(fn: Any, min_itemsize: int = 2) -> Callable[[Any, KernelContext], Optional[Callable]]:
    def factory(op: Any, ctx: KernelContext) -> Optional[Callable]:
        if not _float_numpy(op, ctx) or op.outputs[0].dtype.np.itemsize < min_itemsize:
            return None
        axis = op.attrs["axis"]
        if axis is not None and not isinstance(axis, int):
            axis = tuple(axis)
        keep = op.attrs["keepdims"]
        colsum = ColumnSums() if fn is np.sum else None

        def into(x: Any, *, out: Any) -> Any:
            k = leading_axes(axis, x.ndim) if colsum is not None else 0
            if k and out.flags.c_contiguous and x.size:  # an empty x cannot be viewed as (-1, columns)
                colsum(x.reshape(-1, out.size), out=out.reshape(-1))
                return out
            return fn(x, axis=axis, keepdims=keep, out=out)
        return into
    return factory


register_into("Sum")(_reduction_into(np.sum))
# NumPy's float16 mean sums in float32 and divides before rounding; into a float16 `out` it
# would round (and could overflow) the sum first: float32 and float64 only
register_into("Mean")(_reduction_into(np.mean, min_itemsize=4))


@register_into("AddN")
def _add_n_into(op: Any, ctx: KernelContext) -> Optional[Callable]:
    if not _float_numpy(op, ctx):
        return None

    def into(x0: Any, x1: Any, *rest: Any, out: Any) -> Any:
        np.add(x0, x1, out=out)
        for r in rest:
            np.add(out, r, out=out)
        return out
    return into
