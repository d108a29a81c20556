"""tf.keras.mixed_precision.experimental (TF 1.15) in graph mode: dtype policies for Keras layers.

    tf.keras.mixed_precision.experimental.set_policy("mixed_float16")
    x = tf.keras.layers.Input((8,))
    h = tf.keras.layers.Dense(16, activation="relu")(x)          # float16 output
    y = tf.keras.layers.Dense(1, dtype="float32")(h)             # float32 output
    model.compile("sgd", "mse")   # the optimizer is wrapped in a LossScaleOptimizer("dynamic")

A layer's policy is its `dtype=` (a Policy, a policy name or a dtype) or, without one, the
global policy when the layer is made.  With a compute dtype, the floating inputs of each call
are cast to it; with float32 variables under a float16 compute dtype ("mixed_float16",
"infer_float32_vars"), the layer's floating variables are made in float32 (their TF names,
so checkpoints hold float32 values) and read as the compute dtype inside the call through an
AutoCastVariable.  The default policy, "infer", changes nothing (TF 1.x without policies).
Model.compile wraps the optimizer when the global policy has a loss scale.  tf_keras 2.x's
names are here too: set_global_policy, LossScaleOptimizer(opt, dynamic=, initial_scale=, ...).
Unlike TF, `layer.weights` lists the float32 variables themselves, not their AutoCastVariables.
"""
from __future__ import annotations

import contextlib
import types
from typing import Any, Dict, Iterator, Optional

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph import nest
from ..graph.graph import GraphKeys
from ..graph.ops import math_ops as _m
from ..graph.variables import Variable, variable_creator_scope
from ..train import loss_scale as _ls
from .mixed_precision_optimizer import LossScaleOptimizer

__all__ = ["Policy", "global_policy", "set_policy", "policy_scope", "AutoCastVariable", "policy_of",
           "cast_inputs", "autocast_scope", "LossScaleOptimizer", "set_global_policy", "experimental"]


class _UseDefault:
    def __repr__(self) -> str:
        return "USE_DEFAULT"


USE_DEFAULT = _UseDefault()

# (compute dtype, variable dtype) of the names that are not dtypes; None: the input's dtype
_SPECIAL = {"infer": (None, None), "infer_float32_vars": (None, "float32"),
            "mixed_float16": ("float16", "float32")}


def _parse_name(name: str) -> tuple:
    if name in _SPECIAL:
        return _SPECIAL[name]
    if "bfloat16" in name:
        raise ValueError(f"Policy {name!r}: collflow has no bfloat16 dtype; use 'mixed_float16' or 'float32'")
    try:
        dt = _dt.as_dtype(name)
    except (TypeError, ValueError, KeyError):
        raise ValueError(f"Cannot convert value {name!r} to a mixed precision Policy. Valid policies include "
                         "'mixed_float16', 'infer', 'infer_float32_vars' and the name of any dtype such as "
                         "'float32'.") from None
    return dt.name, dt.name


