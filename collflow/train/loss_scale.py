"""Loss scaling for mixed-precision training in graph mode (TF 1.14/1.15's
`tf.train.experimental` API; TF 2.x's compat.v1 has the same names under `tf.mixed_precision`).

The loss is multiplied by a loss scale before the gradients are taken and every gradient is
divided by it afterwards, so small float16 intermediate gradients do not underflow.

  * `FixedLossScale(v)`: always v; the wrapped optimizer applies every step.
  * `DynamicLossScale(initial_loss_scale=2**15, increment_period=2000, multiplier=2.)`: the
    variables `current_loss_scale` (float32) and `good_steps` (int64), made in the default
    graph when the object is built, as TF names them (so TF's checkpoints restore).  A step
    whose gradients are all finite adds one good step; the `increment_period`-th one multiplies
    the scale by `multiplier` (unless that overflows float32) and resets the count.  A step
    with an inf/NaN gradient resets the count and divides the scale (never below 1).
  * `MixedPrecisionLossScaleOptimizer(opt, loss_scale)`: scales in compute_gradients; with a
    dynamic scale apply_gradients updates it and applies the wrapped optimizer only when every
    gradient is finite (TF's cond "cond_1" after the update's "cond"), so on a skipped step the
    variables, the slots and global_step are all left as they were.
  * `enable_mixed_precision_graph_rewrite(opt)` wraps the optimizer (see its docstring).
"""
from __future__ import annotations

import abc
import logging
import types
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph import nest
from ..graph.control_flow import cond
from ..graph.indexed_slices import IndexedSlices
from ..graph.ops import array_ops, math_ops
from ..graph.ops.constant_op import constant, group, no_op
from ..graph.ops.math_extra_ops import is_finite
from ..graph.variables import Variable
from . import distribute_lib as _ds
from .optimizer import Optimizer, _check_pairs

__all__ = ["LossScale", "FixedLossScale", "DynamicLossScale", "MixedPrecisionLossScaleOptimizer",
           "enable_mixed_precision_graph_rewrite", "disable_mixed_precision_graph_rewrite", "experimental",
           "mixed_precision"]

_log = logging.getLogger(__name__)


# -- loss scales ---------------------------------------------------------------------------------

class LossScale(metaclass=abc.ABCMeta):
    """Base class of the loss scales: `ls()` is the scale (a float32 scalar tensor) and
    `ls.update(grads)` returns `(update_op, should_apply_gradients)` for unscaled gradients."""

    def __init__(self) -> None:
        # (name, graph) -> variable, as TF keeps a loss scale's weights per graph
        self._weights: Dict[Tuple[str, _g.Graph], Variable] = {}

    @abc.abstractmethod
    def __call__(self) -> _g.Tensor:
        """The current loss scale, a float32 scalar tensor."""

    @abc.abstractmethod
    def update(self, grads: Any) -> Tuple[Any, Any]:
        """(op that updates the scale, scalar bool tensor or Python bool: apply the gradients?)."""

    @abc.abstractmethod
    def get_config(self) -> Dict[str, Any]:
        """The constructor's arguments (for from_config)."""

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "LossScale":
        """The loss scale built from get_config()'s dict."""
        return cls(**config)

    def _add_weight(self, name: str, initial_value: Any, dtype: _dt.DType) -> Variable:
        """A non-trainable variable `name` of the default graph (TF's names: no scope of its own)."""
        g = _g.get_default_graph()
        key = (name, g)
        if self._weights.get(key) is not None:
            raise RuntimeError(f"Duplicate variables detected. {(name, g)}")
        with g.init_scope():
            v = Variable(initial_value, trainable=False, name=name, dtype=dtype)
        self._weights[key] = v
        return v

    def _checkpoint_children(self) -> List[Tuple[str, Variable]]:
        """Object checkpoints: this graph's weights by name (TF's LossScale children)."""
        g = _g.get_default_graph()
        return sorted(((n, v) for (n, gg), v in self._weights.items() if gg is g), key=lambda p: p[0])


