"""In-memory commits for the elastic mode: what survivors roll back to when a rank dies.

Every K steps each rank copies its variables (model, optimizer slots, global step) and its
input pipeline's position into host memory (`commit`), keeping the last two commits.  After
a failure the survivors shrink the world (collflow.comm.elastic), agree on the newest step
they all committed (a collective could complete on some ranks and fail on others, so one
survivor may be a commit ahead), rebuild the session over the new communicator and load that
commit (`restore`): every survivor holds the same values, so the replicas stay bit-identical.
Steps since the commit are lost (at most K) and trained again by the N-1 ranks, with the data
re-sharded over them.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from ..errors import DataLossError, InvalidArgumentError

__all__ = ["Commit", "ElasticState"]


@dataclass
class Commit:
    """One in-memory commit: the step after which it was taken and what to restore."""
    step: int
    values: Dict[str, np.ndarray]
    pipeline: Dict[str, Any] = field(default_factory=dict)
    world_size: int = 1


class ElasticState:
    """The commits of one rank (`every`: steps between commits) and how many times the world
    has shrunk so far."""

    def __init__(self, every: int):
        if every < 1:
            raise InvalidArgumentError(f"the elastic commit interval must be >= 1 step, got {every}")
        self.every = every
        self.commits: List[Commit] = []
        self.shrinks = 0
        self.lost_steps = 0  # steps this rank had completed past the commit it rolled back to
        self.failed_at: Optional[int] = None  # the steps this rank had completed when it failed
        # seconds from the last step before each failure to the first step after it: finding
        # out, shrinking, rebuilding the session, rolling back, one step
        self.recovery_s: List[float] = []
        self._last_step_t: Optional[float] = None
        self._down_since: Optional[float] = None

    def due(self, step: int) -> bool:
        return step % self.every == 0

    def step_done(self, sess: Any, variables: Sequence[Any], step: int, pipeline: Callable[[], Dict[str, Any]],
                  world_size: int) -> None:
        """After each training step: times a recovery, commits when one is due."""
        now = time.monotonic()
        if self._down_since is not None:
            self.recovery_s.append(now - self._down_since)
            self._down_since = None
        self._last_step_t = now
        if self.due(step):
            self.commit(sess, variables, step, pipeline(), world_size)

    def failed(self, step: int) -> None:
        """A collective failed after `step` completed steps (the driver shrinks the world next)."""
        self.failed_at = step
        self._down_since = self._last_step_t if self._last_step_t is not None else time.monotonic()

    def commit(self, sess: Any, variables: Sequence[Any], step: int, pipeline: Optional[Dict[str, Any]] = None,
               world_size: int = 1) -> Commit:
        """Copies the variables' values (one fetch) and the pipeline's state to host memory."""
        values = sess.run(list(variables))
        c = Commit(step, {v.op.name: np.array(x, copy=True) for v, x in zip(variables, values)},
                   dict(pipeline or {}), world_size)
        self.commits = (self.commits + [c])[-2:]
        return c

    def agree(self, comm: Any) -> Optional[Commit]:
        """The newest commit every rank of `comm` has (None: no rank has committed yet).
        Collective over `comm`."""
        mine = np.array([self.commits[-1].step if self.commits else -1], dtype=np.int64)
        least = int(comm.allreduce(mine, "min")[0])
        if least < 0:
            return None
        for c in reversed(self.commits):
            if c.step == least:
                return c
        raise DataLossError(f"the survivors' newest common commit is step {least}, which this rank no longer "
                            f"holds (it keeps steps {[c.step for c in self.commits]})")

    def restore(self, sess: Any, variables: Sequence[Any], commit: Commit) -> None:
        """Loads `commit` into the variables of a (new) session, by variable name."""
        missing = [v.op.name for v in variables if v.op.name not in commit.values]
        if missing:
            raise DataLossError(f"the commit of step {commit.step} has no value for {missing[:5]}: the rebuilt "
                                "graph differs from the one that was committed")
        for v in variables:
            v.load(commit.values[v.op.name], sess)
        if self.failed_at is not None:
            self.lost_steps += max(0, self.failed_at - commit.step)
            self.failed_at = None
