"""TF1's persistent tensors: tf.get_session_handle, tf.get_session_tensor,
tf.delete_session_tensor and the TensorHandle that Session.run returns for a handle.

Running `get_session_handle(t)` keeps t's value in the session (its ResourceContainer) and
fetches a TensorHandle: its `.handle` string ("op_name;id;device", TF's form) fed to the
placeholder of `get_session_tensor(handle, dtype)` gives the value back in a later run,
without a copy through the user.  The TensorHandle object itself may be fed too: to such a
placeholder, or to any tensor of the graph, which then takes the stored value (TF1's direct
handle feed).
A stored tensor lives until `delete_session_tensor`'s op or `TensorHandle.delete()` removes
it, or until its TensorHandle is garbage-collected: as TF does, dead handles are deleted ten
at a time, so a handle string outlives its object for a while.  Unknown handles are
InvalidArgumentError, as TF's session store reports them.
"""
from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InternalError, InvalidArgumentError
from ..graph import graph as _g
from ..graph.ops.constant_op import placeholder
from ..graph.ops.op_util import make_op, single
from ..graph.registry import not_differentiable, register_op
from ..graph.shape import TensorShape
from ..kernels.registry import KernelContext, register_kernel

__all__ = ["get_session_handle", "get_session_tensor", "delete_session_tensor", "TensorHandle"]

_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"  # stored values live on the host
_DEAD_HANDLES_THRESHOLD = 10  # TF deletes garbage-collected handles in batches of this many
_HANDLE_OPS = ("GetSessionHandle", "GetSessionHandleV2")

register_op("GetSessionHandle", lambda op: [(_dt.string, TensorShape([]))], stateful=True, host_only=True,
            doc="keeps its input in the session; outputs the handle string")
register_op("GetSessionTensor", lambda op: [(_dt.as_dtype(op.attrs["dtype"]), TensorShape(None))],
            stateful=True, host_only=True, doc="the session's tensor for a handle")
register_op("DeleteSessionTensor", lambda op: [], stateful=True, host_only=True,
            doc="removes a handle's tensor from the session")
not_differentiable("GetSessionHandle", "GetSessionTensor", "DeleteSessionTensor")
# the placeholders get_session_tensor / delete_session_tensor made: a TensorHandle fed to one
# is its handle string; fed to any other tensor it is the stored value (TF's direct feed)
_HOLDERS: "weakref.WeakSet[_g.Tensor]" = weakref.WeakSet()


class _Store:
    """One session's persistent tensors, by handle string."""

    def __init__(self) -> None:
        self.tensors: Dict[str, Any] = {}
        self.dead: List[str] = []
        self.ids = itertools.count()
        self.lock = threading.RLock()  # re-entrant: a TensorHandle collected while the lock is held on this thread

    def get(self, handle: str) -> Any:
        try:
            return self.tensors[handle]
        except KeyError:
            raise InvalidArgumentError(f"The tensor with handle '{handle}' is not in the session store.") from None

    def delete(self, handle: str) -> None:
        with self.lock:
            if self.tensors.pop(handle, None) is None:
                raise InvalidArgumentError(f"The tensor with handle '{handle}' is not in the session store.")

    def bury(self, handle: str) -> None:
        """A TensorHandle died: its tensor goes with the next full batch of dead handles."""
        with self.lock:
            self.dead.append(handle)
            if len(self.dead) < _DEAD_HANDLES_THRESHOLD:
                return
            for h in self.dead:
                self.tensors.pop(h, None)
            self.dead = []


def _store(resources: Any) -> _Store:
    return resources.get_or_create("session_tensors", "store", _Store)


def _handle_str(v: Any) -> str:
    v = v.item() if isinstance(v, np.ndarray) else v
    return v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else str(v)


@register_kernel("GetSessionHandle")
def _get_handle_kernel(op: Any, ctx: KernelContext) -> Callable:
    store = _store(ctx.resources)

    def run(x: Any) -> Any:
        with store.lock:
            h = f"{op.name};{next(store.ids)};{_DEVICE}"
            store.tensors[h] = np.array(x, copy=True) if isinstance(x, np.ndarray) else x
        return np.asarray(h, dtype=object)
    return run


@register_kernel("GetSessionTensor")
def _get_tensor_kernel(op: Any, ctx: KernelContext) -> Callable:
    store, want = _store(ctx.resources), _dt.as_dtype(op.attrs["dtype"])

    def run(handle: Any) -> Any:
        h = _handle_str(handle)
        v = store.get(h)
        have = _dt.as_dtype(np.asarray(v).dtype)
        if have != want:
            raise InternalError(f"GetSessionTensor: the tensor with handle '{h}' has dtype {have.name}, but "
                                f"{want.name} was requested", op)
        return v
    return run


