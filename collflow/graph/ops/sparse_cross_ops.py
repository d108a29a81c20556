"""TF1's feature crosses: tf.sparse.cross (string crosses "a_X_b") and tf.sparse.cross_hashed
(the crosses' FingerprintCat64 hashes modulo num_buckets, TF's bucket ids), over SparseTensors
and dense [batch, k] tensors.  One host op, SparseCross (kernels/sparse_cross_kernels.py);
not differentiable, as in TF.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from ..sparse_tensor import SparseTensor, SparseTensorValue
from . import math_ops as _m
from .op_util import make_op

__all__ = ["sparse_cross", "sparse_cross_hashed"]

DEFAULT_HASH_KEY = 0xDECAFCAFFE  # TF's hash_key when none is given


def _spec(op: _g.Operation) -> list:
    out = _dt.int64 if op.attrs["hashed_output"] else _dt.string
    return [(_dt.int64, TensorShape([None, 2])), (out, TensorShape([None])), (_dt.int64, TensorShape([2]))]


register_op("SparseCross", _spec, host_only=True)
not_differentiable("SparseCross")


def _cross(inputs: Sequence[Any], hashed: bool, num_buckets: int, hash_key: Optional[int],
           name: str) -> SparseTensor:
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError("sparse_cross: inputs must be a non-empty list of SparseTensors and tensors")
    sparse: List[SparseTensor] = []
    dense: List[_g.Tensor] = []
    for x in inputs:
        if isinstance(x, SparseTensorValue):
            x = SparseTensor.from_value(x)
        if isinstance(x, SparseTensor):
            sparse.append(x)
        else:
            dense.append(_g.convert_to_tensor(x))

    # non-string values are crossed as int64, as TF's wrapper casts them
    def as_key(t: _g.Tensor) -> _g.Tensor:
        return t if t.dtype in (_dt.string, _dt.int64) else _m.cast(t, _dt.int64)
    vals = [as_key(s.values) for s in sparse]
    dense = [as_key(d) for d in dense]
    attrs = {"num_sparse": len(sparse), "num_dense": len(dense), "hashed_output": bool(hashed),
             "num_buckets": int(num_buckets), "hash_key": int(DEFAULT_HASH_KEY if not hash_key else hash_key)}
    ins = [s.indices for s in sparse] + vals + [s.dense_shape for s in sparse] + dense
    op = make_op("SparseCross", ins, attrs, name=name)
    return SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])


def sparse_cross(inputs: Sequence[Any], name: Optional[str] = None) -> SparseTensor:
    """The crosses of each row's values of every input, as strings joined by "_X_" (int
    values written in decimal); inputs are SparseTensors and dense [batch, k] tensors."""
    return _cross(inputs, False, 0, None, name or "SparseCross")


def sparse_cross_hashed(inputs: Sequence[Any], num_buckets: int = 0, hash_key: Optional[int] = None,
                        name: Optional[str] = None) -> SparseTensor:
    """The crosses of each row's values of every input, hashed: FingerprintCat64 chained from
    hash_key over each value's hash, modulo num_buckets (2**63 - 1 when 0), TF's ids."""
    if int(num_buckets) < 0:
        raise ValueError(f"sparse_cross_hashed: num_buckets must be >= 0, got {num_buckets}")
    return _cross(inputs, True, num_buckets, hash_key, name or "SparseCross")
