"""Array ops: creation, shape manipulation, joining/splitting, slicing, indexing.

Shape functions here; gradients in graph/array_grad.py; kernels in kernels/array_kernels.py.

Ops whose name ends in `Like` (ReshapeLike, SplitLike, BroadcastLike, ScatterLike) take a
second tensor only for its run-time shape; gradient rules use them when a static shape is
not fully known, and use plain static-shape ops otherwise (so the forward tensor need not
be kept alive until the backward pass).
"""
from __future__ import annotations

import builtins
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_op, not_differentiable
from ..shape import TensorShape, as_shape, broadcast_static
from .op_util import single, make_op, axis_list
from .constant_op import constant, _to_array

__all__ = [
    "zeros", "ones", "zeros_like", "ones_like", "fill", "where", "reshape", "shape", "size", "rank",
    "concat", "gather", "broadcast_like", "broadcast_to", "size_ratio", "expand_reduced",
    "transpose", "expand_dims", "squeeze", "split", "slice", "strided_slice", "stack", "unstack",
    "tile", "pad", "one_hot", "identity_n", "newaxis",
    "reshape_like", "split_like", "scatter_like", "reshape_rows",
]

# `slice` is a public op below; Python's own is needed for index keys
_pyslice = builtins.slice
newaxis = None


# -- helpers -------------------------------------------------------------------------------


def _const_value(t: _g.Tensor) -> Optional[np.ndarray]:
    """The value of a Const tensor known at graph-construction time, else None."""
    if t.op.type == "Const":
        return t.op.attrs["value"]
    return None


def _shape_tensor_static(t: _g.Tensor) -> TensorShape:
    """What is statically known of the shape that a 1-D int tensor `t` holds."""
    val = _const_value(t)
    if val is not None:
        return TensorShape([int(d) for d in np.asarray(val).reshape(-1)])
    if t.op.type == "Shape":  # shape(x): as much as x's static shape says
        return t.op.inputs[0].shape
    if t.op.type == "Pack" and t.op.attrs["axis"] == 0 and all(s.shape.rank == 0 for s in t.op.inputs):
        # stack([n, 3]): the constant entries are known
        vals = [_const_value(s) for s in t.op.inputs]
        return TensorShape([None if v is None else int(v) for v in vals])
    n = t.shape[0] if t.shape.rank == 1 else None
    return TensorShape(None if n is None else [None] * n)


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


def _int_list(v: Any, what: str) -> List[int]:
    """A static list of ints from a list/tuple/ndarray or a Const tensor."""
    if isinstance(v, _g.Tensor):
        c = _const_value(v)
        if c is None:
            raise TypeError(f"{what} must be known when the graph is built (a list of ints or a constant), "
                            f"got the computed tensor {v.name}")
        v = c
    arr = np.asarray(v)
    if arr.dtype.kind not in "iu" and arr.size:
        raise TypeError(f"{what} must be integers, got {v!r}")
    return [int(d) for d in arr.reshape(-1)]


# -- creation ------------------------------------------------------------------------------


def _like_spec(op: _g.Operation) -> list:
    dt = op.attrs.get("dtype") or op.inputs[0].dtype
    return [(dt, op.inputs[0].shape)]


register_op("ZerosLike", _like_spec)
register_op("OnesLike", _like_spec)


def _fill_spec(op: _g.Operation) -> list:
    dims, val = op.inputs
    if not dims.dtype.is_integer:
        raise ValueError(f"fill: dims must be integers, got {dims.dtype.name}")
    if dims.shape.rank not in (None, 1):
        raise ValueError(f"fill: dims must be a 1-D tensor, got shape {dims.shape}")
    if val.shape.rank not in (None, 0):
        raise ValueError(f"fill: value must be a scalar, got shape {val.shape}")
    c = _const_value(dims)
    if c is not None and (np.asarray(c) < 0).any():
        raise ValueError(f"fill: dims must be non-negative, got {np.asarray(c).tolist()}")
    shp = _shape_tensor_static(dims)
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


def _one_hot_spec(op: _g.Operation) -> list:
    idx, on, off = op.inputs
    if not idx.dtype.is_integer:
        raise ValueError(f"one_hot: indices must be integers, got {idx.dtype.name}")
    if on.dtype != off.dtype:
        raise ValueError(f"one_hot: on_value ({on.dtype.name}) and off_value ({off.dtype.name}) differ in dtype")
    for t, what in ((on, "on_value"), (off, "off_value")):
        if t.shape.rank not in (None, 0):
            raise ValueError(f"one_hot: {what} must be a scalar, got shape {t.shape}")
    depth, axis = op.attrs["depth"], op.attrs["axis"]
    if idx.shape.rank is None:
        return [(on.dtype, TensorShape(None))]
    dims = list(idx.shape.dims)
    if not -1 <= axis <= len(dims):
        raise ValueError(f"one_hot: axis {axis} is out of range [-1, {len(dims)}] for indices of shape {idx.shape}")
    dims.insert(len(dims) if axis == -1 else axis, depth)
    return [(on.dtype, TensorShape(dims))]


register_op("OneHot", _one_hot_spec)

# -- shapes and reshaping ------------------------------------------------------------------


