"""tf.linalg functions TF builds in Python from other ops, built here the same way so their
gradients flow through those ops: expm (Pade approximation with scaling and squaring, TF's
linalg_impl.matrix_exponential step for step), pinv and matrix_rank (through svd),
lu_reconstruct, lu_solve and lu_matrix_inverse (from the Lu op's factors), and the small
helpers adjoint, matvec, normalize, tridiagonal_matmul and tridiagonal_solve.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from ..control_flow import cond as _cond, while_loop as _while_loop
from . import array_ops as _ao
from . import math_ops as _mo
from .clip_ops import norm as _norm
from .constant_op import constant as _constant
from .index_ops import batch_gather as _batch_gather
from .linalg_ops import matrix_band_part as _band, matrix_solve as _solve, matrix_triangular_solve as _trisolve
from .math_extra_ops import floor as _floor, is_finite as _is_finite
from .matrix_ops import (eye as _eye, matrix_diag as _diag, matrix_diag_part as _diag_part,
                         matrix_set_diag as _set_diag, matrix_transpose as _transpose)
from .rearrange_ops import argsort as _argsort
from .svd_ops import svd as _svd
from .tally_ops import where_v2 as _where

__all__ = ["matrix_exponential", "pinv", "matrix_rank", "lu_reconstruct", "lu_solve", "lu_matrix_inverse",
           "adjoint", "matvec", "normalize", "tridiagonal_matmul", "tridiagonal_solve"]

_FLOATS = (_dt.float32, _dt.float64)

# Pade coefficients b_0.. of TF's _matrix_exp_pade{3,5,7,9,13} (Higham 2005)
_PADE = {
    3: [120.0, 60.0, 12.0],
    5: [30240.0, 15120.0, 3360.0, 420.0, 30.0],
    7: [17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0],
    9: [17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0, 110880.0, 3960.0, 90.0],
    13: [64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
         10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0],
}


def _float_input(x: Any, what: str) -> _g.Tensor:
    t = _g.convert_to_tensor(x)
    if t.dtype not in _FLOATS:
        raise ValueError(f"{what} needs float32 or float64 matrices, got {t.dtype.name}")
    return t


def _pade(matrix: _g.Tensor, order: int) -> Tuple[_g.Tensor, _g.Tensor]:
    """(U, V) of the order-`order` Pade approximant, in TF's operation order (same rounding)."""
    b = [_constant(x, dtype=matrix.dtype) for x in _PADE[order]]
    # [M, M]: broadcasting over the batch adds the same values TF's batched eye does
    ident = _eye(_ao.shape(matrix)[-2], dtype=matrix.dtype)
    mm = _mo.matmul
    m2 = mm(matrix, matrix)
    if order == 3:
        return mm(matrix, m2 + b[1] * ident), b[2] * m2 + b[0] * ident
    m4 = mm(m2, m2)
    if order == 5:
        return mm(matrix, m4 + b[3] * m2 + b[1] * ident), b[4] * m4 + b[2] * m2 + b[0] * ident
    m6 = mm(m4, m2)
    if order == 7:
        return (mm(matrix, m6 + b[5] * m4 + b[3] * m2 + b[1] * ident),
                b[6] * m6 + b[4] * m4 + b[2] * m2 + b[0] * ident)
    if order == 9:
        m8 = mm(m6, m2)
        return (mm(matrix, m8 + b[7] * m6 + b[5] * m4 + b[3] * m2 + b[1] * ident),
                b[8] * m8 + b[6] * m6 + b[4] * m4 + b[2] * m2 + b[0] * ident)
    tmp_u = mm(m6, m6 + b[11] * m4 + b[9] * m2) + b[7] * m6 + b[5] * m4 + b[3] * m2 + b[1] * ident
    tmp_v = b[12] * m6 + b[10] * m4 + b[8] * m2
    return mm(matrix, tmp_u), mm(m6, tmp_v) + b[6] * m6 + b[4] * m4 + b[2] * m2 + b[0] * ident


