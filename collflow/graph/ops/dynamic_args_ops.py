"""Size arguments computed at run time: tf.tile(x, [tf.shape(y)[0], 1]), tf.pad(x, [[0, n], [1, 1]]),
tf.one_hot(i, depth_tensor), tf.broadcast_to(t, [n, 3]), tf.reverse(x, axis_tensor),
tf.split(x, sizes_tensor, num=k).

The constructors in array_ops / slicing_ops / reverse_ops build their static op (the value as
an attr) whenever the graph determines the value; only when it does not do they come here,
where the value is an int tensor input read on the host when the op runs (TF's HostMemory:
each op's `host_inputs` at registration).  Each op's static shape keeps what TF's shape inference
knows: the rank from the argument's length and every entry the graph can evaluate now
(shape_eval.partial_vector), as TF's constant_value(partial=True) does.

Ops: TileDynamic(x, multiples) and its gradient TileDynamicGrad(g, multiples, x_shape);
PadDynamic(x, paddings, c) / MirrorPadDynamic(x, paddings; mode) and their gradients
PadDynamicGrad(g, paddings) / MirrorPadDynamicGrad(g, paddings; mode); OneHotDynamic(indices,
depth, on, off; axis); BroadcastToDynamic(x, shape); ReverseDynamic(x, axis);
SplitVDynamic(x, size_splits; axis, num_split).
"""
from __future__ import annotations

from typing import Any, List, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_gradient, register_op
from ..shape import TensorShape
from .op_util import single

__all__ = ["tile_dynamic", "tile_dynamic_grad", "pad_dynamic", "one_hot_dynamic", "broadcast_to_dynamic",
           "reverse_dynamic", "split_v_dynamic"]

_INDEX_TYPES = (_dt.int32, _dt.int64)


def _vector_arg(t: _g.Tensor, what: str, fn: str) -> None:
    """A size argument must be a 1-D int32/int64 tensor (TF's Tmultiples / Tidx)."""
    if t.dtype not in _INDEX_TYPES:
        raise TypeError(f"{fn}: {what} must be int32 or int64, got {t.dtype.name}")
    if t.shape.rank not in (None, 1):
        raise ValueError(f"{fn}: {what} must be a 1-D tensor, got shape {t.shape}")


def _entries(t: _g.Tensor) -> Optional[List[Optional[int]]]:
    """A 1-D int tensor's entries the graph determines now (None where computed), or None if its
    length is unknown."""
    from .shape_eval import partial_vector
    return partial_vector(t)


def _length(t: _g.Tensor) -> Optional[int]:
    """The length of a 1-D tensor (or the first dimension of a 2-D one) when known."""
    return t.shape.dims[0] if t.shape.rank is not None and t.shape.rank >= 1 else None


def _mul(d: Optional[int], m: Optional[int]) -> Optional[int]:
    # TF's InferenceContext::Multiply: 0 times anything is 0, 1 times d is d
    if d == 0 or m == 0:
        return 0
    if d == 1:
        return m
    if m == 1:
        return d
    return None if d is None or m is None else d * m


# -- tile ------------------------------------------------------------------------------------


def _tile_spec(op: _g.Operation) -> list:
    x, mult = op.inputs
    _vector_arg(mult, "multiples", "tile")
    n = _length(mult)
    rank = x.shape.rank
    if rank is not None and n is not None and n != rank:
        raise ValueError(f"tile: multiples has {n} entries, the input of shape {x.shape} has rank {rank}")
    if rank is None and n is None:
        return [(x.dtype, TensorShape(None))]
    rank = rank if rank is not None else n
    ms = _entries(mult) or [None] * rank
    dims = list(x.shape.dims) if x.shape.rank is not None else [None] * rank
    for i, m in enumerate(ms):
        if m is not None and m < 0:
            raise ValueError(f"tile: multiples[{i}] must be >= 0, got {m}")
    return [(x.dtype, TensorShape([_mul(d, m) for d, m in zip(dims, ms)]))]


register_op("TileDynamic", _tile_spec, host_inputs=(1,),
            doc="x repeated multiples[i] times along axis i (multiples: a run-time "
                "1-D int tensor)")


def _tile_grad_spec(op: _g.Operation) -> list:
    g, _, shape = op.inputs
    dims = _entries(shape)
    return [(g.dtype, TensorShape(dims) if dims is not None else TensorShape(None))]


register_op("TileDynamicGrad", _tile_grad_spec, host_inputs=(1, 2),
            doc="the tiles of g summed back to the run-time shape x_shape: "
                "TileDynamic's gradient")


def tile_dynamic(x: Any, multiples: Any, name: Optional[str] = None) -> _g.Tensor:
    """x tiled by `multiples`, a 1-D int tensor evaluated at run time."""
    x = _g.convert_to_tensor(x)
    return single("TileDynamic", [x, _g.convert_to_tensor(multiples)], name=name or "Tile")


