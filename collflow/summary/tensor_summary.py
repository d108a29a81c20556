"""TF1's `tf.summary.tensor_summary`: a serialized Summary whose one value holds the whole
tensor in its TensorProto (TensorSummaryV2): numbers in tensor_content, strings in
string_val, as TensorFlow writes them, with a SummaryMetadata (display_name,
summary_description, or the one given)."""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.registry import not_differentiable, register_op
from ..graph.shape import TensorShape
from ..kernels.device import to_host as _host
from ..kernels.registry import register_kernel, KernelContext
from ..kernels.tensor_serialize_kernels import serialize
from ..platform.varint import encode_varint
from ..runtime.placement import register_host_only
from . import proto
from .summary_ops import _summary_op

__all__ = ["tensor_summary", "SummaryDescription", "TaggedRunMetadata", "get_summary_description"]

register_op("TensorSummaryV2", lambda op: [(_dt.string, TensorShape([]))],
            doc="a serialized Summary with the tensor in its TensorProto")
register_host_only("TensorSummaryV2")
not_differentiable("TensorSummaryV2")


def _ld(number: int, payload: bytes) -> bytes:
    return encode_varint(number << 3 | 2) + encode_varint(len(payload)) + payload


@register_kernel("TensorSummaryV2", "CPU")
def _tensor_summary_kernel(op: Any, ctx: KernelContext) -> Any:
    tag = op.attrs["tag"].encode("utf-8")
    meta = op.attrs["serialized_summary_metadata"]
    dtype = op.inputs[0].dtype

    def run(x: Any) -> np.ndarray:
        # Value's fields in number order (tag 1, tensor 8, metadata 9), as TF serializes them
        value = _ld(1, tag) + _ld(8, serialize(np.asarray(_host(x)), dtype)) + _ld(9, meta)
        out = np.empty((), dtype=object)
        out[()] = _ld(1, value)  # bytes, as the other summary kernels give
        return out
    return run


def tensor_summary(name: str, tensor: Any, summary_description: Optional[str] = None,
                   collections: Optional[Sequence[str]] = None, summary_metadata: Any = None,
                   family: Optional[str] = None, display_name: Optional[str] = None) -> _g.Tensor:
    """A serialized Summary with `tensor` (any dtype collflow serializes) under tag `name`;
    `summary_metadata` (a SummaryMetadata or its bytes) replaces display_name and
    summary_description when given, as TF1's."""
    if summary_metadata is None:
        md = proto.SummaryMetadata()
        if display_name:
            md.display_name = display_name
        if summary_description:
            md.summary_description = summary_description
        meta = md.SerializeToString()
    elif isinstance(summary_metadata, (bytes, bytearray)):
        meta = bytes(summary_metadata)
    else:
        meta = summary_metadata.SerializeToString()
    return _summary_op("TensorSummaryV2", name, tensor, {"serialized_summary_metadata": meta}, family, collections)


class SummaryDescription(proto.Message):
    """TF's SummaryDescription message: a summary's `type_hint`."""
    FIELDS = ((1, "type_hint", "string", ""),)


class TaggedRunMetadata(proto.Message):
    """TF's TaggedRunMetadata message: a `tag` and a serialized RunMetadata."""
    FIELDS = ((1, "tag", "string", ""), (2, "run_metadata", "bytes", b""))


def get_summary_description(node_def: Any) -> SummaryDescription:
    """TF1's get_summary_description: defined only for the old TensorSummary op, which
    collflow never builds (tensor_summary makes TensorSummaryV2, as TF 1.15's), so this
    raises TF's ValueError for every op, as TF does for a TensorSummaryV2 node."""
    op_type = getattr(node_def, "op", None)
    op_type = op_type if isinstance(op_type, str) else getattr(node_def, "type", op_type)
    raise ValueError(f"Can't get_summary_description on {op_type}")
