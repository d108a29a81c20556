"""The sharded parameter server's routing: which rank owns which row, and how ids travel.

In collflow the parameter server is not a separate job: a table of `vocab` rows is split
over the `num_shards` ranks of the job and each rank holds one shard.  `ShardLayout` says
which rank owns a row and where it sits in that rank's shard, with TensorFlow's two
`partition_strategy` names:

  "mod"  row i lives on shard i % n at local row i // n   (ids spread round-robin)
  "div"  contiguous ranges: the first vocab % n shards get one row more
         (shard k holds rows [start_k, start_k + rows_k))

A lookup (collflow/comm/ps_kernels.py) takes three steps over the communicator:

  1. `plan_requests`: dedup the ids (np.unique with its inverse), order the unique ids by
     owner, and Alltoallv each owner the local rows asked of it, behind a small header
     (`route_header`) that carries the sender's layout and any out-of-range id, so every
     rank learns of a bad id or a mismatched layout in the same collective and raises;
  2. each owner gathers the rows asked of it and Alltoallv's them back;
  3. `values[inverse]` restores the original order and shape.

A gradient push walks the same route backwards: rows of the gradient are summed per
unique id (`segment_sum`), sent to the owners with the routes' counts, and the owner
applies them (duplicates from several ranks add up in the sparse optimizer update).

Everything here is plain NumPy on host arrays, no graph.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ..errors import InvalidArgumentError

try:  # optional: segment sums as one sparse matrix product
    from scipy import sparse as _sparse
except ImportError:  # pragma: no cover - depends on the environment
    _sparse = None

__all__ = ["STRATEGIES", "ShardLayout", "plan_requests", "segment_sum", "route_header", "ROUTE_HEADER",
           "check_route_headers", "DESCRIPTOR_LEN", "check_descriptors"]

STRATEGIES = ("mod", "div")
_MAGIC = 0x5053  # "PS": marks a header/descriptor as ours
_MAX_ROW_DIMS = 4

# route header (int64): magic, vocab, strategy, num_shards, shard_index, bad-id count, first bad id
ROUTE_HEADER = 7
# full layout descriptor (int64): route fields, dtype, row rank, row dims (padded), name crc
DESCRIPTOR_LEN = 5 + 2 + _MAX_ROW_DIMS + 1


def _crc(s: str) -> int:
    return zlib.crc32(s.encode()) & 0x7FFFFFFF


@dataclass(frozen=True)
class ShardLayout:
    """How the rows of one table of shape (vocab,) + row_shape are spread over num_shards ranks.

    `shard_index` is the shard this rank holds (its rank in the communicator); `name` is the
    table's name, used in collective keys and in messages.
    """

    name: str
    vocab: int
    row_shape: Tuple[int, ...]
    dtype: str
    strategy: str
    num_shards: int
    shard_index: int

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise InvalidArgumentError(
                f"sharded variable {self.name!r}: partition strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if self.vocab < 1:
            raise InvalidArgumentError(f"sharded variable {self.name!r}: needs at least one row, got {self.vocab}")
        if self.num_shards < 1 or not 0 <= self.shard_index < self.num_shards:
            raise InvalidArgumentError(
                f"sharded variable {self.name!r}: shard {self.shard_index} of {self.num_shards} is not a shard")
        if len(self.row_shape) > _MAX_ROW_DIMS or any(int(d) < 0 for d in self.row_shape):
            raise InvalidArgumentError(
                f"sharded variable {self.name!r}: rows of shape {self.row_shape} are not supported "
                f"(at most {_MAX_ROW_DIMS} known dimensions)")

    # -- which rows live where ------------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        """Shape of the whole table."""
        return (self.vocab,) + tuple(self.row_shape)

    @property
    def shard_shape(self) -> Tuple[int, ...]:
        """Shape of this rank's shard."""
        return (self.rows(),) + tuple(self.row_shape)

    def rows(self, k: Optional[int] = None) -> int:
        """Number of rows shard k (default: this rank's) holds."""
        k = self.shard_index if k is None else int(k)
        n, v = self.num_shards, self.vocab
        if self.strategy == "mod":
            return max(0, -(-(v - k) // n))
        q, r = divmod(v, n)
        return q + (1 if k < r else 0)

    def start(self, k: Optional[int] = None) -> int:
        """First row of shard k under "div" (the row range is [start, start + rows))."""
        k = self.shard_index if k is None else int(k)
        q, r = divmod(self.vocab, self.num_shards)
        return k * q + min(k, r)

    def owner(self, ids: np.ndarray) -> np.ndarray:
        """The shard owning each id (ids must be in range)."""
        ids = np.asarray(ids, dtype=np.int64)
        n = self.num_shards
        if n == 1:
            return np.zeros(ids.shape, dtype=np.int64)
        if self.strategy == "mod":
            return ids % n
        q, r = divmod(self.vocab, n)
        if q == 0:  # fewer rows than shards: one row each on the first `vocab` shards
            return ids.copy()
        edge = r * (q + 1)
        big = ids // (q + 1)
        return np.where(ids < edge, big, r + (ids - edge) // q)

    def local_rows(self, ids: np.ndarray, owner: Optional[np.ndarray] = None) -> np.ndarray:
        """Where each id sits in its owner's shard."""
        ids = np.asarray(ids, dtype=np.int64)
        if self.num_shards == 1:
            return ids.copy()
        if self.strategy == "mod":
            return ids // self.num_shards
        if owner is None:
            owner = self.owner(ids)
        q, r = divmod(self.vocab, self.num_shards)
        return ids - (owner * q + np.minimum(owner, r))

    def global_ids(self, k: Optional[int] = None) -> np.ndarray:
        """The ids of shard k's rows, in the shard's row order."""
        k = self.shard_index if k is None else int(k)
        m = self.rows(k)
        if self.strategy == "mod":
            return k + self.num_shards * np.arange(m, dtype=np.int64)
        return self.start(k) + np.arange(m, dtype=np.int64)

    def with_shards(self, num_shards: int, shard_index: int) -> "ShardLayout":
        """The same table split over another number of ranks (resharding)."""
        return ShardLayout(self.name, self.vocab, self.row_shape, self.dtype, self.strategy, int(num_shards),
                           int(shard_index))

    # -- what ranks compare ---------------------------------------------------------------------
    def descriptor(self) -> np.ndarray:
        """Everything the ranks must agree on, as int64 (see check_descriptors)."""
        dims = list(self.row_shape) + [-1] * (_MAX_ROW_DIMS - len(self.row_shape))
        return np.array([_MAGIC, self.vocab, STRATEGIES.index(self.strategy), self.num_shards, self.shard_index,
                         _dtype_code(self.dtype), len(self.row_shape)] + dims + [_crc(self.name)], dtype=np.int64)

    def describe(self) -> str:
        rows = "x".join(str(d) for d in self.shape)
        return (f"{rows} {self.dtype} '{self.strategy}' over {self.num_shards} shard(s), "
                f"holding shard {self.shard_index}")

    def fingerprint_repr(self) -> str:
        return f"ShardLayout({self.name},{self.shape},{self.dtype},{self.strategy},{self.num_shards},{self.shard_index})"


_DTYPES = ("float16", "float32", "float64", "bfloat16", "int32", "int64")


def _dtype_code(name: str) -> int:
    return _DTYPES.index(name) if name in _DTYPES else 100 + _crc(name) % 1000


def _describe_descriptor(d: np.ndarray) -> str:
    vocab, strat, n, _k, dt, nd = (int(x) for x in d[1:7])
    dims = [int(x) for x in d[7:7 + nd]]
    dtype = _DTYPES[dt] if 0 <= dt < len(_DTYPES) else f"dtype#{dt}"
    strat_s = STRATEGIES[strat] if 0 <= strat < len(STRATEGIES) else f"strategy#{strat}"
    return f"{'x'.join(str(x) for x in [vocab] + dims)} {dtype} '{strat_s}' over {n} shard(s)"


def check_descriptors(layout: ShardLayout, descs: np.ndarray, size: int) -> None:
    """Raises on every rank unless all ranks' layouts of one table fit together.

    descs: (size, DESCRIPTOR_LEN) from an allgather.  Every rank must describe the same table
    (rows, row shape, dtype, strategy), split over exactly `size` shards, rank r holding shard r.
    """
    descs = np.asarray(descs).reshape(size, -1)
    problems: List[str] = []
    ref = descs[0]
    for r in range(size):
        d = descs[r]
        if d.shape[0] != DESCRIPTOR_LEN or d[0] != _MAGIC:
            problems.append(f"rank {r} sent no layout of a sharded variable")
            continue
        if int(d[3]) != size:
            problems.append(f"rank {r} splits it over {int(d[3])} shard(s) but the job has {size} rank(s)")
        if int(d[4]) != r:
            problems.append(f"rank {r} holds shard {int(d[4])} instead of shard {r}")
        same = np.array_equal(np.delete(d, 4), np.delete(ref, 4))
        if not same and r > 0:
            problems.append(f"rank {r} has {_describe_descriptor(d)} where rank 0 has {_describe_descriptor(ref)}")
    if problems:
        raise InvalidArgumentError(
            f"sharded variable {layout.name!r}: mismatched shard layouts across ranks: " + "; ".join(problems)
            + ". Every rank must build the table with the same shape, dtype and partition strategy, "
              "over a communicator of num_shards ranks")


# -- the route of one lookup ------------------------------------------------------------------


def route_header(layout: ShardLayout, bad_count: int = 0, bad_id: int = 0) -> np.ndarray:
    """The int64 header in front of every block of requested rows."""
    return np.array([_MAGIC, layout.vocab, STRATEGIES.index(layout.strategy), layout.num_shards,
                     layout.shard_index, int(bad_count), int(bad_id)], dtype=np.int64)


def check_route_headers(layout: ShardLayout, names: str, headers: Sequence[np.ndarray], my_rank: int) -> None:
    """Raises (identically on every rank) if any rank looked up a bad id or routes differently.

    headers[s] is the header rank s sent to this rank.  names: the table(s) in the message.
    """
    size = len(headers)
    mine = route_header(layout)
    problems = []
    bad = []
    for s, h in enumerate(headers):
        if h.shape[0] < ROUTE_HEADER or h[0] != _MAGIC:
            problems.append(f"rank {s} sent no route header")
            continue
        if int(h[5]):
            bad.append((s, int(h[6]), int(h[5])))
        if int(h[3]) != size or int(h[4]) != s or not np.array_equal(h[1:3], mine[1:3]):
            strat = STRATEGIES[int(h[2])] if 0 <= int(h[2]) < len(STRATEGIES) else "?"
            problems.append(f"rank {s} has {int(h[1])} rows '{strat}' over {int(h[3])} shard(s) holding shard "
                            f"{int(h[4])}")
    if problems:
        raise InvalidArgumentError(
            f"embedding_lookup on sharded variable {names}: mismatched shard layouts across ranks (this is rank "
            f"{my_rank}: {layout.vocab} rows '{layout.strategy}' over {layout.num_shards} shard(s) holding shard "
            f"{layout.shard_index}; " + "; ".join(problems) + ")")
    if bad:
        s, bid, cnt = bad[0]
        who = "this rank" if s == my_rank else f"rank {s}"
        more = f" ({cnt} ids out of range on that rank)" if cnt > 1 else ""
        others = [f"rank {r}" for r, _, _ in bad[1:]]
        also = f"; also on {', '.join(others)}" if others else ""
        raise InvalidArgumentError(
            f"embedding_lookup on sharded variable {names}: id {bid} is out of range [0, {layout.vocab}) "
            f"(looked up by {who}){more}{also}")


def first_bad_id(ids: np.ndarray, vocab: int) -> Tuple[int, int]:
    """(number of ids outside [0, vocab), the first of them) — (0, 0) when all are fine."""
    if ids.size == 0:
        return 0, 0
    lo, hi = int(ids.min()), int(ids.max())
    if lo >= 0 and hi < vocab:
        return 0, 0
    bad = (ids < 0) | (ids >= vocab)
    return int(np.count_nonzero(bad)), int(ids[np.argmax(bad)])


def plan_requests(layout: ShardLayout, ids: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dedups `ids` (1-D, in range) and orders the unique ids by owner.

    Returns (local rows to request, ordered by owner; rows asked of each owner (num_shards,);
    inverse: for each id, its position in that ordered list).
    """
    n = layout.num_shards
    uniq, inv = np.unique(ids.astype(np.int64, copy=False), return_inverse=True)
    inv = inv.reshape(-1).astype(np.int64, copy=False)
    if n == 1:
        return uniq, np.array([uniq.shape[0]], dtype=np.int64), inv
    owner = layout.owner(uniq)
    if layout.strategy == "div":
        # sorted ids have non-decreasing owners already
        counts = np.bincount(owner, minlength=n).astype(np.int64)
        return layout.local_rows(uniq, owner), counts, inv
    order = np.argsort(owner, kind="stable")
    pos = np.empty_like(order)
    pos[order] = np.arange(order.shape[0], dtype=order.dtype)
    counts = np.bincount(owner, minlength=n).astype(np.int64)
    return layout.local_rows(uniq[order]), counts, pos[inv]


def segment_sum(values: np.ndarray, segments: np.ndarray, num_segments: int) -> np.ndarray:
    """out[j] = sum of values[i] over i with segments[i] == j (a fresh array).

    The order of summation is fixed (the rows of each segment in their order in `values`), so
    every rank and every run adds the same numbers in the same order.  With SciPy the sum is
    one sparse-times-dense product (4x faster than np.add.reduceat on embedding gradients).
    """
    m = segments.shape[0]
    out_shape = (num_segments,) + tuple(values.shape[1:])
    if m == 0:
        return np.zeros(out_shape, dtype=values.dtype)
    order = np.argsort(segments, kind="stable")
    if _sparse is not None and values.dtype.kind == "f":
        indptr = np.zeros(num_segments + 1, dtype=np.int64)
        np.cumsum(np.bincount(segments, minlength=num_segments), out=indptr[1:])
        ones = np.ones(m, dtype=values.dtype)
        mat = _sparse.csr_matrix((ones, order, indptr), shape=(num_segments, m))
        out = mat @ values.reshape(m, -1)
        return np.ascontiguousarray(out, dtype=values.dtype).reshape(out_shape)
    s = segments[order]
    first = np.empty(m, dtype=bool)
    first[0] = True
    np.not_equal(s[1:], s[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    sorted_vals = np.take(values, order, axis=0)
    out = np.zeros(out_shape, dtype=values.dtype)
    out[s[starts]] = np.add.reduceat(sorted_vals, starts, axis=0)
    return out


def block_offsets(counts: np.ndarray) -> np.ndarray:
    """Start of each rank's block in a buffer laid out by `counts` (length size + 1)."""
    off = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=off[1:])
    return off
