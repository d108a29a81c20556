"""Kernels of graph/ops/string_more_ops.py, on the host, element by element."""
from __future__ import annotations

import base64
import binascii
import functools
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .farmhash import fingerprint64, legacy_hash64
from .registry import KernelContext, register_kernel
from .text_kernels import _bytes, _map, _text

_MASK = (1 << 64) - 1


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _MASK


def siphash24(k0: int, k1: int, data: bytes) -> int:
    """SipHash-2-4 (Aumasson and Bernstein, 2012) of `data` under the key (k0, k1)."""
    v0, v1 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D
    v2, v3 = k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573

    def rounds(n: int) -> None:
        nonlocal v0, v1, v2, v3
        for _ in range(n):
            v0 = (v0 + v1) & _MASK
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)
            v2 = (v2 + v3) & _MASK
            v3 = _rotl(v3, 16) ^ v2
            v0 = (v0 + v3) & _MASK
            v3 = _rotl(v3, 21) ^ v0
            v2 = (v2 + v1) & _MASK
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)

    n = len(data)
    full = n - n % 8
    for i in range(0, full, 8):
        m = int.from_bytes(data[i:i + 8], "little")
        v3 ^= m
        rounds(2)
        v0 ^= m
    last = int.from_bytes(data[full:], "little") | ((n & 0xFF) << 56)
    v3 ^= last
    rounds(2)
    v0 ^= last
    v2 ^= 0xFF
    rounds(4)
    return v0 ^ v1 ^ v2 ^ v3


@register_kernel("AsString")
def _as_string(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    dt = op.inputs[0].dtype
    width = "" if a["width"] < 0 else str(a["width"])
    if dt.is_floating:
        prec = "" if a["precision"] < 0 else f".{a['precision']}"
        kind = "e" if a["scientific"] else "g" if a["shortest"] else "f"
        fmt = f"%{a['fill']}{width}{prec}{kind}"  # Python's % is C's printf for these,
        # but for nan and inf C pads with spaces whatever the "0" flag says
        fmt_inf = f"%{a['fill'].replace('0', '')}{width}{prec}{kind}"

        def one(v: Any) -> str:
            f = float(v)
            return (fmt if np.isfinite(f) else fmt_inf) % f
    elif dt.is_bool:
        def one(v: Any) -> str:
            return "true" if v else "false"
    else:
        fmt = f"%{a['fill']}{width}d"

        def one(v: Any) -> str:
            return fmt % int(v)

    def as_string(x: Any) -> Any:
        return _map(one, np.asarray(x))
    return as_string


@register_kernel("EncodeBase64")
def _encode_base64(op: Any, ctx: KernelContext) -> Any:
    pad = op.attrs["pad"]

    def one(s: Any) -> str:
        out = base64.urlsafe_b64encode(_bytes(s)).decode("ascii")
        return out if pad else out.rstrip("=")
    return lambda x: _map(one, x)


@register_kernel("DecodeBase64")
def _decode_base64(op: Any, ctx: KernelContext) -> Any:
    def one(s: Any) -> str:
        t = str(s).rstrip("=")
        try:
            if t.strip("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") or len(t) % 4 == 1:
                raise ValueError
            return _text(base64.urlsafe_b64decode(t + "=" * (-len(t) % 4)))
        except (ValueError, binascii.Error):
            raise InvalidArgumentError(f"decode_base64: invalid character or length in {str(s)[:40]!r}", op) from None
    return lambda x: _map(one, x)


@register_kernel("StringToHashBucketStrong")
def _hash_bucket_strong(op: Any, ctx: KernelContext) -> Any:
    n = op.attrs["num_buckets"]
    k0, k1 = op.attrs["key"]

    def one(s: Any) -> int:
        return siphash24(k0, k1, _bytes(s)) % n
    return lambda x: _map(one, x, np.int64)


@functools.lru_cache(maxsize=1 << 16)
def _fingerprint_of(s: str) -> int:
    # words repeat (vocabularies, out-of-vocabulary tokens): a recent one's hash is remembered,
    # as the pure-Python FarmHash costs microseconds per string
    return fingerprint64(_bytes(s))


@register_kernel("StringToHashBucketFast")
def _hash_bucket_fast(op: Any, ctx: KernelContext) -> Any:
    n = op.attrs["num_buckets"]
    return lambda x: _map(lambda s: _fingerprint_of(s) % n, x, np.int64)


@register_kernel("StringToHashBucket")
def _hash_bucket_legacy(op: Any, ctx: KernelContext) -> Any:
    n = op.attrs["num_buckets"]
    return lambda x: _map(lambda s: legacy_hash64(_bytes(s)) % n, x, np.int64)
