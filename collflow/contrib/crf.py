"""tf.contrib.crf: the linear-chain conditional random field of TF1's sequence taggers
(BiLSTM-CRF and friends).

    log_likelihood, trans = cf.contrib.crf.crf_log_likelihood(logits, tags, lengths)
    loss = cf.reduce_mean(-log_likelihood)
    best_tags, best_score = cf.contrib.crf.crf_decode(logits, trans, lengths)

A sequence of length n scores sum_t inputs[t, tag_t] + sum_t trans[tag_t, tag_t+1] over its
first n positions; `crf_log_norm` is the log of the sum of exp(score) over every tag
sequence (the forward algorithm in log space, one while loop over time), `crf_decode` the
best sequence (Viterbi: max and argmax in the same loop, then a loop following the
backpointers).  Positions past a sequence's length are ignored; a length of 0 or less
scores 0 and normalises to 0, and `crf_decode` then reports the first position's best tag
with the rest 0, as TF's.  Everything is differentiable (to the potentials and the
transitions) where TF's is: the log-likelihood, the log-norm and the Viterbi score
(`reduce_max`'s gradient, shared among ties).  `viterbi_decode` is the NumPy version for
one sequence.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.control_flow import while_loop
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops.constant_op import constant
from ..graph.ops.index_ops import gather_nd
from ..graph.ops.misc_ops import range as _range
from ..graph.ops.slicing_ops import gather
from ..graph.ops.string_ops import sequence_mask
from ..graph.tensor_array import TensorArray
from ..graph.variable_scope import get_variable
from ..nn.rnn_cells import RNNCell

__all__ = ["crf_sequence_score", "crf_multitag_sequence_score", "crf_log_norm", "crf_log_likelihood",
           "crf_unary_score", "crf_binary_score", "crf_forward", "viterbi_decode", "crf_decode",
           "CrfForwardRnnCell", "CrfDecodeForwardRnnCell", "CrfDecodeBackwardRnnCell"]


def _potentials(inputs: Any, what: str) -> _g.Tensor:
    x = _g.convert_to_tensor(inputs)
    if x.shape.rank is not None and x.shape.rank != 3:
        raise ValueError(f"{what}: inputs must be [batch_size, max_seq_len, num_tags], got shape {x.shape}")
    if not x.dtype.is_floating:
        raise TypeError(f"{what}: inputs must be floating point, got {x.dtype.name}")
    return x


def _num_tags(x: _g.Tensor, what: str) -> int:
    n = x.shape.dims[-1] if x.shape.rank is not None else None
    if n is None:
        raise ValueError(f"{what}: the number of tags (the last dimension, shape {x.shape}) must be known "
                         "when the graph is built")
    return int(n)


def _lengths(sequence_lengths: Any, what: str) -> _g.Tensor:
    n = _g.convert_to_tensor(sequence_lengths)
    if not n.dtype.is_integer:
        raise TypeError(f"{what}: sequence_lengths must be integers, got {n.dtype.name}")
    if n.shape.rank is not None and n.shape.rank != 1:
        raise ValueError(f"{what}: sequence_lengths must be a [batch_size] vector, got shape {n.shape}")
    return _m.cast(n, _dt.int32) if n.dtype != _dt.int32 else n


def _transitions(transition_params: Any, dtype: _dt.DType) -> _g.Tensor:
    return _g.convert_to_tensor(transition_params, dtype=dtype)


# -- the cells (TF1 exports them; the loops below run them) --------------------------------


class _TransitionCell(RNNCell):
    """A cell over the transition matrix: its state and output are [batch, num_tags]."""

    def __init__(self, transition_params: Any):
        super().__init__()
        t = _g.convert_to_tensor(transition_params)
        self._transition_params = _a.expand_dims(t, 0)
        self._num_tags = t.shape.dims[0] if t.shape.rank else None

    @property
    def state_size(self) -> Any:
        return self._num_tags

    @property
    def output_size(self) -> Any:
        return self._num_tags


class CrfForwardRnnCell(_TransitionCell):
    """One step of the forward algorithm: alpha'[j] = inputs[j] + logsumexp_i(alpha[i] + T[i, j])."""

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> Tuple[_g.Tensor, _g.Tensor]:
        scores = _a.expand_dims(state, 2) + self._transition_params  # [B, from, to]
        alphas = inputs + _m.reduce_logsumexp(scores, [1])
        return alphas, alphas

    call = __call__


