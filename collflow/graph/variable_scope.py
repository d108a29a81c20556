"""Variable scopes and variable sharing (TensorFlow 1.x `tf.variable_scope`, `tf.get_variable`).

A variable scope names the variables `get_variable` makes ("scope/name", whatever name scope
is open) and says whether they may be shared:

    with cf.variable_scope("disc"):                    # creates disc/w
        w = cf.get_variable("w", [4, 1])
    with cf.variable_scope("disc", reuse=True):        # returns the same disc/w
        w2 = cf.get_variable("w")
    with cf.variable_scope("gen", reuse=cf.AUTO_REUSE):  # creates on first use, then shares

As in TensorFlow 1.x: `get_variable` of an existing name without reuse raises ValueError, and
of a missing one under reuse=True too; reuse is inherited by sub-scopes and cannot be turned
off inside a reusing scope (reuse=False means "inherit"); a scope's initializer, regularizer,
dtype and partitioner are the defaults of the `get_variable` calls inside it.  Re-entering a
named scope restarts the numbering of the unnamed sub-scopes in it (`dense`, `dense_1`, ...),
so a function building layers can be called twice, the second time with reuse=True, and find
the same variables.  Variable scopes also open a name scope for the ops built inside them.

The scope stack is per graph and thread; the store of shared variables is per graph.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Dict, Iterator, List, Optional

import inspect

import numpy as np

from .. import dtypes as _dt
from . import graph as _g
from . import initializers as _inits
from .graph import GraphKeys
from .shape import as_shape
from .variables import Variable

__all__ = ["VariableScope", "variable_scope", "get_variable_scope", "get_variable", "get_local_variable",
           "AUTO_REUSE", "variable_op_scope", "no_regularizer", "fixed_size_partitioner",
           "min_max_variable_partitioner", "variable_axis_size_partitioner"]


def no_regularizer(_: Any) -> None:
    """A regularizer that adds nothing (tf.no_regularizer: turns off a scope's regularizer for
    one variable)."""
    return None


class _ReuseMode:
    """The type of AUTO_REUSE: create a variable if missing, share it otherwise."""

    def __repr__(self) -> str:
        return "AUTO_REUSE"


AUTO_REUSE = _ReuseMode()


class VariableScope:
    """A scope's name and the defaults of the `get_variable` calls made in it."""

    def __init__(self, reuse: Any = None, name: str = "", initializer: Any = None, regularizer: Any = None,
                 dtype: Any = _dt.float32, partitioner: Any = None, name_scope: str = "",
                 constraint: Any = None):
        self._name = name
        self._constraint = constraint
        self._reuse = reuse
        self._initializer = initializer
        self._regularizer = regularizer
        self._dtype = _dt.as_dtype(dtype) if dtype is not None else _dt.float32
        self._partitioner = partitioner
        self._name_scope = name_scope

    @property
    def name(self) -> str:
        return self._name

    @property
    def original_name_scope(self) -> str:
        return self._name_scope

    @property
    def reuse(self) -> Any:
        return self._reuse

    @property
    def initializer(self) -> Any:
        return self._initializer

    @property
    def regularizer(self) -> Any:
        return self._regularizer

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def partitioner(self) -> Any:
        return self._partitioner

    @property
    def constraint(self) -> Any:
        """The default `constraint` of get_variable in this scope (TF1's variable_scope(constraint=))."""
        return self._constraint

    def reuse_variables(self) -> None:
        """Shares variables from now on in this scope (and the scopes opened inside it)."""
        self._reuse = True

    def set_initializer(self, initializer: Any) -> None:
        self._initializer = initializer

    def set_regularizer(self, regularizer: Any) -> None:
        self._regularizer = regularizer

    def set_dtype(self, dtype: Any) -> None:
        self._dtype = _dt.as_dtype(dtype)

    def set_partitioner(self, partitioner: Any) -> None:
        self._partitioner = partitioner

    def get_variable(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """`get_variable` inside this scope."""
        with variable_scope(self):
            return get_variable(name, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<cf.VariableScope {self._name!r} reuse={self._reuse!r}>"


class VarStore:
    """Per graph: the variables `get_variable` made, by full name, and scope-use counts."""

    def __init__(self) -> None:
        self.variables: Dict[str, Any] = {}
        self.scope_counts: Dict[str, int] = {}

    def open_scope(self, name: str) -> None:
        self.scope_counts[name] = self.scope_counts.get(name, 0) + 1

    def close_subscopes(self, name: str) -> None:
        """Restarts the numbering of unnamed scopes under `name` (it was re-entered)."""
        prefix = name + "/" if name else ""
        for k in list(self.scope_counts):
            if k.startswith(prefix) and k != name:
                self.scope_counts[k] = 0

    def unique_scope(self, parent: str, prefix: str) -> str:
        """`prefix`, or prefix_1, prefix_2, ...: the first not yet opened under `parent`."""
        full = f"{parent}/{prefix}" if parent else prefix
        if self.scope_counts.get(full, 0) == 0:
            return prefix
        i = 1
        while self.scope_counts.get(f"{full}_{i}", 0) > 0:
            i += 1
        return f"{prefix}_{i}"


def var_store(graph: _g.Graph) -> VarStore:
    st = graph._var_store
    if st is None:
        st = graph._var_store = VarStore()
    return st


def get_variable_scope() -> VariableScope:
    """The current variable scope of the default graph (the root scope, named "", outside any)."""
    g = _g.get_default_graph()
    st = g._stack("variable_scope")
    if not st:
        st.append(VariableScope())
    return st[-1]


@contextlib.contextmanager
def variable_scope(name_or_scope: Any, default_name: Optional[str] = None, values: Any = None,
                   initializer: Any = None, regularizer: Any = None, caching_device: Any = None,
                   partitioner: Any = None, custom_getter: Any = None, reuse: Any = None, dtype: Any = None,
                   use_resource: Any = None, constraint: Any = None,
                   auxiliary_name_scope: bool = True) -> Iterator[VariableScope]:
    """Opens a variable scope (and a name scope of the same name) for the block.

    name_or_scope: a name, a VariableScope (re-entered: its name and defaults, and, as TF1, a
    new name scope of its last name component), or None with `default_name`
    (made unique: default_name, default_name_1, ...).  reuse: True, AUTO_REUSE or None/False
    (inherit the enclosing scope's).  initializer, regularizer, dtype, partitioner: defaults
    for get_variable inside.  values: tensors whose graph becomes the default.
    """
    if custom_getter is not None:
        raise NotImplementedError("variable_scope: custom_getter is not supported")
    if name_or_scope is None and default_name is None:
        raise ValueError("variable_scope: give name_or_scope or default_name")
    if name_or_scope is None and reuse is True:
        raise ValueError("reuse=True cannot be used without a name_or_scope")
    g = _graph_of(values)
    with g.as_default():
        old = get_variable_scope()
        store = var_store(g)
        if isinstance(name_or_scope, VariableScope):
            # re-entered: its own name and defaults (a new name scope, below); reuse as it was
            base, full, rel = name_or_scope, name_or_scope.name, None
            new_reuse = reuse if reuse not in (None, False) else name_or_scope.reuse
        else:
            rel = str(name_or_scope) if name_or_scope is not None else store.unique_scope(old.name, str(default_name))
            base, full = old, (f"{old.name}/{rel}" if old.name else rel)
            new_reuse = reuse if reuse not in (None, False) else old.reuse
        # TF1: `reuse or <inherited>`: inside a reuse=True scope a named sub-scope reuses
        # (reuse=False cannot undo it) but one opened with AUTO_REUSE is AUTO_REUSE; a scope
        # object re-entered keeps its own reuse, whatever the enclosing scope's
        store.open_scope(full)
        # TF1's numbering of unnamed sub-scopes (dense, dense_1, ...): leaving a scope opened by
        # name restarts it (so re-entering the name later starts at dense again); a scope object
        # re-entered goes on from where its numbering was, and leaving it undoes what was
        # opened inside
        saved = dict(store.scope_counts) if rel is None else None
        try:
            yield from _enter_scope(g, old, store, name_or_scope, default_name, rel, base, full, new_reuse,
                                    initializer, regularizer, dtype, partitioner, constraint,
                                    auxiliary_name_scope)
        finally:
            if saved is not None:
                store.scope_counts.clear()
                store.scope_counts.update(saved)
            else:
                store.close_subscopes(full)


def _enter_scope(g: _g.Graph, old: Any, store: Any, name_or_scope: Any, default_name: Any, rel: Any, base: Any,
                 full: str, new_reuse: Any, initializer: Any, regularizer: Any, dtype: Any, partitioner: Any,
                 constraint: Any, auxiliary_name_scope: bool) -> Any:
    """The body of variable_scope once its name is decided: the name scope and the stack entry."""
    with contextlib.ExitStack() as stack:
        ns = ""
        if auxiliary_name_scope:
            if rel is None:
                # TF1: a re-entered scope object opens a new name scope of its last name
                # component, made unique where it is entered ("foo_1/", "outer/foo/"); its
                # variables keep the scope's own name
                last = name_or_scope.name.split("/")[-1]
                if last:
                    ns = stack.enter_context(g.name_scope(last))
                elif g._current_scope():
                    ns = g._current_scope() + "/"
            else:
                # TF1: without a name, the name scope is default_name made unique among name
                # scopes (which a re-entered scope may have used: dense_1, then dense_2),
                # not the variable scope's own unique name
                for part in (rel if name_or_scope is not None else str(default_name)).split("/"):
                    ns = stack.enter_context(g.name_scope(part))
        elif g._current_scope():
            ns = g._current_scope() + "/"
        scope = VariableScope(
            reuse=new_reuse, name=full,
            initializer=initializer if initializer is not None else base.initializer,
            regularizer=regularizer if regularizer is not None else base.regularizer,
            dtype=dtype if dtype is not None else base.dtype,
            partitioner=partitioner if partitioner is not None else base.partitioner,
            name_scope=ns, constraint=constraint if constraint is not None else base.constraint)
        st = g._stack("variable_scope")
        st.append(scope)
        try:
            yield scope
        finally:
            st.pop()


def layer_variable_scope(name: Any, default_name: str, reuse: Any) -> Any:
    """The variable scope a tf.layers layer call builds in, by TF1's rules: `name` as given;
    unnamed, `default_name` made unique (dense, dense_1, ...) -- or, asked to reuse, taken as
    is, so tf.layers.dense(x, 3, reuse=tf.AUTO_REUSE) twice shares dense/kernel; a layer
    object's own scope re-entered from inside its original name scope opens no second name
    scope (a tf.layers.Dense object called twice puts both calls' ops under dense/)."""
    if name is None:
        return variable_scope(default_name, reuse=reuse) if reuse else \
            variable_scope(None, default_name=default_name, reuse=reuse)
    if isinstance(name, VariableScope) and name.original_name_scope:
        cur = _g.get_default_graph()._current_scope()
        if name.original_name_scope == (cur + "/" if cur else ""):
            return variable_scope(name, reuse=reuse, auxiliary_name_scope=False)
    return variable_scope(name, default_name=default_name, reuse=reuse)


def variable_op_scope(values: Any, name_or_scope: Any, default_name: Optional[str] = None,
                      **kwargs: Any) -> Any:
    """TensorFlow's deprecated spelling of variable_scope(name_or_scope, default_name, values)."""
    return variable_scope(name_or_scope, default_name=default_name, values=values, **kwargs)


def _graph_of(values: Any) -> _g.Graph:
    for v in values or ():
        g = getattr(v, "graph", None)
        if isinstance(g, _g.Graph):
            return g
    return _g.get_default_graph()


# -- get_variable ------------------------------------------------------------------------------

# set by collflow.train.sharded (the layer above): makes a variable sharded over the ranks
# for a `partitioner`; the graph layer cannot import it
_PARTITIONED: Dict[str, Callable[..., Any]] = {}


def register_partitioned_factory(fn: Callable[..., Any]) -> None:
    """fn(full_name, shape, dtype, initializer, partitioner, partition_strategy, trainable, comm)."""
    _PARTITIONED["factory"] = fn


def get_variable(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                 regularizer: Optional[Callable] = None, trainable: Optional[bool] = None,
                 collections: Any = None, caching_device: Any = None, partitioner: Any = None,
                 validate_shape: bool = True, use_resource: Any = None, custom_getter: Any = None,
                 constraint: Any = None, partition_strategy: Optional[str] = None, comm: Any = None,
                 synchronization: Any = None, aggregation: Any = None) -> Any:
    """The variable `name` of the current variable scope: made, or shared under reuse.
    (synchronization and aggregation, TF's distribution-strategy hints, are accepted and
    change nothing: collflow's ranks synchronize by its own rules.)

    Raises ValueError, as TensorFlow 1.x does, for an existing name outside a reusing scope,
    for a missing one under reuse=True, and for a shape or dtype that differs from the
    shared variable's.  initializer: an initializer (default: the scope's, else
    glorot_uniform for floats and zeros otherwise), a NumPy value or a Tensor (shape from
    it).  regularizer: its loss goes to REGULARIZATION_LOSSES.  partitioner: None, or a
    sharding over the ranks ("mod", "div", cf.train.sharded.rank_partitioner(...), or
    TensorFlow's callable) -- see collflow/train/sharded.py.
    """
    if custom_getter is not None:
        raise NotImplementedError("get_variable: custom_getter is not supported")
    g = _g.get_default_graph()
    scope = get_variable_scope()
    full = f"{scope.name}/{name}" if scope.name else str(name)
    store = var_store(g)
    shp = as_shape(shape) if shape is not None else None
    if dtype is None and isinstance(initializer, (_g.Tensor, np.ndarray)):
        dtype = initializer.dtype
    dt = _dt.as_dtype(dtype) if dtype is not None else scope.dtype
    found = store.variables.get(full)
    if found is not None:
        if scope.reuse is None or scope.reuse is False:
            raise ValueError(f"Variable {full} already exists, disallowed. Did you mean to set reuse=True or "
                             f"reuse=cf.AUTO_REUSE in VarScope?")
        if shp is not None and not shp.is_compatible_with(found.shape):
            raise ValueError(f"Trying to share variable {full}, but specified shape {shp} and found shape "
                             f"{found.shape}.")
        if dtype is not None and _dt.as_dtype(dtype) != found.dtype:
            raise ValueError(f"Trying to share variable {full}, but specified dtype {dt.name} and found dtype "
                             f"{found.dtype.name}.")
        return found
    if scope.reuse is True:
        raise ValueError(f"Variable {full} does not exist, or was not created with cf.get_variable(). Did you mean "
                         f"to set reuse=cf.AUTO_REUSE in VarScope?")
    trainable = True if trainable is None else bool(trainable)
    if initializer is None:
        initializer = scope.initializer
    if regularizer is None:
        regularizer = scope.regularizer
    if partitioner is None:
        partitioner = scope.partitioner
    if shp is not None and shp.rank == 0:
        partitioner = None  # TF does not partition a scalar (a global step under a partitioned scope)
    if partitioner is not None:
        factory = _PARTITIONED.get("factory")
        if factory is None:
            raise RuntimeError("partitioned variables need collflow.train (import collflow)")
        v = factory(full, shp, dt, initializer, partitioner, partition_strategy, trainable, comm)
        if v is None:  # the partitioner asked for one partition: a plain variable, as in TF
            v = _plain_variable(g, full, shp, dt, initializer, trainable, collections, validate_shape)
    else:
        v = _plain_variable(g, full, shp, dt, initializer, trainable, collections, validate_shape)
    store.variables[full] = v
    if constraint is None and _CONSTRAINT_DEFAULTS:
        constraint = _CONSTRAINT_DEFAULTS[-1].get(full.rsplit("/", 1)[-1])
    if constraint is None:
        constraint = scope.constraint
    if constraint is not None:
        if not callable(constraint):
            raise ValueError("The `constraint` argument must be a callable.")
        v._constraint = constraint  # optimizers project the variable with it after each update
    if regularizer is not None:
        with g.as_default(), g.name_scope(full + "/Regularizer/"):
            loss = regularizer(v)
        if loss is not None:
            g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return v


# the constraints of the layer being built, by variable name (a Keras/tf.layers layer's
# kernel_constraint for "kernel", ...): the innermost layer's dict only, so a wrapped layer
# (TimeDistributed(Dense)) does not take its wrapper's
_CONSTRAINT_DEFAULTS: List[Dict[str, Callable]] = []


@contextlib.contextmanager
def constraint_defaults(by_name: Dict[str, Callable]) -> Iterator[None]:
    """get_variable inside gives a new variable named `.../<key>` the constraint by_name[key]
    (unless it is given one)."""
    _CONSTRAINT_DEFAULTS.append(dict(by_name))
    try:
        yield
    finally:
        _CONSTRAINT_DEFAULTS.pop()


def get_local_variable(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                       regularizer: Optional[Callable] = None, trainable: bool = False, collections: Any = None,
                       **kwargs: Any) -> Any:
    """get_variable for a LOCAL_VARIABLES variable (not trainable, not saved by default; what
    tf.metrics' counters are), as TF1's tf.get_local_variable."""
    cols = [GraphKeys.LOCAL_VARIABLES] + [c for c in (collections or []) if c != GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape, dtype, initializer, regularizer, False, cols, **kwargs)


def _plain_variable(g: _g.Graph, full: str, shp: Any, dt: _dt.DType, initializer: Any, trainable: bool,
                    collections: Any, validate_shape: bool) -> Variable:
    if isinstance(initializer, (_g.Tensor, np.ndarray, list, tuple, int, float, bool, np.generic)):
        if isinstance(initializer, _g.Tensor):
            value: Any = initializer
            if shp is not None and validate_shape and not shp.is_compatible_with(value.shape):
                raise ValueError(f"get_variable {full}: the initial value has shape {value.shape}, not {shp}")
        else:
            arr = np.asarray(initializer, dtype=dt.np)
            if arr.ndim == 0 and shp is not None:
                if not shp.is_fully_defined():
                    raise ValueError(f"get_variable {full} needs a fully known shape, got {shp}")
                arr = np.full(shp.as_list(), arr.item(), dtype=dt.np)
            elif shp is not None and validate_shape and not shp.is_compatible_with(arr.shape):
                raise ValueError(f"get_variable {full}: the initial value has shape {arr.shape}, not {shp}")
            value = arr
        return _make(g, full, value, dt, trainable, collections, validate_shape)
    if shp is None or not shp.is_fully_defined():
        raise ValueError(f"Shape of a new variable ({full}) must be fully defined, but instead was {shp}.")
    if initializer is None:
        initializer = _inits.GlorotUniform() if dt.is_floating else _inits.Zeros()
    init = _inits.get(initializer)
    dims = shp.as_list()
    if "partition_info" in _parameters(init):
        fn: Callable[[], Any] = lambda: init(dims, dtype=dt, partition_info=None)
    else:
        fn = lambda: init(dims, dt)
    return _make(g, full, fn, dt, trainable, collections, validate_shape)


def _parameters(fn: Any) -> tuple:
    try:
        return tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return ()


def _make(g: _g.Graph, full: str, value: Any, dt: _dt.DType, trainable: bool, collections: Any,
          validate_shape: bool) -> Variable:
    # the variable's own name, whatever name scope is open (TensorFlow's get_variable ignores
    # name scopes; variable scopes name it)
    with g.as_default(), g.name_scope(None):
        return Variable(value, trainable=trainable, name=full, dtype=dt, collections=collections,
                        validate_shape=validate_shape)


# -- TF1's partitioners: callables (shape, dtype) -> partitions per axis ---------------------------


def fixed_size_partitioner(num_shards: int, axis: int = 0) -> Callable[..., List[int]]:
    """num_shards partitions along `axis` (tf.fixed_size_partitioner)."""
    def partitioner(shape: Any, dtype: Any) -> List[int]:
        dims = list(as_shape(shape).as_list())
        out = [1] * len(dims)
        out[axis] = int(num_shards)
        return out
    return partitioner


def _slices(shape: Any, dtype: Any, axis: int, bytes_per_slice: int, max_partitions: Optional[int]) -> List[int]:
    dims = list(as_shape(shape).as_list())
    elems_per_slice = int(np.prod([d for i, d in enumerate(dims) if i != axis])) if len(dims) > 1 else 1
    size = _dt.as_dtype(dtype).np.itemsize if _dt.as_dtype(dtype).np.itemsize else 4
    slices = max(1, -(-dims[axis] * elems_per_slice * size // max(1, bytes_per_slice)))
    slices = min(slices, dims[axis])
    if max_partitions is not None:
        slices = min(slices, int(max_partitions))
    out = [1] * len(dims)
    out[axis] = int(slices)
    return out


def min_max_variable_partitioner(max_partitions: int = 1, axis: int = 0, min_slice_size: int = 256 << 10,
                                 bytes_per_string_element: int = 16) -> Callable[..., List[int]]:
    """As many partitions along `axis` as keep each at least min_slice_size bytes, at most
    max_partitions (tf.min_max_variable_partitioner)."""
    def partitioner(shape: Any, dtype: Any) -> List[int]:
        return _slices(shape, dtype, axis, min_slice_size, max_partitions)
    return partitioner


def variable_axis_size_partitioner(max_shard_bytes: int, axis: int = 0, bytes_per_string_element: int = 16,
                                   max_shards: Optional[int] = None) -> Callable[..., List[int]]:
    """Partitions along `axis` so that no shard exceeds max_shard_bytes, at most max_shards
    (tf.variable_axis_size_partitioner)."""
    if max_shard_bytes < 1:
        raise ValueError(f"max_shard_bytes must be positive, got: {max_shard_bytes}")
    def partitioner(shape: Any, dtype: Any) -> List[int]:
        return _slices(shape, dtype, axis, max_shard_bytes, max_shards)
    return partitioner
