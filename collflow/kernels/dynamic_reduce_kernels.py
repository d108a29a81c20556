"""Kernels of reductions over run-time axes (graph/ops/dynamic_reduce_ops.py).

`ReduceDynamic` checks the axes as TF does, then runs the static reduction's kernel for them
(math_kernels._reduction, built once per distinct axes tuple), so both paths compute alike.
"""
from __future__ import annotations

from typing import Any, Dict, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .math_kernels import _reduction
from .registry import KernelContext, register_kernel


def _axes(axes: Any, ndim: int, op: Any) -> Tuple[int, ...]:
    """The axes as sorted non-negative ints, with TF's errors for bad ones."""
    vals = [int(a) for a in np.asarray(axes).reshape(-1)]
    out = []
    for a in vals:
        if not -ndim <= a < ndim:
            raise InvalidArgumentError(f"Invalid reduction dimension ({a} for input with {ndim} dimension(s)", op)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise InvalidArgumentError(f"Invalid reduction arguments: Axes contains duplicate dimension: "
                                   f"{next(a for a in out if out.count(a) > 1)}", op)
    return tuple(sorted(out))


class _Static:
    """What the static reduction kernel reads off its op, for given axes."""

    def __init__(self, op: Any, axes: Tuple[int, ...]):
        self.attrs = {"axis": axes, "keepdims": op.attrs["keepdims"]}
        self.outputs = op.outputs
        self.inputs = op.inputs
        self.name, self.type = op.name, op.type


@register_kernel("ReduceDynamic")
def _reduce_dynamic(op: Any, ctx: KernelContext) -> Any:
    fname = op.attrs["reduction"]
    built: Dict[Tuple[int, ...], Any] = {}

    def reduce(x: Any, axes: Any) -> Any:
        ax = _axes(axes, x.ndim, op)
        fn = built.get(ax)
        if fn is None:
            fn = built[ax] = _reduction(_Static(op, ax), ctx, fname)
        return fn(x)
    return reduce


@register_kernel("ReducedShape")
def _reduced_shape(op: Any, ctx: KernelContext) -> Any:
    def reduced_shape(shape: Any, axes: Any) -> Any:
        dims = np.array(shape, copy=True).reshape(-1)
        dims[list(_axes(axes, dims.size, op))] = 1
        return dims
    return reduced_shape
