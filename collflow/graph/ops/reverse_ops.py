"""Reversals along an axis: tf.reverse (ReverseV2) and tf.reverse_sequence.

Both are their own gradient: reversing the output's gradient the same way gives the input's.
reverse_sequence reverses only the first seq_lengths[b] entries of each batch entry b along
the sequence axis (the rest stay where they are), the building block of bidirectional RNNs
over padded batches.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_gradient, register_op
from ..shape import TensorShape
from .op_util import axis_list, single

__all__ = ["reverse", "reverse_v2", "reverse_sequence"]


def _reverse_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    axis_list(op.attrs["axis"], x.shape.rank)  # range check against a known rank
    if len(set(op.attrs["axis"])) != len(op.attrs["axis"]):
        raise ValueError(f"reverse: axis {list(op.attrs['axis'])} names a dimension twice")
    return [(x.dtype, x.shape)]


def _reverse_sequence_spec(op: _g.Operation) -> list:
    x, lengths = op.inputs
    s, b = op.attrs["seq_axis"], op.attrs["batch_axis"]
    if not lengths.dtype.is_integer or lengths.shape.rank not in (None, 1):
        raise ValueError(f"seq_lengths must be an integer vector, got {lengths.dtype.name} {lengths.shape}")
    r = x.shape.rank
    if r is not None:
        if not (-r <= s < r and -r <= b < r):
            raise ValueError(f"seq_axis {s} and batch_axis {b} must be axes of the input of shape {x.shape}")
        if s % r == b % r:
            raise ValueError(f"seq_axis and batch_axis must differ, both are {s % r}")
        nb = x.shape.dims[b]
        if not TensorShape([nb]).is_compatible_with(lengths.shape):
            raise ValueError(f"seq_lengths has shape {lengths.shape}, the input's batch dimension (axis {b}) is "
                             f"{nb}")
        if nb is None and lengths.shape.rank == 1 and lengths.shape.dims[0] is not None:
            # as TF's shape function: the lengths' size tells an unknown batch dimension
            dims = list(x.shape.dims)
            dims[b] = lengths.shape.dims[0]
            return [(x.dtype, TensorShape(dims))]
    return [(x.dtype, x.shape)]


# ReverseV2(x; axis) -> x with the listed axes reversed
register_op("ReverseV2", _reverse_spec)
# ReverseSequence(x, seq_lengths; seq_axis, batch_axis) -> x with each batch entry's prefix reversed
register_op("ReverseSequence", _reverse_sequence_spec)


def reverse(tensor: Any, axis: Union[int, Sequence[int]], name: Optional[str] = None) -> _g.Tensor:
    """Reverses `tensor` along each axis in `axis` (tf.reverse)."""
    x = _g.convert_to_tensor(tensor)
    from .array_util import _int_list, _run_time
    if _run_time(axis):  # computed when the graph runs: the axes are an input of ReverseDynamic
        from .dynamic_args_ops import reverse_dynamic
        return reverse_dynamic(x, _g.convert_to_tensor(axis), name=name)
    if isinstance(axis, _g.Tensor) or (isinstance(axis, (list, tuple)) and _g._holds_tensor(axis)):
        axis = _int_list(axis, "reverse axis")  # the graph determines it (a constant, shape arithmetic)
    axes = (int(axis),) if np.ndim(axis) == 0 else tuple(int(a) for a in axis)
    rank = x.shape.rank
    if rank is not None:
        for a in axes:
            if not -rank <= a < rank:
                raise InvalidArgumentError(f"reverse: axis {a} is out of range for a tensor of rank {rank}")
        if len({a % rank for a in axes}) != len(axes):
            raise InvalidArgumentError(f"reverse: an axis is given more than once in {list(axes)}")
    return single("ReverseV2", [x], {"axis": axes}, name=name or "ReverseV2")


reverse_v2 = reverse


def reverse_sequence(input: Any, seq_lengths: Any, seq_axis: Optional[int] = None,  # noqa: A002
                     batch_axis: Optional[int] = None, name: Optional[str] = None,
                     seq_dim: Optional[int] = None, batch_dim: Optional[int] = None) -> _g.Tensor:
    """For each b, reverses input[b, :seq_lengths[b]] along `seq_axis` (tf.reverse_sequence).

    batch_axis defaults to 0; seq_dim/batch_dim are TensorFlow's older names.  Entries past
    a sequence's length are left as they are; a length above the sequence axis's size is an
    error when the op runs.
    """
    if seq_axis is None:
        seq_axis = seq_dim
    elif seq_dim is not None and seq_dim != seq_axis:
        raise ValueError(f"reverse_sequence: seq_axis={seq_axis} and seq_dim={seq_dim} disagree")
    if batch_axis is None:
        batch_axis = batch_dim if batch_dim is not None else 0
    if seq_axis is None:
        raise ValueError("reverse_sequence: seq_axis is required")
    x = _g.convert_to_tensor(input)
    # a Python/NumPy list becomes the op's default int64 (an empty list too), a tensor stays itself
    lengths = seq_lengths if isinstance(seq_lengths, _g.Tensor) else _g.convert_to_tensor(
        np.asarray(seq_lengths, dtype=np.int64) if np.asarray(seq_lengths).dtype.kind in "iub" or
        np.size(seq_lengths) == 0 else seq_lengths)
    return single("ReverseSequence", [x, lengths], {"seq_axis": int(seq_axis), "batch_axis": int(batch_axis)},
                  name=name or "ReverseSequence")


@register_gradient("ReverseV2")
def _reverse_grad(op: _g.Operation, g: Any) -> list:
    return [reverse(g, op.attrs["axis"])]


@register_gradient("ReverseSequence")
def _reverse_sequence_grad(op: _g.Operation, g: Any) -> list:
    return [reverse_sequence(g, op.inputs[1], op.attrs["seq_axis"], op.attrs["batch_axis"]), None]
