"""TF1's readers (the queue-based input pipeline) and the byte decoders their values go through:
`tf.TextLineReader`, `WholeFileReader`, `IdentityReader`, `FixedLengthRecordReader`,
`TFRecordReader` (all `tf.ReaderBase`), `tf.decode_raw` and `tf.decode_compressed`.

A reader is a resource of the Session (as a queue is), reached through the output of its
creation op.  `read(queue)` takes the next work item (a file name) from the queue only when
the current one is exhausted; once the queue is closed and empty it raises OutOfRangeError,
which ends a Coordinator's loop.  The state and the file formats live in
kernels/reader_kernels.py.  None of these ops has a gradient.
"""
from __future__ import annotations

import collections
from typing import Any, Optional

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from ...platform.tfrecord import TFRecordOptions
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from .data_flow_ops import queue_attrs
from .op_util import make_op, single

__all__ = ["ReaderBase", "TextLineReader", "WholeFileReader", "IdentityReader", "FixedLengthRecordReader",
           "TFRecordReader", "decode_raw", "decode_compressed"]

# TF's op types: the reader's own op, then the ops every reader shares
READER_TYPES = ("TextLineReaderV2", "WholeFileReaderV2", "IdentityReaderV2", "FixedLengthRecordReaderV2",
                "TFRecordReaderV2")

# decode_raw's out_type: TF's list, less the types collflow lacks (complex, bfloat16)
DECODE_RAW_TYPES = (_dt.float16, _dt.float32, _dt.float64, _dt.int32, _dt.uint16, _dt.uint8, _dt.int16, _dt.int8,
                    _dt.int64, _dt.bool_)

ReaderReadV2 = collections.namedtuple("ReaderReadV2", ["key", "value"])
ReaderReadUpToV2 = collections.namedtuple("ReaderReadUpToV2", ["keys", "values"])


# -- shape functions -----------------------------------------------------------------------


def _reader_spec(op: _g.Operation) -> list:
    return [(_dt.resource, TensorShape(()))]


def _check_reader(t: _g.Tensor) -> None:
    if t.dtype != _dt.resource:
        raise InvalidArgumentError(f"{t.name} is not a reader handle (dtype {t.dtype.name}, not resource)")


def _check_queue(t: _g.Tensor) -> None:
    """A reader takes its work items from a queue of single strings."""
    try:
        types = queue_attrs(t)["component_types"]
    except ValueError:
        raise InvalidArgumentError(f"a reader reads from a queue; {t.name} is not a queue handle") from None
    if tuple(types) != (_dt.string,):
        raise InvalidArgumentError(
            f"a reader's queue must hold single strings (file names); {t.name} has components "
            f"[{', '.join(d.name for d in types)}]")


def _read_spec(op: _g.Operation, many: bool) -> list:
    _check_reader(op.inputs[0])
    _check_queue(op.inputs[1])
    if many:
        n = op.inputs[2]
        if not n.dtype.is_integer or n.shape.rank not in (None, 0):
            raise InvalidArgumentError(f"num_records must be an integer scalar, got {n.dtype.name} of shape {n.shape}")
    shape = TensorShape([None]) if many else TensorShape(())
    return [(_dt.string, shape), (_dt.string, shape)]


def _reader_query_spec(op: _g.Operation, dtype: Optional[_dt.DType]) -> list:
    _check_reader(op.inputs[0])
    if op.type == "ReaderRestoreStateV2":
        st = op.inputs[1]
        if st.dtype != _dt.string or st.shape.rank not in (None, 0):
            raise InvalidArgumentError(f"restore_state needs a string scalar, got {st.dtype.name} of shape {st.shape}")
    return [] if dtype is None else [(dtype, TensorShape(()))]


def _decode_raw_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if x.dtype != _dt.string:
        raise InvalidArgumentError(f"decode_raw needs a string tensor, got {x.dtype.name}")
    # the length of the strings is known only when they are: one more dimension, of unknown size
    shape = TensorShape(None) if x.shape.rank is None else TensorShape(list(x.shape.dims) + [None])
    return [(op.attrs["out_type"], shape)]


