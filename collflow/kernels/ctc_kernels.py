"""Kernel of tf.nn.ctc_loss (graph/ops/ctc_ops.py): per batch entry, the forward (alpha) and
backward (beta) recursions of CTC over the blank-extended label sequence, in float64 log
space and vectorized over its positions; one Python loop over time steps."""
from __future__ import annotations

import math
from typing import Any, List, Optional

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel

_NEG = -np.inf


def _log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=-1, keepdims=True)
    z = x - m
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def _shift(a: np.ndarray, k: int) -> np.ndarray:
    out = np.full_like(a, _NEG)
    out[k:] = a[:len(a) - k]
    return out


def _entry(lp: np.ndarray, labels: List[int], blank: int, op: Any, b: int, ignore_longer: bool) -> Any:
    """(loss, d loss / d logits [T, C]) of one batch entry; lp: log-softmax [T, C]."""
    t_len = lp.shape[0]
    ext = np.full(2 * len(labels) + 1, blank, dtype=np.int64)
    ext[1::2] = labels
    s_len = len(ext)
    if len(labels) > t_len:  # TF's check: the labels alone (repeats can still make a path impossible)
        if ignore_longer:
            return 0.0, np.zeros_like(lp)
        raise InvalidArgumentError(f"ctc_loss: not enough time for target transition sequence (required: "
                                   f"{len(labels)}, available: {t_len}) in batch entry {b}; "
                                   "ignore_longer_outputs_than_inputs=True gives such entries a loss of 0", op)
    skip = np.zeros(s_len, dtype=bool)
    skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    emit = lp[:, ext]                                             # [T, S]
    alpha = np.full((t_len, s_len), _NEG)
    beta = np.full((t_len, s_len), _NEG)
    alpha[0, :2] = emit[0, :2]
    for t in range(1, t_len):
        a = alpha[t - 1]
        acc = np.logaddexp(a, _shift(a, 1))
        acc = np.where(skip, np.logaddexp(acc, _shift(a, 2)), acc)
        alpha[t] = acc + emit[t]
    beta[t_len - 1, s_len - 2:] = emit[t_len - 1, s_len - 2:]
    skip_next = np.zeros(s_len, dtype=bool)          # s -> s + 2 allowed where s + 2 may skip back to s
    skip_next[:-2] = skip[2:]
    for t in range(t_len - 2, -1, -1):
        nb = beta[t + 1]
        ahead1 = np.full(s_len, _NEG)
        ahead1[:-1] = nb[1:]
        ahead2 = np.full(s_len, _NEG)
        ahead2[:-2] = nb[2:]
        acc = np.logaddexp(nb, ahead1)
        acc = np.where(skip_next, np.logaddexp(acc, ahead2), acc)
        beta[t] = acc + emit[t]
    log_p = np.logaddexp(alpha[-1, -1], alpha[-1, -2]) if s_len > 1 else alpha[-1, -1]
    if not np.isfinite(log_p):  # no path (repeats need blanks between them): TF's inf, gradient softmax
        return np.inf, np.exp(lp)
    occupancy = np.exp(alpha + beta - emit - log_p)              # [T, S]: each position's posterior
    post = np.zeros_like(lp)
    for s in range(s_len):
        post[:, ext[s]] += occupancy[:, s]
    return -log_p, np.exp(lp) - post


