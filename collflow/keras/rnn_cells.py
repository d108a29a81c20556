"""tf.keras's recurrent cells (TF 1.15): SimpleRNNCell, LSTMCell, GRUCell, StackedRNNCells and
AbstractRNNCell, for tf.keras.layers.RNN (keras/rnn_layer.py) or for stepping by hand.

A cell is a Keras `Layer` (keras/base_layer.py) with `state_size`, `output_size` and
`call(inputs, states, training=None) -> (output, new_states)`; its weights are Keras's
(kernel [in, k*units], recurrent_kernel [units, k*units], bias) made by `build`.  The gate
math is the recurrent layers' own: each cell borrows its layer's `_step` and the input
projection / dropout-mask helpers from keras/recurrent.py, so the layer and the cell cannot
drift apart.

Dropout masks (Keras's DropoutRNNCellMixin): drawn once per RNN call, before the loop, and
reused at every step (the RNN layer asks for them with `_begin_masks`); a cell called on its own
draws them at that call.
"""
from __future__ import annotations

import inspect
from typing import Any, Dict, List, Optional, Sequence

from ..graph.ops import array_ops as _a
from ..graph.shape import TensorShape
from ..graph.variable_scope import variable_scope
from . import recurrent as _rec
from .base_layer import Layer
from .initializers import get as _get_init
from .losses import activation as _activation

__all__ = ["AbstractRNNCell", "SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells"]


# -- state_size helpers (shared with the RNN layer) ------------------------------------------

def _is_leaf(s: Any) -> bool:
    """One state's size: an int or a TensorShape (a list/tuple is several states)."""
    return s is None or isinstance(s, (int, TensorShape)) or type(s).__name__ == "Dimension"


def flat_sizes(size: Any) -> List[List[int]]:
    """The flat list of per-example state shapes of a (nested) state_size."""
    if _is_leaf(size):
        if isinstance(size, TensorShape):
            return [[int(d) for d in size.as_list()]]
        return [[int(size)]]
    if isinstance(size, dict):
        return [s for k in sorted(size) for s in flat_sizes(size[k])]
    return [s for e in size for s in flat_sizes(e)]


def flatten_like(size: Any, value: Any) -> List[Any]:
    """The tensors of `value` (structured as state_size `size`), flat in flat_sizes' order.  A
    single-state cell may return its state bare or in a one-element list."""
    if _is_leaf(size):
        if isinstance(value, (list, tuple)) and len(value) == 1:
            return flatten_like(size, value[0])
        return [value]
    if isinstance(size, dict):
        return [t for k in sorted(size) for t in flatten_like(size[k], value[k])]
    if not isinstance(value, (list, tuple)) or len(value) != len(size):
        raise ValueError(f"The cell returned states {value!r}, which do not match its state_size {size!r}")
    return [t for s, v in zip(size, value) for t in flatten_like(s, v)]


def pack_like(size: Any, flat: Sequence[Any]) -> Any:
    """Inverse of flatten_like; the top level is always a list (Keras passes `states` as one)."""
    it = iter(flat)

    def pack(s: Any) -> Any:
        if _is_leaf(s):
            return next(it)
        if isinstance(s, dict):
            return {k: pack(s[k]) for k in sorted(s)}
        return [pack(e) for e in s]
    return [pack(size)] if _is_leaf(size) else pack(size)


def _accepts(fn: Any, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values())


def _zeros(size: Any, batch: Any, dtype: Any) -> List[Any]:
    out = []
    for shape in flat_sizes(size):
        out.append(_a.zeros(_a.stack([batch] + shape) if not isinstance(batch, int) else [batch] + shape,
                            dtype=dtype or "float32"))
    return out


class AbstractRNNCell(Layer):
    """Base of a cell: subclasses give `state_size`, `output_size` and call(inputs, states)."""

    @property
    def state_size(self) -> Any:
        raise NotImplementedError("Abstract method")

    @property
    def output_size(self) -> Any:
        raise NotImplementedError("Abstract method")

    def get_initial_state(self, inputs: Any = None, batch_size: Any = None, dtype: Any = None) -> Any:
        """Zeros [batch] + each state's shape, structured as state_size (Keras's default)."""
        if inputs is not None:
            batch_size = _a.shape(inputs)[0]
            dtype = dtype or inputs.dtype
        flat = _zeros(self.state_size, batch_size, dtype)
        packed = pack_like(self.state_size, flat)
        return packed[0] if _is_leaf(self.state_size) else packed


