"""The index of a checkpoint directory (`checkpoint.json`): which checkpoints it holds, newest
last, read without trusting a name in it; scanning for files it does not list; retention.
"""
from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from ..errors import DataLossError
from . import checkpoint_policy as _policy
from .checkpoint_storage import atomic_write_bytes

__all__ = ["IndexEntry", "read_index", "write_index", "scan_directory", "retention_plan", "INDEX_FILENAME",
           "INDEX_FORMAT"]

INDEX_FORMAT = "collflow.checkpoint_index"
INDEX_FILENAME = "checkpoint.json"

log = logging.getLogger("collflow.checkpoint")


def _short(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return s[0] if s else type(e).__name__


# -- the index of a directory ----------------------------------------------------------------------


@dataclass
class IndexEntry:
    """One checkpoint of a directory: its file name (relative), step, time written, kept forever."""

    path: str
    step: Optional[int]
    time: float
    keep: bool = False

    def to_json(self) -> dict:
        return {"path": self.path, "step": self.step, "time": self.time, "keep": self.keep}


def read_index(directory: str) -> List[IndexEntry]:
    """The checkpoints listed in `directory`'s index, oldest first ([] when there is none).

    An unreadable index is reported as DataLossError (callers fall back to scanning).  An
    entry that is not a plain file name ('/', '..', an absolute path, NUL) is left out with a
    warning naming it: it could make a restore read, or retention delete, outside `directory`.
    """
    p = os.path.join(directory, INDEX_FILENAME)
    try:
        with open(p, "rb") as f:
            doc = json.loads(f.read().decode())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as e:
        raise DataLossError(f"checkpoint index {p} is unreadable: {_short(e)}") from None
    if not isinstance(doc, dict) or doc.get("format") != INDEX_FORMAT:
        raise DataLossError(f"{p} is not a collflow checkpoint index")
    out = []
    for d in doc.get("checkpoints", []):
        try:
            e = IndexEntry(d["path"], None if d.get("step") is None else int(d["step"]),
                           float(d.get("time", 0.0)), bool(d.get("keep", False)))
        except (KeyError, TypeError, ValueError):
            raise DataLossError(f"checkpoint index {p} has a malformed entry {d!r}") from None
        why = _policy.entry_problem(e.path)
        if why is not None:
            log.warning("checkpoint index %s: entry %r refused (%s); ignoring it, nothing outside %s is read or "
                        "deleted", p, e.path, why, directory)
            continue
        out.append(e)
    return out


def write_index(directory: str, entries: Sequence[IndexEntry], durable: bool = True) -> None:
    """Replaces `directory`'s index atomically (entries oldest first; the last is the latest)."""
    doc = {"format": INDEX_FORMAT, "version": 1,
           "latest": entries[-1].path if entries else None,
           "checkpoints": [e.to_json() for e in entries]}
    atomic_write_bytes(os.path.join(directory, INDEX_FILENAME),
                       (json.dumps(doc, indent=1) + "\n").encode(), durable=durable)


def scan_directory(directory: str, prefix: str) -> List[IndexEntry]:
    """Checkpoint files named `<prefix>-<step>.h5` in `directory`, by step (then time written).

    Finds checkpoints the index does not list (a crash between the rename of a checkpoint
    and the update of the index leaves one); `*.tmp` files are never included.
    """
    pat = re.compile(r"^" + re.escape(prefix) + r"-(\d+)\.h5$")
    out = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    for n in names:
        m = pat.match(n)
        if m:
            try:
                mtime = os.path.getmtime(os.path.join(directory, n))
            except OSError:
                continue
            out.append(IndexEntry(n, int(m.group(1)), mtime))
    out.sort(key=lambda e: (e.step, e.time))
    return out


def retention_plan(entries: Sequence[IndexEntry], max_to_keep: Optional[int], keep_every_n_hours: Optional[float],
                   last_preserved: float) -> Tuple[List[IndexEntry], List[IndexEntry], float]:
    """Which checkpoints (oldest first) to keep and which to delete.

    The newest `max_to_keep` are kept (None or 0: all); an older one is kept for good (its
    `keep` flag set) when it was written at least `keep_every_n_hours` after the last one kept
    that way (TensorFlow's keep_checkpoint_every_n_hours).  Returns (kept, to_delete, the new
    time of the last checkpoint kept for good).
    """
    entries = list(entries)
    if not max_to_keep or max_to_keep <= 0:
        return entries, [], last_preserved
    recent = [e for e in entries if not e.keep]
    delete: List[IndexEntry] = []
    for e in recent[:max(0, len(recent) - max_to_keep)]:
        if keep_every_n_hours is not None and keep_every_n_hours > 0 \
                and e.time - last_preserved >= keep_every_n_hours * 3600.0:
            e.keep = True
            last_preserved = e.time
        else:
            delete.append(e)
    gone = {id(e) for e in delete}
    return [e for e in entries if id(e) not in gone], delete, last_preserved
