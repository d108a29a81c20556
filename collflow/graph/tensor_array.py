"""tf.TensorArray: a run-time list of tensors, written and read by index inside loops.

A TensorArray is TensorFlow's way to move per-step values in and out of a while loop: a
preallocated [size, ...] buffer (collflow/kernels/tensor_array_kernels.py) behind a
resource handle.  Each write returns a scalar float *flow* tensor that orders later uses
after it; the flow is what travels through a loop (cf.while_loop accepts TensorArrays among
its loop variables and carries their flows), so the gradient machinery carries it like any
float tensor.  The gradient of a write is a read of a *gradient* TensorArray and vice
versa, so a backward loop moves one step's slice per iteration: O(T) work in all.

Elements are write-once (a second write to an index is an error).  `stack()` gives all
elements as one [size, ...] tensor, with zeros for elements never written.  With
`dynamic_size=True` a write past the end grows the array.
"""
from __future__ import annotations

import re
from typing import Any, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError, UnimplementedError
from . import graph as _g
from .ops import array_ops as _a
from .ops.constant_op import identity, no_op
from .ops.op_util import make_op, single
from .registry import not_differentiable, register_gradient, register_op
from .shape import TensorShape, as_shape

__all__ = ["TensorArray"]


# -- shape functions ---------------------------------------------------------------------


def _elem(op: _g.Operation) -> TensorShape:
    return as_shape(op.attrs["element_shape"])


def _check_handle(op: _g.Operation, flow_pos: int, index_pos: Optional[int] = None) -> None:
    if op.inputs[0].dtype != _dt.resource:
        raise ValueError(f"input 0 must be a TensorArray handle (resource), got {op.inputs[0].dtype.name}")
    flow = op.inputs[flow_pos]
    if flow.dtype != _dt.float32 or flow.shape.rank not in (None, 0):
        raise ValueError(f"the flow input must be a float32 scalar, got {flow.dtype.name} {flow.shape}")
    if index_pos is not None:
        i = op.inputs[index_pos]
        if not i.dtype.is_integer or i.shape.rank not in (None, 0):
            raise ValueError(f"the index must be an integer scalar, got {i.dtype.name} {i.shape}")


def _check_value(op: _g.Operation, value: _g.Tensor, shape: TensorShape, what: str) -> None:
    if value.dtype != op.attrs["dtype"]:
        raise ValueError(f"{what} has dtype {value.dtype.name}, the TensorArray holds {op.attrs['dtype'].name}")
    if not shape.is_compatible_with(value.shape):
        raise ValueError(f"{what} has shape {value.shape}, incompatible with the TensorArray's {shape}")


def _stacked(op: _g.Operation) -> TensorShape:
    """[size] + element_shape (size None when not static)."""
    e = _elem(op)
    if e.rank is None:
        return TensorShape(None)
    return TensorShape([op.attrs["size"]] + list(e.dims))


def _ta_spec(op: _g.Operation) -> list:
    size = op.inputs[0]
    if not size.dtype.is_integer or size.shape.rank not in (None, 0):
        raise ValueError(f"size must be an integer scalar, got {size.dtype.name} {size.shape}")
    return [(_dt.resource, TensorShape(())), (_dt.float32, TensorShape(()))]


def _write_spec(op: _g.Operation) -> list:
    _check_handle(op, 3, 1)
    _check_value(op, op.inputs[2], _elem(op), "the written value")
    return [(_dt.float32, TensorShape(()))]


def _read_spec(op: _g.Operation) -> list:
    _check_handle(op, 2, 1)
    return [(op.attrs["dtype"], _elem(op))]


def _stack_spec(op: _g.Operation) -> list:
    _check_handle(op, 1)
    return [(op.attrs["dtype"], _stacked(op))]


def _unstack_spec(op: _g.Operation) -> list:
    _check_handle(op, 2)
    _check_value(op, op.inputs[1], _stacked(op), "the unstacked value")
    return [(_dt.float32, TensorShape(()))]


def _split_spec(op: _g.Operation) -> list:
    _check_handle(op, 2)
    v, e = op.inputs[1], _elem(op)
    if v.dtype != op.attrs["dtype"]:
        raise ValueError(f"the split value has dtype {v.dtype.name}, the TensorArray holds {op.attrs['dtype'].name}")
    if v.shape.rank is not None and e.rank is not None:
        if v.shape.rank != e.rank:
            raise ValueError(f"the split value has shape {v.shape}; elements of shape {e} need rank {e.rank}")
        if not TensorShape(v.shape.dims[1:]).is_compatible_with(TensorShape(e.dims[1:])):
            raise ValueError(f"the split value has shape {v.shape}, incompatible with elements of shape {e}")
    return [(_dt.float32, TensorShape(()))]


