"""tf.summary.FileWriter: TensorBoard event files.

    writer = cf.summary.FileWriter("logs/run1", graph=sess.graph)
    summ, step = sess.run([merged, global_step])
    writer.add_summary(summ, step)
    writer.close()

The file is `<logdir>/events.out.tfevents.<10-digit seconds>.<hostname><suffix>`, a
sequence of TFRecords, each holding one `Event` (proto.py); the first event carries
file_version "brain.Event:2".  The records are framed by tensorboardX's RecordWriter (a
maintained writer of TensorBoard's format); TensorBoard, or `summary_iterator` here
(platform/tfrecord.py reads the framing back), reads the file.

Events are written on the caller's thread into a buffered file, which is flushed when
`max_queue` events are pending, when `flush_secs` passed since the last flush (checked at
each event), at `flush()` and at `close()` (TensorFlow 1.x queues them for a background
thread instead; what lands in the file is the same).  Using a closed writer logs a warning
and does nothing, as in TensorFlow 1.x, until `reopen()` (which starts a new file).
"""
from __future__ import annotations

import atexit
import os
import socket
import threading
import time
from typing import Any, Dict, Iterator, Optional

from ..dtypes import string_bytes
from ..errors import InvalidArgumentError
from ..platform import tf_logging
from . import proto
from ..platform.tfrecord import read_records

__all__ = ["FileWriter", "FileWriterCache", "summary_iterator"]

FILE_VERSION = "brain.Event:2"


def _record_writer(path: str) -> Any:
    """tensorboardX's writer of TFRecord framing (masked CRC-32C) onto `path`."""
    try:
        from tensorboardX.record_writer import RecordWriter
    except ImportError:
        raise InvalidArgumentError("cf.summary.FileWriter writes event files with tensorboardX: "
                                   "`pip install tensorboardX` (a collflow dependency)") from None
    return RecordWriter(path)


def _claim_event_file(logdir: str, suffix: str) -> str:
    """Creates a new, empty event file in `logdir` and returns its path; exclusive, so a
    second writer in the same second gets its own file rather than clobbering this one."""
    base = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}"
    path = os.path.join(logdir, base + suffix)
    n = 0
    while True:
        try:
            with open(path, "xb"):
                return path
        except FileExistsError:
            n += 1
            path = os.path.join(logdir, f"{base}.{os.getpid()}.{n}{suffix}")


