"""tf.contrib.rnn beyond the core cells: stacked bidirectional RNNs, the layer-normalised
LSTM cell and the projection wrappers TF1 programs use (TF 1.15's variable names).

    outputs, states_fw, states_bw = cf.contrib.rnn.stack_bidirectional_dynamic_rnn(
        [cf.contrib.rnn.LSTMCell(64)] * 2 ..., inputs, sequence_length=lengths, dtype=cf.float32)

`stack_bidirectional_dynamic_rnn` puts layer i under stack_bidirectional_rnn/cell_i/
bidirectional_rnn/{fw,bw}/..., `stack_bidirectional_rnn` (the static form) under
stack_bidirectional_rnn/cell_i/{fw,bw}/...; each layer reads the previous one's forward
and backward outputs concatenated.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Optional, Sequence, Tuple

from ..graph import graph as _g
from ..graph import nest
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import nn_impl, nn_ops as _nn
from ..graph.ops.conv3d_ops import conv3d
from ..graph.ops.nn_extra_ops import conv1d
from ..graph.shape import TensorShape
from ..graph.variable_scope import get_variable, get_variable_scope, variable_scope
from .. import initializers as _init
from ..nn.rnn import bidirectional_dynamic_rnn, static_bidirectional_rnn
from ..nn.rnn_cells import LSTMStateTuple, RNNCell, prebuild

__all__ = ["stack_bidirectional_rnn", "stack_bidirectional_dynamic_rnn", "LayerNormBasicLSTMCell",
           "OutputProjectionWrapper", "InputProjectionWrapper", "EmbeddingWrapper", "ConvLSTMCell",
           "Conv1DLSTMCell", "Conv2DLSTMCell", "Conv3DLSTMCell", "FusedRNNCellAdaptor", "TimeReversedFusedRNN"]


def _check_stack(cells_fw: Any, cells_bw: Any, initial_states_fw: Any, initial_states_bw: Any) -> None:
    # TF 1.15's checks and messages
    if not cells_fw:
        raise ValueError("Must specify at least one fw cell for BidirectionalRNN.")
    if not cells_bw:
        raise ValueError("Must specify at least one bw cell for BidirectionalRNN.")
    if not isinstance(cells_fw, list):
        raise ValueError("cells_fw must be a list of RNNCells (one per layer).")
    if not isinstance(cells_bw, list):
        raise ValueError("cells_bw must be a list of RNNCells (one per layer).")
    if len(cells_fw) != len(cells_bw):
        raise ValueError("Forward and Backward cells must have the same depth.")
    for what, states in (("fw", initial_states_fw), ("bw", initial_states_bw)):
        if states is not None and (not isinstance(states, list) or len(states) != len(cells_fw)):
            raise ValueError(f"initial_states_{what} must be a list of state tensors (one per layer).")


def stack_bidirectional_rnn(cells_fw: list, cells_bw: list, inputs: Any, initial_states_fw: Any = None,
                            initial_states_bw: Any = None, dtype: Any = None, sequence_length: Any = None,
                            scope: Any = None) -> Tuple[list, tuple, tuple]:
    """Layers of static_bidirectional_rnn: (outputs, a list of [batch, fw + bw] per step;
    the forward final states, one per layer; the backward ones)."""
    _check_stack(cells_fw, cells_bw, initial_states_fw, initial_states_bw)
    states_fw, states_bw = [], []
    layer = inputs
    with variable_scope(scope or "stack_bidirectional_rnn"):
        for i, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw)):
            with variable_scope(f"cell_{i}") as cell_scope:
                layer, st_fw, st_bw = static_bidirectional_rnn(
                    cell_fw, cell_bw, layer, initial_state_fw=initial_states_fw[i] if initial_states_fw else None,
                    initial_state_bw=initial_states_bw[i] if initial_states_bw else None,
                    sequence_length=sequence_length, dtype=dtype, scope=cell_scope)
            states_fw.append(st_fw)
            states_bw.append(st_bw)
    return layer, tuple(states_fw), tuple(states_bw)


def stack_bidirectional_dynamic_rnn(cells_fw: list, cells_bw: list, inputs: Any, initial_states_fw: Any = None,
                                    initial_states_bw: Any = None, dtype: Any = None, sequence_length: Any = None,
                                    parallel_iterations: Optional[int] = None, time_major: bool = False,
                                    scope: Any = None, swap_memory: bool = False) -> Tuple[_g.Tensor, tuple, tuple]:
    """Layers of bidirectional_dynamic_rnn: (outputs [batch, time, fw + bw] (time-major if
    time_major); the forward final states, one per layer; the backward ones)."""
    _check_stack(cells_fw, cells_bw, initial_states_fw, initial_states_bw)
    states_fw, states_bw = [], []
    layer = inputs
    with variable_scope(scope or "stack_bidirectional_rnn"):
        for i, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw)):
            with variable_scope(f"cell_{i}"):
                outputs, (st_fw, st_bw) = bidirectional_dynamic_rnn(
                    cell_fw, cell_bw, layer, initial_state_fw=initial_states_fw[i] if initial_states_fw else None,
                    initial_state_bw=initial_states_bw[i] if initial_states_bw else None,
                    sequence_length=sequence_length, parallel_iterations=parallel_iterations, dtype=dtype,
                    swap_memory=swap_memory, time_major=time_major)
                layer = _a.concat(outputs, 2)
            states_fw.append(st_fw)
            states_bw.append(st_bw)
    return layer, tuple(states_fw), tuple(states_bw)


def _activation(fn: Any) -> Callable:
    return fn if fn is not None else _nn.tanh


class LayerNormBasicLSTMCell(RNNCell):
    """tf.contrib.rnn.LayerNormBasicLSTMCell: a basic LSTM whose four gate pre-activations and
    new cell state are layer-normalised (Ba et al. 2016), with recurrent dropout on the
    candidate (Semeniuta et al. 2016).

        i, j, f, o = split([x, h] . kernel (+ bias without layer_norm), 4)
        i, j, f, o = LN_input(i), LN_transform(j), LN_forget(f), LN_output(o)
        c' = LN_state(c * sigmoid(f + forget_bias) + sigmoid(i) * dropout(act(j)))
        h' = act(c') * sigmoid(o)

    Variables layer_norm_basic_lstm_cell/kernel, then {input,transform,forget,output,state}/
    gamma (starting at norm_gain) and /beta (norm_shift); bias only with layer_norm=False.
    Each LN is contrib.layers.layer_norm (epsilon 1e-12).
    """

    def __init__(self, num_units: int, forget_bias: float = 1.0, input_size: Any = None, activation: Any = None,
                 layer_norm: bool = True, norm_gain: float = 1.0, norm_shift: float = 0.0,
                 dropout_keep_prob: Any = 1.0, dropout_prob_seed: Optional[int] = None, reuse: Any = None):
        super().__init__(reuse=reuse)
        if input_size is not None:
            warnings.warn(f"{self}: The input_size parameter is deprecated.", stacklevel=2)
        self._num_units = int(num_units)
        self._activation = _activation(activation)
        self._forget_bias = forget_bias
        self._keep_prob = dropout_keep_prob
        self._drop_seed = dropout_prob_seed
        self._layer_norm = bool(layer_norm)
        self._norm_gain = norm_gain
        self._norm_shift = norm_shift

    @property
    def state_size(self) -> Any:
        return LSTMStateTuple(self._num_units, self._num_units)

    @property
    def output_size(self) -> int:
        return self._num_units

    _NORMS = ("input", "transform", "forget", "output", "state")

    def _build(self, depth: int) -> None:
        n = self._num_units
        self._kernel = self.add_variable("kernel", [depth + n, 4 * n])
        self._bias = None if self._layer_norm else self.add_variable("bias", [4 * n])
        self._norm_params = {}
        if self._layer_norm:
            for part in self._NORMS:
                with variable_scope(part):
                    gamma = self.add_variable("gamma", [n], initializer=_init.Constant(self._norm_gain))
                    beta = self.add_variable("beta", [n], initializer=_init.Constant(self._norm_shift))
                self._norm_params[part] = (gamma, beta)

    def _norm(self, x: _g.Tensor, part: str) -> _g.Tensor:
        # contrib.layers.layer_norm's math over the features (TF calls it with reuse=True on
        # these variables, so they stay out of MODEL_VARIABLES)
        gamma, beta = self._norm_params[part]
        with _g.get_default_graph().name_scope(part):
            mean, variance = _nn.moments(x, [1], keep_dims=True)
            return nn_impl.batch_normalization(x, mean, variance, beta, gamma, 1e-12)

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        c, h = state
        gates = _m.matmul(_a.concat([inputs, h], 1), self._kernel)
        if self._bias is not None:
            gates = _nn.bias_add(gates, self._bias)
        i, j, f, o = _a.split(gates, 4, axis=1)
        if self._layer_norm:
            i, j, f, o = (self._norm(t, p) for t, p in zip((i, j, f, o), self._NORMS))
        g = self._activation(j)
        keep = self._keep_prob
        if isinstance(keep, _g.Tensor) or not isinstance(keep, float) or keep < 1:
            g = _nn.dropout(g, keep, seed=self._drop_seed)
        new_c = c * _nn.sigmoid(f + self._forget_bias) + _nn.sigmoid(i) * g
        if self._layer_norm:
            new_c = self._norm(new_c, "state")
        new_h = self._activation(new_c) * _nn.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)


class _ProjectionWrapper(RNNCell):
    """A wrapped cell plus a dense projection, under the wrapper's own variable scope
    (rnn/output_projection_wrapper/kernel, .../bias, .../basic_rnn_cell/kernel)."""

    def __init__(self, cell: Any, what: str, activation: Any, reuse: Any):
        super().__init__(reuse=reuse)
        if not (callable(cell) and hasattr(cell, "state_size") and hasattr(cell, "output_size")):
            raise TypeError(f"The parameter cell is not RNNCell. ({what})")
        self._cell = cell
        self._proj_activation = activation

    @property
    def state_size(self) -> Any:
        return self._cell.state_size

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with _g.get_default_graph().name_scope(type(self).__name__ + "ZeroState"):
            return self._cell.zero_state(batch_size, dtype)

    # the cell's variables, then the projection's (TF's order: the cell is built first for
    # an output projection, after it for an input projection; both list it first)
    @property
    def trainable_variables(self) -> list:
        return list(getattr(self._cell, "trainable_variables", [])) + self._var_lists()[0]

    @property
    def non_trainable_variables(self) -> list:
        return list(getattr(self._cell, "non_trainable_variables", [])) + self._var_lists()[1]

    @property
    def variables(self) -> list:
        return self.trainable_variables + self.non_trainable_variables

    weights = variables
    trainable_weights = trainable_variables
    non_trainable_weights = non_trainable_variables

    def _linear(self, depth: int, size: int) -> None:
        self._kernel = self.add_variable("kernel", [depth, size])
        self._bias = self.add_variable("bias", [size], initializer=_init.Zeros())

    def _project(self, x: _g.Tensor) -> _g.Tensor:
        y = _nn.bias_add(_m.matmul(x, self._kernel), self._bias)
        return self._proj_activation(y) if self._proj_activation is not None else y


class OutputProjectionWrapper(_ProjectionWrapper):
    """The wrapped cell's output projected to `output_size` (a dense layer, then `activation`)."""

    def __init__(self, cell: Any, output_size: int, activation: Any = None, reuse: Any = None):
        super().__init__(cell, "OutputProjectionWrapper", activation, reuse)
        if int(output_size) < 1:
            raise ValueError(f"Parameter output_size must be > 0: {output_size}.")
        self._output_size = int(output_size)

    @property
    def output_size(self) -> int:
        return self._output_size

    def _build(self, depth: int) -> None:
        prebuild(self._cell, depth, self.dtype)  # the cell's variables first, as TF's first call
        self._linear(int(nest.flatten(self._cell.output_size)[0]), self._output_size)

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        output, new_state = self._cell(inputs, state)
        return self._project(output), new_state


