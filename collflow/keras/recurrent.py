"""tf.keras's recurrent layers in TF1's graph mode: SimpleRNN, LSTM, GRU, with Keras's weights
(kernel [in, k*units], recurrent_kernel [units, k*units], bias; gate orders i,f,c,o for LSTM
and z,r,h for GRU), initializers (glorot_uniform, orthogonal, zeros; LSTM's unit_forget_bias)
and TF 1.15's defaults (recurrent_activation "hard_sigmoid", GRU reset_after=False).

The input projection of every step is one matmul before the loop; the loop is cf.scan over
time, so gradients flow as through any collflow loop.  return_sequences, return_state,
go_backwards and initial_state are supported; dropout, masks and stateful layers are not.
"""
from __future__ import annotations

from typing import Any, List

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph import initializers as _init
from ..graph.functional_ops import scan
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops.reverse_ops import reverse
from ..graph.variable_scope import get_variable, variable_scope
from ..nn import layer_classes as _lc
from .layers import _KerasMixin, _input_shape_kwargs
from .losses import activation as _activation

__all__ = ["SimpleRNN", "LSTM", "GRU"]


class _UnitForgetBias(_init.Initializer):
    """LSTM's bias: ones for the forget gate, zeros elsewhere (Keras's unit_forget_bias)."""

    def __init__(self, units: int):
        self.units = units

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Any:
        b = np.zeros(tuple(int(d) for d in shape), dtype=np.float32)
        b[self.units:2 * self.units] = 1.0
        from ..graph.ops.constant_op import constant
        return constant(b, dtype=dtype)


class _Recurrent(_KerasMixin, _lc.Layer):
    _gates = 1
    _n_states = 1
    _consumes_mask = True

    def __init__(self, units: int, activation: Any = "tanh", recurrent_activation: Any = "hard_sigmoid",
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None, bias_regularizer: Any = None,
                 dropout: float = 0.0, recurrent_dropout: float = 0.0, return_sequences: bool = False,
                 return_state: bool = False, go_backwards: bool = False, stateful: bool = False,
                 unroll: bool = False, **kwargs: Any):
        if dropout or recurrent_dropout or stateful:
            raise NotImplementedError(f"{type(self).__name__}: dropout, recurrent_dropout and stateful are not "
                                      "supported by collflow's Keras")
        for k in ("implementation", "time_major", "reset_after", "unit_forget_bias"):
            kwargs.pop(k, None)
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        super().__init__(kwargs.pop("trainable", True), kwargs.pop("name", None), **kwargs)
        self.units = int(units)
        self.activation = _activation(activation)
        self.recurrent_activation = _activation(recurrent_activation)
        self.use_bias = use_bias
        from .initializers import get as _get_init
        self._inits = (_get_init(kernel_initializer), _get_init(recurrent_initializer), _get_init(bias_initializer))
        self._regs = (kernel_regularizer, recurrent_regularizer, bias_regularizer)
        self.return_sequences, self.return_state, self.go_backwards = return_sequences, return_state, go_backwards

    def __call__(self, inputs: Any, initial_state: Any = None, training: Any = None, **kwargs: Any) -> Any:
        self._initial_state = initial_state
        return super().__call__(inputs, **kwargs)

    def _bias_shape(self) -> List[int]:
        return [self._gates * self.units]

    def _bias_initializer(self) -> Any:
        return self._inits[2]

    def _output_mask(self, inputs: Any, mask: Any) -> Any:
        return mask if self.return_sequences else None

    def _call(self, x: Any, name: Any, reuse: Any, mask: Any = None) -> Any:
        if x.shape.rank != 3 or x.shape.dims[-1] is None:
            raise ValueError(f"{type(self).__name__} expects inputs [batch, time, features] with known features, "
                             f"got shape {x.shape}")
        depth, u, k = int(x.shape.dims[-1]), self.units, self._gates
        with variable_scope(name, reuse=reuse):
            kernel = get_variable("kernel", [depth, k * u], x.dtype, self._inits[0], self._regs[0],
                                  trainable=self.trainable)
            rec = get_variable("recurrent_kernel", [u, k * u], x.dtype, self._inits[1], self._regs[1],
                               trainable=self.trainable)
            bias = get_variable("bias", self._bias_shape(), x.dtype, self._bias_initializer(), self._regs[2],
                                trainable=self.trainable) if self.use_bias else None
            batch = _a.shape(x)[0]
            flat = _a.reshape(x, [-1, depth])
            proj = _m.matmul(flat, kernel)
            if bias is not None:
                proj = proj + (bias if len(self._bias_shape()) == 1 else bias[0])
            proj = _a.transpose(_a.reshape(proj, _a.stack([batch, -1, k * u])), [1, 0, 2])  # time-major
            if self.go_backwards:
                proj = reverse(proj, [0])
            states = self._initial_states(x, batch)
            if mask is None:
                def step(carry: Any, xz: Any) -> Any:
                    return self._step(xz, carry, rec, bias)
                seq = scan(step, proj, initializer=tuple(states))
                seq_out, last = seq[0], [s[-1] for s in seq]
                last_out = last[0]
            else:
                # a masked step keeps the states and repeats the previous output (zeros before the
                # first real step), as Keras's rnn does
                m = _a.transpose(_m.cast(mask, _dt.bool_), [1, 0])
                if self.go_backwards:
                    m = reverse(m, [0])
                zeros = _a.zeros(_a.stack([batch, u]), dtype=x.dtype)

                def step(carry: Any, elem: Any) -> Any:
                    xz, keep = elem
                    keep = _a.expand_dims(keep, -1)
                    new = self._step(xz, carry[:-1], rec, bias)
                    kept = tuple(_a.where(_a.tile(keep, [1, u]), n, o) for n, o in zip(new, carry[:-1]))
                    return kept + (_a.where(_a.tile(keep, [1, u]), new[0], carry[-1]),)
                seq = scan(step, (proj, m), initializer=tuple(states) + (zeros,))
                seq_out, last, last_out = seq[-1], [s[-1] for s in seq[:-1]], seq[-1][-1]
            outputs = _a.transpose(seq_out, [1, 0, 2])
            outputs.set_shape([x.shape.dims[0], x.shape.dims[1], u])  # the scan keeps no static time length
        out = outputs if self.return_sequences else last_out
        if self.return_state:
            return [out] + last
        return out

    def _initial_states(self, x: Any, batch: Any) -> List[Any]:
        given = self._initial_state
        if given is not None:
            given = list(given) if isinstance(given, (list, tuple)) else [given]
            if len(given) != self._n_states:
                raise ValueError(f"{type(self).__name__} takes {self._n_states} initial state(s), got {len(given)}")
            return [_g.convert_to_tensor(s) for s in given]
        zero = _a.zeros(_a.stack([batch, self.units]), dtype=x.dtype)
        return [zero] * self._n_states

    def _step(self, xz: Any, carry: Any, rec: Any, bias: Any) -> Any:
        raise NotImplementedError


