"""tf.contrib.seq2seq's decoding: Decoder, dynamic_decode, the helpers and BasicDecoder.

`dynamic_decode` runs `decoder.step` inside one cf.while_loop until every batch entry is
finished (or `maximum_iterations`), writing each step's outputs to TensorArrays; gradients
flow back through the loop, so a decoder driven by a TrainingHelper trains.  The loop opens
the variable scope "decoder" (TF 1.x's), in which the cell names its variables
(decoder/basic_lstm_cell/kernel, decoder/attention_wrapper/..., decoder/dense/kernel for an
output layer).

A helper decides a step's inputs and when an entry is finished: TrainingHelper reads the
ground-truth inputs (teacher forcing) and finishes each entry at its sequence length;
GreedyEmbeddingHelper feeds back the embedding of the argmax of the outputs and finishes an
entry when it emits end_token; SampleEmbeddingHelper samples the fed-back id from the
softmax of the outputs instead.
"""
from __future__ import annotations

import collections
from typing import Any, Callable, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...graph import graph as _g
from ...graph import nest
from ...graph.control_flow import while_loop
from ...graph.ops import array_ops as _a
from ...graph.ops import math_ops as _m
from ...graph.ops import nn_ops as _nn
from ...graph.ops.categorical_ops import multinomial
from ...graph.ops.constant_op import constant
from ...graph.shape import TensorShape, as_shape
from ...graph.tensor_array import TensorArray
from ...graph.variable_scope import variable_scope

__all__ = ["Decoder", "dynamic_decode", "Helper", "CustomHelper", "TrainingHelper", "GreedyEmbeddingHelper",
           "SampleEmbeddingHelper", "BasicDecoder", "BasicDecoderOutput"]


# -- small structure utilities shared by the package --------------------------------------


def map_structure(fn: Callable, *structures: Any) -> Any:
    """fn applied leaf by leaf to structures of the same shape (TF's nest.map_structure)."""
    flats = [nest.flatten(s) for s in structures]
    return nest.pack_sequence_as(structures[0], [fn(*xs) for xs in zip(*flats)])


def batch_dim(x: _g.Tensor) -> Any:
    """x's first dimension: the static int, else a scalar tensor."""
    d = x.shape.dims[0] if x.shape.rank else None
    return int(d) if d is not None else _a.shape(x)[0]


def static_int(x: Any) -> Optional[int]:
    return int(x) if isinstance(x, (int, np.integer)) else None


def _size_dims(size: Any) -> list:
    """An output size (an int or a TensorShape/list of ints) as a list of dims."""
    if isinstance(size, int):
        return [size]
    return list(as_shape(size).dims)


def zeros_of_size(batch: Any, size: Any, dtype: Any) -> _g.Tensor:
    """zeros [batch, *size] (batch an int or a scalar tensor)."""
    dims = _size_dims(size)
    if isinstance(batch, (int, np.integer)):
        return _a.zeros([int(batch)] + [int(d) for d in dims], _dt.as_dtype(dtype))
    return _a.fill(_a.stack([batch] + [constant(int(d), dtype=_dt.int32) for d in dims]),
                   constant(0, dtype=_dt.as_dtype(dtype)))


def transpose_batch_time(x: _g.Tensor) -> _g.Tensor:
    """Swaps the first two axes ([time, batch, ...] <-> [batch, time, ...])."""
    r = x.shape.rank
    if r is None or r < 2:
        return x
    return _a.transpose(x, [1, 0] + list(range(2, r)))


# -- the decoder interface and dynamic_decode ----------------------------------------------


class Decoder:
    """tf.contrib.seq2seq.Decoder: what dynamic_decode runs.

    batch_size, output_size (a structure of sizes), output_dtype (the same structure of
    dtypes), initialize(name) -> (finished, first inputs, initial state),
    step(time, inputs, state, name) -> (outputs, next state, next inputs, finished), and
    optionally finalize(outputs, final state, sequence lengths) -> (outputs, final state).
    tracks_own_finished: True when step's `finished` already includes earlier finishes.
    """

    @property
    def batch_size(self) -> Any:
        raise NotImplementedError

    @property
    def output_size(self) -> Any:
        raise NotImplementedError

    @property
    def output_dtype(self) -> Any:
        raise NotImplementedError

    def initialize(self, name: Optional[str] = None) -> Tuple[Any, Any, Any]:
        raise NotImplementedError

    def step(self, time: Any, inputs: Any, state: Any, name: Optional[str] = None) -> Tuple[Any, Any, Any, Any]:
        raise NotImplementedError

    def finalize(self, outputs: Any, final_state: Any, sequence_lengths: Any) -> Tuple[Any, Any]:
        raise NotImplementedError

    @property
    def tracks_own_finished(self) -> bool:
        return False


