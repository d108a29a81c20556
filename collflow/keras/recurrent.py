"""tf.keras's recurrent layers in TF1's graph mode: SimpleRNN, LSTM, GRU, with Keras's weights
(kernel [in, k*units], recurrent_kernel [units, k*units], bias; gate orders i,f,c,o for LSTM
and z,r,h for GRU), initializers (glorot_uniform, orthogonal, zeros; LSTM's unit_forget_bias)
and TF 1.15's defaults (recurrent_activation "hard_sigmoid", GRU reset_after=False,
implementation=1).

The input projection of every step is one matmul before the loop; the loop is cf.scan over
time, so gradients flow as through any collflow loop.  return_sequences, return_state,
go_backwards, initial_state and masks are supported, and:

- dropout / recurrent_dropout (Keras's DropoutRNNCellMixin): in the learning phase, masks of
  shape [batch, features] (inputs) and [batch, units] (the recurrent state h) are drawn once
  per call (so once per batch) and reused at every step, scaled by 1/(1-rate); one mask per
  gate (LSTM 4, GRU 3, SimpleRNN 1) with implementation=1, one input mask for all gates with
  implementation=2 (recurrent_dropout forces implementation=1, as tf_keras).  The masks of the
  last call are `layer._dropout_masks` (input masks, recurrent masks): tests feed them.
- stateful=True: the states are non-trainable variables [batch, units] (the batch size fixed by
  batch_input_shape / batch_size / Input(batch_shape=)), read as the initial state and
  assigned the last state by every run that computes the layer's outputs (fit, evaluate and
  predict steps alike, as Keras's functions run the state updates); `reset_states(states=None)`.
"""
from __future__ import annotations

import warnings
from typing import Any, List, Optional, Sequence

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph import initializers as _init
from ..graph.functional_ops import scan
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import state_ops as _state_ops
from ..graph.ops.constant_op import identity
from ..graph.ops.reverse_ops import reverse
from ..graph.variable_scope import get_variable, variable_scope
from ..graph.variables import Variable
from ..nn import layer_classes as _lc
from ..nn import layers as _fl
from . import backend as K
from .layers import _KerasMixin, _input_shape_kwargs
from .losses import activation as _activation

__all__ = ["SimpleRNN", "LSTM", "GRU", "reset_model_states"]

_NEEDS_BATCH = ("If a RNN is stateful, it needs to know its batch size. Specify the batch size of your input "
                "tensors: \n- If using a Sequential model, specify the batch size by passing a `batch_input_shape` "
                "argument to your first layer.\n- If using the functional API, specify the batch size by passing a "
                "`batch_shape` argument to your Input layer.")


class _UnitForgetBias(_init.Initializer):
    """LSTM's bias: ones for the forget gate, zeros elsewhere (Keras's unit_forget_bias)."""

    def __init__(self, units: int):
        self.units = units

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Any:
        b = np.zeros(tuple(int(d) for d in shape), dtype=np.float32)
        b[self.units:2 * self.units] = 1.0
        from ..graph.ops.constant_op import constant
        return constant(b, dtype=dtype)


def reset_model_states(model: Any) -> None:
    """Resets every stateful layer of `model` (Keras's Model.reset_states)."""
    for layer in model.layers:
        if getattr(layer, "stateful", False) and hasattr(layer, "reset_states"):
            layer.reset_states()