def _indices_arg(op: _g.Operation) -> _g.Tensor:
    i = op.inputs[1]
    if not i.dtype.is_integer or i.shape.rank not in (None, 1):
        raise ValueError(f"the indices must be a 1-D integer tensor, got {i.dtype.name} {i.shape}")
    return i


def _gather_spec(op: _g.Operation) -> list:
    _check_handle(op, 2)
    n = _indices_arg(op).shape
    e = _elem(op)
    if e.rank is None:
        return [(op.attrs["dtype"], TensorShape(None))]
    return [(op.attrs["dtype"], TensorShape([n.dims[0] if n.rank == 1 else None] + list(e.dims)))]


def _scatter_spec(op: _g.Operation) -> list:
    _check_handle(op, 3)
    n = _indices_arg(op).shape
    v, e = op.inputs[2], _elem(op)
    lead = n.dims[0] if n.rank == 1 else None
    _check_value(op, v, TensorShape(None) if e.rank is None else TensorShape([lead] + list(e.dims)),
                 "the scattered value")
    return [(_dt.float32, TensorShape(()))]


def _grad_spec(op: _g.Operation) -> list:
    _check_handle(op, 1)
    return [(_dt.resource, TensorShape(())), (_dt.float32, TensorShape(()))]


def _size_spec(op: _g.Operation) -> list:
    _check_handle(op, 1)
    return [(_dt.int32, TensorShape(()))]


# TensorArrayV3(size) -> (handle, flow): a run-time array of `size` elements
# (attrs: dtype, element_shape, size (static or None), dynamic_size)
register_op("TensorArrayV3", _ta_spec, stateful=True)
# (handle, index, value, flow) -> flow: element `index` := value (write-once; a gradient array adds)
register_op("TensorArrayWriteV3", _write_spec, stateful=True)
# (handle, index, flow) -> element `index`
register_op("TensorArrayReadV3", _read_spec, stateful=True)
# (handle, flow [, like]) -> all elements stacked along a new axis 0 (unwritten ones are zeros;
# `like`, an element-shaped tensor, gives the shape when nothing was written)
register_op("TensorArrayStackV3", _stack_spec, stateful=True)
# (handle, value, flow) -> flow: element i := value[i]
register_op("TensorArrayUnstackV3", _unstack_spec, stateful=True)
# (handle, value, flow) -> flow: value's axis 0 split evenly into `size` elements
register_op("TensorArraySplitV3", _split_spec, stateful=True)
# (handle, indices, flow) -> the elements at `indices` stacked along a new axis 0
register_op("TensorArrayGatherV3", _gather_spec, stateful=True, host_inputs=(1,))
# (handle, indices, value, flow) -> flow: element indices[k] := value[k]
register_op("TensorArrayScatterV3", _scatter_spec, stateful=True, host_inputs=(1,))
# (handle, flow) -> (gradient handle, flow): the gradient array of `handle` for one cf.gradients call
register_op("TensorArrayGradV3", _grad_spec, stateful=True)
# (handle, flow) -> the number of elements (grows with writes to a dynamic_size array)
register_op("TensorArraySizeV3", _size_spec, stateful=True)
not_differentiable("TensorArrayV3", "TensorArrayGradV3", "TensorArraySizeV3")


# -- gradients ---------------------------------------------------------------------------

_GRAD_SCOPE = re.compile(r"gradients(_\d+)?$")


def _grad_source() -> str:
    """The name scope of the cf.gradients call being built (its first 'gradients*' part).

    Ops of the backward loop live deeper in that scope, so every gradient op of one
    cf.gradients call finds the same gradient array, and two calls find different ones.
    """
    scope = _g.get_default_graph()._current_scope()
    parts = scope.split("/")
    for i, p in enumerate(parts):
        if _GRAD_SCOPE.match(p):
            return "/".join(parts[:i + 1])
    return parts[0]


def _attrs_of(op: _g.Operation) -> dict:
    return {k: op.attrs[k] for k in ("dtype", "element_shape", "size")}


def _grad_array(op: _g.Operation, handle: _g.Tensor, flow: Any) -> Tuple[_g.Tensor, _g.Tensor]:
    flow = _g.convert_to_tensor(flow)
    gop = make_op("TensorArrayGradV3", [handle, flow], dict(_attrs_of(op), source=_grad_source()),
                  name="TensorArrayGrad")
    return gop.outputs[0], gop.outputs[1]