class _BuiltinCell(AbstractRNNCell):
    """The Keras cells' arguments, weights, dropout masks and config; `_step` is the layer's."""
    _gates = 1
    _layer: type = _rec.SimpleRNN
    # the recurrent layers' helpers, borrowed: one copy of the projection and mask code
    _project = _rec._Recurrent._project
    _recurrent_parts = _rec._Recurrent._recurrent_parts
    _make_masks = _rec._Recurrent._make_masks
    _bias_initializer = _rec.LSTM._bias_initializer

    def __init__(self, units: int, activation: Any = "tanh", recurrent_activation: Any = "hard_sigmoid",
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None, bias_regularizer: Any = None,
                 kernel_constraint: Any = None, recurrent_constraint: Any = None, bias_constraint: Any = None,
                 dropout: float = 0.0, recurrent_dropout: float = 0.0, implementation: int = 1,
                 unit_forget_bias: bool = False, reset_after: bool = False, **kwargs: Any):
        self._seed: Optional[int] = kwargs.pop("seed", None)
        super().__init__(**kwargs)
        self.units = int(units)
        self.activation = _activation(activation)
        self.recurrent_activation = _activation(recurrent_activation)
        self.use_bias = bool(use_bias)
        self._inits = (_get_init(kernel_initializer), _get_init(recurrent_initializer), _get_init(bias_initializer))
        self._regs = (kernel_regularizer, recurrent_regularizer, bias_regularizer)
        self._constraints = (kernel_constraint, recurrent_constraint, bias_constraint)
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        implementation = int(implementation) or 1
        if self.recurrent_dropout and implementation != 1 and self._gates > 1:
            implementation = 1  # per-gate recurrent masks need the split products (as the layers)
        self.implementation = implementation
        self._unit_forget_bias = bool(unit_forget_bias)
        self.reset_after = bool(reset_after)
        self._cfg = {"activation": activation, "recurrent_activation": recurrent_activation,
                     "kernel_initializer": self._inits[0], "recurrent_initializer": self._inits[1],
                     "bias_initializer": self._inits[2], "kernel_regularizer": kernel_regularizer,
                     "recurrent_regularizer": recurrent_regularizer, "bias_regularizer": bias_regularizer,
                     "kernel_constraint": kernel_constraint, "recurrent_constraint": recurrent_constraint,
                     "bias_constraint": bias_constraint}
        self._held_masks: Any = None
        self._dropout_masks: Any = None

    # -- Keras's interface ----------------------------------------------------------------------
    @property
    def state_size(self) -> Any:
        return self.units

    @property
    def output_size(self) -> int:
        return self.units

    def _bias_shape(self) -> List[int]:
        return [2, self._gates * self.units] if self.reset_after else [self._gates * self.units]

    def build(self, input_shape: Any) -> None:
        shape = input_shape[0] if isinstance(input_shape, list) else input_shape  # [x] + constants
        depth = TensorShape(shape).as_list()[-1]
        u, k = self.units, self._gates
        self.kernel = self.add_weight("kernel", [depth, k * u], initializer=self._inits[0], regularizer=self._regs[0],
                                      constraint=self._constraints[0])
        self.recurrent_kernel = self.add_weight("recurrent_kernel", [u, k * u], initializer=self._inits[1],
                                                regularizer=self._regs[1], constraint=self._constraints[1])
        self.bias = self.add_weight("bias", self._bias_shape(), initializer=self._bias_initializer(),
                                    regularizer=self._regs[2], constraint=self._constraints[2]) \
            if self.use_bias else None
        self.built = True

    def call(self, inputs: Any, states: Any, training: Any = None) -> Any:
        single = not isinstance(states, (list, tuple))
        carry = [states] if single else list(states)
        batch, depth = _a.shape(inputs)[0], int(inputs.shape.dims[-1])
        if self._held_masks is not None:
            in_masks, rec_masks = self._held_masks
        else:
            in_masks, rec_masks = self._make_masks(inputs, batch, depth, training)
        # the layer's projection takes [batch, time, depth]: this step is one time step
        xz = self._project(_a.expand_dims(inputs, 1), self.kernel, in_masks, batch, depth)
        if self.bias is not None:
            xz = xz + (self.bias if not self.reset_after else self.bias[0])
        new = list(self._step(xz, carry, self.recurrent_kernel, self.bias, rec_masks))
        return new[0], (new[0] if single and len(new) == 1 else new)

    # -- dropout masks (DropoutRNNCellMixin) ----------------------------------------------------
    def _begin_masks(self, batch: Any, depth: int, dtype: Any, training: Any) -> None:
        """Draws this call's masks once, for every step of the RNN loop."""
        proto = _a.zeros(_a.stack([batch, depth]), dtype=dtype)
        self._held_masks = self._make_masks(proto, batch, depth, training)

    def _end_masks(self) -> None:
        self._held_masks = None

    def get_dropout_mask_for_cell(self, inputs: Any, training: Any = None, count: int = 1) -> Any:
        """The input masks this cell uses now (those of the running RNN call, else new ones)."""
        masks = self._held_masks[0] if self._held_masks is not None else \
            self._make_masks(inputs, _a.shape(inputs)[0], int(inputs.shape.dims[-1]), training)[0]
        return masks or None

    def get_recurrent_dropout_mask_for_cell(self, inputs: Any, training: Any = None, count: int = 1) -> Any:
        masks = self._held_masks[1] if self._held_masks is not None else \
            self._make_masks(inputs, _a.shape(inputs)[0], int(inputs.shape.dims[-1]), training)[1]
        return masks or None

    def reset_dropout_mask(self) -> None:
        self._held_masks = None

    reset_recurrent_dropout_mask = reset_dropout_mask

    # -- config ---------------------------------------------------------------------------------
    _config_keys = ("activation", "use_bias", "kernel_initializer", "recurrent_initializer", "bias_initializer",
                    "kernel_regularizer", "recurrent_regularizer", "bias_regularizer", "kernel_constraint",
                    "recurrent_constraint", "bias_constraint", "dropout", "recurrent_dropout")

    def get_config(self) -> Dict[str, Any]:
        from .saving import _serialize
        values = dict(self._cfg, use_bias=self.use_bias, dropout=self.dropout,
                      recurrent_dropout=self.recurrent_dropout, implementation=self.implementation,
                      unit_forget_bias=self._unit_forget_bias, reset_after=self.reset_after)
        cfg = dict(super().get_config(), units=self.units)
        for k in self._config_keys:
            cfg[k] = _serialize(values[k])
        return cfg

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> Any:
        from .saving import _deserialize
        cfg = {k: _deserialize(k, v, {}) for k, v in config.items() if k != "dtype"}
        return cls(**cfg)


