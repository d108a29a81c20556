"""Ops of the sharded parameter server (kernels in collflow/comm/ps_kernels.py).

A lookup of a sharded table is two asynchronous collective ops:

  PSRoute(ids)        dedups the ids, sends each owner the local rows asked of it (Alltoallv)
                      -> request_counts [N], served_rows [?], served_counts [N], inverse [ids.size]
  PSGather(shard, served_rows, served_counts, request_counts, inverse, ids)
                      the owner gathers the served rows from its shard and sends them back
                      (Alltoallv); the result is restored to ids' order and shape
                      -> ids.shape + row_shape

Its gradient is a third collective, the route walked backwards:

  PSPush(grad, inverse, request_counts, served_rows, served_counts)
                      sums the gradient rows per unique id, sends them to their owners, which
                      sum what the ranks sent per row
                      -> values [rows] + row_shape, indices [rows]: this rank's rows that any
                         rank touched, each once; and how many ranks contributed (the divisor
                         of an average)

so the gradient of a shard is IndexedSlices(values, indices): the sum over every rank's
loss of its gradient rows for this rank's rows (the adjoint of the routed gather), which the
owner applies once per step with the usual SparseApply* kernels.  PSCheckLayout (run by the
shard's initializer) compares every rank's layout before the first step.

Several tables looked up with the same ids and split alike (wide_deep's deep and wide
tables) share one route, and with `gather_many` one exchange each way as well:

  PSGatherN(shard_1..shard_k, served_rows, served_counts, request_counts, inverse, ids)
                      one Alltoallv carries every table's rows side by side -> k lookups
  PSPushN(grad_1..grad_j, inverse, request_counts, served_rows, served_counts)
                      its gradient: one Alltoallv of every table's gradient rows
                      -> values_1..values_j, indices, contributing ranks

Each collective carries a fixed cost per call (a latency per peer in an all-to-all), so at
k tables this is 1 + 2 exchanges a step instead of 1 + 2k (docs/scaling.md).

Each op carries `layout` (a collflow.comm.ps.ShardLayout) and `key` (derived from the graph,
the same on every rank) naming its collectives.  Routes depend only on the ids and the
partitioning, so tables partitioned alike share one PSRoute for the same ids.
"""
from __future__ import annotations

from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from ..indexed_slices import IndexedSlices
from ..registry import register_op, register_gradient, not_differentiable
from ..shape import TensorShape
from . import array_ops
from .constant_op import constant
from .op_util import make_op

__all__: List[str] = []

PS_OP_TYPES = ("PSRoute", "PSGather", "PSPush", "PSGatherN", "PSPushN", "PSCheckLayout")

# graph collection of RoutePair: a prefetching lookup's route tensors of this step (PSRoute's
# outputs, fed at the next run) and the next batch's route (the PSPushN outputs to fetch)
PS_ROUTE_PREFETCH = "ps_route_prefetch"


class RoutePair(NamedTuple):
    """This step's route (request_counts, served rows, served_counts, inverse), the next
    batch's route computed during this step (the same four), and the ids / next ids they
    route."""
    now: Tuple[_g.Tensor, ...]
    next: Tuple[_g.Tensor, ...]
    ids: _g.Tensor
    next_ids: _g.Tensor


def _layout(op: _g.Operation) -> Any:
    lay = op.attrs.get("layout")
    if lay is None or not hasattr(lay, "num_shards"):
        raise ValueError(f"{op.type} needs a `layout` attribute (a ShardLayout), got {lay!r}")
    return lay


def _vec(n: int) -> TensorShape:
    return TensorShape([n])


def _route_spec(op: _g.Operation) -> list:
    lay = _layout(op)
    ids = op.inputs[0]
    if not ids.dtype.is_integer:
        raise ValueError(f"ids must be integers, got {ids.dtype.name}")
    n_ids = ids.shape.num_elements() if ids.shape.rank is not None else None
    return [(_dt.int64, _vec(lay.num_shards)), (_dt.int64, TensorShape([None])), (_dt.int64, _vec(lay.num_shards)),
            (_dt.int64, TensorShape([n_ids]))]


