"""The host CPU's cache sizes, for kernels that block their work to stay in cache.

im2col convolutions copy each batch chunk's windows into a column matrix and hand it to one
GEMM; the chunk pays off while the matrix stays in cache between the copy and the product.
The chunk that pays off grows with the per-core L2 and with BLAS's threads: on a 512 KiB-L2
host (AMD EPYC, AVX2) 1 MiB chunks ran the MNIST tutorial's second conv layer faster than
4 MiB on one thread (5-12% per op); on a 1 MiB-L2 host (AMD EPYC, AVX-512, 32 MiB L3) its
whole train step, chunk sizes interleaved in one process, took 37.2 / 37.5 / 37.1 / 37.3 /
38.4 ms with 512 KiB / 1 / 2 / 4 / 8 MiB chunks on one BLAS thread, and 47.1 / 46.5 / 44.4 /
42.3 / 41.7 ms on two (a slower hour of that host: bigger chunks give a threaded GEMM more
rows to share).  `block_bytes` takes four times the L2: 2 MiB on the first host, 4 MiB on
the second, the best there on two threads and within noise of the best on one.
"""
from __future__ import annotations

import functools
import glob
import os
from typing import Optional

__all__ = ["l2_bytes", "block_bytes"]

# used where the L2 size cannot be read (another OS, a container hiding sysfs)
_DEFAULT_L2 = 512 << 10


def _parse_size(text: str) -> Optional[int]:
    """Bytes of a sysfs cache size ("2048K", "32M", "512")."""
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    digits = text[:-1] if text[-1:] in "KMG" else text
    return int(digits) * scale if digits.isdigit() else None


@functools.lru_cache(maxsize=None)
def l2_bytes() -> int:
    """The L2 (data or unified) cache of CPU 0 in bytes, from Linux's sysfs; 512 KiB when unknown."""
    for d in sorted(glob.glob("/sys/devices/system/cpu/cpu0/cache/index*")):
        try:
            with open(os.path.join(d, "level")) as f:
                level = f.read().strip()
            with open(os.path.join(d, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(d, "size")) as f:
                size = _parse_size(f.read())
        except OSError:
            continue
        if level == "2" and kind in ("Unified", "Data") and size:
            return size
    return _DEFAULT_L2


def block_bytes() -> int:
    """The working set a blocked CPU kernel aims at: four times the L2, within 1..16 MiB."""
    return min(max(4 * l2_bytes(), 1 << 20), 16 << 20)