def _reshape_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    new = list(op.attrs["shape"])
    if new.count(-1) > 1:
        raise ValueError(f"reshape: at most one -1 in the target shape, got {new}")
    if any(d < -1 for d in new):
        raise ValueError(f"reshape: target dims must be >= -1, got {new}")
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


def _reshape_like_spec(op: _g.Operation) -> list:
    x, like = op.inputs
    n, m = x.shape.num_elements(), like.shape.num_elements()
    if n is not None and m is not None and n != m:
        raise ValueError(f"cannot reshape a tensor of shape {x.shape} to the shape {like.shape} of {like.name}")
    return [(x.dtype, like.shape)]


# reshape input 0 to the run-time shape of input 1: a gradient helper
register_op("ReshapeLike", _reshape_like_spec)


def _reshape_rows_spec(op: _g.Operation) -> list:
    g, idx = op.inputs
    if g.shape.rank is None or idx.shape.rank is None:
        return [(g.dtype, TensorShape(None))]
    k = idx.shape.rank
    lead = TensorShape(g.shape.dims[:k]).num_elements()
    return [(g.dtype, TensorShape([lead] + list(g.shape.dims[k:])))]


# flatten the leading rank(input 1) dims of input 0 into one (gather gradient rows)
register_op("ReshapeRows", _reshape_rows_spec)


def _transpose_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    perm = op.attrs["perm"]
    rank = x.shape.rank
    if perm is None:
        return [(x.dtype, TensorShape(None if rank is None else x.shape.dims[::-1]))]
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"transpose: perm {list(perm)} is not a permutation of 0..{len(perm) - 1}")
    if rank is None:
        return [(x.dtype, TensorShape([None] * len(perm)))]
    if len(perm) != rank:
        raise ValueError(f"transpose: perm {list(perm)} has {len(perm)} entries for a tensor of rank {rank} "
                         f"(shape {x.shape})")
    return [(x.dtype, TensorShape([x.shape.dims[p] for p in perm]))]


register_op("Transpose", _transpose_spec)


def _expand_dims_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    rank = x.shape.rank
    if rank is None:
        return [(x.dtype, TensorShape(None))]
    axis = _norm_axis(op.attrs["axis"], rank, "expand_dims", extra=1)
    dims = list(x.shape.dims)
    dims.insert(axis, 1)
    return [(x.dtype, TensorShape(dims))]


register_op("ExpandDims", _expand_dims_spec)


def _squeeze_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    axis = op.attrs["axis"]
    rank = x.shape.rank
    if rank is None:
        return [(x.dtype, TensorShape(None))]
    dims = list(x.shape.dims)
    if axis is None:
        if any(d is None for d in dims):
            return [(x.dtype, TensorShape(None))]  # which dims are 1 is known only at run time
        return [(x.dtype, TensorShape([d for d in dims if d != 1]))]
    axes = {_norm_axis(a, rank, "squeeze") for a in axis}
    for a in sorted(axes):
        if dims[a] is not None and dims[a] != 1:
            raise ValueError(f"squeeze: cannot squeeze axis {a} of shape {x.shape}: its size is {dims[a]}, not 1")
    return [(x.dtype, TensorShape([d for i, d in enumerate(dims) if i not in axes]))]


register_op("Squeeze", _squeeze_spec)


def _bcast_like_spec(op: _g.Operation) -> list:
    return [(op.inputs[0].dtype, op.inputs[1].shape)]


# broadcast input 0 to the (run-time) shape of input 1: a gradient helper
register_op("BroadcastLike", _bcast_like_spec)


def _bcast_to_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    target = [int(d) for d in op.attrs["shape"]]
    if any(d < 0 for d in target):
        raise ValueError(f"broadcast_to: target shape {target} has a negative dimension")
    if x.shape.rank is not None:
        if x.shape.rank > len(target):
            raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to the lower-rank shape {tuple(target)}")
        for d, t in zip(x.shape.dims[::-1], target[::-1]):
            if d is not None and d != 1 and d != t:
                raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to {tuple(target)}")
    return [(x.dtype, TensorShape(target))]


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


def _tile_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    mult = op.attrs["multiples"]
    if any(m < 0 for m in mult):
        raise ValueError(f"tile: multiples must be non-negative, got {list(mult)}")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape([None] * len(mult)))]
    if len(mult) != x.shape.rank:
        raise ValueError(f"tile: multiples {list(mult)} must have one entry per dimension of shape {x.shape}")
    return [(x.dtype, TensorShape([None if d is None else d * m for d, m in zip(x.shape.dims, mult)]))]


register_op("Tile", _tile_spec)


def _tile_grad_spec(op: _g.Operation) -> list:
    return [(op.inputs[0].dtype, _like_shape(op, 1))]


# sum the tiles of input 0 (a Tile output) back to the tiled input's shape: Tile's gradient
register_op("TileGrad", _tile_grad_spec)

# -- joining and splitting -----------------------------------------------------------------


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
    if rank == 0:
        raise ValueError("concat: cannot concatenate scalars (use stack)")
    axis = _norm_axis(axis, rank, "concat")
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
                    raise ValueError(f"concat: dimension {i} differs between inputs: {out[i]} vs {d} "
                                     f"(shapes {[str(t.shape) for t in xs]})")
                out[i] = d
    out[axis] = total
    return [(dt, TensorShape(out))]


register_op("ConcatV2", _concat_spec)


