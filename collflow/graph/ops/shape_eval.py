"""Partial evaluation of small integer tensors while the graph is built, for static shapes.

TF1's C++ shape inference evaluates the small subgraphs that compute shape arguments
(reshape's target, fill's dims, range's bounds, conv2d_transpose's output_shape, resize's
size): a constant, the shape or rank of a tensor whose static shape is known, and slices,
stacks, concatenations, casts and integer arithmetic of those.  Where only part of a shape
vector is known (stack([shape(x)[0], 4]) with x's batch unknown) the known entries still
count.  These helpers do the same: they never claim an entry whose run-time value could
differ (an entry depending on a placeholder or an unknown dimension stays None).
"""
from __future__ import annotations

import builtins
from typing import List, Optional

import numpy as np

from .. import graph as _g

__all__ = ["static_value", "partial_vector", "scalar_value"]

_MAX_ELEMS = 1024   # only small tensors are evaluated (shape vectors, scalars)
_MAX_DEPTH = 32     # bound the walk up a long chain of ops
_ARITH = {"Add": np.add, "AddV2": np.add, "Sub": np.subtract, "Mul": np.multiply, "FloorDiv": np.floor_divide,
          "FloorMod": np.mod, "Maximum": np.maximum, "Minimum": np.minimum}
_REDUCE = {"Prod": np.prod, "Sum": np.sum, "Max": np.max, "Min": np.min}


def _is_int(t: _g.Tensor) -> bool:
    return bool(t.dtype.is_integer)


def static_value(t: _g.Tensor, depth: int = 0) -> Optional[np.ndarray]:
    """The value of a small integer tensor when the graph alone determines it, else None."""
    if depth > _MAX_DEPTH or not isinstance(t, _g.Tensor):
        return None
    op = t.op
    typ = op.type
    if typ == "Const":
        v = np.asarray(op.attrs["value"])
        return v if v.dtype.kind in "iu" and v.size <= _MAX_ELEMS else None
    if not _is_int(t):
        return None
    if typ == "Shape":
        s = op.inputs[0].shape
        return np.asarray(s.dims, np.int64) if s.is_fully_defined() else None
    if typ == "Rank":
        r = op.inputs[0].shape.rank
        return None if r is None else np.asarray(r, np.int64)
    if typ == "Size":
        n = op.inputs[0].shape.num_elements()
        return None if n is None else np.asarray(n, np.int64)
    if typ in ("Identity", "Cast", "Neg", "StridedSlice", "ExpandDims", "Reshape") and op.inputs:
        if typ == "Cast" and not _is_int(op.inputs[0]):
            src = op.inputs[0].op  # cast(constant([3., 1.]), int32): truncated, as TF's Cast
            if src.type != "Const" or not op.inputs[0].dtype.is_floating:
                return None
            f = np.asarray(src.attrs["value"])
            if f.size > _MAX_ELEMS or not np.isfinite(f).all() or (np.abs(f) >= 2 ** 31).any():
                return None
            return np.trunc(f).astype(np.int64)
        v = static_value(op.inputs[0], depth + 1)
        if v is None and typ == "StridedSlice" and op.inputs[0].shape.rank == 1:
            # shape(x)[1:] with x's batch unknown but its other dims known
            inner = partial_vector(op.inputs[0], depth + 1)
            if inner is None:
                return None
            try:
                part = np.asarray(np.asarray(inner, dtype=object)[op.attrs["key"]])
            except (IndexError, TypeError, ValueError):
                return None
            if any(d is None for d in part.reshape(-1)):
                return None
            return part.astype(np.int64)
        if v is None:
            return None
        if typ == "Neg":
            return -v
        if typ == "StridedSlice":
            try:
                return np.asarray(v[op.attrs["key"]])
            except (IndexError, TypeError, ValueError):
                return None  # out of range: the op itself reports it
        if typ == "ExpandDims":
            return np.expand_dims(v, op.attrs["axis"])
        if typ == "Reshape":
            return v.reshape(op.attrs["shape"])
        return v
    if typ in _ARITH and len(op.inputs) == 2:
        a, b = (static_value(i, depth + 1) for i in op.inputs)
        if a is None or b is None or (typ in ("FloorDiv", "FloorMod") and (np.asarray(b) == 0).any()):
            return None
        out = _ARITH[typ](a, b)
        return out if out.size <= _MAX_ELEMS else None
    if typ in _REDUCE and op.inputs:  # reduce_prod(shape(x)[1:]): the flatten idiom
        v = static_value(op.inputs[0], depth + 1)
        if v is None:
            return None
        axis = op.attrs.get("axis")
        try:
            return np.asarray(_REDUCE[typ](v, axis=None if axis is None else tuple(np.atleast_1d(axis)),
                                           keepdims=bool(op.attrs.get("keepdims"))), dtype=v.dtype)
        except (ValueError, TypeError):  # an empty max, a bad axis: left to run time
            return None
    if typ == "Pack" and op.attrs.get("axis", 0) == 0:
        vals = [static_value(i, depth + 1) for i in op.inputs]
        return None if any(v is None for v in vals) else np.stack(vals)
    if typ == "ConcatV2" and op.attrs.get("axis") in (0,):
        vals = [static_value(i, depth + 1) for i in op.inputs]
        return None if any(v is None or v.ndim != 1 for v in vals) else np.concatenate(vals)
    if typ == "Fill":
        dims, val = (static_value(i, depth + 1) for i in op.inputs)
        if dims is None or val is None or int(np.prod(dims)) > _MAX_ELEMS or (np.asarray(dims) < 0).any():
            return None
        return np.full([int(d) for d in dims.reshape(-1)], val)
    if typ == "Range":
        vals = [static_value(i, depth + 1) for i in op.inputs]
        if any(v is None or v.ndim for v in vals) or int(vals[2]) == 0:
            return None
        out = np.arange(int(vals[0]), int(vals[1]), int(vals[2]))
        return out if out.size <= _MAX_ELEMS else None
    return None


