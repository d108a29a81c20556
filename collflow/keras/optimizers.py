"""tf.keras.optimizers (TF1's graph mode): Keras's names, arguments and defaults over
collflow's optimizers, with Keras's update rules where they differ from tf.train's
(RMSprop's accumulator starts at zero and, without momentum, adds epsilon outside the square
root; Adagrad adds epsilon).  A tf.train optimizer is accepted wherever Keras takes one."""
from __future__ import annotations

from typing import Any, List

from ..graph import graph as _g
from ..graph.ops import math_ops as _m
from ..graph.ops import state_ops as _s
from ..graph.ops.constant_op import group
from ..graph.variables import Variable
from ..train import optimizers as _o
from ..train.optimizer import Optimizer

__all__ = ["SGD", "Adam", "RMSprop", "Adagrad", "get", "attach_lr_variable"]


def _lr(learning_rate: Any, kwargs: dict) -> Any:
    # Keras 1.x-2.2 programs pass lr=
    return kwargs.pop("lr", learning_rate)


def _leftover(kwargs: dict, cls: str) -> None:
    kwargs.pop("decay", None) if kwargs.get("decay", 0) in (0, 0.0) else None
    kwargs.pop("clipnorm", None) if kwargs.get("clipnorm") is None else None
    kwargs.pop("clipvalue", None) if kwargs.get("clipvalue") is None else None
    if kwargs:
        raise TypeError(f"{cls}: unsupported arguments {sorted(kwargs)} (decay, clipnorm and clipvalue are not "
                        "supported by collflow's Keras optimizers)")


def SGD(learning_rate: float = 0.01, momentum: float = 0.0, nesterov: bool = False, name: str = "SGD",  # noqa: N802
        **kwargs: Any) -> Optimizer:
    """Keras's SGD: plain, or with (Nesterov) momentum (the same steps as tf.train's)."""
    lr = _lr(learning_rate, kwargs)
    _leftover(kwargs, "SGD")
    opt = _KerasMomentum(lr, momentum, nesterov, name) if momentum else _o.GradientDescentOptimizer(lr, name=name)
    opt._keras_config = ("SGD", {"name": name, "learning_rate": lr, "decay": 0.0, "momentum": momentum,
                                 "nesterov": nesterov})  # model.save's training config
    return opt


class _KerasMomentum(Optimizer):
    """Keras's momentum: v = m*v - lr*g; var += v (Nesterov: var += m*v - lr*g).  Unlike
    tf.train's (accum = m*accum + g; var -= lr*accum), a changed learning rate scales only
    the new gradients (LearningRateScheduler, ReduceLROnPlateau)."""

    def __init__(self, learning_rate: Any, momentum: float, nesterov: bool, name: str):
        super().__init__(False, name)
        self._learning_rate = learning_rate
        self._momentum, self._nesterov = float(momentum), bool(nesterov)

    def _create_slots(self, var_list: List[Variable]) -> None:
        for v in var_list:
            self._zeros_slot(v, "momentum")

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        v = self.get_slot(var, "momentum")
        step = _m.cast(self._learning_rate, grad.dtype) * grad
        v_t = _s.assign(v, self._momentum * v.value() - step)
        return group(_s.assign_add(var, self._momentum * v_t - step if self._nesterov else v_t))

    def _apply_sparse(self, grad: Any, var: Variable) -> _g.Operation:
        return self._apply_dense(_dense(grad), var)


def Adam(learning_rate: float = 0.001, beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7,  # noqa: N802
         amsgrad: bool = False, name: str = "Adam", **kwargs: Any) -> Optimizer:
    """Keras's Adam (tf.train's update with Keras's epsilon 1e-7)."""
    if amsgrad:
        raise NotImplementedError("Adam(amsgrad=True) is not supported by collflow")
    lr = _lr(learning_rate, kwargs)
    _leftover(kwargs, "Adam")
    opt = _o.AdamOptimizer(lr, beta_1, beta_2, epsilon, name=name)
    opt._keras_config = ("Adam", {"name": name, "learning_rate": lr, "decay": 0.0, "beta_1": beta_1,
                                  "beta_2": beta_2, "epsilon": epsilon, "amsgrad": False})
    return opt


