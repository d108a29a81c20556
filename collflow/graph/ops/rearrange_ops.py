"""tf.sort, tf.argsort, tf.roll and tf.repeat (TF 1.15's top-level names), composed from
existing ops as TensorFlow composes the first two (top_k along the last axis), so every
gradient comes from the parts: sort's through top_k's, roll's through the slices and concat,
repeat's through gather's (IndexedSlices along axis 0).

Shifts, axes and repeat counts must be known when the graph is built (Python ints or
constants); a count only a run can tell raises UnimplementedError saying so.
"""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError, UnimplementedError
from .. import graph as _g
from ..registry import not_differentiable, register_op
from . import array_ops as _a
from . import bitwise_ops as _bw
from . import math_ops as _m
from . import misc_ops as _misc
from . import slicing_ops as _sl
from .array_util import _const_value
from .constant_op import identity
from .op_util import single

__all__ = ["sort", "argsort", "roll", "repeat", "searchsorted"]


def _static_ints(v: Any, what: str, fn: str) -> List[int]:
    if isinstance(v, _g.Tensor):
        c = _const_value(v)
        if c is None:
            raise UnimplementedError(f"{fn}: {what} must be known when the graph is built (a Python int or list, "
                                     f"or a constant), got the tensor {v.name}")
        v = c
    return [int(x) for x in np.asarray(v).reshape(-1)]


def _axis(axis: int, rank: Optional[int], fn: str) -> int:
    if rank is None:
        raise InvalidArgumentError(f"{fn} needs an input of known rank")
    if not -rank <= axis < rank:
        raise InvalidArgumentError(f"{fn}: axis {axis} is out of range for rank {rank}")
    return axis % rank


def _sorted_last(x: _g.Tensor, direction: str, fn: str) -> Any:
    """(values, indices) of x sorted along its last axis: top_k of x (DESCENDING) or of -x."""
    if direction not in ("ASCENDING", "DESCENDING"):
        raise InvalidArgumentError(f"{fn}: direction must be 'ASCENDING' or 'DESCENDING', got {direction!r}")
    n = x.shape.dims[-1] if x.shape.rank else None
    k = n if n is not None else _a.shape(x)[-1]
    if direction == "DESCENDING":
        return _misc.top_k(x, k)
    if x.dtype.is_integer:
        # ~x reverses the order of every integer type without overflow (-x would wrap the
        # signed minimum onto itself, and unsigned values onto the wrong side), as TF's sort
        vals, idx = _misc.top_k(_bw.invert(x), k)
        return _bw.invert(vals), idx
    vals, idx = _misc.top_k(_m.negative(x), k)
    return _m.negative(vals), idx


def _last_or_axis(axis: int, rank: Optional[int], fn: str) -> Optional[int]:
    """The axis in [0, rank); None for the last axis of an input of unknown rank (top_k's own)."""
    if rank is None and axis == -1:
        return None
    return _axis(axis, rank, fn)


def _along(x: _g.Tensor, axis: Optional[int], fn: Any) -> Any:
    """fn applied along `axis` (moved last and back; None: the last axis)."""
    r = x.shape.rank
    if axis is None or axis == r - 1:
        return fn(x)
    perm = list(range(r))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    out = fn(_a.transpose(x, perm))
    return _a.transpose(out, perm)


def sort(values: Any, axis: int = -1, direction: str = "ASCENDING", name: Optional[str] = None) -> _g.Tensor:
    """values sorted along `axis` (ties keep their order)."""
    x = _g.convert_to_tensor(values)
    ax = _last_or_axis(int(axis), x.shape.rank, "sort")
    with x.graph.as_default(), x.graph.name_scope(name or "sort"):
        return _along(x, ax, lambda t: _sorted_last(t, direction, "sort")[0])


def argsort(values: Any, axis: int = -1, direction: str = "ASCENDING", stable: bool = False,
            name: Optional[str] = None) -> _g.Tensor:
    """The int32 indices that sort `values` along `axis` (equal values: the lower index first,
    so stable either way)."""
    x = _g.convert_to_tensor(values)
    ax = _last_or_axis(int(axis), x.shape.rank, "argsort")
    with x.graph.as_default(), x.graph.name_scope(name or "argsort"):
        return _along(x, ax, lambda t: _sorted_last(t, direction, "argsort")[1])


