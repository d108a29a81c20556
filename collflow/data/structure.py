"""The type specs of datasets, optionals and TensorArrays, and TF 1.15's `*Structure` names.

TensorFlow 1.15 replaced tf.data's Structure classes by TypeSpecs and kept the old names in
tf.data.experimental: `Structure` is tf.TypeSpec, `DatasetStructure` DatasetSpec,
`OptionalStructure` OptionalSpec, and `TensorStructure(dtype, shape)`,
`SparseTensorStructure(dtype, shape)`, `RaggedTensorStructure(dtype, shape, ragged_rank)`,
`TensorArrayStructure(dtype, element_shape, dynamic_size, infer_shape)` are functions making
the specs (note the dtype first).  `get_structure(dataset_or_iterator)` is its element_spec.
"""
from __future__ import annotations

from typing import Any, Tuple

from .. import dtypes as _dt
from ..graph import nest
from ..graph.shape import TensorShape, as_shape
from ..graph.type_spec import RaggedTensorSpec, SparseTensorSpec, TensorSpec, TypeSpec, _dtype_repr, _shape_repr

__all__ = ["DatasetSpec", "OptionalSpec", "TensorArraySpec", "get_structure", "Structure", "TensorStructure",
           "SparseTensorStructure", "RaggedTensorStructure", "TensorArrayStructure", "DatasetStructure",
           "OptionalStructure"]


def _nest_compatible(a: Any, b: Any) -> bool:
    return _same_nest(a, b) and all(x.is_compatible_with(y) for x, y in zip(nest.flatten(a), nest.flatten(b)))


def _same_nest(a: Any, b: Any) -> bool:
    try:
        nest.assert_same_structure(a, b)
    except (ValueError, TypeError):
        return False
    return True


def _nest_key(s: Any) -> Any:
    """A hashable form of a nest of specs (dict keys sorted, as nest orders them)."""
    if isinstance(s, dict):
        return ("dict",) + tuple((k, _nest_key(s[k])) for k in sorted(s))
    if isinstance(s, (tuple, list)):
        return (type(s).__name__,) + tuple(_nest_key(x) for x in s)
    return s


class _NestSpec(TypeSpec):
    """A spec whose type is a nest of element specs (compatible: same nest, compatible leaves)."""

    __slots__ = ("_element_spec",)

    @property
    def element_spec(self) -> Any:
        return self._element_spec

    def is_compatible_with(self, spec_or_value: Any) -> bool:
        other = spec_or_value
        if not isinstance(other, TypeSpec):
            try:
                other = type(self).from_value(other)  # type: ignore[attr-defined]
            except (TypeError, ValueError, AttributeError):
                return False
        return (type(other) is type(self) and self._extra() == other._extra()  # type: ignore[attr-defined]
                and _nest_compatible(self._element_spec, other._element_spec))  # type: ignore[attr-defined]

    def _extra(self) -> Tuple[Any, ...]:
        return ()

    def most_specific_compatible_type(self, other: "TypeSpec") -> "TypeSpec":
        if (type(other) is not type(self) or self._extra() != other._extra()  # type: ignore[attr-defined]
                or not _same_nest(self._element_spec, other._element_spec)):  # type: ignore[attr-defined]
            raise ValueError(f"No TypeSpec is compatible with both {self!r} and {other!r}")
        merged = nest.pack_sequence_as(self._element_spec, [
            a.most_specific_compatible_type(b) for a, b in
            zip(nest.flatten(self._element_spec), nest.flatten(other._element_spec))])  # type: ignore[attr-defined]
        return self._with_element_spec(merged)

    def _with_element_spec(self, spec: Any) -> "TypeSpec":
        raise NotImplementedError

    def _components(self) -> Tuple[Any, ...]:
        return (_nest_key(self._element_spec),) + self._extra()


class DatasetSpec(_NestSpec):
    """tf.data.DatasetSpec(element_spec, dataset_shape=()): the type of a Dataset (1.15's
    tf.data.experimental.DatasetStructure)."""

    __slots__ = ("_dataset_shape",)

    def __init__(self, element_spec: Any, dataset_shape: Any = ()):
        self._element_spec = element_spec
        self._dataset_shape = as_shape(dataset_shape)

    @property
    def value_type(self) -> type:
        from .dataset import Dataset
        return Dataset

    @staticmethod
    def from_value(value: Any) -> "DatasetSpec":
        """The spec of a Dataset value."""
        if not hasattr(value, "element_spec") or not hasattr(value, "_elements"):
            raise TypeError(f"DatasetSpec.from_value takes a Dataset, got {type(value).__name__}")
        return DatasetSpec(value.element_spec)

    def _extra(self) -> Tuple[Any, ...]:
        return (self._dataset_shape,)

    def _with_element_spec(self, spec: Any) -> "DatasetSpec":
        return DatasetSpec(spec, self._dataset_shape)

    def __repr__(self) -> str:
        return f"DatasetSpec({self._element_spec!r}, {_shape_repr(self._dataset_shape)})"


