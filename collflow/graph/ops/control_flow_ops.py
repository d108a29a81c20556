"""Control-flow primitives of the dataflow graph (the TensorFlow paper's section 3.4).

Switch forwards its input to one of two outputs and marks the other *dead*; Merge forwards
the first live input; Enter, Exit and NextIteration move values into a loop frame, out of
it, and to the next iteration; LoopCond marks a loop's predicate.  The dynamic executor
(runtime/dynamic_executor.py) gives them their meaning; cf.cond and cf.while_loop build
on them (graph/control_flow.py).  Stack ops save loop values for the backward loop.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import register_op, not_differentiable
from ..shape import TensorShape
from .op_util import make_op, single

__all__: List[str] = []

CONTROL_FLOW_TYPES = frozenset({"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"})


def _switch_spec(op: _g.Operation) -> list:
    data, pred = op.inputs
    if pred.dtype != _dt.bool_:
        raise ValueError(f"Switch predicate must be bool, got {pred.dtype.name}")
    if pred.shape.rank not in (None, 0):
        raise ValueError(f"Switch predicate must be a scalar, got shape {pred.shape}")
    return [(data.dtype, data.shape), (data.dtype, data.shape)]


def _merge_spec(op: _g.Operation) -> list:
    shp = op.attrs.get("shape")
    x0 = op.inputs[0]
    if shp is None:
        shp = x0.shape
        for t in op.inputs[1:]:
            if t.dtype != x0.dtype:
                raise ValueError(f"Merge inputs have different dtypes {x0.dtype.name} and {t.dtype.name}")
            # the most specific shape both inputs have (TF's Merge): which input arrives is
            # known only at run time, so a dim known on one side only stays unknown
            if shp.rank == t.shape.rank and shp.rank is not None:
                shp = TensorShape([a if a == b else None for a, b in zip(shp.dims, t.shape.dims)])
            else:
                shp = TensorShape(None)
    return [(x0.dtype, shp), (_dt.int32, TensorShape(()))]


def _loop_cond_spec(op: _g.Operation) -> list:
    p = op.inputs[0]
    if p.dtype != _dt.bool_ or p.shape.rank not in (None, 0):
        raise ValueError(f"the loop condition must be a scalar bool, got {p.dtype.name} of shape {p.shape}")
    return [(_dt.bool_, TensorShape(()))]


register_op("Switch", _switch_spec)
register_op("Merge", _merge_spec)
register_op("Enter", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)])
register_op("Exit", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)])
register_op("NextIteration", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)])
register_op("LoopCond", _loop_cond_spec)
# The stack of a while loop: per run (and per iteration of an enclosing loop) it holds the
# forward values its gradients read.  StackPush(token, iteration, value) saves `value` under
# (slot, iteration) and passes the token on (also when `value` is dead: an untaken cond
# branch saves nothing); StackRead(stack, iteration) reads it back (dead if never saved).
register_op("StackCreate", lambda op: [(_dt.resource, TensorShape(()))], stateful=True, host_only=True)
register_op("StackPush", lambda op: [(op.inputs[0].dtype, TensorShape(()))], stateful=True, host_only=True)
register_op("StackRead", lambda op: [(op.attrs["dtype"], op.attrs["shape"])], stateful=True, host_only=True)

# Enter/Exit/NextIteration/LoopCond are differentiated as a whole loop (control_flow.py)
not_differentiable("Enter", "Exit", "NextIteration", "LoopCond", "StackCreate", "StackPush", "StackRead")


def switch(data: Any, pred: Any, name: Optional[str] = None) -> tuple:
    """(output_false, output_true): `data` goes to the one `pred` selects; the other is dead."""
    op = make_op("Switch", [data, pred], name=name or "Switch")
    return op.outputs[0], op.outputs[1]


def merge(inputs: Sequence[Any], name: Optional[str] = None, pred: Any = None, shape: Any = None) -> tuple:
    """(output, value_index): the first live input and its index."""
    attrs = {"pred": pred}
    if shape is not None:
        attrs["shape"] = shape
    op = make_op("Merge", list(inputs), attrs, name=name or "Merge")
    return op.outputs[0], op.outputs[1]


def enter(data: Any, frame_name: str, is_constant: bool = False, parallel_iterations: int = 10,
          name: Optional[str] = None) -> _g.Tensor:
    return single("Enter", [data], {"frame_name": frame_name, "is_constant": bool(is_constant),
                                    "parallel_iterations": int(parallel_iterations)}, name=name or "Enter")


def exit(data: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A001 - TF name
    return single("Exit", [data], name=name or "Exit")


def next_iteration(data: Any, name: Optional[str] = None) -> _g.Tensor:
    return single("NextIteration", [data], name=name or "NextIteration")


def loop_cond(pred: Any, name: Optional[str] = None) -> _g.Tensor:
    return single("LoopCond", [pred], name=name or "LoopCond")