@register_gradient("TensorArrayReadV3")
def _read_grad(op: _g.Operation, g: Any) -> list:
    handle, index, flow = op.inputs
    gh, gf = _grad_array(op, handle, flow)
    w = single("TensorArrayWriteV3", [gh, index, _g.convert_to_tensor(g), gf], _attrs_of(op), name="TensorArrayWrite")
    return [None, None, w]


@register_gradient("TensorArrayWriteV3")
def _write_grad(op: _g.Operation, gflow: Any) -> list:
    handle, index, _value, _flow = op.inputs
    gflow = _g.convert_to_tensor(gflow)
    gh, gf = _grad_array(op, handle, gflow)
    gv = single("TensorArrayReadV3", [gh, index, gf], _attrs_of(op), name="TensorArrayRead")
    return [None, None, gv, gflow]


@register_gradient("TensorArrayStackV3")
def _stack_grad(op: _g.Operation, g: Any) -> list:
    handle, flow = op.inputs[:2]
    gh, gf = _grad_array(op, handle, flow)
    u = single("TensorArrayUnstackV3", [gh, _g.convert_to_tensor(g), gf], _attrs_of(op), name="TensorArrayUnstack")
    return [None, u] + [None] * (len(op.inputs) - 2)


@register_gradient("TensorArrayUnstackV3")
def _unstack_grad(op: _g.Operation, gflow: Any) -> list:
    handle, _value, _flow = op.inputs
    gflow = _g.convert_to_tensor(gflow)
    gh, gf = _grad_array(op, handle, gflow)
    return [None, single("TensorArrayStackV3", [gh, gf], _attrs_of(op), name="TensorArrayStack"), gflow]


@register_gradient("TensorArraySplitV3")
def _split_grad(op: _g.Operation, gflow: Any) -> list:
    handle, value, _flow = op.inputs
    gflow = _g.convert_to_tensor(gflow)
    gh, gf = _grad_array(op, handle, gflow)
    stacked = single("TensorArrayStackV3", [gh, gf], _attrs_of(op), name="TensorArrayStack")
    return [None, _a.reshape_like(stacked, value), gflow]


@register_gradient("TensorArrayGatherV3")
def _gather_grad(op: _g.Operation, g: Any) -> list:
    handle, indices, flow = op.inputs
    gh, gf = _grad_array(op, handle, flow)
    sc = single("TensorArrayScatterV3", [gh, indices, _g.convert_to_tensor(g), gf], _attrs_of(op),
                name="TensorArrayScatter")
    return [None, None, sc]


@register_gradient("TensorArrayScatterV3")
def _scatter_grad(op: _g.Operation, gflow: Any) -> list:
    handle, indices, _value, _flow = op.inputs
    gflow = _g.convert_to_tensor(gflow)
    gh, gf = _grad_array(op, handle, gflow)
    return [None, None, single("TensorArrayGatherV3", [gh, indices, gf], _attrs_of(op), name="TensorArrayGather"),
            gflow]


# -- the Python object -------------------------------------------------------------------