def roll(input: Any, shift: Any, axis: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002 - TF name
    """Elements shifted along each axis by shift (wrapping around): out[(i + s) % n] = in[i]."""
    x = _g.convert_to_tensor(input)
    shifts = _static_ints(shift, "shift", "roll")
    axes = _static_ints(axis, "axis", "roll")
    if len(shifts) != len(axes):
        raise InvalidArgumentError(f"roll: shift {shifts} and axis {axes} must have the same length")
    r = x.shape.rank
    total = {}
    for s, a in zip(shifts, axes):
        a = _axis(a, r, "roll")
        total[a] = total.get(a, 0) + s  # an axis named twice shifts by the sum, as TF
    with x.graph.as_default(), x.graph.name_scope(name or "Roll"):
        out = x
        for a, s in total.items():
            n = x.shape.dims[a]
            if n is None:
                raise UnimplementedError(f"roll: the size of axis {a} must be known when the graph is built, "
                                         f"input shape {x.shape}")
            s = s % n if n else 0
            if s == 0:
                continue
            head = [0] * r
            size_tail = [-1] * r
            size_tail[a] = n - s
            tail_begin = list(head)
            tail_begin[a] = n - s
            out = _a.concat([_sl.slice(out, tail_begin, [-1] * r), _sl.slice(out, head, size_tail)], a)
        return identity(out, name="Roll") if out is x else out


def repeat(input: Any, repeats: Any, axis: Optional[int] = None, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """Each element (axis=None: of the flattened input) or each slice along `axis` repeated
    repeats times (one count, or one per slice)."""
    x = _g.convert_to_tensor(input)
    reps = _static_ints(repeats, "repeats", "repeat")
    if any(r < 0 for r in reps):
        raise InvalidArgumentError(f"repeat: repeats must be >= 0, got {reps}")
    with x.graph.as_default(), x.graph.name_scope(name or "Repeat"):
        if axis is None:
            x = _a.reshape(x, [-1])
            axis = 0
        ax = _axis(int(axis), x.shape.rank, "repeat")
        n = x.shape.dims[ax]
        if n is None:
            raise UnimplementedError(f"repeat: the size of axis {ax} must be known when the graph is built, "
                                     f"input shape {x.shape}")
        if len(reps) not in (1, n):
            raise InvalidArgumentError(f"repeat: {len(reps)} repeat counts for an axis of size {n}")
        idx = np.repeat(np.arange(n, dtype=np.int32), reps if len(reps) == n else reps[0])
        return _sl.gather(x, idx, axis=ax)


def _searchsorted_spec(op: _g.Operation) -> list:
    seq, vals = op.inputs
    if seq.shape.rank is not None and vals.shape.rank is not None and seq.shape.rank != vals.shape.rank:
        raise ValueError(f"searchsorted: sorted_sequence {seq.shape} and values {vals.shape} must have one rank")
    return [(op.attrs["out_type"], vals.shape)]


register_op("SearchSorted", _searchsorted_spec, host_only=True, doc="insertion points of values in the sorted innermost rows")
not_differentiable("SearchSorted")


def searchsorted(sorted_sequence: Any, values: Any, side: str = "left", out_type: Any = _dt.int32,
                 name: Optional[str] = None) -> _g.Tensor:
    """For each value, where it goes in its row of sorted_sequence (the innermost axis; the
    leading axes match): the first position with a not-smaller entry (side="left") or with
    a larger one ("right"), as tf.searchsorted."""
    if side not in ("left", "right"):
        raise ValueError(f"side must be either 'right' or 'left'.  Saw: {side}.")
    seq = _g.convert_to_tensor(sorted_sequence)
    vals = _g.convert_to_tensor(values, dtype=seq.dtype)
    if seq.shape.rank == 0 or vals.shape.rank == 0:
        raise ValueError("searchsorted needs tensors of rank >= 1")
    return single("SearchSorted", [seq, vals], {"side": side, "out_type": _dt.as_dtype(out_type)},
                  name=name or "SearchSorted")
