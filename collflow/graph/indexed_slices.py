"""IndexedSlices: a sparse gradient (rows `indices` of a dense tensor hold `values`).

Gathers and embedding lookups produce these instead of dense gradients, so an update
touches only the rows that were looked up.  Converting one to a Tensor densifies it.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import numpy as np

from .. import dtypes as _dt
from . import graph as _g
from .registry import register_op, register_gradient, not_differentiable
from .shape import TensorShape, as_shape as _as_shape

__all__ = ["IndexedSlices", "IndexedSlicesValue", "convert_to_dense"]


class IndexedSlices:
    """values[i] is row indices[i] of a tensor of shape dense_shape (rows may repeat: they add)."""

    def __init__(self, values: _g.Tensor, indices: _g.Tensor, dense_shape: Optional[_g.Tensor] = None,
                 static_shape: Any = None):
        self.values = values
        self.indices = indices
        self.dense_shape = dense_shape
        self._static_shape = TensorShape(None) if static_shape is None else _as_shape(static_shape)

    @property
    def dtype(self) -> _dt.DType:
        return self.values.dtype

    @property
    def graph(self) -> _g.Graph:
        return self.values.graph

    @property
    def name(self) -> str:
        return self.values.name

    @property
    def op(self) -> _g.Operation:
        return self.values.op

    @property
    def shape(self) -> TensorShape:
        """Static dense shape when known."""
        return self._static_shape

    def __repr__(self) -> str:
        return f"IndexedSlices(values={self.values.name}, indices={self.indices.name})"


class IndexedSlicesValue(NamedTuple):
    """A fetched IndexedSlices: NumPy values, indices and dense_shape."""
    values: Any
    indices: Any
    dense_shape: Any


def _to_dense_spec(op: _g.Operation) -> list:
    vals = op.inputs[0]
    shp = op.attrs.get("static_shape")
    if shp is None:
        shp = TensorShape(None) if vals.shape.rank is None else TensorShape([None] + list(vals.shape.dims[1:]))
    return [(vals.dtype, shp)]


register_op("IndexedSlicesToDense", _to_dense_spec)


@register_gradient("IndexedSlicesToDense")
def _to_dense_grad(op: _g.Operation, grad: Any) -> list:
    from .ops.array_ops import gather
    return [gather(grad, op.inputs[1]), None, None]


def convert_to_dense(s: IndexedSlices, static_shape: Any = None) -> _g.Tensor:
    """Sums the slices into a dense tensor of shape dense_shape."""
    from .ops.op_util import single
    if s.dense_shape is None:
        raise ValueError("cannot densify IndexedSlices without dense_shape")
    attrs = {}
    if static_shape is not None:
        attrs["static_shape"] = static_shape
    return single("IndexedSlicesToDense", [s.values, s.indices, s.dense_shape], attrs, name="densify")


_g.register_tensor_conversion(IndexedSlices, lambda s, dtype: convert_to_dense(s, s._static_shape))
