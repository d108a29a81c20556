"""Fused collective ops that data-parallel training builds (kernels in collflow/comm/fusion.py).

FusedAllReduce sums a bucket of gradients across ranks in one collective (packed into one
flat buffer, optionally compressed) and divides by the number of ranks that contributed.
SparseAllGather concatenates every rank's IndexedSlices rows.  FusedBroadcast copies a
list of tensors from the root rank to all ranks.  AverageVariables replaces a bucket of
variables, in place, by their average over the ranks (one collective; the variables live
in one flat buffer between steps).
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import register_op, register_gradient, not_differentiable
from ..shape import TensorShape
from .op_util import make_op

__all__: List[str] = []

COMPRESSIONS = ("none", "fp16", "bf16")


def _same_spec(op: _g.Operation) -> list:
    return [(t.dtype, t.shape) for t in op.inputs]


def _fused_spec(op: _g.Operation) -> list:
    if op.attrs["compression"] not in COMPRESSIONS:
        raise ValueError(f"compression must be one of {COMPRESSIONS}, got {op.attrs['compression']!r}")
    for t in op.inputs:
        if not t.dtype.is_floating:
            raise ValueError(f"FusedAllReduce needs floating-point tensors, got {t.dtype.name} ({t.name})")
    return _same_spec(op)


register_op("FusedAllReduce", _fused_spec, collective=True, host_only=True)
register_op("FusedBroadcast", _same_spec, collective=True, host_only=True)


def _average_spec(op: _g.Operation) -> list:
    from .state_ops import variable_dtype_shape
    dts = []
    for h in op.inputs:
        if h.dtype != _dt.resource:
            raise TypeError(f"AverageVariables takes variables' resource handles, got {h.dtype.name} ({h.name})")
        dt, shp = variable_dtype_shape(h)
        if not dt.is_floating or not shp.is_fully_defined():
            raise ValueError(f"AverageVariables needs floating-point variables of static shape, got "
                             f"{h.op.name!r} ({dt.name}, {shp})")
        dts.append(dt)
    if len(set(dts)) > 1:
        raise ValueError(f"AverageVariables needs variables of one dtype, got {sorted({d.name for d in dts})}")
    return []


register_op("AverageVariables", _average_spec, collective=True,
            doc="Replaces variables, in place, by their average over the ranks (one collective).")


def _sparse_gather_spec(op: _g.Operation) -> list:
    v, i = op.inputs
    inner = [None] + list(v.shape.dims[1:]) if v.shape.rank is not None else None
    # third output: how many ranks contributed rows (the divisor of an average)
    return [(v.dtype, TensorShape(inner)), (i.dtype, TensorShape([None])), (v.dtype, TensorShape(()))]


register_op("SparseAllGather", _sparse_gather_spec, collective=True, ragged=True, host_only=True)
# stateful: the value comes from the session's communicator, never fold it into a constant
register_op("CommSize", lambda op: [(op.attrs["dtype"], TensorShape(()))], stateful=True,
            doc="The number of ranks of the session's communicator.")
not_differentiable("FusedBroadcast", "SparseAllGather", "CommSize", "AverageVariables")


@register_gradient("FusedAllReduce")
def _fused_grad(op: _g.Operation, *grads: Any) -> list:
    # d(sum over ranks)/dx is the sum over ranks of the incoming gradient (mean: the mean)
    gs = [_g.convert_to_tensor(g) for g in grads]
    return list(fused_all_reduce(gs, key=op.attrs["key"] + "_grad", average=op.attrs["average"]))


def fused_all_reduce(tensors: Sequence[Any], key: str, average: bool = True, compression: str = "none",
                     name: Optional[str] = None) -> List[_g.Tensor]:
    """Sums (or averages) `tensors` across ranks as one collective; `key` names it on every rank."""
    op = make_op("FusedAllReduce", list(tensors), {"key": key, "average": bool(average),
                                                   "compression": compression}, name=name or "FusedAllReduce")
    return list(op.outputs)


def sparse_all_gather(values: Any, indices: Any, key: str, name: Optional[str] = None) -> tuple:
    """(values, indices) of every rank concatenated in rank order, and the number of contributors."""
    op = make_op("SparseAllGather", [values, indices], {"key": key}, name=name or "SparseAllGather")
    return op.outputs[0], op.outputs[1], op.outputs[2]


def fused_broadcast(tensors: Sequence[Any], root: int, key: str, name: Optional[str] = None) -> List[_g.Tensor]:
    """`tensors` as the root rank has them, on every rank."""
    op = make_op("FusedBroadcast", list(tensors), {"key": key, "root": int(root)}, name=name or "FusedBroadcast")
    return list(op.outputs)


def comm_size(dtype: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """A scalar: how many ranks the session's communicator has (float32 unless `dtype`)."""
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.float32
    return make_op("CommSize", [], {"dtype": dt}, name=name or "CommSize").outputs[0]


def average_variables(variables: Sequence[Any], key: str, name: Optional[str] = None) -> _g.Operation:
    """The op that replaces each of `variables` (one dtype, static shapes) by its average over
    the ranks, in place; `key` names the collective on every rank."""
    hs = [getattr(v, "handle", v) for v in variables]
    return make_op("AverageVariables", hs, {"key": key}, name=name or "AverageVariables")
