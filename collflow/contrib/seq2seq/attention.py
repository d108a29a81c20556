"""tf.contrib.seq2seq's attention: BahdanauAttention, LuongAttention and AttentionWrapper.

An attention mechanism holds the encoder's memory [batch, max_time, depth] (its `values`,
zeroed past memory_sequence_length) and its `keys` (the values through `memory_layer`, a
bias-free Dense made when the mechanism is built: memory_layer/kernel in the enclosing
variable scope).  Called with a query [batch, query_depth] and its previous state, it
returns the alignments [batch, max_time] (softmax of the scores, the scores past each
memory length set to score_mask_value, -inf by default) and its next state (the
alignments again).

    Bahdanau (additive):  score_j = v . tanh(keys_j + W_q query)          (normalize: weight norm of v)
    Luong (multiplicative): score_j = query . keys_j                      (scale: times a scalar g)

AttentionWrapper wraps a cell: each step runs the cell on cell_input_fn(inputs, previous
attention) (their concatenation by default), scores the cell's output against the memory,
takes the context (alignments . values) and, with attention_layer_size, the attention
attention_layer([cell_output, context]) (a bias-free Dense); its output is the attention
(or the cell's output with output_attention=False).  Its state is an AttentionWrapperState.
Variables as TF 1.x names them: under dynamic_decode, decoder/attention_wrapper/<cell>/...,
decoder/attention_wrapper/attention_layer/kernel, decoder/attention_wrapper/
bahdanau_attention/query_layer/kernel and .../attention_v (luong_attention/attention_g).
"""
from __future__ import annotations

import collections
import math
from typing import Any, Callable, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...graph import graph as _g
from ...graph import initializers as _init
from ...graph.ops import array_ops as _a
from ...graph.ops import math_ops as _m
from ...graph.ops import nn_ops as _nn
from ...graph.ops.constant_op import constant, identity
from ...graph.ops.string_ops import sequence_mask
from ...graph.shape import TensorShape
from ...graph.tensor_array import TensorArray
from ...graph.variable_scope import get_variable, variable_scope
from ...nn.layer_classes import Dense
from ...nn.rnn_cells import RNNCell
from .decoder import batch_dim, map_structure, zeros_of_size

__all__ = ["AttentionMechanism", "BahdanauAttention", "LuongAttention", "AttentionWrapper", "AttentionWrapperState"]


class _Dense(Dense):
    """A bias-free-capable Dense whose name is made unique in its variable scope, as TF 1.x's
    layer objects are (memory_layer, memory_layer_1, ... for two mechanisms in one scope)."""

    def __init__(self, units: int, name: str, **kwargs: Any):
        super().__init__(units, name=None, **kwargs)
        self._base = name


class AttentionMechanism:
    """Base class of the attention mechanisms (tf.contrib.seq2seq.AttentionMechanism)."""


def _prepare_memory(memory: Any, memory_sequence_length: Any) -> Tuple[_g.Tensor, Optional[_g.Tensor]]:
    """The memory with the entries past each row's length zeroed, and the lengths (int32)."""
    memory = _g.convert_to_tensor(memory, name="memory")
    if memory.shape.rank is not None and memory.shape.rank != 3:
        raise ValueError(f"memory must be [batch, max_time, depth], got shape {memory.shape}")
    if memory.shape.rank is None or memory.shape.dims[2] is None:
        raise ValueError(f"Expected memory to have fully defined inner dims, but saw shape: {memory.shape}")
    if memory_sequence_length is None:
        return memory, None
    seq = _g.convert_to_tensor(memory_sequence_length, name="memory_sequence_length")
    if seq.shape.rank not in (None, 1):
        raise ValueError(f"memory_sequence_length must be a vector [batch], got shape {seq.shape}")
    seq = seq if seq.dtype == _dt.int32 else _m.cast(seq, _dt.int32)
    t_static = memory.shape.dims[1]
    maxlen = constant(t_static, dtype=_dt.int32) if t_static is not None else _a.shape(memory)[1]
    mask = sequence_mask(seq, maxlen=maxlen, dtype=memory.dtype)
    return memory * _a.expand_dims(mask, 2), seq