@register_kernel("CTCLoss")
def _ctc_loss(op: Any, ctx: KernelContext) -> Any:
    collapse = op.attrs["preprocess_collapse_repeated"]
    ignore_longer = op.attrs["ignore_longer_outputs_than_inputs"]
    xp = ctx.xp

    def ctc_loss(x: Any, indices: Any, values: Any, seq_len: Any) -> Any:
        host = np.asarray(x.get() if hasattr(x, "get") else x, dtype=np.float64)
        t_max, batch, classes = host.shape
        blank = classes - 1
        idx = np.asarray(indices.get() if hasattr(indices, "get") else indices).reshape(-1, 2)
        vals = np.asarray(values.get() if hasattr(values, "get") else values).reshape(-1)
        lens = np.asarray(seq_len.get() if hasattr(seq_len, "get") else seq_len).reshape(-1)
        if lens.size != batch:
            raise InvalidArgumentError(f"ctc_loss: {lens.size} sequence lengths for a batch of {batch}", op)
        if np.any(lens < 0) or np.any(lens > t_max):
            raise InvalidArgumentError(f"ctc_loss: sequence lengths must be in [0, {t_max}], got {lens.tolist()}", op)
        if vals.size and (vals.min() < 0 or vals.max() >= blank):
            raise InvalidArgumentError(f"ctc_loss: labels must be in [0, num_classes - 1) = [0, {blank}) (the last "
                                       f"class is the blank), got {vals.min()}..{vals.max()}", op)
        if idx.size and (idx[:, 0].min() < 0 or idx[:, 0].max() >= batch):
            raise InvalidArgumentError(f"ctc_loss: label rows must be in [0, {batch})", op)
        per: List[List[int]] = [[] for _ in range(batch)]
        for (row, _), v in zip(idx, vals):
            per[int(row)].append(int(v))
        loss = np.zeros(batch)
        grad = np.zeros_like(host)
        for b in range(batch):
            labels = per[b]
            if collapse:
                labels = [v for i, v in enumerate(labels) if i == 0 or v != labels[i - 1]]
            if not labels:
                raise InvalidArgumentError(f"ctc_loss: labels length is zero in batch {b} (as TF, every entry "
                                           "needs a label)", op)
            tb = int(lens[b])
            lp = _log_softmax(host[:tb, b])
            loss[b], grad[:tb, b] = _entry(lp, labels, blank, op, b, ignore_longer)
        dt = x.dtype
        return xp.asarray(loss.astype(dt)), xp.asarray(grad.astype(dt))
    return ctc_loss


def _decoder_inputs(x: Any, seq: Any, what: str, op: Any) -> Any:
    """The logits [time, batch, classes] and the sequence lengths, checked against each other."""
    x = np.asarray(x)
    seq = np.asarray(seq).reshape(-1)
    t_max, batch, _ = x.shape
    if seq.shape[0] != batch:
        raise InvalidArgumentError(f"{what}: sequence_length has {seq.shape[0]} entries for a batch of {batch}", op)
    if (seq < 0).any() or (seq > t_max).any():
        raise InvalidArgumentError(f"{what}: sequence_length must be in [0, {t_max}], got {seq.tolist()}", op)
    return x, seq


@register_kernel("CTCGreedyDecoder")
def _ctc_greedy_decoder(op: Any, ctx: KernelContext) -> Any:
    merge = op.attrs["merge_repeated"]
    blank_attr = op.attrs["blank_index"]

    def decode(x: Any, seq: Any) -> Any:
        x, seq = _decoder_inputs(x, seq, "ctc_greedy_decoder", op)
        t_max, batch, classes = x.shape
        blank = classes - 1 if blank_attr is None else blank_attr % classes
        best = x.argmax(axis=2)          # [time, batch]
        top = x.max(axis=2)
        rows, cols, vals = [], [], []
        log_prob = np.zeros((batch, 1), dtype=x.dtype)
        longest = 0
        for b in range(batch):
            n = int(seq[b])
            log_prob[b, 0] = -top[:n, b].sum()
            prev, k = -1, 0
            for t in range(n):
                c = int(best[t, b])
                if c != blank and not (merge and c == prev):
                    rows.append(b)
                    cols.append(k)
                    vals.append(c)
                    k += 1
                prev = c
            longest = max(longest, k)
        idx = np.stack([np.asarray(rows, np.int64), np.asarray(cols, np.int64)], axis=1) if rows else \
            np.zeros((0, 2), np.int64)
        return idx, np.asarray(vals, np.int64), np.asarray([batch, longest], np.int64), log_prob
    return decode


# -- beam search -----------------------------------------------------------------------------------

_NEG_INF = float("-inf")


def _logsumexp(a: float, b: float) -> float:
    if a == _NEG_INF:
        return b
    if b == _NEG_INF:
        return a
    m = a if a > b else b
    return m + math.log1p(math.exp(-abs(a - b)))


class _Entry:
    """A beam entry: a label prefix (a node of the prefix tree) with its log-probabilities of
    ending in a blank, in its last label, and in total, now (new) and one step ago (old)."""
    __slots__ = ("parent", "label", "children", "new", "old")

    def __init__(self, parent: Optional["_Entry"], label: int):
        self.parent, self.label = parent, label
        self.children: dict = {}
        self.new = [_NEG_INF, _NEG_INF, _NEG_INF]   # total, blank, label
        self.old = [_NEG_INF, _NEG_INF, _NEG_INF]

    def active(self) -> bool:
        return self.new[0] != _NEG_INF

    def child(self, label: int) -> "_Entry":
        c = self.children.get(label)
        if c is None:
            c = self.children[label] = _Entry(self, label)
        return c

    def labels(self, merge_repeated: bool) -> List[int]:
        out: List[int] = []
        e: Optional[_Entry] = self
        while e is not None and e.parent is not None:
            if not (merge_repeated and out and out[-1] == e.label):
                out.append(e.label)
            e = e.parent
        return out[::-1]


