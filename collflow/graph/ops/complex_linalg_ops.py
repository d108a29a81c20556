"""tf.linalg.logm: the principal matrix logarithm of complex square matrices (TF's
MatrixLogarithm, which takes complex64/complex128 only and has no gradient: tf.gradients
through it raises LookupError, as TF's).  Kernel in kernels/complex_more_kernels.py.

(The other complex linear algebra, inverse/det/solve/Cholesky/SVD/eigh/QR of complex
matrices, is the real ops' kernels and gradients with adjoints in place of transposes:
linalg_ops.py, svd_ops.py, eig_ops.py, matrix_ops.py.)
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import register_op
from .op_util import single

__all__ = ["logm"]


def _logm_spec(op: _g.Operation) -> list:
    a = op.inputs[0]
    if a.dtype not in (_dt.complex64, _dt.complex128):
        raise TypeError(f"MatrixLogarithm needs complex64 or complex128 matrices, got {a.dtype.name}")
    if a.shape.rank is not None:
        if a.shape.rank < 2:
            raise ValueError(f"logm needs [..., M, M] matrices, got shape {a.shape}")
        m, n = a.shape.dims[-2:]
        if m is not None and n is not None and m != n:
            raise ValueError(f"logm needs square matrices, got shape {a.shape}")
    return [(a.dtype, a.shape)]


register_op("MatrixLogarithm", _logm_spec, doc="the principal logarithm of complex square matrices")


def logm(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002 (TF's name)
    """The principal logarithm of each complex matrix [..., M, M] (tf.linalg.logm): the X with
    expm(X) = input whose eigenvalues have imaginary parts in (-pi, pi).  A real tensor is a
    TypeError, as TF's (cast it to complex first)."""
    x = _g.convert_to_tensor(input)
    if x.dtype not in (_dt.complex64, _dt.complex128):
        raise TypeError(f"Value passed to parameter 'input' has DataType {x.dtype.name} not in list of allowed "
                        f"values: complex64, complex128")
    return single("MatrixLogarithm", [x], name=name or "MatrixLogarithm")
