"""More of tf.keras.optimizers (TF 1.15's OptimizerV2 classes): Adadelta, Adamax, Nadam, Ftrl,
the `Optimizer` base class to subclass, and serialize / deserialize / get.

They share optimizers.py's machinery: the step count `iterations`, state named as Keras names it
(training/Nadam/momentum_cache, training/Adadelta/dense/kernel/accum_grad, ...) in Keras's
order, get/set_weights, configs, decay / clipnorm / clipvalue, learning-rate schedules, and the
state model.save writes and load_model restores.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import math_ops as _m
from ..graph.ops import state_ops as _s
from ..graph.ops import training_ops as T
from ..graph.ops.constant_op import constant, group
from ..graph.variables import Variable
from ..train.optimizer import Optimizer as _TrainOptimizer
from .optimizers import _BY_NAME, SGD, Adagrad, Adam, RMSprop, _KerasState, _dedup, _dense, _leftover, _lr
from .optimizers import get as _get_base

__all__ = ["Optimizer", "Adadelta", "Adamax", "Nadam", "Ftrl", "serialize", "deserialize", "get"]


class Optimizer(_KerasState, _TrainOptimizer):
    """tf.keras.optimizers.Optimizer (OptimizerV2) for subclassing: __init__(name, **kwargs)
    (lr, decay, clipnorm, clipvalue), _set_hyper / _get_hyper, _create_slots(var_list) calling
    add_slot(var, name), _resource_apply_dense(grad, var) (and _resource_apply_sparse(grad, var,
    indices), else the gradient is densified), _decayed_lr(dtype), get_config."""

    def __init__(self, name: str, **kwargs: Any):
        super().__init__(False, name)
        self._keras_setup()
        self._hypers: Dict[str, Any] = {}
        if "lr" in kwargs:
            self._hypers["learning_rate"] = kwargs.pop("lr")
        self._extras = _leftover(kwargs, type(self).__name__)
        self._initial_decay = self._extras["decay"]
        self._keras_config = (type(self).__name__, {"name": name})

    # OptimizerV2's hyperparameter API (learning_rate lives in _learning_rate for _hyper)
    def _set_hyper(self, name: str, value: Any) -> None:
        if name == "learning_rate":
            self._learning_rate = self._hypers.pop("learning_rate", value)
        else:
            self._hypers[name] = value
            setattr(self, "_" + name, value)

    def _get_hyper(self, name: str, dtype: Any = None) -> Any:
        if dtype is None:
            return self._learning_rate if name == "learning_rate" else self._hypers[name]
        return self._hyper(name, _dt.as_dtype(dtype))

    def _serialize_hyperparameter(self, name: str) -> Any:
        value = self._learning_rate if name == "learning_rate" else self._hypers[name]
        from .schedules import LearningRateSchedule, serialize
        if isinstance(value, LearningRateSchedule):
            return serialize(value)
        if isinstance(value, (Variable, _g.Tensor)):
            from . import backend as K
            with value.graph.as_default():
                return float(K.get_value(value))
        return value() if callable(value) else value

    def _decayed_lr(self, var_dtype: Any) -> _g.Tensor:
        return self._hyper("learning_rate", _dt.as_dtype(var_dtype))

    def _hyper_names(self) -> Tuple[str, ...]:
        return ("learning_rate",)

    def add_slot(self, var: Variable, slot_name: str, initializer: Any = "zeros") -> Variable:
        value = {"zeros": 0.0, "ones": 1.0}.get(initializer, initializer) if isinstance(initializer, str) else (
            initializer if isinstance(initializer, (int, float)) else getattr(initializer, "value", 0.0))
        return self._make_slot(var, slot_name, float(value))

    def _create_slots(self, var_list: Any) -> None:
        """No slots (a subclass adds its own with add_slot)."""

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        op = self._resource_apply_dense(grad, var)
        return op if isinstance(op, _g.Operation) else group(op)

    def _apply_sparse(self, grad: Any, var: Variable) -> _g.Operation:
        sparse = getattr(type(self), "_resource_apply_sparse", None)
        if sparse is None:
            return self._apply_dense(_dense(grad), var)
        values, indices = _dedup(grad)
        op = sparse(self, values, var, indices)
        return op if isinstance(op, _g.Operation) else group(op)

    def _resource_apply_dense(self, grad: _g.Tensor, var: Variable) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define _resource_apply_dense(grad, var)")

    def get_config(self) -> Dict[str, Any]:
        """name, learning_rate (as it is now), decay, and clipnorm / clipvalue when given."""
        cfg: Dict[str, Any] = {"name": self._name}
        cfg.update({k: v for k, v in self._extras.items() if k in ("clipnorm", "clipvalue")})
        if hasattr(self, "_learning_rate"):
            cfg["learning_rate"] = self._serialize_hyperparameter("learning_rate")
        cfg["decay"] = self._initial_decay
        return cfg

    @property
    def _keras_config(self) -> Tuple[str, Dict[str, Any]]:  # type: ignore[override]
        # what model.save writes: the subclass's get_config
        base = self.__dict__.get("_base_config")
        if base is None:
            raise AttributeError("_keras_config")
        return base[0], self.get_config()

    @_keras_config.setter
    def _keras_config(self, value: Tuple[str, Dict[str, Any]]) -> None:
        self.__dict__["_base_config"] = value


def _config(opt: _KerasState, cls: str, lr: Any, **more: Any) -> None:
    opt._keras_config = (cls, {"name": opt._name, "learning_rate": lr, "decay": 0.0, **more})


class Adadelta(_KerasState, _TrainOptimizer):
    """Keras's Adadelta (TF 1.15 defaults: learning_rate 0.001, rho 0.95, epsilon 1e-7): TF's
    ApplyAdadelta on slots accum_grad and accum_var."""

    _SLOT_ORDER = ("accum_grad", "accum_var")

    def __init__(self, learning_rate: Any = 0.001, rho: float = 0.95, epsilon: float = 1e-7, name: str = "Adadelta",
                 **kwargs: Any):
        super().__init__(False, name)
        self._keras_setup()
        self._learning_rate = _lr(learning_rate, kwargs)
        self._extras = _leftover(kwargs, "Adadelta")
        self._rho, self._epsilon = rho, 1e-7 if epsilon is None else epsilon
        _config(self, "Adadelta", self._learning_rate, rho=rho, epsilon=epsilon)

    def _hyper_names(self) -> Tuple[str, ...]:
        return ("learning_rate", "rho", "epsilon")

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        d = var.dtype
        return T.apply_adadelta(var, self.get_slot(var, "accum_grad"), self.get_slot(var, "accum_var"),
                                self._hyper("learning_rate", d), self._hyper("rho", d), self._hyper("epsilon", d), grad)

    def _apply_sparse(self, grad: Any, var: Variable) -> _g.Operation:
        d = var.dtype
        return T.sparse_apply_adadelta(var, self.get_slot(var, "accum_grad"), self.get_slot(var, "accum_var"),
                                       self._hyper("learning_rate", d), self._hyper("rho", d),
                                       self._hyper("epsilon", d), *_dedup(grad))


class Adamax(_KerasState, _TrainOptimizer):
    """Keras's Adamax: m = b1*m + (1-b1)*g; v = max(b2*v, |g|); var -= lr / (1 - b1^t) * m / (v + eps),
    t = iterations + 1."""

    _SLOT_ORDER = ("m", "v")

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7,
                 name: str = "Adamax", **kwargs: Any):
        super().__init__(False, name)
        self._keras_setup()
        self._learning_rate = _lr(learning_rate, kwargs)
        self._extras = _leftover(kwargs, "Adamax")
        self._beta_1, self._beta_2, self._epsilon = beta_1, beta_2, 1e-7 if epsilon is None else epsilon
        _config(self, "Adamax", self._learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon)

    def _hyper_names(self) -> Tuple[str, ...]:
        return ("learning_rate", "beta_1", "beta_2", "epsilon")

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        d = var.dtype
        b1, b2, eps = self._hyper("beta_1", d), self._hyper("beta_2", d), self._hyper("epsilon", d)
        t = _m.cast(self._iteration_var(var.graph).value() + constant(1, dtype=_dt.int64), d)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = _s.assign(m, b1 * m.value() + (1.0 - b1) * grad)
        v_t = _s.assign(v, _m.maximum(b2 * v.value(), _m.abs(grad)))
        step = self._hyper("learning_rate", d) / (1.0 - _m.pow(b1, t)) * (m_t / (v_t + eps))
        return group(_s.assign_sub(var, step))

    def _apply_sparse(self, grad: Any, var: Variable) -> _g.Operation:
        # only the gradient's rows of m, v and var change (Keras's sparse Adamax)
        from ..graph.ops.slicing_ops import gather
        values, idx = _dedup(grad)
        d = var.dtype
        b1, b2, eps = self._hyper("beta_1", d), self._hyper("beta_2", d), self._hyper("epsilon", d)
        t = _m.cast(self._iteration_var(var.graph).value() + constant(1, dtype=_dt.int64), d)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_rows = gather(m.value(), idx) * b1 + values * (1.0 - b1)
        v_rows = _m.maximum(gather(v.value(), idx) * b2, _m.abs(values))
        m_t, v_t = _s.scatter_update(m, idx, m_rows), _s.scatter_update(v, idx, v_rows)
        step = -self._hyper("learning_rate", d) / (1.0 - _m.pow(b1, t)) * (m_rows / (v_rows + eps))
        with _g.control_dependencies([m_rows, v_rows]):
            return group(_s.scatter_add(var, idx, step), m_t, v_t)


class Nadam(_KerasState, _TrainOptimizer):
    """Keras's Nadam: Adam with Nesterov momentum and the momentum schedule
    mu_t = beta_1 * (1 - 0.5 * 0.96^(0.004 * t)), whose running product is the state
    momentum_cache.  Its decay (schedule_decay, 0.004) is the schedule's, not the learning
    rate's; a LearningRateSchedule is refused, as Keras does."""

    _SLOT_ORDER = ("m", "v")
    _CONFIG_FIXED = ("decay",)

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7,
                 name: str = "Nadam", **kwargs: Any):
        from .schedules import LearningRateSchedule
        lr = _lr(learning_rate, kwargs)
        if isinstance(lr, LearningRateSchedule):
            raise ValueError("The Nadam optimizer does not support tf.keras.optimizers.LearningRateSchedules as the "
                             "learning rate.")
        kwargs["decay"] = kwargs.pop("schedule_decay", kwargs.get("decay", 0.004))
        super().__init__(False, name)
        self._keras_setup()
        self._learning_rate = lr
        self._extras = _leftover(kwargs, "Nadam")
        self._schedule_decay = self._extras["decay"]
        self._beta_1, self._beta_2, self._epsilon = beta_1, beta_2, 1e-7 if epsilon is None else epsilon
        self._m_cache: Dict[_g.Graph, Variable] = {}
        self._coef: Dict[str, Tuple[Any, ...]] = {}
        _config(self, "Nadam", lr, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon)
        self.__dict__["_base_config"][1]["decay"] = self._schedule_decay

    def _hyper_names(self) -> Tuple[str, ...]:
        return ("learning_rate", "beta_1", "beta_2", "epsilon")

    def _create_slots(self, var_list: Any) -> None:
        if var_list:
            g = var_list[0].graph
            if g not in self._m_cache:
                # a scalar of the first variable's dtype, after iter and before the slots (Keras's order)
                with g.as_default(), g.init_scope(), _g.name_scope(None):
                    c = Variable(constant(1.0, dtype=var_list[0].dtype), trainable=False,
                                 name=self._name_of("momentum_cache"))
                self._m_cache[g] = c
                self._track(g, c)
        super()._create_slots(var_list)

    def _prepare(self) -> None:
        self._coef = {}
        self._cache_read = None

    def _prepare_dtype(self, dtype: _dt.DType) -> None:
        super()._prepare_dtype(dtype)
        g = _g.get_default_graph()
        cache = self._m_cache[g]
        if self._cache_read is None:
            self._cache_read = cache.value()
        b1 = self._hyper("beta_1", dtype)
        it = self._iteration_var(g).value()
        t = _m.cast(it + constant(1, dtype=_dt.int64), dtype)
        t_next = _m.cast(it + constant(2, dtype=_dt.int64), dtype)
        decay = constant(self._schedule_decay, dtype=dtype)
        base = self._keras_scalar("decay_base", 0.96, dtype)  # Keras's tf.cast(0.96, dtype): via float32
        mu_t = b1 * (1.0 - 0.5 * _m.pow(base, decay * t))
        mu_next = b1 * (1.0 - 0.5 * _m.pow(base, decay * t_next))
        sched_new = _m.cast(self._cache_read, dtype) * mu_t
        if dtype == cache.dtype:
            sched_new = _s.assign(cache, sched_new)  # the running product advances once per step
        sched_next = sched_new * mu_next
        v_denom = 1.0 - _m.pow(self._hyper("beta_2", dtype), t)
        self._coef[dtype.name] = (mu_t, mu_next, sched_new, sched_next, v_denom)

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        d = var.dtype
        mu_t, mu_next, sched_new, sched_next, v_denom = self._coef[d.name]
        b1, b2, eps = self._hyper("beta_1", d), self._hyper("beta_2", d), self._hyper("epsilon", d)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        g_prime = grad / (1.0 - sched_new)
        m_t = _s.assign(m, b1 * m.value() + (1.0 - b1) * grad)
        m_prime = m_t / (1.0 - sched_next)
        v_t = _s.assign(v, b2 * v.value() + (1.0 - b2) * _m.square(grad))
        v_prime = v_t / v_denom
        m_bar = (1.0 - mu_t) * g_prime + mu_next * m_prime
        return group(_s.assign_sub(var, self._hyper("learning_rate", d) * m_bar / (_m.sqrt(v_prime) + eps)))

    def _apply_sparse(self, grad: Any, var: Variable) -> _g.Operation:
        # Keras's sparse Nadam: m and v decay everywhere, the gradient's rows get its terms, and
        # only those rows of var move
        from ..graph.ops.slicing_ops import gather
        values, idx = _dedup(grad)
        d = var.dtype
        mu_t, mu_next, sched_new, sched_next, v_denom = self._coef[d.name]
        b1, b2, eps = self._hyper("beta_1", d), self._hyper("beta_2", d), self._hyper("epsilon", d)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        g_prime = values / (1.0 - sched_new)
        m_dec = _s.assign(m, m.value() * b1)
        with _g.control_dependencies([m_dec]):
            m_t = _s.scatter_add(m, idx, values * (1.0 - b1))
        m_rows = gather(m_t, idx)
        m_bar = (1.0 - mu_t) * g_prime + mu_next * (m_rows / (1.0 - sched_next))
        v_dec = _s.assign(v, v.value() * b2)
        with _g.control_dependencies([v_dec]):
            v_t = _s.scatter_add(v, idx, _m.square(values) * (1.0 - b2))
        v_rows = gather(v_t, idx)
        step = -self._hyper("learning_rate", d) * m_bar / (_m.sqrt(v_rows / v_denom) + eps)
        return group(_s.scatter_add(var, idx, step), m_t, v_t)


