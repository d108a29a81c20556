"""tf.train.ExponentialMovingAverage: shadow variables that follow other variables (or tensors)
with exponential decay, TensorFlow 1.x's way (the CIFAR-10 tutorial's averaged weights and
loss averages).

`apply(var_list)` creates, once per variable, a non-trainable shadow named
"<variable's op name>/<ema name>" (TF1's slot name), initialized to the variable's initial value
(zeros for a tensor), and returns an op that moves every shadow toward its variable:
    shadow -= (shadow - value) * (1 - decay),   decay = min(decay, (1 + n) / (10 + n))
when `num_updates` n is given.  With zero_debias=True the shadows of tensors are debiased as
TF does (a biased accumulator and a step counter beside the shadow).  `average(var)`,
`average_name(var)` and `variables_to_restore()` (the name -> variable map a Saver restores
averaged weights with) as in TF1.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import math_ops as _m
from ..graph.ops import state_ops as _s
from ..graph.ops.array_ops import zeros
from ..graph.ops.constant_op import group
from ..graph.variable_scope import get_variable_scope
from ..graph.variables import Variable, global_variables, trainable_variables

__all__ = ["ExponentialMovingAverage"]

MOVING_AVERAGE_VARIABLES = _g.GraphKeys.MOVING_AVERAGE_VARIABLES
_FLOATS = (_dt.float16, _dt.float32, _dt.float64)


def _key(v: Any) -> int:
    return id(v)


class ExponentialMovingAverage:
    """Moving averages of variables (see the module doc)."""

    def __init__(self, decay: Any, num_updates: Any = None, zero_debias: bool = False,
                 name: str = "ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = bool(zero_debias)
        self._name = name
        self._averages: Dict[int, Variable] = {}
        self._sources: Dict[int, Any] = {}
        self._debias: Dict[int, tuple] = {}   # tensor -> (biased accumulator, step counter)

    @property
    def name(self) -> str:
        return self._name

    def _shadow_name(self, var: Any) -> str:
        scope = get_variable_scope().name
        return (scope + "/" if scope else "") + var.op.name + "/" + self._name

    def apply(self, var_list: Optional[Sequence[Any]] = None) -> _g.Operation:
        """Creates the shadows of `var_list` (default: the trainable variables) where missing and
        returns the op that updates all of them once."""
        if var_list is None:
            var_list = trainable_variables()
        var_list = list(var_list)
        g = _g.get_default_graph()
        for var in var_list:
            if not isinstance(var, (Variable, _g.Tensor)):
                raise TypeError(f"ExponentialMovingAverage.apply: {var!r} is not a Variable or a Tensor")
            if var.dtype not in _FLOATS:
                raise TypeError(f"The variables must be half, float, or double: {var.name}")
            if _key(var) in self._averages:
                continue
            # shadows are named by the variable scope alone (TF1's slot naming) and made out of
            # any cond or loop being built: apply() in a cond branch is TF1's batch-norm pattern
            with g.init_scope(), g.name_scope(None):
                if isinstance(var, Variable):
                    avg = Variable(var.initial_value, trainable=False, name=self._shadow_name(var),
                                   dtype=var.dtype)
                    g.add_to_collection(MOVING_AVERAGE_VARIABLES, var)
                else:
                    shape = var.shape.as_list() if var.shape.is_fully_defined() else None
                    if shape is None:
                        raise TypeError(f"ExponentialMovingAverage.apply: tensor {var.name} needs a fully "
                                        f"known shape, got {var.shape}")
                    name = self._shadow_name(var)
                    avg = Variable(zeros(shape, var.dtype), trainable=False, name=name)
                    if self._zero_debias:
                        biased = Variable(zeros(shape, var.dtype), trainable=False, name=name + "/biased")
                        step = Variable(np.zeros((), var.dtype.np), trainable=False,
                                        name=name + "/local_step")
                        self._debias[_key(var)] = (biased, step)
            self._averages[_key(var)] = avg
            self._sources[_key(var)] = var
        with g.name_scope(self._name) as scope:
            decay = _g.convert_to_tensor(self._decay, dtype=_dt.float32, name="decay") \
                if not isinstance(self._decay, _g.Tensor) else _m.cast(self._decay, _dt.float32)
            if self._num_updates is not None:
                n = _m.cast(self._num_updates, _dt.float32, name="num_updates")
                decay = _m.minimum(decay, (1.0 + n) / (10.0 + n))
            updates = [self._update(var, decay) for var in var_list]
            # TF1 names the op by the scope itself: "ExponentialMovingAverage", not ".../ExponentialMovingAverage"
            return group(*updates, name=scope if isinstance(scope, str) and scope else None)

    def _update(self, var: Any, decay: _g.Tensor) -> Any:
        avg = self._averages[_key(var)]
        value = var.value() if isinstance(var, Variable) else var
        g = _g.get_default_graph()
        with g.name_scope("AssignMovingAvg") as scope:
            one_minus = 1.0 - decay
            if one_minus.dtype != avg.dtype:
                one_minus = _m.cast(one_minus, avg.dtype)
            deb = self._debias.get(_key(var))
            if deb is None:
                # TF1's assign_moving_average: the update op takes the scope's name ("AssignMovingAvg")
                return _s.assign_sub(avg, (avg.value() - value) * one_minus, name=scope)
            # TF's zero-debiasing: a biased accumulator from zero, divided by 1 - decay^t
            biased, step = deb
            new_biased = _s.assign_sub(biased, (biased.value() - value) * one_minus)
            new_step = _s.assign_add(step, np.ones((), step.dtype.np))
            with g.control_dependencies([new_biased, new_step]):
                d = 1.0 - one_minus
                unbiased = biased.read_value() / (1.0 - _m.pow(d, step.read_value()))
                return _s.assign(avg, unbiased, name=scope)

    def average(self, var: Any) -> Optional[Variable]:
        """The shadow of `var`, or None if apply() has not seen it."""
        return self._averages.get(_key(var))

    def average_name(self, var: Any) -> str:
        """The name of `var`'s shadow: what a Saver saves it under ("<var op name>/<ema name>")."""
        avg = self._averages.get(_key(var))
        if avg is not None:
            return avg.op.name
        return var.op.name + "/" + self._name

    def variables_to_restore(self, moving_avg_variables: Optional[Sequence[Any]] = None) -> Dict[str, Any]:
        """{checkpoint name: variable}, TF1's map for restoring averaged weights into the
        model's variables with a Saver: every moving-averaged variable (default: the
        trainable ones and MOVING_AVERAGE_VARIABLES) under its shadow's name, every other
        global variable under its own name unless that name is taken already (a shadow's)."""
        g = _g.get_default_graph()
        if moving_avg_variables is None:
            moving_avg_variables = list(trainable_variables()) + list(g.get_collection(MOVING_AVERAGE_VARIABLES))
        out: Dict[str, Any] = {}
        averaged = set()
        for v in moving_avg_variables:
            if id(v) not in averaged:
                averaged.add(id(v))
                out[self.average_name(v)] = v
        for v in global_variables():
            if id(v) not in averaged and v.op.name not in out:
                out[v.op.name] = v
        return out
