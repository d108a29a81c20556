"""tf.linalg.LinearOperatorToeplitz: the Toeplitz matrix with first column `col` and first
row `row` (row[0] is ignored: the diagonal is col[0], as TF).  matmul embeds it in a 2N x 2N
circulant and goes through FFTs; solve and determinants use the dense matrix."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import graph as _g
from ..ops import array_ops as _a
from ..ops import fft_ops as _fft
from ..ops.reverse_ops import reverse
from ..ops.slicing_ops import gather
from ..shape import TensorShape, broadcast_static
from .base import LinearOperator, adjoint as _adjoint, check_float_dtype
from .circulant import LinearOperatorCirculant, _to_complex

__all__ = ["LinearOperatorToeplitz"]


class LinearOperatorToeplitz(LinearOperator):
    def __init__(self, col: Any, row: Any, is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: Optional[bool] = None, name: str = "LinearOperatorToeplitz") -> None:
        with _g.name_scope(name):
            self._col = _g.convert_to_tensor(col, name="col")
            self._row = _g.convert_to_tensor(row, name="row")
        for t, what in ((self._col, "col"), (self._row, "row")):
            check_float_dtype(t, what)
            if t.shape.rank is not None and t.shape.rank < 1:
                raise ValueError(f"Argument {what} must have at least 1 dimension.  Found: {t}")
        if self._col.dtype != self._row.dtype:
            raise TypeError(f"Expected col and row to have the same dtype, got {self._col.dtype.name} and "
                            f"{self._row.dtype.name}")
        if is_square is False:
            raise ValueError("Only square Toeplitz operators currently supported.")
        self._n = self._col.shape.dims[-1] if self._col.shape.dims is not None else None
        if self._n is None:
            raise NotImplementedError("LinearOperatorToeplitz needs a static size")
        super().__init__(self._col.dtype, graph_parents=[self._col, self._row], is_non_singular=is_non_singular,
                         is_self_adjoint=is_self_adjoint, is_positive_definite=is_positive_definite,
                         is_square=True, name=name, parameters=dict(col=col, row=row))

    @property
    def col(self) -> _g.Tensor:
        return self._col

    @property
    def row(self) -> _g.Tensor:
        return self._row

    def _shape(self) -> TensorShape:
        batch = broadcast_static(self._col.shape[:-1], self._row.shape[:-1])
        return batch if batch.dims is None else TensorShape(list(batch.dims) + [self._n, self._n])

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        # the 2N circulant with first column [col, 0, reversed row[1:]] holds the Toeplitz
        # matrix as its top-left block: multiply x padded with N zero rows, keep N rows
        x = _adjoint(x) if adjoint_arg else x
        padded = _a.concat([x, _a.zeros_like(x)], axis=-2)
        first = _a.concat([self._col, _a.zeros_like(self._col[..., 0:1]), reverse(self._row[..., 1:], [-1])],
                          axis=-1)
        circ = LinearOperatorCirculant(_fft.fft(_to_complex(first)), input_output_dtype=self.dtype)
        return circ.matmul(padded, adjoint=adjoint)[..., :self._n, :]

    def _trace(self) -> _g.Tensor:
        return self._col[..., 0] * _g.convert_to_tensor(np.asarray(self._n, self.dtype.as_numpy_dtype))

    def _diag_part(self) -> _g.Tensor:
        return self._col[..., 0:1] * _a.ones([self._n], dtype=self.dtype)

    def _to_dense(self) -> _g.Tensor:
        # entry (i, j) is v[n - 1 - i + j] of v = [reversed col, row[1:]]
        n = self._n
        row, col = self._row, self._col
        batch = self.batch_shape
        if batch.is_fully_defined() and row.shape[:-1] != col.shape[:-1]:
            row = _a.broadcast_to(row, batch.as_list() + [n])
            col = _a.broadcast_to(col, batch.as_list() + [n])
        v = _a.concat([reverse(col, [-1]), row[..., 1:]], axis=-1)
        idx = (n - 1) - np.arange(n)[:, None] + np.arange(n)[None, :]
        return gather(v, idx.astype(np.int32), axis=v.shape.rank - 1)
