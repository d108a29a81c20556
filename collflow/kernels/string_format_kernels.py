"""Kernels of graph/ops/string_format_ops.py: StringFormat and UnsortedSegmentJoin."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .logging_kernels import fill_template
from .registry import KernelContext, register_kernel


@register_kernel("StringFormat")
def _string_format(op: Any, ctx: KernelContext) -> Any:
    pieces, summarize = op.attrs["template"], op.attrs["summarize"]

    def string_format(*tensors: Any) -> Any:
        out = np.empty((), dtype=object)
        out[()] = fill_template(pieces, tensors, summarize)
        return out
    return string_format


@register_kernel("UnsortedSegmentJoin")
def _unsorted_segment_join(op: Any, ctx: KernelContext) -> Any:
    sep, n = op.attrs["separator"], op.attrs["static_num_segments"]

    def segment_join(x: Any, ids: Any) -> Any:
        a, s = np.asarray(x, dtype=object), np.asarray(ids).astype(np.int64)
        if a.shape[:s.ndim] != s.shape:
            raise InvalidArgumentError(f"unsorted_segment_join: segment_ids of shape {s.shape} must be a prefix of "
                                       f"the inputs' shape {a.shape}", op)
        flat_ids = s.reshape(-1)
        bad = np.flatnonzero((flat_ids < 0) | (flat_ids >= n))
        if bad.size:
            raise InvalidArgumentError(f"unsorted_segment_join: segment_ids[{int(bad[0])}] = "
                                       f"{int(flat_ids[bad[0]])} is out of range [0, {n})", op)
        rows = a.reshape((flat_ids.size,) + a.shape[s.ndim:]).reshape(flat_ids.size, -1)
        inner = a.shape[s.ndim:]
        width = int(np.prod(inner, dtype=np.int64))
        groups: list = [[] for _ in range(n)]
        for i, seg in enumerate(flat_ids.tolist()):   # in order of appearance, as TF joins them
            groups[seg].append(rows[i])
        out = np.empty((n, width), dtype=object)
        for seg in range(n):
            for j in range(width):
                acc = ""
                for r in groups[seg]:   # TF's accumulation: the separator only after a non-empty result
                    acc = acc + sep + str(r[j]) if acc else str(r[j])
                out[seg, j] = acc
        return out.reshape((n,) + inner)
    return segment_join
