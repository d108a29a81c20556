"""The general forms of tf.linalg.diag / diag_part / set_diag (TF's MatrixDiagV3,
MatrixDiagPartV3, MatrixSetDiagV3): a band of diagonals k = (k_low, k_high), explicit
num_rows / num_cols, a padding value and the alignment of diagonals shorter than the longest.

Diagonal d (d > 0 above the main one) of a band is row k_high - d of the packed form
[..., num_diags, max_diag_len]; a band of one diagonal has no num_diags axis.  `align` is
SUPER_SUB: where superdiagonals (d >= 0) and subdiagonals (d <= 0) sit in their row when they
are shorter than max_diag_len.  k, num_rows and num_cols must be known when the graph is built
(Python ints or constant tensors).  matrix_ops.matrix_diag & co. keep their k = 0 ops and send
everything else here.  Kernels live in kernels/matrix_band_diag_kernels.py.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .. import graph as _g
from ..registry import register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from .op_util import dense as _dense, single

__all__ = ["matrix_diag_v3", "matrix_diag_part_v3", "matrix_set_diag_v3", "normalize_k", "is_main_diagonal",
           "check_align"]

ALIGNS = ("LEFT_RIGHT", "RIGHT_LEFT", "LEFT_LEFT", "RIGHT_RIGHT")


def _static(v: Any, what: str) -> Any:
    """A Python value for an int argument, or a constant tensor's value."""
    if isinstance(v, _g.Tensor):
        if v.op.type != "Const":
            raise NotImplementedError(f"{what} must be known when the graph is built (a Python int or a constant "
                                      f"tensor), got the output of {v.op.type}")
        return np.asarray(v.op.attrs["value"])
    return np.asarray(v)


def normalize_k(k: Any) -> Tuple[int, int]:
    """(k_low, k_high) from an int, a pair, or a constant tensor of one or two elements."""
    arr = _static(k, "k")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"k must be an int or a pair of ints, got {k!r}")
    flat = arr.reshape(-1)
    if arr.ndim > 1 or flat.size not in (1, 2):
        raise ValueError(f"k must be a scalar or a vector of at most 2 elements, got {k!r}")
    low, high = int(flat[0]), int(flat[-1])
    if low > high:
        raise ValueError(f"lower_diag_index must not be larger than upper_diag_index: {low} > {high}")
    return low, high


def is_main_diagonal(k: Any) -> bool:
    """Whether k names only the main diagonal (the fast k = 0 ops apply)."""
    return normalize_k(k) == (0, 0)


def check_align(align: Any) -> str:
    if align not in ALIGNS:
        raise ValueError(f"align must be one of {list(ALIGNS)}, got {align!r}")
    return align


def _size(v: Any, what: str) -> int:
    arr = _static(-1 if v is None else v, what)
    if arr.size != 1 or arr.dtype.kind not in "iu":
        raise TypeError(f"{what} must be an int scalar, got {v!r}")
    return int(arr.reshape(-1)[0])


def _pad(padding_value: Any, like: _g.Tensor) -> _g.Tensor:
    pad = _g.convert_to_tensor(padding_value, dtype=None if isinstance(padding_value, _g.Tensor) else like.dtype,
                               graph=like.graph)
    if pad.dtype != like.dtype:
        raise TypeError(f"padding_value has dtype {pad.dtype.name}, expected {like.dtype.name}")
    if pad.shape.rank not in (None, 0):
        raise ValueError(f"padding_value must be a scalar, got shape {pad.shape}")
    return pad


def _k_in_matrix(rows: Optional[int], cols: Optional[int], low: int, high: int) -> None:
    if rows is None or cols is None:
        return
    for which, k in (("lower", low), ("upper", high)):
        if k != 0 and not -rows < k < cols:
            raise ValueError(f"{which}_diag_index is out of bound: {k}. It must be between {-rows} and {cols} "
                             f"for a matrix of {rows} x {cols}")


