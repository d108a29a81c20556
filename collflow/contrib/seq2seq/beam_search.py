"""tf.contrib.seq2seq's beam search: BeamSearchDecoder, tile_batch and gather_tree.

The decoder keeps `beam_width` hypotheses per batch entry.  Each step runs the cell on all
batch * beam_width rows at once, adds log_softmax of the outputs to each beam's log
probability (a finished beam may only extend with end_token, at no cost), scores every
(beam, word) pair (divided by the length penalty ((5 + length) / 6) ** weight when
length_penalty_weight is not 0), keeps the best beam_width of the beam_width * vocab pairs
per entry (top_k, the lower index first among equals), and reorders the cell state to
follow the surviving beams.  Each step emits the scores, the chosen word ids and the beams
they extend (parent_ids); finalize follows the parents back (gather_tree) into
predicted_ids [batch, time, beam_width] (time-major under output_time_major), best beam first.

The initial state and any memory the cell attends over must be batch * beam_width rows,
each entry repeated beam_width times in a row: tile_batch does that.
"""
from __future__ import annotations

import collections
from typing import Any, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...graph import graph as _g
from ...graph import nest
from ...graph.control_flow import while_loop
from ...graph.ops import array_ops as _a
from ...graph.ops import math_ops as _m
from ...graph.ops import misc_ops as _misc
from ...graph.ops import nn_ops as _nn
from ...graph.ops.constant_op import constant
from ...graph.ops.scan_ops import cumsum
from ...graph.ops.slicing_ops import gather
from ...graph.shape import TensorShape
from ...graph.tensor_array import TensorArray
from .decoder import Decoder, _embedding_fn, batch_dim, layer_output_size, map_structure

__all__ = ["BeamSearchDecoder", "BeamSearchDecoderOutput", "BeamSearchDecoderState", "FinalBeamSearchDecoderOutput",
           "tile_batch", "gather_tree", "gather_tree_from_array"]


class BeamSearchDecoderState(collections.namedtuple(
        "BeamSearchDecoderState", ("cell_state", "log_probs", "finished", "lengths", "accumulated_attention_probs"))):
    """The beams' cell states [batch, beam, ...], log probabilities, finished flags, lengths
    (int64) and () for accumulated_attention_probs (no coverage penalty)."""


class BeamSearchDecoderOutput(collections.namedtuple("BeamSearchDecoderOutput",
                                                     ("scores", "predicted_ids", "parent_ids"))):
    """One step's scores [batch, beam], word ids and the beams they extend."""


class FinalBeamSearchDecoderOutput(collections.namedtuple("FinalBeamDecoderOutput",
                                                          ["predicted_ids", "beam_search_decoder_output"])):
    """predicted_ids [batch, time, beam] (the beams traced back) and the raw step outputs."""


def _trailing(x: _g.Tensor, start: int) -> Any:
    """x's dims from `start` on: static ints where known, else the run-time shape's entries."""
    dims = x.shape.dims[start:]
    if all(d is not None for d in dims):
        return [int(d) for d in dims]
    shp = _a.shape(x)
    return [int(d) if d is not None else shp[start + i] for i, d in enumerate(dims)]


def _tile_one(t: Any, multiplier: int) -> _g.Tensor:
    t = _g.convert_to_tensor(t)
    if t.shape.rank is None:
        raise ValueError("t must have statically known rank")
    if t.shape.rank == 0:
        return _a.tile(_a.expand_dims(t, 0), [multiplier])
    tiled = _a.tile(_a.expand_dims(t, 1), [1, multiplier] + [1] * (t.shape.rank - 1))
    return _a.reshape(tiled, [-1] + _trailing(t, 1))


def tile_batch(t: Any, multiplier: int, name: Optional[str] = None) -> Any:
    """Every batch entry of t (a tensor or a structure of them, [batch, ...]) repeated
    `multiplier` times in a row: [batch * multiplier, ...] (b0, b0, ..., b1, b1, ...)."""
    g = _g.get_default_graph()
    with g.name_scope(name or "tile_batch"):
        return map_structure(lambda x: _tile_one(x, int(multiplier)), t)


