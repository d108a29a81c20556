"""Kernels of tf.unique, tf.dynamic_partition and tf.dynamic_stitch (graph/ops/partition_ops.py)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel, variadic_outputs


@register_kernel("Unique")
def _unique(op: Any, ctx: KernelContext) -> Any:
    xp, idx_t, counts = ctx.xp, op.attrs["out_idx"].np, op.attrs["counts"]
    # TF's hash table never finds a NaN again: each NaN is a value of its own (NumPy's unique
    # merges them unless told not to)
    nan_apart = {"equal_nan": False} if xp is np and op.inputs[0].dtype.is_floating else {}

    def unique(x: Any) -> tuple:
        # np.unique sorts; TF1 keeps the order of first appearance: reorder by first index
        vals, first, inv, cnt = xp.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                          **nan_apart)
        order = xp.argsort(first, kind="stable")
        rank = xp.empty_like(order)
        rank[order] = xp.arange(order.shape[0])
        out = (vals[order], rank[inv.reshape(-1)].astype(idx_t, copy=False))
        return out + (cnt[order].astype(idx_t, copy=False),) if counts else out
    return unique


@register_kernel("DynamicPartition")
def _dynamic_partition(op: Any, ctx: KernelContext) -> Any:
    n = op.attrs["num_partitions"]

    def dynamic_partition(data: Any, parts: Any) -> tuple:
        if data.shape[:parts.ndim] != parts.shape:
            raise InvalidArgumentError(f"dynamic_partition: partitions of shape {tuple(parts.shape)} must be a "
                                       f"prefix of data's shape {tuple(data.shape)}", op)
        p = parts.reshape(-1)
        flat = data.reshape((p.shape[0],) + tuple(data.shape[parts.ndim:]))
        if p.size and (int(p.min()) < 0 or int(p.max()) >= n):
            bad = int(p.min()) if int(p.min()) < 0 else int(p.max())
            raise InvalidArgumentError(f"dynamic_partition: partitions holds {bad}, outside [0, {n})", op)
        return tuple(flat[p == i] for i in range(n))
    return variadic_outputs(op, dynamic_partition)


@register_kernel("DynamicStitch")
def _dynamic_stitch(op: Any, ctx: KernelContext) -> Any:
    xp, n = ctx.xp, op.attrs["n"]

    def dynamic_stitch(*args: Any) -> Any:
        idx, data = args[:n], args[n:]
        inner = None
        for i, d in zip(idx, data):
            if d.shape[:i.ndim] != i.shape:
                raise InvalidArgumentError(f"dynamic_stitch: data of shape {tuple(d.shape)} does not start with "
                                           f"its indices' shape {tuple(i.shape)}", op)
            inner = tuple(d.shape[i.ndim:])
        rows = max((int(i.max()) + 1 for i in idx if i.size), default=0)
        if any(i.size and int(i.min()) < 0 for i in idx):
            raise InvalidArgumentError("dynamic_stitch: indices must be non-negative", op)
        out = xp.zeros((rows,) + inner, dtype=data[0].dtype)
        for i, d in zip(idx, data):  # in order: a later index wins, as TF1
            out[i.reshape(-1)] = d.reshape((i.size,) + inner)
        return out
    return dynamic_stitch
