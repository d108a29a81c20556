"""tf.keras.optimizers (TF1's graph mode): Keras's names, arguments and defaults over
collflow's optimizers, with Keras's update rules where they differ from tf.train's
(RMSprop's accumulator starts at zero and, without momentum, adds epsilon outside the square
root; Adagrad adds epsilon; Adam's bias correction reads the step count).  Like Keras's, they
count their steps (`iterations`) and give their state as `weights` / `get_weights()` /
`set_weights()`: the count, then each slot for every variable, slot by slot, named as Keras
names them (training/Adam/iter, training/Adam/dense/kernel/m, ...) so model.save's
optimizer_weights read in either library.  A tf.train optimizer is accepted wherever Keras
takes one."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import math_ops as _m
from ..graph.ops import state_ops as _s
from ..graph.ops import training_ops as T
from ..graph.ops.array_ops import fill, zeros_like
from ..graph.ops.constant_op import constant, group
from ..graph.variables import Variable
from ..train import optimizers as _o
from ..train.optimizer import Optimizer

__all__ = ["SGD", "Adam", "RMSprop", "Adagrad", "get", "attach_lr_variable"]  # more: optimizers_more.py


def _lr(learning_rate: Any, kwargs: dict) -> Any:
    # Keras 1.x-2.2 programs pass lr=
    return kwargs.pop("lr", learning_rate)


def _leftover(kwargs: dict, cls: str) -> Dict[str, float]:
    """decay, clipnorm and clipvalue (OptimizerV2's other arguments) out of kwargs; TypeError on others."""
    extras = {k: kwargs.pop(k) for k in ("decay", "clipnorm", "clipvalue") if k in kwargs}
    if kwargs:
        raise TypeError(f"Unexpected keyword argument passed to optimizer: {sorted(kwargs)[0]}")
    for k in ("clipnorm", "clipvalue"):
        if extras.get(k) is None:
            extras.pop(k, None)
        elif extras[k] < 0:
            raise ValueError(f"Expected {k} >= 0, received: {extras[k]}")
    extras["decay"] = float(extras.get("decay") or 0.0)
    if extras["decay"] < 0:
        raise ValueError(f"decay cannot be less than 0: {extras['decay']}")
    return extras


class _KerasState:
    """What Keras's optimizers add to an Optimizer: the step count `iterations` (int64, +1
    after each step's updates) and the state in Keras's order, readable and settable as arrays.
    Slots are named <scope>/<var>/<slot> as Keras names them, not TF1's <var>/<Optimizer>."""

    _SLOT_ORDER: Tuple[str, ...] = ()  # Keras's _create_slots loops: one slot name at a time

    def _keras_setup(self) -> None:
        self._iterations: Dict[_g.Graph, Variable] = {}
        self._keras_weights: Dict[_g.Graph, List[Variable]] = {}  # creation order, per graph
        self._weights_graph: Optional[_g.Graph] = None
        self._prefix = ""
        self._extras: Dict[str, float] = {"decay": 0.0}

    @property
    def _keras_config(self) -> Tuple[str, Dict[str, Any]]:
        """(class name, config) as model.save writes it: the arguments given, decay and clipping."""
        base = self.__dict__.get("_base_config")
        if base is None:  # not made yet (getattr(opt, "_keras_config", None) reads None)
            raise AttributeError("_keras_config")
        name, cfg = base
        cfg = dict(cfg)
        cfg["decay"] = self._extras.get("decay", 0.0) if "decay" not in self._CONFIG_FIXED else cfg["decay"]
        cfg.update({k: v for k, v in self._extras.items() if k in ("clipnorm", "clipvalue")})
        lr = cfg.get("learning_rate")
        if lr is not None and not isinstance(lr, (int, float, dict, str)):
            from .schedules import LearningRateSchedule, serialize
            if isinstance(lr, LearningRateSchedule):
                cfg["learning_rate"] = serialize(lr)
        return name, cfg

    @_keras_config.setter
    def _keras_config(self, value: Tuple[str, Dict[str, Any]]) -> None:
        self.__dict__["_base_config"] = value

    _CONFIG_FIXED: Tuple[str, ...] = ()  # config keys a subclass writes itself (Nadam's decay)

    # -- hyperparameters, learning rate and gradients (OptimizerV2's _get_hyper, _decayed_lr and
    # get_gradients) ------------------------------------------------------------------------------
    # Keras keeps a Python number hyperparameter as a float32 weight (a NumPy scalar as one of its
    # own dtype) and casts it to each variable's dtype: a float64 model steps with
    # float64(float32(0.9)).  epsilon is converted straight to the variable's dtype, so it keeps
    # its digits; so are the decay (through float32, as tf.cast of a Python float) and Nadam's 0.96.
    _EXACT_HYPERS: Tuple[str, ...] = ("epsilon",)

    def _keras_scalar(self, name: str, value: Any, dtype: _dt.DType) -> _g.Tensor:
        """Hyperparameter `value` (number, Tensor, Variable or callable) as Keras reads it in `dtype`."""
        if callable(value) and not isinstance(value, (_g.Tensor, Variable)):
            value = value()
        if isinstance(value, (_g.Tensor, Variable)):
            t = _g.convert_to_tensor(value)
            return t if t.dtype == dtype else _m.cast(t, dtype, name=f"{name}_{dtype.name}")
        if name in self._EXACT_HYPERS or not (dtype.is_floating or dtype.is_complex):
            return constant(value, dtype=dtype, name=name)
        # a NumPy scalar keeps its own dtype (Keras's weight takes it), a Python number is float32
        own = _dt.as_dtype(value.dtype) if isinstance(value, np.generic) else _dt.float32
        t = constant(value, dtype=own, name=name)
        return t if dtype == own else _m.cast(t, dtype, name=f"{name}_{dtype.name}")

    def _hyper(self, name: str, dtype: _dt.DType) -> _g.Tensor:
        if name != "learning_rate":
            key = ("keras", name, dtype.name)
            t = self._hyper_cache.get(key)  # type: ignore[attr-defined]
            if t is None:
                t = self._hyper_cache[key] = self._keras_scalar(name, getattr(self, "_" + name), dtype)  # type: ignore[attr-defined]
            return t
        key = ("keras_lr", dtype.name)
        t = self._hyper_cache.get(key)  # type: ignore[attr-defined]
        if t is not None:
            return t
        from .schedules import LearningRateSchedule
        value = self._learning_rate  # type: ignore[attr-defined]
        step = None
        if isinstance(value, LearningRateSchedule):
            # a schedule is evaluated at the step count before this step's increment
            step = _m.cast(self._iteration_var(_g.get_default_graph()).value(), dtype)
            t = _m.cast(value(step), dtype)
        else:
            t = self._keras_scalar(name, value, dtype)
        decay = self._extras.get("decay", 0.0) if "decay" not in self._CONFIG_FIXED else 0.0
        if decay > 0:
            if step is None:
                step = _m.cast(self._iteration_var(_g.get_default_graph()).value(), dtype)
            t = t / (1.0 + self._keras_scalar("decay", decay, dtype) * step)
        self._hyper_cache[key] = t  # type: ignore[attr-defined]
        return t

    def _clip(self, grad: Any) -> Any:
        # Keras clips each gradient on its own (clip_by_norm per tensor, then clip_by_value)
        if grad is None or not (self._extras.get("clipnorm") is not None or self._extras.get("clipvalue") is not None):
            return grad
        from ..graph.ops import clip_ops as _c
        from ..graph.indexed_slices import IndexedSlices as _IS
        sparse = isinstance(grad, _IS)
        values = grad.values if sparse else grad
        if self._extras.get("clipnorm") is not None:
            values = _c.clip_by_norm(values, self._extras["clipnorm"])
        if self._extras.get("clipvalue") is not None:
            cv = self._extras["clipvalue"]
            values = _m.clip_by_value(values, -cv, cv)
        return _IS(values, grad.indices, grad.dense_shape) if sparse else values

    def compute_gradients(self, loss: Any, var_list: Any = None, *args: Any, **kwargs: Any) -> List[Any]:
        pairs = super().compute_gradients(loss, var_list, *args, **kwargs)  # type: ignore[misc]
        return [(self._clip(g), v) for g, v in pairs]

    def get_gradients(self, loss: Any, params: Sequence[Variable]) -> List[Any]:
        """The gradients of loss for params, clipped as clipnorm / clipvalue say (Keras's)."""
        return [g for g, _ in self.compute_gradients(loss, list(params))]

    def get_updates(self, loss: Any, params: Sequence[Variable]) -> List[_g.Operation]:
        """[the op that applies one step] (Keras's graph-mode training API)."""
        return [self.apply_gradients(list(zip(self.get_gradients(loss, params), params)))]

    # -- creation ------------------------------------------------------------------------------
    def _create_all_weights(self, var_list: Sequence[Variable], prefix: Optional[str] = None) -> None:
        """The step count and the slots of var_list (Keras's _create_all_weights; load_model and
        the training function call it before minimize, which then reuses them).  prefix: the
        names' scope (default: the current name scope, as Keras's)."""
        var_list = list(var_list)
        g = var_list[0].graph if var_list else _g.get_default_graph()
        self._prefix = g._current_scope() if prefix is None else prefix
        with g.as_default(), g.init_scope():
            self._iteration_var(g)
            self._create_slots(var_list)

    def _create_slots_for(self, g: _g.Graph, var_list: List[Variable]) -> None:
        # apply_gradients' call, before it opens the optimizer's scope: Keras names this state
        # <caller's scope>/<optimizer name>/...
        scope = g._current_scope()
        self._create_all_weights(var_list, f"{scope}/{self._name}" if scope else self._name)

    def _name_of(self, name: str) -> str:
        return f"{self._prefix}/{name}" if self._prefix else name

    def _track(self, g: _g.Graph, v: Variable) -> None:
        self._keras_weights.setdefault(g, []).append(v)
        self._weights_graph = g

    def _iteration_var(self, g: _g.Graph) -> Variable:
        it = self._iterations.get(g)
        if it is None:
            with g.as_default(), g.init_scope(), _g.name_scope(None):
                it = Variable(np.int64(0), trainable=False, name=self._name_of("iter"), dtype=_dt.int64)
            self._iterations[g] = it
            self._keras_weights.setdefault(g, []).insert(0, it)  # the count comes first, as Keras's
            self._weights_graph = g
        return it

    def _make_slot(self, var: Variable, slot_name: str, value: float = 0.0) -> Variable:
        table = self._slot_table(slot_name)
        s = table.get(var)
        if s is None:
            g, shape, dt = var.graph, var.shape, var.dtype

            def init() -> _g.Tensor:
                if shape.is_fully_defined():
                    return fill(shape.as_list(), constant(value, dtype=dt))
                base = zeros_like(var.initial_value)
                return base if value == 0 else base + constant(value, dtype=dt)
            with g.as_default(), g.init_scope(), _g.name_scope(None), g.device(var.device):
                s = Variable(init, trainable=False, name=self._name_of(f"{var.op.name}/{slot_name}"), dtype=dt)
            table[var] = s
            self._track(g, s)
        return s

    def _create_slots(self, var_list: List[Variable]) -> None:
        for slot in self._slot_names():
            for v in var_list:
                self._make_slot(v, slot, self._slot_init(slot))

    def _slot_names(self) -> Tuple[str, ...]:
        return self._SLOT_ORDER

    def _slot_init(self, slot: str) -> float:
        return 0.0

    def _finish(self, update_ops: List[_g.Operation], name: str) -> _g.Operation:
        # the count advances once every update has read it (Adam's bias correction does)
        it = self._iteration_var(update_ops[0].graph if update_ops else _g.get_default_graph())
        with _g.control_dependencies(update_ops):
            inc = _s.assign_add(it, constant(1, dtype=_dt.int64))
        return group(*update_ops, inc, name=name)

    def _use_iterations(self, step: Variable) -> None:
        """Counts in `step` (an int64 variable: model_to_estimator's global step) in its graph."""
        g = step.graph
        self._iterations[g] = step
        self._keras_weights.setdefault(g, []).insert(0, step)
        self._weights_graph = g

    # -- object checkpoints (collflow/train/trackable.py) ------------------------------------------
    _CHECKPOINT_HYPERS = frozenset(("learning_rate", "decay", "momentum", "beta_1", "beta_2", "rho", "beta",
                                    "learning_rate_power", "l1_regularization_strength", "l2_regularization_strength",
                                    "l2_shrinkage_regularization_strength"))

    def _checkpoint_children(self) -> List[Tuple[str, Any]]:
        """iter, then the hyperparameters by name (Keras's _create_all_weights order); the
        hyperparameters are Python numbers here, saved as float32 scalars as Keras's weights."""
        from ..train.trackable import ConstantValue
        it = self._iterations.get(self._weights_graph) if self._weights_graph is not None else None
        if it is None:
            return []
        try:
            cfg = self._keras_config[1]
        except AttributeError:
            cfg = {}
        cache = self.__dict__.setdefault("_checkpoint_constants", {})
        scope = it.op.name.rsplit("/", 1)[0] + "/" if "/" in it.op.name else ""
        out: List[Tuple[str, Any]] = [("iter", it)]
        for name in sorted(k for k in cfg if k in self._CHECKPOINT_HYPERS):
            value = cfg[name]
            if isinstance(value, Variable):
                out.append((name, value))
            elif isinstance(value, (int, float, np.generic)) and not isinstance(value, bool):
                c = cache.get(name)
                if c is None:
                    c = cache[name] = ConstantValue(value, np.float32, scope + name)
                c.value = value
                out.append((name, c))
        return out

    def _checkpoint_slot_names(self) -> List[str]:
        """The slots in Keras's creation order (its get_slot_names)."""
        return [n for n in self._slot_names() if n in self._slots] + \
            sorted(n for n in self._slots if n not in self._slot_names())

    # -- Keras's API -----------------------------------------------------------------------------
    @property
    def iterations(self) -> Variable:
        """The number of steps taken (an int64 variable, made in the default graph on first use)."""
        g = self._weights_graph or _g.get_default_graph()
        if g not in self._iterations:
            self._prefix = g._current_scope()
        return self._iteration_var(g)

    @property
    def weights(self) -> List[Variable]:
        """The state: iterations, then the slots in Keras's creation order."""
        return list(self._keras_weights.get(self._weights_graph, []))

    def variables(self) -> List[Variable]:
        return self.weights

    def get_weights(self) -> List[np.ndarray]:
        from . import backend as K
        return K.batch_get_value(self.weights)

    def set_weights(self, weights: Sequence[Any]) -> None:
        """Sets the state from arrays in `weights`' order; ValueError on a count or shape mismatch."""
        from . import backend as K
        params = self.weights
        if len(params) != len(weights):
            raise ValueError(f"You called `set_weights(weights)` on optimizer {self._name} with a  weight list of "
                             f"length {len(weights)}, but the optimizer was expecting {len(params)} weights. "
                             f"Provided weights: {str(weights)[:50]}...")
        for p, w in zip(params, weights):
            if tuple(p.shape.as_list()) != tuple(np.shape(w)):
                raise ValueError(f"Optimizer weight shape {tuple(p.shape.as_list())} not compatible with provided "
                                 f"weight shape {np.shape(w)}")
        K.batch_set_value(list(zip(params, weights)))

    def get_config(self) -> Dict[str, Any]:
        """The config with the learning rate as it is now (a variable's value, a schedule's config)."""
        cfg = dict(self._keras_config[1])
        lr = getattr(self, "lr", None)
        if isinstance(lr, (Variable, _g.Tensor)):
            from . import backend as K
            with lr.graph.as_default():  # Keras's session of the variable's graph
                cfg["learning_rate"] = float(K.get_value(lr))
        return cfg

    @classmethod
    def from_config(cls, config: Dict[str, Any], custom_objects: Optional[Dict[str, Any]] = None) -> Any:
        config = dict(config)
        if "lr" in config:
            config["learning_rate"] = config.pop("lr")
        if isinstance(config.get("learning_rate"), dict):
            from .schedules import deserialize
            config["learning_rate"] = deserialize(config["learning_rate"], custom_objects=custom_objects)
        return cls(**config)


class SGD(_KerasState, Optimizer):
    """Keras's SGD.  With momentum, Keras's rule: v = m*v - lr*g; var += v (Nesterov: var +=
    m*v - lr*g).  Unlike tf.train's (accum = m*accum + g; var -= lr*accum), a changed learning
    rate scales only the new gradients (LearningRateScheduler, ReduceLROnPlateau)."""

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.0, nesterov: bool = False,
                 name: str = "SGD", **kwargs: Any):
        super().__init__(False, name)
        self._keras_setup()
        lr = _lr(learning_rate, kwargs)
        self._extras = _leftover(kwargs, "SGD")
        self._learning_rate = lr
        self._momentum, self._nesterov = momentum, bool(nesterov)  # a NumPy scalar keeps its dtype
        self._keras_config = ("SGD", {"name": name, "learning_rate": lr, "decay": 0.0, "momentum": momentum,
                                      "nesterov": nesterov})  # model.save's training config

    def _slot_names(self) -> Tuple[str, ...]:
        return ("momentum",) if self._momentum else ()

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        lr = self._hyper("learning_rate", var.dtype)
        if not self._momentum:
            return T.apply_gradient_descent(var, lr, grad)
        v, momentum = self.get_slot(var, "momentum"), self._hyper("momentum", var.dtype)
        step = lr * grad
        v_t = _s.assign(v, momentum * v.value() - step)
        return group(_s.assign_add(var, momentum * v_t - step if self._nesterov else v_t))

    def _apply_sparse(self, grad: Any, var: Variable) -> _g.Operation:
        if not self._momentum:
            return T.sparse_apply_gradient_descent(var, self._hyper("learning_rate", var.dtype), grad.values,
                                                   grad.indices)
        return self._apply_dense(_dense(grad), var)


