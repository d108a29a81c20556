"""Collective ops: all-reduce, allgather, broadcast, alltoall, reduce-scatter as graph ops.

Every rank builds the same graph; when a plan runs, each collective op's kernel calls the
session's communicator (`Session(config={"comm": c})`, else `cf.comm.get()`) with an
asynchronous collective, so the executor keeps running other ops while it is in flight.
Each op carries a `key` attribute equal to its op name: derived from the graph alone, so
equal on every rank that built the same graph, and used to name mismatches and stragglers.

The ops are stateful (never folded, never merged).  Gradients (below) are collectives too:
with the global objective L = sum over ranks of each rank's loss,
  all_reduce(sum)   -> all_reduce(sum) of the gradient   (mean: all_reduce(mean))
  all_reduce(max)   -> the summed gradient, shared among the ranks that hold the maximum
  allgather         -> reduce_scatter(sum) of the gradient: each rank gets the sum over
                       ranks of the gradient rows that came from it
  reduce_scatter    -> allgather of the gradient
  broadcast(root)   -> the sum of the gradients on the root, zeros elsewhere
  alltoall          -> alltoall of the gradient with the received splits as splits
"""
from __future__ import annotations

from typing import Any, Optional, Tuple, Union

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import register_op, register_gradient
from ..shape import TensorShape
from .op_util import make_op

__all__ = ["all_reduce", "allgather", "broadcast", "alltoall", "reduce_scatter", "collective_key",
           "COLLECTIVE_OP_TYPES"]

COLLECTIVE_OP_TYPES = ("AllReduce", "Allgather", "Broadcast", "AllToAll", "ReduceScatter", "CollectiveReduce")
_REDUCTIONS = ("sum", "mean", "max", "min")
_SUPPORTED = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")


# -- shape functions -------------------------------------------------------------------------
def _check_dtype(op: _g.Operation) -> _dt.DType:
    dt = op.inputs[0].dtype
    if dt.name not in _SUPPORTED:
        raise ValueError(f"{op.type} does not support dtype {dt.name} (supported: {', '.join(_SUPPORTED)})")
    return dt


def _check_reduction(op: _g.Operation, dt: _dt.DType) -> None:
    red = op.attrs["reduction"]
    if red not in _REDUCTIONS:
        raise ValueError(f"op must be one of {', '.join(_REDUCTIONS)}, got {red!r}")
    if red == "mean" and not dt.is_floating:
        raise ValueError(f"op='mean' needs a floating-point tensor, got {dt.name}")
    if dt.is_bool and red not in ("max", "min"):
        raise ValueError(f"a bool tensor can only be reduced with op='max' (or) or 'min' (and), got {red!r}")


def _rows_shape(x: _g.Tensor) -> TensorShape:
    """[None] + x's shape after the first dimension (a scalar counts as one row)."""
    r = x.shape.rank
    if r is None:
        return TensorShape(None)
    return TensorShape([None] + list(x.shape.dims[1:]) if r else [None])


def _need_rows(op: _g.Operation) -> None:
    if op.inputs[0].shape.rank == 0:
        raise ValueError(f"{op.type} splits its input along the first dimension; got a scalar")


def _splits_input(op: _g.Operation) -> None:
    if len(op.inputs) > 1:
        s = op.inputs[1]
        if not s.dtype.is_integer:
            raise ValueError(f"splits must be integers, got {s.dtype.name}")
        if s.shape.rank not in (None, 1):
            raise ValueError(f"splits must be a vector (one count per rank), got shape {s.shape}")


def _all_reduce_spec(op: _g.Operation) -> list:
    dt = _check_dtype(op)
    _check_reduction(op, dt)
    return [(dt, op.inputs[0].shape)]


def _allgather_spec(op: _g.Operation) -> list:
    dt = _check_dtype(op)
    return [(dt, _rows_shape(op.inputs[0])), (_dt.int32, TensorShape([None]))]


def _broadcast_spec(op: _g.Operation) -> list:
    if int(op.attrs["root"]) < 0:
        raise ValueError(f"root must be a rank (>= 0), got {op.attrs['root']}")
    return [(_check_dtype(op), op.inputs[0].shape)]


def _alltoall_spec(op: _g.Operation) -> list:
    dt = _check_dtype(op)
    _need_rows(op)
    _splits_input(op)
    return [(dt, _rows_shape(op.inputs[0])), (_dt.int32, TensorShape([None]))]


def _reduce_scatter_spec(op: _g.Operation) -> list:
    dt = _check_dtype(op)
    _check_reduction(op, dt)
    if op.attrs["reduction"] not in ("sum", "mean"):
        raise ValueError(f"reduce_scatter supports op='sum' or 'mean', got {op.attrs['reduction']!r}")
    _need_rows(op)
    _splits_input(op)
    return [(dt, _rows_shape(op.inputs[0]))]


def _collective_reduce_spec(op: _g.Operation) -> list:
    dt = _check_dtype(op)
    _check_reduction(op, dt)
    return [(dt, op.inputs[0].shape)]


register_op("AllReduce", _all_reduce_spec, collective=True, host_only=True,
            doc="Elementwise reduction over all ranks; every rank gets the result.")
register_op("Allgather", _allgather_spec, collective=True, ragged=True, host_only=True,
            doc="Concatenation along axis 0 of every rank's input (first dims may differ); "
                "output 1: rows per rank.")
