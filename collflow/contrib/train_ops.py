"""TF 1.x's contrib training loops: tf.contrib.training.create_train_op / train (on a
MonitoredTrainingSession) and tf.contrib.slim.learning's create_train_op / train_step / train
(on a Supervisor), as slim's train_image_classifier.py and TF1 research code use them.

    train_op = slim.learning.create_train_op(total_loss, optimizer, clip_gradient_norm=5.0)
    final_loss = slim.learning.train(train_op, logdir, number_of_steps=1000,
                                     save_summaries_secs=60, init_fn=restore_fn)

The train op is the total loss, computed after the UPDATE_OPS and returned after the
gradient step (so `sess.run(train_op)` steps and reports the loss), and it is added to the
TRAIN_OP collection.
"""
from __future__ import annotations

import sys
import time
import types
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .. import errors
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.indexed_slices import IndexedSlices
from ..graph.ops import math_ops
from ..graph.ops.constant_op import constant, group, no_op
from ..graph.ops.clip_ops import clip_by_norm, global_norm
from ..graph.ops.check_ops import check_numerics
from ..graph.variables import global_variables_initializer, local_variables_initializer, trainable_variables
from ..graph.variables import report_uninitialized_variables, tables_initializer
from ..summary import summary_ops as _summary
from ..platform import tf_logging as logging
from ..train.global_step import get_or_create_global_step, global_step as _global_step_value
from ..train.monitored_session import MonitoredTrainingSession
from ..train.optimizer import Optimizer
from ..train.saver import Saver
from ..data.supervisor import Supervisor
from .optimize_loss import _with_dependencies

__all__ = ["add_gradients_summaries", "clip_gradient_norms", "clip_gradient_norms_fn", "multiply_gradients",
           "create_train_op", "train", "slim_create_train_op", "train_step", "slim_train"]

_USE_GLOBAL_STEP = 0
_USE_DEFAULT = 0


def add_gradients_summaries(grads_and_vars: Sequence[Tuple[Any, Any]]) -> List[Any]:
    """A histogram "<var>_gradient" and a scalar "<var>_gradient_norm" per gradient."""
    summaries = []
    for grad, var in grads_and_vars:
        if grad is None:
            logging.info("Var %s has no gradient", var.op.name)
            continue
        values = grad.values if isinstance(grad, IndexedSlices) else grad
        summaries.append(_summary.histogram(var.op.name + "_gradient", values))
        summaries.append(_summary.scalar(var.op.name + "_gradient_norm", global_norm([values])))
    return summaries


def clip_gradient_norms(gradients_to_variables: Sequence[Tuple[Any, Any]], max_norm: float) -> List[Tuple[Any, Any]]:
    """Each gradient clipped to norm max_norm on its own (clip_by_norm; IndexedSlices' values)."""
    out = []
    for grad, var in gradients_to_variables:
        if grad is not None:
            if isinstance(grad, IndexedSlices):
                grad = IndexedSlices(clip_by_norm(grad.values, max_norm), grad.indices, grad.dense_shape)
            else:
                grad = clip_by_norm(grad, max_norm)
        out.append((grad, var))
    return out


def clip_gradient_norms_fn(max_norm: float) -> Callable[[Any], Any]:
    """A transform_grads_fn clipping each gradient to max_norm."""
    return lambda grads: clip_gradient_norms(grads, max_norm)


def multiply_gradients(grads_and_vars: List[Tuple[Any, Any]], gradient_multipliers: Dict[Any, Any]) -> List[Any]:
    """The gradients of the variables (or variable op names) in gradient_multipliers scaled by
    their multipliers."""
    if not isinstance(grads_and_vars, list):
        raise ValueError("`grads_and_vars` must be a list.")
    if not gradient_multipliers:
        raise ValueError("`gradient_multipliers` is empty.")
    if not isinstance(gradient_multipliers, dict):
        raise ValueError("`gradient_multipliers` must be a dict.")
    out = []
    for grad, var in grads_and_vars:
        key = var if var in gradient_multipliers else var.op.name if var.op.name in gradient_multipliers else None
        if key is not None:
            if grad is None:
                raise ValueError("Requested multiple of `None` gradient.")
            if isinstance(grad, IndexedSlices):
                scaled = grad.values * _g.convert_to_tensor(gradient_multipliers[key], dtype=grad.dtype)
                grad = IndexedSlices(scaled, grad.indices, grad.dense_shape)
            else:
                grad = grad * _g.convert_to_tensor(gradient_multipliers[key], dtype=grad.dtype)
        out.append((grad, var))
    return out


