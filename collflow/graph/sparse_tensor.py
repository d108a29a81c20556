"""tf.SparseTensor: a tensor given by its nonzero entries, as TF1 represents one.

indices [N, rank] int64 (the entries' coordinates, row-major order), values [N] and
dense_shape [rank] int64.  Session.run fetches one as a SparseTensorValue and feeds one (a
sparse_placeholder, say) from a SparseTensorValue or an (indices, values, dense_shape)
tuple.  The ops on it are in graph/ops/sparse_ops.py.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from . import graph as _g
from .shape import TensorShape

__all__ = ["SparseTensor", "SparseTensorValue"]


class SparseTensorValue(NamedTuple):
    """A fetched (or fed) SparseTensor: NumPy indices, values and dense_shape."""
    indices: Any
    values: Any
    dense_shape: Any


class SparseTensor:
    """The entries `values` at `indices` of a tensor of shape `dense_shape`; zeros elsewhere."""

    def __init__(self, indices: Any, values: Any, dense_shape: Any):
        g = next((t.graph for t in (indices, values, dense_shape) if isinstance(t, _g.Tensor)), None)
        with (g.as_default() if g is not None else _nullcontext()):
            self._indices = _g.convert_to_tensor(indices, dtype=_dt.int64)
            self._values = _g.convert_to_tensor(values)
            self._dense_shape = _g.convert_to_tensor(dense_shape, dtype=_dt.int64)
        for t, want, what in ((self._indices, 2, "indices"), (self._values, 1, "values"),
                              (self._dense_shape, 1, "dense_shape")):
            if t.shape.rank is not None and t.shape.rank != want:
                raise InvalidArgumentError(f"SparseTensor: {what} must have rank {want}, got shape {t.shape}")
        for t, what in ((self._indices, "indices"), (self._dense_shape, "dense_shape")):
            if t.dtype != _dt.int64:
                raise InvalidArgumentError(f"SparseTensor: {what} must be int64, got {t.dtype.name}")

    @classmethod
    def from_value(cls, value: Any) -> "SparseTensor":
        """A SparseTensor of constants from a SparseTensorValue (or a SparseTensor, returned)."""
        if isinstance(value, SparseTensor):
            return value
        return cls(np.asarray(value.indices, np.int64), value.values, np.asarray(value.dense_shape, np.int64))

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    dense_shape = property(lambda self: self._dense_shape)

    @property
    def dtype(self) -> _dt.DType:
        return self._values.dtype

    @property
    def graph(self) -> _g.Graph:
        return self._values.graph

    @property
    def op(self) -> _g.Operation:
        return self._values.op

    @property
    def name(self) -> str:
        return self._values.name

    @property
    def shape(self) -> TensorShape:
        """The static dense shape: the entries of dense_shape the graph determines (a constant,
        a cast of one, a stack of known sizes: TF's constant_value_as_shape), else its rank."""
        from .ops.shape_eval import partial_vector
        known = partial_vector(self._dense_shape)
        if known is not None:
            return TensorShape([d if d is not None and d >= 0 else None for d in known])
        n = self._dense_shape.shape.dims[0] if self._dense_shape.shape.rank == 1 else None
        if n is None and self._indices.shape.rank == 2:
            n = self._indices.shape.dims[1]
        return TensorShape(None) if n is None else TensorShape([None] * n)

    def get_shape(self) -> TensorShape:
        return self.shape

    def eval(self, feed_dict: Any = None, session: Any = None) -> SparseTensorValue:
        sess = session or _g.get_default_session()
        if sess is None:
            raise ValueError("Cannot evaluate a SparseTensor without a default session")
        return sess.run(self, feed_dict)

    # TF1's `sp * dense` and `sp / dense` (SparseDenseCwiseMul / Div): a SparseTensor of sp's
    # entries, the dense operand broadcast to sp's dense shape; `dense * sp` is refused, as TF
    def __mul__(self, other: Any) -> "SparseTensor":
        from .ops.sparse_extra_ops import sparse_dense_cwise_mul
        return sparse_dense_cwise_mul(self, other)

    def __truediv__(self, other: Any) -> "SparseTensor":
        from .ops.sparse_extra_ops import sparse_dense_cwise_div
        return sparse_dense_cwise_div(self, other)

    def __repr__(self) -> str:
        return (f"SparseTensor(indices={self._indices.name}, values={self._values.name}, "
                f"dense_shape={self._dense_shape.name})")


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _refuse(s: SparseTensor, dtype: Any) -> Any:
    raise TypeError(f"{s!r} is a SparseTensor: make it dense first (tf.sparse.to_dense / tf.sparse_tensor_to_dense), "
                    "or use an op that takes one (tf.sparse.*, tf.nn.embedding_lookup_sparse)")


_g.register_tensor_conversion(SparseTensor, _refuse)
