"""The rarer tf.contrib.rnn cells, part two: UGRNNCell, IntersectionRNNCell, IndRNNCell,
IndyGRUCell, IndyLSTMCell, SRUCell, MinimalRNNCell, CFNCell, PhasedLSTMCell and the
time-frequency LSTMs TimeFreqLSTMCell and GridLSTMCell, with TF 1.15's
arguments, state structures and variable names (part one, with the wrappers and LSTM
variants, is rnn_cells_more.py).

    cell = cf.contrib.rnn.IndyLSTMCell(64)
    outputs, state = cf.nn.dynamic_rnn(cell, x, dtype=cf.float32)
    # rnn/indy_lstm_cell/kernel_w [depth, 256], .../kernel_u [1, 256], .../bias [256]
"""
from __future__ import annotations

import collections
import math
from typing import Any, Optional, Tuple

from .. import initializers as _init
from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import nn_ops as _nn
from ..graph.ops.constant_op import stop_gradient
from ..graph.ops.random_ops import random_uniform
from ..graph.variable_scope import variable_scope
from ..nn.layers import _activation
from ..nn.rnn_cells import LSTMStateTuple, RNNCell
from .rnn_cells_more import _positive, _sharded

__all__ = ["UGRNNCell", "IntersectionRNNCell", "IndRNNCell", "IndyGRUCell", "IndyLSTMCell", "SRUCell",
           "MinimalRNNCell", "CFNCell", "PhasedLSTMCell", "TimeFreqLSTMCell", "GridLSTMCell"]


class _SimpleCell(RNNCell):
    """A cell whose state and output are one [batch, num_units] tensor."""

    def __init__(self, num_units: int, **kwargs: Any):
        super().__init__(**kwargs)
        self._num_units = _positive(type(self).__name__, "num_units", num_units)

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    def _check_rank(self, inputs: _g.Tensor) -> None:
        # TF's input_spec(ndim=2) of the layer cells
        if inputs.shape.rank is not None and inputs.shape.rank != 2:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: expected ndim=2, found "
                             f"ndim={inputs.shape.rank}. Full shape received: {inputs.shape}")


class UGRNNCell(_SimpleCell):
    """tf.contrib.rnn.UGRNNCell (Collins et al. 2017): one update gate between the state and a candidate.

        g, c = split([x, h] . kernel + bias, 2);  h' = sigmoid(g + forget_bias) h + (1 - sigmoid(..)) act(c)

    Variables kernel [depth + num_units, 2 num_units] (`initializer`), bias (zeros).
    """

    def __init__(self, num_units: int, initializer: Any = None, forget_bias: float = 1.0, activation: Any = None,
                 reuse: Any = None):
        super().__init__(num_units, reuse=reuse)
        self._initializer = _init.get(initializer)
        self._forget_bias = forget_bias
        self._activation = activation or _nn.tanh

    def _build(self, depth: int) -> None:
        n = self._num_units
        self._kernel = self.add_variable("kernel", [depth + n, 2 * n], initializer=self._initializer)
        self._bias = self.add_variable("bias", [2 * n], initializer=_init.Zeros())

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        g_act, c_act = _a.split(_nn.bias_add(_m.matmul(_a.concat([inputs, state], 1), self._kernel), self._bias), 2,
                                axis=1)
        g = _nn.sigmoid(g_act + self._forget_bias)
        h = g * state + (1.0 - g) * self._activation(c_act)
        return h, h


