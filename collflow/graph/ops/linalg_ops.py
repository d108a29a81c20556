"""Linear-algebra ops: the singular values of (batches of) matrices, for the matrix 2-norm.

SingularValues(a) of a [..., M, N] tensor is [..., min(M, N)], largest first (numpy.linalg.
svd with compute_uv=False).  Its gradient is u diag(g) v^T from a thin SVD of `a`, computed by
SingularValuesGrad (which recomputes the SVD, so the forward op keeps no factors alive);
it is exact where the singular values are distinct.  Kernels in kernels/misc_kernels.py.
"""
from __future__ import annotations

from typing import Any, Optional

from .. import graph as _g
from ..registry import register_op, register_gradient, not_differentiable
from ..shape import TensorShape
from .op_util import single

__all__ = ["singular_values"]


def _sv_spec(op: _g.Operation) -> list:
    a = op.inputs[0]
    if not a.dtype.is_floating:
        raise ValueError(f"singular values need a floating-point matrix, got {a.dtype.name}")
    if a.shape.rank is None:
        return [(a.dtype, TensorShape(None))]
    if a.shape.rank < 2:
        raise ValueError(f"singular values need a tensor of rank >= 2 ([..., M, N]), got shape {a.shape}")
    m, n = a.shape.dims[-2:]
    k = None if m is None or n is None else min(m, n)
    return [(a.dtype, TensorShape(list(a.shape.dims[:-2]) + [k]))]


register_op("SingularValues", _sv_spec)
# SingularValuesGrad(a, g): the gradient of sum(g * singular_values(a)) with respect to a
register_op("SingularValuesGrad", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)])
not_differentiable("SingularValuesGrad")


@register_gradient("SingularValues")
def _singular_values_grad(op: _g.Operation, g: Any) -> list:
    return [single("SingularValuesGrad", [op.inputs[0], g])]


def singular_values(a: Any, name: Optional[str] = None) -> _g.Tensor:
    """The singular values of the matrices in the last two axes of `a`, largest first."""
    return single("SingularValues", [a], name=name or "SingularValues")