def _pack_spec(op: _g.Operation) -> list:
    xs = op.inputs
    dt = xs[0].dtype
    shp = TensorShape(None)
    for t in xs:
        if t.dtype != dt:
            raise ValueError(f"stack inputs have different dtypes {dt.name} and {t.dtype.name}")
        if not shp.is_compatible_with(t.shape):
            raise ValueError(f"stack inputs must have the same shape, got {[str(t.shape) for t in xs]}")
        shp = shp.merge_with(t.shape)
    if shp.rank is None:
        return [(dt, TensorShape(None))]
    axis = _norm_axis(op.attrs["axis"], shp.rank, "stack", extra=1)
    dims = list(shp.dims)
    dims.insert(axis, len(xs))
    return [(dt, TensorShape(dims))]


register_op("Pack", _pack_spec)


def _unpack_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    num = op.attrs["num"]
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None))] * num
    axis = _norm_axis(op.attrs["axis"], x.shape.rank, "unstack")
    dims = list(x.shape.dims)
    if dims[axis] is not None and dims[axis] != num:
        raise ValueError(f"unstack: num={num} but axis {axis} of shape {x.shape} has size {dims[axis]}")
    del dims[axis]
    return [(x.dtype, TensorShape(dims))] * num


register_op("Unpack", _unpack_spec)


def _split_outputs(x: _g.Tensor, axis: int, sizes: Sequence[Optional[int]]) -> list:
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None))] * len(sizes)
    dims = list(x.shape.dims)
    out = []
    for s in sizes:
        dims[axis] = s
        out.append((x.dtype, TensorShape(dims)))
    return out


def _split_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    n = op.attrs["num_split"]
    if n < 1:
        raise ValueError(f"split: num_or_size_splits must be >= 1, got {n}")
    rank = x.shape.rank
    axis = _norm_axis(op.attrs["axis"], rank, "split")
    d = x.shape.dims[axis] if rank is not None else None
    if d is not None and d % n:
        raise ValueError(f"split: dimension {axis} of shape {x.shape} (size {d}) cannot be split evenly "
                         f"into {n} pieces")
    return _split_outputs(x, axis, [None if d is None else d // n] * n)


register_op("Split", _split_spec)


def _split_v_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    sizes = list(op.attrs["size_splits"])
    if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise ValueError(f"split: size_splits may hold at most one -1 and no other negative size, got {sizes}")
    rank = x.shape.rank
    axis = _norm_axis(op.attrs["axis"], rank, "split")
    d = x.shape.dims[axis] if rank is not None else None
    known = sum(s for s in sizes if s != -1)
    if d is not None:
        if (-1 in sizes and known > d) or (-1 not in sizes and known != d):
            raise ValueError(f"split: size_splits {sizes} do not add up to dimension {axis} of shape {x.shape} "
                             f"(size {d})")
        if -1 in sizes:
            sizes[sizes.index(-1)] = d - known
    return _split_outputs(x, axis, [None if s == -1 else s for s in sizes])


register_op("SplitV", _split_v_spec)


def _split_like_spec(op: _g.Operation) -> list:
    x, likes = op.inputs[0], op.inputs[1:]
    axis = op.attrs["axis"]
    rank = x.shape.rank
    if rank is not None:
        axis = _norm_axis(axis, rank, "split_like")
    sizes = []
    for t in likes:
        r = t.shape.rank
        sizes.append(None if r is None or rank is None else t.shape.dims[axis])
    return _split_outputs(x, axis, sizes)


# split input 0 along `axis` into pieces as long as each further input is there (ConcatV2's gradient)
register_op("SplitLike", _split_like_spec)


def _identity_n_spec(op: _g.Operation) -> list:
    return [(t.dtype, t.shape) for t in op.inputs]


register_op("IdentityN", _identity_n_spec)

# -- gathering and scattering --------------------------------------------------------------


def _gather_spec(op: _g.Operation) -> list:
    params, idx = op.inputs
    if not idx.dtype.is_integer:
        raise ValueError(f"gather indices must be integers, got {idx.dtype.name}")
    axis = op.attrs["axis"]
    if params.shape.rank is None or idx.shape.rank is None:
        return [(params.dtype, TensorShape(None))]
    pd = list(params.shape.dims)
    if not pd:
        raise ValueError("gather: params must be at least 1-D, got a scalar")
    if not -len(pd) <= axis < len(pd):
        raise ValueError(f"gather axis {axis} out of range for params of shape {params.shape}")
    axis %= len(pd)
    return [(params.dtype, TensorShape(pd[:axis] + list(idx.shape.dims) + pd[axis + 1:]))]


register_op("GatherV2", _gather_spec)


def _scatter_like_spec(op: _g.Operation) -> list:
    upd, idx = op.inputs[:2]
    if not idx.dtype.is_integer:
        raise ValueError(f"scatter indices must be integers, got {idx.dtype.name}")
    return [(upd.dtype, _like_shape(op, 2))]


# zeros of the params' shape with input 0 added at input 1's positions along `axis`
# (duplicates accumulate): the dense gradient of a gather along a non-leading axis
register_op("ScatterLike", _scatter_like_spec)

# -- slicing and padding -------------------------------------------------------------------


def _expand_key(key: Tuple[Any, ...], rank: int) -> List[Any]:
    """The key with its Ellipsis (or missing trailing dims) expanded to full slices."""
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > rank:
        raise ValueError(f"too many indices ({consumed}) for a tensor of rank {rank}")
    fill_ = [_pyslice(None)] * (rank - consumed)
    if Ellipsis in key:
        i = key.index(Ellipsis)
        return list(key[:i]) + fill_ + list(key[i + 1:])
    return list(key) + fill_


def _slice_len(s: _pyslice, d: Optional[int]) -> Optional[int]:
    return None if d is None else len(range(*s.indices(d)))


def _index_shape(shape: TensorShape, key: Tuple[Any, ...]) -> TensorShape:
    """Static shape of x[key] for a basic-indexing key."""
    if shape.rank is None:
        return TensorShape(None)
    out: List[Optional[int]] = []
    dims = iter(shape.dims)
    for k in _expand_key(key, shape.rank):
        if k is None:
            out.append(1)
            continue
        d = next(dims)
        if isinstance(k, _pyslice):
            out.append(_slice_len(k, d))
        elif d is not None and not -d <= k < d:
            raise ValueError(f"index {k} is out of bounds for a dimension of size {d} (shape {shape})")
    return TensorShape(out)


def _check_key(key: Tuple[Any, ...]) -> None:
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise ValueError("an index can only have a single ellipsis ('...')")
    for k in key:
        if isinstance(k, _pyslice) and k.step == 0:
            raise ValueError("slice step cannot be zero")


def _strided_slice_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    key = op.attrs["key"]
    _check_key(key)
    return [(x.dtype, _index_shape(x.shape, key))]


# x[key] for a static basic-indexing key (ints, slices with steps, Ellipsis, newaxis)
register_op("StridedSlice", _strided_slice_spec)


def _strided_slice_grad_spec(op: _g.Operation) -> list:
    return [(op.inputs[0].dtype, _like_shape(op, 1))]


# zeros of the sliced tensor's shape with input 0 written at `key`: StridedSlice's gradient
register_op("StridedSliceGrad", _strided_slice_grad_spec)


def _slice_key(begin: Sequence[int], size: Sequence[int]) -> Tuple[_pyslice, ...]:
    return tuple(_pyslice(b, None if s == -1 else b + s) for b, s in zip(begin, size))


def _slice_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    begin, sz = op.attrs["begin"], op.attrs["size"]
    if len(begin) != len(sz):
        raise ValueError(f"slice: begin {list(begin)} and size {list(sz)} differ in length")
    if any(b < 0 for b in begin) or any(s < -1 for s in sz):
        raise ValueError(f"slice: begin must be >= 0 and size >= -1, got begin={list(begin)} size={list(sz)}")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape([None if s == -1 else s for s in sz]))]
    if len(begin) != x.shape.rank:
        raise ValueError(f"slice: begin and size need one entry per dimension of shape {x.shape}, "
                         f"got {len(begin)}")
    out: List[Optional[int]] = []
    for i, (b, s, d) in enumerate(zip(begin, sz, x.shape.dims)):
        if d is not None and (b > d or (s != -1 and b + s > d)):
            raise ValueError(f"slice: begin {b} + size {s} exceeds dimension {i} of shape {x.shape}")
        out.append((None if d is None else d - b) if s == -1 else s)
    return [(x.dtype, TensorShape(out))]


