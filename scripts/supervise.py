#!/usr/bin/env python
"""Runs a training command and restarts it when it fails, so the job resumes from its checkpoint.

    python scripts/supervise.py --max-restarts 3 --checkpoint-dir run/ckpt -- \\
        mpirun -n 2 python scripts/train.py --checkpoint-dir run/ckpt --steps 10000

The command is started in its own process group.  When it exits with status 0 the supervisor
exits 0.  When it exits non-zero or is killed by a signal (a rank died: mpirun then stops the
others and fails), the supervisor logs why, with the checkpoint the next attempt will resume
from when --checkpoint-dir is given, and starts it again (the training script restores the
latest checkpoint itself), up to --max-restarts times; then it gives up with the command's
status.  Exit status 2 (a usage error: bad arguments, ranks that disagree, a directory in use)
is not retried: the next attempt would fail the same way.  SIGTERM, SIGINT or SIGHUP (the
terminal or ssh session closed) sent to the supervisor end supervision: TERM or INT is passed
to the command's process group, HUP as TERM (so the job checkpoints and stops); no restart
follows, and after --grace seconds the group is killed.

With --checkpoint-dir the supervisor holds that directory's lock (collflow/train/dir_lock.py)
for its whole life, so a second supervisor, or a train.py not started by this one, on the same
directory refuses at once, naming this one's pid.

Each attempt sees COLLFLOW_RESTART_COUNT (0 for the first), COLLFLOW_SUPERVISED=1 and
COLLFLOW_SUPERVISOR_PID (this process, the lock's holder) in its environment.  Log lines go to
stderr, prefixed with "[supervise]".
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import types
from typing import List, Optional, Sequence

INDEX_FILENAME = "checkpoint.json"  # collflow/train/checkpoint_io.py (read here without importing collflow)
USAGE_ERROR = 2  # argparse's status, and train.py's for a job that cannot start: never retried


def _load_dir_lock() -> types.ModuleType:
    """collflow/train/dir_lock.py (standard library only), loaded by path so the supervisor does
    not import collflow and NumPy; the installed package's where this script stands alone."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "collflow", "train",
                        "dir_lock.py")
    if not os.path.exists(path):
        from collflow.train import dir_lock
        return dir_lock
    spec = importlib.util.spec_from_file_location("_collflow_dir_lock", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def log(msg: str) -> None:
    try:
        print(f"[supervise] {msg}", file=sys.stderr, flush=True)
    except OSError:  # the terminal went away (SIGHUP): supervision goes on without a log
        pass


def describe_status(rc: int) -> str:
    """'exited with status 3', 'killed by signal SIGKILL (9)', ..."""
    if rc < 0:
        return f"killed by signal {_signame(-rc)} ({-rc})"
    if rc > 128 and rc - 128 < 65:
        # a shell or mpirun reports a child killed by signal N as 128 + N
        return f"exited with status {rc} (128 + {_signame(rc - 128)}: stopped by a signal)"
    return f"exited with status {rc}"


def _signame(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def latest_checkpoint(directory: Optional[str]) -> Optional[str]:
    """'<path> (step N)' of the newest checkpoint listed in the directory's index, or None."""
    if not directory:
        return None
    try:
        with open(os.path.join(directory, INDEX_FILENAME)) as f:
            doc = json.load(f)
        for e in reversed(doc.get("checkpoints", [])):
            p = os.path.join(directory, e["path"])
            if os.path.exists(p):
                return f"{p} (step {e.get('step')})"
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


class Supervisor:
    """Starts `cmd`, waits, restarts on failure; forwards SIGTERM/SIGINT (SIGHUP as SIGTERM)
    and then stops.  Holds `checkpoint_dir`'s lock while it runs."""

    def __init__(self, cmd: Sequence[str], max_restarts: int, restart_delay: float, grace: float,
                 checkpoint_dir: Optional[str] = None):
        self.cmd = list(cmd)
        self.max_restarts = max_restarts
        self.restart_delay = restart_delay
        self.grace = grace
        self.checkpoint_dir = checkpoint_dir
        self.proc: Optional[subprocess.Popen] = None
        self.stop_signal: Optional[int] = None

    def _on_signal(self, signum: int, frame: object) -> None:
        first = self.stop_signal is None
        self.stop_signal = signum
        # a hang-up is no request to die at once: the job checkpoints and stops, as on TERM
        fwd = signal.SIGTERM if signum == signal.SIGHUP else signum
        p = self.proc
        if p is not None and p.poll() is None:
            if first:
                log(f"received {_signame(signum)}: passing " + ("it" if fwd == signum else _signame(fwd))
                    + " to the command and stopping (no restart)")
            self._signal_group(p, fwd)

    @staticmethod
    def _signal_group(p: subprocess.Popen, signum: int) -> None:
        try:
            os.killpg(p.pid, signum)
        except (ProcessLookupError, PermissionError):
            try:
                p.send_signal(signum)
            except ProcessLookupError:
                pass

    def _wait(self, p: subprocess.Popen) -> int:
        while True:
            try:
                rc = p.wait(timeout=None if self.stop_signal is None else self.grace)
                return rc
            except subprocess.TimeoutExpired:
                log(f"the command did not stop within {self.grace:g} s of {_signame(self.stop_signal or 15)}; "
                    "killing its process group")
                self._signal_group(p, signal.SIGKILL)
                return p.wait()

    def run(self) -> int:
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, self._on_signal)
        lock = None
        if self.checkpoint_dir:
            dir_lock = _load_dir_lock()
            try:
                lock = dir_lock.DirLock(self.checkpoint_dir, "supervisor").acquire()
            except dir_lock.DirectoryLocked as e:
                log(e.message)
                return USAGE_ERROR
            except OSError as e:
                log(f"cannot lock checkpoint directory {self.checkpoint_dir!r} ({e}); going on without the lock")
        try:
            return self._supervise()
        finally:
            if lock is not None:
                lock.release()

    def _supervise(self) -> int:
        attempt = 0
        while True:
            env = dict(os.environ, COLLFLOW_RESTART_COUNT=str(attempt), COLLFLOW_SUPERVISED="1",
                       COLLFLOW_SUPERVISOR_PID=str(os.getpid()))
            resume = latest_checkpoint(self.checkpoint_dir)
            log(f"attempt {attempt + 1} of {self.max_restarts + 1}: {' '.join(self.cmd)}"
                + (f" (resuming from {resume})" if resume else ""))
            t0 = time.monotonic()
            try:
                self.proc = subprocess.Popen(self.cmd, env=env, start_new_session=True)
            except OSError as e:
                log(f"cannot start the command: {e}")
                return 127
            if self.stop_signal is not None:  # the signal came while the command was starting
                self._signal_group(self.proc, self.stop_signal)
            rc = self._wait(self.proc)
            took = time.monotonic() - t0
            self.proc = None
            if rc == 0:
                log(f"the command finished successfully after {took:.1f} s"
                    + (f" and {attempt} restart(s)" if attempt else ""))
                return 0
            why = describe_status(rc)
            if self.stop_signal is not None:
                log(f"the command {why} after {_signame(self.stop_signal)}; stopping")
                return 128 + self.stop_signal
            if rc == USAGE_ERROR:
                log(f"the command {why} after {took:.1f} s: a usage error (bad arguments or settings, ranks that "
                    "disagree, a directory in use); not restarting, the next attempt would fail the same way")
                return rc
            if attempt >= self.max_restarts:
                log(f"the command {why} after {took:.1f} s; giving up after {attempt} restart(s) "
                    f"(--max-restarts {self.max_restarts})")
                return rc if rc > 0 else 128 - rc
            attempt += 1
            ck = latest_checkpoint(self.checkpoint_dir)
            delay = min(self.restart_delay * (2 ** (attempt - 1)), 60.0) if self.restart_delay > 0 else 0.0
            log(f"the command {why} after {took:.1f} s; restart {attempt} of {self.max_restarts} "
                + (f"in {delay:.1f} s " if delay else "")
                + (f"from {ck}" if ck else ("with no checkpoint yet" if self.checkpoint_dir else "")))
            end = time.monotonic() + delay
            while self.stop_signal is None and time.monotonic() < end:
                time.sleep(min(0.1, end - time.monotonic()))
            if self.stop_signal is not None:
                log(f"received {_signame(self.stop_signal)} while waiting to restart; stopping")
                return 128 + self.stop_signal


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="supervise.py", description=__doc__.splitlines()[0],
                                usage="%(prog)s [options] -- command [args ...]")
    p.add_argument("--max-restarts", type=int, default=3, help="restarts after failures (default 3)")
    p.add_argument("--restart-delay", type=float, default=1.0,
                   help="seconds before the first restart, doubling each time, at most 60 (default 1)")
    p.add_argument("--grace", type=float, default=60.0,
                   help="seconds the command has to stop after a forwarded SIGTERM before it is killed (default 60)")
    p.add_argument("--checkpoint-dir", default=None,
                   help="the job's checkpoint directory: locked against a second job while supervising, and "
                        "named in reports of what each restart resumes from")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command to run (after --)")
    a = p.parse_args(argv)
    cmd: List[str] = list(a.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        p.error("no command given; usage: supervise.py [options] -- command [args ...]")
    if a.max_restarts < 0:
        p.error(f"--max-restarts must be >= 0, got {a.max_restarts}")
    if a.restart_delay < 0 or a.grace <= 0:
        p.error("--restart-delay must be >= 0 and --grace > 0")
    a.command = cmd
    return a


def main(argv: Optional[Sequence[str]] = None) -> int:
    a = parse_args(argv)
    return Supervisor(a.command, a.max_restarts, a.restart_delay, a.grace, a.checkpoint_dir).run()


if __name__ == "__main__":
    sys.exit(main())