def _check_routing(routing: Sequence[_g.Tensor]) -> None:
    for t in routing:
        if t.dtype != _dt.int64:
            raise ValueError(f"routing input {t.name} must be int64, got {t.dtype.name}")


def _check_shard_rows(shard: _g.Tensor, lay: Any) -> None:
    if shard.shape.rank is not None and not TensorShape(list(shard.shape.dims[1:])).is_compatible_with(
            TensorShape(list(lay.row_shape))):
        raise ValueError(f"shard rows of shape {shard.shape} do not match the layout's rows {lay.row_shape}")


def _lookup_shape(ids: _g.Tensor, lay: Any) -> TensorShape:
    """ids.shape + the table's row shape."""
    return TensorShape(None) if ids.shape.rank is None else TensorShape(list(ids.shape.dims) + list(lay.row_shape))


def _gather_spec(op: _g.Operation) -> list:
    lay = _layout(op)
    shard, served, scounts, rcounts, inverse, ids = op.inputs
    if shard.dtype.name != lay.dtype:
        raise ValueError(f"the shard has dtype {shard.dtype.name}, the layout {lay.dtype}")
    _check_shard_rows(shard, lay)
    _check_routing((served, scounts, rcounts, inverse))
    return [(shard.dtype, _lookup_shape(ids, lay))]


def _push_spec(op: _g.Operation) -> list:
    lay = _layout(op)
    grad = op.inputs[0]
    if not grad.dtype.is_floating:
        raise ValueError(f"PSPush pushes floating-point gradients, got {grad.dtype.name}")
    return [(grad.dtype, TensorShape([None] + list(lay.row_shape))), (_dt.int64, TensorShape([None])),
            (grad.dtype, TensorShape(()))]


def _layouts(op: _g.Operation) -> tuple:
    lays = tuple(op.attrs.get("layouts") or ())
    if not lays or not all(hasattr(lay, "num_shards") for lay in lays):
        raise ValueError(f"{op.type} needs `layouts` (ShardLayouts, one per table), got {lays!r}")
    return lays


def _gather_n_spec(op: _g.Operation) -> list:
    lays = _layouts(op)
    k = len(lays)
    if len(op.inputs) != k + 5:
        raise ValueError(f"PSGatherN over {k} tables takes {k + 5} inputs, got {len(op.inputs)}")
    shards = op.inputs[:k]
    *routing, ids = op.inputs[k:]
    _check_routing(routing)
    out = []
    for shard, lay in zip(shards, lays):
        if shard.dtype.name != lay.dtype or shard.dtype != shards[0].dtype:
            raise ValueError(f"the shards of one PSGatherN share one dtype and their layouts': {shard.name} is "
                             f"{shard.dtype.name}, its layout {lay.dtype}, the first shard {shards[0].dtype.name}")
        _check_shard_rows(shard, lay)
        out.append((shard.dtype, _lookup_shape(ids, lay)))
    return out


def _push_n_spec(op: _g.Operation) -> list:
    lays = _layouts(op)
    k = len(lays)
    with_next = bool(op.attrs.get("with_next"))
    if len(op.inputs) != k + 4 + with_next:
        raise ValueError(f"PSPushN over {k} tables takes {k + 4 + with_next} inputs, got {len(op.inputs)}")
    grads = op.inputs[:k]
    if not grads[0].dtype.is_floating or any(g.dtype != grads[0].dtype for g in grads):
        raise ValueError(f"PSPushN pushes floating-point gradients of one dtype, got "
                         f"{[g.dtype.name for g in grads]}")
    dt = grads[0].dtype
    out = ([(dt, TensorShape([None] + list(lay.row_shape))) for lay in lays]
           + [(_dt.int64, TensorShape([None])), (dt, TensorShape(()))])
    if with_next:  # the next batch's route, as PSRoute's outputs
        nxt = op.inputs[k + 4]
        if not nxt.dtype.is_integer:
            raise ValueError(f"next ids must be integers, got {nxt.dtype.name}")
        n_ids = nxt.shape.num_elements() if nxt.shape.rank is not None else None
        n = lays[0].num_shards
        out += [(_dt.int64, _vec(n)), (_dt.int64, TensorShape([None])), (_dt.int64, _vec(n)),
                (_dt.int64, TensorShape([n_ids]))]
    return out


