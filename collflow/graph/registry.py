"""The op registry: one entry per op type.

An entry holds the op's shape/dtype inference (`shape_fn`), its gradient (`grad_fn`,
registered separately with `register_gradient`, one line per op in the family's gradient
table), whether it is stateful (never pruned by caching, never constant-folded), and how
many outputs it has.  Kernels live in collflow.kernels, registered per (op type, device).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple, Union

__all__ = ["OpDef", "register_op", "register_gradient", "not_differentiable", "get_op_def", "registered_ops"]

# shape_fn(op) -> list of (DType, TensorShape-like) per output
ShapeFn = Callable[[Any], List[Tuple[Any, Any]]]


class OpDef:
    """Static description of an op type."""

    __slots__ = ("name", "shape_fn", "grad_fn", "stateful", "differentiable", "is_async", "doc")

    def __init__(self, name: str, shape_fn: ShapeFn, stateful: bool, doc: str = ""):
        self.name = name
        self.shape_fn = shape_fn
        self.grad_fn: Optional[Callable] = None
        # None: unknown yet; False: declared not differentiable; True: has grad_fn
        self.differentiable: Optional[bool] = None
        self.stateful = stateful
        self.doc = doc

    def __repr__(self) -> str:
        return f"OpDef({self.name})"


_REGISTRY: Dict[str, OpDef] = {}


def register_op(name: str, shape_fn: ShapeFn, *, stateful: bool = False, doc: str = "") -> OpDef:
    """Registers op type `name`; `shape_fn(op)` returns [(dtype, shape), ...] per output."""
    if name in _REGISTRY:
        raise ValueError(f"op type {name!r} is already registered")
    d = OpDef(name, shape_fn, stateful, doc)
    _REGISTRY[name] = d
    return d


def register_gradient(name: str) -> Callable[[Callable], Callable]:
    """Decorator: `grad_fn(op, *output_grads) -> [grad per input]` for op type `name`."""
    def deco(fn: Callable) -> Callable:
        d = get_op_def(name)
        if d.grad_fn is not None:
            raise ValueError(f"gradient for {name!r} registered twice")
        d.grad_fn = fn
        d.differentiable = True
        return fn
    return deco


def not_differentiable(*names: str) -> None:
    """Declares that op types have no gradient (their inputs get None)."""
    for name in names:
        get_op_def(name).differentiable = False


def get_op_def(name: str) -> OpDef:
    try:
        return _REGISTRY[name]
    except KeyError:
        from ..errors import NotFoundError
        raise NotFoundError(f"op type {name!r} is not registered") from None


def registered_ops() -> Dict[str, OpDef]:
    return dict(_REGISTRY)
