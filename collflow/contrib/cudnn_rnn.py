"""tf.contrib.cudnn_rnn (TF 1.15): the cuDNN RNN layers CudnnLSTM, CudnnGRU, CudnnRNNTanh and
CudnnRNNRelu, and the cells CudnnCompatibleLSTMCell / CudnnCompatibleGRUCell that compute the
same math step by step.  collflow has no cuDNN: the layers run anywhere on collflow's kernels.

    lstm = cf.contrib.cudnn_rnn.CudnnLSTM(num_layers=2, num_units=128, direction="bidirectional")
    outputs, (h, c) = lstm(inputs)     # inputs [time, batch, depth]; h, c [2 * 2, batch, 128]

cuDNN's math (per layer and direction, gates on x_t and h_{t-1}, each with its own two biases):
  LSTM  i, f, o = sigmoid(W x + b_w + R h + b_r); c~ = tanh(...); c' = f c + i c~; h' = o tanh(c')
        (LSTMBlockCell's with forget_bias 0: the two biases of a gate only appear summed)
  GRU   r, z = sigmoid(W x + b_w + R h + b_r); h~ = tanh(W_h x + b_wh + r * (R_h h + b_rh));
        h' = (1 - z) h~ + z h   (the reset gate applied after the recurrent matmul)
  tanh / relu  h' = act(W x + b_w + R h + b_r)
Layer l > 0 reads layer l-1's outputs (forward and backward concatenated), through dropout when
training.  With sequence_lengths, outputs past a row's length are zeros and the final states are
taken at its length (the backward direction reads each row reversed within its length).

Parameters.  TensorFlow keeps one opaque cuDNN buffer ("opaque_kernel") and, through a custom
saveable, writes it to checkpoints as the canonical weights of the compatible cells:
<scope>/rnn/multi_rnn_cell/cell_<l>/cudnn_compatible_lstm_cell/{kernel,bias} (unidirectional) or
<scope>/stack_bidirectional_rnn/cell_<l>/bidirectional_rnn/{fw,bw}/... (bidirectional); GRU uses
cudnn_compatible_gru_cell/{gates,candidate/input_projection,candidate/hidden_projection}/
{kernel,bias}, tanh/relu basic_rnn_cell/{kernel,bias}, and the two biases of a gate are saved as
their sum.  collflow's layer keeps exactly those canonical variables, under exactly those names,
instead of an opaque buffer: every Saver (no custom saveable to keep in step with collflow's Saver)
then writes TF's layout, and a checkpoint of the layer restores into the compatible cells under
dynamic_rnn / stack_bidirectional_dynamic_rnn and back.  <scope> is the variable scope build()
ran in: the layer's own (e.g. "cudnn_lstm") when the first call builds it, the caller's when
build() is called directly (TF's saveable is made there too).  The layer runs those cells, one
dynamic_rnn (a fused BlockLSTM op for LSTM) per layer and direction.  `kernel` is a flat
concatenation of the canonical variables (a tensor; TF's is the opaque variable).
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

from .. import dtypes as _dt
from ..errors import UnimplementedError
from ..graph import graph as _g
from ..graph import initializers as _init
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import nn_ops as _nn
from ..graph.shape import TensorShape
from ..graph.variable_scope import get_variable, get_variable_scope, variable_scope
from ..nn.layer_classes import Layer
from ..nn.rnn import bidirectional_dynamic_rnn, dynamic_rnn
from ..nn.rnn_cells import BasicRNNCell, GRUCell, LSTMBlockCell, LSTMStateTuple

__all__ = ["CudnnLSTM", "CudnnGRU", "CudnnRNNTanh", "CudnnRNNRelu", "CudnnCompatibleLSTMCell",
           "CudnnCompatibleGRUCell", "CUDNN_RNN_UNIDIRECTION", "CUDNN_RNN_BIDIRECTION", "CUDNN_LSTM", "CUDNN_GRU",
           "CUDNN_RNN_RELU", "CUDNN_RNN_TANH", "CUDNN_LSTM_PARAMS_PER_LAYER", "CUDNN_GRU_PARAMS_PER_LAYER",
           "CUDNN_RNN_TANH_PARAMS_PER_LAYER", "CUDNN_RNN_RELU_PARAMS_PER_LAYER", "CUDNN_INPUT_LINEAR_MODE",
           "CUDNN_INPUT_SKIP_MODE", "CUDNN_INPUT_AUTO_MODE"]

CUDNN_RNN_UNIDIRECTION = "unidirectional"
CUDNN_RNN_BIDIRECTION = "bidirectional"
CUDNN_LSTM = "lstm"
CUDNN_GRU = "gru"
CUDNN_RNN_RELU = "rnn_relu"
CUDNN_RNN_TANH = "rnn_tanh"
# cuDNN's canonical tensors per layer and direction: half on the inputs, half on the state
CUDNN_LSTM_PARAMS_PER_LAYER = 8
CUDNN_GRU_PARAMS_PER_LAYER = 6
CUDNN_RNN_TANH_PARAMS_PER_LAYER = 2
CUDNN_RNN_RELU_PARAMS_PER_LAYER = 2
CUDNN_INPUT_LINEAR_MODE = "linear_input"
CUDNN_INPUT_SKIP_MODE = "skip_input"
CUDNN_INPUT_AUTO_MODE = "auto_select"


def check_direction(direction: str) -> None:
    """TF's check: 'unidirectional' or 'bidirectional'."""
    if direction not in (CUDNN_RNN_UNIDIRECTION, CUDNN_RNN_BIDIRECTION):
        raise ValueError(f"Invalid direction: {direction}, expecting {CUDNN_RNN_UNIDIRECTION} or "
                         f"{CUDNN_RNN_BIDIRECTION}")


