"""Flattening and rebuilding nested structures (lists, tuples, namedtuples, dicts)."""
from __future__ import annotations

from typing import Any, List

__all__ = ["flatten", "flatten_up_to", "pack_sequence_as", "assert_same_structure"]


def _is_seq(x: Any) -> bool:
    return isinstance(x, (list, tuple, dict))


def flatten(structure: Any) -> List[Any]:
    """Leaves in a fixed order (dicts by sorted key, as TensorFlow's nest)."""
    if isinstance(structure, dict):
        return [leaf for k in sorted(structure) for leaf in flatten(structure[k])]
    if isinstance(structure, (list, tuple)):
        return [leaf for x in structure for leaf in flatten(x)]
    return [structure]


def flatten_up_to(shallow: Any, tree: Any) -> List[Any]:
    """`tree`'s subtrees at the positions of `shallow`'s leaves, in flatten's order (a leaf of
    shallow may stand for a list in tree: a shape, say).  ValueError where they differ."""
    if isinstance(shallow, dict):
        if not isinstance(tree, dict) or sorted(tree) != sorted(shallow):
            raise ValueError(f"expected a dict with keys {sorted(shallow)}, got {tree!r}")
        return [leaf for k in sorted(shallow) for leaf in flatten_up_to(shallow[k], tree[k])]
    if isinstance(shallow, (list, tuple)):
        if not isinstance(tree, (list, tuple)) or len(tree) != len(shallow):
            raise ValueError(f"expected a sequence of {len(shallow)}, got {tree!r}")
        return [leaf for a, b in zip(shallow, tree) for leaf in flatten_up_to(a, b)]
    return [tree]


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
