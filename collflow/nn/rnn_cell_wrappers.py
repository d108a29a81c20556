"""Cells built from other cells (TensorFlow 1.x's MultiRNNCell, DropoutWrapper,
ResidualWrapper and DeviceWrapper).

MultiRNNCell stacks layers (their variables in sub-scopes cell_0, cell_1, ...); the
wrappers add dropout, a residual connection or a device around one cell and no variable
scope of their own, so the wrapped cell's variables keep their names (rnn/lstm_cell/kernel).
"""
from __future__ import annotations

import zlib
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph import nest
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import nn_ops as _nn
from ..graph.ops.constant_op import constant
from ..graph.ops.random_ops import random_uniform
from ..graph.shape import as_shape
from ..graph.variable_scope import variable_scope
from .rnn_cells import LSTMStateTuple, RNNCell, _is_structure, fused_form, prebuild_any, step_input_of

__all__ = ["MultiRNNCell", "DropoutWrapper", "ResidualWrapper", "DeviceWrapper"]


class MultiRNNCell(RNNCell):
    """Cells stacked in layers (tf.nn.rnn_cell.MultiRNNCell): layer i's output is layer i+1's input.

    Layer i's variables live in the sub-scope cell_i (rnn/multi_rnn_cell/cell_0/lstm_cell/...).
    The state is the tuple of the layers' states (their concatenation with
    state_is_tuple=False, which needs every layer's state to be one tensor); the output is
    the last layer's.
    """

    def __init__(self, cells: Any, state_is_tuple: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        if not isinstance(cells, (list, tuple)):
            raise TypeError(f"MultiRNNCell: cells must be a list or tuple, but saw: {cells!r}")
        if not cells:
            raise ValueError("MultiRNNCell: must specify at least one cell")
        self._cells = list(cells)
        self._state_is_tuple = bool(state_is_tuple)
        if not self._state_is_tuple and any(isinstance(c.state_size, (tuple, list)) for c in self._cells):
            raise ValueError("MultiRNNCell: some cells have tuple states (e.g. LSTMCell's LSTMStateTuple) but "
                             "state_is_tuple=False; pass state_is_tuple=True")

    @property
    def state_size(self) -> Any:
        if self._state_is_tuple:
            return tuple(c.state_size for c in self._cells)
        return sum(int(c.state_size) for c in self._cells)

    @property
    def output_size(self) -> Any:
        return self._cells[-1].output_size

    def _var_lists(self) -> Tuple[list, list]:
        t: list = []
        n: list = []
        for c in self._cells:
            for v in getattr(c, "trainable_variables", []):
                if not any(v is x for x in t):
                    t.append(v)
            for v in getattr(c, "non_trainable_variables", []):
                if not any(v is x for x in n):
                    n.append(v)
        return t, n

    _structure_build = True  # its first cell may take a structure of inputs, as in TF

    def _build(self, depth: Any) -> None:
        d = depth
        for i, cell in enumerate(self._cells):
            with variable_scope(f"cell_{i}"):
                prebuild_any(cell, d, self.dtype)
            d = step_input_of(cell.output_size)

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        if self._state_is_tuple:
            return tuple(c.zero_state(batch_size, dtype) for c in self._cells)
        return super().zero_state(batch_size, dtype)

    def fused_sequence(self) -> Optional[Callable]:
        """run(x [time, batch, depth], state, sequence_length=None) -> (outputs, final state)
        running the layers one after another, each over the whole sequence as its own fused
        op (as cuDNN runs stacked layers): the same numbers as the step-by-step stack, since
        layer i's step t needs only layer i-1's step t and its own step t-1.  None unless
        every layer has a fused form and the state is a tuple."""
        if not self._state_is_tuple:
            return None
        runs = []
        for cell in self._cells:
            run_layer = fused_form(cell)
            if run_layer is None:
                return None
            runs.append(run_layer)

        def run(x: _g.Tensor, state: Any, sequence_length: Any = None) -> Tuple[Any, Any]:
            if not isinstance(state, (tuple, list)) or len(state) != len(runs):
                raise InvalidArgumentError(f"MultiRNNCell: expected the state to be a tuple of length "
                                           f"{len(runs)}, got {state!r}")
            finals = []
            for i, (run_layer, s) in enumerate(zip(runs, state)):
                with x.graph.name_scope(f"cell_{i}"):
                    x, final = run_layer(x, s, sequence_length)
                finals.append(final)
            return x, tuple(finals)
        return run

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        if self._state_is_tuple:
            if not isinstance(state, (tuple, list)) or len(state) != len(self._cells):
                raise InvalidArgumentError(f"MultiRNNCell: expected the state to be a tuple of length "
                                           f"{len(self._cells)}, got {state!r}")
            states = list(state)
        else:
            states = _a.split(state, [int(c.state_size) for c in self._cells], axis=1)
        x, new_states = inputs, []
        for i, cell in enumerate(self._cells):
            with variable_scope(f"cell_{i}"):
                x, s = cell(x, states[i])
            new_states.append(s)
        return x, (tuple(new_states) if self._state_is_tuple else _a.concat(new_states, 1))


def _default_state_filter(substate: Any) -> Any:
    # TensorFlow's default: never drop an LSTM's memory c, only its output h
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


def _filtered(visitor: Callable[[Any], Any], state: Any) -> Any:
    """The state's structure with True at the leaves to drop out (TensorFlow's traversal:
    the visitor answers a bool for a whole substructure or a structure of bools for its parts)."""
    flags = visitor(state)
    is_seq = isinstance(state, (tuple, list))
    if not is_seq:
        if not isinstance(flags, bool):
            raise TypeError(f"dropout_state_filter_visitor returned {flags!r} for a tensor; expected a bool")
        return flags
    if isinstance(flags, bool):
        if not flags:
            return nest.pack_sequence_as(state, [False] * len(nest.flatten(state)))
        parts = [_filtered(visitor, s) for s in state]
    else:
        if not isinstance(flags, (tuple, list)) or len(flags) != len(state):
            raise TypeError(f"dropout_state_filter_visitor returned {flags!r} for {state!r}; expected a bool or "
                            "one bool per part")
        parts = []
        for f, s in zip(flags, state):
            if not isinstance(f, bool):
                raise TypeError(f"dropout_state_filter_visitor returned {flags!r}: its parts must be bools")
            parts.append(_filtered(visitor, s) if f else nest.pack_sequence_as(s, [False] * len(nest.flatten(s))))
    return type(state)(*parts) if hasattr(state, "_fields") else type(state)(parts)


class _Wrapper(RNNCell):
    """One wrapped cell, no variable scope of its own: sizes, zero state and variables are
    the wrapped cell's."""

    _scoped = False

    def __init__(self, cell: Any, what: str, **kwargs: Any):
        super().__init__(**kwargs)
        if not (callable(cell) and hasattr(cell, "state_size") and hasattr(cell, "output_size")):
            raise TypeError(f"{what}: the parameter cell is not an RNNCell: {cell!r}")
        self._cell = cell

    @property
    def wrapped_cell(self) -> Any:
        return self._cell

    @property
    def state_size(self) -> Any:
        return self._cell.state_size

    @property
    def output_size(self) -> Any:
        return self._cell.output_size

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        return self._cell.zero_state(batch_size, dtype)

    def _var_lists(self) -> Tuple[list, list]:
        return (list(getattr(self._cell, "trainable_variables", [])),
                list(getattr(self._cell, "non_trainable_variables", [])))

    _structure_build = True  # the wrapped cell may take a structure of inputs, as in TF

    def _build(self, depth: Any) -> None:
        prebuild_any(self._cell, depth, self.dtype)


class DropoutWrapper(_Wrapper):
    """Dropout on a cell's inputs, outputs and new state (tf.nn.rnn_cell.DropoutWrapper).

    input_keep_prob / output_keep_prob / state_keep_prob: Python floats in [0, 1] or scalar
    tensors; a float 1.0 adds no op.  The state filter (default: every part but an LSTM's
    memory c) says which parts of the state drop out.  A fresh mask is drawn at every
    step, unless variational_recurrent=True: then one mask of shape [1, size] per
    input/state part/output is drawn per run and used at every step (Gal & Ghahramani);
    that needs dtype, and input_size when input_keep_prob < 1.  The wrapper adds no
    variable scope: the wrapped cell's variables keep their names.
    """

    def __init__(self, cell: Any, input_keep_prob: Any = 1.0, output_keep_prob: Any = 1.0, state_keep_prob: Any = 1.0,
                 variational_recurrent: bool = False, input_size: Any = None, dtype: Any = None,
                 seed: Optional[int] = None, dropout_state_filter_visitor: Optional[Callable] = None, **kwargs: Any):
        super().__init__(cell, "DropoutWrapper", dtype=dtype, **kwargs)
        for what, p in (("input_keep_prob", input_keep_prob), ("output_keep_prob", output_keep_prob),
                        ("state_keep_prob", state_keep_prob)):
            if not isinstance(p, _g.Tensor) and not 0.0 <= float(p) <= 1.0:
                raise InvalidArgumentError(f"DropoutWrapper: {what} must be between 0 and 1, got {p}")
        self._input_keep_prob = input_keep_prob
        self._output_keep_prob = output_keep_prob
        self._state_keep_prob = state_keep_prob
        self._variational = bool(variational_recurrent)
        self._input_size = input_size
        self._dropout_seed = seed
        self._filter = dropout_state_filter_visitor or _default_state_filter
        self._noise: dict = {}
        if self._variational:
            if dtype is None:
                raise InvalidArgumentError("DropoutWrapper: variational_recurrent=True needs dtype")
            if input_size is None and _should_drop(input_keep_prob):
                raise InvalidArgumentError("DropoutWrapper: variational_recurrent=True with input_keep_prob < 1 "
                                           "needs input_size")

    def _build(self, depth: int) -> None:
        super()._build(depth)
        if self._variational:
            # one noise draw per run, made here (outside any loop): the same mask at every step
            dt = self.dtype
            sizes = {"input": self._input_size if self._input_size is not None else depth,
                     "state": self._cell.state_size, "output": self._cell.output_size}
            for kind, size in sizes.items():
                self._noise[kind] = [random_uniform([1] + _dims(s), dtype=dt, seed=self._seed_for(kind, i))
                                     for i, s in enumerate(nest.flatten(size))]

    def _seed_for(self, kind: str, index: int) -> Optional[int]:
        if self._dropout_seed is None:
            return None
        return zlib.crc32(f"{self._dropout_seed}/{kind}_{index}".encode()) & 0x7FFFFFFF

    def _drop(self, value: _g.Tensor, kind: str, index: int, keep_prob: Any) -> _g.Tensor:
        if not self._variational:
            return _nn.dropout(value, keep_prob=keep_prob, seed=self._seed_for(kind, index))
        kp = keep_prob if isinstance(keep_prob, _g.Tensor) else constant(float(keep_prob), dtype=value.dtype)
        kp = kp if kp.dtype == value.dtype else _m.cast(kp, value.dtype)
        keep = _m.cast(_m.greater_equal(kp + self._noise[kind][index], 1.0), value.dtype)  # floor(kp + u)
        return value / kp * keep

    def fused_sequence(self) -> Optional[Callable]:
        """The wrapped cell's whole-sequence form with the input and output dropout applied to
        the whole sequence, or None with state dropout (it acts inside the recurrence).  With
        variational_recurrent the [1, size] masks broadcast over the steps: the same numbers as
        the per-step loop.  Otherwise every element of every step draws its own mask, as in
        the loop, but from one draw for the sequence: the same distribution, other numbers."""
        if _should_drop(self._state_keep_prob):
            return None
        inner = fused_form(self._cell)
        if inner is None:
            return None

        def run(x: _g.Tensor, state: Any, sequence_length: Any = None) -> Tuple[Any, Any]:
            if _should_drop(self._input_keep_prob):
                x = self._drop(x, "input", 0, self._input_keep_prob)
            out, final = inner(x, state, sequence_length)
            if _should_drop(self._output_keep_prob):
                out = self._drop(out, "output", 0, self._output_keep_prob)
            return out, final
        return run

    def call(self, inputs: Any, state: Any) -> Tuple[Any, Any]:
        if _should_drop(self._input_keep_prob):
            if _is_structure(inputs):  # a structure of inputs: each part, as TF
                inputs = nest.pack_sequence_as(inputs, [self._drop(x, "input", i, self._input_keep_prob)
                                                        for i, x in enumerate(nest.flatten(inputs))])
            else:
                inputs = self._drop(inputs, "input", 0, self._input_keep_prob)
        output, new_state = self._cell(inputs, state)
        if _should_drop(self._state_keep_prob):
            flags = nest.flatten(_filtered(self._filter, new_state))
            flat = nest.flatten(new_state)
            flat = [self._drop(s, "state", i, self._state_keep_prob) if f else s
                    for i, (s, f) in enumerate(zip(flat, flags))]
            new_state = nest.pack_sequence_as(new_state, flat)
        if _should_drop(self._output_keep_prob):
            output = self._drop(output, "output", 0, self._output_keep_prob)
        return output, new_state


class ResidualWrapper(_Wrapper):
    """The cell's output plus its input (tf.nn.rnn_cell.ResidualWrapper): output =
    residual_fn(inputs, cell_output), by default their elementwise sum (same structure and
    shapes); the state is the cell's."""

    def __init__(self, cell: Any, residual_fn: Optional[Callable[[Any, Any], Any]] = None, **kwargs: Any):
        super().__init__(cell, "ResidualWrapper", **kwargs)
        self._residual_fn = residual_fn

    def fused_sequence(self) -> Optional[Callable]:
        """The wrapped cell's whole-sequence form plus its inputs, with the default sum; None
        with a residual_fn (written for one step's [batch, depth] tensors)."""
        inner = fused_form(self._cell) if self._residual_fn is None else None
        if inner is None:
            return None

        def run(x: _g.Tensor, state: Any, sequence_length: Any = None) -> Tuple[Any, Any]:
            out, final = inner(x, state, sequence_length)
            return _residual_sum(x, out), final
        return run

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        output, new_state = self._cell(inputs, state)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, output), new_state
        return _residual_sum(inputs, output), new_state


