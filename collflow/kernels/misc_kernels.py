"""Kernels of graph/ops/misc_ops.py (Range, TopKV2, InTopKV2), of case's predicate check
(graph/ops/case_ops.py) and of the singular values (graph/ops/linalg_ops.py), written once
against `xp`."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..graph.ops.misc_ops import range_size
from .registry import register_kernel, KernelContext


@register_kernel("Range")
def _range(op: Any, ctx: KernelContext) -> Any:
    xp, dt = ctx.xp, op.outputs[0].dtype.np

    def range_(start: Any, limit: Any, delta: Any) -> Any:
        s, l, d = (v.item() for v in (start, limit, delta))
        try:
            n = range_size(s, l, d)
        except InvalidArgumentError as e:
            raise InvalidArgumentError(e.message, op) from None
        # start + i * delta (not a running sum): no drift for float ranges
        out = xp.arange(n, dtype=dt)
        out *= dt.type(d)
        out += dt.type(s)
        return out
    return range_


@register_kernel("TopKV2")
def _top_k(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def top_k(x: Any, k: Any) -> Any:
        k = int(k)
        n = x.shape[-1]
        if not 0 <= k <= n:
            raise InvalidArgumentError(f"top_k: need 0 <= k <= {n} (the last dimension of shape "
                                       f"{tuple(x.shape)}), got k={k}", op)
        idx = _top_k_partitioned(x, k) if xp is np and 0 < k <= n // 8 else None
        if idx is None:
            # descending, equal values in index order: a stable ascending sort of the reversed
            # row, read backwards, then mapped back to the row's indices
            order = xp.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1][..., :k]
            idx = (n - 1) - order
        return xp.take_along_axis(x, idx, axis=-1), idx.astype(np.int32)
    return top_k


def _top_k_partitioned(x: np.ndarray, k: int) -> Any:
    """The top-k indices of each row via a partition (O(n), not a sort), or None where ties
    straddle the k-th place in some row (then only a full stable sort says which go first)."""
    n = x.shape[-1]
    part = np.argpartition(x, n - k, axis=-1)[..., n - k:]          # the k largest, in no order
    kth = np.take_along_axis(x, part[..., :1], axis=-1)              # the k-th largest value
    if not np.all(np.count_nonzero(x >= kth, axis=-1) == k):
        return None
    vals = np.take_along_axis(x, part, axis=-1)
    # ascending by value, then by descending index; reversed: largest first, ties by index
    order = np.lexsort((-part, vals), axis=-1)[..., ::-1]
    return np.take_along_axis(part, order, axis=-1)


@register_kernel("InTopKV2")
def _in_top_k(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def in_top_k(pred: Any, targets: Any, k: Any) -> Any:
        b, n = pred.shape
        if targets.shape[0] != b:
            raise InvalidArgumentError(f"in_top_k: {targets.shape[0]} targets for {b} rows of predictions", op)
        t = targets.astype(np.int64)
        valid = (t >= 0) & (t < n)
        tp = pred[xp.arange(b), xp.where(valid, t, 0)] if n else xp.zeros(b, dtype=pred.dtype)
        # a target whose row holds a non-finite prediction cannot be ranked: False
        finite = xp.isfinite(pred).all(axis=1)
        more = (pred > tp[:, None]).sum(axis=1)
        return valid & finite & (more < int(k))
    return in_top_k


@register_kernel("CheckCasePredicates")
def _check_case_predicates(op: Any, ctx: KernelContext) -> Any:
    names, exclusive, require_one = op.attrs["names"], op.attrs["exclusive"], op.attrs["require_one"]

    def check(*preds: Any) -> Any:
        vals = [bool(p) for p in preds]
        shown = ", ".join(f"{n}={v}" for n, v in zip(names, vals))
        if exclusive and sum(vals) > 1:
            raise InvalidArgumentError(f"case: exclusive=True and more than one predicate evaluated to True: "
                                       f"{shown}", op)
        if require_one and not any(vals):
            raise InvalidArgumentError(f"case: none of the conditions evaluated as True, and there is no default "
                                       f"(the last pair's function is the default only where its predicate "
                                       f"holds): {shown}", op)
        return preds if len(preds) > 1 else preds[0]
    return check


@register_kernel("SingularValues")
def _singular_values(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    return lambda a: xp.linalg.svd(a, compute_uv=False)


@register_kernel("SingularValuesGrad")
def _singular_values_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def grad(a: Any, g: Any) -> Any:
        u, _, vh = xp.linalg.svd(a, full_matrices=False)
        return xp.matmul(u * g[..., None, :], vh)    # u diag(g) v^T
    return grad


@register_kernel("SearchSorted")
def _searchsorted(op: Any, ctx: KernelContext) -> Any:
    side, out = op.attrs["side"], op.attrs["out_type"].np

    def searchsorted(seq: Any, vals: Any) -> Any:
        seq, vals = np.asarray(seq), np.asarray(vals)
        if seq.shape[:-1] != vals.shape[:-1]:
            raise InvalidArgumentError(f"searchsorted: the leading dimensions of sorted_sequence {seq.shape} and "
                                       f"values {vals.shape} must match", op)
        if out == np.int32 and seq.shape[-1] >= 2 ** 31:
            raise InvalidArgumentError("searchsorted: sorted_sequence's rows are too long for int32 output", op)
        rows = int(np.prod(seq.shape[:-1]))  # explicit: a (-1, 0) view of an empty array is ambiguous
        s2 = seq.reshape(rows, seq.shape[-1])
        v2 = vals.reshape(rows, vals.shape[-1])
        res = np.empty(v2.shape, dtype=out)
        for r in range(s2.shape[0]):
            res[r] = np.searchsorted(s2[r], v2[r], side=side)
        return res.reshape(vals.shape)
    return searchsorted
