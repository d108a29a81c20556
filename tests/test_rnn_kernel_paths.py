"""BlockLSTM's and BlockGRU's kernel paths give the same numbers: NumPy's BLAS step calls, np.matmul steps
(where NumPy's BLAS cannot be called directly), and the path a device array library takes
(`xp` not NumPy, no direct BLAS: what runs on CuPy), run here on the CPU through a stand-in
for the module.
Forward outputs and every gradient, with peepholes, a cell clip, a projection and sequence
lengths."""
import numpy as np
import pytest

from collflow.kernels import blas, rnn_kernels


class _Op:
    def __init__(self, type_, **attrs):
        self.type, self.attrs = type_, attrs


class _Ctx:
    def __init__(self, xp):
        self.xp = xp


class _NotNumpy:
    """NumPy under another name: kernels see `xp is not np` and take the device path."""

    def __getattr__(self, name):
        return getattr(np, name)


def _run(xp, peephole, clip, lengths, proj, rng_seed=0):
    rng = np.random.default_rng(rng_seed)
    t, b, d, n = 5, 4, 3, 6
    hd = 4 if proj else n
    x = rng.normal(size=(t, b, d))
    h0, c0 = rng.normal(size=(b, hd)), rng.normal(size=(b, n)) * 2
    w, bias = rng.uniform(-0.6, 0.6, size=(d + hd, 4 * n)), rng.uniform(-0.5, 0.5, size=4 * n)
    peep = [rng.uniform(-0.7, 0.7, size=n) for _ in range(3)] if peephole else []
    pw = [rng.uniform(-0.7, 0.7, size=(n, hd))] if proj else []
    seq = [np.array(lengths, np.int32)] if lengths is not None else []
    attrs = dict(forget_bias=0.5, use_peephole=peephole, cell_clip=-1.0 if clip is None else clip,
                 with_proj=proj, proj_clip=0.3 if proj else -1.0)
    fwd = rnn_kernels._block_lstm(_Op("BlockLSTM", **attrs), _Ctx(xp))
    hs, cs, acts = fwd(x, h0, c0, w, bias, *peep, *pw, *seq)
    dhs, dcs = rng.normal(size=hs.shape), rng.normal(size=cs.shape)
    dacts = rng.normal(size=acts.shape)
    bwd = rnn_kernels._block_lstm_grad(_Op("BlockLSTMGrad", with_dact=True, with_seq=bool(seq), **attrs), _Ctx(xp))
    grads = bwd(x, h0, c0, w, hs, cs, acts, dhs, dcs, dacts, *peep, *pw, *seq)
    return [hs, cs, acts] + list(grads)


@pytest.mark.parametrize("peephole", [False, True])
@pytest.mark.parametrize("clip", [None, 0.7])
@pytest.mark.parametrize("lengths", [None, [5, 2, 0, 3]])
@pytest.mark.parametrize("proj", [False, True], ids=["", "projection"])
def test_block_lstm_paths_agree(peephole, clip, lengths, proj, monkeypatch):
    args = (peephole, clip, lengths, proj)
    numpy_blas = _run(np, *args)                              # one BLAS call a product a step
    device = _run(_NotNumpy(), *args)                         # xp not NumPy: no BLAS calls
    with monkeypatch.context() as m:
        m.setattr(blas, "stepper", lambda *a, **k: None)      # every product through np.matmul
        m.setattr(blas, "gemm", lambda *a, **k: False)
        m.setattr(blas, "transposer", lambda *a, **k: None)   # every layout change a NumPy copy
        numpy_matmul = _run(np, *args)
    runs = [device, numpy_matmul]
    assert len(numpy_blas) == 3 + 5 + (3 if peephole else 0) + int(proj)
    for other in runs:
        for a, b in zip(numpy_blas, other):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def _run_gru(xp, lengths, dtype=np.float64):
    rng = np.random.default_rng(1)
    t, b, n = 5, 4, 6
    p = rng.normal(size=(t, b, 3 * n)).astype(dtype)
    h0 = rng.normal(size=(b, n)).astype(dtype)
    w_g, w_c = rng.uniform(-0.6, 0.6, size=(n, 2 * n)).astype(dtype), rng.uniform(-0.6, 0.6, size=(n, n)).astype(dtype)
    seq = [np.array(lengths, np.int32)] if lengths is not None else []
    hs, ws, rhs = rnn_kernels._block_gru(_Op("BlockGRU"), _Ctx(xp))(p, h0, w_g, w_c, *seq)
    dhs = rng.normal(size=hs.shape).astype(dtype)
    grads = rnn_kernels._block_gru_grad(_Op("BlockGRUGrad"), _Ctx(xp))(h0, w_g, w_c, hs, ws, rhs, dhs, *seq)
    return [hs, ws, rhs] + list(grads)


