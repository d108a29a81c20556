"""Save on SIGTERM, then exit: what a preempted or stopped training job needs.

A signal can arrive in the middle of a step, when some variables are updated and others not
yet, so the handler only records it; the training loop's next `CheckpointManager.maybe_save`
(after the step) writes a synchronous checkpoint, waits for any asynchronous one, and exits
with status 128 + signal number (143 for SIGTERM), which tells a supervisor the job was
stopped, not finished.  A second signal before that exits at once by the signal's default
action.
"""
from __future__ import annotations

import logging
import signal
import sys
import threading
from typing import Any, Dict, Optional, Sequence

__all__ = ["PreemptionHandler"]

log = logging.getLogger("collflow.checkpoint")


class PreemptionHandler:
    """Records SIGTERM (or `signals`) so the manager can save at a step boundary and exit."""

    def __init__(self, manager: Any, signals: Optional[Sequence[int]] = None, exit_code: Optional[int] = None):
        self.manager = manager
        self.signals = tuple(signals) if signals else (signal.SIGTERM,)
        self.exit_code = exit_code
        self.signum: Optional[int] = None
        self._previous: Dict[int, Any] = {}

    @property
    def requested(self) -> bool:
        """Whether a signal arrived and the job should save and stop."""
        return self.signum is not None

    def install(self) -> "PreemptionHandler":
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("signal handlers can only be installed from the main thread")
        for s in self.signals:
            self._previous[s] = signal.signal(s, self._on_signal)
        return self

    def uninstall(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for s, prev in self._previous.items():
            signal.signal(s, prev if prev is not None else signal.SIG_DFL)
        self._previous = {}

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.signum is not None:
            # asked twice: stop waiting for a step boundary
            log.warning("second %s: exiting without a checkpoint", signal.Signals(signum).name)
            self.uninstall()
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)
            return
        self.signum = signum
        log.warning("received %s: saving a checkpoint after the current step, then exiting",
                    signal.Signals(signum).name)

    def save_and_exit(self, sess: Any, step: int, pipeline: Any = None) -> None:
        """Writes a synchronous checkpoint of `step` and raises SystemExit(128 + signal)."""
        signum = self.signum or signal.SIGTERM
        path = self.manager.save(sess, step, pipeline, async_save=False)
        self.manager.close()
        code = self.exit_code if self.exit_code is not None else 128 + int(signum)
        log.warning("saved %s at step %d after %s; exiting with status %d", path, step,
                    signal.Signals(signum).name, code)
        sys.stderr.flush()
        raise SystemExit(code)

    def __enter__(self) -> "PreemptionHandler":
        return self.install()

    def __exit__(self, *exc: Any) -> None:
        self.uninstall()
