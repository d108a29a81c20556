"""Reductions over axes computed at run time: tf.reduce_sum(x, axis=tf.range(1, tf.rank(x)))
for an x of unknown rank, or axes fed through a placeholder.

Where the graph can determine the axes, math_ops builds the static Sum/Mean/... ops as
before; only a run-time axis tensor makes a `ReduceDynamic` (TF's Sum/Mean/Max/Min/Prod/All/
Any with a non-constant reduction_indices).  The static shape is TF's for that case: the
input's rank with unknown dims under keepdims, an unknown shape without.  Gradients follow
TF's: the upstream gradient reshaped to the kept-dims shape at run time (`ReducedShape`,
TF's _ReducedShape) and broadcast back to the input.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import declare_host_memory, declare_host_only, not_differentiable, register_gradient, register_op
from ..shape import TensorShape
from .op_util import single

__all__ = ["reduce_dynamic", "reduced_shape"]

# TF's op type -> the reduction
REDUCTIONS = {"Sum": "sum", "Mean": "mean", "Max": "max", "Min": "min", "Prod": "prod", "All": "all",
              "Any": "any"}


def _axes_ok(axes: _g.Tensor, what: str) -> None:
    if axes.dtype not in (_dt.int32, _dt.int64) or axes.shape.rank not in (None, 0, 1):
        raise ValueError(f"{what}: reduction axes must be a 0-d or 1-d int32/int64 tensor, got "
                         f"{axes.dtype.name} {axes.shape}")


def _spec(op: _g.Operation) -> list:
    x, axes = op.inputs
    _axes_ok(axes, op.attrs["reduction"])
    r = op.attrs["reduction"]
    if r in ("all", "any") and x.dtype != _dt.bool:
        raise ValueError(f"reduce_{r} needs a bool tensor, got {x.dtype.name}")
    if op.attrs["keepdims"] and x.shape.rank is not None:
        return [(x.dtype, TensorShape([None] * x.shape.rank))]
    return [(x.dtype, TensorShape(None))]


register_op("ReduceDynamic", _spec, doc="a reduction (attr `reduction`) over axes given as a run-time tensor")


def _reduced_shape_spec(op: _g.Operation) -> list:
    shape, axes = op.inputs
    return [(shape.dtype, shape.shape)]


# x's shape with the reduced axes set to 1 (TF's _ReducedShape): the kept-dims shape
register_op("ReducedShape", _reduced_shape_spec)
not_differentiable("ReducedShape")
# the axes and shapes are read on the host (TF's HostMemory), ReducedShape works on host ints
declare_host_memory("ReduceDynamic", (1,))
declare_host_memory("ReducedShape", (0, 1))
declare_host_only("ReducedShape")


def reduce_dynamic(op_type: str, x: Any, axes: Any, keepdims: bool, name: Optional[str] = None) -> _g.Tensor:
    """TF's reduction `op_type` (Sum, Mean, Max, Min, Prod, All, Any) over the run-time `axes`."""
    x = _g.convert_to_tensor(x)
    axes = _g.convert_to_tensor(axes)
    _axes_ok(axes, op_type)
    return single("ReduceDynamic", [x, axes], {"reduction": REDUCTIONS[op_type], "keepdims": bool(keepdims)},
                  name=name or op_type)


def reduced_shape(x: Any, axes: Any) -> _g.Tensor:
    """x's run-time shape with `axes` set to 1 (int32)."""
    from .array_ops import shape as _shape
    return single("ReducedShape", [_shape(x), _g.convert_to_tensor(axes)], name="ReducedShape")


@register_gradient("ReduceDynamic")
def _grad(op: _g.Operation, g: Any) -> list:
    from .array_ops import broadcast_like, size_ratio
    from .dynamic_shape_ops import reshape_dynamic
    from .math_ops import cast, divide, equal, multiply
    x, axes = op.inputs
    r = op.attrs["reduction"]
    if r in ("all", "any"):
        return [None, None]
    if r == "prod":
        raise NotImplementedError("the gradient of reduce_prod over run-time axes is not implemented "
                                  "(give the axes as constants)")
    keep = reduced_shape(x, axes)
    gk = g if op.attrs["keepdims"] else reshape_dynamic(g, keep)
    if r == "sum":
        return [broadcast_like(gk, x), None]
    if r == "mean":
        return [divide(broadcast_like(gk, x), cast(size_ratio(x, op.outputs[0]), g.dtype)), None]
    # max/min: the gradient is shared between the entries equal to the extreme, as TF
    y = op.outputs[0]
    yk = y if op.attrs["keepdims"] else reshape_dynamic(y, keep)
    hit = cast(equal(x, broadcast_like(yk, x)), g.dtype)
    count = reduce_dynamic("Sum", hit, axes, True)
    return [multiply(divide(hit, count), broadcast_like(gk, x)), None]
