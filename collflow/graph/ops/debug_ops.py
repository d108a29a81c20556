"""Ops for testing and benchmarking the runtime: an injected delay (a straggler)."""
from __future__ import annotations

from typing import Any, Optional

from .. import graph as _g
from ..registry import register_op, register_gradient
from .op_util import single

__all__ = ["delay"]

register_op("Delay", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], stateful=True)


@register_gradient("Delay")
def _delay_grad(op: _g.Operation, grad: Any) -> list:
    return [grad, None]


def delay(x: Any, seconds: Any, name: Optional[str] = None) -> _g.Tensor:
    """Returns x after sleeping `seconds` (a float scalar tensor): a real delay inside the run.

    The sleep is cancellable: a cancelled run stops waiting within a few milliseconds.
    """
    x = _g.convert_to_tensor(x)
    s = _g.convert_to_tensor(seconds, dtype="float64", graph=x.graph) if not isinstance(seconds, _g.Tensor) else seconds
    return single("Delay", [x, s], name=name or "Delay")
