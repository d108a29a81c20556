"""TF1's rules for Session feeds and fetches that are not plan building: how a fed value is
converted and checked, how bad feed keys and fetches are reported, `make_callable`, and
`list_devices`.

A fed value becomes `np.asarray(value, dtype=<the tensor's dtype>)`, as TF1's Session.run does:
NumPy's casting, lossy or not (float to int truncates, int32 300 to uint8 wraps to 44, complex
to real keeps the real part), except that a Python int that does not fit the dtype is a
TypeError.  Then a shape the tensor's static shape does not admit is a ValueError ("Cannot feed
value of shape ... for Tensor ..."), and so is feeding a tensor marked by
Graph.prevent_feeding; all before anything runs.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from .. import dtypes as _dt
from ..errors import CancelledError, InvalidArgumentError
from ..graph.graph import Graph, Tensor
from ..graph.ops.dtype_rules import asarray_strict
from ..kernels.device import available_devices

__all__ = ["check_feed", "feed_key_error", "fetch_element_error", "make_callable", "list_devices",
           "DeviceAttributes"]


def _shape_str(shape: Any) -> str:
    dims = getattr(shape, "dims", None)
    if dims is None:
        return "<unknown>"
    ds = ["None" if d is None else str(int(d)) for d in (getattr(d, "value", d) for d in dims)]
    return "(" + ", ".join(ds) + ("," if len(ds) == 1 else "") + ")"


def check_feed(t: Tensor, value: Any) -> Any:
    """A fed value converted to the tensor's dtype and checked against its shape and
    feedability (TF1's rules, the module docstring says which)."""
    if isinstance(value, Tensor) or type(value).__name__ in ("SparseTensor", "Variable", "RefVariable"):
        raise TypeError("The value of a feed cannot be a tf.Tensor object. Acceptable feed values include "
                        f"Python scalars, strings, lists, numpy ndarrays. Got {value!r} for {t.name}")
    want = t.dtype.np
    if type(value) is np.ndarray and value.dtype == want:
        arr = value  # the common case: nothing to convert
    elif type(value).__module__.startswith("cupy"):
        arr = value  # already on the device: the kernels take it as is
    elif t.dtype.name == "string":
        arr = _dt.string_array(value)
    else:
        if isinstance(value, int) and not isinstance(value, bool) and np.dtype(want).kind in "iu":
            info = np.iinfo(want)
            if not info.min <= value <= info.max:
                raise TypeError(f"Type of feed value {value} with type {type(value)} is not compatible with "
                                f"Tensor type {np.dtype(want)}. Try explicitly setting the type of the feed "
                                "tensor to a larger type (e.g. int64).")
        if np.dtype(want).kind != "c" and np.iscomplexobj(value):
            value = np.real(value)  # what NumPy's cast (TF1's) keeps, without its ComplexWarning
        # nan/inf cast to an integer type: NumPy's (platform) value, as TF1 gives, unwarned
        with np.errstate(invalid="ignore", over="ignore"):
            try:
                arr = asarray_strict(value, want)
            except OverflowError:
                # Python ints out of the dtype's range inside a list: wrapped, as NumPy 1.x's
                # cast (TF1's) gives them ([1, -1] fed to uint8 is [1, 255])
                arr = np.asarray(value).astype(want)
    if not t.shape.matches_value(tuple(arr.shape)):
        raise ValueError(f"Cannot feed value of shape {tuple(arr.shape)} for Tensor {t.name}, "
                         f"which has shape {_shape_str(t.shape)}{_site(t)}")
    if not t.graph.is_feedable(t):
        raise ValueError(f"Tensor {t.name} may not be fed.{_site(t)}")
    return arr


def _site(t: Tensor) -> str:
    """Where the tensor's op was built (TF1's ValueError, with collflow's usual pointer)."""
    return f"\n  [op {t.op.name!r} of type {t.op.type}, created at {t.op.creation_site()}]"


def feed_key_error(e: BaseException) -> TypeError:
    """TF1 reports a feed_dict key it cannot resolve to a tensor of the graph as a TypeError."""
    msg = e.args[0] if e.args else str(e)
    return TypeError(f"Cannot interpret feed_dict key as Tensor: {msg}")


def fetch_element_error(f: Any, e: BaseException) -> Exception:
    """TF1's error for a fetch the graph cannot resolve: TypeError for a wrong type, ValueError
    for a name or element not in the session's graph (also when collflow says NotFound)."""
    msg = e.args[0] if e.args else str(e)
    if isinstance(e, TypeError):
        return TypeError(f"Fetch argument {f!r} has invalid type {type(f).__name__}; must be a string or Tensor "
                         f"(or Operation, Variable, SparseTensor, or a list/tuple/dict of them). ({msg})")
    return ValueError(f"Fetch argument {f!r} cannot be interpreted as a Tensor. ({msg})")


# -- make_callable -------------------------------------------------------------------------------


def make_callable(sess: Any, fetches: Any, feed_list: Optional[Sequence[Any]], accept_options: bool,
                  fetch_map: Any = None) -> Callable[..., Any]:
    """TF1's Session.make_callable.

    With a feed_list the callable is `run(fetches, dict(zip(feed_list, args)), **kwargs)`:
    missing arguments leave their feeds unfed, extra ones are ignored, options and
    run_metadata are accepted.  Without one it takes no arguments (options and run_metadata
    too when accept_options), and a closed session is a CancelledError when it is called.
    Plain tensor feeds skip the per-call lookups of run().
    """
    if feed_list is not None:
        if not isinstance(feed_list, (list, tuple)):
            raise TypeError(f"Argument `feed_list` must be a list or tuple. Received: feed_list={feed_list!r}")
        return _feed_list_callable(sess, fetches, list(feed_list))
    fm = fetch_map if fetch_map is not None else sess._fetches(fetches)
    plan: Any = None
    failed: Optional[BaseException] = None
    if not fm.elements:
        failed = InvalidArgumentError("Must specify at least one target to fetch or execute.")
    elif not sess._closed:  # (a closed session's callable raises when called)
        try:
            plan, _ = sess._get_plan(fm.elements, [])
        except Exception as e:  # noqa: BLE001 - e.g. an unfed placeholder: TF1 reports it per call
            failed = e

    def fast() -> Any:
        if sess._closed:
            raise CancelledError("Session has been closed.")
        if failed is not None:
            if isinstance(failed, InvalidArgumentError) and not fm.elements:
                raise failed
            return sess.run(fetches)  # raises the error of this run, as TF1 does per call
        return sess._run_plan(plan, fm, [])

    if not accept_options:
        return fast

    def with_options(options: Any = None, run_metadata: Any = None) -> Any:
        if sess._closed:
            raise CancelledError("Session has been closed.")
        if not fm.elements:
            raise InvalidArgumentError("Must specify at least one target to fetch or execute.")
        if options is None and run_metadata is None and failed is None:
            return sess._run_plan(plan, fm, [])
        return sess.run(fetches, options=options, run_metadata=run_metadata)
    return with_options


def _feed_list_callable(sess: Any, fetches: Any, feed_list: List[Any]) -> Callable[..., Any]:
    g: Graph = sess.graph
    feeds: Optional[List[Tensor]] = []
    plan = fm = None
    try:
        for f in feed_list:
            el = g.as_graph_element(f, allow_tensor=True, allow_operation=False)
            if not isinstance(el, Tensor) or el.dtype == _dt.resource:
                raise TypeError
            feeds.append(el)  # type: ignore[union-attr]
        if len(set(feeds)) != len(feeds) or sess._closed:  # type: ignore[arg-type]
            raise TypeError
        fm = sess._fetches(fetches)
        if not fm.elements:
            raise TypeError
        plan, _ = sess._get_plan(fm.elements, feeds)
    except Exception:
        feeds = None  # composite or unresolvable keys: run() interprets (and reports) them per call

    def call(*args: Any, **kw: Any) -> Any:
        if feeds is None or kw or len(args) < len(feeds) or sess._closed:
            return sess.run(fetches, feed_dict=dict(zip(feed_list, args)), **kw)
        return sess._run_plan(plan, fm, [check_feed(t, a) for t, a in zip(feeds, args)], feeds)
    return call


# -- list_devices --------------------------------------------------------------------------------


class DeviceAttributes:
    """One device of Session.list_devices(): name, device_type, memory_limit_bytes, incarnation."""

    __slots__ = ("name", "device_type", "memory_limit_bytes", "incarnation")

    def __init__(self, name: str, device_type: str, memory_limit_bytes: int, incarnation: int):
        self.name, self.device_type = name, device_type
        self.memory_limit_bytes, self.incarnation = memory_limit_bytes, incarnation

    def __repr__(self) -> str:
        return (f"_DeviceAttributes({self.name}, {self.device_type}, {self.memory_limit_bytes}, "
                f"{self.incarnation})")


def list_devices(sess: Any) -> List[DeviceAttributes]:
    """The devices this process can run on, named as TF1 names them
    ("/job:localhost/replica:0/task:0/device:CPU:0")."""
    if sess._closed:
        raise RuntimeError("Attempted to use a closed Session.")
    out = []
    counts: dict = {}
    for i, d in enumerate(available_devices()):
        kind = str(getattr(d, "device_type", "CPU")).upper()
        idx = counts.get(kind, 0)
        counts[kind] = idx + 1
        mem = int(getattr(d, "memory_limit_bytes", 0) or (268435456 if kind == "CPU" else 0))
        out.append(DeviceAttributes(f"/job:localhost/replica:0/task:0/device:{kind}:{idx}", kind, mem, i + 1))
    return out
