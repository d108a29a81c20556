"""Direct calls into the BLAS library NumPy itself is linked with (CPU only).

`np.matmul` always computes C = A @ B into a fresh (or given) array; the BLAS routine
underneath computes C = alpha * op(A) @ op(B) + beta * C.  With beta = 1 and alpha = -lr a
weight-gradient product and the SGD update it feeds are one pass: W -= lr * X^T dY without
materializing the gradient, without the separate update pass, and without the pass that
zeroes C (BLAS runs one when beta = 0).  axpy (y += a * x) and scal (y *= a) are the
optimizers' updates in one multithreaded pass without NumPy's temporary; omatcopy (OpenBLAS's
scaled transposing copy, `transposer`) moves a matrix between the row- and column-major
layouts in half the time of NumPy's strided copy.

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

__all__ = ["gemm", "stepper", "transposer", "axpy", "scal", "available", "library_path"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112

# (symbol prefix, symbol suffix, integer type) of the scipy-openblas builds NumPy wheels ship:
# ILP64 ("64_" suffix, 64-bit sizes) in NumPy >= 2, LP64 in some older or 32-bit builds
_FLAVOURS = (("scipy_", "64_", ctypes.c_int64), ("", "64_", ctypes.c_int64), ("scipy_", "", ctypes.c_int32))

_lib_path: Optional[str] = None
_fns: dict = {}  # numpy dtype -> ctypes function (cblas_sgemm / cblas_dgemm)
_axpy: dict = {}  # numpy dtype -> (cblas_?axpy, cblas_?scal, cblas_?omatcopy or None)
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
            fo = getattr(lib, f"{prefix}cblas_{ch}omatcopy{suffix}", None)  # an OpenBLAS extension
            if fo is not None:
                fo.restype = None
                fo.argtypes = [ci, ci, it, it, ct, vp, it, vp, it]
            dt = np.dtype(dt)
            fns[dt], axpy[dt] = fn, (fa, fs, fo)
        if len(fns) == 2 and _self_test(fns, axpy):
            return fns, axpy, 2 ** (8 * ctypes.sizeof(it) - 1) - 1
    return {}, {}, 0


def _self_test(fns: dict, axpy: dict) -> bool:
    """Small products with every transpose combination and beta = 1, an axpy and a scal,
    against NumPy (a wrong integer width or symbol would show here)."""
    rng = np.random.default_rng(0)
    for dt, (fa, fs, fo) in list(axpy.items()):
        x = rng.standard_normal(7).astype(dt)
        y0 = rng.standard_normal(7).astype(dt)
        y = y0.copy()
        fa(7, -0.5, x.ctypes.data, 1, y.ctypes.data, 1)
        fs(7, 2.0, y.ctypes.data, 1)
        if not np.allclose(y, 2.0 * (y0 - 0.5 * x), rtol=1e-4, atol=1e-5):
            return False
        if fo is not None:  # a 3 x 2 block of a 3 x 5 matrix into a 2 x 3 block of a 2 x 4 one
            a = rng.standard_normal((3, 5)).astype(dt)
            c = np.full((2, 4), 7.0, dtype=dt)
            fo(_ROW_MAJOR, _TRANS, 3, 2, 0.5, a[:, 1:].ctypes.data, 5, c.ctypes.data, 4)
            if not (np.array_equal(c[:, :3], 0.5 * a[:, 1:3].T) and (c[:, 3] == 7).all()):
                axpy[dt] = (fa, fs, None)  # the library's omatcopy is not usable: NumPy transposes
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


def _per_step(x: Any) -> Optional[tuple]:
    """(steps or 0, rows, cols, leading dimension, step stride in bytes) of a 2-D matrix (0
    steps: the same matrix every step) or a 3-D stack of per-step matrices whose rows are
    contiguous (unit element stride, row stride a whole number of elements at least a row
    long), or None."""
    if type(x) is not np.ndarray or x.ndim not in (2, 3) or not x.flags.aligned:
        return None
    isz = x.itemsize
    rows, cols = x.shape[-2:]
    rs, cs = x.strides[-2:]
    if cols > 1 and cs != isz:
        return None
    if rows > 1 and (rs % isz or rs < cols * isz):
        return None
    ld = rs // isz if rows > 1 else cols
    steps, step = (x.shape[0], x.strides[0]) if x.ndim == 3 else (0, 0)
    if step % isz or step < 0:
        return None
    return steps, rows, cols, max(1, ld), step


def stepper(a: Any, b: Any, c: Any, ta: bool = False, tb: bool = False, alpha: float = 1.0,
            beta: float = 0.0) -> Optional[Callable[[int], None]]:
    """A step function for recurrences: `run(t)` computes c_t = alpha * op(a_t) @ op(b_t) +
    beta * c_t in place, where each of a, b, c is one 2-D matrix (the same at every step) or
    a 3-D array [steps, rows, cols] whose t-th matrix is step t's; op transposes when t*.

    For loops that run one small product per step (an LSTM's recurrent GEMM), where gemm()'s
    checks and NumPy's pointer lookups cost as much as a small product: the arrays are checked
    once here and each call is the BLAS call alone (bounds-checked step index).  Per-step
    matrices need contiguous rows (a block of rows and columns of a larger C-contiguous
    array qualifies).  None when the binding is unavailable or an argument does not qualify
    (NumPy arrays of one float dtype, c writable, shapes that fit, no empty dimension, the
    3-D ones with one number of steps): the caller computes with NumPy.
    """
    fn = _fns.get(c.dtype) if isinstance(c, np.ndarray) else None
    if fn is None or not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return None
    if a.dtype != c.dtype or b.dtype != c.dtype or not c.flags.writeable:
        return None
    pa, pb, pc = _per_step(a), _per_step(b), _per_step(c)
    if pa is None or pb is None or pc is None:
        return None
    steps = {p[0] for p in (pa, pb, pc) if p[0]}
    if len(steps) != 1:  # no per-step array, or two with different step counts
        return None
    (n_steps,) = steps
    m, k = (pa[2], pa[1]) if ta else (pa[1], pa[2])
    kb, n = (pb[2], pb[1]) if tb else (pb[1], pb[2])
    if k != kb or (pc[1], pc[2]) != (m, n) or 0 in (m, n, k):
        return None
    if max(m, n, k, pa[3], pb[3], pc[3]) > _max_n:
        return None
    fa, fb = (_TRANS if ta else _NO_TRANS), (_TRANS if tb else _NO_TRANS)
    lda, ldb, ldc = pa[3], pb[3], pc[3]
    a0, b0, c0 = a.ctypes.data, b.ctypes.data, c.ctypes.data
    sa, sb, sc = pa[4], pb[4], pc[4]

    def run(t: int) -> None:
        if not 0 <= t < n_steps:
            raise IndexError(f"step {t} outside [0, {n_steps})")
        fn(_ROW_MAJOR, fa, fb, m, n, k, alpha, a0 + t * sa, lda, b0 + t * sb, ldb, beta, c0 + t * sc, ldc)
    run.arrays = (a, b, c)  # type: ignore[attr-defined]  # held while run lives: the addresses stay valid
    return run


def transposer(a: Any, c: Any, alpha: float = 1.0) -> Optional[Callable[[int], None]]:
    """A step function for layout changes: `run(t)` writes c_t = alpha * a_t^T, where each of
    a, c is one 2-D matrix (run(0) then is the only step) or a 3-D array [steps, rows, cols]
    of per-step matrices with contiguous rows, as in stepper().  a and c must not overlap.
    None when OpenBLAS's omatcopy is unavailable or an argument does not qualify (then
    NumPy copies: `c[t][...] = alpha * a[t].T`)."""
    fns = _axpy.get(c.dtype) if isinstance(c, np.ndarray) else None
    fo = fns[2] if fns is not None else None
    if fo is None or not isinstance(a, np.ndarray) or a.dtype != c.dtype or not c.flags.writeable:
        return None
    pa, pc = _per_step(a), _per_step(c)
    if pa is None or pc is None or np.may_share_memory(a, c):
        return None
    steps = {p[0] for p in (pa, pc) if p[0]}
    if len(steps) > 1 or (pa[1], pa[2]) != (pc[2], pc[1]) or 0 in pa[1:3]:
        return None
    n_steps = steps.pop() if steps else 1
    rows, cols, lda, ldc = pa[1], pa[2], pa[3], pc[3]
    if max(rows, cols, lda, ldc) > _max_n:
        return None
    a0, c0, sa, sc = a.ctypes.data, c.ctypes.data, pa[4], pc[4]

    def run(t: int) -> None:
        if not 0 <= t < n_steps:
            raise IndexError(f"step {t} outside [0, {n_steps})")
        fo(_ROW_MAJOR, _TRANS, rows, cols, alpha, a0 + t * sa, lda, c0 + t * sc, ldc)
    run.arrays = (a, c)  # type: ignore[attr-defined]  # held while run lives
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