class TensorArray:
    """A run-time list of `size` tensors of one dtype, written and read by index (tf.TensorArray).

    Made for while loops: `write` returns a new TensorArray whose `flow` follows the write.
    Pass the TensorArray itself among cf.while_loop's loop variables and return the written
    one from the body (TensorFlow's way), or carry `ta.flow` and rebuild with
    `ta.with_flow(flow)`.  Gradients flow through reads, writes, stack, unstack, split, gather
    and scatter.

    dynamic_size: writes past the end grow the array (size() then counts them).
    clear_after_read, colocate_with_first_write_call: accepted; collflow keeps read
    elements (a TensorFlow program that reads each element once behaves the same).
    infer_shape: merge the element shape with every written value's (default).
    """

    def __init__(self, dtype: Any, size: Any = None, dynamic_size: Optional[bool] = None,
                 clear_after_read: Optional[bool] = None, tensor_array_name: Optional[str] = None,
                 handle: Any = None, flow: Any = None, infer_shape: bool = True, element_shape: Any = None,
                 colocate_with_first_write_call: bool = True, name: Optional[str] = None):
        if handle is not None or flow is not None:
            raise UnimplementedError("TensorArray: building one around an existing handle/flow is not supported; "
                                     "use ta.with_flow(flow) on the TensorArray that made the handle")
        if size is None:
            raise InvalidArgumentError("TensorArray: size must be given (use size=0 with dynamic_size=True for an "
                                       "array that grows)")
        self.dtype = _dt.as_dtype(dtype)
        self._dynamic = bool(dynamic_size)
        self._infer_shape = bool(infer_shape)
        size_t = _index(size)
        # a dynamic array's size changes at run time: nothing static about it
        self._size_static = None if self._dynamic else _static_int(size_t)
        self.element_shape = as_shape(element_shape)
        op = make_op("TensorArrayV3", [size_t], dict(self._attrs(), dynamic_size=self._dynamic),
                     name=tensor_array_name or name or "TensorArray")
        self.handle, self.flow = op.outputs[0], op.outputs[1]

    def _attrs(self) -> dict:
        return {"dtype": self.dtype, "element_shape": self.element_shape, "size": self._size_static}

    def _derive(self, flow: _g.Tensor, element_shape: Optional[TensorShape] = None) -> "TensorArray":
        ta = object.__new__(TensorArray)
        ta.dtype, ta._size_static, ta.handle, ta.flow = self.dtype, self._size_static, self.handle, flow
        ta._dynamic, ta._infer_shape = self._dynamic, self._infer_shape
        ta.element_shape = self.element_shape if element_shape is None else element_shape
        return ta

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic

    def with_flow(self, flow: Any) -> "TensorArray":
        """This array as seen after `flow` (a flow carried through a while loop)."""
        return self._derive(_g.convert_to_tensor(flow))

    def identity(self) -> "TensorArray":
        """The same array with a new flow (tf.TensorArray.identity)."""
        return self._derive(identity(self.flow))

    def _merge_shape(self, shape: TensorShape, what: str) -> TensorShape:
        if not self.element_shape.is_compatible_with(shape):
            raise InvalidArgumentError(f"TensorArray: {what} has element shape {shape}, but the array holds "
                                       f"elements of shape {self.element_shape}")
        return self.element_shape.merge_with(shape) if self._infer_shape else self.element_shape

    def write(self, index: Any, value: Any, name: Optional[str] = None) -> "TensorArray":
        """Element `index` := value; returns the array after the write."""
        value = _g.convert_to_tensor(value, dtype=self.dtype)
        es = self._merge_shape(value.shape, "the written value")
        attrs = dict(self._attrs(), element_shape=es)
        flow = single("TensorArrayWriteV3", [self.handle, _index(index), value, self.flow], attrs,
                      name=name or "TensorArrayWrite")
        return self._derive(flow, es)

    def read(self, index: Any, name: Optional[str] = None) -> _g.Tensor:
        """Element `index` (it must have been written)."""
        return single("TensorArrayReadV3", [self.handle, _index(index), self.flow], self._attrs(),
                      name=name or "TensorArrayRead")

    def stack(self, name: Optional[str] = None, element_like: Any = None) -> _g.Tensor:
        """All elements as one tensor [size, *element_shape]; unwritten elements are zeros.

        element_like: a tensor shaped like one element, for when nothing was written and the
        element shape is not static (collflow extension).
        """
        inputs = [self.handle, self.flow] + ([_g.convert_to_tensor(element_like)] if element_like is not None else [])
        return single("TensorArrayStackV3", inputs, self._attrs(), name=name or "TensorArrayStack")

    def unstack(self, value: Any, name: Optional[str] = None) -> "TensorArray":
        """Element i := value[i] for every i (value's axis 0 must have `size` entries)."""
        value = _g.convert_to_tensor(value, dtype=self.dtype)
        es = self.element_shape
        if value.shape.rank is not None:
            if value.shape.rank == 0:
                raise InvalidArgumentError("TensorArray.unstack: the value must have rank >= 1, got a scalar")
            if self._size_static is not None and value.shape.dims[0] not in (None, self._size_static):
                raise InvalidArgumentError(f"TensorArray.unstack: value of shape {value.shape} for an array of "
                                           f"{self._size_static} elements")
            es = self._merge_shape(TensorShape(value.shape.dims[1:]), "the unstacked value")
        attrs = dict(self._attrs(), element_shape=es)
        flow = single("TensorArrayUnstackV3", [self.handle, value, self.flow], attrs, name=name or "TensorArrayUnstack")
        return self._derive(flow, es)

    def split(self, value: Any, lengths: Any = None, name: Optional[str] = None) -> "TensorArray":
        """Splits value's axis 0 into `size` elements of equal length (tf.TensorArray.split).

        lengths: the rows of each element; collflow's elements share one shape, so they
        must all be equal (None: rows / size each).
        """
        value = _g.convert_to_tensor(value, dtype=self.dtype)
        if lengths is not None:
            lv = _static_lengths(lengths)
            if lv is None or len(set(lv)) > 1:
                raise UnimplementedError(f"TensorArray.split: only equal, constant lengths are supported, got "
                                         f"{lengths!r}")
            if self._size_static is not None and len(lv) != self._size_static:
                raise InvalidArgumentError(f"TensorArray.split: {len(lv)} lengths for an array of "
                                           f"{self._size_static} elements")
        es = self.element_shape
        if value.shape.rank is not None:
            k = None
            d0 = value.shape.dims[0]
            if d0 is not None and self._size_static:
                k = d0 // self._size_static
            es = self._merge_shape(TensorShape([k] + list(value.shape.dims[1:])), "the split value")
        attrs = dict(self._attrs(), element_shape=es)
        flow = single("TensorArraySplitV3", [self.handle, value, self.flow], attrs, name=name or "TensorArraySplit")
        return self._derive(flow, es)

    def gather(self, indices: Any, name: Optional[str] = None) -> _g.Tensor:
        """The elements at `indices` (a 1-D int tensor) stacked along a new axis 0."""
        return single("TensorArrayGatherV3", [self.handle, _indices(indices), self.flow], self._attrs(),
                      name=name or "TensorArrayGather")

    def scatter(self, indices: Any, value: Any, name: Optional[str] = None) -> "TensorArray":
        """Element indices[k] := value[k] for each k; returns the array after the writes."""
        value = _g.convert_to_tensor(value, dtype=self.dtype)
        es = self.element_shape
        if value.shape.rank is not None:
            if value.shape.rank == 0:
                raise InvalidArgumentError("TensorArray.scatter: the value must have rank >= 1, got a scalar")
            es = self._merge_shape(TensorShape(value.shape.dims[1:]), "the scattered value")
        attrs = dict(self._attrs(), element_shape=es)
        flow = single("TensorArrayScatterV3", [self.handle, _indices(indices), value, self.flow], attrs,
                      name=name or "TensorArrayScatter")
        return self._derive(flow, es)

    def concat(self, name: Optional[str] = None) -> _g.Tensor:
        """The elements joined along their axis 0 (collflow's elements share one shape, so
        this is the stack with its first two axes merged)."""
        s = self.stack(name=name or "TensorArrayConcat")
        if s.shape.rank is not None and s.shape.rank < 2:
            raise InvalidArgumentError(f"TensorArray.concat: elements must have rank >= 1, got shape "
                                       f"{TensorShape(s.shape.dims[1:])}")
        rest = s.shape.dims[2:] if s.shape.rank is not None else None
        if rest is not None and None not in rest:
            return _a.reshape(s, [-1] + list(rest))
        return _a.reshape(s, _a.concat([[-1], _a.shape(s)[2:]], 0))

    def size(self, name: Optional[str] = None) -> _g.Tensor:
        """The number of elements (an int32 scalar)."""
        return single("TensorArraySizeV3", [self.handle, self.flow], self._attrs(), name=name or "TensorArraySize")

    def close(self, name: Optional[str] = None) -> _g.Operation:
        """Nothing to release early: the storage goes with the run (tf.TensorArray.close)."""
        return no_op(name=name or "TensorArrayClose")

    def __repr__(self) -> str:
        return f"<cf.TensorArray {self.handle.op.name!r} dtype={self.dtype.name} element_shape={self.element_shape}>"


def _index(i: Any) -> _g.Tensor:
    """An index as an int32 tensor (Python ints become constants; tensors pass as they are)."""
    return i if isinstance(i, _g.Tensor) else _g.convert_to_tensor(i, dtype=_dt.int32)


def _indices(i: Any) -> _g.Tensor:
    """Indices as a 1-D int32 tensor (lists become constants; tensors pass as they are)."""
    return i if isinstance(i, _g.Tensor) else _g.convert_to_tensor(np.asarray(i, np.int32).reshape(-1))


def _static_int(t: _g.Tensor) -> Optional[int]:
    if t.op.type == "Const":
        return int(np.asarray(t.op.attrs["value"]))
    return None


def _static_lengths(lengths: Any) -> Optional[list]:
    if isinstance(lengths, _g.Tensor):
        if lengths.op.type != "Const":
            return None
        lengths = lengths.op.attrs["value"]
    return [int(x) for x in np.asarray(lengths).reshape(-1)]
