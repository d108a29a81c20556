"""Kernels for IndexedSlices densification."""
from __future__ import annotations

from typing import Any

import numpy as np

from .registry import register_kernel, KernelContext


def add_at(xp: Any, out: Any, indices: Any, values: Any) -> None:
    """out[indices] += values (indices along axis 0), duplicates accumulating, in place.

    CuPy's add.at (an atomic add) takes real types only: a complex array adds its real and
    imaginary parts as the float pairs they are stored as (a view, no copy of `out`)."""
    if out.dtype.kind == "c" and xp is not np:
        if not out.flags.c_contiguous:
            part = xp.ascontiguousarray(out)
            add_at(xp, part, indices, values)
            out[...] = part
            return
        f = out.real.dtype
        vals = xp.ascontiguousarray(xp.broadcast_to(values.astype(out.dtype, copy=False),
                                                    indices.shape + out.shape[1:]))
        xp.add.at(out.view(f).reshape(out.shape + (2,)), indices, vals.view(f).reshape(vals.shape + (2,)))
        return
    xp.add.at(out, indices, values)


def scatter_add_rows(xp: Any, out: Any, indices: Any, values: Any) -> None:
    """out[indices] += values with duplicate indices accumulating."""
    if xp is np and values.ndim == 1 and values.dtype.kind in "fiu":  # bincount's weights are real
        out += xp.bincount(indices, weights=values, minlength=out.shape[0]).astype(out.dtype)
    else:
        add_at(xp, out, indices, values)


@register_kernel("IndexedSlicesToDense")
def _to_dense(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def to_dense(values: Any, indices: Any, dense_shape: Any) -> Any:
        shape = tuple(int(d) for d in dense_shape)
        out = xp.zeros(shape, dtype=values.dtype)
        if not values.size:  # nothing to add (a gather of an empty result left its indices unchecked)
            return out
        idx = indices.reshape(-1)
        # the row count from the indices: -1 cannot be inferred for zero-width rows
        scatter_add_rows(xp, out, idx, values.reshape((idx.shape[0],) + shape[1:]))
        return out
    return to_dense


register_kernel("DenseGradIdentity")(lambda op, ctx: lambda x: x)


def _levenshtein(a: list, b: list) -> int:
    """Insertions, deletions and substitutions turning a into b (one row of the table at a time)."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


@register_kernel("EditDistance")
def _edit_distance(op: Any, ctx: KernelContext) -> Any:
    import numpy as np
    from ..errors import InvalidArgumentError
    normalize = op.attrs["normalize"]

    def groups(idx: Any, vals: Any) -> dict:
        out: dict = {}
        for row, v in zip(map(tuple, np.asarray(idx)[:, :-1].tolist()), np.asarray(vals).tolist()):
            out.setdefault(row, []).append(v)
        return out

    def edit_distance(hi: Any, hv: Any, hs: Any, ti: Any, tv: Any, ts: Any) -> Any:
        hs, ts = np.asarray(hs), np.asarray(ts)
        if hs.shape != ts.shape or hs.size < 2:
            raise InvalidArgumentError(f"edit_distance: the SparseTensors need one rank >= 2, got dense shapes "
                                       f"{hs.tolist()} and {ts.tolist()}", op)
        shape = np.maximum(hs[:-1], ts[:-1])
        out = np.zeros(shape, np.float32)
        hyp, tru = groups(hi, hv), groups(ti, tv)
        for key in set(hyp) | set(tru):
            a, b = hyp.get(key, []), tru.get(key, [])
            d = float(_levenshtein(a, b))
            if normalize:
                d = d / len(b) if b else (np.inf if a else 0.0)
            out[key] = d
        return out
    return edit_distance


def _register_more() -> None:
    """Registers tf.sparse.bincount's and tf.SparseConditionalAccumulator's kernels (their
    module is imported here: kernels/__init__.py imports this one)."""
    from . import sparse_more_kernels
    assert sparse_more_kernels.SparseAccumulatorResource


_register_more()


def _register_serialize() -> None:
    """Registers tf.serialize_sparse's family and tf.ConditionalAccumulator's kernels."""
    from . import accumulator_kernels, sparse_serialize_kernels
    assert sparse_serialize_kernels.encode_tensor_proto and accumulator_kernels.DenseAccumulatorResource


_register_serialize()
