"""A rank's exit as a message to its peers (Horovod's shutdown notice).

A rank that closes its communicator (its process ends, normally or after an error it
handled) tells every peer how many collectives it issued and why it left.  A peer that
waits for, or starts, a collective the departed rank never issued then fails at once with
an AbortedError naming that rank and its reason ("rank 1 left the job (finished training
after 27 steps) after 54 collective(s); collective #54 allreduce ... on rank 0 will never
complete") instead of waiting out the collective timeout.  Collectives the departed rank
did issue complete as usual, so ranks that finish together see nothing.

The notice travels on the failure channel of collflow.comm.mpi (its control communicator,
the one that carries a failed rank's notice); this module is its wording and bookkeeping."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from ..errors import AbortedError

__all__ = ["Departures", "encode", "decode", "DEFAULT_REASON"]

DEFAULT_REASON = "it closed its communicator (its process is ending)"


def encode(count: int, reason: Optional[str]) -> str:
    """The notice's text: the number of collectives issued, then the reason."""
    return f"{int(count)}\n{reason or DEFAULT_REASON}"


def decode(message: str) -> Tuple[int, str]:
    """(collectives issued, reason) of a notice."""
    head, _, reason = message.partition("\n")
    try:
        return int(head), reason or DEFAULT_REASON
    except ValueError:  # not a notice this module wrote: treat it as leaving at once
        return 0, message or DEFAULT_REASON


class Departures:
    """The peers that left: rank -> (collectives they issued, why they left)."""

    def __init__(self) -> None:
        self._left: Dict[int, Tuple[int, str]] = {}

    def __bool__(self) -> bool:
        return bool(self._left)

    def record(self, rank: int, message: str) -> None:
        """Records the notice `message` (see `encode`) of peer `rank`."""
        self._left[rank] = decode(message)

    def error_for(self, seq: int, description: str, me: int) -> Optional[AbortedError]:
        """The error for collective #seq (`description`) on rank `me` when a departed rank
        never issued it, else None."""
        for r, (count, reason) in sorted(self._left.items()):
            if seq >= count:
                return AbortedError(
                    f"rank {r} left the job ({reason}) after {count} collective(s); {description} on rank {me} "
                    "will never complete")
        return None
