"""RNN cells (TensorFlow 1.x `tf.nn.rnn_cell`, also `tf.contrib.rnn`).

A cell is one step: `cell(inputs [batch, depth], state) -> (output, new state)`, with
`state_size`, `output_size` and `zero_state(batch, dtype)`.  The runners (dynamic_rnn,
static_rnn, the bidirectional ones, cf.scan) call it once per step.

Variables follow TensorFlow 1.x's naming and sharing.  On its first call (or `build`) a cell
opens a variable scope named after its class (`lstm_cell`, `gru_cell`, ... or its `name`),
made unique in the enclosing variable scope, and creates its variables there with
cf.get_variable: dynamic_rnn(LSTMCell(n), x) makes rnn/lstm_cell/kernel and
rnn/lstm_cell/bias; a MultiRNNCell makes rnn/multi_rnn_cell/cell_0/lstm_cell/kernel, ...
Every later call of the same cell object re-enters that scope with reuse, so calling a cell
twice shares its variables; a new cell in a reusing scope (reuse=True or cf.AUTO_REUSE)
shares too.  Wrappers (DropoutWrapper) add no scope of their own.  Variables are created
outside any cond or while loop the cell is first called in, so they are initialized once.

Kernels default to the enclosing variable scope's initializer, else glorot_uniform (the
cell's `initializer` overrides both; biases start at zero, a GRU's gates bias at one).
`seed=` (a collflow extension) seeds the default draw, so every rank builds the same weights.
"""
from __future__ import annotations

import contextlib
import numbers
import re
import zlib
from typing import Any, Callable, Iterator, NamedTuple, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError, UnimplementedError
from ..graph import graph as _g
from ..graph import initializers as _init
from ..graph import nest
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import nn_ops as _nn
from ..graph.ops import rnn_ops as _rnn_ops
from ..graph.ops.constant_op import constant
from ..graph.shape import TensorShape, as_shape
from ..graph.variable_scope import VariableScope, get_variable, get_variable_scope, variable_scope
from .layers import _activation

