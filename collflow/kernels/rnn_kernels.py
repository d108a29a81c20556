"""Kernels of the fused recurrent ops (graph/ops/rnn_ops.py): one LSTM step (LSTMBlockCell),
a whole LSTM or GRU sequence (BlockLSTM, BlockGRU) and their gradients; few passes, in place,
on `xp` (NumPy or CuPy).

Sigmoid is 0.5 * tanh(x / 2) + 0.5 (no overflow for any x), as the Sigmoid kernel computes
it; the LSTM gradient recomputes tanh(c) rather than keeping it (one pass, one array less
saved per step).  With sequence_length, a row past its length keeps its state: the forward
pass copies the old state back over it (BlockLSTM's gates of that row read 0), the backward
pass zeroes its gate gradients and passes dh (and dc) through; a step where every row has
ended is a copy.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from . import blas as _blas
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


def _cell_backward(xp: Any, a: tuple, c_prev: Any, c: Any, dc: Any, dh: Any, dact: Any, d: tuple,
                   runs: Any = None, peep: Any = None, clip: Any = None) -> Any:
    """One LSTM step's gradient: the gates' pre-activation gradients written into `d` and
    dc_prev returned.  a, d (and dact, the activated gates' own gradient, or None): views of
    the gates in the order [j, i, f, o]; runs: (a_ifo, d_ifo) where the sigmoid gates lie in
    one array (BlockLSTM's gate-major layout: i, f, o, or i, f with peepholes), so their
    sigmoid' pass is one call, else None.  peep: the peephole weights (w_i, w_f, w_o) or None;
    clip: the cell clip (c is the clipped cell state) or None."""
    j, i, f, o = a
    dj, di, df, do = d
    one = j.dtype.type(1)
    tc = xp.tanh(c)
    # do = dh * tanh(c); dct = dc + dh * o * (1 - tanh(c)^2) (+ do' * w_o with peepholes)
    xp.multiply(dh, tc, out=do)
    if peep is not None:  # o's pre-activation gradient first: it reaches c through w_o
        if dact is not None:
            do += dact[3]
        _sigmoid_grad_into(xp, one, o, do)
    dct = xp.multiply(tc, tc, out=tc)
    xp.subtract(one, dct, out=dct)
    dct *= o
    dct *= dh
    if dc is not None:
        dct += dc
    if peep is not None:
        dct += xp.multiply(do, peep[2])
    if clip is not None:  # clip_by_value passes the gradient only where c was inside
        dct *= xp.abs(c) < clip
    xp.multiply(dct, i, out=dj)
    xp.multiply(dct, j, out=di)
    xp.multiply(dct, c_prev, out=df)
    if dact is not None:  # someone used the activated gates themselves
        for dk, gk in zip(d[:3] if peep is not None else d, dact):
            dk += gk
    # pre-activation gradients: sigmoid' = s (1 - s) for i, f (, o); tanh' = 1 - j^2
    sig = [(i, di), (f, df)] + ([(o, do)] if peep is None else [])
    for s, ds in ([runs] if runs is not None else sig):
        _sigmoid_grad_into(xp, one, s, ds)
    tj = xp.multiply(j, j)
    xp.subtract(one, tj, out=tj)
    dj *= tj
    dc_prev = xp.multiply(dct, f)
    if peep is not None:  # i and f saw c_prev through w_i and w_f
        dc_prev += xp.multiply(di, peep[0])
        dc_prev += xp.multiply(df, peep[1])
    return dc_prev


def _sigmoid_grad_into(xp: Any, one: Any, s: Any, ds: Any) -> None:
    """ds *= s (1 - s): a sigmoid's output gradient to its pre-activation's, in place."""
    tmp = xp.subtract(one, s)
    tmp *= s
    ds *= tmp


def _packed(m: Any) -> tuple:
    """A [batch, 4 units] array of gates in TF1's order [i, j, f, o] as views [j, i, f, o]."""
    n = m.shape[1] // 4
    return m[:, n:2 * n], m[:, :n], m[:, 2 * n:3 * n], m[:, 3 * n:]


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
        dc_prev = _cell_backward(xp, _packed(act), c_prev, c, dc, dh, None if dact is None else _packed(dact),
                                 _packed(dg))
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


def _cell_clip(op: Any, attr: str = "cell_clip") -> Any:
    """BlockLSTM's cell (or projection) clip: None, or the bound (attr < 0: none)."""
    v = op.attrs.get(attr)
    return None if v is None or float(v) < 0 else float(v)


def _block_extras(op: Any, rest: tuple) -> tuple:
    """BlockLSTM's optional inputs after the bias: (peepholes (w_i, w_f, w_o) or None,
    projection kernel or None, sequence_length or None)."""
    k = 0
    peep = proj = seq = None
    if op.attrs.get("use_peephole"):
        peep, k = tuple(rest[:3]), 3
    if op.attrs.get("with_proj"):
        proj, k = rest[k], k + 1
    if len(rest) > k:
        seq = rest[k]
    return peep, proj, seq


# BlockLSTM keeps its gates gate-major, [4, time, batch, units] in the order [j, i, f, o]:
# every gate of a step is a contiguous [batch, units] block (NumPy runs an elementwise pass
# over a contiguous block about twice as fast as over a column slice of [batch, 4 units]),
# and the sigmoid gates i, f, o are one run of three blocks.  _ORDER[k] is the column block
# of the kernel ([i, j, f, o], TF1's order) that internal gate k comes from.
_ORDER = (1, 0, 2, 3)


def _gate_blocks(xp: Any, m: Any, n: int) -> Any:
    """[rows, 4 units] in TF1's gate order -> [4, rows, units] in the internal order."""
    return xp.stack([m[:, k * n:(k + 1) * n] for k in _ORDER])


# A step's four recurrent products go to BLAS one call a gate (beta = 1: straight into their
# destination) when the step's gates have at least this many elements; below it, three
# more calls through ctypes (~2 us each) cost more than the pass they save, and one batched
# np.matmul into a scratch array plus an add pass is faster (hidden 128 / batch 32: 41 against
# 51 us a step; hidden 256 / batch 64: 292 against 273 us).
_BLAS_STEP_MIN = 32768


def _gate_steps(xp: Any, a: list, w4: Any, c: list, betas: tuple) -> Any:
    """Per gate k, the BLAS step c[k][j] = a[k][i] . w4[k] + betas[k] * c[k][j] (kernels/blas.py
    stepwise), or None where NumPy's BLAS cannot be called directly (CuPy, other dtypes) or
    the step is too small to gain from it."""
    if xp is not np or 4 * a[0].shape[1] * w4.shape[2] < _BLAS_STEP_MIN:
        return None
    steps = [_blas.stepwise(a[k], w4[k], c[k], beta=betas[k]) for k in range(4)]
    return None if any(st is None for st in steps) else steps


@register_kernel("BlockLSTM")
def _block_lstm(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    fb = op.attrs["forget_bias"]
    peephole = bool(op.attrs.get("use_peephole", False))
    clip, proj_clip = _cell_clip(op), _cell_clip(op, "proj_clip")

    def run(x: Any, h0: Any, c0: Any, w: Any, bias: Any, *rest: Any) -> tuple:
        peep, proj, seq = _block_extras(op, rest)
        t_steps, b, d = x.shape
        lengths = _Lengths(xp, seq, b, op) if seq is not None else None
        n = w.shape[1] // 4
        hd = proj.shape[1] if proj is not None else n   # h's depth: num_proj or units
        dt = x.dtype.type
        half = dt(0.5)
        # sigmoid(z) = tanh(z / 2) / 2 + 1 / 2: with the i, f, o blocks of the kernel and bias
        # halved (exact: a power of two) and the forget bias folded in, one tanh over a step's
        # four gates and one scale-and-shift of i, f, o give the activated gates
        wb4 = _gate_blocks(xp, xp.concatenate([w, bias[None]], axis=0), n)  # [4, d + hd + 1, n]
        wb4[1:] *= half
        if fb:
            wb4[2, -1] += dt(0.5 * fb)
        # every step's input projection and the bias, per gate one GEMM over all steps,
        # [x, 1] . [W_x; bias], written straight into the gates' array: each step then adds
        # h . W_h to its blocks in place
        x1 = xp.empty((t_steps * b, d + 1), dtype=x.dtype)
        x1[:, :d] = x.reshape(t_steps * b, d)
        x1[:, d] = 1
        acts = xp.empty((4, t_steps, b, n), dtype=x.dtype)
        xp.matmul(x1, xp.concatenate([wb4[:, :d], wb4[:, -1:]], axis=1), out=acts.reshape(4, t_steps * b, n))
        w_h4 = xp.ascontiguousarray(wb4[:, d:d + hd])
        hs = xp.empty((t_steps, b, hd), dtype=x.dtype)
        cs = xp.empty((t_steps, b, n), dtype=x.dtype)
        # with num_proj, h = (o * tanh(c)) . W_proj: m is the cell's output before the projection
        m = xp.empty((b, n), dtype=x.dtype) if proj is not None else None
        # acts[k, t] += hs[t - 1] . W_h[k], one BLAS call a gate (beta = 1: no product array,
        # no add pass)
        steps = _gate_steps(xp, [hs] * 4, w_h4, list(acts), (1.0,) * 4)
        gates = xp.empty((4, b, n), dtype=x.dtype)
        ij = xp.empty((b, n), dtype=x.dtype)
        if peephole:  # halved too, as the pre-activations they add to
            w_if = xp.stack([peep[0], peep[1]])[:, None, :] * half   # [2, 1, n]: i and f see c_prev
            w_o = peep[2] * half                                      # o sees the new c
            peek = xp.empty((2, b, n), dtype=x.dtype)
            o_in = xp.empty((b, n), dtype=x.dtype)
        # the gates activated before c is known: all four, or j, i, f with peepholes (o then
        # waits for the new c)
        early = 3 if peephole else 4
        h, c = h0, c0
        for t in range(t_steps):
            a = acts[:, t]
            live = lengths.live(t) if lengths is not None else None
            if live is not None and live[0] == 0:  # every sequence has ended: the state stays
                cs[t], hs[t], a[...] = c, h, 0
                h, c = hs[t], cs[t]
                continue
            if t and steps is not None:
                for st in steps:
                    st(t - 1, t)
            else:
                xp.matmul(h, w_h4, out=gates)
                a += gates
            if peephole:
                xp.multiply(c, w_if, out=peek)
                a[1:3] += peek
            xp.tanh(a[:early], out=a[:early])
            sig = a[1:early]
            sig *= half
            sig += half
            j, i, f, o = a[0], a[1], a[2], a[3]
            c_t, h_t = cs[t], hs[t]
            xp.multiply(c, f, out=c_t)
            xp.multiply(i, j, out=ij)
            c_t += ij
            if clip is not None:
                xp.clip(c_t, -clip, clip, out=c_t)
            if peephole:
                xp.multiply(c_t, w_o, out=o_in)
                o += o_in
                xp.tanh(o, out=o)
                o *= half
                o += half
            if proj is None:
                xp.tanh(c_t, out=h_t)
                h_t *= o
            else:
                xp.tanh(c_t, out=m)
                m *= o
                xp.matmul(m, proj, out=h_t)
                if proj_clip is not None:
                    xp.clip(h_t, -proj_clip, proj_clip, out=h_t)
            if live is not None:  # past their lengths, rows keep their state and their gates read 0
                dead = ~live[1]
                xp.copyto(c_t, c, where=dead)
                xp.copyto(h_t, h, where=dead)
                a *= live[1]
            h, c = h_t, c_t
        return hs, cs, acts
    return run


@register_kernel("BlockLSTMGrad")
def _block_lstm_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    dc_zero = bool(op.attrs.get("dc_zero", False))  # no gradient reaches the c sequence
    with_dact = bool(op.attrs.get("with_dact", False))
    clip, proj_clip = _cell_clip(op), _cell_clip(op, "proj_clip")

    def grad(x: Any, h0: Any, c0: Any, w: Any, hs: Any, cs: Any, acts: Any, dhs: Any, dcs: Any, *extra: Any) -> tuple:
        # extra: [dact] [w_i, w_f, w_o] [projection kernel] [sequence_length]
        dacts = extra[0] if with_dact else None
        peep, proj, seq = _block_extras(op, extra[int(with_dact):])
        t_steps, b, hd = hs.shape                     # hd: h's depth, num_proj or units
        n, d = cs.shape[2], x.shape[2]
        if t_steps == 0:
            return ((xp.zeros_like(x), xp.zeros_like(h0), xp.zeros_like(c0), xp.zeros_like(w),
                     xp.zeros((w.shape[1],), dtype=w.dtype)) + (tuple(xp.zeros_like(p) for p in peep) if peep else ())
                    + ((xp.zeros_like(proj),) if proj is not None else ()))
        lengths = _Lengths(xp, seq, b, op) if seq is not None else None
        dg = xp.empty_like(acts)                      # [4, T, B, H], the gates' order [j, i, f, o]
        w4 = _gate_blocks(xp, w, n)                   # [4, d + hd, n]
        # once: BLAS runs plain products faster than transposed ones
        w_ht4 = xp.ascontiguousarray(w4[:, d:].transpose(0, 2, 1))
        dh_buf = xp.zeros((1, b, hd), dtype=hs.dtype)
        dc_next = xp.zeros_like(c0)
        # dh_prev = sum over gates of dg[k, t] . W_h[k]^T, one BLAS call a gate into dh_buf
        steps = _gate_steps(xp, list(dg), w_ht4, [dh_buf] * 4, (0.0, 1.0, 1.0, 1.0))
        prod = xp.empty((4, b, hd), dtype=hs.dtype) if steps is None else None
        if proj is not None:  # h = m . W_proj: dm = dh . W_proj^T, and dh of every step kept for dW_proj
            proj_t = xp.ascontiguousarray(proj.T)
            dhp = xp.empty_like(hs)
        dh_next = dh_buf[0]
        for t in range(t_steps - 1, -1, -1):
            dh = dhs[t] + dh_next
            dc = dc_next if dc_zero else dcs[t] + dc_next
            live = lengths.live(t) if lengths is not None else None
            if live is not None and live[0] == 0:  # the state passed through this step unchanged
                dg[:, t] = 0
                if proj is not None:
                    dhp[t] = 0
                dh_next[...] = dh
                dc_next = dc
                continue
            dm = dh
            if proj is not None:
                dp = dhp[t]
                xp.copyto(dp, dh)
                if proj_clip is not None:  # clip_by_value passes the gradient only where h was inside
                    dp *= xp.abs(hs[t]) < proj_clip
                if live is not None:
                    dp *= live[1]
                dm = xp.matmul(dp, proj_t)
            c_prev = cs[t - 1] if t else c0
            a, d_t = acts[:, t], dg[:, t]
            dc_next = _cell_backward(xp, tuple(a), c_prev, cs[t], dc, dm, None if dacts is None else tuple(dacts[:, t]),
                                     tuple(d_t), runs=(a[1:3], d_t[1:3]) if peep else (a[1:], d_t[1:]),
                                     peep=peep, clip=clip)
            if live is not None:  # rows past their lengths: no gate gradient, dh and dc pass through
                dg[:, t] *= live[1]
            if steps is not None:
                for st in steps:
                    st(t, 0)
            else:
                xp.matmul(dg[:, t], w_ht4, out=prod)
                xp.sum(prod, axis=0, out=dh_next)
            if live is not None:
                keep = live[1]
                xp.copyto(dh_next, dh, where=~keep)
                xp.copyto(dc_next, dc, where=~keep)
        rows = t_steps * b
        dg3 = dg.reshape(4, rows, n)
        # dx = sum over gates of dg[k] . W_x[k]^T
        dx = xp.empty((rows, d), dtype=x.dtype)
        for k in range(4):
            if not _blas.gemm(dg3[k], False, w4[k, :d], True, dx, 1.0, 0.0 if k == 0 else 1.0):
                if k == 0:
                    xp.matmul(dg3[0], w4[0, :d].T, out=dx)
                else:
                    dx += xp.matmul(dg3[k], w4[k, :d].T)
        # the whole kernel's and the bias's gradients, per gate one product over all steps:
        # [x, h_prev, 1]^T . dg[k], into the kernel's column block of that gate
        xh1 = xp.empty((t_steps, b, d + hd + 1), dtype=x.dtype)
        xh1[..., :d] = x
        xh1[0, :, d:d + hd] = h0
        xh1[1:, :, d:d + hd] = hs[:-1]
        xh1[..., d + hd] = 1
        xh1t = xh1.reshape(rows, d + hd + 1).T
        dwb = xp.empty((d + hd + 1, 4 * n), dtype=w.dtype)
        for k, col in enumerate(_ORDER):
            blk = dwb[:, col * n:(col + 1) * n]
            if not _blas.gemm(xh1t, False, dg3[k], False, blk, 1.0, 0.0):
                blk[...] = xp.matmul(xh1t, dg3[k])
        out = (dx.reshape(t_steps, b, d), dh_next, dc_next, dwb[:d + hd], dwb[d + hd])
        if peep is not None:
            # the peephole weights' gradients: i and f saw c_prev, o the new c, at every step
            c_prev_all = xp.concatenate([c0[None], cs[:-1]], axis=0).reshape(rows, n)
            out += tuple(xp.sum(dg3[k] * cc, axis=0)
                         for k, cc in ((1, c_prev_all), (2, c_prev_all), (3, cs.reshape(rows, n))))
        if proj is not None:
            # dW_proj = m^T . dh over all steps, m = o * tanh(c) (0 where a row had ended: its
            # gates read 0, and its dh was zeroed above)
            m_all = xp.tanh(cs)
            m_all *= acts[3]
            out += (xp.matmul(m_all.reshape(rows, n).T, dhp.reshape(rows, hd)),)
        return out
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
