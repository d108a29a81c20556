"""Kernels of graph/ops/core_misc_ops.py: Timestamp, Fingerprint (FarmHash Fingerprint64 of
each row, little-endian bytes) and GuaranteeConst."""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .farmhash import fingerprint64
from .registry import KernelContext, register_kernel
from .text_kernels import _bytes


@register_kernel("Timestamp")
def _timestamp(op: Any, ctx: KernelContext) -> Any:
    return lambda: np.asarray(time.time(), dtype=np.float64)


def _le8(v: int) -> bytes:
    return int(v).to_bytes(8, "little")


@register_kernel("Fingerprint")
def _fingerprint(op: Any, ctx: KernelContext) -> Any:
    def run(x: Any, method: Any) -> Any:
        m = method.item() if hasattr(method, "item") else method
        m = m.decode() if isinstance(m, bytes) else str(m)
        if m != "farmhash64":
            raise InvalidArgumentError(f"Unsupported fingerprint method: {m}", op)
        x = np.asarray(x)
        if x.ndim < 1:
            raise InvalidArgumentError("`data` should have at least one dimension.", op)
        n = x.shape[0]
        out = np.zeros((n, 8), dtype=np.uint8)
        if x.dtype == object:  # strings
            rows = x.reshape(n, -1) if n else x.reshape(0, 1)
            for i in range(n):
                if rows.shape[1] == 1:
                    h = fingerprint64(_bytes(rows[i, 0]))
                else:  # several strings a row: the fingerprint of their fingerprints
                    h = fingerprint64(b"".join(_le8(fingerprint64(_bytes(s))) for s in rows[i]))
                out[i] = np.frombuffer(_le8(h), dtype=np.uint8)
            return out
        data = np.ascontiguousarray(x).astype(x.dtype.newbyteorder("<"), copy=False)
        raw = data.reshape(n, -1).view(np.uint8).reshape(n, -1) if n else None
        for i in range(n):
            out[i] = np.frombuffer(_le8(fingerprint64(raw[i].tobytes())), dtype=np.uint8)
        return out
    return run


@register_kernel("GuaranteeConst")
def _guarantee_const(op: Any, ctx: KernelContext) -> Any:
    return lambda x: x