def _residual_sum(inputs: Any, output: Any) -> Any:
    """inputs + output, part by part (ResidualWrapper's default), with a clear error when the
    shapes cannot be added."""
    nest.assert_same_structure(inputs, output)

    def add(i: Any, o: Any) -> Any:
        i, o = _g.convert_to_tensor(i), _g.convert_to_tensor(o)
        if i.shape.rank is not None and o.shape.rank is not None and not i.shape.is_compatible_with(o.shape):
            raise InvalidArgumentError(f"ResidualWrapper: the cell's input of shape {i.shape} and its output of "
                                       f"shape {o.shape} cannot be added (pass residual_fn)")
        return i + o
    flat = [add(i, o) for i, o in zip(nest.flatten(inputs), nest.flatten(output))]
    return nest.pack_sequence_as(output, flat)


class DeviceWrapper(_Wrapper):
    """The cell run on `device` (tf.nn.rnn_cell.DeviceWrapper): its ops and its zero state
    are placed there (cf.device)."""

    def __init__(self, cell: Any, device: str, **kwargs: Any):
        super().__init__(cell, "DeviceWrapper", **kwargs)
        self._device = device

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with _g.device(self._device):
            return self._cell.zero_state(batch_size, dtype)

    def fused_sequence(self) -> Optional[Callable]:
        """The wrapped cell's whole-sequence form, its ops placed on the device."""
        with _g.device(self._device):
            inner = fused_form(self._cell)
        if inner is None:
            return None

        def run(x: _g.Tensor, state: Any, sequence_length: Any = None) -> Tuple[Any, Any]:
            with _g.device(self._device):
                return inner(x, state, sequence_length)
        return run

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        with _g.device(self._device):
            return self._cell(inputs, state)


def _should_drop(keep_prob: Any) -> bool:
    return isinstance(keep_prob, _g.Tensor) or float(keep_prob) < 1.0


def _dims(size: Any) -> List[int]:
    return [int(size)] if isinstance(size, (int, np.integer)) else as_shape(size).as_list()
