"""The optimizers of TensorFlow 1.x, each a thin layer over one fused update op.

The update formulas (TensorFlow's) are written out in graph/ops/training_ops.py; every
optimizer accepts a float, a scalar Tensor or Variable (a learning-rate schedule), or a
callable returning one, for each hyperparameter.
"""
from __future__ import annotations

from typing import Any, List, Tuple

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.indexed_slices import IndexedSlices
from ..graph.ops import math_ops, state_ops
from ..graph.ops import training_ops as T
from ..graph.ops.constant_op import constant, group
from ..graph.variables import Variable
from .optimizer import Optimizer, _create_slot_var, _python_number

__all__ = ["GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer", "LazyAdamOptimizer", "AdagradOptimizer",
           "RMSPropOptimizer", "AdadeltaOptimizer", "FtrlOptimizer", "ProximalGradientDescentOptimizer",
           "ProximalAdagradOptimizer"]


def _check_float(name: str, value: Any, low: float = None, strict: bool = False) -> None:
    """Rejects a clearly invalid Python-number hyperparameter at construction time."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and low is not None:
        if value < low or (strict and value == low):
            raise ValueError(f"{name} must be {'>' if strict else '>='} {low}, got {value}")


class GradientDescentOptimizer(Optimizer):
    """var -= learning_rate * grad."""

    def __init__(self, learning_rate: Any, use_locking: bool = False, name: str = "GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    folds_gradient_scale = True

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        return T.apply_gradient_descent(var, self._hyper("learning_rate", var.dtype), grad)

    def _apply_dense_scaled(self, grad: _g.Tensor, var: Variable, scale: _g.Tensor) -> _g.Operation:
        # var -= (lr * scale) * grad: a scalar product instead of a pass over the gradient
        return T.apply_gradient_descent(var, self._hyper("learning_rate", var.dtype) * scale, grad)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> _g.Operation:
        return T.sparse_apply_gradient_descent(var, self._hyper("learning_rate", var.dtype), grad.values,
                                               grad.indices)


class MomentumOptimizer(Optimizer):
    """accum = momentum * accum + grad; var -= learning_rate * accum (or Nesterov's form).

    Slot: "momentum".
    """

    def __init__(self, learning_rate: Any, momentum: Any, use_locking: bool = False, name: str = "Momentum",
                 use_nesterov: bool = False):
        super().__init__(use_locking, name)
        _check_float("momentum", momentum, 0.0)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = bool(use_nesterov)

    def _hyper_names(self) -> Tuple[str, ...]:
        return ("learning_rate", "momentum")

    def _create_slots(self, var_list: List[Variable]) -> None:
        for v in var_list:
            self._zeros_slot(v, "momentum")

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        dt = var.dtype
        return T.apply_momentum(var, self.get_slot(var, "momentum"), self._hyper("learning_rate", dt), grad,
                                self._hyper("momentum", dt), use_nesterov=self._use_nesterov)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> _g.Operation:
        dt = var.dtype
        return T.sparse_apply_momentum(var, self.get_slot(var, "momentum"), self._hyper("learning_rate", dt),
                                       grad.values, grad.indices, self._hyper("momentum", dt),
                                       use_nesterov=self._use_nesterov)


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba), TensorFlow's form: epsilon is added to sqrt(v) without bias correction.

    Slots: "m", "v"; the bias corrections use the non-slot variables beta1_power and
    beta2_power (one pair per graph), multiplied by beta1, beta2 after every step.  A sparse
    gradient (an embedding's IndexedSlices) updates as TF1's does: every row's m and v decay
    and every row of var moves, touched or not (LazyAdamOptimizer touches only the batch's rows).
    """

    def __init__(self, learning_rate: Any = 0.001, beta1: Any = 0.9, beta2: Any = 0.999, epsilon: Any = 1e-8,
                 use_locking: bool = False, name: str = "Adam"):
        super().__init__(use_locking, name)
        for n, v in (("beta1", beta1), ("beta2", beta2)):
            _check_float(n, v, 0.0)
            if isinstance(v, (int, float)) and v >= 1.0:
                raise ValueError(f"{n} must be in [0, 1), got {v}")
        self._learning_rate = learning_rate
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon

    def _hyper_names(self) -> Tuple[str, ...]:
        return ("learning_rate", "beta1", "beta2", "epsilon")

    def _get_beta_accumulators(self, graph: Any = None) -> Tuple[Variable, Variable]:
        g = graph or _g.get_default_graph()
        return self._non_slot_variable("beta1_power", g), self._non_slot_variable("beta2_power", g)

    def _create_slots(self, var_list: List[Variable]) -> None:
        first = min(var_list, key=lambda v: v.name)
        for name, beta in (("beta1_power", self._beta1), ("beta2_power", self._beta2)):
            # TF1's dtypes: a Python float makes float32 powers (a float64 model's bias
            # correction too), a NumPy scalar its own dtype; else the first variable's (a
            # complex model's powers stay real: their part of the step is a real scale)
            if _python_number(beta):
                pdt = _dt.float32
            elif isinstance(beta, np.generic) and beta.dtype.kind == "f":
                pdt = _dt.as_dtype(beta.dtype)
            else:
                pdt = first.dtype.real_dtype if first.dtype.is_complex else first.dtype
            init = beta if isinstance(beta, (_g.Tensor, Variable)) else \
                (lambda b=beta: constant(b, dtype=pdt, name="initial_value"))
            self._create_non_slot_variable(init, name, first)
        for v in var_list:
            self._zeros_slot(v, "m")
            self._zeros_slot(v, "v")

    def _powers(self, var: Variable) -> Tuple[_g.Tensor, _g.Tensor]:
        b1p, b2p = self._get_beta_accumulators(var.graph)
        out = []
        for name, p in (("beta1_power", b1p), ("beta2_power", b2p)):
            key = (name, var.dtype.name)
            t = self._hyper_cache.get(key)
            if t is None:
                t = _g.convert_to_tensor(p)
                if t.dtype != var.dtype:
                    t = math_ops.cast(t, var.dtype, name=f"{name}_{var.dtype.name}")
                self._hyper_cache[key] = t
            out.append(t)
        return out[0], out[1]

    def _args(self, var: Variable) -> list:
        dt = var.dtype
        b1p, b2p = self._powers(var)
        return [var, self.get_slot(var, "m"), self.get_slot(var, "v"), b1p, b2p,
                self._hyper("learning_rate", dt), self._hyper("beta1", dt), self._hyper("beta2", dt),
                self._hyper("epsilon", dt)]

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        return T.apply_adam(*self._args(var), grad)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> _g.Operation:
        return T.sparse_apply_adam(*self._args(var), grad.values, grad.indices, lazy=self._lazy)

    _lazy = False

    def _finish(self, update_ops: List[_g.Operation], name: str) -> _g.Operation:
        # advance the bias-correction powers only after every update has read them
        b1p, b2p = self._get_beta_accumulators()
        g = b1p.graph
        with g.control_dependencies(update_ops), g.device(b1p.device):
            up1 = state_ops.assign(b1p, b1p.value() * self._hyper("beta1", b1p.dtype), name="update_beta1_power")
            up2 = state_ops.assign(b2p, b2p.value() * self._hyper("beta2", b2p.dtype), name="update_beta2_power")
        return group(*update_ops, up1, up2, name=name)


class LazyAdamOptimizer(AdamOptimizer):
    """Adam whose sparse update touches only the rows in the gradient (tf.contrib.opt's
    LazyAdamOptimizer): an embedding row absent from a batch keeps its m, v and value.  Dense
    gradients update as AdamOptimizer.  What large embedding tables use, since TF1's Adam moves
    every row of the table every step.  Its default name is "Adam", as tf.contrib's (slots
    "Adam", "Adam_1": checkpoints of either optimizer restore into the other)."""

    _lazy = True


class AdagradOptimizer(Optimizer):
    """accum += grad^2; var -= learning_rate * grad / sqrt(accum).  Slot: "accumulator"."""

    def __init__(self, learning_rate: Any, initial_accumulator_value: float = 0.1, use_locking: bool = False,
                 name: str = "Adagrad"):
        super().__init__(use_locking, name)
        if not initial_accumulator_value > 0.0:
            raise ValueError(f"initial_accumulator_value must be positive, got {initial_accumulator_value}")
        self._learning_rate = learning_rate
        self._initial_accumulator_value = float(initial_accumulator_value)

    def _create_slots(self, var_list: List[Variable]) -> None:
        for v in var_list:
            self._make_slot(v, "accumulator", self._initial_accumulator_value)

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        return T.apply_adagrad(var, self.get_slot(var, "accumulator"), self._hyper("learning_rate", var.dtype), grad)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> _g.Operation:
        return T.sparse_apply_adagrad(var, self.get_slot(var, "accumulator"),
                                      self._hyper("learning_rate", var.dtype), grad.values, grad.indices)


class RMSPropOptimizer(Optimizer):
    """RMSProp (Hinton), TensorFlow's form; centered=True also tracks the mean gradient.

    Slots: "rms" (starts at ones, as in TensorFlow), "momentum", and "mg" when centered.
    """

    def __init__(self, learning_rate: Any, decay: Any = 0.9, momentum: Any = 0.0, epsilon: Any = 1e-10,
                 use_locking: bool = False, centered: bool = False, name: str = "RMSProp"):
        super().__init__(use_locking, name)
        _check_float("decay", decay, 0.0)
        _check_float("momentum", momentum, 0.0)
        self._learning_rate = learning_rate
        self._decay = decay
        self._momentum = momentum
        self._epsilon = epsilon
        self._centered = bool(centered)

    def _hyper_names(self) -> Tuple[str, ...]:
        return ("learning_rate", "decay", "momentum", "epsilon")

    def _create_slots(self, var_list: List[Variable]) -> None:
        for v in var_list:
            # TF1's order, which names the slots: rms RMSProp, mg RMSProp_1, momentum RMSProp_2
            # (RMSProp_1 without centering)
            self._make_slot(v, "rms", 1.0)
            if self._centered:
                self._zeros_slot(v, "mg")
            self._zeros_slot(v, "momentum")

    def _scalars(self, var: Variable) -> list:
        dt = var.dtype
        return [self._hyper("learning_rate", dt), self._hyper("decay", dt), self._hyper("momentum", dt),
                self._hyper("epsilon", dt)]

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        if self._centered:
            return T.apply_centered_rms_prop(var, self.get_slot(var, "mg"), rms, mom, *self._scalars(var), grad)
        return T.apply_rms_prop(var, rms, mom, *self._scalars(var), grad)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> _g.Operation:
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        if self._centered:
            return T.sparse_apply_centered_rms_prop(var, self.get_slot(var, "mg"), rms, mom, *self._scalars(var),
                                                    grad.values, grad.indices)
        return T.sparse_apply_rms_prop(var, rms, mom, *self._scalars(var), grad.values, grad.indices)


class AdadeltaOptimizer(Optimizer):
    """Adadelta (Zeiler 2012), TensorFlow's form: accum and accum_update decay with rho; the
    step is lr * sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad.  Slots:
    "accum", "accum_update" (zeros)."""

    def __init__(self, learning_rate: Any = 0.001, rho: Any = 0.95, epsilon: Any = 1e-8, use_locking: bool = False,
                 name: str = "Adadelta"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._rho = rho
        self._epsilon = epsilon

    def _hyper_names(self) -> Tuple[str, ...]:
        return ("learning_rate", "rho", "epsilon")

    def _create_slots(self, var_list: List[Variable]) -> None:
        for v in var_list:
            self._zeros_slot(v, "accum")
            self._zeros_slot(v, "accum_update")

    def _args(self, var: Variable) -> list:
        return [var, self.get_slot(var, "accum"), self.get_slot(var, "accum_update")] + [
            self._hyper(n, var.dtype) for n in self._hyper_names()]

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        return T.apply_adadelta(*self._args(var), grad)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> _g.Operation:
        return T.sparse_apply_adadelta(*self._args(var), grad.values, grad.indices)


class FtrlOptimizer(Optimizer):
    """FTRL-proximal (McMahan et al. 2013), TensorFlow's FtrlOptimizer: per-coordinate rates
    from the accumulated squared gradients, L1 (sparsity), L2 and L2-shrinkage regularization,
    `beta` folded into L2 as TensorFlow does (l2 + beta / (2 lr)).  Slots: "accum" (starts at
    initial_accumulator_value) and "linear" (zeros), named "<var>/<accum_name or name>" and
    "<var>/<linear_name or name>" (the second made unique: "<var>/Ftrl_1"), as in TF1."""

    def __init__(self, learning_rate: Any, learning_rate_power: float = -0.5, initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0, l2_regularization_strength: float = 0.0,
                 use_locking: bool = False, name: str = "Ftrl", accum_name: Any = None, linear_name: Any = None,
                 l2_shrinkage_regularization_strength: float = 0.0, beta: Any = None):
        super().__init__(use_locking, name)
        for what, v, ok in (("initial_accumulator_value", initial_accumulator_value, lambda x: x >= 0.0),
                            ("learning_rate_power", learning_rate_power, lambda x: x <= 0.0),
                            ("l1_regularization_strength", l1_regularization_strength, lambda x: x >= 0.0),
                            ("l2_regularization_strength", l2_regularization_strength, lambda x: x >= 0.0),
                            ("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength,
                             lambda x: x >= 0.0)):
            if not ok(float(v)):
                raise ValueError(f"FtrlOptimizer: {what} = {v} is out of range (TensorFlow's limits: "
                                 "initial_accumulator_value, l1, l2, l2_shrinkage >= 0; learning_rate_power <= 0)")
        self._learning_rate = learning_rate
        self._lr_power = float(learning_rate_power)
        self._initial_accumulator_value = float(initial_accumulator_value)
        self._l1 = float(l1_regularization_strength)
        self._l2_shrinkage = float(l2_shrinkage_regularization_strength)
        self._accum_name, self._linear_name = accum_name, linear_name
        l2, b = float(l2_regularization_strength), (0.0 if beta is None else beta)
        if not b:
            self._l2 = l2
        elif isinstance(learning_rate, (int, float)):
            self._l2 = l2 + float(b) / (2.0 * max(float(learning_rate), 1e-36))
        else:  # a tensor learning rate: the adjusted L2 is a tensor too
            self._l2 = lambda: l2 + b / (2.0 * math_ops.maximum(learning_rate, 1e-36))

    def _hyper_names(self) -> Tuple[str, ...]:
        return ("learning_rate", "l1", "l2", "l2_shrinkage", "lr_power")

    def _create_slots(self, var_list: List[Variable]) -> None:
        for v in var_list:
            for slot, suffix, value in (("accum", self._accum_name, self._initial_accumulator_value),
                                        ("linear", self._linear_name, 0.0)):
                table = self._slot_table(slot)
                if v not in table:
                    table[v] = _create_slot_var(v, value, suffix or self._name)

    def _args(self, var: Variable) -> list:
        return [var, self.get_slot(var, "accum"), self.get_slot(var, "linear")] + [
            self._hyper(n, var.dtype) for n in self._hyper_names()]

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        return T.apply_ftrl(*self._args(var), grad)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> _g.Operation:
        return T.sparse_apply_ftrl(*self._args(var), grad.values, grad.indices)


class ProximalGradientDescentOptimizer(Optimizer):
    """Gradient descent followed by the proximal step of L1 and L2 regularization (TF's
    ProximalGradientDescentOptimizer): with p = var - lr * grad,
    var = sign(p) * max(|p| - lr * l1, 0) / (1 + lr * l2)."""

    def __init__(self, learning_rate: Any, l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, use_locking: bool = False,
                 name: str = "ProximalGradientDescent"):
        super().__init__(use_locking, name)
        _check_float("l1_regularization_strength", l1_regularization_strength, 0.0)
        _check_float("l2_regularization_strength", l2_regularization_strength, 0.0)
        self._learning_rate = learning_rate
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _args(self, var: Variable) -> list:
        return [var] + [self._hyper(n, var.dtype) for n in ("learning_rate", "l1", "l2")]

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        return T.apply_proximal_gradient_descent(*self._args(var), grad)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> _g.Operation:
        return T.sparse_apply_proximal_gradient_descent(*self._args(var), grad.values, grad.indices)


class ProximalAdagradOptimizer(Optimizer):
    """Adagrad followed by the proximal step of L1 and L2 regularization (TF's
    ProximalAdagradOptimizer), at each element's Adagrad rate a = lr / sqrt(accum).
    Slot: "accumulator" (starts at initial_accumulator_value)."""

    def __init__(self, learning_rate: Any, initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0, l2_regularization_strength: float = 0.0,
                 use_locking: bool = False, name: str = "ProximalAdagrad"):
        super().__init__(use_locking, name)
        if not initial_accumulator_value > 0.0:
            raise ValueError(f"initial_accumulator_value must be positive, got {initial_accumulator_value}")
        _check_float("l1_regularization_strength", l1_regularization_strength, 0.0)
        _check_float("l2_regularization_strength", l2_regularization_strength, 0.0)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = float(initial_accumulator_value)
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _create_slots(self, var_list: List[Variable]) -> None:
        for v in var_list:
            self._make_slot(v, "accumulator", self._initial_accumulator_value)

    def _args(self, var: Variable) -> list:
        return [var, self.get_slot(var, "accumulator")] + [self._hyper(n, var.dtype)
                                                           for n in ("learning_rate", "l1", "l2")]

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        return T.apply_proximal_adagrad(*self._args(var), grad)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> _g.Operation:
        return T.sparse_apply_proximal_adagrad(*self._args(var), grad.values, grad.indices)
