"""Recurrent networks on cf.while_loop: TensorArray, RNN cells, dynamic_rnn, a char-level LM.

`dynamic_rnn` runs a cell over the time axis inside one while loop (the TensorFlow paper's
section 3.4), not unrolled in Python: one graph serves every sequence length, and the trip
count is decided at run time (the time dimension of the batch, or the longest entry of
`sequence_length`).  Gradients come from cf.gradients, which builds the backward loop.

Per-step inputs and outputs go through `TensorArray`s, TensorFlow's way: a run-time list
with a preallocated [size, ...] buffer, read and written by index.  Each write returns a
scalar float *flow* tensor that orders later uses after it; the flow is an ordinary loop
variable, so the gradient machinery carries it like any float tensor.  The gradient of a
write is a read of a *gradient* TensorArray and vice versa, so the backward loop moves one
step's slice per iteration: O(T) work in all.  (Slicing x[:, t] would work too, but its
gradient densifies to the whole [T, ...] input in every iteration: O(T^2).)

Cells follow TensorFlow 1.x (`tf.nn.rnn_cell`): `cell(inputs, state) -> (output, state)`,
variables created once on the first call, `zero_state`, `state_size`, `output_size`.
LSTMCell keeps TF's layout (one kernel [depth + units, 4 units], gates i, j, f, o) and adds
`forget_bias` to the forget gate.  A cell may also offer `input_projection()`: dynamic_rnn
then computes x_t . W_x for all steps in one matmul before the loop and runs only h . W_h
inside it (what cuDNN does too).
"""
from __future__ import annotations

import re
import types
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, List, NamedTuple, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph import nest
from ..graph.control_flow import while_loop
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import nn_ops as _nn
from ..graph.ops.constant_op import constant, placeholder
from ..graph.ops.op_util import make_op, single
from ..graph.registry import not_differentiable, register_gradient, register_op
from ..graph.shape import TensorShape, as_shape
from ..graph.variables import Variable
from ..kernels.registry import KernelContext, register_kernel

__all__ = [
    "TensorArray", "RNNCell", "BasicRNNCell", "LSTMCell", "LSTMStateTuple", "rnn_cell", "dynamic_rnn",
    "CharLM", "build_char_lm",
]

# =====================================================================================
# TensorArray: ops, kernels, gradients
# =====================================================================================

_TA_OPS = ("TensorArrayV3", "TensorArrayWriteV3", "TensorArrayReadV3", "TensorArrayStackV3",
           "TensorArrayUnstackV3", "TensorArraySplitV3", "TensorArrayGradV3")


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


def _grad_spec(op: _g.Operation) -> list:
    _check_handle(op, 1)
    return [(_dt.resource, TensorShape(())), (_dt.float32, TensorShape(()))]


# TensorArrayV3(size) -> (handle, flow): a run-time array of `size` elements
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
# (handle, flow) -> (gradient handle, flow): the gradient array of `handle` for one cf.gradients call
register_op("TensorArrayGradV3", _grad_spec, stateful=True)
not_differentiable("TensorArrayV3", "TensorArrayGradV3")


