"""Direct calls into the BLAS library NumPy itself is linked with (CPU only).

`np.matmul` always computes C = A @ B into a fresh (or given) array; the BLAS routine
underneath computes C = alpha * op(A) @ op(B) + beta * C.  With beta = 1 and alpha = -lr a
weight-gradient product and the SGD update it feeds are one pass: W -= lr * X^T dY without
materializing the gradient, without the separate update pass, and without the pass that
zeroes C (BLAS runs one when beta = 0).  axpy (y += a * x) and scal (y *= a) are the
optimizers' updates in one multithreaded pass without NumPy's temporary.

Only NumPy's own BLAS is used (the one its wheels bundle: scipy-openblas, found next to
NumPy and already loaded by it), never a second library: a second BLAS brings a second
thread pool that fights NumPy's for the cores.  The binding checks itself on small
problems when it loads; every function returns False (doing nothing) when no usable
library was found (another NumPy build, another platform, or COLLFLOW_NUMPY_BLAS=0) or an
argument does not qualify, and callers then compute with NumPy.
"""
from __future__ import annotations

import ctypes
import glob
import os
from typing import Any, Callable, Optional

import numpy as np

__all__ = ["gemm", "stepwise", "axpy", "scal", "available", "library_path"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112

# (symbol prefix, symbol suffix, integer type) of the scipy-openblas builds NumPy wheels ship:
# ILP64 ("64_" suffix, 64-bit sizes) in NumPy >= 2, LP64 in some older or 32-bit builds
_FLAVOURS = (("scipy_", "64_", ctypes.c_int64), ("", "64_", ctypes.c_int64), ("scipy_", "", ctypes.c_int32))

_lib_path: Optional[str] = None
_fns: dict = {}  # numpy dtype -> ctypes function (cblas_sgemm / cblas_dgemm)
_axpy: dict = {}  # numpy dtype -> (cblas_?axpy, cblas_?scal)
_max_n = 0  # the largest size or leading dimension the bound integer type holds


def _candidates() -> list:
    """Paths of NumPy's bundled BLAS: on Linux only the copy NumPy has mapped into this process
    (loading a file it did not load would bring a second library and thread pool), elsewhere
    the files in NumPy's library folders."""
    root = os.path.dirname(os.path.abspath(np.__file__))
    dirs = [os.path.join(os.path.dirname(root), "numpy.libs") + os.sep, os.path.join(root, ".dylibs") + os.sep]
    try:
        with open("/proc/self/maps") as f:
            mapped = [line.rstrip("\n").split(" ")[-1] for line in f]
    except OSError:
        return [p for d in dirs for p in sorted(glob.glob(os.path.join(d, "*openblas*"))) if os.path.isfile(p)]
    return list(dict.fromkeys(p for p in mapped
                              if "openblas" in os.path.basename(p).lower() and p.startswith(tuple(dirs))))


def _bind(path: str) -> tuple:
    lib = ctypes.CDLL(path)
    vp, ci = ctypes.c_void_p, ctypes.c_int
    for prefix, suffix, it in _FLAVOURS:
        fns, axpy = {}, {}
        for dt, ch, ct in ((np.float32, "s", ctypes.c_float), (np.float64, "d", ctypes.c_double)):
            fn, fa, fs = (getattr(lib, f"{prefix}cblas_{ch}{r}{suffix}", None) for r in ("gemm", "axpy", "scal"))
            if fn is None or fa is None or fs is None:
                break
            fn.restype = fa.restype = fs.restype = None
            fn.argtypes = [ci, ci, ci, it, it, it, ct, vp, it, vp, it, ct, vp, it]
            fa.argtypes = [it, ct, vp, it, vp, it]
            fs.argtypes = [it, ct, vp, it]
            dt = np.dtype(dt)
            fns[dt], axpy[dt] = fn, (fa, fs)
        if len(fns) == 2 and _self_test(fns, axpy):
            return fns, axpy, 2 ** (8 * ctypes.sizeof(it) - 1) - 1
    return {}, {}, 0


def _self_test(fns: dict, axpy: dict) -> bool:
    """Small products with every transpose combination and beta = 1, an axpy and a scal,
    against NumPy (a wrong integer width or symbol would show here)."""
    rng = np.random.default_rng(0)
    for dt, (fa, fs) in axpy.items():
        x = rng.standard_normal(7).astype(dt)
        y0 = rng.standard_normal(7).astype(dt)
        y = y0.copy()
        fa(7, -0.5, x.ctypes.data, 1, y.ctypes.data, 1)
        fs(7, 2.0, y.ctypes.data, 1)
        if not np.allclose(y, 2.0 * (y0 - 0.5 * x), rtol=1e-4, atol=1e-5):
            return False
    for dt, fn in fns.items():
        a = rng.standard_normal((5, 3)).astype(dt)
        b = rng.standard_normal((3, 4)).astype(dt)
        c0 = rng.standard_normal((5, 4)).astype(dt)
        for ta in (False, True):
            for tb in (False, True):
                aa = np.ascontiguousarray(a.T) if ta else a
                bb = np.ascontiguousarray(b.T) if tb else b
                wide = np.full((5, 7), 3.0, dtype=dt)  # c as a block of columns: ldc 7
                c = wide[:, 2:6]
                c[...] = c0
                _call(fn, aa, ta, bb, tb, c, 7, -0.5, 1.0)
                if (not np.allclose(c, c0 - 0.5 * (a @ b), rtol=1e-4, atol=1e-5)
                        or (wide[:, :2] != 3).any() or (wide[:, 6:] != 3).any()):
                    return False
    return True


def _load() -> None:
    global _lib_path, _fns, _axpy, _max_n
    if os.environ.get("COLLFLOW_NUMPY_BLAS", "1") == "0":
        return
    for p in _candidates():
        try:
            fns, axpy, max_n = _bind(p)
        except (OSError, AttributeError, ctypes.ArgumentError):
            continue
        if fns:
            _lib_path, _fns, _axpy, _max_n = p, fns, axpy, max_n
            return


def _operand(a: Any, trans: bool) -> Optional[tuple]:
    """(array to keep alive, leading dimension, BLAS transpose flag) for op(a) in row-major
    terms, or None when `a` is neither C- nor Fortran-contiguous (with unit element strides)."""
    if not a.flags.aligned:
        return None
    if a.flags.c_contiguous:
        return a, max(1, a.shape[1]), _TRANS if trans else _NO_TRANS
    if a.flags.f_contiguous:  # a is a C-contiguous a.T read transposed
        return a, max(1, a.shape[0]), _NO_TRANS if trans else _TRANS
    return None


def _rows_ld(c: Any) -> Optional[int]:
    """The leading dimension of a 2-D array whose rows are contiguous (a C-contiguous matrix,
    or a block of columns of one), or None."""
    isz = c.dtype.itemsize
    if c.flags.c_contiguous:
        return max(1, c.shape[1])
    s0, s1 = c.strides
    if (c.shape[1] == 1 or s1 == isz) and s0 % isz == 0 and s0 >= c.shape[1] * isz:
        return s0 // isz
    return None


def _call(fn: Any, a: Any, ta: bool, b: Any, tb: bool, c: Any, ldc: int, alpha: float, beta: float) -> bool:
    oa, ob = _operand(a, ta), _operand(b, tb)
    if oa is None or ob is None:
        return False
    m, k = (a.shape[1], a.shape[0]) if ta else a.shape
    n = b.shape[0] if tb else b.shape[1]
    fn(_ROW_MAJOR, oa[2], ob[2], m, n, k, alpha, a.ctypes.data, oa[1], b.ctypes.data, ob[1], beta,
       c.ctypes.data, ldc)
    return True


def gemm(a: Any, ta: bool, b: Any, tb: bool, c: Any, alpha: float, beta: float) -> bool:
    """c = alpha * op(a) @ op(b) + beta * c in place, in NumPy's BLAS; op transposes when t*.

    a, b, c: 2-D NumPy arrays of one dtype (float32 or float64), shapes that fit, c
    writable with contiguous rows (C-contiguous, or a block of columns of a C-contiguous
    matrix), a and b C- or Fortran-contiguous.  Returns False (and does
    nothing) when the binding is unavailable or an argument does not qualify: the caller
    then computes with NumPy.  Releases the GIL while BLAS runs (ctypes does).
    """
    fn = _fns.get(c.dtype)
    if (fn is None or type(a) is not np.ndarray or type(b) is not np.ndarray or type(c) is not np.ndarray
            or a.dtype != c.dtype or b.dtype != c.dtype or a.ndim != 2 or b.ndim != 2 or c.ndim != 2
            or not c.flags.writeable or not c.flags.aligned):
        return False
    ldc = _rows_ld(c)
    if ldc is None:
        return False
    m, k = (a.shape[1], a.shape[0]) if ta else a.shape
    kb, n = (b.shape[1], b.shape[0]) if tb else b.shape
    if k != kb or c.shape != (m, n) or max(a.size, b.size, c.size, ldc * m) > _max_n:
        return False
    if c.size == 0:
        return True
    if k == 0:  # an empty sum: BLAS may skip the call altogether, so scale here
        if beta == 0.0:
            c.fill(0)
        elif beta != 1.0:
            c *= beta
        return True
    return _call(fn, a, ta, b, tb, c, ldc, alpha, beta)


def stepwise(a: Any, b: Any, c: Any, alpha: float = 1.0, beta: float = 1.0) -> Optional[Callable[[int, int], None]]:
    """A step function for recurrences: `run(i, j)` computes c[j] = alpha * a[i] @ b + beta * c[j]
    in place, where a [steps, m, k] and c [steps', m, n] hold one matrix per step.

    For loops that run one small product per step (an LSTM's recurrent GEMM), where
    gemm()'s checks and NumPy's pointer lookups cost as much as a small product: the
    arrays are checked once here and each call is the BLAS call alone (bounds-checked
    step indices).  None when the binding is unavailable or an argument does not qualify
    (NumPy arrays of one float dtype, all C-contiguous, c writable, shapes that fit, no
    empty dimension): the caller computes with NumPy.
    """
    fn = _fns.get(c.dtype)
    if (fn is None or type(a) is not np.ndarray or type(b) is not np.ndarray or type(c) is not np.ndarray
            or a.dtype != c.dtype or b.dtype != c.dtype or a.ndim != 3 or b.ndim != 2 or c.ndim != 3
            or not (a.flags.c_contiguous and b.flags.c_contiguous and c.flags.c_contiguous)
            or not c.flags.writeable or not (a.flags.aligned and b.flags.aligned and c.flags.aligned)):
        return None
    steps_a, m, k = a.shape
    steps_c, n = c.shape[0], b.shape[1]
    if b.shape[0] != k or c.shape[1:] != (m, n) or 0 in (m, n, k) or max(a.size, b.size, c.size) > _max_n:
        return None
    isz = c.dtype.itemsize
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
    sa, sc = m * k * isz, m * n * isz

    def run(i: int, j: int) -> None:
        if not (0 <= i < steps_a and 0 <= j < steps_c):
            raise IndexError(f"step ({i}, {j}) outside ({steps_a}, {steps_c})")
        fn(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, m, n, k, alpha, pa + i * sa, k, pb, n, beta, pc + j * sc, n)
    run.arrays = (a, b, c)  # type: ignore[attr-defined]  # held while run lives: the addresses stay valid
    return run


def _flat_pair(x: Any, y: Any) -> bool:
    """x and y pair up element by element in memory: both C- or both Fortran-contiguous."""
    if y.flags.c_contiguous:
        return x.flags.c_contiguous
    return y.flags.f_contiguous and x.flags.f_contiguous


def axpy(y: Any, a: float, x: Any) -> bool:
    """y += a * x in place, in one (multithreaded) BLAS pass without a temporary.

    x, y: NumPy arrays of one shape and dtype (float32 or float64), laid out alike, y
    writable.  Returns False (and does nothing) when the binding is unavailable or an
    argument does not qualify.
    """
    fns = _axpy.get(y.dtype)
    if (fns is None or type(x) is not np.ndarray or type(y) is not np.ndarray or x.dtype != y.dtype
            or x.shape != y.shape or not y.flags.writeable or not x.flags.aligned or not y.flags.aligned
            or not _flat_pair(x, y) or y.size > _max_n):
        return False
    if y.size:
        fns[0](y.size, a, x.ctypes.data, 1, y.ctypes.data, 1)
    return True


def scal(y: Any, a: float) -> bool:
    """y *= a in place (BLAS scal); False when it cannot (see axpy)."""
    fns = _axpy.get(y.dtype)
    if (fns is None or type(y) is not np.ndarray or not y.flags.writeable or not y.flags.aligned
            or not (y.flags.c_contiguous or y.flags.f_contiguous) or y.size > _max_n):
        return False
    if y.size:
        fns[1](y.size, a, y.ctypes.data, 1)
    return True


def available() -> bool:
    """True when gemm() can run (NumPy's BLAS was found and passed its self-test)."""
    return bool(_fns)


def library_path() -> Optional[str]:
    """The BLAS library bound (for reports), or None."""
    return _lib_path


_load()
