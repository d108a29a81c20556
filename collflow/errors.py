"""collflow's error types (TensorFlow 1.x names), all subclasses of CollflowError.

Run-time errors carry the op that failed, so messages can say what op, of which type,
created where in user code.
"""
from __future__ import annotations

from typing import Any

__all__ = [
    "CollflowError", "InvalidArgumentError", "NotFoundError", "FailedPreconditionError",
    "CancelledError", "UnimplementedError", "InternalError", "DeadlineExceededError",
    "AbortedError", "OutOfRangeError", "ResourceExhaustedError", "UnavailableError", "PeerFailedError",
    "DataLossError", "UnsafeCheckpointError", "UnknownError", "AlreadyExistsError", "PermissionDeniedError",
    "UnauthenticatedError", "OpError",
]
# (the codes and the two lookups below are tf.errors' too, reached as collflow.errors.OK, ...;
# __all__ is the error classes, which collflow also exports at the top level as TF1 does)

# TensorFlow's error codes (tf.errors.OK, ...; the canonical gRPC codes), one per class below
OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, ALREADY_EXISTS = 0, 1, 2, 3, 4, 5, 6
PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE = 7, 8, 9, 10, 11
UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS, UNAUTHENTICATED = 12, 13, 14, 15, 16


class CollflowError(Exception):
    """Base of every error collflow raises on purpose.

    `op` is the Operation involved (or None); `message` is the bare message without the
    op's location, which `str()` appends.
    """

    error_code = UNKNOWN

    def __init__(self, *args: Any, **kwargs: Any):
        # collflow's (message, op=None), or TF1's OpError(node_def, op, message[, error_code]),
        # which TF1 programs raise themselves (e.g. OutOfRangeError(None, None, "done"))
        tf_form = len(args) >= 3 or "node_def" in kwargs
        names = ("node_def", "op", "message", "error_code") if tf_form else ("message", "op")
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__} takes at most {len(names)} arguments ({', '.join(names)})")
        given = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names or k in given:
                raise TypeError(f"{type(self).__name__}() got an unexpected or repeated argument {k!r}")
            given[k] = v
        message = given.get("message", "")
        self.message = "" if message is None else str(message)
        self.op = given.get("op")
        super().__init__(self._format())

    @property
    def node_def(self) -> Any:
        """TF1's OpError.node_def: here the Operation itself (or None)."""
        return self.op

    def _format(self) -> str:
        if self.op is None:
            return self.message
        where = self.op.creation_site()
        return f"{self.message}\n  [op {self.op.name!r} of type {self.op.type}, created at {where}]"


class InvalidArgumentError(CollflowError, ValueError):
    """A bad argument: wrong shape, dtype or value, fed or computed."""
    error_code = INVALID_ARGUMENT


class NotFoundError(CollflowError, KeyError):
    """A name, kernel or file that does not exist."""
    error_code = NOT_FOUND

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.args[0] if self.args else ""


class FailedPreconditionError(CollflowError):
    """The system is not in a state to run this (e.g. an uninitialized variable)."""
    error_code = FAILED_PRECONDITION


class CancelledError(CollflowError):
    """The run was cancelled between ops."""
    error_code = CANCELLED


class UnimplementedError(CollflowError, NotImplementedError):
    """No kernel or gradient for this op or device."""
    error_code = UNIMPLEMENTED


class InternalError(CollflowError):
    """A kernel failed unexpectedly at run time."""
    error_code = INTERNAL


class DeadlineExceededError(CollflowError, TimeoutError):
    """A wait (collective, queue) ran past its timeout."""
    error_code = DEADLINE_EXCEEDED


class AbortedError(CollflowError):
    """The operation was aborted (e.g. a peer rank failed)."""
    error_code = ABORTED


class OutOfRangeError(CollflowError):
    """Iteration past the end (e.g. dequeue from a closed, empty queue)."""
    error_code = OUT_OF_RANGE


class ResourceExhaustedError(CollflowError, MemoryError):
    """Out of memory or another resource."""
    error_code = RESOURCE_EXHAUSTED


class UnavailableError(CollflowError):
    """A needed service (backend, device, peer) is not available."""
    error_code = UNAVAILABLE


class PeerFailedError(AbortedError):
    """MPI reported a rank of the communicator as failed (ULFM's MPI_ERR_PROC_FAILED) or the
    communicator as revoked by a rank that saw one: the elastic mode shrinks the world."""


class DataLossError(CollflowError):
    """Stored data is truncated or corrupt: a checkpoint file (or not a collflow checkpoint), a
    TFRecord file (TensorFlow's name)."""
    error_code = DATA_LOSS


class UnsafeCheckpointError(DataLossError):
    """A checkpoint file or index entry breaks what collflow reads (train/checkpoint_policy.py):
    links, storage outside the file, non-numeric types, sizes the file cannot hold, no
    checksums, a name outside the directory.  A DataLossError, so restores fall back past it."""


class UnknownError(CollflowError):
    """An error of no other kind (TF1's tf.errors.UnknownError)."""
    error_code = UNKNOWN


class AlreadyExistsError(CollflowError):
    """What was to be created exists already."""
    error_code = ALREADY_EXISTS


class PermissionDeniedError(CollflowError, PermissionError):
    """Not allowed (a file, a directory)."""
    error_code = PERMISSION_DENIED


class UnauthenticatedError(CollflowError):
    """No valid credentials (TF1 name; collflow raises it for nothing)."""
    error_code = UNAUTHENTICATED


OpError = CollflowError  # TF1's base class of these errors


def _by_code() -> dict:
    out = {}
    for cls in (CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError, NotFoundError,
                AlreadyExistsError, PermissionDeniedError, ResourceExhaustedError, FailedPreconditionError,
                AbortedError, OutOfRangeError, UnimplementedError, InternalError, UnavailableError, DataLossError,
                UnauthenticatedError):
        out[cls.error_code] = cls
    return out


def exception_type_from_error_code(error_code: int) -> type:
    """The error class of a TensorFlow error code (tf.errors.exception_type_from_error_code)."""
    try:
        return _by_code()[int(error_code)]
    except KeyError:
        raise KeyError(f"no error class for error code {error_code!r}") from None


def error_code_from_exception_type(cls: type) -> int:
    """The TensorFlow error code of an error class (its nearest base with a code)."""
    for c in getattr(cls, "__mro__", ()):
        code = c.__dict__.get("error_code")
        if isinstance(code, int):
            return code
    raise KeyError(f"{cls!r} is not a collflow error class")

