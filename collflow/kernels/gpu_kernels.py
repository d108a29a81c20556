"""CuPy-specific kernels where fusing pays: each overrides the generic `xp` kernel on GPU.

Imported by kernels/gpu.py only when CuPy sees a GPU.  Each kernel computes exactly what
its generic counterpart computes (tests/test_gpu.py compares them on random inputs).
"""
from __future__ import annotations

from typing import Any

import cupy as cp

from . import rnn_kernels
from .registry import register_kernel, KernelContext

_relu = cp.ElementwiseKernel("T x", "T y", "y = x > 0 ? x : (T)0", "collflow_relu")
_relu_grad = cp.ElementwiseKernel("T g, T y", "T dx", "dx = y > 0 ? g : (T)0", "collflow_relu_grad")

# sparse softmax cross-entropy: loss and backprop from one pass over the logits.  A label out
# of [0, c) gives NaN in its loss and backprop row, as TensorFlow 1.x's GPU kernel does (the
# CPU kernel raises): checking on the host would synchronise the device every step.
_xent_rows = cp.RawKernel(r"""
extern "C" __global__ void collflow_xent(const float* logits, const long long* labels, float* loss,
                                         float* back, int n, int c) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    const float* l = logits + (long long)row * c;
    float* b = back + (long long)row * c;
    long long y = labels[row];
    if (y < 0 || y >= c) {
        float nan = __int_as_float(0x7fc00000);
        loss[row] = nan;
        for (int j = 0; j < c; ++j) b[j] = nan;
        return;
    }
    float m = l[0];
    for (int j = 1; j < c; ++j) m = fmaxf(m, l[j]);
    float s = 0.f;
    for (int j = 0; j < c; ++j) s += expf(l[j] - m);
    float lse = m + logf(s);
    loss[row] = lse - l[y];
    for (int j = 0; j < c; ++j) b[j] = expf(l[j] - lse) - (j == y ? 1.f : 0.f);
}
""", "collflow_xent")

_adam = cp.ElementwiseKernel(
    "T g, T lr, T b1, T b2, T eps", "T var, T m, T v",
    """
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    var -= lr * m / (sqrt(v) + eps);
    """, "collflow_adam")


# BlockLSTM's elementwise step, one launch instead of a dozen (kernels/rnn_kernels.py
# FUSED_STEPS): the gates' pre-activations in (i, f, o halved, so sigmoid(z) = tanh(z/2)/2 + 1/2,
# the generic passes' form), activated out; c = f c_prev + i j, h = o tanh(c)
_lstm_step = cp.ElementwiseKernel(
    "T c_prev", "T gj, T gi, T gf, T go, T c, T h",  # `i` is CuPy's own index variable
    """
    const T half = 0.5;
    T jj = tanh(gj);
    T ii = tanh(gi) * half + half;
    T ff = tanh(gf) * half + half;
    T oo = tanh(go) * half + half;
    gj = jj; gi = ii; gf = ff; go = oo;
    T cc = ff * c_prev + ii * jj;
    c = cc;
    h = oo * tanh(cc);
    """, "collflow_lstm_step")

# its gradient, as _cell_backward's plain case: the gates' pre-activation gradients and dc_prev
_lstm_step_grad = cp.ElementwiseKernel(
    "T gj, T gi, T gf, T go, T c_prev, T c, T dh, T dc", "T dj, T di, T df, T d_o, T dc_prev",
    """
    const T one = 1;
    T tc = tanh(c);
    T dct = dh * go * (one - tc * tc) + dc;
    d_o = dh * tc * go * (one - go);
    dj = dct * gi * (one - gj * gj);
    di = dct * gj * gi * (one - gi);
    df = dct * c_prev * gf * (one - gf);
    dc_prev = dct * gf;
    """, "collflow_lstm_step_grad")


def _lstm_fused(j: Any, i: Any, f: Any, o: Any, c_prev: Any, c: Any, h: Any) -> None:
    _lstm_step(c_prev, j, i, f, o, c, h)


def _lstm_fused_grad(j: Any, i: Any, f: Any, o: Any, c_prev: Any, c: Any, dh: Any, dc: Any, dj: Any, di: Any,
                     df: Any, do: Any, dc_prev: Any) -> None:
    _lstm_step_grad(j, i, f, o, c_prev, c, dh, dc, dj, di, df, do, dc_prev)


# BlockGRU's elementwise passes around its two products a step, one launch each (sigmoid in
# the generic passes' form, 0.5 tanh(x / 2) + 0.5)
_gru_gates = cp.ElementwiseKernel(
    "T h", "T gr, T gu, T rh",
    """
    const T half = 0.5;
    T r = tanh(gr * half) * half + half;
    gr = r;
    gu = tanh(gu * half) * half + half;
    rh = r * h;
    """, "collflow_gru_gates")