class FixedLossScale(LossScale):
    """A loss scale that never changes; every step's gradients are applied."""

    def __init__(self, loss_scale_value: Any):
        super().__init__()
        if isinstance(loss_scale_value, bool) or not isinstance(loss_scale_value, (int, float)):
            raise ValueError(f"loss_scale_value must be a Python int or float, got {loss_scale_value!r}")
        if loss_scale_value < 1:
            raise ValueError(f"loss_scale_value must be at least 1, got {loss_scale_value}")
        self._loss_scale_value = float(loss_scale_value)

    def __call__(self) -> _g.Tensor:
        return constant(self._loss_scale_value, dtype=_dt.float32)

    def update(self, grads: Any) -> Tuple[Any, bool]:
        """Nothing to update: (a no_op, True)."""
        del grads
        return no_op(), True

    def __repr__(self) -> str:
        return f"FixedLossScale({self._loss_scale_value})"

    def get_config(self) -> Dict[str, Any]:
        """The constructor's arguments."""
        return {"loss_scale_value": self._loss_scale_value}


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise TypeError(f"{what} must be a Python number, got {type(value).__name__} ({value!r})")
    return float(value)


def _all_finite(grads: Sequence[Any]) -> _g.Tensor:
    """A scalar bool: every element of every (non-None) gradient is finite."""
    per_grad = [math_ops.reduce_all(is_finite(gr.values if isinstance(gr, IndexedSlices) else gr))
                for gr in grads if gr is not None]
    if not per_grad:
        return constant(True)
    return math_ops.reduce_all(array_ops.stack(per_grad))


def all_finite_on_every_rank(grads: Sequence[Any]) -> _g.Tensor:
    """_all_finite, agreed by every rank of an MPI job (one scalar all-reduce, min): a step's
    skip-or-apply must be the same everywhere, or a wrapped optimizer that all-reduces inside
    the apply branch (SyncReplicasOptimizer) waits for ranks that skipped.  One process: local."""
    finite = _all_finite(grads)
    from .checkpoint_io import process_rank_and_size
    if process_rank_and_size()[1] <= 1:
        return finite
    from ..graph.ops.collective_ops import all_reduce
    agreed = all_reduce(math_ops.cast(finite, _dt.float32), op="min", name="all_finite_on_every_rank")
    return math_ops.greater(agreed, constant(0.5, dtype=_dt.float32))


def _assign_if_finite(var: Variable, value: _g.Tensor) -> Any:
    """var = value unless value is inf or NaN (the multiplied scale overflowed float32)."""
    return cond(is_finite(value), lambda: var.assign(value).op, no_op)


