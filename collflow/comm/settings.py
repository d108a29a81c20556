"""The COLLFLOW_* environment settings, and how the ranks of a job come to share them.

A setting that changes how ranks talk must be the same on every rank: with
COLLFLOW_TRACK_ARRIVALS=0 on one rank only, that rank sends no arrival records and its
peers' first wait-now all-reduce waits for them until the collective timeout.  So every
COLLFLOW_* variable collflow reads is listed in SETTINGS with one of three policies:

* "agreed": rank 0's value is the job's.  When an MPI communicator starts, the ranks
  exchange their values (one small allgather); a rank whose own value differs says so in one
  log line and takes rank 0's, its os.environ entry included, so every later read in the
  process sees the job's value.
* "compared": read when a module is imported, before any communicator exists, so the
  process cannot switch any more: if the ranks' values differ, every rank raises the same
  error at start, naming the variable and each rank's value.
* "local": per rank by nature (a rank's own output file, a debugging check that changes
  no value and no collective); left alone.

The same exchange also settles the communicator's own options that must match
(`track_arrivals`): rank 0's choice wins, with the same log line.
tests/faults/test_rank_agreement.py fails when collflow/ reads a COLLFLOW_* variable that
is not listed here.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Dict, List, Mapping, MutableMapping, Optional, Tuple

from ..errors import InvalidArgumentError

__all__ = ["SETTINGS", "negotiate", "job_settings"]

AGREED, COMPARED, LOCAL = "agreed", "compared", "local"

# variable: (policy, what it changes: the reason for the policy)
SETTINGS: Dict[str, Tuple[str, str]] = {
    "COLLFLOW_TRACK_ARRIVALS": (AGREED, "whether ranks send arrival records; a rank without them leaves its "
                                        "peers' wait-now collectives waiting for records that never come"),
    "COLLFLOW_OVERLAP": (AGREED, "whether collectives are posted at launch or at their wait"),
    "COLLFLOW_COLLECTIVE_TIMEOUT": (AGREED, "how long a collective may wait: every rank gives up at once"),
    "COLLFLOW_SHM": (AGREED, "whether all-reduces run through shared memory or MPI"),
    "COLLFLOW_SHM_ARENA_MB": (AGREED, "the layout of the shared-memory arenas every rank maps"),
    "COLLFLOW_SHM_STAGING_MB": (AGREED, "the piece size of shared-memory all-reduces"),
    "COLLFLOW_HIERARCHICAL": (AGREED, "whether ranks on several hosts all-reduce in two levels or on one flat "
                                      "communicator: ranks that chose differently would wait on different ones"),
    "COLLFLOW_PRETEND_HOSTS": (AGREED, "which ranks count as one host (the hierarchical all-reduce's groups)"),
    "COLLFLOW_NUMPY_BLAS": (COMPARED, "which BLAS computes matrix products (read at import): ranks would "
                                      "round differently"),
    "COLLFLOW_DISABLE_GPU": (COMPARED, "whether a rank computes on its GPU (read at import): the ranks' "
                                       "devices and collective kernels would differ"),
    "COLLFLOW_DEVICE": (COMPARED, "where sessions with device 'auto' compute (a GPU or the CPU): the ranks' "
                                  "kernels, and so their rounding and collective kernels, would differ"),
    "COLLFLOW_FAULT_KILL": (LOCAL, "a fault drill of scripts/train.py: rank R kills itself after step S"),
    "COLLFLOW_CHECK_OUTPUTS": (LOCAL, "a debugging check of kernel outputs; changes no value, no collective"),
    "COLLFLOW_MALLOC_TUNING": (LOCAL, "whether this process's malloc keeps freed arrays for reuse; changes no "
                                      "value, no collective"),
    "COLLFLOW_TIMELINE": (LOCAL, "the path of this rank's own trace file"),
    "COLLFLOW_CHECKPOINT_FORMAT": (LOCAL, "the format Savers write by default (collflow's or TensorFlow's): only "
                                          "rank 0 writes, and every rank restores either format"),
    "COLLFLOW_SUPERVISOR_PID": (LOCAL, "the supervisor holding the checkpoint directory's lock for this job "
                                       "(collflow.train.dir_lock; read by rank 0 only)"),
}


def job_settings(environ: Mapping[str, str] = os.environ) -> Dict[str, Optional[str]]:
    """This process's values of the agreed and compared variables (None: unset)."""
    return {k: environ.get(k) for k, (policy, _) in SETTINGS.items() if policy != LOCAL}


def _show(v: Any) -> str:
    return "unset" if v is None else repr(v)


def _by_value(values: List[Any]) -> str:
    """'rank 0: '1'; ranks 1, 2: unset' (ranks grouped by value, in rank order)."""
    groups: Dict[str, List[int]] = {}
    for r, v in enumerate(values):
        groups.setdefault(_show(v), []).append(r)
    parts = []
    for shown, ranks in groups.items():
        who = ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))
        parts.append(f"{who}: {shown}")
    return "; ".join(parts)


def negotiate(mpi_comm: Any, options: Optional[Mapping[str, Any]] = None,
              environ: MutableMapping[str, str] = os.environ) -> Dict[str, Any]:
    """Settles the job's settings over `mpi_comm` (an mpi4py intracommunicator; collective).

    Raises InvalidArgumentError on every rank when a "compared" variable differs; sets each
    "agreed" variable in `environ` to rank 0's value (one log line per variable that
    differed here).  `options`: communicator options that must match (None: not given);
    returns rank 0's, with a log line for each that differed here.
    """
    rank = mpi_comm.Get_rank()
    mine_env = job_settings(environ)
    mine_opts = dict(options or {})
    everyone = mpi_comm.allgather((mine_env, mine_opts))  # a few hundred bytes per rank
    bad = []
    for k, (policy, why) in SETTINGS.items():
        if policy != COMPARED:
            continue
        vals = [env.get(k) for env, _ in everyone]
        if any(v != vals[0] for v in vals):
            bad.append(f"{k} differs between ranks ({_by_value(vals)}); it sets {why}")
    if bad:
        raise InvalidArgumentError(
            "the ranks of this job run with different settings: " + "; ".join(bad)
            + ". Launch every rank with the same environment (e.g. mpirun -x VAR=value)")
    env0, opts0 = everyone[0]
    notes = []
    for k, (policy, why) in SETTINGS.items():
        if policy != AGREED or env0.get(k) == mine_env.get(k):
            continue
        notes.append(f"{k} is {_show(mine_env.get(k))} here but {_show(env0.get(k))} on rank 0 "
                     f"({why}): using rank 0's value")
        if env0.get(k) is None:
            environ.pop(k, None)
        else:
            environ[k] = env0[k]
    for k, v in mine_opts.items():
        if opts0.get(k) != v:
            notes.append(f"{k}={v!r} here but {opts0.get(k)!r} on rank 0: using rank 0's")
    for n in notes:
        print(f"[rank {rank}] collflow: {n}", file=sys.stderr, flush=True)
    return opts0
