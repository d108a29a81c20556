"""Matrix products that a CUDA graph can capture, and the `xp` namespace GPU kernels see.

CuPy refuses every cuBLAS call while a stream is being captured (its wrappers call
cublasSetStream, which it guards with "calling cuBLAS API during stream capture is currently
unsupported"), although cuBLAS itself supports capture for GEMMs in host pointer mode with a
workspace set by the caller.  So a static training step could not become a CUDA graph: its
first MatMul failed.  This module keeps one cuBLAS handle of collflow's own, loaded from the
library CuPy already loaded, with a fixed workspace, and routes `matmul`/`dot` through it
while `capturing()` is on; outside a capture they are CuPy's own functions, unchanged.

`namespace(cupy)` is the module GPU kernels get as `ctx.xp`: CuPy with `matmul` and `dot`
replaced by the capture-aware versions, so every GEMM site (MatMul, the convolutions' im2col
products, BiasAddGrad's GEMV, L2Loss's dot) is covered without touching the kernels.
"""
from __future__ import annotations

import ctypes
import types
from typing import Any, Optional

import numpy as np

__all__ = ["namespace", "capturing", "set_capturing", "gemm"]

_CAPTURING = [False]
_WORKSPACE_BYTES = 32 << 20  # cuBLAS's own advice for Hopper is 32 MiB
_OP_N, _OP_T = 0, 1
_lib: dict = {}


def capturing() -> bool:
    """Whether a CUDA-graph capture of collflow's kernels is under way in this process."""
    return _CAPTURING[0]


def set_capturing(on: bool) -> None:
    _CAPTURING[0] = bool(on)


def _cublas(cp: Any) -> dict:
    """The cuBLAS library CuPy loaded, a handle of collflow's own and its workspace (once)."""
    if _lib:
        return _lib
    import cupy_backends.cuda.libs.cublas  # noqa: F401  (makes CuPy load libcublas)
    path = None
    with open("/proc/self/maps") as f:
        for line in f:
            name = line.rsplit("/", 1)[-1].strip()
            if name.startswith("libcublas.so"):
                path = line[line.index("/"):].strip()
                break
    if path is None:
        raise RuntimeError("collflow's capturable GEMM: CuPy's libcublas is not loaded in this process")
    lib = ctypes.CDLL(path)
    handle = ctypes.c_void_p()
    _check(lib.cublasCreate_v2(ctypes.byref(handle)), "cublasCreate")
    ws = cp.empty(_WORKSPACE_BYTES, dtype=cp.uint8)
    _check(lib.cublasSetWorkspace_v2(handle, ctypes.c_void_p(ws.data.ptr), ctypes.c_size_t(ws.nbytes)),
           "cublasSetWorkspace")
    for n in ("cublasSgemm_v2", "cublasDgemm_v2", "cublasCgemm_v2", "cublasZgemm_v2"):
        getattr(lib, n).restype = ctypes.c_int
    _lib.update(lib=lib, handle=handle, workspace=ws, path=path)
    return _lib


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"{what} failed with cuBLAS status {status}")


def _operand(cp: Any, x: Any) -> tuple:
    """(array, op, ld) of a 2-D array as cuBLAS's column-major operand of its transpose."""
    if x.flags.c_contiguous:
        return x, _OP_N, max(1, x.shape[1])
    if x.flags.f_contiguous:  # a transposed view: cuBLAS reads it with its transpose flag
        return x, _OP_T, max(1, x.shape[0])
    x = cp.ascontiguousarray(x)
    return x, _OP_N, max(1, x.shape[1])


def gemm_operands(xp: Any, a: Any, b: Any) -> tuple:
    """The column-major GEMM's operands for row-major C = a @ b: ((b, op, ld), (a, op, ld)).
    Row-major C [m, n] is column-major C^T = b^T a^T, so b's buffer comes first, and the
    call is gemm(op_b, op_a, n, m, k, b, ld_b, a, ld_a, C, n)."""
    return _operand(xp, b), _operand(xp, a)


_GEMMS = {"float32": ("cublasSgemm_v2", ctypes.c_float),
          "float64": ("cublasDgemm_v2", ctypes.c_double),
          "complex64": ("cublasCgemm_v2", ctypes.c_float * 2),
          "complex128": ("cublasZgemm_v2", ctypes.c_double * 2)}


def _scalar(ctype: Any, v: float) -> Any:
    return ctype(v, 0.0) if issubclass(ctype, ctypes.Array) else ctype(v)