def create_train_op(total_loss: Any, optimizer: Optimizer, global_step: Any = _USE_GLOBAL_STEP,
                    update_ops: Optional[Sequence[Any]] = None, variables_to_train: Optional[Sequence[Any]] = None,
                    transform_grads_fn: Optional[Callable] = None, summarize_gradients: bool = False,
                    gate_gradients: int = Optimizer.GATE_OP, aggregation_method: Any = None,
                    colocate_gradients_with_ops: bool = False, check_numerics: bool = True) -> _g.Tensor:
    """The loss after one optimizer step: UPDATE_OPS (or update_ops) run first, the gradients
    of variables_to_train (default: all trainable) pass through transform_grads_fn, the step
    increments global_step (default: the graph's, made if need be); check_numerics fails the
    run on an inf or NaN loss.  Added to TRAIN_OP."""
    g = _g.get_default_graph()
    if global_step is _USE_GLOBAL_STEP:
        global_step = get_or_create_global_step()
    global_updates = set(g.get_collection(GraphKeys.UPDATE_OPS))
    updates = global_updates if update_ops is None else set(update_ops)
    if not global_updates.issubset(updates):
        logging.warning("update_ops in create_train_op does not contain all the update_ops in GraphKeys.UPDATE_OPS")
    loss = _g.convert_to_tensor(total_loss)
    if updates:
        with g.control_dependencies(sorted(updates, key=lambda o: getattr(o, "name", ""))):
            barrier = no_op(name="update_barrier")
        loss = _with_dependencies([barrier], loss)
    if variables_to_train is None:
        variables_to_train = trainable_variables()
    if not variables_to_train:
        raise ValueError("create_train_op: there are no variables to train")
    grads = optimizer.compute_gradients(loss, variables_to_train, gate_gradients=gate_gradients,
                                        aggregation_method=aggregation_method,
                                        colocate_gradients_with_ops=colocate_gradients_with_ops)
    if transform_grads_fn:
        grads = transform_grads_fn(grads)
    if summarize_gradients:
        with g.name_scope("summarize_grads"):
            add_gradients_summaries(grads)
    grad_updates = optimizer.apply_gradients(grads, global_step=global_step)
    with g.name_scope("train_op"):
        if check_numerics:
            loss = _check_numerics(loss, "LossTensor is inf or nan")
        train_op = _with_dependencies([grad_updates], loss)
    ops = g.get_collection_ref(GraphKeys.TRAIN_OP)
    if train_op not in ops:
        ops.append(train_op)
    return train_op


_check_numerics = check_numerics


def train(train_op: Any, logdir: Optional[str], master: str = "", is_chief: bool = True, scaffold: Any = None,
          hooks: Optional[Sequence[Any]] = None, chief_only_hooks: Optional[Sequence[Any]] = None,
          save_checkpoint_secs: Optional[float] = 600, save_summaries_steps: Optional[int] = 100,
          config: Any = None, max_wait_secs: float = 7200, run_metadata: Any = None) -> Any:
    """tf.contrib.training.train: runs train_op in a MonitoredTrainingSession over logdir until
    a hook stops it (e.g. StopAtStepHook); returns the last loss."""
    if logdir is None and is_chief:
        if save_summaries_steps:
            raise ValueError("logdir cannot be None when save_summaries_steps is not None")
        if save_checkpoint_secs:
            raise ValueError("logdir cannot be None when save_checkpoint_secs is not None")
    loss = None
    with MonitoredTrainingSession(master=master, is_chief=is_chief, checkpoint_dir=logdir, scaffold=scaffold,
                                  hooks=hooks, chief_only_hooks=chief_only_hooks,
                                  save_checkpoint_secs=save_checkpoint_secs, save_summaries_steps=save_summaries_steps,
                                  config=config, max_wait_secs=max_wait_secs) as session:
        while not session.should_stop():
            loss = session.run(train_op, run_metadata=run_metadata)
    return loss


