"""tf.data.TFRecordDataset and tf.data.FixedLengthRecordDataset: the records of files, as
string scalars.

collflow's strings are Python str (docs/tf1_compat.md): each record's bytes are decoded as
UTF-8 with surrogateescape, so binary records (serialized protos, raw pixels) survive exactly
(`s.encode("utf-8", "surrogateescape")` is the record).  File names are a path, a list of
paths, or a string tensor of them (read when the iterator is initialized).
"""
from __future__ import annotations

import os
from typing import Any, Callable, Iterator, List, Optional

import numpy as np

from .. import dtypes as _dt
from ..errors import DataLossError, InvalidArgumentError
from ..graph import graph as _g
from ..platform import tfrecord as _tfr
from .dataset import Dataset, _Generator
from .dataset_more import _cores

__all__ = ["TFRecordDataset", "FixedLengthRecordDataset"]

_BLOCK = 1 << 20


def _kind(compression_type: Any, what: str) -> str:
    if compression_type is not None and not isinstance(compression_type, str):
        raise InvalidArgumentError(f"{what}: compression_type must be a Python string ('', 'GZIP' or 'ZLIB'), "
                                   f"got {compression_type!r}")
    kind = (compression_type or "").upper()
    if kind not in ("", "GZIP", "ZLIB"):
        raise InvalidArgumentError(f"{what}: compression_type must be '', 'GZIP' or 'ZLIB', got {compression_type!r}")
    return kind


def _source(filenames: Any) -> Any:
    """The file names as the generator's argument: a string tensor, or a bytes array of them."""
    if isinstance(filenames, _g.Tensor):
        if filenames.dtype != _dt.string or filenames.shape.rank not in (None, 0, 1):
            raise InvalidArgumentError(f"filenames must be a string scalar or vector, got {filenames.name} "
                                       f"({filenames.dtype.name} {filenames.shape})")
        return filenames
    names = [filenames] if isinstance(filenames, (str, bytes, os.PathLike)) else list(filenames)
    return np.array([os.fsencode(os.fspath(n)) for n in names], dtype=bytes)


def _paths(names: Any) -> List[str]:
    return [n.decode("utf-8", "surrogateescape") if isinstance(n, bytes) else str(n)
            for n in np.atleast_1d(np.asarray(names, dtype=object)).ravel()]


def _count(v: Any, what: str, least: int) -> int:
    x = np.asarray(v)
    if x.shape != () or x.dtype.kind not in "iu" or int(x) < least:
        raise InvalidArgumentError(f"{what} must be an integer of at least {least}, got {v!r}")
    return int(x)


def _parallel_order(files: Iterator[Iterator[str]], cycle: int) -> Iterator[str]:
    """TF's order for num_parallel_reads (a deterministic parallel interleave, block length 1):
    `cycle` files open, one record from each in turn; a finished file's slot takes the next
    file, whose first record comes when the turn is back at that slot."""
    slots: List[Optional[Iterator[str]]] = [next(files, None) for _ in range(cycle)]
    at = 0
    while any(s is not None for s in slots):
        it = slots[at]
        if it is not None:
            rec = next(it, None)
            if rec is None:
                slots[at] = next(files, None)
            else:
                yield rec
        at = (at + 1) % cycle


def _over_files(names: Any, parallel: Any, one: Callable[[str], Iterator[str]]) -> Iterator[str]:
    k = _count(parallel, "num_parallel_reads", -1)
    if k == -1:  # AUTOTUNE: the schedulable cores, as TF
        k = _cores()
    paths = _paths(names)
    if k <= 1:
        for p in paths:
            yield from one(p)
    else:
        yield from _parallel_order((one(p) for p in paths), k)


def _as_string(record: bytes) -> str:
    return record.decode("utf-8", "surrogateescape")


