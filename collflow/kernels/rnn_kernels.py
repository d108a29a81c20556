"""Kernels of the fused recurrent ops (graph/ops/rnn_ops.py): one LSTM step (LSTMBlockCell),
a whole LSTM or GRU sequence (BlockLSTM, BlockGRU) and their gradients; few passes, in place,
on `xp` (NumPy or CuPy).

Sigmoid is 0.5 * tanh(x / 2) + 0.5 (no overflow for any x), as the Sigmoid kernel computes
it; the LSTM gradient recomputes tanh(c) rather than keeping it (one pass, one array less
saved per step).  With sequence_length, a row past its length keeps its state: the forward
pass copies the old state back over it, the backward pass zeroes its gate gradients and
passes dh (and dc) through; a step where every row has ended is a copy.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .device import to_host
from .nn_kernels import sigmoid_into
from .registry import KernelContext, register_kernel


def _cell_forward(xp: Any, gates: Any, c_prev: Any, fb: float, act: Any) -> tuple:
    """One step's activated gates (into `act`), c and h."""
    n = c_prev.shape[1]
    half = gates.dtype.type(0.5)
    xp.multiply(gates, half, out=act)
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
    return c, h


def _cell_backward(xp: Any, act: Any, c_prev: Any, c: Any, dc: Any, dh: Any, dact: Any, dg: Any) -> Any:
    """Gate pre-activation gradients (into `dg`) and dc_prev of one step."""
    n = c_prev.shape[1]
    one = act.dtype.type(1)
    i, j, f, o = act[:, :n], act[:, n:2 * n], act[:, 2 * n:3 * n], act[:, 3 * n:]
    tc = xp.tanh(c)
    dgi, dgj, dgf, dgo = dg[:, :n], dg[:, n:2 * n], dg[:, 2 * n:3 * n], dg[:, 3 * n:]
    # do = dh * tanh(c); dct = dc + dh * o * (1 - tanh(c)^2)
    xp.multiply(dh, tc, out=dgo)
    dct = xp.multiply(tc, tc)
    xp.subtract(one, dct, out=dct)
    dct *= o
    dct *= dh
    if dc is not None:
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
    return xp.multiply(dct, f)