class TensorArrayState:
    """Run-time storage of one TensorArray: a [size, *element] buffer allocated on first write.

    A forward array is write-once (a second write to an index is an error); a gradient array
    (`aggregate`) adds repeated writes and reads unwritten elements as zeros.  Stack hands
    out the buffer itself and Unstack adopts its input without copying; a later write then
    copies first (`shared`), so no array anyone else holds is ever modified.
    """

    __slots__ = ("name", "size", "dtype", "xp", "buf", "written", "elem_shape", "aggregate", "forward",
                 "grads", "shared")

    def __init__(self, name: str, size: int, dtype: Any, xp: Any, elem_shape: Optional[tuple] = None,
                 aggregate: bool = False, forward: Optional["TensorArrayState"] = None):
        self.name = name
        self.size = size
        self.dtype = dtype
        self.xp = xp
        self.buf: Any = None
        self.written = [False] * size
        self.elem_shape = elem_shape
        self.aggregate = aggregate
        self.forward = forward
        self.grads: dict = {}
        self.shared = False

    def element_shape(self) -> Optional[tuple]:
        if self.elem_shape is None and self.forward is not None:
            return self.forward.element_shape()
        return self.elem_shape

    def _index(self, i: Any, what: str) -> int:
        k = int(i)
        if not 0 <= k < self.size:
            raise InvalidArgumentError(f"TensorArray {self.name}: cannot {what} index {k}; the array has "
                                       f"{self.size} elements")
        return k

    def _writable(self, shape: tuple) -> None:
        es = self.element_shape()
        if es is not None and tuple(shape) != tuple(es):
            raise InvalidArgumentError(f"TensorArray {self.name}: elements have shape {tuple(es)}, "
                                       f"got one of shape {tuple(shape)}")
        if self.buf is None:
            self.elem_shape = tuple(shape)
            self.buf = self.xp.zeros((self.size,) + self.elem_shape, dtype=self.dtype)
        elif self.shared:
            self.buf = self.buf.copy()
            self.shared = False

    def write(self, i: Any, v: Any) -> None:
        k = self._index(i, "write")
        self._writable(v.shape)
        if self.written[k]:
            if not self.aggregate:
                raise InvalidArgumentError(f"TensorArray {self.name}: element {k} was already written "
                                           "(a TensorArray is write-once)")
            self.buf[k] += v
        else:
            self.buf[k] = v
            self.written[k] = True

    def read(self, i: Any) -> Any:
        k = self._index(i, "read")
        if not self.written[k]:
            es = self.element_shape()
            if not self.aggregate or es is None:
                raise InvalidArgumentError(f"TensorArray {self.name}: cannot read element {k}, it has not "
                                           "been written")
            return self.xp.zeros(es, dtype=self.dtype)
        # a gradient array may still add into this element: hand out a copy
        return self.buf[k].copy() if self.aggregate else self.buf[k]

    def stack(self, like: Any = None) -> Any:
        if self.buf is None:
            es = self.element_shape()
            if es is None:
                if like is None:
                    raise InvalidArgumentError(f"TensorArray {self.name}: cannot stack an array with no "
                                               "element written and an unknown element shape")
                es = tuple(like.shape)
            return self.xp.zeros((self.size,) + tuple(es), dtype=self.dtype)
        self.shared = True
        return self.buf

    def unstack(self, value: Any) -> None:
        if value.shape[0] != self.size:
            raise InvalidArgumentError(f"TensorArray {self.name}: cannot unstack a value of shape "
                                       f"{tuple(value.shape)} into {self.size} elements")
        if self.buf is None:
            es = self.element_shape()
            if es is not None and tuple(value.shape[1:]) != tuple(es):
                raise InvalidArgumentError(f"TensorArray {self.name}: elements have shape {tuple(es)}, "
                                           f"cannot unstack a value of shape {tuple(value.shape)}")
            self.buf, self.shared = value, True
            self.elem_shape = tuple(value.shape[1:])
            self.written = [True] * self.size
            return
        for k in range(self.size):
            self.write(k, value[k])


def _ta_np_dtype(op: Any) -> Any:
    return op.attrs["dtype"].np


@register_kernel("TensorArrayV3")
def _k_create(op: Any, ctx: KernelContext) -> Any:
    xp, dt, name = ctx.xp, _ta_np_dtype(op), op.name
    es = _elem(op)
    static = tuple(es.dims) if es.is_fully_defined() else None

    def create(size: Any) -> tuple:
        n = int(size)
        if n < 0:
            raise InvalidArgumentError(f"TensorArray {name}: size must be >= 0, got {n}", op)
        return TensorArrayState(name, n, dt, xp, static), xp.zeros((), dtype=xp.float32)
    return create


@register_kernel("TensorArrayWriteV3")
def _k_write(op: Any, ctx: KernelContext) -> Any:
    def write(ta: TensorArrayState, i: Any, v: Any, flow: Any) -> Any:
        ta.write(i, v)
        return flow
    return write