class IntersectionRNNCell(_SimpleCell):
    """tf.contrib.rnn.IntersectionRNNCell (+RNN, Collins et al. 2017): gated through time and depth.

        gh, hc, gy, yc = split([x, h] . kernel + bias, 4)
        h' = sigmoid(gh + fb) h + (1 - sigmoid(gh + fb)) tanh(hc)           (the state)
        y' = sigmoid(gy + fb) x + (1 - sigmoid(gy + fb)) y_activation(yc)   (the output)

    The inputs must have num_units features, or num_in_proj is set and they are first
    projected (in_projection/kernel, in_projection/bias).  Variables kernel [2 num_units, 4
    num_units] (`initializer`), bias (zeros).
    """

    def __init__(self, num_units: int, num_in_proj: Optional[int] = None, initializer: Any = None,
                 forget_bias: float = 1.0, y_activation: Any = None, reuse: Any = None):
        super().__init__(num_units, reuse=reuse)
        self._num_in_proj = num_in_proj
        self._initializer = _init.get(initializer)
        self._forget_bias = forget_bias
        self._y_activation = y_activation or _nn.relu

    def _build(self, depth: int) -> None:
        n, init = self._num_units, self._initializer
        self._in_proj = None
        if depth != n:
            if not self._num_in_proj:
                raise ValueError("Must have input size == output size for Intersection RNN. To fix, num_in_proj "
                                 "should be set to num_units at cell init.")
            with variable_scope("in_projection"):
                self._in_proj = (self.add_variable("kernel", [depth, n], initializer=init),
                                 self.add_variable("bias", [n], initializer=_init.Zeros()))
        self._kernel = self.add_variable("kernel", [2 * n, 4 * n], initializer=init)
        self._bias = self.add_variable("bias", [4 * n], initializer=_init.Zeros())

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        if self._in_proj is not None:
            inputs = _nn.bias_add(_m.matmul(inputs, self._in_proj[0]), self._in_proj[1])
        z = _nn.bias_add(_m.matmul(_a.concat([inputs, state], 1), self._kernel), self._bias)
        gh, hc, gy, yc = _a.split(z, 4, axis=1)
        gh = _nn.sigmoid(gh + self._forget_bias)
        gy = _nn.sigmoid(gy + self._forget_bias)
        new_h = gh * state + (1.0 - gh) * _nn.tanh(hc)
        new_y = gy * inputs + (1.0 - gy) * self._y_activation(yc)
        return new_y, new_h


def _recurrent_uniform() -> Any:
    return _init.RandomUniform(-1.0, 1.0)


class IndRNNCell(_SimpleCell):
    """tf.contrib.rnn.IndRNNCell (Li et al. 2018): h' = act(x . kernel_w + kernel_u * h + bias),
    one recurrent weight per unit.  Variables kernel_w [depth, num_units], kernel_u [1,
    num_units] (uniform in [-1, 1]), bias (zeros)."""

    def __init__(self, num_units: int, activation: Any = None, reuse: Any = None, name: Optional[str] = None,
                 dtype: Any = None):
        super().__init__(num_units, reuse=reuse, name=name, dtype=dtype)
        self._activation = _activation(activation) or _nn.tanh

    def _build(self, depth: int) -> None:
        n = self._num_units
        self._kernel_w = self.add_variable("kernel_w", [depth, n])
        self._kernel_u = self.add_variable("kernel_u", [1, n], initializer=_recurrent_uniform())
        self._bias = self.add_variable("bias", [n], initializer=_init.Zeros())

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        self._check_rank(inputs)
        h = self._activation(_nn.bias_add(_m.matmul(inputs, self._kernel_w) + state * self._kernel_u, self._bias))
        return h, h


class IndyGRUCell(_SimpleCell):
    """tf.contrib.rnn.IndyGRUCell: a GRU whose recurrent matrices are diagonal.

        r, u = split(sigmoid(x . gates/kernel_w + [h, h] * gates/kernel_u + gates/bias), 2)
        h' = u h + (1 - u) act(x . candidate/kernel + (r h) * candidate/kernel_u + candidate/bias)

    kernel_u's start uniform in [-1, 1]; gates/bias at one and candidate/bias at zero unless
    bias_initializer; the input kernels use kernel_initializer.
    """

    def __init__(self, num_units: int, activation: Any = None, reuse: Any = None, kernel_initializer: Any = None,
                 bias_initializer: Any = None, name: Optional[str] = None, dtype: Any = None):
        super().__init__(num_units, reuse=reuse, name=name, dtype=dtype)
        self._activation = _activation(activation) or _nn.tanh
        self._kernel_initializer = _init.get(kernel_initializer)
        self._bias_initializer = _init.get(bias_initializer)

    def _build(self, depth: int) -> None:
        n, ki, bi = self._num_units, self._kernel_initializer, self._bias_initializer
        self._gate_w = self.add_variable("gates/kernel_w", [depth, 2 * n], initializer=ki)
        self._gate_u = self.add_variable("gates/kernel_u", [1, 2 * n], initializer=_recurrent_uniform())
        self._gate_b = self.add_variable("gates/bias", [2 * n], initializer=bi or _init.Constant(1.0))
        self._cand_w = self.add_variable("candidate/kernel", [depth, n], initializer=ki)
        self._cand_u = self.add_variable("candidate/kernel_u", [1, n], initializer=_recurrent_uniform())
        self._cand_b = self.add_variable("candidate/bias", [n], initializer=bi or _init.Zeros())

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        self._check_rank(inputs)
        gates = _m.matmul(inputs, self._gate_w) + _a.concat([state, state], 1) * self._gate_u
        r, u = _a.split(_nn.sigmoid(_nn.bias_add(gates, self._gate_b)), 2, axis=1)
        cand = _nn.bias_add(_m.matmul(inputs, self._cand_w) + (r * state) * self._cand_u, self._cand_b)
        h = u * state + (1 - u) * self._activation(cand)
        return h, h


