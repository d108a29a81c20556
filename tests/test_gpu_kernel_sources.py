"""The fused CUDA kernels of kernels/gpu_kernels.py checked without a GPU: in a subprocess a
stand-in `cupy` module runs each ElementwiseKernel's C body through NumPy (statements of the
form `T x = expr;` / `x = expr;`, tanh from NumPy), so the kernels' formulas and the order
their callers pass arguments in are tested on the CPU through the recurrent kernels' device
path, against the NumPy path.  The CUDA compilation itself is left to tests/test_gpu.py."""
import os
import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent(r'''
    import sys, types
    import numpy as np

    class ElementwiseKernel:
        def __init__(self, in_params, out_params, operation, name):
            names = lambda p: [s.split()[-1] for s in p.split(",") if s.strip()]
            self.ins, self.outs, self.name = names(in_params), names(out_params), name
            stmts = []
            for st in operation.split(";"):
                st = st.strip()
                if st.startswith("const "):
                    st = st[len("const "):]
                if st.startswith("T "):
                    st = st[2:]
                if st:
                    stmts.append(st)
            self.code = "\n".join(stmts)

        def __call__(self, *args):
            assert len(args) == len(self.ins) + len(self.outs), self.name
            env = {"tanh": np.tanh, "exp": np.exp, "sqrt": np.sqrt}
            env.update(zip(self.ins, args[:len(self.ins)]))
            env.update((k, a.copy()) for k, a in zip(self.outs, args[len(self.ins):]))
            exec(self.code, env)
            for k, a in zip(self.outs, args[len(self.ins):]):
                a[...] = env[k]

    fake = types.ModuleType("cupy")
    fake.ElementwiseKernel = ElementwiseKernel
    fake.RawKernel = lambda *a, **k: None
    sys.modules["cupy"] = fake

    from collflow.kernels import gpu_kernels, rnn_kernels  # the real module, on the stand-in
    assert {"lstm", "lstm_grad", "gru_gates", "gru_out", "gru_grad_cu", "gru_grad_r",
            "gru_grad_h"} <= set(rnn_kernels.FUSED_STEPS)
    import test_rnn_kernel_paths as paths

    class Op:
        def __init__(self, type_, **attrs):
            self.type, self.attrs = type_, attrs

    class Ctx:
        def __init__(self, xp):
            self.xp = xp

    for dtype, tol in ((np.float64, 1e-12), (np.float32, 2e-6)):
        rng = np.random.default_rng(11)
        t, b, d, n = 6, 3, 4, 5
        x = rng.normal(size=(t, b, d)).astype(dtype)
        h0, c0 = rng.normal(size=(b, n)).astype(dtype), rng.normal(size=(b, n)).astype(dtype)
        w = rng.uniform(-0.6, 0.6, size=(d + n, 4 * n)).astype(dtype)
        bias = rng.uniform(-0.5, 0.5, size=4 * n).astype(dtype)
        attrs = dict(forget_bias=1.0, use_peephole=False, cell_clip=-1.0, with_proj=False, proj_clip=-1.0)
        for dc_zero in (True, False):
            outs = []
            for xp in (np, paths._NotNumpy()):
                hs, cs, ws = rnn_kernels._block_lstm(Op("BlockLSTM", **attrs), Ctx(xp))(x, h0, c0, w, bias)
                dhs = np.cos(np.arange(hs.size)).reshape(hs.shape).astype(dtype)
                dcs = np.zeros_like(cs) if dc_zero else np.sin(np.arange(cs.size)).reshape(cs.shape).astype(dtype)
                g = rnn_kernels._block_lstm_grad(Op("BlockLSTMGrad", dc_zero=dc_zero, with_dact=False, **attrs),
                                                 Ctx(xp))(x, h0, c0, w, hs, cs, ws, dhs, dcs)
                outs.append([hs, cs, ws] + list(g))
            for a, b_ in zip(*outs):
                np.testing.assert_allclose(a, b_, rtol=tol, atol=tol)
        outs = [paths._run_gru(xp, None, dtype) for xp in (np, paths._NotNumpy())]
        for a, b_ in zip(*outs):
            np.testing.assert_allclose(a, b_, rtol=tol, atol=tol)
    print("fused kernel sources: ok")
''')


def test_fused_cuda_kernel_bodies_compute_the_generic_passes():
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(here), here, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120, env=env,
                       cwd=here)
    assert r.returncode == 0 and "fused kernel sources: ok" in r.stdout, r.stdout[-2000:] + r.stderr[-4000:]
