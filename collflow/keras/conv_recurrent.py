"""TF 1.15's tf.keras.layers.ConvLSTM2D, CuDNNLSTM and CuDNNGRU, as RNN layers
(keras/rnn_layer.py) over private cells.

ConvLSTM2D: inputs [batch, time, rows, cols, channels] (channels_last; channels_first runs
between transposes); kernel
[kh, kw, channels, 4*filters], recurrent_kernel [kh, kw, filters, 4*filters], bias
[4*filters] (gates i, f, c, o, unit_forget_bias); each gate's input part is a convolution with
the layer's strides / padding / dilation, its recurrent part a stride-1 "same" convolution of h;
states h and c [batch, rows', cols', filters].  dropout / recurrent_dropout masks (per gate,
the shape of the inputs / of h) are drawn once per call and reused at every step.

CuDNNLSTM / CuDNNGRU: TensorFlow runs them on cuDNN only (on a CPU they fail); collflow runs the
same math anywhere.  Their weights are Keras's canonical layout, as Keras's CuDNN layers keep
them (and write them to HDF5 files): kernel [in, 4u | 3u], recurrent_kernel [u, 4u | 3u] in the
gate order i, f, c, o (LSTM) or z, r, h (GRU), and one flat bias of two halves, the input
bias then the recurrent bias ([8u] / [6u]; CuDNNLSTM's unit_forget_bias puts its ones in the
recurrent forget half, as Keras).  The math is LSTM with sigmoid gates and both biases added,
and GRU reset_after=True with sigmoid gates (the recurrent bias inside the reset product).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from ..graph.ops import array_ops as _a
from ..graph.ops import nn_ops as _nn
from ..graph.ops.constant_op import constant
from ..graph.shape import TensorShape
from ..graph import initializers as _init
from ..nn import layers as _fl
from .initializers import get as _get_init
from .losses import activation as _activation
from .rnn_cells import AbstractRNNCell, GRUCell, LSTMCell
from .rnn_layer import RNN

__all__ = ["ConvLSTM2D", "CuDNNLSTM", "CuDNNGRU"]


def _pair(v: Any) -> tuple:
    return (int(v), int(v)) if isinstance(v, (int, np.integer)) else tuple(int(e) for e in v)


def _conv_length(n: Optional[int], k: int, stride: int, padding: str, dilation: int) -> Optional[int]:
    if n is None:
        return None
    eff = (k - 1) * dilation + 1
    return (n + stride - 1) // stride if padding == "same" else (n - eff + stride) // stride


class _ConvLSTM2DCell(AbstractRNNCell):
    """One ConvLSTM2D step; its state_size is known once it is built (it needs the rows and
    columns of the inputs)."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any, padding: str, dilation_rate: Any,
                 activation: Any, recurrent_activation: Any, use_bias: bool, inits: tuple, regs: tuple,
                 constraints: tuple, unit_forget_bias: bool, dropout: float, recurrent_dropout: float,
                 name: Optional[str] = None):
        super().__init__(name=name)
        self.filters, self.kernel_size, self.strides = int(filters), _pair(kernel_size), _pair(strides)
        self.padding, self.dilation_rate = padding.lower(), _pair(dilation_rate)
        self.activation, self.recurrent_activation = _activation(activation), _activation(recurrent_activation)
        self.use_bias, self._inits, self._regs, self._constraints = use_bias, inits, regs, constraints
        self.unit_forget_bias = unit_forget_bias
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self._out_hw: Any = None
        self._held_masks: Any = None

    @property
    def state_size(self) -> Any:
        if self._out_hw is None:
            return None  # known once built (from the inputs' rows and columns)
        s = TensorShape([self._out_hw[0], self._out_hw[1], self.filters])
        return [s, s]

    @property
    def output_size(self) -> Any:
        return None if self._out_hw is None else self.state_size[0]

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape).as_list()  # [batch, rows, cols, channels]
        if shape[1] is None or shape[2] is None:
            raise ValueError("collflow's ConvLSTM2D needs the rows and columns of its inputs known")
        self._out_hw = tuple(_conv_length(shape[1 + i], self.kernel_size[i], self.strides[i], self.padding,
                                          self.dilation_rate[i]) for i in range(2))
        kh, kw = self.kernel_size
        f = self.filters
        self.kernel = self.add_weight("kernel", [kh, kw, shape[-1], 4 * f], initializer=self._inits[0],
                                      regularizer=self._regs[0], constraint=self._constraints[0])
        self.recurrent_kernel = self.add_weight("recurrent_kernel", [kh, kw, f, 4 * f], initializer=self._inits[1],
                                                regularizer=self._regs[1], constraint=self._constraints[1])
        if self.use_bias:
            init = _ForgetOnes(f, f) if self.unit_forget_bias else self._inits[2]
            self.bias = self.add_weight("bias", [4 * f], initializer=init, regularizer=self._regs[2],
                                        constraint=self._constraints[2])
        else:
            self.bias = None
        self.built = True

    def _masks(self, like_x: Any, like_h: Any, training: Any) -> Any:
        def draw(like: Any, rate: float) -> List[Any]:
            if not rate:
                return []
            ones = _a.ones_like(like)
            return [_fl.dropout(ones, rate, training=training, name="dropout_mask") for _ in range(4)]
        return draw(like_x, self.dropout), draw(like_h, self.recurrent_dropout)

    def _begin_masks(self, x_step: Any, h_step: Any, training: Any) -> None:
        self._held_masks = self._masks(x_step, h_step, training)
        self._dropout_masks = self._held_masks

    def _end_masks(self) -> None:
        self._held_masks = None

    def call(self, inputs: Any, states: Any, training: Any = None) -> Any:
        h, c = states
        in_masks, rec_masks = self._held_masks if self._held_masks is not None else \
            self._masks(inputs, h, training)
        f = self.filters
        dil = [1, self.dilation_rate[0], self.dilation_rate[1], 1]
        parts = []
        for g in range(4):
            xg = inputs * in_masks[g] if in_masks else inputs
            hg = h * rec_masks[g] if rec_masks else h
            zx = _nn.conv2d(xg, self.kernel[:, :, :, g * f:(g + 1) * f], [1, *self.strides, 1],
                            self.padding.upper(), dilations=dil)
            if self.bias is not None:
                zx = zx + self.bias[g * f:(g + 1) * f]
            zh = _nn.conv2d(hg, self.recurrent_kernel[:, :, :, g * f:(g + 1) * f], [1, 1, 1, 1], "SAME")
            parts.append(zx + zh)
        i, fg, o = (self.recurrent_activation(parts[k]) for k in (0, 1, 3))
        c = fg * c + i * self.activation(parts[2])
        h = o * self.activation(c)
        return h, [h, c]


