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
from ..graph.ops.constant_op import identity
from ..graph.ops.data_flow_ops import FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue
from ..graph.ops.misc_ops import range as _range
from ..graph.ops.random_ops import random_shuffle
from ..graph.ops.state_ops import count_up_to
from ..graph.variables import Variable
from .pipeline import QueueRunner, add_queue_runner

__all__ = ["limit_epochs", "input_producer", "string_input_producer", "range_input_producer",
           "slice_input_producer", "batch", "shuffle_batch"]


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
                 allow_smaller_final_batch: bool) -> Any:
    flat = [_g.convert_to_tensor(t) for t in nest.flatten(tensors)]
    enq = [queue.enqueue_many(flat) if enqueue_many else queue.enqueue(flat) for _ in range(max(1, int(num_threads)))]
    add_queue_runner(QueueRunner(queue, enq))
    out = queue.dequeue_up_to(batch_size) if allow_smaller_final_batch else queue.dequeue_many(batch_size)
    out = out if isinstance(out, (list, tuple)) else [out]
    if len(flat) == 1 and not isinstance(tensors, dict):
        return out[0]  # TF1: batch([t]) is the batched tensor itself, not a one-element list
    return nest.pack_sequence_as(tensors, list(out))


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


def batch(tensors: Any, batch_size: int, num_threads: int = 1, capacity: int = 32, enqueue_many: bool = False,
          shapes: Any = None, dynamic_pad: bool = False, allow_smaller_final_batch: bool = False,
          shared_name: Optional[str] = None, name: Optional[str] = None) -> Any:
    """Batches of `tensors` (a list or dict of tensors, one example each, or a batch each with
    enqueue_many) through a FIFOQueue filled by num_threads QueueRunner threads.  dynamic_pad:
    examples may differ in size along their unknown dimensions; each batch pads them with
    zeros to its largest (a PaddingFIFOQueue)."""
    flat = [_g.convert_to_tensor(t) for t in nest.flatten(tensors)]
    g = _g.get_default_graph()
    with g.name_scope(name or "batch"):
        kind = PaddingFIFOQueue if dynamic_pad else FIFOQueue
        q = kind(capacity, [t.dtype for t in flat],
                 shapes=_shapes(tensors, shapes, enqueue_many, "batch", dynamic=dynamic_pad), shared_name=shared_name)
        return _batch_queue(q, tensors, batch_size, num_threads, enqueue_many, allow_smaller_final_batch)


def shuffle_batch(tensors: Any, batch_size: int, capacity: int, min_after_dequeue: int, num_threads: int = 1,
                  seed: Optional[int] = None, enqueue_many: bool = False, shapes: Any = None,
                  allow_smaller_final_batch: bool = False, shared_name: Optional[str] = None,
                  name: Optional[str] = None) -> Any:
    """Batches drawn at random from a RandomShuffleQueue of `capacity` that keeps at least
    min_after_dequeue examples buffered (once the producers stop, what is left)."""
    flat = [_g.convert_to_tensor(t) for t in nest.flatten(tensors)]
    g = _g.get_default_graph()
    with g.name_scope(name or "shuffle_batch"):
        q = RandomShuffleQueue(capacity, min_after_dequeue, [t.dtype for t in flat],
                               shapes=_shapes(tensors, shapes, enqueue_many, "shuffle_batch"), seed=seed,
                               shared_name=shared_name)
        return _batch_queue(q, tensors, batch_size, num_threads, enqueue_many, allow_smaller_final_batch)
