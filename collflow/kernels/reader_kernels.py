"""Kernels of the readers and byte decoders of graph/ops/reader_ops.py, on the host.

A reader's state (`ReaderState`) lives in the Session's resource container under the
reader's shared_name, so each Session reads on its own.  The state follows TensorFlow's
ReaderBase: the current work item (a file name) and its open records, and the counters
work_started / work_finished / num_records_produced.  A read dequeues the next work item
only when no work is in progress; a file that cannot be opened is never started (the error
goes to the caller, the next read takes the next file).  Each file format is a *source*:
`source(work) -> (records, closer)`, opening the file at once (so a missing file fails
there) and yielding (key, value, last) lazily; `last` marks a record that ends its work
item (WholeFileReader, IdentityReader), which TensorFlow counts as finished at once.

Strings are collflow's: Python str with undecodable bytes kept as surrogates, so a record's
bytes are `value.encode("utf-8", "surrogateescape")` again.
"""
from __future__ import annotations

import threading
import time
import zlib
from typing import Any, Callable, Iterator, List, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import CancelledError, DataLossError, DeadlineExceededError, InvalidArgumentError, UnimplementedError
from ..platform.tfrecord import open_records, read_records
from ..platform.varint import encode_varint
from .queue_kernels import _POLL_S, FIFOQueueResource, _timeout_ms, _Waiter
from .registry import KernelContext, current_cancellation_token, register_kernel

__all__ = ["ReaderState"]

# (key, value, whether this record ends its work item)
Record = Tuple[str, str, bool]
Source = Callable[[str], Tuple[Iterator[Record], Callable[[], None]]]


_bytes, _text = _dt.string_bytes, _dt.bytes_text


# -- the state -------------------------------------------------------------------------------


class ReaderState:
    """One reader's state in one Session; `lock` serializes its reads (TF's reader mutex)."""

    def __init__(self, kind: str, name: str, signature: Tuple[Any, ...], source: Source, serializable: bool):
        self.kind = kind
        self.name = name
        self.label = f"{kind} {name!r}"
        self.signature = signature
        self.serializable = serializable
        self._source = source
        self.lock = threading.Lock()
        self.work = ""               # the current work item (or the last one, once finished)
        self.work_started = 0
        self.work_finished = 0
        self.produced = 0
        self._records: Optional[Iterator[Record]] = None
        self._closer: Optional[Callable[[], None]] = None

    def in_progress(self) -> bool:
        return self.work_finished < self.work_started

    def __del__(self) -> None:
        # the Session is gone (its container dropped): close the open file, as TF's reader does
        try:
            self._drop_work()
        except Exception:
            pass

    def _drop_work(self) -> None:
        """Closes the current work item's file (if open)."""
        records, closer = self._records, self._closer
        self._records = self._closer = None
        if records is not None and hasattr(records, "close"):
            records.close()
        if closer is not None:
            closer()

    def _finish_work(self) -> None:
        self._drop_work()
        self.work_finished = self.work_started

    def read(self, q: FIFOQueueResource, n: int, w: _Waiter) -> List[Tuple[str, str]]:
        """Between 1 and n records of one work item (TF's ReaderBase::ReadUpTo); dequeues work
        items as needed, so it raises OutOfRangeError once the queue is closed and empty."""
        out: List[Tuple[str, str]] = []
        if n <= 0:
            return out
        while True:
            if not self.in_progress():
                (arrays, start, _), = q.take(1, False, w)
                work = str(arrays[0][start])
                self.work = work
                self._records, self._closer = self._source(work)  # an error here: never started
                self.work_started += 1
            at_end = False
            try:
                while len(out) < n:
                    rec = next(self._records, None)  # type: ignore[arg-type]
                    if rec is None:
                        at_end = True
                        break
                    out.append((rec[0], rec[1]))
                    self.produced += 1
                    if rec[2]:
                        at_end = True
                        break
            except BaseException:
                # A damaged file ends its work item (TF would fail on it again at every read):
                # the error goes to the caller, the next read goes on with the next file.
                self._finish_work()
                raise
            if at_end:
                self._finish_work()
            if out:
                return out

    def reset(self) -> None:
        self._drop_work()
        self.work = ""
        self.work_started = self.work_finished = self.produced = 0

    # TF's ReaderBaseState (proto3): work_started = 1, work_finished = 2,
    # num_records_produced = 3 (int64), current_work = 4 (bytes)
    def serialize(self) -> bytes:
        out = bytearray()
        for field, v in ((1, self.work_started), (2, self.work_finished), (3, self.produced)):
            if v:
                out += _varint(field << 3) + _varint(v & 0xFFFFFFFFFFFFFFFF)
        work = _bytes(self.work)
        if work:
            out += _varint(4 << 3 | 2) + _varint(len(work)) + work
        return bytes(out)

    def restore(self, state: bytes, op: Any) -> None:
        """Restores a serialized state; a state that is not valid resets the reader (as TF's)."""
        try:
            self._restore(state, op)
        except InvalidArgumentError:
            self.reset()
            raise

    def _restore(self, state: bytes, op: Any) -> None:
        try:
            fields = _parse_proto(state)
        except ValueError:
            raise InvalidArgumentError(f"Could not parse state for {self.label}: {state!r}", op) from None
        started, finished, produced = (_int64(fields.get(k, 0)) for k in (1, 2, 3))
        work = fields.get(4, b"")
        if not isinstance(work, bytes) or any(isinstance(fields.get(k, 0), bytes) for k in (1, 2, 3)):
            raise InvalidArgumentError(f"Could not parse state for {self.label}: {state!r}", op)
        if min(started, finished, produced) < 0:
            raise InvalidArgumentError(f"Unexpected negative value when restoring in {self.label}: work_started "
                                       f"{started}, work_finished {finished}, num_records_produced {produced}", op)
        if started > finished:
            raise InvalidArgumentError(f"Inconsistent work started vs. finished when restoring in {self.label}: "
                                       f"work_started {started} > work_finished {finished}", op)
        self._drop_work()
        self.work_started, self.work_finished, self.produced = started, finished, produced
        self.work = _text(work)


