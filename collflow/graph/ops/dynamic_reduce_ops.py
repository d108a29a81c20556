"""Reductions over axes computed at run time: tf.reduce_sum(x, axis=tf.range(1, tf.rank(x)))
for an x of unknown rank, or axes fed through a placeholder.

Where the graph can determine the axes, math_ops builds the static Sum/Mean/... ops as
before; only a run-time axis tensor makes a `ReduceDynamic` (TF's Sum/Mean/Max/Min/Prod/All/
Any with a non-constant reduction_indices).  The static shape is TF's for that case: the
input's rank with unknown dims under keepdims, an unknown shape without.  Gradients follow
TF's: the upstream gradient reshaped to the kept-dims shape at run time (`ReducedShape`,
TF's _ReducedShape) and broadcast back to the input; reduce_prod's through transposes by the
run-time permutation that moves the reduced axes last (dynamic_layout_ops).
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_gradient, register_op
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


register_op("ReduceDynamic", _spec, host_inputs=(1,),
            doc="a reduction (attr `reduction`) over axes given as a run-time tensor")


def _reduced_shape_spec(op: _g.Operation) -> list:
    shape, axes = op.inputs
    return [(shape.dtype, shape.shape)]


# x's shape with the reduced axes set to 1 (TF's _ReducedShape): the kept-dims shape
register_op("ReducedShape", _reduced_shape_spec, host_only=True, host_inputs=(0, 1))
not_differentiable("ReducedShape")


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
    keep = reduced_shape(x, axes)
    gk = g if op.attrs["keepdims"] else reshape_dynamic(g, keep)
    if r == "prod":
        return [multiply(broadcast_like(gk, x), _prod_others(x, axes)), None]
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


def _prod_others(x: _g.Tensor, axes: _g.Tensor) -> _g.Tensor:
    """For each entry of x, the product of the other entries of its reduction group (TF's
    reduce_prod gradient, so zeros in x give the right answer): x's reduced axes moved last
    and flattened into one, exclusive cumulative products from both ends multiplied, and the
    result moved back, all with the axes known only at run time."""
    from .array_ops import concat, rank, reshape_like, shape, size, stack
    from .complex_ops import conj_if_complex
    from .dynamic_layout_ops import transpose_dynamic
    from .dynamic_shape_ops import reshape_dynamic
    from .math_extra_ops import floormod
    from .math_ops import cast, maximum, reduce_prod
    from .misc_ops import range as _range
    from .scan_ops import cumprod
    from .scatter_nd_ops import setdiff1d
    from .slicing_ops import gather
    from .tally_ops import invert_permutation
    n = rank(x)
    red = floormod(reshape_dynamic(cast(axes, _dt.int32), [-1]), n)
    perm = concat([setdiff1d(_range(n), red).out, red], 0)
    xt = transpose_dynamic(x, perm)
    n_red = maximum(reduce_prod(gather(shape(xt), _range(n - size(red), n))), 1)  # 1 for an empty x
    flat = reshape_dynamic(xt, stack([-1, n_red]))
    rest = conj_if_complex(cumprod(flat, axis=1, exclusive=True) * cumprod(flat, axis=1, exclusive=True, reverse=True))
    return transpose_dynamic(reshape_like(rest, xt), invert_permutation(perm))
