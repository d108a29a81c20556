"""Candidate samplers for sampled losses (TensorFlow's tf.nn.*_candidate_sampler) and
tf.nn.compute_accidental_hits.

A sampler draws `num_sampled` class ids from [0, range_max) (without repeats when
`unique`), and returns with them the expected number of times each true class and each
sampled class would be drawn: the Q(y|x) that sampled losses subtract in log space.
Samplers are random ops (stateful, seeded like the others: `seed` and the graph seed) with
CPU kernels (kernels/candidate_sampling_kernels.py); they and their outputs have no gradient.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_op, not_differentiable
from ..shape import TensorShape
from . import math_ops as _m
from .op_util import make_op
from .random_ops import get_seed

__all__ = ["uniform_candidate_sampler", "log_uniform_candidate_sampler", "compute_accidental_hits",
           "fixed_unigram_candidate_sampler", "all_candidate_sampler"]


def _true_classes_shape(t: _g.Tensor, num_true: int, what: str) -> TensorShape:
    if t.dtype != _dt.int64:
        raise ValueError(f"{what}: true_classes must be int64, got {t.dtype.name}")
    if t.shape.rank not in (None, 2):
        raise ValueError(f"{what}: true_classes must be 2-D [batch_size, num_true], got shape {t.shape}")
    if t.shape.rank == 2 and t.shape.dims[1] not in (None, num_true):
        raise ValueError(f"{what}: true_classes has {t.shape.dims[1]} columns but num_true={num_true}")
    return TensorShape([t.shape.dims[0] if t.shape.rank else None, num_true])


def _sampler_spec(op: _g.Operation) -> list:
    a = op.attrs
    tc = _true_classes_shape(op.inputs[0], a["num_true"], op.type)
    ns = a["num_sampled"]
    return [(_dt.int64, TensorShape([ns])), (_dt.float32, tc), (_dt.float32, TensorShape([ns]))]


def _hits_spec(op: _g.Operation) -> list:
    tc, sampled = op.inputs
    _true_classes_shape(tc, op.attrs["num_true"], "compute_accidental_hits")
    if sampled.dtype != _dt.int64 or sampled.shape.rank not in (None, 1):
        raise ValueError(f"compute_accidental_hits: sampled_candidates must be a 1-D int64 tensor, got "
                         f"{sampled.dtype.name} of shape {sampled.shape}")
    n = TensorShape([None])
    return [(_dt.int32, n), (_dt.int64, n), (_dt.float32, n)]


register_op("UniformCandidateSampler", _sampler_spec, stateful=True)
register_op("LogUniformCandidateSampler", _sampler_spec, stateful=True)
register_op("ComputeAccidentalHits", _hits_spec)
register_op("FixedUnigramCandidateSampler", _sampler_spec, stateful=True)
register_op("AllCandidateSampler", _sampler_spec, stateful=True)
not_differentiable("UniformCandidateSampler", "LogUniformCandidateSampler", "ComputeAccidentalHits",
                   "FixedUnigramCandidateSampler", "AllCandidateSampler")


def _classes(true_classes: Any) -> _g.Tensor:
    t = _g.convert_to_tensor(true_classes)
    if t.dtype == _dt.int32:  # TensorFlow wants int64; int32 ids mean the same
        t = _m.cast(t, _dt.int64)
    return t


def _sampler(op_type: str, true_classes: Any, num_true: int, num_sampled: int, unique: bool, range_max: int,
             seed: Optional[int], name: str, extra: Optional[dict] = None) -> Tuple[_g.Tensor, _g.Tensor, _g.Tensor]:
    num_true, num_sampled, range_max = int(num_true), int(num_sampled), int(range_max)
    if num_true < 1 or num_sampled < 1 or range_max < 1:
        raise InvalidArgumentError(f"{name}: num_true, num_sampled and range_max must be >= 1, got {num_true}, "
                                   f"{num_sampled}, {range_max}")
    if unique and num_sampled > range_max:
        raise InvalidArgumentError(f"{name}: the sampler's range is too small: cannot draw {num_sampled} unique "
                                   f"classes from range_max={range_max}")
    t = _classes(true_classes)
    s1, s2 = get_seed(seed, t.graph)
    attrs = {"num_true": num_true, "num_sampled": num_sampled, "unique": bool(unique), "range_max": range_max,
             "seed": s1, "seed2": s2, **(extra or {})}
    op = make_op(op_type, [t], attrs, name=name)
    return op.outputs[0], op.outputs[1], op.outputs[2]


def uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool, range_max: int,
                              seed: Optional[int] = None,
                              name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor, _g.Tensor]:
    """Samples classes uniformly from [0, range_max).

    true_classes: int64 [batch_size, num_true].  Returns (sampled_candidates int64
    [num_sampled], true_expected_count float32 [batch_size, num_true], sampled_expected_count
    float32 [num_sampled]).  With unique=True the candidates are distinct and the expected
    counts are 1 - (1 - p)^tries for the number of draws it took.
    """
    return _sampler("UniformCandidateSampler", true_classes, num_true, num_sampled, unique, range_max, seed,
                    name or "UniformCandidateSampler")


def log_uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                                  range_max: int, seed: Optional[int] = None,
                                  name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor, _g.Tensor]:
    """Samples classes from the log-uniform (Zipfian) distribution over [0, range_max).

    P(class) = (log(class + 2) - log(class + 1)) / log(range_max + 1): suited to classes
    sorted by decreasing frequency (word ids of a vocabulary sorted by count).  Returns as
    uniform_candidate_sampler.
    """
    return _sampler("LogUniformCandidateSampler", true_classes, num_true, num_sampled, unique, range_max, seed,
                    name or "LogUniformCandidateSampler")


def compute_accidental_hits(true_classes: Any, sampled_candidates: Any, num_true: int, seed: Optional[int] = None,
                            name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor, _g.Tensor]:
    """Where a sampled candidate equals one of a row's true classes.

    Returns (indices int32 [n], ids int64 [n], weights float32 [n]): row i of true_classes,
    position ids of sampled_candidates (the last position holding that class), and
    weights = -FLT_MAX, to add to those sampled logits so they drop out of the loss.
    """
    t = _classes(true_classes)
    with t.graph.as_default():
        s = _g.convert_to_tensor(sampled_candidates)
        if s.dtype == _dt.int32:
            s = _m.cast(s, _dt.int64)
    s1, s2 = get_seed(seed, t.graph)
    op = make_op("ComputeAccidentalHits", [t, s], {"num_true": int(num_true), "seed": s1, "seed2": s2},
                 name=name or "ComputeAccidentalHits")
    return op.outputs[0], op.outputs[1], op.outputs[2]


def _unigram_probs(range_max: int, vocab_file: str, distortion: float, num_reserved_ids: int, num_shards: int,
                   shard: int, unigrams: Any) -> np.ndarray:
    """P(class) of fixed_unigram_candidate_sampler: count ** distortion, reserved ids and the
    other shards' ids at 0, normalized."""
    if vocab_file:
        counts = []
        try:
            with open(vocab_file) as f:
                for line in f:
                    if line.strip():
                        counts.append(float(line.rstrip("\n").split(",")[-1]))
        except OSError as e:
            raise InvalidArgumentError(f"fixed_unigram_candidate_sampler: cannot read vocab_file {vocab_file!r}: "
                                       f"{e.strerror or e}") from None
    elif unigrams:
        counts = [float(c) for c in unigrams]
    else:
        raise InvalidArgumentError("fixed_unigram_candidate_sampler needs vocab_file or unigrams")
    weights = np.concatenate([np.zeros(num_reserved_ids), np.power(np.asarray(counts, np.float64), distortion)])
    if len(weights) != range_max:
        raise InvalidArgumentError(f"fixed_unigram_candidate_sampler: range_max ({range_max}) must equal "
                                   f"num_reserved_ids + the number of unigrams ({len(weights)})")
    if num_shards > 1:
        weights[np.arange(range_max) % num_shards != shard] = 0.0
    total = weights.sum()
    if not total > 0:
        raise InvalidArgumentError("fixed_unigram_candidate_sampler: every class has probability 0")
    return weights / total