# -- slim.learning ------------------------------------------------------------------------


def slim_create_train_op(total_loss: Any, optimizer: Optimizer, global_step: Any = _USE_GLOBAL_STEP,
                         update_ops: Optional[Sequence[Any]] = None, variables_to_train: Optional[Sequence[Any]] = None,
                         clip_gradient_norm: float = 0, summarize_gradients: bool = False,
                         gate_gradients: int = Optimizer.GATE_OP, aggregation_method: Any = None,
                         colocate_gradients_with_ops: bool = False, gradient_multipliers: Optional[dict] = None,
                         check_numerics: bool = True) -> _g.Tensor:
    """slim.learning.create_train_op: create_train_op with gradient_multipliers and
    clip_gradient_norm (each gradient clipped on its own) applied to the gradients."""
    def transform(grads: Any) -> Any:
        g = _g.get_default_graph()
        if gradient_multipliers:
            with g.name_scope("multiply_grads"):
                grads = multiply_gradients(grads, gradient_multipliers)
        if clip_gradient_norm > 0:
            with g.name_scope("clip_grads"):
                grads = clip_gradient_norms(grads, clip_gradient_norm)
        return grads
    return create_train_op(total_loss, optimizer, global_step, update_ops, variables_to_train, transform,
                           summarize_gradients, gate_gradients, aggregation_method, colocate_gradients_with_ops,
                           check_numerics)


def train_step(sess: Any, train_op: Any, global_step: Any, train_step_kwargs: Dict[str, Any]) -> Tuple[Any, bool]:
    """One step of slim.learning.train: (total loss, whether to stop), logging per should_log."""
    start = time.time()
    total_loss, step = sess.run([train_op, global_step])
    elapsed = time.time() - start
    if "should_log" in train_step_kwargs and sess.run(train_step_kwargs["should_log"]):
        logging.info("global step %d: loss = %.4f (%.3f sec/step)", step, total_loss, elapsed)
    should_stop = bool(sess.run(train_step_kwargs["should_stop"])) if "should_stop" in train_step_kwargs else False
    return total_loss, should_stop


def _wait_for_step(sess: Any, global_step: Any, step: int) -> None:
    while _global_step_value(sess, global_step) < step:
        time.sleep(1.0)


