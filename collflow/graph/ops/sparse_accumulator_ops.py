"""tf.SparseConditionalAccumulator (TF 1.15's, also tf.sparse.SparseConditionalAccumulator):
sparse gradients (indices into dimension 0, slices of values) gathered from several workers
and handed out averaged once enough arrived; tf.ConditionalAccumulator, the same for dense
gradients; tf.ConditionalAccumulatorBase, their shared base (num_accumulated, set_global_step).

    acc = tf.SparseConditionalAccumulator(tf.float32, shape=[10, 3])
    apply = acc.apply_grad([1, 4], [[1., 1., 1.], [2., 2., 2.]], local_step=step)
    indices, values, shape = acc.take_grad(num_required=2)   # waits for 2 gradients

The accumulator is a resource of the Session, made the first time one of its ops runs; the
semantics (stale gradients dropped, per-index averages, the global step advanced by
take_grad) are the kernels', kernels/sparse_more_kernels.py and accumulator_kernels.py.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..indexed_slices import IndexedSlices
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from . import math_ops as _m
from .constant_op import constant

__all__ = ["ConditionalAccumulatorBase", "ConditionalAccumulator", "SparseConditionalAccumulator"]


def _take_spec(op: _g.Operation) -> list:
    # as TF's: the values' shape depends on what was accumulated
    return [(_dt.int64, TensorShape([None])), (op.attrs["dtype"], TensorShape(None)), (_dt.int64, TensorShape([None]))]


register_op("SparseConditionalAccumulator", lambda op: [(_dt.resource, TensorShape(()))], stateful=True,
            host_only=True, doc="a conditional accumulator of sparse gradients")
register_op("SparseAccumulatorApplyGradient", lambda op: [], stateful=True, host_only=True)
register_op("SparseAccumulatorTakeGradient", _take_spec, stateful=True, host_only=True)
register_op("AccumulatorNumAccumulated", lambda op: [(_dt.int32, TensorShape(()))], stateful=True, host_only=True)
register_op("AccumulatorSetGlobalStep", lambda op: [], stateful=True, host_only=True)
register_op("ConditionalAccumulator", lambda op: [(_dt.resource, TensorShape(()))], stateful=True,
            host_only=True, doc="a conditional accumulator of dense gradients")
register_op("AccumulatorApplyGradient", lambda op: [], stateful=True, host_only=True)
register_op("AccumulatorTakeGradient", lambda op: [(op.attrs["dtype"], TensorShape(op.attrs["shape"]))],
            stateful=True, host_only=True)
not_differentiable("SparseConditionalAccumulator", "SparseAccumulatorApplyGradient", "SparseAccumulatorTakeGradient",
                   "AccumulatorNumAccumulated", "AccumulatorSetGlobalStep", "ConditionalAccumulator",
                   "AccumulatorApplyGradient", "AccumulatorTakeGradient")

# the dtypes the accumulator can hold: those of TF's graph-level op (its numeric types, as collflow
# has them); TF has kernels only for the floats, so the others fail when the op runs, as in TF
_DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
           "uint64", "complex64", "complex128")


class SparseAccumulatorTakeGradient(NamedTuple):
    """take_grad's result, as TF's namedtuple: (indices, values, shape)."""
    indices: _g.Tensor
    values: _g.Tensor
    shape: _g.Tensor


def _int64(x: Any, name: str) -> _g.Tensor:
    t = x if isinstance(x, _g.Tensor) else _g.convert_to_tensor(x, name=name)
    return t if t.dtype == _dt.int64 else _m.cast(t, _dt.int64)


def _make_accumulator(op_type: str, dtype: Any, shape: Any, shared_name: Optional[str], name: str,
                      reduction_type: str) -> Tuple[_dt.DType, TensorShape, _g.Tensor]:
    """The accumulator op (TF's attrs and their checks): (dtype, shape, handle)."""
    dt = _dt.as_dtype(dtype)
    if dt.name not in _DTYPES:
        raise TypeError(f"Value for attr 'dtype' of {dt.name} is not in the list of allowed values: "
                        f"{', '.join(_DTYPES)}")
    if reduction_type not in ("MEAN", "SUM"):
        raise ValueError(f"Attr 'reduction_type' of '{op_type}' Op passed string "
                         f"'{reduction_type}' not in: \"MEAN\", \"SUM\".")
    shp = TensorShape(shape) if shape is not None else TensorShape(None)
    g = _g.get_default_graph()
    dims = None if shp.rank is None else list(shp.dims)
    # an unshared accumulator still needs a name unique in the Session's resources
    uname = shared_name or g.unique_name(name, mark_as_used=False)
    op = g.create_op(op_type, [], {"dtype": dt, "shape": dims, "shared_name": uname,
                                   "reduction_type": reduction_type}, name=name)
    return dt, shp, op.outputs[0]


class ConditionalAccumulatorBase:
    """What both accumulators share (TF's ConditionalAccumulatorBase): the handle, its name,
    the dtype and shape, num_accumulated and set_global_step."""

    def __init__(self, dtype: Any, shape: Any, accumulator_ref: _g.Tensor):
        self._dtype = _dt.as_dtype(dtype)
        self._shape = (shape if isinstance(shape, TensorShape)
                       else TensorShape(shape) if shape is not None else TensorShape(None))
        self._accumulator_ref = accumulator_ref
        self._name = accumulator_ref.op.name.split("/")[-1]

    accumulator_ref = property(lambda self: self._accumulator_ref, doc="the accumulator's handle")
    name = property(lambda self: self._name, doc="the accumulator's op name, without scopes")
    dtype = property(lambda self: self._dtype, doc="the dtype of the gradients")

    def num_accumulated(self, name: Optional[str] = None) -> _g.Tensor:
        """How many gradients were accumulated since the last take_grad (int32)."""
        return self._accumulator_ref.graph.create_op(
            "AccumulatorNumAccumulated", [self._accumulator_ref], {},
            name=name or f"{self._name}_NumAccumulated").outputs[0]

    def set_global_step(self, new_global_step: Any, name: Optional[str] = None) -> _g.Operation:
        """An op setting the accumulator's global step (a smaller one only logs a warning)."""
        with self._accumulator_ref.graph.as_default():
            step = _int64(new_global_step, "new_global_step")
        return step.graph.create_op("AccumulatorSetGlobalStep", [self._accumulator_ref, step], {},
                                    name=name or "AccumulatorSetGlobalStep")


class ConditionalAccumulator(ConditionalAccumulatorBase):
    """A conditional accumulator of dense gradients: gradients of the current step
    (local_step >= the global step) are summed; take_grad waits for num_required of them
    and returns their mean ("MEAN") or sum ("SUM"), then advances the global step."""

    def __init__(self, dtype: Any, shape: Any = None, shared_name: Optional[str] = None,
                 name: str = "conditional_accumulator", reduction_type: str = "MEAN"):
        dt, shp, ref = _make_accumulator("ConditionalAccumulator", dtype, shape, shared_name, name, reduction_type)
        super().__init__(dt, shp, ref)

    def apply_grad(self, grad: Any, local_step: Any = 0, name: Optional[str] = None) -> _g.Operation:
        """An op adding grad (of the accumulator's dtype and shape); dropped when local_step
        is below the global step."""
        g = self._accumulator_ref.graph
        with g.as_default():
            t = grad if isinstance(grad, _g.Tensor) else _g.convert_to_tensor(grad, dtype=self._dtype, name="grad")
            if t.dtype != self._dtype:
                raise ValueError(f"Tensor conversion requested dtype {self._dtype.name} for Tensor with dtype "
                                 f"{t.dtype.name}: {t!r}")
            if not t.shape.is_compatible_with(self._shape):
                raise ValueError(f"Shapes {t.shape} and {self._shape} are incompatible")
            step = _int64(local_step, "local_step")
            return g.create_op("AccumulatorApplyGradient", [self._accumulator_ref, step, t],
                               {"dtype": self._dtype}, name=name or "AccumulatorApplyGradient")

    def take_grad(self, num_required: Any, name: Optional[str] = None) -> _g.Tensor:
        """The accumulated gradient once num_required gradients arrived (waiting till then)."""
        g = self._accumulator_ref.graph
        with g.as_default():
            n = num_required if isinstance(num_required, _g.Tensor) else constant(
                int(num_required), dtype=_dt.int32, name="num_required")
        dims = None if self._shape.rank is None else list(self._shape.dims)
        return g.create_op("AccumulatorTakeGradient", [self._accumulator_ref, n],
                           {"dtype": self._dtype, "shape": dims}, name=name or "AccumulatorTakeGradient").outputs[0]


class SparseConditionalAccumulator(ConditionalAccumulatorBase):
    """A conditional accumulator of sparse gradients (IndexedSlices): gradients of the
    current step (local_step >= the accumulator's global step) are summed per index;
    take_grad waits for num_required of them and returns each index's mean ("MEAN") or sum
    ("SUM"), then advances the global step by one."""

    def __init__(self, dtype: Any, shape: Any = None, shared_name: Optional[str] = None,
                 name: str = "sparse_conditional_accumulator", reduction_type: str = "MEAN"):
        dt, shp, ref = _make_accumulator("SparseConditionalAccumulator", dtype, shape, shared_name, name,
                                         reduction_type)
        super().__init__(dt, shp, ref)

    def apply_grad(self, grad_indices: Any, grad_values: Any, grad_shape: Any = None, local_step: Any = 0,
                   name: Optional[str] = None) -> _g.Operation:
        """An op adding the gradient (rows grad_indices of a tensor of shape grad_shape, whose
        slices are grad_values); dropped when local_step is below the global step."""
        values = (grad_values if isinstance(grad_values, _g.Tensor)
                  else _g.convert_to_tensor(grad_values, dtype=self._dtype, name="gradient_values"))
        if values.dtype != self._dtype:
            raise InvalidArgumentError(f"SparseAccumulatorApplyGradient: the accumulator holds {self._dtype.name} "
                                       f"gradients, got values of {values.dtype.name}")
        g = values.graph
        with g.as_default():
            step = _int64(local_step, "local_step")
            indices = _int64(grad_indices, "gradient_indices")
            shape = (constant(np.zeros(0, np.int64), dtype=_dt.int64) if grad_shape is None
                     else _int64(grad_shape, "gradient_shape"))
            return g.create_op("SparseAccumulatorApplyGradient",
                               [self._accumulator_ref, step, indices, values, shape],
                               {"dtype": self._dtype, "has_known_shape": grad_shape is not None},
                               name=name or "SparseAccumulatorApplyGradient")

    def apply_indexed_slices_grad(self, grad: IndexedSlices, local_step: Any = 0,
                                  name: Optional[str] = None) -> _g.Operation:
        """apply_grad of an IndexedSlices (its indices, values and dense_shape)."""
        return self.apply_grad(grad.indices, grad.values, grad.dense_shape, local_step=local_step, name=name)

    def take_grad(self, num_required: Any, name: Optional[str] = None) -> SparseAccumulatorTakeGradient:
        """(indices, values, shape) of the accumulated gradient once num_required gradients
        arrived (waiting till then); shape[0] is the accumulator's dimension 0 (-1 unknown)."""
        n = num_required if isinstance(num_required, _g.Tensor) else constant(int(num_required), dtype=_dt.int32,
                                                                              name="num_required")
        op = self._accumulator_ref.graph.create_op("SparseAccumulatorTakeGradient", [self._accumulator_ref, n],
                                                   {"dtype": self._dtype},
                                                   name=name or "SparseAccumulatorTakeGradient")
        return SparseAccumulatorTakeGradient(*op.outputs)

    def take_indexed_slices_grad(self, num_required: Any, name: Optional[str] = None) -> IndexedSlices:
        """take_grad's result as IndexedSlices."""
        idx, vals, shape = self.take_grad(num_required, name=name)
        return IndexedSlices(vals, idx, shape)