class IndyLSTMCell(RNNCell):
    """tf.contrib.rnn.IndyLSTMCell (Gonnet & Deselaers 2019): an LSTM whose recurrent matrices are diagonal.

        i, j, f, o = split(x . kernel_w + [h, h, h, h] * kernel_u + bias, 4)
        c' = c sigmoid(f + forget_bias) + sigmoid(i) act(j);  h' = act(c') sigmoid(o)

    Variables kernel_w [depth, 4 num_units] (kernel_initializer), kernel_u [1, 4 num_units]
    (uniform in [-1, 1]), bias (bias_initializer, else zeros).  State LSTMStateTuple(c, h).
    """

    def __init__(self, num_units: int, forget_bias: float = 1.0, activation: Any = None, reuse: Any = None,
                 kernel_initializer: Any = None, bias_initializer: Any = None, name: Optional[str] = None,
                 dtype: Any = None):
        super().__init__(reuse=reuse, name=name, dtype=dtype)
        self._num_units = _positive("IndyLSTMCell", "num_units", num_units)
        self._forget_bias = forget_bias
        self._activation = _activation(activation) or _nn.tanh
        self._kernel_initializer = _init.get(kernel_initializer)
        self._bias_initializer = _init.get(bias_initializer)

    @property
    def state_size(self) -> Any:
        return LSTMStateTuple(self._num_units, self._num_units)

    @property
    def output_size(self) -> int:
        return self._num_units

    _check_rank = _SimpleCell._check_rank

    def _build(self, depth: int) -> None:
        n = self._num_units
        self._kernel_w = self.add_variable("kernel_w", [depth, 4 * n], initializer=self._kernel_initializer)
        self._kernel_u = self.add_variable("kernel_u", [1, 4 * n], initializer=_recurrent_uniform())
        self._bias = self.add_variable("bias", [4 * n], initializer=self._bias_initializer or _init.Zeros())

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        self._check_rank(inputs)
        c, h = state
        z = _m.matmul(inputs, self._kernel_w) + _a.concat([h, h, h, h], 1) * self._kernel_u
        i, j, f, o = _a.split(_nn.bias_add(z, self._bias), 4, axis=1)
        act = self._activation
        new_c = c * _nn.sigmoid(f + self._forget_bias) + _nn.sigmoid(i) * act(j)
        new_h = act(new_c) * _nn.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)


class SRUCell(_SimpleCell):
    """tf.contrib.rnn.SRUCell (Lei et al. 2017): the simple recurrent unit.

        x~, f, r, x' = split(x . kernel, 4);  f, r = sigmoid([f, r] + bias)
        c' = f c + (1 - f) x~  (the state);   h = r act(c') + (1 - r) x'  (the output)

    Variables kernel [depth, 4 num_units], bias [2 num_units] (zeros).
    """

    def __init__(self, num_units: int, activation: Any = None, reuse: Any = None, name: Optional[str] = None):
        super().__init__(num_units, reuse=reuse, name=name)
        self._activation = _activation(activation) or _nn.tanh

    def _build(self, depth: int) -> None:
        n = self._num_units
        self._kernel = self.add_variable("kernel", [depth, 4 * n])
        self._bias = self.add_variable("bias", [2 * n], initializer=_init.Zeros())

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        self._check_rank(inputs)
        x_bar, f_in, r_in, x_tx = _a.split(_m.matmul(inputs, self._kernel), 4, axis=1)
        f, r = _a.split(_nn.sigmoid(_nn.bias_add(_a.concat([f_in, r_in], 1), self._bias)), 2, axis=1)
        c = f * state + (1.0 - f) * x_bar
        h = r * self._activation(c) + (1.0 - r) * x_tx
        return h, c


class _KerasStyleCell(_SimpleCell):
    """The Keras-style arguments MinimalRNNCell and CFNCell share: units, activation and the
    initializers as names or callables (bias ones by default)."""

    def __init__(self, units: int, activation: Any = "tanh", kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "ones", name: Optional[str] = None, dtype: Any = None, **kwargs: Any):
        super().__init__(units, name=name, dtype=dtype, **kwargs)
        self.units = self._num_units
        self._activation = _activation(activation) or (lambda t: t)
        self._kernel_initializer = _init.get(kernel_initializer)
        self._bias_initializer = _init.get(bias_initializer)


