"""Keras `fit`/`evaluate` of a model compiled under a tf.distribute strategy with N replicas
(the MPI ranks, collflow/train/distribute_lib.py), as TF 1.x's Keras distributes them:

  * each global batch is split over the replicas, replica r taking rows [r*b, (r+1)*b),
    b = ceil(batch / N), by distribute_lib.replica_rows (predict is not split: every rank predicts every row);
  * each replica's loss is divided by N and the update is built in its replica context, so
    the optimizer sums the replicas' gradients: the update of the whole batch;
  * what fit and evaluate report is the whole batch's: the loss and the per-batch metrics are
    the replicas' values averaged with their row counts as weights, and a stateful Metric's
    result is computed from its state variables summed over the replicas (TF's metric
    variables are summed on read the same way).
"""
from __future__ import annotations

from typing import Any, List, Sequence

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops.math_more_ops import div_no_nan
from ..graph.ops.collective_ops import all_reduce
from ..graph.ops.constant_op import constant, identity
from ..graph.variables import Variable
from ..train.distribute_lib import replica_rows

__all__ = ["replicas", "split_rows", "global_mean", "global_metric_result", "distribute_reporting"]


def replicas(model: Any) -> int:
    """How many replicas the model trains on (1 without a strategy)."""
    strategy = getattr(model, "_distribute_strategy", None)
    return 1 if strategy is None else int(strategy.num_replicas_in_sync)


def split_rows(arrays: Sequence[Any], rank: int, n: int) -> List[Any]:
    """This replica's rows of each array of one global batch (None stays None)."""
    out = []
    for a in arrays:
        if a is None:
            out.append(None)
            continue
        begin, end = replica_rows(len(a), rank, n)
        out.append(a[begin:end])
    return out


def _rows(model: Any) -> _g.Tensor:
    return _m.cast(_a.shape(model.inputs[0])[0], _dt.float32)


def global_mean(value: _g.Tensor, rows: _g.Tensor, name: str) -> _g.Tensor:
    """The mean over every replica's rows of a value that is a mean over this replica's rows."""
    dt = value.dtype
    r = _m.cast(rows, dt)
    # an empty replica (a batch smaller than the replicas) adds nothing, not its NaN mean
    part = _a.where(_m.greater(r, 0), value * r, _a.zeros_like(value))
    both = all_reduce(_a.stack([part, r]), op="sum", name=name)
    return div_no_nan(both[0], both[1])


def global_metric_result(metric: Any, after: _g.Tensor, name: str) -> _g.Tensor:
    """metric.result() computed from its state variables summed over the replicas (after the
    update `after` ran here)."""
    variables = list(metric.variables)
    if not variables:
        return after
    with _g.control_dependencies([after]):
        summed = [all_reduce(v.read_value(), op="sum", name=f"{name}_{i}") for i, v in enumerate(variables)]
    # result() reads the variables through attributes: it reads the sums instead, this once
    swapped = {}
    for k, val in list(vars(metric).items()):
        if isinstance(val, Variable) and any(val is v for v in variables):
            swapped[k] = val
            setattr(metric, k, summed[next(i for i, v in enumerate(variables) if v is val)])
        elif isinstance(val, list) and val and all(isinstance(x, Variable) for x in val):
            swapped[k] = val
            setattr(metric, k, [summed[next(i for i, v in enumerate(variables) if v is x)]
                                if any(x is v for v in variables) else x for x in val])
    seen = {id(x) for val in swapped.values() for x in (val if isinstance(val, list) else [val])}
    missing = [v.op.name for v in variables if id(v) not in seen]
    if missing:
        for k, val in swapped.items():
            setattr(metric, k, val)
        raise NotImplementedError(
            f"metric {metric.name!r} keeps state variables {missing} outside its attributes (or lists of them): "
            "its result over several replicas cannot be computed; keep them as attributes")
    try:
        return identity(metric.result())
    finally:
        for k, val in swapped.items():
            setattr(metric, k, val)


def distribute_reporting(model: Any) -> None:
    """After compile: the loss and metrics fit/evaluate fetch become the whole batch's."""
    rows = _rows(model)
    g = model.total_loss.graph
    with g.as_default(), _g.name_scope("replicas"):
        model._report_loss = global_mean(model.total_loss, rows, "loss")
        stateful = {i - 1: m for i, m in getattr(model, "_stateful_metrics", [])}
        out = []
        for j, t in enumerate(model._metric_tensors):
            if j in stateful:
                out.append(global_metric_result(stateful[j], t, f"metric{j}"))
            else:
                out.append(global_mean(t, rows, f"metric{j}"))
        model._metric_tensors = out


def shared_order(model: Any, index: Any) -> Any:
    """Rank 0's shuffled sample order, on every rank (one broadcast)."""
    comm = model._distribute_strategy._communicator()
    return comm.broadcast(index.astype("int64"), root=0, name="keras_shuffled_order")


def scaled_loss(model: Any) -> _g.Tensor:
    """The loss a replica differentiates: the total loss / N (its gradients are then summed)."""
    n = replicas(model)
    loss = model.total_loss
    return loss if n <= 1 else loss * constant(1.0 / n, dtype=loss.dtype)


def feed_rows(model: Any, arrays: Sequence[Any]) -> List[Any]:
    """This rank's rows of a global batch when the model trains on several replicas."""
    n = replicas(model)
    if n <= 1:
        return list(arrays)
    return split_rows(arrays, model._distribute_strategy._replica_id(), n)
