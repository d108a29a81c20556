"""tf.contrib.opt's Adam variants: AdaMaxOptimizer and NadamOptimizer (TF 1.15 semantics).

AdaMax (Kingma & Ba, section 7.1), TF's ApplyAdaMax kernel:
    m += (g - m) * (1 - beta1);  v = max(beta2 * v, |g|)
    var -= lr / (1 - beta1_power) * m / (v + epsilon)
Its one non-slot variable is "beta1_power" (no beta2_power: the infinity norm needs no
bias correction).  A sparse gradient updates only the touched rows of m, v and var.

Nadam (Dozat 2016), TF's ApplyAdam with use_nesterov=True:
    lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
    m += (g - m) * (1 - beta1);  v += (g*g - v) * (1 - beta2)
    var -= lr_t * (beta1 * m + (1 - beta1) * g) / (sqrt(v) + epsilon)
A sparse gradient decays every row's m and v (as TF1's Adam) but moves only the touched rows
of var, as TF 1.15's contrib NadamOptimizer.

Both are compositions of collflow's variable ops (assign, scatter): no new kernels.  As in
TF1, a sparse gradient's duplicate indices are summed before the update.
"""
from __future__ import annotations

from typing import Any, List, Tuple

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.indexed_slices import IndexedSlices
from ..graph.ops import array_ops, math_ops, state_ops
from ..graph.ops.constant_op import constant, group
from ..graph.ops.partition_ops import unique
from ..graph.ops.segment_ops import unsorted_segment_sum
from ..graph.variables import Variable
from ..train.optimizer import _python_number
from ..train.optimizers import AdamOptimizer

__all__ = ["AdaMaxOptimizer", "NadamOptimizer"]


def summed_rows(grad: IndexedSlices) -> Tuple[_g.Tensor, _g.Tensor]:
    """(unique row indices, gradient rows summed per index): TF1's optimizers see each row once."""
    rows, pos = unique(grad.indices)
    values = unsorted_segment_sum(grad.values, pos, array_ops.shape(rows)[0])
    return rows, values


def _power_dtype(beta: Any, first: Variable) -> _dt.DType:
    # the dtypes of AdamOptimizer's beta powers (TF1's): Python float -> float32, NumPy scalar
    # -> its own dtype, else the first variable's real dtype
    if _python_number(beta):
        return _dt.float32
    if isinstance(beta, np.generic) and beta.dtype.kind == "f":
        return _dt.as_dtype(beta.dtype)
    return first.dtype.real_dtype if first.dtype.is_complex else first.dtype


class AdaMaxOptimizer(AdamOptimizer):
    """AdaMax: Adam with the infinity norm in place of v.  Slots "m", "v"; non-slot "beta1_power"."""

    def __init__(self, learning_rate: Any = 0.001, beta1: Any = 0.9, beta2: Any = 0.999, epsilon: Any = 1e-8,
                 use_locking: bool = False, name: str = "AdaMax"):
        super().__init__(learning_rate, beta1, beta2, epsilon, use_locking, name)

    def _get_beta_accumulators(self, graph: Any = None) -> Variable:  # type: ignore[override]
        return self._non_slot_variable("beta1_power", graph or _g.get_default_graph())

    def _create_slots(self, var_list: List[Variable]) -> None:
        # on the first variable by name, as Adam's powers: every worker picks the same device
        first = min(var_list, key=lambda v: v.name)
        beta, pdt = self._beta1, _power_dtype(self._beta1, first)
        init = beta if isinstance(beta, (_g.Tensor, Variable)) else \
            (lambda: constant(beta, dtype=pdt, name="initial_value"))
        self._create_non_slot_variable(init, "beta1_power", first)
        for v in var_list:
            self._zeros_slot(v, "m")
            self._zeros_slot(v, "v")

    def _step_size(self, var: Variable) -> _g.Tensor:
        """lr / (1 - beta1_power) in var's dtype (cached per dtype, like the hyperparameters)."""
        key = ("adamax_step", var.dtype.name)
        t = self._hyper_cache.get(key)
        if t is None:
            p = _g.convert_to_tensor(self._get_beta_accumulators(var.graph))
            if p.dtype != var.dtype:
                p = math_ops.cast(p, var.dtype)
            t = self._hyper("learning_rate", var.dtype) / (1 - p)
            self._hyper_cache[key] = t
        return t

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        dt = var.dtype
        b1, b2, eps = (self._hyper(n, dt) for n in ("beta1", "beta2", "epsilon"))
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = state_ops.assign(m, m.read_value() + (grad - m.read_value()) * (1 - b1))
        v_t = state_ops.assign(v, math_ops.maximum(b2 * v.read_value(), math_ops.abs(grad)))
        up = state_ops.assign_sub(var, self._step_size(var) * (m_t / (v_t + eps)))
        return group(up, m_t, v_t)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> _g.Operation:
        # TF 1.15's contrib AdaMax: only the touched rows of m, v and var change
        dt = var.dtype
        b1, b2, eps = (self._hyper(n, dt) for n in ("beta1", "beta2", "epsilon"))
        rows, g = summed_rows(grad)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_rows = array_ops.gather(m.read_value(), rows) * b1 + g * (1 - b1)
        v_rows = math_ops.maximum(array_ops.gather(v.read_value(), rows) * b2, math_ops.abs(g))
        m_t = state_ops.scatter_update(m, rows, m_rows)
        v_t = state_ops.scatter_update(v, rows, v_rows)
        up = state_ops.scatter_add(var, rows, -self._step_size(var) * (m_rows / (v_rows + eps)))
        return group(up, m_t, v_t)

    def _finish(self, update_ops: List[_g.Operation], name: str) -> _g.Operation:
        # beta1_power advances once every update has read it
        b1p = self._get_beta_accumulators()
        g = b1p.graph
        with g.control_dependencies(update_ops), g.device(b1p.device):
            up = state_ops.assign(b1p, b1p.value() * self._hyper("beta1", b1p.dtype), name="update_beta1_power")
        return group(*update_ops, up, name=name)


