"""tf.contrib.opt's sign-based optimizers of Neural Optimizer Search (Bello et al., ICML 2017):
AddSignOptimizer, PowerSignOptimizer, and the sign decay schedules of tf.contrib.opt's
sign_decay module (get_linear_decay_fn, get_cosine_decay_fn, get_restart_decay_fn).

Both keep one slot "m" and follow TF's kernels (ApplyAddSign, ApplyPowerSign):
    m = m * beta + g * (1 - beta);  s = sign(g) * sign(m)
    AddSign:   var -= lr * (alpha + sign_decay * s) * g
    PowerSign: var -= lr * exp(log(base) * sign_decay * s) * g
sign_decay is sign_decay_fn(global_step) when a sign_decay_fn is given (apply_gradients calls
it with its global_step), else 1.  A sparse gradient decays every row of m (as TF 1.15's
contrib implementations, which densify the gradient there) and moves only the touched rows
of var.  Compositions of collflow's variable ops; duplicate indices are summed first (TF1).
"""
from __future__ import annotations

import math
from typing import Any, Callable, List, Optional, Tuple

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.indexed_slices import IndexedSlices
from ..graph.ops import array_ops, math_ops, state_ops
from ..graph.ops.constant_op import group
from ..graph.variables import Variable
from ..train.optimizer import Optimizer
from .opt_adam_variants import summed_rows

__all__ = ["AddSignOptimizer", "PowerSignOptimizer", "get_linear_decay_fn", "get_cosine_decay_fn",
           "get_restart_decay_fn"]

DecayFn = Callable[[Any], _g.Tensor]


def _f32(x: Any) -> _g.Tensor:
    return math_ops.cast(x, _dt.float32)


def _need_step(global_step: Any, what: str) -> None:
    if global_step is None:
        raise ValueError(f"global_step is required for {what}.")


def get_linear_decay_fn(decay_steps: int) -> DecayFn:
    """fn(global_step) = max(0, (decay_steps - min(global_step, decay_steps)) / decay_steps), float32."""
    def linear_decay_fn(global_step: Any) -> _g.Tensor:
        _need_step(global_step, "linear_decay")
        step = math_ops.minimum(global_step, decay_steps)
        # TF counts the remaining steps in int32 before the division
        remaining = math_ops.cast(decay_steps, _dt.int32) - math_ops.cast(step, _dt.int32)
        return math_ops.maximum(0.0, _f32(remaining) / _f32(decay_steps))
    return linear_decay_fn


def get_cosine_decay_fn(decay_steps: int, num_periods: float = 0.5, zero_after: Optional[float] = None) -> DecayFn:
    """fn(global_step) = 0.5 (1 + cos(2 pi num_periods min(global_step, decay_steps) / decay_steps));
    0 from 2 num_periods min(step, decay_steps) / decay_steps >= 2 zero_after on when zero_after is set."""
    def cosine_decay_fn(global_step: Any) -> _g.Tensor:
        _need_step(global_step, "cosine_decay")
        step = math_ops.minimum(global_step, decay_steps)
        fraction = 2.0 * num_periods * (_f32(step) / _f32(decay_steps))
        decayed = 0.5 * (1.0 + math_ops.cos(math.pi * fraction))
        if zero_after is not None:
            decayed = array_ops.where(math_ops.greater_equal(fraction, 2 * zero_after), 0.0 * decayed, decayed)
        return decayed
    return cosine_decay_fn


def get_restart_decay_fn(decay_steps: int, num_periods: float = 1, zero_after: Optional[float] = None) -> DecayFn:
    """fn(global_step) = 0.5 (1 + cos(pi ((num_periods s) mod decay_steps) / decay_steps)) for
    s = min(global_step, decay_steps) (TF's clipping, kept); 0 from num_periods s / decay_steps
    >= zero_after on when zero_after is set."""
    def restart_decay_fn(global_step: Any) -> _g.Tensor:
        _need_step(global_step, "cosine_decay")
        step = math_ops.minimum(global_step, decay_steps)
        num = math_ops.mod(num_periods * _f32(step), _f32(decay_steps))
        decayed = 0.5 * (1.0 + math_ops.cos(math.pi * (num / _f32(decay_steps))))
        if zero_after is not None:
            periods = _f32(num_periods * _f32(step)) / _f32(decay_steps)
            decayed = array_ops.where(math_ops.greater_equal(periods, zero_after), 0.0 * decayed, decayed)
        return decayed
    return restart_decay_fn


