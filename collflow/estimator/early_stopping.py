"""Early stopping for Estimators (TF 1.x's tf.estimator.experimental / tf.contrib.estimator):
hooks that stop training when the evaluations written to the eval directory show a metric past
a threshold, or not improving for a number of steps.

    hook = tf.estimator.experimental.stop_if_no_decrease_hook(estimator, "loss", 1000)
    tf.estimator.train_and_evaluate(estimator, tf.estimator.TrainSpec(input_fn, hooks=[hook]), eval_spec)

The chief's hook checks the predicate every run_every_secs (or run_every_steps) and sets the
graph's `signal_early_stopping/STOP` variable; other workers' hooks stop when they read it set.
"""
from __future__ import annotations

import collections
import glob
import logging
import operator
import os
from typing import Any, Callable, Dict, Iterator, Optional

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph import initializers as _init
from ..graph.ops import state_ops
from ..graph.variable_scope import AUTO_REUSE, get_variable, variable_scope
from ..summary.writer import summary_iterator
from ..train.global_step import get_global_step
from ..train.hooks import SecondOrStepTimer, SessionRunArgs, SessionRunHook

__all__ = ["read_eval_metrics", "make_early_stopping_hook", "stop_if_higher_hook", "stop_if_lower_hook",
           "stop_if_no_increase_hook", "stop_if_no_decrease_hook"]

log = logging.getLogger("collflow.estimator")


def _events(eval_dir: str) -> Iterator[Any]:
    if os.path.isdir(eval_dir):
        for path in sorted(glob.glob(os.path.join(glob.escape(eval_dir), "events.out.tfevents.*"))):
            yield from summary_iterator(path)


def read_eval_metrics(eval_dir: str) -> "collections.OrderedDict[int, Dict[str, float]]":
    """{global step: {tag: value}} of the scalar summaries in eval_dir's event files, by step."""
    by_step: Dict[int, Dict[str, float]] = collections.defaultdict(dict)
    for event in _events(eval_dir):
        values = {v.tag: v.simple_value for v in getattr(event.summary, "value", [])
                  if v.HasField("simple_value")}
        if values:
            by_step[int(event.step)].update(values)
    return collections.OrderedDict(sorted(by_step.items()))


def _stop_var() -> Any:
    # one flag per graph, shared by the chief's and the workers' hooks (TF's name and scope)
    with variable_scope("signal_early_stopping", values=[], reuse=AUTO_REUSE):
        return get_variable("STOP", shape=[], dtype=_dt.bool_, initializer=_init.constant_initializer(False),
                            collections=[_g.GraphKeys.GLOBAL_VARIABLES], trainable=False)


class _StopOnPredicateHook(SessionRunHook):
    """The chief's hook: runs should_stop_fn on the timer; when it holds, sets the stop flag and
    requests a stop."""

    def __init__(self, should_stop_fn: Callable[[], bool], run_every_secs: Optional[float] = 60,
                 run_every_steps: Optional[int] = None):
        if not callable(should_stop_fn):
            raise TypeError("`should_stop_fn` must be callable.")
        self._should_stop_fn = should_stop_fn
        self._timer = SecondOrStepTimer(every_secs=run_every_secs, every_steps=run_every_steps)

    def begin(self) -> None:
        self._global_step = get_global_step()
        if self._global_step is None:
            raise RuntimeError("Global step should be created to use early stopping hooks.")
        self._stop_op = state_ops.assign(_stop_var(), True)

    def before_run(self, run_context: Any) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        step = int(run_values.results)
        if self._timer.should_trigger_for_step(step):
            self._timer.update_last_triggered_step(step)
            if self._should_stop_fn():
                log.info("Requesting early stopping at global step %d", step)
                run_context.session.run(self._stop_op)
                run_context.request_stop()


class _CheckForStoppingHook(SessionRunHook):
    """A non-chief worker's hook: stops when the chief has set the stop flag."""

    def begin(self) -> None:
        self._stop = _stop_var()

    def before_run(self, run_context: Any) -> SessionRunArgs:
        return SessionRunArgs(self._stop)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        if run_values.results:
            log.info("Early stopping requested, suspending run.")
            run_context.request_stop()


