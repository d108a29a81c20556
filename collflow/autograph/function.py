"""tf.function and tf.wrap_function for TF1 graph mode: a traced Python function, inlined.

collflow has no function-call op, so a call builds the function's ops where it is called:
the (AutoGraph-converted) Python function runs inside a name scope named after it, on the
call's tensors.  What TF 1.15 / TF 2.x graph mode observably do is kept:

- the trace cache: tensors (and NumPy arrays and scalars, as TF 2.x) key by dtype and static
  shape, other Python values by value (unhashable ones by identity); a new key is a new trace
  (experimental_get_tracing_count); the cache lives on the graph (dropped with it);
  experimental_relax_shapes generalizes a shape that missed to the common shape with the last
  trace, and a call reuses any trace whose shapes cover its own.  The body sees the trace's
  shapes (input_signature / relaxed ones), as TF's.
- input_signature: arguments are converted to its dtypes and checked against its shapes and
  structure (TypeError otherwise, as TF 2.x's binding errors).
- variables: only the first trace may create them; like TF, a first trace that created some
  is traced again at once with creation forbidden (so a Variable made unconditionally raises
  ValueError, and the singleton pattern `if self.v is None: self.v = tf.Variable(...)` works).
  They are named as TF's lifted variables (the function's own scope left out).
- automatic control dependencies: stateful ops run in program order (per resource, and the
  others in one chain) and every output waits for all of them, so an assign_add whose result
  is not returned still runs when an output is fetched; variable reads inside are fresh reads.
- collection additions made inside (UPDATE_OPS, losses, ...) stay inside, as in TF's function
  graph; those of the variables the function creates reach the graph.

Differences: the body runs (Python side effects too) at every call, where TF runs it once
per trace (the first run of a first call that made variables stays in the graph, unused);
stateful ops inside a cond/while built in the body follow that construct's own rules, not
the function's automatic control dependencies; outputs have the trace's static shapes (TF
may infer more specific ones); ConcreteFunction.graph is the graph it was traced into (its
inputs are placeholders there), not a separate function graph.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import re
import threading
import types
import weakref
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops.constant_op import identity, placeholder, placeholder_with_default
from ..graph.shape import TensorShape
from ..graph.type_spec import TensorSpec
from ..graph.variable_scope import get_variable_scope, var_store, variable_scope
from ..graph.variables import Variable, variable_creator_scope
from ..platform import tf_logging as _logging
from ..runtime import device_config as _device_config

__all__ = ["function", "Function", "ConcreteFunction", "wrap_function", "WrappedFunction"]

_NON_FIRST_CALL = ("tf.function-decorated function tried to create variables on non-first call. "
                   "Create each variable once (e.g. `if self.v is None: self.v = tf.Variable(...)`) "
                   "or outside the function.")


# -- structures: containers are walked, everything else is a leaf ---------------------------
def _keys(d: dict) -> list:
    try:
        return sorted(d)
    except TypeError:  # keys that do not sort: insertion order
        return list(d)


def _walk(x: Any, leaf: Callable[[Any], Any]) -> Any:
    """x rebuilt with leaf(v) for each non-container value v, visited in nest's order."""
    if isinstance(x, dict):
        vals = {k: _walk(x[k], leaf) for k in _keys(x)}
        return type(x)((k, vals[k]) for k in x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[_walk(v, leaf) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(_walk(v, leaf) for v in x)
    return leaf(x)


def _encode(x: Any, specs: List[TensorSpec], refs: List[Any]) -> Any:
    """The hashable trace key of x; tensor leaves append their spec to `specs` and key as 'T'."""
    if isinstance(x, dict):
        return ("dict", type(x), tuple((k, _encode(x[k], specs, refs)) for k in _keys(x)))
    if isinstance(x, (list, tuple)):
        return (type(x), tuple(_encode(v, specs, refs) for v in x))
    if isinstance(x, _g.Tensor):
        specs.append(TensorSpec(x.shape, x.dtype))
        return "T"
    if isinstance(x, Variable):  # by its spec, as TF's; the body gets the variable itself
        return ("variable", x.dtype, tuple(x.shape.as_list()) if x.shape.rank is not None else None)
    try:
        hash(x)
    except TypeError:
        refs.append(x)  # kept alive by the trace, so its id is not reused
        return ("id", id(x))
    return ("py", type(x), x)


def _arrays_to_tensors(x: Any) -> Any:
    """NumPy arrays become constants (traced by dtype and shape); NumPy scalars stay Python
    values keyed by value, as TF 1.15's function.py converts `type(v) == np.ndarray` only
    (TF 2.x later traced scalars as tensors too)."""
    return _walk(x, lambda v: _g.convert_to_tensor(v) if isinstance(v, np.ndarray) else v)


def _generalizes(a: TensorShape, b: TensorShape) -> bool:
    """Every value of shape b also has shape a (a is b or less specific)."""
    if a.rank is None:
        return True
    return b.rank == a.rank and all(da is None or da == db for da, db in zip(a.dims, b.dims))


def _common(a: TensorShape, b: TensorShape) -> TensorShape:
    if a.rank is None or b.rank is None or a.rank != b.rank:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.dims, b.dims)])


