"""TF 1.x's contrib evaluation loops: tf.contrib.training.evaluate_once / evaluate_repeatedly
(with StopAfterNEvalsHook, SummaryAtEndHook, get_or_create_eval_step, checkpoints_iterator,
wait_for_new_checkpoint) and slim.evaluation.evaluate_once / evaluation_loop, as slim's
eval_image_classifier.py uses them:

    names_to_values, names_to_updates = slim.metrics.aggregate_metric_map({...})
    slim.evaluation.evaluate_once(master, checkpoint_path, logdir, num_evals=num_batches,
                                  eval_op=list(names_to_updates.values()))

Each evaluation restores the checkpoint into a MonitoredSession, runs eval_ops until
StopAfterNEvalsHook sees num_evals runs (the local eval_step counts them, from 0 in every
session), then runs final_ops and returns their values.
"""
from __future__ import annotations

import math
import time
from typing import Any, List, Optional

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.ops import state_ops
from ..graph.variables import Variable
from ..platform import tf_logging as logging
from ..summary import summary_ops as _summary
from ..train import hooks as _hooks
from ..train.checkpoint_utils import checkpoints_iterator, wait_for_new_checkpoint
from ..train.global_step import get_or_create_global_step, global_step as _global_step_value
from ..train.monitored_session import ChiefSessionCreator, MonitoredSession, Scaffold
from ..train.saver import Saver

__all__ = ["get_or_create_eval_step", "StopAfterNEvalsHook", "SummaryAtEndHook", "wait_for_new_checkpoint",
           "checkpoints_iterator", "evaluate_once", "evaluate_repeatedly", "slim_evaluate_once",
           "slim_evaluation_loop"]

_USE_DEFAULT = 0


def get_or_create_eval_step(graph: Optional[_g.Graph] = None) -> Variable:
    """The graph's eval step: a local int64 counter in the EVAL_STEP collection."""
    g = graph or _g.get_default_graph()
    found = g.get_collection(GraphKeys.EVAL_STEP)
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise ValueError("Multiple tensors added to tf.GraphKeys.EVAL_STEP")
    with g.as_default(), g.control_dependencies(None):
        from ..graph.ops.constant_op import constant
        return Variable(constant(0, dtype=_dt.int64), trainable=False, name="eval_step",
                        collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.EVAL_STEP])


class StopAfterNEvalsHook(_hooks.SessionRunHook):
    """Stops a MonitoredSession once the eval step reaches num_evals (None: never)."""

    def __init__(self, num_evals: Optional[int], log_progress: bool = True):
        self._num_evals = num_evals
        self._evals_completed: Any = None
        self._log_progress = log_progress
        self._log_frequency = 1 if (num_evals is None or num_evals < 20) else math.floor(num_evals / 10.0)

    def _set_evals_completed_tensor(self, updated_eval_step: Any) -> None:
        self._evals_completed = updated_eval_step

    def before_run(self, run_context: Any) -> Any:
        return _hooks.SessionRunArgs({"evals_completed": self._evals_completed})

    def after_run(self, run_context: Any, run_values: Any) -> None:
        done = run_values.results["evals_completed"]
        if self._log_progress and (self._num_evals is None or done % self._log_frequency == 0):
            logging.info("Evaluation [%d/%s]", done, self._num_evals)
        if self._num_evals is not None and done >= self._num_evals:
            run_context.request_stop()


class SummaryAtEndHook(_hooks.SessionRunHook):
    """Writes summary_op (default: every summary) at the end of the session, at the global step."""

    def __init__(self, log_dir: Optional[str] = None, summary_writer: Any = None, summary_op: Any = None,
                 feed_dict: Any = None):
        if log_dir is None and summary_writer is None:
            raise ValueError("One of log_dir or summary_writer should be used.")
        self._summary_op = summary_op
        self._replace_summary_op = summary_op is None
        self._feed_dict = feed_dict
        self._summary_writer = summary_writer
        self._log_dir = log_dir

    def begin(self) -> None:
        if self._replace_summary_op:
            self._summary_op = _summary.merge_all()
        self._global_step = get_or_create_global_step()

    def after_create_session(self, session: Any, coord: Any) -> None:
        if self._summary_writer is None and self._log_dir:
            from ..summary.writer import FileWriterCache
            self._summary_writer = FileWriterCache.get(self._log_dir)

    def end(self, session: Any) -> None:
        if self._summary_op is not None:
            step = _global_step_value(session, self._global_step)
            summary = session.run(self._summary_op, self._feed_dict)
            if self._summary_writer:
                self._summary_writer.add_summary(summary, step)
        if self._summary_writer:
            self._summary_writer.flush()


def _prepare(eval_ops: Any, hooks: List[Any]) -> Any:
    eval_step = get_or_create_eval_step()
    if eval_ops is None:
        return None
    update = state_ops.assign_add(eval_step, 1, use_locking=True)
    if isinstance(eval_ops, dict):
        eval_ops = dict(eval_ops, update_eval_step=update)
    elif isinstance(eval_ops, (tuple, list)):
        eval_ops = list(eval_ops) + [update]
    else:
        eval_ops = [eval_ops, update]
    for h in hooks:
        if isinstance(h, StopAfterNEvalsHook):
            h._set_evals_completed_tensor(update)
    return eval_ops


def _run_once(checkpoint_path: str, master: str, scaffold: Any, eval_ops: Any, feed_dict: Any, hooks: List[Any],
              config: Any, final_hook: Any) -> None:
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_filename_with_path=checkpoint_path, master=master,
                                  config=config)
    logging.info("Starting evaluation at " + time.strftime("%Y-%m-%d-%H:%M:%S", time.gmtime()))
    with MonitoredSession(session_creator=creator, hooks=hooks + [final_hook]) as session:
        if eval_ops is not None:
            while not session.should_stop():
                session.run(eval_ops, feed_dict)
    logging.info("Finished evaluation at " + time.strftime("%Y-%m-%d-%H:%M:%S", time.gmtime()))


