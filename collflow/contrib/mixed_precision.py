"""tf.contrib.mixed_precision (TF 1.x): LossScaleOptimizer driven by a LossScaleManager.

  * `FixedLossScaleManager(loss_scale)`: a constant scale.
  * `ExponentialUpdateLossScaleManager(init_loss_scale, incr_every_n_steps,
    decr_every_n_nan_or_inf=2, incr_ratio=2, decr_ratio=0.8)`: the variables `loss_scale`
    (float32), `good_steps` and `bad_steps` (int32), made when the manager is built under the
    current name scope.  After `incr_every_n_steps` consecutive finite steps the scale is
    multiplied by incr_ratio (kept if that overflows); after `decr_every_n_nan_or_inf` non-finite
    steps (not necessarily consecutive) it is multiplied by decr_ratio (not below 1).  A change of
    the scale resets both counts; a non-finite step resets the good count.
  * `LossScaleOptimizer(opt, loss_scale_manager)`: compute_gradients scales the loss and
    multiplies the gradients by 1/scale; apply_gradients applies the wrapped optimizer only when
    every gradient is finite, with either manager (the core
    tf.train.experimental.MixedPrecisionLossScaleOptimizer skips only with a dynamic scale), then
    updates the scale: TF's cond "cond" for the step, "cond_1" for the manager.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.control_flow import cond
from ..graph.ops import math_ops
from ..graph.ops.constant_op import constant, group, no_op
from ..graph.ops.math_extra_ops import is_finite
from ..graph.variables import Variable
from ..train.loss_scale import all_finite_on_every_rank, scaled_gradient
from ..train.optimizer import Optimizer, _check_pairs
from .opt_wrappers import _Wrapper

__all__ = ["LossScaleManager", "FixedLossScaleManager", "ExponentialUpdateLossScaleManager", "LossScaleOptimizer"]


class LossScaleManager:
    """Base class: get_loss_scale() (a float32 scalar) and update_loss_scale(finite_grads) (an op)."""

    def get_loss_scale(self) -> Any:
        """The loss scale to multiply the loss by (a tensor or variable)."""
        raise NotImplementedError(f"{type(self).__name__} must define get_loss_scale()")

    def update_loss_scale(self, finite_grads: Any) -> Any:
        """The op that updates the scale given whether this step's gradients were finite."""
        raise NotImplementedError(f"{type(self).__name__} must define update_loss_scale(finite_grads)")


class FixedLossScaleManager(LossScaleManager):
    """A loss scale that never changes."""

    def __init__(self, loss_scale: Any):
        if isinstance(loss_scale, bool) or not isinstance(loss_scale, (int, float)):
            raise TypeError(f"loss_scale must be a Python number, got {loss_scale!r}")
        if loss_scale < 1:
            raise ValueError(f"loss scale must be at least 1, got {loss_scale}")
        self._loss_scale = constant(float(loss_scale), dtype=_dt.float32)

    def get_loss_scale(self) -> _g.Tensor:
        """The fixed scale, as a float32 constant."""
        return self._loss_scale

    def update_loss_scale(self, finite_grads: Any) -> _g.Operation:
        """Nothing to update: a no-op."""
        del finite_grads
        return no_op()