class MinimalRNNCell(_KerasStyleCell):
    """tf.contrib.rnn.MinimalRNNCell (Chen et al. 2018): z = act(x . W_x), u = sigmoid([z, h] . W + bias),
    h' = u h + (1 - u) z.  Variables kernel [depth + 2 units, units] (W_x above W), bias
    [units] (ones by default); Keras-style arguments (names or callables)."""

    def _build(self, depth: int) -> None:
        n = self._num_units
        self.kernel = self.add_variable("kernel", [depth + 2 * n, n], initializer=self._kernel_initializer)
        self.bias = self.add_variable("bias", [n], initializer=self._bias_initializer)

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        self._check_rank(inputs)
        w_x, w_g = _a.split(self.kernel, [self.input_depth, 2 * self._num_units], axis=0)
        z = self._activation(_m.matmul(inputs, w_x))
        u = _nn.sigmoid(_nn.bias_add(_m.matmul(_a.concat([z, state], 1), w_g), self.bias))
        h = u * state + (1 - u) * z
        return h, h


class CFNCell(_KerasStyleCell):
    """tf.contrib.rnn.CFNCell (Laurent & von Brecht 2017), the chaos-free network.

        theta, eta = split(sigmoid(h . recurrent_kernel + x . V + bias), 2)      (kernel = [V | W])
        h' = theta act(h) + (1 - eta) act(x . W)

    (1 - eta) as TF 1.15's, not the paper's eta.  Variables kernel [depth, 3 units],
    recurrent_kernel [units, 2 units] (both kernel_initializer), bias [2 units] (ones).
    """

    def _build(self, depth: int) -> None:
        n = self._num_units
        self.kernel = self.add_variable("kernel", [depth, 3 * n], initializer=self._kernel_initializer)
        self.recurrent_kernel = self.add_variable("recurrent_kernel", [n, 2 * n], initializer=self._kernel_initializer)
        self.bias = self.add_variable("bias", [2 * n], initializer=self._bias_initializer)

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        self._check_rank(inputs)
        v, w = _a.split(self.kernel, [2 * self._num_units, self._num_units], axis=1)
        gates = _m.matmul(state, self.recurrent_kernel) + _m.matmul(inputs, v)
        theta, eta = _a.split(_nn.sigmoid(_nn.bias_add(gates, self.bias)), 2, axis=1)
        act = self._activation
        h = theta * act(state) + (1 - eta) * act(_m.matmul(inputs, w))
        return h, h


class _ExpUniform:
    """exp(uniform(log minval, log maxval)): PhasedLSTMCell's period initializer."""

    def __init__(self, minval: float, maxval: float):
        self._uniform = _init.RandomUniform(math.log(minval), math.log(maxval))

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Any:
        return _m.exp(self._uniform(shape, dtype=dtype))


class _PhaseInit:
    """uniform(0, period's initial value): PhasedLSTMCell's phase initializer."""

    def __init__(self, period: Any):
        self._period = period

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Any:
        # TF draws it from the period's initial value, not the variable's (unset) value
        return random_uniform(shape, dtype=dtype) * self._period._initial_value


