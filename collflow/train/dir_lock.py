"""One job per checkpoint directory: an exclusive lock held for the job's life, and a
writability probe.

Two jobs training into one directory overwrite each other's checkpoints and index (a second
`supervise.py` started after an ssh session dropped, while the first job still runs).  The
supervisor and train.py take `<directory>/collflow.lock` with fcntl.flock, which the kernel
releases when the holder dies (a crash leaves nothing to clean up), and write their pid,
host and command into it; a second job refuses at once with an error naming the holder.  A
job started by a supervisor that holds the lock finds its supervisor's pid in
$COLLFLOW_SUPERVISOR_PID and goes on under the supervisor's lock.  The file itself is never
deleted: removing a lock file while another process waits on it would let two holders in.

`check_writable(directory)` creates and removes a probe file, so a read-only directory is
reported when the job starts instead of at its first checkpoint.

This module imports only the standard library: scripts/supervise.py loads it by path, without
importing collflow (and NumPy) into the supervisor.
"""
from __future__ import annotations

import errno
import os
import socket
import sys
import time
from typing import Optional

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no locking
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_FILENAME", "SUPERVISOR_ENV", "DirectoryLocked", "DirLock", "lock_directory", "check_writable"]

LOCK_FILENAME = "collflow.lock"
SUPERVISOR_ENV = "COLLFLOW_SUPERVISOR_PID"


class DirectoryLocked(Exception):
    """Another live process holds the directory's lock; `holder_pid` (or None) and `message`."""

    def __init__(self, message: str, holder_pid: Optional[int]):
        super().__init__(message)
        self.message = message
        self.holder_pid = holder_pid


def _holder(path: str) -> tuple:
    """(pid or None, 'pid N on host H (since T): command') from the lock file's contents."""
    try:
        with open(path) as f:
            text = f.read(4096)
    except OSError:
        return None, "an unknown process"
    fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    pid = int(fields["pid"]) if fields.get("pid", "").isdigit() else None
    desc = f"pid {pid if pid is not None else '?'}"
    if fields.get("host"):
        desc += f" on host {fields['host']}"
    if fields.get("since"):
        desc += f" (since {fields['since']})"
    if fields.get("command"):
        desc += f": {fields['command']}"
    return pid, desc


class DirLock:
    """The exclusive lock of one directory (see the module doc); `acquire` raises
    DirectoryLocked when another process holds it."""

    def __init__(self, directory: str, what: str = "job"):
        self.directory = directory
        self.path = os.path.join(directory, LOCK_FILENAME)
        self.what = what
        self._fd: Optional[int] = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> "DirLock":
        """Takes the lock at once or raises DirectoryLocked naming the holder (OSError when
        the directory cannot hold a lock file at all)."""
        if self._fd is not None:
            return self
        os.makedirs(self.directory, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as e:
                    if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                        raise  # e.g. ENOLCK: this file system cannot lock
                    pid, desc = _holder(self.path)
                    raise DirectoryLocked(
                        f"checkpoint directory {self.directory!r} is in use: its lock {self.path!r} is held by "
                        f"{desc}. Two jobs writing one directory overwrite each other's checkpoints: stop that "
                        f"one first, or give this {self.what} another --checkpoint-dir", pid) from None
            info = (f"pid={os.getpid()}\nhost={socket.gethostname()}\n"
                    f"since={time.strftime('%Y-%m-%d %H:%M:%S')}\ncommand={' '.join(sys.argv)[:1000]}\n")
            os.ftruncate(fd, 0)
            os.pwrite(fd, info.encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def release(self) -> None:
        """Gives the lock back (closing the file releases it; the file stays)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.ftruncate(fd, 0)  # no stale holder details for the next reader
            except OSError:
                pass
            os.close(fd)

    def __enter__(self) -> "DirLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_directory(directory: str, what: str = "job") -> Optional[DirLock]:
    """Locks `directory` for this process (a held DirLock), or None when this process's
    supervisor ($COLLFLOW_SUPERVISOR_PID) already holds it for this job.  Raises
    DirectoryLocked when another process holds it."""
    lock = DirLock(directory, what)
    try:
        return lock.acquire()
    except DirectoryLocked as e:
        sup = os.environ.get(SUPERVISOR_ENV, "")
        if sup.isdigit() and e.holder_pid == int(sup):
            return None
        raise


def check_writable(directory: str) -> None:
    """Raises OSError, with a message naming the directory, unless a file can be created and
    removed in it (created first if missing)."""
    try:
        os.makedirs(directory, exist_ok=True)
        probe = os.path.join(directory, f".collflow-write-probe-{os.getpid()}")
        with open(probe, "wb") as f:
            f.write(b"probe")
        os.remove(probe)
    except OSError as e:
        raise OSError(e.errno, f"checkpoint directory {directory!r} is not writable ({e.strerror or e}); "
                               "checkpoints could not be saved: fix its permissions or choose another "
                               "--checkpoint-dir") from None
