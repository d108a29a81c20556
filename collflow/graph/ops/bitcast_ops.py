"""TF1's `tf.bitcast` (reinterpret a tensor's bytes as another dtype, TF's shape rules) and
`tf.batch_scatter_update` (scatter_nd_update over a batch of index lists).  The Bitcast
kernel is in collflow/kernels/tensor_serialize_kernels.py."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from .op_util import single

__all__ = ["bitcast", "batch_scatter_update"]


def _check_type(dt: _dt.DType, what: str) -> None:
    if dt in (_dt.string, _dt.bool_, _dt.resource) or not (dt.is_floating or dt.is_integer or dt.is_complex):
        raise TypeError(f"Value passed to parameter '{what}' has DataType {dt.name} not in list of allowed values: "
                        "bfloat16, half, float32, float64, int64, int32, uint8, uint16, uint32, uint64, int8, int16, "
                        "complex64, complex128")


def _size(dt: _dt.DType) -> int:
    return np.dtype(dt.np).itemsize


def _bitcast_spec(op: _g.Operation) -> list:
    x, out = op.inputs[0], op.attrs["type"]
    a, b = _size(x.dtype), _size(out)
    shp = x.shape
    if a == b or shp.rank is None:
        return [(out, shp if a == b else TensorShape(None))]
    dims = list(shp.dims)
    if a > b:
        return [(out, TensorShape(dims + [a // b]))]
    if not dims:
        raise ValueError(f"Cannot bitcast from {x.dtype.name} to {out.name}: input must have at least 1 dimension")
    if dims[-1] is not None and dims[-1] != b // a:
        raise ValueError(f"Cannot bitcast from {x.dtype.name} to {out.name}: the last dimension of the input "
                         f"must be {b // a}, got shape {shp}")
    return [(out, TensorShape(dims[:-1]))]


register_op("Bitcast", _bitcast_spec, host_only=True, doc="a tensor's bytes reinterpreted as another dtype")
not_differentiable("Bitcast")


def bitcast(input: Any, type: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002  (TF's names)
    """The same bytes as dtype `type` (TF's shapes: a larger input type adds a last dimension
    of size ratio, a smaller one needs a last dimension of the ratio and removes it)."""
    x = _g.convert_to_tensor(input)
    out = _dt.as_dtype(type)
    _check_type(x.dtype, "input")
    _check_type(out, "type")
    return single("Bitcast", [x], {"type": out}, name=name or "Bitcast")


def batch_scatter_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True,
                         name: Optional[str] = None) -> _g.Tensor:
    """ref[i..., indices[i..., j], ...] = updates[i..., j, ...] for every batch index i (TF1's
    tf.batch_scatter_update): scatter_nd_update with the batch coordinates prepended to
    `indices`; returns the variable's new value."""
    from . import array_ops as _a
    from .misc_ops import range as _range
    from .scatter_nd_ops import scatter_nd_update
    g = _g.get_default_graph()
    with g.name_scope(name or "BatchScatterUpdate"):
        idx = _g.convert_to_tensor(indices)
        if not idx.dtype.is_integer:
            raise TypeError(f"batch_scatter_update: indices must be integers, got {idx.dtype.name}")
        rank = idx.shape.rank
        if rank is None:
            raise ValueError("batch_scatter_update: indices must have a known rank")
        ref_rank = ref.shape.rank
        if ref_rank is not None and ref_rank < rank:
            raise ValueError(f"batch_scatter_update: ref has rank {ref_rank}, less than indices' rank {rank}")
        if rank == 1:
            nd = _a.expand_dims(idx, -1)
        else:
            shape = _a.shape(idx, out_type=idx.dtype)
            coords = []
            for d in range(rank - 1):
                r = _range(shape[d], dtype=idx.dtype)
                bshape = [1] * rank
                bshape[d] = -1
                coords.append(_a.broadcast_to(_a.reshape(r, bshape), shape))
            coords.append(idx)
            nd = _a.stack(coords, axis=-1)
        return scatter_nd_update(ref, nd, updates, use_locking=use_locking)