def _scope_name(fn: Any) -> str:
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", getattr(fn, "__name__", "") or "").strip("_")
    return name if name and name[0].isalnum() else "function"


# -- what a body run records ------------------------------------------------------------------
class _Tracer:
    """Stands on the graph's recording-tape stack while a body runs, so Graph.create_op hands it
    each new op: it orders the stateful ops of the call's own control-flow level (per resource
    handle; the others in one chain) and lists them for the outputs to wait on."""

    def __init__(self, ctx: Any):
        self.ctx = ctx
        self.must_run: List[_g.Operation] = []
        self.last_use: Dict[_g.Tensor, _g.Operation] = {}
        self.last_plain: Optional[_g.Operation] = None
        self.paused = 0

    def _record_op(self, op: _g.Operation) -> None:
        if self.paused or op._ctx is not self.ctx or not op.stateful:
            return
        handles = [t for t in op.inputs if t.dtype == _dt.resource]
        for h in handles:
            prev = self.last_use.get(h)
            if prev is not None and prev is not op:
                op._add_control_input(prev)
            self.last_use[h] = op
        if not handles:
            if self.last_plain is not None:
                op._add_control_input(self.last_plain)
            self.last_plain = op
        self.must_run.append(op)

    def _variable_accessed(self, var: Any) -> None:  # the tape protocol; reads need nothing more
        pass

    @contextlib.contextmanager
    def pause(self) -> Iterator[None]:
        self.paused += 1
        try:
            yield
        finally:
            self.paused -= 1


@contextlib.contextmanager
def _recording(tracer: Optional[_Tracer]) -> Iterator[None]:
    if tracer is None:
        yield
        return
    tapes = _g.recording_tapes()
    tapes.append(tracer)
    try:
        yield
    finally:
        for i in range(len(tapes) - 1, -1, -1):
            if tapes[i] is tracer:
                del tapes[i]
                break


class _Collections:
    """A graph's collections before a body run; `restore` drops what the run added, but for
    what creating its variables added (TF's function graph keeps its own collections)."""

    def __init__(self, g: _g.Graph):
        self.g = g
        self.saved = {k: list(g.get_collection_ref(k)) for k in g.get_all_collection_keys()}
        self.kept: Dict[str, list] = {}

    @contextlib.contextmanager
    def keep_additions(self) -> Iterator[None]:
        g = self.g
        before = {k: len(g.get_collection_ref(k)) for k in g.get_all_collection_keys()}
        try:
            yield
        finally:
            for k in g.get_all_collection_keys():
                added = g.get_collection_ref(k)[before.get(k, 0):]
                if added:
                    self.kept.setdefault(k, []).extend(added)

    def restore(self) -> None:
        g = self.g
        for k in g.get_all_collection_keys():
            saved = self.saved.get(k, [])
            ids = {id(v) for v in saved}  # by identity: items may compare elementwise
            g.get_collection_ref(k)[:] = saved + [v for v in self.kept.get(k, []) if id(v) not in ids]


