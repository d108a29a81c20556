"""Random streams of ops on a GPU: counter-based Philox4x32-10, so a checkpoint can save them.

CuPy's generators keep cuRAND states on the device behind a private interface: a checkpoint
could not save them, and a run resumed on a GPU drew other dropout masks than the run it
continued.  A Philox stream's whole state is its key, its counter and how many blocks it has
used: `get_state` is a few integers and `set_state` continues the stream exactly.  The words
come from one CUDA kernel (one thread per Philox call); on the host (or a simulated device)
from `philox.blocks`, which gives the same words: tests compare the two bit for bit.

Conversions are TensorFlow's (kernels/philox.py): float32 from a word's low 23 bits (float16
from 10), float64
from 52 bits of two words, normals by Box-Muller on pairs of uniforms, integers as
low + word mod range (two words for ranges over 2**32).
"""
from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

from . import philox as P

__all__ = ["PhiloxStream"]

_KIND = "collflow.Philox4x32-10"
_MASK64 = (1 << 64) - 1
_SOURCE = r"""
extern "C" __global__ void collflow_philox(unsigned int* out, long long n_blocks, unsigned int k0,
                                           unsigned int k1, unsigned long long lo0,
                                           unsigned long long hi0, unsigned long long start) {
    long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= n_blocks) return;
    unsigned long long lo = lo0 + start + (unsigned long long)b;
    unsigned long long hi = hi0 + (lo < lo0 ? 1ull : 0ull);   /* the 128-bit add's carry */
    unsigned int c0 = (unsigned int)lo, c1 = (unsigned int)(lo >> 32);
    unsigned int c2 = (unsigned int)hi, c3 = (unsigned int)(hi >> 32);
    for (int r = 0; r < 10; ++r) {
        unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
        unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0, n1 = (unsigned int)p1;
        unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1, n3 = (unsigned int)p0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    out[4 * b] = c0; out[4 * b + 1] = c1; out[4 * b + 2] = c2; out[4 * b + 3] = c3;
}
"""
_kernel: dict = {}


def _is_cupy(xp: Any) -> bool:
    return getattr(xp, "__collflow_base__", xp).__name__ == "cupy"


