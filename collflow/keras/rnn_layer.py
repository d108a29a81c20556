"""tf.keras.layers.RNN (TF 1.15) for any cell: the built-in cells (keras/rnn_cells.py), a list
of cells (a StackedRNNCells) or a user cell (a Layer with `state_size` (an int, a TensorShape,
or a list/tuple/nest of them), `build(input_shape)` with add_weight and `call(inputs, states)`
returning (output, new_states); optional `output_size`, `get_initial_state`, `training=` and
`constants=` arguments).

The cell's weights are built in the layer's scope (rnn/kernel; a stack's cells under their
names, rnn/lstm_cell/kernel) and the loop is cf.scan over time, so gradients flow through it
as through any collflow loop.  return_sequences, return_state (the states flat, after the
output, as TF 1.15), go_backwards, time_major, initial_state, constants, masks (a masked step
keeps every state and repeats the previous output, or gives zeros with
zero_output_for_mask=True), stateful (one non-trainable variable per state, the batch fixed as
for the recurrent layers) and unroll (accepted: a scan either way).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.functional_ops import scan
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import state_ops as _state_ops
from ..graph.ops.constant_op import identity
from ..graph.ops.reverse_ops import reverse
from ..graph.shape import TensorShape
from ..graph.variable_scope import variable_scope
from ..graph.variables import Variable
from ..nn import layer_classes as _lc
from . import backend as K
from .layers import _KerasMixin, _input_shape_kwargs
from .recurrent import _NEEDS_BATCH, held_or_given
from .rnn_cells import StackedRNNCells, _accepts, flat_sizes, flatten_like, pack_like

__all__ = ["RNN"]


class RNN(_KerasMixin, _lc.Layer):
    """Runs `cell` over the time axis (see the module doc)."""
    _base = "rnn"
    _consumes_mask = True
    _takes_training = True

    def __init__(self, cell: Any, return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, unroll: bool = False, time_major: bool = False,
                 zero_output_for_mask: bool = False, **kwargs: Any):
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
            args, kw = self._init_args
            # the config holds the stack (Keras writes a StackedRNNCells), not the list
            self._init_args = (((cell,) + tuple(args[1:]), kw) if args else ((), dict(kw, cell=cell)))
        if not hasattr(cell, "call"):
            raise ValueError(f"`cell` should have a `call` method. The RNN was passed: {cell}")
        if not hasattr(cell, "state_size"):
            raise ValueError("The RNN cell should have an attribute `state_size` (tuple of integers, one integer "
                             "per RNN state).")
        batch_size = kwargs.pop("batch_size", None)
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        if batch_size is not None and self._batch_input_shape is not None:
            self._batch_input_shape = (int(batch_size),) + tuple(self._batch_input_shape[1:])
        super().__init__(kwargs.pop("trainable", True), kwargs.pop("name", None), **kwargs)
        self.cell = cell
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.stateful, self.unroll = bool(go_backwards), bool(stateful), bool(unroll)
        self.time_major, self.zero_output_for_mask = bool(time_major), bool(zero_output_for_mask)
        self._state_vars: Optional[List[Any]] = None
        self._num_constants = 0

    def __copy__(self) -> "RNN":
        """A copy with its own (unbuilt) cell: Bidirectional's backward layer gets new weights."""
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        cell = self.cell
        new.cell = type(cell).from_config(cell.get_config()) if hasattr(cell, "get_config") else cell
        return new

    @property
    def _flat_shapes(self) -> List[List[int]]:
        return flat_sizes(self.cell.state_size)

    # -- calls ----------------------------------------------------------------------------------
    def __call__(self, inputs: Any, initial_state: Any = None, constants: Any = None, training: Any = None,
                 **kwargs: Any) -> Any:
        if isinstance(inputs, (list, tuple)):
            # Keras's form [x, *initial_states, *constants]
            rest = list(inputs[1:])
            if rest and constants is None and self._num_constants:
                constants, rest = rest[-self._num_constants:], rest[:-self._num_constants]
            if rest and initial_state is None:
                initial_state = rest
            inputs = inputs[0]
        if constants is not None:
            constants = list(constants) if isinstance(constants, (list, tuple)) else [constants]
            self._num_constants = len(constants)
        self._call_state, self._call_constants = initial_state, constants
        self._new_state_updates: List[Any] = []
        out = super().__call__(inputs, training=training, **kwargs)
        if self._state_vars is not None:
            self._vars = [v for v in self._vars if all(v is not s for s in self._state_vars)]
        if self._new_state_updates:
            self.updates = list(getattr(self, "updates", [])) + self._new_state_updates
        return out

    def _output_mask(self, inputs: Any, mask: Any) -> Any:
        return mask if self.return_sequences else None

    def _call(self, x: Any, name: Any, reuse: Any, mask: Any = None, training: Any = None) -> Any:
        if x.shape.rank is None or x.shape.rank < 3:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: expected ndim>=3, "
                             f"found shape {x.shape}")
        xt = _a.transpose(x, [1, 0] + list(range(2, x.shape.rank))) if not self.time_major else x
        if self.stateful and xt.shape.dims[1] is None:
            raise ValueError(_NEEDS_BATCH)
        cell = self.cell
        constants = [_g.convert_to_tensor(c) for c in (self._call_constants or [])]
        with variable_scope(name, reuse=reuse):
            if not getattr(cell, "built", False) and hasattr(cell, "build"):
                step_shape = TensorShape([xt.shape.dims[1]] + list(xt.shape.dims[2:]))
                cell.build([step_shape] + [TensorShape(c.shape) for c in constants] if constants else step_shape)
                cell.built = True
            batch = _a.shape(xt)[1]
            states = self._initial_states(xt, batch)
            kw: Dict[str, Any] = {}
            if _accepts(cell.call, "training"):
                kw["training"] = training
            if constants:
                if not _accepts(cell.call, "constants"):
                    raise ValueError("RNN cell does not support constants")
                kw["constants"] = constants
            self._begin_cell(xt, batch, training)
            try:
                seq_out, last_out, last = self._loop(xt, batch, states, mask, kw)
            finally:
                if hasattr(cell, "_end_masks"):
                    cell._end_masks()
            out = seq_out if self.return_sequences else last_out
            if self.return_sequences and not self.time_major:
                out = _a.transpose(out, [1, 0] + list(range(2, out.shape.rank)))
            if self.stateful:
                out, last = self._update_states(out, last)
        if self.return_state:
            return [out] + list(last)
        return out

    def _begin_cell(self, xt: Any, batch: Any, training: Any) -> None:
        """The cell's dropout masks of this call: drawn once, reused at every step."""
        if hasattr(self.cell, "_begin_masks"):
            self.cell._begin_masks(batch, int(xt.shape.dims[-1]), xt.dtype, training)

    def _loop(self, xt: Any, batch: Any, states: List[Any], mask: Any, kw: Dict[str, Any]) -> Any:
        cell, size = self.cell, self.cell.state_size
        n = len(states)
        out_size = getattr(cell, "output_size", None)
        out_shape = flat_sizes(out_size)[0] if out_size is not None else self._flat_shapes[0]
        zero_out = _a.zeros(_a.stack([batch] + out_shape), dtype=xt.dtype)
        elems: Any = reverse(xt, [0]) if self.go_backwards else xt
        if mask is not None:
            m = _a.transpose(_m.cast(mask, _dt.bool_), [1, 0])
            elems = (elems, reverse(m, [0]) if self.go_backwards else m)

        def keep(flag: Any, new: Any, old: Any) -> Any:
            # the step's [batch] flag broadcast over the state's shape
            rest = [int(d) for d in new.shape.as_list()[1:]]
            f = _a.tile(_a.reshape(flag, [-1] + [1] * len(rest)), [1] + rest)
            return _a.where(f, new, old)

        def step(carry: Any, elem: Any) -> Any:
            x_t, flag = elem if mask is not None else (elem, None)
            out, new = cell.call(x_t, pack_like(size, list(carry[:n])), **kw)
            new_flat = [_g.convert_to_tensor(t) for t in flatten_like(size, new)]
            out = _g.convert_to_tensor(out)
            if flag is not None:
                new_flat = [keep(flag, a, b) for a, b in zip(new_flat, carry[:n])]
                out = keep(flag, out, zero_out if self.zero_output_for_mask else carry[n])
            return tuple(new_flat) + (out,)
        seq = scan(step, elems, initializer=tuple(states) + (zero_out,))
        seq_out = seq[n]
        seq_out.set_shape([xt.shape.dims[0], xt.shape.dims[1]] + out_shape)
        last = [s[-1] for s in seq[:n]]
        for t, s in zip(last, states):
            t.set_shape(s.shape)
        last_out = seq_out[-1]
        return seq_out, last_out, last

    # -- states ---------------------------------------------------------------------------------
    def get_initial_state(self, inputs: Any) -> List[Any]:
        """The zero (or the cell's own) initial states, flat, for `inputs` [batch, time, ...]."""
        xt = inputs if self.time_major else _a.transpose(inputs, [1, 0] + list(range(2, inputs.shape.rank)))
        return self._zero_states(xt, _a.shape(xt)[1])

    def _zero_states(self, xt: Any, batch: Any) -> List[Any]:
        cell = self.cell
        if hasattr(cell, "get_initial_state"):
            init = cell.get_initial_state(inputs=None, batch_size=batch, dtype=xt.dtype)
            return [_g.convert_to_tensor(t) for t in flatten_like(cell.state_size, init)]
        return [_a.zeros(_a.stack([batch] + s), dtype=xt.dtype) for s in self._flat_shapes]

    def _initial_states(self, xt: Any, batch: Any) -> List[Any]:
        given = self._call_state
        n = len(self._flat_shapes)
        if given is not None:
            given = list(given) if isinstance(given, (list, tuple)) else [given]
            given = flatten_like(self.cell.state_size, given) if len(given) != n else given
            if len(given) != n:
                raise ValueError(f"An `initial_state` was passed that is not compatible with `cell.state_size`. "
                                 f"Received `state_spec`={len(given)} states; however `cell.state_size` is "
                                 f"{self.cell.state_size}")
            given = [_g.convert_to_tensor(s) for s in given]
        if self.stateful:
            held = [v.value() for v in self._state_variables(xt)]
            if given is None:
                return held
            return held_or_given(held, given)  # as the recurrent layers
        return given if given is not None else self._zero_states(xt, batch)

    def _state_variables(self, xt: Any) -> List[Any]:
        if self._state_vars is None:
            b = int(xt.shape.dims[1])
            g = xt.graph
            with g.name_scope(None), g.name_scope(self._scope.name + "/"):
                self._state_vars = [Variable(np.zeros([b] + s, dtype=xt.dtype.np), trainable=False, name="Variable")
                                    for s in self._flat_shapes]
        return self._state_vars

    def _update_states(self, out: Any, last: List[Any]) -> Any:
        """Assigns the last states to the held ones; the outputs depend on the assignments (see
        keras/recurrent.py's _update_states)."""
        assigns = [_state_ops.assign(v, s) for v, s in zip(self._state_vars or [], last)]
        self._new_state_updates = assigns
        with _g.control_dependencies(assigns):
            return identity(out), [identity(s) for s in last]

    @property
    def states(self) -> List[Any]:
        if self._state_vars is not None:
            return list(self._state_vars)
        size = self.cell.state_size
        return [None] * (len(self._flat_shapes) if size is not None else 1)  # (a ConvLSTM2D's: once built)

    def reset_states(self, states: Any = None) -> None:
        """Zeros, or `states` (one array per flat state), into the held states."""
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        if self._state_vars is None:
            raise ValueError(_NEEDS_BATCH)
        if states is None:
            K.batch_set_value([(v, np.zeros(v.shape.as_list())) for v in self._state_vars])
            return
        values = list(states) if isinstance(states, (list, tuple)) else [states]
        if len(values) != len(self._state_vars):
            raise ValueError(f"Layer {self.name} expects {len(self._state_vars)} states, but it received "
                             f"{len(values)} state values. States received: {states}")
        for i, (v, value) in enumerate(zip(self._state_vars, values)):
            if tuple(np.shape(value)) != tuple(v.shape.as_list()):
                raise ValueError(f"State {i} is incompatible with layer {self.name}: expected shape="
                                 f"{tuple(v.shape.as_list())} but found shape={np.shape(value)}")
        K.batch_set_value(list(zip(self._state_vars, values)))

    def _checkpoint_children(self) -> List[Any]:
        """Keras's object-checkpoint structure: the cell, then the empty state_spec list."""
        from ..train.trackable import cached_node
        return [("cell", self.cell), ("state_spec", cached_node(self, "state_spec"))]

    # -- weights: the cell's ----------------------------------------------------------------------
    @property
    def weights(self) -> List[Any]:
        own = list(getattr(self.cell, "weights", []))
        return own + [v for v in self._vars if all(v is not o for o in own)]

    variables = weights

    @property
    def trainable_weights(self) -> List[Any]:
        return [w for w in self.weights if w.trainable] if self.trainable else []

    trainable_variables = trainable_weights

    @property
    def non_trainable_weights(self) -> List[Any]:
        return [w for w in self.weights if not w.trainable or not self.trainable]

    non_trainable_variables = non_trainable_weights
