"""Kernels of graph/ops/stateful_random_ops.py: the ops of tf.random.experimental.Generator,
which read a Philox state from a resource variable and advance it in the same step, bit for
bit TensorFlow's CPU values.

The state (int64 [3]) holds the 128-bit counter (state[0] its low, state[1] its high 64 bits)
and the 64-bit key (state[2]); Philox takes each as 32-bit words, low half first.  A draw of
n values uses the stream that starts at that counter (the stateless ops' stream for that key
and counter: stateless_random_kernels.py) and moves the counter on by 256 * n calls (TF
reserves 256 calls per value, so draws never overlap); RngReadAndSkip(delta) moves it as a
draw of delta values.  Binomial samples use TF's samplers (inversion when the mean is below
10, else Hormann's BTRS) on a stream per output, and advance the counter by
256 * (num_batches * 200 * (samples_per_batch + 3) // 4).
The kernels run on the host (NumPy).
"""
from __future__ import annotations

import math
import os
from typing import Any, Callable, Tuple

import numpy as np

from ..errors import InvalidArgumentError, UnimplementedError
from . import philox as P
from . import stateless_random_kernels as SRK
from .registry import KernelContext, register_kernel

PHILOX, THREEFRY, AUTO_SELECT = 1, 2, 3
_RESERVED = 256            # Philox calls reserved per output value
_M64 = (1 << 64) - 1


def _host(a: Any) -> np.ndarray:
    return np.asarray(a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else a)


def _check_alg(alg: Any, op: Any) -> None:
    a = _host(alg)
    if a.ndim != 0:
        raise InvalidArgumentError(f"algorithm must be of shape [], not {list(a.shape)}", op)
    a = int(a)
    if a == THREEFRY:
        raise UnimplementedError("Non-XLA devices don't support the ThreeFry algorithm.", op)
    if a not in (PHILOX, AUTO_SELECT):    # auto-select is Philox on the CPU
        raise InvalidArgumentError(f"Unsupported algorithm id: {a}", op)


def read_and_advance(st: Any, op: Any, delta: int) -> np.ndarray:
    """The state's first three words before a draw (int64 [3]); the counter moves on by
    `delta` calls (128-bit addition, wrapping) under the variable's lock."""
    with st.lock:
        v = st.writable(op)
        if np.dtype(v.dtype) != np.int64:
            raise InvalidArgumentError(f"dtype of RNG state variable must be int64, not {np.dtype(v.dtype).name}",
                                       op)
        if v.ndim != 1:
            raise InvalidArgumentError(f"RNG state must have one and only one dimension, not {v.ndim}", op)
        if v.shape[0] < 3:
            raise InvalidArgumentError(f"For the Philox algorithm, the size of state must be at least 3; "
                                       f"got {v.shape[0]}", op)
        old = _host(v[:3]).astype(np.int64)
        c = ((int(old[0]) & _M64) | ((int(old[1]) & _M64) << 64)) + int(delta)
        lo, hi = c & _M64, (c >> 64) & _M64
        v[0] = lo - (1 << 64) if lo >> 63 else lo
        v[1] = hi - (1 << 64) if hi >> 63 else hi
    return old


def key_counter(state: np.ndarray) -> Tuple[P.Key, P.Counter]:
    """Philox's key and counter words of a state (int64 [>= 3])."""
    c0, c1, k = (int(x) & _M64 for x in state[:3])
    return (k & 0xFFFFFFFF, k >> 32), (c0 & 0xFFFFFFFF, c0 >> 32, c1 & 0xFFFFFFFF, c1 >> 32)


