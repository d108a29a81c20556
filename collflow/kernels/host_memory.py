"""The C allocator's policy for the host arrays kernels make (glibc's malloc; elsewhere nothing).

A training step allocates and frees the same large arrays every step: activations, gradients,
a recurrent op's saved gates, im2col columns, hundreds of KiB to tens of MiB each.  glibc's
malloc serves a block over its mmap threshold with a fresh mapping and hands memory at the top
of its heap back to the kernel past its trim threshold, so such arrays arrive as new pages in
every step and each first touch page-faults and zeroes a page.  Fixing both thresholds keeps
freed blocks for reuse, as TensorFlow's and PyTorch's caching allocators do: the small
char-LSTM step of benchmarks/bench_tf1.py went from 20-21 ms to 16 ms, its input projection's
GEMM from 1.8 to 0.9 ms (the same GEMM timed alone).  Live memory is unchanged; a process
keeps up to TRIM_THRESHOLD of freed memory at the top of its heap instead of returning it, and
blocks over MMAP_THRESHOLD (a large embedding table) are still mapped and unmapped whole.

Applied once per process when the first Session is made.  Opt out with
COLLFLOW_MALLOC_TUNING=0; it is also left alone when the environment sets glibc's own
malloc tunables (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, GLIBC_TUNABLES).
"""
from __future__ import annotations

import ctypes
import os
import threading
from typing import Optional

__all__ = ["keep_freed_memory", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

# glibc refuses an mmap threshold over HEAP_MAX_SIZE / 2 (32 MiB with 64-bit pointers)
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 256 << 20
# <malloc.h>
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_USER_TUNABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "GLIBC_TUNABLES")

_lock = threading.Lock()
_applied: Optional[bool] = None


def keep_freed_memory() -> bool:
    """Sets glibc malloc's mmap and trim thresholds (once per process); True if they are set
    (now or before), False where they are not (opted out, tunables given, not glibc)."""
    global _applied
    with _lock:
        if _applied is None:
            _applied = _apply()
        return _applied


def _apply() -> bool:
    if os.environ.get("COLLFLOW_MALLOC_TUNING", "1").strip() == "0":
        return False
    if any(k in os.environ for k in _USER_TUNABLES):
        return False  # the user chose the allocator's settings
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # glibc only: other C libraries' mallopt differs or is absent
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