def _lifted_scope(g: _g.Graph, fn_scope: str) -> Any:
    """The name scope a variable made in the body gets: the body's scope without the function's."""
    cur = g._current_scope()
    if cur == fn_scope or cur.startswith(fn_scope + "/"):
        rel = cur[len(fn_scope):].lstrip("/")
        return g.name_scope(rel + "/") if rel else g.name_scope(None)
    return contextlib.nullcontext()


def _body_run(g: _g.Graph, scope: str, call: Callable[[], Any], creator: Callable[..., Any],
              tracer: Optional[_Tracer], finish: Callable[[Any], Any]) -> Any:
    """Runs `call()` (the body on its inputs) once where the function is called, in a new name
    scope; `creator(next, fn_scope, cols, **kw)` decides what each variable creation does, and
    `finish(result)` (run in the scope, no longer recording) builds the outputs."""
    cols = _Collections(g)
    with g.name_scope(scope) as s:
        fn_scope = s[:-1]

        def make_variable(next_creator: Callable[..., Any], **kw: Any) -> Any:
            return creator(next_creator, fn_scope, cols, **kw)

        try:
            with variable_creator_scope(make_variable), _recording(tracer):
                out = call()
        finally:
            cols.restore()
        return finish(out)


def _outputs(g: _g.Graph, out: Any, tracer: Optional[_Tracer], fname: str) -> Any:
    """The call's results: each tensor through an Identity (that waits for the body's stateful
    ops); Python numbers and strings become tensors, None stays None."""
    deps = list(tracer.must_run) if tracer is not None else []

    def conv(x: Any) -> Any:
        if x is None:
            return None
        with g.control_dependencies(deps):
            if isinstance(x, Variable):
                return identity(x.read_value())
            if not isinstance(x, _g.Tensor):
                if _g.is_tensor(x):  # SparseTensor, IndexedSlices, ...: passed as they are
                    return x
                try:
                    if isinstance(x, _g.Operation):
                        raise TypeError("an Operation")
                    x = _g.convert_to_tensor(x)
                except Exception:  # noqa: BLE001 - any value that is no tensor
                    raise TypeError(
                        f"To be compatible with tf.function, Python functions must return zero or more Tensors; "
                        f"in compilation of {fname}, found return value of type {type(x).__name__}, "
                        "which is not a Tensor.") from None
            return identity(x)
    return _walk(out, conv)


# -- tf.function --------------------------------------------------------------------------------
class _Trace:
    """One entry of the cache: the Python part of the key and the tensors' specs."""

    def __init__(self, key: Any, specs: Tuple[TensorSpec, ...], refs: List[Any]):
        self.key = key
        self.specs = specs
        self.refs = refs
        self.concrete: Optional["ConcreteFunction"] = None


def _check_signature(sig: Any) -> Optional[tuple]:
    if sig is None:
        return None
    if not isinstance(sig, (list, tuple)):
        raise TypeError(f"input_signature must be either a tuple or a list, got {type(sig)}.")
    bad = []
    _walk(list(sig), lambda v: bad.append(v) if not isinstance(v, TensorSpec) else v)
    if bad:
        raise TypeError("input_signature must be a possibly nested sequence of TensorSpec objects, got invalid "
                        f"args {bad} with types {[type(b) for b in bad]}.")
    return tuple(sig)


def _cast(value: Any, spec: Any, where: str) -> Any:
    """value converted to and checked against the signature structure `spec` (TypeError)."""
    if isinstance(spec, TensorSpec):
        if isinstance(value, _g.Tensor):
            t = value
            if t.dtype != spec.dtype:
                raise TypeError(f"{where}: can not cast a {t.dtype.name} tensor to {spec!r}")
        else:
            try:
                t = _g.convert_to_tensor(value, dtype=spec.dtype)
            except (TypeError, ValueError) as e:
                raise TypeError(f"{where}: can not convert {value!r} to {spec!r}: {e}") from None
        if not spec.shape.is_compatible_with(t.shape):
            raise TypeError(f"{where}: can not cast a tensor of shape {t.shape} to {spec!r}")
        return t
    if isinstance(spec, dict):
        if not isinstance(value, dict) or set(value) != set(spec):
            raise TypeError(f"{where}: expected a dict with keys {sorted(spec)}, got {value!r}")
        return type(value)((k, _cast(value[k], spec[k], f"{where}[{k!r}]")) for k in value)
    if not isinstance(value, (list, tuple)) or isinstance(value, tuple) != isinstance(spec, tuple):
        raise TypeError(f"{where}: can not cast {value!r} to {type(spec).__name__} type")
    if len(value) != len(spec):
        raise TypeError(f"{where}: expected {value!r} to have length of {len(spec)}")
    items = [_cast(v, s, f"{where}[{i}]") for i, (v, s) in enumerate(zip(value, spec))]
    return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)


