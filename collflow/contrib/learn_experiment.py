"""TF 1.x's tf.contrib.learn Experiment, learn_runner and monitors (ValidationMonitor), locally:
one process is the chief; there are no parameter servers or TF servers."""
from __future__ import annotations

import os
import types as _types
from typing import Any, Callable, Dict, Optional, Sequence

from ..platform import tf_logging as logging
from ..train import hooks as _hooks
from ..train.checkpoint_utils import load_variable
from ..train.global_step import get_global_step

__all__ = ["Experiment", "learn_runner", "monitors"]


class ValidationMonitor(_hooks.SessionRunHook):
    """During fit, every every_n_steps steps: evaluates the estimator's newest checkpoint (when
    one was saved since the last evaluation) on x/y or input_fn; stops training when
    early_stopping_metric has not improved for early_stopping_rounds steps."""

    def __init__(self, x: Any = None, y: Any = None, input_fn: Optional[Callable] = None,
                 batch_size: Optional[int] = None, eval_steps: Optional[int] = None, every_n_steps: int = 100,
                 metrics: Optional[dict] = None, hooks: Any = None, early_stopping_rounds: Optional[int] = None,
                 early_stopping_metric: str = "loss", early_stopping_metric_minimize: bool = True,
                 name: Optional[str] = None, check_interval_secs: int = 5):
        if x is None and input_fn is None:
            raise ValueError("Either x or input_fn should be provided.")
        self.x, self.y, self.input_fn, self.batch_size = x, y, input_fn, batch_size
        self.eval_steps, self.metrics, self.hooks, self.name = eval_steps, metrics, hooks, name
        self._every_n_steps = int(every_n_steps)
        self.early_stopping_rounds = early_stopping_rounds
        self.early_stopping_metric = early_stopping_metric
        self.early_stopping_metric_minimize = early_stopping_metric_minimize
        self._estimator: Any = None
        self._last_step_evaluated: Optional[int] = None
        self._last_ckpt: Optional[str] = None
        self._next_step: Optional[int] = None
        self.best_step: Optional[int] = None
        self.best_value: Any = None
        self.best_metrics: Optional[Dict[str, Any]] = None
        self.early_stopped = False
        self._latest_results: Optional[Dict[str, Any]] = None

    early_stopped = False
    latest_step = property(lambda self: self._last_step_evaluated)
    latest_results = property(lambda self: self._latest_results)

    def _set_estimator(self, estimator: Any) -> None:
        self._estimator = estimator

    def begin(self) -> None:
        """Finds the global step (the estimator must have been given by fit)."""
        if self._estimator is None:
            raise ValueError("ValidationMonitor has no estimator: pass it in fit(monitors=[...])")
        self._gs = get_global_step()

    def before_run(self, run_context: Any) -> Any:
        """Asks for the global step."""
        return _hooks.SessionRunArgs(self._gs)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Evaluates every `every_n_steps` and requests a stop when early stopping says so."""
        step = int(run_values.results) + 1
        if self._next_step is None:
            self._next_step = step
        if step >= self._next_step:
            self._next_step = step + self._every_n_steps
            if self._validate(step):
                run_context.request_stop()

    def _validate(self, step: int) -> bool:
        ckpt = self._estimator.latest_checkpoint()
        if ckpt is None or ckpt == self._last_ckpt:
            return False
        self._last_ckpt = ckpt
        results = self._estimator.evaluate(x=self.x, y=self.y, input_fn=self.input_fn, batch_size=self.batch_size,
                                           steps=self.eval_steps, metrics=self.metrics, hooks=self.hooks,
                                           name=self.name, checkpoint_path=ckpt)
        self._latest_results = results
        evaluated_step = int(results.get("global_step", step))
        self._last_step_evaluated = evaluated_step
        if self.early_stopping_rounds is None:
            return False
        if self.early_stopping_metric not in results:
            raise ValueError(f"Metric {self.early_stopping_metric} missing from outputs {sorted(results)}.")
        value = results[self.early_stopping_metric]
        better = (self.best_value is None or (value < self.best_value if self.early_stopping_metric_minimize
                                              else value > self.best_value))
        if better:
            self.best_value, self.best_step, self.best_metrics = value, evaluated_step, dict(results)
        if evaluated_step - self.best_step >= self.early_stopping_rounds:
            logging.info("Stopping. Best step: %s with %s = %s.", self.best_step, self.early_stopping_metric,
                         self.best_value)
            self.early_stopped = True
            return True
        return False


def _stop_at_step(num_steps: Optional[int] = None, last_step: Optional[int] = None) -> Any:
    return _hooks.StopAtStepHook(num_steps=num_steps, last_step=last_step)


monitors = _types.ModuleType("collflow.contrib.learn.monitors", "tf.contrib.learn.monitors: ValidationMonitor and "
                             "StopAtStep; the other monitors are the tf.train SessionRunHooks.")
monitors.ValidationMonitor = ValidationMonitor
monitors.StopAtStep = _stop_at_step
monitors.NanLoss = _hooks.NanTensorHook
monitors.StepCounter = _hooks.StepCounterHook
monitors.SummarySaver = _hooks.SummarySaverHook
monitors.CheckpointSaver = _hooks.CheckpointSaverHook


def _missing_monitor(name: str) -> Any:
    raise AttributeError(f"tf.contrib.learn.monitors.{name} is not provided by collflow: use ValidationMonitor, "
                         "StopAtStep or a tf.train SessionRunHook")


monitors.__getattr__ = _missing_monitor


class Experiment:
    """An estimator with its train/eval inputs and steps; train, evaluate, train_and_evaluate,
    continuous_train_and_eval and test run locally (no servers, no delays)."""

    def __init__(self, estimator: Any, train_input_fn: Callable, eval_input_fn: Callable,
                 eval_metrics: Optional[dict] = None, train_steps: Optional[int] = None, eval_steps: int = 100,
                 train_monitors: Optional[Sequence[Any]] = None, eval_hooks: Optional[Sequence[Any]] = None,
                 local_eval_frequency: int = 0, eval_delay_secs: int = 120, continuous_eval_throttle_secs: int = 60,
                 min_eval_frequency: Optional[int] = None, delay_workers_by_global_step: bool = False,
                 export_strategies: Any = None, train_steps_per_iteration: Optional[int] = None,
                 checkpoint_and_export: bool = False, saving_listeners: Any = None, check_interval_secs: int = 5):
        if not hasattr(estimator, "fit") or not hasattr(estimator, "evaluate"):
            raise ValueError(f"`estimator` must have fit and evaluate (a tf.contrib.learn Estimator), got "
                             f"{type(estimator).__name__}")
        if train_steps_per_iteration is not None and (not isinstance(train_steps_per_iteration, int)
                                                      or train_steps_per_iteration <= 0):
            raise ValueError(f"`train_steps_per_iteration` must be a positive int, got {train_steps_per_iteration}")
        if export_strategies:
            raise NotImplementedError("Experiment export_strategies are not provided by collflow: call "
                                      "estimator.export_savedmodel after training")
        self._estimator = estimator
        self._train_input_fn, self._eval_input_fn = train_input_fn, eval_input_fn
        self._eval_metrics, self._train_steps, self._eval_steps = eval_metrics, train_steps, eval_steps
        self._train_monitors = list(train_monitors or [])
        self._eval_hooks = list(eval_hooks or [])
        self._train_steps_per_iteration = train_steps_per_iteration
        self._min_eval_frequency = min_eval_frequency

    estimator = property(lambda self: self._estimator)
    train_steps = property(lambda self: self._train_steps)
    eval_steps = property(lambda self: self._eval_steps)
    eval_metrics = property(lambda self: self._eval_metrics)

    def train(self, delay_secs: Optional[int] = None) -> Any:
        """Fits the estimator on train_input_fn up to global step train_steps."""
        return self._estimator.fit(input_fn=self._train_input_fn, max_steps=self._train_steps,
                                   monitors=list(self._train_monitors))

    def evaluate(self, delay_secs: Optional[int] = None, name: Optional[str] = None) -> Dict[str, Any]:
        """Evaluates on eval_input_fn for eval_steps steps (eval dir `eval_<name or one_pass>`)."""
        return self._estimator.evaluate(input_fn=self._eval_input_fn, steps=self._eval_steps,
                                        metrics=self._eval_metrics, name=name or "one_pass", hooks=self._eval_hooks)

    def train_and_evaluate(self) -> tuple:
        """train() then one evaluation; returns (eval results, export results: [])."""
        self.train()
        return self.evaluate(), []

    local_run = train_and_evaluate

    def continuous_train_and_eval(self, continuous_eval_predicate_fn: Optional[Callable] = None) -> tuple:
        """Alternates train_steps_per_iteration (default: train_steps/10, at least 1) training
        steps and an evaluation until train_steps (or the predicate says stop)."""
        if self._train_steps is None and continuous_eval_predicate_fn is None:
            raise ValueError("continuous_train_and_eval needs train_steps or a continuous_eval_predicate_fn")
        per = self._train_steps_per_iteration or max(1, (self._train_steps or 1000) // 10)
        results: Optional[Dict[str, Any]] = None
        while True:
            if continuous_eval_predicate_fn is not None and not continuous_eval_predicate_fn(results):
                break
            step = self._global_step()
            if self._train_steps is not None and step >= self._train_steps:
                break
            target = step + per if self._train_steps is None else min(step + per, self._train_steps)
            self._estimator.fit(input_fn=self._train_input_fn, max_steps=target, monitors=list(self._train_monitors))
            results = self._estimator.evaluate(input_fn=self._eval_input_fn, steps=self._eval_steps,
                                               metrics=self._eval_metrics, name="one_pass", hooks=self._eval_hooks)
        return results, []

    def _global_step(self) -> int:
        ckpt = self._estimator.latest_checkpoint()
        return 0 if ckpt is None else int(load_variable(ckpt, "global_step"))

    def test(self) -> Dict[str, Any]:
        """One training step and one evaluation step."""
        self._estimator.fit(input_fn=self._train_input_fn, steps=1, monitors=list(self._train_monitors))
        return self._estimator.evaluate(input_fn=self._eval_input_fn, steps=1, metrics=self._eval_metrics,
                                        name="one_pass")

    def _not_here(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("distributed Experiment schedules (run_std_server, continuous_eval, "
                                  "extend_train_hooks over servers) are not provided by collflow: use "
                                  "train_and_evaluate or continuous_train_and_eval")

    run_std_server = continuous_eval = continuous_eval_on_train_data = _not_here


def _run(experiment_fn: Callable, output_dir: Optional[str] = None, schedule: Optional[str] = None,
         run_config: Any = None, hparams: Any = None) -> Any:
    """learn_runner.run: builds the Experiment (experiment_fn(output_dir), or
    experiment_fn(run_config, hparams)) and runs its `schedule` (default train_and_evaluate)."""
    if output_dir is not None and run_config is not None:
        raise ValueError("output_dir and run_config cannot be both set.")
    if output_dir is None and run_config is None:
        raise ValueError("Must set either output_dir or run_config.")
    if not callable(experiment_fn):
        raise TypeError(f"experiment_fn should be callable, got {experiment_fn!r}")
    if output_dir is not None:
        experiment = experiment_fn(os.fspath(output_dir))
    else:
        if run_config.model_dir is None:
            raise ValueError("run_config.model_dir must be set")
        experiment = experiment_fn(run_config, hparams)
    if not isinstance(experiment, Experiment):
        raise TypeError(f"Experiment should be an instance of Experiment, but got {type(experiment).__name__}")
    schedule = schedule or "train_and_evaluate"
    fn = getattr(experiment, schedule, None) if not schedule.startswith("_") else None
    if not callable(fn):
        raise ValueError(f"Schedule references non-existent task {schedule}")
    return fn()


learn_runner = _types.ModuleType("collflow.contrib.learn.learn_runner", "tf.contrib.learn.learn_runner: run.")
learn_runner.run = _run
