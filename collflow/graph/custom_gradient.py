"""tf.custom_gradient: a function whose gradient the user writes (straight-through estimators,
gradient reversal, clipped or stabilised backward passes).

    @cf.custom_gradient
    def clip_grad(x):
        def grad(dy):
            return cf.clip_by_value(dy, -1.0, 1.0)
        return cf.identity(x), grad

The forward outputs pass through one CustomGradient op whose inputs are the function's tensor
arguments and its outputs; its gradient calls `grad` with the outputs' gradients and hands the
results to the arguments, so nothing flows through the forward computation itself.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, List

from ..errors import InvalidArgumentError
from . import graph as _g
from . import nest
from .registry import register_gradient, register_named_gradient, register_op
from .ops.op_util import make_op

__all__ = ["custom_gradient", "RegisterGradient", "NotDifferentiable", "no_gradient"]


def _spec(op: _g.Operation) -> list:
    n = op.attrs["n_in"]
    return [(t.dtype, t.shape) for t in op.inputs[n:]]


register_op("CustomGradient", _spec)


@register_gradient("CustomGradient")
def _custom_grad(op: _g.Operation, *dys: Any) -> list:
    n = op.attrs["n_in"]
    dys = [d if d is not None else _zeros(t) for d, t in zip(dys, op.outputs)]
    fn = op.attrs.get("grad_fn")
    if fn is None:
        from ..errors import UnimplementedError
        raise UnimplementedError(f"custom_gradient op {op.name!r} was imported from a meta graph, which does not "
                                 "carry its Python gradient function; build the gradient before exporting", op)
    out = fn(*dys)
    grads = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(grads) != n:
        raise InvalidArgumentError(f"custom_gradient: the gradient function returned {len(grads)} gradients for "
                                   f"{n} tensor arguments", op)
    return grads + [None] * (len(op.inputs) - n)


def _zeros(t: _g.Tensor) -> _g.Tensor:
    from .ops import array_ops
    return array_ops.zeros_like(t)


def custom_gradient(f: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator (TF1's tf.custom_gradient): f(*tensors) returns (outputs, grad_fn), grad_fn(*dys)
    returns one gradient per tensor argument.  grad_fn taking `variables=` (gradients for
    variables read inside f) is not supported: a clear error says so."""
    @functools.wraps(f)
    def decorated(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise InvalidArgumentError("custom_gradient: the decorated function takes tensors as positional "
                                       "arguments only")
        xs: List[_g.Tensor] = [_g.convert_to_tensor(a) for a in args]
        result, grad_fn = f(*xs)
        params = inspect.signature(grad_fn).parameters
        if "variables" in params:
            raise InvalidArgumentError("custom_gradient: a gradient function taking variables= is not supported "
                                       "in collflow; pass the variables' values as arguments instead")
        flat = [_g.convert_to_tensor(y) for y in nest.flatten(result)]
        if not flat:
            raise InvalidArgumentError("custom_gradient: the function returned no tensors")
        op = make_op("CustomGradient", xs + flat, {"n_in": len(xs), "grad_fn": grad_fn}, name="CustomGradient")
        return nest.pack_sequence_as(result, list(op.outputs))
    return decorated


class RegisterGradient:
    """`@tf.RegisterGradient("Name")` registers a gradient function fn(op, *grads) -> [grad per
    input] under "Name", for ops that `Graph.gradient_override_map({"OpType": "Name"})` marks
    (e.g. a py_func's gradient, a straight-through Round), as TF1's; a name registered twice,
    or an op type's name that has a gradient already, is a KeyError."""

    def __init__(self, op_type: str):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, f: Callable[..., Any]) -> Callable[..., Any]:
        register_named_gradient(self._op_type, f)
        return f


def NotDifferentiable(op_type: str) -> None:  # noqa: N802 - TF's name
    """Declares that ops of `op_type` (or marked with that name) have no gradient: their inputs
    get None, as TF1's tf.NotDifferentiable / tf.no_gradient."""
    register_named_gradient(op_type, None)


no_gradient = NotDifferentiable