class Ftrl(_KerasState, _TrainOptimizer):
    """Keras's Ftrl (TF's ApplyFtrl / ApplyFtrlV2 with l2 shrinkage): slots accumulator (from
    initial_accumulator_value) and linear, made variable by variable as Keras makes them."""

    def __init__(self, learning_rate: Any = 0.001, learning_rate_power: float = -0.5,
                 initial_accumulator_value: float = 0.1, l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, name: str = "Ftrl",
                 l2_shrinkage_regularization_strength: float = 0.0, beta: float = 0.0, **kwargs: Any):
        for what, v in (("initial_accumulator_value", initial_accumulator_value),
                        ("l1_regularization_strength", l1_regularization_strength),
                        ("l2_regularization_strength", l2_regularization_strength),
                        ("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength)):
            if v < 0.0:
                raise ValueError(f"{what} {v} needs to be positive or zero")
        if learning_rate_power > 0.0:
            raise ValueError(f"learning_rate_power {learning_rate_power} needs to be negative or zero")
        super().__init__(False, name)
        self._keras_setup()
        self._learning_rate = _lr(learning_rate, kwargs)
        self._extras = _leftover(kwargs, "Ftrl")
        self._lr_power, self._init = learning_rate_power, initial_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength
        self._l2_shrinkage, self._beta = l2_shrinkage_regularization_strength, beta
        more: Dict[str, Any] = dict(initial_accumulator_value=initial_accumulator_value,
                                    learning_rate_power=learning_rate_power,
                                    l1_regularization_strength=l1_regularization_strength,
                                    l2_regularization_strength=l2_regularization_strength,
                                    l2_shrinkage_regularization_strength=l2_shrinkage_regularization_strength)
        if beta:
            more["beta"] = beta  # tf_keras 2.x's argument; TF 1.15 had none
        _config(self, "Ftrl", self._learning_rate, **more)

    def _hyper_names(self) -> Tuple[str, ...]:
        return ("learning_rate", "lr_power", "l1", "l2", "l2_shrinkage")

    def _create_slots(self, var_list: Any) -> None:
        for v in var_list:  # accumulator then linear, per variable (Keras's order)
            self._make_slot(v, "accumulator", float(self._init))
            self._make_slot(v, "linear", 0.0)

    def _scalars(self, d: _dt.DType) -> list:
        lr = self._hyper("learning_rate", d)
        l2 = self._hyper("l2", d)
        if self._beta:
            l2 = l2 + self._hyper("beta", d) / (2.0 * lr)
        return [lr, self._hyper("l1", d), l2, self._hyper("l2_shrinkage", d), self._hyper("lr_power", d)]

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        lr, l1, l2, shrink, power = self._scalars(var.dtype)
        return T.apply_ftrl(var, self.get_slot(var, "accumulator"), self.get_slot(var, "linear"), lr, l1, l2, shrink,
                            power, grad)

    def _apply_sparse(self, grad: Any, var: Variable) -> _g.Operation:
        lr, l1, l2, shrink, power = self._scalars(var.dtype)
        return T.sparse_apply_ftrl(var, self.get_slot(var, "accumulator"), self.get_slot(var, "linear"), lr, l1, l2,
                                   shrink, power, *_dedup(grad))


_CLASSES = {c.__name__: c for c in (SGD, Adam, RMSprop, Adagrad, Adadelta, Adamax, Nadam,
                                    Ftrl)}
_BY_NAME.update({"adadelta": Adadelta, "adamax": Adamax, "nadam": Nadam, "ftrl": Ftrl})


def serialize(optimizer: Any) -> Dict[str, Any]:
    """{"class_name", "config"} of a Keras optimizer."""
    cfg = getattr(optimizer, "_keras_config", None)
    if cfg is None:
        raise ValueError(f"Cannot serialize {optimizer!r}: not a Keras optimizer")
    return {"class_name": cfg[0], "config": optimizer.get_config()}


def deserialize(config: Dict[str, Any], custom_objects: Optional[Dict[str, Any]] = None) -> Any:
    """The optimizer serialize described; class names are matched as Keras's (case-insensitively for built-ins)."""
    name = config.get("class_name")
    cls = (custom_objects or {}).get(name) or _CLASSES.get(name) or _BY_NAME.get(str(name).lower())
    if cls is None:
        raise ValueError(f"Unknown optimizer: {name}")
    cfg = dict(config.get("config") or {})
    if issubclass(cls, _KerasState):
        return cls.from_config(cfg, custom_objects) if _accepts_custom(cls) else cls.from_config(cfg)
    return cls(**cfg)


def _accepts_custom(cls: type) -> bool:
    import inspect
    try:
        return "custom_objects" in inspect.signature(cls.from_config).parameters
    except (TypeError, ValueError):
        return False


def get(identifier: Any) -> Any:
    """An optimizer from a name, a {"class_name", "config"} dict, a Keras or tf.train optimizer."""
    if isinstance(identifier, dict):
        return deserialize(identifier)
    return _get_base(identifier)