_FUNCTION_IDS = itertools.count(1)
_TRACES_ATTR = "_collflow_function_traces"


def _graph_traces(g: _g.Graph, uid: int) -> Dict[Any, List[_Trace]]:
    """The trace cache of Function number `uid` in graph `g`, kept on the graph itself so that a
    dropped graph frees its traces (and the arguments and outputs they hold)."""
    per_graph = g.__dict__.get(_TRACES_ATTR)
    if per_graph is None:
        per_graph = g.__dict__.setdefault(_TRACES_ATTR, {})
    return per_graph.setdefault(uid, {})


class Function:
    """A Python function traced into the graph where it is called (tf.function's result).

    Calling it with Tensors builds its ops in the current graph and returns its outputs;
    `get_concrete_function` traces it for given TensorSpecs.  See the module docstring."""

    def __init__(self, python_function: Callable[..., Any], name: Optional[str] = None,
                 input_signature: Any = None, autograph: bool = True, experimental_autograph_options: Any = None,
                 experimental_relax_shapes: bool = False, experimental_compile: Any = None,
                 _instance: Any = None, _converted: Any = None):
        if not callable(python_function):
            raise TypeError(f"{python_function!r} is not a callable object")
        self._fn = python_function
        # a method's instance, held weakly where it can be (the class's Function keeps this one)
        self._instance_ref: Optional[Callable[[], Any]] = None
        if _instance is not None:
            try:
                self._instance_ref = weakref.ref(_instance)
            except TypeError:
                self._instance_ref = (lambda inst: lambda: inst)(_instance)
        self._name = name or getattr(python_function, "__name__", "function")
        self._input_signature = _check_signature(input_signature)
        self._autograph = bool(autograph)
        self._autograph_options = experimental_autograph_options
        self._relax = bool(experimental_relax_shapes)
        self._compile = experimental_compile  # recorded: collflow has no XLA
        self._converted = _converted
        # the traces live on the graph they were made in (see _graph_traces): dropped with it
        self._uid = next(_FUNCTION_IDS)
        self._count = 0
        self._first_done = False
        self._bound: Dict[int, Tuple[Any, Function]] = {}
        # the trace cache, the first call (which may create variables) and the bound methods are
        # shared by the threads that call the function
        self._lock = threading.RLock()
        functools.update_wrapper(self, python_function, updated=())
        target = self.python_function
        try:
            self._signature = inspect.signature(target)
        except (TypeError, ValueError):
            self._signature = None

    @property
    def _instance(self) -> Any:
        if self._instance_ref is None:
            return None
        inst = self._instance_ref()
        if inst is None:
            raise ReferenceError(f"tf.function {self._name}: the instance it was bound to no longer exists")
        return inst

    # -- public attributes -------------------------------------------------------------------
    @property
    def python_function(self) -> Callable[..., Any]:
        """The function as written (bound to its instance for a method)."""
        return self._fn if self._instance_ref is None else types.MethodType(self._fn, self._instance)

    @property
    def input_signature(self) -> Optional[tuple]:
        """The TensorSpecs (a tuple, possibly nested) given to tf.function, or None."""
        return self._input_signature

    def experimental_get_tracing_count(self) -> int:
        """How many times the function was traced (new cache entries, plus TF's second trace of a
        first call that created variables)."""
        return self._count

    _get_tracing_count = experimental_get_tracing_count

    def __repr__(self) -> str:
        return f"<collflow tf.function {self._name}>"

    def __get__(self, instance: Any, owner: Any = None) -> "Function":
        """A method: one Function per instance (its own traces and variables), as TF's."""
        if instance is None:
            return self
        with self._lock:
            return self._bound_method(instance)

    def _bound_method(self, instance: Any) -> "Function":
        held = self._bound.get(id(instance))
        if held is not None:
            ref, f = held
            if (ref() if isinstance(ref, weakref.ref) else ref) is instance:
                return f
        f = self._bind_to(instance)
        try:  # by identity (the instance's own __eq__/__hash__ play no part); dropped with it
            ref: Any = weakref.ref(instance, lambda _, k=id(instance): self._bound.pop(k, None))
        except TypeError:  # not weak-referenceable: held for the Function's lifetime
            ref = instance
        self._bound[id(instance)] = (ref, f)
        return f

    def _bind_to(self, instance: Any) -> "Function":
        return Function(self._fn, self._name, self._input_signature, self._autograph, self._autograph_options,
                        self._relax, self._compile, _instance=instance, _converted=self._converted)

    # -- the traced callable -----------------------------------------------------------------
    def _traced(self) -> Callable[..., Any]:
        if self._converted is None:
            fn = self._fn
            if self._autograph:
                try:
                    from . import to_graph  # the AutoGraph converter (this package)
                except ImportError:
                    to_graph = None
                if to_graph is not None:
                    try:
                        fn = to_graph(self._fn, recursive=True)
                    except Exception as e:  # noqa: BLE001 - TF too falls back to the function as written
                        if getattr(self._fn, "__name__", "") == "<lambda>":  # expected: no warning
                            _logging.vlog(1, "AutoGraph leaves lambda %s as it is: %s", self._name, e)
                        else:
                            _logging.warning("AutoGraph could not transform %s and will run it as-is: %s",
                                             self._name, e)
            self._converted = fn
        fn = self._converted
        return fn if self._instance_ref is None else types.MethodType(fn, self._instance)

    # -- binding and the cache key -----------------------------------------------------------
    def _bind(self, args: tuple, kwargs: dict) -> Tuple[tuple, dict]:
        """(args, kwargs) canonicalized by the Python signature (defaults filled in; the
        input_signature's arguments converted and checked)."""
        if self._signature is None:
            return tuple(args), dict(kwargs)
        try:
            b = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"Binding inputs to tf.function {self._name} failed due to `{e}`. Received args: "
                            f"{args} and kwargs: {kwargs} for signature: {self._signature}.") from None
        given = set(b.arguments)
        b.apply_defaults()
        if self._input_signature is not None:
            return self._apply_input_signature(b, given), dict(b.kwargs)
        return tuple(b.args), dict(b.kwargs)

    def _apply_input_signature(self, b: inspect.BoundArguments, given: set) -> tuple:
        sig = self._input_signature
        params = list(self._signature.parameters.values())
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        for p in positional[len(sig):]:
            if p.name in given:
                raise TypeError(f"tf.function {self._name}: argument {p.name!r} is not in the input_signature "
                                f"({len(sig)} arguments) and must keep its default")
        args = tuple(b.args)
        if len(args) < len(sig):
            raise TypeError(f"tf.function {self._name}: {len(sig)} arguments expected by the input_signature, "
                            f"got {len(args)}")
        if len(args) > len(sig) and any(p.kind == p.VAR_POSITIONAL for p in params):
            raise TypeError(f"tf.function {self._name}: too many positional arguments for the input_signature "
                            f"({len(args)} given, {len(sig)} in it)")
        names = [p.name for p in positional] + [f"args_{i}" for i in range(len(args))]
        cast = tuple(_cast(a, s, f"tf.function {self._name}: argument {names[i]!r}")
                     for i, (a, s) in enumerate(zip(args, sig)))
        return cast + args[len(sig):]

    def _lookup(self, key: Any, specs: Tuple[TensorSpec, ...], refs: List[Any]) -> _Trace:
        """The trace for these inputs, a new one (counted) when none covers them."""
        entries = _graph_traces(_g.get_default_graph(), self._uid).setdefault(key, [])
        for e in entries:
            if e.specs == specs:
                return e
        for e in entries:  # the oldest (most specific) trace that covers them
            if all(a.dtype == b.dtype and _generalizes(a.shape, b.shape) for a, b in zip(e.specs, specs)):
                return e
        new_specs = specs
        if self._relax:
            for e in reversed(entries):
                if all(a.dtype == b.dtype for a, b in zip(e.specs, specs)):
                    new_specs = tuple(TensorSpec(_common(a.shape, b.shape), b.dtype) for a, b in zip(e.specs, specs))
                    break
        entry = _Trace(key, new_specs, refs)
        entries.append(entry)
        self._count += 1
        return entry

    def _key(self, args: tuple, kwargs: dict) -> Tuple[Any, Tuple[TensorSpec, ...], List[Any]]:
        """(the Python part of the trace key, the tensors' specs, objects keyed by identity); the
        graph is part of the key, as in TF (a new graph is a new trace)."""
        graph = id(_g.get_default_graph())
        if self._input_signature is not None:
            specs: List[TensorSpec] = []
            _walk(list(self._input_signature), lambda s: specs.append(TensorSpec(s.shape, s.dtype)))
            refs: List[Any] = []
            rest = _encode((args[len(self._input_signature):], kwargs), [], refs)
            return (graph, "signature", rest), tuple(specs), refs
        specs, refs = [], []
        key = _encode((args, kwargs), specs, refs)
        return (graph, key), tuple(specs), refs

    # -- calling -----------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _device_config.experimental_functions_run_eagerly():
            return self.python_function(*args, **kwargs)
        args, kwargs = self._bind(args, kwargs)
        args, kwargs = _arrays_to_tensors(args), _arrays_to_tensors(kwargs)
        key, specs, refs = self._key(args, kwargs)
        with self._lock:
            entry = self._lookup(key, specs, refs)
        return self._run(entry, args, kwargs)

    def _run(self, entry: _Trace, args: tuple, kwargs: dict) -> Any:
        """Builds one call of the body on these inputs (twice on a first call that made variables)."""
        g = _g.get_default_graph()
        if self._first_done:
            return self._inline(g, entry, args, kwargs, create=False)
        with self._lock:  # one first call: the others wait for it, then are non-first calls
            if self._first_done:
                return self._inline(g, entry, args, kwargs, create=False)
            return self._first_run(g, entry, args, kwargs)

    def _first_run(self, g: _g.Graph, entry: _Trace, args: tuple, kwargs: dict) -> Any:
        created: List[Any] = []
        out = self._inline(g, entry, args, kwargs, create=True, created=created)
        if created:  # TF traces such a first call again, where a new variable is an error
            self._count += 1
            out = self._inline(g, entry, args, kwargs, create=False)
        self._first_done = True
        return out

    def _inline(self, g: _g.Graph, entry: _Trace, args: tuple, kwargs: dict, create: bool,
                created: Optional[List[Any]] = None) -> Any:
        specs = iter(entry.specs)

        def to_trace_shape(t: Any) -> Any:  # the body sees the trace's (maybe relaxed) shapes
            if not isinstance(t, _g.Tensor):
                return t
            s = next(specs, None)
            if s is None or _generalizes(t.shape, s.shape):
                return t
            return placeholder_with_default(t, s.shape)

        tracer = _Tracer(g._get_control_flow_context())

        def creator(next_creator: Callable[..., Any], fn_scope: str, cols: _Collections, **kw: Any) -> Any:
            if not create:
                raise ValueError(_NON_FIRST_CALL)
            with tracer.pause(), g.control_dependencies(None), _lifted_scope(g, fn_scope), cols.keep_additions():
                v = next_creator(**kw)
            created.append(v)
            return v

        def call() -> Any:
            return self._traced()(*_walk(args, to_trace_shape), **_walk(kwargs, to_trace_shape))

        return _body_run(g, _scope_name(self._fn), call, creator, tracer,
                         lambda out: _outputs(g, out, tracer, self._name))

    # -- concrete functions ------------------------------------------------------------------
    def get_concrete_function(self, *args: Any, **kwargs: Any) -> "ConcreteFunction":
        """The trace for these arguments: TensorSpecs (or Tensors, taken by their spec) become
        placeholders in the default graph, other values are taken as they are."""
        if not args and not kwargs and self._input_signature is not None:
            args = tuple(self._input_signature)
        g = _g.get_default_graph()
        if self._signature is not None:
            try:
                b = self._signature.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"get_concrete_function of {self._name}: {e}") from None
            named = dict(b.arguments)
        else:
            named = {f"arg_{i}": a for i, a in enumerate(args)}
        inputs: List[_g.Tensor] = []

        def to_placeholder(name: str) -> Callable[[Any], Any]:
            def make(v: Any) -> Any:
                if isinstance(v, _g.Tensor):
                    v = TensorSpec(v.shape, v.dtype)
                if isinstance(v, TensorSpec):
                    with g.name_scope(None):
                        p = placeholder(v.dtype, v.shape, name=v.name or name)
                    inputs.append(p)
                    return p
                return v
            return make

        fed = {k: _walk(v, to_placeholder(k)) for k, v in named.items()}
        if self._signature is not None:
            b2 = self._signature.bind_partial()
            b2.arguments.update(fed)
            cargs, ckwargs = self._bind(tuple(b2.args), dict(b2.kwargs))
        else:
            cargs, ckwargs = tuple(fed.values()), {}
        key, specs, refs = self._key(cargs, ckwargs)
        with self._lock:
            entry = self._lookup(key, specs, refs)
            if entry.concrete is None:
                out = self._run(entry, cargs, ckwargs)
                in_sig = (_walk(cargs, _spec_of), _walk(ckwargs, _spec_of))
                entry.concrete = ConcreteFunction(self, entry, g, inputs, out, in_sig)
            return entry.concrete