class Adam(_KerasState, _o.AdamOptimizer):
    """Keras's Adam: tf.train's update with Keras's epsilon 1e-7 and bias correction
    beta^(iterations + 1), as Keras computes it (no beta-power variables).  With amsgrad=True
    (Reddi et al.) a third slot vhat keeps the largest v seen and the step divides by its
    root (TF's ApplyAdamWithAmsgrad; a sparse gradient as Keras's: m and v decay everywhere,
    the gradient's rows get its terms, every row of var moves)."""

    _SLOT_ORDER = ("m", "v")

    def __init__(self, learning_rate: float = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, amsgrad: bool = False, name: str = "Adam", **kwargs: Any):
        lr = _lr(learning_rate, kwargs)
        extras = _leftover(kwargs, "Adam")
        super().__init__(lr, beta_1, beta_2, epsilon, name=name)
        self._keras_setup()
        self._extras = extras
        self._amsgrad = bool(amsgrad)
        self._keras_config = ("Adam", {"name": name, "learning_rate": lr, "decay": 0.0, "beta_1": beta_1,
                                       "beta_2": beta_2, "epsilon": epsilon, "amsgrad": self._amsgrad})

    def _slot_names(self) -> Tuple[str, ...]:
        return ("m", "v", "vhat") if self._amsgrad else ("m", "v")

    def _amsgrad_terms(self, var: Variable) -> Tuple[Any, ...]:
        """(beta1, beta2, epsilon, the bias-corrected rate, m, v, vhat) of var's step."""
        d = var.dtype
        b1p, b2p = self._powers(var)
        b1, b2, eps = self._hyper("beta1", d), self._hyper("beta2", d), self._hyper("epsilon", d)
        alpha = self._hyper("learning_rate", d) * _m.sqrt(1.0 - b2p) / (1.0 - b1p)
        return b1, b2, eps, alpha, self.get_slot(var, "m"), self.get_slot(var, "v"), self.get_slot(var, "vhat")

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        if not self._amsgrad:
            return super()._apply_dense(grad, var)
        b1, b2, eps, alpha, m, v, vhat = self._amsgrad_terms(var)
        m_t = _s.assign(m, m.value() + (grad - m.value()) * (1.0 - b1))
        v_t = _s.assign(v, v.value() + (_m.square(grad) - v.value()) * (1.0 - b2))
        vhat_t = _s.assign(vhat, _m.maximum(vhat.value(), v_t))
        return group(_s.assign_sub(var, m_t * alpha / (_m.sqrt(vhat_t) + eps)))

    def _apply_sparse(self, grad: Any, var: Variable) -> _g.Operation:
        if not self._amsgrad:
            return super()._apply_sparse(grad, var)
        b1, b2, eps, lr, m, v, vhat = self._amsgrad_terms(var)
        values, idx = _dedup(grad)
        m_dec = _s.assign(m, m.value() * b1)
        with _g.control_dependencies([m_dec]):
            m_t = _s.scatter_add(m, idx, values * (1.0 - b1))
        v_dec = _s.assign(v, v.value() * b2)
        with _g.control_dependencies([v_dec]):
            v_t = _s.scatter_add(v, idx, _m.square(values) * (1.0 - b2))
        vhat_t = _s.assign(vhat, _m.maximum(vhat.value(), v_t))
        return group(_s.assign_sub(var, lr * m_t / (_m.sqrt(vhat_t) + eps)), m_t, v_t, vhat_t)

    def _powers(self, var: Variable) -> Tuple[_g.Tensor, _g.Tensor]:
        key = ("beta_powers", var.dtype.name)
        out = self._hyper_cache.get(key)
        if out is None:
            step = _m.cast(self._iteration_var(var.graph).value() + constant(1, dtype=_dt.int64), var.dtype)
            out = (_m.pow(self._hyper("beta1", var.dtype), step), _m.pow(self._hyper("beta2", var.dtype), step))
            self._hyper_cache[key] = out
        return out