register_op("PSRoute", _route_spec, collective=True, ragged=True,
            doc="Dedup ids and send each owner the rows asked of it (Alltoallv).")
register_op("PSGather", _gather_spec, collective=True, ragged=True,
            doc="Owners return the requested rows of their shards (Alltoallv); restored to ids' order.")
register_op("PSPush", _push_spec, collective=True, ragged=True,
            doc="Gradient rows summed per id and sent to their owners (Alltoallv).")
register_op("PSCheckLayout", lambda op: (_layout(op), [])[1], collective=True,
            doc="Every rank's layout of a sharded table compared before the first step (allgather).")
register_op("PSGatherN", _gather_n_spec, collective=True, ragged=True,
            doc="Several tables' rows at the same routed ids in one Alltoallv (gather_many).")
register_op("PSPushN", _push_n_spec, collective=True, ragged=True,
            doc="Several tables' gradient rows to their owners in one Alltoallv.")
not_differentiable("PSRoute", "PSPush", "PSPushN", "PSCheckLayout")


@register_gradient("PSGather")
def _gather_grad(op: _g.Operation, grad: Any) -> list:
    shard, served, scounts, rcounts, inverse, ids = op.inputs
    if isinstance(grad, IndexedSlices):
        grad = _g.convert_to_tensor(grad)
    lay = op.attrs["layout"]
    values, indices, _count = push(grad, inverse, rcounts, served, scounts, lay, key=op.attrs["key"] + "/push")
    return [IndexedSlices(values, indices, _dense_shape(shard), shard.shape), None, None, None, None, None]


def _dense_shape(shard: Any) -> _g.Tensor:
    if shard.shape.is_fully_defined():
        return constant(np.asarray(shard.shape.dims, dtype=np.int64), name="dense_shape")
    return array_ops.shape(shard, out_type=_dt.int64)


@register_gradient("PSGatherN")
def _gather_n_grad(op: _g.Operation, *grads: Any) -> list:
    lays = op.attrs["layouts"]
    k = len(lays)
    shards = op.inputs[:k]
    served, scounts, rcounts, inverse, _ids = op.inputs[k:]
    # the gradient machinery fills a multi-output op's missing gradients with ZerosLike of the
    # output; a table no loss reads keeps None (pushing zeros would move its Adam moments)
    have = [i for i in range(k) if grads[i] is not None
            and not (isinstance(grads[i], _g.Tensor) and grads[i].op.type == "ZerosLike"
                     and grads[i].op.inputs[0] is op.outputs[i])]
    out: list = [None] * (k + 5)
    if not have:
        return out
    dense = [_g.convert_to_tensor(grads[i]) if isinstance(grads[i], IndexedSlices) else grads[i] for i in have]
    next_ids = op.attrs.get("next_ids")
    attrs = {"layouts": tuple(lays[i] for i in have), "key": op.attrs["key"] + "/push"}
    if next_ids is not None:  # the next batch's route rides in this exchange (gather_many)
        attrs.update(with_next=True, names=tuple(lay.name for lay in lays))
    pop = make_op("PSPushN", dense + [inverse, rcounts, served, scounts] + ([next_ids] if next_ids is not None else []),
                  attrs, name="PSPushN")
    if next_ids is not None:
        op.graph.add_to_collection(PS_ROUTE_PREFETCH, RoutePair((rcounts, served, scounts, inverse),
                                                                tuple(pop.outputs[-4:]), _ids, next_ids))
    indices = pop.outputs[len(have)]  # (with next ids, the next route's four follow the count)
    for j, i in enumerate(have):
        out[i] = IndexedSlices(pop.outputs[j], indices, _dense_shape(shards[i]), shards[i].shape)
    return out