class PhasedLSTMCell(RNNCell):
    """tf.contrib.rnn.PhasedLSTMCell (Neil et al. 2016): an LSTM whose updates pass only in the
    open phase of a per-unit oscillation.

    Inputs are a pair (time [batch, 1], features [batch, depth]).  The LSTM step
    (mask_gates/kernel,bias -> input and forget gates from [x, h (, c)]; new_input/... ->
    tanh candidate from [x, h]; output_gate/... from [x, h (, c')], the c parts with
    use_peepholes) gives c~, h~; then with phi = ((t - phase) mod period) / period (the mod
    passing t's gradient, as TF's):

        k = 2 phi / r_on for phi < r_on / 2;  2 - 2 phi / r_on for phi < r_on;  leak * phi after
        c' = k c~ + (1 - k) c,  h' = k h~ + (1 - k) h

    Variables also period [num_units] (exp-uniform in [period_init_min, period_init_max]),
    phase (uniform in [0, period)), ratio_on (ratio_on; trainable_ratio_on).  phi is computed
    in the time's dtype and cast to the state's (TF 1.15 cast it to float32, so a float64 cell
    failed).  The runners take tensor inputs, so call this cell step by step with its (time,
    features) pairs.
    """

    def __init__(self, num_units: int, use_peepholes: bool = False, leak: float = 0.001, ratio_on: float = 0.1,
                 trainable_ratio_on: bool = True, period_init_min: float = 1.0, period_init_max: float = 1000.0,
                 reuse: Any = None):
        super().__init__(reuse=reuse)
        self._num_units = _positive("PhasedLSTMCell", "num_units", num_units)
        if not 0 < period_init_min < period_init_max:
            raise ValueError(f"PhasedLSTMCell: need 0 < period_init_min < period_init_max, got {period_init_min}, "
                             f"{period_init_max}")
        self._use_peepholes = bool(use_peepholes)
        self._leak = leak
        self._ratio_on = ratio_on
        self._trainable_ratio_on = bool(trainable_ratio_on)
        self._period_init = (period_init_min, period_init_max)

    @property
    def state_size(self) -> Any:
        return LSTMStateTuple(self._num_units, self._num_units)

    @property
    def output_size(self) -> int:
        return self._num_units

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> Tuple[Any, Any]:
        if not isinstance(inputs, (tuple, list)) or len(inputs) != 2:
            raise ValueError(f"PhasedLSTMCell: inputs must be a pair (time [batch, 1], features [batch, depth]), "
                             f"got {inputs!r}")
        time, x = _g.convert_to_tensor(inputs[0]), _g.convert_to_tensor(inputs[1])
        with self._cell_scope(scope):
            self._build_or_check(x.shape, x.dtype)
            return self.call((time, x), state)

    def _build(self, depth: int) -> None:
        n = self._num_units
        peep = n if self._use_peepholes else 0

        def linear(scope: str, rows: int, cols: int) -> Tuple[Any, Any]:
            with variable_scope(scope):
                return (self.add_variable("kernel", [rows, cols]),
                        self.add_variable("bias", [cols], initializer=_init.Zeros()))
        self._mask = linear("mask_gates", depth + n + peep, 2 * n)
        self._new_input = linear("new_input", depth + n, n)
        self._out_gate = linear("output_gate", depth + n + peep, n)
        self._period = self.add_variable("period", [n], initializer=_ExpUniform(*self._period_init))
        self._phase = self.add_variable("phase", [n], initializer=_PhaseInit(self._period))
        self._r_on = self.add_variable("ratio_on", [n], initializer=_init.Constant(self._ratio_on),
                                       trainable=self._trainable_ratio_on)

    def call(self, inputs: Any, state: Any) -> Tuple[Any, Any]:
        time, x = inputs
        c, h = state

        def dense(parts: list, wb: Tuple[Any, Any]) -> _g.Tensor:
            return _nn.bias_add(_m.matmul(_a.concat(parts, 1), wb[0]), wb[1])
        i, f = _a.split(_nn.sigmoid(dense([x, h] + ([c] if self._use_peepholes else []), self._mask)), 2, axis=1)
        cand_c = c * f + i * _nn.tanh(dense([x, h], self._new_input))
        o = _nn.sigmoid(dense([x, h] + ([cand_c] if self._use_peepholes else []), self._out_gate))
        cand_h = _nn.tanh(cand_c) * o
        def as_dtype(v: Any, dt: Any) -> _g.Tensor:
            v = _g.convert_to_tensor(v)
            return v if v.dtype.base_dtype == dt else _m.cast(v, dt)
        # the cycle ratio in the time's dtype (float64 times keep their precision), then the state's
        period, phase = as_dtype(self._period, time.dtype), as_dtype(self._phase, time.dtype)
        shifted = time - phase
        # the mod's value with shifted's gradient (TF's _mod)
        phi = as_dtype((stop_gradient(_m.mod(shifted, period) - shifted) + shifted) / period, c.dtype)
        r_on = as_dtype(self._r_on, c.dtype)
        k_up = 2 * phi / r_on
        k = _a.where(phi < 0.5 * r_on, k_up, _a.where(phi < r_on, 2 - k_up, self._leak * phi))
        new_c = k * cand_c + (1 - k) * c
        new_h = k * cand_h + (1 - k) * h
        return new_h, LSTMStateTuple(new_c, new_h)


# -- time-frequency LSTMs (Sainath & Li 2016; Kalchbrenner et al. 2016) ---------------------------


def _freq_slices(inputs: _g.Tensor, depth: int, feature_size: int, skip: int, start: int, count: int) -> list:
    """`count` windows of feature_size features, `skip` apart from `start`."""
    return [inputs[:, start + f * skip:start + f * skip + feature_size] for f in range(count)]


