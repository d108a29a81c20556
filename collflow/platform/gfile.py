"""`tf.gfile` (TensorFlow 1.x) and `tf.io.gfile` (its TF2 names): file access over the local
file system, with TensorFlow's error types.

    with cf.gfile.GFile("data/train.txt") as f:      # text mode: str; "rb": bytes
        lines = f.readlines()
    if not cf.gfile.Exists(ckpt_dir):
        cf.gfile.MakeDirs(ckpt_dir)

Only local paths (TensorFlow's file systems for gs://, hdfs:// and the like are not here: a
path with a scheme raises UnimplementedError).  A missing file is NotFoundError, an existing
target where none may be is AlreadyExistsError, a denied access PermissionDeniedError (all
also the matching Python errors: NotFoundError is a KeyError, PermissionDeniedError a
PermissionError).  GFile writes go straight to the named file, as TF's local file system does.
"""
from __future__ import annotations

import errno
import glob as _glob
import os
import shutil
from typing import IO, Any, Iterator, List, Optional, Tuple

from ..errors import (AlreadyExistsError, FailedPreconditionError, InvalidArgumentError, NotFoundError,
                      PermissionDeniedError, UnimplementedError, UnknownError)

__all__ = ["GFile", "FastGFile", "Open", "Exists", "IsDirectory", "ListDirectory", "MakeDirs", "MkDir", "Remove",
           "DeleteRecursively", "Rename", "Copy", "Glob", "Stat", "Walk", "FileStatistics"]


def _path(p: Any) -> str:
    p = os.fspath(p)
    if isinstance(p, bytes):
        p = p.decode("utf-8")
    if "://" in p and not p.startswith("file://"):
        raise UnimplementedError(f"gfile: only local files are supported here, not {p!r} (no file system is "
                                 "registered for that scheme)")
    return p[len("file://"):] if p.startswith("file://") else p


def _raise(e: OSError, what: str, path: str) -> None:
    """The OSError as TensorFlow's error of that kind (the OSError chained)."""
    msg = f"{what} {path}: {e.strerror or e}"
    if e.errno == errno.ENOENT:
        raise NotFoundError(msg) from e
    if e.errno == errno.EEXIST:
        raise AlreadyExistsError(msg) from e
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        raise PermissionDeniedError(msg) from e
    if e.errno in (errno.ENOTDIR, errno.EISDIR, errno.ENOTEMPTY):
        raise FailedPreconditionError(msg) from e
    raise UnknownError(msg) from e


class GFile:
    """A file, as TensorFlow's GFile: modes r, w, a (text) and rb, wb, ab (bytes), and r+/w+.

    read(n=-1), readline(), readlines(), iteration over lines, write(s), seek(offset,
    whence) / seek(position=), tell(), size(), flush(), close(); a context manager."""

    def __init__(self, name: Any, mode: str = "r"):
        self.name = _path(name)
        if mode.replace("b", "").replace("+", "") not in ("r", "w", "a"):
            raise InvalidArgumentError(f"gfile.GFile: mode must be one of r, w, a (with b and/or +), got {mode!r}")
        self.mode = mode
        try:
            self._f: Optional[IO[Any]] = open(self.name, mode) if "b" in mode else \
                open(self.name, mode, encoding="utf-8", newline="")
        except OSError as e:
            _raise(e, "cannot open", self.name)

    def _file(self) -> IO[Any]:
        if self._f is None:
            raise FailedPreconditionError(f"gfile.GFile {self.name}: the file is closed")
        return self._f

    def read(self, n: int = -1) -> Any:
        return self._file().read(n)

    def readline(self) -> Any:
        return self._file().readline()

    def readlines(self) -> List[Any]:
        return self._file().readlines()

    def write(self, data: Any) -> None:
        """Writes str or bytes in either mode (as TF's GFile, which writes bytes)."""
        f = self._file()
        if "b" in self.mode:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        else:
            f.write(data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data)

    def seek(self, offset: Optional[int] = None, whence: int = 0, position: Optional[int] = None) -> int:
        if position is not None:
            offset = position
        return self._file().seek(0 if offset is None else offset, whence)

    def tell(self) -> int:
        return self._file().tell()

    def size(self) -> int:
        self.flush()
        return os.path.getsize(self.name)

    def flush(self) -> None:
        if self._f is not None:
            self._f.flush()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def __iter__(self) -> Iterator[Any]:
        return self  # the GFile itself: it keeps the file open while iterated

    def __next__(self) -> Any:
        return next(self._file())

    def __enter__(self) -> "GFile":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


FastGFile = GFile
Open = GFile


def Exists(filename: Any) -> bool:  # noqa: N802 - TF's names
    """Whether the path exists (file or directory)."""
    return os.path.exists(_path(filename))


def IsDirectory(dirname: Any) -> bool:  # noqa: N802
    return os.path.isdir(_path(dirname))


def ListDirectory(dirname: Any) -> List[str]:  # noqa: N802
    """The entries of a directory (names, not paths; "." and ".." left out)."""
    d = _path(dirname)
    if not os.path.isdir(d):
        raise NotFoundError(f"Could not find directory {d}")
    try:
        return os.listdir(d)
    except OSError as e:
        _raise(e, "cannot list", d)
        raise


