"""gather and gather_nd with batch_dims > 0, built from GatherNd.

With batch_dims = b the first b dimensions of params and indices are batch dimensions that
pair up: batch position (n1..nb) of indices indexes only batch position (n1..nb) of params.
Both are rewritten as one plain gather_nd whose index vectors are prefixed with their own
batch coordinates, so values, the gradient (GatherNd's) and the range checks are GatherNd's.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

from ...errors import InvalidArgumentError
from .. import graph as _g
from . import array_ops as _a
from . import math_ops as _m

__all__: list = []


def _batch_coords(i: _g.Tensor, b: int, rank: int) -> list:
    """For a tensor i of rank `rank`, b tensors shaped like i: coordinate d (d < b) of every
    position (the batch coordinates each index carries)."""
    from .misc_ops import range as _range
    shape = _a.shape(i, out_type=i.dtype)
    zeros = _a.zeros_like(i)
    return [_a.reshape(_range(shape[d]), [-1 if k == d else 1 for k in range(rank)]) + zeros for d in range(b)]


def _check_batch_shapes(p: _g.Tensor, i: _g.Tensor, b: int, fn: str) -> None:
    for d in range(b):
        pd, id_ = p.shape.dims[d], i.shape.dims[d]
        if pd is not None and id_ is not None and pd != id_:
            raise InvalidArgumentError(f"{fn}: with batch_dims={b} params {p.shape} and indices {i.shape} must "
                                       f"agree on their first {b} dimensions")


def _with_ranks(params: Any, indices: Any, what: str) -> Tuple[_g.Tensor, _g.Tensor, int, int]:
    """params and indices as tensors (in params' graph) with their ranks, which must be known."""
    p = _g.convert_to_tensor(params)
    with p.graph.as_default():
        i = _g.convert_to_tensor(indices)
    pr, ir = p.shape.rank, i.shape.rank
    if pr is None or ir is None:
        raise InvalidArgumentError(f"{what} with batch_dims needs params and indices of known rank")
    return p, i, pr, ir


def gather_batched(params: _g.Tensor, indices: _g.Tensor, axis: int, batch_dims: int,
                   name: Optional[str] = None) -> _g.Tensor:
    """tf.gather(params, indices, axis, batch_dims) for batch_dims != 0: out[b.., m.., i.., r..] =
    params[b.., m.., indices[b.., i..], r..] with m the dimensions between the batch ones and
    axis; shape params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis+1:]."""
    from .index_ops import gather_nd
    p, i, pr, ir = _with_ranks(params, indices, "gather")
    b = int(batch_dims)
    if b < 0:
        b += ir
    if not 0 <= b <= ir:
        raise InvalidArgumentError(f"gather: batch_dims ({batch_dims}) must be in [{-ir}, {ir}] for indices of "
                                   f"rank {ir}")
    ax = int(axis)
    if ax < 0:
        ax += pr
    if not 0 <= ax < pr:
        raise InvalidArgumentError(f"gather: axis {axis} is out of range for params of rank {pr}")
    if b > ax:
        raise InvalidArgumentError(f"gather: batch_dims ({batch_dims}) must be less than or equal to axis ({axis})")
    _check_batch_shapes(p, i, b, "gather")
    if b == 0:
        from .slicing_ops import gather
        return gather(p, i, axis=ax, name=name)
    with p.graph.as_default(), p.graph.name_scope(name or "GatherBatched"):
        # params as [batch.., axis, middle.., rest..]: the gathered axis right after the batch
        mid = list(range(b, ax))
        pt = p if not mid else _a.transpose(p, list(range(b)) + [ax] + mid + list(range(ax + 1, pr)))
        coords = _a.stack(_batch_coords(i, b, ir) + [i], axis=-1)
        out = gather_nd(pt, coords)  # [batch.., idx.., middle.., rest..]
        if not mid:
            return out
        ni = ir - b  # the index dimensions after the batch ones
        m = len(mid)
        perm = list(range(b)) + [b + ni + k for k in range(m)] + [b + k for k in range(ni)] + \
            list(range(b + ni + m, b + ni + m + pr - ax - 1))
        return _a.transpose(out, perm)


def gather_nd_batched(params: _g.Tensor, indices: _g.Tensor, batch_dims: int,
                      name: Optional[str] = None) -> _g.Tensor:
    """tf.gather_nd(params, indices, batch_dims) for batch_dims != 0: each index vector
    indices[b.., j.., :] indexes params[b..]; shape indices.shape[:-1] +
    params.shape[batch_dims + K:] with K = indices.shape[-1]."""
    from .index_ops import gather_nd
    p, i, pr, ir = _with_ranks(params, indices, "gather_nd")
    b = int(batch_dims)
    if b < 0:
        raise InvalidArgumentError(f"gather_nd: batch_dims ({batch_dims}) must be non-negative")
    if b >= ir or b >= pr:
        raise InvalidArgumentError(f"gather_nd: batch_dims ({batch_dims}) must be less than the rank of indices "
                                   f"({ir}) and of params ({pr})")
    _check_batch_shapes(p, i, b, "gather_nd")
    if b == 0:
        return gather_nd(p, i, name=name)
    with p.graph.as_default(), p.graph.name_scope(name or "GatherNdBatched"):
        first = _m.reduce_sum(_a.zeros_like(i), axis=-1)  # shaped like the index vectors' positions
        coords = _a.stack(_batch_coords(first, b, ir - 1), axis=-1)
        return gather_nd(p, _a.concat([coords, i], axis=-1))