class OptionalSpec(_NestSpec):
    """The type of a tf.data.experimental.Optional (1.15's OptionalStructure)."""

    def __init__(self, element_spec: Any):
        self._element_spec = element_spec

    @property
    def value_type(self) -> type:
        from .dataset_experimental_more import Optional
        return Optional

    @staticmethod
    def from_value(value: Any) -> "OptionalSpec":
        """The spec of an Optional value."""
        if not hasattr(value, "value_structure"):
            raise TypeError(f"OptionalSpec.from_value takes an Optional, got {type(value).__name__}")
        return OptionalSpec(value.value_structure)

    def _with_element_spec(self, spec: Any) -> "OptionalSpec":
        return OptionalSpec(spec)

    def __repr__(self) -> str:
        return f"OptionalSpec({self._element_spec!r},)"


class TensorArraySpec(TypeSpec):
    """tf.TensorArraySpec(element_shape=None, dtype=float32, dynamic_size=False,
    infer_shape=True): the type of a TensorArray."""

    __slots__ = ("_shape", "_dtype", "_dynamic_size", "_infer_shape")

    def __init__(self, element_shape: Any = None, dtype: Any = _dt.float32, dynamic_size: Any = False,
                 infer_shape: bool = True):
        self._shape = as_shape(element_shape) if element_shape is not None else TensorShape(None)
        self._dtype = _dt.as_dtype(dtype)
        self._dynamic_size = dynamic_size
        self._infer_shape = infer_shape

    shape = property(lambda self: self._shape, doc="The elements' shape.")
    dtype = property(lambda self: self._dtype, doc="The elements' dtype.")

    @property
    def value_type(self) -> type:
        from ..graph.tensor_array import TensorArray
        return TensorArray

    def _same_kind(self, other: "TypeSpec") -> bool:
        return (self._dtype == other._dtype and self._dynamic_size == other._dynamic_size  # type: ignore[attr-defined]
                and self._infer_shape == other._infer_shape)  # type: ignore[attr-defined]

    def _with_shape(self, shape: TensorShape) -> "TensorArraySpec":
        return TensorArraySpec(shape, self._dtype, self._dynamic_size, self._infer_shape)

    def _components(self) -> Tuple[Any, ...]:
        return (self._shape, self._dtype, self._dynamic_size, self._infer_shape)

    def _repr_parts(self) -> list:
        return [_shape_repr(self._shape), _dtype_repr(self._dtype), repr(self._dynamic_size), repr(self._infer_shape)]


def get_structure(dataset_or_iterator: Any) -> Any:
    """tf.data.experimental.get_structure: the element spec (nest of TypeSpecs) of a Dataset
    or Iterator."""
    spec = getattr(dataset_or_iterator, "element_spec", None)
    if spec is None or not (hasattr(dataset_or_iterator, "_elements") or hasattr(dataset_or_iterator, "get_next")):
        raise TypeError(f"Invalid `dataset_or_iterator`. `dataset_or_iterator` must be a `tf.data.Dataset` or "
                        f"tf.data.Iterator object, but got {type(dataset_or_iterator)}.")
    return spec


# -- TF 1.15's names --------------------------------------------------------------------------------------

Structure = TypeSpec
DatasetStructure = DatasetSpec
OptionalStructure = OptionalSpec


def TensorStructure(dtype: Any, shape: Any) -> TensorSpec:  # noqa: N802 - TF's name
    """tf.data.experimental.TensorStructure(dtype, shape): TensorSpec(shape, dtype)."""
    return TensorSpec(shape, dtype)


def SparseTensorStructure(dtype: Any, shape: Any) -> SparseTensorSpec:  # noqa: N802 - TF's name
    """tf.data.experimental.SparseTensorStructure(dtype, shape): SparseTensorSpec(shape, dtype)."""
    return SparseTensorSpec(shape, dtype)


def RaggedTensorStructure(dtype: Any, shape: Any, ragged_rank: int) -> RaggedTensorSpec:  # noqa: N802 - TF's name
    """tf.data.experimental.RaggedTensorStructure(dtype, shape, ragged_rank)."""
    return RaggedTensorSpec(shape, dtype, ragged_rank)


def TensorArrayStructure(dtype: Any, element_shape: Any, dynamic_size: Any,  # noqa: N802 - TF's name
                         infer_shape: bool) -> TensorArraySpec:
    """tf.data.experimental.TensorArrayStructure(dtype, element_shape, dynamic_size, infer_shape)."""
    return TensorArraySpec(element_shape, dtype, dynamic_size, infer_shape)
