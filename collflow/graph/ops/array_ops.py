"""Array ops: creation, shape manipulation, joining/splitting, indexing.

Shape functions here; gradients in graph/array_grad.py; kernels in kernels/array_kernels.py.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Union

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import register_op, not_differentiable
from ..shape import TensorShape, as_shape, broadcast_static
from .op_util import single, make_op, same_shape_fn, axis_list
from .constant_op import constant

__all__ = [
    "zeros", "ones", "zeros_like", "ones_like", "fill", "where", "reshape", "shape", "size", "rank",
    "concat", "gather", "broadcast_like", "broadcast_to", "size_ratio", "expand_reduced",
]


def _like_spec(op: _g.Operation) -> list:
    dt = op.attrs.get("dtype") or op.inputs[0].dtype
    return [(dt, op.inputs[0].shape)]


register_op("ZerosLike", _like_spec)
register_op("OnesLike", _like_spec)


def _fill_spec(op: _g.Operation) -> list:
    dims, val = op.inputs
    const = _const_value(dims)
    if const is not None:
        shp = TensorShape([int(d) for d in const.reshape(-1)])
    else:
        n = dims.shape[0] if dims.shape.rank == 1 else None
        shp = TensorShape(None if n is None else [None] * n)
    return [(val.dtype, shp)]


register_op("Fill", _fill_spec)


def _where_spec(op: _g.Operation) -> list:
    c, x, y = op.inputs
    if c.dtype != _dt.bool_:
        raise ValueError(f"where: condition must be bool, got {c.dtype.name}")
    if x.dtype != y.dtype:
        raise ValueError(f"where: x and y have different dtypes {x.dtype.name} and {y.dtype.name}")
    return [(x.dtype, broadcast_static(broadcast_static(c.shape, x.shape), y.shape))]


register_op("Select", _where_spec)


def _reshape_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    new = list(op.attrs["shape"])
    if new.count(-1) > 1:
        raise ValueError(f"reshape: at most one -1 in the target shape, got {new}")
    n = x.shape.num_elements()
    if -1 in new:
        known = int(np.prod([d for d in new if d != -1]))
        if n is not None:
            if known == 0 or n % known:
                raise ValueError(f"cannot reshape a tensor of {n} elements (shape {x.shape}) to {new}")
            new[new.index(-1)] = n // known
        else:
            new[new.index(-1)] = None
    elif n is not None and n != int(np.prod(new)):
        raise ValueError(f"cannot reshape a tensor of {n} elements (shape {x.shape}) to {new}")
    return [(x.dtype, TensorShape(new))]


register_op("Reshape", _reshape_spec)
register_op("Shape", lambda op: [(op.attrs["out_type"], TensorShape([op.inputs[0].shape.rank]))])
register_op("Size", lambda op: [(op.attrs["out_type"], TensorShape(()))])
register_op("Rank", lambda op: [(_dt.int32, TensorShape(()))])


def _concat_spec(op: _g.Operation) -> list:
    xs = op.inputs
    axis = op.attrs["axis"]
    dt = xs[0].dtype
    rank = next((t.shape.rank for t in xs if t.shape.rank is not None), None)
    for t in xs:
        if t.dtype != dt:
            raise ValueError(f"concat inputs have different dtypes {dt.name} and {t.dtype.name}")
        if t.shape.rank is not None and t.shape.rank != rank:
            raise ValueError(f"concat inputs have different ranks: {[str(t.shape) for t in xs]}")
    if rank is None:
        return [(dt, TensorShape(None))]
    if not -rank <= axis < rank:
        raise ValueError(f"concat axis {axis} out of range for rank {rank}")
    axis %= rank
    out: List[Optional[int]] = [None] * rank
    total: Optional[int] = 0
    for t in xs:
        if t.shape.rank is None:
            total = None
            continue
        for i, d in enumerate(t.shape.dims):
            if i == axis:
                total = None if (total is None or d is None) else total + d
            elif d is not None:
                if out[i] is not None and out[i] != d:
                    raise ValueError(f"concat: dimension {i} differs: {out[i]} vs {d}")
                out[i] = d
    out[axis] = total
    return [(dt, TensorShape(out))]


register_op("ConcatV2", _concat_spec)


def _gather_spec(op: _g.Operation) -> list:
    params, idx = op.inputs
    if not idx.dtype.is_integer:
        raise ValueError(f"gather indices must be integers, got {idx.dtype.name}")
    axis = op.attrs["axis"]
    if params.shape.rank is None or idx.shape.rank is None:
        return [(params.dtype, TensorShape(None))]
    pd = list(params.shape.dims)
    if not -len(pd) <= axis < len(pd):
        raise ValueError(f"gather axis {axis} out of range for params of shape {params.shape}")
    axis %= len(pd)
    return [(params.dtype, TensorShape(pd[:axis] + list(idx.shape.dims) + pd[axis + 1:]))]


register_op("GatherV2", _gather_spec)


def _bcast_like_spec(op: _g.Operation) -> list:
    return [(op.inputs[0].dtype, op.inputs[1].shape)]


# broadcast input 0 to the (run-time) shape of input 1: a gradient helper
register_op("BroadcastLike", _bcast_like_spec)


def _bcast_to_spec(op: _g.Operation) -> list:
    return [(op.inputs[0].dtype, broadcast_static(op.inputs[0].shape, TensorShape(op.attrs["shape"])))]


register_op("BroadcastTo", _bcast_to_spec)
# number of elements of input 0 divided by that of input 1 (for mean gradients), int64 scalar
register_op("SizeRatio", lambda op: [(_dt.int64, TensorShape(()))])


def _expand_reduced_spec(op: _g.Operation) -> list:
    t, x = op.inputs
    rank = x.shape.rank
    if rank is None:
        return [(t.dtype, TensorShape(None))]
    axes = axis_list(op.attrs["axis"], rank)
    if axes is None:
        axes = tuple(range(rank))
    dims = list(t.shape.dims) if t.shape.rank is not None else None
    out: list = []
    j = 0
    for i in range(rank):
        if i in axes:
            out.append(1)
        else:
            out.append(dims[j] if dims is not None and j < len(dims) else x.shape.dims[i])
            j += 1
    return [(t.dtype, TensorShape(out))]


# re-insert the axes that reducing input 1 over `axis` removed, as size 1, into input 0
register_op("ExpandReduced", _expand_reduced_spec)

not_differentiable("Shape", "Size", "Rank", "ZerosLike", "OnesLike", "SizeRatio")


def _const_value(t: _g.Tensor) -> Optional[np.ndarray]:
    """The value of a Const tensor known at graph-construction time, else None."""
    if t.op.type == "Const":
        return t.op.attrs["value"]
    return None


# -- constructors ----------------------------------------------------------------------


def zeros(shape: Any, dtype: Any = _dt.float32, name: Optional[str] = None) -> _g.Tensor:
    """A tensor of zeros of a static `shape` (a Tensor shape makes a Fill)."""
    if isinstance(shape, _g.Tensor):
        return fill(shape, constant(0, dtype=dtype), name=name or "zeros")
    return constant(np.zeros(tuple(as_shape(shape).as_list()), dtype=_dt.as_dtype(dtype).np), name=name or "zeros")


def ones(shape: Any, dtype: Any = _dt.float32, name: Optional[str] = None) -> _g.Tensor:
    if isinstance(shape, _g.Tensor):
        return fill(shape, constant(1, dtype=dtype), name=name or "ones")
    return constant(np.ones(tuple(as_shape(shape).as_list()), dtype=_dt.as_dtype(dtype).np), name=name or "ones")


def zeros_like(x: Any, dtype: Any = None, name: Optional[str] = None) -> _g.Tensor:
    attrs = {"dtype": _dt.as_dtype(dtype)} if dtype is not None else {}
    return single("ZerosLike", [x], attrs, name=name or "zeros_like")


def ones_like(x: Any, dtype: Any = None, name: Optional[str] = None) -> _g.Tensor:
    attrs = {"dtype": _dt.as_dtype(dtype)} if dtype is not None else {}
    return single("OnesLike", [x], attrs, name=name or "ones_like")


def fill(dims: Any, value: Any, name: Optional[str] = None) -> _g.Tensor:
    """A tensor of shape `dims` (1-D int tensor or list) filled with scalar `value`."""
    d = dims if isinstance(dims, _g.Tensor) else constant(np.asarray(dims, dtype=np.int64), dtype=_dt.int64)
    return single("Fill", [d, value], name=name or "Fill")


def where(condition: Any, x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """Elementwise x where condition else y, with broadcasting."""
    if isinstance(x, _g.Tensor) and not isinstance(y, _g.Tensor):
        y = _g.convert_to_tensor(y, dtype=x.dtype, graph=x.graph)
    elif isinstance(y, _g.Tensor) and not isinstance(x, _g.Tensor):
        x = _g.convert_to_tensor(x, dtype=y.dtype, graph=y.graph)
    return single("Select", [condition, x, y], name=name or "Select")


def reshape(x: Any, shape: Sequence[int], name: Optional[str] = None) -> _g.Tensor:
    """Reshape to a static target shape (one entry may be -1)."""
    if isinstance(shape, _g.Tensor):
        val = _const_value(shape)
        if val is None:
            raise TypeError("reshape needs a static target shape (list of ints, one may be -1)")
        shape = val.tolist()
    shape = [int(-1 if d is None else d) for d in shape]
    return single("Reshape", [x], {"shape": tuple(shape)}, name=name or "Reshape")


def shape(x: Any, out_type: Any = _dt.int32, name: Optional[str] = None) -> _g.Tensor:
    """The run-time shape of x as a 1-D int tensor."""
    return single("Shape", [x], {"out_type": _dt.as_dtype(out_type)}, name=name or "Shape")


def size(x: Any, out_type: Any = _dt.int32, name: Optional[str] = None) -> _g.Tensor:
    return single("Size", [x], {"out_type": _dt.as_dtype(out_type)}, name=name or "Size")


def rank(x: Any, name: Optional[str] = None) -> _g.Tensor:
    return single("Rank", [x], name=name or "Rank")


def concat(values: Sequence[Any], axis: int, name: Optional[str] = None) -> _g.Tensor:
    """Joins tensors along `axis`."""
    values = list(values)
    if len(values) == 1:
        return _g.convert_to_tensor(values[0])
    return single("ConcatV2", values, {"axis": int(axis)}, name=name or "concat")


def gather(params: Any, indices: Any, axis: int = 0, name: Optional[str] = None) -> _g.Tensor:
    """Rows (slices along `axis`) of params at `indices`; the gradient is IndexedSlices for axis 0."""
    return single("GatherV2", [params, indices], {"axis": int(axis)}, name=name or "GatherV2")


def broadcast_like(x: Any, like: Any, name: Optional[str] = None) -> _g.Tensor:
    """x broadcast to the run-time shape of `like`."""
    return single("BroadcastLike", [x, like], name=name or "BroadcastLike")


def broadcast_to(x: Any, shape: Sequence[int], name: Optional[str] = None) -> _g.Tensor:
    return single("BroadcastTo", [x], {"shape": tuple(int(d) for d in shape)}, name=name or "BroadcastTo")


def size_ratio(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """size(x) // size(y) as an int64 scalar (computed at run time)."""
    return single("SizeRatio", [x, y], name=name or "SizeRatio")


def expand_reduced(t: Any, x: Any, axis: Any, name: Optional[str] = None) -> _g.Tensor:
    """Reshapes t (x reduced over `axis` without keepdims) to the keepdims shape."""
    return single("ExpandReduced", [t, x], {"axis": axis}, name=name or "ExpandReduced")
