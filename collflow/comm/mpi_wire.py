"""What MPICommunicator's ranks tell each other besides the collectives themselves, as bytes:
arrival records (a rank's collective #k: kind, dtype, shape, reduction or root, name, and
whether it waits at once) and failure notices (timeout, mismatch, other, a rank that left).
"""
from __future__ import annotations

import hashlib
from typing import Any, Optional, Tuple

import numpy as np

from ..errors import AbortedError, CollflowError, DeadlineExceededError, InvalidArgumentError, PeerFailedError
from .base import KINDS, Signature, SUPPORTED_DTYPES

__all__: list = []

_TAG_ARRIVE, _TAG_FAIL = 17, 18
_REC_INTS = 32                      # an arrival record: 32 int64 = 256 bytes
_REC_NAME_OFF, _REC_NAME_LEN = 13 * 8, 19 * 8
_REC_MODE = 12                      # 1: the rank waits at once (a vote for the blocking call)
_FAIL_BYTES = 1024
_FAIL_TIMEOUT, _FAIL_MISMATCH, _FAIL_OTHER = 1, 2, 3
_FAIL_LEFT = 4                      # not a failure: a rank left (collflow.comm.departure)
_MAX_DIMS = 6


# -- wire formats ---------------------------------------------------------------------------
def _name_bytes(name: str) -> bytes:
    b = name.encode("utf-8")
    if len(b) <= _REC_NAME_LEN:
        return b
    # long names: a prefix plus a digest of the whole, so distinct names stay distinct
    digest = hashlib.blake2b(b, digest_size=8).hexdigest().encode()
    return b[:_REC_NAME_LEN - 17] + b"~" + digest


def _encode_record(buf: np.ndarray, seq: int, sig: Signature) -> None:
    buf[:] = 0
    buf[0] = seq
    buf[1] = KINDS.index(sig.kind)
    buf[2] = SUPPORTED_DTYPES.index(sig.dtype) if sig.dtype else -1
    shape = sig.shape
    buf[3] = len(shape)
    dims = list(shape)
    if len(dims) > _MAX_DIMS:  # the tail of a very high-rank shape travels as a digest
        tail = hashlib.blake2b(repr(dims[_MAX_DIMS - 1:]).encode(), digest_size=7).digest()
        dims = dims[:_MAX_DIMS - 1] + [int.from_bytes(tail, "little")]
    buf[4:4 + len(dims)] = dims
    buf[10] = sig.aux
    nb = _name_bytes(sig.name)
    buf[11] = len(nb)
    raw = buf.view(np.uint8)
    raw[_REC_NAME_OFF:_REC_NAME_OFF + len(nb)] = np.frombuffer(nb, dtype=np.uint8)


def _decode_record(buf: np.ndarray) -> Tuple[int, Signature]:
    seq, kind, dt, ndim = (int(v) for v in buf[:4])
    dims = tuple(int(v) for v in buf[4:4 + min(ndim, _MAX_DIMS)])
    nlen = int(buf[11])
    name = bytes(buf.view(np.uint8)[_REC_NAME_OFF:_REC_NAME_OFF + nlen]).decode("utf-8", "replace")
    return seq, Signature(KINDS[kind], name, SUPPORTED_DTYPES[dt] if dt >= 0 else "", dims, int(buf[10]))


def _body_signature(body: bytes) -> Signature:
    """Decodes a record body (a record without its sequence number)."""
    buf = np.zeros(_REC_INTS, dtype=np.int64)
    buf.view(np.uint8)[8:] = np.frombuffer(body, dtype=np.uint8)
    return _decode_record(buf)[1]


def _bodies_conflict(a: bytes, b: bytes) -> bool:
    # equal bytes is the common case; otherwise decide on the decoded signatures (variable
    # first dimensions of allgatherv/alltoallv may differ legitimately)
    return a != b and _body_signature(a).conflicts(_body_signature(b))


def _encode_fail(code: int, message: str) -> np.ndarray:
    buf = np.zeros(_FAIL_BYTES, dtype=np.uint8)
    b = message.encode("utf-8")[:_FAIL_BYTES - 16]
    buf[:16].view(np.int64)[:] = (code, len(b))
    buf[16:16 + len(b)] = np.frombuffer(b, dtype=np.uint8)
    return buf


def _decode_fail(buf: np.ndarray) -> Tuple[int, str]:
    code, n = (int(v) for v in buf[:16].view(np.int64))
    return code, bytes(buf[16:16 + n]).decode("utf-8", "replace")


def _fail_error(code: int, message: str) -> CollflowError:
    cls = {_FAIL_TIMEOUT: DeadlineExceededError, _FAIL_MISMATCH: InvalidArgumentError}.get(code, AbortedError)
    return cls(message)


def _fail_code(err: BaseException) -> int:
    if isinstance(err, DeadlineExceededError):
        return _FAIL_TIMEOUT
    if isinstance(err, InvalidArgumentError):
        return _FAIL_MISMATCH
    return _FAIL_OTHER


def _peer_failure(e: BaseException, what: str) -> Optional[CollflowError]:
    """PeerFailedError when `e` is MPI's report of a failed process or a revoked communicator
    (ULFM's error classes), else None."""
    cls = getattr(e, "Get_error_class", None)
    if cls is None:
        return None
    from mpi4py import MPI  # the exception came from it: imported
    code = cls()
    if code in tuple(getattr(MPI, n, -1) for n in ("ERR_PROC_FAILED", "ERR_PROC_FAILED_PENDING", "ERR_REVOKED")):
        return PeerFailedError(f"{what}: MPI reports {e.Get_error_string()} (a rank of the job died)")
    return None


def _sent(req: Any) -> bool:
    """Whether a notice's send is over: completed, or failed (a dead or revoked peer)."""
    try:
        return bool(req.Test())
    except Exception:
        return True
