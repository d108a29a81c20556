"""tf.contrib.seq2seq's monotonic attention (Raffel et al., 2017) and its small helpers:
hardmax, safe_cumprod, monotonic_attention, BahdanauMonotonicAttention, LuongMonotonicAttention.

A monotonic mechanism turns each memory entry's score into a "choosing" probability
p_i = sigmoid(score_i + attention_score_bias) (with sigmoid_noise: Gaussian noise added to
the score first; mode "hard": p_i = 1 if the score > 0) and its alignments are the
probability that the attention moves from its previous position to entry i and stops there:

    attention_i = p_i * sum_{j<=i} previous_j * prod_{j<=k<i} (1 - p_k)

computed by a scan over the memory ("recursive"), in closed form with cumulative products
("parallel"; exact up to the clipping that keeps its division finite) or, for 0/1
probabilities, as the first chosen entry at or after the previous one ("hard").  The
initial alignments are one-hot on the first memory entry.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...graph import graph as _g
from ...graph.functional_ops import scan
from ...graph.ops import array_ops as _a
from ...graph.ops import math_ops as _m
from ...graph.ops import nn_ops as _nn
from ...graph.ops.constant_op import constant
from ...graph.ops.random_ops import random_normal
from ...graph.ops.scan_ops import cumprod, cumsum
from ...graph.variable_scope import get_variable, variable_scope
from .attention import _BaseAttentionMechanism, _bahdanau_score, _Dense, _luong_score

__all__ = ["hardmax", "safe_cumprod", "monotonic_attention", "BahdanauMonotonicAttention", "LuongMonotonicAttention"]


def hardmax(logits: Any, name: Optional[str] = None) -> _g.Tensor:
    """One-hot of the argmax along the last axis, in logits' dtype."""
    g = _g.get_default_graph()
    with g.name_scope(name or "Hardmax"):
        logits = _g.convert_to_tensor(logits, name="logits")
        depth = logits.shape.dims[-1] if logits.shape.rank else None
        if depth is None:
            raise ValueError(f"hardmax: the last dimension of logits must be known statically, got {logits.shape}")
        return _a.one_hot(_m.argmax(logits, axis=-1, output_type=_dt.int32), int(depth), dtype=logits.dtype)


def safe_cumprod(x: Any, *args: Any, **kwargs: Any) -> _g.Tensor:
    """cumprod computed as exp(cumsum(log(x))) with x clipped to [tiny, 1] (cumsum's arguments)."""
    g = _g.get_default_graph()
    with g.name_scope("SafeCumprod"):
        x = _g.convert_to_tensor(x, name="x")
        tiny = float(np.finfo(x.dtype.np).tiny)
        return _m.exp(cumsum(_m.log(_m.clip_by_value(x, tiny, 1.0)), *args, **kwargs))


def monotonic_attention(p_choose_i: Any, previous_attention: Any, mode: str) -> _g.Tensor:
    """The monotonic alignments [batch, max_time] from the choosing probabilities and the
    previous alignments (see the module doc); mode "recursive", "parallel" or "hard"."""
    p = _g.convert_to_tensor(p_choose_i, name="p_choose_i")
    prev = _g.convert_to_tensor(previous_attention, name="previous_attention")
    one = constant(1.0, dtype=p.dtype)
    if mode == "recursive":
        # q_i = (1 - p_{i-1}) q_{i-1} + previous_i; attention_i = p_i q_i
        shifted = _a.concat([_a.ones_like(p[:, :1]), one - p[:, :-1]], 1)
        q0 = _a.zeros_like(prev[:, 0])
        q = scan(lambda acc, yz: yz[0] * acc + yz[1], (_a.transpose(shifted), _a.transpose(prev)), initializer=q0)
        return p * _a.transpose(q)
    if mode == "parallel":
        cp = safe_cumprod(one - p, axis=1, exclusive=True)
        return p * cp * cumsum(prev / _m.clip_by_value(cp, 1e-10, 1.0), axis=1)
    if mode == "hard":
        p = p * cumsum(prev, axis=1)
        return p * cumprod(one - p, axis=1, exclusive=True)
    raise ValueError("mode must be 'recursive', 'parallel', or 'hard'.")


