"""Abort every rank when one rank dies of an uncaught exception.

Without this, the other ranks of an MPI job wait forever in their next collective for the
rank that died.  `install_abort_handler(comm)` replaces sys.excepthook: it prints the
traceback with every line prefixed by "[rank R] " (so the culprit is visible in the merged
output of mpirun) and calls MPI_Abort, which ends the whole job with a non-zero status.
"""
from __future__ import annotations

import sys
import threading
import traceback
from types import TracebackType
from typing import Any, Optional, Type

__all__ = ["install_abort_handler", "uninstall_abort_handler", "format_rank_traceback"]

_installed: Optional[dict] = None


def format_rank_traceback(rank: int, etype: Type[BaseException], value: BaseException,
                          tb: Optional[TracebackType]) -> str:
    """The traceback with every line prefixed by '[rank R] '."""
    text = "".join(traceback.format_exception(etype, value, tb)).rstrip("\n")
    prefix = f"[rank {rank}] "
    return "".join(prefix + line + "\n" for line in text.split("\n"))


def install_abort_handler(comm: Any, threads: bool = False) -> None:
    """On an uncaught exception: print it as '[rank R] ...' and abort all ranks of `comm`.

    With `threads=True`, an uncaught exception in any thread aborts too (a dead worker
    thread would otherwise leave its collectives unissued and the job waiting).
    """
    global _installed
    uninstall_abort_handler()
    prev_hook = sys.excepthook
    prev_thread_hook = threading.excepthook

    def _die(etype: Type[BaseException], value: BaseException, tb: Optional[TracebackType], where: str) -> None:
        try:
            text = format_rank_traceback(comm.rank, etype, value, tb)
            sys.stdout.flush()
            sys.stderr.write(text + f"[rank {comm.rank}] uncaught exception{where}: aborting all "
                             f"{comm.size} ranks\n")
            sys.stderr.flush()
        finally:
            comm.abort(1)

    def hook(etype: Type[BaseException], value: BaseException, tb: Optional[TracebackType]) -> None:
        _die(etype, value, tb, "")

    def thread_hook(args: Any) -> None:
        if args.exc_type is SystemExit:
            return
        _die(args.exc_type, args.exc_value, args.exc_traceback,
             f" in thread {args.thread.name if args.thread is not None else '?'}")

    sys.excepthook = hook
    if threads:
        threading.excepthook = thread_hook
    _installed = {"hook": hook, "prev": prev_hook, "thread_hook": thread_hook if threads else None,
                  "prev_thread": prev_thread_hook}


def uninstall_abort_handler() -> None:
    """Restores the hooks that were there before install_abort_handler()."""
    global _installed
    if _installed is None:
        return
    if sys.excepthook is _installed["hook"]:
        sys.excepthook = _installed["prev"]
    if _installed["thread_hook"] is not None and threading.excepthook is _installed["thread_hook"]:
        threading.excepthook = _installed["prev_thread"]
    _installed = None


def is_installed() -> bool:
    return _installed is not None and sys.excepthook is _installed["hook"]