def check_input_mode(input_mode: str) -> None:
    """TF's check: 'linear_input', 'skip_input' or 'auto_select'."""
    if input_mode not in (CUDNN_INPUT_LINEAR_MODE, CUDNN_INPUT_SKIP_MODE, CUDNN_INPUT_AUTO_MODE):
        raise ValueError(f"Invalid input_mode: {input_mode}, expect one of ({CUDNN_INPUT_LINEAR_MODE}, "
                         f"{CUDNN_INPUT_SKIP_MODE}, {CUDNN_INPUT_AUTO_MODE})")


# -- the compatible cells ------------------------------------------------------------------------

class CudnnCompatibleLSTMCell(LSTMBlockCell):
    """tf.contrib.cudnn_rnn.CudnnCompatibleLSTMCell: LSTMBlockCell with forget_bias 0, no clipping
    and no peepholes, named cudnn_compatible_lstm_cell; reads CudnnLSTM's checkpoints."""

    def __init__(self, num_units: int, reuse: Any = None):
        super().__init__(num_units, forget_bias=0.0, cell_clip=None, use_peephole=False, reuse=reuse,
                         name="cudnn_compatible_lstm_cell")


class CudnnCompatibleGRUCell(GRUCell):
    """tf.contrib.cudnn_rnn.CudnnCompatibleGRUCell: cuDNN's GRU, the reset gate applied after the
    recurrent matmul (h~ = tanh(x W_cx + b_cx + r * (h W_ch + b_ch))), unlike GRUCell.

    Variables: gates/kernel [depth + n, 2n] and gates/bias [2n] (r then u; the bias starts at 1),
    candidate/input_projection/{kernel [depth, n], bias} and candidate/hidden_projection/{kernel
    [n, n], bias}.
    """

    def __init__(self, num_units: int, reuse: Any = None, kernel_initializer: Any = None):
        super().__init__(num_units, activation=None, reuse=reuse, kernel_initializer=kernel_initializer)

    def _build(self, depth: int) -> None:
        n, ki, bi = self._num_units, self._kernel_initializer, self._bias_initializer
        self._gate_kernel = self.add_variable("gates/kernel", [depth + n, 2 * n], initializer=ki)
        self._gate_bias = self.add_variable("gates/bias", [2 * n], initializer=bi or _init.Constant(1.0))
        self._cand_x_kernel = self.add_variable("candidate/input_projection/kernel", [depth, n], initializer=ki)
        self._cand_h_kernel = self.add_variable("candidate/hidden_projection/kernel", [n, n], initializer=ki)
        self._cand_x_bias = self.add_variable("candidate/input_projection/bias", [n], initializer=bi or _init.Zeros())
        self._cand_h_bias = self.add_variable("candidate/hidden_projection/bias", [n], initializer=bi or _init.Zeros())

    def _step(self, gates_x: _g.Tensor, cand_x: _g.Tensor, state: _g.Tensor, g_h: Any) -> Tuple[Any, Any]:
        r, u = _a.split(_nn.sigmoid(gates_x + _m.matmul(state, g_h)), 2, axis=1)
        cand = _nn.tanh(cand_x + r * (_m.matmul(state, self._cand_h_kernel) + self._cand_h_bias))
        h = (1 - u) * cand + u * state
        return h, h

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        """One step of cuDNN's GRU (the reset gate after the recurrent product)."""
        n, d = self._num_units, self.input_depth
        g_x, g_h = _a.split(self._gate_kernel, [d, n], axis=0)
        return self._step(_m.matmul(inputs, g_x) + self._gate_bias,
                          _m.matmul(inputs, self._cand_x_kernel) + self._cand_x_bias, state, g_h)

    def input_projection(self) -> Optional[Tuple[Callable, Callable]]:
        # dynamic_rnn projects every step's input in one matmul, the loop does the recurrent part
        """The input's product with the gates' and candidate's input kernels, for every step at once."""
        n, d = self._num_units, self.input_depth
        g_x, g_h = _a.split(self._gate_kernel, [d, n], axis=0)
        w_x = _a.concat([g_x, self._cand_x_kernel], 1)
        bias = _a.concat([_g.convert_to_tensor(self._gate_bias), _g.convert_to_tensor(self._cand_x_bias)], 0)

        def project(x: _g.Tensor) -> _g.Tensor:
            return _m.matmul(x, w_x) + bias

        def step(p: _g.Tensor, state: Any) -> Tuple[Any, Any]:
            p_g, p_c = _a.split(p, [2 * n, n], axis=1)
            return self._step(p_g, p_c, state, g_h)
        return project, step

    def fused_sequence(self) -> Optional[Callable]:
        """None: the cell runs step by step (collflow's fused GRU resets before the product)."""
        return None  # BlockGRU is GRUCell's reset-before math, not cuDNN's