def _decode_compressed_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if x.dtype != _dt.string:
        raise InvalidArgumentError(f"decode_compressed needs a string tensor, got {x.dtype.name}")
    return [(_dt.string, x.shape)]


for _t in READER_TYPES:
    register_op(_t, _reader_spec, stateful=True, host_only=True, doc="a reader resource (TF1's queue-based input)")
register_op("ReaderReadV2", lambda op: _read_spec(op, False), stateful=True, host_only=True,
            doc="the next (key, value) record of a reader, taking work items from a queue")
register_op("ReaderReadUpToV2", lambda op: _read_spec(op, True), stateful=True, host_only=True,
            doc="up to num_records (key, value) records of one work item")
register_op("ReaderNumRecordsProducedV2", lambda op: _reader_query_spec(op, _dt.int64), stateful=True, host_only=True)
register_op("ReaderNumWorkUnitsCompletedV2", lambda op: _reader_query_spec(op, _dt.int64), stateful=True,
            host_only=True)
register_op("ReaderSerializeStateV2", lambda op: _reader_query_spec(op, _dt.string), stateful=True, host_only=True)
register_op("ReaderRestoreStateV2", lambda op: _reader_query_spec(op, None), stateful=True, host_only=True)
register_op("ReaderResetV2", lambda op: _reader_query_spec(op, None), stateful=True, host_only=True)
register_op("DecodeRaw", _decode_raw_spec, host_only=True, doc="the bytes of strings as numbers")
register_op("DecodeCompressed", _decode_compressed_spec, host_only=True, doc="ZLIB/GZIP-decompressed strings")
not_differentiable(*READER_TYPES, "ReaderReadV2", "ReaderReadUpToV2", "ReaderNumRecordsProducedV2",
                   "ReaderNumWorkUnitsCompletedV2", "ReaderSerializeStateV2", "ReaderRestoreStateV2", "ReaderResetV2",
                   "DecodeRaw", "DecodeCompressed")


# -- the readers ----------------------------------------------------------------------------


def _make_reader(op_type: str, base: str, name: Optional[str], attrs: dict) -> _g.Operation:
    """The reader's creation op, outside any control-dependency scope (it is a resource);
    shared_name is the op's unique name, so each reader object has its own state."""
    g = _g.get_default_graph()
    with g.as_default(), g.control_dependencies(None):
        uname = g.unique_name(name or base, mark_as_used=False)
        return g.create_op(op_type, [], dict(attrs, shared_name=uname), name=name or base)


def _non_negative(value: Any, what: str, reader: str) -> int:
    v = 0 if value is None else value
    if isinstance(v, bool) or not isinstance(v, int) and not hasattr(v, "__index__"):
        raise InvalidArgumentError(f"{reader}: {what} must be an integer, got {value!r}")
    v = int(v)
    if v < 0:
        raise InvalidArgumentError(f"{reader}: {what} must be >= 0, got {v}")
    return v


