"""SessionRunHook and TensorFlow 1.x's basic hooks, for cf.train.MonitoredSession.

A hook sees the session's life: `begin()` (the graph may still change), `after_create_session`,
then around every `run`: `before_run(run_context)` may return SessionRunArgs whose fetches
are run together with the caller's, and `after_run(run_context, run_values)` receives their
values in `run_values.results`; `run_context.request_stop()` ends the loop
(`should_stop()` turns true).  `end(session)` runs when the session closes normally (also
when the input ran out with OutOfRangeError).

Hooks that track the global step (StopAtStepHook, CheckpointSaverHook, SummarySaverHook,
StepCounterHook) need one (cf.train.get_or_create_global_step()); they fetch it in each
run and, when a trigger is near, read it once more, so they act on the step the run ended
with, as in TensorFlow 1.x.  Logging goes through cf.logging (INFO level).
"""
from __future__ import annotations

import collections
import os
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from ..errors import CollflowError
from ..graph import graph as _g
from ..platform import tf_logging as logging
from ..summary.proto import SessionLog, Summary, write_graph

# collection: how much one train op run may add to the global step where that is not 1
STEP_INCREMENTS = "collflow_global_step_increments"
from ..summary.writer import FileWriterCache
from .checkpoint_io import process_rank_and_size
from .checkpoint_manager import CheckpointManager
from .global_step import get_global_step

__all__ = ["SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues", "SecondOrStepTimer",
           "StopAtStepHook", "LoggingTensorHook", "CheckpointSaverHook", "CheckpointSaverListener",
           "SummarySaverHook", "StepCounterHook", "NanTensorHook", "NanLossDuringTrainingError", "FinalOpsHook",
           "FeedFnHook", "GlobalStepWaiterHook"]

# the clock of the timers (replaceable in tests)
_clock = time.monotonic


class SessionRunHook:
    """Base class of the hooks: every method does nothing unless overridden."""

    def begin(self) -> None:
        """Called once before the session is created; the graph can still get ops."""

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Called once the session exists and its variables are initialized or restored.
        `coord` is None in collflow (queue runners are stopped by closing the session)."""

    def before_run(self, run_context: "SessionRunContext") -> Optional["SessionRunArgs"]:
        """Returns SessionRunArgs to add fetches/feeds to the coming run, or None."""
        return None

    def after_run(self, run_context: "SessionRunContext", run_values: "SessionRunValues") -> None:
        """Receives the values of what before_run asked for (run_values.results)."""

    def end(self, session: Any) -> None:
        """Called when the session closes without an error (OutOfRangeError counts as none)."""


class SessionRunArgs(collections.namedtuple("SessionRunArgs", ["fetches", "feed_dict", "options"])):
    """What a hook adds to a run: fetches (any nesting Session.run takes), feed_dict, RunOptions."""

    def __new__(cls, fetches: Any, feed_dict: Optional[dict] = None, options: Any = None) -> "SessionRunArgs":
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunValues(collections.namedtuple("SessionRunValues", ["results", "options", "run_metadata"])):
    """What after_run gets: the values of the hook's fetches, the run's options and metadata."""


class SessionRunContext:
    """The run in progress: the caller's arguments, the raw session, and a way to stop the loop."""

    def __init__(self, original_args: SessionRunArgs, session: Any):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self) -> SessionRunArgs:
        return self._original_args

    @property
    def session(self) -> Any:
        return self._session

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        """Makes the MonitoredSession's should_stop() true after this run."""
        self._stop_requested = True


class SecondOrStepTimer:
    """Triggers every `every_secs` seconds or every `every_steps` steps (exactly one of them)."""

    def __init__(self, every_secs: Optional[float] = None, every_steps: Optional[int] = None):
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")
        self._every_secs = every_secs
        self._every_steps = every_steps
        self.reset()

    def reset(self) -> None:
        self._last_step: Optional[int] = None
        self._last_time: Optional[float] = None

    def should_trigger_for_step(self, step: int) -> bool:
        """True at the first call, then once the interval since the last trigger has passed."""
        if self._last_step is None:
            return True
        if self._last_step == step:
            return False
        if self._every_secs is not None and _clock() >= self._last_time + self._every_secs:
            return True
        if self._every_steps is not None and step >= self._last_step + self._every_steps:
            return True
        return False

    def update_last_triggered_step(self, step: int) -> tuple:
        """Records a trigger at `step`; returns (seconds, steps) since the previous one (None at first)."""
        now = _clock()
        if self._last_time is None:
            elapsed = (None, None)
        else:
            elapsed = (now - self._last_time, step - self._last_step)
        self._last_time, self._last_step = now, step
        return elapsed

    def last_triggered_step(self) -> Optional[int]:
        return self._last_step