class _SignOptimizer(Optimizer):
    """What AddSign and PowerSign share: slot "m", beta, the sign decay, and the update layout."""

    def __init__(self, learning_rate: Any, beta: Any, sign_decay_fn: Optional[DecayFn], use_locking: bool,
                 name: str):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._beta = beta
        self._sign_decay_fn = sign_decay_fn
        self._sign_decay: Any = 1.0

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None, name: Optional[str] = None,
                        **kwargs: Any) -> _g.Operation:
        """Optimizer.apply_gradients; the sign decay is sign_decay_fn(global_step) when given."""
        if self._sign_decay_fn is not None:
            self._sign_decay = _g.convert_to_tensor(self._sign_decay_fn(global_step), name="sign_decay")
        return super().apply_gradients(grads_and_vars, global_step=global_step, name=name, **kwargs)

    def _hyper_names(self) -> Tuple[str, ...]:
        return ("learning_rate", "beta", "sign_decay") + self._extra_hypers

    _extra_hypers: Tuple[str, ...] = ()

    def _create_slots(self, var_list: List[Variable]) -> None:
        for v in var_list:
            self._zeros_slot(v, "m")

    def _multiplier(self, sign_gm: _g.Tensor, dtype: _dt.DType) -> _g.Tensor:
        """The factor the gradient is scaled by, from sign(g) * sign(m)."""
        raise NotImplementedError

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        dt = var.dtype
        beta = self._hyper("beta", dt)
        m = self.get_slot(var, "m")
        m_t = state_ops.assign(m, m.read_value() * beta + grad * (1 - beta))
        mult = self._multiplier(math_ops.sign(grad) * math_ops.sign(m_t), dt)
        up = state_ops.assign_sub(var, self._hyper("learning_rate", dt) * mult * grad)
        return group(up, m_t)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> _g.Operation:
        dt = var.dtype
        beta = self._hyper("beta", dt)
        rows, g = summed_rows(grad)
        m = self.get_slot(var, "m")
        # m = m * beta + dense(g) * (1 - beta): the untouched rows only decay
        m_decayed = state_ops.assign(m, m.read_value() * beta)
        with _g.get_default_graph().control_dependencies([m_decayed]):
            m_t = state_ops.scatter_add(m, rows, g * (1 - beta))
        sign_gm = array_ops.gather(math_ops.sign(m_t), rows) * math_ops.sign(g)
        up = state_ops.scatter_sub(var, rows, self._hyper("learning_rate", dt) * self._multiplier(sign_gm, dt) * g)
        return group(up, m_t)


class AddSignOptimizer(_SignOptimizer):
    """AddSign: var -= lr * (alpha + sign_decay * sign(g) * sign(m)) * g.  Slot "m"."""

    _extra_hypers = ("alpha",)

    def __init__(self, learning_rate: Any = 0.1, alpha: Any = 1.0, beta: Any = 0.9,
                 sign_decay_fn: Optional[DecayFn] = None, use_locking: bool = False,
                 name: str = "AddSignOptimizer"):
        super().__init__(learning_rate, beta, sign_decay_fn, use_locking, name)
        self._alpha = alpha

    def _multiplier(self, sign_gm: _g.Tensor, dtype: _dt.DType) -> _g.Tensor:
        return self._hyper("alpha", dtype) + self._hyper("sign_decay", dtype) * sign_gm


class PowerSignOptimizer(_SignOptimizer):
    """PowerSign: var -= lr * base^(sign_decay * sign(g) * sign(m)) * g.  Slot "m"."""

    _extra_hypers = ("logbase",)

    def __init__(self, learning_rate: Any = 0.1, base: Any = math.e, beta: Any = 0.9,
                 sign_decay_fn: Optional[DecayFn] = None, use_locking: bool = False,
                 name: str = "PowerSignOptimizer"):
        super().__init__(learning_rate, beta, sign_decay_fn, use_locking, name)
        self._base = base
        # TF takes log(base) once, as a float32 scalar the updates cast to the variable's dtype
        self._logbase: Any = math.log(base) if isinstance(base, (int, float)) else \
            (lambda: math_ops.log(_g.convert_to_tensor(base)))

    def _multiplier(self, sign_gm: _g.Tensor, dtype: _dt.DType) -> _g.Tensor:
        return math_ops.exp(self._hyper("logbase", dtype) * self._hyper("sign_decay", dtype) * sign_gm)