class CrfDecodeForwardRnnCell(_TransitionCell):
    """One Viterbi step: (backpointers [B, O] int32, scores'[j] = inputs[j] + max_i(score[i] + T[i, j]))."""

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> Tuple[_g.Tensor, _g.Tensor]:
        scores = _a.expand_dims(state, 2) + self._transition_params  # [B, from, to]
        new_state = inputs + _m.reduce_max(scores, [1])
        backpointers = _m.cast(_m.argmax(scores, 1), _dt.int32)
        return backpointers, new_state

    call = __call__


class CrfDecodeBackwardRnnCell(RNNCell):
    """One step back along the backpointers: the tag [B, 1] before `state` [B, 1]."""

    def __init__(self, num_tags: int):
        super().__init__()
        self._num_tags = num_tags

    @property
    def state_size(self) -> Any:
        return 1

    @property
    def output_size(self) -> Any:
        return 1

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> Tuple[_g.Tensor, _g.Tensor]:
        tag = _a.squeeze(state, [1])
        rows = _range(_a.shape(inputs)[0])
        prev = _a.expand_dims(gather_nd(inputs, _a.stack([rows, tag], axis=1)), -1)
        return prev, prev

    call = __call__


# -- scores -------------------------------------------------------------------------------


def _masks(lengths: _g.Tensor, tag_indices: _g.Tensor, dtype: _dt.DType) -> _g.Tensor:
    return sequence_mask(lengths, maxlen=_a.shape(tag_indices)[1], dtype=dtype)


def crf_unary_score(tag_indices: Any, sequence_lengths: Any, inputs: Any) -> _g.Tensor:
    """sum over each sequence's first n positions of inputs[b, t, tag_indices[b, t]]: [batch_size]."""
    x = _potentials(inputs, "crf_unary_score")
    tags = _g.convert_to_tensor(tag_indices)
    if tags.shape.rank is not None and tags.shape.rank != 2:
        raise ValueError(f"crf_unary_score: tag_indices must be [batch_size, max_seq_len], got shape {tags.shape}")
    lengths = _lengths(sequence_lengths, "crf_unary_score")
    dims = _m.cast(_a.shape(x), tags.dtype)
    b, t, o = dims[0], dims[1], dims[2]
    # flat index of (row, position, tag) in the flattened inputs; a tag out of range is
    # gather's InvalidArgumentError, as TF's
    offsets = (_a.expand_dims(_range(b, dtype=tags.dtype) * t * o, 1)
               + _a.expand_dims(_range(t, dtype=tags.dtype) * o, 0))
    picked = _a.reshape(gather(_a.reshape(x, [-1]), _a.reshape(offsets + tags, [-1])), _a.stack([b, t]))
    return _m.reduce_sum(picked * _masks(lengths, tags, x.dtype), 1)


def crf_binary_score(tag_indices: Any, sequence_lengths: Any, transition_params: Any) -> _g.Tensor:
    """sum over each sequence's transitions of transition_params[tag_t, tag_t+1]: [batch_size]."""
    trans = _g.convert_to_tensor(transition_params)
    tags = _g.convert_to_tensor(tag_indices)
    lengths = _lengths(sequence_lengths, "crf_binary_score")
    o = trans.shape.dims[0] if trans.shape.rank else None
    n_tags = constant(o, dtype=tags.dtype) if o is not None else _m.cast(_a.shape(trans)[0], tags.dtype)
    flat = tags[:, :-1] * n_tags + tags[:, 1:]
    scores = gather(_a.reshape(trans, [-1]), flat)
    return _m.reduce_sum(scores * _masks(lengths, tags, trans.dtype)[:, 1:], 1)


def crf_sequence_score(inputs: Any, tag_indices: Any, sequence_lengths: Any,
                       transition_params: Any) -> _g.Tensor:
    """The unnormalised score of `tag_indices` [batch_size, max_seq_len]: unary plus binary."""
    x = _potentials(inputs, "crf_sequence_score")
    trans = _transitions(transition_params, x.dtype)
    return (crf_unary_score(tag_indices, sequence_lengths, x)
            + crf_binary_score(tag_indices, sequence_lengths, trans))