def dynamic_decode(decoder: Decoder, output_time_major: bool = False, impute_finished: bool = False,
                   maximum_iterations: Any = None, parallel_iterations: int = 32, swap_memory: bool = False,
                   scope: Any = None) -> Tuple[Any, Any, _g.Tensor]:
    """Runs `decoder` step by step in one while loop until every entry is finished.

    Returns (final_outputs, final_state, final_sequence_lengths): the outputs a structure
    like decoder.output_size of [batch, time, ...] tensors ([time, batch, ...] with
    output_time_major), and each entry's length (the step at which it finished, + 1).
    impute_finished: a finished entry's later outputs are zeros and its state is carried
    through unchanged (otherwise they are whatever the decoder computes).
    maximum_iterations: stop after that many steps (entries still running are finished there).
    """
    if not isinstance(decoder, Decoder):
        raise TypeError(f"Expected decoder to be type Decoder, but saw: {type(decoder).__name__}")
    with variable_scope(scope, default_name="decoder"):
        if maximum_iterations is not None:
            maximum_iterations = _g.convert_to_tensor(maximum_iterations, dtype=_dt.int32, name="maximum_iterations")
            if maximum_iterations.shape.rank not in (None, 0):
                raise ValueError("maximum_iterations must be a scalar")
        initial_finished, initial_inputs, initial_state = decoder.initialize()
        batch = decoder.batch_size
        zero_outputs = map_structure(lambda size, dt: zeros_of_size(batch, size, dt),
                                     decoder.output_size, decoder.output_dtype)
        if maximum_iterations is not None:
            initial_finished = _m.logical_or(initial_finished, _m.greater_equal(constant(0), maximum_iterations))
        initial_sequence_lengths = _a.zeros_like(initial_finished, dtype=_dt.int32)
        b_static = static_int(batch)

        def make_ta(size: Any, dt: Any) -> TensorArray:
            return TensorArray(dt, size=0, dynamic_size=True, element_shape=[b_static] + _size_dims(size))
        initial_outputs_ta = map_structure(make_ta, decoder.output_size, decoder.output_dtype)
        one = constant(1, dtype=_dt.int32)

        def condition(time: Any, outputs_ta: Any, state: Any, inputs: Any, finished: Any, seq_lengths: Any) -> Any:
            return _m.logical_not(_m.reduce_all(finished))

        def body(time: Any, outputs_ta: Any, state: Any, inputs: Any, finished: Any, seq_lengths: Any) -> Any:
            next_outputs, decoder_state, next_inputs, decoder_finished = decoder.step(time, inputs, state)
            if decoder.tracks_own_finished:
                next_finished = decoder_finished
            else:
                next_finished = _m.logical_or(decoder_finished, finished)
            next_seq_lengths = _a.where(finished, seq_lengths, _a.zeros_like(seq_lengths) + (time + one))
            nest.assert_same_structure(state, decoder_state)
            nest.assert_same_structure(outputs_ta, next_outputs)
            nest.assert_same_structure(inputs, next_inputs)
            if maximum_iterations is not None:
                next_finished = _m.logical_or(next_finished, _m.greater_equal(time + one, maximum_iterations))
            if impute_finished:
                emit = map_structure(lambda out, zero: _a.where(finished, zero, out), next_outputs, zero_outputs)

                def maybe_copy_state(new: Any, cur: Any) -> Any:
                    if isinstance(cur, TensorArray) or cur.shape.rank == 0:
                        return new
                    return _a.where(finished, cur, new)
                next_state = map_structure(maybe_copy_state, decoder_state, state)
            else:
                emit, next_state = next_outputs, decoder_state
            outputs_ta = map_structure(lambda ta, out: ta.write(time, out), outputs_ta, emit)
            return time + one, outputs_ta, next_state, next_inputs, next_finished, next_seq_lengths

        res = while_loop(condition, body,
                         (constant(0, dtype=_dt.int32), initial_outputs_ta, initial_state, initial_inputs,
                          initial_finished, initial_sequence_lengths),
                         parallel_iterations=parallel_iterations, maximum_iterations=maximum_iterations,
                         swap_memory=swap_memory, name="while")
        final_outputs_ta, final_state, final_sequence_lengths = res[1], res[2], res[5]
        final_outputs = map_structure(lambda ta, zero: ta.stack(element_like=zero), final_outputs_ta, zero_outputs)
        try:
            final_outputs, final_state = decoder.finalize(final_outputs, final_state, final_sequence_lengths)
        except NotImplementedError:
            pass
        if not output_time_major:
            final_outputs = map_structure(transpose_batch_time, final_outputs)
    return final_outputs, final_state, final_sequence_lengths


