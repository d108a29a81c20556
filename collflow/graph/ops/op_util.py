"""Small helpers shared by the op-constructor modules."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .. import graph as _g
from ..shape import TensorShape, as_shape

__all__ = ["make_op", "single", "same_shape_fn", "passthrough_shape_fn", "input_shape", "axis_list"]


def make_op(op_type: str, inputs: Sequence[Any], attrs: Optional[Dict[str, Any]] = None,
            name: Optional[str] = None) -> _g.Operation:
    """Creates an op in the graph of its first Tensor input (else the default graph)."""
    g = None
    for x in inputs:
        if isinstance(x, _g.Tensor):
            g = x.graph
            break
        gg = getattr(x, "graph", None)
        if isinstance(gg, _g.Graph):
            g = gg
            break
    if g is None:
        g = _g.get_default_graph()
    return g.create_op(op_type, list(inputs), attrs, name=name)


def single(op_type: str, inputs: Sequence[Any], attrs: Optional[Dict[str, Any]] = None,
           name: Optional[str] = None) -> _g.Tensor:
    """make_op for a one-output op, returning that output."""
    return make_op(op_type, inputs, attrs, name).outputs[0]


def same_shape_fn(op: _g.Operation) -> List[Tuple[Any, TensorShape]]:
    """Output 0 has the dtype and shape of input 0."""
    x = op.inputs[0]
    return [(x.dtype, x.shape)]


passthrough_shape_fn = same_shape_fn


def input_shape(op: _g.Operation, i: int) -> TensorShape:
    return op.inputs[i].shape


def axis_list(axis: Union[None, int, Sequence[int]], rank: Optional[int]) -> Optional[Tuple[int, ...]]:
    """Normalizes an axis attribute to a sorted tuple of non-negative axes (None = all)."""
    if axis is None:
        return None
    if isinstance(axis, int):
        axis = (axis,)
    out = []
    for a in axis:
        a = int(a)
        if rank is not None:
            if not -rank <= a < rank:
                raise ValueError(f"axis {a} is out of range for a tensor of rank {rank}")
            a %= rank
        out.append(a)
    return tuple(sorted(set(out)))