class _Recurrent(_KerasMixin, _lc.Layer):
    _gates = 1
    _n_states = 1

    def _checkpoint_children(self) -> List[Any]:
        """Keras's object-checkpoint structure: the weights under `cell` (an LSTM cell also
        has its state_size list), then the empty state_spec list."""
        from ..train.trackable import ChildGroup, cached_node, weight_children
        cell = cached_node(self, "cell", ChildGroup)
        held = self.__dict__.get("_state_vars") or []
        cell.children = ([("state_size", cached_node(self, "state_size"))] if self._n_states > 1 else []) + \
            weight_children(w for w in self.weights if all(w is not h for h in held))
        return [("cell", cell), ("state_spec", cached_node(self, "state_spec"))]
    _consumes_mask = True
    _takes_training = True  # the dropout masks are drawn in the learning phase only

    def __init__(self, units: int, activation: Any = "tanh", recurrent_activation: Any = "hard_sigmoid",
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None, bias_regularizer: Any = None,
                 dropout: float = 0.0, recurrent_dropout: float = 0.0, return_sequences: bool = False,
                 return_state: bool = False, go_backwards: bool = False, stateful: bool = False,
                 unroll: bool = False, implementation: int = 1, **kwargs: Any):
        implementation = int(implementation)
        self._seed: Optional[int] = kwargs.pop("seed", None)
        batch_size = kwargs.pop("batch_size", None)
        for k in ("time_major", "reset_after", "unit_forget_bias", "recurrent_constraint"):
            kwargs.pop(k, None)
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        if batch_size is not None and self._batch_input_shape is not None:
            self._batch_input_shape = (int(batch_size),) + tuple(self._batch_input_shape[1:])
        super().__init__(kwargs.pop("trainable", True), kwargs.pop("name", None), **kwargs)
        self.units = int(units)
        self.activation = _activation(activation)
        self.recurrent_activation = _activation(recurrent_activation)
        self.use_bias = use_bias
        from .initializers import get as _get_init
        self._inits = (_get_init(kernel_initializer), _get_init(recurrent_initializer), _get_init(bias_initializer))
        self._regs = (kernel_regularizer, recurrent_regularizer, bias_regularizer)
        self.return_sequences, self.return_state, self.go_backwards = return_sequences, return_state, go_backwards
        # Keras clips the rates to [0, 1]; a rate of 1 fails when the masks are drawn (as TF's dropout)
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        if implementation == 0:
            warnings.warn("`implementation=0` has been deprecated, and now defaults to `implementation=1`.")
            implementation = 1
        if self.recurrent_dropout and implementation != 1 and self._gates > 1:
            # the fused recurrent product takes no per-gate masks: tf_keras falls back so too
            warnings.warn("RNN `implementation=2` is not supported when `recurrent_dropout` is set. "
                          "Using `implementation=1`.")
            implementation = 1
        self.implementation = implementation
        self.stateful = bool(stateful)
        self.unroll = bool(unroll)  # accepted: the loop is a scan either way
        self._state_vars: Optional[List[Any]] = None
        self._dropout_masks: Any = None

    # -- calls ----------------------------------------------------------------------------------
    def __call__(self, inputs: Any, initial_state: Any = None, training: Any = None, **kwargs: Any) -> Any:
        self._initial_state = initial_state
        self._new_state_updates: List[Any] = []
        out = super().__call__(inputs, training=training, **kwargs)
        if self._state_vars is not None:
            # the states are no weights (Keras keeps them out of get_weights and the weight files)
            self._vars = [v for v in self._vars if all(v is not s for s in self._state_vars)]
        if self._new_state_updates:
            self.updates = list(getattr(self, "updates", [])) + self._new_state_updates
        return out

    @property
    def states(self) -> List[Any]:
        """The state variables of a stateful layer (a None per state before it is built or when
        it is not stateful)."""
        return list(self._state_vars) if self._state_vars is not None else [None] * self._n_states

    def reset_states(self, states: Any = None) -> None:
        """Sets the states to zeros, or to `states` (one array [batch, units] per state)."""
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        if self._state_vars is None:
            raise ValueError(_NEEDS_BATCH)
        shape = tuple(self._state_vars[0].shape.as_list())
        if states is None:
            K.batch_set_value([(v, np.zeros(shape)) for v in self._state_vars])
            return
        values = list(states) if isinstance(states, (list, tuple)) else [states]
        if len(values) != len(self._state_vars):
            raise ValueError(f"Layer {self.name} expects {len(self._state_vars)} states, but it received "
                             f"{len(values)} state values. States received: {states}")
        for i, value in enumerate(values):
            if np.shape(value) != shape:
                raise ValueError(f"State {i} is incompatible with layer {self.name}: expected shape={shape} but "
                                 f"found shape={np.shape(value)}")
        K.batch_set_value(list(zip(self._state_vars, values)))

    def _bias_shape(self) -> List[int]:
        return [self._gates * self.units]

    def _bias_initializer(self) -> Any:
        return self._inits[2]

    def _output_mask(self, inputs: Any, mask: Any) -> Any:
        return mask if self.return_sequences else None

    def _call(self, x: Any, name: Any, reuse: Any, mask: Any = None, training: Any = None) -> Any:
        if x.shape.rank != 3 or x.shape.dims[-1] is None:
            raise ValueError(f"{type(self).__name__} expects inputs [batch, time, features] with known features, "
                             f"got shape {x.shape}")
        if self.stateful and x.shape.dims[0] is None:
            raise ValueError(_NEEDS_BATCH)
        depth, u, k = int(x.shape.dims[-1]), self.units, self._gates
        with variable_scope(name, reuse=reuse):
            kernel = get_variable("kernel", [depth, k * u], x.dtype, self._inits[0], self._regs[0],
                                  trainable=self.trainable)
            rec = get_variable("recurrent_kernel", [u, k * u], x.dtype, self._inits[1], self._regs[1],
                               trainable=self.trainable)
            bias = get_variable("bias", self._bias_shape(), x.dtype, self._bias_initializer(), self._regs[2],
                                trainable=self.trainable) if self.use_bias else None
            batch = _a.shape(x)[0]
            in_masks, rec_masks = self._make_masks(x, batch, depth, training)
            proj = self._project(x, kernel, in_masks, batch, depth)
            if bias is not None:
                proj = proj + (bias if len(self._bias_shape()) == 1 else bias[0])
            proj = _a.transpose(_a.reshape(proj, _a.stack([batch, -1, k * u])), [1, 0, 2])  # time-major
            if self.go_backwards:
                proj = reverse(proj, [0])
            states = self._initial_states(x, batch)
            if mask is None:
                def step(carry: Any, xz: Any) -> Any:
                    return self._step(xz, carry, rec, bias, rec_masks)
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
                    new = self._step(xz, carry[:-1], rec, bias, rec_masks)
                    kept = tuple(_a.where(_a.tile(keep, [1, u]), n, o) for n, o in zip(new, carry[:-1]))
                    return kept + (_a.where(_a.tile(keep, [1, u]), new[0], carry[-1]),)
                seq = scan(step, (proj, m), initializer=tuple(states) + (zeros,))
                seq_out, last, last_out = seq[-1], [s[-1] for s in seq[:-1]], seq[-1][-1]
            outputs = _a.transpose(seq_out, [1, 0, 2])
            outputs.set_shape([x.shape.dims[0], x.shape.dims[1], u])  # the scan keeps no static time length
            for t in [last_out] + last:  # nor the batch of the last step's output and states
                t.set_shape([x.shape.dims[0], u])
            out = outputs if self.return_sequences else last_out
            if self.stateful:
                out, last = self._update_states(out, last)
        if self.return_state:
            return [out] + last
        return out

    # -- dropout --------------------------------------------------------------------------------
    def _make_masks(self, x: Any, batch: Any, depth: int, training: Any) -> Any:
        """The input and recurrent dropout masks of this call: drawn once here, outside the loop,
        so that every step reuses them (Keras's DropoutRNNCellMixin); ones out of the learning
        phase."""
        if isinstance(training, (bool, np.bool_, int, np.integer)):
            training = bool(training)
        n_in = 0 if not self.dropout else self._gates if self.implementation == 1 else 1
        n_rec = self._gates if self.recurrent_dropout else 0
        seed = self._seed

        def draw(n: int, width: int, rate: float, offset: int) -> List[Any]:
            ones = _a.ones(_a.stack([batch, width]), dtype=x.dtype)
            return [_fl.dropout(ones, rate, seed=None if seed is None else seed + offset + i, training=training,
                                name="dropout_mask") for i in range(n)]
        in_masks = draw(n_in, depth, self.dropout, 0)
        rec_masks = draw(n_rec, self.units, self.recurrent_dropout, self._gates)
        self._dropout_masks = (in_masks, rec_masks)
        return in_masks, rec_masks

    def _project(self, x: Any, kernel: Any, in_masks: List[Any], batch: Any, depth: int) -> Any:
        """x's projection for every step, [batch * time, k * units]: with per-gate masks, each
        gate's kernel columns multiply the inputs under that gate's mask."""
        if not in_masks:
            return _m.matmul(_a.reshape(x, [-1, depth]), kernel)
        if len(in_masks) == 1:
            return _m.matmul(_a.reshape(x * _a.expand_dims(in_masks[0], 1), [-1, depth]), kernel)
        u = self.units
        parts = [_m.matmul(_a.reshape(x * _a.expand_dims(mk, 1), [-1, depth]), kernel[:, g * u:(g + 1) * u])
                 for g, mk in enumerate(in_masks)]
        return _a.concat(parts, 1)

    def _recurrent_parts(self, h: Any, rec: Any, rec_masks: List[Any], gates: Sequence[int]) -> List[Any]:
        """h times the recurrent kernel's columns of each gate in `gates`, h under that gate's
        recurrent dropout mask (if any)."""
        u = self.units
        return [_m.matmul(h * rec_masks[g] if rec_masks else h, rec[:, g * u:(g + 1) * u]) for g in gates]

    # -- states ---------------------------------------------------------------------------------
    def _initial_states(self, x: Any, batch: Any) -> List[Any]:
        given = self._initial_state
        if given is not None:
            given = list(given) if isinstance(given, (list, tuple)) else [given]
            if len(given) != self._n_states:
                raise ValueError(f"{type(self).__name__} takes {self._n_states} initial state(s), got {len(given)}")
            given = [_g.convert_to_tensor(s) for s in given]
        if self.stateful:
            held = [v.value() for v in self._state_variables(x)]
            if given is None:
                return held
            return held_or_given(held, given)
        if given is not None:
            return given
        zero = _a.zeros(_a.stack([batch, self.units]), dtype=x.dtype)
        return [zero] * self._n_states

    def _state_variables(self, x: Any) -> List[Any]:
        """The held states, made (zeros [batch, units]) by the first call."""
        if self._state_vars is None:
            shape = (int(x.shape.dims[0]), self.units)
            g = x.graph
            # under the layer's own name, as Keras's "lstm/Variable" (the call's name scope is lstm_1)
            with g.name_scope(None), g.name_scope(self._scope.name + "/"):
                self._state_vars = [Variable(np.zeros(shape, dtype=x.dtype.np), trainable=False, name="Variable")
                                    for _ in range(self._n_states)]
        return self._state_vars

    def _update_states(self, out: Any, last: List[Any]) -> Any:
        """Assigns the last states to the held ones.  The outputs depend on the assignments so
        that every run computing them (training, evaluation, prediction) carries the states on,
        as Keras's train/test/predict functions run the layer's state updates."""
        assigns = [_state_ops.assign(v, s) for v, s in zip(self._state_vars or [], last)]
        self._new_state_updates = assigns
        with _g.control_dependencies(assigns):
            return identity(out), [identity(s) for s in last]

    def _step(self, xz: Any, carry: Any, rec: Any, bias: Any, rec_masks: List[Any]) -> Any:
        raise NotImplementedError


