"""What the ranks of a training job must agree on, checked before training starts.

Ranks that differ silently train wrongly or hang: a different data-order seed gives
overlapping shards, a different learning rate mixes two rates, a different step count leaves
one rank waiting for the others, and a rank that cannot see the checkpoint directory (a
node-local disk, a lagging network file system) starts from step 0 while the others resume.
Two checks, each one small allgather, turn that into one error on every rank:

    check_run_agreement(comm, {"seed": 0, "lr": 0.1, "steps": 30, "dataset": identity, ...})
    check_resume_agreement(comm, restore_result, checkpoint_dir)

The first names each key whose value differs and every rank's value; the second names which
rank resumes from which checkpoint (file, step, digest) and the likely cause.  `dataset_identity`
and `file_digest` give data and checkpoint files a cheap identity (size plus a digest of their
first and last bytes).  `announce_exit(comm, reason)` sets what this rank tells its peers when
it leaves (collflow.comm.departure), so a rank that stops early ends the others' waits at once.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from ..errors import FailedPreconditionError, InvalidArgumentError

__all__ = ["check_run_agreement", "check_resume_agreement", "resume_choice", "dataset_identity",
           "file_digest", "announce_exit", "allgather_json"]

_EDGE_BYTES = 64 << 10  # how much of each end of a file or array the digests read


def allgather_json(comm: Any, obj: Any, name: str) -> List[Any]:
    """Every rank's JSON-serializable `obj`, in rank order (one allgatherv; collective)."""
    if comm is None or comm.size <= 1:
        return [obj]
    blob = np.frombuffer(json.dumps(obj, sort_keys=True, default=str).encode(), dtype=np.uint8)
    data, counts = comm.allgatherv(blob, name=name)
    out, o = [], 0
    for c in counts:
        out.append(json.loads(bytes(data[o:o + int(c)]).decode()))
        o += int(c)
    return out


def _show(v: Any) -> str:
    return "unset" if v is None else json.dumps(v, default=str)


def _by_value(values: Sequence[Any]) -> str:
    """'rank 0: 0.1; ranks 1, 2: 0.2': the ranks grouped by value, in rank order."""
    groups: Dict[str, List[int]] = {}
    for r, v in enumerate(values):
        groups.setdefault(_show(v), []).append(r)
    return "; ".join(("rank " if len(rs) == 1 else "ranks ") + ", ".join(map(str, rs)) + f": {shown}"
                     for shown, rs in groups.items())


def check_run_agreement(comm: Any, values: Mapping[str, Any], problem: Optional[str] = None,
                        what: str = "settings") -> None:
    """Raises InvalidArgumentError on every rank when any key of `values` (JSON-serializable:
    flags, hyperparameters, step counts, dataset identity) differs between the ranks; the
    message names each differing key and each rank's value.  `problem`: why this rank cannot
    start (a dataset it cannot read, ...), or None; any rank's problem is raised on every
    rank instead, naming the rank.  Collective."""
    everyone = allgather_json(comm, {"values": dict(values), "problem": problem}, "train/agreement")
    problems = [(r, e["problem"]) for r, e in enumerate(everyone) if e["problem"]]
    if problems:
        if len(everyone) == 1:
            raise InvalidArgumentError(problems[0][1])
        raise InvalidArgumentError("; ".join(f"rank {r} cannot start: {p}" for r, p in problems))
    everyone = [e["values"] for e in everyone]
    keys = sorted(set().union(*(set(v) for v in everyone)))
    diffs = []
    for k in keys:
        vals = [v.get(k) for v in everyone]
        if any(x != vals[0] for x in vals):
            diffs.append(f"{k} ({_by_value(vals)})")
    if diffs:
        raise InvalidArgumentError(
            f"the ranks must agree on their {what}, but {len(diffs)} differ: " + "; ".join(diffs)
            + ". Launch every rank with the same arguments and the same data")


def dataset_identity(arrays: Mapping[str, np.ndarray]) -> str:
    """'<shapes and dtypes> digest <hex>' of named arrays: their shapes plus a digest of the
    first and last 64 KiB of each (cheap even for large data; catches another file, another
    version, another split)."""
    h = hashlib.blake2b(digest_size=8)
    parts = []
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        parts.append(f"{k} {a.dtype}{tuple(a.shape)}")
        raw = a.reshape(-1).view(np.uint8)
        h.update(f"{k}:{a.dtype}:{a.shape}".encode())
        h.update(raw[:_EDGE_BYTES].tobytes())
        h.update(raw[max(_EDGE_BYTES, raw.size - _EDGE_BYTES):].tobytes())
    return ", ".join(parts) + f"; digest {h.hexdigest()}"


def file_digest(path: str) -> str:
    """'<size> bytes, digest <hex>': the size plus a digest of the first and last 64 KiB."""
    h = hashlib.blake2b(digest_size=8)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        h.update(f.read(_EDGE_BYTES))
        if size > _EDGE_BYTES:
            f.seek(max(_EDGE_BYTES, size - _EDGE_BYTES))
            h.update(f.read(_EDGE_BYTES))
    return f"{size} bytes, digest {h.hexdigest()}"


def resume_choice(result: Any) -> Dict[str, Any]:
    """What this rank restored: checkpoint file name, step and file digest (all None when
    it restored nothing and starts from step 0)."""
    if result is None:
        return {"checkpoint": None, "step": None, "digest": None}
    try:
        digest: Optional[str] = file_digest(result.path)
    except OSError as e:  # deleted since it was read: the name and step still tell
        digest = f"unreadable now ({e.strerror})"
    return {"checkpoint": os.path.basename(result.path), "step": result.global_step, "digest": digest}


def check_resume_agreement(comm: Any, result: Any, directory: str) -> None:
    """Raises FailedPreconditionError on every rank when the ranks restored different
    checkpoints (`result`: this rank's RestoreResult or None); the message names which rank
    resumed from which file (step, digest) and the likely cause.  Collective."""
    everyone = allgather_json(comm, resume_choice(result), "train/resume_agreement")
    if all(c == everyone[0] for c in everyone):
        return

    def show(c: Dict[str, Any]) -> str:
        if c["checkpoint"] is None:
            return "no checkpoint (it would start from step 0)"
        return f"{c['checkpoint']} (step {c['step']}, {c['digest']})"
    groups: Dict[str, List[int]] = {}
    for r, c in enumerate(everyone):
        groups.setdefault(show(c), []).append(r)
    parts = "; ".join(("rank " if len(rs) == 1 else "ranks ") + ", ".join(map(str, rs)) + f" sees {s}"
                      for s, rs in groups.items())
    raise FailedPreconditionError(
        f"the ranks would resume from different checkpoints of {directory!r}: {parts}. Every rank must "
        "read the same checkpoint directory: a rank that sees an older checkpoint or none usually has the "
        "directory on a node-local disk, or a network file system that has not caught up yet (wait, or "
        "put --checkpoint-dir on a file system every node shares)")


def announce_exit(comm: Any, reason: str) -> None:
    """Sets what this rank tells its peers when its communicator closes (MPI; nothing for a
    world of one): a peer still waiting for a collective this rank never issues then fails
    at once with `reason` (see collflow.comm.departure)."""
    if comm is not None and hasattr(comm, "exit_reason"):
        comm.exit_reason = reason