class _BaseAttentionMechanism(AttentionMechanism):
    """What Bahdanau and Luong attention share: the memory, its keys, the score masking and
    the probability function (see the module doc)."""

    def __init__(self, query_layer: Any, memory: Any, probability_fn: Callable, memory_sequence_length: Any = None,
                 memory_layer: Any = None, score_mask_value: Any = None, name: Optional[str] = None,
                 custom_key_value_fn: Optional[Callable] = None):
        if query_layer is not None and not callable(query_layer):
            raise TypeError(f"query_layer is not a Layer: {type(query_layer).__name__}")
        if memory_layer is not None and not callable(memory_layer):
            raise TypeError(f"memory_layer is not a Layer: {type(memory_layer).__name__}")
        self._query_layer, self._memory_layer = query_layer, memory_layer
        self.dtype = _dt.float32
        if not callable(probability_fn):
            raise TypeError(f"probability_fn must be callable, saw type: {type(probability_fn).__name__}")
        g = _g.get_default_graph()
        with g.name_scope(name or "BaseAttentionMechanismInit"):
            values, seq = _prepare_memory(memory, memory_sequence_length)
            self._values = values
            self._memory_sequence_length = seq
            self._keys = memory_layer(values) if memory_layer is not None else values
            if custom_key_value_fn is not None:
                # (keys, values) -> new (keys, values): e.g. keys and values from one memory's halves
                self._keys, self._values = custom_key_value_fn(self._keys, self._values)
        self.dtype = self._values.dtype
        mask_value = float("-inf") if score_mask_value is None else score_mask_value
        self._score_mask_value = mask_value

        def masked_probability(score: Any, prev: Any) -> Any:
            return probability_fn(self._mask_score(score), prev)
        self._probability_fn = masked_probability
        self._batch_size = batch_dim(self._keys)
        t_static = self._keys.shape.dims[1]
        self._alignments_size = int(t_static) if t_static is not None else _a.shape(self._keys)[1]

    def _mask_score(self, score: _g.Tensor) -> _g.Tensor:
        if self._memory_sequence_length is None:
            return score
        maxlen = self._alignments_size
        mask = sequence_mask(self._memory_sequence_length,
                             maxlen=constant(maxlen, dtype=_dt.int32) if isinstance(maxlen, int) else maxlen)
        fill = _a.ones_like(score) * _g.convert_to_tensor(self._score_mask_value, dtype=score.dtype)
        return _a.where(mask, score, fill)

    @property
    def memory_layer(self) -> Any:
        return self._memory_layer

    @property
    def query_layer(self) -> Any:
        return self._query_layer

    @property
    def values(self) -> _g.Tensor:
        return self._values

    @property
    def keys(self) -> _g.Tensor:
        return self._keys

    @property
    def batch_size(self) -> Any:
        return self._batch_size

    @property
    def alignments_size(self) -> Any:
        return self._alignments_size

    @property
    def state_size(self) -> Any:
        return self._alignments_size

    def initial_alignments(self, batch_size: Any, dtype: Any) -> _g.Tensor:
        """Zeros [batch_size, max_time]: the alignments before the first step."""
        size = self._alignments_size
        if isinstance(size, int):
            return zeros_of_size(batch_size, size, dtype)
        b = _g.convert_to_tensor(batch_size, dtype=_dt.int32)
        return _a.fill(_a.stack([b, size]), constant(0, dtype=_dt.as_dtype(dtype)))

    def initial_state(self, batch_size: Any, dtype: Any) -> _g.Tensor:
        """The state before the first step (the initial alignments)."""
        return self.initial_alignments(batch_size, dtype)


def _bahdanau_score(processed_query: _g.Tensor, keys: _g.Tensor, normalize: bool) -> _g.Tensor:
    dtype = processed_query.dtype
    num_units = keys.shape.dims[2]
    if num_units is None:
        num_units = processed_query.shape.dims[-1]
    processed_query = _a.expand_dims(processed_query, 1)                 # [batch, 1, units]
    v = get_variable("attention_v", [num_units], dtype=dtype)
    if normalize:
        g = get_variable("attention_g", shape=(), dtype=dtype,
                         initializer=_init.Constant(math.sqrt(1.0 / num_units)))
        b = get_variable("attention_b", [num_units], dtype=dtype, initializer=_init.Zeros())
        normed_v = g * v * _m.rsqrt(_m.reduce_sum(_m.square(v)))
        return _m.reduce_sum(normed_v * _nn.tanh(keys + processed_query + b), axis=2)
    return _m.reduce_sum(v * _nn.tanh(keys + processed_query), axis=2)