class InputProjectionWrapper(_ProjectionWrapper):
    """The inputs projected to `num_proj` features (a dense layer, then `activation`) before the cell."""

    def __init__(self, cell: Any, num_proj: int, initializer: Any = None, input_size: Any = None,
                 activation: Any = None, reuse: Any = None):
        super().__init__(cell, "InputProjectionWrapper", activation, reuse)
        if initializer is not None:
            warnings.warn(f"{self}: The initializer parameter is deprecated.", stacklevel=2)
        if input_size is not None:
            warnings.warn(f"{self}: The input_size parameter is deprecated.", stacklevel=2)
        self._num_proj = int(num_proj)

    @property
    def output_size(self) -> Any:
        return self._cell.output_size

    def _build(self, depth: int) -> None:
        self._linear(depth, self._num_proj)  # TF projects first, then calls the cell
        prebuild(self._cell, self._num_proj, self.dtype)

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        return self._cell(self._project(inputs), state)


class EmbeddingWrapper(_ProjectionWrapper):
    """Symbol ids [batch] (or [batch, 1]) embedded before the wrapped cell: TF 1.15's variable
    embedding_wrapper/embedding [embedding_classes, embedding_size] (initializer, else the
    scope's, else uniform(-sqrt 3, sqrt 3): variance 1), of the state's dtype; static_rnn
    takes such rank-1 inputs for it, as TF's does."""

    def __init__(self, cell: Any, embedding_classes: int, embedding_size: int, initializer: Any = None,
                 reuse: Any = None):
        super().__init__(cell, "EmbeddingWrapper", None, reuse)
        if embedding_classes <= 0 or embedding_size <= 0:
            raise ValueError(f"Both embedding_classes and embedding_size must be > 0: {embedding_classes}, "
                             f"{embedding_size}.")
        self._classes = int(embedding_classes)
        self._size = int(embedding_size)
        self._initializer = initializer
        self._embedding = None

    @property
    def output_size(self) -> Any:
        return self._cell.output_size

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> Tuple[Any, Any]:
        ids = _g.convert_to_tensor(inputs)
        with self._cell_scope(scope):
            if self._embedding is None:
                init = self._initializer or get_variable_scope().initializer
                if init is None:
                    init = _init.RandomUniform(-math.sqrt(3), math.sqrt(3))
                dtype = nest.flatten(state)[0].dtype
                with _g.get_default_graph().init_scope():
                    self._embedding = get_variable("embedding", [self._classes, self._size], dtype=dtype,
                                                   initializer=init)
                self._var_lists()[0].append(self._embedding)
                self.dtype = dtype
                self.built = True
            embedded = _nn.embedding_lookup(self._embedding, _a.reshape(ids, [-1]))
            return self._cell(embedded, state)

    call = __call__


