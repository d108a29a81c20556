"""The op registry: one entry per op type.

An entry holds the op's shape/dtype inference (`shape_fn`), its gradient (`grad_fn`,
registered separately with `register_gradient`, one line per op in the family's gradient
table), and the facts the rest of the system reads instead of keeping lists of its own:

- `stateful`: never constant-folded or deduplicated, never pruned as a no-op;
- `collective`: every rank must issue it in the same order (the pre-run plan check compares
  them across ranks), and it completes asynchronously;
- `ragged`: a collective whose inputs' first dimension may differ between ranks;
- `host_only`: runs on the CPU (its kernel works on host buffers: queues, stacks, MPI);
- `variable_state`: stateful only through the variable handles it takes as inputs (an
  update or read), so it may move past ops that touch other variables;
- `host_inputs` / `metadata_only` (TF's HostMemory): the input positions a kernel reads on
  the host whatever its device (shapes, sizes), and ops that read only their inputs' shapes
  (Shape, Size, Rank): neither gets a copy between devices.

Kernels live in collflow.kernels, registered per (op type, device).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple, Union

__all__ = ["OpDef", "register_op", "register_gradient", "not_differentiable", "get_op_def", "registered_ops",
           "register_named_gradient", "named_gradient"]

# shape_fn(op) -> list of (DType, TensorShape-like) per output
ShapeFn = Callable[[Any], List[Tuple[Any, Any]]]


class OpDef:
    """Static description of an op type."""

    __slots__ = ("name", "shape_fn", "grad_fn", "stateful", "differentiable", "is_async", "doc", "collective",
                 "ragged", "host_only", "variable_state", "host_inputs", "metadata_only")

    def __init__(self, name: str, shape_fn: ShapeFn, stateful: bool, doc: str = "", collective: bool = False,
                 ragged: bool = False, host_only: bool = False, variable_state: bool = False,
                 host_inputs: Tuple[int, ...] = (), metadata_only: bool = False):
        self.name = name
        self.shape_fn = shape_fn
        self.grad_fn: Optional[Callable] = None
        # None: unknown yet; False: declared not differentiable; True: has grad_fn
        self.differentiable: Optional[bool] = None
        self.stateful = stateful or collective or variable_state
        self.doc = doc
        self.collective = collective
        self.ragged = ragged
        self.host_only = host_only
        self.variable_state = variable_state
        self.host_inputs = tuple(host_inputs)
        self.metadata_only = metadata_only

    def __repr__(self) -> str:
        return f"OpDef({self.name})"


_REGISTRY: Dict[str, OpDef] = {}


def register_op(name: str, shape_fn: ShapeFn, *, stateful: bool = False, doc: str = "", collective: bool = False,
                ragged: bool = False, host_only: bool = False, variable_state: bool = False,
                host_inputs: Tuple[int, ...] = (), metadata_only: bool = False) -> OpDef:
    """Registers op type `name`; `shape_fn(op)` returns [(dtype, shape), ...] per output.

    The keyword facts are described in the module docstring."""
    if name in _REGISTRY:
        raise ValueError(f"op type {name!r} is already registered")
    d = OpDef(name, shape_fn, stateful, doc, collective, ragged, host_only or name in _HOST_ONLY_LATER,
              variable_state, host_inputs, metadata_only)
    _REGISTRY[name] = d
    return d


# host_only declared (by a kernel module) before the op type itself was registered
_HOST_ONLY_LATER: set = set()


def declare_host_only(*names: str) -> None:
    """Marks op types host-only, also those not registered yet (their kernels may load first)."""
    for name in names:
        d = _REGISTRY.get(name)
        if d is None:
            _HOST_ONLY_LATER.add(name)
        else:
            d.host_only = True


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


# gradient functions registered under a name (TF1's tf.RegisterGradient) for
# Graph.gradient_override_map; None: registered as having no gradient (tf.NotDifferentiable)
_NAMED_GRADIENTS: Dict[str, Optional[Callable]] = {}


def register_named_gradient(name: str, fn: Optional[Callable]) -> None:
    """Registers `fn` (None: no gradient) under `name`, as tf.RegisterGradient / tf.NotDifferentiable:
    a name that is an op type with a gradient already, or a name registered before, is a KeyError."""
    if not isinstance(name, str):
        raise TypeError("op_type must be a string")
    d = _REGISTRY.get(name)
    if name in _NAMED_GRADIENTS or (d is not None and d.grad_fn is not None and fn is not None):
        raise KeyError(f"Registering two gradient with name '{name}'!")
    _NAMED_GRADIENTS[name] = fn
    if d is not None and d.grad_fn is None:
        # an op type of collflow's without a gradient gets this one (or is declared without)
        d.grad_fn = fn
        d.differentiable = fn is not None


def named_gradient(name: str) -> Tuple[bool, Optional[Callable]]:
    """(found, the function registered under `name` or an op type's own gradient; None: none)."""
    if name in _NAMED_GRADIENTS:
        return True, _NAMED_GRADIENTS[name]
    d = _REGISTRY.get(name)
    if d is not None and (d.grad_fn is not None or d.differentiable is False):
        return True, d.grad_fn
    return False, None


def get_op_def(name: str) -> OpDef:
    try:
        return _REGISTRY[name]
    except KeyError:
        from ..errors import NotFoundError
        raise NotFoundError(f"op type {name!r} is not registered") from None


def registered_ops() -> Dict[str, OpDef]:
    return dict(_REGISTRY)