class BahdanauAttention(_BaseAttentionMechanism):
    """Additive attention (Bahdanau et al., 2015): score_j = v . tanh(W_m memory_j + W_q query),
    with normalize=True the weight-normalized form (attention_g, attention_b)."""

    def __init__(self, num_units: int, memory: Any, memory_sequence_length: Any = None, normalize: bool = False,
                 probability_fn: Optional[Callable] = None, score_mask_value: Any = None, dtype: Any = None,
                 custom_key_value_fn: Any = None, name: str = "BahdanauAttention"):
        fn = probability_fn if probability_fn is not None else _nn.softmax
        super().__init__(query_layer=_Dense(num_units, name="query_layer", use_bias=False),
                         memory=memory, probability_fn=lambda score, _prev: fn(score),
                         memory_sequence_length=memory_sequence_length,
                         memory_layer=_Dense(num_units, name="memory_layer", use_bias=False),
                         score_mask_value=score_mask_value, name=name, custom_key_value_fn=custom_key_value_fn)
        self._num_units = int(num_units)
        self._normalize = bool(normalize)
        self._name = name

    def __call__(self, query: Any, state: Any) -> Tuple[_g.Tensor, _g.Tensor]:
        """(alignments [batch, max_time], next state) for query [batch, query_depth]."""
        query = _g.convert_to_tensor(query)
        with variable_scope(None, default_name="bahdanau_attention", values=[query]):
            processed_query = self._query_layer(query) if self._query_layer is not None else query
            score = _bahdanau_score(processed_query, self._keys, self._normalize)
        alignments = self._probability_fn(score, state)
        return alignments, alignments


def _luong_score(query: _g.Tensor, keys: _g.Tensor, scale: bool) -> _g.Tensor:
    depth, key_units = query.shape.dims[-1], keys.shape.dims[-1]
    if depth is not None and key_units is not None and depth != key_units:
        raise ValueError(f"Incompatible or unknown inner dimensions between query and keys.  Query ({query}) has "
                         f"units: {depth}.  Keys ({keys}) have units: {key_units}.  Perhaps you need to set "
                         "num_units to the keys' dimension ({depth})?")
    score = _a.squeeze(_m.matmul(_a.expand_dims(query, 1), keys, transpose_b=True), [1])   # [batch, max_time]
    if scale:
        g = get_variable("attention_g", shape=(), dtype=query.dtype, initializer=_init.Ones())
        score = g * score
    return score


class LuongAttention(_BaseAttentionMechanism):
    """Multiplicative attention (Luong et al., 2015): score_j = query . (W_m memory_j), times a
    learned scalar attention_g with scale=True.  The query's depth must be num_units."""

    def __init__(self, num_units: int, memory: Any, memory_sequence_length: Any = None, scale: bool = False,
                 probability_fn: Optional[Callable] = None, score_mask_value: Any = None, dtype: Any = None,
                 custom_key_value_fn: Any = None, name: str = "LuongAttention"):
        fn = probability_fn if probability_fn is not None else _nn.softmax
        super().__init__(query_layer=None, memory=memory, probability_fn=lambda score, _prev: fn(score),
                         memory_sequence_length=memory_sequence_length,
                         memory_layer=_Dense(num_units, name="memory_layer", use_bias=False),
                         score_mask_value=score_mask_value, name=name, custom_key_value_fn=custom_key_value_fn)
        self._num_units = int(num_units)
        self._scale = bool(scale)
        self._name = name

    def __call__(self, query: Any, state: Any) -> Tuple[_g.Tensor, _g.Tensor]:
        query = _g.convert_to_tensor(query)
        with variable_scope(None, default_name="luong_attention", values=[query]):
            score = _luong_score(query, self._keys, self._scale)
        alignments = self._probability_fn(score, state)
        return alignments, alignments


class AttentionWrapperState(collections.namedtuple(
        "AttentionWrapperState",
        ("cell_state", "attention", "time", "alignments", "alignment_history", "attention_state"))):
    """The state of an AttentionWrapper: the wrapped cell's state, the last attention
    [batch, attention size], the step (int32 scalar), the last alignments, their history (a
    TensorArray per mechanism with alignment_history=True, else ()) and the mechanisms'
    states."""

    def clone(self, **kwargs: Any) -> "AttentionWrapperState":
        """A copy with the given fields replaced (e.g. clone(cell_state=encoder_state))."""
        return self._replace(**kwargs)