class DynamicLossScale(LossScale):
    """A loss scale that grows after `increment_period` finite steps and shrinks on overflow.

    Every `increment_period` consecutive steps with finite gradients the scale is multiplied by
    `multiplier`; a step with an inf/NaN gradient divides it by `multiplier` (not below 1), resets
    the count and is skipped by the optimizer.  The variables `current_loss_scale` and
    `good_steps` are created now, in the default graph.
    """

    def __init__(self, initial_loss_scale: Any = 2 ** 15, increment_period: Any = 2000, multiplier: Any = 2.):
        super().__init__()
        self._initial_loss_scale = _number(initial_loss_scale, "initial_loss_scale")
        if isinstance(increment_period, bool) or not isinstance(increment_period, int) and \
                not hasattr(increment_period, "__int__"):
            raise TypeError(f"increment_period must be a Python int, got {increment_period!r}")
        self._increment_period = int(increment_period)
        self._multiplier = _number(multiplier, "multiplier")
        self._current_loss_scale = self._add_weight("current_loss_scale", self._initial_loss_scale, _dt.float32)
        self._num_good_steps = self._add_weight("good_steps", 0, _dt.int64)

    @property
    def initial_loss_scale(self) -> float:
        return self._initial_loss_scale

    @property
    def increment_period(self) -> int:
        return self._increment_period

    @property
    def multiplier(self) -> float:
        return self._multiplier

    def __call__(self) -> _g.Tensor:
        return _g.convert_to_tensor(self._current_loss_scale)

    def update(self, grads: Any) -> Tuple[Any, _g.Tensor]:
        """The schedule's step for these (unscaled) gradients; under a strategy (in its
        cross-replica context) the gradients of every replica must be finite."""
        grads = nest.flatten(grads)
        if _ds.has_strategy():
            strategy = _ds.get_cross_replica_context()
            if strategy is None:
                raise RuntimeError("DynamicLossScale.update must be called in a cross-replica context "
                                   "(inside merge_call), not in a replica function")

            def finite_as_float(gs: List[Any]) -> _g.Tensor:
                return math_ops.cast(_all_finite(gs), _dt.float32)
            per_replica = strategy.extended.call_for_each_replica(finite_as_float, args=(grads,))
            total = strategy.reduce(_ds.ReduceOp.SUM, per_replica, axis=None)
            finite = math_ops.equal(total, constant(float(strategy.num_replicas_in_sync), dtype=_dt.float32))
        else:
            finite = all_finite_on_every_rank(grads)
        scale, good = self._current_loss_scale, self._num_good_steps

        def on_finite() -> Any:
            def grow() -> Any:
                return group(_assign_if_finite(scale, scale.read_value() * self._multiplier), good.assign(0).op)
            return cond(good.read_value() + 1 >= self._increment_period, grow, lambda: good.assign_add(1).op)

        def on_overflow() -> Any:
            smaller = math_ops.maximum(scale.read_value() / self._multiplier, 1.0)
            return group(good.assign(0).op, scale.assign(smaller).op)

        return cond(finite, on_finite, on_overflow), finite

    def __repr__(self) -> str:
        return (f"DynamicLossScale(initial_loss_scale={self._initial_loss_scale}, "
                f"increment_period={self._increment_period}, multiplier={self._multiplier})")

    def get_config(self) -> Dict[str, Any]:
        """The constructor's arguments."""
        return {"initial_loss_scale": self._initial_loss_scale, "increment_period": self._increment_period,
                "multiplier": self._multiplier}


def get(identifier: Any) -> Optional[LossScale]:
    """A loss scale from a number (FixedLossScale), "dynamic" (DynamicLossScale()), a LossScale or None."""
    if isinstance(identifier, (int, float)) and not isinstance(identifier, bool):
        return FixedLossScale(identifier)
    if isinstance(identifier, str) and identifier == "dynamic":
        return DynamicLossScale()
    if isinstance(identifier, LossScale) or identifier is None:
        return identifier
    raise ValueError(f"Could not interpret loss scale identifier: {identifier!r} (use a number >= 1, "
                     "'dynamic' or a tf.train.experimental.LossScale)")


# -- the optimizer ----------------------------------------------------------------------------------

def scaled_gradient(grad: Any, factor: _g.Tensor) -> Any:
    """grad * factor (IndexedSlices: its values); factor is cast to a non-float32 gradient's dtype
    (TF multiplies by the float32 tensor as is, which fails for float16/float64 gradients)."""
    values = grad.values if isinstance(grad, IndexedSlices) else grad
    f = factor if values.dtype == factor.dtype else math_ops.cast(factor, values.dtype)
    if isinstance(grad, IndexedSlices):
        return IndexedSlices(values * f, grad.indices, grad.dense_shape)
    return values * f


def _smart_cond(pred: Any, true_fn: Any, false_fn: Any) -> Any:
    """cond, or the branch itself when pred is a Python bool (TF's smart_cond)."""
    if isinstance(pred, bool):
        return true_fn() if pred else false_fn()
    return cond(pred, true_fn, false_fn)