def evaluate_once(checkpoint_path: str, master: str = "", scaffold: Any = None, eval_ops: Any = None,
                  feed_dict: Any = None, final_ops: Any = None, final_ops_feed_dict: Any = None,
                  hooks: Optional[List[Any]] = None, config: Any = None) -> Any:
    """One evaluation of the checkpoint: eval_ops until the hooks stop it, then final_ops'
    values (returned)."""
    hooks = list(hooks or [])
    eval_ops = _prepare(eval_ops, hooks)
    final_hook = _hooks.FinalOpsHook(final_ops, final_ops_feed_dict)
    _run_once(checkpoint_path, master, scaffold, eval_ops, feed_dict, hooks, config, final_hook)
    return final_hook.final_ops_values


def evaluate_repeatedly(checkpoint_dir: str, master: str = "", scaffold: Any = None, eval_ops: Any = None,
                        feed_dict: Any = None, final_ops: Any = None, final_ops_feed_dict: Any = None,
                        eval_interval_secs: float = 60, hooks: Optional[List[Any]] = None, config: Any = None,
                        max_number_of_evaluations: Optional[int] = None, timeout: Optional[float] = None,
                        timeout_fn: Any = None) -> Any:
    """evaluate_once for each new checkpoint of checkpoint_dir (at most every
    eval_interval_secs), up to max_number_of_evaluations; the last final_ops values."""
    hooks = list(hooks or [])
    eval_ops = _prepare(eval_ops, hooks)
    final_hook = _hooks.FinalOpsHook(final_ops, final_ops_feed_dict)
    done = 0
    for path in checkpoints_iterator(checkpoint_dir, min_interval_secs=eval_interval_secs, timeout=timeout,
                                     timeout_fn=timeout_fn):
        _run_once(path, master, scaffold, eval_ops, feed_dict, hooks, config, final_hook)
        done += 1
        if max_number_of_evaluations is not None and done >= max_number_of_evaluations:
            break
    return final_hook.final_ops_values


def _slim_hooks(num_evals: int, logdir: Optional[str], summary_op: Any, summary_op_feed_dict: Any,
                hooks: Optional[List[Any]]) -> List[Any]:
    if summary_op is _USE_DEFAULT:
        summary_op = _summary.merge_all()
    out: List[Any] = [StopAfterNEvalsHook(num_evals)]
    if summary_op is not None:
        out.append(SummaryAtEndHook(log_dir=logdir, summary_op=summary_op, feed_dict=summary_op_feed_dict))
    return out + list(hooks or [])


def slim_evaluate_once(master: str, checkpoint_path: str, logdir: Optional[str], num_evals: int = 1,
                       initial_op: Any = None, initial_op_feed_dict: Any = None, eval_op: Any = None,
                       eval_op_feed_dict: Any = None, final_op: Any = None, final_op_feed_dict: Any = None,
                       summary_op: Any = _USE_DEFAULT, summary_op_feed_dict: Any = None,
                       variables_to_restore: Any = None, session_config: Any = None,
                       hooks: Optional[List[Any]] = None) -> Any:
    """slim.evaluation.evaluate_once: num_evals runs of eval_op on the checkpoint (restoring
    variables_to_restore, default all), the summaries written to logdir; final_op's value."""
    all_hooks = _slim_hooks(num_evals, logdir, summary_op, summary_op_feed_dict, hooks)
    saver = Saver(variables_to_restore) if variables_to_restore is not None else None
    return evaluate_once(checkpoint_path, master=master,
                         scaffold=Scaffold(init_op=initial_op, init_feed_dict=initial_op_feed_dict, saver=saver),
                         eval_ops=eval_op, feed_dict=eval_op_feed_dict, final_ops=final_op,
                         final_ops_feed_dict=final_op_feed_dict, hooks=all_hooks, config=session_config)


def slim_evaluation_loop(master: str, checkpoint_dir: str, logdir: Optional[str], num_evals: int = 1,
                         initial_op: Any = None, initial_op_feed_dict: Any = None, init_fn: Any = None,
                         eval_op: Any = None, eval_op_feed_dict: Any = None, final_op: Any = None,
                         final_op_feed_dict: Any = None, summary_op: Any = _USE_DEFAULT,
                         summary_op_feed_dict: Any = None, variables_to_restore: Any = None,
                         eval_interval_secs: float = 60, max_number_of_evaluations: Optional[int] = None,
                         session_config: Any = None, timeout: Optional[float] = None, timeout_fn: Any = None,
                         hooks: Optional[List[Any]] = None) -> Any:
    """slim.evaluation.evaluation_loop: slim_evaluate_once for each new checkpoint."""
    all_hooks = _slim_hooks(num_evals, logdir, summary_op, summary_op_feed_dict, hooks)
    saver = Saver(variables_to_restore) if variables_to_restore is not None else None
    scaffold = Scaffold(init_op=initial_op, init_feed_dict=initial_op_feed_dict, init_fn=init_fn, saver=saver)
    return evaluate_repeatedly(checkpoint_dir, master=master, scaffold=scaffold, eval_ops=eval_op,
                               feed_dict=eval_op_feed_dict, final_ops=final_op,
                               final_ops_feed_dict=final_op_feed_dict, eval_interval_secs=eval_interval_secs,
                               hooks=all_hooks, config=session_config,
                               max_number_of_evaluations=max_number_of_evaluations, timeout=timeout,
                               timeout_fn=timeout_fn)