def _monotonic_probability_fn(score: _g.Tensor, previous_alignments: Any, sigmoid_noise: float, mode: str,
                              seed: Optional[int] = None) -> _g.Tensor:
    if sigmoid_noise > 0:
        score = score + sigmoid_noise * random_normal(_a.shape(score), dtype=score.dtype, seed=seed)
    if mode == "hard":
        p = _m.cast(_m.greater(score, _a.zeros_like(score)), score.dtype)
    else:
        p = _nn.sigmoid(score)
    return monotonic_attention(p, previous_alignments, mode)


class _BaseMonotonicAttentionMechanism(_BaseAttentionMechanism):
    def initial_alignments(self, batch_size: Any, dtype: Any) -> _g.Tensor:
        """One-hot on the first memory entry: [batch_size, max_time]."""
        zeros = super().initial_alignments(batch_size, dtype)
        return _a.concat([_a.ones_like(zeros[:, :1]), zeros[:, 1:]], 1)


def _check_mode(mode: str) -> None:
    if mode not in ("recursive", "parallel", "hard"):
        raise ValueError("mode must be 'recursive', 'parallel', or 'hard'.")


def _score_bias(dtype: _dt.DType, init: float) -> Any:
    return get_variable("attention_score_bias", dtype=dtype, initializer=np.asarray(init, dtype=dtype.np))


class BahdanauMonotonicAttention(_BaseMonotonicAttentionMechanism):
    """Monotonic attention with Bahdanau's additive score (plus attention_score_bias)."""

    def __init__(self, num_units: int, memory: Any, memory_sequence_length: Any = None, normalize: bool = False,
                 score_mask_value: Any = None, sigmoid_noise: float = 0.0, sigmoid_noise_seed: Optional[int] = None,
                 score_bias_init: float = 0.0, mode: str = "parallel", dtype: Any = None,
                 name: str = "BahdanauMonotonicAttention"):
        _check_mode(mode)
        super().__init__(query_layer=_Dense(num_units, name="query_layer", use_bias=False),
                         memory=memory,
                         probability_fn=lambda score, prev: _monotonic_probability_fn(
                             score, prev, sigmoid_noise, mode, sigmoid_noise_seed),
                         memory_sequence_length=memory_sequence_length,
                         memory_layer=_Dense(num_units, name="memory_layer", use_bias=False),
                         score_mask_value=score_mask_value, name=name)
        self._num_units, self._normalize, self._name = int(num_units), bool(normalize), name
        self._score_bias_init = float(score_bias_init)

    def __call__(self, query: Any, state: Any) -> Tuple[_g.Tensor, _g.Tensor]:
        query = _g.convert_to_tensor(query)
        with variable_scope(None, default_name="bahdanau_monotonic_attention", values=[query]):
            processed_query = self._query_layer(query)
            score = _bahdanau_score(processed_query, self._keys, self._normalize)
            score = score + _score_bias(processed_query.dtype, self._score_bias_init)
        alignments = self._probability_fn(score, state)
        return alignments, alignments


class LuongMonotonicAttention(_BaseMonotonicAttentionMechanism):
    """Monotonic attention with Luong's multiplicative score (plus attention_score_bias)."""

    def __init__(self, num_units: int, memory: Any, memory_sequence_length: Any = None, scale: bool = False,
                 score_mask_value: Any = None, sigmoid_noise: float = 0.0, sigmoid_noise_seed: Optional[int] = None,
                 score_bias_init: float = 0.0, mode: str = "parallel", dtype: Any = None,
                 name: str = "LuongMonotonicAttention"):
        _check_mode(mode)
        super().__init__(query_layer=None, memory=memory,
                         probability_fn=lambda score, prev: _monotonic_probability_fn(
                             score, prev, sigmoid_noise, mode, sigmoid_noise_seed),
                         memory_sequence_length=memory_sequence_length,
                         memory_layer=_Dense(num_units, name="memory_layer", use_bias=False),
                         score_mask_value=score_mask_value, name=name)
        self._num_units, self._scale, self._name = int(num_units), bool(scale), name
        self._score_bias_init = float(score_bias_init)

    def __call__(self, query: Any, state: Any) -> Tuple[_g.Tensor, _g.Tensor]:
        query = _g.convert_to_tensor(query)
        with variable_scope(None, default_name="luong_monotonic_attention", values=[query]):
            score = _luong_score(query, self._keys, self._scale)
            score = score + _score_bias(query.dtype, self._score_bias_init)
        alignments = self._probability_fn(score, state)
        return alignments, alignments
