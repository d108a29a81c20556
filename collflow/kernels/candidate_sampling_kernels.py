"""Kernels of the candidate samplers and ComputeAccidentalHits (CPU only, as TensorFlow's).

Sampling and expected counts follow TensorFlow's RangeSampler: a log-uniform draw is
floor(exp(u * log(range_max + 1))) - 1 for u uniform in [0, 1); a unique batch keeps
drawing until it has num_sampled distinct classes, and the expected count of a class of
probability p after `tries` draws is 1 - (1 - p)^tries (p * num_sampled when every draw
was kept, which is always the case without `unique`).
"""
from __future__ import annotations

from typing import Any, Callable, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .random_kernels import stream_for
from .registry import register_kernel, KernelContext

_FLT_MAX = np.finfo(np.float32).max


def _log_uniform(range_max: int) -> Tuple[Callable[[Any, int], np.ndarray], Callable[[np.ndarray], np.ndarray]]:
    log_range = np.log(range_max + 1.0)

    def draw(stream: Any, n: int) -> np.ndarray:
        u = stream.uniform((n,), np.float64)
        # % range_max guards the (measure-zero) rounding case exp(...) == range_max + 1
        return (np.exp(u * log_range).astype(np.int64) - 1) % range_max

    def prob(v: np.ndarray) -> np.ndarray:
        v = v.astype(np.float64)
        return np.log((v + 2.0) / (v + 1.0)) / log_range
    return draw, prob


def _uniform(range_max: int) -> Tuple[Callable[[Any, int], np.ndarray], Callable[[np.ndarray], np.ndarray]]:
    def draw(stream: Any, n: int) -> np.ndarray:
        return stream.integers(0, range_max, (n,), np.int64)

    def prob(v: np.ndarray) -> np.ndarray:
        return np.full(v.shape, 1.0 / range_max)
    return draw, prob


def draw_unique(draw: Callable[[int], np.ndarray], n: int) -> Tuple[np.ndarray, int]:
    """(n distinct values in the order first drawn, number of draws it took).

    The same as drawing one at a time and skipping repeats, done in chunks: the first
    occurrences of the values among all draws so far, in draw order.
    """
    draws = np.empty(0, dtype=np.int64)
    chunk = max(2 * n, 64)
    while True:
        draws = np.concatenate([draws, draw(chunk)])
        _, first = np.unique(draws, return_index=True)
        if first.size >= n:
            first = np.sort(first)[:n]
            return draws[first], int(first[-1]) + 1
        chunk *= 2


def _expected(p: np.ndarray, batch: int, tries: int) -> np.ndarray:
    if tries == batch:
        return (p * batch).astype(np.float32)
    return (-np.expm1(tries * np.log1p(-p))).astype(np.float32)


def _sampler_kernel(make: Callable[[int], Any]) -> Callable[[Any, KernelContext], Any]:
    def factory(op: Any, ctx: KernelContext) -> Any:
        a = op.attrs
        ns, nt, unique, rm = a["num_sampled"], a["num_true"], a["unique"], a["range_max"]
        draw, prob = make(rm)

        def sample(true_classes: Any) -> Any:
            if true_classes.ndim != 2 or true_classes.shape[1] != nt:
                raise InvalidArgumentError(f"true_classes must have shape [batch_size, {nt}], got "
                                           f"{tuple(true_classes.shape)}", op)
            stream = stream_for(op, ctx)
            if unique:
                sampled, tries = draw_unique(lambda n: draw(stream, n), ns)
            else:
                sampled, tries = draw(stream, ns), ns
            return sampled, _expected(prob(true_classes), ns, tries), _expected(prob(sampled), ns, tries)
        return sample
    return factory


register_kernel("LogUniformCandidateSampler", device="CPU")(_sampler_kernel(_log_uniform))
register_kernel("UniformCandidateSampler", device="CPU")(_sampler_kernel(_uniform))


@register_kernel("ComputeAccidentalHits", device="CPU")
def _accidental_hits(op: Any, ctx: KernelContext) -> Any:
    nt = op.attrs["num_true"]

    def hits(true_classes: Any, sampled: Any) -> Any:
        if true_classes.ndim != 2 or true_classes.shape[1] != nt:
            raise InvalidArgumentError(f"true_classes must have shape [batch_size, {nt}], got "
                                       f"{tuple(true_classes.shape)}", op)
        if sampled.size == 0:
            return np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0, np.float32)
        # the last position of each distinct sampled class (TensorFlow's map keeps the last)
        uniq, first_rev = np.unique(sampled[::-1], return_index=True)
        last = sampled.size - 1 - first_rev
        j = np.searchsorted(uniq, true_classes)
        jc = np.minimum(j, uniq.size - 1)
        hit = uniq[jc] == true_classes
        rows, _ = np.nonzero(hit)  # row-major: row by row, true class by true class
        ids = last[jc[hit]].astype(np.int64)
        return rows.astype(np.int32), ids, np.full(rows.shape, -_FLT_MAX, dtype=np.float32)
    return hits


def _fixed(probs: np.ndarray) -> Any:
    """(draw, prob) over a fixed distribution (fixed_unigram_candidate_sampler's)."""
    cdf = np.cumsum(probs)
    cdf /= cdf[-1]

    def make(_range_max: int) -> Tuple[Callable[[Any, int], np.ndarray], Callable[[np.ndarray], np.ndarray]]:
        def draw(stream: Any, n: int) -> np.ndarray:
            u = stream.uniform((n,), np.float64)
            return np.minimum(np.searchsorted(cdf, u, side="right"), len(cdf) - 1).astype(np.int64)

        def prob(v: np.ndarray) -> np.ndarray:
            return probs[np.clip(v, 0, len(probs) - 1)] * ((v >= 0) & (v < len(probs)))
        return draw, prob
    return make


@register_kernel("FixedUnigramCandidateSampler", device="CPU")
def _fixed_unigram(op: Any, ctx: KernelContext) -> Any:
    return _sampler_kernel(_fixed(np.asarray(op.attrs["probs"], np.float64)))(op, ctx)


@register_kernel("AllCandidateSampler", device="CPU")
def _all_candidates(op: Any, ctx: KernelContext) -> Any:
    ns, nt = op.attrs["num_sampled"], op.attrs["num_true"]

    def sample(true_classes: Any) -> Any:
        if true_classes.ndim != 2 or true_classes.shape[1] != nt:
            raise InvalidArgumentError(f"true_classes must have shape [batch_size, {nt}], got "
                                       f"{tuple(true_classes.shape)}", op)
        bad = true_classes[(true_classes < 0) | (true_classes >= ns)]
        if bad.size:
            raise InvalidArgumentError(f"`true_candidate` out of range [0, {ns}), received {int(bad[0])}", op)
        # every class in [0, num_sampled), each certain to be "sampled" (TF's expected count 1)
        return (np.arange(ns, dtype=np.int64), np.ones(true_classes.shape, np.float32),
                np.ones(ns, np.float32))
    return sample
