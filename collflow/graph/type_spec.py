"""tf.TypeSpec and its kinds: TensorSpec, SparseTensorSpec, RaggedTensorSpec.

A spec is a value's dtype and static shape without the value: what a dataset's element_spec
holds (data/ builds on these), and what tf.type_spec_from_value gives.  Equality, hashing,
compatibility and repr are TensorFlow's.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from . import graph as _g
from .shape import TensorShape, as_shape

__all__ = ["TypeSpec", "TensorSpec", "SparseTensorSpec", "RaggedTensorSpec", "type_spec_from_value"]


def _shape_str(s: TensorShape) -> str:
    """TF's str(TensorShape): '(2, None)', '<unknown>', '()', '(3,)'."""
    if s.rank is None:
        return "<unknown>"
    dims = ["None" if d is None else str(d) for d in s.dims]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _shape_repr(s: TensorShape) -> str:
    """TF's repr(TensorShape): 'TensorShape([2, None])', 'TensorShape(None)'."""
    if s.rank is None:
        return "TensorShape(None)"
    return "TensorShape([" + ", ".join("None" if d is None else str(d) for d in s.dims) + "])"


def _dtype_repr(dt: _dt.DType) -> str:
    return "tf." + dt.name


def _common_shape(a: TensorShape, b: TensorShape) -> TensorShape:
    """The most specific shape both are compatible with (unknown rank for different ranks)."""
    if a.rank is None or b.rank is None or a.rank != b.rank:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.dims, b.dims)])


class TypeSpec:
    """tf.TypeSpec: the type of a value (its class, dtype, static shape), without the value.
    Subclasses define `_components` (what equality, hashing and repr use)."""

    __slots__ = ()

    def _components(self) -> Tuple[Any, ...]:
        raise NotImplementedError

    @property
    def value_type(self) -> type:
        """The Python class of the values this spec describes."""
        raise NotImplementedError

    def is_compatible_with(self, spec_or_value: Any) -> bool:
        """Whether spec_or_value (a spec, or a value whose spec is taken) could have this type:
        same kind and dtype, compatible shapes."""
        other = spec_or_value
        if not isinstance(other, TypeSpec):
            try:
                other = type_spec_from_value(other)
            except (TypeError, ValueError):
                return False
        return (type(other) is type(self) and self._same_kind(other)
                and self.shape.is_compatible_with(other.shape))

    def _same_kind(self, other: "TypeSpec") -> bool:
        return self.dtype == other.dtype

    def most_specific_compatible_type(self, other: "TypeSpec") -> "TypeSpec":
        """The most specific spec compatible with both (shapes relaxed where they differ);
        ValueError where there is none (another kind or dtype), as TensorFlow's."""
        shape = None
        if type(other) is type(self) and self._same_kind(other):
            shape = _common_shape(self.shape, other.shape)
        if shape is None:
            raise ValueError(f"No TypeSpec is compatible with both {self!r} and {other!r}")
        return self._with_shape(shape)

    def _with_shape(self, shape: TensorShape) -> "TypeSpec":
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._components() == other._components()

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((type(self).__name__,) + self._components())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(self._repr_parts())})"

    def _repr_parts(self) -> list:
        return [_shape_repr(self.shape), _dtype_repr(self.dtype)]