def _batch_gather(x: _g.Tensor, index: _g.Tensor) -> _g.Tensor:
    """out[b, k, ...] = x[b, index[b, k], ...] for x [batch, n, ...] and index [batch, k]."""
    n = x.shape.dims[1] if x.shape.dims[1] is not None else _a.shape(x)[1]
    b = batch_dim(index)
    offsets = _a.expand_dims(_misc.range(0, b, dtype=_dt.int32) * n, 1)
    flat_index = _a.reshape(index + offsets, [-1])
    flat = _a.reshape(x, [-1] + _trailing(x, 2))
    out = gather(flat, flat_index)
    return _a.reshape(out, [b, _a.shape(index)[1] if index.shape.dims[1] is None else int(index.shape.dims[1])]
                      + _trailing(x, 2))


def gather_tree(step_ids: Any, parent_ids: Any, max_sequence_lengths: Any, end_token: Any,
                name: Optional[str] = None) -> _g.Tensor:
    """The beams traced back from their last step (tf.contrib.seq2seq.gather_tree).

    step_ids, parent_ids: [max_time, batch, beam] int32 (the word chosen at each step and the
    beam it extended); max_sequence_lengths [batch]: steps past an entry's length are
    end_token.  out[t, b, k] follows beam k of entry b back from its last step; once a beam
    has emitted end_token, everything after it is end_token.
    """
    g = _g.get_default_graph()
    with g.name_scope(name or "GatherTree"):
        ids = _g.convert_to_tensor(step_ids, dtype=_dt.int32, name="step_ids")
        parents = _g.convert_to_tensor(parent_ids, dtype=_dt.int32, name="parent_ids")
        lengths = _g.convert_to_tensor(max_sequence_lengths, name="max_sequence_lengths")
        lengths = lengths if lengths.dtype == _dt.int32 else _m.cast(lengths, _dt.int32)
        end = _g.convert_to_tensor(end_token, dtype=_dt.int32, name="end_token")
        if ids.shape.rank not in (None, 3) or parents.shape.rank not in (None, 3):
            raise ValueError("gather_tree: step_ids and parent_ids must be [max_time, batch, beam]")
        n_time = _a.shape(ids)[0]
        ids_ta = TensorArray(_dt.int32, n_time, element_shape=ids.shape.dims[1:]).unstack(ids)
        par_ta = TensorArray(_dt.int32, n_time, element_shape=parents.shape.dims[1:]).unstack(parents)
        out_ta = TensorArray(_dt.int32, n_time, element_shape=ids.shape.dims[1:])
        first = ids[0]
        beam = _a.shape(first)[1]
        parent0 = _a.zeros_like(first) + _a.expand_dims(_misc.range(0, beam, dtype=_dt.int32), 0)
        lengths_col = _a.expand_dims(lengths, 1)
        end_like = _a.zeros_like(first) + end
        one = constant(1, dtype=_dt.int32)

        def cond(t: Any, parent: Any, ta: Any) -> Any:
            return _m.greater_equal(t, constant(0, dtype=_dt.int32))

        def body(t: Any, parent: Any, ta: Any) -> Any:
            live = _m.logical_and(_m.less(t, lengths_col), _m.greater_equal(parent, 0))   # [batch, beam]
            live = _m.logical_and(live, _m.less(parent, beam))
            safe = _a.where(live, parent, _a.zeros_like(parent))
            word = _batch_gather(ids_ta.read(t), safe)
            up = _batch_gather(par_ta.read(t), safe)
            return t - one, _a.where(live, up, parent), ta.write(t, _a.where(live, word, end_like))

        _, _, out_ta = while_loop(cond, body, (n_time - one, parent0, out_ta), back_prop=False, name="while")
        beams = out_ta.stack(element_like=first)
        # after the first end_token of a beam, only end_tokens
        ended = cumsum(_m.cast(_m.equal(beams, end), _dt.int32), axis=0, exclusive=True)
        return _a.where(_m.greater(ended, 0), _a.zeros_like(beams) + end, beams)


