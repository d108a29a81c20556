"""Kernel of tf.nn.ctc_loss (graph/ops/ctc_ops.py): per batch entry, the forward (alpha) and
backward (beta) recursions of CTC over the blank-extended label sequence, in float64 log
space and vectorized over its positions; one Python loop over time steps."""
from __future__ import annotations

from typing import Any, List

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


@register_kernel("CTCGreedyDecoder")
def _ctc_greedy_decoder(op: Any, ctx: KernelContext) -> Any:
    merge = op.attrs["merge_repeated"]
    blank_attr = op.attrs["blank_index"]

    def decode(x: Any, seq: Any) -> Any:
        x = np.asarray(x)
        seq = np.asarray(seq).reshape(-1)
        t_max, batch, classes = x.shape
        if seq.shape[0] != batch:
            raise InvalidArgumentError(f"ctc_greedy_decoder: sequence_length has {seq.shape[0]} entries for a batch "
                                       f"of {batch}", op)
        if (seq < 0).any() or (seq > t_max).any():
            raise InvalidArgumentError(f"ctc_greedy_decoder: sequence_length must be in [0, {t_max}], got "
                                       f"{seq.tolist()}", op)
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