class SimpleRNNCell(_BuiltinCell):
    """h = activation(x W + h U + b); output h, state [h]."""
    _step = _rec.SimpleRNN._step

    def __init__(self, units: int, activation: Any = "tanh", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", recurrent_initializer: Any = "orthogonal",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None, recurrent_regularizer: Any = None,
                 bias_regularizer: Any = None, kernel_constraint: Any = None, recurrent_constraint: Any = None,
                 bias_constraint: Any = None, dropout: float = 0.0, recurrent_dropout: float = 0.0, **kwargs: Any):
        kwargs.pop("implementation", None)
        super().__init__(units, activation, None, use_bias, kernel_initializer, recurrent_initializer,
                         bias_initializer, kernel_regularizer, recurrent_regularizer, bias_regularizer,
                         kernel_constraint, recurrent_constraint, bias_constraint, dropout, recurrent_dropout,
                         **kwargs)


class LSTMCell(_BuiltinCell):
    """Keras's LSTM step (gates i, f, c, o); output h, states [h, c]."""
    _gates = 4
    _step = _rec.LSTM._step
    _CHECKPOINT_LISTS = ("state_size",)  # a list in Keras: an empty node of its object checkpoints
    _config_keys = _BuiltinCell._config_keys[:1] + ("recurrent_activation",) + _BuiltinCell._config_keys[1:5] + \
        ("unit_forget_bias",) + _BuiltinCell._config_keys[5:] + ("implementation",)

    def __init__(self, units: int, activation: Any = "tanh", recurrent_activation: Any = "hard_sigmoid",
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 unit_forget_bias: bool = True, kernel_regularizer: Any = None, recurrent_regularizer: Any = None,
                 bias_regularizer: Any = None, kernel_constraint: Any = None, recurrent_constraint: Any = None,
                 bias_constraint: Any = None, dropout: float = 0.0, recurrent_dropout: float = 0.0,
                 implementation: int = 1, **kwargs: Any):
        super().__init__(units, activation, recurrent_activation, use_bias, kernel_initializer, recurrent_initializer,
                         bias_initializer, kernel_regularizer, recurrent_regularizer, bias_regularizer,
                         kernel_constraint, recurrent_constraint, bias_constraint, dropout, recurrent_dropout,
                         implementation, unit_forget_bias=unit_forget_bias, **kwargs)

    @property
    def state_size(self) -> Any:
        return [self.units, self.units]


class GRUCell(_BuiltinCell):
    """Keras's GRU step (gates z, r, h; reset_after False as TF 1.15, or True with a second
    bias row); output h, state [h]."""
    _gates = 3
    _step = _rec.GRU._step
    _config_keys = _BuiltinCell._config_keys[:1] + ("recurrent_activation",) + _BuiltinCell._config_keys[1:] + \
        ("implementation", "reset_after")

    def __init__(self, units: int, activation: Any = "tanh", recurrent_activation: Any = "hard_sigmoid",
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None, bias_regularizer: Any = None,
                 kernel_constraint: Any = None, recurrent_constraint: Any = None, bias_constraint: Any = None,
                 dropout: float = 0.0, recurrent_dropout: float = 0.0, implementation: int = 1,
                 reset_after: bool = False, **kwargs: Any):
        super().__init__(units, activation, recurrent_activation, use_bias, kernel_initializer, recurrent_initializer,
                         bias_initializer, kernel_regularizer, recurrent_regularizer, bias_regularizer,
                         kernel_constraint, recurrent_constraint, bias_constraint, dropout, recurrent_dropout,
                         implementation, reset_after=reset_after, **kwargs)


