"""Minibatches over in-memory arrays: reproducible shuffling, resumable position, sharding.

Epoch e's order is a permutation drawn from the seed sequence (seed, e), so any epoch can be
regenerated on its own: a job resumed from a checkpoint at (epoch, offset) continues with
exactly the batches it would have produced.  With `num_shards` > 1 every shard (rank) draws
the same global permutation and takes its own contiguous block of it, so the shards of an
epoch are disjoint, and all shards have the same length (n // num_shards) so every rank runs
the same number of steps, which synchronous all-reduce training needs.  The few leftover
examples (n mod num_shards) are skipped for that epoch; with shuffling they differ from
epoch to epoch, so nothing is skipped for good.
"""
from __future__ import annotations

from typing import Any, Dict, Iterator, NamedTuple, Optional, Tuple

import numpy as np

__all__ = ["BatchIterator", "batches", "Position"]


class Position(NamedTuple):
    """Where an iterator stands: the epoch of its next batch and the examples of that epoch
    (of its shard) already delivered."""

    epoch: int
    offset: int


class BatchIterator:
    """Iterates (x_batch, y_batch) over `num_epochs` epochs (None: forever).

    x: array (n, ...); y: array (n,) or None (then batches are x alone).
    batch_size: examples per batch (per shard).  The last batch of an epoch is smaller unless
    `drop_remainder`.  shuffle: reshuffle every epoch from (seed, epoch).
    num_shards / shard_index: this iterator reads only shard `shard_index` of each epoch.
    epoch / offset: the position to start from (see `position`, `state_dict`).
    """

    def __init__(self, x: Any, y: Any, batch_size: int, shuffle: bool = True, seed: int = 0,
                 drop_remainder: bool = False, num_epochs: Optional[int] = 1, num_shards: int = 1,
                 shard_index: int = 0, epoch: int = 0, offset: int = 0):
        n = len(x)
        if y is not None and len(y) != n:
            raise ValueError(f"x has {n} examples but y has {len(y)}")
        if int(batch_size) <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if int(num_shards) <= 0 or not 0 <= int(shard_index) < int(num_shards):
            raise ValueError(f"need 0 <= shard_index < num_shards, got shard_index={shard_index}, "
                             f"num_shards={num_shards}")
        if num_epochs is not None and int(num_epochs) < 0:
            raise ValueError(f"num_epochs must be >= 0 or None, got {num_epochs}")
        if int(seed) < 0:
            raise ValueError(f"seed must be non-negative, got {seed}")
        self.x = x
        self.y = y
        self.n = n
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.drop_remainder = bool(drop_remainder)
        self.num_epochs = None if num_epochs is None else int(num_epochs)
        self.num_shards = int(num_shards)
        self.shard_index = int(shard_index)
        self.shard_size = n // self.num_shards
        if self.shard_size == 0:
            raise ValueError(f"{n} examples cannot be split into {self.num_shards} non-empty shards")
        if self.drop_remainder and self.shard_size < self.batch_size:
            raise ValueError(f"a shard holds {self.shard_size} examples, fewer than batch_size="
                             f"{self.batch_size}, so drop_remainder=True would give no batches")
        self.steps_per_epoch = (self.shard_size // self.batch_size if self.drop_remainder
                                else -(-self.shard_size // self.batch_size))
        # examples of an epoch that are delivered (the dropped remainder is not)
        self._limit = self.steps_per_epoch * self.batch_size if self.drop_remainder else self.shard_size
        self._cache: Tuple[int, Optional[np.ndarray]] = (-1, None)
        self.epoch = 0
        self.offset = 0
        self.set_position(epoch, offset)

    # -- order ------------------------------------------------------------------------
    def epoch_indices(self, epoch: int) -> np.ndarray:
        """Indices (into x) of this shard's examples in epoch `epoch`, in delivery order."""
        if self.shuffle:
            rng = np.random.default_rng(np.random.SeedSequence([self.seed, int(epoch)]))
            order = rng.permutation(self.n)
        else:
            order = np.arange(self.n)
        start = self.shard_index * self.shard_size
        return order[start:start + self.shard_size]

    def _indices(self, epoch: int) -> np.ndarray:
        e, idx = self._cache
        if e != epoch or idx is None:
            idx = self.epoch_indices(epoch)
            self._cache = (epoch, idx)
        return idx

    # -- position ---------------------------------------------------------------------
    @property
    def position(self) -> Position:
        """(epoch, offset) of the next batch."""
        return Position(self.epoch, self.offset)

    def set_position(self, epoch: int, offset: int = 0) -> None:
        """Moves to `offset` examples into epoch `epoch` (of this shard)."""
        epoch, offset = int(epoch), int(offset)
        if epoch < 0 or not 0 <= offset <= self.shard_size:
            raise ValueError(f"invalid position epoch={epoch}, offset={offset} (a shard epoch holds "
                             f"{self.shard_size} examples)")
        if offset >= self._limit:  # the end of an epoch is the start of the next
            epoch, offset = epoch + 1, 0
        self.epoch, self.offset = epoch, offset

    def state_dict(self) -> Dict[str, int]:
        """What a checkpoint needs to resume this iterator (plain ints)."""
        return {"epoch": self.epoch, "offset": self.offset, "seed": self.seed, "n": self.n,
                "num_shards": self.num_shards, "shard_index": self.shard_index,
                "batch_size": self.batch_size, "shuffle": int(self.shuffle)}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Resumes from `state_dict()`; the data, seed and sharding must be the same."""
        for k in ("seed", "n", "num_shards", "shuffle"):
            if k in state and int(state[k]) != int(getattr(self, k)):
                raise ValueError(f"cannot resume: the saved iterator had {k}={int(state[k])}, "
                                 f"this one has {k}={int(getattr(self, k))}")
        self.set_position(int(state["epoch"]), int(state["offset"]))

    # -- iteration ----------------------------------------------------------------------
    def __len__(self) -> int:
        """Batches per epoch (of this shard)."""
        return self.steps_per_epoch

    @property
    def total_steps(self) -> Optional[int]:
        """Batches left until num_epochs is reached (None when it runs forever)."""
        if self.num_epochs is None:
            return None
        left_epochs = self.num_epochs - self.epoch
        if left_epochs <= 0:
            return 0
        done = -(-self.offset // self.batch_size)
        return left_epochs * self.steps_per_epoch - done

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        if self.num_epochs is not None and self.epoch >= self.num_epochs:
            raise StopIteration
        idx = self._indices(self.epoch)
        lo = self.offset
        hi = min(lo + self.batch_size, self._limit)
        sel = idx[lo:hi]
        if not self.shuffle and self.num_shards == 1:
            # contiguous: hand out views, no copy
            xb = self.x[lo:hi]
            yb = None if self.y is None else self.y[lo:hi]
        else:
            xb = self.x[sel]
            yb = None if self.y is None else self.y[sel]
        self.offset = hi
        if hi >= self._limit:
            self.epoch += 1
            self.offset = 0
        return xb if self.y is None else (xb, yb)

    def __repr__(self) -> str:
        return (f"BatchIterator(n={self.n}, batch_size={self.batch_size}, shard={self.shard_index}/"
                f"{self.num_shards}, position={tuple(self.position)}, num_epochs={self.num_epochs})")


def batches(x: Any, y: Any, batch_size: int, shuffle: bool = True, seed: int = 0,
            drop_remainder: bool = False, num_epochs: Optional[int] = 1, num_shards: int = 1,
            shard_index: int = 0, epoch: int = 0, offset: int = 0) -> BatchIterator:
    """A BatchIterator over (x, y); by default one shuffled epoch.  See BatchIterator."""
    return BatchIterator(x, y, batch_size, shuffle=shuffle, seed=seed, drop_remainder=drop_remainder,
                         num_epochs=num_epochs, num_shards=num_shards, shard_index=shard_index,
                         epoch=epoch, offset=offset)