@pytest.mark.parametrize("lengths", [None, [5, 2, 0, 3], [3, 2, 0, 1]])  # the last: steps where all have ended
def test_block_gru_paths_agree(lengths, monkeypatch):
    """BlockGRU and its gradient: BLAS step calls and omatcopy, the device path, np.matmul
    and NumPy's copies give the same numbers; the kernel's own h and r * h agree with its
    workspace's h rows."""
    numpy_blas = _run_gru(np, lengths)
    device = _run_gru(_NotNumpy(), lengths)
    with monkeypatch.context() as m:
        m.setattr(blas, "stepper", lambda *a, **k: None)
        m.setattr(blas, "transposer", lambda *a, **k: None)
        numpy_matmul = _run_gru(np, lengths)
    hs, ws, rhs = numpy_blas[:3]
    n = hs.shape[2]
    np.testing.assert_array_equal(ws[1:, 3 * n:].transpose(0, 2, 1), hs)  # h_t is the next step's h_prev
    np.testing.assert_allclose(rhs, ws[:-1, :n].transpose(0, 2, 1) * ws[:-1, 3 * n:].transpose(0, 2, 1),
                               rtol=1e-15)
    assert len(numpy_blas) == 3 + 4
    for other in (device, numpy_matmul):
        for a, b in zip(numpy_blas, other):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def _np_lstm_step(gj, gi, gf, go, c_prev, c, h):
    """NumPy twin of kernels/gpu_kernels.py's fused CUDA step (the same formulas)."""
    jj, ii, ff, oo = np.tanh(gj), np.tanh(gi) * 0.5 + 0.5, np.tanh(gf) * 0.5 + 0.5, np.tanh(go) * 0.5 + 0.5
    gj[...], gi[...], gf[...], go[...] = jj, ii, ff, oo
    c[...] = ff * c_prev + ii * jj
    h[...] = oo * np.tanh(c)


def _np_lstm_step_grad(gj, gi, gf, go, c_prev, c, dh, dc, dj, di, df, do, dc_prev):
    tc = np.tanh(c)
    dct = dh * go * (1 - tc * tc) + dc
    do[...] = dh * tc * go * (1 - go)
    dj[...] = dct * gi * (1 - gj * gj)
    di[...] = dct * gj * gi * (1 - gi)
    df[...] = dct * c_prev * gf * (1 - gf)
    dc_prev[...] = dct * gf