class NadamOptimizer(AdamOptimizer):
    """Adam with Nesterov momentum.  Slots "m", "v"; non-slots "beta1_power", "beta2_power"."""

    def __init__(self, learning_rate: Any = 0.001, beta1: Any = 0.9, beta2: Any = 0.999, epsilon: Any = 1e-8,
                 use_locking: bool = False, name: str = "Adam"):
        # TF 1.15's NadamOptimizer keeps Adam's default name (its slots are "<var>/Adam", "<var>/Adam_1")
        super().__init__(learning_rate, beta1, beta2, epsilon, use_locking, name)

    def _scalars(self, var: Variable) -> Tuple[_g.Tensor, ...]:
        """(lr_t, beta1, beta2, epsilon) in var's dtype; lr_t carries the bias corrections."""
        dt = var.dtype
        b1p, b2p = self._powers(var)
        lr_t = self._hyper("learning_rate", dt) * math_ops.sqrt(1 - b2p) / (1 - b1p)
        return (lr_t,) + tuple(self._hyper(n, dt) for n in ("beta1", "beta2", "epsilon"))

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        lr_t, b1, b2, eps = self._scalars(var)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = state_ops.assign(m, m.read_value() + (grad - m.read_value()) * (1 - b1))
        v_t = state_ops.assign(v, v.read_value() + (grad * grad - v.read_value()) * (1 - b2))
        # the Nesterov look-ahead: this step's gradient enters the numerator once more
        num = (grad * (1 - b1) + b1 * m_t) * lr_t
        up = state_ops.assign_sub(var, num / (math_ops.sqrt(v_t) + eps))
        return group(up, m_t, v_t)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> _g.Operation:
        lr_t, b1, b2, eps = self._scalars(var)
        rows, g = summed_rows(grad)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        # every row's moments decay (as TF1's Adam); the touched rows add this step's share
        m_scaled = g * (1 - b1)
        m_decayed = state_ops.assign(m, m.read_value() * b1)
        with _g.get_default_graph().control_dependencies([m_decayed]):
            m_t = state_ops.scatter_add(m, rows, m_scaled)
        m_bar = m_scaled + b1 * array_ops.gather(m_t, rows)
        v_decayed = state_ops.assign(v, v.read_value() * b2)
        with _g.get_default_graph().control_dependencies([v_decayed]):
            v_t = state_ops.scatter_add(v, rows, (g * g) * (1 - b2))
        step = -lr_t * m_bar / (math_ops.sqrt(array_ops.gather(v_t, rows)) + eps)
        up = state_ops.scatter_add(var, rows, step)
        return group(up, m_t, v_t)