def _compute_attention(mechanism: Any, cell_output: Any, attention_state: Any,
                       attention_layer: Any) -> Tuple[Any, Any, Any]:
    alignments, next_attention_state = mechanism(cell_output, state=attention_state)
    context = _a.squeeze(_m.matmul(_a.expand_dims(alignments, 1), mechanism.values), [1])   # [batch, depth]
    if attention_layer is not None:
        attention = attention_layer(_a.concat([cell_output, context], 1))
    else:
        attention = context
    return attention, alignments, next_attention_state


class AttentionWrapper(RNNCell):
    """A cell with attention over a memory (tf.contrib.seq2seq.AttentionWrapper; see the module doc).

    attention_mechanism: one mechanism or a list of them (their attentions concatenated).
    attention_layer_size: the units of the bias-free attention_layer (a list, one per
    mechanism), or None: the attention is then the context itself.
    alignment_history: keep every step's alignments in a TensorArray (state.alignment_history).
    cell_input_fn(inputs, attention): the cell's input (default: their concatenation).
    initial_cell_state: the cell state zero_state starts from (default: the cell's zeros).
    attention_layer: layer objects instead of attention_layer_size (one per mechanism).
    attention_fn(mechanism, cell_output, attention_state, attention_layer) ->
    (attention, alignments, next_attention_state): replaces the default computation.
    """

    def __init__(self, cell: Any, attention_mechanism: Any, attention_layer_size: Any = None,
                 alignment_history: bool = False, cell_input_fn: Optional[Callable] = None,
                 output_attention: bool = True, initial_cell_state: Any = None, name: Optional[str] = None,
                 attention_layer: Any = None, attention_fn: Optional[Callable] = None):
        super().__init__(name=name)
        if isinstance(attention_mechanism, (list, tuple)):
            self._is_multi = True
            mechanisms = list(attention_mechanism)
            if not mechanisms:
                raise ValueError("attention_mechanism must contain at least one mechanism")
        else:
            self._is_multi = False
            mechanisms = [attention_mechanism]
        for m in mechanisms:
            if not isinstance(m, AttentionMechanism):
                raise TypeError(f"attention_mechanism must be an AttentionMechanism or list of multiple "
                                f"AttentionMechanism instances, saw type: {type(m).__name__}")
        if cell_input_fn is None:
            def cell_input_fn(inputs: Any, attention: Any) -> Any:
                return _a.concat([inputs, attention], -1)
        elif not callable(cell_input_fn):
            raise TypeError(f"cell_input_fn must be callable, saw type: {type(cell_input_fn).__name__}")
        if attention_layer_size is not None and attention_layer is not None:
            raise ValueError("Only one of attention_layer_size and attention_layer should be set")
        if attention_layer_size is not None:
            sizes = list(attention_layer_size) if isinstance(attention_layer_size, (list, tuple)) \
                else [attention_layer_size]
            if len(sizes) != len(mechanisms):
                raise ValueError(f"If provided, attention_layer_size must contain exactly one integer per "
                                 f"attention_mechanism, saw: {len(sizes)} vs {len(mechanisms)}")
            self._attention_layers: Optional[list] = [_Dense(int(s), name="attention_layer", use_bias=False)
                                                      for s in sizes]
            self._attention_layer_size = sum(int(s) for s in sizes)
        elif attention_layer is not None:
            layers = list(attention_layer) if isinstance(attention_layer, (list, tuple)) else [attention_layer]
            if len(layers) != len(mechanisms):
                raise ValueError(f"If provided, attention_layer must contain exactly one layer per "
                                 f"attention_mechanism, saw: {len(layers)} vs {len(mechanisms)}")
            self._attention_layers = layers
            self._attention_layer_size = sum(int(getattr(lay, "units")) for lay in layers)
        else:
            self._attention_layers = None
            self._attention_layer_size = sum(int(m.values.shape.dims[-1]) for m in mechanisms)
        if attention_fn is not None and not callable(attention_fn):
            raise TypeError(f"attention_fn must be callable, saw type: {type(attention_fn).__name__}")
        self._attention_fn = attention_fn if attention_fn is not None else _compute_attention
        self._cell = cell
        self._attention_mechanisms = mechanisms
        self._cell_input_fn = cell_input_fn
        self._output_attention = bool(output_attention)
        self._alignment_history = bool(alignment_history)
        self._initial_cell_state = initial_cell_state

    def _item_or_tuple(self, seq: Any) -> Any:
        t = tuple(seq)
        return t if self._is_multi else t[0]

    def _var_lists(self) -> Tuple[list, list]:
        t: list = []
        n: list = []
        parts = [self._cell] + list(self._attention_layers or []) + [
            lay for m in self._attention_mechanisms for lay in (m.query_layer, m.memory_layer) if lay is not None]
        for p in parts:
            for v in getattr(p, "trainable_variables", []):
                if not any(v is x for x in t):
                    t.append(v)
            for v in getattr(p, "non_trainable_variables", []):
                if not any(v is x for x in n):
                    n.append(v)
        return t, n

    @property
    def output_size(self) -> Any:
        return self._attention_layer_size if self._output_attention else self._cell.output_size

    @property
    def state_size(self) -> AttentionWrapperState:
        return AttentionWrapperState(
            cell_state=self._cell.state_size, time=TensorShape([]), attention=self._attention_layer_size,
            alignments=self._item_or_tuple(m.alignments_size for m in self._attention_mechanisms),
            attention_state=self._item_or_tuple(m.state_size for m in self._attention_mechanisms),
            alignment_history=self._item_or_tuple(m.alignments_size if self._alignment_history else ()
                                                  for m in self._attention_mechanisms))

    def zero_state(self, batch_size: Any, dtype: Any) -> AttentionWrapperState:
        """The state before the first step: the cell's zero state (or initial_cell_state),
        zero attention and alignments, time 0, empty alignment histories."""
        dt = _dt.as_dtype(dtype)
        batch = int(batch_size) if isinstance(batch_size, (int, np.integer)) else batch_size
        g = _g.get_default_graph()
        with g.name_scope(type(self).__name__ + "ZeroState"):
            if self._initial_cell_state is not None:
                cell_state = self._initial_cell_state
            else:
                cell_state = self._cell.zero_state(batch, dt)
            cell_state = map_structure(lambda s: identity(s, name="checked_cell_state"), cell_state)
            alignments = [m.initial_alignments(batch, dt) for m in self._attention_mechanisms]
            return AttentionWrapperState(
                cell_state=cell_state, time=_a.zeros([], _dt.int32),
                attention=zeros_of_size(batch, self._attention_layer_size, dt),
                alignments=self._item_or_tuple(alignments),
                attention_state=self._item_or_tuple(m.initial_state(batch, dt)
                                                    for m in self._attention_mechanisms),
                alignment_history=self._item_or_tuple(
                    TensorArray(dt, size=0, dynamic_size=True, element_shape=a.shape) if self._alignment_history
                    else () for a in alignments))

    def _build(self, depth: int) -> None:
        """No variables of its own: the cell and the attention layers make theirs on first use."""

    def call(self, inputs: _g.Tensor, state: Any) -> Tuple[Any, AttentionWrapperState]:
        if not isinstance(state, AttentionWrapperState):
            raise TypeError(f"Expected state to be instance of AttentionWrapperState. Received type "
                            f"{type(state).__name__} instead.")
        cell_inputs = self._cell_input_fn(inputs, state.attention)
        cell_output, next_cell_state = self._cell(cell_inputs, state.cell_state)
        if self._is_multi:
            prev_attention_state, prev_history = state.attention_state, state.alignment_history
        else:
            prev_attention_state, prev_history = [state.attention_state], [state.alignment_history]
        attentions, alignments_all, attention_states, histories = [], [], [], []
        for i, mech in enumerate(self._attention_mechanisms):
            attention, alignments, next_attention_state = self._attention_fn(
                mech, cell_output, prev_attention_state[i],
                self._attention_layers[i] if self._attention_layers else None)
            history = prev_history[i].write(state.time, alignments) if self._alignment_history else ()
            attentions.append(attention)
            alignments_all.append(alignments)
            attention_states.append(next_attention_state)
            histories.append(history)
        attention = _a.concat(attentions, 1) if len(attentions) > 1 else attentions[0]
        next_state = AttentionWrapperState(
            time=state.time + constant(1, dtype=_dt.int32), cell_state=next_cell_state, attention=attention,
            attention_state=self._item_or_tuple(attention_states), alignments=self._item_or_tuple(alignments_all),
            alignment_history=self._item_or_tuple(histories))
        return (attention if self._output_attention else cell_output), next_state