def gather_tree_from_array(t: Any, parent_ids: Any, sequence_length: Any) -> _g.Tensor:
    """t [max_time, batch * beam, ...] (one row per beam and step) with each beam's rows
    taken from its ancestors (the beams gather_tree traces back from parent_ids
    [max_time, batch, beam]); steps past a beam's sequence_length [batch, beam] keep its own row."""
    t = _g.convert_to_tensor(t)
    parents = _g.convert_to_tensor(parent_ids, dtype=_dt.int32)
    shp = _a.shape(parents)
    n_time, batch, beam = shp[0], shp[1], shp[2]
    beam_ids = _a.zeros_like(parents) + _a.reshape(_misc.range(0, beam, dtype=_dt.int32), [1, 1, -1])
    lengths = _m.cast(_g.convert_to_tensor(sequence_length), _dt.int32)
    sorted_ids = gather_tree(beam_ids, parents, _m.reduce_max(lengths, axis=1), beam + 1)
    steps = _a.reshape(_misc.range(0, n_time, dtype=_dt.int32), [-1, 1, 1])
    in_bound = _m.less(steps, _a.expand_dims(lengths, 0))                          # [time, batch, beam]
    sorted_ids = _a.where(in_bound, sorted_ids, beam_ids)
    rows = (steps * batch + _a.reshape(_misc.range(0, batch, dtype=_dt.int32), [1, -1, 1])) * beam + sorted_ids
    flat = _a.reshape(t, [-1] + _trailing(t, 2))
    return _a.reshape_like(gather(flat, _a.reshape(rows, [-1])), t)


def _length_penalty(lengths: _g.Tensor, weight: Any, dtype: _dt.DType) -> Any:
    """((5 + length) / 6) ** weight (Wu et al., 2016); 1 when the weight is a static 0."""
    if isinstance(weight, (int, float, np.integer, np.floating)) and float(weight) == 0.0:
        return None
    w = _g.convert_to_tensor(weight, dtype=dtype, name="penalty_factor")
    return _m.pow(constant(5.0, dtype=dtype) + _m.cast(lengths, dtype), w) / _m.pow(constant(6.0, dtype=dtype), w)


