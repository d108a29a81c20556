"""Graph, Operation and Tensor: the symbolic layer.

Building a graph only records Operations; nothing computes until Session.run.  Every op
gets a unique name under the current name scope, the current device scope, and control
inputs from the current control_dependencies scopes.  The default graph is per thread
(a stack, as in TensorFlow 1.x), with one global graph at its bottom.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import threading
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError, NotFoundError
from .feedable import FeedFetchMarks
from .graph_keys import GraphKeys  # noqa: F401  (its home; graph.GraphKeys stays)
from .device_spec import DeviceSpec, apply_device_stack, canonical_device, device_string  # noqa: F401
from .registry import OpDef, get_op_def
from .shape import TensorShape, as_shape

__all__ = [
    "Graph", "Operation", "Tensor", "get_default_graph", "reset_default_graph", "name_scope",
    "device", "control_dependencies", "convert_to_tensor", "register_tensor_conversion",
    "add_to_collection", "get_collection", "GraphKeys", "canonical_device", "is_tensor",
]

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_VALID_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/]*$")
_NAME_RULE = "TF1's rule: letters, digits, '.', '_', '-' and '/', starting with a letter, digit or '.'"
# inside another scope TF1 also lets a scope name start with '_', '-' or '/' (the node names
# stay valid: they start with the outer scope's name); spatial transformers' '_transform'
_VALID_NESTED_SCOPE = re.compile(r"^[A-Za-z0-9_.\-/]*$")


def _check_node_name(scope: str, name: str) -> None:
    """Raises, as TF1 does, when an op name given by `name=` (within `scope`) is not a valid
    node name: no spaces, newlines or ':' (that separates a tensor's output index).  A scope
    entered verbatim ('x:0/', as Variable(name='x:0') does) is named as the culprit."""
    full = f"{scope}/{name}" if scope else name
    if isinstance(name, str) and _VALID_NAME.fullmatch(full):
        return
    if isinstance(name, str) and scope and _VALID_NAME.fullmatch(name):
        bad, what = scope, "scope"
    else:
        bad, what = full, "node"
    raise InvalidArgumentError(f"{bad!r} is not a valid {what} name ({_NAME_RULE}"
                               + ("; ':' separates a tensor's output index, as in 'x:0'" if ":" in str(bad) else "")
                               + ")")


_DEVICE_RESET = object()  # tf.device(None) on the device stack: outer scopes stop here


class Tensor:
    """A symbolic value: output `value_index` of `op`, with dtype and static shape."""

    # `aliases`: set only by tf.contrib.layers' outputs_collections (TF1's append_tensor_alias)
    __slots__ = ("op", "value_index", "dtype", "_shape", "_consumers", "aliases", "__weakref__")
    # make NumPy defer to our operators (ndarray + Tensor -> Tensor.__radd__)
    __array_priority__ = 100

    def __init__(self, op: "Operation", value_index: int, dtype: _dt.DType, shape: TensorShape):
        self.op = op
        self.value_index = value_index
        self.dtype = dtype
        self._shape = shape
        self._consumers: List["Operation"] = []

    @property
    def name(self) -> str:
        return f"{self.op.name}:{self.value_index}"

    @property
    def graph(self) -> "Graph":
        return self.op.graph

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def device(self) -> Optional[str]:
        return self.op.device

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape: Any) -> None:
        """Refines the static shape (must be compatible with what is known)."""
        try:
            self._shape = self._shape.merge_with(as_shape(shape))
        except ValueError:
            raise InvalidArgumentError(
                f"set_shape: {shape} is incompatible with the known shape {self._shape} of {self.name}",
                self.op) from None

    def consumers(self) -> List["Operation"]:
        return list(self._consumers)

    def eval(self, feed_dict: Optional[dict] = None, session: Any = None) -> Any:
        return _session_for(self, session, "evaluate tensor").run(self, feed_dict)

    def __repr__(self) -> str:
        return f"<cf.Tensor {self.name!r} shape={self._shape} dtype={self.dtype.name}>"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:  # identity, as TF1 (use cf.equal for elementwise)
        return self is other

    def __bool__(self) -> bool:
        raise TypeError("a symbolic cf.Tensor has no truth value; use cf.cond/cf.where or run it")

    def __iter__(self) -> Iterator["Tensor"]:
        dims = self._shape.dims
        if dims is None or not dims or dims[0] is None:
            raise TypeError(f"cannot iterate over {self!r}: its first dimension is not known")
        from . import ops as _ops  # noqa: F401
        return iter(_OPERATORS["unstack"](self, dims[0]))

    def __len__(self) -> int:
        dims = self._shape.dims
        if dims is None or not dims or dims[0] is None:
            raise TypeError(f"len() of {self!r}: first dimension unknown")
        return dims[0]

    # Python operators: filled in by graph/ops/math_ops.py via _OPERATORS
    def __add__(self, o): return _OPERATORS["add"](self, o)
    def __radd__(self, o): return _OPERATORS["add"](o, self)
    def __sub__(self, o): return _OPERATORS["subtract"](self, o)
    def __rsub__(self, o): return _OPERATORS["subtract"](o, self)
    def __mul__(self, o): return _OPERATORS["multiply"](self, o)
    def __rmul__(self, o): return _OPERATORS["multiply"](o, self)
    def __truediv__(self, o): return _OPERATORS["divide"](self, o)
    def __rtruediv__(self, o): return _OPERATORS["divide"](o, self)
    def __floordiv__(self, o): return _OPERATORS["floordiv"](self, o)
    def __rfloordiv__(self, o): return _OPERATORS["floordiv"](o, self)
    def __mod__(self, o): return _OPERATORS["mod"](self, o)
    def __rmod__(self, o): return _OPERATORS["mod"](o, self)
    def __pow__(self, o): return _OPERATORS["pow"](self, o)
    def __rpow__(self, o): return _OPERATORS["pow"](o, self)
    def __matmul__(self, o): return _OPERATORS["matmul"](self, o)
    def __rmatmul__(self, o): return _OPERATORS["matmul"](o, self)
    def __neg__(self): return _OPERATORS["negative"](self)
    def __abs__(self): return _OPERATORS["abs"](self)
    def __lt__(self, o): return _OPERATORS["less"](self, o)
    def __le__(self, o): return _OPERATORS["less_equal"](self, o)
    def __gt__(self, o): return _OPERATORS["greater"](self, o)
    def __ge__(self, o): return _OPERATORS["greater_equal"](self, o)
    # & | ^ ~: logical on bools, bitwise on integers (graph/ops/tensor_operators.py)
    def __and__(self, o): return _OPERATORS["and_"](self, o)
    def __rand__(self, o): return _OPERATORS["and_"](o, self)
    def __or__(self, o): return _OPERATORS["or_"](self, o)
    def __ror__(self, o): return _OPERATORS["or_"](o, self)
    def __xor__(self, o): return _OPERATORS["xor_"](self, o)
    def __rxor__(self, o): return _OPERATORS["xor_"](o, self)
    def __invert__(self): return _OPERATORS["invert_"](self)
    def __getitem__(self, key): return _OPERATORS["getitem"](self, key)


# name -> function; math_ops/array_ops register themselves here on import
_OPERATORS: Dict[str, Callable] = {}


class Operation:
    """A node of the graph: a type, input tensors, attributes and output tensors."""

    __slots__ = ("graph", "name", "type", "op_def", "inputs", "control_inputs", "outputs", "attrs",
                 "device", "_traceback", "_id", "_ctx", "__weakref__")

    def __init__(self, graph: "Graph", op_def: OpDef, name: str, inputs: List[Tensor],
                 attrs: Dict[str, Any], device: Optional[str], control_inputs: List["Operation"]):
        self.graph = graph
        self.op_def = op_def
        self.type = op_def.name
        self.name = name
        self.inputs = inputs
        self.attrs = attrs
        self.device = device
        self.control_inputs = control_inputs
        self.outputs: List[Tensor] = []
        self._traceback = _user_frame()
        self._id = 0
        self._ctx: Any = None  # the control-flow context (cond branch / while body) it was built in

    def get_attr(self, name: str) -> Any:
        return self.attrs[name]

    @property
    def stateful(self) -> bool:
        return self.op_def.stateful

    def creation_site(self) -> str:
        """'file.py:LINE in function' of the user code that created this op."""
        fn, line, func = self._traceback
        return f"{fn}:{line} in {func}"

    def _add_control_input(self, op: "Operation") -> None:
        if op not in self.control_inputs:
            self.control_inputs.append(op)

    def _update_input(self, index: int, tensor: Tensor) -> None:
        """Rewires input `index` (while_loop closes its back edge this way)."""
        old = self.inputs[index]
        if self in old._consumers and sum(1 for t in self.inputs if t is old) == 1:
            old._consumers.remove(self)
        self.inputs[index] = tensor
        tensor._consumers.append(self)

    def run(self, feed_dict: Optional[dict] = None, session: Any = None) -> None:
        _session_for(self, session, "execute operation").run(self, feed_dict)

    def __repr__(self) -> str:
        return f"<cf.Operation {self.name!r} type={self.type}>"


def _user_frame() -> Tuple[str, int, str]:
    """The innermost stack frame outside the collflow package (where the user built the op)."""
    f = sys._getframe(2)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_PKG_DIR):
            return (fn, f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return ("<collflow>", 0, "?")


class Graph(FeedFetchMarks):
    """A dataflow graph: Operations connected by Tensors, plus collections and scopes."""

    def __init__(self) -> None:
        self._ops: List[Operation] = []
        self._ops_by_name: Dict[str, Operation] = {}
        self._names_in_use: Dict[str, int] = {}
        self._collections: Dict[str, list] = {}
        self._finalized = False
        self._lock = threading.RLock()
        self._local = threading.local()
        self.seed: Optional[int] = None
        self._version = 0
        # per-graph caches used by op constructors (e.g. shared constants); never semantic
        self._aux: Dict[Any, Any] = {}
        self._var_store: Any = None  # get_variable's shared variables (graph/variable_scope.py)
        # set while a dataset function is traced into this graph: a tensor of another graph
        # given to an op becomes this graph's placeholder for it (data/dataset.py Captures)
        self._capture: Optional[Callable[[Any], Any]] = None

    # -- thread-local scope stacks ---------------------------------------------------
    def _stack(self, key: str) -> list:
        st = getattr(self._local, key, None)
        if st is None:
            st = []
            setattr(self._local, key, st)
        return st

    # -- default graph -------------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self) -> Iterator["Graph"]:
        """Makes this the default graph in the `with` block (per thread)."""
        st = _default_stack()
        st.append(self)
        try:
            yield self
        finally:
            st.pop()

    # -- names ------------------------------------------------------------------------
    def _current_scope(self) -> str:
        st = self._stack("name_scope")
        return st[-1] if st else ""

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        scope = self._current_scope()
        full = f"{scope}/{name}" if scope else name
        key = full.lower()
        n = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = n + 1
        if n > 0:
            base = full
            while True:
                cand = f"{base}_{n}"
                if cand.lower() not in self._names_in_use:
                    break
                n += 1
            if mark_as_used:
                self._names_in_use[cand.lower()] = 1
            return cand
        return full

    @contextlib.contextmanager
    def name_scope(self, name: Optional[str]) -> Iterator[str]:
        """Opens a name scope; a name ending in '/' re-enters an existing scope exactly."""
        st = self._stack("name_scope")
        if name is None or name == "":
            st.append("")
            try:
                yield ""
            finally:
                st.pop()
            return
        if name.endswith("/"):
            scope = name[:-1]
        else:
            nested = bool(st and st[-1])
            if not (_VALID_NESTED_SCOPE if nested else _VALID_NAME).fullmatch(name):
                where = "inside another scope it may also start with '_', '-' or '/'" if nested else "at the root"
                raise InvalidArgumentError(f"{name!r} is not a valid scope name ({_NAME_RULE}; {where})")
            scope = self.unique_name(name)
        st.append(scope)
        try:
            yield scope + "/"
        finally:
            st.pop()

    # -- device and control-dependency scopes ------------------------------------
    @contextlib.contextmanager
    def device(self, spec: Any) -> Iterator[None]:
        """Ops made in the block get `spec`: a device name (merged over the outer scopes' as
        in TF1: fields it leaves unset come from them), a DeviceSpec, a function
        `fn(op) -> name` (e.g. tf.train.replica_device_setter's), '' (no change) or None
        (no device, whatever the outer scopes say)."""
        st = self._stack("device")
        if spec is None:
            entry: Any = _DEVICE_RESET
        elif callable(spec) and not isinstance(spec, (str, DeviceSpec)):
            entry = spec
        else:
            entry = device_string(spec.to_string() if isinstance(spec, DeviceSpec) else spec)
        st.append(entry)
        try:
            yield
        finally:
            st.pop()

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs: Optional[Iterable[Any]]) -> Iterator[None]:
        """Ops created in the block run after `control_inputs` (None clears outer scopes)."""
        st = self._stack("control")
        if control_inputs is None:
            saved = list(st)
            st.clear()
            try:
                yield
            finally:
                st[:] = saved
            return
        ops = []
        for c in control_inputs:
            el = self.as_graph_element(c, allow_tensor=True, allow_operation=True)
            ops.append(el.op if isinstance(el, Tensor) else el)
        st.append(ops)
        try:
            yield
        finally:
            st.pop()

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map: Dict[str, str]) -> Iterator[None]:
        """Ops of the given types created in this block take their gradient from the function
        registered under the mapped name (tf.RegisterGradient), as TF1's: e.g.
        `{"Round": "Identity"}` for a straight-through estimator."""
        if not isinstance(op_type_map, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                        for k, v in op_type_map.items()):
            raise TypeError("op_type_map must be a dictionary mapping strings to strings")
        st = self._stack("grad_override")
        merged = dict(st[-1]) if st else {}
        merged.update(op_type_map)
        st.append(merged)
        try:
            yield
        finally:
            st.pop()

    def _current_control_inputs(self) -> List[Operation]:
        out: List[Operation] = []
        for ops in self._stack("control"):
            for o in ops:
                if o not in out:
                    out.append(o)
        return out

    # -- op creation ------------------------------------------------------------------
    def create_op(self, op_type: str, inputs: Sequence[Any], attrs: Optional[Dict[str, Any]] = None,
                  name: Optional[str] = None, device: Optional[str] = None) -> Operation:
        """Adds an op of registered type `op_type`; infers its outputs' dtypes and shapes."""
        if self._finalized:
            raise RuntimeError(
                f"Graph is finalized and cannot be modified (tried to add a {op_type} op). "
                "Build everything before Session.run / Graph.finalize().")
        op_def = get_op_def(op_type)
        tensors = [convert_to_tensor(x, graph=self) for x in inputs]
        if self._capture is not None:
            tensors = [t if t.graph is self else self._capture(t) for t in tensors]
        cf_ctx = self._get_control_flow_context()
        if cf_ctx is not None:
            # cond branches switch outside values in; while bodies Enter them (once per tensor)
            tensors = cf_ctx.process_inputs(tensors)
        for t in tensors:
            if t.graph is not self:
                raise InvalidArgumentError(
                    f"{op_type} op: input {t.name} belongs to another graph than the one being built")
        with self._lock:
            if name and name.endswith("/") and len(name) > 1:
                # a scope's own name ("sep/", as name_scope yields it) names the op exactly, as
                # in TF1: the op a composite returns is named like the composite's scope
                uname = name[:-1]
                _check_node_name("", uname)
                if uname in self._ops_by_name:
                    raise InvalidArgumentError(f"duplicate node name {uname!r} in the graph (name={name!r})")
                self._names_in_use[uname.lower()] = max(1, self._names_in_use.get(uname.lower(), 0))
            else:
                if name:  # a name= the caller gave (TF1 checks it; ours are valid by construction)
                    _check_node_name(self._current_scope(), name)
                uname = self.unique_name(name or op_type)
            dev = device_string(device) if device is not None else None
            attrs = dict(attrs or {})
            overrides = self._stack("grad_override")
            if overrides and op_type in overrides[-1]:
                attrs["_gradient_op_type"] = overrides[-1][op_type]
            op = Operation(self, op_def, uname, tensors, attrs, dev, self._current_control_inputs())
            try:
                specs = op_def.shape_fn(op)
            except (ValueError, TypeError, IndexError) as e:
                # back out the name so the failed op leaves no trace
                raise InvalidArgumentError(f"{op_type} op {uname!r}: {e}", op) from None
            op.outputs = [Tensor(op, i, _dt.as_dtype(dt), as_shape(sh)) for i, (dt, sh) in enumerate(specs)]
            if device is None and self._stack("device"):
                op.device = apply_device_stack(self._stack("device"), op, _DEVICE_RESET)
            for t in tensors:
                t._consumers.append(op)
            op._ctx = cf_ctx
            op._id = len(self._ops)
            self._ops.append(op)
            self._ops_by_name[uname] = op
            self._version += 1
        if cf_ctx is not None:
            cf_ctx.add_op(op)
        for tape in recording_tapes():  # tf.GradientTape (graph/gradient_tape.py) records it
            tape._record_op(op)
        return op

    # -- control-flow context (cond / while_loop construction) -----------------------
    @contextlib.contextmanager
    def init_scope(self) -> Iterator[None]:
        """Out of any cond/while body being built and of control dependencies, keeping the
        name scope (TF1's tf.init_scope): where optimizer slots and moving-average shadows are
        made, so one made inside a loop body or a cond branch is an ordinary variable."""
        ctx = self._get_control_flow_context()
        self._set_control_flow_context(None)
        try:
            with self.control_dependencies(None):
                yield
        finally:
            self._set_control_flow_context(ctx)

    def _get_control_flow_context(self) -> Any:
        return getattr(self._local, "cf_ctx", None)

    def _set_control_flow_context(self, ctx: Any) -> None:
        self._local.cf_ctx = ctx

    # -- lookup -------------------------------------------------------------------------
    def get_operations(self) -> List[Operation]:
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        try:
            return self._ops_by_name[name]
        except KeyError:
            raise NotFoundError(f"no operation named {name!r} in the graph") from None

    def get_tensor_by_name(self, name: str) -> Tensor:
        if ":" not in name:
            raise InvalidArgumentError(f"tensor names look like 'op_name:0', got {name!r}")
        op_name, idx = name.rsplit(":", 1)
        op = self.get_operation_by_name(op_name)
        try:
            return op.outputs[int(idx)]
        except (IndexError, ValueError):
            raise NotFoundError(f"operation {op_name!r} has no output {idx}") from None

    def as_graph_element(self, obj: Any, allow_tensor: bool = True, allow_operation: bool = True) -> Any:
        """Resolves a Tensor, Operation, Variable or name to an element of this graph."""
        conv = getattr(obj, "_as_graph_element", None)
        if conv is not None:
            obj = conv()
        if isinstance(obj, str):
            if ":" in obj and allow_tensor:
                return self.get_tensor_by_name(obj)
            if allow_operation:
                return self.get_operation_by_name(obj)
            raise InvalidArgumentError(f"{obj!r} names an operation; a tensor name ends in ':0'")
        if isinstance(obj, Tensor) and allow_tensor:
            if obj.graph is not self:
                raise InvalidArgumentError(
                    f"tensor {obj.name} is not an element of this graph: it belongs to another cf.Graph "
                    "(build it inside `with graph.as_default():` of the session's graph)", obj.op)
            return obj
        if isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise InvalidArgumentError(
                    f"operation {obj.name} is not an element of this graph: it belongs to another cf.Graph", obj)
            return obj
        raise TypeError(f"cannot interpret {obj!r} as an element of the graph")

    # -- collections ------------------------------------------------------------------
    def add_to_collection(self, name: str, value: Any) -> None:
        self._collections.setdefault(name, []).append(value)

    def get_collection(self, name: str, scope: Optional[str] = None) -> list:
        items = list(self._collections.get(name, []))
        if scope is None:
            return items
        pat = re.compile(scope)
        return [x for x in items if pat.match(getattr(x, "name", ""))]

    def get_collection_ref(self, name: str) -> list:
        return self._collections.setdefault(name, [])

    def clear_collection(self, name: str) -> None:
        """Removes the collection `name` (nothing happens if there is none)."""
        self._collections.pop(name, None)

    def get_all_collection_keys(self) -> List[str]:
        return list(self._collections)

    # -- export -----------------------------------------------------------------------
    def as_graph_def(self, from_version: Any = None, add_shapes: bool = False) -> Any:
        """The graph as a GraphDef message: one node per op (name, type, inputs, device) with
        its attributes in collflow's encoding (train/graph_def_io.py: tf.import_graph_def and
        tf.graph_util read them; TensorFlow cannot import them: docs/tf1_compat.md)."""
        build = _GRAPH_DEF_BUILDER.get("fn")
        if build is None:
            raise RuntimeError("as_graph_def needs collflow.summary (import collflow)")
        return build(self)

    @property
    def graph_def(self) -> Any:
        return self.as_graph_def()

    # -- lifecycle ------------------------------------------------------------------
    def finalize(self) -> None:
        """Makes the graph read-only: adding an op afterwards raises."""
        self._finalized = True

    @property
    def finalized(self) -> bool:
        return self._finalized

    @property
    def version(self) -> int:
        return self._version

    def fingerprint(self) -> str:
        """A SHA-256 over op names, types, inputs, shapes, dtypes and attributes."""
        h = hashlib.sha256()
        for op in self._ops:
            h.update(op.name.encode())
            h.update(op.type.encode())
            for t in op.inputs:
                h.update(t.name.encode())
            for c in op.control_inputs:
                h.update(("^" + c.name).encode())
            for k in sorted(op.attrs):
                h.update(k.encode())
                h.update(_attr_repr(op.attrs[k]).encode())
            for t in op.outputs:
                h.update(f"{t.dtype.name}{t.shape}".encode())
        return h.hexdigest()

    def __repr__(self) -> str:
        return f"<cf.Graph with {len(self._ops)} ops>"


def _attr_repr(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"nd{v.dtype}{v.shape}:" + hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()
    if isinstance(v, _dt.DType):
        return v.name
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_attr_repr(x) for x in v) + "]"
    if isinstance(v, Tensor):
        return "T:" + v.name
    if hasattr(v, "fingerprint_repr"):
        return v.fingerprint_repr()
    return repr(v)


# -- the default-graph stack ------------------------------------------------------
_global_graph = Graph()
_tls = threading.local()


def recording_tapes() -> list:
    """The GradientTapes recording on this thread (graph/gradient_tape.py pushes and pops them)."""
    st = getattr(_tls, "tapes", None)
    if st is None:
        st = _tls.tapes = []
    return st


_session_tls = threading.local()


def _session_stack() -> list:
    """The thread's stack of default sessions (runtime/session.py pushes and pops it)."""
    st = getattr(_session_tls, "stack", None)
    if st is None:
        st = []
        _session_tls.stack = st
    return st


def _session_for(el: Any, session: Any, what: str) -> Any:
    """The session eval()/run() uses: TF1 refuses one of another graph (ValueError)."""
    sess = session or get_default_session()
    if sess is None:
        raise ValueError(f"Cannot {what}: eval()/run() needs a session and no default session is "
                         "registered (pass session= or use `with sess.as_default():`)")
    if getattr(sess, "graph", el.graph) is not el.graph:
        which = "given" if session is not None else "default"
        raise ValueError(f"Cannot use the {which} session to {what}: its graph is different from the "
                         "session's graph.")
    return sess


def get_default_session() -> Any:
    """The innermost `with sess.as_default():` session of this thread, or None."""
    st = _session_stack()
    return st[-1] if st else None


def _default_stack() -> List[Graph]:
    st = getattr(_tls, "stack", None)
    if st is None:
        st = []
        _tls.stack = st
    return st


def get_default_graph() -> Graph:
    """The innermost graph made default with `as_default()`, else the global graph."""
    st = _default_stack()
    return st[-1] if st else _global_graph


def reset_default_graph() -> None:
    """Replaces the global default graph with a new, empty one."""
    global _global_graph
    if _default_stack():
        raise RuntimeError("reset_default_graph() inside a `with graph.as_default()` block")
    _global_graph = Graph()


@contextlib.contextmanager
def name_scope(name: Optional[str], default_name: Optional[str] = None, values: Any = None) -> Iterator[str]:
    """TF1's tf.name_scope(name, default_name=None, values=None), the form library code uses:
    `default_name` when name is None; the scope opens in the graph of the tensors in `values`
    (made the default graph inside), else in the default graph."""
    scope_name = default_name if name is None else name
    g = next((v.graph for v in (values or ()) if isinstance(v, (Tensor, Operation))), None)
    if g is None or g is get_default_graph():
        with get_default_graph().name_scope(scope_name) as scope:
            yield scope
    else:
        with g.as_default(), g.name_scope(scope_name) as scope:
            yield scope


def device(spec: Optional[str]) -> Any:
    return get_default_graph().device(spec)


def control_dependencies(control_inputs: Optional[Iterable[Any]]) -> Any:
    return get_default_graph().control_dependencies(control_inputs)


def init_scope() -> Any:
    """tf.init_scope(): see Graph.init_scope."""
    return get_default_graph().init_scope()


def add_to_collection(name: str, value: Any) -> None:
    get_default_graph().add_to_collection(name, value)


def get_collection(key: str, scope: Optional[str] = None) -> list:
    """The default graph's collection `key` (TF1's name), filtered by `scope` (a regex from the start)."""
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key: str) -> list:
    """The default graph's collection list itself (changes to it change the collection)."""
    return get_default_graph().get_collection_ref(key)


def add_to_collections(names: Any, value: Any) -> None:
    """Adds value to each collection in names (one name or a list)."""
    for n in ([names] if isinstance(names, str) else list(dict.fromkeys(names))):
        add_to_collection(n, value)


# -- conversion to Tensor ------------------------------------------------------------
_CONVERTERS: List[Tuple[type, Callable]] = []


def register_tensor_conversion(cls: type, fn: Callable) -> None:
    """fn(value, dtype) -> Tensor for values of class `cls` (Variables, IndexedSlices)."""
    _CONVERTERS.append((cls, fn))


def is_tensor(x: Any) -> bool:
    """Whether x is a graph value: a Tensor, IndexedSlices, SparseTensor or Variable (tf.is_tensor), not a
    Python or NumPy value."""
    if isinstance(x, Tensor):
        return True
    from .indexed_slices import IndexedSlices
    from .sparse_tensor import SparseTensor
    return isinstance(x, (IndexedSlices, SparseTensor)) or isinstance(getattr(x, "handle", None), Tensor)


def convert_to_tensor(value: Any, dtype: Any = None, name: Optional[str] = None,
                      graph: Optional[Graph] = None) -> Tensor:
    """A Tensor as is, a Variable's value, or a constant made from a NumPy/Python value."""
    if isinstance(value, Tensor):
        if dtype is not None and _dt.as_dtype(dtype) != value.dtype:
            raise InvalidArgumentError(
                f"tensor {value.name} has dtype {value.dtype.name}, but {_dt.as_dtype(dtype).name} was requested")
        return value
    for cls, fn in _CONVERTERS:
        if isinstance(value, cls):
            return fn(value, dtype)
    if isinstance(value, Operation):
        raise TypeError(f"an Operation ({value.name}) cannot be used as a tensor; use one of its outputs")
    if value is None:
        # NumPy would make it a NaN (float) or an object array: TensorFlow refuses it too
        raise ValueError("None values not supported (a tensor was expected: did a function return None, or "
                         "cf.gradients find no path?)")
    if isinstance(value, (list, tuple)) and _holds_tensor(value):
        return _autopack(value, dtype, name)
    from .ops.constant_op import constant
    g = graph or get_default_graph()
    with g.as_default():
        return constant(value, dtype=dtype, name=name or "Const")


def _holds_tensor(value: Any) -> bool:
    """Whether a (nested) list/tuple has a Tensor (or something converting to one) inside."""
    for v in value:
        if isinstance(v, Tensor) or any(isinstance(v, cls) for cls, _ in _CONVERTERS):
            return True
        if isinstance(v, (list, tuple)) and _holds_tensor(v):
            return True
    return False


def _autopack(value: Any, dtype: Any, name: Optional[str]) -> Tensor:
    """[t0, 1, t2] -> stack([t0, 1, t2]) as TensorFlow does (e.g. zeros([tf.shape(x)[0], 12])):
    the Python numbers take the dtype of the tensors among them."""
    from .ops.array_ops import stack
    dt = _dt.as_dtype(dtype) if dtype is not None else None
    if dt is None:
        for v in value:
            t = v if isinstance(v, Tensor) else None
            if t is None and not isinstance(v, (list, tuple, int, float, bool)) and not hasattr(v, "dtype"):
                t = convert_to_tensor(v)
            if t is not None:
                dt = t.dtype
                break
    parts = [convert_to_tensor(v, dtype=dt) if not isinstance(v, Tensor) else v for v in value]
    return stack(parts, axis=0, name=name or "packed")


# the GraphDef builder lives with the protocol buffers (summary/proto.py), above this layer
_GRAPH_DEF_BUILDER: Dict[str, Callable[[Graph], Any]] = {}


def register_graph_def_builder(fn: Callable[[Graph], Any]) -> None:
    _GRAPH_DEF_BUILDER["fn"] = fn