_varint = encode_varint


def _int64(v: Any) -> int:
    v = int(v) & 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v >> 63 else v


def _parse_proto(data: bytes) -> dict:
    """field number -> last value (int for varints, bytes for length-delimited); ValueError
    on malformed data.  Unknown fields of the other wire types are skipped, as protobuf does."""
    out: dict = {}
    i, n = 0, len(data)

    def varint() -> int:
        nonlocal i
        v = shift = 0
        while True:
            if i >= n or shift > 63:
                raise ValueError("bad varint")
            b = data[i]
            i += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v
    while i < n:
        key = varint()
        field, wire = key >> 3, key & 7
        if field == 0:
            raise ValueError("field 0")
        if wire == 0:
            out[field] = varint()
        elif wire == 2:
            ln = varint()
            if i + ln > n:
                raise ValueError("truncated")
            out[field] = data[i:i + ln]
            i += ln
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
            if i > n:
                raise ValueError("truncated")
        else:
            raise ValueError(f"wire type {wire}")
    return out


# -- the sources (file formats) ---------------------------------------------------------------


def _open(path: str, encoding: str, kind: str) -> Any:
    """The file (decompressed for "ZLIB"/"GZIP"); TF's errors (NotFoundError naming it, ...)."""
    return open_records(path, encoding or None, kind)


