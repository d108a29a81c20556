"""tf.serialize_sparse, tf.serialize_many_sparse and tf.deserialize_many_sparse (also under
tf.io), TF's formats: a SparseTensor as 3 strings, each component (indices, values,
dense_shape) a serialized TensorProto, byte for byte TF's (kernels/tensor_proto_wire.py).

    s = tf.serialize_many_sparse(sp)             # [N, 3] strings: one row per minibatch entry
    back = tf.deserialize_many_sparse(s, tf.float32, rank=2)

out_type=tf.variant (TF's alternative) is refused: collflow has no variant dtype.  No
gradients, as in TF.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from ..sparse_tensor import SparseTensor
from .op_util import make_op
from .sparse_ops import _sparse

__all__ = ["serialize_sparse", "serialize_many_sparse", "deserialize_many_sparse"]


def _deserialize_spec(op: _g.Operation) -> list:
    rank = op.attrs["rank"]  # None: unknown, as TF's before the Python wrapper sets it
    return [(_dt.int64, TensorShape([None, rank])), (op.attrs["dtype"], TensorShape([None])),
            (_dt.int64, TensorShape([rank]))]


register_op("SerializeSparse", lambda op: [(_dt.string, TensorShape([3]))], host_only=True,
            doc="a SparseTensor as 3 serialized TensorProtos (indices, values, dense_shape)")
register_op("SerializeManySparse", lambda op: [(_dt.string, TensorShape([None, 3]))], host_only=True,
            doc="each minibatch entry (dimension 0) of a SparseTensor serialized as by SerializeSparse")
register_op("DeserializeManySparse", _deserialize_spec, host_only=True,
            doc="the SparseTensor stacked from rows of 3 serialized TensorProtos")
not_differentiable("SerializeSparse", "SerializeManySparse", "DeserializeManySparse")


def _out_type(out_type: Any) -> _dt.DType:
    """TF's out_type: string; variant, TF's other choice, has no collflow dtype."""
    if getattr(out_type, "name", out_type) == "variant":
        raise TypeError("out_type=variant is not supported: collflow has no variant dtype; use out_type=tf.string "
                        "(the default)")
    try:
        dt = _dt.as_dtype(out_type)
    except TypeError:
        dt = None
    if dt != _dt.string:
        raise TypeError(f"Value for attr 'out_type' of {getattr(dt, 'name', out_type)} is not in the list of allowed "
                        f"values: string, variant")
    return dt


def _serialize(op_type: str, sp_input: Any, name: Optional[str], out_type: Any, what: str) -> _g.Tensor:
    _out_type(out_type)
    sp = _sparse(sp_input, what)
    with sp.graph.as_default():
        return make_op(op_type, [sp.indices, sp.values, sp.dense_shape],
                       {"T": sp.values.dtype, "out_type": _dt.string}, name=name or op_type).outputs[0]


def serialize_sparse(sp_input: Any, name: Optional[str] = None, out_type: Any = _dt.string) -> _g.Tensor:
    """The SparseTensor as a string vector [3]: its indices, values and dense_shape, each a
    serialized TensorProto (TF's bytes)."""
    return _serialize("SerializeSparse", sp_input, name, out_type, "serialize_sparse")


def serialize_many_sparse(sp_input: Any, name: Optional[str] = None, out_type: Any = _dt.string) -> _g.Tensor:
    """A string matrix [N, 3]: row i serializes entry i of dimension 0 (rank R - 1, shape
    dense_shape[1:]; empty where the entry has no values).  The SparseTensor's rank must be
    > 1 and its indices sorted, in bounds and unique (InvalidArgumentError when run, as TF)."""
    return _serialize("SerializeManySparse", sp_input, name, out_type, "serialize_many_sparse")


def deserialize_many_sparse(serialized_sparse: Any, dtype: Any, rank: Optional[int] = None,
                            name: Optional[str] = None) -> SparseTensor:
    """The SparseTensor of N serialized ones (a [N, 3] string matrix) stacked on a new
    dimension 0: dense shape [N] + each dimension's maximum; indices in row order (each
    row's as serialized).  `rank` (the result's, when known) sets the static shapes."""
    t = (serialized_sparse if isinstance(serialized_sparse, _g.Tensor)
         else _g.convert_to_tensor(serialized_sparse, dtype=_dt.string, name="serialized_sparse"))
    if t.dtype != _dt.string:
        raise TypeError(f"Input 'serialized_sparse' of 'DeserializeManySparse' Op has type {t.dtype.name} that does "
                        f"not match expected type of string.")
    op_name = name or "DeserializeManySparse"
    dims = t.shape.dims if t.shape.rank is not None else None
    if dims is not None and len(dims) != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {len(dims)} for '{op_name}' (op: DeserializeManySparse) "
                         f"with input shapes: {t.shape}.")
    if dims is not None and dims[1] is not None and dims[1] != 3:
        raise ValueError(f"Dimension must be 3 but is {dims[1]} for '{op_name}' (op: DeserializeManySparse) with "
                         f"input shapes: {t.shape}.")
    if rank is not None and (not isinstance(rank, int) or isinstance(rank, bool) or rank < 1):
        raise ValueError(f"rank must be a positive int or None, got {rank!r}")
    with t.graph.as_default():
        op = make_op("DeserializeManySparse", [t], {"dtype": _dt.as_dtype(dtype), "rank": rank}, name=op_name)
    return SparseTensor(*op.outputs)
