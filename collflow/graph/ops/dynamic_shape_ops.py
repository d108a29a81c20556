"""Reshape to a shape computed at run time (tf.reshape(x, [tf.shape(x)[0], -1]), tf.reshape(x,
tf.stack([b, -1]))): the target is a 1-D int tensor, not a list known when building.

The static shape keeps what can be known: the rank (the target's length) and every entry the
graph can evaluate now (a constant, or a constant inside a stack of scalars)."""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import register_gradient, register_op
from ..shape import TensorShape
from .op_util import single

__all__ = ["reshape_dynamic"]


def _static_entries(shape: _g.Tensor) -> Optional[List[Optional[int]]]:
    """The target's entries where known now (None where computed), or None if its length is unknown."""
    from .shape_eval import partial_vector
    return partial_vector(shape)


def _spec(op: _g.Operation) -> list:
    x, shape = op.inputs
    if not shape.dtype.is_integer or shape.shape.rank not in (None, 1):
        raise ValueError(f"the target shape must be a 1-D integer tensor, got {shape.dtype.name} {shape.shape}")
    entries = _static_entries(shape)
    if entries is None:
        return [(x.dtype, TensorShape(None))]
    dims = [None if e is None or e < 0 else e for e in entries]
    n = x.shape.num_elements()
    if n is None and x.shape.rank is not None and 0 in x.shape.dims:
        n = 0  # a known empty dimension: no elements
    if n is not None and entries.count(-1) == 1 and all(e is not None for e in entries):
        known = int(np.prod([e for e in entries if e != -1]))
        if known and n % known == 0:
            dims[entries.index(-1)] = n // known
    return [(x.dtype, TensorShape(dims))]


register_op("ReshapeDynamic", _spec, host_inputs=(1,),
            doc="x reshaped to the run-time shape tensor (one entry may be -1)")


def reshape_dynamic(x: Any, shape: Any, name: Optional[str] = None) -> _g.Tensor:
    """x reshaped to `shape`, a 1-D int tensor evaluated at run time."""
    shape = _g.convert_to_tensor(shape)
    if shape.dtype not in (_dt.int32, _dt.int64):
        raise ValueError(f"reshape: the target shape must be int32 or int64, got {shape.dtype.name}")
    return single("ReshapeDynamic", [x, shape], name=name or "Reshape")


@register_gradient("ReshapeDynamic")
def _grad(op: _g.Operation, g: Any) -> list:
    from .array_ops import reshape_like
    return [reshape_like(g, op.inputs[0]), None]
