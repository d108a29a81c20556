"""tf.contrib.legacy_seq2seq: TF 1.x's unrolled sequence-to-sequence models (lists of
per-step tensors), as the char-RNN programs and the translate tutorial use them.

    outputs, state = cf.contrib.legacy_seq2seq.rnn_decoder(inputs, initial_state, cell,
                                                          loop_function=loop)
    loss = cf.contrib.legacy_seq2seq.sequence_loss_by_example(
        [logits], [targets], [weights])

Every function builds TF 1.15's graph: the same variable scopes and names (a TF1
checkpoint's keys), the same dense layers (`kernel`/`bias` in the scope that TF's `_Linear`
uses), the encoder cell a deep copy of `cell` where TF copies it, and a `feed_previous`
tensor choosing between the two decoders in a `cond`.
"""
from __future__ import annotations

import copy
from typing import Any, Callable, List, Optional, Sequence, Tuple

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph import nest
from ..graph.control_flow import cond
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import nn_ops as _nn
from ..graph.ops.constant_op import stop_gradient
from ..graph.variable_scope import get_variable, get_variable_scope, variable_scope
from .. import initializers as _init
from ..nn.rnn import static_rnn
from .rnn_extra import EmbeddingWrapper, OutputProjectionWrapper

def _is_seq(x: Any) -> bool:
    return isinstance(x, (list, tuple))  # TF's nest.is_sequence on cell states


__all__ = ["rnn_decoder", "basic_rnn_seq2seq", "tied_rnn_seq2seq", "embedding_rnn_decoder",
           "embedding_rnn_seq2seq", "embedding_tied_rnn_seq2seq", "attention_decoder",
           "embedding_attention_decoder", "embedding_attention_seq2seq", "sequence_loss_by_example",
           "sequence_loss", "model_with_buckets"]


def _linear(args: Any, output_size: int, dtype: Optional[_dt.DType] = None) -> _g.Tensor:
    """TF's `_Linear`: concat(args) . kernel + bias, variables in the current variable scope."""
    args = list(args) if isinstance(args, (list, tuple)) else [args]
    total = 0
    for a in args:
        d = a.shape.dims[1] if a.shape.rank == 2 else None
        if d is None:
            raise ValueError(f"linear is expecting 2D arguments with a known last dimension: {a.shape}")
        total += int(d)
    dtype = dtype or args[0].dtype
    kernel = get_variable("kernel", [total, output_size], dtype=dtype)
    bias = get_variable("bias", [output_size], dtype=dtype, initializer=_init.Constant(0.0))
    x = args[0] if len(args) == 1 else _a.concat(args, 1)
    return _nn.bias_add(_m.matmul(x, kernel), bias)


def rnn_decoder(decoder_inputs: Sequence[Any], initial_state: Any, cell: Any,
                loop_function: Optional[Callable] = None, scope: Any = None) -> Tuple[List[_g.Tensor], Any]:
    """Runs `cell` over the decoder inputs from `initial_state` (scope "rnn_decoder").
    loop_function(prev_output, i) replaces input i > 0 by a function of the previous output
    (in the scope "loop_function", reusing variables)."""
    with variable_scope(scope or "rnn_decoder"):
        state = initial_state
        outputs = []
        prev = None
        for i, inp in enumerate(decoder_inputs):
            if loop_function is not None and prev is not None:
                with variable_scope("loop_function", reuse=True):
                    inp = loop_function(prev, i)
            if i > 0:
                get_variable_scope().reuse_variables()
            output, state = cell(inp, state)
            outputs.append(output)
            if loop_function is not None:
                prev = output
    return outputs, state


def basic_rnn_seq2seq(encoder_inputs: Sequence[Any], decoder_inputs: Sequence[Any], cell: Any,
                      dtype: Any = _dt.float32, scope: Any = None) -> Tuple[List[_g.Tensor], Any]:
    """An encoder (a copy of `cell`) whose final state starts the decoder (`cell`)."""
    with variable_scope(scope or "basic_rnn_seq2seq"):
        enc_cell = copy.deepcopy(cell)
        _, enc_state = static_rnn(enc_cell, list(encoder_inputs), dtype=dtype)
        return rnn_decoder(decoder_inputs, enc_state, cell)


def tied_rnn_seq2seq(encoder_inputs: Sequence[Any], decoder_inputs: Sequence[Any], cell: Any,
                     loop_function: Optional[Callable] = None, dtype: Any = _dt.float32,
                     scope: Any = None) -> Tuple[List[_g.Tensor], Any]:
    """basic_rnn_seq2seq with one set of variables for the encoder and the decoder."""
    with variable_scope("combined_tied_rnn_seq2seq"):
        scope = scope or "tied_rnn_seq2seq"
        _, enc_state = static_rnn(cell, list(encoder_inputs), dtype=dtype, scope=scope)
        get_variable_scope().reuse_variables()
        return rnn_decoder(decoder_inputs, enc_state, cell, loop_function=loop_function, scope=scope)