def partial_vector(t: _g.Tensor, depth: int = 0) -> Optional[List[Optional[int]]]:
    """The entries of a 1-D integer tensor that the graph determines (None where computed at
    run time), or None when even its length is unknown."""
    if depth > _MAX_DEPTH or not isinstance(t, _g.Tensor) or not _is_int(t):
        return None
    full = static_value(t, depth)
    if full is not None:
        return [int(d) for d in full.reshape(-1)] if full.ndim == 1 else None
    n = t.shape.dims[0] if t.shape.rank == 1 else None
    fallback = None if n is None else [None] * n
    op = t.op
    typ = op.type
    if typ == "Shape":  # shape(x): as much as x's static shape says
        s = op.inputs[0].shape
        return None if s.rank is None else list(s.dims)
    if typ == "Pack" and op.attrs.get("axis", 0) == 0 and all(i.shape.rank == 0 for i in op.inputs):
        return [scalar_value(i, depth + 1) for i in op.inputs]
    if typ == "ConcatV2" and op.attrs.get("axis") == 0:
        parts = [partial_vector(i, depth + 1) for i in op.inputs]
        if any(p is None for p in parts):
            return fallback
        return [d for p in parts for d in p]  # type: ignore[union-attr]
    if typ in ("Identity", "Cast") and op.inputs and _is_int(op.inputs[0]):
        return partial_vector(op.inputs[0], depth + 1) or fallback
    if typ == "StridedSlice" and op.inputs:
        key = op.attrs.get("key")
        if isinstance(key, tuple) and len(key) == 1 and isinstance(key[0], builtins.slice):
            inner = partial_vector(op.inputs[0], depth + 1)
            if inner is not None:
                return inner[key[0]]
        return fallback
    if typ == "Fill":
        dims = static_value(op.inputs[0], depth + 1)
        if dims is not None and dims.size == 1 and 0 <= int(dims.reshape(-1)[0]) <= _MAX_ELEMS:
            return [scalar_value(op.inputs[1], depth + 1)] * int(dims.reshape(-1)[0])
    return fallback


def scalar_value(t: _g.Tensor, depth: int = 0) -> Optional[int]:
    """A scalar integer tensor's value when the graph determines it (shape(x)[i] of a known
    dimension of x, arithmetic of such, constants), else None."""
    if depth > _MAX_DEPTH or not isinstance(t, _g.Tensor) or not _is_int(t):
        return None
    full = static_value(t, depth)
    if full is not None:
        return int(full) if full.ndim == 0 else None
    op = t.op
    if op.type in ("Identity", "Cast") and op.inputs and _is_int(op.inputs[0]):
        return scalar_value(op.inputs[0], depth + 1)
    if op.type in _ARITH and len(op.inputs) == 2:  # shape(x)[1] * 2 with x's dim 1 known
        a, b = (scalar_value(i, depth + 1) for i in op.inputs)
        if a is None or b is None or (op.type in ("FloorDiv", "FloorMod") and b == 0):
            return None
        return int(_ARITH[op.type](a, b))
    if op.type == "StridedSlice" and op.inputs:
        key = op.attrs.get("key")
        if isinstance(key, tuple) and len(key) == 1 and isinstance(key[0], (int, np.integer)):
            inner = partial_vector(op.inputs[0], depth + 1)
            if inner is not None and -len(inner) <= int(key[0]) < len(inner):
                return inner[int(key[0])]
    return None
