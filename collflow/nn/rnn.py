"""Recurrent networks: dynamic_rnn, static_rnn, the bidirectional runners, a char-level LM.

`dynamic_rnn` runs a cell over the time axis inside one while loop (the TensorFlow paper's
section 3.4), not unrolled in Python: one graph serves every sequence length, and the trip
count is decided at run time (the time dimension of the batch, or the longest entry of
`sequence_length`).  Per-step inputs and outputs go through TensorArrays
(collflow/graph/tensor_array.py), so the backward loop moves one step's slice per
iteration.  A cell may offer `input_projection()`: dynamic_rnn then computes x_t . W_x for
all steps in one matmul before the loop and runs only h . W_h inside it (what cuDNN does).

`static_rnn` unrolls the cell in Python over a list of per-step inputs (TensorFlow's
`tf.nn.static_rnn`); the bidirectional runners run a second cell over the reversed
sequences (each sequence reversed within its own length) and reverse its outputs back.

Past a sequence's `sequence_length`, every runner emits zero outputs and carries the state
through unchanged, so the final state is each sequence's state at its own length.  The
runners open the variable scope TensorFlow 1.x opens (rnn, bidirectional_rnn/fw, ...), in
which the cells name their variables (collflow/nn/rnn_cells.py).
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph import nest
from ..graph.control_flow import while_loop
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import misc_ops as _misc
from ..graph.ops import nn_ops as _nn
from ..graph.ops.constant_op import constant, identity, placeholder
from ..graph.ops.reverse_ops import reverse, reverse_sequence
from ..graph.shape import TensorShape, as_shape
from ..graph.tensor_array import TensorArray
from ..graph.variable_scope import variable_scope
from ..graph.variables import Variable
from .rnn_cell_wrappers import DeviceWrapper, DropoutWrapper, MultiRNNCell, ResidualWrapper
from .rnn_cells import (BasicLSTMCell, BasicRNNCell, GRUCell, LSTMBlockCell, LSTMCell, LSTMStateTuple, RNNCell,
                        _is_structure, batch_zeros, block_cell_clip, fused_form, prebuild, prebuild_nested)

__all__ = [
    "TensorArray", "RNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell", "MultiRNNCell",
    "DropoutWrapper", "ResidualWrapper", "DeviceWrapper", "LSTMStateTuple", "rnn_cell", "dynamic_rnn", "static_rnn", "bidirectional_dynamic_rnn",
    "static_state_saving_rnn",
    "static_bidirectional_rnn", "LSTMBlockCell", "LSTMBlockFusedCell", "CharLM", "build_char_lm",
]


rnn_cell = types.SimpleNamespace(RNNCell=RNNCell, BasicRNNCell=BasicRNNCell, BasicLSTMCell=BasicLSTMCell,
                                 LSTMCell=LSTMCell, GRUCell=GRUCell, MultiRNNCell=MultiRNNCell,
                                 DropoutWrapper=DropoutWrapper, ResidualWrapper=ResidualWrapper,
                                 DeviceWrapper=DeviceWrapper, LSTMStateTuple=LSTMStateTuple)
rnn_cell.__doc__ = "tf.nn.rnn_cell: the cell classes under their TensorFlow 1.x path."


# -- shared pieces -----------------------------------------------------------------------


def _sequence_length(sequence_length: Any, what: str) -> Optional[_g.Tensor]:
    """sequence_length as an int32 vector (None stays None)."""
    if sequence_length is None:
        return None
    seq = _g.convert_to_tensor(sequence_length)
    if not seq.dtype.is_integer or seq.shape.rank not in (None, 1):
        raise InvalidArgumentError(f"{what}: sequence_length must be an int vector [batch], got "
                                   f"{seq.dtype.name} {seq.shape}")
    return seq if seq.dtype == _dt.int32 else _m.cast(seq, _dt.int32)


def _initial_state(cell: Any, initial_state: Any, batch: Any, dt: _dt.DType) -> Any:
    if initial_state is None:
        return cell.zero_state(batch, dt)
    return nest.pack_sequence_as(initial_state, [_g.convert_to_tensor(s, dtype=dt)
                                                 for s in nest.flatten(initial_state)])


def _freeze_state(keep: _g.Tensor, new_state: Any, state: Any) -> Any:
    """Inside its sequence (keep [batch]) an entry takes the step's state; past it, the state
    it had."""
    return nest.pack_sequence_as(new_state, [
        _a.where(keep, a, b) for a, b in zip(nest.flatten(new_state), nest.flatten(state))])


def _freeze_past_length(keep: _g.Tensor, out: Any, new_state: Any, state: Any, zero_out: Any) -> Tuple[Any, Any]:
    """Inside its sequence (keep [batch, 1]) an entry takes the step's output and state; past
    it, a zero output and the state it had."""
    return _a.where(keep, out, zero_out), _freeze_state(keep, new_state, state)


def _fused_form(cell: Any, depth: int, dt: _dt.DType) -> Any:
    """The cell's whole-sequence form (`fused_sequence()`: one op per layer instead of a loop
    or an unrolled graph), built for `depth` inputs, or None."""
    if getattr(cell, "fused_sequence", None) is None:
        return None
    prebuild(cell, depth, dt)
    return fused_form(cell)


def _zero_past_lengths(outputs: _g.Tensor, seq: _g.Tensor, n_time: Any) -> _g.Tensor:
    """outputs [time, batch, n] with the steps past each row's length zeroed (a fused op
    repeats a finished row's state; TF1's runners output zeros there)."""
    steps = _misc.range(0, n_time, dtype=_dt.int32)
    live = _m.less(_a.expand_dims(steps, 1), _a.expand_dims(seq, 0))      # [time, batch]
    return outputs * _a.expand_dims(_m.cast(live, outputs.dtype), 2)


def _static_batch(b_static: Optional[int], state: Any) -> Optional[int]:
    """The inputs' static batch size, else a statically shaped state's: as in TF, where the
    cell's matmul of [inputs, state] gives its outputs the state's batch."""
    if b_static is not None:
        return b_static
    return next((s.shape.dims[0] for s in nest.flatten(state) if s.shape.rank and s.shape.dims[0] is not None), None)


def _float_dtype(x: _g.Tensor, dtype: Any, what: str) -> _dt.DType:
    dt = x.dtype if dtype is None else _dt.as_dtype(dtype)
    if not dt.is_floating or x.dtype != dt:
        raise InvalidArgumentError(f"{what}: inputs of dtype {x.dtype.name} with dtype={dt.name}; both "
                                   "must be one floating-point dtype")
    return dt


# -- dynamic_rnn -------------------------------------------------------------------------


def _size_dims(size: Any) -> List[Any]:
    return [int(size)] if isinstance(size, (int, np.integer)) else as_shape(size).as_list()


def _check_inputs(flat: List[_g.Tensor], dtype: Any, nested: bool) -> _dt.DType:
    """Every input [batch, time, ...depth] with a static depth; the state dtype."""
    for x in flat:
        if x.shape.rank is not None and x.shape.rank < 3:
            raise InvalidArgumentError(f"dynamic_rnn: inputs must be [batch, time, ...depth] (rank 3 or more), got "
                                       f"shape {x.shape}")
        if x.shape.rank is None or x.shape.dims[-1] is None:
            raise InvalidArgumentError(f"dynamic_rnn: the depth (last dimension) of the inputs must be known "
                                       f"statically, got shape {x.shape}")
    if not nested:
        return _float_dtype(flat[0], dtype, "dynamic_rnn")
    # a structure of inputs may mix dtypes (a cell reading times and features); the state
    # takes `dtype`, else the first floating input's
    dt = _dt.as_dtype(dtype) if dtype is not None else next((x.dtype for x in flat if x.dtype.is_floating), None)
    if dt is None or not dt.is_floating:
        raise InvalidArgumentError("dynamic_rnn: with a structure of inputs, pass dtype= (a floating dtype for the "
                                   "state)")
    return dt


def dynamic_rnn(cell: Any, inputs: Any, sequence_length: Any = None, initial_state: Any = None,
                dtype: Any = None, parallel_iterations: Optional[int] = None, swap_memory: bool = False,
                time_major: bool = False, scope: Any = None) -> Tuple[Any, Any]:
    """Runs `cell` over the time axis of `inputs` in one cf.while_loop (tf.nn.dynamic_rnn), or,
    when the cell has a whole-sequence form (plain LSTM/GRU cells, stacks and wrappers of
    them: `fused_sequence()`), as one fused op per layer with the loop's numbers.

    inputs: [batch, time, depth] ([time, batch, depth] if time_major), or [batch, time, ...,
      depth] for cells of such steps (ConvLSTMCell); depth must be static.  As in TF, a
      structure (tuple, list, dict) of such tensors is given to the cell step by step in that
      structure, and a cell whose output_size is a structure gives outputs in it.
    sequence_length: optional int vector [batch]: past its length a sequence's state stays
      frozen and its outputs are zeros.  The loop then runs max(sequence_length) steps.
    initial_state: a state structure of the cell (default: its zero state, of `dtype` or
      the inputs' dtype).
    scope: the variable scope (default "rnn"), a name or a cf.VariableScope.
    Returns (outputs [batch, time, output_size] (time-major if time_major), final state).
    parallel_iterations and swap_memory are accepted for TensorFlow compatibility.
    """
    nested = _is_structure(inputs)
    flat_in = [_g.convert_to_tensor(t) for t in (nest.flatten(inputs) if nested else [inputs])]
    if not flat_in:
        raise InvalidArgumentError("dynamic_rnn: inputs must not be an empty structure")
    dt = _check_inputs(flat_in, dtype, nested)
    x = flat_in[0]
    g = x.graph
    depth = x.shape.dims[-1]
    rank = x.shape.rank

    def to_time_major(t: _g.Tensor) -> _g.Tensor:
        return t if time_major else _a.transpose(t, (1, 0) + tuple(range(2, t.shape.rank)))

    with g.as_default(), variable_scope(scope or "rnn", values=flat_in):
        flat_tm = [to_time_major(t) for t in flat_in]
        x_tm = flat_tm[0]
        t_static, b_static = x_tm.shape.dims[0], x_tm.shape.dims[1]
        dims = _a.shape(x_tm)
        n_time = constant(t_static, dtype=_dt.int32) if t_static is not None else dims[0]
        batch: Any = b_static if b_static is not None else dims[1]
        if nested:
            step_shapes = nest.pack_sequence_as(inputs, [TensorShape([None] + list(t.shape.dims[2:])) for t in flat_tm])
            prebuild_nested(cell, step_shapes, dt)
        else:
            prebuild(cell, int(depth), dt)
        state0 = _initial_state(cell, initial_state, batch, dt)
        b_static = _static_batch(b_static, state0)
        seq = _sequence_length(sequence_length, "dynamic_rnn")
        if seq is not None:
            # the loop stops at the longest sequence; later outputs stay zeros
            n_steps = _m.minimum(_m.reduce_max(_m.maximum(seq, constant(0, dtype=_dt.int32))), n_time,
                                 name="max_time")
        else:
            n_steps = n_time
        out_size = cell.output_size
        nested_out = _is_structure(out_size)

        fused = _fused_form(cell, int(depth), dt) if rank == 3 and not nested and not nested_out else None
        if fused is not None:
            # the whole sequence as one fused op (no while loop): one GEMM for the input
            # projection, one kernel for the steps, one for their gradient
            outputs, final_state = fused(x_tm, state0, seq)
            if seq is not None:
                outputs = _zero_past_lengths(outputs, seq, n_time if t_static is None else t_static)
            outputs.set_shape([t_static, b_static, None])
            if not time_major:
                outputs = _a.transpose(outputs, (1, 0, 2))
            return outputs, final_state
        proj_fn = getattr(cell, "input_projection", None) if rank == 3 and not nested else None
        proj = proj_fn() if proj_fn is not None else None
        if proj is not None:
            project, step = proj
            p = project(_a.reshape(x_tm, (-1, int(depth))))
            in_tas = [TensorArray(dt, n_time, element_shape=[b_static, p.shape.dims[-1]], name="inputs").split(p)]
        else:
            step = cell
            in_tas = [TensorArray(t.dtype, n_time, element_shape=[b_static] + list(t.shape.dims[2:]), name="inputs")
                      .unstack(t) for t in flat_tm]
        sizes = nest.flatten(out_size)  # ints and TensorShapes; a tuple is a structure, as in TF
        zero_out = [batch_zeros(batch, n, dt) for n in sizes]
        out_tas = [TensorArray(dt, n_time, element_shape=[b_static] + _size_dims(n), name="outputs") for n in sizes]

        one = constant(1, dtype=_dt.int32)  # made outside: enters the loop once, not every iteration

        def cond(t: Any, state: Any, flows: Any) -> Any:
            return _m.less(t, n_steps)

        def body(t: Any, state: Any, flows: Any) -> Any:
            reads = [ta.read(t) for ta in in_tas]
            out, new_state = step(nest.pack_sequence_as(inputs, reads) if nested else reads[0], state)
            outs = nest.flatten(out) if nested_out else [out]
            if len(outs) != len(sizes):
                raise InvalidArgumentError(f"dynamic_rnn: the cell returned {len(outs)} outputs where its output_size "
                                           f"{out_size} has {len(sizes)}")
            if seq is not None:
                keep = _m.less(t, seq)  # [batch]: still inside the sequence (where's row rule, any rank)
                new_state = _freeze_state(keep, new_state, state)
                outs = [_a.where(keep, o, z) for o, z in zip(outs, zero_out)]
            flows = [ta.with_flow(f).write(t, o).flow for ta, f, o in zip(out_tas, flows, outs)]
            return t + one, new_state, flows

        _, final_state, flows = while_loop(cond, body, (constant(0, dtype=_dt.int32), state0,
                                                        [ta.flow for ta in out_tas]),
                                           parallel_iterations=parallel_iterations or 10, name="while")
        outputs = []
        for ta, f, z, n in zip(out_tas, flows, zero_out, sizes):
            o = ta.with_flow(f).stack(element_like=z)
            if not time_major:
                o = _a.transpose(o, (1, 0) + tuple(range(2, 2 + len(_size_dims(n)))))
            outputs.append(o)
        return (nest.pack_sequence_as(out_size, outputs) if nested_out else outputs[0]), final_state


def bidirectional_dynamic_rnn(cell_fw: Any, cell_bw: Any, inputs: Any, sequence_length: Any = None,
                              initial_state_fw: Any = None, initial_state_bw: Any = None, dtype: Any = None,
                              parallel_iterations: Optional[int] = None, swap_memory: bool = False,
                              time_major: bool = False, scope: Any = None) -> Tuple[Any, Any]:
    """dynamic_rnn forward with cell_fw and backward with cell_bw (tf.nn.bidirectional_dynamic_rnn).

    The backward pass reads each sequence reversed within its own length, and its outputs
    are reversed back, so output_bw[:, t] lines up with input t.  Variables live under
    bidirectional_rnn/fw and bidirectional_rnn/bw (or `scope`).
    Returns ((output_fw, output_bw), (output_state_fw, output_state_bw)).
    """
    # a structure of inputs goes through as one (each part reversed alike)
    x = nest.pack_sequence_as(inputs, [_g.convert_to_tensor(t) for t in nest.flatten(inputs)]) \
        if _is_structure(inputs) else _g.convert_to_tensor(inputs)
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)
    g = nest.flatten(x)[0].graph
    with g.as_default(), variable_scope(scope or "bidirectional_rnn", values=nest.flatten(x)):
        with variable_scope("fw") as fw_scope:
            out_fw, st_fw = dynamic_rnn(cell_fw, x, sequence_length, initial_state_fw, dtype, parallel_iterations,
                                        swap_memory, time_major, scope=fw_scope)
        seq = _sequence_length(sequence_length, "bidirectional_dynamic_rnn")

        def rev1(t: _g.Tensor) -> _g.Tensor:
            if seq is None:
                return reverse(t, [time_axis])
            return reverse_sequence(t, seq, seq_axis=time_axis, batch_axis=batch_axis)

        def rev(t: Any) -> Any:
            return nest.pack_sequence_as(t, [rev1(p) for p in nest.flatten(t)]) if _is_structure(t) else rev1(t)

        with variable_scope("bw") as bw_scope:
            tmp, st_bw = dynamic_rnn(cell_bw, rev(x), seq, initial_state_bw, dtype, parallel_iterations,
                                     swap_memory, time_major, scope=bw_scope)
        out_bw = rev(tmp)
    return (out_fw, out_bw), (st_fw, st_bw)


# -- static_rnn --------------------------------------------------------------------------


def _step_inputs(inputs: Any, what: str) -> List[_g.Tensor]:
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"{what}: inputs must be a list of [batch, depth] tensors (one per time step), got "
                        f"{type(inputs).__name__}")
    if not inputs:
        raise ValueError(f"{what}: inputs must not be empty")
    xs = [_g.convert_to_tensor(x) for x in inputs]
    if what == "static_rnn" and xs[0].shape.rank == 1:
        return xs  # TF's exception for symbol ids [batch] read by a cell such as EmbeddingWrapper
    for t, x in enumerate(xs):
        if x.shape.rank is not None and x.shape.rank != 2:
            raise InvalidArgumentError(f"{what}: every input must be [batch, depth] (rank 2); input {t} has shape "
                                       f"{x.shape}")
    if xs[0].shape.rank is None or xs[0].shape.dims[1] is None:
        raise InvalidArgumentError(f"{what}: the depth of the inputs must be known statically, got shape "
                                   f"{xs[0].shape}")
    return xs


def static_rnn(cell: Any, inputs: Sequence[Any], initial_state: Any = None, dtype: Any = None,
               sequence_length: Any = None, scope: Any = None) -> Tuple[List[_g.Tensor], Any]:
    """Runs `cell` over a list of per-step inputs, unrolled in the graph (tf.nn.static_rnn);
    a cell with a whole-sequence form runs as one fused op per layer instead (same numbers).

    inputs: a list of T tensors [batch, depth].  sequence_length: optional int vector
    [batch] (zero outputs and a carried-through state past each length).  The variables
    are made at the first step in the variable scope `scope` (default "rnn") and shared by
    the later steps.  Returns (outputs: a list of T [batch, output_size], final state).
    """
    xs = _step_inputs(inputs, "static_rnn")
    ids = xs[0].shape.rank == 1  # ids [batch] per step: the cell embeds them
    if ids:
        dt = _ids_state_dtype(initial_state, dtype)
    else:
        dt = _float_dtype(xs[0], dtype, "static_rnn")
    g = xs[0].graph
    with g.as_default(), variable_scope(scope or "rnn", values=xs) as varscope:
        b_static = xs[0].shape.dims[0]
        batch: Any = b_static if b_static is not None else _a.shape(xs[0])[0]
        state = _initial_state(cell, initial_state, batch, dt)
        seq = _sequence_length(sequence_length, "static_rnn")
        fused = None if ids else _fused_form(cell, int(xs[0].shape.dims[1]), dt)
        if fused is not None:
            # the unrolled steps as one fused op: the same numbers, one op per layer
            out, state = fused(_a.stack(xs, axis=0), state, seq)
            if seq is not None:
                out = _zero_past_lengths(out, seq, len(xs))
            out.set_shape([len(xs), _static_batch(b_static, state), None])
            return _a.unstack(out, num=len(xs), axis=0), state
        zero_out = batch_zeros(batch, int(cell.output_size), dt) if seq is not None else None
        outputs = []
        for t, x in enumerate(xs):
            if t > 0:
                varscope.reuse_variables()  # as TensorFlow: later steps share the first step's variables
            out, new_state = cell(x, state)
            if seq is not None:
                keep = _a.expand_dims(_m.less(constant(t, dtype=_dt.int32), seq), 1)
                out, new_state = _freeze_past_length(keep, out, new_state, state, zero_out)
            state = new_state
            outputs.append(out)
        return outputs, state


def static_state_saving_rnn(cell: Any, inputs: Sequence[Any], state_saver: Any, state_name: Any,
                            sequence_length: Any = None, scope: Any = None) -> Tuple[List[_g.Tensor], Any]:
    """static_rnn that starts from and saves its state through a state saver, for truncated
    backpropagation over long sequences (tf.nn.static_state_saving_rnn).

    state_saver: any object with `state(name)` (a tensor) and `save_state(name, value)` (an
    op), e.g. a NextQueuedSequenceBatch.  state_name: a string, or a structure of strings
    matching `cell.state_size` when the state is a tuple.  The last output and the final
    state are returned through identities that run after every save, so fetching either
    saves the state, as TF.
    """
    tuple_state, tuple_name = nest._is_seq(cell.state_size), nest._is_seq(state_name)
    if tuple_state != tuple_name:
        raise ValueError("Argument `state_name` should be the same type as `cell.state_size`. Received: "
                         f"state_name={state_name!s}, cell.state_size={cell.state_size!s}.")
    names = nest.flatten(state_name) if tuple_state else [state_name]
    if tuple_state:
        n_sizes = len(nest.flatten(cell.state_size))
        if len(names) != n_sizes:
            raise ValueError(f"Number of elements in argument `state_name` and `cell.state_size` are mismatched. "
                             f"Received state_name={state_name} with {len(names)} elements and "
                             f"cell.state_size={cell.state_size} with {n_sizes} elements.")
        initial = nest.pack_sequence_as(cell.state_size, [state_saver.state(n) for n in names])
    else:
        initial = state_saver.state(state_name)
    outputs, state = static_rnn(cell, inputs, initial_state=initial, sequence_length=sequence_length, scope=scope)
    flat_state = nest.flatten(state)
    saves = [state_saver.save_state(n, v) for n, v in zip(names, flat_state)]
    with _g.get_default_graph().control_dependencies(saves):
        last = outputs[-1]
        outputs[-1] = nest.pack_sequence_as(last, [identity(o) for o in nest.flatten(last)])
        state = nest.pack_sequence_as(state, [identity(v) for v in flat_state])
    return outputs, state


def _ids_state_dtype(initial_state: Any, dtype: Any) -> _dt.DType:
    if initial_state is not None:
        return nest.flatten(initial_state)[0].dtype
    if dtype is None:
        raise ValueError("If no initial_state is provided, dtype must be specified")
    return _dt.as_dtype(dtype)


def _reverse_steps(xs: List[_g.Tensor], seq: Optional[_g.Tensor]) -> List[_g.Tensor]:
    """The list of steps reversed; with lengths, each sequence within its own length."""
    if seq is None:
        return list(reversed(xs))
    stacked = _a.stack(xs, axis=0)  # [time, batch, depth]
    return _a.unstack(reverse_sequence(stacked, seq, seq_axis=0, batch_axis=1), num=len(xs), axis=0)


def static_bidirectional_rnn(cell_fw: Any, cell_bw: Any, inputs: Sequence[Any], initial_state_fw: Any = None,
                             initial_state_bw: Any = None, dtype: Any = None, sequence_length: Any = None,
                             scope: Any = None) -> Tuple[List[_g.Tensor], Any, Any]:
    """static_rnn forward with cell_fw and backward with cell_bw (tf.nn.static_bidirectional_rnn).

    Returns (outputs: T tensors [batch, fw output + bw output] (the two concatenated),
    output_state_fw, output_state_bw).  Variables under bidirectional_rnn/fw and /bw.
    """
    xs = _step_inputs(inputs, "static_bidirectional_rnn")
    g = xs[0].graph
    with g.as_default(), variable_scope(scope or "bidirectional_rnn", values=xs):
        with variable_scope("fw") as fw_scope:
            out_fw, st_fw = static_rnn(cell_fw, xs, initial_state_fw, dtype, sequence_length, scope=fw_scope)
        seq = _sequence_length(sequence_length, "static_bidirectional_rnn")
        with variable_scope("bw") as bw_scope:
            tmp, st_bw = static_rnn(cell_bw, _reverse_steps(xs, seq), initial_state_bw, dtype, seq, scope=bw_scope)
        out_bw = _reverse_steps(tmp, seq)
        outputs = [_a.concat([f, b], 1) for f, b in zip(out_fw, out_bw)]
    return outputs, st_fw, st_bw


class LSTMBlockFusedCell(LSTMCell):
    """tf.contrib.rnn.LSTMBlockFusedCell: an LSTM over a whole time-major sequence as one op.

        cell = LSTMBlockFusedCell(num_units)
        outputs, (c, h) = cell(inputs, initial_state=None, dtype=cf.float32, sequence_length=None)

    inputs [time, batch, depth] (or a list of [batch, depth] steps: outputs are then a list);
    variables lstm_fused_cell/kernel [depth + units, 4 units] and lstm_fused_cell/bias, as
    LSTMCell's (gates i, j, f, o; forget_bias added to f).  With sequence_length the outputs
    past each length are zeros and the final state is each row's at its length (the initial
    state at length 0).  use_peephole adds lstm_fused_cell/w_i_diag, w_f_diag, w_o_diag
    [units]; cell_clip > 0 clips c to [-cell_clip, cell_clip] after each update (None, 0 or
    TF's -1: no clipping)."""

    def __init__(self, num_units: int, forget_bias: float = 1.0, cell_clip: Optional[float] = None,
                 use_peephole: bool = False, reuse: Any = None, dtype: Any = None, name: Optional[str] = "lstm_fused_cell",
                 **kwargs: Any):
        super().__init__(num_units, use_peepholes=use_peephole, cell_clip=block_cell_clip(cell_clip),
                         forget_bias=forget_bias, reuse=reuse, name=name, dtype=dtype, **kwargs)

    def __call__(self, inputs: Any, initial_state: Any = None, dtype: Any = None, sequence_length: Any = None,
                 scope: Any = None) -> Tuple[Any, Any]:  # type: ignore[override]
        as_list = isinstance(inputs, (list, tuple))
        x = _a.stack([_g.convert_to_tensor(t) for t in inputs], axis=0) if as_list else _g.convert_to_tensor(inputs)
        if x.shape.rank != 3 or x.shape.dims[2] is None:
            raise InvalidArgumentError(f"LSTMBlockFusedCell: inputs must be [time, batch, depth] with a static depth "
                                       f"(or a list of [batch, depth] steps), got shape {x.shape}")
        dt = _float_dtype(x, dtype, "LSTMBlockFusedCell")
        with x.graph.as_default():
            self._ensure_built(int(x.shape.dims[2]), dt, scope)
            b_static = x.shape.dims[1]
            batch: Any = b_static if b_static is not None else _a.shape(x)[1]
            state = _initial_state(self, initial_state, batch, dt)
            if not isinstance(state, tuple) or len(state) != 2:
                raise InvalidArgumentError(f"LSTMBlockFusedCell: initial_state must be a tuple (c, h), got {state!r}")
            state = LSTMStateTuple(*state)
            seq = _sequence_length(sequence_length, "LSTMBlockFusedCell")
            run = self.fused_sequence()
            with self._cell_scope(scope):
                out, final = run(x, state, seq)
            if seq is not None:
                n_time = x.shape.dims[0] if x.shape.dims[0] is not None else _a.shape(x)[0]
                out = _zero_past_lengths(out, seq, n_time)
        if as_list:
            return _a.unstack(out, num=len(inputs), axis=0), final
        return out, final


# -- a character-level language model ----------------------------------------------------


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


def _glorot_uniform(shape: Tuple[int, ...], dtype: Any, rng: np.random.Generator) -> np.ndarray:
    fan_in, fan_out = shape[0], shape[-1]
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=shape).astype(dtype)


def build_char_lm(vocab_size: int, embed_dim: int = 64, hidden: Any = 128, seq_len: Optional[int] = None,
                  num_layers: int = 1, optimizer: Any = None, cell: str = "lstm", seed: int = 0,
                  dtype: Any = _dt.float32, global_step: bool = True, name: str = "char_lm") -> CharLM:
    """Embedding -> stacked dynamic_rnn(LSTMCell) layers -> softmax over the vocabulary.

    hidden: the units of every layer (with num_layers layers), or a sequence of layer sizes
    (e.g. (256, 128); num_layers is then ignored).  Adds the ops to the default graph, in
    the variable scope `name` (made unique).  With an optimizer (e.g.
    cf.train.AdamOptimizer), train_op runs one step on the mean next-character
    cross-entropy (and increments the global step when `global_step`).  cell: 'lstm' or
    'rnn' (BasicRNNCell).  Weights are drawn from `seed`, identical on every rank.
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
    with variable_scope(None, default_name=name):
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