class Policy:
    """A dtype policy: the dtype a layer computes in and the dtype of its variables.

    name: 'float32', 'float16', 'float64' (or another dtype name), 'mixed_float16' (float16
    computations, float32 variables), 'infer' (both from the first input: TF 1.x's default),
    'infer_float32_vars' (computations in the input's dtype, float32 variables).
    loss_scale: what Model.compile wraps the optimizer with ('dynamic', a number, a
    tf.train.experimental.LossScale or None); by default 'dynamic' for 'mixed_float16' only.
    """

    def __init__(self, name: str, loss_scale: Any = USE_DEFAULT):
        if isinstance(name, _dt.DType):
            raise TypeError(f"'name' must be a string, not a DType. Instead, pass DType.name. Got: {name.name}")
        if not isinstance(name, str):
            raise TypeError(f"'name' must be a string, but got: {name!r}")
        self._name = name
        self._compute_dtype, self._variable_dtype = _parse_name(name)
        if loss_scale is USE_DEFAULT:
            loss_scale = "dynamic" if name == "mixed_float16" else None
        if isinstance(loss_scale, bool) or not (loss_scale is None or loss_scale == "dynamic" or
                                                isinstance(loss_scale, (int, float, _ls.LossScale))):
            raise ValueError(f"Could not interpret loss scale identifier: {loss_scale!r} (use a number >= 1, "
                             "'dynamic' or a tf.train.experimental.LossScale)")
        if isinstance(loss_scale, (int, float)):
            loss_scale = _ls.FixedLossScale(loss_scale)  # no variables: checked and made now
        self._loss_scale_arg = loss_scale
        # a DynamicLossScale's variables live in a graph: one object per graph, made on first use
        self._loss_scales: Dict[Any, Any] = {}

    @property
    def name(self) -> str:
        """The policy's name ('mixed_float16', 'float32', 'infer', ...)."""
        return self._name

    @property
    def compute_dtype(self) -> Optional[str]:
        """The dtype of the layer's computations (None: the inputs' dtype)."""
        return self._compute_dtype

    @property
    def variable_dtype(self) -> Optional[str]:
        """The dtype of the layer's variables (None: the inputs' dtype)."""
        return self._variable_dtype

    default_variable_dtype = variable_dtype  # TF 1.14's name

    @property
    def should_cast_variables(self) -> bool:
        """Whether the variables are read in another dtype than they are stored in."""
        return self._variable_dtype is not None and self._compute_dtype != self._variable_dtype

    @property
    def loss_scale(self) -> Any:
        """The LossScale Model.compile uses (None: none): one per graph (the default graph's)."""
        arg = self._loss_scale_arg
        if arg is None or isinstance(arg, _ls.LossScale):
            return arg
        g = _g.get_default_graph()
        if g not in self._loss_scales:
            with g.as_default():
                self._loss_scales[g] = _ls.get(arg)
        return self._loss_scales[g]

    def get_config(self) -> Dict[str, Any]:
        """{'name': ..., 'loss_scale': ...}: what from_config rebuilds the policy from."""
        arg = self._loss_scale_arg
        if isinstance(arg, _ls.LossScale):
            arg = {"class_name": type(arg).__name__, "config": arg.get_config()}
        return {"name": self._name, "loss_scale": arg}

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "Policy":
        """The policy get_config described."""
        arg = config.get("loss_scale", USE_DEFAULT)
        if isinstance(arg, dict):
            arg = getattr(_ls, arg["class_name"]).from_config(arg["config"])
        return cls(config["name"], loss_scale=arg)

    def __repr__(self) -> str:
        arg = self._loss_scale_arg
        return f'<Policy "{self._name}", loss_scale={arg!r}>'


_GLOBAL: list = [None]


def global_policy() -> Policy:
    """The policy of layers made without `dtype=` ('infer' until set_policy)."""
    return _GLOBAL[0] if _GLOBAL[0] is not None else Policy("infer")


def set_policy(policy: Any) -> None:
    """Sets the global policy: a Policy, a policy name, or None ('infer' again)."""
    if policy is not None and not isinstance(policy, Policy):
        if not isinstance(policy, str):
            raise TypeError(f"set_policy takes a Policy, a policy name or None, got {policy!r}")
        policy = Policy(policy)
    _GLOBAL[0] = policy


@contextlib.contextmanager
def policy_scope(policy: Any) -> Iterator[None]:
    """The global policy is `policy` in the block."""
    old = _GLOBAL[0]
    set_policy(policy)
    try:
        yield
    finally:
        _GLOBAL[0] = old


def policy_of(dtype: Any) -> Policy:
    """A layer's policy from its `dtype=` argument (None: the global policy)."""
    if isinstance(dtype, Policy):
        return dtype
    if dtype is None:
        return global_policy()
    if isinstance(dtype, dict) and dtype.get("class_name") == "Policy":  # a saved config's
        return Policy.from_config(dtype["config"])
    if isinstance(dtype, str) and dtype in _SPECIAL:
        return Policy(dtype)
    try:
        name = _dt.as_dtype(dtype).name
    except (TypeError, ValueError, KeyError):
        raise TypeError(f"A layer's dtype must be a dtype, a policy name or a Policy, got {dtype!r}") from None
    return Policy(name)


# -- AutoCastVariable ---------------------------------------------------------------------------

def _read_dtype() -> Optional[_dt.DType]:
    st = _g.get_default_graph()._stack("autocast_read_dtype")
    return st[-1] if st else None


