"""Sparse tables: how many distinct rows a batch touches, and what each exchange moves.

Ids drawn independently with probabilities p_j touch, in `m` draws, an expected

    E[unique] = sum_j 1 - (1 - p_j)^m

distinct rows.  Zipf-distributed ids (rank k has probability proportional to k^-s over a
vocabulary of V) touch few rows when s is large and nearly m when s is 0 and V >> m.  A
batch of categorical fields draws each field from its own distribution over one shared
vocabulary (collflow.models.wide_deep's ClickData: the same Zipf law, shifted by a
per-field offset); `expected_unique_fields` counts those.

What one rank moves per step and table (ids are int64, rows `row_bytes` each):

  allgather  every looked-up row of the rank (no dedup: the gradient is an IndexedSlices of
             batch x fields rows) with its index, to every other rank;
  ps         the rank's distinct ids to their owners, their rows back, and their summed
             gradient rows to the owners (+ one flag row per owner): 8u + 2 u row_bytes
             (the alltoall cost model takes the whole buffer; (n-1)/n of it leaves the rank);
  dense      the whole table, all-reduced.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..errors import InvalidArgumentError

__all__ = ["zipf_probabilities", "expected_unique", "expected_unique_fields", "allgather_bytes", "ps_bytes",
           "dense_bytes"]

ID_BYTES = 8


def zipf_probabilities(vocab: int, exponent: float) -> np.ndarray:
    """P(rank k) proportional to k^-exponent for k = 1..vocab (exponent 0: uniform)."""
    if vocab < 1 or not exponent >= 0:
        raise InvalidArgumentError(f"zipf_probabilities needs vocab >= 1 and exponent >= 0, got {vocab}, {exponent}")
    p = np.arange(1, vocab + 1, dtype=np.float64) ** -float(exponent)
    return p / p.sum()


def _log_miss(p: np.ndarray, draws: float) -> np.ndarray:
    """log P(a row is not drawn in `draws` draws) = draws * log(1 - p), accurately for tiny p."""
    if draws == 0:
        return np.zeros_like(p)
    with np.errstate(divide="ignore"):  # p = 1: never missed, log 0 = -inf
        return draws * np.log1p(-p)


def expected_unique(probs: Sequence[float], draws: float) -> float:
    """Expected number of distinct ids among `draws` independent draws from `probs`."""
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 1 or (p < 0).any() or not np.isclose(p.sum(), 1.0, rtol=1e-6):
        raise InvalidArgumentError("expected_unique: probs must be a 1-d probability vector")
    if draws < 0:
        raise InvalidArgumentError(f"expected_unique: draws must be >= 0, got {draws}")
    return float(-np.expm1(_log_miss(p, draws)).sum())


def expected_unique_fields(vocab: int, exponent: float, fields: int, draws_per_field: float,
                           offsets: Optional[Sequence[int]] = None) -> float:
    """Distinct ids when each of `fields` fields draws `draws_per_field` ids from a Zipf law
    whose rank k is the id (k + offsets[f]) mod vocab (default offsets f * (vocab // fields),
    as ClickData)."""
    if fields < 1:
        raise InvalidArgumentError(f"expected_unique_fields: fields must be >= 1, got {fields}")
    if offsets is None:
        offsets = [(f * (vocab // fields)) % vocab for f in range(fields)]
    if len(offsets) != fields:
        raise InvalidArgumentError(f"expected_unique_fields: {len(offsets)} offsets for {fields} fields")
    miss = _log_miss(zipf_probabilities(vocab, exponent), draws_per_field)
    total = np.zeros(vocab, dtype=np.float64)
    for o in offsets:
        total += np.roll(miss, int(o) % vocab)
    return float(-np.expm1(total).sum())


def allgather_bytes(rows: float, row_bytes: float) -> float:
    """Bytes one rank contributes to the allgather of a sparse gradient of `rows` rows."""
    return rows * (row_bytes + ID_BYTES)


def ps_bytes(unique: float, row_bytes: float, lookup: bool = True, push: bool = True) -> float:
    """Bytes of one rank's alltoall buffers for `unique` distinct ids of one table: the ids,
    the rows coming back (lookup) and the gradient rows (push)."""
    return ID_BYTES * unique + (unique * row_bytes if lookup else 0.0) + (unique * row_bytes if push else 0.0)


def dense_bytes(vocab: int, row_bytes: float) -> float:
    """Bytes of the dense all-reduce of a whole table's gradient."""
    return vocab * row_bytes
