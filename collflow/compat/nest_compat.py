"""TF1's `tf.nest` and `tf.compat` namespaces.

tf.nest follows TensorFlow's nest: lists, tuples, namedtuples, mappings (flattened in sorted
key order, rebuilt in the structure's own key order) and `attrs` classes are structures;
strings, arrays, tensors, sets and None are leaves.  collflow's internal graph/nest.py is
laxer (lists and tuples alike) and stays as it is for the library's own use.
"""
from __future__ import annotations

import collections
import collections.abc as _abc
import contextlib
import datetime
import numbers
import os
import sys
from typing import Any, Callable, Iterator, List

import numpy as np

from collflow.graph.shape import dimension_at_index, dimension_value

__all__ = ["nest", "compat"]


# --- tf.nest ----------------------------------------------------------------------------------
def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _is_attrs(x: Any) -> bool:
    return hasattr(type(x), "__attrs_attrs__")


def is_nested(seq: Any) -> bool:
    """Whether `seq` is a structure (list, tuple, namedtuple, mapping, attrs object), not a leaf."""
    return isinstance(seq, (list, tuple, _abc.Mapping)) or _is_attrs(seq)


def _sorted_keys(d: Any) -> List[Any]:
    try:
        return sorted(d.keys())
    except TypeError:
        raise TypeError("nest only supports dicts with sortable keys.") from None


def _children(x: Any) -> List[Any]:
    if isinstance(x, _abc.Mapping):
        return [x[k] for k in _sorted_keys(x)]
    if _is_attrs(x):
        return [getattr(x, a.name) for a in type(x).__attrs_attrs__]
    return list(x)


def _rebuild(instance: Any, args: List[Any]) -> Any:
    """A structure like `instance` with children `args` (in flatten's order)."""
    if isinstance(instance, _abc.Mapping):
        by_key = dict(zip(_sorted_keys(instance), args))
        if isinstance(instance, collections.defaultdict):
            out = collections.defaultdict(instance.default_factory)
            for k in instance:
                out[k] = by_key[k]
            return out
        return type(instance)((k, by_key[k]) for k in instance)
    if _is_namedtuple(instance):
        return type(instance)(*args)
    if _is_attrs(instance):
        return type(instance)(*args)
    if isinstance(instance, tuple):
        return tuple(args) if type(instance) is tuple else type(instance)(args)
    return type(instance)(args) if isinstance(instance, list) else list(args)


def flatten(structure: Any, expand_composites: bool = False) -> List[Any]:
    """The leaves of `structure`, depth first; a mapping's values in sorted key order."""
    if not is_nested(structure):
        return [structure]
    out: List[Any] = []
    for c in _children(structure):
        out.extend(flatten(c))
    return out


def _packed(structure: Any, flat: List[Any], index: int) -> tuple:
    packed = []
    for s in _children(structure):
        if is_nested(s):
            index, child = _packed(s, flat, index)
            packed.append(_rebuild(s, child))
        else:
            packed.append(flat[index])
            index += 1
    return index, packed


def pack_sequence_as(structure: Any, flat_sequence: Any, expand_composites: bool = False) -> Any:
    """`flat_sequence`'s items put back into the shape of `structure` (flatten's inverse)."""
    if not is_nested(flat_sequence):
        raise TypeError(f"Attempted to pack value:\n  {flat_sequence}\ninto a structure, but found incompatible "
                        f"type `{type(flat_sequence)}` instead.")
    flat = list(flat_sequence)
    if not is_nested(structure):
        if len(flat) != 1:
            raise ValueError(f"The target structure is of type `{type(structure)}`\n  {structure}\nHowever the "
                             f"input is a sequence ({type(flat_sequence)}) of length {len(flat)}.\n  "
                             f"{flat_sequence}\nnest cannot guarantee that it is safe to map one to the other.")
        return flat[0]
    n = len(flatten(structure))
    if n != len(flat):
        raise ValueError(f"Could not pack sequence. Structure had {n} atoms, but flat_sequence had {len(flat)} "
                         f"items.  Structure: {structure}, flat_sequence: {flat_sequence}.")
    _, packed = _packed(structure, flat, 0)
    return _rebuild(structure, packed)


def _same_type(a: Any, b: Any) -> bool:
    if _is_namedtuple(a) and _is_namedtuple(b):  # same-named namedtuples with the same fields match
        return type(a).__name__ == type(b).__name__ and type(a)._fields == type(b)._fields
    if isinstance(a, _abc.Mapping) and isinstance(b, _abc.Mapping):
        return True  # TF's check_types treats any two mappings as one type
    return type(a) is type(b)