# -- constructors -------------------------------------------------------------------------


def route(ids: Any, layout: Any, key: str, names: Sequence[str] = (), name: Optional[str] = None
          ) -> Tuple[_g.Tensor, _g.Tensor, _g.Tensor, _g.Tensor]:
    """(request_counts, served_rows, served_counts, inverse) of looking up `ids` in tables of `layout`."""
    op = make_op("PSRoute", [ids], {"layout": layout, "key": key, "names": tuple(names) or (layout.name,)},
                 name=name or "PSRoute")
    return op.outputs[0], op.outputs[1], op.outputs[2], op.outputs[3]


def gather(shard: Any, routed: Sequence[_g.Tensor], ids: Any, layout: Any, key: str,
           name: Optional[str] = None) -> _g.Tensor:
    """Rows of the sharded table at `ids` (shape ids.shape + row_shape); `shard` is this rank's shard."""
    rcounts, served, scounts, inverse = routed
    return make_op("PSGather", [shard, served, scounts, rcounts, inverse, ids], {"layout": layout, "key": key},
                   name=name or "PSGather").outputs[0]


def gather_many(shards: Sequence[Any], routed: Sequence[_g.Tensor], ids: Any, layouts: Sequence[Any], key: str,
                name: Optional[str] = None, next_ids: Any = None) -> List[_g.Tensor]:
    """Rows of several sharded tables at the same `ids`, routed once and exchanged in one
    Alltoallv each way (their gradients too); the tables share the partitioning and dtype.
    next_ids: the next batch's ids; the gradient's exchange then also carries their route
    (PS_ROUTE_PREFETCH records which tensors to fetch and feed back)."""
    rcounts, served, scounts, inverse = routed
    attrs = {"layouts": tuple(layouts), "key": key}
    if next_ids is not None:
        attrs["next_ids"] = next_ids
    op = make_op("PSGatherN", list(shards) + [served, scounts, rcounts, inverse, ids], attrs, name=name or "PSGatherN")
    return list(op.outputs)


def push(grad: Any, inverse: Any, request_counts: Any, served_rows: Any, served_counts: Any, layout: Any,
         key: str, name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor, _g.Tensor]:
    """(gradient rows of this rank's shard summed over ranks, their local rows, contributing ranks)."""
    op = make_op("PSPush", [grad, inverse, request_counts, served_rows, served_counts],
                 {"layout": layout, "key": key}, name=name or "PSPush")
    return op.outputs[0], op.outputs[1], op.outputs[2]


def check_layout(layout: Any, key: str, name: Optional[str] = None) -> _g.Operation:
    """An op that raises on every rank unless the ranks' layouts of this table agree."""
    return _g.get_default_graph().create_op("PSCheckLayout", [], {"layout": layout, "key": key},
                                            name=name or "PSCheckLayout")


def push_count(values: Any) -> Optional[_g.Tensor]:
    """The contributor count of the PSPush that produced `values` (through concats), or None."""
    seen = 0
    stack = [values]
    while stack and seen < 64:
        t = stack.pop()
        seen += 1
        if not isinstance(t, _g.Tensor):
            continue
        if t.op.type == "PSPush":
            return t.op.outputs[2]
        if t.op.type == "PSPushN":  # tables' rows, indices, count (then, prefetching, the next route)
            return t.op.outputs[len(t.op.attrs["layouts"]) + 1]
        if t.op.type in ("ConcatV2", "Identity"):
            stack.extend(t.op.inputs)
    return None