def _extract_argmax_and_embed(embedding: Any, output_projection: Any, update_embedding: bool) -> Callable:
    """The loop function that feeds back the embedding of the previous output's argmax."""
    def loop_function(prev: _g.Tensor, _: int) -> _g.Tensor:
        if output_projection is not None:
            prev = _nn.bias_add(_m.matmul(prev, output_projection[0]), output_projection[1])
        emb_prev = _nn.embedding_lookup(embedding, _m.argmax(prev, 1))
        if not update_embedding:
            emb_prev = stop_gradient(emb_prev)
        return emb_prev
    return loop_function


def _check_projection(output_projection: Any, num_symbols: int, dtype: Any) -> Any:
    if output_projection is None:
        return None
    w = _g.convert_to_tensor(output_projection[0], dtype=dtype)
    b = _g.convert_to_tensor(output_projection[1], dtype=dtype)
    if w.shape.rank is not None and not w.shape.is_compatible_with([None, num_symbols]):
        raise ValueError(f"output_projection weights of shape {w.shape} are not [?, {num_symbols}]")
    if b.shape.rank is not None and not b.shape.is_compatible_with([num_symbols]):
        raise ValueError(f"output_projection biases of shape {b.shape} are not [{num_symbols}]")
    return (w, b)


def embedding_rnn_decoder(decoder_inputs: Sequence[Any], initial_state: Any, cell: Any, num_symbols: int,
                          embedding_size: int, output_projection: Any = None, feed_previous: bool = False,
                          update_embedding_for_previous: bool = True,
                          scope: Any = None) -> Tuple[List[_g.Tensor], Any]:
    """rnn_decoder over embedded symbol ids (variable "embedding"); feed_previous=True feeds
    back the embedding of each step's argmax (after output_projection (W, b) if given)."""
    with variable_scope(scope or "embedding_rnn_decoder") as vs:
        proj = _check_projection(output_projection, num_symbols, vs.dtype)
        embedding = get_variable("embedding", [num_symbols, embedding_size])
        loop = _extract_argmax_and_embed(embedding, proj, update_embedding_for_previous) if feed_previous else None
        emb_inp = [_nn.embedding_lookup(embedding, i) for i in decoder_inputs]
        return rnn_decoder(emb_inp, initial_state, cell, loop_function=loop)


def _decode_with_cond(feed_previous: Any, decoder: Callable[[bool], Tuple[list, Any]], n_outputs: int,
                      structure: Any) -> Tuple[List[_g.Tensor], Any]:
    """feed_previous a bool tensor: both decoders built (the first making the variables), one
    run; the state repacked as `structure`."""
    def branch(feed: bool) -> list:
        with variable_scope(get_variable_scope(), reuse=None if feed else True):
            outputs, state = decoder(feed)
            return list(outputs) + nest.flatten(state)
    both = cond(feed_previous, lambda: branch(True), lambda: branch(False))
    state_list = list(both[n_outputs:])
    state = nest.pack_sequence_as(structure, state_list) if _is_seq(structure) else state_list[0]
    return list(both[:n_outputs]), state


def embedding_rnn_seq2seq(encoder_inputs: Sequence[Any], decoder_inputs: Sequence[Any], cell: Any,
                          num_encoder_symbols: int, num_decoder_symbols: int, embedding_size: int,
                          output_projection: Any = None, feed_previous: Any = False, dtype: Any = None,
                          scope: Any = None) -> Tuple[List[_g.Tensor], Any]:
    """Embedded encoder (EmbeddingWrapper around a copy of `cell`) and embedding_rnn_decoder;
    without output_projection the decoder cell projects to num_decoder_symbols."""
    with variable_scope(scope or "embedding_rnn_seq2seq") as vs:
        if dtype is not None:
            vs.set_dtype(dtype)
        dtype = vs.dtype
        encoder_cell = EmbeddingWrapper(copy.deepcopy(cell), embedding_classes=num_encoder_symbols,
                                        embedding_size=embedding_size)
        _, encoder_state = static_rnn(encoder_cell, list(encoder_inputs), dtype=dtype)
        if output_projection is None:
            cell = OutputProjectionWrapper(cell, num_decoder_symbols)

        def decoder(feed: bool, update: bool = True) -> Tuple[list, Any]:
            return embedding_rnn_decoder(decoder_inputs, encoder_state, cell, num_decoder_symbols, embedding_size,
                                         output_projection=output_projection, feed_previous=feed,
                                         update_embedding_for_previous=update)
        if isinstance(feed_previous, bool):
            return decoder(feed_previous)
        return _decode_with_cond(feed_previous, lambda feed: decoder(feed, False), len(decoder_inputs),
                                 encoder_state)


