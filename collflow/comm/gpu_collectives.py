"""GPU kernels of the collectives that combine variables and gradient buckets on the device.

NCCL when every rank has its own GPU, else staged through host memory and the MPI path.
They live in the comm layer (they need the communicator); kernels/gpu_kernels.py holds the
device-only kernels.  Registered only when CuPy imports (cupy is an optional extra).
"""
from __future__ import annotations

from typing import Any

try:
    import cupy as cp
except ImportError:  # no GPU support installed: nothing to register
    cp = None

from ..kernels.registry import KernelContext, register_kernel
from .base import CompletedHandle
from .fusion import Averaging, _contribution, communicator_for
from .nccl import nccl_for

__all__: list = []


def _register() -> None:
    @register_kernel("AverageVariables", device="GPU", is_async=True)
    def _average_variables_gpu(op: Any, ctx: KernelContext) -> Any:
        """Variables on the GPU replaced by their average over the ranks: packed into one buffer,
        one NCCL all-reduce (or staged through host memory and the MPI path), written back."""
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
        comm = communicator_for(ctx)
        nc = nccl_for(comm)
        key = op.attrs["key"]
        average = op.attrs["average"]
        dtypes = [t.dtype.np for t in op.outputs]
        # half-precision gradients are summed in float32: a sum of ranks' halves can overflow
        wide = cp.result_type(*dtypes, cp.float32)
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


if cp is not None:
    _register()
