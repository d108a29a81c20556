"""cf.Variable: mutable state that outlives a run, living in the Session's container."""
from __future__ import annotations

import contextlib
from contextlib import nullcontext as _nullcontext
from typing import Any, Callable, Iterator, List, Optional, Sequence, Union

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from . import graph as _g
from .graph import GraphKeys
from .ops import state_ops
from .ops.constant_op import group
from .ops.op_util import make_op
from .shape import TensorShape, as_shape

__all__ = ["Variable", "variable_creator_scope", "global_variables", "trainable_variables", "local_variables",
           "model_variables", "moving_average_variables",
           "global_variables_initializer", "variables_initializer", "local_variables_initializer",
           "tables_initializer", "report_uninitialized_variables", "assert_variables_initialized"]


# TF 1.15's keywords a tf.variable_creator_scope creator receives, in its order
_CREATOR_KEYS = ("initial_value", "trainable", "collections", "validate_shape", "caching_device", "name",
                 "variable_def", "dtype", "expected_shape", "import_scope", "constraint", "use_resource",
                 "synchronization", "aggregation", "shape")


class _VariableMeta(type):
    """Routes `Variable(...)` through the creators of the open tf.variable_creator_scopes
    (innermost first), as TF1's VariableV1 metaclass; subclasses are built directly."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        creators = _g.get_default_graph()._stack("variable_creator")
        if cls is not Variable or not creators:
            return super().__call__(*args, **kwargs)
        import inspect
        from .ops.misc_more_ops import VariableAggregation, VariableSynchronization
        bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs)
        given = dict(bound.arguments)
        given.pop("self")
        given.setdefault("trainable", None)  # TF1 passes None: the default creator decides
        given.setdefault("synchronization", VariableSynchronization.AUTO)
        given.setdefault("aggregation", VariableAggregation.NONE)
        defaults = {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()}
        kw = {k: given.get(k, defaults.get(k)) for k in _CREATOR_KEYS}

        def default_creator(**kw: Any) -> "Variable":
            if kw.get("trainable") is None:
                kw["trainable"] = True
            return type.__call__(cls, **kw)

        nxt: Callable[..., Any] = default_creator
        for creator in creators:  # outermost first, so the innermost ends up called first
            nxt = (lambda c, n: lambda **k: c(n, **k))(creator, nxt)
        return nxt(**kw)


class Variable(metaclass=_VariableMeta):
    """A mutable tensor (TensorFlow 1.x `tf.Variable`).

    `initial_value` is a Tensor, a NumPy/Python value, or a callable returning one.  The
    variable's storage lives in each Session's resource container; `initializer` sets it.
    Used in an expression, a Variable reads its current value.
    """

    __array_priority__ = 100
    # a projection applied after each optimizer update (TF1's `constraint=`); None: none
    _constraint: Optional[Callable[[Any], Any]] = None

    def __init__(self, initial_value: Any = None, trainable: bool = True, name: Optional[str] = None,
                 dtype: Any = None, shape: Any = None, collections: Optional[Sequence[str]] = None,
                 validate_shape: bool = True, constraint: Optional[Callable[[Any], Any]] = None, *,
                 caching_device: Any = None, use_resource: Any = None, expected_shape: Any = None,
                 synchronization: Any = None, aggregation: Any = None, variable_def: Any = None,
                 import_scope: Optional[str] = None):
        # TF1's other keywords: caching_device (one device per rank here), use_resource (every
        # collflow variable is a resource variable) and the distribution hints change nothing;
        # expected_shape is checked as TF1's deprecated argument did (as `shape`)
        if variable_def is not None:
            raise NotImplementedError("tf.Variable(variable_def=...): collflow rebuilds variables from its own meta "
                                      "graphs (tf.train.import_meta_graph), not from a VariableDef")
        if expected_shape is not None and shape is None:
            shape = expected_shape
        if initial_value is None:
            raise ValueError("Variable needs an initial_value")
        if constraint is not None and not callable(constraint):
            raise ValueError("The `constraint` argument must be a callable.")
        self._constraint = constraint
        g = _g.get_default_graph()
        if isinstance(initial_value, _g.Tensor):
            g = initial_value.graph
        base = name or "Variable"
        vname = g.unique_name(base, mark_as_used=False)
        if isinstance(initial_value, _g.Tensor) and initial_value.op._ctx is not None:
            raise ValueError(
                f"Initializer for variable {vname} is from inside a control-flow construct, such as a loop or "
                "conditional. When creating a variable inside a loop or conditional, use a lambda as the "
                "initializer.")
        # a variable lives outside any loop or cond it is created in (TensorFlow lifts its
        # initializer out): one variable, initialized once, not one per iteration
        prev_ctx = g._get_control_flow_context()
        g._set_control_flow_context(None)
        try:
            self._build(g, vname, initial_value, trainable, dtype, shape, collections, validate_shape)
        finally:
            g._set_control_flow_context(prev_ctx)

    def _build(self, g: _g.Graph, vname: str, initial_value: Any, trainable: bool, dtype: Any, shape: Any,
               collections: Optional[Sequence[str]], validate_shape: bool) -> None:
        with g.as_default():
            with g.name_scope(vname + "/"), g.control_dependencies(None) if callable(initial_value) else _nullcontext():
                iv = initial_value() if callable(initial_value) else initial_value
                init = _g.convert_to_tensor(iv, dtype=dtype, name="initial_value")
            if init.op._ctx is not None:
                raise ValueError(
                    f"Initializer for variable {vname} is from inside a control-flow construct, such as a loop or "
                    "conditional. When creating a variable inside a loop or conditional, use a lambda as the "
                    "initializer.")
            dt = _dt.as_dtype(dtype) if dtype is not None else init.dtype
            if init.dtype != dt:
                raise InvalidArgumentError(
                    f"Variable {vname!r}: initial value has dtype {init.dtype.name}, not {dt.name}")
            shp = as_shape(shape) if shape is not None else init.shape
            if validate_shape and not shp.is_compatible_with(init.shape):
                raise InvalidArgumentError(
                    f"Variable {vname!r}: initial value shape {init.shape} is incompatible with {shp}")
            with g.name_scope(None), g.control_dependencies(None):
                self._handle_op = g.create_op("VarHandle", [], {"dtype": dt, "shape": shp, "shared_name": vname},
                                              name=vname)
            self.handle = self._handle_op.outputs[0]
            with g.name_scope(vname + "/"), g.control_dependencies(None):
                self._initializer_op = make_op("AssignVariable", [self.handle, init],
                                               {"validate_shape": validate_shape}, name="Assign")
                self._snapshot = make_op("ReadVariable", [self.handle], name="read").outputs[0]
        self._initial_value = init
        self._dtype = dt
        self._shape = shp
        self._trainable = trainable
        self._name = vname
        self._graph = g
        cols = list(collections) if collections is not None else [GraphKeys.GLOBAL_VARIABLES]
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in cols:
            cols.append(GraphKeys.TRAINABLE_VARIABLES)
        for c in cols:
            g.add_to_collection(c, self)

    @classmethod
    def _from_graph(cls, handle_op: _g.Operation, initializer_op: _g.Operation, snapshot: _g.Tensor,
                    initial_value: _g.Tensor, trainable: bool) -> "Variable":
        """A Variable over ops already in a graph (import_meta_graph rebuilds variables so)."""
        v = cls.__new__(cls)
        v._handle_op = handle_op
        v.handle = handle_op.outputs[0]
        v._initializer_op = initializer_op
        v._snapshot = snapshot
        v._initial_value = initial_value
        v._dtype = _dt.as_dtype(handle_op.attrs["dtype"])
        v._shape = as_shape(handle_op.attrs["shape"])
        v._trainable = bool(trainable)
        v._name = handle_op.name
        v._graph = handle_op.graph
        return v

    def _initialize_from(self, value: _g.Tensor) -> None:
        """Makes the initializer assign `value` instead (tf.train.init_from_checkpoint): an
        Assign in the variable's name scope, outside any control dependencies, as _build's."""
        g = self._graph
        with g.as_default(), g.name_scope(None), g.control_dependencies(None), g.name_scope(self._name + "/"):
            self._initializer_op = make_op("AssignVariable", [self.handle, value], {"validate_shape": True},
                                           name="Assign")
        self._initial_value = value

    # -- properties --------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name + ":0"

    @property
    def op(self) -> _g.Operation:
        return self._handle_op

    @property
    def graph(self) -> _g.Graph:
        return self._graph

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    @property
    def constraint(self) -> Optional[Callable[[Any], Any]]:
        """The function optimizers apply to the variable after each update (None: none)."""
        return self._constraint

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def initializer(self) -> _g.Operation:
        return self._initializer_op

    @property
    def initial_value(self) -> _g.Tensor:
        return self._initial_value

    @property
    def device(self) -> Optional[str]:
        return self._handle_op.device

    # -- reading ------------------------------------------------------------------------
    def value(self) -> _g.Tensor:
        """The variable's value as a Tensor.

        Inside a control_dependencies block, a while-loop body or a cond branch this is a fresh
        read: it runs after those dependencies, or in every iteration of the loop (seeing the
        writes of earlier iterations, as TF1's reads do); otherwise the variable's shared read.
        """
        g = self._graph
        if g._current_control_inputs() or g._get_control_flow_context() is not None or _g.recording_tapes():
            return self.read_value()  # a GradientTape recording: a read it records, as TF's each read
        return self._snapshot

    def read_value(self) -> _g.Tensor:
        """A new read op (honouring the current control dependencies)."""
        g = self._graph
        for tape in _g.recording_tapes():  # TF's variable_accessed: a tape may watch the variable
            tape._variable_accessed(self)
        with g.as_default(), g.name_scope(self._name + "/"):
            return g.create_op("ReadVariable", [self.handle], name="Read").outputs[0]

    def _as_graph_element(self) -> _g.Tensor:
        return self._snapshot

    def eval(self, session: Any = None) -> Any:
        return self._snapshot.eval(session=session)

    def load(self, value: Any, session: Any = None) -> None:
        """Sets the value from NumPy without adding ops on every call."""
        sess = session or _g.get_default_session()
        if sess is None:
            raise ValueError("Variable.load() needs a session")
        sess._load_variable(self, value)

    # -- writing ------------------------------------------------------------------------
    # TF1's signatures: use_locking is accepted (updates are atomic here); read_value=False
    # gives the update op instead of the new value
    def assign(self, value: Any, use_locking: Optional[bool] = None, name: Optional[str] = None,
               read_value: bool = True) -> Any:
        t = state_ops.assign(self, value, name=name)
        return t if read_value else t.op

    def assign_add(self, value: Any, use_locking: Optional[bool] = None, name: Optional[str] = None,
                   read_value: bool = True) -> Any:
        t = state_ops.assign_add(self, value, name=name)
        return t if read_value else t.op

    def assign_sub(self, value: Any, use_locking: Optional[bool] = None, name: Optional[str] = None,
                   read_value: bool = True) -> Any:
        t = state_ops.assign_sub(self, value, name=name)
        return t if read_value else t.op

    def count_up_to(self, limit: int) -> _g.Tensor:
        """Increments this integer variable until `limit` (then OutOfRangeError); the value before."""
        return state_ops.count_up_to(self, limit)

    def scatter_sub(self, indices: Any, updates: Any) -> _g.Tensor:
        return state_ops.scatter_sub(self, indices, updates)

    def __repr__(self) -> str:
        return f"<cf.Variable {self.name!r} shape={self._shape} dtype={self._dtype.name}>"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    # operators: act on the value
    def __add__(self, o): return self.value() + o
    def __radd__(self, o): return o + self.value()
    def __sub__(self, o): return self.value() - o
    def __rsub__(self, o): return o - self.value()
    def __mul__(self, o): return self.value() * o
    def __rmul__(self, o): return o * self.value()
    def __truediv__(self, o): return self.value() / o
    def __rtruediv__(self, o): return o / self.value()
    def __pow__(self, o): return self.value() ** o
    def __matmul__(self, o): return self.value() @ o
    def __rmatmul__(self, o): return o @ self.value()
    def __neg__(self): return -self.value()
    def __getitem__(self, k): return self.value()[k]
    def __lt__(self, o): return self.value() < o
    def __le__(self, o): return self.value() <= o
    def __gt__(self, o): return self.value() > o
    def __ge__(self, o): return self.value() >= o
    # the rest of Tensor's operators, as TF's Variable overloads them all
    def __floordiv__(self, o): return self.value() // o
    def __rfloordiv__(self, o): return o // self.value()
    def __mod__(self, o): return self.value() % o
    def __rmod__(self, o): return o % self.value()
    def __rpow__(self, o): return o ** self.value()
    def __abs__(self): return abs(self.value())
    def __and__(self, o): return self.value() & o
    def __rand__(self, o): return o & self.value()
    def __or__(self, o): return self.value() | o
    def __ror__(self, o): return o | self.value()
    def __xor__(self, o): return self.value() ^ o
    def __rxor__(self, o): return o ^ self.value()
    def __invert__(self): return ~self.value()


_g.register_tensor_conversion(Variable, lambda v, dtype: _check_dtype(v.value(), dtype))


def _check_dtype(t: _g.Tensor, dtype: Any) -> _g.Tensor:
    if dtype is not None and _dt.as_dtype(dtype) != t.dtype:
        raise InvalidArgumentError(f"variable {t.op.inputs[0].op.name} has dtype {t.dtype.name}, "
                                   f"but {_dt.as_dtype(dtype).name} was requested")
    return t


def global_variables(scope: Optional[str] = None) -> List[Variable]:
    return _g.get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def local_variables(scope: Optional[str] = None) -> List[Variable]:
    return _g.get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def trainable_variables(scope: Optional[str] = None) -> List[Variable]:
    return _g.get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def model_variables(scope: Optional[str] = None) -> List[Variable]:
    return _g.get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope: Optional[str] = None) -> List[Variable]:
    """The variables an ExponentialMovingAverage.apply averages (TF1's collection)."""
    return _g.get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def variables_initializer(var_list: Sequence[Variable], name: str = "init") -> _g.Operation:
    """One op running the initializers of `var_list`."""
    return group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer() -> _g.Operation:
    """One op that initializes every global variable of the default graph."""
    return variables_initializer(global_variables(), name="init")


def local_variables_initializer() -> _g.Operation:
    return variables_initializer(local_variables(), name="init_local")


def tables_initializer(name: str = "init_all_tables") -> _g.Operation:
    """One op running the initializers in the TABLE_INITIALIZERS collection (TF1's lookup
    tables; collflow has none of its own, so usually a no-op that TF1 programs run anyway)."""
    return group(*_g.get_collection(GraphKeys.TABLE_INITIALIZERS), name=name)


def report_uninitialized_variables(var_list: Optional[Sequence[Variable]] = None,
                                   name: str = "report_uninitialized_variables") -> _g.Tensor:
    """A 1-D string tensor: the names (op names, as TF1) of the variables of `var_list` (default:
    global and local) not initialized when it runs."""
    from .ops import array_ops, index_ops, math_ops
    from .ops.constant_op import constant
    vs = list(global_variables() + local_variables() if var_list is None else var_list)
    flags = [state_ops.is_variable_initialized(v) for v in vs]
    g = _g.get_default_graph()
    with g.name_scope(name):
        if not vs:
            return constant(np.zeros((0,), dtype=object).astype(str), name="empty")
        names = constant(np.array([v.op.name for v in vs]), name="names")
        return index_ops.boolean_mask(names, math_ops.logical_not(array_ops.stack(flags)), name="uninitialized")


def assert_variables_initialized(var_list: Optional[Sequence[Variable]] = None) -> Optional[_g.Operation]:
    """An op that reads every variable of `var_list` (default: global and local): running it
    raises FailedPreconditionError naming an uninitialized one, as TF1's (whose op also
    returns the variables' ranks; this one returns nothing).  None for no variables."""
    vs = list(global_variables() + local_variables() if var_list is None else var_list)
    if not vs:
        return None
    return group(*[v.value().op for v in vs], name="assert_variables_initialized")


def snapshot_of_handle(t: _g.Tensor) -> Optional[_g.Tensor]:
    """The shared read of the variable whose VarHandle output is `t` (what TF1 gives for the
    variable's own name "v:0", a reference variable's value), or None when t is no such handle."""
    if t.dtype != _dt.resource or t.op.type != "VarHandle":
        return None
    want = t.op.name + "/read"
    for c in t._consumers:
        if c.type == "ReadVariable" and c.name == want:
            return c.outputs[0]
    return None


@contextlib.contextmanager
def variable_creator_scope(variable_creator: Callable[..., Any]) -> Iterator[None]:
    """tf.variable_creator_scope: `Variable(...)` (get_variable's too) calls
    `variable_creator(next_creator, **kwargs)` in the block, kwargs TF 1.15's (initial_value,
    trainable, collections, validate_shape, caching_device, name, variable_def, dtype,
    expected_shape, import_scope, constraint, use_resource, synchronization, aggregation,
    shape); `next_creator(**kwargs)` is the next outer creator, or the variable's own."""
    st = _g.get_default_graph()._stack("variable_creator")
    st.append(variable_creator)
    try:
        yield
    finally:
        st.pop()
