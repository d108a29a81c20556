"""Small helpers shared by the op-constructor modules."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .. import graph as _g
from ..shape import TensorShape, as_shape

__all__ = ["make_op", "single", "same_shape_fn", "passthrough_shape_fn", "input_shape", "axis_list", "static_axis",
           "dense"]


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


def dense(g: Any) -> _g.Tensor:
    """A gradient as a Tensor (IndexedSlices densified), for gradient functions that need one."""
    return g if isinstance(g, _g.Tensor) else _g.convert_to_tensor(g)


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


def _static(t: Any) -> Any:
    """The value of `t` when the graph alone determines it (constants, the rank or a fully known
    shape of a tensor, ranges, casts, negation, additions and stacks of such), else None."""
    import numpy as np
    op = t.op
    if op.type == "Const":
        return np.asarray(op.attrs["value"])
    if op.type == "Rank" and op.inputs[0].shape.rank is not None:
        return np.asarray(op.inputs[0].shape.rank)
    if op.type == "Shape" and op.inputs[0].shape.is_fully_defined():
        return np.asarray(op.inputs[0].shape.dims)
    if op.type in ("Identity", "Cast", "Neg", "Range", "Add", "AddV2", "Sub", "Pack"):
        vals = [_static(i) for i in op.inputs]
        if any(v is None for v in vals):
            return None
        if op.type in ("Identity", "Cast"):
            return vals[0]
        if op.type == "Neg":
            return -vals[0]
        if op.type == "Range":
            return np.arange(*[v.item() for v in vals])
        if op.type == "Pack" and op.attrs.get("axis", 0) == 0:
            return np.stack(vals)
        if op.type in ("Add", "AddV2"):
            return vals[0] + vals[1]
        if op.type == "Sub":
            return vals[0] - vals[1]
    from .shape_eval import static_value  # slices, concats, products ... of such int values
    return static_value(t)


def static_axis(axis: Any, what: str) -> Any:
    """An axis argument as Python ints: ints and lists pass through; a tensor must have a value
    the graph determines (tf.constant(1), tf.range(1, tf.rank(x)) of a known rank), since an
    axis decides the output's shape."""
    if isinstance(axis, _g.Tensor) or hasattr(axis, "handle"):
        v = _static(_g.convert_to_tensor(axis))
        if v is None:
            raise TypeError(f"{what}: the axis must be known when the graph is built (a Python int, a list, or a "
                            f"tensor of constants), got the run-time tensor {axis!r}")
        return int(v) if v.ndim == 0 else [int(a) for a in v.reshape(-1)]
    if isinstance(axis, (list, tuple)) and any(isinstance(a, _g.Tensor) for a in axis):
        return [static_axis(a, what) for a in axis]
    return axis


def tf_keywords(**aliases: str) -> Any:
    """Decorator: the function also takes TensorFlow's keyword names for its parameters
    (alias=ours), as programs written for TF1 (or rewritten by tf_upgrade_v2) pass them:
    `tf.reduce_sum(input_tensor=x)`, `tf.reshape(tensor=x, shape=s)`.  An alias mapped to
    "" is accepted and ignored (a TF option with nothing to do here, e.g. `optimize=`)."""
    import functools

    def deco(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for tf_name, ours in aliases.items():
                if tf_name in kwargs:
                    value = kwargs.pop(tf_name)
                    if not ours:
                        continue
                    if ours in kwargs:
                        raise TypeError(f"{fn.__name__}() got both {tf_name!r} and {ours!r}")
                    kwargs[ours] = value
            return fn(*args, **kwargs)
        return wrapper
    return deco