class ReaderBase:
    """What every reader offers (TF1's `tf.ReaderBase`): `read`, `read_up_to`, the counters,
    `reset`, and (where `supports_serialize`) `serialize_state`/`restore_state`.  Each method
    returns graph ops; the reader's state lives in the Session that runs them."""

    def __init__(self, reader_ref: _g.Tensor, supports_serialize: bool = False):
        self._reader_ref = reader_ref
        self._supports_serialize = bool(supports_serialize)

    @property
    def reader_ref(self) -> _g.Tensor:
        """The reader's handle (a resource scalar)."""
        return self._reader_ref

    @property
    def supports_serialize(self) -> bool:
        """Whether serialize_state/restore_state work (as in TF: IdentityReader and WholeFileReader)."""
        return self._supports_serialize

    def _op(self, op_type: str, inputs: list, name: Optional[str]) -> _g.Operation:
        with self._reader_ref.graph.as_default():
            return make_op(op_type, [self._reader_ref] + inputs, name=name or op_type)

    @staticmethod
    def _queue_ref(queue: Any) -> _g.Tensor:
        # a queue object or its handle tensor, as TF accepts
        return queue if isinstance(queue, _g.Tensor) else queue.queue_ref

    def read(self, queue: Any, name: Optional[str] = None) -> ReaderReadV2:
        """The next record: (key, value) string scalars.  Dequeues a work item from `queue`
        when the current one is exhausted; OutOfRangeError once the queue is closed and empty."""
        op = self._op("ReaderReadV2", [self._queue_ref(queue)], name)
        return ReaderReadV2(*op.outputs)

    def read_up_to(self, queue: Any, num_records: Any, name: Optional[str] = None) -> ReaderReadUpToV2:
        """Between 1 and num_records records of one work item: (keys, values) string vectors."""
        with self._reader_ref.graph.as_default():
            n = _g.convert_to_tensor(num_records, dtype=_dt.int64) if not isinstance(num_records, _g.Tensor) \
                else num_records
        op = self._op("ReaderReadUpToV2", [self._queue_ref(queue), n], name)
        return ReaderReadUpToV2(*op.outputs)

    def num_records_produced(self, name: Optional[str] = None) -> _g.Tensor:
        """How many records this reader has produced (int64 scalar)."""
        return self._op("ReaderNumRecordsProducedV2", [], name).outputs[0]

    def num_work_units_completed(self, name: Optional[str] = None) -> _g.Tensor:
        """How many work items (files) this reader has finished (int64 scalar)."""
        return self._op("ReaderNumWorkUnitsCompletedV2", [], name).outputs[0]

    def serialize_state(self, name: Optional[str] = None) -> _g.Tensor:
        """The reader's state as a string (TF's ReaderBaseState protocol buffer); running it
        raises UnimplementedError for a reader that does not support it."""
        return self._op("ReaderSerializeStateV2", [], name).outputs[0]

    def restore_state(self, state: Any, name: Optional[str] = None) -> _g.Operation:
        """An op restoring a state that serialize_state produced."""
        with self._reader_ref.graph.as_default():
            st = state if isinstance(state, _g.Tensor) else _g.convert_to_tensor(state, dtype=_dt.string)
        return self._op("ReaderRestoreStateV2", [st], name)

    def reset(self, name: Optional[str] = None) -> _g.Operation:
        """An op returning the reader to its initial state: counters zero, no current work."""
        return self._op("ReaderResetV2", [], name)

    def __repr__(self) -> str:
        return f"<cf.{type(self).__name__} {self._reader_ref.op.name!r}>"


class WholeFileReader(ReaderBase):
    """Reads each file whole: key the file name, value its contents."""

    def __init__(self, name: Optional[str] = None):
        super().__init__(_make_reader("WholeFileReaderV2", "WholeFileReaderV2", name, {}).outputs[0],
                         supports_serialize=True)


class IdentityReader(ReaderBase):
    """Outputs each work item as both key and value (to drive a pipeline from a queue of strings)."""

    def __init__(self, name: Optional[str] = None):
        super().__init__(_make_reader("IdentityReaderV2", "IdentityReaderV2", name, {}).outputs[0],
                         supports_serialize=True)


class TextLineReader(ReaderBase):
    """Reads a file line by line: key "file:line" (counting from 1, skipped header lines
    included), value the line without its "\\n" (nor a "\\r" before it)."""

    def __init__(self, skip_header_lines: Optional[int] = None, name: Optional[str] = None):
        skip = _non_negative(skip_header_lines, "skip_header_lines", "TextLineReader")
        super().__init__(_make_reader("TextLineReaderV2", "TextLineReaderV2", name,
                                      {"skip_header_lines": skip}).outputs[0])


_ENCODINGS = {None: "", "": "", "ZLIB": "ZLIB", "GZIP": "GZIP"}


