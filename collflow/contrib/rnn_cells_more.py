"""The rarer tf.contrib.rnn cells, part one: the wrappers (HighwayWrapper, AttentionCellWrapper)
and the LSTM variants (CoupledInputForgetGateLSTMCell, contrib's LayerNormLSTMCell, NASCell,
GLSTMCell), with TF 1.15's arguments, state structures and variable names, so that TF1
checkpoints restore:

    cell = cf.contrib.rnn.AttentionCellWrapper(cf.contrib.rnn.LSTMCell(32), attn_length=4)
    outputs, state = cf.nn.dynamic_rnn(cell, x, dtype=cf.float32)
    # rnn/attention_cell_wrapper/{kernel,bias}, .../lstm_cell/kernel, .../attention/attn_w, ...

Part two (UGRNN, +RNN, the IndRNN family, SRU, MinimalRNN, CFN, PhasedLSTM) is
rnn_cells_more2.py.  TF 1.15's contrib layer norm (epsilon 1e-12) is computed here from
moments, its gamma/beta made as contrib made them.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

from .. import initializers as _init
from ..graph import graph as _g
from ..graph import nest
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import nn_impl, nn_ops as _nn
from ..graph.variable_scope import get_variable, variable_scope
from ..nn.rnn_cells import LSTMStateTuple, RNNCell, prebuild

__all__ = ["HighwayWrapper", "AttentionCellWrapper", "CoupledInputForgetGateLSTMCell", "LayerNormLSTMCell",
           "NASCell", "GLSTMCell"]


def _positive(cell: str, what: str, value: Any) -> int:
    if value is None or int(value) <= 0:
        raise ValueError(f"{cell}: {what} must be a positive int, got {value!r}")
    return int(value)


def _optional_positive(cell: str, what: str, value: Any) -> Optional[int]:
    return None if value is None else _positive(cell, what, value)


def _is_cell(cell: Any) -> bool:
    return callable(cell) and hasattr(cell, "state_size") and hasattr(cell, "output_size")


def _norm_vars(cell: RNNCell, part: str, n: int, gain: float, shift: float) -> Tuple[Any, Any]:
    """<part>/gamma (starting at gain) and <part>/beta (shift): contrib's _norm helper."""
    with variable_scope(part):
        gamma = cell.add_variable("gamma", [n], initializer=_init.Constant(gain))
        beta = cell.add_variable("beta", [n], initializer=_init.Constant(shift))
    return gamma, beta


def _layer_norm(x: _g.Tensor, params: Tuple[Any, Any], part: str) -> _g.Tensor:
    """contrib.layers.layer_norm over the features of [batch, n] (variance epsilon 1e-12)."""
    gamma, beta = params
    with _g.get_default_graph().name_scope(part):
        mean, variance = _nn.moments(x, [1], keep_dims=True)
        return nn_impl.batch_normalization(x, mean, variance, beta, gamma, 1e-12)


def _sharded(cell: RNNCell, name: str, shape: List[int], num_shards: int, initializer: Any) -> _g.Tensor:
    """contrib's _get_concat_variable: the matrix as num_shards row blocks name_0, name_1, ...
    (the first rows % shards blocks one row longer), concatenated; one shard is `name` itself."""
    if num_shards > shape[0]:
        raise ValueError(f"Too many shards: shape={shape}, num_shards={num_shards}")
    if num_shards == 1:
        return cell.add_variable(name, shape, initializer=initializer)
    size, extra = divmod(shape[0], num_shards)
    shards = [cell.add_variable(f"{name}_{i}", [size + (1 if i < extra else 0)] + shape[1:], initializer=initializer)
              for i in range(num_shards)]
    return _a.concat([_g.convert_to_tensor(s) for s in shards], 0, name=name + "/concat")


# -- wrappers ---------------------------------------------------------------------------------


