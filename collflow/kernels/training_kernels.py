"""Kernels of the fused optimizer updates (graph/ops/training_ops.py).

Every kernel takes the VariableStates of the variable and its slots, updates them in place
under the variable's lock (`writable()` copies first if a reader still holds the array, so
values read earlier stay valid), and outputs nothing.  One body per optimizer (`_*_step`)
does the arithmetic on same-shaped arrays with at most one scratch array; the dense kernel
runs it on the whole arrays (or chunks of them), the sparse kernel on the gathered rows of the touched indices, which
it then writes back, so a sparse update reads and writes only those rows.

`y += a * x` is the whole of SGD and most of Momentum.  NumPy needs two passes and a
temporary for it; on the CPU the BLAS NumPy is linked with does it in one multithreaded
pass (kernels/blas.py; 2x faster than NumPy on a 4 MiB weight, 2 cores).  Where the
gradient is a matrix product, the executor fuses product and update into one BLAS call
instead (kernels/fused_kernels.py).  Adam, Adagrad and RMSProp are a dozen elementwise
passes each; on the CPU the dense kernel runs them over cache-sized chunks with one
chunk-sized scratch buffer.  On CuPy the same bodies run on whole arrays with `out=` ufuncs.
"""
from __future__ import annotations

import cmath
import math
from typing import Any, Callable, Optional, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from . import blas as _blas
from .registry import register_kernel, KernelContext
from .sparse_kernels import add_at

# y += a * x and y *= a through NumPy's own BLAS (kernels/blas.py): one multithreaded pass
# without a temporary, in the thread pool NumPy's matmul already uses (SciPy's BLAS, used here
# before, brought a second pool that fought NumPy's for the cores: a 2-core MLP step went
# from 23 ms to 56 ms).  On wherever NumPy's BLAS can be called.
_use_blas = _blas.available()


def set_blas_enabled(enabled: bool) -> None:
    """Turns the BLAS path of the updates on or off (tests run both paths)."""
    global _use_blas
    if enabled and not _blas.available():
        raise RuntimeError("the BLAS path of the optimizers needs NumPy's own BLAS, which cannot be called "
                           "directly in this installation (see collflow/kernels/blas.py)")
    _use_blas = bool(enabled)


def blas_enabled() -> bool:
    return _use_blas


# -- in-place building blocks (y is updated; x is never written unless it is scratch) --------
# Callers pass arrays of one shape; the variable and slot arrays are the kernel's own
# (writable() made sure), so they may be updated in place.


_BLAS_MIN = 1 << 17  # elements


def _axpy(xp: Any, y: Any, a: Any, x: Any, t: Any = None) -> None:
    """y += a * x in place; t, if given, is scratch of x's shape (x itself when x is scratch)."""
    if xp is np:
        # BLAS where its threads pay for a call through ctypes (~9 us, more than two ufunc
        # passes over a cache-sized chunk of the dense kernel)
        if _use_blas and y.size >= _BLAS_MIN and _blas.axpy(y, a, x):
            return
        if a == 1.0:
            np.add(y, x, out=y)
            return
    t = xp.multiply(x, a) if t is None else xp.multiply(x, a, out=t)
    xp.add(y, t, out=y)


def _scale(xp: Any, y: Any, a: Any) -> None:
    """y *= a in place."""
    if xp is np and _use_blas and y.size >= _BLAS_MIN and _blas.scal(y, a):
        return
    xp.multiply(y, a, out=y)


# -- one body per optimizer ------------------------------------------------------------------
# Arrays of one shape, updated in place; g is read only; t is scratch of g's shape (None:
# allocate if needed).  GD and Momentum are one to three axpy passes, best done by BLAS over
# whole arrays.  The others are a dozen elementwise passes: they use only in-place ufuncs
# and one scratch, so the dense kernel can run them chunk by chunk with the chunk's data
# staying in cache (a third less time than whole-array passes, and no large temporary).


def _gd_step(xp: Any, var: Any, lr: Any, g: Any, t: Any) -> None:
    _axpy(xp, var, -lr, g, t)


def _momentum_step(xp: Any, var: Any, acc: Any, lr: Any, momentum: Any, g: Any, t: Any, nesterov: bool) -> None:
    _scale(xp, acc, momentum)
    _axpy(xp, acc, 1.0, g)
    if nesterov:
        _axpy(xp, var, -lr, g, t)
        _axpy(xp, var, -lr * momentum, acc, t)
    else:
        _axpy(xp, var, -lr, acc, t)