class ConvLSTMCell(RNNCell):
    """tf.contrib.rnn.ConvLSTMCell (Shi et al. 2015): an LSTM whose gates are SAME
    convolutions of [inputs, h] over 1-3 spatial dimensions.

        i, j, f, o = split(conv([x, h], kernel) + biases, 4, channels)
        c' = sigmoid(f + forget_bias) c + sigmoid(i) tanh(j);  h' = tanh(c') sigmoid(o)

    input_shape: one step's shape without the batch ([..spatial, channels]); the state is
    LSTMStateTuple(c, h) of [..spatial, output_channels]; skip_connection appends the inputs
    to the output's channels (not to h: TF 1.15 put them in the state too, which changed its
    shape, so no loop could run it).  Variables <name>/kernel [*kernel_shape, in + out, 4 out] and
    <name>/biases.  dynamic_rnn runs it over [batch, time, ..spatial, channels] inputs.
    """

    def __init__(self, conv_ndims: int, input_shape: Sequence[int], output_channels: int, kernel_shape: Sequence[int],
                 use_bias: bool = True, skip_connection: bool = False, forget_bias: float = 1.0,
                 initializers: Any = None, name: str = "conv_lstm_cell"):
        super().__init__(name=name)
        if conv_ndims != len(input_shape) - 1:
            raise ValueError(f"Invalid input_shape {list(input_shape)} for conv_ndims={conv_ndims}.")
        self._conv_ndims = int(conv_ndims)
        self._input_shape = [int(d) for d in input_shape]
        self._output_channels = int(output_channels)
        self._kernel_shape = [int(k) for k in kernel_shape]
        self._use_bias = bool(use_bias)
        self._forget_bias = forget_bias
        self._skip_connection = bool(skip_connection)
        out = self._output_channels + (self._input_shape[-1] if self._skip_connection else 0)
        self._state_shape = TensorShape(self._input_shape[:-1] + [self._output_channels])
        self._output_shape = TensorShape(self._input_shape[:-1] + [out])

    @property
    def state_size(self) -> Any:
        return LSTMStateTuple(self._state_shape, self._state_shape)

    @property
    def output_size(self) -> Any:
        return self._output_shape

    def _build(self, depth: int) -> None:
        n = 4 * self._output_channels
        self._kernel = self.add_variable("kernel", self._kernel_shape + [depth + self._output_channels, n])
        self._biases = self.add_variable("biases", [n], initializer=_init.Zeros()) if self._use_bias else None

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        c, h = state
        x = _a.concat([inputs, h], self._conv_ndims + 1)
        if self._conv_ndims == 1:
            y = conv1d(x, self._kernel, 1, "SAME")
        elif self._conv_ndims == 2:
            y = _nn.conv2d(x, self._kernel, [1, 1, 1, 1], "SAME")
        else:
            y = conv3d(x, self._kernel, [1] * 5, "SAME")
        if self._biases is not None:
            y = y + self._biases
        i, j, f, o = _a.split(y, 4, axis=self._conv_ndims + 1)
        new_c = _nn.sigmoid(f + self._forget_bias) * c + _nn.sigmoid(i) * _nn.tanh(j)
        new_h = _nn.tanh(new_c) * _nn.sigmoid(o)
        # the state keeps h alone (TF 1.15 put the skip-connected output there, so its state
        # changed shape and dynamic_rnn refused the loop)
        out = _a.concat([new_h, inputs], -1) if self._skip_connection else new_h
        return out, LSTMStateTuple(new_c, new_h)


