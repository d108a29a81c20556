"""tf.keras.mixed_precision.experimental.LossScaleOptimizer (TF 1.15): a Keras optimizer with
loss scaling, over collflow.train.loss_scale's MixedPrecisionLossScaleOptimizer.

The loss is multiplied by the loss scale before the gradients are taken and the gradients are
divided by it; with a DynamicLossScale a step whose gradients are not all finite is skipped
(variables, slots and `iterations` unchanged) and the scale is divided by its multiplier.
Anything else (learning rate, iterations, weights, get_updates's Keras state) is the wrapped
optimizer's.  Model.compile wraps the optimizer in one when the policy has a loss scale."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

from ..graph import graph as _g
from ..train import loss_scale as _ls
from ..train.optimizer import Optimizer

__all__ = ["LossScaleOptimizer", "inner_optimizer", "wrap_for_policy"]


_UNSET = object()


class LossScaleOptimizer(_ls.MixedPrecisionLossScaleOptimizer):
    """LossScaleOptimizer(optimizer, loss_scale) (TF 1.15): `optimizer` a Keras optimizer,
    `loss_scale` 'dynamic', a number (a fixed scale) or a tf.train.experimental.LossScale.
    Without loss_scale, tf_keras 2.x's arguments: dynamic=True (initial_scale 2**15, growing
    after dynamic_growth_steps=2000 good steps) or dynamic=False with a fixed initial_scale."""

    def __init__(self, optimizer: Any, loss_scale: Any = _UNSET, dynamic: bool = True, initial_scale: Any = None,
                 dynamic_growth_steps: Any = None):
        from .optimizers import _KerasState
        if not isinstance(optimizer, _KerasState):
            raise ValueError('"optimizer" must be an instance of tf.keras.optimizers.Optimizer, '
                             f"but got: {optimizer!r}")
        if loss_scale is _UNSET:
            loss_scale = _from_v2_args(dynamic, initial_scale, dynamic_growth_steps)
        elif not dynamic or initial_scale is not None or dynamic_growth_steps is not None:
            raise ValueError("give either loss_scale (TF 1.15) or dynamic/initial_scale/dynamic_growth_steps, not both")
        if loss_scale is None:
            raise ValueError("loss_scale cannot be None")
        super().__init__(optimizer, loss_scale)

    @property
    def inner_optimizer(self) -> Any:
        """The wrapped optimizer."""
        return self._optimizer

    @property
    def dynamic(self) -> bool:
        """Whether the loss scale is dynamic."""
        return isinstance(self._loss_scale, _ls.DynamicLossScale)

    @property
    def initial_scale(self) -> float:
        """The loss scale the training starts from."""
        ls = self._loss_scale
        return ls.initial_loss_scale if self.dynamic else ls.get_config()["loss_scale_value"]

    @property
    def dynamic_growth_steps(self) -> Any:
        """Steps of finite gradients before a dynamic scale doubles (None for a fixed one)."""
        return self._loss_scale.increment_period if self.dynamic else None

    def __getattr__(self, name: str) -> Any:
        # only attributes this object lacks: the wrapped optimizer's (lr, iterations, weights, ...)
        if name.startswith("__") or name == "_optimizer":
            raise AttributeError(name)
        return getattr(self._optimizer, name)

    def get_scaled_loss(self, loss: Any) -> Any:
        """loss * the current loss scale (a callable loss: a callable giving that)."""
        if callable(loss) and not isinstance(loss, _g.Tensor):
            return lambda: self.get_scaled_loss(loss())
        t = _g.convert_to_tensor(loss)
        scale = self._loss_scale()
        return t * (scale if scale.dtype == t.dtype else _cast(scale, t.dtype))

    def get_unscaled_gradients(self, grads: Sequence[Any]) -> List[Any]:
        """Each gradient (None kept) divided by the current loss scale."""
        reciprocal = 1 / self._loss_scale()
        return [None if gr is None else _ls.scaled_gradient(gr, reciprocal) for gr in grads]

    def get_config(self) -> Dict[str, Any]:
        from .optimizers_more import serialize
        return {"optimizer": serialize(self._optimizer),
                "loss_scale": {"class_name": type(self._loss_scale).__name__, "config": self._loss_scale.get_config()}}

    @classmethod
    def from_config(cls, config: Dict[str, Any], custom_objects: Any = None) -> "LossScaleOptimizer":
        from .optimizers_more import deserialize
        ls = config["loss_scale"]
        if isinstance(ls, dict):
            ls = getattr(_ls, ls["class_name"]).from_config(ls["config"])
        return cls(deserialize(config["optimizer"], custom_objects=custom_objects), ls)


def _from_v2_args(dynamic: bool, initial_scale: Any, growth_steps: Any) -> _ls.LossScale:
    if not dynamic:
        if growth_steps is not None:
            raise ValueError("dynamic_growth_steps cannot be given when dynamic is False")
        if initial_scale is None:
            raise ValueError("initial_scale must be given when dynamic is False")
        return _ls.FixedLossScale(initial_scale)
    return _ls.DynamicLossScale(2.0 ** 15 if initial_scale is None else initial_scale,
                                2000 if growth_steps is None else growth_steps)


def _cast(t: Any, dtype: Any) -> Any:
    from ..graph.ops import math_ops
    return math_ops.cast(t, dtype)


def inner_optimizer(opt: Optimizer) -> Optimizer:
    """The optimizer a LossScaleOptimizer wraps (any other: itself)."""
    return opt._optimizer if isinstance(opt, LossScaleOptimizer) else opt


def wrap_for_policy(opt: Optimizer, policy: Any) -> Optimizer:
    """What Model.compile trains with: `opt` in a LossScaleOptimizer with the policy's loss
    scale (made in the default graph), unless it has none or `opt` is one already."""
    ls = policy.loss_scale if policy is not None else None
    if ls is None or isinstance(opt, _ls.MixedPrecisionLossScaleOptimizer):
        return opt
    return LossScaleOptimizer(opt, ls)