register_op("Slice", _slice_spec)

_PAD_MODES = ("CONSTANT", "REFLECT", "SYMMETRIC")


def _pad_out_shape(x: _g.Tensor, paddings: Sequence[Tuple[int, int]], mode: str) -> TensorShape:
    if any(a < 0 or b < 0 for a, b in paddings):
        raise ValueError(f"pad: paddings must be non-negative, got {[list(p) for p in paddings]}")
    if x.shape.rank is None:
        return TensorShape([None] * len(paddings))
    if len(paddings) != x.shape.rank:
        raise ValueError(f"pad: paddings need one [before, after] pair per dimension of shape {x.shape}, "
                         f"got {len(paddings)}")
    out: List[Optional[int]] = []
    for i, ((a, b), d) in enumerate(zip(paddings, x.shape.dims)):
        if d is not None and mode != "CONSTANT":
            lim = d - 1 if mode == "REFLECT" else d
            if a > lim or b > lim:
                raise ValueError(f"pad: {mode} paddings of dimension {i} must be at most {lim} for shape "
                                 f"{x.shape}, got {[a, b]}")
        out.append(None if d is None else d + a + b)
    return TensorShape(out)


def _pad_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if len(op.inputs) > 1:
        c = op.inputs[1]
        if c.dtype != x.dtype:
            raise ValueError(f"pad: constant_values has dtype {c.dtype.name}, the input {x.dtype.name}")
        if c.shape.rank not in (None, 0):
            raise ValueError(f"pad: constant_values must be a scalar, got shape {c.shape}")
    return [(x.dtype, _pad_out_shape(x, op.attrs["paddings"], op.attrs.get("mode", "CONSTANT")))]


register_op("PadV2", _pad_spec)
register_op("MirrorPad", _pad_spec)


def _mirror_pad_grad_spec(op: _g.Operation) -> list:
    g = op.inputs[0]
    pads = op.attrs["paddings"]
    if g.shape.rank is None:
        return [(g.dtype, TensorShape([None] * len(pads)))]
    if len(pads) != g.shape.rank:
        raise ValueError(f"mirror pad gradient: {len(pads)} paddings for shape {g.shape}")
    return [(g.dtype, TensorShape([None if d is None else d - a - b for d, (a, b) in zip(g.shape.dims, pads)]))]