class _NeverTriggerTimer(SecondOrStepTimer):
    def __init__(self) -> None:
        self.reset()

    def should_trigger_for_step(self, step: int) -> bool:
        return False


def _global_step_for(hook: str) -> Any:
    gs = get_global_step()
    if gs is None:
        raise RuntimeError(f"Global step should be created to use {hook}.")
    return gs


# -- stopping ---------------------------------------------------------------------------------------

class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches `last_step` (or `num_steps` past the step
    the session started at)."""

    def __init__(self, num_steps: Optional[int] = None, last_step: Optional[int] = None):
        if (num_steps is None) == (last_step is None):
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and num_steps < 0:
            raise ValueError("num_steps must be non-negative.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self) -> None:
        self._global_step = _global_step_for("StopAtStepHook")
        # a TF1 cluster's replicated asynchronous step moves the step once per worker
        self._per_run = max([1] + [int(n) for n in _g.get_default_graph().get_collection(STEP_INCREMENTS)])

    def after_create_session(self, session: Any, coord: Any) -> None:
        step = int(session.run(self._global_step))
        if self._last_step is None:
            self._last_step = step + self._num_steps

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if int(run_values.results) + self._per_run >= self._last_step:
            # the fetched value may predate this run's increment: look again before stopping
            if int(run_context.session.run(self._global_step)) >= self._last_step:
                run_context.request_stop()


class GlobalStepWaiterHook(SessionRunHook):
    """Delays this worker's first run until the global step reaches wait_until_step (TF1's:
    workers that start once the chief's early steps are done)."""

    def __init__(self, wait_until_step: int):
        self._wait_until_step = int(wait_until_step)

    def begin(self) -> None:
        self._worker_is_started = False
        self._global_step = _global_step_for("GlobalStepWaiterHook")

    def before_run(self, run_context: SessionRunContext) -> None:
        if self._worker_is_started or self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        last_logged = None
        while not getattr(run_context, "stop_requested", False):
            step = int(run_context.session.run(self._global_step))
            if step >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if step != last_logged:
                logging.info("Waiting for global step %d before starting training (now %d).",
                             self._wait_until_step, step)
                last_logged = step
            time.sleep(0.5)
        return None


class NanLossDuringTrainingError(CollflowError, RuntimeError):
    """The loss NanTensorHook watches became NaN."""

    def __init__(self, message: str = "NaN loss during training."):
        super().__init__(message)


class NanTensorHook(SessionRunHook):
    """Fails (NanLossDuringTrainingError) or requests a stop when `loss_tensor` is NaN."""

    def __init__(self, loss_tensor: Any, fail_on_nan_loss: bool = True):
        self._loss = loss_tensor
        self._fail = fail_on_nan_loss

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._loss)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if np.isnan(run_values.results).any():
            msg = "Model diverged with loss = NaN."
            if self._fail:
                logging.error(msg)
                raise NanLossDuringTrainingError()
            logging.warning(msg)
            run_context.request_stop()


# -- logging ------------------------------------------------------------------------------------------

class LoggingTensorHook(SessionRunHook):
    """Logs the values of `tensors` (a dict tag -> tensor or name, or a list of tensors or
    names) every `every_n_iter` runs or every `every_n_secs` seconds, and/or at the end.

    Lines read "tag = value, ... (0.123 sec)"; `formatter(dict tag -> value)` replaces them.
    """

    def __init__(self, tensors: Any, every_n_iter: Optional[int] = None, every_n_secs: Optional[float] = None,
                 at_end: bool = False, formatter: Optional[Callable[[Dict[Any, Any]], str]] = None):
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if isinstance(tensors, dict):
            self._tag_order = sorted(tensors.keys(), key=str)
            self._tensors = dict(tensors)
        else:
            items = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
            tags = [t if isinstance(t, str) else getattr(t, "name", str(t)) for t in items]
            self._tag_order = tags
            self._tensors = dict(zip(tags, items))
        self._timer = _NeverTriggerTimer() if only_at_end else SecondOrStepTimer(every_n_secs, every_n_iter)
        self._log_at_end = at_end
        self._formatter = formatter

    def begin(self) -> None:
        self._timer.reset()
        self._iter_count = 0
        g = _g.get_default_graph()
        self._current = {tag: g.as_graph_element(t) for tag, t in self._tensors.items()}

    def before_run(self, run_context: SessionRunContext) -> Optional[SessionRunArgs]:
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current) if self._should_trigger else None

    def _log_tensors(self, values: Dict[Any, Any]) -> None:
        elapsed, _ = self._timer.update_last_triggered_step(self._iter_count)
        with np.printoptions(suppress=True):
            if self._formatter is not None:
                logging.info(self._formatter(values))
                return
            line = ", ".join(f"{tag} = {values[tag]}" for tag in self._tag_order)
            if elapsed is not None:
                logging.info("%s (%.3f sec)", line, elapsed)
            else:
                logging.info("%s", line)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session: Any) -> None:
        if self._log_at_end:
            self._log_tensors(session.run(self._current))