_gru_out = cp.ElementwiseKernel(
    "T gu, T h", "T gc, T h_t",
    """
    T c = tanh(gc);
    gc = c;
    h_t = (h - c) * gu + c;
    """, "collflow_gru_out")
_gru_grad_cu = cp.ElementwiseKernel(
    "T gu, T gc, T h_prev, T dh", "T dc, T du",
    """
    const T one = 1;
    dc = (one - gu) * dh * (one - gc * gc);
    du = (h_prev - gc) * dh * (gu - gu * gu);
    """, "collflow_gru_grad_cu")
_gru_grad_r = cp.ElementwiseKernel(
    "T gr, T h_prev, T drh", "T dr",
    "dr = drh * h_prev * (gr - gr * gr);", "collflow_gru_grad_r")
_gru_grad_h = cp.ElementwiseKernel(
    "T gr, T gu, T drh, T dh", "T dh_next",
    "dh_next = dh_next + drh * gr + dh * gu;", "collflow_gru_grad_h")

rnn_kernels.FUSED_STEPS.update(
    lstm=_lstm_fused, lstm_grad=_lstm_fused_grad,
    gru_gates=lambda r, u, h, rh: _gru_gates(h, r, u, rh),
    gru_out=lambda c, u, h, h_t: _gru_out(u, h, c, h_t),
    gru_grad_cu=lambda u, c, h_prev, dh, dc, du: _gru_grad_cu(u, c, h_prev, dh, dc, du),
    gru_grad_r=lambda r, h_prev, drh, dr: _gru_grad_r(r, h_prev, drh, dr),
    gru_grad_h=lambda r, u, drh, dh, dh_next: _gru_grad_h(r, u, drh, dh, dh_next))


@register_kernel("Relu", device="GPU")
def _relu_k(op: Any, ctx: KernelContext) -> Any:
    return lambda x: _relu(x)


@register_kernel("ReluGrad", device="GPU")
def _relu_grad_k(op: Any, ctx: KernelContext) -> Any:
    return lambda g, y: _relu_grad(g, y)


@register_kernel("BiasAddGrad", device="GPU")
def _bias_add_grad_k(op: Any, ctx: KernelContext) -> Any:
    """The bias gradient (g summed over every axis but the channels) as one GEMV, ones @ g.

    CuPy's axis-0 sum of a tall [rows, channels] matrix gives each channel one block: with 16
    or 32 channels of a conv layer the GPU was nearly idle (measured on an H100: 0.43 ms per
    call, 1.7 ms of a 3.6 ms CNN step); cuBLAS reads the matrix once at full bandwidth.
    float16 keeps CuPy's sum, which accumulates in float32."""
    ones: dict = {}
    matmul = ctx.xp.matmul  # capture-aware (gpu_blas)

    def bias_add_grad(g: Any) -> Any:
        if not g.size:  # nothing to add (and no (-1, 0) view of an empty g), as the generic kernel
            return cp.zeros(g.shape[-1:], g.dtype)
        g2 = g.reshape(-1, g.shape[-1])
        if g2.dtype not in (cp.float32, cp.float64):
            return g2.sum(axis=0)
        key = (g2.shape[0], g2.dtype)
        o = ones.get(key)
        if o is None:
            o = ones[key] = cp.ones(g2.shape[0], dtype=g2.dtype)
        return matmul(o, g2)
    return bias_add_grad


@register_kernel("SparseSoftmaxCrossEntropyWithLogits", device="GPU")
def _xent_k(op: Any, ctx: KernelContext) -> Any:
    generic = None
    if op.inputs[0].dtype.name != "float32":
        from .registry import _KERNELS
        generic = _KERNELS[("SparseSoftmaxCrossEntropyWithLogits", None)][0](op, ctx)

    def xent(logits: Any, labels: Any) -> tuple:
        if generic is not None:
            return generic(logits, labels)
        c = logits.shape[-1]
        loss, back = xent_float32(logits.reshape(-1, c), labels.reshape(-1))
        return loss.reshape(labels.shape), back.reshape(logits.shape)
    return xent


def xent_float32(logits: Any, labels: Any) -> tuple:
    """(loss per row, backprop) for float32 logits [n, c] and int labels [n]."""
    n, c = logits.shape
    logits = cp.ascontiguousarray(logits)
    lab = cp.ascontiguousarray(labels.astype(cp.int64, copy=False))
    loss = cp.empty((n,), dtype=cp.float32)
    back = cp.empty((n, c), dtype=cp.float32)
    threads = 128
    _xent_rows(((n + threads - 1) // threads,), (threads,), (logits, lab, loss, back, cp.int32(n), cp.int32(c)))
    return loss, back


def adam_update(var: Any, m: Any, v: Any, g: Any, lr: float, b1: float, b2: float, eps: float) -> None:
    """In-place Adam step with bias-corrected lr already folded into `lr`."""
    dt = var.dtype.type
    _adam(g, dt(lr), dt(b1), dt(b2), dt(eps), var, m, v)
