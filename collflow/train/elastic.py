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
        self.respawn = False  # start a new process for each dead rank (collflow.comm.elastic.shrink)
        self.respawned = 0
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

    def agree(self, comm: Any, variables: Sequence[Any] = ()) -> Optional[Commit]:
        """The newest commit every survivor of `comm` has (None: no rank has committed yet).
        Ranks without any commit are newcomers (spawned to replace dead ranks): they get that
        commit from rank 0, a survivor (`variables` name what to receive).  Collective."""
        big = np.iinfo(np.int64).max
        # (newest commit step, -1 for a newcomer): the minimum over the ranks says both at once
        mine = np.array([self.commits[-1].step if self.commits else big, 0 if self.commits else -1], dtype=np.int64)
        least, newcomers = (int(v) for v in comm.allreduce(mine, "min"))
        if least == big:
            return None
        got = None
        if self.commits:
            for c in reversed(self.commits):
                if c.step == least:
                    got = c
            if got is None:
                raise DataLossError(f"the survivors' newest common commit is step {least}, which this rank no "
                                    f"longer holds (it keeps steps {[c.step for c in self.commits]})")
        if newcomers < 0:  # some rank has none: rank 0 hands the commit over
            got = self._share(comm, got, variables)
        return got

    def _share(self, comm: Any, commit: Optional[Commit], variables: Sequence[Any]) -> Commit:
        """Rank 0's commit on every rank (newcomers receive it; survivors keep theirs)."""
        head = np.zeros(5, dtype=np.int64)
        if comm.rank == 0:
            assert commit is not None
            p = commit.pipeline
            head[:] = [commit.step, int(p.get("epoch", 0)), int(p.get("offset", 0)), commit.world_size, 1]
        head = np.asarray(comm.broadcast(head, root=0, name="elastic/commit_head"))
        values: Dict[str, np.ndarray] = {}
        for v in sorted(variables, key=lambda v: v.op.name):
            name = v.op.name
            # (np.require, not ascontiguousarray: that makes a 0-d value shape (1,))
            buf = (np.require(commit.values[name], requirements="C") if commit is not None
                   else np.zeros(v.shape.as_list(), dtype=v.dtype.np))
            values[name] = np.array(comm.broadcast(buf, root=0, name=f"elastic/{name}"), copy=True)
        if commit is not None:
            return commit
        got = Commit(int(head[0]), values, {"epoch": int(head[1]), "offset": int(head[2])}, int(head[3]))
        self.commits = [got]
        return got

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
