"""tf.nn.compute_average_loss and tf.nn.scale_regularization_loss (TF 1.15): the loss
scaling a custom training loop under a tf.distribute strategy needs.

TF divides by the number of replicas in sync because its strategies *sum* the replicas'
gradients.  collflow's replicas are MPI ranks: inside a collflow strategy's replica
function (train/distribute_lib.py), `apply_gradients` sums over the ranks as TF does, and
`num_replicas_in_sync` is the rank count, so the default `global_batch_size` is the local
batch size times the ranks.  Outside any strategy there is one replica in sync, as in TF:
that is also right for Horovod-style training (hvd.DistributedOptimizer and collflow's sync
optimizers *average* the ranks' gradients), where each rank's loss is its own batch's mean.
A program that sums gradients over the ranks by hand passes
`global_batch_size = local_batch * hvd.size()` itself, as TF's docs advise.
"""
from __future__ import annotations

from typing import Any, Optional

from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m

__all__ = ["compute_average_loss", "scale_regularization_loss"]


def _replicas_in_sync(what: str) -> int:
    """The current strategy's replica count (1 without one); RuntimeError in a strategy's
    cross-replica context, as TF."""
    from ..train import distribute_lib as _ds
    if _ds.has_strategy() and _ds.in_cross_replica_context():
        raise RuntimeError(f"You are calling `{what}` in cross replica context, while it was expected to be called "
                           "in replica context.")
    return int(_ds.get_strategy().num_replicas_in_sync)


def compute_average_loss(per_example_loss: Any, sample_weight: Any = None,
                         global_batch_size: Optional[Any] = None) -> _g.Tensor:
    """sum(per_example_loss * sample_weight) / global_batch_size, a scalar in the loss's
    dtype; global_batch_size defaults to the first dimension of the losses times the
    replicas in sync.  A zero batch gives nan, as TF 1.15."""
    loss = _g.convert_to_tensor(per_example_loss)
    dtype = loss.dtype
    if loss.shape.rank == 0:
        raise ValueError("Invalid value passed for `per_example_loss`. Expected a tensor with at least rank 1, "
                         f"received: {loss}")
    if sample_weight is not None:
        w = _g.convert_to_tensor(sample_weight)
        loss = loss * _m.cast(w, dtype)  # the weights broadcast against the losses
    if global_batch_size is None:
        replicas = _replicas_in_sync("compute_average_loss")
        global_batch_size = _m.cast(_a.shape(loss)[0] * replicas, dtype)
    elif isinstance(global_batch_size, _g.Tensor):
        global_batch_size = _m.cast(global_batch_size, dtype)
    else:
        global_batch_size = _g.convert_to_tensor(global_batch_size, dtype=dtype)
    return _m.reduce_sum(loss) / global_batch_size


def scale_regularization_loss(regularization_loss: Any) -> _g.Tensor:
    """The sum of the regularization loss(es) divided by the replicas in sync."""
    return _m.reduce_sum(regularization_loss) / _replicas_in_sync("scale_regularization_loss")