class PhiloxStream:
    """A random generator for one op in one Session on a device: uniform, normal, integers,
    permutation, and a state a checkpoint saves (`get_state`/`set_state`)."""

    __slots__ = ("xp", "seed", "seed2", "key", "counter", "offset", "gen")

    def __init__(self, xp: Any, seed: Optional[int], seed2: Optional[int]):
        self.xp, self.seed, self.seed2 = xp, seed, seed2
        self.gen = None  # no NumPy Generator behind it (callers that need one make their own)
        # (None, None): fresh OS entropy, so every Session gets a different stream
        entropy = None if seed is None else [int(seed) & _MASK64, int(seed2 or 0) & _MASK64]
        w = [int(v) for v in np.random.SeedSequence(entropy).generate_state(4, np.uint32)]
        self.key, self.counter = P.key_counter(w[0] | (w[1] << 32), w[2] | (w[3] << 32))
        self.offset = 0  # Philox calls used so far

    # -- the words ------------------------------------------------------------------------
    def words(self, n: int) -> Any:
        """The next `n` 32-bit words of the stream (uint32, on the stream's device)."""
        nb = -(-int(n) // 4)
        start, self.offset = self.offset, self.offset + nb
        if nb == 0:
            return self.xp.zeros((0,), dtype=np.uint32)
        if not _is_cupy(self.xp):
            host = P.blocks(self.key, self.counter, np.arange(start, start + nb, dtype=np.int64))
            return self.xp.asarray(host.reshape(-1)[:n])
        cp = getattr(self.xp, "__collflow_base__", self.xp)
        k = _kernel.get("k")
        if k is None:
            k = _kernel["k"] = cp.RawKernel(_SOURCE, "collflow_philox")
        out = cp.empty((nb * 4,), dtype=cp.uint32)
        lo0 = self.counter[0] | (self.counter[1] << 32)
        hi0 = self.counter[2] | (self.counter[3] << 32)
        threads = 256
        k(((nb + threads - 1) // threads,), (threads,),
          (out, np.int64(nb), np.uint32(self.key[0]), np.uint32(self.key[1]), np.uint64(lo0), np.uint64(hi0),
           np.uint64(start)))
        return out[:n]

    # -- draws ----------------------------------------------------------------------------
    def _uniform(self, n: int, dt: np.dtype) -> Any:
        if dt == np.float64:
            w = self.words(2 * n).reshape(n, 2).astype(np.uint64)
            bits = ((w[:, 0] << np.uint64(32)) | w[:, 1]) & np.uint64((1 << 52) - 1)
            return (bits | np.uint64(0x3FF0000000000000)).view(np.float64) - 1.0
        w = self.words(n)
        if dt == np.float16:  # the low 10 bits: [0, 1) exactly (a rounded float32 can give 1)
            h = ((w & np.uint32(0x3FF)) | np.uint32(0x3C00)).astype(np.uint16)
            return h.view(np.float16) - np.float16(1)
        f = ((w & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1)
        return f if dt == np.float32 else f.astype(dt)

    def uniform(self, shape: Tuple[int, ...], dtype: Any) -> Any:
        """Samples in [0, 1) of `dtype` (float16 is drawn as float32 and rounded)."""
        n = int(np.prod(shape, dtype=np.int64))
        return self._uniform(n, np.dtype(dtype)).reshape(shape)

    def normal(self, shape: Tuple[int, ...], dtype: Any) -> Any:
        dt = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64))
        work = np.float64 if dt == np.float64 else np.float32
        m = (n + 1) // 2
        u = self._uniform(2 * m, np.dtype(work)).reshape(m, 2)
        xp = self.xp
        u1 = xp.maximum(u[:, 0], work(1e-7))
        r = xp.sqrt(work(-2.0) * xp.log(u1))
        theta = work(2.0 * math.pi) * u[:, 1]
        z = xp.stack([r * xp.sin(theta), r * xp.cos(theta)], axis=1).reshape(-1)[:n]
        return (z if z.dtype == dt else z.astype(dt)).reshape(shape)

    def integers(self, low: int, high: int, shape: Tuple[int, ...], dtype: Any) -> Any:
        n = int(np.prod(shape, dtype=np.int64))
        span = int(high) - int(low)
        if span <= 0:
            raise ValueError(f"integers: high ({high}) must exceed low ({low})")
        if span <= 1 << 32:
            w = self.words(n).astype(np.uint64)
        else:
            w2 = self.words(2 * n).reshape(n, 2).astype(np.uint64)
            w = (w2[:, 0] << np.uint64(32)) | w2[:, 1]
        m = w if span == 1 << 64 else w % np.uint64(span)
        r = (m + np.uint64(int(low) & _MASK64)).view(np.int64)  # wraps as two's complement
        return r.astype(np.dtype(dtype)).reshape(shape)

    def permutation(self, n: int) -> Any:
        return self.xp.argsort(self.uniform((int(n),), np.float64))

    # -- checkpoints ----------------------------------------------------------------------
    def get_state(self) -> dict:
        """The stream's whole state: its key, counter and the Philox calls used."""
        return {"bit_generator": _KIND, "k0": int(self.key[0]), "k1": int(self.key[1]),
                "c0": int(self.counter[0]), "c1": int(self.counter[1]), "c2": int(self.counter[2]),
                "c3": int(self.counter[3]), "offset": int(self.offset)}

    def set_state(self, state: dict) -> None:
        if state.get("bit_generator") != _KIND:
            raise ValueError(f"a {state.get('bit_generator')!r} state cannot continue a {_KIND} stream")
        self.key = (int(state["k0"]), int(state["k1"]))
        self.counter = (int(state["c0"]), int(state["c1"]), int(state["c2"]), int(state["c3"]))
        self.offset = int(state["offset"])