class _ForgetOnes(_init.Initializer):
    """Zeros with ones in [start, start + n) (the forget gate's bias)."""

    def __init__(self, start: int, n: int):
        self.start, self.n = start, n

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Any:
        b = np.zeros(tuple(int(d) for d in shape), dtype=np.float32)
        b[self.start:self.start + self.n] = 1.0
        return constant(b, dtype=dtype)


class ConvLSTM2D(RNN):
    """TF 1.15's ConvLSTM2D (see the module doc); data_format channels_last, or channels_first
    ([batch, time, channels, rows, cols] in, the outputs and states channels first)."""
    _base = "conv_lst_m2d"

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
                 data_format: Optional[str] = None, dilation_rate: Any = (1, 1), activation: Any = "tanh",
                 recurrent_activation: Any = "hard_sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", recurrent_initializer: Any = "orthogonal",
                 bias_initializer: Any = "zeros", unit_forget_bias: bool = True, kernel_regularizer: Any = None,
                 recurrent_regularizer: Any = None, bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, recurrent_constraint: Any = None, bias_constraint: Any = None,
                 return_sequences: bool = False, go_backwards: bool = False, stateful: bool = False,
                 dropout: float = 0.0, recurrent_dropout: float = 0.0, return_state: bool = False, **kwargs: Any):
        from . import backend as K
        # channels_first runs the channels-last cell between transposes (the weights are the same)
        self._channels_first = K.normalize_data_format(data_format) == "channels_first"
        if padding.lower() not in ("valid", "same"):
            raise ValueError(f"The `padding` argument must be one of 'valid', 'same'. Received: {padding}")
        inits = tuple(_get_init(i) for i in (kernel_initializer, recurrent_initializer, bias_initializer))
        cell = _ConvLSTM2DCell(filters, kernel_size, strides, padding, dilation_rate, activation,
                               recurrent_activation, use_bias, inits,
                               (kernel_regularizer, recurrent_regularizer, bias_regularizer),
                               (kernel_constraint, recurrent_constraint, bias_constraint), unit_forget_bias,
                               dropout, recurrent_dropout)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, **kwargs)
        self.filters, self.kernel_size = cell.filters, cell.kernel_size

    def _call(self, x: Any, name: Any, reuse: Any, mask: Any = None, training: Any = None) -> Any:
        if x.shape.rank != 5:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: expected ndim=5, "
                             f"found ndim={x.shape.rank}. Full shape received: {x.shape}")
        if not self._channels_first:
            return super()._call(x, name, reuse, mask=mask, training=training)
        out = super()._call(_a.transpose(x, [0, 1, 3, 4, 2]), name, reuse, mask=mask, training=training)

        def back(t: Any) -> Any:  # [.., rows, cols, filters] -> [.., filters, rows, cols]
            return _a.transpose(t, [0, 1, 4, 2, 3] if t.shape.rank == 5 else [0, 3, 1, 2])
        return [back(t) for t in out] if isinstance(out, (list, tuple)) else back(out)

    def _begin_cell(self, xt: Any, batch: Any, training: Any) -> None:
        cell = self.cell
        h = _a.zeros(_a.stack([batch, cell._out_hw[0], cell._out_hw[1], cell.filters]), dtype=xt.dtype)
        cell._begin_masks(xt[0], h, training)