class StepCounterHook(SessionRunHook):
    """Logs (and, with an output_dir or summary_writer, writes the summary
    "global_step/sec") the training speed every `every_n_steps` steps or `every_n_secs` seconds."""

    def __init__(self, every_n_steps: Optional[int] = 100, every_n_secs: Optional[float] = None,
                 output_dir: Optional[str] = None, summary_writer: Any = None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._writer = summary_writer
        self._output_dir = output_dir
        self._last_global_step: Optional[int] = None

    def begin(self) -> None:
        if self._writer is None and self._output_dir:
            self._writer = FileWriterCache.get(self._output_dir)
        self._global_step = _global_step_for("StepCounterHook")
        self._tag = self._global_step.op.name + "/sec"

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        stale = int(run_values.results)
        if self._timer.should_trigger_for_step(stale + 1):
            step = int(run_context.session.run(self._global_step))
            if self._timer.should_trigger_for_step(step):
                secs, steps = self._timer.update_last_triggered_step(step)
                if secs is not None and secs > 0:
                    rate = steps / secs
                    if self._writer is not None:
                        self._writer.add_summary(Summary(value=[Summary.Value(tag=self._tag, simple_value=rate)]),
                                                 step)
                    logging.info("%s: %g", self._tag, rate)
        if stale == self._last_global_step:
            logging.log_first_n(
                logging.WARN, "It seems that global step (cf.train.get_global_step) has not been increased. "
                "Current value (could be stable): %s vs previous value: %s. You could increase the global step "
                "by passing cf.train.get_global_step() to Optimizer.apply_gradients or Optimizer.minimize.",
                5, stale, self._last_global_step)
        self._last_global_step = stale


# -- summaries -----------------------------------------------------------------------------------------

class SummarySaverHook(SessionRunHook):
    """Runs the summary op every `save_steps` steps or `save_secs` seconds and writes its
    value to `output_dir` (or `summary_writer`) at the global step; a SessionLog START
    marks the session's first step.  Exactly one of scaffold (its summary_op) and summary_op."""

    def __init__(self, save_steps: Optional[int] = None, save_secs: Optional[float] = None,
                 output_dir: Optional[str] = None, summary_writer: Any = None, scaffold: Any = None,
                 summary_op: Any = None):
        if (scaffold is None) + (summary_op is None) != 1:
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op = summary_op
        self._scaffold = scaffold
        self._writer = summary_writer
        self._output_dir = output_dir
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self) -> None:
        if self._writer is None and self._output_dir:
            self._writer = FileWriterCache.get(self._output_dir)
        self._next_step: Optional[int] = None
        self._global_step = _global_step_for("SummarySaverHook")

    def _summary_ops(self) -> Optional[List[Any]]:
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return None
        return list(op) if isinstance(op, (list, tuple)) else [op]

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        self._request = self._next_step is None or self._timer.should_trigger_for_step(self._next_step)
        requests: Dict[str, Any] = {"global_step": self._global_step}
        ops = self._summary_ops() if self._request else None
        if ops:
            requests["summary"] = ops
        return SessionRunArgs(requests)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if self._writer is None:
            return
        step = int(run_values.results["global_step"]) + 1
        if self._next_step is None or self._request:
            step = int(run_context.session.run(self._global_step))
        if self._next_step is None:
            self._writer.add_session_log(SessionLog(status=SessionLog.START), step)
        if self._request:
            self._timer.update_last_triggered_step(step)
            for s in run_values.results.get("summary", ()):
                self._writer.add_summary(s, step)
        self._next_step = step + 1

    def end(self, session: Any) -> None:
        if self._writer is not None:
            self._writer.flush()