def TFRecordDataset(filenames: Any, compression_type: Optional[str] = None,  # noqa: N802 - TF's name
                    buffer_size: Optional[int] = None, num_parallel_reads: Optional[int] = None) -> Dataset:
    """The records of one or more TFRecord files, as string scalars (tf.data.TFRecordDataset).
    compression_type: None/"", "GZIP" or "ZLIB"; num_parallel_reads: that many files read in
    turn, one record each, in TF's order (AUTOTUNE: the schedulable cores); buffer_size is
    accepted (files are read in blocks of 1 MiB).  A corrupt or truncated record is
    DataLossError naming the file and offset, a missing file NotFoundError."""
    kind = _kind(compression_type, "TFRecordDataset")

    def one(path: str) -> Iterator[str]:
        for rec in _tfr.tf_record_iterator(path, kind):
            yield _as_string(rec)

    def records(names: Any, parallel: Any) -> Iterator[str]:
        return _over_files(names, parallel, one)

    return _Generator(records, _dt.string, [], [_source(filenames), 0 if num_parallel_reads is None
                                                else num_parallel_reads])


def _read_exactly(f: Any, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        b = f.read(n - got)
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def _fixed_records(path: str, kind: str, rb: int, hb: int, fb: int) -> Iterator[str]:
    def not_multiple(body: int, err: type) -> Exception:
        return err(f'Excluding the header ({hb} bytes) and footer ({fb} bytes), input file "{path}" has body '
                   f"length {body} bytes, which is not an exact multiple of the record length ({rb} bytes).")
    per_read = max(1, _BLOCK // rb) * rb
    with _tfr.open_records(path, kind, "FixedLengthRecordDataset") as f:
        if not kind:  # the size is known: check it before the first record, as TF
            size = f.seek(0, os.SEEK_END)
            body = size - hb - fb
            if body < 0:
                raise InvalidArgumentError(f'input file "{path}" has {size} bytes, fewer than the header ({hb} '
                                           f"bytes) and footer ({fb} bytes)")
            if body % rb:
                raise not_multiple(body, InvalidArgumentError)
            f.seek(hb)
            while body > 0:
                block = _read_exactly(f, min(per_read, body))
                if not block:
                    raise DataLossError(f'input file "{path}" ended while being read (it shrank?)')
                body -= len(block)
                for s in range(0, len(block) - rb + 1, rb):
                    yield _as_string(block[s:s + rb])
            return
        # a compressed file's length shows only at its end: records are yielded while reading,
        # the last fb bytes held back as the footer
        if len(_read_exactly(f, hb)) < hb:
            raise DataLossError(f'input file "{path}" is shorter than its header ({hb} bytes)')
        buf, body = b"", 0
        while True:
            chunk = f.read(per_read)
            if not chunk:
                break
            buf += chunk
            body += len(chunk)
            n = (len(buf) - fb) // rb if len(buf) > fb else 0
            for s in range(0, n * rb, rb):
                yield _as_string(buf[s:s + rb])
            buf = buf[n * rb:]
        if len(buf) < fb:
            raise DataLossError(f'input file "{path}" is shorter than its header ({hb} bytes) and footer '
                                f"({fb} bytes)")
        if len(buf) > fb:
            raise not_multiple(body - fb, DataLossError)


def FixedLengthRecordDataset(filenames: Any, record_bytes: Any, header_bytes: Any = None,  # noqa: N802 - TF's name
                             footer_bytes: Any = None, buffer_size: Optional[int] = None,
                             compression_type: Optional[str] = None,
                             num_parallel_reads: Optional[int] = None) -> Dataset:
    """The records of record_bytes bytes of one or more files, after header_bytes and before
    footer_bytes of each, as string scalars (tf.data.FixedLengthRecordDataset).  The sizes may
    be integer tensors.  An uncompressed file whose body is not a whole number of records is
    InvalidArgumentError before its first record, a GZIP/ZLIB one DataLossError after its
    last whole record (TF's message in both); num_parallel_reads as TFRecordDataset's."""
    kind = _kind(compression_type, "FixedLengthRecordDataset")

    def records(names: Any, rb: Any, hb: Any, fb: Any, parallel: Any) -> Iterator[str]:
        r = _count(rb, "record_bytes", 1)
        h = _count(hb, "header_bytes", 0)
        f = _count(fb, "footer_bytes", 0)
        return _over_files(names, parallel, lambda p: _fixed_records(p, kind, r, h, f))

    return _Generator(records, _dt.string, [], [
        _source(filenames), record_bytes, 0 if header_bytes is None else header_bytes,
        0 if footer_bytes is None else footer_bytes, 0 if num_parallel_reads is None else num_parallel_reads])