def _count_windows(what: str, size: int, feature_size: Any, skip: Any) -> int:
    if feature_size is None or skip is None:
        raise ValueError(f"{what}: feature_size and frequency_skip must be set")
    return int((size - feature_size) / skip) + 1


class TimeFreqLSTMCell(RNNCell):
    """tf.contrib.rnn.TimeFreqLSTMCell (Sainath & Li 2016): an LSTM scanned along the frequency
    windows of each frame (feature_size features, frequency_skip apart), window k reading
    [x_k, m_k(t-1), m_{k-1}(t)] through one shared W [feature_size + 2 num_units, 4 num_units]
    (W_0, ... with num_unit_shards) and B (zeros); gates i, j, f, o, peepholes W_F_diag,
    W_I_diag, W_O_diag, cell_clip.  The state is [c_0, m_0, c_1, m_1, ...] concatenated, the
    output [m_0, m_1, ...].  state_size and output_size count every window once the cell is
    built (TF 1.15 reported 2 num_units and num_units, the one-window sizes, whatever the inputs).
    """

    def __init__(self, num_units: int, use_peepholes: bool = False, cell_clip: Optional[float] = None,
                 initializer: Any = None, num_unit_shards: int = 1, forget_bias: float = 1.0,
                 feature_size: Optional[int] = None, frequency_skip: int = 1, reuse: Any = None):
        super().__init__(reuse=reuse)
        self._num_units = _positive("TimeFreqLSTMCell", "num_units", num_units)
        self._use_peepholes = bool(use_peepholes)
        self._cell_clip = cell_clip
        self._initializer = _init.get(initializer)
        self._num_unit_shards = _positive("TimeFreqLSTMCell", "num_unit_shards", num_unit_shards)
        self._forget_bias = forget_bias
        self._feature_size = feature_size
        self._frequency_skip = frequency_skip
        self._windows = 1

    @property
    def state_size(self) -> int:
        return 2 * self._num_units * self._windows

    @property
    def output_size(self) -> int:
        return self._num_units * self._windows

    def _build(self, depth: int) -> None:
        self._windows = _count_windows("TimeFreqLSTMCell", depth, self._feature_size, self._frequency_skip)
        if self._windows < 1:
            raise ValueError(f"TimeFreqLSTMCell: feature_size {self._feature_size} is larger than the inputs' {depth}")
        n = self._num_units
        self._w = _sharded(self, "W", [self._feature_size + 2 * n, 4 * n], self._num_unit_shards, self._initializer)
        self._b = self.add_variable("B", [4 * n], initializer=_init.Zeros())
        if self._use_peepholes:
            self._diag = [self.add_variable(f"W_{g}_diag", [n]) for g in "FIO"]

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        sigmoid, tanh = _nn.sigmoid, _nn.tanh
        windows = _freq_slices(inputs, self.input_depth, self._feature_size, self._frequency_skip, 0, self._windows)
        parts = _a.split(state, 2 * self._windows, axis=1)
        m_freq = _a.zeros_like(parts[1])
        states, outs = [], []
        for k, x_k in enumerate(windows):
            c_prev, m_prev = parts[2 * k], parts[2 * k + 1]
            i, j, f, o = _a.split(_nn.bias_add(_m.matmul(_a.concat([x_k, m_prev, m_freq], 1), self._w), self._b), 4,
                                  axis=1)
            if self._use_peepholes:
                wf, wi, wo = self._diag
                c = sigmoid(f + self._forget_bias + wf * c_prev) * c_prev + sigmoid(i + wi * c_prev) * tanh(j)
            else:
                c = sigmoid(f + self._forget_bias) * c_prev + sigmoid(i) * tanh(j)
            if self._cell_clip is not None:
                c = _m.clip_by_value(c, -self._cell_clip, self._cell_clip)
            m = sigmoid(o + self._diag[2] * c if self._use_peepholes else o) * tanh(c)
            m_freq = m
            states += [c, m]
            outs.append(m)
        return _a.concat(outs, 1), _a.concat(states, 1)


