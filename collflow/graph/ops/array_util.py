"""Helpers shared by the array op modules (array_ops.py, slicing_ops.py): static values and
shapes of tensors, axis normalisation, scalar constants."""
from __future__ import annotations

import builtins
from typing import Any, List, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..shape import TensorShape, as_shape
from .constant_op import _to_array, constant

__all__: list = []

# `slice` is a public op; Python's own is needed for index keys
_pyslice = builtins.slice


# -- helpers -------------------------------------------------------------------------------


def _const_value(t: _g.Tensor) -> Optional[np.ndarray]:
    """The value of a Const tensor known at graph-construction time, else None."""
    if t.op.type == "Const":
        return t.op.attrs["value"]
    return None


def _scalar_static(t: _g.Tensor) -> Optional[int]:
    """A scalar int tensor's value when graph construction can tell it, else None: a Const,
    an element shape(x)[i] of a dimension x's static shape knows, or an Identity/int Cast of
    one (zero_state(tf.shape(x)[0], ...) of a statically shaped x thus has a static batch)."""
    val = _const_value(t)
    if val is not None:
        arr = np.asarray(val)
        return int(arr) if arr.ndim == 0 and arr.dtype.kind in "iu" else None
    op = t.op
    if op.type in ("Identity", "Cast") and op.inputs and op.inputs[0].dtype.is_integer:
        return _scalar_static(op.inputs[0])
    if op.type == "StridedSlice" and len(op.inputs) == 1 and op.inputs[0].op.type == "Shape":
        key = op.attrs.get("key")
        x_shape = op.inputs[0].op.inputs[0].shape
        if isinstance(key, tuple) and len(key) == 1 and isinstance(key[0], (int, np.integer)) \
                and x_shape.rank is not None and -x_shape.rank <= int(key[0]) < x_shape.rank:
            d = x_shape.dims[int(key[0])]
            return None if d is None else int(d)
    from .shape_eval import scalar_value  # arithmetic, concats, ... of such values
    return scalar_value(t)


def _shape_tensor_static(t: _g.Tensor) -> TensorShape:
    """What is statically known of the shape that a 1-D int tensor `t` holds: TF's shape
    inference evaluates the small subgraph computing it (constants, shape(x) of a partly known
    x, slices/stacks/concats/casts/arithmetic of those; see shape_eval.py)."""
    from .shape_eval import partial_vector
    entries = partial_vector(t)
    if entries is None:
        return TensorShape(None)
    return TensorShape([None if d is None or d < 0 else d for d in entries])


def _norm_axis(axis: int, rank: Optional[int], what: str, extra: int = 0) -> int:
    """axis in [-(rank+extra), rank+extra) made non-negative; left as is when rank is unknown."""
    axis = int(axis)
    if rank is None:
        return axis
    n = rank + extra
    if not -n <= axis < n:
        raise ValueError(f"{what}: axis {axis} is out of range [{-n}, {n}) for a tensor of rank {rank}")
    return axis % n


def _static_dims(x: _g.Tensor) -> Optional[Tuple[int, ...]]:
    """x's shape as a tuple of ints when fully known, else None."""
    return tuple(x.shape.dims) if x.shape.is_fully_defined() else None  # type: ignore[arg-type]


def _like_inputs(x: _g.Tensor) -> Tuple[list, Optional[Tuple[int, ...]]]:
    """([], static shape) when x's shape is fully known, else ([x], None) to read it at run time."""
    dims = _static_dims(x)
    return ([], dims) if dims is not None else ([x], None)


def _like_shape(op: _g.Operation, i: int) -> TensorShape:
    """Static shape of a helper op's `shape` attr, or of its optional like-input i."""
    if op.attrs.get("shape") is not None:
        return TensorShape(op.attrs["shape"])
    return op.inputs[i].shape if len(op.inputs) > i else TensorShape(None)


def _scalar(value: Any, dtype: Any = None, graph: Optional[_g.Graph] = None) -> _g.Tensor:
    """`value` as a tensor of `dtype`: a Tensor as is (dtype checked), else a rank-0 constant."""
    if isinstance(value, _g.Tensor) or hasattr(value, "handle"):
        return _g.convert_to_tensor(value, dtype=dtype)
    arr = _to_array(value, None if dtype is None else _dt.as_dtype(dtype))
    dt = _dt.as_dtype(arr.dtype)
    if arr.ndim:
        raise InvalidArgumentError(f"expected a scalar, got {value!r}")
    arr = arr.copy()  # own it, read-only: consumers must never write into a constant
    arr.setflags(write=False)
    g = graph or _g.get_default_graph()
    return g.create_op("Const", [], {"value": arr, "dtype": dt}, name="Const").outputs[0]


def _run_time(v: Any) -> bool:
    """Whether a size argument holds a tensor whose value the graph does not determine (the
    caller then builds its op with the value as an input instead of an attr)."""
    if hasattr(v, "handle"):  # a variable: read when the op runs
        return True
    if isinstance(v, _g.Tensor):
        from .op_util import _static
        return _static(v) is None
    if isinstance(v, (list, tuple)) and _g._holds_tensor(v):
        return any(_run_time(e) for e in v)
    return False


def _int_list(v: Any, what: str) -> List[int]:
    """A static list of ints from a list/tuple/ndarray or a Const tensor."""
    if isinstance(v, _g.Tensor):
        from .op_util import _static
        c = _static(v)   # a constant, or what the graph determines (stack of constants, rank, ...)
        if c is None:
            raise TypeError(f"{what} must be known when the graph is built (a list of ints or a constant), "
                            f"got the computed tensor {v.name}")
        v = c
    if isinstance(v, (list, tuple)) and _g._holds_tensor(v):
        # [tf.shape(y)[0], 1]: each tensor entry must have a value the graph determines
        return [d for e in v for d in _int_list(e, what)]
    arr = np.asarray(v)
    if arr.dtype.kind not in "iu" and arr.size:
        raise TypeError(f"{what} must be integers, got {v!r}")
    return [int(d) for d in arr.reshape(-1)]


def _static_shape_arg(shape: Any, what: str) -> Tuple[int, ...]:
    dims = as_shape(shape)
    if not dims.is_fully_defined():
        raise InvalidArgumentError(f"{what} needs a fully known shape (or a shape tensor), got {dims}")
    return tuple(dims.as_list())


def _constant_filled(shape: Any, dtype: Any, value: int, what: str, name: Optional[str]) -> _g.Tensor:
    dt = _dt.as_dtype(dtype)  # a quantized dtype is kept (its array holds the plain integers)
    return constant(np.full(_static_shape_arg(shape, what), value, dt.np), dtype=dt if dt.is_quantized else None,
                    name=name or what)
