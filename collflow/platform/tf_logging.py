"""`tf.logging` (TensorFlow 1.x) on Python's logging.

Everything logs to the logger "collflow" (TensorFlow's is "tensorflow"), the parent of
collflow's own loggers ("collflow.checkpoint", ...), so `set_verbosity(INFO)` shows those
too.  As in TensorFlow 1.x the default verbosity is WARN, and on first use a stderr handler
with `logging.BASIC_FORMAT` is attached unless the root logger already has handlers (then
records only propagate to them, which avoids printing each line twice).  Under a launcher
with more than one rank every line that handler prints carries `[rank N]`.
"""
from __future__ import annotations

import logging as _logging
import os
import sys
import threading
from typing import Any, Dict, Tuple

__all__ = ["DEBUG", "INFO", "WARN", "WARNING", "ERROR", "FATAL", "get_logger", "set_verbosity", "get_verbosity",
           "log", "debug", "info", "warn", "warning", "error", "fatal", "vlog", "log_if", "log_every_n",
           "log_first_n", "flush", "launcher_rank_and_size"]

DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARN
WARNING = _logging.WARNING
ERROR = _logging.ERROR
FATAL = _logging.FATAL

LOGGER_NAME = "collflow"

_lock = threading.Lock()
_logger: Any = None
# call site (file, line) -> how many times it was reached, for log_every_n / log_first_n
_counts: Dict[Tuple[str, int], int] = {}


def launcher_rank_and_size() -> Tuple[int, int]:
    """(rank, size) announced by the MPI launcher or Slurm in the environment, else (0, 1)."""
    for r, s in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"),
                 ("PMIX_RANK", "PMIX_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS")):
        if os.environ.get(r, "").isdigit() and os.environ.get(s, "").isdigit():
            return int(os.environ[r]), int(os.environ[s])
    return 0, 1


def _formatter() -> _logging.Formatter:
    """BASIC_FORMAT, with "[rank N] " before the message when the job has several ranks."""
    rank, size = launcher_rank_and_size()
    prefix = f"[rank {rank}] " if size > 1 else ""
    return _logging.Formatter(f"%(levelname)s:%(name)s:{prefix}%(message)s")


def get_logger() -> _logging.Logger:
    """collflow's logger (TensorFlow's `tf.get_logger()`), configured on first use."""
    global _logger
    if _logger is not None:
        return _logger
    with _lock:
        if _logger is None:
            lg = _logging.getLogger(LOGGER_NAME)
            if not _logging.getLogger().handlers and not lg.handlers:
                h = _logging.StreamHandler(sys.stderr)
                h.setFormatter(_formatter())
                lg.addHandler(h)
            if lg.level == _logging.NOTSET:
                lg.setLevel(WARN)  # TensorFlow 1.x's default verbosity
            _logger = lg
    return _logger


def set_verbosity(v: int) -> None:
    """Sets the threshold: DEBUG, INFO, WARN, ERROR or FATAL (or any logging level number)."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"set_verbosity takes a level such as cf.logging.INFO (an int), got {v!r}")
    get_logger().setLevel(v)


def get_verbosity() -> int:
    """The effective threshold of collflow's logger."""
    return get_logger().getEffectiveLevel()


# stacklevel=2 (3 from the counting helpers) makes %(filename)s/%(lineno)d name the caller,
# as TensorFlow's logger does by overriding findCaller
def log(level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().log(level, msg, *args, stacklevel=2, **kwargs)


def debug(msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().debug(msg, *args, stacklevel=2, **kwargs)


def info(msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().info(msg, *args, stacklevel=2, **kwargs)


def warning(msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().warning(msg, *args, stacklevel=2, **kwargs)


warn = warning


def error(msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().error(msg, *args, stacklevel=2, **kwargs)


def fatal(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Logs at FATAL (as TensorFlow 1.x's tf.logging.fatal, this does not exit)."""
    get_logger().fatal(msg, *args, stacklevel=2, **kwargs)


def vlog(level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
    """Logs at `level` (TensorFlow's verbose-log call; here a plain log call)."""
    get_logger().log(level, msg, *args, stacklevel=2, **kwargs)


def log_if(level: int, msg: Any, condition: Any, *args: Any) -> None:
    """Logs `msg % args` at `level` when `condition` is true."""
    if condition:
        get_logger().log(level, msg, *args, stacklevel=2)


def _count_call_site() -> int:
    """How many times the caller's caller reached this line before (0 the first time)."""
    f = sys._getframe(2)
    key = (f.f_code.co_filename, f.f_lineno)
    with _lock:
        n = _counts.get(key, 0)
        _counts[key] = n + 1
    return n


def log_every_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Logs on the 1st, (n+1)th, (2n+1)th ... call from this line."""
    if int(n) < 1:
        raise ValueError(f"log_every_n needs n >= 1, got {n}")
    if _count_call_site() % int(n) == 0:
        get_logger().log(level, msg, *args, stacklevel=2)


def log_first_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Logs on the first n calls from this line only."""
    if _count_call_site() < int(n):
        get_logger().log(level, msg, *args, stacklevel=2)


def flush() -> None:
    """Flushes the handlers of collflow's logger."""
    for h in get_logger().handlers:
        h.flush()
