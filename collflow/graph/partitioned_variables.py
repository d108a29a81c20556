"""TF1's `tf.create_partitioned_variables`: a list of variables that together hold a
tensor of `shape`, split along the one dimension `slicing` cuts into more than one part
("<scope>/part_<i>", the first `dim % parts` parts one row longer, as TF's)."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from .. import dtypes as _dt

__all__ = ["create_partitioned_variables"]


def _part_sizes(dim: int, parts: int) -> List[int]:
    base, rem = divmod(dim, parts)
    return [base + (1 if i < rem else 0) for i in range(parts)]


def create_partitioned_variables(shape: Sequence[int], slicing: Sequence[int], initializer: Any,
                                 dtype: Any = _dt.float32, trainable: bool = True,
                                 collections: Optional[Sequence[str]] = None, name: Optional[str] = None,
                                 reuse: Any = None) -> List[Any]:
    """The parts as Variables.  `initializer` may be an initializer (called with each
    part's shape) or an array of the full shape (each part gets its slice)."""
    from .variable_scope import get_variable, variable_scope
    shape, slicing = list(shape), list(slicing)
    if len(shape) != len(slicing):
        raise ValueError("The 'shape' and 'slicing' of a partitioned Variable must have the length: "
                         f"shape: {shape}, slicing: {slicing}")
    if len(shape) < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1: shape: {shape}")
    cut = [i for i, s in enumerate(slicing) if s > 1]
    if len(cut) > 1:
        raise ValueError(f"Can only slice a variable along one dimension: shape: {tuple(shape)}, "
                         f"partitioning: {slicing}")
    axis = cut[0] if cut else 0
    parts = slicing[axis] if cut else 1
    if parts > shape[axis]:
        raise ValueError(f"Cannot split dimension {axis} of size {shape[axis]} into {parts} parts")
    full = None if callable(initializer) else np.asarray(initializer)
    if full is not None and list(full.shape) != shape:
        raise ValueError(f"An array initializer must have the variable's shape {shape}, got {list(full.shape)}")
    out, offset = [], 0
    with variable_scope(name, "PartitionedVariable", reuse=reuse):
        for i, n in enumerate(_part_sizes(shape[axis], parts)):
            pshape = list(shape)
            pshape[axis] = n
            if full is None:
                init = initializer
                part_shape: Any = pshape
            else:  # a value: this part's slice (get_variable takes its shape from it)
                idx = [slice(None)] * len(shape)
                idx[axis] = slice(offset, offset + n)
                init = np.ascontiguousarray(full[tuple(idx)]).astype(_dt.as_dtype(dtype).np)
                part_shape = None
            out.append(get_variable(f"part_{i}", shape=part_shape, dtype=dtype, initializer=init,
                                    trainable=trainable, collections=collections))
            offset += n
    return out
