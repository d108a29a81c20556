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

import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import CollflowError, DataLossError, InvalidArgumentError

__all__ = ["Commit", "ElasticState", "Context", "run", "survive", "exit_rank", "arm", "fire"]


@dataclass
class Commit:
    """One in-memory commit: the step after which it was taken and what to restore."""
    step: int
    values: Dict[str, np.ndarray]
    pipeline: Dict[str, Any] = field(default_factory=dict)
    world_size: int = 1
    notes: Dict[str, Any] = field(default_factory=dict)  # this rank's own record (losses so far, ...)


class ElasticState:
    """The commits of one rank (`every`: steps between commits), whether a dead rank is replaced
    by a new process (`respawn`), and how many times the world has shrunk so far."""

    def __init__(self, every: int, respawn: bool = False):
        if every < 1:
            raise InvalidArgumentError(f"the elastic commit interval must be >= 1 step, got {every}")
        self.every = every
        self.respawn = respawn
        self.commits: List[Commit] = []
        self.shrinks = 0
        self.respawned = 0
        self.lost_steps = 0  # steps this rank had completed past the commit it rolled back to
        self.failed_at: Optional[int] = None  # the steps this rank had completed when it failed
        # seconds from the last step before each failure to the first step after it: finding
        # out, shrinking, rebuilding the session, rolling back, one step
        self.recovery_s: List[float] = []
        self._last_step_t: Optional[float] = None
        self.last_step = 0
        self._down_since: Optional[float] = None

    def due(self, step: int) -> bool:
        return step % self.every == 0

    def step_done(self, sess: Any, variables: Sequence[Any], step: int, pipeline: Callable[[], Dict[str, Any]],
                  world_size: int, notes: Optional[Callable[[], Dict[str, Any]]] = None) -> None:
        """After each training step: times a recovery, commits when one is due (with `notes()`:
        what this rank wants back after a rollback besides the variables, e.g. its losses)."""
        now = time.monotonic()
        if self._down_since is not None:
            self.recovery_s.append(now - self._down_since)
            self._down_since = None
        self._last_step_t = now
        self.last_step = step
        if self.due(step):
            c = self.commit(sess, variables, step, pipeline(), world_size)
            if notes is not None:
                c.notes = notes()

    def failed(self, step: Optional[int] = None) -> None:
        """A collective failed after `step` (default: the last step_done) completed steps (the
        driver shrinks the world next)."""
        self.failed_at = self.last_step if step is None else step
        self._down_since = self._last_step_t if self._last_step_t is not None else time.monotonic()

    def commit(self, sess: Any, variables: Sequence[Any], step: int, pipeline: Optional[Dict[str, Any]] = None,
               world_size: int = 1) -> Commit:
        """Copies the variables' values (one fetch) and the pipeline's state to host memory."""
        values = sess.run(list(variables))
        c = Commit(step, {v.op.name: np.array(x, copy=True) for v, x in zip(variables, values)},
                   dict(pipeline or {}), world_size)
        self.commits = (self.commits + [c])[-2:]
        return c

    def resume(self, comm: Any, sess: Any, variables: Sequence[Any], step: int,
               pipeline: Optional[Dict[str, Any]] = None) -> Optional[Commit]:
        """After initialising (and broadcasting) the variables: loads the commit the ranks agree
        on and returns it, or, on the first start, commits the current state as `step` and
        returns None.  Collective."""
        back = self.agree(comm, variables)
        if back is None:
            self.commit(sess, variables, step, pipeline, comm.size)
        else:
            self.restore(sess, variables, back)
        return back

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
        head = np.zeros(4, dtype=np.int64)
        if comm.rank == 0:
            assert commit is not None
            p = commit.pipeline
            head[:] = [commit.step, int(p.get("epoch", 0)), int(p.get("offset", 0)), commit.world_size]
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


# -- the kill -9 drill ---------------------------------------------------------------------------
# COLLFLOW_FAULT_KILL="R:S": world rank R kills itself with SIGKILL (what `kill -9` does) right
# after its step S (tests/faults, benchmarks/bench_elastic.py); a spawned replacement never does
_DRILL: Dict[str, Optional[int]] = {"kill_after": None}