def slim_train(train_op: Any, logdir: Optional[str], train_step_fn: Callable = train_step,
               train_step_kwargs: Any = _USE_DEFAULT, log_every_n_steps: int = 1, graph: Any = None,
               master: str = "", is_chief: bool = True, global_step: Any = None,
               number_of_steps: Optional[int] = None, init_op: Any = _USE_DEFAULT, init_feed_dict: Any = None,
               local_init_op: Any = _USE_DEFAULT, init_fn: Optional[Callable] = None, ready_op: Any = _USE_DEFAULT,
               summary_op: Any = _USE_DEFAULT, save_summaries_secs: float = 600, summary_writer: Any = _USE_DEFAULT,
               startup_delay_steps: int = 0, saver: Any = None, save_interval_secs: float = 600,
               sync_optimizer: Any = None, session_config: Any = None, session_wrapper: Optional[Callable] = None,
               trace_every_n_steps: Optional[int] = None, ignore_live_threads: bool = False) -> Any:
    """slim.learning.train: a Supervisor-managed loop running train_step_fn until
    number_of_steps global steps (or an OutOfRangeError from the input); the chief saves a
    final checkpoint to logdir.  Returns the last total loss."""
    if train_op is None:
        raise ValueError("train_op cannot be None.")
    if logdir is None:
        if summary_op is not _USE_DEFAULT:
            raise ValueError("Cannot provide summary_op because logdir=None")
        if saver is not None:
            raise ValueError("Cannot provide saver because logdir=None")
        if trace_every_n_steps is not None:
            raise ValueError("Cannot provide trace_every_n_steps because logdir=None")
    if sync_optimizer is not None:
        raise NotImplementedError("slim.learning.train: sync_optimizer (SyncReplicasOptimizer) is not supported; "
                                  "collflow's all-reduce replicas train synchronously without it")
    if number_of_steps is not None and number_of_steps <= 0:
        raise ValueError("`number_of_steps` must be either None or a positive number.")
    if trace_every_n_steps is not None:
        logging.warning("slim.learning.train: trace_every_n_steps is accepted; no Chrome traces are written")
    graph = graph or _g.get_default_graph()
    with graph.as_default():
        if global_step is None:
            global_step = get_or_create_global_step()
        saver = saver or Saver()
        with graph.name_scope("init_ops"):
            if init_op is _USE_DEFAULT:
                init_op = global_variables_initializer()
            if ready_op is _USE_DEFAULT:
                ready_op = report_uninitialized_variables()
            if local_init_op is _USE_DEFAULT:
                local_init_op = group(local_variables_initializer(), tables_initializer())
        if summary_op is _USE_DEFAULT:
            summary_op = _summary.merge_all()
        if summary_writer is _USE_DEFAULT:
            summary_writer = Supervisor.USE_DEFAULT
        if train_step_kwargs is _USE_DEFAULT:
            with graph.name_scope("train_step"):
                train_step_kwargs = {"should_stop": (math_ops.greater_equal(global_step, number_of_steps)
                                                     if number_of_steps else constant(False))}
                if log_every_n_steps > 0:
                    train_step_kwargs["should_log"] = math_ops.equal(math_ops.mod(global_step, log_every_n_steps), 0)
    sv = Supervisor(graph=graph, is_chief=is_chief, logdir=logdir, init_op=init_op, init_feed_dict=init_feed_dict,
                    local_init_op=local_init_op, ready_op=ready_op, summary_op=summary_op,
                    summary_writer=summary_writer, global_step=global_step, saver=saver,
                    save_summaries_secs=save_summaries_secs, save_model_secs=save_interval_secs, init_fn=init_fn)
    if summary_writer is not None:
        train_step_kwargs["summary_writer"] = sv.summary_writer
    total_loss = None
    retry = True
    while retry:
        try:
            retry = False
            with sv.managed_session(master, start_standard_services=False, config=session_config) as sess:
                logging.info("Starting Session.")
                if session_wrapper is not None:
                    sess = session_wrapper(sess)
                if is_chief:
                    if logdir:
                        sv.start_standard_services(sess)
                elif startup_delay_steps > 0:
                    _wait_for_step(sess, global_step, min(startup_delay_steps, number_of_steps or sys.maxsize))
                threads = sv.start_queue_runners(sess)
                logging.info("Starting Queues.")
                try:
                    while not sv.should_stop():
                        total_loss, should_stop = train_step_fn(sess, train_op, global_step, train_step_kwargs)
                        if should_stop:
                            logging.info("Stopping Training.")
                            sv.request_stop()
                            break
                except errors.OutOfRangeError as e:
                    logging.info("Caught OutOfRangeError. Stopping Training. %s", e)
                if logdir and sv.is_chief:
                    logging.info("Finished training! Saving model to disk.")
                    sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
                    sv.stop(threads, close_summary_writer=True, ignore_live_threads=ignore_live_threads)
        except errors.AbortedError:
            logging.info("Retrying training!")
            retry = True
    return total_loss


# slim.learning: its names for the functions above
learning = types.SimpleNamespace(
    create_train_op=slim_create_train_op, train=slim_train, train_step=train_step,
    clip_gradient_norms=clip_gradient_norms, multiply_gradients=multiply_gradients,
    add_gradients_summaries=add_gradients_summaries)
learning.__doc__ = "tf.contrib.slim.learning: create_train_op, train, train_step and the gradient helpers."