class HighwayWrapper(RNNCell):
    """tf.contrib.rnn.HighwayWrapper (Srivastava et al. 2015): the cell's output mixed with its input.

        carry = sigmoid(x . carry_w + carry_b)
        transform = 1 - carry, or sigmoid(x . transform_w + transform_b) when not coupled
        output = x * carry + cell_output * transform

    As TF 1.15's, the wrapper opens no scope: carry_w/carry_b [depth, depth] / [depth] (carry_b
    starting at carry_bias_init), transform_w/transform_b (-carry_bias_init) sit in the
    enclosing scope (rnn/carry_w), after the wrapped cell's variables.  The cell's output
    must have the inputs' depth.
    """

    _scoped = False

    def __init__(self, cell: Any, couple_carry_transform_gates: bool = True, carry_bias_init: float = 1.0):
        super().__init__()
        if not _is_cell(cell):
            raise TypeError(f"HighwayWrapper: the parameter cell is not an RNNCell: {cell!r}")
        self._cell = cell
        self._couple = bool(couple_carry_transform_gates)
        self._carry_bias_init = float(carry_bias_init)
        self._own: List[Any] = []

    @property
    def state_size(self) -> Any:
        return self._cell.state_size

    @property
    def output_size(self) -> Any:
        return self._cell.output_size

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with _g.get_default_graph().name_scope("HighwayWrapperZeroState"):
            return self._cell.zero_state(batch_size, dtype)

    def _var_lists(self) -> Tuple[list, list]:
        return (list(getattr(self._cell, "trainable_variables", [])) + self._own,
                list(getattr(self._cell, "non_trainable_variables", [])))

    def _build(self, depth: int) -> None:
        prebuild(self._cell, depth, self.dtype)
        out = self._cell.output_size
        if not isinstance(out, int) or out != depth:
            raise ValueError(f"HighwayWrapper: the cell's output size {out} must equal the inputs' depth {depth} "
                             "(the highway adds them)")
        own = self._own = []
        b = self._carry_bias_init
        for name, shape, init in (("carry_w", [depth, depth], None), ("carry_b", [depth], _init.Constant(b))) + (
                () if self._couple else (("transform_w", [depth, depth], None),
                                         ("transform_b", [depth], _init.Constant(-b)))):
            own.append(self._own_variable(name, shape, init))

    def _own_variable(self, name: str, shape: List[int], init: Any) -> Any:
        return get_variable(name, shape, dtype=self.dtype, initializer=init)

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        output, new_state = self._cell(inputs, state)
        carry = _nn.sigmoid(_m.matmul(inputs, self._own[0]) + self._own[1])
        if self._couple:
            transform = 1 - carry
        else:
            transform = _nn.sigmoid(_m.matmul(inputs, self._own[2]) + self._own[3])
        return inputs * carry + output * transform, new_state