class AutoCastVariable(Variable):
    """A floating variable read in the enclosing layer call's compute dtype: inside a call
    of a layer whose policy casts variables its value (and `dtype`) is the compute dtype's,
    elsewhere the variable's own (TF 1.15's rule).  Writes go to the variable, cast to its
    dtype; everything else is the wrapped variable's (`true_dtype`: its dtype)."""

    def __init__(self, variable: Variable):  # noqa: D107 (the metaclass builds subclasses directly)
        if not variable.dtype.is_floating:
            raise ValueError(f"variable must be a floating point variable but has type: {variable.dtype.name}")
        self.__dict__["_variable"] = variable

    def __getattr__(self, name: str) -> Any:
        if name == "_variable":
            raise AttributeError(name)
        return getattr(self._variable, name)

    def _cast_to(self) -> Optional[_dt.DType]:
        d = _read_dtype()
        return d if d is not None and d != self._variable.dtype else None

    @property
    def dtype(self) -> _dt.DType:
        return self._cast_to() or self._variable.dtype

    @property
    def true_dtype(self) -> _dt.DType:
        return self._variable.dtype

    @property
    def _constraint(self) -> Any:  # type: ignore[override]
        return self._variable._constraint

    @_constraint.setter
    def _constraint(self, value: Any) -> None:
        # get_variable(constraint=...) sets it on what the creator returned: the wrapped variable
        self._variable._constraint = value

    def value(self) -> _g.Tensor:
        d = self._cast_to()
        v = self._variable.value()
        return v if d is None else _m.cast(v, d)

    def read_value(self) -> _g.Tensor:
        d = self._cast_to()
        v = self._variable.read_value()
        return v if d is None else _m.cast(v, d)

    def _as_graph_element(self) -> _g.Tensor:
        return self.value()

    def _write(self, method: str, value: Any, *args: Any, **kwargs: Any) -> Any:
        t = _g.convert_to_tensor(value)
        if t.dtype != self._variable.dtype:
            t = _m.cast(t, self._variable.dtype)
        return getattr(self._variable, method)(t, *args, **kwargs)

    def assign(self, value: Any, *args: Any, **kwargs: Any) -> Any:
        return self._write("assign", value, *args, **kwargs)

    def assign_add(self, value: Any, *args: Any, **kwargs: Any) -> Any:
        return self._write("assign_add", value, *args, **kwargs)

    def assign_sub(self, value: Any, *args: Any, **kwargs: Any) -> Any:
        return self._write("assign_sub", value, *args, **kwargs)

    def __repr__(self) -> str:
        return (f"<AutoCastVariable {self._variable.name!r} dtype={self.dtype.name} "
                f"true_dtype={self._variable.dtype.name}>")


# -- what a layer call does under its policy ---------------------------------------------------------

def cast_inputs(policy: Optional[Policy], inputs: Any) -> Any:
    """`inputs` with each floating Tensor cast to the policy's compute dtype (TF's _autocast)."""
    if policy is None or policy.compute_dtype is None:
        return inputs
    want = _dt.as_dtype(policy.compute_dtype)
    if not want.is_floating:
        return inputs

    def one(x: Any) -> Any:
        if isinstance(x, _g.Tensor) and x.dtype.is_floating and x.dtype != want:
            with x.graph.as_default():
                return _m.cast(x, want)
        return x
    flat = nest.flatten(inputs)
    cast = [one(x) for x in flat]
    if all(a is b for a, b in zip(flat, cast)):
        return inputs
    return nest.pack_sequence_as(inputs, cast)


def _recast(initial_value: Any, dtype: _dt.DType) -> Any:
    """A variable's initial value (a callable, a Tensor or a value) in `dtype`.  get_variable's
    `lambda: init(dims, dt)` is drawn again in `dtype` (a float32 variable's values come from
    float32 draws, and an orthogonal initializer's QR has no float16); others are cast."""
    if callable(initial_value):
        free = dict(zip(getattr(getattr(initial_value, "__code__", None), "co_freevars", ()),
                        (c.cell_contents for c in (getattr(initial_value, "__closure__", None) or ()))))
        init, dims = free.get("init"), free.get("dims")
        if callable(init) and isinstance(dims, list) and "dt" in free:
            if "partition_info" in initial_value.__code__.co_names + initial_value.__code__.co_varnames:
                return lambda: init(dims, dtype=dtype, partition_info=None)
            return lambda: init(dims, dtype)
        return lambda: _m.cast(_g.convert_to_tensor(initial_value()), dtype)
    if isinstance(initial_value, _g.Tensor):
        return _m.cast(initial_value, dtype)
    return np.asarray(initial_value).astype(dtype.np)


