"""Kernels of graph/ops/math_nn_more_ops.py: SegmentProd / UnsortedSegmentProd (an empty
segment gives 1, as TF), NextAfter, CollapseRepeated, CtcUniqueLabels and
LearnedUnigramCandidateSampler (host NumPy)."""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .candidate_sampling_kernels import _expected, draw_unique
from .random_kernels import stream_for
from .registry import KernelContext, register_kernel


def _host(x: Any) -> np.ndarray:
    return x.get() if hasattr(x, "get") else np.asarray(x)


def _prod_rows(data: np.ndarray, ids: np.ndarray, n: int) -> np.ndarray:
    out = np.ones((n,) + data.shape[1:], data.dtype)
    if ids.size:
        np.multiply.at(out, ids, data)
    return out


@register_kernel("SegmentProd")
def _segment_prod(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def run(data: Any, ids: Any) -> Any:
        d, i = _host(data), _host(ids).astype(np.int64)
        if i.ndim != 1 or i.shape[0] != d.shape[0]:
            raise InvalidArgumentError(f"segment_ids should be the same size as dimension 0 of data: "
                                       f"{i.shape} ids for data of shape {d.shape}", op)
        if i.size and (i[0] < 0 or np.any(i[1:] < i[:-1])):
            raise InvalidArgumentError("segment ids must be >= 0 and increasing", op)
        n = int(i[-1]) + 1 if i.size else 0
        return xp.asarray(_prod_rows(d, i, n))
    return run


@register_kernel("UnsortedSegmentProd")
def _unsorted_prod(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def run(data: Any, ids: Any, num: Any) -> Any:
        d, i, n = _host(data), _host(ids).astype(np.int64), int(_host(num))
        if d.shape[:i.ndim] != i.shape:
            raise InvalidArgumentError(f"data.shape = {d.shape} does not start with segment_ids.shape = {i.shape}", op)
        if np.any(i >= n):
            bad = int(i[i >= n].reshape(-1)[0])
            raise InvalidArgumentError(f"segment_ids[...] = {bad} is out of range [0, {n})", op)
        flat_i = i.reshape(-1)
        flat_d = d.reshape((flat_i.size,) + d.shape[i.ndim:])
        keep = flat_i >= 0
        return xp.asarray(_prod_rows(flat_d[keep], flat_i[keep], n))
    return run


@register_kernel("NextAfter")
def _nextafter(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    return lambda a, b: xp.nextafter(a, b)


@register_kernel("CollapseRepeated")
def _collapse(op: Any, ctx: KernelContext) -> Any:
    def run(labels: Any, seq_length: Any) -> Tuple[np.ndarray, np.ndarray]:
        lab, sl = np.asarray(labels), np.asarray(seq_length)
        if lab.ndim != 2 or sl.shape != lab.shape[:1]:
            raise InvalidArgumentError(f"labels must be [batch, max_len] and seq_length [batch], got "
                                       f"{lab.shape} and {sl.shape}", op)
        rows = []
        for r, n in zip(lab, sl):
            v = r[:max(0, min(int(n), r.shape[0]))]
            keep = np.concatenate(([True], v[1:] != v[:-1])) if v.size else np.zeros(0, bool)
            rows.append(v[keep])
        width = max((len(r) for r in rows), default=0)
        out = np.zeros((lab.shape[0], width), lab.dtype)
        for k, r in enumerate(rows):
            out[k, :len(r)] = r
        return out, np.array([len(r) for r in rows], sl.dtype)
    return run


@register_kernel("CtcUniqueLabels")
def _unique_labels(op: Any, ctx: KernelContext) -> Any:
    def run(labels: Any) -> Tuple[np.ndarray, np.ndarray]:
        lab = np.asarray(labels)
        if lab.ndim != 2:
            raise InvalidArgumentError(f"labels must be a matrix, got shape {lab.shape}", op)
        uniq = np.zeros_like(lab)
        idx = np.zeros_like(lab)
        for k, r in enumerate(lab):
            seen: dict = {}
            for j, v in enumerate(r.tolist()):
                idx[k, j] = seen.setdefault(v, len(seen))
            uniq[k, :len(seen)] = list(seen)
        return uniq, idx
    return run


@register_kernel("LearnedUnigramCandidateSampler")
def _learned_unigram(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    ns, nt, unique, rm = a["num_sampled"], a["num_true"], a["unique"], a["range_max"]

    def sample(true_classes: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        tc = np.asarray(true_classes)
        if tc.ndim != 2 or tc.shape[1] != nt:
            raise InvalidArgumentError(f"true_classes must have shape [batch_size, {nt}], got {tc.shape}", op)
        stream = stream_for(op, ctx)
        # the counts learned in this Session: every class starts at 1
        counts = ctx.resources.get_or_create("other", f"{op.name}/learned_unigram_counts",
                                             lambda: np.ones(rm, np.float64))
        p = counts / counts.sum()
        cdf = np.cumsum(p)

        def draw(n: int) -> np.ndarray:
            u = stream.uniform((n,), np.float64) * cdf[-1]
            return np.minimum(np.searchsorted(cdf, u, side="right"), rm - 1).astype(np.int64)
        sampled, tries = draw_unique(draw, ns) if unique else (draw(ns), ns)
        ok = (tc >= 0) & (tc < rm)
        prob = lambda v: np.where((v >= 0) & (v < rm), p[np.clip(v, 0, rm - 1)], 0.0)   # noqa: E731
        out = sampled, _expected(prob(tc), ns, tries), _expected(prob(sampled), ns, tries)
        np.add.at(counts, tc[ok].astype(np.int64), 1.0)        # learn after sampling, as TF
        return out
    return sample