def _first_and_rest(x: _g.Tensor) -> Tuple[_g.Tensor, _g.Tensor, TensorArray, _g.Tensor]:
    """inputs[:, 0], the later positions as a time-major TensorArray, and the time length."""
    first = x[:, 0]
    rest = _a.transpose(x[:, 1:], (1, 0, 2))
    n_rest = _a.shape(rest)[0]
    ta = TensorArray(x.dtype, n_rest, element_shape=[x.shape.dims[0], x.shape.dims[2]], name="crf_inputs")
    return first, rest, ta.unstack(rest), n_rest


def _forward_loop(x: _g.Tensor, lengths: _g.Tensor, cell: Any, keep_outputs: bool,
                  name: str) -> Tuple[_g.Tensor, Optional[TensorArray], _g.Tensor]:
    """Runs `cell` over positions 1..T-1 of x, each row's state frozen from its length on.
    Returns the final states, the outputs' TensorArray (when kept) and T - 1."""
    first, _, ta, n_rest = _first_and_rest(x)
    one = constant(1, dtype=_dt.int32)
    out_ta = TensorArray(_dt.int32, n_rest, element_shape=[x.shape.dims[0], x.shape.dims[2]],
                         name="backpointers") if keep_outputs else None

    def cond(t: Any, state: Any, *flow: Any) -> Any:
        return _m.less(t, n_rest)

    def body(t: Any, state: Any, *flow: Any) -> Any:
        out, new_state = cell(ta.read(t), state)
        live = _m.less(t + one, lengths)  # position t + 1 is inside the sequence
        new_state = _a.where(live, new_state, state)
        if out_ta is None:
            return (t + one, new_state)
        out = _a.where(live, out, _a.zeros_like(out))
        return t + one, new_state, out_ta.with_flow(flow[0]).write(t, out).flow

    loop_vars = (constant(0, dtype=_dt.int32), first) + ((out_ta.flow,) if out_ta is not None else ())
    result = while_loop(cond, body, loop_vars, name=name)
    out = out_ta.with_flow(result[2]) if out_ta is not None else None
    return result[1], out, n_rest


def crf_forward(inputs: Any, state: Any, transition_params: Any, sequence_lengths: Any) -> _g.Tensor:
    """The forward algorithm's alphas [batch_size, num_tags] at each sequence's last position,
    starting from `state` (the first position's alphas) over `inputs` (the later positions)."""
    x = _potentials(inputs, "crf_forward")
    full = _a.concat([_a.expand_dims(_g.convert_to_tensor(state, dtype=x.dtype), 1), x], 1)
    lengths = _lengths(sequence_lengths, "crf_forward")
    alphas, _, _ = _forward_loop(full, lengths, CrfForwardRnnCell(_transitions(transition_params, x.dtype)),
                                 False, "crf_forward")
    return alphas


def crf_log_norm(inputs: Any, sequence_lengths: Any, transition_params: Any) -> _g.Tensor:
    """log sum over all tag sequences of exp(score), per sequence: [batch_size] (0 for length <= 0)."""
    x = _potentials(inputs, "crf_log_norm")
    lengths = _lengths(sequence_lengths, "crf_log_norm")
    trans = _transitions(transition_params, x.dtype)
    alphas, _, _ = _forward_loop(x, lengths, CrfForwardRnnCell(trans), False, "crf_log_norm")
    log_norm = _m.reduce_logsumexp(alphas, [1])
    return _a.where(_m.less_equal(lengths, 0), _a.zeros_like(log_norm), log_norm)


def crf_multitag_sequence_score(inputs: Any, tag_bitmap: Any, sequence_lengths: Any,
                                transition_params: Any) -> _g.Tensor:
    """log sum of exp(score) over the tag sequences `tag_bitmap` [batch, max_seq_len, num_tags]
    (bool) allows at each position: the score of a set of acceptable taggings."""
    x = _potentials(inputs, "crf_multitag_sequence_score")
    bitmap = _g.convert_to_tensor(tag_bitmap)
    if bitmap.dtype != _dt.bool_:
        raise TypeError(f"crf_multitag_sequence_score: tag_bitmap must be bool, got {bitmap.dtype.name}")
    filtered = _a.where(bitmap, x, _a.fill(_a.shape(x), constant(-np.inf, dtype=x.dtype)))
    if x.shape.rank is not None and x.shape.dims[1] == 1:
        # TF's single-position form: no length mask
        return _m.reduce_logsumexp(filtered, [1, 2])
    return crf_log_norm(filtered, sequence_lengths, transition_params)