def _num(shape: Tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _fill(op: Any, draw: Callable[..., np.ndarray], check: Callable[..., None] = lambda *a: None) -> Any:
    """A kernel (st, alg, shape, *args): checks the inputs, advances the state by 256 calls
    per value, then draws from the stream at the old counter."""
    def run(st: Any, alg: Any, shape: Any, *args: Any) -> np.ndarray:
        _check_alg(alg, op)
        shp = SRK._shape(_host(shape))
        args = tuple(_host(a) for a in args)
        check(*args)
        old = read_and_advance(st, op, _RESERVED * _num(shp))
        return draw(shp, key_counter(old), *args)
    return run


@register_kernel("StatefulUniform")
def _k_uniform(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np
    return _fill(op, lambda shp, kc: SRK.uniform(shp, dt, kc))


@register_kernel("StatefulStandardNormalV2")
def _k_normal(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np
    return _fill(op, lambda shp, kc: SRK.normal(shp, dt, kc))


@register_kernel("StatefulTruncatedNormal")
def _k_truncated(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np
    return _fill(op, lambda shp, kc: SRK.truncated_normal(shp, dt, kc))


@register_kernel("StatefulUniformFullInt")
def _k_full_int(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np
    return _fill(op, lambda shp, kc: SRK.uniform_full_int(shp, dt, kc))


@register_kernel("StatefulUniformInt")
def _k_uniform_int(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np

    def check(lo: np.ndarray, hi: np.ndarray) -> None:
        if lo.ndim != 0:
            raise InvalidArgumentError(f"minval must be 0-D, got shape {list(lo.shape)}", op)
        if hi.ndim != 0:
            raise InvalidArgumentError(f"maxval must be 0-D, got shape {list(hi.shape)}", op)
        if not int(lo) < int(hi):
            raise InvalidArgumentError(f"Need minval < maxval: {int(lo)} >= {int(hi)}", op)
    return _fill(op, lambda shp, kc, lo, hi: SRK.uniform_int(shp, dt, kc, int(lo), int(hi)), check)


@register_kernel("RngReadAndSkip")
def _k_read_and_skip(op: Any, ctx: KernelContext) -> Any:
    def run(st: Any, alg: Any, delta: Any) -> np.ndarray:
        _check_alg(alg, op)
        d = _host(delta)
        if d.ndim != 0:
            raise InvalidArgumentError(f"delta must be a scalar, got shape {list(d.shape)}", op)
        return read_and_advance(st, op, _RESERVED * (int(d) & _M64))
    return run


@register_kernel("NonDeterministicInts")
def _k_nondeterministic(op: Any, ctx: KernelContext) -> Any:
    dt = np.dtype(op.outputs[0].dtype.np)

    def run(shape: Any) -> np.ndarray:
        shp = SRK._shape(_host(shape))
        n = _num(shp)
        # the OS's entropy, as TF's kernel (any bit pattern of the dtype)
        raw = np.frombuffer(os.urandom(max(n * dt.itemsize, 1)), np.uint8)[:n * dt.itemsize]
        if dt.kind in "iu":
            return raw.view(dt).reshape(shp).copy()
        return raw.view(np.uint64 if dt.itemsize == 8 else np.uint32).astype(dt).reshape(shp)
    return run


# -- binomial -----------------------------------------------------------------------------------

class _Doubles:
    """TF's buffered UniformDistribution<double> on a Philox stream from call `start`: each
    call gives two doubles, handed out second first."""

    def __init__(self, key: P.Key, ctr: P.Counter, start: int):
        self.key, self.ctr, self.call = key, ctr, start
        self.buf: list = []

    def __call__(self) -> float:
        if not self.buf:
            w = P.blocks(self.key, self.ctr, np.arange(self.call, self.call + 8, dtype=np.int64)).reshape(-1)
            d = P.uniform_f64(w[0::2], w[1::2]).reshape(-1, 2)[:, ::-1].reshape(-1)
            self.buf = d.tolist()[::-1]
            self.call += 8
        return self.buf.pop()


def _log(x: float) -> float:
    return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)


def _inversion(count: float, prob: float, u: _Doubles) -> float:
    """Sums geometric variables until they pass `count`: how many fit."""
    geom_sum, n = 0.0, 0
    l1p = math.log1p(-prob)
    while True:
        g = _log(u()) / l1p
        geom_sum += math.ceil(g) if math.isfinite(g) else g
        if geom_sum > count:
            return float(n)
        n += 1


_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
         0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k: float) -> float:
    if k <= 9:
        return _TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _btrs(count: float, prob: float, u: _Doubles) -> float:
    """Hormann's transformed rejection (as TF computes it, with its missing log)."""
    stddev = math.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor((count + 1) * prob)
    while True:
        x = u()
        v = u()
        x = x - 0.5
        us = 0.5 - abs(x)
        k = math.floor((2 * a / us + b) * x + c) if us > 0 else math.inf
        if us >= 0.07 and v <= v_r:
            return float(k)
        if k < 0 or k > count:
            continue
        v = _log(v * alpha / (a / (us * us) + b))
        upper = ((m + 0.5) * math.log((m + 1) / (r * (count - m + 1)))
                 + (count + 1) * math.log((count - m + 1) / (count - k + 1))
                 + (k + 0.5) * math.log(r * (count - k + 1) / (k + 1))
                 + _stirling_tail(m) + _stirling_tail(count - m) - _stirling_tail(k) - _stirling_tail(count - k))
        if v <= upper:
            return float(k)


def _one_binomial(count: Any, prob: Any, kc: Tuple[P.Key, P.Counter], idx: int) -> float:
    dcount = float(count)
    t = type(prob)
    if dcount <= 0.0 or prob <= t(0):
        return 0.0
    if prob >= t(1):
        return dcount
    if prob <= t(0.5):
        big, p, flip = count * prob >= t(10), float(prob), False
    elif prob > t(0.5):
        q = t(1) - prob
        big, p, flip = count * q >= t(10), float(q), True
    else:
        return math.nan
    if big:
        x = _btrs(dcount, p, _Doubles(kc[0], kc[1], _RESERVED * idx))
    else:
        # mean <= 10: TF reserves 42 calls per output for the inversion
        x = _inversion(dcount, p, _Doubles(kc[0], kc[1], 42 * idx))
    return dcount - x if flip else x


def _binomial_plan(shape: Tuple[int, ...], counts: np.ndarray, probs: np.ndarray) -> Tuple[int, int, Any, Any]:
    """(samples_per_batch, num_batches, counts, probs per batch member); checks the shapes."""
    try:
        bshape = tuple(np.broadcast_shapes(counts.shape, probs.shape))
    except ValueError:
        raise InvalidArgumentError(f"counts and probs must have compatible batch dimensions: "
                                   f"{list(counts.shape)} vs. {list(probs.shape)}") from None
    nsd = len(shape) - len(bshape)
    if nsd < 0 or tuple(shape[nsd:]) != bshape:
        raise InvalidArgumentError(f"Shape passed in must end with broadcasted shape: {list(shape)} vs. "
                                   f"{list(bshape)}")
    return (_num(shape[:nsd]), _num(shape[nsd:]), np.broadcast_to(counts, bshape).reshape(-1),
            np.broadcast_to(probs, bshape).reshape(-1))


def binomial(shape: Tuple[int, ...], counts: np.ndarray, probs: np.ndarray, out_dt: Any,
             kc: Tuple[P.Key, P.Counter]) -> np.ndarray:
    """Binomial(counts, probs) samples of `shape` (ending with the parameters' broadcast
    shape): sample j of batch member i is output (j, i) and uses the stream of output
    number i * samples_per_batch + j."""
    spb, nb, cb, pb = _binomial_plan(shape, counts, probs)
    out = np.empty(nb * spb, np.float64)
    for i in range(nb):
        for j in range(spb):
            out[j * nb + i] = _one_binomial(cb[i], pb[i], kc, i * spb + j)
    with np.errstate(invalid="ignore"):
        return out.astype(out_dt).reshape(shape)


@register_kernel("StatefulRandomBinomial")
def _k_binomial(op: Any, ctx: KernelContext) -> Any:
    dt = op.outputs[0].dtype.np

    def run(st: Any, alg: Any, shape: Any, counts: Any, probs: Any) -> np.ndarray:
        _check_alg(alg, op)
        shp = SRK._shape(_host(shape))
        c, p = _host(counts), _host(probs)
        spb, nb, _, _ = _binomial_plan(shp, c, p)
        old = read_and_advance(st, op, _RESERVED * (nb * 200 * (spb + 3) // 4))
        return binomial(shp, c, p, dt, key_counter(old))
    return run