def gemm(cp: Any, a: Any, b: Any, out: Optional[Any] = None) -> Any:
    """a @ b for 2-D a [m, k], b [k, n] of one BLAS dtype, on the current stream, through
    collflow's cuBLAS handle (capturable); into `out` (C-contiguous [m, n]) if given."""
    name, ctype = _GEMMS[a.dtype.name]
    m, k = a.shape
    n = b.shape[1]
    if out is None or not out.flags.c_contiguous:
        c = cp.empty((m, n), dtype=a.dtype)
    else:
        c = out
    if m and n:
        if k == 0:
            c.fill(0)
        else:
            lib = _cublas(cp)
            (bb, opb, ldb), (aa, opa, lda) = gemm_operands(cp, a, b)
            _check(lib["lib"].cublasSetStream_v2(lib["handle"],
                                                 ctypes.c_void_p(cp.cuda.get_current_stream().ptr)),
                   "cublasSetStream")
            one, zero = _scalar(ctype, 1.0), _scalar(ctype, 0.0)
            _check(getattr(lib["lib"], name)(
                lib["handle"], opb, opa, n, m, k, ctypes.byref(one),
                ctypes.c_void_p(bb.data.ptr), ldb, ctypes.c_void_p(aa.data.ptr), lda,
                ctypes.byref(zero), ctypes.c_void_p(c.data.ptr), max(1, n)), name)
    if out is not None and c is not out:
        out[...] = c
        return out
    return c


def _capturable_matmul(cp: Any) -> Any:
    plain = cp.matmul

    def matmul(a: Any, b: Any, out: Any = None, **kw: Any) -> Any:
        if (not _CAPTURING[0] or kw or not isinstance(a, cp.ndarray) or not isinstance(b, cp.ndarray)
                or a.dtype != b.dtype or a.dtype.name not in _GEMMS or a.ndim == 0 or b.ndim == 0):
            return plain(a, b, out=out, **kw) if out is not None else plain(a, b, **kw)
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        if a2.ndim == 2 and b2.ndim == 2:
            if a2.shape[1] != b2.shape[0]:
                return plain(a, b)  # CuPy's own shape error
            shape = (() if a.ndim == 1 else (a2.shape[0],)) + (() if b.ndim == 1 else (b2.shape[1],))
            direct = out is not None and out.flags.c_contiguous and out.size == a2.shape[0] * b2.shape[1]
            r = gemm(cp, a2, b2, out=out.reshape(a2.shape[0], b2.shape[1]) if direct else None)
            if out is not None and not direct:
                out[...] = r.reshape(shape)
                return out
            return out if direct else r.reshape(shape)
        # batched: one GEMM per broadcast batch (a capture records them all once)
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        ab = cp.broadcast_to(a2, batch + a2.shape[-2:])
        bb = cp.broadcast_to(b2, batch + b2.shape[-2:])
        res = out if out is not None and out.shape == batch + (a2.shape[-2], b2.shape[-1]) else \
            cp.empty(batch + (a2.shape[-2], b2.shape[-1]), dtype=a.dtype)
        for idx in np.ndindex(*batch):
            res[idx] = gemm(cp, ab[idx], bb[idx])
        if a.ndim == 1:
            res = res[..., 0, :]
        elif b.ndim == 1:
            res = res[..., 0]
        if out is not None and res is not out:
            out[...] = res
            return out
        return res
    return matmul


def _capturable_dot(cp: Any, matmul: Any) -> Any:
    plain = cp.dot

    def dot(a: Any, b: Any, out: Any = None) -> Any:
        if (_CAPTURING[0] and isinstance(a, cp.ndarray) and isinstance(b, cp.ndarray)
                and a.ndim in (1, 2) and b.ndim in (1, 2)):
            return matmul(a, b, out=out)
        return plain(a, b, out=out) if out is not None else plain(a, b)
    return dot


def namespace(cp: Any) -> types.ModuleType:
    """CuPy as GPU kernels see it: every name CuPy has, with capture-aware matmul and dot."""
    ns = types.ModuleType("collflow_cupy", "CuPy with collflow's capture-aware matrix products")
    ns.__dict__.update({k: v for k, v in vars(cp).items() if not k.startswith("__")})
    ns.__getattr__ = lambda name: getattr(cp, name)  # names CuPy provides lazily (PEP 562)
    ns.matmul = _capturable_matmul(cp)
    ns.dot = _capturable_dot(cp, ns.matmul)
    ns.__collflow_base__ = cp
    return ns