# fold the mirrored borders of input 0 back onto its centre: MirrorPad's gradient
register_op("MirrorPadGrad", _mirror_pad_grad_spec)

not_differentiable("Shape", "Size", "Rank", "ZerosLike", "OnesLike", "SizeRatio", "OneHot")


# -- constructors: creation ----------------------------------------------------------------


def _static_shape_arg(shape: Any, what: str) -> Tuple[int, ...]:
    dims = as_shape(shape)
    if not dims.is_fully_defined():
        raise InvalidArgumentError(f"{what} needs a fully known shape (or a shape tensor), got {dims}")
    return tuple(dims.as_list())


def zeros(shape: Any, dtype: Any = _dt.float32, name: Optional[str] = None) -> _g.Tensor:
    """A tensor of zeros of a static `shape` (a Tensor shape makes a Fill)."""
    if isinstance(shape, (list, tuple)) and _g._holds_tensor(shape):
        shape = _g.convert_to_tensor(shape)
    if isinstance(shape, _g.Tensor):
        return fill(shape, _scalar(0, dtype, shape.graph), name=name or "zeros")
    return constant(np.zeros(_static_shape_arg(shape, "zeros"), dtype=_dt.as_dtype(dtype).np), name=name or "zeros")


def ones(shape: Any, dtype: Any = _dt.float32, name: Optional[str] = None) -> _g.Tensor:
    """A tensor of ones of a static `shape` (a Tensor shape makes a Fill)."""
    if isinstance(shape, (list, tuple)) and _g._holds_tensor(shape):
        shape = _g.convert_to_tensor(shape)
    if isinstance(shape, _g.Tensor):
        return fill(shape, _scalar(1, dtype, shape.graph), name=name or "ones")
    return constant(np.ones(_static_shape_arg(shape, "ones"), dtype=_dt.as_dtype(dtype).np), name=name or "ones")