class AttentionCellWrapper(RNNCell):
    """tf.contrib.rnn.AttentionCellWrapper (Bahdanau et al. 2014): the cell attends over its
    last attn_length outputs.

        x' = [x, attns] . kernel + bias                     (input_size features, default the depth)
        cell_output, s' = cell(x', s)
        scores_l = attn_v . tanh(attn_states_l . attn_w + [flat s'] . attention/kernel + .../bias)
        attns' = sum_l softmax(scores)_l attn_states_l
        output = [cell_output, attns'] . attn_output_projection/kernel + .../bias
        attn_states' = attn_states[1:] + [output]

    The state is (cell state, attns [attn_size], attn_states [attn_length * attn_size]), or
    their concatenation with state_is_tuple=False.  Variables (TF 1.15's, under
    attention_cell_wrapper/): kernel, bias, the cell's, attention/attn_w [1, 1, attn_size,
    attn_vec_size], attention/attn_v, attention/kernel, attention/bias,
    attn_output_projection/kernel and /bias.  attn_size defaults to the cell's output size
    and must equal it when the output re-enters the attention window.
    """

    def __init__(self, cell: Any, attn_length: int, attn_size: Optional[int] = None,
                 attn_vec_size: Optional[int] = None, input_size: Optional[int] = None, state_is_tuple: bool = True,
                 reuse: Any = None):
        super().__init__(reuse=reuse)
        if not _is_cell(cell):
            raise TypeError("The parameter cell is not RNNCell.")
        if isinstance(cell.state_size, (tuple, list)) and not state_is_tuple:
            raise ValueError("Cell returns tuple of states, but the flag state_is_tuple is not set. "
                             f"State size is: {cell.state_size}")
        if attn_length is None or int(attn_length) <= 0:
            raise ValueError(f"attn_length should be greater than zero, got {attn_length}")
        self._cell = cell
        self._attn_length = int(attn_length)
        self._attn_size = int(attn_size) if attn_size is not None else int(cell.output_size)
        self._attn_vec_size = int(attn_vec_size) if attn_vec_size is not None else self._attn_size
        self._input_size = _optional_positive("AttentionCellWrapper", "input_size", input_size)
        self._state_is_tuple = bool(state_is_tuple)

    @property
    def state_size(self) -> Any:
        size = (self._cell.state_size, self._attn_size, self._attn_size * self._attn_length)
        return size if self._state_is_tuple else sum(int(s) for s in nest.flatten(size))

    @property
    def output_size(self) -> int:
        return self._attn_size

    def _build(self, depth: int) -> None:
        a, v, n_in = self._attn_size, self._attn_vec_size, self._input_size or depth
        own = self._var_lists()[0]
        self._kernel = self.add_variable("kernel", [depth + a, n_in])
        self._bias = self.add_variable("bias", [n_in], initializer=_init.Zeros())
        prebuild(self._cell, n_in, self.dtype)
        own.extend(getattr(self._cell, "trainable_variables", []))
        self._var_lists()[1].extend(getattr(self._cell, "non_trainable_variables", []))
        query = sum(int(s) for s in nest.flatten(self._cell.state_size))
        with variable_scope("attention"):
            self._attn_w = self.add_variable("attn_w", [1, 1, a, v])
            self._attn_v = self.add_variable("attn_v", [v])
            self._query_kernel = self.add_variable("kernel", [query, v])
            self._query_bias = self.add_variable("bias", [v], initializer=_init.Zeros())
        out = int(self._cell.output_size)
        with variable_scope("attn_output_projection"):
            self._out_kernel = self.add_variable("kernel", [out + a, a])
            self._out_bias = self.add_variable("bias", [a], initializer=_init.Zeros())

    def _split_state(self, state: Any) -> Tuple[Any, Any, Any]:
        if self._state_is_tuple:
            if not isinstance(state, (tuple, list)) or len(state) != 3:
                raise ValueError(f"AttentionCellWrapper: the state must be (cell state, attns, attn_states), "
                                 f"got {state!r}")
            return state[0], state[1], state[2]
        c = int(self._cell.state_size)
        return tuple(_a.split(state, [c, self._attn_size, self._attn_size * self._attn_length], axis=1))

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        a, v, length = self._attn_size, self._attn_vec_size, self._attn_length
        cell_state, attns, attn_states = self._split_state(state)
        x = _nn.bias_add(_m.matmul(_a.concat([inputs, attns], 1), self._kernel), self._bias)
        cell_output, new_cell_state = self._cell(x, cell_state)
        query = _a.concat(nest.flatten(new_cell_state), 1) if self._state_is_tuple else new_cell_state
        g = _g.get_default_graph()
        hidden = _a.reshape(attn_states, [-1, length, a])
        with g.name_scope("attention"):
            # the 1x1 convolution of the window with attn_w is a matmul over its features
            features = _a.reshape(_m.matmul(_a.reshape(hidden, [-1, a]), _a.reshape(self._attn_w, [a, v])),
                                  [-1, length, v])
            y = _nn.bias_add(_m.matmul(query, self._query_kernel), self._query_bias)
            scores = _m.reduce_sum(self._attn_v * _nn.tanh(features + _a.expand_dims(y, 1)), [2])
            weights = _nn.softmax(scores)
            new_attns = _m.reduce_sum(_a.expand_dims(weights, 2) * hidden, [1])
        with g.name_scope("attn_output_projection"):
            output = _nn.bias_add(_m.matmul(_a.concat([cell_output, new_attns], 1), self._out_kernel), self._out_bias)
        window = _a.concat([hidden[:, 1:, :], _a.expand_dims(output, 1)], 1)
        new_attn_states = _a.reshape(window, [-1, length * a])
        new_state = (new_cell_state, new_attns, new_attn_states)
        if not self._state_is_tuple:
            new_state = _a.concat(list(new_state), 1)
        return output, new_state


# -- LSTM variants ----------------------------------------------------------------------------


