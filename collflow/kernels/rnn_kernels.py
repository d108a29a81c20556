"""Kernels of the fused LSTM cell (graph/ops/rnn_ops.py): few passes, in place, on `xp`.

Sigmoid is 0.5 * tanh(x / 2) + 0.5 (no overflow for any x), as the Sigmoid kernel computes
it; the gradient recomputes tanh(c) rather than keeping it (one pass, one array less saved
per step).
"""
from __future__ import annotations

from typing import Any

from .registry import KernelContext, register_kernel


@register_kernel("LSTMBlockCell")
def _lstm_block_cell(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    fb = op.attrs["forget_bias"]

    def cell(gates: Any, c_prev: Any) -> tuple:
        n = c_prev.shape[1]
        half = gates.dtype.type(0.5)
        act = xp.multiply(gates, half)
        if fb:
            act[:, 2 * n:3 * n] += gates.dtype.type(0.5 * fb)
        xp.tanh(act, out=act)
        act *= half
        act += half                                   # sigmoid of all four gates ...
        xp.tanh(gates[:, n:2 * n], out=act[:, n:2 * n])  # ... then j is tanh instead
        i, j, f, o = act[:, :n], act[:, n:2 * n], act[:, 2 * n:3 * n], act[:, 3 * n:]
        c = xp.multiply(c_prev, f)
        ij = xp.multiply(i, j)
        c += ij
        h = xp.tanh(c)
        h *= o
        return c, h, act
    return cell


@register_kernel("LSTMBlockCellGrad")
def _lstm_block_cell_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def grad(act: Any, c_prev: Any, c: Any, dc: Any, dh: Any, dact: Any = None) -> tuple:
        n = c_prev.shape[1]
        one = act.dtype.type(1)
        i, j, f, o = act[:, :n], act[:, n:2 * n], act[:, 2 * n:3 * n], act[:, 3 * n:]
        tc = xp.tanh(c)
        dg = xp.empty_like(act)
        dgi, dgj, dgf, dgo = dg[:, :n], dg[:, n:2 * n], dg[:, 2 * n:3 * n], dg[:, 3 * n:]
        # do = dh * tanh(c); dct = dc + dh * o * (1 - tanh(c)^2)
        xp.multiply(dh, tc, out=dgo)
        dct = xp.multiply(tc, tc)
        xp.subtract(one, dct, out=dct)
        dct *= o
        dct *= dh
        dct += dc
        # pre-activation gradients: sigmoid' = s (1 - s), tanh' = 1 - t^2
        xp.multiply(dct, j, out=dgi)
        xp.multiply(dct, i, out=dgj)
        xp.multiply(dct, c_prev, out=dgf)
        if dact is not None:  # someone used the activated gates themselves
            dg += dact
        tmp = xp.subtract(one, act)
        tmp *= act                                    # s (1 - s) for i, f, o (j fixed below)
        xp.multiply(j, j, out=tmp[:, n:2 * n])
        xp.subtract(one, tmp[:, n:2 * n], out=tmp[:, n:2 * n])
        dg *= tmp
        dc_prev = xp.multiply(dct, f)
        return dg, dc_prev
    return grad