class RMSprop(_KerasState, Optimizer):
    """Keras's RMSprop: rms = rho*rms + (1-rho)*g^2 from zero; without momentum var -= lr*g /
    (sqrt(rms) + epsilon), with momentum TF's kernel form (mom = m*mom + lr*g/sqrt(rms + eps)).
    centered=True also keeps the mean gradient mg and divides by sqrt(rms - mg^2) (+ epsilon
    as above; with momentum TF's ApplyCenteredRMSProp)."""

    def __init__(self, learning_rate: float = 0.001, rho: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, name: str = "RMSprop", **kwargs: Any):
        super().__init__(False, name)
        self._keras_setup()
        self._lr, self._rho, self._momentum, self._eps = _lr(learning_rate, kwargs), rho, momentum, epsilon
        self._learning_rate = self._lr
        self._centered = bool(centered)
        self._keras_config = ("RMSprop", {"name": name, "learning_rate": self._lr, "decay": 0.0, "rho": rho,
                                          "momentum": momentum, "epsilon": epsilon, "centered": self._centered})
        self._extras = _leftover(kwargs, "RMSprop")

    def _slot_names(self) -> Tuple[str, ...]:
        # Keras's creation order: every rms, then every momentum, then every mg
        return ("rms",) + (("momentum",) if self._momentum else ()) + (("mg",) if self._centered else ())

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        rms, lr = self.get_slot(var, "rms"), self._hyper("learning_rate", var.dtype)
        rho = self._hyper("rho", var.dtype)
        if self._momentum and self._centered:
            return T.apply_centered_rms_prop(var, self.get_slot(var, "mg"), rms, self.get_slot(var, "momentum"), lr,
                                             rho, self._hyper("momentum", var.dtype),
                                             constant(self._eps, dtype=var.dtype), grad)
        rms_t = _s.assign(rms, rho * rms.value() + (1.0 - rho) * _m.square(grad))
        if self._momentum:
            mom = self.get_slot(var, "momentum")
            mom_t = _s.assign(mom, self._hyper("momentum", var.dtype) * mom.value()
                              + lr * grad / _m.sqrt(rms_t + self._eps))
            return group(_s.assign_sub(var, mom_t))
        denom = rms_t
        if self._centered:
            mg = self.get_slot(var, "mg")
            denom = rms_t - _m.square(_s.assign(mg, rho * mg.value() + (1.0 - rho) * grad))
        return group(_s.assign_sub(var, lr * grad / (_m.sqrt(denom) + self._eps)))

    def _apply_sparse(self, grad: Any, var: Variable) -> _g.Operation:
        return self._apply_dense(_dense(grad), var)