def _read_exact(f: Any, n: int) -> bytes:
    """n bytes, fewer only at the end of the file."""
    if n <= 0:
        return b""
    data = f.read(n)
    if len(data) == n or not data:
        return data
    parts = [data]
    got = len(data)
    while got < n:
        more = f.read(n - got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def _identity_source(work: str) -> Tuple[Iterator[Record], Callable[[], None]]:
    return iter([(work, work, True)]), lambda: None


def _whole_file_source(work: str) -> Tuple[Iterator[Record], Callable[[], None]]:
    f = _open(work, "", "WholeFileReader")

    def records() -> Iterator[Record]:
        data = f.read()
        f.close()
        yield work, _text(data), True
    return records(), f.close


def _text_line_source(skip: int) -> Source:
    def source(work: str) -> Tuple[Iterator[Record], Callable[[], None]]:
        f = _open(work, "", "TextLineReader")
        line_no = 0
        for _ in range(skip):
            if not f.readline():
                break  # a file shorter than its header has no lines (TF)
            line_no += 1

        def records() -> Iterator[Record]:
            n = line_no
            for line in f:  # lines end at "\n"; TF drops it and a "\r" before it
                n += 1
                if line.endswith(b"\n"):
                    line = line[:-1]
                if line.endswith(b"\r"):
                    line = line[:-1]
                yield f"{work}:{n}", _text(line), False
        return records(), f.close
    return source


def _fixed_length_source(record_bytes: int, header_bytes: int, footer_bytes: int, hop_bytes: int,
                         encoding: str) -> Source:
    step = hop_bytes or record_bytes
    need = record_bytes + footer_bytes

    def source(work: str) -> Tuple[Iterator[Record], Callable[[], None]]:
        f = _open(work, encoding, "FixedLengthRecordReader")

        def records() -> Iterator[Record]:
            # record k starts at header + k * step and needs record_bytes + footer_bytes from
            # there: a trailing part too short for one is dropped (TF)
            if len(_read_exact(f, header_bytes)) < header_bytes:
                return  # shorter than the header: no records (TF raises OutOfRangeError here)
            buf = _read_exact(f, need)
            k = 0
            while len(buf) == need:
                yield f"{work}:{k}", _text(buf[:record_bytes]), False
                k += 1
                if step < need:
                    buf = buf[step:] + _read_exact(f, step)
                else:
                    if len(_read_exact(f, step - need)) < step - need:
                        return
                    buf = _read_exact(f, need)
        return records(), f.close
    return source


def _tfrecord_source(compression: str) -> Source:
    def source(work: str) -> Tuple[Iterator[Record], Callable[[], None]]:
        f = _open(work, compression, "TFRecordReader")

        def records() -> Iterator[Record]:
            offset = 0  # the key's offset counts bytes of the uncompressed stream (TF)
            for data in read_records(f, work, strict=True):
                yield f"{work}:{offset}", _text(data), False
                offset += 16 + len(data)
        return records(), f.close
    return source


# -- kernels ------------------------------------------------------------------------------


def _reader_kernel(kind: str, make_source: Callable[[dict], Source], signature: Callable[[dict], tuple],
                   serializable: bool) -> Callable[[Any, KernelContext], Any]:
    def factory(op: Any, ctx: KernelContext) -> Any:
        a = op.attrs
        sig = (kind,) + signature(a)
        st = ctx.resources.get_or_create(
            "reader", "reader:" + a["shared_name"],
            lambda: ReaderState(kind, a["shared_name"], sig, make_source(a), serializable))
        if st.signature != sig:
            raise InvalidArgumentError(f"shared reader {a['shared_name']!r} exists as {st.signature}; "
                                       f"this op asks for {sig}", op)
        return lambda: st
    return factory


register_kernel("IdentityReaderV2")(_reader_kernel("IdentityReader", lambda a: _identity_source, lambda a: (), True))
register_kernel("WholeFileReaderV2")(_reader_kernel("WholeFileReader", lambda a: _whole_file_source,
                                                    lambda a: (), True))
register_kernel("TextLineReaderV2")(_reader_kernel(
    "TextLineReader", lambda a: _text_line_source(a["skip_header_lines"]), lambda a: (a["skip_header_lines"],),
    False))
_FIXED = ("record_bytes", "header_bytes", "footer_bytes", "hop_bytes", "encoding")
register_kernel("FixedLengthRecordReaderV2")(_reader_kernel(
    "FixedLengthRecordReader", lambda a: _fixed_length_source(*(a[k] for k in _FIXED)),
    lambda a: tuple(a[k] for k in _FIXED), False))
register_kernel("TFRecordReaderV2")(_reader_kernel(
    "TFRecordReader", lambda a: _tfrecord_source(a["compression_type"]), lambda a: (a["compression_type"],), False))


def _state(r: Any, op: Any) -> ReaderState:
    if not isinstance(r, ReaderState):
        raise InvalidArgumentError(f"{op.inputs[0].name} is not a reader handle", op)
    return r


class _Locked:
    """The reader's lock, taken as a blocked queue op waits: waking every _POLL_S to see
    whether the run was cancelled, the session closed or operation_timeout_in_ms passed."""

    __slots__ = ("st", "op", "session", "timeout_ms")

    def __init__(self, st: ReaderState, op: Any, session: Any, timeout_ms: Optional[float]):
        self.st, self.op, self.session, self.timeout_ms = st, op, session, timeout_ms

    def __enter__(self) -> ReaderState:
        st = self.st
        if st.lock.acquire(blocking=False):
            return st
        deadline = time.monotonic() + self.timeout_ms / 1000.0 if self.timeout_ms else None
        tok = current_cancellation_token()
        while not st.lock.acquire(timeout=_POLL_S):
            if tok is not None and tok.c:
                raise CancelledError(f"a read of {st.label} was cancelled while waiting for another read", self.op)
            if self.session is not None and getattr(self.session, "_closed", False):
                raise CancelledError(f"a read of {st.label} was cancelled: session closed", self.op)
            if deadline is not None and time.monotonic() > deadline:
                raise DeadlineExceededError(f"a read of {st.label} timed out after {self.timeout_ms:g} ms waiting "
                                            "for another read of it", self.op)
        return st

    def __exit__(self, *exc: Any) -> None:
        self.st.lock.release()


def _read_kernel(op: Any, ctx: KernelContext, many: bool) -> Any:
    session, tmo = ctx.session, _timeout_ms(ctx)

    def strings(xs: List[str]) -> np.ndarray:
        out = np.empty(len(xs), dtype=object)
        out[:] = xs
        return out

    def run(r: Any, q: Any, n: Any = None) -> Any:
        st = _state(r, op)
        if many:
            n = int(n)
            if n < 0:
                raise InvalidArgumentError(f"read_up_to on {st.label}: num_records must be >= 0, got {n}", op)
        with _Locked(st, op, session, tmo):
            recs = st.read(q, n if many else 1, _Waiter(q, op, f"read of {st.label}", session, tmo))
        if many:
            return strings([k for k, _ in recs]), strings([v for _, v in recs])
        (key, value), = recs
        return np.array(key, dtype=object), np.array(value, dtype=object)
    return run


register_kernel("ReaderReadV2")(lambda op, ctx: _read_kernel(op, ctx, False))
register_kernel("ReaderReadUpToV2")(lambda op, ctx: _read_kernel(op, ctx, True))


@register_kernel("ReaderNumRecordsProducedV2")
def _num_records(op: Any, ctx: KernelContext) -> Any:
    return lambda r: np.asarray(_state(r, op).produced, dtype=np.int64)


@register_kernel("ReaderNumWorkUnitsCompletedV2")
def _num_work_units(op: Any, ctx: KernelContext) -> Any:
    return lambda r: np.asarray(_state(r, op).work_finished, dtype=np.int64)


def _unsupported(st: ReaderState, what: str, op: Any) -> UnimplementedError:
    return UnimplementedError(f"{what} is not supported by {st.label} (supports_serialize is False; as in "
                              "TensorFlow, only IdentityReader and WholeFileReader support it)", op)


@register_kernel("ReaderSerializeStateV2")
def _serialize(op: Any, ctx: KernelContext) -> Any:
    def run(r: Any) -> Any:
        st = _state(r, op)
        if not st.serializable:
            raise _unsupported(st, "serialize_state", op)
        with st.lock:
            return np.array(_text(st.serialize()), dtype=object)
    return run


@register_kernel("ReaderRestoreStateV2")
def _restore(op: Any, ctx: KernelContext) -> Any:
    def run(r: Any, state: Any) -> None:
        st = _state(r, op)
        if not st.serializable:
            raise _unsupported(st, "restore_state", op)
        with st.lock:
            st.restore(_bytes(str(np.asarray(state, dtype=object).item())), op)
    return run


@register_kernel("ReaderResetV2")
def _reset(op: Any, ctx: KernelContext) -> Any:
    def run(r: Any) -> None:
        st = _state(r, op)
        with st.lock:
            st.reset()
    return run


# -- decoders -------------------------------------------------------------------------------

# TensorFlow's DataTypeString, which its DecodeRaw error names
_TF_TYPE_NAMES = {"float16": "half", "float32": "float", "float64": "double"}


@register_kernel("DecodeRaw")
def _decode_raw(op: Any, ctx: KernelContext) -> Any:
    dt = op.attrs["out_type"]
    native = np.dtype(dt.np)
    is_bool = native == np.bool_
    wire = np.dtype(np.uint8) if is_bool else native.newbyteorder("<" if op.attrs["little_endian"] else ">")
    size = native.itemsize

    def run(x: Any) -> Any:
        a = np.asarray(x, dtype=object)
        flat = a.reshape(-1)
        data = [_bytes(s) for s in flat]
        width = len(data[0]) if data else 0
        for i, b in enumerate(data):
            if len(b) != width:
                raise InvalidArgumentError(f"DecodeRaw requires input strings to all be the same size, but element "
                                           f"{i} has size {width} != {len(b)}", op)
        if width == 0:
            return np.zeros(a.shape + (0,), dtype=native)
        if width % size:
            raise InvalidArgumentError(f"Input to DecodeRaw has length {width} that is not a multiple of {size}, "
                                       f"the size of {_TF_TYPE_NAMES.get(dt.name, dt.name)}", op)
        out = np.frombuffer(b"".join(data), dtype=wire).reshape(a.shape + (width // size,))
        # a native, writable array of its own (frombuffer's is read-only and maybe byte-swapped)
        return out != 0 if is_bool else out.astype(native)
    return run


def _inflate(data: bytes, gzip: bool) -> bytes:
    """The decompressed data; a truncated stream gives what it holds (as TensorFlow);
    concatenated GZIP members are read one after another."""
    out = []
    while True:
        d = zlib.decompressobj(31 if gzip else 15)
        out.append(d.decompress(data))
        out.append(d.flush())
        data = d.unused_data
        if not (gzip and d.eof and data):
            return b"".join(out)


@register_kernel("DecodeCompressed")
def _decode_compressed(op: Any, ctx: KernelContext) -> Any:
    ct = op.attrs["compression_type"]

    def run(x: Any) -> Any:
        a = np.asarray(x, dtype=object)
        if not ct:
            return a.copy()
        out = np.empty(a.shape, dtype=object)
        fi, fo = a.reshape(-1), out.reshape(-1)
        for i in range(fi.size):
            try:
                fo[i] = _text(_inflate(_bytes(fi[i]), ct == "GZIP"))
            except zlib.error as e:
                raise DataLossError(f"decode_compressed: element {i} is not valid {ct} data ({e})", op) from None
        return out
    return run