def fixed_unigram_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool, range_max: int,
                                    vocab_file: str = "", distortion: float = 1.0, num_reserved_ids: int = 0,
                                    num_shards: int = 1, shard: int = 0, unigrams: Any = (),
                                    seed: Optional[int] = None,
                                    name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor, _g.Tensor]:
    """Samples classes by given unigram counts (a list, or the last comma-separated column of
    vocab_file's lines) raised to `distortion`, after num_reserved_ids classes of probability 0;
    with num_shards > 1 only ids with id % num_shards == shard.  Returns as
    uniform_candidate_sampler."""
    probs = _unigram_probs(int(range_max), vocab_file, float(distortion), int(num_reserved_ids), int(num_shards),
                           int(shard), unigrams)
    possible = int(np.count_nonzero(probs))
    if unique and int(num_sampled) > possible:
        # unique draws from fewer classes would never end
        raise InvalidArgumentError(f"fixed_unigram_candidate_sampler: cannot draw {num_sampled} unique classes: only "
                                   f"{possible} have a nonzero probability")
    return _sampler("FixedUnigramCandidateSampler", true_classes, num_true, num_sampled, unique, range_max, seed,
                    name or "FixedUnigramCandidateSampler", {"probs": probs})


def all_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                          seed: Optional[int] = None,
                          name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor, _g.Tensor]:
    """Every class in [0, num_sampled) as the candidates, each with expected count 1 (TF's
    all_candidate_sampler, for testing sampled losses against full ones)."""
    return _sampler("AllCandidateSampler", true_classes, num_true, num_sampled, True, num_sampled, seed,
                    name or "AllCandidateSampler")
