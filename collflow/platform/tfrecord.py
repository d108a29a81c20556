"""TFRecord files (TensorFlow 1.x's tf.python_io / tf.io): `TFRecordWriter`,
`tf_record_iterator`, `TFRecordOptions`, `TFRecordCompressionType`; also the reader of
TensorBoard's event files (cf.train.summary_iterator, summary/writer.py).

    with tf.python_io.TFRecordWriter("train.tfrecord") as w:
        w.write(example.SerializeToString())
    for record in tf.python_io.tf_record_iterator("train.tfrecord"):
        ...

A record is: length (uint64, little-endian), masked CRC-32C of those 8 bytes (uint32), the
data, masked CRC-32C of the data (uint32); masking rotates the CRC right by 15 bits and adds
0xa282ead8 (TensorFlow's crc32c::Mask).  The CRCs are computed for blocks of records at once
(crc32c.py), when writing and when reading.  A GZIP file is a gzip member (or several) of the
framed records, a ZLIB file a zlib stream of them, as TensorFlow writes and reads them.
"""
from __future__ import annotations

import io
import struct
import zlib
from typing import Any, BinaryIO, Iterator, List, Optional

import numpy as np

from ..errors import DataLossError, FailedPreconditionError, InvalidArgumentError
from . import gfile as _gfile
from .crc32c import crc32c, crc32c_u64le, mask, masked_crc32c, masked_crc32c_many

__all__ = ["crc32c", "masked_crc32c", "read_records", "open_records", "tf_record_iterator", "TFRecordWriter",
           "TFRecordOptions", "TFRecordCompressionType"]

_BLOCK = 1 << 20                 # bytes read (and records buffered by the writer) at a time
_HEADER = struct.Struct("<QI")   # length, masked CRC of the length
_FOOTER = struct.Struct("<I")    # masked CRC of the data


# -- reading --------------------------------------------------------------------------------------------

def _stored_crc_mismatch(datas: List[bytes], lens: List[int], hstored: List[int],
                         dstored: List[int]) -> Optional[tuple]:
    """(index, is_header) of the first record of the block whose header or data CRC is wrong."""
    hbad = mask(crc32c_u64le(lens)) != np.array(hstored, dtype=np.uint32)
    dbad = masked_crc32c_many(datas) != np.array(dstored, dtype=np.uint32)
    bad = hbad | dbad
    if not bad.any():
        return None
    i = int(np.argmax(bad))
    return i, bool(hbad[i])


def read_records(f: BinaryIO, path: str = "<stream>", *, strict: bool = False) -> Iterator[bytes]:
    """The data of each record of the binary file object `f`, read sequentially from its
    current position in blocks whose CRCs are checked together.  A wrong CRC is a
    DataLossError naming `path` and the byte offset (as TensorFlow: "corrupted record at N").
    A partial header at the end ends the iteration; so does a partial record, unless `strict`
    (then DataLossError "truncated record at N", as tf_record_iterator): a writer may still be
    appending.  f is read ahead while iterating; when the iteration ends or is closed, a
    seekable f is left just after the last record yielded, so a later call resumes there."""
    try:
        base: Optional[int] = f.tell()
    except (OSError, ValueError, AttributeError):
        base = None  # a stream: offsets count from where reading started
    at = base or 0        # file offset of buf[0]
    consumed = at         # file offset after the last record yielded
    buf = b""
    pos = 0               # the first record of buf not yet yielded
    try:
        while True:
            n = len(buf)
            offs: List[int] = []
            lens: List[int] = []
            datas: List[bytes] = []
            hstored: List[int] = []
            dstored: List[int] = []
            p = pos
            while p + 12 <= n:  # the complete records in buf
                length, hcrc = _HEADER.unpack_from(buf, p)
                end = p + 16 + length
                if end > n:
                    break
                offs.append(p)
                lens.append(length)
                datas.append(buf[p + 12:end - 4])
                hstored.append(hcrc)
                dstored.append(_FOOTER.unpack_from(buf, end - 4)[0])
                p = end
            bad = _stored_crc_mismatch(datas, lens, hstored, dstored) if offs else None
            for i in range(len(offs) if bad is None else bad[0]):
                consumed = at + offs[i] + 16 + lens[i]
                yield datas[i]
            if bad is not None:
                off = at + offs[bad[0]]
                if bad[1]:
                    raise DataLossError(f"{path}: corrupted record at {off} (length CRC mismatch)")
                raise DataLossError(f"{path}: corrupted record at {off + 12} (data CRC mismatch in the record "
                                    f"at byte {off})")
            pos = p
            rem = n - pos
            if rem >= 12:  # a header whose record is incomplete: trust its length only if its CRC holds
                length, hcrc = _HEADER.unpack_from(buf, pos)
                if masked_crc32c(buf[pos:pos + 8]) != hcrc:
                    raise DataLossError(f"{path}: corrupted record at {at + pos} (length CRC mismatch)")
                need = 16 + length - rem
            else:
                need = 12 - rem
            chunk = f.read(max(_BLOCK, need))
            if not chunk:
                if rem >= 12 and strict:
                    raise DataLossError(f"{path}: truncated record at {at + pos} (the record needs {need} more "
                                        f"bytes than the file has)")
                return
            buf = buf[pos:] + chunk
            at += pos
            pos = 0
    finally:
        if base is not None:
            try:
                f.seek(consumed)
            except (OSError, ValueError):
                pass


