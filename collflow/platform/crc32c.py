"""CRC-32C (Castagnoli; reflected polynomial 0x82F63B78), the checksum of TFRecord framing,
computed with NumPy over many byte strings at once.

A pure-Python table loop costs ~80 ns a byte; here the work is vectorized across records
using that the CRC is linear over GF(2).  Write R(c, d) for the CRC register after feeding
bytes d from register c (no final xor), and Z_n for "feed n zero bytes" (a linear map of the
32-bit register).  Then

    R(c, d) = Z_len(d)(c) ^ R(0, d)          R(0, 0...0 || d) = R(0, d)
    R(0, a || b) = Z_len(b)(R(0, a)) ^ R(0, b)
    crc32c(d) = R(0xFFFFFFFF, d) ^ 0xFFFFFFFF

So every string is front-padded with zeros to a multiple of a chunk size K, the raw CRCs of
all chunks of all strings are computed in lockstep (one NumPy op per 4-byte word position,
through two 65536-entry tables of Z_4), each chunk's CRC is advanced by the zero bytes that
follow it in its string (by the bits of that distance, with Z_{2^b} as four 256-entry
tables), XOR-reduced per string, and init/final-xor are folded in with Z_len(0xFFFFFFFF).
K is chosen per size class so that padding stays small and each NumPy op covers thousands
of chunks; long strings are cut into pieces of at most _PIECE bytes so memory stays bounded.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

__all__ = ["crc32c", "masked_crc32c", "crc32c_many", "masked_crc32c_many", "crc32c_u64le", "mask"]

_POLY = 0x82F63B78
_MASK_DELTA = 0xA282EAD8


def _byte_table() -> List[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _byte_table()
_TABLE_NP = np.array(_TABLE, dtype=np.uint32)


def _crc_py(data: Any, crc: int = 0xFFFFFFFF) -> int:
    """The register after feeding `data` from `crc` (the byte-at-a-time loop; tiny inputs)."""
    table = _TABLE
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


# -- linear maps of the register ----------------------------------------------------------------------
# A map is kept as the images of the 32 unit vectors (uint32[32]) and applied through
# byte-wise tables (uint32[4, 256]): map(x) = t[0][x & 255] ^ t[1][x >> 8 & 255] ^ ...

def _tables8(images: np.ndarray) -> np.ndarray:
    out = np.zeros((4, 256), dtype=np.uint32)
    for k in range(4):
        t = np.zeros(1, dtype=np.uint32)
        for bit in range(8):  # entries with this bit set are those without it, xor its image
            t = np.concatenate([t, t ^ images[8 * k + bit]])
        out[k] = t
    return out


def _apply8(t: np.ndarray, x: np.ndarray) -> np.ndarray:
    y = t[0][x & 0xFF]
    y ^= t[1][(x >> 8) & 0xFF]
    y ^= t[2][(x >> 16) & 0xFF]
    y ^= t[3][x >> 24]
    return y


_UNIT = np.left_shift(np.uint32(1), np.arange(32, dtype=np.uint32))
# Z_1: one zero byte, crc -> T[crc & 255] ^ crc >> 8
_Z1 = _TABLE_NP[_UNIT & 0xFF] ^ (_UNIT >> 8)
# _ZPOW[b]: Z_{2^b} as byte-wise tables, built by squaring (extended on demand)
_ZPOW: List[np.ndarray] = [_tables8(_Z1)]
_ZPOW_IMAGES: List[np.ndarray] = [_Z1]


_ZPOW_LOCK = threading.Lock()


def _zpow(b: int) -> np.ndarray:
    if b >= len(_ZPOW):
        with _ZPOW_LOCK:  # datasets may compute CRCs on several threads
            while len(_ZPOW) <= b:
                img = _apply8(_ZPOW[-1], _ZPOW_IMAGES[-1])  # Z_{2n} = Z_n o Z_n
                _ZPOW_IMAGES.append(img)
                _ZPOW.append(_tables8(img))
    return _ZPOW[b]


def _tables16(images: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """A map as two 65536-entry tables: map(x) = lo[x & 0xFFFF] ^ hi[x >> 16]."""
    out = []
    for half in (0, 16):
        t = np.zeros(1, dtype=np.uint32)
        for bit in range(16):
            t = np.concatenate([t, t ^ images[half + bit]])
        out.append(t)
    return out[0], out[1]


_zpow(2)
# the hot loop's step: xor in a little-endian word, then feed 4 zero bytes
_Z4_LO, _Z4_HI = _tables16(_ZPOW_IMAGES[2])


def _advance(x: np.ndarray, n: np.ndarray, shift: int = 0) -> np.ndarray:
    """Z_{n << shift}(x) elementwise (x uint32, n non-negative int64), in place on x."""
    top = int(n.max()) if n.size else 0
    b = 0
    while top >> b:
        sel = np.flatnonzero((n >> b) & 1)
        if sel.size:
            x[sel] = _apply8(_zpow(b + shift), x[sel])
        b += 1
    return x


# -- the vectorized raw CRC -----------------------------------------------------------------------------

_PIECE = 1 << 22          # longer strings are cut into pieces of this many bytes
_BATCH = 1 << 22          # padded bytes per lockstep pass
_MIN_CHUNKS = 2048        # a size class with fewer chunks is merged into the next smaller one
_KMIN, _KMAX = 4, 10      # chunk sizes 16 .. 1024 bytes (log2)
_PY_BELOW = 4096          # total bytes under which the Python loop is faster (measured)
_SPLIT = 4.0             # a string of n bytes is cut into chunks of about n / _SPLIT (padding < 25%)
_ZEROS: Dict[int, bytes] = {}


def _raw_lockstep(parts: Sequence[Any], lens: np.ndarray, kexp: int) -> np.ndarray:
    """R(0, part) for parts all padded to chunks of 2**kexp bytes, in one lockstep pass."""
    k = 1 << kexp
    m = np.maximum((lens + k - 1) >> kexp, 1)
    pads = (m << kexp) - lens
    joined: List[Any] = []
    for p, d in zip(pads.tolist(), parts):
        z = _ZEROS.get(p)
        if z is None:
            z = _ZEROS[p] = bytes(p)
        joined.append(z)
        joined.append(d)
    nchunks = int(m.sum())
    # (words per chunk, chunks): each lockstep op reads one contiguous row
    words = np.frombuffer(b"".join(joined), dtype="<u4").reshape(nchunks, k >> 2).T.astype(np.uint32, order="C")
    crc = np.zeros(nchunks, dtype=np.uint32)
    x = np.empty(nchunks, dtype=np.uint32)
    lo = np.empty(nchunks, dtype=np.uint32)
    t = np.empty(nchunks, dtype=np.uint32)
    for row in words:
        np.bitwise_xor(crc, row, out=x)
        np.bitwise_and(x, 0xFFFF, out=lo)
        np.right_shift(x, 16, out=x)
        np.take(_Z4_LO, lo, out=t)
        np.take(_Z4_HI, x, out=crc)
        crc ^= t
    first = np.zeros(len(parts), dtype=np.int64)
    np.cumsum(m[:-1], out=first[1:])
    # chunk j of a part with m chunks is followed by (m - 1 - j) chunks
    after = np.repeat(first + m, m) - 1 - np.arange(nchunks, dtype=np.int64)
    _advance(crc, after, kexp)
    return np.bitwise_xor.reduceat(crc, first)


def _raw_many(parts: Sequence[Any], lens: np.ndarray) -> np.ndarray:
    """R(0, part) for each part (each at most _PIECE bytes)."""
    out = np.zeros(len(parts), dtype=np.uint32)
    # a chunk of about len / _SPLIT keeps the padding small and the chunks per string few
    kexp = np.clip(np.floor(np.log2(np.maximum(lens, 1) / _SPLIT)).astype(np.int64), _KMIN, _KMAX)
    for e in range(_KMAX, _KMIN, -1):  # classes too small to fill a pass share the next one down
        cls = kexp == e
        if cls.any() and int(lens[cls].sum()) < (_MIN_CHUNKS << e):
            kexp[cls] = e - 1
    for e in range(_KMAX, _KMIN - 1, -1):
        idx = np.flatnonzero(kexp == e)
        start = 0
        while start < idx.size:  # passes of at most _BATCH padded bytes
            padded = np.cumsum(lens[idx[start:]] + (1 << e))
            stop = start + max(1, int(np.searchsorted(padded, _BATCH, side="right")))
            sel = idx[start:stop]
            out[sel] = _raw_lockstep([parts[i] for i in sel.tolist()], lens[sel], e)
            start = stop
    return out


def _as_bytes_like(d: Any) -> Any:
    if isinstance(d, (bytes, bytearray)):
        return d
    if isinstance(d, str):
        return d.encode("utf-8", "surrogateescape")
    mv = memoryview(d)
    return mv if mv.format == "B" and mv.ndim == 1 and mv.c_contiguous else mv.cast("B") if mv.c_contiguous \
        else mv.tobytes()


def crc32c_many(datas: Sequence[Any]) -> np.ndarray:
    """The CRC-32C of each byte string (bytes-like; str is UTF-8 with surrogateescape), as a
    uint32 array; vectorized over all of them."""
    if not all(type(d) is bytes for d in datas):
        datas = [_as_bytes_like(d) for d in datas]
    lens = np.fromiter((len(d) for d in datas), dtype=np.int64, count=len(datas))
    if not datas or int(lens.sum()) < _PY_BELOW:
        return np.array([_crc_py(d) ^ 0xFFFFFFFF for d in datas], dtype=np.uint32)
    big = np.flatnonzero(lens > _PIECE)
    if big.size:  # cut into pieces; a piece is followed by `after` bytes of its string
        parts: List[Any] = []
        owner: List[int] = []
        after: List[int] = []
        for i, d in enumerate(datas):
            n = len(d)
            mv = memoryview(d)
            for s in range(0, max(n, 1), _PIECE):
                e = min(s + _PIECE, n)
                parts.append(mv[s:e])
                owner.append(i)
                after.append(n - e)
        plens = np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))
        raw = _advance(_raw_many(parts, plens), np.array(after, dtype=np.int64))
        acc = np.zeros(len(datas), dtype=np.uint32)
        np.bitwise_xor.at(acc, np.array(owner, dtype=np.int64), raw)
    else:
        acc = _raw_many(datas, lens)
    # Z_len(~0) once per distinct length (records often share a few lengths)
    ulens, inverse = np.unique(lens, return_inverse=True)
    init = _advance(np.full(ulens.size, 0xFFFFFFFF, dtype=np.uint32), ulens)[inverse]
    return init ^ acc ^ np.uint32(0xFFFFFFFF)


def _z4(x: np.ndarray) -> np.ndarray:
    return _Z4_LO[x & 0xFFFF] ^ _Z4_HI[x >> 16]


_Z8_ONES = int(_advance(np.array([0xFFFFFFFF], dtype=np.uint32), np.array([8], dtype=np.int64))[0])


def crc32c_u64le(values: Any) -> np.ndarray:
    """The CRC-32C of each value's 8 little-endian bytes (TFRecord's length headers), as a
    uint32 array: Z_8(~0) ^ Z_4(Z_4(low word) ^ high word) ^ ~0, with no per-value Python."""
    v = np.asarray(values, dtype=np.uint64)
    lo = (v & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    hi = (v >> np.uint64(32)).astype(np.uint32)
    return _z4(_z4(lo) ^ hi) ^ np.uint32(_Z8_ONES ^ 0xFFFFFFFF)


def crc32c(data: Any) -> int:
    """The CRC-32C of `data` (crc32c(b"123456789") == 0xE3069283)."""
    data = _as_bytes_like(data)
    if len(data) < _PY_BELOW:
        return _crc_py(data) ^ 0xFFFFFFFF
    return int(crc32c_many([data])[0])


def mask(crc: Any) -> Any:
    """TensorFlow's crc32c::Mask (rotate right by 15, add 0xa282ead8), on an int or a uint32 array."""
    if isinstance(crc, np.ndarray):
        c = crc.astype(np.uint32)
        return ((c >> np.uint32(15)) | (c << np.uint32(17))) + np.uint32(_MASK_DELTA)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def masked_crc32c(data: Any) -> int:
    """TensorFlow's masked CRC: storing a CRC of data that itself holds CRCs stays robust."""
    return mask(crc32c(data))


def masked_crc32c_many(datas: Sequence[Any]) -> np.ndarray:
    """masked_crc32c of each byte string, as a uint32 array."""
    return mask(crc32c_many(datas))
