"""tf.contrib.opt: LazyAdamOptimizer and decoupled weight decay (Loshchilov & Hutter):
AdamWOptimizer, MomentumWOptimizer, extend_with_decoupled_weight_decay and the
DecoupledWeightDecayExtension they share; AdaMaxOptimizer and NadamOptimizer
(opt_adam_variants.py); AddSignOptimizer, PowerSignOptimizer and the sign decay schedules
(opt_sign.py); VariableClippingOptimizer and MovingAverageOptimizer (opt_wrappers.py).

Each variable in the decay list (all of them by default) first shrinks by weight_decay * var
(not scaled by the learning rate, as TF's: schedule both together), then takes the base
optimizer's step from the unchanged gradient; a sparse gradient decays only the rows it
touches (once per occurrence of a row, as TF's scatter_add).  Two deliberate differences from
TF 1.15: the decay waits for the variable's gradient (TF's could run before the forward pass
read the variable, so a step's loss and gradient saw decayed or undecayed weights by chance),
and `decay_var_list` is honoured by minimize as by apply_gradients (TF 1.15's minimize
dropped it and decayed every variable).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Type

from ..graph import graph as _g
from ..graph.indexed_slices import IndexedSlices
from ..graph.ops import array_ops
from ..graph.ops.constant_op import no_op
from ..graph.ops.partition_ops import unique
from ..graph.ops.state_ops import scatter_add
from ..graph.variables import Variable
from ..train.optimizer import Optimizer
from ..train.optimizers import AdamOptimizer, LazyAdamOptimizer, MomentumOptimizer
from .opt_adam_variants import AdaMaxOptimizer, NadamOptimizer
from .opt_sign import (AddSignOptimizer, PowerSignOptimizer, get_cosine_decay_fn, get_linear_decay_fn,
                       get_restart_decay_fn)
from .opt_wrappers import MovingAverageOptimizer, VariableClippingOptimizer

__all__ = ["DecoupledWeightDecayExtension", "AdamWOptimizer", "MomentumWOptimizer",
           "extend_with_decoupled_weight_decay", "LazyAdamOptimizer", "AdaMaxOptimizer", "NadamOptimizer",
           "AddSignOptimizer", "PowerSignOptimizer", "get_linear_decay_fn", "get_cosine_decay_fn",
           "get_restart_decay_fn", "VariableClippingOptimizer", "MovingAverageOptimizer"]


class DecoupledWeightDecayExtension:
    """Mix in before an Optimizer subclass: every update first applies var -= weight_decay * var."""

    def __init__(self, weight_decay: Any, *args: Any, **kwargs: Any):
        self._decay_var_list: Any = False
        self._weight_decay = weight_decay
        super().__init__(*args, **kwargs)

    def _decays(self, var: Variable) -> bool:
        return not self._decay_var_list or var in self._decay_var_list

    def _decay_value(self, var: Variable) -> _g.Tensor:
        wd = self._weight_decay
        if callable(wd) and not isinstance(wd, (_g.Tensor, Variable)):
            wd = wd()
        t = _g.convert_to_tensor(wd) if isinstance(wd, (_g.Tensor, Variable)) else None
        if t is None:
            return _g.convert_to_tensor(wd, dtype=var.dtype)
        from ..graph.ops import math_ops
        return t if t.dtype == var.dtype else math_ops.cast(t, var.dtype)

    def _decay_op(self, var: Variable, grad: Any) -> Any:
        if not self._decays(var):
            return no_op()
        # after the gradient: the forward pass and the gradient read the undecayed variable
        with _g.get_default_graph().control_dependencies([grad]):
            return var.assign_sub(self._decay_value(var) * var.read_value(), use_locking=self._use_locking)

    def _decay_sparse_op(self, var: Variable, grad: IndexedSlices) -> Any:
        if not self._decays(var):
            return no_op()
        with _g.get_default_graph().control_dependencies([grad.values, grad.indices]):
            # TF's optimizers sum a sparse gradient's duplicate rows first: each row decays once
            rows, _ = unique(grad.indices)
            update = -self._decay_value(var) * array_ops.gather(var.read_value(), rows)
            return scatter_add(var, rows, update, use_locking=self._use_locking)

    def _set_decay_list(self, decay_var_list: Optional[Sequence[Variable]]) -> None:
        self._decay_var_list = set(decay_var_list) if decay_var_list else False

    def minimize(self, loss: Any, global_step: Any = None, var_list: Any = None,
                 gate_gradients: int = Optimizer.GATE_OP, aggregation_method: Any = None,
                 colocate_gradients_with_ops: bool = False, name: Optional[str] = None, grad_loss: Any = None,
                 decay_var_list: Optional[Sequence[Variable]] = None) -> Any:
        """Optimizer.minimize; decay_var_list (default all) limits which variables decay."""
        gv = self.compute_gradients(loss, var_list=var_list, gate_gradients=gate_gradients,
                                    aggregation_method=aggregation_method,
                                    colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        if all(gr is None for gr, _ in gv):
            raise ValueError("No gradients provided for any variable, check your graph for ops that do not "
                             f"support gradients, between variables {[v.name for _, v in gv]} and loss {loss!r}.")
        return self.apply_gradients(gv, global_step=global_step, name=name, decay_var_list=decay_var_list)

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None, name: Optional[str] = None,
                        decay_var_list: Optional[Sequence[Variable]] = None, **kwargs: Any) -> Any:
        """Optimizer.apply_gradients; decay_var_list (default all) limits which variables decay."""
        self._set_decay_list(decay_var_list)
        return super().apply_gradients(grads_and_vars, global_step=global_step, name=name, **kwargs)

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> Any:
        with _g.get_default_graph().control_dependencies([self._decay_op(var, grad)]):
            return super()._apply_dense(grad, var)

    def _apply_dense_scaled(self, grad: _g.Tensor, var: Variable, scale: _g.Tensor) -> Any:
        base = super()._apply_dense_scaled
        if getattr(base, "__func__", None) is Optimizer._apply_dense_scaled:
            return base(grad, var, scale)  # it calls _apply_dense, which decays
        with _g.get_default_graph().control_dependencies([self._decay_op(var, grad)]):
            return base(grad, var, scale)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Any:
        with _g.get_default_graph().control_dependencies([self._decay_sparse_op(var, grad)]):
            return super()._apply_sparse(grad, var)


def extend_with_decoupled_weight_decay(base_optimizer: Type[Optimizer]) -> Type[Optimizer]:
    """A subclass of base_optimizer whose constructor takes weight_decay first."""
    if not (isinstance(base_optimizer, type) and issubclass(base_optimizer, Optimizer)):
        raise TypeError(f"extend_with_decoupled_weight_decay needs an Optimizer class, got {base_optimizer!r}")

    class OptimizerWithDecoupledWeightDecay(DecoupledWeightDecayExtension, base_optimizer):  # type: ignore
        """base_optimizer with decoupled weight decay (weight_decay, then its own arguments)."""

    OptimizerWithDecoupledWeightDecay.__name__ = f"{base_optimizer.__name__}WithDecoupledWeightDecay"
    return OptimizerWithDecoupledWeightDecay


class AdamWOptimizer(DecoupledWeightDecayExtension, AdamOptimizer):
    """Adam with decoupled weight decay (slots "m", "v" under the name "AdamW")."""

    def __init__(self, weight_decay: Any, learning_rate: Any = 0.001, beta1: Any = 0.9, beta2: Any = 0.999,
                 epsilon: Any = 1e-8, use_locking: bool = False, name: str = "AdamW"):
        super().__init__(weight_decay, learning_rate=learning_rate, beta1=beta1, beta2=beta2, epsilon=epsilon,
                         use_locking=use_locking, name=name)


class MomentumWOptimizer(DecoupledWeightDecayExtension, MomentumOptimizer):
    """Momentum with decoupled weight decay (slot "momentum" under the name "MomentumW")."""

    def __init__(self, weight_decay: Any, learning_rate: Any, momentum: Any, use_locking: bool = False,
                 name: str = "MomentumW", use_nesterov: bool = False):
        super().__init__(weight_decay, learning_rate=learning_rate, momentum=momentum, use_locking=use_locking,
                         name=name, use_nesterov=use_nesterov)