def _part_len(rows: Optional[int], cols: Optional[int], low: int, high: int) -> Optional[int]:
    if rows is None or cols is None:
        return None
    return max(0, min(rows + min(high, 0), cols - max(low, 0)))


# -- shape functions ---------------------------------------------------------------------------


def _diag_v3_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    low, high = op.attrs["k"]
    num_diags = high - low + 1
    rank = x.shape.rank
    want_rank = 1 if num_diags == 1 else 2
    if rank is None:
        return [(x.dtype, TensorShape(None))]
    if rank < want_rank:
        raise ValueError(f"matrix_diag: the diagonal must have rank >= {want_rank} for k = ({low}, {high}), "
                         f"got shape {x.shape}")
    dims = list(x.shape.dims)
    if num_diags > 1 and dims[-2] is not None and dims[-2] != num_diags:
        raise ValueError(f"matrix_diag: the number of diagonals provided ({dims[-2]}, shape {x.shape}) does not "
                         f"match k = ({low}, {high}), which needs {num_diags}")
    rows, cols = op.attrs["num_rows"], op.attrs["num_cols"]
    max_len = dims[-1]
    if max_len is not None:
        min_rows, min_cols = max_len - min(high, 0), max_len + max(low, 0)
        if rows == -1 and cols == -1:
            rows = cols = max(min_rows, min_cols)
        elif rows == -1:
            rows = min_rows
        elif cols == -1:
            cols = min_cols
        for what, have, least in (("num_rows", rows, min_rows), ("num_cols", cols, min_cols)):
            if have < least:   # every diagonal must fit whole (as TF)
                raise ValueError(f"matrix_diag: {what} is too small: {have} < {least}, the least that holds "
                                 f"diagonals of length {max_len} with k = ({low}, {high})")
        if rows != min_rows and cols != min_cols:
            raise ValueError(f"matrix_diag: num_rows={rows} and num_cols={cols} are not consistent with k = "
                             f"({low}, {high}) and diagonals of length {max_len} (need num_rows == {min_rows} or "
                             f"num_cols == {min_cols})")
    batch = dims[:-want_rank]
    return [(x.dtype, TensorShape(batch + [None if rows == -1 else rows, None if cols == -1 else cols]))]


def _diag_part_v3_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    low, high = op.attrs["k"]
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None))]
    if x.shape.rank < 2:
        raise ValueError(f"matrix_diag_part needs an input of rank >= 2, got shape {x.shape}")
    *batch, rows, cols = x.shape.dims
    if op.attrs.get("check_bounds", True):
        _k_in_matrix(rows, cols, low, high)
    max_len = _part_len(rows, cols, low, high)
    tail = [max_len] if low == high else [high - low + 1, max_len]
    return [(x.dtype, TensorShape(list(batch) + tail))]


def _set_diag_v3_spec(op: _g.Operation) -> list:
    x, d = op.inputs
    low, high = op.attrs["k"]
    if x.dtype != d.dtype:
        raise ValueError(f"matrix_set_diag: input and diagonal have different dtypes {x.dtype.name} and "
                         f"{d.dtype.name}")
    if x.shape.rank is not None:
        if x.shape.rank < 2:
            raise ValueError(f"matrix_set_diag needs an input of rank >= 2, got shape {x.shape}")
        *batch, rows, cols = x.shape.dims
        _k_in_matrix(rows, cols, low, high)
        max_len = _part_len(rows, cols, low, high)
        want = TensorShape(list(batch) + ([max_len] if low == high else [high - low + 1, max_len]))
        if not want.is_compatible_with(d.shape):
            raise ValueError(f"matrix_set_diag: diagonal of shape {d.shape} does not fit an input of shape "
                             f"{x.shape} with k = ({low}, {high}) (expected {want})")
    return [(x.dtype, x.shape)]


register_op("MatrixDiagV3", _diag_v3_spec, doc="a band of diagonals as matrices; attrs k, num_rows, num_cols, align")
register_op("MatrixDiagPartV3", _diag_part_v3_spec,
            doc="a band of diagonals of matrices, packed; attrs k, align")
