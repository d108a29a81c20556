"""tf.contrib.layers.optimize_loss: TensorFlow 1.x's one-call training op.

    train_op = tf.contrib.layers.optimize_loss(loss, tf.train.get_or_create_global_step(),
                                               learning_rate=0.1, optimizer="Adam",
                                               clip_gradients=5.0)
    sess.run(train_op)   # one step; the value fetched is the loss

As TF 1.15's contrib/layers/python/layers/optimizers.py: the ops live under the variable and
name scope `name or "OptimizeLoss"`; a float learning rate becomes the non-trainable variable
"OptimizeLoss/learning_rate"; the update ops (default UPDATE_OPS) become control dependencies
of the loss; gradients are noised, multiplied, then clipped in that order; the result is the
loss (an identity) that runs the update (and the global step increment) first.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.indexed_slices import IndexedSlices
from ..graph.initializers import Constant
from ..graph.ops import array_ops, clip_ops, math_ops, random_ops
from ..graph.ops.constant_op import identity
from ..graph.variable_scope import get_variable, variable_scope
from ..graph.variables import Variable, trainable_variables
from ..summary import summary_ops as _summary
from ..train import optimizers as _opts
from ..train.global_step import assert_global_step, get_global_step
from ..train.optimizer import Optimizer

__all__ = ["optimize_loss", "OPTIMIZER_CLS_NAMES", "OPTIMIZER_SUMMARIES"]

# TF 1.15's table: "Momentum" is a fixed momentum of 0.9 (MomentumOptimizer needs one)
OPTIMIZER_CLS_NAMES: Dict[str, Callable[..., Optimizer]] = {
    "Adagrad": _opts.AdagradOptimizer,
    "Adam": _opts.AdamOptimizer,
    "Ftrl": _opts.FtrlOptimizer,
    "Momentum": lambda learning_rate: _opts.MomentumOptimizer(learning_rate, momentum=0.9),
    "RMSProp": _opts.RMSPropOptimizer,
    "SGD": _opts.GradientDescentOptimizer,
}

OPTIMIZER_SUMMARIES = ["learning_rate", "loss", "gradients", "gradient_norm", "global_gradient_norm"]

GradsAndVars = List[Tuple[Any, Variable]]


def _with_dependencies(deps: Sequence[Any], t: _g.Tensor) -> _g.Tensor:
    """identity(t) that runs after `deps`, named as TF's control_flow_ops.with_dependencies."""
    with t.graph.control_dependencies(list(deps)):
        return identity(t, name="control_dependency")


def _learning_rate(learning_rate: Any) -> Any:
    """The learning rate as TF checks it: a 0-d Tensor is used as is, a float becomes a variable."""
    if isinstance(learning_rate, (_g.Tensor, Variable)) and learning_rate.shape.rank == 0:
        # TF accepts only a 0-d Tensor; a scalar Variable is let through as well (it reads as one)
        return learning_rate
    if isinstance(learning_rate, float):
        if learning_rate < 0.0:
            raise ValueError(f"Invalid learning_rate {learning_rate}.")
        return get_variable("learning_rate", [], trainable=False, initializer=Constant(learning_rate))
    raise ValueError(f"Learning rate should be 0d Tensor or float. Got {learning_rate} of type "
                     f"{type(learning_rate)}")


def _make_optimizer(optimizer: Any, lr: Any, learning_rate: Any) -> Optimizer:
    """The optimizer from a name, an Optimizer subclass, an instance or a factory (TF's order)."""
    if isinstance(optimizer, str):
        if lr is None:
            raise ValueError(f"Learning rate is None, but should be specified if optimizer is string "
                             f"({optimizer}).")
        if optimizer not in OPTIMIZER_CLS_NAMES:
            raise ValueError(f"Optimizer name should be one of [{', '.join(OPTIMIZER_CLS_NAMES)}], you provided "
                             f"{optimizer}.")
        return OPTIMIZER_CLS_NAMES[optimizer](learning_rate=lr)
    if isinstance(optimizer, type) and issubclass(optimizer, Optimizer):
        if lr is None:
            raise ValueError(f"Learning rate is None, but should be specified if optimizer is class "
                             f"({optimizer}).")
        return optimizer(learning_rate=lr)
    if isinstance(optimizer, Optimizer):
        return optimizer
    if callable(optimizer):
        opt = optimizer(lr) if learning_rate is not None else optimizer()
        if not isinstance(opt, Optimizer):
            raise ValueError(f"Unrecognized optimizer: function should return subclass of Optimizer. Got {opt}.")
        return opt
    raise ValueError("Unrecognized optimizer: should be string, subclass of Optimizer, instance of subclass of "
                     f"Optimizer or function with one argument. Got {optimizer}.")


def _add_scaled_noise(grads_and_vars: GradsAndVars, scale: float) -> GradsAndVars:
    """grad + scale * truncated_normal(grad's shape), as TF's _add_scaled_noise_to_gradients."""
    out: GradsAndVars = []
    for grad, var in grads_and_vars:
        if grad is None:
            out.append((None, var))
            continue
        # TF adds dense noise to an IndexedSlices (which fails there); the rows' values get it here
        values = grad.values if isinstance(grad, IndexedSlices) else grad
        shape = values.shape.as_list() if values.shape.is_fully_defined() else array_ops.shape(values)
        noisy = values + random_ops.truncated_normal(shape, dtype=values.dtype) * scale
        out.append((IndexedSlices(noisy, grad.indices, grad.dense_shape, grad._static_shape)
                    if isinstance(grad, IndexedSlices) else noisy, var))
    return out