class StackedRNNCells(Layer):
    """Cells run one over the other in one step; the states are every cell's, flat in order
    (TF 1.15's state_size), the output is the last cell's.  Each cell's weights go under its
    own name (rnn/lstm_cell/kernel, rnn/lstm_cell_1/kernel)."""

    def __init__(self, cells: Sequence[Any], **kwargs: Any):
        for cell in cells:
            if not hasattr(cell, "call"):
                raise ValueError(f"All cells must have a `call` method. received cells: {cells}")
            if not hasattr(cell, "state_size"):
                raise ValueError(f"All cells must have a `state_size` attribute. received cells: {cells}")
        self.cells = list(cells)
        self.reverse_state_order = bool(kwargs.pop("reverse_state_order", False))
        super().__init__(**kwargs)

    @property
    def state_size(self) -> tuple:
        out: List[Any] = []
        for cell in self.cells:
            s = cell.state_size
            out += list(s) if not _is_leaf(s) else [s]
        return tuple(out)

    @property
    def output_size(self) -> Any:
        last = self.cells[-1]
        if getattr(last, "output_size", None) is not None:
            return last.output_size
        s = last.state_size
        return s if _is_leaf(s) else s[0]

    def get_initial_state(self, inputs: Any = None, batch_size: Any = None, dtype: Any = None) -> List[Any]:
        out: List[Any] = []
        for cell in self.cells:
            if hasattr(cell, "get_initial_state"):
                init = cell.get_initial_state(inputs=inputs, batch_size=batch_size, dtype=dtype)
                out += flatten_like(cell.state_size, init)
            else:
                b = _a.shape(inputs)[0] if inputs is not None else batch_size
                out += _zeros(cell.state_size, b, dtype or (inputs.dtype if inputs is not None else None))
        return out

    def build(self, input_shape: Any) -> None:
        constants = input_shape[1:] if isinstance(input_shape, list) else None
        shape = TensorShape(input_shape[0] if isinstance(input_shape, list) else input_shape).as_list()
        for cell in self.cells:
            if not getattr(cell, "built", False) and hasattr(cell, "build"):
                with variable_scope(None, default_name=cell.name):
                    cell.build([TensorShape(shape)] + list(constants) if constants else TensorShape(shape))
                cell.built = True
            out = getattr(cell, "output_size", None)
            out = out if out is not None else (cell.state_size if _is_leaf(cell.state_size) else cell.state_size[0])
            shape = shape[:1] + flat_sizes(out)[0]
        self.built = True

    def call(self, inputs: Any, states: Any, constants: Any = None, training: Any = None) -> Any:
        flat = list(states)
        new_flat: List[Any] = []
        for cell in self.cells:
            n = len(flat_sizes(cell.state_size))
            mine, flat = flat[:n], flat[n:]
            kw: Dict[str, Any] = {}
            if constants is not None and _accepts(cell.call, "constants"):
                kw["constants"] = constants
            if _accepts(cell.call, "training"):
                kw["training"] = training
            # a list even for one state, as Keras passes a cell its states
            inputs, new = cell.call(inputs, pack_like(cell.state_size, mine), **kw)
            new_flat += flatten_like(cell.state_size, new)
        return inputs, new_flat

    def _begin_masks(self, batch: Any, depth: int, dtype: Any, training: Any) -> None:
        for cell in self.cells:
            if hasattr(cell, "_begin_masks"):
                cell._begin_masks(batch, depth, dtype, training)
            out = getattr(cell, "output_size", None)
            depth = flat_sizes(out if out is not None else cell.state_size)[0][-1]

    def _end_masks(self) -> None:
        for cell in self.cells:
            if hasattr(cell, "_end_masks"):
                cell._end_masks()

    @property
    def weights(self) -> List[Any]:
        out: List[Any] = []
        for cell in self.cells:
            out += [w for w in getattr(cell, "weights", []) if all(w is not o for o in out)]
        return out

    variables = weights

    def get_config(self) -> Dict[str, Any]:
        from .saving import serialize_layer
        return dict(super().get_config(), cells=[serialize_layer(c) for c in self.cells])

    @classmethod
    def from_config(cls, config: Dict[str, Any], custom_objects: Optional[Dict[str, Any]] = None) -> Any:
        from .saving import deserialize_layer
        cfg = dict(config)
        cells = [c if not isinstance(c, dict) else deserialize_layer(c, custom_objects) for c in cfg.pop("cells")]
        cfg.pop("dtype", None)
        return cls(cells, **cfg)
