"""tf.strings.format and tf.strings.unsorted_segment_join (TF 1.15's StringFormat and
UnsortedSegmentJoin ops; kernels in kernels/string_format_kernels.py)."""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from .op_util import make_op, single


def _segment_join_spec(op: _g.Operation) -> list:
    data, ids = op.inputs[0].shape, op.inputs[1].shape
    n = op.attrs["static_num_segments"]
    if data.rank is None or ids.rank is None:
        return [(_dt.string, TensorShape(None))]
    return [(_dt.string, TensorShape([n] + list(data.dims[ids.rank:])))]


register_op("StringFormat", lambda op: [(_dt.string, TensorShape([]))], host_only=True)
register_op("UnsortedSegmentJoin", _segment_join_spec, host_only=True)
not_differentiable("StringFormat")
not_differentiable("UnsortedSegmentJoin")


def string_format(template: str, inputs: Any, placeholder: str = "{}", summarize: int = 3,
                  name: Optional[str] = None) -> _g.Tensor:
    """A scalar string: `template` with each `placeholder` replaced by the next input's summary
    as tf.print shows it (the first and last `summarize` entries of each dimension)."""
    tensors = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    pieces = template.split(placeholder)
    if len(pieces) - 1 != len(tensors):
        raise ValueError(f"{len(pieces) - 1} placeholder(s) in template does not match {len(tensors)} tensor(s) "
                         f"provided as input")
    ts = [_g.convert_to_tensor(t) for t in tensors]
    return make_op("StringFormat", ts, {"template": tuple(pieces), "summarize": int(summarize)},
                   name=name or "StringFormat").outputs[0]


def unsorted_segment_join(inputs: Any, segment_ids: Any, num_segments: Any, separator: str = "",
                          name: Optional[str] = None) -> _g.Tensor:
    """[num_segments, ...] strings: the inputs of each segment joined with `separator` in the
    order they come (an empty segment is "")."""
    x = _g.convert_to_tensor(inputs, dtype=_dt.string)
    ids = _g.convert_to_tensor(segment_ids, graph=x.graph)
    from .misc_more_ops import get_static_value
    n = num_segments if isinstance(num_segments, int) else get_static_value(num_segments)
    if n is None:
        raise NotImplementedError("unsorted_segment_join: num_segments must be known when the graph is built")
    return single("UnsortedSegmentJoin", [x, ids], {"separator": separator, "static_num_segments": int(n)},
                  name=name or "UnsortedSegmentJoin")