def tile_dynamic_grad(g: Any, multiples: Any, x: Any, name: Optional[str] = None) -> _g.Tensor:
    """Sums the tiles of g (shaped like tile(x, multiples)) back to x's run-time shape."""
    from .array_ops import shape
    from .constant_op import constant
    x = _g.convert_to_tensor(x)
    mult = _g.convert_to_tensor(multiples)
    if x.shape.is_fully_defined():  # no need to read x's shape at run time
        xs = constant(list(x.shape.dims), dtype=mult.dtype)
    else:
        xs = shape(x, out_type=mult.dtype)
    return single("TileDynamicGrad", [g, mult, xs], name=name or "TileGrad")


@register_gradient("TileDynamic")
def _tile_grad(op: _g.Operation, g: Any) -> list:
    return [tile_dynamic_grad(g, op.inputs[1], op.inputs[0]), None]


@register_gradient("TileDynamicGrad")
def _tile_grad_grad(op: _g.Operation, g: Any) -> list:
    return [tile_dynamic(g, op.inputs[1]), None, None]


# -- pad -------------------------------------------------------------------------------------


def _pad_rows(t: _g.Tensor) -> Optional[List[List[Optional[int]]]]:
    """The [before, after] entries of a [n, 2] paddings tensor the graph determines (None where
    computed), as TF's constant_value(partial=True) reads a stack of stacks; None if unknown."""
    from .shape_eval import static_value
    full = static_value(t)
    if full is not None and full.ndim == 2:
        return [[int(v) for v in row] for row in full]
    op = t.op
    if op.type == "Pack" and op.attrs.get("axis", 0) == 0 and all(i.shape.rank == 1 for i in op.inputs):
        rows = []
        for r in op.inputs:
            v = _entries(r)
            if v is None or len(v) != 2:
                return None
            rows.append(v)
        return rows
    return None


def _pad_common(op: _g.Operation, mode: str) -> list:
    x, pads = op.inputs[0], op.inputs[1]
    if pads.dtype not in _INDEX_TYPES:
        raise TypeError(f"pad: paddings must be int32 or int64, got {pads.dtype.name}")
    if pads.shape.rank not in (None, 2) or (pads.shape.rank == 2 and pads.shape.dims[1] not in (None, 2)):
        raise ValueError(f"pad: paddings must be a [rank, 2] matrix, got shape {pads.shape}")
    n = _length(pads)
    rank = x.shape.rank
    if rank is not None and n is not None and n != rank:
        raise ValueError(f"pad: paddings need one [before, after] pair per dimension of shape {x.shape}, got {n}")
    if rank is None and n is None:
        return [(x.dtype, TensorShape(None))]
    rank = rank if rank is not None else n
    dims = list(x.shape.dims) if x.shape.rank is not None else [None] * rank
    rows = _pad_rows(pads) or [[None, None]] * rank
    out: List[Optional[int]] = []
    for i, ((a, b), d) in enumerate(zip(rows, dims)):
        if (a is not None and a < 0) or (b is not None and b < 0):
            raise ValueError(f"pad: paddings must be non-negative, got {[a, b]} for dimension {i}")
        if d is not None and mode != "CONSTANT":
            lim = d - 1 if mode == "REFLECT" else d
            if (a is not None and a > lim) or (b is not None and b > lim):
                raise ValueError(f"pad: {mode} paddings of dimension {i} must be at most {lim} for shape "
                                 f"{x.shape}, got {[a, b]}")
        out.append(None if d is None or a is None or b is None else d + a + b)
    return [(x.dtype, TensorShape(out))]


def _pad_spec(op: _g.Operation) -> list:
    x, c = op.inputs[0], op.inputs[2]
    if c.dtype != x.dtype:
        raise ValueError(f"pad: constant_values has dtype {c.dtype.name}, the input {x.dtype.name}")
    if c.shape.rank not in (None, 0):
        raise ValueError(f"pad: constant_values must be a scalar, got shape {c.shape}")
    return _pad_common(op, "CONSTANT")


register_op("PadDynamic", _pad_spec, host_inputs=(1,),
            doc="x padded with the scalar c by a run-time [rank, 2] paddings tensor")
register_op("MirrorPadDynamic", lambda op: _pad_common(op, op.attrs["mode"]), host_inputs=(1,),
            doc="x mirror-padded (REFLECT or SYMMETRIC) by a run-time [rank, 2] paddings tensor")