class Conv1DLSTMCell(ConvLSTMCell):
    """ConvLSTMCell over one spatial dimension (name "conv_1d_lstm_cell")."""

    def __init__(self, name: str = "conv_1d_lstm_cell", **kwargs: Any):
        super().__init__(conv_ndims=1, name=name, **kwargs)


class Conv2DLSTMCell(ConvLSTMCell):
    """ConvLSTMCell over images (name "conv_2d_lstm_cell")."""

    def __init__(self, name: str = "conv_2d_lstm_cell", **kwargs: Any):
        super().__init__(conv_ndims=2, name=name, **kwargs)


class Conv3DLSTMCell(ConvLSTMCell):
    """ConvLSTMCell over volumes (name "conv_3d_lstm_cell")."""

    def __init__(self, name: str = "conv_3d_lstm_cell", **kwargs: Any):
        super().__init__(conv_ndims=3, name=name, **kwargs)


class FusedRNNCellAdaptor:
    """tf.contrib.rnn.FusedRNNCellAdaptor: an RNNCell behind the fused-cell interface,
    cell(inputs [time, batch, depth] or a list of steps, initial_state, dtype, sequence_length,
    scope) -> (outputs of the same form, state), through static_rnn or (use_dynamic_rnn)
    time-major dynamic_rnn."""

    def __init__(self, cell: Any, use_dynamic_rnn: bool = False):
        self._cell = cell
        self._use_dynamic_rnn = bool(use_dynamic_rnn)

    def __call__(self, inputs: Any, initial_state: Any = None, dtype: Any = None, sequence_length: Any = None,
                 scope: Any = None) -> Tuple[Any, Any]:
        from ..nn.rnn import dynamic_rnn, static_rnn
        is_list = isinstance(inputs, list)
        if self._use_dynamic_rnn:
            x = _a.stack(inputs) if is_list else inputs
            outputs, state = dynamic_rnn(self._cell, x, sequence_length=sequence_length, initial_state=initial_state,
                                         dtype=dtype, time_major=True, scope=scope)
            return (_a.unstack(outputs) if is_list else outputs), state
        steps = inputs if is_list else _a.unstack(inputs)
        outputs, state = static_rnn(self._cell, steps, initial_state=initial_state, dtype=dtype,
                                    sequence_length=sequence_length, scope=scope)
        return (outputs if is_list else _a.stack(outputs)), state


class TimeReversedFusedRNN:
    """tf.contrib.rnn.TimeReversedFusedRNN: a fused cell run over the time-reversed inputs
    (each sequence within its length, given sequence_length; a list of steps is reversed
    whole, as TF's), its outputs reversed back: the backward half of a fused bidirectional RNN."""

    def __init__(self, cell: Any):
        self._cell = cell

    @staticmethod
    def _reverse(t: Any, lengths: Any) -> Any:
        from ..graph.ops.reverse_ops import reverse, reverse_sequence
        if isinstance(t, list):
            return list(reversed(t))
        if lengths is None:
            return reverse(t, [0])
        return reverse_sequence(t, lengths, seq_axis=0, batch_axis=1)

    def __call__(self, inputs: Any, initial_state: Any = None, dtype: Any = None, sequence_length: Any = None,
                 scope: Any = None) -> Tuple[Any, Any]:
        outputs, state = self._cell(self._reverse(inputs, sequence_length), initial_state=initial_state, dtype=dtype,
                                    sequence_length=sequence_length, scope=scope)
        return self._reverse(outputs, sequence_length), state