class _CuDNNLSTMCell(LSTMCell):
    def _bias_initializer(self) -> Any:
        # Keras's CuDNNLSTM: the ones in the recurrent half's forget gate
        return _ForgetOnes(5 * self.units, self.units) if self._unit_forget_bias else self._inits[2]

    def _bias_shape(self) -> List[int]:
        return [8 * self.units]

    def call(self, inputs: Any, states: Any, training: Any = None) -> Any:
        u = self.units
        xz = self._project(inputs, self.kernel, [], None, int(inputs.shape.dims[-1]))
        if self.bias is not None:
            xz = xz + self.bias[:4 * u] + self.bias[4 * u:]
        new = list(self._step(xz, list(states), self.recurrent_kernel, None, []))
        return new[0], new


class _CuDNNGRUCell(GRUCell):
    def _bias_shape(self) -> List[int]:
        return [6 * self.units]

    def call(self, inputs: Any, states: Any, training: Any = None) -> Any:
        u = self.units
        h = states[0] if isinstance(states, (list, tuple)) else states
        xz = self._project(inputs, self.kernel, [], None, int(inputs.shape.dims[-1]))
        bias = _a.reshape(self.bias, [2, 3 * u]) if self.bias is not None else None
        if bias is not None:
            xz = xz + bias[0]
        # the cuDNN form is GRU reset_after: the layer's step with the bias as its two rows
        (new,) = self._step(xz, [h], self.recurrent_kernel, bias, [])
        return new, [new]


def _cudnn_init(self: Any, cell: Any, return_sequences: bool, return_state: bool, go_backwards: bool,
                stateful: bool, kwargs: Dict[str, Any]) -> None:
    RNN.__init__(self, cell, return_sequences=return_sequences, return_state=return_state,
                 go_backwards=go_backwards, stateful=stateful, **kwargs)
    self.units = cell.units


class CuDNNLSTM(RNN):
    """TF 1.15's CuDNNLSTM (sigmoid gates, tanh, two biases), run on NumPy kernels."""
    _base = "cu_dnnlstm"
    _consumes_mask = False  # cuDNN takes no mask: Keras drops it

    def __init__(self, units: int, kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 unit_forget_bias: bool = True, kernel_regularizer: Any = None, recurrent_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None, kernel_constraint: Any = None,
                 recurrent_constraint: Any = None, bias_constraint: Any = None, return_sequences: bool = False,
                 return_state: bool = False, go_backwards: bool = False, stateful: bool = False, **kwargs: Any):
        cell = _CuDNNLSTMCell(units, "tanh", "sigmoid", True, kernel_initializer, recurrent_initializer,
                              bias_initializer, unit_forget_bias, kernel_regularizer, recurrent_regularizer,
                              bias_regularizer, kernel_constraint, recurrent_constraint, bias_constraint)
        _cudnn_init(self, cell, return_sequences, return_state, go_backwards, stateful, kwargs)


class CuDNNGRU(RNN):
    """TF 1.15's CuDNNGRU (GRU reset_after with sigmoid gates, two biases), run on NumPy kernels."""
    _base = "cu_dnngru"
    _consumes_mask = False

    def __init__(self, units: int, kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None, recurrent_constraint: Any = None,
                 bias_constraint: Any = None, return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, **kwargs: Any):
        cell = _CuDNNGRUCell(units, "tanh", "sigmoid", True, kernel_initializer, recurrent_initializer,
                             bias_initializer, kernel_regularizer, recurrent_regularizer, bias_regularizer,
                             kernel_constraint, recurrent_constraint, bias_constraint, reset_after=True)
        _cudnn_init(self, cell, return_sequences, return_state, go_backwards, stateful, kwargs)