register_op("MatrixSetDiagV3", _set_diag_v3_spec, doc="matrices with a band of diagonals replaced; attrs k, align")


# -- constructors ------------------------------------------------------------------------------


def matrix_diag_v3(diagonal: Any, k: Any = 0, num_rows: Any = -1, num_cols: Any = -1, padding_value: Any = 0,
                   align: str = "RIGHT_LEFT", name: Optional[str] = None) -> _g.Tensor:
    """Matrices [..., num_rows, num_cols] with the band k of `diagonal` on their diagonals and
    padding_value elsewhere (TF's MatrixDiagV3); num_rows/num_cols -1: the smallest that fit."""
    d = _g.convert_to_tensor(diagonal)
    attrs = {"k": normalize_k(k), "num_rows": _size(num_rows, "num_rows"), "num_cols": _size(num_cols, "num_cols"),
             "align": check_align(align)}
    return single("MatrixDiagV3", [d, _pad(padding_value, d)], attrs, name=name or "diag")


def matrix_diag_part_v3(input: Any, k: Any = 0, padding_value: Any = 0, align: str = "RIGHT_LEFT",  # noqa: A002
                        name: Optional[str] = None, check_bounds: bool = True) -> _g.Tensor:
    """The band k of diagonals of matrices [..., M, N], packed (TF's MatrixDiagPartV3); shorter
    diagonals are padded with padding_value.  check_bounds=False (the gradient of
    matrix_diag_v3) lets diagonals lie outside the matrix: their rows are all padding."""
    x = _g.convert_to_tensor(input)
    attrs = {"k": normalize_k(k), "align": check_align(align)}
    if not check_bounds:
        attrs["check_bounds"] = False
    return single("MatrixDiagPartV3", [x, _pad(padding_value, x)], attrs, name=name or "diag_part")


def matrix_set_diag_v3(input: Any, diagonal: Any, k: Any = 0, align: str = "RIGHT_LEFT",  # noqa: A002
                       name: Optional[str] = None) -> _g.Tensor:
    """`input` [..., M, N] with its band k of diagonals replaced by `diagonal` (packed as
    matrix_diag_part_v3 returns it; TF's MatrixSetDiagV3)."""
    x = _g.convert_to_tensor(input)
    d = _g.convert_to_tensor(diagonal, dtype=None if isinstance(diagonal, _g.Tensor) else x.dtype, graph=x.graph)
    attrs = {"k": normalize_k(k), "align": check_align(align)}
    return single("MatrixSetDiagV3", [x, d], attrs, name=name or "set_diag")


# -- gradients (padding_value gets none, as in TF) ---------------------------------------------


@register_gradient("MatrixDiagV3")
def _diag_v3_grad(op: _g.Operation, g: Any) -> list:
    # num_rows/num_cols >= the least that hold every diagonal whole: diag_part of the output
    # has the diagonal's shape again.  Diagonals wholly outside the output (k beyond it) get a
    # zero gradient, where TF's gradient raises 'out of bound'.
    return [matrix_diag_part_v3(_dense(g), op.attrs["k"], 0, op.attrs["align"], check_bounds=False), None]


@register_gradient("MatrixDiagPartV3")
def _diag_part_v3_grad(op: _g.Operation, g: Any) -> list:
    x = op.inputs[0]
    k, align = op.attrs["k"], op.attrs["align"]
    dims = x.shape.dims
    if dims is not None and dims[-1] is not None and dims[-2] is not None:
        return [matrix_diag_v3(_dense(g), k, dims[-2], dims[-1], 0, align), None]
    return [matrix_set_diag_v3(_a.zeros_like(x), _dense(g), k, align), None]


@register_gradient("MatrixSetDiagV3")
def _set_diag_v3_grad(op: _g.Operation, g: Any) -> list:
    g = _dense(g)
    k, align = op.attrs["k"], op.attrs["align"]
    return [matrix_set_diag_v3(g, _a.zeros_like(op.inputs[1]), k, align), matrix_diag_part_v3(g, k, 0, align)]