class GridLSTMCell(RNNCell):
    """tf.contrib.rnn.GridLSTMCell (Kalchbrenner et al. 2016; peepholes after Sainath & Li): per
    frequency block b and window k, a frequency LSTM (W_f_b, B_f_b) and a time LSTM (W_t_b,
    B_t_b, or the frequency weights with share_time_frequency_weights) both read [x_k,
    m_time(t-1), m_freq(k-1)]; gates i, j, f, o (i, j, o with couple_input_forget_gates, f = 1 - i).

        c_freq = f_F c_freq(k-1) + i_F tanh(j_F),  c_time = f_T c_time(t-1) + i_T tanh(j_T)  (clipped)
        m_freq = sigmoid(o_F [+ W_O_diag_freqf_b c_freq + W_O_diag_freqt_b c_time]) tanh(c_freq), m_time alike

    with peepholes on c_freq(k-1) and c_time(t-1) in the i and f gates (W_{F,I}_diag_{freq,time}{f,t}_b).
    The windows: feature_size features frequency_skip apart over the whole input
    (num_frequency_blocks = [count]), or over [start_freqindex_list[b], end_freqindex_list[b])
    per block.  The state is GridLSTMStateTuple(state_f00_b00_c, state_f00_b00_m, ...) (the
    time LSTMs' c and m), or their concatenation; the output is [m_time, m_freq] of every window.
    A concatenated state of several blocks is read block by block (TF 1.15 read every block's
    windows from the first block's slots).
    """

    def __init__(self, num_units: int, use_peepholes: bool = False, share_time_frequency_weights: bool = False,
                 cell_clip: Optional[float] = None, initializer: Any = None, num_unit_shards: int = 1,
                 forget_bias: float = 1.0, feature_size: Optional[int] = None, frequency_skip: Optional[int] = None,
                 num_frequency_blocks: Any = None, start_freqindex_list: Any = None, end_freqindex_list: Any = None,
                 couple_input_forget_gates: bool = False, state_is_tuple: bool = True, reuse: Any = None):
        super().__init__(reuse=reuse)
        if num_frequency_blocks is None:
            raise ValueError("Must specify num_frequency_blocks")
        self._num_units = _positive("GridLSTMCell", "num_units", num_units)
        self._use_peepholes = bool(use_peepholes)
        self._share = bool(share_time_frequency_weights)
        self._cell_clip = cell_clip
        self._initializer = _init.get(initializer)
        self._num_unit_shards = _positive("GridLSTMCell", "num_unit_shards", num_unit_shards)
        self._forget_bias = forget_bias
        self._feature_size = feature_size
        self._frequency_skip = frequency_skip
        self._blocks = [int(b) for b in num_frequency_blocks]
        self._starts = list(start_freqindex_list) if start_freqindex_list else None
        self._ends = list(end_freqindex_list) if end_freqindex_list is not None else None
        if self._starts is not None:
            if self._ends is None or len(self._starts) != len(self._ends):
                raise ValueError(f"Length of start and end freqindex_list does not match {len(self._starts)} "
                                 f"{len(self._ends or [])}")
            if len(self._blocks) != len(self._starts):
                raise ValueError(f"Length of num_frequency_blocks is not equal to start_freqindex_list "
                                 f"{len(self._blocks)} {len(self._starts)}")
        elif len(self._blocks) != 1:
            raise ValueError(f"Length of num_frequency_blocks is not 1, but instead is {len(self._blocks)}")
        self._couple = bool(couple_input_forget_gates)
        self._state_is_tuple = bool(state_is_tuple)
        self._names = [f"state_f{k:02d}_b{b:02d}" for b, count in enumerate(self._blocks) for k in range(count)]
        total = len(self._names)
        if self._state_is_tuple:
            fields = [f"{p}_{s}" for p in self._names for s in "cm"]
            self._state_tuple_type = collections.namedtuple("GridLSTMStateTuple", fields)
            self._state_size = self._state_tuple_type(*([self._num_units] * 2 * total))
        else:
            self._state_tuple_type = None
            self._state_size = 2 * self._num_units * total
        self._output_size = 2 * self._num_units * total

    @property
    def state_size(self) -> Any:
        return self._state_size

    @property
    def output_size(self) -> int:
        return self._output_size

    @property
    def state_tuple_type(self) -> Any:
        return self._state_tuple_type

    def _windows(self, depth: int) -> list:
        """(start, count) per block, checked against num_frequency_blocks as TF checks them."""
        spans = [(0, depth)] if self._starts is None else list(zip(self._starts, self._ends))
        out = []
        for b, (start, end) in enumerate(spans):
            count = _count_windows("GridLSTMCell", end - start, self._feature_size, self._frequency_skip)
            if count != self._blocks[b]:
                raise ValueError(f"Invalid num_frequency_blocks, requires {self._blocks[b]} but gets {count}, please "
                                 "check the input size and filter config are correct.")
            if start + (count - 1) * self._frequency_skip + self._feature_size > depth:
                raise ValueError(f"GridLSTMCell: block {b}'s windows end past the inputs' {depth} features")
            out.append((start, count))
        return out

    def _build(self, depth: int) -> None:
        self._spans = self._windows(depth)
        n, gates = self._num_units, 3 if self._couple else 4
        shape = [self._feature_size + 2 * n, gates * n]
        self._params = []
        for b in range(len(self._blocks)):
            p: dict = {"W_f": _sharded(self, f"W_f_{b}", shape, self._num_unit_shards, self._initializer),
                       "B_f": self.add_variable(f"B_f_{b}", [gates * n], initializer=_init.Zeros())}
            if not self._share:
                p["W_t"] = _sharded(self, f"W_t_{b}", shape, self._num_unit_shards, self._initializer)
                p["B_t"] = self.add_variable(f"B_t_{b}", [gates * n], initializer=_init.Zeros())
            if self._use_peepholes:
                for kind in ("freq",) + (() if self._share else ("time",)):
                    for g in ("F", "I", "O"):
                        if g == "F" and self._couple:
                            continue
                        for src in "ft":
                            p[f"{g}{kind}{src}"] = self.add_variable(f"W_{g}_diag_{kind}{src}_{b}", [n])
            self._params.append(p)

    def _state_parts(self, state: Any) -> list:
        if self._state_is_tuple:
            return [(getattr(state, p + "_c"), getattr(state, p + "_m")) for p in self._names]
        flat = _a.split(state, 2 * len(self._names), axis=1)
        return [(flat[2 * i], flat[2 * i + 1]) for i in range(len(self._names))]

    def _gates(self, z: _g.Tensor) -> Tuple[Any, Any, Any, Any]:
        if self._couple:
            i, j, o = _a.split(z, 3, axis=1)
            return i, j, None, o
        i, j, f, o = _a.split(z, 4, axis=1)
        return i, j, f, o

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, Any]:
        sigmoid, tanh, clip = _nn.sigmoid, _nn.tanh, self._cell_clip
        prev = self._state_parts(state)
        new_states, outs = [], []
        idx = 0
        for b, (start, count) in enumerate(self._spans):
            p = self._params[b]
            kind_t = "freq" if self._share else "time"
            windows = _freq_slices(inputs, self.input_depth, self._feature_size, self._frequency_skip, start, count)
            m_freq = c_freq = _a.zeros_like(prev[idx][0])
            for x_k in windows:
                c_time, m_time = prev[idx]
                idx += 1
                z_in = _a.concat([x_k, m_time, m_freq], 1)
                i_f, j_f, f_f, o_f = self._gates(_nn.bias_add(_m.matmul(z_in, p["W_f"]), p["B_f"]))
                if self._share:
                    i_t, j_t, f_t, o_t = i_f, j_f, f_f, o_f
                else:
                    i_t, j_t, f_t, o_t = self._gates(_nn.bias_add(_m.matmul(z_in, p["W_t"]), p["B_t"]))

                def peep(g: str, kind: str, a: _g.Tensor, b_: _g.Tensor) -> Any:
                    if not self._use_peepholes:
                        return 0.0
                    return p[f"{g}{kind}f"] * a + p[f"{g}{kind}t"] * b_

                def cell(i: Any, j: Any, f: Any, kind: str, c_self: Any) -> Any:
                    ig = sigmoid(i + peep("I", kind, c_freq, c_time))
                    fg = 1.0 - ig if self._couple else sigmoid(f + self._forget_bias + peep("F", kind, c_freq, c_time))
                    c_new = fg * c_self + ig * tanh(j)
                    return _m.clip_by_value(c_new, -clip, clip) if clip is not None else c_new
                new_c_freq = cell(i_f, j_f, f_f, "freq", c_freq)
                new_c_time = cell(i_t, j_t, f_t, kind_t, c_time)
                new_m_freq = sigmoid(o_f + peep("O", "freq", new_c_freq, new_c_time)) * tanh(new_c_freq)
                new_m_time = sigmoid(o_t + peep("O", kind_t, new_c_freq, new_c_time)) * tanh(new_c_time)
                m_freq, c_freq = new_m_freq, new_c_freq
                new_states += [new_c_time, new_m_time]
                outs += [new_m_time, new_m_freq]
        if self._state_is_tuple:
            new_state = self._state_tuple_type(*new_states)
        else:
            new_state = _a.concat(new_states, 1)
        return _a.concat(outs, 1), new_state
