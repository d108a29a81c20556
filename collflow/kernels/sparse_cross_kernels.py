"""Kernel of SparseCross (graph/ops/sparse_cross_ops.py), on the host: for each row of the
batch, the cartesian product of the row's values of every input column, as TF 1.15's
sparse_cross_op.cc forms it.  Hashed crosses chain FingerprintCat64 over each value's hash
(an int64 value is its own hash; a string's is FarmHash's Fingerprint64 of its UTF-8 bytes),
starting from hash_key, so the bucket ids are TF's.
"""
from __future__ import annotations

from typing import Any, List

import numpy as np

from ..errors import InvalidArgumentError
from .farmhash import fingerprint64
from .registry import KernelContext, register_kernel
from .text_kernels import _bytes

_MASK = (1 << 64) - 1
_KMUL = 0xC6A4A7935BD1E995


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def fingerprint_cat64(fp1: int, fp2: int) -> int:
    """TF's FingerprintCat64: combines two 64-bit fingerprints, order-dependent."""
    result = fp1 ^ _KMUL
    result ^= (_shift_mix((fp2 * _KMUL) & _MASK) * _KMUL) & _MASK
    result = (result * _KMUL) & _MASK
    result = (_shift_mix(result) * _KMUL) & _MASK
    return _shift_mix(result)


def _rows(indices: Any, values: Any, batch: int) -> List[list]:
    """Each row's values of a [batch, k] SparseTensor, in the order of its entries."""
    out: List[list] = [[] for _ in range(batch)]
    rows = np.asarray(indices)[:, 0] if len(values) else []
    for r, v in zip(rows, values):
        if not 0 <= int(r) < batch:
            raise InvalidArgumentError(f"sparse_cross: row index {int(r)} is outside the batch of {batch}")
        out[int(r)].append(v)
    return out


@register_kernel("SparseCross")
def _sparse_cross(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    ns, nd, hashed = a["num_sparse"], a["num_dense"], a["hashed_output"]
    num_buckets, hash_key = a["num_buckets"], a["hash_key"]

    def value_hash(v: Any) -> int:
        return fingerprint64(_bytes(v)) if isinstance(v, str) else int(v) & _MASK

    def value_text(v: Any) -> str:
        return v if isinstance(v, str) else str(int(v))

    def sparse_cross(*xs: Any) -> tuple:
        idx, vals, shapes, dense = xs[:ns], xs[ns:2 * ns], xs[2 * ns:3 * ns], xs[3 * ns:3 * ns + nd]
        batches = {int(np.asarray(s)[0]) for s in shapes} | {int(np.asarray(d).shape[0]) for d in dense}
        if len(batches) != 1:
            raise InvalidArgumentError(f"sparse_cross: the inputs' batch sizes differ: {sorted(batches)}")
        batch = batches.pop()
        # sparse columns first, then dense ones: the order TF's kernel crosses them in
        cols = [_rows(i, np.asarray(v).reshape(-1).tolist(), batch) for i, v in zip(idx, vals)]
        cols += [[list(row) for row in np.asarray(d).reshape(batch, -1).tolist()] for d in dense]
        if hashed:
            cols = [[[value_hash(v) for v in row] for row in c] for c in cols]
        else:
            cols = [[[value_text(v) for v in row] for row in c] for c in cols]
        out_idx: List[tuple] = []
        out_val: List[Any] = []
        width = 0
        for b in range(batch):
            crosses: List[Any] = [hash_key] if hashed else [None]
            for c in cols:  # the last column varies fastest, as TF's ProductIterator
                row = c[b]
                if hashed:
                    crosses = [fingerprint_cat64(h, v) for h in crosses for v in row]
                else:
                    crosses = [v if p is None else p + "_X_" + v for p in crosses for v in row]
            if not cols:
                crosses = []
            if hashed:
                crosses = [h % num_buckets if num_buckets > 0 else h % ((1 << 63) - 1) for h in crosses]
            out_idx.extend((b, j) for j in range(len(crosses)))
            out_val.extend(crosses)
            width = max(width, len(crosses))
        indices = np.asarray(out_idx, np.int64).reshape(-1, 2)
        values = np.asarray(out_val, np.int64) if hashed else np.asarray(out_val + [None], object)[:-1]
        return indices, values, np.asarray([batch, width], np.int64)
    return sparse_cross
