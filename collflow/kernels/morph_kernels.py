"""Kernels of graph/ops/morph_ops.py: Dilation2D and its two backprops (NumPy on the host).

The forward pass keeps, per output, the running maximum over the taps in row-major order and
the tap that first attained it (strictly greater replaces, from the lowest float, so NaN is
skipped): the backprops send each output's gradient to that input element and that filter
tap, as TensorFlow's kernels do, also where no tap was taken (see _positions).
"""
from __future__ import annotations

from typing import Any, Sequence, Tuple

import numpy as np

from .registry import KernelContext, register_kernel


def _geometry(size: int, k: int, s: int, r: int, padding: str) -> Tuple[int, int]:
    ek = (k - 1) * r + 1
    if padding == "VALID":
        return (size - ek) // s + 1, 0
    o = -(-size // s)
    return o, max((o - 1) * s + ek - size, 0) // 2


def dilation_argmax(x: np.ndarray, f: np.ndarray, strides: Sequence[int], rates: Sequence[int],
                    padding: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(out, tap row, tap column, found) of the dilation, as TF's kernel: each output starts at
    the lowest float and takes x + f of each real tap strictly greater (row-major, in x's
    dtype), so NaN is skipped and a window of NaN and -inf gives the lowest float; `found`
    says whether any tap was taken (the taps are 0 where none was)."""
    n, h, w, c = x.shape
    kh, kw, _ = f.shape
    (oh, pt), (ow, pl) = _geometry(h, kh, strides[0], rates[0], padding), _geometry(w, kw, strides[1], rates[1],
                                                                                     padding)
    big_h = max(h, pt + (oh - 1) * strides[0] + (kh - 1) * rates[0] + 1)
    big_w = max(w, pl + (ow - 1) * strides[1] + (kw - 1) * rates[1] + 1)
    # the padding is NaN: NaN + f is never greater than the value held, so never taken
    xp = np.full((n, big_h + pt, big_w + pl, c), np.nan, x.dtype)
    xp[:, pt:pt + h, pl:pl + w] = x
    best = np.full((n, oh, ow, c), np.finfo(x.dtype).min, x.dtype)
    bi = np.zeros((n, oh, ow, c), np.int64)
    bj = np.zeros((n, oh, ow, c), np.int64)
    found = np.zeros((n, oh, ow, c), bool)
    with np.errstate(invalid="ignore"):  # inf + -inf taps
        for i in range(kh):
            for j in range(kw):
                y0, x0 = i * rates[0], j * rates[1]
                slab = xp[:, y0:y0 + (oh - 1) * strides[0] + 1:strides[0],
                          x0:x0 + (ow - 1) * strides[1] + 1:strides[1]]
                val = slab + f[i, j].astype(x.dtype)
                upd = val > best
                np.copyto(best, val, where=upd)
                np.copyto(bi, i, where=upd)
                np.copyto(bj, j, where=upd)
                found |= upd
    return best, bi, bj, found


def _attrs(op: Any) -> Tuple[Sequence[int], Sequence[int], str]:
    return op.attrs["strides"], op.attrs["rates"], op.attrs["padding"]


@register_kernel("Dilation2D")
def _dilation(op: Any, ctx: KernelContext) -> Any:
    st, rt, pad = _attrs(op)

    def run(x: Any, f: Any) -> np.ndarray:
        x, f = np.asarray(x), np.asarray(f)
        out = dilation_argmax(x, f, st, rt, pad)[0]
        return out.astype(x.dtype)
    return run


def _positions(x: np.ndarray, f: np.ndarray, st: Sequence[int], rt: Sequence[int], pad: str) -> Any:
    """Where each output's gradient goes: (batch, row, column, channel) in x and (row, column)
    in f.  Where no tap was taken TF's kernels send it to the window's first real cell in x
    (its clipped start, which need not be a tap) and to the filter's tap (0, 0)."""
    n, h, w, c = x.shape
    _, bi, bj, found = dilation_argmax(x, f, st, rt, pad)
    _, oh, ow, _ = bi.shape
    pt = _geometry(h, f.shape[0], st[0], rt[0], pad)[1]
    pl = _geometry(w, f.shape[1], st[1], rt[1], pad)[1]
    y0 = np.arange(oh)[None, :, None, None] * st[0] - pt
    x0 = np.arange(ow)[None, None, :, None] * st[1] - pl
    yy = np.where(found, y0 + bi * rt[0], np.maximum(y0, 0))
    xx = np.where(found, x0 + bj * rt[1], np.maximum(x0, 0))
    bb = np.broadcast_to(np.arange(n)[:, None, None, None], bi.shape)
    cc = np.broadcast_to(np.arange(c)[None, None, None, :], bi.shape)
    return bb, yy, xx, cc, bi, bj


@register_kernel("Dilation2DBackpropInput")
def _dilation_bp_input(op: Any, ctx: KernelContext) -> Any:
    st, rt, pad = _attrs(op)

    def run(x: Any, f: Any, g: Any) -> np.ndarray:
        x, f, g = np.asarray(x), np.asarray(f), np.asarray(g)
        bb, yy, xx, cc, _, _ = _positions(x, f, st, rt, pad)
        out = np.zeros(x.shape, np.float64)
        np.add.at(out, (bb, yy, xx, cc), g.astype(np.float64))
        return out.astype(x.dtype)
    return run


@register_kernel("Dilation2DBackpropFilter")
def _dilation_bp_filter(op: Any, ctx: KernelContext) -> Any:
    st, rt, pad = _attrs(op)

    def run(x: Any, f: Any, g: Any) -> np.ndarray:
        x, f, g = np.asarray(x), np.asarray(f), np.asarray(g)
        _, _, _, cc, bi, bj = _positions(x, f, st, rt, pad)
        out = np.zeros(f.shape, np.float64)
        np.add.at(out, (bi, bj, cc), g.astype(np.float64))
        return out.astype(f.dtype)
    return run