# -- helpers -------------------------------------------------------------------------------


class Helper:
    """tf.contrib.seq2seq.Helper: how a BasicDecoder picks its inputs and finishes.

    batch_size, sample_ids_shape, sample_ids_dtype, initialize() -> (finished, inputs),
    sample(time, outputs, state) -> sample_ids,
    next_inputs(time, outputs, state, sample_ids) -> (finished, next_inputs, next_state).
    """

    @property
    def batch_size(self) -> Any:
        raise NotImplementedError

    @property
    def sample_ids_shape(self) -> TensorShape:
        raise NotImplementedError

    @property
    def sample_ids_dtype(self) -> _dt.DType:
        raise NotImplementedError

    def initialize(self, name: Optional[str] = None) -> Tuple[Any, Any]:
        raise NotImplementedError

    def sample(self, time: Any, outputs: Any, state: Any, name: Optional[str] = None) -> Any:
        raise NotImplementedError

    def next_inputs(self, time: Any, outputs: Any, state: Any, sample_ids: Any,
                    name: Optional[str] = None) -> Tuple[Any, Any, Any]:
        raise NotImplementedError


class CustomHelper(Helper):
    """A Helper from three functions: initialize_fn() -> (finished, inputs),
    sample_fn(time, outputs, state) -> sample_ids, and
    next_inputs_fn(time, outputs, state, sample_ids) -> (finished, next_inputs, next_state)."""

    def __init__(self, initialize_fn: Callable, sample_fn: Callable, next_inputs_fn: Callable,
                 sample_ids_shape: Any = None, sample_ids_dtype: Any = None):
        self._initialize_fn, self._sample_fn, self._next_inputs_fn = initialize_fn, sample_fn, next_inputs_fn
        self._batch_size: Any = None
        self._sample_ids_shape = as_shape(sample_ids_shape or [])
        self._sample_ids_dtype = _dt.as_dtype(sample_ids_dtype or _dt.int32)

    @property
    def batch_size(self) -> Any:
        if self._batch_size is None:
            raise ValueError("batch_size accessed before initialize was called")
        return self._batch_size

    @property
    def sample_ids_shape(self) -> TensorShape:
        return self._sample_ids_shape

    @property
    def sample_ids_dtype(self) -> _dt.DType:
        return self._sample_ids_dtype

    def initialize(self, name: Optional[str] = None) -> Tuple[Any, Any]:
        finished, next_inputs = self._initialize_fn()
        if self._batch_size is None:
            self._batch_size = batch_dim(_g.convert_to_tensor(finished))
        return finished, next_inputs

    def sample(self, time: Any, outputs: Any, state: Any, name: Optional[str] = None) -> Any:
        return self._sample_fn(time=time, outputs=outputs, state=state)

    def next_inputs(self, time: Any, outputs: Any, state: Any, sample_ids: Any,
                    name: Optional[str] = None) -> Tuple[Any, Any, Any]:
        return self._next_inputs_fn(time=time, outputs=outputs, state=state, sample_ids=sample_ids)