def matrix_exponential(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002 (TF's name)
    """tf.linalg.expm: exp of each square matrix [..., M, M] by scaling and squaring with the
    Pade approximant TF picks by the 1-norm; NaN everywhere when any norm is not finite."""
    with _g.name_scope(name or "matrix_exponential"):
        matrix = _g.convert_to_tensor(input)
        if not matrix.dtype.is_complex:             # complex matrices too, as TF's
            matrix = _float_input(matrix, "expm")
        if matrix.shape.rank is not None and list(matrix.shape.dims[-2:]) == [0, 0]:
            return matrix
        static, in_shape = matrix.shape.is_fully_defined(), matrix.shape
        full_shape = _ao.shape(matrix)
        # one batch dimension, as TF: the where()s below then broadcast [B, 1, 1] conditions
        matrix = _ao.reshape(matrix, _ao.concat([[-1], full_shape[-2:]], axis=0))
        l1 = _ao.expand_dims(_ao.expand_dims(
            _mo.reduce_max(_mo.reduce_sum(_mo.abs(matrix), axis=-2), axis=-1), -1), -1)

        def const(x: float) -> _g.Tensor:
            return _constant(x, dtype=l1.dtype)

        def nest_where(vals: tuple, cases: tuple) -> _g.Tensor:
            rest = cases[1] if len(vals) == 1 else nest_where(vals[1:], cases[1:])
            return _where(_mo.less(l1, const(vals[0])), cases[0], rest)

        single_precision = matrix.dtype in (_dt.float32, _dt.complex64)
        if single_precision:
            maxnorm, orders = 3.925724783138660, (3, 5)
            conds = (4.258730016922831e-001, 1.880152677804762e+000)
        else:
            maxnorm, orders = 5.371920351148152, (3, 5, 7, 9)
            conds = (1.495585217958292e-002, 2.539398330063230e-001, 9.504178996162932e-001, 2.097847961257068e+000)
        squarings = _mo.maximum(_floor(_mo.log(l1 / const(maxnorm)) / _mo.log(const(2.0))), const(0.0))
        pairs = [_pade(matrix, k) for k in orders]
        scale = _mo.pow(const(2.0), squarings)
        if matrix.dtype.is_complex:
            scale = _mo.cast(scale, matrix.dtype)
        pairs.append(_pade(matrix / scale, 7 if single_precision else 13))
        u = nest_where(conds, tuple(p[0] for p in pairs))
        v = nest_where(conds, tuple(p[1] for p in pairs))
        is_finite = _is_finite(_mo.reduce_max(l1))
        result = _cond(is_finite, lambda: _solve(-u + v, u + v),
                       lambda: _ao.fill(_ao.shape(matrix), _constant(np.nan, dtype=matrix.dtype)))
        max_squarings = _mo.reduce_max(squarings)

        def c(i: Any, _: Any) -> Any:
            return _cond(is_finite, lambda: _mo.less(i, max_squarings), lambda: _constant(False))

        def b(i: Any, r: Any) -> Any:
            return i + 1, _where(_mo.less(i, squarings), _mo.matmul(r, r), r)

        _, result = _while_loop(c, b, [const(0.0), result])
        out = _ao.reshape(result, full_shape)
        if static:
            out.set_shape(in_shape)
        return out


def pinv(a: Any, rcond: Any = None, validate_args: bool = False, name: Optional[str] = None) -> _g.Tensor:
    """tf.linalg.pinv: the Moore-Penrose pseudo-inverse through svd; singular values at most
    rcond * the largest count as zero (rcond default 10 * max(M, N) * eps, as TF)."""
    with _g.name_scope(name or "pinv"):
        a = _float_input(a, "pinv")
        dtype = a.dtype
        if rcond is None:
            m, n = (a.shape.dims[-2:] if a.shape.rank is not None else [None, None])
            if m is not None and n is not None:
                rows_cols: Any = float(max(m, n))
            else:
                sh = _ao.shape(a)
                rows_cols = _mo.cast(_mo.maximum(sh[-2], sh[-1]), dtype)
            rcond = 10.0 * rows_cols * float(np.finfo(dtype.as_numpy_dtype).eps)
        rcond = _g.convert_to_tensor(rcond, dtype=dtype)
        s, u, v = _svd(a, full_matrices=False, compute_uv=True)
        cutoff = rcond * _mo.reduce_max(s, axis=-1)
        # inf where cut off: v / inf is 0 there, and the gradient through it is 0 too
        s = _where(_mo.greater(s, _ao.expand_dims(cutoff, -1)), s, _constant(np.inf, dtype=dtype))
        return _mo.matmul(v / _ao.expand_dims(s, -2), u, transpose_b=True)


def matrix_rank(a: Any, tol: Any = None, validate_args: bool = False, name: Optional[str] = None) -> _g.Tensor:
    """tf.linalg.matrix_rank: the number of singular values above tol (default
    eps * max(M, N) * the largest), int32."""
    with _g.name_scope(name or "matrix_rank"):
        a = _float_input(a, "matrix_rank")
        s = _svd(a, compute_uv=False)
        if tol is None:
            dims = a.shape.dims[-2:] if a.shape.rank is not None else [None, None]
            if None not in dims:
                m: Any = float(max(dims))
            else:
                m = _mo.cast(_mo.reduce_max(_ao.shape(a)[-2:]), a.dtype)
            tol = float(np.finfo(a.dtype.as_numpy_dtype).eps) * m * _mo.reduce_max(s, axis=-1, keepdims=True)
        else:
            tol = _g.convert_to_tensor(tol, dtype=a.dtype)
        return _mo.reduce_sum(_mo.cast(_mo.greater(s, tol), _dt.int32), axis=-1)


def _unit_lower(lower_upper: _g.Tensor) -> _g.Tensor:
    return _set_diag(_band(lower_upper, -1, 0), _ao.ones(_ao.shape(lower_upper)[:-1], dtype=lower_upper.dtype))


def _broadcast_batch(x: _g.Tensor, perm: _g.Tensor) -> Tuple[_g.Tensor, _g.Tensor]:
    """x [..., d, k] and perm [..., d] broadcast to one batch shape (adding zeros)."""
    if x.shape.rank is not None and perm.shape.rank is not None and x.shape.rank == perm.shape.rank + 1 \
            and x.shape.dims[:-2] == perm.shape.dims[:-1] and None not in x.shape.dims[:-2]:
        return x, perm
    x_b = x + _ao.expand_dims(_ao.zeros_like(perm, dtype=x.dtype), -1)
    perm_b = perm + _ao.zeros_like(x[..., 0], dtype=perm.dtype)
    return x_b, perm_b


def lu_reconstruct(lower_upper: Any, perm: Any, validate_args: bool = False,
                   name: Optional[str] = None) -> _g.Tensor:
    """tf.linalg.lu_reconstruct: A from lu's (lower_upper, perm): (L U)[..., argsort(perm), :]."""
    with _g.name_scope(name or "lu_reconstruct"):
        lower_upper = _float_input(lower_upper, "lu_reconstruct")
        perm = _g.convert_to_tensor(perm)
        x = _mo.matmul(_unit_lower(lower_upper), _band(lower_upper, 0, -1))
        # argsort of a permutation is its inverse (batched, unlike invert_permutation)
        return _batch_gather(x, _argsort(perm, axis=-1))


def lu_solve(lower_upper: Any, perm: Any, rhs: Any, validate_args: bool = False,
             name: Optional[str] = None) -> _g.Tensor:
    """tf.linalg.lu_solve: X with A X = rhs from lu's factors (batches broadcast)."""
    with _g.name_scope(name or "lu_solve"):
        lower_upper = _float_input(lower_upper, "lu_solve")
        perm = _g.convert_to_tensor(perm)
        rhs = _g.convert_to_tensor(rhs, dtype=lower_upper.dtype)
        rhs_b, perm_b = _broadcast_batch(rhs, perm)
        if rhs_b is not rhs:
            # collflow's triangular solve does not broadcast batches (TF's does): add zeros
            lower_upper = lower_upper + _ao.zeros_like(rhs_b[..., :1, :1])
        permuted = _batch_gather(rhs_b, perm_b)
        y = _trisolve(_unit_lower(lower_upper), permuted, lower=True)
        return _trisolve(lower_upper, y, lower=False)


def lu_matrix_inverse(lower_upper: Any, perm: Any, validate_args: bool = False,
                      name: Optional[str] = None) -> _g.Tensor:
    """tf.linalg.lu_matrix_inverse: A^-1 from lu's factors."""
    with _g.name_scope(name or "lu_matrix_inverse"):
        lower_upper = _float_input(lower_upper, "lu_matrix_inverse")
        sh = _ao.shape(lower_upper)
        # eye's batch_shape must be static; adding zeros broadcasts it over any batch
        ident = _eye(sh[-1], dtype=lower_upper.dtype) + _ao.zeros_like(lower_upper)
        return lu_solve(lower_upper, perm, ident)


def adjoint(matrix: Any, name: Optional[str] = None) -> _g.Tensor:
    """tf.linalg.adjoint: the conjugate transpose of the last two dims (the transpose: real)."""
    return _transpose(matrix, name=name or "adjoint", conjugate=True)


def matvec(a: Any, b: Any, transpose_a: bool = False, adjoint_a: bool = False, a_is_sparse: bool = False,
           b_is_sparse: bool = False, name: Optional[str] = None) -> _g.Tensor:
    """tf.linalg.matvec: a [..., M, N] times vectors b [..., N] (sparsity hints ignored)."""
    with _g.name_scope(name or "MatVec"):
        if transpose_a and adjoint_a:
            raise ValueError("Only one of transpose_a and adjoint_a can be True.")
        out = _mo.matmul(a, _ao.expand_dims(_g.convert_to_tensor(b), -1), transpose_a=transpose_a,
                         adjoint_a=adjoint_a)
        return _ao.squeeze(out, axis=-1)


def normalize(tensor: Any, ord: Any = "euclidean", axis: Any = None,  # noqa: A002 (TF's name)
              name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor]:
    """tf.linalg.normalize: (tensor / norm, norm), norm kept with size-1 reduced dims."""
    with _g.name_scope(name or "normalize"):
        tensor = _g.convert_to_tensor(tensor)
        n = _mo.cast(_norm(tensor, ord=ord, axis=axis, keepdims=True), tensor.dtype)
        return tensor / n, n


def _compact(diagonals: Any, diagonals_format: str, what: str) -> Tuple[_g.Tensor, _g.Tensor, _g.Tensor]:
    """(superdiag, maindiag, subdiag), each [..., M]: superdiag's last and subdiag's first
    element are ignored (TF's 'compact' layout)."""
    if diagonals_format == "compact":
        d = _float_input(diagonals, what)
        return d[..., 0, :], d[..., 1, :], d[..., 2, :]
    if diagonals_format == "sequence":
        sup, main, sub = (_float_input(x, what) for x in diagonals)
        return sup, main, sub
    if diagonals_format == "matrix":
        m = _float_input(diagonals, what)
        zero = _ao.zeros_like(m[..., :1, 0])          # [..., 1]
        main = _diag_part(m)
        sup = _ao.concat([_diag_part(m[..., :-1, 1:]), zero], axis=-1)
        sub = _ao.concat([zero, _diag_part(m[..., 1:, :-1])], axis=-1)
        return sup, main, sub
    raise ValueError(f"Unrecognized diagonals_format: {diagonals_format}")


def _shift(x: _g.Tensor, up: bool) -> _g.Tensor:
    """x[..., i+1, :] (up) or x[..., i-1, :] at row i, zero past the ends."""
    zero = _ao.zeros_like(x[..., :1, :])
    return _ao.concat([x[..., 1:, :], zero], axis=-2) if up else _ao.concat([zero, x[..., :-1, :]], axis=-2)


def tridiagonal_matmul(diagonals: Any, rhs: Any, diagonals_format: str = "compact",
                       name: Optional[str] = None) -> _g.Tensor:
    """tf.linalg.tridiagonal_matmul: the tridiagonal matrix times rhs [..., M, N]."""
    with _g.name_scope(name or "tridiagonal_matmul"):
        sup, main, sub = _compact(diagonals, diagonals_format, "tridiagonal_matmul")
        rhs = _g.convert_to_tensor(rhs, dtype=main.dtype)
        col = lambda d: _ao.expand_dims(d, -1)  # noqa: E731
        return col(sup) * _shift(rhs, True) + col(main) * rhs + col(sub) * _shift(rhs, False)


def tridiagonal_solve(diagonals: Any, rhs: Any, diagonals_format: str = "compact", transpose_rhs: bool = False,
                      conjugate_rhs: bool = False, name: Optional[str] = None,
                      partial_pivoting: bool = True, perturb_singular: bool = False) -> _g.Tensor:
    """tf.linalg.tridiagonal_solve: X with T X = rhs, T tridiagonal; solved as the dense system
    (LU with partial pivoting), so values agree with TF's to rounding; singular T is an error.
    rhs [..., M] (a vector per batch) or [..., M, K]; transpose_rhs takes rhs [..., K, M]."""
    with _g.name_scope(name or "tridiagonal_solve"):
        if perturb_singular:
            raise NotImplementedError("tridiagonal_solve: perturb_singular=True is not implemented in collflow")
        sup, main, sub = _compact(diagonals, diagonals_format, "tridiagonal_solve")
        rhs = _g.convert_to_tensor(rhs, dtype=main.dtype)
        vector = rhs.shape.rank is not None and main.shape.rank is not None and rhs.shape.rank == main.shape.rank
        if vector:
            rhs = _ao.expand_dims(rhs, -1)
        elif transpose_rhs:
            rhs = _transpose(rhs)
        t = _diag(main) + _band_shift(_diag(sup), 1) + _band_shift(_diag(sub), -1)
        x = _solve(t, rhs)
        return _ao.squeeze(x, axis=-1) if vector else x


def _band_shift(d: _g.Tensor, k: int) -> _g.Tensor:
    """diag(v) moved to the k-th diagonal: k=1 puts v[i] at (i, i+1) (v's last dropped), k=-1
    puts v[i] at (i, i-1) (v's first dropped)."""
    if k == 1:      # columns moved right: (i, i) -> (i, i + 1)
        return _ao.concat([_ao.zeros_like(d[..., :, :1]), d[..., :, :-1]], axis=-1)
    return _ao.concat([d[..., :, 1:], _ao.zeros_like(d[..., :, :1])], axis=-1)