def embedding_tied_rnn_seq2seq(encoder_inputs: Sequence[Any], decoder_inputs: Sequence[Any], cell: Any,
                               num_symbols: int, embedding_size: int, num_decoder_symbols: Optional[int] = None,
                               output_projection: Any = None, feed_previous: Any = False, dtype: Any = None,
                               scope: Any = None) -> Tuple[List[_g.Tensor], Any]:
    """tied_rnn_seq2seq over one shared embedding of encoder and decoder symbols."""
    with variable_scope(scope or "embedding_tied_rnn_seq2seq", dtype=dtype) as vs:
        dtype = vs.dtype
        proj = _check_projection(output_projection, num_symbols, dtype)
        embedding = get_variable("embedding", [num_symbols, embedding_size], dtype=dtype)
        emb_encoder_inputs = [_nn.embedding_lookup(embedding, x) for x in encoder_inputs]
        emb_decoder_inputs = [_nn.embedding_lookup(embedding, x) for x in decoder_inputs]
        output_symbols = num_decoder_symbols if num_decoder_symbols is not None else num_symbols
        if output_projection is None:
            cell = OutputProjectionWrapper(cell, output_symbols)

        def decoder(feed: bool, update: bool = False) -> Tuple[list, Any]:
            loop = _extract_argmax_and_embed(embedding, proj, update) if feed else None
            return tied_rnn_seq2seq(emb_encoder_inputs, emb_decoder_inputs, cell, loop_function=loop, dtype=dtype)
        if isinstance(feed_previous, bool):
            return decoder(feed_previous, True)
        structure = cell.state_size  # the decoder's state has the cell's structure
        return _decode_with_cond(feed_previous, decoder, len(decoder_inputs),
                                 structure if _is_seq(structure) else None)


def attention_decoder(decoder_inputs: Sequence[Any], initial_state: Any, attention_states: Any, cell: Any,
                      output_size: Optional[int] = None, num_heads: int = 1,
                      loop_function: Optional[Callable] = None, dtype: Any = None, scope: Any = None,
                      initial_state_attention: bool = False) -> Tuple[List[_g.Tensor], Any]:
    """An RNN decoder attending over attention_states [batch, attn_length, attn_size]
    (Bahdanau-style, num_heads heads).  Each step's input is linear([input] + previous
    attention reads); each output linear([cell output] + this step's reads), of output_size
    (default the cell's).  Variables AttnW_a, AttnV_a, Attention_a/, AttnOutputProjection/."""
    if not decoder_inputs:
        raise ValueError("Must provide at least 1 input to attention decoder.")
    if num_heads < 1:
        raise ValueError("With less than 1 heads, use a non-attention decoder.")
    att = _g.convert_to_tensor(attention_states)
    if att.shape.rank != 3 or att.shape.dims[2] is None:
        raise ValueError(f"Shape[2] of attention_states must be known: {att.shape}")
    if output_size is None:
        output_size = cell.output_size
    with variable_scope(scope or "attention_decoder", dtype=dtype) as vs:
        dtype = vs.dtype
        batch_size = _a.shape(decoder_inputs[0])[0]
        attn_length: Any = att.shape.dims[1]
        if attn_length is None:
            attn_length = _a.shape(att)[1]
        attn_size = int(att.shape.dims[2])
        # W1 . h_t for every position as one 1x1 convolution over [batch, length, 1, size]
        hidden = _a.reshape(att, _a.stack([-1, attn_length, 1, attn_size]) if isinstance(attn_length, _g.Tensor)
                            else [-1, attn_length, 1, attn_size])
        hidden_features, v = [], []
        for a in range(num_heads):
            k = get_variable(f"AttnW_{a}", [1, 1, attn_size, attn_size], dtype=dtype)
            hidden_features.append(_nn.conv2d(hidden, k, [1, 1, 1, 1], "SAME"))
            v.append(get_variable(f"AttnV_{a}", [attn_size], dtype=dtype))

        def attention(query: Any) -> List[_g.Tensor]:
            if _is_seq(query):
                query = _a.concat(nest.flatten(query), 1)
            reads = []
            for a in range(num_heads):
                with variable_scope(f"Attention_{a}"):
                    y = _a.reshape(_linear(query, attn_size), [-1, 1, 1, attn_size])
                    s = _m.reduce_sum(v[a] * _nn.tanh(hidden_features[a] + y), [2, 3])
                    weights = _nn.softmax(s)
                    w4 = _a.reshape(weights, _a.stack([-1, attn_length, 1, 1]) if isinstance(attn_length, _g.Tensor)
                                    else [-1, attn_length, 1, 1])
                    reads.append(_a.reshape(_m.reduce_sum(w4 * hidden, [1, 2]), [-1, attn_size]))
            return reads

        state = initial_state
        outputs: List[_g.Tensor] = []
        prev = None
        attns = [_a.zeros(_a.stack([batch_size, attn_size]), dtype=dtype) for _ in range(num_heads)]
        for t in attns:
            t.set_shape([None, attn_size])
        if initial_state_attention:
            attns = attention(initial_state)
        for i, inp in enumerate(decoder_inputs):
            if i > 0:
                get_variable_scope().reuse_variables()
            if loop_function is not None and prev is not None:
                with variable_scope("loop_function", reuse=True):
                    inp = loop_function(prev, i)
            inp = _g.convert_to_tensor(inp)
            if inp.shape.rank != 2 or inp.shape.dims[1] is None:
                raise ValueError(f"Could not infer input size from input: {inp.name}")
            x = _linear([_m.cast(e, dtype) for e in [inp] + attns], int(inp.shape.dims[1]))
            cell_output, state = cell(x, state)
            if i == 0 and initial_state_attention:
                with variable_scope(get_variable_scope(), reuse=True):
                    attns = attention(state)
            else:
                attns = attention(state)
            with variable_scope("AttnOutputProjection"):
                output = _linear([_m.cast(cell_output, dtype)] + attns, int(output_size))
            if loop_function is not None:
                prev = output
            outputs.append(output)
    return outputs, state