def MakeDirs(dirname: Any) -> None:  # noqa: N802
    """Creates the directory and its missing parents; an existing directory is fine."""
    d = _path(dirname)
    try:
        os.makedirs(d, exist_ok=True)
    except FileExistsError as e:  # a file of that name
        raise FailedPreconditionError(f"cannot create directory {d}: a file of that name exists") from e
    except OSError as e:
        _raise(e, "cannot create directory", d)


def MkDir(dirname: Any) -> None:  # noqa: N802
    """Creates one directory: AlreadyExistsError if it exists, NotFoundError without its parent."""
    d = _path(dirname)
    try:
        os.mkdir(d)
    except OSError as e:
        _raise(e, "cannot create directory", d)


def Remove(filename: Any) -> None:  # noqa: N802
    """Deletes a file (NotFoundError if there is none)."""
    p = _path(filename)
    try:
        os.remove(p)
    except OSError as e:
        _raise(e, "cannot delete", p)


def DeleteRecursively(dirname: Any) -> None:  # noqa: N802
    """Deletes a directory and everything in it (or a file)."""
    d = _path(dirname)
    if not os.path.exists(d):
        raise NotFoundError(f"cannot delete {d}: no such file or directory")
    try:
        if os.path.isdir(d) and not os.path.islink(d):
            shutil.rmtree(d)
        else:
            os.remove(d)
    except OSError as e:
        _raise(e, "cannot delete", d)


def Rename(oldname: Any, newname: Any, overwrite: bool = False) -> None:  # noqa: N802
    """Renames a file; an existing target is AlreadyExistsError unless overwrite."""
    a, b = _path(oldname), _path(newname)
    if not overwrite and os.path.exists(b):
        raise AlreadyExistsError(f"cannot rename {a} to {b}: the target exists (overwrite=False)")
    try:
        os.replace(a, b)
    except OSError as e:
        _raise(e, f"cannot rename to {b}:", a)


def Copy(oldpath: Any, newpath: Any, overwrite: bool = False) -> None:  # noqa: N802
    """Copies a file; an existing target is AlreadyExistsError unless overwrite."""
    a, b = _path(oldpath), _path(newpath)
    if not overwrite and os.path.exists(b):
        raise AlreadyExistsError(f"cannot copy {a} to {b}: the target exists (overwrite=False)")
    try:
        shutil.copyfile(a, b)
    except OSError as e:
        _raise(e, f"cannot copy to {b}:", a)


def Glob(filename: Any) -> List[str]:  # noqa: N802
    """The paths matching a pattern (*, ?, [...]), sorted."""
    return sorted(_glob.glob(_path(filename)))


class FileStatistics:
    """What Stat returns: length (bytes), mtime_nsec, is_directory."""

    def __init__(self, length: int, mtime_nsec: int, is_directory: bool):
        self.length, self.mtime_nsec, self.is_directory = length, mtime_nsec, is_directory

    def __repr__(self) -> str:
        return f"FileStatistics(length={self.length}, mtime_nsec={self.mtime_nsec}, is_directory={self.is_directory})"


def Stat(filename: Any) -> FileStatistics:  # noqa: N802
    p = _path(filename)
    try:
        st = os.stat(p)
    except OSError as e:
        _raise(e, "cannot stat", p)
        raise
    return FileStatistics(st.st_size, st.st_mtime_ns, os.path.isdir(p))


def Walk(top: Any, in_order: bool = True) -> Iterator[Tuple[str, List[str], List[str]]]:  # noqa: N802
    """(directory, subdirectory names, file names) for `top` and every directory below it,
    parents first (in_order) or last; nothing for a missing `top`."""
    for d, subdirs, files in os.walk(_path(top), topdown=in_order):
        yield d, subdirs, files


def _walk_v2(top: Any, topdown: bool = True, onerror: Any = None) -> Iterator[Tuple[str, List[str], List[str]]]:
    """`tf.io.gfile.walk`: as Walk, with os.walk's `topdown` and `onerror` (called with the
    error of a directory that cannot be listed)."""
    for d, subdirs, files in os.walk(_path(top), topdown=topdown, onerror=onerror):
        yield d, subdirs, files


def _join(path: Any, *paths: Any) -> str:
    """`tf.io.gfile.join`: the parts joined with "/" (a scheme prefix such as file:// kept)."""
    return os.path.join(os.fspath(path), *(os.fspath(p) for p in paths))


class _IoGfile:
    """`tf.io.gfile`: the same functions under TF2's lower-case names."""

    GFile = GFile
    exists = staticmethod(Exists)
    isdir = staticmethod(IsDirectory)
    listdir = staticmethod(ListDirectory)
    makedirs = staticmethod(MakeDirs)
    mkdir = staticmethod(MkDir)
    remove = staticmethod(Remove)
    rmtree = staticmethod(DeleteRecursively)
    rename = staticmethod(Rename)
    copy = staticmethod(Copy)
    glob = staticmethod(Glob)
    stat = staticmethod(Stat)
    walk = staticmethod(_walk_v2)
    join = staticmethod(_join)


io_gfile = _IoGfile()