# -- checkpoints ---------------------------------------------------------------------------------------

class CheckpointSaverListener:
    """Called around the saves of a CheckpointSaverHook; after_save returning True stops training."""

    def begin(self) -> None:
        pass

    def before_save(self, session: Any, global_step_value: int) -> None:
        pass

    def after_save(self, session: Any, global_step_value: int) -> Optional[bool]:
        pass

    def end(self, session: Any, global_step_value: int) -> None:
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint every `save_steps` steps or `save_secs` seconds, when the session
    starts, and at the end, as `<checkpoint_dir>/<checkpoint_basename>-<step>.h5` through
    cf.train.CheckpointManager (HDF5, atomic; `saver` or the scaffold's Saver chooses what
    is saved).  Only rank 0 writes.  The graph goes to the directory's event file, and each
    save is marked there with a SessionLog CHECKPOINT."""

    def __init__(self, checkpoint_dir: str, save_secs: Optional[float] = None, save_steps: Optional[int] = None,
                 saver: Any = None, checkpoint_basename: str = "model.ckpt", scaffold: Any = None,
                 listeners: Optional[Sequence[CheckpointSaverListener]] = None):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._dir = checkpoint_dir
        self._saver = saver
        self._scaffold = scaffold
        self._basename = checkpoint_basename
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])
        self._manager: Optional[CheckpointManager] = None

    def begin(self) -> None:
        self._is_chief = process_rank_and_size()[0] == 0  # only rank 0 writes (checkpoints and events)
        self._writer = FileWriterCache.get(self._dir) if self._is_chief else None
        self._global_step = _global_step_for("CheckpointSaverHook")
        for lst in self._listeners:
            lst.begin()

    def after_create_session(self, session: Any, coord: Any) -> None:
        # the scaffold's saver exists once the scaffold is finalized, after every begin()
        saver = self._saver if self._saver is not None else getattr(self._scaffold, "saver", None)
        # retention follows the Saver's max_to_keep, as in TensorFlow (default 5)
        keep = getattr(saver, "_max_to_keep", 5) if saver is not None else 5
        self._manager = CheckpointManager(self._dir, max_to_keep=keep, checkpoint_name=self._basename, saver=saver)
        if self._writer is not None:
            self._writer.add_graph(session.graph)
        if self._is_chief:
            # TF1's hook also writes the (now final) graph as <checkpoint_dir>/graph.pbtxt
            write_graph(session.graph, self._dir, "graph.pbtxt")
        step = int(session.run(self._global_step))
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if self._timer.should_trigger_for_step(int(run_values.results) + 1):
            step = int(run_context.session.run(self._global_step))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session: Any) -> None:
        step = int(session.run(self._global_step))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for lst in self._listeners:
            lst.end(session, step)
        if self._manager is not None:
            self._manager.close()

    def _save(self, session: Any, step: int) -> bool:
        """Saves at `step`; True when a listener asks to stop."""
        assert self._manager is not None
        logging.info("Saving checkpoints for %d into %s.", step, os.path.join(self._dir, self._basename))
        for lst in self._listeners:
            lst.before_save(session, step)
        path = self._manager.save(session, step)
        if self._writer is not None:
            self._writer.add_session_log(SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=path), step)
        stop = False
        for lst in self._listeners:
            if lst.after_save(session, step):
                logging.info("A CheckpointSaverListener requested that training be stopped. listener: %s", lst)
                stop = True
        return stop


# -- small ones ----------------------------------------------------------------------------------------

class FinalOpsHook(SessionRunHook):
    """Runs `final_ops` when the session ends; their values are in `final_ops_values`."""

    def __init__(self, final_ops: Any, final_ops_feed_dict: Optional[dict] = None):
        self._final_ops = final_ops
        self._feed = final_ops_feed_dict
        self._values: Any = None

    @property
    def final_ops_values(self) -> Any:
        return self._values

    def end(self, session: Any) -> None:
        if self._final_ops is not None:
            self._values = session.run(self._final_ops, feed_dict=self._feed)


class FeedFnHook(SessionRunHook):
    """Adds `feed_fn()` (a feed_dict) to every run."""

    def __init__(self, feed_fn: Callable[[], dict]):
        self.feed_fn = feed_fn

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())
