"""TensorFlow 1.x's queue-based input functions: `tf.train.input_producer`,
`string_input_producer`, `range_input_producer`, `slice_input_producer`, `limit_epochs`,
`batch` and `shuffle_batch` (the CIFAR-10 tutorial's pipeline), built from queues
(graph/ops/data_flow_ops.py) and QueueRunners (data/pipeline.py) as TensorFlow builds them.

Each adds its QueueRunner to the QUEUE_RUNNERS collection: start them with
`tf.train.start_queue_runners(sess, coord)` (or MonitoredTrainingSession).  `num_epochs`
counts in a local variable (run tf.local_variables_initializer()); once the producers have
gone through them, their queue closes and the consumer's next dequeue raises
OutOfRangeError after the remaining elements.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph import nest
from ..graph.graph import GraphKeys
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops.constant_op import identity
from ..graph.ops.data_flow_ops import FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue
from ..graph.ops.misc_ops import range as _range
from ..graph.ops.random_ops import random_shuffle
from ..graph.ops.state_ops import count_up_to
from ..graph.variables import Variable
from .pipeline import QueueRunner, add_queue_runner

__all__ = ["limit_epochs", "input_producer", "string_input_producer", "range_input_producer",
           "slice_input_producer", "batch", "shuffle_batch", "batch_join", "shuffle_batch_join", "maybe_batch",
           "maybe_shuffle_batch", "maybe_batch_join", "maybe_shuffle_batch_join"]


def limit_epochs(tensor: Any, num_epochs: Optional[int] = None, name: Optional[str] = None) -> _g.Tensor:
    """`tensor`, which raises OutOfRangeError once it has been evaluated num_epochs times
    (a local int64 counter "epochs"); None: no limit."""
    if num_epochs is None:
        return _g.convert_to_tensor(tensor)
    if int(num_epochs) <= 0:
        raise InvalidArgumentError(f"limit_epochs: num_epochs must be > 0, got {num_epochs}")
    g = _g.get_default_graph()
    with g.name_scope(name or "limit_epochs"):
        with g.control_dependencies(None):
            epochs = Variable(_a.zeros([], _dt.int64), trainable=False, name="epochs",
                              collections=[GraphKeys.LOCAL_VARIABLES])
        counter = count_up_to(epochs, int(num_epochs))
        with g.control_dependencies([counter]):
            return identity(tensor, name="limit_epochs")


def input_producer(input_tensor: Any, element_shape: Any = None, num_epochs: Optional[int] = None,
                   shuffle: bool = True, seed: Optional[int] = None, capacity: int = 32,
                   shared_name: Optional[str] = None, summary_name: Optional[str] = None,
                   name: Optional[str] = None, cancel_op: Any = None) -> FIFOQueue:
    """A FIFOQueue fed with the rows of input_tensor, epoch after epoch (each shuffled when
    `shuffle`), by a QueueRunner; num_epochs limits the epochs (then the queue closes)."""
    g = _g.get_default_graph()
    with g.name_scope(name or "input_producer"):
        x = _g.convert_to_tensor(input_tensor)
        shape = x.shape[1:] if element_shape is None and x.shape.rank is not None else element_shape
        x = limit_epochs(x, num_epochs)
        if shuffle:
            x = random_shuffle(x, seed=seed)
        q = FIFOQueue(capacity, [x.dtype], shapes=None if shape is None else [shape], shared_name=shared_name)
        add_queue_runner(QueueRunner(q, [q.enqueue_many([x])], cancel_op=cancel_op))
    return q


def string_input_producer(string_tensor: Any, num_epochs: Optional[int] = None, shuffle: bool = True,
                          seed: Optional[int] = None, capacity: int = 32, shared_name: Optional[str] = None,
                          name: Optional[str] = None, cancel_op: Any = None) -> FIFOQueue:
    """A queue of the strings (file names) of a 1-D string tensor, epoch after epoch."""
    s = _g.convert_to_tensor(string_tensor, dtype=_dt.string)
    if s.shape.rank not in (None, 1):
        raise InvalidArgumentError(f"string_input_producer needs a 1-D string tensor, got shape {s.shape}")
    return input_producer(s, [], num_epochs, shuffle, seed, capacity, shared_name, None,
                          name or "input_producer", cancel_op)


def range_input_producer(limit: int, num_epochs: Optional[int] = None, shuffle: bool = True,
                         seed: Optional[int] = None, capacity: int = 32, shared_name: Optional[str] = None,
                         name: Optional[str] = None) -> FIFOQueue:
    """A queue of the integers 0 .. limit-1 (int32), epoch after epoch."""
    g = _g.get_default_graph()
    with g.name_scope(name or "input_producer"):
        return input_producer(_range(0, limit), [], num_epochs, shuffle, seed, capacity, shared_name, None, "range")


def slice_input_producer(tensor_list: Sequence[Any], num_epochs: Optional[int] = None, shuffle: bool = True,
                         seed: Optional[int] = None, capacity: int = 32, shared_name: Optional[str] = None,
                         name: Optional[str] = None) -> List[_g.Tensor]:
    """One row of every tensor of tensor_list (they share their first dimension), the rows
    taken epoch after epoch, in a shuffled order when `shuffle`."""
    tensors = [_g.convert_to_tensor(t) for t in tensor_list]
    if not tensors:
        raise InvalidArgumentError("slice_input_producer needs at least one tensor")
    g = _g.get_default_graph()
    with g.name_scope(name or "input_producer"):
        first = tensors[0].shape
        n = first.dims[0] if first.rank is not None and first.dims[0] is not None else _a.shape(tensors[0])[0]
        q = range_input_producer(n, num_epochs, shuffle, seed, capacity, shared_name)
        i = q.dequeue()
        return [_a.gather(t, i) for t in tensors]


def _batch_queue(queue: Any, tensors: Any, batch_size: int, num_threads: int, enqueue_many: bool,
                 allow_smaller_final_batch: bool, sources: Optional[Sequence[Any]] = None,
                 keep_input: Any = None) -> Any:
    """Fills `queue` from `tensors` (num_threads enqueue ops), or from each of `sources` (the
    join variants: one enqueue op per list, its own thread), keeping only the examples
    `keep_input` says (the maybe_ variants); returns the dequeued batch shaped like tensors."""
    flat = [_g.convert_to_tensor(t) for t in nest.flatten(tensors)]
    lists = ([[_g.convert_to_tensor(t) for t in nest.flatten(s)] for s in sources] if sources is not None
             else [flat] * max(1, int(num_threads)))
    enq = [_enqueue_kept(queue, part, enqueue_many, keep_input) for part in lists]
    add_queue_runner(QueueRunner(queue, enq))
    out = queue.dequeue_up_to(batch_size) if allow_smaller_final_batch else queue.dequeue_many(batch_size)
    out = out if isinstance(out, (list, tuple)) else [out]
    if len(flat) == 1 and not isinstance(tensors, dict):
        return out[0]  # TF1: batch([t]) is the batched tensor itself, not a one-element list
    return nest.pack_sequence_as(tensors, list(out))


def _enqueue_kept(queue: Any, part: List[_g.Tensor], enqueue_many: bool, keep_input: Any) -> Any:
    """The enqueue op of one source; with keep_input (a bool scalar, or with enqueue_many a
    bool vector over the batch) only the kept examples go in."""
    if keep_input is None:
        return queue.enqueue_many(part) if enqueue_many else queue.enqueue(part)
    keep = _g.convert_to_tensor(keep_input)
    if keep.dtype != _dt.bool_:
        raise InvalidArgumentError(f"keep_input must be a bool tensor, got {keep.dtype.name}")
    if enqueue_many:
        if keep.shape.rank not in (None, 1):
            raise InvalidArgumentError(f"with enqueue_many, keep_input must be a vector, got shape {keep.shape}")
        idx = _a.reshape(_a.where(keep), [-1])
        return queue.enqueue_many([_a.gather(t, idx) for t in part])
    if keep.shape.rank not in (None, 0):
        raise InvalidArgumentError(f"keep_input must be a scalar, got shape {keep.shape}")
    # one example: enqueued as a batch of one or of none
    n = _m.cast(keep, _dt.int32)
    return queue.enqueue_many([_a.gather(_a.expand_dims(t, 0), _a.zeros(_a.reshape(n, [1]), _dt.int32))
                               for t in part])


def _shapes(tensors: Any, shapes: Any, enqueue_many: bool, what: str, dynamic: bool = False) -> List[Any]:
    """The queue's element shapes: given, or the tensors' (fully defined; with `dynamic`,
    of known rank: the unknown dimensions are padded)."""
    flat = [_g.convert_to_tensor(t) for t in nest.flatten(tensors)]
    if shapes is not None:
        return list(shapes)
    out = []
    for t in flat:
        s = t.shape[1:] if enqueue_many and t.shape.rank is not None else t.shape
        if dynamic and s.rank is None:
            raise InvalidArgumentError(f"{what}: with dynamic_pad every tensor needs a known rank (or pass shapes=); "
                                       f"{t.name} has {s}")
        if not dynamic and not s.is_fully_defined():
            raise InvalidArgumentError(f"{what}: the shape of every tensor must be fully defined (or pass shapes=); "
                                       f"{t.name} has {s}")
        out.append(s)
    return out


def _join_first(tensors: Any, join: bool) -> Any:
    if not join:
        return tensors
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise InvalidArgumentError("the join variants need a non-empty list of tensor lists (tensors_list)")
    return tensors[0]


def _batch_impl(tensors: Any, batch_size: int, num_threads: int, capacity: int, enqueue_many: bool, shapes: Any,
                dynamic_pad: bool, allow_smaller_final_batch: bool, shared_name: Optional[str], name: str,
                join: bool = False, keep_input: Any = None) -> Any:
    first = _join_first(tensors, join)
    flat = [_g.convert_to_tensor(t) for t in nest.flatten(first)]
    g = _g.get_default_graph()
    with g.name_scope(name):
        kind = PaddingFIFOQueue if dynamic_pad else FIFOQueue
        q = kind(capacity, [t.dtype for t in flat],
                 shapes=_shapes(first, shapes, enqueue_many, name, dynamic=dynamic_pad), shared_name=shared_name)
        return _batch_queue(q, first, batch_size, num_threads, enqueue_many, allow_smaller_final_batch,
                            sources=tensors if join else None, keep_input=keep_input)


def _shuffle_impl(tensors: Any, batch_size: int, capacity: int, min_after_dequeue: int, num_threads: int,
                  seed: Optional[int], enqueue_many: bool, shapes: Any, allow_smaller_final_batch: bool,
                  shared_name: Optional[str], name: str, join: bool = False, keep_input: Any = None) -> Any:
    first = _join_first(tensors, join)
    flat = [_g.convert_to_tensor(t) for t in nest.flatten(first)]
    g = _g.get_default_graph()
    with g.name_scope(name):
        q = RandomShuffleQueue(capacity, min_after_dequeue, [t.dtype for t in flat],
                               shapes=_shapes(first, shapes, enqueue_many, name), seed=seed,
                               shared_name=shared_name)
        return _batch_queue(q, first, batch_size, num_threads, enqueue_many, allow_smaller_final_batch,
                            sources=tensors if join else None, keep_input=keep_input)


def batch(tensors: Any, batch_size: int, num_threads: int = 1, capacity: int = 32, enqueue_many: bool = False,
          shapes: Any = None, dynamic_pad: bool = False, allow_smaller_final_batch: bool = False,
          shared_name: Optional[str] = None, name: Optional[str] = None) -> Any:
    """Batches of `tensors` (a list or dict of tensors, one example each, or a batch each with
    enqueue_many) through a FIFOQueue filled by num_threads QueueRunner threads.  dynamic_pad:
    examples may differ in size along their unknown dimensions; each batch pads them with
    zeros to its largest (a PaddingFIFOQueue)."""
    return _batch_impl(tensors, batch_size, num_threads, capacity, enqueue_many, shapes, dynamic_pad,
                       allow_smaller_final_batch, shared_name, name or "batch")


def shuffle_batch(tensors: Any, batch_size: int, capacity: int, min_after_dequeue: int, num_threads: int = 1,
                  seed: Optional[int] = None, enqueue_many: bool = False, shapes: Any = None,
                  allow_smaller_final_batch: bool = False, shared_name: Optional[str] = None,
                  name: Optional[str] = None) -> Any:
    """Batches drawn at random from a RandomShuffleQueue of `capacity` that keeps at least
    min_after_dequeue examples buffered (once the producers stop, what is left)."""
    return _shuffle_impl(tensors, batch_size, capacity, min_after_dequeue, num_threads, seed, enqueue_many, shapes,
                         allow_smaller_final_batch, shared_name, name or "shuffle_batch")


def batch_join(tensors_list: Sequence[Any], batch_size: int, capacity: int = 32, enqueue_many: bool = False,
               shapes: Any = None, dynamic_pad: bool = False, allow_smaller_final_batch: bool = False,
               shared_name: Optional[str] = None, name: Optional[str] = None) -> Any:
    """Batches of examples from several lists of tensors of one structure (one enqueuing
    thread each: e.g. several readers), shaped like tensors_list[0]."""
    return _batch_impl(tensors_list, batch_size, 1, capacity, enqueue_many, shapes, dynamic_pad,
                       allow_smaller_final_batch, shared_name, name or "batch_join", join=True)


def shuffle_batch_join(tensors_list: Sequence[Any], batch_size: int, capacity: int, min_after_dequeue: int,
                       seed: Optional[int] = None, enqueue_many: bool = False, shapes: Any = None,
                       allow_smaller_final_batch: bool = False, shared_name: Optional[str] = None,
                       name: Optional[str] = None) -> Any:
    """shuffle_batch over several lists of tensors of one structure, one thread each."""
    return _shuffle_impl(tensors_list, batch_size, capacity, min_after_dequeue, 1, seed, enqueue_many, shapes,
                         allow_smaller_final_batch, shared_name, name or "shuffle_batch_join", join=True)


def maybe_batch(tensors: Any, keep_input: Any, batch_size: int, num_threads: int = 1, capacity: int = 32,
                enqueue_many: bool = False, shapes: Any = None, dynamic_pad: bool = False,
                allow_smaller_final_batch: bool = False, shared_name: Optional[str] = None,
                name: Optional[str] = None) -> Any:
    """batch() of the examples for which keep_input is true (a bool scalar; with
    enqueue_many a bool vector over the batch)."""
    return _batch_impl(tensors, batch_size, num_threads, capacity, enqueue_many, shapes, dynamic_pad,
                       allow_smaller_final_batch, shared_name, name or "batch", keep_input=keep_input)


def maybe_shuffle_batch(tensors: Any, batch_size: int, capacity: int, min_after_dequeue: int, keep_input: Any,
                        num_threads: int = 1, seed: Optional[int] = None, enqueue_many: bool = False,
                        shapes: Any = None, allow_smaller_final_batch: bool = False,
                        shared_name: Optional[str] = None, name: Optional[str] = None) -> Any:
    """shuffle_batch() of the examples for which keep_input is true."""
    return _shuffle_impl(tensors, batch_size, capacity, min_after_dequeue, num_threads, seed, enqueue_many, shapes,
                         allow_smaller_final_batch, shared_name, name or "shuffle_batch", keep_input=keep_input)


def maybe_batch_join(tensors_list: Sequence[Any], keep_input: Any, batch_size: int, capacity: int = 32,
                     enqueue_many: bool = False, shapes: Any = None, dynamic_pad: bool = False,
                     allow_smaller_final_batch: bool = False, shared_name: Optional[str] = None,
                     name: Optional[str] = None) -> Any:
    """batch_join() of the kept examples."""
    return _batch_impl(tensors_list, batch_size, 1, capacity, enqueue_many, shapes, dynamic_pad,
                       allow_smaller_final_batch, shared_name, name or "batch_join", join=True, keep_input=keep_input)


def maybe_shuffle_batch_join(tensors_list: Sequence[Any], batch_size: int, capacity: int, min_after_dequeue: int,
                             keep_input: Any, seed: Optional[int] = None, enqueue_many: bool = False,
                             shapes: Any = None, allow_smaller_final_batch: bool = False,
                             shared_name: Optional[str] = None, name: Optional[str] = None) -> Any:
    """shuffle_batch_join() of the kept examples."""
    return _shuffle_impl(tensors_list, batch_size, capacity, min_after_dequeue, 1, seed, enqueue_many, shapes,
                         allow_smaller_final_batch, shared_name, name or "shuffle_batch_join", join=True,
                         keep_input=keep_input)