class RMSprop(Optimizer):
    """Keras's RMSprop: rms = rho*rms + (1-rho)*g^2 from zero; without momentum var -= lr*g /
    (sqrt(rms) + epsilon), with momentum TF's kernel form (mom = m*mom + lr*g/sqrt(rms + eps))."""

    def __init__(self, learning_rate: float = 0.001, rho: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, name: str = "RMSprop", **kwargs: Any):
        super().__init__(False, name)
        self._lr, self._rho, self._momentum, self._eps = _lr(learning_rate, kwargs), rho, momentum, epsilon
        self._learning_rate = self._lr
        self._keras_config = ("RMSprop", {"name": name, "learning_rate": self._lr, "decay": 0.0, "rho": rho,
                                          "momentum": momentum, "epsilon": epsilon, "centered": centered})
        _leftover(kwargs, "RMSprop")
        if centered:
            raise NotImplementedError("RMSprop(centered=True) is not supported by collflow's Keras optimizers")

    def _create_slots(self, var_list: List[Variable]) -> None:
        for v in var_list:
            self._zeros_slot(v, "rms")
            if self._momentum:
                self._zeros_slot(v, "momentum")

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        rms = self.get_slot(var, "rms")
        rms_t = _s.assign(rms, self._rho * rms.value() + (1.0 - self._rho) * _m.square(grad))
        if self._momentum:
            mom = self.get_slot(var, "momentum")
            mom_t = _s.assign(mom, self._momentum * mom.value() + self._lr * grad / _m.sqrt(rms_t + self._eps))
            return group(_s.assign_sub(var, mom_t))
        return group(_s.assign_sub(var, self._lr * grad / (_m.sqrt(rms_t) + self._eps)))

    def _apply_sparse(self, grad: Any, var: Variable) -> _g.Operation:
        return self._apply_dense(_dense(grad), var)


def _dense(grad: Any) -> _g.Tensor:
    return _g.convert_to_tensor(grad)  # an embedding's IndexedSlices gradient, densified


class Adagrad(Optimizer):
    """Keras's Adagrad: acc += g^2 (from initial_accumulator_value); var -= lr*g / (sqrt(acc) + epsilon)."""

    def __init__(self, learning_rate: float = 0.001, initial_accumulator_value: float = 0.1,
                 epsilon: float = 1e-7, name: str = "Adagrad", **kwargs: Any):
        super().__init__(False, name)
        self._lr, self._init, self._eps = _lr(learning_rate, kwargs), initial_accumulator_value, epsilon
        self._learning_rate = self._lr
        self._keras_config = ("Adagrad", {"name": name, "learning_rate": self._lr, "decay": 0.0,
                                          "initial_accumulator_value": initial_accumulator_value,
                                          "epsilon": epsilon})
        _leftover(kwargs, "Adagrad")

    def _create_slots(self, var_list: List[Variable]) -> None:
        for v in var_list:
            self._make_slot(v, "accumulator", self._init)

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        acc = self.get_slot(var, "accumulator")
        acc_t = _s.assign_add(acc, _m.square(grad))
        return group(_s.assign_sub(var, self._lr * grad / (_m.sqrt(acc_t) + self._eps)))

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
    if isinstance(value, (_g.Tensor, Variable)):
        opt.lr = opt.learning_rate = value
        return
    from ..graph.variable_scope import variable_scope
    with graph.as_default(), _g.name_scope(None), _g.control_dependencies(None), \
            variable_scope(None, default_name=opt.get_name()):
        var = Variable(float(value), trainable=False, name="learning_rate")
    opt._learning_rate = var
    if hasattr(opt, "_lr"):
        opt._lr = var  # Keras's RMSprop / Adagrad read it as _lr
    opt.lr = opt.learning_rate = var
