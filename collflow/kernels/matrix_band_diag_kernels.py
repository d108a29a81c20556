"""Kernels of graph/ops/matrix_band_diag_ops.py: TF's MatrixDiagV3, MatrixDiagPartV3 and
MatrixSetDiagV3 (a band of diagonals k_low..k_high, packed as [..., num_diags, max_diag_len]).

All three share one index map: for every matrix position (i, j) on a diagonal d = j - i of the
band, the packed position (k_high - d, min(i, j) + offset(d)), where offset(d) is 0 for a
left-aligned diagonal and max_diag_len - len(d) for a right-aligned one.  The map is built
with NumPy index arithmetic once per call (no loop over elements), then used as one gather or
one scatter on the whole batch.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel


def _left_aligned(d: np.ndarray, align: str) -> np.ndarray:
    """Which diagonals of index d are left-aligned: `align` is SUPER_SUB (the main diagonal
    counts as both, and is left-aligned when either part says LEFT)."""
    sup, sub = align.split("_")
    return ((d >= 0) & (sup == "LEFT")) | ((d <= 0) & (sub == "LEFT"))


@lru_cache(maxsize=256)   # a graph run again and again asks for the same few maps
def band_index(rows: int, cols: int, k_low: int, k_high: int, max_len: int,
               align: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, packed_row, packed_col): the band's matrix positions and their packed places
    (shared, cached arrays: used as indices only, never written)."""
    i, j = np.nonzero(np.ones((rows, cols), dtype=bool))
    d = j - i
    keep = (d >= k_low) & (d <= k_high)
    i, j, d = i[keep], j[keep], d[keep]
    length = np.minimum(rows + np.minimum(d, 0), cols - np.maximum(d, 0))
    offset = np.where(_left_aligned(d, align), 0, max_len - length)
    return i, j, k_high - d, np.minimum(i, j) + offset


def diag_part_len(rows: int, cols: int, k_low: int, k_high: int) -> int:
    return max(0, min(rows + min(k_high, 0), cols - max(k_low, 0)))


def check_k_in_matrix(op: Any, rows: int, cols: int, k_low: int, k_high: int) -> None:
    for which, k in (("lower", k_low), ("upper", k_high)):
        if k != 0 and not -rows < k < cols:
            raise InvalidArgumentError(f"{which}_diag_index is out of bound: {k}. It must be between {-rows} and "
                                       f"{cols} for a matrix of {rows} x {cols}", op)


def _packed(op: Any, diag: Any, num_diags: int, what: str) -> Any:
    """The diagonals as [..., num_diags, max_len] (a single diagonal has no num_diags axis)."""
    if num_diags == 1:
        if diag.ndim < 1:
            raise InvalidArgumentError(f"{what}: the diagonal must be at least 1-D, got a scalar", op)
        return diag[..., None, :]
    if diag.ndim < 2 or diag.shape[-2] != num_diags:
        raise InvalidArgumentError(
            f"{what}: the number of diagonals provided ({diag.shape[-2] if diag.ndim >= 2 else 'none'}, "
            f"shape {tuple(diag.shape)}) does not match k = ({op.attrs['k'][0]}, {op.attrs['k'][1]}), "
            f"which needs {num_diags}", op)
    return diag


def diag_out_size(op: Any, max_len: int, k_low: int, k_high: int, num_rows: int,
                  num_cols: int) -> Tuple[int, int]:
    """TF's num_rows/num_cols rule: the smallest sizes that hold the band, -1 inferred."""
    min_rows, min_cols = max_len - min(k_high, 0), max_len + max(k_low, 0)
    if num_rows == -1 and num_cols == -1:
        num_rows = num_cols = max(min_rows, min_cols)
    elif num_rows == -1:
        num_rows = min_rows
    elif num_cols == -1:
        num_cols = min_cols
    for what, have, least in (("num_rows", num_rows, min_rows), ("num_cols", num_cols, min_cols)):
        if have < least:   # every diagonal must fit whole (so that diag_part inverts diag)
            raise InvalidArgumentError(f"matrix_diag: {what} is too small: {have} < {least}, the least that holds "
                                       f"diagonals of length {max_len} with k = ({k_low}, {k_high})", op)
    if num_rows != min_rows and num_cols != min_cols:
        raise InvalidArgumentError(
            f"matrix_diag: num_rows={num_rows} and num_cols={num_cols} are not consistent with k = "
            f"({k_low}, {k_high}) and diagonals of length {max_len} (need num_rows == {min_rows} or "
            f"num_cols == {min_cols})", op)
    return num_rows, num_cols