class FileWriter:
    """Writes Summary protocol buffers (and the graph, session logs) to an event file in `logdir`.

    logdir is created if needed.  graph: a cf.Graph written at once (add_graph).
    max_queue / flush_secs: how many events, or how long, before a flush.
    filename_suffix: appended to the file name.
    """

    def __init__(self, logdir: str, graph: Any = None, max_queue: int = 10, flush_secs: float = 120,
                 graph_def: Any = None, filename_suffix: Optional[str] = None, session: Any = None):
        if session is not None:
            raise InvalidArgumentError("FileWriter(session=...) is TensorFlow 2's summary writer; collflow's "
                                       "FileWriter writes the file itself (leave session out)")
        if not isinstance(logdir, (str, os.PathLike)) or not str(logdir):
            raise InvalidArgumentError(f"FileWriter needs a log directory, got {logdir!r}")
        self._logdir = str(logdir)
        self._max_queue = max(1, int(max_queue))
        self._flush_secs = float(flush_secs)
        self._suffix = filename_suffix or ""
        self._lock = threading.Lock()
        self._file: Any = None            # a tensorboardX RecordWriter while open
        self._path: Optional[str] = None
        self._closed = True
        self.reopen()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    # -- the file ---------------------------------------------------------------------------------
    def get_logdir(self) -> str:
        return self._logdir

    @property
    def path(self) -> Optional[str]:
        """The event file being written (None once closed)."""
        return None if self._file is None else self._path

    def reopen(self) -> None:
        """Starts a new event file after close() (a no-op on an open writer)."""
        with self._lock:
            if not self._closed:
                return
            os.makedirs(self._logdir, exist_ok=True)
            self._path = _claim_event_file(self._logdir, self._suffix)
            self._file = _record_writer(self._path)
            self._closed = False
            self._pending = 0
            self._last_flush = time.monotonic()
            self._write_locked(proto.Event(wall_time=time.time(), file_version=FILE_VERSION))
            self._flush_locked()

    def _write_locked(self, event: proto.Event) -> None:
        assert self._file is not None
        self._file.write(event.SerializeToString())
        self._pending += 1
        if self._pending >= self._max_queue or time.monotonic() - self._last_flush >= self._flush_secs:
            self._flush_locked()

    def _flush_locked(self) -> None:
        if self._file is not None:
            self._file.flush()
        self._pending = 0
        self._last_flush = time.monotonic()

    # -- events -------------------------------------------------------------------------------------
    def add_event(self, event: proto.Event) -> None:
        """Writes `event` as is (wall_time 0 is replaced by now)."""
        if not isinstance(event, proto.Event):
            raise TypeError(f"add_event takes a cf.summary.Event, got {type(event).__name__}")
        with self._lock:
            if self._closed:
                tf_logging.warning("Attempting to use a closed FileWriter. The operation will be a noop unless "
                                   "the FileWriter is explicitly reopened.")
                return
            if not event.wall_time:
                event.wall_time = time.time()
            self._write_locked(event)

    def _add(self, step: Optional[int], **payload: Any) -> None:
        ev = proto.Event(wall_time=time.time(), **payload)
        if step is not None:
            ev.step = _as_step(step)
        self.add_event(ev)

    def add_summary(self, summary: Any, global_step: Optional[int] = None) -> None:
        """Adds a Summary: the bytes a summary op returns, or a cf.summary.Summary."""
        if hasattr(summary, "item") and getattr(summary, "shape", None) == ():
            summary = summary.item()  # a 0-d object array
        if isinstance(summary, (bytes, bytearray, str)):  # str: collflow's form of the bytes
            summary = proto.Summary.FromString(string_bytes(summary))
        if not isinstance(summary, proto.Summary):
            raise TypeError(f"add_summary takes the serialized Summary a summary op returns (bytes) or a "
                            f"cf.summary.Summary, got {type(summary).__name__}")
        self._add(global_step, summary=summary)

    def add_session_log(self, session_log: proto.SessionLog, global_step: Optional[int] = None) -> None:
        """Adds a SessionLog (START, STOP, CHECKPOINT): TensorBoard drops data after a restart by it."""
        if not isinstance(session_log, proto.SessionLog):
            raise TypeError(f"add_session_log takes a cf.summary.SessionLog, got {type(session_log).__name__}")
        self._add(global_step, session_log=session_log)

    def add_graph(self, graph: Any, global_step: Optional[int] = None, graph_def: Any = None) -> None:
        """Adds the graph (its ops' names, types, inputs and devices; no attributes) for
        TensorBoard's graph tab.  graph_def: a cf.summary GraphDef or its bytes instead."""
        if graph_def is None:
            if graph is None or not hasattr(graph, "get_operations"):
                raise TypeError(f"add_graph takes a cf.Graph, got {type(graph).__name__}")
            graph_def = proto.graph_def(graph)
        data = graph_def if isinstance(graph_def, (bytes, bytearray)) else graph_def.SerializeToString()
        self._add(global_step, graph_def=bytes(data))

    # -- lifetime --------------------------------------------------------------------------------
    def flush(self) -> None:
        """Writes pending events to disk."""
        with self._lock:
            self._flush_locked()

    def close(self) -> None:
        """Flushes and closes the file (reopen() starts a new one)."""
        with self._lock:
            if self._closed:
                return
            self._flush_locked()
            assert self._file is not None
            self._file.close()
            self._file = None
            self._closed = True

    def __enter__(self) -> "FileWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FileWriter({self._logdir!r}{', closed' if self._closed else ''})"


def _as_step(step: Any) -> int:
    try:
        return int(step)
    except (TypeError, ValueError):
        raise TypeError(f"global_step must be an integer, got {step!r}") from None


class FileWriterCache:
    """One FileWriter per log directory, shared (so hooks writing to one directory share a file)."""

    _writers: Dict[str, FileWriter] = {}
    _lock = threading.Lock()

    @staticmethod
    def get(logdir: str) -> FileWriter:
        key = os.path.abspath(str(logdir))
        with FileWriterCache._lock:
            w = FileWriterCache._writers.get(key)
            if w is None:
                w = FileWriter(logdir)
                FileWriterCache._writers[key] = w
            else:
                w.reopen()
            return w

    @staticmethod
    def clear() -> None:
        """Closes and forgets every cached writer."""
        with FileWriterCache._lock:
            for w in FileWriterCache._writers.values():
                w.close()
            FileWriterCache._writers.clear()


# events still buffered in cached writers reach the disk at interpreter exit
atexit.register(FileWriterCache.clear)


def summary_iterator(path: str) -> Iterator[proto.Event]:
    """The Events of an event file, in order (TensorFlow 1.x's tf.train.summary_iterator)."""
    with open(path, "rb") as f:
        for data in read_records(f, path):
            yield proto.Event.FromString(data)