class CoupledInputForgetGateLSTMCell(RNNCell):
    """tf.contrib.rnn.CoupledInputForgetGateLSTMCell (Greff et al. 2015): an LSTM whose input gate
    is one minus its forget gate.

        j, f, o = split([x, m] . W (+ B without layer_norm), 3)      (LN_transform/forget/output with it)
        f' = sigmoid(f + forget_bias [+ W_F_diag * c])
        c' = f' * c + (1 - f') * act(j)                                (then LN_state with layer_norm)
        m' = sigmoid(o [+ W_O_diag * c']) * act(c')                    (then . W_P, clipped by proj_clip)

    Variables as TF 1.15 names them: W [depth + num_proj, 3 num_units] (W_0, W_1, ... with
    num_unit_shards), B (zeros; made but unused with layer_norm), W_F_diag, W_O_diag,
    {transform,forget,output,state}/gamma and /beta, W_P [num_units, num_proj] (W_P_i with
    num_proj_shards).  The state is LSTMStateTuple(c, m), or [c, m] concatenated.
    `initializer` initializes the weight matrices (TF 1.15 accepted and ignored it).
    """

    def __init__(self, num_units: int, use_peepholes: bool = False, initializer: Any = None,
                 num_proj: Optional[int] = None, proj_clip: Optional[float] = None, num_unit_shards: int = 1,
                 num_proj_shards: int = 1, forget_bias: float = 1.0, state_is_tuple: bool = True,
                 activation: Any = None, reuse: Any = None, layer_norm: bool = False, norm_gain: float = 1.0,
                 norm_shift: float = 0.0):
        super().__init__(reuse=reuse)
        what = type(self).__name__
        self._num_units = _positive(what, "num_units", num_units)
        self._use_peepholes = bool(use_peepholes)
        self._initializer = _init.get(initializer)
        self._num_proj = _optional_positive(what, "num_proj", num_proj)
        self._proj_clip = proj_clip
        self._num_unit_shards = _positive(what, "num_unit_shards", num_unit_shards)
        self._num_proj_shards = _positive(what, "num_proj_shards", num_proj_shards)
        self._forget_bias = forget_bias
        self._state_is_tuple = bool(state_is_tuple)
        self._activation = activation or _nn.tanh
        self._layer_norm = bool(layer_norm)
        self._norm_gain = norm_gain
        self._norm_shift = norm_shift

    @property
    def _m_depth(self) -> int:
        return self._num_proj or self._num_units

    @property
    def state_size(self) -> Any:
        if self._state_is_tuple:
            return LSTMStateTuple(self._num_units, self._m_depth)
        return self._num_units + self._m_depth

    @property
    def output_size(self) -> int:
        return self._m_depth

    def _build(self, depth: int) -> None:
        n, init = self._num_units, self._initializer
        self._w = _sharded(self, "W", [depth + self._m_depth, 3 * n], self._num_unit_shards, init)
        self._b = self.add_variable("B", [3 * n], initializer=_init.Zeros())
        self._norms = {}
        if self._layer_norm:
            for part in ("transform", "forget", "output"):
                self._norms[part] = _norm_vars(self, part, n, self._norm_gain, self._norm_shift)
        if self._use_peepholes:
            self._w_f_diag = self.add_variable("W_F_diag", [n])
            self._w_o_diag = self.add_variable("W_O_diag", [n])
        if self._layer_norm:
            self._norms["state"] = _norm_vars(self, "state", n, self._norm_gain, self._norm_shift)
        if self._num_proj is not None:
            self._w_p = _sharded(self, "W_P", [n, self._num_proj], self._num_proj_shards, init)

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        sigmoid, act = _nn.sigmoid, self._activation
        if self._state_is_tuple:
            c, m = state
        else:
            c, m = _a.split(state, [self._num_units, self._m_depth], axis=1)
        gates = _m.matmul(_a.concat([inputs, m], 1), self._w)
        if not self._layer_norm:
            gates = _nn.bias_add(gates, self._b)
        j, f, o = _a.split(gates, 3, axis=1)
        if self._layer_norm:
            j, f, o = (_layer_norm(t, self._norms[p], p) for t, p in zip((j, f, o), ("transform", "forget", "output")))
        f_act = sigmoid(f + self._forget_bias + self._w_f_diag * c) if self._use_peepholes else \
            sigmoid(f + self._forget_bias)
        new_c = f_act * c + (1 - f_act) * act(j)
        if self._layer_norm:
            new_c = _layer_norm(new_c, self._norms["state"], "state")
        o_act = sigmoid(o + self._w_o_diag * new_c) if self._use_peepholes else sigmoid(o)
        new_m = o_act * act(new_c)
        if self._num_proj is not None:
            new_m = _m.matmul(new_m, self._w_p)
            if self._proj_clip is not None:
                new_m = _m.clip_by_value(new_m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(new_c, new_m) if self._state_is_tuple else _a.concat([new_c, new_m], 1)
        return new_m, new_state


class LayerNormLSTMCell(RNNCell):
    """tf.contrib.rnn.LayerNormLSTMCell: LSTMCell with contrib's layer normalisation of the four
    gate pre-activations (before forget_bias and the peepholes) and of the new cell state
    (before cell_clip), peepholes, cell clipping and a projection.

        i, j, f, o = split([x, m] . kernel (+ bias without layer_norm), 4)   (then LN_input/transform/forget/output)
        c' = sigmoid(f + forget_bias [+ w_f_diag c]) c + sigmoid(i [+ w_i_diag c]) act(j)   (LN_state, clip)
        m' = sigmoid(o [+ w_o_diag c']) act(c')            (then . projection/kernel, clipped by proj_clip)

    Variables (scope layer_norm_lstm_cell): kernel [depth + num_proj, 4 num_units], bias (zeros;
    made but unused with layer_norm), {input,transform,forget,output}/gamma and /beta,
    w_f_diag, w_i_diag, w_o_diag, state/gamma and /beta, projection/kernel.  `initializer`
    initializes kernel, the peepholes and projection/kernel.  State LSTMStateTuple(c, m).
    """

    _GATES = ("input", "transform", "forget", "output")

    def __init__(self, num_units: int, use_peepholes: bool = False, cell_clip: Optional[float] = None,
                 initializer: Any = None, num_proj: Optional[int] = None, proj_clip: Optional[float] = None,
                 forget_bias: float = 1.0, activation: Any = None, layer_norm: bool = False, norm_gain: float = 1.0,
                 norm_shift: float = 0.0, reuse: Any = None):
        super().__init__(reuse=reuse)
        what = type(self).__name__
        self._num_units = _positive(what, "num_units", num_units)
        self._use_peepholes = bool(use_peepholes)
        self._cell_clip = cell_clip
        self._initializer = _init.get(initializer)
        self._num_proj = _optional_positive(what, "num_proj", num_proj)
        self._proj_clip = proj_clip
        self._forget_bias = forget_bias
        self._activation = activation or _nn.tanh
        self._layer_norm = bool(layer_norm)
        self._norm_gain = norm_gain
        self._norm_shift = norm_shift

    @property
    def state_size(self) -> Any:
        return LSTMStateTuple(self._num_units, self._num_proj or self._num_units)

    @property
    def output_size(self) -> int:
        return self._num_proj or self._num_units

    def _build(self, depth: int) -> None:
        n, init = self._num_units, self._initializer
        self._kernel = self.add_variable("kernel", [depth + self.output_size, 4 * n], initializer=init)
        self._bias = self.add_variable("bias", [4 * n], initializer=_init.Zeros())
        self._norms = {}
        if self._layer_norm:
            for part in self._GATES:
                self._norms[part] = _norm_vars(self, part, n, self._norm_gain, self._norm_shift)
        if self._use_peepholes:
            self._w_f_diag = self.add_variable("w_f_diag", [n], initializer=init)
            self._w_i_diag = self.add_variable("w_i_diag", [n], initializer=init)
            self._w_o_diag = self.add_variable("w_o_diag", [n], initializer=init)
        if self._layer_norm:
            self._norms["state"] = _norm_vars(self, "state", n, self._norm_gain, self._norm_shift)
        if self._num_proj is not None:
            self._proj = self.add_variable("projection/kernel", [n, self._num_proj], initializer=init)

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        sigmoid, act = _nn.sigmoid, self._activation
        c, m = state
        gates = _m.matmul(_a.concat([inputs, m], 1), self._kernel)
        if not self._layer_norm:
            gates = _nn.bias_add(gates, self._bias)
        i, j, f, o = _a.split(gates, 4, axis=1)
        if self._layer_norm:
            i, j, f, o = (_layer_norm(t, self._norms[p], p) for t, p in zip((i, j, f, o), self._GATES))
        if self._use_peepholes:
            new_c = (sigmoid(f + self._forget_bias + self._w_f_diag * c) * c
                     + sigmoid(i + self._w_i_diag * c) * act(j))
        else:
            new_c = sigmoid(f + self._forget_bias) * c + sigmoid(i) * act(j)
        if self._layer_norm:
            new_c = _layer_norm(new_c, self._norms["state"], "state")
        if self._cell_clip is not None:
            new_c = _m.clip_by_value(new_c, -self._cell_clip, self._cell_clip)
        o_act = sigmoid(o + self._w_o_diag * new_c) if self._use_peepholes else sigmoid(o)
        new_m = o_act * act(new_c)
        if self._num_proj is not None:
            new_m = _m.matmul(new_m, self._proj)
            if self._proj_clip is not None:
                new_m = _m.clip_by_value(new_m, -self._proj_clip, self._proj_clip)
        return new_m, LSTMStateTuple(new_c, new_m)


class NASCell(RNNCell):
    """tf.contrib.rnn.NASCell (Zoph & Le 2017): the recurrent cell found by architecture search.

    The inputs and m each feed eight branches (x . kernel and m . recurrent_kernel (+ bias),
    both [.., 8 num_units]) combined as TF 1.15's tree: sigmoid/relu/tanh of sums (branch 3 a
    product), then tanh(l0 * l1), tanh(l2 + l3), tanh(l4 * l5), sigmoid(l6 + l7); the cell
    enters as c' = tanh(tanh(l0 l1) + c) * tanh(l2 + l3) and m' = tanh(c' * tanh(tanh(l4 l5)
    + sigmoid(l6 + l7))) (then . projection_weights with num_proj).

    Variables: recurrent_kernel [num_proj or num_units, 8 num_units], kernel [depth, 8
    num_units], bias [8 num_units] (zeros, use_bias), projection_weights [num_units, num_proj].
    `use_biases` (TF 1.4-1.12's name of use_bias) is accepted too.
    """

    def __init__(self, num_units: int, num_proj: Optional[int] = None, use_bias: bool = False,
                 reuse: Any = None, **kwargs: Any):
        use_bias = kwargs.pop("use_biases", use_bias)
        super().__init__(reuse=reuse, **kwargs)
        self._num_units = _positive("NASCell", "num_units", num_units)
        self._num_proj = _optional_positive("NASCell", "num_proj", num_proj)
        self._use_bias = bool(use_bias)

    @property
    def state_size(self) -> Any:
        return LSTMStateTuple(self._num_units, self._num_proj or self._num_units)

    @property
    def output_size(self) -> int:
        return self._num_proj or self._num_units

    def _build(self, depth: int) -> None:
        n = self._num_units
        self._recurrent_kernel = self.add_variable("recurrent_kernel", [self.output_size, 8 * n])
        self._kernel = self.add_variable("kernel", [depth, 8 * n])
        self._bias = self.add_variable("bias", [8 * n], initializer=_init.Zeros()) if self._use_bias else None
        if self._num_proj is not None:
            self._proj = self.add_variable("projection_weights", [n, self._num_proj])

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        sigmoid, tanh, relu = _nn.sigmoid, _nn.tanh, _nn.relu
        c, m = state
        mm = _m.matmul(m, self._recurrent_kernel)
        if self._bias is not None:
            mm = _nn.bias_add(mm, self._bias)
        xs = _a.split(_m.matmul(inputs, self._kernel), 8, axis=1)
        ms = _a.split(mm, 8, axis=1)
        l1 = [sigmoid(xs[0] + ms[0]), relu(xs[1] + ms[1]), sigmoid(xs[2] + ms[2]), relu(xs[3] * ms[3]),
              tanh(xs[4] + ms[4]), sigmoid(xs[5] + ms[5]), tanh(xs[6] + ms[6]), sigmoid(xs[7] + ms[7])]
        l2_0 = tanh(tanh(l1[0] * l1[1]) + c)
        new_c = l2_0 * tanh(l1[2] + l1[3])
        l3_1 = tanh(tanh(l1[4] * l1[5]) + sigmoid(l1[6] + l1[7]))
        new_m = tanh(new_c * l3_1)
        if self._num_proj is not None:
            new_m = _m.matmul(new_m, self._proj)
        return new_m, LSTMStateTuple(new_c, new_m)


class GLSTMCell(RNNCell):
    """tf.contrib.rnn.GLSTMCell (Kuchaiev & Ginsburg 2017): a group LSTM.

    Group k reads its slice of the inputs (depth/G features: the depth must divide into the
    groups) and of m (num_proj/G, else num_units/G) and computes its slice of the four gates:
    [x_k, m_k] . group{k}/kernel [depth/G + m/G, 4 num_units/G] (no bias).  The
    slices are concatenated per gate and the biases bias_i, bias_j, bias_f, bias_o
    [num_units] (zeros) added; then the LSTM update (gates i, j, f, o) with forget_bias,
    m' = sigmoid(o) act(c') and m' . projection/kernel with num_proj.  `initializer`
    initializes the kernels.  State LSTMStateTuple(c, m).
    """

    def __init__(self, num_units: int, initializer: Any = None, num_proj: Optional[int] = None,
                 number_of_groups: int = 1, forget_bias: float = 1.0, activation: Any = None, reuse: Any = None):
        super().__init__(reuse=reuse)
        self._num_units = _positive("GLSTMCell", "num_units", num_units)
        self._initializer = _init.get(initializer)
        self._num_proj = _optional_positive("GLSTMCell", "num_proj", num_proj)
        self._groups = _positive("GLSTMCell", "number_of_groups", number_of_groups)
        self._forget_bias = forget_bias
        self._activation = activation or _nn.tanh
        if self._num_units % self._groups != 0:
            raise ValueError("num_units must be divisible by number_of_groups")
        if self._num_proj is not None and self._num_proj % self._groups != 0:
            raise ValueError("num_proj must be divisible by number_of_groups")
        self._group_in = (self._num_proj or self._num_units) // self._groups
        self._group_units = self._num_units // self._groups

    @property
    def state_size(self) -> Any:
        return LSTMStateTuple(self._num_units, self._num_proj or self._num_units)

    @property
    def output_size(self) -> int:
        return self._num_proj or self._num_units

    def _build(self, depth: int) -> None:
        if depth % self._groups != 0:
            raise ValueError(f"input size ({depth}) must be divisible by number_of_groups ({self._groups})")
        self._x_group = depth // self._groups
        init, n = self._initializer, self._num_units
        self._kernels = []
        for k in range(self._groups):
            with variable_scope(f"group{k}"):
                self._kernels.append(self.add_variable("kernel", [self._x_group + self._group_in,
                                                                  4 * self._group_units], initializer=init))
        self._biases = [self.add_variable(f"bias_{p}", [n], initializer=_init.Zeros()) for p in "ijfo"]
        if self._num_proj is not None:
            with variable_scope("projection"):
                self._proj = self.add_variable("kernel", [n, self._num_proj], initializer=init)

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        c, m = state
        gin, gx = self._group_in, self._x_group
        parts: List[List[Any]] = [[], [], [], []]
        for k, kernel in enumerate(self._kernels):
            x_k = _a.concat([inputs[:, k * gx:(k + 1) * gx], m[:, k * gin:(k + 1) * gin]], 1)
            for p, t in zip(parts, _a.split(_m.matmul(x_k, kernel), 4, axis=1)):
                p.append(t)
        i, j, f, o = (_nn.bias_add(_a.concat(p, 1) if len(p) > 1 else p[0], b) for p, b in zip(parts, self._biases))
        new_c = _nn.sigmoid(f + self._forget_bias) * c + _nn.sigmoid(i) * _nn.tanh(j)
        new_m = _nn.sigmoid(o) * self._activation(new_c)
        if self._num_proj is not None:
            new_m = _m.matmul(new_m, self._proj)
        return new_m, LSTMStateTuple(new_c, new_m)

