"""transpose and expand_dims with a permutation or axis computed at run time, as TF1 takes
them: tf.transpose(x, tf.concat([[1, 0], tf.range(2, tf.rank(x))], 0)) for an x of unknown
rank (TF's own batch/time swap), or a fed axis.

Where the graph determines the argument, array_ops builds the static Transpose/ExpandDims as
before.  Static shapes are TF's for a run-time argument: a transpose keeps the rank (from the
input or the permutation's length) with every dimension unknown; expand_dims's is unknown.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import register_gradient, register_op
from ..shape import TensorShape
from .op_util import single

__all__ = ["transpose_dynamic", "expand_dims_dynamic"]


def _int_arg(t: _g.Tensor, rank: int, what: str) -> None:
    if t.dtype not in (_dt.int32, _dt.int64) or t.shape.rank not in (None, rank):
        raise ValueError(f"{what} must be a {rank}-d int32/int64 tensor, got {t.dtype.name} {t.shape}")


def _transpose_spec(op: _g.Operation) -> list:
    x, perm = op.inputs
    _int_arg(perm, 1, "transpose: perm")
    rank = x.shape.rank
    if rank is None and perm.shape.rank == 1:
        rank = perm.shape.dims[0]
    if rank is not None and perm.shape.rank == 1 and perm.shape.dims[0] not in (None, rank):
        raise ValueError(f"transpose: perm of size {perm.shape.dims[0]} for a tensor of rank {rank}")
    return [(x.dtype, TensorShape(None if rank is None else [None] * rank))]


register_op("TransposeDynamic", _transpose_spec, host_inputs=(1,), doc="x transposed by a run-time permutation")


def _expand_spec(op: _g.Operation) -> list:
    x, axis = op.inputs
    _int_arg(axis, 0, "expand_dims: axis")
    return [(x.dtype, TensorShape(None))]


register_op("ExpandDimsDynamic", _expand_spec, host_inputs=(1,),
            doc="a dimension of size 1 inserted at a run-time axis")


def transpose_dynamic(x: Any, perm: Any, name: Optional[str] = None) -> _g.Tensor:
    """x transposed by `perm`, a 1-D int tensor evaluated at run time."""
    return single("TransposeDynamic", [_g.convert_to_tensor(x), _g.convert_to_tensor(perm)],
                  name=name or "transpose")


def expand_dims_dynamic(x: Any, axis: Any, name: Optional[str] = None) -> _g.Tensor:
    """x with a dimension of size 1 inserted at `axis`, a 0-d int tensor evaluated at run time."""
    return single("ExpandDimsDynamic", [_g.convert_to_tensor(x), _g.convert_to_tensor(axis)],
                  name=name or "ExpandDims")


@register_gradient("TransposeDynamic")
def _transpose_grad(op: _g.Operation, g: Any) -> list:
    from .tally_ops import invert_permutation
    return [transpose_dynamic(g, invert_permutation(op.inputs[1])), None]


@register_gradient("ExpandDimsDynamic")
def _expand_grad(op: _g.Operation, g: Any) -> list:
    from .array_ops import reshape_like
    return [reshape_like(g, op.inputs[0]), None]