def _decay_toward(xp: Any, s: Any, rate: Any, x: Any, t: Any) -> None:
    """s = rate * s + (1 - rate) * x, as s += (x - s) * (1 - rate) (no cancellation when rate ~ 1).

    t is scratch (it may be x itself)."""
    xp.subtract(x, s, out=t)
    _axpy(xp, s, 1 - rate, t, t)                  # one BLAS pass where there is one


def _adam_step(xp: Any, var: Any, m: Any, v: Any, b1p: Any, b2p: Any, lr: Any, b1: Any, b2: Any, eps: Any,
               g: Any, t: Any) -> None:
    sqrt = _sqrt_fn(xp, b2p)
    lr_t = lr * sqrt(1 - b2p) / (1 - b1p)
    if t is None:
        t = xp.empty_like(g)
    _decay_toward(xp, m, b1, g, t)
    xp.multiply(g, g, out=t)
    _decay_toward(xp, v, b2, t, t)
    xp.sqrt(v, out=t)
    xp.add(t, eps, out=t)
    xp.divide(m, t, out=t)
    _axpy(xp, var, -lr_t, t, t)


def _adagrad_step(xp: Any, var: Any, acc: Any, lr: Any, g: Any, t: Any) -> None:
    if t is None:
        t = xp.empty_like(g)
    xp.multiply(g, g, out=t)
    xp.add(acc, t, out=acc)
    xp.sqrt(acc, out=t)
    xp.divide(g, t, out=t)
    xp.multiply(t, lr, out=t)
    xp.subtract(var, t, out=var)


def _rmsprop_step(xp: Any, var: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any, eps: Any,
                  g: Any, t: Any) -> None:
    if t is None:
        t = xp.empty_like(g)
    xp.multiply(g, g, out=t)
    _decay_toward(xp, ms, rho, t, t)
    xp.add(ms, eps, out=t)
    _finish_rmsprop(xp, var, mom, lr, momentum, g, t)


def _centered_rmsprop_step(xp: Any, var: Any, mg: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any,
                           eps: Any, g: Any, t: Any) -> None:
    if t is None:
        t = xp.empty_like(g)
    _decay_toward(xp, mg, rho, g, t)
    xp.multiply(g, g, out=t)
    _decay_toward(xp, ms, rho, t, t)
    xp.multiply(mg, mg, out=t)
    xp.subtract(ms, t, out=t)
    xp.add(t, eps, out=t)
    _finish_rmsprop(xp, var, mom, lr, momentum, g, t)


def _finish_rmsprop(xp: Any, var: Any, mom: Any, lr: Any, momentum: Any, g: Any, t: Any) -> None:
    """t holds the denominator's square; mom = momentum * mom + lr * g / sqrt(t); var -= mom."""
    xp.sqrt(t, out=t)
    xp.divide(g, t, out=t)
    xp.multiply(t, lr, out=t)
    xp.multiply(mom, momentum, out=mom)
    xp.add(mom, t, out=mom)
    xp.subtract(var, mom, out=var)


# -- checks and duplicate summing --------------------------------------------------------


def _check_dense(op: Any, st: Any, var: Any, g: Any) -> None:
    if g.shape != var.shape:
        raise InvalidArgumentError(
            f"{op.type}: gradient of shape {tuple(g.shape)} does not match variable {st.name!r} "
            f"of shape {tuple(var.shape)}", op)