class _Beam:
    """The kept entries (at most `width`), by total log-probability."""

    def __init__(self, width: int):
        self.width = width
        self.items: List[_Entry] = []

    def push(self, e: _Entry) -> None:
        if len(self.items) < self.width:
            self.items.append(e)
            return
        low = min(range(len(self.items)), key=lambda i: self.items[i].new[0])
        if e.new[0] > self.items[low].new[0]:
            self.items[low] = e

    def bottom(self) -> _Entry:
        return min(self.items, key=lambda e: e.new[0])

    def extract(self) -> List[_Entry]:
        out = sorted(self.items, key=lambda e: -e.new[0])
        self.items = []
        return out


def _beam_search(logits: np.ndarray, width: int, blank: int) -> _Beam:
    """TF1's CTC prefix beam search over [time, classes] log-probabilities of one sequence."""
    root = _Entry(None, -1)
    root.new = [0.0, 0.0, _NEG_INF]
    beam = _Beam(width)
    beam.push(root)
    classes = logits.shape[1]
    for x in logits:
        xs = x.tolist()
        branches = beam.extract()
        for b in branches:
            b.old = list(b.new)
        for b in branches:
            if b.parent is not None:
                if b.parent.active():
                    prev = b.parent.old[1] if b.label == b.parent.label else b.parent.old[0]
                    b.new[2] = _logsumexp(b.new[2], prev)
                b.new[2] += xs[b.label]
            b.new[1] = b.old[0] + xs[blank]
            b.new[0] = _logsumexp(b.new[1], b.new[2])
            beam.push(b)

        def candidate(p: List[float]) -> bool:
            return p[0] > _NEG_INF and (len(beam.items) < beam.width or p[0] > beam.bottom().new[0])

        for b in branches:
            if not candidate(b.old):
                continue
            for label in range(classes):
                if label == blank:
                    continue
                c = b.child(label)
                if c.active():
                    continue
                c.new[1] = _NEG_INF
                prev = b.old[1] if c.label == b.label else b.old[0]
                c.new[2] = xs[label] + prev
                c.new[0] = c.new[2]
                if candidate(c.new):
                    if len(beam.items) == beam.width:
                        beam.bottom().new = [_NEG_INF, _NEG_INF, _NEG_INF]
                    beam.push(c)
                else:
                    c.old = [_NEG_INF, _NEG_INF, _NEG_INF]
                    c.new = [_NEG_INF, _NEG_INF, _NEG_INF]
    return beam


@register_kernel("CTCBeamSearchDecoder")
def _ctc_beam_search_decoder(op: Any, ctx: KernelContext) -> Any:
    width, k, merge = op.attrs["beam_width"], op.attrs["top_paths"], op.attrs["merge_repeated"]

    def decode(x: Any, seq: Any) -> Any:
        x, seq = _decoder_inputs(x, seq, "ctc_beam_search_decoder", op)
        t_max, batch, classes = x.shape
        # each step's log-softmax: the beam adds log-probabilities of the classes
        z = x.astype(np.float64)
        z = z - z.max(axis=2, keepdims=True)
        z = z - np.log(np.exp(z).sum(axis=2, keepdims=True))
        paths: List[List[List[int]]] = []
        log_prob = np.zeros((batch, k), dtype=x.dtype)
        for b in range(batch):
            beam = _beam_search(z[:int(seq[b]), b], width, classes - 1)
            best = beam.extract()
            if len(best) < k:
                raise InvalidArgumentError(f"Less leaves in the beam search than requested. (batch entry {b}: "
                                           f"{len(best)} in the beam, top_paths {k})", op)
            paths.append([e.labels(merge) for e in best[:k]])
            log_prob[b] = [e.new[0] for e in best[:k]]
        outs_idx, outs_val, outs_shape = [], [], []
        for i in range(k):
            rows = [(b, j, lab) for b in range(batch) for j, lab in enumerate(paths[b][i])]
            idx = np.array([[r[0], r[1]] for r in rows], dtype=np.int64).reshape(-1, 2)
            outs_idx.append(idx)
            outs_val.append(np.array([r[2] for r in rows], dtype=np.int64))
            outs_shape.append(np.array([batch, max([len(paths[b][i]) for b in range(batch)] + [0])], np.int64))
        return tuple(outs_idx + outs_val + outs_shape + [log_prob])
    return decode