def _check_same(a: Any, b: Any, check_types: bool) -> None:
    na, nb = is_nested(a), is_nested(b)
    if na != nb:
        raise ValueError(f"The two structures don't have the same nested structure.\n\nFirst structure: {a}\n\n"
                         f"Second structure: {b}")
    if not na:
        return
    if check_types and not _same_type(a, b):
        raise TypeError(f"The two structures don't have the same sequence type. Input structure has type "
                        f"{type(a)}, while shallow structure has type {type(b)}.")
    if isinstance(a, _abc.Mapping) and isinstance(b, _abc.Mapping) and set(a) != set(b):
        raise ValueError(f"The two dictionaries don't have the same set of keys. First structure has keys "
                         f"{_sorted_keys(a)}, while second structure has keys {_sorted_keys(b)}.")
    ca, cb = _children(a), _children(b)
    if len(ca) != len(cb):
        raise ValueError(f"The two structures don't have the same nested structure.\n\nFirst structure: {a}\n\n"
                         f"Second structure: {b}")
    for x, y in zip(ca, cb):
        _check_same(x, y, check_types)


def assert_same_structure(nest1: Any, nest2: Any, check_types: bool = True, expand_composites: bool = False) -> None:
    """ValueError where the nesting differs, TypeError where (check_types) a sequence type does."""
    _check_same(nest1, nest2, check_types)


def map_structure(func: Callable[..., Any], *structure: Any, **kwargs: Any) -> Any:
    """func applied to the leaves of one or more structures of the same shape, packed like the first."""
    if not callable(func):
        raise TypeError(f"func must be callable, got: {func}")
    if not structure:
        raise ValueError("Must provide at least one structure")
    check_types = kwargs.pop("check_types", True)
    kwargs.pop("expand_composites", None)
    if kwargs:
        raise ValueError(f"Only valid keyword arguments are `check_types` and `expand_composites`, not: "
                         f"`{'`, `'.join(kwargs)}`")
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types=check_types)
    flats = [flatten(s) for s in structure]
    return pack_sequence_as(structure[0], [func(*xs) for xs in zip(*flats)])


from collflow.compat.namespaces import _Namespace  # noqa: E402  (one namespace type for every tf.* namespace)


nest = _Namespace("nest", "tf.nest: flatten, pack_sequence_as, map_structure, assert_same_structure, is_nested.", {
    "flatten": flatten, "pack_sequence_as": pack_sequence_as, "map_structure": map_structure,
    "assert_same_structure": assert_same_structure, "is_nested": is_nested})


# --- tf.compat --------------------------------------------------------------------------------
def as_bytes(bytes_or_text: Any, encoding: str = "utf-8") -> bytes:
    """bytes as they are (a bytearray copied), text encoded."""
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text: Any, encoding: str = "utf-8") -> str:
    """text as it is, bytes decoded."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_str_any(value: Any, encoding: str = "utf-8") -> str:
    """bytes decoded, anything else str()."""
    if isinstance(value, bytes):
        return as_text(value, encoding)
    return str(value)


def path_to_str(path: Any) -> Any:
    """A path-like object's path as text; anything else as it is."""
    if hasattr(path, "__fspath__"):
        path = as_str_any(path.__fspath__())
    return path


def _date_number(year: int, month: int, day: int) -> int:
    return (year << 9) | (month << 5) | day


# the date of TF 1.15's API that collflow follows; TF_FORWARD_COMPATIBILITY_DELTA_DAYS moves it
_HORIZON = datetime.date(2019, 10, 17)
_state = {"number": None}


def _base_number() -> int:
    d = _HORIZON
    delta = os.environ.get("TF_FORWARD_COMPATIBILITY_DELTA_DAYS")
    if delta:
        d += datetime.timedelta(days=int(delta))
    return _date_number(d.year, d.month, d.day)


def forward_compatible(year: int, month: int, day: int) -> bool:
    """True when the forward-compatibility horizon is past the given date (TF's rule)."""
    number = _state["number"] if _state["number"] is not None else _base_number()
    return number > _date_number(year, month, day)


@contextlib.contextmanager
def forward_compatibility_horizon(year: int, month: int, day: int) -> Iterator[None]:
    """Sets the horizon to the given date inside the `with` block (for tests)."""
    datetime.date(year, month, day)  # ValueError for a date that does not exist, as TF
    old = _state["number"]
    _state["number"] = _date_number(year, month, day)
    try:
        yield
    finally:
        _state["number"] = old


class _CompatNamespace(_Namespace):
    def __getattr__(self, name: str) -> Any:
        if name == "v1":  # collflow.compat.v1 itself (imported by then: it imports this module)
            return sys.modules["collflow.compat.v1"]
        return super().__getattr__(name)

    def __dir__(self) -> List[str]:
        return sorted(super().__dir__() + ["v1"])


compat = _CompatNamespace("compat", "tf.compat: string conversions, number type tuples, forward compatibility.", {
    "as_bytes": as_bytes, "as_text": as_text, "as_str": as_text, "as_str_any": as_str_any,
    "path_to_str": path_to_str, "bytes_or_text_types": (bytes, str),
    "complex_types": (numbers.Complex, np.number), "integral_types": (numbers.Integral, np.integer),
    "real_types": (numbers.Real, np.integer, np.floating), "dimension_value": dimension_value,
    "dimension_at_index": dimension_at_index, "forward_compatible": forward_compatible,
    "forward_compatibility_horizon": forward_compatibility_horizon})