def _sum_duplicates(xp: Any, op: Any, st: Any, var: Any, values: Any, indices: Any) -> Tuple[Any, Any]:
    """(unique row indices, summed gradient rows), after checking every index is in range."""
    idx = indices.reshape(-1)
    if values.ndim != var.ndim or values.shape[0] != idx.shape[0] or values.shape[1:] != var.shape[1:]:
        raise InvalidArgumentError(
            f"{op.type}: gradient rows of shape {tuple(values.shape)} with {idx.shape[0]} indices do not fit "
            f"variable {st.name!r} of shape {tuple(var.shape)}", op)
    if idx.size == 0:
        return idx, values
    lo, hi = int(idx.min()), int(idx.max())
    if lo < 0 or hi >= var.shape[0]:
        bad = lo if lo < 0 else hi
        raise InvalidArgumentError(
            f"{op.type}: index {bad} is out of range [0, {var.shape[0]}) for variable {st.name!r}", op)
    if xp is np:
        # stable sort + reduceat: a deterministic summation order, so replicas stay identical
        order = np.argsort(idx, kind="stable")
        s = idx[order]
        first = np.empty(s.shape[0], dtype=bool)
        first[0] = True
        np.not_equal(s[1:], s[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        if starts.shape[0] == s.shape[0]:
            return s, values[order]
        return s[starts], np.add.reduceat(values[order], starts, axis=0)
    uniq, inv = xp.unique(idx, return_inverse=True)
    summed = xp.zeros((uniq.shape[0],) + tuple(values.shape[1:]), dtype=values.dtype)
    add_at(xp, summed, inv.reshape(-1), values)
    return uniq, summed


def _adadelta_step(xp: Any, var: Any, accum: Any, accum_update: Any, lr: Any, rho: Any, eps: Any,
                   g: Any, t: Any) -> None:
    # TensorFlow's order of operations (ApplyAdadelta): accum * rho + g^2 * (1 - rho), ...
    if t is None:
        t = xp.empty_like(g)
    u = xp.empty_like(g)
    xp.multiply(g, g, out=t)
    t *= 1 - rho
    accum *= rho
    accum += t
    xp.add(accum_update, eps, out=u)
    xp.sqrt(u, out=u)
    xp.add(accum, eps, out=t)
    xp.sqrt(t, out=t)
    u /= t
    u *= g                                        # the update
    xp.multiply(u, u, out=t)
    t *= 1 - rho
    accum_update *= rho
    accum_update += t
    u *= lr
    xp.subtract(var, u, out=var)


def _ftrl_step(xp: Any, var: Any, accum: Any, linear: Any, lr: Any, l1: Any, l2: Any, l2_shrinkage: Any,
               lr_power: Any, g: Any, t: Any) -> None:
    # TensorFlow's ApplyFtrl(V2); lr_power -0.5 through square roots, as its kernel does
    if t is None:
        t = xp.empty_like(g)
    new = xp.multiply(g, g)
    new += accum
    half = xp is np and float(lr_power) == -0.5
    sigma = xp.empty_like(accum)  # an array even for a 0-d variable (ufuncs give scalars there)
    if half:
        xp.sqrt(new, out=t)
        xp.sqrt(accum, out=sigma)
    else:
        xp.power(new, -lr_power, out=t)
        xp.power(accum, -lr_power, out=sigma)
    xp.subtract(t, sigma, out=sigma)              # new^-p - accum^-p
    sigma /= lr
    sigma *= var
    if xp is not np or float(l2_shrinkage) != 0.0:
        linear += g + 2 * l2_shrinkage * var      # the gradient with shrinkage
    else:
        linear += g
    linear -= sigma
    t /= lr                                       # quadratic: new^-p / lr + 2 l2
    t += 2 * l2
    xp.multiply(xp.sign(linear), l1, out=sigma)
    sigma -= linear
    sigma /= t                                    # pre-shrink
    var[...] = xp.where(xp.abs(linear) > l1, sigma, 0)
    accum[...] = new


# -- kernel factories ---------------------------------------------------------------------


def _scalar_fn(xp: Any, op: Any) -> Callable[[Any], Any]:
    # NumPy: Python floats (and complexes) are "weak" scalars, so float32 (complex64) arrays
    # keep their dtype; CuPy: keep the 0-d device array (float() would synchronize the device).
    # A complex variable's hyperparameters are complex scalars (TF's kernels take them so).
    if xp is not np:
        return lambda s: s
    # the scalars (the inputs after the resource handles) have the variable's dtype
    scalar = next(t for t in op.inputs if t.dtype.name != "resource")
    return complex if scalar.dtype.is_complex else float


def _sqrt_fn(xp: Any, x: Any) -> Callable[[Any], Any]:
    """The square root of a host scalar like x: math's, cmath's for a complex one (complex
    Adam's bias correction), the device's on CuPy."""
    if xp is not np:
        return xp.sqrt
    return cmath.sqrt if isinstance(x, complex) else math.sqrt


# bytes per chunk of each array: a chunk of var, slots, gradient and scratch stays in the
# shared cache through the dozen passes of an update, and each chunk's ufunc calls are few
# enough to be paid once per MiB.  Adam on a 3136x1024 variable, one thread, medians of 15
# interleaved runs on AMD EPYC (512 KiB L2): 256 KiB 12.5 ms, 1 MiB 11.2, 2 MiB 11.9,
# 4 MiB 13.1, unchunked 19.1 (64 KiB 12.7-16.1: per-call overhead)
_CHUNK_BYTES = 1 << 20


def _chunked(xp: Any, step: Callable[..., None], arrays: list, scalars: list, g: Any, ex: tuple) -> bool:
    """Runs `step` over cache-sized chunks of flat views (NumPy, contiguous arrays); False if it cannot."""
    n = g.size
    chunk = _CHUNK_BYTES // g.itemsize
    if xp is not np or n <= chunk or not g.flags.c_contiguous or not all(a.flags.c_contiguous for a in arrays):
        return False
    flat = [a.ravel() for a in arrays]
    gf = g.ravel()
    buf = np.empty(chunk, dtype=g.dtype)
    for i in range(0, n, chunk):
        j = min(n, i + chunk)
        step(xp, *[f[i:j] for f in flat], *scalars, gf[i:j], buf[:j - i], *ex)
    return True


def _check_slots(op: Any, states: tuple) -> None:
    """Slots have the variable's shape (read here, so no reference outlives the check)."""
    shape = states[0].read(op).shape
    for s in states[1:]:
        a = s.read(op)
        if a.shape != shape:
            raise InvalidArgumentError(
                f"{op.type}: slot {s.name!r} of shape {tuple(a.shape)} does not match variable "
                f"{states[0].name!r} of shape {tuple(shape)}", op)


def _register(kind: str, n_states: int, step: Callable[..., None], extra: Callable[[Any], tuple] = lambda op: (),
              dense_factory: Optional[Callable] = None, chunk: Callable[[], bool] = lambda: True,
              sparse_factory: Optional[Callable[[Callable], Callable]] = None) -> None:
    """Registers the dense and sparse kernels of Apply<kind> around `step`.

    Inputs: n_states VariableStates (var first), the scalars, the gradient (and indices).
    `step(xp, *arrays, *scalars, g, scratch, *extra)` updates the arrays in place.
    `dense_factory` replaces the generic dense kernel where the per-call overhead matters;
    `chunk()` says whether the dense kernel runs the body chunk by chunk.  `sparse_factory(rows)`
    makes the sparse kernel factory from the generic touched-rows-only one.
    """

    def dense(op: Any, ctx: KernelContext) -> Callable:
        xp, S, ex = ctx.xp, _scalar_fn(ctx.xp, op), extra(op)

        def apply(*args: Any) -> None:
            st = args[0]
            g = args[-1]
            scalars = [S(s) for s in args[n_states:-1]]
            with st.lock:
                arrays = [st.writable(op)] + [s.writable(op) for s in args[1:n_states]]
                _check_dense(op, st, arrays[0], g)
                for s, a in zip(args[1:n_states], arrays[1:]):
                    _check_dense(op, s, a, g)
                if not (chunk() and _chunked(xp, step, arrays, scalars, g, ex)):
                    step(xp, *arrays, *scalars, g, None, *ex)
        return apply

    register_kernel("Apply" + kind)(dense_factory or dense)

    def sparse(op: Any, ctx: KernelContext) -> Callable:
        xp, S, ex = ctx.xp, _scalar_fn(ctx.xp, op), extra(op)

        def apply(*args: Any) -> None:
            st = args[0]
            values, indices = args[-2], args[-1]
            scalars = [S(s) for s in args[n_states:-2]]
            with st.lock:
                _check_slots(op, args[:n_states])
                rows, g = _sum_duplicates(xp, op, st, st.read(op), values, indices)
                if rows.shape[0] == 0:
                    return
                # only the touched rows are made writable (a pending checkpoint saves just those);
                # fancy indexing copies the touched rows; the same body updates them; write back
                arrays, gathered = zip(*[s.writable_rows(op, rows, True, gather=True) for s in args[:n_states]])
                step(xp, *gathered, *scalars, g, None, *ex)
                for a, r in zip(arrays, gathered):
                    a[rows] = r
        return apply

    register_kernel("SparseApply" + kind)(sparse_factory(sparse) if sparse_factory else sparse)


def _gd_dense(op: Any, ctx: KernelContext) -> Callable:
    # the one update of plain SGD: kept to a single call around one axpy
    xp, S = ctx.xp, _scalar_fn(ctx.xp, op)

    def apply(st: Any, lr: Any, g: Any) -> None:
        with st.lock:
            v = st.writable(op)
            if g.shape != v.shape:
                _check_dense(op, st, v, g)
            # BLAS: one multithreaded pass; else chunks, so no variable-sized temporary
            if (_use_blas and xp is np) or not _chunked(xp, _gd_step, [v], [S(lr)], g, ()):
                _axpy(xp, v, -S(lr), g)
    return apply


_register("GradientDescent", 1, _gd_step, dense_factory=_gd_dense)
# with BLAS, Momentum's three passes are best run over whole arrays (multithreaded axpy)
_register("Momentum", 2, _momentum_step, lambda op: (bool(op.attrs.get("use_nesterov", False)),),
          chunk=lambda: not _use_blas)
def _adam_sparse(lazy_factory: Callable) -> Callable:
    """SparseApplyAdam: `lazy` (LazyAdamOptimizer) updates the touched rows only; otherwise TF1's
    AdamOptimizer._apply_sparse: m *= beta1, v *= beta2 over every row, the touched rows add
    (1 - beta1) g and (1 - beta2) g^2 (duplicates summed first), and every row of var moves by
    lr_t m / (sqrt(v) + epsilon), so a row not in this batch still moves with its momentum."""

    def factory(op: Any, ctx: KernelContext) -> Callable:
        if op.attrs.get("lazy", True):
            return lazy_factory(op, ctx)
        xp, S = ctx.xp, _scalar_fn(ctx.xp, op)

        def apply(var_st: Any, m_st: Any, v_st: Any, *args: Any) -> None:
            b1p, b2p, lr, b1, b2, eps = (S(a) for a in args[:6])
            sqrt = _sqrt_fn(xp, b2p)
            values, indices = args[6], args[7]
            with var_st.lock:
                _check_slots(op, (var_st, m_st, v_st))
                rows, g = _sum_duplicates(xp, op, var_st, var_st.read(op), values, indices)
                var, m, v = var_st.writable(op), m_st.writable(op), v_st.writable(op)
                xp.multiply(m, b1, out=m)
                xp.multiply(v, b2, out=v)
                if rows.shape[0]:  # rows are unique: plain fancy-index adds are exact
                    m[rows] += g * (1 - b1)
                    v[rows] += (g * g) * (1 - b2)
                t = xp.sqrt(v)
                t += eps
                xp.divide(m, t, out=t)
                t *= lr * sqrt(1 - b2p) / (1 - b1p)
                xp.subtract(var, t, out=var)
        return apply
    return factory


_register("Adam", 3, _adam_step, sparse_factory=_adam_sparse)
_register("Adagrad", 2, _adagrad_step)
_register("RMSProp", 3, _rmsprop_step)
_register("CenteredRMSProp", 4, _centered_rmsprop_step)
_register("Adadelta", 3, _adadelta_step)
_register("Ftrl", 3, _ftrl_step)


def _proximal(xp: Any, var: Any, a: Any, l1: Any, l2: Any, g: Any, t: Any) -> None:
    """var = sign(p) * max(|p| - a l1, 0) / (1 + a l2) for p = var - a g (a a scalar or an
    array of g's shape): TF's proximal step; t is scratch of g's shape."""
    xp.multiply(g, a, out=t)
    xp.subtract(var, t, out=var)                  # p
    if float(l1) > 0:
        xp.abs(var, out=t)
        t -= a * l1
        xp.maximum(t, 0, out=t)
        xp.copysign(t, var, out=var)              # sign(p) * max(|p| - a l1, 0)
    var /= 1 + a * l2


def _proximal_gd_step(xp: Any, var: Any, lr: Any, l1: Any, l2: Any, g: Any, t: Any) -> None:
    _proximal(xp, var, lr, l1, l2, g, xp.empty_like(g) if t is None else t)


def _proximal_adagrad_step(xp: Any, var: Any, accum: Any, lr: Any, l1: Any, l2: Any, g: Any, t: Any) -> None:
    a = xp.multiply(g, g)
    accum += a
    xp.sqrt(accum, out=a)
    xp.divide(lr, a, out=a)                       # the per-element rate lr / sqrt(accum)
    _proximal(xp, var, a, l1, l2, g, xp.empty_like(g) if t is None else t)


_register("ProximalGradientDescent", 1, _proximal_gd_step)
_register("ProximalAdagrad", 2, _proximal_adagrad_step)
