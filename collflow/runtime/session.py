"""Session: owns the resource container and the plan cache, and runs fetches.

`run(fetches, feed_dict)` takes any nesting of lists, tuples, dicts (and namedtuples) of
Tensors, Operations, Variables or their names, and returns the same structure with NumPy
arrays (None for an Operation).  Any tensor may be fed but those TF1 marks (Graph.prevent_feeding,
ones built inside a cond branch or while loop); fed values are converted and checked by TF1's
rules (session_feeds.py).  Plans are compiled once per (fetches, feeds) signature and cached.
"""
from __future__ import annotations

import os
import collections
import collections.abc
import contextlib
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph.graph import Graph, GraphKeys, Operation, Tensor, get_default_graph
from ..graph.sparse_tensor import SparseTensor, SparseTensorValue
from ..kernels.device import get_device, available_devices
from ..kernels.registry import run_token_scope
from . import tracing
from .config import configure_device, configure_process, session_options
from ..kernels.resources import ResourceContainer
from .executor import CancellationToken, Plan, compile_plan
from . import session_feeds as _sf
from . import session_handles as _handles

__all__ = ["Session", "InteractiveSession", "get_default_session"]

# the default-session stack lives in the graph layer (Tensor.eval and Operation.run use it)
from ..graph.graph import _session_stack, get_default_session  # noqa: E402,F401


class _Fetches:
    """Flattens a nested fetch structure into graph elements and rebuilds it from values."""

    __slots__ = ("elements", "rebuild", "session")

    def __init__(self, graph: Graph, fetches: Any, session: Any = None):
        self.elements: List[Any] = []
        self.session = session  # fetched get_session_handle tensors become its TensorHandles
        self.rebuild = self._flatten(graph, fetches)

    def _flatten(self, graph: Graph, f: Any) -> Callable[[list], Any]:
        if isinstance(f, (list, tuple)) and not isinstance(f, Tensor):
            subs = [self._flatten(graph, x) for x in f]
            if isinstance(f, tuple) and hasattr(f, "_fields"):  # namedtuple
                cls = type(f)
                return lambda vals: cls(*[s(vals) for s in subs])
            cls2 = type(f) if isinstance(f, tuple) else list
            return lambda vals: cls2(s(vals) for s in subs)
        if isinstance(f, dict):
            keys = list(f)
            subs = [self._flatten(graph, f[k]) for k in keys]
            cls3 = type(f)
            factory = getattr(f, "default_factory", None)

            def build(vals: list) -> Any:
                # as TF1: an empty instance of the fetch's mapping type, filled key by key
                d = cls3(factory) if isinstance(f, collections.defaultdict) else cls3()
                for k, s in zip(keys, subs):
                    d[k] = s(vals)
                return d
            return build
        if hasattr(f, "_cf_components"):
            # a composite value (a RaggedTensor): fetched as its component tensors, rebuilt by it
            comps = f._cf_components()
            j0, k = len(self.elements), len(comps)
            self.elements.extend(comps)
            return lambda vals: f._cf_from_values([vals[j0 + j] for j in range(k)])
        el = _fetch_element(graph, f)
        if isinstance(el, _SparseFetch):
            i0 = len(self.elements)
            self.elements.extend([el.indices, el.values, el.dense_shape])
            scls = el.cls
            return lambda vals: scls(vals[i0], vals[i0 + 1], vals[i0 + 2])
        if isinstance(el, _IndexedSlicesFetch):
            i0 = len(self.elements)
            self.elements.extend([el.values, el.indices] + ([el.dense_shape] if el.dense_shape is not None else []))
            cls = el.cls
            has_shape = el.dense_shape is not None
            return lambda vals: cls(vals[i0], vals[i0 + 1], vals[i0 + 2] if has_shape else None)
        i = len(self.elements)
        self.elements.append(el)
        wrap = _handles.handle_fetch(el, self.session)
        if wrap is not None:
            return lambda vals: wrap(vals[i])
        return lambda vals: vals[i]


class _IndexedSlicesFetch:
    __slots__ = ("values", "indices", "dense_shape", "cls")

    def __init__(self, s: Any):
        self.values, self.indices, self.dense_shape = s.values, s.indices, s.dense_shape
        from ..graph.indexed_slices import IndexedSlicesValue
        self.cls = IndexedSlicesValue


class _SparseFetch:
    __slots__ = ("indices", "values", "dense_shape", "cls")

    def __init__(self, s: Any):
        self.indices, self.values, self.dense_shape = s.indices, s.values, s.dense_shape
        self.cls = SparseTensorValue


