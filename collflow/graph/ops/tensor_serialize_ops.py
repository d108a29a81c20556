"""TF1's `tf.io.serialize_tensor` / `tf.io.parse_tensor` (also `tf.serialize_tensor`,
`tf.parse_tensor`): a tensor to and from the bytes of its TensorProto, the same bytes
TensorFlow writes.  Host kernels in collflow/kernels/tensor_serialize_kernels.py.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from .op_util import single

__all__ = ["serialize_tensor", "parse_tensor"]

register_op("SerializeTensor", lambda op: [(_dt.string, TensorShape([]))], host_only=True,
            doc="a tensor as its serialized TensorProto")


def _parse_spec(op: _g.Operation) -> list:
    s = op.inputs[0]
    if s.dtype != _dt.string:
        raise ValueError(f"parse_tensor: serialized must be a string tensor, got {s.dtype.name}")
    if s.shape.rank not in (None, 0):
        raise ValueError(f"parse_tensor: serialized must be a scalar, got shape {s.shape}")
    return [(op.attrs["out_type"], TensorShape(None))]


register_op("ParseTensor", _parse_spec, host_only=True, doc="a tensor from its serialized TensorProto")
not_differentiable("SerializeTensor", "ParseTensor")


def serialize_tensor(tensor: Any, name: Optional[str] = None) -> _g.Tensor:
    """A scalar string: `tensor`'s TensorProto, serialized as TensorFlow does."""
    t = _g.convert_to_tensor(tensor)
    return single("SerializeTensor", [t], None, name=name or "SerializeTensor")


def parse_tensor(serialized: Any, out_type: Any, name: Optional[str] = None) -> _g.Tensor:
    """The tensor whose serialized TensorProto `serialized` holds; its dtype must be
    `out_type` (InvalidArgumentError when the run finds otherwise)."""
    s = _g.convert_to_tensor(serialized, dtype=_dt.string)
    return single("ParseTensor", [s], {"out_type": _dt.as_dtype(out_type)}, name=name or "ParseTensor")
