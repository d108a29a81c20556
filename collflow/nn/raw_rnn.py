"""tf.nn.raw_rnn: an RNN whose inputs, stopping and emitted values a `loop_fn` decides.

The caller's loop_fn is called once before the loop (time 0, everything else None) for the
initial input, cell state, emit structure and loop state, then once per step after the
cell: loop_fn(time + 1, output, state, loop_state) -> (finished, next_input, next_state,
emit, next_loop_state).  The loop is one cf.while_loop that runs while any batch entry is
unfinished; emits go into dynamic-size TensorArrays indexed by time (time-major).  As in
TensorFlow 1.15, an entry already finished at the start of a step emits zeros and keeps its
state (tf.where on the *old* finished vector), and the loop state is never masked.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph import nest
from ..graph.control_flow import while_loop
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops.constant_op import constant
from ..graph.shape import TensorShape
from ..graph.tensor_array import TensorArray
from ..graph.variable_scope import variable_scope
from .rnn_cells import batch_zeros

__all__ = ["raw_rnn"]

_RETURNS = "(finished, next_input, next_cell_state, emit_output, next_loop_state)"


def _check_cell(cell: Any) -> None:
    # TF's assert_like_rnncell: the runner needs the two sizes and a callable
    missing = [a for a in ("output_size", "state_size") if not hasattr(cell, a)]
    if missing or not callable(cell):
        what = f"lacks {', '.join(missing)}" if missing else "is not callable"
        raise TypeError(f"raw_rnn: cell must be an RNNCell (output_size, state_size, callable); "
                        f"{type(cell).__name__} {what}")


def _same_structure(a: Any, b: Any, what: str, when: str) -> None:
    try:
        nest.assert_same_structure(a, b)
    except ValueError:
        raise ValueError(f"raw_rnn: {what} from loop_fn {when} has the structure {_struct(b)}, expected "
                         f"{_struct(a)}") from None


def _struct(x: Any) -> str:
    """A structure with its leaves as '.', for error messages (tensors print long)."""
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_struct(x[k])}" for k in sorted(x)) + "}"
    if isinstance(x, (list, tuple)):
        name = type(x).__name__ if hasattr(x, "_fields") else ""
        return name + ("[" if isinstance(x, list) else "(") + ", ".join(_struct(e) for e in x) + \
            ("]" if isinstance(x, list) else ",)" if len(x) == 1 and not name else ")")
    return "None" if x is None else "."


def _call_loop_fn(loop_fn: Callable, when: str, *args: Any) -> Tuple[Any, ...]:
    res = loop_fn(*args)
    if not isinstance(res, (tuple, list)) or len(res) != 5:
        got = f"a {type(res).__name__} of {len(res)}" if isinstance(res, (tuple, list)) else repr(res)
        raise TypeError(f"raw_rnn: loop_fn must return {_RETURNS}, got {got} {when}")
    finished = _g.convert_to_tensor(res[0])
    if finished.dtype != _dt.bool_:
        raise TypeError(f"raw_rnn: loop_fn's `finished` must be a bool vector [batch], got "
                        f"{finished.dtype.name} {finished.shape} {when}")
    if finished.shape.rank is not None and finished.shape.rank > 1:
        raise ValueError(f"raw_rnn: loop_fn's `finished` must be a bool vector [batch], got shape "
                         f"{finished.shape} {when}")
    if res[1] is None or not nest.flatten(res[1]):
        raise ValueError(f"raw_rnn: loop_fn returned no next_input {when}")
    return (finished,) + tuple(res[1:])


def _static_batch(flat_input: List[_g.Tensor]) -> Optional[int]:
    """The batch size all inputs agree on statically (dimension 0), or None."""
    batch: Optional[int] = None
    for x in flat_input:
        if x.shape.rank == 0:
            raise ValueError(f"raw_rnn: next_input must be [batch, ...] tensors, got a scalar {x!r}")
        b = x.shape.dims[0] if x.shape.rank is not None else None
        if b is not None:
            if batch is not None and b != batch:
                raise ValueError(f"raw_rnn: the inputs disagree on the batch size ({batch} vs {b})")
            batch = b
    return batch


def _emit_spec(emit_structure: Any, cell: Any, state_dtype: _dt.DType) -> Tuple[Any, list, list]:
    """(structure, per-example shapes, dtypes) of what each step emits.  None at init means the
    cell's output_size in the state's dtype; given tensors are per-example templates (their
    shapes get the batch dimension prepended; their values are ignored)."""
    if emit_structure is None:
        sizes = [s if isinstance(s, TensorShape) else TensorShape([int(s)]) for s in nest.flatten(cell.output_size)]
        return cell.output_size, sizes, [state_dtype] * len(sizes)
    flat = [_g.convert_to_tensor(e) for e in nest.flatten(emit_structure)]
    # a shape not fully static is taken at run time (zeros need it), as TensorFlow does
    sizes = [e.shape if e.shape.is_fully_defined() else _a.shape(e) for e in flat]
    return nest.pack_sequence_as(emit_structure, flat), sizes, [e.dtype for e in flat]


def _zeros(batch: Any, size: Any, dt: _dt.DType) -> _g.Tensor:
    if isinstance(size, TensorShape):
        return batch_zeros(batch, size, dt)
    b = batch if isinstance(batch, _g.Tensor) else constant(batch, dtype=_dt.int32)
    return _a.zeros(_a.concat([_a.reshape(b, [1]), _m.cast(size, _dt.int32)], 0), dtype=dt)


def _copy_through(finished: _g.Tensor, current: Any, candidate: Any) -> Any:
    """candidate where the entry is unfinished, current where it had finished; TensorArrays
    and scalars (no batch dimension to select along) pass through as TensorFlow does."""
    def pick(cur: Any, cand: Any) -> Any:
        if isinstance(cur, TensorArray):
            return cand
        cur, cand = _g.convert_to_tensor(cur), _g.convert_to_tensor(cand)
        if cur.shape.rank == 0:
            return cand
        return _a.where(finished, cur, cand)
    return nest.pack_sequence_as(current, [pick(a, b) for a, b in zip(nest.flatten(current), nest.flatten(candidate))])


def raw_rnn(cell: Any, loop_fn: Callable[..., Any], parallel_iterations: Optional[int] = None,
            swap_memory: bool = False, scope: Any = None) -> Tuple[Any, Any, Any]:
    """Runs `cell` in a while loop driven by `loop_fn` (tf.nn.raw_rnn, TF 1.15's semantics).

    loop_fn(time, cell_output, cell_state, loop_state) -> (finished [batch] bool, next_input,
    next_cell_state, emit_output, next_loop_state).  Its first call (time 0, the rest None)
    gives the initial input and state, the emit structure (None: the cell's output_size) and
    the initial loop state (None: no loop state; later calls then see an int32 scalar in its
    place, as in TensorFlow, and a None next_loop_state keeps the previous one).
    Variables live under `scope` (default "rnn").  Returns (emit_ta, final_state,
    final_loop_state): emit_ta a TensorArray (a nest of them for a nested emit structure)
    whose stack() is [time, batch, ...].
    """
    _check_cell(cell)
    if not callable(loop_fn):
        raise TypeError(f"raw_rnn: loop_fn must be callable, got {loop_fn!r}")
    with variable_scope(scope or "rnn"):
        time0 = constant(0, dtype=_dt.int32)
        finished0, input0, state0, emit_structure, lstate0 = _call_loop_fn(
            loop_fn, "at its first call (time 0)", time0, None, None, None)
        # the while loop needs some loop state: an int32 0 stands in (loop_fn sees it later)
        lstate = lstate0 if lstate0 is not None else constant(0, dtype=_dt.int32)
        flat_input = [_g.convert_to_tensor(x) for x in nest.flatten(input0)]
        input0 = nest.pack_sequence_as(input0, flat_input)
        const_batch = _static_batch(flat_input)
        batch: Any = const_batch if const_batch is not None else _a.shape(flat_input[0])[0]
        if state0 is None:
            raise ValueError("raw_rnn: loop_fn's first call must return the initial cell state as "
                             "next_cell_state (e.g. cell.zero_state(batch_size, dtype)), got None")
        _same_structure(cell.state_size, state0, "next_cell_state", "at its first call")
        flat_state = [_g.convert_to_tensor(s) for s in nest.flatten(state0)]
        state0 = nest.pack_sequence_as(state0, flat_state)

        emit_structure, sizes, dtypes = _emit_spec(emit_structure, cell, flat_state[0].dtype)
        flat_ta, flat_zero = [], []
        for i, (size, dt) in enumerate(zip(sizes, dtypes)):
            # element shape [batch] + size, as much of it as is static
            elem = size if isinstance(size, TensorShape) else nest.flatten(emit_structure)[i].shape
            elem = TensorShape(None if elem.dims is None else (const_batch,) + elem.dims)
            flat_ta.append(TensorArray(dt, size=0, dynamic_size=True, name=f"rnn_output_{i}", element_shape=elem))
            flat_zero.append(_zeros(batch, size, dt))
        emit_ta = nest.pack_sequence_as(emit_structure, flat_ta)
        zero_emit = nest.pack_sequence_as(emit_structure, flat_zero)

        def cond(time: Any, finished: Any, *_: Any) -> Any:
            return _m.logical_not(_m.reduce_all(finished))

        def body(time: Any, finished: Any, inp: Any, emit_ta: Any, state: Any, lstate: Any) -> Any:
            output, cell_state = cell(inp, state)
            when = "inside the loop"
            next_time = time + 1
            next_finished, next_input, next_state, emit, next_lstate = _call_loop_fn(
                loop_fn, when, next_time, output, cell_state, lstate)
            _same_structure(state, next_state, "next_cell_state", when)
            _same_structure(inp, next_input, "next_input", when)
            _same_structure(emit_ta, emit, "emit_output", when)
            for k, (ta, e) in enumerate(zip(nest.flatten(emit_ta), nest.flatten(emit))):
                e = _g.convert_to_tensor(e)
                if e.dtype != ta.dtype:
                    raise TypeError(f"raw_rnn: emit_output {k} from loop_fn is {e.dtype.name}, but the emit "
                                    f"structure of the first call made it {ta.dtype.name}")
            lstate = lstate if next_lstate is None else next_lstate
            # masks use `finished` from before this step: an entry finishing now still emits
            # this step's value, as TensorFlow does
            emit = _copy_through(finished, zero_emit, emit)
            next_state = _copy_through(finished, state, next_state)
            emit_ta = nest.pack_sequence_as(emit_ta, [ta.write(time, e) for ta, e in
                                                      zip(nest.flatten(emit_ta), nest.flatten(emit))])
            return (next_time, _m.logical_or(finished, next_finished), next_input, emit_ta, next_state, lstate)

        out = while_loop(cond, body, [time0, finished0, input0, emit_ta, state0, lstate],
                         parallel_iterations=parallel_iterations or 32, swap_memory=swap_memory)
        emit_ta, final_state, final_lstate = out[-3:]
        return emit_ta, final_state, (final_lstate if lstate0 is not None else None)
