"""Kernels of graph/ops/fractional_pool_ops.py: FractionalMaxPool / FractionalAvgPool and their
gradients (NumPy on the host).

The pooling sequences (Graham's fractional max-pooling) are drawn from a Philox stream keyed by
(seed, seed2) as TensorFlow's kernels draw them, found by matching TF's outputs: key (seed lo,
seed hi), counter (0, 0, seed2 lo, seed2 hi); the rows' sequence reads words from call 0, the
columns' from the first call after the rows'.
- pseudo-random: one double u (two words) scaled by max_u = min((k + 2) / alpha - 1,
  (n_in + 1 - k) / alpha - (n_out - 1)) (alpha = n_in / n_out, k = n_in // n_out); the
  boundaries are ceil(alpha (i + u)) - 1 for 0 < i < n_out, with 0 and n_in at the ends;
- random: n_out steps of k, the first n_in % n_out of them k + 1, shuffled by Fisher-Yates
  upwards (position i swaps with i + word_i % (n_out - i), a word per position).
With deterministic=True these are TF's sequences; otherwise every run draws new seeds from the
op's Session stream (new regions each run, as TF, not TF's values).
"""
from __future__ import annotations

import math
from typing import Any, List, Tuple

import numpy as np

from . import philox as P
from .random_kernels import stream_for
from .registry import KernelContext, register_kernel


