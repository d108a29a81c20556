"""tf.linalg.sqrtm (tf.matrix_square_root): the principal square root of a batch of square
matrices, with TF's gradient (the Sylvester equation R^T Y + Y R^T = dR, R = sqrtm(A)); and
the MatrixSolveLs op of tf.matrix_solve_ls(fast=False) (the minimum-norm least-squares
solution, rank deficient matrices included), which, as TF's, has no gradient (ValueError);
and tf.linalg.lu's Lu op (partial pivoting; no gradient, as TF 2.21 registers none).
The tf.linalg functions built from these and other ops are in linalg_extra_ops.py.
Kernels in kernels/linalg_more_kernels.py.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_gradient, register_op
from ..shape import TensorShape
from .op_util import dense as _dense, make_op, single

__all__ = ["matrix_square_root", "matrix_solve_ls_complete", "lu"]


def _square_spec(op: _g.Operation) -> list:
    a = op.inputs[0]
    # complex matrices too, as TF's kernels (sqrtm's gradient TF's unconjugated R^T Y + Y R^T = G)
    if a.dtype not in (_dt.float32, _dt.float64, _dt.complex64, _dt.complex128):
        raise ValueError(f"{op.type} needs float32 or float64 (or complex64, complex128) matrices, got {a.dtype.name}")
    if a.shape.rank is not None:
        if a.shape.rank < 2:
            raise ValueError(f"{op.type} needs [..., M, M] matrices, got shape {a.shape}")
        m, n = a.shape.dims[-2:]
        if m is not None and n is not None and m != n:
            raise ValueError(f"{op.type} needs square matrices, got shape {a.shape}")
    return [(a.dtype, a.shape)]


def _solve_ls_spec(op: _g.Operation) -> list:
    a, b = op.inputs[0], op.inputs[1]
    if a.dtype not in (_dt.float32, _dt.float64) or b.dtype != a.dtype:
        raise ValueError(f"MatrixSolveLs needs float32 or float64 matrix and rhs of one dtype, got {a.dtype.name} "
                         f"and {b.dtype.name}")
    if a.shape.rank is None or b.shape.rank is None:
        return [(a.dtype, TensorShape(None))]
    if a.shape.rank < 2 or b.shape.rank != a.shape.rank:
        raise ValueError(f"MatrixSolveLs: matrix {a.shape} and rhs {b.shape} need the same rank >= 2")
    return [(a.dtype, TensorShape(list(a.shape.dims[:-2]) + [a.shape.dims[-1], b.shape.dims[-1]]))]


def _lu_spec(op: _g.Operation) -> list:
    (a_dtype, a_shape), = _square_spec(op)
    idx = _dt.as_dtype(op.attrs["output_idx_type"])
    p_shape = TensorShape(None) if a_shape.rank is None else TensorShape(list(a_shape.dims[:-1]))
    return [(a_dtype, a_shape), (idx, p_shape)]


register_op("Lu", _lu_spec, doc="LU with partial pivoting: packed L\\U and the row permutation")
register_op("MatrixSquareRoot", _square_spec, doc="the principal square root of square matrices")
register_op("MatrixSquareRootGrad", lambda op: [(op.inputs[1].dtype, op.inputs[1].shape)],
            doc="Y with R^T Y + Y R^T = G (the gradient of sqrtm)")
register_op("MatrixSolveLs", _solve_ls_spec, doc="least squares by a complete orthogonal decomposition")
# TF's gradient of sqrtm is built from differentiable ops; collflow's Sylvester solve is one
# kernel, so second derivatives of sqrtm are not available
not_differentiable("MatrixSquareRootGrad")


@register_gradient("MatrixSquareRoot")
def _sqrtm_grad(op: _g.Operation, g: Any) -> list:
    return [single("MatrixSquareRootGrad", [op.outputs[0], _dense(g)])]


# Lu has no gradient function: TF 2.21 registers none, and tf.gradients raises TF's
# LookupError("No gradient defined for operation ...") for it (graph/gradients.py)


@register_gradient("MatrixSolveLs")
def _solve_ls_grad(op: _g.Operation, g: Any) -> list:
    if not op.attrs["fast"]:
        raise ValueError("Gradient not defined for fast=False")   # TF's message
    raise ValueError("MatrixSolveLs with fast=True is built from differentiable ops")


def matrix_square_root(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002 (TF's name)
    """The principal square root of each square matrix (NaN where the matrix has eigenvalues
    on the closed negative real axis, as TF)."""
    return single("MatrixSquareRoot", [_g.convert_to_tensor(input)], name=name or "MatrixSquareRoot")


def matrix_solve_ls_complete(matrix: Any, rhs: Any, l2_regularizer: Any = 0.0,
                             name: Optional[str] = None) -> _g.Tensor:
    """tf.matrix_solve_ls(fast=False): pinv(matrix) @ rhs (l2_regularizer accepted, ignored as
    by TF's kernel)."""
    a = _g.convert_to_tensor(matrix)
    b = _g.convert_to_tensor(rhs, dtype=a.dtype)
    l2 = _g.convert_to_tensor(l2_regularizer, dtype=_dt.float64)
    return make_op("MatrixSolveLs", [a, b, l2], {"fast": False}, name=name or "MatrixSolveLs").outputs[0]


def lu(input: Any, output_idx_type: Any = _dt.int32, name: Optional[str] = None) -> tuple:  # noqa: A002
    """tf.linalg.lu: (lu, p) with lu the packed factors (L unit lower, U upper) and p the row
    permutation, L U = A[..., p, :].  A singular matrix is InvalidArgumentError, as TF."""
    idx = _dt.as_dtype(output_idx_type)
    if idx not in (_dt.int32, _dt.int64):
        raise ValueError(f"lu: output_idx_type must be int32 or int64, got {idx.name}")
    op = make_op("Lu", [_g.convert_to_tensor(input)], {"output_idx_type": idx}, name=name or "Lu")
    return op.outputs[0], op.outputs[1]
