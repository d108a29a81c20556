"""Kernels of graph/ops/stateless_random_ops.py: TensorFlow's stateless random ops, bit for bit
its CPU results for the same seed pair (see kernels/philox.py for the generator), and the
(stateful) Poisson sampler.

How the outputs use the stream (found by matching TensorFlow's values):
- uniform: one word per float16/float32/int32 value, two per float64/int64 value, in order;
  integers are minval + word % (maxval - minval) (int64: of (second word << 32 | first));
- normal: Box-Muller on consecutive word pairs (float64: quadruples), in order;
- truncated normal: output group g (4 values, float64 2) restarts the stream at call
  g * 256 (float64 g * 128) and takes Box-Muller values with |z| < 2 in order until full;
- multinomial: one double (two words) per sample, rows after one another from call 0;
  the sample is the first class whose cumulative exp(logit - max) exceeds u * total
  (non-finite logits get no mass).
The kernels run on the host (NumPy): the values are the same wherever the op is placed.
"""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from . import philox as P
from .random_kernels import stream_for
from .registry import KernelContext, register_kernel

_TRUNC_RESERVED = 256     # words reserved per output value of the truncated normal


def _seed_pair(seed: Any) -> Tuple[P.Key, P.Counter]:
    if isinstance(seed, tuple) and len(seed) == 2 and isinstance(seed[0], tuple):
        return seed   # a (key, counter) pair already: a Generator's state (stateful_random_kernels.py)
    s = np.asarray(seed).reshape(-1)
    if s.size != 2:
        raise InvalidArgumentError(f"seed must have shape [2], not {list(np.shape(seed))}")
    return P.key_counter(int(s[0]), int(s[1]))


def _shape(shape: Any) -> Tuple[int, ...]:
    shp = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    if any(d < 0 for d in shp):
        raise InvalidArgumentError(f"shape {list(shp)} has a negative dimension")
    return shp


def uniform(shape: Tuple[int, ...], dtype: Any, seed: Any) -> np.ndarray:
    """stateless_uniform in [0, 1) of a float dtype."""
    key, ctr = _seed_pair(seed)
    n = int(np.prod(shape, dtype=np.int64))
    dt = np.dtype(dtype)
    if dt == np.float64:
        w = P.words(key, ctr, 2 * n)
        out = P.uniform_f64(w[0::2], w[1::2])
    elif dt == np.float16:
        out = P.uniform_f16(P.words(key, ctr, n))
    else:
        out = P.uniform_f32(P.words(key, ctr, n)).astype(dt)
    return out.reshape(shape)


def uniform_int(shape: Tuple[int, ...], dtype: Any, seed: Any, lo: int, hi: int) -> np.ndarray:
    """stateless_uniform of int32/int64 in [lo, hi)."""
    key, ctr = _seed_pair(seed)
    n = int(np.prod(shape, dtype=np.int64))
    dt = np.dtype(dtype)
    if not lo < hi:
        raise InvalidArgumentError(f"Need minval < maxval: {lo} >= {hi}")
    if dt == np.int32:
        w = P.words(key, ctr, n).astype(np.uint64)
        out = (np.int64(lo) + (w % np.uint64(hi - lo)).astype(np.int64)).astype(np.int32)
    else:
        w = P.words(key, ctr, 2 * n).astype(np.uint64)
        x = (w[1::2] << np.uint64(32)) | w[0::2]
        r = x % np.uint64((hi - lo) & 0xFFFFFFFFFFFFFFFF)
        out = (r + np.uint64(lo & 0xFFFFFFFFFFFFFFFF)).view(np.int64)   # wraps as TF's unsigned sum
    return out.reshape(shape)


def uniform_full_int(shape: Tuple[int, ...], dtype: Any, seed: Any) -> np.ndarray:
    """stateless_uniform of an integer dtype without bounds: every bit pattern."""
    key, ctr = _seed_pair(seed)
    n = int(np.prod(shape, dtype=np.int64))
    dt = np.dtype(dtype)
    if dt.itemsize == 4:
        return P.words(key, ctr, n).view(dt).reshape(shape)
    w = P.words(key, ctr, 2 * n).astype(np.uint64)
    return ((w[1::2] << np.uint64(32)) | w[0::2]).view(dt).reshape(shape)