__all__ = ["RNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "LSTMBlockCell", "GRUCell", "LSTMStateTuple"]


class LSTMStateTuple(NamedTuple):
    """The state of an LSTM: cell state c and output h, each [batch, num_units] (h: [batch, num_proj])."""
    c: Any
    h: Any

    @property
    def dtype(self) -> _dt.DType:
        if self.c.dtype != self.h.dtype:
            raise TypeError(f"LSTMStateTuple: c is {self.c.dtype.name}, h is {self.h.dtype.name}")
        return self.c.dtype


def _to_snake_case(name: str) -> str:
    """TensorFlow's default layer name from a class name: LSTMCell -> lstm_cell."""
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    s = re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()
    return s if not s.startswith("_") else "private" + s  # scope names cannot start with '_'


def _depth_of(inputs_shape: Any) -> Optional[int]:
    if isinstance(inputs_shape, (int, np.integer)):
        return int(inputs_shape)
    shp = as_shape(inputs_shape)
    if shp.rank is None or shp.rank == 0:
        return None
    return shp.dims[-1]


def fused_form(cell: Any) -> Optional[Callable]:
    """The cell's whole-sequence form, run(x [time, batch, depth], state, sequence_length)
    (its `fused_sequence()`: one fused op per layer), or None when it has none."""
    make = getattr(cell, "fused_sequence", None)
    return make() if make is not None else None


def _is_structure(x: Any) -> bool:
    """A structure of inputs or sizes (list, tuple, dict), not one tensor, int or TensorShape."""
    return isinstance(x, (list, tuple, dict)) and not isinstance(x, TensorShape)


def prebuild_nested(cell: Any, step_shapes: Any, dtype: Any) -> None:
    """Builds `cell` for a structure of step inputs (their shapes in that structure, as TF
    passes them to build) before a runner's loop."""
    if isinstance(cell, RNNCell) and type(cell).__call__ is RNNCell.__call__:
        cell._ensure_built(step_shapes, dtype)


def prebuild_any(cell: Any, depth_or_shapes: Any, dtype: Any) -> None:
    """prebuild for one input's depth, prebuild_nested for a structure of step shapes."""
    if _is_structure(depth_or_shapes):
        prebuild_nested(cell, depth_or_shapes, dtype)
    else:
        prebuild(cell, int(depth_or_shapes), dtype)


def step_input_of(output_size: Any) -> Any:
    """What a cell stacked on one of `output_size` is built for: its depth, or for a structure
    of outputs the structure of their step shapes."""
    if _is_structure(output_size):
        return nest.pack_sequence_as(output_size, [TensorShape([None, int(n)]) if isinstance(n, (int, np.integer))
                                                   else TensorShape([None]).concatenate(as_shape(n))
                                                   for n in nest.flatten(output_size)])
    return int(output_size) if isinstance(output_size, (int, np.integer)) else as_shape(output_size).dims[-1]


def prebuild(cell: Any, depth: int, dtype: Any) -> None:
    """Builds `cell` for inputs of `depth` features before a runner's loop (once).

    Cells that define their own __call__ (TensorFlow's old style) create their variables
    on their first call instead.
    """
    if isinstance(cell, RNNCell) and type(cell).__call__ is RNNCell.__call__:
        cell._ensure_built(depth, dtype)


class RNNCell:
    """Base of the cells: override `state_size`, `output_size`, `call(inputs, state)` and,
    to create variables, `build(inputs_shape)` with `self.add_variable` (TensorFlow's
    layer style) or collflow's `_build(depth)`.
    """

    built = False
    _scope: Optional[VariableScope] = None
    _reuse: Any = None
    _seed: Optional[int] = None
    _building = False
    _scoped = True           # wrappers open no variable scope of their own
    input_depth: Optional[int] = None
    dtype: Optional[_dt.DType] = None

    def __init__(self, trainable: bool = True, name: Optional[str] = None, dtype: Any = None, reuse: Any = None,
                 seed: Optional[int] = None, **kwargs: Any):
        reuse = kwargs.pop("_reuse", reuse)
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected keyword arguments {sorted(kwargs)}")
        self._trainable = bool(trainable)
        self._name = name
        self._base_name = name or _to_snake_case(type(self).__name__)
        self.dtype = _dt.as_dtype(dtype) if dtype is not None else None
        self._reuse = reuse
        self._seed = seed

    # -- what a cell is ------------------------------------------------------------------
    @property
    def name(self) -> str:
        return getattr(self, "_name", None) or getattr(self, "_base_name", None) or _to_snake_case(type(self).__name__)

    @property
    def state_size(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define state_size")

    @property
    def output_size(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define output_size")

    def _var_lists(self) -> Tuple[list, list]:
        d = self.__dict__
        return d.setdefault("_trainable_vars", []), d.setdefault("_non_trainable_vars", [])

    @property
    def trainable_variables(self) -> list:
        return list(self._var_lists()[0])

    @property
    def non_trainable_variables(self) -> list:
        return list(self._var_lists()[1])

    @property
    def variables(self) -> list:
        t, n = self._var_lists()
        return t + n

    weights = variables
    trainable_weights = trainable_variables
    non_trainable_weights = non_trainable_variables

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        """Zeros of [batch_size, n] for each part of state_size (batch_size an int or a scalar tensor)."""
        dt = _dt.as_dtype(dtype)
        g = _g.get_default_graph()
        with g.name_scope(type(self).__name__.lstrip("_") + "ZeroState"):
            flat = [batch_zeros(batch_size, n, dt) for n in nest.flatten(self.state_size)]
        return nest.pack_sequence_as(self.state_size, flat)

    def get_initial_state(self, inputs: Any = None, batch_size: Any = None, dtype: Any = None) -> Any:
        """zero_state for `inputs`' batch and dtype (or the given ones)."""
        if inputs is not None:
            x = _g.convert_to_tensor(inputs)
            b = x.shape.dims[0] if x.shape.rank else None
            batch_size = b if b is not None else _a.shape(x)[0]
            dtype = dtype or x.dtype
        if batch_size is None or dtype is None:
            raise InvalidArgumentError("get_initial_state needs inputs, or batch_size and dtype")
        return self.zero_state(batch_size, dtype)

    # -- calling and building ------------------------------------------------------------
    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> Tuple[Any, Any]:
        """One step: (output, new state).  The first call creates the variables."""
        if _is_structure(inputs):
            # a structure of inputs (TF's cells take any): built from the structure of shapes
            flat = [_g.convert_to_tensor(t) for t in nest.flatten(inputs)]
            inputs = nest.pack_sequence_as(inputs, flat)
            with self._cell_scope(scope):
                self._build_or_check(nest.pack_sequence_as(inputs, [t.shape for t in flat]),
                                     next((t.dtype for t in flat if t.dtype.is_floating), None))
                return self.call(inputs, state)
        inputs = _g.convert_to_tensor(inputs)
        with self._cell_scope(scope):
            self._build_or_check(inputs.shape, inputs.dtype)
            return self.call(inputs, state)

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        raise NotImplementedError(f"{type(self).__name__} must define call(inputs, state)")

    def build(self, inputs_shape: Any, dtype: Any = None) -> None:
        """Creates the variables for inputs of `inputs_shape` ([batch, depth], or the depth).

        Called once, by the first __call__ (and by the runners before their loop), inside
        the cell's variable scope; calling it directly builds the cell as a call would.
        """
        if self._building:
            if _is_structure(inputs_shape):
                if getattr(self, "_structure_build", False):
                    self._build(inputs_shape)  # a stack or wrapper: built for what its cells get
                    return
                if type(self)._build is not RNNCell._build:
                    raise ValueError(f"{self.name}: takes one input tensor per step, got a structure of "
                                     f"inputs of shapes {inputs_shape}")
                return  # a cell making its variables in call() (or none) needs no depth
            self._build(_depth_of(inputs_shape))
            return
        self._ensure_built(inputs_shape, dtype)

    def _build(self, depth: int) -> None:
        """collflow's cells create their variables here (for inputs of `depth` features)."""

    def _ensure_built(self, inputs_shape: Any, dtype: Any = None, scope: Any = None) -> None:
        with self._cell_scope(scope):
            self._build_or_check(inputs_shape, dtype)

    def _build_or_check(self, inputs_shape: Any, dtype: Any) -> None:
        if _is_structure(inputs_shape):
            if not self.built:
                if self.dtype is None:
                    self.dtype = _dt.as_dtype(dtype) if dtype is not None else _dt.float32
                with _g.get_default_graph().init_scope():
                    self._building = True
                    try:
                        self.build(inputs_shape)
                    finally:
                        self._building = False
                self.built = True
            return
        depth = _depth_of(inputs_shape)
        if self.built:
            if depth is not None and self.input_depth is not None and depth != self.input_depth:
                raise InvalidArgumentError(f"{self.name}: built for inputs of depth {self.input_depth}, called with "
                                           f"depth {depth}")
            return
        if depth is None:
            raise InvalidArgumentError(f"{self.name}: the inputs' last dimension (depth) must be known statically to "
                                       f"build the cell's variables, got inputs of shape {inputs_shape}")
        self.input_depth = int(depth)
        if self.dtype is None:
            self.dtype = _dt.as_dtype(dtype) if dtype is not None else _dt.float32
        g = _g.get_default_graph()
        with g.init_scope():  # variables of a cell first called in a loop or cond live outside it
            self._building = True
            try:
                self.build(TensorShape([None, self.input_depth]))
            finally:
                self._building = False
        self.built = True

    @contextlib.contextmanager
    def _cell_scope(self, scope: Any = None) -> Iterator[None]:
        """The cell's variable scope: made on first use, re-entered with reuse afterwards."""
        if not self._scoped or (self._scope is None and self.built):
            yield  # a wrapper, or weights given directly (no scope to find them in)
            return
        g = _g.get_default_graph()
        if self._scope is None:
            # a subclass that skipped RNNCell.__init__ still gets TensorFlow's default name
            base = getattr(self, "_base_name", None) or _to_snake_case(type(self).__name__)
            if self._reuse:
                cm = variable_scope(scope if scope is not None else base)
            else:
                cm = variable_scope(scope, default_name=base)
            with cm as captured:
                self._scope = captured
        reuse = True if self.built else self._reuse
        with variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False), \
                g.name_scope(self._scope.original_name_scope or None):
            yield

    def add_variable(self, name: str, shape: Any, dtype: Any = None, initializer: Any = None,
                     regularizer: Optional[Callable] = None, trainable: Optional[bool] = None,
                     partitioner: Any = None) -> Any:
        """A variable of this cell, made (or shared) by cf.get_variable in the cell's scope."""
        cell_trainable = getattr(self, "_trainable", True)
        trainable = cell_trainable if trainable is None else bool(trainable) and cell_trainable
        if initializer is None and get_variable_scope().initializer is None and self._seed is not None:
            seed = zlib.crc32(f"{self._seed}/{name}".encode()) & 0x7FFFFFFF
            initializer = _init.GlorotUniform(seed=seed)
        v = get_variable(name, shape, dtype=dtype or self.dtype, initializer=initializer, regularizer=regularizer,
                         trainable=trainable, partitioner=partitioner)
        lst = self._var_lists()[0 if trainable else 1]
        if not any(x is v for x in lst):
            lst.append(v)
        return v

    add_weight = add_variable

    def input_projection(self) -> Optional[Tuple[Callable, Callable]]:
        """(project, step) with step(project(x), state) == cell(x, state), or None.

        project maps [n, depth] inputs to [n, k] (one matmul for all time steps); step runs
        inside the loop.  Build the cell first; the tensors it needs are made here, once.
        """
        return None


def batch_zeros(batch_size: Any, n: Any, dt: _dt.DType) -> _g.Tensor:
    dims = [int(n)] if isinstance(n, (int, np.integer)) else as_shape(n).as_list()
    if isinstance(batch_size, (int, np.integer)):
        return _a.zeros([int(batch_size)] + dims, dtype=dt)
    b = _g.convert_to_tensor(batch_size)
    b = b if b.dtype == _dt.int32 else _m.cast(b, _dt.int32)
    return _a.zeros(_a.stack([b] + [constant(d, dtype=_dt.int32) for d in dims]), dtype=dt)


def _units(cell: str, num_units: Any) -> int:
    if int(num_units) <= 0:
        raise InvalidArgumentError(f"{cell}: num_units must be positive, got {num_units}")
    return int(num_units)


class BasicRNNCell(RNNCell):
    """h' = activation([x, h] . kernel + bias); output and state are h' (tf.nn.rnn_cell.BasicRNNCell).

    Variables: kernel [depth + num_units, num_units], bias [num_units].
    """

    def __init__(self, num_units: int, activation: Any = None, reuse: Any = None, name: Optional[str] = None,
                 dtype: Any = None, **kwargs: Any):
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        self._num_units = _units(type(self).__name__, num_units)
        self._activation = _activation(activation) or _nn.tanh

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    def _build(self, depth: int) -> None:
        self._kernel = self.add_variable("kernel", [depth + self._num_units, self._num_units])
        self._bias = self.add_variable("bias", [self._num_units], initializer=_init.Zeros())

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        h = self._activation(_m.matmul(_a.concat([inputs, state], 1), self._kernel) + self._bias)
        return h, h

    def input_projection(self) -> Optional[Tuple[Callable, Callable]]:
        w_x, w_h = _a.split(self._kernel, [self.input_depth, self._num_units], axis=0)
        bias = _g.convert_to_tensor(self._bias)

        def project(x: _g.Tensor) -> _g.Tensor:
            return _m.matmul(x, w_x) + bias

        def step(p: _g.Tensor, state: Any) -> Tuple[Any, Any]:
            h = self._activation(p + _m.matmul(state, w_h))
            return h, h
        return project, step


class LSTMCell(RNNCell):
    """Long short-term memory cell (tf.nn.rnn_cell.LSTMCell), gates in TensorFlow's order:

        i, j, f, o = split([x, h] . kernel + bias, 4)
        c' = sigmoid(f + forget_bias [+ w_f_diag * c]) * c + sigmoid(i [+ w_i_diag * c]) * act(j)
        h' = sigmoid(o [+ w_o_diag * c']) * act(c')      (then h' . projection/kernel with num_proj)

    Variables: kernel [depth + h_depth, 4 num_units], bias [4 num_units] (zeros), with
    use_peepholes w_f_diag, w_i_diag, w_o_diag [num_units], with num_proj projection/kernel
    [num_units, num_proj] (h_depth = num_proj or num_units).  cell_clip / proj_clip clip c'
    and the projected output.  The state is LSTMStateTuple(c, h), or their concatenation
    with state_is_tuple=False; the output is h'.
    """

    def __init__(self, num_units: int, use_peepholes: bool = False, cell_clip: Optional[float] = None,
                 initializer: Any = None, num_proj: Optional[int] = None, proj_clip: Optional[float] = None,
                 num_unit_shards: Optional[int] = None, num_proj_shards: Optional[int] = None,
                 forget_bias: float = 1.0, state_is_tuple: bool = True, activation: Any = None, reuse: Any = None,
                 name: Optional[str] = None, dtype: Any = None, **kwargs: Any):
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        if num_unit_shards is not None or num_proj_shards is not None:
            raise UnimplementedError("LSTMCell: num_unit_shards/num_proj_shards (deprecated in TensorFlow) are not "
                                     "supported; use a variable_scope partitioner")
        self._num_units = _units(type(self).__name__, num_units)
        if num_proj is not None and int(num_proj) <= 0:
            raise InvalidArgumentError(f"{type(self).__name__}: num_proj must be positive, got {num_proj}")
        self._use_peepholes = bool(use_peepholes)
        self._cell_clip = cell_clip
        self._initializer = _init.get(initializer)
        self._num_proj = int(num_proj) if num_proj is not None else None
        self._proj_clip = proj_clip
        self._forget_bias = float(forget_bias)
        self._state_is_tuple = bool(state_is_tuple)
        self._activation = _activation(activation) or _nn.tanh

    @property
    def _h_depth(self) -> int:
        return self._num_proj or self._num_units

    @property
    def state_size(self) -> Any:
        if self._state_is_tuple:
            return LSTMStateTuple(self._num_units, self._h_depth)
        return self._num_units + self._h_depth

    @property
    def output_size(self) -> int:
        return self._h_depth

    def _build(self, depth: int) -> None:
        n = self._num_units
        self._kernel = self.add_variable("kernel", [depth + self._h_depth, 4 * n], initializer=self._initializer)
        self._bias = self.add_variable("bias", [4 * n], initializer=_init.Zeros())
        if self._use_peepholes:
            self._w_f_diag = self.add_variable("w_f_diag", [n], initializer=self._initializer)
            self._w_i_diag = self.add_variable("w_i_diag", [n], initializer=self._initializer)
            self._w_o_diag = self.add_variable("w_o_diag", [n], initializer=self._initializer)
        if self._num_proj is not None:
            self._proj_kernel = self.add_variable("projection/kernel", [n, self._num_proj],
                                                  initializer=self._initializer)

    def _unpack(self, state: Any) -> Tuple[Any, Any]:
        if self._state_is_tuple:
            if not isinstance(state, (tuple, list)) or len(state) != 2:
                raise InvalidArgumentError(f"{self.name}: the state must be an LSTMStateTuple (c, h), got {state!r}")
            return state[0], state[1]
        c, h = _a.split(state, [self._num_units, self._h_depth], axis=1)
        return c, h

    def _gates(self, gates: _g.Tensor, c: _g.Tensor, forget_bias_added: bool) -> Tuple[Any, Any]:
        if (not self._use_peepholes and self._cell_clip is None and self._activation is _nn.tanh
                and gates.dtype.is_floating):
            # the plain cell: one fused kernel for the gates and the state (TF's LSTMBlockCell)
            new_c, h = _rnn_ops.lstm_block_cell(gates, c, 0.0 if forget_bias_added else self._forget_bias)
            if self._num_proj is not None:
                h = _m.matmul(h, self._proj_kernel)
                if self._proj_clip is not None:
                    h = _m.clip_by_value(h, -self._proj_clip, self._proj_clip)
            state = LSTMStateTuple(new_c, h) if self._state_is_tuple else _a.concat([new_c, h], 1)
            return h, state
        i, j, f, o = _a.split(gates, 4, axis=1)
        if not forget_bias_added and self._forget_bias != 0.0:
            f = f + self._forget_bias
        act = self._activation
        if self._use_peepholes:
            new_c = _nn.sigmoid(f + self._w_f_diag * c) * c + _nn.sigmoid(i + self._w_i_diag * c) * act(j)
        else:
            new_c = c * _nn.sigmoid(f) + _nn.sigmoid(i) * act(j)
        if self._cell_clip is not None:
            new_c = _m.clip_by_value(new_c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            h = _nn.sigmoid(o + self._w_o_diag * new_c) * act(new_c)
        else:
            h = _nn.sigmoid(o) * act(new_c)
        if self._num_proj is not None:
            h = _m.matmul(h, self._proj_kernel)
            if self._proj_clip is not None:
                h = _m.clip_by_value(h, -self._proj_clip, self._proj_clip)
        state = LSTMStateTuple(new_c, h) if self._state_is_tuple else _a.concat([new_c, h], 1)
        return h, state

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        c, h = self._unpack(state)
        gates = _m.matmul(_a.concat([inputs, h], 1), self._kernel) + self._bias
        return self._gates(gates, c, False)

    def input_projection(self) -> Optional[Tuple[Callable, Callable]]:
        n = self._num_units
        w_x, w_h = _a.split(self._kernel, [self.input_depth, self._h_depth], axis=0)
        bias = _g.convert_to_tensor(self._bias)
        if self._forget_bias != 0.0:
            # fold forget_bias into the projected bias: one add per run instead of one per step
            fb = np.zeros((4 * n,), self.dtype.np)  # type: ignore[union-attr]
            fb[2 * n:3 * n] = self._forget_bias
            bias = bias + constant(fb)

        def project(x: _g.Tensor) -> _g.Tensor:
            return _m.matmul(x, w_x) + bias

        def step(p: _g.Tensor, state: Any) -> Tuple[Any, Any]:
            c, h = self._unpack(state)
            return self._gates(p + _m.matmul(h, w_h), c, True)
        return project, step

    def fused_sequence(self) -> Optional[Callable]:
        """run(x [time, batch, depth], state, sequence_length=None) -> (h of every step
        [time, batch, n], final state) for dynamic_rnn to run the whole sequence as one fused
        op (rnn_ops.block_lstm: the input projection inside it; past its length a row's state
        repeats; peepholes, cell_clip, num_proj and proj_clip inside it too), or None when this
        cell's options need the per-step loop (another activation, a clip that is no number >= 0)."""
        def plain(v: Any) -> bool:
            return v is None or (isinstance(v, numbers.Real) and v >= 0)
        if self._activation is not _nn.tanh or not plain(self._cell_clip) or not plain(self._proj_clip):
            return None
        peep = (self._w_i_diag, self._w_f_diag, self._w_o_diag) if self._use_peepholes else None
        proj = self._proj_kernel if self._num_proj is not None else None

        def run(x: _g.Tensor, state: Any, sequence_length: Any = None) -> Tuple[Any, Any]:
            c0, h0 = self._unpack(state)
            hs, cs = _rnn_ops.block_lstm(x, h0, c0, self._kernel, self._bias, forget_bias=self._forget_bias,
                                         sequence_length=sequence_length, peepholes=peep, cell_clip=self._cell_clip,
                                         projection=proj, proj_clip=self._proj_clip if proj is not None else None)
            c_last, h_last = _last_step(cs, c0), _last_step(hs, h0)
            state = LSTMStateTuple(c_last, h_last) if self._state_is_tuple else _a.concat([c_last, h_last], 1)
            return hs, state
        return run


def _last_step(seq: _g.Tensor, initial: _g.Tensor) -> _g.Tensor:
    """The last step of seq [time, batch, n], or initial when it has no steps (TF1's final
    state after a loop of no iterations): [initial, seq[-1:]][-1], copying two steps at most."""
    return _a.concat([_a.expand_dims(initial, 0), seq[-1:]], 0)[-1]


class BasicLSTMCell(LSTMCell):
    """LSTMCell without peepholes, clipping or projection (tf.nn.rnn_cell.BasicLSTMCell).

    Variables basic_lstm_cell/kernel and basic_lstm_cell/bias.
    """

    def __init__(self, num_units: int, forget_bias: float = 1.0, state_is_tuple: bool = True, activation: Any = None,
                 reuse: Any = None, name: Optional[str] = None, dtype: Any = None, **kwargs: Any):
        super().__init__(num_units, forget_bias=forget_bias, state_is_tuple=state_is_tuple, activation=activation,
                         reuse=reuse, name=name, dtype=dtype, **kwargs)


class LSTMBlockCell(LSTMCell):
    """tf.contrib.rnn.LSTMBlockCell: LSTMCell's math and variable names (lstm_cell/kernel,
    lstm_cell/bias, w_*_diag with use_peephole) with TF's block-cell arguments; each step is
    the fused LSTMBlockCell op, a whole sequence in dynamic_rnn one BlockLSTM op."""

    def __init__(self, num_units: int, forget_bias: float = 1.0, cell_clip: Optional[float] = None,
                 use_peephole: bool = False, dtype: Any = None, reuse: Any = None, name: Optional[str] = "lstm_cell",
                 **kwargs: Any):
        super().__init__(num_units, use_peepholes=use_peephole, cell_clip=block_cell_clip(cell_clip),
                         forget_bias=forget_bias, reuse=reuse, name=name, dtype=dtype, **kwargs)


def block_cell_clip(cell_clip: Optional[float]) -> Optional[float]:
    """TF's block cells' cell_clip as LSTMCell's: their kernels clip only when it is > 0 (their
    default -1, or 0, means no clipping), where LSTMCell clips at any value given."""
    return None if cell_clip is None or float(cell_clip) <= 0 else cell_clip


class GRUCell(RNNCell):
    """Gated recurrent unit (tf.nn.rnn_cell.GRUCell, Cho et al. 2014):

        r, u = split(sigmoid([x, h] . gates/kernel + gates/bias), 2)
        c = act([x, r * h] . candidate/kernel + candidate/bias)
        h' = u * h + (1 - u) * c

    gates/bias starts at 1 (bias_initializer overrides it and candidate/bias, zeros).
    """

    def __init__(self, num_units: int, activation: Any = None, reuse: Any = None, kernel_initializer: Any = None,
                 bias_initializer: Any = None, name: Optional[str] = None, dtype: Any = None, **kwargs: Any):
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        self._num_units = _units(type(self).__name__, num_units)
        self._activation = _activation(activation) or _nn.tanh
        self._kernel_initializer = _init.get(kernel_initializer)
        self._bias_initializer = _init.get(bias_initializer)

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    def _build(self, depth: int) -> None:
        n = self._num_units
        ki, bi = self._kernel_initializer, self._bias_initializer
        self._gate_kernel = self.add_variable("gates/kernel", [depth + n, 2 * n], initializer=ki)
        self._gate_bias = self.add_variable("gates/bias", [2 * n], initializer=bi or _init.Constant(1.0))
        self._candidate_kernel = self.add_variable("candidate/kernel", [depth + n, n], initializer=ki)
        self._candidate_bias = self.add_variable("candidate/bias", [n], initializer=bi or _init.Zeros())

    def _finish(self, gates: _g.Tensor, x_candidate: Optional[_g.Tensor], inputs: Optional[_g.Tensor],
                state: _g.Tensor, w_ch: Optional[_g.Tensor]) -> Tuple[Any, Any]:
        r, u = _a.split(_nn.sigmoid(gates), 2, axis=1)
        if x_candidate is None:
            cand = _m.matmul(_a.concat([inputs, r * state], 1), self._candidate_kernel) + self._candidate_bias
        else:
            cand = x_candidate + _m.matmul(r * state, w_ch)
        c = self._activation(cand)
        h = u * state + (1 - u) * c
        return h, h

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        gates = _m.matmul(_a.concat([inputs, state], 1), self._gate_kernel) + self._gate_bias
        return self._finish(gates, None, inputs, state, None)

    def input_projection(self) -> Optional[Tuple[Callable, Callable]]:
        n, d = self._num_units, self.input_depth
        g_x, g_h = _a.split(self._gate_kernel, [d, n], axis=0)
        c_x, c_h = _a.split(self._candidate_kernel, [d, n], axis=0)
        w_x = _a.concat([g_x, c_x], 1)                          # [depth, 3n]: both x parts in one matmul
        bias = _a.concat([_g.convert_to_tensor(self._gate_bias), _g.convert_to_tensor(self._candidate_bias)], 0)

        def project(x: _g.Tensor) -> _g.Tensor:
            return _m.matmul(x, w_x) + bias

        def step(p: _g.Tensor, state: Any) -> Tuple[Any, Any]:
            p_g, p_c = _a.split(p, [2 * n, n], axis=1)
            return self._finish(p_g + _m.matmul(state, g_h), p_c, None, state, c_h)
        return project, step

    def fused_sequence(self) -> Optional[Callable]:
        """run(x [time, batch, depth], state, sequence_length=None) -> (h of every step
        [time, batch, n], final h) for dynamic_rnn to run the whole sequence as one fused op
        (rnn_ops.block_gru, after one GEMM projecting every step's input; past its length a
        row's state repeats), or None when the activation is not tanh."""
        proj = self.input_projection() if self._activation is _nn.tanh else None
        if proj is None:  # another activation, or a subclass that projects per step
            return None
        project = proj[0]
        n, d = self._num_units, self.input_depth
        g_h = _a.split(self._gate_kernel, [d, n], axis=0)[1]
        c_h = _a.split(self._candidate_kernel, [d, n], axis=0)[1]

        def run(x: _g.Tensor, state: Any, sequence_length: Any = None) -> Tuple[Any, Any]:
            dims = _a.shape(x)
            t, b = (x.shape.dims[k] if x.shape.dims[k] is not None else dims[k] for k in (0, 1))
            p = _a.reshape(project(_a.reshape(x, (-1, d))), [t, b, 3 * n])
            hs = _rnn_ops.block_gru(p, state, g_h, c_h, sequence_length=sequence_length)
            return hs, _last_step(hs, state)
        return run
