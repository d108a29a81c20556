"""CuPy-specific kernels where fusing pays: each overrides the generic `xp` kernel on GPU.

Imported by kernels/gpu.py only when CuPy sees a GPU.  Each kernel computes exactly what
its generic counterpart computes (tests/test_gpu.py compares them on random inputs).
"""
from __future__ import annotations

from typing import Any

import cupy as cp

from .registry import register_kernel, KernelContext

_relu = cp.ElementwiseKernel("T x", "T y", "y = x > 0 ? x : (T)0", "collflow_relu")
_relu_grad = cp.ElementwiseKernel("T g, T y", "T dx", "dx = y > 0 ? g : (T)0", "collflow_relu_grad")

# sparse softmax cross-entropy: loss and backprop from one pass over the logits
_xent_rows = cp.RawKernel(r"""
extern "C" __global__ void collflow_xent(const float* logits, const int* labels, float* loss, float* back,
                                         int n, int c) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    const float* l = logits + (long long)row * c;
    float m = l[0];
    for (int j = 1; j < c; ++j) m = fmaxf(m, l[j]);
    float s = 0.f;
    for (int j = 0; j < c; ++j) s += expf(l[j] - m);
    float lse = m + logf(s);
    int y = labels[row];
    loss[row] = lse - l[y];
    float* b = back + (long long)row * c;
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


@register_kernel("Relu", device="GPU")
def _relu_k(op: Any, ctx: KernelContext) -> Any:
    return lambda x: _relu(x)


@register_kernel("ReluGrad", device="GPU")
def _relu_grad_k(op: Any, ctx: KernelContext) -> Any:
    return lambda g, y: _relu_grad(g, y)


@register_kernel("SparseSoftmaxCrossEntropyWithLogits", device="GPU")
def _xent_k(op: Any, ctx: KernelContext) -> Any:
    from .nn_kernels import _check_labels  # the same label validation as on the CPU
    generic = None
    if op.inputs[0].dtype.name != "float32":
        from .registry import _KERNELS
        generic = _KERNELS[("SparseSoftmaxCrossEntropyWithLogits", None)][0](op, ctx)

    def xent(logits: Any, labels: Any) -> tuple:
        if generic is not None:
            return generic(logits, labels)
        c = logits.shape[-1]
        _check_labels(cp, labels, c, op)
        loss, back = xent_float32(logits.reshape(-1, c), labels.reshape(-1))
        return loss.reshape(labels.shape), back.reshape(logits.shape)
    return xent


def xent_float32(logits: Any, labels: Any) -> tuple:
    """(loss per row, backprop) for float32 logits [n, c] and int labels [n]."""
    n, c = logits.shape
    logits = cp.ascontiguousarray(logits)
    lab = cp.ascontiguousarray(labels.astype(cp.int32, copy=False))
    loss = cp.empty((n,), dtype=cp.float32)
    back = cp.empty((n, c), dtype=cp.float32)
    threads = 128
    _xent_rows(((n + threads - 1) // threads,), (threads,), (logits, lab, loss, back, cp.int32(n), cp.int32(c)))
    return loss, back


def adam_update(var: Any, m: Any, v: Any, g: Any, lr: float, b1: float, b2: float, eps: float) -> None:
    """In-place Adam step with bias-corrected lr already folded into `lr`."""
    dt = var.dtype.type
    _adam(g, dt(lr), dt(b1), dt(b2), dt(eps), var, m, v)


@register_kernel("AverageVariables", device="GPU", is_async=True)
def _average_variables_gpu(op: Any, ctx: KernelContext) -> Any:
    """Variables on the GPU replaced by their average over the ranks: packed into one buffer,
    one NCCL all-reduce (or staged through host memory and the MPI path), written back."""
    from ..comm.fusion import Averaging, communicator_for
    from ..comm.nccl import nccl_for
    from ..comm.base import CompletedHandle
    comm = communicator_for(ctx)
    nc = nccl_for(comm)
    key = op.attrs["key"]

    def run(*states: Any) -> Any:
        n = comm.size
        if n == 1:
            return CompletedHandle(None)
        arrays = []
        for st in states:
            with st.lock:
                arrays.append(st.writable(op))
        buf = cp.concatenate([a.reshape(-1) for a in arrays])
        # busy until the average is written back: accesses wait (and arrays stay the values)
        avg = Averaging(states)

        def back(summed: Any) -> None:
            summed /= n  # true division
            o = 0
            for a in arrays:
                a[...] = summed[o:o + a.size].reshape(a.shape)
                o += a.size
        try:
            if nc is not None:
                return avg.start(nc.allreduce_async(buf, "sum", name=key).then(back))
            return avg.start(comm.allreduce_async(cp.asnumpy(buf), "sum", name=key).then(
                lambda s: back(cp.asarray(s))))
        except BaseException:
            avg.fail_to_start()
            raise
    return run


@register_kernel("FusedAllReduce", device="GPU", is_async=True)
def _fused_all_reduce_gpu(op: Any, ctx: KernelContext) -> Any:
    """A gradient bucket on the GPU: one NCCL group when every rank has its own GPU, else
    staged through host memory and the MPI path (with the same contribution flag)."""
    from ..comm.fusion import communicator_for, _contribution
    from ..comm.nccl import nccl_for
    comm = communicator_for(ctx)
    nc = nccl_for(comm)
    key = op.attrs["key"]
    average = op.attrs["average"]
    dtypes = [t.dtype.np for t in op.outputs]
    wide = cp.result_type(*dtypes)
    nout = len(op.outputs)

    def unpack(summed: Any, arrays: Any) -> Any:
        if average:
            body = summed[:-1]
            body /= cp.maximum(summed[-1:], 1)  # the contributor count, read on the device
        outs, o = [], 0
        for a, dt in zip(arrays, dtypes):
            v = summed[o:o + a.size].reshape(a.shape)
            outs.append(v if v.dtype == dt else v.astype(dt))
            o += a.size
        return outs[0] if nout == 1 else tuple(outs)

    def run(*arrays: Any) -> Any:
        flag = _contribution(ctx)
        buf = cp.concatenate([a.reshape(-1).astype(wide, copy=False) for a in arrays]
                             + [cp.asarray([flag], dtype=wide)])
        if flag == 0.0:
            buf[:-1] = 0
        if nc is not None:
            return nc.allreduce_async(buf, "sum", name=key).then(lambda s: unpack(s, arrays))
        host = cp.asnumpy(buf)  # pinned staging is left to CuPy's allocator
        return comm.allreduce_async(host, "sum", name=key).then(lambda s: unpack(cp.asarray(s), arrays))
    return run
