"""tf.contrib.training.rejection_sample and stratified_sample: TF 1.x's queue-based samplers.

    [data_batch], labels = tf.contrib.training.stratified_sample([data], label, [0.5, 0.5], 32)

Both keep an example with some probability (a fresh uniform draw per example) and batch the
kept ones through tf.train.maybe_batch.  stratified_sample accepts class i with
a_i = (t_i / p_i) / max_j (t_j / p_j) for target proportions t and data proportions p (given,
or estimated from the labels seen so far, counts smoothed by 10 each), so kept examples
come in the target proportions.  The graphs are TF 1.15's, so they read their inputs as
TF's did (the estimate counts the labels of the input as it is read, as TF's).
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

from .. import dtypes as _dt
from ..data.input_producers import batch, maybe_batch
from ..graph import graph as _g
from ..graph.control_flow import cond
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops.check_more_ops import assert_integer
from ..graph.ops.check_ops import Assert, assert_equal, assert_less, assert_less_equal, assert_non_negative, \
    assert_positive
from ..graph.ops.logging_ops import Print
from ..graph.ops.math_extra_ops import is_nan
from ..graph.ops.random_ops import random_uniform
from ..graph.variable_scope import variable_scope
from ..graph.variables import Variable
from .optimize_loss import _with_dependencies

__all__ = ["rejection_sample", "stratified_sample"]


def _as_list(batched: Any) -> List[_g.Tensor]:
    # a queue of one component returns the tensor itself; these samplers always return lists
    return [batched] if isinstance(batched, _g.Tensor) else list(batched)


def _check_batch_dims(tensor_list: List[_g.Tensor], what: str) -> None:
    for t in tensor_list:
        if t.shape.rank == 0:
            raise ValueError(f"{what}: with enqueue_many every tensor needs a batch dimension; {t.name} is a scalar")
        d0, e0 = t.shape.dims[0] if t.shape.rank else None, (tensor_list[0].shape.dims[0]
                                                             if tensor_list[0].shape.rank else None)
        if d0 is not None and e0 is not None and d0 != e0:
            raise ValueError(f"{what}: the tensors' batch dimensions differ ({d0} and {e0})")


def rejection_sample(tensors: Sequence[Any], accept_prob_fn: Callable[[List[_g.Tensor]], Any], batch_size: int,
                     queue_threads: int = 1, enqueue_many: bool = False, prebatch_capacity: int = 16,
                     prebatch_threads: int = 1, runtime_checks: bool = False,
                     name: Optional[str] = None) -> List[_g.Tensor]:
    """Batches of the examples of `tensors` that accept_prob_fn(example) (a probability)
    accepts; with enqueue_many the inputs are batches, split into examples by a queue."""
    with variable_scope(name, default_name="rejection_sample", values=list(tensors)):
        tensor_list = [_g.convert_to_tensor(t) for t in tensors]
        if enqueue_many:
            _check_batch_dims(tensor_list, "rejection_sample")
            single = _as_list(batch(tensor_list, batch_size=1, num_threads=prebatch_threads,
                                    capacity=prebatch_capacity, enqueue_many=True))
            tensor_list = [_a.squeeze(x, [0]) for x in single]
        prob = _g.convert_to_tensor(accept_prob_fn(tensor_list))
        if runtime_checks:
            prob = _with_dependencies([assert_less_equal(0.0, prob), assert_less_equal(prob, 1.0)], prob)
        return _as_list(maybe_batch(tensor_list, keep_input=_m.less(random_uniform([]), prob),
                                    batch_size=batch_size, num_threads=queue_threads))


def _estimate_data_distribution(labels: _g.Tensor, num_classes: int, smoothing_constant: int = 10) -> _g.Tensor:
    """The class proportions of the labels seen so far (counts start at smoothing_constant)."""
    counts = Variable([smoothing_constant] * num_classes, trainable=False, name="class_count", dtype=_dt.int64)
    seen = counts.assign_add(_m.reduce_sum(_a.one_hot(labels, num_classes, dtype=_dt.int64), 0))
    seen = seen + 0  # a copy: other threads may update the counts while this one normalises
    return _m.cast(_m.truediv(seen, _m.reduce_sum(seen)), _dt.float32)


def _verify_input(tensor_list: List[_g.Tensor], labels: _g.Tensor,
                  probs_list: List[_g.Tensor]) -> Tuple[List[_g.Tensor], _g.Tensor, List[_g.Tensor]]:
    checked = []
    for probs in probs_list:
        if not probs.shape.is_fully_defined() or probs.shape.rank != 1:
            raise ValueError(f"class probabilities must be a vector of known length, got shape {probs.shape}")
        total = _m.reduce_sum(probs)
        checked.append(_with_dependencies([assert_non_negative(probs), assert_less(total, 1.0 + 1e-6),
                               assert_less(1.0 - 1e-6, total)], probs))
    n = checked[0].shape.num_elements()
    if any(p.shape.num_elements() != n for p in checked):
        raise ValueError("Probability parameters must have the same length.")
    if labels.shape.rank not in (None, 1):
        raise ValueError(f"labels must be a vector (a batch of class ids), got shape {labels.shape}")
    for t in tensor_list:
        if t.shape.rank == 0:
            raise ValueError(f"data tensor {t.name} needs a batch dimension")
        if t.shape.rank and labels.shape.rank and t.shape.dims[0] is not None and labels.shape.dims[0] is not None \
                and t.shape.dims[0] != labels.shape.dims[0]:
            raise ValueError(f"data and labels have different batch sizes: {t.shape.dims[0]} and "
                             f"{labels.shape.dims[0]}")
    size = _a.shape(labels)[0]
    positive = assert_positive(size)
    tensor_list = [_with_dependencies([positive, assert_equal(_a.shape(x)[0], size)], x) for x in tensor_list]
    labels = _with_dependencies([positive, assert_integer(labels), assert_non_negative(labels),
                     assert_less(labels, _m.cast(n, labels.dtype))], labels)
    return tensor_list, labels, checked


def stratified_sample(tensors: Sequence[Any], labels: Any, target_probs: Any, batch_size: int,
                      init_probs: Any = None, enqueue_many: bool = False, queue_capacity: int = 16,
                      threads_per_queue: int = 1, name: Optional[str] = None) -> Tuple[List[_g.Tensor], _g.Tensor]:
    """(data batch, label batch) with classes in the proportions `target_probs`: examples are
    kept by class with TF's acceptance rates, for data whose class proportions are
    `init_probs` (or estimated as labels are read)."""
    g = _g.get_default_graph()
    with g.name_scope(name or "stratified_sample"):
        tensor_list = [_g.convert_to_tensor(t) for t in tensors]
        labels = _g.convert_to_tensor(labels)
        target = _g.convert_to_tensor(target_probs, dtype=_dt.float32)
        if not enqueue_many:
            tensor_list = [_a.expand_dims(t, 0) for t in tensor_list]
            labels = _a.expand_dims(labels, 0)
        if init_probs is None:
            if not target.shape.is_fully_defined():
                raise ValueError(f"target_probs must have a static shape to estimate init_probs, got {target.shape}")
            init = _estimate_data_distribution(labels, target.shape.num_elements())
        else:
            init = _g.convert_to_tensor(init_probs, dtype=_dt.float32)
        tensor_list, labels, (init, target) = _verify_input(tensor_list, labels, [init, target])
        impossible = Assert(_m.reduce_all(_m.logical_or(_m.not_equal(init, 0.0), _m.equal(target, 0.0))),
                            ["All classes with zero initial probability must also have zero target probability: ",
                             init, target])
        init = _with_dependencies([impossible], init)
        ratio = target / init
        ratio = _a.where(is_nan(ratio), _a.zeros_like(ratio), ratio)
        accept = ratio / _m.reduce_max(ratio)
        rejected = _m.reduce_sum((1.0 - accept) * init)
        accept = cond(_m.less(rejected, 0.5), lambda: accept,
                      lambda: Print(accept, [accept], message="Proportion of examples rejected by sampler is high.",
                                    first_n=10))
        single = _as_list(batch(tensor_list + [labels], batch_size=1, num_threads=threads_per_queue,
                                capacity=queue_capacity, enqueue_many=True))
        values = [_a.squeeze(x, [0]) for x in single[:-1]]
        label = _a.squeeze(single[-1], [0])
        keep = _m.less(random_uniform([]), _a.gather(accept, label))
        out = _as_list(maybe_batch(values + [label], keep_input=keep, batch_size=batch_size,
                                   num_threads=threads_per_queue))
        return out[:-1], out[-1]
