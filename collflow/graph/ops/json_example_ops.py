"""TF1's `tf.decode_json_example` (also `tf.io.decode_json_example`): Example protos in
protobuf's JSON mapping to their binary bytes, for parse_example.  Host kernel in
collflow/kernels/json_example_kernels.py."""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from .op_util import single

__all__ = ["decode_json_example"]


def _spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if x.dtype != _dt.string:
        raise TypeError(f"decode_json_example: json_examples must be a string tensor, got {x.dtype.name}")
    return [(_dt.string, x.shape)]


register_op("DecodeJSONExample", _spec, host_only=True, doc="JSON Examples to binary Example protos")
not_differentiable("DecodeJSONExample")


def decode_json_example(json_examples: Any, name: Optional[str] = None) -> _g.Tensor:
    """The binary Example of every JSON string (same shape); TF's InvalidArgumentError for
    text that is no Example in protobuf's JSON mapping."""
    x = _g.convert_to_tensor(json_examples, dtype=_dt.string)
    return single("DecodeJSONExample", [x], None, name=name or "DecodeJSONExample")