# -- the layers ----------------------------------------------------------------------------------

def _gate_blocks(init: Any, n_gates: int, n: int, width: int, dt: _dt.DType) -> _g.Tensor:
    """A TF canonical kernel [width + n, n_gates * n] made as TF's layer makes its cuDNN canonical
    weights: the initializer applied to each gate's [n, width] input and [n, n] recurrent part."""
    rows = [_a.concat([init([n, width], dtype=dt), init([n, n], dtype=dt)], 1) for _ in range(n_gates)]
    return _a.transpose(_a.concat(rows, 0))


def _summed_bias(init: Any, size: int, dt: _dt.DType) -> _g.Tensor:
    # the canonical bias is cuDNN's input and recurrent biases summed (TF's saveable)
    return init([size], dtype=dt) + init([size], dtype=dt)


class _CudnnRNN(Layer):
    """The layers' common part (see the module doc)."""

    _rnn_mode = ""
    _num_params_per_layer = 0
    _cell_name = ""

    def __init__(self, num_layers: int, num_units: int, input_mode: str = CUDNN_INPUT_LINEAR_MODE,
                 direction: str = CUDNN_RNN_UNIDIRECTION, dropout: float = 0., seed: Optional[int] = None,
                 dtype: Any = _dt.float32, kernel_initializer: Any = None, bias_initializer: Any = None,
                 name: Optional[str] = None):
        super().__init__(name=name)
        check_direction(direction)
        check_input_mode(input_mode)
        dt = _dt.as_dtype(dtype)
        if dt not in (_dt.float16, _dt.float32, _dt.float64):
            raise ValueError(f"Only support float16, float32, float64, provided {dt.name}")
        for what, v in (("num_layers", num_layers), ("num_units", num_units)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{type(self).__name__}: {what} must be a positive int, got {v!r}")
        if not 0 <= float(dropout) < 1:
            raise ValueError(f"{type(self).__name__}: dropout must be in [0, 1), got {dropout}")
        self._plain_dtype = dt
        self._num_layers, self._num_units = num_layers, num_units
        self._input_mode, self._direction = input_mode, direction
        self._dropout, self._seed = float(dropout), seed
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer
        self._input_size: Optional[int] = None
        self._canon_scope: Any = None

    _base = property(lambda self: _snake(type(self).__name__))

    # -- TF's properties -----------------------------------------------------------------------
    num_layers = property(lambda self: self._num_layers)
    num_units = property(lambda self: self._num_units)
    input_mode = property(lambda self: self._input_mode)
    direction = property(lambda self: self._direction)
    rnn_mode = property(lambda self: self._rnn_mode)
    dtype = property(lambda self: self._plain_dtype)
    saveable = property(lambda self: None)  # the canonical variables are saved as they are

    @property
    def num_dirs(self) -> int:
        return 1 if self._direction == CUDNN_RNN_UNIDIRECTION else 2

    @property
    def input_size(self) -> int:
        if not self._input_size:
            raise ValueError("'input_size' is unknown since layer has not been built.")
        return self._input_size

    @property
    def canonical_weight_shapes(self) -> List[Tuple[int, int]]:
        """Shapes of cuDNN's canonical weights, layer by layer (forward then backward)."""
        if not self._input_size:
            raise RuntimeError(f"{type(self).__name__}.canonical_weight_shapes invoked before input shape is known")
        gates, n, out = self._num_params_per_layer // 2, self._num_units, []
        for layer in range(self._num_layers):
            width = self._layer_width(layer)
            out += ([(n, width)] * gates + [(n, n)] * gates) * self.num_dirs
        return out

    @property
    def canonical_bias_shapes(self) -> List[List[int]]:
        return [[self._num_units]] * (self.num_dirs * self._num_params_per_layer * self._num_layers)

    def state_shape(self, batch_size: Any) -> Tuple[List[Any], ...]:
        shape = [self._num_layers * self.num_dirs, batch_size, self._num_units]
        return (shape, list(shape)) if self._rnn_mode == CUDNN_LSTM else (shape,)

    @property
    def variables(self) -> List[Any]:
        return list(self._vars)

    @property
    def trainable_variables(self) -> List[Any]:
        return list(self._vars)

    trainable_weights = trainable_variables
    weights = variables

    @property
    def kernel(self) -> _g.Tensor:
        """All parameters as one flat tensor (stands in for TF's opaque buffer, read-only)."""
        if not self.built:
            raise ValueError(f"{type(self).__name__}: the layer is not built yet")
        return _a.concat([_a.reshape(v, [-1]) for v in self._vars], 0)

    # -- building ------------------------------------------------------------------------------
    def _layer_width(self, layer: int) -> int:
        return self.input_size if layer == 0 else self._num_units * self.num_dirs

    def _prefixes(self, layer: int) -> List[List[str]]:
        """The scopes of layer `layer`'s cells (per direction), as TF's saveable names them."""
        if self._direction == CUDNN_RNN_UNIDIRECTION:
            return [["rnn", "multi_rnn_cell", f"cell_{layer}"]]
        return [["stack_bidirectional_rnn", f"cell_{layer}", "bidirectional_rnn", d] for d in ("fw", "bw")]

    def build(self, input_shape: Any) -> None:
        """Creates the canonical variables for inputs of `input_shape` (3 dims, the last known),
        under the current variable scope (see the module doc)."""
        if self.built:
            return
        shape = TensorShape(input_shape)
        if shape.rank != 3:
            raise ValueError(f"Expecting input_shape with 3 dims, got {shape.rank}")
        if shape.dims[-1] is None:
            raise ValueError("The last dimension of the inputs to `CudnnRNN` should be defined. Found `None`.")
        self._input_size = int(shape.dims[-1])
        if self._input_mode == CUDNN_INPUT_SKIP_MODE or (
                self._input_mode == CUDNN_INPUT_AUTO_MODE and self._input_size == self._num_units):
            raise UnimplementedError(f"{type(self).__name__}: input_mode {self._input_mode!r} (no input "
                                     f"projection in the first layer) is not implemented by collflow; use "
                                     f"'linear_input'")
        if self._scope is None:
            with variable_scope(self._name, default_name=self._base) as vs:
                self._scope = vs  # TF's build takes the layer's scope name too
        dt = self._plain_dtype
        k_init = self._kernel_initializer or _init.GlorotUniform(seed=self._seed)
        b_init = self._bias_initializer or _init.Constant(0.0)
        k_init, b_init = _init.get(k_init), _init.get(b_init)
        self._canon_scope = get_variable_scope()
        made: List[Any] = []
        for layer in range(self._num_layers):
            for prefix in self._prefixes(layer):
                with _nested_scopes(prefix + [self._cell_name]):
                    made += self._make_cell_vars(self._layer_width(layer), k_init, b_init, dt)
        self._vars = made
        self.built = True

    def _make_cell_vars(self, width: int, k_init: Any, b_init: Any, dt: _dt.DType) -> List[Any]:
        n, gates = self._num_units, self._num_params_per_layer // 2

        def var(name: str, value: Callable[[], _g.Tensor], shape: List[int]) -> Any:
            return get_variable(name, shape, dtype=dt, initializer=lambda *a, **k: value())
        return [var("kernel", lambda: _gate_blocks(k_init, gates, n, width, dt), [width + n, gates * n]),
                var("bias", lambda: _summed_bias(b_init, gates * n, dt), [gates * n])]

    def _cell(self) -> Any:
        raise NotImplementedError

    # -- calling -------------------------------------------------------------------------------
    def __call__(self, inputs: Any, initial_state: Any = None, sequence_lengths: Any = None,
                 time_major: bool = True, training: Any = True) -> Tuple[_g.Tensor, Tuple[_g.Tensor, ...]]:
        """(outputs [time, batch, num_dirs * num_units], output_states) for inputs [time, batch,
        input_size] ([batch, time, ...] and states [batch, layers * dirs, units] when not
        time_major); initial_state and output_states are tuples (h, c) for LSTM, (h,) otherwise,
        each [num_layers * num_dirs, batch, num_units] (zeros when not given).  sequence_lengths:
        int [batch].  training: dropout between layers (a bool or a bool tensor)."""
        if initial_state is not None and not isinstance(initial_state, tuple):
            raise TypeError(f"Invalid initial_state type: {initial_state}, expecting tuple.")
        x = _g.convert_to_tensor(inputs, dtype=self._plain_dtype)
        with x.graph.as_default():
            if x.shape.rank != 3:
                raise ValueError(f"{type(self).__name__}: inputs must have 3 dims ([time, batch, depth] or "
                                 f"[batch, time, depth]), got shape {x.shape}")
            if self.built and x.shape.dims[-1] not in (None, self._input_size):
                raise ValueError(f"{type(self).__name__}: inputs have depth {x.shape.dims[-1]}, the layer was "
                                 f"built for {self._input_size}")
            if not self.built:
                if self._scope is None:
                    with variable_scope(self._name, default_name=self._base) as vs:
                        self._scope = vs
                with variable_scope(self._scope, auxiliary_name_scope=False):
                    self.build(x.shape)
            with x.graph.name_scope(self._scope.original_name_scope):
                return self._forward(x, initial_state, sequence_lengths, bool(time_major), training)

    apply = __call__
    call = __call__

    def _forward(self, x: _g.Tensor, initial_state: Any, seq: Any, time_major: bool,
                 training: Any) -> Tuple[_g.Tensor, Tuple[_g.Tensor, ...]]:
        if not time_major:
            x = _a.transpose(x, [1, 0, 2])
        n_states = 2 if self._rnn_mode == CUDNN_LSTM else 1
        if initial_state is not None:
            if len(initial_state) != n_states:
                raise ValueError(f"{type(self).__name__}: initial_state must be a tuple of {n_states} "
                                 f"tensor(s), got {len(initial_state)}")
            states = [self._check_state(s, time_major) for s in initial_state]
        else:
            states = None
        if seq is not None:
            seq = _m.cast(_g.convert_to_tensor(seq), _dt.int32)
        dirs = self.num_dirs
        finals: List[List[_g.Tensor]] = [[] for _ in range(n_states)]
        for layer in range(self._num_layers):
            if layer > 0 and self._dropout > 0:
                x = self._drop(x, training)
            init = [None] * dirs
            if states is not None:
                init = [self._cell_state([s[layer * dirs + d] for s in states]) for d in range(dirs)]
            x, ends = self._run_layer(layer, x, init, seq)
            for end in ends:
                for k, part in enumerate(end if n_states == 2 else (end,)):
                    finals[k].append(part)
        outputs = x if time_major else _a.transpose(x, [1, 0, 2])
        out_states = tuple(_a.stack(f, axis=0 if time_major else 1) for f in finals)
        return outputs, out_states

    def _check_state(self, s: Any, time_major: bool) -> _g.Tensor:
        s = _g.convert_to_tensor(s, dtype=self._plain_dtype)
        want = self._num_layers * self.num_dirs
        if s.shape.rank is not None:
            ax = 0 if time_major else 1
            if s.shape.rank != 3 or s.shape.dims[ax] not in (None, want) or s.shape.dims[2] not in (
                    None, self._num_units):
                where = "[num_layers * num_dirs, batch, num_units]" if time_major else \
                    "[batch, num_layers * num_dirs, num_units]"
                raise ValueError(f"{type(self).__name__}: an initial state must be {where} with "
                                 f"num_layers * num_dirs = {want}, num_units = {self._num_units}; got {s.shape}")
        return s if time_major else _a.transpose(s, [1, 0, 2])

    def _cell_state(self, parts: Sequence[_g.Tensor]) -> Any:
        return parts[0]

    def _drop(self, x: _g.Tensor, training: Any) -> _g.Tensor:
        if isinstance(training, bool):
            return _nn.dropout(x, rate=self._dropout, seed=self._seed) if training else x
        # a bool tensor: the rate is zero outside training (floor(1 + u) keeps every unit)
        rate = _m.cast(_g.convert_to_tensor(training), x.dtype) * self._dropout
        return _nn.dropout(x, rate=rate, seed=self._seed)

    def _run_layer(self, layer: int, x: _g.Tensor, init: List[Any], seq: Any) -> Tuple[_g.Tensor, List[Any]]:
        dt = self._plain_dtype
        prefixes = self._prefixes(layer)
        with variable_scope(self._canon_scope, reuse=True, auxiliary_name_scope=False):
            if self.num_dirs == 1:
                with _nested_scopes(prefixes[0]) as scope:
                    out, end = dynamic_rnn(self._cell(), x, sequence_length=seq, initial_state=init[0], dtype=dt,
                                           time_major=True, scope=scope)
                return out, [end]
            with _nested_scopes(prefixes[0][:2]):
                (fw, bw), (end_fw, end_bw) = bidirectional_dynamic_rnn(
                    self._cell(), self._cell(), x, sequence_length=seq, initial_state_fw=init[0],
                    initial_state_bw=init[1], dtype=dt, time_major=True)
            return _a.concat([fw, bw], 2), [end_fw, end_bw]


class _nested_scopes:
    """variable_scope(a), variable_scope(b), ... as one context; yields the innermost scope."""

    def __init__(self, names: Sequence[str]):
        self._cms = [variable_scope(n) for n in names]

    def __enter__(self) -> Any:
        vs = None
        for cm in self._cms:
            vs = cm.__enter__()
        return vs

    def __exit__(self, *exc: Any) -> None:
        for cm in reversed(self._cms):
            cm.__exit__(*exc)


def _snake(name: str) -> str:
    # TF's to_snake_case for these class names: CudnnLSTM -> cudnn_lstm, CudnnRNNTanh -> cudnn_rnn_tanh
    return {"CudnnLSTM": "cudnn_lstm", "CudnnGRU": "cudnn_gru", "CudnnRNNTanh": "cudnn_rnn_tanh",
            "CudnnRNNRelu": "cudnn_rnn_relu"}.get(name, name.lower())


class CudnnLSTM(_CudnnRNN):
    """tf.contrib.cudnn_rnn.CudnnLSTM: states (h, c); see the module doc."""
    _rnn_mode = CUDNN_LSTM
    _num_params_per_layer = CUDNN_LSTM_PARAMS_PER_LAYER
    _cell_name = "cudnn_compatible_lstm_cell"

    def _cell(self) -> Any:
        return CudnnCompatibleLSTMCell(self._num_units, reuse=True)

    def _cell_state(self, parts: Sequence[_g.Tensor]) -> Any:
        return LSTMStateTuple(parts[1], parts[0])  # (c, h), the cell's state; the layer's is (h, c)

    def _forward(self, x: _g.Tensor, initial_state: Any, seq: Any, time_major: bool,
                 training: Any) -> Tuple[_g.Tensor, Tuple[_g.Tensor, ...]]:
        outputs, (c, h) = super()._forward(x, initial_state, seq, time_major, training)
        return outputs, (h, c)


class CudnnGRU(_CudnnRNN):
    """tf.contrib.cudnn_rnn.CudnnGRU: cuDNN's GRU (reset after the recurrent matmul); state (h,)."""
    _rnn_mode = CUDNN_GRU
    _num_params_per_layer = CUDNN_GRU_PARAMS_PER_LAYER
    _cell_name = "cudnn_compatible_gru_cell"

    def _make_cell_vars(self, width: int, k_init: Any, b_init: Any, dt: _dt.DType) -> List[Any]:
        n = self._num_units

        def var(name: str, value: Callable[[], _g.Tensor], shape: List[int]) -> Any:
            return get_variable(name, shape, dtype=dt, initializer=lambda *a, **k: value())
        return [var("gates/kernel", lambda: _gate_blocks(k_init, 2, n, width, dt), [width + n, 2 * n]),
                var("gates/bias", lambda: _summed_bias(b_init, 2 * n, dt), [2 * n]),
                var("candidate/input_projection/kernel", lambda: _a.transpose(k_init([n, width], dtype=dt)),
                    [width, n]),
                var("candidate/input_projection/bias", lambda: b_init([n], dtype=dt), [n]),
                var("candidate/hidden_projection/kernel", lambda: _a.transpose(k_init([n, n], dtype=dt)), [n, n]),
                var("candidate/hidden_projection/bias", lambda: b_init([n], dtype=dt), [n])]

    def _cell(self) -> Any:
        return CudnnCompatibleGRUCell(self._num_units, reuse=True)


class CudnnRNNTanh(_CudnnRNN):
    """tf.contrib.cudnn_rnn.CudnnRNNTanh: h' = tanh(W x + R h + b); its canonical cell is
    BasicRNNCell (basic_rnn_cell/kernel, bias)."""
    _rnn_mode = CUDNN_RNN_TANH
    _num_params_per_layer = CUDNN_RNN_TANH_PARAMS_PER_LAYER
    _cell_name = "basic_rnn_cell"
    _activation: Any = staticmethod(_nn.tanh)

    def _cell(self) -> Any:
        return BasicRNNCell(self._num_units, activation=type(self)._activation, reuse=True)


class CudnnRNNRelu(CudnnRNNTanh):
    """tf.contrib.cudnn_rnn.CudnnRNNRelu: h' = relu(W x + R h + b) (BasicRNNCell(activation=relu))."""
    _rnn_mode = CUDNN_RNN_RELU
    _num_params_per_layer = CUDNN_RNN_RELU_PARAMS_PER_LAYER
    _activation: Any = staticmethod(_nn.relu)
