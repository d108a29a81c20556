"""Partially known static shapes.

A TensorShape is either of unknown rank (`dims is None`) or a tuple whose entries are
ints or None (unknown size).  Shape functions of ops use these helpers to infer what they
can at graph-construction time; the executor checks the rest at run time.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator, Optional, Sequence, Tuple, Union

__all__ = ["TensorShape", "as_shape", "unknown_shape", "broadcast_static", "Dimension", "dimension_value",
           "dimension_at_index"]

Dim = Optional[int]


# tf.enable_v2_tensorshape(): shape[i] gives a plain int or None (TF2's TensorShape) instead of
# a Dimension; set by collflow.compat's switch, read by TensorShape.__getitem__
_V2_INDEXING = [False]


def set_v2_tensorshape(enabled: bool) -> None:
    """TF's enable/disable_v2_tensorshape: shape[i] as int/None (True) or Dimension (False)."""
    _V2_INDEXING[0] = bool(enabled)


def v2_tensorshape_enabled() -> bool:
    return _V2_INDEXING[0]


class Dimension(int):
    """A known size as TensorFlow 1.x's `shape[i]` gives it: an int (arithmetic, comparisons,
    indexing and hashing as one) that also has TF1's `.value`, so `x.get_shape()[1].value`
    works.  An unknown size is an UnknownDimension (TF1's Dimension(None)), whose `.value`
    is None.  `TensorShape.dims`, iteration and `as_list()` give plain ints and None (what
    collflow's own code reads); `dimension_value(shape[i])` gives the int or None of either."""

    def __new__(cls, value: Any) -> Any:
        if value is None or isinstance(value, UnknownDimension):
            return UnknownDimension()
        v = value.value if isinstance(value, Dimension) else int(value)
        if v < 0:
            raise ValueError(f"Dimension {v} must be >= 0")
        return super().__new__(cls, v)

    @property
    def value(self) -> int:
        return int(self)

    def __repr__(self) -> str:
        return f"Dimension({int(self)})"

    def __str__(self) -> str:  # TF1: str(Dimension(3)) == "3", as in names built with f-strings
        return str(int(self))

    __format__ = int.__format__

    def is_compatible_with(self, other: Any) -> bool:
        """True when `other` is unknown or the same size (TF1's Dimension.is_compatible_with)."""
        o = dimension_value(other)
        return o is None or o == int(self)

    def assert_is_compatible_with(self, other: Any) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {dimension_value(other)} are not compatible")

    def merge_with(self, other: Any) -> "Dimension":
        """This size, when `other` is unknown or equal; ValueError otherwise."""
        self.assert_is_compatible_with(other)
        return self


class UnknownDimension:
    """TF1's Dimension(None), what `shape[i]` gives for an unknown size: `.value` is None,
    comparisons give None and arithmetic an unknown Dimension (as TF1), int() refuses."""

    __slots__ = ()
    value = None

    def __repr__(self) -> str:
        return "Dimension(None)"

    def __str__(self) -> str:
        return "?"

    def __eq__(self, other: object) -> Any:
        if other is None or isinstance(other, (int, UnknownDimension)):
            return None
        return NotImplemented

    def __ne__(self, other: object) -> Any:
        return self.__eq__(other)

    __lt__ = __le__ = __gt__ = __ge__ = __ne__
    __hash__ = None  # type: ignore[assignment]

    def _unknown(self, other: Any) -> "UnknownDimension":
        if other is None or isinstance(other, (int, UnknownDimension)):
            return UnknownDimension()
        return NotImplemented

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _unknown
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _unknown

    def is_compatible_with(self, other: Any) -> bool:
        return True

    def assert_is_compatible_with(self, other: Any) -> None:
        return None

    def merge_with(self, other: Any) -> Any:
        """`other` as a Dimension: an unknown size merges with anything."""
        return Dimension(dimension_value(other))

    def __bool__(self) -> bool:
        return False  # TF1: `x.shape[0] or tf.shape(x)[0]` takes the run-time size

    def __int__(self) -> int:
        raise TypeError("an unknown Dimension (None) has no int value; check .value is None first")

    __index__ = __int__


def dimension_value(dimension: Any) -> Optional[int]:
    """The int (or None) of a dimension: a Dimension, an int or None (tf.dimension_value)."""
    if dimension is None or isinstance(dimension, UnknownDimension):
        return None
    return int(dimension)


def dimension_at_index(shape: Any, index: int) -> Any:
    """as_shape(shape)[index] (tf.dimension_at_index); a Dimension(None) where unknown."""
    d = as_shape(shape)[index]
    return UnknownDimension() if d is None else d