class BeamSearchDecoder(Decoder):
    """Beam search over a cell (tf.contrib.seq2seq.BeamSearchDecoder; see the module doc).

    initial_state: the cell's state for batch * beam_width rows (tile_batch the encoder's).
    embedding: embedding_lookup params or a callable(ids); start_tokens [batch];
    output_layer: the projection to the vocabulary (its size must be static).
    """

    def __init__(self, cell: Any, embedding: Any, start_tokens: Any, end_token: Any, initial_state: Any,
                 beam_width: int, output_layer: Any = None, length_penalty_weight: Any = 0.0,
                 coverage_penalty_weight: float = 0.0, reorder_tensor_arrays: bool = True):
        if not callable(cell):
            raise TypeError(f"cell must be an RNNCell, received: {type(cell).__name__}")
        if output_layer is not None and not callable(output_layer):
            raise TypeError(f"output_layer must be a Layer, received: {type(output_layer).__name__}")
        if coverage_penalty_weight:
            raise NotImplementedError("BeamSearchDecoder: coverage_penalty_weight is not supported by collflow")
        self._cell, self._output_layer = cell, output_layer
        self._reorder_tensor_arrays = bool(reorder_tensor_arrays)
        self._embedding_fn = _embedding_fn(embedding)
        self._start_tokens = _g.convert_to_tensor(start_tokens, dtype=_dt.int32, name="start_tokens")
        if self._start_tokens.shape.rank not in (None, 1):
            raise ValueError("start_tokens must be a vector")
        self._end_token = _g.convert_to_tensor(end_token, dtype=_dt.int32, name="end_token")
        if self._end_token.shape.rank not in (None, 0):
            raise ValueError("end_token must be a scalar")
        self._beam_width = int(beam_width)
        self._length_penalty_weight = length_penalty_weight
        self._batch_size = batch_dim(self._start_tokens)
        self._initial_cell_state = map_structure(self._split, initial_state)
        tokens = _a.tile(_a.expand_dims(self._start_tokens, 1), [1, self._beam_width])      # [batch, beam]
        self._start_inputs = self._embedding_fn(tokens)
        # only beam 0 is live at the start (the others would repeat it)
        beam_index = _a.zeros_like(tokens) + _a.expand_dims(_misc.range(0, self._beam_width, dtype=_dt.int32), 0)
        self._finished = _m.not_equal(beam_index, constant(0, dtype=_dt.int32))

    # -- batch * beam <-> [batch, beam] ---------------------------------------------------
    def _split(self, t: Any) -> Any:
        if isinstance(t, TensorArray):
            return t
        t = _g.convert_to_tensor(t)
        if t.shape.rank is None or t.shape.rank < 1:
            return t
        return _a.reshape(t, [self._batch_size, self._beam_width] + _trailing(t, 1))

    def _merge(self, t: Any) -> Any:
        if isinstance(t, TensorArray):
            return t
        t = _g.convert_to_tensor(t)
        if t.shape.rank is None or t.shape.rank < 2:
            return t
        return _a.reshape(t, [-1] + _trailing(t, 2))

    # -- Decoder -------------------------------------------------------------------------------
    @property
    def batch_size(self) -> Any:
        return self._batch_size

    @property
    def tracks_own_finished(self) -> bool:
        return True

    def _vocab_size(self) -> int:
        size = self._cell.output_size if self._output_layer is None else \
            layer_output_size(self._output_layer, self._cell.output_size)
        if not isinstance(size, (int, np.integer)):
            raise ValueError(f"BeamSearchDecoder: the output size must be a static int, got {size!r}")
        return int(size)

    @property
    def output_size(self) -> BeamSearchDecoderOutput:
        k = TensorShape([self._beam_width])
        return BeamSearchDecoderOutput(scores=k, predicted_ids=k, parent_ids=k)

    @property
    def output_dtype(self) -> BeamSearchDecoderOutput:
        dtype = nest.flatten(self._initial_cell_state)[0].dtype
        return BeamSearchDecoderOutput(scores=dtype, predicted_ids=_dt.int32, parent_ids=_dt.int32)

    def initialize(self, name: Optional[str] = None) -> Tuple[Any, Any, Any]:
        dtype = nest.flatten(self._initial_cell_state)[0].dtype
        zeros = _a.zeros_like(self._finished, dtype=dtype)
        log_probs = _a.where(self._finished, zeros + constant(float("-inf"), dtype=dtype), zeros)
        state = BeamSearchDecoderState(cell_state=self._initial_cell_state, log_probs=log_probs,
                                       finished=self._finished, lengths=_a.zeros_like(self._finished, dtype=_dt.int64),
                                       accumulated_attention_probs=())
        return self._finished, self._start_inputs, state

    def step(self, time: Any, inputs: Any, state: Any, name: Optional[str] = None) -> Tuple[Any, Any, Any, Any]:
        g = _g.get_default_graph()
        with g.name_scope(name or "BeamSearchDecoderStep"):
            cell_inputs = map_structure(self._merge, inputs)
            cell_state = map_structure(self._merge, state.cell_state)
            cell_outputs, next_cell_state = self._cell(cell_inputs, cell_state)
            cell_outputs = map_structure(self._split, cell_outputs)
            next_cell_state = map_structure(self._split, next_cell_state)
            if self._output_layer is not None:
                cell_outputs = self._output_layer(cell_outputs)
            output, next_state = self._beam_search_step(cell_outputs, next_cell_state, state)
            next_inputs = self._embedding_fn(output.predicted_ids)
        return output, next_state, next_inputs, next_state.finished

    def _beam_search_step(self, logits: _g.Tensor, next_cell_state: Any,
                          state: BeamSearchDecoderState) -> Tuple[BeamSearchDecoderOutput, BeamSearchDecoderState]:
        vocab = self._vocab_size()
        k = self._beam_width
        dtype = logits.dtype
        prev_finished = state.finished
        step_log_probs = _nn.log_softmax(logits)                                   # [batch, beam, vocab]
        # a finished beam extends only with end_token, at log probability 0
        end_row = _a.one_hot(self._end_token, vocab, on_value=constant(0.0, dtype=dtype),
                             off_value=constant(float(np.finfo(dtype.np).min), dtype=dtype))
        step_log_probs = _a.where_v2(_a.expand_dims(prev_finished, 2), end_row, step_log_probs)
        total = _a.expand_dims(state.log_probs, 2) + step_log_probs
        not_end = constant(1, dtype=_dt.int64) - _a.one_hot(self._end_token, vocab, dtype=_dt.int64)
        new_lengths = _a.expand_dims(state.lengths, 2) + not_end * _a.expand_dims(
            _m.cast(_m.logical_not(prev_finished), _dt.int64), 2)
        penalty = _length_penalty(new_lengths, self._length_penalty_weight, dtype)
        scores = total if penalty is None else total / penalty
        scores_flat = _a.reshape(scores, [self._batch_size, k * vocab])
        next_scores, word_indices = _misc.top_k(scores_flat, k=k)
        next_probs = _batch_gather(_a.reshape(total, [self._batch_size, k * vocab]), word_indices)
        vocab_t = constant(vocab, dtype=_dt.int32)
        next_word_ids = _m.mod(word_indices, vocab_t)
        next_beam_ids = _m.floordiv(word_indices, vocab_t)
        prev_finished = _batch_gather(prev_finished, next_beam_ids)
        next_finished = _m.logical_or(prev_finished, _m.equal(next_word_ids, self._end_token))
        next_lengths = _batch_gather(state.lengths, next_beam_ids) + _m.cast(_m.logical_not(prev_finished),
                                                                               _dt.int64)

        def reorder(t: Any) -> Any:
            if isinstance(t, TensorArray) or t.shape.rank is None or t.shape.rank < 2:
                return t
            return _batch_gather(t, next_beam_ids)
        next_cell_state = map_structure(reorder, next_cell_state)
        next_state = BeamSearchDecoderState(cell_state=next_cell_state, log_probs=next_probs, finished=next_finished,
                                            lengths=next_lengths, accumulated_attention_probs=())
        return BeamSearchDecoderOutput(next_scores, next_word_ids, next_beam_ids), next_state

    def finalize(self, outputs: BeamSearchDecoderOutput, final_state: BeamSearchDecoderState,
                 sequence_lengths: Any) -> Tuple[FinalBeamSearchDecoderOutput, BeamSearchDecoderState]:
        max_lengths = _m.cast(_m.reduce_max(final_state.lengths, axis=1), _dt.int32)
        predicted_ids = gather_tree(outputs.predicted_ids, outputs.parent_ids, max_lengths, self._end_token)
        if self._reorder_tensor_arrays:
            # a TensorArray in the cell state (alignment_history) becomes the stacked
            # [time, batch * beam, ...] tensor with each beam's rows following its ancestors
            def sort(t: Any) -> Any:
                if not isinstance(t, TensorArray) or t.element_shape.rank is None or t.element_shape.rank < 1:
                    return t
                return gather_tree_from_array(t.stack(), outputs.parent_ids, final_state.lengths)
            final_state = final_state._replace(cell_state=map_structure(sort, final_state.cell_state))
        return FinalBeamSearchDecoderOutput(predicted_ids=predicted_ids, beam_search_decoder_output=outputs), \
            final_state
