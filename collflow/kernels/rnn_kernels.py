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

# A device module's fused elementwise step (kernels/gpu_kernels.py: one CUDA kernel instead of a
# dozen launches a step), for BlockLSTM's plain case (no peepholes, cell clip, projection,
# sequence_length or gradient of the workspace), float32/float64 only:
# "lstm": (j, i, f, o, c_prev, c, h) -> None, the gates [units, batch] pre-activation in
# (i, f, o halved, the forget bias folded in) and activated out, c and h written;
# "lstm_grad": (j, i, f, o, c_prev, c, dh, dc, dj, di, df, do, dc_prev) -> None.
# BlockGRU's (no sequence_length), around its two products a step: "gru_gates": (r, u, h, rh):
# r and u activated in place, rh = r h; "gru_out": (c, u, h, h_t): c = tanh(c) in place,
# h_t = c + u (h - c).  Its gradient's, around its two: "gru_grad_cu": (u, c, h_prev, dh, dc,
# du); "gru_grad_r": (r, h_prev, drh, dr); "gru_grad_h": (r, u, drh, dh, dh_next), dh_next +=
# drh r + dh u.
FUSED_STEPS: dict = {}


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
    one array (BlockLSTM's layout: i, f, o, or i, f with peepholes), so their
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
    if clip is not None:
        # TF1's clip_by_value (minimum, then maximum) passes the gradient where the unclipped
        # cell lay inside [-clip, clip], bounds included; the stored c is clipped, so a cell
        # that met a bound exactly and one clipped to it look alike: recompute the unclipped
        # c_prev f + i j, in the forward's order (the same bits)
        c_un = xp.multiply(c_prev, f)
        c_un += xp.multiply(i, j)
        dct *= xp.abs(c_un, out=c_un) <= clip
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
    is None when all are, else (count, keep [batch, 1] bool on the device, or [1, batch] with
    batch_last: for states kept [units, batch])."""

    def __init__(self, xp: Any, seq: Any, batch: int, op: Any, batch_last: bool = False):
        lens = to_host(seq).astype(np.int64).reshape(-1)
        if lens.shape[0] != batch:
            raise InvalidArgumentError(f"{op.type}: sequence_length has {lens.shape[0]} entries for a batch of "
                                       f"{batch}", op)
        self._xp, self._lens, self._batch_last = xp, lens, batch_last
        self._masks: dict = {}

    def live(self, t: int) -> Any:
        alive = self._lens > t
        k = int(alive.sum())
        if k == len(alive):
            return None
        key = alive.tobytes()
        keep = self._masks.get(key)
        if keep is None:
            keep = self._masks[key] = self._xp.asarray(alive[None, :] if self._batch_last else alive[:, None])
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


# BlockLSTM keeps every step's state unit-major, [units, batch] (the transpose of the graph's
# [batch, units]), in one workspace per sequence, ws [time, 4 units + units + (depth + h depth
# + 1), batch]: step t's gates (pre-activation, then activated in place) in the order
# [j, i, f, o], its cell state c_t, and its GEMM input [x_t; h_{t-1}; 1].  Why:
# - a step is one BLAS product, gates_t = [W_x; W_h; bias]^T [x_t; h_{t-1}; 1], that writes
#   all four gates at once, and OpenBLAS runs this product (M = 4 units, N = batch) faster
#   than the batch-major one (M = batch): 216 against 171 GFLOP/s for hidden 256 / batch 64
#   on a Zen 5 core (SkylakeX kernels), 119 against 106 with the Haswell ones;
# - every gate of a step is a contiguous [units, batch] block (a step's elementwise passes run
#   in 39 us on contiguous blocks against 53 us on column slices), the sigmoid gates i, f, o
#   one run of three blocks;
# - the step writes h_t straight into the next step's GEMM input, and the gradient reads
#   [x_t; h_{t-1}; 1] from there for the kernel's gradient (one product a step, into one
#   accumulator, while the step's gate gradients are still in cache).
# _ORDER[k] is the column block of the kernel ([i, j, f, o], TF1's order) that internal gate
# k comes from.  Each step's x comes in and its h and c go out transposed (the graph's layout,
# [time, batch, ...]) while they are in cache, by OpenBLAS's omatcopy where it can: twice as fast
# as NumPy's strided copy, and 0.9 ms of a 10 ms forward pass when left to one copy at the end.
_ORDER = (1, 0, 2, 3)


def _internal_columns(xp: Any, m: Any, n: int) -> Any:
    """[rows, 4 units] in TF1's gate order -> the same with column blocks in the internal order."""
    return xp.concatenate([m[:, k * n:(k + 1) * n] for k in _ORDER], axis=1)


def _step_product(xp: Any, a: Any, b: Any, c: Any, tb: bool = False, beta: float = 0.0) -> Any:
    """run(t): c_t = op(a_t) @ op(b_t) + beta * c_t for a, b, c each one matrix or [steps, ...]
    (kernels/blas.py stepper: one BLAS call a step); through xp.matmul where NumPy's BLAS
    cannot be called directly (CuPy, other dtypes, COLLFLOW_NUMPY_BLAS=0)."""
    run = _blas.stepper(a, b, c, tb=tb, beta=beta) if xp is np else None
    if run is not None:
        return run

    def matmul_step(t: int) -> None:
        at = a[t] if a.ndim == 3 else a
        bt = b[t] if b.ndim == 3 else b
        ct = c[t] if c.ndim == 3 else c
        if tb:
            bt = bt.T
        if beta == 0.0:
            xp.matmul(at, bt, out=ct)
        else:
            ct += xp.matmul(at, bt)
    return matmul_step


def _transpose_step(xp: Any, a: Any, c: Any, alpha: float = 1.0) -> Any:
    """run(t): c_t = alpha * a_t^T for a, c each one matrix or [steps, ...] (kernels/blas.py
    transposer, OpenBLAS's omatcopy), else through NumPy's strided copy."""
    run = _blas.transposer(a, c, alpha) if xp is np else None
    if run is not None:
        return run

    def copy_step(t: int) -> None:
        at = a[t] if a.ndim == 3 else a
        ct = c[t] if c.ndim == 3 else c
        if alpha == 1.0:
            ct[...] = at.T
        else:
            xp.multiply(at.T, ct.dtype.type(alpha), out=ct)
    return copy_step


def _every_step(xp: Any, m: Any, steps: int) -> Any:
    """m seen as [steps, ...] with every step the same memory (a step stride of 0, writable):
    one buffer the per-step products and copies (kernels/blas.py stepper, transposer) reuse."""
    return xp.lib.stride_tricks.as_strided(m, shape=(steps,) + tuple(m.shape), strides=(0,) + tuple(m.strides))


def _fused_step(xp: Any, kind: str, dtype: Any, special: bool) -> Any:
    """The device's fused elementwise step (FUSED_STEPS) where it applies: a device array
    module, float32/float64, none of the cases only the generic passes handle."""
    if xp is np or special or np.dtype(dtype) not in (np.float32, np.float64):
        return None
    return FUSED_STEPS.get(kind)


def _workspace_rows(n: int, d: int, hd: int) -> tuple:
    """Row offsets in BlockLSTM's workspace: (c, the GEMM input, its h rows, total rows)."""
    c_row = 4 * n
    xh_row = 5 * n
    return c_row, xh_row, xh_row + d, xh_row + d + hd + 1


@register_kernel("BlockLSTM")
def _block_lstm(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    fb = op.attrs["forget_bias"]
    peephole = bool(op.attrs.get("use_peephole", False))
    clip, proj_clip = _cell_clip(op), _cell_clip(op, "proj_clip")

    def run(x: Any, h0: Any, c0: Any, w: Any, bias: Any, *rest: Any) -> tuple:
        peep, proj, seq = _block_extras(op, rest)
        t_steps, b, d = x.shape
        lengths = _Lengths(xp, seq, b, op, batch_last=True) if seq is not None else None
        n = w.shape[1] // 4
        hd = proj.shape[1] if proj is not None else n   # h's depth: num_proj or units
        dt = x.dtype.type
        half = dt(0.5)
        c_row, xh_row, h_row, rows = _workspace_rows(n, d, hd)
        # sigmoid(z) = tanh(z / 2) / 2 + 1 / 2: with the i, f, o rows of the transposed kernel
        # and bias halved (exact: a power of two) and the forget bias folded in, one tanh over
        # a step's four gates and one scale-and-shift of i, f, o give the activated gates
        k_in = d + hd
        wt = xp.empty((4 * n, k_in + 1), dtype=x.dtype)     # [4 units, depth + h depth + 1]
        for k, col in enumerate(_ORDER):
            scale = 1.0 if k == 0 else 0.5
            _transpose_step(xp, w[:, col * n:(col + 1) * n], wt[k * n:(k + 1) * n, :k_in], scale)(0)
            xp.multiply(bias[col * n:(col + 1) * n], dt(scale), out=wt[k * n:(k + 1) * n, k_in])
        if fb:
            wt[2 * n:3 * n, -1] += dt(0.5 * fb)
        # one step more than the sequence: its h rows receive the last h (the rest of it is 0)
        ws = xp.empty((t_steps + 1, rows, b), dtype=x.dtype)
        ws[t_steps] = 0
        gates, cs_t, xh = ws[:t_steps, :c_row], ws[:t_steps, c_row:xh_row], ws[:, xh_row:]
        xh[:, -1] = 1
        xh[0, d:d + hd] = h0.T
        h_out = xh[1:, d:d + hd]                             # [time, h depth, batch]: where h_t goes
        step = _step_product(xp, wt, xh[:t_steps], gates)
        # the graph's layouts [time, batch, ...] in and out, one step at a time while it is in cache
        hs = xp.empty((t_steps, b, hd), dtype=x.dtype)
        cs = xp.empty((t_steps, b, n), dtype=x.dtype)
        x_in = _transpose_step(xp, x, xh[:t_steps, :d])
        hs_out, cs_out = _transpose_step(xp, h_out, hs), _transpose_step(xp, cs_t, cs)
        if proj is not None:
            m = xp.empty((n, b), dtype=x.dtype)
            to_h = _step_product(xp, xp.ascontiguousarray(proj.T), m, h_out)
        ij = xp.empty((n, b), dtype=x.dtype)
        if peephole:  # halved too, as the pre-activations they add to
            w_if = xp.stack([peep[0], peep[1]])[:, :, None] * half   # [2, units, 1]: i and f see c_prev
            w_o = peep[2][:, None] * half                            # o sees the new c
            peek = xp.empty((2, n, b), dtype=x.dtype)
            o_in = xp.empty((n, b), dtype=x.dtype)
        # the gates activated before c is known: all four, or j, i, f with peepholes (o then
        # waits for the new c)
        early = (3 if peephole else 4) * n
        fused = _fused_step(xp, "lstm", x.dtype, peephole or clip is not None or proj is not None or lengths is not None)
        h, c = h0.T, c0.T
        for t in range(t_steps):
            a, c_t, h_t = gates[t], cs_t[t], h_out[t]
            x_in(t)
            live = lengths.live(t) if lengths is not None else None
            if live is not None and live[0] == 0:  # every sequence has ended: the state stays
                c_t[...], h_t[...], a[...] = c, h, 0
                hs_out(t)
                cs_out(t)
                h, c = h_t, c_t
                continue
            step(t)
            a4 = a.reshape(4, n, b)
            if fused is not None:  # the plain case: no peephole, clip, projection or mask
                fused(a4[0], a4[1], a4[2], a4[3], c, c_t, h_t)
            else:
                if peephole:
                    xp.multiply(c, w_if, out=peek)
                    a4[1:3] += peek
                xp.tanh(a[:early], out=a[:early])
                sig = a[n:early]
                sig *= half
                sig += half
                j, i, f, o = a4
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
                    to_h(t)
                    if proj_clip is not None:
                        xp.clip(h_t, -proj_clip, proj_clip, out=h_t)
            if live is not None:  # past their lengths, columns keep their state and their gates read 0
                dead = ~live[1]
                xp.copyto(c_t, c, where=dead)
                xp.copyto(h_t, h, where=dead)
                a *= live[1]
            hs_out(t)
            cs_out(t)
            h, c = h_t, c_t
        return hs, cs, ws
    return run


@register_kernel("BlockLSTMGrad")
def _block_lstm_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    dc_zero = bool(op.attrs.get("dc_zero", False))  # no gradient reaches the c sequence
    with_dact = bool(op.attrs.get("with_dact", False))
    clip, proj_clip = _cell_clip(op), _cell_clip(op, "proj_clip")

    def grad(x: Any, h0: Any, c0: Any, w: Any, hs: Any, cs: Any, ws: Any, dhs: Any, dcs: Any, *extra: Any) -> tuple:
        # extra: [dws] [w_i, w_f, w_o] [projection kernel] [sequence_length]
        dws = extra[0] if with_dact else None
        peep, proj, seq = _block_extras(op, extra[int(with_dact):])
        t_steps, b, hd = hs.shape                     # hd: h's depth, num_proj or units
        n, d = cs.shape[2], x.shape[2]
        c_row, xh_row, h_row, _ = _workspace_rows(n, d, hd)
        # the workspace's last step holds h_{T-1} in its h rows, nothing else that varies
        dh_next = xp.zeros((hd, b), dtype=ws.dtype) if dws is None else xp.array(dws[t_steps, h_row:h_row + hd])
        if t_steps == 0:
            return ((xp.zeros_like(x), xp.ascontiguousarray(dh_next.T), xp.zeros_like(c0), xp.zeros_like(w),
                     xp.zeros((w.shape[1],), dtype=w.dtype)) + (tuple(xp.zeros_like(p) for p in peep) if peep else ())
                    + ((xp.zeros_like(proj),) if proj is not None else ()))
        lengths = _Lengths(xp, seq, b, op, batch_last=True) if seq is not None else None
        gates, cs_t, xh = ws[:t_steps, :c_row], ws[:t_steps, c_row:xh_row], ws[:, xh_row:]
        # the gates' pre-activation gradients and [dx_t; dh_{t-1}]: one step's buffer reused at
        # every step (it stays in cache; each step's products read it at once), the gates' kept
        # for all steps only for the peephole weights' gradients
        dg_all = xp.empty((t_steps if peep is not None else 1, 4 * n, b), dtype=ws.dtype)
        dg = dg_all if peep is not None else _every_step(xp, dg_all[0], t_steps)
        dxh = _every_step(xp, xp.empty((d + hd, b), dtype=ws.dtype), t_steps)
        dx = xp.empty_like(x)
        dx_out = _transpose_step(xp, dxh[:, :d], dx)
        # per step [dx_t; dh_{t-1}] = [W_x; W_h] . dg_t (the kernel unhalved: dg is the true
        # pre-activations' gradient), and the kernel's and bias's gradient accumulated as
        # dg_t . [x_t; h_{t-1}; 1]^T
        w_n = xp.ascontiguousarray(_internal_columns(xp, w, n))          # [depth + h depth, 4 units]
        dw = xp.zeros((4 * n, d + hd + 1), dtype=ws.dtype)
        back = _step_product(xp, w_n, dg, dxh)
        acc = _step_product(xp, dg, xh[:t_steps], dw, tb=True, beta=1.0)
        peep_c = tuple(p[:, None] for p in peep) if peep is not None else None
        if proj is not None:  # h = m . W_proj: dm = W_proj . dh, and dh of every step kept for dW_proj
            dp_all = xp.empty((t_steps, hd, b), dtype=ws.dtype)
        dh = xp.empty((hd, b), dtype=ws.dtype)
        dh_in = _transpose_step(xp, dhs, dh)
        if not dc_zero:
            dc_t = xp.empty((n, b), dtype=ws.dtype)
            dc_in = _transpose_step(xp, dcs, dc_t)
        dc_next = xp.zeros((n, b), dtype=ws.dtype)
        c0_t = c0.T
        fused = _fused_step(xp, "lstm_grad", ws.dtype, peep is not None or clip is not None or proj is not None
                            or lengths is not None or dws is not None)
        if fused is not None:
            dc_pair = (xp.empty((n, b), dtype=ws.dtype), xp.empty((n, b), dtype=ws.dtype))
        for t in range(t_steps - 1, -1, -1):
            dh_in(t)
            dh += dh_next
            if dc_zero:
                dc = dc_next
            else:
                dc_in(t)
                dc = xp.add(dc_t, dc_next)  # a new array: a dead step passes it on as dc_next
            if dws is not None:  # the workspace's c rows are c_t itself
                dc = dc + dws[t, c_row:xh_row]
            live = lengths.live(t) if lengths is not None else None
            dh_prev = dxh[t, d:]
            if live is not None and live[0] == 0:  # the state passed through this step unchanged
                dg[t] = 0
                dxh[t, :d] = 0
                if proj is not None:
                    dp_all[t] = 0
                dh_prev[...] = dh
                dc_prev = dc
            else:
                dm = dh
                if proj is not None:
                    dp = dp_all[t]
                    xp.copyto(dp, dh)
                    if proj_clip is not None:  # clip_by_value passes the gradient only where h was inside
                        dp *= xp.abs(xh[t + 1, d:d + hd]) < proj_clip
                    if live is not None:
                        dp *= live[1]
                    dm = xp.matmul(proj, dp)
                c_prev = cs_t[t - 1] if t else c0_t
                a4, d4 = gates[t].reshape(4, n, b), dg[t].reshape(4, n, b)
                if fused is not None:  # the plain case: no mask, peephole, clip or dws
                    dc_prev = dc_pair[t % 2]  # not this step's dc (the other step's output)
                    fused(a4[0], a4[1], a4[2], a4[3], c_prev, cs_t[t], dm, dc, d4[0], d4[1], d4[2], d4[3], dc_prev)
                else:
                    dact = None if dws is None else tuple(dws[t, :c_row].reshape(4, n, b))
                    dc_prev = _cell_backward(xp, tuple(a4), c_prev, cs_t[t], dc, dm, dact, tuple(d4),
                                             runs=(a4[1:3], d4[1:3]) if peep else (a4[1:], d4[1:]), peep=peep_c,
                                             clip=clip)
                if live is not None:  # columns past their lengths: no gate gradient, dh and dc pass through
                    dg[t] *= live[1]
                back(t)
                acc(t)
                if live is not None:
                    dead = ~live[1]
                    xp.copyto(dh_prev, dh, where=dead)
                    xp.copyto(dc_prev, dc, where=dead)
            dx_out(t)
            if dws is not None:  # the workspace's h rows of step t are h_{t-1}
                dh_prev += dws[t, h_row:h_row + hd]
            dh_next, dc_next = dh_prev, dc_prev
        if dws is not None:  # the workspace's x rows are x itself
            dx += dws[:t_steps, xh_row:h_row].transpose(0, 2, 1)
        # back to TF1's layout: kernel [depth + h depth, 4 units], gates [i, j, f, o]
        dkb = xp.empty((d + hd + 1, 4 * n), dtype=w.dtype)
        for k, col in enumerate(_ORDER):
            _transpose_step(xp, dw[k * n:(k + 1) * n], dkb[:, col * n:(col + 1) * n])(0)
        out = (dx, xp.ascontiguousarray(dh_next.T), xp.ascontiguousarray(dc_next.T), dkb[:d + hd], dkb[d + hd])
        if peep is not None:
            # the peephole weights' gradients: i and f saw c_prev, o the new c, at every step
            c_prev_all = xp.concatenate([c0_t[None], cs_t[:-1]], axis=0)
            dg4 = dg_all.reshape(t_steps, 4, n, b)
            out += tuple(xp.sum(dg4[:, k] * cc, axis=(0, 2))
                         for k, cc in ((1, c_prev_all), (2, c_prev_all), (3, cs_t)))
        if proj is not None:
            # dW_proj = sum over steps of m_t . dh_t^T, m = o * tanh(c) (0 where a column had
            # ended: its gates read 0, and its dh was zeroed above)
            m_all = xp.tanh(cs_t)
            m_all *= gates[:, 3 * n:]
            out += (xp.tensordot(m_all, dp_all, axes=([0, 2], [0, 2])),)
        return out
    return grad


# BlockGRU keeps its state unit-major too: a workspace ws [time + 1, 4 units, batch] holds per
# step the activations [r; u; c] (pre-activation first: the step's input projection, copied in
# transposed, to which the recurrent products add through BLAS beta = 1) and h_{t-1}; the step
# writes h_t into the next step's h rows (the extra last step holds the final h).  Its two
# products a step, W_gh^T h (M = 2 units) and W_ch^T (r * h) (M = units), run with N = batch:
# 214 and 209 GFLOP/s against 179 and 186 batch-major (hidden 256, batch 64, one Zen 5 core).
# r * h also goes out batch-major (rh), as does the gradient of p: the recurrent kernels'
# gradients are then one product each over all steps, as before.


@register_kernel("BlockGRU")
def _block_gru(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def run(p: Any, h0: Any, w_g: Any, w_c: Any, seq: Any = None) -> tuple:
        t_steps, b, n3 = p.shape
        lengths = _Lengths(xp, seq, b, op, batch_last=True) if seq is not None else None
        n = n3 // 3
        dt = p.dtype
        ws = xp.empty((t_steps + 1, 4 * n, b), dtype=dt)
        ws[t_steps, :3 * n] = 0
        ws[0, 3 * n:] = h0.T
        hs = xp.empty((t_steps, b, n), dtype=dt)
        rhs = xp.empty((t_steps, b, n), dtype=dt)
        rh = xp.empty((n, b), dtype=dt)
        w_gt, w_ct = xp.empty((2 * n, n), dtype=dt), xp.empty((n, n), dtype=dt)
        _transpose_step(xp, w_g, w_gt)(0)
        _transpose_step(xp, w_c, w_ct)(0)
        p_in = _transpose_step(xp, p, ws[:t_steps, :3 * n])
        gates = _step_product(xp, w_gt, ws[:t_steps, 3 * n:], ws[:t_steps, :2 * n], beta=1.0)
        cand = _step_product(xp, w_ct, rh, ws[:t_steps, 2 * n:3 * n], beta=1.0)
        h_out, rh_out = _transpose_step(xp, ws[1:, 3 * n:], hs), _transpose_step(xp, rh, rhs)
        fused = _fused_step(xp, "gru_gates", dt, lengths is not None)
        fused_out = FUSED_STEPS.get("gru_out") if fused is not None else None
        for t in range(t_steps):
            a = ws[t]
            h, h_t = a[3 * n:], ws[t + 1, 3 * n:]
            live = lengths.live(t) if lengths is not None else None
            if live is not None and live[0] == 0:  # every sequence has ended: the state stays
                a[:3 * n] = 0
                h_t[...] = h
                rh[...] = 0
            else:
                p_in(t)
                gates(t)
                if fused is not None:
                    fused(a[:n], a[n:2 * n], h, rh)
                else:
                    ru = a[:2 * n]
                    sigmoid_into(xp, ru, ru)
                    xp.multiply(a[:n], h, out=rh)
                cand(t)
                c = a[2 * n:3 * n]
                if fused_out is not None:
                    fused_out(c, a[n:2 * n], h, h_t)
                else:
                    xp.tanh(c, out=c)
                    xp.subtract(h, c, out=h_t)            # h' = c + u (h - c)
                    h_t *= a[n:2 * n]
                    h_t += c
                if live is not None:  # past their lengths, columns keep their state
                    xp.copyto(h_t, h, where=~live[1])
            h_out(t)
            rh_out(t)
        return hs, ws, rhs
    return run


@register_kernel("BlockGRUGrad")
def _block_gru_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def grad(h0: Any, w_g: Any, w_c: Any, hs: Any, ws: Any, rhs: Any, dhs: Any, seq: Any = None) -> tuple:
        t_steps, b, n = hs.shape
        dt = hs.dtype
        lengths = _Lengths(xp, seq, b, op, batch_last=True) if seq is not None and t_steps else None
        dp = xp.empty((t_steps, b, 3 * n), dtype=dt)
        dh_next = xp.zeros((n, b), dtype=dt)
        if t_steps == 0:
            return dp, xp.zeros_like(h0), xp.zeros_like(w_g), xp.zeros_like(w_c)
        one = dt.type(1)
        dh, drh, tmp = (xp.empty((n, b), dtype=dt) for _ in range(3))
        d = xp.empty((3 * n, b), dtype=dt)            # this step's [dr; du; dc], pre-activation
        dr, du, dc = d[:n], d[n:2 * n], d[2 * n:]
        dh_in, dp_out = _transpose_step(xp, dhs, dh), _transpose_step(xp, d, dp)
        back_c = _step_product(xp, w_c, _every_step(xp, dc, t_steps), _every_step(xp, drh, t_steps))
        back_g = _step_product(xp, w_g, _every_step(xp, d[:2 * n], t_steps), _every_step(xp, dh_next, t_steps))
        fused = {k: FUSED_STEPS.get(k) for k in ("gru_grad_cu", "gru_grad_r", "gru_grad_h")}
        if _fused_step(xp, "gru_grad_cu", dt, lengths is not None) is None or None in fused.values():
            fused = None
        for t in range(t_steps - 1, -1, -1):
            a = ws[t]
            r, u, c, h_prev = a[:n], a[n:2 * n], a[2 * n:3 * n], a[3 * n:]
            dh_in(t)
            dh += dh_next
            live = lengths.live(t) if lengths is not None else None
            if live is not None and live[0] == 0:  # the state passed through this step unchanged
                d[...] = 0
                dh_next[...] = dh
                dp_out(t)
                continue
            if fused is not None:  # the same passes, one device kernel around each product
                fused["gru_grad_cu"](u, c, h_prev, dh, dc, du)
                back_c(t)
                fused["gru_grad_r"](r, h_prev, drh, dr)
                back_g(t)
                fused["gru_grad_h"](r, u, drh, dh, dh_next)
                dp_out(t)
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
            back_c(t)                                 # drh = W_ch . dc
            xp.multiply(drh, h_prev, out=dr)
            xp.multiply(r, r, out=tmp)
            xp.subtract(r, tmp, out=tmp)
            dr *= tmp
            # h_prev's: the gates' product, r * h's other factor, and u * h directly
            back_g(t)                                 # dh_next = W_gh . [dr; du]
            drh *= r
            dh_next += drh
            xp.multiply(dh, u, out=tmp)
            dh_next += tmp
            if live is not None:  # columns past their lengths: no gradient inside, dh passes through
                keep = live[1]
                d *= keep
                xp.copyto(dh_next, dh, where=~keep)
            dp_out(t)
        # both recurrent kernels' gradients as one product each over all steps
        h_prev = xp.concatenate([h0[None], hs[:-1]], axis=0).reshape(t_steps * b, n)
        dpf = dp.reshape(t_steps * b, 3 * n)
        dw_g = xp.matmul(h_prev.T, dpf[:, :2 * n])
        dw_c = xp.matmul(rhs.reshape(t_steps * b, n).T, dpf[:, 2 * n:])
        return dp, xp.ascontiguousarray(dh_next.T), dw_g, dw_c
    return grad