def embedding_attention_decoder(decoder_inputs: Sequence[Any], initial_state: Any, attention_states: Any,
                                cell: Any, num_symbols: int, embedding_size: int, num_heads: int = 1,
                                output_size: Optional[int] = None, output_projection: Any = None,
                                feed_previous: bool = False, update_embedding_for_previous: bool = True,
                                dtype: Any = None, scope: Any = None,
                                initial_state_attention: bool = False) -> Tuple[List[_g.Tensor], Any]:
    """attention_decoder over embedded symbol ids (variable "embedding"), feed_previous as in
    embedding_rnn_decoder."""
    if output_size is None:
        output_size = cell.output_size
    with variable_scope(scope or "embedding_attention_decoder", dtype=dtype) as vs:
        proj = _check_projection(output_projection, num_symbols, vs.dtype)
        embedding = get_variable("embedding", [num_symbols, embedding_size])
        loop = _extract_argmax_and_embed(embedding, proj, update_embedding_for_previous) if feed_previous else None
        emb_inp = [_nn.embedding_lookup(embedding, i) for i in decoder_inputs]
        return attention_decoder(emb_inp, initial_state, attention_states, cell, output_size=output_size,
                                 num_heads=num_heads, loop_function=loop,
                                 initial_state_attention=initial_state_attention)


def embedding_attention_seq2seq(encoder_inputs: Sequence[Any], decoder_inputs: Sequence[Any], cell: Any,
                                num_encoder_symbols: int, num_decoder_symbols: int, embedding_size: int,
                                num_heads: int = 1, output_projection: Any = None, feed_previous: Any = False,
                                dtype: Any = None, scope: Any = None,
                                initial_state_attention: bool = False) -> Tuple[List[_g.Tensor], Any]:
    """The translate tutorial's model: an embedded encoder (a copy of `cell`) whose outputs
    the embedding_attention_decoder attends over."""
    with variable_scope(scope or "embedding_attention_seq2seq", dtype=dtype) as vs:
        dtype = vs.dtype
        encoder_cell = EmbeddingWrapper(copy.deepcopy(cell), embedding_classes=num_encoder_symbols,
                                        embedding_size=embedding_size)
        encoder_outputs, encoder_state = static_rnn(encoder_cell, list(encoder_inputs), dtype=dtype)
        top_states = [_a.reshape(e, [-1, 1, int(cell.output_size)]) for e in encoder_outputs]
        attention_states = _a.concat(top_states, 1)
        output_size = None
        if output_projection is None:
            cell = OutputProjectionWrapper(cell, num_decoder_symbols)
            output_size = num_decoder_symbols

        def decoder(feed: bool, update: bool = True) -> Tuple[list, Any]:
            return embedding_attention_decoder(
                decoder_inputs, encoder_state, attention_states, cell, num_decoder_symbols, embedding_size,
                num_heads=num_heads, output_size=output_size, output_projection=output_projection,
                feed_previous=feed, update_embedding_for_previous=update,
                initial_state_attention=initial_state_attention)
        if isinstance(feed_previous, bool):
            return decoder(feed_previous)
        return _decode_with_cond(feed_previous, lambda feed: decoder(feed, False), len(decoder_inputs),
                                 encoder_state)