def _pad_grad_spec(op: _g.Operation) -> list:
    g = op.inputs[0]
    shape = op.attrs.get("shape")
    if shape is not None:
        return [(g.dtype, TensorShape(list(shape)))]
    rank = g.shape.rank if g.shape.rank is not None else _length(op.inputs[1])
    return [(g.dtype, TensorShape(None if rank is None else [None] * rank))]


register_op("PadDynamicGrad", _pad_grad_spec, host_inputs=(1,),
            doc="the centre of g inside run-time paddings: PadDynamic's "
                "gradient")
register_op("MirrorPadDynamicGrad", _pad_grad_spec, host_inputs=(1,),
            doc="g's mirrored borders folded back onto its centre: "
                "MirrorPadDynamic's gradient")


def pad_dynamic(x: _g.Tensor, paddings: Any, mode: str, constant: Optional[_g.Tensor] = None,
                name: Optional[str] = None) -> _g.Tensor:
    """x padded by `paddings`, a [rank, 2] int tensor evaluated at run time (mode already
    upper-case; `constant` the scalar of CONSTANT mode)."""
    pads = _g.convert_to_tensor(paddings)
    if mode == "CONSTANT":
        return single("PadDynamic", [x, pads, constant], name=name or "Pad")
    return single("MirrorPadDynamic", [x, pads], {"mode": mode}, name=name or "MirrorPad")


def _static_dims(x: _g.Tensor) -> Optional[tuple]:
    return None if x.shape.rank is None else tuple(x.shape.dims)


@register_gradient("PadDynamic")
def _pad_grad(op: _g.Operation, g: Any) -> list:
    x, pads = op.inputs[0], op.inputs[1]
    gx = single("PadDynamicGrad", [g, pads], {"shape": _static_dims(x)})
    return [gx, None, None]  # none for the constant, as TF's PadV2 gradient


@register_gradient("PadDynamicGrad")
def _pad_grad_grad(op: _g.Operation, g: Any) -> list:
    from .array_util import _scalar
    return [single("PadDynamic", [g, op.inputs[1], _scalar(0, g.dtype, g.graph)]), None]


@register_gradient("MirrorPadDynamic")
def _mirror_pad_grad(op: _g.Operation, g: Any) -> list:
    x, pads = op.inputs
    return [single("MirrorPadDynamicGrad", [g, pads], {"mode": op.attrs["mode"], "shape": _static_dims(x)}), None]


@register_gradient("MirrorPadDynamicGrad")
def _mirror_pad_grad_grad(op: _g.Operation, g: Any) -> list:
    return [single("MirrorPadDynamic", [g, op.inputs[1]], {"mode": op.attrs["mode"]}), None]


# -- one_hot ---------------------------------------------------------------------------------


def _one_hot_spec(op: _g.Operation) -> list:
    idx, depth, on, off = op.inputs
    if not idx.dtype.is_integer:
        raise ValueError(f"one_hot: indices must be integers, got {idx.dtype.name}")
    if depth.dtype not in _INDEX_TYPES or depth.shape.rank not in (None, 0):
        raise ValueError(f"one_hot: depth must be an integer scalar, got {depth.dtype.name} {depth.shape}")
    if on.dtype != off.dtype:
        raise ValueError(f"one_hot: on_value ({on.dtype.name}) and off_value ({off.dtype.name}) differ in dtype")
    axis = op.attrs["axis"]
    if idx.shape.rank is None:
        return [(on.dtype, TensorShape(None))]
    dims = list(idx.shape.dims)
    if not -1 <= axis <= len(dims):
        raise ValueError(f"one_hot: axis {axis} is out of range [-1, {len(dims)}] for indices of shape {idx.shape}")
    dims.insert(len(dims) if axis == -1 else axis, None)
    return [(on.dtype, TensorShape(dims))]


register_op("OneHotDynamic", _one_hot_spec, host_inputs=(1,),
            doc="one-hot encoding with a run-time depth (a 0-d int tensor)")
# as TF's OneHot: no gradient for the indices, the depth, nor the on/off values
not_differentiable("OneHotDynamic")


def one_hot_dynamic(indices: _g.Tensor, depth: Any, on: _g.Tensor, off: _g.Tensor, axis: int,
                    name: Optional[str] = None) -> _g.Tensor:
    """One-hot encoding whose `depth` is a scalar int tensor evaluated at run time."""
    d = _g.convert_to_tensor(depth)
    if d.dtype not in _INDEX_TYPES:
        raise TypeError(f"one_hot: depth must be an integer, got {d.dtype.name}")
    return single("OneHotDynamic", [indices, d, on, off], {"axis": int(axis)}, name=name or "one_hot")


# -- broadcast_to ----------------------------------------------------------------------------