def zeros_like(x: Any, dtype: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """Zeros of x's run-time shape, of x's dtype unless `dtype` is given."""
    attrs = {"dtype": _dt.as_dtype(dtype)} if dtype is not None else {}
    return single("ZerosLike", [x], attrs, name=name or "zeros_like")


def ones_like(x: Any, dtype: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """Ones of x's run-time shape, of x's dtype unless `dtype` is given."""
    attrs = {"dtype": _dt.as_dtype(dtype)} if dtype is not None else {}
    return single("OnesLike", [x], attrs, name=name or "ones_like")


def fill(dims: Any, value: Any, name: Optional[str] = None) -> _g.Tensor:
    """A tensor of shape `dims` (1-D int tensor or list) filled with scalar `value`."""
    if isinstance(dims, (list, tuple)) and _g._holds_tensor(dims):
        dims = _g.convert_to_tensor(dims)
    d = dims if isinstance(dims, _g.Tensor) else constant(np.asarray(dims, dtype=np.int64).reshape(-1), dtype=_dt.int64)
    return single("Fill", [d, _scalar(value, graph=d.graph)], name=name or "Fill")


def where(condition: Any, x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """Elementwise x where condition else y, with broadcasting."""
    if isinstance(x, _g.Tensor) and not isinstance(y, _g.Tensor):
        y = _g.convert_to_tensor(y, dtype=x.dtype, graph=x.graph)
    elif isinstance(y, _g.Tensor) and not isinstance(x, _g.Tensor):
        x = _g.convert_to_tensor(x, dtype=y.dtype, graph=y.graph)
    return single("Select", [condition, x, y], name=name or "Select")


def one_hot(indices: Any, depth: int, on_value: Any = None, off_value: Any = None, axis: Optional[int] = None,
            dtype: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """One-hot encoding: output[..., i, ...] = on_value where indices == i, else off_value.

    The new axis of size `depth` goes at `axis` (default -1, last).  Indices outside
    [0, depth) give an all-off row.  dtype defaults to that of a Tensor on/off value,
    else float32; on/off default to 1 and 0.
    """
    idx = _g.convert_to_tensor(indices)
    if dtype is None:
        dtype = next((v.dtype for v in (on_value, off_value) if isinstance(v, _g.Tensor)), _dt.float32)
    dt = _dt.as_dtype(dtype)
    on = _scalar(1 if on_value is None else on_value, dt, idx.graph)
    off = _scalar(0 if off_value is None else off_value, dt, idx.graph)
    depth = int(_int_list(depth, "one_hot depth")[0]) if isinstance(depth, _g.Tensor) else int(depth)
    if depth < 0:
        raise InvalidArgumentError(f"one_hot: depth must be non-negative, got {depth}")
    return single("OneHot", [idx, on, off], {"depth": depth, "axis": -1 if axis is None else int(axis)},
                  name=name or "one_hot")


# -- constructors: shapes and reshaping ----------------------------------------------------


def reshape(x: Any, shape: Any, name: Optional[str] = None) -> _g.Tensor:
    """Reshape to a target shape: a list of ints (one may be -1), a constant, shape(y), or a
    shape computed at run time (a tensor, or a list holding tensors)."""
    if isinstance(shape, (list, tuple)) and _g._holds_tensor(shape):
        shape = _g.convert_to_tensor(shape)
    if isinstance(shape, _g.Tensor):
        if shape.op.type == "Shape":
            return reshape_like(x, shape.op.inputs[0], name=name)
        if _const_value(shape) is None:
            from .dynamic_shape_ops import reshape_dynamic
            return reshape_dynamic(x, shape, name=name)
        shape = _int_list(shape, "reshape's target shape")
    shape = [int(-1 if d is None else d) for d in shape]
    return single("Reshape", [x], {"shape": tuple(shape)}, name=name or "Reshape")


def reshape_like(x: Any, like: Any, name: Optional[str] = None) -> _g.Tensor:
    """x reshaped to the run-time shape of `like` (their sizes must agree).

    A static Reshape (with -1 for the one unknown dim) when like's static shape allows it.
    """
    like = _g.convert_to_tensor(like)
    if like.shape.rank is not None:
        dims = list(like.shape.dims)
        # a static Reshape needs at most one unknown dim, and no 0 next to it (ambiguous -1)
        if dims.count(None) == 0 or (dims.count(None) == 1 and 0 not in dims):
            return reshape(x, [-1 if d is None else d for d in dims], name=name)
    return single("ReshapeLike", [x, like], name=name or "ReshapeLike")


def reshape_rows(g: Any, indices: Any, name: Optional[str] = None) -> _g.Tensor:
    """g of shape indices.shape + inner, reshaped to (number of indices,) + inner."""
    return single("ReshapeRows", [g, indices], name=name or "ReshapeRows")


def shape(x: Any, out_type: Any = _dt.int32, name: Optional[str] = None) -> _g.Tensor:
    """The run-time shape of x as a 1-D int tensor."""
    return single("Shape", [x], {"out_type": _dt.as_dtype(out_type)}, name=name or "Shape")


def size(x: Any, out_type: Any = _dt.int32, name: Optional[str] = None) -> _g.Tensor:
    """The number of elements of x as a scalar."""
    return single("Size", [x], {"out_type": _dt.as_dtype(out_type)}, name=name or "Size")


def rank(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """The number of dimensions of x as an int32 scalar."""
    return single("Rank", [x], name=name or "Rank")


def transpose(x: Any, perm: Optional[Sequence[int]] = None, name: Optional[str] = None) -> _g.Tensor:
    """Permutes the dimensions: output dim i is input dim perm[i] (default: reversed)."""
    p = None if perm is None else tuple(_int_list(perm, "transpose perm"))
    return single("Transpose", [x], {"perm": p}, name=name or "transpose")


def expand_dims(x: Any, axis: int, name: Optional[str] = None) -> _g.Tensor:
    """Inserts a dimension of size 1 at `axis` (in [-rank-1, rank]; negative counts from the end)."""
    return single("ExpandDims", [x], {"axis": int(axis)}, name=name or "ExpandDims")


def squeeze(x: Any, axis: Union[None, int, Sequence[int]] = None, name: Optional[str] = None) -> _g.Tensor:
    """Removes the size-1 dimensions listed in `axis` (all of them when None)."""
    if axis is not None:
        axis = tuple(_int_list([axis] if isinstance(axis, (int, np.integer)) else axis, "squeeze axis"))
    return single("Squeeze", [x], {"axis": axis}, name=name or "Squeeze")


def broadcast_like(x: Any, like: Any, name: Optional[str] = None) -> _g.Tensor:
    """x broadcast to the run-time shape of `like`."""
    return single("BroadcastLike", [x, like], name=name or "BroadcastLike")


def broadcast_to(x: Any, shape: Sequence[int], name: Optional[str] = None) -> _g.Tensor:
    """x broadcast (NumPy rules) to the static `shape`."""
    return single("BroadcastTo", [x], {"shape": tuple(_int_list(shape, "broadcast_to shape"))},
                  name=name or "BroadcastTo")


def size_ratio(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """size(x) // size(y) as an int64 scalar (computed at run time)."""
    return single("SizeRatio", [x, y], name=name or "SizeRatio")


def expand_reduced(t: Any, x: Any, axis: Any, name: Optional[str] = None) -> _g.Tensor:
    """Reshapes t (x reduced over `axis` without keepdims) to the keepdims shape."""
    return single("ExpandReduced", [t, x], {"axis": axis}, name=name or "ExpandReduced")


def tile(x: Any, multiples: Sequence[int], name: Optional[str] = None) -> _g.Tensor:
    """Repeats x multiples[i] times along dimension i."""
    return single("Tile", [x], {"multiples": tuple(_int_list(multiples, "tile multiples"))}, name=name or "Tile")


def tile_grad(g: Any, x: Any, multiples: Sequence[int], name: Optional[str] = None) -> _g.Tensor:
    """Sums the tiles of g (shaped like tile(x, multiples)) back to x's shape."""
    x = _g.convert_to_tensor(x)
    extra, dims = _like_inputs(x)
    return single("TileGrad", [g] + extra, {"multiples": tuple(multiples), "shape": dims}, name=name or "TileGrad")


# -- constructors: joining and splitting ---------------------------------------------------


def concat(values: Sequence[Any], axis: int, name: Optional[str] = None) -> _g.Tensor:
    """Joins tensors along `axis`."""
    values = list(values)
    if not values:
        raise InvalidArgumentError("concat needs at least one tensor")
    if len(values) == 1:
        return _g.convert_to_tensor(values[0])
    return single("ConcatV2", values, {"axis": int(axis)}, name=name or "concat")


def stack(values: Sequence[Any], axis: int = 0, name: Optional[str] = None) -> _g.Tensor:
    """Stacks tensors of one shape into a tensor one rank higher, the new dim at `axis`."""
    values = list(values)
    if not values:
        raise InvalidArgumentError("stack needs at least one tensor")
    return single("Pack", values, {"axis": int(axis)}, name=name or "stack")


def unstack(value: Any, num: Optional[int] = None, axis: int = 0, name: Optional[str] = None) -> List[_g.Tensor]:
    """Splits `value` along `axis` into `num` tensors of one rank less (num inferred when known)."""
    value = _g.convert_to_tensor(value)
    if num is None:
        if value.shape.rank is None:
            raise InvalidArgumentError(f"unstack: cannot infer num from {value.name} of unknown rank; pass num=")
        num = value.shape.dims[_norm_axis(axis, value.shape.rank, "unstack")]
        if num is None:
            raise InvalidArgumentError(f"unstack: cannot infer num from shape {value.shape} along axis {axis}; pass num=")
    return list(make_op("Unpack", [value], {"num": int(num), "axis": int(axis)}, name=name or "unstack").outputs)


def split(value: Any, num_or_size_splits: Any, axis: int = 0, num: Optional[int] = None,
          name: Optional[str] = None) -> List[_g.Tensor]:
    """Splits `value` along `axis` into num_or_size_splits equal pieces, or pieces of the listed sizes
    (one size may be -1: the rest)."""
    axis = int(axis)
    if isinstance(num_or_size_splits, (int, np.integer)):
        op = make_op("Split", [value], {"num_split": int(num_or_size_splits), "axis": axis}, name=name or "split")
    else:
        sizes = tuple(_int_list(num_or_size_splits, "split size_splits"))
        if num is not None and num != len(sizes):
            raise InvalidArgumentError(f"split: num={num} but {len(sizes)} size_splits")
        op = make_op("SplitV", [value], {"size_splits": sizes, "axis": axis}, name=name or "split")
    return list(op.outputs)


def split_like(g: Any, likes: Sequence[Any], axis: int, name: Optional[str] = None) -> List[_g.Tensor]:
    """Splits g along `axis` into pieces as long as each of `likes` is there (concat's inverse)."""
    g = _g.convert_to_tensor(g)
    likes = [_g.convert_to_tensor(t) for t in likes]
    axis = int(axis)
    rank = g.shape.rank if g.shape.rank is not None else next((t.shape.rank for t in likes if t.shape.rank), None)
    if rank is not None:
        ax = _norm_axis(axis, rank, "split_like")
        sizes = [t.shape.dims[ax] if t.shape.rank is not None else None for t in likes]
        if None not in sizes:  # static sizes: the likes need not be kept alive
            return split(g, sizes, ax, name=name)
    return list(make_op("SplitLike", [g] + likes, {"axis": axis}, name=name or "SplitLike").outputs)


def identity_n(inputs: Sequence[Any], name: Optional[str] = None) -> List[_g.Tensor]:
    """Returns the inputs unchanged, as one op (useful for grouping and control dependencies)."""
    inputs = list(inputs)
    if not inputs:
        raise InvalidArgumentError("identity_n needs at least one tensor")
    return list(make_op("IdentityN", inputs, name=name or "IdentityN").outputs)


# -- constructors: gathering, slicing, padding ---------------------------------------------


def gather(params: Any, indices: Any, axis: int = 0, name: Optional[str] = None) -> _g.Tensor:
    """Slices of params along `axis` at `indices` (any rank; out = params.shape[:axis] +
    indices.shape + params.shape[axis+1:]).  The gradient w.r.t. params is IndexedSlices
    for axis 0.  Indices must lie in [0, params.shape[axis])."""
    params = _g.convert_to_tensor(params)
    axis = int(axis)
    if axis < 0 and params.shape.rank is not None:
        axis = _norm_axis(axis, params.shape.rank, "gather")
    return single("GatherV2", [params, indices], {"axis": axis}, name=name or "GatherV2")


def scatter_like(updates: Any, indices: Any, params: Any, axis: int, name: Optional[str] = None) -> _g.Tensor:
    """Zeros shaped like `params`, with `updates` added at `indices` along `axis` (duplicates add):
    the dense adjoint of gather(params, indices, axis)."""
    params = _g.convert_to_tensor(params)
    extra, dims = _like_inputs(params)
    return single("ScatterLike", [updates, indices] + extra, {"axis": int(axis), "shape": dims},
                  name=name or "ScatterLike")


def slice(input_: Any, begin: Sequence[int], size: Sequence[int], name: Optional[str] = None) -> _g.Tensor:  # noqa: A001
    """input_[begin[i] : begin[i] + size[i]] along every dimension i (size -1: to the end)."""
    b = tuple(_int_list(begin, "slice begin"))
    s = tuple(_int_list(size, "slice size"))
    return single("Slice", [input_], {"begin": b, "size": s}, name=name or "Slice")


def _normalize_key(key: Any) -> Tuple[Tuple[Any, ...], List[Tuple[int, _g.Tensor]]]:
    """(static key, [(position, scalar int tensor)]) for a __getitem__ key.

    Tensor positions are replaced by full slices in the static key; each is applied after as
    a gather with a scalar index.
    """
    if not isinstance(key, tuple):
        key = (key,)
    out: List[Any] = []
    tensors: List[Tuple[int, _g.Tensor]] = []
    for k in key:
        if k is None or k is Ellipsis:
            out.append(k)
        elif isinstance(k, (bool, np.bool_)):
            raise TypeError("boolean indices are not supported; use cf.where or a mask multiply")
        elif isinstance(k, (int, np.integer)):
            out.append(int(k))
        elif isinstance(k, _pyslice):
            parts = []
            for v in (k.start, k.stop, k.step):
                if v is not None and not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                    raise TypeError(f"slice bounds must be Python ints or None, got {v!r} in {k}")
                parts.append(None if v is None else int(v))
            out.append(_pyslice(*parts))
        elif isinstance(k, _g.Tensor) or hasattr(k, "handle"):
            t = _g.convert_to_tensor(k)
            if not t.dtype.is_integer or t.shape.rank != 0:
                raise TypeError(f"a tensor index must be a scalar int32/int64 tensor, got {t!r}; use cf.gather "
                                "for arrays of indices")
            tensors.append((len(out), t))
            out.append(_pyslice(None))
        else:
            raise TypeError(f"only integers, slices, Ellipsis, cf.newaxis (None) and scalar int tensors are valid "
                            f"indices, got {k!r} of type {type(k).__name__}; use cf.gather for arrays of indices")
    key_t = tuple(out)
    try:
        _check_key(key_t)
    except ValueError as e:
        raise InvalidArgumentError(str(e)) from None
    return key_t, tensors


def strided_slice(x: Any, key: Any, name: Optional[str] = None) -> _g.Tensor:
    """x[key] with NumPy basic-indexing semantics (what `x[1:3, ::2, ..., None]` builds)."""
    x = _g.convert_to_tensor(x)
    key_t, tensors = _normalize_key(key)
    y = x
    if not all(isinstance(k, _pyslice) and k == _pyslice(None) for k in key_t):
        y = single("StridedSlice", [x], {"key": key_t}, name=name or "strided_slice")
    if tensors:
        # output axis of each tensor position: counted from the front before an Ellipsis and
        # from the back after it (so an unknown rank does not matter)
        if Ellipsis in key_t:
            e = key_t.index(Ellipsis)
        else:
            e = len(key_t)
        removed = 0
        for pos, t in tensors:
            if pos < e:
                ax = sum(1 for k in key_t[:pos] if not isinstance(k, int)) - removed
            else:
                ax = -sum(1 for k in key_t[pos:] if not isinstance(k, int) and k is not Ellipsis)
            y = gather(y, t, axis=ax)
            removed += 1 if pos < e else 0
    return y


def strided_slice_grad(g: Any, x: Any, key: Tuple[Any, ...], name: Optional[str] = None) -> _g.Tensor:
    """Zeros shaped like x with g written at x[key] (StridedSlice's gradient)."""
    x = _g.convert_to_tensor(x)
    extra, dims = _like_inputs(x)
    return single("StridedSliceGrad", [g] + extra, {"key": tuple(key), "shape": dims},
                  name=name or "StridedSliceGrad")


def _pairs(paddings: Any) -> Tuple[Tuple[int, int], ...]:
    flat = _int_list(paddings, "pad paddings")
    if len(flat) % 2:
        raise InvalidArgumentError(f"pad: paddings must be [[before, after], ...] per dimension, got {paddings!r}")
    return tuple((flat[i], flat[i + 1]) for i in range(0, len(flat), 2))


def pad(tensor: Any, paddings: Any, mode: str = "CONSTANT", constant_values: Any = 0,
        name: Optional[str] = None) -> _g.Tensor:
    """Pads dimension i with paddings[i][0] entries before and paddings[i][1] after.

    mode: CONSTANT (constant_values), REFLECT (mirror without the edge; padding < dim) or
    SYMMETRIC (mirror with the edge; padding <= dim), case-insensitive.
    """
    x = _g.convert_to_tensor(tensor)
    pads = _pairs(paddings)
    mode_u = str(mode).upper()
    if mode_u not in _PAD_MODES:
        raise InvalidArgumentError(f"pad: mode must be one of {', '.join(_PAD_MODES)}, got {mode!r}")
    if mode_u == "CONSTANT":
        c = _scalar(constant_values, x.dtype, x.graph)
        return single("PadV2", [x, c], {"paddings": pads}, name=name or "Pad")
    return single("MirrorPad", [x], {"paddings": pads, "mode": mode_u}, name=name or "MirrorPad")


def mirror_pad_grad(g: Any, paddings: Any, mode: str, name: Optional[str] = None) -> _g.Tensor:
    """Folds the mirrored borders of g back onto its centre (MirrorPad's gradient)."""
    return single("MirrorPadGrad", [g], {"paddings": _pairs(paddings), "mode": mode}, name=name or "MirrorPadGrad")


# -- Python operators on Tensor ------------------------------------------------------------
_g._OPERATORS.update({"getitem": strided_slice, "unstack": unstack})
