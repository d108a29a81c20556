"""Queues (TensorFlow 1.x `tf.FIFOQueue`): bounded, blocking, multi-component.

A queue is a resource in the Session's container, reached through the output of its
FIFOQueue op (as a variable is reached through VarHandle).  Every method returns graph
ops; nothing happens until they run.  Blocking is back-pressure: an enqueue waits while
the queue is full, a dequeue while it is empty; neither waits forever (closing the queue
or the session, cancelling the run, or the session's `operation_timeout_in_ms` wakes it).
The kernels and the queue's state live in collflow/kernels/queue_kernels.py.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_op, not_differentiable
from ..shape import TensorShape, as_shape
from .op_util import make_op

__all__ = ["FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue", "QueueBase"]

_QUEUE_TYPES = ("FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue", "PriorityQueue")


# -- shape functions -----------------------------------------------------------------------


def queue_op(handle: _g.Tensor) -> _g.Operation:
    """The FIFOQueue op behind a queue handle (seen through cond/while_loop's forwarding ops)."""
    t = handle
    for _ in range(64):
        if t.dtype != _dt.resource:
            break
        if t.op.type in _QUEUE_TYPES:
            return t.op
        if not t.op.inputs:
            break
        # Switch / Enter / Identity forward their first input's value unchanged
        t = t.op.inputs[0]
    raise ValueError(f"{handle.name} is not a queue handle (the output of a FIFOQueue op)")


def queue_attrs(handle: _g.Tensor) -> Dict[str, Any]:
    """The attributes (component_types, shapes, capacity, shared_name) of a queue handle."""
    return queue_op(handle).attrs


def _queue_label(handle: _g.Tensor) -> str:
    return f"queue {queue_attrs(handle)['shared_name']!r}"


def _enqueue_spec(op: _g.Operation, many: bool) -> list:
    a = queue_attrs(op.inputs[0])
    dts, shapes = a["component_types"], a["shapes"]
    comps = op.inputs[1:]
    if len(comps) != len(dts):
        raise ValueError(f"{_queue_label(op.inputs[0])} has {len(dts)} components, {len(comps)} were given")
    batch: Optional[int] = None
    for i, (t, dt) in enumerate(zip(comps, dts)):
        if t.dtype != dt:
            raise ValueError(f"component {i} of {_queue_label(op.inputs[0])} has dtype {dt.name}; "
                             f"{t.name} has dtype {t.dtype.name}")
        elem = t.shape
        if many:
            if elem.rank == 0:
                raise ValueError(f"enqueue_many needs a batch (rank >= 1) for component {i}; {t.name} is a scalar")
            if elem.rank is not None:
                n = elem.dims[0]
                if n is not None and batch is not None and n != batch:
                    raise ValueError(f"enqueue_many: components have different batch sizes ({batch} and {n})")
                batch = n if n is not None else batch
                elem = TensorShape(elem.dims[1:])
        if shapes is not None and not shapes[i].is_compatible_with(elem):
            what = "elements of shape" if many else "shape"
            raise ValueError(f"component {i} of {_queue_label(op.inputs[0])} has shape {shapes[i]}; "
                             f"{t.name} has {what} {elem}")
    return []


def _dequeue_spec(op: _g.Operation, many: bool) -> list:
    a = queue_attrs(op.inputs[0])
    shapes = a["shapes"]
    lead: list = []
    if many:
        # n is an attribute when a Python int (static batch size), else an int scalar input
        n = op.attrs.get("n")
        if n is None:
            n_t = op.inputs[1]
            if not n_t.dtype.is_integer or n_t.shape.rank not in (None, 0):
                raise ValueError(f"n must be an integer scalar, got {n_t.dtype.name} of shape {n_t.shape}")
        # dequeue_up_to may return fewer: its batch dimension is never static
        lead = [n if op.type == "QueueDequeueMany" else None]
    out = []
    for i, dt in enumerate(a["component_types"]):
        if shapes is None or shapes[i].dims is None:
            shp = TensorShape(None)
        else:
            shp = shapes[i] if not many else TensorShape(lead + list(shapes[i].dims))
        out.append((dt, shp))
    return out


def _scalar_spec(op: _g.Operation, dtype: Optional[_dt.DType]) -> list:
    queue_attrs(op.inputs[0])  # validates the handle
    return [] if dtype is None else [(dtype, TensorShape(()))]


def _queue_spec(op: _g.Operation) -> list:
    return [(_dt.resource, TensorShape(()))]


register_op("FIFOQueue", _queue_spec, stateful=True, host_only=True, doc="a bounded FIFO queue resource")
register_op("PaddingFIFOQueue", _queue_spec, stateful=True, host_only=True,
            doc="a FIFO queue whose dequeue_many pads elements of varying shape")
register_op("RandomShuffleQueue", _queue_spec, stateful=True, host_only=True,
            doc="a bounded queue dequeuing in random order")
register_op("QueueEnqueue", lambda op: _enqueue_spec(op, False), stateful=True, host_only=True)
register_op("QueueEnqueueMany", lambda op: _enqueue_spec(op, True), stateful=True, host_only=True)
register_op("QueueDequeue", lambda op: _dequeue_spec(op, False), stateful=True, host_only=True)
register_op("QueueDequeueMany", lambda op: _dequeue_spec(op, True), stateful=True, host_only=True)
register_op("QueueDequeueUpTo", lambda op: _dequeue_spec(op, True), stateful=True, host_only=True)
register_op("QueueClose", lambda op: _scalar_spec(op, None), stateful=True, host_only=True)
register_op("QueueSize", lambda op: _scalar_spec(op, _dt.int32), stateful=True, host_only=True)
register_op("QueueIsClosed", lambda op: _scalar_spec(op, _dt.bool_), stateful=True, host_only=True)
not_differentiable("FIFOQueue", "RandomShuffleQueue", "QueueEnqueue", "QueueEnqueueMany", "QueueDequeue", "QueueDequeueMany",
                   "QueueDequeueUpTo", "QueueClose", "QueueSize", "QueueIsClosed")


# -- the Python classes ---------------------------------------------------------------------


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _make_queue(op_type: str, base: str, capacity: int, dtypes: Any, shapes: Any, names: Any,
                shared_name: Optional[str], extra: Dict[str, Any]) -> Tuple[list, Optional[list], Optional[list], Any]:
    """Validates a queue's arguments and creates its op: (dtypes, shapes, names, op)."""
    dts = [_dt.as_dtype(d) for d in _as_list(dtypes)]
    if not dts:
        raise InvalidArgumentError(f"{op_type} needs at least one component dtype")
    if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity <= 0:
        raise InvalidArgumentError(f"{op_type} capacity must be a positive integer, got {capacity!r}")
    shps: Optional[List[TensorShape]] = None
    if shapes is not None:
        # a single shape for a one-component queue may be given bare: shapes=(3,)
        if len(dts) == 1 and (isinstance(shapes, TensorShape) or
                              (isinstance(shapes, (list, tuple)) and
                               all(d is None or isinstance(d, (int, np.integer)) for d in shapes))):
            shapes = [shapes]
        shps = [as_shape(s) for s in shapes]
        if len(shps) != len(dts):
            raise InvalidArgumentError(f"{op_type}: {len(dts)} dtypes but {len(shps)} shapes were given")
    nms: Optional[List[str]] = None
    if names is not None:
        nms = [str(n) for n in _as_list(names)]
        if len(nms) != len(dts):
            raise InvalidArgumentError(f"{op_type}: {len(dts)} dtypes but {len(nms)} names were given")
        if len(set(nms)) != len(nms):
            raise InvalidArgumentError(f"{op_type}: names must be unique, got {nms}")
    g = _g.get_default_graph()
    with g.as_default(), g.control_dependencies(None):
        uname = g.unique_name(base, mark_as_used=False)
        op = g.create_op(op_type, [], dict({
            "component_types": tuple(dts), "shapes": None if shps is None else tuple(shps),
            "capacity": int(capacity), "shared_name": shared_name or uname}, **extra), name=base)
    return dts, shps, nms, op


class QueueBase:
    """What every queue offers: enqueue/dequeue (one or many), close, size, is_closed.

    Values are one Tensor per component: a single value when the queue has one component,
    a list/tuple otherwise, or a dict keyed by `names` when the queue has names.
    """

    def __init__(self, dtypes: List[_dt.DType], shapes: Optional[List[TensorShape]],
                 names: Optional[List[str]], queue_ref: _g.Tensor):
        self._dtypes = dtypes
        self._shapes = shapes
        self._names = names
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name
        self._base = self._name.rsplit("/", 1)[-1]

    @property
    def queue_ref(self) -> _g.Tensor:
        return self._queue_ref

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtypes(self) -> List[_dt.DType]:
        return list(self._dtypes)

    @property
    def shapes(self) -> List[TensorShape]:
        if self._shapes is None:
            return [TensorShape(None)] * len(self._dtypes)
        return list(self._shapes)

    @property
    def names(self) -> Optional[List[str]]:
        return None if self._names is None else list(self._names)

    @property
    def graph(self) -> _g.Graph:
        return self._queue_ref.graph

    # -- helpers --------------------------------------------------------------------------
    def _components(self, vals: Any, what: str) -> List[_g.Tensor]:
        """Orders `vals` by component and converts each to a Tensor of the queue's dtype."""
        if self._names is not None:
            if not isinstance(vals, dict):
                raise InvalidArgumentError(
                    f"{what} on queue {self._name!r}: the queue has names {self._names}, so pass a dict; "
                    f"got {type(vals).__name__}")
            missing = [n for n in self._names if n not in vals]
            extra = [k for k in vals if k not in self._names]
            if missing or extra:
                raise InvalidArgumentError(
                    f"{what} on queue {self._name!r}: expected keys {self._names}, "
                    f"got {sorted(map(str, vals))} (missing {missing}, unexpected {extra})")
            vals = [vals[n] for n in self._names]
        elif isinstance(vals, dict):
            raise InvalidArgumentError(f"{what} on queue {self._name!r}: the queue has no names; pass a list")
        else:
            # as TensorFlow: a list/tuple lists the components; anything else is the only one
            vals = _as_list(vals)
        if len(vals) != len(self._dtypes):
            raise InvalidArgumentError(
                f"{what} on queue {self._name!r}: the queue has {len(self._dtypes)} components "
                f"({', '.join(d.name for d in self._dtypes)}), {len(vals)} values were given")
        out = []
        g = self.graph
        for i, (v, dt) in enumerate(zip(vals, self._dtypes)):
            if isinstance(v, _g.Tensor):
                t = v
            elif hasattr(v, "_as_graph_element"):  # a Variable: read its value
                t = _g.convert_to_tensor(v, graph=g)
            else:
                try:
                    t = _g.convert_to_tensor(v, dtype=dt, graph=g)
                except (InvalidArgumentError, TypeError, ValueError) as e:
                    raise InvalidArgumentError(
                        f"{what} on queue {self._name!r}: component {i} must be {dt.name}; {e}") from None
            if t.dtype != dt:
                raise InvalidArgumentError(
                    f"{what} on queue {self._name!r}: component {i} must have dtype {dt.name}, "
                    f"got {t.name} of dtype {t.dtype.name}")
            out.append(t)
        return out

    def _result(self, op: _g.Operation) -> Any:
        outs = op.outputs
        if self._names is not None:
            return dict(zip(self._names, outs))
        if len(outs) == 1:
            return outs[0]
        return list(outs)

    def _n(self, n: Any) -> Tuple[List[_g.Tensor], Dict[str, Any]]:
        """(inputs, attrs) for the batch size: an attribute if static, else a scalar input."""
        if isinstance(n, (int, np.integer)) and not isinstance(n, bool):
            if n < 0:
                raise InvalidArgumentError(f"n must be >= 0, got {n}")
            return [], {"n": int(n)}
        if isinstance(n, _g.Tensor):
            return [n], {}
        raise TypeError(f"n must be a Python int or an integer scalar Tensor, got {type(n).__name__}")

    def _op(self, op_type: str, inputs: Sequence[Any], attrs: Optional[dict], name: Optional[str],
            default: str) -> _g.Operation:
        with self.graph.as_default():
            return make_op(op_type, [self._queue_ref] + list(inputs), attrs,
                           name=name or f"{self._base}_{default}")

    # -- the API ----------------------------------------------------------------------------
    def enqueue(self, vals: Any, name: Optional[str] = None) -> _g.Operation:
        """An op adding one element (one value per component); blocks while the queue is full."""
        with self.graph.as_default():
            comps = self._components(vals, "enqueue")
        return self._op("QueueEnqueue", comps, None, name, "enqueue")

    def enqueue_many(self, vals: Any, name: Optional[str] = None) -> _g.Operation:
        """An op adding a batch: dimension 0 of every component indexes the elements."""
        with self.graph.as_default():
            comps = self._components(vals, "enqueue_many")
        return self._op("QueueEnqueueMany", comps, None, name, "EnqueueMany")

    def dequeue(self, name: Optional[str] = None) -> Any:
        """Removes one element; blocks while empty; OutOfRangeError once closed and empty."""
        return self._result(self._op("QueueDequeue", [], None, name, "Dequeue"))

    def dequeue_many(self, n: Any, name: Optional[str] = None) -> Any:
        """Removes `n` elements, stacked along a new dimension 0; waits until `n` are there.

        After close, OutOfRangeError unless `n` elements remain (they stay in the queue).
        """
        return self._result(self._op("QueueDequeueMany", *self._n(n), name, "DequeueMany"))

    def dequeue_up_to(self, n: Any, name: Optional[str] = None) -> Any:
        """As dequeue_many, but once the queue is closed returns the last, smaller batch."""
        return self._result(self._op("QueueDequeueUpTo", *self._n(n), name, "DequeueUpTo"))

    def close(self, cancel_pending_enqueues: bool = False, name: Optional[str] = None) -> _g.Operation:
        """An op closing the queue: later enqueues fail (CancelledError), dequeues drain it.

        With `cancel_pending_enqueues`, enqueues blocked on a full queue fail too.
        """
        return self._op("QueueClose", [], {"cancel_pending_enqueues": bool(cancel_pending_enqueues)},
                        name, "Close")

    def size(self, name: Optional[str] = None) -> _g.Tensor:
        """The number of elements in the queue (int32 scalar)."""
        return self._op("QueueSize", [], None, name, "Size").outputs[0]

    def is_closed(self, name: Optional[str] = None) -> _g.Tensor:
        """True once the queue is closed (bool scalar)."""
        return self._op("QueueIsClosed", [], None, name, "IsClosed").outputs[0]

    def __repr__(self) -> str:
        return (f"<cf.{type(self).__name__} {self._name!r} dtypes=[{', '.join(d.name for d in self._dtypes)}] "
                f"shapes={self._shapes}>")


class FIFOQueue(QueueBase):
    """A bounded first-in first-out queue of tuples of tensors (TensorFlow 1.x `tf.FIFOQueue`).

    capacity: the most elements it holds; an enqueue waits for room (back-pressure).
    dtypes:   one DType per component (or a single DType).
    shapes:   optional static shape per element component, checked on enqueue; needed for
              a dequeue_many of statically known shape.
    names:    optional component names; enqueue then takes, and dequeue returns, a dict.
    shared_name: queues with the same shared_name in one Session are the same queue
              (default: the op's unique name, so each FIFOQueue object is its own queue).
    """

    def __init__(self, capacity: int, dtypes: Any, shapes: Any = None, names: Optional[Sequence[str]] = None,
                 shared_name: Optional[str] = None, name: Optional[str] = None):
        dts, shps, nms, op = _make_queue("FIFOQueue", name or "fifo_queue", capacity, dtypes, shapes, names,
                                         shared_name, {})
        super().__init__(dts, shps, nms, op.outputs[0])
        self._capacity = int(capacity)

    @property
    def capacity(self) -> int:
        return self._capacity


class PaddingFIFOQueue(QueueBase):
    """A FIFOQueue whose elements may vary in size along the dimensions that `shapes` leaves
    None (TensorFlow 1.x `tf.PaddingFIFOQueue`): dequeue_many and dequeue_up_to pad each
    such dimension with zeros ("" for strings) to the largest element of the batch.  Every
    component needs a shape of known rank."""

    def __init__(self, capacity: int, dtypes: Any, shapes: Any = None, names: Optional[Sequence[str]] = None,
                 shared_name: Optional[str] = None, name: Optional[str] = None):
        if shapes is None:
            raise InvalidArgumentError("PaddingFIFOQueue needs shapes (None in a dimension: that size may vary)")
        dts, shps, nms, op = _make_queue("PaddingFIFOQueue", name or "padding_fifo_queue", capacity, dtypes, shapes,
                                         names, shared_name, {})
        for i, s in enumerate(shps or []):
            if s.rank is None:
                raise InvalidArgumentError(f"PaddingFIFOQueue: component {i} needs a shape of known rank, got {s}")
        super().__init__(dts, shps, nms, op.outputs[0])
        self._capacity = int(capacity)

    @property
    def capacity(self) -> int:
        return self._capacity


class RandomShuffleQueue(QueueBase):
    """A bounded queue that dequeues its elements in random order (TensorFlow 1.x
    `tf.RandomShuffleQueue`): a dequeue waits until `min_after_dequeue` elements would remain
    (so the order mixes), unless the queue is closed; then it takes what is left.  `seed`
    (with the graph seed) fixes the order, as TensorFlow's seed rules say."""

    def __init__(self, capacity: int, min_after_dequeue: int, dtypes: Any, shapes: Any = None,
                 names: Optional[Sequence[str]] = None, seed: Optional[int] = None, shared_name: Optional[str] = None,
                 name: Optional[str] = None):
        if isinstance(min_after_dequeue, bool) or int(min_after_dequeue) < 0:
            raise InvalidArgumentError(f"RandomShuffleQueue: min_after_dequeue must be >= 0, got {min_after_dequeue!r}")
        if int(min_after_dequeue) >= int(capacity):
            raise InvalidArgumentError(f"RandomShuffleQueue: min_after_dequeue ({min_after_dequeue}) must be smaller "
                                       f"than capacity ({capacity})")
        from .random_ops import get_seed
        s1, s2 = get_seed(seed)
        dts, shps, nms, op = _make_queue("RandomShuffleQueue", name or "random_shuffle_queue", capacity, dtypes,
                                         shapes, names, shared_name,
                                         {"min_after_dequeue": int(min_after_dequeue), "seed": s1, "seed2": s2})
        super().__init__(dts, shps, nms, op.outputs[0])
        self._capacity = int(capacity)
        self._min_after_dequeue = int(min_after_dequeue)

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def min_after_dequeue(self) -> int:
        return self._min_after_dequeue