def make_early_stopping_hook(estimator: Any, should_stop_fn: Callable[[], bool], run_every_secs: Optional[float] = 60,
                             run_every_steps: Optional[int] = None) -> SessionRunHook:
    """A hook that stops training when should_stop_fn() returns True (checked on the chief every
    run_every_secs or run_every_steps; the other workers follow the chief's stop flag)."""
    if run_every_secs is not None and run_every_steps is not None:
        raise ValueError("Only one of run_every_secs and run_every_steps can be specified.")
    if getattr(estimator.config, "is_chief", True):
        return _StopOnPredicateHook(should_stop_fn, run_every_secs, run_every_steps)
    return _CheckForStoppingHook()


def _metric(metrics: Dict[str, float], name: str, step: int) -> float:
    if name not in metrics:
        raise KeyError(f'metric "{name}" is not in the evaluation at step {step} (it has {sorted(metrics)})')
    return metrics[name]


def _threshold_hook(estimator: Any, metric_name: str, threshold: float, higher_is_better: bool,
                    eval_dir: Optional[str], min_steps: int, run_every_secs: Optional[float],
                    run_every_steps: Optional[int]) -> SessionRunHook:
    eval_dir = eval_dir or estimator.eval_dir()
    better = operator.gt if higher_is_better else operator.lt
    word = "greater than" if higher_is_better else "less than"

    def crossed() -> bool:
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step < min_steps:
                continue
            value = _metric(metrics, metric_name, step)
            if better(value, threshold):
                log.info('At step %s, metric "%s" has value %s which is %s the configured threshold (%s) for early '
                         "stopping.", step, metric_name, value, word, threshold)
                return True
        return False
    return make_early_stopping_hook(estimator, crossed, run_every_secs, run_every_steps)


def _no_improvement_hook(estimator: Any, metric_name: str, max_steps_without_improvement: int,
                         higher_is_better: bool, eval_dir: Optional[str], min_steps: int,
                         run_every_secs: Optional[float], run_every_steps: Optional[int]) -> SessionRunHook:
    eval_dir = eval_dir or estimator.eval_dir()
    better = operator.gt if higher_is_better else operator.lt
    word = "increase" if higher_is_better else "decrease"

    def stalled() -> bool:
        best = best_step = None
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step < min_steps:
                continue
            value = _metric(metrics, metric_name, step)
            if best is None or better(value, best):
                best, best_step = value, step
            if step - best_step >= max_steps_without_improvement:
                log.info('No %s in metric "%s" for %s steps, which is greater than or equal to max steps (%s) '
                         "configured for early stopping.", word, metric_name, step - best_step,
                         max_steps_without_improvement)
                return True
        return False
    return make_early_stopping_hook(estimator, stalled, run_every_secs, run_every_steps)


def stop_if_higher_hook(estimator: Any, metric_name: str, threshold: float, eval_dir: Optional[str] = None,
                        min_steps: int = 0, run_every_secs: Optional[float] = 60,
                        run_every_steps: Optional[int] = None) -> SessionRunHook:
    """Stops once an evaluation at a step >= min_steps has metric_name > threshold."""
    return _threshold_hook(estimator, metric_name, threshold, True, eval_dir, min_steps, run_every_secs,
                           run_every_steps)


def stop_if_lower_hook(estimator: Any, metric_name: str, threshold: float, eval_dir: Optional[str] = None,
                       min_steps: int = 0, run_every_secs: Optional[float] = 60,
                       run_every_steps: Optional[int] = None) -> SessionRunHook:
    """Stops once an evaluation at a step >= min_steps has metric_name < threshold."""
    return _threshold_hook(estimator, metric_name, threshold, False, eval_dir, min_steps, run_every_secs,
                           run_every_steps)


def stop_if_no_increase_hook(estimator: Any, metric_name: str, max_steps_without_increase: int,
                             eval_dir: Optional[str] = None, min_steps: int = 0, run_every_secs: Optional[float] = 60,
                             run_every_steps: Optional[int] = None) -> SessionRunHook:
    """Stops once metric_name has not risen above its best for max_steps_without_increase steps."""
    return _no_improvement_hook(estimator, metric_name, max_steps_without_increase, True, eval_dir, min_steps,
                                run_every_secs, run_every_steps)


def stop_if_no_decrease_hook(estimator: Any, metric_name: str, max_steps_without_decrease: int,
                             eval_dir: Optional[str] = None, min_steps: int = 0, run_every_secs: Optional[float] = 60,
                             run_every_steps: Optional[int] = None) -> SessionRunHook:
    """Stops once metric_name has not fallen below its best for max_steps_without_decrease steps."""
    return _no_improvement_hook(estimator, metric_name, max_steps_without_decrease, False, eval_dir, min_steps,
                                run_every_secs, run_every_steps)