class FixedLengthRecordReader(ReaderBase):
    """Reads records of record_bytes bytes: key "file:n" (n from 0).

    header_bytes are skipped at the start of each file, footer_bytes at its end; a record
    starts every hop_bytes (record_bytes when 0 or None), and a trailing part too short for
    a record is dropped.  encoding "ZLIB"/"GZIP": each file is decompressed first.
    """

    def __init__(self, record_bytes: int, header_bytes: Optional[int] = None, footer_bytes: Optional[int] = None,
                 hop_bytes: Optional[int] = None, name: Optional[str] = None, encoding: Optional[str] = None):
        who = "FixedLengthRecordReader"
        rb = _non_negative(record_bytes, "record_bytes", who)
        if rb == 0:
            raise InvalidArgumentError(f"{who}: record_bytes must be > 0, got 0")
        if encoding not in _ENCODINGS:
            raise InvalidArgumentError(f"{who}: encoding must be None, 'ZLIB' or 'GZIP', got {encoding!r}")
        attrs = {"record_bytes": rb, "header_bytes": _non_negative(header_bytes, "header_bytes", who),
                 "footer_bytes": _non_negative(footer_bytes, "footer_bytes", who),
                 "hop_bytes": _non_negative(hop_bytes, "hop_bytes", who), "encoding": _ENCODINGS[encoding]}
        super().__init__(_make_reader("FixedLengthRecordReaderV2", "FixedLengthRecordReaderV2", name,
                                      attrs).outputs[0])


class TFRecordReader(ReaderBase):
    """Reads the records of TFRecord files: key "file:offset" (the record's byte offset, in
    the uncompressed stream), value the record.  options: tf.python_io.TFRecordOptions (or
    a compression type) for GZIP/ZLIB files."""

    def __init__(self, name: Optional[str] = None, options: Any = None):
        super().__init__(_make_reader("TFRecordReaderV2", "TFRecordReaderV2", name,
                                      {"compression_type": TFRecordOptions.get_compression_type_string(options)}
                                      ).outputs[0])


# -- decoding ---------------------------------------------------------------------------


def _string_input(x: Any, what: str) -> _g.Tensor:
    t = x if isinstance(x, _g.Tensor) else _g.convert_to_tensor(x, dtype=_dt.string)
    if t.dtype != _dt.string:
        raise TypeError(f"{what}: the input must be a string tensor, got {t.dtype.name}")
    return t


def decode_raw(input_bytes: Any = None, out_type: Any = None, little_endian: bool = True,
               name: Optional[str] = None, bytes: Any = None) -> _g.Tensor:  # noqa: A002 (TF1's deprecated name)
    """The bytes of each string as a vector of out_type: a string tensor of shape S gives
    shape S + [length / size]; every string must have the same length, a multiple of the
    type's size.  little_endian=False reads big-endian numbers."""
    if input_bytes is None:
        input_bytes = bytes
    elif bytes is not None:
        raise ValueError("decode_raw: give input_bytes or bytes (deprecated), not both")
    if input_bytes is None or out_type is None:
        raise ValueError("decode_raw needs input_bytes and out_type")
    dt = _dt.as_dtype(out_type)
    if dt not in DECODE_RAW_TYPES:
        raise TypeError(f"Value passed to parameter 'out_type' has DataType {dt.name} not in list of allowed values: "
                        f"{', '.join(d.name for d in DECODE_RAW_TYPES)}")
    return single("DecodeRaw", [_string_input(input_bytes, "decode_raw")],
                  {"out_type": dt, "little_endian": bool(little_endian)}, name=name or "DecodeRaw")


def decode_compressed(bytes: Any, compression_type: str = "", name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """Each string decompressed: compression_type "" (unchanged), "ZLIB" or "GZIP"."""
    ct = compression_type or ""
    if ct not in ("", "ZLIB", "GZIP"):
        raise InvalidArgumentError(f"decode_compressed: only ZLIB, GZIP or '' are supported, got {compression_type!r}")
    return single("DecodeCompressed", [_string_input(bytes, "decode_compressed")], {"compression_type": ct},
                  name=name or "DecodeCompressed")