class TensorShape:
    """A static shape: unknown rank, or a tuple of dims each an int or None."""

    __slots__ = ("dims",)

    def __init__(self, dims: Union[None, Iterable[Any]]):
        if dims is None:
            self.dims: Optional[Tuple[Dim, ...]] = None
        else:
            out = []
            for d in dims:
                if d is None or isinstance(d, UnknownDimension) or (hasattr(d, "__index__") is False and d == -1):
                    out.append(None)
                else:
                    d = int(d)
                    out.append(None if d < 0 else d)
            self.dims = tuple(out)

    # -- queries ----------------------------------------------------------------
    @property
    def rank(self) -> Optional[int]:
        return None if self.dims is None else len(self.dims)

    @property
    def ndims(self) -> Optional[int]:
        return self.rank

    def is_fully_defined(self) -> bool:
        return self.dims is not None and all(d is not None for d in self.dims)

    def as_list(self) -> list:
        if self.dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape")
        return list(self.dims)

    def as_tuple(self) -> Optional[Tuple[Dim, ...]]:
        return self.dims

    def num_elements(self) -> Optional[int]:
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self.dims:  # type: ignore[union-attr]
            n *= d  # type: ignore[operator]
        return n

    def is_compatible_with(self, other: Any) -> bool:
        other = as_shape(other)
        if self.dims is None or other.dims is None:
            return True
        if len(self.dims) != len(other.dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self.dims, other.dims))

    def merge_with(self, other: Any) -> "TensorShape":
        other = as_shape(other)
        if self.dims is None:
            return other
        if other.dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"shapes {self} and {other} are not compatible")
        return TensorShape(a if a is not None else b for a, b in zip(self.dims, other.dims))

    def matches_value(self, shape: Sequence[int]) -> bool:
        """True when a concrete array shape is compatible with this static shape."""
        if self.dims is None:
            return True
        if len(self.dims) != len(shape):
            return False
        for a, b in zip(self.dims, shape):
            if a is not None and a != b:
                return False
        return True

    # -- TF1's shape algebra (what programs call while building graphs) -----------
    def concatenate(self, other: Any) -> "TensorShape":
        """self's dims followed by other's; unknown rank when either rank is unknown."""
        other = as_shape(other)
        if self.dims is None or other.dims is None:
            return TensorShape(None)
        return TensorShape(self.dims + other.dims)

    def __add__(self, other: Any) -> "TensorShape":
        return self.concatenate(other)

    def __radd__(self, other: Any) -> "TensorShape":
        return as_shape(other).concatenate(self)

    def most_specific_compatible_shape(self, other: Any) -> "TensorShape":
        """The most specific shape both self and other are compatible with: unknown rank when
        the ranks differ or one is unknown, else each dim where both agree (None elsewhere)."""
        other = as_shape(other)
        if self.dims is None or other.dims is None or len(self.dims) != len(other.dims):
            return TensorShape(None)
        return TensorShape(a if a == b else None for a, b in zip(self.dims, other.dims))

    def assert_is_compatible_with(self, other: Any) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def assert_same_rank(self, other: Any) -> None:
        other = as_shape(other)
        if self.rank is not None and other.rank is not None and self.rank != other.rank:
            raise ValueError(f"Shapes {self} and {other} must have the same rank")

    def assert_has_rank(self, rank: int) -> None:
        if self.rank not in (None, rank):
            raise ValueError(f"Shape {self} must have rank {rank}")

    def assert_is_fully_defined(self) -> None:
        if not self.is_fully_defined():
            raise ValueError(f"Shape {self} is not fully defined")

    def with_rank(self, rank: int) -> "TensorShape":
        """This shape with its rank known to be `rank` (ValueError when it has another)."""
        try:
            return self.merge_with(unknown_shape(rank))
        except ValueError:
            raise ValueError(f"Shape {self} must have rank {rank}") from None

    def with_rank_at_least(self, rank: int) -> "TensorShape":
        if self.rank is not None and self.rank < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def with_rank_at_most(self, rank: int) -> "TensorShape":
        if self.rank is not None and self.rank > rank:
            raise ValueError(f"Shape {self} must have rank at most {rank}")
        return self

    def __bool__(self) -> bool:
        return self.dims is not None  # TF: a scalar's shape is true, an unknown one false

    # -- sequence protocol ------------------------------------------------------
    def __len__(self) -> int:
        if self.dims is None:
            raise ValueError("len() of a TensorShape of unknown rank")
        return len(self.dims)

    def __iter__(self) -> Iterator[Dim]:
        if self.dims is None:
            raise ValueError("cannot iterate a TensorShape of unknown rank")
        return iter(self.dims)

    def __getitem__(self, i: Any) -> Any:
        if self.dims is None:
            if not isinstance(i, int):
                return TensorShape(None)
            return None if _V2_INDEXING[0] else UnknownDimension()
        if isinstance(i, slice):
            return TensorShape(self.dims[i])
        d = self.dims[i]
        if _V2_INDEXING[0]:
            return d
        return UnknownDimension() if d is None else Dimension(d)

    def __eq__(self, other: object) -> bool:
        try:
            return self.dims == as_shape(other).dims
        except (TypeError, ValueError):
            return False

    def __hash__(self) -> int:
        return hash(self.dims)

    def __repr__(self) -> str:
        if self.dims is None:
            return "<unknown>"
        return "(" + ", ".join("?" if d is None else str(d) for d in self.dims) + ("," if len(self.dims) == 1 else "") + ")"


def as_shape(value: Any) -> TensorShape:
    """Converts None, a TensorShape, or a sequence of ints/None to a TensorShape."""
    if isinstance(value, TensorShape):
        return value
    if value is None:
        return TensorShape(None)
    if isinstance(value, int):
        return TensorShape((value,))
    return TensorShape(value)


def unknown_shape(rank: Optional[int] = None) -> TensorShape:
    return TensorShape(None if rank is None else [None] * rank)


def broadcast_static(a: TensorShape, b: TensorShape) -> TensorShape:
    """NumPy broadcasting on static shapes; raises ValueError when surely incompatible."""
    if a.dims is None or b.dims is None:
        return TensorShape(None)
    da, db = list(a.dims), list(b.dims)
    n = max(len(da), len(db))
    da = [1] * (n - len(da)) + da
    db = [1] * (n - len(db)) + db
    out: list = []
    for x, y in zip(da, db):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None:
            out.append(y)
        elif y is None:
            out.append(x)
        elif x == y:
            out.append(x)
        else:
            raise ValueError(f"shapes {a} and {b} cannot be broadcast together")
    return TensorShape(out)
