"""TF1's tf.estimator.TrainSpec, EvalSpec and train_and_evaluate (the local run)."""
from __future__ import annotations

import collections
import os
import time
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..platform import tf_logging as logging
from ..train.hooks import CheckpointSaverListener

__all__ = ["TrainSpec", "EvalSpec", "train_and_evaluate"]


class TrainSpec(collections.namedtuple("TrainSpec", ["input_fn", "max_steps", "hooks"])):
    """The training half of train_and_evaluate: input_fn, max_steps (None: until the input ends), hooks."""

    def __new__(cls, input_fn: Callable, max_steps: Optional[int] = None,
                hooks: Optional[Sequence[Any]] = None) -> "TrainSpec":
        if not callable(input_fn):
            raise TypeError(f"`input_fn` must be callable, given: {input_fn}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        return super().__new__(cls, input_fn, max_steps, tuple(hooks or ()))


class EvalSpec(collections.namedtuple("EvalSpec", ["input_fn", "steps", "name", "hooks", "exporters",
                                                   "start_delay_secs", "throttle_secs"])):
    """The evaluation half: input_fn, steps (None: until the input ends), name, hooks;
    exporters: Exporters run after each evaluation (model_dir/export/<name>); throttle_secs:
    the least time between two evaluations during training."""

    def __new__(cls, input_fn: Callable, steps: Optional[int] = 100, name: Optional[str] = None,
                hooks: Optional[Sequence[Any]] = None, exporters: Any = None, start_delay_secs: float = 120,
                throttle_secs: float = 600) -> "EvalSpec":
        if not callable(input_fn):
            raise TypeError(f"`input_fn` must be callable, given: {input_fn}")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        exporters = _exporters(exporters)
        if start_delay_secs < 0 or throttle_secs < 0:
            raise ValueError("start_delay_secs and throttle_secs must be >= 0")
        return super().__new__(cls, input_fn, steps, name, tuple(hooks or ()), exporters, start_delay_secs,
                               throttle_secs)


def _exporters(exporters: Any) -> tuple:
    from .exporter import Exporter
    if exporters is None:
        return ()
    items = [exporters] if isinstance(exporters, Exporter) else list(exporters)
    for e in items:
        if not isinstance(e, Exporter):
            raise TypeError(f"`exporters` must be an Exporter, an iterable of Exporter, or `None`, found {e}.")
    names = [e.name for e in items]
    if len(set(names)) != len(names):
        raise ValueError(f"`exporters` must have unique names. Such a name cannot be `None`. {names} was given.")
    return tuple(items)


class _EvalAfterSaveListener(CheckpointSaverListener):
    """Evaluates after a checkpoint is saved, at most once every throttle_secs."""

    def __init__(self, estimator: Any, eval_spec: EvalSpec):
        self._est, self._spec = estimator, eval_spec
        self._last = time.monotonic()  # the session's first save is not evaluated
        self.result: Any = None

    def after_save(self, session: Any, global_step_value: int) -> None:
        due = time.monotonic() - self._last >= self._spec.throttle_secs
        strategy = _eval_strategy(self._est)
        if strategy is not None:
            # an evaluation over the ranks runs collectives: every rank must start it at the
            # same save, so rank 0's clock decides for all (saves are step-based here, so
            # every rank reaches this call at the same step)
            due = bool(strategy._communicator().broadcast(np.array(int(due), np.int64), root=0, name="eval_due"))
        if not due:
            return
        self._last = time.monotonic()
        self.result = _evaluate(self._est, self._spec)[0]


def _eval_strategy(estimator: Any) -> Any:
    """The eval_distribute strategy when it spans more than one rank, else None."""
    strategy = estimator.config.eval_distribute
    return strategy if strategy is not None and strategy.num_replicas_in_sync > 1 else None


def _evaluate(estimator: Any, spec: EvalSpec, final: bool = False) -> Any:
    """Evaluates, then runs the exporters on the checkpoint evaluated; (result, export paths)."""
    result = estimator.evaluate(spec.input_fn, steps=spec.steps, hooks=spec.hooks, name=spec.name)
    exports = []
    strategy = _eval_strategy(estimator)
    if strategy is not None and strategy._replica_id() != 0:
        return result, exports  # one evaluator exports, as it writes the events: rank 0
    ckpt = estimator.latest_checkpoint()
    for e in spec.exporters:
        path = e.export(estimator, os.path.join(estimator.model_dir, "export", e.name), ckpt, result, final)
        exports.append(path)
    return result, exports


def train_and_evaluate(estimator: Any, train_spec: TrainSpec, eval_spec: EvalSpec) -> tuple:
    """Trains `estimator` as train_spec says, evaluating (and exporting) after checkpoint saves
    (throttled by throttle_secs) and once at the end, the final export; returns (the last eval
    result, the final evaluation's export paths)."""
    if not isinstance(train_spec, TrainSpec):
        raise TypeError(f"`train_spec` must have type `tf.estimator.TrainSpec`. Got: {type(train_spec)}")
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(f"`eval_spec` must have type `tf.estimator.EvalSpec`. Got: {type(eval_spec)}")
    logging.info("Running training and evaluation locally (non-distributed).")
    cfg = estimator.config
    if _eval_strategy(estimator) is not None and cfg.save_checkpoints_secs and not cfg.save_checkpoints_steps:
        raise ValueError("train_and_evaluate with eval_distribute over several ranks evaluates after checkpoint "
                         "saves, and every rank must evaluate at the same step: set RunConfig.save_checkpoints_steps "
                         "instead of save_checkpoints_secs (each rank's clock would pick its own steps)")
    listeners = []
    listener = None
    if cfg.save_checkpoints_secs or cfg.save_checkpoints_steps:
        listener = _EvalAfterSaveListener(estimator, eval_spec)
        listeners.append(listener)
    estimator.train(train_spec.input_fn, hooks=list(train_spec.hooks), max_steps=train_spec.max_steps,
                    saving_listeners=listeners)
    result = listener.result if listener is not None else None
    ckpt = estimator.latest_checkpoint()
    again = result is None or ckpt is None or not str(ckpt).endswith(f"-{int(result['global_step'])}") \
        or bool(eval_spec.exporters)
    strategy = _eval_strategy(estimator)
    if strategy is not None:  # rank 0 wrote the checkpoints: its view decides for every rank
        again = bool(strategy._communicator().broadcast(np.array(int(again), np.int64), root=0, name="final_eval"))
    if again:
        # the final evaluation (and export; TF evaluates again when there are exporters)
        return _evaluate(estimator, eval_spec, final=True)
    return result, []
