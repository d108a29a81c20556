"""Kernels of tf.contrib.image's labelling ops (graph/ops/image_label_ops.py), on host
NumPy buffers: ImageConnectedComponents (union-find by hooking roots onto the smaller index
and pointer jumping, so each component's root is its first pixel in row-major order) and
BipartiteMatch (TF's greedy matching, its priority queue's tie order reproduced)."""
from __future__ import annotations

from typing import Any, Iterator, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel


def _nonzero(images: np.ndarray) -> np.ndarray:
    if images.dtype == object:  # strings: the empty one is "zero"
        return np.vectorize(lambda s: len(s) != 0, otypes=[bool])(images) if images.size else \
            np.zeros(images.shape, bool)
    return images != 0


def _label(images: np.ndarray) -> np.ndarray:
    """Consecutive ids (from 1, row-major by first pixel, across the batch), 0 for zero pixels."""
    n, h, w = images.shape
    size = n * h * w
    if size == 0:
        return np.zeros(images.shape, np.int64)
    live = _nonzero(images)
    index = np.arange(size, dtype=np.int64).reshape(images.shape)
    pairs = []
    # a pixel joins its right / lower neighbour when both hold the same non-zero value
    right = live[:, :, :-1] & (images[:, :, :-1] == images[:, :, 1:])
    pairs.append((index[:, :, :-1][right], index[:, :, 1:][right]))
    down = live[:, :-1, :] & (images[:, :-1, :] == images[:, 1:, :])
    pairs.append((index[:, :-1, :][down], index[:, 1:, :][down]))
    a = np.concatenate([p[0] for p in pairs])
    b = np.concatenate([p[1] for p in pairs])
    parent = np.arange(size, dtype=np.int64)
    while a.size:
        ra, rb = parent[a], parent[b]  # roots: parent is fully compressed at this point
        apart = ra != rb
        if not apart.any():
            break
        a, b, ra, rb = a[apart], b[apart], ra[apart], rb[apart]
        # hook each larger root onto the smallest root it touches: parents only decrease,
        # so there are no cycles, and a component's root ends as its smallest index
        np.minimum.at(parent, np.maximum(ra, rb), np.minimum(ra, rb))
        while True:
            jumped = parent[parent]
            if np.array_equal(jumped, parent):
                break
            parent = jumped
    roots = parent.reshape(images.shape)
    out = np.zeros(images.shape, np.int64)
    if live.any():
        _, ids = np.unique(roots[live], return_inverse=True)
        out[live] = ids.reshape(-1) + 1
    return out


@register_kernel("ImageConnectedComponents")
def _connected_components(op: Any, ctx: KernelContext) -> Any:
    def run(images: Any) -> Any:
        x = np.asarray(images)
        if x.ndim != 3:
            raise InvalidArgumentError(f"image must be 3-dimensional (N, H, W), got shape {x.shape}", op)
        return _label(x)
    return run


# -- BipartiteMatch: std::priority_queue<DistancePair>, popping the smallest distance first --

_EXACT_HEAP_LIMIT = 1 << 17  # beyond this many candidate pairs, ties are broken row-major instead


def _heap_order(dist: np.ndarray) -> Iterator[Tuple[int, int]]:
    """The (row, column) pairs in the order TF's libstdc++ priority queue pops them: pushed
    one by one row-major, `a < b` meaning b.dist < a.dist (float comparisons, NaN included)."""
    values = dist.tolist()  # Python floats order as the float32s do, NaN included
    heap: list = []  # entries (dist, row, col)

    def less(x: tuple, y: tuple) -> bool:  # the queue's comparator: x "<" y
        return y[0] < x[0]

    for r, row in enumerate(values):
        for c, d in enumerate(row):
            value = (d, r, c)
            heap.append(value)
            hole = len(heap) - 1
            parent = (hole - 1) // 2
            while hole > 0 and less(heap[parent], value):
                heap[hole] = heap[parent]
                hole = parent
                parent = (hole - 1) // 2
            heap[hole] = value
    while heap:
        yield heap[0][1:]
        last = heap.pop()
        if not heap:
            break
        # std::pop_heap: move the last element into the root's hole (__adjust_heap)
        length = len(heap)
        hole = 0
        child = 0
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if less(heap[child], heap[child - 1]):
                child -= 1
            heap[hole] = heap[child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            heap[hole] = heap[child - 1]
            hole = child - 1
        parent = (hole - 1) // 2
        while hole > 0 and less(heap[parent], last):
            heap[hole] = heap[parent]
            hole = parent
            parent = (hole - 1) // 2
        heap[hole] = last


def _match(dist: np.ndarray, valid_rows: int, top_k: int) -> Tuple[np.ndarray, np.ndarray]:
    rows, cols = dist.shape
    row_match = np.full(rows, -1, np.int32)
    col_match = np.full(cols, -1, np.int32)
    limit = top_k if top_k > 0 else valid_rows * cols
    cand = dist[:valid_rows]
    flat = cand.ravel()
    if cand.size == 0 or limit <= 0:
        return row_match, col_match
    ties = np.isnan(flat).any() or np.unique(flat).size != flat.size
    if ties and flat.size <= _EXACT_HEAP_LIMIT:
        order: Any = _heap_order(cand)
    else:  # distinct distances: any queue pops them in sorted order
        order = zip(*np.unravel_index(np.argsort(flat, kind="stable"), cand.shape))
    matched = 0
    for r, c in order:
        if row_match[r] == -1 and col_match[c] == -1:
            row_match[r] = c
            col_match[c] = r
            matched += 1
            if matched >= limit or matched >= min(valid_rows, cols):
                break
    return row_match, col_match


@register_kernel("BipartiteMatch")
def _bipartite_match(op: Any, ctx: KernelContext) -> Any:
    top_k = int(op.attrs["top_k"])

    def run(distance_mat: Any, num_valid_rows: Any) -> Any:
        dist = np.asarray(distance_mat, dtype=np.float32)
        if dist.ndim != 2:
            raise InvalidArgumentError(f"distance_mat should be 2-dimensional, but got {list(dist.shape)}", op)
        valid = np.asarray(num_valid_rows, dtype=np.float32)
        if valid.size != 1:
            raise InvalidArgumentError("num_valid_rows argument should be a tensor with 1 element, but got "
                                       f"{valid.size}", op)
        rows = dist.shape[0]
        v = float(valid.reshape(-1)[0])
        valid_rows = int(np.float32(v) + np.float32(0.1)) if v >= 0 else rows
        if rows < valid_rows:
            raise InvalidArgumentError(f"There should be at least {valid_rows} rows in distance_mat, but only got "
                                       f"{rows} rows.", op)
        row_match, col_match = _match(dist, valid_rows, top_k)
        return ctx.xp.asarray(row_match), ctx.xp.asarray(col_match)
    return run