def crf_log_likelihood(inputs: Any, tag_indices: Any, sequence_lengths: Any,
                       transition_params: Any = None) -> Tuple[_g.Tensor, Any]:
    """(log p(tag_indices | inputs) [batch_size], transition_params).  Without
    transition_params a [num_tags, num_tags] variable "transitions" is made in the current
    variable scope (get_variable's default initializer)."""
    x = _potentials(inputs, "crf_log_likelihood")
    num_tags = _num_tags(x, "crf_log_likelihood")
    if transition_params is None:
        transition_params = get_variable("transitions", [num_tags, num_tags])
    trans = _transitions(transition_params, x.dtype)
    sequence_scores = crf_sequence_score(x, tag_indices, sequence_lengths, trans)
    log_norm = crf_log_norm(x, sequence_lengths, trans)
    return sequence_scores - log_norm, transition_params


# -- decoding -----------------------------------------------------------------------------


def viterbi_decode(score: Any, transition_params: Any) -> Tuple[List[int], float]:
    """The best tag sequence of one sequence's potentials `score` [seq_len, num_tags] (NumPy
    arrays, outside the graph): (list of tag indices, its score)."""
    score = np.asarray(score)
    trans = np.asarray(transition_params)
    if score.ndim != 2 or trans.shape != (score.shape[1], score.shape[1]):
        raise ValueError(f"viterbi_decode: score must be [seq_len, num_tags] and transition_params "
                         f"[num_tags, num_tags], got {score.shape} and {trans.shape}")
    trellis = np.zeros_like(score)
    back = np.zeros(score.shape, dtype=np.int32)
    trellis[0] = score[0]
    for t in range(1, score.shape[0]):
        cand = trellis[t - 1][:, None] + trans  # [from, to]
        back[t] = np.argmax(cand, 0)
        trellis[t] = score[t] + np.max(cand, 0)
    path = [int(np.argmax(trellis[-1]))]
    for t in range(score.shape[0] - 1, 0, -1):
        path.append(int(back[t][path[-1]]))
    path.reverse()
    return path, np.max(trellis[-1])


def crf_decode(potentials: Any, transition_params: Any, sequence_length: Any) -> Tuple[_g.Tensor, _g.Tensor]:
    """The best tag sequence of each row of `potentials` [batch_size, max_seq_len, num_tags]:
    (decode_tags [batch_size, max_seq_len] int32, zero past each length; best_score [batch_size])."""
    x = _potentials(potentials, "crf_decode")
    num_tags = _num_tags(x, "crf_decode")
    lengths = _lengths(sequence_length, "crf_decode")
    trans = _transitions(transition_params, x.dtype)
    last_score, back_ta, n_rest = _forward_loop(x, lengths, CrfDecodeForwardRnnCell(trans), True, "crf_decode_fwd")
    last_tag = _m.cast(_m.argmax(last_score, 1), _dt.int32)
    back_cell = CrfDecodeBackwardRnnCell(num_tags)
    one = constant(1, dtype=_dt.int32)
    tags_ta = TensorArray(_dt.int32, n_rest, element_shape=[x.shape.dims[0]], name="decode_tags")

    def cond(t: Any, tag: Any, flow: Any) -> Any:
        return _m.greater_equal(t, 0)

    def body(t: Any, tag: Any, flow: Any) -> Any:
        # position t's tag is the backpointer of position t + 1's, for t + 1 inside the sequence
        prev, _ = back_cell(back_ta.read(t), _a.expand_dims(tag, 1))
        prev = _a.squeeze(prev, [1])
        live = _m.less(t + one, lengths)
        tag = _a.where(live, prev, tag)
        flow = tags_ta.with_flow(flow).write(t, _a.where(live, prev, _a.zeros_like(prev))).flow
        return t - one, tag, flow

    _, _, flow = while_loop(cond, body, (n_rest - one, last_tag, tags_ta.flow), name="crf_decode_bwd")
    earlier = _a.transpose(tags_ta.with_flow(flow).stack(element_like=last_tag), (1, 0))
    tags = _a.concat([earlier, _a.zeros_like(last_tag)[:, None]], 1)
    # the best last tag goes to each row's last position (position 0 for a length <= 0),
    # where the loop left a 0
    last_pos = _m.maximum(lengths - one, 0)
    at_last = _m.equal(_a.expand_dims(_range(_a.shape(tags)[1]), 0), _a.expand_dims(last_pos, 1))
    tags = tags + _m.cast(at_last, _dt.int32) * _a.expand_dims(last_tag, 1)
    return tags, _m.reduce_max(last_score, 1)