class TrainingHelper(Helper):
    """Teacher forcing: step t reads inputs[:, t] (inputs [batch, time, depth], or
    [time, batch, depth] with time_major); entry b is finished once t reaches
    sequence_length[b].  sample ids are the argmax of the outputs (int32)."""

    def __init__(self, inputs: Any, sequence_length: Any, time_major: bool = False, name: Optional[str] = None):
        g = _g.get_default_graph()
        with g.name_scope(name or "TrainingHelper"):
            x = _g.convert_to_tensor(inputs)
            if not time_major:
                x = transpose_batch_time(x)
            if x.shape.rank is not None and x.shape.rank < 2:
                raise ValueError(f"TrainingHelper: inputs must be at least [batch, time], got shape {x.shape}")
            self._inputs = x
            t_static = x.shape.dims[0] if x.shape.rank else None
            self._n_time = constant(t_static, dtype=_dt.int32) if t_static is not None else _a.shape(x)[0]
            self._input_tas = map_structure(
                lambda inp: TensorArray(inp.dtype, self._n_time, element_shape=list(inp.shape.dims[1:])
                                        if inp.shape.rank is not None else None).unstack(inp), x)
            seq = _g.convert_to_tensor(sequence_length, name="sequence_length")
            if seq.shape.rank not in (None, 1):
                raise ValueError(f"Expected sequence_length to be a vector, but received shape: {seq.shape}")
            self._sequence_length = seq if seq.dtype == _dt.int32 else _m.cast(seq, _dt.int32)
            self._batch_size = batch_dim(self._sequence_length)

    @property
    def inputs(self) -> _g.Tensor:
        return self._inputs

    @property
    def sequence_length(self) -> _g.Tensor:
        return self._sequence_length

    @property
    def batch_size(self) -> Any:
        return self._batch_size

    @property
    def sample_ids_shape(self) -> TensorShape:
        return TensorShape([])

    @property
    def sample_ids_dtype(self) -> _dt.DType:
        return _dt.int32

    def _read(self, t: Any) -> Any:
        # past the last step every entry is finished and the inputs are never used: read the
        # last element instead of TF's zeros (no read past the end of the array)
        last = self._n_time - constant(1, dtype=_dt.int32)
        idx = _m.maximum(_m.minimum(t, last), constant(0, dtype=_dt.int32))
        return map_structure(lambda ta: ta.read(idx), self._input_tas)

    def initialize(self, name: Optional[str] = None) -> Tuple[Any, Any]:
        g = _g.get_default_graph()
        with g.name_scope(name or "TrainingHelperInitialize"):
            finished = _m.greater_equal(constant(0, dtype=_dt.int32), self._sequence_length)
            return finished, self._read(constant(0, dtype=_dt.int32))

    def sample(self, time: Any, outputs: Any, state: Any, name: Optional[str] = None) -> Any:
        g = _g.get_default_graph()
        with g.name_scope(name or "TrainingHelperSample"):
            return _m.argmax(outputs, axis=-1, output_type=_dt.int32)

    def next_inputs(self, time: Any, outputs: Any, state: Any, sample_ids: Any = None,
                    name: Optional[str] = None) -> Tuple[Any, Any, Any]:
        g = _g.get_default_graph()
        with g.name_scope(name or "TrainingHelperNextInputs"):
            next_time = time + constant(1, dtype=_dt.int32)
            finished = _m.greater_equal(next_time, self._sequence_length)
            return finished, self._read(next_time), state


def _embedding_fn(embedding: Any) -> Callable[[Any], Any]:
    if callable(embedding):
        return embedding
    params = embedding
    return lambda ids: _nn.embedding_lookup(params, ids)


class GreedyEmbeddingHelper(Helper):
    """Inference: the first inputs are embedding(start_tokens); each step feeds back the
    embedding of the argmax of the outputs (int32 sample ids) and finishes the entries that
    emitted end_token.  embedding: the params of embedding_lookup, or a callable(ids)."""

    def __init__(self, embedding: Any, start_tokens: Any, end_token: Any):
        self._embedding_fn = _embedding_fn(embedding)
        self._start_tokens = _g.convert_to_tensor(start_tokens, dtype=_dt.int32, name="start_tokens")
        self._end_token = _g.convert_to_tensor(end_token, dtype=_dt.int32, name="end_token")
        if self._start_tokens.shape.rank not in (None, 1):
            raise ValueError("start_tokens must be a vector")
        if self._end_token.shape.rank not in (None, 0):
            raise ValueError("end_token must be a scalar")
        self._batch_size = batch_dim(self._start_tokens)
        self._start_inputs = self._embedding_fn(self._start_tokens)

    @property
    def batch_size(self) -> Any:
        return self._batch_size

    @property
    def sample_ids_shape(self) -> TensorShape:
        return TensorShape([])

    @property
    def sample_ids_dtype(self) -> _dt.DType:
        return _dt.int32

    def initialize(self, name: Optional[str] = None) -> Tuple[Any, Any]:
        finished = _m.cast(_a.zeros_like(self._start_tokens), _dt.bool_)
        return finished, self._start_inputs

    def sample(self, time: Any, outputs: Any, state: Any, name: Optional[str] = None) -> Any:
        outputs = _g.convert_to_tensor(outputs)
        if outputs.shape.rank is not None and outputs.shape.rank != 2:
            raise ValueError(f"Expected outputs to be a single Tensor [batch, classes], got shape {outputs.shape}")
        return _m.argmax(outputs, axis=-1, output_type=_dt.int32)

    def next_inputs(self, time: Any, outputs: Any, state: Any, sample_ids: Any,
                    name: Optional[str] = None) -> Tuple[Any, Any, Any]:
        finished = _m.equal(sample_ids, self._end_token)
        # once all are finished the loop ends and these inputs are unused (TF feeds the start
        # inputs there; the values never reach an output)
        return finished, self._embedding_fn(sample_ids), state


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """GreedyEmbeddingHelper that samples the fed-back id from softmax(outputs / softmax_temperature)
    (categorical sampling, `seed` for its draw) instead of taking the argmax."""

    def __init__(self, embedding: Any, start_tokens: Any, end_token: Any, softmax_temperature: Any = None,
                 seed: Optional[int] = None):
        super().__init__(embedding, start_tokens, end_token)
        self._softmax_temperature = softmax_temperature
        self._seed = seed

    def sample(self, time: Any, outputs: Any, state: Any, name: Optional[str] = None) -> Any:
        logits = _g.convert_to_tensor(outputs)
        if logits.shape.rank is not None and logits.shape.rank != 2:
            raise ValueError(f"Expected outputs to be a single Tensor [batch, classes], got shape {logits.shape}")
        if self._softmax_temperature is not None:
            logits = logits / _g.convert_to_tensor(self._softmax_temperature, dtype=logits.dtype)
        return _a.reshape(multinomial(logits, 1, seed=self._seed, output_dtype=_dt.int32), [-1])