@register_kernel("MatrixDiagV3")
def _matrix_diag_v3(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    k_low, k_high = op.attrs["k"]
    align = op.attrs["align"]

    def matrix_diag_v3(diag: Any, pad: Any) -> Any:
        packed = _packed(op, diag, k_high - k_low + 1, "matrix_diag")
        max_len = packed.shape[-1]
        rows, cols = diag_out_size(op, max_len, k_low, k_high, op.attrs["num_rows"], op.attrs["num_cols"])
        batch = tuple(packed.shape[:-2])
        out = xp.empty(batch + (rows, cols), dtype=diag.dtype)
        out[...] = pad   # (a 0-d device array: assigned, not passed to full as a Python scalar)
        i, j, pr, pc = band_index(rows, cols, k_low, k_high, max_len, align)
        out[..., xp.asarray(i), xp.asarray(j)] = packed[..., xp.asarray(pr), xp.asarray(pc)]
        return out
    return matrix_diag_v3


@register_kernel("MatrixDiagPartV3")
def _matrix_diag_part_v3(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    k_low, k_high = op.attrs["k"]
    align = op.attrs["align"]

    def matrix_diag_part_v3(x: Any, pad: Any) -> Any:
        if x.ndim < 2:
            raise InvalidArgumentError(f"matrix_diag_part: the input must be at least 2-D, got shape "
                                       f"{tuple(x.shape)}", op)
        rows, cols = x.shape[-2:]
        if op.attrs.get("check_bounds", True):
            check_k_in_matrix(op, rows, cols, k_low, k_high)
        max_len = diag_part_len(rows, cols, k_low, k_high)
        num_diags = k_high - k_low + 1
        out = xp.empty(tuple(x.shape[:-2]) + (num_diags, max_len), dtype=x.dtype)
        out[...] = pad
        i, j, pr, pc = band_index(rows, cols, k_low, k_high, max_len, align)
        out[..., xp.asarray(pr), xp.asarray(pc)] = x[..., xp.asarray(i), xp.asarray(j)]
        return out[..., 0, :] if num_diags == 1 else out
    return matrix_diag_part_v3


@register_kernel("MatrixSetDiagV3")
def _matrix_set_diag_v3(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    k_low, k_high = op.attrs["k"]
    align = op.attrs["align"]

    def matrix_set_diag_v3(x: Any, diag: Any) -> Any:
        if x.ndim < 2:
            raise InvalidArgumentError(f"matrix_set_diag: the input must be at least 2-D, got shape "
                                       f"{tuple(x.shape)}", op)
        rows, cols = x.shape[-2:]
        check_k_in_matrix(op, rows, cols, k_low, k_high)
        num_diags = k_high - k_low + 1
        max_len = diag_part_len(rows, cols, k_low, k_high)
        want = tuple(x.shape[:-2]) + ((max_len,) if num_diags == 1 else (num_diags, max_len))
        if tuple(diag.shape) != want:
            raise InvalidArgumentError(f"matrix_set_diag: diagonal of shape {tuple(diag.shape)} does not fit an "
                                       f"input of shape {tuple(x.shape)} with k = ({k_low}, {k_high}) (expected "
                                       f"{want})", op)
        packed = _packed(op, diag, num_diags, "matrix_set_diag")
        out = x.copy()
        i, j, pr, pc = band_index(rows, cols, k_low, k_high, max_len, align)
        out[..., xp.asarray(i), xp.asarray(j)] = packed[..., xp.asarray(pr), xp.asarray(pc)]
        return out
    return matrix_set_diag_v3