class SimpleRNN(_Recurrent):
    """h = activation(x W + h U + b)."""
    _base = "simple_rnn"

    def _step(self, xz: Any, carry: Any, rec: Any, bias: Any) -> Any:
        h = self.activation(xz + _m.matmul(carry[0], rec))
        return (h,)


class LSTM(_Recurrent):
    """Keras's LSTM: gates i, f, c, o from x W + h U + b; c = f c + i act(z_c); h = o act(c)."""
    _base = "lstm"
    _gates = 4
    _n_states = 2

    def __init__(self, units: int, *args: Any, unit_forget_bias: bool = True, **kwargs: Any):
        super().__init__(units, *args, **kwargs)
        self._unit_forget_bias = unit_forget_bias

    def _bias_initializer(self) -> Any:
        return _UnitForgetBias(self.units) if self._unit_forget_bias else self._inits[2]

    def _step(self, xz: Any, carry: Any, rec: Any, bias: Any) -> Any:
        h, c = carry
        z = xz + _m.matmul(h, rec)
        zi, zf, zc, zo = _a.split(z, 4, axis=1)
        i, f, o = self.recurrent_activation(zi), self.recurrent_activation(zf), self.recurrent_activation(zo)
        c = f * c + i * self.activation(zc)
        h = o * self.activation(c)
        return (h, c)


class GRU(_Recurrent):
    """Keras's GRU, gates z, r, h; reset_after=False (TF 1.15's default) applies the reset gate
    before the recurrent product, True (cuDNN's form, TF 2's default) after it, with a second
    (recurrent) bias row."""
    _base = "gru"
    _gates = 3

    def __init__(self, units: int, *args: Any, reset_after: bool = False, **kwargs: Any):
        super().__init__(units, *args, **kwargs)
        self.reset_after = bool(reset_after)

    def _bias_shape(self) -> List[int]:
        return [2, 3 * self.units] if self.reset_after else [3 * self.units]

    def _step(self, xz: Any, carry: Any, rec: Any, bias: Any) -> Any:
        h = carry[0]
        u = self.units
        xz_z, xz_r, xz_h = _a.split(xz, 3, axis=1)
        if self.reset_after:
            inner = _m.matmul(h, rec)
            if bias is not None:
                inner = inner + bias[1]
            rz, rr, rh = _a.split(inner, 3, axis=1)
            z = self.recurrent_activation(xz_z + rz)
            r = self.recurrent_activation(xz_r + rr)
            hh = self.activation(xz_h + r * rh)
        else:
            z = self.recurrent_activation(xz_z + _m.matmul(h, rec[:, :u]))
            r = self.recurrent_activation(xz_r + _m.matmul(h, rec[:, u:2 * u]))
            hh = self.activation(xz_h + _m.matmul(r * h, rec[:, 2 * u:]))
        return (z * h + (1.0 - z) * hh,)