def sequence_loss_by_example(logits: Sequence[Any], targets: Sequence[Any], weights: Sequence[Any],
                             average_across_timesteps: bool = True,
                             softmax_loss_function: Optional[Callable] = None,
                             name: Optional[str] = None) -> _g.Tensor:
    """sum_t weights[t] * cross-entropy(logits[t], targets[t]) per example [batch]; divided by
    sum_t weights[t] (+ 1e-12) with average_across_timesteps."""
    if len(targets) != len(logits) or len(weights) != len(logits):
        raise ValueError(f"Lengths of logits, weights, and targets must be the same {len(logits)}, "
                         f"{len(weights)}, {len(targets)}.")
    with _g.get_default_graph().name_scope(name or "sequence_loss_by_example"):
        terms = []
        for logit, target, weight in zip(logits, targets, weights):
            if softmax_loss_function is None:
                crossent = _nn.sparse_softmax_cross_entropy_with_logits(labels=_a.reshape(target, [-1]), logits=logit)
            else:
                crossent = softmax_loss_function(labels=target, logits=logit)
            terms.append(crossent * weight)
        log_perps = _m.add_n(terms)
        if average_across_timesteps:
            total_size = _m.add_n([_g.convert_to_tensor(w) for w in weights]) + 1e-12  # all-zero weights
            log_perps = log_perps / total_size
    return log_perps


def sequence_loss(logits: Sequence[Any], targets: Sequence[Any], weights: Sequence[Any],
                  average_across_timesteps: bool = True, average_across_batch: bool = True,
                  softmax_loss_function: Optional[Callable] = None, name: Optional[str] = None) -> _g.Tensor:
    """The sum of sequence_loss_by_example over the batch, divided by the batch size with
    average_across_batch."""
    with _g.get_default_graph().name_scope(name or "sequence_loss"):
        cost = _m.reduce_sum(sequence_loss_by_example(logits, targets, weights,
                                                      average_across_timesteps=average_across_timesteps,
                                                      softmax_loss_function=softmax_loss_function))
        if average_across_batch:
            batch_size = _a.shape(targets[0])[0]
            return cost / _m.cast(batch_size, cost.dtype)
        return cost


def model_with_buckets(encoder_inputs: Sequence[Any], decoder_inputs: Sequence[Any], targets: Sequence[Any],
                       weights: Sequence[Any], buckets: Sequence[Tuple[int, int]], seq2seq: Callable,
                       softmax_loss_function: Optional[Callable] = None, per_example_loss: bool = False,
                       name: Optional[str] = None) -> Tuple[List[List[_g.Tensor]], List[_g.Tensor]]:
    """One seq2seq model per bucket (encoder length, decoder length) over the first inputs,
    all sharing variables: (outputs per bucket, loss per bucket)."""
    if len(encoder_inputs) < buckets[-1][0]:
        raise ValueError(f"Length of encoder_inputs ({len(encoder_inputs)}) must be at least that of last bucket "
                         f"({buckets[-1][0]}).")
    if len(targets) < buckets[-1][1]:
        raise ValueError(f"Length of targets ({len(targets)}) must be at least that of last bucket ({buckets[-1][1]}).")
    if len(weights) < buckets[-1][1]:
        raise ValueError(f"Length of weights ({len(weights)}) must be at least that of last bucket ({buckets[-1][1]}).")
    losses: List[_g.Tensor] = []
    outputs: List[List[_g.Tensor]] = []
    with _g.get_default_graph().name_scope(name or "model_with_buckets"):
        for j, (n_enc, n_dec) in enumerate(buckets):
            with variable_scope(get_variable_scope(), reuse=True if j > 0 else None):
                bucket_outputs, _ = seq2seq(list(encoder_inputs[:n_enc]), list(decoder_inputs[:n_dec]))
                outputs.append(bucket_outputs)
                loss_fn = sequence_loss_by_example if per_example_loss else sequence_loss
                losses.append(loss_fn(outputs[-1], list(targets[:n_dec]), list(weights[:n_dec]),
                                      softmax_loss_function=softmax_loss_function))
    return outputs, losses