@contextlib.contextmanager
def autocast_scope(policy: Optional[Policy], graph: _g.Graph, inputs: Any = (), first: bool = True) -> Iterator[None]:
    """The block is a layer's build and call under `policy`: floating variables made in it are
    the policy's variable dtype wrapped in AutoCastVariables, and those read in it give the
    compute dtype (the first floating input's under 'infer_float32_vars').  The regularization
    losses of the new variables are float32; a later call (first=False) adds none again."""
    if policy is None or (policy.compute_dtype is None and policy.variable_dtype is None):
        yield
        return
    read = policy.compute_dtype
    if read is None:
        read = next((t.dtype.name for t in nest.flatten(inputs) if isinstance(t, _g.Tensor)
                     and t.dtype.is_floating), None)
    read_dt = _dt.as_dtype(read) if read is not None and policy.should_cast_variables else None
    var_dt = _dt.as_dtype(policy.variable_dtype) if policy.variable_dtype is not None else None

    def creator(next_creator: Any, **kw: Any) -> Any:
        # a variable asked for in the compute dtype (tf.layers' functions take the input's) is
        # made in the variable dtype and read back in the compute dtype; one asked for in the
        # variable dtype stays as it is (BatchNormalization's float32 statistics, as TF's
        # experimental_autocast=False; Layer.add_weight wraps its own)
        dt = kw.get("dtype")
        if dt is None or not _dt.as_dtype(dt).is_floating or _dt.as_dtype(dt) == var_dt:
            return next_creator(**kw)
        kw["dtype"], kw["initial_value"] = var_dt, _recast(kw["initial_value"], var_dt)
        v = next_creator(**kw)
        return v if isinstance(v, AutoCastVariable) else AutoCastVariable(v)

    # (a policy that does not cast variables makes them as asked: in the dtype of the cast
    # inputs, or BatchNormalization's float32 for float16; reads in it are not cast)
    mixed = read_dt is not None and var_dt is not None and var_dt.is_floating
    reg = graph.get_collection_ref(GraphKeys.REGULARIZATION_LOSSES)
    before = len(reg)
    with graph.as_default():
        st = graph._stack("autocast_read_dtype")
        st.append(read_dt)
        try:
            with variable_creator_scope(creator) if mixed else contextlib.nullcontext():
                yield
        finally:
            st.pop()
        if mixed:
            new = reg[before:]
            del reg[before:]
            if first:  # the penalties of float32 variables are float32, as TF's (read outside the call)
                reg += [_to_dtype(t, var_dt) for t in new]


def _to_dtype(t: _g.Tensor, dtype: _dt.DType) -> _g.Tensor:
    """t cast to dtype, the cast next to t ("dense/kernel/Regularizer/Cast")."""
    if t.dtype == dtype or not t.dtype.is_floating:
        return t
    with t.graph.as_default(), t.graph.name_scope(t.op.name.rsplit("/", 1)[0] + "/" if "/" in t.op.name else None):
        return _m.cast(t, dtype)


def layer_policy_name(policy: Optional[Policy], default: Any) -> Any:
    """What a layer's get_config says its dtype is: `default` under 'infer', else the policy's
    name (a dtype name, or a policy name policy_of reads back)."""
    return default if policy is None or policy.name == "infer" else policy.name


# -- the namespace ---------------------------------------------------------------------------------

set_global_policy = set_policy  # tf_keras 2.x's names (Policy, global_policy, LossScaleOptimizer: the same)

experimental = types.SimpleNamespace(Policy=Policy, global_policy=global_policy, set_policy=set_policy,
                                     policy_scope=policy_scope, LossScaleOptimizer=LossScaleOptimizer)
experimental.__doc__ = ("tf.keras.mixed_precision.experimental (TF 1.15): Policy, global_policy, set_policy, "
                        "LossScaleOptimizer.")