def _dedup(grad: Any) -> Tuple[_g.Tensor, _g.Tensor]:
    """(values, indices) of an IndexedSlices gradient with repeated indices summed, as Keras's
    optimizers see a sparse gradient (an embedding's ids repeat within a batch)."""
    from ..graph.ops.array_ops import shape
    from ..graph.ops.partition_ops import unique
    from ..graph.ops.segment_ops import unsorted_segment_sum
    uniq, pos = unique(grad.indices)
    return unsorted_segment_sum(grad.values, pos, shape(uniq)[0]), uniq


def _dense(grad: Any) -> _g.Tensor:
    return _g.convert_to_tensor(grad)  # an embedding's IndexedSlices gradient, densified


class Adagrad(_KerasState, Optimizer):
    """Keras's Adagrad: acc += g^2 (from initial_accumulator_value); var -= lr*g / (sqrt(acc) + epsilon)."""

    _SLOT_ORDER = ("accumulator",)

    def __init__(self, learning_rate: float = 0.001, initial_accumulator_value: float = 0.1,
                 epsilon: float = 1e-7, name: str = "Adagrad", **kwargs: Any):
        super().__init__(False, name)
        self._keras_setup()
        self._lr, self._init, self._eps = _lr(learning_rate, kwargs), initial_accumulator_value, epsilon
        self._learning_rate = self._lr
        self._keras_config = ("Adagrad", {"name": name, "learning_rate": self._lr, "decay": 0.0,
                                          "initial_accumulator_value": initial_accumulator_value,
                                          "epsilon": epsilon})
        self._extras = _leftover(kwargs, "Adagrad")

    def _slot_init(self, slot: str) -> float:
        return float(self._init)

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        acc = self.get_slot(var, "accumulator")
        acc_t = _s.assign_add(acc, _m.square(grad))
        lr = self._hyper("learning_rate", var.dtype)
        return group(_s.assign_sub(var, lr * grad / (_m.sqrt(acc_t) + self._eps)))

    def _apply_sparse(self, grad: Any, var: Variable) -> _g.Operation:
        return self._apply_dense(_dense(grad), var)