def _bcast_spec(op: _g.Operation) -> list:
    x, shape = op.inputs
    _vector_arg(shape, "shape", "broadcast_to")
    entries = _entries(shape)
    if entries is None:
        return [(x.dtype, TensorShape(None))]
    for d in entries:
        if d is not None and d < 0:
            raise ValueError(f"broadcast_to: target shape {entries} has a negative dimension")
    out = list(entries)
    if x.shape.rank is not None:
        if x.shape.rank > len(out):
            raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to the lower-rank shape {out}")
        # as TF's shape function: an input dimension over 1 is the output's (broadcasting only stretches 1s)
        for k, d in enumerate(x.shape.dims[::-1]):
            j = len(out) - 1 - k
            if d is not None and d > 1:
                if out[j] is not None and out[j] != d:
                    raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to {entries}")
                out[j] = d
    return [(x.dtype, TensorShape(out))]


register_op("BroadcastToDynamic", _bcast_spec, host_inputs=(1,), doc="x broadcast to a run-time 1-D int shape tensor")


def broadcast_to_dynamic(x: Any, shape: Any, name: Optional[str] = None) -> _g.Tensor:
    """x broadcast (NumPy rules) to `shape`, a 1-D int tensor evaluated at run time."""
    return single("BroadcastToDynamic", [_g.convert_to_tensor(x), _g.convert_to_tensor(shape)],
                  name=name or "BroadcastTo")


@register_gradient("BroadcastToDynamic")
def _bcast_grad(op: _g.Operation, g: Any) -> list:
    from .math_ops import sum_to_shape_of
    return [sum_to_shape_of(g, op.inputs[0]), None]


# -- reverse ---------------------------------------------------------------------------------


def _reverse_spec(op: _g.Operation) -> list:
    x, axis = op.inputs
    _vector_arg(axis, "axis", "reverse")
    return [(x.dtype, x.shape)]


register_op("ReverseDynamic", _reverse_spec, host_inputs=(1,),
            doc="x reversed along the axes of a run-time 1-D int tensor")


def reverse_dynamic(x: Any, axis: Any, name: Optional[str] = None) -> _g.Tensor:
    """x reversed along `axis`, a 1-D int tensor evaluated at run time."""
    return single("ReverseDynamic", [_g.convert_to_tensor(x), _g.convert_to_tensor(axis)],
                  name=name or "ReverseV2")


@register_gradient("ReverseDynamic")
def _reverse_grad(op: _g.Operation, g: Any) -> list:
    return [reverse_dynamic(g, op.inputs[1]), None]


# -- split by run-time sizes -----------------------------------------------------------------


def _split_v_spec(op: _g.Operation) -> list:
    x, sizes = op.inputs
    _vector_arg(sizes, "size_splits", "split")
    n = op.attrs["num_split"]
    if _length(sizes) not in (None, n):
        raise ValueError(f"split: num={n} but size_splits has {_length(sizes)} entries")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None))] * n
    axis = op.attrs["axis"] % x.shape.rank
    known = _entries(sizes) or [None] * n
    out = []
    for k in known:  # what the graph determines of each size (TF: constant_value(partial=True))
        dims = list(x.shape.dims)
        dims[axis] = k if k is not None and k >= 0 else None
        out.append((x.dtype, TensorShape(dims)))
    return out


register_op("SplitVDynamic", _split_v_spec, host_inputs=(1,),
            doc="x split along axis into pieces of the sizes in a run-time 1-D int tensor "
                "(one may be -1: the rest)")


def split_v_dynamic(x: Any, size_splits: Any, axis: int, num: Optional[int] = None,
                    name: Optional[str] = None) -> List[_g.Tensor]:
    """x split along `axis` into pieces sized by `size_splits`, a 1-D int tensor evaluated at
    run time; `num` (the number of pieces) is needed when its length is not static, as TF."""
    x = _g.convert_to_tensor(x)
    sizes = _g.convert_to_tensor(size_splits)
    _vector_arg(sizes, "size_splits", "split")  # TF's Tlen: a TypeError before the op exists
    n = _length(sizes) if num is None else int(num)
    if n is None:
        raise ValueError(f"Cannot infer argument `num` from shape {sizes.shape}")
    if x.shape.rank is not None and not -x.shape.rank <= axis < x.shape.rank:
        raise ValueError(f"split: axis {axis} is out of range for a tensor of rank {x.shape.rank}")
    op = _g.get_default_graph().create_op("SplitVDynamic", [x, sizes], {"axis": int(axis), "num_split": n},
                                          name=name or "split")
    return list(op.outputs)


@register_gradient("SplitVDynamic")
def _split_v_grad(op: _g.Operation, *gs: Any) -> list:
    from .array_ops import concat, zeros_like
    gs = [zeros_like(o) if g is None else g for g, o in zip(gs, op.outputs)]
    return [concat(gs, op.attrs["axis"]), None]