def arm(world_rank: int) -> None:
    spec = os.environ.get("COLLFLOW_FAULT_KILL", "")
    r, _, s = spec.partition(":")
    if r.strip().isdigit() and s.strip().isdigit() and int(r) == world_rank:
        _DRILL["kill_after"] = int(s)


def fire(step: int) -> None:
    if _DRILL["kill_after"] == step:
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)


# -- the driver for user programs (train.py uses the same pieces) ------------------------------

class Context:
    """What one attempt of an elastic training function gets: the current communicator, this
    rank's commits, and helpers to load the agreed commit and to commit as steps complete."""

    def __init__(self, comm: Any, state: ElasticState):
        self.comm = comm
        self.state = state

    @property
    def rank(self) -> int:
        return self.comm.rank

    @property
    def size(self) -> int:
        return self.comm.size

    def restore(self, sess: Any, variables: Sequence[Any], pipeline: Optional[Dict[str, Any]] = None) -> int:
        """After initialising (and broadcasting) the variables: the step to go on from, 0 on
        the first start (ElasticState.resume).  Collective."""
        back = self.state.resume(self.comm, sess, variables, 0, pipeline)
        return 0 if back is None else back.step

    def step_done(self, sess: Any, variables: Sequence[Any], step: int,
                  pipeline: Callable[[], Dict[str, Any]] = dict) -> None:
        self.state.step_done(sess, variables, step, pipeline, self.size)


def survive(comm: Any, state: ElasticState, err: BaseException) -> Tuple[Any, int, float]:
    """After a failed collective: (the survivors' communicator, ranks lost, seconds); re-raises
    `err` when no rank died.  Every survivor calls it.  With `state.respawn`, each dead rank is
    replaced by a new process running this program with its arguments."""
    from ..comm import elastic as comm_elastic
    respawn = [os.path.abspath(sys.argv[0])] + sys.argv[1:] if state.respawn else None
    new, lost, took = comm_elastic.shrink(comm, respawn=respawn)
    if new is None:
        raise err
    state.shrinks += 1
    state.respawned += lost if respawn else 0
    return new, lost, took


def exit_rank(comm: Any, status: int = 0) -> None:
    """Ends this elastic rank once every rank is done: a barrier, then exit without
    MPI_Finalize, which after a shrink now and then waited forever for requests of the revoked
    communicators (Open MPI 5; under `--with-ft ulfm` leaving without it is no error).  A
    process the survivors spawned returns instead and finalizes (its launcher requires it)."""
    from ..comm import elastic as comm_elastic
    try:
        comm.barrier()  # bounded by the collective timeout
    except Exception:  # noqa: BLE001 - the work is done; a failure here must not fail the rank
        # CollflowError (a rank left), or MPI's own: after a shrink, ULFM can report a stale
        # any-source receive of the revoked communicator here (MPI_ERR_PROC_FAILED_PENDING,
        # seen once in CI after a respawned run had finished its 100 steps and its metrics)
        pass
    if comm_elastic.is_respawned():
        return
    try:
        comm.close()
    except Exception:
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def run(fn: Callable[[Context], Any], commit_every: int, respawn: bool = False, comm: Any = None) -> Any:
    """Runs `fn(ctx)` until it returns, calling it again after each rank failure with the
    survivors' communicator (Horovod Elastic's `run` + `state.commit()`, inside MPI).  `fn`
    builds its graph and session over `ctx.comm`, calls `ctx.restore(...)` after initialising
    and `ctx.step_done(...)` after each step; a failed collective ends the attempt.  Needs
    `mpirun --with-ft ulfm`.  `respawn`: start a process running this program in each dead
    rank's place (it joins at the agreed commit)."""
    from ..comm import elastic as comm_elastic
    comm_elastic.require_ft()
    comm = comm if comm is not None else comm_elastic.elastic_communicator()
    state = ElasticState(commit_every, respawn)
    while True:
        ctx = Context(comm, state)
        try:
            return fn(ctx)
        except CollflowError as e:
            state.failed()
            comm, _, _ = survive(comm, state, e)