def _spec_of(v: Any) -> Any:
    if isinstance(v, _g.Tensor):
        name = v.op.name if v.op.type == "Placeholder" else None
        return TensorSpec(v.shape, v.dtype, name=name)
    return v


def _flat_tensors(x: Any) -> List[Any]:
    out: List[Any] = []
    _walk(x, lambda v: out.append(v) if isinstance(v, (_g.Tensor, _g.Operation)) else v)
    return out


class ConcreteFunction:
    """One trace of a Function: `inputs` (its placeholders), `outputs`, `structured_outputs`,
    `structured_input_signature`, `graph`; calling it builds the body again on new inputs,
    which must fit the trace (TypeError otherwise)."""

    def __init__(self, function: Optional[Function], entry: Optional[_Trace], graph: _g.Graph,
                 inputs: List[_g.Tensor], structured_outputs: Any, structured_input_signature: Any):
        self._function = function
        self._entry = entry
        self.graph = graph
        self.inputs = list(inputs)
        self.structured_outputs = structured_outputs
        self.outputs = _flat_tensors(structured_outputs)
        self.structured_input_signature = structured_input_signature
        self.name = function._name if function is not None else "wrapped_function"

    @property
    def output_shapes(self) -> Any:
        return _walk(self.structured_outputs, lambda t: t.shape if isinstance(t, _g.Tensor) else t)

    @property
    def output_dtypes(self) -> Any:
        return _walk(self.structured_outputs, lambda t: t.dtype if isinstance(t, _g.Tensor) else t)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        f, entry = self._function, self._entry
        args, kwargs = f._bind(args, kwargs)
        args, kwargs = _arrays_to_tensors(args), _arrays_to_tensors(kwargs)
        key, specs, _ = f._key(args, kwargs)
        if key != entry.key or len(specs) != len(entry.specs):
            raise TypeError(f"ConcreteFunction {self.name}: the arguments' Python values or structure differ "
                            f"from the trace's {self.structured_input_signature}")
        for a, b in zip(entry.specs, specs):
            if a.dtype != b.dtype or not _generalizes(a.shape, b.shape):
                raise TypeError(f"ConcreteFunction {self.name}: a tensor of {b!r} does not fit the trace's {a!r}")
        return f._run(entry, args, kwargs)

    def __repr__(self) -> str:
        return f"<collflow ConcreteFunction {self.name} inputs={self.inputs}>"


