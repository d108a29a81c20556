"""tf.contrib.training.bucket and bucket_by_sequence_length: TF 1.x's queue-based bucketing.

    lengths, (tokens, labels) = tf.contrib.training.bucket_by_sequence_length(
        length, [tokens, labels], batch_size=32, bucket_boundaries=[10, 20, 40], dynamic_pad=True)

Each bucket is a queue of examples; a runner thread per bucket moves full batches of it to a
top queue, whose dequeue is what the caller gets: every batch comes from one bucket.  The
queues, names and static shapes are TF 1.15's (bucket_queue_<i>, top_queue, dequeue_top).

One deliberate difference: when the input runs out, TF 1.15 closed the top queue at once, so
examples still waiting in the buckets were lost even with allow_smaller_final_batch.  Here the
buckets are closed first and drained: with allow_smaller_final_batch each bucket's remainder
comes out as a last, smaller batch, as TF's documentation promises; without it the remainder
(fewer than a batch) is dropped, as documented.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import math_ops as _m
from ..graph.ops.check_ops import Assert
from ..graph.ops.constant_op import constant, group
from ..graph.ops.data_flow_ops import FIFOQueue, PaddingFIFOQueue
from ..graph.shape import TensorShape, as_shape
from ..data.input_producers import _enqueue_kept, _shapes
from ..data.pipeline import QueueRunner, add_queue_runner

__all__ = ["bucket", "bucket_by_sequence_length"]


def _as_tensor_list(tensors: Any, what: str) -> List[Any]:
    """TF's flattening: a dict by its sorted keys, a list or tuple as is."""
    if isinstance(tensors, dict):
        return [tensors[k] for k in sorted(tensors, key=str)]
    if isinstance(tensors, (list, tuple)):
        return list(tensors)
    raise TypeError(f"{what}: tensors must be a list, tuple or dict of tensors, got {type(tensors).__name__}")


def _as_original_type(tensors: Any, values: Sequence[Any]) -> Any:
    if isinstance(tensors, dict):
        return {k: v for k, v in zip(sorted(tensors, key=str), values)}
    return list(values)


def _static_int(x: Any) -> Optional[int]:
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int(x)
    return None


def bucket(tensors: Any, which_bucket: Any, batch_size: Any, num_buckets: int, num_threads: int = 1,
           capacity: int = 32, bucket_capacities: Optional[Sequence[int]] = None, shapes: Any = None,
           dynamic_pad: bool = False, allow_smaller_final_batch: bool = False, keep_input: Any = True,
           shared_name: Optional[str] = None, name: Optional[str] = None) -> Tuple[_g.Tensor, Any]:
    """Batches of `tensors` (one example: a list or dict) grouped by `which_bucket` (an int32
    scalar in [0, num_buckets)); returns (the batch's bucket index, the batch shaped like
    `tensors`).  `batch_size` is one size or a list of num_buckets sizes; `capacity` bounds
    the top queue (in batches) and, unless `bucket_capacities` is given, each bucket."""
    if isinstance(num_buckets, bool) or not isinstance(num_buckets, (int, np.integer)) or num_buckets < 1:
        raise ValueError(f"num_buckets must be a positive integer, got {num_buckets!r}")
    num_buckets = int(num_buckets)
    per_bucket = isinstance(batch_size, (list, tuple))
    if per_bucket:
        if len(batch_size) != num_buckets:
            raise ValueError("If batch_size is a list it must have num_buckets elements")
        sizes = list(batch_size)
    else:
        sizes = [batch_size] * num_buckets
    if bucket_capacities is None:
        bucket_capacities = [capacity] * num_buckets
    if len(bucket_capacities) != num_buckets:
        raise ValueError(f"The list bucket_capacities ({list(bucket_capacities)}) must have exactly num_buckets "
                         f"({num_buckets}) elements.")
    for s in sizes:
        if _static_int(s) is not None and s < 1:
            raise ValueError(f"batch_size must be positive, got {s}")
    tensor_list = _as_tensor_list(tensors, "bucket")
    g = _g.get_default_graph()
    with g.name_scope(name or "bucket"):
        tensor_list = [_g.convert_to_tensor(t) for t in tensor_list]
        if not tensor_list:
            raise ValueError("Expected at least one tensor in bucket().")
        keep = _g.convert_to_tensor(keep_input, dtype=_dt.bool_)
        if keep.shape.rank not in (None, 0):
            raise ValueError(f"keep_input must be a bool scalar, got shape {keep.shape}")
        types = [t.dtype for t in tensor_list]
        elem_shapes = _shapes(tensor_list, shapes, False, "bucket", dynamic=dynamic_pad)
        which = _g.convert_to_tensor(which_bucket, dtype=_dt.int32, name="which_bucket")
        if which.shape.rank not in (None, 0):
            raise ValueError(f"which_bucket must be an int32 scalar, got shape {which.shape}")
        kind = PaddingFIFOQueue if dynamic_pad else FIFOQueue
        buckets = [kind(int(bucket_capacities[i]), types, shapes=elem_shapes,
                        shared_name=None if shared_name is None else f"{shared_name}_{i}",
                        name=f"bucket_queue_{i}") for i in range(num_buckets)]
        static = None if (allow_smaller_final_batch or per_bucket) else _static_int(sizes[-1])
        top = PaddingFIFOQueue(capacity, [_dt.int32] + types,
                               shapes=[TensorShape([])] + [as_shape([static]).concatenate(s) for s in buckets[0].shapes],
                               shared_name=shared_name, name="top_queue")
        # TF left an out-of-range index to drop the example silently; here it is an error
        in_range = Assert(_m.logical_and(_m.greater_equal(which, 0), _m.less(which, num_buckets)),
                          ["bucket: which_bucket must be in [0, num_buckets) =", constant(num_buckets),
                           "got", which], name="check_which_bucket")
        with g.control_dependencies([in_range]):
            enqueue = group(*[_enqueue_kept(q, tensor_list, False, _m.logical_and(keep, _m.equal(which, i)))
                              for i, q in enumerate(buckets)], name="group_enqueues")
        take = (lambda q: q.dequeue_up_to) if allow_smaller_final_batch else (lambda q: q.dequeue_many)
        to_top = []
        for i, (q, bs) in enumerate(zip(buckets, sizes)):
            batch = take(q)(bs, name=f"read_bucket_{i}")
            batch = list(batch) if isinstance(batch, (list, tuple)) else [batch]
            to_top.append(top.enqueue([constant(i, _dt.int32)] + batch, name=f"enqueue_from_bucket_{i}"))
        close_buckets = group(*[q.close() for q in buckets], name="close_buckets")
        cancel_buckets = [q.close(cancel_pending_enqueues=True) for q in buckets]
        # input threads fill the buckets; at the input's end the buckets close, their runner
        # threads drain them into the top queue, and the last of those closes it
        add_queue_runner(QueueRunner(buckets[0], [enqueue] * max(1, int(num_threads)), close_op=close_buckets,
                                     cancel_op=group(*cancel_buckets)))
        add_queue_runner(QueueRunner(top, to_top, close_op=top.close(),
                                     cancel_op=group(top.close(cancel_pending_enqueues=True), *cancel_buckets)))
        out = top.dequeue(name="dequeue_top")
        return out[0], _as_original_type(tensors, out[1:])


