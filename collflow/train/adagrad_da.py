"""TF1's `tf.train.AdagradDAOptimizer`: Adagrad dual averaging (Duchi et al.), for sparse
linear models trained with L1/L2 regularization.

Slots "gradient_accumulator" (sum of gradients, from 0) and "gradient_squared_accumulator"
(sum of squared gradients, from initial_gradient_squared_accumulator_value).  With t the
global step + 1 at the time of the update, each element becomes, after the accumulators g
and gg take in the gradient:

    var = lr * sign(-g) * max(|g| - l1 * t, 0) / (l2 * t * lr + sqrt(gg))   (l1 > 0)
    var = -lr * g / (l2 * t * lr + sqrt(gg))                                  (l1 == 0)

Built from assign/scatter ops (no fused kernel): a sparse gradient's duplicate indices are
summed first, as TF1's optimizers do, and only its rows change.
"""
from __future__ import annotations

from typing import Any, List

from ..graph import graph as _g
from ..graph.indexed_slices import IndexedSlices
from ..graph.ops import math_ops as _m
from ..graph.ops import state_ops
from ..graph.ops.partition_ops import unique
from ..graph.ops.segment_ops import unsorted_segment_sum
from ..graph.ops.slicing_ops import gather
from ..graph.variables import Variable
from .optimizer import Optimizer

__all__ = ["AdagradDAOptimizer"]


class AdagradDAOptimizer(Optimizer):
    """Adagrad dual averaging (TF1's AdagradDAOptimizer); `global_step` is required: the
    closed-form update depends on the step count."""

    def __init__(self, learning_rate: Any, global_step: Any, initial_gradient_squared_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0, l2_regularization_strength: float = 0.0,
                 use_locking: bool = False, name: str = "AdagradDA"):
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError("initial_gradient_squared_accumulator_value must be positive: "
                             f"{initial_gradient_squared_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_gradient_squared_accumulator_value = float(initial_gradient_squared_accumulator_value)
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength
        self._global_step = global_step
        self._step_on_worker: Any = None

    def _hyper_names(self) -> tuple:
        return ("learning_rate", "l1", "l2")

    def _create_slots(self, var_list: List[Variable]) -> None:
        for v in var_list:
            self._make_slot(v, "gradient_accumulator", 0.0)
            self._make_slot(v, "gradient_squared_accumulator", self._initial_gradient_squared_accumulator_value)

    def _prepare(self) -> None:
        # read once per step, before global_step's increment (which waits for the updates)
        self._step_on_worker = _g.convert_to_tensor(self._global_step) + 1

    def _new_value(self, g: _g.Tensor, gg: _g.Tensor, var: Variable) -> _g.Tensor:
        dt = var.dtype.base_dtype if hasattr(var.dtype, "base_dtype") else var.dtype
        lr, l1, l2 = (self._hyper(n, dt) for n in ("learning_rate", "l1", "l2"))
        t = _m.cast(self._step_on_worker, dt)
        denom = l2 * t * lr + _m.sqrt(gg)
        shrunk = _m.sign(-g) * _m.maximum(_m.abs(g) - l1 * t, 0.0)
        # l1 may be a tensor: TF's two branches, chosen at run time
        plain = -g
        return lr * _select(_m.greater(l1, 0.0), shrunk, plain) / denom

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        g = state_ops.assign_add(self.get_slot(var, "gradient_accumulator"), grad, use_locking=self._use_locking)
        gg = state_ops.assign_add(self.get_slot(var, "gradient_squared_accumulator"), _m.square(grad),
                                  use_locking=self._use_locking)
        return state_ops.assign(var, self._new_value(g, gg, var), use_locking=self._use_locking).op

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> _g.Operation:
        idx, pos = unique(grad.indices)
        n = _g.convert_to_tensor(_array_size(idx))
        vals = unsorted_segment_sum(grad.values, pos, n)
        g_acc = self.get_slot(var, "gradient_accumulator")
        gg_acc = self.get_slot(var, "gradient_squared_accumulator")
        g_new = state_ops.scatter_add(g_acc, idx, vals, use_locking=self._use_locking)
        gg_new = state_ops.scatter_add(gg_acc, idx, _m.square(vals), use_locking=self._use_locking)
        g_rows = gather(g_new, idx)
        gg_rows = gather(gg_new, idx)
        return state_ops.scatter_update(var, idx, self._new_value(g_rows, gg_rows, var),
                                        use_locking=self._use_locking).op


def _array_size(x: _g.Tensor) -> _g.Tensor:
    from ..graph.ops.array_ops import shape
    return shape(x)[0]


def _select(cond: _g.Tensor, a: _g.Tensor, b: _g.Tensor) -> _g.Tensor:
    """a where the scalar `cond` holds, else b (both of one shape)."""
    c = _m.cast(cond, a.dtype)
    return c * a + (1 - c) * b