def function(func: Optional[Callable[..., Any]] = None, input_signature: Any = None, autograph: bool = True,
             experimental_autograph_options: Any = None, experimental_relax_shapes: bool = False,
             experimental_compile: Any = None) -> Any:
    """tf.function (TF 1.15): `func` traced where it is called (a decorator with or without
    arguments).  experimental_compile is recorded (no XLA here)."""
    def decorate(fn: Callable[..., Any]) -> Function:
        return Function(fn, None, input_signature, autograph, experimental_autograph_options,
                        experimental_relax_shapes, experimental_compile)
    if func is None:
        return decorate
    return decorate(func)


# -- tf.compat.v1.wrap_function ---------------------------------------------------------------
class WrappedFunction(ConcreteFunction):
    """A TF1-style function traced once (variables, get_variable included, made then); each call
    builds it again on its flat tensor arguments, reusing those variables."""

    def __init__(self, fn: Callable[..., Any], signature: list, name: Optional[str]):
        g = _g.get_default_graph()
        self._fn = fn
        self._signature = signature
        self._scope = _scope_name(fn) if name is None else _scope_name(types.SimpleNamespace(__name__=name))
        inputs: List[_g.Tensor] = []

        def make(s: Any) -> Any:
            if not isinstance(s, TensorSpec):
                raise TypeError(f"wrap_function: signature must hold TensorSpecs, got {s!r}")
            with g.name_scope(None):
                p = placeholder(s.dtype, s.shape, name=s.name or "Placeholder")
            inputs.append(p)
            return p

        args = _walk(list(signature), make)
        self._created: List[Any] = []
        out = self._build(g, args, first=True)
        super().__init__(None, None, g, inputs, out, (tuple(_walk(list(signature), lambda s: s)), {}))
        self.name = name or getattr(fn, "__name__", "wrapped_function")

    def _build(self, g: _g.Graph, args: list, first: bool) -> Any:
        created = self._created
        handed = iter([v for v in created if not any(v is x for x in var_store(g).variables.values())])

        def creator(next_creator: Callable[..., Any], fn_scope: str, cols: _Collections, **kw: Any) -> Any:
            if not first:  # a tf.Variable of the first trace: the same one again
                v = next(handed, None)
                if v is None:
                    raise ValueError(f"wrap_function {self._scope}: a call created a variable its trace did not")
                return v
            with g.control_dependencies(None), _lifted_scope(g, fn_scope), cols.keep_additions():
                v = next_creator(**kw)
            created.append(v)
            return v

        reuse = contextlib.nullcontext() if first else variable_scope(get_variable_scope(), reuse=True)
        with reuse:  # get_variable gives the trace's variables back
            return _body_run(g, self._scope, lambda: self._fn(*args), creator, None,
                             lambda out: _outputs(g, out, None, self.name if not first else self._scope))

    def __call__(self, *args: Any) -> Any:
        flat: List[TensorSpec] = []
        _walk(list(self._signature), flat.append)
        if len(args) != len(flat):
            raise TypeError(f"wrap_function {self.name}: takes {len(flat)} tensor arguments, got {len(args)}")
        cast = [_cast(a, s, f"wrap_function {self.name}: argument {i}") for i, (a, s) in enumerate(zip(args, flat))]
        it = iter(cast)
        nested = _walk(list(self._signature), lambda s: next(it))
        return self._build(_g.get_default_graph(), nested, first=False)

    def prune(self, feeds: Any, fetches: Any, name: Any = None, input_signature: Any = None) -> Any:
        raise NotImplementedError("WrappedFunction.prune: collflow inlines wrapped functions; feed and fetch "
                                  "the trace's tensors (inputs/outputs) with Session.run instead")


def wrap_function(fn: Callable[..., Any], signature: Any, name: Optional[str] = None) -> WrappedFunction:
    """tf.compat.v1.wrap_function: traces the TF1-style `fn` on placeholders for `signature` (a
    list of TensorSpecs) into the default graph; the result is callable with tensors, and its
    variables (tf.Variable, tf.get_variable) are made once.  No automatic control dependencies
    (TF1's semantics, as TF's)."""
    if not callable(fn):
        raise TypeError(f"wrap_function: {fn!r} is not callable")
    if signature is None:
        signature = []
    if not isinstance(signature, (list, tuple)):
        raise TypeError(f"wrap_function: signature must be a list of TensorSpecs, got {type(signature).__name__}")
    return WrappedFunction(fn, list(signature), name)