class _Inflate(io.RawIOBase):
    """The decompressed bytes of a ZLIB stream or of GZIP members (one after another, as
    TensorFlow reads concatenated gzip files), decompressed as they are read."""

    def __init__(self, raw: BinaryIO, kind: str, path: str):
        self._raw, self._kind, self._path = raw, kind, path
        self._wbits = 31 if kind == "GZIP" else 15
        self._d = zlib.decompressobj(self._wbits)
        self._started = False

    def readable(self) -> bool:
        return True

    def _next(self, n: int) -> bytes:
        while True:
            if self._d.eof:
                data = self._d.unused_data or self._raw.read(_BLOCK)
                if not data:
                    return b""
                self._d = zlib.decompressobj(self._wbits)  # another member follows
            elif self._d.unconsumed_tail:
                data = self._d.unconsumed_tail
            else:
                data = self._raw.read(_BLOCK)
                if not data:
                    if not self._started:
                        return b""  # an empty file holds no records
                    raise DataLossError(f"{self._path}: the {self._kind} stream is truncated")
            self._started = True
            try:
                out = self._d.decompress(data, n)  # bounded: a small file may inflate to a lot
            except zlib.error as e:
                raise DataLossError(f"{self._path}: corrupt {self._kind} data: {e}") from None
            if out:
                return out

    def readinto(self, b: Any) -> int:
        out = self._next(len(b))
        b[:len(out)] = out
        return len(out)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


def open_records(path: Any, compression_type: Any = None, what: str = "tf_record_iterator") -> BinaryIO:
    """`path` opened for reading its framed records: the decompressed bytes for GZIP/ZLIB
    (compression_type as TFRecordOptions.get_compression_type_string takes it).  A missing file
    is NotFoundError, a directory FailedPreconditionError (TensorFlow's errors)."""
    kind = TFRecordOptions.get_compression_type_string(compression_type)
    p = _gfile._path(path)
    try:
        raw = open(p, "rb")
    except OSError as e:
        _gfile._raise(e, f"{what}: cannot open", p)
    if not kind:
        return raw
    return io.BufferedReader(_Inflate(raw, kind, p), buffer_size=_BLOCK)  # type: ignore[return-value]


def tf_record_iterator(path: Any, options: Any = None) -> Iterator[bytes]:
    """The records of a TFRecord file, as bytes (tf.python_io.tf_record_iterator).  options: a
    TFRecordOptions, a TFRecordCompressionType or "GZIP"/"ZLIB"/"".  The file is opened now
    (a missing one is NotFoundError); a corrupt record is DataLossError, a truncated last
    record too (a partial header at the end is the end, as TensorFlow)."""
    f = open_records(path, options)

    def records() -> Iterator[bytes]:
        with f:
            yield from read_records(f, _gfile._path(path), strict=True)
    return records()


# -- options ------------------------------------------------------------------------------------------

class TFRecordCompressionType:
    """The compression of a TFRecord file (tf.python_io.TFRecordCompressionType)."""
    NONE = 0
    ZLIB = 1
    GZIP = 2


class TFRecordOptions:
    """Options of TFRecord files (tf.python_io.TFRecordOptions): compression_type "GZIP",
    "ZLIB" or ""/None (or a TFRecordCompressionType); the zlib settings (flush_mode,
    window_bits, compression_level, compression_method, mem_level, compression_strategy:
    zlib's numbers) apply to the writer; the buffer sizes are accepted."""
    compression_type_map = {
        TFRecordCompressionType.ZLIB: "ZLIB",
        TFRecordCompressionType.GZIP: "GZIP",
        TFRecordCompressionType.NONE: "",
    }

    def __init__(self, compression_type: Any = None, flush_mode: Optional[int] = None,
                 input_buffer_size: Optional[int] = None, output_buffer_size: Optional[int] = None,
                 window_bits: Optional[int] = None, compression_level: Optional[int] = None,
                 compression_method: Optional[int] = None, mem_level: Optional[int] = None,
                 compression_strategy: Optional[int] = None):
        self.get_compression_type_string(compression_type)  # validated; kept as given, as TF
        self.compression_type = compression_type
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options: Any) -> str:
        """"GZIP", "ZLIB" or "" for a TFRecordOptions, a TFRecordCompressionType or a string;
        anything else is InvalidArgumentError (a ValueError, as TF's)."""
        if not options:
            return ""
        if isinstance(options, TFRecordOptions):
            return cls.get_compression_type_string(options.compression_type)
        if isinstance(options, (int, str)) and not isinstance(options, bool):
            if options in cls.compression_type_map:
                return cls.compression_type_map[options]
            if options in cls.compression_type_map.values():
                return str(options)
        raise InvalidArgumentError(f'Not a valid compression_type: "{options}"')

    def __repr__(self) -> str:
        return f"TFRecordOptions(compression_type={self.compression_type!r})"


