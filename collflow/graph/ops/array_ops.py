"""Array ops: creation, shape manipulation, joining/splitting (slicing, gathering and padding
in slicing_ops.py, re-exported here; shared helpers in array_util.py).

Shape functions here; gradients in graph/array_grad.py; kernels in kernels/array_kernels.py.

Ops whose name ends in `Like` (ReshapeLike, SplitLike, BroadcastLike, ScatterLike) take a
second tensor only for its run-time shape; gradient rules use them when a static shape is
not fully known, and use plain static-shape ops otherwise (so the forward tensor need not
be kept alive until the backward pass).
"""
from __future__ import annotations

import builtins
from typing import Any, List, Optional, Sequence, Union

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_op
from ..shape import TensorShape, broadcast_static
from .op_util import single, make_op, axis_list, static_axis, tf_keywords
from . import dtype_rules as _rules
from .constant_op import constant

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


from .array_util import (_const_value, _constant_filled, _run_time, _int_list, _like_inputs, _like_shape,
                         _norm_axis, _scalar, _shape_tensor_static)


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


register_op("Fill", _fill_spec, host_inputs=(0,))  # TF's HostMemory: dims read on the host


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
    if n is None and x.shape.rank is not None and 0 in x.shape.dims:
        n = 0  # a known empty dimension: no elements whatever the unknown ones are (TF too)
    if -1 in new:
        known = int(np.prod([d for d in new if d != -1]))
        if n == 0 and known == 0:
            new[new.index(-1)] = None  # ambiguous: TF builds it and refuses it at run time
        elif n is not None:
            if known == 0 or n % known:
                raise ValueError(f"cannot reshape a tensor of {n} elements (shape {x.shape}) to {new}")
            new[new.index(-1)] = n // known
        else:
            new[new.index(-1)] = None
    elif n is not None and n != int(np.prod(new)):
        raise ValueError(f"cannot reshape a tensor of {n} elements (shape {x.shape}) to {new}")
    return [(x.dtype, TensorShape(new))]


register_op("Reshape", _reshape_spec)
# TF's HostMemory: they read only their input's shape (no copy of it) and give host values
register_op("Shape", lambda op: [(op.attrs["out_type"], TensorShape([op.inputs[0].shape.rank]))],
            host_only=True, metadata_only=True)
register_op("Size", lambda op: [(op.attrs["out_type"], TensorShape(()))], host_only=True, metadata_only=True)
register_op("Rank", lambda op: [(_dt.int32, TensorShape(()))], host_only=True, metadata_only=True)


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

# -- constructors: creation ----------------------------------------------------------------


def zeros(shape: Any, dtype: Any = _dt.float32, name: Optional[str] = None) -> _g.Tensor:
    """A tensor of zeros of a static `shape` (a Tensor shape makes a Fill)."""
    if isinstance(shape, (list, tuple)) and _g._holds_tensor(shape):
        shape = _g.convert_to_tensor(shape)
    if isinstance(shape, _g.Tensor):
        return fill(shape, _scalar(0, dtype, shape.graph), name=name or "zeros")
    return _constant_filled(shape, dtype, 0, "zeros", name)


def ones(shape: Any, dtype: Any = _dt.float32, name: Optional[str] = None) -> _g.Tensor:
    """A tensor of ones of a static `shape` (a Tensor shape makes a Fill)."""
    if isinstance(shape, (list, tuple)) and _g._holds_tensor(shape):
        shape = _g.convert_to_tensor(shape)
    if isinstance(shape, _g.Tensor):
        return fill(shape, _scalar(1, dtype, shape.graph), name=name or "ones")
    return _constant_filled(shape, dtype, 1, "ones", name)