def bucket_by_sequence_length(input_length: Any, tensors: Any, batch_size: Any, bucket_boundaries: Sequence[int],
                              num_threads: int = 1, capacity: int = 32,
                              bucket_capacities: Optional[Sequence[int]] = None, shapes: Any = None,
                              dynamic_pad: bool = False, allow_smaller_final_batch: bool = False,
                              keep_input: Any = True, shared_name: Optional[str] = None,
                              name: Optional[str] = None) -> Tuple[_g.Tensor, Any]:
    """bucket() by length: bucket i holds lengths in [b[i-1], b[i]) of the boundaries, with one
    bucket below b[0] and one from b[-1] up (len(bucket_boundaries) + 1 in all).  Returns
    (the batch's lengths, the batch shaped like `tensors`)."""
    tensor_list = _as_tensor_list(tensors, "bucket_by_sequence_length")
    if not isinstance(bucket_boundaries, (list, tuple)):
        raise TypeError(f"bucket_boundaries must be a list or tuple, but received: {bucket_boundaries}")
    if not bucket_boundaries:
        raise ValueError("bucket_boundaries must not be empty")
    bad = [b for b in bucket_boundaries if isinstance(b, bool) or not isinstance(b, (int, np.integer))]
    if bad:
        raise TypeError(f"bucket boundaries must be integers, but saw: {bad[0]!r}")
    for s, e in zip(bucket_boundaries[:-1], bucket_boundaries[1:]):
        if s >= e:
            raise ValueError(f"Buckets must contain sequential increasing lengths, but saw: {s} before {e}")
    g = _g.get_default_graph()
    with g.name_scope(name or "bucket_by_sequence_length"):
        length = _g.convert_to_tensor(input_length, dtype=_dt.int32, name="input_length")
        if length.shape.rank not in (None, 0):
            raise ValueError(f"input_length must be an int32 scalar, got shape {length.shape}")
        # the bucket is the number of boundaries at or below the length
        which = _m.reduce_sum(_m.cast(_m.greater_equal(length, constant(list(bucket_boundaries), _dt.int32)),
                                      _dt.int32))
        if shapes is not None:
            shapes = [TensorShape([])] + list(shapes)
        _, dequeued = bucket([length] + tensor_list, which, batch_size, len(bucket_boundaries) + 1,
                             num_threads=num_threads, capacity=capacity, bucket_capacities=bucket_capacities,
                             shapes=shapes, dynamic_pad=dynamic_pad,
                             allow_smaller_final_batch=allow_smaller_final_batch, keep_input=keep_input,
                             shared_name=shared_name)
        return dequeued[0], _as_original_type(tensors, dequeued[1:])