_BY_NAME = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop, "adagrad": Adagrad}


def get(identifier: Any) -> Optimizer:
    """An optimizer from a name ("adam"), a Keras or tf.train optimizer."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier.lower()]()
        except KeyError:
            raise ValueError(f"Could not interpret optimizer identifier: {identifier}") from None
    raise ValueError(f"Could not interpret optimizer identifier: {identifier}")


def attach_lr_variable(opt: Optimizer, graph: _g.Graph) -> None:
    """Makes a Keras optimizer's learning rate a variable of `graph` (`opt.lr`, as Keras's), so
    K.set_value(model.optimizer.lr, ...) and the learning-rate callbacks change it between
    steps.  A tf.train optimizer, or one whose rate is already a tensor, is left alone."""
    if getattr(opt, "_keras_config", None) is None or hasattr(opt, "lr"):
        return
    value = opt._learning_rate
    from .schedules import LearningRateSchedule
    if isinstance(value, (_g.Tensor, Variable, LearningRateSchedule)):  # a schedule: opt.lr is it, as Keras's
        opt.lr = opt.learning_rate = value
        return
    from ..graph.variable_scope import variable_scope
    with graph.as_default(), _g.name_scope(None), _g.control_dependencies(None), \
            variable_scope(None, default_name=opt.get_name()):
        # a NumPy scalar keeps its dtype, a Python number is float32 (Keras's hyperparameter weight)
        var = Variable(value if isinstance(value, np.generic) else float(value), trainable=False,
                       name="learning_rate")
    opt._learning_rate = var
    if hasattr(opt, "_lr"):
        opt._lr = var  # Keras's RMSprop / Adagrad read it as _lr
    opt.lr = opt.learning_rate = var