@tf_keywords(tensor="x", optimize="")
def zeros_like(x: Any, dtype: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """Zeros of x's run-time shape, of x's dtype unless `dtype` is given."""
    attrs = {"dtype": _dt.as_dtype(dtype)} if dtype is not None else {}
    return single("ZerosLike", [x], attrs, name=name or "zeros_like")


@tf_keywords(tensor="x", optimize="")
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


def where(condition: Any, x: Any = None, y: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """TF1's tf.where.  With x and y: x where condition else y, elementwise with broadcasting;
    a rank-1 condition picks whole rows of higher-rank x and y (its length their first
    dimension; otherwise it broadcasts against their last).  With neither: the coordinates of the true (nonzero) entries of condition,
    [num_true, rank] int64, in row-major order."""
    if x is None and y is None:
        return single("Where", [condition], name=name or "Where")
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    x, y = _select_operands(x, y)
    c = _g.convert_to_tensor(condition)
    rank = x.shape.rank if x.shape.rank is not None else y.shape.rank
    if c.shape.rank == 1 and rank is not None and rank > 1:
        n0 = x.shape.dims[0] if x.shape.rank else None
        # TF1: the condition's length is x's first dimension (rows); one that matches only the
        # last dimension broadcasts instead (tf.where_v2's rule, which TF1 would refuse)
        if c.shape.dims[0] is None or n0 is None or c.shape.dims[0] == n0:
            c = reshape(c, [-1] + [1] * (rank - 1))
    out = single("Select", [c, x, y], name=name or "Select")
    # TF1's Select takes x and y (and a same-rank condition) of one shape, so its static shape
    # merges theirs: where(c[1, 3], x[1, 3], y[None, 3]) is [1, 3], not broadcasting's [None, 3]
    same = [t.shape for t in (c, x, y) if t.shape.rank is not None and t.shape.rank == out.shape.rank]
    merged = out.shape
    for sh in same:
        if not merged.is_compatible_with(sh):
            return out
        merged = merged.merge_with(sh)
    out.set_shape(merged)
    return out


def _select_operands(x: Any, y: Any) -> Any:
    """x and y as tensors, a Python/NumPy one converted to the other's dtype."""
    if isinstance(x, _g.Tensor) and not isinstance(y, _g.Tensor):
        return x, _g.convert_to_tensor(y, dtype=x.dtype, graph=x.graph)
    if isinstance(y, _g.Tensor) and not isinstance(x, _g.Tensor):
        return _g.convert_to_tensor(x, dtype=y.dtype, graph=y.graph), y
    if not _g.is_tensor(x) and not _g.is_tensor(y):  # TF: y takes the dtype x converted to
        x = _g.convert_to_tensor(x)
        return x, _g.convert_to_tensor(y, dtype=x.dtype)
    return _g.convert_to_tensor(x), _g.convert_to_tensor(y)


def where_v2(condition: Any, x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """x where condition else y, all three broadcast together (tf.where_v2: no row rule)."""
    x, y = _select_operands(x, y)
    return single("Select", [_g.convert_to_tensor(condition), x, y], name=name or "SelectV2")


def one_hot(indices: Any, depth: int, on_value: Any = None, off_value: Any = None, axis: Optional[int] = None,
            dtype: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """One-hot encoding: output[..., i, ...] = on_value where indices == i, else off_value.

    The new axis of size `depth` goes at `axis` (default -1, last).  Indices outside
    [0, depth) give an all-off row.  dtype defaults to that of the on/off values as TF1 converts
    them (a Python int: int32), else float32; on/off default to 1 and 0.
    """
    idx = _g.convert_to_tensor(indices)
    if dtype is None:
        given = [_g.convert_to_tensor(v, graph=idx.graph) if not isinstance(v, _g.Tensor) else v
                 for v in (on_value, off_value) if v is not None]
        if len(given) == 2 and given[0].dtype != given[1].dtype:
            raise TypeError(f"one_hot: on_value ({given[0].dtype.name}) and off_value ({given[1].dtype.name}) "
                            "must have the same dtype")
        dtype = given[0].dtype if given else _dt.float32
    dt = _dt.as_dtype(dtype)
    on = _scalar(1 if on_value is None else on_value, dt, idx.graph)
    off = _scalar(0 if off_value is None else off_value, dt, idx.graph)
    if isinstance(depth, _g.Tensor):
        if _run_time(depth):  # computed at run time: the depth is an input read when the op runs
            from .dynamic_args_ops import one_hot_dynamic
            return one_hot_dynamic(idx, depth, on, off, -1 if axis is None else int(axis), name=name)
        depth = _int_list(depth, "one_hot depth")[0]
    depth = int(depth)
    if depth < 0:
        raise InvalidArgumentError(f"one_hot: depth must be non-negative, got {depth}")
    return single("OneHot", [idx, on, off], {"depth": depth, "axis": -1 if axis is None else int(axis)},
                  name=name or "one_hot")


# -- constructors: shapes and reshaping ----------------------------------------------------


@tf_keywords(tensor="x")
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


@tf_keywords(input="x")
def shape(x: Any, name: Optional[str] = None, out_type: Any = _dt.int32) -> _g.Tensor:
    """The run-time shape of x as a 1-D int tensor."""
    return single("Shape", [x], {"out_type": _dt.as_dtype(out_type)}, name=name or "Shape")


@tf_keywords(input="x")
def size(x: Any, name: Optional[str] = None, out_type: Any = _dt.int32) -> _g.Tensor:
    """The number of elements of x as a scalar."""
    return single("Size", [x], {"out_type": _dt.as_dtype(out_type)}, name=name or "Size")


@tf_keywords(input="x")
def rank(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """The number of dimensions of x as an int32 scalar."""
    return single("Rank", [x], name=name or "Rank")


@tf_keywords(a="x")
def transpose(x: Any, perm: Optional[Sequence[int]] = None, name: Optional[str] = None,
              conjugate: bool = False) -> _g.Tensor:
    """Permutes the dimensions: output dim i is input dim perm[i] (default: reversed);
    `conjugate` also conjugates a complex tensor (nothing to do for a real one); `perm` may
    be computed at run time (TransposeDynamic)."""
    if perm is not None and _run_time(perm):
        from .dynamic_layout_ops import transpose_dynamic
        out = transpose_dynamic(x, _g.convert_to_tensor(perm), name=name)
    else:
        p = None if perm is None else tuple(_int_list(perm, "transpose perm"))
        out = single("Transpose", [x], {"perm": p}, name=name or "transpose")
    if conjugate and out.dtype.is_complex:
        from .complex_ops import conj
        out = conj(out)
    return out


@tf_keywords(input="x", dim="axis")
def expand_dims(x: Any, axis: int, name: Optional[str] = None) -> _g.Tensor:
    """Inserts a dimension of size 1 at `axis` (in [-rank-1, rank]; negative counts from the end;
    a tensor computed at run time too, ExpandDimsDynamic)."""
    if _run_time(axis):
        from .dynamic_layout_ops import expand_dims_dynamic
        return expand_dims_dynamic(x, axis, name=name)
    a = static_axis(axis, "expand_dims")
    if isinstance(a, (list, tuple, np.ndarray)):  # TF takes a one-element list too: BERT's axis=[-1]
        if np.size(a) != 1:
            raise ValueError(f"expand_dims: 'dim' must be a tensor with a single value, got {list(np.ravel(a))}")
        a = np.ravel(a)[0]
    return single("ExpandDims", [x], {"axis": int(a)}, name=name or "ExpandDims")


@tf_keywords(input="x", squeeze_dims="axis")
def squeeze(x: Any, axis: Union[None, int, Sequence[int]] = None, name: Optional[str] = None) -> _g.Tensor:
    """Removes the size-1 dimensions listed in `axis` (all of them when None or empty, as TF:
    its squeeze_dims=[] means every size-1 dimension)."""
    if axis is not None:
        axis = tuple(_int_list([axis] if isinstance(axis, (int, np.integer)) else axis, "squeeze axis")) or None
    return single("Squeeze", [x], {"axis": axis}, name=name or "Squeeze")


def broadcast_like(x: Any, like: Any, name: Optional[str] = None) -> _g.Tensor:
    """x broadcast to the run-time shape of `like`."""
    return single("BroadcastLike", [x, like], name=name or "BroadcastLike")


@tf_keywords(input="x")
def broadcast_to(x: Any, shape: Sequence[int], name: Optional[str] = None) -> _g.Tensor:
    """x broadcast (NumPy rules) to `shape`: a list of ints, or a tensor (or a list holding
    tensors) whose value may be computed at run time."""
    if _run_time(shape):
        from .dynamic_args_ops import broadcast_to_dynamic
        return broadcast_to_dynamic(x, _g.convert_to_tensor(shape), name=name)
    return single("BroadcastTo", [x], {"shape": tuple(_int_list(shape, "broadcast_to shape"))},
                  name=name or "BroadcastTo")


def size_ratio(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """size(x) // size(y) as an int64 scalar (computed at run time)."""
    return single("SizeRatio", [x, y], name=name or "SizeRatio")


def expand_reduced(t: Any, x: Any, axis: Any, name: Optional[str] = None) -> _g.Tensor:
    """Reshapes t (x reduced over `axis` without keepdims) to the keepdims shape."""
    return single("ExpandReduced", [t, x], {"axis": axis}, name=name or "ExpandReduced")


@tf_keywords(input="x")
def tile(x: Any, multiples: Sequence[int], name: Optional[str] = None) -> _g.Tensor:
    """Repeats x multiples[i] times along dimension i (multiples: a list of ints, or a tensor or
    a list holding tensors whose value may be computed at run time)."""
    if _run_time(multiples):
        from .dynamic_args_ops import tile_dynamic
        return tile_dynamic(x, _g.convert_to_tensor(multiples), name=name)
    return single("Tile", [x], {"multiples": tuple(_int_list(multiples, "tile multiples"))}, name=name or "Tile")


def tile_grad(g: Any, x: Any, multiples: Sequence[int], name: Optional[str] = None) -> _g.Tensor:
    """Sums the tiles of g (shaped like tile(x, multiples)) back to x's shape."""
    x = _g.convert_to_tensor(x)
    extra, dims = _like_inputs(x)
    return single("TileGrad", [g] + extra, {"multiples": tuple(multiples), "shape": dims}, name=name or "TileGrad")


# -- constructors: joining and splitting ---------------------------------------------------


def concat(values: Sequence[Any], axis: int, name: Optional[str] = None) -> _g.Tensor:
    """Joins tensors along `axis`."""
    values = _rules.convert_list(list(values), "'values' of 'ConcatV2'")  # [t_int64, [2, 3]]: int64, as TF
    if not values:
        raise InvalidArgumentError("concat needs at least one tensor")
    if len(values) == 1:
        return _g.convert_to_tensor(values[0])
    return single("ConcatV2", values, {"axis": int(static_axis(axis, "concat"))}, name=name or "concat")


def stack(values: Sequence[Any], axis: int = 0, name: Optional[str] = None) -> _g.Tensor:
    """Stacks tensors of one shape into a tensor one rank higher, the new dim at `axis`."""
    values = list(values)
    if not values:
        raise InvalidArgumentError("stack needs at least one tensor")
    if axis == 0 and not _g._holds_tensor(values):
        # TF: a list of constants along axis 0 is one constant ([[True, False], [1, 1.5]]: float32)
        try:
            return _g.convert_to_tensor(values, name=name or "stack")
        except (TypeError, ValueError):
            pass
    values = _rules.convert_list(values, "'values' of 'Pack'")  # [t_int64, 2]: 2 becomes int64, as TF
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
    axis = int(static_axis(axis, "split"))
    if isinstance(num_or_size_splits, _g.Tensor) and num_or_size_splits.shape.rank == 0:
        raise ValueError("Rank-0 tensors are not supported as the num_or_size_splits argument to split. "
                         f"Argument provided: {num_or_size_splits}")
    if isinstance(num_or_size_splits, (int, np.integer)):
        op = make_op("Split", [value], {"num_split": int(num_or_size_splits), "axis": axis}, name=name or "split")
    elif _run_time(num_or_size_splits):  # sizes computed when the graph runs (MoE dispatch)
        from .dynamic_args_ops import split_v_dynamic
        return split_v_dynamic(value, _g.convert_to_tensor(num_or_size_splits), axis, num=num, name=name)
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


@tf_keywords(input="inputs")
def identity_n(inputs: Sequence[Any], name: Optional[str] = None) -> List[_g.Tensor]:
    """Returns the inputs unchanged, as one op (useful for grouping and control dependencies)."""
    inputs = list(inputs)
    if not inputs:
        raise InvalidArgumentError("identity_n needs at least one tensor")
    return list(make_op("IdentityN", inputs, name=name or "IdentityN").outputs)


# the ops that pick parts of tensors live in slicing_ops.py; their names stay importable here
from .slicing_ops import (gather, mirror_pad_grad, pad, scatter_like, slice, strided_slice,  # noqa: E402,F401,A004
                          strided_slice_grad)


# -- Python operators on Tensor ------------------------------------------------------------
_g._OPERATORS.update({"getitem": strided_slice, "unstack": unstack})