register_op("Broadcast", _broadcast_spec, collective=True, host_only=True, doc="The root rank's input on every rank.")
register_op("AllToAll", _alltoall_spec, collective=True, ragged=True, host_only=True,
            doc="Rows splits[i] of the input go to rank i; output 1: rows received from each rank.")
register_op("ReduceScatter", _reduce_scatter_spec, collective=True, host_only=True,
            doc="Reduction over all ranks, of which rank i keeps rows sizes[i] (equal blocks by default).")
register_op("CollectiveReduce", _collective_reduce_spec, collective=True, host_only=True,
            doc="Reduction over all ranks on the root; zeros on the other ranks.")


# -- constructors ----------------------------------------------------------------------------
def _make(op_type: str, inputs: list, attrs: dict, name: Optional[str]) -> _g.Operation:
    op = make_op(op_type, inputs, attrs, name=name)
    # the key is the op's (unique) name: a function of the graph alone, the same on every rank
    op.attrs["key"] = op.name
    return op


def collective_key(op: Union[_g.Operation, _g.Tensor]) -> str:
    """The key ranks use to match this collective: 'Type:op_name'."""
    o = op.op if isinstance(op, _g.Tensor) else op
    return f"{o.type}:{o.attrs.get('key', o.name)}"


def all_reduce(x: Any, op: str = "sum", name: Optional[str] = None) -> _g.Tensor:
    """Elementwise reduction of x over all ranks ('sum', 'mean', 'max', 'min'); same shape."""
    return _make("AllReduce", [x], {"reduction": op}, name or "AllReduce").outputs[0]


def allgather(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """Every rank's x concatenated along axis 0, in rank order (first dimensions may differ)."""
    return _make("Allgather", [x], {}, name or "Allgather").outputs[0]


def broadcast(x: Any, root: int = 0, name: Optional[str] = None) -> _g.Tensor:
    """The value of x on rank `root`, on every rank (x gives the shape and dtype)."""
    return _make("Broadcast", [x], {"root": int(root)}, name or "Broadcast").outputs[0]


def alltoall(x: Any, splits: Any = None, name: Optional[str] = None) -> Union[_g.Tensor, Tuple[_g.Tensor, _g.Tensor]]:
    """Sends rows of x to every rank and concatenates what every rank sent here, in rank order.

    Without `splits`, x's first dimension is split into equal blocks, block i going to rank
    i, and the result is returned.  With `splits` (int vector, one row count per rank) the
    result is `(values, received_splits)`: received_splits[i] rows came from rank i.
    """
    inputs = [x] if splits is None else [x, splits]
    op = _make("AllToAll", inputs, {}, name or "AllToAll")
    return op.outputs[0] if splits is None else (op.outputs[0], op.outputs[1])


def reduce_scatter(x: Any, sizes: Any = None, op: str = "sum", name: Optional[str] = None) -> _g.Tensor:
    """Reduces x over all ranks ('sum' or 'mean'); rank i keeps its block of rows.

    Blocks are equal (x's first dimension divisible by the number of ranks) unless `sizes`
    (int vector, rows per rank) is given.
    """
    inputs = [x] if sizes is None else [x, sizes]
    return _make("ReduceScatter", inputs, {"reduction": op}, name or "ReduceScatter").outputs[0]


def _collective_reduce(x: Any, root: int = 0, op: str = "sum", name: Optional[str] = None) -> _g.Tensor:
    """Sum over ranks on `root`, zeros elsewhere (the gradient of broadcast)."""
    return _make("CollectiveReduce", [x], {"root": int(root), "reduction": op},
                 name or "CollectiveReduce").outputs[0]


# -- gradients (one rule per op) --------------------------------------------------------------
@register_gradient("AllReduce")
def _all_reduce_grad(op: _g.Operation, g: Any) -> list:
    red = op.attrs["reduction"]
    if red in ("sum", "mean"):
        return [all_reduce(g, red)]
    from . import math_ops as m
    # max/min: the summed gradient goes to the ranks holding the extremum, split among ties
    hit = m.cast(m.equal(op.inputs[0], op.outputs[0]), g.dtype)
    return [all_reduce(g, "sum") * hit / all_reduce(hit, "sum")]


register_gradient("Allgather")(lambda op, g, _sizes: [reduce_scatter(g, op.outputs[1])])
register_gradient("ReduceScatter")(lambda op, g: _reduce_scatter_grad(op, g))
register_gradient("Broadcast")(lambda op, g: [_collective_reduce(g, op.attrs["root"])])
register_gradient("CollectiveReduce")(lambda op, g: [broadcast(g, op.attrs["root"])])
register_gradient("AllToAll")(lambda op, g, _recv: [alltoall(g, op.outputs[1])[0]] + [None] * (len(op.inputs) - 1))


def _reduce_scatter_grad(op: _g.Operation, g: Any) -> list:
    gathered = allgather(g)
    if op.attrs["reduction"] == "mean":
        # y = (1/n) sum_s x_s, so each x gets 1/n of the gathered gradient; n from the graph
        gathered = gathered / all_reduce(_ones_scalar(g), "sum")
    return [gathered] + [None] * (len(op.inputs) - 1)


def _ones_scalar(like: Any) -> _g.Tensor:
    from .constant_op import constant
    return constant(1, dtype=like.dtype)