@register_kernel("DeleteSessionTensor")
def _delete_tensor_kernel(op: Any, ctx: KernelContext) -> Callable:
    store = _store(ctx.resources)

    def run(handle: Any) -> None:
        store.delete(_handle_str(handle))
    return run


def get_session_handle(data: Any, name: Optional[str] = None) -> _g.Tensor:
    """A string tensor: running it keeps `data`'s value in the session, and Session.run
    returns a TensorHandle for it."""
    if not isinstance(data, _g.Tensor):
        raise TypeError("`data` must be of type Tensor.")
    return single("GetSessionHandle", [data], name=name or "GetSessionHandle")


def get_session_tensor(handle: Any, dtype: Any, name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor]:
    """(a string placeholder to feed a handle into, the stored tensor of `dtype` it names)."""
    del handle  # TF reads the device from it; collflow keeps every stored tensor on the host
    holder = placeholder(_dt.string)
    _HOLDERS.add(holder)
    tensor = single("GetSessionTensor", [holder], {"dtype": _dt.as_dtype(dtype)}, name=name or "GetSessionTensor")
    return holder, tensor


def delete_session_tensor(handle: Any, name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Operation]:
    """(a string placeholder to feed a handle into, the op that deletes its tensor)."""
    del handle
    holder = placeholder(_dt.string)
    _HOLDERS.add(holder)
    return holder, make_op("DeleteSessionTensor", [holder], name=name or "DeleteSessionTensor")


class TensorHandle:
    """A tensor kept in a session between runs (what Session.run returns for a
    get_session_handle tensor).  str(h) and h.handle are the handle string."""

    def __init__(self, handle: Any, dtype: Any, session: Any) -> None:
        self._handle = _handle_str(handle)
        self._dtype = _dt.as_dtype(dtype)
        self._session = session
        self._store = _store(session.resources)
        self._auto_gc_enabled = True

    def __del__(self) -> None:
        if getattr(self, "_auto_gc_enabled", False):
            self._store.bury(self._handle)

    def __str__(self) -> str:
        return self._handle

    @property
    def handle(self) -> str:
        return self._handle

    def to_numpy_array(self) -> np.ndarray:
        """The value to feed for this handle (its string)."""
        return np.asarray(self._handle, dtype=object)

    def _cached(self, key: str, build: Callable[[], Any]) -> Any:
        graph = self._session.graph
        cache = graph.__dict__.setdefault("_cf_handle_ops", {})
        if key not in cache:
            with graph.as_default():
                cache[key] = build()
        return cache[key]

    def eval(self) -> Any:
        """The value of the tensor this handle names."""
        if not self._auto_gc_enabled:
            raise TypeError(f"Persistent tensor {self.handle} may have already been deleted.")
        holder, reader = self._cached(f"read;{self._dtype.name}",
                                      lambda: get_session_tensor(self._handle, self._dtype))
        return self._session.run(reader, feed_dict={holder: self._handle})

    def delete(self) -> None:
        """Deletes the tensor now."""
        if not self._auto_gc_enabled:
            raise TypeError(f"Persistent tensor {self.handle} may have already been deleted.")
        self._auto_gc_enabled = False
        holder, deleter = self._cached("delete", lambda: delete_session_tensor(self._handle))
        self._session.run(deleter, feed_dict={holder: self._handle})

    def get_raw_handle(self) -> str:
        """The handle string; the tensor is then no longer deleted with this object."""
        self._auto_gc_enabled = False
        return self._handle


def handle_fetch(element: Any, session: Any) -> Optional[Callable[[Any], Any]]:
    """For Session.run: the wrapper turning a fetched handle string into a TensorHandle, or
    None when `element` is not a get_session_handle tensor."""
    if session is None or not isinstance(element, _g.Tensor) or element.op.type not in _HANDLE_OPS:
        return None
    dtype = element.op.inputs[0].dtype
    return lambda value: TensorHandle(value, dtype, session)


def feed_value(tensor: _g.Tensor, value: Any) -> Any:
    """For Session.run's feeds: a TensorHandle fed to a handle placeholder is its handle
    string; fed to another tensor, the value it names (TF1 feeds a handle "directly")."""
    if not isinstance(value, TensorHandle):
        return value
    if tensor in _HOLDERS:
        return value.to_numpy_array()
    return value._store.get(value.handle)