class MixedPrecisionLossScaleOptimizer(Optimizer):
    """Wraps an optimizer with loss scaling (TF 1.14's `tf.train.experimental` optimizer).

    compute_gradients takes the gradients of `loss * loss_scale` with the wrapped optimizer and
    divides them by the scale.  With a FixedLossScale apply_gradients is the wrapped optimizer's;
    with a DynamicLossScale it builds the scale's update, then applies the wrapped optimizer
    (named "<name>-wrapped") only if every gradient is finite, and returns the group of both
    named `name` (default: the wrapped optimizer's name).  A skipped step leaves variables, slots
    and global_step unchanged.  In a tf.distribute replica context the gradients of all replicas
    decide, and the wrapped optimizer sums them over the replicas as usual.  The slots belong to
    the wrapped optimizer: ask it for them (this one's get_slot finds none, as in TF).
    """

    def __init__(self, opt: Optimizer, loss_scale: Any):
        if not isinstance(opt, Optimizer):
            raise ValueError(f'"opt" must be an instance of Optimizer, but got: {type(opt)}')
        self._optimizer = opt
        super().__init__(opt._use_locking, opt.get_name())
        self._loss_scale = get(loss_scale)
        if self._loss_scale is None:
            raise ValueError("loss_scale cannot be None")

    @property
    def loss_scale(self) -> LossScale:
        return self._loss_scale

    def _doing_dynamic_loss_scaling(self) -> bool:
        return isinstance(self._loss_scale, DynamicLossScale)

    def compute_gradients(self, loss: Any, var_list: Optional[Sequence[Variable]] = None,
                          gate_gradients: int = Optimizer.GATE_OP, aggregation_method: Any = None,
                          colocate_gradients_with_ops: bool = False, grad_loss: Any = None) -> List[Any]:
        """The wrapped optimizer's gradients of loss * scale, each divided by the scale."""
        if callable(loss) and not isinstance(loss, _g.Tensor):
            raise TypeError("compute_gradients needs a loss Tensor (collflow builds graphs; there is no eager mode)")
        loss = _g.convert_to_tensor(loss)
        if not loss.dtype.is_floating:
            raise InvalidArgumentError(f"the loss {loss.name} must be floating point, got {loss.dtype.name}")
        with loss.graph.as_default():
            scale = self._loss_scale()
            loss = loss * (scale if loss.dtype == scale.dtype else math_ops.cast(scale, loss.dtype))
            gv = self._optimizer.compute_gradients(
                loss, var_list=var_list, gate_gradients=gate_gradients, aggregation_method=aggregation_method,
                colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
            reciprocal = 1 / self._loss_scale()
            return [(None if gr is None else scaled_gradient(gr, reciprocal), v) for gr, v in gv]

    @property
    def folds_gradient_scale(self) -> bool:  # type: ignore[override]
        """The wrapped optimizer's (collflow's apply_gradients(gradient_scale=) is passed on)."""
        return self._optimizer.folds_gradient_scale

    def apply_gradients(self, grads_and_vars: Any, global_step: Optional[Variable] = None,
                        name: Optional[str] = None, **kwargs: Any) -> _g.Operation:
        """The wrapped update, done only when every gradient is finite (dynamic scale).
        kwargs (collflow's gradient_scale, after_updates) go to the wrapped apply_gradients."""
        if _ds.in_cross_replica_context():
            raise ValueError("apply_gradients() must be called in a replica context.")
        if not self._doing_dynamic_loss_scaling():
            return self._optimizer.apply_gradients(grads_and_vars, global_step, name, **kwargs)
        pairs = tuple(_check_pairs(grads_and_vars))
        g = pairs[0][1].graph
        with g.as_default():
            return _ds.get_replica_context().merge_call(self._distributed_apply, args=(pairs, global_step, name),
                                                        kwargs=kwargs)

    def _distributed_apply(self, strategy: Any, grads_and_vars: Sequence[Any], global_step: Optional[Variable] = None,
                           name: Optional[str] = None, **kwargs: Any) -> _g.Operation:
        """apply_gradients in the cross-replica context: the scale's update, then the guarded step."""
        name = name if name is not None else self.get_name()
        update_op, should_apply = self._loss_scale.update([gr for gr, _ in grads_and_vars])

        def apply_fn() -> _g.Operation:
            ops = strategy.extended.call_for_each_replica(
                self._optimizer.apply_gradients, args=(grads_and_vars, global_step, name + "-wrapped"), kwargs=kwargs)
            return strategy.group(ops)
        maybe_apply = _smart_cond(should_apply, apply_fn, no_op)
        return group(maybe_apply, update_op, name=name)

    def _apply_dense(self, grad: Any, var: Variable) -> Any:
        raise RuntimeError("MixedPrecisionLossScaleOptimizer applies through its wrapped optimizer")

    _apply_sparse = _apply_dense

    def variables(self) -> List[Variable]:
        """The wrapped optimizer's variables and the loss scale's."""
        return self._optimizer.variables() + list(self._loss_scale._weights.values())

    def _checkpoint_children(self) -> List[Tuple[str, Any]]:
        """Object checkpoints: TF's children "base_optimizer" and "loss_scale"."""
        return [("base_optimizer", self._optimizer), ("loss_scale", self._loss_scale)]


# -- the "graph rewrite" ------------------------------------------------------------------------------

_REWRITE_ENABLED = [False]


def enable_mixed_precision_graph_rewrite(opt: Optimizer, loss_scale: Any = "dynamic") -> Optimizer:
    """`opt` wrapped in a MixedPrecisionLossScaleOptimizer with `loss_scale` ("dynamic", a
    number or a LossScale), and the rewrite marked as enabled.

    TensorFlow's Grappler rewrite then turns eligible float32 ops into float16 on NVIDIA GPUs
    with Tensor Cores and leaves the CPU parts of the graph alone.  collflow has no such rewrite:
    ops keep the dtypes the program gives them on every device, including on a GPU through
    collflow's CuPy kernels.  Only the loss scaling (with TF's skipped steps) is done; cast to
    float16 in the model to compute in half precision.
    """
    if isinstance(opt, MixedPrecisionLossScaleOptimizer):
        raise ValueError('"opt" must not already be an instance of a MixedPrecisionLossScaleOptimizer. '
                         "`enable_mixed_precision_graph_rewrite` will automatically wrap the optimizer with a "
                         "MixedPrecisionLossScaleOptimizer.")
    if not isinstance(opt, Optimizer):
        raise ValueError('"opt" must be an instance of a tf.train.Optimizer or a tf.keras.optimizers.Optimizer, '
                         f"but got: {opt!r}")
    wrapped = MixedPrecisionLossScaleOptimizer(opt, loss_scale)
    _REWRITE_ENABLED[0] = True
    return wrapped


def disable_mixed_precision_graph_rewrite() -> None:
    """Marks the rewrite disabled; optimizers already wrapped keep scaling the loss."""
    if not _REWRITE_ENABLED[0]:
        _log.warning("disable_mixed_precision_graph_rewrite() called when mixed precision is already disabled.")
    _REWRITE_ENABLED[0] = False


def is_mixed_precision_graph_rewrite_enabled() -> bool:
    """Whether enable_mixed_precision_graph_rewrite was called last (and not disabled since)."""
    return _REWRITE_ENABLED[0]


# -- the namespaces ---------------------------------------------------------------------------------

_API = dict(LossScale=LossScale, FixedLossScale=FixedLossScale, DynamicLossScale=DynamicLossScale,
            MixedPrecisionLossScaleOptimizer=MixedPrecisionLossScaleOptimizer,
            enable_mixed_precision_graph_rewrite=enable_mixed_precision_graph_rewrite,
            disable_mixed_precision_graph_rewrite=disable_mixed_precision_graph_rewrite)

# tf.train.experimental (TF 1.14/1.15)
experimental = types.SimpleNamespace(**_API)
experimental.__doc__ = ("tf.train.experimental: the loss scales, MixedPrecisionLossScaleOptimizer and "
                        "enable/disable_mixed_precision_graph_rewrite.")
# tf.mixed_precision and tf.mixed_precision.experimental (TF 2.x's compat.v1; TF 1.15 had neither)
mixed_precision = types.SimpleNamespace(**_API, experimental=types.SimpleNamespace(
    LossScale=LossScale, FixedLossScale=FixedLossScale, DynamicLossScale=DynamicLossScale))
mixed_precision.__doc__ = "tf.mixed_precision: tf.train.experimental's loss-scaling names."
