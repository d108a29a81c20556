"""Array ops that pick parts of tensors: gather and scatter, slice and strided_slice (Python
indexing, `t[1:, ::2]`), pad.  Shape functions here; gradients in graph/array_grad.py;
kernels in kernels/array_kernels.py.  Re-exported by array_ops (their historical home).
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ...errors import InvalidArgumentError, UnimplementedError
from .. import graph as _g
from ..registry import register_op, not_differentiable
from ..shape import TensorShape
from .op_util import single, static_axis
from .array_util import _const_value, _int_list, _like_inputs, _like_shape, _norm_axis, _pyslice, _scalar

__all__ = ["gather", "scatter_like", "slice", "slice_axis", "strided_slice", "strided_slice_grad", "pad",
           "mirror_pad_grad"]


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


# -- constructors: gathering, slicing, padding ---------------------------------------------


def gather(params: Any, indices: Any, validate_indices: Any = None, name: Optional[str] = None,
           axis: Any = None, batch_dims: int = 0) -> _g.Tensor:
    """Slices of params along `axis` at `indices` (any rank; out = params.shape[:axis] +
    indices.shape + params.shape[axis+1:]).  The gradient w.r.t. params is IndexedSlices
    for axis 0.  Indices must lie in [0, params.shape[axis]) (always checked:
    validate_indices, TF1's, is accepted).  TF1's signature; batch_dims pairs up the leading
    dimensions of params and indices (batch_index_ops)."""
    if batch_dims and axis is not None and not isinstance(axis, _g.Tensor) and int(axis) == 0:
        batch_dims = 0  # TF's gather drops batch_dims when axis is given as 0 (a plain gather there)
    if batch_dims:
        from .batch_index_ops import gather_batched
        return gather_batched(params, indices, batch_dims if axis is None else axis, batch_dims, name=name)
    axis = 0 if axis is None else axis
    if type(params).__name__ == "RaggedTensor" and axis == 0:  # rows of a RaggedTensor
        from .ragged_math import ragged_gather
        return ragged_gather(params, indices, name=name)
    params = _g.convert_to_tensor(params)
    axis = int(static_axis(axis, "gather"))
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
    """input_[begin[i] : begin[i] + size[i]] along every dimension i (size -1: to the end).
    begin and size may be tensors (or lists holding scalar tensors) known only at run time."""
    dynamic = any(isinstance(v, _g.Tensor) or hasattr(v, "handle")
                  for v in ([begin, size] + (list(begin) if isinstance(begin, (list, tuple)) else [])
                            + (list(size) if isinstance(size, (list, tuple)) else [])))
    if not dynamic:
        b = tuple(_int_list(begin, "slice begin"))
        s = tuple(_int_list(size, "slice size"))
        return single("Slice", [input_], {"begin": b, "size": s}, name=name or "Slice")
    return _slice_dynamic(_g.convert_to_tensor(input_), begin, size, name)


def _checked_begin(x: _g.Tensor, k: int, b: _g.Tensor, n: _g.Tensor) -> _g.Tensor:
    """b, run only after TF's Slice check of axis k: 0 <= b <= dim and size -1 or
    0 <= size <= dim - b (SliceAxis itself clips as Python slices do)."""
    from . import math_ops as _m
    from .array_ops import shape
    from .check_ops import assert_equal
    from .constant_op import identity
    dim = shape(x, out_type=b.dtype)[k]
    zero = _scalar(0, b.dtype, x.graph)
    ok = _m.logical_and(_m.logical_and(_m.greater_equal(b, zero), _m.less_equal(b, dim)),
                        _m.logical_or(_m.equal(n, _scalar(-1, b.dtype, x.graph)),
                                      _m.logical_and(_m.greater_equal(n, zero), _m.less_equal(b + n, dim))))
    check = assert_equal(ok, True, message=f"slice: begin and size of dimension {k} must satisfy 0 <= begin <= "
                                           "begin + size <= the dimension (size -1: to the end)")
    with x.graph.control_dependencies([check]):
        return identity(b)


def _slice_dynamic(x: _g.Tensor, begin: Any, size: Any, name: Optional[str]) -> _g.Tensor:
    from . import math_ops as _m
    rank = x.shape.rank
    if rank is None:
        raise InvalidArgumentError("slice with run-time begin/size needs an input of known rank")
    g = x.graph
    with g.as_default(), g.name_scope(name or "Slice"):
        def part(v: Any, k: int) -> Any:
            if isinstance(v, (list, tuple)):
                return v[k]
            return strided_slice(_g.convert_to_tensor(v), (k,))
        y = x
        big = np.iinfo(np.int32).max
        for k in range(rank):
            b, n = part(begin, k), part(size, k)
            if not isinstance(b, _g.Tensor) and not isinstance(n, _g.Tensor) and int(b) == 0 and int(n) == -1:
                continue
            if isinstance(n, _g.Tensor) or isinstance(b, _g.Tensor):
                b_t = _g.convert_to_tensor(b, dtype=_g.convert_to_tensor(n).dtype) if not isinstance(b, _g.Tensor) else b
                n_t = _g.convert_to_tensor(n, dtype=b_t.dtype) if not isinstance(n, _g.Tensor) else n
                b_t = _checked_begin(x, k, b_t, n_t)
                stop = single("Select", [_m.less(n_t, 0), _scalar(big, b_t.dtype, g), b_t + n_t])
                y = slice_axis(y, k, b_t, stop)
            else:
                y = slice_axis(y, k, int(b), None if int(n) < 0 else int(b) + int(n))
        if y is not x and isinstance(size, (list, tuple)):
            # a size given as an int is the dimension whatever begin is (TF's shape inference:
            # tf.slice(t, [0, i, 0], [-1, 1, -1]) is [?, 1, ?])
            # (and a size tensor the graph determines, tf.shape(x)[1] - 1 of a known dimension, as TF)
            from .shape_eval import scalar_value
            known = [scalar_value(n) if isinstance(n, _g.Tensor) else n for n in size]
            y.set_shape([int(n) if isinstance(n, (int, np.integer)) and int(n) >= 0 else None for n in known])
        return y


def _slice_axis_spec(op: _g.Operation) -> list:
    x, start, stop = op.inputs[:3]
    for t, what in ((start, "start"), (stop, "stop")):
        if not t.dtype.is_integer or t.shape.rank not in (None, 0):
            raise ValueError(f"slice {what} must be a scalar integer tensor, got {t.dtype.name} {t.shape}")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None))]
    dims = list(x.shape.dims)
    if not -len(dims) <= op.attrs["axis"] < len(dims):
        raise ValueError(f"slice axis {op.attrs['axis']} out of range for a tensor of shape {x.shape}")
    dims[op.attrs["axis"]] = None
    return [(x.dtype, TensorShape(dims))]


def _slice_axis_grad_spec(op: _g.Operation) -> list:
    return [(op.inputs[0].dtype, _like_shape(op, 3))]


# x[..., start:stop:step, ...] along one axis with run-time bounds, Python's slice rules
# (negative bounds count from the end, out-of-range ones clamp): __getitem__ with tensor bounds
register_op("SliceAxis", _slice_axis_spec)
# zeros shaped like x with g at that slice: SliceAxis's gradient (inputs g, start, stop[, x])
register_op("SliceAxisGrad", _slice_axis_grad_spec)


def slice_axis(x: Any, axis: int, start: Any = None, stop: Any = None, step: Optional[int] = None,
               name: Optional[str] = None) -> _g.Tensor:
    """x sliced along `axis` from `start` to `stop` (ints or scalar int tensors, None: open),
    with Python's slicing rules; step a Python int."""
    x = _g.convert_to_tensor(x)
    parts = [_scalar(0 if v is None else v, None, x.graph) for v in (start, stop)]
    attrs = {"axis": int(axis), "has_start": start is not None, "has_stop": stop is not None,
             "step": None if step is None else int(step)}
    return single("SliceAxis", [x] + parts, attrs, name=name or "strided_slice")


def _normalize_key(key: Any) -> Tuple[Tuple[Any, ...], List[Tuple[int, Any]]]:
    """(static key, [(position, scalar int tensor or a slice with tensor bounds)]) for a
    __getitem__ key.

    Tensor positions are replaced by full slices in the static key; each is applied after: a
    scalar index as a gather, a slice with run-time bounds as a SliceAxis.
    """
    if not isinstance(key, tuple):
        key = (key,)
    out: List[Any] = []
    tensors: List[Tuple[int, _g.Tensor]] = []
    from .shape_eval import scalar_value

    def fold(v: Any) -> Any:
        # a tensor bound whose value the graph determines (tf.constant(1), shape(x)[0] of a
        # known dim) is static, as TF's shape inference evaluates it
        if isinstance(v, _g.Tensor) and v.dtype.is_integer and v.shape.rank == 0:
            c = scalar_value(v)
            return v if c is None else c
        return v

    for k in key:
        if isinstance(k, _pyslice):
            k = _pyslice(fold(k.start), fold(k.stop), fold(k.step))
        else:
            k = fold(k)
        if k is None or k is Ellipsis:
            out.append(k)
        elif isinstance(k, (bool, np.bool_)):
            raise TypeError("boolean indices are not supported; use cf.where or a mask multiply")
        elif isinstance(k, (int, np.integer)):
            out.append(int(k))
        elif isinstance(k, _pyslice):
            if any(isinstance(v, _g.Tensor) or hasattr(v, "handle") for v in (k.start, k.stop)):
                if k.step is not None and (not isinstance(k.step, (int, np.integer)) or isinstance(k.step, bool)):
                    raise TypeError(f"with run-time slice bounds the step must be a Python int, got {k.step!r}")
                tensors.append((len(out), k))
                out.append(_pyslice(None))
                continue
            parts = []
            for v in (k.start, k.stop, k.step):
                if v is not None and not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                    raise TypeError(f"slice bounds must be Python ints, scalar int tensors or None, got {v!r} in {k}")
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


def _tf1_key(begin: Any, end: Any, strides: Any, begin_mask: int, end_mask: int, ellipsis_mask: int,
             new_axis_mask: int, shrink_axis_mask: int) -> Tuple[Any, ...]:
    """TF1's strided_slice(begin, end, strides, masks) as an indexing key (bounds may be tensors)."""
    def parts(v: Any, what: str) -> List[Any]:
        if isinstance(v, _g.Tensor) and _const_value(v) is not None:
            v = _const_value(v)  # a constant: static bounds (a run-time stride is not supported)
        if isinstance(v, _g.Tensor):
            n = v.shape.num_elements() if v.shape.is_fully_defined() else None
            if v.shape.rank != 1 or n is None:
                raise InvalidArgumentError(f"strided_slice: {what} must be a vector of known length, got {v.shape}")
            return [v[i] for i in range(n)]
        if isinstance(v, (list, tuple)) and any(isinstance(a, _g.Tensor) or hasattr(a, "handle") for a in v):
            # TF packs a list mixing ints and scalar tensors ([0, i * num_steps], PTB's producer)
            return [_g.convert_to_tensor(a) if isinstance(a, _g.Tensor) or hasattr(a, "handle") else int(a)
                    for a in v]
        return [int(a) for a in np.asarray(v).reshape(-1)]
    b, e = parts(begin, "begin"), parts(end, "end")
    if isinstance(strides, _g.Tensor) and _const_value(strides) is None:
        raise UnimplementedError(f"strided_slice: strides must be known when the graph is built (a list of ints "
                                 f"or a constant), got the tensor {strides.name}; begin and end may be run-time")
    st = parts(strides, "strides") if strides is not None else [1] * len(b)
    if not len(b) == len(e) == len(st):
        raise InvalidArgumentError(f"strided_slice: begin, end and strides must have one length, got {len(b)}, "
                                   f"{len(e)} and {len(st)}")
    key: List[Any] = []
    for i in range(len(b)):
        bit = 1 << i
        if ellipsis_mask & bit:
            key.append(Ellipsis)
        elif new_axis_mask & bit:
            key.append(None)
        elif shrink_axis_mask & bit:
            # TF takes the one element at begin and refuses a negative stride there
            if isinstance(st[i], (int, np.integer)) and st[i] < 0:
                raise InvalidArgumentError(f"strided_slice: only stride 1 allowed on non-range indexing "
                                           f"(shrink axis {i} has stride {st[i]})")
            key.append(b[i])
        else:
            key.append(_pyslice(None if begin_mask & bit else b[i], None if end_mask & bit else e[i], st[i]))
    return tuple(key)


_NO_KEY = object()  # t[None] (a new axis) passes key=None: "no key" needs its own marker


def strided_slice(x: Any, key: Any = _NO_KEY, end: Any = None, strides: Any = None, begin_mask: int = 0,
                  end_mask: int = 0, ellipsis_mask: int = 0, new_axis_mask: int = 0, shrink_axis_mask: int = 0,
                  var: Any = None, name: Optional[str] = None) -> _g.Tensor:
    """x[key] with NumPy basic-indexing semantics (what `x[1:3, ::2, ..., None]` builds); also
    TF1's form strided_slice(input_, begin, end, strides, begin_mask, end_mask, ellipsis_mask,
    new_axis_mask, shrink_axis_mask) (`key` is then begin)."""
    if end is not None:
        key = _tf1_key(key, end, strides, begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)
    elif key is _NO_KEY:
        raise TypeError("strided_slice needs begin and end (or an indexing key)")
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
            if isinstance(t, _pyslice):  # run-time bounds: the axis stays
                y = slice_axis(y, ax, t.start, t.stop, t.step)
                continue
            # a negative index counts from the end, as TF's shrink axis (gather refuses it)
            from . import math_ops as _m
            from .array_ops import shape
            dim = shape(y, out_type=t.dtype)[ax]
            t = single("Select", [_m.less(t, _scalar(0, t.dtype, y.graph)), t + dim, t])
            # checked here where y is already empty (a gather of nothing looks at no index;
            # otherwise the gather's own check says which index)
            from .check_ops import assert_equal
            from .constant_op import identity
            from .array_ops import size
            ok = _m.logical_or(_m.logical_and(_m.greater_equal(t, _scalar(0, t.dtype, y.graph)), _m.less(t, dim)),
                               _m.greater(size(y), 0))
            with y.graph.control_dependencies([assert_equal(ok, True, message="slice index out of bounds")]):
                t = identity(t)
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


def pad(tensor: Any, paddings: Any, mode: str = "CONSTANT", name: Optional[str] = None,
        constant_values: Any = 0) -> _g.Tensor:
    """Pads dimension i with paddings[i][0] entries before and paddings[i][1] after.

    mode: CONSTANT (constant_values), REFLECT (mirror without the edge; padding < dim) or
    SYMMETRIC (mirror with the edge; padding <= dim), case-insensitive.
    """
    x = _g.convert_to_tensor(tensor)
    mode_u = str(mode).upper()
    if mode_u not in _PAD_MODES:
        raise InvalidArgumentError(f"pad: mode must be one of {', '.join(_PAD_MODES)}, got {mode!r}")
    from .array_util import _run_time
    if _run_time(paddings):  # [[0, n], [1, 1]] with n computed: the paddings are an input read when run
        from .dynamic_args_ops import pad_dynamic
        c = _scalar(constant_values, x.dtype, x.graph) if mode_u == "CONSTANT" else None
        return pad_dynamic(x, paddings, mode_u, c, name=name)
    pads = _pairs(paddings)
    if mode_u == "CONSTANT":
        c = _scalar(constant_values, x.dtype, x.graph)
        return single("PadV2", [x, c], {"paddings": pads}, name=name or "Pad")
    return single("MirrorPad", [x], {"paddings": pads, "mode": mode_u}, name=name or "MirrorPad")


def mirror_pad_grad(g: Any, paddings: Any, mode: str, name: Optional[str] = None) -> _g.Tensor:
    """Folds the mirrored borders of g back onto its centre (MirrorPad's gradient)."""
    return single("MirrorPadGrad", [g], {"paddings": _pairs(paddings), "mode": mode}, name=name or "MirrorPadGrad")
