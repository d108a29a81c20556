"""Kernels of tf.nn.max_pool3d: MaxPool3D, MaxPool3DGrad and MaxPool3DGradGrad on NDHWC volumes.

The rules, checked by differential tests against TF's CPU kernels:
- forward: the maximum of each window's numbers, NaN skipped, starting from -inf, with SAME
  padding taking part as the lowest float: a window of NaN gives -inf, one of NaN (or -inf)
  and padding -3.4e38.  This is what TF's vectorised path computes (16, 32, 64 channels
  here); with a few channels, or a count that is not a multiple of its vector width, TF's
  Eigen reduction folds scalars in another order and a NaN may survive or decide a window,
  so TF's own answer with NaN depends on the channel count and the CPU.  collflow keeps one
  rule, TF's 2-D MaxPool's apart from the -inf start;
- gradient: every cell of a window with `v - y == 0` gets the window's gradient, so all ties
  share it, and a NaN, +inf or -inf window sends none;
- gradient of the gradient (linear in its gradient input): each output takes gg at the first
  real cell equal to it (-inf and +inf windows included), zero where there is none.
The spatial geometry is TF's documented one (VALID, or SAME with the odd pixel at the end).
TF's CPU kernels differ from it where SAME's total padding would be negative by 2 or more
(a window smaller than its stride): Eigen then shifts the windows, TF's GPU kernels do not.
"""
from __future__ import annotations

import itertools
from typing import Any, Iterator, List, Sequence, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from ..graph.ops.conv3d_ops import _geometry as conv3d_geometry
from .registry import KernelContext, register_kernel


def _geometry(op: Any, shape: Sequence[int]) -> Tuple[List[int], List[Tuple[int, int]]]:
    """(output sizes, (before, after) padding) of the three spatial dimensions of `shape`:
    conv3d's rule (graph/ops/conv3d_ops.py), its errors naming this op."""
    if len(shape) != 5:
        raise InvalidArgumentError(f"{op.type} needs an NDHWC input of rank 5, got shape {tuple(shape)}", op)
    try:
        return conv3d_geometry([int(d) for d in shape[1:4]], op.attrs["ksize"], op.attrs["strides"], (1, 1, 1),
                               op.attrs["padding"], op.type)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(str(e), op) from None


def _padded(xp: Any, x: Any, pads: Sequence[Tuple[int, int]], fill: Any) -> Any:
    if not any(p != (0, 0) for p in pads):
        return x
    n, d, h, w, c = x.shape
    out = xp.full((n,) + tuple(s + a + b for s, (a, b) in zip((d, h, w), pads)) + (c,), fill, dtype=x.dtype)
    out[:, pads[0][0]:pads[0][0] + d, pads[1][0]:pads[1][0] + h, pads[2][0]:pads[2][0] + w, :] = x
    return out


def _lowest(dtype: Any) -> Any:
    dtype = np.dtype(dtype)
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


def _taps(op: Any, outs: Sequence[int]) -> Iterator[Tuple[Any, ...]]:
    """The index of each window cell's [n, od, oh, ow, c] view of the padded input, row-major."""
    ks, st = op.attrs["ksize"], op.attrs["strides"]
    for idx in itertools.product(*[range(k) for k in ks]):
        yield (slice(None),) + tuple(slice(i, i + (o - 1) * s + 1, s) for i, s, o in zip(idx, st, outs)) \
            + (slice(None),)


def _crop(dx: Any, shape: Sequence[int], pads: Sequence[Tuple[int, int]]) -> Any:
    if not any(p != (0, 0) for p in pads):
        return dx
    return dx[(slice(None),) + tuple(slice(a, a + s) for s, (a, _) in zip(shape[1:4], pads)) + (slice(None),)]


@register_kernel("MaxPool3D")
def _max_pool3d(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def max_pool3d(x: Any) -> Any:
        outs, pads = _geometry(op, x.shape)
        xpad = _padded(xp, x, pads, _lowest(x.dtype))
        if x.dtype.kind != "f":
            out = None
            for key in _taps(op, outs):
                out = xpad[key].copy() if out is None else xp.maximum(out, xpad[key], out=out)
            return out
        out = xp.full([x.shape[0]] + outs + [x.shape[4]], -np.inf, dtype=x.dtype)
        for key in _taps(op, outs):
            xp.fmax(out, xpad[key], out=out)  # NaN loses to any number, -inf included
        return out
    return max_pool3d


@register_kernel("MaxPool3DGrad")
def _max_pool3d_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def max_pool3d_grad(x: Any, y: Any, g: Any) -> Any:
        outs, pads = _geometry(op, x.shape)
        xpad = _padded(xp, x, pads, _lowest(x.dtype))
        # v - y == 0: v equal to y and y finite (inf - inf and NaN are not 0)
        finite = xp.isfinite(y) if y.dtype.kind == "f" else None
        zero = g.dtype.type(0)
        dx = xp.zeros(xpad.shape, dtype=g.dtype)
        for key in _taps(op, outs):
            hit = xpad[key] == y
            if finite is not None:
                hit &= finite
            dx[key] += xp.where(hit, g, zero)  # a select: an inf gradient leaves no inf * 0 = NaN
        return _crop(dx, x.shape, pads)
    return max_pool3d_grad


@register_kernel("MaxPool3DGradGrad")
def _max_pool3d_grad_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def max_pool3d_grad_grad(x: Any, y: Any, gg: Any) -> Any:
        outs, pads = _geometry(op, x.shape)
        # the padding never equals an output: NaN for floats; integer volumes have no gradient
        xpad = _padded(xp, x, pads, np.nan if x.dtype.kind == "f" else _lowest(x.dtype))
        ggpad = _padded(xp, gg, pads, 0)
        out = xp.zeros(y.shape, dtype=gg.dtype)
        todo = xp.ones(y.shape, dtype=bool)
        for key in _taps(op, outs):
            hit = xpad[key] == y
            hit &= todo
            xp.copyto(out, ggpad[key], where=hit)
            todo &= xp.logical_not(hit)
        return out
    return max_pool3d_grad_grad
