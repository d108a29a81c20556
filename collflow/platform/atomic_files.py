"""Writing a file whole or not at all: the data goes to a temporary name beside it, then is
renamed over it, so a reader never sees a partial file under the final name (checkpoints,
their index, tf.write_file, tf.train.write_graph all go through here).  A durable write also
fsyncs the file and its directory."""
from __future__ import annotations

import os
import threading

__all__ = ["TMP_SUFFIX", "temporary_name", "fsync_directory", "atomic_write_bytes"]

TMP_SUFFIX = ".tmp"


def temporary_name(path: str) -> str:
    """Where a write of `path` goes before its rename: unique per process and thread, so two
    saves of one file at once (a Supervisor's timer and the training loop) never share it;
    it still ends in TMP_SUFFIX, which marks leftovers of interrupted writes."""
    return f"{path}.{os.getpid()}-{threading.get_ident()}{TMP_SUFFIX}"


def fsync_directory(directory: str) -> None:
    """Makes a rename or unlink in `directory` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str, data: bytes, durable: bool = True) -> None:
    """Replaces `path` by `data` atomically: write temporary_name(path), fsync, rename, fsync the directory."""
    tmp = temporary_name(path)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _remove_quietly(tmp)
        raise
    if durable:
        fsync_directory(os.path.dirname(os.path.abspath(path)))


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