# -- writing ------------------------------------------------------------------------------------------

def _record_bytes(record: Any) -> bytes:
    if isinstance(record, bytes):
        return bytes(record)
    if isinstance(record, str):
        # collflow's string tensors are str decoded with surrogateescape: this is the bytes back
        return record.encode("utf-8", "surrogateescape")
    try:
        return memoryview(record).tobytes()
    except TypeError:
        raise TypeError(f"TFRecordWriter.write takes bytes (or str), got {type(record).__name__}") from None


class TFRecordWriter:
    """Writes records to a TFRecord file (tf.python_io.TFRecordWriter): write(record),
    flush(), close(); a context manager.  Records are bytes (a str is written as its UTF-8
    bytes, surrogate escapes as the bytes they stand for).  They are buffered and framed in
    blocks (their CRCs computed together); flush() and close() put everything in the file.
    The file is created (truncated) now: a missing directory is NotFoundError, a denied one
    PermissionDeniedError.  options: as tf_record_iterator's."""

    def __init__(self, path: Any, options: Any = None):
        self._path = _gfile._path(path)
        kind = TFRecordOptions.get_compression_type_string(options)
        opts = options if isinstance(options, TFRecordOptions) else TFRecordOptions(kind)
        self._z: Any = None
        if kind:
            wbits = 15 if opts.window_bits is None else int(opts.window_bits)
            try:  # TF's defaults: zlib's default level, memory level 9
                self._z = zlib.compressobj(
                    -1 if opts.compression_level is None else int(opts.compression_level),
                    zlib.DEFLATED if opts.compression_method is None else int(opts.compression_method),
                    wbits + 16 if kind == "GZIP" and wbits < 16 else wbits,
                    9 if opts.mem_level is None else int(opts.mem_level),
                    0 if opts.compression_strategy is None else int(opts.compression_strategy))
            except (ValueError, zlib.error) as e:
                raise InvalidArgumentError(f"TFRecordWriter {self._path}: invalid zlib options: {e}") from None
        self._flush_mode = opts.flush_mode or 0
        self._pending: List[bytes] = []
        self._pending_bytes = 0
        self._f: Optional[BinaryIO] = None
        try:
            self._f = open(self._path, "wb")
        except OSError as e:
            _gfile._raise(e, "TFRecordWriter: cannot open", self._path)

    def _file(self) -> BinaryIO:
        if self._f is None:
            raise FailedPreconditionError(f"Writer is closed. (TFRecordWriter {self._path})")
        return self._f

    def write(self, record: Any) -> None:
        """Appends one record (bytes or str)."""
        self._file()
        data = _record_bytes(record)
        self._pending.append(data)
        self._pending_bytes += len(data) + 16
        if self._pending_bytes >= _BLOCK:
            self._drain()

    def _drain(self) -> None:
        recs, self._pending, self._pending_bytes = self._pending, [], 0
        if not recs:
            return
        lens = np.array([len(r) for r in recs], dtype=np.uint64)
        hcrc = mask(crc32c_u64le(lens)).tolist()
        dcrc = masked_crc32c_many(recs).tolist()
        parts: List[bytes] = []
        for r, n, h, d in zip(recs, lens.tolist(), hcrc, dcrc):
            parts += (_HEADER.pack(n, h), r, _FOOTER.pack(d))
        blob = b"".join(parts)
        f = self._file()
        if self._z is None:
            f.write(blob)
            return
        f.write(self._z.compress(blob))
        if self._flush_mode:  # TF applies the zlib flush mode as buffered records are written out
            f.write(self._z.flush(self._flush_mode))

    def flush(self) -> None:
        """Writes the buffered records to the file (a compressed stream is sync-flushed, so a
        reader sees them)."""
        f = self._file()
        self._drain()
        if self._z is not None:
            f.write(self._z.flush(zlib.Z_SYNC_FLUSH))
        f.flush()

    def close(self) -> None:
        """Writes what is buffered, ends a compressed stream and closes the file (again: nothing)."""
        f = self._f
        if f is None:
            return
        try:
            self._drain()
            if self._z is not None:
                f.write(self._z.flush(zlib.Z_FINISH))
        finally:
            self._f = None
            f.close()

    def __enter__(self) -> "TFRecordWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:  # buffered records reach the file when a writer is dropped unclosed, as TF's
            self.close()
        except Exception:  # noqa: BLE001 - nothing to report to at collection time
            pass