def _full_signature(cls: type, extra: str, default: Any) -> None:
    """Gives cls.__init__ (units, *args, extra=default, **kwargs) the whole signature of
    _Recurrent's plus `extra`: saving.py reads a layer's config (and a saved config back)
    through its constructor's signature, which would otherwise hide every argument but units."""
    import inspect
    base = list(inspect.signature(_Recurrent.__init__).parameters.values())
    param = inspect.Parameter(extra, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
    cls.__init__.__signature__ = inspect.Signature(base[:-1] + [param, base[-1]])  # type: ignore[attr-defined]


class SimpleRNN(_Recurrent):
    """h = activation(x W + h U + b)."""
    _base = "simple_rnn"

    def _step(self, xz: Any, carry: Any, rec: Any, bias: Any, rec_masks: List[Any]) -> Any:
        h = carry[0]
        h = self.activation(xz + _m.matmul(h * rec_masks[0] if rec_masks else h, rec))
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

    def _step(self, xz: Any, carry: Any, rec: Any, bias: Any, rec_masks: List[Any]) -> Any:
        h, c = carry
        if rec_masks:
            z = xz + _a.concat(self._recurrent_parts(h, rec, rec_masks, range(4)), 1)
        else:
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

    def _step(self, xz: Any, carry: Any, rec: Any, bias: Any, rec_masks: List[Any]) -> Any:
        h = carry[0]
        u = self.units
        xz_z, xz_r, xz_h = _a.split(xz, 3, axis=1)
        if self.reset_after:
            if rec_masks:
                rz, rr, rh = self._recurrent_parts(h, rec, rec_masks, range(3))
                if bias is not None:
                    rz, rr, rh = rz + bias[1, :u], rr + bias[1, u:2 * u], rh + bias[1, 2 * u:]
            else:
                inner = _m.matmul(h, rec)
                if bias is not None:
                    inner = inner + bias[1]
                rz, rr, rh = _a.split(inner, 3, axis=1)
            z = self.recurrent_activation(xz_z + rz)
            r = self.recurrent_activation(xz_r + rr)
            hh = self.activation(xz_h + r * rh)
        else:
            hz, hr, hh_in = (h * rec_masks[0], h * rec_masks[1], h * rec_masks[2]) if rec_masks else (h, h, h)
            z = self.recurrent_activation(xz_z + _m.matmul(hz, rec[:, :u]))
            r = self.recurrent_activation(xz_r + _m.matmul(hr, rec[:, u:2 * u]))
            hh = self.activation(xz_h + _m.matmul(r * hh_in, rec[:, 2 * u:]))
        return (z * h + (1.0 - z) * hh,)


_full_signature(LSTM, "unit_forget_bias", True)
_full_signature(GRU, "reset_after", False)


def held_or_given(held: List[Any], given: List[Any]) -> List[Any]:
    """A stateful layer's states when an initial state is also given: Keras takes the held
    states once they are not all zeros, the given ones before (the first batch)."""
    nonzero = _m.reduce_any(_a.stack([_m.reduce_any(_m.not_equal(v, 0.0)) for v in held]))
    return [_a.where(_a.fill(_a.shape(g), nonzero), h, g) for h, g in zip(held, given)]
