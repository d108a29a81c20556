"""Variable ops: handles, reads, assignments and sparse (scatter) updates.

A variable is a resource in the Session's container, reached through the output of its
VarHandle op.  ReadVariable gives its value; Assign* ops change it and output the new value.
Gradients flow from ReadVariable to the handle, so `gradients(loss, [var])` sums over every
read of the variable.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_op, register_gradient, not_differentiable
from ..shape import TensorShape
from .op_util import make_op, single

__all__ = ["assign", "assign_add", "assign_sub", "scatter_add", "scatter_sub", "scatter_update",
           "is_variable_initialized", "variable_dtype_shape", "count_up_to"]


def variable_dtype_shape(handle: _g.Tensor) -> tuple:
    """(dtype, TensorShape) of the variable behind a resource handle."""
    op = handle.op
    # a handle may reach a branch or loop body through Switch/Enter/Identity
    while handle.dtype == _dt.resource and op.type in _HANDLE_PASSTHROUGH and op.inputs:
        op = op.inputs[0].op
    if handle.dtype != _dt.resource or op.type != "VarHandle":
        raise InvalidArgumentError(f"{handle.name} is not a variable handle")
    return op.attrs["dtype"], op.attrs["shape"]


_HANDLE_PASSTHROUGH = frozenset({"Switch", "Enter", "Identity", "Merge", "Exit", "NextIteration"})


def _value_spec(op: _g.Operation) -> list:
    return [variable_dtype_shape(op.inputs[0])]


def _assign_spec(op: _g.Operation) -> list:
    dt, shp = variable_dtype_shape(op.inputs[0])
    val = op.inputs[1]
    if val.dtype != dt:
        raise ValueError(f"cannot assign a {val.dtype.name} value to a {dt.name} variable {op.inputs[0].op.name!r}")
    if op.attrs.get("validate_shape", True) and not shp.is_compatible_with(val.shape):
        raise ValueError(f"cannot assign a value of shape {val.shape} to variable "
                         f"{op.inputs[0].op.name!r} of shape {shp}")
    return [(dt, shp)]


def _scatter_spec(op: _g.Operation) -> list:
    dt, shp = variable_dtype_shape(op.inputs[0])
    idx, upd = op.inputs[1], op.inputs[2]
    if not idx.dtype.is_integer:
        raise ValueError(f"scatter indices must be integers, got {idx.dtype.name}")
    if upd.dtype != dt:
        raise ValueError(f"scatter updates have dtype {upd.dtype.name}, the variable {dt.name}")
    return [(dt, shp)]


register_op("VarHandle", lambda op: [(_dt.resource, TensorShape(()))], variable_state=True)
register_op("ReadVariable", _value_spec, variable_state=True)
# zeros shaped as a variable's value (the zero gradient of a handle a cond branch did not use);
# dtype and shape are attrs, since the handle may come off a stack in a backward loop
register_op("ZerosLikeVariable", lambda op: [(op.attrs["dtype"], op.attrs["shape"])], variable_state=True)
not_differentiable("ZerosLikeVariable")
register_op("AssignVariable", _assign_spec, variable_state=True)
register_op("AssignAddVariable", _assign_spec, variable_state=True)
register_op("AssignSubVariable", _assign_spec, variable_state=True)
register_op("ScatterAdd", _scatter_spec, variable_state=True)
register_op("ScatterSub", _scatter_spec, variable_state=True)
register_op("ScatterUpdate", _scatter_spec, variable_state=True)
register_op("VarIsInitialized", lambda op: [(_dt.bool_, TensorShape(()))], variable_state=True)


def _count_spec(op: _g.Operation) -> list:
    dt, shp = variable_dtype_shape(op.inputs[0])
    if dt not in (_dt.int32, _dt.int64) or shp.rank not in (None, 0):
        raise ValueError(f"count_up_to needs an int32 or int64 scalar variable, {op.inputs[0].op.name!r} is "
                         f"{dt.name} {shp}")
    return [(dt, TensorShape(()))]


register_op("CountUpTo", _count_spec, variable_state=True)

not_differentiable("VarHandle", "AssignVariable", "AssignAddVariable", "AssignSubVariable", "CountUpTo",
                   "ScatterAdd", "ScatterSub", "ScatterUpdate", "VarIsInitialized")


@register_gradient("ReadVariable")
def _read_grad(op: _g.Operation, grad: Any) -> list:
    return [grad]


def _handle(ref: Any) -> _g.Tensor:
    h = getattr(ref, "handle", None)
    if h is None:
        raise TypeError(f"expected a cf.Variable, got {type(ref).__name__}")
    return h


def _value_for(ref: Any, value: Any) -> _g.Tensor:
    dt, _ = variable_dtype_shape(_handle(ref))
    if isinstance(value, _g.Tensor):
        return value
    return _g.convert_to_tensor(value, dtype=dt, graph=_handle(ref).graph)


# TF1's signatures: use_locking is accepted and changes nothing (a variable's updates are
# atomic here: its state's lock)
def assign(ref: Any, value: Any, validate_shape: Optional[bool] = None, use_locking: Optional[bool] = None,
           name: Optional[str] = None) -> _g.Tensor:
    """Sets the variable to `value`; the output is the new value."""
    validate_shape = True if validate_shape is None else validate_shape
    return single("AssignVariable", [_handle(ref), _value_for(ref, value)],
                  {"validate_shape": validate_shape}, name=name or "Assign")


def assign_add(ref: Any, value: Any, use_locking: Optional[bool] = None, name: Optional[str] = None) -> _g.Tensor:
    """Adds `value` to the variable; the output is the new value."""
    return single("AssignAddVariable", [_handle(ref), _value_for(ref, value)], name=name or "AssignAdd")


def assign_sub(ref: Any, value: Any, use_locking: Optional[bool] = None, name: Optional[str] = None) -> _g.Tensor:
    """Subtracts `value` from the variable; the output is the new value."""
    return single("AssignSubVariable", [_handle(ref), _value_for(ref, value)], name=name or "AssignSub")


def scatter_add(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: Optional[str] = None) -> _g.Tensor:
    """ref[indices] += updates (duplicates accumulate); touches only those rows."""
    return single("ScatterAdd", [_handle(ref), indices, _value_for(ref, updates)], name=name or "ScatterAdd")


def scatter_sub(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: Optional[str] = None) -> _g.Tensor:
    """ref[indices] -= updates (duplicates accumulate); touches only those rows."""
    return single("ScatterSub", [_handle(ref), indices, _value_for(ref, updates)], name=name or "ScatterSub")


def scatter_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True,
                   name: Optional[str] = None) -> _g.Tensor:
    """ref[indices] = updates."""
    return single("ScatterUpdate", [_handle(ref), indices, _value_for(ref, updates)], name=name or "ScatterUpdate")


def is_variable_initialized(ref: Any, name: Optional[str] = None) -> _g.Tensor:
    return single("VarIsInitialized", [_handle(ref)], name=name or "IsInitialized")


def count_up_to(ref: Any, limit: int, name: Optional[str] = None) -> _g.Tensor:
    """Increments an integer scalar variable and returns its value before, until it reaches
    `limit`: then OutOfRangeError (tf.count_up_to; the epoch counter of input producers)."""
    return single("CountUpTo", [_handle(ref)], {"limit": int(limit)}, name=name or "CountUpTo")

