"""tf.contrib.opt's optimizer wrappers (TF 1.15 semantics):

VariableClippingOptimizer: after the wrapped optimizer's update, each chosen variable is
    projected so that its slices' L2 norms over the given dims are at most max_norm (the
    update is var -= var - clip_by_norm(var, max_norm, dims)).  With a sparse gradient whose
    clip dims leave out dim 0, only the rows in the gradient are clipped.
MovingAverageOptimizer: after the wrapped optimizer's update, an ExponentialMovingAverage
    of the updated variables; swapping_saver() makes a Saver that writes each variable's
    average under the variable's name (and the variable under its average's), so restoring
    that checkpoint with a plain Saver gives the model the averaged weights.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..graph import graph as _g
from ..graph.indexed_slices import IndexedSlices
from ..graph.ops import array_ops, state_ops
from ..graph.ops.clip_ops import clip_by_norm
from ..graph.ops.constant_op import group
from ..graph.ops.partition_ops import unique
from ..graph.variables import Variable, global_variables
from ..train.moving_averages import ExponentialMovingAverage
from ..train.optimizer import Optimizer
from ..train.saver import Saver

__all__ = ["VariableClippingOptimizer", "MovingAverageOptimizer"]

_log = logging.getLogger(__name__)


class _Wrapper(Optimizer):
    """Delegates gradients and slots to the wrapped optimizer."""

    def __init__(self, opt: Optimizer, use_locking: bool, name: str):
        super().__init__(use_locking, name)
        self._opt = opt

    def compute_gradients(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped optimizer's compute_gradients."""
        return self._opt.compute_gradients(*args, **kwargs)

    def get_slot(self, var: Variable, name: str) -> Optional[Variable]:
        """The wrapped optimizer's slot."""
        return self._opt.get_slot(var, name)

    def get_slot_names(self) -> List[str]:
        """The wrapped optimizer's slot names."""
        return self._opt.get_slot_names()

    def variables(self) -> List[Variable]:
        """The wrapped optimizer's variables."""
        return self._opt.variables()


class VariableClippingOptimizer(_Wrapper):
    """Clips variables by norm after the wrapped optimizer's update.

    vars_to_clip_dims: {variable: dims whose slices are clipped} (e.g. [1] clips each row of an
    embedding).  colocate_clip_ops_with_vars is accepted (placement only).
    """

    def __init__(self, opt: Optimizer, vars_to_clip_dims: Mapping[Variable, Sequence[int]], max_norm: Any,
                 use_locking: bool = False, colocate_clip_ops_with_vars: bool = False,
                 name: str = "VariableClipping"):
        super().__init__(opt, use_locking, name)
        self._vars_to_clip_dims = dict(vars_to_clip_dims)
        self._max_norm = max_norm
        self._colocate_clip_ops_with_vars = colocate_clip_ops_with_vars

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None, name: Optional[str] = None,
                        **kwargs: Any) -> _g.Operation:
        """The wrapped update, then the clipping of the chosen variables that had a gradient."""
        grads_and_vars = list(grads_and_vars)
        g = _g.get_default_graph()
        with g.name_scope(name or self._name) as scope:
            update = self._opt.apply_gradients(grads_and_vars, global_step=global_step, **kwargs)
            clips = []
            with g.control_dependencies([update]):
                for grad, var in grads_and_vars:
                    if grad is None or var not in self._vars_to_clip_dims:
                        continue
                    with g.name_scope("clip_" + var.op.name):
                        clips.append(self._clip_sparse(grad, var) if isinstance(grad, IndexedSlices)
                                     else self._clip_dense(var))
            return group(update, *clips, name=scope)

    def _clip_dense(self, var: Variable) -> Any:
        value = var.read_value()
        delta = value - clip_by_norm(value, self._max_norm, list(self._vars_to_clip_dims[var]))
        return state_ops.assign_sub(var, delta)

    def _clip_sparse(self, grad: IndexedSlices, var: Variable) -> Any:
        dims = list(self._vars_to_clip_dims[var])
        if 0 in dims:
            # a norm across rows needs the whole variable: clip it all, as TF does
            _log.warning("Clipping norm across dims %s for %s is inefficient when including sparse dimension 0.",
                         dims, var.op.name)
            return self._clip_dense(var)
        # each touched row once (TF 1.15 subtracts a repeated row's delta once per occurrence)
        rows, _ = unique(grad.indices)
        subset = array_ops.gather(var.read_value(), rows)
        delta = subset - clip_by_norm(subset, self._max_norm, dims)
        return state_ops.scatter_sub(var, rows, delta)


class MovingAverageOptimizer(_Wrapper):
    """The wrapped optimizer plus an ExponentialMovingAverage of the variables it updates.

    sequential_update: the averages read the variables after this step's update (else they
    may run concurrently).  Use swapping_saver() to save the averages as the model's weights.
    """

    def __init__(self, opt: Optimizer, average_decay: Any = 0.9999, num_updates: Any = None,
                 sequential_update: bool = True):
        super().__init__(opt, False, "MovingAverageOptimizer")
        self._ema = ExponentialMovingAverage(average_decay, num_updates=num_updates)
        self._swapped_variable_name_map: Optional[Dict[str, str]] = None
        self._sequential_update = sequential_update

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None, name: Optional[str] = None,
                        **kwargs: Any) -> _g.Operation:
        """The wrapped update, then the averages' update; the group is named "train_with_avg"."""
        grads_and_vars = list(grads_and_vars)
        train_op = self._opt.apply_gradients(grads_and_vars, global_step=global_step, name=name, **kwargs)
        var_list = [v for gr, v in grads_and_vars if gr is not None]
        g = _g.get_default_graph()
        if self._sequential_update:
            with g.control_dependencies([train_op]):
                ma_op = self._ema.apply(var_list)
        else:
            ma_op = self._ema.apply(var_list)
        self._swapped_variable_name_map = {}
        for v in var_list:
            avg = self._ema.average(v).op.name
            self._swapped_variable_name_map[v.op.name] = avg
            self._swapped_variable_name_map[avg] = v.op.name
        return group(train_op, ma_op, name="train_with_avg")

    def swapping_saver(self, var_list: Any = None, name: str = "swapping_saver", **kwargs: Any) -> Saver:
        """A Saver writing each averaged variable's average under the variable's name and the
        variable under its average's name (var_list: Variables or {name: Variable}, default all)."""
        if self._swapped_variable_name_map is None:
            raise RuntimeError("Must call apply_gradients or minimize before creating the swapping_saver")
        if var_list is None:
            var_list = global_variables()
        if not isinstance(var_list, dict):
            var_list = {v.op.name: v for v in var_list}
        by_name: Dict[str, Variable] = {}
        for key, v in var_list.items():
            if isinstance(v, (list, tuple)):
                by_name.update((part.op.name, part) for part in v)
            else:
                by_name[key] = v
        swap = self._swapped_variable_name_map
        swapped: Dict[str, Any] = {}
        for key, v in var_list.items():
            if isinstance(v, (list, tuple)):
                swapped[key] = [by_name[swap.get(p.op.name, p.op.name)] for p in v]
            else:
                swapped[key] = by_name[swap.get(key, key)]
        return Saver(swapped, name=name, **kwargs)
