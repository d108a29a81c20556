"""The counter-based Philox4x32-10 generator and TensorFlow's conversions of its 32-bit words,
as its stateless random ops (tf.random.stateless_*) use them on the CPU.

- A seed pair (s0, s1) (int64) is scrambled into a key and a 128-bit counter by one Philox
  call on the counter (s0 lo, s0 hi, s1 lo, s1 hi) with a fixed key: its first two words are
  the key, its last two the counter's upper half (the lower half starts at 0).
- Each Philox call gives four 32-bit words; call k uses counter + k (128-bit addition).
- float32 in [0, 1): the low 23 bits as the mantissa of a float in [1, 2), minus 1; float16
  likewise from the low 10 bits; float64 from two words (first << 32 | second), 52 bits.
- Box-Muller on a pair of uniforms (u1 clamped to 1e-7): sqrt(-2 log u1) (sin, cos)(2 pi u2).

Everything here was checked bit for bit against TensorFlow's outputs.  The float32 Box-Muller
needs the C library's logf/sinf/cosf (called through ctypes), which are not correctly rounded.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math
from typing import Any, Optional, Tuple

import numpy as np

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_MASK32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
# the key of the seed-scrambling call (TensorFlow's constant)
_SCRAMBLE_KEY = (0x3EC8F720, 0x02461E29)

Key = Tuple[int, int]
Counter = Tuple[int, int, int, int]


def philox(ctr: np.ndarray, key: Key) -> np.ndarray:
    """Philox4x32-10 of counters `ctr` ([n, 4], 32-bit values in any integer dtype) under
    `key`: [n, 4] uint32."""
    c0, c1, c2, c3 = (ctr[:, i].astype(np.uint64) for i in range(4))
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(10):
        p0 = _M0 * c0           # 32 x 32 -> 64 bits: fits uint64 exactly
        p1 = _M1 * c2
        c0, c1, c2, c3 = (p1 >> _S32) ^ c1 ^ k0, p1 & _MASK32, (p0 >> _S32) ^ c3 ^ k1, p0 & _MASK32
        k0 = (k0 + _W0) & _MASK32
        k1 = (k1 + _W1) & _MASK32
    return np.stack([c0, c1, c2, c3], 1).astype(np.uint32)


def key_counter(seed0: int, seed1: int) -> Tuple[Key, Counter]:
    """The key and counter a seed pair is scrambled into."""
    s0, s1 = int(seed0) & 0xFFFFFFFFFFFFFFFF, int(seed1) & 0xFFFFFFFFFFFFFFFF
    ctr = np.array([[s0 & 0xFFFFFFFF, s0 >> 32, s1 & 0xFFFFFFFF, s1 >> 32]], np.uint64)
    mix = [int(v) for v in philox(ctr, _SCRAMBLE_KEY)[0]]
    return (mix[0], mix[1]), (0, 0, mix[2], mix[3])


def blocks(key: Key, counter: Counter, start: np.ndarray) -> np.ndarray:
    """The Philox outputs [len(start), 4] (uint32) of calls number `start` (int64 offsets)."""
    lo0 = counter[0] | (counter[1] << 32)
    hi0 = counter[2] | (counter[3] << 32)
    lo = np.uint64(lo0) + np.asarray(start, np.uint64)
    carry = (lo < np.uint64(lo0)).astype(np.uint64)      # the 128-bit add's carry
    hi = np.uint64(hi0) + carry
    ctr = np.stack([lo & _MASK32, lo >> _S32, hi & _MASK32, hi >> _S32], 1)
    return philox(ctr, key)


def words(key: Key, counter: Counter, n_words: int, first_block: int = 0) -> np.ndarray:
    """`n_words` consecutive words of the stream from call `first_block` on (uint32)."""
    nb = -(-n_words // 4)
    return blocks(key, counter, np.arange(first_block, first_block + nb, dtype=np.int64)).reshape(-1)[:n_words]


def uniform_f32(w: np.ndarray) -> np.ndarray:
    """float32 in [0, 1) from each word's low 23 bits."""
    return ((w.astype(np.uint32) & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1)


def uniform_f16(w: np.ndarray) -> np.ndarray:
    """float16 in [0, 1) from each word's low 10 bits."""
    b = ((w.astype(np.uint32) & np.uint32(0x3FF)) | np.uint32(0x3C00)).astype(np.uint16)
    return b.view(np.float16) - np.float16(1)


def uniform_f64(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """float64 in [0, 1) from word pairs: 52 bits of (hi << 32 | lo)."""
    x = (hi.astype(np.uint64) << _S32) | lo.astype(np.uint64)
    return ((x & np.uint64((1 << 52) - 1)) | np.uint64(0x3FF0000000000000)).view(np.float64) - 1.0


# -- the C library's float functions ------------------------------------------------------

def _load_libm() -> Optional[ctypes.CDLL]:
    name = ctypes.util.find_library("m")
    try:
        lib = ctypes.CDLL(name or "libm.so.6")
    except OSError:
        return None
    for fn in ("logf", "sinf", "cosf"):
        f = getattr(lib, fn)
        f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float]
    return lib


_LIBM = _load_libm()
_F64 = {"logf": np.log, "sinf": np.sin, "cosf": np.cos}


def libm_f32(fn: str, x: np.ndarray) -> np.ndarray:
    """The C library's float32 `fn` ("logf", "sinf" or "cosf") of float32 `x`, lane by lane
    (its results are not the correctly rounded ones that NumPy's float64 would give: they
    differ by an ulp in about 1% of lanes); without a C library, float64 rounded."""
    x = np.asarray(x, np.float32)
    if _LIBM is None:
        with np.errstate(all="ignore"):
            return _F64[fn](x.astype(np.float64)).astype(np.float32)
    f = getattr(_LIBM, fn)
    return np.fromiter(map(f, x.reshape(-1).tolist()), np.float32, count=x.size).reshape(x.shape)


def box_muller_f32(w0: np.ndarray, w1: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Pairs of float32 normals from pairs of words, as TensorFlow's CPU kernels compute them:
    the angle 2 pi u2 in double rounded to float, the rest in float32."""
    u1 = np.maximum(uniform_f32(w0), np.float32(1e-7))
    v1 = (2.0 * math.pi * uniform_f32(w1).astype(np.float64)).astype(np.float32)
    r = np.sqrt(np.float32(-2.0) * libm_f32("logf", u1))
    return libm_f32("sinf", v1) * r, libm_f32("cosf", v1) * r


def _libm_f64(fn: Any, x: np.ndarray) -> np.ndarray:
    """The C library's double `fn` (through Python's math module) lane by lane: NumPy's own
    float64 log/sin/cos take SIMD paths on AVX-512 CPUs whose last bits differ from the C
    library's, which TensorFlow's kernels call (an AVX-512 AMD EPYC host: some of 1001
    normals off by an ulp)."""
    return np.fromiter(map(fn, x.reshape(-1).tolist()), np.float64, count=x.size).reshape(x.shape)


def box_muller_f64(w: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Pairs of float64 normals from groups of four words (two doubles)."""
    u1 = np.maximum(uniform_f64(w[0::4], w[1::4]), 1e-7)
    v1 = 2.0 * math.pi * uniform_f64(w[2::4], w[3::4])
    r = np.sqrt(-2.0 * _libm_f64(math.log, u1))
    return _libm_f64(math.sin, v1) * r, _libm_f64(math.cos, v1) * r
