"""In-place variants of elementwise kernels (NumPy): the executor's buffer forwarding.

When an op's input dies at that op (its last consumer, neither fed nor fetched), the plan
calls the variant registered here, which writes the result into that input's array if
`exclusively_owned` confirms nobody else holds it, and allocates as usual otherwise.  This
saves one allocation and one page-touching pass per activation in a training step.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .registry import KernelContext, exclusively_owned, register_inplace


# below this many elements an allocation is cheaper than the ownership check
_MIN_SIZE = 4096


def result_has_shape_of_first(op: Any) -> bool:
    """Statically: the broadcast result of op's two inputs always has input 0's shape."""
    a, b = op.inputs[0].shape, op.inputs[1].shape
    if a.rank is None or b.rank is None or b.rank > a.rank:
        return False
    bd = [1] * (a.rank - b.rank) + list(b.dims)
    for da, db in zip(a.dims, bd):
        if db == 1 or (da is not None and da == db):
            continue
        if da is not None and da != 1 and db is None:
            continue  # b's dim is either 1 or equal to a's
        return False
    return True


def _binary(fn: Any) -> Any:
    def factory(op: Any, ctx: KernelContext) -> Any:
        if ctx.xp is not np or not op.outputs[0].dtype.is_floating or not result_has_shape_of_first(op):
            return None

        def run(a: Any, b: Any) -> Any:
            if a.size >= _MIN_SIZE and exclusively_owned(a):
                return fn(a, b, out=a)
            return fn(a, b)
        return run
    return factory


register_inplace("Add")(_binary(np.add))
register_inplace("Sub")(_binary(np.subtract))
register_inplace("Mul")(_binary(np.multiply))
register_inplace("RealDiv")(_binary(np.true_divide))
register_inplace("BiasAdd")(_binary(np.add))


@register_inplace("Relu")
def _relu(op: Any, ctx: KernelContext) -> Any:
    if ctx.xp is not np:
        return None
    zero = op.outputs[0].dtype.np.type(0)

    def relu(x: Any) -> Any:
        if x.size >= _MIN_SIZE and exclusively_owned(x):
            return np.maximum(x, zero, out=x)
        return np.maximum(x, zero)
    return relu


@register_inplace("ReluGrad")
def _relu_grad(op: Any, ctx: KernelContext) -> Any:
    if ctx.xp is not np:
        return None

    def relu_grad(g: Any, y: Any) -> Any:
        if g.size >= _MIN_SIZE and g.shape == y.shape and exclusively_owned(g):
            return np.multiply(g, y > 0, out=g)
        return np.multiply(g, y > 0)
    return relu_grad


@register_inplace("AddN")
def _add_n(op: Any, ctx: KernelContext) -> Any:
    if ctx.xp is not np:
        return None

    def add_n(x0: Any, *rest: Any) -> Any:
        out = x0 if x0.size >= _MIN_SIZE and exclusively_owned(x0) and all(r.shape == x0.shape for r in rest) \
            else x0.copy()
        for r in rest:
            out += r
        return out
    return add_n