def _fetch_element(graph: Graph, f: Any) -> Any:
    if isinstance(f, bytes):
        f = f.decode("utf-8")  # TF1 takes a name as bytes too
    if f is None:
        raise TypeError("fetch argument None is not allowed")
    from ..graph.indexed_slices import IndexedSlices
    if isinstance(f, IndexedSlices):
        return _IndexedSlicesFetch(f)
    if isinstance(f, SparseTensor):
        return _SparseFetch(f)
    try:
        el = graph.as_graph_element(f)
    except (TypeError, ValueError, KeyError) as e:
        raise _sf.fetch_element_error(f, e) from None
    if not graph.is_fetchable(el):
        raise ValueError(f"Operation {getattr(el, 'op', el).name!r} has been marked as not fetchable.")
    if isinstance(el, Tensor) and el.dtype == _dt.resource:
        # "v:0" names the variable (its handle): TF1 fetches the value, as for the Variable
        from ..graph.variables import snapshot_of_handle
        r = snapshot_of_handle(el)
        el = el if r is None else r
    return el


class Session:
    """Runs ops of one graph; holds variables and queues (TensorFlow 1.x `tf.Session`).

    config keys: `device` ('auto', '/cpu:0', '/gpu:0'; default 'auto': this rank's GPU when
    there is one, else the CPU; the environment variable COLLFLOW_DEVICE overrides 'auto'),
    `allow_soft_placement` (place ops on an unavailable device on the CPU instead),
    `check_outputs` (verify every kernel's output dtype/shape against the graph; slow),
    `operation_timeout_in_ms` (blocking ops such as queue dequeue give up after this),
    `fuse_ops` (run a weight-gradient MatMul and the SGD/Momentum update it feeds as one BLAS
    call; default on), `buffer_forwarding` (kernels may reuse a dead input's buffer; default
    on), `bucket_views` (ops computing gradients that a fused all-reduce packs write them
    straight into its send buffer; default on), `comm` (the communicator of the collective
    ops; default cf.comm.get()).  config may also be a cf.ConfigProto (runtime/config.py
    says which of its fields collflow honours and how).
    """

    def __init__(self, target: str = "", graph: Optional[Graph] = None, config: Any = None):
        self.graph = graph if graph is not None else get_default_graph()
        # fetched strings are bytes, as TF1 gives them; collflow's private sessions (a dataset
        # function's) set it False to keep the str collflow holds inside
        self._strings_as_bytes = True
        self._config: Dict[str, Any] = session_options(config)
        import os
        if os.environ.get("COLLFLOW_CHECK_OUTPUTS") == "1":
            self._config.setdefault("check_outputs", True)
        self._resources = ResourceContainer()
        self._plans: Dict[Any, Tuple[Plan, Any]] = {}
        self._lock = threading.RLock()
        self._closed = False
        self._active: set = set()
        configure_process(self._config)
        self._default_device = self._pick_default_device(self._config.get("device", "auto"))
        configure_device(self._config, get_device(self._default_device))
        self._ctx_stack: List[Any] = []
        self._replicas_synced = False

    # -- devices -------------------------------------------------------------------------
    @staticmethod
    def _pick_default_device(spec: Optional[str]) -> str:
        from ..graph.graph import canonical_device
        if spec != "/cpu:0":
            from ..kernels import gpu
            gpu.setup()  # registers this rank's GPU when CuPy sees one (once per process)
        if spec in (None, "auto") and os.environ.get("COLLFLOW_DEVICE", "auto") != "auto":
            spec = os.environ["COLLFLOW_DEVICE"]  # e.g. /cpu:0 on a GPU machine (the test suite does)
        if spec in (None, "auto"):
            for d in available_devices():
                if d.device_type == "GPU":
                    return d.name
            return "/cpu:0"
        name = canonical_device(spec)
        get_device(name)  # raises a clear error if absent
        return name  # type: ignore[return-value]

    def _device_for(self, op: Operation) -> str:
        from .placement import choose_device
        return choose_device(op, self)

    # -- running ------------------------------------------------------------------------
    def run(self, fetches: Any, feed_dict: Optional[dict] = None, options: Any = None,
            run_metadata: Any = None, cancel_token: Optional[CancellationToken] = None) -> Any:
        """Runs the ops needed for `fetches`, feeding `feed_dict`; returns fetched values.

        `options`: a cf.RunOptions; with a trace_level, every op's start and end go into
        `run_metadata` (a cf.RunMetadata) as step_stats (cf.Timeline renders them).
        `cancel_token` lets another thread cancel this run between ops (CancelledError).
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if not self.graph._ops:
            raise RuntimeError("The Session graph is empty. Add operations to the graph before calling run().")
        feed_tensors, feed_values = self._resolve_feeds(feed_dict)
        fetch_map = _Fetches(self.graph, fetches, self)
        trace = tracing.wants_trace(options)
        plan, order = self._get_plan(fetch_map.elements, feed_tensors, trace)
        if not self._replicas_synced and self.graph.get_collection(GraphKeys.REPLICA_SYNC):
            self._sync_replicas(plan)
        if order is not None:
            feed_values = [feed_values[j] for j in order]
        return self._run_plan(plan, fetch_map, feed_values, feed_tensors, order, cancel_token,
                              run_metadata if trace else None, trace)

    def _sync_replicas(self, plan: Any) -> None:
        """Before this session's first synchronous training step (a SyncReplicasOptimizer's
        or Horovod optimizer's train op): the broadcast of rank 0's variables, unless this
        session already ran a broadcast.  Every rank reaches its first step together."""
        ops = set(plan.ops)
        if any(isinstance(o, Operation) and o.type == "FusedBroadcast" for o in ops):
            self._replicas_synced = True  # the user's broadcast_global_variables (or ours)
            return
        recs = self.graph.get_collection(GraphKeys.REPLICA_SYNC)
        if not any(ops & rec.steps for rec in recs):
            return
        self._replicas_synced = True
        self.run([rec.broadcast for rec in recs])

    def _fetches(self, fetches: Any) -> "_Fetches":
        return _Fetches(self.graph, fetches, self)

    def _run_plan(self, plan: Plan, fetch_map: "_Fetches", feed_values: List[Any],
                  feeds: Sequence[Tensor] = (), order: Optional[List[int]] = None,
                  cancel_token: Optional[CancellationToken] = None, run_metadata: Any = None,
                  trace: bool = False) -> Any:
        """Runs a compiled plan on checked feed values, in the plan's feed order (`run` and
        make_callable's path); with `trace`, fills run_metadata's step stats."""
        tok = cancel_token if cancel_token is not None else CancellationToken()
        if trace:
            tok.trace = []
        self._active.add(tok)
        try:
            # IEEE results (log 0 = -inf, 0/0 = nan) without NumPy's warnings, as TF1 gives them
            # (tf.debugging.check_numerics is the way to ask for a check)
            with run_token_scope(tok), np.errstate(all="ignore"):
                vals = plan(feed_values, tok)
        finally:
            self._active.discard(tok)
            if trace:
                records, tok.trace = tok.trace, None
                tracing.fill(run_metadata, plan.ops, plan.placement, records)
        return fetch_map.rebuild(_host_values(fetch_map.elements, vals, feeds, feed_values, order,
                                              self._strings_as_bytes))

    def _resolve_feeds(self, feed_dict: Optional[dict]) -> Tuple[List[Tensor], List[Any]]:
        if feed_dict is not None and not isinstance(feed_dict, collections.abc.Mapping):
            raise TypeError(f"feed_dict must be a dictionary (or other Mapping), not {type(feed_dict).__name__}")
        if not feed_dict:
            return [], []
        tensors: List[Tensor] = []
        values: List[Any] = []
        g = self.graph

        def add(k: Any, v: Any) -> None:
            if hasattr(k, "_cf_feed_values"):
                # a composite key (a tf.ragged.placeholder): fed component by component
                for kk, vv in zip(k._cf_components(), k._cf_feed_values(v)):
                    add(kk, vv)
                return
            if isinstance(k, SparseTensor):
                # fed part by part from a SparseTensorValue or an (indices, values, dense_shape)
                # tuple, paired up as TF1 zips them (a shorter value leaves parts unfed)
                try:
                    parts = list(v)
                except TypeError:
                    raise TypeError(f"feed_dict key {k!r} is a SparseTensor; its value must be a SparseTensorValue "
                                    f"or an (indices, values, dense_shape) tuple, got {type(v).__name__}") from None
                for kk, vv in zip((k.indices, k.values), parts):
                    add(kk, vv)
                if len(parts) < 3:
                    return
                if k.dense_shape.op.type == "Const":
                    # a sparse_placeholder of known shape: TF1 lets the feed replace the shape
                    # (its static shapes then lie); collflow refuses a different one
                    want = [int(d) for d in np.asarray(k.dense_shape.op.attrs["value"]).reshape(-1)]
                    if [int(d) for d in np.asarray(parts[2]).reshape(-1)] != want:
                        raise InvalidArgumentError(f"feed for {k!r}: dense_shape {np.asarray(parts[2]).tolist()} "
                                                   f"does not match the placeholder's shape {want}")
                else:
                    add(k.dense_shape, parts[2])
                return
            if isinstance(k, (tuple, list)):
                # a structure of tensors as one key (an RNN's state tuple): fed leaf by leaf from a
                # value of the same structure, as TF1 does
                if not isinstance(v, (tuple, list)) or len(v) != len(k):
                    raise TypeError(f"feed_dict key {k!r} is a structure of {len(k)} tensors; its value must be "
                                    f"a list/tuple of as many values, got {type(v).__name__}")
                for kk, vv in zip(k, v):
                    add(kk, vv)
                return
            try:
                t = g.as_graph_element(k, allow_tensor=True, allow_operation=False)
            except (TypeError, ValueError, KeyError) as e:
                raise _sf.feed_key_error(e) from None
            if t.dtype == _dt.resource:
                # "v:0" names the variable: feeding it feeds the variable's value, as TF1's
                # reference variables do (the same tensor the Variable object feeds)
                from ..graph.variables import snapshot_of_handle
                r = snapshot_of_handle(t)
                t = t if r is None else r
            tensors.append(t)
            values.append(_sf.check_feed(t, _handles.feed_value(t, v)))

        for k, v in feed_dict.items():
            add(k, v)
        return tensors, values

    def _get_plan(self, elements: List[Any], feed_tensors: List[Tensor], trace: bool = False) -> Tuple[Plan, Any]:
        key = (tuple(elements), frozenset(feed_tensors)) + (("trace",) if trace else ())
        hit = self._plans.get(key)
        if hit is None:
            with self._lock:
                hit = self._plans.get(key)
                if hit is None:
                    fetch_tensors = [e if isinstance(e, Tensor) else None for e in elements]
                    targets = [e for e in elements if isinstance(e, Operation)]
                    plan = compile_plan(self, fetch_tensors, targets, feed_tensors, trace=trace)
                    hit = (plan, feed_tensors)
                    self._plans[key] = hit
        plan, plan_feeds = hit
        if plan_feeds is feed_tensors or list(plan_feeds) == feed_tensors:
            return plan, None
        pos = {t: i for i, t in enumerate(feed_tensors)}
        return plan, [pos[t] for t in plan_feeds]

    def make_callable(self, fetches: Any, feed_list: Optional[Sequence[Any]] = None,
                      accept_options: bool = False) -> Callable[..., Any]:
        """A function running `fetches`, fed positionally from `feed_list` (TF1's rules:
        runtime/session_feeds.py), skipping per-call lookups."""
        return _sf.make_callable(self, fetches, feed_list, accept_options)

    def list_devices(self) -> List[Any]:
        """The devices of this session (objects with name, device_type, memory_limit_bytes)."""
        return _sf.list_devices(self)

    def cancel(self, reason: str = "cancelled by Session.cancel()") -> None:
        """Cancels every run in flight (between ops)."""
        for tok in list(self._active):
            tok.cancel(reason)

    def plan_for(self, fetches: Any, feed_dict: Optional[dict] = None) -> Plan:
        """The compiled plan `run(fetches, feed_dict)` would use (for inspection and tests)."""
        fetch_map = _Fetches(self.graph, fetches)
        feed_tensors, _ = self._resolve_feeds(feed_dict)
        return self._get_plan(fetch_map.elements, feed_tensors)[0]

    # -- variables -----------------------------------------------------------------------
    def _load_variable(self, var: Any, value: Any) -> None:
        st = self._resources.variable(var.handle.op.attrs["shared_name"], var.dtype, var.shape,
                                      get_device(self._device_for(var.handle.op)).xp)
        st.assign(np.asarray(value, dtype=var.dtype.np))

    @property
    def resources(self) -> ResourceContainer:
        return self._resources

    def partial_run_setup(self, fetches: Any, feeds: Any = None) -> str:
        """A handle for running one step in pieces (TF1's partial run): `fetches` and `feeds`
        are everything the pieces may fetch and feed (runtime/partial_run.py)."""
        from .partial_run import PartialRun
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        pr = PartialRun(self, fetches, feeds)
        self._partial_runs = getattr(self, "_partial_runs", {})
        self._partial_runs[pr.handle] = pr
        return pr.handle

    def partial_run(self, handle: str, fetches: Any, feed_dict: Optional[dict] = None) -> Any:
        """One piece of a partial run: fetches values, feeding feed_dict (each feed and fetch
        once per partial run; ops shared with earlier pieces do not run again)."""
        pr = getattr(self, "_partial_runs", {}).get(handle)
        if pr is None:
            raise InvalidArgumentError(f"partial_run: {handle!r} is not a handle from this session's "
                                       "partial_run_setup")
        return pr.run(fetches, feed_dict)

    @property
    def graph_def(self) -> Any:
        """The session's graph as a GraphDef (Graph.as_graph_def)."""
        return self.graph.as_graph_def()

    # -- lifecycle -----------------------------------------------------------------------
    def close(self) -> None:
        """Cancels runs in flight, closes queues (waking blocked threads) and frees state."""
        if self._closed:
            return
        self._closed = True
        self.cancel("session closed")
        for q in list(self._resources.queues.values()):
            try:
                q.close(cancel_pending=True, reason="session closed")
            except Exception:
                pass
        self._plans.clear()

    @contextlib.contextmanager
    def as_default(self) -> Iterator["Session"]:
        st = _session_stack()
        st.append(self)
        try:
            with self.graph.as_default():
                yield self
        finally:
            st.pop()

    def __enter__(self) -> "Session":
        cm = self.as_default()
        cm.__enter__()
        self._ctx_stack.append(cm)
        return self

    def __exit__(self, *exc: Any) -> None:
        cm = self._ctx_stack.pop()
        cm.__exit__(*exc)
        self.close()


class InteractiveSession(Session):
    """A Session that installs itself as the default session on construction."""

    def __init__(self, target: str = "", graph: Optional[Graph] = None, config: Any = None):
        super().__init__(target, graph, config)
        _session_stack().append(self)

    def close(self) -> None:
        st = _session_stack()
        if self in st:
            st.remove(self)
        super().close()


_NOT_FED = object()


def _host_values(elements: List[Any], vals: List[Any], feeds: Sequence[Tensor], feed_values: List[Any],
                 order: Optional[List[int]], as_bytes: bool = True) -> List[Any]:
    """The fetched values as the user gets them.  A fetched tensor that was fed gives back the
    fed value as converted (TF1: `np.asarray(value, dtype)` itself, a 0-d array staying one;
    strings as bytes).
    as_bytes: strings as bytes (TF1's); False keeps collflow's str (its own private sessions)."""
    if len(vals) == 1 and not feeds:
        return [_to_host(vals[0], as_bytes)]
    fed: Dict[Any, Any] = {}
    if feeds:
        fed = {t: feed_values[j] for j, t in enumerate(feeds)} if order is None else \
            {feeds[j]: feed_values[i] for i, j in enumerate(order)}
    out = []
    seen: Dict[Any, Any] = {}  # a tensor fetched twice: one value, the same object (TF1's)
    for e, v in zip(elements, vals):
        if not isinstance(e, Tensor):
            out.append(_to_host(v, as_bytes))
            continue
        h = seen.get(e, _NOT_FED)
        if h is _NOT_FED:
            f = fed.get(e, _NOT_FED)
            if isinstance(f, np.ndarray):
                # a fed string tensor: its value as bytes (TF1 hands back the fed array itself,
                # bytes when bytes were fed; collflow holds the converted str)
                h = _dt.user_strings(f) if as_bytes and f.dtype == object else f
            else:
                h = _to_host(v, as_bytes)
            seen[e] = h
        out.append(h)
    return out


def _to_host(v: Any, as_bytes: bool = True) -> Any:
    """A fetched value as the user gets it: a private ndarray, or a NumPy scalar for a 0-d
    value (as TensorFlow 1.x's Session.run returns, e.g. np.float32); strings as bytes."""
    if isinstance(v, np.ndarray):
        if v.dtype == object and as_bytes:  # strings: bytes, as TF1 gives them (collflow holds str)
            return _dt.user_string_value(v)
        if v.ndim == 0:
            return v[()]
        # read-only arrays are constants' or variables' storage (or views of it): the user
        # gets a private, writable copy; so does a subclass (a device's array type over host
        # memory, as the test suite's simulated GPU has), as a plain ndarray
        if type(v) is not np.ndarray:
            return np.array(v, copy=True, subok=False)
        return v if v.flags.writeable else v.copy()
    if v is None or isinstance(v, np.generic):
        return v
    if isinstance(v, str) and as_bytes:
        return _dt.user_strings(v)
    get = getattr(v, "get", None)
    if get is not None and type(v).__module__.startswith("cupy"):
        v = get()
        return v[()] if v.ndim == 0 else v
    return v
