"""The 64-bit string hashes TensorFlow buckets strings with, in pure Python.

fingerprint64 is FarmHash's Fingerprint64 (the "na" variant of Hash64, which FarmHash
promises never to change): tf.string_to_hash_bucket_fast and the out-of-vocabulary buckets
of lookup tables use it.  legacy_hash64 is the MurmurHash64A-style Hash64 of TF's
core/lib/hash with seed 0xDECAFCAFFE: the legacy tf.string_to_hash_bucket uses it.  Both are
written from the algorithms' descriptions; integers are Python ints kept to 64 bits by
masking.
"""
from __future__ import annotations

__all__ = ["fingerprint64", "legacy_hash64"]

_M = (1 << 64) - 1
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66FBE98F273
_K2 = 0x9AE16A3B2F90404F


def _ror(v: int, s: int) -> int:
    # FarmHash rotates right; a shift of 0 leaves the value as it is
    return v if s == 0 else ((v >> s) | (v << (64 - s))) & _M


def _f64(b: bytes, i: int) -> int:
    return int.from_bytes(b[i:i + 8], "little")


def _f32(b: bytes, i: int) -> int:
    return int.from_bytes(b[i:i + 4], "little")


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _len16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _M
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M
    b ^= b >> 47
    return (b * mul) & _M


def _len0to16(b: bytes, n: int) -> int:
    if n >= 8:
        mul = _K2 + n * 2
        a = (_f64(b, 0) + _K2) & _M
        c = _f64(b, n - 8)
        x = (_ror(c, 37) * mul + a) & _M
        y = ((_ror(a, 25) + c) * mul) & _M
        return _len16(x, y, mul)
    if n >= 4:
        mul = _K2 + n * 2
        return _len16(n + (_f32(b, 0) << 3), _f32(b, n - 4), mul)
    if n > 0:
        y = (b[0] + (b[n >> 1] << 8)) & 0xFFFFFFFF
        z = (n + (b[n - 1] << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _M) * _K2) & _M
    return _K2


def _len17to32(b: bytes, n: int) -> int:
    mul = _K2 + n * 2
    a = (_f64(b, 0) * _K1) & _M
    c = _f64(b, 8)
    d = (_f64(b, n - 8) * mul) & _M
    e = (_f64(b, n - 16) * _K2) & _M
    return _len16((_ror((a + c) & _M, 43) + _ror(d, 30) + e) & _M,
                  (a + _ror((c + _K2) & _M, 18) + d) & _M, mul)


def _len33to64(b: bytes, n: int) -> int:
    mul = _K2 + n * 2
    a = (_f64(b, 0) * _K2) & _M
    c = _f64(b, 8)
    d = (_f64(b, n - 8) * mul) & _M
    e = (_f64(b, n - 16) * _K2) & _M
    y = (_ror((a + c) & _M, 43) + _ror(d, 30) + e) & _M
    z = _len16(y, (a + _ror((c + _K2) & _M, 18) + d) & _M, mul)
    f = (_f64(b, 16) * mul) & _M
    g = _f64(b, 24)
    h = ((y + _f64(b, n - 32)) * mul) & _M
    i = ((z + _f64(b, n - 24)) * mul) & _M
    return _len16((_ror((f + g) & _M, 43) + _ror(h, 30) + i) & _M,
                  (f + _ror((g + a) & _M, 18) + h) & _M, mul)


def _weak32(b: bytes, i: int, a: int, c: int) -> tuple:
    """FarmHash's WeakHashLen32WithSeeds over the 32 bytes at i, seeded with (a, c)."""
    w, x, y, z = _f64(b, i), _f64(b, i + 8), _f64(b, i + 16), _f64(b, i + 24)
    a = (a + w) & _M
    c = _ror((c + a + z) & _M, 21)
    keep = a
    a = (a + x + y) & _M
    c = (c + _ror(a, 44)) & _M
    return (a + z) & _M, (c + keep) & _M


def fingerprint64(data: bytes) -> int:
    """FarmHash Fingerprint64 of `data` (TF's Fingerprint64), as an unsigned 64-bit int."""
    n = len(data)
    if n <= 16:
        return _len0to16(data, n)
    if n <= 32:
        return _len17to32(data, n)
    if n <= 64:
        return _len33to64(data, n)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _M
    z = (_shift_mix((y * _K2 + 113) & _M) * _K2) & _M
    v0 = v1 = w0 = w1 = 0
    x = (x * _K2 + _f64(data, 0)) & _M
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    s = 0
    while True:  # whole 64-byte blocks; the tail is the last 64 bytes, overlapping
        x = (_ror((x + y + v0 + _f64(data, s + 8)) & _M, 37) * _K1) & _M
        y = (_ror((y + v1 + _f64(data, s + 48)) & _M, 42) * _K1) & _M
        x ^= w1
        y = (y + v0 + _f64(data, s + 40)) & _M
        z = (_ror((z + w0) & _M, 33) * _K1) & _M
        v0, v1 = _weak32(data, s, (v1 * _K1) & _M, (x + w0) & _M)
        w0, w1 = _weak32(data, s + 32, (z + w1) & _M, (y + _f64(data, s + 16)) & _M)
        z, x = x, z
        s += 64
        if s == end:
            break
    mul = _K1 + ((z & 0xFF) << 1)
    s = last64
    w0 = (w0 + ((n - 1) & 63)) & _M
    v0 = (v0 + w0) & _M
    w0 = (w0 + v0) & _M
    x = (_ror((x + y + v0 + _f64(data, s + 8)) & _M, 37) * mul) & _M
    y = (_ror((y + v1 + _f64(data, s + 48)) & _M, 42) * mul) & _M
    x ^= (w1 * 9) & _M
    y = (y + v0 * 9 + _f64(data, s + 40)) & _M
    z = (_ror((z + w0) & _M, 33) * mul) & _M
    v0, v1 = _weak32(data, s, (v1 * mul) & _M, (x + w0) & _M)
    w0, w1 = _weak32(data, s + 32, (z + w1) & _M, (y + _f64(data, s + 16)) & _M)
    z, x = x, z
    return _len16((_len16(v0, w0, mul) + _shift_mix(y) * _K0 + z) & _M,
                  (_len16(v1, w1, mul) + x) & _M, mul)


_MM = 0xC6A4A7935BD1E995  # MurmurHash64A's multiplier


def legacy_hash64(data: bytes, seed: int = 0xDECAFCAFFE) -> int:
    """TF's core Hash64 (MurmurHash64A-style) of `data`, seed 0xDECAFCAFFE as
    tf.string_to_hash_bucket uses."""
    n = len(data)
    h = (seed ^ (n * _MM)) & _M
    full = n - n % 8
    for i in range(0, full, 8):
        k = (_f64(data, i) * _MM) & _M
        k ^= k >> 47
        k = (k * _MM) & _M
        h = ((h ^ k) * _MM) & _M
    if n > full:  # the last 1..7 bytes, little-endian
        h = ((h ^ int.from_bytes(data[full:], "little")) * _MM) & _M
    h ^= h >> 47
    h = (h * _MM) & _M
    return h ^ (h >> 47)
