"""tf.linalg.LinearOperatorTridiag: a [batch] square tridiagonal matrix given by its three
diagonals, in one of TF's three layouts: 'compact' [..., 3, N] (superdiagonal, diagonal,
subdiagonal; the superdiagonal's last and the subdiagonal's first entry unused), 'sequence'
(a list of the three [..., N] vectors, same padding) or 'matrix' [..., N, N] (matmul and
solve read its three diagonals; to_dense returns it as given, as TF)."""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

from .. import graph as _g
from ..ops import array_ops as _a
from ..ops import check_ops as _chk
from ..ops import complex_ops as _cx
from ..ops import constant_op as _cf
from ..ops import matrix_ops as _mx
from ..ops.linalg_extra_ops import tridiagonal_matmul, tridiagonal_solve
from ..ops.rearrange_ops import roll
from ..shape import TensorShape
from .base import LinearOperator, adjoint as _adjoint, check_float_dtype, conj, static_batch

__all__ = ["LinearOperatorTridiag"]

_FORMATS = ("compact", "matrix", "sequence")


class LinearOperatorTridiag(LinearOperator):
    """A square tridiagonal operator (tf.linalg.LinearOperatorTridiag) from its three
    diagonals: `compact` [..., 3, n] (superdiagonal, diagonal, subdiagonal), `sequence` (three
    tensors) or `matrix` [..., n, n] (its tridiagonal part); products and solves use the band."""
    def __init__(self, diagonals: Any, diagonals_format: str = "compact", is_non_singular: Optional[bool] = None,
                 is_self_adjoint: Optional[bool] = None, is_positive_definite: Optional[bool] = None,
                 is_square: Optional[bool] = None, name: str = "LinearOperatorTridiag") -> None:
        parameters = dict(diagonals=diagonals, diagonals_format=diagonals_format, is_non_singular=is_non_singular,
                          is_self_adjoint=is_self_adjoint, is_positive_definite=is_positive_definite,
                          is_square=is_square, name=name)
        with _g.name_scope(name):
            if diagonals_format not in _FORMATS:
                raise ValueError("Argument `diagonals_format` must be one of compact, matrix, or sequence. "
                                 f"Received : {diagonals_format}.")
            if diagonals_format == "sequence":
                if len(list(diagonals)) != 3:
                    raise ValueError(f"Expected 3 diagonals in 'sequence' format, got {len(list(diagonals))}")
                self._diagonals: Any = [_g.convert_to_tensor(d, name=f"diag_{i}") for i, d in enumerate(diagonals)]
                first = self._diagonals[0]
                for d in self._diagonals:
                    check_float_dtype(d, "diagonals")
                    if d.dtype != first.dtype:
                        raise TypeError(f"The three diagonals must have one dtype, got "
                                        f"{[x.dtype.name for x in self._diagonals]}")
                    if d.shape.rank is not None and d.shape.rank < 1:
                        raise ValueError(f"Each diagonal must have at least 1 dimension. Found: {d}")
                dtype = first.dtype
            else:
                self._diagonals = _g.convert_to_tensor(diagonals, name="diagonals")
                check_float_dtype(self._diagonals, "diagonals")
                s = self._diagonals.shape
                if s.rank is not None and s.rank < 2:
                    raise ValueError(f"Argument diagonals must have at least 2 dimensions. Found: {self._diagonals}")
                if diagonals_format == "compact" and s.dims is not None and s.dims[-2] not in (None, 3):
                    raise ValueError(f"Expected diagonals of shape [..., 3, N] in 'compact' format, got {s}")
                dtype = self._diagonals.dtype
            self._diagonals_format = diagonals_format
        super().__init__(dtype, graph_parents=(list(self._diagonals) if diagonals_format == "sequence"
                                               else [self._diagonals]),
                         is_non_singular=is_non_singular, is_self_adjoint=is_self_adjoint,
                         is_positive_definite=is_positive_definite, is_square=is_square, name=name,
                         parameters=parameters)

    @property
    def diagonals(self) -> Any:
        return self._diagonals

    @property
    def diagonals_format(self) -> str:
        return self._diagonals_format

    def _shape(self) -> TensorShape:
        if self._diagonals_format == "matrix":
            return self._diagonals.shape
        if self._diagonals_format == "compact":
            s = self._diagonals.shape
            return TensorShape(None) if s.dims is None else TensorShape(list(s.dims[:-2]) + [s.dims[-1]] * 2)
        shapes = [d.shape for d in self._diagonals]
        if any(s.dims is None for s in shapes):
            return TensorShape(None)
        batch = static_batch(*[s[:-1] for s in shapes])
        return TensorShape(None) if batch.dims is None else TensorShape(list(batch.dims) + [shapes[1].dims[-1]] * 2)

    def _shape_tensor(self) -> _g.Tensor:
        if self._diagonals_format == "matrix":
            return _a.shape(self._diagonals)
        if self._diagonals_format == "compact":
            s = _a.shape(self._diagonals)
            return _a.concat([s[:-2], s[-1:], s[-1:]], 0)
        return super()._shape_tensor()

    def _triple(self) -> Tuple[_g.Tensor, _g.Tensor, _g.Tensor]:
        """(superdiagonal, diagonal, subdiagonal), each [..., N], TF's compact padding."""
        d = self._diagonals
        if self._diagonals_format == "compact":
            return d[..., 0, :], d[..., 1, :], d[..., 2, :]
        if self._diagonals_format == "sequence":
            return d[0], d[1], d[2]
        zero = _a.zeros_like(d[..., :1, 0])
        sup = _a.concat([_mx.matrix_diag_part(d[..., :-1, 1:]), zero], axis=-1)
        sub = _a.concat([zero, _mx.matrix_diag_part(d[..., 1:, :-1])], axis=-1)
        return sup, _mx.matrix_diag_part(d), sub

    def _adjoint_triple(self) -> List[_g.Tensor]:
        # (T^H)'s superdiagonal is T's subdiagonal conjugated, moved into the compact padding
        sup, main, sub = self._triple()
        return [conj(roll(sub, -1, -1)), conj(main), conj(roll(sup, 1, -1))]

    def _broadcast(self, diags: List[_g.Tensor], x: _g.Tensor) -> Tuple[List[_g.Tensor], _g.Tensor]:
        batch = static_batch(x.shape[:-2], *[d.shape[:-1] for d in diags])
        if batch.dims is None or not batch.is_fully_defined() or x.shape.dims is None:
            return diags, x
        n = [d.shape.dims[-1] for d in diags]
        out = [d if list(d.shape.dims[:-1]) == batch.as_list() or n_i is None
               else _a.broadcast_to(d, batch.as_list() + [n_i]) for d, n_i in zip(diags, n)]
        if list(x.shape.dims[:-2]) != batch.as_list() and x.shape[-2:].is_fully_defined():
            x = _a.broadcast_to(x, batch.as_list() + x.shape.as_list()[-2:])
        return out, x

    def _matmul(self, x: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        diags = self._adjoint_triple() if adjoint else list(self._triple())
        x = _adjoint(x) if adjoint_arg else x
        diags, x = self._broadcast(diags, x)
        return tridiagonal_matmul(diags, x, diagonals_format="sequence")

    def _solve(self, rhs: _g.Tensor, adjoint: bool = False, adjoint_arg: bool = False) -> _g.Tensor:
        diags = self._adjoint_triple() if adjoint else list(self._triple())
        rhs = _adjoint(rhs) if adjoint_arg else rhs
        diags, rhs = self._broadcast(diags, rhs)
        return tridiagonal_solve(diags, rhs, diagonals_format="sequence")

    def _diag_part(self) -> _g.Tensor:
        if self._diagonals_format == "sequence":
            main = self._diagonals[1]
            batch = self.batch_shape
            if batch.is_fully_defined() and list(main.shape.dims[:-1]) != batch.as_list():
                return _a.broadcast_to(main, batch.as_list() + [main.shape.dims[-1]])
            return main
        return self._triple()[1]

    def _to_dense(self) -> _g.Tensor:
        if self._diagonals_format == "matrix":
            return self._diagonals
        sup, main, sub = self._triple()
        if self._diagonals_format == "sequence":
            batch = self.batch_shape
            if batch.is_fully_defined():
                sup, main, sub = (d if list(d.shape.dims[:-1]) == batch.as_list()
                                  else _a.broadcast_to(d, batch.as_list() + [d.shape.dims[-1]])
                                  for d in (sup, main, sub))
        up, down = _mx.matrix_diag(sup), _mx.matrix_diag(sub)
        # diag(sup) moved one column right (sup[i] at (i, i+1)); diag(sub) one left (sub[i] at (i, i-1))
        up = _a.concat([_a.zeros_like(up[..., :, :1]), up[..., :, :-1]], axis=-1)
        down = _a.concat([down[..., :, 1:], _a.zeros_like(down[..., :, :1])], axis=-1)
        return _mx.matrix_diag(main) + up + down

    def _assert_self_adjoint(self) -> Any:
        if self._diagonals_format == "matrix":
            return super()._assert_self_adjoint()
        sup, main, sub = self._triple()
        checks = []
        if main.dtype.is_complex:
            im = _cx.imag(main)
            checks.append(_chk.assert_equal(im, _a.zeros_like(im), message="This tridiagonal operator contained "
                                                                          "non-zero imaginary values on the diagonal."))
        checks.append(_chk.assert_equal(conj(roll(sub, -1, -1)[..., :-1]), sup[..., :-1],
                                        message="This tridiagonal operator has non-conjugate subdiagonal and "
                                                "superdiagonal."))
        return _cf.group(*checks)