# -- BasicDecoder --------------------------------------------------------------------------


class BasicDecoderOutput(collections.namedtuple("BasicDecoderOutput", ("rnn_output", "sample_id"))):
    """One step's (or, stacked, all steps') outputs: rnn_output and sample_id."""


def layer_output_size(layer: Any, in_size: Any) -> Any:
    """The output size of an output layer (a tf.layers.Dense: its units)."""
    units = getattr(layer, "units", None)
    if units is not None:
        return int(units)
    compute = getattr(layer, "compute_output_shape", None)
    if compute is not None:
        return as_shape(compute(TensorShape([None] + _size_dims(in_size)))).dims[1:]
    raise TypeError(f"output_layer {layer!r}: its output size is unknown (give it `units` or compute_output_shape)")


class BasicDecoder(Decoder):
    """An RNN cell driven by a helper: each step runs the cell, then output_layer (if any)
    on its output, then the helper's sample and next_inputs."""

    def __init__(self, cell: Any, helper: Helper, initial_state: Any, output_layer: Any = None):
        if not callable(cell):
            raise TypeError(f"cell must be an RNNCell, received: {type(cell).__name__}")
        if not isinstance(helper, Helper):
            raise TypeError(f"helper must be a Helper, received: {type(helper).__name__}")
        if output_layer is not None and not callable(output_layer):
            raise TypeError(f"output_layer must be a Layer, received: {type(output_layer).__name__}")
        self._cell, self._helper, self._initial_state = cell, helper, initial_state
        self._output_layer = output_layer

    @property
    def batch_size(self) -> Any:
        return self._helper.batch_size

    def _rnn_output_size(self) -> Any:
        size = self._cell.output_size
        if self._output_layer is None:
            return size
        return layer_output_size(self._output_layer, size)

    @property
    def output_size(self) -> BasicDecoderOutput:
        return BasicDecoderOutput(rnn_output=self._rnn_output_size(), sample_id=self._helper.sample_ids_shape)

    @property
    def output_dtype(self) -> BasicDecoderOutput:
        dtype = nest.flatten(self._initial_state)[0].dtype
        return BasicDecoderOutput(map_structure(lambda _: dtype, self._rnn_output_size()),
                                  self._helper.sample_ids_dtype)

    def initialize(self, name: Optional[str] = None) -> Tuple[Any, Any, Any]:
        finished, inputs = self._helper.initialize()
        return finished, inputs, self._initial_state

    def step(self, time: Any, inputs: Any, state: Any, name: Optional[str] = None) -> Tuple[Any, Any, Any, Any]:
        g = _g.get_default_graph()
        with g.name_scope(name or "BasicDecoderStep"):
            cell_outputs, cell_state = self._cell(inputs, state)
            if self._output_layer is not None:
                cell_outputs = self._output_layer(cell_outputs)
            sample_ids = self._helper.sample(time=time, outputs=cell_outputs, state=cell_state)
            finished, next_inputs, next_state = self._helper.next_inputs(
                time=time, outputs=cell_outputs, state=cell_state, sample_ids=sample_ids)
        return BasicDecoderOutput(cell_outputs, sample_ids), next_state, next_inputs, finished
