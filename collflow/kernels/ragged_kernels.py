"""Kernels of the index helpers behind tf.RaggedTensor (graph/ops/ragged_ops.py), on the host.

They turn row partitions (row_splits, value_rowids, lengths) into one another and into the
gather/scatter indices with which the differentiable ops (gather, gather_nd, segment sums)
move the values; none of them touches the values, so none needs a gradient.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel


def _splits(x: Any, op: Any, what: str = "row_splits") -> np.ndarray:
    s = np.asarray(x).astype(np.int64).reshape(-1)
    if s.size == 0:
        raise InvalidArgumentError(f"{what} must have at least one element (a leading 0)", op)
    if s[0] != 0:
        raise InvalidArgumentError(f"{what} must start with 0, got {s[0]}", op)
    if np.any(np.diff(s) < 0):
        raise InvalidArgumentError(f"{what} must be sorted in ascending order", op)
    return s


@register_kernel("RaggedCheckSplits")
def _check_splits(op: Any, ctx: KernelContext) -> Any:
    def check(splits: Any, nvals: Any) -> Any:
        s = _splits(splits, op)
        if int(s[-1]) != int(nvals):
            raise InvalidArgumentError(f"the last row split ({int(s[-1])}) must equal the number of values "
                                       f"({int(nvals)})", op)
        return s
    return check


@register_kernel("RaggedSameSplits")
def _same_splits(op: Any, ctx: KernelContext) -> Any:
    def same(a: Any, b: Any) -> Any:
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or np.any(a != b):
            raise InvalidArgumentError("Inputs must have identical ragged splits", op)
        return a
    return same


@register_kernel("RaggedSplitsToRowIds")
def _splits_to_rowids(op: Any, ctx: KernelContext) -> Any:
    def rowids(splits: Any) -> Any:
        s = _splits(splits, op)
        return np.repeat(np.arange(s.size - 1, dtype=np.int64), np.diff(s))
    return rowids


@register_kernel("RaggedRowIdsToSplits")
def _rowids_to_splits(op: Any, ctx: KernelContext) -> Any:
    def splits(rowids: Any, nrows: Any) -> Any:
        r = np.asarray(rowids).astype(np.int64).reshape(-1)
        n = int(nrows)
        if n < 0:
            n = int(r[-1]) + 1 if r.size else 0
        if r.size and (np.any(np.diff(r) < 0) or r[0] < 0):
            raise InvalidArgumentError("value_rowids must be sorted in ascending order and non-negative", op)
        if r.size and r[-1] >= n:
            raise InvalidArgumentError(f"value_rowids must be less than nrows ({n}), got {int(r[-1])}", op)
        out = np.zeros(n + 1, np.int64)
        out[1:] = np.cumsum(np.bincount(r, minlength=n)[:n])
        return out
    return splits


@register_kernel("RaggedDenseGatherIndex")
def _dense_gather_index(op: Any, ctx: KernelContext) -> Any:
    """[nrows, width] indices into values + one default row (index = number of values):
    the value of row r, column c where the row has one, else the default row."""
    def index(splits: Any, width: Any) -> Any:
        s = _splits(splits, op)
        lengths = np.diff(s)
        w = int(width)
        if w < 0:
            w = int(lengths.max()) if lengths.size else 0
        cols = np.arange(w, dtype=np.int64)[None, :]
        idx = s[:-1, None] + cols
        return np.where(cols < lengths[:, None], idx, s[-1]).astype(np.int64)
    return index


@register_kernel("RaggedFromDenseIndices")
def _from_dense_indices(op: Any, ctx: KernelContext) -> Any:
    """[N, 2] (row, column) of the first lengths[r] entries of each row of a dense matrix."""
    def indices(lengths: Any, width: Any) -> Any:
        n = np.asarray(lengths).astype(np.int64).reshape(-1)
        w = int(width)
        if np.any(n < 0) or (n.size and int(n.max()) > w):
            raise InvalidArgumentError(f"lengths must be in [0, {w}], got {n.tolist()}", op)
        rows = np.repeat(np.arange(n.size, dtype=np.int64), n)
        starts = np.repeat(np.cumsum(n) - n, n)
        cols = np.arange(rows.size, dtype=np.int64) - starts
        return np.stack([rows, cols], axis=1).reshape(-1, 2)
    return indices


@register_kernel("RaggedLengthsFromPadding")
def _lengths_from_padding(op: Any, ctx: KernelContext) -> Any:
    """Each row's length once its trailing entries equal to `padding` are dropped."""
    def lengths(x: Any, padding: Any) -> Any:
        a = np.asarray(x)
        if a.ndim < 2:
            raise InvalidArgumentError(f"from_tensor needs a tensor of rank >= 2, got shape {a.shape}", op)
        eq = a == np.asarray(padding, dtype=a.dtype)
        pad = eq.reshape(a.shape[0], a.shape[1], -1).all(axis=2)  # [rows, cols]: all inner entries pad
        keep = ~pad
        # the last kept column + 1 (0 for a row of padding only)
        last = np.where(keep.any(axis=1), a.shape[1] - np.argmax(keep[:, ::-1], axis=1), 0)
        return last.astype(np.int64)
    return lengths


@register_kernel("RaggedToSparseIndices")
def _to_sparse_indices(op: Any, ctx: KernelContext) -> Any:
    """The coordinates (outer row, ragged columns..., inner dims...) of every flat value entry."""
    k = op.attrs["num_splits"]

    def indices(*args: Any) -> Any:
        splits = [_splits(s, op) for s in args[:k]]
        inner = list(np.shape(args[k])[1:])
        coords = np.arange(splits[0].size - 1, dtype=np.int64)[:, None]
        dims = [splits[0].size - 1]
        for s in splits:
            lengths = np.diff(s)
            rep = np.repeat(coords, lengths, axis=0)
            cols = np.arange(int(s[-1]), dtype=np.int64) - np.repeat(s[:-1], lengths)
            coords = np.concatenate([rep, cols[:, None]], axis=1)
            dims.append(int(lengths.max()) if lengths.size else 0)
        if inner:
            sub = np.stack(np.meshgrid(*[np.arange(d) for d in inner], indexing="ij"), -1).reshape(-1, len(inner))
            coords = np.concatenate([np.repeat(coords, sub.shape[0], axis=0),
                                     np.tile(sub, (coords.shape[0], 1))], axis=1)
            dims += inner
        return coords.astype(np.int64).reshape(-1, len(dims)), np.asarray(dims, np.int64)
    return indices


@register_kernel("RaggedRange")
def _ragged_range(op: Any, ctx: KernelContext) -> Any:
    def ragged_range(starts: Any, limits: Any, deltas: Any) -> Any:
        st, li, de = np.broadcast_arrays(np.asarray(starts), np.asarray(limits), np.asarray(deltas))
        dt = np.result_type(st, li, de)
        st, li, de = st.reshape(-1), li.reshape(-1), de.reshape(-1)
        if np.any(de == 0):
            raise InvalidArgumentError("Requires delta != 0", op)
        rows = [np.arange(a, b, d, dtype=dt) if (b - a) * d > 0 else np.zeros(0, dt) for a, b, d in zip(st, li, de)]
        splits = np.zeros(len(rows) + 1, np.int64)
        splits[1:] = np.cumsum([r.size for r in rows])
        vals = np.concatenate(rows) if rows else np.zeros(0, dt)
        return splits, vals.astype(dt)
    return ragged_range
