"""collflow's error types (TensorFlow 1.x names), all subclasses of CollflowError.

Run-time errors carry the op that failed, so messages can say what op, of which type,
created where in user code.
"""
from __future__ import annotations

from typing import Any, Optional

__all__ = [
    "CollflowError", "InvalidArgumentError", "NotFoundError", "FailedPreconditionError",
    "CancelledError", "UnimplementedError", "InternalError", "DeadlineExceededError",
    "AbortedError", "OutOfRangeError", "ResourceExhaustedError", "UnavailableError", "PeerFailedError",
    "DataLossError", "UnsafeCheckpointError",
]


class CollflowError(Exception):
    """Base of every error collflow raises on purpose.

    `op` is the Operation involved (or None); `message` is the bare message without the
    op's location, which `str()` appends.
    """

    def __init__(self, message: str, op: Optional[Any] = None):
        self.message = message
        self.op = op
        super().__init__(self._format())

    def _format(self) -> str:
        if self.op is None:
            return self.message
        where = self.op.creation_site()
        return f"{self.message}\n  [op {self.op.name!r} of type {self.op.type}, created at {where}]"


class InvalidArgumentError(CollflowError, ValueError):
    """A bad argument: wrong shape, dtype or value, fed or computed."""


class NotFoundError(CollflowError, KeyError):
    """A name, kernel or file that does not exist."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.args[0] if self.args else ""


class FailedPreconditionError(CollflowError):
    """The system is not in a state to run this (e.g. an uninitialized variable)."""


class CancelledError(CollflowError):
    """The run was cancelled between ops."""


class UnimplementedError(CollflowError, NotImplementedError):
    """No kernel or gradient for this op or device."""


class InternalError(CollflowError):
    """A kernel failed unexpectedly at run time."""


class DeadlineExceededError(CollflowError, TimeoutError):
    """A wait (collective, queue) ran past its timeout."""


class AbortedError(CollflowError):
    """The operation was aborted (e.g. a peer rank failed)."""


class OutOfRangeError(CollflowError):
    """Iteration past the end (e.g. dequeue from a closed, empty queue)."""


class ResourceExhaustedError(CollflowError, MemoryError):
    """Out of memory or another resource."""


class UnavailableError(CollflowError):
    """A needed service (backend, device, peer) is not available."""


class PeerFailedError(AbortedError):
    """MPI reported a rank of the communicator as failed (ULFM's MPI_ERR_PROC_FAILED) or the
    communicator as revoked by a rank that saw one: the elastic mode shrinks the world."""


class DataLossError(CollflowError):
    """A checkpoint file is truncated, corrupt or not a collflow checkpoint (TensorFlow's name)."""


class UnsafeCheckpointError(DataLossError):
    """A checkpoint file or index entry breaks what collflow reads (train/checkpoint_policy.py):
    links, storage outside the file, non-numeric types, sizes the file cannot hold, no
    checksums, a name outside the directory.  A DataLossError, so restores fall back past it."""
