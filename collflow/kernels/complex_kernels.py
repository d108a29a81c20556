"""Kernels of the complex-number ops and the FFTs (graph/ops/complex_ops.py, fft_ops.py).

NumPy's FFTs compute in double precision; the results are cast to the op's declared dtype
(complex64 for float32/complex64 inputs, as TF).
"""
from __future__ import annotations

from typing import Any

from .registry import register_kernel, KernelContext


@register_kernel("Complex")
def _complex(op: Any, ctx: KernelContext) -> Any:
    xp, dt = ctx.xp, op.outputs[0].dtype.np

    def run(x: Any, y: Any) -> Any:
        return xp.asarray(x + y * 1j).astype(dt, copy=False)
    return run


def _part(fname: str) -> Any:
    def factory(op: Any, ctx: KernelContext) -> Any:
        xp, dt = ctx.xp, op.outputs[0].dtype.np
        fn = getattr(xp, fname)
        # xp.array copies: real/imag are views of the input, which must not alias the output
        return lambda x: xp.array(fn(x), dtype=dt)
    return factory


for _t, _f in (("Real", "real"), ("Imag", "imag"), ("Angle", "angle"), ("ComplexAbs", "abs")):
    register_kernel(_t)(_part(_f))
register_kernel("Conj")(lambda op, ctx: ctx.xp.conjugate)

_C2C = {"FFT": (1, "fftn"), "IFFT": (1, "ifftn"), "FFT2D": (2, "fftn"), "IFFT2D": (2, "ifftn"),
        "FFT3D": (3, "fftn"), "IFFT3D": (3, "ifftn")}
_R2C = {"RFFT": 1, "RFFT2D": 2, "RFFT3D": 3}
_C2R = {"IRFFT": 1, "IRFFT2D": 2, "IRFFT3D": 3}


def _c2c(op: Any, ctx: KernelContext) -> Any:
    xp, dt = ctx.xp, op.outputs[0].dtype.np
    rank, fname = _C2C[op.type]
    fn = getattr(xp.fft, fname)
    axes = tuple(range(-rank, 0))

    def run(x: Any) -> Any:
        x = xp.asarray(x)
        if x.size == 0:
            return xp.zeros(x.shape, dt)
        return fn(x, axes=axes).astype(dt, copy=False)
    return run


def _r2c(op: Any, ctx: KernelContext) -> Any:
    xp, dt = ctx.xp, op.outputs[0].dtype.np
    n = tuple(op.attrs["fft_length"])
    axes = tuple(range(-len(n), 0))

    def run(x: Any) -> Any:
        x = xp.asarray(x)
        out_shape = x.shape[:x.ndim - len(n)] + n[:-1] + (n[-1] // 2 + 1,)
        if x.size == 0 or 0 in n:
            return xp.zeros(out_shape, dt)
        return xp.fft.rfftn(x, s=n, axes=axes).astype(dt, copy=False)
    return run


def _c2r(op: Any, ctx: KernelContext) -> Any:
    xp, dt = ctx.xp, op.outputs[0].dtype.np
    n = tuple(op.attrs["fft_length"])
    axes = tuple(range(-len(n), 0))

    def run(x: Any) -> Any:
        x = xp.asarray(x)
        if x.size == 0 or 0 in n:
            return xp.zeros(x.shape[:x.ndim - len(n)] + n, dt)
        return xp.fft.irfftn(x, s=n, axes=axes).astype(dt, copy=False)
    return run


for _t in _C2C:
    register_kernel(_t)(_c2c)
for _t in _R2C:
    register_kernel(_t)(_r2c)
for _t in _C2R:
    register_kernel(_t)(_c2r)
