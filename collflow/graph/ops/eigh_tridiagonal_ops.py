"""tf.linalg.eigh_tridiagonal: eigenvalues (and eigenvectors) of a real symmetric tridiagonal
matrix given by its diagonal `alpha` [n] and off-diagonal `beta` [n - 1].

The matrix is assembled densely and handed to SelfAdjointEigV2 (numpy.linalg.eigh), so the
result is differentiable with respect to alpha and beta, unlike TF's bisection; `tol` is
accepted and unused (eigh is accurate to working precision).  Eigenvectors are unique only
up to sign and may differ from TensorFlow's by a factor -1 per column."""
from __future__ import annotations

from typing import Any, Optional

from .. import graph as _g
from . import array_ops as _a
from . import matrix_ops as _mx
from .eig_ops import self_adjoint_eig, self_adjoint_eigvals
from .index_ops import boolean_mask
from . import math_ops as _m

__all__ = ["eigh_tridiagonal"]


def _tridiagonal(alpha: _g.Tensor, beta: _g.Tensor, n: int) -> _g.Tensor:
    """The dense symmetric [n, n] matrix with diagonal alpha and off-diagonals beta."""
    if n == 1:
        return _a.reshape(alpha, [1, 1])
    upper = _a.concat([_a.zeros([n - 1, 1], dtype=alpha.dtype), _mx.matrix_diag(beta)], axis=1)
    upper = _a.concat([upper, _a.zeros([1, n], dtype=alpha.dtype)], axis=0)
    return _mx.matrix_diag(alpha) + upper + _mx.matrix_transpose(upper)


def eigh_tridiagonal(alpha: Any, beta: Any, eigvals_only: bool = True, select: str = "a", select_range: Any = None,
                     tol: Any = None, name: Optional[str] = None) -> Any:
    """Eigenvalues in ascending order (and the eigenvectors as columns when
    eigvals_only=False).  select='a': all; 'v': those in the half-open interval
    (select_range[0], select_range[1]]; 'i': indices select_range[0] .. select_range[1]
    inclusive."""
    with _g.name_scope(name, "eigh_tridiagonal", [alpha, beta]):
        alpha = _g.convert_to_tensor(alpha, name="alpha")
        if alpha.dtype.is_complex:
            raise NotImplementedError("eigh_tridiagonal of complex (Hermitian) matrices is not supported")
        if not alpha.dtype.is_floating:
            raise TypeError(f"alpha must be a floating-point tensor, got {alpha.dtype.name}")
        if alpha.shape.rank != 1:
            raise ValueError(f"alpha must be a vector, got shape {alpha.shape}")
        n = alpha.shape.dims[0]
        if n is None:
            raise NotImplementedError("eigh_tridiagonal needs a statically known matrix size")
        if n <= 1:
            # a 1 x 1 (or empty) matrix is its own eigenvalue; beta is not read, as TF
            beta = _a.zeros([0], dtype=alpha.dtype)
        beta = _g.convert_to_tensor(beta, name="beta")
        if beta.dtype.is_complex:
            raise NotImplementedError("eigh_tridiagonal of complex (Hermitian) matrices is not supported")
        if beta.dtype != alpha.dtype:
            raise ValueError(f"'alpha' and 'beta' must have the same type, got {alpha.dtype.name} and "
                             f"{beta.dtype.name}")
        if beta.shape.rank != 1:
            raise ValueError(f"beta must be a vector, got shape {beta.shape}")
        if beta.shape.dims[0] is not None and beta.shape.dims[0] != n - 1:
            raise ValueError(f"beta must have length n - 1 = {n - 1}, got {beta.shape.dims[0]}")
        if select not in ("a", "v", "i"):
            raise ValueError(f"select must be one of 'a', 'v' or 'i', got {select!r}")
        if select != "a" and select_range is None:
            raise ValueError(f"select={select!r} needs a select_range")
        matrix = _tridiagonal(alpha, beta, n)
        if eigvals_only:
            e, v = self_adjoint_eigvals(matrix), None
        else:
            e, v = self_adjoint_eig(matrix)
        if select == "i":
            lo, hi = (int(x) for x in select_range)
            if not 0 <= lo <= hi < n:
                raise ValueError(f"select_range {select_range} is not a valid index range for n = {n}")
            e = e[lo:hi + 1]
            v = None if v is None else v[:, lo:hi + 1]
        elif select == "v":
            rng = _g.convert_to_tensor(select_range, dtype=alpha.dtype
                                       if not isinstance(select_range, _g.Tensor) else None)
            keep = _m.logical_and(_m.greater(e, rng[0]), _m.less_equal(e, rng[1]))
            e = boolean_mask(e, keep)
            v = None if v is None else _mx.matrix_transpose(boolean_mask(_mx.matrix_transpose(v), keep))
        return e if eigvals_only else (e, v)