@register_kernel("LSTMBlockCell")
def _lstm_block_cell(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    fb = op.attrs["forget_bias"]

    def cell(gates: Any, c_prev: Any) -> tuple:
        act = xp.empty_like(gates)
        c, h = _cell_forward(xp, gates, c_prev, fb, act)
        return c, h, act
    return cell


@register_kernel("LSTMBlockCellGrad")
def _lstm_block_cell_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def grad(act: Any, c_prev: Any, c: Any, dc: Any, dh: Any, dact: Any = None) -> tuple:
        dg = xp.empty_like(act)
        dc_prev = _cell_backward(xp, act, c_prev, c, dc, dh, dact, dg)
        return dg, dc_prev
    return grad


class _Lengths:
    """Per step, which batch rows are still inside their sequence (sequence_length): `live(t)`
    is None when all are, else (count, keep [batch, 1] bool on the device)."""

    def __init__(self, xp: Any, seq: Any, batch: int, op: Any):
        lens = to_host(seq).astype(np.int64).reshape(-1)
        if lens.shape[0] != batch:
            raise InvalidArgumentError(f"{op.type}: sequence_length has {lens.shape[0]} entries for a batch of "
                                       f"{batch}", op)
        self._xp, self._lens = xp, lens
        self._masks: dict = {}

    def live(self, t: int) -> Any:
        alive = self._lens > t
        k = int(alive.sum())
        if k == len(alive):
            return None
        key = alive.tobytes()
        keep = self._masks.get(key)
        if keep is None:
            keep = self._masks[key] = self._xp.asarray(alive[:, None])
        return k, keep


@register_kernel("BlockLSTM")
def _block_lstm(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    fb = op.attrs["forget_bias"]

    def run(x: Any, h0: Any, c0: Any, w: Any, bias: Any, seq: Any = None) -> tuple:
        t_steps, b, d = x.shape
        lengths = _Lengths(xp, seq, b, op) if seq is not None else None
        g4 = w.shape[1]
        n = g4 // 4
        dt = x.dtype.type
        # sigmoid(z) = tanh(z / 2) / 2 + 1 / 2: with the i, f, o columns of the kernel and
        # bias halved (exact: a power of two) and the forget bias folded in, one tanh over a
        # step's four gates and one scale-and-shift per row give [i, j, f, o]
        s = xp.full((g4,), dt(0.5), dtype=x.dtype)
        s[n:2 * n] = 1
        shift = xp.where(s == 1, dt(0), dt(0.5)).astype(x.dtype)
        wb = xp.concatenate([w, bias[None]], axis=0) * s
        if fb:
            wb[-1, 2 * n:3 * n] += dt(0.5 * fb)
        # every step's input projection and the bias as one GEMM: [x, 1] . [W_x; bias]
        x1 = xp.empty((t_steps, b, d + 1), dtype=x.dtype)
        x1[..., :d] = x
        x1[..., d] = 1
        p = xp.matmul(x1.reshape(t_steps * b, d + 1), xp.concatenate([wb[:d], wb[-1:]], axis=0))
        p = p.reshape(t_steps, b, g4)
        w_h = wb[d:d + n]
        hs = xp.empty((t_steps, b, n), dtype=x.dtype)
        cs = xp.empty((t_steps, b, n), dtype=x.dtype)
        acts = xp.empty_like(p)
        gates = xp.empty((b, g4), dtype=x.dtype)
        ij = xp.empty((b, n), dtype=x.dtype)
        h, c = h0, c0
        for t in range(t_steps):
            a = acts[t]
            live = lengths.live(t) if lengths is not None else None
            if live is not None and live[0] == 0:  # every sequence has ended: the state stays
                cs[t], hs[t], a[...] = c, h, 0
                h, c = hs[t], cs[t]
                continue
            xp.matmul(h, w_h, out=gates)
            xp.add(gates, p[t], out=a)
            xp.tanh(a, out=a)
            a *= s
            a += shift                                # [i, j, f, o]
            c_t, h_t = cs[t], hs[t]
            xp.multiply(c, a[:, 2 * n:3 * n], out=c_t)
            xp.multiply(a[:, :n], a[:, n:2 * n], out=ij)
            c_t += ij
            xp.tanh(c_t, out=h_t)
            h_t *= a[:, 3 * n:]
            if live is not None:  # past their lengths, rows keep their state
                dead = ~live[1]
                xp.copyto(c_t, c, where=dead)
                xp.copyto(h_t, h, where=dead)
            h, c = h_t, c_t
        return hs, cs, acts
    return run


@register_kernel("BlockLSTMGrad")
def _block_lstm_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    dc_zero = bool(op.attrs.get("dc_zero", False))  # no gradient reaches the c sequence
    with_dact = bool(op.attrs.get("with_dact", False))
    with_seq = bool(op.attrs.get("with_seq", False))

    def grad(x: Any, h0: Any, c0: Any, w: Any, hs: Any, cs: Any, acts: Any, dhs: Any, dcs: Any, *extra: Any) -> tuple:
        dacts = extra[0] if with_dact else None
        seq = extra[-1] if with_seq else None
        t_steps, b, n = hs.shape
        d = x.shape[2]
        if t_steps == 0:
            return (xp.zeros_like(x), xp.zeros_like(h0), xp.zeros_like(c0), xp.zeros_like(w),
                    xp.zeros((w.shape[1],), dtype=w.dtype))
        lengths = _Lengths(xp, seq, b, op) if seq is not None else None
        dg = xp.empty_like(acts)
        dh_next = xp.zeros_like(h0)
        dc_next = xp.zeros_like(c0)
        w_t = xp.ascontiguousarray(w[d:].T)  # once: BLAS runs a plain product faster than a transposed one
        for t in range(t_steps - 1, -1, -1):
            dh = dhs[t] + dh_next
            dc = dc_next if dc_zero else dcs[t] + dc_next
            live = lengths.live(t) if lengths is not None else None
            if live is not None and live[0] == 0:  # the state passed through this step unchanged
                dg[t] = 0
                dh_next, dc_next = dh, dc
                continue
            c_prev = cs[t - 1] if t else c0
            dc_next = _cell_backward(xp, acts[t], c_prev, cs[t], dc, dh, None if dacts is None else dacts[t], dg[t])
            dh_next = xp.matmul(dg[t], w_t, out=dh_next if t < t_steps - 1 else None)
            if live is not None:  # rows past their lengths: no gate gradient, dh and dc pass through
                keep = live[1]
                dg[t] *= keep
                xp.copyto(dh_next, dh, where=~keep)
                xp.copyto(dc_next, dc, where=~keep)
        rows = t_steps * b
        dgf = dg.reshape(rows, 4 * n)
        dx = xp.matmul(dgf, w[:d].T).reshape(t_steps, b, d)
        # the whole kernel's and the bias's gradients as one product over all steps:
        # [x, h_prev, 1]^T . dgates
        xh1 = xp.empty((t_steps, b, d + n + 1), dtype=x.dtype)
        xh1[..., :d] = x
        xh1[0, :, d:d + n] = h0
        xh1[1:, :, d:d + n] = hs[:-1]
        xh1[..., d + n] = 1
        dwb = xp.matmul(xh1.reshape(rows, d + n + 1).T, dgf)
        return dx, dh_next, dc_next, dwb[:d + n], dwb[d + n]
    return grad


@register_kernel("BlockGRU")
def _block_gru(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def run(p: Any, h0: Any, w_g: Any, w_c: Any, seq: Any = None) -> tuple:
        t_steps, b, n3 = p.shape
        lengths = _Lengths(xp, seq, b, op) if seq is not None else None
        n = n3 // 3
        hs = xp.empty((t_steps, b, n), dtype=p.dtype)
        acts = xp.empty_like(p)                       # [r, u, c] of every step
        rhs = xp.empty((t_steps, b, n), dtype=p.dtype)
        g = xp.empty((b, 2 * n), dtype=p.dtype)
        cand = xp.empty((b, n), dtype=p.dtype)
        h = h0
        for t in range(t_steps):
            a, pt = acts[t], p[t]
            live = lengths.live(t) if lengths is not None else None
            if live is not None and live[0] == 0:  # every sequence has ended: the state stays
                hs[t], a[...], rhs[t] = h, 0, 0
                h = hs[t]
                continue
            ru, c = a[:, :2 * n], a[:, 2 * n:]
            xp.matmul(h, w_g, out=g)
            xp.add(g, pt[:, :2 * n], out=ru)
            sigmoid_into(xp, ru, ru)
            rh = rhs[t]
            xp.multiply(a[:, :n], h, out=rh)
            xp.matmul(rh, w_c, out=cand)
            xp.add(cand, pt[:, 2 * n:], out=c)
            xp.tanh(c, out=c)
            h_t = hs[t]                               # h' = c + u (h - c)
            xp.subtract(h, c, out=h_t)
            h_t *= a[:, n:2 * n]
            h_t += c
            if live is not None:  # past their lengths, rows keep their state
                xp.copyto(h_t, h, where=~live[1])
            h = h_t
        return hs, acts, rhs
    return run


@register_kernel("BlockGRUGrad")
def _block_gru_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def grad(h0: Any, w_g: Any, w_c: Any, hs: Any, acts: Any, rhs: Any, dhs: Any, seq: Any = None) -> tuple:
        t_steps, b, n = hs.shape
        lengths = _Lengths(xp, seq, b, op) if seq is not None and t_steps else None
        dp = xp.empty_like(acts)
        dh_next = xp.zeros_like(h0)
        if t_steps == 0:
            return dp, dh_next, xp.zeros_like(w_g), xp.zeros_like(w_c)
        one = acts.dtype.type(1)
        dh = xp.empty_like(h0)
        drh = xp.empty_like(h0)
        tmp = xp.empty_like(h0)
        w_gt = xp.ascontiguousarray(w_g.T)  # once: BLAS runs plain products faster than transposed ones
        w_ct = xp.ascontiguousarray(w_c.T)
        for t in range(t_steps - 1, -1, -1):
            a, d = acts[t], dp[t]
            r, u, c = a[:, :n], a[:, n:2 * n], a[:, 2 * n:]
            dr, du, dc = d[:, :n], d[:, n:2 * n], d[:, 2 * n:]
            h_prev = hs[t - 1] if t else h0
            xp.add(dhs[t], dh_next, out=dh)
            live = lengths.live(t) if lengths is not None else None
            if live is not None and live[0] == 0:  # the state passed through this step unchanged
                d[...] = 0
                dh_next[...] = dh
                continue
            # the candidate's pre-activation: dh (1 - u) (1 - c^2)
            xp.multiply(c, c, out=tmp)
            xp.subtract(one, tmp, out=tmp)
            xp.subtract(one, u, out=dc)
            dc *= dh
            dc *= tmp
            # u's: dh (h_prev - c) u (1 - u)
            xp.subtract(h_prev, c, out=du)
            du *= dh
            xp.multiply(u, u, out=tmp)
            xp.subtract(u, tmp, out=tmp)
            du *= tmp
            # r's: through r * h into the candidate's product
            xp.matmul(dc, w_ct, out=drh)
            xp.multiply(drh, h_prev, out=dr)
            xp.multiply(r, r, out=tmp)
            xp.subtract(r, tmp, out=tmp)
            dr *= tmp
            # h_prev's: the gates' product, r * h's other factor, and u * h directly
            xp.matmul(d[:, :2 * n], w_gt, out=dh_next)
            drh *= r
            dh_next += drh
            xp.multiply(dh, u, out=tmp)
            dh_next += tmp
            if live is not None:  # rows past their lengths: no gradient inside, dh passes through
                keep = live[1]
                d *= keep
                xp.copyto(dh_next, dh, where=~keep)
        # both recurrent kernels' gradients as one product each over all steps
        h_prev = xp.concatenate([h0[None], hs[:-1]], axis=0).reshape(t_steps * b, n)
        dpf = dp.reshape(t_steps * b, 3 * n)
        dw_g = xp.matmul(h_prev.T, dpf[:, :2 * n])
        dw_c = xp.matmul(rhs.reshape(t_steps * b, n).T, dpf[:, 2 * n:])
        return dp, dh_next, dw_g, dw_c
    return grad