class TensorSpec(TypeSpec):
    """tf.TensorSpec(shape, dtype=float32, name=None): a dense tensor's type."""

    __slots__ = ("_shape", "_dtype", "_name")

    def __init__(self, shape: Any, dtype: Any = _dt.float32, name: Optional[str] = None):
        self._shape = _checked_shape(shape)
        self._dtype = _dt.as_dtype(dtype)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"TensorSpec: name must be a string or None, got {type(name).__name__}")
        self._name = name

    shape = property(lambda self: self._shape, doc="The static shape (a TensorShape).")
    dtype = property(lambda self: self._dtype, doc="The dtype.")
    name = property(lambda self: self._name, doc="The name (None if none).")

    @property
    def value_type(self) -> type:
        return _g.Tensor

    @classmethod
    def from_tensor(cls, tensor: Any, name: Optional[str] = None) -> "TensorSpec":
        """The spec of a tensor (or variable): its shape and dtype, named `name` or its op's name."""
        if isinstance(getattr(tensor, "handle", None), _g.Tensor):  # a Variable: its value
            tensor = _g.convert_to_tensor(tensor)
        if not isinstance(tensor, _g.Tensor):
            raise ValueError(f"`tensor` should be a tf.Tensor, but got type {type(tensor).__name__}.")
        return cls(tensor.shape, tensor.dtype, name or tensor.op.name)

    @classmethod
    def from_spec(cls, spec: Any, name: Optional[str] = None) -> "TensorSpec":
        """A TensorSpec with spec's shape and dtype, named `name` or spec's name."""
        return cls(spec.shape, spec.dtype, name or getattr(spec, "name", None))

    def is_compatible_with(self, spec_or_value: Any) -> bool:
        """Whether a TensorSpec or a Tensor has this dtype and a compatible shape (the name
        plays no part; other values, NumPy arrays too, are not compatible: TF's DenseSpec)."""
        other = spec_or_value
        return (isinstance(other, (TensorSpec, _g.Tensor)) and other.dtype == self._dtype
                and self._shape.is_compatible_with(other.shape))

    def most_specific_compatible_type(self, other: "TypeSpec") -> "TypeSpec":
        """The most specific TensorSpec both specs are compatible with (TF's rules)."""
        if type(other) is type(self) and other.name != self.name:
            raise ValueError(f"No TypeSpec is compatible with both {self!r} and {other!r}")
        return super().most_specific_compatible_type(other)

    def _with_shape(self, shape: TensorShape) -> "TensorSpec":
        return TensorSpec(shape, self._dtype, self._name)

    def _components(self) -> Tuple[Any, ...]:
        return (self._shape, self._dtype, self._name)

    def __repr__(self) -> str:
        return f"TensorSpec(shape={_shape_str(self._shape)}, dtype={_dtype_repr(self._dtype)}, name={self._name!r})"


class SparseTensorSpec(TypeSpec):
    """tf.SparseTensorSpec(shape=None, dtype=float32): a SparseTensor's dense shape and dtype."""

    __slots__ = ("_shape", "_dtype")

    def __init__(self, shape: Any = None, dtype: Any = _dt.float32):
        self._shape = _checked_shape(shape)
        self._dtype = _dt.as_dtype(dtype)

    shape = property(lambda self: self._shape, doc="The dense shape (a TensorShape).")
    dtype = property(lambda self: self._dtype, doc="The values' dtype.")

    @property
    def value_type(self) -> type:
        from .sparse_tensor import SparseTensor
        return SparseTensor

    @classmethod
    def from_value(cls, value: Any) -> "SparseTensorSpec":
        """The spec of a SparseTensor (or SparseTensorValue)."""
        return cls(_sparse_shape(value), value.values.dtype if hasattr(value.values, "dtype") else
                   _dt.as_dtype(np.asarray(value.values).dtype))

    def _with_shape(self, shape: TensorShape) -> "SparseTensorSpec":
        return SparseTensorSpec(shape, self._dtype)

    def _components(self) -> Tuple[Any, ...]:
        return (self._shape, self._dtype)