register_kernel("TensorArrayReadV3")(lambda op, ctx: lambda ta, i, flow: ta.read(i))
register_kernel("TensorArrayStackV3")(lambda op, ctx: lambda ta, flow, like=None: ta.stack(like))


@register_kernel("TensorArrayUnstackV3")
def _k_unstack(op: Any, ctx: KernelContext) -> Any:
    def unstack(ta: TensorArrayState, value: Any, flow: Any) -> Any:
        ta.unstack(value)
        return flow
    return unstack


@register_kernel("TensorArraySplitV3")
def _k_split(op: Any, ctx: KernelContext) -> Any:
    def split(ta: TensorArrayState, value: Any, flow: Any) -> Any:
        n = ta.size
        rows = value.shape[0]
        if (n == 0 and rows) or (n and rows % n):
            raise InvalidArgumentError(f"TensorArray {ta.name}: cannot split {rows} rows evenly into {n} "
                                       "elements", op)
        ta.unstack(value.reshape((n, rows // n if n else 0) + tuple(value.shape[1:])))
        return flow
    return split


@register_kernel("TensorArrayGradV3")
def _k_grad(op: Any, ctx: KernelContext) -> Any:
    source = op.attrs["source"]

    def grad(ta: TensorArrayState, flow: Any) -> tuple:
        st = ta.grads.get(source)
        if st is None:
            st = TensorArrayState(f"{ta.name}@{source}", ta.size, ta.dtype, ta.xp, None, aggregate=True, forward=ta)
            ta.grads[source] = st
        return st, flow
    return grad


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


class TensorArray:
    """A run-time list of `size` tensors of one dtype, written and read by index (tf.TensorArray).

    Made for while loops: `write` returns a new TensorArray whose `flow` follows the write,
    so pass `ta.flow` through the loop and rebuild with `ta.with_flow(flow)` inside the body.
    Elements are write-once.  `stack()` gives all elements as one [size, ...] tensor, with
    zeros for elements never written.  Gradients flow through reads, writes, stack, unstack
    and split.
    """

    def __init__(self, dtype: Any, size: Any, element_shape: Any = None, name: str = "TensorArray"):
        self.dtype = _dt.as_dtype(dtype)
        size_t = _index(size)
        self._size_static = _static_int(size_t)
        self.element_shape = as_shape(element_shape)
        op = make_op("TensorArrayV3", [size_t], self._attrs(), name=name)
        self.handle, self.flow = op.outputs[0], op.outputs[1]

    def _attrs(self) -> dict:
        return {"dtype": self.dtype, "element_shape": self.element_shape, "size": self._size_static}

    def _derive(self, flow: _g.Tensor, element_shape: Optional[TensorShape] = None) -> "TensorArray":
        ta = object.__new__(TensorArray)
        ta.dtype, ta._size_static, ta.handle, ta.flow = self.dtype, self._size_static, self.handle, flow
        ta.element_shape = self.element_shape if element_shape is None else element_shape
        return ta

    def with_flow(self, flow: Any) -> "TensorArray":
        """This array as seen after `flow` (a flow carried through a while loop)."""
        return self._derive(_g.convert_to_tensor(flow))

    def _merge_shape(self, shape: TensorShape, what: str) -> TensorShape:
        if not self.element_shape.is_compatible_with(shape):
            raise InvalidArgumentError(f"TensorArray: {what} has element shape {shape}, but the array holds "
                                       f"elements of shape {self.element_shape}")
        return self.element_shape.merge_with(shape)

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
            if self._size_static is not None and value.shape.dims[0] not in (None, self._size_static):
                raise InvalidArgumentError(f"TensorArray.unstack: value of shape {value.shape} for an array of "
                                           f"{self._size_static} elements")
            es = self._merge_shape(TensorShape(value.shape.dims[1:]), "the unstacked value")
        attrs = dict(self._attrs(), element_shape=es)
        flow = single("TensorArrayUnstackV3", [self.handle, value, self.flow], attrs, name=name or "TensorArrayUnstack")
        return self._derive(flow, es)

    def split(self, value: Any, name: Optional[str] = None) -> "TensorArray":
        """Splits value's axis 0 evenly into `size` elements (tf.TensorArray.split with equal
        lengths): element i is value[i*k:(i+1)*k] for k = rows / size."""
        value = _g.convert_to_tensor(value, dtype=self.dtype)
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


def _index(i: Any) -> _g.Tensor:
    """An index as an int32 tensor (Python ints become constants; tensors pass as they are)."""
    return i if isinstance(i, _g.Tensor) else _g.convert_to_tensor(i, dtype=_dt.int32)


def _static_int(t: _g.Tensor) -> Optional[int]:
    if t.op.type == "Const":
        return int(np.asarray(t.op.attrs["value"]))
    return None


# =====================================================================================
# Cells
# =====================================================================================


class LSTMStateTuple(NamedTuple):
    """The state of an LSTM: cell state c and output h, each [batch, num_units]."""
    c: Any
    h: Any


def _glorot_uniform(shape: Tuple[int, ...], dtype: Any, rng: np.random.Generator) -> np.ndarray:
    fan_in, fan_out = shape[0], shape[-1]
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=shape).astype(dtype)


class RNNCell:
    """Base of the RNN cells: a step (inputs [batch, depth], state) -> (output, new state).

    Variables are created once, by `build(input_depth, dtype)` (dynamic_rnn calls it before
    its loop; the first `__call__` otherwise), outside any cond/while context.  Their initial
    values are drawn with NumPy from `seed` (default: from the variable's name), so every
    rank of a job builds the same weights.  `initializer(shape, numpy_dtype)` overrides the
    draw of the kernels (biases start at zero).
    """

    def __init__(self, num_units: int, activation: Optional[Callable] = None, name: Optional[str] = None,
                 initializer: Optional[Callable] = None, seed: Optional[int] = None):
        if int(num_units) <= 0:
            raise InvalidArgumentError(f"{type(self).__name__}: num_units must be positive, got {num_units}")
        self._num_units = int(num_units)
        self._activation = activation
        self._name = name or self._default_name
        self._initializer = initializer
        self._seed = seed
        self.built = False
        self.input_depth: Optional[int] = None
        self.dtype: Optional[_dt.DType] = None
        self._variables: List[Variable] = []

    _default_name = "rnn_cell"

    @property
    def name(self) -> str:
        return self._name

    @property
    def state_size(self) -> Any:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    @property
    def variables(self) -> List[Variable]:
        return list(self._variables)

    trainable_variables = variables

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        """Zeros of [batch_size, n] for each part of the state (batch_size an int or a scalar tensor)."""
        dt = _dt.as_dtype(dtype)
        flat = [self._zeros(batch_size, n, dt) for n in nest.flatten(self.state_size)]
        return nest.pack_sequence_as(self.state_size, flat)

    @staticmethod
    def _zeros(batch_size: Any, n: int, dt: _dt.DType) -> _g.Tensor:
        if isinstance(batch_size, (int, np.integer)):
            return _a.zeros((int(batch_size), n), dtype=dt)
        b = _g.convert_to_tensor(batch_size)
        b = b if b.dtype == _dt.int32 else _m.cast(b, _dt.int32)
        return _a.zeros(_a.stack([b, constant(n, dtype=_dt.int32)]), dtype=dt)

    def build(self, input_depth: int, dtype: Any = _dt.float32) -> None:
        """Creates the variables for inputs of `input_depth` features (once)."""
        if self.built:
            if input_depth != self.input_depth:
                raise InvalidArgumentError(f"{self._name}: built for inputs of depth {self.input_depth}, "
                                           f"called with depth {input_depth}")
            return
        if input_depth is None:
            raise InvalidArgumentError(f"{self._name}: the inputs' last dimension (depth) must be known "
                                       "statically to build the cell's variables")
        self.input_depth, self.dtype = int(input_depth), _dt.as_dtype(dtype)
        g = _g.get_default_graph()
        prev = g._get_control_flow_context()
        g._set_control_flow_context(None)  # variables live outside any loop or branch
        try:
            with g.control_dependencies(None), g.name_scope(self._name) as scope:
                self._scope = scope
                self._build(self.input_depth)
        finally:
            g._set_control_flow_context(prev)
        self.built = True

    def _variable(self, name: str, shape: Tuple[int, ...], kernel: bool) -> Variable:
        np_dt = self.dtype.np  # type: ignore[union-attr]
        if not kernel:
            init: Any = np.zeros(shape, np_dt)
        elif self._initializer is not None:
            init = self._initializer(shape, np_dt)
        else:
            full = f"{self._scope}{name}"
            seed = self._seed if self._seed is not None else zlib.crc32(full.encode())
            init = _glorot_uniform(shape, np_dt, np.random.default_rng([int(seed), zlib.crc32(name.encode())]))
        v = Variable(init, name=name, dtype=self.dtype)
        self._variables.append(v)
        return v

    def _build(self, input_depth: int) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def __call__(self, inputs: Any, state: Any) -> Tuple[Any, Any]:
        inputs = _g.convert_to_tensor(inputs)
        if not self.built:
            self.build(inputs.shape.dims[-1] if inputs.shape.rank else None, inputs.dtype)
        return self.call(inputs, state)

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:  # pragma: no cover - interface
        raise NotImplementedError

    def input_projection(self) -> Optional[Tuple[Callable, Callable]]:
        """(project, step) with step(project(x), state) == cell(x, state), or None.

        project maps [n, depth] inputs to [n, k] (one matmul for all time steps); step runs
        inside the loop.  Build the cell first; the tensors it needs are made here, once.
        """
        return None


class BasicRNNCell(RNNCell):
    """h' = activation([x, h] . kernel + bias); output and state are h' (tf.nn.rnn_cell.BasicRNNCell)."""

    _default_name = "basic_rnn_cell"

    def _build(self, input_depth: int) -> None:
        self._kernel = self._variable("kernel", (input_depth + self._num_units, self._num_units), True)
        self._bias = self._variable("bias", (self._num_units,), False)

    def _act(self, x: _g.Tensor) -> _g.Tensor:
        return (self._activation or _nn.tanh)(x)

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        h = self._act(_m.matmul(_a.concat([inputs, state], 1), self._kernel) + self._bias)
        return h, h

    def input_projection(self) -> Optional[Tuple[Callable, Callable]]:
        w_x, w_h = _a.split(self._kernel, [self.input_depth, self._num_units], axis=0)
        bias = _g.convert_to_tensor(self._bias)

        def project(x: _g.Tensor) -> _g.Tensor:
            return _m.matmul(x, w_x) + bias

        def step(p: _g.Tensor, state: Any) -> Tuple[Any, Any]:
            h = self._act(p + _m.matmul(state, w_h))
            return h, h
        return project, step


class LSTMCell(RNNCell):
    """Long short-term memory cell (tf.nn.rnn_cell.LSTMCell without peepholes or projection).

    kernel [depth + num_units, 4 num_units] and bias [4 num_units] hold the gates in
    TensorFlow's order i (input), j (new input), f (forget), o (output):

        i, j, f, o = split([x, h] . kernel + bias, 4)
        c' = c * sigmoid(f + forget_bias) + sigmoid(i) * tanh(j)
        h' = sigmoid(o) * tanh(c')

    The state is LSTMStateTuple(c, h); the output is h'.
    """

    _default_name = "lstm_cell"

    def __init__(self, num_units: int, forget_bias: float = 1.0, activation: Optional[Callable] = None,
                 name: Optional[str] = None, initializer: Optional[Callable] = None, seed: Optional[int] = None):
        super().__init__(num_units, activation, name, initializer, seed)
        self._forget_bias = float(forget_bias)

    @property
    def state_size(self) -> LSTMStateTuple:
        return LSTMStateTuple(self._num_units, self._num_units)

    def _build(self, input_depth: int) -> None:
        n = self._num_units
        self._kernel = self._variable("kernel", (input_depth + n, 4 * n), True)
        self._bias = self._variable("bias", (4 * n,), False)

    def _act(self, x: _g.Tensor) -> _g.Tensor:
        return (self._activation or _nn.tanh)(x)

    def _gates(self, gates: _g.Tensor, c: _g.Tensor, forget_bias_added: bool) -> Tuple[Any, Any]:
        i, j, f, o = _a.split(gates, 4, axis=1)
        if not forget_bias_added and self._forget_bias != 0.0:
            f = f + self._forget_bias
        new_c = c * _nn.sigmoid(f) + _nn.sigmoid(i) * self._act(j)
        new_h = _nn.sigmoid(o) * self._act(new_c)
        return new_h, LSTMStateTuple(new_c, new_h)

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        c, h = state
        gates = _m.matmul(_a.concat([inputs, h], 1), self._kernel) + self._bias
        return self._gates(gates, c, False)

    def input_projection(self) -> Optional[Tuple[Callable, Callable]]:
        n = self._num_units
        w_x, w_h = _a.split(self._kernel, [self.input_depth, n], axis=0)
        bias = _g.convert_to_tensor(self._bias)
        if self._forget_bias != 0.0:
            # fold forget_bias into the projected bias: one add per run instead of one per step
            fb = np.zeros((4 * n,), self.dtype.np)  # type: ignore[union-attr]
            fb[2 * n:3 * n] = self._forget_bias
            bias = bias + constant(fb)

        def project(x: _g.Tensor) -> _g.Tensor:
            return _m.matmul(x, w_x) + bias

        def step(p: _g.Tensor, state: Any) -> Tuple[Any, Any]:
            c, h = state
            return self._gates(p + _m.matmul(h, w_h), c, True)
        return project, step


rnn_cell = types.SimpleNamespace(RNNCell=RNNCell, BasicRNNCell=BasicRNNCell, LSTMCell=LSTMCell,
                                 LSTMStateTuple=LSTMStateTuple)
rnn_cell.__doc__ = "tf.nn.rnn_cell: the cell classes under their TensorFlow 1.x path."


# =====================================================================================
# dynamic_rnn
# =====================================================================================


def dynamic_rnn(cell: Any, inputs: Any, sequence_length: Any = None, initial_state: Any = None,
                dtype: Any = None, parallel_iterations: Optional[int] = None, swap_memory: bool = False,
                time_major: bool = False, scope: Optional[str] = None) -> Tuple[_g.Tensor, Any]:
    """Runs `cell` over the time axis of `inputs` in one cf.while_loop (tf.nn.dynamic_rnn).

    inputs: [batch, time, depth] ([time, batch, depth] if time_major); depth must be static.
    sequence_length: optional int vector [batch]: past its length a sequence's state stays
      frozen and its outputs are zeros.  The loop then runs max(sequence_length) steps.
    initial_state: a state structure of the cell (default: its zero state, of `dtype` or
      the inputs' dtype).
    Returns (outputs [batch, time, output_size] (time-major if time_major), final state).
    parallel_iterations and swap_memory are accepted for TensorFlow compatibility.
    """
    x = _g.convert_to_tensor(inputs)
    if x.shape.rank is not None and x.shape.rank != 3:
        raise InvalidArgumentError(f"dynamic_rnn: inputs must be [batch, time, depth] (rank 3), got shape {x.shape}")
    depth = x.shape.dims[2] if x.shape.rank is not None else None
    if depth is None:
        raise InvalidArgumentError(f"dynamic_rnn: the depth (last dimension) of the inputs must be known "
                                   f"statically, got shape {x.shape}")
    dt = x.dtype if dtype is None else _dt.as_dtype(dtype)
    if not dt.is_floating or x.dtype != dt:
        raise InvalidArgumentError(f"dynamic_rnn: inputs of dtype {x.dtype.name} with dtype={dt.name}; both "
                                   "must be one floating-point dtype")
    g = x.graph
    with g.as_default(), g.name_scope(scope or "rnn"):
        x_tm = x if time_major else _a.transpose(x, (1, 0, 2))
        t_static, b_static = x_tm.shape.dims[0], x_tm.shape.dims[1]
        dims = _a.shape(x_tm)
        n_time = constant(t_static, dtype=_dt.int32) if t_static is not None else dims[0]
        batch: Any = b_static if b_static is not None else dims[1]
        if hasattr(cell, "build"):
            cell.build(int(depth), dt)
        if initial_state is None:
            state0 = cell.zero_state(batch, dt)
        else:
            state0 = nest.pack_sequence_as(initial_state, [_g.convert_to_tensor(s, dtype=dt)
                                                           for s in nest.flatten(initial_state)])
        seq = None
        if sequence_length is not None:
            seq = _g.convert_to_tensor(sequence_length)
            if not seq.dtype.is_integer or seq.shape.rank not in (None, 1):
                raise InvalidArgumentError(f"dynamic_rnn: sequence_length must be an int vector [batch], got "
                                           f"{seq.dtype.name} {seq.shape}")
            if seq.dtype != _dt.int32:
                seq = _m.cast(seq, _dt.int32)
            # the loop stops at the longest sequence; later outputs stay zeros
            n_steps = _m.minimum(_m.reduce_max(_m.maximum(seq, constant(0, dtype=_dt.int32))), n_time,
                                 name="max_time")
        else:
            n_steps = n_time

        proj = cell.input_projection() if hasattr(cell, "input_projection") else None
        if proj is not None:
            project, step = proj
            p = project(_a.reshape(x_tm, (-1, int(depth))))
            in_ta = TensorArray(dt, n_time, element_shape=[b_static, p.shape.dims[-1]], name="inputs").split(p)
        else:
            step = cell
            in_ta = TensorArray(dt, n_time, element_shape=[b_static, depth], name="inputs").unstack(x_tm)
        out_size = int(cell.output_size)
        zero_out = RNNCell._zeros(batch, out_size, dt)
        out_ta = TensorArray(dt, n_time, element_shape=[b_static, out_size], name="outputs")

        one = constant(1, dtype=_dt.int32)  # made outside: enters the loop once, not every iteration

        def cond(t: Any, state: Any, flow: Any) -> Any:
            return _m.less(t, n_steps)

        def body(t: Any, state: Any, flow: Any) -> Any:
            out, new_state = step(in_ta.read(t), state)
            if seq is not None:
                keep = _a.expand_dims(_m.less(t, seq), 1)  # [batch, 1]: still inside the sequence
                new_state = nest.pack_sequence_as(new_state, [
                    _a.where(keep, a, b) for a, b in zip(nest.flatten(new_state), nest.flatten(state))])
                out = _a.where(keep, out, zero_out)
            flow = out_ta.with_flow(flow).write(t, out).flow
            return t + one, new_state, flow

        _, final_state, flow = while_loop(cond, body, (constant(0, dtype=_dt.int32), state0, out_ta.flow),
                                          name="while")
        outputs = out_ta.with_flow(flow).stack(element_like=zero_out)
        if not time_major:
            outputs = _a.transpose(outputs, (1, 0, 2))
        return outputs, final_state


# =====================================================================================
# A character-level language model
# =====================================================================================


@dataclass
class CharLM:
    """Handles of a built character-level language model (fields as collflow.models.Model).

    x: placeholder [None, seq_len] int32 character ids; y: the same shape, the next
    characters; logits [None, seq_len, vocab] (or [None, vocab] rows when seq_len is None);
    loss: mean cross-entropy in nats per character; perplexity = exp(loss); accuracy:
    fraction of next characters predicted exactly.
    """

    name: str
    x: _g.Tensor
    y: _g.Tensor
    logits: _g.Tensor
    loss: _g.Tensor
    accuracy: _g.Tensor
    perplexity: _g.Tensor
    train_op: Optional[_g.Operation] = None
    global_step: Any = None
    variables: List[Variable] = field(default_factory=list)
    input_shape: Tuple[Optional[int], ...] = ()
    num_classes: int = 0
    final_state: Any = None

    @property
    def num_params(self) -> int:
        """Number of trainable scalars."""
        return int(sum(int(np.prod(v.shape.as_list(), dtype=np.int64)) for v in self.variables))


def build_char_lm(vocab_size: int, embed_dim: int = 64, hidden: Any = 128, seq_len: Optional[int] = None,
                  num_layers: int = 1, optimizer: Any = None, cell: str = "lstm", seed: int = 0,
                  dtype: Any = _dt.float32, global_step: bool = True, name: str = "char_lm") -> CharLM:
    """Embedding -> stacked dynamic_rnn(LSTMCell) layers -> softmax over the vocabulary.

    hidden: the units of every layer (with num_layers layers), or a sequence of layer sizes
    (e.g. (256, 128); num_layers is then ignored).  Adds the ops to the default graph.
    With an optimizer (e.g. cf.train.AdamOptimizer), train_op runs one step on the mean
    next-character cross-entropy (and increments the global step when `global_step`).
    cell: 'lstm' or 'rnn' (BasicRNNCell).  Weights are drawn with NumPy from `seed`,
    identical on every rank.
    """
    if cell not in ("lstm", "rnn"):
        raise InvalidArgumentError(f"build_char_lm: cell must be 'lstm' or 'rnn', got {cell!r}")
    sizes = [int(hidden)] * int(num_layers) if isinstance(hidden, (int, np.integer)) else [int(h) for h in hidden]
    if not sizes or min(sizes) <= 0:
        raise InvalidArgumentError(f"build_char_lm: need at least one layer of positive size, got hidden={hidden!r}"
                                   f", num_layers={num_layers}")
    vocab_size, embed_dim = int(vocab_size), int(embed_dim)
    dt = _dt.as_dtype(dtype)
    rng = np.random.default_rng(seed)
    variables: List[Variable] = []
    g = _g.get_default_graph()
    with g.name_scope(name):
        x = placeholder(_dt.int32, (None, seq_len), name="x")
        y = placeholder(_dt.int32, (None, seq_len), name="y")
        emb = Variable(rng.uniform(-0.1, 0.1, (vocab_size, embed_dim)).astype(dt.np), name="embedding")
        variables.append(emb)
        h = _nn.embedding_lookup(emb, x)
        final_state = None
        for layer, units in enumerate(sizes):
            cls = LSTMCell if cell == "lstm" else BasicRNNCell
            c = cls(units, name=f"{cell}{layer}", seed=seed * 1000 + layer + 1)
            h, final_state = dynamic_rnn(c, h, dtype=dt, scope=f"layer{layer}")
            variables += c.variables
        w = Variable(_glorot_uniform((sizes[-1], vocab_size), dt.np, rng), name="softmax/kernel")
        b = Variable(np.zeros((vocab_size,), dt.np), name="softmax/bias")
        variables += [w, b]
        logits2 = _m.matmul(_a.reshape(h, (-1, sizes[-1])), w) + b
        labels = _a.reshape(y, (-1,))
        with g.name_scope("loss"):
            xent = _nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits2)
            loss = _m.reduce_mean(xent, name="loss")
            perplexity = _m.exp(loss, name="perplexity")
        with g.name_scope("accuracy"):
            pred = _m.argmax(logits2, axis=1, output_type=_dt.int32)
            accuracy = _m.reduce_mean(_m.cast(_m.equal(pred, labels), dt), name="accuracy")
        logits = _a.reshape(logits2, (-1, seq_len, vocab_size)) if seq_len is not None else logits2
    train_op, step = None, None
    if optimizer is not None:
        from .. import train
        if global_step:
            step = train.get_or_create_global_step()
        train_op = optimizer.minimize(loss, global_step=step, var_list=variables)
    return CharLM(name, x, y, logits, loss, accuracy, perplexity, train_op, step, variables,
                  (seq_len,), vocab_size, final_state)
