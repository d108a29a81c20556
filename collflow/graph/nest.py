"""Flattening and rebuilding nested structures (lists, tuples, namedtuples, dicts)."""
from __future__ import annotations

from typing import Any, List

__all__ = ["flatten", "pack_sequence_as", "assert_same_structure"]


def _is_seq(x: Any) -> bool:
    return isinstance(x, (list, tuple, dict))


def flatten(structure: Any) -> List[Any]:
    """Leaves in a fixed order (dicts by sorted key, as TensorFlow's nest)."""
    if isinstance(structure, dict):
        return [leaf for k in sorted(structure) for leaf in flatten(structure[k])]
    if isinstance(structure, (list, tuple)):
        return [leaf for x in structure for leaf in flatten(x)]
    return [structure]


def pack_sequence_as(structure: Any, flat: List[Any]) -> Any:
    it = iter(flat)

    def build(s: Any) -> Any:
        if isinstance(s, dict):
            vals = {k: build(s[k]) for k in sorted(s)}
            return type(s)((k, vals[k]) for k in s)
        if isinstance(s, tuple) and hasattr(s, "_fields"):
            return type(s)(*[build(x) for x in s])
        if isinstance(s, (list, tuple)):
            return type(s)(build(x) for x in s)
        return next(it)

    out = build(structure)
    rest = list(it)
    if rest:
        raise ValueError(f"pack_sequence_as: {len(rest)} leaves left over")
    return out


def assert_same_structure(a: Any, b: Any) -> None:
    def shape(s: Any) -> Any:
        if isinstance(s, dict):
            return ("dict", tuple((k, shape(s[k])) for k in sorted(s)))
        if isinstance(s, (list, tuple)):
            return ("seq", tuple(shape(x) for x in s))
        return "leaf"
    if shape(a) != shape(b):
        raise ValueError(f"structures differ: {a!r} vs {b!r}")