@pytest.mark.parametrize("dc_zero", [True, False])
def test_block_lstm_device_fused_steps_match_the_generic_passes(dc_zero, monkeypatch):
    """A device's fused elementwise step (FUSED_STEPS, CUDA kernels on a GPU) gets the views
    the generic passes work on: run through NumPy twins of those kernels on the device path,
    BlockLSTM and its gradient equal the NumPy path's; the cases the fused step does not
    cover (here sequence_length) keep the generic passes."""
    rng = np.random.default_rng(5)
    t, b, d, n = 6, 3, 4, 5
    x = rng.normal(size=(t, b, d))
    h0, c0 = rng.normal(size=(b, n)), rng.normal(size=(b, n))
    w, bias = rng.uniform(-0.6, 0.6, size=(d + n, 4 * n)), rng.uniform(-0.5, 0.5, size=4 * n)
    attrs = dict(forget_bias=1.0, use_peephole=False, cell_clip=-1.0, with_proj=False, proj_clip=-1.0)

    def run(xp, *seq):
        hs, cs, ws = rnn_kernels._block_lstm(_Op("BlockLSTM", **attrs), _Ctx(xp))(x, h0, c0, w, bias, *seq)
        dhs, dcs = np.cos(np.arange(hs.size)).reshape(hs.shape), np.sin(np.arange(cs.size)).reshape(cs.shape)
        op = _Op("BlockLSTMGrad", dc_zero=dc_zero, with_dact=False, with_seq=bool(seq), **attrs)
        grads = rnn_kernels._block_lstm_grad(op, _Ctx(xp))(x, h0, c0, w, hs, cs, ws, dhs,
                                                          np.zeros_like(cs) if dc_zero else dcs, *seq)
        return [hs, cs, ws] + list(grads)

    want = run(np)
    calls = []
    monkeypatch.setitem(rnn_kernels.FUSED_STEPS, "lstm", lambda *a: calls.append("f") or _np_lstm_step(*a))
    monkeypatch.setitem(rnn_kernels.FUSED_STEPS, "lstm_grad",
                        lambda *a: calls.append("b") or _np_lstm_step_grad(*a))
    got = run(_NotNumpy())
    assert calls == ["f"] * t + ["b"] * t
    for a, b_ in zip(want, got):
        np.testing.assert_allclose(a, b_, rtol=1e-12, atol=1e-12)
    calls.clear()
    lengths = np.array([6, 2, 4], np.int32)
    for a, b_ in zip(run(np, lengths), run(_NotNumpy(), lengths)):
        np.testing.assert_allclose(a, b_, rtol=1e-12, atol=1e-12)
    assert calls == []


def _np_gru_twins(calls):
    """NumPy twins of kernels/gpu_kernels.py's fused GRU kernels (the same formulas), counting."""
    def gates(r, u, h, rh):
        calls.append("gates")
        r[...] = np.tanh(r * 0.5) * 0.5 + 0.5
        u[...] = np.tanh(u * 0.5) * 0.5 + 0.5
        rh[...] = r * h

    def out(c, u, h, h_t):
        calls.append("out")
        c[...] = np.tanh(c)
        h_t[...] = (h - c) * u + c

    def grad_cu(u, c, h_prev, dh, dc, du):
        calls.append("cu")
        dc[...] = (1 - u) * dh * (1 - c * c)
        du[...] = (h_prev - c) * dh * (u - u * u)

    def grad_r(r, h_prev, drh, dr):
        calls.append("r")
        dr[...] = drh * h_prev * (r - r * r)

    def grad_h(r, u, drh, dh, dh_next):
        calls.append("h")
        dh_next[...] = dh_next + drh * r + dh * u
    return dict(gru_gates=gates, gru_out=out, gru_grad_cu=grad_cu, gru_grad_r=grad_r, gru_grad_h=grad_h)


def test_block_gru_device_fused_steps_match_the_generic_passes(monkeypatch):
    """As for the LSTM: BlockGRU's fused device passes (NumPy twins here) get the right views;
    with sequence_length the generic passes run."""
    calls = []
    want = _run_gru(np, None)
    for k, fn in _np_gru_twins(calls).items():
        monkeypatch.setitem(rnn_kernels.FUSED_STEPS, k, fn)
    got = _run_gru(_NotNumpy(), None)
    t = want[0].shape[0]
    assert calls == ["gates", "out"] * t + ["cu", "r", "h"] * t
    for a, b in zip(want, got):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    calls.clear()
    for a, b in zip(_run_gru(np, [5, 2, 0, 3]), _run_gru(_NotNumpy(), [5, 2, 0, 3])):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert calls == []