class _Words:
    """Successive runs of words of one Philox stream, each run starting at a fresh call."""

    def __init__(self, seed: int, seed2: int):
        s, s2 = int(seed) & 0xFFFFFFFFFFFFFFFF, int(seed2) & 0xFFFFFFFFFFFFFFFF
        self.key = (s & 0xFFFFFFFF, s >> 32)
        self.ctr = (0, 0, s2 & 0xFFFFFFFF, s2 >> 32)
        self.call = 0

    def take(self, n: int) -> np.ndarray:
        w = P.words(self.key, self.ctr, n, self.call)
        self.call += -(-n // 4)
        return w


def pooling_sequence(n_in: int, n_out: int, pseudo_random: bool, words: _Words) -> np.ndarray:
    """The n_out + 1 region boundaries (int64) from 0 to n_in."""
    k = n_in // n_out
    if pseudo_random:
        alpha = n_in / n_out
        max_u = min((k + 2) / alpha - 1, (n_in + 1 - k) / alpha - (n_out - 1))
        w = words.take(2)
        u = float(P.uniform_f64(w[:1], w[1:])[0]) * max_u
        cum = [0] + [int(math.ceil(alpha * (i + u))) - 1 for i in range(1, n_out)] + [n_in]
        return np.asarray(cum, np.int64)
    steps = [k + 1] * (n_in % n_out) + [k] * (n_out - n_in % n_out)
    w = words.take(n_out)       # one word per position (the last one swaps with itself)
    for i in range(n_out - 1):
        j = i + int(w[i]) % (n_out - i)
        steps[i], steps[j] = steps[j], steps[i]
    return np.concatenate([[0], np.cumsum(steps)]).astype(np.int64)


def _regions(seq: np.ndarray, n_in: int, overlapping: bool) -> List[Tuple[int, int]]:
    """[start, stop) of each output's region along one axis."""
    return [(int(seq[i]), min(int(seq[i + 1]) + (1 if overlapping else 0), n_in)) for i in range(len(seq) - 1)]


def pool(x: np.ndarray, rows: np.ndarray, cols: np.ndarray, overlapping: bool, kind: str) -> np.ndarray:
    n, h, w, c = x.shape
    rr, cc = _regions(rows, h, overlapping), _regions(cols, w, overlapping)
    out = np.empty((n, len(rr), len(cc), c), x.dtype)
    for i, (r0, r1) in enumerate(rr):
        for j, (c0, c1) in enumerate(cc):
            blk = x[:, r0:r1, c0:c1, :]
            # TF's max skips NaN (fmax), from the lowest float: a region of NaN and -inf only
            # pools to it
            out[:, i, j, :] = np.fmax.reduce(blk, axis=(1, 2)) if kind == "max" else blk.mean(axis=(1, 2),
                                                                                             dtype=np.float64)
    if kind == "max" and out.dtype.kind == "f":
        np.fmax(out, np.finfo(out.dtype).min, out=out)
    return out


def _tf_argmax(blk: np.ndarray) -> np.ndarray:
    """TF's argmax of each [n, cells, c] region: its first cell, replaced by each later one
    strictly greater (so a NaN first keeps it, a later NaN is never taken): the first
    maximum with NaN read as -inf, unless the first cell is NaN."""
    if blk.dtype.kind != "f":
        return blk.argmax(axis=1)
    nan = np.isnan(blk)
    am = np.where(nan, -np.inf, blk).argmax(axis=1)
    am[nan[:, 0, :]] = 0
    return am


def pool_grad(x_shape: Tuple[int, ...], x: Any, g: np.ndarray, rows: np.ndarray, cols: np.ndarray,
              overlapping: bool, kind: str) -> np.ndarray:
    """Max: each output's gradient to its region's cell by TF's argmax rule (`_tf_argmax`,
    row-major); avg: spread evenly over the region.  Where that cell's value is not the pooled
    one (a region starting with NaN, or of -inf only) TF's kernel fails ("tensor_out_dup is not
    the same as tensor_out"); collflow routes the gradient all the same."""
    n, h, w, c = x_shape
    rr, cc = _regions(rows, h, overlapping), _regions(cols, w, overlapping)
    out = np.zeros(x_shape, np.float64)
    for i, (r0, r1) in enumerate(rr):
        for j, (c0, c1) in enumerate(cc):
            gij = g[:, i, j, :].astype(np.float64)
            if kind == "avg":
                out[:, r0:r1, c0:c1, :] += (gij / ((r1 - r0) * (c1 - c0)))[:, None, None, :]
                continue
            blk = x[:, r0:r1, c0:c1, :].reshape(n, -1, c)
            am = _tf_argmax(blk)
            ry, rx = np.divmod(am, c1 - c0)
            bb, ch = np.meshgrid(np.arange(n), np.arange(c), indexing="ij")
            np.add.at(out, (bb, r0 + ry, c0 + rx, ch), gij)
    return out.astype(g.dtype)


def _factory(kind: str) -> Any:
    def factory(op: Any, ctx: KernelContext) -> Any:
        ratio = op.attrs["pooling_ratio"]
        pseudo, overlapping = op.attrs["pseudo_random"], op.attrs["overlapping"]
        seed, seed2 = int(op.attrs["seed"]), int(op.attrs["seed2"])
        det = op.attrs["deterministic"]
        st = stream_for(op, ctx)
        fixed = (seed, seed2)
        if det and seed == 0 and seed2 == 0:        # TF: random seeds, fixed for the node
            fixed = tuple(int(v) for v in st.gen.integers(1, 2 ** 63 - 1, 2))

        def run(x: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
            x = np.asarray(x)
            n, h, w, c = x.shape
            oh, ow = int(math.floor(h / ratio[1])), int(math.floor(w / ratio[2]))
            sd = fixed if det else tuple(int(v) for v in st.gen.integers(1, 2 ** 63 - 1, 2))
            words = _Words(*sd)
            rows = pooling_sequence(h, oh, pseudo, words)
            cols = pooling_sequence(w, ow, pseudo, words)
            return pool(x, rows, cols, overlapping, kind).astype(x.dtype), rows, cols
        return run
    return factory


register_kernel("FractionalMaxPool")(_factory("max"))
register_kernel("FractionalAvgPool")(_factory("avg"))


@register_kernel("FractionalMaxPoolGrad")
def _max_grad(op: Any, ctx: KernelContext) -> Any:
    ov = op.attrs["overlapping"]

    def run(x: Any, out: Any, g: Any, rows: Any, cols: Any) -> np.ndarray:
        x = np.asarray(x)
        return pool_grad(x.shape, x, np.asarray(g), np.asarray(rows), np.asarray(cols), ov, "max").astype(x.dtype)
    return run


@register_kernel("FractionalAvgPoolGrad")
def _avg_grad(op: Any, ctx: KernelContext) -> Any:
    ov = op.attrs["overlapping"]

    def run(shape: Any, g: Any, rows: Any, cols: Any) -> np.ndarray:
        g = np.asarray(g)
        shp = tuple(int(v) for v in np.asarray(shape).reshape(-1))
        return pool_grad(shp, None, g, np.asarray(rows), np.asarray(cols), ov, "avg")
    return run
