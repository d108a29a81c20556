"""tf.data.experimental.CheckpointInputPipelineHook: the input pipelines' positions of an
Estimator's training, saved beside its model checkpoints so a resumed run continues the data
where the saved one stopped.

As TensorFlow 1.15's hook: it saves the iterators of the graph's "iterators" collection (every
iterator collflow makes, the one an Estimator makes of input_fn's dataset included), and
nothing else, into `<model_dir>/input.ckpt-<step>` (`input_<task type>_<task id>.ckpt` when the
job has several workers; `input_worker_<rank>.ckpt` under several collflow ranks: each reads its
own part of the data), at the estimator's RunConfig save_checkpoints_steps/secs, when
training starts (when there is nothing to restore) and at the end.  Before the first step of
a session it restores the newest such checkpoint, if any (not at session creation: an
initializable iterator is started by then).  The files are collflow's HDF5 checkpoints
(iterator_state.py holds the format); they are kept out of the directory's index, so the
Estimator's latest_checkpoint() still finds the model's, and the newest 5 are kept (TF's Saver
default).
"""
from __future__ import annotations

import os
from typing import Any, List, Optional

from ..graph import graph as _g
from ..platform import tf_logging as logging
from ..train import checkpoint_io as _cio
from ..train.hooks import SecondOrStepTimer, SessionRunArgs, SessionRunHook, _global_step_for
from ..train.saver import Saver, remove_checkpoint
from .iterator_ops import GLOBAL_ITERATORS
from .iterator_state import IteratorSaveable

__all__ = ["CheckpointInputPipelineHook"]

_MAX_TO_KEEP = 5  # tf.train.Saver's default, which TF's hook uses


class CheckpointInputPipelineHook(SessionRunHook):
    """Checkpoints the input pipelines' state every N steps or seconds (the estimator's
    RunConfig save_checkpoints_steps / save_checkpoints_secs) into `<model_dir>/input.ckpt*`,
    and restores the newest such checkpoint before the first step."""

    def __init__(self, estimator: Any):
        config = getattr(estimator, "config", None) or getattr(estimator, "_config", None)
        model_dir = getattr(estimator, "model_dir", None)
        if config is None or not model_dir:
            raise ValueError(f"CheckpointInputPipelineHook needs an Estimator (with a model_dir and a RunConfig), "
                             f"got {type(estimator).__name__}")
        prefix = "input"
        rank, size = _cio.process_rank_and_size()
        if getattr(config, "num_worker_replicas", 1) > 1:  # each worker reads its own part of the data
            prefix += f"_{config.task_type}_{config.task_id}"
        elif size > 1:  # collflow's ranks (one RunConfig for all): each rank keeps its own position
            prefix += f"_worker_{rank}"
        self._dir = str(model_dir)
        self._basename = prefix + ".ckpt"
        self._timer = SecondOrStepTimer(every_secs=config.save_checkpoints_secs,
                                        every_steps=config.save_checkpoints_steps)
        self._saver: Optional[Saver] = None
        self._first_run = True

    @property
    def checkpoint_prefix(self) -> str:
        """`<model_dir>/input.ckpt` (the files are `<prefix>-<step>.h5`)."""
        return os.path.join(self._dir, self._basename)

    def begin(self) -> None:
        """Builds the saver of the graph's iterators and finds the step."""
        handles = _g.get_default_graph().get_collection(GLOBAL_ITERATORS)
        self._global_step = _global_step_for("CheckpointInputPipelineHook")
        # TF's hook saves the iterators only: no variables, no random streams
        # every worker writes its own file (TF's hook is not a chief-only one)
        self._saver = Saver([IteratorSaveable(h, h.name) for h in handles], save_rng=False, allow_empty=True,
                            checkpoint_format="collflow", rank=0, world_size=1)
        self._timer.reset()

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Restores the newest input checkpoint, or saves the first one."""
        self._first_run = True  # a new session (also a recovered one) restores before its first step

    def _checkpoints(self) -> List[str]:
        """The prefixes of this hook's checkpoints in model_dir, oldest first."""
        return [os.path.join(self._dir, e.path[:-len(".h5")]) for e in _cio.scan_directory(self._dir, self._basename)]

    def _restore_or_save_first(self, session: Any) -> None:
        found = self._checkpoints()
        assert self._saver is not None
        if found:
            logging.info("Restoring the input pipeline's state from %s", found[-1])
            self._saver.restore(session, found[-1])
            return
        step = int(session.run(self._global_step))
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context: Any) -> SessionRunArgs:
        """Asks for the global step."""
        if self._first_run:
            self._restore_or_save_first(run_context.session)
            self._first_run = False
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Saves the input position when the save schedule says so."""
        if self._timer.should_trigger_for_step(int(run_values.results) + 1):
            step = int(run_context.session.run(self._global_step))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                self._save(run_context.session, step)

    def end(self, session: Any) -> None:
        """Saves the final input position."""
        step = int(session.run(self._global_step))
        if step != self._timer.last_triggered_step():
            self._save(session, step)

    def _save(self, session: Any, step: int) -> None:
        assert self._saver is not None
        logging.info("Saving the input pipeline's state for step %d into %s.", step, self.checkpoint_prefix)
        os.makedirs(self._dir, exist_ok=True)
        # kept out of the directory's index: that one lists the model's checkpoints
        self._saver.save(session, self.checkpoint_prefix, global_step=step, write_meta_graph=False,
                         write_state=False)
        for old in self._checkpoints()[:-_MAX_TO_KEEP]:
            remove_checkpoint(old)