class RaggedTensorSpec(TypeSpec):
    """tf.RaggedTensorSpec(shape=None, dtype=float32, ragged_rank=None, row_splits_dtype=int64):
    a RaggedTensor's type; ragged_rank defaults to rank - 1."""

    __slots__ = ("_shape", "_dtype", "_ragged_rank", "_row_splits_dtype")

    def __init__(self, shape: Any = None, dtype: Any = _dt.float32, ragged_rank: Optional[int] = None,
                 row_splits_dtype: Any = _dt.int64, flat_values_spec: Any = None):
        if flat_values_spec is not None:
            raise NotImplementedError("RaggedTensorSpec(flat_values_spec=...): collflow's ragged tensors have "
                                      "dense flat values of the spec's dtype")
        self._shape = _checked_shape(shape)
        self._dtype = _dt.as_dtype(dtype)
        self._row_splits_dtype = _dt.as_dtype(row_splits_dtype)
        if self._row_splits_dtype not in (_dt.int32, _dt.int64):
            raise ValueError(f"row_splits_dtype must be int32 or int64, got {self._row_splits_dtype.name}")
        rank = self._shape.rank
        if ragged_rank is None:
            if rank is None:
                raise ValueError("Must specify ragged_rank or a shape with a known rank.")
            ragged_rank = rank - 1
        ragged_rank = int(ragged_rank)
        if ragged_rank < 0 or (rank is not None and ragged_rank >= max(rank, 1)):
            raise ValueError(f"ragged_rank must be non-negative and less than the rank {rank}, got {ragged_rank}")
        self._ragged_rank = ragged_rank

    shape = property(lambda self: self._shape, doc="The static shape (None for ragged dimensions).")
    dtype = property(lambda self: self._dtype, doc="The values' dtype.")
    ragged_rank = property(lambda self: self._ragged_rank, doc="The number of ragged dimensions.")
    row_splits_dtype = property(lambda self: self._row_splits_dtype, doc="The row partitions' dtype.")

    @property
    def value_type(self) -> type:
        from .ops.ragged_tensor import RaggedTensor
        return RaggedTensor

    @classmethod
    def from_value(cls, value: Any) -> "RaggedTensorSpec":
        """The spec of a RaggedTensor."""
        return cls(value.shape, value.dtype, value.ragged_rank, value.row_splits.dtype)

    def _same_kind(self, other: "TypeSpec") -> bool:
        return (self._dtype == other._dtype and self._ragged_rank == other._ragged_rank
                and self._row_splits_dtype == other._row_splits_dtype)

    def _with_shape(self, shape: TensorShape) -> "RaggedTensorSpec":
        return RaggedTensorSpec(shape, self._dtype, self._ragged_rank, self._row_splits_dtype)

    def _components(self) -> Tuple[Any, ...]:
        return (self._shape, self._dtype, self._ragged_rank, self._row_splits_dtype)

    def _repr_parts(self) -> list:
        return super()._repr_parts() + [str(self._ragged_rank), _dtype_repr(self._row_splits_dtype)]


def _checked_shape(shape: Any) -> TensorShape:
    try:
        return as_shape(shape)
    except (TypeError, ValueError) as e:
        raise TypeError(f"Failed to convert {shape!r} to a shape: {e}") from None


def _sparse_shape(value: Any) -> TensorShape:
    """A SparseTensor's static dense shape (its dense_shape's constant value where known)."""
    ds = value.dense_shape
    if isinstance(ds, _g.Tensor):
        get = getattr(value, "get_shape", None)
        if get is not None:
            return as_shape(get())
        n = ds.shape.dims[0] if ds.shape.rank == 1 else None
        return TensorShape(None if n is None else [None] * n)
    return TensorShape([int(d) for d in np.asarray(ds).reshape(-1)])


def type_spec_from_value(value: Any) -> TypeSpec:
    """tf.type_spec_from_value: the spec of a Tensor, Variable, SparseTensor(Value),
    RaggedTensor, or of a NumPy/Python value (as the constant it converts to)."""
    from .sparse_tensor import SparseTensor, SparseTensorValue
    from .ops.ragged_tensor import RaggedTensor
    if isinstance(value, TypeSpec):
        raise TypeError(f"Could not build a TypeSpec for {value!r} of unsupported type {type(value)}.")
    if isinstance(value, _g.Tensor):
        return TensorSpec(value.shape, value.dtype)
    if isinstance(getattr(value, "handle", None), _g.Tensor):  # a Variable: the spec of its value
        return TensorSpec(value.shape, value.dtype)
    if isinstance(value, (SparseTensor, SparseTensorValue)):
        return SparseTensorSpec.from_value(value)
    if isinstance(value, RaggedTensor):
        return RaggedTensorSpec.from_value(value)
    if isinstance(value, (np.ndarray, np.generic, int, float, bool, complex, list, tuple, str, bytes)):
        try:
            a = np.asarray(value)
            if a.dtype == object:
                raise ValueError
            if a.dtype == np.float64 and not isinstance(value, (np.ndarray, np.generic)):
                a = a.astype(np.float32)  # Python floats become float32 constants, as in TF
            elif a.dtype == np.int64 and not isinstance(value, (np.ndarray, np.generic)):
                a = a.astype(np.int32)
            dt = _dt.string if a.dtype.kind in "SU" else _dt.as_dtype(a.dtype)
            return TensorSpec(a.shape, dt)
        except (TypeError, ValueError):
            pass
    raise TypeError(f"Could not build a TypeSpec for {value!r} of unsupported type {type(value)}.")
