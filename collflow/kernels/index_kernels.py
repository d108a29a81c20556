"""Kernels of graph/ops/index_ops.py (GatherNd, ScatterNd, Where, SparseToDense), written once
against `xp`.

N-d indices are turned into row numbers of the array viewed as [prod(dims[:K]), rest]: a gather
is one take, a scatter one scatter-add of rows (duplicates accumulate).  Out-of-range indices
are errors naming the first bad one, as TensorFlow's messages do.
"""
from __future__ import annotations

from typing import Any, Sequence, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel
from .segment_kernels import add_rows


def _dims(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _position(flat_i: int, lead_shape: Tuple[int, ...]) -> str:
    if len(lead_shape) <= 1:
        return f"[{flat_i}]"
    return "[" + ",".join(str(int(i)) for i in np.unravel_index(flat_i, lead_shape)) + "]"


def _prod(dims: Sequence[int]) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


def _first_bad(xp: Any, flat: Any, limits: Tuple[int, ...]) -> int:
    """The row of the first index outside [0, limits), or -1."""
    if flat.size == 0:
        return -1
    lim = xp.asarray(np.asarray(limits, dtype=np.int64))
    bad = ((flat < 0) | (flat >= lim)).any(axis=1)
    if not bool(bad.any()):
        return -1
    return int(xp.argmax(bad))


def _rows(xp: Any, flat: Any, limits: Tuple[int, ...]) -> Any:
    """Row-major row numbers of the (checked) N-d indices `flat` [n, K] into dims `limits`."""
    lin = xp.zeros(flat.shape[0], dtype=np.int64)
    for j, d in enumerate(limits):
        lin *= d
        lin += flat[:, j]
    return lin


@register_kernel("GatherNd")
def _gather_nd(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def gather_nd(params: Any, idx: Any) -> Any:
        k = idx.shape[-1]
        if k > params.ndim:
            raise InvalidArgumentError(f"gather_nd: index depth {k} exceeds the rank of params "
                                       f"{_dims(params.shape)}", op)
        lead = tuple(idx.shape[:-1])
        inner = tuple(params.shape[k:])
        flat = idx.reshape(_prod(lead), k).astype(np.int64, copy=False)
        limits = tuple(params.shape[:k])
        bad = _first_bad(xp, flat, limits)
        if bad >= 0:
            shown = ", ".join(str(int(v)) for v in flat[bad].tolist())
            raise InvalidArgumentError(f"indices{_position(bad, lead)} = [{shown}] does not index into param shape "
                                       f"{_dims(params.shape)}", op)
        table = params.reshape((_prod(limits),) + inner)
        return xp.take(table, _rows(xp, flat, limits), axis=0).reshape(lead + inner)
    return gather_nd


@register_kernel("ScatterNd")
def _scatter_nd(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def scatter_nd(idx: Any, upd: Any, shape: Any) -> Any:
        shp = tuple(int(d) for d in shape.tolist())
        if any(d < 0 for d in shp):
            raise InvalidArgumentError(f"scatter_nd: shape {list(shp)} has a negative dimension", op)
        k = idx.shape[-1]
        if k > len(shp):
            raise InvalidArgumentError(f"scatter_nd: index depth {k} exceeds the rank of shape {_dims(shp)}", op)
        lead, inner, limits = tuple(idx.shape[:-1]), shp[k:], shp[:k]
        if tuple(upd.shape) != lead + inner:
            raise InvalidArgumentError(f"scatter_nd: updates of shape {_dims(upd.shape)} do not match indices of "
                                       f"shape {_dims(idx.shape)} into shape {_dims(shp)} (expected "
                                       f"{_dims(lead + inner)})", op)
        flat = idx.reshape(_prod(lead), k).astype(np.int64, copy=False)
        bad = _first_bad(xp, flat, limits)
        if bad >= 0:
            shown = ", ".join(str(int(v)) for v in flat[bad].tolist())
            raise InvalidArgumentError(f"indices{_position(bad, lead)} = [{shown}] does not index into shape "
                                       f"{_dims(shp)}", op)
        out = xp.zeros((_prod(limits),) + inner, dtype=upd.dtype)
        if flat.shape[0]:
            add_rows(xp, out, _rows(xp, flat, limits), upd.reshape((flat.shape[0],) + inner))
        return out.reshape(shp)
    return scatter_nd


@register_kernel("Where")
def _where(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def where(x: Any) -> Any:
        if x.ndim == 0:  # TF's kernel has no coordinates for a scalar
            raise InvalidArgumentError("where: the condition must have at least one dimension, got a scalar", op)
        return xp.argwhere(x).astype(np.int64, copy=False)
    return where


@register_kernel("SparseToDense")
def _sparse_to_dense(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    validate = op.attrs["validate_indices"]

    def sparse_to_dense(idx: Any, shape: Any, values: Any, default: Any) -> Any:
        shp = tuple(int(d) for d in shape.reshape(-1).tolist())
        if any(d < 0 for d in shp):
            raise InvalidArgumentError(f"sparse_to_dense: output_shape {list(shp)} has a negative dimension", op)
        flat = idx.reshape(1, 1) if idx.ndim == 0 else (idx.reshape(-1, 1) if idx.ndim == 1 else idx)
        flat = flat.astype(np.int64, copy=False)
        n, r = flat.shape
        if r != len(shp):
            raise InvalidArgumentError(f"sparse_to_dense: indices of {r} coordinates for an output_shape of rank "
                                       f"{len(shp)} {_dims(shp)}", op)
        if values.ndim == 1 and values.shape[0] != n:
            raise InvalidArgumentError(f"sparse_to_dense: sparse_values has incorrect shape {_dims(values.shape)}, "
                                       f"should be [] or [{n}]", op)
        if validate:
            _validate(xp, flat, shp, op)
        out = xp.full(shp, default, dtype=values.dtype)
        if n:
            bad = _first_bad(xp, flat, shp)
            if bad >= 0:  # without validation too: never write outside the output
                raise InvalidArgumentError(f"sparse_to_dense: indices[{bad}] = {_dims(flat[bad].tolist())} is out of "
                                           f"bounds: need 0 <= index < {_dims(shp)}", op)
            out.reshape(-1)[_rows(xp, flat, shp)] = values
        return out
    return sparse_to_dense


def _validate(xp: Any, flat: Any, shp: Tuple[int, ...], op: Any) -> None:
    """TensorFlow's checks: in bounds, then in row-major order, then without repeats."""
    bad = _first_bad(xp, flat, shp)
    if bad >= 0:
        raise InvalidArgumentError(f"indices[{bad}] = {_dims(flat[bad].tolist())} is out of bounds: need "
                                   f"0 <= index < {_dims(shp)}", op)
    if flat.shape[0] < 2:
        return
    rows = _rows(xp, flat, shp)
    step = rows[1:] - rows[:-1]
    if bool((step < 0).any()):
        i = int(xp.argmax(step < 0)) + 1
        raise InvalidArgumentError(f"indices[{i}] = {_dims(flat[i].tolist())} is out of order. Many sparse ops "
                                   "require sorted indices; use tf.sparse.reorder to sort them", op)
    if bool((step == 0).any()):
        i = int(xp.argmax(step == 0)) + 1
        raise InvalidArgumentError(f"indices[{i}] = {_dims(flat[i].tolist())} is repeated", op)
