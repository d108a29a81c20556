"""TF1's `tf.train.ProfilerHook`: every `save_steps` steps or `save_secs` seconds, traces one
run (RunOptions FULL_TRACE) and writes its Chrome trace (runtime/tracing.py's Timeline) to
`output_dir/timeline-<global step>.json`, as TensorFlow's.  The session's first step is
never traced (TF's rule); no run metadata goes to a summary file (collflow's FileWriter has
no add_run_metadata)."""
from __future__ import annotations

import os
from typing import Any, Optional

from ..runtime.tracing import RunOptions, Timeline
from .hooks import SecondOrStepTimer, SessionRunArgs, SessionRunContext, SessionRunHook, SessionRunValues
from .hooks import _global_step_for

__all__ = ["ProfilerHook"]


class ProfilerHook(SessionRunHook):
    """Writes a Chrome-trace timeline of one step every save_steps steps or save_secs secs."""

    def __init__(self, save_steps: Optional[int] = None, save_secs: Optional[float] = None, output_dir: str = "",
                 show_dataflow: bool = True, show_memory: bool = False):
        self._output_file = os.path.join(output_dir, "timeline-{}.json")
        self._show_dataflow = show_dataflow
        self._show_memory = show_memory
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self) -> None:
        self._next_step: Optional[int] = None
        self._global_step = _global_step_for("ProfilerHook")

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        self._request = self._next_step is not None and self._timer.should_trigger_for_step(self._next_step)
        opts = RunOptions(trace_level=RunOptions.FULL_TRACE) if self._request else None
        return SessionRunArgs({"global_step": self._global_step}, options=opts)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        stale = int(run_values.results["global_step"])
        if self._next_step is None:
            # the first run only starts the timer
            self._timer.update_last_triggered_step(stale)
        step = stale + 1
        if self._request:
            step = int(run_context.session.run(self._global_step))
            self._timer.update_last_triggered_step(step)
            self._save(step, run_values.run_metadata)
        self._next_step = step + 1

    def _save(self, step: int, run_metadata: Any) -> None:
        path = self._output_file.format(step)
        d = os.path.dirname(path)
        if d:
            os.makedirs(d, exist_ok=True)
        trace = Timeline(run_metadata.step_stats).generate_chrome_trace_format(
            show_dataflow=self._show_dataflow, show_memory=self._show_memory)
        with open(path, "w") as f:
            f.write(trace)