def normal(shape: Tuple[int, ...], dtype: Any, seed: Any) -> np.ndarray:
    """stateless_normal (mean 0, stddev 1)."""
    key, ctr = _seed_pair(seed)
    n = int(np.prod(shape, dtype=np.int64))
    dt = np.dtype(dtype)
    if dt == np.float64:
        a, b = P.box_muller_f64(P.words(key, ctr, 4 * (-(-n // 2))))
        out = np.stack([a, b], 1).reshape(-1)[:n]
    else:
        w = P.words(key, ctr, 4 * (-(-n // 4)))
        a, b = P.box_muller_f32(w[0::2], w[1::2])
        out = np.stack([a, b], 1).reshape(-1)[:n].astype(dt)
    return out.reshape(shape)


def truncated_normal(shape: Tuple[int, ...], dtype: Any, seed: Any) -> np.ndarray:
    """stateless_truncated_normal: normals with |z| < 2 (the rest drawn again)."""
    key, ctr = _seed_pair(seed)
    n = int(np.prod(shape, dtype=np.int64))
    dt = np.dtype(dtype)
    group = 2 if dt == np.float64 else 4
    n_groups = -(-n // group)
    if n_groups == 0:
        return np.zeros(shape, dt)
    skip = group * _TRUNC_RESERVED // 4          # calls between groups' streams
    starts = np.arange(n_groups, dtype=np.int64) * skip
    calls = 2                                     # calls drawn per group; doubled until enough
    while True:
        idx = (starts[:, None] + np.arange(calls, dtype=np.int64)[None, :]).reshape(-1)
        w = P.blocks(key, ctr, idx).reshape(-1)
        if dt == np.float64:
            a, b = P.box_muller_f64(w)
        else:
            a, b = P.box_muller_f32(w[0::2], w[1::2])
        cand = np.stack([a, b], 1).reshape(n_groups, -1)
        ok = np.abs(cand) < 2.0
        if n_groups == 0 or ok.sum(1).min() >= group or calls >= skip:
            break
        calls *= 2
    # the first `group` accepted candidates of each group, in order
    rank = np.cumsum(ok, 1) - 1
    take = ok & (rank < group)
    out = np.zeros((n_groups, group), cand.dtype)
    gi, ci = np.nonzero(take)
    out[gi, rank[gi, ci]] = cand[gi, ci]
    return out.reshape(-1)[:n].astype(dt).reshape(shape)


def multinomial(logits: np.ndarray, num_samples: int, seed: Any, out_dtype: Any) -> np.ndarray:
    """stateless_multinomial / stateless_categorical: [batch, num_samples] class indices."""
    key, ctr = _seed_pair(seed)
    lg = np.asarray(logits)
    if lg.ndim != 2:
        raise InvalidArgumentError(f"logits should be a matrix, got shape {list(lg.shape)}")
    b, c = lg.shape
    if c == 0 and b * num_samples > 0:
        raise InvalidArgumentError("num_classes should be positive, got 0")
    w = P.words(key, ctr, 2 * b * num_samples)
    u = P.uniform_f64(w[0::2], w[1::2]).reshape(b, num_samples)
    fin = np.isfinite(lg)
    with np.errstate(all="ignore"):
        mx = np.where(fin, lg, -np.inf).max(1, initial=float(np.finfo(lg.dtype).min), keepdims=True)
        p = np.where(fin, np.exp(lg.astype(np.float64) - mx.astype(np.float64)), 0.0)
    cdf = np.cumsum(p, 1)
    out = np.empty((b, num_samples), np.int64)
    for i in range(b):
        out[i] = np.searchsorted(cdf[i], u[i] * cdf[i, -1], side="right")
    return out.astype(out_dtype)


# -- kernels --------------------------------------------------------------------------------

@register_kernel("StatelessRandomUniform")
def _k_uniform(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np
    return lambda shape, seed: uniform(_shape(shape), dt, seed)


@register_kernel("StatelessRandomNormal")
def _k_normal(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np
    return lambda shape, seed: normal(_shape(shape), dt, seed)


@register_kernel("StatelessTruncatedNormal")
def _k_truncated(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np
    return lambda shape, seed: truncated_normal(_shape(shape), dt, seed)


@register_kernel("StatelessRandomUniformInt")
def _k_uniform_int(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np

    def run(shape: Any, seed: Any, lo: Any, hi: Any) -> np.ndarray:
        if np.ndim(lo) != 0 or np.ndim(hi) != 0:
            raise InvalidArgumentError("minval and maxval must be scalars")
        return uniform_int(_shape(shape), dt, seed, int(lo), int(hi))
    return run


@register_kernel("StatelessRandomUniformFullInt")
def _k_full_int(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np
    return lambda shape, seed: uniform_full_int(_shape(shape), dt, seed)


@register_kernel("StatelessMultinomial")
def _k_multinomial(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np

    def run(logits: Any, num_samples: Any, seed: Any) -> np.ndarray:
        k = int(np.asarray(num_samples).reshape(()))
        if k < 0:
            raise InvalidArgumentError(f"num_samples should be nonnegative, got {k}")
        return multinomial(logits, k, seed, dt)
    return run


@register_kernel("RandomPoissonV2")
def _k_poisson(op: Any, ctx: KernelContext) -> Any:
    """Poisson(rate) samples of shape `shape + rate.shape` from the op's Session stream
    (not TensorFlow's stream: the distribution is the same)."""
    st = stream_for(op, ctx)
    dt = op.outputs[0].dtype.np

    def run(shape: Any, rate: Any) -> np.ndarray:
        shp = _shape(shape)
        lam = np.asarray(rate, np.float64)
        gen = st.gen if isinstance(st.gen, np.random.Generator) else np.random.default_rng()
        full = shp + lam.shape
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(lam) & (lam >= 0)
            draw = gen.poisson(np.broadcast_to(np.where(ok, lam, 0.0), full))
            # TF: NaN for a negative or NaN rate (0 for integer dtypes), as its kernel
            out = np.where(np.broadcast_to(ok, full), draw.astype(np.float64), np.nan)
        if np.dtype(dt).kind in "iu":
            out = np.where(np.isnan(out), 0, out)
        return out.astype(dt)
    return run
