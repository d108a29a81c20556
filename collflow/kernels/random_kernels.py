"""Kernels of the random ops, and the per-Session random streams they draw from.

Each random op owns one `RandomStream` in the Session's resource container (kind "rng",
keyed by the op's name), created on first use from the op's (seed, seed2) attributes, so
a checkpoint can save it and successive runs continue the stream.  NumPy streams are
PCG64; streams of ops on a GPU are counter-based Philox generating on the device
(device_random.py), seeded from the same SeedSequence.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .registry import register_kernel, KernelContext

__all__ = ["RandomStream", "stream_for", "new_stream", "static_shape"]

_MASK64 = (1 << 64) - 1


class RandomStream:
    """A host random generator (NumPy's PCG64) for one op in one Session: uniform, normal,
    integers, permutation.  Ops on a GPU get a `device_random.PhiloxStream` (`new_stream`)."""

    __slots__ = ("xp", "gen", "seed", "seed2")

    def __init__(self, xp: Any, seed: Optional[int], seed2: Optional[int]):
        self.xp = xp
        self.seed, self.seed2 = seed, seed2
        # (None, None): fresh OS entropy, so every Session gets a different stream
        entropy = None if seed is None else [int(seed) & _MASK64, int(seed2 or 0) & _MASK64]
        self.gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))

    def uniform(self, shape: Tuple[int, ...], dtype: Any) -> Any:
        """Samples in [0, 1) of `dtype` (float16: multiples of 2**-10, as TF's 10 random
        mantissa bits; a float32 sample rounded to half could give 1.0)."""
        dt = np.dtype(dtype)
        if dt in (np.float32, np.float64):
            return self.gen.random(shape, dtype=dt)
        if dt == np.float16:
            return (self.gen.integers(0, 1024, size=shape, dtype=np.int16) * np.float16(2 ** -10)).astype(dt)
        return self.gen.random(shape, dtype=np.float32).astype(dt)

    def normal(self, shape: Tuple[int, ...], dtype: Any) -> Any:
        dt = np.dtype(dtype)
        if dt in (np.float32, np.float64):
            return self.gen.standard_normal(shape, dtype=dt)
        return self.gen.standard_normal(shape, dtype=np.float32).astype(dt)

    def integers(self, low: int, high: int, shape: Tuple[int, ...], dtype: Any) -> Any:
        return self.gen.integers(low, high, size=shape, dtype=dtype)

    def permutation(self, n: int) -> Any:
        return self.gen.permutation(n)

    def get_state(self) -> dict:
        """The generator's state (for checkpoints)."""
        return self.gen.bit_generator.state

    def set_state(self, state: dict) -> None:
        if state.get("bit_generator") != "PCG64":
            raise ValueError(f"a {state.get('bit_generator')!r} state cannot continue a PCG64 stream")
        self.gen.bit_generator.state = state


def stream_for(op: Any, ctx: KernelContext) -> Any:
    """The op's stream in this Session (created on first use)."""
    seed, seed2 = op.attrs.get("seed"), op.attrs.get("seed2")
    return ctx.resources.get_or_create("rng", op.name, lambda: new_stream(ctx.xp, seed, seed2))


def new_stream(xp: Any, seed: Optional[int], seed2: Optional[int]) -> Any:
    """A stream for an op on the device of array module `xp`: NumPy's PCG64 on the host, a
    counter-based Philox stream on a GPU (device_random.py; its state can be checkpointed)."""
    if xp is np:
        return RandomStream(np, seed, seed2)
    from .device_random import PhiloxStream
    return PhiloxStream(xp, seed, seed2)


def static_shape(t: Any) -> Optional[Tuple[int, ...]]:
    """The value of a constant shape input, bound at plan time (None if only known at run time)."""
    if t.op.type == "Const":
        return tuple(int(d) for d in np.asarray(t.op.attrs["value"]).reshape(-1))
    return None


def _run_shape(shape: Any, op: Any) -> Tuple[int, ...]:
    dims = tuple(int(d) for d in (shape.tolist() if hasattr(shape, "tolist") else shape))
    if any(d < 0 for d in dims):
        raise InvalidArgumentError(f"{op.type}: shape {list(dims)} has a negative dimension", op)
    return dims


def _const_scalar(t: Any) -> Optional[float]:
    if t.op.type == "Const":
        return np.asarray(t.op.attrs["value"]).item()
    return None


def _affine(op: Any, ctx: KernelContext, draw: Any) -> Any:
    """Kernel computing draw(shape) * scale + shift, the common shape of RandomNormal & co."""
    fixed = static_shape(op.inputs[0])
    c_shift, c_scale = _const_scalar(op.inputs[1]), _const_scalar(op.inputs[2])
    dt = op.outputs[0].dtype.np

    def run(shape: Any, shift: Any, scale: Any) -> Any:
        shp = fixed if fixed is not None else _run_shape(shape, op)
        r = draw(shp)
        # constants are bound as host scalars: no device round trip, no work when trivial
        if c_scale is None:
            r *= scale.reshape(()).astype(dt, copy=False)
        elif c_scale != 1:
            r *= dt.type(c_scale)
        if c_shift is None:
            r += shift.reshape(()).astype(dt, copy=False)
        elif c_shift != 0:
            r += dt.type(c_shift)
        return r
    return run


@register_kernel("RandomNormal")
def _random_normal(op: Any, ctx: KernelContext) -> Any:
    st = stream_for(op, ctx)
    dt = op.outputs[0].dtype.np
    return _affine(op, ctx, lambda shp: st.normal(shp, dt))


@register_kernel("TruncatedNormal")
def _truncated_normal(op: Any, ctx: KernelContext) -> Any:
    st = stream_for(op, ctx)
    dt = op.outputs[0].dtype.np
    xp = ctx.xp

    def draw(shp: Tuple[int, ...]) -> Any:
        r = st.normal(shp, dt)
        # redraw the ~4.6% of samples beyond 2 stddev until none is left
        while True:
            bad = xp.flatnonzero(xp.abs(r) > 2)
            if bad.size == 0:
                return r
            r.reshape(-1)[bad] = st.normal((int(bad.size),), dt)
    return _affine(op, ctx, draw)


@register_kernel("RandomUniform")
def _random_uniform(op: Any, ctx: KernelContext) -> Any:
    st = stream_for(op, ctx)
    dt = op.outputs[0].dtype.np
    fixed = static_shape(op.inputs[0])
    lo_c, hi_c = _const_scalar(op.inputs[1]), _const_scalar(op.inputs[2])

    def run(shape: Any, lo: Any, hi: Any) -> Any:
        shp = fixed if fixed is not None else _run_shape(shape, op)
        r = st.uniform(shp, dt)
        if lo_c is not None and hi_c is not None:
            if (lo_c, hi_c) != (0, 1):
                r *= dt.type(hi_c - lo_c)
                r += dt.type(lo_c)
            return r
        lo = lo.reshape(())
        r *= (hi.reshape(()) - lo).astype(dt, copy=False)
        r += lo.astype(dt, copy=False)
        return r
    return run


@register_kernel("RandomUniformInt")
def _random_uniform_int(op: Any, ctx: KernelContext) -> Any:
    st = stream_for(op, ctx)
    dt = op.outputs[0].dtype.np
    fixed = static_shape(op.inputs[0])

    def run(shape: Any, lo: Any, hi: Any) -> Any:
        shp = fixed if fixed is not None else _run_shape(shape, op)
        lo_i, hi_i = int(lo.reshape(())), int(hi.reshape(()))
        if lo_i >= hi_i:
            raise InvalidArgumentError(f"random_uniform needs minval < maxval, got minval={lo_i}, maxval={hi_i}", op)
        return st.integers(lo_i, hi_i, shp, dt)
    return run


@register_kernel("RandomShuffle")
def _random_shuffle(op: Any, ctx: KernelContext) -> Any:
    st = stream_for(op, ctx)
    xp = ctx.xp

    def run(x: Any) -> Any:
        if x.ndim == 0:
            raise InvalidArgumentError("random_shuffle needs a tensor of rank >= 1, got a scalar", op)
        return xp.take(x, st.permutation(x.shape[0]), axis=0)
    return run