def _multiply_gradients(grads_and_vars: GradsAndVars, multipliers: Dict[Any, Any]) -> GradsAndVars:
    """Scales the gradient of each variable named in `multipliers` (by the variable or its name)."""
    out: GradsAndVars = []
    for grad, var in grads_and_vars:
        if grad is not None and (var in multipliers or var.name in multipliers):
            m = multipliers[var] if var in multipliers else multipliers[var.name]
            if isinstance(grad, IndexedSlices):
                grad = IndexedSlices(grad.values * math_ops.cast(m, grad.dtype), grad.indices, grad.dense_shape,
                                     grad._static_shape)
            else:
                grad = grad * math_ops.cast(m, grad.dtype)
        out.append((grad, var))
    return out


def _clip_by_global_norm(grads_and_vars: GradsAndVars, clip_norm: float) -> GradsAndVars:
    grads, variables = zip(*grads_and_vars)
    clipped, _ = clip_ops.clip_by_global_norm(list(grads), clip_norm)
    return list(zip(clipped, variables))


def _global_norm(grads_and_vars: GradsAndVars) -> _g.Tensor:
    return clip_ops.global_norm([g for g, _ in grads_and_vars])


def optimize_loss(loss: Any, global_step: Any, learning_rate: Any, optimizer: Any,
                  gradient_noise_scale: Optional[float] = None,
                  gradient_multipliers: Optional[Dict[Any, Any]] = None,
                  clip_gradients: Union[None, float, Callable[[GradsAndVars], GradsAndVars]] = None,
                  learning_rate_decay_fn: Optional[Callable[[Any, Any], Any]] = None,
                  update_ops: Optional[Sequence[Any]] = None, variables: Optional[Sequence[Variable]] = None,
                  name: Optional[str] = None, summaries: Optional[Sequence[str]] = None,
                  colocate_gradients_with_ops: bool = False, increment_global_step: bool = True) -> _g.Tensor:
    """The training tensor: `loss`, fetched after one optimizer step on `variables`.

    optimizer: a name in OPTIMIZER_CLS_NAMES, an Optimizer subclass or a factory (called with
    the learning rate, or with nothing when learning_rate is None), or an Optimizer instance
    (learning_rate is then unused).  global_step: None takes the graph's (if any);
    increment_global_step=False leaves it alone.  clip_gradients: a float (clip by global
    norm) or a callable on the (gradient, variable) list.  summaries: some of
    OPTIMIZER_SUMMARIES (default loss, learning_rate, global_gradient_norm).
    """
    loss = _g.convert_to_tensor(loss)
    if loss.shape.rank != 0:
        raise ValueError(f"Expected scalar shape for {loss.name}, saw shape: {loss.shape}.")
    if global_step is None:
        global_step = get_global_step()
    else:
        assert_global_step(global_step)
    with variable_scope(name, "OptimizeLoss", [loss, global_step]):
        if update_ops is None:
            update_ops = list(dict.fromkeys(loss.graph.get_collection(GraphKeys.UPDATE_OPS)))
        if update_ops:
            # the batch-norm moving averages and the like run whenever the loss is computed
            loss = _with_dependencies(list(update_ops), loss)

        lr = _learning_rate(learning_rate) if learning_rate is not None else None
        if summaries is None:
            summaries = ["loss", "learning_rate", "global_gradient_norm"]
        else:
            for s in summaries:
                if s not in OPTIMIZER_SUMMARIES:
                    raise ValueError(f"Summaries should be one of [{', '.join(OPTIMIZER_SUMMARIES)}], you provided "
                                     f"{s}.")
        if learning_rate is not None and learning_rate_decay_fn is not None:
            if global_step is None:
                raise ValueError("global_step is required for learning_rate_decay_fn.")
            lr = learning_rate_decay_fn(lr, global_step)
            # as TF 1.15: the learning_rate summary is written only for a decayed rate
            if "learning_rate" in summaries:
                _summary.scalar("learning_rate", lr)

        opt = _make_optimizer(optimizer, lr, learning_rate)
        if variables is None:
            variables = trainable_variables()
        gradients = opt.compute_gradients(loss, variables, colocate_gradients_with_ops=colocate_gradients_with_ops)

        if gradient_noise_scale is not None:
            gradients = _add_scaled_noise(gradients, gradient_noise_scale)
        if gradient_multipliers is not None:
            gradients = _multiply_gradients(gradients, gradient_multipliers)
            if not gradients:
                raise ValueError("Empty list of (gradient, var) pairs encountered. This is most likely to be caused "
                                 "by an improper value of gradient_multipliers.")

        norms = "global_gradient_norm" in summaries or "gradient_norm" in summaries
        if norms:
            _summary.scalar("global_norm/gradient_norm", _global_norm(gradients))

        if isinstance(clip_gradients, float):
            gradients = _clip_by_global_norm(gradients, clip_gradients)
        elif callable(clip_gradients):
            gradients = clip_gradients(gradients)
        elif clip_gradients is not None:
            raise ValueError(f"Unknown type {type(clip_gradients)} for clip_gradients")

        if "loss" in summaries:
            _summary.scalar("loss", loss)
        for grad, var in gradients:
            values = grad.values if isinstance(grad, IndexedSlices) else grad
            if values is None:
                continue
            var_name = var.name.replace(":", "_")
            if "gradients" in summaries:
                _summary.histogram(f"gradients/{var_name}", values)
            if "gradient_norm" in summaries:
                _summary.scalar(f"gradient_norm/{var_name}", clip_ops.global_norm([values]))
        if clip_gradients is not None and norms:
            _summary.scalar("global_norm/clipped_gradient_norm", _global_norm(gradients))

        grad_updates = opt.apply_gradients(gradients, global_step=global_step if increment_global_step else None,
                                           name="train")
        return _with_dependencies([grad_updates], loss)