class ExponentialUpdateLossScaleManager(LossScaleManager):
    """A loss scale grown after n consecutive finite steps and shrunk after m non-finite ones."""

    def __init__(self, init_loss_scale: Any, incr_every_n_steps: Any, decr_every_n_nan_or_inf: Any = 2,
                 incr_ratio: Any = 2, decr_ratio: Any = 0.8):
        self._incr_every_n_steps = incr_every_n_steps
        self._decr_every_n_nan_or_inf = decr_every_n_nan_or_inf
        self._incr_ratio = incr_ratio
        self._decr_ratio = decr_ratio
        self._loss_scale = Variable(_g.convert_to_tensor(init_loss_scale, dtype=_dt.float32), name="loss_scale",
                                    dtype=_dt.float32, trainable=False)
        self._num_good_steps = Variable(0, name="good_steps", dtype=_dt.int32, trainable=False)
        self._num_bad_steps = Variable(0, name="bad_steps", dtype=_dt.int32, trainable=False)

    def _reset_stats(self) -> _g.Operation:
        return group(self._num_good_steps.assign(0).op, self._num_bad_steps.assign(0).op)

    def get_loss_scale(self) -> Variable:
        """The scale variable."""
        return self._loss_scale

    def update_loss_scale(self, finite_grads: Any) -> Any:
        """The op that takes one step of the schedule given the scalar bool `finite_grads`."""
        ls, good, bad = self._loss_scale, self._num_good_steps, self._num_bad_steps

        def on_finite() -> Any:
            def grow() -> Any:
                new = cond(is_finite(ls.read_value() * self._incr_ratio),
                           lambda: ls.read_value() * self._incr_ratio, ls.read_value)
                return group(ls.assign(new).op, self._reset_stats())
            return cond(good.read_value() + 1 >= self._incr_every_n_steps, grow, lambda: good.assign_add(1).op)

        def on_overflow() -> Any:
            def shrink() -> Any:
                new = math_ops.maximum(1., ls.read_value() * self._decr_ratio)
                return group(ls.assign(new).op, self._reset_stats())

            def count() -> Any:
                return group(bad.assign_add(1).op, good.assign(0).op)
            return cond(bad.read_value() + 1 >= self._decr_every_n_nan_or_inf, shrink, count)

        return cond(finite_grads, on_finite, on_overflow)


class LossScaleOptimizer(_Wrapper):
    """Wraps an optimizer with a LossScaleManager's loss scaling; a step with an inf/NaN gradient
    is skipped (variables, slots and global_step unchanged) and the manager updated."""

    def __init__(self, opt: Optimizer, loss_scale_manager: LossScaleManager):
        if not isinstance(opt, Optimizer):
            raise TypeError(f"opt must be a tf.train.Optimizer, got {type(opt).__name__}")
        if not isinstance(loss_scale_manager, LossScaleManager):
            raise TypeError(f"loss_scale_manager must be a LossScaleManager, got {type(loss_scale_manager).__name__}")
        super().__init__(opt, opt._use_locking, opt.get_name())
        self._loss_scale_manager = loss_scale_manager

    def compute_gradients(self, loss: Any, var_list: Optional[Sequence[Variable]] = None,
                          gate_gradients: int = Optimizer.GATE_OP, aggregation_method: Any = None,
                          colocate_gradients_with_ops: bool = False, grad_loss: Any = None) -> List[Any]:
        """The wrapped optimizer's gradients of loss * scale, multiplied by 1/scale."""
        if callable(loss) and not isinstance(loss, _g.Tensor):
            loss = loss()  # TF1 contrib's graph mode calls a loss function
        loss = _g.convert_to_tensor(loss)
        if not loss.dtype.is_floating:
            raise InvalidArgumentError(f"the loss {loss.name} must be floating point, got {loss.dtype.name}")
        with loss.graph.as_default():
            scale = _g.convert_to_tensor(self._loss_scale_manager.get_loss_scale())
            gv = self._opt.compute_gradients(
                loss * math_ops.cast(scale, loss.dtype), var_list=var_list, gate_gradients=gate_gradients,
                aggregation_method=aggregation_method, colocate_gradients_with_ops=colocate_gradients_with_ops,
                grad_loss=grad_loss)
            inv = math_ops.reciprocal(scale)
            return [(None if gr is None else scaled_gradient(gr, inv), v) for gr, v in gv]

    def apply_gradients(self, grads_and_vars: Any, global_step: Optional[Variable] = None,
                        name: Optional[str] = None) -> _g.Operation:
        """The wrapped update when every gradient is finite, grouped with the manager's update.
        None gradients are ignored (TF 1.x's contrib fails on them)."""
        pairs = _check_pairs(grads_and_vars)
        g = pairs[0][1].graph
        with g.as_default():
            all_finite = all_finite_on_every_rank([gr for gr, _ in pairs])
            update_vars = cond(all_finite, lambda: self._opt.apply_gradients(pairs, global_step, name), no_op)
            return group(update_vars, self._loss_scale_manager.update_loss_scale(all_finite))

    def _apply_dense(self, grad: Any, var: Variable) -> Any:
        raise RuntimeError("LossScaleOptimizer applies through its wrapped optimizer")

    _apply_sparse = _apply_dense
